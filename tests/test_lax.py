"""tp.lax (structured control flow, written as the Python it stands for) and what it rests
on: user functions called with functions among their arguments. Derivatives against finite
differences (both modes, second order), vmap against a loop, jit against the plain call."""
import functools

import numpy as np
import pytest

import transpile as tp
from transpile import lax
from transpile.test_util import check_grads


def _rng():
    return np.random.default_rng()


# ---------------------------------------------------------------- function arguments

def apply_twice(f, x):
    return f(f(x))


def compose(f, g, x):
    return apply_twice(f, g(x))        # a function argument passed on


def scale_by(x, k=2.0, act=np.tanh):   # a function as a default
    return act(x) * k


def power_tower(f, x, n):
    if n == 0:
        return x
    return f(power_tower(f, x, n - 1))  # recursion with a function argument


def global_step(x):
    return np.sin(x) * 1.5 + x


def test_function_arguments_in_every_form():
    rng = _rng()
    x, w = rng.standard_normal(4), rng.standard_normal(4)

    def f(x, w):
        a = apply_twice(np.tanh, x)                    # a numpy function
        b = apply_twice(global_step, x)                # a global user function
        c = apply_twice(lambda v: v * w + 0.5, x)      # a lambda with a free variable
        d = compose(np.cos, lambda v: v * w, x)
        e = scale_by(x) + scale_by(x, 3.0, act=np.sin)
        g = power_tower(lambda v: np.sin(v) * w, x, 3)

        def inner(v):                                  # a nested def reading w
            return v * v * w
        h = apply_twice(inner, x)
        return np.sum(a * b + c * d + e * g + h)

    check_grads(f, (x, w), order=2, modes=("rev", "fwd"))
    xs = rng.standard_normal((3, 4))
    assert np.allclose(tp.vmap(f, in_axes=(0, None))(xs, w), [f(r, w) for r in xs])
    jitted = tp.jit(f)
    for _ in range(3):
        assert np.allclose(jitted(x, w), f(x, w))


def test_function_arguments_show_in_the_generated_code():
    source = tp.grad(lambda x: np.sum(apply_twice(np.tanh, x))).source
    assert "def apply_twice" in source and "np.tanh(" in source


# ---------------------------------------------------------------- tp.lax

def newton_sqrt(a):
    return lax.while_loop(lambda x: np.max(np.abs(x * x - a)) > 1e-10,
                          lambda x: 0.5 * (x + a / x), a)


def rnn(params, xs):
    w, u = params

    def step(h, x):
        h = np.tanh(h @ w + x * u)
        return h, np.sum(h * h)
    h, losses = lax.scan(step, np.zeros(w.shape[0]), xs)
    return np.sum(h) + np.sum(losses)


def two_streams(x, w):
    def step(carry, pair):
        a, b = pair
        carry = carry * 0.9 + a * b * w
        return carry, (carry * a, np.sin(b))
    c, (p, q) = lax.scan(step, np.zeros_like(w), (x, 2.0 * x), reverse=True)
    return np.sum(c) + np.sum(p * q)


def counted(x, w):
    return np.sum(lax.fori_loop(1, 4, lambda i, v: np.sin(v * w) + v / i, x))


def branchy(x, w):
    y = lax.cond(np.sum(x) > 0.0, lambda a, b: a * b, lambda a, b: np.cos(a) - b, x, w)
    z = lax.cond(np.max(x) > 0.5, lambda a: a ** 2, lambda a: -a, y)
    return np.sum(z + lax.select(x > 0, x * w, w))


def mapped(x, w):
    return np.sum(lax.map(lambda row: row * np.sum(row * w), x)) + \
        np.sum(lax.scan(lambda c, _: (c * 1.1, c), w, None, length=3)[1])


def sliced(x, w):
    """A window of rows, clamped as JAX clamps it (start 5 of 6 rows, 3 long: rows 3-5)."""
    rows = np.reshape(x, (6, 2))
    window = lax.dynamic_slice_in_dim(rows, 5, 3) * w[:2]
    column = lax.dynamic_slice_in_dim(rows, 1, 1, axis=1)
    return np.sum(window ** 2) + np.sum(np.sin(column)) + \
        np.sum(lax.dynamic_index_in_dim(rows, 0, keepdims=False) * w[2:4])


@pytest.mark.parametrize("f,shapes", [
    (counted, [(4,), (4,)]), (branchy, [(4,), (4,)]), (mapped, [(3, 4), (4,)]),
    (two_streams, [(5, 3), (3,)]), (sliced, [(12,), (4,)])],
    ids=["fori_loop", "cond_select", "map_scan_length", "scan_tuples_reverse",
         "dynamic_slice"])
