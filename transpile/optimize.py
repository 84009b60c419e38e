"""Optimize: dead-code elimination and copy propagation on generated functions.

    a = np.exp(x)        (a unused)        ->   (removed)
    dz = dh; dx = dz * 2                   ->   dx = dh * 2

Statements are removed when nothing they define is read later and they have no effect
(prints stay; a push stays while its stack is read later; a pop stays while its stack or its
result is). Loops are analysed to a fixed point.
"""
import copy

import gast

from .ir import anno
from .ir.analysis import (is_pop, is_push, is_update, names_in, pop_stack, reads, targets,
                          walk_simple)
from .ir.anno import Anno
from .ir.rewrites import rename_reads


def _side_effect(s):
    if isinstance(s, gast.Expr):
        if is_push(s):
            return False
        found = anno.get(s.value, Anno.PRIM)
        if found and found[0] is not None and found[0].side_effect:
            return True
        return True
    if isinstance(s, gast.Assign):
        v = s.value
        found = anno.get(v, Anno.PRIM)
        if found and found[0] is not None and found[0].side_effect:
            return True
        if isinstance(v, gast.Call) and _is_check(v):
            return True
    return False


def _is_check(call):
    """Calls kept for the errors they raise (rt.seed checks that grad's output is scalar)."""
    f = call.func
    return isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
        f.value.id == "rt" and f.attr in ("seed", "lane_seed", "seed_holomorphic",
                                              "lane_seed_holomorphic", "check_float_input",
                                              "check_complex_input")


def _popped(stmts):
    return {pop_stack(t) for t in walk_simple(stmts) if is_pop(t)}


def dce(stmts, live_out):
    """Remove dead statements from `stmts` (in place semantics: returns new list)."""
    new, _ = _dce_block(stmts, set(live_out))
    return new


def _dce_block(stmts, live):
    out = []
    for s in reversed(stmts):
        if isinstance(s, gast.If):
            # a stack both paths pop keeps its pops on both: under vmap both paths run, and
            # each must leave the stack as deep as its forward path made it
            shared = _popped(s.body) & _popped(s.orelse)
            body, lb = _dce_block(s.body, set(live) | shared)
            orelse, lo = _dce_block(s.orelse, set(live) | shared)
            if not _has_code(body) and not _has_code(orelse):
                continue
            s = _shallow(s)
            s.body = body or [gast.Pass()]
            s.orelse = orelse
            live = lb | lo | reads(s)
            out.append(s)
        elif isinstance(s, (gast.For, gast.While)):
            loop_live = set(live) | reads(s)
            for _ in range(10):
                body, body_live = _dce_block(s.body, set(loop_live))
                new_live = loop_live | body_live
                if new_live == loop_live:
                    break
                loop_live = new_live
            body, body_live = _dce_block(s.body, set(loop_live))
            if not _has_code(body):
                continue
            s = _shallow(s)
            s.body = _skip_on_last_trip(s, body, live) if isinstance(s, gast.For) else body
            if isinstance(s, gast.For) and s.target.id not in live:
                body_live.discard(s.target.id)   # bound by the loop header
            live = live | body_live | reads(s)
            out.append(s)
        elif isinstance(s, gast.With):
            # (vmapped code runs in `with rt.errstate(...)`: the block's statements
            # are analysed as the function's, the header is always kept)
            body, body_live = _dce_block(s.body, set(live))
            s = _shallow(s)
            s.body = body or [gast.Pass()]
            live = body_live | {n.id for item in s.items for n in gast.walk(item)
                                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
            out.append(s)
        elif isinstance(s, (gast.Try, gast.AsyncWith)):
            out.append(s)          # kept whole: every name it reads stays live
            live = live | {n.id for n in gast.walk(s) if isinstance(n, gast.Name)}
        elif isinstance(s, gast.Pass):
            continue
        elif getattr(s, "is_marker", False):
            out.append(s)   # a restore point of the reverse pass, filled in later
        else:
            defs = targets(s)
            needed = _side_effect(s) or bool(defs & live) or isinstance(
                s, (gast.Return, gast.Break, gast.Continue, gast.Raise))
            if is_pop(s):
                needed = bool(defs & live)
            if not needed:
                continue
            if not (is_update(s) or is_push(s) or is_pop(s)):
                live -= defs
            live |= reads(s)
            if is_pop(s):
                live.add(pop_stack(s))
            out.append(s)
    out.reverse()
    return out, live


def _first_index(loop):
    """`a` for a loop over `reversed(range(a, b))` or 0 for `reversed(range(n))`, else None."""
    it = loop.iter
    if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and
            it.func.id == "reversed" and len(it.args) == 1):
        return None
    r = it.args[0]
    if not (isinstance(r, gast.Call) and isinstance(r.func, gast.Name) and r.func.id == "range"
            and 1 <= len(r.args) <= 2):
        return None
    return gast.Constant(value=0, kind=None) if len(r.args) == 1 else r.args[0]


