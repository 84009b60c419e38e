"""Rules for the runtime helpers that generated code calls, so generated code composes."""
from .core import (BatchRule, batch, batch_elementwise, batch_lanes, batch_same, fwd, nondiff,
                   rev, set_batch_rule, stateful, zero_flow)
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("rt.unbroadcast", view=True)
def unbroadcast(dout, out, g, x):
    dg = rt.broadcast_like(dout, g)


@rev("np.broadcast_to", view=True)
def broadcast_to(dout, out, array, shape):
    darray = rt.unbroadcast(dout, array)


@rev("rt.expand", view=True)
def expand(dout, out, g, x, axis=None, keepdims=False):
    dg = np.sum(dout, axis, keepdims=keepdims)


@rev("rt.add", view=(0, 1))
def add(dout, out, a, b):
    da = dout
    db = dout


@rev("rt.as_grad", view=True)
def as_grad(dout, out, g, x):
    dg = dout


@rev("rt.cast_like")
def cast_like(dout, out, g, x):
    dg = rt.cast_like(dout, g)


@rev("rt.cast_derivative", view=True)
def cast_derivative(dout, out, g, like, cast):
    dg = rt.cast_derivative(dout, g, cast)


# Trees of tp.lax.scan: one step's slices of every leaf, and the steps' outputs stacked.
@rev("rt.tree_index")
def tree_index(dout, out, tree, i, axis=0):
    dtree = rt.tree_index_adj(dout, tree, i, axis)


@fwd("rt.tree_index")
def tree_index_fwd(out, tree, i, axis=0):
    dout = rt.tree_index(dtree, i, axis)


@batch("rt.tree_index")
def tree_index_batch(tree, i, axis=0):
    if i_batched or axis_batched:
        out = rt.tree_index(tree, rt.uniform_lanes(i, i_spec, "tp.lax.scan", "step"),
                            rt.lane_axis(rt.uniform_lanes(axis, axis_spec, "tp.lax.scan",
                                                          "axis"), tree))
    else:
        out = rt.tree_index(rt.broadcast_batch(tree, batch_size, tree_spec), i,
                            rt.lane_axis(axis, tree))


@rev("rt.tree_index_adj")
def tree_index_adj(dout, out, g, tree, i, axis=0):
    dg = rt.tree_index(dout, i, axis)


@fwd("rt.tree_index_adj")
def tree_index_adj_fwd(out, g, tree, i, axis=0):
    dout = rt.tree_index_adj(dg, tree, i, axis)


@batch("rt.tree_index_adj")
def tree_index_adj_batch(g, tree, i, axis=0):
    out = rt.tree_index_adj(rt.broadcast_batch(g, batch_size, g_spec),
                            rt.broadcast_batch(tree, batch_size, tree_spec),
                            rt.uniform_lanes(i, i_spec, "tp.lax.scan", "step"),
                            rt.lane_axis(axis, rt.broadcast_batch(tree, batch_size, tree_spec)))


@rev("rt.tree_stack")
def tree_stack(dout, out, trees, axis=0):
    dtrees = rt.tree_unstack(dout, trees, axis)


@fwd("rt.tree_stack")
def tree_stack_fwd(out, trees, axis=0):
    dout = rt.tree_stack(dtrees, axis)


@batch("rt.tree_stack")
def tree_stack_batch(trees, axis=0):
    out = rt.tree_stack(rt.broadcast_batch(trees, batch_size, trees_spec),
                        rt.lane_axis(axis, trees))


# scan over zero steps: a step's input of zeros (for the outputs' shapes only) and outputs
# of length 0, which carry no derivative (they hold no number)
nondiff("rt.tree_step_like", "rt.tree_stack_empty")


@batch("rt.tree_step_like")
def tree_step_like_batch(tree, axis=0):
    out = rt.tree_step_like(rt.broadcast_batch(tree, batch_size, tree_spec),
                            rt.lane_axis(axis, tree))


