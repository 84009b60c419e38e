"""Batching (vmap) helpers of shape operations, reductions and scipy.special.

Conventions as in runtime/batching.py: a batched value carries its examples on its leading
axis. Helpers whose per-example work depends on the per-example rank take `outer`, the
number of extra leading batch axes (vmap of vmap: the batching rule of the helper itself
passes outer + 1); unless a docstring says otherwise, every array argument of a `lane_*`
helper is batched (carries those 1 + outer leading axes), and axes and shapes they return
are relative to the inner batch axis. The batching rules broadcast unbatched arguments
first (rt.broadcast_batch).

Helpers not named `lane_*` answer questions about axes and shapes (ints, tuples): the same
for every example, they never receive batched arguments.
"""
import numbers

import numpy as np

from .backend import array_module
from .errors import TransformError
from .lanes_adjoint import lane_unbroadcast
from .trees import rebuild_like
from .shape_helpers import diagonal_adj


def _is_seq(x):
    return isinstance(x, (tuple, list))


def _map(fn, x, *rest):
    """fn over the elements of a list/tuple (None stays None), or fn(x) for an array."""
    if _is_seq(x):
        parts = [None if v is None else
                 _map(fn, v, *(r[i] if _is_seq(r) else r for r in rest))
                 for i, v in enumerate(x)]
        return type(x)(parts)
    return fn(x, *rest)


def _asarray(x):
    return array_module(x).asarray(x)


# ---------------------------------------------------------------- axes and shapes

def batched_axis(axis):
    """A per-example axis (int or tuple) as an axis of the batched array; None (numpy's
    "flattened" axis) becomes -1, the axis of an example flattened by `lane_flat`. For
    reductions, whose axis=None means every axis, use rt.lane_axis."""
    if axis is None:
        return -1
    if _is_seq(axis):
        return tuple(batched_axis(a) for a in axis)
    return axis + 1 if axis >= 0 else axis


def lane_axes(axis, rank):
    """A per-example axis argument (None: every axis) of examples of rank `rank`, as axes
    of the batched array (rt.lane_axis asks a batched array for the rank instead)."""
    if axis is None:
        return tuple(range(1, rank + 1))
    return batched_axis(axis)


def lane_perm(axes, ndim):
    """The permutation of a batched array of rank `ndim` that transposes every example by
    `axes` (None: reverse the per-example axes) and keeps the batch axis first."""
    rank = ndim - 1
    if axes is None:
        return (0,) + tuple(range(rank, 0, -1))
    if isinstance(axes, numbers.Integral):
        axes = (axes,)
    return (0,) + tuple(int(a) % rank + 1 for a in axes)


def lane_squeeze_axis(axis, shape):
    """The axes np.squeeze removes from each example, as axes of a batched array of shape
    `shape` (axis None: every per-example axis of length 1, never the batch axis)."""
    if axis is None:
        return tuple(i for i in range(1, len(shape)) if shape[i] == 1)
    return batched_axis(axis)


def lane_hsplit_axis(ndim):
    """The batched axis that np.hstack/np.hsplit join or cut for examples of a batched array
    of rank `ndim` (per example: axis 0 of one-dimensional examples, else axis 1)."""
    return 1 if ndim <= 2 else 2


def lane_reps(reps):
    """np.tile's `reps` for a batched array (the batch axis is not repeated)."""
    if isinstance(reps, numbers.Integral):
        return (1, int(reps))
    return (1,) + tuple(reps)


def lane_pad_width(pad_width, ndim, outer=0):
    """np.pad's `pad_width` for a batched array of rank `ndim` (1 + outer batch axes): no
    padding on the batch axes, the per-example widths (broadcast as numpy does) on the
    others."""
    lead = 1 + outer
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (ndim - lead, 2))
    return ((0, 0),) * lead + tuple((int(lo), int(hi)) for lo, hi in widths)


