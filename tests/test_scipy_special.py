"""The rules of scipy.special functions (transpile/rules/special.py).

Every function against finite differences to second order in both modes (fresh random
inputs, kept where it is differentiable; TP_SEED replays a run), under vmap (random
subsets of the arguments mapped along random axes, and vmap of grad) against a loop,
complex arguments where scipy takes them, edge points against exact values (mpmath where
installed), the three ways users import them, and the refusals: derivatives in an order
or shape parameter, keywords the rules do not know.
"""
import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import scipy.special  # noqa: E402  (the spelling scipy.special.erf(x))
from scipy.special import erf, gammaln, psi, xlogy  # noqa: E402

import transpile as tp  # noqa: E402
from transpile.errors import TransformError  # noqa: E402
from transpile.test_util import check_grads  # noqa: E402

import test_primitives as P  # noqa: E402
import test_rule_edges as E  # noqa: E402
import test_vmap_rules as V  # noqa: E402

SEED = P.SEED


def N(r, *s):
    return r.standard_normal(s)


def U(lo, hi):
    """A generator of uniform draws in (lo, hi)."""
    return lambda r, *s: r.uniform(lo, hi, s)


POS = U(0.5, 3.0)          # where gamma, digamma, ... are smooth and moderate
UNIT = U(0.1, 0.9)         # inside (0, 1): logit, ndtri, betainc's x
NEG = U(-2.9, -2.1)        # negative non-integers: gammaln, digamma left of the poles
AWAY = U(0.3, 3.0)         # positive, away from the singularity of Y_n and iv at 0

# ---------------------------------------------------------------- one argument

# (function, generator of x); each is checked on a (3, 4) array.
UNARY = [
    (sp.erf, N), (sp.erfc, N), (sp.erfinv, U(-0.9, 0.9)), (sp.erfcinv, U(0.1, 1.9)),
    (sp.expit, N), (sp.logit, UNIT), (sp.gamma, POS), (sp.gamma, NEG), (sp.gammaln, POS),
    (sp.gammaln, NEG), (sp.digamma, POS), (sp.digamma, NEG), (sp.rgamma, U(-3.0, 3.0)),
    (sp.i0, N), (sp.i1, N), (sp.i0e, P.S), (sp.i1e, P.S), (sp.j0, N), (sp.j1, N),
    (sp.y0, AWAY), (sp.y1, AWAY), (sp.entr, POS), (sp.ndtr, N), (sp.ndtri, UNIT),
    (sp.log_ndtr, lambda r, *s: 4.0 * r.standard_normal(s)),
]


def _unary(fn):
    def f(x):
        return fn(x)
    f.__name__ = fn.__name__
    return f


UNARY_CASES = [(_unary(fn), (lambda g: lambda r: (g(r, 3, 4),))(gen))
               for fn, gen in UNARY]


# ---------------------------------------------------------------- several arguments
# Only differentiable arguments are arguments here (check_grads differentiates them all);
# orders and shapes without a derivative are literals or module constants (refusals are
# tested below). Not arrays made inside the function: check_grads calls it as a callee,
# whose saved values second-order passes treat as differentiated, so the refusal of a
# derivative in the order fires for such a constant too (a limitation of the passes, not
# of these rules).
ORDERS = np.array([0, 1, 3, 2])
SHAPES = np.array([0.6, 1.0, 2.5, 7.0])
B_SHAPES = np.array([0.7, 2.5, 1.0, 4.0])
V_ORDERS = np.array([0.0, 1.5, -0.5, 3.0])
J_ORDERS = V_ORDERS + 1.0
IVE_ORDERS = np.array([0.0, 1.0, -2.0, 3.0])   # integers: ive(v, z < 0) is real for those only