def test_lax_derivatives_batching_and_jit(f, shapes):
    rng = _rng()
    args = tuple(rng.standard_normal(s) for s in shapes)
    check_grads(f, args, order=2, modes=("rev", "fwd"))
    batch = rng.standard_normal((3,) + shapes[0])
    want = [f(b, *args[1:]) for b in batch]
    assert np.allclose(tp.vmap(f, in_axes=(0,) + (None,) * (len(args) - 1))(batch, *args[1:]),
                       want)
    per_example = tp.vmap(tp.grad(f), in_axes=(0,) + (None,) * (len(args) - 1))
    assert np.allclose(per_example(batch, *args[1:]),
                       [tp.grad(f)(b, *args[1:]) for b in batch])
    jitted = tp.jit(f)
    for _ in range(3):
        assert np.allclose(jitted(*args), f(*args))


def test_scan_rnn_against_a_hand_written_loop():
    rng = _rng()
    w, u = rng.standard_normal((3, 3)) * 0.5, rng.standard_normal(3)
    xs = rng.standard_normal((6, 3))
    params = (w, u)
    check_grads(rnn, (params, xs), order=1, modes=("rev", "fwd"))
    h, total = np.zeros(3), 0.0
    for x in xs:
        h = np.tanh(h @ w + x * u)
        total += np.sum(h * h)
    assert np.isclose(rnn(params, xs), np.sum(h) + total)


def _scan_two_outputs(c, xs):
    def step(c, x):
        return c * 1.5 + np.sum(x[0]), (c * x[1], np.log(x[1]) * c)
    c, (a, b) = lax.scan(step, c, xs)
    return c + np.sum(a) + np.sum(b), a, b


def test_scan_and_map_over_zero_steps_give_empty_outputs_of_the_steps_shape():
    """As JAX: the outputs of no step have length 0 and the shape a step gives (they were
    None); the step is taken once, on ones and without warnings, for that shape only."""
    rng = _rng()
    c = rng.uniform(0.5, 2.0)
    for n in (0, 3):
        xs = (rng.uniform(0.5, 2.0, (n, 3)), rng.uniform(0.5, 2.0, (n, 2)))
        value, a, b = _scan_two_outputs(c, xs)
        assert a.shape == (n, 2) and b.shape == (n, 2) and (n or value == c)
        with np.errstate(all="raise"):
            jitted = tp.jit(_scan_two_outputs)(c, xs)
        assert all(np.allclose(j, p) for j, p in zip(jitted, (value, a, b)))
        check_grads(lambda c: _scan_two_outputs(c, xs)[0], (c,), order=2, modes=("rev", "fwd"))
        cs = rng.uniform(0.5, 2.0, 4)
        batched = tp.vmap(_scan_two_outputs, in_axes=(0, None))(cs, xs)
        looped = [_scan_two_outputs(ci, xs) for ci in cs]
        for k in range(3):
            assert batched[k].shape == (4,) + np.shape(looped[0][k])
            assert np.allclose(batched[k], [out[k] for out in looped])
        _, tangents = tp.jvp(lambda c: _scan_two_outputs(c, xs), (c,), (1.0,))
        assert [np.shape(t) for t in tangents] == [(), (n, 2), (n, 2)]
        assert tp.jacrev(lambda c: _scan_two_outputs(c, xs)[1])(c).shape == (n, 2)
    with np.errstate(all="raise"):           # log(0) on the ones: no FloatingPointError
        ys = lax.map(lambda x: (x * 2.0, np.log(x[0] - 1.0)), np.zeros((0, 3)))
    assert [y.shape for y in ys] == [(0, 3), (0,)]
    carry, ys = lax.scan(lambda c, _: (c + 1.0, c * np.ones(2)), 0.5, None, length=0)
    assert carry == 0.5 and ys.shape == (0, 2)


def test_while_loop_stops_on_a_value():
    """JAX's while_loop is not reverse-differentiable; this one is (a Python while)."""
    a = _rng().uniform(1.0, 4.0, 5)
    assert np.allclose(newton_sqrt(a), np.sqrt(a))
    assert np.allclose(tp.grad(lambda a: np.sum(newton_sqrt(a)))(a), 0.5 / np.sqrt(a))
    assert np.allclose(tp.vmap(newton_sqrt)(np.stack([a, a * 2])), np.sqrt([a, a * 2]))


def test_cond_under_vmap_with_a_per_example_predicate():
    xs = _rng().standard_normal((6, 3))
    f = lambda x: lax.cond(np.sum(x) > 0, lambda v: np.sin(v), lambda v: v * 3.0, x)  # noqa
    assert np.allclose(tp.vmap(f)(xs), [np.sin(x) if np.sum(x) > 0 else 3 * x for x in xs])