@batch("rt.tree_stack_empty")
def tree_stack_empty_batch(tree, axis=0):
    out = rt.tree_stack_empty(rt.broadcast_batch(tree, batch_size, tree_spec),
                              rt.lane_axis(axis, tree))


@rev("rt.tree_unstack", container_out=True)
def tree_unstack(dout, out, tree, like, axis=0):
    dtree = rt.tree_stack(dout, axis)


@fwd("rt.tree_unstack")
def tree_unstack_fwd(out, tree, like, axis=0):
    dout = rt.tree_unstack(dtree, like, axis)


@batch("rt.tree_unstack")
def tree_unstack_batch(tree, like, axis=0):
    out = rt.tree_unstack(rt.broadcast_batch(tree, batch_size, tree_spec), like,
                          rt.lane_axis(axis, rt.broadcast_batch(tree, batch_size, tree_spec)))


# stop_gradient: its result carries no derivative (nondiff), in both modes and at every order.
nondiff("rt.stop_gradient", view=True)
# a saved value the backward pass reads only for its shape: no derivative flows through it
nondiff("rt.shape_only", view=True)
# a pytree's structure, for tp.tree_unflatten in transformed code: the same in every example
nondiff("rt.tree_skeleton", "rt.sorted_keys")
nondiff("rt.check_structure", side_effect=True)
# obj.name: a namedtuple's field is differentiated as obj[position]; a plain object's
# attributes (a model's, a config's) come from outside the function and carry no derivative:
# such an object is never differentiated (check_float_input refuses it) nor batched, so
# these rules meet namedtuples only.
@rev("rt.attribute", view=True)
def attribute(dout, out, obj, name):
    dobj = rt.index_add(dobj, obj, rt.field_index(obj, name), dout)


@fwd("rt.attribute")
def attribute_fwd(out, obj, name):
    dout = rt.getitem(dobj, rt.field_index(obj, name))


@batch("rt.attribute")
def attribute_batch(obj, name):
    out = rt.lane_getitem(obj, rt.field_index(obj, name))


nondiff("rt.field_index")                       # obj.name: where the field is, not its value
batch_same("rt.field_index", out_batched=False)
batch_same("rt.check_structure", out_batched=False)
batch_same("rt.tree_skeleton", "rt.sorted_keys", out_batched=False)
batch_same("rt.stop_gradient", "rt.shape_only")


# `x op= v` where x may be a number or an array (frontend/aliasing.py): the value itself,
# or an error
@rev("rt.number_only", side_effect=True, view=(0,))   # (its error, even where x is not read
# again; the value itself passes, a batch of numbers under vmap included)
def number_only(dout, out, value, name, op, other, where, outer=0):
    dvalue = dout


@fwd("rt.number_only")
def number_only_fwd(out, value, name, op, other, where, outer=0):
    dout = dvalue


batch_lanes("rt.number_only", ("value",), each=True)
nondiff("rt.holds_array")      # (and the same for every example: a question about the kind)
batch_lanes("rt.holds_array", ("value",), out_batched=False, each=True)


@rev("rt.copy", "np.copy")
def copy(dout, out, x):
    dx = dout


@rev("rt.astype")
def astype(dout, out, x, dtype):
    dx = rt.cast_derivative(dout, x, out)


# 0 where the cotangent is 0, else the value: locally the identity in `value` (or 0), and
# constant in the cotangent (which only picks the entries)
@rev("rt.zero_where_unused", view=(1,))      # `value` itself where nothing is nan
def zero_where_unused(dout, out, cotangent, value):
    dvalue = rt.zero_where_unused(cotangent, dout)


@fwd("rt.zero_where_unused")
def zero_where_unused_fwd(out, cotangent, value):
    dout = rt.zero_where_unused(cotangent, dvalue)