def psi_(x): return psi(x) * x
def polygamma_(x): return sp.polygamma(2, x)
def polygamma_orders(x): return sp.polygamma(ORDERS, x)
def multigammaln_(a): return sp.multigammaln(a, 3)
def beta_(a, b): return sp.beta(a, b)
def betaln_(a, b): return sp.betaln(a, b)
def betainc_(x): return sp.betainc(1.5, B_SHAPES, x)
def gammainc_(x): return sp.gammainc(SHAPES, x)
def gammaincc_(x): return sp.gammaincc(SHAPES, x)
def iv_(z): return sp.iv(V_ORDERS, z)
def ive_(z): return sp.ive(IVE_ORDERS, z)
def jv_(z): return sp.jv(J_ORDERS, z)
def wright_bessel_(x): return sp.wright_bessel(0.6, np.array([0.5, 1.0, 1.5, 3.0]), x)
def yn_(x): return sp.yn(ORDERS, x)
def xlogy_(x, y): return sp.xlogy(x, y)
def xlog1py_(x, y): return sp.xlog1py(x, y)
def softmax_all(x): return sp.softmax(x)
def softmax_axis(x): return sp.softmax(x, axis=1)
def softmax_axes(x): return sp.softmax(x, axis=(0, 2))
def log_softmax_all(x): return sp.log_softmax(x)
def log_softmax_axis(x): return sp.log_softmax(x, axis=-2)


def _ive_signs(r, *s):
    """Both signs of z, away from the kink of exp(-|z|) at 0."""
    return P.S(r, *s) * 1.5


MULTI_CASES = [
    (psi_, lambda r: (POS(r, 3, 4),)), (polygamma_, lambda r: (POS(r, 3, 4),)),
    (polygamma_orders, lambda r: (POS(r, 3, 4),)),
    (multigammaln_, lambda r: (U(1.2, 3.0)(r, 3, 4),)),
    (beta_, lambda r: (POS(r, 3, 4), POS(r, 4))), (betaln_, lambda r: (POS(r, 3, 4), NEG(r))),
    (betainc_, lambda r: (UNIT(r, 3, 4),)), (gammainc_, lambda r: (AWAY(r, 3, 4),)),
    (gammaincc_, lambda r: (AWAY(r, 3, 4),)), (iv_, lambda r: (AWAY(r, 3, 4),)),
    (ive_, lambda r: (_ive_signs(r, 3, 4),)), (jv_, lambda r: (AWAY(r, 3, 4),)),
    (yn_, lambda r: (AWAY(r, 3, 4),)), (wright_bessel_, lambda r: (POS(r, 3, 4),)),
    (xlogy_, lambda r: (N(r, 3, 4), POS(r, 4))), (xlog1py_, lambda r: (N(r, 3, 4), UNIT(r, 4))),
    (softmax_all, lambda r: (N(r, 3, 4),)), (softmax_axis, lambda r: (N(r, 3, 4),)),
    (softmax_axes, lambda r: (N(r, 2, 3, 2),)),
    (log_softmax_all, lambda r: (N(r, 3, 4),)), (log_softmax_axis, lambda r: (N(r, 3, 4),)),
]

GRAD_CASES = UNARY_CASES + MULTI_CASES
_IDS = [f"{f.__name__}{i}" for i, (f, _) in enumerate(GRAD_CASES)]


@pytest.mark.parametrize("f,make", GRAD_CASES, ids=_IDS)
def test_second_order_in_both_modes(f, make, request):
    P._run(f, make, request.node.name)


def test_third_order():
    """The rules' own calls (polygamma(n + 1), xdivy of xdivy, ...) to one more order."""
    r = np.random.default_rng([SEED, 3])
    for f, args in [(polygamma_, (POS(r, 4),)), (_unary(sp.gammaln), (POS(r, 4),)),
                    (xlogy_, (N(r, 4), POS(r, 4))), (betainc_, (UNIT(r, 4),)),
                    (log_softmax_axis, (N(r, 3, 4),))]:
        check_grads(f, args, order=3, modes=("fwd", "rev"), seed=int(r.integers(1 << 31)))


# ---------------------------------------------------------------- vmap
# Orders and shapes are arguments here, mapped or shared at random like the others (vmap of
# grad differentiates the first argument only).

def polygamma_n(x, n): return sp.polygamma(n, x)
def yn_n(x, n): return sp.yn(n, x)
def iv_v(z, v): return sp.iv(v, z)
def ive_v(z, v): return sp.ive(v, z)
def jv_v(z, v): return sp.jv(v, z)
def gammainc_a(x, a): return sp.gammainc(a, x) + sp.gammaincc(a, 2.0 * x)
def betainc_ab(x, a, b): return sp.betainc(a, b, x)
def multigammaln_d(a): return sp.multigammaln(a, 2) * sp.multigammaln(a + 1.0, 4)


def _ints(lo, hi):
    return lambda r, *s: r.integers(lo, hi, s)


