"""The Python that real programs are written in (issue 13, part 2): NumPy functions as
transformation targets, autograd's elementwise_grad, holomorphic gradients, *args/**kwargs
and keyword-only parameters, assert/raise, random draws from numpy generators, and code that
cannot be transformed in a branch that does not run."""
import dataclasses
import functools
import operator
import typing
import warnings

import numpy as np
import pytest

import transpile as tp
from transpile.test_util import check_grads


@pytest.fixture
def rng():
    return np.random.default_rng()


# ---------------------------------------------------------------- numpy functions as targets

def test_grad_and_vmap_of_numpy_functions(rng):
    x = rng.normal()
    assert np.isclose(tp.grad(np.sin)(x), np.cos(x))
    assert np.isclose(tp.grad(tp.grad(np.tanh))(x), -2 * np.tanh(x) / np.cosh(x) ** 2)
    a = rng.normal(size=(5, 3, 3))
    assert np.allclose(tp.vmap(np.linalg.det)(a), [np.linalg.det(m) for m in a])
    b = rng.normal(size=(3, 3, 4))
    assert np.allclose(tp.vmap(np.linalg.det, in_axes=2)(b),
                       [np.linalg.det(b[:, :, k]) for k in range(4)])
    m = rng.normal(size=(3, 3))
    assert np.allclose(tp.grad(np.linalg.det)(m), np.linalg.det(m) * np.linalg.inv(m).T)
    v = rng.normal(size=4)
    assert np.allclose(tp.grad(np.sum)(v), np.ones(4))
    # keyword arguments bind by NumPy's names
    y = rng.normal(size=(2, 3))
    assert np.allclose(tp.vmap(np.sum)(y), y.sum(axis=1))
    out, tangent = tp.jvp(np.exp, (v,), (v,))
    assert np.allclose(tangent, np.exp(v) * v)
    assert np.allclose(tp.jit(np.cos)(v), np.cos(v))


def test_a_function_without_a_rule_is_still_refused_clearly():
    with pytest.raises(TypeError, match="transforms Python functions"):
        tp.grad(np.ldexp)


def test_elementwise_grad_matches_autograd_tanh_example():
    x = np.linspace(-7, 7, 31)
    d = tp.elementwise_grad
    sech2 = 1 / np.cosh(x) ** 2
    assert np.allclose(d(np.tanh)(x), sech2)
    assert np.allclose(d(d(np.tanh))(x), -2 * np.tanh(x) * sech2)
    assert np.allclose(d(d(d(np.tanh)))(x), 4 * np.tanh(x) ** 2 * sech2 - 2 * sech2 ** 2)

    def f(x, y):
        return x * np.sin(y)

    y = np.linspace(0.1, 2, 31)
    assert np.allclose(d(f, 1)(x, y), x * np.cos(y))


# ---------------------------------------------------------------- holomorphic

def test_holomorphic_grad_is_the_complex_derivative(rng):
    z = rng.normal(size=3) + 1j * rng.normal(size=3)

    def f(z):
        return np.sum(z * z * np.exp(z))

    assert np.allclose(tp.grad(f, holomorphic=True)(z), (2 * z + z * z) * np.exp(z))
    value, g = tp.value_and_grad(f, holomorphic=True)(z)
    assert np.isclose(value, f(z)) and np.allclose(g, (2 * z + z * z) * np.exp(z))
    cube = tp.grad(tp.grad(lambda w: w * w * w, holomorphic=True), holomorphic=True)
    assert np.isclose(cube(z[0]), 6 * z[0])
    per_example = tp.vmap(tp.grad(lambda w: np.sum(w * np.sin(w)), holomorphic=True))
    assert np.allclose(per_example(z[:, None])[:, 0], np.sin(z) + z * np.cos(z))


def test_holomorphic_needs_complex_inputs_and_outputs(rng):
    z = rng.normal(size=2) + 1j * rng.normal(size=2)
    with pytest.raises(tp.TransformError, match="holomorphic=True but holds"):
        tp.grad(lambda w: np.sum(w * w), holomorphic=True)(np.real(z))
    with pytest.raises(tp.TransformError, match="returned a real number"):
        tp.grad(lambda w: np.sum(np.abs(w)), holomorphic=True)(z)
    with pytest.raises(tp.TransformError, match="holomorphic=True for a holomorphic"):
        tp.grad(lambda w: np.sum(w * w))(z)


# ---------------------------------------------------------------- *args, **kwargs, keyword-only

def _total(*terms, scale=1.0, **weights):
    out = 0.0
    for t in terms:
        out = out + np.sum(t * t)
    for k in list(weights):
        out = out + weights[k] * scale
    return out * scale


def _uses_total(x, y):
    return _total(x, np.sin(y), x * y, scale=2.0, a=np.sum(x), b=np.sum(y ** 3))


def _first(*args):
    return args[0] * len(args)


def test_callees_with_args_kwargs_and_keyword_only_parameters(rng):
    x, y = rng.normal(size=3), rng.normal(size=3)
    check_grads(_uses_total, (x, y), order=2, modes=("fwd", "rev"))
    expected = 2.0 * (2 * x + 2 * x * y * y) + 4.0 * np.ones(3)
    assert np.allclose(tp.grad(_uses_total)(x, y), expected)
    assert np.isclose(tp.jit(_uses_total)(x, y), _uses_total(x, y))

    def calls_first(x):
        return np.sum(_first(x, 2.0 * x, 3.0)) + np.sum(_first(x))   # two call shapes

    assert np.allclose(tp.grad(calls_first)(x), 4.0 * np.ones(3))

    def plain_terms(x):
        return _total(x, np.sin(x))

    xs = rng.normal(size=(4, 3))
    assert np.allclose(tp.vmap(tp.grad(plain_terms))(xs),
                       np.stack([tp.grad(plain_terms)(r) for r in xs]))


def _power_sum(x, *, p=2.0, q):
    return np.sum(x ** p) * q


def test_keyword_only_parameters_at_the_entry_and_in_callees(rng):
    x = rng.uniform(0.5, 2.0, size=3)
    assert np.allclose(tp.grad(_power_sum)(x, q=3.0), 6 * x)
    assert np.allclose(tp.grad(_power_sum)(x, p=3.0, q=0.5), 1.5 * x ** 2)
    with pytest.raises(TypeError, match="positional"):
        tp.grad(_power_sum)(x, 2.0, 3.0)

    def by_position(x):
        return _power_sum(x, 3.0)

    with pytest.raises(tp.TransformError, match="takes 1 positional argument"):
        tp.grad(by_position)(x)


def _weighted_terms(w, *terms):
    total = w * 1.0
    for t in terms:
        total = total + np.tanh(t * w)
    return np.sum(total)


def _with_kwargs(x, **options):
    return x * options.get("scale", 1.0)


def test_args_at_the_entry(rng):
    """`def f(*args)` given to a transformation (JAX's docs write such rules) was refused;
    its code is now made for each number of arguments a call gives."""
    x, y = rng.normal(size=2), rng.normal(size=2)
    assert tp.grad(_first)(x[0], y[0]) == 2.0
    assert tp.grad(_first)(x[0]) == 1.0
    w = rng.normal()
    for args in ((w,), (w, x), (w, x, y)):
        check_grads(_weighted_terms, args, order=2, modes=("fwd", "rev"))
        assert np.isclose(tp.jit(_weighted_terms)(*args), _weighted_terms(*args), rtol=1e-14)
    g = tp.grad(_weighted_terms, argnums=(0, 2))(w, x, y)
    assert np.allclose(g[1], w * (1 - np.tanh(y * w) ** 2), rtol=1e-13)
    ws = rng.normal(size=3)
    np.testing.assert_allclose(tp.vmap(_weighted_terms, in_axes=(0, None, None))(ws, x, y),
                               [_weighted_terms(v, x, y) for v in ws], rtol=1e-14)
    np.testing.assert_allclose(tp.vmap(tp.grad(_weighted_terms))(ws, np.stack([x] * 3)),
                               [tp.grad(_weighted_terms)(v, x) for v in ws], rtol=1e-14)
    with pytest.raises(tp.TransformError, match=r"\*\*kwargs .* are not supported in the "
                       "function a transformation is applied to"):
        tp.grad(_with_kwargs)(1.0)


# ---------------------------------------------------------------- raise, assert, f-strings

def _checked(x):
    assert x.ndim == 1, f"need a vector, got {x.ndim} dims"
    if x.shape[0] > 10:
        raise ValueError("too long: " + str(x.shape[0]))
    if np.any(x > 100.0):
        raise ValueError(f"value too large: {np.max(x):.2f}")
    return np.sum(x * x)


@pytest.mark.parametrize("transform", ["grad", "jvp", "vmap", "jit", "vmap_grad"])
def test_raise_and_assert_are_kept(transform, rng):
    def run(x):
        if transform == "grad":
            return tp.grad(_checked)(x)
        if transform == "jvp":
            return tp.jvp(_checked, (x,), (x,))[1]
        if transform == "jit":
            return tp.jit(_checked)(x)
        batched = np.stack([x, x])
        return (tp.vmap(_checked) if transform == "vmap" else tp.vmap(tp.grad(_checked)))(
            batched)[0]

    x = rng.normal(size=3)
    expected = {"grad": 2 * x, "jvp": 2 * np.sum(x * x), "jit": np.sum(x * x),
                "vmap": np.sum(x * x), "vmap_grad": 2 * x}[transform]
    assert np.allclose(run(x), expected)
    if not transform.startswith("vmap"):
        with pytest.raises(AssertionError, match="need a vector, got 2 dims"):
            run(rng.normal(size=(2, 2)))
    with pytest.raises(ValueError, match="too long: 11"):
        run(rng.normal(size=11))
    with pytest.raises(ValueError, match="value too large"):
        run(np.array([1.0, 200.0, 3.0]))


def test_vmap_raises_only_when_an_example_takes_the_branch(rng):
    xs = rng.normal(size=(5, 3))
    assert np.allclose(tp.vmap(tp.grad(_checked))(xs), 2 * xs)
    xs[3, 1] = 150.0
    with pytest.raises(ValueError, match="value too large"):
        tp.vmap(tp.grad(_checked))(xs)


def _log_of_positive(x):
    if x <= 0:
        raise ValueError("x must be positive")
    return np.log(x)


def _log_where_positive(x):
    if x > 0:
        y = _log_of_positive(x) * x
    else:
        y = x
    return y


def _sum_down_to_one(k, a, step):
    if k == 1:                  # examples past their base case would never meet it again
        return a
    return _sum_down_to_one(k - 1, a + k * step, step)


def test_vmap_of_a_path_calling_a_function_the_other_examples_would_break(rng):
    """A path that calls a function of the user's runs it for every example; those that
    take the other path read the values of one that takes this one, so a check their own
    values fail does not raise and a recursion they have left ends."""
    x = np.concatenate([rng.uniform(0.5, 2.0, 3), -rng.uniform(0.5, 2.0, 2)])
    rng.shuffle(x)
    want = [_log_where_positive(v) for v in x]
    np.testing.assert_allclose(tp.vmap(_log_where_positive)(x), want, rtol=1e-14)
    np.testing.assert_allclose(tp.jit(tp.vmap(_log_where_positive))(x), want, rtol=1e-14)
    grads = [tp.grad(_log_where_positive)(v) for v in x]
    np.testing.assert_allclose(tp.vmap(tp.grad(_log_where_positive))(x), grads, rtol=1e-14)
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(tp.vmap(_log_where_positive)(x)))(x),
                               grads, rtol=1e-14)
    k = rng.integers(1, 9, size=6)
    step = rng.uniform(0.1, 1.0)
    sums = tp.vmap(_sum_down_to_one, in_axes=(0, None, None))(k, 1.0, step)
    np.testing.assert_allclose(sums, [_sum_down_to_one(int(n), 1.0, step) for n in k],
                               rtol=1e-14)
    by_step = tp.vmap(tp.grad(_sum_down_to_one, argnums=2), in_axes=(0, None, None))
    np.testing.assert_allclose(by_step(k, 1.0, step), [n * (n + 1) / 2 - 1 for n in k],
                               rtol=1e-12)


# ---------------------------------------------------------------- untransformable code in branches

def _plots_when_asked(x, ax=None, verbose=False):
    y = np.sum(np.tanh(x) ** 2)
    if ax:
        ax.plot(x, label="x")
        ax.legend()
    if verbose:
        print(f"loss {y:.3f}")
    return y


class _Axes:
    def plot(self, *args, **kwargs):
        pass


class _AxesWithLegend(_Axes):
    def legend(self):
        pass


def test_untransformable_code_is_refused_when_its_branch_runs(rng, capsys):
    x = rng.normal(size=3)
    expected = 2 * np.tanh(x) / np.cosh(x) ** 2
    assert np.allclose(tp.grad(_plots_when_asked)(x), expected)
    assert np.allclose(tp.grad(_plots_when_asked)(x, None, True), expected)
    assert capsys.readouterr().out.strip() == f"loss {np.sum(np.tanh(x) ** 2):.3f}"
    assert np.allclose(tp.vmap(tp.grad(_plots_when_asked))(np.stack([x, -x])),
                       np.stack([expected, -expected]))
    # an object passed in: its class's methods are transformed (_Axes.plot is), and what
    # cannot be (it has no legend) is refused where the branch reaches it
    with pytest.raises(tp.TransformError, match=r"_Axes has no method 'legend'") as e:
        tp.grad(_plots_when_asked)(x, _Axes())
    assert "ax.legend()" in str(e.value) and "line" in str(e.value)
    assert np.allclose(tp.grad(_plots_when_asked)(x, _AxesWithLegend()), expected)
    assert np.allclose(tp.grad(_plots_when_asked)(x), expected)


# ---------------------------------------------------------------- draws from numpy generators

def test_generator_draws_are_numpy_numbers_drawn_anew_on_each_call():
    seed = np.random.SeedSequence().entropy
    rng, reference = np.random.default_rng(seed), np.random.default_rng(seed)

    def f(x):
        return np.sum(x * rng.normal(size=3))

    x = np.arange(3.0)
    assert np.array_equal(tp.grad(f)(x), reference.normal(size=3))
    assert np.array_equal(tp.grad(f)(x), reference.normal(size=3))   # a fresh draw

    rs, rs_reference = np.random.RandomState(seed % 2 ** 32), \
        np.random.RandomState(seed % 2 ** 32)

    def g(mean, log_std):     # autograd's VAE and black-box SVI draw like this
        return np.sum((mean + np.exp(log_std) * rs.randn(*mean.shape)) ** 2) + \
            np.sum(rs.rand(2, 3))

    m, s = np.random.randn(4, 2), np.random.randn(4, 2)
    eps = rs_reference.randn(4, 2)
    rs_reference.rand(2, 3)
    sample = m + np.exp(s) * eps
    dm, ds = tp.grad(g, argnums=(0, 1))(m, s)
    assert np.allclose(dm, 2 * sample) and np.allclose(ds, 2 * sample * np.exp(s) * eps)


