"""pmap on virtual CPU devices: every result against vmap (the same axis name) or a loop,
derivatives through pmap against vmap's, sharded results, and the errors.

The devices are threads (runtime/spmd.py); the collectives meet through a shared-memory
communicator, so these tests exercise real concurrency: a collective that one rank skips
must raise on the others, not hang.
"""
import threading
import time
from functools import partial

import numpy as np
import pytest

import transpile as tp
from runtime import spmd
from runtime.trees import tree_leaves

RNG = np.random.default_rng()


def close(a, b, tol=1e-12):
    la, lb = tree_leaves(a), tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape, (x.shape, y.shape)
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


# ---------------------------------------------------------------- the examples

def test_normalize_is_exact_and_float64_stays_float64():
    @partial(tp.pmap, axis_name="i")
    def normalize(x):
        return x / tp.psum(x, "i")
    out = normalize(np.arange(4.0))
    assert isinstance(out, tp.ShardedArray) and len(out.shards) == 4
    assert np.asarray(out).dtype == np.float64
    assert np.array_equal(np.asarray(out), [0, 1 / 6, 1 / 3, 1 / 2])


def test_elementwise_lambda():
    x = RNG.normal(size=5)
    close(tp.pmap(lambda x: np.sin(x) + x ** 2)(x), np.sin(x) + x ** 2)


def test_results_stay_on_their_devices_between_pmaps():
    keys = tp.random.split(tp.random.PRNGKey(0), 4)
    mats = tp.pmap(lambda key: tp.random.normal(key, (30, 20)))(keys)
    products = tp.pmap(lambda x: np.dot(x, x.T))(mats)
    means = tp.pmap(np.mean)(products)
    gathered = np.asarray(mats)
    expected = np.array([np.mean(m @ m.T) for m in gathered])
    close(means, expected)
    # indexing along the device axis is that device's buffer, no gather
    assert mats[2] is mats.shards[2]
    assert spmd.shard_of(mats, 0, 1) is mats.shards[1]
    for k in range(4):
        close(gathered[k], tp.random.normal(keys[k], (30, 20)))


def nested_pmap(x):
    y = np.sin(x)

    @tp.pmap
    def g(z):
        return np.cos(z) * np.tan(y.sum()) * np.tanh(x).sum()
    return tp.grad(lambda w: np.sum(g(w)))(x)


def nested_vmap(x):
    y = np.sin(x)

    def g(z):
        return np.cos(z) * np.tan(y.sum()) * np.tanh(x).sum()
    return tp.grad(lambda w: np.sum(tp.vmap(g)(w)))(x)


def test_nested_pmap_and_grad_through_both_equal_vmap():
    x = RNG.normal(size=(2, 3)) * 0.3
    f = tp.pmap(nested_pmap)
    close(f(x), tp.vmap(nested_vmap)(x))
    got = tp.grad(lambda x: np.sum(f(x)))(x)
    close(got, tp.grad(lambda x: np.sum(tp.vmap(nested_vmap)(x)))(x))


# ---------------------------------------------------------------- pmap equals vmap

def collectives_program(x, w):
    n = tp.psum(1.0, "i")
    a = tp.psum(x * w, "i") / n
    b = tp.pmean(np.sin(x), "i") + tp.pmax(x, "i") - tp.pmin(x, "i")
    c = tp.all_gather(x, "i")                       # (n, 6)
    d = tp.all_gather(x, "i", axis=1)               # (6, n)
    e = tp.all_gather(x[:2], "i", tiled=True)       # (2n,)
    k = tp.axis_index("i")
    f = tp.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)])
    return a + b + np.sum(c, axis=0) + d[:, 0] + np.sum(e) + k * x + f * w


def scatter_program(m):
    s = tp.psum_scatter(m, "i")                     # m: (n, 5) -> (5,)
    t = tp.all_to_all(m, "i", 0, 1)                 # (5, n)
    u = tp.psum_scatter(m, "i", scatter_dimension=1, tiled=True)   # m (4, 8) -> (4, 2)
    return s, t, u


