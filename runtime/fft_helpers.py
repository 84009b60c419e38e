"""Adjoints of numpy.fft (generated code calls them as rt.fft_adj, rt.rfftn_adj, ...).

Each `<name>_adj(g, shape, ...)` is the transpose, without conjugation (JAX's convention), of
`np.fft.<name>(a, ...)` for an `a` of shape `shape`, taking the same size (`n`/`s`), axis
and `norm` arguments. Its rules in transpile/rules/fft.py are the numpy function again, so
derivatives of any order stay FFTs.

numpy computes an n-dimensional transform as a chain of 1-D ones (numpy.fft's
`_raw_fftnd`, `rfftn`, `irfftn`), each of which first truncates or zero-pads its axis to
its `n` points. The adjoint runs the transposes of that chain backwards:

  fft, ifft   the DFT matrix is symmetric: the transpose is the same transform with the same
              norm, then the padding undone (cut back) or the truncation undone (zeros).
  rfft        real in, the first n//2 + 1 bins out: Re(sum_k g_k e^(-2 pi i jk/n)), which is
              irfft of conj(g), each bin divided by the number of bins of the full spectrum
              it stands for (1 for bin 0 and, n even, bin n/2; 2 for the others), with the
              opposite norm (irfft's scale of one norm is rfft's of the other).
  irfft       complex in, real out (it reads the imaginary parts of bins 0 and n/2 as 0):
              those bin weights times conj(rfft(Re g)), with the opposite norm.
"""
import numbers

import numpy as np

from .backend import array_module

_AxisError = getattr(np, "exceptions", np).AxisError

# irfft's scale under one norm is rfft's under the other ("ortho" is its own opposite)
_OPPOSITE_NORM = {None: "forward", "backward": "forward", "ortho": "ortho",
                  "forward": "backward"}


def _fit(x, size, axis, xp):
    """`x` cut or zero-padded to `size` points along `axis` (what numpy's `n` does)."""
    axis = axis % x.ndim
    have = x.shape[axis]
    if have > size:
        return x[(slice(None),) * axis + (slice(0, size),)]
    if have < size:
        widths = [(0, 0)] * x.ndim
        widths[axis] = (0, size - have)
        return xp.pad(x, widths)
    return x