def pad_mask(shape, pad_width):
    """1.0 on the padding that np.pad(np.zeros(shape), pad_width) adds, 0.0 inside."""
    return np.pad(np.zeros(shape), pad_width, constant_values=1.0)


def _example_shape(x, lead):
    """The shape of one example of batched `x`; a list of batched arrays: its length, then
    the shape of one example of its first element."""
    if _is_seq(x):
        return (len(x),) + (_example_shape(x[0], lead) if len(x) else ())
    return tuple(np.shape(x)[lead:])


def lane_shape_of(x, outer=0):
    """np.shape of each example of batched `x` (the same for all)."""
    return _example_shape(x, 1 + outer)


def lane_size(a, axis=None, outer=0):
    """np.size(a, axis) of each example of batched `a` (the same for all)."""
    shape = _example_shape(a, 1 + outer)
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    return shape[axis]


def lane_example(x, outer=0):
    """The first example of batched `x`, to ask for its type (isinstance, type,
    np.isscalar). A batch loses whether an example was a Python number or a 0-d array: an
    example of a batched float array is reported as an np.float64 (a float), one of an
    integer or boolean array as a Python int or bool (`isinstance(pad, int)` of a number
    the batch came to hold, as a recursive call's result does, stays True)."""
    if _is_seq(x):
        return rebuild_like(x, (lane_example(v, outer) for v in x))
    if isinstance(x, dict):
        return {k: lane_example(v, outer) for k, v in x.items()}
    if np.ndim(x) <= outer:
        return x        # an item the batch does not hold (a number beside batched arrays)
    x = _asarray(x)
    if x.shape[outer] == 0:
        return array_module(x).zeros(x.shape[:outer] + x.shape[outer + 1:], dtype=x.dtype)
    example = x[(slice(None),) * outer + (0,)]
    if example.ndim == 0 and example.dtype.kind in "iub" and array_module(x) is np:
        return example.item()
    return example


def lane_int(x):
    """int() of each example (a number): truncated toward zero, as int64."""
    return np.trunc(_asarray(x)).astype(np.int64)


def lane_bool(x):
    """bool() of each example (a number)."""
    return _asarray(x) != 0


# ---------------------------------------------------------------- reshaping

def lane_flat(a, axis, outer=0):
    """Each example of `a` flattened when `axis` is None (what numpy's axis=None means to
    cumsum, sort, roll, repeat, concatenate, argmax, ...), else `a` itself. On a list or
    tuple, each element."""
    if axis is None:
        lead = 1 + outer

        def flat(x):
            x = _asarray(x)
            return x.reshape(x.shape[:lead] + (int(np.prod(x.shape[lead:], dtype=np.int64)),))
        return _map(flat, a)
    if hasattr(a, "ndim") and isinstance(axis, numbers.Integral):
        # the axis of an example: one beyond it must raise as numpy does for the example,
        # not reach a batch axis (rt.batched_axis, which maps it, does not know the rank)
        rank = a.ndim - 1 - outer
        if not -rank <= axis < rank:
            raise np.exceptions.AxisError(int(axis), rank)
    return a


def reshape_like(g, a, lanes=0, skip=0):
    """`g` reshaped to g.shape[:lanes] + a.shape[skip:] (element by element on lists and
    tuples; None stays None): with the defaults, to the shape of `a`; with lanes=1, each
    example of batched g to the shape of unbatched a."""
    def one(x, like):
        x = _asarray(x)
        return x.reshape(x.shape[:lanes] + tuple(np.shape(like)[skip:]))
    return _map(one, g, a)


def lane_promote(x, rank, outer=0):
    """Batched `x` with length-1 axes inserted after the batch axes until each example has
    at least `rank` axes (how broadcasting sees an example of lower rank)."""
    lead = 1 + outer

    def one(v):
        v = _asarray(v)
        missing = rank - (v.ndim - lead)
        if missing <= 0:
            return v
        return v.reshape(v.shape[:lead] + (1,) * missing + v.shape[lead:])
    return _map(one, x)


