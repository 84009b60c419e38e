"""autograd's APIs for programs moving from autograd: primitives with vjp/jvp makers and
vector spaces of the user's own types (transpile.extend), autograd-style optimizers and
flattening (transpile.misc), hessian_vector_product, check_grads(f)(x); and functions or
objects passed as arguments of a transformed function (by identity, by type).

Derivatives are checked against finite differences (check_grads) or against numpy written
out, with fresh random inputs."""
import functools

import numpy as np
import pytest

import transpile as tp
from transpile.extend import Box, VSpace, defjvp, defvjp, defvjp_argnum, func, primitive
from transpile.misc.flatten import flatten, flatten_func
from transpile.misc.optimizers import adam, rmsprop, sgd
from transpile.test_util import check_grads

RNG = np.random.default_rng()


# ---------------------------------------------------------------- primitives and makers

@primitive
def logsumexp(x):
    """A black box: transformations never read it (the in-place write would be refused)."""
    shifted = np.array(x, dtype=float)
    top = np.max(shifted)
    shifted -= top
    return top + np.log(np.sum(np.exp(shifted)))


def logsumexp_vjp(ans, x):
    x_shape = x.shape
    return lambda g: np.full(x_shape, g) * np.exp(x - np.full(x_shape, ans))


defvjp(logsumexp, logsumexp_vjp)


def lse_of_squares(y):
    return np.sum(logsumexp(y ** 2) * np.sin(y))


def test_a_vjp_maker_gives_derivatives_of_every_order_in_reverse_mode():
    y = RNG.normal(size=6)
    check_grads(lse_of_squares, (y,), order=3, modes=("rev",))
    src = tp.grad(lse_of_squares).source
    assert "logsumexp_vjp_applied(ans, arg0, g)" in src     # the maker, read as source
    with pytest.raises(tp.TransformError, match="only vjp makers"):
        tp.jvp(lse_of_squares, (y,), (y,))


@primitive
def cube(x):
    return x ** 3


def cube_vjp(ans, x):
    def vjp(g):                  # a nested def returned by name
        slope = 3 * x ** 2
        return g * slope
    return vjp


defvjp(cube, cube_vjp)
defjvp(cube, lambda g, ans, x: g * 3 * x ** 2)


def test_nested_def_makers_and_jvp_makers_in_both_modes():
    x = RNG.normal(size=5)
    check_grads(lambda x: np.sum(np.cos(cube(x))), (x,), order=2, modes=("fwd", "rev"))
    out, tangent = tp.jvp(cube, (x,), (np.ones(5),))
    np.testing.assert_allclose(tangent, 3 * x ** 2, rtol=1e-13)


@primitive
def scaled_product(a, b, c):
    return a * b * c


defvjp(scaled_product, lambda ans, a, b, c: lambda g: g * b * c, None,
       lambda ans, a, b, c: lambda g: g * a * b)


def test_an_argument_without_a_maker_is_refused_only_when_differentiated():
    a, c = RNG.normal(size=2)
    ga, gc = tp.grad(lambda a, c: scaled_product(a, 1.5, c), argnums=(0, 1))(a, c)
    np.testing.assert_allclose([ga, gc], [1.5 * c, 1.5 * a], rtol=1e-13)
    with pytest.raises(tp.TransformError, match=r"argument 1 \('b'\), for which defvjp gave no"):
        tp.grad(lambda a, b: scaled_product(a, b, 2.0), argnums=(0, 1))(a, c)


@primitive
def only_jvp(x):
    return np.sin(x) * 2.0


defjvp(only_jvp, lambda g, ans, x: g * 2.0 * np.cos(x))


def test_jvp_makers_alone_give_reverse_mode_by_transposition():
    x = RNG.normal(size=4)
    check_grads(lambda x: np.sum(only_jvp(x) ** 2), (x,), order=2, modes=("fwd", "rev"))


class Memo:
    """Something a transformation cannot read: a maker returning its bound method."""

    def __init__(self, x):
        self.x = x

    def vjp(self, g):
        return g * np.cos(self.x)


@primitive
def opaque_sin(x):
    return np.sin(x)


defvjp(opaque_sin, lambda ans, x: Memo(x).vjp)


