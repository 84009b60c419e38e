"""The vmap helpers that known shapes decide: their results' kinds, and what they become.

Vmapped code (batching/) holds one example per index of a leading *lane* axis and asks the
arrays at run time wherever per-example ranks matter: `rt.align` pads an operand's shape,
`rt.lane_axis` turns an example's axis into the batched array's, `rt.lanes_matmul` picks
one GEMM or a stack of products. Jacobians (jacfwd, hessian) run this code on the stacked
basis vectors. Once inference knows every shape, each such question has one answer, and
the helper becomes nothing, a constant, a reshape or one numpy call, computed as the
runtime helper computes it (the same numpy functions, so the same numbers and the same
views or copies).

Each helper has one entry in RULES: `kind(args, literals)` gives its result's abstract
value for inference (shapes.py), `decide(nodes, args, literals)` its replacement for
decide_helpers (helpers.py), or None to keep the call. `args` are the arguments' abstract
values, `literals` their literal values (_NOT_LITERAL where not one). Only calls without
keywords are decided: `outer=` (a vmap inside a vmap) keeps the runtime helper.
"""
import gast
import numpy as np

from runtime.collectives import summed_dtype
from ..ir.nodes import const
from .abstract import Array, Identity, Sequence

NOT_LITERAL = object()


def _array(a):
    """`a` if it is an array (not a Python number) of known kind, else None."""
    return a if isinstance(a, Array) and not a.weak else None


def _np(name, *args):
    return gast.Call(func=gast.Attribute(value=gast.Name(id="np", ctx=gast.Load(),
                                                         annotation=None, type_comment=None),
                                         attr=name, ctx=gast.Load()),
                     args=list(args), keywords=[])


def _transposed(node):
    return gast.Attribute(value=node, attr="T", ctx=gast.Load())


def _float_dtype(dtype):
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


# ---------------------------------------------------------------- Jacobians' bases

def basis_of_kind(args, lits):
    """rt.basis_of(x): every basis vector shaped like x, stacked (size,) + shape."""
    x = _array(args[0]) if len(args) == 1 else None
    if x is None:
        return None
    shape = (x.size,) + x.shape
    return Identity(shape, _float_dtype(x.dtype)) if len(x.shape) == 1 else \
        Array(shape, _float_dtype(x.dtype))


def is_number_decide(nodes, args, lits):
    """rt.is_number(x): whether x is one number (jacrev's one vjp), known from its kind."""
    x = args[0] if len(args) == 1 else None
    if isinstance(x, Array):
        return const(x.shape == ())
    return const(False) if isinstance(x, Sequence) else None


def _jacobian_of_arrays(args, lits):
    """The Jacobian's shape (the outer axes', out's, then x's) and dtype where its three
    are arrays, and the outer axes (`outer`: axes of enclosing vmaps leading all three)."""
    outer = lits[3] if len(lits) == 4 else 0
    if len(args) not in (3, 4) or type(outer) is not int or \
            not all(isinstance(a, Array) for a in args[1:3]):
        return None
    stacked, out, x = args[:3]
    dtype = stacked.dtype if isinstance(stacked, Array) else None
    return out.shape + x.shape[outer:], dtype, outer


def jacobian_kind(args, lits):
    """rt.jacobian_rows / rt.jacobian_columns(stacked, out, x[, outer]) of arrays."""
    found = _jacobian_of_arrays(args, lits)
    return Array(*found[:2]) if found is not None and found[1] is not None else None


def jacobian_rows_decide(nodes, args, lits):
    """rt.jacobian_rows(cotangents, out, x) of arrays: one reshape, as the helper does."""
    found = _jacobian_of_arrays(args, lits)
    return _np("reshape", nodes[0], const(found[0])) if found is not None else None


def jacobian_columns_decide(nodes, args, lits):
    """rt.jacobian_columns(columns, out, x) of arrays: the basis axis last, reshaped."""
    found = _jacobian_of_arrays(args, lits)
    if found is None:
        return None
    return _np("reshape", _np("moveaxis", nodes[0], const(found[2]), const(-1)),
               const(found[0]))


