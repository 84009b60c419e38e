"""Collectives over a named mapped axis: tp.psum(x, 'i') inside vmap(..., axis_name='i') or
pmap(..., axis_name='i').

Under vmap, generated code never runs these functions: the vmap pass rewrites each call for
its own axis (a sum over the batch axis, ...). Under pmap each device's code calls them, and
they meet the other devices through the communicator runtime/spmd.py binds to the axis in
the device's thread. Called where no mapping names the axis, they raise an error that says
so. Arrays in tuples, lists and dicts are reduced leaf by leaf, as in JAX.
"""
import functools

import numpy as np

from . import spmd
from .backend import array_module
from .errors import TransformError
from .trees import tree_map


def _bound(fn, axis_name):
    found = spmd.bound_axis(axis_name)
    if found is None:
        raise TransformError(
            f"{fn}: no mapped axis named {axis_name!r} here.\n  hint: call it inside a "
            f"function transformed by tp.vmap(..., axis_name={axis_name!r}) or "
            f"tp.pmap(..., axis_name={axis_name!r}).")
    return found


def _what(fn, axis_name):
    return f"{fn} over axis {axis_name!r}"


@functools.lru_cache(maxsize=None)
def summed_dtype(dtype):
    """The dtype np.sum gives an array of `dtype`: booleans and integers narrower than the
    platform's count in int64 (uint64), others keep theirs. psum and psum_scatter give it
    under vmap (where they are np.sum over the batch axis) and under pmap alike, so that
    psum(x > 0) counts and psum of int8 does not wrap. (Strings and objects keep theirs,
    for the communicator to refuse.)"""
    if np.dtype(dtype).kind not in "biufc":
        return np.dtype(dtype)
    return np.add.reduce(np.zeros(1, dtype)).dtype


@functools.lru_cache(maxsize=None)
def mean_dtype(dtype):
    """The dtype np.mean gives: float64 for booleans and integers, others keep theirs."""
    if np.dtype(dtype).kind not in "biufc":
        return np.dtype(dtype)
    return np.mean(np.zeros(1, dtype)).dtype


def _as(v, dtype_of):
    """v in dtype_of(its dtype)."""
    v = array_module(v).asarray(v)
    wanted = dtype_of(v.dtype)
    return v if v.dtype == wanted else v.astype(wanted)


def _over_each(reduction, x, axis_name):
    """A reduction over a tuple of axis names: over each in turn (innermost first; sums,
    means of equal-sized groups, maxima and minima do not depend on the order)."""
    for one in reversed(axis_name):
        x = reduction(x, one)
    return x


def psum(x, axis_name):
    """The sum of x over the examples of the mapped axis `axis_name` (the same in all), in
    np.sum's dtype (summed_dtype); over every axis of a tuple of names."""
    if isinstance(axis_name, tuple):
        return _over_each(psum, x, axis_name)
    comm, rank = _bound("psum", axis_name)
    return tree_map(lambda v: comm.allreduce(rank, _as(v, summed_dtype), "sum",
                                             _what("psum", axis_name)), x)


def pmean(x, axis_name):
    """The mean of x over the mapped axis, in np.mean's dtype (booleans and integers are
    summed as float64: the fraction of True, no wrapping)."""
    if isinstance(axis_name, tuple):
        return _over_each(pmean, x, axis_name)
    comm, rank = _bound("pmean", axis_name)
    return tree_map(lambda v: comm.allreduce(rank, _as(v, mean_dtype), "sum",
                                             _what("pmean", axis_name)) / comm.size, x)


def pmax(x, axis_name):
    """The maximum of x over the mapped axis."""
    if isinstance(axis_name, tuple):
        return _over_each(pmax, x, axis_name)
    comm, rank = _bound("pmax", axis_name)
    return tree_map(lambda v: comm.allreduce(rank, v, "max", _what("pmax", axis_name)), x)


def pmin(x, axis_name):
    """The minimum of x over the mapped axis."""
    if isinstance(axis_name, tuple):
        return _over_each(pmin, x, axis_name)
    comm, rank = _bound("pmin", axis_name)
    return tree_map(lambda v: comm.allreduce(rank, v, "min", _what("pmin", axis_name)), x)


def all_gather(x, axis_name, axis=0, tiled=False):
    """Every example's x, stacked along a new axis `axis` (the same in all examples);
    tiled=True concatenates along the existing axis `axis` instead."""
    comm, rank = _bound("all_gather", axis_name)
    return tree_map(lambda v: comm.allgather(rank, v, axis, tiled,
                                             _what("all_gather", axis_name)), x)


def psum_scatter(x, axis_name, scatter_dimension=0, tiled=False):
    """psum, of which example i keeps only block i along `scatter_dimension` (that axis
    has one entry per example; tiled=True: a multiple, kept as a block)."""
    comm, rank = _bound("psum_scatter", axis_name)
    return tree_map(lambda v: comm.reduce_scatter(rank, _as(v, summed_dtype),
                                                  scatter_dimension, tiled,
                                                  _what("psum_scatter", axis_name)), x)


def ppermute(x, axis_name, perm):
    """Example d gets the x of the example s for each (s, d) in `perm`; an example no pair
    sends to gets zeros."""
    comm, rank = _bound("ppermute", axis_name)
    perm = _permutation_pairs(perm, comm.size, _what("ppermute", axis_name))
    return tree_map(lambda v: comm.permute(rank, v, perm, _what("ppermute", axis_name)), x)


