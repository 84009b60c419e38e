"""vmap: the API (in_axes/out_axes/axis_size), control flow on batched values, named axes,
composition, readable source. Every result is checked against a Python loop over examples
(or explicit numpy for collectives) on fresh random inputs."""
import numpy as np
import pytest

import transpile as tp
from transpile.test_util import check_grads
from runtime.trees import tree_leaves, tree_map

RNG = np.random.default_rng()


def loop(f, args, in_axes, n, out_axis=0):
    """f applied example by example, stacked along out_axis."""
    outs = []
    for k in range(n):
        ex = [a if ax is None else tree_map(lambda x, ax=ax: np.take(x, k, axis=ax), a)
              for a, ax in zip(args, in_axes)]
        outs.append(f(*ex))
    return tree_map(lambda *xs: np.moveaxis(np.stack(xs), 0, out_axis), *outs)


def close(a, b, tol=1e-10):
    la, lb = tree_leaves(a), tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y), (np.shape(x), np.shape(y))
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


# ---------------------------------------------------------------- the examples

def predict(params, input_vec):
    for W, b in params:
        input_vec = np.tanh(np.dot(W, input_vec) + b)
    return input_vec


def relu_or_square(x):
    if x > 0:
        return x * x
    return 0.1 * x


def mlp_loss(params, x, y):
    return np.sum((predict(params, x) - y) ** 2)


def make_params(sizes):
    return [(RNG.standard_normal((m, n)) / np.sqrt(n), RNG.standard_normal(m))
            for n, m in zip(sizes[:-1], sizes[1:])]


def test_predict_batched_is_matrix_matrix():
    params = make_params([3, 5, 2])
    xs = RNG.standard_normal((7, 3))
    f = tp.vmap(predict, in_axes=(None, 0))
    close(f(params, xs), loop(predict, (params, xs), (None, 0), 7))
    src = f.source
    assert "rt.batched_dot(W, input_vec, False, True)" in src
    assert "for i in range(n)" in src and "broadcast_batch" not in src


def test_relu_or_square_runs_both_branches_and_selects():
    x = np.linspace(-1, 1, 7)
    f = tp.vmap(relu_or_square)
    close(f(x), np.array([relu_or_square(v) for v in x]))
    assert "rt.select(cond" in f.source


def test_per_example_gradients():
    params = make_params([4, 6, 3])
    xs, ys = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 3))
    g = tp.vmap(tp.grad(mlp_loss), in_axes=(None, 0, 0))
    close(g(params, xs, ys), loop(tp.grad(mlp_loss), (params, xs, ys), (None, 0, 0), 5))


def test_grad_of_vmap_and_vmap_of_vmap():
    params = make_params([3, 4, 2])
    vp = tp.vmap(predict, in_axes=(None, 0))

    def batch_loss(params, xs):
        return np.sum(vp(params, xs) ** 2)
    check_grads(batch_loss, (params, RNG.standard_normal((5, 3))), order=2,
                modes=("fwd", "rev"))
    vv = tp.vmap(vp, in_axes=(None, 1), out_axes=1)
    X = RNG.standard_normal((6, 4, 3))
    close(vv(params, X), np.stack([vp(params, X[:, k]) for k in range(4)], axis=1))


# ---------------------------------------------------------------- in_axes / out_axes

def affine(x, W, b):
    return np.dot(W, x) + b


@pytest.mark.parametrize("trial", range(4))
def test_random_in_and_out_axes(trial):
    n = 5
    x = RNG.standard_normal((3,))
    W = RNG.standard_normal((2, 3))
    b = RNG.standard_normal((2,))
    args, axes = [], []
    for a in (x, W, b):
        if RNG.random() < 0.6:
            ax = int(RNG.integers(-a.ndim - 1, a.ndim + 1))
            stacked = np.stack([a + RNG.standard_normal(a.shape) for _ in range(n)], axis=ax)
            args.append(stacked)
            axes.append(ax)
        else:
            args.append(a)
            axes.append(None)
    if all(a is None for a in axes):
        args[0] = RNG.standard_normal((n, 3))
        axes[0] = 0
    out_axis = int(RNG.choice([0, 1, -1, -2]))
    f = tp.vmap(affine, in_axes=tuple(axes), out_axes=out_axis)
    close(f(*args), loop(affine, args, axes, n, out_axis))