def lane_shape_decide(nodes, args, lits):
    """rt.lane_shape(shape, n): the per-example shape with the lane axis in front."""
    shape, n = lits
    if type(n) is not int or n < 0:
        return None
    if type(shape) is int:
        return const((n, shape))
    if isinstance(shape, tuple) and all(type(d) is int for d in shape):
        return const((n,) + shape)
    return None


def axis_size_kind(args, lits):
    return Array((), np.int64, weak=True) if axis_size_of(args, lits) is not None else None


def axis_size_decide(nodes, args, lits):
    """rt.axis_size(args, in_axes, names, given, where): the size every mapped axis has
    (when they disagree the helper's error is kept)."""
    n = axis_size_of(args, lits)
    return const(n) if n is not None else None


def axis_size_of(args, lits):
    if len(args) != 5 or lits[3] is not None or not isinstance(args[0], Sequence) or \
            not isinstance(lits[1], tuple) or len(lits[1]) != len(args[0].items):
        return None
    sizes = set()
    for value, axis in zip(args[0].items, lits[1]):
        if axis is None:
            continue
        a = _array(value)
        if type(axis) is not int or a is None or not -len(a.shape) <= axis < len(a.shape):
            return None
        sizes.add(a.shape[axis])
    return sizes.pop() if len(sizes) == 1 else None


# ---------------------------------------------------------------- shapes and axes

def _aligned_shape(x, rank):
    """runtime.batching._expand: x with 1s after its lane axis up to `rank` example axes."""
    missing = rank - (len(x.shape) - 1)
    return x.shape if missing <= 0 else x.shape[:1] + (1,) * missing + x.shape[1:]


def _align_parts(args, lanes_of_y):
    x, y = args
    if _array(x) is None or not x.shape or not isinstance(y, Array):
        return None
    rank = len(y.shape) - lanes_of_y
    return None if rank < 0 else _aligned_shape(x, rank)


def align_kind(args, lits):
    shape = _align_parts(args, 0)
    return Array(shape, args[0].dtype) if shape is not None else None


def align_decide(nodes, args, lits):
    """rt.align(x, y): batched x with 1s after its lane axis so its example axes line up
    with unbatched y's: x itself, or one reshape."""
    shape = _align_parts(args, 0)
    if shape is None:
        return None
    return nodes[0] if shape == args[0].shape else _np("reshape", nodes[0], const(shape))


def align_adj_kind(args, lits):
    d, x = (_array(a) for a in args)
    if d is None or x is None or d.size != x.size:
        return None
    return Array(x.shape, d.dtype)


def align_adj_decide(nodes, args, lits):
    """rt.align_adj(d, x): d reshaped to x's shape (a selection of a mask, which would sum,
    has no known shape)."""
    if align_adj_kind(args, lits) is None:
        return None
    return nodes[0] if args[0].shape == args[1].shape else \
        _np("reshape", nodes[0], const(args[1].shape))


def loop_sequence_kind(args, lits):
    """rt.loop_sequence(seq, where): a tuple, list or array is walked as it is."""
    return args[0] if isinstance(args[0], (Sequence, Array)) else None


def loop_sequence_decide(nodes, args, lits):
    return nodes[0] if loop_sequence_kind(args, lits) is not None else None


def loop_sequence_adj_kind(args, lits):
    """rt.loop_sequence_adj(g, seq) and _tangent: `g` itself where seq is walked as it is."""
    return args[0] if isinstance(args[1], (Sequence, Array)) else None


def loop_sequence_adj_decide(nodes, args, lits):
    return nodes[0] if isinstance(args[1], (Sequence, Array)) else None


def align_lanes_kind(args, lits):
    if lits[1] is None:
        return args[0]
    shape = _align_parts(args, 1)
    return Array(shape, args[0].dtype) if shape is not None else None