def test_stop_gradient():
    x = _rng().standard_normal(4)
    g = tp.grad(lambda x: np.sum(lax.stop_gradient(x) * x))(x)
    assert np.allclose(g, x)                       # d/dx of c * x with c = x held
    _, t = tp.jvp(lambda x: np.sum(tp.stop_gradient(x ** 2) + x), (x,), (np.ones(4),))
    assert np.isclose(t, 4.0)
    assert np.allclose(tp.hessian(lambda x: np.sum(lax.stop_gradient(x) * x ** 2))(x),
                       np.diag(2 * x))


def test_plain_calls_are_jax_semantics():
    x = np.arange(5.0)
    assert lax.fori_loop(0, 5, lambda i, c: c + i, 0) == 10
    assert lax.switch(7, [lambda v: v + 1, lambda v: v * 10], 2) == 20     # clipped index
    assert lax.switch(-3, [lambda v: v + 1, lambda v: v * 10], 2) == 3
    carry, ys = lax.scan(lambda c, x: (c + x, c * x), 0.0, x)
    assert carry == 10.0 and np.array_equal(ys, [0, 0, 2, 9, 24])
    carry, ys = lax.scan(lambda c, x: (c + x, c), 0.0, x, reverse=True)
    assert np.array_equal(ys, [10, 9, 7, 4, 0])
    assert lax.cond(False, lambda: 1, lambda: 2) == 2
    assert lax.cond(True, lambda a, b: a - b, lambda a, b: a + b, 5, 3) == 2


def test_cond_with_too_many_operands_is_a_clear_error():
    f = lambda x: lax.cond(True, lambda *v: v[0], lambda *v: v[0], x, x, x, x, x)  # noqa
    with pytest.raises(tp.TransformError, match="cond cannot be called with these"):
        tp.grad(lambda x: np.sum(f(x)))(np.ones(2))


def test_dynamic_slice_clamps_as_jax_does():
    x = np.arange(12.0).reshape(6, 2)
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(x, 5, 3), x[3:6])
    # a negative start counts from the end first (JAX 0.10's allow_negative_indices)
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(x, -2, 2), x[4:6])
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(x, -100, 2), x[0:2])
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(x, 1, 1, axis=1), x[:, 1:2])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(x, 7, keepdims=False), x[5])


def _square(x):
    return x * x


_BRANCHES = (np.sin, np.cos)


def _switched(i, x, w):
    return np.sum(lax.switch(i, [np.sin, _square, lambda v: np.tanh(v * w)], x))


def _switched_two(i, x, w):
    return lax.switch(i, [lambda a, b: np.sum(a * b), lambda a, b: np.sum(a - b) ** 2], x, w)


def test_switch_in_transformed_code():
    """In transformed code a switch is an if/elif chain over its branches (written in the
    call); under vmap each example takes its own branch, the index clipped as in JAX."""
    rng = np.random.default_rng()
    x, w = rng.normal(size=4), float(rng.uniform(0.5, 1.5))
    for i in (-2, 0, 1, 2, 5):
        check_grads(lambda x: _switched(i, x, w), (x,), order=2, modes=("rev", "fwd"))
        np.testing.assert_allclose(tp.jit(_switched)(i, x, w), _switched(i, x, w))
        np.testing.assert_allclose(tp.grad(_switched_two, argnums=(1, 2))(i, x, x[::-1])[0],
                                   tp.grad(lambda a: _switched_two(i, a, x[::-1]))(x))
    index = np.array([0, 2, 1, 7, -1])
    xs = rng.normal(size=(5, 4))
    want = [_switched(i, v, w) for i, v in zip(index, xs)]
    np.testing.assert_allclose(tp.vmap(_switched, in_axes=(0, 0, None))(index, xs, w), want)
    per_example = tp.vmap(tp.grad(_switched, argnums=1), in_axes=(0, 0, None))(index, xs, w)
    np.testing.assert_allclose(per_example, [tp.grad(_switched, argnums=1)(i, v, w)
                                             for i, v in zip(index, xs)])

    assert tp.grad(lambda x: lax.switch(1, _BRANCHES, x))(0.5) == -np.sin(0.5)

    def operands_given_whole(i, ops):
        return lax.switch(i, [np.sin, np.cos], *ops)

    with pytest.raises(tp.TransformError, match="number of arguments must be known"):
        tp.grad(lambda x: operands_given_whole(0, (x,)))(0.5)
    with pytest.raises(tp.TransformError, match="list of functions written in the call"):
        tp.grad(lambda x: lax.switch(0, x, x))(np.ones(2))


def _window(x, i):
    return np.sum(tp.lax.dynamic_slice_in_dim(x, i, 3) ** 2) + \
        tp.lax.dynamic_index_in_dim(x, i + 1, keepdims=False)


