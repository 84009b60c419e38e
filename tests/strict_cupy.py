"""A stand-in for cupy on the CPU that is as strict as cupy about mixing array modules.

cupy refuses what numpy forgives: a numpy array as an operand of a cupy operation
("Unsupported type <class 'numpy.ndarray'>"), a list as a ufunc operand, and any implicit
conversion of a device array to numpy (`np.asarray(x)` raises "Implicit conversion to a
NumPy array is not allowed"). Generated code and runtime helpers that allocate with numpy or
convert with np.asarray work on numpy arrays and fail on a GPU, where CI cannot look. This
module makes those mistakes fail here:

- `DeviceArray` wraps a numpy array, as a cupy array wraps device memory. Its type lives in
  a module named "cupy...", so `runtime.backend.array_module` and jit's backend choice take
  it for a cupy array. Operators, ufuncs and numpy functions reach it through
  `__array_ufunc__` / `__array_function__` (as cupy's do) and raise cupy's errors when a
  plain numpy array or a list is mixed in; `__array__` raises, so np.asarray of it fails.
  0-d results stay 0-d device arrays (cupy's reductions and indexing return no scalars).
- `strict_cupy()` is the module: numpy's functions returning DeviceArrays, `asarray`,
  `asnumpy`, `RawKernel` (CUDA source compiled by the host C++ compiler, as in
  cuda_check.host_cupy), `cuda` with no device, and `linalg`/`fft` namespaces;
  `strict_cupyx()` the modules of cupyx.scipy.special (scipy's functions, on the device).

tests/test_gpu.py runs every transformation on these arrays without a GPU, and on real cupy
arrays where a GPU is lent.
"""
import copy
import operator
import types

import numpy as np

from tests import cuda_check


def _refuse(value):
    if isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)}")
    if isinstance(value, list):
        raise TypeError(f"Unsupported type {type(value)}")


def _unwrap(value, strict):
    """DeviceArrays (inside tuples and lists too) to their numpy data; with `strict`, a plain
    numpy array among them is cupy's TypeError."""
    if isinstance(value, DeviceArray):
        return value._data
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, strict) for v in value)
    if strict and isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)}")
    return value


def _wrap(value):
    if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, DeviceArray):
        if isinstance(value, np.generic) or value.dtype != object:
            return DeviceArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class _Flags:
    """cupy's flags: contiguity and ownership only (no `writeable`)."""

    def __init__(self, data):
        self.c_contiguous = data.flags.c_contiguous
        self.f_contiguous = data.flags.f_contiguous
        self.owndata = data.flags.owndata


class DeviceArray:
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, data):
        self._data = data

    # ---- what cupy forbids -------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for v in inputs:
            _refuse(v)
        args = [_unwrap(v, True) for v in inputs]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o, True) for o in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        if not _cupy_has(func):
            raise TypeError(f"no implementation found for '{func.__module__}."
                            f"{func.__name__}' on types that implement __array_function__: "
                            "[<class 'cupy.ndarray'>]")
        args = _unwrap(args, True)
        kwargs = {k: _unwrap(v, True) for k, v in kwargs.items()}
        return _wrap(func(*args, **kwargs))

    # ---- attributes --------------------------------------------------------------------
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    itemsize = property(lambda self: self._data.itemsize)
    nbytes = property(lambda self: self._data.nbytes)
    strides = property(lambda self: self._data.strides)
    flags = property(lambda self: _Flags(self._data))
    T = property(lambda self: DeviceArray(self._data.T))
    mT = property(lambda self: DeviceArray(self._data.mT))
    real = property(lambda self: DeviceArray(self._data.real))
    imag = property(lambda self: DeviceArray(self._data.imag))

    @property
    def data(self):                  # cupy's memory pointer (NCCL reads through it)
        return types.SimpleNamespace(ptr=self._data.ctypes.data)

    def get(self):
        return self._data.copy()

    def item(self):
        return self._data.item()

    def tolist(self):
        return self._data.tolist()

    def __getattr__(self, name):               # reshape, sum, astype, ...: results wrapped
        attr = getattr(self._data, name)
        if not callable(attr):
            return _wrap(attr)

        def method(*args, **kwargs):
            kwargs = {k: _unwrap(v, True) for k, v in kwargs.items()}
            return _wrap(attr(*_unwrap(args, True), **kwargs))
        return method

    def __getitem__(self, key):
        return _wrap(self._data[_unwrap(key, False)])

    def __setitem__(self, key, value):
        self._data[_unwrap(key, False)] = _unwrap(value, True)

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return (DeviceArray(np.asarray(row)) for row in self._data)

    def __bool__(self):
        return bool(self._data)

    def __float__(self):
        return float(self._data)

    def __int__(self):
        return int(self._data)

    def __complex__(self):
        return complex(self._data)

    def __index__(self):
        return operator.index(self._data.item())

    def __copy__(self):
        return DeviceArray(self._data.copy())

    def __deepcopy__(self, memo):
        return DeviceArray(copy.deepcopy(self._data, memo))

    def __repr__(self):
        return "device" + repr(self._data)


