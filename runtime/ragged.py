"""`x[mask]` under vmap when the boolean mask differs between examples.

Each example selects its own number of elements, so the batched result has no shape. A
`Ragged` holds the selections of all examples in a row (example 0's first, each in the
order its mask selects them: exactly what `x[mask]` gives on the batched arrays) and the
example each element belongs to. What the vmap pass does with a selection works on that:

- elementwise arithmetic (numpy ufuncs, `np.where`, `np.clip`) with other selections of
  as many elements per example, with per-example values (rt.align_lanes lines them up with
  the elements) and with numbers or arrays that broadcast against one element;
- reductions (`np.sum`, `np.mean`, `np.max`, `np.min`, `np.prod`, `np.any`, `np.all`) over
  the selected elements of each example, or along an element's own axes;
- writing back through a mask that selects as many elements per example
  (`y[mask] = np.sqrt(y[mask])`, `y[y < 0] *= 0.1`), and the adjoints of all of these.

Anything else (its shape, indexing it, sorting it, a matrix product) raises a
TransformError, since a batched result of it would be ragged: a Ragged has no `__array__`
and no `shape`, so no helper can read it as an array by mistake.
"""
import numbers
import warnings

import numpy as np

from .backend import array_module
from .errors import TransformError

RAGGED_MESSAGE = ("a boolean mask that differs between examples selects a different number "
                  "of elements in each: the batched result would be ragged. hint: use "
                  "np.where(mask, x, 0) instead")


def ragged_error(what=None):
    detail = f" ({what} of such a selection is not supported under vmap)" if what else ""
    return TransformError(RAGGED_MESSAGE.replace(": the batched", detail + ": the batched"))


class Ragged(np.lib.mixins.NDArrayOperatorsMixin):
    """The elements each example's mask selected. values: (total, *element) for all
    examples in a row; lanes: the example of each; counts: how many each example has;
    mask: the batched mask (writes back through a mask must select as many)."""

    # joined: made by rt.select from two paths' selections whose counts differ in some
    # example (then only elementwise work on it alone is defined, see same_counts)
    joined = False

    def __init__(self, values, lanes, counts, mask, joined=False):
        self.values, self.lanes, self.counts, self.mask = values, lanes, counts, mask
        self.joined = joined

    @classmethod
    def gather(cls, x, mask):
        """x[mask] per example: x batched (n, ...), mask batched (n, ...) boolean, of rank
        at most x's."""
        xp = array_module(x, mask)
        mask = xp.asarray(mask)
        n = mask.shape[0]
        lanes = xp.nonzero(mask)[0]
        counts = mask.reshape(n, -1).sum(axis=1)
        return cls(x[mask], lanes, counts, mask)

    def like(self, values):
        """The same selection holding other values (as many elements)."""
        return Ragged(values, self.lanes, self.counts, self.mask, self.joined)

    # -- what a batched value is asked

    @property
    def element_shape(self):
        return self.values.shape[1:]

    @property
    def ndim(self):
        """Rank of the batched value: the batch axis, the axis of the selected elements, an
        element's axes (rt.lane_axis reads it)."""
        return 2 + len(self.element_shape)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        raise ragged_error("the shape")

    @property
    def size(self):
        raise ragged_error("the size")

    def __array__(self, *args, **kwargs):
        raise ragged_error("this use")

    def __len__(self):
        raise ragged_error("len()")

    def __iter__(self):
        raise ragged_error("a loop over the elements")

    def __getitem__(self, index):
        raise ragged_error("indexing")

    def __setitem__(self, index, value):
        raise ragged_error("writing into an element")

    def __bool__(self):
        raise ragged_error("the truth value")

    def astype(self, dtype, copy=True):
        return self.like(self.values.astype(dtype, copy=copy))

    def copy(self):
        return self.like(self.values.copy())

    def __repr__(self):
        return f"Ragged(counts={self.counts.tolist()}, values={self.values!r})"

    # -- lining up with other operands

    def same_counts(self, other, what):
        if other.counts is self.counts:
            return
        if np.shape(other.counts) != np.shape(self.counts) or \
                not bool(array_module(self.counts).all(other.counts == self.counts)):
            if self.joined or other.joined:
                # (the examples that differ may be ones whose path is discarded later, or
                # not: nothing here tells)
                raise ragged_error("combining a selection joined from the paths of an `if` "
                                   "whose condition differs between examples with another "
                                   "of other lengths")
            raise ValueError(f"{what}: the boolean masks select different numbers of elements "
                             f"in an example ({self.counts.tolist()} and "
                             f"{other.counts.tolist()} per example), which numpy cannot "
                             "broadcast together")

    def per_element(self, value, outer=0):
        """A batched per-example `value` (n, *shape) as one entry per selected element,
        lined up with the elements' axes as numpy broadcasts `value` against one example's
        selection (count, *element)."""
        if outer:
            raise ragged_error("vmap of vmap")
        xp = array_module(value)
        value = xp.asarray(value)
        per_example = value.shape[1:]
        if len(per_example) > len(self.element_shape):
            if len(per_example) == len(self.element_shape) + 1 and per_example[0] == 1:
                value = value.reshape(value.shape[:1] + per_example[1:])
                per_example = per_example[1:]
            else:
                raise ragged_error("combining with a value that has an axis of its own "
                                   "for the selected elements")
        spread = value[self.lanes]
        missing = len(self.element_shape) - len(per_example)
        return self.like(spread.reshape(spread.shape[:1] + (1,) * missing + per_example))

    def _operand(self, value, what):
        if isinstance(value, Ragged):
            self.same_counts(value, what)
            return value.values
        if isinstance(value, (numbers.Number, np.generic)) or value is None:
            return value
        if np.ndim(value) > len(self.element_shape):
            # an array as long as the selection: it has one entry per selected element of
            # one example, which has no meaning for all of them
            raise ragged_error(f"{what} with an array of {np.ndim(value)} axes")
        return value

    # -- numpy protocols

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None or "where" in kwargs:
            raise ragged_error(f"np.{ufunc.__name__}.{method}" if method != "__call__"
                               else f"np.{ufunc.__name__} with out= or where=")
        kwargs.pop("out", None)
        args = [self._operand(v, f"np.{ufunc.__name__}") for v in inputs]
        result = ufunc(*args, **kwargs)
        if isinstance(result, tuple):
            return tuple(self.like(r) for r in result)
        return self.like(result)

    def __array_function__(self, func, types, args, kwargs):
        name = getattr(func, "__name__", str(func))
        if name == "ndim":
            return self.ndim
        if name in _REDUCTIONS:
            return _reduce(name, *args, **kwargs)
        if name in ("where", "clip"):
            first = next(a for a in args if isinstance(a, Ragged))
            return first.like(func(*[first._operand(a, f"np.{name}") for a in args],
                                   **kwargs))
        if name in ("real", "imag", "conj", "conjugate"):
            return args[0].like(func(args[0].values))
        raise ragged_error(f"np.{name}")


