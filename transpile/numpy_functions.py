"""numpy functions that take Python functions, in transformed code: np.vectorize (the
function over the broadcast elements, as a vmap) and np.piecewise (each function on the
elements its condition selects).

    @np.vectorize                        np.vectorize(piece)(x, y) in transformed code is
    def piece(x, y):                         shape = np.broadcast_shapes(np.shape(x), ...)
        if x > y:                            out = vmap(piece)(np.ravel(x'), np.ravel(y'))
            return np.sin(x) * y             np.reshape(out, shape)  (each output)
        return x ** 2 + y

numpy calls the function once per element in a Python loop; here every transformation
sees one vmap of it (a data-dependent `if` takes each element's own branch, derivatives
flow through), and the batched code runs at numpy speed. As numpy does, the results take
the dtype of the function's output at the first element (ints stay ints) unless `otypes`
names them, and the positions in `excluded` are passed whole. A `signature` (gufunc
semantics) and excluded keywords are refused.

    np.piecewise(x, [x < 0, x >= 1], [f, g, 0.5])   is, for those 2 conditions and 3 items:
        y = np.zeros(np.shape(x), dtype=np.result_type(x))
        m0 = x < 0;  y[m0] = f(x[m0])
        m1 = x >= 1; y[m1] = g(x[m1])
        y[~(m0 | m1)] = 0.5                           (the item after the conditions: the rest)

Each function sees only the elements its condition selects (as numpy's: log where x > 0
never meets x <= 0, so neither its value nor its derivative is nan), and a later condition
overrides an earlier one.
"""
import numpy as np

from .custom import file_backed
from .frontend.calls import CALLED_INSTEAD, REPLACEMENTS
from .tree_util import tree_map

_CALLERS = {}


def vectorized_caller(n, excluded, otypes, vmap):
    """The function `vectorize_...(pyfunc, a0, ..., a{n-1})` computing
    np.vectorize(pyfunc, excluded=excluded, otypes=otypes)(a0, ...), through `vmap`."""
    key = (n, excluded, otypes, id(vmap))
    if key in _CALLERS:
        return _CALLERS[key][0]
    args = [f"a{k}" for k in range(n)]
    mapped = [a for k, a in enumerate(args) if k not in excluded]
    flat = [f"np.ravel(np.broadcast_to({a}, shape))" if k not in excluded else a
            for k, a in enumerate(args)]
    first = [f"np.ravel({a})[0]" if k not in excluded else a for k, a in enumerate(args)]
    in_axes = tuple(None if k in excluded else 0 for k in range(n))
    name = f"vectorize_{n}" + "".join("_x" if k in excluded else "_m" for k in range(n))
    if otypes:
        # numpy's otypes: one dtype per output, in order
        cast = (f"    dtypes = {tuple(np.dtype(t).str for t in otypes)!r}\n"
                f"    if len(dtypes) == 1:\n"
                f"        return np.reshape(out, shape).astype(dtypes[0])\n"
                f"    return tuple(np.reshape(o, shape).astype(d) for o, d in "
                f"zip(out, dtypes))\n")
    else:
        # numpy's: the dtype of each output at the first element
        cast = (f"    at_first = pyfunc({', '.join(first)})\n"
                f"    return tree_map(lambda o, f: np.reshape(o, shape).astype("
                f"np.result_type(f)), out, at_first)\n")
    text = (f"def {name}(pyfunc, {', '.join(args)}):\n"
            f"    shape = np.broadcast_shapes({', '.join(f'np.shape({a})' for a in mapped)})\n"
            f"    out = vmap(pyfunc, in_axes={in_axes!r})({', '.join(flat)})\n" + cast)
    made = file_backed(text, {"np": np, "vmap": vmap, "tree_map": tree_map}, name)
    _CALLERS[key] = (made, vmap)      # (vmap kept alive: its id is in the key)
    return made