@pytest.mark.parametrize("method", ["normal", "uniform", "exponential"])
def test_generator_draw_parameters_get_pathwise_derivatives(method, rng):
    seed = int(rng.integers(2 ** 31))
    a, b = rng.uniform(0.5, 1.5, size=3), rng.uniform(0.5, 1.5, size=3)

    def f(a, b, gen):
        if method == "normal":
            draw = gen.normal(a, b)
        elif method == "uniform":
            draw = gen.uniform(a, a + b, size=(2, 3))
        else:
            draw = gen.exponential(b * a)
        return np.sum(np.sin(draw) * draw)

    reference = np.random.default_rng(seed)
    if method == "normal":              # draw = a + b z
        z = reference.standard_normal(3)
        draw, da, db = a + b * z, 1.0, z
    elif method == "uniform":           # draw = a + b u
        u = reference.random((2, 3))
        draw, da, db = a + b * u, 1.0, u
    else:                               # draw = (b a) e
        e = reference.standard_exponential(3)
        draw, da, db = b * a * e, b * e, a * e
    slope = np.cos(draw) * draw + np.sin(draw)
    ga, gb = tp.grad(f, argnums=(0, 1))(a, b, np.random.default_rng(seed))
    assert np.allclose(ga, np.sum(slope * da, axis=0) if method == "uniform" else slope * da)
    assert np.allclose(gb, np.sum(slope * db, axis=0) if method == "uniform" else slope * db)
    ta, tb = rng.normal(size=3), rng.normal(size=3)
    value, tangent = tp.jvp(f, (a, b, np.random.default_rng(seed)), (ta, tb, None))
    assert np.isclose(value, np.sum(np.sin(draw) * draw))
    assert np.isclose(tangent, np.sum(slope * (da * ta + db * tb)))
    assert np.isclose(tp.jit(f)(a, b, np.random.default_rng(seed)), value)


def test_generator_draws_differ_per_example_under_vmap_as_in_a_loop(rng):
    seed = int(rng.integers(2 ** 31))

    def per(x, gen):
        return np.sum(x * gen.normal(0.5, 2.0, size=(2,)))

    batched = tp.vmap(tp.vmap(per, in_axes=(0, None)), in_axes=(0, None))
    out = batched(np.ones((3, 4, 2)), np.random.default_rng(seed))
    gen = np.random.default_rng(seed)
    loop = [[per(np.ones(2), gen) for _ in range(4)] for _ in range(3)]
    assert np.allclose(out, loop)


# ---------------------------------------------------------------- objects: models and configs

class _Dense:
    def __init__(self, n, m, rng):
        self.W = rng.normal(size=(n, m)) / np.sqrt(n)
        self.b = rng.normal(size=m)

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


class _Net:
    """A Flax/Equinox-style model: layers held by the object, apply and loss as methods."""

    def __init__(self, rng):
        self.layers = [_Dense(3, 4, rng), _Dense(4, 4, rng)]
        self.head = _Dense(4, 1, rng)
        self.scale = 1.5

    def apply(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x) * self.scale

    def loss(self, x, y):
        return np.mean((self.apply(x) - y) ** 2)


def test_methods_of_a_model_object(rng):
    net = _Net(rng)
    x, y = rng.normal(size=(6, 3)), rng.normal(size=(6, 1))
    check_grads(net.loss, (x, y), order=2, modes=("fwd", "rev"))
    check_grads(net.head, (rng.normal(size=(6, 4)),), order=1, modes=("fwd", "rev"))

    def through_the_model(x):                 # the model is a global object here
        return np.sum(net.apply(x) ** 2)

    check_grads(through_the_model, (x,), order=1, modes=("fwd", "rev"))
    per_example = tp.vmap(tp.grad(net.loss))(x[:, None], y[:, None])
    assert np.allclose(per_example[:, 0], [tp.grad(net.loss)(x[i:i + 1], y[i:i + 1])[0]
                                           for i in range(6)])
    assert np.isclose(tp.jit(net.loss)(x, y), net.loss(x, y))


def test_hyperparameters_in_plain_objects(rng):
    import dataclasses
    import types

    @dataclasses.dataclass
    class Settings:              # not registered: its fields are data, not differentiated
        a: float
        b: np.ndarray

    def f(x, hp):
        return np.sum(x * hp.a + hp.b * x ** 2)

    x = rng.normal(size=3)
    for hp in (Settings(2.0, rng.normal(size=3)),
               types.SimpleNamespace(a=-1.0, b=rng.normal(size=3))):
        assert np.allclose(tp.grad(f)(x, hp), hp.a + 2 * hp.b * x)
        assert np.allclose(tp.jvp(f, (x, hp), (x, None))[1], np.sum(x * (hp.a + 2 * hp.b * x)))
    with pytest.raises(tp.TransformError, match="holds a value of type Settings"):
        tp.grad(f, argnums=1)(x, Settings(2.0, x))
    np.testing.assert_array_equal(tp.grad(lambda z: np.sum(z.real))(x), np.ones(3))  # np.real


def test_a_loop_over_functions_known_while_transforming(rng):
    steps = [np.sin, np.tanh, lambda v: v * v]

    def f(x):
        for step in steps:
            x = step(x)
        return np.sum(x)

    x = rng.normal(size=3)
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    steps.append(np.exp)                      # changed in place: new code, not stale code
    assert np.allclose(tp.grad(f)(x), np.exp(np.tanh(np.sin(x)) ** 2) * 2 *
                       np.tanh(np.sin(x)) / np.cosh(np.sin(x)) ** 2 * np.cos(x))


# ---------------------------------------------------------------- generators

_SHAPES = [(3, 4), (4, 2)]


def _unpack_layers(weights):         # autograd's bayesian_neural_net writes it so
    start = 0
    for m, n in _SHAPES:
        W = weights[start:start + m * n].reshape((m, n))
        b = weights[start + m * n:start + m * n + n]
        yield W, b
        start += m * n + n


def _predict(weights, x):
    for W, b in _unpack_layers(weights):
        x = np.tanh(x @ W + b)
    return x


def _squares(x):
    for i in range(3):
        if i == 1:
            continue
        yield x ** i
    yield from [x, 2 * x]


def _forever(x):
    while True:
        yield x


def test_generators_consumed_by_for_list_and_unpacking(rng):
    n = sum(m * k + k for m, k in _SHAPES)
    w, x = rng.normal(size=n), rng.normal(size=(5, 3))

    def loss(w, x):
        return np.sum(_predict(w, x) ** 2)

    def unpacked(w):
        layers = list(_unpack_layers(w))
        (W1, b1), (W2, b2) = _unpack_layers(w)
        return np.sum(layers[0][0] ** 2) + np.sum(W2 * b2) + np.sum(tuple(_squares(b1))[2])

    check_grads(loss, (w, x), order=2, modes=("fwd", "rev"))
    check_grads(unpacked, (w,), order=2, modes=("fwd", "rev"))
    check_grads(lambda v: np.sum(sum(_squares(v))), (rng.normal(size=3),), order=2,
                modes=("fwd", "rev"))
    ws = rng.normal(size=(3, n))
    assert np.allclose(tp.vmap(tp.grad(loss), in_axes=(0, None))(ws, x),
                       [tp.grad(loss)(v, x) for v in ws])

    def endless(x):
        for v in _forever(x):
            return np.sum(v)

    with pytest.raises(tp.TransformError, match="a generator that never stops"):
        tp.grad(endless)(x)


# ---------------------------------------------------------------- map, filter, reduce, sorted, dict

def _square(v):
    return v * v


def _map_lambda(x):
    return np.sum(sum(map(lambda v: v * np.sin(v), [x, 2 * x])))


def _map_two(x):
    return np.sum(sum(map(np.multiply, [x, x], [np.cos(x), 2.0 * x])))


def _map_name(x):
    a, b = map(_square, (x, np.tanh(x)))
    return np.sum(a * b)


def _reduce_operator(x):
    return np.sum(functools.reduce(operator.mul, [x, np.sin(x), x + 1.0]))


def _reduce_initial(x):
    return np.sum(functools.reduce(lambda acc, v: acc + v * v, [x, 2 * x], x))


def _filter(x):
    return np.sum(sum(filter(lambda v: np.sum(v) > -1e9, [x, x ** 3])))


def _sorted(x):
    items = sorted([np.sum(x), np.sum(x * x), np.sum(np.sin(x))])
    return items[0] + 3.0 * items[2]


def _sorted_key(x):
    ws = sorted([x, 2 * x, -x], key=lambda v: float(np.sum(v)), reverse=True)
    return np.sum(ws[0] * np.arange(3.0)) + np.sum(ws[2] ** 2)


def _dict_call(x):
    d = dict(a=x, b=np.exp(x))
    return np.sum(d["a"] * d["b"])


@pytest.mark.parametrize("f", [_map_lambda, _map_two, _map_name, _reduce_operator,
                               _reduce_initial, _filter, _sorted, _sorted_key, _dict_call])
def test_functional_builtins_over_user_functions(f, rng):
    x = rng.normal(size=3)
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    xs = rng.normal(size=(4, 3))
    if f in (_sorted, _sorted_key):
        with pytest.raises(tp.TransformError, match="sorted cannot be batched"):
            tp.vmap(f)(xs)
    elif f is _filter:       # which items are kept may differ between examples
        with pytest.raises(tp.TransformError, match="cannot be batched"):
            tp.vmap(f)(xs)
    else:
        assert np.allclose(tp.vmap(tp.grad(f))(xs), [tp.grad(f)(v) for v in xs])


def test_a_library_function_without_a_rule_is_named_not_entered():
    from scipy.integrate import cumulative_trapezoid

    def f(y0):
        return np.sum(cumulative_trapezoid(y0 ** 2))

    with pytest.raises(tp.TransformError, match=r"cumulative_trapezoid \(scipy\.integrate\."
                       r"cumulative_trapezoid\) has no rule") as e:
        tp.grad(f)(np.ones(2))
    assert "test_python_forms.py" in str(e.value)


# ---------------------------------------------------------------- forms found in autograd's examples

def _term(w, x):
    return np.sum(w * x)


def _mapped_partial(w, xs):          # hmm_em: map(partial(...), xs)
    return sum(map(functools.partial(_term, w), xs))


def _zip_three(a, b, c):
    t = 0.0
    for x, y, z in zip(a, b, c):
        t = t + x * y * z
    return np.sum(t)


class _Scale:
    def __init__(self, s):
        self.s = s

    def forward(self, x):
        return x * self.s


_scales = [_Scale(2.0), _Scale(3.0)]


def _through_scales(x):
    for layer in _scales:
        x = layer.forward(x)
    return np.sum(x ** 2) + np.sum(_scales[0].forward(x))


def test_forms_from_autograds_examples(rng):
    w, xs = rng.normal(size=3), [rng.normal(size=3) for _ in range(2)]
    assert np.allclose(tp.grad(_mapped_partial)(w, xs), xs[0] + xs[1])
    check_grads(_zip_three, (rng.normal(size=3), rng.normal(size=4), rng.normal(size=3)),
                order=2, modes=("fwd", "rev"))
    x = rng.normal(size=2)
    try:
        for s0, s1 in ((2.0, 3.0), (0.5, -1.0)):
            _scales[0].s, _scales[1].s = s0, s1
            y = x * s0 * s1
            assert np.allclose(tp.grad(_through_scales)(x), 2 * y * s0 * s1 + s0 * s0 * s1)
    finally:
        _scales[0].s, _scales[1].s = 2.0, 3.0


class _Parser:
    """convnet's WeightsParser: slices of one parameter vector, by name."""

    def __init__(self):
        self.idxs_and_shapes, self.n = {}, 0

    def add(self, name, shape):
        start = self.n
        self.n += int(np.prod(shape))
        self.idxs_and_shapes[name] = (slice(start, self.n), shape)

    def get(self, vect, name):
        idxs, shape = self.idxs_and_shapes[name]
        return np.reshape(vect[idxs], shape)


class _Affine:
    def __init__(self, n_in, n_out):
        self.parser = _Parser()
        self.parser.add("w", (n_in, n_out))
        self.parser.add("b", (n_out,))

    def forward(self, x, params):
        return np.tanh(x @ self.parser.get(params, "w") + self.parser.get(params, "b"))


_affines = [_Affine(3, 4), _Affine(4, 2)]
_net_parser = _Parser()
for _layer in _affines:
    _net_parser.add(_layer, (_layer.parser.n,))


def _parsed_net(vect, x):
    for layer in _affines:
        x = layer.forward(x, _net_parser.get(vect, layer))
    return np.sum(x ** 2)


def test_methods_of_an_object_a_layer_holds(rng):
    """`self.parser.get(...)` inside a layer's method (convnet): the parser, a user object
    held by the layer, is known while transforming, its data read when the code runs; the
    parser of the whole net is keyed by the layer objects themselves."""
    vect, x = rng.normal(size=_net_parser.n), rng.normal(size=(5, 3))
    check_grads(_parsed_net, (vect, x), order=2, modes=("fwd", "rev"))
    w1, b1 = vect[:12].reshape(3, 4), vect[12:16]
    w2, b2 = vect[16:24].reshape(4, 2), vect[24:26]
    assert np.isclose(_parsed_net(vect, x), np.sum(np.tanh(np.tanh(x @ w1 + b1) @ w2 + b2) ** 2))
    old = _affines[1].parser
    try:       # a new parser object on the layer: the transformed function follows it
        _affines[1].parser = _Parser()
        _affines[1].parser.add("b", (2,))
        _affines[1].parser.add("w", (4, 2))
        g = tp.grad(_parsed_net)(vect, x)
        h = np.tanh(x @ w1 + b1)
        w2, b2 = vect[18:26].reshape(4, 2), vect[16:18]
        check_grads(_parsed_net, (vect, x), order=1, modes=("rev",))
        y = np.tanh(h @ w2 + b2)
        assert np.allclose(g[16:18], np.sum(2 * y * (1 - y ** 2), axis=0))
    finally:
        _affines[1].parser = old


def _loglike(r, p):
    return np.sum(r * np.log(p) + np.sin(r) * p ** 2)


def test_autograds_argnum_spelling(rng):
    """autograd's examples write grad(f, argnum=(0, 1)) (negative_binomial_maxlike):
    the same as argnums, at the top level and inside transformed code."""
    r, p = rng.uniform(0.5, 2.0, 3), rng.uniform(0.2, 0.8, 3)
    dr, dp = np.log(p) + np.cos(r) * p ** 2, r / p + 2 * np.sin(r) * p
    got = tp.grad(_loglike, argnum=(0, 1))(r, p)
    assert np.allclose(got[0], dr) and np.allclose(got[1], dp)
    value, g = tp.value_and_grad(_loglike, argnum=1)(r, p)
    assert np.isclose(value, _loglike(r, p)) and np.allclose(g, dp)
    assert np.allclose(tp.jacrev(_loglike, argnum=1)(r, p), dp)
    assert np.allclose(tp.jacfwd(_loglike, argnum=1)(r, p), dp)
    assert np.allclose(tp.hessian(_loglike, argnum=1)(r, p), np.diag(-r / p ** 2 + 2 * np.sin(r)))
    # inside: d/dr of sum(d loglike/dp) = sum over i of 1/p_i + 2 cos(r_i) p_i
    inner = tp.grad(lambda r: np.sum(tp.grad(_loglike, argnum=1)(r, p)))(r)
    assert np.allclose(inner, 1 / p + 2 * np.cos(r) * p)
    with pytest.raises(TypeError, match="not both"):
        tp.grad(_loglike, argnums=1, argnum=1)


def _checks_its_scalar(x):
    assert x.shape == () and x.ndim == 0 and x.size == 1
    assert x.dtype == np.float64
    return x ** 2


def test_a_python_float_reads_as_a_0d_array():
    """`x.dtype` of a Python float argument is float64, as numpy makes it (and as autograd
    presents a boxed scalar); it was the type `float`, so `x.dtype == np.float64` failed
    under grad and held under vmap."""
    assert tp.grad(_checks_its_scalar)(3.0) == 6.0
    np.testing.assert_allclose(tp.vmap(tp.grad(_checks_its_scalar))(np.array([1.0, 2.0])),
                               [2.0, 4.0])


def _one_element(x):
    return np.dot(np.ones((1, 2)), x ** 2)          # shape (1,)


