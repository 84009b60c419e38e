"""tp.nn's layers, in the functional style of stax.

A layer is a pair `(init_fun, apply_fun)`:

    init_fun(key, input_shape) -> (output_shape, params)
    apply_fun(params, inputs, rng=None) -> outputs

Parameters are pytrees (tuples and lists of arrays); `init_fun` runs as ordinary Python and
draws from `tp.random` as stax draws from `jax.random`, so the same key gives the same
parameters as JAX's stax. `apply_fun` is plain NumPy that every transformation reads:
`tp.jit(tp.grad(loss))`, `tp.vmap` over examples, per-example keys for Dropout.

Names, arguments and defaults are those of `jax.example_libraries.stax` (so such code runs
with its import changed), stax's quirks included: Dropout's `rate` is the probability of
*keeping* a unit. Added here: LayerNorm, Embedding and Conv1D.

The combinators (`serial`, `parallel`) and `elementwise` write their apply function as
source, a short Python function calling each layer by name (transpile/codegen.py), which
transformations read like any other function.
"""
import functools
import math

import numpy as np

import runtime as rt
from runtime import random
from ..codegen import function_from_source
from . import functions as F
from .initializers import glorot_normal, normal, ones, zeros

__all__ = ["Dense", "GeneralConv", "Conv", "Conv1D", "BatchNorm", "LayerNorm", "Embedding",
           "elementwise", "Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus",
           "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu", "MaxPool", "SumPool", "AvgPool",
           "Flatten", "Identity", "FanOut", "FanInSum", "FanInConcat", "Dropout", "serial",
           "parallel"]

# ---------------------------------------------------------------- parameterized layers

