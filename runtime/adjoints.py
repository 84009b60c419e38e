"""Helpers that reverse-mode generated code calls to build adjoints of arrays.

Each helper is itself a primitive with rules in `transpile/rules/`, so code that calls it can
be differentiated again (grad of grad).
"""
import math
import numbers
import weakref

import numpy as np

from .backend import array_module
from .batching import MaskIndex
from .errors import MissingDerivative, TransformError, located
from .ragged import Ragged, ragged_error, unbroadcast_to_ragged
from .trees import add, is_container, tree_leaves, tree_map, zeros_like


def unbroadcast(g, x):
    """Sum `g` over the axes that broadcasting added to `x`, giving `x`'s shape."""
    if type(g) is Ragged or type(x) is Ragged:
        return _unbroadcast_ragged(g, x)
    if type(g) is MissingDerivative:
        return g
    try:
        gs, xs = g.shape, x.shape
        if gs == xs:                # the common case, kept fast: no broadcasting happened
            return g
        if len(gs) == len(xs) + 1 and gs[1:] == xs:   # a bias added to a batch
            return g.sum(0)
    except AttributeError:
        if g is None:
            return zeros_like(x)
        if type(x) is float and getattr(g, "ndim", 0) == 0:
            return g
        if isinstance(x, (tuple, list)) and isinstance(g, (tuple, list)) and \
                len(g) != len(x):
            raise TransformError(
                f"`+` joined a sequence of {len(x)} items to another here, which was taken "
                "for an array sum while transforming, so its derivative cannot be split.\n"
                "  hint: bind the sequence with a list or tuple display first (`out = []` "
                "... `out = out + more`), or write list(a) + list(b).")
        if isinstance(x, (tuple, list, dict)):
            return g        # a container stored whole (`d[k] = (w, b)`): nothing broadcast
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape == shape:
        return g
    xp = array_module(g)
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    g = xp.sum(g, axis=axes, keepdims=False) if axes else g
    return xp.reshape(g, shape) if np.shape(g) != shape else g


def shape_or_none(x):
    """np.shape(x), or None for a tuple, list or dict (see lane_unbroadcast)."""
    if isinstance(x, (tuple, list, dict)):
        return None
    return np.shape(x)


# arrays of at least this many elements are kept by shape_only as a stand-in of no memory;
# smaller ones are kept as they are (a stand-in would cost more time than they take room)
SHAPE_ONLY_MIN_SIZE = 4096
_STAND_INS = {}


def shape_only(value):
    """What the backward pass keeps of a value it reads only for its shape and dtype (the
    second argument of `unbroadcast`): for a large numpy array, a read-only zero-stride
    view of one zero of its shape and dtype, which holds no memory of its own; anything
    else, the value itself. A loop that saves its temporaries this way keeps one stand-in
    per shape instead of an array per trip."""
    if type(value) is not np.ndarray or value.size < SHAPE_ONLY_MIN_SIZE:
        return value
    key = (value.shape, value.dtype)
    stand_in = _STAND_INS.get(key)
    if stand_in is None:
        if len(_STAND_INS) >= 256:
            _STAND_INS.clear()
        stand_in = _STAND_INS[key] = np.broadcast_to(np.zeros((), value.dtype), value.shape)
    return stand_in


def _unbroadcast_ragged(g, x):
    """unbroadcast in code that vmap made, where x or g is a selection of a mask that
    differs between examples (a Ragged: all examples' elements in a row)."""
    if isinstance(x, Ragged):
        return unbroadcast_to_ragged(g, x)
    if np.ndim(x) > len(g.element_shape):
        raise ragged_error("an adjoint")
    # x broadcast over every element of every example (an unbatched value)
    return unbroadcast(g.values, x)


def unbroadcast_to(g, shape):
    """`unbroadcast` against a shape instead of a value."""
    return unbroadcast(g, np.empty(shape, dtype=np.bool_) if shape else False)


def seed(out, where):
    """The adjoint 1 of a scalar output; a non-scalar output is an error (grad needs a scalar)."""
    t = type(out)
    if t is float or t is np.float64 or t is np.float32:
        return t(1.0)
    dtype = check_scalar_output(out, where)
    return array_module(out).ones(np.shape(out), dtype=dtype) if dtype is not None else 1.0


def check_cotangent(cotangent, like):
    """A pullback's cotangent has the structure of its output `like` and, leaf by leaf,
    its shape (as JAX requires): refused with both named, before the backward pass
    computes with it."""
    def describe(tree):
        if isinstance(tree, (tuple, list)):
            return [describe(v) for v in tree]
        if isinstance(tree, dict):
            return {k: describe(v) for k, v in tree.items()}
        return None if tree is None else np.shape(tree)
    have, want = describe(cotangent), describe(like)
    if have != want and not _same_up_to_none(have, want):
        raise TypeError(f"the pullback's cotangent must have the output's structure and "
                        f"shapes {want}, got {have}")


def _same_up_to_none(have, want):
    """None in a cotangent is zero for its part of the output."""
    if have is None:
        return True
    if isinstance(want, list) and isinstance(have, list) and len(have) == len(want):
        return all(_same_up_to_none(h, w) for h, w in zip(have, want))
    if isinstance(want, dict) and isinstance(have, dict) and set(have) == set(want):
        return all(_same_up_to_none(have[k], want[k]) for k in want)
    return have == want


