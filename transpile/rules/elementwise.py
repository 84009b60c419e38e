"""Elementwise functions and arithmetic operators: reverse, forward and batching rules,
one block per primitive.

Binary reverse rules unbroadcast each adjoint back to its argument's shape; forward rules
(one term per argument) broadcast a tangent to the result's shape where a term would not
already have it (`rt.broadcast_like`). Elementwise functions batch by broadcasting
(`batch_elementwise`): once a batched operand's per-example axes are aligned with the
other operands' (rt.align), the same call computes every example at once.
"""
from .core import (batch, batch_elementwise, batch_lanes, batch_same, fold, fwd, nondiff, number,
                   power_node, rev, zero_flow)
import numpy as np  # noqa: F401  (templates refer to np and rt)
import runtime as rt  # noqa: F401

# ---------------------------------------------------------------- arithmetic operators

@rev("+", "np.add")
def add(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout, x1)
    dx2 = rt.unbroadcast(dout, x2)


@fwd("+", "np.add")
def add_fwd(out, x1, x2):
    dout = rt.broadcast_like(dx1, out)
    dout = rt.broadcast_like(dx2, out)


batch_elementwise("+", "np.add")
zero_flow("linear", "+", "np.add")


@rev("-", "np.subtract")
def subtract(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout, x1)
    dx2 = rt.unbroadcast(-dout, x2)


@fwd("-", "np.subtract")
def subtract_fwd(out, x1, x2):
    dout = rt.broadcast_like(dx1, out)
    dout = rt.broadcast_like(-dx2, out)


batch_elementwise("-", "np.subtract")
zero_flow("linear", "-", "np.subtract")


@rev("*", "np.multiply")
def multiply(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout * x2, x1)
    dx2 = rt.unbroadcast(dout * x1, x2)


@fwd("*", "np.multiply")
def multiply_fwd(out, x1, x2):
    dout = dx1 * x2
    dout = x1 * dx2


batch_elementwise("*", "np.multiply")
zero_flow("scale", "*", "np.multiply")


@rev("/", "np.divide", "np.true_divide")
def divide(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout / x2, x1)
    dx2 = rt.unbroadcast(-dout * out / x2, x2)


@fwd("/", "np.divide", "np.true_divide")
def divide_fwd(out, x1, x2):
    dout = dx1 / x2
    dout = -dx2 * out / x2


batch_elementwise("/", "np.divide", "np.true_divide")
zero_flow("scale", "/", "np.divide", "np.true_divide")


@rev("**", "np.power", "pow")
def power(dout, out, x1, x2):
    """d/dx1 = x2 * x1 ** (x2 - 1), 0 where x2 == 0 (x ** 0 is constant, also at x = 0; as in
    JAX). d/dx2 = out * log(x1), where the log exists (x1 > 0, or x1 != 0 if complex)."""
    dx1 = rt.unbroadcast(dout * x2 * rt.pow_minus_one(x1, x2), x1)
    dx2 = rt.unbroadcast(dout * out * np.log(np.where(rt.has_log(x1), x1, 1.0)), x2)


@fwd("**", "np.power", "pow")
def power_fwd(out, x1, x2):
    dout = dx1 * x2 * rt.pow_minus_one(x1, x2)
    dout = dx2 * out * np.log(np.where(rt.has_log(x1), x1, 1.0))


batch_elementwise("**", "np.power", "pow")


# float_power is ** computed in float64 (or complex128): the same derivatives; math.pow
# too, on one number.
@rev("np.float_power", "math.pow")
def float_power(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout * x2 * rt.pow_minus_one(x1, x2), x1)
    dx2 = rt.unbroadcast(dout * out * np.log(np.where(rt.has_log(x1), x1, 1.0)), x2)


@fwd("np.float_power", "math.pow")
def float_power_fwd(out, x1, x2):
    dout = dx1 * x2 * rt.pow_minus_one(x1, x2)
    dout = dx2 * out * np.log(np.where(rt.has_log(x1), x1, 1.0))


batch_elementwise("np.float_power")
batch_elementwise("math.pow", vectorized="np.float_power")


@rev("rt.pow_minus_one")
def pow_minus_one(dout, out, x1, x2):
    """out = x1 ** (x2 - 1), and 0 where x2 == 0 (there it is a constant)."""
    dx1 = rt.unbroadcast(dout * np.where(x2 == 0, 0.0, (x2 - 1) * rt.pow_minus_one(x1, x2 - 1)),
                         x1)
    dx2 = rt.unbroadcast(dout * out * np.log(np.where(rt.has_log(x1), x1, 1.0)), x2)


@fwd("rt.pow_minus_one")
def pow_minus_one_fwd(out, x1, x2):
    dout = dx1 * np.where(x2 == 0, 0.0, (x2 - 1) * rt.pow_minus_one(x1, x2 - 1))
    dout = dx2 * out * np.log(np.where(rt.has_log(x1), x1, 1.0))


@fold("rt.pow_minus_one")
def pow_minus_one_fold(x1, x2):
    """With a literal exponent c >= 1, x1 ** (c - 1) is finite at x1 = 0: generated code keeps
    the plain power, so `x ** 2` differentiates to `2 * x`."""
    c = number(x2)
    return power_node(x1, c - 1) if c is not None and c >= 1 else None


batch_elementwise("rt.pow_minus_one")


nondiff("rt.has_log")
batch_elementwise("rt.has_log")


# numpy's mod follows floor division (x1 % x2 == x1 - floor(x1 / x2) * x2); np.fmod follows
# truncation. Both are piecewise linear in x1 and x2; the integer quotient, read back from
# the result, is exact even where x1 / x2 rounds across an integer (1.0 % 0.1).
@rev("%", "np.mod", "np.remainder")
def mod(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout, x1)
    dx2 = rt.unbroadcast(-dout * np.floor_divide(x1, x2), x2)


@fwd("%", "np.mod", "np.remainder")
def mod_fwd(out, x1, x2):
    dout = rt.broadcast_like(dx1, out)
    dout = -dx2 * np.floor_divide(x1, x2)


batch_elementwise("%", "np.mod", "np.remainder")


@rev("np.fmod")
def fmod(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout, x1)
    dx2 = rt.unbroadcast(-dout * np.round((x1 - out) / x2), x2)


@fwd("np.fmod")
def fmod_fwd(out, x1, x2):
    dout = rt.broadcast_like(dx1, out)
    dout = -dx2 * np.round((x1 - out) / x2)


batch_elementwise("np.fmod")