def align_lanes_decide(nodes, args, lits):
    """rt.align_lanes(x, y): as rt.align, against another batched value (None: x)."""
    if lits[1] is None:
        return nodes[0]
    shape = _align_parts(args, 1)
    if shape is None:
        return None
    return nodes[0] if shape == args[0].shape else _np("reshape", nodes[0], const(shape))


def _lane_axis(lits, x):
    axis = lits[0]
    if x is None or not x.shape:
        return None
    rank = len(x.shape) - 1
    if axis is None:
        return tuple(range(1, rank + 1))
    if type(axis) is int and -rank <= axis < rank:
        return axis % rank + 1
    return None       # a tuple, or an axis out of range (the helper raises numpy's error)


def lane_axis_decide(nodes, args, lits):
    """rt.lane_axis(axis, x): an example's axis as the batched array's axis."""
    axis = _lane_axis(lits, _array(args[1]))
    return const(axis) if axis is not None else None


def _shape_literal(value):
    if type(value) is int:
        return (value,)
    if isinstance(value, tuple) and all(type(d) is int and d >= 0 for d in value):
        return value
    return None


def lane_broadcast_kind(args, lits):
    t, shape = _array(args[0]), _shape_literal(lits[1])
    if t is None or shape is None or not t.shape:
        return None
    per = t.shape[1:]
    if len(per) > len(shape):
        return None
    try:
        np.broadcast_shapes(per, shape)
    except ValueError:
        return None
    return Array(t.shape[:1] + shape, t.dtype)


def lane_broadcast_decide(nodes, args, lits):
    """rt.lane_broadcast_to_shape(t, shape): each example of t broadcast to `shape`, the
    same read-only view the helper makes (`np.broadcast_to` pads the example's axes in
    front of them, after the lane axis, as the helper's reshape does)."""
    out = lane_broadcast_kind(args, lits)
    if out is None:
        return None
    t = args[0]
    node = nodes[0]
    padded = t.shape[:1] + (1,) * (len(out.shape) - len(t.shape)) + t.shape[1:]
    if padded != t.shape:
        node = _np("reshape", node, const(padded))
    return _np("broadcast_to", node, const(out.shape))


def lane_expand_kind(args, lits):
    g, shape = _array(args[0]), _shape_literal(lits[1])
    if g is None or shape is None or len(g.shape) != 1:
        return None
    return Array(g.shape + shape, g.dtype)


def lane_expand_decide(nodes, args, lits):
    """rt.lane_expand_to(g, shape): each example's number (a full reduction's adjoint)
    broadcast to an example of `shape`: a view, as the helper makes it."""
    out = lane_expand_kind(args, lits)
    if out is None:
        return None
    column = _np("reshape", nodes[0], const(args[0].shape + (1,) * (len(out.shape) - 1)))
    return _np("broadcast_to", column, const(out.shape))


def lanes_view_kind(args, lits):
    x, n = _array(args[0]), lits[1]
    if x is None or type(n) is not int or n < 0:
        return None
    return Array((n,) + x.shape, x.dtype)


def lanes_view_decide(nodes, args, lits):
    """rt.lanes_view(x, n) and rt.batch_view(x, n): x repeated n times along a new first
    axis, a read-only view."""
    out = lanes_view_kind(args, lits)
    return _np("broadcast_to", nodes[0], const(out.shape)) if out is not None else None


def lanes_array_kind(args, lits):
    return _array(args[0])


def lanes_array_decide(nodes, args, lits):
    """rt.lanes_array(x, spec, n) of an array: np.asarray(x), which is x."""
    x = _array(args[0])
    return nodes[0] if x is not None and x.shape else None


# ---------------------------------------------------------------- products

