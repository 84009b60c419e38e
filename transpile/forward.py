"""Forward mode: an IR function -> the same statements, each followed by its tangent.

    h = np.tanh(z)            h = np.tanh(z)
                        ->    h_dot = z_dot * (1.0 - h * h)

Tangents (`x_dot`) exist only where they can be nonzero: a statement whose inputs all have
zero tangents gets none, and each primitive's forward template is a sum of per-argument
terms so constant arguments cost nothing. Where control flow joins, a tangent that only one
path made is first set to zeros. Calls of other user functions call their own forward
function (`g_jvp`), generated on demand for the arguments that carry tangents.
"""
import copy as _copy

import gast

from . import optimize, rules
from .errors import IN_PLACE_CALL_HINT, TransformError, error_at
from .ir import anno
from .ir.analysis import (assigned_in, changed_by_call, definitely_assigned, definitely_defined,
                          is_pop, is_push,
                          is_update, maybe_defined, pop_stack, push_parts, reads, targets, varied,
                          walk_simple)
from .ir.anno import Anno
from .ir.nodes import assign as _assign, call as _call, const as _const, funcdef, name as _name
from .ir.nodes import with_source
from .ir.rewrites import (call_differentiated_variants, freeze_branch_tests, split_aux,
                          split_self_assignments)
from .ir.templates import as_index_value, bind_call, substitute
from .ir import structural_zeros

TANGENT_SUFFIX = "_dot"


