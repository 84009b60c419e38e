"""The layers of tp.nn under the names of `jax.example_libraries.stax`, with its function
aliases (`logsoftmax`, `glorot`, `randn`), so stax code runs with its import changed:

    from transpile.nn import stax
    from transpile.nn.stax import Dense, Relu, LogSoftmax
"""
from .functions import (elu, gelu, leaky_relu, log_softmax, logsoftmax, relu, selu, sigmoid,  # noqa: F401
                        softmax, softplus, standardize)
from .initializers import glorot_normal, normal, ones, zeros  # noqa: F401
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers

glorot = glorot_normal
randn = normal

__all__ = list(_layers) + ["elu", "gelu", "leaky_relu", "log_softmax", "logsoftmax", "relu",
                           "selu", "sigmoid", "softmax", "softplus", "standardize", "glorot",
                           "randn", "glorot_normal", "normal", "ones", "zeros"]
