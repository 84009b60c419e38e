"""numpy.fft: the discrete Fourier transforms and fftshift/ifftshift.

Every transform is linear (rfft and irfft real-linear), so each is its own forward rule, and
its reverse rule is its transpose (without conjugation, as in JAX): a runtime helper
`rt.<name>_adj(g, shape, <numpy's size, axes and norm arguments>)` in runtime/fft_helpers.py,
which undoes the padding or truncation that `n`/`s` did. The transpose of a transpose is the
transform again, so the helpers' own rules are the numpy functions: derivatives of any order
stay FFTs. fft2, ifft2, rfft2 and irfft2 share the n-dimensional helpers (their axes default
to (-2, -1), passed along).

Batching: the batch is axis 0; per-example axes shift by one (rt.lane_fft_axes, which also
reads numpy's axes=None: every axis or, with `s`, the last len(s); and refuses an axis
outside the example, where a negative one would reach the batch axis). A size or norm that
differs between examples cannot be batched (the result's shape or scale would differ):
rt.cannot_batch raises; axes that differ are refused by the vmap pass.
"""
from .core import batch, batch_lanes, fwd, nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


# ---------------------------------------------------------------- one-dimensional transforms

@rev("np.fft.fft")
def fft(dout, out, a, n=None, axis=-1, norm=None):
    da = rt.fft_adj(dout, np.shape(a), n, axis, norm)


@fwd("np.fft.fft")
def fft_fwd(out, a, n=None, axis=-1, norm=None):
    dout = np.fft.fft(da, n, axis, norm)


@batch("np.fft.fft")
def fft_batch(a, n=None, axis=-1, norm=None):
    if n_batched or norm_batched:
        out = rt.cannot_batch("np.fft.fft", "its n or norm differs between examples")
    else:
        out = np.fft.fft(a, n, rt.lane_fft_axes(axis, a), norm)


@rev("rt.fft_adj")
def fft_adj(dout, out, g, shape, n=None, axis=-1, norm=None):
    dg = np.fft.fft(dout, n, axis, norm)


@fwd("rt.fft_adj")
def fft_adj_fwd(out, g, shape, n=None, axis=-1, norm=None):
    dout = rt.fft_adj(dg, shape, n, axis, norm)


@batch("rt.fft_adj")
def fft_adj_batch(g, shape, n=None, axis=-1, norm=None):
    if n_batched or norm_batched:
        out = rt.cannot_batch("np.fft.fft", "its n or norm differs between examples")
    elif g_batched:
        out = rt.fft_adj(g, rt.lane_shape(shape, batch_size), n,
                         rt.lane_fft_axes(axis, g), norm)
    else:
        out = rt.broadcast_batch(rt.fft_adj(g, shape, n, axis, norm), batch_size)


@rev("np.fft.ifft")
def ifft(dout, out, a, n=None, axis=-1, norm=None):
    da = rt.ifft_adj(dout, np.shape(a), n, axis, norm)


@fwd("np.fft.ifft")
def ifft_fwd(out, a, n=None, axis=-1, norm=None):
    dout = np.fft.ifft(da, n, axis, norm)


@batch("np.fft.ifft")
def ifft_batch(a, n=None, axis=-1, norm=None):
    if n_batched or norm_batched:
        out = rt.cannot_batch("np.fft.ifft", "its n or norm differs between examples")
    else:
        out = np.fft.ifft(a, n, rt.lane_fft_axes(axis, a), norm)


@rev("rt.ifft_adj")
def ifft_adj(dout, out, g, shape, n=None, axis=-1, norm=None):
    dg = np.fft.ifft(dout, n, axis, norm)


@fwd("rt.ifft_adj")
def ifft_adj_fwd(out, g, shape, n=None, axis=-1, norm=None):
    dout = rt.ifft_adj(dg, shape, n, axis, norm)


@batch("rt.ifft_adj")
def ifft_adj_batch(g, shape, n=None, axis=-1, norm=None):
    if n_batched or norm_batched:
        out = rt.cannot_batch("np.fft.ifft", "its n or norm differs between examples")
    elif g_batched:
        out = rt.ifft_adj(g, rt.lane_shape(shape, batch_size), n,
                          rt.lane_fft_axes(axis, g), norm)
    else:
        out = rt.broadcast_batch(rt.ifft_adj(g, shape, n, axis, norm), batch_size)


