"""Regressions: programs that once gave a wrong number, or crashed, where numpy runs them.

Each test names the bug it pins down. Everything is checked against plain numpy and finite
differences (`check_grads`), never against values written down by hand.
"""
import collections
import dataclasses
import functools
import warnings

import numpy as np
import pytest

import transpile as tp
from transpile.errors import TransformError
from transpile.test_util import check_grads


def _rng(seed):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------ loops whose values change shape

def predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs


def logprob_fun(params, inputs, targets):
    return np.sum((predict(params, inputs) - targets) ** 2)


def predict_while(params, inputs):
    k = 0
    while k < len(params):
        W, b = params[k]
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
        k += 1
    return outputs


def logprob_while(params, inputs, targets):
    return np.sum((predict_while(params, inputs) - targets) ** 2)


def _mlp(rng, sizes, batch=7):
    params = [(rng.normal(size=(a, b)), rng.normal(size=b))
              for a, b in zip(sizes[:-1], sizes[1:])]
    return params, rng.normal(size=(batch, sizes[0])), rng.normal(size=(batch, sizes[-1]))


@pytest.mark.parametrize("sizes", [(5, 4, 3), (4, 1, 5), (3, 6, 1, 2)])
@pytest.mark.parametrize("loss", [logprob_fun, logprob_while])
def test_loop_value_whose_shape_changes_between_trips(sizes, loss):
    # the backward loop used to re-zero the adjoint of `outputs` shaped like the trip it had
    # just undone: a broadcast error, or (width 1 before width 5) a gradient 5x too large
    params, x, t = _mlp(_rng(1), sizes)
    check_grads(loss, (params, x, t), order=2, modes=("rev", "fwd"))


def test_loop_value_whose_shape_changes_under_vmap_of_grad():
    params, x, t = _mlp(_rng(2), (4, 1, 5, 2))
    per_example = tp.vmap(tp.grad(logprob_while), in_axes=(None, 0, 0))(params, x, t)
    for i in range(len(x)):
        expected = tp.grad(logprob_while)(params, x[i], t[i])
        for (dW, db), (eW, eb) in zip(per_example, expected):
            np.testing.assert_allclose(dW[i], eW, rtol=1e-10)
            np.testing.assert_allclose(db[i], eb, rtol=1e-10)


# ------------------------------------------------------------------ subscript writes of itself

def write_self(x):
    y = x * 1.0
    y[:3] = y
    return np.sum(y ** 3)


def write_shifted(x):
    y = x * 1.0
    y[:3] = y[1:4]
    y[1:] = y[:-1]
    return np.sum(y ** 3)


@pytest.mark.parametrize("f,n", [(write_self, 3), (write_shifted, 5)])
def test_subscript_write_of_the_array_itself(f, n):
    # `y[:3] = y` cleared the written part of dy before handing it to the value written
    x = _rng(3).normal(size=n)
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))
    xs = _rng(4).normal(size=(3, n))
    np.testing.assert_allclose(tp.vmap(f)(xs), [f(v) for v in xs])


# ------------------------------------------------------------------ forward mode: stale tangents

C = 2.0


def overwritten_by_constant(x):
    y = x * 1.0
    for i in range(3):
        z = y * x
        y = np.mean(np.ones(3)) * C
    return z


def overwritten_in_branch(x):
    y = x * 1.0
    for i in range(3):
        if i == 1:
            y = np.mean(np.ones(3)) * C
        y = y * x
    return y


@pytest.mark.parametrize("f", [overwritten_by_constant, overwritten_in_branch])
def test_tangent_of_a_value_overwritten_by_a_constant_in_a_loop(f):
    check_grads(f, (1.3,), order=2, modes=("rev", "fwd"))
    out, out_dot = tp.jvp(f, (1.3,), (1.0,))
    eps = 1e-6
    np.testing.assert_allclose(out_dot, (f(1.3 + eps) - f(1.3 - eps)) / (2 * eps), rtol=1e-6)


# ------------------------------------------------------------------ second order through branches

def branch_temporaries(a):
    if a > 0:
        b = a * a
    else:
        b = a * a * a
    return b * 2.0


def early_return(a):
    if a > 0.7:
        return np.hypot(a, 1.0) + a
    return 1.0


@pytest.mark.parametrize("f", [branch_temporaries, early_return])
@pytest.mark.parametrize("a", [0.9, -0.5, 0.2])
def test_grad_of_grad_through_branches_with_their_own_temporaries(f, a):
    # the second backward pass zeroed, on one path, the adjoint of a temporary that only the
    # other path made: UnboundLocalError
    eps = 1e-5
    g = tp.grad(f)
    np.testing.assert_allclose(tp.grad(g)(a), (g(a + eps) - g(a - eps)) / (2 * eps),
                               rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ sequences, not arrays

def hstack_of_extended_tuple(args):
    ones = np.ones(2)
    return np.sum(np.hstack(args + (ones,)) ** 2)


def stack_of_repeated_list(x):
    parts = [x] * 3 + [x * 2.0]
    return np.sum(np.stack(parts) ** 2 * np.arange(1.0, 5.0)[:, None])


def test_tuple_concatenation_is_not_array_addition():
    args = (_rng(5).normal(size=2), _rng(6).normal(size=3))
    check_grads(hstack_of_extended_tuple, (args,), order=2, modes=("rev", "fwd"))


def test_list_repetition_and_concatenation():
    x = _rng(7).normal(size=2)
    check_grads(stack_of_repeated_list, (x,), order=2, modes=("rev", "fwd"))
    xs = _rng(8).normal(size=(4, 2))
    np.testing.assert_allclose(tp.vmap(stack_of_repeated_list)(xs),
                               [stack_of_repeated_list(v) for v in xs])


# ------------------------------------------------------------------ defaults and partials

def with_defaults(x, y=2.0, z=1.0):
    return np.sin(x) * y + z * x


bound_by_keyword = functools.partial(with_defaults, y=3.0)


def local_partial(x):
    h = functools.partial(with_defaults, z=4.0)
    return h(x, y=0.5) + h(x)


def global_partial(x):
    return bound_by_keyword(x) + bound_by_keyword(x, z=2.0)


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def test_jvp_leaves_defaults_alone():
    # jvp asked for tangents of parameters left at their defaults
    out, out_dot = tp.jvp(with_defaults, (1.1,), (1.0,))
    assert out == with_defaults(1.1)
    np.testing.assert_allclose(out_dot, _fd(with_defaults, 1.1), rtol=1e-7)


def test_partial_with_keywords():
    out, out_dot = tp.jvp(bound_by_keyword, (1.1,), (1.0,))
    assert out == bound_by_keyword(1.1)
    np.testing.assert_allclose(out_dot, _fd(bound_by_keyword, 1.1), rtol=1e-7)
    np.testing.assert_allclose(tp.grad(bound_by_keyword)(1.1), _fd(bound_by_keyword, 1.1),
                               rtol=1e-7)
    xs = _rng(9).normal(size=3)
    np.testing.assert_allclose(tp.vmap(bound_by_keyword)(xs), bound_by_keyword(xs))


@pytest.mark.parametrize("f", [local_partial, global_partial])
def test_partial_with_keywords_inside_transformed_code(f):
    check_grads(f, (0.7,), order=2, modes=("rev", "fwd"))


# ------------------------------------------------------------------ in-place writes seen through another name

def augmented_through_copy(x):
    y = np.ones(3)
    v = y
    y -= x
    return np.sum(v)          # numpy: v is y, so it sees the subtraction


def subscript_write_through_copy(x):
    y = np.zeros(3)
    v = y
    y[0] = np.sum(x)
    y[1:] += x[:2]
    return np.sum(v * x)


def in_place_square_in_loop(x):
    v = np.array(x)
    acc = v
    for i in range(2):
        v *= acc              # acc is v: v ** 2, then v ** 4
    return np.sum(v) + np.sum(acc)


def list_grown_through_copy(x):
    a = [x]
    b = a
    a.append(x * 2.0)
    a += [x * 3.0]
    return np.sum(np.stack(b) ** 2)


def residual_block(x):
    res = x
    x = np.tanh(x)
    x += res                  # x is a new array here: res is not changed
    return np.sum(x * res)


def scalar_accumulator(x):
    t = 0.0
    for i in range(3):
        t += np.sum(x * i)
    s = t
    t += 1.0                  # a number: s keeps its value
    return s * t


@pytest.mark.parametrize("f", [augmented_through_copy, subscript_write_through_copy,
                               in_place_square_in_loop, list_grown_through_copy,
                               residual_block, scalar_accumulator])
def test_in_place_write_seen_through_another_name(f):
    x = _rng(10).normal(size=3)
    value, _ = tp.value_and_grad(f)(x)
    np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))
    xs = _rng(11).normal(size=(4, 3))
    np.testing.assert_allclose(tp.vmap(f)(xs), [f(v.copy()) for v in xs], rtol=1e-12)


def same_array_unknown_kind(x):
    y = x * 1.0
    z = y
    z *= y                    # in place if y is an array: transpile cannot tell here
    return np.sum(y)


def through_tuple(x):
    W = np.array(x * 2.0)
    y = np.array(x * 1.0)
    v3, v4 = (W, y)
    y -= W
    return np.prod(v4)


def one_path_aliases(x):
    y = np.ones(3)
    if np.sum(x) > 0:
        z = y
    else:
        z = np.zeros(3)
    y += x
    return np.sum(z)


def grown_through_loop_alias(x):
    v = x * 1.0
    acc = v
    for i in range(2):
        v *= acc
    return np.sum(v)


def test_in_place_write_through_an_alias_made_by_unpacking_a_tuple_display():
    """`v3, v4 = (W, y)` binds pair by pair now (`v4 = y`), an alias the analysis follows:
    `y -= W` then changes v4 too, in the gradient as in numpy (it was refused)."""
    x = _rng(12).normal(size=3)
    np.testing.assert_allclose(tp.grad(through_tuple)(x),
                               [np.prod(-np.delete(x, i)) * -1.0 for i in range(3)],
                               rtol=1e-12)
    check_grads(through_tuple, (x,), order=2, modes=("fwd", "rev"))


def sharp_bits_alias(x):
    a = x.copy()              # JAX's Sharp Bits: b = a; b += 10; then a is read
    b = a
    b += 10.0
    return np.sum(a * x)


@pytest.mark.parametrize("f", [same_array_unknown_kind, grown_through_loop_alias,
                               sharp_bits_alias])
def test_in_place_write_through_a_name_surely_the_same_of_unknown_kind(f):
    """`z = y; z *= y` where y may be a number or an array: the alias sees the write where
    y holds an array, asked when the code runs (rt.holds_array); a number is bound anew.
    Both were refused, though the alias is surely the same object."""
    rng = _rng(13)
    x = rng.normal(size=3)
    for arg in (x, 0.7) if f is not sharp_bits_alias else (x,):     # (floats have no .copy)
        expected = f(np.copy(arg) if np.ndim(arg) else arg)
        np.testing.assert_allclose(tp.jit(f)(arg), expected, rtol=1e-12)
        check_grads(f, (arg,), order=2, modes=("fwd", "rev"))
    if f is not sharp_bits_alias:
        np.testing.assert_allclose(tp.vmap(f)(x), [f(v) for v in x], rtol=1e-12)
    rows = rng.normal(size=(4, 3))
    np.testing.assert_allclose(tp.vmap(f)(rows), [f(r.copy()) for r in rows], rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(tp.grad(f))(rows), [tp.grad(f)(r) for r in rows],
                               rtol=1e-12)


@pytest.mark.parametrize("f,line,names", [
    (one_path_aliases, "y += x", ("'y'", "'z'")),
])
def test_in_place_write_that_an_alias_may_see_is_refused(f, line, names):
    with pytest.raises(tp.TransformError) as info:
        tp.grad(f)(_rng(12).normal(size=3))
    message = str(info.value)
    assert line in message and "[aliasing]" in message
    for name in names:
        assert name in message


def accumulate_from_an_element(x):
    acc = x[0]                # a number where x is 1-d: `acc +=` binds it anew
    for i in range(1, 3):
        acc += x[i] * acc
    return acc * np.sum(x)


def scale_an_element_of_a_global(x):
    s = GLOBAL_TABLE[-2]      # a number: `s *=` leaves GLOBAL_TABLE as it is
    if np.sum(x) > 0:
        s *= np.sin(x[0])
    return s + np.sum(GLOBAL_TABLE * x[:2])


def update_a_row(x):
    row = x[0]                # a row of a 2-d x (a view), or a number of a 1-d one
    row += 1.0
    return np.sum(row) + np.sum(x)


