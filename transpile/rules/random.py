"""tp.random (runtime/random.py): derivative and batching rules.

A key carries no derivative, and neither do draws that only the key decides (normal,
bits, ...): they are constants of the derivative, so grad through `normal(key) * s + m`
reaches s and m by the rules of `*` and `+`. Parameters a draw is a smooth transform of get
the pathwise (reparameterization) derivative at the same key: uniform's bounds,
truncated_normal's, and the shapes of gamma, loggamma, beta and dirichlet through the
implicit derivative of the gamma draw (`rt.random.gamma_grad`). Parameters with no such
derivative here refuse when generated code reaches them, rather than give zero.

Batching: every draw takes an array of keys (shape (*K, 2)) and draws for each key at
once, so per-example keys need nothing more than the call. Parameters that differ between
examples are drawn example by example (`rt.random.lanes`).
"""
from .core import batch, batch_elementwise, batch_same, fwd, nondiff, rev
import numpy as np  # noqa: F401  (templates name it)
import runtime as rt  # noqa: F401

nondiff("rt.random.PRNGKey", "rt.random.key", "rt.random.key_data", "rt.random.wrap_key_data",
        "rt.random.split", "rt.random.fold_in", "rt.random.bits", "rt.random.normal",
        "rt.random.randint", "rt.random.bernoulli", "rt.random.categorical",
        "rt.random.exponential", "rt.random.gumbel")


