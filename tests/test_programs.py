"""The corpus of user programs that reverse mode must differentiate correctly.

Every program below is ordinary Python + NumPy, written the way a user would write it.
`test_program` checks each one with `check_grads(f, args, order=2)`: the vector-Jacobian
product and the gradient of <f, u> are compared with central finite differences, at fresh
random float64 inputs (no global seed). `test_program_forward_mode` checks the same corpus
with `modes=("fwd", "rev")`: jvp, then jvp of jvp, grad of jvp and jvp of grad. Inputs are
built so that branch conditions stay well away from their thresholds, so finite
differences never straddle a kink.

The explicit tests further down cover the API promises: dtypes, pytree structure, argnums,
has_aux, value_and_grad, vjp, higher-order and composed transformations, `.source`.
"""
import functools
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import transpile as tp
from transpile.test_util import check_grads

from runtime.trees import tangent_zeros, tree_leaves, tree_map


# =====================================================================================
# Programs
# =====================================================================================

# ---- the issue's example: an MLP as a list of (W, b) tuples --------------------------
def mlp_loss(params, x, y):
    for W, b in params:
        x = np.tanh(x @ W + b)
    return np.sum((x - y) ** 2)


def _mlp_params(rng, sizes=(3, 4, 2), dtype=np.float64):
    return [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype),
             (0.1 * rng.standard_normal(n)).astype(dtype))
            for m, n in zip(sizes[:-1], sizes[1:])]


def _mlp_args(rng):
    return (_mlp_params(rng), rng.standard_normal((5, 3)), rng.standard_normal((5, 2)))


# ---- Horner's rule: a Python scalar accumulator that becomes an array ----------------
def horner(coeffs, x):
    acc = 0.0
    for c in coeffs:
        acc = acc * x + c
    return acc


# ---- softmax cross-entropy, numerically stable (max is a constant shift) -------------
def softmax_cross_entropy(logits, labels):
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * logp, axis=1))


def _onehot(rng, n, k):
    return np.eye(k)[rng.integers(0, k, n)]


# ---- attention with a plain (unshifted) softmax ---------------------------------------
def attention(q, k, v):
    d = q.shape[-1]
    scores = q @ k.T / math.sqrt(d)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=1, keepdims=True)
    return weights @ v


# ---- RNN over time steps with a tuple state, calling another user function -----------
def rnn_step(params, state, x):
    h, energy = state
    Wx, Wh, b = params
    h_new = np.tanh(x @ Wx + h @ Wh + b)
    return h_new, energy + np.sum(h_new ** 2)


def rnn_loss(params, xs, h0):
    state = (h0, 0.0)
    for t in range(xs.shape[0]):
        state = rnn_step(params, state, xs[t])
    h, energy = state
    return energy + np.sum(h)


def _rnn_args(rng):
    params = (0.5 * rng.standard_normal((3, 4)), 0.5 * rng.standard_normal((4, 4)),
              0.1 * rng.standard_normal(4))
    return params, rng.standard_normal((5, 3)), rng.standard_normal(4)


# ---- Newton's method: while loop with a tolerance test and an iteration cap -----------
def newton_sqrt(a):
    x = a
    it = 0
    while abs(x * x - a) > 1e-12 * a and it < 50:
        x = 0.5 * (x + a / x)
        it += 1
    return x


def implicit_cubic(a):
    """Solve x**3 + x = a elementwise by Newton's method (converges from x0 = a > 0)."""
    x = a
    r = x ** 3 + x - a
    n = 0
    while np.sum(np.abs(r)) > 1e-13 and n < 100:
        x = x - r / (3 * x ** 2 + 1)
        r = x ** 3 + x - a
        n += 1
    return x


# ---- recursion -------------------------------------------------------------------------
def rpow(x, n):
    if n == 0:
        return 1.0
    return x * rpow(x, n - 1)


def recursive_power_sum(x):
    return np.sum(rpow(x, 3) - 2.0 * rpow(x, 2))


