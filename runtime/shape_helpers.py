"""Adjoint helpers for reductions and shape operations (called by generated code as `rt.*`).

Each helper is linear in its first argument `g` (the adjoint being moved back); its rule in
`transpile/rules/` is the numpy function it undoes (`cumsum_adj` <-> `np.cumsum`,
`concatenate_adj` <-> `np.concatenate`, `tile_adj` <-> `np.tile`, ...), so generated code
that calls these helpers can be differentiated again.
"""
import numbers

import numpy as np

from .backend import array_module
from .errors import TransformError
from .adjoints import expand, unbroadcast
from .ragged import Ragged, ragged_error


def _axes(axis, ndim):
    """A tuple of non-negative axes (all axes for None)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, numbers.Integral):
        return (int(axis) % max(ndim, 1),)
    return tuple(int(a) % max(ndim, 1) for a in axis)


def _float_dtype(x):
    dt = x if isinstance(x, np.dtype) else getattr(x, "dtype", None)
    return dt if dt is not None and dt.kind in "fc" else np.dtype(np.float64)


# ---------------------------------------------------------------- reductions

def extremum_share(a, out, axis=None, keepdims=False):
    """Share of the adjoint of max/min that each element of `a` gets.

    1 where `a` equals the reduced value (`out`), split evenly between ties, 0 elsewhere.
    Piecewise constant in `a`, so it has no derivative (marked nondiff).
    """
    if isinstance(a, Ragged):           # under vmap, a selection: ties counted per example
        hit = a.like(a.values == expand(out, a, axis, keepdims).values)
        count = expand(np.sum(hit, axis=axis, keepdims=keepdims), a, axis, keepdims)
        return a.like((hit.values / count.values).astype(_float_dtype(a.values)))
    xp = array_module(a)
    shape = np.shape(a)
    axes = _axes(axis, len(shape))
    o = out
    if axis is not None and not keepdims:
        o = xp.expand_dims(out, axes)
    elif axis is None and not keepdims:
        o = xp.reshape(out, (1,) * len(shape))
    hit = xp.asarray(a == o)
    count = xp.sum(hit, axis=axes, keepdims=True)
    share = hit / count
    return share.astype(_float_dtype(a)) if shape else _float_dtype(a).type(share)


def diff_piece_shape(a, axis, value, outer=0):
    """The shape np.diff's `prepend` or `append` is broadcast to: a's, with value's length
    along `axis` (1 for a number). `outer`: leading batch axes of both, not counted."""
    shape = list(np.shape(a)[outer:])
    axis = axis % len(shape)
    shape[axis] = np.shape(value)[outer + axis] if np.ndim(value) - outer == len(shape) else 1
    return tuple(shape)


def outer_shape(a, b, outer=0):
    """a's shape with one axis of length 1 for each of b's: `ufunc.outer(a, b)` is the ufunc
    of `a` reshaped so and `b`. `outer`: leading batch axes of both (vmap), not counted."""
    return np.shape(a)[outer:] + (1,) * (np.ndim(b) - outer)


def cumsum_adj(g, a, axis=None):
    """Adjoint of `np.cumsum(a, axis)`: a reversed cumulative sum, in `a`'s shape."""
    xp = array_module(g)
    if axis is None:
        flat = xp.reshape(g, (-1,))
        r = xp.flip(xp.cumsum(xp.flip(flat)))
        return xp.reshape(r, np.shape(a))
    return xp.flip(xp.cumsum(xp.flip(g, axis), axis), axis)


def prod_others(a, axis=None):
    """Element i: the product of the other elements of its slice of `np.prod(a, axis)`
    (the derivative of the product by a[i]), from products to the left and to the right,
    so exact where elements are zero (out / a is not)."""
    if isinstance(a, Ragged):
        return _prod_others_ragged(a, axis)
    xp = array_module(a)
    a = xp.asarray(a)
    if a.size == 0:                 # (an empty slice's product is 1, and has no elements)
        return xp.zeros_like(a)
    axes = tuple(range(a.ndim)) if axis is None else \
        tuple(x % a.ndim for x in ((axis,) if np.ndim(axis) == 0 else axis))
    rest = tuple(i for i in range(a.ndim) if i not in axes)
    moved = xp.transpose(a, rest + axes)
    flat = xp.reshape(moved, moved.shape[:len(rest)] + (-1,))
    ones = xp.ones(flat.shape[:-1] + (1,), dtype=flat.dtype)
    left = xp.concatenate([ones, xp.cumprod(flat[..., :-1], axis=-1)], axis=-1)
    right = xp.flip(xp.concatenate([ones, xp.cumprod(xp.flip(flat, -1)[..., :-1], axis=-1)],
                                   axis=-1), -1)
    others = xp.reshape(left * right, moved.shape)
    return xp.transpose(others, tuple(np.argsort(rest + axes).tolist()))


def _prod_others_ragged(a, axis):
    """prod_others under vmap of a selection: along the selected elements (batched axis 1)
    one example at a time."""
    if axis is None:
        raise ragged_error("a product over the examples")
    axes = sorted({int(k) % a.ndim for k in ((axis,) if np.ndim(axis) == 0 else axis)})
    element = tuple(k - 1 for k in axes if k >= 2)
    if 1 not in axes:
        return a.like(prod_others(a.values, element))
    xp = array_module(a.values)
    out = xp.empty_like(a.values)
    for i in range(a.counts.shape[0]):
        mine = a.lanes == i
        out[mine] = prod_others(a.values[mine], (0,) + element)
    return a.like(out)


def sum_adj(g, xs):
    """Adjoint of the builtin `sum(xs)` for each item of `xs`: a list/tuple of adjoints
    (each reduced to its item's shape), or, when `xs` is an array, `g` broadcast along axis 0.
    """
    if isinstance(xs, (tuple, list)):  # a None item (a zero adjoint) gets None back
        return type(xs)(None if x is None else unbroadcast(g, x) for x in xs)
    xp = array_module(g)
    if np.ndim(xs) == 0:
        raise TransformError("sum() of a 0-d array: it is not iterable")
    item = unbroadcast(g, xs[0]) if np.ndim(g) > np.ndim(xs) - 1 else g
    return xp.broadcast_to(item, np.shape(xs))


def sum_adj_t(d, g):
    """Transpose of `sum_adj(., xs)`: the items of `d` broadcast to `g`'s shape and added."""
    xp = array_module(g)
    shape = np.shape(g)
    total = xp.zeros(shape, dtype=_float_dtype(g))
    for item in d:
        if item is not None:
            total = total + xp.broadcast_to(item, shape)
    return total