def _one_by_one(a):
    return np.sum(np.sin(a), axis=1, keepdims=True)   # shape (1, 1)


def test_grad_of_a_one_element_array(rng):
    """autograd differentiates an output of shape (1,) or (1, 1) (bayesian_optimization's
    acquisition function, logsumexp(..., keepdims=True)); there is one way to, so grad does
    too (JAX refuses), under vmap and at second order as well."""
    x = rng.normal(size=2)
    np.testing.assert_allclose(tp.grad(_one_element)(x), 2 * x)
    value, g = tp.value_and_grad(_one_element)(x)
    assert np.shape(value) == (1,) and np.allclose(g, 2 * x)
    a = rng.normal(size=(1, 3))
    np.testing.assert_allclose(tp.grad(_one_by_one)(a), np.cos(a))
    np.testing.assert_allclose(tp.vmap(tp.grad(_one_element))(np.stack([x, 3 * x])),
                               [2 * x, 6 * x])
    np.testing.assert_allclose(tp.hessian(lambda v: _one_element(v)[0])(x), 2 * np.eye(2))
    with pytest.raises(tp.TransformError, match=r"shape \(2,\)"):
        tp.grad(lambda v: v * 2.0)(x)


def _symmetrize_first(fun):
    def symmetrized(*args, **kwargs):
        a = args[0]
        return fun(0.5 * (a + a.T), *args[1:], **kwargs)
    return symmetrized


def _logged(fun):
    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        return fun(*args, **kwargs)
    return wrapper


@_logged
def _energy(a, x, scale=1.0):
    return scale * np.sum(np.sin(a @ x))


_sym_energy = _symmetrize_first(_energy)


def _wrapped_energies(a, x):
    return _sym_energy(a, x, scale=2.0) + _energy(a, x) + _energy(*(a, x))


def _spread(xs):
    return _energy(*xs)


def test_star_args_passed_on(rng):
    """`fun(*args, **kwargs)` in a wrapper with *args and **kwargs (a decorator, autograd's
    symmetrize_matrix_arg), `*args[1:]`, and `*` of a tuple written in the call: the
    arguments are spelled out for each call shape."""
    a, x = rng.normal(size=(3, 3)), rng.normal(size=3)
    want = 2.0 * np.sum(np.sin(0.5 * (a + a.T) @ x)) + 2 * np.sum(np.sin(a @ x))
    assert np.isclose(_wrapped_energies(a, x), want)
    check_grads(_wrapped_energies, (a, x), order=2, modes=("fwd", "rev"))
    per_example = tp.vmap(tp.grad(_wrapped_energies), in_axes=(None, 0))(a, np.stack([x, -x]))
    np.testing.assert_allclose(per_example[1], tp.grad(_wrapped_energies)(a, -x))
    with pytest.raises(tp.TransformError, match=r"\*args in a call is supported"):
        tp.grad(_spread)((a, x))


def _affine(x, scale, shift, power=1.0):
    return (x * scale + shift) ** power


_AFFINE = (1.5, -0.25)


def _star_of_a_global_tuple(x):
    return np.sum(np.sin(_affine(x, *_AFFINE)) + _affine(x, *_AFFINE[:1], 0.5))


def test_star_of_a_global_tuple(rng):
    """`f(x, *PARAMS)` with PARAMS a global tuple (its length known while transforming;
    rebinding it to a longer tuple makes new code, as any global). Tuples that are data of
    the call (arguments, closure cells, which become arguments) are refused clearly."""
    global _AFFINE
    x = rng.uniform(0.5, 1.5, size=4)
    check_grads(_star_of_a_global_tuple, (x,), order=2, modes=("fwd", "rev"))
    grad = tp.grad(_star_of_a_global_tuple)
    np.testing.assert_allclose(grad(x), 1.5 * np.cos(1.5 * x - 0.25) + 1.5, rtol=1e-12)
    saved = _AFFINE
    try:
        _AFFINE = (2.0, 0.5, 2.0)          # the third item is now `power`
        want = 4 * (2 * x + 0.5) * np.cos((2 * x + 0.5) ** 2) + 2.0
        np.testing.assert_allclose(grad(x), want, rtol=1e-12)
    finally:
        _AFFINE = saved
    params = (rng.normal(), rng.normal())      # data of the call: its length is not known
    with pytest.raises(tp.TransformError, match=r"a global tuple"):
        tp.grad(lambda v: np.sum(_affine(v, *params)))(x)
    with pytest.raises(tp.TransformError, match=r"a global tuple"):
        tp.grad(lambda v, p: np.sum(_affine(v, *p)))(x, params)


def _dict_views(d):
    total = 0.0
    for i, (k, v) in enumerate(sorted(d.items(), key=operator.itemgetter(0))):
        total = total + np.sum(np.sin(v)) * (i + 1.0)
    for v in d.values():
        total = total + np.sum(v ** 2)
    for k in sorted(d.keys()):
        total = total + np.sum(np.cos(d[k]))
    return total


def _dict_get(d, x):
    return d.get("a", x) ** 2 + d.get("missing", 1.0) * x


def _values_only(d):
    return sum(np.sum(np.tanh(v)) * len(k) for k, v in d.items())


def test_dict_methods(rng):
    """d.items(), d.values(), d.keys() (lists in the dict's order) and d.get(k, default) in
    transformed code, and operator.itemgetter as a sort key (autograd's test_dict)."""
    d = {"bb": rng.normal(size=(2, 3)), "a": rng.normal(size=4), "ccc": rng.normal(size=2)}
    want = sum(np.sum(np.sin(d[k])) * (i + 1.0) for i, k in enumerate(sorted(d))) + \
        sum(np.sum(v ** 2) + np.sum(np.cos(v)) for v in d.values())
    assert np.isclose(_dict_views(d), want)
    check_grads(_dict_views, (d,), order=2, modes=("fwd", "rev"))
    for given in ({"a": 3.0}, {"b": 4.0}, {}):
        gd, gx = tp.grad(_dict_get, argnums=(0, 1))(given, 2.0)
        assert gx == (1.0 if "a" in given else 2 * 2.0 + 1.0)
        assert gd == ({"a": 6.0} if "a" in given else {k: 0.0 for k in given})
    batched = {k: np.stack([v, 2 * v]) for k, v in d.items()}
    got = tp.vmap(tp.grad(_values_only))(batched)
    for k, v in d.items():
        np.testing.assert_allclose(got[k][1], len(k) * (1 - np.tanh(2 * v) ** 2))


# ---------------------------------------------------------------- zip(*...) in a for header

def _three_parts(p):
    return p[0] * 2.0, p[1], np.sin(p[2])


def _zip_of_starred(p):
    total = 0.0
    for a, b, c in zip(*_three_parts(p)):      # autograd's gmm: zip(*unpack(params))
        total = total + a * b * c
    return total


def _zip_of_starred_two_names(p):
    total = 0.0
    for a, b in zip(*_three_parts(p)):
        total = total + a * b
    return total


def test_zip_of_a_starred_call_in_a_for_header(rng):
    p = rng.normal(size=(3, 4))
    check_grads(_zip_of_starred, (p,), order=2, modes=("fwd", "rev"))
    ps = rng.normal(size=(3, 3, 4))
    np.testing.assert_allclose(tp.vmap(_zip_of_starred)(ps), [_zip_of_starred(q) for q in ps],
                               rtol=1e-12)
    with pytest.raises(ValueError):
        _zip_of_starred_two_names(p)                 # Python refuses it too
    with pytest.raises(tp.TransformError, match=r"zip\(\*x\) of an x with 3 items, unpacked "
                                                r"into 2 names"):
        tp.grad(_zip_of_starred_two_names)(p)


class _Layer:
    def __init__(self, scale):
        self.scale = scale

    def apply(self, p, x):
        return np.tanh(x * p) * self.scale


_LAYERS = [_Layer(1.5), _Layer(-0.5), _Layer(2.0)]


def _zip_of_layers_and_params(params, x):
    for layer, p in zip(_LAYERS, params):       # Flax style: layers zipped with parameters
        x = layer.apply(p, x)
    return np.sum(x ** 2)


def test_zip_of_known_layers_and_their_parameters(rng):
    params, x = list(rng.normal(size=3)), rng.normal(size=4)
    check_grads(_zip_of_layers_and_params, (params, x), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.vmap(_zip_of_layers_and_params, in_axes=(None, 0))(
        params, np.stack([x, -2 * x])), [_zip_of_layers_and_params(params, x),
                                         _zip_of_layers_and_params(params, -2 * x)],
        rtol=1e-12)
    with pytest.raises(tp.TransformError, match="zip of 3 functions or models with a "
                                                "sequence of 2 items"):
        tp.grad(_zip_of_layers_and_params)(params[:2], x)


# ---------------------------------------------------------------- partial binding a function
# (JAX's advi.py: vmap(partial(elbo, logprob), ...)): transforming such a partial crashed
# (AttributeError, KeyError under jit); inside transformed code it was refused

def _doubled_sin(v):
    return np.sin(v) * 2.0


def _apply_then_add(h, v):
    return h(v) + v


def _partial_in_code(x):
    return functools.partial(_apply_then_add, _doubled_sin)(x) * 2.0


def _partial_named_in_code(x):
    step = functools.partial(_apply_then_add, h=_doubled_sin)
    return step(v=x) * 2.0


def test_a_partial_binding_a_function():
    x = np.random.default_rng(31).normal(size=4)
    bound = functools.partial(_apply_then_add, _doubled_sin)
    want = np.sin(x) * 2.0 + x
    np.testing.assert_allclose(tp.vmap(bound)(x), want, rtol=1e-12)
    np.testing.assert_allclose(tp.jit(bound)(x), want, rtol=1e-12)
    np.testing.assert_allclose(tp.grad(bound)(x[0]), 2.0 * np.cos(x[0]) + 1.0, rtol=1e-12)
    np.testing.assert_allclose(tp.jvp(bound, (x,), (x * 0.5,))[1],
                               (2.0 * np.cos(x) + 1.0) * x * 0.5, rtol=1e-12)
    for f in (_partial_in_code, _partial_named_in_code):
        np.testing.assert_allclose(tp.vmap(tp.grad(f))(x), 2.0 * (2.0 * np.cos(x) + 1.0),
                                   rtol=1e-12)


# ---------------------------------------------------------------- np.add.at (JAX's
# a.at[idx].add(v)): repeated indices add up; it had no rule

_REPEATS = np.array([0, 2, 2, 4, 0, 0])


def _scatter_added(v, base):
    a = base * 1.0
    np.add.at(a, _REPEATS, v)
    return np.sum(np.sin(a) * a)


def _histogram_2d(points, weights, scale):
    h = np.zeros((4, 4))
    np.add.at(h, (points[:, 0], points[:, 1]), weights * scale)
    return np.sum(h * h)


def test_np_add_at():
    rng = np.random.default_rng(41)
    v, base = rng.normal(size=6), rng.normal(size=5)
    check_grads(_scatter_added, (v, base), order=2)
    assert np.isclose(tp.jit(_scatter_added)(v, base), _scatter_added(v, base))
    vs, bases = rng.normal(size=(3, 6)), rng.normal(size=(3, 5))
    g = tp.grad(_scatter_added, argnums=(0, 1))
    for got, want in [(tp.vmap(_scatter_added)(vs, bases),
                       [_scatter_added(a, b) for a, b in zip(vs, bases)]),
                      (tp.vmap(g)(vs, bases)[0], [g(a, b)[0] for a, b in zip(vs, bases)]),
                      (tp.vmap(_scatter_added, in_axes=(0, None))(vs[:, :1], base),
                       [_scatter_added(a, base) for a in vs[:, :1]])]:   # one value each
        np.testing.assert_allclose(got, np.array(want), rtol=1e-12)
    points = rng.integers(0, 4, size=(10, 2))
    weights, scale = rng.normal(size=10), 0.7
    check_grads(lambda w, s: _histogram_2d(points, w, s), (weights, scale), order=2)
    per_example = rng.integers(0, 4, size=(3, 10, 2))      # indices differ per example
    np.testing.assert_allclose(
        tp.vmap(tp.grad(_histogram_2d, argnums=2), in_axes=(0, None, None))(
            per_example, weights, scale),
        [tp.grad(_histogram_2d, argnums=2)(p, weights, scale) for p in per_example],
        rtol=1e-12)


# ---------------------------------------------------------------- namedtuples made in the
# code (JAX's custom-rules notebook returns Point(...) from a rule; optimizers return
# Params(...)), and a global namedtuple constant (was written into the code as its repr,
# `Cfg(a=0.5, b=2.0)`: a NameError)

import collections  # noqa: E402

_Params = collections.namedtuple("_Params", ["w", "b"])
_Cfg = collections.namedtuple("_Cfg", ["scale", "power"], defaults=[2.0])
_CFG = _Cfg(0.5)


def _params_loss(p, x):
    return np.sum((x @ p.w + p.b) ** 2) * _CFG.scale


def _sgd_step(p, x, lr):
    g = tp.grad(_params_loss)(p, x)
    return _Params(p.w - lr * g.w, b=p.b - lr * g.b)


def _model_of_w(w, x):
    cfg = _Cfg(0.25)                             # power left to its default
    return _params_loss(_Params(w, 0.5), x) + np.sum(_scaled(_CFG, w) + _scaled(cfg, w))


def _scaled(cfg, w):
    return cfg.scale * w ** cfg.power


def _features(w):
    return _Params(w * 2.0, np.sin(w))


def test_namedtuples_made_in_transformed_code():
    rng = np.random.default_rng(53)
    p, x = _Params(rng.normal(size=3), 0.2), rng.normal(size=(4, 3))
    g = tp.grad(_params_loss)(p, x)
    for step in (_sgd_step, tp.jit(_sgd_step)):
        got = step(p, x, 0.1)
        assert type(got) is _Params
        np.testing.assert_allclose(got.w, p.w - 0.1 * g.w, rtol=1e-12)
        np.testing.assert_allclose(got.b, p.b - 0.1 * g.b, rtol=1e-12)
    check_grads(_model_of_w, (p.w, x), order=2)
    ws = rng.normal(size=(5, 3))
    per_example = tp.vmap(tp.grad(_model_of_w), in_axes=(0, None))(ws, x)
    np.testing.assert_allclose(per_example, [tp.grad(_model_of_w)(w, x) for w in ws],
                               rtol=1e-12)
    jac = tp.jacrev(_features)(p.w)
    assert type(jac) is _Params
    np.testing.assert_allclose(jac.b, np.diag(np.cos(p.w)), rtol=1e-12)
    batched = tp.vmap(_features)(ws)
    assert type(batched) is _Params and batched.w.shape == (5, 3)
    tangent = tp.jvp(_features, (p.w,), (np.ones(3),))[1]
    assert type(tangent) is _Params
    np.testing.assert_allclose(tangent.b, np.cos(p.w), rtol=1e-12)


# two lambdas on one line whose bytecode is the same (they read different globals): the
# first was transformed for both, silently (JAX's docs keep such tuples of functions)
_SCALE_A, _SCALE_B = 2.0, 3.0
_TWO_LAMBDAS = (lambda x: x * _SCALE_A, lambda x: x * _SCALE_B)
_TWO_NUMPY_LAMBDAS = (lambda x: np.sin(x), lambda x: np.cos(x))


def test_the_right_lambda_of_two_on_one_line():
    assert tp.grad(_TWO_LAMBDAS[1])(1.0) == 3.0
    assert tp.grad(_TWO_LAMBDAS[0])(1.0) == 2.0
    assert np.isclose(tp.grad(_TWO_NUMPY_LAMBDAS[1])(0.4), -np.sin(0.4))

    def make(c, d):
        return (lambda x: x * c, lambda x: x * d)
    assert tp.grad(make(2.0, 5.0)[1])(1.0) == 5.0


