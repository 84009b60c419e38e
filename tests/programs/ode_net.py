"""A neural ODE: an MLP gives dx/dt, integrated by a fixed-step Runge-Kutta 4 written in
Python, fitted to a trajectory of a damped spiral."""
import numpy as np

import transpile as tp

TRUE_A = np.array([[-0.1, 2.0], [-2.0, -0.1]])


def init_nn_params(rng, layer_sizes, scale=0.3):
    return [(scale * rng.standard_normal((m, n)), np.zeros(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def nn_dynamics(params, state, t):
    inputs = np.concatenate([state, np.array([t])])
    for W, b in params[:-1]:
        inputs = np.tanh(inputs @ W + b)
    W, b = params[-1]
    return inputs @ W + b


def true_dynamics(params, state, t):
    return (state ** 3) @ params


def rk4(dynamics, params, y0, ts):
    ys = [y0]
    y = y0
    for i in range(len(ts) - 1):
        t, h = ts[i], ts[i + 1] - ts[i]
        k1 = dynamics(params, y, t)
        k2 = dynamics(params, y + 0.5 * h * k1, t + 0.5 * h)
        k3 = dynamics(params, y + 0.5 * h * k2, t + 0.5 * h)
        k4 = dynamics(params, y + h * k3, t + h)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        ys.append(y)
    return np.stack(ys)


def objective(params, y0, ts, targets):
    pred = rk4(nn_dynamics, params, y0, ts)
    return np.mean(np.sum((pred - targets) ** 2, axis=1))


def make_args(rng):
    y0 = np.array([1.0, 0.5]) + 0.05 * rng.standard_normal(2)
    ts = np.linspace(0.0, 0.5, 6)
    targets = rk4(true_dynamics, TRUE_A, y0, ts)
    return init_nn_params(rng, [3, 8, 2]), y0, ts, targets


def fit(steps=30, step_size=0.3, objective=objective, make_args=make_args):
    """Gradient descent on the network's weights (ode_net_scipy fits its own objective)."""
    params, y0, ts, targets = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)
    initial = objective(params, y0, ts, targets)
    for _ in range(steps):
        grads = grad_fn(params, y0, ts, targets)
        params = [(W - step_size * dW, b - step_size * db) for (W, b), (dW, db) in zip(params, grads)]
    return initial, objective(params, y0, ts, targets)
