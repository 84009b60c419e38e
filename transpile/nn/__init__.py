"""tp.nn: layers in the style of stax, the functions they are made of, initializers.

    init_fun, apply_fun = tp.nn.serial(tp.nn.Dense(512), tp.nn.Relu, tp.nn.Dense(10))
    out_shape, params = init_fun(tp.random.PRNGKey(0), (-1, 784))
    logits = apply_fun(params, images)

`tp.nn.stax` holds the same layers under stax's module name, and `tp.nn.initializers`
those of `jax.nn.initializers`; code written against `jax.example_libraries.stax` runs with
its import changed. See docs/toolkit.md.
"""
from . import functions, initializers, layers, stax  # noqa: F401
from .functions import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403

__all__ = ["functions", "initializers", "layers", "stax"] + functions.__all__ + \
    layers.__all__