def fast_pow(x, n):
    if n == 0:
        return 1.0
    half = fast_pow(x, n // 2)
    if n % 2 == 0:
        return half * half
    return half * half * x


def fast_pow_loss(x):
    return np.sum(fast_pow(x, 5))


def tree_product(xs, lo, hi):
    if hi - lo == 1:
        return xs[lo]
    mid = (lo + hi) // 2
    return tree_product(xs, lo, mid) * tree_product(xs, mid, hi)


def tree_product_all(xs):
    return tree_product(xs, 0, len(xs))


def nested_sum(t):
    if isinstance(t, tuple):
        return nested_sum(t[0]) + nested_sum(t[1])
    return np.sum(np.sin(t))


# ---- if / elif / else ---------------------------------------------------------------
def piecewise(x):
    s = np.sum(x)
    if s > 1.0:
        y = np.log(s) * x
    elif s < -1.0:
        y = np.exp(s) * x ** 2
    else:
        y = np.sin(x) * s
    return y


def _piecewise_args(target):
    return lambda rng: (rng.uniform(-0.2, 0.2, 4) + target / 4,)


def huber(r, delta):
    a = abs(r)
    if a <= delta:
        return 0.5 * r * r
    else:
        return delta * (a - 0.5 * delta)


# ---- early return inside a loop ------------------------------------------------------
def first_exceeding(xs, threshold):
    for i in range(len(xs)):
        if xs[i] > threshold:
            return xs[i] ** 2 * (i + 1)
    return np.sum(xs)


def _first_exceeding_args(hit):
    def make(rng):
        xs = rng.uniform(-1.0, 1.0, 6)
        if hit:
            xs[3] = 3.0 + rng.uniform(0, 0.5)
        return xs, 2.0
    return make


# ---- break on a data-dependent condition ---------------------------------------------
def accumulate_until(xs, limit):
    total = 0.0
    steps = 0
    for x in xs:
        total = total + x * x
        steps += 1
        if total > limit:
            break
    return total / steps


# ---- continue ---------------------------------------------------------------------
def sum_positive_terms(xs, w):
    acc = 0.0
    for i, x in enumerate(xs):
        if x < 0:
            continue
        acc += w[i] * np.exp(-x) * x
    return acc


def _signed_away_from_zero(rng, n, lo=0.2, hi=2.0):
    return rng.uniform(lo, hi, n) * rng.choice([-1.0, 1.0], n)


# ---- comprehensions ---------------------------------------------------------------
def poly_feature_regression(x, w):
    feats = [x ** k for k in range(1, 4)]
    F = np.stack(feats, axis=1)
    return np.sum((F @ w - np.cos(x)) ** 2)


def leaky_relu_list(xs):
    acts = [x if x > 0 else 0.1 * x for x in xs]
    return sum([a * a for a in acts]) + acts[0] * acts[-1]


def filtered_comprehension(xs, w):
    terms = [w[i] * np.sin(x) for i, x in enumerate(xs) if i % 2 == 0]
    return terms[0] * terms[1] + terms[-1]


# ---- dicts of parameters -----------------------------------------------------------
def dict_model_loss(p, x, y):
    h = np.tanh(x @ p["W1"] + p["b1"])
    pred = h @ p["w2"] + p["b2"]
    return np.mean((pred - y) ** 2) + 1e-3 * (np.sum(p["W1"] ** 2) + np.sum(p["w2"] ** 2))


def _dict_model_args(rng):
    p = {"W1": rng.standard_normal((3, 4)) / 2, "b1": rng.standard_normal(4) / 10,
         "w2": rng.standard_normal(4), "b2": 0.3}
    return p, rng.standard_normal((6, 3)), rng.standard_normal(6)


def layer_dicts(layers, x):
    for layer in layers:
        x = np.tanh(x @ layer["W"] + layer["b"])
    return np.sum(x ** 2)


def dict_literal_internal(x, y):
    stats = {"mean": np.mean(x), "spread": np.sum((x - np.mean(x)) ** 2)}
    parts = [stats["mean"] * y, stats["spread"]]
    return np.sum(parts[0]) + parts[1]


# ---- writing subscripts of local arrays --------------------------------------------
def row_writes(x, w):
    n = x.shape[0]
    out = np.zeros((n, w.shape[0]))
    for i in range(n):
        out[i] = np.sin(x[i]) * w
    return np.sum(out @ out.T)


def column_updates(x, v):
    y = x.copy()
    for j in range(y.shape[1]):
        y[:, j] += v[j] * x[:, 0]
    return y


def overwrite_rows(x):
    buf = np.zeros((3, x.shape[1]))
    buf[0] = x[0]
    buf[1] = buf[0] * x[1]
    buf[0] = np.sin(x[2])
    buf[2, 1:] = x[1, :-1] ** 2
    return np.sum(buf ** 2)


def scatter_repeated(x, v, idx):
    y = x * 1.0
    y[idx] += v
    return y ** 2


# ---- loops over zip / enumerate / lists ---------------------------------------------
def weighted_pairs(xs, ys):
    acc = 0.0
    for i, x in enumerate(xs):
        acc = acc + (i + 1) * np.sum(x * ys[i])
    for a, b in zip(xs, ys):
        acc = acc + np.sum(np.sin(a) * b)
    return acc


def discounted_error(rewards, values, gamma):
    total = 0.0
    for t, (r, v) in enumerate(zip(rewards, values)):
        total = total + gamma ** t * (r - v) ** 2
    return total


def running_features(xs, w):
    terms = []
    for x in xs:
        terms.append(np.tanh(x * w))
    total = sum(terms)
    return total


# ---- functools.partial --------------------------------------------------------------
def dense(W, b, x):
    return np.tanh(x @ W + b)


def partial_layers(W1, b1, W2, x):
    layer1 = functools.partial(dense, W1, b1)
    h = layer1(x)
    return np.sum(h @ W2) + np.sum(layer1(0.5 * x) ** 2)


def scaled_softplus(scale, x):
    return np.log1p(np.exp(scale * x)) / scale


SHARP_SOFTPLUS = functools.partial(scaled_softplus, 4.0)


def partial_module_level(x, w):
    return np.sum(SHARP_SOFTPLUS(x @ w))


# ---- closures, default arguments, lambdas, nested defs --------------------------------
def make_regularized_loss(weight):
    def regularized_loss(x):
        return np.sum(np.tanh(x) ** 2) + weight * np.sum(x ** 2)
    return regularized_loss


REGULARIZED_LOSS = make_regularized_loss(0.3)


def make_linear_model(W):
    def linear_model(x):
        return np.tanh(x @ W)
    return linear_model


LINEAR_MODEL = make_linear_model(np.random.default_rng().standard_normal((3, 2)))


def uses_closure_model(x):
    return np.sum(LINEAR_MODEL(x) ** 2)


def gaussian_nll(x, mu, scale=2.0):
    z = (x - mu) / scale
    return np.sum(0.5 * z ** 2 + np.log(scale) + 0.5 * math.log(2 * math.pi))


def default_arg_caller(x, mu):
    return gaussian_nll(x, mu) + gaussian_nll(x, mu, 0.5)


def lambda_activation(x, W):
    swish = lambda z: z / (1.0 + np.exp(-z))  # noqa: E731
    return np.sum(swish(x @ W) ** 2)


softplus = lambda z: np.log1p(np.exp(z))  # noqa: E731


def nested_def_closure(x, w):
    scale = np.sum(w ** 2)

    def unit(z):
        return np.tanh(z * w) * scale
    return np.sum(unit(x) + unit(2.0 * x))


# ---- math on Python floats, local imports --------------------------------------------
def pendulum_energy(theta, omega, x):
    return (0.5 * omega ** 2 + 9.81 * (1.0 - math.cos(theta))
            + math.sin(theta) * np.sum(x ** 2) + math.sqrt(1.0 + omega ** 2))


def local_import_program(x):
    import numpy as onp
    from math import pi
    import math as m
    return onp.sum(onp.cos(pi * x) * m.exp(0.5))


# ---- ints and bools carried along ---------------------------------------------------
def count_and_flag(xs, scale):
    total = 0.0
    count = 0
    seen_big = False
    for x in xs:
        if x > 0.0:
            total = total + scale * x ** 2
            count += 1
        if x > 1.5:
            seen_big = True
    if seen_big:
        total = total * 2.0
    return total / (count + 1)


def embedding_lookup(E, tokens, w):
    vecs = E[tokens]
    return np.sum(np.tanh(vecs @ w))


def ignores_second(x, unused, w):
    return np.sum(np.sin(x) * w)


# ---- conditional expressions, unpacking, augmented assignment -------------------------
def cond_expr(x, y):
    s = np.sum(x)
    z = x * y if s > 0 else x - y
    scale = 2.0 if np.mean(y) > 0 else 0.5
    return np.sum(z ** 2) * scale


def linear_recurrence(a, b, c):
    for _ in range(5):
        a, b = b, c * a + b
    return a * b


def augmented_ops(x, y):
    z = x * 1.0
    z += y
    z *= x
    z -= 0.5 * y
    z /= 1.0 + y ** 2
    z **= 2
    return z


# ---- reading subscripts and slices -------------------------------------------------
def slicing_reads(x):
    inner = x[1:-1]
    even = x[::2]
    diff = x[1:] - x[:-1]
    return np.sum(inner ** 2) + np.sum(even * 3.0) + np.sum(diff ** 3) + x[-1] * x[0]


def matrix_reads(A):
    col = A[:, 0]
    row = A[1]
    block = A[1:3, ::2]
    picked = A[[2, 0, 2]]
    return (np.sum(col * row) + np.sum(block ** 2) + A[2, 3] * A[-1, -1]
            + np.sum(picked[:, 1:] ** 2) + np.sum(A[..., 1] * A[None, 0, 1]))


# ---- array methods and attributes --------------------------------------------------
def array_methods(x, W):
    n = len(x)
    rows, cols = x.shape
    h = x.dot(W)
    s = h.sum(axis=0)
    r = x.T.reshape(cols * rows)
    two = x.reshape(2, -1)
    c = x.copy()
    m = x.mean()
    return (np.sum(s ** 2) + np.sum(r[:n] * 2.0) + c.mean(axis=1).sum() + m * n
            + np.sum(two.ravel() * r))


def layer_norm(x, gamma, beta):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + 1e-5) + beta