@pytest.mark.parametrize("in_axes", [(0, None), (0, 0)])
def test_collectives_equal_vmap(in_axes):
    x = RNG.normal(size=(4, 6))
    w = RNG.normal(size=(4, 6)) if in_axes[1] == 0 else RNG.normal(size=6)
    got = tp.pmap(collectives_program, "i", in_axes=in_axes)(x, w)
    close(got, tp.vmap(collectives_program, in_axes=in_axes, axis_name="i")(x, w))


def test_scatter_and_all_to_all_equal_vmap():
    m = RNG.normal(size=(4, 4, 8))
    got = tp.pmap(scatter_program, "i")(m[:, :, :5].copy() if False else m)
    close(got, tp.vmap(scatter_program, axis_name="i")(m))


def reductions_program(x, shared):
    return [tp.psum(x, "i"), tp.pmean(x, "i"), tp.pmax(x, "i"), tp.pmin(x, "i"),
            tp.psum_scatter(x, "i", tiled=True), tp.psum(shared, "i"), tp.pmean(shared, "i")]


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float32,
                                   np.complex128])
def test_reductions_have_numpys_dtypes_and_equal_vmap(dtype):
    """psum counts booleans and does not wrap narrow integers (np.sum's dtype), pmean of
    booleans is the fraction of True (np.mean's), under pmap and vmap alike, for a value
    that differs between examples and one they share."""
    if np.dtype(dtype).kind == "b":
        x, shared = RNG.normal(size=(4, 4, 3)) > 0, RNG.normal(size=3) > 0
    elif np.dtype(dtype).kind in "iu":
        x = RNG.integers(60, 127, size=(4, 4, 3)).astype(dtype)    # sums above int8's range
        shared = RNG.integers(60, 127, size=3).astype(dtype)
    else:
        x = (np.round(RNG.normal(size=(4, 4, 3)) * 8) / 8).astype(dtype)   # exact sums
        shared = (np.round(RNG.normal(size=3) * 8) / 8).astype(dtype)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * np.round(RNG.normal(size=x.shape) * 8) / 8
    stacked = np.broadcast_to(shared, (4, 3))
    expected = [np.sum(x, axis=0), np.mean(x, axis=0), np.max(x, axis=0), np.min(x, axis=0),
                np.sum(x, axis=0).reshape(4, 1, 3), np.sum(stacked, axis=0),
                np.mean(stacked, axis=0)]
    mapped = {"pmap": tp.pmap(reductions_program, "i", in_axes=(0, None)),
              "vmap": tp.vmap(reductions_program, axis_name="i", in_axes=(0, None))}
    for how, f in mapped.items():
        got = [np.asarray(v) for v in f(x, shared)]
        for k, (g, e) in enumerate(zip(got, expected)):
            e = np.broadcast_to(e, (4,) + e.shape[1:] if k == 4 else (4,) + e.shape)
            assert g.dtype == e.dtype and np.array_equal(g, e), (how, k, g, e)


def test_grad_through_psum_of_a_shared_value_under_vmap():
    def f(x, w):
        return np.sin(tp.psum(w * w, "i")) * x
    x, w = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    loss = lambda w: np.sum(tp.vmap(f, in_axes=(0, None), axis_name="i")(x, w))
    expected = np.sum(x, axis=0) * np.cos(4 * w * w) * 8 * w
    close(tp.grad(loss)(w), expected, 1e-10)
    close(tp.grad(lambda w: np.sum(tp.pmap(f, "i", in_axes=(0, None))(x, w)))(w), expected,
          1e-10)


def over_both_axes(x):
    return [tp.psum(x, ("i", "j")), tp.pmean(np.sin(x), ("j", "i")), tp.pmax(x, ("i", "j")),
            tp.pmin(x, ("i", "j")), tp.psum(x > 0, ("i", "j")), tp.psum(x, ("j",))]


