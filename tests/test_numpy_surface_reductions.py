"""numpy's statistics, nan-reductions and a few elementwise functions: derivatives to second
order in both modes against finite differences, edge points (ties, NaNs, the ends of q),
complex inputs where numpy takes them, and vmap (and vmap of grad) against a loop.
"""
import itertools
import os
import warnings

import numpy as np
import pytest

import transpile as tp
from transpile.test_util import check_grads
from runtime.errors import TransformError
from runtime.trees import tree_leaves, tree_map

SEED = int(os.environ.get("TP_SEED", np.random.SeedSequence().entropy % (1 << 32)))
NEX = 3


def _rng(*key):
    return np.random.default_rng([SEED, *key])


def N(r, *s):
    return r.standard_normal(s)


def P(r, *s):
    return r.uniform(0.5, 2.0, s)


def C(r, *s):
    return r.standard_normal(s) + 1j * r.standard_normal(s)


def with_nans(r, *s):
    """Normal values with NaNs: one scattered, and a whole slice along each axis."""
    x = r.standard_normal(s)
    x.flat[int(r.integers(x.size))] = np.nan
    if len(s) >= 2:
        x[int(r.integers(s[0])), ...] = np.nan
        x[(slice(None), int(r.integers(s[1])))] = np.nan
    return x


# Order statistics (ptp, quantiles) are piecewise smooth: their derivatives jump where two
# values of `a` swap order and where q moves the interpolation position across an integer
# (or a half-integer, for "nearest"). A finite-difference step (1e-6) across such a kink
# reads a second derivative of jump / step (CI once saw 9555.7 against -0.52 for
# percentile), so the draws keep clear of them.
KINK_MARGIN = 1e-4


def tie_free(r, *s):
    """Normal values no two of which are closer than KINK_MARGIN."""
    while True:
        x = r.standard_normal(s)
        if np.min(np.diff(np.sort(x.ravel()))) >= KINK_MARGIN:
            return x


# ---------------------------------------------------------------- the functions
# (each at module level: transformations read their source)

def f_sinc(x):
    return np.sum(np.sinc(x) ** 2)


def f_fmod_copysign(x, y):
    return np.sum(np.fmod(x, y) * np.copysign(x, y))


def f_float_power(x, y):
    return np.sum(np.float_power(y, x) + np.float_power(y, 3) * x)


def f_angle(x):
    return np.sum(np.angle(x) * x + np.angle(x, deg=True))


def f_real_imag(x):
    return np.sum(np.real(x) * np.imag(x * x) + np.real(np.conj(x) * x))


def f_nan_to_num(x, a, b, c):
    return np.sum(np.nan_to_num(x, nan=a, posinf=b, neginf=c) * np.cos(x * 0.0 + 1.0))


def f_nan_to_num_default(x):
    return np.sum(np.sin(np.nan_to_num(x)))


def f_nansum(a):
    return np.sum(np.nansum(a, axis=1) ** 2) + np.nansum(a) ** 2 + \
        np.sum(np.nansum(a, axis=(0, 2), keepdims=True) * np.nan_to_num(a[0:1, :, 0:1]))


def f_nanmean(a):
    return np.nansum(np.nanmean(a, axis=(0, 2), keepdims=True) ** 2) + np.nanmean(a) ** 2 + \
        np.nansum(np.nanmean(a, axis=2) * 2.0)


def f_nanmax_nanmin(a):
    return np.nansum(np.nanmax(a, axis=2) ** 2) + np.nanmin(a) + \
        np.nansum(np.nanmin(a, axis=0, keepdims=True) * 3.0)


def f_nanprod(a):
    return np.nansum(np.nanprod(a, axis=0) * 2.0) + np.nanprod(a[0] + 1.0)


def f_nanvar_nanstd(a):
    return np.nansum(np.nanvar(a, axis=1, ddof=1) * 2.0) + np.nanstd(a) + \
        np.nansum(np.nanstd(a, axis=0, keepdims=True) * 3.0) + np.nanvar(a)


def f_ptp(a):
    return np.sum(np.ptp(a, axis=1) ** 2) + np.ptp(a) + np.sum(np.ptp(a, axis=-1, keepdims=True))


def f_cumulative_sum(a):
    return np.sum(np.cumulative_sum(a, axis=1, include_initial=True) ** 2) + \
        np.sum(np.cumulative_sum(a[0, 0]) ** 2) + np.sum(np.cumulative_sum(a, axis=-1) * a)


# ---------------------------------------------------------------- derivative checks

