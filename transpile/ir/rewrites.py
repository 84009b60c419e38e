"""Small IR-to-IR rewrites that more than one derivative pass makes before its own work.

Reverse and forward mode both need a rule to see a statement's old and new values apart
(`split_self_assignments`), branch tests that do not change inside the branch
(`freeze_branch_tests`), and `return value, aux` split for `has_aux` (`split_aux`).
"""
import gast

from .. import rules
from . import anno
from .analysis import assigned_in, is_pop, names_in
from .anno import Anno
from .nodes import assign, call, const, name


def rename_reads(node, renames):
    """`node` with every name it reads renamed by `renames` (in place; stores untouched)."""
    class Rename(gast.NodeTransformer):
        def visit_Name(self, n):
            if not isinstance(n.ctx, gast.Store) and n.id in renames:
                n.id = renames[n.id]
            return n
    return Rename().visit(node)


def split_self_assignments(stmts, namer):
    """`x = f(x)` -> `t = f(x); x = t`, so a rule can read the old and the new value."""
    out = []
    for s in stmts:
        if isinstance(s, gast.If):
            s.body = split_self_assignments(s.body, namer)
            s.orelse = split_self_assignments(s.orelse, namer)
        elif isinstance(s, (gast.For, gast.While)):
            s.body = split_self_assignments(s.body, namer)
        elif isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and \
                not isinstance(s.value, (gast.Name, gast.Constant)) and not is_pop(s) and \
                s.targets[0].id in names_in(s.value):
            target = s.targets[0].id
            tmp = namer.fresh(_temp_base(s.value, target))
            first = gast.copy_location(assign(tmp, s.value), s)
            anno.copy(s, first)
            out.append(first)
            out.append(gast.copy_location(assign(target, name(tmp)), s))
            continue
        out.append(s)
    return out


def _temp_base(value, target):
    found = anno.get(value, Anno.PRIM)
    if found and found[0] is not None:
        return found[0].name
    return target + "_new"


def freeze_branch_tests(stmts, namer):
    """`if broke: ... broke = True ...` -> `taken = broke; if taken: ...`: the backward pass
    re-tests the branch after the branch has run, so the test must not change inside it."""
    out = []
    for s in stmts:
        if isinstance(s, gast.If):
            s.body = freeze_branch_tests(s.body, namer)
            s.orelse = freeze_branch_tests(s.orelse, namer)
            if isinstance(s.test, gast.Name) and s.test.id in assigned_in(s.body + s.orelse):
                frozen = namer.fresh(s.test.id + "_taken")
                out.append(gast.copy_location(assign(frozen, name(s.test.id)), s))
                s.test = name(frozen)
        elif isinstance(s, (gast.For, gast.While)):
            s.body = freeze_branch_tests(s.body, namer)
        out.append(s)
    return out


def split_aux(fir, namer):
    """`return (value, aux)` -> `value = ...[0]; aux = ...[1]; return value` in `fir`;
    returns the name that holds aux."""
    ret = fir.node.body[-1]
    value_name = namer.fresh("value")
    aux_name = namer.fresh("aux")
    line = fir.source.line_of(ret if getattr(ret, "lineno", None) else fir.node)
    check = gast.Expr(value=call("rt.check_aux_pair", [
        ret.value, const(f"{fir.source.filename}:{line} ({fir.source.name})")]))
    items = [gast.copy_location(check, ret)]
    for i, target in enumerate((value_name, aux_name)):
        item = gast.Subscript(value=ret.value, slice=const(i), ctx=gast.Load())
        anno.set(item, Anno.PRIM, (rules.lookup("[]"), "[]"))
        items.append(assign(target, item))
    fir.node.body[-1:] = items + [gast.Return(value=name(value_name))]
    return aux_name


def call_differentiated_variants(stmts):
    """Calls whose rule names another helper for differentiated code
    (rules.core.differentiated_calls: rt.lane_guard -> rt.lane_borrow) call that one, in
    place: the passes that differentiate work on their own copy of the IR."""
    for s in stmts:
        for node in gast.walk(s):
            found = anno.get(node, Anno.PRIM) if isinstance(node, gast.Call) else None
            if found and found[0] is not None and found[0].when_differentiated:
                instead = call(found[0].when_differentiated, [])
                node.func = instead.func
                anno.set(node, Anno.PRIM, anno.get(instead, Anno.PRIM))