# `*hidden, last = params` (JAX's pytrees page: an MLP's layers): was refused
def _mlp_starred(params, x):
    *hidden, last = params
    for W, b in hidden:
        x = np.tanh(W @ x + b)
    W, b = last
    return np.sum((W @ x + b) ** 2)


def _first_middle_last(v):
    a, *middle, z = v
    return a * z + sum(middle) * 0.5


def test_starred_unpacking():
    rng = np.random.default_rng(67)
    params = [(rng.normal(size=(4, 3)), rng.normal(size=4)),
              (rng.normal(size=(2, 4)), rng.normal(size=2))]
    x = rng.normal(size=3)
    check_grads(lambda W0, x: _mlp_starred([(W0, params[0][1]), params[1]], x),
                (params[0][0], x), order=2)
    xs = rng.normal(size=(5, 3))
    np.testing.assert_allclose(tp.vmap(_mlp_starred, in_axes=(None, 0))(params, xs),
                               [_mlp_starred(params, row) for row in xs], rtol=1e-12)
    v = rng.normal(size=5)
    check_grads(_first_middle_last, (v,), order=2)
    assert np.isclose(tp.jit(_first_middle_last)(v), _first_middle_last(v))
    with pytest.raises(tp.TransformError, match="not enough values to unpack"):
        tp.grad(_first_middle_last)(v[:1])


# `(*x.shape[:-1], 2, -1)` and `[*parts, y]`: starred elements of displays were refused
def _split_last_axis(x):
    y = x.reshape((*x.shape[:-1], 2, -1))
    return np.sum(np.sin(y[..., 0, :]) * y[..., 1, :])


def _spread_rows(x):
    parts = [x[0], x[1]]
    rows = [*parts, x[2] * 2.0, *parts]
    pair = (*parts,)
    return np.sum(np.stack(rows) ** 2 * x[0]) + np.sum(pair[1] * x[2]) + np.sum(np.stack([*x]))


def test_starred_elements_in_displays():
    rng = np.random.default_rng(68)
    x = rng.normal(size=(3, 4))
    for f in (_split_last_axis, _spread_rows):
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))
        xs = rng.normal(size=(5, 3, 4))
        np.testing.assert_allclose(tp.vmap(f)(xs), [f(row) for row in xs], rtol=1e-12)
        np.testing.assert_allclose(tp.jit(f)(x), f(x), rtol=1e-12)


# ---------------------------------------------------------------- loops over dicts and sets

def _dict_loss(params, x):
    total = 0.0
    for name in params:                       # keys, in the dict's order
        total = total + np.sum(np.tanh(params[name] * x) ** 2) * len(name)
    for i, name in enumerate(params):
        total = total + i * np.sum(params[name])
    for name, scale in zip(params.keys(), [1.0, 2.0, 3.0]):
        total = total + scale * np.sum(params[name] ** 3)
    return total


def _set_loss(x, picks):
    total = 0.0
    for k in picks:                           # a set's items, in Python's order
        total = total + x[k] ** 2 * (k + 1)
    return total


def test_loops_over_dicts_and_sets_walk_what_python_walks():
    rng = np.random.default_rng()
    params = {"wb": rng.normal(size=3), "a": rng.normal(size=3), "ccc": rng.normal(size=3)}
    x = rng.normal(size=3)
    grads = tp.grad(_dict_loss)(params, x)
    assert list(grads) == list(params)
    check_grads(_dict_loss, (params, x), order=2, modes=("rev", "fwd"))
    np.testing.assert_allclose(tp.jit(_dict_loss)(params, x), _dict_loss(params, x))
    jitted = tp.jit(tp.grad(_dict_loss))(params, x)
    for k in params:
        np.testing.assert_allclose(jitted[k], grads[k], rtol=1e-12)
    xs = rng.normal(size=(4, 3))
    per_example = tp.vmap(tp.grad(_dict_loss), in_axes=(None, 0))(params, xs)
    for i in range(4):
        want = tp.grad(_dict_loss)(params, xs[i])
        for k in params:
            np.testing.assert_allclose(per_example[k][i], want[k], rtol=1e-12)
    batched = {k: rng.normal(size=(4, 3)) for k in params}
    np.testing.assert_allclose(tp.vmap(_dict_loss, in_axes=(0, None))(batched, x),
                               [_dict_loss({k: v[i] for k, v in batched.items()}, x)
                                for i in range(4)])
    picks = {4, 0, 2}
    x = rng.normal(size=5)
    g = tp.grad(_set_loss)(x, picks)
    np.testing.assert_allclose(g, [2 * x[k] * (k + 1) if k in picks else 0.0
                                   for k in range(5)])
    np.testing.assert_allclose(tp.vmap(_set_loss, in_axes=(0, None))(xs[:, :3].repeat(2, 1)[:, :5], picks),
                               [_set_loss(r, picks) for r in xs[:, :3].repeat(2, 1)[:, :5]])


# ---------------------------------------------------------------- nested functions that call
# themselves. The nested def's own name was lifted as a free variable of itself: the call
# passed a `fact` that does not exist (NameError), and the recursive call, refused as a
# call of a value, became a raise in its branch (Myia's test_fact, test_recursive_closure).

def _nested_factorial(x):
    def fact(n):
        if n <= 1:
            return 1.0
        else:
            return n * fact(n - 1)
    return fact(x)


def _nested_recursion_reading_the_enclosing_scope(x):
    def f(k):
        if k <= 0:
            return x
        else:
            return f(k - 1) * np.sin(x)
    return f(3)


def _nested_lambda_recursion(x):
    fact = lambda n: 1.0 if n <= 1 else n * fact(n - 1)   # noqa: E731
    return fact(x) * x


def _nested_tail_call(x, a0):
    def fsum(k, a):
        if k == 1:
            return a
        return fsum(k - 1, a + k * a0)
    return fsum(x, np.cos(a0))


def _nested_gcd(a, b):
    def gcd(a, b):
        return a if not b else gcd(b, a % b)
    return gcd(b, a) if a < b else gcd(a, b)


def test_nested_functions_that_call_themselves(rng):
    x = rng.uniform(2.5, 4.5)
    for f in (_nested_factorial, _nested_recursion_reading_the_enclosing_scope,
              _nested_lambda_recursion):
        check_grads(f, (x,), order=2, modes=("rev", "fwd"))
        assert np.isclose(tp.jit(f)(x), f(x), rtol=1e-14)
        xs = rng.uniform(0.5, 4.5, 5)
        np.testing.assert_allclose(tp.vmap(f)(xs), [f(v) for v in xs], rtol=1e-14)
        np.testing.assert_allclose(tp.vmap(tp.grad(f))(xs), [tp.grad(f)(v) for v in xs],
                                   rtol=1e-14)
    a0 = rng.uniform(0.1, 1.0)
    check_grads(lambda a: _nested_tail_call(6, a), (a0,), order=2, modes=("rev", "fwd"))
    ks = rng.integers(1, 8, size=5)
    np.testing.assert_allclose(tp.vmap(_nested_tail_call, in_axes=(0, None))(ks, a0),
                               [_nested_tail_call(int(k), a0) for k in ks], rtol=1e-14)
    assert tp.jit(_nested_gcd)(84, 36) == 12


def _scale_and_shift(x, scale=2.0, shift=0.5):
    return x * scale + shift


def test_operators_and_defaults_given_to_transformations(rng):
    """tp.grad(operator.mul) (Myia's test_grad_prim; jax.grad takes it) is the derivative of
    `a * b`; jit of a vmap with one int in_axes maps only the arguments passed, as the vmap
    does (it mapped the defaults too: 'in_axes=0 is out of range for argument scale')."""
    a, b = rng.normal(size=2)
    assert tp.grad(operator.mul)(a, b) == b
    assert tp.grad(operator.mul, argnums=1)(a, b) == a
    assert tp.grad(operator.truediv)(a, b) == 1.0 / b
    assert tp.grad(operator.neg)(a) == -1.0
    m, v = rng.normal(size=(4, 3, 3)), rng.normal(size=(4, 3))
    np.testing.assert_allclose(tp.vmap(operator.matmul)(m, v), np.einsum("bij,bj->bi", m, v),
                               rtol=1e-14, atol=1e-14)     # (sums of 3 rounded differently)
    x = rng.normal(size=5)
    for run in (tp.vmap(_scale_and_shift), tp.jit(tp.vmap(_scale_and_shift))):
        for _ in range(2):                  # the general code, then the specialized one
            np.testing.assert_allclose(run(x), 2.0 * x + 0.5, rtol=1e-15)
            np.testing.assert_allclose(run(x, np.full(5, 3.0)), 3.0 * x + 0.5, rtol=1e-15)
            np.testing.assert_allclose(run(x, shift=np.ones(5)), 2.0 * x + 1.0, rtol=1e-15)


# ---------------------------------------------------------------- objects passed on and held
# (Myia's test_model and examples: a model of layers given to the cost, a global model given
# to a helper). Both were refused: "method '.apply()' is not supported".

class _TanhLayer(typing.NamedTuple):
    W: np.ndarray

    def apply(self, h):
        return np.tanh(h @ self.W)


class _LinearLayer(typing.NamedTuple):
    W: np.ndarray

    def apply(self, h):
        return h @ self.W


class _TwoLayers(typing.NamedTuple):
    first: _TanhLayer
    second: _TanhLayer

    def apply(self, h):
        return self.second.apply(self.first.apply(h))


def _model_cost(model, x):
    return np.sum(model.apply(x) ** 2)


class _Scaler:
    def __init__(self, w):
        self.w = w

    def apply(self, x):
        return np.sin(x * self.w)


_GLOBAL_SCALER = _Scaler(np.array([0.5, -1.5, 2.0]))


def _cost_of_the_global_model(x):
    return _model_cost(_GLOBAL_SCALER, x)


def test_models_held_by_models_and_passed_to_helpers(rng):
    net = _TwoLayers(_TanhLayer(rng.normal(size=(3, 4))), _TanhLayer(rng.normal(size=(4, 2))))
    x = rng.normal(size=3)
    check_grads(_model_cost, (net, x), order=1, modes=("fwd", "rev"))
    g = tp.grad(_model_cost)(net, x)
    assert type(g) is _TwoLayers and type(g.first) is _TanhLayer
    xs = rng.normal(size=(5, 3))
    np.testing.assert_allclose(tp.vmap(_model_cost, in_axes=(None, 0))(net, xs),
                               [_model_cost(net, v) for v in xs], rtol=1e-14)
    np.testing.assert_allclose(tp.jit(tp.grad(_model_cost, argnums=1))(net, x),
                               tp.grad(_model_cost, argnums=1)(net, x), rtol=1e-14)
    # what a field of the argument holds decides the method called, not its annotation
    other = _TwoLayers(net.first, _LinearLayer(net.second.W))
    np.testing.assert_allclose(tp.grad(_model_cost, argnums=1)(other, x),
                               2 * np.tanh(x @ net.first.W) @ net.second.W @ net.second.W.T *
                               (1 - np.tanh(x @ net.first.W) ** 2) @ net.first.W.T, rtol=1e-13)
    check_grads(_cost_of_the_global_model, (x,), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.grad(_cost_of_the_global_model)(x),
                               2 * np.sin(x * _GLOBAL_SCALER.w) * np.cos(x * _GLOBAL_SCALER.w)
                               * _GLOBAL_SCALER.w, rtol=1e-13)


# ---------------------------------------------------------------- a model's layers, walked
# (Myia's test_model and examples/mlp: `for layer in self.layers: x = layer.apply(x)` over a
# tuple of layers of one class or of several). Refused: "method '.apply()' is not
# supported". Code is now made for the classes the argument holds (layouts.py): a loop over
# layers of one class stays a loop, over several it is unrolled.

@tp.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class _LayerAffine:
    W: np.ndarray
    b: np.ndarray

    def apply(self, x):
        return x @ self.W + self.b


@tp.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class _Tanh:
    def apply(self, x):
        return np.tanh(x)


@tp.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class _Sequential:
    layers: tuple

    def apply(self, x):
        for layer in self.layers:
            x = layer.apply(x)
        return x


def _sequential_loss(model, x):
    return np.sum(model.apply(x) ** 2)


def _reference_sequential(model, x):
    for layer in model.layers:
        x = x @ layer.W + layer.b if isinstance(layer, _LayerAffine) else np.tanh(x)
    return np.sum(x ** 2)


def _weighted_layers(model, x):
    total = 0.0
    h = x
    for k, layer in enumerate(model.layers):
        h = layer.apply(h)
        total = total + (k + 1.5) * np.sum(np.sin(h))
    return total + sum(np.sum(layer.apply(x) ** 2) for layer in model.layers[:2])


def _by_index(model, x):
    for i in range(len(model.layers)):
        x = model.layers[i].apply(x)
    return np.sum(x ** 2)


def test_a_model_walks_layers_of_several_classes(rng):
    def dense(m, n):
        return _LayerAffine(rng.normal(size=(m, n)), rng.normal(size=n))
    model = _Sequential((dense(3, 4), _Tanh(), dense(4, 2), _Tanh()))
    x = rng.normal(size=(5, 3))
    np.testing.assert_allclose(tp.jit(_sequential_loss)(model, x),
                               _reference_sequential(model, x), rtol=1e-14)
    check_grads(_sequential_loss, (model, x), order=1, modes=("fwd", "rev"))
    g = tp.grad(_sequential_loss)(model, x)
    assert type(g) is _Sequential and [type(v) for v in g.layers] == [_LayerAffine, _Tanh] * 2
    gx = tp.grad(_sequential_loss, argnums=1)
    np.testing.assert_allclose(gx(model, x), tp.grad(_reference_sequential, argnums=1)(model, x),
                               rtol=1e-13)
    assert "for " not in gx.source.split("def _Sequential_apply")[-1].split("\ndef ")[0]
    xs = rng.normal(size=(6, 5, 3))
    per_example = tp.vmap(gx, in_axes=(None, 0))(model, xs)
    np.testing.assert_allclose(per_example, [gx(model, v) for v in xs], rtol=1e-13)
    np.testing.assert_allclose(tp.jit(tp.grad(_sequential_loss))(model, x).layers[2].W,
                               g.layers[2].W, rtol=1e-13)
    # another model (other classes, another length) gets code of its own
    small = _Sequential((dense(3, 2),))
    np.testing.assert_allclose(gx(small, x), 2 * (x @ small.layers[0].W + small.layers[0].b)
                               @ small.layers[0].W.T, rtol=1e-13)
    check_grads(_weighted_layers, (model, x), order=1, modes=("fwd", "rev"))
    # layers of one class: the loop stays a loop (also one over their indices)
    same = _Sequential((dense(3, 3), dense(3, 3), dense(3, 3)))
    check_grads(_sequential_loss, (same, x), order=1, modes=("fwd", "rev"))
    check_grads(_by_index, (same, x), order=1, modes=("fwd", "rev"))
    np.testing.assert_allclose(_by_index(same, x), _sequential_loss(same, x), rtol=1e-15)
    gx(same, x)
    assert "for " in gx.source.split("def _Sequential_apply")[-1].split("\ndef ")[0]


class _Scaling:
    def __init__(self, s):
        self.s = s

    def __call__(self, x):
        return self.s * x


def _through_all(fs, x):
    for f in fs:
        x = f(x)
    return np.sum(x)


