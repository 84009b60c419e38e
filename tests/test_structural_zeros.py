"""0 * inf in a derivative where the function does not depend on the entry at all.

`np.where(x > 0, np.sqrt(x), 0.0)` at x = 0, a write over an entry whose partial is
infinite, indexing that skips it, a Jacobian's off-diagonal entries of an elementwise
function at a singular point: the derivative there is 0, and JAX and autograd give nan
(0 * inf). Where the zero is not structural (`np.sqrt(x) ** 2` at x = 0, where a vanishing
partial meets an infinite one) the honest nan stays: see ir/structural_zeros.py.
Checked against finite differences away from the singular points, exactly at them.
"""
import warnings

import numpy as np
import pytest

import transpile as tp


def masked_sqrt(x):
    return np.sum(np.where(x > 0, np.sqrt(x), 0.0))


def masked_log(x):
    y = np.log(x)
    y[x <= 0] = 0.0
    return np.sum(2.5 * y)


def squared_after_where(x):
    return np.sum(np.where(x > 0, np.sqrt(x), 0.0) ** 2)


def entropy(p):
    return -np.sum(np.where(p > 0, p * np.log(p), 0.0))


def log_written_over_then_squared(x):
    y = np.log(x)
    y[x <= 0] = 0.0
    return np.sum(y * y)


def floor_of_sqrt_squared(x):
    return np.sum(np.maximum(np.sqrt(np.abs(x)), 0.5) ** 2)


def pairwise_inverse_distances(x):
    # scipy's Elec benchmark: 1 / |xi - xj| summed, its diagonal (0 ** -0.5) written over
    d = x[:, None] - x[None, :]
    r = d * d
    dm1 = r ** -0.5
    dm1[np.diag_indices(x.shape[0])] = 0
    return np.sum(np.triu(dm1 * np.arange(1.0, 1.0 + x.shape[0])))


def skips_the_first(x):
    return -np.sum(np.log(x)[1:] * np.arange(1.0, x.shape[0]))


def upper_of_sqrt(a):
    return np.sum(np.triu(np.sqrt(a), 1))


def clipped_log(x):
    return np.sum(np.maximum(np.log(x), -1.0))


def sqrt_squared(x):
    return np.sum(np.sqrt(x) ** 2)


def sqrt_times_sqrt(x):
    s = np.sqrt(x)
    return np.sum(s * s)


def _fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def _quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


@pytest.fixture
def rng(request):
    seed = np.random.SeedSequence().entropy % 2 ** 32
    print("seed", seed)
    return np.random.default_rng(seed)


def _with_singular_points(rng, n=6):
    x = rng.uniform(0.3, 2.0, n) * rng.choice([-1.0, 1.0], n)
    x[[1, 4]] = 0.0
    return x


@pytest.mark.parametrize("f", [masked_sqrt, masked_log, squared_after_where, entropy,
                               log_written_over_then_squared])
def test_where_and_masked_writes_give_zero_not_nan(f, rng):
    x = _with_singular_points(rng)
    g = _quiet(tp.grad(f), x)
    assert np.all(np.isfinite(g)), g
    away = x > 0
    fd = _quiet(_fd, f, np.where(away, x, 1.0))
    np.testing.assert_allclose(g[away], fd[away], rtol=1e-6)
    assert np.all(g[~away] == 0)


@pytest.mark.parametrize("f", [pairwise_inverse_distances, skips_the_first, clipped_log])
def test_written_over_skipped_and_clipped_entries(f, rng):
    x = rng.uniform(0.2, 3.0, 5)
    if f is not pairwise_inverse_distances:
        x[0] = 0.0                       # log(0) = -inf: skipped, or clipped to -1
    g = _quiet(tp.grad(f), x)
    assert np.all(np.isfinite(g)), g
    moved = x if f is pairwise_inverse_distances else np.where(x == 0, 1.0, x)
    fd = _quiet(_fd, f, moved)
    keep = slice(None) if f is pairwise_inverse_distances else slice(1, None)
    np.testing.assert_allclose(g[keep], fd[keep], rtol=1e-6)
    if f is not pairwise_inverse_distances:
        assert g[0] == 0


def test_max_that_does_not_take_a_singular_entry(rng):
    x = rng.uniform(0.5, 2.0, 5) * rng.choice([-1.0, 1.0], 5)
    x[[0, 3]] = 0.0
    x[1] = 0.1                      # sqrt(0.1) < 0.5: not taken either
    g = _quiet(tp.grad(floor_of_sqrt_squared), x)
    np.testing.assert_allclose(g, np.where(np.abs(x) > 0.25, np.sign(x), 0.0), rtol=1e-12)


@pytest.mark.parametrize("f", [entropy, log_written_over_then_squared])
def test_product_and_square_keep_the_unpicked_entries_structural(f, rng):
    xs = np.stack([_with_singular_points(rng) for _ in range(3)])
    got = _quiet(tp.vmap(tp.grad(f)), xs)
    want = np.stack([_quiet(tp.grad(f), x) for x in xs])
    np.testing.assert_array_equal(got, want)
    assert np.all(np.isfinite(got))
    np.testing.assert_array_equal(_quiet(tp.jit(tp.grad(f)), xs[0]), want[0])