def _bin_weights(n, x, axis, xp):
    """How many bins of the full n-point spectrum each of the n//2 + 1 bins of a real
    transform stands for, shaped to broadcast along `axis` of `x`."""
    w = xp.full(n // 2 + 1, 2.0, dtype=xp.real(x).dtype)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return xp.reshape(w, (-1,) + (1,) * (x.ndim - 1 - axis % x.ndim))


def _step_adjoint(kind, g, axis, m, n, norm, xp):
    """The transpose of one 1-D transform `kind` that took `m` points along `axis` to `n`."""
    if kind == "fft":
        t = xp.fft.fft(g, None, axis, norm)
    elif kind == "ifft":
        t = xp.fft.ifft(g, None, axis, norm)
    elif kind == "rfft":
        t = xp.fft.irfft(xp.conj(g) / _bin_weights(n, g, axis, xp), n, axis,
                         _OPPOSITE_NORM[norm])
    else:   # irfft
        t = xp.conj(xp.fft.rfft(xp.real(g), None, axis, _OPPOSITE_NORM[norm]))
        t = t * _bin_weights(n, t, axis, xp)
    return _fit(t, m, axis, xp)


def _chain(shape, plan):
    """(kind, axis, m, n) for each 1-D transform of `plan` ((kind, axis, n or None) in the
    order numpy applies them), following the length of each axis along the chain."""
    lengths = list(shape)
    steps = []
    for kind, axis, n in plan:
        m = lengths[axis]
        if n is None:
            n = 2 * (m - 1) if kind == "irfft" else m
        steps.append((kind, axis, m, n))
        lengths[axis] = n // 2 + 1 if kind == "rfft" else n
    return steps


def _nd_sizes(shape, s, axes, inverse_real):
    """numpy's `s` and `axes` of an n-dimensional transform, resolved for an input of shape
    `shape` (numpy.fft's `_cook_nd_args`)."""
    if axes is None:
        axes = tuple(range(-len(s), 0)) if s is not None else tuple(range(len(shape)))
    axes = (axes,) if isinstance(axes, numbers.Integral) else tuple(axes)
    if s is None:
        s = [shape[a] for a in axes]
        if inverse_real:
            s[-1] = 2 * (shape[axes[-1]] - 1)
    s = [shape[a] if size == -1 else size for size, a in zip(s, axes)]
    return s, axes


def _adjoint(g, shape, plan, norm):
    xp = array_module(g)
    g = xp.asarray(g)
    for kind, axis, m, n in reversed(_chain(shape, plan)):
        g = _step_adjoint(kind, g, axis, m, n, norm, xp)
    return g


def fft_adj(g, shape, n=None, axis=-1, norm=None):
    """The adjoint of np.fft.fft(a, n, axis, norm) for `a` of shape `shape`."""
    return _adjoint(g, shape, [("fft", axis, n)], norm)


def ifft_adj(g, shape, n=None, axis=-1, norm=None):
    """The adjoint of np.fft.ifft(a, n, axis, norm) for `a` of shape `shape`."""
    return _adjoint(g, shape, [("ifft", axis, n)], norm)


def rfft_adj(g, shape, n=None, axis=-1, norm=None):
    """The adjoint of np.fft.rfft(a, n, axis, norm) for `a` of shape `shape` (real)."""
    return _adjoint(g, shape, [("rfft", axis, n)], norm)


def irfft_adj(g, shape, n=None, axis=-1, norm=None):
    """The adjoint of np.fft.irfft(a, n, axis, norm) for `a` of shape `shape` (it reads
    only the real part of `g`, the result of irfft being real)."""
    return _adjoint(g, shape, [("irfft", axis, n)], norm)


def fftn_adj(g, shape, s=None, axes=None, norm=None):
    """The adjoint of np.fft.fftn (and fft2) of `a` of shape `shape`."""
    s, axes = _nd_sizes(shape, s, axes, False)
    return _adjoint(g, shape, [("fft", a, n) for n, a in zip(s[::-1], axes[::-1])], norm)


def ifftn_adj(g, shape, s=None, axes=None, norm=None):
    """The adjoint of np.fft.ifftn (and ifft2) of `a` of shape `shape`."""
    s, axes = _nd_sizes(shape, s, axes, False)
    return _adjoint(g, shape, [("ifft", a, n) for n, a in zip(s[::-1], axes[::-1])], norm)


def rfftn_adj(g, shape, s=None, axes=None, norm=None):
    """The adjoint of np.fft.rfftn (and rfft2) of real `a` of shape `shape`: rfft along the
    last of `axes`, then fft along the others, last to first."""
    s, axes = _nd_sizes(shape, s, axes, False)
    plan = [("rfft", axes[-1], s[-1])] + [("fft", a, n) for n, a in zip(s[-2::-1],
                                                                      axes[-2::-1])]
    return _adjoint(g, shape, plan, norm)


def irfftn_adj(g, shape, s=None, axes=None, norm=None):
    """The adjoint of np.fft.irfftn (and irfft2) of `a` of shape `shape`: ifft along each
    of `axes` but the last, first to last, then irfft along the last. Reads only the real
    part of `g`."""
    s, axes = _nd_sizes(shape, s, axes, True)
    plan = [("ifft", a, n) for n, a in zip(s[:-1], axes[:-1])] + [("irfft", axes[-1], s[-1])]
    return _adjoint(g, shape, plan, norm)


def lane_fft_axes(axes, x, s=None, outer=0):
    """An `axis` or `axes` argument of a transform of each example, as axes of batched `x`:
    numpy's None means every axis or, with `s` given, the last len(s) axes. An axis outside
    the example raises numpy's error (a negative one would otherwise reach the batch axis)."""
    rank = np.ndim(x) - 1 - outer
    if axes is None:
        axes = tuple(range(-len(s), 0)) if s is not None else tuple(range(rank))
    one = isinstance(axes, numbers.Integral)
    lanes = []
    for axis in (axes,) if one else axes:
        if not -rank <= axis < rank:
            raise _AxisError(axis, rank)
        lanes.append(axis + 1 if axis >= 0 else axis)
    return lanes[0] if one else tuple(lanes)
