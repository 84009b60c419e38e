"""tp.nn's functions: activations, normalization, convolution and pooling, losses.

Plain Python + NumPy, so every transformation reads them like the user's own code: grad,
vmap and jit of a model that calls `relu` or `conv` see these lines. Names and defaults
follow `jax.nn` (and stax's `logsoftmax`).

Convolution and pooling take channels-last arrays, (..., *spatial, C), with any number of
leading axes, and filters (*window, C_in, C_out) (stax's default 'NHWC'/'HWIO'). They are
built on `rt.nn.patches` (runtime/nn.py): a convolution is one matrix product of the
image's windows with the reshaped filter (im2col), pooling a max or mean over them.
"""
import numpy as np

import runtime as rt

__all__ = ["relu", "relu6", "sigmoid", "softplus", "tanh", "elu", "selu", "celu",
           "leaky_relu", "gelu", "silu", "swish", "soft_sign", "squareplus", "sparse_plus",
           "mish", "hard_tanh", "hard_sigmoid", "hard_silu", "hard_swish", "glu",
           "log_sigmoid", "logsumexp", "log_softmax", "logsoftmax", "softmax", "standardize",
           "one_hot", "conv", "max_pool", "avg_pool", "sum_pool", "softmax_cross_entropy",
           "sparse_softmax_cross_entropy", "sigmoid_binary_cross_entropy", "mse", "l2_loss",
           "accuracy"]


# ---------------------------------------------------------------- activations

def relu(x):
    """max(x, 0), with derivative 0 at 0 (as JAX's)."""
    return np.where(x > 0, x, 0.0 * x)


def relu6(x):
    """min(max(x, 0), 6)."""
    return np.clip(x, 0.0, 6.0)


def sigmoid(x):
    """1 / (1 + exp(-x)), written with tanh so that it neither overflows nor loses digits."""
    return 0.5 * np.tanh(0.5 * x) + 0.5


def softplus(x):
    """log(1 + exp(x)) without overflow."""
    return np.logaddexp(x, 0.0)


def log_sigmoid(x):
    """log(sigmoid(x)) without overflow."""
    return -np.logaddexp(-x, 0.0)


def tanh(x):
    """np.tanh(x)."""
    return np.tanh(x)


def elu(x, alpha=1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    negative = np.where(x > 0, 0.0 * x, x)      # expm1 of the negative part only: no overflow
    return np.where(x > 0, x, alpha * np.expm1(negative))


def selu(x):
    """The self-normalizing ELU: a scaled elu with the fixed alpha and scale of Klambauer et al."""
    return 1.0507009873554804934193349852946 * elu(x, 1.6732632423543772848170429916717)


def celu(x, alpha=1.0):
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""
    negative = np.where(x > 0, 0.0 * x, x)
    return np.where(x > 0, x, alpha * np.expm1(negative / alpha))


def leaky_relu(x, negative_slope=0.01):
    """x where x >= 0, else negative_slope * x."""
    return np.where(x >= 0, x, negative_slope * x)


def gelu(x):
    """x Phi(x) in its tanh form (JAX's default, approximate=True)."""
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + np.tanh(inner))


def silu(x):
    """x * sigmoid(x) (also called swish)."""
    return x * sigmoid(x)


swish = silu


def soft_sign(x):
    """x / (|x| + 1)."""
    return x / (np.abs(x) + 1.0)


def squareplus(x, b=4.0):
    """(x + sqrt(x^2 + b)) / 2, a smooth relu (Barron 2021)."""
    return 0.5 * (x + np.sqrt(x * x + b))


def sparse_plus(x):
    """0 for x <= -1, (x + 1)^2 / 4 between -1 and 1, x from 1 on: once differentiable."""
    return np.where(x <= -1.0, 0.0 * x, np.where(x >= 1.0, x, 0.25 * (x + 1.0) ** 2))


def mish(x):
    """x tanh(softplus(x)) (Misra 2019)."""
    return x * np.tanh(softplus(x))


def hard_tanh(x):
    """x clipped to [-1, 1]."""
    return np.clip(x, -1.0, 1.0)


def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    return relu6(x + 3.0) / 6.0