@pytest.mark.parametrize("f", [accumulate_from_an_element, scale_an_element_of_a_global])
def test_augmented_assignment_to_a_number_read_from_an_array(f):
    """`acc = x[0]; acc += ...`: refused ("if 'acc' holds an array here ...") by every
    transformation, although for a 1-d x it is a number, bound anew. Now asked at run
    time (rt.number_only): a number passes. Against numpy, finite differences, a loop."""
    before = GLOBAL_TABLE.copy()
    x = _rng(31).uniform(0.2, 1.0, size=3)
    np.testing.assert_allclose(tp.transform(f)(x), f(x), rtol=1e-13)
    np.testing.assert_allclose(tp.jit(f)(x), f(x), rtol=1e-13)
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))
    np.testing.assert_allclose(tp.jit(tp.grad(f))(x), tp.grad(f)(x), rtol=1e-12)
    xs = _rng(32).uniform(-1.0, 1.0, size=(4, 3))
    np.testing.assert_allclose(tp.vmap(f)(xs), [f(v) for v in xs], rtol=1e-13)
    np.testing.assert_allclose(tp.vmap(tp.grad(f))(xs), [tp.grad(f)(v) for v in xs],
                               rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(tp.vmap(f))(xs[None]), [[f(v) for v in xs]],
                               rtol=1e-13)
    assert np.array_equal(GLOBAL_TABLE, before)


@pytest.mark.parametrize("how", ["grad", "jvp", "vmap", "jit", "vmap(vmap)", "jit(grad)"])
def test_augmented_assignment_to_a_row_of_the_argument_is_an_error_at_run_time(how):
    """The same code where x is 2-d: `row +=` would write into the caller's x, which the
    return reads (NumPy: sum(x) includes the update). An error naming the line, under
    every transformation; a 1-d x passes."""
    run = {"grad": lambda x: tp.grad(update_a_row)(x),
           "jvp": lambda x: tp.jvp(update_a_row, (x,), (x,)),
           "vmap": lambda x: tp.vmap(update_a_row)(x[None]),
           "jit": lambda x: tp.jit(update_a_row)(x),
           "vmap(vmap)": lambda x: tp.vmap(tp.vmap(update_a_row))(x[None, None]),
           "jit(grad)": lambda x: tp.jit(tp.grad(update_a_row))(x)}[how]
    run(_rng(33).normal(size=3))
    x = _rng(34).normal(size=(2, 3))
    with pytest.raises(TransformError, match="'row' holds an array here") as info:
        run(x)
    assert "row += 1.0" in str(info.value) and "'x'" in str(info.value)


def reversed_outside_a_loop(x):
    hs = [x, 2.0 * x, np.sin(x)]
    rs = list(reversed(hs))
    return np.sum(rs[0] * rs[1]) + np.sum(list(reversed(x))[0] * x)


def enumerate_outside_a_loop(x):
    pairs = list(enumerate([x, np.sin(x)], start=1))
    return np.sum(pairs[1][1] * pairs[0][1]) * pairs[1][0]


def zip_outside_a_loop(x):
    pairs = list(zip([x, 2.0 * x], [x, np.sin(x)]))
    total = 0.0
    for a, b in pairs:
        total = total + np.sum(a * b)
    return total


def dict_of_zip(x):
    d = dict(zip(["a", "b"], [x, np.sin(x)]))
    return np.sum(d["a"] * d["b"])


@pytest.mark.parametrize("f", [reversed_outside_a_loop, enumerate_outside_a_loop,
                               zip_outside_a_loop, dict_of_zip])
def test_zip_enumerate_and_reversed_outside_a_loop_header(f):
    """zip, enumerate and reversed were registered without a derivative for the loop
    headers they usually sit in; anywhere else (`list(zip(xs, ys))`) grad gave zeros,
    silently. Now they are the lists a loop builds. Against finite differences and numpy,
    under grad, jvp, vmap, vmap(grad) and jit."""
    x = _rng(41).uniform(-1.0, 1.0, size=3)
    np.testing.assert_allclose(tp.transform(f)(x), f(x), rtol=1e-13)
    assert np.max(np.abs(tp.grad(f)(x))) > 0.1
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))
    xs = _rng(42).uniform(-1.0, 1.0, size=(4, 3))
    np.testing.assert_allclose(tp.vmap(f)(xs), [f(v) for v in xs], rtol=1e-13)
    np.testing.assert_allclose(tp.vmap(tp.grad(f))(xs), [tp.grad(f)(v) for v in xs],
                               rtol=1e-12)
    np.testing.assert_allclose(tp.jit(f)(x), f(x), rtol=1e-13)


def keys_filtered_by_a_comprehension(x):
    d = {"a": x, "b": x * 2.0, "c": np.sin(x)}
    e = {k: d[k] ** 2 for k in d if k != "b"}
    return np.sum(e["a"]) + np.sum(e["c"])


def dict_comprehension_over_items(x):
    d = {"a": x, "b": x * 2.0}
    e = {k: v * x for k, v in d.items()}
    return np.sum(e["a"] + e["b"])


def dict_with_integer_keys(x):
    d = {i: x[i] * x for i in range(3)}
    return np.sum(d[0] * d[2]) + np.sum(d[1])


def update_every_key(x):
    p = {"W": x * 1.0, "b": x[0]}
    g = {"W": np.cos(x), "b": 2.0}
    for k in list(p):
        p[k] = p[k] - 0.1 * g[k]
    return np.sum(p["W"] ** 2) + p["b"] ** 2


def loops_over_a_dicts_views(x):
    d = {"u": x, "v": np.sin(x)}
    total = 0.0
    for k, v in d.items():
        total = total + np.sum(v * v) * (2.0 if k == "u" else 1.0)
    for v in d.values():
        total = total + np.sum(v)
    for k in d.keys():
        total = total + np.sum(d[k] * x)
    for i, v in enumerate([x, np.sin(x)], 1):
        total = total + i * np.sum(v)
    return total


@pytest.mark.parametrize("f", [keys_filtered_by_a_comprehension, dict_comprehension_over_items,
                               dict_with_integer_keys, update_every_key,
                               loops_over_a_dicts_views])
def test_dict_comprehensions_and_loops_over_a_dicts_keys(f):
    """`{k: ... for k in d}` was refused ('DictComp'), and `for k in list(d): d[k] = ...`
    (the hint of the refusal of `for k in d`) was refused by the aliasing check (the keys'
    list taken for d itself), and under vmap a key of a batched dict was taken for a
    per-example index. Against numpy, finite differences and a loop; vmap(vmap) too."""
    x = _rng(43).uniform(-1.0, 1.0, size=3)
    np.testing.assert_allclose(tp.transform(f)(x), f(x), rtol=1e-13)
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))
    xs = _rng(44).uniform(-1.0, 1.0, size=(4, 3))
    loop = [f(v) for v in xs]
    np.testing.assert_allclose(tp.vmap(f)(xs), loop, rtol=1e-13)
    np.testing.assert_allclose(tp.vmap(tp.vmap(f))(xs.reshape(2, 2, 3)),
                               np.reshape(loop, (2, 2)), rtol=1e-13)
    grads = [tp.grad(f)(v) for v in xs]
    np.testing.assert_allclose(tp.vmap(tp.grad(f))(xs), grads, rtol=1e-12)
    np.testing.assert_allclose(tp.grad(lambda xs: np.sum(tp.vmap(f)(xs)))(xs), grads,
                               rtol=1e-12)
    np.testing.assert_allclose(tp.jit(f)(x), f(x), rtol=1e-13)


def test_an_sgd_step_over_a_dict_of_parameters():
    """The update most training loops write: a dict comprehension over the parameters,
    under jit and vmap (per-example steps from one set of parameters)."""
    def step(params, x):
        grads = tp.grad(lambda p: np.sum((p["W"] @ x + p["b"]) ** 2))(params)
        return {k: params[k] - 0.1 * grads[k] for k in params}
    params = {"W": _rng(45).normal(size=(2, 3)), "b": _rng(46).normal(size=2)}
    xs = _rng(47).normal(size=(4, 3))
    for x in xs[:1]:
        want = step(params, x)
        for got in (tp.transform(step)(params, x), tp.jit(step)(params, x)):
            for k in params:
                np.testing.assert_allclose(got[k], want[k], rtol=1e-13)
    batched = tp.vmap(step, in_axes=(None, 0))(params, xs)
    for k in params:
        np.testing.assert_allclose(batched[k], [step(params, x)[k] for x in xs], rtol=1e-13)


# ------------------------------------------------------------------ lists read while they grow

def last_of_growing_list(x):
    hs = [x]
    for i in range(3):
        h = hs[-1]
        hs.append(np.tanh(h) * 1.5)
        x = x + h
    return np.sum(np.stack(hs[-2:])) + np.sum(x)


def stack_of_growing_list(x):
    hs = [x]
    for i in range(3):
        ctx = np.stack(hs)
        hs.append(np.tanh(np.sum(ctx, axis=0)) + hs[-1] * 0.5)
    return np.sum(hs[-1] ** 2)


@pytest.mark.parametrize("f", [last_of_growing_list, stack_of_growing_list])
def test_list_read_while_it_grows(f):
    # `hs[-1]` in the backward pass counted from the end of the finished list, and the saved
    # list was the same object the forward pass went on appending to: zero gradients
    x = _rng(13).normal(size=3)
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))
    xs = _rng(14).normal(size=(3, 3))
    expected = [tp.grad(f)(v) for v in xs]
    np.testing.assert_allclose(tp.vmap(tp.grad(f))(xs), expected, rtol=1e-10)


# ------------------------------------------------------------------ transformations of local functions

def seed_readme_nested(x):
    y = np.sin(x)

    @tp.vmap              # pmap until it exists: the same semantics
    def g(z):
        return np.cos(z) * np.tan(y.sum()) * np.tanh(x).sum()
    return tp.grad(lambda w: np.sum(g(w)))(x)


def meta_gradient(theta, x):
    def inner_loss(t):
        return np.sum((np.tanh(x * t) - 0.5) ** 2)
    adapted = theta - 0.1 * tp.grad(inner_loss)(theta)
    return inner_loss(adapted)


def vmap_of_lambda(x):
    return np.sum(tp.vmap(lambda r: np.sum(r ** 2) * x[0])(x.reshape(2, 2)))


def vmap_with_partial_decorator(x):
    @functools.partial(tp.vmap, in_axes=(0, None))
    def g(a, b):
        return np.sin(a) * b * x[0]
    return np.sum(g(x, 2.0))


def no_perturbation_confusion(x):
    def g(y):
        return x * y
    return tp.grad(g)(1.0) + tp.grad(lambda y: x * y * y)(x)


@pytest.mark.parametrize("f,args", [
    (lambda x: np.sum(seed_readme_nested(x)), (np.array([0.3, 0.5, 0.7, 0.9]),)),
    (meta_gradient, (np.array([0.3, -0.5, 0.7]), np.array([0.9, 0.2, -0.4]))),
    (vmap_of_lambda, (np.array([0.3, 0.5, -0.7, 0.9]),)),
    (vmap_with_partial_decorator, (np.array([0.3, 0.5, -0.7]),)),
    (no_perturbation_confusion, (1.7,)),
])
def test_transformations_of_closures_and_lambdas_inside_transformed_code(f, args):
    # were refused ("grad() needs a function known while transforming"); vmap of a closure
    # also mapped the closure's free variables as if they were arguments
    check_grads(f, args, order=2, modes=("rev", "fwd"))


def test_grad_of_a_closure_sees_no_perturbation_confusion():
    # d/dx [d/dy (x y) at y=1 + d/dy (x y^2) at y=x] = d/dx [x + 2 x^2] = 1 + 4x
    np.testing.assert_allclose(tp.grad(no_perturbation_confusion)(1.7), 1 + 4 * 1.7)


def test_decorators_other_than_transformations_on_nested_functions_are_refused():
    def f(x):
        @functools.lru_cache
        def g(a):
            return a * 2.0
        return g(x)
    with pytest.raises(tp.TransformError, match="decorator"):
        tp.grad(f)(1.0)


def _nested_early_return(x):
    def h(z):
        if np.sum(z) > 0:
            return z * 2.0
        return z * 3.0
    return np.sum(h(x))


def test_nested_function_with_early_return():
    # nested functions skipped the control-flow pass: a crash at the early return
    for x in (np.array([0.3, 0.5]), np.array([-0.3, -0.5])):
        check_grads(_nested_early_return, (x,), order=2, modes=("rev", "fwd"))