def test_dynamic_slices_whose_start_differs_between_examples():
    # JAX's main use of them (batching_test, lax_control_flow_test): refused under vmap
    # ("an index that differs between examples ..."), pointing into lax.py
    x = np.arange(8.0) * 0.7
    xs, starts = np.stack([x, 2 * x, -x]), np.array([0, 4, 6])
    np.testing.assert_allclose(tp.vmap(_window)(xs, starts),
                               [_window(a, i) for a, i in zip(xs, starts)], rtol=1e-14)
    np.testing.assert_allclose(tp.vmap(tp.grad(_window))(xs, starts),
                               [tp.grad(_window)(a, i) for a, i in zip(xs, starts)], rtol=1e-14)
    np.testing.assert_allclose(tp.vmap(_window, in_axes=(None, 0))(x, starts),
                               [_window(x, i) for i in starts], rtol=1e-14)
    assert _window(x, 7) == pytest.approx(np.sum(x[5:8] ** 2) + x[7], rel=1e-15)   # clamped
    check_grads(_window, (x, 2), order=2, modes=("fwd", "rev"))


def test_a_negative_start_counts_from_the_end():
    # JAX's allow_negative_indices (the default): wrapped, then clamped
    x = np.arange(6.0)
    np.testing.assert_array_equal(tp.lax.dynamic_slice_in_dim(x, -1, 3), [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(tp.lax.dynamic_slice_in_dim(x, -5, 2), [1.0, 2.0])
    assert tp.lax.dynamic_index_in_dim(x, -1, keepdims=False) == 5.0
    np.testing.assert_array_equal(tp.vmap(lambda i: tp.lax.dynamic_slice_in_dim(x, i, 2))(
        np.array([-1, 0, 2])), [[4.0, 5.0], [0.0, 1.0], [2.0, 3.0]])


def _scan_over_a_dict(c0, xs):
    def step(c, x):
        return c + x["a"] * x["b"], c
    c, ys = lax.scan(step, c0, xs)
    return np.sum(c) + np.sum(ys), lax.map(lambda x: x["a"] * 2.0, xs, batch_size=2)


def test_scan_over_a_dict_and_map_with_batch_size():
    """JAX takes any pytree as xs (it failed on a dict: scan_length looked in tuples only),
    and lax.map's batch_size, which only chooses how JAX computes it."""
    rng = _rng()
    xs = {"a": rng.normal(size=(3, 2)), "b": rng.normal(size=(3, 2))}
    c0 = rng.normal(size=2)
    value, mapped = _scan_over_a_dict(c0, xs)
    c, total = c0, 0.0
    for a, b in zip(xs["a"], xs["b"]):
        total, c = total + np.sum(c), c + a * b
    assert np.isclose(value, np.sum(c) + total)
    np.testing.assert_allclose(mapped, 2.0 * xs["a"], rtol=1e-15)
    assert np.isclose(tp.jit(_scan_over_a_dict)(c0, xs)[0], value)
    check_grads(lambda c0, xs: _scan_over_a_dict(c0, xs)[0], (c0, xs), order=2,
                modes=("rev", "fwd"))


def _partial_step(w, c, x):
    return np.tanh(c * w + x), c * x


def _with_partials(c0, xs, w):
    c, ys = lax.scan(functools.partial(_partial_step, w * 2.0), c0, xs)

    def body(i, c, scale):
        return c * scale + np.sin(i)
    c = lax.fori_loop(0, 3, functools.partial(body, scale=w), c)
    picked = lax.switch(1, [functools.partial(np.multiply, w), functools.partial(np.add, 1.0)],
                        c)
    return np.sum(c) + np.sum(ys) + np.sum(picked)


def test_a_partial_as_the_function_of_scan_fori_loop_and_switch():
    """functools.partial(step, w) as a scan's body (17 refusals of the lax_control_flow_test
    port: "a function value can only be called here"), its bound values computed in the
    code: a lambda calling the function with them."""
    rng = _rng()
    c0, xs, w = rng.normal(size=3), rng.normal(size=(4, 3)), 0.7
    c, total = c0, 0.0
    for x in xs:
        c, y = _partial_step(w * 2.0, c, x)
        total += np.sum(y)
    for i in range(3):
        c = c * w + np.sin(i)
    expected = np.sum(c) + total + np.sum(c + 1.0)
    assert np.isclose(_with_partials(c0, xs, w), expected)
    assert np.isclose(tp.jit(_with_partials)(c0, xs, w), expected)
    check_grads(_with_partials, (c0, xs, w), order=2, modes=("rev", "fwd"))
    cs = np.stack([c0, 2 * c0])
    np.testing.assert_allclose(tp.vmap(_with_partials, (0, None, None))(cs, xs, w),
                               [_with_partials(v, xs, w) for v in cs], rtol=1e-13)