batch_elementwise("rt.zero_where_unused")
# derivatives of derivatives: where the guard kept a 0, that entry is a structural 0 again
zero_flow("select", "rt.zero_where_unused", unpicked={"value": "cotangent == 0"})


@rev("rt.zero_where", view=(1,))      # `value` itself where nothing is nan
def zero_where(dout, out, unpicked, value):
    dvalue = rt.zero_where(unpicked, dout)


@fwd("rt.zero_where")
def zero_where_fwd(out, unpicked, value):
    dout = rt.zero_where(unpicked, dvalue)


batch_elementwise("rt.zero_where")
zero_flow("select", "rt.zero_where", unpicked={"value": "unpicked"})


nondiff("rt.seed", "rt.seed_holomorphic", "rt.reduced_size", "rt.tie_share", "rt.inside", "rt.inverse_axes",
        "rt.zeros_like", "rt.dtype_of")


@batch("rt.seed")
def seed_batch(out_, where):
    """Every example's output must be a scalar: its adjoint seed is 1."""
    out = rt.lane_seed(out_, where)


@batch("rt.seed_holomorphic")
def seed_holomorphic_batch(out_, where):
    out = rt.lane_seed_holomorphic(out_, where)


@batch("rt.reduced_size", out_batched=False)
def reduced_size_batch(x, axis=None):
    out = rt.reduced_size(x, rt.lane_axis(axis, x))


@batch("rt.inverse_axes")
def inverse_axes_batch(axes):
    out = rt.cannot_batch("np.transpose", "its axes differ between examples")


batch_same("rt.zeros_like")
batch_elementwise("rt.tie_share")
batch_elementwise("rt.inside", vectorized="rt.lane_inside")
nondiff("rt.check_float_input", "rt.check_complex_input", side_effect=True)
nondiff("rt.check_length", "rt.check_jacobian_dtype", "rt.check_instance", "rt.check_aux_pair",
        "rt.check_cotangent", "rt.check_keys", "rt.check_record_fields", side_effect=True)


@batch("rt.check_cotangent")
def check_cotangent_batch(cotangent, like):
    """A pullback transformed by vmap: its cotangents carry the batch (checked per call of
    the pullback itself, not here)."""
    out = None
batch_same("rt.check_length", "rt.check_jacobian_dtype", "rt.check_instance", "rt.check_aux_pair",
           "rt.check_keys", "rt.check_record_fields", out_batched=False)


# the sequence a lowered `for` loop walks: itself, or a dict's keys (they carry nothing)
@rev("rt.loop_sequence", view=True)
def loop_sequence(dout, out, seq, where):
    dseq = rt.loop_sequence_adj(dout, seq)


@fwd("rt.loop_sequence")
def loop_sequence_fwd(out, seq, where):
    dout = rt.loop_sequence_tangent(dseq, seq)


@rev("rt.loop_sequence_adj", view=True)
def loop_sequence_adj(dout, out, g, seq):
    dg = rt.loop_sequence_adj(dout, seq)


@fwd("rt.loop_sequence_adj")
def loop_sequence_adj_fwd(out, g, seq):
    dout = rt.loop_sequence_adj(dg, seq)


@rev("rt.loop_sequence_tangent", view=True)
def loop_sequence_tangent(dout, out, t, seq):
    dt = rt.loop_sequence_adj(dout, seq)


@fwd("rt.loop_sequence_tangent")
def loop_sequence_tangent_fwd(out, t, seq):
    dout = rt.loop_sequence_tangent(dt, seq)


batch_same("rt.loop_sequence", "rt.loop_sequence_adj", "rt.loop_sequence_tangent")
batch_same("rt.check_float_input", "rt.check_complex_input")
# what a custom_vjp's fwd and bwd returned (transpile/custom.py), checked before unpacking
nondiff("rt.check_vjp_rule_result", side_effect=True)
batch_same("rt.check_vjp_rule_result", out_batched=False)
# Draws from a user's numpy Generator/RandomState: a standard draw carries no derivative
# (the parameters' derivatives flow through the formula around it, see frontend/calls.py).
# Under vmap, each example draws its own numbers: one draw of (batch, *size), in the order a
# loop over examples would draw them.
nondiff("rt.draw", side_effect=True)
nondiff("rt.lead_size")
batch_same("rt.lead_size", out_batched=False)


