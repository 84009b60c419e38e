"""Subscripts and containers: reading `x[idx]` and building tuples, lists and dicts.

`x[idx] = v` on a local array is the statement-level primitive `index_update`; the reverse
pass applies its rule (see reverse.py), since it updates a variable rather than making one.
"""
from .core import fwd, register_container as _register_container, rev
import runtime as rt  # noqa: F401


@rev("[]", "rt.getitem", view=True)
def getitem(dout, out, x, idx):
    dx = rt.index_add(dx, x, idx, dout)


@fwd("[]", "rt.getitem")
def getitem_fwd(out, x, idx):
    dout = rt.getitem(dx, idx)


@rev("rt.index_add", "rt.index_add_into")
def index_add(dout, out, dx, x, idx, dy):
    ddx = dout
    ddy = rt.part(dout, idx, dy)


@fwd("rt.index_add")
def index_add_fwd(out, dx, x, idx, dy):
    dout = rt.index_add(ddx, x, idx, ddy)


@rev("rt.part")
def part(dout, out, g, key, like):
    dg = rt.index_add(None, g, key, dout)


@fwd("rt.part")
def part_fwd(out, g, key, like):
    dout = rt.part(dg, key, like)


@rev("rt.filled")
def filled(dout, out, g, like):
    dg = dout


@fwd("rt.filled")
def filled_fwd(out, g, like):
    dout = rt.filled(dg, like)


@rev("rt.index_update")
def index_update(dout, out, x, idx, v):
    dx = rt.index_clear(dout, idx)
    dv = rt.unbroadcast(rt.written_part(dout, idx), v)


@fwd("rt.index_update")
def index_update_fwd(out, x, idx, v):
    dout = rt.index_update(dx, idx, dv)


@rev("rt.index_clear")
def index_clear(dout, out, g, idx):
    dg = rt.index_clear(dout, idx)


@fwd("rt.index_clear")
def index_clear_fwd(out, g, idx):
    dout = rt.index_clear(dg, idx)


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


# (the reverse rule of rt.to_like is in runtime_helpers.py)
@fwd("rt.to_like")
def to_like_fwd(out, g, x):
    dout = rt.to_like(dg, x)


@rev("rt.written_part")
def written_part(dout, out, g, idx):
    dg = rt.index_update(rt.zeros_like(g), idx, dout)


@fwd("rt.written_part")
def written_part_fwd(out, g, idx):
    dout = rt.written_part(dg, idx)
