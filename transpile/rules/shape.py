"""Shape manipulation: the adjoint undoes the reshaping; the tangent is reshaped the same way
as the value (these functions are linear: each is its own forward rule).

Joining functions take a list/tuple of arrays; the adjoint of that argument is a list/tuple
of arrays (`rt.concatenate_adj` and friends, marked container_out), whose rule joins again.
`np.split` returns a list; its adjoint `dout` is a list, joined back with np.concatenate.
"""
from .core import batch, fwd, nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("np.reshape", view=True)
def reshape(dout, out, a, shape):
    da = np.reshape(dout, np.shape(a))


@fwd("np.reshape")
def reshape_fwd(out, a, shape):
    dout = np.reshape(da, shape)


@rev("np.ravel", view=True)
def ravel(dout, out, a):
    da = np.reshape(dout, np.shape(a))


@fwd("np.ravel")
def ravel_fwd(out, a):
    dout = np.ravel(da)


@rev("np.squeeze", view=True)
def squeeze(dout, out, a, axis=None):
    da = np.reshape(dout, np.shape(a))


@fwd("np.squeeze")
def squeeze_fwd(out, a, axis=None):
    dout = np.squeeze(da, axis)


@rev("np.expand_dims", view=True)
def expand_dims(dout, out, a, axis):
    da = np.reshape(dout, np.shape(a))


@fwd("np.expand_dims")
def expand_dims_fwd(out, a, axis):
    dout = np.expand_dims(da, axis)


@rev("np.atleast_1d", "np.atleast_2d", "np.atleast_3d", view=True)
def atleast_nd(dout, out, ary):
    dary = np.reshape(dout, np.shape(ary))


@fwd("np.atleast_1d", "np.atleast_2d", "np.atleast_3d")
def atleast_nd_fwd(out, ary):
    dout = np.reshape(dary, np.shape(out))


@rev("np.transpose", "np.permute_dims", view=True)
def transpose(dout, out, a, axes=None):
    da = np.transpose(dout, rt.inverse_axes(axes))


@fwd("np.transpose", "np.permute_dims")
def transpose_fwd(out, a, axes=None):
    dout = np.transpose(da, axes)


@rev("np.matrix_transpose", "np.linalg.matrix_transpose", view=True)
def matrix_transpose(dout, out, x):
    dx = np.swapaxes(dout, -1, -2)


@fwd("np.matrix_transpose", "np.linalg.matrix_transpose")
def matrix_transpose_fwd(out, x):
    dout = np.swapaxes(dx, -1, -2)


@rev("np.swapaxes", view=True)
def swapaxes(dout, out, a, axis1, axis2):
    da = np.swapaxes(dout, axis1, axis2)


@fwd("np.swapaxes")
def swapaxes_fwd(out, a, axis1, axis2):
    dout = np.swapaxes(da, axis1, axis2)


@rev("np.moveaxis", view=True)
def moveaxis(dout, out, a, source, destination):
    da = np.moveaxis(dout, destination, source)


@fwd("np.moveaxis")
def moveaxis_fwd(out, a, source, destination):
    dout = np.moveaxis(da, source, destination)


@rev("np.flip", view=True)
def flip(dout, out, m, axis=None):
    dm = np.flip(dout, axis)


@fwd("np.flip")
def flip_fwd(out, m, axis=None):
    dout = np.flip(dm, axis)


@rev("np.fliplr", view=True)
def fliplr(dout, out, m):
    dm = np.fliplr(dout)


@fwd("np.fliplr")
def fliplr_fwd(out, m):
    dout = np.fliplr(dm)


@rev("np.flipud", view=True)
def flipud(dout, out, m):
    dm = np.flipud(dout)


@fwd("np.flipud")
def flipud_fwd(out, m):
    dout = np.flipud(dm)


@rev("np.roll")
def roll(dout, out, a, shift, axis=None):
    da = np.roll(dout, np.negative(shift), axis)


@fwd("np.roll")
def roll_fwd(out, a, shift, axis=None):
    dout = np.roll(da, shift, axis)


@rev("np.diagonal", view=True)
def diagonal(dout, out, a, offset=0, axis1=0, axis2=1):
    da = rt.diagonal_adj(dout, a, offset, axis1, axis2)


@fwd("np.diagonal")
def diagonal_fwd(out, a, offset=0, axis1=0, axis2=1):
    dout = np.diagonal(da, offset, axis1, axis2)


@rev("rt.diagonal_adj")
def diagonal_adj(dout, out, g, a, offset=0, axis1=0, axis2=1):
    dg = np.diagonal(dout, offset, axis1, axis2)