@batch("rt.draw")
def draw_batch(generator, method, size):
    if size_batched:
        out = rt.cannot_batch("a random draw", "its size differs between examples")
    elif generator_batched:
        out = rt.lane_draw(generator, method, size)
    else:
        out = rt.draw(generator, method, rt.lead_size(batch_size, size))


nondiff("rt.lane_generators")
nondiff("rt.lane_draw", side_effect=True)
set_batch_rule("rt.lane_generators", BatchRule("unsupported"))   # vmap of vmap of the draw
set_batch_rule("rt.lane_draw", BatchRule("unsupported"))


# sorted(xs, key=...): which item goes where is piecewise constant in the keys
nondiff("rt.sorted_order")


@batch("rt.sorted_order")
def sorted_order_batch(keys, reverse=False):
    if keys_batched or reverse_batched:
        out = rt.cannot_batch("sorted", "the order of the items differs between examples")
    else:
        out = rt.sorted_order(keys, reverse)


# the user's raise statements and f-strings: text carries no derivative; under vmap a
# message formats the whole batch (as print prints it)
nondiff("rt.raise_exception", side_effect=True)
nondiff("rt.format_string", "rt.str_method", "str", "repr", "rt.is_integer")
batch_same("rt.is_integer")        # elementwise: a batch of numbers gives a batch of flags
nondiff("rt.debug_print", side_effect=True)
batch_same("rt.debug_print", out_batched=False)     # prints the whole batch, as print does
batch_same("rt.raise_exception", "rt.format_string", "rt.str_method", "str", "repr",
           out_batched=False)
# numpy's assertions in the user's code (np.testing.assert_allclose(y, want)): kept, as
# `assert` is; no derivative flows through them; under vmap each example is checked
_ASSERTIONS = ("np.testing.assert_allclose", "np.testing.assert_array_equal",
               "np.testing.assert_equal", "np.testing.assert_almost_equal",
               "np.testing.assert_array_almost_equal", "np.testing.assert_array_less")
nondiff(*_ASSERTIONS, "rt.each_example_check", side_effect=True)
set_batch_rule("rt.each_example_check", BatchRule("unsupported"))


@batch("np.testing.assert_allclose", out_batched=False)
def assert_allclose_batch(actual, desired, rtol=1e-07, atol=0, equal_nan=True, err_msg="",
                          verbose=True):
    out = rt.each_example_check(np.testing.assert_allclose, batch_size,
                                (actual_batched, desired_batched), actual, desired, rtol,
                                atol, equal_nan, err_msg, verbose)


@batch("np.testing.assert_array_equal", out_batched=False)
def assert_array_equal_batch(actual, desired, err_msg="", verbose=True):
    out = rt.each_example_check(np.testing.assert_array_equal, batch_size,
                                (actual_batched, desired_batched), actual, desired, err_msg,
                                verbose)


@batch("np.testing.assert_equal", out_batched=False)
def assert_equal_batch(actual, desired, err_msg="", verbose=True):
    out = rt.each_example_check(np.testing.assert_equal, batch_size,
                                (actual_batched, desired_batched), actual, desired, err_msg,
                                verbose)


@batch("np.testing.assert_almost_equal", out_batched=False)
def assert_almost_equal_batch(actual, desired, decimal=7, err_msg="", verbose=True):
    out = rt.each_example_check(np.testing.assert_almost_equal, batch_size,
                                (actual_batched, desired_batched), actual, desired, decimal,
                                err_msg, verbose)


