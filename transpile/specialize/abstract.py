"""What jit knows about a value before it exists: its shape and dtype, or nothing.

A specialization is made for the *kind* of arguments it is called with: for each array its
array module (numpy or cupy), shape and dtype; for a Python number its type (numpy treats a
Python float as "weak": `float32_array * 2.0` stays float32); for a tuple, list or dict the
same, item by item; for a static argument its value. `argument_key` turns arguments into the
cache key; `Array`, `Scalar` and `Sequence` are what shape inference (shapes.py) propagates.
"""
import numpy as np


class Array:
    """An array (or a Python number, `weak`) of known shape and dtype."""
    __slots__ = ("shape", "dtype", "weak")

    def __init__(self, shape, dtype, weak=False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak = weak

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def dummy(self):
        """A stand-in value of this kind with one element: numpy computes the result dtype
        of an operation on it exactly as on the real value (weak Python scalars included)."""
        if self.weak:
            return {"b": True, "i": 3, "u": 3, "f": 0.5, "c": 0.5 + 0.25j}[self.dtype.kind]
        return np.full((1,) * len(self.shape), 0.5 if self.dtype.kind in "fc" else 1,
                       dtype=self.dtype)

    def __eq__(self, other):
        return isinstance(other, Array) and (self.shape, self.dtype, self.weak) == \
            (other.shape, other.dtype, other.weak)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak))

    def __repr__(self):
        kind = "weak " if self.weak else ""
        return f"{kind}{self.dtype}{list(self.shape)}"


class Sequence:
    """A tuple or list of known length whose items are abstract values (or None)."""
    __slots__ = ("items", "kind")

    def __init__(self, items, kind=tuple):
        self.items = tuple(items)
        self.kind = kind

    def __eq__(self, other):
        return isinstance(other, Sequence) and self.kind is other.kind and \
            self.items == other.items

    def __hash__(self):
        return hash((self.kind, self.items))

    def __repr__(self):
        return f"{self.kind.__name__}{list(self.items)}"


_PY_DTYPES = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}


def abstract_of(value):
    """The abstract value of an argument, or None (an object shape inference can't see)."""
    t = type(value)
    if t in _PY_DTYPES:
        return Array((), _PY_DTYPES[t], weak=True)
    if t is np.ndarray or t.__module__.startswith("cupy") and hasattr(value, "shape"):
        return Array(value.shape, value.dtype)
    if isinstance(value, np.generic):
        return Array((), value.dtype)
    if t in (tuple, list):
        return Sequence([abstract_of(v) for v in value], t)
    return None


def argument_key(value):
    """The part of a specialization's cache key one argument contributes: what its code
    may depend on (array type, shape, dtype; the type of a Python number; structure).
    Called on every call of a jitted function, so written for speed."""
    t = type(value)
    if t is _ndarray:
        return (value.shape, value.dtype)
    if t is tuple or t is list:
        return (t,) + tuple([(v.shape, v.dtype) if type(v) is _ndarray else argument_key(v)
                             for v in value])
    if t in _PY_DTYPES:
        return t
    if t is dict:
        return (dict,) + tuple((k, argument_key(v)) for k, v in value.items())
    if t.__module__.startswith("cupy") and hasattr(value, "shape"):
        return (t, value.shape, value.dtype)
    if isinstance(value, np.generic):
        return (t,)
    if value is None:
        return None
    return ("object", t)


_ndarray = np.ndarray


def array_module_name(values):
    """"cupy" when any argument (searched through tuples, lists and dicts) is a cupy array,
    else "numpy": the specialization binds `np` in its module to that module."""
    todo = list(values)
    while todo:
        v = todo.pop()
        t = type(v)
        if t in (tuple, list):
            todo.extend(v)
        elif t is dict:
            todo.extend(v.values())
        elif t.__module__.startswith("cupy") and hasattr(v, "shape"):
            return "cupy"
    return "numpy"


def stand_in(values):
    """Values of the same kind as `values` (arrays as zero-stride views of one element,
    so no data is kept alive), for specializing later to the kind of a call already
    made."""
    def one(v):
        t = type(v)
        if t is np.ndarray:
            return np.broadcast_to(np.zeros((), v.dtype), v.shape)
        if t in (tuple, list):
            return t(one(x) for x in v)
        if t is dict:
            return {k: one(x) for k, x in v.items()}
        if t.__module__.startswith("cupy") and hasattr(v, "shape"):
            return np.broadcast_to(np.zeros((), v.dtype), v.shape)
        return v
    return tuple(one(v) for v in values)
