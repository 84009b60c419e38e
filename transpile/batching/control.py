"""Batching control flow on batched conditions: an `if` runs both branches and merges the
names they assign with `rt.select`; a loop runs while any example is still looping, and the
names it assigns keep their old value in examples that are done. Early return, break and
continue arrive here as flags (frontend/controlflow.py), so they follow.

`ControlFlowRules` is a part of `statements.Batching`; it uses the pass's `block`,
`expr_spec` and `error`."""
import copy as _copy

import gast

from .. import rules
from ..ir import anno
from ..ir.analysis import (assigned_in, is_pop, is_push, is_update, names_in, pop_stack,
                           push_parts, reads, targets, walk_simple)
from ..ir.anno import Anno
from ..ir.nodes import assign, call, const, name
from ..ir.templates import dotted
from .specs import batched


def _loaded(s):
    """Names a statement (with what it holds) reads."""
    return {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and
            isinstance(n.ctx, gast.Load)}


class _RenameReads(gast.NodeVisitor):
    """Reads of names renamed, {old: new}, in batched code: in the values of simple
    statements, the indices of writes, and the tests of branches and loops."""

    def __init__(self, renames):
        self.renames = renames

    def visit_all(self, stmts):
        if not self.renames:
            return
        for s in walk_simple(stmts):
            if isinstance(s, (gast.Assign, gast.Expr)):
                self.visit(s.value)
                for t in getattr(s, "targets", ()):
                    if isinstance(t, gast.Subscript):
                        self.visit(t.slice)
            elif isinstance(s, (gast.If, gast.While)):
                self.visit(s.test)
            elif isinstance(s, gast.For):
                self.visit(s.iter)

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.renames:
            node.id = self.renames[node.id]


# numpy functions whose derivative is finite wherever they are (at a finite point)
_TAME = {"np.sin", "np.cos", "np.tanh", "np.abs", "np.absolute", "np.square", "np.where",
         "np.maximum", "np.minimum", "np.clip", "np.sign", "np.sum", "np.mean", "np.dot",
         "np.matmul", "np.max", "np.min", "np.amax", "np.amin", "np.prod", "np.reshape",
         "np.transpose", "np.stack", "np.concatenate", "np.zeros_like", "np.ones_like",
         "np.full_like", "np.negative", "np.add", "np.subtract", "np.multiply", "np.outer",
         "np.einsum", "np.cumsum", "np.arctan", "np.tensordot", "np.expand_dims",
         "np.squeeze", "np.broadcast_to", "np.logical_and", "np.logical_or",
         "np.logical_not", "np.zeros", "np.ones", "np.array", "np.asarray", "np.copy"}


def _may_blow_up(stmts):
    """Whether a path computes something whose partial derivative can be infinite or nan at
    a finite point (np.sqrt, np.log, np.exp, a division, a non-integer power, a function
    of the user's), so that a zero adjoint times it is not zero."""
    for s in walk_simple(stmts):
        for n in gast.walk(s):
            if isinstance(n, gast.BinOp) and isinstance(n.op, (gast.Div, gast.FloorDiv,
                                                                gast.Mod)):
                return True
            if isinstance(n, gast.BinOp) and isinstance(n.op, gast.Pow) and not (
                    isinstance(n.right, gast.Constant) and type(n.right.value) is int and
                    n.right.value >= 0):
                return True
            if isinstance(n, gast.Call):
                if anno.get(n, Anno.CALLEE):
                    return True
                found = anno.get(n, Anno.PRIM)
                spelling = found[1] if found else dotted(n.func) or ""
                if not spelling.startswith("rt.") and spelling not in _TAME and \
                        spelling not in ("[]", "tuple", "list", "len", "range", "float",
                                         "int", "abs", "min", "max"):
                    return True
    return False