@fwd("rt.diagonal_adj")
def diagonal_adj_fwd(out, g, a, offset=0, axis1=0, axis2=1):
    dout = rt.diagonal_adj(dg, a, offset, axis1, axis2)


@rev("np.diag")
def diag(dout, out, v, k=0):
    dv = rt.diag_adj(dout, v, k)


@fwd("np.diag")
def diag_fwd(out, v, k=0):
    dout = np.diag(dv, k)


@rev("rt.diag_adj")
def diag_adj(dout, out, g, v, k=0):
    dg = np.diag(dout, k)


@fwd("rt.diag_adj")
def diag_adj_fwd(out, g, v, k=0):
    dout = rt.diag_adj(dg, v, k)


@rev("np.tril")
def tril(dout, out, m, k=0):
    dm = np.tril(dout, k)


@fwd("np.tril")
def tril_fwd(out, m, k=0):
    dout = np.tril(dm, k)


@rev("np.triu")
def triu(dout, out, m, k=0):
    dm = np.triu(dout, k)


@fwd("np.triu")
def triu_fwd(out, m, k=0):
    dout = np.triu(dm, k)


@rev("np.diff")
def diff(dout, out, a, n=1, axis=-1):
    da = rt.diff_adj(dout, a, n, axis)


@fwd("np.diff")
def diff_fwd(out, a, n=1, axis=-1):
    dout = np.diff(da, n, axis)


@rev("rt.diff_adj")
def diff_adj(dout, out, g, a, n=1, axis=-1):
    dg = np.diff(dout, n, axis)


@fwd("rt.diff_adj")
def diff_adj_fwd(out, g, a, n=1, axis=-1):
    dout = rt.diff_adj(dg, a, n, axis)


@rev("np.sort")
def sort(dout, out, a, axis=-1, kind=None):
    da = rt.unsort(dout, a, axis)


@fwd("np.sort")
def sort_fwd(out, a, axis=-1, kind=None):
    dout = rt.sort_like(da, a, axis)


@rev("rt.unsort")
def unsort(dout, out, g, a, axis=-1):
    dg = rt.sort_like(dout, a, axis)


@fwd("rt.unsort")
def unsort_fwd(out, g, a, axis=-1):
    dout = rt.unsort(dg, a, axis)


@rev("rt.sort_like")
def sort_like(dout, out, g, a, axis=-1):
    dg = rt.unsort(dout, a, axis)


@fwd("rt.sort_like")
def sort_like_fwd(out, g, a, axis=-1):
    dout = rt.sort_like(dg, a, axis)

# ---------------------------------------------------------------- joining and splitting

@rev("np.concatenate", "np.concat")
def concatenate(dout, out, arrays, axis=0):
    darrays = rt.concatenate_adj(dout, arrays, axis)


@fwd("np.concatenate", "np.concat")
def concatenate_fwd(out, arrays, axis=0):
    dout = np.concatenate(darrays, axis)


@rev("rt.concatenate_adj", container_out=True)
def concatenate_adj(dout, out, g, arrays, axis=0):
    dg = np.concatenate(dout, axis)


@fwd("rt.concatenate_adj")
def concatenate_adj_fwd(out, g, arrays, axis=0):
    dout = rt.concatenate_adj(dg, arrays, axis)


@rev("np.stack")
def stack(dout, out, arrays, axis=0):
    darrays = rt.stack_adj(dout, arrays, axis)


@fwd("np.stack")
def stack_fwd(out, arrays, axis=0):
    dout = np.stack(darrays, axis)


@rev("rt.stack_adj", container_out=True)
def stack_adj(dout, out, g, arrays, axis=0):
    dg = np.stack(dout, axis)


@fwd("rt.stack_adj")
def stack_adj_fwd(out, g, arrays, axis=0):
    dout = rt.stack_adj(dg, arrays, axis)


@rev("np.vstack", "np.row_stack")
def vstack(dout, out, tup):
    dtup = rt.vstack_adj(dout, tup)


@fwd("np.vstack", "np.row_stack")
def vstack_fwd(out, tup):
    dout = np.vstack(dtup)


@rev("rt.vstack_adj", container_out=True)
def vstack_adj(dout, out, g, tup):
    dg = np.vstack(dout)


@fwd("rt.vstack_adj")
def vstack_adj_fwd(out, g, tup):
    dout = rt.vstack_adj(dg, tup)


@rev("np.hstack")
def hstack(dout, out, tup):
    dtup = rt.hstack_adj(dout, tup)


@fwd("np.hstack")
def hstack_fwd(out, tup):
    dout = np.hstack(dtup)


@rev("rt.hstack_adj", container_out=True)
def hstack_adj(dout, out, g, tup):
    dg = np.hstack(dout)


