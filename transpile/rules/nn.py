"""tp.nn's primitive (runtime/nn.py): derivative and batching rules of the patches of an image.

`patches` copies windows of its input, so it is linear: its tangent is the patches of the
tangent, with zeros in the padding whatever `pad_value` the primal used (max pooling pads
with -inf, which carries no derivative), and its adjoint adds each window of the cotangent
back where it came from. Both work on any number of leading axes, so a batch axis in front
is one more of them.
"""
from .core import batch, batch_same, fwd, rev
import numpy as np  # noqa: F401  (templates name it)
import runtime as rt  # noqa: F401


@rev("rt.nn.patches")
def patches(dout, out, x, window, strides=None, padding="VALID", dilation=None, pad_value=0.0):
    dx = rt.nn.patches_adjoint(dout, x, window, strides, padding, dilation)


@fwd("rt.nn.patches")
def patches_fwd(out, x, window, strides=None, padding="VALID", dilation=None, pad_value=0.0):
    dout = rt.nn.patches(dx, window, strides, padding, dilation)


@rev("rt.nn.patches_adjoint")
def patches_adjoint(dout, out, g, x, window, strides=None, padding="VALID", dilation=None):
    dg = rt.nn.patches(dout, window, strides, padding, dilation)


@fwd("rt.nn.patches_adjoint")
def patches_adjoint_fwd(out, g, x, window, strides=None, padding="VALID", dilation=None):
    dout = rt.nn.patches_adjoint(dg, x, window, strides, padding, dilation)


batch_same("rt.nn.patches")


@batch("rt.nn.patches_adjoint")
def patches_adjoint_batch(g, x, window, strides=None, padding="VALID", dilation=None):
    # only x's trailing (spatial, channel) shape is read: the batch comes from g
    if window_batched or strides_batched or padding_batched or dilation_batched:
        out = rt.cannot_batch("tp.nn's patches", "the window geometry differs between examples")
    else:
        out = rt.nn.patches_adjoint(rt.broadcast_batch(g, batch_size, g_spec), x, window,
                                    strides, padding, dilation)