@pytest.mark.parametrize("outer, inner", [("vmap", "vmap"), ("pmap", "vmap"),
                                          ("vmap", "pmap"), ("pmap", "pmap")])
def test_reductions_over_a_tuple_of_axis_names(outer, inner):
    """psum(x, ("i", "j")) reduces over both mapped axes, in either order, whichever
    mappings bind them (JAX's tuple axis names)."""
    mappers = {"vmap": lambda f, n: tp.vmap(f, axis_name=n),
               "pmap": lambda f, n: tp.pmap(f, n)}
    x = RNG.normal(size=(2, 3))
    got = mappers[outer](mappers[inner](over_both_axes, "j"), "i")(x)
    every = np.ones_like(x)
    expected = [x.sum() * every, np.sin(x).mean() * every, x.max() * every, x.min() * every,
                np.sum(x > 0) * every.astype(np.int64),
                np.broadcast_to(x.sum(1, keepdims=True), x.shape)]
    for g, e in zip(got, expected):
        g = np.asarray(g)
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def by_keyword(x):
    return tp.psum(x, axis_name=("i", "j")) + tp.pmax(x, axis_name=("j", "i"))


def test_a_tuple_of_axis_names_given_by_keyword():
    x = RNG.normal(size=(2, 3))
    expected = (x.sum() + x.max()) * np.ones_like(x)
    close(tp.vmap(tp.vmap(by_keyword, axis_name="j"), axis_name="i")(x), expected)
    close(tp.pmap(tp.vmap(by_keyword, axis_name="j"), "i")(x), expected)


def every_collective_by_keyword(v):
    w = v * np.arange(1.0, 4.0)
    return (tp.psum(x=w, axis_name="i") + tp.pmean(x=w * w, axis_name="i")
            + tp.pmax(x=np.sin(w), axis_name="i") - tp.pmin(x=w, axis_name="i")
            + tp.ppermute(x=w, axis_name="i", perm=[(0, 1), (1, 2), (2, 0)])
            + np.sum(tp.all_gather(x=w, axis_name="i", axis=1, tiled=False), axis=1)
            + tp.psum_scatter(x=np.outer(w, w), axis_name="i", scatter_dimension=0)
            + tp.all_to_all(x=np.outer(w, v), axis_name="i", split_axis=0,
                            concat_axis=1)[:, 1]
            + tp.axis_index(axis_name="i") * v)


def every_collective_by_position(v):
    w = v * np.arange(1.0, 4.0)
    return (tp.psum(w, "i") + tp.pmean(w * w, "i") + tp.pmax(np.sin(w), "i")
            - tp.pmin(w, "i") + tp.ppermute(w, "i", [(0, 1), (1, 2), (2, 0)])
            + np.sum(tp.all_gather(w, "i", 1, False), axis=1)
            + tp.psum_scatter(np.outer(w, w), "i", 0)
            + tp.all_to_all(np.outer(w, v), "i", 0, 1)[:, 1] + tp.axis_index("i") * v)


def test_collectives_with_operand_and_axis_name_by_keyword():
    """`tp.psum(x=v, axis_name="i")` and every other collective by keyword: vmap refused
    them ("the axis name must be a string literal"), pmap took them. Against the same
    calls by position, values and gradients, under vmap and pmap."""
    x = RNG.normal(size=(3, 3))
    expected = tp.vmap(every_collective_by_position, axis_name="i")(x)
    expected_grad = tp.grad(lambda x: np.sum(np.sin(tp.vmap(
        every_collective_by_position, axis_name="i")(x))))(x)
    for mapping in (tp.vmap, tp.pmap):
        mapped = mapping(every_collective_by_keyword, axis_name="i")
        close(mapped(x), expected)
        close(tp.grad(lambda x: np.sum(np.sin(mapped(x))))(x), expected_grad, 1e-10)


def _collectives_of_a_shared_value(a):
    return tp.pmean(a, "i") + tp.axis_index("i") * a + tp.psum(a * a, "i")


def calls_a_helper_with_a_shared_value(x, y):
    return np.sin(x) * _collectives_of_a_shared_value(-np.sum(y))