def test_lambda_inside_a_statement_that_does_not_parse_alone():
    # a lambda in a `for` header's list could not be found
    for name, f in [("square", lambda v: np.sum(v ** 2))]:
        np.testing.assert_allclose(tp.grad(f)(np.array([1.0, 2.0])), [2.0, 4.0])


# ---------------------------------------------------------------- found by the program generator

def _returns_nothing(a):
    pass


def _helper_returning_none_on_a_path(h, depth):
    if depth == 0:
        return _returns_nothing(0.9)
    return h


def _calls_a_helper_with_only_constant_arguments(x):
    unused = _helper_returning_none_on_a_path(x[1], 1)
    return np.sum(np.concatenate([x[0:1], x]))


def test_call_of_a_helper_with_no_active_argument_on_a_path():
    # the backward pass looked for residuals of `_returns_nothing(0.9)`, a call that reads
    # no differentiated value and saved none: KeyError (random program, seed 5020)
    x = _rng(5020).normal(size=2)
    np.testing.assert_allclose(tp.grad(_calls_a_helper_with_only_constant_arguments)(x),
                               [2.0, 1.0])
    check_grads(_calls_a_helper_with_only_constant_arguments, (x,), order=2,
                modes=("rev", "fwd"))


def _element_rebound_in_a_loop_then_updated(x):
    s = x[3]
    for i in range(1, 4):
        s = np.sin(s * 2.0)
    s += np.sin(x[0])       # s is no longer x[3]: the loop ran at least once
    return np.sum(x) + s


def test_update_after_a_loop_that_surely_rebinds():
    # refused ("if 's' holds an array here ...") although `range(1, 4)` surely runs and
    # binds s anew (random program, seed 5005)
    x = _rng(5005).normal(size=4)
    check_grads(_element_rebound_in_a_loop_then_updated, (x,), order=2, modes=("rev", "fwd"))
    want = np.sum(x) + np.sin(np.sin(np.sin(x[3] * 2) * 2) * 2) + np.sin(x[0])
    np.testing.assert_allclose(tp.transform(_element_rebound_in_a_loop_then_updated)(x), want)


def _carried_shape_changes_before_a_break(x, ws):
    s = np.sum(x)
    h = x * np.linspace(0.6, 0.8, 8).reshape(4, 2)
    for W in ws:
        h = h @ W
        if np.sum(h) < 0.1:
            break
    return s * np.sum(h)


def test_vmap_of_a_loop_whose_carried_shape_changes_on_the_first_trip():
    # h is (4, 2) before the first trip and (4, 4) after it; the examples leave the loop
    # at different trips but all after the first, so no example sees another shape. The
    # join at the end of each trip refused it (random program, seed 5026)
    r = _rng(5026)
    ws = [r.normal(size=(2, 4)), r.normal(size=(4, 4)), r.normal(size=(4, 4))]
    xs = r.normal(size=(6, 2))
    got = tp.vmap(_carried_shape_changes_before_a_break, in_axes=(0, None))(xs, ws)
    np.testing.assert_allclose(got, [_carried_shape_changes_before_a_break(x, ws) for x in xs])


def _complex_square(z):
    return np.sum(z * z)


def test_grad_of_a_complex_output_is_refused():
    # took the real part silently; JAX refuses unless the function is holomorphic
    z = _rng(13).normal(size=3) + 1j * _rng(14).normal(size=3)
    with pytest.raises(tp.TransformError, match="returned a complex number"):
        tp.grad(_complex_square)(z)
    with pytest.raises(tp.TransformError, match="returned a complex number"):
        tp.vmap(tp.grad(_complex_square))(z[:, None])
    # a real output of a complex input is fine: df/dx - i df/dy of |z|^2 is 2 conj(z)
    np.testing.assert_allclose(tp.grad(lambda v: np.sum(np.abs(v) ** 2))(z), 2 * np.conj(z))


def test_two_lambdas_with_the_same_parameters_on_one_line():
    # compiled apart, the second lambda's bytecode differed from the original's, and the
    # columns of a lambda cut out of a `for` header were invalid: a ValueError
    x = _rng(15).normal(size=3)
    for f, want in [(lambda v: np.sum(v * v), 2 * x), (lambda v: np.sum(np.sin(v)), np.cos(x))]:
        np.testing.assert_allclose(tp.grad(f)(x), want)


def _scaled_slice_of_an_undifferentiated_array(x, y):
    y = np.tanh(y)
    y[:2] *= x[1]
    return np.sum(y)


def test_a_view_the_backward_pass_reads_survives_a_later_write():
    # `y[:2] *= v` reads y[:2] (a view), then writes y[:2]; the adjoint of v reads that view,
    # and the write, done in place because y itself was not needed, changed it: the
    # gradient in x was off by the factor v (random program, seed 10036)
    r = _rng(10036)
    x, y = r.normal(size=(2, 2)), r.normal(size=3)
    got = tp.grad(_scaled_slice_of_an_undifferentiated_array)(x, y)
    want = np.zeros((2, 2))
    want[1] = np.tanh(y[:2])
    np.testing.assert_allclose(got, want)
    check_grads(lambda v: _scaled_slice_of_an_undifferentiated_array(v, y), (x,), order=2,
                modes=("rev", "fwd"))


def _constant_returned_in_a_nested_branch(x):
    u = x * 2.0
    if np.max(u) > 0.1:
        if np.dot(x, x) > 0.7:
            return 0.5
    return u


def test_forward_tangent_of_a_constant_returned_in_a_nested_branch():
    # jvp returned the tangent of `u` with the value 0.5 (a silent wrong answer), or raised
    # UnboundLocalError: the zero tangent of `result` was missing on the path that returned
    # the constant, as `result` was only maybe bound there (random program, seed 10112)
    t = _rng(10112).normal(size=2)
    out, tangent = tp.jvp(_constant_returned_in_a_nested_branch, (np.array([0.0, 1.0]),), (t,))
    assert out == 0.5 and np.all(np.asarray(tangent) == 0.0)
    x = np.array([0.1, 0.2])
    out, tangent = tp.jvp(_constant_returned_in_a_nested_branch, (x,), (t,))
    np.testing.assert_allclose(tangent, 2.0 * t)
    np.testing.assert_allclose(tp.jacfwd(_constant_returned_in_a_nested_branch)(x), 2 * np.eye(2))


def _list_of_stacks_of_lists(x, ws):
    h = ws[0] * x[0, 0]
    rows = []
    for i in range(2):
        inner = []
        inner.append(h)
        rows.append(np.stack(inner))
    return np.sum(rows)


def test_grad_of_a_list_made_anew_in_each_trip():
    # the list saved before the first trip did not exist yet: copy_stack(None) raised
    # TypeError (random program, seed 10122)
    r = _rng(10122)
    x, ws = r.normal(size=(2, 2)), [r.normal(size=(2, 3))]
    dx, dws = tp.grad(_list_of_stacks_of_lists, argnums=(0, 1))(x, ws)
    want_dx = np.zeros((2, 2))
    want_dx[0, 0] = 2 * np.sum(ws[0])
    np.testing.assert_allclose(dx, want_dx)
    np.testing.assert_allclose(dws[0], np.full((2, 3), 2 * x[0, 0]))


def _swap_then_write(x):
    fresh = np.linspace(0.6, 0.8, 3) * x[0]
    x, fresh = (fresh, x)
    x[1:] *= 2.0              # writes the new array, not the caller's
    return np.sum(fresh) + np.sum(x * x)


def _unpack_then_write(x):
    s, u = (2.0 * x[0], np.linspace(0.6, 0.8, 2))
    u[:2] = x
    return s + np.sum(u * u)


@pytest.mark.parametrize("f", [_swap_then_write, _unpack_then_write])
def test_tuple_unpacking_is_followed_element_by_element(f):
    # the aliasing pass merged the elements of `(a, b)`, so writing into the fresh one was
    # refused as a write into the caller's array (random programs, seeds 10116, 10118)
    x = _rng(10118).normal(size=3 if f is _swap_then_write else 2)
    want = f(x.copy())
    np.testing.assert_allclose(tp.transform(f)(x.copy()), want)
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))


def _break_in_a_loop_inside_a_branch(x):
    h = x * 1.5
    if np.sum(x) > -10.0:
        for i in range(3):
            if np.sum(h) > 2.0:
                break
            h = h * x
            continue
            h = h + 100.0           # never runs
    return np.sum(h)


def test_loop_jumps_inside_a_branch_are_lowered():
    # the control-flow pass skipped loops nested in an `if` that does not itself exit, so
    # their break/continue stayed raw: the backward pass popped what the forward never
    # pushed (IndexError: pop from empty list; random program, seed 10158)
    for x in (_rng(10158).normal(size=3), np.array([0.9, 0.8, 0.7])):
        check_grads(_break_in_a_loop_inside_a_branch, (x,), order=2, modes=("rev", "fwd"))
        np.testing.assert_allclose(tp.transform(_break_in_a_loop_inside_a_branch)(x),
                                   _break_in_a_loop_inside_a_branch(x))


def _return_in_a_loop(x):
    for i in range(1, 3):
        return x * 2.0


def _kept_from_an_earlier_trip(x):
    for i in range(3):
        if x[i] > 0.0:
            y = x * float(i + 1)
    return np.sum(y * y)


def test_forward_tangents_of_values_kept_from_an_earlier_trip():
    # the zero tangent put on the path that does not bind `result` (or `y`) wiped, on the
    # next trip, the tangent the earlier trip made: jvp gave 0 (random program, seed 10407)
    out, tangent = tp.jvp(_return_in_a_loop, (0.6,), (1.5,))
    assert out == 1.2 and tangent == 3.0
    for x in (np.array([0.5, -0.4, -0.3]), np.array([0.5, 0.4, -0.3])):
        check_grads(_kept_from_an_earlier_trip, (x,), order=2, modes=("rev", "fwd"))


def _returns_its_argument(a):
    return a


def _returns_a_view_and_a_new_array(a, b):
    return a[1:], b * 2.0


def _write_after_a_helper_returned_it(x):
    h = np.array(x + x)
    u = _returns_its_argument(h)
    h *= 0.5                  # u is h: NumPy's u sees the write
    return np.mean(u * u)


def _write_after_a_helper_returned_a_view(x):
    h = np.array(x + x)
    u, w = _returns_a_view_and_a_new_array(h, x)
    h *= 0.5
    return np.mean(u * u) + np.sum(w)


def _write_after_a_helper_returned_something_new(x):
    h = np.array(x + x)
    w = _returns_a_view_and_a_new_array(x, h)[1]
    h *= 0.5
    return np.mean(w * h)


def test_results_of_helpers_may_be_their_arguments():
    # the aliasing pass took every helper's result as a new array: the write into `h` did
    # not reach `u`, which the helper returned as is (random program, seed 20308)
    x = _rng(20308).normal(size=4)
    for f in (_write_after_a_helper_returned_it, _write_after_a_helper_returned_something_new):
        np.testing.assert_allclose(tp.transform(f)(x.copy()), f(x.copy()))
        check_grads(f, (x,), order=2, modes=("rev", "fwd"))
    with pytest.raises(tp.TransformError, match="also changes 'u'"):
        tp.grad(_write_after_a_helper_returned_a_view)(x)


def _loop_rebinds_what_it_walks(x):
    for row in x:
        x = np.reshape(x.reshape(4), (2, 2)) + row
    return np.sum(x[1] * x[1])


def _enumerate_rebinds_what_it_walks(x):
    for i, row in enumerate(x):
        x = x * row[0] + float(i)
    return np.sum(x)


@pytest.mark.parametrize("f", [_loop_rebinds_what_it_walks, _enumerate_rebinds_what_it_walks])
def test_a_loop_walks_the_sequence_its_header_saw(f):
    # `for row in x` lowered to `row = x[i]` read the rebound x on later trips (random
    # program, seed 30097)
    x = _rng(30097).normal(size=(2, 2))
    np.testing.assert_allclose(tp.transform(f)(x), f(x))
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))
    xs = _rng(30098).normal(size=(3, 2, 2))
    np.testing.assert_allclose(tp.vmap(f)(xs), [f(v) for v in xs])


def _power_of_a_negative_constant(x):
    s = (-0.8) ** 2
    return s * np.sum(x) + x[-1] * (-2) ** 3


