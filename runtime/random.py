"""tp.random: counter-based random numbers that give JAX's numbers for the same key.

A key is a uint32 array of shape (2,), as `jax.random.PRNGKey` makes; an array of keys has
shape (..., 2). Every draw is a pure function of its key: the same key gives the same numbers
on numpy and cupy, in a loop or under vmap. The generator is Threefry-2x32 (20 rounds), laid
out as JAX lays it out with `jax_threefry_partitionable` (its default since JAX 0.5): the
numbers of element i of a draw are the hash of the 64-bit counter i, so they do not depend
on how the draw is split between devices.

Dtypes follow numpy, as the rest of transpile does: a draw is float64 (int64, uint64) unless
asked otherwise, and gives the numbers JAX gives with `jax_enable_x64`; ask for float32 (or
int32, uint32) to get those of JAX's default 32-bit mode. split, fold_in, bits, uniform,
randint, permutation and the draws built on them are bit-identical to JAX's; normal (and
what uses an inverse error function) agrees to within 2 units in the last place.

Every function accepts an array of keys (shape (*K, 2)) and then draws for each key at once:
the result has K as its leading axes. That is how vmap over per-example keys runs.

Generated code calls these as `rt.random.<name>`; their derivative and batching rules live
in transpile/rules/random.py.
"""
import math
from collections.abc import Sequence

import numpy as np

from .backend import array_module
from .kernels import numba_module

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)      # Threefry's key-schedule constant
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits",
           "uniform", "normal", "randint", "permutation", "choice", "bernoulli",
           "categorical", "truncated_normal", "gumbel", "exponential", "gamma", "loggamma",
           "beta", "dirichlet", "multivariate_normal"]


# ---------------------------------------------------------------- the hash and keys