def test_a_list_of_callable_objects_and_functions_as_an_argument(rng):
    x = rng.normal(size=4)
    fs = [_Scaling(2.0), np.sin, _Scaling(-3.0)]
    np.testing.assert_allclose(tp.grad(_through_all, argnums=1)(fs, x), -6.0 * np.cos(2.0 * x),
                               rtol=1e-14)
    xs = rng.normal(size=(3, 4))
    np.testing.assert_allclose(tp.vmap(_through_all, in_axes=(None, 0))(fs, xs),
                               [_through_all(fs, v) for v in xs], rtol=1e-14)
    with pytest.raises(tp.TransformError, match="break/continue in a loop over objects"):
        tp.grad(_stops_early, argnums=1)(fs, x)


def _stops_early(fs, x):
    for f in fs:
        x = f(x)
        if np.sum(x) > 100.0:
            break
    return np.sum(x)


# ---------------------------------------------------------------- nested functions that call
# the functions passed to them (Myia's test_hof, test_callp): refused ("calling a function
# held in a variable"); each call now lifts the nested function for the functions it passes.

def _nested_higher_order(a, b):
    def both(g, x):
        return g(x) * g(x + 10.0)

    def scaled(x):
        return x * b
    return both(scaled, a)


def _nested_twice(a, b):
    def twice(fn, x, scale=2.0):
        return fn(fn(x)) * scale

    def shifted_sine(x):
        return np.sin(x) + b
    return twice(shifted_sine, a) + twice(np.tanh, a, scale=3.0) + twice(fn=shifted_sine, x=b)


def _nested_apply_in_a_loop(a, b):
    apply = lambda fn, x: fn(x)       # noqa: E731
    acc = 0.0
    for i in range(3):
        acc = acc + apply(lambda z: z * b * i, a)
    return acc


@pytest.mark.parametrize("f", [_nested_higher_order, _nested_twice, _nested_apply_in_a_loop])
def test_nested_functions_calling_the_functions_passed_to_them(f, rng):
    a, b = rng.uniform(0.2, 1.5, 2)
    check_grads(f, (a, b), order=2, modes=("fwd", "rev"))
    assert np.isclose(tp.jit(f)(a, b), f(a, b), rtol=1e-14)
    xs = rng.uniform(0.2, 1.5, 4)
    np.testing.assert_allclose(tp.vmap(f, in_axes=(0, None))(xs, b), [f(x, b) for x in xs],
                               rtol=1e-14)
    np.testing.assert_allclose(tp.vmap(tp.grad(f), in_axes=(0, None))(xs, b),
                               [tp.grad(f)(x, b) for x in xs], rtol=1e-14)


def _noisy_loss(x, seed=123):
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, 0.1, size=x.shape)
    return np.sum((x + noise) ** 2) + rng.uniform()


def test_a_generator_made_in_the_code(rng):
    """`np.random.default_rng(seed)` inside the function (Myia's with_random) had no rule;
    under vmap each example has its own generator, as a loop over examples makes one."""
    x = rng.normal(size=3)
    noise = np.random.default_rng(123).normal(0.0, 0.1, size=3)
    assert np.isclose(tp.jit(_noisy_loss)(x), _noisy_loss(x), rtol=1e-15)
    np.testing.assert_allclose(tp.grad(_noisy_loss)(x), 2 * (x + noise), rtol=1e-14)
    xs = rng.normal(size=(4, 3))
    np.testing.assert_allclose(tp.vmap(_noisy_loss)(xs), [_noisy_loss(v) for v in xs],
                               rtol=1e-14)
    seeds = np.arange(4)
    np.testing.assert_allclose(tp.vmap(_noisy_loss)(xs, seeds),
                               [_noisy_loss(v, int(s)) for v, s in zip(xs, seeds)], rtol=1e-14)
    np.testing.assert_allclose(tp.vmap(tp.grad(_noisy_loss))(xs),
                               [tp.grad(_noisy_loss)(v) for v in xs], rtol=1e-14)


# ---------------------------------------------------------------- tuples of functions written
# in the code (Myia's functions_in_tuples: `tup = operator.add, operator.mul`): refused ("a
# function value can only be called here"); indexed by a constant and looped over now

def _relu(x):
    return np.maximum(x, 0.0)


def _through_local_functions(x, y):
    acts = (np.tanh, _relu, lambda v: v * y)
    total = 0.0
    for act in acts:
        total = total + np.sum(act(x))
    ops = operator.add, operator.mul
    return total + acts[2](x).sum() + np.sum(ops[1](x, y)) + np.sum(ops[0](x, y))


def _apply_both(fs, x):
    return fs[0](x) * fs[1](x)


def _passes_functions_on(x):
    fs = (np.sin, np.cos)
    return np.sum(_apply_both(fs, x))


def test_tuples_of_functions_written_in_the_code(rng):
    check_grads(_passes_functions_on, (rng.normal(size=3),), order=2, modes=("fwd", "rev"))
    x, y = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(tp.jit(_through_local_functions)(x, y),
                               _through_local_functions(x, y), rtol=1e-15)
    check_grads(_through_local_functions, (x, y), order=2, modes=("fwd", "rev"))
    xs = rng.normal(size=(4, 3))
    np.testing.assert_allclose(tp.vmap(_through_local_functions, in_axes=(0, None))(xs, y),
                               [_through_local_functions(v, y) for v in xs], rtol=1e-14)


# ---------------------------------------------------------------- a nested function's default
# that is not a constant (Myia's fact_opt: `def fact(n=x)`), refused before: evaluated where
# the def is, as Python does

def _factorial_from(x):
    def fact(n=x):
        if n <= 1:
            return 1.0
        return n * fact(n - 1)
    return fact()


def _scaled_by_default(x, y):
    scale = np.sin(y)
    h = lambda v, s=scale * 2.0: v * s      # noqa: E731
    return np.sum(h(x)) + np.sum(h(x, 1.0))


def test_nested_defaults_that_are_not_constants(rng):
    assert tp.grad(_factorial_from)(3.5) == pytest.approx(3 * 3.5 ** 2 - 6 * 3.5 + 2, rel=1e-14)
    x, y = rng.normal(size=2), 0.3
    check_grads(_scaled_by_default, (x, y), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.grad(_scaled_by_default)(x, y), 2 * np.sin(y) + 1.0,
                               rtol=1e-15)


# ---------------------------------------------------------------- functions chosen by a
# conditional expression and lambdas called where they are written (Myia's c_switch_nontail,
# JAX's api_test): refused before

def _chosen_and_called(x, y):
    a = (np.sin if x > y else np.cos)(x * y)
    b = (lambda v: v * x)(y) + (lambda: 2.0)()
    return a + b + (np.tanh if x < y else (lambda v: v * v))(y)


@pytest.mark.parametrize("x", [0.3, 0.9])
def test_functions_chosen_by_a_conditional_expression(x):
    y = 0.5
    expected = (np.sin(x * y) if x > y else np.cos(x * y)) + y * x + 2.0 + \
        (np.tanh(y) if x < y else y * y)
    assert tp.jit(_chosen_and_called)(x, y) == pytest.approx(expected, rel=1e-15)
    check_grads(_chosen_and_called, (x, y), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.vmap(_chosen_and_called)(np.array([0.3, 0.9]),
                                                           np.array([y, y])),
                               [_chosen_and_called(0.3, y), _chosen_and_called(0.9, y)],
                               rtol=1e-15)


# ---------------------------------------------------------------- JAX's docs pages (jit,
# cookbook): transformations of NumPy functions and of partials of constants inside code

def _jit_of_numpy_inside(y):
    return tp.jit(np.sin)(y) + tp.grad(np.tanh)(y)


def _scaled_sin(a, x):
    return a * np.sin(x)


def _jit_of_partial_inside(x):
    return tp.jit(functools.partial(_scaled_sin, 2.0))(x)


_GLOBAL_LOG = []


def _appends_to_a_global(x):
    _GLOBAL_LOG.append(x)
    return np.log(x)


def test_transformations_of_numpy_functions_and_partials_inside_code():
    y = 0.3
    assert tp.grad(_jit_of_numpy_inside)(y) == pytest.approx(
        np.cos(y) - 2 * np.tanh(y) * (1 - np.tanh(y) ** 2), rel=1e-14)
    np.testing.assert_allclose(tp.vmap(_jit_of_numpy_inside)(np.array([0.3, 0.5])),
                               [_jit_of_numpy_inside(0.3), _jit_of_numpy_inside(0.5)],
                               rtol=1e-15)
    assert tp.grad(_jit_of_partial_inside)(y) == pytest.approx(2.0 * np.cos(y), rel=1e-15)
    with pytest.raises(tp.TransformError, match="_GLOBAL_LOG.append changes a list"):
        tp.jit(_appends_to_a_global)(3.0)


def _through_float32(x):
    return np.sum(np.float32(x) * np.sin(x)) + np.sum(np.float16(x[:1]))


def test_numpy_float32_called_on_values():
    # JAX docs (control flow): `np.float32(1.0)` had no rule
    x = np.array([0.3, 1.2])
    g = tp.grad(_through_float32)(x)
    expected = np.float32(x) * np.cos(x) + np.sin(x)
    expected[0] += 1.0
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    np.testing.assert_allclose(tp.vmap(_through_float32)(np.stack([x, 2 * x])),
                               [_through_float32(x), _through_float32(2 * x)], rtol=1e-6)


def _ufunc_methods(x):
    return (np.add.reduce(x) @ np.ones(3) + np.sum(np.maximum.reduce(x, 1)) +
            np.sum(np.multiply.reduce(x, axis=1)) + np.sum(np.add.accumulate(x, axis=1)) +
            np.sum(np.multiply.accumulate(x)) + np.minimum.reduce(x, axis=None))


def test_ufunc_reduce_and_accumulate(rng):
    # JAX's batching_test ports: `np.add.reduce`, `np.maximum.reduce`, ... had no rule
    x = rng.normal(size=(4, 3))
    assert tp.jit(_ufunc_methods)(x) == pytest.approx(_ufunc_methods(x), rel=1e-14)
    check_grads(_ufunc_methods, (x,), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.vmap(_ufunc_methods)(np.stack([x, 2 * x])),
                               [_ufunc_methods(x), _ufunc_methods(2 * x)], rtol=1e-14)


def _ufunc_outers(a, b):
    return (np.sum(np.sin(np.multiply.outer(a, b)) + np.subtract.outer(b, a).T ** 2) +
            np.sum(np.logaddexp.reduce(np.add.outer(a, a), axis=1)) +
            np.logaddexp.reduce(a) * np.sum(np.power.outer(np.abs(a) + 0.5, b[0])))


def test_ufunc_outer_and_logaddexp_reduce(rng):
    # the refusals of the JAX ports: `np.multiply.outer` and `np.logaddexp.reduce`
    a, b = rng.normal(size=3), rng.normal(size=(2, 2))
    assert tp.jit(_ufunc_outers)(a, b) == pytest.approx(_ufunc_outers(a, b), rel=1e-14)
    check_grads(_ufunc_outers, (a, b), order=2, modes=("fwd", "rev"))
    A, B = rng.normal(size=(4, 3)), rng.normal(size=(4, 2, 2))
    for in_axes in [(0, None), (None, 0), (0, 0)]:
        args = (A if in_axes[0] == 0 else a, B if in_axes[1] == 0 else b)
        looped = [_ufunc_outers(A[k] if in_axes[0] == 0 else a, B[k] if in_axes[1] == 0
                                else b) for k in range(4)]
        np.testing.assert_allclose(tp.vmap(_ufunc_outers, in_axes)(*args), looped,
                                   rtol=1e-13)
    np.testing.assert_allclose(tp.vmap(tp.grad(_ufunc_outers))(A, B),
                               [tp.grad(_ufunc_outers)(x, y) for x, y in zip(A, B)],
                               rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(tp.vmap(_ufunc_outers))(A[None], B[None])[0],
                               [_ufunc_outers(x, y) for x, y in zip(A, B)], rtol=1e-13)


# ---------------------------------------------------------------- a function passed to a
# helper whose parameter has the function's own name (jax-md's `shift_fn`, `def helper(predict,
# ...)` given `predict`): the helper's parameter hid the module-level function of that name,
# and plain, jit and pmap code called None

def _signed(w, x):
    return np.sum(w * x) if np.sum(x) > 0 else -np.sum(w * x)


def _through(_signed, w, x):
    return _signed(w, x)


def _calls_through(w, x):
    return _through(_signed, w, x) ** 2


def _periodic(side):
    def shift_fn(r, dr):
        return np.mod(r + dr, side)
    return shift_fn


def _position_step(x, shift_fn, dt):
    return shift_fn(x, dt * x)


def _make_step(shift_fn):
    def step(x):
        return _position_step(x, shift_fn, 0.5)
    return step


def test_a_function_passed_under_its_own_name():
    w, x = np.array([1.0, 2.0]), np.array([-1.0, -3.0])
    assert tp.jit(_calls_through)(w, x) == _calls_through(w, x)
    np.testing.assert_allclose(tp.grad(_calls_through)(w, x), 2 * np.sum(w * x) * x, rtol=1e-15)
    step = _make_step(_periodic(2.0))
    x = np.array([0.3, 1.7])
    np.testing.assert_allclose(tp.jit(step)(x), step(x), rtol=1e-15)
    np.testing.assert_allclose(tp.vmap(step)(np.stack([x, x / 2])),
                               np.stack([step(x), step(x / 2)]), rtol=1e-15)


# ---------------------------------------------------------------- ** in dict displays and
# in calls (refusals of the JAX ports and jax-md: `{**defaults, **params}`, `f(**kwargs)`)

_SUM_OPTIONS = {"axis": 0, "keepdims": True}


def _affine_kw(x, scale=1.0, shift=0.0):
    return x * scale + shift


def _merges(x, p):
    a = {"w": x * 2.0, "b": 1.0}
    c = {**a, "b": x[0], **p}           # "w" from p (the last), "b" written, "z" from p
    kw = {"scale": 3.0, "shift": x[1]}
    total = np.sum(c["w"] * c["b"] * c["z"], **_SUM_OPTIONS) + _affine_kw(x, **kw)
    return np.sum(total + _affine_kw(x, **{"scale": x[2]})), list(c)


def _keys_grown(x):
    kw = {"scale": 2.0}
    kw["shift"] = x[0]
    return np.sum(_affine_kw(x, **kw))


def _summed_with_options(m):
    return np.sum(np.sum(m, **_SUM_OPTIONS) ** 2)


def test_double_star_in_dict_displays_and_calls(rng):
    x = rng.uniform(0.5, 2.0, 3)
    p = {"z": rng.normal(size=3), "w": rng.normal(size=3)}
    value, keys = _merges(x, p)
    assert keys == ["w", "b", "z"] and tp.jit(_merges)(x, p)[1] == keys
    assert tp.jit(_merges)(x, p)[0] == pytest.approx(value, rel=1e-14)
    check_grads(lambda x: _merges(x, p)[0], (x,), order=2, modes=("fwd", "rev"))
    xs = rng.uniform(0.5, 2.0, (4, 3))
    np.testing.assert_allclose(tp.vmap(lambda x: _merges(x, p)[0])(xs),
                               [_merges(v, p)[0] for v in xs], rtol=1e-13)
    grad = tp.grad(lambda x: _merges(x, p)[0])
    np.testing.assert_allclose(tp.vmap(grad)(xs), [grad(v) for v in xs], rtol=1e-12)
    with pytest.raises(tp.TransformError, match="the code was made for the keys"):
        tp.grad(_keys_grown)(x)


def test_double_star_of_a_module_dict_follows_its_changes(monkeypatch):
    m = np.arange(6.0).reshape(2, 3)
    grad = tp.grad(_summed_with_options)
    monkeypatch.setitem(_SUM_OPTIONS, "keepdims", False)
    for axis in (0, 1, None):
        monkeypatch.setitem(_SUM_OPTIONS, "axis", axis)
        expected = 2 * np.broadcast_to(np.sum(m, axis=axis, keepdims=True), m.shape)
        np.testing.assert_allclose(grad(m), expected, rtol=1e-15)
        assert tp.jit(_summed_with_options)(m) == _summed_with_options(m)