@rev("np.heaviside")
def heaviside(dout, out, x1, x2):
    """0 where x1 < 0, 1 where x1 > 0, and x2 where x1 == 0: only that case depends on x2."""
    dx2 = rt.unbroadcast(np.where(x1 == 0, dout, 0.0), x2)


@fwd("np.heaviside")
def heaviside_fwd(out, x1, x2):
    dout = rt.broadcast_like(np.where(x1 == 0, dx2, 0.0), out)


batch_elementwise("np.heaviside")


@rev("np.copysign")
def copysign(dout, out, x1, x2):
    """|x1| with the sign of x2: the slope in x1 is sign(x1) sign(out) (0 at x1 = 0, as for
    np.abs); x2 only picks the sign (a zero derivative wherever one exists, as in JAX)."""
    dx1 = rt.unbroadcast(dout * np.sign(x1) * np.sign(out), x1)


@fwd("np.copysign")
def copysign_fwd(out, x1, x2):
    dout = dx1 * np.sign(x1) * np.sign(out)


batch_elementwise("np.copysign")


@rev("np.nextafter")
def nextafter(dout, out, x1, x2):
    """The float next to x1 towards x2: x1 moved by at most one unit in the last place, so
    the slope in x1 is 1 (as a finite difference sees it); x2 only picks the direction."""
    dx1 = rt.unbroadcast(dout * np.ones_like(out), x1)


@fwd("np.nextafter")
def nextafter_fwd(out, x1, x2):
    dout = dx1 * np.ones_like(out)


batch_elementwise("np.nextafter")


@rev("u-", "np.negative")
def negative(dout, out, x):
    dx = -dout


@fwd("u-", "np.negative")
def negative_fwd(out, x):
    dout = -dx


batch_elementwise("u-", "np.negative")
zero_flow("linear", "u-", "np.negative")


@rev("u+", "np.positive")
def positive(dout, out, x):
    dx = dout


@fwd("u+", "np.positive")
def positive_fwd(out, x):
    dout = dx


batch_elementwise("u+", "np.positive")
zero_flow("linear", "u+", "np.positive")


# Piecewise constant (zero derivative wherever one exists), boolean or integer results.
nondiff("//", "np.floor_divide", "np.floor", "np.ceil",
        "np.round", "np.rint", "np.trunc", "np.fix", "np.sign", "not", "~",
        "<", "<=", ">", ">=", "==", "!=", "is", "is not", "in", "not in",
        "np.less", "np.less_equal", "np.greater", "np.greater_equal", "np.equal",
        "np.not_equal", "np.logical_and", "np.logical_or", "np.logical_not", "np.logical_xor",
        "np.isnan", "np.isinf", "np.isfinite", "np.signbit", "math.floor", "math.ceil",
        "np.zeros_like", "np.ones_like", "np.empty_like", "np.around", "np.isreal",
        "np.iscomplex", "np.isneginf", "np.isposinf",
        "np.bitwise_and", "np.bitwise_or", "np.bitwise_xor", "np.invert",
        "np.left_shift", "np.right_shift", "np.gcd", "np.lcm", "math.trunc", "math.isnan",
        "math.isinf", "math.isfinite", "round", "np.spacing", "np.bitwise_count",
        "rt.frexp_exponent")


# `k in d`: a key test on a dict (or string) of batched values is the same for every
# example; membership among batched values is refused (rt.lane_contains).
@batch("in", out_batched=False)
def contains_batch(x, y):
    out = rt.lane_contains(x, y)


@batch("not in", out_batched=False)
def not_contains_batch(x, y):
    out = rt.lane_contains(x, y, True)


batch_elementwise("//", "~", "<", "<=", ">", ">=", "==", "!=", "np.floor_divide", "np.floor",
                  "np.ceil", "np.round", "np.around", "np.rint", "np.trunc", "np.fix", "np.sign",
                  "np.less", "np.less_equal", "np.greater", "np.greater_equal", "np.equal",
                  "np.not_equal", "np.logical_and", "np.logical_or", "np.logical_not",
                  "np.logical_xor", "np.isnan", "np.isinf", "np.isfinite", "np.signbit",
                  "np.isreal", "np.iscomplex", "np.isneginf", "np.isposinf", "np.bitwise_and",
                  "np.bitwise_or", "np.bitwise_xor", "np.invert", "np.left_shift",
                  "np.right_shift", "np.gcd", "np.lcm", "np.spacing", "np.bitwise_count",
                  "rt.frexp_exponent")
batch_same("np.zeros_like", "np.ones_like", "np.empty_like")
batch_elementwise("round", vectorized="np.round")
batch_elementwise("not", vectorized="np.logical_not")
batch_same("is", "is not", out_batched=False)

# Random numbers. Each call advances the global random state, so calls are kept even when
# their result is unused (side_effect). Draws with no continuous parameter, and discrete
# ones (a count changes by jumps), carry no derivative.
nondiff("np.random.randn", "np.random.rand", "np.random.standard_normal", "np.random.random",
        "np.random.random_sample", "np.random.randint", "np.random.binomial",
        "np.random.poisson", "np.random.seed", side_effect=True)


# A generator made in the code (`rng = np.random.default_rng(seed)`): an object whose draws
# the front end reads as any generator's (calls.generator_draw). Under vmap each example
# has a generator of its own, made from its seed, as a loop over examples makes one per
# call (rt.LaneGenerators; rt.draw then draws from each).
nondiff("np.random.default_rng", side_effect=True)


@batch("np.random.default_rng")
def default_rng_batch(seed=None):
    out = rt.lane_generators(batch_size, seed, seed_batched)


@batch("np.random.randint")
def randint_batch(low, high=None, size=None, dtype=None):
    if size_batched:
        out = rt.cannot_batch("np.random.randint", "its size differs between examples")
    else:
        out = rt.lane_random("randint", batch_size, size, low, high, low_batched,
                             high_batched, dtype)


