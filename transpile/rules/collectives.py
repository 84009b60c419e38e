"""Collectives over a named mapped axis (tp.psum, ...): derivative rules.

Their batching is structural and lives in the vmap pass (transpile/batching.py): for the
axis a vmap names, psum becomes a sum over the batch axis; for other names the call is left
for the enclosing vmap (or pmap) of that name. The reverse rule of a sum over examples
sends every example the sum of all examples' adjoints (the transpose of "sum, then give
the total to every example").
"""
from .core import BatchRule, batch_elementwise, batch_lanes, fwd, nondiff, rev, set_batch_rule
import runtime as rt  # noqa: F401


@rev("rt.psum")
def psum(dout, out, x, axis_name):
    dx = rt.psum(dout, axis_name)


@fwd("rt.psum")
def psum_fwd(out, x, axis_name):
    dout = rt.psum(dx, axis_name)


@rev("rt.pmean")
def pmean(dout, out, x, axis_name):
    dx = rt.pmean(dout, axis_name)


@fwd("rt.pmean")
def pmean_fwd(out, x, axis_name):
    dout = rt.pmean(dx, axis_name)


# pmax and pmin: the adjoint goes to the examples that hold the extremum, split evenly
# between ties (as np.max's), so that pmax of a value every example shares has
# derivative 1, not the number of examples.

@rev("rt.pmax")
def pmax(dout, out, x, axis_name):
    dx = rt.psum(dout, axis_name) * (x == out) / rt.psum(x == out, axis_name)


@fwd("rt.pmax")
def pmax_fwd(out, x, axis_name):
    dout = rt.psum(dx * (x == out), axis_name) / rt.psum(x == out, axis_name)


@rev("rt.pmin")
def pmin(dout, out, x, axis_name):
    dx = rt.psum(dout, axis_name) * (x == out) / rt.psum(x == out, axis_name)


@fwd("rt.pmin")
def pmin_fwd(out, x, axis_name):
    dout = rt.psum(dx * (x == out), axis_name) / rt.psum(x == out, axis_name)


@rev("rt.all_gather")
def all_gather(dout, out, x, axis_name, axis=0, tiled=False):
    dx = rt.psum_scatter(dout, axis_name, scatter_dimension=axis, tiled=tiled)


@fwd("rt.all_gather")
def all_gather_fwd(out, x, axis_name, axis=0, tiled=False):
    dout = rt.all_gather(dx, axis_name, axis=axis, tiled=tiled)


@rev("rt.psum_scatter")
def psum_scatter(dout, out, x, axis_name, scatter_dimension=0, tiled=False):
    dx = rt.all_gather(dout, axis_name, axis=scatter_dimension, tiled=tiled)


@fwd("rt.psum_scatter")
def psum_scatter_fwd(out, x, axis_name, scatter_dimension=0, tiled=False):
    dout = rt.psum_scatter(dx, axis_name, scatter_dimension=scatter_dimension, tiled=tiled)


@rev("rt.ppermute")
def ppermute(dout, out, x, axis_name, perm):
    dx = rt.ppermute(dout, axis_name, rt.inverse_permutation(perm))


@fwd("rt.ppermute")
def ppermute_fwd(out, x, axis_name, perm):
    dout = rt.ppermute(dx, axis_name, perm)


@rev("rt.all_to_all")
def all_to_all(dout, out, x, axis_name, split_axis, concat_axis, tiled=False):
    dx = rt.all_to_all(dout, axis_name, concat_axis, split_axis, tiled=tiled)


@fwd("rt.all_to_all")
def all_to_all_fwd(out, x, axis_name, split_axis, concat_axis, tiled=False):
    dout = rt.all_to_all(dx, axis_name, split_axis, concat_axis, tiled=tiled)


nondiff("rt.axis_index")
nondiff("rt.inverse_permutation")

for _s in ("rt.psum", "rt.pmean", "rt.pmax", "rt.pmin", "rt.all_gather", "rt.axis_index",
           "rt.psum_scatter", "rt.ppermute", "rt.all_to_all"):
    set_batch_rule(_s, BatchRule("collective"))


# The helpers the vmap pass writes for a collective over its own axis are linear maps of
# the batched operand; each one's transpose is another of them. `outer`: the axes enclosing
# vmaps put in front (batch_lanes: a vmap of this vmapped code adds one).

@rev("rt.all_gather_lanes", view=True)
def all_gather_lanes(dout, out, x, axis=0, tiled=False, outer=0):
    dx = rt.all_gather_lanes_adjoint(dout, x, axis, tiled, outer)


@fwd("rt.all_gather_lanes")
def all_gather_lanes_fwd(out, x, axis=0, tiled=False, outer=0):
    dout = rt.all_gather_lanes(dx, axis, tiled, outer)


@rev("rt.all_gather_lanes_adjoint", view=True)
def all_gather_lanes_adjoint(dout, out, g, x, axis=0, tiled=False, outer=0):
    dg = rt.all_gather_lanes(dout, axis, tiled, outer)


@fwd("rt.all_gather_lanes_adjoint")
def all_gather_lanes_adjoint_fwd(out, g, x, axis=0, tiled=False, outer=0):
    dout = rt.all_gather_lanes_adjoint(dg, x, axis, tiled, outer)


@rev("rt.psum_scatter_lanes")
def psum_scatter_lanes(dout, out, x, scatter_dimension=0, tiled=False, outer=0):
    dx = rt.broadcast_batch(rt.all_gather_lanes(dout, scatter_dimension, tiled, outer),
                            rt.batch_size_of(x, outer), False, outer)


@fwd("rt.psum_scatter_lanes")
def psum_scatter_lanes_fwd(out, x, scatter_dimension=0, tiled=False, outer=0):
    dout = rt.psum_scatter_lanes(dx, scatter_dimension, tiled, outer)


@rev("rt.ppermute_lanes")
def ppermute_lanes(dout, out, x, perm, outer=0):
    dx = rt.ppermute_lanes(dout, rt.inverse_permutation(perm), outer)


@fwd("rt.ppermute_lanes")
def ppermute_lanes_fwd(out, x, perm, outer=0):
    dout = rt.ppermute_lanes(dx, perm, outer)


@rev("rt.all_to_all_lanes", view=True)
def all_to_all_lanes(dout, out, x, split_axis, concat_axis, tiled=False, outer=0):
    dx = rt.all_to_all_lanes(dout, concat_axis, split_axis, tiled, outer)


@fwd("rt.all_to_all_lanes")
def all_to_all_lanes_fwd(out, x, split_axis, concat_axis, tiled=False, outer=0):
    dout = rt.all_to_all_lanes(dx, split_axis, concat_axis, tiled, outer)


for _s, _arrays in (("rt.all_gather_lanes", ("x",)), ("rt.all_gather_lanes_adjoint", ("g", "x")),
                    ("rt.psum_scatter_lanes", ("x",)), ("rt.ppermute_lanes", ("x",)),
                    ("rt.all_to_all_lanes", ("x",))):
    batch_lanes(_s, _arrays)


@rev("rt.psum_copies")
def psum_copies(dout, out, x, n):
    dx = rt.psum_copies(dout, n)


@fwd("rt.psum_copies")
def psum_copies_fwd(out, x, n):
    dout = rt.psum_copies(dx, n)


batch_elementwise("rt.psum_copies")


set_batch_rule("rt.inverse_permutation", BatchRule("same"))