def check_aux_pair(result, where):
    """With has_aux=True a function returns the pair (output, aux): refuse anything else
    before generated code takes it apart."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return
    found = f"a {type(result).__name__} of {len(result)} items" if \
        isinstance(result, (tuple, list)) else f"a {type(result).__name__}"
    raise located(where, f"with has_aux=True the function must return a pair (output, aux); "
                  f"it returned {found}.", "return `value, aux`, or drop has_aux=True.")


def seed_holomorphic(out, where):
    """The adjoint 1 of grad(f, holomorphic=True)'s output, which must be a complex scalar:
    rules transpose without conjugating, so the gradient is then f'(z) itself (as in JAX)."""
    dtype = check_scalar_output(out, where, holomorphic=True)
    return array_module(out).ones(np.shape(out),
                                  dtype=dtype if dtype is not None else np.complex128)


def check_scalar_output(out, where, lead=0, holomorphic=False):
    """Raise (pointing at `where`) unless `out` is a float scalar (with `holomorphic`, a
    complex one), or an array holding one (shape (1,) or (1, 1): autograd differentiates
    those, and there is only one way to); with `lead` leading batch axes, one such scalar
    per example. Returns its dtype (None for a Python number)."""
    if is_container(out) or np.ndim(out) < lead or \
            math.prod(np.shape(out)[lead:]) != 1:
        what = _describe(out) if is_container(out) or not lead else \
            f"an array of shape {np.shape(out)[lead:]} per example"
        raise located(where, f"grad needs a function with a scalar output, but it returned "
                      f"{what}.", "reduce it to a scalar (e.g. np.sum), use has_aux=True to "
                      "return extra values as (scalar, aux), or use tp.vjp for non-scalar "
                      "outputs.")
    dtype = getattr(out, "dtype", None)
    kind = dtype.kind if dtype is not None else "b" if isinstance(out, bool) else \
        "i" if isinstance(out, numbers.Integral) else \
        "c" if isinstance(out, numbers.Complex) and not isinstance(out, numbers.Real) else "f"
    if holomorphic:
        if kind != "c":
            func = where.rpartition(" (")[2].rstrip(")") or "the function"
            raise located(where, f"grad(..., holomorphic=True) of {func} returned "
                          f"{'a real number' if kind == 'f' else 'a non-complex value'}; "
                          "holomorphic=True needs a complex scalar output.",
                          "drop holomorphic=True for a real output, or return the complex "
                          "value (as JAX requires).")
        return dtype
    if kind == "c":
        # JAX's rule: the gradient of a complex output is defined only for holomorphic
        # functions, and taking the real part silently would answer another question
        func = where.rpartition(" (")[2].rstrip(")") or "the function"
        raise located(where, f"grad of {func} returned a complex number; grad needs a real "
                      "scalar output.", "return a real scalar (np.real(...), np.abs(...) ** 2), "
                      "pass holomorphic=True for a holomorphic function (as in JAX), "
                      "or use tp.vjp with a complex cotangent, or tp.jacfwd/tp.jvp for the "
                      "complex derivative.")
    if kind not in "fc":
        # A bool or integer output is piecewise constant: its gradient would be zeros that
        # say nothing about the function, so grad refuses instead of returning them.
        what = "a bool" if kind == "b" else "an integer"
        func = where.rpartition(" (")[2].rstrip(")") or "the function"
        detail = "" if dtype is None or kind == "b" else f" (dtype {dtype})"
        raise located(where, f"grad of {func} returned {what}{detail}, which has no "
                      "derivative.", "return a float that depends on the inputs (np.allclose, "
                      "comparisons, np.any and len give bools and integers); to stop a "
                      "gradient on purpose, return 0.0 * x.")
    return dtype


def _describe(x):
    if is_container(x):
        return f"a {type(x).__name__}"
    return f"an array of shape {np.shape(x)}"


def expand(g, x, axis=None, keepdims=False):
    """Adjoint of a reduction over `axis`: broadcast `g` back to `x`'s shape."""
    if isinstance(x, Ragged):
        return _expand_ragged(g, x, axis, keepdims)
    shape = np.shape(x)
    xp = array_module(g)
    if axis is None and np.ndim(g) == 0:
        return xp.full(shape, g)        # a fresh array: cheaper than a broadcast view here
    if axis is not None and not keepdims:
        axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
        g = xp.expand_dims(g, tuple(a % len(shape) for a in axes))
    return xp.broadcast_to(g, shape)


def _expand_ragged(g, x, axis, keepdims):
    """expand under vmap, to a selection x (batched axes: 1 the selected elements, 2, ...
    an element's axes): g broadcast back over them."""
    if axis is None:
        raise ragged_error("a reduction over the examples")
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    axes = sorted({int(a) % x.ndim for a in axes})
    element = tuple(a - 1 for a in axes if a >= 2)       # axes of x.values
    if 1 in axes:
        xp = array_module(g)
        g = xp.asarray(g)
        if keepdims:
            g = g.reshape(g.shape[:1] + g.shape[2:])
        values = g[x.lanes]
    else:
        values = g.values
        if keepdims:
            return x.like(array_module(values).broadcast_to(values, x.values.shape))
    if element and not keepdims:
        values = array_module(values).expand_dims(values, element)
    return x.like(array_module(values).broadcast_to(values, x.values.shape))