def test_a_helper_whose_collectives_meet_a_value_every_example_shares():
    """A helper called with arguments no example differs in, whose collectives still meet
    the examples: vmap left the call unbatched, and the helper's pmean raised "no mapped
    axis named 'i' here" (pmap ran it). Found by the random-program generator (collectives
    in helpers), seed 5000032. Values and gradients, vmap against pmap and by hand."""
    x, y = RNG.normal(size=3), RNG.normal(size=2)
    a = -np.sum(y)
    expected = np.sin(x) * (a + np.arange(3) * a + 3 * a * a)
    for mapping in (tp.vmap, tp.pmap):
        mapped = mapping(calls_a_helper_with_a_shared_value, axis_name="i", in_axes=(0, None))
        close(mapped(x, y), expected)
        gx, gy = tp.grad(lambda x, y: np.sum(mapped(x, y)), argnums=(0, 1))(x, y)
        close(gx, np.cos(x) * (a + np.arange(3) * a + 3 * a * a))
        # d/da of sum_b sin(x_b) (a + b a + 3 a^2), then da/dy = -1
        close(gy, -np.full(2, np.sum(np.sin(x) * (1 + np.arange(3) + 6 * a))), 1e-10)
    per_example = tp.vmap(tp.grad(calls_a_helper_with_a_shared_value, argnums=(0, 1)),
                          in_axes=(0, None), axis_name="i")(x, y)
    close(per_example, tp.pmap(tp.grad(calls_a_helper_with_a_shared_value, argnums=(0, 1)),
                               "i", in_axes=(0, None))(x, y), 1e-10)


def test_grad_through_a_reduction_over_two_axes():
    def f(x):
        return np.sin(x) * tp.psum(x * x, ("i", "j"))
    x = RNG.normal(size=(2, 3))
    expected = np.cos(x) * np.sum(x * x) + 2 * x * np.sum(np.sin(x))
    for outer in (tp.vmap, lambda f, axis_name: tp.pmap(f, axis_name)):
        mapped = outer(tp.vmap(f, axis_name="j"), axis_name="i")
        close(tp.grad(lambda x: np.sum(mapped(x)))(x), expected, 1e-10)


def test_a_tuple_of_axis_names_elsewhere_is_a_clear_error():
    def gathered(x):
        return tp.all_gather(x, ("i", "j"))
    with pytest.raises(tp.TransformError, match="all_gather: the axis name must be a string"):
        tp.vmap(tp.vmap(gathered, axis_name="j"), axis_name="i")(RNG.normal(size=(2, 3)))


def extremum_of_ties(x, w):
    return np.sum(tp.pmax(w * w, "i") * x) + np.sum(tp.pmin(np.sin(w) + x * 0.0, "i"))


def test_pmax_and_pmin_split_their_derivative_between_ties():
    """pmax of a value every example shares (ties in every element): its derivative is 1,
    not the number of examples, in every composition (found by the random-program
    generator's collective programs: the adjoint went whole to every tied example)."""
    x, w = RNG.normal(size=(4, 2)), RNG.normal(size=2)

    def total(x, w):
        return np.sum(tp.vmap(extremum_of_ties, in_axes=(0, None), axis_name="i")(x, w))
    expected = np.sum(x, axis=0) * 2 * w + 4 * np.cos(w)
    grad_w = tp.grad(extremum_of_ties, argnums=1)
    close(tp.vmap(grad_w, in_axes=(0, None), axis_name="i")(x, w).sum(0), expected, 1e-10)
    close(np.asarray(tp.pmap(grad_w, "i", in_axes=(0, None))(x, w)).sum(0), expected, 1e-10)
    close(tp.grad(total, argnums=1)(x, w), expected, 1e-10)
    direction = RNG.normal(size=2)
    _, tangent = tp.jvp(lambda w: total(x, w), (w,), (direction,))
    close(tangent, expected @ direction, 1e-10)