def threefry_2x32(k1, k2, x0, x1):
    """Threefry-2x32 with 20 rounds of (x0, x1) under the key (k1, k2); uint32 arrays that
    broadcast together (wrapping arithmetic, as the cipher needs)."""
    k3 = k1 ^ k2 ^ _PARITY
    schedule = (k1, k2, k3)
    x0 = x0 + k1
    x1 = x1 + k2
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
            x1 = x1 ^ x0
        x0 = x0 + schedule[(i + 1) % 3]
        x1 = x1 + schedule[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


_compiled_threefry = None


def _threefry_flat(k1, k2, x0, x1):
    """threefry_2x32 on 1-D uint32 arrays of one length: compiled with numba when it is
    installed and the arrays are numpy's (about 20x faster than 20 rounds of numpy
    passes), else the numpy version above."""
    global _compiled_threefry
    if type(x0) is np.ndarray and x0.size >= 4096:
        if _compiled_threefry is None:
            _compiled_threefry = _compile_threefry()
        if _compiled_threefry is not False:
            out0 = np.empty_like(x0)
            out1 = np.empty_like(x1)
            _compiled_threefry(k1, k2, x0, x1, out0, out1)
            return out0, out1
    return threefry_2x32(k1, k2, x0, x1)


def _threefry_loop(k1, k2, x0, x1, out0, out1):    # pragma: no cover - runs compiled
    # numba widens uint32 arithmetic: it runs in uint64, masked back to 32 bits
    m = np.uint64(0xFFFFFFFF)
    for j in range(x0.shape[0]):
        a, b = np.uint64(k1[j]), np.uint64(k2[j])
        c = a ^ b ^ np.uint64(0x1BD11BDA)
        v0 = (np.uint64(x0[j]) + a) & m
        v1 = (np.uint64(x1[j]) + b) & m
        for step in range(5):
            if step % 2 == 0:
                r0, r1, r2, r3 = 13, 15, 26, 6
            else:
                r0, r1, r2, r3 = 17, 29, 16, 24
            for r in (r0, r1, r2, r3):
                v0 = (v0 + v1) & m
                v1 = ((v1 << np.uint64(r)) | (v1 >> np.uint64(32 - r))) & m
                v1 = v1 ^ v0
            if step == 0:
                v0, v1 = (v0 + b) & m, (v1 + c + np.uint64(1)) & m
            elif step == 1:
                v0, v1 = (v0 + c) & m, (v1 + a + np.uint64(2)) & m
            elif step == 2:
                v0, v1 = (v0 + a) & m, (v1 + b + np.uint64(3)) & m
            elif step == 3:
                v0, v1 = (v0 + b) & m, (v1 + c + np.uint64(4)) & m
            else:
                v0, v1 = (v0 + c) & m, (v1 + a + np.uint64(5)) & m
        out0[j] = np.uint32(v0)
        out1[j] = np.uint32(v1)


def _compile_threefry():
    numba = numba_module()
    if numba is None:
        return False
    try:            # cache=True: a later process loads the machine code instead
        compiled = numba.njit(cache=True, nogil=True)(_threefry_loop)
        probe = [np.arange(8, dtype=np.uint32) * np.uint32(2654435761) for _ in range(4)]
        got = [np.empty(8, np.uint32), np.empty(8, np.uint32)]
        compiled(*probe, *got)
        want = threefry_2x32(*probe)
        if not all(np.array_equal(g, w) for g, w in zip(got, want)):
            return False          # never a different generator: keep numpy's
        return compiled
    except Exception:  # pragma: no cover - an unusual numba
        return False


def _check_key(key, what):
    xp = array_module(key)
    key = xp.asarray(key)
    if key.dtype != np.uint32 or key.ndim < 1 or key.shape[-1] != 2:
        raise TypeError(f"tp.random.{what}: expected a key, a uint32 array of shape (2,) (or "
                        f"an array of keys, shape (..., 2)) from tp.random.PRNGKey or "
                        f"tp.random.split; got {getattr(key, 'dtype', type(key))} of shape "
                        f"{np.shape(key)}")
    return xp, key


def _shape(shape, what):
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    if not isinstance(shape, Sequence) and not hasattr(shape, "__len__"):
        raise TypeError(f"tp.random.{what}: shape must be a tuple of ints, got {shape!r}")
    return tuple(int(n) for n in shape)


def _hash_counters(key, shape):
    """The two uint32 words of the hash of the counters 0 .. prod(shape)-1 (row-major, as a
    64-bit number split in a high and a low word), for each key: shapes K + shape."""
    xp = array_module(key)
    lead = key.shape[:-1]
    size = math.prod(shape)
    index = xp.arange(size, dtype=np.uint64)
    hi = (index >> np.uint64(32)).astype(np.uint32)
    lo = index.astype(np.uint32)
    k1 = key[..., 0].reshape(lead + (1,))
    k2 = key[..., 1].reshape(lead + (1,))
    full = lead + (size,)
    flat = [xp.ascontiguousarray(xp.broadcast_to(v, full)).reshape(-1)
            for v in (k1, k2, hi, lo)]
    x0, x1 = _threefry_flat(*flat)
    return x0.reshape(lead + shape), x1.reshape(lead + shape)


def PRNGKey(seed):
    """The key of an integer seed: its 64 bits as two uint32 words (high, low)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) and \
            not (np.ndim(seed) == 0 and np.issubdtype(np.asarray(seed).dtype, np.integer)):
        raise TypeError(f"tp.random.PRNGKey: the seed must be an integer, got {seed!r}")
    value = int(seed)
    if not -2 ** 63 <= value < 2 ** 64:
        raise OverflowError(f"tp.random.PRNGKey: seed {value} does not fit in 64 bits")
    value &= 0xFFFFFFFFFFFFFFFF
    return np.array([value >> 32, value & 0xFFFFFFFF], dtype=np.uint32)


def key(seed):
    """The key of an integer seed. JAX's `jax.random.key` makes a typed key array; here a
    key is always the raw uint32 pair that `PRNGKey` makes."""
    return PRNGKey(seed)


def key_data(keys):
    """The uint32 words of keys (a key is its words here)."""
    return _check_key(keys, "key_data")[1]


def wrap_key_data(key_bits_array):
    """Keys from their uint32 words."""
    return _check_key(key_bits_array, "wrap_key_data")[1]


def split(key, num=2):
    """`num` new keys from `key` (num may be a shape): shape K + (num,) + (2,)."""
    xp, key = _check_key(key, "split")
    shape = _shape(num, "split")
    x0, x1 = _hash_counters(key, shape)
    return xp.stack([x0, x1], axis=-1)


def fold_in(key, data):
    """A new key from `key` and a 32-bit integer (JAX: the hash of the seed key of data)."""
    xp, key = _check_key(key, "fold_in")
    data = np.asarray(data) if not hasattr(data, "__cuda_array_interface__") else data
    if not np.issubdtype(data.dtype, np.integer):
        raise TypeError(f"tp.random.fold_in: data must be an integer, got {data.dtype}")
    data = xp.asarray(data).astype(np.int64).astype(np.uint32)
    shape = np.broadcast_shapes(key.shape[:-1], data.shape)
    zero = xp.zeros(shape or (1,), dtype=np.uint32)
    x0, x1 = threefry_2x32(xp.broadcast_to(key[..., 0], zero.shape),
                           xp.broadcast_to(key[..., 1], zero.shape), zero,
                           xp.broadcast_to(data, zero.shape))
    return xp.stack([x0, x1], axis=-1).reshape(shape + (2,))


def _random_bits(key, width, shape):
    x0, x1 = _hash_counters(key, shape)
    if width == 64:
        return (x0.astype(np.uint64) << np.uint64(32)) | x1.astype(np.uint64)
    return (x0 ^ x1).astype(_UINT[width], copy=False)


def bits(key, shape=(), dtype=None):
    """Uniform random bits: unsigned integers of `dtype` (default uint64)."""
    xp, key = _check_key(key, "bits")
    dtype = np.dtype(np.uint64 if dtype is None else dtype)
    if dtype.kind != "u":
        raise ValueError(f"tp.random.bits: dtype must be an unsigned integer, got {dtype}")
    return _random_bits(key, dtype.itemsize * 8, _shape(shape, "bits"))


# ---------------------------------------------------------------- continuous draws

def _float_dtype(dtype, what, complex_ok=False):
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    if dtype.kind != "f" and not (complex_ok and dtype.kind == "c"):
        raise ValueError(f"tp.random.{what}: dtype must be a float dtype, got {dtype}")
    return dtype


def _standard_uniform(key, shape, dtype):
    """[0, 1) from the mantissa bits (exponent of 1.0, then minus one), as JAX does."""
    info = np.finfo(dtype)
    width = info.bits
    raw = _random_bits(key, width, shape)
    uint = _UINT[width]
    one_bits = np.array(1.0, dtype).view(uint)
    mantissa = (raw >> uint(width - info.nmant)) | one_bits
    return mantissa.view(dtype) - dtype.type(1.0)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform on [minval, maxval)."""
    xp, key = _check_key(key, "uniform")
    dtype = _float_dtype(dtype, "uniform")
    shape = _shape(shape, "uniform")
    floats = _standard_uniform(key, shape, dtype)
    if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)) and \
            minval == 0 and maxval == 1:
        return floats             # [0, 1) already: 0 + u * 1 is u, bit for bit
    lo = xp.asarray(minval).astype(dtype, copy=False)
    hi = xp.asarray(maxval).astype(dtype, copy=False)
    return xp.maximum(lo, _fma(floats, hi - lo, lo))