CASES = [
    ("sinc", f_sinc, lambda r: (N(r, 3, 4),)),
    ("fmod_copysign", f_fmod_copysign, lambda r: (N(r, 3, 4), P(r, 3, 4))),
    ("float_power", f_float_power, lambda r: (N(r, 3, 4), P(r, 4))),
    ("angle", f_angle, lambda r: (N(r, 3, 4),)),
    ("real_imag", f_real_imag, lambda r: (N(r, 3, 4),)),
    ("nan_to_num_default", f_nan_to_num_default, lambda r: (N(r, 3, 4),)),
    ("nansum", f_nansum, lambda r: (with_nans(r, 3, 4, 5),)),
    ("nanmean", f_nanmean, lambda r: (with_nans(r, 3, 4, 5),)),
    ("nanmax_nanmin", f_nanmax_nanmin, lambda r: (with_nans(r, 3, 4, 5),)),
    ("nanprod", f_nanprod, lambda r: (with_nans(r, 3, 4, 5),)),
    ("nanvar_nanstd", f_nanvar_nanstd, lambda r: (with_nans(r, 3, 4, 5),)),
    ("ptp", f_ptp, lambda r: (tie_free(r, 3, 4, 5),)),
    ("cumulative_sum", f_cumulative_sum, lambda r: (N(r, 3, 4, 5),)),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,f,make", CASES, ids=IDS)
def test_second_order_both_modes(name, f, make):
    r = _rng(hash(name) % 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        args = make(r)
        check_grads(f, args, order=2, modes=("fwd", "rev"), seed=int(r.integers(1 << 30)))


# ---------------------------------------------------------------- vmap against a loop

def _loop(f, examples):
    outs = [f(*ex) for ex in examples]
    return tree_map(lambda *ls: np.stack([np.asarray(x) for x in ls]), *outs)


def _close(got, want, what):
    for g, w in zip(tree_leaves(got), tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-11,
                                   err_msg=what)


def check_vmap(f, make, r, grad=True, argnums=None):
    """Every non-empty subset of the arguments mapped, the first mapped one along its last
    axis (the rest along axis 0); vmap(f) and vmap(grad(f)) against loops."""
    draws = [make(r) for _ in range(NEX)]
    n = len(draws[0])
    floats = tuple(k for k in range(n) if np.asarray(draws[0][k]).dtype.kind in "fc")
    floats = floats if argnums is None else argnums
    for size in range(1, n + 1):
        for mapped in itertools.combinations(range(n), size):
            args, axes = [], []
            for k in range(n):
                if k not in mapped:
                    args.append(draws[0][k])
                    axes.append(None)
                    continue
                stacked = np.stack([np.asarray(d[k]) for d in draws])
                axis = stacked.ndim - 1 if k == mapped[0] else 0
                args.append(np.moveaxis(stacked, 0, axis))
                axes.append(axis)
            examples = [tuple(draws[b][k] if k in mapped else draws[0][k] for k in range(n))
                        for b in range(NEX)]
            what = f"{f.__name__} mapped {mapped} along {axes}"
            _close(tp.vmap(f, in_axes=tuple(axes))(*args), _loop(f, examples), what)
            if grad and floats:
                g = tp.grad(f, argnums=floats)
                _close(tp.vmap(g, in_axes=tuple(axes))(*args), _loop(g, examples),
                       "grad of " + what)


@pytest.mark.parametrize("name,f,make", CASES, ids=IDS)
def test_vmap_against_a_loop(name, f, make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_vmap(f, make, _rng(hash(name) % 1000, 1))


# ---------------------------------------------------------------- quantiles

def f_median(a):
    return np.sum(np.median(a, axis=1) ** 2) + np.median(a) + \
        np.sum(np.median(a, axis=(0, 2), keepdims=True) * a[0:1, :, 0:1])


Q = np.array([0.0, 0.13, 0.5, 0.71, 1.0])      # both ends included
PCT = np.array([0.0, 25.0, 62.5, 100.0])


def f_quantile(a, q):
    return np.sum(np.quantile(a, q, axis=-1) ** 2) + np.sum(np.quantile(a, Q)) + \
        np.sum(np.quantile(a, q[1:3], axis=(0, 1), keepdims=True) * a[0:1, 0:1]) + \
        np.quantile(a[0], 0.3, method="weibull") + np.sum(np.quantile(a, q, method="nearest"))


def f_percentile(a, p):
    return np.sum(np.percentile(a, p, axis=0) ** 2) + \
        np.sum(np.percentile(a, [10.0, 50.0, 90.0], axis=1, method="midpoint") * 2.0) + \
        np.sum(np.percentile(a, PCT, method="hazen")) + np.percentile(a, 17.0, method="lower") + \
        np.sum(np.percentile(a, p * 0.5, axis=(0, 2), method="median_unbiased") ** 2)


def clear_of_kinks(r, low, high, size, positions):
    """Uniform values whose interpolation positions (positions(values), a list of arrays)
    are at least 10 * KINK_MARGIN from every multiple of one half."""
    while True:
        v = r.uniform(low, high, size)
        if all(np.min(np.abs(p * 2 - np.round(p * 2))) >= 20 * KINK_MARGIN
               for p in positions(v)):
            return v


QUANTILE_CASES = [
    ("median", f_median, lambda r: (tie_free(r, 3, 4, 5),)),
    ("quantile", f_quantile, lambda r: (
        tie_free(r, 3, 4, 5),
        # linear along the last axis (5 values) and over axes (0, 1) (12); nearest over 60
        clear_of_kinks(r, 0.02, 0.98, 4, lambda q: [q * 4, q[1:3] * 11, q * 59]))),
    ("percentile", f_percentile, lambda r: (
        tie_free(r, 3, 4, 5),
        # linear along axis 0 (3 values); median_unbiased at p / 2 over axes (0, 2) (15)
        clear_of_kinks(r, 2.0, 98.0, 3,
                       lambda p: [p / 100 * 2, p / 200 * (15 + 1 / 3) - 2 / 3]))),
]
CASES += QUANTILE_CASES
IDS += [c[0] for c in QUANTILE_CASES]


# ---------------------------------------------------------------- np.average

def f_average(a, w, v):
    avg, scl = np.average(a, axis=1, weights=w, returned=True)
    return np.sum(avg ** 2) + np.sum(scl * avg) + np.average(a) + \
        np.sum(np.average(a, axis=-1, weights=v, keepdims=True) * a) + \
        np.sum(np.average(a[0], axis=0, weights=w)) + np.sum(np.average(a, axis=(0, 2)) ** 2)


def f_average_plain(a, w):
    return np.sum(np.average(a, axis=0, weights=w) ** 2)


AVERAGE_CASES = [
    ("average", f_average, lambda r: (N(r, 3, 4, 5), P(r, 4), P(r, 3, 4, 5))),
    ("average_plain", f_average_plain, lambda r: (N(r, 3, 4), P(r, 3, 4))),
]
CASES += AVERAGE_CASES
IDS += [c[0] for c in AVERAGE_CASES]


# ---------------------------------------------------------------- polynomials

def f_polyval(p, x):
    return np.sum(np.polyval(p, x) ** 2) + np.polyval(p, 0.7) + np.sum(np.polyval([1.0, -2.0], x))


POLY_CASES = [
    ("polyval", f_polyval, lambda r: (N(r, 4), N(r, 3, 2))),
]
CASES += POLY_CASES
IDS += [c[0] for c in POLY_CASES]


# ---------------------------------------------------------------- np.interp

XP = np.array([-1.5, -0.4, 0.1, 0.9, 2.0])


def knots(r):
    return np.sort(r.uniform(-1.5, 1.5, 5)) + np.arange(5) * 0.05


def f_interp(x, fp, left):
    return np.sum(np.interp(x, XP, fp) ** 2) + np.sum(np.interp(x, XP, fp, left, 3.0) * x) + \
        np.interp(0.3, XP, fp)


def f_interp_knots(x, xp, fp):
    return np.sum(np.sin(np.interp(x, xp, fp)) * x) + np.sum(np.interp(x, xp, fp, 0.5, -1.0))


INTERP_CASES = [
    ("interp", f_interp, lambda r: (r.uniform(-2.5, 2.5, (3, 4)), N(r, 5), float(N(r)))),
    ("interp_knots", f_interp_knots, lambda r: (r.uniform(-2.5, 2.5, 7), knots(r), N(r, 5))),
]
CASES += INTERP_CASES
IDS += [c[0] for c in INTERP_CASES]


# ---------------------------------------------------------------- np.gradient

COORDS = np.array([0.0, 0.3, 0.5, 1.1, 1.6, 2.0])


def f_gradient(f):
    gy, gx = np.gradient(f)
    return np.sum(gy ** 2 * gx) + np.sum(np.gradient(f, 0.5, axis=1, edge_order=2) ** 2) + \
        np.sum(np.gradient(f, COORDS, axis=0) * f) + \
        np.sum(np.gradient(f[:, 0], COORDS, edge_order=2) ** 3) + \
        np.sum(np.gradient(f, axis=-1) * np.gradient(f, 2.0, axis=(1, 0))[1])


GRADIENT_CASES = [
    ("gradient", f_gradient, lambda r: (N(r, 6, 7),)),
]
CASES += GRADIENT_CASES
IDS += [c[0] for c in GRADIENT_CASES]


# ---------------------------------------------------------------- np.cov, np.corrcoef

def f_cov(m, y):
    return np.sum(np.cov(m) ** 2) + np.sum(np.cov(m.T, y, rowvar=False, ddof=2) * 1.5) + \
        np.cov(y[:, 0], bias=True) + np.sum(np.cov(m[0], y[:, 1]) ** 2)


def f_corrcoef(m, y):
    return np.sum(np.corrcoef(m) ** 3) + np.sum(np.corrcoef(m.T, y, rowvar=False) * 1.5) + \
        np.corrcoef(y[:, 0]) + np.sum(np.corrcoef(m[0], y[:, 1]) ** 2)


COV_CASES = [
    ("cov", f_cov, lambda r: (N(r, 3, 6), N(r, 6, 2))),
    ("corrcoef", f_corrcoef, lambda r: (N(r, 3, 6), N(r, 6, 2))),
]
CASES += COV_CASES
IDS += [c[0] for c in COV_CASES]


# ---------------------------------------------------------------- np.trapezoid

def f_trapezoid(y, x, h):
    return np.sum(np.trapezoid(y, x, axis=0) ** 2) + np.sum(np.trapezoid(y, dx=h) * 2.0) + \
        np.trapezoid(y[:, 0] ** 2, x) + np.sum(np.trapezoid(y, np.cos(y), axis=1) ** 2) + \
        np.sum(np.trapezoid(y, None, h, 0))


TRAPEZOID_CASES = [
    ("trapezoid", f_trapezoid, lambda r: (N(r, 5, 4), np.cumsum(P(r, 5)), float(P(r)))),
]
CASES += TRAPEZOID_CASES
IDS += [c[0] for c in TRAPEZOID_CASES]



# ---------------------------------------------------------------- edge points

def g_median_rows(a):
    return np.sum(np.median(a, axis=1))


def g_quantile_ends(a):
    return np.sum(np.quantile(a, np.array([0.0, 1.0, 0.3]), axis=1))


def g_percentile_ends(a):
    return np.sum(np.percentile(a, [0.0, 100.0, 30.0], axis=1))


def g_ptp_rows(a):
    return np.sum(np.ptp(a, axis=1))


def g_quantile_q(q):
    return np.sum(np.quantile(np.array([3.0, 1.0, 2.0, 5.0]), q))


def g_interp_x(x):
    return np.sum(np.interp(x, np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 3.0])))


def g_angle(z):
    return np.sum(np.angle(z))


TIES = np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [0.5, 0.5, 0.5, 0.5, 0.5]])


