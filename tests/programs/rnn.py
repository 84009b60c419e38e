"""A vanilla recurrent network that predicts the next character of short sequences."""
import numpy as np
from scipy.special import logsumexp

import transpile as tp


def create_rnn_params(rng, input_size, state_size, output_size, scale=0.3):
    return {"init_hiddens": scale * rng.standard_normal((1, state_size)),
            "change": scale * rng.standard_normal((input_size + state_size + 1, state_size)),
            "predict": scale * rng.standard_normal((state_size + 1, output_size))}


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def rnn_predict(params, inputs):
    """inputs: (time, batch, input_size) one-hot; returns log-probabilities per step."""
    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init_hiddens"], num_sequences, axis=0)
    output = []
    for t in range(inputs.shape[0]):
        hiddens = np.tanh(concat_and_multiply(params["change"], inputs[t], hiddens))
        logits = concat_and_multiply(params["predict"], hiddens)
        output.append(logits - logsumexp(logits, axis=1, keepdims=True))
    return output


def rnn_log_likelihood(params, inputs, targets):
    logprobs = rnn_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik = loglik + np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def objective(params, inputs, targets):
    return -rnn_log_likelihood(params, inputs, targets)


def make_sequences(rng, length=5, batch=3, vocab=4):
    ids = rng.integers(0, vocab, size=(length + 1, batch))
    onehot = np.eye(vocab)[ids]
    return onehot[:-1], onehot[1:]


def make_args(rng):
    inputs, targets = make_sequences(rng)
    return create_rnn_params(rng, 4, 5, 4), inputs, targets


def fit(steps=30, step_size=0.5):
    params, inputs, targets = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)
    initial = objective(params, inputs, targets)
    for _ in range(steps):
        g = grad_fn(params, inputs, targets)
        params = {k: params[k] - step_size * g[k] for k in params}
    return initial, objective(params, inputs, targets)