# ---------------------------------------------------------------- joining and splitting

def _pieces(g, sizes, axis):
    """Split `g` along `axis` into consecutive pieces of the given sizes."""
    bounds = np.cumsum(sizes)[:-1].tolist()      # a list: cupy takes no numpy array
    return array_module(g).split(g, bounds, axis=axis)


def _like(items, pieces):
    out = [p for p in pieces]
    return tuple(out) if isinstance(items, tuple) else out


def concatenate_adj(g, arrays, axis=0):
    """Adjoint of `np.concatenate(arrays, axis)`: `g` cut back into one piece per array."""
    xp = array_module(g)
    if axis is None:
        sizes = [int(np.size(a)) for a in arrays]
        pieces = _pieces(xp.reshape(g, (-1,)), sizes, 0)
        return _like(arrays, [xp.reshape(p, np.shape(a)) for p, a in zip(pieces, arrays)])
    sizes = [np.shape(a)[axis] for a in arrays]
    return _like(arrays, _pieces(g, sizes, axis))


def stack_adj(g, arrays, axis=0):
    """Adjoint of `np.stack(arrays, axis)`: the slices of `g` along `axis`."""
    xp = array_module(g)
    axis = axis % np.ndim(g)
    return _like(arrays, [xp.take(g, i, axis=axis) for i in range(np.shape(g)[axis])])


def vstack_adj(g, tup):
    """Adjoint of `np.vstack(tup)` (1-D items count as rows)."""
    xp = array_module(g)
    sizes = [np.shape(np.atleast_2d(t))[0] for t in tup]
    return _like(tup, [xp.reshape(p, np.shape(t)) for p, t in zip(_pieces(g, sizes, 0), tup)])


def hstack_adj(g, tup):
    """Adjoint of `np.hstack(tup)` (joins along axis 0 for 1-D items, else axis 1)."""
    xp = array_module(g)
    items = [np.atleast_1d(t) for t in tup]
    axis = 0 if items[0].ndim == 1 else 1
    sizes = [np.shape(t)[axis] for t in items]
    return _like(tup, [xp.reshape(p, np.shape(t))
                       for p, t in zip(_pieces(g, sizes, axis), tup)])


def tile_adj(g, A, reps):
    """Adjoint of `np.tile(A, reps)`: the tiles of `g` added up, in `A`'s shape."""
    xp = array_module(g)
    reps = (int(reps),) if isinstance(reps, numbers.Integral) else tuple(reps)
    shape = np.shape(A)
    n = max(len(shape), len(reps))
    s = (1,) * (n - len(shape)) + tuple(shape)
    r = (1,) * (n - len(reps)) + reps
    inter = []
    for ri, si in zip(r, s):
        inter += [ri, si]
    t = xp.reshape(g, inter)
    t = xp.sum(t, axis=tuple(range(0, 2 * n, 2)))
    return xp.reshape(t, shape)


def repeat_adj(g, a, repeats, axis=None):
    """Adjoint of `np.repeat(a, repeats, axis)`: the copies of each element added up."""
    xp = array_module(g)
    shape = np.shape(a)
    if axis is None:
        n = int(np.size(a))
        g = xp.reshape(g, (-1,))
        ax = 0
    else:
        ax = axis % len(shape)
        n = shape[ax]
    counts = np.broadcast_to(np.asarray(repeats), (n,))
    owner = np.repeat(np.arange(n), counts)
    moved = xp.moveaxis(g, ax, 0)
    out = xp.zeros((n,) + moved.shape[1:], dtype=_float_dtype(g))
    xp.add.at(out, xp.asarray(owner), moved)
    out = xp.moveaxis(out, 0, ax)
    return xp.reshape(out, shape) if axis is None else out


def unpad(g, array, pad_width, mode="constant"):
    """Adjoint of `np.pad(array, pad_width, mode)`: for the constant mode the inner block of
    `g`; for the modes that copy elements (edge, wrap, reflect, symmetric) every element of
    `g` added back to the element it is a copy of (np.pad of the elements' positions says
    which)."""
    nd = np.ndim(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (nd, 2))
    if mode in ("edge", "wrap", "reflect", "symmetric"):
        xp = array_module(g)
        inner = tuple(int(np.shape(g)[i] - lo - hi) for i, (lo, hi) in enumerate(widths))
        source = np.pad(np.arange(int(np.prod(inner))).reshape(inner),
                        [(int(lo), int(hi)) for lo, hi in widths], mode)
        out = xp.zeros(int(np.prod(inner)), dtype=xp.asarray(g).dtype)
        xp.add.at(out, xp.asarray(source.ravel()), xp.ravel(g))
        return out.reshape(inner)
    if mode != "constant":
        raise TransformError(
            f"np.pad(..., mode={mode!r}) has no derivative rule; the modes constant, edge, "
            f"wrap, reflect and symmetric have.\n  hint: build the padding with "
            f"np.concatenate, or use @tp.custom_vjp.")
    idx = tuple(slice(int(lo), np.shape(g)[i] - int(hi)) for i, (lo, hi) in enumerate(widths))
    return g[idx]


def linear_pad_mode(mode):
    """np.pad's `mode` for its tangent: the same where the padding is linear in the array
    (constant, edge, wrap, reflect, symmetric, mean, linear_ramp to 0); the padding of
    maximum, minimum and median is the tangent at the element they pick, not the maximum
    of the tangent: refused."""
    if mode in ("maximum", "minimum", "median"):
        raise TransformError(
            f"np.pad(..., mode={mode!r}) has no forward-mode rule (the padding is the "
            f"tangent at the element {mode} picks).\n  hint: build the padding with "
            f"np.concatenate of the picked element, or use another mode.")
    return mode


def pad_value_adj(g, array, pad_width):
    """Adjoint of a scalar `constant_values` of np.pad: the sum of `g` over the padding."""
    xp = array_module(g)
    return xp.sum(g) - xp.sum(unpad(g, array, pad_width))


def _diag_index(shape, offset, axis1, axis2):
    """Index arrays of the `offset` diagonal in the plane (axis1, axis2) of `shape`."""
    n1, n2 = shape[axis1], shape[axis2]
    if offset >= 0:
        k = max(0, min(n1, n2 - offset))
        rows, cols = np.arange(k), np.arange(k) + offset
    else:
        k = max(0, min(n1 + offset, n2))
        rows, cols = np.arange(k) - offset, np.arange(k)
    return rows, cols


