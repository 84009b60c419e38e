"""Reductions (sum, mean, max, var, ...) and scans: reverse rules broadcast the adjoint back,
forward rules reduce the tangent the same way as the value.

Parameters follow numpy's positional order. numpy's own `out=` parameter cannot be spelled
in a template (`out` is the primal output), so it appears as the placeholder `out_`: it keeps
later positional arguments (keepdims, ddof) in their numpy positions. A keyword `out=` is
rejected, as writing into an array is not differentiable.

Known limits: prod and cumprod divide by the input (zeros give nan, as in autograd); the
derivative of max/min is split evenly between ties.
"""
from .core import batch, fwd, nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("np.sum")
def sum(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):  # noqa: A001
    da = rt.expand(dout, a, axis, keepdims)


@fwd("np.sum")
def sum_fwd(out, a, axis=None, dtype=None, out_=None, keepdims=False):
    dout = np.sum(da, axis, keepdims=keepdims)


@rev("sum")
def total(dout, out, iterable, start=0):
    """Python's builtin sum of a list/tuple of arrays (or over the first axis of an array)."""
    diterable = rt.sum_adj(dout, iterable)
    dstart = rt.unbroadcast(dout, start)


@fwd("sum")
def total_fwd(out, iterable, start=0):
    dout = rt.broadcast_like(sum(diterable), out)
    dout = rt.broadcast_like(dstart, out)


@rev("rt.sum_adj", container_out=True)
def sum_adj(dout, out, g, xs):
    dg = rt.sum_adj_t(dout, g)


@fwd("rt.sum_adj")
def sum_adj_fwd(out, g, xs):
    dout = rt.sum_adj(dg, xs)


@rev("rt.sum_adj_t")
def sum_adj_t(dout, out, d, g):
    dd = rt.sum_adj(dout, d)


@fwd("rt.sum_adj_t")
def sum_adj_t_fwd(out, d, g):
    dout = rt.sum_adj_t(dd, g)


@rev("np.mean")
def mean(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):
    da = rt.expand(dout, a, axis, keepdims) / rt.reduced_size(a, axis)


@fwd("np.mean")
def mean_fwd(out, a, axis=None, dtype=None, out_=None, keepdims=False):
    dout = np.mean(da, axis, keepdims=keepdims)


@rev("np.prod")
def prod(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):
    da = rt.expand(dout * out, a, axis, keepdims) / a


@fwd("np.prod")
def prod_fwd(out, a, axis=None, dtype=None, out_=None, keepdims=False):
    dout = np.sum(da * rt.expand(out, a, axis, keepdims) / a, axis, keepdims=keepdims)


@rev("np.max", "np.amax")
def amax(dout, out, a, axis=None, out_=None, keepdims=False):
    da = rt.expand(dout, a, axis, keepdims) * rt.extremum_share(a, out, axis, keepdims)


@fwd("np.max", "np.amax")
def amax_fwd(out, a, axis=None, out_=None, keepdims=False):
    dout = np.sum(da * rt.extremum_share(a, out, axis, keepdims), axis, keepdims=keepdims)


@rev("np.min", "np.amin")
def amin(dout, out, a, axis=None, out_=None, keepdims=False):
    da = rt.expand(dout, a, axis, keepdims) * rt.extremum_share(a, out, axis, keepdims)


@fwd("np.min", "np.amin")
def amin_fwd(out, a, axis=None, out_=None, keepdims=False):
    dout = np.sum(da * rt.extremum_share(a, out, axis, keepdims), axis, keepdims=keepdims)


@rev("np.var")
def var(dout, out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis, keepdims=True)
    da = rt.expand(dout, a, axis, keepdims) * centered * (2.0 / (rt.reduced_size(a, axis) - ddof))


@fwd("np.var")
def var_fwd(out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis, keepdims=True)
    scale = 2.0 / (rt.reduced_size(a, axis) - ddof)
    dout = np.sum(da * centered, axis, keepdims=keepdims) * scale


@rev("np.std")
def std(dout, out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis, keepdims=True)
    da = rt.expand(dout / out, a, axis, keepdims) * centered / (rt.reduced_size(a, axis) - ddof)


@fwd("np.std")
def std_fwd(out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis, keepdims=True)
    n = rt.reduced_size(a, axis) - ddof
    dout = np.sum(da * centered, axis, keepdims=keepdims) / (out * n)


@rev("np.cumsum")
def cumsum(dout, out, a, axis=None, dtype=None, out_=None):
    da = rt.cumsum_adj(dout, a, axis)


@fwd("np.cumsum")
def cumsum_fwd(out, a, axis=None, dtype=None, out_=None):
    dout = np.cumsum(da, axis)


@rev("rt.cumsum_adj")
def cumsum_adj(dout, out, g, a, axis=None):
    dg = np.cumsum(dout, axis)


@fwd("rt.cumsum_adj")
def cumsum_adj_fwd(out, g, a, axis=None):
    dout = rt.cumsum_adj(dg, a, axis)


@rev("np.cumprod")
def cumprod(dout, out, a, axis=None, dtype=None, out_=None):
    da = rt.cumsum_adj(dout * out, a, axis) / a


@fwd("np.cumprod")
def cumprod_fwd(out, a, axis=None, dtype=None, out_=None):
    dout = out * np.cumsum(da / a, axis)


nondiff("np.argmax", "np.argmin", "np.argsort", "np.any", "np.all", "np.count_nonzero",
        "np.nonzero", "np.searchsorted", "np.argwhere", "np.flatnonzero", "np.unique",
        "np.isclose", "np.allclose", "np.array_equal", "rt.extremum_share")


# ---------------------------------------------------------------- batching (vmap)
# The batch is axis 0: per-example axes shift by one; axis=None means every axis but it.

@batch("np.sum")
def sum_batch(a, axis=None, dtype=None, out_=None, keepdims=False):
    out = np.sum(a, axis=rt.lane_axis(axis, a), dtype=dtype, keepdims=keepdims)


@batch("np.mean")
def mean_batch(a, axis=None, dtype=None, out_=None, keepdims=False):
    out = np.mean(a, axis=rt.lane_axis(axis, a), dtype=dtype, keepdims=keepdims)


@batch("np.prod")
def prod_batch(a, axis=None, dtype=None, out_=None, keepdims=False):
    out = np.prod(a, axis=rt.lane_axis(axis, a), dtype=dtype, keepdims=keepdims)


@batch("np.max", "np.amax")
def amax_batch(a, axis=None, out_=None, keepdims=False):
    out = np.max(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


@batch("np.min", "np.amin")
def amin_batch(a, axis=None, out_=None, keepdims=False):
    out = np.min(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


@batch("np.var")
def var_batch(a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    out = np.var(a, axis=rt.lane_axis(axis, a), dtype=dtype, ddof=ddof, keepdims=keepdims)


@batch("np.std")
def std_batch(a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    out = np.std(a, axis=rt.lane_axis(axis, a), dtype=dtype, ddof=ddof, keepdims=keepdims)
