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


try:
    import scipy.signal as _scipy_signal
except ImportError:        # scipy is optional
    _scipy_signal = None
if _scipy_signal is not None:
    CALLED_INSTEAD[id(_scipy_signal.convolve)] = (_scipy_signal.convolve, scipy_convolve)