def test_upper_triangle_of_sqrt_with_zero_diagonal(rng):
    a = rng.uniform(0.5, 2.0, (4, 4))
    np.fill_diagonal(a, 0.0)
    g = _quiet(tp.grad(upper_of_sqrt), a)
    want = np.triu(0.5 / np.sqrt(np.where(a == 0, 1.0, a)), 1)
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_vmap_of_grad_matches_the_loop(rng):
    xs = np.stack([_with_singular_points(rng) for _ in range(3)])
    got = _quiet(tp.vmap(tp.grad(masked_log)), xs)
    want = np.stack([_quiet(tp.grad(masked_log), x) for x in xs])
    np.testing.assert_array_equal(got, want)
    assert np.all(np.isfinite(got))


def test_jacobian_of_elementwise_function_at_a_singular_point(rng):
    # jacfwd's basis tangents: their zeros are structural (jacrev's basis cotangents are
    # not guarded, see gradients.vjp_functions: its rows off the diagonal stay nan there)
    x = rng.uniform(0.5, 2.0, 4)
    x[2] = 0.0
    j = _quiet(tp.jacfwd(np.sqrt), x)
    off = ~np.eye(4, dtype=bool)
    assert np.all(j[off] == 0), j
    assert j[2, 2] == np.inf
    keep = np.arange(4) != 2
    np.testing.assert_allclose(np.diag(j)[keep], 0.5 / np.sqrt(x[keep]), rtol=1e-12)


def test_jvp_with_zeros_in_the_given_direction(rng):
    x = rng.uniform(0.5, 2.0, 3)
    x[0] = 0.0
    v = rng.normal(size=3)
    v[0] = 0.0
    _, tangent = _quiet(tp.jvp, np.log, (x,), (v,))
    assert tangent[0] == 0
    np.testing.assert_allclose(tangent[1:], v[1:] / x[1:], rtol=1e-12)


def test_jvp_after_writing_a_constant_into_the_input(rng):
    def f(x):
        y = x.copy()
        y[0] = 0.0
        return np.sum(np.sqrt(y))
    x = rng.uniform(0.5, 2.0, 3)
    v = rng.normal(size=3)
    _, t = _quiet(tp.jvp, f, (x,), (v,))
    np.testing.assert_allclose(t, np.sum(0.5 * v[1:] / np.sqrt(x[1:])), rtol=1e-12)
    np.testing.assert_allclose(_quiet(tp.grad(f), x)[1:], 0.5 / np.sqrt(x[1:]), rtol=1e-12)
    assert _quiet(tp.grad(f), x)[0] == 0


@pytest.mark.parametrize("f", [sqrt_squared, sqrt_times_sqrt])
def test_a_vanishing_partial_is_not_made_a_zero(f):
    # sqrt(x) ** 2 is x: the slope at 0 is 1, not 0. Its chain rule meets 0 * inf where the
    # zero is a derivative, not an entry nothing reads: nan stays (as in JAX)
    g = _quiet(tp.grad(f), np.array([0.0, 2.0]))
    assert np.isnan(g[0]) and np.isclose(g[1], 1.0)


def test_second_derivatives_away_from_the_singular_points(rng):
    x = rng.uniform(0.5, 2.0, 4)
    h = tp.hessian(masked_log)(x)
    fd = np.stack([_fd(lambda z: tp.grad(masked_log)(z)[i], x) for i in range(4)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)


def test_the_guard_is_left_out_where_no_zero_can_be_structural():
    src = tp.grad(lambda x: np.sum(np.log(x) * np.sqrt(x))).source
    assert "zero_where_unused" not in src
    assert "zero_where_unused" in tp.grad(masked_sqrt).source


@pytest.mark.parametrize("f", [masked_sqrt, entropy, squared_after_where])
@pytest.mark.parametrize("second", ["hessian", "jacrev(grad)", "jacfwd(grad)"])
def test_second_derivatives_at_the_singular_points(f, second, rng):
    # reverse over reverse differentiates the guards themselves: where they kept a 0, the
    # entry is structural again (rt.zero_where's own zero flow)
    make = {"hessian": tp.hessian, "jacrev(grad)": lambda f: tp.jacrev(tp.grad(f)),
            "jacfwd(grad)": lambda f: tp.jacfwd(tp.grad(f))}[second]
    x = _with_singular_points(rng, 5)
    h = _quiet(make(f), x)
    assert np.all(np.isfinite(h)), h
    assert np.all(h[~np.eye(5, dtype=bool)] == 0)
    away = x > 0
    grad = tp.grad(f)
    for i in np.flatnonzero(away):
        e = np.zeros(5)
        e[i] = 1e-6
        fd = (_quiet(grad, x + e)[i] - _quiet(grad, x - e)[i]) / 2e-6
        np.testing.assert_allclose(h[i, i], fd, rtol=1e-5, atol=1e-8)
    assert np.all(np.diag(h)[~away] == 0)


def _where_against_a_constant_row(x):
    u = np.linspace(0.6, 0.8, 3)
    return np.mean(np.where(x > 1.0, np.sqrt(x), u))


def test_gradient_through_vmap_keeps_the_marks_across_its_alignment(rng):
    # grad(vmap(f)): the batched code aligns np.where's operands (rt.align / align_lanes);
    # the marks follow the alignment back (the program generator found the nan)
    xs = rng.uniform(-1.0, 2.0, (3, 3))
    xs[0, 0] = 1.5
    g = _quiet(tp.grad(lambda xs: np.sum(tp.vmap(_where_against_a_constant_row)(xs))), xs)
    assert np.all(np.isfinite(g)), g
    np.testing.assert_allclose(g, np.where(xs > 1.0, 0.5 / np.sqrt(np.abs(xs)) / 3, 0.0),
                               rtol=1e-12)
