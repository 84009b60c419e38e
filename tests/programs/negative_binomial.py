"""Maximum-likelihood fit of a negative binomial distribution to counts (gammaln)."""
import numpy as np
from scipy.special import gammaln

import transpile as tp


def softplus(x):
    return np.logaddexp(0.0, x)


def negbin_loglike(r, p, x):
    """log NB(x | r, p) = log C(x + r - 1, x) + r log(1 - p) + x log p."""
    return (gammaln(r + x) - gammaln(r) - gammaln(x + 1)
            + x * np.log(p) + r * np.log(1 - p))


def unpack(params):
    r = softplus(params[0])
    p = 1.0 / (1.0 + np.exp(-params[1]))
    return r, p


def objective(params, data):
    r, p = unpack(params)
    return -np.mean(negbin_loglike(r, p, data))


def make_args(rng):
    data = rng.negative_binomial(5, 0.4, size=30).astype(np.float64)
    return np.array([0.5, 0.0]) + 0.2 * rng.standard_normal(2), data


def fit(steps=100, step_size=0.2):
    params, data = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)
    initial = objective(params, data)
    for _ in range(steps):
        params = params - step_size * grad_fn(params, data)
    return initial, objective(params, data)
