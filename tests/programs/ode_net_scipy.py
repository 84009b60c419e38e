"""autograd's ode_net as written there: an MLP gives dx/dt, scipy.integrate.odeint solves
it (args=(params,)), and the fit follows the gradient through the solver. Tolerances are
tight so that finite differences of scipy's own solution are a usable reference."""
import numpy as np
from scipy.integrate import odeint

from tests.programs import ode_net
from tests.programs.ode_net import init_nn_params

TRUE_A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
TOL = dict(rtol=1e-11, atol=1e-11)


def nn_dynamics(state, t, params):
    inputs = np.concatenate([state, np.array([t])])
    for W, b in params[:-1]:
        inputs = np.tanh(np.dot(inputs, W) + b)
    W, b = params[-1]
    return np.dot(inputs, W) + b


def true_dynamics(state, t, A):
    return np.dot(state ** 3, A)


def objective(params, y0, ts, targets):
    pred = odeint(nn_dynamics, y0, ts, args=(params,), rtol=1e-11, atol=1e-11)
    return np.mean(np.sum((pred - targets) ** 2, axis=1))


def make_args(rng):
    y0 = np.array([1.0, 0.5]) + 0.05 * rng.standard_normal(2)
    ts = np.linspace(0.0, 0.5, 6)
    targets = odeint(true_dynamics, y0, ts, args=(TRUE_A,), **TOL)
    return init_nn_params(rng, [3, 8, 2]), y0, ts, targets


def fit(steps=20, step_size=0.3):
    return ode_net.fit(steps, step_size, objective=objective, make_args=make_args)
