"""Common subexpressions merged: the same computation on the same values, done once.

Derivative code recomputes what the forward pass computed (the backward pass of `tanh`
squares its output again), and helpers written out in their caller (inline.py) bring such
twins into one block:

    multiply_5 = tanh_3 * tanh_3                  multiply_5 = tanh_3 * tanh_3
    ...                                  ->       ...
    multiply_6 = tanh_3 * tanh_3                  multiply_6 = multiply_5

A top-level `t = E` reads the value of an earlier `s = E` when E is made of operators,
numpy functions that make a new array, names and literals; every name E reads is assigned
at most once (so it names the same value at both places); nothing between the two can
write into an array (only assignments whose calls are numpy functions without `out=`); and
every statement that reads s or t makes a new array of it (so no write into one can show
through the other, and who holds which object cannot be told apart).
"""
import gast

from ..ir.templates import dotted
from .constants import name_counts
from .fusion import CALLS, harmless
from .helpers import NEW_ARRAY_FUNCTIONS, makes_new_array

_PURE_CALLS = set(CALLS) | NEW_ARRAY_FUNCTIONS


def merge_common_subexpressions(fdef):
    """Rewrite `fdef` in place; True if any statement now reads an earlier value."""
    reads, stores = name_counts(fdef)
    params = {a.id for a in fdef.args.args}
    body = fdef.body
    seen = {}            # gast.dump of an expression -> (position, target name)
    changed = False
    for k, s in enumerate(body):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name) and stores.get(s.targets[0].id) == 1 and
                s.targets[0].id not in params and _pure(s.value, stores, params)):
            continue
        key = gast.dump(s.value)
        if key not in seen:
            seen[key] = (k, s.targets[0].id)
            continue
        start, first = seen[key]
        later = s.targets[0].id
        if all(harmless(t) for t in body[start + 1:k]) and \
                all(makes_new_array(t, name) for t in body for name in (first, later)
                    if t is not body[start] and t is not s):
            s.value = gast.Name(id=first, ctx=gast.Load(), annotation=None, type_comment=None)
            changed = True
    return changed


def _pure(node, stores, params):
    """An expression of operators and new-array numpy functions on names assigned at most
    once, and literals."""
    if isinstance(node, gast.Name):
        return stores.get(node.id, 0) <= 1 and (node.id not in params or not stores.get(node.id))
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.BinOp):
        return _pure(node.left, stores, params) and _pure(node.right, stores, params)
    if isinstance(node, gast.UnaryOp):
        return _pure(node.operand, stores, params)
    if isinstance(node, gast.Compare):
        return all(_pure(o, stores, params) for o in [node.left] + node.comparators)
    if isinstance(node, gast.Call):
        return dotted(node.func) in _PURE_CALLS and not node.keywords and \
            all(_pure(a, stores, params) for a in node.args)
    return False