def pair_stats(p):
    a, b = p["a"], p["b"]
    return (np.sum(a * b), a - b), {"m": np.max(a)}


def test_pytree_in_axes_and_out_axes():
    n = 4
    p = {"a": RNG.standard_normal((n, 3)), "b": RNG.standard_normal((3, n))}
    f = tp.vmap(pair_stats, in_axes=({"a": 0, "b": 1},), out_axes=((0, 1), {"m": 0}))
    got = f(p)
    for k in range(n):
        (s, d), m = pair_stats({"a": p["a"][k], "b": p["b"][:, k]})
        close(got[0][0][k], s)
        close(got[0][1][:, k], d)
        close(got[1]["m"][k], m["m"])


def test_dict_in_axes_with_unmapped_leaf():
    n = 3
    p = {"a": RNG.standard_normal((n, 2)), "b": RNG.standard_normal(2)}
    f = tp.vmap(pair_stats, in_axes=({"a": 0, "b": None},))
    got = f(p)
    for k in range(n):
        (s, d), m = pair_stats({"a": p["a"][k], "b": p["b"]})
        close(got[0][0][k], s)
        close(got[0][1][k], d)


def scale_by(x, c):
    return x * c


def test_out_axes_none_for_unbatched_output_and_axis_size():
    f = tp.vmap(lambda x, c: c * 2.0, in_axes=(0, None), out_axes=None)
    assert f(RNG.standard_normal(3), 1.5) == 3.0
    g = tp.vmap(scale_by, in_axes=(None, None), axis_size=4)
    x = RNG.standard_normal(2)
    close(g(x, 3.0), np.stack([x * 3.0] * 4))


def test_errors_name_the_argument():
    f = tp.vmap(affine, in_axes=(0, None, 0))
    with pytest.raises(ValueError, match=r"different sizes \(x: 4, b: 5\)"):
        f(RNG.standard_normal((4, 3)), RNG.standard_normal((2, 3)), RNG.standard_normal((5, 2)))
    with pytest.raises(ValueError, match="in_axes=2 is out of range for argument x"):
        tp.vmap(affine, in_axes=(2, None, None))(RNG.standard_normal((4, 3)),
                                                 RNG.standard_normal((2, 3)), 1.0)
    with pytest.raises(ValueError, match="in_axes has 2 entries but affine takes 3"):
        tp.vmap(affine, in_axes=(0, None))
    with pytest.raises(tp.TransformError, match="out_axes=None says output"):
        tp.vmap(scale_by, in_axes=(0, None), out_axes=None)(RNG.standard_normal(3), 2.0)
    with pytest.raises(ValueError, match="pass axis_size="):
        tp.vmap(scale_by, in_axes=(None, None))(1.0, 2.0)


# ---------------------------------------------------------------- control flow

def collatz_steps(x):
    steps = 0
    while x > 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    return steps


def doubling(x, limit):
    i = 0
    while x < limit:
        x = x * 2.0
        if x > 100.0:
            break
        i += 1
    return x + i


def first_big(x):
    for k in range(6):
        if x > 3.0:
            return x * k
        x = x + 1.0
    return -x


def skip_odd(xs):
    total = 0.0
    for i in range(len(xs)):
        if xs[i] < 0:
            continue
        total = total + xs[i] ** 2
    return total


def partial_sum(x, n):
    s = 0.0
    for i in range(n):
        s = s + x * i
    return s


def window(x, lo, hi):
    s = 0.0
    for i in range(lo, hi):
        s = s + np.sin(x + i)
    return s


def masked_update(x):
    y = np.zeros(3)
    if x[0] > 0:
        y[1] = x[1]
    else:
        y[2] = x[2] * 2.0
        y[0] = 1.0
    return y


def nested_branches(x, y):
    if x > 0:
        if y > 0:
            z = x * y
        else:
            z = x - y
        while z < 10.0:
            z = z * 3.0 + 1.0
    else:
        z = np.log(-x + 1.0) / y
    return z


def power(x, n):
    if n <= 0:
        return 1.0
    return x * power(x, n - 1)


def safe_log_ratio(x, y):
    if y != 0:
        return np.log(np.abs(x)) / y
    return 0.0


