"""Reverse mode: an IR function -> forward statements + backward (adjoint) statements.

    h = np.tanh(z)            h = np.tanh(z)             # forward, as written
    out = np.sum(h)     ->    out = np.sum(h)
                              dout = rt.seed(out, ...)   # backward, in reverse order
                              dh = rt.expand(dout, h)
                              dz = dh * (1.0 - h * h)

Each statement's adjoint comes from its primitive's template in `rules/`. Adjoints are
created on their first contribution and added to afterwards; where control flow joins, an
adjoint that only some paths created is first set to zeros. A primal value that the
backward statements read and that the forward pass may overwrite (in a loop, or assigned
twice) is pushed onto `<name>_stack` before it is overwritten and popped back at the mirror
point of the backward pass, so the backward pass sees every value as it was. Branches
re-test their condition (saved the same way); `for` loops run backwards over the same range;
`while` loops count their trips. Calls of other user functions use their own
forward/backward pair (`g_fwd`, `g_bwd`), generated on demand, so recursion works.
"""
import copy as _copy

import gast

from .. import rules
from ..errors import IN_PLACE_CALL_HINT, error_at
from ..ir import anno
from ..ir.analysis import (assigned_in, changed_by_call, is_pop, is_push, is_stack_push, is_update,
                           names_in, pop_stack, push_parts, reads, targets, varied, walk_simple)
from ..ir.anno import Anno
from ..ir.nodes import assign as _assign, call as _call, const as _const, name as _name
from ..ir.rewrites import (call_differentiated_variants, freeze_branch_tests, rename_reads,
                            split_self_assignments)
from ..ir.templates import as_index_value, bind_call, substitute
from ..ir import structural_zeros


def _method(obj, attr, args):
    return gast.Call(func=gast.Attribute(value=_name(obj), attr=attr, ctx=gast.Load()),
                     args=list(args), keywords=[])


ARRAY_RESULT = "array"
_ARITHMETIC = {"+", "-", "*", "/", "**", "@", "u-", "u+"}


class Adjoints:
    """Static knowledge while emitting backward code: which adjoints exist right now, and
    how far their zeros are structural (`flow`, see structural_zeros.py; absent: unknown)."""

    def __init__(self, live=(), flow=None, unpicked=None):
        self.live = set(live)
        self.flow = dict(flow or {})
        # adjoint -> the name of a boolean array, true at its entries that are structural
        # zeros (np.where or max/min did not take them, a write overwrote them)
        self.unpicked = dict(unpicked or {})

    def copy(self):
        return Adjoints(self.live, self.flow, self.unpicked)