def diagonal_adj(g, a, offset=0, axis1=0, axis2=1):
    """Adjoint of `np.diagonal(a, offset, axis1, axis2)`: `g` placed on that diagonal."""
    xp = array_module(g)
    shape = np.shape(a)
    nd = len(shape)
    axis1, axis2 = axis1 % nd, axis2 % nd
    rest = [i for i in range(nd) if i not in (axis1, axis2)]
    perm = rest + [axis1, axis2]
    moved = tuple(shape[i] for i in perm)
    out = xp.zeros(moved, dtype=_float_dtype(g))
    rows, cols = _diag_index(shape, offset, axis1, axis2)
    out[..., rows, cols] = g
    return xp.transpose(out, tuple(np.argsort(perm).tolist()))


def trace_adj(g, a, offset=0, axis1=0, axis2=1):
    """Adjoint of `np.trace(a, offset, axis1, axis2)`: `g` on every element of the diagonal."""
    shape = np.shape(a)
    nd = len(shape)
    rows, _ = _diag_index(shape, offset, axis1 % nd, axis2 % nd)
    xp = array_module(g)
    full = xp.broadcast_to(xp.expand_dims(xp.asarray(g), -1), np.shape(g) + (len(rows),))
    return diagonal_adj(full, a, offset, axis1, axis2)


def diag_adj(g, v, k=0):
    """Adjoint of `np.diag(v, k)`: read the diagonal back (1-D `v`) or place `g` on it (2-D)."""
    if np.ndim(v) == 1:
        return array_module(g).diagonal(g, k)
    return diagonal_adj(g, v, k, 0, 1)


def diff_adj(g, a, n=1, axis=-1):
    """Adjoint of `np.diff(a, n, axis)`."""
    xp = array_module(g)
    for _ in range(n):
        widths = [(0, 0)] * np.ndim(g)
        widths[axis] = (1, 1)
        g = -xp.diff(xp.pad(g, widths), axis=axis)
    return g


# ---------------------------------------------------------------- sorting

def _sort_order(a, axis):
    if axis is None:
        return np.argsort(np.reshape(a, (-1,)), kind="stable"), None
    return np.argsort(a, axis=axis, kind="stable"), axis


def unsort(g, a, axis=-1):
    """Adjoint of `np.sort(a, axis)`: `g` moved back to where each element came from."""
    xp = array_module(g)
    order, ax = _sort_order(a, axis)
    if ax is None:
        out = xp.zeros(np.size(a), dtype=_float_dtype(g))
        out[order] = g
        return xp.reshape(out, np.shape(a))
    out = xp.zeros(np.shape(a), dtype=_float_dtype(g))
    xp.put_along_axis(out, order, g, axis=ax)
    return out


def sort_like(g, a, axis=-1):
    """`g` permuted the way `np.sort(a, axis)` permutes `a` (transpose of `unsort`)."""
    xp = array_module(g)
    order, ax = _sort_order(a, axis)
    if ax is None:
        return xp.reshape(g, (-1,))[order]
    return xp.take_along_axis(g, order, axis=ax)


# ---------------------------------------------------------------- elementwise masks

def below(a, lo):
    """d np.clip(a, lo, hi) / d lo: 1.0 where `a < lo` (clip replaced `a` by the lower bound
    there), 0.5 where they tie (see `inside`), else 0."""
    if lo is None:
        return 0.0
    share = np.where(a < lo, 1.0, np.where(a == lo, 0.5, 0.0))
    return share.astype(_float_dtype(a)) if np.ndim(share) else float(share)


def above(a, hi):
    """d np.clip(a, lo, hi) / d hi: 1.0 where `a > hi`, 0.5 where they tie, else 0."""
    if hi is None:
        return 0.0
    share = np.where(a > hi, 1.0, np.where(a == hi, 0.5, 0.0))
    return share.astype(_float_dtype(a)) if np.ndim(share) else float(share)


# ---------------------------------------------------------------- making arrays from values

def linspace_t(samples, num, endpoint=True, axis=0, dtype=None):
    """Where each sample of `np.linspace(start, stop, num, endpoint, axis=axis)` lies between
    its ends: t = 0, ..., 1 (short of 1 without endpoint), shaped to broadcast against the
    samples along `axis`. The samples are start * (1 - t) + stop * t: the derivative rules
    weigh the adjoint by 1 - t and t."""
    _check_inexact(dtype, "np.linspace/np.logspace")
    if isinstance(samples, tuple):
        raise TransformError(
            "np.linspace(..., retstep=True) has no reverse-mode rule (forward mode has one)."
            "\n  hint: compute the step yourself, (stop - start) / (num - 1).")
    ndim = np.ndim(samples)
    t = array_module(samples).linspace(0.0, 1.0, num, endpoint=endpoint,
                                       dtype=_float_dtype(samples))
    return t.reshape((-1,) + (1,) * (ndim - 1 - int(axis) % max(ndim, 1)))


def logspace_log_base(start, stop, base=10.0, axis=0):
    """log(base), shaped as np.logspace(start, stop, base=base, axis=axis) applies `base` to
    the samples (broadcast with start and stop, then a new axis at `axis`)."""
    if np.ndim(base) == 0:
        return np.log(base)
    ndim = np.broadcast(start, stop, base).ndim
    return np.log(np.expand_dims(np.array(base, ndmin=ndim), axis))


def arange_weight(samples, stop=None, which=0):
    """d samples / d start (which=0) or d samples / d step (which=1) of
    `samples = np.arange(start, stop, step)`: 1 and i at sample i. With one argument
    (stop is None) numpy's start is 0, not an argument. Integer samples have no derivative."""
    n = np.size(samples)
    if getattr(samples, "dtype", np.dtype(float)).kind not in "fc" or which == 0 and stop is None:
        return np.zeros(n)
    return np.ones(n) if which == 0 else np.arange(n, dtype=np.float64)


def inexact_dtype(dtype, what):
    """`dtype` (of an array made from differentiated values), checked to be None or a
    floating/complex type: rounding to integers would make the derivative meaningless."""
    _check_inexact(dtype, what)
    return dtype


def _check_inexact(dtype, what):
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise TransformError(
            f"{what} with dtype={np.dtype(dtype)} rounds its values to integers, which has no "
            f"derivative worth taking.\n  hint: make the values as floats and round the "
            f"result outside the differentiated code, or stop the gradient explicitly.")


