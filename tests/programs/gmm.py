"""A Gaussian mixture model fitted by gradient ascent on the log-likelihood; each component's
precision is parameterized by a lower-triangular Cholesky factor with positive diagonal."""
import numpy as np
from scipy.special import logsumexp

import transpile as tp


def precision_cholesky(raw):
    D = raw.shape[0]
    lower = np.tril(raw, -1)
    return lower + np.diag(np.exp(np.diag(raw)))


def mvn_logpdf(x, mean, raw_chol):
    L = precision_cholesky(raw_chol)
    z = (x - mean) @ L
    D = x.shape[1]
    return -0.5 * np.sum(z ** 2, axis=1) + np.sum(np.log(np.diag(L))) \
        - 0.5 * D * np.log(2 * np.pi)


def gmm_log_likelihood(params, data):
    log_weights = params["log_proportions"] - logsumexp(params["log_proportions"])
    cluster_lls = []
    for log_w, mean, raw in zip(log_weights, params["means"], params["chol_raws"]):
        cluster_lls.append(log_w + mvn_logpdf(data, mean, raw))
    return np.sum(logsumexp(np.stack(cluster_lls, axis=1), axis=1))


def objective(params, data):
    return -gmm_log_likelihood(params, data) / len(data)


def init_params(rng, num_components=2, D=2):
    return {"log_proportions": 0.1 * rng.standard_normal(num_components),
            "means": rng.standard_normal((num_components, D)),
            "chol_raws": 0.1 * rng.standard_normal((num_components, D, D))}


def make_data(rng, n=20):
    centers = np.array([[-2.0, 0.0], [2.0, 1.0]])
    labels = rng.integers(0, 2, n)
    return centers[labels] + 0.5 * rng.standard_normal((n, 2))


def make_args(rng):
    return init_params(rng), make_data(rng)


def fit(steps=50, step_size=0.1):
    params, data = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)
    initial = objective(params, data)
    for _ in range(steps):
        g = grad_fn(params, data)
        params = {k: params[k] - step_size * g[k] for k in params}
    return initial, objective(params, data)