def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A fully-connected layer: inputs @ W + b, W of shape (in, out_dim)."""
    def init_fun(rng, input_shape):
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))

    def apply_fun(params, inputs, rng=None):
        W, b = params
        return np.dot(inputs, W) + b
    return init_fun, apply_fun


def _permutation(spec, order):
    """The axes of `spec` (a string such as 'NCHW') in the order of the letters `order`;
    None when that is the identity."""
    perm = tuple(spec.index(c) for c in order)
    return None if perm == tuple(range(len(perm))) else perm


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6), dilation=None):
    """A convolution with stax's dimension numbers, e.g. ('NHWC', 'HWIO', 'NHWC'): the
    letters of the input, filter and output layouts. Other layouts are transposed to
    channels-last around the same im2col-and-matmul code (F.conv)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    spatial = [c for c in rhs_spec if c not in "IO"]
    if len(spatial) != len(filter_shape):
        raise ValueError(f"filter_shape {filter_shape} does not match {rhs_spec!r}")
    strides = tuple(strides or (1,) * len(filter_shape))
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))
    lhs_perm = _permutation(lhs_spec, ["N"] + spatial + ["C"])
    rhs_perm = _permutation(rhs_spec, spatial + ["I", "O"])
    out_perm = _permutation("N" + "".join(spatial) + "C", list(out_spec))

    def init_fun(rng, input_shape):
        sizes = iter(filter_shape)
        kernel_shape = tuple(out_chan if c == "O" else input_shape[lhs_spec.index("C")]
                             if c == "I" else next(sizes) for c in rhs_spec)
        image = [input_shape[lhs_spec.index(c)] for c in spatial]
        out = rt.nn.output_shape(image, filter_shape, strides, padding, dilation)
        sizes = dict(zip(spatial, out), N=input_shape[lhs_spec.index("N")], C=out_chan)
        output_shape = tuple(sizes[c] for c in out_spec)
        k1, k2 = random.split(rng)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, rng=None):
        W, b = params
        if lhs_perm is not None:
            inputs = np.transpose(inputs, lhs_perm)
        if rhs_perm is not None:
            W = np.transpose(W, rhs_perm)
        out = F.conv(inputs, W, strides, padding, dilation)
        if out_perm is not None:
            out = np.transpose(out, out_perm)
        return out + b
    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1D = functools.partial(GeneralConv, ("NWC", "WIO", "NWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Standardize over `axis` (the batch statistics, as stax: no running averages), then
    gamma * z + beta per feature."""
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        return input_shape, _shift_and_scale(rng, shape, center, scale, beta_init, gamma_init)

    def apply_fun(params, x, rng=None):
        beta, gamma = params
        z = F.standardize(x, axis, epsilon)
        if scale:
            z = np.expand_dims(gamma, axis) * z
        if center:
            z = z + np.expand_dims(beta, axis)
        return z
    return init_fun, apply_fun


def _shift_and_scale(rng, shape, center, scale, beta_init, gamma_init):
    """(beta, gamma) of a normalization layer, () for the ones it does not use."""
    k1, k2 = random.split(rng)
    return (beta_init(k1, shape) if center else (), gamma_init(k2, shape) if scale else ())


def LayerNorm(axis=-1, epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Standardize each example over its trailing `axis` (an int or a tuple of the last
    axes), then gamma * z + beta with parameters of those axes' shape."""
    axes = (axis,) if np.isscalar(axis) else tuple(axis)
    if sorted(axes) != list(range(-len(axes), 0)):
        raise ValueError(f"LayerNorm normalizes trailing axes (-1, or (-2, -1), ...), got "
                         f"{axis}")

    def init_fun(rng, input_shape):
        shape = tuple(input_shape[len(input_shape) - len(axes):])
        return input_shape, _shift_and_scale(rng, shape, center, scale, beta_init, gamma_init)

    def apply_fun(params, x, rng=None):
        beta, gamma = params
        z = F.standardize(x, axes, epsilon)
        if scale:
            z = gamma * z
        if center:
            z = z + beta
        return z
    return init_fun, apply_fun


def Embedding(vocab_size, features, W_init=normal(1.0)):
    """A table of `vocab_size` rows of `features`: integer inputs of any shape pick rows."""
    def init_fun(rng, input_shape):
        return tuple(input_shape) + (features,), W_init(rng, (vocab_size, features))

    def apply_fun(params, inputs, rng=None):
        return params[inputs]
    return init_fun, apply_fun


# ---------------------------------------------------------------- elementwise layers

def elementwise(fun, **fun_kwargs):
    """A layer applying `fun(inputs, **fun_kwargs)`, with no parameters."""
    keywords = "".join(f", {k}=option_{k}" for k in fun_kwargs)
    apply_fun = function_from_source("elementwise_apply", (
        "def elementwise_apply(params, inputs, rng=None):\n"
        f"    return fun(inputs{keywords})\n"),
        {"fun": fun, **{f"option_{k}": v for k, v in fun_kwargs.items()}})
    return _same_shape, apply_fun


def _same_shape(rng, input_shape):
    return input_shape, ()


Tanh = elementwise(np.tanh)
Relu = elementwise(F.relu)
Exp = elementwise(np.exp)
LogSoftmax = elementwise(F.log_softmax, axis=-1)
Softmax = elementwise(F.softmax, axis=-1)
Softplus = elementwise(F.softplus)
Sigmoid = elementwise(F.sigmoid)
Elu = elementwise(F.elu)
LeakyRelu = elementwise(F.leaky_relu)
Selu = elementwise(F.selu)
Gelu = elementwise(F.gelu)


# ---------------------------------------------------------------- pooling and shapes

def _pooling_layer(pool):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        window_shape = tuple(window_shape)
        strides = tuple(strides or (1,) * len(window_shape))
        if spec is None:
            perm = None
        else:
            spatial = [c for c in spec if c not in "NC"]
            perm = _permutation(spec, ["N"] + spatial + ["C"])
        back = None if perm is None else tuple(np.argsort(perm))

        def init_fun(rng, input_shape):
            shape = tuple(input_shape) if perm is None else \
                tuple(input_shape[i] for i in perm)
            out = rt.nn.output_shape(shape[1:-1], window_shape, strides, padding, None)
            out = (shape[0],) + out + (shape[-1],)
            return (out if back is None else tuple(out[i] for i in back)), ()

        def apply_fun(params, inputs, rng=None):
            if perm is not None:
                inputs = np.transpose(inputs, perm)
            out = pool(inputs, window_shape, strides, padding)
            if back is not None:
                out = np.transpose(out, back)
            return out
        return init_fun, apply_fun
    PoolingLayer.__name__ = pool.__name__
    PoolingLayer.__doc__ = (f"A pooling layer ({pool.__name__}): windows of window_shape moved "
                            "by strides (default 1) over the spatial axes, padding 'VALID', "
                            "'SAME' or pairs; spec a layout such as 'NCHW' (default "
                            "channels last).")
    return PoolingLayer


MaxPool = _pooling_layer(F.max_pool)
SumPool = _pooling_layer(F.sum_pool)
AvgPool = _pooling_layer(F.avg_pool)


def _flatten():
    def init_fun(rng, input_shape):
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, rng=None):
        return np.reshape(inputs, (np.shape(inputs)[0], -1))
    return init_fun, apply_fun


Flatten = _flatten()      # all but the leading axis into one


def _identity():
    def apply_fun(params, inputs, rng=None):
        return inputs
    return _same_shape, apply_fun


Identity = _identity()


def FanOut(num):
    """num copies of the input (a list), for `parallel`."""
    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, rng=None):
        return [inputs] * num
    return init_fun, apply_fun