@fwd("rt.hstack_adj")
def hstack_adj_fwd(out, g, tup):
    dout = rt.hstack_adj(dg, tup)


@rev("np.split", "np.array_split", container_out=True)
def split(dout, out, ary, indices_or_sections, axis=0):
    dary = np.concatenate(dout, axis)


@fwd("np.split", "np.array_split")
def split_fwd(out, ary, indices_or_sections, axis=0):
    """np.array_split: np.split too, wherever np.split succeeds."""
    dout = np.array_split(dary, indices_or_sections, axis)


@rev("np.hsplit", container_out=True)
def hsplit(dout, out, ary, indices_or_sections):
    dary = np.hstack(dout)


@fwd("np.hsplit")
def hsplit_fwd(out, ary, indices_or_sections):
    dout = np.hsplit(dary, indices_or_sections)


@rev("np.vsplit", container_out=True)
def vsplit(dout, out, ary, indices_or_sections):
    dary = np.vstack(dout)


@fwd("np.vsplit")
def vsplit_fwd(out, ary, indices_or_sections):
    dout = np.vsplit(dary, indices_or_sections)


@rev("np.tile")
def tile(dout, out, A, reps):
    dA = rt.tile_adj(dout, A, reps)


@fwd("np.tile")
def tile_fwd(out, A, reps):
    dout = np.tile(dA, reps)


@rev("rt.tile_adj")
def tile_adj(dout, out, g, A, reps):
    dg = np.tile(dout, reps)


@fwd("rt.tile_adj")
def tile_adj_fwd(out, g, A, reps):
    dout = rt.tile_adj(dg, A, reps)


@rev("np.repeat")
def repeat(dout, out, a, repeats, axis=None):
    da = rt.repeat_adj(dout, a, repeats, axis)


@fwd("np.repeat")
def repeat_fwd(out, a, repeats, axis=None):
    dout = np.repeat(da, repeats, axis)


@rev("rt.repeat_adj")
def repeat_adj(dout, out, g, a, repeats, axis=None):
    dg = np.repeat(dout, repeats, axis)


@fwd("rt.repeat_adj")
def repeat_adj_fwd(out, g, a, repeats, axis=None):
    dout = rt.repeat_adj(dg, a, repeats, axis)


@rev("np.pad")
def pad(dout, out, array, pad_width, mode="constant", constant_values=0):
    """Constant mode only (rt.unpad raises for other modes); `constant_values` a scalar."""
    darray = rt.unpad(dout, array, pad_width, mode)
    dconstant_values = rt.pad_value_adj(dout, array, pad_width)


@fwd("np.pad")
def pad_fwd(out, array, pad_width, mode="constant", constant_values=0):
    dout = np.pad(darray, pad_width, mode)
    dout = np.pad(np.zeros_like(array), pad_width, constant_values=dconstant_values)


@rev("rt.unpad")
def unpad(dout, out, g, array, pad_width, mode="constant"):
    dg = np.pad(dout, pad_width)


@fwd("rt.unpad")
def unpad_fwd(out, g, array, pad_width, mode="constant"):
    dout = rt.unpad(dg, array, pad_width, mode)


@rev("rt.pad_value_adj")
def pad_value_adj(dout, out, g, array, pad_width):
    dg = np.broadcast_to(dout, np.shape(g)) - np.pad(rt.expand(dout, array), pad_width)


@fwd("rt.pad_value_adj")
def pad_value_adj_fwd(out, g, array, pad_width):
    dout = rt.pad_value_adj(dg, array, pad_width)


@rev("np.full")
def full(dout, out, shape, fill_value, dtype=None):
    dfill_value = rt.unbroadcast(dout, fill_value)


@fwd("np.full")
def full_fwd(out, shape, fill_value, dtype=None):
    dout = np.full(shape, dfill_value, dtype)


@rev("np.full_like")
def full_like(dout, out, a, fill_value, dtype=None):
    dfill_value = rt.unbroadcast(dout, fill_value)


@fwd("np.full_like")
def full_like_fwd(out, a, fill_value, dtype=None):
    dout = np.full_like(a, dfill_value, dtype)


nondiff("np.shape", "np.ndim", "np.size", "len", "range", "int", "bool", "isinstance",
        "rt.dtype_of", "np.arange", "np.zeros", "np.ones", "np.empty", "np.eye",
        "np.identity", "np.linspace", "rt.dict_keys", "np.result_type", "type",
        "np.logspace", "np.indices", "np.tri", "np.diag_indices",
        "np.tril_indices", "np.triu_indices", "np.broadcast_shapes", "np.iscomplexobj",
        "np.isrealobj", "np.isscalar")
nondiff("print", side_effect=True)