def test_median_ties_go_to_the_stable_sort_position():
    """[1, 3, 3, 2, 3] sorts (stably) as elements 0, 3, 1, 2, 4: the median is element 1;
    a constant row's median is its middle element (JAX's convention)."""
    want = np.array([[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]], float)
    np.testing.assert_array_equal(tp.grad(g_median_rows)(TIES), want)
    _, t = tp.jvp(g_median_rows, (TIES,), (np.arange(10.0).reshape(2, 5),))
    assert t == 1.0 + 7.0


def test_quantile_at_the_ends_and_between():
    """q = 0 is the first of the sorted elements, q = 1 the last, q = 0.3 (index 1.2 of 5)
    0.8 of the second and 0.2 of the third; percentile alike at q * 100."""
    want = np.array([[1.0, 0.2, 0.0, 0.8, 1.0], [1.0, 0.8, 0.2, 0.0, 1.0]])
    np.testing.assert_allclose(tp.grad(g_quantile_ends)(TIES), want, rtol=1e-14)
    np.testing.assert_allclose(tp.grad(g_percentile_ends)(TIES), want, rtol=1e-14)


def test_quantile_slope_in_q():
    """Sorted [1, 2, 3, 5], index 3q: slope 3 (s[hi] - s[lo]); at q = 0 the slope of the
    first interval (from the right), at q = 1 that of the last (from the left: inside [0, 1])
    (JAX gives 0 at every order statistic)."""
    got = tp.grad(g_quantile_q)(np.array([0.0, 1.0, 0.2, 0.5]))
    np.testing.assert_allclose(got, [3.0, 6.0, 3.0, 3.0], rtol=1e-14)