def _shared_left(args, lits):
    """rt.lanes_matmul(x1, x2, False, True) and its adjoint for x2: one matrix x1 (m, k)
    and a vector x2[i] (k,) per example, which the helper computes as one GEMM.
    (m, k, n) or None."""
    if len(lits) < 4 or lits[2] is not False or lits[3] is not True:
        return None
    x1, x2 = _array(args[0]), _array(args[1])
    if x1 is None or x2 is None or len(x1.shape) != 2 or len(x2.shape) != 2 or \
            x1.shape[1] != x2.shape[1]:
        return None
    return x1.shape[0], x1.shape[1], x2.shape[0]


def _plain(args, lits):
    """runtime.lanes_linalg._plain_matmul: whether the batched operands' own product is
    every example's (the batch is one more stack axis or more rows): (x1, x2) or None."""
    x1, x2 = _array(args[0]), _array(args[1])
    if x1 is None or x2 is None or not all(f is True or f is False for f in lits[2:4]):
        return None
    n1, n2 = len(x1.shape), len(x2.shape)
    if lits[2] and not lits[3]:
        plain = n1 >= 2 and n2 in (1, 2)
    elif lits[3] and not lits[2]:
        plain = n2 >= 3 and n1 in (1, 2)
    else:
        plain = n1 == n2 and n1 >= 3
    return (x1, x2) if plain else None


def _product(x1, x2):
    try:
        shape = np.matmul(np.empty(x1.shape, np.bool_), np.empty(x2.shape, np.bool_)).shape
    except ValueError:
        return None
    return Array(shape, np.result_type(x1.dtype, x2.dtype))


def lanes_matmul_kind(args, lits):
    plain = _plain(args, lits)
    if plain is not None:
        return _product(*plain)
    parts = _shared_left(args, lits)
    if parts is None:
        return None
    m, k, n = parts
    if isinstance(args[1], Identity):
        return Array((n, m), args[0].dtype)       # A's columns: A's own dtype
    return Array((n, m), np.result_type(args[0].dtype, args[1].dtype))


def lanes_matmul_decide(nodes, args, lits):
    """rt.lanes_matmul(A, X, False, True): A @ X[i] for every example, `np.dot(X, A.T)`;
    with X the identity basis, A's columns: a copy of A.T, as the helper makes it (the
    caller may write into its result)."""
    if _plain(args, lits) is not None and lanes_matmul_kind(args, lits) is not None:
        return gast.BinOp(left=nodes[0], op=gast.MatMult(), right=nodes[1])
    if _shared_left(args, lits) is None:
        return None
    if isinstance(args[1], Identity):
        return _np("array", _transposed(nodes[0]))
    return _np("dot", nodes[1], _transposed(nodes[0]))


def _plain_adjoint(args, lits, which):
    """rt.lanes_matmul_adj_x1 / _x2 (g, x1, x2, flags) of a plain product: the plain
    adjoint helper's call and its kind (x's shape), or None."""
    plain = _plain(args[1:], lits[1:])
    g = _array(args[0])
    if plain is None or g is None or _product(*plain) is None or \
            _product(*plain).shape != g.shape:
        return None
    x1, x2 = plain
    x, other = (x1, x2) if which == 1 else (x2, x1)
    return Array(x.shape, np.result_type(g.dtype, other.dtype))


def lanes_matmul_adj_x1_kind(args, lits):
    return _plain_adjoint(args, lits, 1)


def lanes_matmul_adj_x1_decide(nodes, args, lits):
    """rt.lanes_matmul_adj_x1(g, x1, x2, ...) of a plain product: rt.matmul_adj_x1(g, x2,
    x1), as the helper calls it."""
    if _plain_adjoint(args, lits, 1) is None:
        return None
    return _rt("matmul_adj_x1", nodes[0], nodes[2], nodes[1])


def _rt(name, *args):
    return gast.Call(func=gast.Attribute(value=gast.Name(id="rt", ctx=gast.Load(),
                                                         annotation=None, type_comment=None),
                                         attr=name, ctx=gast.Load()),
                     args=list(args), keywords=[])


