"""Programs the jit tests run (tests/test_jit.py against the plain call, tests/test_jit_cuda.py
through the CUDA kernels they generate). Each entry: name -> (function, arguments factory,
options for tp.jit)."""
import numpy as np

import transpile as tp


def slow_f(x):
    return x * x + x * 2.0


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def sine_loop(x):
    for _ in range(10):
        x = 0.5 * x + 0.1 * np.sin(x)
    return np.sum(x)


def newton_sqrt(a):
    x = a
    while np.max(np.abs(x * x - a)) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def mlp_loss(params, x, y):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    pred = x @ W + b
    return np.mean((pred - y) ** 2)


def broadcasting(x, b, s):
    h = np.maximum(x * 2.0 - b, 0.0) / (1.0 + np.exp(-b))
    return h * s + np.sqrt(np.abs(x)) - b ** 3


def transcendental(x):
    return np.tanh(x) * np.log1p(x * x) + np.expm1(-np.abs(x)) - np.cos(x) ** 2 + \
        np.arctan(x) / np.cosh(x)


def comparisons(x, y):
    big = x > y
    return np.where(big, x - y, np.minimum(x, y) * 0.5) + np.where(x <= 0.25, 1.0, -y)


def nan_edges(x, y):
    return np.maximum(x, y) + np.minimum(y, x) * 2.0


def mixed_dtypes(x32, x64, n):
    return x32 * 3 + x32 / n - x64 * x32


def reciprocal_powers(x):
    return x ** 2 + x ** 0.5 + x ** -1 + x ** 3 + np.square(x) - np.reciprocal(x + 2.0)


def normalized(x):
    return x / np.sum(x) - x * np.max(x)      # numpy scalars (0-d) as kernel inputs


def rng(seed):
    return np.random.default_rng(seed)


def _mlp_args(seed, batch=8, sizes=(10, 32, 32, 1)):
    r = rng(seed)
    params = [(r.standard_normal((m, n)) / np.sqrt(m), 0.1 * r.standard_normal(n))
              for m, n in zip(sizes[:-1], sizes[1:])]
    return params, r.standard_normal((batch, sizes[0])), r.standard_normal((batch, sizes[-1]))


def _nan_args(seed):
    r = rng(seed)
    x, y = r.standard_normal((6, 7)), r.standard_normal((6, 7))
    x[0, :3] = np.nan
    y[1, 2:5] = np.nan
    x[2, 0], y[2, 1] = np.inf, -np.inf
    return x, y


PROGRAMS = {
    "slow_f_f32": (slow_f, lambda s: (rng(s).standard_normal((40, 30)).astype(np.float32),), {}),
    "slow_f_f64": (slow_f, lambda s: (rng(s).standard_normal((5, 7, 3)),), {}),
    "selu_f32": (selu, lambda s: (rng(s).standard_normal((33, 17)).astype(np.float32),), {}),
    "selu_f64": (selu, lambda s: (rng(s).standard_normal(101),), {}),
    "grad_sine_loop": (tp.grad(sine_loop), lambda s: (rng(s).standard_normal((20, 30)),), {}),
    "newton_sqrt": (newton_sqrt, lambda s: (rng(s).random(50) + 0.5,), {}),
    "grad_mlp": (tp.grad(mlp_loss), _mlp_args, {}),
    "vmap_grad_mlp": (tp.vmap(tp.grad(mlp_loss), in_axes=(None, 0, 0)), _mlp_args, {}),
    "broadcasting": (broadcasting, lambda s: (rng(s).standard_normal((9, 4)),
                                              rng(s + 1).standard_normal(4), 0.7), {}),
    "transcendental_f32": (transcendental,
                           lambda s: (rng(s).standard_normal((16, 8)).astype(np.float32),), {}),
    "transcendental_f64": (transcendental, lambda s: (rng(s).standard_normal((16, 8)),), {}),
    "comparisons": (comparisons, lambda s: (rng(s).standard_normal((12, 5)),
                                            rng(s + 1).standard_normal((12, 5))), {}),
    "nan_edges": (nan_edges, _nan_args, {}),
    "mixed_dtypes": (mixed_dtypes, lambda s: (rng(s).standard_normal(30).astype(np.float32),
                                              rng(s + 1).standard_normal(30), 3), {}),
    "normalized_f32": (normalized, lambda s: (rng(s).random((8, 9)).astype(np.float32),), {}),
    "normalized_f64": (normalized, lambda s: (rng(s).random(40),), {}),
    "reciprocal_powers": (reciprocal_powers, lambda s: (rng(s).random((7, 6)) + 0.3,), {}),
}