def gram_energy(X, w):
    G = X.T @ X
    return np.dot(w, G.dot(w)) + np.sum(X.T * X.T)


# ---- more loops: optimizers, integrators, iterations ---------------------------------
def inner_sgd(lr, target, x0):
    x = x0
    for _ in range(5):
        g = 2.0 * (x - target)
        x = x - lr * g
    return np.sum((x - 1.0) ** 2)


def euler_decay(y0, k, h):
    t = 0.0
    y = y0
    while t < 1.05:
        y = y + h * (-k * y + np.sin(t))
        t = t + h
    return y


def vector_field(y, a):
    return a * y - y ** 3


def rk4(y, a, h):
    k1 = vector_field(y, a)
    k2 = vector_field(y + 0.5 * h * k1, a)
    k3 = vector_field(y + 0.5 * h * k2, a)
    k4 = vector_field(y + h * k3, a)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def rk4_integrate(y0, a):
    y = y0
    for _ in range(4):
        y = rk4(y, a, 0.05)
    return y


def power_iteration(A, v):
    k = 0
    while True:
        v = A @ v
        v = v / np.sqrt(np.sum(v * v))
        k += 1
        if k >= 6:
            break
    return v @ A @ v


def quadratic_form_loops(A, x):
    n = len(x)
    total = 0.0
    for i in range(n):
        for j in range(n):
            total += A[i, j] * x[i] * x[j]
    return total


def chebyshev_sum(x, coeffs):
    t_prev, t_cur = 1.0, x
    total = coeffs[0] * t_prev + coeffs[1] * t_cur
    k = 2
    while k < len(coeffs):
        t_prev, t_cur = t_cur, 2.0 * x * t_cur - t_prev
        total = total + coeffs[k] * t_cur
        k += 1
    return total


def log_magnitudes_while(xs):
    i = 0
    acc = 0.0
    while i < len(xs):
        x = xs[i]
        i += 1
        if abs(x) < 0.5:
            continue
        acc = acc + np.log(x * x) * i
    return acc


def _mixed_magnitudes(rng, n=6):
    small = rng.uniform(0.1, 0.3, n)
    big = rng.uniform(0.8, 2.0, n)
    return np.where(rng.random(n) < 0.5, small, big) * rng.choice([-1.0, 1.0], n)


def nested_break(A):
    total = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] < 0.0:
                break
            total = total + A[i, j] ** 2 * (j + 1)
    return total


def pairwise_distances(X):
    n = X.shape[0]
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            d = np.sqrt(np.sum((X[i] - X[j]) ** 2))
            D[i, j] = d
            D[j, i] = d
    return np.sum(np.exp(-D))


def local_list_and_dict_writes(x, w):
    hs = [x, 2.0 * x, x ** 2]
    hs[1] = hs[1] * w
    cache = {}
    cache["a"] = np.sum(hs[0] * hs[1])
    cache["b"] = np.sum(hs[2])
    cache["a"] = cache["a"] + cache["b"] * 0.5
    return cache["a"] * cache["b"]


def reversed_and_newaxis(x):
    rev = x[::-1]
    outer = x[:, np.newaxis] * rev[np.newaxis, :]
    scale = x.ndim + x.size
    return np.sum(outer ** 2) / scale + np.sum(x[-2::-2])


def integer_array_write(x, v, idx):
    y = np.zeros(x.shape[0] + 2)
    y[idx] = v * x[0]
    y[:x.shape[0]] += x
    return np.sum(np.sin(y) * y)


def depth_sum(xs, depth):
    if depth == 0:
        return np.sum(xs ** 2)
    total = 0.0
    for k in range(2):
        total = total + depth_sum(np.tanh(xs * (k + 1.0)), depth - 1)
        if depth == 1 and k == 1:
            return total * 0.5
    return total


# ---- classic losses --------------------------------------------------------------
def logistic_loss(w, b, X, y):
    margins = y * (X @ w + b)
    return np.mean(np.log1p(np.exp(-margins))) + 0.01 * np.sum(w * w)


def where_clip(x):
    y = np.where(x > 0, x, 0.1 * x)
    return np.sum(np.clip(y, -0.5, 2.0) ** 2 + np.maximum(x, 0.3 * x))


def mean_and_var(x):
    m = np.mean(x)
    return m, np.mean((x - m) ** 2)


def standardized_score(x, y):
    m, v = mean_and_var(x)
    return np.sum((y - m) ** 2 / v)


def polar_to_cartesian(r, theta):
    return r * np.cos(theta), r * np.sin(theta)


# ---- calling a module-level transformed function -----------------------------------
def potential(q):
    return np.sum(np.cos(q)) + 0.5 * np.sum(q ** 2)


force = tp.grad(potential)


def leapfrog_loss(q, p):
    p_half = p - 0.05 * force(q)
    q_new = q + 0.1 * p_half
    p_new = p_half - 0.05 * force(q_new)
    return np.sum(q_new ** 2) + np.sum(p_new ** 2)


# =====================================================================================
# The parametrized corpus
# =====================================================================================

