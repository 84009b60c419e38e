"""Deciding a batching template's `if`s and constant expressions when the code is generated.

A rule's `<param>_batched` flags are constants at each call site: `if a_batched and not
b_batched:` keeps one branch, `axis is None` with a literal axis too. A test that cannot be
decided is refused (`UndecidedTest`), naming the rule and the test."""

import gast

from ..ir.nodes import const
from ..ir.templates import dotted
from .specs import literal_ast


def fold_static(expr):
    """What a batching template decides from constants, decided when generated:
    `a if True else b` -> `a`; `rt.lane_axis(1, x)` -> `2` (a literal per-example axis);
    `rt.broadcast_batch(x, n, True)` -> `x`."""
    class Fold(gast.NodeTransformer):
        def visit_IfExp(self, n):
            self.generic_visit(n)
            test = n.test
            if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not) and \
                    isinstance(test.operand, gast.Constant):
                return n.orelse if test.operand.value else n.body
            if isinstance(test, gast.Constant):
                return n.body if test.value else n.orelse
            return n

        def visit_Call(self, n):
            self.generic_visit(n)
            if dotted(n.func) == "rt.broadcast_batch" and len(n.args) == 3 and \
                    _all_true(n.args[2]):
                return n.args[0]           # already batched everywhere
            if dotted(n.func) == "rt.lane_axis" and len(n.args) == 2 and not n.keywords:
                a = n.args[0]
                # (a negative axis stays a call: it checks the example's rank when it runs,
                # so that an axis beyond it raises instead of reaching the batch axis)
                if isinstance(a, gast.Constant) and isinstance(a.value, int) and \
                        not isinstance(a.value, bool) and a.value >= 0:
                    return const(a.value + 1)
                if isinstance(a, gast.Tuple) and all(
                        isinstance(e, gast.Constant) and type(e.value) is int and
                        e.value >= 0 for e in a.elts):
                    return literal_ast(tuple(e.value + 1 for e in a.elts))
            return n
    return Fold().visit(expr)


def _all_true(node):
    """A literal spec whose every leaf is True (True, (True, True), ...)."""
    if isinstance(node, gast.Constant):
        return node.value is True
    if isinstance(node, (gast.Tuple, gast.List)):
        return bool(node.elts) and all(_all_true(e) for e in node.elts)
    return False


NOT_KNOWN = object()


def static_truth(test):
    """The value of a batching template's `if` test when the code is generated, or
    NOT_KNOWN: constants (`x_batched` is one by then), `not`, `and`/`or`, and `is None`,
    `is not None`, `==`, `!=` between constants (an argument given as a literal)."""
    if isinstance(test, gast.Constant):
        return bool(test.value)
    if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not):
        inner = static_truth(test.operand)
        return inner if inner is NOT_KNOWN else not inner
    if isinstance(test, gast.BoolOp):
        values = [static_truth(v) for v in test.values]
        is_and = isinstance(test.op, gast.And)
        for v in values:            # short-circuit: a decided operand may settle it
            if v is not NOT_KNOWN and v != is_and:
                return v
        return NOT_KNOWN if NOT_KNOWN in values else is_and
    if isinstance(test, gast.Compare) and len(test.ops) == 1 and \
            isinstance(test.left, gast.Constant) and \
            isinstance(test.comparators[0], gast.Constant):
        a, b, op = test.left.value, test.comparators[0].value, test.ops[0]
        compare = {gast.Is: lambda: a is b, gast.IsNot: lambda: a is not b,
                   gast.Eq: lambda: a == b, gast.NotEq: lambda: a != b}.get(type(op))
        if compare is not None:
            return bool(compare())
    return NOT_KNOWN


class UndecidedTest(Exception):
    """A batching template's `if` test that generation time cannot decide."""


def fold_static_ifs(stmts):
    """A batching template's body with its `if`s decided (only the branch that applies)."""
    out = []
    for st in stmts:
        if isinstance(st, gast.If):
            truth = static_truth(st.test)
            if truth is NOT_KNOWN:
                raise UndecidedTest(gast.unparse(st.test).strip())
            out.extend(fold_static_ifs(st.body if truth else st.orelse))
        else:
            out.append(st)
    return out