@batch("np.testing.assert_array_almost_equal", out_batched=False)
def assert_array_almost_equal_batch(actual, desired, decimal=6, err_msg="", verbose=True):
    out = rt.each_example_check(np.testing.assert_array_almost_equal, batch_size,
                                (actual_batched, desired_batched), actual, desired, decimal,
                                err_msg, verbose)


@batch("np.testing.assert_array_less", out_batched=False)
def assert_array_less_batch(x, y, err_msg="", verbose=True):
    out = rt.each_example_check(np.testing.assert_array_less, batch_size,
                                (x_batched, y_batched), x, y, err_msg, verbose)


# try/except (frontend/attempts.py): which handler catches, found by running the try block
# as written; under vmap example by example, so each takes its own path
nondiff("rt.caught", "rt.lane_caught", side_effect=True)
set_batch_rule("rt.lane_caught", BatchRule("unsupported"))


@batch("rt.caught")
def caught_batch(block, handled, values):
    out = rt.lane_caught(block, handled, values, batch_size, values_spec)


# the rule of a variant with no derivative rule: it raises where generated code reaches it
nondiff("rt.no_derivative", side_effect=True)
batch_same("rt.no_derivative")
stateful("rt.pop_adjoint", "pop_adjoint")
stateful("rt.push", "push")
stateful("rt.pop", "pop")

# Python builtins that generated code uses around indices and loops.
nondiff("slice", "reversed", "rt.reversed_range", "len", "range", "isinstance", "type",
        "zip", "enumerate", "rt.is_instance", "rt.type_of")


@batch("len", out_batched=False)
def len_batch(obj):
    out = rt.lane_len(obj)


# Builtins whose batched results would differ in length between examples. (A `for` loop
# over range() of a batched bound is handled by the vmap pass itself; range, int, bool,
# isinstance, type and print have their rules in shape.py.)
@batch("rt.reversed_range")
def reversed_range_batch(start, stop=None, step=None):
    out = rt.cannot_batch("range", "its bounds differ between examples",
                          "loop over it directly: `for i in reversed(range(n))` with n "
                          "differing between examples is supported")


@batch("reversed")
def reversed_batch(seq):
    out = rt.cannot_batch("reversed", "its argument differs between examples",
                          "loop over reversed(range(n)) and index")


@batch("slice")
def slice_batch(start, stop=None, step=None):
    out = rt.cannot_batch("a slice", "its bounds differ between examples, so the examples "
                          "of the result would have different lengths",
                          "use a mask (np.where) or index with integer arrays")


@batch("zip")
def zip_batch(a, b=None, c=None, d=None):
    out = rt.cannot_batch("zip", "it is only supported as the iterable of a for loop",
                          "loop over range(len(...)) and index")


@batch("enumerate")
def enumerate_batch(iterable, start=0):
    out = rt.cannot_batch("enumerate", "it is only supported as the iterable of a for loop",
                          "loop over range(len(...)) and index")


@rev("rt.to_like", view=True)
def to_like(dout, out, g, x):
    dg = rt.to_like(dout, g)


@batch("rt.to_like")
def to_like_batch(g, x):
    out = rt.lane_to_like(rt.broadcast_batch(g, batch_size, g_batched),
                          x if x_batched or not g_batched else rt.broadcast_batch(x, batch_size))
nondiff("rt.tangent_zeros")
batch_same("rt.tangent_zeros")


# ---------------------------------------------------------------- forward rules

@fwd("rt.unbroadcast")
def unbroadcast_fwd(out, g, x):
    dout = rt.unbroadcast(dg, x)


@batch("rt.unbroadcast")
def unbroadcast_batch(g, x):
    if g_batched:
        if x_batched:
            out = rt.lane_unbroadcast(g, rt.example_shape(x))
        else:
            out = rt.lane_unbroadcast(g, rt.shape_or_none(x))
    else:
        out = rt.lane_unbroadcast(rt.broadcast_batch(g, batch_size), rt.example_shape(x))