def _n(rng, *shape):
    return rng.standard_normal(shape)


PROGRAMS = [
    (mlp_loss, _mlp_args),
    (horner, lambda rng: (_n(rng, 5), _n(rng, 4))),
    (softmax_cross_entropy, lambda rng: (_n(rng, 4, 3), _onehot(rng, 4, 3))),
    (attention, lambda rng: (_n(rng, 3, 4), _n(rng, 5, 4), _n(rng, 5, 2))),
    (rnn_loss, _rnn_args),
    (newton_sqrt, lambda rng: (float(rng.uniform(1.0, 4.0)),)),
    (implicit_cubic, lambda rng: (rng.uniform(0.5, 3.0, 4),)),
    (recursive_power_sum, lambda rng: (_n(rng, 4),)),
    (fast_pow_loss, lambda rng: (_n(rng, 3),)),
    (tree_product_all, lambda rng: (rng.uniform(0.5, 1.5, (6, 3)),)),
    (nested_sum, lambda rng: (((_n(rng, 2), _n(rng, 3)), (_n(rng, 2, 2), (_n(rng, 1), 0.7))),)),
    (piecewise, _piecewise_args(3.0)),
    (piecewise, _piecewise_args(-3.0)),
    (piecewise, _piecewise_args(0.0)),
    (huber, lambda rng: (float(rng.uniform(-0.7, 0.7)), 1.0)),
    (huber, lambda rng: (float(rng.uniform(1.5, 3.0)), 1.0)),
    (huber, lambda rng: (float(rng.uniform(-3.0, -1.5)), 1.0)),
    (first_exceeding, _first_exceeding_args(hit=True)),
    (first_exceeding, _first_exceeding_args(hit=False)),
    (accumulate_until,
     lambda rng: (np.array([1.0, 1.0, 3.0, 1.0, 1.0]) + rng.uniform(-0.05, 0.05, 5), 5.0)),
    (sum_positive_terms, lambda rng: (_signed_away_from_zero(rng, 6), _n(rng, 6))),
    (poly_feature_regression, lambda rng: (_n(rng, 5), _n(rng, 3))),
    (leaky_relu_list, lambda rng: (_signed_away_from_zero(rng, 5),)),
    (filtered_comprehension, lambda rng: (_n(rng, 5, 2), _n(rng, 5))),
    (dict_model_loss, _dict_model_args),
    (layer_dicts, lambda rng: ([{"W": _n(rng, 3, 3) / 2, "b": _n(rng, 3) / 10}
                                for _ in range(2)], _n(rng, 4, 3))),
    (dict_literal_internal, lambda rng: (_n(rng, 5), _n(rng, 3))),
    (row_writes, lambda rng: (_n(rng, 4, 3), _n(rng, 3))),
    (column_updates, lambda rng: (_n(rng, 3, 4), _n(rng, 4))),
    (overwrite_rows, lambda rng: (_n(rng, 3, 4),)),
    (scatter_repeated, lambda rng: (_n(rng, 4), _n(rng, 3), np.array([0, 2, 0]))),
    (weighted_pairs, lambda rng: ([_n(rng, 3) for _ in range(3)], [_n(rng, 3) for _ in range(3)])),
    (discounted_error, lambda rng: (_n(rng, 5), _n(rng, 5), 0.9)),
    (running_features, lambda rng: (_n(rng, 5, 3), _n(rng, 3))),
    (partial_layers, lambda rng: (_n(rng, 3, 4) / 2, _n(rng, 4) / 10, _n(rng, 4, 2), _n(rng, 5, 3))),
    (partial_module_level, lambda rng: (_n(rng, 4, 3), _n(rng, 3) / 3)),
    (REGULARIZED_LOSS, lambda rng: (_n(rng, 6),)),
    (LINEAR_MODEL, lambda rng: (_n(rng, 4, 3),)),
    (uses_closure_model, lambda rng: (_n(rng, 4, 3),)),
    (default_arg_caller, lambda rng: (_n(rng, 5), _n(rng, 5))),
    (lambda_activation, lambda rng: (_n(rng, 4, 3), _n(rng, 3, 2))),
    (softplus, lambda rng: (_n(rng, 5),)),
    (nested_def_closure, lambda rng: (_n(rng, 4), _n(rng, 4))),
    (pendulum_energy, lambda rng: (float(rng.uniform(-1, 1)), float(rng.uniform(-1, 1)), _n(rng, 3))),
    (local_import_program, lambda rng: (_n(rng, 4),)),
    (count_and_flag, lambda rng: (np.array([-0.8, 0.5, 1.9, -1.2, 0.9]) + rng.uniform(-0.1, 0.1, 5),
                                  float(rng.uniform(0.5, 2.0)))),
    (embedding_lookup, lambda rng: (_n(rng, 5, 4), np.array([0, 3, 3, 1, 0]), _n(rng, 4))),
    (ignores_second, lambda rng: (_n(rng, 3), _n(rng, 2, 2), _n(rng, 3))),
    (cond_expr, lambda rng: (rng.uniform(0.1, 1.0, 4), rng.uniform(0.5, 1.5, 4))),
    (cond_expr, lambda rng: (-rng.uniform(0.1, 1.0, 4), -rng.uniform(0.5, 1.5, 4))),
    (linear_recurrence, lambda rng: (_n(rng, 3), _n(rng, 3), float(rng.uniform(0.5, 1.0)))),
    (augmented_ops, lambda rng: (_n(rng, 4), _n(rng, 4))),
    (slicing_reads, lambda rng: (_n(rng, 7),)),
    (matrix_reads, lambda rng: (_n(rng, 4, 4),)),
    (array_methods, lambda rng: (_n(rng, 4, 3), _n(rng, 3, 2))),
    (layer_norm, lambda rng: (_n(rng, 3, 5), _n(rng, 5), _n(rng, 5))),
    (gram_energy, lambda rng: (_n(rng, 5, 3), _n(rng, 3))),
    (inner_sgd, lambda rng: (float(rng.uniform(0.05, 0.2)), _n(rng, 3), _n(rng, 3))),
    (euler_decay, lambda rng: (_n(rng, 3), float(rng.uniform(0.5, 1.5)), 0.1)),
    (rk4_integrate, lambda rng: (_n(rng, 3), float(rng.uniform(0.5, 1.5)))),
    (power_iteration, lambda rng: (_n(rng, 4, 4), _n(rng, 4))),
    (quadratic_form_loops, lambda rng: (_n(rng, 3, 3), _n(rng, 3))),
    (chebyshev_sum, lambda rng: (rng.uniform(-0.9, 0.9, 3), _n(rng, 5))),
    (log_magnitudes_while, lambda rng: (_mixed_magnitudes(rng),)),
    (nested_break, lambda rng: (_signed_away_from_zero(rng, 12).reshape(3, 4),)),
    (pairwise_distances, lambda rng: (_n(rng, 4, 2),)),
    (local_list_and_dict_writes, lambda rng: (_n(rng, 3), _n(rng, 3))),
    (reversed_and_newaxis, lambda rng: (_n(rng, 5),)),
    (integer_array_write, lambda rng: (_n(rng, 4), _n(rng, 2), np.array([1, 5]))),
    (depth_sum, lambda rng: (_n(rng, 3), 2)),
    (logistic_loss, lambda rng: (_n(rng, 3), 0.1, _n(rng, 6, 3), rng.choice([-1.0, 1.0], 6))),
    (where_clip, lambda rng: (np.array([-6.0, -1.5, -0.4, 0.5, 1.2, 2.6])
                              + rng.uniform(-0.1, 0.1, 6),)),
    (standardized_score, lambda rng: (_n(rng, 6), _n(rng, 4))),
    (polar_to_cartesian, lambda rng: (rng.uniform(0.5, 2.0, 3), _n(rng, 3))),
    (leapfrog_loss, lambda rng: (_n(rng, 3), _n(rng, 3))),
]


