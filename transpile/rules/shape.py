"""Shape manipulation: the adjoint undoes the reshaping; the tangent is reshaped the same way
as the value (these functions are linear: each is its own forward rule).

Joining functions take a list/tuple of arrays; the adjoint of that argument is a list/tuple
of arrays (`rt.concatenate_adj` and friends, marked container_out), whose rule joins again.
`np.split` returns a list; its adjoint `dout` is a list, joined back with np.concatenate.

Batching: the batch is axis 0 of a batched value: per-example axes shift by one
(rt.lane_axis, rt.batched_axis); numpy's axis=None ("flattened") becomes each example
flattened (rt.lane_flat) and the last axis. Unbatched arguments that a rule needs batched are
broadcast with rt.broadcast_batch. A shape argument that differs between examples cannot be
batched (the result's shape would differ): rt.cannot_batch raises.
"""
from .core import batch, batch_lanes, batch_same, fwd, nondiff, rev, subscript_primitive, zero_flow
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("np.reshape", view=True)
def reshape(dout, out, a, shape):
    da = np.reshape(dout, np.shape(a))


zero_flow("rearrange", "np.reshape")


@fwd("np.reshape")
def reshape_fwd(out, a, shape):
    dout = np.reshape(da, shape)


@batch("np.reshape")
def reshape_batch(a, shape):
    if shape_batched:
        out = rt.cannot_batch("np.reshape", "its shape differs between examples")
    else:
        out = np.reshape(a, rt.lane_shape(shape, batch_size))


@rev("np.ravel", view=True)
def ravel(dout, out, a):
    da = np.reshape(dout, np.shape(a))


zero_flow("rearrange", "np.ravel")


@fwd("np.ravel")
def ravel_fwd(out, a):
    dout = np.ravel(da)


@batch("np.ravel")
def ravel_batch(a):
    out = np.reshape(a, (batch_size, -1))


@rev("np.squeeze", view=True)
def squeeze(dout, out, a, axis=None):
    da = np.reshape(dout, np.shape(a))


zero_flow("rearrange", "np.squeeze")


@fwd("np.squeeze")
def squeeze_fwd(out, a, axis=None):
    dout = np.squeeze(da, axis)


@batch("np.squeeze")
def squeeze_batch(a, axis=None):
    out = np.squeeze(a, rt.lane_squeeze_axis(axis, np.shape(a)))


@rev("np.expand_dims", view=True)
def expand_dims(dout, out, a, axis):
    da = np.reshape(dout, np.shape(a))


zero_flow("rearrange", "np.expand_dims")


@fwd("np.expand_dims")
def expand_dims_fwd(out, a, axis):
    dout = np.expand_dims(da, axis)


@batch("np.expand_dims")
def expand_dims_batch(a, axis):
    """`axis` counts the result's axes, one more than the example's: rt.batched_axis shifts
    it without checking it against the example's rank (as rt.lane_axis would)."""
    out = np.expand_dims(a, rt.batched_axis(axis))


@rev("np.atleast_1d", "np.atleast_2d", "np.atleast_3d", view=True)
def atleast_nd(dout, out, ary):
    dary = np.reshape(dout, np.shape(ary))


@fwd("np.atleast_1d", "np.atleast_2d", "np.atleast_3d")
def atleast_nd_fwd(out, ary):
    dout = np.reshape(dary, np.shape(out))


@batch("np.atleast_1d")
def atleast_1d_batch(ary):
    out = rt.lane_atleast(ary, 1)


@batch("np.atleast_2d")
def atleast_2d_batch(ary):
    out = rt.lane_atleast(ary, 2)


@batch("np.atleast_3d")
def atleast_3d_batch(ary):
    out = rt.lane_atleast(ary, 3)


@rev("np.transpose", "np.permute_dims", view=True)
def transpose(dout, out, a, axes=None):
    da = np.transpose(dout, rt.inverse_axes(axes))


zero_flow("rearrange", "np.transpose", "np.permute_dims")


@fwd("np.transpose", "np.permute_dims")
def transpose_fwd(out, a, axes=None):
    dout = np.transpose(da, axes)


@batch("np.transpose", "np.permute_dims")
def transpose_batch(a, axes=None):
    out = np.transpose(a, rt.lane_perm(axes, np.ndim(a)))


@rev("np.matrix_transpose", "np.linalg.matrix_transpose", view=True)
def matrix_transpose(dout, out, x):
    dx = np.swapaxes(dout, -1, -2)


@fwd("np.matrix_transpose", "np.linalg.matrix_transpose")
def matrix_transpose_fwd(out, x):
    dout = np.swapaxes(dx, -1, -2)


@batch("np.matrix_transpose", "np.linalg.matrix_transpose")
def matrix_transpose_batch(x):
    out = np.swapaxes(x, -1, -2)


@rev("np.swapaxes", view=True)
def swapaxes(dout, out, a, axis1, axis2):
    da = np.swapaxes(dout, axis1, axis2)


zero_flow("rearrange", "np.swapaxes")


@fwd("np.swapaxes")
def swapaxes_fwd(out, a, axis1, axis2):
    dout = np.swapaxes(da, axis1, axis2)


@batch("np.swapaxes")
def swapaxes_batch(a, axis1, axis2):
    out = np.swapaxes(a, rt.lane_axis(axis1, a), rt.lane_axis(axis2, a))


@rev("np.moveaxis", view=True)
def moveaxis(dout, out, a, source, destination):
    da = np.moveaxis(dout, destination, source)


zero_flow("rearrange", "np.moveaxis")


@fwd("np.moveaxis")
def moveaxis_fwd(out, a, source, destination):
    dout = np.moveaxis(da, source, destination)


@batch("np.moveaxis")
def moveaxis_batch(a, source, destination):
    out = np.moveaxis(a, rt.lane_axis(source, a), rt.lane_axis(destination, a))


@rev("np.flip", view=True)
def flip(dout, out, m, axis=None):
    dm = np.flip(dout, axis)


zero_flow("rearrange", "np.flip")


@fwd("np.flip")
def flip_fwd(out, m, axis=None):
    dout = np.flip(dm, axis)


@batch("np.flip")
def flip_batch(m, axis=None):
    out = np.flip(m, rt.lane_axis(axis, m))


@rev("np.fliplr", view=True)
def fliplr(dout, out, m):
    dm = np.fliplr(dout)


@fwd("np.fliplr")
def fliplr_fwd(out, m):
    dout = np.fliplr(dm)


@batch("np.fliplr")
def fliplr_batch(m):
    out = np.flip(m, 2)


@rev("np.flipud", view=True)
def flipud(dout, out, m):
    dm = np.flipud(dout)


@fwd("np.flipud")
def flipud_fwd(out, m):
    dout = np.flipud(dm)


@batch("np.flipud")
def flipud_batch(m):
    out = np.flip(m, 1)


@rev("np.roll")
def roll(dout, out, a, shift, axis=None):
    da = np.roll(dout, np.negative(shift), axis)


@fwd("np.roll")
def roll_fwd(out, a, shift, axis=None):
    dout = np.roll(da, shift, axis)


@batch("np.roll")
def roll_batch(a, shift, axis=None):
    if shift_batched:
        out = rt.cannot_batch("np.roll", "the shift differs between examples")
    else:
        out = np.reshape(np.roll(rt.lane_flat(a, axis), shift, rt.batched_axis(axis)),
                         np.shape(a))


@rev("np.diagonal", view=True)
def diagonal(dout, out, a, offset=0, axis1=0, axis2=1):
    da = rt.diagonal_adj(dout, a, offset, axis1, axis2)


zero_flow("select", "np.diagonal")


@fwd("np.diagonal")
def diagonal_fwd(out, a, offset=0, axis1=0, axis2=1):
    dout = np.diagonal(da, offset, axis1, axis2)


@batch("np.diagonal")
def diagonal_batch(a, offset=0, axis1=0, axis2=1):
    if offset_batched:
        out = rt.cannot_batch("np.diagonal", "the offset differs between examples")
    else:
        out = np.diagonal(a, offset, rt.lane_axis(axis1, a), rt.lane_axis(axis2, a))


@rev("rt.diagonal_adj")
def diagonal_adj(dout, out, g, a, offset=0, axis1=0, axis2=1):
    dg = np.diagonal(dout, offset, axis1, axis2)


@fwd("rt.diagonal_adj")
def diagonal_adj_fwd(out, g, a, offset=0, axis1=0, axis2=1):
    dout = rt.diagonal_adj(dg, a, offset, axis1, axis2)


@batch("rt.diagonal_adj")
def diagonal_adj_batch(g, a, offset=0, axis1=0, axis2=1):
    """axis1 and axis2 are axes of `a` (g, the diagonal's adjoint, has one axis fewer: its
    rank would map a negative axis elsewhere)."""
    if not a_batched:
        out = rt.diagonal_adj(g, rt.broadcast_batch(a, batch_size), offset,
                              rt.lane_axis(axis1, rt.broadcast_batch(a, batch_size)),
                              rt.lane_axis(axis2, rt.broadcast_batch(a, batch_size)))
    elif g_batched:
        out = rt.diagonal_adj(g, a, offset, rt.lane_axis(axis1, a), rt.lane_axis(axis2, a))
    else:
        out = rt.diagonal_adj(rt.broadcast_batch(g, batch_size), a, offset,
                              rt.lane_axis(axis1, a), rt.lane_axis(axis2, a))


@rev("np.diag")       # (the diagonal of a matrix is a read-only view: frontend/aliasing.py)
def diag(dout, out, v, k=0):
    dv = rt.diag_adj(dout, v, k)


