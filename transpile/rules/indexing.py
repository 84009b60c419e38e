"""Subscripts and containers: reading `x[idx]` and building tuples, lists and dicts.

`x[idx] = v` on a local array is the statement-level primitive `index_update`; the reverse
pass applies its rule (see reverse/adjoints.py), since it updates a variable rather than making one.
"""
import gast

from .core import batch, batch_lanes, batch_same, fold, fwd, nondiff, rev, zero_flow
from .core import register_container as _register_container
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("[]", "rt.getitem", view=True)
def getitem(dout, out, x, idx):
    dx = rt.index_add(dx, x, idx, dout)


zero_flow("select", "[]", "rt.getitem")


@fwd("[]", "rt.getitem")
def getitem_fwd(out, x, idx):
    dout = rt.getitem(dx, idx)


# x[idx] before vmap's write into a container (None for a key a dict does not hold yet)
@rev("rt.lane_slot", view=True)
def lane_slot(dout, out, x, idx):
    dx = rt.index_add(dx, x, idx, dout)


@fwd("rt.lane_slot")
def lane_slot_fwd(out, x, idx):
    dout = rt.lane_slot(dx, idx)


@batch("[]", "rt.getitem")
def getitem_batch(x, idx):
    if idx_batched:
        out = rt.lane_gather(x, rt.lane_index_parts(idx, batch_size, idx_spec), x_batched)
    else:
        out = rt.lane_getitem(x, idx)


@batch("rt.lane_slot")
def lane_slot_batch(x, idx):
    """As x[idx], and None still for a key a dict does not hold yet."""
    if idx_batched:
        if x_batched:
            out = rt.lane_slot(x, rt.lane_key(x, idx, batch_size, spec=idx_spec))
        else:
            out = rt.lane_gather(x, rt.lane_index_parts(idx, batch_size, idx_spec), x_batched)
    else:
        out = rt.lane_slot(x, rt.lane_index(x, idx))


@rev("rt.index_add", "rt.index_add_into", view=(0, 3))
def index_add(dout, out, dx, x, idx, dy):
    ddx = dout
    ddy = rt.part(dout, idx, dy)


@fwd("rt.index_add")
def index_add_fwd(out, dx, x, idx, dy):
    dout = rt.index_add(ddx, x, idx, ddy)


@batch("rt.index_add", "rt.index_add_into")
def index_add_batch(dx, x, idx, dy):
    """One adjoint per example; an unbatched `dx` is added to each."""
    if dx_batched:
        if idx_batched:
            if x_batched:
                out = rt.index_add(dx, x, rt.lane_key(x, idx, batch_size, spec=idx_spec), dy)
            else:
                out = rt.index_add(dx, rt.lanes_view(x, batch_size),
                                   rt.lane_scatter_index(idx, batch_size, spec=idx_spec), dy)
        else:
            if x_batched:
                out = rt.index_add(dx, x, rt.lane_index(x, idx), dy)
            else:
                out = rt.index_add(dx, rt.lanes_view(x, batch_size),
                                   rt.lane_index(rt.lanes_view(x, batch_size), idx), dy)
    else:
        # the unbatched dx is seen along the batch (a view): broadcasting it against the
        # batched sum would line its axes up wrongly under a vmap around this one
        if idx_batched:
            if x_batched:
                out = rt.add(rt.batch_view(dx, batch_size),
                             rt.index_add(None, x, rt.lane_key(x, idx, batch_size,
                                                               spec=idx_spec), dy))
            else:
                out = rt.add(rt.batch_view(dx, batch_size),
                             rt.index_add(None, rt.lanes_view(x, batch_size),
                                          rt.lane_scatter_index(idx, batch_size,
                                                                spec=idx_spec), dy))
        else:
            if x_batched:
                out = rt.add(rt.batch_view(dx, batch_size),
                             rt.index_add(None, x, rt.lane_index(x, idx), dy))
            else:
                out = rt.add(rt.batch_view(dx, batch_size),
                             rt.index_add(None, rt.lanes_view(x, batch_size),
                                          rt.lane_index(rt.lanes_view(x, batch_size), idx),
                                          dy))


@rev("rt.part", view=True)
def part(dout, out, g, key, like):
    dg = rt.index_add(None, g, key, dout)


@fwd("rt.part")
def part_fwd(out, g, key, like):
    dout = rt.part(dg, key, like)