def _id(f):
    return getattr(f, "__name__", str(f)).replace("<lambda>", "lambda")


_IDS = []
for _f, _ in PROGRAMS:
    _name = _id(_f)
    _k = sum(1 for i in _IDS if i.split("#")[0] == _name)
    _IDS.append(_name if _k == 0 else f"{_name}#{_k}")


def _tree_allclose(a, b, **kw):
    la, lb = tree_leaves(a), tree_leaves(b)
    return len(la) == len(lb) and all(np.allclose(x, y, **kw) for x, y in zip(la, lb))


@pytest.mark.parametrize("f, make_args", PROGRAMS, ids=_IDS)
def test_program(f, make_args):
    rng = np.random.default_rng()
    args = make_args(rng)
    expected = f(*args)
    out, _ = tp.vjp(f, *args)
    assert _tree_allclose(out, expected, rtol=1e-12, atol=1e-12), \
        f"transformed primal {out!r} != original {expected!r}"
    check_grads(f, args, order=2)


@pytest.mark.parametrize("f, make_args", PROGRAMS, ids=_IDS)
def test_program_forward_mode(f, make_args):
    """The same corpus in forward mode: jvp against finite differences, then jvp of jvp,
    grad of jvp, jvp of grad (order 2 in both modes)."""
    rng = np.random.default_rng()
    args = make_args(rng)
    expected = f(*args)
    out, out_dot = tp.jvp(f, args, tuple(tangent_zeros(a) for a in args))
    assert _tree_allclose(out, expected, rtol=1e-12, atol=1e-12), \
        f"forward-mode primal {out!r} != original {expected!r}"
    check_grads(f, args, order=2, modes=("fwd", "rev"))


# =====================================================================================
# Explicit API promises
# =====================================================================================

def test_issue_example_grads_keep_pytree_structure():
    rng = np.random.default_rng()
    params, x, y = _mlp_args(rng)
    grads = tp.grad(mlp_loss)(params, x, y)
    assert isinstance(grads, list) and len(grads) == len(params)
    for (gW, gb), (W, b) in zip(grads, params):
        assert gW.shape == W.shape and gb.shape == b.shape
        assert gW.dtype == W.dtype and gb.dtype == b.dtype
    for g in grads:
        assert isinstance(g, tuple)
    # against a hand-written backward pass
    hs = [x]
    for W, b in params:
        hs.append(np.tanh(hs[-1] @ W + b))
    d = 2 * (hs[-1] - y)
    expected = []
    for (W, b), h_in, h_out in reversed(list(zip(params, hs[:-1], hs[1:]))):
        da = d * (1 - h_out ** 2)
        expected.append((h_in.T @ da, da.sum(0)))
        d = da @ W.T
    expected.reverse()
    assert _tree_allclose(grads, expected, rtol=1e-10, atol=1e-12)


def test_float32_inputs_give_float32_grads():
    rng = np.random.default_rng()
    params = _mlp_params(rng, dtype=np.float32)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    y = rng.standard_normal((5, 2)).astype(np.float32)
    grads = tp.grad(mlp_loss, argnums=(0, 1))(params, x, y)
    for g, p in zip(tree_leaves(grads), tree_leaves((params, x))):
        assert g.dtype == np.float32, g.dtype
        assert g.shape == p.shape
    gc, gx32 = tp.grad(lambda c, x: np.sum(horner(c, x)), argnums=(0, 1))(
        rng.standard_normal(4).astype(np.float32), x[0])
    assert gc.dtype == np.float32 and gx32.dtype == np.float32
    ref = tp.grad(mlp_loss, argnums=(0, 1))(tree_map(lambda a: a.astype(np.float64), params),
                                            x.astype(np.float64), y.astype(np.float64))
    assert _tree_allclose(grads, ref, rtol=1e-3, atol=1e-4)


def test_float32_with_python_scalars_and_layer_norm():
    rng = np.random.default_rng()
    x = rng.standard_normal((3, 5)).astype(np.float32)
    gamma = rng.standard_normal(5).astype(np.float32)
    beta = rng.standard_normal(5).astype(np.float32)
    f = lambda x, g, b: np.sum(layer_norm(x, g, b) ** 2)  # noqa: E731
    gx, gg, gb = tp.grad(f, argnums=(0, 1, 2))(x, gamma, beta)
    assert gx.dtype == gg.dtype == gb.dtype == np.float32


