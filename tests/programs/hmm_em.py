"""A discrete hidden Markov model fitted by expectation maximization. The log-likelihood
is the forward algorithm in log space; its gradient with respect to the log parameters
gives the expected counts (the E step)."""
import numpy as np
from scipy.special import logsumexp

import transpile as tp


def log_likelihood(log_pi, log_A, log_B, obs):
    """log p(obs) by the forward algorithm; log_A[i, j] = log p(z_t+1 = j | z_t = i)."""
    log_alpha = log_pi + log_B[:, obs[0]]
    for t in range(1, len(obs)):
        log_alpha = logsumexp(np.expand_dims(log_alpha, 1) + log_A, axis=0) + log_B[:, obs[t]]
    return logsumexp(log_alpha)


def total_log_likelihood(log_pi, log_A, log_B, sequences):
    total = 0.0
    for obs in sequences:
        total = total + log_likelihood(log_pi, log_A, log_B, obs)
    return total


def objective(log_pi, log_A, log_B, sequences):
    return -total_log_likelihood(log_pi, log_A, log_B, sequences)


def normalize(counts, axis=-1):
    return np.log(counts / np.sum(counts, axis=axis, keepdims=True))


def em_step(log_pi, log_A, log_B, sequences):
    expected_counts = tp.grad(total_log_likelihood, argnums=(0, 1, 2))
    pi_counts, A_counts, B_counts = expected_counts(log_pi, log_A, log_B, sequences)
    return normalize(pi_counts), normalize(A_counts), normalize(B_counts)


def random_params(rng, num_states=3, num_outputs=4):
    return (normalize(rng.uniform(0.5, 1.5, num_states)),
            normalize(rng.uniform(0.5, 1.5, (num_states, num_states))),
            normalize(rng.uniform(0.5, 1.5, (num_states, num_outputs))))


def sample_sequences(rng, num_sequences=3, length=6, num_outputs=4):
    seqs = np.zeros((num_sequences, length), dtype=int)
    for n in range(num_sequences):
        state = 0
        for t in range(length):
            seqs[n, t] = (2 * state + rng.integers(0, 2)) % num_outputs
            state = (state + 1) % 3 if rng.uniform() < 0.8 else state
    return seqs


def make_args(rng):
    log_pi, log_A, log_B = random_params(rng)
    return log_pi, log_A, log_B, sample_sequences(rng)


def fit(steps=5):
    log_pi, log_A, log_B, seqs = make_args(np.random.default_rng(0))
    initial = objective(log_pi, log_A, log_B, seqs)
    for _ in range(steps):
        log_pi, log_A, log_B = em_step(log_pi, log_A, log_B, seqs)
    return initial, objective(log_pi, log_A, log_B, seqs)
