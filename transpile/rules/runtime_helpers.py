"""Rules for the runtime helpers that generated code calls, so generated code composes."""
from .core import batch, batch_same, fwd, nondiff, rev, stateful
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("rt.unbroadcast")
def unbroadcast(dout, out, g, x):
    dg = np.broadcast_to(dout, np.shape(g))


@rev("np.broadcast_to", view=True)
def broadcast_to(dout, out, array, shape):
    darray = rt.unbroadcast(dout, array)


@rev("rt.expand")
def expand(dout, out, g, x, axis=None, keepdims=False):
    dg = np.sum(dout, axis, keepdims=keepdims)


@rev("rt.add")
def add(dout, out, a, b):
    da = dout
    db = dout


@rev("rt.as_grad")
def as_grad(dout, out, g, x):
    dg = dout


@rev("rt.cast_like")
def cast_like(dout, out, g, x):
    dg = rt.cast_like(dout, g)


@rev("rt.copy", "np.copy")
def copy(dout, out, x):
    dx = dout


@rev("rt.astype")
def astype(dout, out, x, dtype):
    dx = rt.cast_like(dout, x)


nondiff("rt.seed", "rt.reduced_size", "rt.tie_share", "rt.inside", "rt.inverse_axes",
        "rt.zeros_like", "rt.dtype_of")
nondiff("rt.check_float_input", side_effect=True)
stateful("rt.pop_adjoint", "pop_adjoint")
stateful("rt.push", "push")
stateful("rt.pop", "pop")

# Python builtins that generated code uses around indices and loops.
nondiff("slice", "reversed", "rt.reversed_range", "len", "range", "isinstance", "type",
        "zip", "enumerate")


@rev("rt.to_like")
def to_like(dout, out, g, x):
    dg = rt.to_like(dout, g)
nondiff("rt.tangent_zeros")


# ---------------------------------------------------------------- forward rules

@fwd("rt.unbroadcast")
def unbroadcast_fwd(out, g, x):
    dout = rt.unbroadcast(dg, x)


@fwd("np.broadcast_to")
def broadcast_to_fwd(out, array, shape):
    dout = np.broadcast_to(darray, shape)


@fwd("rt.expand")
def expand_fwd(out, g, x, axis=None, keepdims=False):
    dout = rt.expand(dg, x, axis, keepdims)


@fwd("rt.add")
def add_fwd(out, a, b):
    dout = rt.add(da, db)


@fwd("rt.as_grad")
def as_grad_fwd(out, g, x):
    dout = rt.as_grad(dg, x)


@fwd("rt.cast_like")
def cast_like_fwd(out, g, x):
    dout = rt.cast_like(dg, x)


@fwd("rt.copy", "np.copy")
def copy_fwd(out, x):
    dout = rt.copy(dx)


@fwd("rt.astype")
def astype_fwd(out, x, dtype):
    dout = rt.cast_like(dx, out)
nondiff("&", "|", "^", "<<", ">>")   # masks and bit operations carry no derivative


@rev("rt.broadcast_like")
def broadcast_like(dout, out, t, out_):
    dt = rt.unbroadcast(dout, t)


@fwd("rt.broadcast_like")
def broadcast_like_fwd(out, t, out_):
    dout = rt.broadcast_like(dt, out_)


# ---------------------------------------------------------------- pytree inner products
# (custom_jvp functions are differentiated in reverse mode through these)

@rev("rt.tree_vdot")
def tree_vdot(dout, out, a, b):
    da = rt.tree_scale(b, dout)
    db = rt.tree_scale(a, dout)


@fwd("rt.tree_vdot")
def tree_vdot_fwd(out, a, b):
    dout = rt.tree_vdot(da, b)
    dout = rt.tree_vdot(a, db)


@rev("rt.tree_scale")
def tree_scale(dout, out, x, s):
    dx = rt.tree_scale(dout, s)
    ds = rt.tree_vdot(dout, x)


@fwd("rt.tree_scale")
def tree_scale_fwd(out, x, s):
    dout = rt.tree_scale(dx, s)
    dout = rt.tree_scale(x, ds)
nondiff("rt.size_of", "rt.basis_like", "rt.jacobian_shape")


# A stack copied before the backward pass pops it: its adjoint (a stack of adjoints, in
# pop order) passes through unchanged.
@rev("rt.copy_stack")
def copy_stack(dout, out, stack):
    dstack = dout


@fwd("rt.copy_stack")
def copy_stack_fwd(out, stack):
    dout = rt.copy_stack(dstack)


# ---------------------------------------------------------------- batching (vmap)

@batch("len", out_batched=False)
def len_batch(obj):
    out = rt.lane_len(obj)


# What vmapped code calls to enter and leave a batch. The size check is kept even when the
# size is not used: it is the error a user sees for mismatched batch sizes.
nondiff("rt.axis_size", side_effect=True)
nondiff("rt.any_lane", "rt.max_trips", "rt.min_start", "rt.lane_len", "rt.lane_axis",
        "rt.lane_index", "rt.lane_scatter_index", "rt.lane_shape")
