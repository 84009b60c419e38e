"""Fused kernels that jit-specialized code calls, and the output buffers they write into.

A specialization made by `tp.jit` defines, per fused group, a `CpuKernel` (a loop that numba
compiles, or the same statements in numpy when numba is not installed) or a `CudaKernel`
(CUDA C compiled by cupy when first called), and per loop on numbers a `ScalarLoop`. Both write into an `OutputPool` buffer: a fresh
multi-MB array costs a page fault per 4 KiB page the first time it is written (glibc maps
large allocations anew every time), so a buffer is reused once nobody holds it any more.
"""
import sys
import threading
import time

import numpy as np

from .backend import array_module
from .trees import rebuild_like

_numba = None
_numba_checked = False


def _get_numba():
    global _numba, _numba_checked
    if not _numba_checked:
        _numba_checked = True
        try:
            import numba
            _numba = numba
        except Exception:       # pragma: no cover - depends on the machine
            _numba = None
    return _numba


def numba_module():
    """numba, when it is installed (the optional extra `fast`), else None."""
    return _get_numba()


def have_compiled_loops():
    """True when CPU kernels compile to machine code (numba is installed)."""
    return _get_numba() is not None


class OutputPool:
    """Buffers of one shape and dtype for one kernel's results.

    `take()` returns a buffer that nothing outside the pool refers to (its reference count
    says so: a caller holding the last result, or a view of it, or a saved value of a
    backward pass keeps it), else a new one. Up to `keep` buffers are kept.
    """

    def __init__(self, shape, dtype, xp=np, keep=4):
        self.shape, self.dtype, self.xp, self.keep = tuple(shape), np.dtype(dtype), xp, keep
        self.buffers = []
        self.lock = threading.Lock()
        self.reused = 0           # how many results reused a buffer (for tests, benchmarks)

    def take(self):
        with self.lock:
            for buf in self.buffers:
                if sys.getrefcount(buf) <= _UNHELD:
                    self.reused += 1
                    return buf
            buf = self.xp.empty(self.shape, self.dtype)
            if len(self.buffers) < self.keep:
                self.buffers.append(buf)
            return buf


def _unheld_count():
    """What sys.getrefcount reports, inside OutputPool.take's loop, for a buffer that only
    the pool's list holds. Measured with the same loop rather than assumed (3 on CPython
    3.11: the list, the loop variable, the argument), since interpreters differ in which
    references they count."""
    buffers = [object()]
    for buf in buffers:
        return sys.getrefcount(buf)


_UNHELD = _unheld_count()


_COMPILED = {}     # loop function's code -> numba dispatcher (one compile per kernel text)


