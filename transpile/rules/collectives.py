"""Collectives over a named mapped axis (tp.psum, ...): derivative rules.

Their batching is structural and lives in the vmap pass (transpile/batching.py): for the
axis a vmap names, psum becomes a sum over the batch axis; for other names the call is left
for the enclosing vmap (or pmap) of that name. The reverse rule of a sum over examples
sends every example the sum of all examples' adjoints (the transpose of "sum, then give
the total to every example").
"""
from .core import BatchRule, fwd, nondiff, rev, set_batch_rule
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


@rev("rt.pmax")
def pmax(dout, out, x, axis_name):
    dx = rt.psum(dout, axis_name) * (x == out)


@fwd("rt.pmax")
def pmax_fwd(out, x, axis_name):
    dout = rt.psum(dx * (x == out), axis_name)


@rev("rt.pmin")
def pmin(dout, out, x, axis_name):
    dx = rt.psum(dout, axis_name) * (x == out)


@fwd("rt.pmin")
def pmin_fwd(out, x, axis_name):
    dout = rt.psum(dx * (x == out), axis_name)


@rev("rt.all_gather")
def all_gather(dout, out, x, axis_name):
    dx = rt.psum(dout, axis_name)[rt.axis_index(axis_name)]


@fwd("rt.all_gather")
def all_gather_fwd(out, x, axis_name):
    dout = rt.all_gather(dx, axis_name)


nondiff("rt.axis_index")

for _s in ("rt.psum", "rt.pmean", "rt.pmax", "rt.pmin", "rt.all_gather", "rt.axis_index"):
    set_batch_rule(_s, BatchRule("collective"))
