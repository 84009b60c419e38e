"""Parameter initializers with the conventions of `jax.nn.initializers`.

Each maker returns `init(key, shape, dtype=np.float64)` drawing from `tp.random`, so the
same key gives the parameters JAX gives (with `jax_enable_x64`; ask for float32 to match
JAX's default mode): `glorot_normal()(key, (784, 512))` here and in JAX agree to within a
few units in the last place.
"""
import math

import numpy as np

from runtime import random

__all__ = ["zeros", "ones", "constant", "normal", "uniform", "variance_scaling",
           "glorot_normal", "glorot_uniform", "xavier_normal", "xavier_uniform",
           "lecun_normal", "lecun_uniform", "he_normal", "he_uniform", "kaiming_normal",
           "kaiming_uniform"]


def zeros(key, shape, dtype=np.float64):
    """An array of zeros (the key is not used)."""
    return np.zeros(shape, dtype)


def ones(key, shape, dtype=np.float64):
    """An array of ones (the key is not used)."""
    return np.ones(shape, dtype)


def constant(value, dtype=np.float64):
    """An initializer filling with `value`."""
    def init(key, shape, dtype=dtype):
        return np.full(shape, value, dtype)
    return init


def normal(stddev=1e-2, dtype=np.float64):
    """An initializer drawing normal values of standard deviation `stddev`."""
    def init(key, shape, dtype=dtype):
        return random.normal(key, shape, dtype) * np.asarray(stddev, dtype)
    return init


def uniform(scale=1e-2, dtype=np.float64):
    """An initializer drawing uniformly from [0, scale)."""
    def init(key, shape, dtype=dtype):
        return random.uniform(key, shape, dtype) * np.asarray(scale, dtype)
    return init


def _axes(axis, ndim):
    return tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))


def _fans(shape, in_axis, out_axis, batch_axis):
    """(fan_in, fan_out): the input and output sizes times the receptive field (the axes
    that are none of in, out and batch: a convolution's window)."""
    if len(shape) <= 1:
        raise ValueError(f"variance scaling needs a shape of at least 2 axes, got {shape}")
    nd = len(shape)
    ins, outs, batches = _axes(in_axis, nd), _axes(out_axis, nd), _axes(batch_axis, nd)
    in_size = math.prod(shape[a] for a in ins)
    out_size = math.prod(shape[a] for a in outs)
    field = math.prod(shape) / in_size / out_size / math.prod(shape[a] for a in batches)
    return in_size * field, out_size * field


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=np.float64):
    """Draws with standard deviation sqrt(scale / n), n the fan in, fan out or their mean
    ("fan_avg") or geometric mean ("fan_geo_avg"); distribution "truncated_normal" (cut at
    two standard deviations), "normal" or "uniform"."""
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling: {distribution!r}")
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling: {mode!r}")

    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
             "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = np.asarray(scale / n, dtype)
        if distribution == "truncated_normal":
            # 0.8796... is the standard deviation of a standard normal cut at +-2
            stddev = np.sqrt(variance) / np.asarray(0.87962566103423978, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * np.sqrt(variance)
        return random.uniform(key, shape, dtype, -1) * np.sqrt(3 * variance)
    return init


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=np.float64):
    """Variance scaling 1 over the mean of the fans, truncated normal (Glorot and Bengio)."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=np.float64):
    """Variance scaling 1 over the mean of the fans, uniform."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=np.float64):
    """Variance scaling 1 over the fan in, truncated normal (LeCun)."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=np.float64):
    """Variance scaling 1 over the fan in, uniform."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=np.float64):
    """Variance scaling 2 over the fan in, truncated normal (He et al.)."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=np.float64):
    """Variance scaling 2 over the fan in, uniform."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


xavier_normal, xavier_uniform = glorot_normal, glorot_uniform
kaiming_normal, kaiming_uniform = he_normal, he_uniform
