"""tp.random: JAX's numbers for the same keys, the right distributions, and draws inside
every transformation (derivatives against finite differences, vmap against a loop, jit
against the plain call)."""
import os

import numpy as np
import pytest

import transpile as tp
from transpile import random as jr
from transpile.test_util import check_grads

from make_jax_random_reference import cases

stats = pytest.importorskip("scipy.stats")
DATA = os.path.join(os.path.dirname(__file__), "data")

# Entries compared to within a few units in the last place rather than bit for bit: in
# JAX's 32-bit mode XLA's float32 log (its own polynomial) differs from numpy's in the last
# bit, which the inverse error function and the gamma sampler carry on.
ULPS_X32 = {"normal": 3, "gumbel": 600, "truncated_normal": 400, "gamma": 8, "beta": 8,
            "dirichlet": 8, "exponential": 2, "multivariate_normal": 4}
ULPS_X64 = {"gamma": 8, "beta": 8, "dirichlet": 8, "multivariate_normal": 4,
            "gumbel": 2, "truncated_normal": 64,
            # -log1p(-u): numpy's log1p differs by 1 ulp between CPUs (its SIMD paths)
            "exponential": 1}


# choice with replacement draws randint's default integers: int64 here, as JAX's 64-bit
# mode; its 32-bit mode draws int32 and so other numbers.
X64_ONLY = {"choice(k, 10, (5,))", "choice(k, x, (2,), axis=1)"}


def _ulps(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "c":
        return max(_ulps(a.real, b.real), _ulps(a.imag, b.imag))
    spacing = np.spacing(np.abs(b).astype(a.dtype)).astype(np.float64)
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)) / spacing))


@pytest.mark.parametrize("mode", ["x64", "x32"])
def test_draws_are_jax_draws(mode):
    reference = np.load(os.path.join(DATA, f"jax_random_{mode}.npz"))
    f, i = (np.float64, np.int64) if mode == "x64" else (np.float32, np.int32)
    allowed = ULPS_X64 if mode == "x64" else ULPS_X32
    checked = 0
    for name, fn in cases(f, i):
        if mode == "x32" and name in X64_ONLY:
            checked += 1
            continue
        want = reference[name]
        got = np.asarray(fn(jr))
        assert got.shape == want.shape, name
        kind = name.split("(")[0]
        if got.dtype.kind in "iub":
            # JAX's indices are int32 where the 32-bit mode (or top_k) makes them so
            assert np.array_equal(got, want), name
        elif kind in allowed:
            assert got.dtype == want.dtype, name
            assert _ulps(got, want) <= allowed[kind], (name, _ulps(got, want))
        else:
            assert got.dtype == want.dtype, name
            assert np.array_equal(got, want), (name, _ulps(got, want))
        checked += 1
    assert checked == len(reference.files) - 1


def test_keys_and_bits():
    assert jr.PRNGKey(42).tolist() == [0, 42]
    assert jr.PRNGKey(-1).tolist() == [0xFFFFFFFF, 0xFFFFFFFF]       # 64-bit seeds, as x64
    assert jr.PRNGKey(2 ** 40 + 3).tolist() == [256, 3]
    with pytest.raises(TypeError, match="seed must be an integer"):
        jr.PRNGKey(1.5)
    with pytest.raises(TypeError, match="expected a key"):
        jr.normal(np.array([1, 2]), (3,))
    keys = jr.split(jr.PRNGKey(0), 4)
    # an array of keys draws for each key: the same numbers as one key at a time
    batched = jr.normal(keys, (3,))
    assert batched.shape == (4, 3)
    for k, row in zip(keys, batched):
        assert np.array_equal(jr.normal(k, (3,)), row)
    assert np.array_equal(jr.split(keys, 3)[2], jr.split(keys[2], 3))


# Fresh keys each run, so each check must fail seldom when the sampler is right and surely
# when it is wrong: p-values under 1e-6 (a wrong sampler at n = 4000 gives far less), and
# moments within 5 standard errors (1 run in about a million fails a right one).
P_MIN = 1e-6


def _ks(sample, cdf):
    return stats.kstest(np.ravel(sample), cdf).pvalue


def _within_standard_errors(x, mean, cov, z=5.0):
    """Sample mean and covariance of the rows of `x` within z standard errors of a
    normal's `mean` and `cov` (var of a sample covariance entry: (s_ii s_jj + s_ij^2)/n)."""
    n = len(x)
    mean_se = np.sqrt(np.diag(cov) / n)
    cov_se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    return (np.all(np.abs(x.mean(0) - mean) < z * mean_se)
            and np.all(np.abs(np.cov(x.T) - cov) < z * cov_se))


