"""A small convolutional network on scikit-learn's digits, with tp.nn's Conv and pooling.

    pip install -e '.[examples]' && python examples/digits_cnn.py

Images stay 8x8x1 (channels last); two 3x3 convolutions with max pooling between them,
then a dense layer. The training step is one `tp.jit` of `tp.value_and_grad` plus an
optax-style `tp.optim.adamw` update. Prints the held-out accuracy (about 98%).
"""
import argparse
import time

import numpy as np
from sklearn.datasets import load_digits

import transpile as tp
from transpile.nn import stax

init_params, predict = stax.serial(
    stax.Conv(16, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
    stax.Conv(32, (3, 3), padding="SAME"), stax.Relu, stax.AvgPool((2, 2), (1, 1)),
    stax.Flatten, stax.Dense(64), stax.Relu, stax.Dense(10))


def loss(params, images, labels):
    return tp.nn.sparse_softmax_cross_entropy(predict(params, images), labels)


def main(epochs=15, batch_size=32, seed=0):
    digits = load_digits()
    images = (digits.images / 16.0)[..., None]            # (N, 8, 8, 1)
    order = np.random.default_rng(seed).permutation(len(images))
    train, test = order[:1440], order[1440:]
    key = tp.random.PRNGKey(seed)
    _, params = init_params(key, (-1, 8, 8, 1))
    opt = tp.optim.adamw(tp.optim.cosine_decay_schedule(3e-3, epochs * 45), weight_decay=1e-4)
    state = opt.init(params)

    @tp.jit
    def step(params, state, x, y):
        value, grads = tp.value_and_grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return tp.optim.apply_updates(params, updates), state, value

    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        key, shuffle_key = tp.random.split(key)
        shuffled = train[tp.random.permutation(shuffle_key, len(train))]
        losses = []
        for i in range(len(shuffled) // batch_size):
            batch = shuffled[i * batch_size:(i + 1) * batch_size]
            params, state, value = step(params, state, images[batch], digits.target[batch])
            losses.append(float(value))
        accuracy = float(tp.nn.accuracy(predict(params, images[test]), digits.target[test]))
        print(f"epoch {epoch}  loss {np.mean(losses):.4f}  held-out accuracy {accuracy:.1%}")
    print(f"{epochs} epochs in {time.perf_counter() - start:.1f} s")
    return accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    accuracy = main(epochs=parser.parse_args().epochs)
    assert accuracy >= 0.9, f"held-out accuracy {accuracy:.1%}"