def test_negative_constants_keep_their_parentheses():
    # astor wrote the folded constant -0.8 as `-0.8 ** 2`, which is -(0.8 ** 2): every
    # transformation computed -0.64 for 0.64 (random program, seed 40238)
    x = _rng(40238).normal(size=2)
    np.testing.assert_allclose(tp.transform(_power_of_a_negative_constant)(x),
                               _power_of_a_negative_constant(x))
    np.testing.assert_allclose(tp.grad(_power_of_a_negative_constant)(x), [0.64, 0.64 - 8.0])
    assert "(-0.8) ** 2" in tp.transform(_power_of_a_negative_constant).source


def _squares_a_column(a, b):
    return b[:, 0] ** 2


def _write_after_a_helper_saved_the_array(x):
    m = x[:, :2] * 1.5
    m[:, 0] = np.tanh(_squares_a_column(x, m))
    return np.mean(m)


def test_an_array_a_helper_saved_for_its_backward_pass_is_not_written():
    # the helper's saved values hold `m` by reference; the write into `m` after the call
    # changed them, and the helper's backward pass used the new column (silent wrong
    # gradient; composing jvp on top was refused over generated names; seed 50552)
    x = _rng(50552).normal(size=(3, 3))
    check_grads(_write_after_a_helper_saved_the_array, (x,), order=2, modes=("rev", "fwd"))


def _returns_in_a_constant_false_branch(x):
    if 1.0 < 0.6:
        if x.sum() > 0.7:
            return x.sum()
    elif np.dot(x[0:3], x[:3]) > 1.0:
        return 0.8
    return np.mean(x)


def test_jvp_zero_tangent_of_a_value_bound_on_some_paths_only():
    # the zero tangent of `result` was set at the end of a path that binds `result` only
    # when its inner condition holds: UnboundLocalError otherwise (seed 74163)
    for x in (np.array([0.2, -0.3, -0.8, 0.5]), np.array([0.9, 0.8, 0.1, 0.4])):
        t = _rng(74163).normal(size=4)
        value, tangent = tp.jvp(_returns_in_a_constant_false_branch, (x,), (t,))
        expected = 0.0 if np.dot(x[:3], x[:3]) > 1.0 else np.mean(t)
        assert value == _returns_in_a_constant_false_branch(x)
        np.testing.assert_allclose(tangent, expected)
        check_grads(_returns_in_a_constant_false_branch, (x,), order=2, modes=("rev", "fwd"))


def _rebinds_its_parameter(a):
    k = 0
    while k < 1:
        a = 0.7 * np.cos(a)
        k += 1
    return a


def _writes_after_a_helper_that_rebinds(x):
    g = np.linspace(-0.6, 0.8, 2)
    u = g
    v = _rebinds_its_parameter(u)
    u[1:] *= 2.0
    return np.sum(v) + x


def _keeps_its_parameter(a):
    return a


def _writes_after_a_helper_that_returns_its_argument(x):
    g = np.linspace(-0.6, 0.8, 2)
    v = _keeps_its_parameter(g)
    g[1:] *= 2.0
    return np.sum(v) * x


def test_a_helper_returning_a_rebound_parameter_may_return_a_new_array():
    # `return a` after `a = 0.7 * np.cos(a)` was taken to be the caller's argument itself,
    # so a later write into the argument was shown through the result: every
    # transformation computed np.sum of the written array (silent wrong value, seed 80552).
    # Whether it is the same object depends on the trip count: refused, clearly.
    for transformation in (tp.transform, tp.grad, tp.vmap):
        with pytest.raises(tp.TransformError, match=r"writing into 'u' here also changes 'v'"):
            transformation(_writes_after_a_helper_that_rebinds)(np.array([0.6, -0.4]))
    # a helper that returns its parameter untouched surely returns the argument: the write
    # shows through it, as in numpy
    x = 0.75
    assert tp.transform(_writes_after_a_helper_that_returns_its_argument)(x) == \
        _writes_after_a_helper_that_returns_its_argument(x)
    xs = np.array([0.6, -0.4, 0.9])
    np.testing.assert_allclose(tp.vmap(_writes_after_a_helper_that_returns_its_argument)(xs),
                               [_writes_after_a_helper_that_returns_its_argument(v) for v in xs])
    np.testing.assert_allclose(tp.grad(_writes_after_a_helper_that_returns_its_argument)(x),
                               np.sum(np.linspace(-0.6, 0.8, 2) * [1, 2]))


def _nested_while_with_saved_indexing(x):
    k1 = 0
    while np.sum(x * x) > 0.05 and k1 < 2:
        while np.sum(x * x) > 0.5:
            x = 0.9 * np.tanh(np.concatenate([x[-1] * x[0:1], -x[0:1]]))
        k1 += 1
    return np.mean(x * x)


def test_vmap_of_grad_pops_as_many_values_as_each_outer_trip_pushed():
    # under vmap, the backward loop of an inner while made as many trips as the largest
    # count of *any* example, also of examples whose outer loop had ended (their counts
    # were left from earlier trips): it popped more than that trip pushed (IndexError,
    # or values of another trip; seed 91694)
    xs = np.array([[-0.1, 0.3], [-0.1, -0.2], [1.3, -0.0], [0.9, 0.8]])
    expected = [tp.grad(_nested_while_with_saved_indexing)(x) for x in xs]
    got = tp.vmap(tp.grad(_nested_while_with_saved_indexing))(xs)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)
    check_grads(_nested_while_with_saved_indexing, (xs[3],), order=1, modes=("rev",))


def test_a_loop_over_a_dict_walks_its_keys_not_its_values():
    """`for k in d` was lowered to d[i] for i in range(len(d)): a dict with keys 0..n-1 gave
    its values where Python gives its keys, a silent wrong answer (found writing tp.lax).
    It was refused; now the loop walks rt.loop_sequence(d), the list of its keys."""
    def f(x, d):
        s = 0.0
        for k in d:
            s = s + k * x
        return s

    d = {0: 10.0, 1: 20.0}
    assert tp.grad(f)(2.0, d) == 1.0
    assert tp.jit(f)(2.0, d) == 2.0
    assert np.allclose(tp.vmap(f, in_axes=(0, None))(np.array([2.0, 3.0]), d), [2.0, 3.0])

    def g(x, d):                   # what the hint says works, and is Python's meaning
        s = 0.0
        for k in list(d):
            s = s + k * x + d[k]
        return s

    assert tp.grad(g)(2.0, d) == 1.0
    assert np.allclose(tp.vmap(g, in_axes=(0, None))(np.array([2.0, 3.0]), d), [32.0, 33.0])


# ---------------------------------------------------------------- globals rebound
# Generated code was cached by the function's code object, so a function defined again
# with the same code (a `def` in a loop, a notebook cell run again) reused code made with
# the global functions of the first definition: the second gradient below was 2, not 3.
# The globals a program was generated from are now checked before its code is reused.

def _double(x):
    return 2.0 * x


def _triple(x):
    return 3.0 * x


_scale = _double


def test_a_function_defined_again_sees_the_globals_it_calls_now():
    global _scale
    got = []
    try:
        for helper in (_double, _triple, _double):
            _scale = helper

            def f(x):
                return np.sum(_scale(x))
            got.append(tp.grad(f)(np.ones(3))[0])
            got.append(tp.jit(f)(np.ones(3)))
    finally:
        _scale = _double
    assert got == [2.0, 6.0, 3.0, 9.0, 2.0, 6.0]


# Values read from globals and from objects were frozen into generated code: a global
# array or number rebound after the first call of the same transformed function, or an
# attribute of a model or config object set by a training loop (`model.w = ...`,
# `cfg.scale = ...`), kept its first value (every gradient below after the first was the
# first one). Globals are now checked on every call (new code when one is rebound), and
# data attributes of objects are read when the code runs.

_weights = np.ones(3)
_factor = 1.0


class _Config:
    pass


_config = _Config()


def _uses_globals(x):
    return np.sum(x * _weights) * _factor + np.sum(x) * _config.scale


def test_globals_and_object_attributes_set_after_the_first_call_are_used():
    global _weights, _factor
    grad, jitted = tp.grad(_uses_globals), tp.jit(tp.grad(_uses_globals))
    x = np.random.randn(3)
    try:
        for k in range(1, 4):
            _weights = np.random.randn(3)
            _factor = float(k)
            _config.scale = 10.0 * k
            want = _weights * _factor + _config.scale
            for _ in range(3):       # jit runs general code first, then specializes
                assert np.allclose(grad(x), want)
                assert np.allclose(jitted(x), want)
            assert np.allclose(tp.vmap(grad)(np.stack([x, x])), [want, want])
    finally:
        _weights, _factor = np.ones(3), 1.0


class _Layer:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.tanh(x * self.w)


class _Model:
    def __init__(self):
        self.layers = [_Layer(0.5), _Layer(2.0)]
        self.bias = 0.1

    def loss(self, x):
        for layer in self.layers:
            x = layer(x)
        return np.sum(x + self.bias) ** 2


def test_a_models_parameters_set_between_calls_are_used():
    model = _Model()
    x = np.random.randn(4)
    grad = tp.grad(model.loss)
    for step in range(3):
        check_grads(model.loss, (x,), order=2, modes=("rev", "fwd"))
        h = np.tanh(x * model.layers[0].w)
        out = np.tanh(h * model.layers[1].w)
        want = 2 * np.sum(out + model.bias) * (1 - out ** 2) * model.layers[1].w * \
            (1 - h ** 2) * model.layers[0].w
        assert np.allclose(grad(x), want)
        model.layers[0].w = 0.3 * step - 0.4         # what an optimizer step does
        model.bias = 0.2 * step
    model.layers.append(_Layer(-1.0))                 # a layer added in place
    extra = tp.grad(model.loss)(x)
    eps = 1e-6
    numeric = [(model.loss(x + eps * e) - model.loss(x - eps * e)) / (2 * eps)
               for e in np.eye(4)]
    assert np.allclose(extra, numeric, atol=1e-5)
    assert np.allclose(grad(x), numeric, atol=1e-5)


# ---------------------------------------------------------------- `+` on lists
# `a + b` on lists whose type the front end could not see (names, results of calls) was
# differentiated as an array sum: the adjoint of the joined list went whole to each part.
# A name bound only to lists joined with a list written as one (`list(...)` of a call) is
# now known to join; where the types stay unknown (two parameters, a name and a call, which
# may be a list plus an array), the derivative refuses instead of splitting it wrongly.

def _pair(y):
    return [y, 2.0 * y]


def test_joining_lists_held_in_names_is_differentiated_as_joining():
    def f(x, y):
        parts = [x]
        parts = parts + list(_pair(y))
        total = 0.0
        for p in parts:
            total = total + np.sum(p * p)
        return total
    x, y = np.random.randn(3), np.random.randn(3)
    check_grads(f, (x, y), order=1, modes=("rev", "fwd"))
    gx, gy = tp.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2 * x)
    np.testing.assert_allclose(gy, 10 * y)


def test_joining_lists_of_unknown_type_refuses():
    def f(a, b):
        joined = a + b
        return np.sum(joined[0]) + 3.0 * np.sum(joined[2])
    a, b = [np.random.randn(2)], [np.random.randn(2), np.random.randn(2)]
    with pytest.raises(TransformError, match="joined a sequence"):
        tp.grad(f)(a, b)


def test_a_list_joined_in_a_loop():
    """`out = out + [v]` in a loop: the aliasing check took the new list for the previous
    trip's and refused."""
    def f(x):
        out = []
        for i in range(3):
            out = out + [x * (i + 1.0)]
        return np.sum(out[0]) + np.sum(out[2] * out[1])
    x = np.random.randn(4)
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))


def test_vmap_refuses_a_dict_out_axes_that_leaves_some_values_unmapped():
    # found by pmap's tests: out_axes={"h": 0, "s": None} returned "s" broadcast to the
    # batch (a dict's spec is one bool), not once
    def f(x):
        return {"h": np.tanh(x), "s": np.sum(x)}
    with pytest.raises(tp.TransformError, match="maps some values of a dict"):
        tp.vmap(f, out_axes={"h": 0, "s": None})(np.ones((3, 2)))


# ---------------------------------------------------------------- axes beyond an example
# Under vmap, a negative per-example axis beyond the example's rank reached the batch axis:
# np.sum(x, axis=-2) of 1-D examples summed over the batch, where numpy raises AxisError
# for every example. Found by the fft rules' author.

def _sum_axis_minus_two(x):
    return np.sum(x, axis=-2)


def _max_axis_minus_two(x, axis):
    return np.max(x, axis=axis)


def _cumsum_axis_minus_two(x):
    return np.cumsum(x, axis=-2)


