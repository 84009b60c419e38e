"""Train a small MLP with `tp.grad` and plain SGD: the main demo of transpile.

    python examples/mlp.py

A 2-16-16-1 tanh network learns to separate two interleaved half-moons (a synthetic 2-D
data set made with numpy, nothing is downloaded). The loss is ordinary Python + NumPy: a
`for` loop over a list of (W, b) layers and an `if` on a keyword argument. `tp.grad(loss)`
turns it into a new Python function, printed once below, that returns gradients with the
same structure as `params`.
"""
import time

import numpy as np

import transpile as tp


def make_moons(n, rng, noise=0.1):
    """Two interleaved half circles in 2-D; labels are +1 and -1."""
    t = rng.uniform(0.0, np.pi, n)
    upper = rng.uniform(size=n) < 0.5
    x = np.where(upper, np.cos(t), 1.0 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    points = np.stack([x, y], axis=1) + noise * rng.standard_normal((n, 2))
    return points - points.mean(axis=0), np.where(upper, 1.0, -1.0)[:, None]


def init_params(sizes, rng):
    return [(rng.standard_normal((m, n)) / np.sqrt(m), np.zeros(n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, x):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    return x @ W + b


def loss(params, x, y, l2=0.0):
    logits = predict(params, x)
    data = np.mean(np.logaddexp(0.0, -y * logits))      # logistic loss, labels +1 / -1
    if l2 > 0.0:
        for W, b in params:
            data = data + l2 * np.sum(W * W)
    return data


def accuracy(params, x, y):
    return float(np.mean(np.sign(predict(params, x)) == y))


def main(steps=500, lr=0.5, seed=0):
    rng = np.random.default_rng(seed)
    x, y = make_moons(256, rng)
    params = init_params([2, 16, 16, 1], rng)

    grad_loss = tp.grad(loss)
    print(grad_loss.source)                             # the generated gradient, once

    start = time.perf_counter()
    first = loss(params, x, y, 1e-4)
    for step in range(steps):
        grads = grad_loss(params, x, y, 1e-4)           # same structure as params
        params = [(W - lr * dW, b - lr * db) for (W, b), (dW, db) in zip(params, grads)]
        if step % 100 == 0:
            print(f"step {step:4d}  loss {loss(params, x, y, 1e-4):.4f}")
    last = loss(params, x, y, 1e-4)
    elapsed = time.perf_counter() - start

    print(f"loss: first {first:.4f}  last {last:.4f}  "
          f"(accuracy {accuracy(params, x, y):.1%}, {steps} steps in {elapsed:.2f} s)")
    assert last < 0.5 * first, f"the loss did not go down enough: {first} -> {last}"
    return first, last


if __name__ == "__main__":
    main()
