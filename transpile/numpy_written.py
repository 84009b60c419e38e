"""More numpy functions written with others that have rules (see numpy_functions.py for the
first ones and for how CALLED_INSTEAD works): transformed code calls these in their place,
so every transformation follows them as the user's own code. Each returns what numpy returns
(values, shapes and dtypes); where numpy's result depends on a choice it does not promise
(np.argpartition's arrangement) the function is a primitive instead (rules/shape.py).
"""
import itertools
import math

import numpy as np

import runtime as rt

from .frontend.calls import CALLED_INSTEAD, WRITES_INTO_FIRST


# ---------------------------------------------------------------- writing into arrays

def insert(arr, obj, values, axis=None):
    """np.insert: `values` put before the entries `obj` names along `axis` (flattened:
    None). The result gathers from arr and the broadcast values joined, so derivatives reach
    both."""
    arr = np.asarray(arr)
    if axis is None:
        arr = np.ravel(arr)
        axis = 0
    axis = axis % np.ndim(arr)
    n = np.shape(arr)[axis]
    if isinstance(obj, slice):
        indices = np.arange(n)[obj]
    else:
        indices = np.asarray(obj)
        if indices.dtype == np.bool_:
            indices = np.flatnonzero(indices)
        elif np.ndim(indices) > 1:
            raise ValueError("index array argument obj to insert must be one dimensional "
                             "or scalar")
    values = np.asarray(values).astype(np.result_type(arr))
    if np.size(indices) == 1:
        index = int(np.ravel(indices)[0])
        if index < -n or index > n:
            raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
        index = index + n if index < 0 else index
        values = np.reshape(values, (1,) * (np.ndim(arr) - np.ndim(values)) + np.shape(values))
        if np.ndim(indices) == 0:
            # a scalar index: the values' first axis is the inserted one (numpy's a[:, 0:1])
            values = np.moveaxis(values, 0, axis)
        count = np.shape(values)[axis]
        positions = index + np.arange(count)
    else:
        indices = np.where(indices < 0, indices + n, indices)
        count = np.size(indices)
        # the k-th smallest index moves up by k (stable: equal indices keep their order)
        order = np.argsort(indices, kind="stable")
        positions = np.zeros(count, dtype=np.int64)
        positions[order] = indices[order] + np.arange(count)
    shape = list(np.shape(arr))
    shape[axis] = count
    values = np.broadcast_to(values, tuple(shape))
    taken_from = np.zeros(n + count, dtype=np.int64)
    is_old = np.ones(n + count, dtype=bool)
    is_old[positions] = False
    taken_from[positions] = n + np.arange(count)
    taken_from[is_old] = np.arange(n)
    return np.take(np.concatenate([arr, values], axis=axis), taken_from, axis=axis)


def _block_depth_and_rank(arrays):
    """How deep the lists of np.block nest (along the first items), and the largest rank
    among the arrays at that depth (found level by level: a recursive function's result
    would look batched to vmap)."""
    depth, first = 0, arrays
    while isinstance(first, list):
        if len(first) == 0:
            raise ValueError("np.block: lists cannot be empty")
        depth, first = depth + 1, first[0]
    level = [arrays]
    for _ in range(depth):
        for items in level:
            if not isinstance(items, list):
                raise ValueError("np.block: list depths are mismatched")
        level = [item for items in level for item in items]
    return depth, max(np.ndim(a) for a in level)


def _blocks_joined(arrays, depth, rank):
    """The lists at `depth` levels above the arrays joined along axis -depth."""
    if isinstance(arrays, list) != (depth > 0) or isinstance(arrays, tuple):
        raise ValueError("np.block: list depths are mismatched")
    if depth == 0:
        a = np.asarray(arrays)
        return np.reshape(a, (1,) * (rank - np.ndim(a)) + np.shape(a))
    return np.concatenate([_blocks_joined(a, depth - 1, rank) for a in arrays], axis=-depth)


def block(arrays):
    """np.block: nested lists of arrays joined, the innermost along the last axis."""
    if isinstance(arrays, tuple):
        raise TypeError("np.block takes lists of arrays, not tuples")
    depth, rank = _block_depth_and_rank(arrays)
    return _blocks_joined(arrays, depth, max(depth, rank))