def _reduced_size_ragged(x, axis):
    """reduced_size under vmap of a selection x: over its elements (batched axis 1), each
    example's own count, given to each of its elements (a Ragged)."""
    if axis is None:
        raise ragged_error("a reduction over the examples")
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    axes = {int(a) % x.ndim for a in axes}
    per_element = int(np.prod([x.element_shape[a - 2] for a in axes if a >= 2]))
    if 1 not in axes:
        return per_element
    sizes = x.counts[x.lanes] * per_element
    return x.like(sizes.reshape(sizes.shape + (1,) * len(x.element_shape)))


def reduced_size(x, axis=None):
    """How many elements a reduction over `axis` combines (for mean, var, std)."""
    if isinstance(x, Ragged):
        return _reduced_size_ragged(x, axis)
    shape = np.shape(x)
    if axis is None:
        return int(np.size(x))
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    return int(np.prod([shape[a] for a in axes]))


def _is_basic_index(idx):
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(i is None or i is Ellipsis or isinstance(i, (slice, numbers.Integral))
               for i in items)


def index_add(dx, x, idx, dy):
    """Adjoint of `y = x[idx]`: `dx` plus `dy` placed at `idx` (dx None means zero).

    Works for arrays (integer-array indices with repeats add up, as np.add.at) and for
    tuples, lists and dicts (adjoint of reading one element of a container).
    """
    if is_container(x):
        if dx is None:
            dx = zeros_like(x)
        if isinstance(x, dict):
            out = dict(dx)
            out[idx] = add(out[idx], dy)
            return out
        out = list(dx)
        if len(out) < len(x):    # the adjoint of a list that grew: its missing tail is zero
            out += [None] * (len(x) - len(out))
        if isinstance(idx, slice):
            for j, d in zip(range(*idx.indices(len(x))), dy):
                out[j] = add(out[j], d)
        else:
            out[idx] = add(out[idx], dy)
        return out if isinstance(x, list) else tuple(out)
    dy = _masked_values(dy, idx)
    xp = array_module(x, dy)
    out = xp.zeros(np.shape(x), dtype=_adjoint_dtype(x, dy)) if dx is None \
        else xp.array(dx, dtype=_adjoint_dtype(dx, dy), copy=True)
    _add_at(xp, out, idx, dy)
    return out


def _masked_values(v, idx):
    """A selection's elements (rt.Ragged, under vmap) written or added through a mask that
    differs between examples: as many per example, in order."""
    if not isinstance(v, Ragged):
        return v
    if not isinstance(idx, MaskIndex):
        raise ragged_error("writing the selection other than through a boolean mask")
    v.same_counts(Ragged.gather(idx[0], idx[0]), "x[mask] = values")
    return v.values


def _add_at(xp, out, idx, dy):
    if _is_basic_index(idx) or isinstance(idx, MaskIndex):     # (a mask repeats nothing)
        out[idx] += dy
    else:
        xp.add.at(out, idx, dy)


# Arrays made by index_add_into itself. Generated code calls index_add_into only where the
# accumulating variable has no other reader (optimize.accumulate_in_place), so an array it
# made is referenced by that variable alone and can be added to in place: a loop over rows
# then costs O(n), not O(n^2).
_OWNED = weakref.WeakValueDictionary()


def index_add_into(dx, x, idx, dy):
    """`index_add`, adding into `dx` in place when index_add_into made it (see _OWNED)."""
    if dx is not None and type(dx) is np.ndarray and _OWNED.get(id(dx)) is dx and \
            dx.dtype == _adjoint_dtype(dx, dy):
        _add_at(np, dx, idx, dy)
        return dx
    out = index_add(dx, x, idx, dy)
    if type(out) is np.ndarray:
        _OWNED[id(out)] = out
    return out


def _adjoint_dtype(x, dy):
    dt = np.result_type(getattr(x, "dtype", np.float64), getattr(dy, "dtype", np.float64))
    return dt if dt.kind in "fc" else np.float64


def index_update(x, idx, v):
    """`x[idx] = v` without changing `x`: a new array (used when the old `x` is still needed)."""
    out = np.array(x) if isinstance(x, np.generic) else x.copy()    # (a 0-d array's value)
    v = _masked_values(v, idx)
    if isinstance(idx, MaskIndex) and np.shape(v) == out.shape:
        v = v[idx]                   # spread over x, as rt.written_part gives it
    out[idx] = v
    return out


def zero_where_unused(cotangent, value):
    """`value`, a derivative that an elementwise rule computed from `cotangent`, with 0 where
    `cotangent` is 0.

    Generated code calls this only where the zeros of `cotangent` are structural: the
    function's output does not depend on those entries (np.where did not pick them, a write
    overwrote them, indexing did not read them), so the derivative through them is 0 even
    where the rule's partial derivative is infinite and `0 * inf` gave nan
    (`np.where(x > 0, np.sqrt(x), 0.0)` at x = 0). Nothing is copied when nothing is nan."""
    if type(cotangent) is Ragged:
        return value
    return _zero_where_nan(value, lambda: cotangent == 0)


