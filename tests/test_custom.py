"""Custom derivatives: `@tp.custom_vjp` (+ `defvjp(fwd, bwd)`) and `@tp.custom_jvp`
(+ `@f.defjvp`), with JAX's conventions.

The rules must really be used: several rules below are deliberately *not* the derivative of
the function's body (a clipped or scaled gradient), so the result tells which one ran.
Exact rules are checked against finite differences, at first and second order (grad of
grad differentiates the user's fwd/bwd, or transposes the jvp rule). The entmax-1.5
example (examples/entmax.py) is checked against finite differences of its bisection
forward pass and against an independent, sort-based implementation.
"""
import collections
import functools
import importlib.util
import math
import pathlib
import sys
import tracemalloc

import numpy as np
import pytest

import transpile as tp
from transpile.test_util import check_grads

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _load_entmax():
    spec = importlib.util.spec_from_file_location("entmax_example", ROOT / "examples" /
                                                  "entmax.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["entmax_example"] = module
    spec.loader.exec_module(module)
    return module


entmax = _load_entmax()


def fd_grad(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        g[idx] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


# =====================================================================================
# custom_vjp: rules that differ from the body, so the result shows which one ran
# =====================================================================================

@tp.custom_vjp
def clip_gradient(x):
    return x


def clip_gradient_fwd(x):
    return x, ()


def clip_gradient_bwd(saved, g):
    return (np.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@tp.custom_vjp
def scale_gradient(x, k):
    return x * 1.0


def scale_gradient_fwd(x, k):
    return x * 1.0, (k,)


def scale_gradient_bwd(saved, g):
    k, = saved
    return (g * k, 0.0)


scale_gradient.defvjp(scale_gradient_fwd, scale_gradient_bwd)


def clipped_loss(x):
    return np.sum(clip_gradient(x) * 5.0)


def test_custom_vjp_clipped_gradient_is_used():
    x = np.array([1.0, -2.0, 3.0])
    assert clipped_loss(x) == 10.0                     # outside transformations: the body
    np.testing.assert_array_equal(tp.grad(clipped_loss)(x), np.ones(3))   # not 5
    out, vjp_fn = tp.vjp(clip_gradient, x)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(vjp_fn(np.array([0.5, -4.0, 2.0]))[0], [0.5, -1.0, 1.0])
    source = tp.grad(clipped_loss).source
    assert "clip_gradient_fwd(x)" in source and "clip_gradient_bwd(" in source, source
    assert "import transpile" not in source


def test_custom_vjp_scaled_gradient_two_arguments():
    def loss(x, k):
        return np.sum(scale_gradient(x, k) ** 2)

    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(tp.grad(loss)(x, 3.0), 3.0 * 2 * x)
    assert tp.grad(loss, argnums=1)(x, 3.0) == 0.0      # the rule says 0 for k
    gx, gk = tp.grad(loss, argnums=(0, 1))(x, 3.0)
    np.testing.assert_allclose(gx, 6.0 * x)


def test_transforming_a_custom_vjp_function_directly():
    x = np.array([2.0, -0.25])
    np.testing.assert_array_equal(tp.grad(lambda x: np.sum(clip_gradient(x) * 3.0))(x),
                                  [1.0, 1.0])
    out, vjp_fn = tp.vjp(clip_gradient, x)           # the custom object itself
    np.testing.assert_array_equal(vjp_fn(np.array([7.0, -0.5]))[0], [1.0, -0.5])


def clip_in_loop(x):
    for i in range(3):
        x = clip_gradient(x) * 2.0
    return np.sum(x)


def test_custom_vjp_inside_a_loop():
    # each trip multiplies the cotangent by 2 and the rule clips it to 1: 1 -> 2 -> 1*2 ...
    # cotangent after the last trip's *2: 1; clip: 1; *2: 2; clip: 1; *2: 2; clip: 1
    x = np.array([0.1, -0.3])
    np.testing.assert_array_equal(tp.grad(clip_in_loop)(x), [1.0, 1.0])
    assert np.isclose(clip_in_loop(x), 8.0 * np.sum(x))


def scaled_layer(x, k):
    return np.tanh(scale_gradient(x, k))


def calls_scaled_layer(x):
    h = scaled_layer(x, 0.5)
    return np.sum(scaled_layer(h, 0.5))


def test_custom_vjp_inside_a_callee():
    x = np.array([0.3, -0.7, 1.1])
    h = np.tanh(x)
    want = 0.5 * (1 - np.tanh(h) ** 2) * 0.5 * (1 - h ** 2)    # each layer's grad halved
    np.testing.assert_allclose(tp.grad(calls_scaled_layer)(x), want, rtol=1e-13)


# =====================================================================================
# custom_vjp with exact rules: first and second order against finite differences
# =====================================================================================

@tp.custom_vjp
def stable_log1pexp(x):
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def stable_log1pexp_fwd(x):
    return stable_log1pexp(x), (x,)


def stable_log1pexp_bwd(saved, g):
    x, = saved
    return (g / (1.0 + np.exp(-x)),)


stable_log1pexp.defvjp(stable_log1pexp_fwd, stable_log1pexp_bwd)


@tp.custom_vjp
def sin_saving_cos(x):
    return np.sin(x)


def sin_saving_cos_fwd(x):
    return np.sin(x), (np.cos(x),)


def sin_saving_cos_bwd(saved, g):
    c, = saved
    return (g * c,)


sin_saving_cos.defvjp(sin_saving_cos_fwd, sin_saving_cos_bwd)


def uses_custom_vjps(x, W):
    h = sin_saving_cos(x @ W)
    for i in range(2):
        h = stable_log1pexp(h) - 0.5 * h
    return np.sum(h * h)


def test_custom_vjp_exact_rules_match_finite_differences():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4)
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(stable_log1pexp(x)))(x),
                               1 / (1 + np.exp(-x)), rtol=1e-13)
    check_grads(stable_log1pexp, (x,), order=1, modes=("rev",), seed=1)
    check_grads(uses_custom_vjps, (rng.standard_normal(3), rng.standard_normal((3, 4))),
                order=1, modes=("rev",), seed=2)


def test_grad_of_grad_through_custom_vjp_differentiates_fwd_and_bwd():
    for x in (0.3, -1.2, 2.0):
        assert np.isclose(tp.grad(sin_saving_cos)(x), math.cos(x), rtol=1e-13)
        assert np.isclose(tp.grad(tp.grad(sin_saving_cos))(x), -math.sin(x), rtol=1e-13)
        assert np.isclose(tp.grad(tp.grad(tp.grad(sin_saving_cos)))(x), -math.cos(x),
                          rtol=1e-12)
        s = 1 / (1 + math.exp(-x))
        assert np.isclose(tp.grad(tp.grad(stable_log1pexp))(x), s * (1 - s), rtol=1e-12)
    rng = np.random.default_rng(3)
    check_grads(uses_custom_vjps, (rng.standard_normal(3), rng.standard_normal((3, 4))),
                order=2, modes=("rev",), seed=4)