def _flat_positions(shape, flat):
    """The index tuple of each flat (C-order) position in an array of `shape`."""
    parts = []
    for n in shape[::-1]:
        parts.append(flat % n)
        flat = flat // n
    return tuple(parts[::-1])


def _cycled(values, count, dtype):
    """`values` flattened and repeated to `count` items (numpy's a.flat[...] = values)."""
    flat = np.ravel(np.asarray(values).astype(dtype))
    if count == 0:
        return flat[:0]
    if np.size(flat) == 0:
        raise ValueError("cannot write an empty sequence into a non-empty selection")
    return np.tile(flat, -(-count // np.size(flat)))[:count]


# numpy functions writing into their first argument: each returns the new contents, and
# the call `np.put(a, ...)` becomes `a[...] = put(a, ...)` (frontend/calls.py)

def fill_diagonal(a, val, wrap=False):
    """np.fill_diagonal: `val` (cycled) on the main diagonal of `a`."""
    a = np.copy(a)
    shape = np.shape(a)
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) == 2:
        step = shape[1] + 1
        stop = np.size(a) if wrap else min(np.size(a), shape[1] * shape[1])
    else:
        for n in shape[1:]:
            if n != shape[0]:
                raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.sum(np.cumprod(shape[:-1])))
        stop = np.size(a)
    flat = np.arange(0, stop, step)
    a[_flat_positions(shape, flat)] = _cycled(val, np.size(flat), np.result_type(a))
    return a


def put(a, ind, v, mode="raise"):
    """np.put: `v` (cycled) at the flat positions `ind` of `a`."""
    a = np.copy(a)
    size = np.size(a)
    flat = np.ravel(np.asarray(ind))
    if mode == "wrap":
        flat = flat % size
    elif mode == "clip":
        flat = np.clip(flat, 0, size - 1)
    else:
        if np.any(flat < -size) or np.any(flat >= size):
            raise IndexError(f"index out of range for array of size {size}")
        flat = np.where(flat < 0, flat + size, flat)
    a[_flat_positions(np.shape(a), flat)] = _cycled(v, np.size(flat), np.result_type(a))
    return a


def place(arr, mask, vals):
    """np.place: `vals` (cycled) where `mask` holds."""
    mask = np.broadcast_to(np.asarray(mask).astype(bool), np.shape(arr))
    vals = np.ravel(np.asarray(vals).astype(np.result_type(arr)))
    if np.size(vals) == 0:
        if np.any(mask):
            raise ValueError("Cannot insert from an empty array!")
        return np.copy(arr)
    # the k-th position where mask holds (in C order) takes vals[k % len(vals)]
    taken = np.reshape(np.cumsum(np.ravel(mask)) - 1, np.shape(arr)) % np.size(vals)
    return np.where(mask, vals[taken], arr)


def putmask(a, mask, values):
    """np.putmask: where `mask` holds, the value of `values` (cycled over a's flat
    positions) at the same flat position."""
    mask = np.broadcast_to(np.asarray(mask).astype(bool), np.shape(a))
    cycled = np.reshape(_cycled(values, np.size(a), np.result_type(a)), np.shape(a))
    return np.where(mask, cycled, a)


def copyto(dst, src, casting="same_kind", where=True):
    """np.copyto: src (broadcast) where `where` holds, dst elsewhere, in dst's dtype."""
    if not np.can_cast(np.result_type(src), np.result_type(dst), casting):
        raise TypeError(f"Cannot cast array data from {np.result_type(src)} to "
                        f"{np.result_type(dst)} according to the rule '{casting}'")
    src = np.broadcast_to(np.asarray(src).astype(np.result_type(dst)), np.shape(dst))
    return np.where(where, src, dst)


# ---------------------------------------------------------------- sequences and windows