def lanes_matmul_adj_x2_kind(args, lits):
    plain = _plain_adjoint(args, lits, 2)
    if plain is not None:
        return plain
    parts = _shared_left(args[1:], lits[1:])
    g = _array(args[0])
    if parts is None or g is None or g.shape != (parts[2], parts[0]):
        return None
    return Array((parts[2], parts[1]), np.result_type(g.dtype, args[1].dtype))


def lanes_matmul_adj_x2_decide(nodes, args, lits):
    """rt.lanes_matmul_adj_x2(G, A, X, False, True): A^T G[i] for every example, one
    GEMM `np.dot(G, A)` (the helper's)."""
    if _plain_adjoint(args, lits, 2) is not None:
        return _rt("matmul_adj_x2", nodes[1], nodes[0], nodes[2])
    if lanes_matmul_adj_x2_kind(args, lits) is None:
        return None
    return _np("dot", nodes[0], nodes[1])


def _item_index(args, lits):
    seq, i = args[0], lits[1]
    if isinstance(seq, Sequence) and type(i) is int and -len(seq.items) <= i < len(seq.items):
        return i
    return None


def getitem_kind(args, lits):
    i = _item_index(args, lits)
    return args[0].items[i] if i is not None else None


def getitem_decide(nodes, args, lits):
    """rt.getitem(seq, i) of a tuple or list of known length: seq[i]."""
    if _item_index(args, lits) is None:
        return None
    return gast.Subscript(value=nodes[0], slice=nodes[1], ctx=gast.Load())


def lane_as_grad_kind(args, lits):
    """rt.lane_as_grad(g, x, True, False, n): every example's gradient of one input x,
    with x's shape and dtype."""
    g, x, n = _array(args[0]), _array(args[1]), lits[4]
    if g is None or x is None or lits[2] is not True or lits[3] is not False or \
            type(n) is not int or x.dtype.kind not in "fc" or g.shape != (n,) + x.shape:
        return None
    return Array(g.shape, x.dtype)


def _stays(value, axes):
    """Whether rt.batch_out(value, axes) returns every leaf as it is: each leaf whose
    out_axis is not None is an array whose axis is its lane axis (0 or -ndim)."""
    if axes is None:
        return True
    if type(axes) is int:
        if isinstance(value, Sequence):
            return all(_stays(v, axes) for v in value.items)
        a = _array(value)
        return a is not None and len(a.shape) > 0 and -len(a.shape) <= axes < len(a.shape) \
            and axes % len(a.shape) == 0
    if isinstance(axes, tuple) and isinstance(value, Sequence) and \
            len(axes) == len(value.items):
        return all(_stays(v, a) for v, a in zip(value.items, axes))
    return False


def batch_out_kind(args, lits):
    return args[0] if _stays(args[0], lits[1]) else None


def batch_out_decide(nodes, args, lits):
    """rt.batch_out(value, out_axes) where every out_axis is None or the lane axis:
    value itself."""
    return nodes[0] if _stays(args[0], lits[1]) else None


# ---------------------------------------------------------------- collectives

def psum_copies_kind(args, lits):
    """rt.psum_copies(x, n): x's shape, np.sum's dtype."""
    x = _array(args[0])
    return Array(x.shape, summed_dtype(x.dtype)) if x is not None else None


def psum_copies_decide(nodes, args, lits):
    """`x * n` where x already has np.sum's dtype (floats, complex numbers, int64)."""
    x = _array(args[0])
    if x is None or summed_dtype(x.dtype) != x.dtype:
        return None
    return gast.BinOp(left=nodes[0], op=gast.Mult(), right=nodes[1])


class Rule:
    """outer=True: the helper's `outer=` keyword (a vmap's batching of it) is read as its
    last positional argument."""
    def __init__(self, nargs, kind=None, decide=None, outer=False):
        self.nargs, self.kind, self.decide, self.outer = nargs, kind, decide, outer


def _from_decision(decide):
    """A kind rule for helpers whose decision is a constant: its value's kind."""
    def kind(args, lits):
        node = decide(None, args, lits)
        if isinstance(node, gast.Constant):
            v = node.value
            return Array((), np.int64, weak=True) if type(v) is int else None
        if isinstance(node, gast.Tuple):
            return Sequence([Array((), np.int64, weak=True)] * len(node.elts), tuple)
        return None
    return kind


