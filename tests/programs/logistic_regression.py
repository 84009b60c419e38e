"""L2-regularized logistic regression on a generated classification problem."""
import numpy as np

import transpile as tp


def sigmoid(x):
    return 0.5 * (np.tanh(x / 2.0) + 1.0)


def logistic_predictions(weights, inputs):
    return sigmoid(np.dot(inputs, weights[:-1]) + weights[-1])


def objective(weights, inputs, targets, l2):
    preds = logistic_predictions(weights, inputs)
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities)) + l2 * np.dot(weights[:-1], weights[:-1])


def make_args(rng):
    from sklearn.datasets import make_classification
    inputs, targets = make_classification(n_samples=20, n_features=4, n_informative=3,
                                          n_redundant=0, random_state=int(rng.integers(1000)))
    return 0.1 * rng.standard_normal(5), inputs, targets.astype(np.float64), 0.1


def fit(steps=50, step_size=0.02):
    weights, inputs, targets, l2 = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)
    initial = objective(weights, inputs, targets, l2)
    for _ in range(steps):
        weights = weights - step_size * grad_fn(weights, inputs, targets, l2)
    return initial, objective(weights, inputs, targets, l2)
