"""tp.signal.convolve: autograd's tensor convolution (autograd.scipy.signal.convolve), with
rules for every transformation.

    from transpile.signal import convolve
    conv = convolve(images, kernels, axes=([2, 3], [2, 3]), dot_axes=([1], [0]), mode="valid")

Along each pair of `axes` (one of A, one of B) it is the convolution, cut to `mode`'s window
('full', 'valid': the overlap, 'same': centred, A's length); along each pair of `dot_axes`
a sum of products (a tensordot); the result's axes are A's other axes, B's other axes,
then the convolved ones. With `axes=None` every axis is convolved, as scipy.signal.convolve
does (without its `method`). In plain code and transformed code alike it runs
rt.tensor_convolve (runtime/signal.py: one einsum over sliding windows).
"""
import numpy as np

import runtime as rt

from .frontend.calls import CALLED_INSTEAD

__all__ = ["convolve"]


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full"):
    """The convolution of A and B along `axes`, summed along `dot_axes` (see the module)."""
    return rt.tensor_convolve(A, B, axes, dot_axes, mode)


def scipy_convolve(in1, in2, mode="full", method="auto"):
    """scipy.signal.convolve in transformed code: every axis convolved, scipy's checks
    (`method` only picks scipy's algorithm; the result is the same up to rounding)."""
    if np.ndim(in1) != np.ndim(in2):
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in ("full", "valid", "same"):
        raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
    if mode == "valid":
        first_larger, second_larger = True, True
        for n1, n2 in zip(np.shape(in1), np.shape(in2)):
            first_larger = first_larger and n1 >= n2
            second_larger = second_larger and n2 >= n1
        if not (first_larger or second_larger):
            raise ValueError("For 'valid' mode, one must be at least as large as the other "
                             "in every dimension")
    return rt.tensor_convolve(in1, in2, None, None, mode)


def scipy_correlate(in1, in2, mode="full", method="auto"):
    """scipy.signal.correlate: the convolution with in2 reversed along every axis and
    conjugated (scipy's own reading for method 'fft' and 'auto'; 'direct' is the same)."""
    if np.ndim(in1) == 0 and np.ndim(in2) == 0:
        return in1 * np.conj(in2)
    return scipy_convolve(in1, np.conj(np.flip(in2)), mode, method)


def scipy_fftconvolve(in1, in2, mode="full", axes=None):
    """scipy.signal.fftconvolve (and oaconvolve) over every axis: the convolution."""
    if axes is not None:
        raise rt.TransformError("scipy.signal.fftconvolve with axes= is not supported in "
                                "transformed code.\n  hint: use tp.signal.convolve(A, B, "
                                "axes=...) or convolve every axis.")
    return scipy_convolve(in1, in2, mode)


def scipy_convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """scipy.signal.convolve2d with the zero-filled boundary (its default)."""
    if boundary != "fill" or np.any(np.not_equal(fillvalue, 0)):
        raise rt.TransformError("scipy.signal.convolve2d/correlate2d in transformed code "
                                "take boundary='fill' with fillvalue=0 only.\n  hint: pad "
                                "the input with np.pad first.")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError("convolve2d inputs must both be 2-D arrays")
    return scipy_convolve(in1, in2, mode)


def scipy_correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """scipy.signal.correlate2d with the zero-filled boundary (its default). It is not
    correlate's 2-d case: its 'same' window starts at k // 2 of the full result (correlate's
    at (k - 1) // 2), and a 'valid' in2 larger than in1 is the reversed correlation of in2
    with in1 (scipy swaps them, conjugating in1)."""
    reversed2 = np.conj(np.flip(in2))
    if mode == "valid" and np.ndim(in1) == 2 and np.ndim(in2) == 2 and \
            not (np.shape(in1)[0] >= np.shape(in2)[0] and np.shape(in1)[1] >= np.shape(in2)[1]):
        return np.flip(scipy_convolve2d(in2, np.conj(np.flip(in1)), mode, boundary,
                                        fillvalue))
    if mode != "same":
        return scipy_convolve2d(in1, reversed2, mode, boundary, fillvalue)
    full = scipy_convolve2d(in1, reversed2, "full", boundary, fillvalue)
    (n0, n1), (k0, k1) = np.shape(in1), np.shape(in2)
    return full[k0 // 2:k0 // 2 + n0, k1 // 2:k1 // 2 + n1]


try:
    import scipy.signal as _scipy_signal
except ImportError:        # scipy is optional
    _scipy_signal = None
if _scipy_signal is not None:
    for _scipy_fn, _written in ((_scipy_signal.convolve, scipy_convolve),
                                (_scipy_signal.correlate, scipy_correlate),
                                (_scipy_signal.fftconvolve, scipy_fftconvolve),
                                (_scipy_signal.oaconvolve, scipy_fftconvolve),
                                (_scipy_signal.convolve2d, scipy_convolve2d),
                                (_scipy_signal.correlate2d, scipy_correlate2d)):
        CALLED_INSTEAD[id(_scipy_fn)] = (_scipy_fn, _written)
