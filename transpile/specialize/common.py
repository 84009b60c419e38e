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
from .abstract import Array
from .constants import name_counts
from .fusion import CALLS, harmless
from .helpers import NEW_ARRAY_FUNCTIONS, makes_new_array

_PURE_CALLS = set(CALLS) | NEW_ARRAY_FUNCTIONS


def merge_common_subexpressions(fdef, inference, min_elements):
    """Rewrite `fdef` in place; True if any statement now reads an earlier value.

    An elementwise expression of `min_elements` or more elements is left twice: fusion
    computes each in its kernel, where a second computation costs less than writing the
    value out and reading it back. Where such twins are the two operands of one `+`
    (`a * b + b * a`, what the product rule gives a square), the sum is the first doubled
    (`m * 2.0`: exactly `m + m` in floating point), which fuses."""
    reads, stores = name_counts(fdef)
    params = {a.id for a in fdef.args.args}
    body = fdef.body
    seen = {}            # canonical text of an expression -> (position, target name)
    defined = {}         # target name -> (position, canonical text)
    changed = False
    for k, s in enumerate(body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name) and _doubled(s, defined, reads, body, k,
                                                                 inference):
            changed = True
            continue
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name) and stores.get(s.targets[0].id) == 1 and
                s.targets[0].id not in params and _pure(s.value, stores, params)):
            continue
        key = _canonical(s.value)
        defined[s.targets[0].id] = (k, key)
        if key not in seen:
            seen[key] = (k, s.targets[0].id)
            continue
        start, first = seen[key]
        later = s.targets[0].id
        kind = inference.of(s.value)
        if _elementwise(s.value) and (not isinstance(kind, Array) or
                                      kind.size >= min_elements):
            continue
        if all(harmless(t) for t in body[start + 1:k]) and \
                all(makes_new_array(t, name) for t in body for name in (first, later)
                    if t is not body[start] and t is not s):
            s.value = gast.Name(id=first, ctx=gast.Load(), annotation=None, type_comment=None)
            changed = True
    return changed


def _doubled(s, defined, reads, body, k, inference):
    """`y = a + b` where a and b are read only here and computed by the same expression
    (and nothing between can write into an array): `y = a * 2.0`. True if rewritten."""
    v = s.value
    if not (isinstance(v, gast.BinOp) and isinstance(v.op, gast.Add) and
            isinstance(v.left, gast.Name) and isinstance(v.right, gast.Name) and
            v.left.id != v.right.id and v.left.id in defined and v.right.id in defined):
        return False
    (i, a_key), (j, b_key) = defined[v.left.id], defined[v.right.id]
    kind = inference.of(v)
    if a_key != b_key or reads.get(v.left.id) != 1 or reads.get(v.right.id) != 1 or \
            not isinstance(kind, Array) or kind.dtype.kind != "f" or \
            inference.of(v.left) != kind or \
            not all(harmless(t) for t in body[min(i, j) + 1:k]):
        return False
    s.value = gast.BinOp(left=v.left, op=gast.Mult(), right=gast.Constant(value=2.0,
                                                                          kind=None))
    return True


def _canonical(node):
    """The text of an expression, the operands of `+` and `*` in a fixed order (both
    commute exactly in floating point, and numpy's promotion is symmetric)."""
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Add, gast.Mult)):
        operands = sorted([_canonical(node.left), _canonical(node.right)])
        return f"{type(node.op).__name__}({operands[0]}, {operands[1]})"
    if isinstance(node, gast.BinOp):
        return f"{type(node.op).__name__}({_canonical(node.left)}, {_canonical(node.right)})"
    if isinstance(node, gast.UnaryOp):
        return f"{type(node.op).__name__}({_canonical(node.operand)})"
    if isinstance(node, gast.Call):
        return f"{dotted(node.func)}({', '.join(_canonical(a) for a in node.args)})"
    if isinstance(node, gast.Constant):
        # by type too: np.float64(0.5) and 0.5 promote float32 arrays differently (and
        # gast.dump compares a numpy scalar with [], which numpy answers with an array)
        return f"Constant({type(node.value).__name__}, {node.value!r})"
    return gast.dump(node)


def _elementwise(node):
    if isinstance(node, gast.BinOp):
        return not isinstance(node.op, gast.MatMult)
    if isinstance(node, gast.Call):
        return dotted(node.func) in CALLS
    return isinstance(node, (gast.UnaryOp, gast.Compare))


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
