"""A variational autoencoder on binarized 8x8 digits: Gaussian encoder, Bernoulli decoder,
reparameterized latent sample drawn from a RandomState passed in."""
import numpy as np
import numpy.random as npr

import transpile as tp

LATENT = 2


def init_net_params(rng, layer_sizes, scale=0.3):
    return [(scale * rng.standard_normal((m, n)), scale * rng.standard_normal(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def neural_net_predict(params, inputs):
    for W, b in params[:-1]:
        inputs = np.tanh(np.dot(inputs, W) + b)
    W, b = params[-1]
    return np.dot(inputs, W) + b


def nn_predict_gaussian(params, inputs):
    output = neural_net_predict(params, inputs)
    return output[:, :LATENT], output[:, LATENT:]


def sample_diag_gaussian(mean, log_std, rs):
    return rs.randn(*mean.shape) * np.exp(log_std) + mean


def bernoulli_log_density(targets, logits):
    # log p(targets | logits) for targets in {0, 1}, written stably
    return np.sum(targets * logits - np.logaddexp(0.0, logits), axis=-1)


def diag_gaussian_log_density(x, mu, log_std):
    return np.sum(-0.5 * ((x - mu) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi),
                  axis=-1)


def vae_lower_bound(gen_params, rec_params, data, rs):
    q_means, q_log_stds = nn_predict_gaussian(rec_params, data)
    latents = sample_diag_gaussian(q_means, q_log_stds, rs)
    q_latents = diag_gaussian_log_density(latents, q_means, q_log_stds)
    p_latents = diag_gaussian_log_density(latents, 0.0, 0.0)
    logits = neural_net_predict(gen_params, latents)
    p_data = bernoulli_log_density(data, logits)
    return np.mean(p_latents + p_data - q_latents)


def objective(gen_params, rec_params, data, rs):
    return -vae_lower_bound(gen_params, rec_params, data, rs)


def load_data(rng, n=6):
    from sklearn.datasets import load_digits
    images = load_digits().data
    idx = rng.choice(len(images), n, replace=False)
    return (images[idx] > 7.0).astype(np.float64)


def make_args(rng):
    data = load_data(rng)
    gen_params = init_net_params(rng, [LATENT, 8, 64])
    rec_params = init_net_params(rng, [64, 8, 2 * LATENT])
    return gen_params, rec_params, data, npr.RandomState(int(rng.integers(1000)))


def fresh(args, seed=0):
    return tuple(args[:-1]) + (npr.RandomState(seed),)


def fit(steps=40, step_size=0.05):
    gen_params, rec_params, data, rs = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective, argnums=(0, 1))

    def evaluate(g, r):
        return np.mean([objective(g, r, data, npr.RandomState(s)) for s in range(10)])

    initial = evaluate(gen_params, rec_params)
    for _ in range(steps):
        g_gen, g_rec = grad_fn(gen_params, rec_params, data, rs)
        gen_params = [(W - step_size * dW, b - step_size * db)
                      for (W, b), (dW, db) in zip(gen_params, g_gen)]
        rec_params = [(W - step_size * dW, b - step_size * db)
                      for (W, b), (dW, db) in zip(rec_params, g_rec)]
    return initial, evaluate(gen_params, rec_params)
