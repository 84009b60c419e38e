"""Assemble reverse-mode functions: `grad_f` (one function) or a `f_fwd`/`f_bwd` pair.

    def loss(W, x):                      def grad_loss(W, x):
        h = np.tanh(x @ W)                   matmul = x @ W
        return np.sum(h)           ->        h = np.tanh(matmul)
                                             out = np.sum(h)
                                             dout = rt.seed(out, 'model.py:1 loss')
                                             dh = rt.expand(dout, h)
                                             dmatmul = dh * (1.0 - h * h)
                                             dW = rt.matmul_adj_x2(x, dmatmul, W)
                                             return rt.as_grad(dW, W)

`reverse.Reverse` writes the statements; this module decides which primal values must be
saved (those the backward pass reads and the forward pass may overwrite), inserts the pushes
and pops, removes dead code and wraps everything in function definitions.
"""
import gast

from .. import optimize
from ..ir import anno
from ..ir.analysis import (definitely_defined, free_reads, is_push, is_stack_push, is_update,
                           loop_depth_sites, maybe_defined, names_in, push_parts, reads, targets,
                           walk_simple)
from ..ir.anno import Anno
from ..ir.nodes import assign as _assign, call as _call, const as _const, funcdef, name as _name
from ..ir.nodes import with_source
from ..ir.rewrites import split_aux
from ..ir.templates import as_index_value, dotted
from ..ir import structural_zeros
from .adjoints import Reverse, RestoreMarker


# helpers whose argument at this index (in a call of this many arguments) they read for its
# shape only: unbroadcast's target, and the branch a select_adj gives zeros of its shape
SHAPE_READS = {"rt.unbroadcast": (1, 2), "rt.select_adj": (4, 5)}


def _all_reads(stmts):
    out = set()
    for s in walk_simple(stmts):
        if isinstance(s, RestoreMarker):
            continue
        out |= names_in(s) if not isinstance(s, (gast.If, gast.For, gast.While)) else \
            names_in(getattr(s, "test", None) or s.iter)
    return out


def _needed_reads(stmts, restores, mirror="start"):
    """name -> the moments the backward code reads it: ("after", s) / ("before", s) for a
    forward statement s, "start" or "end" of the forward pass. An if/loop header counts
    only if its body does something: real code, or a restore of a saved value."""
    out = {}

    def add(names, m):
        for n in names:
            out.setdefault(n, []).append(m)

    for s in stmts:
        if isinstance(s, RestoreMarker):
            continue
        m = anno.get(s, Anno.MIRROR, mirror)
        if isinstance(s, gast.If):
            if _does_something(s.body + s.orelse, restores):
                add(names_in(s.test), m)
                for part in (s.body, s.orelse):
                    for k, v in _needed_reads(part, restores, m).items():
                        out.setdefault(k, []).extend(v)
        elif isinstance(s, (gast.For, gast.While)):
            if _does_something(s.body, restores):
                add(names_in(s.iter), m)
                for k, v in _needed_reads(s.body, restores, m).items():
                    out.setdefault(k, []).extend(v)
        else:
            add(names_in(s), m)
    return out


def _does_something(stmts, restores):
    for s in stmts:
        if isinstance(s, RestoreMarker):
            if restores(s):
                return True
        elif isinstance(s, gast.If):
            if _does_something(s.body + s.orelse, restores):
                return True
        elif isinstance(s, (gast.For, gast.While)):
            if _does_something(s.body, restores):
                return True
        elif not isinstance(s, gast.Pass):
            return True
    return False


def _where(fir, node=None):
    """'file:line (function)' for run-time errors; the runtime adds the source line."""
    line = fir.source.line_of(node if node is not None and getattr(node, "lineno", None)
                              else fir.node)
    return f"{fir.source.filename}:{line} ({fir.source.name})"