def _sort_axis_minus_two(x):
    return np.sort(x, axis=-2)


def test_vmap_refuses_a_negative_axis_beyond_the_example():
    xs = np.random.randn(3, 4)
    with pytest.raises(np.exceptions.AxisError):
        tp.vmap(_sum_axis_minus_two)(xs)
    with pytest.raises(np.exceptions.AxisError):
        tp.vmap(_max_axis_minus_two, in_axes=(0, None))(xs, -2)
    for f in (_cumsum_axis_minus_two, _sort_axis_minus_two):      # (rt.lane_flat's check)
        with pytest.raises(np.exceptions.AxisError):
            tp.vmap(f)(xs)
    ys = np.random.randn(3, 4, 5)
    assert np.allclose(tp.vmap(_cumsum_axis_minus_two)(ys), np.cumsum(ys, axis=1))
    assert np.allclose(tp.vmap(_sum_axis_minus_two)(ys), ys.sum(axis=1))
    assert np.allclose(tp.vmap(_max_axis_minus_two, in_axes=(0, None))(ys, -1),
                       ys.max(axis=2))


# ---------------------------------------------------------------- numpy's out argument
# A call writing into an output array (np.sum(a, 0, None, buf), np.exp(x, buf), out=buf)
# was dropped from the gradient as a statement whose result is unused: the gradient (and
# value) used the array as it was before. Found by the shape rules' author. Now refused.

_buffer = np.zeros(3)


def _sum_into_positional(a):
    np.sum(a, 0, None, _buffer)
    return np.sum(_buffer * a[0])


def _sum_into_keyword(a):
    np.sum(a, axis=0, out=_buffer)
    return np.sum(_buffer * a[0])


def _exp_into(a):
    np.exp(a[0], _buffer)
    return np.sum(_buffer * a[0])


@pytest.mark.parametrize("f", [_sum_into_positional, _sum_into_keyword, _exp_into])
def test_writing_into_an_output_array_is_refused(f):
    with pytest.raises(TransformError, match="output array"):
        tp.grad(f)(np.random.randn(2, 3))


def _einsum_of_two(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b))


def test_operands_before_a_keyword_only_out_are_not_taken_for_it():
    # np.einsum(*operands, out=None): its second operand is not an output array
    a, b = np.random.randn(2, 3), np.random.randn(3, 2)
    assert np.allclose(tp.grad(_einsum_of_two)(a, b), np.ones((2, 2)) @ b.T)


# ---------------------------------------------------------------- a global assigned in a branch
# `factor = MAX_FACTOR` (a global number) in one branch and `factor = min(...)` in the other:
# the first assignment made `factor` an alias known while transforming, so every later read
# of it was MAX_FACTOR, whatever branch ran (values and gradients wrong). Found writing
# tp.integrate.odeint's step-size control.

MAX_FACTOR = 10.0
ACTIVATION = np.tanh


def _factor_from_branches(x, r):
    if r == 0.0:
        factor = MAX_FACTOR
    else:
        factor = min(MAX_FACTOR, max(0.2, 0.9 * r ** -0.2))
    return x * factor


def _factor_in_a_loop(x, rs):
    for r in rs:
        if r > 0.5:
            factor = MAX_FACTOR
        else:
            factor = r
        x = np.sin(x) * factor
    return np.sum(x)


def test_a_global_assigned_in_one_branch_is_not_taken_for_the_name():
    for r in (0.0, 0.5, 3.0):
        assert tp.transform(_factor_from_branches)(2.0, r) == _factor_from_branches(2.0, r)
        assert np.isclose(tp.grad(_factor_from_branches)(2.0, r),
                          _factor_from_branches(1.0, r))
    rs = np.array([0.2, 0.9, 0.4])
    check_grads(_factor_in_a_loop, (np.random.randn(3), rs), modes=("fwd", "rev"))
    x = np.random.randn(3)
    assert np.isclose(tp.transform(_factor_in_a_loop)(x, rs), _factor_in_a_loop(x, rs))


def _activation_chosen_by_branch(x, smooth):
    if smooth:
        act = ACTIVATION
    else:
        act = np.abs
    return np.sum(act(x))


def _helper_chosen_by_branch(x, smooth):
    if smooth:
        act = _factor_from_branches
    else:
        act = _factor_in_a_loop
    return act(x, 0.5)


def _lambda_chosen_by_branch(x, c):
    if c > 0:
        act = lambda v: v * 2.0     # noqa: E731 - the form under test
    else:
        act = lambda v: v * 3.0     # noqa: E731
    return act(x)


def _def_chosen_by_branch(x, c):
    if c > 0:
        def act(v):
            return v * 2.0
    else:
        def act(v):
            return v * 3.0
    return act(x)


def _function_rebound_in_branch(x, c):
    act = np.sin
    if c > 0:
        act = np.cos
    return act(x)


@pytest.mark.parametrize("f", [_lambda_chosen_by_branch, _def_chosen_by_branch])
def test_local_functions_chosen_by_branch_are_refused(f):
    # were an IndentationError in generated code (a def or lambda per branch) or the last
    # function for every path
    for c in (1.0, -1.0):
        with pytest.raises(TransformError, match="assigned more than once|function held in "
                                                 "a variable"):
            tp.grad(f)(0.4, c)


def test_a_function_assigned_on_two_paths_is_the_one_of_the_path_taken():
    # (once the last function for every path, silently; then refused; now an `if` over the
    # functions the name may hold)
    for c in (1.0, -1.0):
        assert np.isclose(tp.grad(_function_rebound_in_branch)(0.4, c),
                          -np.sin(0.4) if c > 0 else np.cos(0.4))
    x = np.random.default_rng(48).normal(size=3)
    for smooth in (True, False):
        check_grads(lambda v: _activation_chosen_by_branch(v, smooth), (x,), order=2,
                    modes=("rev", "fwd"))
    f = lambda v: _helper_chosen_by_branch(v, True)   # noqa: E731 (the other path needs a list)
    assert np.isclose(tp.grad(f)(0.3), (f(0.3 + 1e-6) - f(0.3 - 1e-6)) / 2e-6, rtol=1e-5)


# ---------------------------------------------------------------- `u = K; u += v`, K a global array
# Python updates the global array in place (on a later trip of a loop, say); transformed code
# made a new array, so its values differed from the plain call's and the global was left
# alone. Found by the random program generator (seed 282132). Now refused, as writing into
# a global is.

GLOBAL_TABLE = np.linspace(-0.6, 0.8, 2)


def _global_updated_on_a_later_trip(x):
    u = x * 1.0
    for _ in range(2):
        u += np.cos(u)
        u = GLOBAL_TABLE
    return np.sum(u * x)


def _global_updated_through_a_name(x):
    u = GLOBAL_TABLE
    u += 1.0
    return np.sum(u * x)


@pytest.mark.parametrize("f", [_global_updated_on_a_later_trip, _global_updated_through_a_name])
def test_an_in_place_update_of_a_global_array_is_refused(f):
    before = GLOBAL_TABLE.copy()
    # (refused as the function is transformed, or where the write happens on an array)
    with pytest.raises(TransformError, match="an array the caller can see \\(global"):
        tp.transform(f)(np.array([0.5, 0.25]))
    assert np.array_equal(GLOBAL_TABLE, before)


# ------------------------------------------------------------------ one triangle read

def eigh_of_triangle(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w * np.sin(w)) + np.sum(v ** 4 * np.arange(1.0, 5.0))


def eigh_upper(a):
    w, v = np.linalg.eigh(a, "U")
    return np.sum(w ** 3) + np.sum(v ** 4)


def eigvalsh_upper(a):
    return np.sum(np.cos(np.linalg.eigvalsh(a, UPLO="u")))


def cholesky_lower(a):
    return np.sum(np.linalg.cholesky(a) ** 3 * np.arange(16.0).reshape(4, 4))


def cholesky_upper(a):
    return np.sum(np.linalg.cholesky(a, upper=True) ** 3 * np.arange(16.0).reshape(4, 4))


@pytest.mark.parametrize("f", [eigh_of_triangle, eigh_upper, eigvalsh_upper, cholesky_lower,
                               cholesky_upper])
def test_eigh_and_cholesky_differentiate_the_triangle_numpy_reads(f):
    """np.linalg.eigh, eigvalsh and cholesky read one triangle of their argument (mirrored,
    the diagonal's real part): their rules differentiated the symmetrized matrix instead
    (JAX's eigh symmetrizes its input; numpy's does not), so for a matrix that is not
    symmetric every derivative was wrong with no error (found by autograd's own tests,
    which check eigh along non-symmetric directions). cholesky(upper=True) was refused."""
    r = _rng(71)
    a = r.standard_normal((4, 4))
    a = a @ a.T + 4 * np.eye(4) + 0.5 * r.standard_normal((4, 4))   # not symmetric
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), seed=72)
    g = tp.grad(f)(a)
    upper = f in (eigh_upper, eigvalsh_upper, cholesky_upper)
    unread = np.tril(g, -1) if upper else np.triu(g, 1)
    assert np.all(unread == 0.0), "the triangle numpy does not read gets no gradient"


def test_eigh_of_a_complex_matrix_reads_its_triangle():
    r = _rng(73)
    z = r.standard_normal((4, 4)) + 1j * r.standard_normal((4, 4)) + 4 * np.eye(4)

    def f(x, y):
        w, v = np.linalg.eigh(x + 1j * y)
        return np.sum(w ** 3) + np.sum(np.abs(v) ** 4 * np.arange(1.0, 5.0)) + \
            np.sum(np.abs(np.linalg.cholesky(x @ x.T + 1j * (y - y.T) + 9 * np.eye(4))) ** 2)
    check_grads(f, (np.real(z), np.imag(z)), order=2, modes=("fwd", "rev"), seed=74)


def test_a_complex_cotangent_for_a_python_float_argument():
    """vjp of a complex function of a Python float (np.kron(x, y), y complex) crashed in
    as_grad's fast path (`float()` of a 0-d complex array); the gradient is the real part
    of the transposed cotangent, as JAX gives."""
    y = np.array([1 + 2j, 3 - 1j])
    u = np.array([1 + 1j, 2 - 1j])
    _, vjp_fn = tp.vjp(lambda x, y: np.kron(x, y), 0.5, y)
    gx, gy = vjp_fn(u)
    assert type(gx) is float and gx == np.real(np.sum(u * y))
    np.testing.assert_allclose(gy, 0.5 * u)
    _, vjp_fn = tp.vjp(lambda x: x * (1 + 2j), 0.5)
    assert vjp_fn(1 + 1j) == (np.real((1 + 1j) * (1 + 2j)),)


def test_the_gradient_of_a_numpy_scalar_is_one():
    """grad of a function of np.float64 / np.float32 arguments gives numpy scalars of the
    same type (np.float64 gave a Python float, np.float32 a 0-d array)."""
    def f(x, y):
        return x / y
    gx, gy = tp.grad(f, argnums=(0, 1))(np.float64(1.2), np.float64(0.8))
    assert type(gx) is np.float64 and np.isclose(gx, 1 / 0.8)
    assert type(tp.grad(f)(np.float32(1.2), np.float32(0.8))) is np.float32


def _rms(x):
    return np.sqrt(np.mean(x * x))


def scaled_by_a_stopped_norm(x):
    r = tp.stop_gradient(_rms(x * 0.0))
    return np.sum(x) * r + np.sum(np.sin(x))


def test_stop_gradient_of_a_function_with_an_infinite_slope():
    """tp.stop_gradient(g(x)) where g's derivative is infinite at x (sqrt at 0): the zero
    cotangent from stop_gradient still went through g's adjoint, 0 * inf = nan, and the
    gradient was nan (it is cos(x)); tp.odeint's step-size control met it when an error
    estimate was exactly zero (autograd's ode_net example stopped after 7 steps). JAX gives
    cos(x): what stop_gradient alone reads has no adjoint code now."""
    x = _rng(81).normal(size=3)
    with np.errstate(all="raise"):
        np.testing.assert_allclose(tp.grad(scaled_by_a_stopped_norm)(x), np.cos(x))
    assert "_rms_bwd(_rms_saved" not in tp.grad(scaled_by_a_stopped_norm).source


# ------------------------------------------------------------------ closures rebound after transforming

def _scaler_and_setter():
    scale = 2.0

    def scaled(x):
        return scale * x

    def set_scale(value):
        nonlocal scale
        scale = value
    return scaled, set_scale


_scaled, _set_scale = _scaler_and_setter()


def _calls_scaled(x):
    return np.sum(_scaled(x) ** 2)