VMAP_CASES = UNARY_CASES + MULTI_CASES + [
    (polygamma_n, lambda r: (POS(r, 3, 4), _ints(0, 4)(r, 4))),
    (yn_n, lambda r: (AWAY(r, 3, 4), _ints(0, 4)(r, 3, 1))),
    (iv_v, lambda r: (AWAY(r, 3, 4), U(-1.0, 3.0)(r, 4))),
    (ive_v, lambda r: (_ive_signs(r, 3, 4), _ints(0, 4)(r, 4) * 1.0)),   # z < 0: integer v
    (jv_v, lambda r: (AWAY(r, 3, 4), U(-1.0, 3.0)(r, 3, 4))),
    (gammainc_a, lambda r: (AWAY(r, 3, 4), POS(r, 4))),
    (betainc_ab, lambda r: (UNIT(r, 3, 4), POS(r, 4), POS(r, 3, 1))),
    (multigammaln_d, lambda r: (U(2.0, 3.0)(r, 3, 4),)),
]


@pytest.mark.parametrize("f,make", VMAP_CASES,
                         ids=[f"{f.__name__}{i}" for i, (f, _) in enumerate(VMAP_CASES)])
def test_vmap_against_a_loop(f, make, request):
    # (the loop's comparison takes nan for equal to nan: the inputs must keep f finite)
    assert np.isfinite(f(*make(np.random.default_rng(SEED)))).all()
    V.run_case(f, make, request.node.name)


def test_vmap_with_explicit_axes():
    """A non-zero in_axes and an unmapped argument, forward and gradient, checked by hand."""
    r = np.random.default_rng([SEED, 5])
    x, y = N(r, 4, 3), POS(r, 4)

    def f(x, y):
        return sp.xlogy(x, y) + sp.softmax(x * y, axis=0) + sp.betaln(y, 2.0 + x * x)
    got = tp.vmap(f, in_axes=(1, None))(x, y)
    np.testing.assert_allclose(got, np.stack([f(x[:, k], y) for k in range(3)]), rtol=1e-12)
    g = tp.grad(lambda x, y: np.sum(np.sin(f(x, y))), argnums=(0, 1))
    gx, gy = tp.vmap(g, in_axes=(1, None))(x, y)
    loop = [g(x[:, k], y) for k in range(3)]
    np.testing.assert_allclose(gx, np.stack([a for a, _ in loop]), rtol=1e-10)
    np.testing.assert_allclose(gy, np.stack([b for _, b in loop]), rtol=1e-10)


def test_multigammaln_refuses_a_batched_dimension():
    with pytest.raises(TransformError, match="multigammaln cannot be batched"):
        tp.vmap(lambda a, d: sp.multigammaln(a, d))(np.full(3, 4.0), np.array([1, 2, 3]))


# ---------------------------------------------------------------- how users import them

def test_the_three_import_forms_find_the_rules():
    import scipy.special as alias
    r = np.random.default_rng([SEED, 7])
    x = POS(r, 5)

    def imported(x): return np.sum(erf(x) * gammaln(x) + xlogy(x, x))
    def aliased(x): return np.sum(alias.erf(x) * alias.gammaln(x) + alias.xlogy(x, x))
    def spelled(x): return np.sum(scipy.special.erf(x) * scipy.special.gammaln(x)
                                  + scipy.special.xlogy(x, x))
    want = (2.0 / np.sqrt(np.pi) * np.exp(-x * x) * sp.gammaln(x) + sp.erf(x) * sp.digamma(x)
            + np.log(x) + 1.0)
    for f in (imported, aliased, spelled):
        np.testing.assert_allclose(tp.grad(f)(x), want, rtol=1e-12)
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_generated_code_spells_them_through_runtime():
    src = tp.grad(lambda x: np.sum(scipy.special.gammaln(x) * erf(x))).source
    assert "rt.gammaln(x)" in src and "rt.digamma(x)" in src and "rt.erf(x)" in src
    code = [line for line in src.replace(__file__, "").splitlines()
            if not line.strip().startswith("#")]
    assert not any("scipy" in line for line in code), src


def test_jit():
    r = np.random.default_rng([SEED, 9])
    x, y = UNIT(r, 3, 4), POS(r, 4)

    def f(x, y):
        return (sp.ndtri(x) * sp.log_ndtr(y) + sp.xlog1py(y, x) + sp.betainc(y, 2.0, x)
                + sp.log_softmax(x * y, axis=1) + sp.i1e(y - 1.0))
    np.testing.assert_allclose(tp.jit(f)(x, y), f(x, y), rtol=1e-12)
    g = tp.grad(lambda x, y: np.sum(f(x, y)))
    np.testing.assert_allclose(tp.jit(g)(x, y), g(x, y), rtol=1e-12)


