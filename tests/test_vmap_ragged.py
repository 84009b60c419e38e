"""vmap of reads through a boolean mask that differs between examples (`x[x > 0]`): each
example selects its own number of elements (runtime/ragged.py). What numpy does with one
example's selection (elementwise arithmetic, reductions, writing it back through a mask)
vmap does for all, against a Python loop, with its derivatives (vmap(grad), grad of
vmap, jit(vmap)); anything else is a TransformError, never a wrong number."""
import numpy as np
import pytest

import transpile as tp


def leaky_in_place(x, s):
    y = x.copy()
    y[y < 0] *= s
    return np.sum(y ** 2)


def sqrt_where_large(x, s):
    y = x * s
    m = y > 0.5
    y[m] = np.sqrt(y[m])
    return np.sum(np.sin(y))


def sum_of_selected(x, s):
    return np.sum(x[x > 0] ** 2) * s


def mean_of_selected(x, s):
    return np.mean(x[x > -0.5]) + s


def max_minus_min(x, s):
    sel = x[x > -1.5] * s
    return np.max(sel) - np.min(sel) + np.prod(np.tanh(sel))


def two_masks_same_counts(x, s):
    y = x.copy()
    m = x > 0.2
    # the same elements selected twice: a product of two selections, written back
    y[m] = x[m] * np.exp(y[m] * s)
    return np.sum(y * x)


def rows_of_a_matrix(x, s):
    a = np.reshape(x, (3, 4))
    rows = a[a[:, 0] > -0.3]           # whole rows, a different number per example
    return np.sum(rows * np.array([1.0, 2.0, -1.0, 0.5]) + s) + np.sum(np.sum(rows, axis=1) ** 2)


def selection_times_per_example(x, s):
    w = np.cos(x[0]) * s               # one number per example
    sel = x[np.abs(x) < 1.0]
    return np.sum(np.where(sel > 0, sel * w, -sel)) + np.sum(np.clip(sel, -0.5, 0.5))


def read_in_a_loop_with_a_batched_break(x, s):
    u = x ** 2 * s
    for k in range(3):
        # the selection of each trip, kept or not per example as the loop goes on
        u[np.cos(x) < 0.7] = np.tanh(u[np.cos(x) < 0.7]) * (1.0 + 0.5 * np.sin(u[2]))
        if np.sum(u) > 2.0 + k:
            break
    return np.sum(np.tanh(u)) + np.mean(x * x)


def branch_between_selections(x, s):
    if np.sum(x) > 0:
        sel = x[x > 0.3] * s
    else:
        sel = np.exp(x[x < -0.2])
    return np.sum(sel ** 2)


PROGRAMS = [read_in_a_loop_with_a_batched_break, branch_between_selections, leaky_in_place, sqrt_where_large, sum_of_selected, mean_of_selected,
            max_minus_min, two_masks_same_counts, rows_of_a_matrix,
            selection_times_per_example]


def _inputs(rng, n=5):
    x = rng.normal(size=(n, 12))
    x[1, :] = np.abs(x[1, :]) + 0.1      # all selected (x > 0) in one example ...
    x[2, :6] = -np.abs(x[2, :6]) - 2.0     # ... and fewer than half in another
    s = rng.uniform(0.5, 1.5, n)
    return x, s


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_equals_the_loop(fn):
    x, s = _inputs(np.random.default_rng())
    want = np.array([fn(xi, si) for xi, si in zip(x, s)])
    np.testing.assert_allclose(tp.vmap(fn)(x, s), want, rtol=1e-12)
    np.testing.assert_allclose(tp.jit(tp.vmap(fn))(x, s), want, rtol=1e-12)
    # s the same for every example
    want = np.array([fn(xi, s[0]) for xi in x])
    np.testing.assert_allclose(tp.vmap(fn, in_axes=(0, None))(x, s[0]), want, rtol=1e-12)


# joined from paths with other counts: elementwise work on the join alone is defined;
# vmap of its derivative combines it with one path's selection (refused, see below)
FORWARD_ONLY = {"branch_between_selections"}


@pytest.mark.parametrize("fn", [f for f in PROGRAMS if f.__name__ not in FORWARD_ONLY],
                         ids=lambda f: f.__name__)