def _fan_in_sum():
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, rng=None):
        return sum(inputs)
    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
    """Concatenates a list of inputs along `axis` (the end of a `parallel`)."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

    def apply_fun(params, inputs, rng=None):
        return np.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Keep each unit with probability `rate` (stax's meaning: rate is the keep rate) and
    scale kept units by 1 / rate, in mode 'train'; the identity otherwise. apply_fun then
    needs `rng`, a key (per-example keys under vmap give per-example masks)."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, rng=None):
        if mode != "train":
            return inputs
        assert rng is not None, "Dropout needs a key: call apply_fun(params, inputs, rng=key)"
        keep = random.bernoulli(rng, rate, np.shape(inputs))
        return np.where(keep, inputs / rate, 0.0 * inputs)
    return init_fun, apply_fun


# ---------------------------------------------------------------- combinators

def serial(*layers):
    """The layers one after another; params is a list of each layer's params. With a key,
    apply_fun splits it into one key per layer (as stax does)."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    plain = "".join(f"        inputs = layer_{i}(params[{i}], inputs)\n" for i in range(n))
    keyed = "".join(f"    inputs = layer_{i}(params[{i}], inputs, rng=rngs[{i}])\n"
                    for i in range(n))
    source = ("def serial_apply(params, inputs, rng=None):\n"
              "    if rng is None:\n" + plain + "        return inputs\n"
              f"    rngs = random.split(rng, {n})\n" + keyed + "    return inputs\n")
    apply_fun = function_from_source(
        "serial_apply", source, {"random": random,
                                 **{f"layer_{i}": f for i, f in enumerate(apply_funs)}})
    return init_fun, apply_fun


def parallel(*layers):
    """Each layer on its own input (a sequence of inputs, one per layer); returns the list
    of outputs. Usually between FanOut and FanInSum or FanInConcat."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, n)
        pairs = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)]
        return [s for s, _ in pairs], [p for _, p in pairs]

    plain = ", ".join(f"layer_{i}(params[{i}], inputs[{i}])" for i in range(n))
    keyed = ", ".join(f"layer_{i}(params[{i}], inputs[{i}], rng=rngs[{i}])" for i in range(n))
    source = ("def parallel_apply(params, inputs, rng=None):\n"
              "    if rng is None:\n"
              f"        return [{plain}]\n"
              f"    rngs = random.split(rng, {n})\n"
              f"    return [{keyed}]\n")
    apply_fun = function_from_source(
        "parallel_apply", source, {"random": random,
                                   **{f"layer_{i}": f for i, f in enumerate(apply_funs)}})
    return init_fun, apply_fun
