"""Reductions (sum, mean, max, var, ...) and scans: reverse rules broadcast the adjoint back,
forward rules reduce the tangent the same way as the value.

Parameters follow numpy's positional order. numpy's own `out=` parameter cannot be spelled
in a template (`out` is the primal output), so it appears as the placeholder `out_`: it keeps
later positional arguments (keepdims, ddof) in their numpy positions. A keyword `out=` is
rejected, as writing into an array is not differentiable.

Batching: the batch is axis 0; per-example axes shift by one (rt.lane_axis); axis=None
means every axis but it.

Known limits: prod and cumprod divide by the input (zeros give nan, as in autograd); the
derivative of max/min is split evenly between ties.
"""
import gast

from .core import (batch, batch_elementwise, batch_lanes, batch_same, fold, fwd, nondiff,
                   rev, zero_flow)
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("np.sum")
def sum(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):  # noqa: A001
    da = rt.expand(dout, a, axis, keepdims)


zero_flow("linear", "np.sum")


@fwd("np.sum")
def sum_fwd(out, a, axis=None, dtype=None, out_=None, keepdims=False):
    dout = np.sum(da, axis, keepdims=keepdims)


@batch("np.sum")
def sum_batch(a, axis=None, dtype=None, out_=None, keepdims=False):
    out = np.sum(a, axis=rt.lane_axis(axis, a), dtype=dtype, keepdims=keepdims)


@rev("sum")
def total(dout, out, iterable, start=0):
    """Python's builtin sum of a list/tuple of arrays (or over the first axis of an array)."""
    diterable = rt.sum_adj(dout, iterable)
    dstart = rt.unbroadcast(dout, start)


@fwd("sum")
def total_fwd(out, iterable, start=0):
    dout = rt.broadcast_like(sum(diterable), out)
    dout = rt.broadcast_like(dstart, out)


@batch("sum")
def total_batch(iterable, start=0):
    """Builtin sum per example: the items of a list added (ranks aligned), or the rows of
    each example of an array."""
    if not iterable_batched:
        out = rt.lane_total(rt.broadcast_batch(iterable, batch_size), start)
    elif start_batched:
        out = rt.lane_total(rt.broadcast_batch(iterable, batch_size, iterable_spec), start)
    else:
        out = rt.lane_total(rt.broadcast_batch(iterable, batch_size, iterable_spec),
                            rt.broadcast_batch(start, batch_size))


# Python's all() and any(): booleans, per example under vmap (rt.lane_all/lane_any)
nondiff("all", "any", "rt.lane_all", "rt.lane_any")


@batch("all")
def all_batch(iterable):
    out = rt.lane_all(rt.broadcast_batch(iterable, batch_size, iterable_spec))


@batch("any")
def any_batch(iterable):
    out = rt.lane_any(rt.broadcast_batch(iterable, batch_size, iterable_spec))


batch_lanes("rt.lane_all", ("iterable",))
batch_lanes("rt.lane_any", ("iterable",))


@rev("rt.sum_adj", container_out=True, view=True)
def sum_adj(dout, out, g, xs):
    dg = rt.sum_adj_t(dout, g)


@fwd("rt.sum_adj")
def sum_adj_fwd(out, g, xs):
    dout = rt.sum_adj(dg, xs)


@batch("rt.sum_adj")
def sum_adj_batch(g, xs):
    if not g_batched:
        out = rt.lane_sum_adj(rt.broadcast_batch(g, batch_size),
                              rt.broadcast_batch(xs, batch_size, xs_spec))
    elif xs_batched:
        out = rt.lane_sum_adj(g, rt.broadcast_batch(xs, batch_size, xs_spec))
    else:
        out = rt.lane_sum_adj(g, rt.broadcast_batch(xs, batch_size))


@rev("rt.sum_adj_t")
def sum_adj_t(dout, out, d, g):
    dd = rt.sum_adj(dout, d)


@fwd("rt.sum_adj_t")
def sum_adj_t_fwd(out, d, g):
    dout = rt.sum_adj_t(dd, g)


@batch("rt.sum_adj_t")
def sum_adj_t_batch(d, g):
    if not d_batched:
        out = rt.lane_sum_adj_t(rt.broadcast_batch(d, batch_size), g)
    elif g_batched:
        out = rt.lane_sum_adj_t(rt.broadcast_batch(d, batch_size, d_spec), g)
    else:
        out = rt.lane_sum_adj_t(rt.broadcast_batch(d, batch_size, d_spec),
                                rt.broadcast_batch(g, batch_size))


@rev("np.mean")
def mean(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):
    da = rt.expand(dout, a, axis, keepdims) / rt.reduced_size(a, axis)


zero_flow("linear", "np.mean")


@fwd("np.mean")
def mean_fwd(out, a, axis=None, dtype=None, out_=None, keepdims=False):
    dout = np.mean(da, axis, keepdims=keepdims)


@batch("np.mean")
def mean_batch(a, axis=None, dtype=None, out_=None, keepdims=False):
    out = np.mean(a, axis=rt.lane_axis(axis, a), dtype=dtype, keepdims=keepdims)


@rev("np.prod")
def prod(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):
    da = rt.expand(dout, a, axis, keepdims) * rt.prod_others(a, axis)


@fwd("np.prod")
def prod_fwd(out, a, axis=None, dtype=None, out_=None, keepdims=False):
    dout = np.sum(da * rt.prod_others(a, axis), axis, keepdims=keepdims)


@batch("np.prod")
def prod_batch(a, axis=None, dtype=None, out_=None, keepdims=False):
    out = np.prod(a, axis=rt.lane_axis(axis, a), dtype=dtype, keepdims=keepdims)


@rev("rt.prod_others")
def prod_others(dout, out, a, axis=None):
    """d out[i] / d a[j] = out[i] / a[j] for j != i: exact at zeros for the first derivative
    of np.prod, not for the second (nan where an element is exactly zero)."""
    da = (np.sum(dout * out, axis, keepdims=True) - dout * out) / a


@fwd("rt.prod_others")
def prod_others_fwd(out, a, axis=None):
    dout = out * (np.sum(da / a, axis, keepdims=True) - da / a)


@batch("rt.prod_others")
def prod_others_batch(a, axis=None):
    out = rt.prod_others(a, rt.lane_axis(axis, a))


@rev("np.max", "np.amax")
def amax(dout, out, a, axis=None, out_=None, keepdims=False):
    da = rt.expand(dout, a, axis, keepdims) * rt.extremum_share(a, out, axis, keepdims)


@fwd("np.max", "np.amax")
def amax_fwd(out, a, axis=None, out_=None, keepdims=False):
    dout = np.sum(da * rt.extremum_share(a, out, axis, keepdims), axis, keepdims=keepdims)


