"""scipy.integrate.odeint under every transformation (transpile/integrate.py).

Transformed code solves with transpile's Dormand-Prince solver, so its derivatives are
checked against exact ones: the linear system dy/dt = A y has y(T) = expm(A T) y0, whose
derivatives (in y0, A, T) finite differences of scipy.linalg.expm give to ~1e-9; the
solver's own error is ~1e-8 at scipy's default tolerances.
"""
import numpy as np
import pytest
import scipy.linalg
from scipy.integrate import odeint

import transpile as tp
from transpile.errors import TransformError

T = np.array([0.0, 0.4, 1.0, 1.7])


def _rng():
    return np.random.default_rng()


def linear(y, t, A):
    return A @ y


def forced(y, t, k, c):
    return -k * y + c * np.sin(3.0 * t)


def lotka_volterra(y, t, a, b, c, d):
    return np.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])


def final_state_loss(y0, A, w):
    ys = odeint(linear, y0, T, args=(A,))
    return np.sum(ys[-1] * w) + 0.5 * np.sum(ys[1] ** 2)


def exact_loss(y0, A, w):
    return np.sum(scipy.linalg.expm(A * T[-1]) @ y0 * w) + \
        0.5 * np.sum((scipy.linalg.expm(A * T[1]) @ y0) ** 2)


def _problem(rng, n=3):
    A = 0.6 * rng.standard_normal((n, n)) - 0.5 * np.eye(n)
    return rng.standard_normal(n), A, rng.standard_normal(n)


def _fd(f, args, i, eps=1e-6):
    """Central differences of f in argument i, shaped like it."""
    x = np.asarray(args[i], float)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[k] = eps
        plus = f(*args[:i], x + step, *args[i + 1:])
        minus = f(*args[:i], x - step, *args[i + 1:])
        g[k] = (plus - minus) / (2 * eps)
    return g


def test_plain_solver_matches_scipy():
    rng = _rng()
    y0, A, _ = _problem(rng)
    ours = tp.integrate.odeint(lambda y, t: linear(y, t, A), y0, T)
    exact = np.stack([scipy.linalg.expm(A * t) @ y0 for t in T])
    np.testing.assert_allclose(ours, exact, rtol=1e-6, atol=1e-8)
    t = np.linspace(0.0, 15.0, 40)
    args = (1.0, 0.1, 1.5, 0.075)
    ours = tp.integrate.odeint(lambda y, s: lotka_volterra(y, s, *args), np.array([10.0, 5.0]), t)
    ref = odeint(lotka_volterra, np.array([10.0, 5.0]), t, args=args, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours, ref, rtol=1e-6)


def test_grad_matches_the_exact_solution():
    rng = _rng()
    y0, A, w = _problem(rng)
    value, grads = tp.value_and_grad(final_state_loss, argnums=(0, 1, 2))(y0, A, w)
    assert value == pytest.approx(exact_loss(y0, A, w), rel=1e-6)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, _fd(exact_loss, (y0, A, w), i), rtol=1e-5, atol=1e-7)


def test_jvp_and_second_order_match_the_exact_solution():
    rng = _rng()
    y0, A, w = _problem(rng)
    dA = rng.standard_normal(A.shape)
    _, tangent = tp.jvp(final_state_loss, (y0, A, w), (np.zeros(3), dA, np.zeros(3)))
    expected = np.sum(_fd(exact_loss, (y0, A, w), 1) * dA)
    assert tangent == pytest.approx(expected, rel=1e-5, abs=1e-7)
    # the loss is quadratic in y0: its Hessian there is exact
    hess = tp.hessian(final_state_loss)(y0, A, w)
    E = scipy.linalg.expm(A * T[1])
    np.testing.assert_allclose(hess, E.T @ E, rtol=1e-6, atol=1e-8)


def _forced_at(k, y0, t_end):
    ys = odeint(forced, y0, np.stack([0.0, 0.5, t_end]), args=(k, 0.8))
    return np.sum(ys[-1] ** 2)