@fwd("np.diag")
def diag_fwd(out, v, k=0):
    dout = np.diag(dv, k)


@batch("np.diag")
def diag_batch(v, k=0):
    if k_batched:
        out = rt.cannot_batch("np.diag", "the diagonal offset k differs between examples")
    else:
        out = rt.lane_diag(v, k)


@rev("rt.diag_adj", view=True)
def diag_adj(dout, out, g, v, k=0):
    dg = np.diag(dout, k)


@fwd("rt.diag_adj")
def diag_adj_fwd(out, g, v, k=0):
    dout = rt.diag_adj(dg, v, k)


@batch("rt.diag_adj")
def diag_adj_batch(g, v, k=0):
    if not g_batched:
        out = rt.lane_diag_adj(rt.broadcast_batch(g, batch_size), v, k)
    elif v_batched:
        out = rt.lane_diag_adj(g, v, k)
    else:
        out = rt.lane_diag_adj(g, rt.broadcast_batch(v, batch_size), k)


@rev("np.tril")
def tril(dout, out, m, k=0):
    dm = np.tril(dout, k)


zero_flow("select", "np.tril")


@fwd("np.tril")
def tril_fwd(out, m, k=0):
    dout = np.tril(dm, k)


@batch("np.tril")
def tril_batch(m, k=0):
    """Examples must be (at least) 2-D: numpy's tril of a 1-D array is a 2-D array."""
    if k_batched:
        out = np.where(rt.lane_eye(np.shape(m)[-2], np.shape(m)[-1], k, bool, True), m, 0)
    else:
        out = np.tril(m, k)


@rev("np.triu")
def triu(dout, out, m, k=0):
    dm = np.triu(dout, k)


zero_flow("select", "np.triu")


@fwd("np.triu")
def triu_fwd(out, m, k=0):
    dout = np.triu(dm, k)


@batch("np.triu")
def triu_batch(m, k=0):
    """Examples must be (at least) 2-D: numpy's triu of a 1-D array is a 2-D array."""
    if k_batched:
        out = np.where(rt.lane_eye(np.shape(m)[-2], np.shape(m)[-1], k - 1, bool, True), 0, m)
    else:
        out = np.triu(m, k)


@rev("np.diff")
def diff(dout, out, a, n=1, axis=-1):
    da = rt.diff_adj(dout, a, n, axis)


@fwd("np.diff")
def diff_fwd(out, a, n=1, axis=-1):
    dout = np.diff(da, n, axis)


@batch("np.diff")
def diff_batch(a, n=1, axis=-1):
    if n_batched:
        out = rt.cannot_batch("np.diff", "the order n differs between examples")
    else:
        out = np.diff(a, n, rt.lane_axis(axis, a))


@rev("rt.diff_adj")
def diff_adj(dout, out, g, a, n=1, axis=-1):
    dg = np.diff(dout, n, axis)


@fwd("rt.diff_adj")
def diff_adj_fwd(out, g, a, n=1, axis=-1):
    dout = rt.diff_adj(dg, a, n, axis)


@batch("rt.diff_adj")
def diff_adj_batch(g, a, n=1, axis=-1):
    if g_batched:
        out = rt.diff_adj(g, g, n, rt.lane_axis(axis, g))
    else:
        out = rt.broadcast_batch(rt.diff_adj(g, a, n, axis), batch_size)


@rev("np.sort")
def sort(dout, out, a, axis=-1, kind=None):
    da = rt.unsort(dout, a, axis)


@fwd("np.sort")
def sort_fwd(out, a, axis=-1, kind=None):
    dout = rt.sort_like(da, a, axis)


@batch("np.sort")
def sort_batch(a, axis=-1, kind=None):
    out = np.sort(rt.lane_flat(a, axis), rt.batched_axis(axis), kind)


@rev("rt.unsort")
def unsort(dout, out, g, a, axis=-1):
    dg = rt.sort_like(dout, a, axis)


@fwd("rt.unsort")
def unsort_fwd(out, g, a, axis=-1):
    dout = rt.unsort(dg, a, axis)


@batch("rt.unsort")
def unsort_batch(g, a, axis=-1):
    if not g_batched:
        out = rt.reshape_like(rt.unsort(rt.broadcast_batch(g, batch_size), rt.lane_flat(a, axis),
                                        rt.batched_axis(axis)), a)
    elif a_batched:
        out = rt.reshape_like(rt.unsort(g, rt.lane_flat(a, axis), rt.batched_axis(axis)), a)
    else:
        out = rt.reshape_like(rt.unsort(g, rt.lane_flat(rt.broadcast_batch(a, batch_size), axis),
                                        rt.batched_axis(axis)), a, 1)


@rev("rt.sort_like")
def sort_like(dout, out, g, a, axis=-1):
    dg = rt.unsort(dout, a, axis)


@fwd("rt.sort_like")
def sort_like_fwd(out, g, a, axis=-1):
    dout = rt.sort_like(dg, a, axis)


@batch("rt.sort_like")
def sort_like_batch(g, a, axis=-1):
    if not g_batched:
        out = rt.sort_like(rt.lane_flat(rt.broadcast_batch(g, batch_size), axis),
                           rt.lane_flat(a, axis), rt.batched_axis(axis))
    elif a_batched:
        out = rt.sort_like(rt.lane_flat(g, axis), rt.lane_flat(a, axis), rt.batched_axis(axis))
    else:
        out = rt.sort_like(rt.lane_flat(g, axis),
                           rt.lane_flat(rt.broadcast_batch(a, batch_size), axis),
                           rt.batched_axis(axis))


# np.partition moves values as np.sort does (kth is an integer: no derivative); where each
# value went is read off the values themselves (rt.unpartition, rt.partition_like), since
# numpy does not promise that np.argpartition picks the same arrangement.
@rev("np.partition")
def partition(dout, out, a, kth, axis=-1, kind="introselect", order=None):
    da = rt.unpartition(dout, a, out, axis)


@fwd("np.partition")
def partition_fwd(out, a, kth, axis=-1, kind="introselect", order=None):
    dout = rt.partition_like(da, a, out, axis)


@batch("np.partition")
def partition_batch(a, kth, axis=-1, kind="introselect", order=None):
    if kth_batched:
        out = rt.cannot_batch("np.partition", "kth differs between examples")
    else:
        out = np.partition(rt.lane_flat(a, axis), kth, rt.batched_axis(axis), kind, order)


# np.argpartition: numpy's arrangement on each 1-d slice depends on that slice alone, so
# the batched call (per-example axis) gives each example what a loop would.
nondiff("np.argpartition")


@batch("np.argpartition")
def argpartition_batch(a, kth, axis=-1, kind="introselect", order=None):
    if kth_batched:
        out = rt.cannot_batch("np.argpartition", "kth differs between examples")
    else:
        out = np.argpartition(rt.lane_flat(a, axis), kth, rt.batched_axis(axis), kind, order)


@rev("rt.unpartition")
def unpartition(dout, out, g, a, part, axis=-1, lead=0):
    dg = rt.partition_like(dout, a, part, axis, lead)


@fwd("rt.unpartition")
def unpartition_fwd(out, g, a, part, axis=-1, lead=0):
    dout = rt.unpartition(dg, a, part, axis, lead)


@batch("rt.unpartition")
def unpartition_batch(g, a, part, axis=-1, lead=0):
    out = rt.unpartition(rt.broadcast_batch(g, batch_size, g_batched),
                         rt.broadcast_batch(a, batch_size, a_batched),
                         rt.broadcast_batch(part, batch_size, part_batched), axis, lead + 1)


@rev("rt.partition_like")
def partition_like(dout, out, g, a, part, axis=-1, lead=0):
    dg = rt.unpartition(dout, a, part, axis, lead)


@fwd("rt.partition_like")
def partition_like_fwd(out, g, a, part, axis=-1, lead=0):
    dout = rt.partition_like(dg, a, part, axis, lead)


@batch("rt.partition_like")
def partition_like_batch(g, a, part, axis=-1, lead=0):
    out = rt.partition_like(rt.broadcast_batch(g, batch_size, g_batched),
                            rt.broadcast_batch(a, batch_size, a_batched),
                            rt.broadcast_batch(part, batch_size, part_batched), axis, lead + 1)


# np.rollaxis(a, axis, start) is np.moveaxis(a, axis, rt.rollaxis_dest(ndim, axis, start))
@rev("np.rollaxis", view=True)
def rollaxis(dout, out, a, axis, start=0):
    da = np.moveaxis(dout, rt.rollaxis_dest(np.ndim(a), axis, start), axis)


@fwd("np.rollaxis")
def rollaxis_fwd(out, a, axis, start=0):
    dout = np.rollaxis(da, axis, start)


@batch("np.rollaxis")
def rollaxis_batch(a, axis, start=0):
    out = np.moveaxis(a, rt.lane_axis(axis, a),
                      rt.lane_axis(rt.rollaxis_dest(np.ndim(a) - 1, axis, start), a))


@rev("np.rot90", view=True)
def rot90(dout, out, m, k=1, axes=(0, 1)):
    dm = np.rot90(dout, -k, axes)


@fwd("np.rot90")
def rot90_fwd(out, m, k=1, axes=(0, 1)):
    dout = np.rot90(dm, k, axes)


@batch("np.rot90")
def rot90_batch(m, k=1, axes=(0, 1)):
    if k_batched:
        out = rt.cannot_batch("np.rot90", "the number of turns k differs between examples")
    else:
        out = np.rot90(m, k, rt.batched_axis(axes))


