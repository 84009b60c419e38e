"""An LSTM language model on short random sequences."""
import numpy as np
from scipy.special import logsumexp

import transpile as tp


def init_lstm_params(rng, input_size, state_size, output_size, scale=0.3):
    def rp(*shape):
        return scale * rng.standard_normal(shape)
    return {"init_cells": rp(1, state_size),
            "init_hiddens": rp(1, state_size),
            "change": rp(input_size + state_size + 1, state_size),
            "forget": rp(input_size + state_size + 1, state_size),
            "ingate": rp(input_size + state_size + 1, state_size),
            "outgate": rp(input_size + state_size + 1, state_size),
            "predict": rp(state_size + 1, output_size)}


def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)


def affine(weights, x, h):
    cat = np.concatenate([x, h, np.ones((x.shape[0], 1))], axis=1)
    return cat @ weights


def update_lstm(params, x, hiddens, cells):
    change = np.tanh(affine(params["change"], x, hiddens))
    forget = sigmoid(affine(params["forget"], x, hiddens))
    ingate = sigmoid(affine(params["ingate"], x, hiddens))
    outgate = sigmoid(affine(params["outgate"], x, hiddens))
    cells = cells * forget + ingate * change
    hiddens = outgate * np.tanh(cells)
    return hiddens, cells


def hiddens_to_output_probs(params, hiddens):
    output = np.concatenate((hiddens, np.ones((hiddens.shape[0], 1))), axis=1) @ params["predict"]
    return output - logsumexp(output, axis=1, keepdims=True)


def lstm_predict(params, inputs):
    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init_hiddens"], num_sequences, axis=0)
    cells = np.repeat(params["init_cells"], num_sequences, axis=0)
    output = [hiddens_to_output_probs(params, hiddens)]
    for x in inputs:
        hiddens, cells = update_lstm(params, x, hiddens, cells)
        output.append(hiddens_to_output_probs(params, hiddens))
    return output


def objective(params, inputs, targets):
    logprobs = lstm_predict(params, inputs)
    total = 0.0
    for t in range(len(targets)):
        total = total + np.sum(logprobs[t + 1] * targets[t])
    return -total / (targets.shape[0] * targets.shape[1])


def make_args(rng, length=4, batch=3, vocab=4):
    ids = rng.integers(0, vocab, size=(length + 1, batch))
    onehot = np.eye(vocab)[ids]
    return init_lstm_params(rng, vocab, 4, vocab), onehot[:-1], onehot[1:]


def fit(steps=30, step_size=0.5):
    params, inputs, targets = make_args(np.random.default_rng(1))
    grad_fn = tp.grad(objective)
    initial = objective(params, inputs, targets)
    for _ in range(steps):
        g = grad_fn(params, inputs, targets)
        for k in params:
            params[k] = params[k] - step_size * g[k]
    return initial, objective(params, inputs, targets)
