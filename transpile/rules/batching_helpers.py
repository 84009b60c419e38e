"""What vmapped code calls (runtime/batching.py): derivative and batching rules.

With these, vmapped code is transformed again like any other: grad(vmap(f)), jvp(vmap(f)),
vmap(vmap(f)). Helpers whose meaning depends on where the batch axis is take `outer`; an
enclosing vmap batches them with `batch_lanes` (core.py): its unbatched array arguments
are viewed along the batch and `outer` goes up by one (see runtime/batching.py).
"""
from .core import (batch_elementwise, batch_lanes, batch_same, BatchRule, fwd, nondiff, rev,
                   differentiated_calls, set_batch_rule, zero_flow)
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


# ---------------------------------------------------------------- aligning, selecting

@rev("rt.align", view=True)
def align(dout, out, x, y, outer=0):
    dx = rt.align_adj(dout, x, outer)


@fwd("rt.align")
def align_fwd(out, x, y, outer=0):
    dout = rt.align(dx, y, outer)


@rev("rt.align_lanes", view=True)
def align_lanes(dout, out, x, y, outer=0):
    dx = rt.align_adj(dout, x, outer)


@fwd("rt.align_lanes")
def align_lanes_fwd(out, x, y, outer=0):
    dout = rt.align_lanes(dx, y, outer)


zero_flow("rearrange", "rt.align", "rt.align_lanes")


@rev("rt.align_adj", view=True)
def align_adj(dout, out, d, x, outer=0):
    dd = rt.align_adj(dout, d, outer)


@fwd("rt.align_adj")
def align_adj_fwd(out, d, x, outer=0):
    dout = rt.align_adj(dd, x, outer)


@rev("rt.lane_guard", view=True)
def lane_guard(dout, out, x, mask, outer=0):
    dx = rt.lane_guard_adj(dout, mask, outer)


@fwd("rt.lane_guard")
def lane_guard_fwd(out, x, mask, outer=0):
    dout = dx


@rev("rt.lane_borrow", view=True)
def lane_borrow(dout, out, x, mask, outer=0):
    dx = rt.lane_guard_adj(dout, mask, outer)


@fwd("rt.lane_borrow")
def lane_borrow_fwd(out, x, mask, outer=0):
    dout = rt.lane_borrow(dx, mask, outer)


differentiated_calls("rt.lane_guard", "rt.lane_borrow")


@rev("rt.lane_guard_adj")
def lane_guard_adj(dout, out, d, mask, outer=0):
    dd = rt.lane_guard_adj(dout, mask, outer)


@fwd("rt.lane_guard_adj")
def lane_guard_adj_fwd(out, d, mask, outer=0):
    dout = rt.lane_guard_adj(dd, mask, outer)


@rev("rt.align_to_slot", view=True)
def align_to_slot(dout, out, value, slot, index, outer=0):
    dvalue = rt.align_to_slot_adj(dout, value, index, outer)


@fwd("rt.align_to_slot")
def align_to_slot_fwd(out, value, slot, index, outer=0):
    dout = rt.align_to_slot(dvalue, slot, index, outer)


@rev("rt.align_to_slot_adj")
def align_to_slot_adj(dout, out, d, value, index, outer=0):
    dd = rt.align_to_slot(dout, d, index, outer)


@fwd("rt.align_to_slot_adj")
def align_to_slot_adj_fwd(out, d, value, index, outer=0):
    dout = rt.align_to_slot_adj(dd, value, index, outer)


# the branch (or the result) passed last is read for its shape only: a loop whose carried
# value changes shape selects one whole branch, and the other gets zeros of its own shape
@rev("rt.select", view=(1, 2))
def select(dout, out, cond, then, otherwise, outer=0):
    dthen = rt.select_adj(cond, dout, True, outer, then)
    dotherwise = rt.select_adj(cond, dout, False, outer, otherwise)


@fwd("rt.select")
def select_fwd(out, cond, then, otherwise, outer=0):
    dout = rt.select_adj(cond, dthen, True, outer, out)
    dout = rt.select_adj(cond, dotherwise, False, outer, out)


@rev("rt.select_adj")
def select_adj(dout, out, cond, d, taken, outer=0, like=None):
    dd = rt.select_adj(cond, dout, taken, outer, d)


@fwd("rt.select_adj")
def select_adj_fwd(out, cond, d, taken, outer=0, like=None):
    dout = rt.select_adj(cond, dd, taken, outer, out)


# ---------------------------------------------------------------- entering, leaving, broadcasting

@rev("rt.broadcast_batch", view=True)
def broadcast_batch(dout, out, value, n, have=False, outer=0):
    dvalue = rt.sum_batch(dout, have, outer)


@fwd("rt.broadcast_batch")
def broadcast_batch_fwd(out, value, n, have=False, outer=0):
    dout = rt.broadcast_batch(dvalue, n, have, outer)