# np.kron is bilinear: its adjoints (rt.kron_adj_a/b) are linear in the adjoint and in the
# other factor, and transpose to np.kron again. The helpers take `lead` batch axes
# (runtime/shape_helpers.py); batching gives every argument the batch axis and adds one.
@rev("np.kron")
def kron(dout, out, a, b):
    da = rt.kron_adj_a(dout, a, b)
    db = rt.kron_adj_b(dout, a, b)


@fwd("np.kron")
def kron_fwd(out, a, b):
    dout = np.kron(da, b)
    dout = np.kron(a, db)


@batch("np.kron")
def kron_batch(a, b):
    out = rt.kron_lanes(rt.broadcast_batch(a, batch_size, a_batched),
                        rt.broadcast_batch(b, batch_size, b_batched), 1)


@rev("rt.kron_lanes")
def kron_lanes(dout, out, a, b, lead=0):
    da = rt.kron_adj_a(dout, a, b, lead)
    db = rt.kron_adj_b(dout, a, b, lead)


@fwd("rt.kron_lanes")
def kron_lanes_fwd(out, a, b, lead=0):
    dout = rt.kron_lanes(da, b, lead)
    dout = rt.kron_lanes(a, db, lead)


@batch("rt.kron_lanes")
def kron_lanes_batch(a, b, lead=0):
    out = rt.kron_lanes(rt.broadcast_batch(a, batch_size, a_batched),
                        rt.broadcast_batch(b, batch_size, b_batched), lead + 1)


@rev("rt.kron_adj_a")
def kron_adj_a(dout, out, g, a, b, lead=0):
    dg = rt.kron_lanes(dout, b, lead)
    db = rt.kron_adj_b(g, dout, b, lead)


@fwd("rt.kron_adj_a")
def kron_adj_a_fwd(out, g, a, b, lead=0):
    dout = rt.kron_adj_a(dg, a, b, lead)
    dout = rt.kron_adj_a(g, a, db, lead)


@batch("rt.kron_adj_a")
def kron_adj_a_batch(g, a, b, lead=0):
    out = rt.kron_adj_a(rt.broadcast_batch(g, batch_size, g_batched),
                        rt.broadcast_batch(a, batch_size, a_batched),
                        rt.broadcast_batch(b, batch_size, b_batched), lead + 1)


@rev("rt.kron_adj_b")
def kron_adj_b(dout, out, g, a, b, lead=0):
    dg = rt.kron_lanes(a, dout, lead)
    da = rt.kron_adj_a(g, a, dout, lead)


@fwd("rt.kron_adj_b")
def kron_adj_b_fwd(out, g, a, b, lead=0):
    dout = rt.kron_adj_b(dg, a, b, lead)
    dout = rt.kron_adj_b(g, da, b, lead)


@batch("rt.kron_adj_b")
def kron_adj_b_batch(g, a, b, lead=0):
    out = rt.kron_adj_b(rt.broadcast_batch(g, batch_size, g_batched),
                        rt.broadcast_batch(a, batch_size, a_batched),
                        rt.broadcast_batch(b, batch_size, b_batched), lead + 1)