def test_ptp_ties_share_and_constant_rows_get_zero():
    want = np.array([[-1.0, 1 / 3, 1 / 3, 0.0, 1 / 3], [0.0] * 5])
    np.testing.assert_allclose(tp.grad(g_ptp_rows)(TIES), want, rtol=1e-14)


def test_interp_at_knots_and_outside():
    """A knot belongs to the interval on its right, the last knot to the last interval,
    outside [xp[0], xp[-1]] the slope is 0 (as JAX)."""
    x = np.array([0.0, 1.0, 3.0, -1.0, 4.0, 2.0])
    got = tp.vmap(tp.grad(g_interp_x))(x)
    np.testing.assert_array_equal(got, [2.0, 0.5, 0.5, 0.0, 0.0, 0.5])


def test_angle_gradient_is_minus_i_over_z():
    z = np.array([1 + 2j, -1 + 0.5j, -3 - 1j])
    np.testing.assert_allclose(tp.grad(g_angle)(z), -1j / z, rtol=1e-14)
    np.testing.assert_array_equal(tp.grad(g_angle)(np.array([2.0, -1.5, 0.0])), 0.0)


def g_nan_rows(x):
    return np.nansum(np.nansum(x, axis=1) + np.nanmean(x, axis=1) + np.nanmax(x, axis=1) +
                     np.nanmin(x, axis=1) + np.nanprod(x, axis=1) + np.nanvar(x, axis=1) +
                     np.nanstd(x, axis=1))