@rev("rt.batch_view", view=True)
def batch_view(dout, out, value, n, outer=0):
    dvalue = rt.sum_batch(dout, False, outer)


@fwd("rt.batch_view")
def batch_view_fwd(out, value, n, outer=0):
    dout = rt.batch_view(dvalue, n, outer)


@rev("rt.sum_batch", view=True)
def sum_batch(dout, out, value, have=False, outer=0):
    dvalue = rt.unsum_batch(dout, value, have, outer)


@fwd("rt.sum_batch")
def sum_batch_fwd(out, value, have=False, outer=0):
    dout = rt.sum_batch(dvalue, have, outer)


@rev("rt.unsum_batch", view=True)
def unsum_batch(dout, out, d, like, have=False, outer=0):
    dd = rt.sum_batch(dout, have, outer)


@fwd("rt.unsum_batch")
def unsum_batch_fwd(out, d, like, have=False, outer=0):
    dout = rt.unsum_batch(dd, like, have, outer)


@rev("rt.move_batch_axis", view=True)
def move_batch_axis(dout, out, value, axes, outer=0):
    dvalue = rt.batch_out(dout, axes, outer)


@fwd("rt.move_batch_axis")
def move_batch_axis_fwd(out, value, axes, outer=0):
    dout = rt.move_batch_axis(dvalue, axes, outer)


@rev("rt.batch_out", view=True)
def batch_out(dout, out, value, axes, outer=0):
    dvalue = rt.move_batch_axis(dout, axes, outer)


@fwd("rt.batch_out")
def batch_out_fwd(out, value, axes, outer=0):
    dout = rt.batch_out(dvalue, axes, outer)


@rev("rt.as_float", view=True)
def as_float(dout, out, x):
    dx = rt.cast_like(dout, x)


@fwd("rt.as_float")
def as_float_fwd(out, x):
    dout = rt.as_float(dx)


batch_elementwise("rt.as_float")


@rev("rt.flat_lanes", view=True)
def flat_lanes(dout, out, x, outer=0):
    dx = np.reshape(dout, np.shape(x))


@fwd("rt.flat_lanes")
def flat_lanes_fwd(out, x, outer=0):
    dout = rt.flat_lanes(dx, outer)


@rev("rt.lanes_array", view=True)
def lanes_array(dout, out, x, spec, n, outer=0):
    dx = rt.lanes_unarray(dout, x, spec, outer)


@fwd("rt.lanes_array")
def lanes_array_fwd(out, x, spec, n, outer=0):
    dout = rt.lanes_array(dx, spec, n, outer)


@rev("rt.lanes_unarray", view=True)
def lanes_unarray(dout, out, d, x, spec, outer=0):
    dd = rt.lanes_array(dout, spec, rt.batch_size_of(d, outer), outer)


@fwd("rt.lanes_unarray")
def lanes_unarray_fwd(out, d, x, spec, outer=0):
    dout = rt.lanes_unarray(dd, x, spec, outer)


# ---------------------------------------------------------------- subscripts, products

@rev("rt.lane_getitem", view=True)
def lane_getitem(dout, out, x, index, outer=0):
    dx = rt.lane_getitem_adj(dout, x, index, outer)


@fwd("rt.lane_getitem")
def lane_getitem_fwd(out, x, index, outer=0):
    dout = rt.lane_getitem(dx, index, outer)


@rev("rt.lane_getitem_adj", view=True)
def lane_getitem_adj(dout, out, d, x, index, outer=0):
    dd = rt.lane_getitem(dout, index, outer)


@fwd("rt.lane_getitem_adj")
def lane_getitem_adj_fwd(out, d, x, index, outer=0):
    dout = rt.lane_getitem_adj(dd, x, index, outer)


@rev("rt.lane_gather")
def lane_gather(dout, out, x, index, x_batched, outer=0):
    dx = rt.lane_gather_adj(dout, x, index, x_batched, outer)


@fwd("rt.lane_gather")
def lane_gather_fwd(out, x, index, x_batched, outer=0):
    dout = rt.lane_gather(dx, index, x_batched, outer)


@rev("rt.lane_gather_adj")
def lane_gather_adj(dout, out, d, x, index, x_batched, outer=0):
    dd = rt.lane_gather(dout, index, x_batched, outer)


@fwd("rt.lane_gather_adj")
def lane_gather_adj_fwd(out, d, x, index, x_batched, outer=0):
    dout = rt.lane_gather_adj(dd, x, index, x_batched, outer)


@rev("rt.batched_dot")
def batched_dot(dout, out, a, b, a_batched, b_batched, outer=0):
    da = rt.batched_dot_adj_a(dout, a, b, a_batched, b_batched, outer)
    db = rt.batched_dot_adj_b(dout, a, b, a_batched, b_batched, outer)


