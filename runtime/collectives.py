"""Collectives over a named mapped axis: tp.psum(x, 'i') inside vmap(..., axis_name='i').

Generated code never runs these functions: vmap rewrites each call for its own axis (a sum
over the batch axis, ...). They run only when called outside any mapping of that axis name,
which is an error that says so. (pmap gives them the same meaning across devices.)
"""
from .errors import TransformError


def _unbound(fn, axis_name):
    raise TransformError(
        f"{fn}: no mapped axis named {axis_name!r} here.\n  hint: call it inside a function "
        f"transformed by tp.vmap(..., axis_name={axis_name!r}) (or pmap).")


def psum(x, axis_name):
    """The sum of x over the examples of the mapped axis `axis_name` (the same in all)."""
    _unbound("psum", axis_name)


def pmean(x, axis_name):
    """The mean of x over the mapped axis."""
    _unbound("pmean", axis_name)


def pmax(x, axis_name):
    """The maximum of x over the mapped axis."""
    _unbound("pmax", axis_name)


def pmin(x, axis_name):
    """The minimum of x over the mapped axis."""
    _unbound("pmin", axis_name)


def all_gather(x, axis_name):
    """Every example's x, stacked along a new leading axis (the same in all examples)."""
    _unbound("all_gather", axis_name)


def axis_index(axis_name):
    """The position of this example along the mapped axis."""
    _unbound("axis_index", axis_name)
