"""A model object whose methods call only each other on `self` (no sub-objects): the form
of model_object.py that transpile accepts (a method of a layer object held in a list or
an attribute of the model is refused)."""
import numpy as np

import transpile as tp


class MLP:
    def __init__(self, features, activation="tanh"):
        self.features = features
        self.activation = activation

    def init(self, rng, in_features):
        params = []
        for f in self.features:
            params.append({"kernel": rng.standard_normal((in_features, f)) / np.sqrt(in_features),
                           "bias": np.zeros(f)})
            in_features = f
        return params

    def dense(self, p, x):
        return x @ p["kernel"] + p["bias"]

    def act(self, x):
        if self.activation == "tanh":
            return np.tanh(x)
        return np.maximum(x, 0.0)

    def __call__(self, params, x):
        for p in params[:-1]:
            x = self.act(self.dense(p, x))
        return self.dense(params[-1], x)

    def loss(self, params, x, y):
        pred = self(params, x)
        return np.mean((pred - y) ** 2)


model = MLP([6, 1])
objective = model.loss


def make_args(rng):
    x = rng.uniform(-1.5, 1.5, size=(12, 2))
    y = np.sin(x[:, :1]) * np.cos(x[:, 1:])
    return model.init(rng, 2), x, y


def fit(steps=40, step_size=0.2):
    params, x, y = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(model.loss)
    initial = model.loss(params, x, y)
    for _ in range(steps):
        g = grad_fn(params, x, y)
        params = [{k: p[k] - step_size * gp[k] for k in p} for p, gp in zip(params, g)]
    return initial, model.loss(params, x, y)