def g_nan_values(x):
    return (np.nansum(x, axis=1), np.nanmean(x, axis=1), np.nanmax(x, axis=1),
            np.nanmin(x, axis=1), np.nanprod(x, axis=1), np.nanvar(x, axis=1),
            np.nanstd(x, axis=1))


def test_nan_reductions_zero_at_nans_and_slices_of_nans():
    """Gradients are 0 at NaN positions and in a slice of NaNs only (as JAX); values are
    numpy's, nan in that slice (0 and 1 for nansum and nanprod)."""
    x = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = tp.grad(g_nan_rows)(x)
        # nansum 1, nanmean 1/2, nanmax/min 1 to the max (min), nanprod the other element,
        # nanvar (x - mean) * 2 / 2, nanstd (x - mean) / (2 std)
        want = np.array([[1 + 0.5 + 1 + 2 - 0.5 - 0.5, 0.0, 1 + 0.5 + 1 + 1 + 0.5 + 0.5],
                         [0.0, 0.0, 0.0]])
        np.testing.assert_allclose(g, want, rtol=1e-14)
        _, t = tp.jvp(g_nan_rows, (x,), (np.ones_like(x),))
        np.testing.assert_allclose(t, np.sum(want), rtol=1e-14)
        for got, value in zip(tp.vmap(g_nan_values)(x[None]), g_nan_values(x)):
            np.testing.assert_array_equal(got[0], value)