class Saves:
    """Which primal names the backward pass needs saved, and the push/pop code for them."""

    def __init__(self, rev, fwd, bwd, params, fwd_of):
        self.rev = rev
        self.fwd_of = fwd_of
        self.params = params
        self.sites = loop_depth_sites(fwd)
        self.span, self.loops = _spans(fwd)
        reads_at = self._choose_saved(bwd)
        self.backward_reads = set(reads_at)
        # a callee's saved values hold its arguments by reference, for its backward pass
        self.held_by_calls = {a.id for st in walk_simple(fwd)
                              if isinstance(st, gast.Assign) and
                              isinstance(st.targets[0], gast.Tuple) and
                              isinstance(st.value, gast.Call) and
                              anno.get(st.value, Anno.CALLEE)
                              for a in st.value.args if isinstance(a, gast.Name)}
        self.stacks = {n: rev.namer.stack(n) for n in self.saved}
        self.grown = {push_parts(s)[0] for s in walk_simple(fwd)
                      if is_push(s) and not is_stack_push(s)}   # the user's lists
        self.defined = definitely_defined(fwd, params)
        self.maybe = maybe_defined(fwd, params)
        self.need_init = set()
        self.unbound_at = set()
        self._find_loop_locals(fwd, reads_at)
        self._recompute_cheap_loop_locals()
        self.shape_only = self._read_for_shape_only(bwd)

    # -------------------------------------------------------------- which values
    def _choose_saved(self, bwd):
        """Set `self.saved`: the names the backward pass reads at a moment after which the
        forward pass may overwrite them. Returns name -> the moments it is read."""
        saved = set()
        made_from = self.rev.made_from

        def restores(marker):
            made = made_from.get(id(marker.stmt), [marker.stmt])
            return any(not anno.get(m, Anno.NO_SAVE, False) and targets(m) & saved for m in made)

        while True:   # saving a value can make a branch test or loop range needed: iterate
            reads_at = _needed_reads(bwd, restores)
            new = {name for name, mirrors in reads_at.items()
                   if any(self._overwritten_after(name, m) for m in mirrors)}
            if new <= saved:
                break
            saved |= new
        self.saved = sorted(saved)
        return reads_at

    def _overwritten_after(self, name, mirror):
        """May `name` be reassigned after the moment `mirror` reads it?"""
        where = [s for s, _ in self.sites.get(name, []) if not anno.get(s, Anno.NO_SAVE, False)]
        if mirror == "end" or not where:
            return False
        if mirror == "start":
            return True
        kind, stmt = mirror
        stmt = self.fwd_of.get(id(stmt), stmt)
        span, loops = self.span, self.loops
        if id(stmt) not in span:
            return True
        start, end = span[id(stmt)]
        for a in where:
            a_start, _ = span[id(a)]
            if (a_start > end if kind == "after" else a_start >= start):
                return True
            if any(l is m for l in loops[id(a)] for m in loops[id(stmt)]):
                return True    # a later trip of a loop around both
        return False

    # -------------------------------------------------------------- loop-local values
    def _find_loop_locals(self, fwd, reads_at):
        """Loop-local values (assigned once, at the top of a loop body, not read earlier in
        it) are pushed right after they are made and popped at the top of the backward loop
        body: no placeholder pushes, no None initialisation."""
        self.local = {}          # name -> forward site statement
        self.pop_at_top = {}     # id(backward loop) -> names
        fwd_of, rev = self.fwd_of, self.rev
        orig_of = {id(v): k for k, v in fwd_of.items()}
        for name in self.saved:
            where = self.sites.get(name, [])
            if len(where) != 1 or name in self.params:
                continue
            loop, site = _enclosing_loop(fwd, where[0][0])
            if loop is None or isinstance(site, gast.For) or _read_before(loop.body, site, name):
                continue
            if any(m != "start" and m != "end" and m[0] == "before" and
                   fwd_of.get(id(m[1]), m[1]) is loop for m in reads_at.get(name, [])):
                # the backward trip ends by re-zeroing an adjoint shaped like the value
                # before the trip (the previous trip's, whose shape may differ): that
                # value must be restored where the forward trip made it, not popped at top
                continue
            orig = orig_of.get(id(loop))
            if orig not in rev.header_of:
                continue
            self.local[name] = site
            self.pop_at_top.setdefault(orig, []).append(name)

    def _recompute_cheap_loop_locals(self):
        """Cheap loop-local values (an element of a container or array, or parts of a
        tuple) whose inputs are still there in the backward pass are recomputed, not
        saved."""
        self.recomputed = set()
        self.remat = {}          # id(IR loop) -> statements recomputed at the top
        for orig, names in self.pop_at_top.items():
            loop = self.fwd_of[orig]
            index = loop.target.id if isinstance(loop, gast.For) else None
            available = {index}
            kept, stmts = [], []
            for name in sorted(names, key=lambda n: _position(loop.body, self.local[n])):
                chain = self._recomputable(self.local[name], loop, available)
                if chain is None or not all(t in names or t not in self.saved
                                            for st in chain for t in targets(st)):
                    kept.append(name)
                    continue
                for st in chain:
                    if not any(st is x for x in stmts):
                        stmts.append(st)
                        available |= targets(st)
            stmts.sort(key=lambda st: _position(loop.body, st))
            self.pop_at_top[orig] = kept
            self.remat[orig] = [_copy(st) for st in stmts]
            for st in stmts:
                for t in targets(st):
                    self.local.pop(t, None)
                    self.recomputed.add(t)

    def _recomputable(self, st, loop, available, depth=0):
        """The statements that redo `st` at the top of the backward body of `loop` (what
        it needs first), or None where that is not cheap or not possible."""
        if depth > 8 or not _cheap(st) or not any(b is st for b in loop.body):
            return None
        needs = []
        for r in _reads_of(st):
            if r in available or _invariant(r, self.sites, self.params):
                continue
            where = self.sites.get(r, [])
            if len(where) != 1:
                return None
            more = self._recomputable(where[0][0], loop, available, depth + 1)
            if more is None:
                return None
            needs += more
        return needs + [st]

    def _read_for_shape_only(self, bwd):
        """Saved names the backward pass reads only for their shape (SHAPE_READS): they
        are saved as rt.shape_only(name), so a loop over large arrays keeps no copy of its
        temporaries (a loop of `x = 0.5 * x + 0.1 * np.sin(x)` kept three arrays per trip
        that it never reads)."""
        shape_reads, other_reads = set(), set()
        remat = [s for stmts in self.remat.values() for s in stmts]
        for node in bwd + remat:
            for n in gast.walk(node):
                if isinstance(n, gast.Call) and not n.keywords and \
                        len(n.args) == SHAPE_READS.get(dotted(n.func), (0, -1))[1] and \
                        isinstance(n.args[SHAPE_READS[dotted(n.func)][0]], gast.Name):
                    shape_reads.add(id(n.args[SHAPE_READS[dotted(n.func)][0]]))
            for n in gast.walk(node):
                if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Store) and \
                        id(n) not in shape_reads:
                    other_reads.add(n.id)
        return set(self.saved) - other_reads - self.grown

    def forward(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.If):
                s.body, s.orelse = self.forward(s.body), self.forward(s.orelse)
            elif isinstance(s, (gast.For, gast.While)):
                s.body = self.forward(s.body)
            local = [n for n in sorted(targets(s) & set(self.local)) if self.local[n] is s]
            if not anno.get(s, Anno.NO_SAVE, False):
                for name in sorted(targets(s) & set(self.saved) - set(local) -
                                   self.recomputed):
                    if name not in self.maybe.get(id(s), set()):
                        self.unbound_at.add((id(s), name))   # nothing to save yet
                        continue
                    if name not in self.defined.get(id(s), set()):
                        self.need_init.add(name)
                    out.append(self._push(name))
            if is_update(s):
                base = s.targets[0].value.id
                shares = anno.get(s, Anno.SHARES_MEMORY, frozenset())
                if base in self.saved or shares & self.backward_reads or \
                        ({base} | shares) & self.held_by_calls:
                    # the old value, a view of it that the backward pass reads, or one a
                    # callee saved for its backward pass, must not change
                    s = self._functional_update(s)
            out.append(s)
            for name in local:
                out.append(self._push(name))
        return out

    @staticmethod
    def _functional_update(s):
        """`x[i] = v` -> `x = rt.index_update(x, i, v)`: the saved old `x` must not change."""
        target = s.targets[0]
        call = _call("rt.index_update", [_name(target.value.id), as_index_value(target.slice),
                                         s.value])
        return gast.copy_location(_assign(target.value.id, call), s)

    def _push(self, name):
        value = _name(name)
        if name in self.grown:     # appends would reach the saved list: save a copy
            value = _call("rt.copy_stack", [value])
        elif name in self.shape_only:
            value = _call("rt.shape_only", [value])
        return gast.Expr(value=_call("rt.push", [_name(self.stacks[name]), value]))

    def _pop(self, name):
        return _assign(name, _call("rt.pop", [_name(self.stacks[name])]))

    def backward(self, stmts, fwd_of):
        out = []
        for s in stmts:
            if isinstance(s, RestoreMarker):
                # undo, in reverse order, every forward statement made from this one
                for made in reversed(self.rev.made_from.get(id(s.stmt), [s.stmt])):
                    if anno.get(made, Anno.NO_SAVE, False):
                        continue
                    for name in sorted(targets(made) & set(self.saved) - set(self.local) -
                                       self.recomputed):
                        if (id(made), name) not in self.unbound_at:
                            out.append(self._pop(name))
                continue
            if isinstance(s, gast.If):
                s.body = self.backward(s.body, fwd_of) or [gast.Pass()]
                s.orelse = self.backward(s.orelse, fwd_of)
            elif isinstance(s, (gast.For, gast.While)):
                key = anno.get(s, Anno.LOOP_OF)
                s.body = [_copy(r) for r in self.remat.get(key, [])] + \
                    [self._pop(n) for n in self.pop_at_top.get(key, [])] + \
                    self.backward(s.body, fwd_of)
            out.append(s)
        return out

    def prologue(self):
        out = [_assign(self.stacks[n], gast.List(elts=[], ctx=gast.Load())) for n in self.saved]
        out += [_assign(n, _const(None)) for n in sorted(self.need_init)]
        return out