# ---------------------------------------------------------------- complex arguments
# The functions scipy evaluates for complex numbers; their rules are holomorphic (ive's is
# not: exp(-|Re z|)), checked along the real and the imaginary parts (JAX's convention).

def _cz(r):
    return (0.5 * E.C_off_axes(r, 3, 4) + 1.5,)


COMPLEX = [
    ("scipy.special.erf(z) + scipy.special.erfc(0.5 * z)", "z"),
    ("scipy.special.gamma(z) + scipy.special.rgamma(z)", "z"),
    ("scipy.special.ndtr(z) + scipy.special.log_ndtr(z)", "z"),
    ("scipy.special.xlogy(z, w) + scipy.special.xlog1py(w, z)", "zw"),
    ("scipy.special.iv(1.5, z) + scipy.special.jv(0.5, z)", "z"),
    ("scipy.special.ive(1.5, z) + scipy.special.ive(0.0, -z)", "z"),
    ("scipy.special.softmax(z, axis=1) + scipy.special.log_softmax(z)", "z"),
]


@pytest.mark.parametrize("expr,domain", COMPLEX, ids=[e.split("(")[0][14:] for e, _ in COMPLEX])
def test_complex(expr, domain):
    r = np.random.default_rng([SEED, len(expr)])
    if domain == "z":
        f, args = E.define("z", expr), _cz(r)
    else:
        f, args = E.define("z, w", expr), _cz(r) + (_cz(r)[0][0] + 0.5j,)
    E.check_complex(f, args, r)


def test_complex_ive_at_both_signs_of_the_real_part():
    """The non-holomorphic part, -sign(Re z) ive Re(dz), on both sides of the imaginary axis."""
    r = np.random.default_rng([SEED, 11])
    z = E.C_off_axes(r, 3, 4)
    assert (z.real < 0).any() and (z.real > 0).any()
    E.check_complex(E.define("z", "scipy.special.ive(1.0, z) * z"), (z,), r)


def test_complex_digamma_refuses_its_derivative_clearly():
    """scipy has polygamma (digamma's slope) for real arguments only."""
    z = np.array([1.0 + 0.5j, 2.0 - 1.0j])
    with pytest.raises(TransformError, match="complex"):
        tp.vjp(E.define("z", "scipy.special.digamma(z)"), z)[1](np.ones(2, complex))


# ---------------------------------------------------------------- edge points

def _d(f, order=1):
    for _ in range(order):
        f = tp.grad(f)
    return f


def test_xlogy_at_zero_follows_jax():
    """d/dx xlogy(x, y) at x = 0 is log(y); d/dy is x / y, 0 at x = 0, also at y = 0 (JAX:
    nan); the mixed second derivative is 1 / y."""
    with np.errstate(divide="ignore"):
        assert tp.grad(xlogy_, 0)(0.0, 2.0) == np.log(2.0)
        assert tp.grad(xlogy_, 1)(0.0, 2.0) == 0.0
        assert tp.grad(xlogy_, 0)(0.0, 0.0) == -np.inf
        assert tp.grad(xlogy_, 1)(0.0, 0.0) == 0.0
        assert tp.grad(xlog1py_, 1)(0.0, -1.0) == 0.0
    assert tp.grad(tp.grad(xlogy_, 0), 1)(0.0, 2.0) == 0.5
    assert tp.grad(tp.grad(xlogy_, 1), 0)(0.0, 2.0) == 0.5
    assert tp.jvp(xlogy_, (0.0, 2.0), (1.0, 1.0))[1] == np.log(2.0)


def test_entr_on_its_whole_domain():
    """-x log x for x > 0 (slope -(1 + log x)), 0 at 0 (slope +inf, as JAX), -inf for x < 0
    (a constant: slope 0, also to second order)."""
    f = _unary(sp.entr)
    with np.errstate(divide="ignore"):
        assert tp.grad(f)(0.0) == np.inf
    assert tp.grad(f)(-1.0) == 0.0 and _d(f, 2)(-1.0) == 0.0
    np.testing.assert_allclose(tp.grad(f)(2.0), -1.0 - np.log(2.0), rtol=1e-15)
    np.testing.assert_allclose(_d(f, 2)(2.0), -0.5, rtol=1e-15)


