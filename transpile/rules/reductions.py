"""Reductions (sum, mean, max, ...): reverse rules broadcast the adjoint back."""
from .core import nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("np.sum", "sum")
def sum(dout, out, a, axis=None, keepdims=False):  # noqa: A001 - numpy's name
    da = rt.expand(dout, a, axis, keepdims)


@rev("np.mean")
def mean(dout, out, a, axis=None, keepdims=False):
    da = rt.expand(dout, a, axis, keepdims) / rt.reduced_size(a, axis)


nondiff("np.argmax", "np.argmin", "np.argsort", "np.any", "np.all", "np.count_nonzero",
        "np.nonzero", "np.searchsorted")