# ---------------------------------------------------------------- np.vectorize: the function
# over the broadcast elements as a vmap (it was refused: no rule for numpy.vectorize)

@np.vectorize
def _piecewise(x, y):
    if x > y:
        return np.sin(x) * y
    return x ** 2 + y


@np.vectorize
def _int_or_half(x):
    return 1 if x > 0.5 else 0.5          # numpy: the first element's output decides: int


@np.vectorize
def _two_outputs(x, p):
    return x * p, x - p


_weighted = np.vectorize(lambda x, w: x * np.sum(w), excluded={1})
_indicator = np.vectorize(lambda x: 1 if x > 0.5 else 0, otypes=[float])


def _vectorized(x, y):
    inner = np.vectorize(lambda a: a * y[0] if a > 0.5 else -a)
    a, b = _two_outputs(x, 2.0)
    return (np.sum(_piecewise(x, y)) + np.sum(inner(x)) + np.sum(np.vectorize(np.cos)(x)) +
            np.sum(a * b) + np.sum(_weighted(x, y)) + np.sum(_indicator(x) * x))


def test_np_vectorize(rng):
    x, y = rng.uniform(0.0, 1.0, (3, 4)), rng.uniform(0.0, 1.0, 4)
    assert tp.jit(_vectorized)(x, y) == pytest.approx(_vectorized(x, y), rel=1e-14)
    check_grads(_vectorized, (x, y), order=2, modes=("fwd", "rev"))
    xs, ys = rng.uniform(0.0, 1.0, (5, 3, 4)), rng.uniform(0.0, 1.0, (5, 4))
    np.testing.assert_allclose(tp.vmap(_vectorized)(xs, ys),
                               [_vectorized(a, b) for a, b in zip(xs, ys)], rtol=1e-13)
    grad = tp.grad(_vectorized)
    np.testing.assert_allclose(tp.vmap(grad)(xs, ys), [grad(a, b) for a, b in zip(xs, ys)],
                               rtol=1e-12)
    x[0, 0] = 0.9                          # the first output an int: every result truncated
    for fn in (lambda v: _int_or_half(v) * v, _indicator):
        got, expected = tp.jit(fn)(x), fn(x)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    assert tp.grad(lambda v: np.sum(_piecewise(v, 0.5)))(0.3) == pytest.approx(0.6)


# ---------------------------------------------------------------- np.piecewise: each function
# on the elements its condition selects (refused before: no rule for numpy.piecewise)

_PIECES = (np.sin, 0.25)


def _piecewise_model(x, a):
    y = np.piecewise(x, [x < 0.3, x > 0.7], [lambda v: np.log(v) * a,
                                             lambda v: np.sqrt(v - 0.7) * v, lambda v: v * v])
    z = np.piecewise(x, [x < 0.5], _PIECES)
    w = np.piecewise(x, [x < 0.4, x >= 0.4], [lambda v, s: v * s, lambda v, s: -v * s], a)
    return np.sum(y) + np.sum(z * x) + np.sum(w)


def test_np_piecewise(rng):
    """log and sqrt meet only the elements their conditions select: no nan, no warning,
    in the value or the derivative, under vmap too (each example's own selection)."""
    x, a = rng.uniform(0.05, 0.95, (3, 4)), 1.3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tp.jit(_piecewise_model)(x, a) == pytest.approx(_piecewise_model(x, a),
                                                               rel=1e-14)
        check_grads(_piecewise_model, (x, a), order=2, modes=("fwd", "rev"))
        xs = rng.uniform(0.05, 0.95, (5, 3, 4))
        np.testing.assert_allclose(tp.vmap(_piecewise_model, (0, None))(xs, a),
                                   [_piecewise_model(v, a) for v in xs], rtol=1e-13)
        grad = tp.grad(_piecewise_model)
        np.testing.assert_allclose(tp.vmap(grad, (0, None))(xs, a),
                                   [grad(v, a) for v in xs], rtol=1e-12)
    ints = np.arange(6)                    # numpy keeps x's dtype: 4.5 becomes 4
    halves = lambda v: np.piecewise(v, [v > 2], [lambda u: u * 1.5, 0])    # noqa: E731
    np.testing.assert_array_equal(tp.jit(halves)(ints), halves(ints))


def _row_stats(r, p):
    return np.array([np.sum(r ** 2) * p, np.max(r), r[0] - r[-1]])


def _along_axes(x, p):
    a = np.apply_along_axis(lambda r: np.sqrt(np.sum(r * r)), 1, x)
    b = np.apply_along_axis(_row_stats, 0, x, p)           # outputs' axis where axis 0 was
    c = np.apply_along_axis(lambda r: np.outer(r, r) * p, -1, x)
    return np.sum(a) + np.sum(b * b) + np.sum(c), (a.shape, b.shape, c.shape)


def test_np_apply_along_axis(rng):
    """A vmap of the function over the 1-d slices (it was refused: no rule)."""
    x, p = rng.normal(size=(3, 4, 5)), 0.7
    got = tp.jit(_along_axes)(x, p)
    assert got[1] == _along_axes(x, p)[1] == ((3, 5), (3, 4, 5), (3, 4, 5, 5))
    assert got[0] == pytest.approx(_along_axes(x, p)[0], rel=1e-14)
    check_grads(lambda x, p: _along_axes(x, p)[0], (x, p), order=2, modes=("fwd", "rev"))
    xs = rng.normal(size=(4, 3, 4, 5))
    grad = tp.grad(lambda x: _along_axes(x, p)[0])
    np.testing.assert_allclose(tp.vmap(grad)(xs), [grad(v) for v in xs], rtol=1e-12)
    first_int = lambda v: np.apply_along_axis(lambda r: 1 if r[0] > 0 else 0.5, 1, v)  # noqa
    x[0, 0, 0] = 1.0                       # numpy: the first slice's int output decides
    np.testing.assert_array_equal(tp.jit(first_int)(x[0]), first_int(x[0]))


# ---------------------------------------------------------------- .real and .imag of arrays and
# numbers (`np.fft.fft(x).real`: refused before, "write np.real(x)")

def _real_and_imag(x):
    z = np.fft.fft(x) * (1 + 0.5j)
    return np.sum(z.real ** 2 - z.imag * x) + np.sum(x.T.real) + (1.5 + 2j).imag * np.sum(x)


def _of_complex(z):
    return np.sum(np.abs(z.real) + z.imag ** 2)


def test_real_and_imag_attributes(rng):
    x = rng.normal(size=4)
    assert tp.jit(_real_and_imag)(x) == pytest.approx(_real_and_imag(x), rel=1e-14)
    check_grads(_real_and_imag, (x,), order=2, modes=("fwd", "rev"))
    xs = rng.normal(size=(3, 4))
    grad = tp.grad(_real_and_imag)
    np.testing.assert_allclose(tp.vmap(grad)(xs), [grad(v) for v in xs], rtol=1e-12)
    z = rng.normal(size=3) + 1j * rng.normal(size=3)
    # JAX's convention for a real function of z: df/dx - i df/dy
    np.testing.assert_allclose(tp.grad(_of_complex)(z), np.sign(z.real) - 2j * z.imag,
                               rtol=1e-14)


def _more_methods(x):
    return (np.sum(x.take([2, 0], axis=1) ** 2) + np.sum(x.conjugate()) * 0.5 +
            np.sum(np.sort(x[0]).searchsorted(0.0) * x))     # (a sorted array)


def test_take_conjugate_and_searchsorted_methods(rng):
    # JAX's batching_test ports: `x.take` was refused ("method '.take()' is not supported")
    x = rng.normal(size=(3, 4))
    assert tp.jit(_more_methods)(x) == pytest.approx(_more_methods(x), rel=1e-14)
    check_grads(_more_methods, (x,), order=2, modes=("fwd", "rev"))
    xs = rng.normal(size=(2, 3, 4))
    np.testing.assert_allclose(tp.vmap(_more_methods)(xs), [_more_methods(v) for v in xs],
                               rtol=1e-13)


def _vectorize_forms(x):
    v = np.vectorize(lambda a, b: a if b is None else a + b, otypes=[float])
    poly = np.vectorize(lambda p, t: np.polyval(p, t), excluded={0})
    return np.sum(v(x, None)) + np.sum(poly([1.0, 2.0, 3.0], x) * x)


def _scalar_piecewise(y):
    return np.piecewise(y, [y < 0, y >= 0], [lambda v: -v, lambda v: np.log(v + 1.0)])


def test_vectorize_none_excluded_names_and_piecewise_of_numbers(rng):
    """(the helper's findings) None given to an np.vectorize is passed as it is; otypes as
    a list written in the code; an excluded position; np.piecewise of one number
    under vmap takes each example's branch (it was refused as a ragged selection)."""
    x = rng.normal(size=4)
    assert tp.jit(_vectorize_forms)(x) == pytest.approx(_vectorize_forms(x), rel=1e-14)
    check_grads(_vectorize_forms, (x,), order=2, modes=("fwd", "rev"))
    ys = np.array([-2.0, 3.0, 0.5, -0.25])
    np.testing.assert_allclose(tp.vmap(_scalar_piecewise)(ys),
                               [_scalar_piecewise(y) for y in ys], rtol=1e-15)
    np.testing.assert_allclose(tp.vmap(tp.grad(_scalar_piecewise))(ys),
                               np.where(ys < 0, -1.0, 1.0 / (ys + 1.0)), rtol=1e-15)


def _scalars_of_dtypes(x, n):
    zero = x.dtype.type(0)
    half = x.dtype.type(x[0] * 0.5)
    count = n.dtype.type(x[1] * 3)           # to an integer dtype: no derivative
    return np.sum(np.maximum(x, zero)) * half + count


def test_a_scalar_of_an_arrays_dtype():
    """`x.dtype.type(0)` (JAX code's scalar of x's dtype; 33 refusals of the
    lax_control_flow_test port: "method '.type()' is not supported")."""
    x, n = np.array([0.7, -1.3, 2.2]), np.arange(3)
    got = tp.jit(_scalars_of_dtypes)(x, n)
    assert got == _scalars_of_dtypes(x, n) and type(got) is np.float64
    check_grads(lambda v: _scalars_of_dtypes(v, n), (x,), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.grad(_scalars_of_dtypes)(x, n),
                               [0.35 + 0.5 * (0.7 + 2.2), 0.0, 0.35], rtol=1e-14)
    xs = np.stack([x, 2 * x])
    np.testing.assert_allclose(tp.vmap(_scalars_of_dtypes, (0, None))(xs, n),
                               [_scalars_of_dtypes(v, n) for v in xs], rtol=1e-15)


# ---------------------------------------------------------------- functions passed in, used nested

def _gram(kernel, xs):          # JAX's examples/kernel_lsq.py
    return tp.vmap(lambda x: tp.vmap(lambda y: kernel(x, y))(xs))(xs)


def _mesh(func, xs):            # JAX's examples/advi.py, _mesh_eval
    return tp.vmap(func, in_axes=(0, None))(xs, 1.5)


def _elbo(logprob, w, mean):
    return logprob(mean * w)


def _batch_elbo(ws, mean):      # advi's batch_elbo: vmap of a partial made in the code
    return np.mean(tp.vmap(functools.partial(_elbo, np.sin), in_axes=(0, None))(ws, mean))


def _rbf(a, b):
    return np.exp(-np.sum((a - b) ** 2))


def test_function_arguments_called_in_nested_functions_and_vmapped():
    """A function passed to the transformed function, called inside a lambda given to vmap
    or handed to vmap itself, and vmap of functools.partial(f, np.sin) made in the code:
    all were refused ("calling a function held in a variable")."""
    rng = np.random.default_rng(69)
    xs = rng.normal(size=(4, 3))
    expected = np.exp(-((xs[:, None] - xs[None]) ** 2).sum(-1))
    np.testing.assert_allclose(tp.jit(_gram)(_rbf, xs), expected, rtol=1e-12)
    np.testing.assert_allclose(tp.jit(functools.partial(_gram, _rbf))(xs), expected,
                               rtol=1e-12)
    check_grads(lambda z: np.sum(_gram(_rbf, z) ** 2), (xs,), order=1)
    np.testing.assert_allclose(tp.jit(_mesh)(np.multiply, xs), xs * 1.5, rtol=1e-12)
    np.testing.assert_allclose(tp.jit(_mesh)(_rbf, xs), [_rbf(x, 1.5) for x in xs],
                               rtol=1e-12)
    ws, mean = rng.normal(size=3), rng.normal(size=2)
    np.testing.assert_allclose(tp.jit(_batch_elbo)(ws, mean),
                               np.mean([np.sin(mean * w) for w in ws]), rtol=1e-12)
    check_grads(_batch_elbo, (ws, mean), order=2)


class _Scale:
    def __init__(self, x):
        self.x = x

    @tp.jit
    def calc(self, y):
        return self.x * y


tp.tree_util.register_pytree_node(_Scale, lambda s: ((s.x,), None), lambda _, c: _Scale(*c))


def test_a_method_jitted_in_its_class_called_in_transformed_code():
    """JAX's Sharp Bits, strategy 3: `@tp.jit` on a method of a registered class; called
    inside grad, jit or vmap it was "Scale has no method 'calc'"."""
    s = _Scale(2.0)
    assert tp.grad(lambda s, y: s.calc(y) ** 2, 1)(s, 3.0) == 24.0
    assert tp.grad(lambda s, y: s.calc(y) ** 2)(s, 3.0).x == 36.0
    assert tp.jit(lambda s, y: s.calc(y) * 1.0)(s, 3.0) == 6.0
    np.testing.assert_allclose(tp.vmap(lambda s, y: s.calc(y), in_axes=(None, 0))(
        s, np.arange(3.0)), [0.0, 2.0, 4.0])


def _debug_printed(x):
    tp.debug.print("x = {x}, total = {:.1f}", np.sum(x), x=x)
    return np.sum(x ** 2)


def test_jax_spellings_debug_print_jacobian_and_transpile_random(capsys):
    x = np.array([1.0, 2.0])
    for f in (_debug_printed, tp.jit(_debug_printed)):
        assert f(x) == 5.0
        assert capsys.readouterr().out == "x = [1. 2.], total = 3.0\n"
    np.testing.assert_allclose(tp.grad(_debug_printed)(x), 2 * x)
    assert "total = 3.0" in capsys.readouterr().out
    tp.vmap(_debug_printed)(np.stack([x, x]))     # the batch, printed once
    assert capsys.readouterr().out.count("x = ") == 1
    np.testing.assert_allclose(tp.jacobian(np.sin)(x), np.diag(np.cos(x)))
    import transpile.random
    assert transpile.random is tp.random


def _all_any_branch(x):
    if all(v > 0 for v in x) or any([x[0] < -1.0, x[1] > 5.0]):
        return np.sum(x ** 2)
    return np.sum(np.sin(x))


def test_builtin_all_and_any():
    """Python's all() and any() had no rule; under vmap each example has its own answer."""
    rng = np.random.default_rng(70)
    xs = np.concatenate([np.abs(rng.normal(size=(2, 2))), rng.normal(size=(6, 2)) * 3])
    np.testing.assert_allclose(tp.vmap(_all_any_branch)(xs), [_all_any_branch(x) for x in xs])
    np.testing.assert_allclose(tp.vmap(tp.grad(_all_any_branch))(xs),
                               [tp.grad(_all_any_branch)(x) for x in xs])
    for x in xs[:3]:
        assert tp.jit(_all_any_branch)(x) == _all_any_branch(x)
        check_grads(_all_any_branch, (x,), order=2)
    nested = tp.vmap(tp.vmap(_all_any_branch))(np.stack([xs, -xs]))
    np.testing.assert_allclose(nested, [[_all_any_branch(x) for x in s] for s in (xs, -xs)])
    with pytest.raises(tp.TransformError, match="ambiguous"):
        tp.vmap(lambda m: all(m))(np.ones((2, 3, 3)))


