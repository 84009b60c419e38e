"""The Python that real programs are written in (issue 13, part 2): NumPy functions as
transformation targets, autograd's elementwise_grad, holomorphic gradients, *args/**kwargs
and keyword-only parameters, assert/raise, random draws from numpy generators, and code that
cannot be transformed in a branch that does not run."""
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