def zero_where(unpicked, value):
    """`value`, a derivative that an elementwise rule computed, with 0 where `unpicked`:
    entries that np.where, max/min or a write did not take, whose adjoint is a structural 0
    (see zero_where_unused)."""
    if type(unpicked) is Ragged:
        return value
    return _zero_where_nan(value, lambda: unpicked)


def _zero_where_nan(value, marks):
    """`value` with 0 where the boolean `marks()` holds, when `value` has a nan (one sum
    tells; `marks` is not computed otherwise); left as it is where the marks do not line up
    with it entry by entry (a broadcast argument's adjoint, summed over the broadcast axes,
    or marks moved through a ragged selection's adjoint, which sums them)."""
    t = type(value)
    if t is Ragged or t is MissingDerivative:
        return value
    if not hasattr(value, "dtype"):          # a Python number
        return value if value == value or not marks() else t(0)
    total = value.sum()                      # nan if any entry is (one pass, no copy)
    if total == total:
        return value
    where = marks()
    shape = np.shape(value)
    try:
        lined_up = np.broadcast_shapes(np.shape(where), shape) == shape
    except ValueError:
        lined_up = False
    if not lined_up or np.asarray(where).dtype != np.bool_:
        return value
    xp = array_module(value)
    return xp.where(where, xp.zeros((), value.dtype), value)


def index_clear(g, idx):
    """Adjoint flowing to the old array of `x[idx] = v`: `g` with zeros at `idx`."""
    if is_container(g):
        out = dict(g) if isinstance(g, dict) else list(g)
        out[idx] = None
        return out if not isinstance(g, tuple) else tuple(out)
    out = np.array(g) if isinstance(g, np.generic) else g.copy()    # (a 0-d array's adjoint)
    out[idx] = 0
    return out


def getitem(x, idx):
    """`x[idx]` as a function (the adjoint of `index_add` reads `dy` back this way)."""
    return x[idx]


def copy(x):
    """`x.copy()` for arrays, lists and dicts."""
    return x.copy() if hasattr(x, "copy") else x


def stop_gradient(x):
    """`x`, as a value that carries no derivative (tp.lax.stop_gradient); a tree stays a tree."""
    return x


def astype(x, dtype):
    return x.astype(dtype)


def as_dtype(x, dtype):
    """np.asarray(x, dtype=dtype) of an array x: x itself where it has that dtype already."""
    return array_module(x).asarray(x, dtype=dtype)


def scalar_of(value, dtype):
    """`x.dtype.type(value)`: value as a number (or, batched, an array) of that dtype."""
    return np.dtype(dtype).type(value)


def frexp_exponent(x):
    """The integer exponent of np.frexp (its mantissa is x scaled by a power of two)."""
    return np.frexp(x)[1]


def cast_derivative(g, like, cast):
    """A derivative through `cast = x.astype(dtype)` (`like` is x for the adjoint, cast for
    the tangent): `g` cast to like's dtype; zero where `cast` holds integers or booleans,
    the cast being piecewise constant there."""
    if getattr(getattr(cast, "dtype", None), "kind", "f") not in "fc":
        return array_module(g).zeros(np.shape(g), getattr(g, "dtype", float))
    return cast_like(g, like)


def cast_like(g, x):
    """`g` cast to the dtype of `x` (adjoint of `astype`)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "fc":
        return g
    return g.astype(dtype) if getattr(g, "dtype", None) != dtype else g


def pow_minus_one(x1, x2):
    """`x1 ** (x2 - 1)`, the factor of d(x1 ** x2)/dx1 = x2 * x1 ** (x2 - 1) that is infinite
    at x1 = 0 for x2 < 1; 0 where x2 == 0, so that the derivative of x ** 0 is 0 everywhere
    (as in JAX), not 0 * inf. np.power, not `**`: a Python 0.0 ** -0.5 raises."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.power(x1, x2 - 1)
    if np.ndim(x2) == 0 and x2 != 0:
        return p
    xp = array_module(p, x2)
    return xp.where(xp.asarray(x2) == 0, xp.zeros((), np.result_type(p)), p)


def has_log(x):
    """Where log(x) is defined and finite: x > 0, or x != 0 for complex x (the derivative of
    x1 ** x2 with respect to x2 is out * log(x1) there, 0 elsewhere)."""
    return x != 0 if np.iscomplexobj(x) else x > 0


def sinc_slope(x, s):
    """d sinc(x) / dx given s = sinc(x): (cos(pi x) - s) / x, and its limit 0 at x = 0."""
    xp = array_module(x, s)
    safe = xp.where(x == 0, 1.0, x)
    return xp.where(x == 0, 0.0, (xp.cos(np.pi * x) - s) / safe)


