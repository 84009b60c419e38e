"""A variational autoencoder on binarized digits, with `tp.random` keys.

    pip install -e '.[examples]' && python examples/vae.py

The encoder gives a diagonal Gaussian over an 8-dimensional code (a FanOut into a mean
layer and a Softplus variance layer), a draw `mu + sqrt(var) * normal(key)` feeds the
decoder (the reparameterization: `tp.grad` reaches mu and var through it), and the loss is
the negative evidence lower bound. Each step draws its own key. Prints the held-out ELBO per
epoch and writes decoded samples from the prior to a PNG.
"""
import argparse

import matplotlib
import numpy as np
from sklearn.datasets import load_digits

import transpile as tp
from transpile.nn import stax

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CODE = 8
encoder_init, encode = stax.serial(
    stax.Dense(128), stax.Relu, stax.FanOut(2),
    stax.parallel(stax.Dense(CODE), stax.serial(stax.Dense(CODE), stax.Softplus)))
decoder_init, decode = stax.serial(stax.Dense(128), stax.Relu, stax.Dense(64))


def neg_elbo(params, images, key):
    """-(E_q[log p(x | z)] - KL(q(z | x) || N(0, I))), averaged over the batch."""
    enc, dec = params
    mu, var = encode(enc, images)
    z = mu + np.sqrt(var) * tp.random.normal(key, mu.shape)
    logits = decode(dec, z)
    log_likelihood = -np.sum(np.logaddexp(0.0, np.where(images > 0.5, -logits, logits)))
    kl = -0.5 * np.sum(1.0 + np.log(var) - mu * mu - var)
    return (kl - log_likelihood) / images.shape[0]


def main(epochs=30, batch_size=32, seed=0, plot="vae_samples.png"):
    digits = load_digits()
    images = (digits.data / 16.0 > 0.5).astype(np.float64)      # binarized, 64 pixels
    order = np.random.default_rng(seed).permutation(len(images))
    train, test = images[order[:1440]], images[order[1440:]]
    key = tp.random.PRNGKey(seed)
    key, enc_key, dec_key = tp.random.split(key, 3)
    params = (encoder_init(enc_key, (-1, 64))[1], decoder_init(dec_key, (-1, CODE))[1])
    opt = tp.optim.adam(1e-3)
    state = opt.init(params)

    @tp.jit
    def step(params, state, batch, key):
        value, grads = tp.value_and_grad(neg_elbo)(params, batch, key)
        updates, state = opt.update(grads, state, params)
        return tp.optim.apply_updates(params, updates), state, value

    test_key = tp.random.PRNGKey(seed + 1)
    for epoch in range(1, epochs + 1):
        key, shuffle_key, step_key = tp.random.split(key, 3)
        shuffled = train[tp.random.permutation(shuffle_key, len(train))]
        steps = len(shuffled) // batch_size
        keys = tp.random.split(step_key, steps)
        for i in range(steps):
            params, state, _ = step(params, state, shuffled[i * batch_size:(i + 1) *
                                                             batch_size], keys[i])
        elbo = -float(neg_elbo(params, test, test_key))
        if epoch % 5 == 0 or epoch == 1:
            print(f"epoch {epoch:2d}  held-out ELBO per image {elbo:.2f} nats")
    codes = tp.random.normal(tp.random.PRNGKey(seed + 2), (64, CODE))
    samples = 1.0 / (1.0 + np.exp(-decode(params[1], codes)))      # pixel probabilities
    grid = samples.reshape(8, 8, 8, 8).transpose(0, 2, 1, 3).reshape(64, 64)
    plt.imsave(plot, np.kron(grid, np.ones((6, 6))), cmap="gray")   # 6x larger pixels
    print(f"samples from the prior written to {plot}")
    return elbo


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--plot", default="vae_samples.png")
    args = parser.parse_args()
    main(args.epochs, plot=args.plot)