# ---------------------------------------------------------------- np.r_ and np.c_

_CONCATENATORS = {"r_": np.r_, "c_": np.c_}


def r_(items):
    """np.r_[items...]: generated code calls it with the subscript's items as one tuple."""
    return np.r_[tuple(items)]


def c_(items):
    """np.c_[items...], as `r_`."""
    return np.c_[tuple(items)]


def _concat_positions(kind, items, lead=0):
    """np.r_/np.c_ of `items` (of one example: array items carry `lead` batch axes first)
    with every number and array replaced by the flat positions of its elements among all of
    theirs (-1 for the values a slice makes), and each item's (offset, shape), None for
    slices and directive strings. Concatenation only moves values, so this map is the whole
    derivative; `fixed` is the result with zeros for the items (the values slices make)."""
    obj = _CONCATENATORS[kind]
    probe, zeros, parts, offset = [], [], [], 0
    for item in items:
        if isinstance(item, str):
            if item in ("r", "c"):
                raise TransformError(f"np.{kind}['{item}', ...] makes a np.matrix, which has no "
                                     f"derivative rule.\n  hint: build an array instead "
                                     f"(np.concatenate, np.stack).")
            probe.append(item)
            zeros.append(item)
            parts.append(None)
        elif isinstance(item, slice):
            made = np.r_[item]
            probe.append(np.full(len(made), -1.0))
            zeros.append(made)
            parts.append(None)
        else:
            shape = np.shape(item)[lead:] if lead else np.shape(item)
            size = int(np.prod(shape, dtype=np.int64))
            ids = np.arange(offset, offset + size, dtype=np.float64).reshape(shape)
            probe.append(ids if shape else float(offset))
            zeros.append(np.zeros(shape, dtype=np.result_type(item)) if shape else
                         np.zeros((), dtype=np.result_type(item))[()])
            parts.append((offset, shape))
            offset += size
    fixed = np.asarray(obj[tuple(zeros)])
    return np.asarray(obj[tuple(probe)]), parts, offset, fixed


def index_concat_lanes(kind, items, lead=0):
    """np.r_[items] (kind 'r_') or np.c_[items] ('c_') of each example: every number and
    array item carries `lead` batch axes (slices and strings are the same for all)."""
    ids, parts, total, fixed = _concat_positions(kind, items, lead)
    leaves = [np.asarray(item) for item, part in zip(items, parts) if part is not None]
    lanes = np.broadcast_shapes(*(x.shape[:lead] for x in leaves)) if leaves else ()
    dtype = np.result_type(fixed, *leaves)
    flat = np.concatenate([np.broadcast_to(x, lanes + x.shape[lead:]).reshape(lanes + (-1,))
                           for x in leaves] + [np.zeros(lanes + (0,), dtype)], axis=-1)
    out = np.broadcast_to(fixed.astype(dtype), lanes + ids.shape).copy()
    made = ids >= 0
    out[..., made] = flat[..., ids[made].astype(np.intp)]
    return out


def index_concat_adj(g, kind, items, lead=0):
    """Adjoint of `np.r_[items]` (kind 'r_') or `np.c_[items]` ('c_'): the part of `g` each
    item became, shaped like the item (None for slices and strings)."""
    ids, parts, total, _ = _concat_positions(kind, items, lead)
    g = np.asarray(g)
    lanes = g.shape[:lead]
    flat = np.zeros(lanes + (total,), dtype=_float_dtype(g))
    made = ids >= 0
    flat[..., ids[made].astype(np.intp)] = g[..., made]
    return tuple(None if part is None else
                 flat[..., part[0]:part[0] + int(np.prod(part[1], dtype=np.int64))]
                 .reshape(lanes + part[1]) for part in parts)


def index_concat_tangent(kind, items, tangents, lead=0):
    """Tangent of `np.r_[items]` / `np.c_[items]` given the items' tangents (None or zeros
    for the ones that have none): the transpose of index_concat_adj."""
    ids, parts, total, _ = _concat_positions(kind, items, lead)
    leaves = [np.asarray(t) for t, part in zip(tangents, parts)
              if part is not None and t is not None]
    lanes = np.broadcast_shapes(*(x.shape[:lead] for x in leaves)) if leaves and lead else ()
    flat = np.zeros(lanes + (total,),
                    dtype=_float_dtype(np.result_type(*leaves)) if leaves else np.float64)
    for t, part in zip(tangents, parts):
        if part is not None and t is not None:
            t = np.asarray(t)
            flat[..., part[0]:part[0] + int(np.prod(part[1], dtype=np.int64))] = \
                np.broadcast_to(t, lanes + t.shape[lead:]).reshape(lanes + (-1,))
    out = np.zeros(lanes + ids.shape, dtype=flat.dtype)
    made = ids >= 0
    out[..., made] = flat[..., ids[made].astype(np.intp)]
    return out


def broadcast_items(items, n, have=False, outer=0):
    """rt.broadcast_batch for the items of np.r_/np.c_: every number and array not batched
    (per `have`) gets the batch axis at `outer`; slices and strings stay as they are."""
    parts = have if isinstance(have, (tuple, list)) else (have,) * len(items)
    out = []
    for item, h in zip(items, parts):
        if h is True or item is None or isinstance(item, (str, slice)):
            out.append(item)
            continue
        x = np.asarray(item)
        x = np.broadcast_to(np.expand_dims(x, outer), x.shape[:outer] + (n,) + x.shape[outer:])
        out.append(x.copy())
    return type(items)(out)


# ---------------------------------------------------------------- np.unique

def _unique_groups(ar, return_index, return_inverse, return_counts, axis):
    if return_index or return_inverse or return_counts or axis is not None:
        raise TransformError("np.unique with return_index, return_inverse, return_counts or "
                             "axis has no derivative rule.\n  hint: call it on values that "
                             "are not differentiated (e.g. to find the labels), or call "
                             "np.unique(x) alone for the distinct values.")
    _, inverse, counts = np.unique(ar, return_inverse=True, return_counts=True)
    return np.reshape(inverse, -1), counts


def unique_adj(g, ar, return_index=False, return_inverse=False, return_counts=False,
               axis=None):
    """Adjoint of `np.unique(ar)`: element i of `ar` gets its value's adjoint divided by how
    often the value occurs (ties share, as in np.max). Transpose of `unique_mean`."""
    inverse, counts = _unique_groups(ar, return_index, return_inverse, return_counts, axis)
    g = np.asarray(g)
    return np.reshape(g[inverse] / counts[inverse], np.shape(ar))


