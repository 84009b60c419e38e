"""Differentially private SGD (Abadi et al., 2016) on scikit-learn's digits.

    pip install -e '.[examples]' && python examples/dp_sgd.py

Each step takes every example's own gradient (`tp.vmap(tp.grad(loss))`), clips each to a
global norm of `clip`, sums them, adds Gaussian noise of standard deviation
`noise * clip` drawn from a `tp.random` key, and averages: the privatized gradient. The
whole step is one `tp.jit`. Prints the held-out accuracy of the private model (about 90%)
next to that of the same model trained without privacy. (No privacy accounting here: see
JAX's examples/differentially_private_sgd.py, which runs on transpile with its imports
changed.)
"""
import argparse

import numpy as np
from sklearn.datasets import load_digits

import transpile as tp
from transpile.nn import stax

init_params, predict = stax.serial(stax.Dense(64), stax.Tanh, stax.Dense(10))


def loss(params, image, label):
    return tp.nn.sparse_softmax_cross_entropy(predict(params, image), label)


def clipped(grads, clip):
    """grads scaled down to global norm `clip` when above it."""
    norm = tp.optim.global_norm(grads)
    return tp.tree_map(lambda g: g / np.maximum(norm / clip, 1.0), grads)


def private_gradient(params, images, labels, key, clip, noise):
    per_example = tp.vmap(tp.grad(loss), in_axes=(None, 0, 0))(params, images, labels)
    clipped_each = tp.vmap(clipped, in_axes=(0, None))(per_example, clip)
    leaves, treedef = tp.tree_flatten(clipped_each)
    keys = tp.random.split(key, len(leaves))
    noisy = [np.sum(g, 0) + noise * clip * tp.random.normal(k, g.shape[1:])
             for g, k in zip(leaves, keys)]
    return tp.tree_unflatten(treedef, [g / images.shape[0] for g in noisy])


def train(private, epochs, lr=0.5, batch_size=64, clip=1.0, noise=1.0, seed=0):
    digits = load_digits()
    images, labels = digits.data / 16.0, digits.target
    order = np.random.default_rng(seed).permutation(len(images))
    train_set, test_set = order[:1440], order[1440:]
    key = tp.random.PRNGKey(seed)
    _, params = init_params(key, (-1, 64))
    opt = tp.optim.sgd(lr)
    state = opt.init(params)

    @tp.jit
    def step(params, state, x, y, key):
        if private:
            grads = private_gradient(params, x, y, key, clip, noise)
        else:
            grads = tp.grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return tp.optim.apply_updates(params, updates), state

    for epoch in range(epochs):
        key, shuffle_key, noise_key = tp.random.split(key, 3)
        shuffled = train_set[tp.random.permutation(shuffle_key, len(train_set))]
        steps = len(shuffled) // batch_size
        step_keys = tp.random.split(noise_key, steps)
        for i in range(steps):
            batch = shuffled[i * batch_size:(i + 1) * batch_size]
            params, state = step(params, state, images[batch], labels[batch], step_keys[i])
    return float(tp.nn.accuracy(predict(params, images[test_set]), labels[test_set]))


def main(epochs=20):
    private = train(True, epochs)
    plain = train(False, epochs)
    print(f"held-out accuracy: private {private:.1%} (clip 1.0, noise 1.0), "
          f"non-private {plain:.1%}")
    return private


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    accuracy = main(parser.parse_args().epochs)
    assert accuracy >= 0.8, f"private held-out accuracy {accuracy:.1%}"