class CpuKernel:
    """A fused elementwise kernel on numpy arrays: `kernel(*inputs)` returns a new result.

    `loop(*inputs, out)` is compiled with numba once the kernel has run `calls_before_compile`
    times (about 0.2 s per kernel: a specialization called once or twice never pays it);
    until then, and where numba is not installed, `fallback(*inputs, out)`, the original
    numpy statements, runs instead. `kinds` says how each input is passed ("array",
    "scalar", or "0-d": a numpy scalar or 0-d array, which the loop reads from a
    one-element array).
    """

    calls_before_compile = 2
    # A kernel of fewer elements than this saves microseconds a call, which repay the
    # compilation only over many calls: it compiles once its numpy statements have taken
    # `compile_after_s` seconds in all (a small fraction of what compiling takes, so a
    # kernel called a few hundred times never pays it, and one called for long pays at
    # most that much more than if it had compiled at once).
    small_elements = 1 << 16
    compile_after_s = 0.05

    def __init__(self, loop, fallback, kinds, shape, dtype, checks_range=False):
        self.loop, self.fallback = loop, fallback
        self.small = int(np.prod(shape, dtype=np.int64)) < self.small_elements
        self.spent = 0.0          # seconds in `fallback` so far (small kernels)
        # the loop returns how many arguments of its sin/cos/exp were out of range;
        # when any was, numpy's statements compute the result instead
        self.checks_range = checks_range
        self.zero_d = tuple(i for i, kind in enumerate(kinds) if kind == "0-d")
        self.pool = OutputPool(shape, dtype)
        self.calls = 0
        self._compiled = None

    def compiled(self):
        """The numba-compiled loop (compiling it now if needed), or None without numba."""
        if self._compiled is None:
            numba = _get_numba()
            if numba is None:
                return None
            key = self.loop.__code__
            found = _COMPILED.get(key)
            if found is None:
                # error_model="numpy": a float division by zero gives inf/nan as numpy does
                found = _COMPILED[key] = numba.njit(error_model="numpy")(self.loop)
            self._compiled = found
        return self._compiled

    def __call__(self, *inputs, out=None):
        """The kernel on `inputs`, into a pooled buffer or into `out` (a donated input of
        the result's shape and dtype: each element is read before it is written)."""
        run = self._compiled
        if run is None:
            self.calls += 1
            if self.calls <= self.calls_before_compile or \
                    self.small and self.spent < self.compile_after_s or \
                    self.compiled() is None:
                out = self.pool.take() if out is None else out
                if self.small:
                    start = time.perf_counter()
                    self.fallback(*inputs, out)
                    self.spent += time.perf_counter() - start
                else:
                    self.fallback(*inputs, out)
                return out
            run = self._compiled
        donated = out
        if out is None or self.checks_range and any(out is v for v in inputs):
            # a loop that may hand the work to numpy must not write over an input first
            out = self.pool.take()
        loop_inputs = inputs
        if self.zero_d:
            loop_inputs = list(inputs)
            for i in self.zero_d:
                loop_inputs[i] = np.reshape(loop_inputs[i], 1)
        if run(*loop_inputs, out) and self.checks_range:
            self.fallback(*inputs, out)
        if donated is not None and donated is not out:
            donated[...] = out
            return donated
        return out


_NUMBER_TYPES = frozenset((float, int, bool, np.float64, np.int64, np.bool_))
_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1
_PY_NUMBERS = frozenset((float, int, bool))
_NUMPY_SCALAR = {"float64": np.float64, "int64": np.int64, "bool": np.bool_}


class ScalarLoop:
    """A run of statements on numbers (a loop, with what surrounds it) made a function by
    jit: `loop(*numbers)` returns the numbers read after the run, each of the kind the
    plain code gives (a Python float or an np.float64).

    `python(*numbers)` is the run's statements as generated: it runs the first
    `calls_before_compile` calls, any call with an argument that is not a plain number (a
    0-d array, an int beyond int64), and every call where numba is not installed or cannot
    compile. From then on numba's compilation of `compiled(*numbers, *flags)` runs: the
    same statements for numba (stacks as lists, helpers of numbers done), told the kind of
    the inputs at `weak_inputs` (a flag each: True for a Python number). `outputs`: per
    returned number its dtype name and whether the plain code has a Python number (True),
    a numpy scalar (False), or what a flag the compiled function returns after it says
    (None). `error_model`: numba's for a division by zero ("python" raises, "numpy" gives
    inf and nan).
    """

    calls_before_compile = 2

    def __init__(self, compiled, python, weak_inputs, outputs, error_model="numpy"):
        self.source_function, self.python = compiled, python
        self.weak_inputs, self.outputs, self.error_model = weak_inputs, outputs, error_model
        self.calls = 0
        self._compiled = None      # numba's dispatcher; False: never (no numba, or it failed)
        self.compile_error = None  # why numba could not compile it (for tests and users)

    def _compile(self, args):
        numba = _get_numba()
        if numba is None:
            self._compiled = False
            return False
        try:
            dispatcher = numba.njit(error_model=self.error_model)(self.source_function)
            dispatcher.compile(tuple(numba.typeof(a) for a in args))
        except Exception as e:     # a construct numba does not type: stay Python
            self.compile_error = e
            self._compiled = False
            return False
        self._compiled = dispatcher
        return True

    def __call__(self, *numbers):
        run = self._compiled
        if run is False or not _plain_numbers(numbers):
            return self.python(*numbers)
        args = numbers + tuple(type(numbers[i]) in _PY_NUMBERS for i in self.weak_inputs)
        if run is None:
            self.calls += 1
            if self.calls <= self.calls_before_compile or not self._compile(args):
                return self.python(*numbers)
            run = self._compiled
        return self._converted(run(*args))

    def _converted(self, results):
        """numba's results (Python numbers) as the kinds the plain code gives."""
        out, k = [], 0
        for dtype, weak in self.outputs:
            value = results[k]
            if weak is None:
                weak = results[k + 1]
                k += 1
            out.append(value if weak else _NUMPY_SCALAR[dtype](value))
            k += 1
        return tuple(out)