CONTROL = [
    (collatz_steps, lambda n: (RNG.integers(1, 30, n),)),
    (doubling, lambda n: (RNG.uniform(0.5, 20, n), RNG.uniform(10, 300, n))),
    (first_big, lambda n: (RNG.uniform(-4, 5, n),)),
    (skip_odd, lambda n: (RNG.standard_normal((n, 6)),)),
    (partial_sum, lambda n: (RNG.standard_normal(n), RNG.integers(0, 6, n))),
    (window, lambda n: (RNG.standard_normal(n), RNG.integers(0, 3, n), RNG.integers(2, 7, n))),
    (masked_update, lambda n: (RNG.standard_normal((n, 3)),)),
    (nested_branches, lambda n: (RNG.standard_normal(n), RNG.standard_normal(n))),
    (power, lambda n: (RNG.standard_normal(n), RNG.integers(0, 5, n))),
    (safe_log_ratio, lambda n: (RNG.standard_normal(n), RNG.integers(-1, 2, n) * 1.0)),
]


@pytest.mark.parametrize("f,make", CONTROL, ids=[c[0].__name__ for c in CONTROL])
def test_control_flow_on_batched_values(f, make):
    n = 9
    args = make(n)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # untaken lanes must not warn (0/0, log 0)
        got = tp.vmap(f)(*args)
    close(got, loop(f, args, (0,) * len(args), n))


@pytest.mark.parametrize("f,make", [c for c in CONTROL if c[0] in
                                    (doubling, first_big, partial_sum, window,
                                     nested_branches, power)],
                         ids=lambda c: getattr(c, "__name__", ""))
def test_control_flow_under_grad(f, make):
    n = 5
    args = make(n)
    floats = tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")

    g = tp.vmap(tp.grad(f, argnums=floats[0]))
    close(g(*args), loop(tp.grad(f, argnums=floats[0]), args, (0,) * len(args), n))


def unbatched_condition(x, flag):
    if flag:
        return x * 2.0
    return x - 1.0


def test_unbatched_conditions_stay_python_control_flow():
    f = tp.vmap(unbatched_condition, in_axes=(0, None))
    x = RNG.standard_normal(4)
    close(f(x, True), x * 2.0)
    assert "rt.select" not in f.source and "if flag:" in f.source


def appends_in_branch(x):
    out = []
    if x > 0:
        out.append(x)
    return len(out)


def test_branch_with_side_effect_is_an_error_with_the_line():
    with pytest.raises(tp.TransformError, match=r"(?s)test_vmap.py.*out.append\(x\).*"
                       r"branch whose condition differs between examples"):
        tp.vmap(appends_in_branch)(RNG.standard_normal(3))


def two_structures(x):
    if x > 0:
        return x, x
    return x


def test_branches_of_different_structure_are_an_error():
    with pytest.raises(tp.TransformError, match="different structure \\(tuple of 2 and an "
                       "array\\)"):
        tp.vmap(two_structures)(np.array([1.0, -1.0, 2.0, -0.5]))   # both paths taken


# ---------------------------------------------------------------- named axes

def normalize(x):
    return x / tp.psum(x, "batch")


def stats(x):
    return (tp.pmean(x, "batch"), tp.pmax(x, "batch"), tp.pmin(x, "batch"),
            tp.all_gather(x, "batch"), tp.axis_index("batch") * x)


def test_collectives_against_numpy():
    x = RNG.uniform(1, 2, (6, 3))
    close(tp.vmap(normalize, axis_name="batch")(x), x / x.sum(0))
    mean, mx, mn, gathered, idx = tp.vmap(stats, axis_name="batch")(x)
    close(mean, np.broadcast_to(x.mean(0), x.shape))
    close(mx, np.broadcast_to(x.max(0), x.shape))
    close(mn, np.broadcast_to(x.min(0), x.shape))
    close(gathered, np.broadcast_to(x, (6,) + x.shape))
    close(idx, np.arange(6)[:, None] * x)


def two_axes(x):
    return x / tp.psum(x, "rows") - tp.pmean(x, "cols")