def _masked_copy_written(w):      # sklearn's NMF _beta_divergence
    wh = w * 2.0
    d = wh[wh > 0.5]              # a boolean index copies: writing into d leaves wh alone
    d[d < 1.0] = 1.0
    return np.sum(wh ** 2) + np.sum(d ** 2)


def _reshaped_by_method(c):
    w = c.reshape(3, -1, order="F")
    v = c.reshape((2, 3), order="C")
    return np.sum(w[:, 0] * np.arange(3.0)) + np.sum(w ** 3) + np.sum(v[0] * v[1])


def test_writes_into_a_mask_copy_and_reshape_order_as_a_method():
    """`d = wh[wh > 0.5]; d[...] = 1.0` was refused (d taken for a view of wh), and
    `x.reshape(shape, order="F")` (the method) was refused where np.reshape took it."""
    rng = np.random.default_rng(71)
    w = np.abs(rng.normal(size=6))
    np.testing.assert_allclose(tp.jit(_masked_copy_written)(w), _masked_copy_written(w))
    check_grads(_masked_copy_written, (w,), order=2, modes=("fwd", "rev"))
    c = rng.normal(size=6)
    check_grads(_reshaped_by_method, (c,), order=2, modes=("fwd", "rev"))
    cs = rng.normal(size=(3, 6))
    np.testing.assert_allclose(tp.vmap(_reshaped_by_method)(cs),
                               [_reshaped_by_method(x) for x in cs], rtol=1e-12)


def _cast_on_the_way(x, p):      # scipy.optimize.rosen_hess_prod: p = np.asarray(p, x.dtype)
    p = np.asarray(p, dtype=x.dtype)
    a = np.array([x[0] ** 2, x[1] * x[0]], float)
    b = np.asarray(x * p, dtype=np.float64)
    return np.sum(a * p) + np.sum(b) + np.sum(np.array(x, dtype=int))


def test_asarray_and_array_with_a_dtype():
    """np.asarray(p, dtype=x.dtype) and np.array([...], float) were refused ('dtype' not
    supported by the rule); asarray's cast may be the array itself (writes are followed)."""
    x, p = np.array([1.5, 2.25]), np.array([0.5, -1.0])
    np.testing.assert_allclose(tp.jit(_cast_on_the_way)(x, p), _cast_on_the_way(x, p))
    np.testing.assert_allclose(tp.grad(_cast_on_the_way, 1)(x, p), [x[0] ** 2 + x[0],
                                                                  x[1] * x[0] + x[1]],
                               rtol=1e-12)
    assert tp.grad(lambda v: np.sum(np.asarray(v, dtype=np.float32)))(x).dtype == np.float64
    check_grads(lambda q: _cast_on_the_way(x, q), (p,), order=2, modes=("fwd", "rev"))
    ps = np.stack([p, p + 1.0])
    np.testing.assert_allclose(tp.vmap(_cast_on_the_way, in_axes=(None, 0))(x, ps),
                               [_cast_on_the_way(x, q) for q in ps], rtol=1e-6)

    def written_through(v):
        y = v * 1.0
        z = np.asarray(y, dtype=y.dtype)      # y itself: numpy's write reaches y
        z[0] = 5.0
        return np.sum(y * v)
    with pytest.raises(tp.TransformError, match=r"\[aliasing\]"):
        tp.grad(written_through)(x)