@rev("rt.random.uniform")
def uniform(dout, out, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """out = minval + u (maxval - minval) for the standard draw u of the same key."""
    u = rt.random.uniform(key, shape, dtype)
    dminval = rt.unbroadcast(dout * (1.0 - u), minval)
    dmaxval = rt.unbroadcast(dout * u, maxval)


@fwd("rt.random.uniform")
def uniform_fwd(out, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    u = rt.random.uniform(key, shape, dtype)
    dout = rt.broadcast_like(dminval * (1.0 - u), out)
    dout = rt.broadcast_like(dmaxval * u, out)


@rev("rt.random.truncated_normal")
def truncated_normal(dout, out, key, lower, upper, shape=None, dtype=None):
    """out = sqrt(2) erfinv(a + u (b - a)) with a = erf(lower / sqrt(2)), b likewise: so
    d out / d lower = exp((out^2 - lower^2) / 2) (1 - u), and u for upper."""
    u = rt.random.uniform(key, np.shape(out), dtype)
    dlower = rt.unbroadcast(dout * np.exp(0.5 * (out * out - lower * lower)) * (1.0 - u), lower)
    dupper = rt.unbroadcast(dout * np.exp(0.5 * (out * out - upper * upper)) * u, upper)


@fwd("rt.random.truncated_normal")
def truncated_normal_fwd(out, key, lower, upper, shape=None, dtype=None):
    u = rt.random.uniform(key, np.shape(out), dtype)
    dout = dlower * np.exp(0.5 * (out * out - lower * lower)) * (1.0 - u)
    dout = dupper * np.exp(0.5 * (out * out - upper * upper)) * u


@rev("rt.random.gamma")
def gamma(dout, out, key, a, shape=None, dtype=None):
    """The implicit derivative of the draw at its quantile (runtime/random.py)."""
    da = rt.unbroadcast(dout * rt.random.gamma_grad(a, out), a)


@fwd("rt.random.gamma")
def gamma_fwd(out, key, a, shape=None, dtype=None):
    dout = da * rt.random.gamma_grad(a, out)


@rev("rt.random.loggamma")
def loggamma(dout, out, key, a, shape=None, dtype=None):
    g = np.exp(out)
    da = rt.unbroadcast(dout * rt.random.gamma_grad(a, g) / g, a)


@fwd("rt.random.loggamma")
def loggamma_fwd(out, key, a, shape=None, dtype=None):
    g = np.exp(out)
    dout = da * rt.random.gamma_grad(a, g) / g


@rev("rt.random.beta")
def beta(dout, out, key, a, b, shape=None, dtype=None):
    """out = Ga / (Ga + Gb): d out / d log Ga = out (1 - out) = -d out / d log Gb, and the
    log gamma draws (of the key's two halves) are drawn again for their derivatives."""
    halves = rt.random.split(key)
    log_ga = rt.random.loggamma(halves[0], a, np.shape(out), dtype)
    log_gb = rt.random.loggamma(halves[1], b, np.shape(out), dtype)
    ga = np.exp(log_ga)
    gb = np.exp(log_gb)
    spread = dout * out * (1.0 - out)
    da = rt.unbroadcast(spread * rt.random.gamma_grad(a, ga) / ga, a)
    db = rt.unbroadcast(-spread * rt.random.gamma_grad(b, gb) / gb, b)


@fwd("rt.random.beta")
def beta_fwd(out, key, a, b, shape=None, dtype=None):
    halves = rt.random.split(key)
    ga = np.exp(rt.random.loggamma(halves[0], a, np.shape(out), dtype))
    gb = np.exp(rt.random.loggamma(halves[1], b, np.shape(out), dtype))
    dout = da * rt.random.gamma_grad(a, ga) / ga * out * (1.0 - out)
    dout = -db * rt.random.gamma_grad(b, gb) / gb * out * (1.0 - out)


@rev("rt.random.dirichlet")
def dirichlet(dout, out, key, alpha, shape=None, dtype=None):
    """out = softmax(log G): d alpha_k = out_k r_k (dout_k - sum_i dout_i out_i), with
    r_k = d log G_k / d alpha_k."""
    g = np.exp(rt.random.loggamma(key, alpha, np.shape(out), dtype))
    r = rt.random.gamma_grad(alpha, g) / g
    dalpha = rt.unbroadcast(out * r * (dout - np.sum(dout * out, axis=-1, keepdims=True)),
                            alpha)


@fwd("rt.random.dirichlet")
def dirichlet_fwd(out, key, alpha, shape=None, dtype=None):
    g = np.exp(rt.random.loggamma(key, alpha, np.shape(out), dtype))
    r = rt.random.gamma_grad(alpha, g) / g
    dout = out * (dalpha * r - np.sum(out * dalpha * r, axis=-1, keepdims=True))


@rev("rt.random.multivariate_normal")
def multivariate_normal(dout, out, key, mean, cov, shape=None, dtype=None, method="cholesky"):
    dmean = rt.unbroadcast(dout, mean)
    dcov = rt.no_derivative("tp.random.multivariate_normal with respect to cov",
                            "draw z = tp.random.normal(key, shape) and use mean + L @ z "
                            "with your own factor L (np.linalg.cholesky(cov)): that is "
                            "differentiable")


@fwd("rt.random.multivariate_normal")
def multivariate_normal_fwd(out, key, mean, cov, shape=None, dtype=None, method="cholesky"):
    dout = rt.broadcast_like(dmean, out)
    dout = rt.no_derivative("tp.random.multivariate_normal with respect to cov",
                            "use mean + L @ tp.random.normal(key, shape) with your own L",
                            dcov)


@rev("rt.random.permutation")
def permutation(dout, out, key, x, axis=0, independent=False):
    dx = rt.no_derivative("tp.random.permutation with respect to the array it shuffles",
                          "shuffle indices instead: i = tp.random.permutation(key, n); "
                          "then x[i] is differentiable")


@fwd("rt.random.permutation")
def permutation_fwd(out, key, x, axis=0, independent=False):
    dout = rt.no_derivative("tp.random.permutation with respect to the array it shuffles",
                            "shuffle indices instead: i = tp.random.permutation(key, n)", dx)


@rev("rt.random.choice")
def choice(dout, out, key, a, shape=(), replace=True, p=None, axis=0):
    da = rt.no_derivative("tp.random.choice with respect to the array it draws from",
                          "draw indices instead: i = tp.random.choice(key, n, shape); then "
                          "np.take(a, i, axis) is differentiable")
    dp = rt.no_derivative("tp.random.choice with respect to p",
                          "a discrete draw has no pathwise derivative; use a score-function "
                          "or relaxed (Gumbel-softmax) estimator")


@fwd("rt.random.choice")
def choice_fwd(out, key, a, shape=(), replace=True, p=None, axis=0):
    dout = rt.no_derivative("tp.random.choice with respect to the array it draws from",
                            "draw indices instead: i = tp.random.choice(key, n, shape)", da)
    dout = rt.no_derivative("tp.random.choice with respect to p", "a discrete draw has no "
                            "pathwise derivative", dp)


# ---------------------------------------------------------------- batching

batch_same("rt.random.key_data", "rt.random.wrap_key_data")     # keys are their words


# Draws with no array parameter: a batched key is all there is to batch.
@batch("rt.random.normal")
def normal_batch(key, shape=(), dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.normal", "its shape or dtype differs between examples")
    else:
        out = rt.random.normal(key, shape, dtype)


@batch("rt.random.exponential")
def exponential_batch(key, shape=(), dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.exponential", "its shape or dtype differs between "
                              "examples")
    else:
        out = rt.random.exponential(key, shape, dtype)


@batch("rt.random.gumbel")
def gumbel_batch(key, shape=(), dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.gumbel", "its shape or dtype differs between examples")
    else:
        out = rt.random.gumbel(key, shape, dtype)


@batch("rt.random.bits")
def bits_batch(key, shape=(), dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.bits", "its shape or dtype differs between examples")
    else:
        out = rt.random.bits(key, shape, dtype)


@batch("rt.random.split")
def split_batch(key, num=2):
    if num_batched:
        out = rt.cannot_batch("tp.random.split", "the number of keys differs between examples")
    else:
        out = rt.random.split(key, num)


# Draws with array parameters: drawn at once for per-example keys, example by example where
# a parameter differs between examples.
@batch("rt.random.fold_in")
def fold_in_batch(key, data):
    if data_batched:
        out = rt.random.lanes("fold_in", batch_size, (key_batched, True), key, data)
    else:
        out = rt.random.fold_in(key, data)


@batch("rt.random.PRNGKey", "rt.random.key")
def prngkey_batch(seed):
    out = rt.random.lanes("PRNGKey", batch_size, (True,), seed)


@batch("rt.random.uniform")
def uniform_batch(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.uniform", "its shape or dtype differs between examples")
    elif minval_batched or maxval_batched:
        out = rt.random.lanes("uniform", batch_size, (key_batched, False, False, minval_batched,
                                                      maxval_batched),
                              key, shape, dtype, minval, maxval)
    else:
        out = rt.random.uniform(key, shape, dtype, minval, maxval)


@batch("rt.random.randint")
def randint_batch(key, shape, minval, maxval, dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.randint", "its shape or dtype differs between examples")
    elif minval_batched or maxval_batched:
        out = rt.random.lanes("randint", batch_size, (key_batched, False, minval_batched,
                                                      maxval_batched, False),
                              key, shape, minval, maxval, dtype)
    else:
        out = rt.random.randint(key, shape, minval, maxval, dtype)


@batch("rt.random.truncated_normal")
def truncated_normal_batch(key, lower, upper, shape=None, dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.truncated_normal", "its shape or dtype differs "
                              "between examples")
    elif lower_batched or upper_batched:
        out = rt.random.lanes("truncated_normal", batch_size, (key_batched, lower_batched,
                                                               upper_batched, False, False),
                              key, lower, upper, shape, dtype)
    else:
        out = rt.random.truncated_normal(key, lower, upper, shape, dtype)


@batch("rt.random.gamma")
def gamma_batch(key, a, shape=None, dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.gamma", "its shape or dtype differs between examples")
    elif a_batched:
        out = rt.random.lanes("gamma", batch_size, (key_batched, True, False, False), key, a,
                              shape, dtype)
    else:
        out = rt.random.gamma(key, a, shape, dtype)


@batch("rt.random.loggamma")
def loggamma_batch(key, a, shape=None, dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.loggamma", "its shape or dtype differs between "
                              "examples")
    elif a_batched:
        out = rt.random.lanes("loggamma", batch_size, (key_batched, True, False, False), key,
                              a, shape, dtype)
    else:
        out = rt.random.loggamma(key, a, shape, dtype)


@batch("rt.random.beta")
def beta_batch(key, a, b, shape=None, dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.beta", "its shape or dtype differs between examples")
    elif a_batched or b_batched:
        out = rt.random.lanes("beta", batch_size, (key_batched, a_batched, b_batched, False,
                                                   False), key, a, b, shape, dtype)
    else:
        out = rt.random.beta(key, a, b, shape, dtype)


@batch("rt.random.dirichlet")
def dirichlet_batch(key, alpha, shape=None, dtype=None):
    if shape_batched or dtype_batched:
        out = rt.cannot_batch("tp.random.dirichlet", "its shape or dtype differs between "
                              "examples")
    elif alpha_batched:
        out = rt.random.lanes("dirichlet", batch_size, (key_batched, True, False, False), key,
                              alpha, shape, dtype)
    else:
        out = rt.random.dirichlet(key, alpha, shape, dtype)


@batch("rt.random.bernoulli")
def bernoulli_batch(key, p=0.5, shape=None):
    if shape_batched:
        out = rt.cannot_batch("tp.random.bernoulli", "its shape differs between examples")
    elif p_batched:
        out = rt.random.lanes("bernoulli", batch_size, (key_batched, True, False), key, p,
                              shape)
    else:
        out = rt.random.bernoulli(key, p, shape)


@batch("rt.random.categorical")
def categorical_batch(key, logits, axis=-1, shape=None, replace=True):
    if axis_batched or shape_batched or replace_batched:
        out = rt.cannot_batch("tp.random.categorical", "its axis or shape differs between "
                              "examples")
    elif logits_batched:
        out = rt.random.lanes("categorical", batch_size, (key_batched, True, False, False,
                                                          False), key, logits, axis, shape,
                              replace)
    else:
        out = rt.random.categorical(key, logits, axis, shape, replace)


@batch("rt.random.permutation")
def permutation_batch(key, x, axis=0, independent=False):
    if axis_batched or independent_batched:
        out = rt.cannot_batch("tp.random.permutation", "its axis differs between examples")
    else:
        out = rt.random.lanes("permutation", batch_size, (key_batched, x_batched, False,
                                                          False), key, x, axis, independent)


@batch("rt.random.choice")
def choice_batch(key, a, shape=(), replace=True, p=None, axis=0):
    if shape_batched or replace_batched or axis_batched:
        out = rt.cannot_batch("tp.random.choice", "its shape or axis differs between examples")
    else:
        out = rt.random.lanes("choice", batch_size, (key_batched, a_batched, False, False,
                                                     p_batched, False),
                              key, a, shape, replace, p, axis)


@batch("rt.random.multivariate_normal")
def multivariate_normal_batch(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    if shape_batched or dtype_batched or method_batched:
        out = rt.cannot_batch("tp.random.multivariate_normal", "its shape differs between "
                              "examples")
    elif mean_batched or cov_batched:
        out = rt.random.lanes("multivariate_normal", batch_size, (key_batched, mean_batched,
                                                                  cov_batched, False, False,
                                                                  False),
                              key, mean, cov, shape, dtype, method)
    else:
        out = rt.random.multivariate_normal(key, mean, cov, shape, dtype, method)


# Derivatives the rules above would need next refuse (a zero would be wrong): a second
# derivative through a gamma draw, and grad of a vmap of a draw whose parameters differ
# between examples (rt.random.lanes).
@rev("rt.random.gamma_grad")
def gamma_grad(dout, out, a, x):
    da = rt.no_derivative("a second derivative through tp.random.gamma (beta, dirichlet)",
                          "take first derivatives of gamma draws only")
    dx = rt.no_derivative("a second derivative through tp.random.gamma (beta, dirichlet)",
                          "take first derivatives of gamma draws only")


@fwd("rt.random.gamma_grad")
def gamma_grad_fwd(out, a, x):
    dout = rt.no_derivative("a second derivative through tp.random.gamma", "take first "
                            "derivatives of gamma draws only", da)
    dout = rt.no_derivative("a second derivative through tp.random.gamma", "take first "
                            "derivatives of gamma draws only", dx)


@rev("rt.random.lanes")
def lanes(dout, out, name, n, flags, a=None, b=None, c=None, d=None, e=None, f=None):
    db = rt.no_derivative("grad of a vmap of tp.random." + name + " whose parameters differ "
                          "between examples", "put vmap outside: tp.vmap(tp.grad(f))")
    dc = rt.no_derivative("grad of a vmap of tp.random." + name + " whose parameters differ "
                          "between examples", "put vmap outside: tp.vmap(tp.grad(f))")
    dd = rt.no_derivative("grad of a vmap of tp.random." + name + " whose parameters differ "
                          "between examples", "put vmap outside: tp.vmap(tp.grad(f))")
    de = rt.no_derivative("grad of a vmap of tp.random." + name + " whose parameters differ "
                          "between examples", "put vmap outside: tp.vmap(tp.grad(f))")


@fwd("rt.random.lanes")
def lanes_fwd(out, name, n, flags, a=None, b=None, c=None, d=None, e=None, f=None):
    dout = rt.no_derivative("jvp of a vmap of tp.random." + name + " whose parameters differ "
                            "between examples", "put vmap outside: tp.vmap(tp.jvp(...))", db)
    dout = rt.no_derivative("jvp of a vmap of tp.random." + name + " whose parameters differ "
                            "between examples", "put vmap outside: tp.vmap(tp.jvp(...))", dc)
    dout = rt.no_derivative("jvp of a vmap of tp.random." + name + " whose parameters differ "
                            "between examples", "put vmap outside: tp.vmap(tp.jvp(...))", dd)
    dout = rt.no_derivative("jvp of a vmap of tp.random." + name + " whose parameters differ "
                            "between examples", "put vmap outside: tp.vmap(tp.jvp(...))", de)


batch_elementwise("rt.random.gamma_grad")


@batch("rt.random.lanes")
def lanes_batch(name, n, flags, a=None, b=None, c=None, d=None, e=None, f=None):
    out = rt.cannot_batch("tp.random." + name, "vmap of vmap of a draw whose parameters differ "
                          "between examples is not supported yet")
