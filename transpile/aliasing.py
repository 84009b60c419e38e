"""Aliasing: refuse in-place writes whose NumPy semantics the transformations can't follow.

    y = x[0]          # y is a view of x
    x[0, 1] = 5.0     # NumPy changes y too; derivatives would miss that
    return y * 2.0    -> TransformError at the write, naming y

`x[idx] = v` is accepted when `x` holds an array made inside the function (not a parameter,
a global or a view of one) and no other name that may share its memory is read afterwards.
Names share memory through copies (`y = x`) and through views (`x.T`, `x[1:]`, reshape...),
as marked by `view=True` in the primitive table.
"""
import gast

from . import anno
from .analysis import is_update, names_in, reads, targets, walk_simple
from .anno import Anno
from .errors import error_at


def _origins(stmts, params):
    """name -> the set of 'roots' (parameters or allocation sites) it may refer to."""
    roots = {p: {("param", p)} for p in params}
    changed = True
    while changed:
        changed = False
        for s in walk_simple(stmts):
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Tuple) and \
                    isinstance(s.value, gast.Name):   # a, b = t: parts of what t refers to
                new = set(roots.get(s.value.id, {("global", s.value.id)}))
                for e in s.targets[0].elts:
                    if not new <= roots.get(e.id, set()):
                        roots[e.id] = roots.get(e.id, set()) | new
                        changed = True
                continue
            if not isinstance(s, gast.Assign) or not isinstance(s.targets[0], gast.Name):
                continue
            t = s.targets[0].id
            v = s.value
            new = set()
            found = anno.get(v, Anno.PRIM)
            if isinstance(v, gast.Name):
                new = set(roots.get(v.id, {("global", v.id)}))
            elif found and found[0] is not None and found[0].view:
                base = v.value if isinstance(v, gast.Subscript) else (v.args[0] if v.args else None)
                if isinstance(base, gast.Name):
                    new = set(roots.get(base.id, {("global", base.id)}))
            else:
                new = {("site", id(s))}
            if not new <= roots.get(t, set()):
                roots[t] = roots.get(t, set()) | new
                changed = True
    return roots


def _positions(stmts):
    """Program order of every statement, and the loops enclosing each."""
    order, loops = {}, {}

    def visit(block, enclosing):
        for s in block:
            order[id(s)] = len(order)
            loops[id(s)] = enclosing
            if isinstance(s, gast.If):
                visit(s.body, enclosing)
                visit(s.orelse, enclosing)
            elif isinstance(s, (gast.For, gast.While)):
                visit(s.body, enclosing + [s])
    visit(stmts, [])
    return order, loops


def check(fir):
    """Raise TransformError for an in-place write that could be observed through an alias."""
    body = fir.node.body
    updates = [s for s in walk_simple(body) if is_update(s)]
    if not updates:
        return
    roots = _origins(body, fir.params)
    order, loops = _positions(body)
    all_stmts = list(walk_simple(body))
    for s in updates:
        x = s.targets[0].value.id
        mine = roots.get(x, set())
        outside = [r for r in mine if r[0] in ("param", "global")]
        if outside:
            kind, name = outside[0]
            raise error_at(s, fir.source,
                           f"writing into '{x}' changes an array the caller can see "
                           f"({'parameter' if kind == 'param' else 'global'} '{name}'"
                           f"{'' if name == x else ', through a view or copy'}).",
                           f"make a local copy first: {x} = {x}.copy()", pass_name="aliasing")
        for other, other_roots in roots.items():
            if other == x or not (other_roots & mine):
                continue
            if _read_after(other, s, all_stmts, order, loops):
                raise error_at(s, fir.source,
                               f"writing into '{x}' here also changes '{other}', which shares "
                               f"its memory (a view or copy of it) and is used afterwards.",
                               f"copy one of them, e.g. {other} = {other}.copy(), so each "
                               "name owns its data.", pass_name="aliasing")


def _read_after(name, site, all_stmts, order, loops):
    """Is `name` read after `site` runs: later in program order, or on a later trip of a
    loop around `site` before being assigned afresh in that trip?"""
    after = order[id(site)]
    for s in all_stmts:
        if s is site or name not in reads(s):
            continue
        if order[id(s)] > after:
            if not any(after < order[id(a)] < order[id(s)] and name in targets(a)
                       for a in all_stmts):
                return True   # no fresh assignment in between: it still sees the old data
            continue
        shared = [l for l in loops[id(site)] if any(l is m for m in loops[id(s)])]
        if shared:
            start = order[id(shared[-1])]
            fresh = any(start < order[id(a)] < order[id(s)] and name in targets(a)
                        for a in all_stmts)
            if not fresh:
                return True
    return False