def _fma(a, b, c):
    """a * b + c rounded once, as XLA computes a product followed by a sum (it contracts
    them into fused multiply-adds). float32 and float16: exactly, through float64 (whose
    product of two float32 numbers is exact); float64: with Dekker's exact product and
    Knuth's two-sum, correct except in cases of rounding ties."""
    xp = array_module(a, b, c)
    dtype = np.result_type(a, b, c)
    if dtype == np.float64 and type(a) is np.ndarray and a.size >= 4096 and \
            np.ndim(b) == 0 and np.ndim(c) == 0:
        return _horner(a, (float(b), float(c)))      # b * a + c: compiled, when it can be
    if dtype != np.float64:
        wide = xp.asarray(a, np.float64) * xp.asarray(b, np.float64) + \
            xp.asarray(c, np.float64)
        return wide.astype(dtype)
    a, b, c = xp.asarray(a), xp.asarray(b), xp.asarray(c)
    p = a * b
    split = 134217729.0                         # 2**27 + 1: halves of 26 bits
    ta, tb = split * a, split * b
    a_hi, b_hi = ta - (ta - a), tb - (tb - b)
    a_lo, b_lo = a - a_hi, b - b_hi
    p_err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    s = p + c
    v = s - p
    s_err = (p - (s - v)) + (c - v)
    exact = xp.isfinite(p_err) & xp.isfinite(s_err)
    return xp.where(exact, s + (s_err + p_err), s)


def _horner(w, coefficients):
    """sum c_k w^(n-k) by Horner's rule, each step one fused multiply-add."""
    if type(w) is np.ndarray and w.dtype == np.float64 and w.size >= 4096:
        compiled = _compiled_horner()
        if compiled is not None:
            out = np.empty(w.shape)
            compiled(w.reshape(-1), np.asarray(coefficients, np.float64), out.reshape(-1))
            return out
    p = coefficients[0]
    for c in coefficients[1:]:
        p = _fma(p, w, c)
    return p


_horner_kernel = []


def _horner_loop(w, c, out):    # pragma: no cover - runs compiled
    for j in range(w.shape[0]):
        p = c[0]
        for k in range(1, c.shape[0]):
            p = p * w[j] + c[k]
        out[j] = p


def _compiled_horner():
    """Horner's rule compiled by numba with contraction allowed, so that LLVM emits the
    hardware's fused multiply-add (as XLA does): kept only if it agrees bit for bit with
    the exact emulation above on a probe, else None (the emulation then runs)."""
    if not _horner_kernel:
        _horner_kernel.append(None)
        numba = numba_module()
        if numba is None:
            return None

        try:
            compiled = numba.njit(fastmath={"contract"}, nogil=True, cache=True)(_horner_loop)
            probe = np.random.default_rng(0).uniform(-4.0, 12.0, 20000)
            for coefficients in (_ERFINV64_CENTRE, _ERFINV64_TAIL, _LOG1P_NUMERATOR):
                got = np.empty_like(probe)
                compiled(probe, np.asarray(coefficients), got)
                want = coefficients[0]
                for c in coefficients[1:]:
                    want = _fma(want, probe, c)
                if not np.array_equal(got, want):
                    return None
            _horner_kernel[0] = compiled
        except Exception:  # pragma: no cover - an unusual numba
            return None
    return _horner_kernel[0]