@fwd("rt.batched_dot")
def batched_dot_fwd(out, a, b, a_batched, b_batched, outer=0):
    dout = rt.batched_dot(da, b, a_batched, b_batched, outer)
    dout = rt.batched_dot(a, db, a_batched, b_batched, outer)


# adj_a(g, a, b) is linear in g and b (a gives only its shape); adj_b likewise in g and a.
# Their reverse rules hold for calls no vmap has batched yet (outer_adj empty): reverse mode
# through vmapped gradient code of a product is refused (rt.unvmapped_adjoint); their
# forward rules carry outer_adj and hold always.
@rev("rt.batched_dot_adj_a")
def batched_dot_adj_a(dout, out, g, a, b, a_batched, b_batched, outer=0, outer_adj=()):
    dg = rt.batched_dot(rt.unvmapped_adjoint(dout, outer_adj), b, a_batched, b_batched, outer)
    db = rt.batched_dot_adj_b(g, rt.unvmapped_adjoint(dout, outer_adj), b, a_batched,
                              b_batched, outer)


@fwd("rt.batched_dot_adj_a")
def batched_dot_adj_a_fwd(out, g, a, b, a_batched, b_batched, outer=0, outer_adj=()):
    dout = rt.batched_dot_adj_a(dg, a, b, a_batched, b_batched, outer, outer_adj)
    dout = rt.batched_dot_adj_a(g, a, db, a_batched, b_batched, outer, outer_adj)


@rev("rt.batched_dot_adj_b")
def batched_dot_adj_b(dout, out, g, a, b, a_batched, b_batched, outer=0, outer_adj=()):
    dg = rt.batched_dot(a, rt.unvmapped_adjoint(dout, outer_adj), a_batched, b_batched, outer)
    da = rt.batched_dot_adj_a(g, a, rt.unvmapped_adjoint(dout, outer_adj), a_batched,
                              b_batched, outer)


# the identity, or a refusal (see above)
@rev("rt.unvmapped_adjoint", view=True)
def unvmapped_adjoint(dout, out, g, outer_adj):
    dg = rt.unvmapped_adjoint(dout, outer_adj)


@fwd("rt.unvmapped_adjoint")
def unvmapped_adjoint_fwd(out, g, outer_adj):
    dout = rt.unvmapped_adjoint(dg, outer_adj)


batch_same("rt.unvmapped_adjoint")


@fwd("rt.batched_dot_adj_b")
def batched_dot_adj_b_fwd(out, g, a, b, a_batched, b_batched, outer=0, outer_adj=()):
    dout = rt.batched_dot_adj_b(dg, a, b, a_batched, b_batched, outer, outer_adj)
    dout = rt.batched_dot_adj_b(g, da, b, a_batched, b_batched, outer, outer_adj)


@rev("rt.unbatch_out", view=True)
def unbatch_out(dout, out, value, have, want, where, outer=0):
    dvalue = rt.unbatch_out_adj(dout, value, have, want, outer)


@fwd("rt.unbatch_out")
def unbatch_out_fwd(out, value, have, want, where, outer=0):
    dout = rt.unbatch_out(dvalue, have, want, None, outer)


@rev("rt.unbatch_out_adj")
def unbatch_out_adj(dout, out, d, value, have, want, outer=0):
    dd = rt.unbatch_out(dout, have, want, None, outer)


@fwd("rt.unbatch_out_adj")
def unbatch_out_adj_fwd(out, d, value, have, want, outer=0):
    dout = rt.unbatch_out_adj(dd, value, have, want, outer)


nondiff("rt.uniform_lanes")
nondiff("rt.lane_key", view=(1,))   # (an index passed through)
set_batch_rule("rt.lane_key", BatchRule("unsupported"))
batch_lanes("rt.uniform_lanes", ("value",))
nondiff("rt.axis_size", side_effect=True)
nondiff("rt.batch_size_of")
batch_lanes("rt.batch_size_of", ("value",), out_batched=False)
nondiff("rt.any_lane", "rt.max_trips", "rt.min_start", "rt.lane_len", "rt.lane_axis",
        "rt.lane_shape")
nondiff("rt.lane_index", view=(1,))          # (an index passed through)
nondiff("rt.lane_index_parts", view=(0,))
batch_lanes("rt.lane_index_parts", ("index",))
nondiff("rt.lane_scatter_index", view=True)
batch_same("rt.any_lane", "rt.max_trips", "rt.min_start", "rt.lane_shape", out_batched=False)
batch_same("rt.lane_index")   # the vmap pass: batched where the index is (per outer example)