def _permutation_pairs(perm, size, what):
    """ppermute's `perm` as (source, destination) pairs of ints, checked as JAX does: every
    index an example's (0 to size - 1), no source and no destination twice (a destination
    twice would have two values, and between processes a message nobody receives)."""
    pairs = [(int(s), int(d)) for s, d in perm]
    for role, column in (("source", 0), ("destination", 1)):
        seen = [pair[column] for pair in pairs]
        for k in seen:
            if not 0 <= k < size:
                raise ValueError(f"{what}: perm names {role} {k}, but the axis has {size} "
                                 f"examples (0 to {size - 1})")
            if seen.count(k) > 1:
                raise ValueError(f"{what}: perm has {role} {k} in more than one pair; each "
                                 "example sends at most once and receives at most once")
    return pairs


def all_to_all(x, axis_name, split_axis, concat_axis, tiled=False):
    """Example d gets block d (along `split_axis`) of every example's x, stacked along a
    new axis `concat_axis` by source example (tiled=True: concatenated)."""
    comm, rank = _bound("all_to_all", axis_name)
    return tree_map(lambda v: comm.alltoall(rank, v, split_axis, concat_axis, tiled,
                                            _what("all_to_all", axis_name)), x)


def inverse_permutation(perm):
    """The (destination, source) pairs of ppermute's `perm`: its transpose."""
    return [(d, s) for s, d in perm]


def axis_index(axis_name):
    """The position of this example along the mapped axis."""
    _, rank = _bound("axis_index", axis_name)
    return np.int64(rank)



# ---------------------------------------------------------------------------- under vmap
# What the vmap pass writes for a collective over its own axis: x carries the examples
# along axis `outer` (the batch axis; 0 unless enclosing vmaps batch this code again, each
# adding a leading axis), and the result is the value every example would get, batched
# likewise, or (all_gather) the one value all examples share.

def _lead(outer):
    """An index that takes every entry of the first `outer` axes."""
    return (slice(None),) * outer


def _past(axis, outer):
    """An example's axis `axis` in an array with `outer` axes before its own."""
    return axis + outer if axis >= 0 else axis


def psum_copies(x, n):
    """psum over the batch axis of a value every example shares: n times it, in np.sum's
    dtype (what the sum of n copies gives)."""
    return _as(x, summed_dtype) * n


def all_gather_lanes(x, axis=0, tiled=False, outer=0):
    """all_gather over the batch axis: the stack (or concatenation) of the examples."""
    xp = array_module(x)
    if tiled:
        return xp.concatenate([x[_lead(outer) + (k,)] for k in range(x.shape[outer])],
                              axis=_past(axis, outer))
    return xp.moveaxis(x, outer, _past(axis, outer))


def all_gather_lanes_adjoint(g, x, axis=0, tiled=False, outer=0):
    """The transpose of all_gather_lanes: g (shaped like its result) back to x's shape."""
    xp = array_module(g)
    if tiled:
        return xp.stack(xp.split(g, x.shape[outer], axis=_past(axis, outer)), axis=outer)
    return xp.moveaxis(g, _past(axis, outer), outer)


def psum_scatter_lanes(x, scatter_dimension=0, tiled=False, outer=0):
    """psum_scatter over the batch axis: example k gets block k of the sum."""
    xp = array_module(x)
    total = xp.sum(x, axis=outer)
    n = x.shape[outer]
    dim = outer + scatter_dimension % max(total.ndim - outer, 1)
    moved = xp.moveaxis(total, dim, outer)
    if not tiled:
        return moved
    blocks = moved.reshape(moved.shape[:outer] + (n, moved.shape[outer] // n) +
                           moved.shape[outer + 1:])
    return xp.moveaxis(blocks, outer + 1, dim + 1)


def ppermute_lanes(x, perm, outer=0):
    """ppermute over the batch axis: out[d] = x[s] for (s, d) in perm, zeros elsewhere."""
    xp = array_module(x)
    perm = _permutation_pairs(perm, x.shape[outer], "ppermute")
    out = xp.zeros_like(x)
    if perm:
        sources, destinations = zip(*perm)
        out[_lead(outer) + (list(destinations),)] = x[_lead(outer) + (list(sources),)]
    return out


def all_to_all_lanes(x, split_axis, concat_axis, tiled=False, outer=0):
    """all_to_all over the batch axis: out[d] gathers block d of every example's x. (With
    enclosing vmaps' axes in front, each of their examples in turn.)"""
    xp = array_module(x)
    if outer:
        lead = x.shape[:outer]
        flat = x.reshape((-1,) + x.shape[outer:])
        parts = [all_to_all_lanes(part, split_axis, concat_axis, tiled) for part in flat]
        stacked = xp.stack(parts)
        return stacked.reshape(lead + stacked.shape[1:])
    n = x.shape[0]
    split = split_axis % (x.ndim - 1) + 1
    if not tiled:
        moved = xp.moveaxis(x, split, 0)            # [d, s, ...]: block d of example s
        concat = concat_axis % (x.ndim - 1)
        return xp.moveaxis(moved, 1, concat + 1)
    moved = xp.moveaxis(x, split, 1)                # [s, split, ...]
    blocks = moved.reshape((n, n, moved.shape[1] // n) + moved.shape[2:])  # [s, d, b, ...]
    blocks = xp.moveaxis(blocks, 1, 0)              # [d, s, b, ...]
    merged = blocks.reshape((n, n * blocks.shape[2]) + blocks.shape[3:])   # [d, s*b, ...]
    merged = xp.moveaxis(merged, 1, split)          # the split axis back in its place
    concat = concat_axis % (x.ndim - 1) + 1
    if concat == split:
        return merged
    # tiled with different axes: the blocks from the examples join along concat_axis
    parts = xp.split(merged, n, axis=split)
    return xp.concatenate(parts, axis=concat)