def lane_atleast(x, nd, outer=0):
    """np.atleast_1d/2d/3d (nd = 1, 2, 3) of each example (each element, on a list or
    tuple): the length-1 axes go where numpy puts them."""
    make = {1: np.atleast_1d, 2: np.atleast_2d, 3: np.atleast_3d}[nd]
    lead = 1 + outer

    def one(v):
        v = _asarray(v)
        shape = make(np.broadcast_to(np.float64(0), v.shape[lead:])).shape
        return v.reshape(v.shape[:lead] + shape)
    return _map(one, x)


# ---------------------------------------------------------------- diagonals

def lane_diag(v, k=0, outer=0):
    """np.diag(v, k) of each example: the matrix with v on its k-th diagonal (1-D
    examples), or the k-th diagonal (2-D examples)."""
    v = _asarray(v)
    rank = v.ndim - 1 - outer
    if rank == 2:
        return v.diagonal(k, -2, -1)
    if rank != 1:
        raise ValueError("np.diag: each example must be 1-D or 2-D")
    m = v.shape[-1] + abs(k)
    out = array_module(v).zeros(v.shape[:-1] + (m, m), dtype=v.dtype)
    i = np.arange(v.shape[-1])
    rows, cols = (i, i + k) if k >= 0 else (i - k, i)
    out[..., rows, cols] = v
    return out


def lane_diag_adj(g, v, k=0, outer=0):
    """rt.diag_adj(g, v, k) of each example: the k-th diagonal of g (1-D examples of v),
    or g placed on the k-th diagonal of zeros shaped like an example of v (2-D)."""
    if np.ndim(v) - 1 - outer == 1:
        return _asarray(g).diagonal(k, -2, -1)
    return diagonal_adj(g, v, k, -2, -1)


# ---------------------------------------------------------------- builtin sum

def _items(xs, lead):
    """The items builtin sum adds, per example: a list's elements, or the rows of each
    example of an array."""
    if _is_seq(xs):
        return list(xs)
    xs = _asarray(xs)
    if xs.ndim <= lead:
        raise TransformError("sum() of a 0-d array: it is not iterable")
    return [xs[(slice(None),) * lead + (i,)] for i in range(xs.shape[lead])]


def lane_total(iterable, start, outer=0):
    """Python's sum(iterable, start) of each example: `start` plus the items of a list (or
    the rows of each example of an array), broadcasting as each example would."""
    lead = 1 + outer
    items = _items(iterable, lead)
    rank = max(np.ndim(x) - lead for x in items + [start])
    total = lane_promote(start, rank, outer)
    for x in items:
        total = total + lane_promote(x, rank, outer)
    return total


def lane_all(iterable, outer=0):
    """Python's all(iterable) of each example: the items (a list's elements, or the
    numbers of each example's 1-d array) all true."""
    return _lane_truth(iterable, outer, np.logical_and, True)


def lane_any(iterable, outer=0):
    """Python's any(iterable) of each example."""
    return _lane_truth(iterable, outer, np.logical_or, False)


def _lane_truth(iterable, outer, combine, empty):
    lead = 1 + outer
    result = empty
    for x in _items(iterable, lead):
        if np.ndim(x) > lead:
            raise TransformError("all()/any() of items that are arrays: the truth value of "
                                 "an array with more than one element is ambiguous.")
        result = combine(result, np.not_equal(x, 0))
    return result


def lane_sum_adj(g, xs, outer=0):
    """rt.sum_adj(g, xs) of each example: the adjoint of each item of builtin sum(xs) (a
    list/tuple), or, when each example of xs is an array, g broadcast along its first
    axis."""
    lead = 1 + outer
    if _is_seq(xs):
        return type(xs)(None if x is None else
                        lane_unbroadcast(g, np.shape(x)[lead:], outer) for x in xs)
    xs = _asarray(xs)
    if xs.ndim <= lead:
        raise TransformError("sum() of a 0-d array: it is not iterable")
    row = xs.shape[lead + 1:]
    g = _asarray(g)
    item = lane_unbroadcast(g, row, outer) if g.ndim - lead > len(row) else g
    item = array_module(g).expand_dims(lane_promote(item, len(row), outer), lead)
    return array_module(g).broadcast_to(item, xs.shape)


