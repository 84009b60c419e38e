"""scipy.special functions (registered only when scipy is installed).

Generated modules import only numpy and `runtime`, so a scipy function is spelled through
its re-export in `runtime` (`rt.logsumexp` is scipy.special.logsumexp itself): the first
spelling given to `rev` is the one generated code uses.
"""
from .core import batch, fwd, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("rt.logsumexp", "scipy.special.logsumexp")
def logsumexp(dout, out, a, axis=None, b=None, keepdims=False, return_sign=False):
    w = rt.expand(dout, a, axis, keepdims) * np.exp(a - rt.expand(out, a, axis, keepdims))
    da = rt.weight(w, b, return_sign)
    db = rt.unbroadcast(w, b)


@fwd("rt.logsumexp", "scipy.special.logsumexp")
def logsumexp_fwd(out, a, axis=None, b=None, keepdims=False, return_sign=False):
    w = np.exp(a - rt.expand(out, a, axis, keepdims))
    dout = np.sum(rt.weight(w, b, return_sign) * da, axis, keepdims=keepdims)
    dout = np.sum(w * db, axis, keepdims=keepdims)


@batch("rt.logsumexp", "scipy.special.logsumexp")
def logsumexp_batch(a, axis=None, b=None, keepdims=False, return_sign=False):
    if not a_batched:
        out = rt.logsumexp(rt.broadcast_batch(a, batch_size), rt.lane_axes(axis, np.ndim(a)),
                           rt.align(b, a), keepdims, return_sign)
    elif b_batched:
        out = rt.logsumexp(a, rt.lane_axis(axis, a), rt.align_lanes(b, a), keepdims,
                           return_sign)
    else:
        out = rt.logsumexp(a, rt.lane_axis(axis, a), b, keepdims, return_sign)


@rev("rt.weight")
def weight(dout, out, w, b=None, return_sign=False):
    dw = rt.weight(dout, b)
    db = rt.unbroadcast(dout * w, b)


@fwd("rt.weight")
def weight_fwd(out, w, b=None, return_sign=False):
    dout = rt.weight(dw, b)
    dout = rt.broadcast_like(w * db, out)


@batch("rt.weight")
def weight_batch(w, b=None, return_sign=False):
    if not w_batched:
        out = rt.weight(w, rt.align(b, w), return_sign)
    elif b_batched:
        out = rt.weight(w, rt.align_lanes(b, w), return_sign)
    else:
        out = rt.weight(w, b, return_sign)