@batch("rt.part")
def part_batch(g, key, like):
    """`g[key]` (an element of a container adjoint, or a part of an array adjoint)."""
    if g_batched:
        if key_batched:
            out = rt.part(g, rt.lane_key(g, key, batch_size, spec=key_spec),
                          rt.lanes_view(like, batch_size))
        else:
            if like_batched:
                out = rt.part(g, rt.lane_index(g, key), like)
            else:
                out = rt.part(g, rt.lane_index(g, key), rt.lanes_view(like, batch_size))
    else:
        if key_batched:
            out = rt.part(rt.broadcast_batch(g, batch_size),
                          rt.lane_scatter_index(key, batch_size, spec=key_spec),
                          rt.lanes_view(like, batch_size))
        else:
            out = rt.part(rt.broadcast_batch(g, batch_size),
                          rt.lane_index(rt.lanes_view(g, batch_size), key), like)


@rev("rt.filled", view=True)
def filled(dout, out, g, like):
    dg = dout


@fwd("rt.filled")
def filled_fwd(out, g, like):
    dout = rt.filled(dg, like)


@batch("rt.filled")
def filled_batch(g, like):
    """Every leaf batched: g's slots set to values made where a slot's leaves were not
    batched (zeros of a tangent), its unset ones zeros like `like`'s leaves (`_spec`: one
    flag per leaf of a container, where `_batched` says whether any is)."""
    out = rt.filled(rt.broadcast_batch(g, batch_size, g_spec),
                    rt.broadcast_batch(like, batch_size, like_spec))


@rev("rt.index_update", view=(0, 2))
def index_update(dout, out, x, idx, v):
    dx = rt.index_clear(dout, idx)
    dv = rt.unbroadcast(rt.written_part(dout, idx), v)


@fwd("rt.index_update")
def index_update_fwd(out, x, idx, v):
    dout = rt.index_update(dx, idx, dv)


@batch("rt.index_update")
def index_update_batch(x, idx, v):
    """A batched value is lined up with the slot of an array it fills (rt.lanes_slot)."""
    if x_batched:
        if idx_batched:
            if v_batched:
                out = rt.index_update(
                    x, rt.lane_key(x, idx, batch_size, spec=idx_spec), rt.align_to_slot(
                        v, rt.lanes_slot(x, rt.lane_key(x, idx, batch_size, spec=idx_spec)),
                        rt.lane_key(x, idx, batch_size, spec=idx_spec)))
            else:
                out = rt.index_update(x, rt.lane_key(x, idx, batch_size, spec=idx_spec), v)
        else:
            if v_batched:
                out = rt.index_update(x, rt.lane_index(x, idx), rt.align_lanes(
                    v, rt.lanes_slot(x, rt.lane_index(x, idx))))
            else:
                out = rt.index_update(x, rt.lane_index(x, idx), v)
    else:
        if idx_batched:
            if v_batched:
                out = rt.index_update(
                    rt.broadcast_batch(x, batch_size),
                    rt.lane_scatter_index(idx, batch_size, spec=idx_spec),
                    rt.align_to_slot(v, rt.lanes_slot(
                        rt.lanes_view(x, batch_size),
                        rt.lane_scatter_index(idx, batch_size, spec=idx_spec)),
                        rt.lane_scatter_index(idx, batch_size, spec=idx_spec)))
            else:
                out = rt.index_update(rt.broadcast_batch(x, batch_size),
                                      rt.lane_scatter_index(idx, batch_size, spec=idx_spec), v)
        else:
            out = rt.index_update(
                rt.broadcast_batch(x, batch_size),
                rt.lane_index(rt.lanes_view(x, batch_size), idx),
                rt.align_lanes(v, rt.lanes_slot(rt.lanes_view(x, batch_size),
                                                rt.lane_index(rt.lanes_view(x, batch_size),
                                                              idx))))


@rev("rt.index_clear", view=True)
def index_clear(dout, out, g, idx):
    dg = rt.index_clear(dout, idx)


@fwd("rt.index_clear")
def index_clear_fwd(out, g, idx):
    dout = rt.index_clear(dg, idx)


@batch("rt.index_clear")
def index_clear_batch(g, idx):
    if g_batched:
        if idx_batched:
            out = rt.index_clear(g, rt.lane_key(g, idx, batch_size, spec=idx_spec))
        else:
            out = rt.index_clear(g, rt.lane_index(g, idx))
    else:
        out = rt.index_clear(rt.broadcast_batch(g, batch_size),
                             rt.lane_scatter_index(idx, batch_size, spec=idx_spec))