# log1p as XLA evaluates it (its elemental emitter): Cephes' rational approximation where
# |x| < sqrt(2) - 1, log(1 + x) elsewhere. numpy's log1p differs from it in the last bits,
# and the inverse error function (so every normal draw) starts from a log1p.
_LOG1P_NUMERATOR = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1,
                    6.5787325942061044846969e0, 2.9911919328553073277375e1,
                    6.0949667980987787057556e1, 5.7112963590585538103336e1,
                    2.0039553499201281259648e1)
_LOG1P_DENOMINATOR = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1,
                      2.2176239823732856465394e2, 3.0909872225312059774938e2,
                      2.1642788614495947685003e2, 6.0118660497603843919306e1)


def _log1p(x):
    xp = array_module(x)
    t = x.dtype.type
    square = x * x
    ratio = _horner(x, [t(c) for c in _LOG1P_NUMERATOR]) / \
        _horner(x, [t(c) for c in _LOG1P_DENOMINATOR])
    small = (x * square * ratio - t(0.5) * square) + x
    return xp.where(xp.abs(x) < t(0.41421356237309504880), small, xp.log(t(1.0) + x))


# Giles' approximations of the inverse error function ("Approximating the erfinv
# function", GPU Computing Gems, 2011), the ones XLA evaluates: a polynomial in
# w = -log(1 - x**2) (shifted), or in sqrt(w) (shifted) in the tails.
_ERFINV32_CENTRE = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                    0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV32_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                  0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_ERFINV64_CENTRE = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
_ERFINV64_MIDDLE = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
_ERFINV64_TAIL = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221)


def _erfinv(x):
    """The inverse error function (float16 is computed in float32, as XLA does)."""
    xp = array_module(x)
    dtype = x.dtype
    x = x.astype(np.float32 if dtype != np.float64 else np.float64, copy=False)
    t = x.dtype.type
    w = -_log1p(-x * x)
    if x.dtype == np.float32:
        centre = w < t(5.0)
        p = xp.where(centre, _horner(w - t(2.5), [t(c) for c in _ERFINV32_CENTRE]),
                     _horner(xp.sqrt(w) - t(3.0), [t(c) for c in _ERFINV32_TAIL]))
    else:
        # each polynomial only where it applies (the centre covers all but ~0.4%)
        p = _horner(w - 3.125, _ERFINV64_CENTRE)
        outside = xp.nonzero(xp.ravel(w) >= 6.25)[0]
        if outside.size:
            p = p.copy().reshape(-1) if p.ndim else p.reshape(1)
            wo = xp.ravel(w)[outside]
            root = xp.sqrt(wo)
            p[outside] = xp.where(wo < 16.0, _horner(root - 3.25, _ERFINV64_MIDDLE),
                                  _horner(root - 5.0, _ERFINV64_TAIL))
            p = p.reshape(w.shape)
    out = xp.where(xp.abs(x) == t(1.0), x * t(np.inf), p * x)
    return out.astype(dtype, copy=False)


def _scipy_special(what):
    try:
        import scipy.special
    except ImportError:  # pragma: no cover - scipy is in the test extra
        raise ImportError(f"tp.random.{what} needs scipy (pip install scipy)") from None
    return scipy.special


def _erf(x):
    xp = array_module(x)
    if xp is np:
        erf = _scipy_special("truncated_normal").erf
    else:  # pragma: no cover - cupy
        from cupyx.scipy.special import erf
    return erf(x)


def _standard_normal(key, shape, dtype):
    xp = array_module(key)
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    floats = _standard_uniform(key, shape, dtype)
    u = xp.maximum(lo, _fma(floats, dtype.type(1.0) - lo, lo))
    return np.array(np.sqrt(2), dtype) * _erfinv(u)


def normal(key, shape=(), dtype=None):
    """Standard normal draws (complex dtypes: real and imaginary parts each of variance
    1/2, from the two halves of the key split)."""
    xp, key = _check_key(key, "normal")
    dtype = _float_dtype(dtype, "normal", complex_ok=True)
    shape = _shape(shape, "normal")
    if dtype.kind == "c":
        real = np.empty((), dtype).real.dtype
        halves = split(key)
        re = _standard_normal(halves[..., 0, :], shape, real)
        im = _standard_normal(halves[..., 1, :], shape, real)
        return ((re + 1j * im) / np.array(np.sqrt(2), dtype)).astype(dtype, copy=False)
    return _standard_normal(key, shape, dtype)