def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """np.geomspace: a geometric sequence from start to stop (negative and complex ends too:
    start is turned to the positive reals and back), its ends exactly start and stop."""
    start, stop = np.asarray(start), np.asarray(stop)
    if np.any(start == 0) or np.any(stop == 0):
        raise ValueError("Geometric sequence cannot include zero")
    computed = np.result_type(start, stop, float(num))
    sign = np.sign(start.astype(computed))
    first = start.astype(computed) / sign
    last = stop.astype(computed) / sign
    fraction = np.arange(num) / ((num - 1) if endpoint else num) if num > 1 else \
        np.zeros(num)
    fraction = np.reshape(fraction, (num,) + (1,) * np.ndim(first * last))
    out = np.exp(np.log(first) * (1 - fraction) + np.log(last) * fraction)
    if num > 0:
        # the ends exactly as given (exp of a log is not always the number)
        ends = [np.expand_dims(first * np.ones_like(out[0]), 0)]
        middle = out[1:num - 1] if num > 1 and endpoint else out[1:]
        ends.append(middle)
        if num > 1 and endpoint:
            ends.append(np.expand_dims(last * np.ones_like(out[0]), 0))
        out = np.concatenate(ends, axis=0)
    out = out * sign
    if axis != 0:
        out = np.moveaxis(out, 0, axis)
    return out.astype(computed if dtype is None else dtype)


# np.i0 below |x| = 30 by its power series in x^2/4 (terms 1/(k!)^2, all positive: no
# cancellation; 56 of them reach the last bit at 30), above by its asymptotic series in 1/x
# (terms ((2k-1)!!)^2 / (k! 8^k); 26 of them leave 1e-22 at 30). Each side is evaluated at
# |x| clipped to its range, so the side not taken stays finite, and so do derivatives.
_I0_SERIES = tuple(1.0 / math.factorial(k) ** 2 for k in range(56))[::-1]
_I0_ASYMPTOTIC = tuple(itertools.accumulate(
    range(1, 26), lambda c, k: c * (2 * k - 1) ** 2 / (8 * k), initial=1.0))[::-1]


def i0(x):
    """np.i0, the modified Bessel function of the first kind and order 0 (within 2e-15 of
    numpy's; overflowing where numpy's does, above 709.78)."""
    x = np.asarray(x)
    if np.iscomplexobj(x):
        raise TypeError("i0 not supported for complex values")
    x = x.astype(np.result_type(x, np.float64))
    small = np.polyval(_I0_SERIES, np.minimum(x * x, 900.0) / 4)
    large_x = np.maximum(np.abs(x), 30.0)
    large = np.exp(large_x) * np.polyval(_I0_ASYMPTOTIC, 1 / large_x) / \
        np.sqrt(2 * np.pi * large_x)
    return np.where(np.abs(x) <= 30.0, small, large)


def _cosine_window(M, coefficients):
    """The window a0 - a1 cos(2 pi n / (M - 1)) + a2 cos(4 pi n / (M - 1)) - ... of M
    points (numpy's: empty for M < 1, [1.] for M = 1)."""
    if M < 1:
        return np.zeros(0)
    if M == 1:
        return np.ones(1)
    angle = 2.0 * np.pi * np.arange(0.0, M) / (M - 1)
    out = np.zeros(M)
    for k, c in enumerate(coefficients):
        out = out + (-1.0) ** k * c * np.cos(k * angle)
    return out


def hanning(M):
    """np.hanning: the Hann window of M points."""
    return _cosine_window(M, (0.5, 0.5))


def hamming(M):
    """np.hamming: the Hamming window of M points."""
    return _cosine_window(M, (0.54, 0.46))


def blackman(M):
    """np.blackman: the Blackman window of M points."""
    return _cosine_window(M, (0.42, 0.5, 0.08))


def bartlett(M):
    """np.bartlett: the triangular window of M points (zero at both ends)."""
    if M < 2:
        return np.ones(max(M, 0))
    n = np.arange(0.0, M)
    return np.where(n <= (M - 1) / 2.0, 2.0 * n / (M - 1), 2.0 - 2.0 * n / (M - 1))


def kaiser(M, beta):
    """np.kaiser: the Kaiser window of M points, differentiable in beta."""
    if M == 1:
        return np.ones(1)
    n = np.arange(0.0, M)
    alpha = (M - 1) / 2.0
    return i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / i0(beta)


# ---------------------------------------------------------------- numbers and bits

