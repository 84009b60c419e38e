"""Calls of specialized helpers written out in their caller, and the tuples they pass.

Transformations emit one function per piece (a Jacobian's vmapped jvp calls the forward
and backward functions of the derivative, and returns a tuple of both the value and its
derivative). Once a call is specialized, its helper's statements can stand in the caller:

    tanh_out = tanh_fwd_2(100, x, x_dot)          matmul_tanh_fwd_2 = A @ x
    out, saved = tanh_out                  ->     ...
                                                  out = out_tanh_fwd_2
                                                  saved = tuple__tanh_fwd_2

so that dead values (the first derivative a Hessian does not return), copies and tuple
packing disappear across what were function boundaries, and elementwise chains meet in one
block where fusion can see them.

    inline_helpers   top-level `t = helper(...)` of a straight-line helper -> its statements
    unpack_tuples    `t = a, b` then `x, y = t` (or `t[0]`) -> the items themselves
"""
import copy

import gast

from .constants import name_counts, stored_names

# helpers longer than this stay calls (their code is shared by every call site)
MAX_INLINED_STATEMENTS = 200


def inline_helpers(fdef, helpers, namer):
    """Top-level calls `t = helper(args)` of `helpers` (name -> specialized FunctionDef)
    become the helper's statements (names made fresh); True if any was."""
    changed = False
    body = []
    caller_locals = stored_names(fdef) | {a.id for a in fdef.args.args}
    for s in fdef.body:
        made = _inlined(s, helpers, namer, caller_locals)
        if made is None:
            body.append(s)
            continue
        body.extend(made)
        changed = True
    fdef.body = body
    return changed


_SCOPES = (gast.Return, gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef,
           gast.Global, gast.Nonlocal, gast.Yield, gast.YieldFrom, gast.Await, gast.ListComp,
           gast.SetComp, gast.DictComp, gast.GeneratorExp, gast.NamedExpr, gast.Try)


def _inlined(s, helpers, namer, caller_locals):
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
            isinstance(s.value, gast.Call) and isinstance(s.value.func, gast.Name) and
            s.value.func.id in helpers and not s.value.keywords and
            not any(isinstance(a, gast.Starred) for a in s.value.args)):
        return None
    helper, args = helpers[s.value.func.id], s.value.args
    params = [a.id for a in helper.args.args]
    if helper.args.vararg or helper.args.kwarg or helper.args.kwonlyargs or \
            helper.args.posonlyargs or len(params) != len(args):
        return None
    body = helper.body
    if not body or len(body) > MAX_INLINED_STATEMENTS or \
            not isinstance(body[-1], gast.Return) or body[-1].value is None or \
            any(isinstance(n, _SCOPES) for t in body[:-1] for n in gast.walk(t)) or \
            any(isinstance(n, _SCOPES[1:]) for n in gast.walk(body[-1].value)):
        return None
    local = stored_names(helper) | set(params)
    free = {n.id for n in gast.walk(helper) if isinstance(n, gast.Name)} - local
    if free & caller_locals:
        return None            # a global the caller shadows with a local of that name
    return written_out(s, helper, {v: namer.fresh(v) for v in sorted(local)})


def written_out(s, helper, renames):
    """The statements replacing `t = helper(args)` (statement `s`): each parameter assigned
    its argument, the helper's body, `t` assigned what it returns; the helper's names
    renamed by `renames` (its parameters and every name it assigns)."""
    def renamed(node):
        node = copy.deepcopy(node)
        for n in gast.walk(node):
            if isinstance(n, gast.Name) and n.id in renames:
                n.id = renames[n.id]
        return node
    params = [a.id for a in helper.args.args]
    made = [_assign(gast.Name(id=renames[p], ctx=gast.Store(), annotation=None,
                              type_comment=None), copy.deepcopy(a))
            for p, a in zip(params, s.value.args)]
    made += [renamed(t) for t in helper.body[:-1]]
    made.append(_assign(copy.deepcopy(s.targets[0]), renamed(helper.body[-1].value)))
    for m in made:
        gast.copy_location(m, s)
    return made


def _assign(target, value):
    return gast.Assign(targets=[target], value=value, type_comment=None)


def unpack_tuples(fdef):
    """`t = a, b` (a tuple of names and literals, `t` assigned once, at the top level)
    then `x, y = t` -> `x = a; y = b`, and `t[i]` -> the i-th item, where no item's name
    is assigned again in between. True if anything changed."""
    _, stores = name_counts(fdef)
    body = fdef.body
    displays = {}          # name -> (position, items)
    changed = False
    out = []
    for k, s in enumerate(body):
        if displays and _substituted(s, displays, body, k):
            changed = True
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Tuple) and isinstance(s.value, gast.Name) and \
                s.value.id in displays and \
                len(displays[s.value.id][1]) == len(s.targets[0].elts) and \
                all(isinstance(e, gast.Name) for e in s.targets[0].elts):
            items = displays[s.value.id][1]
            targets = {e.id for e in s.targets[0].elts}
            if _unchanged_since(items, body, displays[s.value.id][0], k) and \
                    not targets & _names(items):      # (`b, a = t` of t = a, b)
                out.extend(gast.copy_location(_assign(t, copy.deepcopy(v)), s)
                           for t, v in zip(s.targets[0].elts, items))
                changed = True
                continue
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Tuple) and \
                stores.get(s.targets[0].id) == 1 and \
                all(isinstance(e, (gast.Name, gast.Constant, gast.Tuple)) and
                    _flat(e) for e in s.value.elts):
            displays[s.targets[0].id] = (k, s.value.elts)
        out.append(s)
    fdef.body = out
    return changed


def _flat(e):
    """A name, a literal, or a tuple of those (nested)."""
    if isinstance(e, gast.Tuple):
        return all(_flat(i) for i in e.elts)
    return isinstance(e, (gast.Name, gast.Constant))


def _names(items):
    return {n.id for e in items for n in gast.walk(e) if isinstance(n, gast.Name)}


def _unchanged_since(items, body, start, end):
    """No name in `items` is assigned by the statements between body[start] and
    body[end]."""
    names = _names(items)
    return not any(names & stored_names(t) for t in body[start + 1:end])


def _substituted(s, displays, body, k):
    """`s` with reads `t[i]` (a literal index) of a known tuple display replaced by the
    item, in place; True if any was."""
    def item(n):
        if not (isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and
                n.value.id in displays and isinstance(n.ctx, gast.Load) and
                isinstance(n.slice, gast.Constant) and type(n.slice.value) is int):
            return None
        start, items = displays[n.value.id]
        if not -len(items) <= n.slice.value < len(items) or \
                not _unchanged_since(items, body, start, k):
            return None
        return copy.deepcopy(items[n.slice.value])
    found = [False]

    class Replace(gast.NodeTransformer):
        def visit_Subscript(self, n):
            new = item(n)
            if new is None:
                return self.generic_visit(n)
            found[0] = True
            return new
    Replace().visit(s)
    return found[0]
