"""entmax-1.5 with a closed-form backward pass, as a `tp.custom_vjp`.

    python examples/entmax.py

entmax-1.5 (Peters, Niculae and Martins, "Sparse Sequence-to-Sequence Models", ACL 2019)
maps scores z to a probability vector that, unlike softmax, can have exact zeros:

    entmax15(z) = argmax_{p in simplex} <p, z> + H_1.5(p)
                = [z / 2 - tau]_+ ^ 2,   tau chosen so that the result sums to 1.

(The general alpha-entmax is [(alpha - 1) z - tau]_+ ^ (1 / (alpha - 1)); alpha = 1.5.)

Forward: tau lies in [max(z)/2 - 1, max(z)/2] (at the left end the largest entry alone
already has mass 1; at the right end the mass is 0), and the mass sum([z/2 - tau]_+^2)
decreases in tau, so bisection finds it. 60 halvings of an interval of length 1 reach the
spacing of float64 numbers.

Backward, from the implicit function theorem. On the support S = {i : p_i > 0} write
s_i = sqrt(p_i) = z_i/2 - tau (s_i = 0 off the support). Then

    dp_i = 2 s_i (dz_i / 2 - dtau) = s_i dz_i - 2 s_i dtau,
    sum_i dp_i = 0   =>   2 dtau = sum_i s_i dz_i / sum_i s_i,

so the Jacobian is J = diag(s) - s s^T / sum(s). It is symmetric, and the vector-Jacobian
product of a cotangent g is

    dz = s * g - s * (sum(s * g) / sum(s)).

Bisection is not differentiated: the custom_vjp tells every transformation to use this
formula instead. Everything works on the last axis, so a batch of score rows (attention)
works as is. `main()` prints an example, checks the gradient against finite differences
and differentiates a small attention-like model that uses entmax15 inside.
"""
import numpy as np

import transpile as tp

BISECTION_STEPS = 60


def entmax15_bisect(z):
    """entmax-1.5 along the last axis by bisection on the threshold tau."""
    z = z / 2.0
    hi = np.max(z, axis=-1, keepdims=True)       # mass 0 at tau = max(z)/2
    lo = hi - 1.0                                # mass >= 1 at tau = max(z)/2 - 1
    for _ in range(BISECTION_STEPS):
        tau = (lo + hi) / 2.0
        mass = np.sum(np.maximum(z - tau, 0.0) ** 2, axis=-1, keepdims=True)
        too_much = mass >= 1.0                   # tau is too small: move lo up
        lo = np.where(too_much, tau, lo)
        hi = np.where(too_much, hi, tau)
    p = np.maximum(z - (lo + hi) / 2.0, 0.0) ** 2
    return p / np.sum(p, axis=-1, keepdims=True)


@tp.custom_vjp
def entmax15(z):
    """entmax-1.5 along the last axis; its derivative is the closed form below."""
    return entmax15_bisect(z)


def entmax15_fwd(z):
    p = entmax15(z)          # inside a transformation this call uses the rule again, so
    return p, (p,)           # grad of grad differentiates the backward pass correctly


def entmax15_bwd(saved, g):
    p, = saved
    support = p > 0.0
    # sqrt(p) on the support, 0 elsewhere; the inner where keeps sqrt away from 0, so that
    # differentiating this rule again (second order) never multiplies 0 by infinity
    s = np.where(support, np.sqrt(np.where(support, p, 1.0)), 0.0)
    dz = s * g - s * (np.sum(s * g, axis=-1, keepdims=True) /
                      np.sum(s, axis=-1, keepdims=True))
    return (dz,)


entmax15.defvjp(entmax15_fwd, entmax15_bwd)


# ---------------------------------------------------------------- a model using it
def sparse_attention(q, K, V):
    """Attention with entmax-1.5 weights: each query attends to a sparse set of keys."""
    scores = q @ K.T / np.sqrt(q.shape[-1])
    weights = entmax15(scores)
    return weights @ V


def attention_loss(q, K, V, target):
    out = sparse_attention(q, K, V)
    return np.mean((out - target) ** 2)


def numerical_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        g[idx] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def main():
    np.set_printoptions(precision=4, suppress=True)
    z = np.array([1.8, 1.2, 0.3, -0.5, 1.5])
    p = entmax15(z)
    e = np.exp(z - z.max())
    print("scores            ", z)
    print("softmax           ", e / e.sum())
    print("entmax15          ", p, " sum =", p.sum())

    g = np.array([1.0, -2.0, 0.5, 3.0, 0.0])

    def weighted(z):
        return np.sum(entmax15(z) * g)

    dz = tp.grad(weighted)(z)
    fd = numerical_grad(lambda z: np.sum(entmax15_bisect(z) * g), z)
    print("grad of <entmax15(z), g>", dz)
    print("finite differences      ", fd, " max error", np.max(np.abs(dz - fd)))

    rng = np.random.default_rng(0)
    q, K, V = rng.standard_normal((3, 4)), rng.standard_normal((6, 4)), rng.standard_normal((6, 2))
    target = rng.standard_normal((3, 2))
    dq = tp.grad(attention_loss)(q, K, V, target)
    fd_q = numerical_grad(lambda q: attention_loss(q, K, V, target), q)
    weights = entmax15(q @ K.T / 2.0)
    print("attention weights (zeros are exact):")
    print(weights)
    print("d loss / d q, max error against finite differences:",
          np.max(np.abs(dq - fd_q)))
    print()
    print(tp.grad(weighted).source)


if __name__ == "__main__":
    main()