# rfft takes real input (numpy refuses complex): its adjoint is real. rt.rfft_adj's result is
# real too, so its own reverse rule reads only the real part of the adjoint it gets.
@rev("np.fft.rfft")
def rfft(dout, out, a, n=None, axis=-1, norm=None):
    da = rt.rfft_adj(dout, np.shape(a), n, axis, norm)


@fwd("np.fft.rfft")
def rfft_fwd(out, a, n=None, axis=-1, norm=None):
    dout = np.fft.rfft(da, n, axis, norm)


@batch("np.fft.rfft")
def rfft_batch(a, n=None, axis=-1, norm=None):
    if n_batched or norm_batched:
        out = rt.cannot_batch("np.fft.rfft", "its n or norm differs between examples")
    else:
        out = np.fft.rfft(a, n, rt.lane_fft_axes(axis, a), norm)


@rev("rt.rfft_adj")
def rfft_adj(dout, out, g, shape, n=None, axis=-1, norm=None):
    dg = np.fft.rfft(np.real(dout), n, axis, norm)


@fwd("rt.rfft_adj")
def rfft_adj_fwd(out, g, shape, n=None, axis=-1, norm=None):
    dout = rt.rfft_adj(dg, shape, n, axis, norm)


@batch("rt.rfft_adj")
def rfft_adj_batch(g, shape, n=None, axis=-1, norm=None):
    if n_batched or norm_batched:
        out = rt.cannot_batch("np.fft.rfft", "its n or norm differs between examples")
    elif g_batched:
        out = rt.rfft_adj(g, rt.lane_shape(shape, batch_size), n,
                          rt.lane_fft_axes(axis, g), norm)
    else:
        out = rt.broadcast_batch(rt.rfft_adj(g, shape, n, axis, norm), batch_size)


# irfft's result is real: rt.irfft_adj reads only the real part of the adjoint it gets.
@rev("np.fft.irfft")
def irfft(dout, out, a, n=None, axis=-1, norm=None):
    da = rt.irfft_adj(dout, np.shape(a), n, axis, norm)


@fwd("np.fft.irfft")
def irfft_fwd(out, a, n=None, axis=-1, norm=None):
    dout = np.fft.irfft(da, n, axis, norm)


@batch("np.fft.irfft")
def irfft_batch(a, n=None, axis=-1, norm=None):
    if n_batched or norm_batched:
        out = rt.cannot_batch("np.fft.irfft", "its n or norm differs between examples")
    else:
        out = np.fft.irfft(a, n, rt.lane_fft_axes(axis, a), norm)


@rev("rt.irfft_adj")
def irfft_adj(dout, out, g, shape, n=None, axis=-1, norm=None):
    dg = np.fft.irfft(dout, n, axis, norm)


@fwd("rt.irfft_adj")
def irfft_adj_fwd(out, g, shape, n=None, axis=-1, norm=None):
    dout = rt.irfft_adj(dg, shape, n, axis, norm)


@batch("rt.irfft_adj")
def irfft_adj_batch(g, shape, n=None, axis=-1, norm=None):
    if n_batched or norm_batched:
        out = rt.cannot_batch("np.fft.irfft", "its n or norm differs between examples")
    elif g_batched:
        out = rt.irfft_adj(g, rt.lane_shape(shape, batch_size), n,
                           rt.lane_fft_axes(axis, g), norm)
    else:
        out = rt.broadcast_batch(rt.irfft_adj(g, shape, n, axis, norm), batch_size)


# ---------------------------------------------------------------- n-dimensional transforms

@rev("np.fft.fftn")
def fftn(dout, out, a, s=None, axes=None, norm=None):
    da = rt.fftn_adj(dout, np.shape(a), s, axes, norm)


@fwd("np.fft.fftn")
def fftn_fwd(out, a, s=None, axes=None, norm=None):
    dout = np.fft.fftn(da, s, axes, norm)