def _mixes_examples(stmts, program, seen=None):
    """Whether a path, or a function it calls, uses a collective over a vmap axis (psum,
    all_gather, axis_index, ...): an example's values there depend on every example's own
    values, as vmap of JAX's select computes them, so no example may borrow another's
    (rt.lane_borrow) and no adjoint may be kept from the others (rt.lane_guard_adj)."""
    seen = set() if seen is None else seen
    for s in walk_simple(stmts):
        for n in gast.walk(s):
            if not isinstance(n, gast.Call):
                continue
            found = anno.get(n, Anno.PRIM)
            if found and found[0] is not None:
                rule = found[0].batch_for.get(found[1], found[0].batch)
                if rule is not None and rule.kind == "collective":
                    return True
            callee = anno.get(n, Anno.CALLEE)
            if callee and callee not in seen:
                seen.add(callee)
                fir = program.functions.get(callee)
                if fir is not None and _mixes_examples(fir.node.body, program, seen):
                    return True
    return False


def _calls_user_code(stmts):
    """Whether a path calls a function of the user's, or a linear-algebra routine. Its
    batched variant runs for every example and knows nothing of the path's mask: for the
    examples that take the other path it could raise (a check that their values fail, a
    Cholesky factor of a matrix that is not positive definite: `except LinAlgError` or a
    test of the eigenvalues sends them elsewhere) or recurse without end (`if n == 1:` a
    base case they have passed), so those examples borrow the values of one that takes
    the path (rt.lane_borrow) even in plain vmapped code."""
    return any(isinstance(n, gast.Call) and (anno.get(n, Anno.CALLEE) or (
        dotted(n.func) or "").startswith(_RAISING_ON_VALUES))
        for s in walk_simple(stmts) for n in gast.walk(s))


_RAISING_ON_VALUES = ("np.linalg.", "scipy.linalg.", "rt.solve")