def frexp(x):
    """np.frexp: mantissa in [0.5, 1) (with x's sign) and integer exponent; the mantissa is x
    scaled by a power of two, in two steps so that subnormal x do not overflow the scale."""
    x = np.asarray(x)
    exponent = rt.frexp_exponent(x)
    half = -exponent // 2
    dtype = np.result_type(x, np.float16)
    mantissa = x * np.exp2(half.astype(np.float64)) * np.exp2((-exponent - half)
                                                              .astype(np.float64))
    return mantissa.astype(dtype), exponent


def packbits(a, axis=None, bitorder="big"):
    """np.packbits: each run of 8 truth values along `axis` (flattened: None) as a uint8."""
    a = np.asarray(a)
    if axis is None:
        a = np.ravel(a)
        axis = 0
    moved = np.moveaxis(a != 0, axis, -1)
    n = np.shape(moved)[-1]
    padded = np.concatenate([moved, np.zeros(np.shape(moved)[:-1] + (-n % 8,), dtype=bool)],
                            axis=-1)
    groups = np.reshape(padded, np.shape(padded)[:-1] + (-1, 8)).astype(np.uint8)
    weights = np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else
                       [1, 2, 4, 8, 16, 32, 64, 128], dtype=np.uint8)
    return np.moveaxis(np.sum(groups * weights, axis=-1, dtype=np.uint8), -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """np.unpackbits: the bits of uint8 values along `axis` (flattened: None), `count` of
    them (more: zeros after; negative: that many fewer)."""
    a = np.asarray(a)
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if axis is None:
        a = np.ravel(a)
        axis = 0
    shifts = np.array([7, 6, 5, 4, 3, 2, 1, 0] if bitorder == "big" else
                      [0, 1, 2, 3, 4, 5, 6, 7], dtype=np.uint8)
    moved = np.moveaxis(a, axis, -1)
    bits = (np.expand_dims(moved, -1) >> shifts) & np.uint8(1)
    bits = np.reshape(bits, np.shape(moved)[:-1] + (-1,))
    if count is not None:
        n = np.shape(bits)[-1]
        keep = count if count >= 0 else max(n + count, 0)
        if keep > n:
            bits = np.concatenate([bits, np.zeros(np.shape(bits)[:-1] + (keep - n,),
                                                  dtype=np.uint8)], axis=-1)
        else:
            bits = bits[..., :keep]
    return np.moveaxis(bits, -1, axis)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """np.unwrap: jumps between neighbours larger than `discont` taken back by multiples of
    `period` (the correction is piecewise constant: the derivative passes through)."""
    p = np.asarray(p)
    dd = np.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    high = period / 2
    ddmod = np.mod(dd + high, period) - high
    # numpy maps the ambiguous boundary -period/2 of a rising jump to +period/2
    ddmod = np.where((ddmod == -high) & (dd > 0), high, ddmod)
    correction = np.where(np.abs(dd) < discont, 0, ddmod - dd)
    first = np.take(p, [0], axis=axis)
    rest = np.take(p, np.arange(1, np.shape(p)[axis]), axis=axis)
    return np.concatenate([first, rest + np.cumsum(correction, axis=axis)], axis=axis)


def real_if_close(a, tol=100):
    """np.real_if_close: the real part where every imaginary part is within tol (machine
    epsilons if tol > 1) of zero, else `a` unchanged."""
    a = np.asarray(a)
    if not np.iscomplexobj(a):
        return a
    if tol > 1:
        tol = np.finfo(a.dtype).eps * tol
    if np.all(np.abs(np.imag(a)) < tol):
        return np.real(a)
    return a


def asarray_chkfinite(a, dtype=None, order=None):
    """np.asarray_chkfinite: np.asarray, raising on nan or inf."""
    a = np.asarray(a) if dtype is None else np.asarray(a).astype(dtype)
    if np.issubdtype(a.dtype, np.inexact) and not np.all(np.isfinite(a)):
        raise ValueError("array must not contain infs or NaNs")
    return a


def lexsort(keys, axis=-1):
    """np.lexsort: the order sorting by the last key first, ties broken by the keys before
    it: stable sorts by each key in turn, the first key first."""
    order = np.argsort(keys[0], axis=axis, kind="stable")
    for key in keys[1:]:
        along = np.take_along_axis(np.asarray(key), order, axis=axis)
        order = np.take_along_axis(order, np.argsort(along, axis=axis, kind="stable"),
                                   axis=axis)
    return order


def ix_(*args):
    """np.ix_: each 1-d index (booleans: where they hold) on its own axis of an open mesh."""
    out = []
    for k, arg in enumerate(args):
        arg = np.asarray(arg)
        if np.ndim(arg) != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if arg.dtype == np.bool_:
            arg = np.flatnonzero(arg)
        shape = [1] * len(args)
        shape[k] = np.size(arg)
        out.append(np.reshape(arg, tuple(shape)))
    return tuple(out)


def trim_zeros(filt, trim="fb"):
    """np.trim_zeros of a 1-d array: without its leading ('f') and trailing ('b') zeros."""
    found = np.flatnonzero(filt)
    if np.size(found) == 0:
        return filt[:0]
    first = int(found[0]) if "f" in trim or "F" in trim else 0
    last = int(found[-1]) + 1 if "b" in trim or "B" in trim else len(filt)
    return filt[first:last]


# ---------------------------------------------------------------- histograms

def _histogram_edges(a, bins, range, weights):
    """The bin edges np.histogram uses: `bins` edges given, or that many equal bins over
    `range` (the data's extent by default, widened by 0.5 each way when it is one value)."""
    if isinstance(bins, str):
        raise rt.TransformError("np.histogram with bins named by an estimator ('auto', "
                                "'fd', ...) is not supported in transformed code.\n  hint: "
                                "pass the number of bins or their edges.")
    if np.ndim(bins) == 1:
        edges = np.asarray(bins)
        if np.any(edges[:-1] > edges[1:]):
            raise ValueError("bins must increase monotonically, when an array")
        return edges
    count = int(bins)
    if count < 1:
        raise ValueError("`bins` must be positive, when an integer")
    if range is None:
        first = np.min(a) if np.size(a) else 0.0
        last = np.max(a) if np.size(a) else 1.0
    else:
        first, last = range
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
    if not (np.isfinite(first) and np.isfinite(last)):
        raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    edge_type = np.result_type(first, last, a)
    if np.issubdtype(edge_type, np.integer):
        edge_type = np.result_type(edge_type, np.float64)
    return np.linspace(first, last, count + 1, endpoint=True).astype(edge_type)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """np.histogram_bin_edges: the edges np.histogram would use."""
    return _histogram_edges(np.ravel(a), bins, range, weights)


def histogram(a, bins=10, range=None, density=None, weights=None):
    """np.histogram: how many values (or how much weight) fall in each bin [e_i, e_i+1),
    the last bin closed; values outside the edges are left out. Differentiable in the
    weights, and through the edges (the data's extent) in the data."""
    a = np.ravel(a)
    edges = _histogram_edges(a, bins, range, weights)
    count = np.size(edges) - 1
    inside = (a >= edges[0]) & (a <= edges[-1])
    index = np.clip(np.searchsorted(edges, a, side="right") - 1, 0, count - 1)
    index = np.where(inside, index, count)          # outside: a bin dropped below
    if weights is None:
        totals = np.zeros(count + 1, dtype=np.int64)
        np.add.at(totals, index, 1)
    else:
        weights = np.ravel(weights)
        totals = np.zeros(count + 1, dtype=np.result_type(weights))
        np.add.at(totals, index, weights)
    totals = totals[:count]
    if density:
        return totals / np.diff(edges) / np.sum(totals), edges
    return totals, edges


# ---------------------------------------------------------------- polynomials

def poly(seq_of_zeros):
    """np.poly: the coefficients of the monic polynomial with these roots (of a square
    matrix: its eigenvalues); real when the roots come in conjugate pairs."""
    zeros = np.atleast_1d(seq_of_zeros)
    if np.ndim(zeros) == 2 and np.shape(zeros)[0] == np.shape(zeros)[1] and \
            np.shape(zeros)[0] != 0:
        zeros = np.linalg.eigvals(zeros)
    elif np.ndim(zeros) != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if np.size(zeros) == 0:
        return 1.0
    zeros = zeros.astype(np.result_type(zeros, np.float64))
    coefficients = np.ones(1, dtype=np.result_type(zeros))
    for k in range(np.size(zeros)):
        coefficients = np.convolve(coefficients, np.stack([np.ones((), zeros.dtype),
                                                           -zeros[k]]))
    if np.iscomplexobj(coefficients):
        roots = zeros.astype(np.complex128)
        if np.all(np.sort(roots) == np.sort(np.conj(roots))):
            coefficients = np.real(coefficients)
    return coefficients


def polydiv(u, v):
    """np.polydiv: quotient and remainder of coefficient arrays (the remainder's leading
    entries within 1e-14 of zero dropped, as numpy does)."""
    u = np.atleast_1d(u) + 0.0
    v = np.atleast_1d(v) + 0.0
    m, n = np.size(u) - 1, np.size(v) - 1
    scale = 1.0 / v[0]
    quotient = []
    r = u + 0.0 * v[0]
    for k in range(m - n + 1):
        d = scale * r[k]
        quotient.append(d)
        r = np.concatenate([r[:k], r[k:k + n + 1] - d * v, r[k + n + 1:]])
    q = np.stack(quotient) if quotient else np.zeros(1, dtype=np.result_type(r))
    while np.allclose(r[0], 0, rtol=1e-14) and np.size(r) > 1:
        r = r[1:]
    return q, r


def roots(p):
    """np.roots: the eigenvalues of the companion matrix, then the roots at zero."""
    p = np.atleast_1d(p)
    if np.ndim(p) != 1:
        raise ValueError("Input must be a rank-1 array.")
    found = np.flatnonzero(p)
    if np.size(found) == 0:
        return np.zeros(0)
    trailing = np.size(p) - int(found[-1]) - 1
    p = p[int(found[0]):int(found[-1]) + 1]
    p = p.astype(np.result_type(p, np.float64))
    n = np.size(p)
    if n > 1:
        companion = np.concatenate([np.expand_dims(-p[1:] / p[0], 0),
                                    np.eye(n - 2, n - 1, dtype=p.dtype)], axis=0)
        found_roots = np.linalg.eigvals(companion)
    else:
        found_roots = np.zeros(0)
    return np.concatenate([found_roots, np.zeros(trailing, dtype=found_roots.dtype)])


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """np.polyfit: least-squares coefficients (highest power first), columns of the
    Vandermonde matrix scaled to unit norm as numpy does; full and cov are refused."""
    if full or cov:
        raise rt.TransformError("np.polyfit with full=True or cov=True is not supported in "
                                "transformed code.\n  hint: call it with neither inside, "
                                "or outside the transformed function.")
    x = np.asarray(x) + 0.0
    y = np.asarray(y) + 0.0
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if np.ndim(x) != 1 or np.size(x) == 0:
        raise TypeError("expected 1D vector for x")
    if np.ndim(y) < 1 or np.ndim(y) > 2 or np.shape(y)[0] != np.shape(x)[0]:
        raise TypeError("expected 1D or 2D array for y of the length of x")
    if rcond is None:
        rcond = np.size(x) * np.finfo(np.result_type(x)).eps
    lhs = np.vander(x, deg + 1)
    rhs = y
    if w is not None:
        w = np.asarray(w) + 0.0
        lhs = lhs * np.expand_dims(w, -1)
        rhs = rhs * (w if np.ndim(rhs) == 1 else np.expand_dims(w, -1))
    if np.iscomplexobj(lhs):
        scale = np.sqrt(np.sum(np.real(lhs) ** 2 + np.imag(lhs) ** 2, axis=0))
    else:
        scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    c = np.linalg.lstsq(lhs / scale, rhs, rcond=rcond)[0]
    return c / scale if np.ndim(c) == 1 else c / np.expand_dims(scale, -1)


# ---------------------------------------------------------------- nan statistics

def _nan_quantile(a, q, axis, keepdims, method):
    """A quantile with nan left out: each slice's numbers sorted first (nan sort last), then
    numpy's linear interpolation at q times (count - 1) where `count` counts the numbers."""
    if method != "linear":
        raise ValueError("transformed code takes the nan quantiles with method='linear'")
    a = np.asarray(a)
    if axis is None:
        a = np.ravel(a)
        axis = 0
        at = 0
        keep_shape = None
    else:
        at = axis % np.ndim(a)
        keep_shape = tuple(1 if k == at else n for k, n in enumerate(np.shape(a)))
    ordered = np.moveaxis(np.sort(a, axis=at), at, -1)
    count = np.sum(np.logical_not(np.isnan(ordered)), axis=-1)
    q = np.asarray(q)
    position = np.expand_dims(q, tuple(range(np.ndim(q), np.ndim(q) + np.ndim(count)))) * \
        (count - 1)
    below = np.clip(np.floor(position), 0, None).astype(np.int64)
    above = np.minimum(below + 1, np.maximum(count - 1, 0))
    fraction = position - below
    lead = np.broadcast_to(ordered, np.shape(q) + np.shape(ordered))
    low = np.take_along_axis(lead, np.expand_dims(below, -1), axis=-1)[..., 0]
    high = np.take_along_axis(lead, np.expand_dims(above, -1), axis=-1)[..., 0]
    out = np.where(count == 0, np.nan, low + (high - low) * fraction)
    if keepdims:
        if keep_shape is None:
            keep_shape = (1,) * np.ndim(a)
        out = np.reshape(out, np.shape(q) + keep_shape)
    return out


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False):
    """np.nanquantile (linear method): quantiles of the numbers, nan left out."""
    if np.any((np.asarray(q) < 0) | (np.asarray(q) > 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    return _nan_quantile(a, q, axis, keepdims, method)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False):
    """np.nanpercentile (linear method): percentiles of the numbers, nan left out."""
    q = np.true_divide(q, 100)
    if np.any((q < 0) | (q > 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _nan_quantile(a, q, axis, keepdims, method)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """np.nanmedian: the median of the numbers, nan left out."""
    return _nan_quantile(a, 0.5, axis, keepdims, "linear")


# ---------------------------------------------------------------- fft

_SWAPPED_NORM = {None: "forward", "backward": "forward", "ortho": "ortho",
                 "forward": "backward"}


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """np.fft.hfft: the real spectrum of a signal with Hermitian symmetry, as numpy computes
    it: irfft of the conjugate with the scaling the other way round."""
    if out is not None:
        raise ValueError("transformed code takes np.fft.hfft without out=")
    a = np.asarray(a)
    if n is None:
        n = (np.shape(a)[axis] - 1) * 2
    return np.fft.irfft(np.conj(a), n, axis, norm=_SWAPPED_NORM[norm])


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """np.fft.ihfft: the inverse of hfft, the conjugate of rfft scaled the other way."""
    if out is not None:
        raise ValueError("transformed code takes np.fft.ihfft without out=")
    a = np.asarray(a)
    if n is None:
        n = np.shape(a)[axis]
    return np.conj(np.fft.rfft(a, n, axis, norm=_SWAPPED_NORM[norm]))


def fftfreq(n, d=1.0, device=None):
    """np.fft.fftfreq: the sample frequencies of an n-point fft (differentiable in d)."""
    counts = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return counts / (n * d)


def rfftfreq(n, d=1.0, device=None):
    """np.fft.rfftfreq: the sample frequencies of an n-point rfft (differentiable in d)."""
    return np.arange(0, n // 2 + 1) / (n * d)


# ---------------------------------------------------------------- array API spellings

def matrix_norm(x, keepdims=False, ord="fro"):
    """np.linalg.matrix_norm: np.linalg.norm over the last two axes."""
    return np.linalg.norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """np.linalg.vector_norm: the vector norm over `axis` (all axes, flattened: None)."""
    if axis is None:
        out = np.linalg.norm(np.ravel(x), ord=ord)
        return np.reshape(out, (1,) * np.ndim(x)) if keepdims else out
    if isinstance(axis, tuple) and len(axis) > 1:
        at = tuple(k % np.ndim(x) for k in axis)
        rest = tuple(k for k in range(np.ndim(x)) if k not in at)
        moved = np.transpose(x, rest + at)
        flat = np.reshape(moved, tuple(np.shape(x)[k] for k in rest) + (-1,))
        out = np.linalg.norm(flat, ord=ord, axis=-1)
        if keepdims:
            out = np.expand_dims(out, at)
        return out
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def svdvals(x):
    """np.linalg.svdvals: the singular values."""
    return np.linalg.svd(x, compute_uv=False)


def linalg_diagonal(x, offset=0):
    """np.linalg.diagonal: the diagonals of the last two axes."""
    return np.diagonal(x, offset, -2, -1)


def linalg_outer(x1, x2):
    """np.linalg.outer of two vectors."""
    return np.outer(x1, x2)


def linalg_tensordot(x1, x2, axes=2):
    """np.linalg.tensordot: np.tensordot."""
    return np.tensordot(x1, x2, axes)


def linalg_trace(x, offset=0, dtype=None):
    """np.linalg.trace: the traces of the last two axes."""
    if dtype is not None:
        x = np.asarray(x).astype(dtype)
    return np.trace(x, offset=offset, axis1=-2, axis2=-1)


def linalg_vecdot(x1, x2, axis=-1):
    """np.linalg.vecdot: the dot products along `axis`, x1 conjugated."""
    return np.sum(np.conj(x1) * x2, axis=axis)


def linalg_matmul(x1, x2):
    """np.linalg.matmul: np.matmul."""
    return np.matmul(x1, x2)


def unstack(x, axis=0):
    """np.unstack: the slices along `axis`, as a tuple."""
    moved = np.moveaxis(x, axis, 0)
    return tuple(moved[k] for k in range(np.shape(moved)[0]))


def diag_indices_from(arr):
    """np.diag_indices_from: np.diag_indices of a square array's size and rank."""
    if np.ndim(arr) < 2:
        raise ValueError("input array must be at least 2-d")
    shape = np.shape(arr)
    for n in shape[1:]:
        if n != shape[0]:
            raise ValueError("All dimensions of input must be of equal length")
    return np.diag_indices(shape[0], np.ndim(arr))


def astype(x, dtype, copy=True, device=None):
    """np.astype: x.astype(dtype)."""
    return np.asarray(x).astype(dtype)


for _numpy_fn, _written in ((np.fill_diagonal, fill_diagonal), (np.put, put),
                            (np.place, place), (np.putmask, putmask), (np.copyto, copyto)):
    WRITES_INTO_FIRST[id(_numpy_fn)] = (_numpy_fn, _written)

for _numpy_fn, _written in ((np.insert, insert), (np.block, block), (np.geomspace, geomspace),
                            (np.i0, i0),
                            (np.hanning, hanning), (np.hamming, hamming),
                            (np.blackman, blackman), (np.bartlett, bartlett),
                            (np.kaiser, kaiser), (np.frexp, frexp), (np.packbits, packbits),
                            (np.unpackbits, unpackbits), (np.unwrap, unwrap),
                            (np.real_if_close, real_if_close),
                            (np.asarray_chkfinite, asarray_chkfinite), (np.lexsort, lexsort),
                            (np.ix_, ix_), (np.trim_zeros, trim_zeros),
                            (np.histogram, histogram),
                            (np.histogram_bin_edges, histogram_bin_edges), (np.poly, poly),
                            (np.polydiv, polydiv), (np.roots, roots), (np.polyfit, polyfit),
                            (np.nanquantile, nanquantile), (np.nanpercentile, nanpercentile),
                            (np.nanmedian, nanmedian), (np.linalg.matrix_norm, matrix_norm),
                            (np.linalg.vector_norm, vector_norm),
                            (np.linalg.svdvals, svdvals), (np.linalg.diagonal, linalg_diagonal),
                            (np.linalg.outer, linalg_outer),
                            (np.linalg.tensordot, linalg_tensordot),
                            (np.linalg.trace, linalg_trace), (np.linalg.vecdot, linalg_vecdot),
                            (np.linalg.matmul, linalg_matmul), (np.unstack, unstack),
                            (np.astype, astype), (np.diag_indices_from, diag_indices_from),
                            (np.fft.hfft, hfft), (np.fft.ihfft, ihfft),
                            (np.fft.fftfreq, fftfreq), (np.fft.rfftfreq, rfftfreq)):
    CALLED_INSTEAD[id(_numpy_fn)] = (_numpy_fn, _written)
