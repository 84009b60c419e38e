"""Shape manipulation: the adjoint undoes the reshaping."""
from .core import nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("np.reshape", view=True)
def reshape(dout, out, a, shape):
    da = np.reshape(dout, np.shape(a))


@rev("np.transpose", view=True)
def transpose(dout, out, a, axes=None):
    da = np.transpose(dout, rt.inverse_axes(axes))


nondiff("np.shape", "np.ndim", "np.size", "len", "range", "int", "bool", "isinstance",
        "rt.dtype_of", "np.arange", "np.zeros", "np.ones", "np.empty", "np.full", "np.eye",
        "np.identity", "np.linspace", "rt.dict_keys", "np.result_type", "type", "slice",
        "reversed", "rt.reversed_range")
nondiff("print", side_effect=True)
