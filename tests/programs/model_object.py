"""A model object in the Flax style: a class that holds its layers' configuration, makes
its parameters with `init`, applies them with `__call__`, and has a `loss` method;
`tp.grad(model.loss)` differentiates the bound method."""
import numpy as np

import transpile as tp


class Dense:
    def __init__(self, features, activation=None):
        self.features = features
        self.activation = activation

    def init(self, rng, in_features):
        return {"kernel": rng.standard_normal((in_features, self.features)) / np.sqrt(in_features),
                "bias": np.zeros(self.features)}

    def apply(self, params, x):
        y = x @ params["kernel"] + params["bias"]
        if self.activation == "tanh":
            y = np.tanh(y)
        return y


class MLP:
    def __init__(self, features):
        self.layers = [Dense(f, "tanh") for f in features[:-1]] + [Dense(features[-1])]

    def init(self, rng, in_features):
        params = []
        for layer in self.layers:
            params.append(layer.init(rng, in_features))
            in_features = layer.features
        return params

    def __call__(self, params, x):
        for layer, p in zip(self.layers, params):
            x = layer.apply(p, x)
        return x

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