def abs_slope(x, a):
    """d|x|/dx given a = |x|: sign(x) for real x; for complex z, conj(z) / |z| (the gradient
    df/dx - i df/dy of f = |z|). 0 at 0 either way."""
    if not np.iscomplexobj(x):
        return np.sign(x)
    safe = array_module(x, a).where(a == 0, 1.0, a)
    return np.conj(x) / safe


def no_derivative(what, hint, tangent=None):
    """Refuse to differentiate `what`: the rule of a variant that has no derivative rule
    calls this instead of returning a wrong (zero) one. Forward rules pass the tangent, so
    the call exists only where a tangent does: it raises. Reverse rules get a
    MissingDerivative, which raises where the adjoint is used (an adjoint that is computed
    but never needed, of a value saved along with a differentiated one, is no error)."""
    message = f"{what} has no derivative rule.\n  hint: {hint}"
    if tangent is None:
        return MissingDerivative(message)
    raise TransformError(message)


def imag_unit(x):
    """1j for a complex `x`, 0.0 for a real one: adjoints that have an imaginary part only
    for complex values stay real arrays for real ones."""
    return 1j if np.iscomplexobj(x) else 0.0


def tie_share(wins, ties):
    """1 where an argument of max/min wins, 0.5 where it ties (the adjoint is shared)."""
    if np.ndim(wins) == 0 and np.ndim(ties) == 0 and not hasattr(wins, "shape"):
        return 1.0 if wins else 0.5 if ties else 0.0        # Python numbers: max(x, y)
    xp = array_module(wins, ties)
    return xp.where(wins, 1.0, xp.where(ties, 0.5, 0.0))


def inside(a, lo, hi):
    """d np.clip(a, lo, hi) / da (either bound may be None): 1 where lo < a < hi, 0 outside,
    and 0.5 where `a` equals a bound, as np.minimum(np.maximum(a, lo), hi) shares a tie
    (JAX's jnp.clip): the two one-sided derivatives there are 0 and 1."""
    if any(isinstance(v, Ragged) for v in (a, lo, hi)):
        # under vmap, a selection (rt.Ragged) and numbers (or selections as long)
        like = next(v for v in (a, lo, hi) if isinstance(v, Ragged))
        parts = [like._operand(v, "np.clip") for v in (a, lo, hi)]
        share = clip_share(*parts, xp=array_module(like.values))
        return like.like(share.astype(like.values.dtype if like.values.dtype.kind in "fc"
                                      else np.float64))
    share = clip_share(a, lo, hi, array_module(a, lo, hi))
    return share.astype(getattr(a, "dtype", np.float64)) if np.ndim(share) else float(share)


def clip_share(a, lo, hi, xp=np):
    """The float64 array behind `inside` (lanes_adjoint.lane_inside broadcasts it too)."""
    share = xp.ones(np.broadcast_shapes(np.shape(a), np.shape(lo), np.shape(hi))
                    if lo is not None and hi is not None else np.shape(a))
    if lo is not None:
        share = share * xp.where(a > lo, 1.0, xp.where(a == lo, 0.5, 0.0))
    if hi is not None:
        share = share * xp.where(a < hi, 1.0, xp.where(a == hi, 0.5, 0.0))
    return share


def inverse_axes(axes):
    """The permutation that undoes `np.transpose(x, axes)` (None stays None: a reversal)."""
    return None if axes is None else tuple(np.argsort(axes))


def dtype_of(x):
    """`x.dtype`; a Python number reads as the 0-d array numpy makes of it (3.0: float64),
    as autograd presents a boxed scalar."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return dtype
    if isinstance(x, (bool, int, float, complex)):
        return np.asarray(x).dtype
    return type(x)


def dict_keys(d):
    return list(d.keys())


def is_mapping(x):
    """Whether `dict(x)` copies x (a dict: it has keys) or reads pairs from it."""
    return hasattr(x, "keys")


def mapping_keys(x):
    """The keys of `dict(x)`'s x where it is a dict (none where it holds pairs)."""
    return list(x.keys()) if hasattr(x, "keys") else []


def merged_keys(*mappings):
    """The keys of `{**a, **b, ...}` in Python's order: each where it first appears."""
    return list(dict.fromkeys(k for m in mappings for k in m.keys()))


def to_tuple(x):
    return tuple(x)


def to_list(x):
    return list(x)


def to_like(g, x):
    """Adjoint of tuple(x)/list(x): the adjoint in the container type of `x`."""
    if isinstance(x, dict):
        return None         # list(d) is d's keys: they carry no derivative
    if isinstance(x, tuple) and hasattr(x, "_fields"):       # a namedtuple
        return type(x)(*g)
    if isinstance(x, (tuple, list)):
        return type(x)(g)
    xp = array_module(x, g)
    if not isinstance(g, (tuple, list)):
        return xp.asarray(g)
    return xp.stack([xp.zeros_like(x[i]) if v is None else v for i, v in enumerate(g)])


def tolist(x):
    return x.tolist()


def reversed_range(*args):
    """`reversed(range(...))` as a range (loops in generated backward code run over it)."""
    return range(*args)[::-1]


