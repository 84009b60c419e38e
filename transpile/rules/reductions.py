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
from .core import batch, batch_elementwise, batch_lanes, fwd, nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("np.sum")
def sum(dout, out, a, axis=None, dtype=None, out_=None, keepdims=False):  # noqa: A001
    da = rt.expand(dout, a, axis, keepdims)


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


@rev("rt.sum_adj", container_out=True)
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


@rev("np.cumprod")
def cumprod(dout, out, a, axis=None, dtype=None, out_=None):
    da = rt.cumsum_adj(dout * out, a, axis) / a


@fwd("np.cumprod")
def cumprod_fwd(out, a, axis=None, dtype=None, out_=None):
    dout = out * np.cumsum(da / a, axis)


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


@rev("rt.lane_sum_adj", container_out=True)
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