def test_a_maker_that_cannot_be_read_gives_first_derivatives_and_refuses_second():
    x = RNG.normal(size=3)
    np.testing.assert_allclose(tp.grad(lambda x: np.sum(opaque_sin(x)))(x), np.cos(x),
                               rtol=1e-13)
    with pytest.raises(tp.TransformError):
        tp.grad(lambda x: np.sum(tp.grad(lambda y: np.sum(opaque_sin(y)))(x)))(x)


@primitive
def weighted(x, w):
    return np.sum(x * w)


defvjp_argnum(weighted, lambda argnum, ans, args, kwargs:
              (lambda g: g * args[1]) if argnum == 0 else (lambda g: g * args[0]))


def test_defvjp_argnum():
    x, w = RNG.normal(size=(2, 4))
    gx, gw = tp.grad(weighted, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, w, rtol=1e-13)
    np.testing.assert_allclose(gw, x, rtol=1e-13)


# ---------------------------------------------------------------- vector spaces of user types

class Poly:
    """A polynomial by its coefficients, its own vector space (as autograd's rkhs example:
    a gradient with respect to it is a Poly)."""

    def __init__(self, coefs):
        self.coefs = dict(coefs)

    @primitive
    def __call__(self, x):
        return sum(c * x ** k for k, c in self.coefs.items())

    def __add__(self, other):
        return vspace_of(self).add(self, other)

    def __mul__(self, a):
        return vspace_of(self).scalar_mul(self, a)


# d f(x) / d coefficient k is x ** k: the cotangent is a Poly with those coefficients
defvjp(func(Poly.__call__), lambda ans, f, x: lambda g: Poly({k: x ** k for k in f.coefs}) * g)


class PolyBox(Box, Poly):
    pass


PolyBox.register(Poly)


class PolyVSpace(VSpace):
    def zeros(self):
        return Poly({})

    def _add(self, f, g):
        keys = set(f.coefs) | set(g.coefs)
        return Poly({k: f.coefs.get(k, 0.0) + g.coefs.get(k, 0.0) for k in keys})

    def _scalar_mul(self, f, a):
        return Poly({k: a * c for k, c in f.coefs.items()})


PolyVSpace.register(Poly)


def vspace_of(value):
    from transpile.extend import vspace
    return vspace(value)


def squared_error(f, xs, ys):
    return sum((f(x) - y) ** 2 for x, y in zip(xs, ys))


def test_the_gradient_with_respect_to_a_value_of_a_registered_vector_space():
    coefs = dict(enumerate(RNG.normal(size=3)))
    xs, ys = list(RNG.normal(size=5)), list(RNG.normal(size=5))
    grad = tp.grad(squared_error)(Poly(coefs), xs, ys)
    assert isinstance(grad, Poly)
    for k in coefs:            # against finite differences in each coefficient
        eps = 1e-6
        up, down = dict(coefs), dict(coefs)
        up[k] += eps
        down[k] -= eps
        numeric = (squared_error(Poly(up), xs, ys) - squared_error(Poly(down), xs, ys)) / 2 / eps
        np.testing.assert_allclose(grad.coefs[k], numeric, rtol=1e-6)
    # a new Poly of the same type: the same code, its own numbers
    other = Poly({0: 1.0, 1: -2.0, 2: 0.5})
    np.testing.assert_allclose(tp.grad(squared_error)(other, xs, ys).coefs[1],
                               sum(2 * (other(x) - y) * x for x, y in zip(xs, ys)), rtol=1e-12)


# ---------------------------------------------------------------- arguments that are called

def apply_layer(params, layer, x):
    W, b = params
    return np.sum(layer(x @ W + b) ** 2)


class Scaled:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, z):
        return np.tanh(z) * self.scale

    def apply(self, params, x):
        W, b = params
        return self(x @ W + b)


def model_loss(params, model, x):
    return np.sum(model.apply(params, x) ** 2)


@pytest.mark.parametrize("layer", [np.tanh, np.sin, lambda z: z * np.exp(-z * z),
                                   functools.partial(np.sum, axis=1, keepdims=True), Scaled(1.7)],
                         ids=["np.tanh", "np.sin", "lambda", "partial", "object"])