def test_a_called_closure_whose_cell_is_rebound_gets_new_code():
    """Generated code held the value a called function's closure cell had when it was
    transformed: after `nonlocal scale; scale = 5.0` the same tp.grad returned the old
    gradient (50 expected, 8 returned: a silent wrong answer). Cells are now checked on
    each call, like globals."""
    x = _rng(0).normal(size=3)
    g = tp.grad(_calls_scaled)
    for scale in (2.0, 5.0, -0.5):
        _set_scale(scale)
        np.testing.assert_allclose(g(x), 2 * scale ** 2 * x, rtol=1e-12)
        np.testing.assert_allclose(tp.vmap(_calls_scaled)(np.stack([x, -x])),
                                   [_calls_scaled(x), _calls_scaled(-x)], rtol=1e-12)
    _set_scale(2.0)


def _calls_argument(x, f):
    return np.sum(f(x) ** 2)


def test_a_function_passed_as_an_argument_is_the_one_called():
    """A function passed in is transformed by identity: switching it between calls (or
    rebinding its closure) must change the gradient, never reuse another's code."""
    x = _rng(1).normal(size=4)
    g = tp.grad(_calls_argument)
    np.testing.assert_allclose(g(x, np.tanh), 2 * np.tanh(x) / np.cosh(x) ** 2, rtol=1e-12)
    np.testing.assert_allclose(g(x, np.sin), 2 * np.sin(x) * np.cos(x), rtol=1e-12)
    for scale in (3.0, 0.25):
        _set_scale(scale)
        np.testing.assert_allclose(g(x, _scaled), 2 * scale ** 2 * x, rtol=1e-12)
    _set_scale(2.0)
    np.testing.assert_allclose(g(x, np.tanh), 2 * np.tanh(x) / np.cosh(x) ** 2, rtol=1e-12)


def test_a_cell_rebound_to_an_equal_number_keeps_its_code():
    """The check above compares numbers by value: `scale = 2 * 1.0` computed again each step
    of a training loop must not make new code every call (nor keep the old on a change)."""
    x = _rng(2).normal(size=3)
    g = tp.grad(_calls_scaled)
    _set_scale(float(np.float64(3.0)))
    g(x)
    made = g._generated
    _set_scale(float(np.float64(3.0)))          # an equal float, another object
    np.testing.assert_allclose(g(x), 18.0 * x, rtol=1e-12)
    assert g._generated is made
    _set_scale(3.5)
    np.testing.assert_allclose(g(x), 2 * 3.5 ** 2 * x, rtol=1e-12)
    assert g._generated is not made
    _set_scale(2.0)


@tp.custom_vjp
def _conjugated_square(z):
    return np.abs(z) ** 2


def _conjugated_square_fwd(z):
    return np.abs(z) ** 2, z


def _conjugated_square_bwd(z, g):
    return (2 * g * z,)       # wrong: the convention's gradient is 2 g conj(z)


_conjugated_square.defvjp(_conjugated_square_fwd, _conjugated_square_bwd)


def test_check_grads_tries_the_imaginary_direction_of_complex_inputs():
    """check_grads drew real directions for complex arguments and dropped imaginary parts
    from its inner products, so a conjugated complex gradient passed it."""
    z = np.random.default_rng(6).standard_normal(3) + 0.5j
    with pytest.raises(AssertionError, match="reverse-mode check failed"):
        check_grads(lambda w: np.sum(_conjugated_square(w)), (z,), order=1, modes=("rev",))
    check_grads(lambda w: np.sum(np.abs(w) ** 2 * np.sin(np.real(w))), (z,), order=2,
                modes=("fwd", "rev"))
    check_grads(lambda w: np.exp(w) * w, (z,), order=2, modes=("fwd", "rev"))
    # w.real is np.real(w) (it was refused): JAX's convention, cos(Re w) for d/dRe w
    np.testing.assert_allclose(tp.grad(lambda w: np.sum(np.sin(w.real)))(z), np.cos(z.real),
                               rtol=1e-14)


# ---------------------------------------------------------------- containers of mixed specs
# A tuple whose elements are batched differently (in_axes=((0, None), None), or the tangent
# tuple of `x = a, b` when only a's tangent is batched), indexed by a key that is not a
# literal: the element read was taken as batched whatever it was, so the unbatched one gave
# each example one entry of it (Tangent's passthru_pack, found by running its test functions).

def _pick_sum(p, i):
    return np.sum(p[i])


def _pick_squares(p, i):
    return np.sum(p[i] * p[i])


def _pack_and_pick(a, b, i):
    x = a, b
    return x[i]


def test_a_tuple_of_mixed_specs_indexed_by_an_argument():
    rng = np.random.default_rng()
    ta, tb = rng.normal(size=4), rng.normal(size=4)
    for i in (0, 1):
        got = tp.vmap(_pick_sum, in_axes=((0, None), None))((ta, tb), i)
        np.testing.assert_allclose(got, [_pick_sum((a, tb), i) for a in ta])
        grads = tp.vmap(tp.grad(_pick_squares), in_axes=((0, None), None))((ta, tb), i)
        want = [tp.grad(_pick_squares)((a, tb), i) for a in ta]
        np.testing.assert_allclose(grads[0], [w[0] for w in want])
        np.testing.assert_allclose(grads[1], np.stack([w[1] for w in want]))

    def directional(t, a, b, tb, i):
        return np.sum(tp.jvp(_pack_and_pick, (a, b, i), (t, tb, 0))[1])

    b = rng.normal(size=4)
    got = tp.vmap(directional, in_axes=(0, None, None, None, None))(ta, 1.0, b, tb, 1)
    np.testing.assert_allclose(got, [directional(t, 1.0, b, tb, 1) for t in ta])
    # jacfwd by an argument the element picked does not depend on: zeros, as jacrev
    assert tp.jacfwd(_pack_and_pick, argnums=0)(1.5, 2.5, 1) == 0.0
    np.testing.assert_array_equal(tp.jacfwd(_pack_and_pick, argnums=0)(b[:3], b[1:], 1),
                                  np.zeros((3, 3)))
    np.testing.assert_array_equal(tp.jacfwd(_pack_and_pick, argnums=0)(b[:3], b[1:], 0),
                                  np.eye(3))


# ---------------------------------------------------------------- grad of vmap, paths that
# are not defined for the examples that do not take them. vmap runs each path for every
# example and selects; reverse mode of that code multiplied the paths' partials (nan where
# np.sqrt(a) of a negative a runs for an example that takes the other path) by the zero
# adjoints of those examples: 0 * nan gave nan in every example (Tangent's numpy_sqrt and
# gradgrad_pow). The paths' reads now go through rt.lane_guard, whose adjoint is kept in
# the path's examples only.

def _sqrt_either_side(a):
    if a >= 0:
        r = np.sqrt(a)
    else:
        r = np.sqrt(-a)
    return r


def _power_either_side(a, b):
    if a >= 0:
        a = a ** b
    else:
        a = (-a) ** b
    return a


def _shrink_until_small(x):
    while x > 0.3:
        x = np.sqrt(x) - 0.6           # negative for the examples that are done
    return x * 2.0


def test_grad_of_vmap_through_paths_undefined_elsewhere():
    rng = np.random.default_rng()
    a = np.concatenate([-rng.uniform(0.2, 2.0, 3), rng.uniform(0.2, 2.0, 3)])
    b = rng.uniform(0.3, 1.7, 6)
    x = np.concatenate([rng.uniform(0.05, 0.25, 2), rng.uniform(0.5, 8.0, 4)])
    cases = [(_sqrt_either_side, (a,)), (_power_either_side, (a, b)),
             (_shrink_until_small, (x,))]
    totals = {1: lambda fn: (lambda a: np.sum(tp.vmap(fn)(a))),
              2: lambda fn: (lambda a, b: np.sum(tp.vmap(fn)(a, b)))}
    for fn, args in cases:
        argnums = tuple(range(len(args)))
        total = totals[len(args)](fn)

        want = [tp.grad(fn, argnums=argnums)(*(float(v[i]) for v in args))
                for i in range(len(args[0]))]
        for got in (tp.grad(total, argnums=argnums)(*args),
                    tp.jit(tp.grad(total, argnums=argnums))(*args),
                    tp.vjp(tp.vmap(fn), *args)[1](np.ones(len(args[0])))):
            for k in argnums:
                np.testing.assert_allclose(got[k], [w[k] for w in want], rtol=1e-12)
        per_example = tp.vmap(tp.grad(fn, argnums=argnums))(*args)
        for k in argnums:
            np.testing.assert_allclose(per_example[k], [w[k] for w in want], rtol=1e-12)


def _scaled_sqrt_either_side(w, a):
    if a >= 0:
        r = w * np.sqrt(a)
    else:
        r = w * np.sqrt(-a)
    return r


def _shrink_scaled_until_small(w, x):
    while x > 0.3:
        x = w * np.log(x)              # nan for the examples that are done
    return x


def test_grad_of_vmap_by_a_weight_shared_by_paths_undefined_elsewhere():
    """The weight's gradient sums over every example, the ones that take the other path
    included: their nan partials reached it (nan, with the per-example gradients right)
    until each example outside a path reads the values of one inside it."""
    rng = np.random.default_rng()
    w = rng.uniform(0.4, 0.9)
    a = np.concatenate([-rng.uniform(0.2, 2.0, 3), rng.uniform(0.2, 2.0, 3)])
    x = np.concatenate([rng.uniform(0.05, 0.25, 2), rng.uniform(1.5, 30.0, 4)])
    for fn, batch in ((_scaled_sqrt_either_side, a), (_shrink_scaled_until_small, x)):
        batched = tp.vmap(fn, in_axes=(None, 0))

        def total(w, batch):
            return np.sum(batched(w, batch))
        want = [tp.grad(fn, argnums=(0, 1))(w, float(v)) for v in batch]
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # and no nan computed on the way
            for got in (tp.grad(total, argnums=(0, 1))(w, batch),
                        tp.jit(tp.grad(total, argnums=(0, 1)))(w, batch)):
                np.testing.assert_allclose(got[0], sum(g[0] for g in want), rtol=1e-12)
                np.testing.assert_allclose(got[1], [g[1] for g in want], rtol=1e-12)
            np.testing.assert_allclose(
                tp.vmap(fn, in_axes=(None, 0))(w, batch), [fn(w, v) for v in batch],
                rtol=1e-14)
            # forward mode reads the paths' values so too (no nan computed, no warning)
            tangent = tp.jvp(batched, (w, batch), (1.0, np.zeros_like(batch)))[1]
            np.testing.assert_allclose(tangent, [g[0] for g in want], rtol=1e-12)


def _swap_two_elements(x):
    x = x.copy()
    x[0], x[1] = x[1], x[0]
    return x * np.arange(1.0, 4.0)


def test_a_tuple_assignment_writing_into_what_its_values_read():
    """`x[0], x[1] = x[1], x[0]` must not be split pair by pair (x[1] would read the new
    x[0]: [2, 4, 9] for numpy's [2, 2, 9]); it reads its values first, and the aliasing
    check then refuses what it cannot prove (for rows of a 2-d x, numpy's own answer keeps
    one row twice)."""
    x = _rng(5).normal(size=3)
    for transform in (tp.jit, tp.vmap, tp.jacrev):
        arg = np.stack([x, x]) if transform is tp.vmap else x
        try:
            got = transform(_swap_two_elements)(arg)
        except tp.TransformError as error:
            assert "[aliasing]" in str(error)
            continue
        want = np.stack([_swap_two_elements(v) for v in arg]) if transform is tp.vmap else \
            _swap_two_elements(x) if transform is tp.jit else None
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-15)


def _share_of_the_total(x):
    return x / tp.psum(x, "i")


def _share_where_positive(x):
    if x > 0:
        y = x / tp.psum(x, "i")
    else:
        y = np.sqrt(-x)
    return y


def _share_through_a_helper(x):
    if x > 0:
        y = _share_of_the_total(x)
    else:
        y = x * 2.0
    return y