def piecewise_caller(n_conditions, callable_items, n_extra):
    """`piecewise_...(x, c0, ..., f0, ..., e0, ...)`: np.piecewise(x, [c0, ...], [f0, ...],
    e0, ...) where `callable_items` says which items are functions (the others are
    values) and e0, ... are the extra arguments each function is given."""
    key = (n_conditions, callable_items, n_extra)
    if key in _CALLERS:
        return _CALLERS[key][0]
    conds = [f"c{k}" for k in range(n_conditions)]
    items = [f"f{k}" for k in range(len(callable_items))]
    extra = [f"e{k}" for k in range(n_extra)]
    name = f"piecewise_{n_conditions}_" + "".join("f" if c else "v" for c in callable_items)
    lines = [f"def {name}({', '.join(['x'] + conds + items + extra)}):",
             "    x = np.asarray(x)",
             "    if np.ndim(x) == 0:",
             "        # one element: the item of the last condition that holds, as an `if`",
             "        # (under vmap each example takes its own, without a ragged selection)",
             "        y = np.zeros((), dtype=np.result_type(x))"]
    for k, item in enumerate(items):
        test = f"c{k}" if k < n_conditions else f"not ({' or '.join(conds)})"
        value = f"{item}(x{''.join(', ' + e for e in extra)})" if callable_items[k] else item
        lines += [f"        if {test}:", f"            y = np.asarray({value}).astype("
                  "np.result_type(x))"]
    lines += ["        return y",
              "    y = np.zeros(np.shape(x), dtype=np.result_type(x))"]
    masks = []
    for k, item in enumerate(items):
        mask = f"m{k}"
        if k < n_conditions:
            lines.append(f"    {mask} = np.broadcast_to(c{k}, np.shape(x))")
        else:           # the item after the conditions: where none of them holds
            lines.append(f"    {mask} = np.logical_not({' | '.join(masks)})")
        masks.append(mask)
        value = f"{item}(x[{mask}]{''.join(', ' + e for e in extra)})" \
            if callable_items[k] else item
        lines.append(f"    y[{mask}] = {value}")
    lines.append("    return y")
    made = file_backed("\n".join(lines) + "\n", {"np": np}, name)
    _CALLERS[key] = (made, None)
    return made


def along_axis_caller(n_extra, vmap):
    """`apply_along_axis_...(func1d, axis, arr, e0, ...)`: np.apply_along_axis as a vmap of
    func1d over arr's 1-d slices along `axis` (moved last, the others flattened), its
    outputs' axes put where `axis` was, in the dtype of its output on the first slice."""
    key = ("along", n_extra, id(vmap))
    if key in _CALLERS:
        return _CALLERS[key][0]
    extra = [f"e{k}" for k in range(n_extra)]
    given = "".join(", " + e for e in extra)
    name = "apply_along_axis" + (f"_{n_extra}" if n_extra else "")
    lines = [f"def {name}(func1d, axis, arr{given}):",
             "    arr = np.asarray(arr)",
             "    moved = np.moveaxis(arr, axis, -1)",
             "    lead = np.shape(moved)[:-1]",
             "    rows = np.reshape(moved, (-1, np.shape(moved)[-1]))",
             f"    out = vmap(func1d, in_axes={(0,) + (None,) * n_extra!r})(rows{given})",
             "    out = np.reshape(out, lead + np.shape(out)[1:])",
             "    at = axis % np.ndim(arr)",
             "    out = np.moveaxis(out, list(range(at, len(lead))),",
             "                      list(range(np.ndim(out) - len(lead) + at, np.ndim(out))))",
             f"    return out.astype(np.result_type(func1d(rows[0]{given})))"]
    made = file_backed("\n".join(lines) + "\n", {"np": np, "vmap": vmap}, name)
    _CALLERS[key] = (made, vmap)
    return made


REPLACEMENTS["vectorize"] = vectorized_caller
REPLACEMENTS["apply_along_axis"] = along_axis_caller
REPLACEMENTS["piecewise"] = piecewise_caller


# ---------------------------------------------------------------- numpy functions written
# with others that have rules: transformed code calls these in their place (CALLED_INSTEAD),
# so every transformation follows them as the user's own code

def dstack(tup):
    """np.dstack: the arrays, at least 3-d, joined along the third axis."""
    return np.concatenate([np.atleast_3d(a) for a in tup], axis=2)