def _skip_on_last_trip(loop, body, live_after):
    """In a backward loop, a statement whose result only the next trip reads is skipped on
    the last trip (`if i != 0:`): the adjoint of an input nobody asked for (the data `x` of
    an MLP's first layer) is not computed."""
    first = _first_index(loop)
    if first is None or not (isinstance(first, gast.Name) or isinstance(first, gast.Constant)):
        return body
    out = []
    for k, s in enumerate(body):
        defs = targets(s) if isinstance(s, gast.Assign) else set()
        if (defs and not (defs & live_after) and not _side_effect(s) and not is_pop(s)
                and not is_update(s) and loop.target.id not in defs
                and not any(defs & reads(t) for t in _flat(body[k + 1:]))
                and not any(defs & targets(t) for t in _flat(body[k + 1:]))):
            test = gast.Compare(left=gast.Name(id=loop.target.id, ctx=gast.Load(),
                                               annotation=None, type_comment=None),
                                ops=[gast.NotEq()], comparators=[first])
            s = gast.If(test=test, body=[s], orelse=[])
        out.append(s)
    return out


def _flat(stmts):
    return list(walk_simple(stmts))


def _has_code(stmts):
    return any(not isinstance(s, gast.Pass) for s in stmts)


def _shallow(node):
    return copy.copy(node)   # keeps annotations and attributes; the caller replaces bodies


def propagate_copies(stmts, params=()):
    """`a = b; ... f(a)` -> `... f(b)` when neither name ever changes value afterwards:
    `a` is assigned only there and `b` only once outside any loop (or is a parameter)."""
    sites, in_loop = {}, set()

    def count(block, looped):
        for st in block:
            if isinstance(st, gast.For):
                sites[st.target.id] = sites.get(st.target.id, 0) + 1
                in_loop.add(st.target.id)
            for t in (targets(st) if not isinstance(st, (gast.If, gast.For, gast.While))
                      else ()):
                sites[t] = sites.get(t, 0) + 1
                if looped:
                    in_loop.add(t)
            if isinstance(st, gast.If):
                count(st.body, looped)
                count(st.orelse, looped)
            elif isinstance(st, (gast.For, gast.While)):
                count(st.body, True)
    count(stmts, False)
    for p in params:
        sites[p] = sites.get(p, 0) + 1
    renames, propagated = {}, set()
    for st in walk_simple(stmts):
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and \
                isinstance(st.value, gast.Name):
            a, b = st.targets[0].id, st.value.id
            b = renames.get(b, b)
            if sites.get(a) == 1 and sites.get(b, 0) <= 1 and b not in in_loop and a != b \
                    and a not in params:
                renames[a] = b
                propagated.add(id(st))
    if not renames:
        return stmts

    def fresh(node):   # statements may share expression nodes (a loop's range and its mirror)
        return rename_reads(copy.deepcopy(node), renames)

    def rewrite(block):
        out = []
        for st in block:
            if id(st) in propagated:
                continue
            if isinstance(st, gast.If):
                st = _shallow(st)
                st.test = fresh(st.test)
                st.body, st.orelse = rewrite(st.body) or [gast.Pass()], rewrite(st.orelse)
            elif isinstance(st, (gast.For, gast.While)):
                st = _shallow(st)
                if isinstance(st, gast.For):
                    st.iter = fresh(st.iter)
                else:
                    st.test = fresh(st.test)
                st.body = rewrite(st.body)
            else:
                st = fresh(st)
            out.append(st)
        return out
    return rewrite(stmts)