def test_a_collective_inside_a_path_that_differs_between_examples():
    """psum inside a batched `if` sums every example's own value (JAX's select of both
    branches). The guards of such paths changed that: grad of vmap kept the adjoint from
    the examples on the path only (wrong in the others, before this session), and the
    borrowed values (rt.lane_borrow) changed the sum itself in grad and jvp. A path that
    mixes the examples (a collective, in it or in a function it calls) is not guarded."""
    rng = np.random.default_rng()
    x = np.concatenate([rng.uniform(0.5, 2.0, 3), -rng.uniform(0.5, 2.0, 3)])
    rng.shuffle(x)
    weights = rng.normal(size=6)
    total = x.sum()
    references = {_share_where_positive: np.where(x > 0, x / total, np.sqrt(np.abs(x))),
                  _share_through_a_helper: np.where(x > 0, x / total, 2.0 * x)}
    for fn, want in references.items():
        batched = tp.vmap(fn, axis_name="i")
        np.testing.assert_allclose(batched(x), want, rtol=1e-14)

        def weighted(x, batched=batched):
            return np.sum(batched(x) * weights)
        check_grads(weighted, (x,), order=1, modes=("fwd", "rev"))
        np.testing.assert_allclose(tp.jit(tp.grad(weighted))(x), tp.grad(weighted)(x),
                                   rtol=1e-14)


def test_grad_of_vmap_of_vmap_where_an_outer_example_takes_one_path_only():
    """Under vmap of vmap an outer example none of whose examples takes a path had nothing
    to borrow: its own values (np.sqrt of negatives) gave the gradient of its weight nan.
    It borrows the batch's first example that takes the path."""
    rng = np.random.default_rng()
    a = rng.normal(size=(3, 4))
    a[1] = np.abs(a[1]) + 0.1            # every example of the second takes `a >= 0`
    a[2] = -np.abs(a[2]) - 0.1           # every example of the third the other path
    a[0, :2], a[0, 2:] = np.abs(a[0, :2]), -np.abs(a[0, 2:])
    w = rng.uniform(0.5, 1.5, size=3)
    twice = tp.vmap(tp.vmap(_scaled_sqrt_either_side, in_axes=(None, 0)), in_axes=(0, 0))

    def total(w, a):
        return np.sum(twice(w, a))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got_w, got_a = tp.grad(total, argnums=(0, 1))(w, a)
        tangent = tp.jvp(total, (w, a), (np.ones(3), np.zeros_like(a)))[1]
    per = [[tp.grad(_scaled_sqrt_either_side, argnums=(0, 1))(w[i], a[i, j])
            for j in range(4)] for i in range(3)]
    np.testing.assert_allclose(got_w, [sum(g[0] for g in row) for row in per], rtol=1e-12)
    np.testing.assert_allclose(got_a, [[g[1] for g in row] for row in per], rtol=1e-12)
    np.testing.assert_allclose(tangent, sum(g[0] for row in per for g in row), rtol=1e-12)


# ---------------------------------------------------------------- isinstance and type of
# registered classes. Transformed code holds an object of a registered dataclass or pytree
# node as its stand-in, so `isinstance(p, Params)` and `type(p) is Params` were False there:
# the gradient of `np.sum(p.w * x) if isinstance(p, Params) else 0.0` was zero.

@tp.tree_util.register_dataclass
@dataclasses.dataclass
class _Params:
    w: np.ndarray


class _Node:
    def __init__(self, a):
        self.a = a


tp.tree_util.register_pytree_node(_Node, lambda n: ((n.a,), None), lambda _, ch: _Node(*ch))


def _by_isinstance(p, x):
    if isinstance(p, (float, _Params)):
        return np.sum(np.sin(p.w * x))
    return np.sum(x)


def _by_type(p, x):
    if type(p) is _Params:
        return np.sum(np.sin(p.w * x))
    return np.sum(x)


def _node_by_type(n, x):
    if type(n) == _Node and isinstance(n, _Node):
        return np.sum(np.sin(n.a * x))
    return np.sum(x)


@pytest.mark.parametrize("f", [_by_isinstance, _by_type])
def test_isinstance_and_type_of_a_registered_class_in_transformed_code(f):
    rng = np.random.default_rng(5)
    p, x = _Params(rng.normal(size=3)), rng.normal(size=3)
    expected = np.cos(p.w * x) * x
    np.testing.assert_allclose(tp.grad(f)(p, x).w, expected, rtol=1e-14)
    np.testing.assert_allclose(tp.jit(tp.grad(f))(p, x).w, expected, rtol=1e-14)
    xs = rng.normal(size=(4, 3))
    np.testing.assert_allclose(tp.vmap(tp.grad(f), in_axes=(None, 0))(p, xs).w,
                               np.cos(p.w * xs) * xs, rtol=1e-14)
    np.testing.assert_allclose(tp.jvp(f, (p, x), (_Params(np.ones(3)), np.zeros(3)))[1],
                               np.sum(expected), rtol=1e-14)


def test_isinstance_and_type_of_a_registered_pytree_node_in_transformed_code():
    rng = np.random.default_rng(6)
    n, x = _Node(rng.normal(size=3)), rng.normal(size=3)
    np.testing.assert_allclose(tp.grad(_node_by_type)(n, x).a, np.cos(n.a * x) * x, rtol=1e-14)


# ---------------------------------------------------------------- a cast to integers or bools
# (JAX's test_jvp_of_convert_element_type): `x.astype(int)` passed x's derivative through as
# if it were the identity. It is piecewise constant: its derivative is zero.

def _times_floor(x):
    return np.sum(x.astype(int) * x ** 2)


def _plus_nonzero(x):
    return np.sum(x.astype(bool) * np.sin(x) + x.astype(np.float64) * x)


def test_derivatives_through_a_cast_to_integers_are_zero():
    rng = np.random.default_rng(7)
    x = rng.uniform(0.2, 5.0, size=4)
    x[1] = -x[1]
    np.testing.assert_allclose(tp.grad(_times_floor)(x), 2 * np.trunc(x) * x, rtol=1e-14)
    np.testing.assert_allclose(tp.hessian(_times_floor)(x), np.diag(2 * np.trunc(x)),
                               rtol=1e-14)
    np.testing.assert_allclose(tp.jvp(_times_floor, (x,), (np.ones(4),))[1],
                               np.sum(2 * np.trunc(x) * x), rtol=1e-14)
    xs = rng.uniform(0.2, 5.0, size=(3, 4))
    np.testing.assert_allclose(tp.vmap(tp.grad(_times_floor))(xs), 2 * np.trunc(xs) * xs,
                               rtol=1e-14)
    check_grads(_plus_nonzero, (x,), order=2, modes=("fwd", "rev"))


# ---------------------------------------------------------------- negative argnums with
# defaults (JAX's api_test): argnums=-1 counted from the end of the signature, defaults
# included, so `grad(f, argnums=-1)(x, y)` of `f(x, y, scale=2.0)` gave d/dscale. JAX counts
# from the last positional argument passed.

def _sin_times_y(x, y, scale=2.0):
    return np.sin(x) * y * scale


def test_negative_argnums_count_from_the_arguments_passed():
    x, y = 0.7, -1.3
    assert tp.grad(_sin_times_y, argnums=-1)(x, y) == pytest.approx(np.sin(x) * 2.0, rel=1e-15)
    assert tp.grad(_sin_times_y, argnums=-1)(x, y, 0.5) == pytest.approx(np.sin(x) * y, rel=1e-15)
    value, (gx, gy) = tp.value_and_grad(_sin_times_y, argnums=(-2, -1))(x, y)
    assert (gx, gy) == pytest.approx((np.cos(x) * y * 2.0, np.sin(x) * 2.0), rel=1e-15)
    with pytest.raises(tp.TransformError, match="counts back from the last positional"):
        tp.vmap(tp.grad(_sin_times_y, argnums=-1))(np.array([x, y]), np.array([y, x]))
    with pytest.raises(tp.TransformError, match="counts back from the last positional"):
        tp.jacrev(_sin_times_y, argnums=-1)


def test_jacobians_keep_defaults_and_partial_keywords():
    x, y = 0.7, -1.3
    for jac in (tp.jacrev, tp.jacfwd):
        assert jac(_sin_times_y)(x, y) == pytest.approx(np.cos(x) * y * 2.0, rel=1e-15)
        assert jac(_sin_times_y)(x, y, 0.5) == pytest.approx(np.cos(x) * y * 0.5, rel=1e-15)
    assert tp.hessian(_sin_times_y)(x, y) == pytest.approx(-np.sin(x) * y * 2.0, rel=1e-15)
    w = np.array([1.5, -0.5])
    at = np.array([0.1, 0.2])
    np.testing.assert_allclose(tp.jacrev(functools.partial(_sin_times_y, y=w))(at),
                               np.diag(np.cos(at) * w * 2.0), rtol=1e-15)


# ---------------------------------------------------------------- decorators made with
# functools.wraps (jax-md's cutoff wrappers): inspect follows `__wrapped__`, so the wrapped
# function's source was transformed in place of the wrapper's: tp.jit(w)(x) gave sin(x) for
# 10 * sin(x), silently

def _sine(x):
    return np.sin(x)


