"""Gaussian process regression: fit the kernel hyperparameters by maximizing the marginal
likelihood (RBF kernel, Cholesky solve, log det by slogdet)."""
import numpy as np

import transpile as tp


def rbf_covariance(params, x, xp):
    output_scale = np.exp(params["log_output_scale"])
    lengthscales = np.exp(params["log_lengthscales"])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2))


def neg_log_marginal_likelihood(params, x, y):
    n = len(y)
    noise = np.exp(params["log_noise"]) + 1e-6
    K = rbf_covariance(params, x, x) + noise * np.eye(n)
    residual = y - params["mean"]
    L = np.linalg.cholesky(K)
    tmp = np.linalg.solve(L, residual)
    alpha = np.linalg.solve(L.T, tmp)
    sign, logdet = np.linalg.slogdet(K)
    return 0.5 * np.dot(residual, alpha) + 0.5 * logdet + 0.5 * n * np.log(2 * np.pi)


def objective(params, x, y):
    return neg_log_marginal_likelihood(params, x, y)


def build_toy_dataset(rng, n=8, noise_std=0.1):
    x = np.sort(rng.uniform(-3.0, 3.0, size=(n, 1)), axis=0)
    y = np.cos(x[:, 0]) + noise_std * rng.standard_normal(n)
    return x, y


def init_params(rng, D=1):
    return {"mean": np.array(0.1 * rng.standard_normal()),
            "log_output_scale": np.array(0.2 * rng.standard_normal()),
            "log_noise": np.array(-2.0 + 0.2 * rng.standard_normal()),
            "log_lengthscales": 0.2 * rng.standard_normal(D)}


def make_args(rng):
    x, y = build_toy_dataset(rng)
    return init_params(rng), x, y


def fit(steps=30, step_size=0.02):
    params, x, y = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)
    initial = objective(params, x, y)
    for _ in range(steps):
        g = grad_fn(params, x, y)
        params = {k: params[k] - step_size * g[k] for k in params}
    return initial, objective(params, x, y)