@batch("np.max", "np.amax")
def amax_batch(a, axis=None, out_=None, keepdims=False):
    out = np.max(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


@rev("np.min", "np.amin")
def amin(dout, out, a, axis=None, out_=None, keepdims=False):
    da = rt.expand(dout, a, axis, keepdims) * rt.extremum_share(a, out, axis, keepdims)


@fwd("np.min", "np.amin")
def amin_fwd(out, a, axis=None, out_=None, keepdims=False):
    dout = np.sum(da * rt.extremum_share(a, out, axis, keepdims), axis, keepdims=keepdims)


@batch("np.min", "np.amin")
def amin_batch(a, axis=None, out_=None, keepdims=False):
    out = np.min(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


# var and std are real for complex `a` too (means of |a - mean|^2): their rules read the real
# part of the adjoint and conjugate the centered values (see np.abs in elementwise.py).
@rev("np.var")
def var(dout, out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis, keepdims=True)
    scale = 2.0 / (rt.reduced_size(a, axis) - ddof)
    da = rt.expand(np.real(dout), a, axis, keepdims) * np.conj(centered) * scale


@fwd("np.var")
def var_fwd(out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis, keepdims=True)
    scale = 2.0 / (rt.reduced_size(a, axis) - ddof)
    dout = np.sum(np.real(da * np.conj(centered)), axis, keepdims=keepdims) * scale


@batch("np.var")
def var_batch(a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    out = np.var(a, axis=rt.lane_axis(axis, a), dtype=dtype, ddof=ddof, keepdims=keepdims)


@rev("np.std")
def std(dout, out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    """Where the spread is 0 (constant data) the derivative is taken as 0, like that of |x|
    at 0 (sqrt's slope there is infinite; JAX gives nan)."""
    centered = a - np.mean(a, axis, keepdims=True)
    n = rt.reduced_size(a, axis) - ddof
    safe = np.where(out == 0, 1.0, out)
    da = rt.expand(np.real(dout) / safe, a, axis, keepdims) * np.conj(centered) / n


@fwd("np.std")
def std_fwd(out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis, keepdims=True)
    n = rt.reduced_size(a, axis) - ddof
    safe = np.where(out == 0, 1.0, out)
    dout = np.sum(np.real(da * np.conj(centered)), axis, keepdims=keepdims) / (safe * n)


@batch("np.std")
def std_batch(a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    out = np.std(a, axis=rt.lane_axis(axis, a), dtype=dtype, ddof=ddof, keepdims=keepdims)


@rev("np.cumsum")
def cumsum(dout, out, a, axis=None, dtype=None, out_=None):
    da = rt.cumsum_adj(dout, a, axis)


@fwd("np.cumsum")
def cumsum_fwd(out, a, axis=None, dtype=None, out_=None):
    dout = np.cumsum(da, axis)


@batch("np.cumsum")
def cumsum_batch(a, axis=None, dtype=None, out_=None):
    out = np.cumsum(rt.lane_flat(a, axis), rt.batched_axis(axis), dtype)


@rev("rt.cumsum_adj")
def cumsum_adj(dout, out, g, a, axis=None):
    dg = np.cumsum(dout, axis)


@fwd("rt.cumsum_adj")
def cumsum_adj_fwd(out, g, a, axis=None):
    dout = rt.cumsum_adj(dg, a, axis)


@batch("rt.cumsum_adj")
def cumsum_adj_batch(g, a, axis=None):
    """axis=None: each example of g is flat (the adjoint of a flattened cumsum), and the
    result is reshaped to an example of `a`."""
    if not g_batched:
        out = rt.reshape_like(rt.cumsum_adj(rt.broadcast_batch(g, batch_size), a,
                                            rt.batched_axis(axis)), a)
    elif a_batched:
        out = rt.reshape_like(rt.cumsum_adj(g, a, rt.batched_axis(axis)), a)
    else:   # `a` seen along the batch, as g is: a vmap around this one batches both alike
        out = rt.reshape_like(rt.cumsum_adj(g, rt.lanes_view(a, batch_size),
                                            rt.batched_axis(axis)), a, 1)


# d out_j / d a_i is the product of a_k for k <= j but i: out_j / a_i where a_i != 0. At a
# zero that division was nan: there the product is taken with the zero made 1 (`spared`).
# Only the first zero along the axis (`first`) has a nonzero derivative; the second's is 0
# but not its derivative by the first zero's value (`at_first`, from the first zero on), which
# second derivatives read (a Hessian at a point with two zeros).
@rev("np.cumprod")
def cumprod(dout, out, a, axis=None, dtype=None, out_=None):
    zero = a == 0
    seen = np.reshape(np.cumsum(zero, axis), np.shape(a))
    first = np.logical_and(zero, seen == 1)
    second = np.logical_and(zero, seen == 2)
    spared = np.cumprod(np.where(first, 1, a), axis)
    spared_2 = np.cumprod(np.where(np.logical_or(first, second), 1, a), axis)
    at_first = np.cumsum(np.where(first, a, 0), axis)
    da = np.where(zero, 0, rt.cumsum_adj(dout * out, a, axis) / np.where(zero, 1, a)) + \
        np.where(first, rt.cumsum_adj(dout * spared, a, axis), 0) + \
        np.where(second, rt.cumsum_adj(dout * at_first * spared_2, a, axis), 0)


@fwd("np.cumprod")
def cumprod_fwd(out, a, axis=None, dtype=None, out_=None):
    zero = a == 0
    seen = np.reshape(np.cumsum(zero, axis), np.shape(a))
    first = np.logical_and(zero, seen == 1)
    second = np.logical_and(zero, seen == 2)
    spared = np.cumprod(np.where(first, 1, a), axis)
    spared_2 = np.cumprod(np.where(np.logical_or(first, second), 1, a), axis)
    at_first = np.cumsum(np.where(first, a, 0), axis)
    dout = out * np.cumsum(np.where(zero, 0, da) / np.where(zero, 1, a), axis) + \
        np.cumsum(np.where(first, da, 0), axis) * spared + \
        np.cumsum(np.where(second, da, 0), axis) * at_first * spared_2


@batch("np.cumprod")
def cumprod_batch(a, axis=None, dtype=None, out_=None):
    out = np.cumprod(rt.lane_flat(a, axis), rt.batched_axis(axis), dtype)


@rev("np.unique")
def unique(dout, out, ar, return_index=False, return_inverse=False, return_counts=False,
           axis=None, equal_nan=True):
    """The sorted distinct values of `ar`: each is one of the elements, and a value that
    occurs several times shares its adjoint evenly among them (as np.max shares ties). With
    return_index/inverse/counts or axis, rt.unique_adj refuses."""
    dar = rt.unique_adj(dout, ar, return_index, return_inverse, return_counts, axis)


@fwd("np.unique")
def unique_fwd(out, ar, return_index=False, return_inverse=False, return_counts=False,
               axis=None, equal_nan=True):
    dout = rt.unique_mean(dar, ar, return_index, return_inverse, return_counts, axis)


@batch("np.unique")
def unique_batch(ar, return_index=False, return_inverse=False, return_counts=False,
                 axis=None, equal_nan=True):
    out = rt.cannot_batch("np.unique", "its result's length would differ between examples")


@rev("rt.unique_adj")
def unique_adj(dout, out, g, ar, return_index=False, return_inverse=False,
               return_counts=False, axis=None):
    dg = rt.unique_mean(dout, ar, return_index, return_inverse, return_counts, axis)


@fwd("rt.unique_adj")
def unique_adj_fwd(out, g, ar, return_index=False, return_inverse=False,
                   return_counts=False, axis=None):
    dout = rt.unique_adj(dg, ar, return_index, return_inverse, return_counts, axis)


@rev("rt.unique_mean")
def unique_mean(dout, out, t, ar, return_index=False, return_inverse=False,
                return_counts=False, axis=None):
    dt = rt.unique_adj(dout, ar, return_index, return_inverse, return_counts, axis)


@fwd("rt.unique_mean")
def unique_mean_fwd(out, t, ar, return_index=False, return_inverse=False,
                    return_counts=False, axis=None):
    dout = rt.unique_mean(dt, ar, return_index, return_inverse, return_counts, axis)


@batch("rt.unique_adj", "rt.unique_mean")
def unique_adj_batch(g, ar, return_index=False, return_inverse=False, return_counts=False,
                     axis=None):
    out = rt.cannot_batch("np.unique", "its result's length would differ between examples")


nondiff("np.argmax", "np.argmin", "np.argsort", "np.any", "np.all", "np.count_nonzero",
        "np.nonzero", "np.searchsorted", "np.argwhere", "np.flatnonzero",
        "np.isclose", "np.allclose", "np.array_equal", "rt.extremum_share")


@batch("np.argmax")
def argmax_batch(a, axis=None, out_=None, keepdims=False):
    """keepdims must be a literal (True keeps every per-example axis, also for axis=None)."""
    if keepdims:
        out = rt.lane_promote(np.argmax(rt.lane_flat(a, axis), rt.batched_axis(axis),
                                        keepdims=True), np.ndim(a) - 1)
    else:
        out = np.argmax(rt.lane_flat(a, axis), rt.batched_axis(axis))


@batch("np.argmin")
def argmin_batch(a, axis=None, out_=None, keepdims=False):
    """keepdims must be a literal (True keeps every per-example axis, also for axis=None)."""
    if keepdims:
        out = rt.lane_promote(np.argmin(rt.lane_flat(a, axis), rt.batched_axis(axis),
                                        keepdims=True), np.ndim(a) - 1)
    else:
        out = np.argmin(rt.lane_flat(a, axis), rt.batched_axis(axis))


@batch("np.argsort")
def argsort_batch(a, axis=-1, kind=None, order=None):
    out = np.argsort(rt.lane_flat(a, axis), rt.batched_axis(axis), kind, order)


@batch("np.any")
def any_batch(a, axis=None, out_=None, keepdims=False):
    out = np.any(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


@batch("np.all")
def all_batch(a, axis=None, out_=None, keepdims=False):
    out = np.all(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


@batch("np.count_nonzero")
def count_nonzero_batch(a, axis=None, keepdims=False):
    out = np.count_nonzero(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


@batch("np.nonzero")
def nonzero_batch(a):
    out = rt.cannot_batch("np.nonzero", "its result's length would differ between examples")


@batch("np.argwhere")
def argwhere_batch(a):
    out = rt.cannot_batch("np.argwhere", "its result's length would differ between examples")


@batch("np.flatnonzero")
def flatnonzero_batch(a):
    out = rt.cannot_batch("np.flatnonzero", "its result's length would differ between examples")


@batch("np.searchsorted")
def searchsorted_batch(a, v, side="left", sorter=None):
    if a_batched:
        if v_batched:
            out = rt.lane_searchsorted(a, v, side, sorter)
        else:
            out = rt.lane_searchsorted(a, rt.broadcast_batch(v, batch_size), side, sorter)
    elif sorter_batched:
        if v_batched:
            out = rt.lane_searchsorted(rt.broadcast_batch(a, batch_size), v, side, sorter)
        else:
            out = rt.lane_searchsorted(rt.broadcast_batch(a, batch_size),
                                       rt.broadcast_batch(v, batch_size), side, sorter)
    else:
        out = np.searchsorted(a, v, side, sorter)


batch_elementwise("np.isclose")


@batch("np.allclose")
def allclose_batch(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if rtol_batched:
        out = rt.cannot_batch("np.allclose", "rtol differs between examples")
    elif atol_batched:
        out = rt.cannot_batch("np.allclose", "atol differs between examples")
    elif not a_batched:
        out = np.all(np.reshape(np.isclose(a, rt.align(b, a), rtol, atol, equal_nan),
                                (batch_size, -1)), axis=1)
    elif not b_batched:
        out = np.all(np.reshape(np.isclose(rt.align(a, b), b, rtol, atol, equal_nan),
                                (batch_size, -1)), axis=1)
    else:
        out = np.all(np.reshape(np.isclose(rt.align_lanes(a, b), rt.align_lanes(b, a), rtol,
                                           atol, equal_nan), (batch_size, -1)), axis=1)


@batch("np.array_equal")
def array_equal_batch(a1, a2, equal_nan=False):
    if not a1_batched:
        out = rt.lane_array_equal(rt.broadcast_batch(a1, batch_size), a2, equal_nan)
    elif a2_batched:
        out = rt.lane_array_equal(a1, a2, equal_nan)
    else:
        out = rt.lane_array_equal(a1, rt.broadcast_batch(a2, batch_size), equal_nan)


@batch("rt.extremum_share")
def extremum_share_batch(a, out_, axis=None, keepdims=False):
    if not a_batched:
        out = rt.extremum_share(rt.broadcast_batch(a, batch_size), out_,
                                rt.lane_axes(axis, np.ndim(a)), keepdims)
    elif out__batched:
        out = rt.extremum_share(a, out_, rt.lane_axis(axis, a), keepdims)
    else:
        out = rt.extremum_share(a, rt.broadcast_batch(out_, batch_size), rt.lane_axis(axis, a),
                                keepdims)


# ---------------------------------------------------------------- helpers of vmapped code
# the helpers behind builtin sum under vmap (every array argument carries 1 + outer leading
# batch axes; their own batching rule broadcasts unbatched ones and adds one)

@rev("rt.lane_total")
def lane_total(dout, out, iterable, start=0, outer=0):
    diterable = rt.lane_sum_adj(dout, iterable, outer)
    dstart = rt.lane_unbroadcast(dout, rt.example_shape(start, outer), outer)


@fwd("rt.lane_total")
def lane_total_fwd(out, iterable, start=0, outer=0):
    dout = rt.lane_total(diterable, dstart, outer)


@rev("rt.lane_sum_adj", container_out=True, view=True)
def lane_sum_adj(dout, out, g, xs, outer=0):
    dg = rt.lane_sum_adj_t(dout, g, outer)


@fwd("rt.lane_sum_adj")
def lane_sum_adj_fwd(out, g, xs, outer=0):
    dout = rt.lane_sum_adj(dg, xs, outer)


@rev("rt.lane_sum_adj_t")
def lane_sum_adj_t(dout, out, d, g, outer=0):
    dd = rt.lane_sum_adj(dout, d, outer)


@fwd("rt.lane_sum_adj_t")
def lane_sum_adj_t_fwd(out, d, g, outer=0):
    dout = rt.lane_sum_adj_t(dd, g, outer)


batch_lanes("rt.lane_total", ("iterable", "start"))
batch_lanes("rt.lane_sum_adj", ("g", "xs"))
batch_lanes("rt.lane_sum_adj_t", ("d", "g"))


# nondifferentiable reductions and queries


nondiff("rt.lane_searchsorted", "rt.lane_array_equal")
batch_lanes("rt.lane_searchsorted", ("a", "v", "sorter"))
batch_lanes("rt.lane_array_equal", ("a1", "a2"))



# ---------------------------------------------------------------- nan-ignoring reductions
# NaNs are left out as numpy leaves them out: they get a zero adjoint (as in JAX), and a
# tangent at a NaN position moves nothing. A slice of NaNs only (numpy: nan, or 0 for
# nansum) gets zero adjoints throughout.

@rev("np.nansum")
def nansum(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):
    da = np.where(np.isnan(a), 0.0, rt.expand(dout, a, axis, keepdims))


@fwd("np.nansum")
def nansum_fwd(out, a, axis=None, dtype=None, out_=None, keepdims=False):
    dout = np.sum(np.where(np.isnan(a), 0.0, da), axis, keepdims=keepdims)


@batch("np.nansum")
def nansum_batch(a, axis=None, dtype=None, out_=None, keepdims=False):
    out = np.nansum(a, axis=rt.lane_axis(axis, a), dtype=dtype, keepdims=keepdims)


@rev("np.nanmean")
def nanmean(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):
    """The mean of the non-NaN elements: each gets 1 / their count."""
    count = np.sum(np.logical_not(np.isnan(a)), axis, keepdims=True)
    da = np.where(np.isnan(a), 0.0, rt.expand(dout, a, axis, keepdims) / np.maximum(count, 1))


@fwd("np.nanmean")
def nanmean_fwd(out, a, axis=None, dtype=None, out_=None, keepdims=False):
    """The mean of the tangent where `a` is not NaN (nan for a slice of NaNs, as its value)."""
    dout = np.nanmean(np.where(np.isnan(a), np.nan, da), axis, keepdims=keepdims)


@batch("np.nanmean")
def nanmean_batch(a, axis=None, dtype=None, out_=None, keepdims=False):
    out = np.nanmean(a, axis=rt.lane_axis(axis, a), dtype=dtype, keepdims=keepdims)


# nanmax/nanmin: NaNs never equal the result, so rt.extremum_share gives them nothing and
# splits the adjoint between ties as np.max does; np.where clears the 0/0 of slices of NaNs.
@rev("np.nanmax")
def nanmax(dout, out, a, axis=None, out_=None, keepdims=False):
    da = np.where(np.isnan(a), 0.0,
                  rt.expand(dout, a, axis, keepdims) * rt.extremum_share(a, out, axis, keepdims))


@fwd("np.nanmax")
def nanmax_fwd(out, a, axis=None, out_=None, keepdims=False):
    dout = np.sum(np.where(np.isnan(a), 0.0, da * rt.extremum_share(a, out, axis, keepdims)),
                  axis, keepdims=keepdims)


@batch("np.nanmax")
def nanmax_batch(a, axis=None, out_=None, keepdims=False):
    out = np.nanmax(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


@rev("np.nanmin")
def nanmin(dout, out, a, axis=None, out_=None, keepdims=False):
    da = np.where(np.isnan(a), 0.0,
                  rt.expand(dout, a, axis, keepdims) * rt.extremum_share(a, out, axis, keepdims))


@fwd("np.nanmin")
def nanmin_fwd(out, a, axis=None, out_=None, keepdims=False):
    dout = np.sum(np.where(np.isnan(a), 0.0, da * rt.extremum_share(a, out, axis, keepdims)),
                  axis, keepdims=keepdims)


@batch("np.nanmin")
def nanmin_batch(a, axis=None, out_=None, keepdims=False):
    out = np.nanmin(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


@rev("np.nanprod")
def nanprod(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):
    """np.prod with NaNs read as 1 (the same limits at zeros as np.prod)."""
    da = np.where(np.isnan(a), 0.0, rt.expand(dout, a, axis, keepdims) *
                  rt.prod_others(np.where(np.isnan(a), 1.0, a), axis))


@fwd("np.nanprod")
def nanprod_fwd(out, a, axis=None, dtype=None, out_=None, keepdims=False):
    dout = np.sum(np.where(np.isnan(a), 0.0, da) *
                  rt.prod_others(np.where(np.isnan(a), 1.0, a), axis), axis, keepdims=keepdims)


@batch("np.nanprod")
def nanprod_batch(a, axis=None, dtype=None, out_=None, keepdims=False):
    out = np.nanprod(a, axis=rt.lane_axis(axis, a), dtype=dtype, keepdims=keepdims)


# nanvar/nanstd as var/std (real for complex `a`, see above) over the non-NaN elements,
# with n = their count - ddof. Where n <= 0 the value is nan, and so are the derivatives of
# the elements there; a slice of NaNs only gets zeros (n is set to 1 there, its centered
# values being 0), so that no 0 * nan leaks into higher derivatives.
@rev("np.nanvar")
def nanvar(dout, out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = np.where(np.isnan(a), 0.0, a - np.nanmean(a, axis, keepdims=True))
    count = np.sum(np.logical_not(np.isnan(a)), axis, keepdims=True)
    n = np.where(count == 0, 1.0, np.where(count > ddof, count - ddof, np.nan))
    da = rt.expand(np.real(dout), a, axis, keepdims) * np.conj(centered) * (2.0 / n)


@fwd("np.nanvar")
def nanvar_fwd(out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = np.where(np.isnan(a), 0.0, a - np.nanmean(a, axis, keepdims=True))
    count = np.sum(np.logical_not(np.isnan(a)), axis, keepdims=True)
    n = np.where(count == 0, 1.0, np.where(count > ddof, count - ddof, np.nan))
    dout = np.sum(np.real(np.where(np.isnan(a), 0.0, da) * np.conj(centered)) * (2.0 / n), axis,
                  keepdims=keepdims)


@batch("np.nanvar")
def nanvar_batch(a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    out = np.nanvar(a, axis=rt.lane_axis(axis, a), dtype=dtype, ddof=ddof, keepdims=keepdims)


@rev("np.nanstd")
def nanstd(dout, out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    """0 where the spread is 0, as np.std (and in a slice of NaNs, whose value is nan)."""
    centered = np.where(np.isnan(a), 0.0, a - np.nanmean(a, axis, keepdims=True))
    count = np.sum(np.logical_not(np.isnan(a)), axis, keepdims=True)
    n = np.where(count == 0, 1.0, np.where(count > ddof, count - ddof, np.nan))
    safe = np.where(out > 0, out, 1.0)
    da = rt.expand(np.real(dout) / safe, a, axis, keepdims) * np.conj(centered) / n


@fwd("np.nanstd")
def nanstd_fwd(out, a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    centered = np.where(np.isnan(a), 0.0, a - np.nanmean(a, axis, keepdims=True))
    count = np.sum(np.logical_not(np.isnan(a)), axis, keepdims=True)
    n = np.where(count == 0, 1.0, np.where(count > ddof, count - ddof, np.nan))
    safe = np.where(out > 0, out, 1.0)
    dout = np.sum(np.real(np.where(np.isnan(a), 0.0, da) * np.conj(centered)) / n, axis,
                  keepdims=keepdims) / safe


@batch("np.nanstd")
def nanstd_batch(a, axis=None, dtype=None, out_=None, ddof=0, keepdims=False):
    out = np.nanstd(a, axis=rt.lane_axis(axis, a), dtype=dtype, ddof=ddof, keepdims=keepdims)


@rev("np.ptp")
def ptp(dout, out, a, axis=None, out_=None, keepdims=False):
    """max - min: each shares its adjoint between ties as np.max and np.min do (so a slice
    of equal values gets 0)."""
    share = rt.extremum_share(a, np.max(a, axis, keepdims=True), axis, True) - \
        rt.extremum_share(a, np.min(a, axis, keepdims=True), axis, True)
    da = rt.expand(dout, a, axis, keepdims) * share


@fwd("np.ptp")
def ptp_fwd(out, a, axis=None, out_=None, keepdims=False):
    share = rt.extremum_share(a, np.max(a, axis, keepdims=True), axis, True) - \
        rt.extremum_share(a, np.min(a, axis, keepdims=True), axis, True)
    dout = np.sum(da * share, axis, keepdims=keepdims)


@batch("np.ptp")
def ptp_batch(a, axis=None, out_=None, keepdims=False):
    out = np.ptp(a, axis=rt.lane_axis(axis, a), keepdims=keepdims)


# numpy 2.1's cumulative_sum: np.cumsum with an optional leading 0 (include_initial); axis
# may be None only for 1-D x, where it is the one axis.
@rev("np.cumulative_sum")
def cumulative_sum(dout, out, x, axis=None, dtype=None, include_initial=False):
    dx = rt.cumulative_sum_adj(dout, axis, include_initial)


@fwd("np.cumulative_sum")
def cumulative_sum_fwd(out, x, axis=None, dtype=None, include_initial=False):
    dout = np.cumulative_sum(dx, axis=axis, include_initial=include_initial)


@batch("np.cumulative_sum")
def cumulative_sum_batch(x, axis=None, dtype=None, include_initial=False):
    out = np.cumulative_sum(x, axis=rt.batched_axis(axis), dtype=dtype,
                            include_initial=include_initial)


@rev("rt.cumulative_sum_adj")
def cumulative_sum_adj(dout, out, g, axis=None, include_initial=False):
    dg = np.cumulative_sum(dout, axis=axis, include_initial=include_initial)


@fwd("rt.cumulative_sum_adj")
def cumulative_sum_adj_fwd(out, g, axis=None, include_initial=False):
    dout = rt.cumulative_sum_adj(dg, axis, include_initial)


@batch("rt.cumulative_sum_adj")
def cumulative_sum_adj_batch(g, axis=None, include_initial=False):
    out = rt.cumulative_sum_adj(g, rt.batched_axis(axis), include_initial)


# ---------------------------------------------------------------- quantiles
# A quantile is a weighted sum of two neighbouring order statistics of each slice (see
# runtime/statistics.py): its derivative in `a` flows to the elements sorted into those
# positions, through the linear map rt.quantile_tangent and its transpose rt.quantile_adj,
# whose rules are each other. Ties go to the positions of a stable sort, as in JAX; a
# slice holding a NaN (value nan) passes no derivative. In q the value is piecewise linear:
# its derivative is the same maps with the weights' derivative (deriv=1), whose own
# derivative in q is 0 (deriv=2). q's axes lead the result's: rt.sum_trailing reduces the
# others away for q's adjoint, rt.expand_trailing lines q's tangent up with the result.

@rev("np.quantile")
def quantile(dout, out, a, q, axis=None, out_=None, overwrite_input=False, method="linear",
             keepdims=False):
    in_place = rt.refuse_in_place("np.quantile", overwrite_input)
    da = rt.quantile_adj(dout, a, q, axis, method, keepdims)
    dq = rt.sum_trailing(dout * rt.quantile_tangent(a, a, q, axis, method, keepdims, 1), q)


@fwd("np.quantile")
def quantile_fwd(out, a, q, axis=None, out_=None, overwrite_input=False, method="linear",
                 keepdims=False):
    in_place = rt.refuse_in_place("np.quantile", overwrite_input)
    dout = rt.quantile_tangent(da, a, q, axis, method, keepdims)
    dout = rt.expand_trailing(dq, out) * rt.quantile_tangent(a, a, q, axis, method, keepdims, 1)


@batch("np.quantile")
def quantile_batch(a, q, axis=None, out_=None, overwrite_input=False, method="linear",
                   keepdims=False):
    if not a_batched:
        out = rt.quantile_of(rt.batch_view(a, batch_size), q, axis, method, keepdims, 1)
    elif q_batched:
        out = rt.quantile_of(a, q, axis, method, keepdims, 1)
    else:
        out = rt.quantile_of(a, rt.batch_view(np.asarray(q), batch_size), axis, method,
                             keepdims, 1)


@rev("np.percentile")
def percentile(dout, out, a, q, axis=None, out_=None, overwrite_input=False, method="linear",
               keepdims=False):
    """np.quantile at q / 100."""
    in_place = rt.refuse_in_place("np.percentile", overwrite_input)
    da = rt.quantile_adj(dout, a, np.asarray(q) / 100.0, axis, method, keepdims)
    dq = rt.sum_trailing(dout * rt.quantile_tangent(a, a, np.asarray(q) / 100.0, axis, method,
                                                    keepdims, 1), q) / 100.0


@fwd("np.percentile")
def percentile_fwd(out, a, q, axis=None, out_=None, overwrite_input=False, method="linear",
                   keepdims=False):
    in_place = rt.refuse_in_place("np.percentile", overwrite_input)
    dout = rt.quantile_tangent(da, a, np.asarray(q) / 100.0, axis, method, keepdims)
    dout = rt.expand_trailing(np.asarray(dq) / 100.0, out) * rt.quantile_tangent(
        a, a, np.asarray(q) / 100.0, axis, method, keepdims, 1)


@batch("np.percentile")
def percentile_batch(a, q, axis=None, out_=None, overwrite_input=False, method="linear",
                     keepdims=False):
    if not a_batched:
        out = rt.quantile_of(rt.batch_view(a, batch_size), np.asarray(q) / 100.0, axis, method,
                             keepdims, 1)
    elif q_batched:
        out = rt.quantile_of(a, np.asarray(q) / 100.0, axis, method, keepdims, 1)
    else:
        out = rt.quantile_of(a, rt.batch_view(np.asarray(q) / 100.0, batch_size), axis, method,
                             keepdims, 1)


@rev("np.median")
def median(dout, out, a, axis=None, out_=None, overwrite_input=False, keepdims=False):
    """The middle element, or the mean of the two middle ones (numpy's median is the 0.5
    quantile of method 'linear')."""
    in_place = rt.refuse_in_place("np.median", overwrite_input)
    da = rt.quantile_adj(dout, a, 0.5, axis, "linear", keepdims)


@fwd("np.median")
def median_fwd(out, a, axis=None, out_=None, overwrite_input=False, keepdims=False):
    in_place = rt.refuse_in_place("np.median", overwrite_input)
    dout = rt.quantile_tangent(da, a, 0.5, axis, "linear", keepdims)


@batch("np.median")
def median_batch(a, axis=None, out_=None, overwrite_input=False, keepdims=False):
    out = rt.quantile_of(a, 0.5, axis, "linear", keepdims, 1)


@rev("rt.quantile_of")
def quantile_of(dout, out, a, q, axis=None, method="linear", keepdims=False, lead=0):
    da = rt.quantile_adj(dout, a, q, axis, method, keepdims, 0, lead)
    dq = rt.sum_trailing(dout * rt.quantile_tangent(a, a, q, axis, method, keepdims, 1, lead),
                         q)


@fwd("rt.quantile_of")
def quantile_of_fwd(out, a, q, axis=None, method="linear", keepdims=False, lead=0):
    dout = rt.quantile_tangent(da, a, q, axis, method, keepdims, 0, lead)
    dout = rt.expand_trailing(dq, out) * rt.quantile_tangent(a, a, q, axis, method, keepdims,
                                                             1, lead)


# The two linear maps: `a` only picks the positions (piecewise constant: no derivative);
# the weights move with q.
@rev("rt.quantile_tangent")
def quantile_tangent(dout, out, t, a, q, axis=None, method="linear", keepdims=False, deriv=0,
                     lead=0):
    dt = rt.quantile_adj(dout, a, q, axis, method, keepdims, deriv, lead)
    dq = rt.sum_trailing(dout * rt.quantile_tangent(t, a, q, axis, method, keepdims,
                                                    deriv + 1, lead), q)


@fwd("rt.quantile_tangent")
def quantile_tangent_fwd(out, t, a, q, axis=None, method="linear", keepdims=False, deriv=0,
                         lead=0):
    dout = rt.quantile_tangent(dt, a, q, axis, method, keepdims, deriv, lead)
    dout = rt.expand_trailing(dq, out) * rt.quantile_tangent(t, a, q, axis, method, keepdims,
                                                             deriv + 1, lead)


@rev("rt.quantile_adj")
def quantile_adj(dout, out, g, a, q, axis=None, method="linear", keepdims=False, deriv=0,
                 lead=0):
    dg = rt.quantile_tangent(dout, a, q, axis, method, keepdims, deriv, lead)
    dq = rt.sum_trailing(g * rt.quantile_tangent(dout, a, q, axis, method, keepdims, deriv + 1,
                                                 lead), q)


@fwd("rt.quantile_adj")
def quantile_adj_fwd(out, g, a, q, axis=None, method="linear", keepdims=False, deriv=0,
                     lead=0):
    dout = rt.quantile_adj(dg, a, q, axis, method, keepdims, deriv, lead)
    dout = rt.quantile_adj(g * rt.expand_trailing(dq, g), a, q, axis, method, keepdims,
                           deriv + 1, lead)


batch_lanes("rt.quantile_of", ("a", "q"), param="lead")
nondiff("rt.refuse_in_place", side_effect=True)   # kept though its value is unused
batch_same("rt.refuse_in_place", out_batched=False)


@fold("rt.refuse_in_place")
def refuse_in_place_fold(what, overwrite_input=None, copy=None):
    """The defaults (a literal overwrite_input=False, copy=True) need no check."""
    plain = all(arg is None or isinstance(arg, gast.Constant) and arg.value in (False, True)
                and (arg is not overwrite_input or arg.value is False)
                and (arg is not copy or arg.value is True) for arg in (overwrite_input, copy))
    return gast.Constant(value=1.0, kind=None) if plain else None
batch_lanes("rt.quantile_tangent", ("t", "a", "q"), param="lead")
batch_lanes("rt.quantile_adj", ("g", "a", "q"), param="lead")


@rev("rt.sum_trailing")
def sum_trailing(dout, out, h, q):
    dh = rt.expand_trailing(dout, h) * np.ones_like(h)


@fwd("rt.sum_trailing")
def sum_trailing_fwd(out, h, q):
    dout = rt.sum_trailing(dh, q)


@batch("rt.sum_trailing")
def sum_trailing_batch(h, q):
    if not h_batched:
        out = rt.sum_trailing(rt.batch_view(h, batch_size), q)
    elif q_batched:
        out = rt.sum_trailing(h, q)
    else:
        out = rt.sum_trailing(h, rt.batch_view(q, batch_size))


@rev("rt.expand_trailing")
def expand_trailing(dout, out, g, like):
    dg = rt.sum_trailing(dout, g)


@fwd("rt.expand_trailing")
def expand_trailing_fwd(out, g, like):
    dout = rt.expand_trailing(dg, like)


@batch("rt.expand_trailing")
def expand_trailing_batch(g, like):
    if not g_batched:
        out = rt.expand_trailing(rt.batch_view(g, batch_size), like)
    elif like_batched:
        out = rt.expand_trailing(g, like)
    else:
        out = rt.expand_trailing(g, rt.batch_view(like, batch_size))


# ---------------------------------------------------------------- np.average
# sum(w a) / sum(w) over `axis`, weights in a's shape (rt.average_weights: a 1-D one lies
# along axis); returned=True adds the sum of weights. Both are holomorphic in a and the
# weights. The result is one array or a pair: rt.average_part takes one part of an adjoint
# (zeros for the sum of weights that was not returned), rt.average_pack builds the tangent.

@rev("np.average", container_out=True)
def average(dout, out, a, axis=None, weights=None, returned=False, keepdims=False):
    g = rt.expand(rt.average_part(dout, returned, 0), a, axis, keepdims)
    w = rt.average_weights(weights, a, axis)
    wsum = np.sum(w, axis, keepdims=True)
    da = g * w / wsum
    dweights = rt.average_weights_adj(
        g * (a - np.sum(a * w, axis, keepdims=True) / wsum) / wsum +
        rt.expand(rt.average_part(dout, returned, 1), a, axis, keepdims), weights, a, axis)


@fwd("np.average")
def average_fwd(out, a, axis=None, weights=None, returned=False, keepdims=False):
    w = rt.average_weights(weights, a, axis)
    wsum = np.sum(w, axis, keepdims=True)
    tw = rt.average_weights(dweights, a, axis, 0.0)
    dout = rt.average_pack(
        np.sum((da * w + (a - np.sum(a * w, axis, keepdims=True) / wsum) * tw) / wsum, axis,
               keepdims=keepdims), np.sum(tw, axis, keepdims=keepdims), returned)


@batch("np.average")
def average_batch(a, axis=None, weights=None, returned=False, keepdims=False):
    if not a_batched:
        out = np.average(rt.batch_view(a, batch_size), rt.lane_axes(axis, np.ndim(a)),
                         rt.average_weights(weights, rt.batch_view(a, batch_size), axis, 1.0,
                                            1), returned, keepdims=keepdims)
    elif weights_batched:
        out = np.average(a, rt.lane_axis(axis, a), rt.average_weights(weights, a, axis, 1.0, 1),
                         returned, keepdims=keepdims)
    else:
        out = np.average(a, rt.lane_axis(axis, a), rt.average_weights(
            rt.batch_view(weights, batch_size), a, axis, 1.0, 1), returned, keepdims=keepdims)


@rev("rt.average_weights")
def average_weights(dout, out, weights, a, axis=None, missing=1.0, lead=0):
    dweights = rt.average_weights_adj(dout, weights, a, axis, lead)


@fwd("rt.average_weights")
def average_weights_fwd(out, weights, a, axis=None, missing=1.0, lead=0):
    dout = rt.average_weights(dweights, a, axis, 0.0, lead)


@rev("rt.average_weights_adj")
def average_weights_adj(dout, out, g, weights, a, axis=None, lead=0):
    dg = rt.average_weights(dout, a, axis, 0.0, lead)


@fwd("rt.average_weights_adj")
def average_weights_adj_fwd(out, g, weights, a, axis=None, lead=0):
    dout = rt.average_weights_adj(dg, weights, a, axis, lead)


batch_lanes("rt.average_weights", ("weights", "a"), param="lead")
batch_lanes("rt.average_weights_adj", ("g", "weights", "a"), param="lead")


@rev("rt.average_part")
def average_part(dout, out, g, returned, which):
    dg = rt.average_put(dout, g, returned, which)


@fwd("rt.average_part")
def average_part_fwd(out, g, returned, which):
    dout = rt.average_part(dg, returned, which)


@rev("rt.average_put", container_out=True)
def average_put(dout, out, h, like, returned, which):
    dh = rt.average_part(dout, returned, which)


@fwd("rt.average_put")
def average_put_fwd(out, h, like, returned, which):
    dout = rt.average_put(dh, like, returned, which)


@rev("rt.average_pack", container_out=True)
def average_pack(dout, out, avg, scl, returned):
    davg = rt.average_part(dout, returned, 0)
    dscl = rt.average_part(dout, returned, 1)


@fwd("rt.average_pack")
def average_pack_fwd(out, avg, scl, returned):
    dout = rt.average_pack(davg, dscl, returned)


batch_same("rt.average_part")


@batch("rt.average_put")
def average_put_batch(h, like, returned, which):
    if not h_batched:
        out = rt.average_put(rt.broadcast_batch(h, batch_size), like, returned, which)
    elif like_batched:
        out = rt.average_put(h, like, returned, which)
    else:
        out = rt.average_put(h, rt.batch_view(like, batch_size), returned, which)


@batch("rt.average_pack")
def average_pack_batch(avg, scl, returned):
    if not avg_batched:
        out = rt.average_pack(rt.broadcast_batch(avg, batch_size), scl, returned)
    elif scl_batched:
        out = rt.average_pack(avg, scl, returned)
    else:
        out = rt.average_pack(avg, rt.broadcast_batch(scl, batch_size), returned)


# ---------------------------------------------------------------- np.interp
# Linear in fp (and left, right), piecewise linear in x and in the knots xp:
# rt.interp_tangent / rt.interp_adj are the map A: fp -> values and its transpose,
# rt.interp_slope / rt.interp_slope_adj the slopes S fp in x and the transpose
# (runtime/statistics.py). S does not move with x; moving the knots by d moves the values
# by -(S fp)(A d) (shifting every knot by c is shifting x by -c) and the slopes by
# -(S fp)(S d), so these four close under differentiation in x, xp and fp. x and xp are
# real: a complex fp gives them the real part of their adjoints.

@rev("np.interp")
def interp(dout, out, x, xp, fp, left=None, right=None):
    slope = np.real(dout * rt.interp_slope(x, xp, fp))
    dx = slope
    dxp = -rt.interp_adj(slope, x, xp, left, right)
    dfp = rt.interp_adj(dout, x, xp, left, right)
    dleft = rt.sum_trailing(dout * rt.interp_outside(x, xp, -1), left)
    dright = rt.sum_trailing(dout * rt.interp_outside(x, xp, 1), right)


@fwd("np.interp")
def interp_fwd(out, x, xp, fp, left=None, right=None):
    dout = dx * rt.interp_slope(x, xp, fp)
    dout = -rt.interp_slope(x, xp, fp) * rt.interp_tangent(dxp, x, xp, left, right)
    dout = rt.interp_tangent(dfp, x, xp, left, right)
    dout = dleft * rt.interp_outside(x, xp, -1)
    dout = dright * rt.interp_outside(x, xp, 1)


@batch("np.interp")
def interp_batch(x, xp, fp, left=None, right=None):
    if xp_batched or fp_batched or left_batched or right_batched:
        out = rt.interp_of(rt.broadcast_batch(x, batch_size, x_batched),
                           rt.broadcast_batch(xp, batch_size, xp_batched),
                           rt.broadcast_batch(fp, batch_size, fp_batched),
                           rt.broadcast_batch(left, batch_size, left_batched),
                           rt.broadcast_batch(right, batch_size, right_batched), 1)
    else:
        out = np.interp(x, xp, fp, left, right)


@rev("rt.interp_of")
def interp_of(dout, out, x, xp, fp, left=None, right=None, lead=0):
    slope = np.real(dout * rt.interp_slope(x, xp, fp, lead))
    dx = slope
    dxp = -rt.interp_adj(slope, x, xp, left, right, lead)
    dfp = rt.interp_adj(dout, x, xp, left, right, lead)
    dleft = rt.sum_trailing(dout * rt.interp_outside(x, xp, -1, lead), left)
    dright = rt.sum_trailing(dout * rt.interp_outside(x, xp, 1, lead), right)


@fwd("rt.interp_of")
def interp_of_fwd(out, x, xp, fp, left=None, right=None, lead=0):
    dout = dx * rt.interp_slope(x, xp, fp, lead)
    dout = -rt.interp_slope(x, xp, fp, lead) * rt.interp_tangent(dxp, x, xp, left, right, lead)
    dout = rt.interp_tangent(dfp, x, xp, left, right, lead)
    dout = rt.expand_trailing(dleft, out) * rt.interp_outside(x, xp, -1, lead)
    dout = rt.expand_trailing(dright, out) * rt.interp_outside(x, xp, 1, lead)


@rev("rt.interp_tangent")
def interp_tangent(dout, out, t, x, xp, left=None, right=None, lead=0):
    slope = np.real(dout * rt.interp_slope(x, xp, t, lead))
    dt = rt.interp_adj(dout, x, xp, left, right, lead)
    dx = slope
    dxp = -rt.interp_adj(slope, x, xp, left, right, lead)


@fwd("rt.interp_tangent")
def interp_tangent_fwd(out, t, x, xp, left=None, right=None, lead=0):
    dout = rt.interp_tangent(dt, x, xp, left, right, lead)
    dout = dx * rt.interp_slope(x, xp, t, lead)
    dout = -rt.interp_slope(x, xp, t, lead) * rt.interp_tangent(dxp, x, xp, left, right, lead)


@rev("rt.interp_adj")
def interp_adj(dout, out, g, x, xp, left=None, right=None, lead=0):
    slope = np.real(g * rt.interp_slope(x, xp, dout, lead))
    dg = rt.interp_tangent(dout, x, xp, left, right, lead)
    dx = slope
    dxp = -rt.interp_adj(slope, x, xp, left, right, lead)


@fwd("rt.interp_adj")
def interp_adj_fwd(out, g, x, xp, left=None, right=None, lead=0):
    dout = rt.interp_adj(dg, x, xp, left, right, lead)
    dout = rt.interp_slope_adj(g * dx, x, xp, lead)
    dout = -rt.interp_slope_adj(g * rt.interp_tangent(dxp, x, xp, left, right, lead), x, xp,
                                lead)


@rev("rt.interp_slope")
def interp_slope(dout, out, x, xp, fp, lead=0):
    """Piecewise constant in x: only the knots and fp move it."""
    dxp = -rt.interp_slope_adj(np.real(dout * out), x, xp, lead)
    dfp = rt.interp_slope_adj(dout, x, xp, lead)


@fwd("rt.interp_slope")
def interp_slope_fwd(out, x, xp, fp, lead=0):
    dout = -out * rt.interp_slope(x, xp, dxp, lead)
    dout = rt.interp_slope(x, xp, dfp, lead)


@rev("rt.interp_slope_adj")
def interp_slope_adj(dout, out, g, x, xp, lead=0):
    dg = rt.interp_slope(x, xp, dout, lead)
    dxp = -rt.interp_slope_adj(np.real(g * rt.interp_slope(x, xp, dout, lead)), x, xp, lead)


@fwd("rt.interp_slope_adj")
def interp_slope_adj_fwd(out, g, x, xp, lead=0):
    dout = rt.interp_slope_adj(dg, x, xp, lead)
    dout = -rt.interp_slope_adj(g * rt.interp_slope(x, xp, dxp, lead), x, xp, lead)


nondiff("rt.interp_outside")
batch_lanes("rt.interp_outside", ("x", "xp"), param="lead")
batch_lanes("rt.interp_of", ("x", "xp", "fp", "left", "right"), param="lead")
batch_lanes("rt.interp_tangent", ("t", "x", "xp", "left", "right"), param="lead")
batch_lanes("rt.interp_adj", ("g", "x", "xp", "left", "right"), param="lead")
batch_lanes("rt.interp_slope", ("x", "xp", "fp"), param="lead")
batch_lanes("rt.interp_slope_adj", ("g", "x", "xp"), param="lead")


# ---------------------------------------------------------------- np.gradient
# Linear in f (one array, or a tuple of one per axis): its transpose is rt.gradient_adj
# (runtime/statistics.py). One spacing argument at most (a scalar for every axis, or the
# coordinates of the one axis); the derivative with respect to it is refused.

@rev("np.gradient", container_out=True)
def gradient(dout, out, f, varargs=1.0, axis=None, edge_order=1):
    df = rt.gradient_adj(dout, varargs, axis, edge_order)
    dvarargs = rt.no_derivative("np.gradient with respect to its spacing",
                                "differentiate with respect to f (the spacing constant)")


@fwd("np.gradient")
def gradient_fwd(out, f, varargs=1.0, axis=None, edge_order=1):
    dout = np.gradient(df, varargs, axis=axis, edge_order=edge_order)
    dout = rt.no_derivative("np.gradient with respect to its spacing",
                            "differentiate with respect to f (the spacing constant)", dvarargs)


@batch("np.gradient")
def gradient_batch(f, varargs=1.0, axis=None, edge_order=1):
    if varargs_batched:
        out = rt.cannot_batch("np.gradient", "its spacing differs between examples")
    else:
        out = rt.gradient_of(f, varargs, axis, edge_order, 1)


@rev("rt.gradient_of", container_out=True)
def gradient_of(dout, out, f, varargs=1.0, axis=None, edge_order=1, lead=0):
    df = rt.gradient_adj(dout, varargs, axis, edge_order, lead)
    dvarargs = rt.no_derivative("np.gradient with respect to its spacing",
                                "differentiate with respect to f (the spacing constant)")


@fwd("rt.gradient_of")
def gradient_of_fwd(out, f, varargs=1.0, axis=None, edge_order=1, lead=0):
    dout = rt.gradient_of(df, varargs, axis, edge_order, lead)
    dout = rt.no_derivative("np.gradient with respect to its spacing",
                            "differentiate with respect to f (the spacing constant)", dvarargs)


@rev("rt.gradient_adj")
def gradient_adj(dout, out, g, varargs=1.0, axis=None, edge_order=1, lead=0):
    dg = rt.gradient_of(dout, varargs, axis, edge_order, lead)
    dvarargs = rt.no_derivative("np.gradient with respect to its spacing",
                                "differentiate with respect to f (the spacing constant)")


@fwd("rt.gradient_adj")
def gradient_adj_fwd(out, g, varargs=1.0, axis=None, edge_order=1, lead=0):
    dout = rt.gradient_adj(dg, varargs, axis, edge_order, lead)
    dout = rt.no_derivative("np.gradient with respect to its spacing",
                            "differentiate with respect to f (the spacing constant)", dvarargs)


batch_lanes("rt.gradient_of", ("f",), param="lead")
batch_lanes("rt.gradient_adj", ("g",), param="lead")


# ---------------------------------------------------------------- np.cov, np.corrcoef
# C = Xc Xc^H / n with Xc the rows of numpy's data matrix X (rt.cov_data) less their means:
# dXc = (G conj(Xc) + conj(G^T Xc)) / n for the adjoint G of C (G (Xc + G^T Xc) / n for real
# data); its rows are centred already. The rules are written over the last two axes, so the
# batched forms (rt.cov_of, rt.corrcoef_of, with `lead` batch axes) share them. fweights,
# aweights and dtype are not supported.

@rev("np.cov")
def cov(dout, out, m, y=None, rowvar=True, bias=False, ddof=None):
    x = rt.cov_data(m, y, rowvar)
    xc = x - np.mean(x, axis=-1, keepdims=True)
    g = rt.cov_grid(dout, x)
    dx = (g @ np.conj(xc) + np.conj(np.swapaxes(g, -1, -2) @ xc)) / rt.cov_dof(x, bias, ddof)
    dm = rt.cov_data_adj(dx, m, y, rowvar, 0)
    dy = rt.cov_data_adj(dx, m, y, rowvar, 1)


@fwd("np.cov")
def cov_fwd(out, m, y=None, rowvar=True, bias=False, ddof=None):
    x = rt.cov_data(m, y, rowvar)
    xc = x - np.mean(x, axis=-1, keepdims=True)
    t = rt.cov_data(dm, dy, rowvar)
    tc = t - np.mean(t, axis=-1, keepdims=True)
    dout = np.reshape((tc @ np.conj(np.swapaxes(xc, -1, -2)) + xc @ np.conj(
        np.swapaxes(tc, -1, -2))) / rt.cov_dof(x, bias, ddof), np.shape(out))


@batch("np.cov")
def cov_batch(m, y=None, rowvar=True, bias=False, ddof=None):
    out = rt.cov_of(rt.broadcast_batch(m, batch_size, m_batched),
                    rt.broadcast_batch(y, batch_size, y_batched), rowvar, bias, ddof, 1)


@rev("rt.cov_of")
def cov_of(dout, out, m, y=None, rowvar=True, bias=False, ddof=None, lead=0):
    x = rt.cov_data(m, y, rowvar, lead)
    xc = x - np.mean(x, axis=-1, keepdims=True)
    g = rt.cov_grid(dout, x)
    dx = (g @ np.conj(xc) + np.conj(np.swapaxes(g, -1, -2) @ xc)) / rt.cov_dof(x, bias, ddof)
    dm = rt.cov_data_adj(dx, m, y, rowvar, 0, lead)
    dy = rt.cov_data_adj(dx, m, y, rowvar, 1, lead)


@fwd("rt.cov_of")
def cov_of_fwd(out, m, y=None, rowvar=True, bias=False, ddof=None, lead=0):
    x = rt.cov_data(m, y, rowvar, lead)
    xc = x - np.mean(x, axis=-1, keepdims=True)
    t = rt.cov_data(dm, dy, rowvar, lead)
    tc = t - np.mean(t, axis=-1, keepdims=True)
    dout = np.reshape((tc @ np.conj(np.swapaxes(xc, -1, -2)) + xc @ np.conj(
        np.swapaxes(tc, -1, -2))) / rt.cov_dof(x, bias, ddof), np.shape(out))


# R = C / (s s^T) with s = sqrt(diag C) (n cancels): dR = dC / (s s^T) - R (dd_i / 2d_i +
# dd_j / 2d_j) with d = diag C (real), so dC = G / (s s^T) - diag(Re(rowsums + column sums of
# G R) / 2d). numpy's clipping of R to [-1, 1] only undoes rounding and is left out.
@rev("np.corrcoef")
def corrcoef(dout, out, x, y=None, rowvar=True):
    data = rt.cov_data(x, y, rowvar)
    xc = data - np.mean(data, axis=-1, keepdims=True)
    c = xc @ np.conj(np.swapaxes(xc, -1, -2))
    d = np.real(np.diagonal(c, 0, -2, -1))
    s = np.sqrt(d)
    scale = np.expand_dims(s, -1) * np.expand_dims(s, -2)
    g = rt.cov_grid(dout, data)
    gr = np.real(g * c / scale)
    dc = g / scale - np.expand_dims((np.sum(gr, axis=-1) + np.sum(gr, axis=-2)) / (2.0 * d),
                                    -1) * np.eye(np.shape(d)[-1])
    ddata = dc @ np.conj(xc) + np.conj(np.swapaxes(dc, -1, -2) @ xc)
    dx = rt.cov_data_adj(ddata, x, y, rowvar, 0)
    dy = rt.cov_data_adj(ddata, x, y, rowvar, 1)


@fwd("np.corrcoef")
def corrcoef_fwd(out, x, y=None, rowvar=True):
    data = rt.cov_data(x, y, rowvar)
    xc = data - np.mean(data, axis=-1, keepdims=True)
    c = xc @ np.conj(np.swapaxes(xc, -1, -2))
    d = np.real(np.diagonal(c, 0, -2, -1))
    s = np.sqrt(d)
    scale = np.expand_dims(s, -1) * np.expand_dims(s, -2)
    t = rt.cov_data(dx, dy, rowvar)
    tc = t - np.mean(t, axis=-1, keepdims=True)
    dc = tc @ np.conj(np.swapaxes(xc, -1, -2)) + xc @ np.conj(np.swapaxes(tc, -1, -2))
    half = np.real(np.diagonal(dc, 0, -2, -1)) / (2.0 * d)
    dout = np.reshape(dc / scale - c / scale * (np.expand_dims(half, -1) +
                                                np.expand_dims(half, -2)), np.shape(out))


@batch("np.corrcoef")
def corrcoef_batch(x, y=None, rowvar=True):
    out = rt.corrcoef_of(rt.broadcast_batch(x, batch_size, x_batched),
                         rt.broadcast_batch(y, batch_size, y_batched), rowvar, 1)


@rev("rt.corrcoef_of")
def corrcoef_of(dout, out, x, y=None, rowvar=True, lead=0):
    data = rt.cov_data(x, y, rowvar, lead)
    xc = data - np.mean(data, axis=-1, keepdims=True)
    c = xc @ np.conj(np.swapaxes(xc, -1, -2))
    d = np.real(np.diagonal(c, 0, -2, -1))
    s = np.sqrt(d)
    scale = np.expand_dims(s, -1) * np.expand_dims(s, -2)
    g = rt.cov_grid(dout, data)
    gr = np.real(g * c / scale)
    dc = g / scale - np.expand_dims((np.sum(gr, axis=-1) + np.sum(gr, axis=-2)) / (2.0 * d),
                                    -1) * np.eye(np.shape(d)[-1])
    ddata = dc @ np.conj(xc) + np.conj(np.swapaxes(dc, -1, -2) @ xc)
    dx = rt.cov_data_adj(ddata, x, y, rowvar, 0, lead)
    dy = rt.cov_data_adj(ddata, x, y, rowvar, 1, lead)


@fwd("rt.corrcoef_of")
def corrcoef_of_fwd(out, x, y=None, rowvar=True, lead=0):
    data = rt.cov_data(x, y, rowvar, lead)
    xc = data - np.mean(data, axis=-1, keepdims=True)
    c = xc @ np.conj(np.swapaxes(xc, -1, -2))
    d = np.real(np.diagonal(c, 0, -2, -1))
    s = np.sqrt(d)
    scale = np.expand_dims(s, -1) * np.expand_dims(s, -2)
    t = rt.cov_data(dx, dy, rowvar, lead)
    tc = t - np.mean(t, axis=-1, keepdims=True)
    dc = tc @ np.conj(np.swapaxes(xc, -1, -2)) + xc @ np.conj(np.swapaxes(tc, -1, -2))
    half = np.real(np.diagonal(dc, 0, -2, -1)) / (2.0 * d)
    dout = np.reshape(dc / scale - c / scale * (np.expand_dims(half, -1) +
                                                np.expand_dims(half, -2)), np.shape(out))


batch_lanes("rt.cov_of", ("m", "y"), param="lead")
batch_lanes("rt.corrcoef_of", ("x", "y"), param="lead")


@rev("rt.cov_data")
def cov_data(dout, out, m, y=None, rowvar=True, lead=0):
    dm = rt.cov_data_adj(dout, m, y, rowvar, 0, lead)
    dy = rt.cov_data_adj(dout, m, y, rowvar, 1, lead)


@fwd("rt.cov_data")
def cov_data_fwd(out, m, y=None, rowvar=True, lead=0):
    dout = rt.cov_data(dm, dy, rowvar, lead)


@rev("rt.cov_data_adj")
def cov_data_adj(dout, out, g, m, y=None, rowvar=True, which=0, lead=0):
    dg = rt.cov_data_put(dout, m, y, rowvar, which, lead)


@fwd("rt.cov_data_adj")
def cov_data_adj_fwd(out, g, m, y=None, rowvar=True, which=0, lead=0):
    dout = rt.cov_data_adj(dg, m, y, rowvar, which, lead)


@rev("rt.cov_data_put")
def cov_data_put(dout, out, h, m, y=None, rowvar=True, which=0, lead=0):
    dh = rt.cov_data_adj(dout, m, y, rowvar, which, lead)


@fwd("rt.cov_data_put")
def cov_data_put_fwd(out, h, m, y=None, rowvar=True, which=0, lead=0):
    dout = rt.cov_data_put(dh, m, y, rowvar, which, lead)


batch_lanes("rt.cov_data", ("m", "y"), param="lead")
batch_lanes("rt.cov_data_adj", ("g", "m", "y"), param="lead")
batch_lanes("rt.cov_data_put", ("h", "m", "y"), param="lead")


@rev("rt.cov_grid")
def cov_grid(dout, out, g, x, outer=0):
    dg = np.reshape(dout, np.shape(g))


@fwd("rt.cov_grid")
def cov_grid_fwd(out, g, x, outer=0):
    dout = rt.cov_grid(dg, x, outer)


batch_lanes("rt.cov_grid", ("g", "x"))
nondiff("rt.cov_dof")
batch_same("rt.cov_dof", out_batched=False)


# ---------------------------------------------------------------- np.trapezoid
# sum over axis of pairs * spacing (runtime/statistics.py): pairs linear in y, spacing the
# differences of x (linear) or dx. numpy's spacing argument `dx` would be the name of the
# adjoint (and tangent) of the sample points `x`, so the rules call those `x_`: they are
# passed by position (a keyword x= is refused; dx= is fine).

@rev("np.trapezoid")
def trapezoid(dout, out, y, x_=None, dx=1.0, axis=-1):
    pairs = rt.trapezoid_pairs(y, axis)
    spacing = rt.trapezoid_step(x_, y, axis) + dx * rt.trapezoid_uses_dx(x_)
    g = np.expand_dims(dout, axis)
    dy = rt.trapezoid_pairs_adj(rt.broadcast_like(g * spacing, pairs), axis)
    dx_ = rt.trapezoid_step_adj(g * pairs, x_, y, axis)
    ddx = rt.unbroadcast(g * pairs * rt.trapezoid_uses_dx(x_), dx)


@fwd("np.trapezoid")
def trapezoid_fwd(out, y, x_=None, dx=1.0, axis=-1):
    pairs = rt.trapezoid_pairs(y, axis)
    spacing = rt.trapezoid_step(x_, y, axis) + dx * rt.trapezoid_uses_dx(x_)
    dout = np.sum(rt.trapezoid_pairs(dy, axis) * spacing, axis)
    dout = np.sum(pairs * rt.trapezoid_step(dx_, y, axis), axis)
    dout = np.sum(pairs * ddx * rt.trapezoid_uses_dx(x_), axis)


@batch("np.trapezoid")
def trapezoid_batch(y, x_=None, dx=1.0, axis=-1):
    if dx_batched:
        out = np.sum(rt.trapezoid_pairs(rt.broadcast_batch(y, batch_size, y_batched), axis, 1) *
                     (rt.trapezoid_step(rt.broadcast_batch(x_, batch_size, x__batched),
                                        rt.broadcast_batch(y, batch_size, y_batched), axis, 1) +
                      rt.lane_promote(dx, np.ndim(y) - y_batched) *
                      rt.trapezoid_uses_dx(x_)), rt.batched_axis(axis))
    else:
        out = np.sum(rt.trapezoid_pairs(rt.broadcast_batch(y, batch_size, y_batched), axis, 1) *
                     (rt.trapezoid_step(rt.broadcast_batch(x_, batch_size, x__batched),
                                        rt.broadcast_batch(y, batch_size, y_batched), axis, 1) +
                      dx * rt.trapezoid_uses_dx(x_)), rt.batched_axis(axis))


@rev("rt.trapezoid_pairs")
def trapezoid_pairs(dout, out, y, axis=-1, lead=0):
    dy = rt.trapezoid_pairs_adj(dout, axis, lead)


@fwd("rt.trapezoid_pairs")
def trapezoid_pairs_fwd(out, y, axis=-1, lead=0):
    dout = rt.trapezoid_pairs(dy, axis, lead)


@rev("rt.trapezoid_pairs_adj")
def trapezoid_pairs_adj(dout, out, g, axis=-1, lead=0):
    dg = rt.trapezoid_pairs(dout, axis, lead)


@fwd("rt.trapezoid_pairs_adj")
def trapezoid_pairs_adj_fwd(out, g, axis=-1, lead=0):
    dout = rt.trapezoid_pairs_adj(dg, axis, lead)


@rev("rt.trapezoid_step")
def trapezoid_step(dout, out, x, y, axis=-1, lead=0):
    dx = rt.trapezoid_step_adj(dout, x, y, axis, lead)


@fwd("rt.trapezoid_step")
def trapezoid_step_fwd(out, x, y, axis=-1, lead=0):
    dout = rt.trapezoid_step(dx, y, axis, lead)


@rev("rt.trapezoid_step_adj")
def trapezoid_step_adj(dout, out, g, x, y, axis=-1, lead=0):
    dg = rt.broadcast_like(rt.trapezoid_step(dout, y, axis, lead), g)


@fwd("rt.trapezoid_step_adj")
def trapezoid_step_adj_fwd(out, g, x, y, axis=-1, lead=0):
    dout = rt.trapezoid_step_adj(dg, x, y, axis, lead)


batch_lanes("rt.trapezoid_pairs", ("y",), param="lead")
batch_lanes("rt.trapezoid_pairs_adj", ("g",), param="lead")
batch_lanes("rt.trapezoid_step", ("x", "y"), param="lead")
batch_lanes("rt.trapezoid_step_adj", ("g", "x", "y"), param="lead")
nondiff("rt.trapezoid_uses_dx")
batch_same("rt.trapezoid_uses_dx", out_batched=False)