def _reduce(name, a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    """A reduction of a batched selection over batched axes `axis` (1: the selected
    elements of each example; 2, ...: an element's axes)."""
    if out is not None or kwargs.get("where") is not None:
        raise ragged_error(f"np.{name} with out= or where=")
    if not isinstance(a, Ragged):
        raise ragged_error(f"np.{name} with a selection as other than its array")
    if axis is None:
        raise ragged_error(f"np.{name} over the examples")
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    axes = sorted({int(k) % a.ndim for k in axes})
    if 0 in axes:
        raise ragged_error(f"np.{name} over the examples")
    options = {"dtype": dtype} if dtype is not None and name not in _NO_DTYPE else {}
    if name == "mean":
        # numpy's dtype: float64 for integers, the float's own otherwise (or `dtype`)
        want = np.mean(a.values[:1], axis=0, dtype=dtype).dtype
        total = _reduce("sum", a, axes, dtype=want, keepdims=keepdims)
        kept = int(np.prod([a.element_shape[k - 2] for k in axes if k >= 2]))
        if 1 not in axes:
            return a.like((total.values / kept).astype(want, copy=False))
        xp = array_module(a.values)
        counts = a.counts.reshape(a.counts.shape + (1,) * (np.ndim(total) - 1)) * kept
        with np.errstate(invalid="ignore", divide="ignore"):
            if not bool(xp.all(counts)):
                warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=3)
            return (total / counts).astype(want, copy=False)
    func = _REDUCTIONS[name]
    element_axes = tuple(k - 1 for k in axes if k >= 2)
    values = a.values
    if element_axes:
        values = func(values, axis=element_axes, keepdims=keepdims, **options)
    if 1 not in axes:
        return a.like(values)
    return _segment(name, a, values, keepdims, options)


def _segment(name, a, values, keepdims, options):
    """values (total, ...) reduced per example: (n, ...)."""
    xp = array_module(values)
    n = a.counts.shape[0]
    probe = _REDUCTIONS[name](values[:1], axis=0, **options)     # numpy's result dtype
    if name in ("max", "min") and not bool(xp.all(a.counts)):
        raise ValueError(f"zero-size array to reduction operation {_UFUNCS[name].__name__} "
                         "which has no identity (an example's mask selects nothing)")
    if name in ("max", "min"):
        first = xp.cumsum(a.counts) - a.counts
        out = values[first].astype(probe.dtype, copy=True)
    else:
        out = xp.full((n,) + values.shape[1:], _IDENTITY[name], dtype=probe.dtype)
    _UFUNCS[name].at(out, a.lanes, values.astype(probe.dtype, copy=False))
    if keepdims:
        out = out.reshape(out.shape[:1] + (1,) + out.shape[1:])
    return out