def _two_parameters(what, key, a, b, shape, dtype):
    """The checked key, dtype, the two parameters as arrays of it, and the draw's shape
    (theirs broadcast when not given)."""
    xp, key = _check_key(key, what)
    dtype = _float_dtype(dtype, what)
    a = xp.asarray(a).astype(dtype, copy=False)
    b = xp.asarray(b).astype(dtype, copy=False)
    shape = _shape(shape, what)
    if shape is None:
        shape = np.broadcast_shapes(a.shape, b.shape)
    return xp, key, dtype, a, b, shape


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Normal draws conditioned on lower < x < upper."""
    xp, key, dtype, lower, upper, shape = _two_parameters("truncated_normal", key, lower,
                                                          upper, shape, dtype)
    sqrt2 = np.array(np.sqrt(2), dtype)
    a = _erf(lower / sqrt2).astype(dtype, copy=False)
    b = _erf(upper / sqrt2).astype(dtype, copy=False)
    floats = _standard_uniform(key, shape, dtype)
    u = xp.maximum(a, _fma(floats, b - a, a))
    out = sqrt2 * _erfinv(u)
    return xp.clip(out, xp.nextafter(lower, dtype.type(np.inf)),
                   xp.nextafter(upper, dtype.type(-np.inf)))


def exponential(key, shape=(), dtype=None):
    """Exponential draws of rate 1: -log(1 - u)."""
    xp, key = _check_key(key, "exponential")
    dtype = _float_dtype(dtype, "exponential")
    u = _standard_uniform(key, _shape(shape, "exponential"), dtype)
    return -_log1p(-u)


def gumbel(key, shape=(), dtype=None):
    """Standard Gumbel draws: -log(-log(u)), u uniform on [tiny, 1)."""
    xp, key = _check_key(key, "gumbel")
    dtype = _float_dtype(dtype, "gumbel")
    tiny = dtype.type(np.finfo(dtype).tiny)
    floats = _standard_uniform(key, _shape(shape, "gumbel"), dtype)
    u = xp.maximum(tiny, _fma(floats, dtype.type(1.0) - tiny, tiny))
    return -xp.log(-xp.log(u))


# ---------------------------------------------------------------- gamma and its family

def _gamma_one(keys, alpha, log_space):
    """Marsaglia and Tsang's method, one draw per key and alpha (1-D arrays), with the key
    splits JAX makes, so that each element draws the same numbers as JAX's: every element
    runs the rejection loop until it accepts; elements that accepted stop changing."""
    xp = array_module(alpha)
    dtype = alpha.dtype
    one, third = dtype.type(1.0), dtype.type(1.0 / 3.0)
    boost = alpha >= one
    alpha_orig = alpha
    alpha = xp.where(boost, alpha, alpha + one)
    d = alpha - third
    c = third / xp.sqrt(d)
    pair = split(keys)
    keys, last = pair[:, 0], pair[:, 1]
    n = alpha.shape[0]
    x2 = xp.zeros(n, dtype)
    v3 = xp.ones(n, dtype)
    u = xp.full(n, 2.0, dtype)

    def rejected(x2, v3, u):
        return (u >= one - dtype.type(0.0331) * x2 * x2) & \
            (xp.log(u) >= x2 * dtype.type(0.5) + d * (one - v3 + xp.log(v3)))

    todo = rejected(x2, v3, u)
    while bool(todo.any()):
        three = split(keys[todo], 3)
        keys[todo] = three[:, 0]
        x_key, u_key = three[:, 1], three[:, 2]
        # the inner loop: draw x until v = 1 + c x is positive
        x = xp.zeros(x_key.shape[0], dtype)
        v = xp.full(x_key.shape[0], -1.0, dtype)
        ci = c[todo]
        again = v <= 0
        while bool(again.any()):
            halves = split(x_key[again])
            x_key[again] = halves[:, 0]
            x[again] = _standard_normal(halves[:, 1], (), dtype)
            v[again] = one + x[again] * ci[again]
            again = v <= 0
        x2_new = x * x
        v3_new = v * v * v
        u_new = _standard_uniform(u_key, (), dtype)
        x2[todo], v3[todo], u[todo] = x2_new, v3_new, u_new
        todo = rejected(x2, v3, u)
    if log_space:
        log_samples = -exponential(last, (), dtype)
        log_boost = xp.where(boost | (log_samples == 0), dtype.type(0.0),
                             log_samples * (one / alpha_orig))
        return xp.log(d) + xp.log(v3) + log_boost
    samples = one - _standard_uniform(last, (), dtype)
    return d * v3 * xp.where(boost, one, samples ** (one / alpha_orig))


def _gamma(key, a, shape, dtype, log_space, what):
    xp, key = _check_key(key, what)
    dtype = _float_dtype(dtype, what)
    a = xp.asarray(a).astype(dtype, copy=False)
    shape = _shape(shape, what)
    if shape is None:
        shape = a.shape
    lead = key.shape[:-1]
    a = xp.broadcast_to(a, lead + shape)
    size = math.prod(shape)
    keys = split(key, size).reshape(-1, 2)     # one key per element, for each key
    samples = _gamma_one(keys.copy(), a.reshape(-1), log_space) if keys.shape[0] else \
        xp.zeros(0, dtype)
    return samples.reshape(lead + shape)


def gamma(key, a, shape=None, dtype=None):
    """Gamma draws of shape `a` and scale 1. Differentiable in `a` (the implicit
    reparameterization: d sample / d a = -(dF/da) / (dF/dx) for the cdf F)."""
    return _gamma(key, a, shape, dtype, False, "gamma")


def loggamma(key, a, shape=None, dtype=None):
    """The log of gamma draws, accurate where the draws themselves underflow (small a)."""
    return _gamma(key, a, shape, dtype, True, "loggamma")


def beta(key, a, b, shape=None, dtype=None):
    """Beta draws, as Ga / (Ga + Gb) of two gamma draws (in log space)."""
    xp, key, dtype, a, b, shape = _two_parameters("beta", key, a, b, shape, dtype)
    pair = split(key)
    log_a = loggamma(pair[..., 0, :], xp.broadcast_to(a, shape), shape, dtype)
    log_b = loggamma(pair[..., 1, :], xp.broadcast_to(b, shape), shape, dtype)
    log_max = xp.maximum(log_a, log_b)
    ga = xp.exp(log_a - log_max)
    gb = xp.exp(log_b - log_max)
    return ga / (ga + gb)


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet draws: the softmax of log-gamma draws of the concentrations `alpha`."""
    xp, key = _check_key(key, "dirichlet")
    dtype = _float_dtype(dtype, "dirichlet")
    alpha = xp.asarray(alpha).astype(dtype, copy=False)
    if alpha.ndim < 1:
        raise ValueError("tp.random.dirichlet: alpha must have at least one axis")
    shape = _shape(shape, "dirichlet")
    if shape is None:
        shape = alpha.shape[:-1]
    logs = loggamma(key, alpha, shape + alpha.shape[-1:], dtype)
    logs = logs - xp.max(logs, axis=-1, keepdims=True)
    e = xp.exp(logs)
    return e / xp.sum(e, axis=-1, keepdims=True)