__all__ = ["dce", "propagate_copies", "names_in"]


class _Simplify(gast.NodeTransformer):
    """Constant folding and identities: `x ** (2 - 1)` -> `x`, `d * 1` -> `d`, `g + 0` -> `g`."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right = node.left, node.right
        lc, rc = _number(left), _number(right)
        if lc is not None and rc is not None:
            try:
                value = _FOLD[type(node.op)](lc, rc)
            except (KeyError, ArithmeticError, ValueError):
                return node
            return gast.Constant(value=value, kind=None)
        op = type(node.op)
        if op is gast.Pow and _is(rc, 1):
            return left
        if op is gast.Mult and _is(rc, 1) or op is gast.Div and _is(rc, 1):
            return left
        if op is gast.Mult and _is(lc, 1):
            return right
        if op in (gast.Add, gast.Sub) and _is(rc, 0):
            return left
        if op is gast.Add and _is(lc, 0):
            return right
        return node

    def visit_Call(self, node):
        """A primitive's own folding of literal arguments (`fold` in transpile/rules/)."""
        self.generic_visit(node)
        found = anno.get(node, Anno.PRIM)
        if found and found[0] is not None and found[0].fold is not None and not node.keywords:
            folded = found[0].fold(*node.args)
            if folded is not None:
                return self.visit(folded)
        return node


def _number(node):
    if isinstance(node, gast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    return None


def _is(value, target):
    # Integer identities only: `x * 1.0` would turn an int into a float.
    return value is not None and type(value) is int and value == target


_FOLD = {gast.Add: lambda a, b: a + b, gast.Sub: lambda a, b: a - b,
         gast.Mult: lambda a, b: a * b, gast.Pow: lambda a, b: a ** b}


def simplify(stmts):
    """Fold constants and drop identity operations in every statement of `stmts`."""
    return [_Simplify().visit(s) for s in stmts]


def accumulate_in_place(stmts):
    """`d = rt.index_add(d, x, i, g)` -> `rt.index_add_into(...)` when `d` has no other
    reader than these accumulations and the final `rt.as_grad(d, x)`: then nobody else can
    see its buffer, and the runtime may add in place."""
    candidates = set()
    for st in walk_simple(stmts):
        if _is_index_add(st) and st.value.args and isinstance(st.value.args[0], gast.Name) \
                and st.value.args[0].id == st.targets[0].id:
            candidates.add(st.targets[0].id)
    if not candidates:
        return stmts
    allowed = set()           # ids of Name nodes read in an allowed place
    for node in (n for st in stmts for n in gast.walk(st)):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                isinstance(node.func.value, gast.Name) and node.func.value.id == "rt" and \
                node.func.attr in ("index_add", "as_grad") and node.args and \
                isinstance(node.args[0], gast.Name):
            allowed.add(id(node.args[0]))
    for node in (n for st in stmts for n in gast.walk(st)):
        if isinstance(node, gast.Name) and node.id in candidates and \
                not isinstance(node.ctx, gast.Store) and id(node) not in allowed:
            candidates.discard(node.id)
    for st in walk_simple(stmts):
        if _is_index_add(st) and st.targets[0].id in candidates:
            st.value.func.attr = "index_add_into"
    return stmts


def _is_index_add(st):
    return (isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and
            isinstance(st.value, gast.Call) and isinstance(st.value.func, gast.Attribute) and
            isinstance(st.value.func.value, gast.Name) and st.value.func.value.id == "rt" and
            st.value.func.attr == "index_add")