def test_distributions():
    rng = np.random.default_rng()
    seed = int(rng.integers(2 ** 31))
    print("seed", seed)
    key = jr.PRNGKey(seed)
    k = jr.split(key, 12)
    n = 4000
    assert _ks(jr.uniform(k[0], (n,), None, -1.0, 3.0), stats.uniform(-1, 4).cdf) > P_MIN
    assert _ks(jr.normal(k[1], (n,)), stats.norm.cdf) > P_MIN
    assert _ks(jr.normal(k[1], (n,), np.float32), stats.norm.cdf) > P_MIN
    assert _ks(jr.exponential(k[2], (n,)), stats.expon.cdf) > P_MIN
    assert _ks(jr.gumbel(k[3], (n,)), stats.gumbel_r.cdf) > P_MIN
    assert _ks(jr.truncated_normal(k[4], -0.5, 1.5, (n,)), stats.truncnorm(-0.5, 1.5).cdf) > P_MIN
    for a in (0.3, 1.0, 4.5):
        assert _ks(jr.gamma(k[5], a, (n,)), stats.gamma(a).cdf) > P_MIN
        assert _ks(np.exp(jr.loggamma(k[5], a, (n,))), stats.gamma(a).cdf) > P_MIN
    assert _ks(jr.beta(k[6], 2.0, 0.7, (n,)), stats.beta(2.0, 0.7).cdf) > P_MIN
    d = jr.dirichlet(k[7], np.array([0.5, 1.0, 2.5]), (n,))
    assert np.allclose(d.sum(-1), 1.0)
    assert _ks(d[:, 2], stats.beta(2.5, 1.5).cdf) > P_MIN
    mean, cov = np.array([1.0, -2.0]), np.array([[2.0, 0.6], [0.6, 0.5]])
    for method in ("cholesky", "svd", "eigh"):
        # ten times the draws: 5 standard errors of a variance at n = 4000 is 11%
        x = jr.multivariate_normal(k[8], mean, cov, (10 * n,), method=method)
        assert _within_standard_errors(x, mean, cov), method
    counts = np.bincount(jr.randint(k[9], (n,), 3, 10) - 3, minlength=7)
    assert stats.chisquare(counts).pvalue > P_MIN
    p = np.array([0.1, 0.6, 0.3])
    counts = np.bincount(jr.categorical(k[10], np.log(p), shape=(n,)), minlength=3)
    assert stats.chisquare(counts, n * p).pvalue > P_MIN
    counts = np.bincount(jr.choice(k[11], 3, (n,), p=p), minlength=3)
    assert stats.chisquare(counts, n * p).pvalue > P_MIN
    assert abs(jr.bernoulli(k[0], 0.3, (n,)).mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / n)
    perm = jr.permutation(k[1], 50)
    assert sorted(perm.tolist()) == list(range(50))
    picked = jr.choice(k[2], 20, (20,), replace=False)
    assert sorted(picked.tolist()) == list(range(20))


# ---------------------------------------------------------------- inside transformations

def test_grad_reaches_location_and_scale():
    key = jr.PRNGKey(int(np.random.default_rng().integers(2 ** 31)))

    def loss(s, m):
        z = jr.normal(key, (6,))
        return np.sum(np.tanh(z * s + m) ** 2)

    s, m = (float(v) for v in np.random.default_rng().uniform(0.5, 2.0, 2))
    check_grads(loss, (s, m), order=2, modes=("rev", "fwd"))
    ds, dm = tp.grad(loss, argnums=(0, 1))(s, m)
    assert ds != 0 and dm != 0