def isin(element, test_elements, assume_unique=False, invert=False, kind=None):
    """np.isin: whether each element equals one of test_elements (no derivative)."""
    found = np.any(np.expand_dims(np.asarray(element), -1) == np.ravel(test_elements), axis=-1)
    if invert:
        return np.logical_not(found)
    return found


def unravel_index(indices, shape, order="C"):
    """np.unravel_index: the index along each axis of `shape` of each flat index."""
    if order != "C":
        raise ValueError("transformed code takes np.unravel_index with order='C' only")
    rest = np.asarray(indices)
    parts = []
    for n in shape[::-1]:
        parts.append(rest % n)
        rest = rest // n
    return tuple(parts[::-1])


def delete(arr, obj, axis=None):
    """np.delete: arr without the entries `obj` picks along `axis` (flattened: None)."""
    if axis is None:
        arr = np.ravel(arr)
        axis = 0
    n = np.shape(arr)[axis]
    keep = np.ones(n, dtype=bool)
    keep[obj] = False
    return np.take(arr, np.nonzero(keep)[0], axis=axis)


def resize(a, new_shape):
    """np.resize: a's elements repeated (in order) to fill `new_shape`."""
    flat = np.ravel(a)
    total = int(np.prod(new_shape))
    if np.size(flat) == 0 or total == 0:
        return np.zeros(new_shape, dtype=np.result_type(a))
    repeats = -(-total // np.size(flat))
    return np.reshape(np.tile(flat, repeats)[:total], new_shape)


def digitize(x, bins, right=False):
    """np.digitize: the index of the bin of each x, for bins increasing or decreasing."""
    bins = np.asarray(bins)
    if np.all(bins[1:] >= bins[:-1]):
        return np.searchsorted(bins, x, side="left" if right else "right")
    # decreasing: counted from the end of the reversed bins
    return np.size(bins) - np.searchsorted(bins[::-1], x, side="right" if right else "left")


def bincount(x, weights=None, minlength=0):
    """np.bincount: how often each value of the non-negative ints x occurs (with weights:
    their sums, whose derivative is the weights'): np.add.at into zeros of the length."""
    x = np.asarray(x)
    n = max(int(np.max(x)) + 1 if np.size(x) else 0, minlength)
    if weights is None:
        counts = np.zeros(n, dtype=np.int64)
        np.add.at(counts, x, 1)
        return counts
    sums = np.zeros(n, dtype=np.result_type(weights, np.float64))
    np.add.at(sums, x, weights)
    return sums


def ediff1d(ary, to_end=None, to_begin=None):
    """np.ediff1d: the differences of the flattened array, with values before and after."""
    parts = [np.ravel(to_begin)] if to_begin is not None else []
    flat = np.ravel(ary)
    parts.append(flat[1:] - flat[:-1])
    if to_end is not None:
        parts.append(np.ravel(to_end))
    return np.concatenate(parts)


def nancumsum(a, axis=None, dtype=None):
    """np.nancumsum: np.cumsum with nan taken as 0."""
    return np.cumsum(np.where(np.isnan(a), 0, a), axis, dtype)


def nancumprod(a, axis=None, dtype=None):
    """np.nancumprod: np.cumprod with nan taken as 1."""
    return np.cumprod(np.where(np.isnan(a), 1, a), axis, dtype)


def _poly_aligned(a1, a2):
    """Two coefficient arrays (highest power first), the shorter padded with zeros ahead."""
    a1, a2 = np.atleast_1d(a1), np.atleast_1d(a2)
    if np.size(a1) < np.size(a2):
        a1 = np.concatenate([np.zeros(np.size(a2) - np.size(a1), np.result_type(a1)), a1])
    elif np.size(a2) < np.size(a1):
        a2 = np.concatenate([np.zeros(np.size(a1) - np.size(a2), np.result_type(a2)), a2])
    return a1, a2


def polyadd(a1, a2):
    """np.polyadd of coefficient arrays."""
    a1, a2 = _poly_aligned(a1, a2)
    return a1 + a2


def polysub(a1, a2):
    """np.polysub of coefficient arrays."""
    a1, a2 = _poly_aligned(a1, a2)
    return a1 - a2


def polymul(a1, a2):
    """np.polymul of coefficient arrays: their convolution."""
    return np.convolve(np.atleast_1d(a1), np.atleast_1d(a2))


def polyder(p, m=1):
    """np.polyder of a coefficient array, m times."""
    p = np.atleast_1d(p)
    for _ in range(m):
        n = np.size(p) - 1
        p = p[:-1] * np.arange(n, 0, -1)
    return p


def polyint(p, m=1, k=None):
    """np.polyint of a coefficient array, m times, integration constants k (0 by default)."""
    p = np.atleast_1d(p)
    ks = np.zeros(m) if k is None else np.ravel(np.broadcast_to(k, (m,)))
    for i in range(m):
        n = np.size(p)
        p = np.concatenate([p / np.arange(n, 0, -1), ks[i:i + 1]])
    return p


def vecdot(x1, x2, axis=-1):
    """np.vecdot: the dot products of vectors along `axis` (x1 conjugated)."""
    return np.sum(np.conj(x1) * x2, axis=axis)


def matvec(x1, x2):
    """np.matvec: matrices times vectors, batched."""
    return np.matmul(x1, np.expand_dims(x2, -1))[..., 0]


def vecmat(x1, x2):
    """np.vecmat: (conjugated) vectors times matrices, batched."""
    return np.matmul(np.expand_dims(np.conj(x1), -2), x2)[..., 0, :]


def linalg_cross(x1, x2, axis=-1):
    """np.linalg.cross: np.cross of 3-vectors along `axis`."""
    return np.cross(x1, x2, axis=axis)


def diagflat(v, k=0):
    """np.diagflat: the flattened input on the k-th diagonal of a new matrix."""
    return np.diag(np.ravel(v), k)


def compress(condition, a, axis=None):
    """np.compress: the slices of `a` along `axis` (flattened: None) where condition holds."""
    if axis is None:
        a = np.ravel(a)
        axis = 0
    return np.take(a, np.nonzero(np.ravel(condition))[0], axis=axis)


def extract(condition, arr):
    """np.extract: the elements of the flattened arr where the flattened condition holds."""
    return np.ravel(arr)[np.nonzero(np.ravel(condition))[0]]


def divmod_(x1, x2):
    """np.divmod: the floor quotient and the remainder."""
    return np.floor_divide(x1, x2), np.mod(x1, x2)


def modf(x):
    """np.modf: the fractional and integral parts, both with the sign of x."""
    whole = np.trunc(x)
    return np.where(np.isinf(x), np.copysign(0.0, x), x - whole), whole


def ldexp(x1, x2):
    """np.ldexp: x1 times 2 to the integer power x2."""
    scale = np.exp2(np.asarray(x2)).astype(np.result_type(x1, np.float16))
    return x1 * scale


def nanargmin(a, axis=None, keepdims=False):
    """np.nanargmin: np.argmin with nan left out (a slice of nan only: numpy raises)."""
    if np.any(np.all(np.isnan(a), axis=axis)):
        raise ValueError("All-NaN slice encountered")
    return np.argmin(np.where(np.isnan(a), np.inf, a), axis=axis, keepdims=keepdims)


def nanargmax(a, axis=None, keepdims=False):
    """np.nanargmax: np.argmax with nan left out (a slice of nan only: numpy raises)."""
    if np.any(np.all(np.isnan(a), axis=axis)):
        raise ValueError("All-NaN slice encountered")
    return np.argmax(np.where(np.isnan(a), -np.inf, a), axis=axis, keepdims=keepdims)


def _with_initial(x, axis, initial):
    """`x` with `initial` put first along `axis` (numpy's include_initial)."""
    shape = list(np.shape(x))
    shape[axis] = 1
    return np.concatenate([np.full(shape, initial, dtype=np.result_type(x)), x], axis=axis)


def _axis_of_cumulative(x, axis):
    """The axis np.cumulative_sum/prod run along: a 1-d array's when None."""
    if axis is None:
        if np.ndim(x) > 1:
            raise ValueError("np.cumulative_sum and np.cumulative_prod need axis for an array "
                             "of more than one axis")
        return 0
    return axis


def cumulative_sum(x, axis=None, dtype=None, include_initial=False):
    """np.cumulative_sum (NumPy 2.1): np.cumsum, with a 0 first where include_initial."""
    axis = _axis_of_cumulative(x, axis)
    out = np.cumsum(x, axis=axis, dtype=dtype)
    return _with_initial(out, axis, 0) if include_initial else out


def cumulative_prod(x, axis=None, dtype=None, include_initial=False):
    """np.cumulative_prod (NumPy 2.1): np.cumprod, with a 1 first where include_initial."""
    axis = _axis_of_cumulative(x, axis)
    out = np.cumprod(x, axis=axis, dtype=dtype)
    return _with_initial(out, axis, 1) if include_initial else out


def sort_complex(a):
    """np.sort_complex: sorted by real part, then imaginary part, as complex numbers."""
    return np.sort(np.asarray(a) + 0j)


def union1d(ar1, ar2):
    """np.union1d: the sorted distinct values of both."""
    return np.unique(np.concatenate([np.ravel(ar1), np.ravel(ar2)]))


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """np.intersect1d: the sorted distinct values of ar1 that ar2 holds too."""
    if return_indices:
        raise ValueError("transformed code takes np.intersect1d without return_indices")
    values = np.unique(ar1)
    return values[np.nonzero(isin(values, ar2))[0]]


def setdiff1d(ar1, ar2, assume_unique=False):
    """np.setdiff1d: the sorted distinct values of ar1 that ar2 does not hold."""
    values = np.unique(ar1)
    return values[np.nonzero(isin(values, ar2, invert=True))[0]]


def triu_indices_from(arr, k=0):
    """np.triu_indices_from: np.triu_indices of a matrix's shape."""
    return np.triu_indices(np.shape(arr)[-2], k, np.shape(arr)[-1])


def tril_indices_from(arr, k=0):
    """np.tril_indices_from: np.tril_indices of a matrix's shape."""
    return np.tril_indices(np.shape(arr)[-2], k, np.shape(arr)[-1])


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """np.ravel_multi_index (mode='raise', order='C'): the flat index of each index tuple."""
    if mode != "raise" or order != "C":
        raise ValueError("transformed code takes np.ravel_multi_index with mode='raise' and "
                         "order='C' only")
    flat = np.zeros(np.shape(np.asarray(multi_index[0])), dtype=np.int64)
    for index, n in zip(multi_index, dims):
        index = np.asarray(index)
        if np.any(index < 0) or np.any(index >= n):
            raise ValueError("invalid entry in coordinates array")
        flat = flat * n + index
    return flat


for _numpy_fn, _written in ((np.dstack, dstack), (np.isin, isin),
                            (np.unravel_index, unravel_index), (np.delete, delete),
                            (np.resize, resize), (np.digitize, digitize),
                            (np.bincount, bincount), (np.ediff1d, ediff1d),
                            (np.nancumsum, nancumsum), (np.nancumprod, nancumprod),
                            (np.polyadd, polyadd), (np.polysub, polysub),
                            (np.polymul, polymul), (np.polyder, polyder),
                            (np.polyint, polyint), (np.vecdot, vecdot), (np.matvec, matvec),
                            (np.vecmat, vecmat), (np.linalg.cross, linalg_cross),
                            (np.diagflat, diagflat), (np.compress, compress),
                            (np.extract, extract), (np.divmod, divmod_), (np.modf, modf),
                            (np.ldexp, ldexp), (np.nanargmin, nanargmin),
                            (np.nanargmax, nanargmax), (np.cumulative_sum, cumulative_sum),
                            (np.cumulative_prod, cumulative_prod),
                            (np.sort_complex, sort_complex), (np.union1d, union1d),
                            (np.intersect1d, intersect1d), (np.setdiff1d, setdiff1d),
                            (np.triu_indices_from, triu_indices_from),
                            (np.tril_indices_from, tril_indices_from),
                            (np.ravel_multi_index, ravel_multi_index)):
    CALLED_INSTEAD[id(_numpy_fn)] = (_numpy_fn, _written)