@batch("np.fft.fftn")
def fftn_batch(a, s=None, axes=None, norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.fftn", "its s or norm differs between examples")
    else:
        out = np.fft.fftn(a, s, rt.lane_fft_axes(axes, a, s), norm)


@rev("np.fft.fft2")
def fft2(dout, out, a, s=None, axes=(-2, -1), norm=None):
    da = rt.fftn_adj(dout, np.shape(a), s, axes, norm)


@fwd("np.fft.fft2")
def fft2_fwd(out, a, s=None, axes=(-2, -1), norm=None):
    dout = np.fft.fft2(da, s, axes, norm)


@batch("np.fft.fft2")
def fft2_batch(a, s=None, axes=(-2, -1), norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.fft2", "its s or norm differs between examples")
    else:
        out = np.fft.fft2(a, s, rt.lane_fft_axes(axes, a, s), norm)


@rev("rt.fftn_adj")
def fftn_adj(dout, out, g, shape, s=None, axes=None, norm=None):
    dg = np.fft.fftn(dout, s, axes, norm)


@fwd("rt.fftn_adj")
def fftn_adj_fwd(out, g, shape, s=None, axes=None, norm=None):
    dout = rt.fftn_adj(dg, shape, s, axes, norm)


@batch("rt.fftn_adj")
def fftn_adj_batch(g, shape, s=None, axes=None, norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.fftn", "its s or norm differs between examples")
    elif g_batched:
        out = rt.fftn_adj(g, rt.lane_shape(shape, batch_size), s,
                          rt.lane_fft_axes(axes, g, s), norm)
    else:
        out = rt.broadcast_batch(rt.fftn_adj(g, shape, s, axes, norm), batch_size)


@rev("np.fft.ifftn")
def ifftn(dout, out, a, s=None, axes=None, norm=None):
    da = rt.ifftn_adj(dout, np.shape(a), s, axes, norm)


@fwd("np.fft.ifftn")
def ifftn_fwd(out, a, s=None, axes=None, norm=None):
    dout = np.fft.ifftn(da, s, axes, norm)


@batch("np.fft.ifftn")
def ifftn_batch(a, s=None, axes=None, norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.ifftn", "its s or norm differs between examples")
    else:
        out = np.fft.ifftn(a, s, rt.lane_fft_axes(axes, a, s), norm)


@rev("np.fft.ifft2")
def ifft2(dout, out, a, s=None, axes=(-2, -1), norm=None):
    da = rt.ifftn_adj(dout, np.shape(a), s, axes, norm)


@fwd("np.fft.ifft2")
def ifft2_fwd(out, a, s=None, axes=(-2, -1), norm=None):
    dout = np.fft.ifft2(da, s, axes, norm)


@batch("np.fft.ifft2")
def ifft2_batch(a, s=None, axes=(-2, -1), norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.ifft2", "its s or norm differs between examples")
    else:
        out = np.fft.ifft2(a, s, rt.lane_fft_axes(axes, a, s), norm)


@rev("rt.ifftn_adj")
def ifftn_adj(dout, out, g, shape, s=None, axes=None, norm=None):
    dg = np.fft.ifftn(dout, s, axes, norm)


@fwd("rt.ifftn_adj")
def ifftn_adj_fwd(out, g, shape, s=None, axes=None, norm=None):
    dout = rt.ifftn_adj(dg, shape, s, axes, norm)


@batch("rt.ifftn_adj")
def ifftn_adj_batch(g, shape, s=None, axes=None, norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.ifftn", "its s or norm differs between examples")
    elif g_batched:
        out = rt.ifftn_adj(g, rt.lane_shape(shape, batch_size), s,
                           rt.lane_fft_axes(axes, g, s), norm)
    else:
        out = rt.broadcast_batch(rt.ifftn_adj(g, shape, s, axes, norm), batch_size)


@rev("np.fft.rfftn")
def rfftn(dout, out, a, s=None, axes=None, norm=None):
    da = rt.rfftn_adj(dout, np.shape(a), s, axes, norm)


@fwd("np.fft.rfftn")
def rfftn_fwd(out, a, s=None, axes=None, norm=None):
    dout = np.fft.rfftn(da, s, axes, norm)


@batch("np.fft.rfftn")
def rfftn_batch(a, s=None, axes=None, norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.rfftn", "its s or norm differs between examples")
    else:
        out = np.fft.rfftn(a, s, rt.lane_fft_axes(axes, a, s), norm)


@rev("np.fft.rfft2")
def rfft2(dout, out, a, s=None, axes=(-2, -1), norm=None):
    da = rt.rfftn_adj(dout, np.shape(a), s, axes, norm)


@fwd("np.fft.rfft2")
def rfft2_fwd(out, a, s=None, axes=(-2, -1), norm=None):
    dout = np.fft.rfft2(da, s, axes, norm)


@batch("np.fft.rfft2")
def rfft2_batch(a, s=None, axes=(-2, -1), norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.rfft2", "its s or norm differs between examples")
    else:
        out = np.fft.rfft2(a, s, rt.lane_fft_axes(axes, a, s), norm)


@rev("rt.rfftn_adj")
def rfftn_adj(dout, out, g, shape, s=None, axes=None, norm=None):
    dg = np.fft.rfftn(np.real(dout), s, axes, norm)


@fwd("rt.rfftn_adj")
def rfftn_adj_fwd(out, g, shape, s=None, axes=None, norm=None):
    dout = rt.rfftn_adj(dg, shape, s, axes, norm)


@batch("rt.rfftn_adj")
def rfftn_adj_batch(g, shape, s=None, axes=None, norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.rfftn", "its s or norm differs between examples")
    elif g_batched:
        out = rt.rfftn_adj(g, rt.lane_shape(shape, batch_size), s,
                           rt.lane_fft_axes(axes, g, s), norm)
    else:
        out = rt.broadcast_batch(rt.rfftn_adj(g, shape, s, axes, norm), batch_size)


@rev("np.fft.irfftn")
def irfftn(dout, out, a, s=None, axes=None, norm=None):
    da = rt.irfftn_adj(dout, np.shape(a), s, axes, norm)


@fwd("np.fft.irfftn")
def irfftn_fwd(out, a, s=None, axes=None, norm=None):
    dout = np.fft.irfftn(da, s, axes, norm)


@batch("np.fft.irfftn")
def irfftn_batch(a, s=None, axes=None, norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.irfftn", "its s or norm differs between examples")
    else:
        out = np.fft.irfftn(a, s, rt.lane_fft_axes(axes, a, s), norm)


@rev("np.fft.irfft2")
def irfft2(dout, out, a, s=None, axes=(-2, -1), norm=None):
    da = rt.irfftn_adj(dout, np.shape(a), s, axes, norm)


@fwd("np.fft.irfft2")
def irfft2_fwd(out, a, s=None, axes=(-2, -1), norm=None):
    dout = np.fft.irfft2(da, s, axes, norm)


@batch("np.fft.irfft2")
def irfft2_batch(a, s=None, axes=(-2, -1), norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.irfft2", "its s or norm differs between examples")
    else:
        out = np.fft.irfft2(a, s, rt.lane_fft_axes(axes, a, s), norm)


@rev("rt.irfftn_adj")
def irfftn_adj(dout, out, g, shape, s=None, axes=None, norm=None):
    dg = np.fft.irfftn(dout, s, axes, norm)


@fwd("rt.irfftn_adj")
def irfftn_adj_fwd(out, g, shape, s=None, axes=None, norm=None):
    dout = rt.irfftn_adj(dg, shape, s, axes, norm)


@batch("rt.irfftn_adj")
def irfftn_adj_batch(g, shape, s=None, axes=None, norm=None):
    if s_batched or norm_batched:
        out = rt.cannot_batch("np.fft.irfftn", "its s or norm differs between examples")
    elif g_batched:
        out = rt.irfftn_adj(g, rt.lane_shape(shape, batch_size), s,
                            rt.lane_fft_axes(axes, g, s), norm)
    else:
        out = rt.broadcast_batch(rt.irfftn_adj(g, shape, s, axes, norm), batch_size)


# the axes of each example as axes of a batched array: the same for every example
nondiff("rt.lane_fft_axes")
batch_lanes("rt.lane_fft_axes", ("x",), out_batched=False)


# ---------------------------------------------------------------- shifts

# fftshift rolls each axis by half its length (rounded down), ifftshift back: each is the
# other's inverse, and rolls are orthogonal, so each is the other's transpose.
@rev("np.fft.fftshift")
def fftshift(dout, out, x, axes=None):
    dx = np.fft.ifftshift(dout, axes)


@fwd("np.fft.fftshift")
def fftshift_fwd(out, x, axes=None):
    dout = np.fft.fftshift(dx, axes)


@batch("np.fft.fftshift")
def fftshift_batch(x, axes=None):
    out = np.fft.fftshift(x, rt.lane_fft_axes(axes, x))


@rev("np.fft.ifftshift")
def ifftshift(dout, out, x, axes=None):
    dx = np.fft.fftshift(dout, axes)


@fwd("np.fft.ifftshift")
def ifftshift_fwd(out, x, axes=None):
    dout = np.fft.ifftshift(dx, axes)


@batch("np.fft.ifftshift")
def ifftshift_batch(x, axes=None):
    out = np.fft.ifftshift(x, rt.lane_fft_axes(axes, x))