def written_part(g, idx, lanes=False):
    """`g[idx]` for the adjoint of `x[idx] = v`: with a repeated integer index, NumPy keeps
    the last write, so the earlier duplicates of `v` get a zero adjoint. Batched by vmap
    (`lanes`), for a boolean mask that differs between examples (rt.MaskIndex): `g` where
    the mask holds and zero elsewhere, each example's part on its own row, for
    rt.lane_unbroadcast to sum per example (the elements selected, in a row, would not say
    which example they are of; rt.index_update takes this form back)."""
    if lanes and isinstance(idx, MaskIndex):
        mask = idx[0]
        xp = array_module(g)
        return xp.where(mask.reshape(mask.shape + (1,) * (np.ndim(g) - mask.ndim)), g,
                        xp.zeros((), g.dtype))
    picked = g[idx]
    if is_container(g) or _is_basic_index(idx):
        return picked
    xp = array_module(g)
    ids = xp.arange(np.size(picked)).reshape(np.shape(picked))
    last_writer = xp.full(np.shape(g), -1)
    last_writer[idx] = ids
    return picked * (last_writer[idx] == ids)


def broadcast_like(t, out):
    """A tangent broadcast to the shape of the result it belongs to (forward mode of `+`)."""
    if type(out) is Ragged:            # under vmap, a selection of a mask
        values = out._operand(t, "a tangent")
        return out.like(array_module(out.values).broadcast_to(values, out.values.shape) * 1)
    try:
        if t.shape == out.shape:
            return t
    except AttributeError:
        if isinstance(out, (tuple, list, dict)):
            return t        # a container: its adjoint has its structure already
        if np.ndim(out) == 0:
            return t
    return array_module(t, out).broadcast_to(t, np.shape(out)) * 1   # a writable copy


def size_of(x):
    """Number of elements of an array or number (the length of a Jacobian's loop)."""
    return int(np.size(x))


def basis_like(x, i):
    """The i-th standard basis vector shaped like `x` (flat index; 1.0 for a number)."""
    if np.ndim(x) == 0 and not hasattr(x, "dtype"):
        return 1.0
    xp = array_module(x)
    e = xp.zeros(np.shape(x), dtype=getattr(x, "dtype", np.float64))
    e.reshape(-1)[i] = 1
    return e


def basis_of(x, outer=0):
    """Every standard basis vector shaped like `x`, stacked: shape (size,) + shape(x).
    (`outer`: leading axes of x that an enclosing vmap added, not part of its shape.) For a
    pytree, a pytree of such stacks over all its leaves' elements together: leaf k's stack
    is the identity in its own rows, zero in the others' (JAX flattens the same way)."""
    if is_container(x):
        leaves = tree_leaves(x)
        shapes = [tuple(np.shape(leaf))[outer:] for leaf in leaves]
        sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
        starts = np.cumsum([0] + sizes)
        stacks = iter([_basis_rows(leaf, shape, int(starts[-1]), int(start))
                       for leaf, shape, start in zip(leaves, shapes, starts)])
        return tree_map(lambda leaf: next(stacks), x)
    _check_jacobian_leaf(x)
    shape = tuple(np.shape(x))[outer:]
    n = int(np.prod(shape, dtype=np.int64))
    xp = array_module(x)
    eye = xp.eye(n, dtype=_basis_dtype(x)).reshape((n,) + shape)
    if xp is np and len(shape) == 1:
        eye = eye.view(IdentityBasis)     # products with it are their other factor
        eye.flags.writeable = False
        eye.exact = True                  # not its views (x[::-1] of it is no identity)
    return eye


def is_number(x, outer=0):
    """A single number (a 0-d array, a Python float), not a pytree: one output, one vjp."""
    return not is_container(x) and np.ndim(x) == outer


def _basis_dtype(x):
    dtype = getattr(x, "dtype", np.complex128 if isinstance(x, complex) else np.float64)
    return dtype if getattr(dtype, "kind", "f") in "fc" else np.float64


def _basis_rows(leaf, shape, total, start):
    """Rows start.. of a total-row basis: the identity for this leaf's elements."""
    _check_jacobian_leaf(leaf)
    xp = array_module(leaf)
    size = int(np.prod(shape, dtype=np.int64))
    rows = xp.zeros((total, size), dtype=_basis_dtype(leaf))
    rows[start:start + size] = xp.eye(size, dtype=rows.dtype)
    return rows.reshape((total,) + shape)


def _lead_and_sizes(tree, outer):
    """(the outer axes' shape, each leaf's own shape) of a value a Jacobian is taken of
    or for."""
    leaves = tree_leaves(tree)
    for leaf in leaves:
        _check_jacobian_leaf(leaf)
    lead = tuple(np.shape(leaves[0]))[:outer] if leaves else ()
    return lead, [tuple(np.shape(leaf))[outer:] for leaf in leaves]


def _blocks(stacks, shapes, outer):
    """Split each stack's axis `outer` (one row per element of all `shapes`, in order)
    into one block per shape."""
    bounds = np.cumsum([0] + [int(np.prod(s, dtype=np.int64)) for s in shapes])
    return [[np.take(stack, np.arange(bounds[j], bounds[j + 1]), axis=outer)
             if len(shapes) > 1 else stack for j in range(len(shapes))] for stack in stacks]