def hard_silu(x):
    """x hard_sigmoid(x) (also called hard_swish)."""
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def glu(x, axis=-1):
    """The gated linear unit: the first half of `axis` times the sigmoid of the second."""
    a, b = np.split(x, 2, axis=axis)
    return a * sigmoid(b)


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) along axis, shifted by the maximum (which carries no derivative)."""
    top = rt.stop_gradient(np.max(x, axis=axis, keepdims=True))
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    if keepdims:
        return out
    return np.squeeze(out, axis=axis)


def log_softmax(x, axis=-1):
    """x minus the log of the sum of exp(x) along axis: log-probabilities."""
    shifted = x - rt.stop_gradient(np.max(x, axis=axis, keepdims=True))
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


logsoftmax = log_softmax


def softmax(x, axis=-1):
    """exp(x) normalized to sum to one along axis (shifted by the maximum first)."""
    e = np.exp(x - rt.stop_gradient(np.max(x, axis=axis, keepdims=True)))
    return e / np.sum(e, axis=axis, keepdims=True)


def standardize(x, axis=-1, epsilon=1e-5):
    """(x - mean) / sqrt(variance + epsilon) along axis."""
    mean = np.mean(x, axis=axis, keepdims=True)
    centered = x - mean
    variance = np.mean(centered * centered, axis=axis, keepdims=True)
    return centered / np.sqrt(variance + epsilon)


def one_hot(labels, num_classes, dtype=np.float64):
    """labels (integers, any shape) -> (..., num_classes), 1 at each label."""
    return (np.expand_dims(labels, -1) == np.arange(num_classes)).astype(dtype)


# ---------------------------------------------------------------- convolution and pooling

def conv(x, w, strides=None, padding="VALID", dilation=None):
    """The convolution (cross-correlation, as lax.conv's) of x (..., *spatial, C) with
    filters w (*window, C, O): (..., *out_spatial, O)."""
    window = np.shape(w)[:-2]
    windows = rt.nn.patches(x, window, strides, padding, dilation)
    flat = np.reshape(windows, np.shape(windows)[:np.ndim(windows) - len(window) - 1] + (-1,))
    return flat @ np.reshape(w, (-1, np.shape(w)[-1]))


def max_pool(x, window, strides=None, padding="VALID"):
    """The maximum over each window of x (..., *spatial, C); strides default to 1."""
    windows = rt.nn.patches(x, window, strides, padding, None, -np.inf)
    return np.max(windows, axis=tuple(range(-len(window) - 1, -1)))


def sum_pool(x, window, strides=None, padding="VALID"):
    """The sum over each window of x (..., *spatial, C); strides default to 1."""
    windows = rt.nn.patches(x, window, strides, padding)
    return np.sum(windows, axis=tuple(range(-len(window) - 1, -1)))


def avg_pool(x, window, strides=None, padding="VALID"):
    """The mean over each window, of the elements inside the input (padding not counted, as
    stax's AvgPool)."""
    counts = sum_pool(np.ones_like(x[..., :1]), window, strides, padding)
    return sum_pool(x, window, strides, padding) / counts


# ---------------------------------------------------------------- losses and metrics

def softmax_cross_entropy(logits, labels):
    """Mean over examples of -sum(labels * log_softmax(logits)), labels one-hot (or any
    distribution) along the last axis."""
    return -np.mean(np.sum(labels * log_softmax(logits), axis=-1))


def sparse_softmax_cross_entropy(logits, labels):
    """The same with integer labels."""
    labels = one_hot(labels, np.shape(logits)[-1], logits.dtype)
    return -np.mean(np.sum(labels * log_softmax(logits), axis=-1))


def sigmoid_binary_cross_entropy(logits, labels):
    """Mean of -(labels log sigmoid(logits) + (1 - labels) log sigmoid(-logits))."""
    return np.mean(labels * np.logaddexp(0.0, -logits) +
                   (1.0 - labels) * np.logaddexp(0.0, logits))


def mse(predictions, targets):
    """Mean squared error."""
    diff = predictions - targets
    return np.mean(diff * diff)


def l2_loss(predictions, targets):
    """Half the squared error, summed (optax's l2_loss, summed)."""
    diff = predictions - targets
    return 0.5 * np.sum(diff * diff)


def accuracy(logits, labels):
    """The fraction of examples whose largest logit is the label (integers or one-hot)."""
    predicted = np.argmax(logits, axis=-1)
    if np.ndim(labels) == np.ndim(logits):
        labels = np.argmax(labels, axis=-1)
    return np.mean(predicted == labels)