def test_vmap_of_grad_equals_the_loop(fn):
    x, s = _inputs(np.random.default_rng())
    grad = tp.grad(fn, argnums=(0, 1))
    want = [grad(xi, si) for xi, si in zip(x, s)]
    for got in (tp.vmap(grad)(x, s), tp.jit(tp.vmap(grad))(x, s)):
        for k in range(2):
            np.testing.assert_allclose(got[k], np.array([w[k] for w in want]), rtol=1e-10,
                                       atol=1e-12)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_of_vmap_equals_the_loop(fn):
    x, s = _inputs(np.random.default_rng())
    total = tp.grad(lambda x, s: np.sum(tp.vmap(fn)(x, s) * np.arange(1.0, 6.0)),
                    argnums=(0, 1))
    dx, ds = total(x, s)
    grad = tp.grad(fn, argnums=(0, 1))
    for i in range(len(x)):
        gx, gs = grad(x[i], s[i])
        np.testing.assert_allclose(dx[i], (i + 1) * gx, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ds[i], (i + 1) * gs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_of_jvp_and_jvp_of_vmap_equal_the_loop(fn):
    rng = np.random.default_rng()
    x, s = _inputs(rng)
    dx, ds = rng.normal(size=x.shape), rng.normal(size=s.shape)

    def tangent_out(x, s, dx, ds):
        return tp.jvp(fn, (x, s), (dx, ds))[1]

    want = np.array([tangent_out(*a) for a in zip(x, s, dx, ds)])
    np.testing.assert_allclose(tp.vmap(tangent_out)(x, s, dx, ds), want, rtol=1e-10,
                               atol=1e-12)
    out, tangent = tp.jvp(tp.vmap(fn), (x, s), (dx, ds))
    np.testing.assert_allclose(tangent, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out, [fn(a, b) for a, b in zip(x, s)], rtol=1e-12)


def _ragged_uses():
    def sort_selection(x):
        return np.sort(x[x > 0])[-1]

    def length_of_selection(x):
        return len(x[x > 0]) * np.sum(x)

    def dot_of_selections(x):
        return np.dot(x[x > 0], x[x > 0])

    def write_other_count(x):
        y = x.copy()
        y[y > 0] = x[x < 0.5]             # the counts of the two masks differ
        return np.sum(y)

    def selection_against_full_row(x):
        return np.sum(x[x > 0] * x)       # numpy: only where the counts match

    def selection_returned(x):
        return x[x > 0] * 2.0

    def cumulative(x):
        return np.sum(np.cumsum(x[x > 0]))

    return [sort_selection, length_of_selection, dot_of_selections, write_other_count,
            selection_against_full_row, selection_returned, cumulative]


@pytest.mark.parametrize("fn", _ragged_uses(), ids=lambda f: f.__name__)
def test_uses_that_need_a_shape_raise_clearly(fn):
    x, _ = _inputs(np.random.default_rng())
    for transform in (tp.vmap, lambda f: tp.vmap(tp.grad(f))):
        with pytest.raises((tp.TransformError, ValueError),
                           match="ragged|select different numbers"):
            transform(fn)(x)


def test_an_example_that_selects_nothing():
    x, s = _inputs(np.random.default_rng())
    x[:, 0] = np.abs(x[:, 0]) + 0.1         # something above 0 in every other example
    x[3] = -np.abs(x[3]) - 0.1              # nothing above 0 in example 3
    np.testing.assert_allclose(tp.vmap(sum_of_selected)(x, s),
                               [sum_of_selected(a, b) for a, b in zip(x, s)])
    grads = tp.vmap(tp.grad(sum_of_selected))(x, s)
    assert np.all(grads[3] == 0)
    # numpy: the max of an empty selection raises, so does its batched form
    with pytest.raises(ValueError, match="zero-size array"):
        tp.vmap(lambda x: np.max(x[x > 0]))(x)
    with pytest.warns(RuntimeWarning):
        means = tp.vmap(lambda x: np.mean(x[x > 0]))(x)
    assert np.isnan(means[3]) and np.all(np.isfinite(np.delete(means, 3)))


def test_derivatives_of_selections_joined_from_paths_of_other_lengths_are_refused():
    x, s = _inputs(np.random.default_rng())
    x[0, :] = np.abs(x[0]) + 0.5           # takes the first path: an example of each
    x[4, :] = -np.abs(x[4]) - 0.5
    with pytest.raises(tp.TransformError, match="joined from the paths"):
        tp.vmap(tp.grad(branch_between_selections))(x, s)


def test_vmap_of_vmap_and_hessian_refuse_clearly():
    x, s = _inputs(np.random.default_rng())
    with pytest.raises(tp.TransformError, match="ragged"):
        tp.vmap(tp.vmap(sum_of_selected))(x[None], s[None])


def test_reductions_keep_numpy_dtypes():
    rng = np.random.default_rng()
    x = rng.normal(size=(4, 6))
    x[:, 0] = np.abs(x[:, 0]) + 0.2          # something selected in every example
    for dtype in (np.float32, np.float64, np.int64):
        xs = (x * 10).astype(dtype)

        def stats(v):
            sel = v[v > 0]
            return np.mean(sel), np.sum(sel), np.max(sel), np.mean(v[v > -100] > 0)

        got = tp.vmap(stats)(xs)
        want = [stats(v) for v in xs]
        for k in range(4):
            assert got[k].dtype == np.asarray(want[0][k]).dtype, (dtype, k)
            np.testing.assert_allclose(got[k], [w[k] for w in want], rtol=1e-6)