def jacobian_rows(cotangents, y, x, outer=0):
    """jacrev's Jacobian from the vjps of every output element (`cotangents`: shaped like
    x, each leaf with one leading row per element of out's leaves): JAX's layout, y's
    structure holding x's, each block of shape out_leaf.shape + x_leaf.shape."""
    if not is_container(y) and not is_container(x):
        return np.reshape(cotangents, np.shape(y) + np.shape(x)[outer:])
    lead, out_shapes = _lead_and_sizes(y, outer)
    _, x_shapes = _lead_and_sizes(x, outer)
    blocks = _blocks(tree_leaves(cotangents), out_shapes, outer)   # [x leaf][y leaf]
    per_out = iter([
        _rebuild_leaves(x, [np.reshape(blocks[i][j], lead + out_shapes[j] + x_shapes[i])
                            for i in range(len(x_shapes))])
        for j in range(len(out_shapes))])
    return tree_map(lambda leaf: next(per_out), y)


def jacobian_rows_adj(d, cotangents, y, x, outer=0):
    """The adjoint of jacobian_rows: the Jacobian's blocks back into stacks shaped like
    `cotangents` (which have no row axis where y is one number: one vjp)."""
    lead, out_shapes = _lead_and_sizes(y, outer)
    _, x_shapes = _lead_and_sizes(x, outer)
    if not is_container(y) and not is_container(x):
        return np.reshape(d, np.shape(cotangents))
    blocks = _adjoint_blocks(d, y, lead, out_shapes, x_shapes)      # [y leaf][x leaf]
    xp = array_module(*[b for row in blocks for b in row])
    stacks = [xp.reshape(xp.concatenate([xp.reshape(blocks[j][i], lead + (-1,) + x_shapes[i])
                                         for j in range(len(out_shapes))], axis=outer),
                         np.shape(like))
              for i, like in enumerate(tree_leaves(cotangents))]
    return _rebuild_leaves(x, stacks)


def jacobian_columns(columns, y, x, outer=0):
    """jacfwd's Jacobian from the jvps along every basis tangent of x (`columns`: shaped
    like y, each leaf with one leading row per element of x's leaves): as jacobian_rows."""
    if not is_container(y) and not is_container(x):
        return np.reshape(np.moveaxis(columns, outer, -1), np.shape(y) + np.shape(x)[outer:])
    lead, out_shapes = _lead_and_sizes(y, outer)
    _, x_shapes = _lead_and_sizes(x, outer)
    blocks = _blocks(tree_leaves(columns), x_shapes, outer)      # [y leaf][x leaf]
    per_out = iter([
        _rebuild_leaves(x, [np.reshape(np.moveaxis(blocks[j][i], outer, -1),
                                       lead + out_shapes[j] + x_shapes[i])
                            for i in range(len(x_shapes))])
        for j in range(len(out_shapes))])
    return tree_map(lambda leaf: next(per_out), y)


def jacobian_columns_adj(d, y, x, outer=0):
    """The adjoint of jacobian_columns: the blocks back into stacks shaped like y."""
    lead, out_shapes = _lead_and_sizes(y, outer)
    _, x_shapes = _lead_and_sizes(x, outer)
    if not is_container(y) and not is_container(x):
        flat = np.reshape(d, lead + out_shapes[0] + (-1,))
        return np.moveaxis(flat, -1, outer)
    blocks = _adjoint_blocks(d, y, lead, out_shapes, x_shapes)      # [y leaf][x leaf]
    xp = array_module(*[b for row in blocks for b in row])
    stacks = [xp.concatenate([np.moveaxis(xp.reshape(blocks[j][i], lead + out_shapes[j] +
                                                     (-1,)), -1, outer)
                              for i in range(len(x_shapes))], axis=outer)
              for j in range(len(out_shapes))]
    return _rebuild_leaves(y, stacks)


def _adjoint_blocks(d, y, lead, out_shapes, x_shapes):
    """The blocks of a Jacobian's adjoint `d` as arrays, [y leaf][x leaf]: a block or a
    whole part of `d` that nothing read (None, or a zero number) as zeros of its shape."""
    rows = [[None] * len(x_shapes) if block is None else tree_leaves(block)
            for block in _out_blocks(d, y)]
    found = [b for row in rows for b in row if b is not None and np.ndim(b)]
    xp = array_module(*found) if found else np
    dtype = xp.result_type(*found) if found else np.float64
    return [[xp.zeros(lead + out_shapes[j] + x_shapes[i], dtype) if b is None else
             xp.broadcast_to(b, lead + out_shapes[j] + x_shapes[i])
             for i, b in enumerate(row)] for j, row in enumerate(rows)]


def _out_blocks(d, out):
    """The x-structured blocks of Jacobian `d`, one per leaf of out (in flatten order)."""
    if d is None:
        return [None] * len(tree_leaves(out))
    if isinstance(out, dict):
        return [b for k in out for b in _out_blocks(d[k], out[k])]
    if isinstance(out, (tuple, list)):
        return [b for i, v in enumerate(out) for b in _out_blocks(d[i], v)]
    return [d]