def test_pytree_structure_of_grads_with_python_floats():
    rng = np.random.default_rng()
    params = {"layers": [{"W": rng.standard_normal((3, 3)) / 2, "b": rng.standard_normal(3)},
                         {"W": rng.standard_normal((3, 3)) / 2, "b": rng.standard_normal(3)}]}
    x = rng.standard_normal((4, 3))
    g = tp.grad(layer_dicts)(params["layers"], x)
    assert isinstance(g, list) and len(g) == 2
    for gl, pl in zip(g, params["layers"]):
        assert isinstance(gl, dict) and set(gl) == {"W", "b"}
        assert gl["W"].shape == pl["W"].shape and gl["b"].shape == pl["b"].shape
    p, xx, yy = _dict_model_args(rng)
    gp = tp.grad(dict_model_loss)(p, xx, yy)
    assert set(gp) == set(p)
    assert isinstance(gp["b2"], float)
    for k in ("W1", "b1", "w2"):
        assert gp[k].shape == p[k].shape
    # d/d b2 of mean((pred - y)^2) = 2 * mean(pred - y)
    h = np.tanh(xx @ p["W1"] + p["b1"])
    assert np.isclose(gp["b2"], 2 * np.mean(h @ p["w2"] + p["b2"] - yy))


def test_grad_wrt_python_float_is_float():
    g = tp.grad(huber)(2.0, 1.0)
    assert isinstance(g, float) and g == 1.0
    g2 = tp.grad(newton_sqrt)(4.0)
    assert np.isclose(g2, 0.25)


def test_argnums_tuple_and_int():
    rng = np.random.default_rng()
    w, b, X, y = _n(rng, 3), 0.2, _n(rng, 6, 3), rng.choice([-1.0, 1.0], 6)
    gw, gX = tp.grad(logistic_loss, argnums=(0, 2))(w, b, X, y)
    assert gw.shape == w.shape and gX.shape == X.shape
    assert np.allclose(tp.grad(logistic_loss, argnums=0)(w, b, X, y), gw)
    m = y * (X @ w + b)
    sig = 1.0 / (1.0 + np.exp(m))
    assert np.allclose(gw, X.T @ (-y * sig) / len(y) + 0.02 * w)
    gb = tp.grad(logistic_loss, argnums=1)(w, b, X, y)
    assert isinstance(gb, float) and np.isclose(gb, np.mean(-y * sig))
    gy = tp.grad(logistic_loss, argnums=-1)(w, b, X, y)
    assert np.allclose(gy, -(X @ w + b) * sig / len(y))


def test_argnums_tuple_of_one_gives_a_tuple():
    rng = np.random.default_rng()
    w, X, y = _n(rng, 3), _n(rng, 6, 3), rng.choice([-1.0, 1.0], 6)
    result = tp.grad(logistic_loss, argnums=(1,))(w, 0.2, X, y)
    assert isinstance(result, tuple) and len(result) == 1
    assert isinstance(result[0], float)


def test_unused_input_gets_zeros_of_right_shape():
    rng = np.random.default_rng()
    x, unused, w = _n(rng, 3), _n(rng, 2, 2), _n(rng, 3)
    gx, gu, gw = tp.grad(ignores_second, argnums=(0, 1, 2))(x, unused, w)
    assert gu.shape == (2, 2) and gu.dtype == unused.dtype and not np.any(gu)
    assert np.allclose(gx, np.cos(x) * w) and np.allclose(gw, np.sin(x))
    g32 = tp.grad(ignores_second, argnums=1)(x, unused.astype(np.float32), w)
    assert g32.dtype == np.float32 and g32.shape == (2, 2) and not np.any(g32)
    gf = tp.grad(lambda a, b: a * 3.0, argnums=1)(1.0, 2.0)
    assert gf == 0.0 and isinstance(gf, float)
    gp = tp.grad(lambda p, x: np.sum(x ** 2), argnums=0)({"a": np.ones(2), "b": (1.5, np.ones(3))}, x)
    assert set(gp) == {"a", "b"} and isinstance(gp["b"], tuple)
    assert gp["a"].shape == (2,) and not np.any(gp["a"])
    assert gp["b"][0] == 0.0 and isinstance(gp["b"][0], float)
    assert gp["b"][1].shape == (3,) and not np.any(gp["b"][1])


def loss_with_aux(w, x):
    pred = x @ w
    return np.mean(pred ** 2), {"pred": pred, "norm": np.sum(w ** 2)}


def test_has_aux():
    rng = np.random.default_rng()
    w, x = _n(rng, 3), _n(rng, 5, 3)
    g, aux = tp.grad(loss_with_aux, has_aux=True)(w, x)
    assert np.allclose(g, 2 * x.T @ (x @ w) / 5)
    assert set(aux) == {"pred", "norm"}
    assert np.allclose(aux["pred"], x @ w) and np.isclose(aux["norm"], np.sum(w ** 2))


def test_value_and_grad_has_aux():
    rng = np.random.default_rng()
    w, x = _n(rng, 3), _n(rng, 5, 3)
    (val, aux), g = tp.value_and_grad(loss_with_aux, has_aux=True)(w, x)
    assert np.isclose(val, np.mean((x @ w) ** 2))
    assert np.allclose(g, 2 * x.T @ (x @ w) / 5)
    assert np.allclose(aux["pred"], x @ w)


def test_has_aux_with_argnums_tuple_and_int_args():
    rng = np.random.default_rng()
    E, tokens, w = _n(rng, 5, 4), np.array([0, 3, 3, 1]), _n(rng, 4)

    def loss(E, tokens, w):
        h = np.tanh(E[tokens] @ w)
        return np.sum(h ** 2), len(tokens)

    (gE, gw), n = tp.grad(loss, argnums=(0, 2), has_aux=True)(E, tokens, w)
    assert n == 4 and gE.shape == E.shape and gw.shape == w.shape
    h = np.tanh(E[tokens] @ w)
    dh = 2 * h * (1 - h ** 2)
    expected_E = np.zeros_like(E)
    np.add.at(expected_E, tokens, np.outer(dh, w))
    assert np.allclose(gE, expected_E) and np.allclose(gw, E[tokens].T @ dh)


def test_grad_of_transform_equals_grad():
    rng = np.random.default_rng()
    args = _rnn_args(rng)
    assert _tree_allclose(tp.grad(tp.transform(rnn_loss))(*args), tp.grad(rnn_loss)(*args))


def test_value_and_grad():
    rng = np.random.default_rng()
    params, x, y = _mlp_args(rng)
    val, g = tp.value_and_grad(mlp_loss)(params, x, y)
    assert np.isclose(val, mlp_loss(params, x, y))
    assert _tree_allclose(g, tp.grad(mlp_loss)(params, x, y))
    val2, (gw, gX) = tp.value_and_grad(logistic_loss, argnums=(0, 2))(
        _n(rng, 3), 0.1, _n(rng, 4, 3), np.ones(4))
    assert np.ndim(val2) == 0 and gw.shape == (3,) and gX.shape == (4, 3)