RULES = {
    "rt.basis_of": Rule((1,), basis_of_kind),
    "rt.is_number": Rule((1,), lambda args, lits: None, is_number_decide),
    "rt.jacobian_rows": Rule((3, 4), jacobian_kind, jacobian_rows_decide, outer=True),
    "rt.jacobian_columns": Rule((3, 4), jacobian_kind, jacobian_columns_decide, outer=True),
    "rt.lane_shape": Rule((2,), _from_decision(lane_shape_decide), lane_shape_decide),
    "rt.axis_size": Rule((5,), axis_size_kind, axis_size_decide),
    "rt.align": Rule((2,), align_kind, align_decide),
    "rt.align_lanes": Rule((2,), align_lanes_kind, align_lanes_decide),
    "rt.align_adj": Rule((2,), align_adj_kind, align_adj_decide),
    "rt.loop_sequence": Rule((2,), loop_sequence_kind, loop_sequence_decide),
    "rt.lane_guard": Rule((2,), lambda args, lits: args[0], lambda nodes, args, lits: nodes[0]),
    "rt.lane_borrow": Rule((2,), lambda args, lits: args[0]),
    "rt.loop_sequence_adj": Rule((2,), loop_sequence_adj_kind, loop_sequence_adj_decide),
    "rt.loop_sequence_tangent": Rule((2,), loop_sequence_adj_kind, loop_sequence_adj_decide),
    "rt.lane_axis": Rule((2,), _from_decision(lane_axis_decide), lane_axis_decide),
    "rt.lane_broadcast_to_shape": Rule((2,), lane_broadcast_kind, lane_broadcast_decide),
    "rt.lane_expand_to": Rule((2,), lane_expand_kind, lane_expand_decide),
    "rt.lanes_view": Rule((2,), lanes_view_kind, lanes_view_decide),
    "rt.batch_view": Rule((2,), lanes_view_kind, lanes_view_decide),
    "rt.lanes_array": Rule((3,), lanes_array_kind, lanes_array_decide),
    "rt.lanes_matmul": Rule((4,), lanes_matmul_kind, lanes_matmul_decide),
    "rt.lanes_matmul_adj_x1": Rule((5,), lanes_matmul_adj_x1_kind,
                                   lanes_matmul_adj_x1_decide),
    "rt.lanes_matmul_adj_x2": Rule((5,), lanes_matmul_adj_x2_kind,
                                   lanes_matmul_adj_x2_decide),
    "rt.getitem": Rule((2,), getitem_kind, getitem_decide),
    "rt.batch_out": Rule((2,), batch_out_kind, batch_out_decide),
    "rt.lane_as_grad": Rule((5,), lane_as_grad_kind),
    "rt.psum_copies": Rule((2,), psum_copies_kind, psum_copies_decide),
}


def literal(node):
    """The value of a literal argument (numbers, strings, None, tuples of them)."""
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, gast.Tuple):
        items = [literal(e) for e in node.elts]
        return NOT_LITERAL if any(i is NOT_LITERAL for i in items) else tuple(items)
    return NOT_LITERAL


def rule_for(call):
    """The Rule for a call of a vmap helper (positional arguments only, and `outer=`
    where the rule takes it), or None."""
    rule = RULES.get(_dotted(call.func))
    if rule is not None and rule.outer and [k.arg for k in call.keywords] == ["outer"] and \
            len(call.args) + 1 in rule.nargs:
        call.args.append(call.keywords.pop().value)   # the same call, `outer` by position
    if rule is None or call.keywords or len(call.args) not in rule.nargs or \
            any(isinstance(a, gast.Starred) for a in call.args):
        return None
    return rule


def _dotted(node):
    if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name):
        return f"{node.value.id}.{node.attr}"
    return None