class Forward:
    def __init__(self, program, fir, wrt, callee_jvp, given_tangents=False):
        self.program = program
        self.given_tangents = given_tangents   # only the user passes the tangents in
        self.fir = fir
        self.src = fir.source
        self.namer = program.function_namer(fir)
        self.wrt = list(wrt)
        self.callee_jvp = callee_jvp       # (ir_name, mask) -> jvp function name
        self.tangents = {}

    def tan(self, name):
        if name not in self.tangents:
            self.tangents[name] = self.namer.fresh(name + TANGENT_SUFFIX)
        return self.tangents[name]

    def error(self, node, msg, hint=None):
        return error_at(node, self.src, msg, hint, pass_name="forward")

    def run(self):
        """Statements computing the primal and tangent outputs; returns (stmts, out, out_dot)."""
        body = self.fir.node.body
        ret = body[-1]
        stmts = split_self_assignments(body[:-1], self.namer)
        call_differentiated_variants(stmts)
        self.active = varied(stmts, self.wrt)
        self.maybe = maybe_defined(stmts, self.fir.params)
        self.surely = definitely_defined(stmts, self.fir.params)
        state = {self.tan(p) for p in self.wrt}
        # how far each tangent's zeros are structural (reverse/structural_zeros.py): an
        # input the user's tangent leaves at 0 does not move (a Jacobian's basis)
        self.flow = {self.tan(p): structural_zeros.COTANGENT
                     for p in self.wrt} if self.given_tangents else {}
        self.start_as_none = set()
        new = self.block(stmts, state)
        new = [_assign(p, _const(None)) for p in sorted(self.start_as_none)] + new
        out = ret.value
        if isinstance(out, gast.Name) and self.tangents.get(out.id) in state:
            out_dot = _name(self.tangents[out.id])
        else:
            out_dot = _call("rt.tangent_zeros", [_copy.deepcopy(out)])
        return new, out, out_dot

    # ---------------------------------------------------------------- blocks
    def block(self, stmts, state):
        out = []
        for s in stmts:
            if isinstance(s, gast.If):
                out.extend(self.branch(s, state))
            elif isinstance(s, (gast.For, gast.While)):
                out.extend(self.loop(s, state))
            else:
                out.extend(self.simple(s, state))
        return out

    def branch(self, s, state):
        a, b = set(state), set(state)
        entry_flow = dict(self.flow)
        body = self.block(s.body, a)
        flow_a, self.flow = self.flow, dict(entry_flow)
        orelse = self.block(s.orelse, b)
        flow_b = self.flow
        zeros = structural_zeros.COTANGENT     # a path that sets a tangent to zeros
        self.flow = {v: structural_zeros.either(flow_a.get(v) if v in a else zeros,
                                                flow_b.get(v) if v in b else zeros)
                     for v in a | b}
        self.flow = {v: f for v, f in self.flow.items() if f is not None}
        before = self.surely.get(id(s), set())
        primal = {t: p for p, t in self.tangents.items()}
        # a tangent made on one path is zero on the other, where its value exists at all;
        # where it may exist (bound on some earlier paths: `result` of an early return), its
        # primal starts as None, whose tangent is None, so the zeros need no test
        maybe = self.maybe.get(id(s), set())
        for made, other, path in ((a - b, s.orelse, orelse), (b - a, s.body, body)):
            for var in sorted(made):
                # bound at the end of the other path: on every way through it, or before it
                if primal[var] in before | definitely_assigned(other):
                    path.append(self.zeros(var))
                elif primal[var] in maybe | assigned_in(other):
                    self.start_as_none.add(primal[var])
                    path.append(self.zeros(var))
        # a tangent that both paths end (x = constant on each) is zero after the join
        state.clear()
        state |= a | b
        new = gast.If(test=s.test, body=body or [gast.Pass()], orelse=orelse)
        return [anno.copy(s, gast.copy_location(new, s))]

    def loop(self, s, state):
        entry = set(state)
        pre = []
        bound = self.surely.get(id(s), set())
        changed = {self.tangents.get(n) for n in assigned_in([s])}
        entry_flow = {t: f for t, f in self.flow.items() if t not in changed}   # trips add up
        for _ in range(4):     # tangents a trip creates must exist before the first trip
            trial = set(entry)
            self.flow = dict(entry_flow)
            body = self.block(s.body, trial)
            new = trial - entry
            if not new:
                break
            primal = {t: p for p, t in self.tangents.items()}
            # a value first made inside each trip needs no tangent before the loop; one
            # bound to None at the start (see `branch`) is bound before it
            bound = bound | self.start_as_none
            carried = {v for v in new if primal[v] in bound or
                       _read_before_assigned(s.body, primal[v])}
            pre += [self.zeros(v, lazy=True) for v in sorted(carried) if primal[v] in bound]
            entry |= carried
            if not carried:
                break
        # a tangent the next trip reads but this trip ended (`y = constant`) is zero there
        body += [self.zeros(v, lazy=True) for v in sorted(entry - trial)]
        self.flow = {t: f for t, f in self.flow.items()
                     if t not in changed and t in entry_flow}
        state |= entry | trial   # what a trip made exists after the loop (if it ran)
        cls = type(s)
        if cls is gast.For:
            new = gast.For(target=s.target, iter=s.iter, body=body, orelse=[], type_comment=None)
        else:
            new = gast.While(test=s.test, body=body, orelse=[])
        anno.copy(s, new)
        return pre + [gast.copy_location(new, s)]

    def zeros(self, tangent, lazy=False):
        """`x_dot = zeros`; lazy (before a loop): zeros the first trip's products skip."""
        primal = next(p for p, t in self.tangents.items() if t == tangent)
        return _assign(tangent, _call("rt.zero_tangent" if lazy else "rt.tangent_zeros",
                                      [_name(primal)]))

    # ---------------------------------------------------------------- statements
    def live_tangent(self, atom, state):
        if isinstance(atom, gast.Name) and atom.id in self.active:
            t = self.tangents.get(atom.id)
            if t in state:
                return t
        return None

    def tangent_or_zeros(self, atom, state):
        t = self.live_tangent(atom, state)
        return _name(t) if t else _call("rt.tangent_zeros", [_copy.deepcopy(atom)])

    def simple(self, s, state):
        if is_push(s):
            stack, item = push_parts(s)
            if stack not in self.active:
                return [s]
            out = [s]
            if self.tangents.get(stack) not in state:
                if not self.live_tangent(item, state):
                    return out
                # the first item with a tangent: the list's tangent starts as zeros
                out.append(self.zeros(self.tan(stack)))
                state.add(self.tan(stack))
            push = _copy.deepcopy(s)
            call = push.value
            if isinstance(call.func, gast.Attribute) and call.func.attr == "append":
                call.func.value = _name(self.tangents[stack])
                call.args = [self.tangent_or_zeros(item, state)]
            else:
                call.args = [_name(self.tangents[stack]), self.tangent_or_zeros(item, state)]
            return out + [push]
        if is_pop(s):
            stack = pop_stack(s)
            v = s.targets[0].id
            if stack not in self.active or self.tangents.get(stack) not in state:
                state.discard(self.tangents.get(v))
                return [s]
            call = _copy.deepcopy(s.value)
            call.args[0] = _name(self.tangents[stack])
            state.add(self.tan(v))
            return [s, _assign(self.tan(v), call)]
        if is_update(s):
            return self.update(s, state)
        if not isinstance(s, gast.Assign):
            changed = changed_by_call(s, self.active)
            if changed:
                raise self.error(s, f"{changed} changes its argument in place, which the "
                                 "derivative cannot follow.", IN_PLACE_CALL_HINT)
            return [s]
        if isinstance(s.targets[0], gast.Tuple):
            for n in gast.walk(s.targets[0]):
                if isinstance(n, gast.Name):
                    self.flow.pop(self.tangents.get(n.id), None)
            return self.unpack(s, state)
        target = s.targets[0].id
        value = s.value
        out = [s]
        self.made_flow = None
        self.flow.pop(self.tangents.get(target), None)
        if target in self.active and anno.get(value, Anno.CALLEE):
            replaced = self.call(s, value, target, self.tan(target), state)
            if replaced is not None:
                state.add(self.tan(target))
                return replaced
            state.discard(self.tangents.get(target))
            return out
        if target not in self.active:
            state.discard(self.tangents.get(target))
            return out
        dt = self.tan(target)
        made = self.tangent_of(s, value, target, dt, state)
        if made is None:
            state.discard(dt)
            return out
        origin = anno.get(s, Anno.ORIGIN)
        for m in made:
            if origin is not None:
                anno.set(m, Anno.ORIGIN, origin)
        state.add(dt)
        if self.made_flow is not None:
            self.flow[dt] = self.made_flow
        return out + made

    def tangent_of(self, s, value, target, dt, state):
        """Statements assigning `dt`, or None when the tangent is zero."""
        if isinstance(value, gast.Name):
            t = self.live_tangent(value, state)
            self.made_flow = self.flow.get(t)
            return [_assign(dt, _name(t))] if t else None
        if isinstance(value, gast.Constant):
            return None
        callee = anno.get(value, Anno.CALLEE)
        if callee:
            return self.call(s, value, target, dt, state)
        found = anno.get(value, Anno.PRIM)
        if found is None:
            raise self.error(s, "internal: statement without a primitive annotation")
        prim, spelling = found
        if prim is not None and prim.container:
            return self.container(value, dt, state)
        if prim is not None and prim.nondiff:
            return None
        if prim is None or prim.fwd is None:
            raise self.error(s, f"{spelling} has no forward-mode rule.",
                             f"add one under @fwd(\"{spelling}\") in transpile/rules/ (see "
                             "docs/adding_a_primitive.md).")
        return self.apply_template(s, prim, spelling, value, target, dt, state)

    def apply_template(self, s, prim, spelling, value, target, dt, state):
        template = prim.fwd
        actual = bind_call(template, spelling, value, skip=1)
        if isinstance(actual, str):
            raise self.error(s, f"{spelling}: {actual}")
        mapping = {"out": _name(target)}
        live = {}
        for p in template.params[1:]:
            mapping[p] = actual[p]
            t = self.live_tangent(actual[p], state)
            if t:
                live[p] = t
        if not live:
            return None
        for p in template.params[1:]:
            if p not in live:
                mapping["d" + p] = _call("rt.tangent_zeros", [_copy.deepcopy(actual[p])])
            else:
                mapping["d" + p] = _name(live[p])
        local = {}
        for st in template.body:
            for n in gast.walk(st):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and \
                        n.id != "dout" and n.id not in local:
                    local[n.id] = self.namer.fresh(n.id)
        out, have = [], False
        flows = []          # each term's flow
        for st, needs in zip(template.body, template.reads):
            if isinstance(st, gast.Pass):
                continue
            is_term = isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) \
                and st.targets[0].id == "dout"
            if is_term and needs and not (needs & set(live)):
                continue                      # a term whose tangent is zero
            if not is_term:
                out.append(substitute(st, mapping, local, {}))
                continue
            term = st.value
            if len(needs) == 1:
                (p,) = needs
                flow, guard = structural_zeros.through(prim, p, self.flow.get(live[p]),
                                                       set(live))
                if guard:
                    term = structural_zeros.guarded(term, "d" + p)
                flows.append(flow)
            else:
                flows.append(None)
            expr = substitute(term, mapping, local, {})
            if have and spelling.startswith("rt."):
                # a runtime helper's tangent may be a container (rt.select of tuples):
                # summed leaf by leaf, never concatenated
                out.append(_assign(dt, _call("rt.add", [_name(dt), expr])))
            elif have:
                total = gast.BinOp(left=_name(dt), op=gast.Add(), right=expr)
                anno.set(total, Anno.PRIM, (rules.lookup("+"), "+"))
                out.append(_assign(dt, total))
            else:
                out.append(_assign(dt, expr))
                have = True
        if have:
            self.made_flow = flows[0]
            for f in flows[1:]:
                self.made_flow = structural_zeros.join(self.made_flow, f)
        return out if have else None

    def container(self, value, dt, state):
        if isinstance(value, gast.Dict):
            items = list(value.values)
        else:
            items = list(value.elts)
        if items and not any(self.live_tangent(e, state) for e in items):
            return None
        parts = [self.tangent_or_zeros(e, state) for e in items]
        if isinstance(value, gast.Dict):
            new = gast.Dict(keys=[_copy.deepcopy(k) for k in value.keys], values=parts)
            kind = "dict"
        elif isinstance(value, gast.Tuple):
            new, kind = gast.Tuple(elts=parts, ctx=gast.Load()), "tuple"
        else:
            new, kind = gast.List(elts=parts, ctx=gast.Load()), "list"
        anno.set(new, Anno.PRIM, (rules.lookup(kind), kind))
        return [_assign(dt, new)]

    def unpack(self, s, state):
        names = [e.id for e in s.targets[0].elts]
        t = self.live_tangent(s.value, state)
        if not t:
            for n in names:
                state.discard(self.tangents.get(n))
            return [s]
        dts = [self.tan(n) for n in names]
        state.update(dts)
        return [s, _assign(dts, _name(t))]

    def update(self, s, state):
        """`x[i] = v`: `x_dot = rt.index_update(x_dot, i, v_dot)` (tangent kept functional)."""
        x = s.targets[0].value.id
        v = s.value
        dv = self.live_tangent(v, state)
        dx = self.tangents.get(x) if x in self.active else None
        if not dv and (dx is None or dx not in state):
            return [s]
        # each entry is the old one's or the written value's (zeros where constant)
        zeros = structural_zeros.COTANGENT
        flow = structural_zeros.either(self.flow.get(dx, None) if dx in state else zeros,
                                       self.flow.get(dv) if dv else zeros)
        if flow is None:
            self.flow.pop(self.tan(x), None)
        else:
            self.flow[self.tan(x)] = flow
        out = [s] if dx is not None and dx in state else \
            [_assign(self.tan(x), _call("rt.tangent_zeros", [_name(x)])), s]
        idx = as_index_value(s.targets[0].slice)
        upd = _call("rt.index_update", [_name(self.tan(x)), idx,
                                        _name(dv) if dv else _call("rt.tangent_zeros", [v])])
        state.add(self.tan(x))
        return out + [_assign(self.tan(x), upd)]

    def call(self, s, value, target, dt, state):
        callee = anno.get(value, Anno.CALLEE)
        mask = tuple(bool(self.live_tangent(a, state)) for a in value.args)
        if not any(mask):
            return None
        try:
            name = self.callee_jvp(callee, mask)
        except TransformError as e:
            if str(e).startswith("File "):
                raise
            raise self.error(s, str(e).split("\n  hint: ")[0],
                             str(e).split("\n  hint: ")[1] if "\n  hint: " in str(e)
                             else None) from None
        tangents = [_name(self.live_tangent(a, state)) for a, m in zip(value.args, mask) if m]
        call = gast.Call(func=_name(name), args=list(value.args) + tangents, keywords=[])
        anno.set(call, Anno.CALLEE, name)
        # the primal call is replaced: the jvp function returns (out, out_dot)
        new = gast.Assign(targets=[gast.Tuple(elts=[_name(target, True), _name(dt, True)],
                                              ctx=gast.Store())], value=call, type_comment=None)
        return [anno.copy(s, gast.copy_location(new, s))]


