"""scipy.stats distributions (transpile/rules/stats.py): values equal scipy's, derivatives
checked against finite differences to second order in both modes in every differentiable
argument, batching against a Python loop, and the derivatives that have no closed form
refused with a TransformError.

Inputs are fresh random float64 arrays (set TP_SEED to replay a run), inside the support.
"""
import functools
import os
import zlib

import numpy as np
import pytest

import transpile as tp
from transpile.errors import TransformError
from transpile.test_util import check_grads

scipy = pytest.importorskip("scipy")
import scipy.stats  # noqa: E402
import scipy.stats as st  # noqa: E402
from scipy.stats import norm  # noqa: E402

SEED = int(os.environ.get("TP_SEED", np.random.SeedSequence().entropy % (1 << 32)))


def rng_for(name):
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


def replayable(fn):
    """Add the seed to a failure's message."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AssertionError as e:
            raise AssertionError(f"{e}\n  (replay with TP_SEED={SEED})") from None
    return run


# ---------------------------------------------------------------- the scalar distributions
# name -> (shape parameters: draw(rng, n)), z = (x - loc) / scale drawn inside the support

SHAPES = {
    "norm": {},
    "cauchy": {},
    "t": {"df": lambda r, n: r.uniform(1.5, 6.0, n)},
    "beta": {"a": lambda r, n: r.uniform(0.7, 4.0, n), "b": lambda r, n: r.uniform(0.7, 4.0, n)},
    "gamma": {"a": lambda r, n: r.uniform(0.7, 4.0, n)},
    "chi2": {"df": lambda r, n: r.uniform(1.5, 6.0, n)},
}
Z = {"norm": lambda r, n: r.standard_normal(n), "cauchy": lambda r, n: r.standard_cauchy(n),
     "t": lambda r, n: 1.5 * r.standard_normal(n),
     "beta": lambda r, n: r.uniform(0.15, 0.85, n), "gamma": lambda r, n: r.uniform(0.3, 3.0, n),
     "chi2": lambda r, n: r.uniform(0.3, 4.0, n)}
DENSITIES = ["pdf", "logpdf"]
CUMULATIVE = ["cdf", "logcdf", "sf", "logsf"]


def draw(dist, r, n=4):
    """(x, shape parameters..., loc, scale)."""
    loc = r.standard_normal(n)
    scale = r.uniform(0.5, 2.0, n)
    x = loc + scale * Z[dist](r, n)
    return (x,) + tuple(s(r, n) for s in SHAPES[dist].values()) + (loc, scale)


def method(dist, name):
    return getattr(getattr(scipy.stats, dist), name)


def by_arity(fn, k, total=np.sum):
    """f(x, params...) = total(fn(...)) with k positional arguments, written out (the
    front end binds a call's arguments as written)."""
    if k == 3:
        return lambda x, loc, scale: total(fn(x, loc=loc, scale=scale))
    if k == 4:
        return lambda x, a, loc, scale: total(fn(x, a, loc, scale=scale))
    return lambda x, a, b, loc, scale: total(fn(x, a, b, loc=loc, scale=scale))


def same(v):
    return v


CASES = [(d, m) for d in SHAPES for m in DENSITIES + CUMULATIVE]


@pytest.mark.parametrize("dist,name", CASES, ids=[f"{d}.{m}" for d, m in CASES])
@replayable
def test_values_equal_scipy(dist, name):
    args = draw(dist, rng_for(f"value {dist}.{name}"))
    fn = method(dist, name)
    f = by_arity(fn, len(args))
    want = np.sum(fn(*args))
    assert np.allclose(tp.jit(f)(*args), want, rtol=1e-12, atol=0)
    got = tp.vmap(by_arity(fn, len(args), same))(*args)   # an example per element
    assert np.allclose(got, fn(*args), rtol=1e-12, atol=0)


@pytest.mark.parametrize("dist,name", CASES, ids=[f"{d}.{m}" for d, m in CASES])
@replayable
def test_derivatives(dist, name):
    args = draw(dist, rng_for(f"grad {dist}.{name}"))
    fn = method(dist, name)
    k = len(args)
    if name in DENSITIES:     # every argument
        check_grads(by_arity(fn, k), args, order=2, modes=("fwd", "rev"))
        return
    # the cumulative ones in x, loc and scale; their shape parameters are held (as globals:
    # a closure's arrays get zero tangents in tp.jvp, which the refusals would refuse)
    HELD["a"], HELD["b"] = (args[1:-2] + (None, None))[:2]
    check_grads(held_shapes(fn, len(args) - 3), (args[0], args[-2], args[-1]), order=2,
                modes=("fwd", "rev"))


HELD = {}


QUANTILES = [(d, m) for d in ("norm", "cauchy") for m in ("ppf", "isf")]


@pytest.mark.parametrize("dist,name", QUANTILES, ids=[f"{d}.{m}" for d, m in QUANTILES])
@replayable
def test_quantile_functions(dist, name):
    """ppf and isf in q, loc and scale: values, derivatives to second order in both modes,
    vmap of the gradient against a loop; and statsmodels' spelling `norm._ppf(q)`."""
    r = rng_for(f"quantile {dist}.{name}")
    q, loc, scale = r.uniform(0.03, 0.97, 5), r.standard_normal(5), r.uniform(0.5, 2.0, 5)
    fn = method(dist, name)
    f = by_arity(fn, 3)
    assert np.allclose(tp.jit(f)(q, loc, scale), np.sum(fn(q, loc, scale)), rtol=1e-12)
    check_grads(f, (q, loc, scale), order=2, modes=("fwd", "rev"))
    qs = r.uniform(0.03, 0.97, (3, 5))
    g = tp.grad(f)
    np.testing.assert_allclose(tp.vmap(g, in_axes=(0, None, None))(qs, loc, scale),
                               np.stack([g(row, loc, scale) for row in qs]), rtol=1e-12)
    if dist == "norm":
        private = getattr(norm, "_" + name)
        check_grads(lambda q: np.sum(private(q)), (q,), order=2, modes=("fwd", "rev"))


def held_shapes(fn, n):
    """f(x, loc, scale), the n shape parameters read from HELD."""
    if n == 0:
        return lambda x, loc, scale: np.sum(fn(x, loc=loc, scale=scale))
    if n == 1:
        return lambda x, loc, scale: np.sum(fn(x, HELD["a"], loc=loc, scale=scale))
    return lambda x, loc, scale: np.sum(fn(x, HELD["a"], HELD["b"], loc, scale))


@pytest.mark.parametrize("dist", [d for d in SHAPES if SHAPES[d]])
def test_cumulative_refuse_shape_parameters(dist):
    args = draw(dist, rng_for(f"refuse {dist}"))
    for name in CUMULATIVE:
        fn = method(dist, name)
        f = by_arity(fn, len(args))
        for p in range(1, len(args) - 2):       # each shape parameter
            with pytest.raises(TransformError, match=f"scipy.stats.{dist}.{name} with respect"):
                tp.grad(f, argnums=p)(*args)
            tangents = tuple(np.ones_like(a) if i == p else np.zeros_like(a)
                             for i, a in enumerate(args))
            with pytest.raises(TransformError, match="no closed form"):
                tp.jvp(f, args, tangents)


def test_default_and_keyword_parameters():
    """scipy's defaults (loc=0, scale=1) and every way of passing the parameters."""
    r = rng_for("spellings")
    x, mu, sigma, df = r.standard_normal(5), r.standard_normal(5), r.uniform(0.5, 2, 5), 3.5

    def f(x, mu, sigma):
        return np.sum(scipy.stats.norm.logpdf(x, loc=mu, scale=sigma) + norm.pdf(x, 0, 1)
                      + norm.cdf(x) + st.t.logpdf(x, df) + st.t.logpdf(x, df=df, scale=sigma)
                      + st.gamma.logpdf(sigma, a=mu * mu + 1.0)
                      + scipy.stats.chi2.logsf(sigma, 3.0, mu - 5.0))

    want = np.sum(scipy.stats.norm.logpdf(x, loc=mu, scale=sigma) + norm.pdf(x, 0, 1)
                  + norm.cdf(x) + st.t.logpdf(x, df) + st.t.logpdf(x, df=df, scale=sigma)
                  + st.gamma.logpdf(sigma, a=mu * mu + 1.0)
                  + scipy.stats.chi2.logsf(sigma, 3.0, mu - 5.0))
    assert np.allclose(tp.jit(f)(x, mu, sigma), want, rtol=1e-12)
    check_grads(f, (x, mu, sigma), order=2, modes=("fwd", "rev"))
    source = tp.grad(f).source
    code = [line for line in source.splitlines() if " = " in line and "#" not in line]
    assert any("rt.norm_logpdf(" in line for line in code)
    assert not any("scipy" in line for line in code)      # generated code imports runtime


@replayable
def test_vmap_against_a_loop():
    r = rng_for("vmap")
    for dist in SHAPES:
        for name in DENSITIES + CUMULATIVE:
            fn = method(dist, name)
            per = draw(dist, r, 3)                   # one example: arrays of 3
            batch = [draw(dist, r, 3) for _ in range(4)]
            k = len(per)
            f = by_arity(fn, k)
            for mapped in ([0], list(range(1, k)), list(range(k))):   # x, parameters, all
                axes = tuple(1 if i in mapped else None for i in range(k))
                args = tuple(np.stack([b[i] for b in batch], 1) if i in mapped else per[i]
                             for i in range(k))
                examples = [tuple(batch[j][i] if i in mapped else per[i] for i in range(k))
                            for j in range(4)]
                got = tp.vmap(f, in_axes=axes)(*args)
                want = np.stack([f(*e) for e in examples])
                np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{dist}.{name}")
                wrt = tuple(i for i in range(k) if name in DENSITIES or i in (0, k - 2, k - 1))
                g = tp.grad(f, argnums=wrt)
                got = tp.vmap(g, in_axes=axes)(*args)
                want = [g(*e) for e in examples]
                for j in range(len(wrt)):
                    np.testing.assert_allclose(got[j], np.stack([w[j] for w in want]),
                                               rtol=1e-10, atol=1e-12,
                                               err_msg=f"{dist}.{name} d/d arg {wrt[j]}")


# ---------------------------------------------------------------- edges of the support

def test_outside_the_support_gradients_are_zero():
    """Where logpdf is -inf (pdf 0) the function is constant: derivatives 0, not nan."""
    x = np.array([-1.0, 0.5, 2.0])
    for dist in ("gamma", "chi2", "beta"):
        for name in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
            fn = method(dist, name)
            if dist == "beta":
                f = lambda x: np.sum(np.where(np.isfinite(fn(x, 2.0, 3.0)), fn(x, 2.0, 3.0), 0.0))
            else:
                f = lambda x: np.sum(np.where(np.isfinite(fn(x, 2.0)), fn(x, 2.0), 0.0))
            for g in (tp.grad(f)(x), tp.jvp(f, (x,), (np.ones(3),))[1]):
                assert np.all(np.isfinite(g)), (dist, name, g)
            g = tp.grad(f)(x)
            outside = (x < 0) | ((x > 1) if dist == "beta" else False)
            assert np.all(g[outside] == 0.0), (dist, name, g)


def test_logcdf_deep_in_the_tail():
    """d logcdf / dx = pdf / cdf, from log values: finite far in the lower tail."""
    x = np.array([-40.0, -10.0, 0.0, 10.0])
    g = tp.grad(lambda x: np.sum(norm.logcdf(x)))(x)
    ref = np.exp(norm.logpdf(x) - norm.logcdf(x))
    np.testing.assert_allclose(g, ref, rtol=1e-10)
    g = tp.grad(lambda x: np.sum(norm.logsf(x)))(-x)
    np.testing.assert_allclose(g, -ref, rtol=1e-10)


# ---------------------------------------------------------------- poisson

POISSON = ["pmf", "logpmf", "cdf", "logcdf", "sf", "logsf"]


def poisson_of_mu(fn, loc=False):
    """sum(fn(k, mu[, loc=2])) with k read from HELD (a closure's array would get a zero
    tangent in tp.jvp, where the refusal in k applies)."""
    if loc:
        return lambda mu: np.sum(fn(HELD["k"], mu, loc=2.0))
    return lambda mu: np.sum(fn(HELD["k"], mu))


@pytest.mark.parametrize("name", POISSON)
@replayable
def test_poisson(name):
    r = rng_for(f"poisson {name}")
    k = r.integers(0, 8, 6).astype(float)
    mu = r.uniform(0.5, 6.0, 6)
    fn = method("poisson", name)
    HELD["k"] = k
    np.testing.assert_allclose(tp.jit(poisson_of_mu(fn))(mu), np.sum(fn(k, mu)), rtol=1e-12)
    check_grads(poisson_of_mu(fn), (mu,), order=2, modes=("fwd", "rev"))
    HELD["k"] = k + 2.0
    check_grads(poisson_of_mu(fn, loc=True), (mu,), order=2, modes=("fwd", "rev"))
    if name != "logpmf":          # (-inf there: test_poisson_mu_edges)
        HELD["k"] = k + 0.5       # between counts: the cdf's step, the pmf's 0
        check_grads(poisson_of_mu(fn), (mu,), order=2, modes=("fwd", "rev"))
    # batched over mu, over k, and per-example gradients
    mus = r.uniform(0.5, 6.0, (3, 6))
    ks = r.integers(0, 8, (3, 6)).astype(float)
    f = lambda mu, k: fn(k, mu)
    g = tp.grad(lambda mu, k: np.sum(fn(k, mu)))
    np.testing.assert_allclose(tp.vmap(f, in_axes=(1, None))(mus.T, k),
                               np.stack([fn(k, m) for m in mus]), rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(f, in_axes=(None, 0))(mu, ks),
                               np.stack([fn(kk, mu) for kk in ks]), rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(g, in_axes=(0, None))(mus, k),
                               np.stack([g(m, k) for m in mus]), rtol=1e-10)
    np.testing.assert_allclose(tp.vmap(g, in_axes=(None, 0))(mu, ks),
                               np.stack([g(mu, kk) for kk in ks]), rtol=1e-10)
    np.testing.assert_allclose(tp.vmap(g)(mus, ks),
                               np.stack([g(m, kk) for m, kk in zip(mus, ks)]), rtol=1e-10)
    # k and loc are counts: no derivative
    with pytest.raises(TransformError, match=f"poisson.{name} with respect to k"):
        tp.grad(lambda k, mu: np.sum(fn(k, mu)))(k, mu)
    with pytest.raises(TransformError, match=f"poisson.{name} with respect to k"):
        tp.jvp(lambda k, mu: np.sum(fn(k, mu)), (k, mu), (np.ones(6), np.zeros(6)))
    with pytest.raises(TransformError, match=f"poisson.{name} with respect to loc"):
        tp.jvp(lambda loc, mu: np.sum(fn(k, mu, loc)), (1.0, mu), (1.0, np.ones(6)))


def test_poisson_mu_edges():
    """pmf and cdf outside the support (k < 0, k not an integer) have derivative 0."""
    k = np.array([-1.0, 2.5, 0.0, 3.0])
    mu = np.array([2.0, 2.0, 2.0, 2.0])
    for name in POISSON:
        fn = method("poisson", name)
        g = tp.grad(lambda mu: np.sum(np.where(np.isfinite(fn(k, mu)), fn(k, mu), 0.0)))(mu)
        assert np.all(np.isfinite(g)), (name, g)
    g = tp.grad(lambda mu: np.sum(scipy.stats.poisson.logpmf(k, mu)))(mu)
    np.testing.assert_allclose(g, [0.0, 0.0, -1.0, 3.0 / 2.0 - 1.0])


# ---------------------------------------------------------------- multivariate_normal

from scipy.stats import dirichlet, multivariate_normal as mvn  # noqa: E402


def spd(r, d, n=None):
    """A random symmetric positive definite matrix (or n of them)."""
    a = r.standard_normal((d, d) if n is None else (n, d, d))
    return a @ np.swapaxes(a, -1, -2) + d * np.eye(d)


def sym(s):
    """The symmetric part: the convention for derivatives in cov (module docstring of
    transpile/rules/stats.py): scipy reads one triangle, so a perturbation of cov is
    meaningful only when symmetric."""
    return (s + s.T) / 2


# (x shape, mean shape or None, cov kind) in scipy's layouts
MVN_LAYOUTS = [((5, 3), (3,), "matrix"), ((3,), (3,), "matrix"), ((2, 4, 3), (3,), "matrix"),
               ((1, 3), (3,), "matrix"), ((5, 3), None, "matrix"), ((5, 3), (3,), "diagonal"),
               ((5, 3), (3,), "number"), ((6,), (), "number"), ((), (), "number"),
               ((6,), (1,), "matrix"), ((6, 1), None, "matrix")]


def mvn_case(r, x_shape, mean_shape, kind):
    d = 1 if mean_shape in ((), (1,)) or (mean_shape is None and x_shape[-1:] == (1,)) \
        else x_shape[-1]
    x = r.standard_normal(x_shape)
    mean = None if mean_shape is None else r.standard_normal(mean_shape)
    cov = {"matrix": spd(r, d), "diagonal": r.uniform(0.5, 2.0, d),
           "number": r.uniform(0.5, 2.0)}[kind]
    return x, mean, cov


@pytest.mark.parametrize("layout", MVN_LAYOUTS, ids=[str(c) for c in MVN_LAYOUTS])
@replayable
def test_multivariate_normal(layout):
    r = rng_for(f"mvn {layout}")
    x, mean, cov = mvn_case(r, *layout)
    matrix = np.ndim(cov) == 2
    for fn in (mvn.logpdf, mvn.pdf):
        want = fn(x, mean, cov)
        got = tp.jit(lambda x, mean, cov: fn(x, mean, cov))(x, mean, cov)
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        if mean is None:
            check_grads(lambda x, cov: np.sum(fn(x, cov=sym(cov) if matrix else cov)),
                        (x, cov), order=2, modes=("fwd", "rev"))
        else:
            check_grads(lambda x, mean, cov: np.sum(fn(x, mean, sym(cov) if matrix else cov)),
                        (x, mean, cov), order=2, modes=("fwd", "rev"))


def test_multivariate_normal_gradient_in_cov_is_symmetric():
    """d/dcov = (sum_n w w^T - N inv(cov)) / 2 (JAX's convention): symmetric, and a symmetric
    perturbation of cov moves scipy's value by its inner product with it."""
    r = rng_for("mvn symmetric")
    x, mean, cov = r.standard_normal((4, 3)), r.standard_normal(3), spd(r, 3)
    g = tp.grad(lambda cov: np.sum(mvn.logpdf(x, mean, cov)))(cov)
    prec = np.linalg.inv(cov)
    w = (x - mean) @ prec
    np.testing.assert_allclose(g, 0.5 * (w.T @ w - 4 * prec), rtol=1e-10)
    # (symmetric to rounding: an entry near zero is a difference of terms near 0.3, so
    # its relative error alone may pass 1e-12; CI saw 2e-12 at an entry of 7e-6)
    np.testing.assert_allclose(g, g.T, rtol=1e-12, atol=1e-14 * np.abs(g).max())
    e = r.standard_normal((3, 3))
    e = e + e.T
    h = 1e-6
    fd = (np.sum(mvn.logpdf(x, mean, cov + h * e)) - np.sum(mvn.logpdf(x, mean, cov - h * e))) \
        / (2 * h)
    np.testing.assert_allclose(np.sum(g * e), fd, rtol=1e-6)
    _, t = tp.jvp(lambda cov: np.sum(mvn.logpdf(x, mean, cov)), (cov,), (e,))
    np.testing.assert_allclose(t, fd, rtol=1e-6)


def test_multivariate_normal_vmap():
    r = rng_for("mvn vmap")
    n, d = 4, 3
    xs, means, covs = r.standard_normal((n, 5, d)), r.standard_normal((n, d)), spd(r, d, n)

    def f(x, mean, cov):
        return mvn.logpdf(x, mean=mean, cov=cov)

    def loss(x, mean, cov):
        return np.sum(mvn.pdf(x, mean, sym(cov)) + f(x, mean, sym(cov)))

    g = tp.grad(loss, argnums=(0, 1, 2))
    for mapped in ([0], [1], [2], [0, 1], [1, 2], [0, 1, 2]):
        full = (xs, means, covs)
        one = (xs[0], means[0], covs[0])
        args = tuple(np.moveaxis(full[i], 0, 1) if i == 0 and i in mapped else
                     full[i] if i in mapped else one[i] for i in range(3))
        axes = tuple((1 if i == 0 else 0) if i in mapped else None for i in range(3))
        examples = [tuple(full[i][j] if i in mapped else one[i] for i in range(3))
                    for j in range(n)]
        for fn in (f, lambda x, mean, cov: mvn.pdf(x, mean, cov)):
            np.testing.assert_allclose(tp.vmap(fn, in_axes=axes)(*args),
                                       np.stack([fn(*e) for e in examples]), rtol=1e-10)
        got = tp.vmap(g, in_axes=axes)(*args)
        want = [g(*e) for e in examples]
        for k in range(3):
            np.testing.assert_allclose(got[k], np.stack([w[k] for w in want]), rtol=1e-9,
                                       atol=1e-12, err_msg=f"mapped {mapped}, d/d arg {k}")
    # per-example layouts: one point each, d = 1 with scalars, a diagonal cov
    pts = r.standard_normal((n, d))
    np.testing.assert_allclose(tp.vmap(f)(pts, means, covs),
                               [f(*e) for e in zip(pts, means, covs)], rtol=1e-10)
    xs1, m1, c1 = r.standard_normal((n, 6)), r.standard_normal(n), r.uniform(0.5, 2, n)
    np.testing.assert_allclose(tp.vmap(f)(xs1, m1, c1),
                               np.stack([f(*e) for e in zip(xs1, m1, c1)]), rtol=1e-10)
    diag = r.uniform(0.5, 2, (n, d))
    np.testing.assert_allclose(tp.vmap(f, in_axes=(None, None, 0))(xs[0], means[0], diag),
                               np.stack([f(xs[0], means[0], c) for c in diag]), rtol=1e-10)
    np.testing.assert_allclose(tp.vmap(f, in_axes=(0, None, None))(xs, None, covs[0]),
                               np.stack([f(x, None, covs[0]) for x in xs]), rtol=1e-10)
    # vmap of vmap, and a gradient through it
    xx = r.standard_normal((2, n, 5, d))
    got = tp.vmap(tp.vmap(f, in_axes=(0, 0, None)), in_axes=(0, None, 0))(xx, means, covs[:2])
    want = np.stack([np.stack([f(xx[i, j], means[j], covs[i]) for j in range(n)])
                     for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-10)
    outer = tp.grad(lambda covs: np.sum(tp.vmap(loss, in_axes=(0, 0, 0))(xs, means, covs)))
    np.testing.assert_allclose(outer(covs), np.stack([g(*e)[2] for e in zip(xs, means, covs)]),
                               rtol=1e-9)


def test_multivariate_normal_refusals():
    r = rng_for("mvn refusals")
    x, mean, cov = r.standard_normal((3, 2)), r.standard_normal(2), spd(r, 2)
    # the cdf is a randomized estimate: its value passes, its derivatives refuse
    got = tp.jit(lambda x, mean: mvn.cdf(x, mean, cov))(x, mean)
    np.testing.assert_allclose(got, mvn.cdf(x, mean, cov), atol=1e-4)
    xs = r.standard_normal((3, 4, 2))
    got = tp.vmap(lambda x, mean: mvn.cdf(x, mean, cov), in_axes=(0, None))(xs, mean)
    np.testing.assert_allclose(got, [mvn.cdf(x, mean, cov) for x in xs], atol=1e-4)
    with pytest.raises(TransformError, match="multivariate_normal.cdf has no derivative"):
        tp.grad(lambda x: np.sum(mvn.cdf(x, mean, cov)))(x)
    with pytest.raises(TransformError, match="multivariate_normal.cdf has no derivative"):
        tp.jvp(lambda mean: np.sum(mvn.cdf(x, mean, cov)), (mean,), (np.ones(2),))
    # a singular cov (allowed): the value passes, its derivative refuses
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    f = lambda x: np.sum(mvn.logpdf(x, mean, singular, allow_singular=True))
    np.testing.assert_allclose(tp.jit(f)(x), f(x), rtol=1e-12)
    with pytest.raises(TransformError, match="singular cov"):
        tp.grad(f)(x)
    # a nonsingular one with allow_singular=True differentiates as usual
    check_grads(lambda x: np.sum(mvn.logpdf(x, mean, cov, True)), (x,), order=2,
                modes=("fwd", "rev"))


# ---------------------------------------------------------------- dirichlet

def simplex(z):
    """Points of the simplex (along axis 0): a parametrization for derivatives in x, whose
    perturbations must stay on the simplex (scipy refuses points off it)."""
    e = np.exp(z - np.max(z, 0))
    return e / np.sum(e, 0)


@pytest.mark.parametrize("shape", [(4,), (4, 5), (4, 1)])
@replayable
def test_dirichlet(shape):
    r = rng_for(f"dirichlet {shape}")
    z, alpha = r.standard_normal(shape), r.uniform(0.6, 3.0, shape[0])
    x = simplex(z)
    for fn in (dirichlet.logpdf, dirichlet.pdf):
        for given in (x, x[:-1]):           # K components, or K - 1 (the last is 1 - sum)
            want = fn(given, alpha)
            got = tp.jit(lambda x, alpha: fn(x, alpha))(given, alpha)
            assert np.shape(got) == np.shape(want)
            np.testing.assert_allclose(got, want, rtol=1e-12)
        check_grads(lambda z, alpha: np.sum(fn(simplex(z), alpha)), (z, alpha), order=2,
                    modes=("fwd", "rev"))
        # K - 1 free components (kept small, so that 1 - sum stays positive)
        free = x[:-1] * 0.9
        check_grads(lambda free, alpha: np.sum(fn(free, alpha)), (free, alpha), order=2,
                    modes=("fwd", "rev"), eps=1e-7)


def test_dirichlet_gradient_formula():
    """JAX's convention: d/dx_i = (alpha_i - 1) / x_i in every component."""
    x, alpha = np.array([0.2, 0.3, 0.5]), np.array([1.5, 1.0, 3.0])
    g = tp.grad(lambda x: dirichlet.logpdf(x, alpha))(x)
    np.testing.assert_allclose(g, (alpha - 1) / x, rtol=1e-12)
    g = tp.grad(lambda x: dirichlet.logpdf(x, alpha))(x[:2])
    np.testing.assert_allclose(g, (alpha[:2] - 1) / x[:2] - (alpha[2] - 1) / x[2], rtol=1e-12)


def test_dirichlet_vmap():
    r = rng_for("dirichlet vmap")
    n, K = 3, 4
    xs = np.stack([simplex(r.standard_normal((K, 5))) for _ in range(n)])
    alphas = r.uniform(0.6, 3.0, (n, K))

    def loss(x, alpha):
        return np.sum(dirichlet.logpdf(x[:-1], alpha) + dirichlet.pdf(x, alpha))

    g = tp.grad(loss, argnums=(0, 1))
    for axes in ((0, None), (None, 0), (0, 0), (2, 0)):
        args = (np.moveaxis(xs, 0, axes[0]) if axes[0] is not None else xs[0],
                alphas if axes[1] is not None else alphas[0])
        examples = [(xs[j] if axes[0] is not None else xs[0],
                     alphas[j] if axes[1] is not None else alphas[0]) for j in range(n)]
        for fn in (lambda x, alpha: dirichlet.logpdf(x, alpha),
                   lambda x, alpha: dirichlet.pdf(x[:-1], alpha)):
            np.testing.assert_allclose(tp.vmap(fn, in_axes=axes)(*args),
                                       np.stack([fn(*e) for e in examples]), rtol=1e-10)
        got = tp.vmap(g, in_axes=axes)(*args)
        want = [g(*e) for e in examples]
        for k in range(2):
            np.testing.assert_allclose(got[k], np.stack([w[k] for w in want]), rtol=1e-9,
                                       err_msg=f"in_axes {axes}, d/d arg {k}")
    # one point per example, vmap of vmap
    pts = np.stack([simplex(r.standard_normal(K)) for _ in range(n)])
    f = lambda x, alpha: dirichlet.logpdf(x, alpha)
    np.testing.assert_allclose(tp.vmap(f)(pts, alphas), [f(*e) for e in zip(pts, alphas)],
                               rtol=1e-10)
    got = tp.vmap(tp.vmap(f, in_axes=(0, None)), in_axes=(None, 0))(pts, alphas)
    np.testing.assert_allclose(got, [[f(p, a) for p in pts] for a in alphas], rtol=1e-10)
    # off the simplex: scipy's error in the batched call too
    with pytest.raises(ValueError, match="simplex"):
        tp.vmap(f, in_axes=(0, 0))(pts * 0.9, alphas)


def test_a_distribution_method_transformed_itself():
    """tp.vmap(norm.logpdf) (JAX's advi.py): the bound method was taken for a model's
    method and its source (scipy's, with *args) refused; it is a primitive with rules."""
    from scipy.stats import norm as normal
    rng = np.random.default_rng(47)
    x, mu = rng.normal(size=5), rng.normal(size=5)
    np.testing.assert_allclose(tp.vmap(normal.logpdf, in_axes=(0, 0, None))(x, mu, 1.5),
                               normal.logpdf(x, mu, 1.5), rtol=1e-12)
    np.testing.assert_allclose(tp.grad(normal.logpdf)(x[0], mu[0], 2.0),
                               -(x[0] - mu[0]) / 4.0, rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(tp.grad(normal.cdf))(x), normal.pdf(x), rtol=1e-12)


# ---------------------------------------------------------------- ends of the support where
# the density is finite (gamma and chi2 at x = loc with a = 1, df = 2; beta at z = 0 with
# a = 1 and z = 1 with b = 1): the rules took the end as outside, every derivative 0

def _one_sided(f, args, k, h=1e-7):
    """The derivative of f in argument k, by a central difference if both sides are in
    the support, else from the side that is."""
    up = list(args)
    down = list(args)
    up[k] += h
    down[k] -= h
    upper, lower, at = f(*up), f(*down), f(*args)
    if np.isfinite(lower) and np.isfinite(upper) and (lower != 0) == (upper != 0):
        return (upper - lower) / (2 * h)
    return (upper - at) / h if np.isfinite(upper) and upper != 0 else (at - lower) / h


_ENDS = [
    (lambda x, a, loc, scale: st.gamma.logpdf(x, a, loc, scale), (0.0, 1.0, 0.0, 1.7)),
    (lambda x, a, loc, scale: st.gamma.pdf(x, a, loc, scale), (0.3, 1.0, 0.3, 0.8)),
    (lambda x, df, loc, scale: st.chi2.logpdf(x, df, loc, scale), (0.0, 2.0, 0.0, 1.7)),
    (lambda x, df, loc, scale: st.chi2.pdf(x, df, loc, scale), (1.0, 2.0, 1.0, 2.5)),
    (lambda x, b, loc, scale: st.beta.logpdf(x, 1.0, b, loc, scale), (0.0, 3.0, 0.0, 1.7)),
    (lambda x, b, loc, scale: st.beta.pdf(x, 1.0, b, loc, scale), (0.5, 2.5, 0.5, 1.3)),
    (lambda x, a, loc, scale: st.beta.logpdf(x, a, 1.0, loc, scale), (1.0, 2.5, 0.0, 1.0)),
    (lambda x, a, loc, scale: st.beta.pdf(x, a, 1.0, loc, scale), (2.0, 1.5, 0.5, 1.5)),
]


@pytest.mark.parametrize("case", range(len(_ENDS)))
def test_derivatives_at_an_end_of_the_support_with_a_finite_density(case):
    f, args = _ENDS[case]
    grads = tp.grad(f, argnums=(0, 1, 2, 3))(*args)
    tangents = [tp.jvp(f, args, tuple(float(k == j) for j in range(4)))[1] for k in range(4)]
    for k in (0, 2, 3):          # x (from inside the support), loc, scale
        expected = _one_sided(f, args, k)
        assert grads[k] == pytest.approx(expected, rel=1e-5), k
        assert tangents[k] == pytest.approx(expected, rel=1e-5), k
    # the shape parameter moves log z or log(1 - z) at the end: an infinite slope, not 0
    shape_slope = _one_sided(f, args, 1)
    if np.isfinite(shape_slope) and abs(shape_slope) < 1e6:
        assert grads[1] == pytest.approx(shape_slope, rel=1e-5)
    else:
        assert grads[1] == -np.inf or (grads[1] < -1e6)


def test_poisson_slope_in_mu_at_zero():
    """d pmf(k; mu) / d mu = pmf(k - 1) - pmf(k): 1 for k = 1 at mu = 0 (it was 0)."""
    pmf = tp.grad(lambda mu, k: st.poisson.pmf(k, mu))
    assert [pmf(0.0, k) for k in (0.0, 1.0, 2.0)] == [-1.0, 1.0, 0.0]
    logpmf = tp.grad(lambda mu, k: st.poisson.logpmf(k, mu))
    assert logpmf(0.0, 1.0) == np.inf and logpmf(0.0, 0.0) == -1.0
    check_grads(lambda mu: st.poisson.pmf(np.array([0.0, 1.0, 3.0]), mu), (0.7,), order=2,
                modes=("rev", "fwd"))


def test_far_left_tail_of_the_normal_logcdf():
    """The slope of log ndtr is about -x far left; exp(log pdf - log cdf) lost 1e-4 of it
    at -1e6 and 78% at -1e8."""
    for x in (-1e3, -1e6, -1e8):
        expected = -x - 1.0 / x + 2.0 / x ** 3     # the Mills ratio's expansion
        assert tp.grad(lambda x: st.norm.logcdf(x))(x) == pytest.approx(expected, rel=1e-12)
        assert tp.grad(lambda x: st.norm.logsf(x))(-x) == pytest.approx(-expected, rel=1e-12)
    check_grads(lambda x: np.sum(st.norm.logcdf(x, 0.3, 1.7)), (np.array([-12.0, -4.0, 2.0]),),
                order=2, modes=("rev", "fwd"))


def test_multivariate_normal_cov_gradient_is_that_of_the_symmetric_part():
    """The documented convention (the gradient of cov -> logpdf((cov + cov^T) / 2)) also at
    a cov that is not symmetric, and so Hessians in cov move along symmetric directions."""
    x = np.array([0.3, -1.2])
    cov = np.array([[2.0, 0.9], [0.3, 1.5]])
    grad = tp.grad(lambda c: mvn.logpdf(x, None, c))
    symmetric = 0.5 * (cov + cov.T)
    np.testing.assert_allclose(grad(cov), grad(symmetric), rtol=1e-13)
    np.testing.assert_allclose(grad(cov), grad(cov).T, rtol=1e-13)
    h = 1e-6
    for i, j in ((0, 0), (0, 1), (1, 1)):
        e = np.zeros((2, 2))
        e[i, j] = e[j, i] = 1.0
        fd = (mvn.logpdf(x, None, symmetric + h * e) -
              mvn.logpdf(x, None, symmetric - h * e)) / (2 * h)
        assert np.sum(grad(cov) * e) == pytest.approx(fd, rel=1e-6)


# ---------------------------------------------------------------- frozen distributions

_FROZEN_T = st.t(3.5, loc=0.2, scale=1.5)


def _frozen_mvn():
    r = rng_for("frozen mvn")
    a = r.standard_normal((3, 3))
    return st.multivariate_normal(r.standard_normal(3), a @ a.T + np.eye(3))


_FROZEN_MVN = _frozen_mvn()


def _frozen_made_outside(y):
    return _FROZEN_MVN.logpdf(y) + np.sum(_FROZEN_T.logcdf(y))


def _frozen_made_in_the_call(y, loc, scale):
    return np.sum(st.cauchy(loc, scale=scale).logpdf(y) + norm(loc, scale).sf(y))


def _frozen_bound_to_a_name(y, loc):
    d = norm(loc, 2.0)
    return np.sum(d.logpdf(y))


@replayable
def test_frozen_distributions():
    """norm(loc, scale).logpdf(x) is norm.logpdf(x, loc, scale): made in the call (its
    parameters differentiated) or outside the function (its parameters constants)."""
    r = rng_for("frozen")
    y, loc, scale = r.standard_normal(3), r.standard_normal(3), r.uniform(0.5, 2.0, 3)
    want = _FROZEN_MVN.logpdf(y) + np.sum(_FROZEN_T.logcdf(y))
    assert np.isclose(tp.jit(_frozen_made_outside)(y), want, rtol=1e-12)
    check_grads(_frozen_made_outside, (y,), order=2, modes=("fwd", "rev"))
    ys = r.standard_normal((4, 3))
    np.testing.assert_allclose(tp.vmap(_frozen_made_outside)(ys),
                               [_frozen_made_outside(row) for row in ys], rtol=1e-12)
    check_grads(_frozen_made_in_the_call, (y, loc, scale), order=2, modes=("fwd", "rev"))
    with pytest.raises(TransformError, match="called on it at once"):
        tp.grad(_frozen_bound_to_a_name)(y, loc)


# ---------------------------------------------------------------- truncnorm

@pytest.mark.parametrize("name", ["logpdf", "pdf"])
@replayable
def test_truncnorm(name):
    """pdf and logpdf in x, a, b, loc and scale to second order in both modes; vmap against
    a loop; -inf (0) outside [a, b] with zero derivatives; a truncation far in the tail,
    where ndtr(b) - ndtr(a) would cancel, against finite differences."""
    r = rng_for(f"truncnorm {name}")
    loc, scale = r.standard_normal(4), r.uniform(0.5, 2.0, 4)
    a, b = r.uniform(-2.0, -0.2, 4), r.uniform(0.2, 2.0, 4)
    x = loc + scale * (a + (b - a) * r.uniform(0.1, 0.9, 4))
    fn = method("truncnorm", name)
    f = by_arity(fn, 5)
    assert np.allclose(tp.jit(f)(x, a, b, loc, scale), np.sum(fn(x, a, b, loc, scale)),
                       rtol=1e-12)
    check_grads(f, (x, a, b, loc, scale), order=2, modes=("fwd", "rev"))
    g = tp.grad(f, argnums=(0, 1, 2))
    xs = loc + scale * (a + (b - a) * r.uniform(0.1, 0.9, (3, 4)))
    got = tp.vmap(g, in_axes=(0, None, None, None, None))(xs, a, b, loc, scale)
    for i, row in enumerate(xs):
        for j, want in enumerate(g(row, a, b, loc, scale)):
            np.testing.assert_allclose(got[j][i], want, rtol=1e-12)
    outside = np.array([loc[0] + scale[0] * (a[0] - 0.5), loc[0] + scale[0] * (b[0] + 0.5)])
    for d in g(outside, a[0], b[0], loc[0], scale[0]):
        assert np.all(d == 0)
    tail = lambda x, a: np.sum(fn(x, a, a + 1.0))        # noqa: E731
    xt, at = np.array([8.1, 8.5]), 8.0
    h = 1e-6
    fd = (tail(xt, at + h) - tail(xt, at - h)) / (2 * h)
    assert np.isclose(tp.grad(tail, argnums=1)(xt, at), fd, rtol=1e-6)