def test_derivative_in_the_parameters_and_the_final_time():
    rng = _rng()
    k, y0, t_end = 0.7, rng.standard_normal(4), 1.3
    gk, gy0, gt = tp.grad(_forced_at, argnums=(0, 1, 2))(k, y0, t_end)
    tight = dict(rtol=1e-12, atol=1e-12)

    def reference(k, y0, t_end):
        ys = odeint(forced, y0, np.array([0.0, 0.5, t_end]), args=(k, 0.8), **tight)
        return np.sum(ys[-1] ** 2)
    # The gradient is checked against the size of the whole gradient: with fresh random y0
    # one element can be near zero, and there the solver's own tolerance (about 1e-6 of
    # the largest element, 40 seeds measured) is far above rtol=1e-5 of that element.
    expected_gy0 = _fd(reference, (k, y0, t_end), 1, 1e-5)
    scale = np.max(np.abs(expected_gy0))
    assert gk == pytest.approx(_fd(reference, (k, y0, t_end), 0, 1e-5), rel=1e-5,
                               abs=1e-5 * scale)
    np.testing.assert_allclose(gy0, expected_gy0, rtol=1e-5, atol=1e-5 * scale)
    # d/dT sum(y(T)^2) = 2 y(T) . f(y(T), T)
    yT = odeint(forced, y0, np.array([0.0, t_end]), args=(k, 0.8), **tight)[-1]
    assert gt == pytest.approx(2 * np.sum(yT * forced(yT, t_end, k, 0.8)), rel=1e-5,
                               abs=1e-5 * scale)


def test_vmap_of_grad_equals_a_loop_and_jit_equals_the_plain_call():
    rng = _rng()
    _, A, w = _problem(rng)
    y0s = rng.standard_normal((4, 3))
    per_example = tp.vmap(tp.grad(final_state_loss), in_axes=(0, None, None))(y0s, A, w)
    loop = np.stack([tp.grad(final_state_loss)(y0, A, w) for y0 in y0s])
    np.testing.assert_allclose(per_example, loop, rtol=1e-9, atol=1e-12)
    jitted = tp.jit(final_state_loss)(y0s[0], A, w)
    assert jitted == pytest.approx(tp.transform(final_state_loss)(y0s[0], A, w), rel=1e-12)


def _time_first(y0, k):
    ys = odeint(lambda t, y: -k * y * (1.0 + 0.5 * np.cos(t)), y0, T, tfirst=True)
    return np.sum(ys)


def test_time_first_and_closures():
    rng = _rng()
    y0, k = rng.standard_normal(2), 0.9
    expected = np.sum(np.stack([y0 * np.exp(-k * (t + 0.5 * np.sin(t))) for t in T]))
    assert tp.transform(_time_first)(y0, k) == pytest.approx(expected, rel=1e-7)
    dk = sum(np.sum(-(t + 0.5 * np.sin(t)) * y0 * np.exp(-k * (t + 0.5 * np.sin(t))))
             for t in T)
    assert tp.grad(_time_first, argnums=1)(y0, k) == pytest.approx(dk, rel=1e-6)


def _full_output(y0):
    ys, info = odeint(linear, y0, T, args=(np.eye(2),), full_output=True)
    return np.sum(ys)


def _args_in_a_variable(y0):
    extra = (np.eye(2),)
    return np.sum(odeint(linear, y0, T, args=extra))


@pytest.mark.parametrize("f, message", [(_full_output, "full_output"),
                                        (_args_in_a_variable, "tuple written in the call")])
def test_what_it_cannot_do_is_refused(f, message):
    with pytest.raises(TransformError, match=message):
        tp.grad(f)(np.ones(2))


def _too_stiff(y0):
    return np.sum(odeint(linear, y0, np.array([0.0, 1.0]), args=(-1e6 * np.eye(2),),
                         mxstep=50))


def test_too_many_steps_raise():
    with pytest.raises(ValueError, match="more than 50 steps"):
        tp.grad(_too_stiff)(np.ones(2))


def _args_through_tuple(y0, A, w):
    ys = odeint(linear, y0, T, tuple((A,)))     # autograd's ode_net passes its args so
    return np.sum(ys[-1] * w) + 0.5 * np.sum(ys[1] ** 2)


def test_args_made_by_tuple_of_a_literal():
    rng = _rng()
    y0, A, w = _problem(rng)
    for got, want in zip(tp.grad(_args_through_tuple, argnums=(0, 1))(y0, A, w),
                         tp.grad(final_state_loss, argnums=(0, 1))(y0, A, w)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