def _spans(stmts):
    """id(statement) -> (first, last) pre-order index it covers, and the loops around it."""
    span, loops = {}, {}
    counter = [0]

    def visit(block, enclosing):
        for s in block:
            start = counter[0]
            counter[0] += 1
            loops[id(s)] = enclosing
            if isinstance(s, gast.If):
                visit(s.body, enclosing)
                visit(s.orelse, enclosing)
            elif isinstance(s, (gast.For, gast.While)):
                visit(s.body, enclosing + [s])
            span[id(s)] = (start, counter[0] - 1)
    visit(stmts, [])
    return span, loops


def _position(body, site):
    for i, s in enumerate(body):
        if s is site:
            return i
    return len(body)


def _cheap(s):
    """Reading an element or unpacking a tuple: cheap enough to redo in the backward pass."""
    if not isinstance(s, gast.Assign):
        return False
    if isinstance(s.targets[0], gast.Tuple) or isinstance(s.value, gast.Name):
        return isinstance(s.value, gast.Name)      # unpacking a tuple, or a plain copy
    found = anno.get(s.value, Anno.PRIM)
    return bool(found) and found[1] == "[]" and isinstance(s.value.value, gast.Name)


def _invariant(name, sites, params):
    """Never reassigned: a parameter, a global, or assigned once outside every loop."""
    where = sites.get(name, [])
    if not where:
        return True
    return len(where) == 1 and not where[0][1] and name not in params