# np.cross is bilinear: g . (a x b) = a . (b x g) = b . (g x a) (no conjugation) gives the
# adjoints, rt.cross_adj_a/b, which transpose back to cross products.
@rev("np.cross")
def cross(dout, out, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    da = rt.cross_adj_a(dout, a, b, axisa, axisb, axisc, axis)
    db = rt.cross_adj_b(dout, a, b, axisa, axisb, axisc, axis)


@fwd("np.cross")
def cross_fwd(out, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    dout = np.cross(da, b, axisa, axisb, axisc, axis)
    dout = np.cross(a, db, axisa, axisb, axisc, axis)


@batch("np.cross")
def cross_batch(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    out = rt.cross_lanes(rt.broadcast_batch(a, batch_size, a_batched),
                         rt.broadcast_batch(b, batch_size, b_batched),
                         axisa, axisb, axisc, axis, 1)


@rev("rt.cross_lanes")
def cross_lanes(dout, out, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    da = rt.cross_adj_a(dout, a, b, axisa, axisb, axisc, axis, lead)
    db = rt.cross_adj_b(dout, a, b, axisa, axisb, axisc, axis, lead)


@fwd("rt.cross_lanes")
def cross_lanes_fwd(out, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    dout = rt.cross_lanes(da, b, axisa, axisb, axisc, axis, lead)
    dout = rt.cross_lanes(a, db, axisa, axisb, axisc, axis, lead)


@batch("rt.cross_lanes")
def cross_lanes_batch(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    out = rt.cross_lanes(rt.broadcast_batch(a, batch_size, a_batched),
                         rt.broadcast_batch(b, batch_size, b_batched),
                         axisa, axisb, axisc, axis, lead + 1)


@rev("rt.cross_adj_a")
def cross_adj_a(dout, out, g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    dg = rt.cross_lanes(dout, b, axisa, axisb, axisc, axis, lead)
    db = rt.cross_adj_b(g, dout, b, axisa, axisb, axisc, axis, lead)


@fwd("rt.cross_adj_a")
def cross_adj_a_fwd(out, g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    dout = rt.cross_adj_a(dg, a, b, axisa, axisb, axisc, axis, lead)
    dout = rt.cross_adj_a(g, a, db, axisa, axisb, axisc, axis, lead)


@batch("rt.cross_adj_a")
def cross_adj_a_batch(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    out = rt.cross_adj_a(rt.broadcast_batch(g, batch_size, g_batched),
                         rt.broadcast_batch(a, batch_size, a_batched),
                         rt.broadcast_batch(b, batch_size, b_batched),
                         axisa, axisb, axisc, axis, lead + 1)


@rev("rt.cross_adj_b")
def cross_adj_b(dout, out, g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    dg = rt.cross_lanes(a, dout, axisa, axisb, axisc, axis, lead)
    da = rt.cross_adj_a(g, a, dout, axisa, axisb, axisc, axis, lead)


@fwd("rt.cross_adj_b")
def cross_adj_b_fwd(out, g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    dout = rt.cross_adj_b(dg, a, b, axisa, axisb, axisc, axis, lead)
    dout = rt.cross_adj_b(g, da, b, axisa, axisb, axisc, axis, lead)


@batch("rt.cross_adj_b")
def cross_adj_b_batch(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lead=0):
    out = rt.cross_adj_b(rt.broadcast_batch(g, batch_size, g_batched),
                         rt.broadcast_batch(a, batch_size, a_batched),
                         rt.broadcast_batch(b, batch_size, b_batched),
                         axisa, axisb, axisc, axis, lead + 1)


# np.convolve(a, v) is bilinear (commutative, no conjugation); np.correlate(a, v) is the
# convolution of a with w = conj(v) reversed, so v's adjoint is w's, reversed and conjugated
# (the transpose of conj is conj). kind="correlate" places mode 'same''s window as
# np.correlate does, which differs from np.convolve when a is the shorter.
@rev("np.convolve")
def convolve(dout, out, a, v, mode="full"):
    da = rt.convolve_adj_a(dout, a, v, mode)
    dv = rt.convolve_adj_v(dout, a, v, mode)


@fwd("np.convolve")
def convolve_fwd(out, a, v, mode="full"):
    dout = np.convolve(da, v, mode)
    dout = np.convolve(a, dv, mode)


@batch("np.convolve")
def convolve_batch(a, v, mode="full"):
    out = rt.convolve_lanes(rt.broadcast_batch(a, batch_size, a_batched),
                            rt.broadcast_batch(v, batch_size, v_batched), mode, 1)


@rev("np.correlate")
def correlate(dout, out, a, v, mode="valid"):
    w = np.conj(np.flip(v))
    da = rt.convolve_adj_a(dout, a, w, mode, 0, "correlate")
    dv = np.conj(np.flip(rt.convolve_adj_v(dout, a, w, mode, 0, "correlate")))


@fwd("np.correlate")
def correlate_fwd(out, a, v, mode="valid"):
    dout = np.correlate(da, v, mode)
    dout = np.correlate(a, dv, mode)


@batch("np.correlate")
def correlate_batch(a, v, mode="valid"):
    out = rt.convolve_lanes(rt.broadcast_batch(a, batch_size, a_batched),
                            np.conj(np.flip(rt.broadcast_batch(v, batch_size, v_batched), -1)),
                            mode, 1, "correlate")


@rev("rt.convolve_lanes")
def convolve_lanes(dout, out, a, v, mode="full", lead=0, kind="convolve"):
    da = rt.convolve_adj_a(dout, a, v, mode, lead, kind)
    dv = rt.convolve_adj_v(dout, a, v, mode, lead, kind)


@fwd("rt.convolve_lanes")
def convolve_lanes_fwd(out, a, v, mode="full", lead=0, kind="convolve"):
    dout = rt.convolve_lanes(da, v, mode, lead, kind)
    dout = rt.convolve_lanes(a, dv, mode, lead, kind)


@batch("rt.convolve_lanes")
def convolve_lanes_batch(a, v, mode="full", lead=0, kind="convolve"):
    out = rt.convolve_lanes(rt.broadcast_batch(a, batch_size, a_batched),
                            rt.broadcast_batch(v, batch_size, v_batched), mode, lead + 1, kind)


@rev("rt.convolve_adj_a")
def convolve_adj_a(dout, out, g, a, v, mode="full", lead=0, kind="convolve"):
    dg = rt.convolve_lanes(dout, v, mode, lead, kind)
    dv = rt.convolve_adj_v(g, dout, v, mode, lead, kind)


@fwd("rt.convolve_adj_a")
def convolve_adj_a_fwd(out, g, a, v, mode="full", lead=0, kind="convolve"):
    dout = rt.convolve_adj_a(dg, a, v, mode, lead, kind)
    dout = rt.convolve_adj_a(g, a, dv, mode, lead, kind)


@batch("rt.convolve_adj_a")
def convolve_adj_a_batch(g, a, v, mode="full", lead=0, kind="convolve"):
    out = rt.convolve_adj_a(rt.broadcast_batch(g, batch_size, g_batched),
                            rt.broadcast_batch(a, batch_size, a_batched),
                            rt.broadcast_batch(v, batch_size, v_batched), mode, lead + 1, kind)


@rev("rt.convolve_adj_v")
def convolve_adj_v(dout, out, g, a, v, mode="full", lead=0, kind="convolve"):
    dg = rt.convolve_lanes(a, dout, mode, lead, kind)
    da = rt.convolve_adj_a(g, a, dout, mode, lead, kind)


@fwd("rt.convolve_adj_v")
def convolve_adj_v_fwd(out, g, a, v, mode="full", lead=0, kind="convolve"):
    dout = rt.convolve_adj_v(dg, a, v, mode, lead, kind)
    dout = rt.convolve_adj_v(g, da, v, mode, lead, kind)


@batch("rt.convolve_adj_v")
def convolve_adj_v_batch(g, a, v, mode="full", lead=0, kind="convolve"):
    out = rt.convolve_adj_v(rt.broadcast_batch(g, batch_size, g_batched),
                            rt.broadcast_batch(a, batch_size, a_batched),
                            rt.broadcast_batch(v, batch_size, v_batched), mode, lead + 1, kind)

# ---------------------------------------------------------------- joining and splitting

@rev("np.concatenate", "np.concat")
def concatenate(dout, out, arrays, axis=0):
    darrays = rt.concatenate_adj(dout, arrays, axis)


@fwd("np.concatenate", "np.concat")
def concatenate_fwd(out, arrays, axis=0):
    dout = np.concatenate(darrays, axis)


@batch("np.concatenate", "np.concat")
def concatenate_batch(arrays, axis=0):
    out = np.concatenate(rt.lane_flat(rt.broadcast_batch(arrays, batch_size, arrays_spec), axis),
                         rt.batched_axis(axis))


@rev("rt.concatenate_adj", container_out=True, view=True)
def concatenate_adj(dout, out, g, arrays, axis=0):
    dg = np.concatenate(dout, axis)


@fwd("rt.concatenate_adj")
def concatenate_adj_fwd(out, g, arrays, axis=0):
    dout = rt.concatenate_adj(dg, arrays, axis)


@batch("rt.concatenate_adj")
def concatenate_adj_batch(g, arrays, axis=0):
    if not g_batched:
        out = rt.reshape_like(rt.concatenate_adj(
            rt.broadcast_batch(g, batch_size),
            rt.lane_flat(rt.broadcast_batch(arrays, batch_size, arrays_spec), axis),
            rt.batched_axis(axis)), rt.broadcast_batch(arrays, batch_size, arrays_spec))
    elif arrays_batched:
        out = rt.reshape_like(rt.concatenate_adj(
            g, rt.lane_flat(rt.broadcast_batch(arrays, batch_size, arrays_spec), axis),
            rt.batched_axis(axis)), rt.broadcast_batch(arrays, batch_size, arrays_spec))
    else:
        out = rt.reshape_like(rt.concatenate_adj(
            g, rt.lane_flat(rt.broadcast_batch(arrays, batch_size), axis),
            rt.batched_axis(axis)), arrays, 1)


@rev("np.stack")
def stack(dout, out, arrays, axis=0):
    darrays = rt.stack_adj(dout, arrays, axis)


@fwd("np.stack")
def stack_fwd(out, arrays, axis=0):
    dout = np.stack(darrays, axis)


@batch("np.stack")
def stack_batch(arrays, axis=0):
    out = np.stack(rt.broadcast_batch(arrays, batch_size, arrays_spec), rt.lane_axis(axis, arrays))


@rev("rt.stack_adj", container_out=True)
def stack_adj(dout, out, g, arrays, axis=0):
    dg = np.stack(dout, axis)


@fwd("rt.stack_adj")
def stack_adj_fwd(out, g, arrays, axis=0):
    dout = rt.stack_adj(dg, arrays, axis)


@batch("rt.stack_adj")
def stack_adj_batch(g, arrays, axis=0):
    if g_batched:
        out = rt.stack_adj(g, arrays, rt.lane_axis(axis, g))
    else:
        out = rt.stack_adj(rt.broadcast_batch(g, batch_size), arrays,
                           rt.lane_axis(axis, rt.broadcast_batch(g, batch_size)))


@rev("np.vstack", "np.row_stack")
def vstack(dout, out, tup):
    dtup = rt.vstack_adj(dout, tup)


@fwd("np.vstack", "np.row_stack")
def vstack_fwd(out, tup):
    dout = np.vstack(dtup)


@batch("np.vstack", "np.row_stack")
def vstack_batch(tup):
    out = np.concatenate(rt.lane_atleast(rt.broadcast_batch(tup, batch_size, tup_spec), 2), 1)


@rev("rt.vstack_adj", container_out=True, view=True)
def vstack_adj(dout, out, g, tup):
    dg = np.vstack(dout)


@fwd("rt.vstack_adj")
def vstack_adj_fwd(out, g, tup):
    dout = rt.vstack_adj(dg, tup)


@batch("rt.vstack_adj")
def vstack_adj_batch(g, tup):
    if not g_batched:
        out = rt.reshape_like(rt.concatenate_adj(
            rt.broadcast_batch(g, batch_size),
            rt.lane_atleast(rt.broadcast_batch(tup, batch_size, tup_spec), 2), 1),
            rt.broadcast_batch(tup, batch_size, tup_spec))
    elif tup_batched:
        out = rt.reshape_like(rt.concatenate_adj(
            g, rt.lane_atleast(rt.broadcast_batch(tup, batch_size, tup_spec), 2), 1),
            rt.broadcast_batch(tup, batch_size, tup_spec))
    else:
        out = rt.reshape_like(rt.concatenate_adj(
            g, rt.lane_atleast(rt.broadcast_batch(tup, batch_size), 2), 1), tup, 1)


@rev("np.hstack")
def hstack(dout, out, tup):
    dtup = rt.hstack_adj(dout, tup)


@fwd("np.hstack")
def hstack_fwd(out, tup):
    dout = np.hstack(dtup)


@batch("np.hstack")
def hstack_batch(tup):
    out = np.concatenate(rt.lane_atleast(rt.broadcast_batch(tup, batch_size, tup_spec), 1),
                         rt.lane_hsplit_axis(np.ndim(rt.broadcast_batch(tup, batch_size,
                                                                        tup_spec)[0])))


@rev("rt.hstack_adj", container_out=True, view=True)
def hstack_adj(dout, out, g, tup):
    dg = np.hstack(dout)


@fwd("rt.hstack_adj")
def hstack_adj_fwd(out, g, tup):
    dout = rt.hstack_adj(dg, tup)


@batch("rt.hstack_adj")
def hstack_adj_batch(g, tup):
    if not g_batched:
        out = rt.reshape_like(rt.concatenate_adj(
            rt.broadcast_batch(g, batch_size),
            rt.lane_atleast(rt.broadcast_batch(tup, batch_size, tup_spec), 1),
            rt.lane_hsplit_axis(np.ndim(rt.broadcast_batch(tup, batch_size, tup_spec)[0]))),
            rt.broadcast_batch(tup, batch_size, tup_spec))
    elif tup_batched:
        out = rt.reshape_like(rt.concatenate_adj(
            g, rt.lane_atleast(rt.broadcast_batch(tup, batch_size, tup_spec), 1),
            rt.lane_hsplit_axis(np.ndim(rt.broadcast_batch(tup, batch_size, tup_spec)[0]))),
            rt.broadcast_batch(tup, batch_size, tup_spec))
    else:
        out = rt.reshape_like(rt.concatenate_adj(
            g, rt.lane_atleast(rt.broadcast_batch(tup, batch_size), 1),
            rt.lane_hsplit_axis(np.ndim(tup[0]) + 1)), tup, 1)


@rev("np.split", "np.array_split", view=True, container_out=True)
def split(dout, out, ary, indices_or_sections, axis=0):
    dary = np.concatenate(dout, axis)


@fwd("np.split", "np.array_split")
def split_fwd(out, ary, indices_or_sections, axis=0):
    """np.array_split: np.split too, wherever np.split succeeds."""
    dout = np.array_split(dary, indices_or_sections, axis)


@batch("np.split")
def split_batch(ary, indices_or_sections, axis=0):
    if indices_or_sections_batched:
        out = rt.cannot_batch("np.split", "the split points differ between examples")
    else:
        out = np.split(ary, indices_or_sections, rt.lane_axis(axis, ary))


@batch("np.array_split")
def array_split_batch(ary, indices_or_sections, axis=0):
    if indices_or_sections_batched:
        out = rt.cannot_batch("np.array_split", "the split points differ between examples")
    else:
        out = np.array_split(ary, indices_or_sections, rt.lane_axis(axis, ary))


@rev("np.hsplit", view=True, container_out=True)
def hsplit(dout, out, ary, indices_or_sections):
    dary = np.hstack(dout)


@fwd("np.hsplit")
def hsplit_fwd(out, ary, indices_or_sections):
    dout = np.hsplit(dary, indices_or_sections)


@batch("np.hsplit")
def hsplit_batch(ary, indices_or_sections):
    if indices_or_sections_batched:
        out = rt.cannot_batch("np.hsplit", "the split points differ between examples")
    else:
        out = np.split(ary, indices_or_sections, rt.lane_hsplit_axis(np.ndim(ary)))


@rev("np.vsplit", view=True, container_out=True)
def vsplit(dout, out, ary, indices_or_sections):
    dary = np.vstack(dout)


@fwd("np.vsplit")
def vsplit_fwd(out, ary, indices_or_sections):
    dout = np.vsplit(dary, indices_or_sections)


@batch("np.vsplit")
def vsplit_batch(ary, indices_or_sections):
    if indices_or_sections_batched:
        out = rt.cannot_batch("np.vsplit", "the split points differ between examples")
    else:
        out = np.split(ary, indices_or_sections, 1)


@rev("np.dsplit", view=True, container_out=True)
def dsplit(dout, out, ary, indices_or_sections):
    """np.dsplit cuts along axis 2 of an array of rank 3 or more."""
    dary = np.concatenate(dout, 2)


@fwd("np.dsplit")
def dsplit_fwd(out, ary, indices_or_sections):
    dout = np.dsplit(dary, indices_or_sections)


@batch("np.dsplit")
def dsplit_batch(ary, indices_or_sections):
    if indices_or_sections_batched:
        out = rt.cannot_batch("np.dsplit", "the split points differ between examples")
    else:
        out = np.split(ary, indices_or_sections, 3)


# np.append(arr, values, axis) is np.concatenate((arr, values), axis) (axis None: both
# flattened, which np.concatenate's axis=None does too)
@rev("np.append")
def append(dout, out, arr, values, axis=None):
    parts = rt.concatenate_adj(dout, (arr, values), axis)
    darr = parts[0]
    dvalues = parts[1]


@fwd("np.append")
def append_fwd(out, arr, values, axis=None):
    dout = np.append(darr, dvalues, axis)


@batch("np.append")
def append_batch(arr, values, axis=None):
    out = np.concatenate((rt.lane_flat(rt.broadcast_batch(arr, batch_size, arr_batched), axis),
                          rt.lane_flat(rt.broadcast_batch(values, batch_size, values_batched),
                                       axis)), rt.batched_axis(axis))


# np.column_stack: 1-D items become columns, then all join along axis 1
@rev("np.column_stack")
def column_stack(dout, out, tup):
    dtup = rt.column_stack_adj(dout, tup)


@fwd("np.column_stack")
def column_stack_fwd(out, tup):
    dout = np.column_stack(dtup)


@batch("np.column_stack")
def column_stack_batch(tup):
    out = rt.column_stack_lanes(rt.broadcast_batch(tup, batch_size, tup_spec), 1)


@rev("rt.column_stack_lanes")
def column_stack_lanes(dout, out, tup, lead=0):
    dtup = rt.column_stack_adj(dout, tup, lead)


@fwd("rt.column_stack_lanes")
def column_stack_lanes_fwd(out, tup, lead=0):
    dout = rt.column_stack_lanes(dtup, lead)


@batch("rt.column_stack_lanes")
def column_stack_lanes_batch(tup, lead=0):
    out = rt.column_stack_lanes(rt.broadcast_batch(tup, batch_size, tup_spec), lead + 1)


@rev("rt.column_stack_adj", container_out=True)
def column_stack_adj(dout, out, g, tup, lead=0):
    dg = rt.column_stack_lanes(dout, lead)


@fwd("rt.column_stack_adj")
def column_stack_adj_fwd(out, g, tup, lead=0):
    dout = rt.column_stack_adj(dg, tup, lead)


@batch("rt.column_stack_adj")
def column_stack_adj_batch(g, tup, lead=0):
    out = rt.column_stack_adj(rt.broadcast_batch(g, batch_size, g_batched),
                              rt.broadcast_batch(tup, batch_size, tup_spec), lead + 1)


@rev("np.tile")
def tile(dout, out, A, reps):
    dA = rt.tile_adj(dout, A, reps)


@fwd("np.tile")
def tile_fwd(out, A, reps):
    dout = np.tile(dA, reps)


@batch("np.tile")
def tile_batch(A, reps):
    if reps_batched:
        out = rt.cannot_batch("np.tile", "the repetitions differ between examples")
    else:
        out = np.tile(rt.lane_promote(A, np.size(reps)), rt.lane_reps(reps))


@rev("rt.tile_adj")
def tile_adj(dout, out, g, A, reps):
    dg = np.tile(dout, reps)


@fwd("rt.tile_adj")
def tile_adj_fwd(out, g, A, reps):
    dout = rt.tile_adj(dg, A, reps)


@batch("rt.tile_adj")
def tile_adj_batch(g, A, reps):
    if not g_batched:
        out = rt.reshape_like(rt.tile_adj(rt.broadcast_batch(g, batch_size),
                                          rt.lane_promote(A, np.size(reps)),
                                          rt.lane_reps(reps)), A)
    elif A_batched:
        out = rt.reshape_like(rt.tile_adj(g, rt.lane_promote(A, np.size(reps)),
                                          rt.lane_reps(reps)), A)
    else:
        out = rt.reshape_like(rt.tile_adj(
            g, rt.lane_promote(rt.broadcast_batch(A, batch_size), np.size(reps)),
            rt.lane_reps(reps)), A, 1)


@rev("np.repeat")
def repeat(dout, out, a, repeats, axis=None):
    da = rt.repeat_adj(dout, a, repeats, axis)


@fwd("np.repeat")
def repeat_fwd(out, a, repeats, axis=None):
    dout = np.repeat(da, repeats, axis)


@batch("np.repeat")
def repeat_batch(a, repeats, axis=None):
    if repeats_batched:
        out = rt.cannot_batch("np.repeat", "the repeat counts differ between examples")
    else:
        out = np.repeat(rt.lane_flat(a, axis), repeats, rt.batched_axis(axis))


@rev("rt.repeat_adj")
def repeat_adj(dout, out, g, a, repeats, axis=None):
    dg = np.repeat(dout, repeats, axis)


@fwd("rt.repeat_adj")
def repeat_adj_fwd(out, g, a, repeats, axis=None):
    dout = rt.repeat_adj(dg, a, repeats, axis)


@batch("rt.repeat_adj")
def repeat_adj_batch(g, a, repeats, axis=None):
    if not g_batched:
        out = rt.reshape_like(rt.repeat_adj(rt.broadcast_batch(g, batch_size),
                                            rt.lane_flat(a, axis), repeats,
                                            rt.batched_axis(axis)), a)
    elif a_batched:
        out = rt.reshape_like(rt.repeat_adj(g, rt.lane_flat(a, axis), repeats,
                                            rt.batched_axis(axis)), a)
    else:
        out = rt.reshape_like(rt.repeat_adj(
            g, rt.lane_flat(rt.broadcast_batch(a, batch_size), axis), repeats,
            rt.batched_axis(axis)), a, 1)


@rev("np.pad")
def pad(dout, out, array, pad_width, mode="constant", constant_values=0):
    """Constant mode only (rt.unpad raises for other modes); `constant_values` a scalar."""
    darray = rt.unpad(dout, array, pad_width, mode)
    dconstant_values = rt.pad_value_adj(dout, array, pad_width)


@fwd("np.pad")
def pad_fwd(out, array, pad_width, mode="constant", constant_values=0):
    dout = np.pad(darray, pad_width, rt.linear_pad_mode(mode))
    dout = np.pad(np.zeros_like(array), pad_width, constant_values=dconstant_values)


@batch("np.pad")
def pad_batch(array, pad_width, mode="constant", constant_values=0):
    """A constant that differs between examples (a number per example) is added on the
    padding: np.pad(array, 0) + c * (1 on the padding)."""
    if pad_width_batched:
        out = rt.cannot_batch("np.pad", "the pad widths differ between examples")
    elif not constant_values_batched:
        out = rt.lane_pad(array, pad_width, mode, constant_values)
    elif array_batched:
        out = rt.lane_pad(array, pad_width, mode) + rt.align(
            constant_values, rt.pad_mask(np.shape(array)[1:], pad_width)) * rt.pad_mask(
            np.shape(array)[1:], pad_width)
    else:
        out = np.pad(array, pad_width, mode) + rt.align(
            constant_values, rt.pad_mask(np.shape(array), pad_width)) * rt.pad_mask(
            np.shape(array), pad_width)


# the mode of a tangent's padding (refused where the padding picks an element)
nondiff("rt.linear_pad_mode", side_effect=True)
batch_same("rt.linear_pad_mode", out_batched=False)


@rev("rt.unpad", view=True)
def unpad(dout, out, g, array, pad_width, mode="constant"):
    dg = np.pad(dout, pad_width, mode)


@fwd("rt.unpad")
def unpad_fwd(out, g, array, pad_width, mode="constant"):
    dout = rt.unpad(dg, array, pad_width, mode)


@batch("rt.unpad")
def unpad_batch(g, array, pad_width, mode="constant"):
    if g_batched:
        out = rt.unpad(g, g, rt.lane_pad_width(pad_width, np.ndim(g)), mode)
    else:
        out = rt.broadcast_batch(rt.unpad(g, g, pad_width, mode), batch_size)


@rev("rt.pad_value_adj")
def pad_value_adj(dout, out, g, array, pad_width):
    dg = np.broadcast_to(dout, np.shape(g)) - np.pad(rt.expand(dout, array), pad_width)


@fwd("rt.pad_value_adj")
def pad_value_adj_fwd(out, g, array, pad_width):
    dout = rt.pad_value_adj(dg, array, pad_width)


@batch("rt.pad_value_adj")
def pad_value_adj_batch(g, array, pad_width):
    if not g_batched:
        out = rt.broadcast_batch(rt.pad_value_adj(g, g, pad_width), batch_size)
    elif array_batched:
        out = np.sum(g * rt.pad_mask(np.shape(array)[1:], pad_width), axis=rt.lane_axis(None, g))
    else:
        out = np.sum(g * rt.pad_mask(np.shape(array), pad_width), axis=rt.lane_axis(None, g))


@rev("np.full")
def full(dout, out, shape, fill_value, dtype=None):
    dfill_value = rt.unbroadcast(dout, fill_value)


@fwd("np.full")
def full_fwd(out, shape, fill_value, dtype=None):
    dout = np.full(shape, dfill_value, dtype)


@batch("np.full")
def full_batch(shape, fill_value, dtype=None):
    if shape_batched:
        out = rt.cannot_batch("np.full", "its shape differs between examples")
    else:
        out = np.full(rt.lane_shape(shape, batch_size),
                      rt.lane_promote(fill_value, np.size(shape)), dtype)


@rev("np.full_like")
def full_like(dout, out, a, fill_value, dtype=None):
    dfill_value = rt.unbroadcast(dout, fill_value)


@fwd("np.full_like")
def full_like_fwd(out, a, fill_value, dtype=None):
    dout = np.full_like(a, dfill_value, dtype)


@batch("np.full_like")
def full_like_batch(a, fill_value, dtype=None):
    if not fill_value_batched:
        out = np.full_like(a, fill_value, dtype)
    elif a_batched:
        out = np.full_like(a, rt.lane_promote(fill_value, np.ndim(a) - 1), dtype)
    else:
        out = np.full_like(rt.broadcast_batch(a, batch_size),
                           rt.lane_promote(fill_value, np.ndim(a)), dtype)


# ---------------------------------------------------------------- arrays made from values
# np.linspace and np.logspace are linear (and exponential) in their ends; np.arange in its
# start and step. Their lengths depend on the arguments only through integer parts.

@rev("np.linspace")
def linspace(dout, out, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """out = start * (1 - t) + stop * t, t from 0 to 1 along `axis` (rt.linspace_t)."""
    t = rt.linspace_t(out, num, endpoint, axis, dtype)
    dstart = rt.unbroadcast(np.sum(dout * (1.0 - t), axis), start)
    dstop = rt.unbroadcast(np.sum(dout * t, axis), stop)


@fwd("np.linspace")
def linspace_fwd(out, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """Linear in (start, stop): the tangent is linspace of the tangents (also the step's,
    with retstep=True)."""
    dout = np.linspace(dstart, dstop, num, endpoint, retstep,
                       rt.inexact_dtype(dtype, "np.linspace"), axis)


@batch("np.linspace")
def linspace_batch(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    if num_batched:
        out = rt.cannot_batch("np.linspace", "the number of samples differs between examples")
    elif not start_batched:
        out = np.linspace(start, rt.align(stop, start), num, endpoint, retstep, dtype,
                          rt.batched_axis(axis))
    elif not stop_batched:
        out = np.linspace(rt.align(start, stop), stop, num, endpoint, retstep, dtype,
                          rt.batched_axis(axis))
    else:
        out = np.linspace(rt.align_lanes(start, stop), rt.align_lanes(stop, start), num,
                          endpoint, retstep, dtype, rt.batched_axis(axis))


@rev("np.logspace")
def logspace(dout, out, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """out = base ** linspace(start, stop): d out = out * log(base) * d linspace."""
    w = dout * out * rt.logspace_log_base(start, stop, base, axis)
    t = rt.linspace_t(out, num, endpoint, axis, dtype)
    dstart = rt.unbroadcast(np.sum(w * (1.0 - t), axis), start)
    dstop = rt.unbroadcast(np.sum(w * t, axis), stop)
    dbase = rt.no_derivative("np.logspace with respect to its base",
                             "write base ** np.linspace(start, stop, num) instead.")


@fwd("np.logspace")
def logspace_fwd(out, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    dout = out * rt.logspace_log_base(start, stop, base, axis) * \
        np.linspace(dstart, dstop, num, endpoint, False, rt.inexact_dtype(dtype, "np.logspace"),
                    axis)
    dout = rt.no_derivative("np.logspace with respect to its base",
                            "write base ** np.linspace(start, stop, num) instead.", dbase)


@batch("np.logspace")
def logspace_batch(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    if num_batched:
        out = rt.cannot_batch("np.logspace", "the number of samples differs between examples")
    elif base_batched:
        out = rt.cannot_batch("np.logspace", "the base differs between examples")
    elif not start_batched:
        out = np.logspace(start, rt.align(stop, start), num, endpoint, base, dtype,
                          rt.batched_axis(axis))
    elif not stop_batched:
        out = np.logspace(rt.align(start, stop), stop, num, endpoint, base, dtype,
                          rt.batched_axis(axis))
    else:
        out = np.logspace(rt.align_lanes(start, stop), rt.align_lanes(stop, start), num,
                          endpoint, base, dtype, rt.batched_axis(axis))


@rev("np.arange")
def arange(dout, out, start, stop=None, step=None, dtype=None):
    """out[i] = start + i * step (with one argument, `start` holds numpy's stop and
    out[i] = i); rt.arange_weight gives d out / d start and d out / d step."""
    dstart = np.sum(dout * rt.arange_weight(out, stop, 0))
    dstep = np.sum(dout * rt.arange_weight(out, stop, 1))


@fwd("np.arange")
def arange_fwd(out, start, stop=None, step=None, dtype=None):
    dout = dstart * rt.arange_weight(out, stop, 0)
    dout = dstep * rt.arange_weight(out, stop, 1)


@batch("np.arange")
def arange_batch(start=None, stop=None, step=None, dtype=None):
    out = rt.cannot_batch("np.arange", "its bounds differ between examples, so its length "
                           "would too")


# np.vander(x, N)[i, j] = x[i] ** p[j], with p the column exponents (rt.vander_powers):
# rt.pow_minus_one is x ** (p - 1), 0 where p == 0, so the constant column has slope 0
# even at x = 0.
@rev("np.vander")
def vander(dout, out, x, N=None, increasing=False):
    p = rt.vander_powers(x, N, increasing)
    dx = np.sum(dout * p * rt.pow_minus_one(np.expand_dims(x, -1), p), axis=-1)


@fwd("np.vander")
def vander_fwd(out, x, N=None, increasing=False):
    p = rt.vander_powers(x, N, increasing)
    dout = np.expand_dims(dx, -1) * p * rt.pow_minus_one(np.expand_dims(x, -1), p)


@batch("np.vander")
def vander_batch(x, N=None, increasing=False):
    if N_batched:
        out = rt.cannot_batch("np.vander", "the number of columns N differs between examples")
    else:
        out = np.expand_dims(x, -1) ** rt.vander_powers(x, N, increasing)


nondiff("rt.vander_powers")


@batch("rt.vander_powers", out_batched=False)
def vander_powers_batch(x, N=None, increasing=False):
    """The same for every example: only the length of x's last axis is read."""
    if N_batched:
        out = rt.cannot_batch("np.vander", "the number of columns N differs between examples")
    else:
        out = rt.vander_powers(x, N, increasing)


# np.meshgrid(x0, x1, ...): grid k is input k (flattened) repeated along the other axes;
# its adjoint sums grid k's adjoint over them (rt.meshgrid_adj), whose transpose puts a value
# back as grid k (rt.meshgrid_place). Up to four inputs (slots x0..x3). copy=False returns
# views of the inputs: view=True.
@rev("np.meshgrid", view=True)
def meshgrid(dout, out, x0=None, x1=None, x2=None, x3=None, *, copy=True, sparse=False,
             indexing="xy"):
    dx0 = rt.meshgrid_adj(dout, 0, x0, indexing)
    dx1 = rt.meshgrid_adj(dout, 1, x1, indexing)
    dx2 = rt.meshgrid_adj(dout, 2, x2, indexing)
    dx3 = rt.meshgrid_adj(dout, 3, x3, indexing)


@fwd("np.meshgrid")
def meshgrid_fwd(out, x0=None, x1=None, x2=None, x3=None, *, copy=True, sparse=False,
                 indexing="xy"):
    dout = rt.meshgrid_lanes(sparse, indexing, 0, dx0, dx1, dx2, dx3)


@batch("np.meshgrid")
def meshgrid_batch(x0=None, x1=None, x2=None, x3=None, *, copy=True, sparse=False,
                   indexing="xy"):
    out = rt.meshgrid_lanes(sparse, indexing, 1, rt.broadcast_batch(x0, batch_size, x0_batched),
                            rt.broadcast_batch(x1, batch_size, x1_batched),
                            rt.broadcast_batch(x2, batch_size, x2_batched),
                            rt.broadcast_batch(x3, batch_size, x3_batched))


@rev("rt.meshgrid_lanes", container_out=True)
def meshgrid_lanes(dout, out, sparse, indexing, lead, x0=None, x1=None, x2=None, x3=None):
    dx0 = rt.meshgrid_adj(dout, 0, x0, indexing, lead)
    dx1 = rt.meshgrid_adj(dout, 1, x1, indexing, lead)
    dx2 = rt.meshgrid_adj(dout, 2, x2, indexing, lead)
    dx3 = rt.meshgrid_adj(dout, 3, x3, indexing, lead)


@fwd("rt.meshgrid_lanes")
def meshgrid_lanes_fwd(out, sparse, indexing, lead, x0=None, x1=None, x2=None, x3=None):
    dout = rt.meshgrid_lanes(sparse, indexing, lead, dx0, dx1, dx2, dx3)


@batch("rt.meshgrid_lanes")
def meshgrid_lanes_batch(sparse, indexing, lead, x0=None, x1=None, x2=None, x3=None):
    out = rt.meshgrid_lanes(sparse, indexing, lead + 1,
                            rt.broadcast_batch(x0, batch_size, x0_batched),
                            rt.broadcast_batch(x1, batch_size, x1_batched),
                            rt.broadcast_batch(x2, batch_size, x2_batched),
                            rt.broadcast_batch(x3, batch_size, x3_batched))


@rev("rt.meshgrid_adj")
def meshgrid_adj(dout, out, g, k, x, indexing, lead=0):
    dg = rt.meshgrid_place(dout, g, k, indexing, lead)


@fwd("rt.meshgrid_adj")
def meshgrid_adj_fwd(out, g, k, x, indexing, lead=0):
    dout = rt.meshgrid_adj(dg, k, x, indexing, lead)


@batch("rt.meshgrid_adj")
def meshgrid_adj_batch(g, k, x, indexing, lead=0):
    out = rt.meshgrid_adj(rt.broadcast_batch(g, batch_size, g_spec), k,
                          rt.broadcast_batch(x, batch_size, x_batched), indexing, lead + 1)


@rev("rt.meshgrid_place", container_out=True)
def meshgrid_place(dout, out, h, g, k, indexing, lead=0):
    dh = rt.meshgrid_adj(dout, k, h, indexing, lead)


@fwd("rt.meshgrid_place")
def meshgrid_place_fwd(out, h, g, k, indexing, lead=0):
    dout = rt.meshgrid_place(dh, g, k, indexing, lead)


@batch("rt.meshgrid_place")
def meshgrid_place_batch(h, g, k, indexing, lead=0):
    out = rt.meshgrid_place(rt.broadcast_batch(h, batch_size, h_batched),
                            rt.broadcast_batch(g, batch_size, g_spec), k, indexing, lead + 1)


nondiff("rt.linspace_t", "rt.logspace_log_base", "rt.arange_weight", "rt.inexact_dtype")


@batch("rt.linspace_t", out_batched=False)
def linspace_t_batch(samples, num, endpoint=True, axis=0, dtype=None):
    """The same for every example: one example's shape decides it."""
    out = rt.linspace_t(rt.lanes_probe(samples), num, endpoint, axis, dtype)


@batch("rt.logspace_log_base", out_batched=False)
def logspace_log_base_batch(start, stop, base=10.0, axis=0):
    if base_batched:
        out = rt.cannot_batch("np.logspace", "the base differs between examples")
    elif start_batched:
        out = rt.logspace_log_base(rt.lanes_probe(start),
                                   rt.lanes_probe(stop) if stop_batched else stop, base, axis)
    else:
        out = rt.logspace_log_base(start, rt.lanes_probe(stop), base, axis)


@batch("rt.arange_weight", "rt.inexact_dtype")
def arange_weight_batch(a, b=None, c=None):
    out = rt.cannot_batch("np.arange", "its bounds differ between examples, so its length "
                          "would too")


# np.r_[...] and np.c_[...] are concatenations: the front end calls rt.r_ / rt.c_ with the
# subscript's items as one tuple, and each item's adjoint is the part of the result it became.
subscript_primitive("np.r_", "rt.r_")
subscript_primitive("np.c_", "rt.c_")


@rev("rt.r_")
def r_(dout, out, items):
    ditems = rt.index_concat_adj(dout, "r_", items)


@fwd("rt.r_")
def r__fwd(out, items):
    dout = rt.index_concat_tangent("r_", items, ditems)


@rev("rt.c_")
def c_(dout, out, items):
    ditems = rt.index_concat_adj(dout, "c_", items)


@fwd("rt.c_")
def c__fwd(out, items):
    dout = rt.index_concat_tangent("c_", items, ditems)


@batch("rt.r_")
def r__batch(items):
    out = rt.index_concat_lanes("r_", rt.broadcast_items(items, batch_size, items_spec), 1)


@batch("rt.c_")
def c__batch(items):
    out = rt.index_concat_lanes("c_", rt.broadcast_items(items, batch_size, items_spec), 1)


# the same with `lead` batch axes on every number and array item (slices and directive
# strings are the same for all examples): rt.broadcast_items gives the others the batch axis
@rev("rt.index_concat_lanes")
def index_concat_lanes(dout, out, kind, items, lead=0):
    ditems = rt.index_concat_adj(dout, kind, items, lead)


@fwd("rt.index_concat_lanes")
def index_concat_lanes_fwd(out, kind, items, lead=0):
    dout = rt.index_concat_tangent(kind, items, ditems, lead)


@batch("rt.index_concat_lanes")
def index_concat_lanes_batch(kind, items, lead=0):
    out = rt.index_concat_lanes(kind, rt.broadcast_items(items, batch_size, items_spec),
                                lead + 1)


@rev("rt.index_concat_adj", container_out=True)
def index_concat_adj(dout, out, g, kind, items, lead=0):
    dg = rt.index_concat_tangent(kind, items, dout, lead)


@fwd("rt.index_concat_adj")
def index_concat_adj_fwd(out, g, kind, items, lead=0):
    dout = rt.index_concat_adj(dg, kind, items, lead)


@batch("rt.index_concat_adj")
def index_concat_adj_batch(g, kind, items, lead=0):
    out = rt.index_concat_adj(rt.broadcast_batch(g, batch_size, g_batched), kind,
                              rt.broadcast_items(items, batch_size, items_spec), lead + 1)


@rev("rt.index_concat_tangent")
def index_concat_tangent(dout, out, kind, items, tangents, lead=0):
    dtangents = rt.index_concat_adj(dout, kind, items, lead)


@fwd("rt.index_concat_tangent")
def index_concat_tangent_fwd(out, kind, items, tangents, lead=0):
    dout = rt.index_concat_tangent(kind, items, dtangents, lead)


@batch("rt.index_concat_tangent")
def index_concat_tangent_batch(kind, items, tangents, lead=0):
    out = rt.index_concat_tangent(kind, rt.broadcast_items(items, batch_size, items_spec),
                                  rt.broadcast_items(tangents, batch_size, tangents_spec),
                                  lead + 1)


@rev("rt.broadcast_items", container_out=True)
def broadcast_items(dout, out, items, n, have=False, outer=0):
    ditems = rt.sum_batch(dout, have, outer)


@fwd("rt.broadcast_items")
def broadcast_items_fwd(out, items, n, have=False, outer=0):
    dout = rt.broadcast_items(ditems, n, have, outer)


@batch("rt.broadcast_items")
def broadcast_items_batch(items, n, have=False, outer=0):
    """Items this vmap does not batch get its axis first; then the inner one, behind it."""
    out = rt.broadcast_items(rt.broadcast_items(items, batch_size, items_spec), n, have,
                             outer + 1)


nondiff("np.shape", "np.ndim", "np.size", "len", "range", "int", "bool", "isinstance",
        "rt.dtype_of", "np.zeros", "np.ones", "np.empty", "np.eye",
        "np.identity", "rt.dict_keys", "rt.is_mapping",
        "rt.mapping_keys", "rt.merged_keys", "np.result_type", "type",
        "np.indices", "np.tri", "np.diag_indices",
        "np.tril_indices", "np.triu_indices", "np.broadcast_shapes", "np.iscomplexobj",
        "np.isrealobj", "np.isscalar", "np.issubdtype", "np.isdtype", "np.can_cast",
        "np.promote_types", "np.finfo", "np.iinfo")


@batch("np.shape", out_batched=False)
def shape_batch(a):
    out = rt.lane_shape_of(a)


@batch("np.ndim", out_batched=False)
def ndim_batch(a):
    out = np.ndim(a) - 1


@batch("np.size", out_batched=False)
def size_batch(a, axis=None):
    out = rt.lane_size(a, axis)


@batch("isinstance", out_batched=False)
def isinstance_batch(obj, classinfo):
    """The batch loses whether an example was a Python number or a 0-d array (see
    rt.lane_example)."""
    out = isinstance(rt.lane_example(obj), classinfo)


@batch("type", out_batched=False)
def type_batch(obj):
    out = type(rt.lane_example(obj))


@batch("rt.is_instance", out_batched=False)
def is_instance_batch(obj, classinfo):
    out = rt.is_instance(rt.lane_example(obj), classinfo)


@batch("rt.type_of", out_batched=False)
def type_of_batch(obj):
    out = rt.type_of(rt.lane_example(obj))


@batch("np.isscalar", out_batched=False)
def isscalar_batch(element):
    out = np.isscalar(rt.lane_example(element))


batch_same("rt.dtype_of", "rt.dict_keys", "rt.is_mapping", "rt.mapping_keys", "rt.merged_keys",
           "np.result_type", "np.iscomplexobj", "np.isrealobj", "np.issubdtype", "np.isdtype",
           "np.can_cast", "np.promote_types", "np.finfo", "np.iinfo", out_batched=False)


@batch("int")
def int_batch(x=0):
    out = rt.lane_int(x)


@batch("bool")
def bool_batch(x=False):
    out = rt.lane_bool(x)


@batch("range")
def range_batch(start, stop=None, step=None):
    out = rt.cannot_batch("range", "its bounds differ between examples, so its length "
                           "would too (a loop over such a range is batched: write it as "
                           "`for i in range(n)` directly)")


@batch("np.zeros")
def zeros_batch(shape, dtype=None, order="C"):
    out = rt.cannot_batch("np.zeros", "its shape differs between examples")


@batch("np.ones")
def ones_batch(shape, dtype=None, order="C"):
    out = rt.cannot_batch("np.ones", "its shape differs between examples")


@batch("np.empty")
def empty_batch(shape, dtype=None, order="C"):
    out = rt.cannot_batch("np.empty", "its shape differs between examples")


@batch("np.identity")
def identity_batch(n, dtype=None):
    out = rt.cannot_batch("np.identity", "its shape differs between examples")


@batch("np.indices")
def indices_batch(dimensions, dtype=None, sparse=False):
    out = rt.cannot_batch("np.indices", "its shape differs between examples")


@batch("np.broadcast_shapes")
def broadcast_shapes_batch(shape0=(), shape1=(), shape2=(), shape3=()):
    out = rt.cannot_batch("np.broadcast_shapes", "the shapes differ between examples")


@batch("np.diag_indices")
def diag_indices_batch(n, ndim=2):
    out = rt.cannot_batch("np.diag_indices", "its shape differs between examples")


@batch("np.tril_indices")
def tril_indices_batch(n, k=0, m=None):
    out = rt.cannot_batch("np.tril_indices", "its arguments differ between examples, so the "
                           "number of indices would too")


@batch("np.triu_indices")
def triu_indices_batch(n, k=0, m=None):
    out = rt.cannot_batch("np.triu_indices", "its arguments differ between examples, so "
                           "the number of indices would too")


@batch("np.eye")
def eye_batch(N, M=None, k=0, dtype=None):
    if N_batched:
        out = rt.cannot_batch("np.eye", "its shape differs between examples")
    elif M_batched:
        out = rt.cannot_batch("np.eye", "its shape differs between examples")
    else:
        out = rt.lane_eye(N, M, k, dtype)


@batch("np.tri")
def tri_batch(N, M=None, k=0, dtype=None):
    if N_batched:
        out = rt.cannot_batch("np.tri", "its shape differs between examples")
    elif M_batched:
        out = rt.cannot_batch("np.tri", "its shape differs between examples")
    else:
        out = rt.lane_eye(N, M, k, dtype, True)
nondiff("print", side_effect=True)
batch_same("print", out_batched=False)   # prints the whole batch


# ---------------------------------------------------------------- batching of the rest


# joining and splitting: a list of arrays only some of which are batched (its spec a tuple,
# `arrays_spec`) has the others broadcast first (rt.broadcast_batch(.., True) is folded away)


@batch("np.broadcast_to")
def broadcast_to_batch(array, shape):
    if shape_batched:
        out = rt.cannot_batch("np.broadcast_to", "its shape differs between examples")
    else:
        out = np.broadcast_to(rt.lane_promote(array, np.size(shape)),
                              rt.lane_shape(shape, batch_size))


# questions about shapes and types: the same answer for every example


# making arrays: a batched size cannot be batched; batched values (np.full's fill, the
# ends of np.linspace, the diagonal offset of np.eye) can


# the reshaping helpers that batching rules emit (every array argument carries `outer`
# leading batch axes); each is linear in its first argument

@rev("rt.lane_flat", view=True, container_out=True)
def lane_flat(dout, out, a, axis, outer=0):
    da = rt.reshape_like(dout, a)


@fwd("rt.lane_flat")
def lane_flat_fwd(out, a, axis, outer=0):
    dout = rt.lane_flat(da, axis, outer)


@rev("rt.reshape_like", view=True, container_out=True)
def reshape_like(dout, out, g, a, lanes=0, skip=0):
    dg = rt.reshape_like(dout, g)


@fwd("rt.reshape_like")
def reshape_like_fwd(out, g, a, lanes=0, skip=0):
    dout = rt.reshape_like(dg, a, lanes, skip)


@batch("rt.reshape_like")
def reshape_like_batch(g, a, lanes=0, skip=0):
    if not g_batched:
        out = rt.broadcast_batch(rt.reshape_like(g, rt.broadcast_batch(a, batch_size, a_spec),
                                                 lanes, skip + 1), batch_size)
    elif a_batched:
        out = rt.reshape_like(rt.broadcast_batch(g, batch_size, g_spec),
                              rt.broadcast_batch(a, batch_size, a_spec), lanes + 1, skip + 1)
    else:
        out = rt.reshape_like(rt.broadcast_batch(g, batch_size, g_spec), a, lanes + 1, skip)


@rev("rt.lane_promote", view=True, container_out=True)
def lane_promote(dout, out, x, rank, outer=0):
    dx = rt.reshape_like(dout, x)


@fwd("rt.lane_promote")
def lane_promote_fwd(out, x, rank, outer=0):
    dout = rt.lane_promote(dx, rank, outer)


@rev("rt.lane_atleast", view=True, container_out=True)
def lane_atleast(dout, out, x, nd, outer=0):
    dx = rt.reshape_like(dout, x)


@fwd("rt.lane_atleast")
def lane_atleast_fwd(out, x, nd, outer=0):
    dout = rt.lane_atleast(dx, nd, outer)


@rev("rt.lane_diag", view=True)
def lane_diag(dout, out, v, k=0, outer=0):
    dv = rt.lane_diag_adj(dout, v, k, outer)


@fwd("rt.lane_diag")
def lane_diag_fwd(out, v, k=0, outer=0):
    dout = rt.lane_diag(dv, k, outer)


@batch("rt.lane_diag")
def lane_diag_batch(v, k=0, outer=0):
    if k_batched:
        out = rt.cannot_batch("np.diag", "the diagonal offset k differs between examples")
    else:
        out = rt.lane_diag(v, k, outer + 1)


@rev("rt.lane_diag_adj", view=True)
def lane_diag_adj(dout, out, g, v, k=0, outer=0):
    dg = rt.lane_diag(dout, k, outer)


@fwd("rt.lane_diag_adj")
def lane_diag_adj_fwd(out, g, v, k=0, outer=0):
    dout = rt.lane_diag_adj(dg, v, k, outer)


@rev("rt.lane_pad")
def lane_pad(dout, out, array, pad_width, mode="constant", constant_values=0, outer=0):
    darray = rt.unpad(dout, array, rt.lane_pad_width(pad_width, np.ndim(array), outer), mode)
    dconstant_values = rt.pad_value_adj(dout, array,
                                        rt.lane_pad_width(pad_width, np.ndim(array), outer))


@fwd("rt.lane_pad")
def lane_pad_fwd(out, array, pad_width, mode="constant", constant_values=0, outer=0):
    dout = rt.lane_pad(darray, pad_width, mode, 0, outer)
    dout = rt.lane_pad(np.zeros_like(array), pad_width, "constant", dconstant_values, outer)


@batch("rt.lane_pad")
def lane_pad_batch(array, pad_width, mode="constant", constant_values=0, outer=0):
    """A constant that differs between examples of this (outer) batch is added on the
    padding, as in np.pad's rule."""
    if pad_width_batched:
        out = rt.cannot_batch("np.pad", "the pad widths differ between examples")
    elif not constant_values_batched:
        out = rt.lane_pad(array, pad_width, mode, constant_values, outer + 1)
    elif array_batched:
        out = rt.lane_pad(array, pad_width, mode, 0, outer + 1) + rt.align(
            constant_values, rt.pad_mask(np.shape(array)[1:], rt.lane_pad_width(
                pad_width, np.ndim(array) - 1, outer))) * rt.pad_mask(
            np.shape(array)[1:], rt.lane_pad_width(pad_width, np.ndim(array) - 1, outer))
    else:
        out = rt.lane_pad(array, pad_width, mode, 0, outer) + rt.align(
            constant_values, rt.pad_mask(np.shape(array), rt.lane_pad_width(
                pad_width, np.ndim(array), outer))) * rt.pad_mask(
            np.shape(array), rt.lane_pad_width(pad_width, np.ndim(array), outer))


# helpers that answer questions about shapes and axes: their arguments are the same for
# every example unless axes or shapes are computed from the data, which cannot be batched
nondiff("rt.batched_axis", "rt.lane_axes", "rt.lane_perm", "rt.lane_squeeze_axis",
        "rt.lane_hsplit_axis", "rt.lane_reps", "rt.lane_pad_width", "rt.pad_mask",
        "rt.rollaxis_dest")


@batch("rt.batched_axis", "rt.lane_axes", "rt.lane_perm", "rt.lane_squeeze_axis",
       "rt.lane_hsplit_axis", "rt.lane_reps", "rt.lane_pad_width", "rt.pad_mask",
       "rt.rollaxis_dest")
def axes_helper_batch(a, b=None, c=None):
    out = rt.cannot_batch("an axis or shape argument", "it differs between examples",
                          "compute axes and shapes from shapes, not from values")


nondiff("rt.lane_shape_of", "rt.lane_size", "rt.lane_int", "rt.lane_bool", "rt.lane_eye")
nondiff("rt.lane_example", view=True)
batch_same("rt.lane_int", "rt.lane_bool", "rt.lane_eye")   # elementwise / k's leading axes


# vmap of vmap: unbatched array arguments are broadcast, `outer` goes up by one
batch_lanes("rt.lane_flat", ("a",))
batch_lanes("rt.lane_promote", ("x",))
batch_lanes("rt.lane_atleast", ("x",))
batch_lanes("rt.lane_diag_adj", ("g", "v"))
batch_lanes("rt.lane_shape_of", ("x",), out_batched=False)
batch_lanes("rt.lane_size", ("a",), out_batched=False)
batch_lanes("rt.lane_example", ("x",))
# np.multiply.outer(a, b) reshapes a so (frontend/calls.py): a shape per example
nondiff("rt.outer_shape")
batch_lanes("rt.outer_shape", ("a", "b"), out_batched=False)
# np.diff(a, prepend=v) joins v, broadcast to this shape (frontend/calls.py): per example
nondiff("rt.diff_piece_shape")
batch_lanes("rt.diff_piece_shape", ("a", "value"), out_batched=False)