def test_nested_vmaps_name_different_axes():
    X = RNG.uniform(1, 2, (4, 5))
    f = tp.vmap(tp.vmap(two_axes, axis_name="cols"), axis_name="rows")
    close(f(X), X / X.sum(0, keepdims=True) - X.mean(1, keepdims=True))


def test_collective_outside_its_vmap_is_an_error():
    with pytest.raises(tp.TransformError, match="no mapped axis named 'batch'"):
        normalize(np.ones(3) + RNG.random(3))


def test_grad_through_psum():
    def loss(x):
        return np.sum(tp.vmap(normalize, axis_name="batch")(x) ** 2 * np.arange(4.0))
    check_grads(loss, (RNG.uniform(1, 2, 4),), order=2, modes=("fwd", "rev"))


# ---------------------------------------------------------------- calls, recursion, source

def helper(x, W):
    return np.tanh(np.dot(W, x))


def calls_helper(x, W):
    return helper(x, W) + helper(2.0 * x, W)


def test_calls_get_batched_variants():
    W = RNG.standard_normal((2, 3))
    xs = RNG.standard_normal((4, 3))
    f = tp.vmap(calls_helper, in_axes=(0, None))
    close(f(xs, W), loop(calls_helper, (xs, W), (0, None), 4))
    assert "helper_vmap(batch_size, x, W)" in f.source


def dot_(a, b):
    return np.dot(a, b)


def _nested_dot_case(sa, sb, axes):
    ia, ib, ja, jb = axes
    A = RNG.standard_normal(((4,) if ja is not None else ()) + ((3,) if ia is not None else ())
                            + sa)
    B = RNG.standard_normal(((4,) if jb is not None else ()) + ((3,) if ib is not None else ())
                            + sb)
    f = tp.vmap(tp.vmap(dot_, in_axes=(ia, ib)), in_axes=(ja, jb))
    pick = lambda X, k, ax: X if ax is None else X[k]  # noqa: E731
    want = np.stack([np.stack([np.dot(pick(pick(A, j, ja), i, ia), pick(pick(B, j, jb), i, ib))
                               for i in range(3)]) for j in range(4)])
    return f, A, B, want


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)),
                                    ((2, 3), (3, 4)), ((2, 2, 3), (3, 4))])
def test_vmap_of_vmap_of_products_and_their_gradients(shapes):
    """Products keep an argument that an enclosing vmap does not batch unbatched (no copy
    per example); values and gradients against loops and finite differences."""
    import itertools
    for axes in itertools.product([None, 0], repeat=4):
        if axes[0] is None and axes[1] is None or axes[2] is None and axes[3] is None:
            continue
        f, A, B, want = _nested_dot_case(*shapes, axes)
        close(f(A, B), want)

        def make(f):
            def total(A, B):
                return np.sum(np.sin(f(A, B)))
            return total
        check_grads(make(f), (A, B), order=1, modes=("rev", "fwd"))


def scaled(x, c=2.0):
    return x * c


def test_int_in_axes_maps_the_arguments_passed():
    """As in JAX: a parameter left to its default is not mapped; one passed is."""
    xs = RNG.standard_normal((4, 3))
    f = tp.vmap(scaled)
    close(f(xs), xs * 2.0)
    cs = RNG.standard_normal(4)
    close(f(xs, cs), xs * cs[:, None])


def matvec(A, x):
    return np.tanh(A @ x)


@pytest.mark.parametrize("axes", [(None, 0), (0, None), (0, 0)])
def test_shared_matrix_products_nested_and_differentiated(axes):
    """A matrix shared by every example times a vector per example is one matrix-matrix
    product, also under vmap of vmap and in gradients (and views of the shared matrix)."""
    A = RNG.standard_normal((4, 3))
    xs = RNG.standard_normal((5, 6, 3))
    As = RNG.standard_normal((5, 4, 3))
    inner = tp.vmap(matvec, in_axes=(None, 0))
    f = tp.vmap(inner, in_axes=axes)
    a = A if axes[0] is None else As
    x = xs if axes[1] == 0 else xs[0]
    want = np.stack([inner(a if axes[0] is None else a[k], x if axes[1] is None else x[k])
                     for k in range(5)])
    close(f(a, x), want)

    def total(a, x):
        return np.sum(f(a, x) ** 2)
    check_grads(total, (a, x), order=2, modes=("fwd", "rev"))