def test_a_function_or_object_passed_in_is_transformed_where_it_is_called(layer):
    params = (RNG.normal(size=(3, 2)), RNG.normal(size=2))
    x = RNG.normal(size=(4, 3))
    check_grads(lambda p: apply_layer(p, layer, x), (params,), order=2, modes=("fwd", "rev"))
    got = tp.grad(apply_layer)(params, layer, x)
    want = tp.grad(lambda p: apply_layer(p, layer, x))(params)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    batched = tp.vmap(apply_layer, in_axes=(None, None, 0))(params, layer, np.stack([x, 2 * x]))
    np.testing.assert_allclose(batched, [apply_layer(params, layer, x),
                                         apply_layer(params, layer, 2 * x)], rtol=1e-12)


def test_methods_of_an_object_passed_in_read_its_attributes_as_it_runs():
    params = (RNG.normal(size=(3, 2)), RNG.normal(size=2))
    x = RNG.normal(size=(4, 3))
    g = tp.grad(model_loss)
    for scale in (1.0, -2.5):
        model = Scaled(scale)
        want = tp.grad(lambda p: model_loss(p, model, x))(params)
        for a, b in zip(g(params, model, x), want):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    assert "def Scaled_apply(" in g.source or "apply" in g.source


def test_source_before_any_call_says_why_it_needs_one():
    with pytest.raises(tp.TransformError, match="depends on the argument passed"):
        tp.grad(model_loss).source
    with pytest.raises(tp.TransformError, match="Scaled has no method 'forward'"):
        tp.grad(lambda p, m: np.sum(m.forward(p)))(np.ones(2), Scaled(1.0))


# ---------------------------------------------------------------- transpile.misc

def quadratic(params, i):
    W, (b, c) = params["W"], params["bc"]
    return np.sum((W - 1.5) ** 2) + np.sum((b + 0.5) ** 2) + (c - 2.0) ** 2