# Container literals `(a, b)`, `[a, b]`, `{"k": v}`: the reverse pass gives element i the
# adjoint `dout[i]` (any number of elements, so these have no template).
for _kind in ("tuple", "list", "dict"):
    _register_container(_kind)


@rev("rt.to_tuple", "rt.to_list")
def to_sequence(dout, out, x):
    dx = rt.to_like(dout, x)


@fwd("rt.to_tuple", "rt.to_list")
def to_sequence_fwd(out, x):
    """One row for both spellings: the tangent takes the container type of `out`."""
    dout = rt.to_like(dx, out)


@batch("rt.to_tuple")
def to_tuple_batch(x):
    out = rt.to_tuple(rt.lanes_items(x))


@batch("rt.to_list")
def to_list_batch(x):
    out = rt.to_list(rt.lanes_items(x))


# (the reverse rule of rt.to_like is in runtime_helpers.py)
@fwd("rt.to_like")
def to_like_fwd(out, g, x):
    dout = rt.to_like(dg, x)


@rev("rt.written_part", view=True)
def written_part(dout, out, g, idx, lanes=False):
    dg = rt.index_update(rt.zeros_like(g), idx, dout)


@fwd("rt.written_part")
def written_part_fwd(out, g, idx, lanes=False):
    dout = rt.written_part(dg, idx, lanes)


@batch("rt.written_part")
def written_part_batch(g, idx, lanes=False):
    if g_batched:
        if idx_batched:
            out = rt.written_part(g, rt.lane_key(g, idx, batch_size, spec=idx_spec), True)
        else:
            out = rt.written_part(g, rt.lane_index(g, idx))
    else:
        out = rt.written_part(rt.broadcast_batch(g, batch_size),
                              rt.lane_scatter_index(idx, batch_size, spec=idx_spec), True)


# ---------------------------------------------------------------- helpers of vmapped code
# `x[idx]` and `x[idx] = v` written in the source are batched by the vmap pass itself; the
# rules below are for the helpers generated code calls. A per-example index becomes an index
# into the batched array: rt.lane_index (one more leading `:`; a container's index stays)
# or, for an index that differs between examples, rt.lane_scatter_index (each example's row;
# rt.lane_key where the indexed value may be a container, whose key is one for all).
# An argument that only lends its shape is viewed along the batch (rt.lanes_view).


nondiff("rt.lanes_slot")


@batch("rt.lanes_slot", out_batched=False)
def lanes_slot_batch(x, index):
    out = rt.lanes_slot(rt.lanes_probe(x), index)


# Container literals are built by the vmap pass itself (each element keeps its own spec).
batch_same("tuple", "list", "dict")


@rev("rt.lanes_items", container_out=True, view=True)
def lanes_items(dout, out, x, outer=0):
    dx = rt.lanes_stack_like(dout, x, True, None, outer)


@fwd("rt.lanes_items")
def lanes_items_fwd(out, x, outer=0):
    dout = rt.lanes_items(dx, outer)


@rev("rt.lanes_stack_like")
def lanes_stack_like(dout, out, g, x, x_batched, n=None, outer=0):
    dg = rt.lanes_unstack_like(dout, g, outer)


@fwd("rt.lanes_stack_like")
def lanes_stack_like_fwd(out, g, x, x_batched, n=None, outer=0):
    dout = rt.lanes_stack_like(dg, x, x_batched, n, outer)


@rev("rt.lanes_unstack_like", container_out=True)
def lanes_unstack_like(dout, out, d, g, outer=0):
    dd = rt.lanes_stack_like(dout, d, True, None, outer)


@fwd("rt.lanes_unstack_like")
def lanes_unstack_like_fwd(out, d, g, outer=0):
    dout = rt.lanes_unstack_like(dd, g, outer)


batch_lanes("rt.lanes_items", ("x",))
batch_lanes("rt.lanes_stack_like", ("g", "x"))
batch_lanes("rt.lanes_unstack_like", ("d", "g"))


# ---------------------------------------------------------------- gathering functions
# np.take, np.take_along_axis and np.select read parts of their arguments: linear in the
# values, with scatter-adds (or masks) for adjoints. Their helpers take `lead` batch axes
# (runtime/shape_helpers.py): batching rules give every argument the batch axis and add one.

# numpy's `out` (positional here: a keyword out= is refused by binding) would be written
# behind the rules' back: rt.take_mode refuses it where the call is transformed.
@rev("np.take")
def take(dout, out, a, indices, axis=None, out_=None, mode="raise"):
    da = rt.take_adj(dout, a, indices, axis, rt.take_mode(mode, out_))


