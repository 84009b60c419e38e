"""Tensor convolution: rt.tensor_convolve (tp.signal.convolve, autograd's
autograd.scipy.signal.convolve) and its transposes in each operand.

The three are bilinear without conjugation (runtime/signal.py): the transpose of
tensor_convolve in a is tensor_convolve_adj_a, in b tensor_convolve_adj_b, and the
transposes of those are the other two, so each one's rules are written with the family
alone and every order of derivative stays in it. The operand an adjoint only takes its
shape from (`a` of adj_a, `b` of adj_b) gets no derivative. vmap adds a leading batch axis
to all operands (`lead + 1`), which the kernel keeps shared and first.
"""
from .core import batch, fwd, rev
import runtime as rt  # noqa: F401


@rev("rt.tensor_convolve")
def tensor_convolve(dout, out, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    da = rt.tensor_convolve_adj_a(dout, a, b, axes, dot_axes, mode, lead)
    db = rt.tensor_convolve_adj_b(dout, a, b, axes, dot_axes, mode, lead)


@fwd("rt.tensor_convolve")
def tensor_convolve_fwd(out, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    dout = rt.tensor_convolve(da, b, axes, dot_axes, mode, lead)
    dout = rt.tensor_convolve(a, db, axes, dot_axes, mode, lead)


@batch("rt.tensor_convolve")
def tensor_convolve_batch(a, b, axes=None, dot_axes=None, mode="full", lead=0):
    out = rt.tensor_convolve(rt.broadcast_batch(a, batch_size, a_batched),
                             rt.broadcast_batch(b, batch_size, b_batched),
                             axes, dot_axes, mode, lead + 1)


@rev("rt.tensor_convolve_adj_a")
def tensor_convolve_adj_a(dout, out, g, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    dg = rt.tensor_convolve(dout, b, axes, dot_axes, mode, lead)
    db = rt.tensor_convolve_adj_b(g, dout, b, axes, dot_axes, mode, lead)


@fwd("rt.tensor_convolve_adj_a")
def tensor_convolve_adj_a_fwd(out, g, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    dout = rt.tensor_convolve_adj_a(dg, a, b, axes, dot_axes, mode, lead)
    dout = rt.tensor_convolve_adj_a(g, a, db, axes, dot_axes, mode, lead)


@batch("rt.tensor_convolve_adj_a")
def tensor_convolve_adj_a_batch(g, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    out = rt.tensor_convolve_adj_a(rt.broadcast_batch(g, batch_size, g_batched),
                                   rt.broadcast_batch(a, batch_size, a_batched),
                                   rt.broadcast_batch(b, batch_size, b_batched),
                                   axes, dot_axes, mode, lead + 1)


@rev("rt.tensor_convolve_adj_b")
def tensor_convolve_adj_b(dout, out, g, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    dg = rt.tensor_convolve(a, dout, axes, dot_axes, mode, lead)
    da = rt.tensor_convolve_adj_a(g, a, dout, axes, dot_axes, mode, lead)


@fwd("rt.tensor_convolve_adj_b")
def tensor_convolve_adj_b_fwd(out, g, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    dout = rt.tensor_convolve_adj_b(dg, a, b, axes, dot_axes, mode, lead)
    dout = rt.tensor_convolve_adj_b(g, da, b, axes, dot_axes, mode, lead)


@batch("rt.tensor_convolve_adj_b")
def tensor_convolve_adj_b_batch(g, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    out = rt.tensor_convolve_adj_b(rt.broadcast_batch(g, batch_size, g_batched),
                                   rt.broadcast_batch(a, batch_size, a_batched),
                                   rt.broadcast_batch(b, batch_size, b_batched),
                                   axes, dot_axes, mode, lead + 1)