def test_relative_import_in_a_function_and_astype_copy_false(tmp_path, monkeypatch):
    """`from .chebyshev import ...` inside a function (numpy.polynomial's cheb2poly) raised
    ModuleNotFoundError; x.astype(float, copy=False) (scipy's simpson) a TypeError."""
    package = tmp_path / "relpkg_for_tp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("def helper(x):\n    return 2.0 * x\n")
    (package / "user.py").write_text(
        "import numpy as np\n\n\ndef g(x):\n    from .helpers import helper\n"
        "    from . import helpers\n"
        "    y = x.astype(float, copy=False)\n"
        "    return np.sum(helper(y) * x) + np.sum(helpers.helper(x))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from relpkg_for_tp.user import g
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(tp.grad(g)(x), 4.0 * x + 2.0)
    assert tp.jit(g)(x) == g(x)


# ---------------------------------------------------------------- more statement forms

def _first_large(x, limit):
    total = 0.0
    for xi in x:
        if xi > limit:
            total = total + 3.0 * xi
            break
        total = total + np.sin(xi)
    else:
        total = total * np.cos(x[0])      # only when no break
    return total


def _while_else(x):
    k = 0
    while k < 3:
        x = np.tanh(x) * 1.5
        k += 1
    else:
        x = x + x ** 2
    return np.sum(x)


def _walrus(x):
    if (n := x.shape[0]) > 2 and (s := np.sum(x ** 2)) > 0.1:
        return s / n
    return np.mean(x) * (m := 2.0) + m


def _matched(x, kind):
    match kind.lower():
        case "sum":
            out = np.sum(np.sin(x))
        case "max" | "top":
            out = np.max(x ** 2)
        case other if other.startswith("p"):
            out = np.prod(x)
        case _:
            out = np.mean(x)
    return out


def _deleted_and_silenced(x):
    import warnings as w
    y = np.exp(x)
    z = y * x
    del y
    with w.catch_warnings():
        w.simplefilter("ignore")
        with np.errstate(divide="ignore"):
            z = z + np.log(np.abs(x))
    return np.sum(z)


def test_for_and_while_else_run_the_else_block_only_without_break(rng):
    x = rng.uniform(0.1, 0.5, size=4)
    check_grads(lambda v: _first_large(v, 10.0), (x,), order=2, modes=("rev", "fwd"))
    big = x.copy()
    big[2] = 0.9                         # breaks at index 2: no else block
    for v in (x, big):
        assert np.allclose(tp.grad(_first_large)(v, 0.8), _numeric_grad(
            lambda u: _first_large(u, 0.8), v))
        assert np.isclose(tp.jit(_first_large)(v, 0.8), _first_large(v, 0.8))
    xs = np.stack([x, big, x * 0.5])
    assert np.allclose(tp.vmap(_first_large, (0, None))(xs, 0.8),
                       [_first_large(v, 0.8) for v in xs])
    assert np.allclose(tp.vmap(tp.grad(_first_large), (0, None))(xs, 0.8),
                       [tp.grad(_first_large)(v, 0.8) for v in xs])
    check_grads(_while_else, (rng.normal(size=3),), order=2, modes=("rev", "fwd"))


def _numeric_grad(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        out.flat[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


def test_assignment_expressions_bind_where_python_binds(rng):
    x = rng.uniform(0.5, 1.5, size=4)        # sum of squares > 0.1: the first branch
    check_grads(_walrus, (x,), order=2, modes=("rev", "fwd"))
    check_grads(_walrus, (x * 0.01,), order=1, modes=("rev", "fwd"))   # the other branch
    assert np.isclose(tp.jit(_walrus)(x), _walrus(x))
    xs = np.stack([x, 0.01 * x, -x])
    assert np.allclose(tp.vmap(_walrus)(xs), [_walrus(v) for v in xs])


@pytest.mark.parametrize("kind", ["Sum", "max", "TOP", "prod", "mean"])
def test_match_statements_and_string_methods(rng, kind):
    x = rng.uniform(0.5, 1.5, size=3)
    check_grads(lambda v: _matched(v, kind), (x,), order=2, modes=("rev", "fwd"))
    assert np.isclose(tp.jit(_matched, static_argnums=(1,))(x, kind), _matched(x, kind))
    xs = rng.uniform(0.5, 1.5, size=(4, 3))
    assert np.allclose(tp.vmap(_matched, (0, None))(xs, kind), [_matched(v, kind) for v in xs])


def test_del_of_names_and_with_blocks_that_change_no_number(rng):
    x = rng.uniform(0.2, 1.0, size=3)
    check_grads(_deleted_and_silenced, (x,), order=2, modes=("rev", "fwd"))
    xs = rng.uniform(0.2, 1.0, size=(2, 3))
    assert np.allclose(tp.vmap(_deleted_and_silenced)(xs), [_deleted_and_silenced(v)
                                                             for v in xs])


def _del_item(d):
    del d["a"]
    return d["b"] * 2.0


def _match_sequence(x):
    match x.shape:
        case (n, m):
            return np.sum(x) * n
    return np.sum(x)


def _global_write(x):
    global _COUNT
    _COUNT = 1
    return np.sum(x)


def _with_open(x):
    with open("/dev/null") as f:
        f.write("")
    return np.sum(x)


@pytest.mark.parametrize("f, message", [
    (_del_item, "del of an item"), (_match_sequence, "MatchSequence patterns"),
    (_global_write, "writing a global"), (_with_open, "this with-block")])
def test_statement_forms_left_refused_clearly(f, message):
    with pytest.raises(tp.TransformError, match=message):
        tp.grad(f)({"a": 1.0, "b": 2.0} if f is _del_item else np.ones(2))


# ---------------------------------------------------------------- try/except

def _jittered_cholesky_loss(K, y):
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        L = np.linalg.cholesky(K + 10.0 * np.eye(K.shape[0]))
    else:
        L = L * 1.5                          # only when the factor exists
    finally:
        y = y * 2.0
    return np.sum(np.linalg.solve(L, y) ** 2)


def _first_solvable(As, b):
    total = 0.0
    for k in range(As.shape[0]):
        try:
            x = np.linalg.solve(As[k], b)
        except (np.linalg.LinAlgError, ValueError):
            continue
        except ZeroDivisionError:
            x = b
        total = total + np.sum(np.sin(x))
    return total


def _returns_in_try(x):
    try:
        return np.sum(np.sqrt(x)) / np.linalg.det(np.diag(x) - 1.0)
    except np.linalg.LinAlgError:
        return 0.0


def test_try_except_takes_the_path_python_takes(rng):
    a = rng.normal(size=(3, 3))
    good = a @ a.T + np.eye(3)
    b = rng.normal(size=(3, 3))
    bad = b @ b.T - 4.0 * np.eye(3)          # not positive definite: the handler runs
    y = rng.normal(size=3)
    for K in (good, bad):
        assert np.isclose(tp.jit(_jittered_cholesky_loss)(K, y), _jittered_cholesky_loss(K, y))
        check_grads(_jittered_cholesky_loss, (K, y), order=2, modes=("rev", "fwd"))
    Ks, ys = np.stack([good, bad, 2.0 * good]), np.stack([y, -y, y])
    assert np.allclose(tp.vmap(_jittered_cholesky_loss)(Ks, ys),
                       [_jittered_cholesky_loss(K, v) for K, v in zip(Ks, ys)])
    grad = tp.grad(_jittered_cholesky_loss)
    assert np.allclose(tp.vmap(grad)(Ks, ys), np.stack([grad(K, v) for K, v in zip(Ks, ys)]))


def test_try_except_in_a_loop_with_continue_and_several_handlers(rng):
    As = 0.3 * rng.normal(size=(3, 2, 2)) + 2.0 * np.eye(2)     # well conditioned
    As[1] = [[1.0, 2.0], [2.0, 4.0]]          # singular: skipped
    b = rng.normal(size=2)
    assert np.isclose(tp.jit(_first_solvable)(As, b), _first_solvable(As, b))
    # (finite differences would make the singular matrix solvable: compare with the
    # function of the other two, whose derivatives they check)
    kept = As[[0, 2]]
    check_grads(_first_solvable, (kept, b), order=2, modes=("rev", "fwd"))
    dAs, db = tp.grad(_first_solvable, argnums=(0, 1))(As, b)
    want_dA, want_db = tp.grad(_first_solvable, argnums=(0, 1))(kept, b)
    assert np.allclose(dAs[[0, 2]], want_dA) and np.all(dAs[1] == 0)
    assert np.allclose(db, want_db)
    _, tangent = tp.jvp(_first_solvable, (As, b), (np.ones_like(As), np.ones_like(b)))
    assert np.isclose(tangent, tp.jvp(_first_solvable, (kept, b),
                                      (np.ones_like(kept), np.ones_like(b)))[1])
    x = rng.uniform(2.0, 3.0, size=3)
    check_grads(_returns_in_try, (x,), order=2, modes=("rev", "fwd"))


def _writes_in_try(x):
    y = np.zeros(3)
    try:
        y[0] = np.linalg.det(np.diag(x))
    except np.linalg.LinAlgError:
        pass
    return np.sum(y)


def _half_done(x):
    try:
        t = x * 2.0
        u = np.linalg.inv(np.diag(t))
    except np.linalg.LinAlgError:
        u = np.eye(3)
    return np.sum(u) + np.sum(t)


def _keeps_the_exception(x):
    try:
        u = np.linalg.inv(np.diag(x))
    except np.linalg.LinAlgError as error:
        u = np.eye(3)
    return np.sum(u)


@pytest.mark.parametrize("f, message", [
    (_writes_in_try, "only assignments to names"), (_half_done, "'t' is bound in this try"),
    (_keeps_the_exception, "as name")])
def test_try_blocks_the_lowering_cannot_follow_are_refused(f, message):
    with pytest.raises(tp.TransformError, match=message):
        tp.grad(f)(np.array([1.0, 2.0, 3.0]))


# ---------------------------------------------------------------- found in numpy-ml and ML-From-Scratch

def _sgd_step_in_place(w, g, lr=0.1):
    w -= lr * g


def _loss_after_a_step(w, X):
    _sgd_step_in_place(w, X.T @ (X @ w))          # numpy: the caller's w changes
    return np.sum(w ** 2)


def _scaled_step(w, g):
    w *= 0.5
    return np.sum(g * w)


def _loss_after_a_scaled_step(w, X):
    first = _scaled_step(w, X @ w)       # the caller's w is halved too
    return first + np.sum(w ** 2)


def _count_up(n, x):
    n += 1                               # a number: bound anew, as in Python
    return n * np.sum(x)


def _counted(x):
    return _count_up(2, x)


def test_an_augmented_assignment_to_a_parameter_holding_an_array_is_refused(rng):
    # it changes the caller's array in place: transformed code bound the name anew and the
    # caller read its old array (value and gradient wrong, silently)
    w, X = rng.normal(size=2), rng.normal(size=(2, 2))
    per_example = functools.partial(tp.vmap, in_axes=(None, 0))
    for transform in (tp.grad, tp.jit, per_example):
        args = (w.copy(), X if transform is not per_example else np.stack([X, X]))
        with pytest.raises(tp.TransformError, match="updates its argument in place"):
            transform(_loss_after_a_step)(*args)
        with pytest.raises(tp.TransformError, match="parameter 'w'"):
            transform(_loss_after_a_scaled_step)(*args)
    x = rng.normal(size=3)
    assert np.allclose(tp.grad(_counted)(x), 3.0)
    xs = rng.normal(size=(2, 3))
    assert np.allclose(tp.vmap(_counted)(xs), [_counted(v) for v in xs])


def _pad_spec(pad):
    if isinstance(pad, int):
        return (pad, pad)
    return pad


def _padded(x, pad):
    p = _pad_spec(pad)
    if isinstance(p, tuple):
        x = np.pad(x, (p[0], p[1]))
    return x


def _padded_cubes(x):
    return np.sum(_padded(x, 1) ** 3) + np.sum(_padded(x, (0, 2)) * x[0])


def _flattened(X):
    rs = X.shape[:1] + (-1,)
    return np.sum(np.tanh(X.reshape(*rs)) @ np.arange(6.0))


def test_isinstance_with_tuple_in_helpers_under_second_order_and_reshape_of_a_star(rng):
    # the jvp of the gradient named the class `tuple` like a local temporary of a helper
    # (UnboundLocalError); x.reshape(*shape) of a local tuple was refused
    x = rng.normal(size=3)
    check_grads(_padded_cubes, (x,), order=2, modes=("rev", "fwd"))
    X = rng.normal(size=(2, 3, 2))
    check_grads(_flattened, (X,), order=2, modes=("rev", "fwd"))
    Xs = rng.normal(size=(4, 2, 3, 2))
    assert np.allclose(tp.vmap(_flattened)(Xs), [_flattened(v) for v in Xs])


def _scaled_by_kind(x, pad):
    p = pad
    if isinstance(p, int):
        y = x * 2.0
    else:
        y = x * 3.0
    if p == -1:
        y, p = _scaled_by_kind(x, 1)     # recursion: vmap batches its results
    return y, p


def test_isinstance_int_of_a_number_a_batch_holds(rng):
    xs = rng.normal(size=(2, 3))
    f = lambda x: _scaled_by_kind(x, 0)[0]
    assert np.allclose(tp.vmap(f)(xs), [f(v) for v in xs])


def _flat_rows(x):
    return x.reshape((x.shape[0], -1))      # reads x.shape: the entry checks its arguments


def _applied_loss(f, x):
    return np.sum(f(x) ** 2)


def test_vmap_of_a_gradient_given_a_function_argument(rng):
    # the gradient's check of its arguments' fields (rt.check_record_fields) was given the
    # function when vmap transformed that code for it: "'_flat_rows' is used as a value"
    xs = rng.normal(size=(3, 2, 2, 2))
    grad = tp.grad(_applied_loss, argnums=1)
    assert np.allclose(tp.vmap(grad, in_axes=(None, 0))(_flat_rows, xs), 2 * xs)


def _pooled(x, mode):
    if mode == "max":
        pool = np.max
    elif mode == "sum":
        pool = np.sum
    else:
        pool = np.mean
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = pool(x[i] ** 2)
    return np.sum(np.sin(out))


@pytest.mark.parametrize("mode", ["max", "sum", "avg"])
def test_a_name_bound_to_one_of_several_functions_on_different_paths(rng, mode):
    # numpy-ml's Pool2D: `pool_fn = np.max` or `np.mean` by branch, then `pool_fn(x)`
    # (refused: a name bound to functions more than once)
    x = rng.normal(size=(3, 4))
    assert np.isclose(tp.jit(_pooled, static_argnums=(1,))(x, mode), _pooled(x, mode))
    check_grads(lambda v: _pooled(v, mode), (x,), order=2, modes=("rev", "fwd"))
    xs = rng.normal(size=(2, 3, 4))
    assert np.allclose(tp.vmap(_pooled, (0, None))(xs, mode), [_pooled(v, mode) for v in xs])


def _relu(z):
    return np.maximum(z, 0.0)


ACTIVATIONS = {"relu": _relu, "tanh": np.tanh, "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
               "softplus": lambda z: np.log1p(np.exp(z)), "depth": 2}


def _layer_by_name(W, x, kind):
    return np.sum(ACTIVATIONS[kind](W @ x) ** 2)


def _layers_by_name(W, x, kind="tanh"):
    act = ACTIVATIONS[kind]
    for _ in range(ACTIVATIONS["depth"]):
        x = act(W @ x)
    return np.sum(x * np.cos(x))


@pytest.mark.parametrize("kind", ["relu", "tanh", "sigmoid", "softplus"])
@pytest.mark.parametrize("f", [_layer_by_name, _layers_by_name])
def test_a_dict_of_functions_looked_up_by_a_key_given_when_called(rng, f, kind):
    # `ACTIVATIONS[kind](h)` and `act = ACTIVATIONS[kind]` were refused ("calling a function
    # held in a variable"); the key is known only when the code runs: an `if` over the keys
    W, x = rng.normal(size=(3, 3)), rng.normal(size=3)
    check_grads(lambda w, v: f(w, v, kind), (W, x), order=2, modes=("rev", "fwd"))
    assert np.isclose(tp.jit(f, static_argnums=(2,))(W, x, kind), f(W, x, kind))
    xs = rng.normal(size=(4, 3))
    assert np.allclose(tp.vmap(f, (None, 0, None))(W, xs, kind), [f(W, v, kind) for v in xs])
    with pytest.raises(KeyError, match="gelu"):
        tp.grad(f)(W, x, "gelu")


def test_a_dict_of_functions_changed_after_transforming_makes_new_code(rng):
    W, x = rng.normal(size=(3, 3)), rng.normal(size=3)
    g = tp.grad(_layer_by_name)
    before = g(W, x, "tanh")
    ACTIVATIONS["tanh"] = np.sin
    try:
        np.testing.assert_allclose(g(W, x, "tanh"), 2 * np.outer(np.sin(W @ x) *
                                                                 np.cos(W @ x), x))
    finally:
        ACTIVATIONS["tanh"] = np.tanh
    np.testing.assert_allclose(g(W, x, "tanh"), before)


def _make_activation(kind, slope=0.01):
    if kind == "leaky":
        return lambda z: np.where(z > 0, z, slope * z)
    if kind == "tanh":
        return np.tanh

    def scaled(z):
        return np.sin(z) * slope
    return scaled


def _net_of_made_activations(W, x):
    act = _make_activation("leaky", -0.3)
    h = act(W @ x)
    return np.sum(_make_activation("tanh")(h) ** 2) + np.sum(_make_activation("sin", 2.5)(h))


def test_a_function_made_by_a_factory_called_with_literals(rng):
    # `act = make_activation("leaky", 0.1)` was refused where the factory returns its
    # function ("a function value can only be called here"): the factory runs while
    # transforming, as every `return` in it gives a function and its arguments are literals
    W, x = rng.normal(size=(3, 4)), rng.normal(size=4)
    check_grads(_net_of_made_activations, (W, x), order=2, modes=("rev", "fwd"))
    xs = rng.normal(size=(3, 4))
    assert np.allclose(tp.vmap(_net_of_made_activations, (None, 0))(W, xs),
                       [_net_of_made_activations(W, v) for v in xs])
    assert np.isclose(tp.jit(_net_of_made_activations)(W, x), _net_of_made_activations(W, x))
    source = tp.grad(_net_of_made_activations).source
    assert "-0.3 * z" in source and "def _make_activation" not in source, source


def _l1_penalty(W, lam=1e-3):
    return lam * np.sum(np.abs(W))


def _l2_penalty(W, lam=1e-3):
    return .5 * lam * np.sum(W * W)


def _regularization(model, reg_type="l2", lam=1e-3):
    # hipsternet's loss.regularization, as written
    reg_types = dict(
        l1=_l1_penalty,
        l2=_l2_penalty
    )
    if reg_type not in reg_types.keys():
        raise Exception('Regularization type must be either "l1" or "l2"!')
    reg_loss = np.sum([
        reg_types[reg_type](model[k], lam)
        for k in model.keys()
        if k.startswith('W')
    ])
    return reg_loss


@pytest.mark.parametrize("reg_type", ["l1", "l2"])
def test_a_local_dict_of_functions_looked_up_by_a_key(rng, reg_type):
    # `reg_types = dict(l1=reg.l1_reg, ...)` was refused ("'l1_reg' is used as a value")
    model = {"W1": rng.normal(size=(3, 2)), "b1": rng.normal(size=2), "W2": rng.normal(size=2)}
    g = tp.grad(_regularization)(model, reg_type, 0.1)
    for k, v in model.items():
        want = 0.0 * v if k.startswith("b") else 0.1 * (np.sign(v) if reg_type == "l1" else v)
        np.testing.assert_allclose(g[k], want, rtol=1e-12)
    with pytest.raises(Exception, match="must be either"):
        tp.grad(_regularization)(model, "l3")


def _running_mean(x, bn_param):
    # cs231n's batchnorm_forward: a default made by a call
    mean = bn_param.get("running_mean", np.zeros(x.shape[1], dtype=x.dtype))
    scale = bn_param.get("scale", x.sum() * 0.0 + 2.0)
    return np.sum((x - mean) ** 2) * scale


def test_dict_get_with_a_default_made_by_a_call(rng):
    # refused: "name 'zeros' is not defined" (the default's temporary was not a local)
    x = rng.normal(size=(4, 3))
    m = rng.normal(size=3)
    np.testing.assert_allclose(tp.grad(_running_mean)(x, {}), 4 * x, rtol=1e-12)
    np.testing.assert_allclose(tp.grad(_running_mean)(x, {"running_mean": m}), 4 * (x - m),
                               rtol=1e-12)


def _conv_output_size(X, W, stride=1, padding=1):
    # hipsternet's conv_forward checks the output size so
    n_filters, d_filter, h_filter, w_filter = W.shape
    n_x, d_x, h_x, w_x = X.shape
    h_out = (h_x - h_filter + 2 * padding) / stride + 1
    w_out = (w_x - w_filter + 2 * padding) / stride + 1
    if not h_out.is_integer() or not w_out.is_integer():
        raise Exception("Invalid output dimension!")
    h_out, w_out = int(h_out), int(w_out)
    return np.sum(np.tanh(X[:, :, :h_out, :w_out]) * np.sum(W))


def _halves(x):
    return np.sum(x) if (x[0] * 2).is_integer() else np.sum(x ** 2)


def test_float_is_integer(rng):
    X, W = rng.normal(size=(2, 3, 5, 5)), rng.normal(size=(4, 3, 3, 3))
    check_grads(_conv_output_size, (X, W), order=2, modes=("rev", "fwd"))
    with pytest.raises(Exception, match="Invalid output"):
        tp.grad(_conv_output_size)(X, W, 3)
    xs = np.array([[0.5, 2.0], [0.3, 1.0], [1.5, 1.0]])
    np.testing.assert_allclose(tp.vmap(_halves)(xs), [_halves(x) for x in xs], rtol=1e-15)
    np.testing.assert_allclose(tp.grad(_halves)(xs[1]), 2 * xs[1], rtol=1e-15)


def _dropout_sum(x, p=0.5):
    # cs231n's dropout_forward: a mask drawn with np.random.rand(*x.shape)
    mask = (np.random.rand(*x.shape) < p) / p
    noise = np.random.randn(*x.shape) * 0.1
    return np.sum(np.tanh(x) * mask + noise)


def _dropout_mask_sum(x, p=0.5):
    return np.sum(np.tanh(x) * (np.random.rand(*x.shape) < p) / p)


def _dropout_by_dimensions(x, p=0.5):
    mask = (np.random.rand(x.shape[0], x.shape[1]) < p) / p
    return np.sum(np.tanh(x) * mask) + np.random.randn() * 0.0 + np.random.rand() * 0.0


def _mask_by_dimensions(x, p=0.5):
    return np.sum(np.tanh(x) * (np.random.rand(x.shape[0], x.shape[1]) < p) / p)


@pytest.mark.parametrize("drawn, once", [(_dropout_sum, _dropout_mask_sum),
                                         (_dropout_by_dimensions, _mask_by_dimensions)])
def test_random_rand_and_randn(rng, drawn, once):
    # rand(*x.shape) was refused ("*args in a call is supported for the function's own
    # *args ..."), rand(n, d) under vmap; drawn as np.random.uniform(0.0, 1.0, shape) and
    # normal(0.0, 1.0, shape): the same numbers
    x = rng.normal(size=(3, 4))
    np.random.seed(7)
    want = drawn(x)
    np.random.seed(7)
    assert tp.value_and_grad(drawn)(x)[0] == want
    np.random.seed(7)
    mask = (np.random.rand(3, 4) < 0.5) / 0.5
    np.random.seed(7)
    np.testing.assert_allclose(tp.grad(drawn)(x), mask / np.cosh(x) ** 2, rtol=1e-14)
    # under vmap each example draws its own numbers: one draw per example gives a loop's
    # numbers (two draws per example come in another order than a loop's: the first draw
    # of every example, then the second)
    xs = rng.normal(size=(3, 2, 2))
    np.random.seed(8)
    batched = tp.vmap(once)(xs)
    np.random.seed(8)
    np.testing.assert_allclose(batched, [once(v) for v in xs], rtol=1e-14)


def _checked_tanh(x, want):
    y = np.tanh(x)
    np.testing.assert_equal(y.shape, want.shape)
    np.testing.assert_array_less(np.abs(y), 1.0 + 0.0 * want)
    np.testing.assert_allclose(y, want, rtol=1e-12, err_msg="tanh")
    return np.sum(y ** 2)


def test_numpy_testing_assertions_in_the_code(rng):
    # refused: "np.testing.assert_allclose has no rule"; kept as assert is, per example
    # under vmap
    x = rng.normal(size=4)
    np.testing.assert_allclose(tp.grad(_checked_tanh)(x, np.tanh(x)),
                               2 * np.tanh(x) / np.cosh(x) ** 2, rtol=1e-14)
    with pytest.raises(AssertionError, match="tanh"):
        tp.grad(_checked_tanh)(x, np.tanh(x) + 1e-3)
    xs = rng.normal(size=(3, 4))
    np.testing.assert_allclose(tp.vmap(_checked_tanh)(xs, np.tanh(xs)),
                               [_checked_tanh(v, np.tanh(v)) for v in xs], rtol=1e-14)
    off = np.tanh(xs)
    off[2, 1] += 1e-3                  # one example fails its check
    with pytest.raises(AssertionError, match="tanh"):
        tp.vmap(_checked_tanh)(xs, off)
    assert np.isclose(tp.jit(_checked_tanh)(x, np.tanh(x)), _checked_tanh(x, np.tanh(x)))


def _copies_then_writes(x):
    y = np.array(x, copy=True, dtype=float)
    y[0] = 2.0 * y[0]
    return np.sum(y * y) + np.sum(np.asarray(x, copy=None)) + np.sum(np.array(x, copy=True) ** 3)


def test_np_array_copy_true_and_asarray_copy_none():
    # PINTS writes np.array(x, copy=True, dtype=float): np.array's default, spelled out
    x = np.random.default_rng().normal(size=3)
    want = 2 * x * np.array([4.0, 1.0, 1.0]) + 1 + 3 * x ** 2
    np.testing.assert_allclose(tp.grad(_copies_then_writes)(x), want, rtol=1e-12)
    xs = np.stack([x, 2 * x])
    np.testing.assert_allclose(tp.vmap(_copies_then_writes)(xs),
                               [_copies_then_writes(row) for row in xs], rtol=1e-12)
    before = x.copy()
    tp.grad(_copies_then_writes)(x)
    np.testing.assert_array_equal(x, before)     # the write went into the copy


def _read_only_vector(x):
    x = np.array(x, copy=True, dtype=float)
    x.setflags(write=False)
    return x


def _gaussian_logpdf(x):
    x = _read_only_vector(x)
    return -np.sum(x ** 2) / 2


def test_setflags_write_false_is_accepted():
    # PINTS runs every input through pints.vector, which ends in x.setflags(write=False)
    x = np.random.default_rng().normal(size=(3, 2))
    np.testing.assert_allclose(tp.grad(_gaussian_logpdf)(x[0]), -x[0], rtol=1e-12)
    np.testing.assert_allclose(tp.vmap(_gaussian_logpdf)(x), -np.sum(x ** 2, 1) / 2, rtol=1e-12)
    assert tp.jit(_gaussian_logpdf)(x[0]) == _gaussian_logpdf(x[0])