@fwd("np.take")
def take_fwd(out, a, indices, axis=None, out_=None, mode="raise"):
    dout = np.take(da, indices, axis, None, rt.take_mode(mode, out_))


@batch("np.take")
def take_batch(a, indices, axis=None, out_=None, mode="raise"):
    if not indices_batched:
        out = np.take(rt.lane_flat(a, axis), indices, rt.batched_axis(axis), None,
                      rt.take_mode(mode, out_))
    else:
        out = rt.take_lanes(rt.broadcast_batch(a, batch_size, a_batched), indices, axis,
                            rt.take_mode(mode, out_), 1)


nondiff("rt.take_mode")


@batch("rt.take_mode", out_batched=False)
def take_mode_batch(mode, out_=None):
    out = rt.take_mode(mode, out_)


@fold("rt.take_mode")
def take_mode_fold(mode, out_=None):
    """Without an `out` array (the usual call) the check is the mode itself."""
    return mode if out_ is None or isinstance(out_, gast.Constant) and out_.value is None \
        else None


@rev("rt.take_lanes")
def take_lanes(dout, out, a, indices, axis=None, mode="raise", lead=0):
    da = rt.take_adj(dout, a, indices, axis, mode, lead)


@fwd("rt.take_lanes")
def take_lanes_fwd(out, a, indices, axis=None, mode="raise", lead=0):
    dout = rt.take_lanes(da, indices, axis, mode, lead)


@batch("rt.take_lanes")
def take_lanes_batch(a, indices, axis=None, mode="raise", lead=0):
    out = rt.take_lanes(rt.broadcast_batch(a, batch_size, a_batched),
                        rt.broadcast_batch(indices, batch_size, indices_batched), axis, mode,
                        lead + 1)


@rev("rt.take_adj")
def take_adj(dout, out, g, a, indices, axis=None, mode="raise", lead=0):
    dg = rt.take_lanes(dout, indices, axis, mode, lead)


@fwd("rt.take_adj")
def take_adj_fwd(out, g, a, indices, axis=None, mode="raise", lead=0):
    dout = rt.take_adj(dg, a, indices, axis, mode, lead)


@batch("rt.take_adj")
def take_adj_batch(g, a, indices, axis=None, mode="raise", lead=0):
    out = rt.take_adj(rt.broadcast_batch(g, batch_size, g_batched),
                      rt.broadcast_batch(a, batch_size, a_batched),
                      rt.broadcast_batch(indices, batch_size, indices_batched), axis, mode,
                      lead + 1)


@rev("np.take_along_axis")
def take_along_axis(dout, out, arr, indices, axis=-1):
    darr = rt.take_along_axis_adj(dout, arr, indices, axis)


@fwd("np.take_along_axis")
def take_along_axis_fwd(out, arr, indices, axis=-1):
    dout = np.take_along_axis(darr, indices, axis)


@batch("np.take_along_axis")
def take_along_axis_batch(arr, indices, axis=-1):
    out = rt.take_along_axis_lanes(rt.broadcast_batch(arr, batch_size, arr_batched),
                                   rt.broadcast_batch(indices, batch_size, indices_batched),
                                   axis, 1)


@rev("rt.take_along_axis_lanes")
def take_along_axis_lanes(dout, out, arr, indices, axis=-1, lead=0):
    darr = rt.take_along_axis_adj(dout, arr, indices, axis, lead)


@fwd("rt.take_along_axis_lanes")
def take_along_axis_lanes_fwd(out, arr, indices, axis=-1, lead=0):
    dout = rt.take_along_axis_lanes(darr, indices, axis, lead)


@batch("rt.take_along_axis_lanes")
def take_along_axis_lanes_batch(arr, indices, axis=-1, lead=0):
    out = rt.take_along_axis_lanes(rt.broadcast_batch(arr, batch_size, arr_batched),
                                   rt.broadcast_batch(indices, batch_size, indices_batched),
                                   axis, lead + 1)


@rev("rt.take_along_axis_adj")
def take_along_axis_adj(dout, out, g, arr, indices, axis=-1, lead=0):
    dg = rt.take_along_axis_lanes(dout, indices, axis, lead)


@fwd("rt.take_along_axis_adj")
def take_along_axis_adj_fwd(out, g, arr, indices, axis=-1, lead=0):
    dout = rt.take_along_axis_adj(dg, arr, indices, axis, lead)