def test_default_argument_omitted():
    rng = np.random.default_rng()
    x, mu = _n(rng, 4), _n(rng, 4)
    g = tp.grad(gaussian_nll)(x, mu)
    assert np.allclose(g, (x - mu) / 4.0)
    g2 = tp.grad(gaussian_nll, argnums=2)(x, mu, 0.5)
    z = (x - mu) / 0.5
    assert np.isclose(g2, np.sum(-z ** 2 / 0.5 + 1 / 0.5))


def test_vjp_non_scalar_output():
    rng = np.random.default_rng()
    x, W = _n(rng, 4, 3), _n(rng, 3, 2)

    def layer(x, W):
        return np.tanh(x @ W)

    out, vjp_fn = tp.vjp(layer, x, W)
    assert np.allclose(out, np.tanh(x @ W))
    ct = _n(rng, 4, 2)
    dx, dW = vjp_fn(ct)
    da = ct * (1 - out ** 2)
    assert np.allclose(dx, da @ W.T) and np.allclose(dW, x.T @ da)
    # tuple output
    r, th = rng.uniform(0.5, 2, 3), _n(rng, 3)
    (cx, cy), vjp2 = tp.vjp(polar_to_cartesian, r, th)
    u, v = _n(rng, 3), _n(rng, 3)
    dr, dth = vjp2((u, v))
    assert np.allclose(dr, u * np.cos(th) + v * np.sin(th))
    assert np.allclose(dth, -u * r * np.sin(th) + v * r * np.cos(th))


def test_vjp_has_aux():
    rng = np.random.default_rng()
    x = _n(rng, 3)

    def f(x):
        y = np.sin(x)
        return y * 2.0, {"mean": np.mean(y)}

    out, vjp_fn, aux = tp.vjp(f, x, has_aux=True)
    assert np.allclose(out, 2 * np.sin(x)) and np.isclose(aux["mean"], np.mean(np.sin(x)))
    (dx,) = vjp_fn(np.ones(3))
    assert np.allclose(dx, 2 * np.cos(x))


def sin_times_x(x):
    return math.sin(x) * x


def np_sin_times_x(x):
    return np.sin(x) * x


def quartic(x):
    return x ** 4 - 3.0 * x


def taylor_exp(x):
    term = 1.0
    total = 1.0
    for k in range(1, 12):
        term = term * x / k
        total = total + term
    return total


def test_grad_of_grad_scalar_functions():
    x = float(np.random.default_rng().uniform(-2, 2))
    d2 = 2 * math.cos(x) - x * math.sin(x)
    assert np.isclose(tp.grad(tp.grad(sin_times_x))(x), d2)
    assert np.isclose(tp.grad(tp.grad(np_sin_times_x))(x), d2)
    assert np.isclose(tp.grad(tp.grad(np_sin_times_x))(np.float64(x)), d2)
    assert np.isclose(tp.grad(tp.grad(quartic))(x), 12 * x ** 2)
    assert np.isclose(tp.grad(tp.grad(tp.grad(quartic)))(x), 24 * x)
    t = float(np.random.default_rng().uniform(-1, 1))
    assert np.isclose(tp.grad(tp.grad(taylor_exp))(t), sum(t ** k / math.factorial(k)
                                                           for k in range(10)))
    assert np.isclose(tp.grad(tp.grad(huber))(0.3, 1.0), 1.0)
    assert np.isclose(tp.grad(tp.grad(newton_sqrt))(4.0), -0.25 / 8.0)


def test_grad_of_function_calling_transformed_function():
    rng = np.random.default_rng()
    q, p = _n(rng, 3), _n(rng, 3)
    check_grads(leapfrog_loss, (q, p), order=2)
    # d/dq of the gradient-norm penalty |grad potential(q)|^2, analytically
    def penalty(q):
        return np.sum(force(q) ** 2)
    g = tp.grad(penalty)(q)
    fq = -np.sin(q) + q
    assert np.allclose(g, 2 * fq * (-np.cos(q) + 1))


def d_sum_inner(y, x):
    return x + y


d_sum = tp.grad(d_sum_inner)


def no_confusion_module_level(x):
    return x * d_sum(1.0, x)


def no_confusion_closure(x):
    shift = lambda y: x + y  # noqa: E731
    return x * tp.grad(shift)(1.0)


def closure_product(x):
    scale = lambda y: x * y * y  # noqa: E731
    return tp.grad(scale)(x)


def test_no_perturbation_confusion_module_level():
    # d/dx [x * (d/dy (x + y))] = d/dx [x * 1] = 1 (a confused implementation gives 2)
    x = float(np.random.default_rng().uniform(0.5, 2))
    assert np.isclose(tp.grad(no_confusion_module_level)(x), 1.0)


def test_no_perturbation_confusion_closure():
    x = float(np.random.default_rng().uniform(0.5, 2))
    assert np.isclose(no_confusion_closure(x), x)
    assert np.isclose(tp.grad(no_confusion_closure)(x), 1.0)


def test_grad_of_inner_grad_over_closure():
    # d/dy (x y^2) at y = x is 2x^2; its derivative in x is 4x
    x = float(np.random.default_rng().uniform(0.5, 2))
    assert np.isclose(closure_product(x), 2 * x ** 2)
    assert np.isclose(tp.grad(closure_product)(x), 4 * x)


def test_transforming_partial_and_closure_objects():
    rng = np.random.default_rng()
    W, b, x = _n(rng, 3, 2), _n(rng, 2), _n(rng, 4, 3)
    f = functools.partial(dense, W, b)
    out, vjp_fn = tp.vjp(f, x)
    assert np.allclose(out, dense(W, b, x))
    (dx,) = vjp_fn(np.ones_like(out))
    assert np.allclose(dx, (1 - out ** 2) @ W.T)
    gp = tp.grad(functools.partial(gaussian_nll, x))(x * 0.5)
    assert np.allclose(gp, -(x - 0.5 * x) / 4.0)
    gc = tp.grad(REGULARIZED_LOSS)(x[0])
    assert np.allclose(gc, 2 * np.tanh(x[0]) * (1 - np.tanh(x[0]) ** 2) + 0.6 * x[0])


def test_calling_a_partial_held_in_a_closure():
    rng = np.random.default_rng()
    W, b, x = _n(rng, 3, 2), _n(rng, 2), _n(rng, 4, 3)
    f = functools.partial(dense, W, b)
    g = tp.grad(lambda x: np.sum(f(x)))(x)
    assert np.allclose(g, (1 - dense(W, b, x) ** 2) @ W.T)


