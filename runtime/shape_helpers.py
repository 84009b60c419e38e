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
from .adjoints import unbroadcast


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
    xp = array_module(a)
    a = xp.asarray(a)
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
    return xp.transpose(others, np.argsort(rest + axes))


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
    bounds = np.cumsum(sizes)[:-1]
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
    np.add.at(out, owner, moved)
    out = xp.moveaxis(out, 0, ax)
    return xp.reshape(out, shape) if axis is None else out


def unpad(g, array, pad_width, mode="constant"):
    """Adjoint of `np.pad(array, pad_width)` (constant mode): the inner block of `g`."""
    if mode != "constant":
        raise TransformError(
            f"np.pad(..., mode={mode!r}) has no derivative rule; only mode='constant' is "
            f"supported.\n  hint: build the padding with np.concatenate, or use "
            f"@tp.custom_vjp.")
    nd = np.ndim(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (nd, 2))
    idx = tuple(slice(int(lo), np.shape(g)[i] - int(hi)) for i, (lo, hi) in enumerate(widths))
    return g[idx]


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
    return xp.transpose(out, np.argsort(perm))


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
    t = np.linspace(0.0, 1.0, num, endpoint, dtype=_float_dtype(samples))
    return np.reshape(t, (-1,) + (1,) * (ndim - 1 - int(axis) % max(ndim, 1)))


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


def _concat_positions(kind, items):
    """np.r_/np.c_ of `items` with every number and array replaced by the flat positions of
    its elements among all of theirs (-1 for the values a slice makes), and each item's
    (offset, shape), None for slices and directive strings. Concatenation only moves values,
    so this map is the whole derivative."""
    obj = _CONCATENATORS[kind]
    probe, parts, offset = [], [], 0
    for item in items:
        if isinstance(item, str):
            if item in ("r", "c"):
                raise TransformError(f"np.{kind}['{item}', ...] makes a np.matrix, which has no "
                                     f"derivative rule.\n  hint: build an array instead "
                                     f"(np.concatenate, np.stack).")
            probe.append(item)
            parts.append(None)
        elif isinstance(item, slice):
            probe.append(np.full(len(np.r_[item]), -1.0))
            parts.append(None)
        else:
            shape = np.shape(item)
            size = int(np.prod(shape, dtype=np.int64))
            ids = np.arange(offset, offset + size, dtype=np.float64).reshape(shape)
            probe.append(ids if shape else float(offset))
            parts.append((offset, shape))
            offset += size
    return np.asarray(obj[tuple(probe)]), parts, offset


def index_concat_adj(g, kind, items):
    """Adjoint of `np.r_[items]` (kind 'r_') or `np.c_[items]` ('c_'): the part of `g` each
    item became, shaped like the item (None for slices and strings)."""
    ids, parts, total = _concat_positions(kind, items)
    g = np.asarray(g)
    flat = np.zeros(total, dtype=_float_dtype(g))
    made = ids >= 0
    flat[ids[made].astype(np.intp)] = g[made]
    return tuple(None if part is None else flat[part[0]:part[0] + int(np.prod(part[1]))]
                 .reshape(part[1]) for part in parts)


def index_concat_tangent(kind, items, tangents):
    """Tangent of `np.r_[items]` / `np.c_[items]` given the items' tangents (None or zeros
    for the ones that have none): the transpose of index_concat_adj."""
    ids, parts, total = _concat_positions(kind, items)
    leaves = [np.asarray(t) for t, part in zip(tangents, parts)
              if part is not None and t is not None]
    flat = np.zeros(total, dtype=_float_dtype(np.result_type(*leaves)) if leaves else np.float64)
    for t, part in zip(tangents, parts):
        if part is not None and t is not None:
            flat[part[0]:part[0] + int(np.prod(part[1]))] = np.ravel(t)
    out = np.zeros(ids.shape, dtype=flat.dtype)
    made = ids >= 0
    out[made] = flat[ids[made].astype(np.intp)]
    return out


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