def _enclosing_loop(stmts, site, loop=None):
    """(loop, site) if `site` sits directly in the body of a loop, else (None, site)."""
    for s in stmts:
        if s is site:
            return loop, site
        if isinstance(s, gast.If):
            found, _ = _enclosing_loop(s.body + s.orelse, site, None)
            if found is not None or _contains(s, site):
                return found, site
        elif isinstance(s, (gast.For, gast.While)):
            found, _ = _enclosing_loop(s.body, site, s)
            if found is not None or _contains(s, site):
                return found, site
    return None, site


def _contains(node, site):
    return any(s is site for s in walk_simple(getattr(node, "body", []) +
                                               getattr(node, "orelse", [])))


def _read_before(body, site, name):
    """Is `name` read in `body` before `site` (or in a nested block before it)?"""
    for s in body:
        if s is site:
            return False
        for inner in walk_simple([s]):
            if name in _reads_of(inner):
                return True
    return False


def _reads_of(s):
    return reads(s)


def _mark_counters(fwd):
    for s in walk_simple(fwd):
        if isinstance(s, gast.While):
            anno.set(s.body[-1], Anno.NO_SAVE, True)   # the trip counter increment: read once, after the loop


def build_reverse(program, fir, wrt, split_callee, has_aux=False):
    """Run the reverse pass; returns (rev, fwd, bwd_builder)."""
    rev = Reverse(program, fir, wrt, split_callee)
    if has_aux:
        rev.aux = split_aux(fir, rev.namer)
    fwd = rev.run()
    _mark_counters(fwd)
    return rev, fwd