class ControlFlowRules:
    """How `Batching` rewrites if/for/while (see the module docstring)."""

    def _outside_reads(self, region):
        """Names read anywhere in the function outside the statements `region`."""
        inside = {id(x) for x in walk_simple(region)}
        out = set()
        for st in walk_simple(self.all_stmts):
            if id(st) in inside:
                continue
            if isinstance(st, (gast.If, gast.While)):
                out |= names_in(st.test)
            elif isinstance(st, gast.For):
                out |= names_in(st.iter)
            else:
                out |= names_in(st)
                if is_update(st):
                    out.add(st.targets[0].value.id)
        return out | names_in(self.fir.node.body[-1])

    def branch(self, s):
        cond = s.test
        if not batched(self.expr_spec(cond)):
            new = gast.If(test=cond, body=self.block(s.body) or [gast.Pass()],
                          orelse=self.block(s.orelse))
            return [anno.copy(s, gast.copy_location(new, s))]
        _check_branch(self, s)
        outside = self._outside_reads(s.body + s.orelse)
        in_body, in_else = assigned_in(s.body), assigned_in(s.orelse)
        # a value the branch reads before changing it: the other path must start from the
        # old value, and in a loop the next trip reads the merged one
        inner = {v for v in in_body | in_else
                 if _read_before_assigned(s.body, v) or _read_before_assigned(s.orelse, v)}
        merged = sorted(((in_body | in_else) & (outside | inner)) - self.stacks)
        out, orig, then = [], {}, {}
        if names_in(cond) & (in_body | in_else):   # the branch changes its own test
            frozen = self.namer.fresh("taken")
            out.append(assign(frozen, cond))
            cond = name(frozen)
        # a value the `then` path writes into in place is saved as a copy, and the `else`
        # path writes into its own copy (below): masked, a write leaves the other
        # examples' entries alone, so one array would do, but two names of one array
        # written into and read afterwards are what a later transformation of this code
        # (grad or vmap of it) must refuse
        written_body = {st.targets[0].value.id for st in walk_simple(s.body)
                        if is_update(st)}
        for v in merged:
            orig[v] = self.namer.fresh(v + "_before")
            now = self.current(s, v)
            if isinstance(now, gast.Constant):   # not bound yet: None on a skipped path
                out.append(assign(v, const(None)))
            out.append(assign(orig[v], call("rt.copy", [now]) if v in written_body and
                              not isinstance(now, gast.Constant) else now))
        # each path runs with a mask of the examples that take it: updates in place write
        # only those, loops stop when those are done, a path no example takes is skipped
        # (which also ends recursion on a batched test)
        outer = self.mask
        if outer is None and isinstance(cond, gast.Name):
            body_mask = cond.id
        else:
            body_mask = self.namer.fresh("mask")
            out.append(assign(body_mask, _copy.deepcopy(cond) if outer is None else
                              call("np.logical_and", [name(outer), _copy.deepcopy(cond)])))
        def else_path():
            else_mask = self.namer.fresh("mask")
            skipped = call("np.logical_not", [_copy.deepcopy(cond)])
            out.append(assign(else_mask, skipped if outer is None else
                              call("np.logical_and", [name(outer), skipped])))
            out.extend(self._path(else_mask, s.orelse))

        if s.orelse and s.body and _pops_shared(self, s):
            # both paths pop values that both paths of the forward branch pushed, the
            # `else` path's last: here it runs first, so each finds its own on top
            else_ = {}
            else_path()
            for v in merged:
                if v in in_else:
                    else_[v] = self.namer.fresh(v + "_else")
                    out.append(assign(else_[v], name(v)))
                    out.append(assign(v, name(orig[v])))
            out.extend(self._path(body_mask, s.body))
            for v in merged:
                chosen = name(else_[v]) if v in else_ else name(orig[v])
                out.append(assign(v, call("rt.select", [_copy.deepcopy(cond), name(v),
                                                        chosen]), origin=s))
            return out
        if s.body:
            out.extend(self._path(body_mask, s.body))
        written_else = {st.targets[0].value.id for st in walk_simple(s.orelse)
                        if is_update(st)}
        for v in merged:
            if v in in_body:
                then[v] = self.namer.fresh(v + "_then")
                out.append(assign(then[v], name(v)))
            if v in written_else:
                out.append(assign(v, call("rt.copy", [name(orig[v])])))
            elif v in in_body:
                out.append(assign(v, name(orig[v])))
        if s.orelse:
            else_path()
        for v in merged:
            chosen = name(then[v]) if v in then else name(orig[v])
            out.append(assign(v, call("rt.select", [_copy.deepcopy(cond), chosen, name(v)]),
                              origin=s))
        return out

    def _path(self, mask, stmts):
        """One path of a batched `if`, run with `mask` as the examples that take it."""
        outer, self.mask = self.mask, mask
        try:
            body = self._lane_guarded(mask, stmts, self.block(stmts))
        finally:
            self.mask = outer
        return self._guarded(name(mask), body, stmts)

    def _lane_guarded(self, mask, stmts, body):
        """`body` (the batched code of a path of a batched `if`, or of a trip of a batched
        loop, made from `stmts`), which runs for every example though `mask` says which
        take it, led by `x_in = rt.lane_guard(x, mask)` for each batched value from before
        that it reads, and reading x_in until it assigns x. Elsewhere the path's values may
        be nan (np.sqrt(x) where x < 0 takes the other path), and grad of vmap multiplies
        their partials by the zero adjoints there: 0 * nan reached x's adjoint in every
        example, and the gradient of every unbatched value the path reads. The guard is x
        itself in vmapped code; code differentiated from it calls rt.lane_borrow instead
        (the examples outside the mask read the values of one inside it, where the path is
        defined) and keeps x's adjoint in the examples of the mask only. A path that calls
        a function of the user's borrows in vmapped code too (_calls_user_code). Only paths
        with an operation whose partial can be infinite at a finite point (sqrt, log, exp,
        division, a power, a function of the user's) are guarded, and none that mixes the
        examples (a collective, _mixes_examples); unbatched values are read as they are.
        (The batched code is renamed in a copy: the IR it is made from is batched again for
        other specs.)"""
        if not _may_blow_up(stmts) or _mixes_examples(stmts, self.program):
            return body
        body = _copy.deepcopy(body)
        # (a list the path pushes on or pops from, an adjoint stack included, is read as
        # it is: a copy would be popped, the list itself never)
        stacks = {pop_stack(s) for s in walk_simple(stmts) if is_pop(s)} | \
            {push_parts(s)[0] for s in walk_simple(stmts) if is_push(s)}
        candidates = {v for v in set().union(*(names_in(s) for s in walk_simple(stmts)))
                      if self.of(v) is True and v not in self.stacks and v not in stacks}
        renames, done = {}, set()
        for s in body:
            live = candidates - done
            if not live:
                break
            inner = live - assigned_in([s]) if isinstance(s, (gast.If, gast.For, gast.While)) \
                else live
            for v in sorted(inner):
                if v not in renames and v in _loaded(s):
                    renames[v] = self.namer.fresh(v + "_in")
            _RenameReads({v: renames[v] for v in inner if v in renames}).visit_all([s])
            done |= assigned_in([s])
        guard = "rt.lane_borrow" if _calls_user_code(stmts) else "rt.lane_guard"
        prologue = [assign(g, call(guard, [name(v), name(mask)]))
                    for v, g in sorted(renames.items())]
        return prologue + body

    def _guarded(self, mask, stmts, original):
        """`stmts` run only if some example takes this path. A path that saves values on a
        stack (or restores them) runs for every example when it runs at all, so each finds
        its values at the same depth; the backward pass's mirror path has the same mask
        (its condition is the saved forward one), so it pops exactly when this pushed.
        (A condition the same for every example that vmap sees as batched, a recursive
        function's, stays consistent: the path runs where it ran before.)"""
        return [_guard(call("rt.any_lane", [mask]), stmts)]

    def current(self, s, v):
        """The value of `v` just before statement `s`: None where it may not exist yet."""
        if v in self.surely.get(id(s), ()):
            return name(v)
        if v in self.maybe.get(id(s), ()):
            self.need_init.add(v)      # bound on some paths only: start it as None
            return name(v)
        return const(None)

    def _masked_trip(self, s, active_expr):
        """The body of a loop whose examples finish at different trips: names the loop
        carries (or that are read after it) keep their value in examples that are done."""
        outside = self._outside_reads(s.body)
        body_assigned = assigned_in(s.body)
        carried = {v for v in body_assigned if _read_before_assigned(s.body, v)}
        merged = sorted((body_assigned & (outside | carried)) - self.stacks)
        active = self.namer.fresh("active")
        if self.mask is not None:      # examples outside an enclosing branch never loop
            active_expr = call("np.logical_and", [name(self.mask), active_expr])
        trip = [assign(active, active_expr)]
        orig = {}
        # (a value the trip writes into in place: the old one saved as a copy, for the
        # reason `branch` gives)
        written = {st.targets[0].value.id for st in walk_simple(s.body) if is_update(st)}
        for v in merged:
            orig[v] = self.namer.fresh(v + "_before")
            trip.append(assign(orig[v], call("rt.copy", [name(v)]) if v in written
                               else name(v)))
        saved, self.mask = self.mask, active
        try:
            # (examples that are done run the trip too, on values that may be nan there)
            trip += self._lane_guarded(active, s.body, self.block(s.body))
        finally:
            self.mask = saved
        for v in merged:
            trip.append(assign(v, call("rt.select", [name(active), name(v), name(orig[v])]),
                               origin=s))
        pre = []
        for v in merged:
            if v not in self.surely.get(id(s), ()):
                if v in self.maybe.get(id(s), ()):
                    self.need_init.add(v)
                else:
                    pre.append(assign(v, const(None)))
        return pre, trip

    def while_loop(self, s):
        if not batched(self.expr_spec(s.test)):
            new = gast.While(test=s.test, body=self.block(s.body), orelse=[])
            return [anno.copy(s, gast.copy_location(new, s))]
        test = _copy.deepcopy(s.test)
        if self.mask is not None:
            test = call("np.logical_and", [name(self.mask), test])
        pre, trip = self._masked_trip(s, _copy.deepcopy(s.test))
        new = gast.While(test=call("rt.any_lane", [test]), body=trip, orelse=[])
        return pre + [anno.copy(s, gast.copy_location(new, s))]

    def for_loop(self, s):
        if not batched(self.expr_spec(s.iter)):
            new = gast.For(target=s.target, iter=s.iter, body=self.block(s.body), orelse=[],
                           type_comment=None)
            return [anno.copy(s, gast.copy_location(new, s))]
        it, backwards = s.iter, False
        if isinstance(it, gast.Call) and dotted(it.func) == "reversed":
            it, backwards = it.args[0], True
        if isinstance(it, gast.Call) and dotted(it.func) == "rt.reversed_range":
            backwards = True
        elif not (isinstance(it, gast.Call) and dotted(it.func) == "range"):
            it = None
        if it is None or not 1 <= len(it.args) <= 2:
            raise self.error(s, "a loop whose trip count differs between examples must "
                             "run over range(stop) or range(start, stop).",
                             "write the loop as a while loop.")
        start = it.args[0] if len(it.args) == 2 else const(0)
        stop = it.args[-1]
        i = s.target.id
        # only the lanes an enclosing loop still runs count: the others' trip counts are
        # left from earlier trips, and this loop must make as many trips as the loop that
        # saved values for it (seed 91694: the backward loop popped more than was pushed)
        running = [name(self.mask)] if self.mask is not None else []
        lo = call("rt.min_start", [_copy.deepcopy(start)] + running) \
            if batched(self.expr_spec(start)) else _copy.deepcopy(start)
        hi = call("rt.max_trips", [_copy.deepcopy(stop)] + running) \
            if batched(self.expr_spec(stop)) else _copy.deepcopy(stop)
        rng = call("rt.reversed_range" if backwards else "range", [lo, hi])
        active = gast.Compare(left=name(i), ops=[gast.Lt()],
                              comparators=[_copy.deepcopy(stop)])
        anno.set(active, Anno.PRIM, (rules.lookup("<"), "<"))
        if batched(self.expr_spec(start)):
            low = gast.Compare(left=name(i), ops=[gast.GtE()],
                               comparators=[_copy.deepcopy(start)])
            anno.set(low, Anno.PRIM, (rules.lookup(">="), ">="))
            active = call("np.logical_and", [low, active])
        pre, trip = self._masked_trip(s, active)
        new = gast.For(target=name(i, True), iter=rng, body=trip, orelse=[], type_comment=None)
        return pre + [anno.copy(s, gast.copy_location(new, s))]