def test_transform_runs_the_original_semantics():
    rng = np.random.default_rng()
    args = _mlp_args(rng)
    assert np.isclose(tp.transform(mlp_loss)(*args), mlp_loss(*args))
    xs = _signed_away_from_zero(rng, 6)
    w = _n(rng, 6)
    assert np.isclose(tp.transform(sum_positive_terms)(xs, w), sum_positive_terms(xs, w))


def test_source_is_plain_python():
    for t in (tp.grad(mlp_loss), tp.value_and_grad(rnn_loss), tp.grad(leapfrog_loss),
              tp.transform(horner), tp.grad(tp.grad(sin_times_x))):
        src = t.source
        assert isinstance(src, str) and "def " in src
        assert "import transpile" not in src and "from transpile" not in src
        compile(src, "<generated>", "exec")


def test_source_is_cached_and_deterministic():
    a, b = tp.grad(mlp_loss), tp.grad(mlp_loss)
    assert a.source is b.source
    assert tp.grad(rnn_loss).source == tp.grad(rnn_loss).source
    assert tp.grad(mlp_loss, argnums=1).source != a.source


_DETERMINISM_SCRIPT = r"""
import sys
sys.path.insert(0, {tests!r})
import test_programs as m
import transpile as tp
for f in (m.mlp_loss, m.rnn_loss, m.count_and_flag, m.leapfrog_loss, m.dict_model_loss):
    print(tp.grad(f).source)
    print("=" * 20)
"""


def test_source_is_deterministic_across_processes():
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    script = _DETERMINISM_SCRIPT.format(tests=tests_dir)
    outs = []
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=env, timeout=60, cwd=os.path.dirname(tests_dir))
        assert res.returncode == 0, res.stderr[-3000:]
        outs.append(res.stdout)
    assert outs[0] == outs[1]


# ---------------------------------------------------------------- iter() and next()

def image_grid(nrow, ncol, imagevecs, imshape):
    """JAX's VAE example draws its sample grid so: next() inside nested comprehensions."""
    images = iter(imagevecs.reshape((-1,) + imshape))
    return np.vstack([np.hstack([next(images).T for _ in range(ncol)][::-1])
                      for _ in range(nrow)]).T


def grid_loss(v):
    first = iter(v)
    a = next(first)
    b = next(first)
    return np.sum(np.sin(image_grid(2, 3, v, (3, 4)))) + np.sum(a * b)


def test_iter_and_next_under_every_transformation():
    rng = np.random.default_rng()
    x = rng.standard_normal((6, 12))
    jitted = tp.jit(image_grid, static_argnums=(0, 1, 3))
    np.testing.assert_array_equal(jitted(2, 3, x, (3, 4)), image_grid(2, 3, x, (3, 4)))
    check_grads(grid_loss, (x,), order=2, modes=("rev", "fwd"))
    xs = rng.standard_normal((3, 6, 12))
    np.testing.assert_allclose(tp.vmap(grid_loss)(xs), [grid_loss(v) for v in xs])
    np.testing.assert_allclose(tp.vmap(tp.grad(grid_loss))(xs),
                               [tp.grad(grid_loss)(v) for v in xs])


def test_an_iterator_used_otherwise_is_refused():
    def passes_iterator(x):
        it = iter(x)
        return sum(it)

    def next_with_default(x):
        it = iter(x)
        return next(it, 0.0)
    for f in (passes_iterator, next_with_default):
        with pytest.raises(tp.TransformError, match="next()|iterator"):
            tp.grad(f)(np.ones(3))


def sine_steps(x, w):
    for _ in range(6):
        x = 0.5 * x + 0.1 * np.sin(x) * w      # w broadcasts: its adjoint is summed
    return np.sum(x * x)


def _peak_memory(fn, *args):
    import tracemalloc
    tracemalloc.start()
    fn(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_values_read_only_for_their_shape_are_saved_as_stand_ins(monkeypatch):
    """The backward pass reads `0.5 * x`, `np.sin(x)` and `... * w` only to unbroadcast
    adjoints to their shapes: it keeps stand-ins of no memory for them, and saves two
    arrays per trip (x and `0.1 * np.sin(x)`, which dw reads) instead of five."""
    import runtime.adjoints
    rng = np.random.default_rng(17)
    x, w = rng.standard_normal((300, 200)), rng.standard_normal(200)
    g = tp.grad(sine_steps, argnums=(0, 1))
    source = g.source
    assert "rt.shape_only(sin)" in source and "rt.push(x_stack, x)" in source
    dx, dw = g(x, w)
    # by hand: the same loop, forward then backward
    xs = [x]
    for _ in range(6):
        xs.append(0.5 * xs[-1] + 0.1 * np.sin(xs[-1]) * w)
    gx, gw = 2 * xs[-1], np.zeros_like(w)
    for x_old in reversed(xs[:-1]):
        gw += np.sum(gx * 0.1 * np.sin(x_old), axis=0)
        gx = gx * (0.5 + 0.1 * np.cos(x_old) * w)
    np.testing.assert_allclose(dx, gx, rtol=1e-12)
    np.testing.assert_allclose(dw, gw, rtol=1e-12)
    # twelve saved arrays plus a few live temporaries, against thirty saved
    assert _peak_memory(g, x, w) < 24 * x.nbytes
    monkeypatch.setattr(runtime.adjoints, "SHAPE_ONLY_MIN_SIZE", x.size + 1)
    assert _peak_memory(g, x, w) > 30 * x.nbytes
    monkeypatch.undo()
    # composed: per-example gradients and a Hessian-vector product read the stand-ins too
    xb = rng.standard_normal((3, 40, 30))
    wb = rng.standard_normal(30)
    per_example = tp.vmap(tp.grad(sine_steps), in_axes=(0, None))(xb, wb)
    for i in range(3):
        np.testing.assert_allclose(per_example[i], tp.grad(sine_steps)(xb[i], wb),
                                   rtol=1e-12)
    v = rng.standard_normal(x.shape)
    hvp = tp.jvp(tp.grad(sine_steps), (x, w), (v, np.zeros_like(w)))[1]
    eps = 1e-6
    fd = (tp.grad(sine_steps)(x + eps * v, w) - tp.grad(sine_steps)(x - eps * v, w)) / (2 * eps)
    np.testing.assert_allclose(hvp, fd, rtol=1e-5, atol=1e-7)