DeviceArray.__module__ = "cupy._core.core"      # what array_module and jit look for


def _operator(ufunc, reflected=False):
    if reflected:
        return lambda self, other: ufunc(other, self)
    return lambda self, other: ufunc(self, other)


for _name, _ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                      ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul),
                      ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                      ("lshift", np.left_shift), ("rshift", np.right_shift)):
    setattr(DeviceArray, f"__{_name}__", _operator(_ufunc))
    setattr(DeviceArray, f"__r{_name}__", _operator(_ufunc, reflected=True))
for _name, _ufunc in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                      ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    setattr(DeviceArray, f"__{_name}__", _operator(_ufunc))
for _name, _ufunc in (("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
                      ("invert", np.invert)):
    setattr(DeviceArray, f"__{_name}__", lambda self, _u=_ufunc: _u(self))


def _in_place(name):
    def op(self, other):
        _refuse(other)
        getattr(self._data, f"__i{name}__")(_unwrap(other, True))
        return self
    return op


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor"):
    setattr(DeviceArray, f"__i{_name}__", _in_place(_name))


def _function(fn):
    """numpy's `fn` as cupy's: numpy arrays refused among the array arguments, results on
    the device."""
    def call(*args, **kwargs):
        kwargs = {k: _unwrap(v, True) for k, v in kwargs.items()}
        return _wrap(fn(*_unwrap(args, True), **kwargs))
    call.__name__ = getattr(fn, "__name__", "function")
    return call


class _UFunc:
    """A numpy ufunc as cupy's: called, reduced or accumulated on device arrays."""

    def __init__(self, ufunc):
        self.ufunc = ufunc
        for method in ("reduce", "accumulate", "outer", "at", "reduceat"):
            setattr(self, method, _function(getattr(ufunc, method)))
        self.__name__ = ufunc.__name__
        self.nin, self.nout = ufunc.nin, ufunc.nout

    def __call__(self, *args, **kwargs):
        return _function(self.ufunc)(*args, **kwargs)


def _namespace(name, source, only=None):
    """`source`'s functions as device functions, limited to the names in `only` (the real
    cupy's, where it can be imported: code that calls a numpy function cupy lacks, such as
    np.errstate, must fail here as on a GPU)."""
    module = types.ModuleType(name)
    for attr in dir(source):
        if attr.startswith("__") or only is not None and attr not in only:
            continue
        value = getattr(source, attr)
        if isinstance(value, np.ufunc):
            value = _UFunc(value)
        elif callable(value) and not isinstance(value, type):
            value = _function(value)
        setattr(module, attr, value)
    return module


def strict_cupyx():
    """cupyx with its scipy.special: scipy's functions as device functions."""
    import scipy.special
    special = _namespace("cupyx.scipy.special", scipy.special)
    scipy_ns = types.ModuleType("cupyx.scipy")
    scipy_ns.special = special
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = scipy_ns
    return {"cupyx": cupyx, "cupyx.scipy": scipy_ns, "cupyx.scipy.special": special}


class _Device:
    """cupy.cuda.Device on the stand-in: a context that makes device `id` current."""

    def __init__(self, index=0):
        self.id = index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        pass

    def synchronize(self):
        pass


def with_gpus(module, count, nccl):
    """`module` (strict_cupy()) seeing `count` GPUs, with `nccl` as cupy.cuda.nccl (a
    stand-in NCCL on host memory, tests/test_pmap_nccl.py): pmap(backend="gpu") runs."""
    stream = types.SimpleNamespace(ptr=0, done=True, synchronize=lambda: None)
    module.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: count),
        Device=_Device, nccl=nccl, get_current_stream=lambda: stream)
    return module