def test_in_axes_out_axes_and_pytrees():
    params = {"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}
    xs = RNG.normal(size=(3, 5))

    def f(p, x):
        return {"h": np.tanh(x @ p["w"] + p["b"]), "s": tp.psum(np.sum(x), "d")}
    got = tp.pmap(f, "d", in_axes=(None, 1), out_axes={"h": 1, "s": None})(params, xs)
    close(got, {"h": np.tanh(xs.T @ params["w"] + params["b"]).T, "s": np.sum(xs)})
    # a dict of axes for a dict argument
    batch = {"w": RNG.normal(size=(3, 4, 2)), "b": params["b"]}
    x4 = RNG.normal(size=(4, 3))
    kw = dict(in_axes=({"w": 1, "b": None}, 0), out_axes={"h": 0, "s": 0})
    close(tp.pmap(f, "d", **kw)(batch, x4), tp.vmap(f, axis_name="d", **kw)(batch, x4))


def test_pmap_of_vmap_of_grad_and_jit_inside():
    x = RNG.normal(size=(3, 4, 5))

    def loss(v):
        return np.sum(np.tanh(v) ** 2) + tp.psum(np.sum(v), "i")
    inner = tp.jit(tp.vmap(tp.grad(loss), axis_name="j"))
    got = tp.pmap(lambda v: inner(v) * 1.0, axis_name="i")(x)

    def reference(v):
        return tp.vmap(tp.grad(loss), axis_name="j")(v)
    # loss's psum is over "i": under pmap the device axis; under vmap of vmap, the outer
    close(got, tp.vmap(reference, axis_name="i")(x))


def test_pmap_of_grad_with_pmean_is_data_parallel_training():
    w = RNG.normal(size=(5, 3))
    xs, ys = RNG.normal(size=(4, 16, 5)), RNG.normal(size=(4, 16, 3))

    def loss(w, x, y):
        return np.mean((np.tanh(x @ w) - y) ** 2)

    def step(w, x, y):
        g = tp.grad(loss)(w, x, y)
        return w - 0.1 * tp.pmean(g, "batch")
    new = tp.pmap(step, "batch", in_axes=(None, 0, 0), out_axes=None)(w, xs, ys)
    whole = w - 0.1 * tp.grad(loss)(w, xs.reshape(64, 5), ys.reshape(64, 3))
    close(new, whole)


# ---------------------------------------------------------------- derivatives through pmap

def model(w, x):
    h = np.tanh(x @ w)
    return h / tp.psum(np.sum(h * h), "i") + tp.pmax(h, "i")


def model_vmap_loss(w, x):
    return np.sum(np.sin(tp.vmap(model, in_axes=(None, 0), axis_name="i")(w, x)))


def model_pmap_loss(w, x):
    return np.sum(np.sin(PMAPPED_MODEL(w, x)))


PMAPPED_MODEL = tp.pmap(model, "i", in_axes=(None, 0))


def test_grad_jvp_and_hessian_through_pmap_equal_vmap():
    w, x = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 5, 3))
    close(tp.grad(model_pmap_loss, argnums=(0, 1))(w, x),
          tp.grad(model_vmap_loss, argnums=(0, 1))(w, x), 1e-10)
    tw, tx = RNG.normal(size=w.shape), RNG.normal(size=x.shape)
    close(tp.jvp(model_pmap_loss, (w, x), (tw, tx)),
          tp.jvp(model_vmap_loss, (w, x), (tw, tx)), 1e-10)
    close(tp.hessian(model_pmap_loss)(w, x), tp.hessian(model_vmap_loss)(w, x), 1e-8)


def test_grad_through_pmap_against_finite_differences():
    from transpile.test_util import check_grads
    w, x = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 5, 3))
    check_grads(model_pmap_loss, (w, x), order=2, modes=("rev", "fwd"))


def test_vmap_of_pmap_equals_vmap_of_vmap():
    x = RNG.normal(size=(2, 4, 3))
    f = tp.pmap(lambda v: v / tp.psum(v, "i"), "i")
    close(tp.vmap(f)(x), tp.vmap(tp.vmap(lambda v: v / tp.psum(v, "i"), axis_name="i"))(x))