class Reverse:
    """Builds forward and backward statement lists for one IR function."""

    def __init__(self, program, fir, wrt_params, split_callee):
        self.program = program
        self.fir = fir
        self.src = fir.source
        self.node = fir.node
        self.namer = program.function_namer(fir)
        self.wrt = wrt_params
        self.split_callee = split_callee          # (ir_name) -> (fwd_name, bwd_name)
        self.adj_names = {}
        self.stack_adjoints = set()
        self.kinds = {}
        self.header_of = {}       # id(IR loop) -> its backward loop
        self.fwd_of = {}          # id(IR statement) -> the forward statement made from it
        self.made_from = {}       # id(IR statement) -> every forward statement made from it
        self.trip_counters = {}   # id(IR while loop) -> the name counting its trips

    # ---------------------------------------------------------------- names
    def adj(self, name):
        if name not in self.adj_names:
            self.adj_names[name] = self.namer.adjoint(name)
        return self.adj_names[name]

    def error(self, node, msg, hint=None):
        return error_at(node, self.src, msg, hint, pass_name="reverse")

    # ---------------------------------------------------------------- entry
    def run(self):
        body = self.node.body
        ret = body[-1]
        assert isinstance(ret, gast.Return), "controlflow leaves one return at the end"
        body = rename_straight_line(body, self.namer, self.fir.params)
        ret = body[-1]
        self.body = freeze_branch_tests(split_self_assignments(body[:-1], self.namer),
                                         self.namer)
        call_differentiated_variants(self.body)
        self.out = ret.value
        self.active = varied(self.body, self.wrt)
        # Lists this function pops are stacks: their adjoints are stacks too. Lists it only
        # appends to are containers (user lists): an append's adjoint is read by position.
        self.push_index = {}
        self._infer_kinds()
        self.call_residuals = {}
        fwd = self.forward(self.body)
        return fwd

    def backward_from(self, seed_stmts, out_adjoint, seed_flow=None):
        """Backward statements, given statements that set the output's adjoint (whose zeros
        flow as `seed_flow` says)."""
        state = Adjoints()
        bwd = list(seed_stmts)
        if isinstance(self.out, gast.Name) and self.out.id in self.active and out_adjoint:
            state.live.add(self.adj(self.out.id))
            if seed_flow is not None:
                state.flow[self.adj(self.out.id)] = seed_flow
            if out_adjoint != self.adj(self.out.id):
                bwd.append(_assign(self.adj(self.out.id), _name(out_adjoint)))
        bwd += self.backward(self.body, state)
        self.final_state = state
        return bwd

    def param_adjoint(self, param):
        """Expression for the adjoint of `param` at the end of the backward pass, or None."""
        d = self.adj_names.get(param)
        if d is not None and d in self.final_state.live:
            return _name(d)
        return None

    # ---------------------------------------------------------------- kinds
    def _infer_kinds(self):
        """Names surely holding arrays or numbers (made by numpy or an operator), whose
        adjoints can be added with `+`; anything else may be a container (`rt.add`)."""
        for s in walk_simple(self.body):
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                found = anno.get(s.value, Anno.PRIM)
                numeric = bool(found) and found[0] is not None and not found[0].container \
                    and not found[0].container_out \
                    and (found[1].startswith(("np.", "math.")) or found[1] in _ARITHMETIC)
                if numeric:
                    self.kinds.setdefault(s.targets[0].id, ARRAY_RESULT)
                else:
                    self.kinds[s.targets[0].id] = None

    # ---------------------------------------------------------------- forward
    def forward(self, stmts):
        out = []
        for s in stmts:
            first = len(out)
            if isinstance(s, gast.If):
                new = gast.If(test=s.test, body=self.forward(s.body),
                              orelse=self.forward(s.orelse))
                out.append(anno.copy(s, gast.copy_location(new, s)))
            elif isinstance(s, gast.For):
                new = gast.For(target=s.target, iter=s.iter, body=self.forward(s.body),
                               orelse=[], type_comment=None)
                out.append(anno.copy(s, gast.copy_location(new, s)))
            elif isinstance(s, gast.While):
                counter = self.namer.fresh("n_" + s.test.id)
                self.trip_counters[id(s)] = counter
                out.append(_assign(counter, _const(0)))
                incr = _assign(counter, gast.BinOp(left=_name(counter), op=gast.Add(),
                                                   right=_const(1)))
                anno.set(incr.value, Anno.PRIM, (rules.lookup("+"), "+"))
                new = gast.While(test=s.test, body=self.forward(s.body) + [incr], orelse=[])
                anno.set(new, Anno.COND_LEN, anno.get(s, Anno.COND_LEN, 0))
                out.append(anno.copy(s, gast.copy_location(new, s)))
            elif isinstance(s, gast.Assign) and isinstance(s.value, gast.Call) and \
                    anno.get(s.value, Anno.CALLEE) and (reads(s) & self.active):
                callee = anno.get(s.value, Anno.CALLEE)
                fwd_name, _ = self.split_callee(callee, self._mask(s.value))
                target = s.targets[0].id
                res = self.namer.fresh(callee.split("__")[0] + "_saved")
                self.call_residuals[id(s)] = res
                call = gast.Call(func=_name(fwd_name), args=s.value.args, keywords=[])
                anno.set(call, Anno.CALLEE, fwd_name)
                new = _assign([target, res], call)
                out.append(anno.copy(s, gast.copy_location(new, s)))
            elif is_push(s) and not is_stack_push(s) and push_parts(s)[0] in self.active:
                lst = push_parts(s)[0]
                index = self.namer.fresh(lst + "_len")
                self.push_index[id(s)] = index
                length = _call("len", [_name(lst)])
                out.append(_assign(index, length))
                out.append(s)
            else:
                out.append(s)
            self.fwd_of[id(s)] = out[-1]     # the forward statement standing for s
            self.made_from[id(s)] = out[first:]   # all the forward statements made from s
        return out

    # ---------------------------------------------------------------- backward
    def backward(self, stmts, state):
        out = []
        for s in reversed(stmts):
            if isinstance(s, gast.If):
                out.extend(self.backward_if(s, state))
            elif isinstance(s, gast.For):
                out.extend(self.backward_loop(s, state, s.body, self._reversed_range(s)))
            elif isinstance(s, gast.While):
                # backwards, like the reverse of a for loop: trip k of the forward loop
                # is undone by the trip with the same index (which vmap relies on when
                # examples make different numbers of trips)
                trips = _call("range", [_name(self.trip_counters[id(s)])])
                header = gast.For(target=_name(self.namer.fresh("_"), True),
                                  iter=gast.Call(func=_name("reversed"), args=[trips],
                                                 keywords=[]),
                                  body=[], orelse=[], type_comment=None)
                out.extend(self.backward_loop(s, state, s.body, header))
            else:
                made = self.backward_simple(s, state)
                origin = anno.get(s, Anno.ORIGIN)
                for new in made:
                    anno.set(new, Anno.MIRROR, ("after", s))   # reads primal values as they were after s
                    if origin is not None:
                        anno.set(new, Anno.ORIGIN, origin)
                        anno.set(new, Anno.ADJOINT_OF, True)
                out.extend(made)
            out.append(RestoreMarker(s))
        return out

    def _reversed_range(self, s):
        it = s.iter
        if isinstance(it, gast.Call) and anno.get(it, Anno.PRIM) and \
                anno.get(it, Anno.PRIM)[1] == "rt.reversed_range":
            rev = _call("range", it.args)     # the forward loop ran backwards already
        else:
            rev = gast.Call(func=_name("reversed"), args=[it], keywords=[])
        return gast.For(target=s.target, iter=rev, body=[], orelse=[], type_comment=None)

    def backward_if(self, s, state):
        then_state, else_state = state.copy(), state.copy()
        body = self.backward(s.body, then_state)
        orelse = self.backward(s.orelse, else_state)
        for var in sorted(then_state.live - else_state.live):
            orelse.append(self.zeros(var, ("before", s)))
        for var in sorted(else_state.live - then_state.live):
            body.append(self.zeros(var, ("before", s)))
        state.live = then_state.live | else_state.live
        # an adjoint one branch leaves at zeros: those zeros are structural
        zeros = structural_zeros.COTANGENT
        state.flow = {var: structural_zeros.either(then_state.flow.get(var, zeros)
                                                 if var in then_state.live else zeros,
                                                 else_state.flow.get(var, zeros)
                                                 if var in else_state.live else zeros)
                      for var in state.live}
        state.flow = {var: f for var, f in state.flow.items() if f is not None}
        state.unpicked = {var: m for var, m in then_state.unpicked.items()
                          if var in then_state.live and var in else_state.live
                          and else_state.unpicked.get(var) == m}
        new = gast.If(test=s.test, body=body or [gast.Pass()], orelse=orelse)
        anno.set(new, Anno.MIRROR, ("after", s))
        return [gast.copy_location(new, s)]

    def backward_loop(self, s, state, body_stmts, header):
        entry = set(state.live)
        pre = []
        for _ in range(4):
            trial = Adjoints(entry)     # flows unknown: a loop's trips add up
            body = self.backward(body_stmts, trial)
            missing_at_end = entry - trial.live        # cleared inside: re-zero for next trip
            new_at_end = trial.live - entry            # created inside: must exist on entry
            if not new_at_end:
                break
            for var in sorted(new_at_end):
                pre.append(self.zeros(var, ("after", s)))
            entry |= new_at_end
        for var in sorted(missing_at_end):
            body.append(self.zeros(var, ("before", s)))
        state.live = entry
        state.flow, state.unpicked = {}, {}
        header.body = body
        anno.set(header, Anno.MIRROR, ("after", s))
        self.header_of[id(s)] = header
        anno.set(header, Anno.LOOP_OF, id(s))   # survives the shallow copies optimize makes
        return pre + [gast.copy_location(header, s)]

    def zeros(self, adj_var, mirror):
        primal = next(p for p, a in self.adj_names.items() if a == adj_var)
        if adj_var in self.stack_adjoints:
            made = _assign(adj_var, gast.List(elts=[], ctx=gast.Load()))
        else:
            made = _assign(adj_var, _call("rt.zeros_like", [_name(primal)]))
        anno.set(made, Anno.MIRROR, mirror)
        return made

    # ---------------------------------------------------------------- one statement
    def backward_simple(self, s, state):
        if is_push(s):
            return self.backward_push(s, state)
        if is_pop(s):
            return self.backward_pop(s, state)
        if is_update(s):
            return self.backward_update(s, state)
        if not isinstance(s, gast.Assign):
            changed = changed_by_call(s, self.active)
            if changed:
                raise self.error(s, f"{changed} changes its argument in place, which the "
                                 "derivative cannot follow.", IN_PLACE_CALL_HINT)
            return []
        if isinstance(s.targets[0], gast.Tuple):
            return self.backward_unpack(s, state)
        target = s.targets[0].id
        if target not in self.active:
            return []
        dt = self.adj(target)
        if dt not in state.live:
            return []
        state.live.discard(dt)         # older values of `target` start with a zero adjoint
        value = s.value
        out = []
        if isinstance(value, gast.Name):
            self.accumulate(value.id, _name(dt), state, out, state.flow.get(dt),
                            state.unpicked.get(dt))
            return out
        if isinstance(value, gast.Constant):
            return out
        callee = anno.get(value, Anno.CALLEE)
        if callee:
            if id(s) not in self.call_residuals:
                return out          # no argument is active: nothing flows back
            return self.backward_call(s, value, dt, state)
        found = anno.get(value, Anno.PRIM)
        if found is None:
            raise self.error(s, "internal: statement without a primitive annotation")
        prim, spelling = found
        if prim is not None and prim.container:
            return self.backward_container(value, dt, state)
        if prim is None or prim.rev is None:
            if prim is not None and prim.nondiff:
                return out
            raise rules.no_rule_error(spelling).__class__(
                error_at(s, self.src, str(rules.no_rule_error(spelling))).args[0])
        return self.apply_template(s, prim, spelling, value, target, dt, state)

    def accumulate(self, var, contribution, state, out, flow=None, unpicked=None):
        """out += [`dvar = contribution`] or [`dvar = dvar + contribution`]; `flow`: how the
        contribution's zeros are structural (None: unknown); `unpicked`: where they are."""
        if var not in self.active:
            return
        d = self.adj(var)
        self._set_flow(state, d, flow)
        self._set_unpicked(state, d, unpicked, out)
        if d in state.live:
            if self.kinds.get(var) == ARRAY_RESULT:
                value = gast.BinOp(left=_name(d), op=gast.Add(), right=contribution)
                anno.set(value, Anno.PRIM, (rules.lookup("+"), "+"))
            else:
                value = _call("rt.add", [_name(d), contribution])
            out.append(_assign(d, value))
        else:
            out.append(_assign(d, contribution))
            state.live.add(d)

    def _set_flow(self, state, d, flow):
        """The flow of adjoint `d` after a contribution with `flow` is added to it."""
        if d in state.live:
            flow = structural_zeros.join(state.flow.get(d), flow)
        if flow is None:
            state.flow.pop(d, None)
        else:
            state.flow[d] = flow

    def _set_unpicked(self, state, d, unpicked, out=None):
        """Adjoint `d`'s structural zeros after a contribution with them at `unpicked`: a sum
        keeps those both terms have (their intersection, computed by a statement put in
        `out`)."""
        before = state.unpicked.get(d)
        if d in state.live and before != unpicked:
            if before is None or unpicked is None or out is None:
                unpicked = None
            else:
                both = self.namer.fresh("unpicked")
                out.append(_assign(both, _call("np.logical_and", [_name(before),
                                                                  _name(unpicked)])))
                unpicked = both
        if unpicked is None:
            state.unpicked.pop(d, None)
        else:
            state.unpicked[d] = unpicked

    def _unpicked_of(self, prim, param, dout_unpicked, rule, mapping, local, out):
        """The name of a boolean array in the shape of the adjoint of `param`, true where
        that adjoint is a structural 0 (`dout_unpicked` holds the output adjoint's, in its
        shape), or None; statements computing it go to `out` (dead code removal drops them
        when no guard reads them). `rule`: the template expression of the adjoint."""
        if prim.zero_flow == "rearrange" and dout_unpicked is not None:
            # the rule moves entries only: it moves the marks the same way
            made = self.namer.fresh("unpicked")
            out.append(_assign(made, substitute(rule, mapping, local,
                                                {"dout": _name(dout_unpicked)})))
            return made
        if prim.batch is None or prim.batch.kind != "elementwise":
            return None
        expr = prim.unpicked.get(param)
        if expr is None and dout_unpicked is None:
            return None
        marks = _name(dout_unpicked) if dout_unpicked is not None else None
        if expr is not None:
            picked_marks = substitute(expr, mapping, local, {})
            marks = picked_marks if marks is None else \
                _call("np.logical_or", [marks, picked_marks])
        # In the output's shape, then summed to the argument's as its adjoint is: an entry
        # of the argument is structural where every entry it was broadcast to is
        arg = mapping[param]
        negated = marks.args[0] if isinstance(marks, gast.Call) and \
            isinstance(marks.func, gast.Attribute) and marks.func.attr == "logical_not" \
            else _call("np.logical_not", [marks])
        kept = self.namer.fresh("kept")
        out.append(_assign(kept, _call("rt.broadcast_like", [
            gast.BinOp(left=negated, op=gast.Mult(), right=_const(1.0)), _name("dout")])))
        anno.set(out[-1].value.args[0], Anno.PRIM, (rules.lookup("*"), "*"))
        out[-1] = substitute(out[-1], mapping, local, {})
        made = self.namer.fresh("unpicked")
        out.append(_assign(made, gast.Compare(
            left=_call("rt.unbroadcast", [_name(kept), _copy.deepcopy(arg)]),
            ops=[gast.Eq()], comparators=[_const(0.0)])))
        anno.set(out[-1].value, Anno.PRIM, (rules.lookup("=="), "=="))
        return made

    def apply_template(self, s, prim, spelling, value, target, dt, state):
        template = prim.rev
        actual = bind_call(template, spelling, value)
        if isinstance(actual, str):
            raise self.error(s, f"{spelling}: {actual}",
                             "call it as the numpy documentation shows, with the supported "
                             "arguments.")
        mapping = {"dout": _name(dt), "out": _name(target)}
        if prim.container_out:   # its adjoint is a container whose unset slots are None
            mapping["dout"] = _call("rt.filled", [_name(dt), _name(target)])
        for p in template.params[2:]:
            mapping[p] = actual[p]
        wanted = {}
        for p in template.differentiates:
            arg = actual.get(p)
            if isinstance(arg, gast.Name) and arg.id in self.active:
                wanted["d" + p] = arg.id
        if not wanted:
            return []
        out = []
        dout_flow = state.flow.get(dt)
        dout_unpicked = state.unpicked.get(dt)
        active_params = {p for p in template.params[2:]
                         if isinstance(actual.get(p), gast.Name) and actual[p].id in self.active}
        body = _copy.deepcopy(template.body)
        local = {}
        for stmt in body:
            for n in gast.walk(stmt):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and \
                        n.id not in mapping and n.id not in local and n.id not in wanted:
                    if n.id.startswith("d") and n.id[1:] in template.params:
                        local[n.id] = None            # adjoint of an inactive argument
                    else:
                        local[n.id] = self.namer.fresh(n.id)
        for stmt in body:
            if isinstance(stmt, gast.Pass):
                continue
            tgt = stmt.targets[0].id if isinstance(stmt, gast.Assign) and \
                isinstance(stmt.targets[0], gast.Name) else None
            if tgt is not None and local.get(tgt, "") is None:
                continue
            if tgt in wanted:
                var = wanted[tgt]
                d = self.adj(var)
                self_acc = tgt in names_in(stmt.value)
                flow, guard = structural_zeros.through(prim, tgt[1:], dout_flow, active_params)
                rhs = stmt.value
                if self_acc:
                    pass
                elif guard:
                    rhs = structural_zeros.guarded(rhs, "dout")
                elif dout_unpicked is not None and \
                        structural_zeros.may_be_infinite(prim, tgt[1:], active_params):
                    rhs = structural_zeros.guarded(rhs, "dout_unpicked", "rt.zero_where")
                expr = substitute(rhs, mapping, local,
                                   {tgt: _name(d) if d in state.live else _const(None),
                                    "dout_unpicked": _name(dout_unpicked or "_")})
                if self_acc:
                    self._set_flow(state, d, flow)
                    self._set_unpicked(state, d, None)
                    out.append(_assign(d, expr))
                    state.live.add(d)
                else:
                    unpicked = self._unpicked_of(prim, tgt[1:], dout_unpicked, stmt.value,
                                                 mapping, local, out)
                    self.accumulate(var, expr, state, out, flow, unpicked)
            else:
                new = substitute(stmt, mapping, local, {})
                out.append(new)
        return out

    def backward_unpack(self, s, state):
        """`a, b = t`: the adjoint of t is the tuple (da, db), zeros where one is missing."""
        names = [e.id for e in s.targets[0].elts]
        adjoints = [self.adj(n) if n in self.active else None for n in names]
        if not any(d is not None and d in state.live for d in adjoints):
            return []
        parts = []
        for n, d in zip(names, adjoints):
            parts.append(_name(d) if d is not None and d in state.live else
                         _call("rt.zeros_like", [_name(n)]))
            if d is not None:
                state.live.discard(d)
        out = []
        if isinstance(s.value, gast.Name):
            tup = gast.Tuple(elts=parts, ctx=gast.Load())
            anno.set(tup, Anno.PRIM, (rules.lookup("tuple"), "tuple"))
            self.accumulate(s.value.id, tup, state, out)
        return out

    def backward_container(self, value, dt, state):
        out = []
        if isinstance(value, gast.Dict):
            items = list(zip(value.keys, value.values))
        else:
            items = [(_const(i), e) for i, e in enumerate(value.elts)]
        for key, elt in items:
            if isinstance(elt, gast.Name) and elt.id in self.active:
                item = _call("rt.part", [_name(dt), _copy.deepcopy(key), _name(elt.id)])
                self.accumulate(elt.id, item, state, out)
        return out

    def discard_name(self):
        """A name for results nobody reads (`_`, unless the user's code uses `_`)."""
        if getattr(self, "_discard", None) is None:
            self._discard = self.namer.fresh("_")
        return self._discard

    def _mask(self, call):
        return tuple(isinstance(a, gast.Name) and a.id in self.active for a in call.args)

    def backward_call(self, s, value, dt, state):
        callee = anno.get(value, Anno.CALLEE)
        _, bwd_name = self.split_callee(callee, self._mask(value))
        res = self.call_residuals[id(s)]
        args = value.args
        grads, direct = [], set()
        discard = self.discard_name()
        for a in args:
            if not (isinstance(a, gast.Name) and a.id in self.active):
                grads.append(discard)
                continue
            d = self.adj(a.id)
            if d not in state.live and d not in direct:
                direct.add(d)            # first contribution: the call assigns it directly
                grads.append(d)
            else:
                grads.append(self.namer.fresh(d))
        call = gast.Call(func=_name(bwd_name), args=[_name(res), _name(dt)], keywords=[])
        anno.set(call, Anno.CALLEE, bwd_name)
        out = [_assign(grads, call)]
        state.live |= direct
        for d in direct:
            state.flow.pop(d, None)
            state.unpicked.pop(d, None)
        for a, g in zip(args, grads):
            if g != discard and g not in direct:
                self.accumulate(a.id, _name(g), state, out)
        return out

    def backward_update(self, s, state):
        """`x[idx] = v`: dv gets dx[idx]; the old x gets dx with zeros at idx."""
        x = s.targets[0].value.id
        if x not in self.active:
            return []
        dx = self.adj(x)
        if dx not in state.live:
            return []
        idx = s.targets[0].slice
        out = []
        v = s.value
        later = []
        flow = state.flow.get(dx)
        if isinstance(v, gast.Name) and v.id in self.active:
            item = _call("rt.written_part", [_name(dx), _copy.deepcopy(as_index_value(idx))])
            contribution = _call("rt.unbroadcast", [item, _name(v.id)])
            if v.id == x:
                # `x[:3] = x`: the old x receives the written part after dx is cleared there,
                # so take that part out before clearing
                part = self.namer.fresh("d" + x + "_written")
                out.append(_assign(part, contribution))
                contribution = _name(part)
                target = later
            else:
                target = out
            self.accumulate(v.id, contribution, state, target, flow)
        out.append(_assign(dx, _call("rt.index_clear", [_name(dx),
                                                        _copy.deepcopy(as_index_value(idx))])))
        if flow is not None:         # the overwritten entries' zeros are structural
            state.flow[dx] = (flow[0], True)
        if self.kinds.get(x) == ARRAY_RESULT:     # and where they are
            state.unpicked[dx] = self._written(dx, idx, state.unpicked.get(dx), out)
        else:
            state.unpicked.pop(dx, None)
        return out + later

    def _written(self, dx, idx, before, out):
        """The name of a boolean array, true at the entries `x[idx] = v` overwrote (and at
        those of `before`); statements to `out`, dropped as dead code if unread."""
        everywhere = gast.Compare(left=_call("rt.zeros_like", [_name(dx)]), ops=[gast.Eq()],
                                  comparators=[_const(0)])
        anno.set(everywhere, Anno.PRIM, (rules.lookup("=="), "=="))
        kept = _call("rt.index_clear", [everywhere, _copy.deepcopy(as_index_value(idx))])
        made = self.namer.fresh("written")
        out.append(_assign(made, _call("np.logical_not", [kept])))
        if before is None:
            return made
        both = self.namer.fresh("written")
        out.append(_assign(both, _call("np.logical_or", [_name(before), _name(made)])))
        return both

    def backward_push(self, s, state):
        stack, item = push_parts(s)
        if stack not in self.active:
            return []
        ds = self.adj(stack)
        if ds not in state.live:
            return []
        if id(s) in self.push_index:   # a user list: the item's adjoint is at its position
            if not (isinstance(item, gast.Name) and item.id in self.active):
                return []
            out = []
            at = _call("rt.part", [_name(ds), _name(self.push_index[id(s)]), _copy.deepcopy(item)])
            self.accumulate(item.id, at, state, out)
            return out
        self.stack_adjoints.add(ds)
        # Pops that the code we differentiate never made (dead code removed them) leave
        # values at the bottom of the stack: their adjoints are zero.
        popped = _call("rt.pop_adjoint", [_name(ds), _copy.deepcopy(item)])
        if isinstance(item, gast.Name) and item.id in self.active:
            d = self.adj(item.id)
            if d in state.live:
                tmp = self.namer.fresh(d)
                out = [_assign(tmp, popped)]
                self.accumulate(item.id, _name(tmp), state, out)
                return out
            state.live.add(d)
            state.flow.pop(d, None)
            state.unpicked.pop(d, None)
            return [_assign(d, popped)]
        return [_assign(self.discard_name(), popped)]

    def backward_pop(self, s, state):
        stack = pop_stack(s)
        v = s.targets[0].id
        if stack not in self.active:
            state.live.discard(self.adj_names.get(v))   # v is bound afresh here
            return []
        ds = self.adj(stack)
        self.stack_adjoints.add(ds)
        out = []
        if ds not in state.live:
            out.append(_assign(ds, gast.List(elts=[], ctx=gast.Load())))
            state.live.add(ds)
            state.flow.pop(ds, None)
            state.unpicked.pop(ds, None)
        dv = self.adj(v)
        item = _name(dv) if dv in state.live else _call("rt.zeros_like", [_name(v)])
        out.append(gast.Expr(value=_call("rt.push", [_name(ds), item])))
        state.live.discard(dv)
        return out