@batch("np.random.binomial")
def binomial_batch(n, p, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.binomial", "its size differs between examples")
    else:
        out = rt.lane_random("binomial", batch_size, size, n, p, n_batched, p_batched)


@batch("np.random.poisson")
def poisson_batch(lam=1.0, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.poisson", "its size differs between examples")
    else:
        out = rt.lane_random("poisson", batch_size, size, lam, None, lam_batched)


@batch("np.random.randn", "np.random.rand")
def randn_batch(d0=None, d1=None, d2=None, d3=None, d4=None, d5=None):
    out = rt.cannot_batch("np.random.randn/rand", "each example needs its own draw, which "
                          "draws without parameters do not batch yet: draw outside vmap and "
                          "pass the numbers in, draw from a Generator (rng.standard_normal), "
                          "or use tp.random with a key per example")


@batch("np.random.standard_normal", "np.random.random", "np.random.random_sample")
def standard_normal_batch(size=None):
    out = rt.cannot_batch("np.random.standard_normal/random", "each example needs its own "
                          "draw, which draws without parameters do not batch yet: draw "
                          "outside vmap and pass the numbers in, draw from a Generator "
                          "(rng.standard_normal), or use tp.random with a key per example")


@batch("np.random.seed", out_batched=False)
def seed_batch(seed=None):
    if seed_batched:
        out = rt.cannot_batch("np.random.seed", "the random state is shared by all "
                              "examples, so it cannot be seeded per example")
    else:
        # every example restarts from this seed, as in a loop: later draws are made from
        # each example's own copy of the state (rt.lane_random_seed)
        out = rt.lane_random_seed(seed, batch_size)

# The others are differentiated along the draw (the pathwise, or reparameterization,
# derivative): with the same random state, normal(loc, scale) is loc + scale * z, and the
# standard draw z is read back from the result. Parameters whose draw is no such transform
# (a gamma's shape, a beta's parameters, a t's df, a covariance, the population that choice
# and permutation draw from) refuse.

@rev("np.random.normal", side_effect=True)
def normal(dout, out, loc=0.0, scale=1.0, size=None):
    dloc = rt.unbroadcast(dout, loc)
    dscale = rt.unbroadcast(dout * (out - loc) / scale, scale)


@fwd("np.random.normal")
def normal_fwd(out, loc=0.0, scale=1.0, size=None):
    dout = rt.broadcast_like(dloc, out)
    dout = dscale * (out - loc) / scale


# Random numbers under vmap: parameters that differ between examples become leading axes of
# the draw (one call draws every example's numbers, in the order a loop over examples
# would). A size or shape that differs between examples cannot be batched.
@batch("np.random.normal")
def normal_batch(loc=0.0, scale=1.0, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.normal", "its size differs between examples")
    else:
        out = rt.lane_random("normal", batch_size, size, loc, scale, loc_batched,
                             scale_batched)


@rev("np.random.laplace", side_effect=True)
def laplace(dout, out, loc=0.0, scale=1.0, size=None):
    dloc = rt.unbroadcast(dout, loc)
    dscale = rt.unbroadcast(dout * (out - loc) / scale, scale)


@fwd("np.random.laplace")
def laplace_fwd(out, loc=0.0, scale=1.0, size=None):
    dout = rt.broadcast_like(dloc, out)
    dout = dscale * (out - loc) / scale


@batch("np.random.laplace")
def laplace_batch(loc=0.0, scale=1.0, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.laplace", "its size differs between examples")
    else:
        out = rt.lane_random("laplace", batch_size, size, loc, scale, loc_batched,
                             scale_batched)


@rev("np.random.logistic", side_effect=True)
def logistic(dout, out, loc=0.0, scale=1.0, size=None):
    dloc = rt.unbroadcast(dout, loc)
    dscale = rt.unbroadcast(dout * (out - loc) / scale, scale)


@fwd("np.random.logistic")
def logistic_fwd(out, loc=0.0, scale=1.0, size=None):
    dout = rt.broadcast_like(dloc, out)
    dout = dscale * (out - loc) / scale


@batch("np.random.logistic")
def logistic_batch(loc=0.0, scale=1.0, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.logistic", "its size differs between examples")
    else:
        out = rt.lane_random("logistic", batch_size, size, loc, scale, loc_batched,
                             scale_batched)


@rev("np.random.uniform", side_effect=True)
def uniform(dout, out, low=0.0, high=1.0, size=None):
    """out = low + (high - low) * u."""
    dlow = rt.unbroadcast(dout * (high - out) / (high - low), low)
    dhigh = rt.unbroadcast(dout * (out - low) / (high - low), high)


@fwd("np.random.uniform")
def uniform_fwd(out, low=0.0, high=1.0, size=None):
    dout = dlow * (high - out) / (high - low)
    dout = dhigh * (out - low) / (high - low)


@batch("np.random.uniform")
def uniform_batch(low=0.0, high=1.0, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.uniform", "its size differs between examples")
    else:
        out = rt.lane_random("uniform", batch_size, size, low, high, low_batched,
                             high_batched)


@rev("np.random.lognormal", side_effect=True)
def lognormal(dout, out, mean=0.0, sigma=1.0, size=None):
    """out = exp(mean + sigma * z)."""
    dmean = rt.unbroadcast(dout * out, mean)
    dsigma = rt.unbroadcast(dout * out * (np.log(out) - mean) / sigma, sigma)


@fwd("np.random.lognormal")
def lognormal_fwd(out, mean=0.0, sigma=1.0, size=None):
    dout = dmean * out
    dout = dsigma * out * (np.log(out) - mean) / sigma


@batch("np.random.lognormal")
def lognormal_batch(mean=0.0, sigma=1.0, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.lognormal", "its size differs between examples")
    else:
        out = rt.lane_random("lognormal", batch_size, size, mean, sigma, mean_batched,
                             sigma_batched)


@rev("np.random.exponential", side_effect=True)
def exponential(dout, out, scale=1.0, size=None):
    dscale = rt.unbroadcast(dout * out / scale, scale)


@fwd("np.random.exponential")
def exponential_fwd(out, scale=1.0, size=None):
    dout = dscale * out / scale


@batch("np.random.exponential")
def exponential_batch(scale=1.0, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.exponential", "its size differs between examples")
    else:
        out = rt.lane_random("exponential", batch_size, size, scale, None, scale_batched)


@rev("np.random.gamma", side_effect=True)
def gamma(dout, out, shape, scale=1.0, size=None):
    dshape = rt.no_derivative("np.random.gamma with respect to its shape",
                              "its draws are no smooth transform of the shape; stop the "
                              "gradient, or write the sampler yourself.")
    dscale = rt.unbroadcast(dout * out / scale, scale)


@fwd("np.random.gamma")
def gamma_fwd(out, shape, scale=1.0, size=None):
    dout = rt.no_derivative("np.random.gamma with respect to its shape",
                            "its draws are no smooth transform of the shape; stop the "
                            "gradient, or write the sampler yourself.", dshape)
    dout = dscale * out / scale


@batch("np.random.gamma")
def gamma_batch(shape, scale=1.0, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.gamma", "its size differs between examples")
    else:
        out = rt.lane_random("gamma", batch_size, size, shape, scale, shape_batched,
                             scale_batched)


@rev("np.random.beta", side_effect=True)
def beta(dout, out, a, b, size=None):
    da = rt.no_derivative("np.random.beta", "its draws are no smooth transform of a and b.")
    db = rt.no_derivative("np.random.beta", "its draws are no smooth transform of a and b.")


@fwd("np.random.beta")
def beta_fwd(out, a, b, size=None):
    dout = rt.no_derivative("np.random.beta", "its draws are no smooth transform of a and b.",
                            da)
    dout = rt.no_derivative("np.random.beta", "its draws are no smooth transform of a and b.",
                            db)


@batch("np.random.beta")
def beta_batch(a, b, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.beta", "its size differs between examples")
    else:
        out = rt.lane_random("beta", batch_size, size, a, b, a_batched, b_batched)


@rev("np.random.standard_t", side_effect=True)
def standard_t(dout, out, df, size=None):
    ddf = rt.no_derivative("np.random.standard_t", "its draws are no smooth transform of df.")


@fwd("np.random.standard_t")
def standard_t_fwd(out, df, size=None):
    dout = rt.no_derivative("np.random.standard_t", "its draws are no smooth transform of df.",
                            ddf)


@batch("np.random.standard_t")
def standard_t_batch(df, size=None):
    if size_batched:
        out = rt.cannot_batch("np.random.standard_t", "its size differs between examples")
    else:
        out = rt.lane_random("standard_t", batch_size, size, df, None, df_batched)


@rev("np.random.multivariate_normal", side_effect=True)
def multivariate_normal(dout, out, mean, cov, size=None, check_valid="warn", tol=1e-8):
    """out = mean + A z, where numpy picks A from cov by a decomposition of its own."""
    dmean = rt.unbroadcast(dout, mean)
    dcov = rt.no_derivative("np.random.multivariate_normal with respect to its covariance",
                            "draw z = np.random.standard_normal(...) and return "
                            "mean + z @ np.linalg.cholesky(cov).T instead.")


@fwd("np.random.multivariate_normal")
def multivariate_normal_fwd(out, mean, cov, size=None, check_valid="warn", tol=1e-8):
    dout = rt.broadcast_like(dmean, out)
    dout = rt.no_derivative("np.random.multivariate_normal with respect to its covariance",
                            "draw z = np.random.standard_normal(...) and return "
                            "mean + z @ np.linalg.cholesky(cov).T instead.", dcov)


@batch("np.random.multivariate_normal")
def multivariate_normal_batch(mean, cov, size=None, check_valid="warn", tol=1e-8):
    if size_batched:
        out = rt.cannot_batch("np.random.multivariate_normal", "its size differs between "
                              "examples")
    else:
        out = rt.lane_multivariate_normal(mean, cov, size, mean_batched, cov_batched,
                                          batch_size)


@rev("np.random.choice", side_effect=True)
def choice(dout, out, a, size=None, replace=True, p=None):
    """The probabilities `p` pick among values (a discrete choice): no derivative."""
    da = rt.no_derivative("np.random.choice of differentiated values",
                          "draw indices, i = np.random.choice(len(a), size), and index: "
                          "a[i].")


@fwd("np.random.choice")
def choice_fwd(out, a, size=None, replace=True, p=None):
    dout = rt.no_derivative("np.random.choice of differentiated values",
                            "draw indices, i = np.random.choice(len(a), size), and index: "
                            "a[i].", da)


@batch("np.random.choice")
def choice_batch(a, size=None, replace=True, p=None):
    if size_batched:
        out = rt.cannot_batch("np.random.choice", "its size differs between examples")
    else:
        out = rt.lane_choice(a, size, replace, p, a_batched, p_batched, batch_size)


@rev("np.random.permutation", "np.random.shuffle", side_effect=True)
def permutation(dout, out, x):
    dx = rt.no_derivative("np.random.permutation/shuffle of differentiated values",
                          "draw indices, i = np.random.permutation(len(x)), and index: x[i].")


@fwd("np.random.permutation", "np.random.shuffle")
def permutation_fwd(out, x):
    dout = rt.no_derivative("np.random.permutation/shuffle of differentiated values",
                            "draw indices, i = np.random.permutation(len(x)), and index: "
                            "x[i].", dx)


@batch("np.random.permutation")
def permutation_batch(x):
    out = rt.lane_permutation(x)


@batch("np.random.shuffle")
def shuffle_batch(x):
    out = rt.lane_shuffle(x)


# The batching helpers above draw random numbers too (vmap of vmap).

nondiff("rt.lane_random", "rt.lane_choice", "rt.lane_permutation", "rt.lane_shuffle",
        "rt.lane_multivariate_normal", "rt.lane_random_seed", side_effect=True)


@batch("rt.lane_random_seed", out_batched=False)
def lane_random_seed_batch(seed, n):
    out = rt.cannot_batch("np.random.seed", "a vmap of a vmap of a function that seeds "
                          "numpy's global state is not supported")


@batch("rt.lane_choice", "rt.lane_permutation", "rt.lane_shuffle",
       "rt.lane_multivariate_normal")
def lane_random_nested_batch(a=None, b=None, c=None, d=None, e=None, f=None, g=None):
    out = rt.cannot_batch("np.random.choice/permutation/shuffle/multivariate_normal",
                          "vmap of vmap of these is not supported")
batch_lanes("rt.lane_random", ("a", "b"))


nondiff("rt.lane_contains")
batch_same("rt.lane_contains", out_batched=False)

# ---------------------------------------------------------------- exponentials and logs

@rev("np.exp", "math.exp")
def exp(dout, out, x):
    dx = dout * out


@fwd("np.exp", "math.exp")
def exp_fwd(out, x):
    dout = dx * out


batch_elementwise("np.exp")


@rev("np.exp2")
def exp2(dout, out, x):
    dx = dout * out * 0.6931471805599453


@fwd("np.exp2")
def exp2_fwd(out, x):
    dout = dx * out * 0.6931471805599453


batch_elementwise("np.exp2")


@rev("np.expm1", "math.expm1")
def expm1(dout, out, x):
    dx = dout * (out + 1.0)


@fwd("np.expm1", "math.expm1")
def expm1_fwd(out, x):
    dout = dx * (out + 1.0)


batch_elementwise("np.expm1")


@rev("np.log", "math.log")
def log(dout, out, x):
    dx = dout / x


@fwd("np.log", "math.log")
def log_fwd(out, x):
    dout = dx / x


batch_elementwise("np.log")
zero_flow("nonvanishing", "np.log", "math.log")


@rev("np.log2", "math.log2")
def log2(dout, out, x):
    dx = dout / (x * 0.6931471805599453)


@fwd("np.log2", "math.log2")
def log2_fwd(out, x):
    dout = dx / (x * 0.6931471805599453)


batch_elementwise("np.log2")
zero_flow("nonvanishing", "np.log2", "math.log2")


@rev("np.log10", "math.log10")
def log10(dout, out, x):
    dx = dout / (x * 2.302585092994046)


@fwd("np.log10", "math.log10")
def log10_fwd(out, x):
    dout = dx / (x * 2.302585092994046)


batch_elementwise("np.log10")
zero_flow("nonvanishing", "np.log10", "math.log10")


@rev("np.log1p", "math.log1p")
def log1p(dout, out, x):
    dx = dout / (1.0 + x)


@fwd("np.log1p", "math.log1p")
def log1p_fwd(out, x):
    dout = dx / (1.0 + x)


batch_elementwise("np.log1p")
zero_flow("nonvanishing", "np.log1p", "math.log1p")


@rev("np.logaddexp")
def logaddexp(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout * np.exp(x1 - out), x1)
    dx2 = rt.unbroadcast(dout * np.exp(x2 - out), x2)


@fwd("np.logaddexp")
def logaddexp_fwd(out, x1, x2):
    dout = dx1 * np.exp(x1 - out)
    dout = dx2 * np.exp(x2 - out)


batch_elementwise("np.logaddexp")


@rev("np.logaddexp2")
def logaddexp2(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout * np.exp2(x1 - out), x1)
    dx2 = rt.unbroadcast(dout * np.exp2(x2 - out), x2)


@fwd("np.logaddexp2")
def logaddexp2_fwd(out, x1, x2):
    dout = dx1 * np.exp2(x1 - out)
    dout = dx2 * np.exp2(x2 - out)


batch_elementwise("np.logaddexp2")


@rev("np.sqrt", "math.sqrt")
def sqrt(dout, out, x):
    dx = dout * 0.5 / out


@fwd("np.sqrt", "math.sqrt")
def sqrt_fwd(out, x):
    dout = dx * 0.5 / out


batch_elementwise("np.sqrt")
zero_flow("nonvanishing", "np.sqrt", "math.sqrt")


@rev("np.cbrt")
def cbrt(dout, out, x):
    dx = dout / (3.0 * out * out)


@fwd("np.cbrt")
def cbrt_fwd(out, x):
    dout = dx / (3.0 * out * out)


batch_elementwise("np.cbrt")
zero_flow("nonvanishing", "np.cbrt")


@rev("np.square")
def square(dout, out, x):
    dx = dout * 2.0 * x


@fwd("np.square")
def square_fwd(out, x):
    dout = dx * 2.0 * x


batch_elementwise("np.square")


@rev("np.reciprocal")
def reciprocal(dout, out, x):
    dx = -dout * out * out


@fwd("np.reciprocal")
def reciprocal_fwd(out, x):
    dout = -dx * out * out


batch_elementwise("np.reciprocal")
zero_flow("nonvanishing", "np.reciprocal")

# ---------------------------------------------------------------- trigonometric, hyperbolic

# sinc(x) = sin(pi x) / (pi x), 1 at 0. Its slope (cos(pi x) - sinc(x)) / x divides by x, so
# it is a helper, rt.sinc_slope, that takes the limit at 0; its own rules give the second
# derivative there (-pi^2 / 3) and the third (0, sinc being even) exactly too.
@rev("np.sinc")
def sinc(dout, out, x):
    dx = dout * rt.sinc_slope(x, out)


@fwd("np.sinc")
def sinc_fwd(out, x):
    dout = dx * rt.sinc_slope(x, out)


batch_elementwise("np.sinc")


# sinc_slope(x, s) is used with s = sinc(x) only: at x = 0 the total derivative of the slope
# (-pi^2 / 3) is given to x, and s gets 0.
@rev("rt.sinc_slope")
def sinc_slope(dout, out, x, s):
    safe = np.where(x == 0.0, 1.0, x)
    dx = dout * np.where(x == 0.0, -np.pi ** 2 / 3.0, -(np.pi * np.sin(np.pi * x) + out) / safe)
    ds = dout * np.where(x == 0.0, 0.0, -1.0 / safe)


@fwd("rt.sinc_slope")
def sinc_slope_fwd(out, x, s):
    safe = np.where(x == 0.0, 1.0, x)
    dout = dx * np.where(x == 0.0, -np.pi ** 2 / 3.0, -(np.pi * np.sin(np.pi * x) + out) / safe)
    dout = ds * np.where(x == 0.0, 0.0, -1.0 / safe)


batch_elementwise("rt.sinc_slope")


@rev("np.sin", "math.sin")
def sin(dout, out, x):
    dx = dout * np.cos(x)


@fwd("np.sin", "math.sin")
def sin_fwd(out, x):
    dout = dx * np.cos(x)


batch_elementwise("np.sin")


@rev("np.cos", "math.cos")
def cos(dout, out, x):
    dx = -dout * np.sin(x)


@fwd("np.cos", "math.cos")
def cos_fwd(out, x):
    dout = -dx * np.sin(x)


batch_elementwise("np.cos")


@rev("np.tan", "math.tan")
def tan(dout, out, x):
    dx = dout * (1.0 + out * out)


@fwd("np.tan", "math.tan")
def tan_fwd(out, x):
    dout = dx * (1.0 + out * out)


batch_elementwise("np.tan")


@rev("np.arcsin", "math.asin")
def arcsin(dout, out, x):
    dx = dout / np.sqrt(1.0 - x * x)


@fwd("np.arcsin", "math.asin")
def arcsin_fwd(out, x):
    dout = dx / np.sqrt(1.0 - x * x)


batch_elementwise("np.arcsin")
zero_flow("nonvanishing", "np.arcsin", "math.asin")


@rev("np.arccos", "math.acos")
def arccos(dout, out, x):
    dx = -dout / np.sqrt(1.0 - x * x)


@fwd("np.arccos", "math.acos")
def arccos_fwd(out, x):
    dout = -dx / np.sqrt(1.0 - x * x)


batch_elementwise("np.arccos")
zero_flow("nonvanishing", "np.arccos", "math.acos")


@rev("np.arctan", "math.atan")
def arctan(dout, out, x):
    dx = dout / (1.0 + x * x)


@fwd("np.arctan", "math.atan")
def arctan_fwd(out, x):
    dout = dx / (1.0 + x * x)


batch_elementwise("np.arctan")


@rev("np.arctan2", "math.atan2")
def arctan2(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout * x2 / (x1 * x1 + x2 * x2), x1)
    dx2 = rt.unbroadcast(-dout * x1 / (x1 * x1 + x2 * x2), x2)


@fwd("np.arctan2", "math.atan2")
def arctan2_fwd(out, x1, x2):
    dout = dx1 * x2 / (x1 * x1 + x2 * x2)
    dout = -dx2 * x1 / (x1 * x1 + x2 * x2)


batch_elementwise("np.arctan2")


@rev("np.sinh", "math.sinh")
def sinh(dout, out, x):
    dx = dout * np.cosh(x)


@fwd("np.sinh", "math.sinh")
def sinh_fwd(out, x):
    dout = dx * np.cosh(x)


batch_elementwise("np.sinh")


@rev("np.cosh", "math.cosh")
def cosh(dout, out, x):
    dx = dout * np.sinh(x)


@fwd("np.cosh", "math.cosh")
def cosh_fwd(out, x):
    dout = dx * np.sinh(x)


batch_elementwise("np.cosh")


@rev("np.tanh", "math.tanh")
def tanh(dout, out, x):
    dx = dout * (1.0 - out * out)


@fwd("np.tanh", "math.tanh")
def tanh_fwd(out, x):
    dout = dx * (1.0 - out * out)


batch_elementwise("np.tanh")


@rev("np.arcsinh", "math.asinh")
def arcsinh(dout, out, x):
    dx = dout / np.sqrt(x * x + 1.0)


@fwd("np.arcsinh", "math.asinh")
def arcsinh_fwd(out, x):
    dout = dx / np.sqrt(x * x + 1.0)


batch_elementwise("np.arcsinh")


@rev("np.arccosh", "math.acosh")
def arccosh(dout, out, x):
    """sqrt(x - 1) * sqrt(x + 1), not sqrt(x * x - 1): equal for real x > 1, and the right
    branch for complex x (numpy's arccosh(z) = log(z + sqrt(z - 1) sqrt(z + 1)))."""
    dx = dout / (np.sqrt(x - 1.0) * np.sqrt(x + 1.0))


@fwd("np.arccosh", "math.acosh")
def arccosh_fwd(out, x):
    dout = dx / (np.sqrt(x - 1.0) * np.sqrt(x + 1.0))


batch_elementwise("np.arccosh")
zero_flow("nonvanishing", "np.arccosh", "math.acosh")


@rev("np.arctanh", "math.atanh")
def arctanh(dout, out, x):
    dx = dout / (1.0 - x * x)


@fwd("np.arctanh", "math.atanh")
def arctanh_fwd(out, x):
    dout = dx / (1.0 - x * x)


batch_elementwise("np.arctanh")
zero_flow("nonvanishing", "np.arctanh", "math.atanh")


@rev("np.deg2rad", "np.radians", "math.radians")
def deg2rad(dout, out, x):
    dx = dout * 0.017453292519943295


@fwd("np.deg2rad", "np.radians", "math.radians")
def deg2rad_fwd(out, x):
    dout = dx * 0.017453292519943295


batch_elementwise("np.deg2rad", "np.radians")


@rev("np.rad2deg", "np.degrees", "math.degrees")
def rad2deg(dout, out, x):
    dx = dout * 57.29577951308232


@fwd("np.rad2deg", "np.degrees", "math.degrees")
def rad2deg_fwd(out, x):
    dout = dx * 57.29577951308232


batch_elementwise("np.rad2deg", "np.degrees")

# ---------------------------------------------------------------- piecewise

# A real result of a complex argument (|z|, and norm, var, std, ...) reads only the real part
# of its adjoint: a real value moves along the real axis only, so the imaginary part of a
# cotangent reaching it carries nothing (its derivative is real, as in JAX). Gradients of
# real functions of z = x + iy are df/dx - i df/dy, the convention of every rule here.
@rev("np.abs", "np.absolute", "abs", "math.fabs", "np.fabs")
def absolute(dout, out, x):
    """sign(x) for real x, conj(z) / |z| for complex z: 0 at 0 in both cases (JAX takes
    1 at a real 0; 0 keeps abs, np.linalg.norm and hypot alike there)."""
    dx = np.real(dout) * rt.abs_slope(x, out)


@fwd("np.abs", "np.absolute", "abs", "math.fabs", "np.fabs")
def absolute_fwd(out, x):
    dout = np.real(dx * rt.abs_slope(x, out))


batch_elementwise("np.abs", "np.absolute", "np.fabs")
batch_elementwise("abs", vectorized="np.abs")


@rev("rt.abs_slope")
def abs_slope(dout, out, x, a):
    """out = conj(x) / a with a = |x| (sign(x) for real x), 0 where a == 0. Through both
    arguments the derivative of sign(x) is 0 where it exists: the two terms cancel."""
    dx = np.conj(np.where(a == 0, 0.0, dout / np.where(a == 0, 1.0, a)))
    da = rt.unbroadcast(np.real(np.where(a == 0, 0.0, -dout * out / np.where(a == 0, 1.0, a))), a)


@fwd("rt.abs_slope")
def abs_slope_fwd(out, x, a):
    dout = np.where(a == 0, 0.0, np.conj(dx) / np.where(a == 0, 1.0, a))
    dout = np.where(a == 0, 0.0, -out * da / np.where(a == 0, 1.0, a))


batch_elementwise("rt.abs_slope")


@rev("np.maximum", "np.fmax", "max")
def maximum(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout * rt.tie_share(x1 > x2, x1 == x2), x1)
    dx2 = rt.unbroadcast(dout * rt.tie_share(x2 > x1, x1 == x2), x2)


@fwd("np.maximum", "np.fmax", "max")
def maximum_fwd(out, x1, x2):
    dout = dx1 * rt.tie_share(x1 > x2, x1 == x2)
    dout = dx2 * rt.tie_share(x2 > x1, x1 == x2)


batch_elementwise("np.maximum", "np.fmax")
batch_elementwise("max", vectorized="np.maximum")
zero_flow("select", "np.maximum", "np.fmax", "max", unpicked={"x1": "x1 < x2", "x2": "x2 < x1"})


@rev("np.minimum", "np.fmin", "min")
def minimum(dout, out, x1, x2):
    dx1 = rt.unbroadcast(dout * rt.tie_share(x1 < x2, x1 == x2), x1)
    dx2 = rt.unbroadcast(dout * rt.tie_share(x2 < x1, x1 == x2), x2)


@fwd("np.minimum", "np.fmin", "min")
def minimum_fwd(out, x1, x2):
    dout = dx1 * rt.tie_share(x1 < x2, x1 == x2)
    dout = dx2 * rt.tie_share(x2 < x1, x1 == x2)


batch_elementwise("np.minimum", "np.fmin")
batch_elementwise("min", vectorized="np.minimum")
zero_flow("select", "np.minimum", "np.fmin", "min", unpicked={"x1": "x2 < x1", "x2": "x1 < x2"})


@rev("np.where")
def where(dout, out, condition, x, y):
    dx = rt.unbroadcast(np.where(condition, dout, 0.0), x)
    dy = rt.unbroadcast(np.where(condition, 0.0, dout), y)


@fwd("np.where")
def where_fwd(out, condition, x, y):
    dout = rt.broadcast_like(np.where(condition, dx, 0.0), out)
    dout = rt.broadcast_like(np.where(condition, 0.0, dy), out)


batch_elementwise("np.where")
zero_flow("select", "np.where", unpicked={"x": "np.logical_not(condition)", "y": "condition"})


@rev("np.clip")
def clip(dout, out, a, a_min=None, a_max=None):
    da = dout * rt.inside(a, a_min, a_max)
    da_min = rt.unbroadcast(dout * rt.below(a, a_min), a_min)
    da_max = rt.unbroadcast(dout * rt.above(a, a_max), a_max)


@fwd("np.clip")
def clip_fwd(out, a, a_min=None, a_max=None):
    dout = rt.broadcast_like(da * rt.inside(a, a_min, a_max), out)
    dout = rt.broadcast_like(da_min * rt.below(a, a_min), out)
    dout = rt.broadcast_like(da_max * rt.above(a, a_max), out)


batch_elementwise("np.clip")
zero_flow("select", "np.clip")


# nan_to_num passes finite values through and replaces nan, +inf and -inf by the constants
# nan, posinf and neginf (numpy's large finite numbers where those are None), in the real
# and imaginary parts separately: the slope is 1 on finite parts, and each replacement
# value gets the adjoint of the parts it filled (an imaginary part's through -Im, as
# np.imag's rule: out = ... + i * nan there). copy=False (which overwrites x, read by the
# rules) is refused.
@rev("np.nan_to_num")
def nan_to_num(dout, out, x, copy=True, nan=0.0, posinf=None, neginf=None):
    in_place = rt.refuse_in_place("np.nan_to_num", False, copy)
    dx = np.where(np.isfinite(np.real(x)), np.real(dout), 0.0) + rt.imag_unit(x) * np.where(
        np.isfinite(np.imag(x)), np.imag(dout), 0.0)
    dnan = rt.unbroadcast(np.where(np.isnan(np.real(x)), np.real(dout), 0.0) - np.where(
        np.isnan(np.imag(x)), np.imag(dout), 0.0), nan)
    dposinf = rt.unbroadcast(np.where(np.isposinf(np.real(x)), np.real(dout), 0.0) - np.where(
        np.isposinf(np.imag(x)), np.imag(dout), 0.0), posinf)
    dneginf = rt.unbroadcast(np.where(np.isneginf(np.real(x)), np.real(dout), 0.0) - np.where(
        np.isneginf(np.imag(x)), np.imag(dout), 0.0), neginf)


@fwd("np.nan_to_num")
def nan_to_num_fwd(out, x, copy=True, nan=0.0, posinf=None, neginf=None):
    in_place = rt.refuse_in_place("np.nan_to_num", False, copy)
    dout = np.where(np.isfinite(np.real(x)), np.real(dx), 0.0) + rt.imag_unit(x) * np.where(
        np.isfinite(np.imag(x)), np.imag(dx), 0.0)
    dout = rt.broadcast_like(np.where(np.isnan(np.real(x)), dnan, 0.0) + rt.imag_unit(x) *
                             np.where(np.isnan(np.imag(x)), dnan, 0.0), out)
    dout = rt.broadcast_like(np.where(np.isposinf(np.real(x)), dposinf, 0.0) + rt.imag_unit(x) *
                             np.where(np.isposinf(np.imag(x)), dposinf, 0.0), out)
    dout = rt.broadcast_like(np.where(np.isneginf(np.real(x)), dneginf, 0.0) + rt.imag_unit(x) *
                             np.where(np.isneginf(np.imag(x)), dneginf, 0.0), out)


@batch("np.nan_to_num")
def nan_to_num_batch(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """nan, posinf and neginf are scalars to numpy."""
    if nan_batched or posinf_batched or neginf_batched:
        out = rt.cannot_batch("np.nan_to_num", "nan, posinf and neginf must be the same for "
                              "every example")
    else:
        out = np.nan_to_num(x, copy, nan, posinf, neginf)


@rev("np.hypot", "math.hypot")
def hypot(dout, out, x1, x2):
    """x / hypot, and 0 at the origin (a norm: as np.linalg.norm of a zero vector)."""
    dx1 = rt.unbroadcast(dout * x1 / np.where(out == 0, 1.0, out), x1)
    dx2 = rt.unbroadcast(dout * x2 / np.where(out == 0, 1.0, out), x2)


@fwd("np.hypot", "math.hypot")
def hypot_fwd(out, x1, x2):
    dout = dx1 * x1 / np.where(out == 0, 1.0, out)
    dout = dx2 * x2 / np.where(out == 0, 1.0, out)


batch_elementwise("np.hypot")


@rev("float", "np.float64", "np.complex128", "np.asarray", "np.array")
def identity(dout, out, x):
    dx = dout


@fwd("float", "np.float64", "np.complex128", "np.asarray", "np.array")
def identity_fwd(out, x):
    """`np.array([a, b])` has a list tangent: made an array like the result."""
    dout = np.asarray(dx)


# vmapped code's np.asarray of a list or tuple: anything else (an array) is returned as it is
@rev("rt.seq_array", view=True)
def seq_array(dout, out, x):
    dx = dout


@fwd("rt.seq_array")
def seq_array_fwd(out, x):
    dout = np.asarray(dx)


batch_elementwise("np.float64", "np.complex128")
batch_elementwise("float", vectorized="rt.as_float")
zero_flow("linear", "float", "np.float64", "np.complex128", "np.asarray", "np.array")


# numpy's narrower float types called on values cast them: the derivative is cast back
@rev("np.float32", "np.float16", "np.complex64")
def narrow_cast(dout, out, x):
    dx = rt.cast_like(dout, x)


@fwd("np.float32", "np.float16", "np.complex64")
def narrow_cast_fwd(out, x):
    dout = rt.cast_like(dx, out)


batch_elementwise("np.float32", "np.float16", "np.complex64")


# `x.dtype.type(v)`: v cast to x's dtype (to an integer one: no derivative)
@rev("rt.scalar_of")
def scalar_of(dout, out, value, dtype):
    dvalue = rt.cast_derivative(dout, value, out)


@fwd("rt.scalar_of")
def scalar_of_fwd(out, value, dtype):
    dout = rt.cast_derivative(dvalue, out, out)


batch_same("rt.scalar_of")


# numpy's integer and bool types called on values cast them (`np.int64(W[:, -1])` to index
# with): the result carries no derivative.
nondiff("np.int64", "np.int32", "np.int16", "np.int8", "np.uint64", "np.uint32", "np.uint16",
        "np.uint8", "np.intp", "np.bool_")
batch_elementwise("np.int64", "np.int32", "np.int16", "np.int8", "np.uint64", "np.uint32",
                  "np.uint16", "np.uint8", "np.intp", "np.bool_")


@batch("np.array", "np.asarray", "rt.seq_array")
def array_batch(x):
    out = rt.lanes_array(x, x_spec, batch_size)


@rev("np.conj", "np.conjugate")
def conj(dout, out, x):
    dx = np.conj(dout)


@fwd("np.conj", "np.conjugate")
def conj_fwd(out, x):
    dout = np.conj(dx)


batch_elementwise("np.conj", "np.conjugate")


@rev("np.real")
def real(dout, out, val):
    dval = np.real(dout)


@fwd("np.real")
def real_fwd(out, val):
    dout = np.real(dval)


batch_elementwise("np.real")


@rev("np.imag")
def imag(dout, out, val):
    """Im(val) = Re(-i val): the adjoint is -i dout (0 for a real val, kept real)."""
    dval = -rt.imag_unit(val) * np.real(dout)


@fwd("np.imag")
def imag_fwd(out, val):
    dout = np.imag(dval)


batch_elementwise("np.imag")


# angle(z) = arctan2(Im z, Re z). Its gradient (df/dx - i df/dy, as for every rule) is
# -i / z; for real z it is 0 (0 or pi, piecewise constant), and at z = 0 it is taken as 0.
# The result is real, so the rule reads the real part of the adjoint (as np.abs does).
@rev("np.angle")
def angle(dout, out, z, deg=False):
    slope = np.where(z == 0, 0.0, -rt.imag_unit(z) / np.where(z == 0, 1.0, z))
    dz = np.real(dout) * slope * np.where(deg, 180.0 / np.pi, 1.0)


@fwd("np.angle")
def angle_fwd(out, z, deg=False):
    slope = np.where(z == 0, 0.0, -rt.imag_unit(z) / np.where(z == 0, 1.0, z))
    dout = np.real(dz * slope) * np.where(deg, 180.0 / np.pi, 1.0)


batch_elementwise("np.angle")


nondiff("rt.imag_unit")
batch_same("rt.imag_unit", out_batched=False)


nondiff("rt.below", "rt.above")
batch_elementwise("rt.below", "rt.above")


# ---------------------------------------------------------------- batching of the rest
# bitwise operators (marked nondiff where integer operators are, in rules/core.py)
batch_elementwise("&", "|", "^", "<<", ">>")
# math.* and builtins work on one number; their batched spelling is numpy's
for _math, _np in {"exp": "exp", "expm1": "expm1", "log": "log", "log2": "log2",
                   "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "sin": "sin",
                   "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos",
                   "atan": "arctan", "atan2": "arctan2", "sinh": "sinh", "cosh": "cosh",
                   "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
                   "radians": "radians", "degrees": "degrees", "fabs": "abs", "hypot": "hypot",
                   "floor": "floor", "ceil": "ceil", "trunc": "trunc", "isnan": "isnan",
                   "isinf": "isinf", "isfinite": "isfinite"}.items():
    batch_elementwise("math." + _math, vectorized="np." + _np)



# ---------------------------------------------------------------- polynomials
# np.polyval(p, x) = sum_k p[k] x ** (n - 1 - k): linear in p (the powers of x are its
# adjoint), and its slope in x is the polynomial of the derivative's coefficients. Both are
# holomorphic. Only 1-D p (rt.poly_coefficients refuses numpy's one-polynomial-per-column
# form). Batched coefficients are summed as powers times coefficients, along a last axis.
@rev("np.polyval")
def polyval(dout, out, p, x):
    c = rt.poly_coefficients(p)
    dp = np.reshape(dout, (-1,)) @ (np.reshape(x, (-1, 1)) ** np.arange(np.size(c) - 1, -1, -1))
    dx = dout * np.polyval(c[:-1] * np.arange(np.size(c) - 1, 0, -1), x)


@fwd("np.polyval")
def polyval_fwd(out, p, x):
    dout = np.polyval(rt.poly_coefficients(dp), x)
    dout = dx * np.polyval(rt.poly_coefficients(p)[:-1] * np.arange(np.size(p) - 1, 0, -1), x)


@batch("np.polyval")
def polyval_batch(p, x):
    if not p_batched:
        out = np.polyval(p, x)
    elif x_batched:
        out = np.sum(np.expand_dims(x, -1) ** np.arange(np.shape(p)[-1] - 1, -1, -1) *
                     rt.lane_promote(rt.poly_coefficients(p, 1), np.ndim(x)), axis=-1)
    else:
        out = np.sum(np.expand_dims(x, -1) ** np.arange(np.shape(p)[-1] - 1, -1, -1) *
                     rt.lane_promote(rt.poly_coefficients(p, 1), np.ndim(x) + 1), axis=-1)


@rev("rt.poly_coefficients")
def poly_coefficients(dout, out, p, lead=0):
    dp = dout


@fwd("rt.poly_coefficients")
def poly_coefficients_fwd(out, p, lead=0):
    dout = rt.poly_coefficients(dp, lead)


batch_lanes("rt.poly_coefficients", ("p",), param="lead")