def _guard(test, body):
    return gast.If(test=test, body=body or [gast.Pass()], orelse=[])


def _pops_shared(pass_, s):
    """Whether both paths of `s` pop from a stack of saved values they share."""
    def popped(stmts):
        return {pop_stack(st) for st in walk_simple(stmts) if is_pop(st)} & pass_.stacks
    return bool(popped(s.body) & popped(s.orelse))


def _check_branch(pass_, s):
    for st in walk_simple(s.body + s.orelse):
        if is_push(st) and push_parts(st)[0] not in pass_.stacks:
            raise pass_.error(st, "a list append (or a saved value) in a branch whose "
                              "condition differs between examples cannot be batched.",
                              "append on every path, or move it out of the branch.")


def _read_before_assigned(body, n):
    """Whether some path through `body` reads `n` before binding it (an assignment in
    one path of a nested `if`, or in a loop, binds it only on some paths)."""
    return _first_use(body, n) == "read"


def _first_use(stmts, n):
    """'read' if a path reads n before binding it, 'bound' if every path binds it first,
    None otherwise."""
    for st in stmts:
        if n in reads(st):
            return "read"
        if isinstance(st, gast.If):
            a, b = _first_use(st.body, n), _first_use(st.orelse, n)
            if "read" in (a, b):
                return "read"
            if a == b == "bound":
                return "bound"
        elif isinstance(st, (gast.For, gast.While)):
            if _first_use(st.body, n) == "read":
                return "read"
        elif n in targets(st) and not is_update(st):
            return "bound"
    return None