def test_vmap_of_pmap_runs_on_the_devices_with_axes_moved(monkeypatch):
    def scaled(v, w):
        return np.tanh(v) * w / tp.psum(np.sum(v ** 2), "i")
    g = tp.pmap(scaled, "i", in_axes=(1, None), out_axes=1)
    xs, w = RNG.normal(size=(3, 5, 4)), RNG.normal(size=5)
    batched = tp.vmap(g, in_axes=(0, None))
    assert "pmap_vmap" in batched.source          # a pmap of the vmapped function
    launches = []
    run = spmd.run

    def spy(fn, per_rank_args, axis_name, devices):
        launches.append(len(per_rank_args))
        return run(fn, per_rank_args, axis_name, devices)
    monkeypatch.setattr(spmd, "run", spy)
    tp.vmap(tp.pmap(scaled, "i", in_axes=(1, None), out_axes=1), in_axes=(0, None))(xs, w)
    assert launches == [4]                        # one launch over the 4 devices
    reference = tp.vmap(tp.vmap(scaled, in_axes=(1, None), out_axes=1, axis_name="i"),
                        in_axes=(0, None))
    close(batched(xs, w), reference(xs, w))

    def total_pmap(x):
        return np.sum(np.sin(batched(x, w)))

    def total_vmap(x):
        return np.sum(np.sin(reference(x, w)))
    close(tp.grad(total_pmap)(xs), tp.grad(total_vmap)(xs), 1e-10)


def test_grad_through_the_new_collectives_under_pmap():
    x = RNG.normal(size=(4, 4, 3))

    def f(v):
        a = tp.ppermute(v, "i", [(0, 2), (2, 1), (1, 3), (3, 0)])
        b = tp.all_to_all(v, "i", 0, 1)
        c = tp.psum_scatter(v, "i")
        d = tp.all_gather(v, "i", axis=1)
        return np.sum(np.sin(a) * b.T) + np.sum(c ** 2) + np.sum(np.cos(d))

    def via(mapper):
        return lambda v: np.sum(mapper(f, axis_name="i")(v))
    close(tp.grad(via(tp.pmap))(x), tp.grad(via(tp.vmap))(x), 1e-10)


# ---------------------------------------------------------------- errors

def test_more_entries_than_devices_names_both_numbers():
    n = tp.device_count()
    with pytest.raises(ValueError, match=f"{n + 1} entries but there are only {n} devices"):
        tp.pmap(np.sin)(np.ones(n + 1))


def test_mismatched_sizes_name_the_arguments():
    with pytest.raises(ValueError, match="x has 3, y has 2"):
        tp.pmap(lambda x, y: x + y)(np.ones(3), np.ones(2))


def test_unknown_axis_name_and_collective_outside_any_mapping():
    with pytest.raises(tp.TransformError, match="no mapped axis named 'j'"):
        tp.pmap(lambda x: tp.psum(x, "j"), "i")(np.ones(2))
    with pytest.raises(tp.TransformError, match="no mapped axis named 'i'"):
        tp.psum(np.ones(2), "i")


def test_a_failing_device_stops_the_others_with_its_own_error():
    def f(x):
        if tp.axis_index("i") == 1:
            raise RuntimeError("device one failed")
        return tp.psum(x, "i")
    with pytest.raises(RuntimeError, match="device one failed"):
        tp.pmap(f, "i")(np.ones(3))