class RestoreMarker(gast.AST):
    """Placeholder in backward code: where values saved before `stmt` are popped back."""
    _fields = ()
    is_marker = True

    def __init__(self, stmt):
        super().__init__()
        self.stmt = stmt


def _has_code(stmts):
    return any(not isinstance(s, RestoreMarker) for s in stmts)


def rename_straight_line(body, namer, params=()):
    """`x = f(x)` at the top level of a function, after x was already set, binds a fresh name
    (`x_1`) used from there on, when no later nested block assigns x: values that are never
    overwritten need no saving, and the code reads as a sequence of distinct values."""
    nested_later = [set() for _ in body]
    acc = set()
    for k in range(len(body) - 1, -1, -1):
        nested_later[k] = set(acc)
        s = body[k]
        if isinstance(s, (gast.If, gast.For, gast.While)):
            acc |= assigned_in([s])
    seen, renames, out = set(params), {}, []
    for k, s in enumerate(body):
        s = _rename_reads(s, renames)
        if isinstance(s, gast.Assign) and not is_update(s) and not is_pop(s):
            names = [t.id for t in (s.targets[0].elts if isinstance(s.targets[0], gast.Tuple)
                                    else [s.targets[0]])]
            for n in names:
                if n in seen and n not in nested_later[k]:
                    fresh = namer.fresh(n)
                    renames[n] = fresh
                    _rename_store(s, n, fresh)
                else:
                    renames.pop(n, None)
                seen.add(renames.get(n, n))
                seen.add(n)
        else:
            for n in assigned_in([s]) if isinstance(s, (gast.If, gast.For, gast.While)) \
                    else targets(s):
                renames.pop(n, None)
                seen.add(n)
        out.append(s)
    return out


def _rename_reads(s, renames):
    if not renames:
        return s
    if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript):
        rename_reads(s.value, renames)
        rename_reads(s.targets[0].slice, renames)
        s.targets[0].value.id = renames.get(s.targets[0].value.id, s.targets[0].value.id)
        return s
    return rename_reads(s, renames)


def _rename_store(s, old, new):
    for n in gast.walk(s.targets[0]):
        if isinstance(n, gast.Name) and n.id == old:
            n.id = new