def _rebuild_leaves(like, leaves):
    """`like`'s structure with these leaves, in flatten order (a lone value: the value)."""
    if not is_container(like):
        return leaves[0]
    it = iter(leaves)
    return tree_map(lambda leaf: next(it), like)


def is_identity_basis(x):
    """Whether `x` is the identity basis itself (not a slice, transpose or other view of
    it, which are IdentityBasis objects too but no identity)."""
    return isinstance(x, IdentityBasis) and getattr(x, "exact", False) and \
        x.ndim == 2 and x.shape[0] == x.shape[1]


def _plain(a):
    if isinstance(a, IdentityBasis):
        return a.view(np.ndarray)
    if isinstance(a, (list, tuple)):
        return type(a)(_plain(v) for v in a)
    return a


class IdentityBasis(np.ndarray):
    """The stacked basis vectors of a vector (an identity matrix) that Jacobians push
    through a function: a batched product `A @ e_i` with it is A's columns, so
    rt.lanes_matmul and rt.batched_dot return them without a matrix product. Every other
    operation computes with the plain identity (its results are plain arrays)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [_plain(i) for i in inputs]
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        args = [_plain(a) for a in args]     # also inside lists (np.concatenate([e, y]))
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)

    def copy(self, order="C"):
        return self.view(np.ndarray).copy(order)


def check_jacobian_dtype(x, transform, role, holomorphic=False):
    """JAX's rules for complex numbers in Jacobians. jacfwd's basis tangents are real: of a
    complex argument they give df/dx only, not grad's df/dx - i df/dy, so it takes complex
    arguments only for a holomorphic f (then df/dx is f'(z)). jacrev takes complex
    arguments (rows of grad's gradients) but not complex outputs, unless holomorphic. With
    holomorphic=True, arguments and outputs are complex."""
    if type(x) is np.ndarray and x.dtype.kind == ("c" if holomorphic else "f"):
        return                             # (the usual case, at every call: kept short)
    for leaf in tree_leaves(x):
        _check_jacobian_leaf(leaf)
        kind = np.result_type(leaf).kind if not isinstance(leaf, numbers.Number) else \
            "c" if isinstance(leaf, complex) else "f"
        if holomorphic and kind != "c":
            raise TransformError(
                f"{transform}(holomorphic=True) takes complex {role}s; this {role} is of type "
                f"{np.result_type(leaf)}.\n  hint: pass complex values (x.astype(complex)), "
                f"or leave holomorphic out for a function of real values.")
        if not holomorphic and kind == "c" and (transform, role) in (
                ("jacfwd", "argument"), ("jacrev", "output")):
            why, fix = (("its real basis tangents would give df/dx only",
                         "for a real-valued f use tp.jacrev (or tp.grad), which gives "
                         "df/dx - i df/dy as grad does") if role == "argument" else
                        ("a complex output has no one real Jacobian",
                         "else take the Jacobians of np.real(f(z)) and np.imag(f(z))"))
            raise TransformError(
                f"{transform} of a function with a complex {role} needs holomorphic=True, "
                f"as in JAX: {why}.\n  hint: pass holomorphic=True if f is holomorphic "
                f"(the result is f'(z)); {fix}.")


def _check_jacobian_leaf(x):
    if not isinstance(x, numbers.Number) and getattr(x, "dtype", None) is None:
        raise TransformError(
            f"jacfwd, jacrev and hessian take Jacobians of arrays and numbers (in tuples, "
            f"lists and dicts) with respect to such; this is a {type(x).__name__}.\n  hint: "
            f"return arrays (np.asarray), and pass other values as arguments the Jacobian "
            f"is not taken for.")


def draw(generator, method, size):
    """A standard draw (`standard_normal`, `random`, `standard_exponential`) from a numpy
    Generator or RandomState that the user's function calls (`rng.normal(...)` is
    `loc + scale * draw(rng, "standard_normal", size)`, as numpy computes it)."""
    if not isinstance(generator, (np.random.Generator, np.random.RandomState)):
        raise TypeError(f"expected a numpy random Generator or RandomState, got "
                        f"{type(generator).__name__}")
    return getattr(generator, method)(size=None if size is None else tuple(size)
                                      if not isinstance(size, (int, np.integer)) else size)


class LaneGenerators:
    """One numpy random Generator per example (vmap of `np.random.default_rng(seed)` made
    in the code): each example draws from its own, as a loop over examples would."""

    def __init__(self, generators):
        self.generators = list(generators)


def lane_generators(n, seed, seed_batched):
    """The `n` examples' generators, from their seeds (one seed for all, or one each)."""
    seeds = list(seed) if seed_batched else [seed] * n
    return LaneGenerators(np.random.default_rng(s) for s in seeds)


def lane_draw(generators, method, size):
    """rt.draw from each example's generator, stacked along the batch axis."""
    if not isinstance(generators, LaneGenerators):
        raise TransformError("vmap: a random draw cannot be batched: its generator differs "
                             "between examples.")
    return np.stack([draw(g, method, size) for g in generators.generators])


def lead_size(n, size):
    """The size of a draw for `n` examples at once: (n,) followed by each example's size."""
    if size is None:
        return (n,)
    return (n,) + (tuple(size) if not isinstance(size, (int, np.integer)) else (size,))