nondiff("rt.shape_or_none")


@batch("rt.shape_or_none", out_batched=False)
def shape_or_none_batch(x):
    out = rt.example_shape(x)


@fwd("np.broadcast_to")
def broadcast_to_fwd(out, array, shape):
    dout = np.broadcast_to(darray, shape)


@fwd("rt.expand")
def expand_fwd(out, g, x, axis=None, keepdims=False):
    dout = rt.expand(dg, x, axis, keepdims)


@batch("rt.expand")
def expand_batch(g, x, axis=None, keepdims=False):
    if g_batched:
        if x_batched:
            out = rt.expand(g, x, rt.lane_axis(axis, x), keepdims)
        else:
            out = rt.lane_expand_to(g, np.shape(x), axis, keepdims)
    else:
        out = rt.lane_expand_to(rt.broadcast_batch(g, batch_size), rt.example_shape(x),
                                axis, keepdims)


@fwd("rt.add")
def add_fwd(out, a, b):
    dout = rt.add(da, db)


# pytrees may be partly batched (`<param>_spec`): their unbatched leaves are broadcast
@batch("rt.add")
def add_batch(a, b):
    out = rt.add(rt.broadcast_batch(a, batch_size, a_spec),
                 rt.broadcast_batch(b, batch_size, b_spec))


@fwd("rt.as_grad")
def as_grad_fwd(out, g, x):
    dout = rt.as_grad(dg, x)


@batch("rt.as_grad")
def as_grad_batch(g, x):
    """A batched gradient of an unbatched input is one gradient per example."""
    out = rt.lane_as_grad(g, x, g_batched, x_batched, batch_size)


@fwd("rt.cast_like")
def cast_like_fwd(out, g, x):
    dout = rt.cast_like(dg, x)


@batch("rt.cast_like")
def cast_like_batch(g, x):
    if g_batched:
        out = rt.cast_like(g, x)
    else:
        out = rt.broadcast_batch(rt.cast_like(g, x), batch_size)


@fwd("rt.cast_derivative")
def cast_derivative_fwd(out, g, like, cast):
    dout = rt.cast_derivative(dg, like, cast)


@batch("rt.cast_derivative")
def cast_derivative_batch(g, like, cast):
    if g_batched:
        out = rt.cast_derivative(g, like, cast)
    else:
        out = rt.broadcast_batch(rt.cast_derivative(g, like, cast), batch_size)


@fwd("rt.copy", "np.copy")
def copy_fwd(out, x):
    dout = rt.copy(dx)


batch_same("rt.copy", "np.copy")
zero_flow("linear", "rt.copy", "np.copy")


@fwd("rt.astype")
def astype_fwd(out, x, dtype):
    dout = rt.cast_derivative(dx, out, out)


batch_same("rt.astype")


# np.asarray(x, dtype=...): a cast that may be x itself (view=True: writes are followed)
@rev("rt.as_dtype", view=True)
def as_dtype(dout, out, x, dtype):
    dx = rt.cast_derivative(dout, x, out)


@fwd("rt.as_dtype")
def as_dtype_fwd(out, x, dtype):
    dout = rt.cast_derivative(dx, out, out)


batch_same("rt.as_dtype")
nondiff("&", "|", "^", "<<", ">>")   # masks and bit operations carry no derivative


@rev("rt.broadcast_like", view=True)
def broadcast_like(dout, out, t, out_):
    dt = rt.unbroadcast(dout, t)


@fwd("rt.broadcast_like")
def broadcast_like_fwd(out, t, out_):
    dout = rt.broadcast_like(dt, out_)


@batch("rt.broadcast_like")
def broadcast_like_batch(t, out_):
    if t_batched:
        if out__batched:
            out = rt.broadcast_like(rt.align_lanes(t, out_), out_)
        else:
            out = rt.lane_broadcast_to_shape(t, np.shape(out_)) * 1
    else:
        out = rt.broadcast_like(t, out_)


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