def _plain_numbers(values):
    """True if every value is a number numba takes as it is: not a 0-d array, not a
    Python int beyond int64."""
    for v in values:
        t = type(v)
        if t not in _NUMBER_TYPES or t is int and not _INT64_MIN <= v <= _INT64_MAX:
            return False
    return True


class CudaKernel:
    """A fused elementwise kernel written in CUDA C, compiled by cupy on the first call.

    `kinds` says how each input is passed: "array" or "0-d" (a device pointer; made
    C-contiguous first) or "scalar" (a double).
    """

    block = 256

    def __init__(self, name, source, kinds, shape, dtype):
        self.name, self.source, self.kinds = name, source, tuple(kinds)
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self._kernel = None
        self.pool = None

    def __call__(self, *inputs, out=None):
        import cupy
        if self._kernel is None:
            # no contraction into fused multiply-adds: each operation rounds as numpy's does
            self._kernel = cupy.RawKernel(self.source, self.name, options=("--fmad=false",))
            self.pool = OutputPool(self.shape, self.dtype, cupy)
        args = [np.float64(v) if kind == "scalar" else cupy.ascontiguousarray(v)
                for v, kind in zip(inputs, self.kinds)]
        if out is None or not out.flags.c_contiguous:
            out = self.pool.take()
        grid = max(1, min((self.size + self.block - 1) // self.block, 65535 * 8))
        self._kernel((grid,), (self.block,), (*args, out))
        return out


def devices():
    """The devices arrays can live on: the CUDA GPUs cupy sees, else ["cpu"]."""
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
        if n:
            return [cupy.cuda.Device(i) for i in range(n)]
    except Exception:
        pass
    return ["cpu"]


def cuda_device(index):
    """cupy's CUDA device `index`: `with rt.cuda_device(i):` makes it current in this
    thread (pmap's device threads on GPUs)."""
    import cupy
    return cupy.cuda.Device(index)


def device_put(x, device=None):
    """`x` (arrays in tuples, lists and dicts too) on a GPU when one is present (a cupy
    array), else unchanged; device="cpu" (or a CPU device of tp.devices()) brings it back
    as numpy."""
    if isinstance(x, (tuple, list)):
        return rebuild_like(x, (device_put(v, device) for v in x))
    if isinstance(x, dict):
        return {k: device_put(v, device) for k, v in x.items()}
    on_gpu = [d for d in devices() if d != "cpu"]
    if device == "cpu" or getattr(device, "platform", None) == "cpu" or \
            (device is None and not on_gpu):
        return x.get() if type(x).__module__.startswith("cupy") else x
    import cupy
    target = device if device is not None else on_gpu[0]
    with target:
        return cupy.asarray(x)


def block_until_ready(x):
    """Wait until the GPU has computed `x` (arrays in containers too); returns `x`."""
    xp = array_module(x) if not isinstance(x, (tuple, list, dict)) else None
    if xp is not None and xp is not np:
        xp.cuda.get_current_stream().synchronize()
    elif isinstance(x, (tuple, list)):
        for v in x:
            block_until_ready(v)
    elif isinstance(x, dict):
        for v in x.values():
            block_until_ready(v)
    return x