def _real_cupy():
    try:                        # importable without a GPU (cupy-cuda12x from the test extra)
        import cupy
        return cupy if not getattr(cupy, "_transpile_stand_in", False) else None
    except Exception:
        return None


_REAL_CUPY = _real_cupy()       # read once, before any test puts a stand-in in its place


def _cupy_has(func):
    """Whether the real cupy has numpy's `func` (np.linalg.multi_dot it has not)."""
    if _REAL_CUPY is None:
        return True
    where = _REAL_CUPY
    for part in (func.__module__ or "numpy").split(".")[1:]:
        if part.startswith("_"):            # numpy._core.fromnumeric and the like
            break
        where = getattr(where, part, None)
        if where is None:
            return False
    return hasattr(where, func.__name__)


def _names(module):
    return None if module is None else set(dir(module))


def strict_cupy():
    """The stand-in cupy module (see the module docstring)."""
    real = _REAL_CUPY
    module = _namespace("cupy", np, _names(real))
    module.linalg = _namespace("cupy.linalg", np.linalg, _names(getattr(real, "linalg", None)))
    module.fft = _namespace("cupy.fft", np.fft, _names(getattr(real, "fft", None)))
    stride_tricks = getattr(getattr(real, "lib", None), "stride_tricks", None)
    module.lib = types.SimpleNamespace(stride_tricks=_namespace(
        "cupy.lib.stride_tricks", np.lib.stride_tricks, _names(stride_tricks)))
    module._transpile_stand_in = True
    module.ndarray = DeviceArray
    for name in ("float16", "float32", "float64", "complex64", "complex128", "int8", "int16",
                 "int32", "int64", "uint8", "uint32", "uint64", "bool_", "dtype", "generic",
                 "floating", "integer", "complexfloating", "number", "inexact", "finfo",
                 "iinfo", "newaxis", "pi", "e", "inf", "nan"):
        setattr(module, name, getattr(np, name))

    def asarray(x, dtype=None, order=None):
        if isinstance(x, DeviceArray):
            return x if dtype is None or x.dtype == dtype else x.astype(dtype)
        return DeviceArray(np.array(_unwrap(x, False), dtype=dtype, order=order))

    def array(x, dtype=None, copy=True, order="K", ndmin=0):
        return DeviceArray(np.array(_unwrap(x, False), dtype=dtype, copy=copy, order=order,
                                    ndmin=ndmin))
    module.asarray, module.array = asarray, array
    module.ascontiguousarray = lambda x, dtype=None: DeviceArray(
        np.ascontiguousarray(_unwrap(x, True), dtype=dtype))
    module.asnumpy = lambda x: x.get() if isinstance(x, DeviceArray) else np.asarray(x)
    module.get_array_module = lambda *a: module if any(
        isinstance(v, DeviceArray) for v in a) else np
    host = cuda_check.host_cupy()

    class RawKernel(host.RawKernel):
        def __call__(self, grid, block, args):
            super().__call__(grid, block, [_unwrap(a, True) for a in args])
    module.RawKernel = RawKernel
    module.cuda = host.cuda
    return module