@batch("rt.tree_vdot")
def tree_vdot_batch(a, b):
    out = rt.lane_tree_vdot(rt.broadcast_batch(a, batch_size, a_spec),
                            rt.broadcast_batch(b, batch_size, b_spec))


@rev("rt.tree_scale")
def tree_scale(dout, out, x, s):
    dx = rt.tree_scale(dout, s)
    ds = rt.tree_vdot(dout, x)


@fwd("rt.tree_scale")
def tree_scale_fwd(out, x, s):
    dout = rt.tree_scale(dx, s)
    dout = rt.tree_scale(x, ds)


@batch("rt.tree_scale")
def tree_scale_batch(x, s):
    if s_batched:
        out = rt.lane_tree_scale(rt.broadcast_batch(x, batch_size, x_spec), s)
    else:
        out = rt.tree_scale(x, s)
nondiff("rt.size_of", "rt.basis_like")


@batch("rt.size_of", out_batched=False)
def size_of_batch(x):
    out = rt.reduced_size(x, rt.lane_axis(None, x))


@batch("rt.basis_like")
def basis_like_batch(x, i):
    if i_batched:
        out = rt.cannot_batch("rt.basis_like", "the basis index differs between examples")
    else:
        out = rt.lane_basis_like(x, i)


# A stack copied before the backward pass pops it: its adjoint (a stack of adjoints, in
# pop order) passes through unchanged.
@rev("rt.copy_stack", view=True)
def copy_stack(dout, out, stack):
    dstack = dout


@fwd("rt.copy_stack")
def copy_stack_fwd(out, stack):
    dout = rt.copy_stack(dstack)


batch_same("rt.copy_stack")


# ---------------------------------------------------------------- batching of the rest
# Reverse mode. One example of an adjoint has the shape of one example of its value; the
# shape-only argument of unbroadcast and expand (`x`) is asked for one example's shape.


nondiff("rt.lane_inside")
batch_elementwise("rt.lane_inside")
# Stacks of saved values are plain lists: the vmap pass handles push and pop statements
# itself (a stack is batched when anything pushed on it is); these rules are never asked.
batch_same("rt.push", "rt.pop", "rt.pop_adjoint")


# ---------------------------------------------------------------- batching the batching helpers
# (vmap of vmap, grad of vmap: the helpers above are primitives too)

nondiff("rt.cannot_batch", side_effect=True)
batch_same("rt.cannot_batch")
nondiff("rt.example_shape", "rt.lane_seed", "rt.lane_seed_holomorphic", "rt.lane_basis_like")
batch_lanes("rt.example_shape", ("x",), out_batched=False)
batch_lanes("rt.lane_seed", ("out",))
batch_lanes("rt.lane_seed_holomorphic", ("out",))
batch_lanes("rt.lane_basis_like", ("x",))


@rev("rt.lane_unbroadcast", view=True)
def lane_unbroadcast(dout, out, g, shape, outer=0):
    dg = rt.lane_broadcast_to_shape(dout, rt.example_shape(g, outer), outer)


@fwd("rt.lane_unbroadcast")
def lane_unbroadcast_fwd(out, g, shape, outer=0):
    dout = rt.lane_unbroadcast(dg, shape, outer)


@rev("rt.lane_broadcast_to_shape", view=True)
def lane_broadcast_to_shape(dout, out, t, shape, outer=0):
    dt = rt.lane_unbroadcast(dout, rt.example_shape(t, outer), outer)


@fwd("rt.lane_broadcast_to_shape")
def lane_broadcast_to_shape_fwd(out, t, shape, outer=0):
    dout = rt.lane_broadcast_to_shape(dt, shape, outer)