def test_a_collective_one_device_skips_is_an_error_at_once_naming_it(monkeypatch):
    """A device that returns without a collective the others wait in: an error as soon as
    it returns, naming it (not the timeout); and whether it returns first or last."""
    monkeypatch.setenv("TRANSPILE_COLLECTIVE_TIMEOUT", "60")

    def skips(x):
        if tp.axis_index("i") == 0:
            return x
        return tp.psum(x, "i")

    def skips_late(x):
        k = 0
        if tp.axis_index("i") == 0:
            while k < 20000:         # the others wait in psum before it returns
                k = k + 1
            return x
        return tp.psum(x, "i")
    for f in (skips, skips_late):
        start = time.monotonic()
        with pytest.raises(spmd.CollectiveError, match=r"psum over axis 'i' on rank \d: rank 0 "
                           r"\(CpuDevice\(id=0\)\) returned without calling it"):
            tp.pmap(f, "i")(np.ones(3))
        assert time.monotonic() - start < 30


def test_devices_in_different_collectives_is_an_error_not_mixed_data():
    def f(x):
        if tp.axis_index("i") == 1:
            return tp.pmax(x, "i")
        return tp.psum(x, "i")
    with pytest.raises(spmd.CollectiveError, match=r"rank \d called (pmax|psum) over axis 'i' "
                       "at the same time"):
        tp.pmap(f, "i")(RNG.normal(size=(4, 3)))


def test_a_collective_one_device_is_late_for_times_out_naming_it(monkeypatch):
    monkeypatch.setenv("TRANSPILE_COLLECTIVE_TIMEOUT", "0.002")

    def f(x):
        a = np.eye(400)
        if tp.axis_index("i") == 0:
            for _ in range(40):              # some 0.1 s
                a = np.sin(a @ a)
        return tp.psum(x + a[0, 0], "i")
    with pytest.raises(spmd.CollectiveError, match=r"psum over axis 'i' on rank \d: timed out"):
        tp.pmap(f, "i")(np.ones(3))


@pytest.mark.parametrize("mapped", [lambda f: tp.pmap(f, "i"),
                                    lambda f: tp.vmap(f, axis_name="i")], ids=["pmap", "vmap"])
def test_ppermute_takes_each_source_and_destination_once_and_in_range(mapped):
    x = RNG.normal(size=(3, 2))
    with pytest.raises(ValueError, match="perm has destination 1 in more than one pair"):
        mapped(lambda v: tp.ppermute(v, "i", [(0, 1), (2, 1)]))(x)
    with pytest.raises(ValueError, match="perm has source 0 in more than one pair"):
        mapped(lambda v: tp.ppermute(v, "i", [(0, 1), (0, 2)]))(x)
    with pytest.raises(ValueError, match=r"perm names destination 3, but the axis has 3 "
                                         r"examples \(0 to 2\)"):
        mapped(lambda v: tp.ppermute(v, "i", [(0, 3)]))(x)


def test_gpu_backend_is_a_clear_error_and_devices_are_virtual():
    if not tp.devices("gpu"):
        with pytest.raises(tp.TransformError, match="no CUDA GPU is visible"):
            tp.pmap(np.sin, backend="gpu")
    assert tp.device_count() == len(tp.devices()) == tp.local_device_count()
    assert tp.process_index() == 0 and tp.process_count() == 1
    assert tp.devices()[0].platform == "cpu"


def test_devices_run_at_the_same_time():
    seen = set()

    def f(x):
        seen.add(threading.get_ident())
        return tp.psum(x, "i")        # every device must be inside f at once to pass
    tp.pmap(f, "i")(np.ones(4))
    assert len(seen) == 4


def test_parameters_with_defaults_are_unmapped_and_differentiable():
    def f(x, scale=2.0):
        return np.sin(x) * scale
    pm = tp.pmap(f)
    x = RNG.normal(size=3)
    close(pm(x), 2.0 * np.sin(x))
    close(tp.grad(lambda x: np.sum(pm(x)))(x), 2.0 * np.cos(x))   # derivative code passes
    close(tp.jvp(pm, (x,), (np.ones(3),))[1], 2.0 * np.cos(x))    # the default on
    with pytest.raises(TypeError, match="an array is passed as scale"):
        pm(x, np.ones(3))


def test_device_put_on_a_virtual_cpu_device_keeps_numpy():
    x = RNG.normal(size=3)
    assert tp.device_put(x, tp.devices()[1]) is x