def grad_function(program, fir, name, argnums, has_aux, with_value, split_callee,
                  single=True, holomorphic=False):
    """`grad_f(params...)`: forward, seed, backward, return the adjoints of `argnums`.
    With `holomorphic`, the output and the differentiated arguments are complex and the
    seed is 1 + 0j: rules transpose without conjugating, so the result is f'(z)."""
    params = fir.params
    wrt = [params[i] for i in argnums]
    ret_line = _where(fir, fir.node.body[-1])
    rev, fwd = build_reverse(program, fir, wrt, split_callee, has_aux)
    out = rev.out
    dout = rev.adj(out.id) if isinstance(out, gast.Name) else rev.namer.fresh("dout")
    seed_helper, check = ("rt.seed_holomorphic", "rt.check_complex_input") if holomorphic \
        else ("rt.seed", "rt.check_float_input")
    seed = [_assign(dout, _call(seed_helper, [_copy(out), _const(ret_line)]))]
    anno.set(seed[0], Anno.MIRROR, "end")
    checks = [gast.Expr(value=_call(check, [_name(p), _const(p),
                                                             _const(_where(fir))]))
              for p in wrt]
    bwd = rev.backward_from(seed, dout, structural_zeros.SEED)
    grads = [_call("rt.as_grad", [rev.param_adjoint(p) or _const(None), _name(p)]) for p in wrt]
    result = grads[0] if single else gast.Tuple(elts=grads, ctx=gast.Load())
    # the value and aux as the forward pass left them (the backward pass may restore older
    # values of the same names while it undoes a loop)
    kept = []
    if with_value and isinstance(out, gast.Name):
        kept.append(_assign(rev.namer.fresh("value"), _copy(out)))
        out = _name(kept[-1].targets[0].id)
    aux = None
    if has_aux:
        kept.append(_assign(rev.namer.fresh("aux_value"), _name(rev.aux)))
        aux = _name(kept[-1].targets[0].id)
    fwd = fwd + kept
    value = _copy(out)
    if has_aux:
        value = gast.Tuple(elts=[value, aux], ctx=gast.Load())
    if with_value:
        result = gast.Tuple(elts=[value, result], ctx=gast.Load())
    elif has_aux:
        result = gast.Tuple(elts=[result, _copy(aux)], ctx=gast.Load())
    ret = gast.Return(value=result)
    fwd_of = rev.fwd_of
    bwd = optimize.dce(bwd + [ret], set())
    saves = Saves(rev, fwd, bwd, params, fwd_of)
    fwd = saves.forward(fwd)
    bwd = saves.backward(bwd, fwd_of)
    unbound = _bind_unbound(_residuals(fwd, bwd, params, saves), fwd, params, saves)
    body = checks + saves.prologue() + unbound + fwd + optimize.simplify(bwd)
    body = optimize.propagate_copies(optimize.dce(body, set()), params)
    body = optimize.accumulate_in_place(body)
    return with_source(funcdef(name, params, body, fir.node), fir)