def gamma_grad(a, x):
    """d x / d a of a gamma draw x of shape a at a fixed quantile: -(dP/da) / (dP/dx) for
    the regularized incomplete gamma function P(a, x) (the implicit reparameterization).
    dP/da comes from the series P = sum_n exp((a+n) log x - x - lgamma(a+n+1)), summed
    until its terms stop mattering."""
    special = _scipy_special("gamma's derivative")
    digamma, gammaln = special.digamma, special.gammaln
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    log_x = np.log(np.where(x > 0, x, 1.0))
    total = np.zeros(a.shape)
    n = 0
    while True:
        log_term = (a + n) * log_x - x - gammaln(a + n + 1)
        step = np.exp(log_term) * (log_x - digamma(a + n + 1))
        total = total + step
        n += 1
        past_peak = a + n > x
        if n > 20 and bool(np.all(past_peak & (np.abs(step) <= 1e-17 * np.abs(total) + 1e-300))):
            break
        if n > 100000:  # pragma: no cover - a far out in the tail
            break
    density = np.exp((a - 1) * log_x - x - gammaln(a))
    out = np.where(x > 0, -total / np.where(density > 0, density, 1.0), 0.0)
    return out


# ---------------------------------------------------------------- discrete draws

def _clip_to(value, dtype):
    info = np.iinfo(dtype)
    vinfo = np.iinfo(value.dtype)
    lo, hi = max(info.min, vinfo.min), min(info.max, vinfo.max)
    xp = array_module(value)
    return xp.clip(value, lo, hi).astype(dtype)