_REDUCTIONS = {"sum": np.sum, "prod": np.prod, "max": np.max, "amax": np.max, "min": np.min,
               "amin": np.min, "any": np.any, "all": np.all, "mean": np.mean}
_NO_DTYPE = {"max", "amax", "min", "amin", "any", "all"}
_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "amax": np.maximum,
           "min": np.minimum, "amin": np.minimum, "any": np.logical_or, "all": np.logical_and}
_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}


class RaggedShape(tuple):
    """rt.example_shape of a Ragged: an element's shape, marked (rt.lane_unbroadcast of an
    adjoint to it gives the adjoint as a Ragged of the same selection)."""

    def __new__(cls, ragged):
        shape = super().__new__(cls, ragged.element_shape)
        shape.ragged = ragged
        return shape


def unbroadcast_to_ragged(g, like):
    """The adjoint `g` of a selection `like`, as a Ragged: `g` is one already (summed over
    the element axes broadcasting added), or is spread over the batched array the mask
    indexes (rt.written_part's form), or is a per-example value broadcast over the
    elements."""
    if isinstance(g, Ragged):
        g = _restricted(g, like)
        values = g.values
        extra = values.ndim - like.values.ndim
        if extra > 0:
            raise ragged_error("an adjoint with more axes than the selection")
        if values.shape[1:] != like.values.shape[1:]:
            axes = tuple(1 + i for i, (m, k) in enumerate(zip(like.values.shape[1:],
                                                               values.shape[1:]))
                         if m == 1 and k != 1)
            values = values.sum(axis=axes, keepdims=True) if axes else values
            values = array_module(values).broadcast_to(values, like.values.shape)
        return like.like(values)
    mask = like.mask
    if mask is None:                 # (joined from two paths' selections of other shapes)
        raise ragged_error("an adjoint")
    xp = array_module(g, mask)
    g = xp.asarray(g)
    if g.ndim >= mask.ndim and g.shape[:mask.ndim] == mask.shape:
        return like.like(xp.broadcast_to(g[mask], like.values.shape))
    spread = like.per_element(g)
    return like.like(xp.broadcast_to(spread.values, like.values.shape))


def _restricted(g, like):
    """The adjoint `g` of a selection as many elements per example as `like` has. Where an
    example's counts differ, `g` came from a join of two paths' selections (rt.select) and
    belongs to the path that example did not take here: it gets zeros, which the join's
    adjoint discards anyway (an example on this path has, by numpy's rules, an adjoint of
    its own selection's length)."""
    xp = array_module(g.values)
    same = g.counts == like.counts
    if bool(xp.all(same)):
        return g
    if g.element_shape != like.element_shape:
        raise ragged_error("an adjoint")
    out = xp.zeros(like.values.shape, dtype=g.values.dtype)
    out[same[like.lanes]] = g.values[same[g.lanes]]
    return like.like(out)


def unbroadcast_ragged(g, shape):
    """The adjoint `g` (a Ragged) of a per-example value of shape `shape` that was
    broadcast over the selected elements: summed over them per example, and over the
    element axes that broadcasting added or stretched."""
    per = (None,) + tuple(g.element_shape)       # None: the axis of the selected elements
    shape = tuple(shape)
    lead = len(per) - len(shape)
    if lead <= 0:
        if lead < 0 or shape[0] != 1:
            raise ragged_error("an adjoint of a value with one entry per selected element")
        # the value had a length-1 axis for the elements: summed over them, that axis kept
        reduced = _unbroadcast_elements(g, shape[1:], 0)
        out = _segment("sum", g, reduced.values, False, {})
        return out.reshape(out.shape[:1] + (1,) + out.shape[1:])
    reduced = _unbroadcast_elements(g, shape, lead - 1)
    return _segment("sum", g, reduced.values, False, {})


def _unbroadcast_elements(g, shape, dropped):
    """g's values summed over the first `dropped` element axes and over the axes where
    `shape` (the rest of them) has 1 and g does not."""
    values = g.values
    axes = tuple(range(1, 1 + dropped)) + tuple(
        1 + dropped + i for i, m in enumerate(shape)
        if m == 1 and values.shape[1 + dropped + i] != 1)
    if axes:
        values = values.sum(axis=axes, keepdims=True)
        values = values.reshape(values.shape[:1] + values.shape[1 + dropped:])
    return g.like(values)
