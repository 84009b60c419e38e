"""Shape manipulation: the adjoint undoes the reshaping.

Joining functions take a list/tuple of arrays; the adjoint of that argument is a list/tuple
of arrays (`rt.concatenate_adj` and friends, marked container_out), whose rule joins again.
`np.split` returns a list; its adjoint `dout` is a list, joined back with np.concatenate.
"""
from .core import nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("np.reshape", view=True)
def reshape(dout, out, a, shape):
    da = np.reshape(dout, np.shape(a))


@rev("np.ravel", view=True)
def ravel(dout, out, a):
    da = np.reshape(dout, np.shape(a))


@rev("np.squeeze", view=True)
def squeeze(dout, out, a, axis=None):
    da = np.reshape(dout, np.shape(a))


@rev("np.expand_dims", view=True)
def expand_dims(dout, out, a, axis):
    da = np.reshape(dout, np.shape(a))


@rev("np.atleast_1d", "np.atleast_2d", "np.atleast_3d", view=True)
def atleast_nd(dout, out, ary):
    dary = np.reshape(dout, np.shape(ary))


@rev("np.transpose", "np.permute_dims", view=True)
def transpose(dout, out, a, axes=None):
    da = np.transpose(dout, rt.inverse_axes(axes))


@rev("np.matrix_transpose", "np.linalg.matrix_transpose", view=True)
def matrix_transpose(dout, out, x):
    dx = np.swapaxes(dout, -1, -2)


@rev("np.swapaxes", view=True)
def swapaxes(dout, out, a, axis1, axis2):
    da = np.swapaxes(dout, axis1, axis2)


@rev("np.moveaxis", view=True)
def moveaxis(dout, out, a, source, destination):
    da = np.moveaxis(dout, destination, source)


@rev("np.flip", view=True)
def flip(dout, out, m, axis=None):
    dm = np.flip(dout, axis)


@rev("np.fliplr", view=True)
def fliplr(dout, out, m):
    dm = np.fliplr(dout)


@rev("np.flipud", view=True)
def flipud(dout, out, m):
    dm = np.flipud(dout)


@rev("np.roll")
def roll(dout, out, a, shift, axis=None):
    da = np.roll(dout, np.negative(shift), axis)


@rev("np.diagonal", view=True)
def diagonal(dout, out, a, offset=0, axis1=0, axis2=1):
    da = rt.diagonal_adj(dout, a, offset, axis1, axis2)


@rev("rt.diagonal_adj")
def diagonal_adj(dout, out, g, a, offset=0, axis1=0, axis2=1):
    dg = np.diagonal(dout, offset, axis1, axis2)


@rev("np.diag")
def diag(dout, out, v, k=0):
    dv = rt.diag_adj(dout, v, k)


@rev("rt.diag_adj")
def diag_adj(dout, out, g, v, k=0):
    dg = np.diag(dout, k)


@rev("np.tril")
def tril(dout, out, m, k=0):
    dm = np.tril(dout, k)


@rev("np.triu")
def triu(dout, out, m, k=0):
    dm = np.triu(dout, k)


@rev("np.diff")
def diff(dout, out, a, n=1, axis=-1):
    da = rt.diff_adj(dout, a, n, axis)


@rev("rt.diff_adj")
def diff_adj(dout, out, g, a, n=1, axis=-1):
    dg = np.diff(dout, n, axis)


@rev("np.sort")
def sort(dout, out, a, axis=-1, kind=None):
    da = rt.unsort(dout, a, axis)


@rev("rt.unsort")
def unsort(dout, out, g, a, axis=-1):
    dg = rt.sort_like(dout, a, axis)


@rev("rt.sort_like")
def sort_like(dout, out, g, a, axis=-1):
    dg = rt.unsort(dout, a, axis)

# ---------------------------------------------------------------- joining and splitting

@rev("np.concatenate", "np.concat")
def concatenate(dout, out, arrays, axis=0):
    darrays = rt.concatenate_adj(dout, arrays, axis)


@rev("rt.concatenate_adj", container_out=True)
def concatenate_adj(dout, out, g, arrays, axis=0):
    dg = np.concatenate(dout, axis)


@rev("np.stack")
def stack(dout, out, arrays, axis=0):
    darrays = rt.stack_adj(dout, arrays, axis)


@rev("rt.stack_adj", container_out=True)
def stack_adj(dout, out, g, arrays, axis=0):
    dg = np.stack(dout, axis)


@rev("np.vstack", "np.row_stack")
def vstack(dout, out, tup):
    dtup = rt.vstack_adj(dout, tup)


@rev("rt.vstack_adj", container_out=True)
def vstack_adj(dout, out, g, tup):
    dg = np.vstack(dout)


@rev("np.hstack")
def hstack(dout, out, tup):
    dtup = rt.hstack_adj(dout, tup)


@rev("rt.hstack_adj", container_out=True)
def hstack_adj(dout, out, g, tup):
    dg = np.hstack(dout)


@rev("np.split", "np.array_split", container_out=True)
def split(dout, out, ary, indices_or_sections, axis=0):
    dary = np.concatenate(dout, axis)


@rev("np.hsplit", container_out=True)
def hsplit(dout, out, ary, indices_or_sections):
    dary = np.hstack(dout)


@rev("np.vsplit", container_out=True)
def vsplit(dout, out, ary, indices_or_sections):
    dary = np.vstack(dout)


@rev("np.tile")
def tile(dout, out, A, reps):
    dA = rt.tile_adj(dout, A, reps)


@rev("rt.tile_adj")
def tile_adj(dout, out, g, A, reps):
    dg = np.tile(dout, reps)


@rev("np.repeat")
def repeat(dout, out, a, repeats, axis=None):
    da = rt.repeat_adj(dout, a, repeats, axis)


@rev("rt.repeat_adj")
def repeat_adj(dout, out, g, a, repeats, axis=None):
    dg = np.repeat(dout, repeats, axis)


@rev("np.pad")
def pad(dout, out, array, pad_width, mode="constant", constant_values=0):
    """Constant mode only (rt.unpad raises for other modes); `constant_values` a scalar."""
    darray = rt.unpad(dout, array, pad_width, mode)
    dconstant_values = rt.pad_value_adj(dout, array, pad_width)


@rev("rt.unpad")
def unpad(dout, out, g, array, pad_width, mode="constant"):
    dg = np.pad(dout, pad_width)


@rev("rt.pad_value_adj")
def pad_value_adj(dout, out, g, array, pad_width):
    dg = np.broadcast_to(dout, np.shape(g)) - np.pad(rt.expand(dout, array), pad_width)


@rev("np.full")
def full(dout, out, shape, fill_value, dtype=None):
    dfill_value = rt.unbroadcast(dout, fill_value)


@rev("np.full_like")
def full_like(dout, out, a, fill_value, dtype=None):
    dfill_value = rt.unbroadcast(dout, fill_value)


nondiff("np.shape", "np.ndim", "np.size", "len", "range", "int", "bool", "isinstance",
        "rt.dtype_of", "np.arange", "np.zeros", "np.ones", "np.empty", "np.eye",
        "np.identity", "np.linspace", "rt.dict_keys", "np.result_type", "type",
        "np.logspace", "np.indices", "np.tri", "np.diag_indices",
        "np.tril_indices", "np.triu_indices", "np.broadcast_shapes", "np.iscomplexobj",
        "np.isrealobj", "np.isscalar")
nondiff("print", side_effect=True)