def test_rgamma_at_the_poles_of_gamma():
    """1 / Gamma is entire: at z = -n its slope is (-1)^n n!, and the second derivative is
    finite too (-rgamma digamma would be 0 * inf there)."""
    f = _unary(sp.rgamma)
    for n in range(5):
        np.testing.assert_allclose(tp.grad(f)(float(-n)), (-1) ** n * float(np.prod(
            np.arange(1, n + 1))), rtol=1e-13)
        assert np.isfinite(_d(f, 2)(float(-n)))
    mpmath = pytest.importorskip("mpmath")
    for z in (0.0, -1.0, -2.0, -2.5, 0.3, 2.0):
        np.testing.assert_allclose(_d(f, 2)(z), float(mpmath.diff(mpmath.rgamma, z, 2)),
                                   rtol=1e-10)
        np.testing.assert_allclose(tp.jvp(tp.grad(f), (z,), (1.0,))[1],
                                   float(mpmath.diff(mpmath.rgamma, z, 2)), rtol=1e-10)


def test_gammaln_and_digamma_at_negative_non_integers():
    x = np.array([-0.5, -1.5, -2.25, -3.7])
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(sp.gammaln(x)))(x), sp.digamma(x),
                               rtol=1e-14)
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(sp.digamma(x)))(x),
                               sp.polygamma(1, x), rtol=1e-14)
    check_grads(_unary(sp.gammaln), (x,), order=2, modes=("fwd", "rev"))


def test_inverse_functions_near_their_ends():
    """erfinv near +-1, ndtri and logit near 0 and 1: the slopes are reciprocals of the
    forward functions' slopes at the result (huge, not inf or nan)."""
    y = np.array([-1 + 1e-12, -0.999999, 0.999999, 1 - 1e-12])
    x = sp.erfinv(y)
    np.testing.assert_allclose(tp.grad(lambda y: np.sum(sp.erfinv(y)))(y),
                               np.sqrt(np.pi) / 2 * np.exp(x * x), rtol=1e-14)
    np.testing.assert_allclose(tp.grad(lambda y: np.sum(sp.erfcinv(1.0 - y)))(y),
                               np.sqrt(np.pi) / 2 * np.exp(sp.erfcinv(1.0 - y) ** 2),
                               rtol=1e-14)
    p = np.array([1e-300, 1e-10, 0.5, 1 - 1e-10])
    z = sp.ndtri(p)
    np.testing.assert_allclose(tp.grad(lambda p: np.sum(sp.ndtri(p)))(p),
                               np.sqrt(2 * np.pi) * np.exp(z * z / 2), rtol=1e-12)
    q = np.array([1e-12, 1e-8, 1 - 1e-8])
    np.testing.assert_allclose(tp.grad(lambda q: np.sum(sp.logit(q)))(q), 1 / (q * (1 - q)),
                               rtol=1e-14)
    check_grads(_unary(sp.erfinv), (np.array([-0.999, 0.995]),), order=2,
                modes=("fwd", "rev"), eps=1e-8, rtol=1e-4)


def test_expit_slope_in_both_tails():
    x = np.array([-800.0, -40.0, 0.0, 40.0, 800.0])
    want = np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x))) ** 2
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(sp.expit(x)))(x), want, rtol=1e-14)


