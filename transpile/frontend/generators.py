"""Generator functions called by transformed code, as functions that return a list.

A helper like autograd's `unpack_layers` (`for ...: yield W, b`) is consumed by `for`,
`list()`, `tuple()` or unpacking, which read its items in order; the same items in a list
give the same results. So before normalizing, `yield v` becomes `items.append(v)` and
every `return` (and the end) returns the list. A generator that can only stop when its
consumer stops reading (`while True: yield ...`) would then never return: it is refused.
"""
import copy

import gast

from ..errors import error_at
from ..ir.nodes import assign, name


def is_generator(fdef):
    """Whether `fdef` itself yields (not a function nested in it)."""
    return any(isinstance(n, (gast.Yield, gast.YieldFrom)) for n in _own_nodes(fdef.body))


def as_list_builder(fdef, src, taken):
    """A copy of generator `fdef` that returns the list of what it yields."""
    fdef = copy.deepcopy(fdef)
    items = "items"
    while items in taken:
        items += "_"
    for n in _own_nodes(fdef.body):
        if isinstance(n, gast.While) and isinstance(n.test, gast.Constant) and n.test.value \
                and not any(isinstance(m, (gast.Break, gast.Return))
                            for m in _own_nodes(n.body)):
            raise error_at(n, src, f"{src.name}: a generator that never stops (its consumer "
                           "decides when) cannot be transformed.", "yield a fixed number of "
                           "items, or build and return a list.", pass_name="normalize")
    body = [assign(items, gast.List(elts=[], ctx=gast.Load()))]
    body += _Rewrite(items, src).visit_block(fdef.body)
    body.append(gast.Return(value=name(items)))
    for s in body[:1] + body[-1:]:
        for n in gast.walk(s):
            gast.copy_location(n, fdef)
    builder = gast.FunctionDef(name=fdef.name, args=fdef.args, body=body,
                               decorator_list=fdef.decorator_list, returns=None,
                               type_comment=None, type_params=[])
    return gast.copy_location(builder, fdef)


class _Rewrite:
    def __init__(self, items, src):
        self.items = items
        self.src = src

    def visit_block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.visit(s))
        return out

    def visit(self, s):
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Yield):
            value = s.value.value if s.value.value is not None else gast.Constant(
                value=None, kind=None)
            return [self._append(value, s)]
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.YieldFrom):
            item = "item_"
            loop = gast.For(target=name(item, True), iter=s.value.value,
                            body=[self._append(name(item), s)], orelse=[], type_comment=None)
            for n in gast.walk(loop):
                if not hasattr(n, "lineno"):
                    gast.copy_location(n, s)
            return [gast.copy_location(loop, s)]
        if isinstance(s, gast.Return):
            return [gast.copy_location(gast.Return(value=name(self.items)), s)]
        if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            return [s]
        for n in gast.walk(s):
            if isinstance(n, (gast.Yield, gast.YieldFrom)) and not isinstance(s, (
                    gast.If, gast.For, gast.While, gast.With, gast.Try)):
                raise error_at(n, self.src, "the value of a yield expression (what a "
                               "consumer sends back) is not supported in transformed code.",
                               "yield as a statement.", pass_name="normalize")
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, self.visit_block(getattr(s, field)))
        return [s]

    def _append(self, value, where):
        call = gast.Expr(value=gast.Call(
            func=gast.Attribute(value=name(self.items), attr="append", ctx=gast.Load()),
            args=[value], keywords=[]))
        for n in gast.walk(call):
            if not hasattr(n, "lineno") or n is call or n is call.value or \
                    n is call.value.func or isinstance(n, gast.Name) and n.id == self.items:
                gast.copy_location(n, where)
        return call


def _own_nodes(stmts):
    """The nodes of `stmts`, not entering nested functions, lambdas or classes."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        yield n
        for child in gast.iter_child_nodes(n):
            if not isinstance(child, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                                      gast.ClassDef)):
                todo.append(child)