def vjp_functions(program, fir, fwd_name, bwd_name, split_callee, has_aux=False,
                  finish=True, wrt=None, given_cotangent=False):
    """`f_fwd(params) -> (out, saved)` and `f_bwd(saved, dout) -> adjoints of all params`
    (differentiating with respect to `wrt`, all parameters by default; others get zeros).
    `given_cotangent`: only the user passes `dout` (tp.vjp, a Jacobian's basis), never a
    caller's backward pass, so it is linear in itself (structural_zeros.SEED)."""
    params = fir.params
    rev, fwd = build_reverse(program, fir, params if wrt is None else wrt, split_callee,
                             has_aux)
    out = rev.out
    dout = rev.adj(out.id) if isinstance(out, gast.Name) else rev.namer.fresh("dout")
    # (a cotangent's zeros are structural, but guarding them would cost a pass per rule on
    # every vjp and Jacobian, and keep jit from reading a Hessian as one matrix product:
    # only its linearity is used)
    bwd = rev.backward_from([], dout, structural_zeros.SEED if given_cotangent else None)
    grads = []
    for p in params:
        d = rev.param_adjoint(p)
        if finish:
            grads.append(_call("rt.as_grad", [d or _const(None), _name(p)]))
        else:
            grads.append(d or _call("rt.zeros_like", [_name(p)]))
    bwd = optimize.dce(bwd + [gast.Return(value=gast.Tuple(elts=grads, ctx=gast.Load()))],
                       {dout})
    fwd_of = rev.fwd_of
    saves = Saves(rev, fwd, bwd, params, fwd_of)
    fwd = saves.forward(fwd)
    bwd = optimize.dce(saves.backward(bwd, fwd_of), set())
    residuals = sorted(_residuals(fwd, bwd, params, saves) - {dout})
    saved_name = rev.namer.fresh("saved")
    result = [_copy(out), _tuple(residuals)]
    if has_aux:
        result.insert(1, _name(rev.aux))
    unbound = _bind_unbound(residuals, fwd, params, saves)
    fwd_body = saves.prologue() + unbound + fwd + [gast.Return(value=gast.Tuple(elts=result,
                                                                      ctx=gast.Load()))]
    fwd_body = optimize.propagate_copies(optimize.dce(fwd_body, set()), params)
    unpack = [_assign(residuals, _name(saved_name))] if len(residuals) > 1 else \
        [_assign(residuals[0], gast.Subscript(value=_name(saved_name), slice=_const(0),
                                              ctx=gast.Load()))] if residuals else []
    # The backward pass pops its stacks; copies keep `saved` usable for another call
    # (a Jacobian runs it once per output element).
    copies = [_assign(st, _call("rt.copy_stack", [_name(st)]))
              for st in residuals if st in saves.stacks.values()]
    bwd_body = unpack + copies + optimize.simplify(bwd)
    return (with_source(funcdef(fwd_name, params, fwd_body, fir.node), fir),
            with_source(funcdef(bwd_name, [saved_name, dout], bwd_body, fir.node), fir))


def _residuals(fwd, bwd, params, saves):
    """The primal names the backward statements read."""
    fwd_defined = set(params) | {t for s in walk_simple(fwd) for t in targets(s)} | \
        set(saves.stacks.values())
    return free_reads(bwd) & fwd_defined


def _bind_unbound(residuals, fwd, params, saves):
    """`name = None` for each residual that one path of the forward pass leaves unbound: the
    backward pass reads it only on the paths that bound it, except to zero an adjoint where
    branches join (`rt.zeros_like(None)` is None, a zero)."""
    end = gast.Pass()
    surely = definitely_defined(fwd + [end], params).get(id(end), set())
    return [_assign(r, _const(None)) for r in sorted(residuals)
            if r not in surely and r not in saves.stacks.values()]


def _tuple(names):
    return gast.Tuple(elts=[_name(n) for n in names], ctx=gast.Load())


def _copy(node):
    import copy
    return copy.deepcopy(node)