@rev("rt.lane_expand_to", view=True)
def lane_expand_to(dout, out, g, shape, axis=None, keepdims=False, outer=0):
    dg = rt.lane_expand_to_adj(dout, axis, keepdims, outer)


@fwd("rt.lane_expand_to")
def lane_expand_to_fwd(out, g, shape, axis=None, keepdims=False, outer=0):
    dout = rt.lane_expand_to(dg, shape, axis, keepdims, outer)


@rev("rt.lane_expand_to_adj")
def lane_expand_to_adj(dout, out, x, axis=None, keepdims=False, outer=0):
    dx = rt.lane_expand_to(dout, rt.example_shape(x, outer), axis, keepdims, outer)


@fwd("rt.lane_expand_to_adj")
def lane_expand_to_adj_fwd(out, x, axis=None, keepdims=False, outer=0):
    dout = rt.lane_expand_to_adj(dx, axis, keepdims, outer)


@rev("rt.lane_as_grad", view=True)
def lane_as_grad(dout, out, g, x, g_batched, x_batched, n, outer=0):
    dg = rt.lane_as_grad_adj(dout, g, x, g_batched, x_batched, n, outer)


@fwd("rt.lane_as_grad")
def lane_as_grad_fwd(out, g, x, g_batched, x_batched, n, outer=0):
    dout = rt.lane_as_grad(dg, x, g_batched, x_batched, n, outer)


@rev("rt.lane_as_grad_adj", view=True)
def lane_as_grad_adj(dout, out, d, g, x, g_batched, x_batched, n, outer=0):
    dd = rt.lane_as_grad(dout, x, g_batched, x_batched, n, outer)


@fwd("rt.lane_as_grad_adj")
def lane_as_grad_adj_fwd(out, d, g, x, g_batched, x_batched, n, outer=0):
    dout = rt.lane_as_grad_adj(dd, g, x, g_batched, x_batched, n, outer)


@rev("rt.lane_to_like", view=True)
def lane_to_like(dout, out, g, x, outer=0):
    dg = rt.lane_to_like(dout, g, outer)


@fwd("rt.lane_to_like")
def lane_to_like_fwd(out, g, x, outer=0):
    dout = rt.lane_to_like(dg, x, outer)


@rev("rt.lane_tree_vdot")
def lane_tree_vdot(dout, out, a, b, outer=0):
    da = rt.lane_tree_scale(b, dout, outer)
    db = rt.lane_tree_scale(a, dout, outer)


@fwd("rt.lane_tree_vdot")
def lane_tree_vdot_fwd(out, a, b, outer=0):
    dout = rt.lane_tree_vdot(da, b, outer)
    dout = rt.lane_tree_vdot(a, db, outer)


@rev("rt.lane_tree_scale")
def lane_tree_scale(dout, out, x, s, outer=0):
    dx = rt.lane_tree_scale(dout, s, outer)
    ds = rt.lane_tree_vdot(dout, x, outer)


@fwd("rt.lane_tree_scale")
def lane_tree_scale_fwd(out, x, s, outer=0):
    dout = rt.lane_tree_scale(dx, s, outer)
    dout = rt.lane_tree_scale(x, ds, outer)


for _s, _arrays in {"rt.lane_unbroadcast": ("g",), "rt.lane_broadcast_to_shape": ("t",),
                    "rt.lane_expand_to": ("g",), "rt.lane_expand_to_adj": ("x",),
                    "rt.lane_as_grad": ("g", "x"), "rt.lane_as_grad_adj": ("d", "g", "x"),
                    "rt.lane_tree_vdot": ("a", "b"), "rt.lane_to_like": ("g", "x"),
                    "rt.lane_tree_scale": ("x", "s")}.items():
    batch_lanes(_s, _arrays)


# forward mode's lazy zeros before a loop (runtime/trees.py ZeroTangent)
nondiff("rt.zero_tangent")
batch_same("rt.zero_tangent")