@batch("rt.take_along_axis_adj")
def take_along_axis_adj_batch(g, arr, indices, axis=-1, lead=0):
    out = rt.take_along_axis_adj(rt.broadcast_batch(g, batch_size, g_batched),
                                 rt.broadcast_batch(arr, batch_size, arr_batched),
                                 rt.broadcast_batch(indices, batch_size, indices_batched),
                                 axis, lead + 1)


# np.select(condlist, choicelist, default): each choice's adjoint is the adjoint where its
# condition is the first that holds (rt.select_choices_adj), the default's where none holds
# (rt.select_default_adj); the transposes put them back (np.select, rt.select_default_place).
@rev("np.select")
def select(dout, out, condlist, choicelist, default=0):
    dchoicelist = rt.select_choices_adj(dout, condlist, choicelist)
    ddefault = rt.select_default_adj(dout, condlist, default)


@fwd("np.select")
def select_fwd(out, condlist, choicelist, default=0):
    dout = rt.select_lanes(condlist, dchoicelist, ddefault)


@batch("np.select")
def select_batch(condlist, choicelist, default=0):
    out = rt.select_lanes(rt.broadcast_batch(condlist, batch_size, condlist_spec),
                          rt.broadcast_batch(choicelist, batch_size, choicelist_spec),
                          rt.broadcast_batch(default, batch_size, default_batched), 1)


@rev("rt.select_lanes")
def select_lanes(dout, out, condlist, choicelist, default=0, lead=0):
    dchoicelist = rt.select_choices_adj(dout, condlist, choicelist, lead)
    ddefault = rt.select_default_adj(dout, condlist, default, lead)


@fwd("rt.select_lanes")
def select_lanes_fwd(out, condlist, choicelist, default=0, lead=0):
    dout = rt.select_lanes(condlist, dchoicelist, ddefault, lead)


@batch("rt.select_lanes")
def select_lanes_batch(condlist, choicelist, default=0, lead=0):
    out = rt.select_lanes(rt.broadcast_batch(condlist, batch_size, condlist_spec),
                          rt.broadcast_batch(choicelist, batch_size, choicelist_spec),
                          rt.broadcast_batch(default, batch_size, default_batched), lead + 1)


@rev("rt.select_choices_adj", container_out=True)
def select_choices_adj(dout, out, g, condlist, choicelist, lead=0):
    dg = rt.select_lanes(condlist, dout, np.zeros_like(g), lead)


@fwd("rt.select_choices_adj")
def select_choices_adj_fwd(out, g, condlist, choicelist, lead=0):
    dout = rt.select_choices_adj(dg, condlist, choicelist, lead)


@batch("rt.select_choices_adj")
def select_choices_adj_batch(g, condlist, choicelist, lead=0):
    out = rt.select_choices_adj(rt.broadcast_batch(g, batch_size, g_batched),
                                rt.broadcast_batch(condlist, batch_size, condlist_spec),
                                rt.broadcast_batch(choicelist, batch_size, choicelist_spec),
                                lead + 1)


@rev("rt.select_default_adj")
def select_default_adj(dout, out, g, condlist, default, lead=0):
    dg = rt.select_default_place(dout, condlist, g, lead)


@fwd("rt.select_default_adj")
def select_default_adj_fwd(out, g, condlist, default, lead=0):
    dout = rt.select_default_adj(dg, condlist, default, lead)


@batch("rt.select_default_adj")
def select_default_adj_batch(g, condlist, default, lead=0):
    out = rt.select_default_adj(rt.broadcast_batch(g, batch_size, g_batched),
                                rt.broadcast_batch(condlist, batch_size, condlist_spec),
                                rt.broadcast_batch(default, batch_size, default_batched),
                                lead + 1)


@rev("rt.select_default_place")
def select_default_place(dout, out, h, condlist, g, lead=0):
    dh = rt.select_default_adj(dout, condlist, h, lead)


@fwd("rt.select_default_place")
def select_default_place_fwd(out, h, condlist, g, lead=0):
    dout = rt.select_default_place(dh, condlist, g, lead)


@batch("rt.select_default_place")
def select_default_place_batch(h, condlist, g, lead=0):
    out = rt.select_default_place(rt.broadcast_batch(h, batch_size, h_batched),
                                  rt.broadcast_batch(condlist, batch_size, condlist_spec),
                                  rt.broadcast_batch(g, batch_size, g_batched), lead + 1)
