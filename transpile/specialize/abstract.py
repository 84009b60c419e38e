"""What jit knows about a value before it exists: its shape and dtype, or nothing.

A specialization is made for the *kind* of arguments it is called with: for each array its
array module (numpy or cupy), shape and dtype; for a Python number its type (numpy treats a
Python float as "weak": `float32_array * 2.0` stays float32); for a tuple, list or dict the
same, item by item; for a static argument its value. `argument_key` turns arguments into the
cache key; `Array`, `Number` and `Sequence` are what shape inference (shapes.py) propagates.
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
        # the same class too: an Identity is one particular array of its shape
        return type(other) is type(self) and (self.shape, self.dtype, self.weak) == \
            (other.shape, other.dtype, other.weak)

    def __hash__(self):
        return hash((type(self), self.shape, self.dtype, self.weak))

    def __repr__(self):
        kind = "weak " if self.weak else ""
        return f"{kind}{self.dtype}{list(self.shape)}"


class Identity(Array):
    """The identity matrix that `rt.basis_of` makes of a vector (its basis vectors,
    stacked): a Jacobian pushes it through the function, and a product with it is its other
    factor (lanes.py decides `rt.lanes_matmul(A, basis)` into A's columns)."""
    __slots__ = ()

    def __repr__(self):
        return f"identity {self.dtype}{list(self.shape)}"


# the dtypes whose numbers can be either kind inside a loop (Number) and that compiled
# scalar loops (scalar_loops.py) compute with
NUMBER_DTYPES = (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_))


class Number:
    """A number of known dtype (float64, int64 or bool) that is a Python number on some paths
    and a numpy scalar on others: `x = 0.9 * x + 0.1 * np.sin(x)` in a loop starts as the
    argument 0.7 and is an np.float64 from the first trip on. The two behave alike except in
    numpy's promotion with lower-precision arrays (a Python float is weak) and in the type
    a caller gets back, so only passes that handle both kinds read it (scalar loops keep a
    flag of which it is); every other pass sees a value it does not know."""
    __slots__ = ("dtype",)
    shape = ()

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def variants(self):
        """The two kinds this number can be."""
        return (Array((), self.dtype, weak=True), Array((), self.dtype))

    def __eq__(self, other):
        return isinstance(other, Number) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("number", self.dtype))

    def __repr__(self):
        return f"weak-or-not {self.dtype}[]"


def join_values(a, b):
    """What a value is on either of two paths: a if both agree, a Number where one is a
    Python number and the other a numpy scalar of the same dtype, else None (unknown)."""
    if a == b:
        return a
    kinds = [v for v in (a, b) if isinstance(v, (Array, Number)) and v.shape == () and
             v.dtype in NUMBER_DTYPES]
    if len(kinds) == 2 and kinds[0].dtype == kinds[1].dtype:
        return Number(a.dtype)
    return None


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


# the dtype numpy gives each Python number type (as a weak scalar)
PY_DTYPES = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}


def abstract_of(value):
    """The abstract value of an argument, or None (an object shape inference can't see)."""
    t = type(value)
    if t in PY_DTYPES:
        return Array((), PY_DTYPES[t], weak=True)
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
    if t in PY_DTYPES:
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


def argument_guard(keys):
    """A function of the arguments whose argument_keys are `keys` that returns True only for
    arguments with those same keys: the check a jitted call makes before running the code
    it ran last, without building the key (tuples of shapes, hashing, a lookup). False may
    also mean "cannot tell" (a dtype equal but not the same object): the caller then builds
    the key. None where a key has parts the guard does not check (dicts, other objects)."""
    lines, env, dtypes, count = [], {"_ndarray": _ndarray}, {}, [0]

    def fresh(prefix):
        count[0] += 1
        return f"{prefix}{count[0]}"

    def dtype_name(dtype):
        if dtype not in dtypes:
            dtypes[dtype] = fresh("dtype")
            env[dtypes[dtype]] = dtype
        return dtypes[dtype]

    def check(expr, key):
        if key is None:
            lines.append(f"if {expr} is not None: return False")
        elif key in PY_DTYPES:
            lines.append(f"if type({expr}) is not {key.__name__}: return False")
        elif isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], tuple) and \
                isinstance(key[1], np.dtype):
            lines.append(f"if type({expr}) is not _ndarray or {expr}.shape != {key[0]!r} or "
                         f"{expr}.dtype is not {dtype_name(key[1])}: return False")
        elif isinstance(key, tuple) and key and key[0] in (tuple, list):
            kind = key[0].__name__
            lines.append(f"if type({expr}) is not {kind} or len({expr}) != {len(key) - 1}: "
                         f"return False")
            for i, item in enumerate(key[1:]):
                name = fresh("item")
                lines.append(f"{name} = {expr}[{i}]")
                if check(name, item) is None:
                    return None
        elif isinstance(key, tuple) and len(key) == 3 and key[0] == "static" and \
                key[1] in (int, str, bool, type(None)):
            lines.append(f"if type({expr}) is not {key[1].__name__} or {expr} != {key[2]!r}: "
                         f"return False")
        else:
            return None
        return True

    params = [f"a{i}" for i in range(len(keys))]
    for p, key in zip(params, keys):
        if check(p, key) is None:
            return None
    text = f"def guard({', '.join(params)}):\n" + \
        "".join(f"    {line}\n" for line in lines) + "    return True\n"
    exec(compile(text, "<jit guard>", "exec"), env)  # noqa: S102 - text made above
    return env["guard"]


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