def lane_sum_adj_t(d, g, outer=0):
    """rt.sum_adj_t(d, g) of each example: the items of `d` (or the rows of each example of
    an array d) broadcast to an example of `g` and added."""
    lead = 1 + outer
    g = _asarray(g)
    xp = array_module(g)
    total = xp.zeros(g.shape, dtype=g.dtype if g.dtype.kind in "fc" else np.float64)
    for item in (d if _is_seq(d) else _items(d, lead)):
        if item is not None:
            total = total + xp.broadcast_to(lane_promote(item, g.ndim - lead, outer), g.shape)
    return total


# ---------------------------------------------------------------- padding

def lane_pad(array, pad_width, mode="constant", constant_values=0, outer=0):
    """np.pad(array, pad_width, mode[, constant_values]) of each example; constant_values
    is the same for every example (np.pad's batching rule handles one that is not)."""
    xp = array_module(array)
    widths = lane_pad_width(pad_width, np.ndim(array), outer)
    if mode == "constant":
        values = np.asarray(constant_values)
        if values.ndim == 2:        # a pair per axis: none (nothing is padded) on the batch's
            lead = 1 + outer
            values = np.concatenate([np.zeros((lead, values.shape[1]), values.dtype),
                                     np.broadcast_to(values, (np.ndim(array) - lead,
                                                              values.shape[1]))])
        return xp.pad(array, widths, mode, constant_values=values)
    return xp.pad(array, widths, mode)


# ---------------------------------------------------------------- nondifferentiable

def lane_searchsorted(a, v, side="left", sorter=None, outer=0):
    """np.searchsorted(a, v, side, sorter) of each example (a, v and a batched sorter):
    how many elements of the sorted 1-D example of `a` lie below (side="right": not
    above) each element of the example of `v`, by comparing with all of them."""
    xp = array_module(a, v)
    a, v = xp.asarray(a), xp.asarray(v)
    if sorter is not None:
        a = xp.take_along_axis(a, xp.broadcast_to(xp.asarray(sorter), a.shape), axis=-1)
    lead = 1 + outer
    aa = a.reshape(a.shape[:lead] + (1,) * (v.ndim - lead) + a.shape[-1:])
    hits = (aa < v[..., None]) if side == "left" else (aa <= v[..., None])
    return xp.sum(hits, axis=-1).astype(np.int64)


def lane_array_equal(a1, a2, equal_nan=False, outer=0):
    """np.array_equal(a1, a2, equal_nan) of each example: False where the examples differ
    in shape."""
    xp = array_module(a1, a2)
    a1, a2 = xp.asarray(a1), xp.asarray(a2)
    lead = 1 + outer
    if a1.shape[lead:] != a2.shape[lead:]:
        return xp.zeros(a1.shape[:lead], dtype=bool)
    same = a1 == a2
    if equal_nan:
        same = same | (xp.isnan(a1) & xp.isnan(a2))
    return xp.all(same.reshape(a1.shape[:lead] + (-1,)), axis=-1)


def lane_eye(N, M=None, k=0, dtype=None, lower=False):
    """np.eye(N, M, k) (lower=False) or np.tri(N, M, k) (lower=True) of each example, for a
    diagonal offset `k` that differs between examples: every axis of k is a batch axis
    (so vmap of vmap calls it unchanged)."""
    M = N if M is None else M
    k = np.asarray(k)
    diff = np.arange(M)[None, :] - np.arange(N)[:, None]
    kk = k.reshape(k.shape + (1, 1))
    return ((diff <= kk) if lower else (diff == kk)).astype(float if dtype is None else dtype)