def _read_before_assigned(body, name):
    for st in walk_simple(body):
        if isinstance(st, (gast.If, gast.For, gast.While)):
            continue
        if name in reads(st):
            return True
        if name in targets(st):
            return False
    return False


def jvp_function(program, fir, name, wrt, callee_jvp, has_aux=False, given_tangents=False):
    """`f_jvp(params..., tangents of wrt...) -> (out, out_dot)` (`(out, out_dot, aux)`).
    `given_tangents`: only the user passes the tangents (no caller's forward pass), so their
    zeros are structural."""
    fw = Forward(program, fir, wrt, callee_jvp, given_tangents)
    if has_aux:
        fw.aux = split_aux(fir, fw.namer)
    stmts, out, out_dot = fw.run()
    tangent_params = [fw.tan(p) for p in wrt]
    results = [_copy.deepcopy(out), out_dot] + ([_name(fw.aux)] if has_aux else [])
    ret = gast.Return(value=gast.Tuple(elts=results, ctx=gast.Load()))
    body = optimize.dce(optimize.simplify(stmts) + [ret], set())
    body = optimize.propagate_copies(body, list(fir.params) + tangent_params)
    return with_source(funcdef(name, list(fir.params) + tangent_params, body, fir.node), fir)


__all__ = ["jvp_function", "Forward", "walk_simple", "freeze_branch_tests"]