def test_log_ndtr_far_in_the_left_tail():
    """pdf / ndtr computed as exp(log pdf - log_ndtr) stays accurate where both underflow."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    x = np.array([-5.0, -40.0, -300.0, -1e4, 3.0, 30.0])
    want = [float(mpmath.npdf(v) / mpmath.ncdf(v)) for v in x]
    # rtol: exp(log pdf - log_ndtr) of two numbers near -x^2 / 2 = -5e7 (at x = -1e4) loses
    # about x^2 / 2 ulps
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(sp.log_ndtr(x)))(x), want, rtol=2e-8)
    # second derivative: -s (x + s) with s the slope
    s = np.array(want)
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(tp.grad(lambda x: np.sum(
        sp.log_ndtr(x)))(x)))(x[:3]), (-s * (x + s))[:3], rtol=1e-6)


def test_incomplete_functions_at_the_ends_of_x():
    """The densities x^(a-1) e^-x / Gamma(a) and x^(a-1) (1-x)^(b-1) / B(a, b) through xlogy:
    1 and b at x = 0 for a = 1 (0 * log 0 is 0), 0 for a > 1."""
    g = tp.grad(lambda x: sp.gammainc(1.0, x) + sp.gammainc(2.0, x))
    assert g(0.0) == 1.0
    np.testing.assert_allclose(tp.grad(lambda x: sp.betainc(1.0, 3.0, x))(0.0), 3.0, rtol=1e-14)
    np.testing.assert_allclose(tp.grad(lambda x: sp.betainc(2.0, 1.0, x))(1.0), 2.0, rtol=1e-14)
    np.testing.assert_allclose(tp.grad(lambda x: sp.gammaincc(0.5, x))(2.0),
                               -np.exp(-2.0) / np.sqrt(2.0 * np.pi), rtol=1e-14)


def test_exponentially_scaled_bessel_at_zero():
    """exp(-|x|) has a kink at 0: its slope there is taken as 0 (np.sign(0)), as JAX's."""
    assert tp.grad(_unary(sp.i0e))(0.0) == 0.0
    assert tp.grad(_unary(sp.i1e))(0.0) == 0.5
    assert tp.grad(lambda x: sp.ive(1.0, x))(0.0) == 0.5


def test_float32_stays_float32():
    x = np.linspace(0.2, 0.8, 6, dtype=np.float32)
    a = np.full(6, 2.0, dtype=np.float32)
    def f(x, a): return np.sum(sp.erf(x) + sp.gammaln(x) * sp.expit(x) + sp.softmax(x) +
                               sp.xlogy(x, x) + sp.ndtri(x) + sp.gammainc(a, x))
    assert tp.grad(f)(x, a).dtype == np.float32
    assert tp.jvp(f, (x, a), (x, np.zeros_like(a)))[1].dtype == np.float32


# ---------------------------------------------------------------- refusals

REFUSED = [
    ("scipy.special.polygamma(x, 1.5)", "x", "polygamma with respect to its order n"),
    ("scipy.special.iv(x, 1.5)", "x", "iv with respect to its order v"),
    ("scipy.special.ive(x, 1.5)", "x", "ive with respect to its order v"),
    ("scipy.special.jv(x, 1.5)", "x", "jv with respect to its order v"),
    ("scipy.special.yn(x, 1.5)", "x", "yn with respect to its order n"),
    ("scipy.special.yv(x, 1.5)", "x", "yv with respect to its order v"),
    ("scipy.special.kv(x, 1.5)", "x", "kv with respect to its order v"),
    ("scipy.special.kve(x, 1.5)", "x", "kve with respect to its order v"),
    ("scipy.special.gammainc(x, 1.5)", "x", "gammainc with respect to a"),
    ("scipy.special.gammaincc(x, 1.5)", "x", "gammaincc with respect to a"),
    ("scipy.special.betainc(x, 2.0, 0.5)", "x", "betainc with respect to a"),
    ("scipy.special.betainc(2.0, x, 0.5)", "x", "betainc with respect to b"),
    ("scipy.special.wright_bessel(x, 1.0, 0.5)", "x", "wright_bessel with respect to a"),
    ("scipy.special.wright_bessel(0.5, x, 0.5)", "x", "wright_bessel with respect to b"),
]


@pytest.mark.parametrize("expr,params,message", REFUSED, ids=[m.split(" ")[0] + m[-1]
                                                             for _, _, m in REFUSED])
def test_derivatives_in_orders_and_shapes_refuse(expr, params, message):
    f = E.define(params, expr)
    with pytest.raises(TransformError, match=message + " has no derivative rule"):
        tp.grad(f)(2.0)
    with pytest.raises(TransformError, match=message + " has no derivative rule"):
        tp.jvp(f, (2.0,), (1.0,))


def test_constant_orders_are_not_refused():
    """The refusal is for a differentiated order only: the other argument still works."""
    g = tp.grad(E.define("x, v", "scipy.special.iv(v, x) * v"), argnums=0)
    np.testing.assert_allclose(g(1.3, 2.0), 2.0 * 0.5 * (sp.iv(1.0, 1.3) + sp.iv(3.0, 1.3)),
                               rtol=1e-14)


def iv_sum(x, v): return np.sum(sp.iv(v, x) * sp.gammainc(v + 1.0, x))