@pytest.mark.parametrize("draw", ["uniform", "truncated_normal"])
def test_pathwise_derivatives_match_finite_differences(draw):
    """Drawn by inverting the cdf at the key's uniform number: at a fixed key the draw is a
    smooth function of its bounds, and its derivative is the finite differences'."""
    rng = np.random.default_rng()
    key = jr.PRNGKey(int(rng.integers(2 ** 31)))
    w = rng.standard_normal(5)
    if draw == "uniform":
        f = lambda lo, hi: np.sum(w * jr.uniform(key, (5,), None, lo, hi))  # noqa: E731
    else:
        f = lambda lo, hi: np.sum(w * jr.truncated_normal(key, lo, hi, (5,)))  # noqa: E731
    args = (-float(rng.uniform(0.2, 1.5)), float(rng.uniform(0.2, 1.5)))
    check_grads(f, args, order=1, modes=("rev", "fwd"), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("draw", ["gamma", "loggamma", "beta", "dirichlet"])
def test_implicit_derivatives_are_unbiased(draw):
    """Gamma draws (and beta and dirichlet, made of them) are differentiated implicitly, at
    the draw's quantile, as JAX does; that is not the derivative of the rejection sampler at
    a fixed key, so finite differences do not check it. What does: the derivative of the
    mean is the mean of the derivatives (E[G] = a, E[log G] = digamma(a), E[B] = a/(a+b),
    E[D_0] = alpha_0 / sum(alpha)), over many keys, with vmap of grad."""
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng()
    keys = jr.split(jr.PRNGKey(int(rng.integers(2 ** 31))), 3000)
    a = float(rng.uniform(0.6, 3.0))
    if draw == "gamma":
        f, want = (lambda a, k: jr.gamma(k, a)), 1.0
    elif draw == "loggamma":
        f, want = (lambda a, k: jr.loggamma(k, a)), float(special.polygamma(1, a))
    elif draw == "beta":
        f, want = (lambda a, k: jr.beta(k, a, 2.0)), 2.0 / (a + 2.0) ** 2
    else:
        f = lambda a, k: jr.dirichlet(k, np.array([1.0, 2.0]) * a)[0]  # noqa: E731
        want = 0.0                                  # E[D_0] = 1/3 whatever a is
    grads = tp.vmap(tp.grad(f), in_axes=(None, 0))(a, keys)
    assert grads.shape == (3000,)
    assert abs(grads.mean() - want) < 5 * grads.std() / np.sqrt(3000) + 1e-3, \
        (grads.mean(), want)
    # one key: reverse and forward mode agree, and grad is gamma_grad at the draw
    _, tangent = tp.jvp(f, (a, keys[0]), (1.0, None))
    assert np.allclose(tangent, tp.grad(f)(a, keys[0]))
    if draw == "gamma":
        assert np.isclose(tp.grad(f)(a, keys[0]), jr.gamma_grad(a, f(a, keys[0])))


def test_gamma_grad_is_the_implicit_derivative():
    """d x / d a at a fixed quantile q, against the inverse cdf differenced in a."""
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng()
    a = np.concatenate([rng.uniform(0.05, 1.0, 5), rng.uniform(1.0, 50.0, 5), [300.0]])
    q = rng.uniform(0.02, 0.98, a.shape)
    x = special.gammaincinv(a, q)
    h = 1e-6 * a
    numeric = (special.gammaincinv(a + h, q) - special.gammaincinv(a - h, q)) / (2 * h)
    assert np.allclose(jr.gamma_grad(a, x), numeric, rtol=1e-5)


def test_derivatives_that_do_not_exist_refuse():
    key = jr.PRNGKey(0)
    x = np.random.default_rng().standard_normal(4)
    with pytest.raises(tp.TransformError, match="permutation with respect to"):
        tp.grad(lambda x: np.sum(jr.permutation(key, x) * np.arange(4.0)))(x)
    with pytest.raises(tp.TransformError, match="choice with respect to"):
        tp.grad(lambda x: np.sum(jr.choice(key, x, (2,))))(x)
    cov = np.eye(2) * 1.5
    with pytest.raises(tp.TransformError, match="with respect to cov"):
        tp.grad(lambda c: np.sum(jr.multivariate_normal(key, np.zeros(2), c)))(cov)
    # the mean is a location: it has its derivative
    g = tp.grad(lambda m: np.sum(jr.multivariate_normal(key, m, cov, (3,)) ** 2))(x[:2])
    z = jr.multivariate_normal(key, x[:2], cov, (3,))
    assert np.allclose(g, 2 * z.sum(0))


def _per_example_keys(n=5):
    return jr.split(jr.PRNGKey(int(np.random.default_rng().integers(2 ** 31))), n)


DRAWS = {
    "normal": lambda k, p: jr.normal(k, (3,)) * p,
    "uniform": lambda k, p: jr.uniform(k, (3,), None, -p, p),
    "randint": lambda k, p: jr.randint(k, (4,), 0, 10) * p,
    "exponential": lambda k, p: jr.exponential(k, (2,)) + p,
    "gumbel": lambda k, p: jr.gumbel(k, (2,)) + p,
    "truncated_normal": lambda k, p: jr.truncated_normal(k, -p, p, (3,)),
    "gamma": lambda k, p: jr.gamma(k, p + 0.5, (3,)),
    "beta": lambda k, p: jr.beta(k, p + 0.5, 2.0, (3,)),
    "dirichlet": lambda k, p: jr.dirichlet(k, np.array([1.0, 2.0]) * (p + 0.5)),
    "bernoulli": lambda k, p: jr.bernoulli(k, p / 4.0, (5,)),
    "categorical": lambda k, p: jr.categorical(k, np.array([0.0, 1.0, 2.0]) * p, shape=(4,)),
    "permutation": lambda k, p: jr.permutation(k, np.arange(5.0) * p),
    "choice": lambda k, p: jr.choice(k, 6, (3,)) * p,
    "split": lambda k, p: jr.split(k, 3),
    "fold_in": lambda k, p: jr.fold_in(k, 17),
    "bits": lambda k, p: jr.bits(k, (3,), np.uint32),
    "multivariate_normal": lambda k, p: jr.multivariate_normal(k, np.ones(2) * p, np.eye(2)),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_vmap_over_keys_and_parameters_is_a_loop(name):
    draw = DRAWS[name]
    keys = _per_example_keys()
    params = np.random.default_rng().uniform(0.5, 2.0, 5)
    for in_axes in ((0, None), (None, 0), (0, 0)):
        k = keys if in_axes[0] == 0 else keys[0]
        p = params if in_axes[1] == 0 else 1.3
        got = tp.vmap(draw, in_axes=in_axes)(k, p)
        want = np.stack([draw(k[i] if in_axes[0] == 0 else k, p[i] if in_axes[1] == 0 else p)
                         for i in range(5)])
        assert np.array_equal(got, want), (name, in_axes)


def test_vmap_of_vmap_over_keys():
    keys = jr.split(jr.PRNGKey(3), (2, 3))
    got = tp.vmap(tp.vmap(lambda k: jr.normal(k, (4,))))(keys)
    assert np.array_equal(got, jr.normal(keys, (4,)))


def test_per_example_gradients_with_per_example_noise():
    """DP-SGD's shape: vmap of grad, each example with its own key."""
    rng = np.random.default_rng()
    keys = _per_example_keys(4)
    w = rng.standard_normal(3)
    xs = rng.standard_normal((4, 3))

    def noisy_loss(w, x, key):
        return np.sum((x * w + 0.1 * jr.normal(key, (3,))) ** 2)

    got = tp.vmap(tp.grad(noisy_loss), in_axes=(None, 0, 0))(w, xs, keys)
    want = np.stack([tp.grad(noisy_loss)(w, x, k) for x, k in zip(xs, keys)])
    assert np.allclose(got, want)


def test_jit_gives_the_plain_numbers():
    def f(key, x):
        k1, k2 = jr.split(key)
        return x * jr.normal(k1, x.shape) + jr.uniform(k2, x.shape)

    x = np.random.default_rng().standard_normal((3, 4))
    key = jr.PRNGKey(7)
    jitted = tp.jit(f)
    for _ in range(3):                       # general code, then the specialization
        assert np.array_equal(jitted(key, x), f(key, x))
    assert np.allclose(tp.jit(tp.grad(lambda x, k: np.sum(f(k, x) ** 2)))(x, key),
                       tp.grad(lambda x, k: np.sum(f(k, x) ** 2))(x, key))


def test_grad_of_vmap_with_per_example_parameters_refuses():
    keys = _per_example_keys(3)
    lo = -np.random.default_rng().uniform(0.5, 1.0, 3)
    f = lambda lo: np.sum(tp.vmap(lambda k, l: jr.uniform(k, (2,), None, l, 2.0))(keys, lo))  # noqa: E731
    with pytest.raises(tp.TransformError, match="put vmap outside"):
        tp.grad(f)(lo)
    # the other order works, and is the loop
    per = tp.vmap(tp.grad(lambda l, k: np.sum(jr.uniform(k, (2,), None, l, 2.0))))(lo, keys)
    assert np.allclose(per, [np.sum(1.0 - jr.uniform(k, (2,))) for k in keys])


def test_compiled_paths_give_the_numpy_paths_numbers(monkeypatch):
    """Large draws run threefry and the fused multiply-adds through numba where it is
    installed; they must be the numbers of the numpy code that the reference tests check."""
    from runtime import random as R
    key = jr.PRNGKey(int(np.random.default_rng().integers(2 ** 31)))
    fast = [jr.normal(key, (20000,)), jr.uniform(key, (9000,), None, -2.0, 3.0),
            jr.bits(key, (5000,), np.uint32)]
    monkeypatch.setattr(R, "_compiled_threefry", False)
    monkeypatch.setattr(R, "_horner_kernel", [None])
    slow = [jr.normal(key, (20000,)), jr.uniform(key, (9000,), None, -2.0, 3.0),
            jr.bits(key, (5000,), np.uint32)]
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)


def test_draw_functions_given_to_a_transformation_directly():
    """tp.vmap(tp.random.normal)(keys), as JAX's docs write it: the draw is a call of the
    function (a table row), not its runtime code transformed (which was refused)."""
    keys = jr.split(jr.key(42), 5)
    for draw in (jr.normal, jr.uniform):
        want = np.stack([draw(k) for k in keys])
        np.testing.assert_array_equal(tp.vmap(draw)(keys), want)
        np.testing.assert_array_equal(tp.jit(tp.vmap(draw))(keys), want)
        np.testing.assert_array_equal(tp.jit(tp.vmap(draw))(keys), want)   # specialized
    np.testing.assert_array_equal(tp.vmap(jr.normal, in_axes=(0, None))(keys, (2,)),
                                  np.stack([jr.normal(k, (2,)) for k in keys]))