def unique_mean(t, ar, return_index=False, return_inverse=False, return_counts=False,
                axis=None):
    """Tangent of `np.unique(ar)` given the tangent `t` of `ar`: the mean of `t` over the
    elements that hold each distinct value."""
    inverse, counts = _unique_groups(ar, return_index, return_inverse, return_counts, axis)
    t = np.reshape(np.asarray(t), -1)
    total = np.zeros(len(counts), dtype=_float_dtype(t))
    np.add.at(total, inverse, t)
    return total / counts


# ---------------------------------------------------------------- helpers with `lead` batch axes
# The helpers below serve np.kron, np.cross, np.take, np.take_along_axis, np.partition,
# np.select, np.meshgrid, np.convolve/np.correlate, np.column_stack and np.r_/np.c_. Each
# takes `lead`: how many leading axes of its array arguments are batch axes (0 outside vmap;
# then it is the numpy function or its adjoint). Their batching rules give every array
# argument the new batch axis (rt.broadcast_batch) and pass lead + 1, so one helper serves
# vmap of vmap too. `*_lanes` helpers compute the function itself; `*_adj` ones its adjoint.

def _lead_unbroadcast(g, shape, lead):
    """`g` (lead batch axes, then per-example axes) summed to per-example shape `shape`, as
    broadcasting an example of that shape against g's examples would need."""
    xp = array_module(g)
    g = xp.asarray(g)
    extra = g.ndim - lead - len(shape)
    if extra > 0:
        g = xp.sum(g, axis=tuple(range(lead, lead + extra)))
    axes = tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return xp.sum(g, axis=axes, keepdims=True) if axes else g


def _promote(x, rank, lead):
    """`x` with length-1 axes after its batch axes until its examples have `rank` axes."""
    x = array_module(x).asarray(x)
    missing = rank - (x.ndim - lead)
    return x.reshape(x.shape[:lead] + (1,) * missing + x.shape[lead:]) if missing > 0 else x


def _example_axis(axis, x, lead):
    """A per-example axis (negative counts from the end) as an axis of `x`."""
    return lead + axis % max(np.ndim(x) - lead, 1)


# np.kron: out[i0 * m0 + j0, ...] = a[i0, ...] * b[j0, ...], the shorter shape padded with
# leading 1s. With a length-1 axis after each axis of a and before each axis of b, it is a
# broadcast product, reshaped.

def _kron_shapes(a, b, lead):
    sa, sb = tuple(np.shape(a)[lead:]), tuple(np.shape(b)[lead:])
    rank = max(len(sa), len(sb))
    return (1,) * (rank - len(sa)) + sa, (1,) * (rank - len(sb)) + sb


def _interleaved(x, shape, lead, first):
    """Examples of `x` (padded to `shape`) with a length-1 axis after (first=True) or before
    each of their axes."""
    x = array_module(x).asarray(x)
    spread = []
    for n in shape:
        spread += [n, 1] if first else [1, n]
    return x.reshape(x.shape[:lead] + tuple(spread))


def kron_lanes(a, b, lead=0):
    """np.kron(a, b) of each example (lead=0: np.kron itself)."""
    sa, sb = _kron_shapes(a, b, lead)
    prod = _interleaved(a, sa, lead, True) * _interleaved(b, sb, lead, False)
    return prod.reshape(prod.shape[:lead] + tuple(m * n for m, n in zip(sa, sb)))


def _kron_adj(g, a, b, lead, wrt_a):
    sa, sb = _kron_shapes(a, b, lead)
    xp = array_module(g)
    g = xp.asarray(g)
    spread = []
    for m, n in zip(sa, sb):
        spread += [m, n]
    g = g.reshape(g.shape[:lead] + tuple(spread))
    other = _interleaved(b, sb, lead, False) if wrt_a else _interleaved(a, sa, lead, True)
    axes = tuple(lead + 2 * i + (1 if wrt_a else 0) for i in range(len(sa)))
    return xp.reshape(xp.sum(g * other, axis=axes), np.shape(a if wrt_a else b))


def kron_adj_a(g, a, b, lead=0):
    """Adjoint of `np.kron(a, b)` with respect to a (linear in g and in b; a lends its
    shape): each block of g weighed by b and summed."""
    return _kron_adj(g, a, b, lead, True)


def kron_adj_b(g, a, b, lead=0):
    """Adjoint of `np.kron(a, b)` with respect to b: the blocks of g weighed by a's elements
    and added up."""
    return _kron_adj(g, a, b, lead, False)


# np.cross: the vector axes moved last, 2-vectors given a zero third component (numpy's
# 2 x 2 product is that component alone), then g . (a x b) = a . (b x g) = b . (g x a) gives
# the adjoints, without conjugation.

def _cross_axes(axisa, axisb, axisc, axis):
    return (axisa, axisb, axisc) if axis is None else (axis, axis, axis)


def _cross_operands(a, b, axisa, axisb, lead):
    xp = array_module(a, b)
    a, b = xp.asarray(a), xp.asarray(b)
    va = xp.moveaxis(a, _example_axis(axisa, a, lead), -1)
    vb = xp.moveaxis(b, _example_axis(axisb, b, lead), -1)
    for v in (va, vb):
        if v.shape[-1] not in (2, 3):
            raise ValueError("incompatible dimensions for cross product\n"
                             "(dimension must be 2 or 3)")
    rank = max(va.ndim, vb.ndim) - lead - 1

    def three(v):
        if v.shape[-1] == 2:
            v = xp.concatenate([v, xp.zeros(v.shape[:-1] + (1,), dtype=v.dtype)], -1)
        missing = rank - (v.ndim - lead - 1)
        return v.reshape(v.shape[:lead] + (1,) * missing + v.shape[lead:])
    return va, vb, three(va), three(vb)