def test_forward_mode_of_custom_vjp_raises():
    with pytest.raises(tp.TransformError, match="custom_vjp"):
        tp.jvp(sin_saving_cos, (0.3,), (1.0,))

    def calls_it(x):
        return np.sum(sin_saving_cos(x) * 2.0)

    with pytest.raises(tp.TransformError, match="custom_vjp"):
        tp.jvp(calls_it, (np.ones(2),), (np.ones(2),))
    with pytest.raises(tp.TransformError, match="custom_vjp"):
        tp.jacfwd(calls_it)(np.ones(2))


def test_custom_vjp_without_rules_raises():
    @tp.custom_vjp
    def no_rules(x):
        return x * 2.0

    assert no_rules(1.5) == 3.0
    with pytest.raises(tp.TransformError, match="defvjp"):
        tp.grad(lambda x: no_rules(x) * 1.0)(1.0)


# =====================================================================================
# custom_jvp: forward mode uses the rule; reverse mode transposes it
# =====================================================================================

@tp.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return softplus(x), t / (1.0 + np.exp(-x))


@tp.custom_jvp
def doubled_slope(x):
    """The body is x ** 2; the rule (deliberately) says the slope is 2 * (2 x)."""
    return x ** 2


@doubled_slope.defjvp
def doubled_slope_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return x ** 2, 4.0 * x * t


@tp.custom_jvp
def weighted_norm(x, w):
    return np.sqrt(np.sum(w * x * x))


@weighted_norm.defjvp
def weighted_norm_jvp(primals, tangents):
    x, w = primals
    tx, tw = tangents
    r = np.sqrt(np.sum(w * x * x))
    return r, (np.sum(w * x * tx) + 0.5 * np.sum(tw * x * x)) / r


def test_custom_jvp_rule_is_used_in_forward_and_reverse_mode():
    x = np.array([0.5, -1.5])
    out, t = tp.jvp(doubled_slope, (x,), (np.ones(2),))
    np.testing.assert_array_equal(out, x ** 2)
    np.testing.assert_allclose(t, 4.0 * x)                 # the rule, not 2 x
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(doubled_slope(x)))(x), 4.0 * x)
    assert np.isclose(tp.grad(doubled_slope)(0.75), 3.0)


def test_custom_jvp_transposed_matches_finite_differences():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(5)
    sig = 1 / (1 + np.exp(-x))
    out, t = tp.jvp(softplus, (x,), (np.ones(5),))
    np.testing.assert_allclose(t, sig, rtol=1e-13)
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(softplus(x)))(x), sig, rtol=1e-13)
    check_grads(softplus, (x,), order=1, modes=("fwd", "rev"), seed=6)
    w = rng.uniform(0.5, 2.0, 5)
    check_grads(weighted_norm, (x, w), order=1, modes=("fwd", "rev"), seed=7)
    gx, gw = tp.grad(weighted_norm, argnums=(0, 1))(x, w)
    r = np.sqrt(np.sum(w * x * x))
    np.testing.assert_allclose(gx, w * x / r, rtol=1e-13)
    np.testing.assert_allclose(gw, x * x / (2 * r), rtol=1e-13)


def softplus_net(x, W):
    h = x
    for i in range(2):
        h = softplus(h @ W) - 1.0
    return weighted_norm(h, np.ones_like(h) * 0.5)


@pytest.mark.parametrize("modes", [("rev",), ("fwd",), ("fwd", "rev")])
def test_custom_jvp_in_a_loop_second_order(modes):
    # ("fwd", "rev") adds the mixed compositions (jvp of grad, grad of jvp)
    rng = np.random.default_rng(8)
    x, W = rng.standard_normal(3), 0.5 * rng.standard_normal((3, 3))
    check_grads(softplus_net, (x, W), order=2, modes=modes, seed=9)


def test_custom_jvp_second_order_scalar():
    for x0 in (0.3, -1.0):
        s = 1 / (1 + math.exp(-x0))
        assert np.isclose(tp.grad(tp.grad(softplus))(x0), s * (1 - s), rtol=1e-12)
        assert np.isclose(tp.jvp(tp.grad(softplus), (x0,), (1.0,))[1], s * (1 - s),
                          rtol=1e-12)


def test_custom_jvp_without_rule_raises():
    @tp.custom_jvp
    def no_rule(x):
        return x * 2.0

    with pytest.raises(tp.TransformError, match="defjvp"):
        tp.jvp(no_rule, (1.0,), (1.0,))
    with pytest.raises(tp.TransformError, match="defjvp"):
        tp.grad(no_rule)(1.0)


# =====================================================================================
# entmax-1.5 (examples/entmax.py)
# =====================================================================================

def entmax15_sort(z):
    """Exact entmax-1.5 of a vector by sorting (Peters et al. 2019, Algorithm 2)."""
    z = np.asarray(z, dtype=np.float64) / 2.0
    zs = np.sort(z)[::-1]
    k = np.arange(1, z.size + 1)
    mean = np.cumsum(zs) / k
    mean_sq = np.cumsum(zs * zs) / k
    delta = (1.0 - k * (mean_sq - mean * mean)) / k
    tau = mean - np.sqrt(np.maximum(delta, 0.0))
    support = np.sum(tau <= zs)
    return np.maximum(z - tau[support - 1], 0.0) ** 2


def entmax15_jacobian_sort(z):
    """The Jacobian of the sort-based solution, by finite differences on the support's tau
    formula: independent of the closed form in the example."""
    eps = 1e-6
    cols = []
    for e in np.eye(z.size):
        cols.append((entmax15_sort(z + eps * e) - entmax15_sort(z - eps * e)) / (2 * eps))
    return np.stack(cols, axis=1)


Z_CASES = [
    np.array([1.8, 1.2, 0.3, -0.5, 1.5]),          # sparse: two exact zeros
    np.array([0.1, 0.2, -0.1, 0.0]),               # dense: full support
    np.array([3.0, -1.0, -2.0, 0.5, 2.2, -0.7]),
]


@pytest.mark.parametrize("z", Z_CASES)
def test_entmax15_forward_matches_sort_based_solution(z):
    p = entmax.entmax15(z)
    assert np.isclose(np.sum(p), 1.0, rtol=0, atol=1e-14) and np.all(p >= 0)
    np.testing.assert_allclose(p, entmax15_sort(z), rtol=1e-12, atol=1e-15)
    # the definition: p = [z/2 - tau]_+^2 with one tau for every entry of the support
    s = np.sqrt(p[p > 0])
    tau = z[p > 0] / 2.0 - s
    np.testing.assert_allclose(tau, tau[0], rtol=0, atol=1e-12)
    assert np.all(z[p == 0] / 2.0 <= tau[0] + 1e-12)