def randint(key, shape, minval, maxval, dtype=None):
    """Integers uniform on [minval, maxval) (from twice the bits of `dtype`, as JAX draws
    them: the bias of a span that is not a power of two stays below 2**-bits)."""
    xp, key = _check_key(key, "randint")
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"tp.random.randint: dtype must be an integer dtype, got {dtype}")
    shape = _shape(shape, "randint")
    info = np.iinfo(dtype)
    sampling = dtype
    minval, maxval = xp.asarray(minval), xp.asarray(maxval)
    if minval.dtype.kind not in "iu":
        minval = minval.astype(np.int64)
    if maxval.dtype.kind not in "iu":
        maxval = maxval.astype(np.int64)
    if info.bits < 32:
        sampling = np.dtype(np.int32)
        minval = xp.clip(minval.astype(np.int32), int(info.min), int(info.max))
        maxval = xp.clip(maxval.astype(np.int32), int(info.min), int(info.max) + 1)
    top = np.iinfo(sampling).max
    out_of_range = maxval > min(top, np.iinfo(maxval.dtype).max)
    lo = _clip_to(minval, sampling)
    hi = _clip_to(maxval, sampling)
    width = np.iinfo(sampling).bits
    pair = split(key)
    higher = _random_bits(pair[..., 0, :], width, shape)
    lower = _random_bits(pair[..., 1, :], width, shape)
    unsigned = _UINT[width]
    span = (hi - lo).astype(unsigned)
    span = xp.where(hi <= lo, unsigned(1), span)
    span = xp.where(out_of_range & (hi > lo), span + unsigned(1), span)
    span = xp.asarray(span, dtype=unsigned)
    with np.errstate(divide="ignore", over="ignore"):
        multiplier = xp.asarray(unsigned(2 ** (width // 2))) % span
        multiplier = (multiplier * multiplier) % span
        offset = (higher % span) * multiplier + (lower % span)
        offset = offset % span
    return (lo + offset.astype(sampling)).astype(dtype)


def _shuffle(key, x, axis):
    """Shuffle along `axis` by sorting on random 32-bit keys, rounds enough that ties are
    unlikely (JAX's scheme: ceil(3 ln n / ln(2**32 - 1)) rounds)."""
    xp = array_module(x)
    lead = key.ndim - 1
    size = math.prod(x.shape[lead:]) if x.ndim > lead else 1
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        pair = split(key)
        key, sub = pair[..., 0, :], pair[..., 1, :]
        sort_keys = _random_bits(sub, 32, x.shape[lead:])
        order = xp.argsort(sort_keys, axis=lead + axis, kind="stable")
        x = xp.take_along_axis(x, order, axis=lead + axis)
    return x


def permutation(key, x, axis=0, independent=False):
    """A random permutation of range(x) (an int), or of x along `axis` (rows move together
    unless `independent`)."""
    xp, key = _check_key(key, "permutation")
    lead = key.shape[:-1]
    if np.ndim(x) == 0:
        if not np.issubdtype(np.asarray(x).dtype, np.integer):
            raise TypeError("tp.random.permutation: x must be an integer or an array")
        r = xp.broadcast_to(xp.arange(int(x)), lead + (int(x),))
        return _shuffle(key, xp.array(r), 0)
    x = xp.asarray(x)
    axis = axis % x.ndim
    if independent or x.ndim == 1:
        return _shuffle(key, xp.array(xp.broadcast_to(x, lead + x.shape)), axis)
    n = x.shape[axis]
    index = _shuffle(key, xp.array(xp.broadcast_to(xp.arange(n), lead + (n,))), 0)
    if not lead:
        return xp.take(x, index, axis=axis)
    return xp.stack([xp.take(x, i, axis=axis) for i in index.reshape(-1, n)]).reshape(
        lead + x.shape[:axis] + (n,) + x.shape[axis + 1:])


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Draws from a (an int n means range(n)) along `axis`, with or without replacement,
    uniformly or with probabilities p."""
    xp, key = _check_key(key, "choice")
    if key.ndim > 1:
        return xp.stack([choice(k, a, shape, replace, p, axis)
                         for k in key.reshape(-1, 2)]).reshape(
            key.shape[:-1] + np.shape(choice(key.reshape(-1, 2)[0], a, shape, replace, p,
                                             axis)))
    shape = _shape(shape, "choice")
    arr = xp.asarray(a)
    if arr.ndim == 0:
        n = int(a)
    else:
        axis = axis % arr.ndim
        n = arr.shape[axis]
    draws = math.prod(shape)
    if draws == 0:
        return xp.zeros(shape, dtype=arr.dtype)
    if n <= 0:
        raise ValueError("tp.random.choice: a must be greater than 0 unless no samples "
                         "are taken")
    if not replace and draws > n:
        raise ValueError(f"tp.random.choice: cannot take a larger sample (size {draws}) than "
                         f"the population (size {n}) when replace=False")
    if p is None:
        if replace:
            index = randint(key, shape, 0, n)
            result = index if arr.ndim == 0 else xp.take(arr, index, axis=axis)
        else:
            perm = permutation(key, n if arr.ndim == 0 else arr, axis)
            result = perm[(slice(None),) * axis + (slice(draws),)]
    else:
        p = xp.asarray(p)
        if p.dtype.kind not in "fc":
            p = p.astype(np.float64)
        if p.shape != (n,):
            raise ValueError(f"tp.random.choice: p must be None or of shape ({n},), got "
                             f"{p.shape}")
        if replace:
            cumulative = xp.cumsum(p)
            r = cumulative[-1] * (1 - uniform(key, shape, dtype=cumulative.dtype))
            index = xp.searchsorted(cumulative, r).astype(np.int64)
        else:
            g = gumbel(key, (n,), dtype=p.dtype) + xp.log(p)
            index = xp.argsort(-g, kind="stable")[:draws].astype(np.int64)
        result = index if arr.ndim == 0 else xp.take(arr, index, axis=axis)
    return result.reshape(shape if arr.ndim == 0 else
                          arr.shape[:axis] + shape + arr.shape[axis + 1:])


def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability p: uniform(key, shape) < p."""
    xp, key = _check_key(key, "bernoulli")
    p = xp.asarray(p)
    if p.dtype.kind != "f":
        raise TypeError(f"tp.random.bernoulli: p must have a float dtype, got {p.dtype}")
    shape = _shape(shape, "bernoulli")
    if shape is None:
        shape = p.shape
    return _standard_uniform(key, shape, p.dtype) < p


def categorical(key, logits, axis=-1, shape=None, replace=True):
    """Indices drawn with probabilities softmax(logits) along `axis` (the Gumbel-max
    trick, as JAX draws them)."""
    xp, key = _check_key(key, "categorical")
    logits = xp.asarray(logits)
    if logits.dtype.kind != "f":
        logits = logits.astype(np.float64)
    lead = key.shape[:-1]
    axis = axis % logits.ndim
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch_shape if shape is None else _shape(shape, "categorical")
    if shape[len(shape) - len(batch_shape):] != batch_shape:
        raise ValueError(f"tp.random.categorical: shape {shape} must end with the logits' "
                         f"batch shape {batch_shape}")
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis, logits.shape[axis])
        noise = gumbel(key, prefix + tuple(logits_shape), logits.dtype)
        expanded = logits.reshape((1,) * len(prefix) + logits.shape)
        return xp.argmax(noise + expanded, axis=len(lead) + len(prefix) + axis)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(f"tp.random.categorical: number of samples without replacement "
                         f"({k}) cannot exceed the number of categories "
                         f"({logits.shape[axis]})")
    noisy = logits + gumbel(key, logits.shape, logits.dtype)
    moved = xp.moveaxis(noisy, len(lead) + axis, -1)
    top = xp.argsort(-moved, axis=-1, kind="stable")[..., :k]
    return xp.moveaxis(top, -1, len(lead)).reshape(lead + shape)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Draws of N(mean, cov): mean + factor @ z for a standard normal z, the factor from
    cholesky (default), svd or eigh of cov."""
    xp, key = _check_key(key, "multivariate_normal")
    mean, cov = xp.asarray(mean), xp.asarray(cov)
    if dtype is None:
        dtype = np.result_type(mean.dtype, cov.dtype)
        dtype = dtype if dtype.kind == "f" else np.dtype(np.float64)
    dtype = _float_dtype(dtype, "multivariate_normal")
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("tp.random.multivariate_normal: method must be one of 'svd', "
                         "'eigh', 'cholesky'")
    if mean.ndim < 1 or cov.ndim < 2 or cov.shape[-2:] != (mean.shape[-1],) * 2:
        raise ValueError(f"tp.random.multivariate_normal: mean of shape (..., n) and cov of "
                         f"shape (..., n, n) needed, got {mean.shape} and {cov.shape}")
    shape = _shape(shape, "multivariate_normal")
    if shape is None:
        shape = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    factor = mvn_factor(cov, method)
    z = normal(key, shape + mean.shape[-1:], dtype)
    return mean + xp.einsum("...ij,...j->...i", factor, z)


def mvn_factor(cov, method="cholesky"):
    """A matrix F with F F^T = cov, as multivariate_normal's `method` makes it."""
    xp = array_module(cov)
    if method == "svd":
        u, s, _ = xp.linalg.svd(cov)
        return u * xp.sqrt(s[..., None, :])
    if method == "eigh":
        w, v = xp.linalg.eigh(cov)
        return v * xp.sqrt(w[..., None, :])
    return xp.linalg.cholesky(cov)


# ---------------------------------------------------------------- what the rules call

def lanes(name, n, flags, *args):
    """vmap of a draw whose parameters (not only its key) differ between examples: the
    draw `name` once per example, stacked. Flagged arguments carry the batch on axis 0."""
    fn = globals()[name]
    xp = array_module(*[a for a in args if hasattr(a, "shape")])
    outs = [fn(*[a[i] if f else a for a, f in zip(args, flags)]) for i in range(n)]
    return xp.stack([xp.asarray(o) for o in outs])