# ---------------------------------------------------------------- batching (vmap of vmap)
nondiff("rt.each_lane")
set_batch_rule("rt.each_lane", BatchRule("unsupported"))
for _s, _arrays in {"rt.align": ("x", "y"), "rt.align_lanes": ("x", "y"),
                    "rt.align_adj": ("d", "x"), "rt.lane_guard": ("x", "mask"), "rt.lane_borrow": ("x", "mask"),
                    "rt.lane_guard_adj": ("d", "mask"),
                    "rt.align_to_slot": ("value", "slot"),
                    "rt.align_to_slot_adj": ("d", "value"),
                    "rt.select": ("cond", "then", "otherwise"),
                    "rt.select_adj": ("cond", "d", "like"),
                    "rt.broadcast_batch": ("value",), "rt.sum_batch": ("value",),
                    "rt.batch_view": ("value",), "rt.lanes_array": ("x",),
                    "rt.lanes_unarray": ("d", "x"),
                    "rt.unsum_batch": ("d", "like"), "rt.move_batch_axis": ("value",),
                    "rt.batch_out": ("value",), "rt.flat_lanes": ("x",),
                    "rt.lane_getitem": ("x",), "rt.lane_getitem_adj": ("d", "x"),
                    "rt.lane_gather": ("x", "index"), "rt.lane_gather_adj": ("d", "x", "index"),
                    "rt.unbatch_out": ("value",), "rt.unbatch_out_adj": ("d", "value"),
                    }.items():
    batch_lanes(_s, _arrays)
# products: an argument not batched by an enclosing vmap is not copied for it
batch_lanes("rt.batched_dot", ("a", "b"), each=True)
batch_lanes("rt.batched_dot_adj_a", ("dout", "a", "b"), each=True, param="outer_adj")
batch_lanes("rt.batched_dot_adj_b", ("dout", "a", "b"), each=True, param="outer_adj")

batch_lanes("rt.lane_len", ("x",), out_batched=False)
nondiff("rt.lane_check_unpack", side_effect=True)
batch_lanes("rt.lane_check_unpack", ("x",), out_batched=False)
# the `outer` of a helper batched again, computed where the code saved it in a name
nondiff("rt.outer_frames")
batch_same("rt.outer_frames", out_batched=False)
nondiff("rt.scan_length")
batch_lanes("rt.scan_length", ("xs",), out_batched=False)
# Jacobians (transpile/jacobians.py): the basis depends only on the per-example shape
nondiff("rt.basis_of", "rt.is_number")
batch_lanes("rt.basis_of", ("x",), out_batched=False)
batch_lanes("rt.is_number", ("x",), out_batched=False)


# the Jacobian's layout from the stacked vjps (jacrev) or jvps (jacfwd): linear in them,
# the output y and argument x read for their structure and shapes
@rev("rt.jacobian_rows", view=True)
def jacobian_rows(dout, out, cotangents, y, x, outer=0):
    dcotangents = rt.jacobian_rows_adj(dout, cotangents, y, x, outer)


@fwd("rt.jacobian_rows")
def jacobian_rows_fwd(out, cotangents, y, x, outer=0):
    dout = rt.jacobian_rows(dcotangents, y, x, outer)


@rev("rt.jacobian_rows_adj", view=True)
def jacobian_rows_adj(dout, out, d, cotangents, y, x, outer=0):
    dd = rt.jacobian_rows(dout, y, x, outer)


@fwd("rt.jacobian_rows_adj")
def jacobian_rows_adj_fwd(out, d, cotangents, y, x, outer=0):
    dout = rt.jacobian_rows_adj(dd, cotangents, y, x, outer)


@rev("rt.jacobian_columns", view=True)
def jacobian_columns(dout, out, columns, y, x, outer=0):
    dcolumns = rt.jacobian_columns_adj(dout, y, x, outer)


@fwd("rt.jacobian_columns")
def jacobian_columns_fwd(out, columns, y, x, outer=0):
    dout = rt.jacobian_columns(dcolumns, y, x, outer)


@rev("rt.jacobian_columns_adj", view=True)
def jacobian_columns_adj(dout, out, d, y, x, outer=0):
    dd = rt.jacobian_columns(dout, y, x, outer)


@fwd("rt.jacobian_columns_adj")
def jacobian_columns_adj_fwd(out, d, y, x, outer=0):
    dout = rt.jacobian_columns_adj(dd, y, x, outer)


batch_lanes("rt.jacobian_rows", ("cotangents", "y", "x"))
batch_lanes("rt.jacobian_rows_adj", ("d", "cotangents", "y", "x"))
batch_lanes("rt.jacobian_columns", ("columns", "y", "x"))
batch_lanes("rt.jacobian_columns_adj", ("d", "y", "x"))
batch_lanes("rt.lane_axis", ("x",), out_batched=False)
set_batch_rule("rt.axis_size", BatchRule("axis_size", out_batched=False))
set_batch_rule("rt.lane_scatter_index", BatchRule("unsupported"))