def test_orders_that_are_arguments_in_hessian_vector_products():
    """jvp of grad with the order an argument that is not differentiated: the rules' own calls
    (iv(v - 1, x), ...) get the order's tangent of zeros, whose term is 0, not a refusal; a
    nonzero tangent of the order still refuses."""
    r = np.random.default_rng([SEED, 17])
    x, v, t = AWAY(r, 4), U(0.0, 2.0)(r, 4), N(r, 4)
    g = tp.grad(iv_sum)
    hvp = tp.jvp(lambda x: g(x, v), (x,), (t,))[1]
    h = 1e-6
    np.testing.assert_allclose(hvp, (g(x + h * t, v) - g(x - h * t, v)) / (2 * h), rtol=1e-6)
    out, dot = tp.jvp(iv_sum, (x, v), (t, np.zeros(4)))
    np.testing.assert_allclose(dot, np.dot(g(x, v), t), rtol=1e-12)
    with pytest.raises(TransformError, match="iv with respect to its order v"):
        tp.jvp(iv_sum, (x, v), (t, t))


def test_unknown_keywords_are_refused():
    buf = np.zeros(3)
    with pytest.raises(TransformError, match="output array"):
        tp.grad(E.define("x, buf", "np.sum(scipy.special.erf(x, out=buf))"))(np.ones(3), buf)


# ---------------------------------------------------------------- against JAX

def test_first_and_second_derivatives_agree_with_jax():
    """An independent implementation: JAX's derivative rules of the same functions, first
    and second derivatives, at points inside their domains (a selection: JAX takes seconds
    to trace some of them)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    js = pytest.importorskip("jax.scipy.special")
    pairs = [
        (sp.erfinv, js.erfinv, U(-0.9, 0.9)), (sp.expit, js.expit, N), (sp.logit, js.logit, UNIT),
        (sp.gammaln, js.gammaln, NEG), (sp.digamma, js.digamma, POS), (sp.i0e, js.i0e, P.S),
        (sp.i1e, js.i1e, P.S), (sp.log_ndtr, js.log_ndtr, N), (sp.entr, js.entr, POS),
        (lambda x: sp.polygamma(2, x), lambda x: js.polygamma(2, x), POS),
        (lambda x: sp.gammainc(2.5, x), lambda x: js.gammainc(2.5, x), AWAY),
        (lambda x: sp.betainc(1.5, 2.5, x), lambda x: js.betainc(1.5, 2.5, x), UNIT),
        (lambda x: sp.xlogy(x, 2.0 + x), lambda x: js.xlogy(x, 2.0 + x), POS),
        (lambda x: sp.xlog1py(x, x), lambda x: js.xlog1py(x, x), POS),
    ]
    r = np.random.default_rng([SEED, 13])
    for ours, theirs, gen in pairs:
        x = gen(r, 5)
        # elementwise functions: the gradient of the sum is the derivative at each point
        theirs_d1 = jax.grad(lambda x: theirs(x).sum())
        g = tp.grad(lambda x: np.sum(ours(x)))
        np.testing.assert_allclose(g(x), theirs_d1(x), rtol=1e-9, atol=1e-12, err_msg=str(ours))
        np.testing.assert_allclose(tp.grad(lambda x: np.sum(g(x)))(x),
                                   jax.grad(lambda x: theirs_d1(x).sum())(x), rtol=1e-7,
                                   atol=1e-10, err_msg=str(ours))
    x, w = N(r, 3, 4), N(r, 3, 4)
    for ours, theirs in [(sp.softmax, jax.nn.softmax), (sp.log_softmax, jax.nn.log_softmax)]:
        want = jax.grad(lambda x: (theirs(x, axis=1) * w).sum())(x)
        np.testing.assert_allclose(tp.grad(lambda x: np.sum(ours(x, axis=1) * w))(x), want,
                                   rtol=1e-10)


def test_logsumexp_zero_weight_far_above_the_result():
    """A term weighted b = 0 drops out even where exp(a - out) overflows (it gave nan)."""
    grad = tp.grad(lambda a, b: scipy.special.logsumexp(a, b=b))
    np.testing.assert_array_equal(grad(np.array([-1000.0, -2.0]), np.array([1.0, 0.0])),
                                  [1.0, 0.0])
    tangent = tp.jvp(lambda a: scipy.special.logsumexp(a, b=np.array([1.0, 0.0])),
                     (np.array([-1000.0, -2.0]),), (np.array([0.5, 3.0]),))[1]
    assert tangent == 0.5


_NO_WEIGHTS = None


def _logsumexp_of_unweighted(a):
    return np.sum(scipy.special.logsumexp(a, axis=0, b=_NO_WEIGHTS))


def test_vmap_grad_of_logsumexp_with_b_none_from_a_global():
    """b=None read from outside reached the vmapped backward pass as np.asarray(None)."""
    a = np.random.default_rng(P.SEED).normal(size=(2, 3, 4))
    grad = tp.grad(_logsumexp_of_unweighted)
    np.testing.assert_allclose(tp.vmap(grad)(a), [grad(v) for v in a], rtol=1e-13)


def _logsumexp_signed(a, b):
    value, sign = scipy.special.logsumexp(a, b=b, return_sign=True)
    return value


def test_logsumexp_return_sign_under_grad_is_refused_clearly():
    """It raised numpy's broadcasting ValueError from inside the rule."""
    a, b = np.array([0.1, 0.7, -0.3]), np.array([1.0, -0.5, 2.0])
    assert tp.jit(_logsumexp_signed)(a, b) == pytest.approx(_logsumexp_signed(a, b))
    for call in (lambda: tp.grad(_logsumexp_signed)(a, b),
                 lambda: tp.jvp(_logsumexp_signed, (a, b), (a, b))):
        with pytest.raises(TransformError, match="return_sign=True"):
            call()


