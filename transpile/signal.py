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
import runtime as rt

__all__ = ["convolve"]


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full"):
    """The convolution of A and B along `axes`, summed along `dot_axes` (see the module)."""
    return rt.tensor_convolve(A, B, axes, dot_axes, mode)