def _autograd_adam(grad, x, num_iters, step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam on a flat vector as autograd's paper-form loop (the reference)."""
    m = np.zeros(len(x))
    v = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g ** 2 + b2 * v
        x = x - step_size * (m / (1 - b1 ** (i + 1))) / (np.sqrt(v / (1 - b2 ** (i + 1))) + eps)
    return x


def test_autograd_style_optimizers_on_a_pytree():
    params = {"W": RNG.normal(size=(2, 2)), "bc": (RNG.normal(size=3), float(RNG.normal()))}
    calls = []
    out = adam(tp.grad(quadratic), params, callback=lambda p, i, g: calls.append(i),
               num_iters=25, step_size=0.1)
    assert calls == list(range(25))
    flat, unflatten = flatten(params)
    flat_grad = tp.grad(flatten_func(quadratic, params)[0])
    want = unflatten(_autograd_adam(flat_grad, flat, 25, 0.1))
    np.testing.assert_allclose(out["W"], want["W"], rtol=1e-12)
    np.testing.assert_allclose(out["bc"][0], want["bc"][0], rtol=1e-12)
    for optimizer, kwargs in ((adam, dict(step_size=0.1)), (sgd, dict(step_size=0.2)),
                              (rmsprop, dict(step_size=0.05))):
        fitted = optimizer(tp.grad(quadratic), params, num_iters=400, **kwargs)
        assert quadratic(fitted, 0) < 1e-2 * quadratic(params, 0)


def test_flatten_func_and_hessian_vector_product():
    params = {"W": RNG.normal(size=(2, 2)), "bc": (RNG.normal(size=3), float(RNG.normal()))}
    flat_f, unflatten, flat = flatten_func(lambda p, i: quadratic(p, i) * np.sum(p["W"]), params)
    np.testing.assert_allclose(flat_f(flat, 0), quadratic(params, 0) * np.sum(params["W"]))
    v = RNG.normal(size=flat.shape)
    hv = tp.hessian_vector_product(flat_f)(flat, 0, v)
    # against central differences of the gradient along v (tp.hessian of a function that
    # goes through ravel_pytree fails: see docs/gotchas.md)
    gradient, eps = tp.grad(flat_f), 1e-6
    numeric = (gradient(flat + eps * v, 0) - gradient(flat - eps * v, 0)) / (2 * eps)
    np.testing.assert_allclose(hv, numeric, rtol=1e-6, atol=1e-8)
    A = RNG.normal(size=(4, 4))
    x, u = RNG.normal(size=(2, 4))
    f = lambda x: np.sum(np.tanh(A @ x) ** 2)      # noqa: E731
    np.testing.assert_allclose(tp.hessian_vector_product(f)(x, u), tp.hessian(f)(x) @ u,
                               rtol=1e-12)


def _scaled_sines(x, scale=2.0, power=2):
    return np.sum(np.sin(x) ** power) * scale


def test_hessian_vector_product_takes_the_vector_last_after_defaulted_parameters():
    # autograd's order: hvp(x, v) for f(x, scale=2.0) (v was bound to `scale`: TypeError,
    # missing 'vector')
    x, v = RNG.normal(size=(2, 3))
    hvp = tp.hessian_vector_product(_scaled_sines)
    np.testing.assert_allclose(hvp(x, v), tp.hessian(_scaled_sines)(x) @ v, rtol=1e-12)
    np.testing.assert_allclose(hvp(x, 3.0, v), tp.hessian(_scaled_sines)(x, 3.0) @ v,
                               rtol=1e-12)
    np.testing.assert_allclose(hvp(x, 3.0, 3, v), tp.hessian(_scaled_sines)(x, 3.0, 3) @ v,
                               rtol=1e-12)
    xs = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(tp.vmap(hvp, (0, None))(xs, v),
                               [tp.hessian(_scaled_sines)(a) @ v for a in xs], rtol=1e-12)


def test_check_grads_in_autograds_curried_form():
    x = RNG.normal(size=3)
    check_grads(lambda x: np.sum(np.sin(x) * x), modes=["rev"])(x)
    check_grads(lambda x: np.sum(np.sin(x) * x))(x)
    with pytest.raises(AssertionError):
        check_grads(lambda x: np.sum(tp.lax.stop_gradient(x) ** 2), modes=["rev"])(x)


def test_vmap_of_a_primitive_loops_over_the_examples_without_reading_it():
    ys = RNG.normal(size=(4, 6))
    np.testing.assert_allclose(tp.vmap(lse_of_squares)(ys), [lse_of_squares(y) for y in ys],
                               rtol=1e-13)
    per_example = tp.vmap(tp.grad(lse_of_squares))(ys)
    np.testing.assert_allclose(per_example, [tp.grad(lse_of_squares)(y) for y in ys],
                               rtol=1e-12)
    summed = tp.grad(lambda ys: np.sum(tp.vmap(lse_of_squares)(ys)))(ys)
    np.testing.assert_allclose(summed, per_example, rtol=1e-12)


def test_jit_jvp_and_jacobians_of_a_function_that_calls_an_argument():
    params = (RNG.normal(size=(3, 2)), RNG.normal(size=2))
    x = RNG.normal(size=(4, 3))
    for layer in (np.tanh, np.sin, Scaled(0.5)):
        want = apply_layer(params, layer, x)
        jitted = tp.jit(apply_layer)
        for _ in range(3):         # the general code, then the specialization
            np.testing.assert_allclose(jitted(params, layer, x), want, rtol=1e-12)
        got = tp.jit(tp.grad(apply_layer), static_argnums=(1,))(params, layer, x)
        for a, b in zip(got, tp.grad(apply_layer)(params, layer, x)):
            np.testing.assert_allclose(a, b, rtol=1e-12)
        dW = RNG.normal(size=(3, 2))
        out, tangent = tp.jvp(apply_layer, (params, layer, x), ((dW, 0 * params[1]), None,
                                                              0 * x))
        eps = 1e-6
        numeric = (apply_layer((params[0] + eps * dW, params[1]), layer, x) -
                   apply_layer((params[0] - eps * dW, params[1]), layer, x)) / (2 * eps)
        np.testing.assert_allclose(out, want, rtol=1e-12)
        np.testing.assert_allclose(tangent, numeric, rtol=1e-6)
    with pytest.raises(tp.TransformError, match="close over the function instead"):
        tp.hessian(apply_layer)(params, np.tanh, x)


def test_makers_given_again_make_new_code():
    """defjvp / defvjp of a primitive called again after it was differentiated: the new
    makers are used (the old code and the transposed old jvp were kept, silently)."""
    @primitive
    def f(x):
        return np.sin(x)
    defjvp(f, lambda g, ans, x: g * 2.0)
    grad = tp.grad(f)
    x = np.random.default_rng(8).uniform(-1.0, 1.0)
    assert grad(x) == 2.0
    defjvp(f, lambda g, ans, x: g * np.cos(x))
    assert np.isclose(grad(x), np.cos(x)) and np.isclose(tp.grad(f)(x), np.cos(x))
    defvjp(f, lambda ans, x: lambda g: g * 5.0)
    assert grad(x) == 5.0