@pytest.mark.parametrize("z", Z_CASES)
def test_entmax15_custom_vjp_matches_finite_differences(z):
    check_grads(entmax.entmax15, (z,), order=1, modes=("rev",), seed=10)
    J = _custom_jacobian(z)                       # one vjp per row: J is symmetric anyway
    np.testing.assert_allclose(J, entmax15_jacobian_sort(z), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(J, J.T, rtol=1e-13, atol=1e-15)   # J is symmetric
    np.testing.assert_allclose(J.sum(axis=0), 0.0, atol=1e-13)    # outputs sum to 1
    p = entmax.entmax15(z)
    np.testing.assert_array_equal(J[p == 0], 0.0)                 # off-support: zero rows


def _entmax15_sort_for(xp):
    """The sort-based algorithm written against `xp` (autograd.numpy or jax.numpy)."""
    def entmax15_sorted(z):
        z = z / 2.0
        zs = xp.sort(z)[::-1]
        k = xp.arange(1, z.size + 1)
        mean = xp.cumsum(zs) / k
        mean_sq = xp.cumsum(zs * zs) / k
        delta = (1.0 - k * (mean_sq - mean * mean)) / k
        positive = delta > 0.0          # sqrt only where it is differentiable
        tau = mean - xp.where(positive, xp.sqrt(xp.where(positive, delta, 1.0)), 0.0)
        support = xp.sum(tau <= zs)
        return xp.maximum(z - tau[support - 1], 0.0) ** 2
    return entmax15_sorted


def _custom_jacobian(z):
    return np.stack([tp.vjp(entmax.entmax15, z)[1](e)[0] for e in np.eye(z.size)])


def test_entmax15_against_autograd_of_the_sort_algorithm():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    f = _entmax15_sort_for(anp)
    for z in Z_CASES:
        np.testing.assert_allclose(entmax.entmax15(z), f(z), rtol=1e-12, atol=1e-15)
        # the custom vjp's rows against autograd's Jacobian of the sort-based solution
        np.testing.assert_allclose(_custom_jacobian(z), autograd.jacobian(f)(z), rtol=1e-10,
                                   atol=1e-13)


def test_entmax15_against_jax_autodiff_of_the_sort_algorithm():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    f = _entmax15_sort_for(jax.numpy)
    z = Z_CASES[0]
    want = np.asarray(jax.jit(jax.jacrev(f))(jax.numpy.asarray(z)))
    np.testing.assert_allclose(entmax.entmax15(z), np.asarray(f(z)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(_custom_jacobian(z), want, rtol=1e-10, atol=1e-13)


def test_entmax15_rows_and_second_order():
    rng = np.random.default_rng(11)
    Z = rng.standard_normal((3, 5)) * 2.0
    P = entmax.entmax15(Z)
    for row, p in zip(Z, P):
        np.testing.assert_allclose(p, entmax15_sort(row), rtol=1e-12, atol=1e-15)
    check_grads(entmax.entmax15, (Z,), order=1, modes=("rev",), seed=12)
    # grad of grad: the fwd rule calls entmax15 again and the bwd rule is differentiable
    check_grads(entmax.entmax15, (Z_CASES[0],), order=2, modes=("rev",), seed=13)


def test_entmax15_inside_a_small_attention_model():
    rng = np.random.default_rng(14)
    q, K, V = rng.standard_normal((3, 4)), rng.standard_normal((6, 4)), \
        rng.standard_normal((6, 2))
    target = rng.standard_normal((3, 2))
    weights = entmax.entmax15(q @ K.T / 2.0)
    assert np.any(weights == 0.0)                 # the model really is sparse here
    dq, dK, dV = tp.grad(entmax.attention_loss, argnums=(0, 1, 2))(q, K, V, target)
    np.testing.assert_allclose(dq, fd_grad(lambda q: entmax.attention_loss(q, K, V, target),
                                           q), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(dK, fd_grad(lambda K: entmax.attention_loss(q, K, V, target),
                                           K), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(dV, fd_grad(lambda V: entmax.attention_loss(q, K, V, target),
                                           V), rtol=1e-6, atol=1e-9)
    check_grads(entmax.attention_loss, (q, K, V, target), order=1, modes=("rev",), seed=15)
    source = tp.grad(entmax.attention_loss).source
    assert "entmax15_bwd(" in source and "BISECTION" not in source


def test_entmax_example_main_runs(capsys):
    entmax.main()
    out = capsys.readouterr().out
    assert "entmax15" in out and "def grad_weighted" in out


def test_a_custom_function_with_defaults_transformed_directly():
    # the wrapper a transformation applies to a custom function kept no defaults, so a
    # call that left one out failed to bind
    @tp.custom_jvp
    def scaled(x, k=3.0):
        return k * np.sin(x)

    @scaled.defjvp
    def scaled_jvp(primals, tangents):
        x, k = primals
        dx, _ = tangents
        return k * np.sin(x), k * np.cos(x) * dx
    x = np.random.default_rng().normal(size=4)
    np.testing.assert_allclose(tp.jvp(scaled, (x,), (np.ones(4),))[1], 3.0 * np.cos(x))
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(scaled(x)))(x), 3.0 * np.cos(x))


def test_rules_given_again_make_new_code():
    """defvjp / defjvp called again after the function was differentiated: the same
    transformed function (and a new one) uses the new rules. It kept the old ones, silently."""
    @tp.custom_vjp
    def f(x):
        return np.sin(x)
    f.defvjp(lambda x: (np.sin(x), x), lambda x, g: (g * 2.0,))
    grad = tp.grad(f)
    x = np.random.default_rng(7).uniform(-1.0, 1.0)
    assert grad(x) == 2.0
    f.defvjp(lambda x: (np.sin(x), x), lambda x, g: (g * np.cos(x),))
    assert grad(x) == np.cos(x) and tp.grad(f)(x) == np.cos(x)

    @tp.custom_jvp
    def h(x):
        return np.sin(x)
    h.defjvp(lambda primals, tangents: (np.sin(primals[0]), 3.0 * tangents[0]))
    forward = tp.jacfwd(h)
    assert forward(x) == 3.0 and tp.grad(h)(x) == 3.0
    h.defjvp(lambda primals, tangents: (np.sin(primals[0]), np.cos(primals[0]) * tangents[0]))
    assert np.isclose(tp.jvp(h, (x,), (1.0,))[1], np.cos(x))
    assert np.isclose(tp.grad(h)(x), np.cos(x))


# =====================================================================================
# what the rules receive and return
# =====================================================================================

@tp.custom_vjp
def linear_and_tanh(x, W):
    return W @ x, np.tanh(x)


def linear_and_tanh_fwd(x, W):
    t = np.tanh(x)
    return (W @ x, t), (x, W, t)


def linear_and_tanh_bwd(saved, g):
    x, W, t = saved
    a, b = g           # arithmetic on both: a None for the output never read would fail
    return (W.T @ a + (1 - t ** 2) * b, np.outer(a, x))


linear_and_tanh.defvjp(linear_and_tanh_fwd, linear_and_tanh_bwd)


def reads_tanh_only(x, W):
    out = linear_and_tanh(x, W)
    return np.sum(out[1] ** 2)


def reads_linear_only(x, W):
    out = linear_and_tanh(x, W)
    return np.sum(np.sin(out[0]))


def test_custom_vjp_bwd_gets_zeros_for_outputs_never_read():
    # read by indexing, the output's other leaf got no adjoint at all: bwd received None
    # for it (JAX gives zeros), and failed computing with it
    rng = np.random.default_rng()
    x, W = rng.standard_normal(3), rng.standard_normal((2, 3))
    t = np.tanh(x)
    gx, gW = tp.grad(reads_tanh_only, argnums=(0, 1))(x, W)
    np.testing.assert_allclose(gx, 2 * t * (1 - t ** 2), rtol=1e-12)
    np.testing.assert_array_equal(gW, np.zeros((2, 3)))
    c = np.cos(W @ x)
    gx, gW = tp.grad(reads_linear_only, argnums=(0, 1))(x, W)
    np.testing.assert_allclose(gx, W.T @ c, rtol=1e-12)
    np.testing.assert_allclose(gW, np.outer(c, x), rtol=1e-12)
    for loss in (reads_tanh_only, reads_linear_only):   # grad of grad: of the rules too
        check_grads(loss, (x, W), order=2, modes=("rev",))
    xs = rng.standard_normal((4, 3))
    expected = np.stack([tp.grad(reads_linear_only)(row, W) for row in xs])
    np.testing.assert_allclose(expected, np.stack([W.T @ np.cos(W @ row) for row in xs]),
                               rtol=1e-12)
    batched = tp.vmap(tp.grad(reads_linear_only), in_axes=(0, None))
    np.testing.assert_allclose(batched(xs, W), expected, rtol=1e-12)
    np.testing.assert_allclose(tp.jit(batched)(xs, W), expected, rtol=1e-12)
    hessian_diagonals = tp.vmap(tp.grad(lambda x: tp.grad(reads_tanh_only)(x, W)[0]))(xs)
    t0 = np.tanh(xs[:, 0])
    np.testing.assert_allclose(hessian_diagonals[:, 0],
                               2 * (1 - t0 ** 2) * (1 - 3 * t0 ** 2), rtol=1e-10)


@tp.custom_vjp
def sin_cos_and_squares(x):
    return np.sin(x), (np.cos(x), {"sq": x * x, "twice": 2.0 * x})


def sin_cos_and_squares_fwd(x):
    return sin_cos_and_squares(x), x


def sin_cos_and_squares_bwd(x, g):
    a, (b, d) = g
    return (np.cos(x) * a - np.sin(x) * b + 2 * x * d["sq"] + 2.0 * d["twice"],)


sin_cos_and_squares.defvjp(sin_cos_and_squares_fwd, sin_cos_and_squares_bwd)


def test_custom_vjp_bwd_gets_zeros_in_a_nested_output():
    # whole subtrees of the output never read: zeros all the way down, dict keys included
    def loss(x):
        out = sin_cos_and_squares(x)
        return np.sum(out[1][1]["sq"])

    x = np.random.default_rng().standard_normal(3)
    np.testing.assert_allclose(tp.grad(loss)(x), 2 * x, rtol=1e-13)
    np.testing.assert_allclose(tp.vmap(tp.grad(loss))(x), 2 * x, rtol=1e-13)
    check_grads(loss, (x,), order=2, modes=("rev",))


@tp.custom_jvp
def square_and_sin_pair(x):
    return x ** 2, (np.sin(x), x)


@square_and_sin_pair.defjvp
def square_and_sin_pair_jvp(primals, tangents):
    x, = primals
    dx, = tangents
    return square_and_sin_pair(x), (2 * x * dx, (np.cos(x) * dx, dx))


def test_grad_of_grad_through_custom_jvp_with_a_nested_output():
    # the second derivative's adjoint of the nested output was None as a whole subtree,
    # where rt.tree_vdot (the transposed rule's inner product) expected a tuple
    def unpacked(x):
        a, (b, c) = square_and_sin_pair(x)
        return a + b + c

    def indexed(x):
        return square_and_sin_pair(x)[1][0]

    rng = np.random.default_rng()
    x, xs = rng.uniform(-2, 2), rng.uniform(-2, 2, size=4)
    assert np.isclose(tp.grad(tp.grad(unpacked))(x), 2 - np.sin(x), rtol=1e-13)
    assert np.isclose(tp.grad(tp.grad(indexed))(x), -np.sin(x), rtol=1e-13)
    np.testing.assert_allclose(tp.vmap(tp.grad(tp.grad(unpacked)))(xs), 2 - np.sin(xs),
                               rtol=1e-13)
    np.testing.assert_allclose(tp.vmap(tp.grad(tp.grad(indexed)))(xs), -np.sin(xs),
                               rtol=1e-13)
    check_grads(unpacked, (x,), order=3, modes=("rev",))


Point = collections.namedtuple("Point", ["x", "y"])


@tp.custom_jvp
def point_features(pt):
    x, y = pt.x, pt.y
    return {"a": x ** 2, "b": (np.sin(x), np.cos(y))}


@point_features.defjvp
def point_features_jvp(primals, tangents):
    pt, = primals
    pt_dot, = tangents
    return point_features(pt), {"a": 2 * pt.x * pt_dot.x,
                                "b": (np.cos(pt.x) * pt_dot.x, -np.sin(pt.y) * pt_dot.y)}


def test_grad_of_grad_through_custom_jvp_of_a_namedtuple_with_a_dict_output():
    # JAX's notebook "Custom derivative rules", the pytree example, differentiated twice
    def features(pt):
        dct = point_features(pt)
        return dct["a"] + dct["b"][0]

    pt = Point(*np.random.default_rng().standard_normal(2))
    second = tp.grad(lambda p: tp.grad(features)(p).x)(pt)
    assert type(second) is Point
    np.testing.assert_allclose(second, (2 - np.sin(pt.x), 0.0), rtol=1e-13)


def test_custom_vjp_rules_returning_the_wrong_structure_raise():
    @tp.custom_vjp
    def debug(x):
        return x

    def debug_fwd(x):
        return x, x

    def debug_bwd(x, g):
        return g                       # JAX's notebook's slip: (g,) is meant

    debug.defvjp(debug_fwd, debug_bwd)
    x = np.random.default_rng().uniform(0.5, 1.0)
    grad = tp.grad(lambda x: np.sin(debug(x ** 2)))
    for transformed, arg, found in ((grad, x, "float64"), (tp.vmap(grad), np.full(3, x),
                                                           "ndarray")):
        with pytest.raises(tp.TransformError, match=r"(?s)in debug_bwd.*bwd rule of "
                           rf"custom_vjp function debug returned a {found}; .*a tuple "
                           r"with one cotangent per primal argument of debug \(1 here\)"):
            transformed(arg)
    debug.defvjp(debug_fwd, lambda x, g: (g, 0.0))
    with pytest.raises(tp.TransformError, match="returned a tuple of 2 items; a bwd rule"):
        tp.grad(debug)(x)
    debug.defvjp(functools.partial(lambda x, k: x * k, k=1.0), debug_bwd)
    with pytest.raises(tp.TransformError, match="(?s)in <lambda>.*fwd rule of custom_vjp "
                       "function debug returned a float; a fwd rule must return a pair"):
        tp.grad(debug)(x)


@tp.custom_jvp
def point_product(pt):
    return pt.x ** 2 * pt.y


@point_product.defjvp
def point_product_jvp(primals, tangents):
    pt, = primals
    pt_dot, = tangents
    return point_product(pt), 2 * pt.x * pt.y * pt_dot.x + pt.x ** 2 * pt_dot.y


def test_vmap_of_grad_through_custom_jvp_of_a_namedtuple():
    """vmap stacked the namedtuple unpacked from the rule's primals into one array before
    reading `.x` (rt.attribute was not listed among the helpers that take containers)."""
    rng = np.random.default_rng(43)
    pts = Point(rng.normal(size=4), rng.normal(size=4))
    got = tp.vmap(tp.grad(point_product))(pts)
    assert isinstance(got, Point)
    np.testing.assert_allclose(got.x, 2 * pts.x * pts.y, rtol=1e-13)
    np.testing.assert_allclose(got.y, pts.x ** 2, rtol=1e-13)
    np.testing.assert_allclose(tp.jit(tp.vmap(tp.grad(point_product)))(pts).x, got.x,
                               rtol=1e-13)


# ---------------------------------------------------------------- defjvps (JAX's per-argument form)

@tp.custom_jvp
def _scaled_sine(x, y):
    return np.sin(x) * y


_scaled_sine.defjvps(lambda x_dot, out, x, y: np.cos(x) * x_dot * y,
                     lambda y_dot, out, x, y: np.sin(x) * y_dot)


@tp.custom_jvp
def _only_first(x, n):
    return x ** 3 * n


_only_first.defjvps(lambda x_dot, out, x, n: 3 * x ** 2 * x_dot * n, None)


def test_defjvps_rules_add_up_in_every_mode():
    rng = np.random.default_rng()
    x, y = rng.normal(size=4), rng.normal(size=4)
    dx, dy = rng.normal(size=4), rng.normal(size=4)
    out, tangent = tp.jvp(_scaled_sine, (x, y), (dx, dy))
    np.testing.assert_allclose(out, np.sin(x) * y)
    np.testing.assert_allclose(tangent, np.cos(x) * dx * y + np.sin(x) * dy)

    def loss(x, y):
        return np.sum(_scaled_sine(x, y) ** 2)

    gx, gy = tp.grad(loss, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2 * np.sin(x) * y * np.cos(x) * y)
    np.testing.assert_allclose(gy, 2 * np.sin(x) * y * np.sin(x))
    check_grads(loss, (x, y), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.vmap(tp.grad(loss))(x[:, None], y[:, None]),
                               [tp.grad(loss)(a[None], b[None]) for a, b in zip(x, y)])
    # None: no derivative through that argument
    s = float(rng.uniform(1, 2))
    assert tp.grad(lambda n: _only_first(s, n))(2.5) == 0.0
    np.testing.assert_allclose(tp.grad(_only_first)(s, 2.5), 3 * s ** 2 * 2.5)
    with pytest.raises(tp.TransformError, match="2 rules for 1 arguments|1 rules for 2"):
        _only_first.defjvps(lambda t, out, x, n: t)


# JAX's docs unpack a rule's arguments in one statement. `(x,), (x_dot,) = primals,
# tangents` made one tuple of both, so reverse mode (which transposes the rule in its
# tangents) saw `x` as a value to differentiate too, and differentiating the rule's own
# call `log1pexp(x)` needed the rule being made: it was refused as a cycle.

@tp.custom_jvp
def log1pexp(x):
    return np.log(1.0 + np.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp(x), x_dot * (1.0 - 1.0 / (1.0 + np.exp(x)))


def test_a_rule_unpacking_primals_and_tangents_in_one_statement():
    rng = np.random.default_rng()
    x = rng.normal(size=4)
    sig = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(log1pexp(x)))(x), sig, rtol=1e-13)
    assert tp.grad(log1pexp)(100.0) == 1.0          # the rule's value, where the body's is nan
    np.testing.assert_allclose(tp.jit(tp.grad(log1pexp))(x[0]), sig[0], rtol=1e-13)
    np.testing.assert_allclose(tp.vmap(tp.grad(log1pexp))(x), sig, rtol=1e-13)
    np.testing.assert_allclose(tp.grad(tp.grad(log1pexp))(x[1]), sig[1] * (1 - sig[1]),
                               rtol=1e-12)
    check_grads(log1pexp, (x,), order=2, modes=("fwd", "rev"))


def _swapped_and_nested(x, y):
    x, y = y, x                          # reads what it binds: one tuple, then unpacked
    a, (b, c) = x * 2.0, (y, np.sin(x))
    f, g = np.sin, np.cos                # functions bound by name, pair by pair
    return a * b + c + f(g(y))


def test_tuple_assignments_of_tuple_literals():
    rng = np.random.default_rng()
    x, y = rng.normal(size=2)
    assert np.isclose(tp.jit(_swapped_and_nested)(x, y), _swapped_and_nested(x, y),
                      rtol=1e-14)
    check_grads(_swapped_and_nested, (x, y), order=2, modes=("fwd", "rev"))


# tp.vjp inside transformed code (JAX's custom_vjp backward rules, its fixed_point example
# with the function written in; Myia's J): refused until `out, pullback = tp.vjp(...)` and
# `pullback(ct)` were lowered to tp.grad of <f(x), ct> where the pullback is called.

def _babylonian_step(a, x):
    return 0.5 * (x + a / x)


@tp.custom_vjp
def _fixed_point_sqrt(a, x_guess):
    x = x_guess
    for _ in range(60):
        x = _babylonian_step(a, x)
    return x


def _fixed_point_fwd(a, x_guess):
    x_star = _fixed_point_sqrt(a, x_guess)
    return x_star, (a, x_star)


def _fixed_point_rev(saved, x_star_bar):
    a, x_star = saved
    _, vjp_a = tp.vjp(lambda a: _babylonian_step(a, x_star), a)
    u = x_star_bar
    for _ in range(60):                  # u = x_star_bar + u @ d step / dx at the fixed point
        _, vjp_x = tp.vjp(lambda x: _babylonian_step(a, x), x_star)
        u = x_star_bar + vjp_x(u)[0]
    a_bar, = vjp_a(u)
    return a_bar, np.zeros_like(x_star)


_fixed_point_sqrt.defvjp(_fixed_point_fwd, _fixed_point_rev)


def _sqrt_by_fixed_point(a):
    return _fixed_point_sqrt(a, a)


def _uses_a_pullback(x, y):
    out, pullback, aux = tp.vjp(lambda x, y: (np.sin(x) * y, np.sum(y)), x, y, has_aux=True)
    dx, dy = pullback(np.cos(out))
    again = tp.vjp(np.tanh, x)[1](y)[0]          # called where it is made
    return np.sum(dx * x) + np.sum(dy ** 2) * aux + np.sum(again)


def test_vjp_inside_transformed_code():
    rng = np.random.default_rng()
    a = rng.uniform(1.0, 5.0)
    assert np.isclose(tp.grad(_sqrt_by_fixed_point)(a), 0.5 / np.sqrt(a), rtol=1e-13)
    assert np.isclose(tp.grad(tp.grad(_sqrt_by_fixed_point))(a), -0.25 * a ** -1.5,
                      rtol=1e-10)
    batch = rng.uniform(1.0, 5.0, 4)
    np.testing.assert_allclose(tp.vmap(tp.grad(_sqrt_by_fixed_point))(batch),
                               0.5 / np.sqrt(batch), rtol=1e-13)
    assert np.isclose(tp.jit(tp.grad(_sqrt_by_fixed_point))(a), 0.5 / np.sqrt(a), rtol=1e-13)
    x, y = rng.normal(size=3), rng.normal(size=3)
    check_grads(_uses_a_pullback, (x, y), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.jit(_uses_a_pullback)(x, y), _uses_a_pullback(x, y),
                               rtol=1e-14)
    xs, ys = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    np.testing.assert_allclose(tp.vmap(_uses_a_pullback)(xs, ys),
                               [_uses_a_pullback(u, v) for u, v in zip(xs, ys)], rtol=1e-14)


# nondiff_argnums (JAX's fixed_point and app examples, as JAX's docs write them): the
# arguments at those positions are fixed while transforming (a function, a constant) and
# given to the rules first; they were refused ("nondiff_argnums is not supported").

@functools.partial(tp.custom_vjp, nondiff_argnums=(0,))
def _fixed_point(f, a, x_guess):
    def cond_fun(carry):
        x_prev, x = carry
        return np.abs(x_prev - x) > 1e-10

    def body_fun(carry):
        _, x = carry
        return x, f(a, x)

    _, x_star = tp.lax.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
    return x_star


def _fixed_point_nondiff_fwd(f, a, x_init):
    x_star = _fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def _rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = tp.vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]


def _fixed_point_nondiff_rev(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = tp.vjp(lambda a: f(a, x_star), a)
    a_bar, = vjp_a(_fixed_point(functools.partial(_rev_iter, f), (a, x_star, x_star_bar),
                                x_star_bar))
    return a_bar, np.zeros_like(x_star)


_fixed_point.defvjp(_fixed_point_nondiff_fwd, _fixed_point_nondiff_rev)


def _newton_sqrt(a):
    update = lambda a, x: 0.5 * (x + a / x)      # noqa: E731
    return _fixed_point(update, a, a)


@functools.partial(tp.custom_jvp, nondiff_argnums=(0,))
def _app(f, x):
    return f(x)


@_app.defjvp
def _app_jvp(f, primals, tangents):
    x, = primals
    x_dot, = tangents
    return f(x), 2.0 * x_dot


def test_nondiff_argnums_in_custom_rules():
    rng = np.random.default_rng()
    a = rng.uniform(1.0, 5.0)
    assert np.isclose(_newton_sqrt(a), np.sqrt(a), rtol=1e-14)
    assert np.isclose(tp.grad(_newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-12)
    assert np.isclose(tp.grad(tp.grad(_newton_sqrt))(a), -0.25 * a ** -1.5, rtol=1e-9)
    batch = rng.uniform(1.0, 5.0, 3)
    np.testing.assert_allclose(tp.vmap(tp.grad(_newton_sqrt))(batch), 0.5 / np.sqrt(batch),
                               rtol=1e-12)
    assert np.isclose(tp.jit(tp.grad(_newton_sqrt))(a), 0.5 / np.sqrt(a), rtol=1e-12)
    x = rng.normal()
    assert tp.grad(lambda x: _app(lambda y: y ** 2, x))(x) == 2.0      # the rule's slope
    assert tp.jvp(lambda x: _app(np.sin, x), (x,), (1.0,))[1] == 2.0
    assert np.isclose(tp.vmap(lambda x: _app(np.sin, x))(np.array([x]))[0], np.sin(x))

    def given_at_run_time(f, x):
        return _app(f, x)
    with pytest.raises(tp.TransformError, match="argument 0 of _app is in its "
                       "nondiff_argnums"):
        tp.grad(given_at_run_time, argnums=1)(np.array([np.sin]), x)


# ---------------------------------------------------------------- custom rules under a
# derivative of vmap (JAX's custom_api_test: test_vmap, test_initial_style_vmap, clip_gradient
# under vmap). vmap batched a custom function's body, so grad, jvp or jacrev of a function
# calling `tp.vmap(f)` differentiated the body and silently ignored the rules. vmap now calls
# a custom function whose body and rules are vmapped.

@tp.custom_jvp
def _doubled_sin(x):
    return np.sin(x)


@_doubled_sin.defjvp
def _doubled_sin_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return _doubled_sin(x), 2.0 * np.cos(x) * t


@tp.custom_vjp
def _clip_gradient(x, w):
    return x * w


def _clip_fwd(x, w):
    return x * w, (x, w)


def _clip_bwd(saved, g):
    x, w = saved
    return np.clip(g * w, -0.5, 0.5), np.clip(g * x, -0.5, 0.5)


_clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def _summed_vmap_of_doubled_sin(x):
    return np.sum(tp.vmap(_doubled_sin)(x) ** 2)


def _summed_vmap_of_clipped(x, w):
    return np.sum(tp.vmap(_clip_gradient, in_axes=(0, None))(x, w))


def test_custom_rules_are_used_by_derivatives_of_vmap():
    rng = np.random.default_rng(11)
    x = rng.normal(size=5)
    expected = 2.0 * np.sin(x) * 2.0 * np.cos(x)
    np.testing.assert_allclose(tp.grad(_summed_vmap_of_doubled_sin)(x), expected, rtol=1e-14)
    np.testing.assert_allclose(tp.jit(tp.grad(_summed_vmap_of_doubled_sin))(x), expected,
                               rtol=1e-14)
    np.testing.assert_allclose(tp.jvp(tp.vmap(_doubled_sin), (x,), (np.ones(5),))[1],
                               2.0 * np.cos(x), rtol=1e-14)
    np.testing.assert_allclose(tp.jacrev(tp.vmap(_doubled_sin))(x), np.diag(2.0 * np.cos(x)),
                               rtol=1e-14)
    np.testing.assert_allclose(tp.vmap(_doubled_sin)(x), np.sin(x), rtol=1e-15)
    # second order: the rule's own derivative
    np.testing.assert_allclose(tp.grad(lambda v: np.sum(tp.grad(
        lambda u: np.sum(tp.vmap(_doubled_sin)(u)))(v)))(x), -2.0 * np.sin(x), rtol=1e-14)
    # custom_vjp, one argument shared by the examples: its cotangents are summed
    xs, w = rng.normal(size=6) * 3.0, 0.8
    gx, gw = tp.grad(_summed_vmap_of_clipped, argnums=(0, 1))(xs, w)
    np.testing.assert_allclose(gx, np.clip(w, -0.5, 0.5) * np.ones(6), rtol=1e-15)
    np.testing.assert_allclose(gw, np.sum(np.clip(xs, -0.5, 0.5)), rtol=1e-14)
    per_example = [tp.grad(_clip_gradient, argnums=1)(v, w) for v in xs]
    np.testing.assert_allclose(gw, np.sum(per_example), rtol=1e-14)


# ---------------------------------------------------------------- JAX's custom_api_test and
# api_test: a bwd rule's None for a tuple argument, custom_jvp of a functools.partial, a jvp
# rule returning only the tangent, linearize's function called in transformed code

@tp.custom_vjp
def _product_of_pair(xs, y):
    x1, x2 = xs
    return x1 * x2 * np.sin(y)


_product_of_pair.defvjp(lambda xs, y: (_product_of_pair(xs, y), np.cos(y)),
                        lambda cos_y, g: (None, 2.0 * cos_y * g))


def _sum_and_scale(x, y, a):
    return x + y * a


_partial_custom = tp.custom_jvp(functools.partial(_sum_and_scale, a=0.1))
_partial_custom.defjvp(lambda p, t: (_partial_custom(p[0], p[1]), t[0] + 0.1 * t[1]))


@tp.custom_jvp
def _tangent_only(x):
    return np.sin(x)


_tangent_only.defjvp(lambda primals, tangents: np.cos(primals[0]) * tangents[0])


def test_smaller_custom_rule_findings_of_jax_ports():
    assert tp.grad(lambda x: _product_of_pair((x, x), x))(0.3) == \
        pytest.approx(2.0 * np.cos(0.3), rel=1e-15)
    assert tp.grad(_partial_custom, (0, 1))(1.0, 2.0) == pytest.approx((1.0, 0.1), rel=1e-15)
    assert tp.jvp(_partial_custom, (1.0, 2.0), (1.0, 1.0))[1] == pytest.approx(1.1, rel=1e-15)
    with pytest.raises(tp.TransformError, match="a jvp rule must return a pair"):
        tp.jvp(_tangent_only, (1.0,), (1.0,))
    _, f_jvp = tp.linearize(lambda x: 2.0 * np.sin(x), 1.0)
    assert tp.jit(lambda f, x: f(x), static_argnums=0)(f_jvp, 3.0) == \
        pytest.approx(6.0 * np.cos(1.0), rel=1e-15)
    assert tp.linear_transpose(lambda x: (1 + 2j) * x, 1j)(3 + 4j)[0] == -5 + 10j


def test_a_pullback_is_transformed_and_checks_its_cotangent():
    # the cotangent check (api_test) is a primitive: a pullback given to vmap, jit or grad
    # is transformed through it (the JAX docs' vmap of a vjp, a Jacobian built so)
    x = np.array([0.3, 1.2, -0.7])
    y, pb = tp.vjp(lambda v: np.sin(v) * v, x)
    eye = np.eye(3)
    np.testing.assert_allclose(tp.vmap(pb)(eye)[0], np.stack([pb(m)[0] for m in eye]),
                               rtol=1e-15)
    np.testing.assert_allclose(tp.jit(pb)(eye[1])[0], pb(eye[1])[0], rtol=1e-15)
    with pytest.raises(TypeError, match="cotangent must have the output's structure"):
        pb((eye[0], eye[1]))
    assert tp.linear_transpose(lambda v: 2 * v, 1)(3)[0] == 6.0


# ---------------------------------------------------------------- tp.checkpoint (jax.checkpoint)

def _ck_layer(w, x):
    return np.tanh(x @ w) + 0.1 * np.sin(x)


def _ck_net(ws, x):
    for w in ws:
        x = tp.checkpoint(_ck_layer)(w, x)
    return np.sum(x ** 2)


def _plain_net(ws, x):
    for w in ws:
        x = _ck_layer(w, x)
    return np.sum(x ** 2)


@tp.checkpoint
def _ck_block(x, w):
    return np.sin(x @ w) ** 2


@functools.partial(tp.checkpoint, static_argnums=(1,))
def _ck_repeat(x, n):
    for _ in range(n):
        x = np.tanh(x) * 1.1
    return x


def _ck_mixed(x, w):
    z = _ck_repeat(_ck_block(x, w), 3)
    inner = tp.checkpoint(lambda v: np.exp(-v) * w[0, 0])

    def step(c, xi):
        c = tp.remat(lambda c: np.cos(c * xi))(c)
        return c, c * 2.0
    c, ys = tp.lax.scan(step, z[0], x)
    return np.sum(inner(z)) + np.sum(ys) + np.sum(c)


def _plain_mixed(x, w):
    z = np.sin(x @ w) ** 2
    for _ in range(3):
        z = np.tanh(z) * 1.1
    c, ys = z[0], []
    for xi in x:
        c = np.cos(c * xi)
        ys.append(c * 2.0)
    return np.sum(np.exp(-z) * w[0, 0]) + np.sum(ys) + np.sum(c)


def test_checkpoint_gives_the_functions_values_and_derivatives():
    rng = np.random.default_rng(35)
    x, w = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    assert np.isclose(_ck_mixed(x, w), _plain_mixed(x, w))
    check_grads(_ck_mixed, (x, w), order=2, modes=("rev", "fwd"))
    for argnums in (0, 1):
        np.testing.assert_allclose(tp.grad(_ck_mixed, argnums=argnums)(x, w),
                                   tp.grad(_plain_mixed, argnums=argnums)(x, w), rtol=1e-10)
    assert np.isclose(tp.jit(_ck_mixed)(x, w), _plain_mixed(x, w))
    xs = rng.normal(size=(4, 3, 3))
    np.testing.assert_allclose(tp.vmap(_ck_mixed, (0, None))(xs, w),
                               [_plain_mixed(v, w) for v in xs], rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(tp.grad(_ck_mixed), (0, None))(xs, w),
                               [tp.grad(_plain_mixed)(v, w) for v in xs], rtol=1e-10)
    np.testing.assert_allclose(
        tp.grad(lambda w: np.sum(tp.vmap(_ck_mixed, (0, None))(xs, w)))(w),
        sum(tp.grad(_plain_mixed, argnums=1)(v, w) for v in xs), rtol=1e-10)
    assert np.isclose(tp.grad(tp.checkpoint(np.sin))(0.7), np.cos(0.7))
    with pytest.raises(tp.TransformError, match="saves only the function's arguments"):
        tp.checkpoint(_ck_layer, policy=lambda *args: True)


def test_checkpoint_keeps_only_the_arguments_for_the_backward_pass():
    """The point of it: twenty layers of 200 x 200 keep one input each, not the four
    intermediates of each layer (peak traced memory of the gradient's call)."""
    rng = np.random.default_rng(36)
    ws = [rng.normal(size=(200, 200)) / 14 for _ in range(20)]
    x = rng.normal(size=(200, 200))
    peaks = []
    for net in (_plain_net, _ck_net):
        grad = tp.grad(net, argnums=1)
        got = grad(ws, x)
        tracemalloc.start()
        grad(ws, x)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    np.testing.assert_allclose(got, tp.grad(_plain_net, argnums=1)(ws, x), rtol=1e-10)
    assert peaks[1] < 0.6 * peaks[0], peaks


# ---------------------------------------------------------------- a custom_jvp rule applying the
# function to the tangents (JAX's custom_api_test: `return f(x), f(t)` for a linear f): reverse
# mode transposes the rule, and met the function's own reverse rule (that transposition) inside
# it: "needed to generate its own code"

@tp.custom_jvp
def _linear_map(x, w):
    return w * x + np.sum(x) * 0.5


@_linear_map.defjvp
def _linear_map_jvp(primals, tangents):
    x, w = primals
    tx, tw = tangents
    return _linear_map(x, w), _linear_map(tx, w) + tw * x


def _through_linear_map(x, w):
    return np.sum(np.sin(_linear_map(x, w)))


def test_a_jvp_rule_applying_the_function_to_tangents_is_transposed():
    rng = np.random.default_rng(37)
    x, w = rng.normal(size=3), rng.normal(size=3)
    check_grads(_through_linear_map, (x, w), order=2, modes=("rev", "fwd"))
    xs = rng.normal(size=(4, 3))
    grad = tp.grad(_through_linear_map)
    np.testing.assert_allclose(tp.vmap(grad, (0, None))(xs, w), [grad(v, w) for v in xs],
                               rtol=1e-12)


# the first tries of tp.checkpoint by a helper: a checkpointed function named `layer_out`
# (a temporary took the name of the function it called), a nested one with defaults or
# keywords (the lifted function had none), tp.checkpoint(tp.grad(f)) under jvp, a step of
# tp.lax.scan checkpointed inline, as a nested def or decorated; random draws refused

@tp.checkpoint
def layer_out(x):
    return np.sin(x), x


def _ck_inner_sum(v):
    return np.sum(np.sin(v) ** 3)


def _ck_step(c, x):
    return np.tanh(c * x) + 0.1 * c, c * x


def _ck_scans(c0, xs, w):
    c, ys = tp.lax.scan(tp.checkpoint(_ck_step), c0, xs)

    def inner(c, x, scale=1.0):
        return np.sin(c * w) * scale + x, c
    c, ys2 = tp.lax.scan(tp.remat(inner), c, xs)

    @tp.checkpoint
    def decorated(c, x):
        return np.cos(c) * x * w, c
    c, ys3 = tp.lax.scan(decorated, c, xs)
    extra = tp.checkpoint(inner)(c, xs[0], scale=2.0)[0] + tp.checkpoint(inner)(c, xs[1])[0]
    g = tp.checkpoint(tp.grad(_ck_inner_sum))(c)
    return np.sum(c) + np.sum(ys) + np.sum(ys2) + np.sum(ys3) + np.sum(extra) + np.sum(g * c)


def _ck_scans_plain(c0, xs, w):
    c, total = c0, 0.0
    for x in xs:
        c, y = _ck_step(c, x)
        total = total + np.sum(y)
    for x in xs:
        c, y = np.sin(c * w) + x, c
        total = total + np.sum(y)
    for x in xs:
        c, y = np.cos(c) * x * w, c
        total = total + np.sum(y)
    extra = np.sum(np.sin(c * w) * 2.0 + xs[0]) + np.sum(np.sin(c * w) + xs[1])
    g = 3 * np.sin(c) ** 2 * np.cos(c)
    return np.sum(c) + total + extra + np.sum(g * c)


@tp.checkpoint
def _ck_dropout(x, rng):
    keep = rng.uniform(size=x.shape) > 0.5
    return np.tanh(x) * keep / 0.5


def test_checkpoint_in_scans_nested_functions_and_names():
    x = np.array([0.3, 0.5])
    np.testing.assert_allclose(tp.grad(lambda v: np.sum(layer_out(v)[0]))(x), np.cos(x),
                               rtol=1e-14)
    rng = np.random.default_rng(38)
    c0, xs, w = rng.normal(size=3), rng.normal(size=(4, 3)), 0.7
    assert np.isclose(_ck_scans(c0, xs, w), _ck_scans_plain(c0, xs, w))
    assert np.isclose(tp.jit(_ck_scans)(c0, xs, w), _ck_scans_plain(c0, xs, w))
    check_grads(_ck_scans, (c0, xs, w), order=2, modes=("rev", "fwd"))
    np.testing.assert_allclose(tp.grad(_ck_scans)(c0, xs, w),
                               tp.grad(_ck_scans_plain)(c0, xs, w), rtol=1e-10)
    with pytest.raises(tp.TransformError, match="draws random numbers"):
        tp.grad(lambda v, r: np.sum(_ck_dropout(v, r) ** 2))(x, np.random.default_rng(1))