def _times_ten(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 10.0 * fn(x)
    return wrapper


def _doubled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 2.0
    return wrapper


@_doubled
def _product(x, y=1.0):
    return x * y


def test_a_function_wrapped_by_a_decorator_is_the_wrapper():
    w = _times_ten(_sine)
    x = np.array([0.3, 1.2])
    np.testing.assert_allclose(tp.jit(w)(x), 10.0 * np.sin(x), rtol=1e-15)
    np.testing.assert_allclose(tp.vmap(w)(x), 10.0 * np.sin(x), rtol=1e-15)
    np.testing.assert_allclose(tp.grad(lambda v: np.sum(w(v)))(x), 10.0 * np.cos(x),
                               rtol=1e-15)
    assert tp.grad(_product)(2.0) == 2.0
    assert tp.grad(_product, argnums=1)(2.0, 3.0) == 4.0
    assert tp.grad(lambda v: _product(v, 3.0))(2.0) == 6.0


# ---------------------------------------------------------------- dict(d) of a dict (jax-md's
# merge_dicts): read as dict(pairs), it unpacked each key: keys that are pairs gave a wrong
# dict silently ({(2.0, 4.0): 3.0} became {2.0: 4.0})

def _copies_dicts(x):
    z = {k: v for k, v in dict(zip(["a"], [x])).items()}     # (seed 65003: a name unbound)
    d = dict({(2.0, 4.0): 3.0}) if z else {}
    e = dict({"a": x, "b": 2.0 * x})
    p = dict([("c", x * x), ("d", 1.0)])
    return np.sum(x * sum(d.values())) + np.sum(e["b"] + p["c"])


def test_dict_of_a_dict_copies_it():
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(tp.grad(_copies_dicts)(x), 5.0 + 2.0 * x, rtol=1e-15)
    np.testing.assert_allclose(tp.vmap(_copies_dicts)(np.stack([x, 2 * x])),
                               [_copies_dicts(x), _copies_dicts(2 * x)], rtol=1e-15)


# ---------------------------------------------------------------- a write into an array whose
# view vmapped code had lined up with another value (generator, seed 65085): rt.align_lanes
# passed the view on unchanged, the reverse pass did not know it shares memory with `u`, kept
# the write in place and read the overwritten view in the backward pass

def _scaled_tail(x):
    u = np.concatenate([np.linspace(0.6, 0.8, 1), np.linspace(0.6, 0.8, 2)])
    u[1:] *= np.sum(x[1:2], axis=1)
    return np.sum(u * x[0, 0])


def test_a_write_into_an_array_seen_through_a_batching_helper():
    x = _rng(65085).normal(size=(3, 4, 2))

    def summed(xs):
        return np.sum(tp.vmap(_scaled_tail)(xs))

    expected = np.stack([tp.grad(_scaled_tail)(row) for row in x])
    check_grads(_scaled_tail, (x[0],), order=2, modes=("rev", "fwd"))
    np.testing.assert_allclose(tp.grad(summed)(x), expected, rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(tp.grad(_scaled_tail))(x), expected, rtol=1e-12)
    check_grads(summed, (x,), order=2, modes=("rev", "fwd"))


# ---------------------------------------------------------------- a namedtuple with a field
# named like an array attribute (`Cfg(size=..., T=...)`): transformed code reads `x.size` as
# np.size(x), which read the namedtuple as an array: a wrong number, silently

_Cfg = collections.namedtuple("_Cfg", ["size", "T", "lr"])
_WeightsBias = collections.namedtuple("_WeightsBias", ["w", "b"])
_CONSTANT_CFG = _Cfg(2.0, 0.5, 0.1)


def _reads_fields(x, cfg):
    return np.sum(x * cfg.size) + cfg.T * np.sum(x)


def _makes_a_clash(x):
    c = _Cfg(size=x[0], T=1.0, lr=0.1)
    return np.sum(c.size * x) + x.size


def _reads_a_constant(x, p):
    return np.sum(np.tanh(x @ p.w + p.b)) * x.shape[0] + _CONSTANT_CFG.size * np.sum(x.T)


def test_a_namedtuple_field_named_like_an_array_attribute_is_refused():
    x = _rng(34).normal(size=3)
    cfg = _Cfg(2.0, 0.5, 0.1)            # all numbers: np.size(cfg) was 3, silently
    for transform in (tp.jit, tp.grad, tp.transform):
        with pytest.raises(TransformError, match="has a field 'T'"):
            transform(_reads_fields)(x, cfg)
    with pytest.raises(TransformError, match="has a field 'T'"):
        tp.vmap(_reads_fields, (0, None))(np.stack([x, x]), cfg)
    with pytest.raises(TransformError, match="has a field 'size'"):
        tp.grad(_makes_a_clash)(x)
    # other namedtuples, and a namedtuple constant's fields (read by name), are as before
    xs, p = _rng(35).normal(size=(3, 2)), _WeightsBias(_rng(36).normal(size=(2, 2)), np.ones(2))
    assert tp.jit(_reads_a_constant)(xs, p) == pytest.approx(_reads_a_constant(xs, p))
    check_grads(_reads_a_constant, (xs, p), order=1)


# ---------------------------------------------------------------- np.diag of a matrix is a
# read-only view of it: a write into the matrix changes it, which the derivative did not
# follow (it took np.diag for a new array); a write into np.diag(v) of a vector is fine

def _diagonal_then_write(x):
    a = x * 2.0
    d = np.diag(a)
    a += x
    return np.sum(np.sin(d)) + np.sum(a * x)


def _tridiagonal(d, e):
    a = np.diag(d)
    a[np.arange(2), np.arange(1, 3)] = e
    return np.sum(a @ a) + np.sum(d)


def test_np_diag_of_a_matrix_sees_writes_into_it():
    with pytest.raises(TransformError, match="updates it in place"):
        tp.grad(_diagonal_then_write)(_rng(39).normal(size=(3, 3)))
    d, e = _rng(40).normal(size=3), _rng(41).normal(size=2)
    check_grads(_tridiagonal, (d, e), order=2, modes=("rev", "fwd"))


# ---------------------------------------------------------------- np.cumprod at zeros (JAX's
# lax_numpy_test grid, ported by a helper): both rules divided by the input, nan where it is
# 0 (the gradient of sum(cumprod([1, 0, 2])) is [1, 3, 0]); second derivatives with one or
# two zeros along the axis hold too

def _cumprod_weighted(x, w, axis):
    return np.sum(np.cumprod(x, axis) * w)


@pytest.mark.parametrize("x, axis", [
    (np.array([1.0, 0.0, 2.0]), None),
    (np.array([1.5, 0.0, 2.0, 0.0, 3.0]), 0),
    (np.array([[1.5, 0.0, 2.0], [0.0, 2.0, 3.0], [1.0, 2.0, 0.5]]), 1),
    (np.array([[1.5, 0.0], [2.0, 0.0]]), None),
    (np.array([0.0, 0.0, 2.0, 0.0]), 0)])
def test_cumprod_derivatives_at_zeros(x, axis):
    w = _rng(42).normal(size=np.shape(np.cumprod(x, axis)))
    n = x.size

    def exact_grad(x):          # sum over j >= i of w_j * prod_{k <= j, k != i} x_k
        flat, ww = np.ravel(x) if axis is None else x, np.ravel(w) if axis is None else w
        lanes = flat.reshape(-1, flat.shape[-1]) if axis in (None, -1, flat.ndim - 1) else None
        if lanes is None:
            return None
        out = np.zeros_like(lanes)
        for r, (lane, wl) in enumerate(zip(lanes, ww.reshape(lanes.shape))):
            for i in range(lane.size):
                for j in range(i, lane.size):
                    out[r, i] += wl[j] * np.prod(np.delete(lane[:j + 1], i))
        return out.reshape(np.shape(x))
    g = tp.grad(_cumprod_weighted)(x, w, axis)
    expected = exact_grad(x)
    if expected is not None:
        np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-12)
    assert np.all(np.isfinite(g))
    t = tp.jvp(lambda v: _cumprod_weighted(v, w, axis), (x,), (np.ones_like(x),))[1]
    assert np.isclose(t, np.sum(g))
    # f is a polynomial: its Hessian by central differences of the exact-in-floats gradient
    h = tp.hessian(_cumprod_weighted)(x, w, axis).reshape(n, n)
    eps, fd = 1e-6, np.zeros((n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = eps
        fd[:, k] = np.ravel(tp.grad(_cumprod_weighted)(x + e.reshape(x.shape), w, axis) -
                            tp.grad(_cumprod_weighted)(x - e.reshape(x.shape), w, axis)) / (2 * eps)
    np.testing.assert_allclose(h, fd, atol=1e-6)
    np.testing.assert_allclose(tp.jacrev(tp.jacfwd(_cumprod_weighted))(x, w, axis).reshape(n, n),
                               fd, atol=1e-6)


# ---------------------------------------------------------------- np.pad's forward rule padded
# the tangent with the same mode: right where the padding is linear in the array, wrong for
# maximum/minimum/median (the maximum of the tangent, not the tangent at the maximum); and
# vmap of per-axis constant_values pairs crashed

def _pad_maximum(x):
    return np.pad(x, ((1, 0), (0, 0)), mode="maximum")


def _pad_linear_modes(x):
    return sum(np.sum(np.pad(x, ((1, 2), (2, 1)), mode=m) ** 2)
               for m in ("edge", "wrap", "reflect", "symmetric", "mean", "linear_ramp"))


def _pad_pairs(x):
    return np.pad(x, ((1, 0), (0, 1)), constant_values=((1.5, -2.0), (0.5, 3.0)))


def test_pad_tangents_and_per_axis_constants():
    x = _rng(43).normal(size=(3, 4))
    with pytest.raises(TransformError, match="no forward-mode rule"):
        tp.jvp(_pad_maximum, (x,), (x,))
    check_grads(_pad_linear_modes, (x,), order=1, modes=("fwd",))
    xs = _rng(44).normal(size=(3, 2, 2))
    np.testing.assert_array_equal(tp.vmap(_pad_pairs)(xs), [_pad_pairs(v) for v in xs])


def _copying_pads(x):
    return (np.sum(np.sin(np.pad(x, ((1, 2), (2, 1)), mode="edge"))) +
            np.sum(np.pad(x, 2, mode="wrap") ** 2) +
            np.sum(np.cos(np.pad(x, ((2, 1), (1, 3)), mode="reflect"))) +
            np.sum(np.pad(x, (1, 3), mode="symmetric") ** 3) + np.sum(np.pad(x, 1) * 2))


def test_pad_modes_that_copy_elements_in_reverse_mode():
    """(refused before: reverse mode took mode='constant' only) each copy's adjoint is added
    back to the element it copies; second order too, and under vmap."""
    x = _rng(45).normal(size=(3, 4))
    check_grads(_copying_pads, (x,), order=2, modes=("rev", "fwd"))
    xs = _rng(46).normal(size=(2, 3, 4))
    grad = tp.grad(_copying_pads)
    np.testing.assert_allclose(tp.vmap(grad)(xs), [grad(v) for v in xs], rtol=1e-12)


# ---------------------------------------------------------------- a comprehension's loop
# variables are its own (Python 3): lowered to a loop in the function, a target the function
# also names overwrote it (generator seed 70341: `a, b = b, a` then `sum(a * b for a, b in
# zip(hs, reversed(hs)))`, then `helper(b)` read the loop's last b; also before this session)

def _comprehension_scopes(x):
    a = x * 2.0
    s = sum(a * 3.0 for a in [x, x + 1.0])
    t = [a for a in [x * 5.0]]
    d = {a: 1.0 for a in ["k"]}
    pairs = [(a, b) for a in [x] for b in [a * 2.0]]
    return np.sum(a) + np.sum(s) + np.sum(t[0]) * d["k"] + np.sum(pairs[0][1])


def test_comprehension_variables_do_not_leak():
    x = np.array([0.5, 1.5])
    assert tp.jit(_comprehension_scopes)(x) == pytest.approx(_comprehension_scopes(x))
    np.testing.assert_allclose(tp.grad(_comprehension_scopes)(x), [15.0, 15.0], rtol=1e-15)
    np.testing.assert_allclose(tp.vmap(_comprehension_scopes)(np.stack([x, 2 * x])),
                               [_comprehension_scopes(x), _comprehension_scopes(2 * x)])


def test_jvp_of_python_floats_at_singular_points():
    """tp.jvp(np.log, (0.,), (1.,)) divided Python floats in the derivative code and raised
    ZeroDivisionError (JAX's FAQ, `my_log`); numpy's scalars give numpy's inf, as grad does."""
    with np.errstate(divide="ignore", invalid="ignore"):
        assert tp.jvp(np.log, (0.0,), (1.0,)) == (-np.inf, np.inf)
        assert tp.jvp(np.log1p, (-1.0,), (2.0,)) == (-np.inf, np.inf)
        assert tp.linearize(np.log, 0.0)[1](1.0) == np.inf
    out, tangent = tp.jvp(lambda z: z * z, (1.0 + 2.0j,), (1j,))
    assert out == (1.0 + 2.0j) ** 2 and tangent == 2 * (1.0 + 2.0j) * 1j


def _filled(z):
    rho = np.empty((2, z.size))
    rho[0] = z ** 2
    rho[1] = 2 * z
    return rho


def _scaled_first_row(z):
    rho = _filled(z)          # scipy's least_squares: rho = loss(z); rho[0] *= f_scale**2
    rho[0] *= 3.0
    return rho[0]


def _same_twice(x):
    a = x * 1.0
    return a, a


def _with_a_view(x):
    a = x * 1.0
    return a, a[1:]


def _write_through_first(x):
    p, q = _same_twice(x)
    p[0] = 5.0
    return np.sum(q * x)


def _write_through_second(x):
    p, q = _with_a_view(x)
    q[0] = 9.0
    return np.sum(p * x)


def test_elements_of_a_returned_tuple_are_told_apart():
    """`rho, rho_dot = fill_jvp(z, z_dot)` in jvp's code read both names as possibly one
    array (the elements of a call's tuple were not told apart), so jacfwd and hessian of a
    function writing into a helper's fresh result were refused. The callee's summary now
    says, per element, which others it may share memory with."""
    z = _rng(14).normal(size=3)
    expected = np.diag(6.0 * z)
    for jacobian in (tp.jacfwd, tp.jacrev):
        np.testing.assert_allclose(jacobian(_scaled_first_row)(z), expected, rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(lambda t: tp.jvp(_scaled_first_row, (z,), (t,))[1])(
        np.eye(3)), expected, rtol=1e-12)
    t = z[:2]

    def helper_outer(v):
        return np.outer(v, v)

    def filled_diagonal(v):       # sklearn's GP kernels: K = squareform(...); fill_diagonal
        k = helper_outer(v)
        np.fill_diagonal(k, 1.0)
        return np.sum(k ** 2 * v[0])
    np.testing.assert_allclose(tp.hessian(filled_diagonal)(t),
                               tp.jacfwd(tp.jacrev(filled_diagonal))(t), rtol=1e-12)
    check_grads(filled_diagonal, (t,), order=2, modes=("fwd", "rev"))
    for f in (_write_through_first, _write_through_second):     # elements that do share
        with pytest.raises(TransformError, match=r"\[aliasing\]"):
            tp.grad(f)(z)


def _rk_like_steps(a):
    out = []
    for s, (x, c) in enumerate(zip(a, [10.0, 20.0]), start=1):   # scipy's rk_step
        out.append(s * 100.0 + x * c)
    total = 0.0
    for k, x in enumerate(a, start=3):
        total = total + k * x
    return np.array(out) * total


def test_enumerate_start_given_by_keyword():
    """`for s, (a, c) in enumerate(zip(A, C), start=1)` ignored start= (s counted from 0:
    scipy's rk_step, so every RK45 step, was silently wrong); `enumerate(xs, start=3)` was
    refused."""
    a = _rng(15).normal(size=2)
    np.testing.assert_allclose(tp.jit(_rk_like_steps)(a), _rk_like_steps(a), rtol=1e-12)
    check_grads(_rk_like_steps, (a,), order=2, modes=("fwd", "rev"))
    rows = _rng(16).normal(size=(3, 2))
    np.testing.assert_allclose(tp.vmap(_rk_like_steps)(rows), [_rk_like_steps(r) for r in rows],
                               rtol=1e-12)