def test_against_jax():
    """The conventions above, side by side with JAX where it is installed."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    r = _rng(11)
    a = np.round(r.standard_normal((4, 7)), 1)          # rounded: ties
    a[0, :3] = a[0, 3]
    cases = [(g_median_rows, lambda a: jnp.sum(jnp.median(a, axis=1))),
             (g_quantile_ends, lambda a: jnp.sum(jnp.quantile(a, jnp.array([0.0, 1.0, 0.3]),
                                                              axis=1))),
             (g_ptp_rows, lambda a: jnp.sum(jnp.ptp(a, axis=1)))]
    for ours, theirs in cases:
        np.testing.assert_allclose(tp.grad(ours)(a), jax.grad(theirs)(a), rtol=1e-12,
                                   atol=1e-15, err_msg=ours.__name__)
    x = a.copy()
    x[1, 2] = x[2, :] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = jax.grad(lambda x: jnp.nansum(
            jnp.nansum(x, axis=1) + jnp.nanmean(x, axis=1) + jnp.nanmax(x, axis=1) +
            jnp.nanmin(x, axis=1) + jnp.nanprod(x, axis=1) + jnp.nanvar(x, axis=1) +
            jnp.nanstd(x, axis=1)))(x)
        np.testing.assert_allclose(tp.grad(g_nan_rows)(x), theirs, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- complex inputs
# JAX's convention: a rule is the transpose, without conjugation, of its forward rule (the
# gradient of a real f of z = x + iy is df/dx - i df/dy). Checked as tests/test_rule_edges.py
# checks it: vjp and jvp against finite differences along the real and imaginary parts.

def _direction(x, part, r):
    x = np.asarray(x)
    if x.dtype.kind != "c":
        return r.standard_normal(x.shape) if part == "re" else np.zeros(x.shape)
    d = r.standard_normal(x.shape)
    return d + 0j if part == "re" else 1j * d


def _numeric_jvp(f, args, v, eps=1e-6):
    plus = f(*[a + eps * t for a, t in zip(args, v)])
    minus = f(*[a - eps * t for a, t in zip(args, v)])
    return tree_map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps), plus, minus)


def _pairing(a, b):
    return sum(float(np.real(np.sum(np.asarray(x) * np.asarray(y))))
               for x, y in zip(tree_leaves(a), tree_leaves(b)))


def check_complex(f, args, r, tol=1e-6):
    for part in ("re", "im"):
        v = [_direction(a, part, r) for a in args]
        numeric = _numeric_jvp(f, args, v)
        out, vjp_fn = tp.vjp(f, *args)
        u = tree_map(lambda o: _direction(o, "re", r) + (
            1j * r.standard_normal(np.shape(o)) if np.iscomplexobj(o) else 0), out)
        cot = vjp_fn(u)
        for c, a in zip(tree_leaves(cot), tree_leaves(args)):
            assert np.iscomplexobj(c) == np.iscomplexobj(a), f"{f.__name__}: {np.asarray(c).dtype}"
        got, want = _pairing(cot, v), _pairing(u, numeric)
        assert np.isclose(got, want, rtol=tol, atol=tol), \
            f"{f.__name__}, reverse mode along the {part} part: {got} vs {want}"
        _, tangent = tp.jvp(f, tuple(args), tuple(v))
        for t, o, n in zip(tree_leaves(tangent), tree_leaves(out), tree_leaves(numeric)):
            assert np.iscomplexobj(t) <= np.iscomplexobj(o), f"{f.__name__}: complex tangent"
            np.testing.assert_allclose(t, n, rtol=tol, atol=tol,
                                       err_msg=f"{f.__name__}, forward mode, {part} part")


def c_angle(z):
    return np.angle(z) + np.angle(z, deg=True) * 0.5


def c_real_imag_conj(z):
    return np.real(z) * np.imag(z) + np.conj(z) * z[0]


def c_nan_to_num(z, a, b):
    return np.nan_to_num(z, nan=a, posinf=b) * 1.5


def c_nan_reductions(z):
    return (np.nansum(z, axis=0), np.nanmean(z, axis=1), np.nanvar(z, axis=0),
            np.nanstd(z), np.nanprod(z[:, :2], axis=1))


def c_average(z, w):
    avg, scl = np.average(z, axis=1, weights=w, returned=True)
    return avg * scl, np.average(z)


def c_cumulative_sum(z):
    return np.cumulative_sum(z, axis=1, include_initial=True)


def c_polyval(p, z):
    return np.polyval(p, z)


def c_interp(x, xp, fp):
    return np.interp(x, xp, fp) + np.interp(x, xp, fp, 1j, 2.0) * 0.5


def c_gradient(z):
    return np.gradient(z, 0.5, axis=0, edge_order=2), np.gradient(z[0], COORDS[:4])


def c_trapezoid(z, x):
    return np.trapezoid(z, x[:3], axis=0), np.trapezoid(z, dx=0.3)


def c_cov(z, w):
    return np.cov(z), np.cov(z, w, bias=True)


def c_corrcoef(z):
    return np.corrcoef(z)


def _with_nan_parts(z):
    z = z.copy()
    z[0, 1] = complex(np.nan, 0.7)
    z[2, 2] = complex(0.3, np.nan)
    z[1, 0] = complex(np.inf, -0.2)
    return z


def _with_nan(z):
    z = z.copy()
    z[0, 1] = complex(np.nan, 0.0)
    return z


COMPLEX_CASES = [
    (c_angle, lambda r: (C(r, 3, 4),)),
    (c_real_imag_conj, lambda r: (C(r, 3, 4),)),
    (c_nan_to_num, lambda r: (_with_nan_parts(C(r, 3, 4)), float(N(r)), float(N(r)))),
    (c_nan_reductions, lambda r: (_with_nan(C(r, 3, 4)),)),
    (c_average, lambda r: (C(r, 3, 4), C(r, 4))),
    (c_cumulative_sum, lambda r: (C(r, 3, 4),)),
    (c_polyval, lambda r: (C(r, 4), C(r, 3, 2))),
    (c_interp, lambda r: (r.uniform(-2.0, 2.5, 6), knots(r), C(r, 5))),
    (c_gradient, lambda r: (C(r, 4, 4),)),
    (c_trapezoid, lambda r: (C(r, 3, 4), np.cumsum(P(r, 3)))),
    (c_cov, lambda r: (C(r, 3, 5), C(r, 5))),
    (c_corrcoef, lambda r: (C(r, 3, 5),)),
]


@pytest.mark.parametrize("f,make", COMPLEX_CASES, ids=[c[0].__name__ for c in COMPLEX_CASES])
def test_complex(f, make):
    r = _rng(len(f.__name__), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_complex(f, make(r), r)


def c_real_of(z):
    return np.sum(np.abs(np.nansum(z, axis=0)) ** 2) + np.sum(np.nanvar(z, axis=1)) + \
        np.sum(np.angle(z)) + np.real(np.sum(np.cov(z)))


def test_complex_second_order():
    """The gradient of a real function of complex inputs, itself checked in both modes."""
    r = _rng(4)
    check_complex(tp.grad(c_real_of), (C(r, 3, 4),), r, tol=1e-4)


# ---------------------------------------------------------------- jit

JIT_CASES = ["nanvar_nanstd", "quantile", "interp", "cov", "gradient", "average", "angle"]


@pytest.mark.parametrize("name", JIT_CASES)
def test_jit_matches_the_plain_call(name):
    f, make = {c[0]: (c[1], c[2]) for c in CASES}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        args = make(_rng(9))
        np.testing.assert_allclose(tp.jit(f)(*args), f(*args), rtol=1e-12)
        grads = tp.jit(tp.grad(f))(*args)
        np.testing.assert_allclose(grads, tp.grad(f)(*args), rtol=1e-12)


# ---------------------------------------------------------------- refusals

def r_gradient_spacing(h, f):
    return np.sum(np.gradient(f, h))


def r_polyval_2d(p, x):
    return np.sum(np.polyval(p, x))


def r_quantile_weights(a):
    return np.quantile(a, 0.5, method="inverted_cdf", weights=np.ones(4))


def r_cov_weights(m):
    return np.sum(np.cov(m, fweights=np.array([1, 2, 1, 1])))


def r_trapezoid_keyword_x(y):
    return np.trapezoid(y, x=np.array([0.0, 1.0, 3.0]))


def r_nan_to_num_per_example(x, v):
    return np.sum(np.nan_to_num(x, nan=v))


def r_median_in_place(a):
    return np.sum(np.median(a, axis=0, overwrite_input=True))


def r_nan_to_num_in_place(a):
    return np.sum(np.nan_to_num(a * 1.0, copy=False))


def test_refused_variants_raise_a_clear_error():
    r = _rng(12)
    refused = [
        (tp.grad(r_gradient_spacing), (0.5, N(r, 5)), "with respect to its spacing"),
        (tp.grad(r_polyval_2d), (N(r, 3, 2), N(r, 2)), "1-D array of coefficients"),
        (tp.grad(r_quantile_weights), (N(r, 4),), "weights"),
        (tp.grad(r_cov_weights), (N(r, 2, 4),), "fweights"),
        (tp.grad(r_trapezoid_keyword_x), (N(r, 3),), "'x'"),
        (tp.vmap(r_nan_to_num_per_example), (N(r, 2, 3), N(r, 2)), "nan, posinf and neginf"),
        (tp.grad(r_median_in_place), (N(r, 3, 4),), "in place"),
        (lambda a: tp.jvp(r_nan_to_num_in_place, (a,), (a,)), (N(r, 3),), "in place"),
    ]
    for fn, args, words in refused:
        with pytest.raises(TransformError, match=words):
            fn(*args)


# ---------------------------------------------------------------- batched forms, derivatives
# vmapped code calls the batched helpers (rt.quantile_of, rt.interp_of, rt.cov_of, ...):
# their own derivatives (grad and jvp of a vmap) and their batching (vmap of vmap).

def v_quantile(a, q):
    return np.sum(tp.vmap(f_quantile)(a, q) ** 2)


def v_interp(x, xp, fp):
    return np.sum(tp.vmap(f_interp_knots, in_axes=(0, None, 0))(x, xp, fp) ** 2)


def v_cov_corrcoef(m, y):
    return np.sum(tp.vmap(f_cov)(m, y) ** 2) + np.sum(tp.vmap(f_corrcoef, in_axes=(1, None))(m, y[0]))


def v_stats(a, w, f):
    return np.sum(tp.vmap(f_average)(a, w, a * 0.5 + 1.0) ** 2) + \
        np.sum(tp.vmap(f_gradient)(f) ** 2) + np.sum(tp.vmap(f_median)(a))


def v_trapezoid_polyval(y, x, h, p):
    return np.sum(tp.vmap(f_trapezoid, in_axes=(0, 0, 0))(y, x, h) ** 2) + \
        np.sum(tp.vmap(f_polyval, in_axes=(0, None))(p, y[0, :, :2]))


VMAPPED = [
    (v_quantile, lambda r: (N(r, 2, 3, 4, 5), r.uniform(0.02, 0.98, (2, 4)))),
    (v_interp, lambda r: (r.uniform(-2.0, 2.0, (2, 7)), knots(r), N(r, 2, 5))),
    (v_cov_corrcoef, lambda r: (N(r, 2, 3, 6), N(r, 2, 6, 2))),
    (v_stats, lambda r: (N(r, 2, 3, 4, 5), P(r, 2, 4), N(r, 2, 6, 7))),
    (v_trapezoid_polyval, lambda r: (N(r, 2, 5, 4), np.cumsum(P(r, 2, 5), axis=1), P(r, 2),
                                     N(r, 2, 4))),
]


@pytest.mark.parametrize("f,make", VMAPPED, ids=[c[0].__name__ for c in VMAPPED])
def test_derivatives_of_vmapped_code(f, make):
    r = _rng(len(f.__name__), 5)
    check_grads(f, make(r), order=2, modes=("fwd", "rev"), seed=int(r.integers(1 << 30)))


def test_vmap_of_vmap_against_loops():
    """Two vmaps (the batched helpers batched again: their `lead` goes up by one), and two
    vmaps of grad, against loops."""
    r = _rng(6)
    cases = {c[0]: (c[1], c[2]) for c in CASES}
    for name in ["quantile", "percentile", "median", "interp", "cov", "corrcoef", "gradient",
                 "trapezoid", "average", "polyval", "cumulative_sum", "nanvar_nanstd"]:
        f, make = cases[name]
        draws = [[make(r) for _ in range(2)] for _ in range(2)]
        n = len(draws[0][0])
        args = [np.stack([np.stack([np.asarray(draws[i][j][k]) for j in range(2)])
                          for i in range(2)]) for k in range(n)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for fn in (f, tp.grad(f, argnums=tuple(range(n)))):
                got = tp.vmap(tp.vmap(fn))(*args)
                for i in range(2):
                    for j in range(2):
                        want = fn(*draws[i][j])
                        for g, w in zip(tree_leaves(got), tree_leaves(want)):
                            np.testing.assert_allclose(np.asarray(g)[i][j], w, rtol=1e-9,
                                                       atol=1e-11, err_msg=name)


def g_median_nan(a):
    return np.nansum(np.median(a, axis=1) * np.array([1.0, 2.0]))


def test_median_of_a_slice_with_nan_is_nan_and_passes_nothing():
    a = np.array([[1.0, np.nan, 0.5], [2.0, 0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(tp.grad(g_median_nan)(a), [[0, 0, 0], [0, 0, 2.0]])
        np.testing.assert_array_equal(tp.vmap(np.median)(a), np.median(a, axis=1))
        np.testing.assert_array_equal(tp.vmap(quantile_of_row)(a, np.array([0.0, 1.0])),
                                      [np.quantile(a[0], 0.0), np.quantile(a[1], 1.0)])


def quantile_of_row(a, q):
    return np.quantile(a, q)


# ---------------------------------------------------------------- where= and initial= of the
# reductions (refused before: "argument 'where' is not supported by its derivative rule";
# JAX code masks its means so: jnp.mean(x, where=mask))

def _masked_reductions(x, m):
    return (np.sum(x, where=m), np.mean(x, axis=1, where=m),
            np.max(x, axis=0, where=m, initial=-2.0), np.min(x, initial=0.25),
            np.prod(x, axis=1, where=m, keepdims=True), x.sum(where=m, axis=0),
            np.sum(x, initial=1.5), np.any(x > 0, where=m), np.all(x > -5, axis=1, where=m),
            x.mean(where=m))


def _masked_total(x, m):
    o = _masked_reductions(x, m)
    return sum(np.sum(v * 1.0) for v in o[:7]) + o[9]


def test_where_and_initial_of_reductions():
    r = np.random.default_rng(SEED)
    x, m = r.standard_normal((3, 4)), r.random((3, 4)) > 0.3
    m[:, 0] = True                        # a selected element in every row and column
    for got, expected in zip(tp.jit(_masked_reductions)(x, m), _masked_reductions(x, m)):
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(got, expected, rtol=1e-14)
    check_grads(lambda v: _masked_total(v, m), (x,), order=2, modes=("rev", "fwd"))
    xs, ms = r.standard_normal((2, 3, 4)), r.random((2, 3, 4)) > 0.3
    ms[..., 0] = True
    np.testing.assert_allclose(tp.vmap(_masked_total)(xs, ms),
                               [_masked_total(a, b) for a, b in zip(xs, ms)], rtol=1e-13)


_UFUNC_REDUCTIONS = [
    lambda x, m: np.add.reduce(x, 1, where=m, initial=0.5),
    lambda x, m: np.multiply.reduce(x, axis=0, where=m),
    lambda x, m: np.maximum.reduce(x, axis=1, initial=0.2),
    lambda x, m: np.minimum.reduce(x, axis=0, where=m, initial=5.0),
    lambda x, m: np.fmax.reduce(x, axis=0),
    lambda x, m: np.fmin.reduce(x, 1),
    lambda x, m: np.logical_and.reduce(x > 0, axis=1) * x[:, 0],
    lambda x, m: np.logical_or.reduce(x > 1) * x[0],
]


@pytest.mark.parametrize("k", range(len(_UFUNC_REDUCTIONS)))
def test_ufunc_reduce_with_where_initial_and_more_ufuncs(k):
    """ufunc.reduce with where=/initial= (as np.sum & co. take them), and the reductions of
    logical_and/or, fmax/fmin: refused before (JAX's lax_numpy_ufuncs_test)."""
    f = _UFUNC_REDUCTIONS[k]
    rng = np.random.default_rng(80 + k)
    x = rng.normal(size=(4, 5))
    m = x > -0.3
    np.testing.assert_allclose(tp.jit(f)(x, m), f(x, m), rtol=1e-12)
    check_grads(lambda v: np.sum(np.sin(f(v, m))), (x,), order=2, modes=("fwd", "rev"))
    xs = np.stack([x, x + 1.0, -x])
    np.testing.assert_allclose(tp.vmap(f, in_axes=(0, None))(xs, m), [f(v, m) for v in xs],
                               rtol=1e-12)
