"""Backend dispatch: which array module (numpy or cupy) a value belongs to.

Generated code spells numpy calls as `np.<name>`; the module it runs in binds `np` to numpy.
Helpers in `runtime` that allocate pick the array module from their arguments, so the same
helper serves numpy and cupy arrays. cupy is optional and imported lazily.
"""
import contextvars
import functools
import importlib
import sys

import numpy as np

# numpy's floating-point error state, re-exported for generated code (`with
# rt.errstate(all='ignore'):` around lanes whose values are thrown away): cupy has none, and
# code running for cupy arrays binds `np` to cupy
errstate = np.errstate
REEXPORTED = ["errstate"]

_cupy = None
# The module helpers allocate with when no argument is a cupy array (rt.broadcast_batch(0, n),
# say): numpy, or cupy while code transformed for cupy arrays runs (`allocating_with`).
_default_module = contextvars.ContextVar("transpile_array_module", default=np)
_cupy_checked = False


def _get_cupy():
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:  # pragma: no cover - depends on the machine
            import cupy
            _cupy = cupy
        except Exception:
            _cupy = None
    return _cupy


_gpus = None       # how many GPUs cupy sees: asked once, when cupy has been imported


def device_arrays_possible():
    """Whether cupy arrays can exist in this process: cupy imported, and a GPU for them.
    Calls check their arguments for cupy arrays only then (a search costs microseconds)."""
    global _gpus
    if "cupy" not in sys.modules:
        return False
    if _gpus is None:
        try:
            _gpus = _get_cupy().cuda.runtime.getDeviceCount()
        except Exception:   # cupy without a driver or device
            _gpus = 0
    return _gpus > 0


def cupy_module():
    """The cupy module, or None where it cannot be imported."""
    return _get_cupy()


def array_module(*values):
    """cupy when any of `values` is a cupy array, else numpy (or cupy inside code running
    for cupy arrays: `allocating_with`)."""
    for v in values:
        if type(v).__module__.startswith("cupy"):
            return _get_cupy()
    return _default_module.get()


def allocating_with(module, fn):
    """`fn` with `module` (cupy) the array module of helpers whose arguments name none."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        token = _default_module.set(module)
        try:
            return fn(*args, **kwargs)
        finally:
            _default_module.reset(token)
    return call


def with_device_version(host_fn, device_module):
    """`host_fn` (a scipy function that is no ufunc, so cupy cannot take it over), calling
    the function of the same name in `device_module` ("cupyx.scipy.special") instead when an
    argument is a cupy array."""
    if host_fn is None:                 # scipy not installed
        return None
    name = host_fn.__name__

    @functools.wraps(host_fn)
    def call(*args, **kwargs):
        for v in args:
            if type(v).__module__.startswith("cupy"):
                return getattr(importlib.import_module(device_module), name)(*args, **kwargs)
        return host_fn(*args, **kwargs)
    return call


def to_host(x):
    """`x` as a numpy array: a cupy array copied from its device (small values only: index
    plans, quantile levels), anything else through np.asarray."""
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


def read_only(a):
    """Whether array `a` must be copied before it is handed out as a fresh result: numpy's
    read-only arrays (broadcasts, shared zeros); cupy has no such flag, and a broadcast
    (a stride of 0) is what numpy would have marked."""
    writeable = getattr(a.flags, "writeable", None)
    if writeable is not None:
        return not writeable
    return a.size > 1 and 0 in a.strides