def _bessel_of(v, x):
    return scipy.special.jv(v, x) + scipy.special.iv(v, x)


def test_an_order_that_is_not_differentiated_is_no_error():
    """jacrev/hessian with argnums=1 computed the order's adjoint too, and grad(grad) of a
    closure over the order met it in the saved values of the inner gradient: the order's
    missing rule raised although only x was differentiated. Its adjoint is refused only
    where it is used (rt.no_derivative's MissingDerivative)."""
    v, x, xs = 1.5, 2.0, np.array([1.0, 2.0, 3.0])

    def second(t):
        return sp.jvp(v, t, 2) + sp.ivp(v, t, 2)

    def first(t):
        return sp.jvp(v, t, 1) + sp.ivp(v, t, 1)

    np.testing.assert_allclose(tp.hessian(_bessel_of, argnums=1)(v, x), second(x), rtol=1e-10)
    np.testing.assert_allclose(np.diag(tp.jacrev(_bessel_of, argnums=1)(v, xs)), first(xs),
                               rtol=1e-10)
    closed = lambda t: _bessel_of(v, t)      # noqa: E731
    np.testing.assert_allclose(tp.grad(tp.grad(closed))(x), second(x), rtol=1e-10)
    np.testing.assert_allclose(tp.hessian(closed)(x), second(x), rtol=1e-10)
    for asked in (lambda: tp.grad(_bessel_of)(v, x), lambda: tp.jacrev(_bessel_of)(v, xs),
                  lambda: tp.vjp(_bessel_of, v, x)[1](1.0)):
        with pytest.raises(TransformError, match="with respect to its order"):
            asked()


def _poisson_deviance(p, y):       # sklearn's MLP poisson_loss: xlogy(y_true, y_true / y_pred)
    return np.sum(xlogy(y, y / p) - y + p)


def test_xlogy_second_derivatives_where_x_is_zero():
    """A zero tangent (or adjoint) of xlogy's x at y == 0 gave 0 * log(0) = nan: the Hessian
    of a Poisson deviance with a zero count was nan in that row (its gradient was right).
    xlogy, xlog1py and xdivy now add exactly 0 for a zero tangent of x."""
    y, p = np.array([0.0, 2.0, 3.0]), np.array([0.7, 1.3, 2.2])
    expected = np.diag(y / p ** 2)
    for hess in (tp.hessian(_poisson_deviance), tp.jacrev(tp.jacrev(_poisson_deviance)),
                 tp.jacfwd(tp.grad(_poisson_deviance))):
        np.testing.assert_allclose(hess(p, y), expected, rtol=1e-12, atol=1e-15)
    tangents = (np.array([1.0, 0.0, 0.0]), np.zeros(3))
    np.testing.assert_allclose(tp.jvp(tp.grad(_poisson_deviance), (p, y), tangents)[1],
                               expected[0], atol=1e-15)
    check_grads(_poisson_deviance, (p, y + 0.5), order=2, modes=("fwd", "rev"))