def cross_lanes(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    """np.cross(a, b, axisa, axisb, axisc, axis) of each example."""
    axisa, axisb, axisc = _cross_axes(axisa, axisb, axisc, axis)
    va, vb, a3, b3 = _cross_operands(a, b, axisa, axisb, lead)
    c = array_module(a3).cross(a3, b3)
    if va.shape[-1] == 2 and vb.shape[-1] == 2:
        return c[..., 2]
    return array_module(c).moveaxis(c, -1, _example_axis(axisc, c, lead))


def _cross_adj(g, a, b, axisa, axisb, axisc, axis, lead, wrt_a):
    axisa, axisb, axisc = _cross_axes(axisa, axisb, axisc, axis)
    va, vb, a3, b3 = _cross_operands(a, b, axisa, axisb, lead)
    xp = array_module(g)
    g = xp.asarray(g)
    if va.shape[-1] == 2 and vb.shape[-1] == 2:
        zero = xp.zeros_like(g)
        g3 = xp.stack([zero, zero, g], -1)
    else:
        g3 = xp.moveaxis(g, _example_axis(axisc, g, lead), -1)
    v, x = (va, a) if wrt_a else (vb, b)
    d = xp.cross(b3, g3) if wrt_a else xp.cross(g3, a3)
    d = _lead_unbroadcast(d[..., :v.shape[-1]], v.shape[lead:], lead)
    return xp.moveaxis(d, -1, _example_axis(axisa if wrt_a else axisb, x, lead))


def cross_adj_a(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    """Adjoint of `np.cross(a, b, ...)` with respect to a: np.cross(b, g) on a's vectors
    (linear in g and in b; a lends its shape)."""
    return _cross_adj(g, a, b, axisa, axisb, axisc, axis, lead, True)


def cross_adj_b(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    """Adjoint of `np.cross(a, b, ...)` with respect to b: np.cross(g, a) on b's vectors."""
    return _cross_adj(g, a, b, axisa, axisb, axisc, axis, lead, False)


# np.take / np.take_along_axis: gathers; their adjoints scatter-add (np.add.at), so indices
# that repeat add up.

def _take_index(indices, n, mode):
    """np.take's indices into an axis of length n, made non-negative as `mode` says."""
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError("np.take: indices must be integers")
    if mode == "wrap":
        return idx % n
    if mode == "clip":
        return np.clip(idx, 0, n - 1)
    if mode != "raise":
        raise ValueError(f"np.take: mode must be 'raise', 'wrap' or 'clip', not {mode!r}")
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"index {int(idx.max() if idx.max() >= n else idx.min())} is out of "
                         f"bounds for axis with size {n}")
    return idx % n if n else idx


def _take_layout(shape, axis, lead):
    """(shape gathered from, its axis): each example flattened when axis is None."""
    if axis is None:
        return tuple(shape[:lead]) + (int(np.prod(shape[lead:], dtype=np.int64)),), lead
    return tuple(shape), lead + axis % max(len(shape) - lead, 1)


def _lane_grid(lanes, rank):
    """Index arrays of the batch axes (shape `lanes`), to broadcast against indices of
    `rank` more axes."""
    lead = len(lanes)
    return tuple(np.arange(n).reshape((1,) * i + (n,) + (1,) * (lead - 1 - i + rank))
                 for i, n in enumerate(lanes))


def take_mode(mode, out=None):
    """np.take's `mode`, once its `out` argument is checked to be None: a write into an
    array passed in is not something transformed code can follow."""
    if out is not None:
        raise TransformError("np.take(..., out) writes into an array it was given, which "
                             "transformed code does not follow.\n  hint: use the array "
                             "np.take returns (out = np.take(a, indices)).")
    return mode


def take_lanes(a, indices, axis=None, mode="raise", lead=0):
    """np.take(a, indices, axis, mode=mode) of each example (indices per example too)."""
    xp = array_module(a)
    a = xp.asarray(a)
    shape, ax = _take_layout(a.shape, axis, lead)
    a = a.reshape(shape)
    idx = _take_index(indices, shape[ax], mode)
    if lead == 0:
        return xp.take(a, idx, axis=ax)
    irank = idx.ndim - lead
    got = xp.moveaxis(a, ax, lead)[_lane_grid(shape[:lead], irank) + (idx,)]
    # got: batch axes, index axes, then the example's axes before and after `axis`
    before = ax - lead
    perm = tuple(range(lead)) + tuple(range(lead + irank, lead + irank + before)) + \
        tuple(range(lead, lead + irank)) + tuple(range(lead + irank + before, got.ndim))
    return xp.transpose(got, perm)


def take_adj(g, a, indices, axis=None, mode="raise", lead=0):
    """Adjoint of `np.take(a, indices, axis, mode=mode)`: g added into zeros shaped like a at
    the positions taken (repeated positions add up)."""
    xp = array_module(g)
    g = xp.asarray(g)
    shape, ax = _take_layout(np.shape(a), axis, lead)
    idx = _take_index(indices, shape[ax], mode)
    irank = idx.ndim - lead
    before = ax - lead
    perm = tuple(range(lead)) + tuple(range(lead + before, lead + before + irank)) + \
        tuple(range(lead, lead + before)) + tuple(range(lead + before + irank, g.ndim))
    out = xp.zeros(shape[:lead] + (shape[ax],) + shape[lead:ax] + shape[ax + 1:],
                   dtype=_float_dtype(g))
    index = tuple(xp.asarray(i) for i in _lane_grid(shape[:lead], irank) + (idx,))
    xp.add.at(out, index, xp.transpose(g, perm))
    return xp.reshape(xp.moveaxis(out, lead, ax), np.shape(a))


def take_along_axis_lanes(arr, indices, axis=-1, lead=0):
    """np.take_along_axis(arr, indices, axis) of each example."""
    xp = array_module(arr)
    arr = xp.asarray(arr)
    shape, ax = _take_layout(arr.shape, axis, lead)
    return xp.take_along_axis(arr.reshape(shape), xp.asarray(indices), axis=ax)


def take_along_axis_adj(g, arr, indices, axis=-1, lead=0):
    """Adjoint of `np.take_along_axis(arr, indices, axis)`: g added back at the positions
    taken, summed over the axes along which arr was broadcast against the indices."""
    xp = array_module(g)
    g = xp.asarray(g)
    shape, ax = _take_layout(np.shape(arr), axis, lead)
    idx = np.asarray(indices)
    index = []
    for d in range(g.ndim):
        if d == ax:
            index.append(idx)
            continue
        pos = np.arange(g.shape[d]) if shape[d] != 1 else np.zeros(g.shape[d], np.intp)
        index.append(pos.reshape((1,) * d + (-1,) + (1,) * (g.ndim - d - 1)))
    out = xp.zeros(shape, dtype=_float_dtype(g))
    xp.add.at(out, tuple(xp.asarray(i) for i in index), g)
    return xp.reshape(out, np.shape(arr))


# np.partition moves values like np.sort, but numpy does not say where each one went: the
# permutation is recovered from the values, matching a's sorted order with the result's
# (stable sorts, so equal values are matched in order and both rules agree on it).

def _partition_order(a, part, axis, lead):
    """(order, shape, axis) with part == take_along_axis(a.reshape(shape), order, axis)."""
    shape, ax = _take_layout(np.shape(a), axis, lead)
    a = np.asarray(a).reshape(shape)
    by_a = np.argsort(a, axis=ax, kind="stable")
    by_part = np.argsort(np.asarray(part).reshape(shape), axis=ax, kind="stable")
    order = np.empty_like(by_a)
    np.put_along_axis(order, by_part, by_a, axis=ax)
    return order, shape, ax


def unpartition(g, a, part, axis=-1, lead=0):
    """Adjoint of `part = np.partition(a, kth, axis)`: g moved back to where each value
    came from."""
    order, shape, ax = _partition_order(a, part, axis, lead)
    xp = array_module(g)
    out = xp.zeros(shape, dtype=_float_dtype(g))
    np.put_along_axis(out, order, xp.reshape(xp.asarray(g), shape), axis=ax)
    return xp.reshape(out, np.shape(a))


def partition_like(g, a, part, axis=-1, lead=0):
    """`g` (shaped like a) permuted the way np.partition permuted a into part (the
    transpose of unpartition)."""
    order, shape, ax = _partition_order(a, part, axis, lead)
    xp = array_module(g)
    return xp.reshape(xp.take_along_axis(xp.reshape(xp.asarray(g), shape), order, axis=ax),
                      np.shape(part))


# np.select picks, element by element, the choice of the first condition that holds, else
# the default: linear in the choices and the default, with masks for adjoints.

def _select_rank(lead, *groups):
    return max([np.ndim(x) - lead for group in groups for x in group] + [0])


def _select_masks(condlist, rank, lead):
    """Per condition: where it is the first that holds; and where none holds."""
    taken = None
    masks = []
    for c in condlist:
        c = _promote(np.asarray(c, dtype=bool), rank, lead)
        masks.append(c if taken is None else c & ~taken)
        taken = c if taken is None else taken | c
    return masks, (~taken if taken is not None else np.True_)


def select_lanes(condlist, choicelist, default=0, lead=0):
    """np.select(condlist, choicelist, default) of each example."""
    rank = _select_rank(lead, condlist, choicelist, [default])
    xp = array_module(*choicelist, default)
    return xp.select([_promote(c, rank, lead) for c in condlist],
                     [_promote(c, rank, lead) for c in choicelist], _promote(default, rank, lead))


def select_choices_adj(g, condlist, choicelist, lead=0):
    """Adjoint of np.select(condlist, choicelist, default) with respect to each choice: g
    where its condition is the first that holds, summed to the choice's shape."""
    rank = np.ndim(g) - lead
    masks, _ = _select_masks(condlist, rank, lead)
    xp = array_module(g)
    zero = xp.zeros((), dtype=_float_dtype(g))
    parts = [_lead_unbroadcast(xp.where(m, g, zero), np.shape(c)[lead:], lead)
             for m, c in zip(masks, choicelist)]
    return tuple(parts) if isinstance(choicelist, tuple) else parts


def select_default_adj(g, condlist, default, lead=0):
    """Adjoint of np.select(condlist, choicelist, default) with respect to the default: g
    where no condition holds, summed to the default's shape."""
    _, none = _select_masks(condlist, np.ndim(g) - lead, lead)
    xp = array_module(g)
    picked = xp.where(none, g, xp.zeros((), dtype=_float_dtype(g)))
    return xp.reshape(_lead_unbroadcast(picked, np.shape(default)[lead:], lead),
                      np.shape(default))


def select_default_place(h, condlist, g, lead=0):
    """`h` (shaped like np.select's default) where no condition holds, zeros elsewhere, in
    g's shape: the transpose of select_default_adj."""
    _, none = _select_masks(condlist, np.ndim(g) - lead, lead)
    xp = array_module(h)
    h = _promote(h, np.ndim(g) - lead, lead)
    dtype = np.result_type(_float_dtype(h), _float_dtype(xp.asarray(g)))
    return xp.where(none, h, xp.zeros((), dtype=dtype)) * xp.ones(np.shape(g), dtype=dtype)


# np.meshgrid: grid k is input k (flattened) along one axis, repeated along the others;
# with indexing='xy' the first two inputs go along axes 1 and 0.

def _grid_axis(k, count, indexing):
    if indexing == "xy" and count >= 2 and k < 2:
        return 1 - k
    return k


def meshgrid_lanes(sparse, indexing, lead, x0=None, x1=None, x2=None, x3=None):
    """np.meshgrid(x0, x1, ..., sparse=sparse, indexing=indexing) of each example (the
    inputs given, in order; always copies)."""
    xs = [x for x in (x0, x1, x2, x3) if x is not None]
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    xp = array_module(*xs)
    flat = [xp.asarray(x) for x in xs]
    flat = [x.reshape(x.shape[:lead] + (-1,)) for x in flat]
    count = len(flat)
    lanes = np.broadcast_shapes(*(x.shape[:lead] for x in flat)) if flat else ()
    axes = [_grid_axis(k, count, indexing) for k in range(count)]
    sizes = [0] * count
    for x, ax in zip(flat, axes):
        sizes[ax] = x.shape[-1]
    out = []
    for x, ax in zip(flat, axes):
        shape = [1] * count
        shape[ax] = x.shape[-1]
        grid = x.reshape(x.shape[:lead] + tuple(shape))
        out.append(grid.copy() if sparse else
                   xp.broadcast_to(grid, lanes + tuple(sizes)).copy())
    return out


def meshgrid_adj(g, k, x, indexing, lead=0):
    """Adjoint of np.meshgrid(...)'s input k (shaped like x) given the adjoint list g of
    its grids: grid k's adjoint summed over the axes input k was repeated along."""
    xp = array_module(g[k])
    gk = xp.asarray(g[k])
    ax = lead + _grid_axis(k, gk.ndim - lead, indexing)
    others = tuple(d for d in range(lead, gk.ndim) if d != ax)
    return xp.reshape(xp.sum(gk, axis=others), np.shape(x))


def meshgrid_place(h, g, k, indexing, lead=0):
    """`h` (shaped like input k of np.meshgrid) repeated as grid k, zeros for the other
    grids, shaped like the list g: the transpose of meshgrid_adj."""
    xp = array_module(h)
    h = xp.asarray(h)
    out = []
    for j, gj in enumerate(g):
        shape = np.shape(gj)
        dtype = np.result_type(_float_dtype(h), _float_dtype(xp.asarray(gj)))
        if j != k:
            out.append(xp.zeros(shape, dtype=dtype))
            continue
        ax = lead + _grid_axis(k, len(shape) - lead, indexing)
        line = [1] * len(shape)
        line[:lead] = shape[:lead]
        line[ax] = shape[ax]
        out.append(xp.broadcast_to(xp.reshape(h, line), shape).astype(dtype))
    return type(g)(out) if isinstance(g, (tuple, list)) else out


# np.convolve and np.correlate along the last axis: the full convolution, of length
# m + n - 1, cut to the mode's window. np.correlate(a, v) is the convolution of a with
# conj(v) reversed, but its window for mode 'same' is placed differently when a is the
# shorter (kind='correlate').

def _conv_window(m, n, mode, kind):
    """(start, length) of the mode's result within the full convolution of lengths m, n."""
    if mode == "full":
        return 0, m + n - 1
    if mode == "valid":
        return min(m, n) - 1, max(m, n) - min(m, n) + 1
    if mode == "same":
        start = m // 2 if kind == "correlate" and m < n else (min(m, n) - 1) // 2
        return start, max(m, n)
    raise ValueError(f"mode must be one of 'full', 'same', 'valid', not {mode!r}")


def _conv_operand(x, lead):
    """A 1-D example (numpy reads a number as one of length 1)."""
    x = array_module(x).asarray(x)
    if x.ndim == lead:
        x = x[..., None]
    if x.ndim != lead + 1 or not x.shape[-1]:
        raise ValueError("np.convolve/np.correlate: each input must be a non-empty 1-D array")
    return x


def convolve_lanes(a, v, mode="full", lead=0, kind="convolve"):
    """np.convolve(a, v, mode) of each example (no conjugation; kind='correlate' places
    the 'same' window as np.correlate does)."""
    xp = array_module(a, v)
    a, v = _conv_operand(a, lead), _conv_operand(v, lead)
    m, n = a.shape[-1], v.shape[-1]
    lanes = np.broadcast_shapes(a.shape[:-1], v.shape[:-1])
    full = xp.zeros(lanes + (m + n - 1,), dtype=np.result_type(a, v))
    if m < n:
        for i in range(m):
            full[..., i:i + n] += a[..., i:i + 1] * v
    else:
        for j in range(n):
            full[..., j:j + m] += v[..., j:j + 1] * a
    start, length = _conv_window(m, n, mode, kind)
    return full[..., start:start + length]


def _conv_full_adj(g, m, n, mode, kind):
    """g of the mode's window placed in zeros the length of the full convolution."""
    xp = array_module(g)
    g = xp.asarray(g)
    start, length = _conv_window(m, n, mode, kind)
    full = xp.zeros(g.shape[:-1] + (m + n - 1,), dtype=g.dtype)
    full[..., start:start + length] = g
    return full


def convolve_adj_a(g, a, v, mode="full", lead=0, kind="convolve"):
    """Adjoint of convolve_lanes(a, v, mode) with respect to a: da[i] = sum_j G[i + j] v[j]
    over the full-length adjoint G (linear in g and in v; a lends its length)."""
    xp = array_module(g)
    v = _conv_operand(v, lead)
    m, n = _conv_operand(np.empty(np.shape(a), np.bool_), lead).shape[-1], v.shape[-1]
    full = _conv_full_adj(g, m, n, mode, kind)
    out = xp.zeros(np.broadcast_shapes(full.shape[:-1], v.shape[:-1]) + (m,),
                   dtype=np.result_type(full, v))
    for j in range(n):
        out += full[..., j:j + m] * v[..., j:j + 1]
    return xp.reshape(out, np.shape(a))


def convolve_adj_v(g, a, v, mode="full", lead=0, kind="convolve"):
    """Adjoint of convolve_lanes(a, v, mode) with respect to v: dv[j] = sum_i G[i + j] a[i]
    (linear in g and in a; v lends its length)."""
    xp = array_module(g)
    a = _conv_operand(a, lead)
    m, n = a.shape[-1], _conv_operand(np.empty(np.shape(v), np.bool_), lead).shape[-1]
    full = _conv_full_adj(g, m, n, mode, kind)
    out = xp.zeros(np.broadcast_shapes(full.shape[:-1], a.shape[:-1]) + (n,),
                   dtype=np.result_type(full, a))
    for i in range(m):
        out += full[..., i:i + n] * a[..., i:i + 1]
    return xp.reshape(out, np.shape(v))


# np.column_stack: 1-D (and 0-d) examples become columns, then all join along axis 1.

def _column(x, lead):
    x = array_module(x).asarray(x)
    rank = x.ndim - lead
    if rank >= 2:
        return x
    return x.reshape(x.shape[:lead] + ((x.shape[-1] if rank else 1), 1))


def column_stack_lanes(tup, lead=0):
    """np.column_stack(tup) of each example."""
    cols = [_column(x, lead) for x in tup]
    return array_module(*cols).concatenate(cols, axis=lead + 1)


def column_stack_adj(g, tup, lead=0):
    """Adjoint of `np.column_stack(tup)`: g cut back into one piece per item, shaped like
    it."""
    widths = [np.shape(_column(np.empty(np.shape(x), dtype=np.bool_), lead))[lead + 1]
              for x in tup]
    pieces = _pieces(array_module(g).asarray(g), widths, lead + 1)
    return _like(tup, [array_module(p).reshape(p, np.shape(x)) for p, x in zip(pieces, tup)])


# small questions about axes and exponents (no derivative)

def rollaxis_dest(ndim, axis, start=0):
    """Where np.rollaxis(a, axis, start) puts `axis` of an array of rank `ndim`: it is
    np.moveaxis(a, axis, rollaxis_dest(...))."""
    axis = axis % ndim
    if start < 0:
        start += ndim
    if not 0 <= start <= ndim:
        raise np.exceptions.AxisError(f"'start' arg requires {-ndim} <= start < {ndim + 1}")
    return start - 1 if start > axis else start


def vander_powers(x, N=None, increasing=False):
    """The exponents of the columns of np.vander(x, N, increasing) (integers), read from
    the length of x's last axis."""
    n = np.shape(x)[-1] if N is None else int(N)
    powers = array_module(x).arange(n, dtype=np.int64)
    return powers if increasing else powers[::-1].copy()
