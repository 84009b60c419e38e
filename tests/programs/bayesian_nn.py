"""A Bayesian neural network fitted by black-box variational inference over its weights.
The noise is drawn after `np.random.seed(seed)` inside the objective, so the objective is a
deterministic function of the variational parameters and the seed."""
import numpy as np

import transpile as tp

LAYER_SIZES = [1, 6, 1]
NUM_SAMPLES = 4
NOISE_VARIANCE = 0.05
PRIOR_VARIANCE = 1.0


def shapes_and_num(layer_sizes):
    shapes = list(zip(layer_sizes[:-1], layer_sizes[1:]))
    num_weights = sum((m + 1) * n for m, n in shapes)
    return shapes, num_weights


def unpack_layers(weights):
    """weights: (num_samples, num_weights); yields per-layer (W, b) batched over samples."""
    shapes, _ = shapes_and_num(LAYER_SIZES)
    num_samples = len(weights)
    start = 0
    for m, n in shapes:
        W = weights[:, start:start + m * n].reshape((num_samples, m, n))
        start = start + m * n
        b = weights[:, start:start + n].reshape((num_samples, 1, n))
        start = start + n
        yield W, b


def predictions(weights, inputs):
    inputs = np.expand_dims(inputs, 0)
    for W, b in unpack_layers(weights):
        outputs = np.einsum("mnd,mdo->mno", inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs


def log_gaussian(x, variance):
    return -0.5 * np.sum(x ** 2, axis=-1) / variance - 0.5 * x.shape[-1] * np.log(2 * np.pi * variance)


def logprob(weights, inputs, targets):
    log_prior = log_gaussian(weights, PRIOR_VARIANCE)
    preds = predictions(weights, inputs)
    log_lik = -np.sum((preds - targets) ** 2, axis=(1, 2)) / NOISE_VARIANCE
    return log_prior + log_lik


def objective(var_params, inputs, targets, seed):
    _, num_weights = shapes_and_num(LAYER_SIZES)
    mean, log_std = var_params[:num_weights], var_params[num_weights:]
    np.random.seed(seed)
    eps = np.random.randn(NUM_SAMPLES, num_weights)
    samples = eps * np.exp(log_std) + mean
    entropy = np.sum(log_std)
    return -(entropy + np.mean(logprob(samples, inputs, targets))) / len(inputs)


def build_toy_dataset(rng, n=10):
    inputs = np.linspace(-2, 2, n).reshape((n, 1))
    targets = np.sin(2 * inputs) + 0.1 * rng.standard_normal((n, 1))
    return inputs, targets


def make_args(rng):
    inputs, targets = build_toy_dataset(rng)
    _, num_weights = shapes_and_num(LAYER_SIZES)
    var_params = np.concatenate([0.5 * rng.standard_normal(num_weights),
                                 -3.0 + 0.1 * rng.standard_normal(num_weights)])
    return var_params, inputs, targets, int(rng.integers(1000))


def fit(steps=40, step_size=0.01):
    var_params, inputs, targets, _ = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)
    initial = np.mean([objective(var_params, inputs, targets, s) for s in range(10)])
    for t in range(steps):
        var_params = var_params - step_size * grad_fn(var_params, inputs, targets, t)
    return initial, np.mean([objective(var_params, inputs, targets, s) for s in range(10)])
