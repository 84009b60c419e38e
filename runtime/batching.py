"""What vmapped code calls: the batch axis is always axis 0 of a batched value.

A batched value holds one example per index of its leading axis; an unbatched value is the
same for every example. Per-example ranks are not known when code is generated, so the few
places where they matter (aligning operands of elementwise operations, choosing between
lanes) ask the arrays at run time, here.
"""
import numbers

import numpy as np

from .backend import array_module
from .errors import TransformError


# ---------------------------------------------------------------- entering and leaving

def _leaves_with_axes(value, axes, path):
    """(path, leaf, axis) for each leaf of `value`, with `axes` a prefix tree of it."""
    if axes is None or isinstance(axes, numbers.Integral):
        if isinstance(value, (tuple, list)):
            for i, v in enumerate(value):
                yield from _leaves_with_axes(v, axes, f"{path}[{i}]")
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from _leaves_with_axes(v, axes, f"{path}[{k!r}]")
        else:
            yield path, value, axes
        return
    if isinstance(axes, (tuple, list)) and isinstance(value, (tuple, list)) \
            and len(axes) == len(value):
        for i, (v, a) in enumerate(zip(value, axes)):
            yield from _leaves_with_axes(v, a, f"{path}[{i}]")
        return
    if isinstance(axes, dict) and isinstance(value, dict) and set(axes) == set(value):
        for k in value:
            yield from _leaves_with_axes(value[k], axes[k], f"{path}[{k!r}]")
        return
    raise ValueError(f"vmap: in_axes {axes!r} does not match the structure of argument "
                     f"{path} ({type(value).__name__})")


def axis_size(args, in_axes, names, given, where):
    """The batch size: `given` (axis_size=) or the size of every mapped axis, which must agree.

    Errors name the argument (and the leaf within it) whose axis is out of range or whose
    size disagrees with the others."""
    sizes = []
    for value, axes, name in zip(args, in_axes, names):
        for path, leaf, axis in _leaves_with_axes(value, axes, name):
            if axis is None:
                continue
            ndim = np.ndim(leaf)
            if not -ndim <= axis < ndim:
                raise ValueError(f"vmap of {where}: in_axes={axis} is out of range for "
                                 f"argument {path} of shape {np.shape(leaf)}")
            sizes.append((path, np.shape(leaf)[axis]))
    if given is not None:
        for path, n in sizes:
            if n != given:
                raise ValueError(f"vmap of {where}: axis_size={given} but argument {path} "
                                 f"has {n} along its mapped axis")
        return given
    if not sizes:
        raise ValueError(f"vmap of {where}: no argument is mapped (all in_axes are None); "
                         "pass axis_size=")
    first = sizes[0][1]
    for path, n in sizes:
        if n != first:
            listing = ", ".join(f"{p}: {s}" for p, s in sizes)
            raise ValueError(f"vmap of {where}: mapped axes have different sizes ({listing})")
    return first


def move_batch_axis(value, axes):
    """Move each leaf's mapped axis (`axes`, a prefix tree) to the front; None stays put."""
    if axes is None:
        return value
    if isinstance(axes, numbers.Integral):
        if isinstance(value, (tuple, list)):
            return type(value)(move_batch_axis(v, axes) for v in value)
        if isinstance(value, dict):
            return {k: move_batch_axis(v, axes) for k, v in value.items()}
        value = array_module(value).asarray(value)
        return value if axes == 0 else array_module(value).moveaxis(value, axes, 0)
    if isinstance(axes, dict):
        return {k: move_batch_axis(value[k], axes[k]) for k in value}
    return type(value)(move_batch_axis(v, a) for v, a in zip(value, axes))


def batch_out(value, axes, n):
    """Leave vmap: put the batch axis of each output leaf where out_axes says."""
    if isinstance(axes, numbers.Integral):
        if isinstance(value, (tuple, list)):
            return type(value)(batch_out(v, axes, n) for v in value)
        if isinstance(value, dict):
            return {k: batch_out(v, axes, n) for k, v in value.items()}
        if axes == 0:
            return value
        return array_module(value).moveaxis(value, 0, axes)
    if axes is None:
        return value
    if isinstance(axes, dict):
        return {k: batch_out(value[k], axes[k], n) for k in value}
    if not isinstance(value, (tuple, list)) or len(value) != len(axes):
        raise ValueError(f"vmap: out_axes {axes!r} does not match the output's structure")
    return type(value)(batch_out(v, a, n) for v, a in zip(value, axes))


def check_unbatched_out(value, where):
    """out_axes=None promises an output that is the same for every example."""
    return value


# ---------------------------------------------------------------- batched and unbatched

def broadcast_batch(value, n, have=False):
    """`value` with every leaf batched: leaves not batched (per `have`, a bool or a tuple of
    them per element) are repeated n times along a new leading axis (a writable copy)."""
    if have is True or value is None:
        return value
    if isinstance(value, (tuple, list)):
        parts = have if isinstance(have, (tuple, list)) else (have,) * len(value)
        return type(value)(broadcast_batch(v, n, h) for v, h in zip(value, parts))
    if isinstance(value, dict):
        return {k: broadcast_batch(v, n, have) for k, v in value.items()}
    if isinstance(value, (str, type)) or callable(value):
        return value
    xp = array_module(value)
    value = xp.asarray(value)
    out = xp.empty((n,) + value.shape, dtype=value.dtype)
    out[...] = value
    return out


def align(x, *others):
    """Batched `x` reshaped so its per-example axes line up with those of the unbatched
    `others` under broadcasting: (n, 3) against a (4, 3) array stays, (n,) becomes (n, 1, 1)."""
    rank = max((np.ndim(o) for o in others), default=0)
    return _expand(x, rank)


def align_lanes(x, *others):
    """Like `align`, against other batched values (their first axis is the batch axis)."""
    rank = max((np.ndim(o) - 1 for o in others), default=0)
    return _expand(x, rank)


def _expand(x, rank):
    missing = rank - (np.ndim(x) - 1)
    if missing <= 0:
        return x
    x = array_module(x).asarray(x)
    return x.reshape(x.shape[:1] + (1,) * missing + x.shape[1:])


def select(cond, then, otherwise):
    """Per example: `then` where the batched condition holds, else `otherwise` (pytrees;
    None means "not defined on that path": the other value is taken)."""
    if otherwise is None:
        return then
    if then is None:
        return otherwise
    if isinstance(then, (tuple, list)):
        return type(then)(select(cond, a, b) for a, b in zip(then, otherwise))
    if isinstance(then, dict):
        return {k: select(cond, then[k], otherwise[k]) for k in then}
    xp = array_module(then, otherwise)
    c = xp.asarray(cond)
    rank = max(np.ndim(then), np.ndim(otherwise))
    c = c.reshape(c.shape + (1,) * (rank - c.ndim))
    return xp.where(c, then, otherwise)


def any_lane(cond):
    """Whether a batched loop condition holds for some example."""
    return bool(np.any(cond))


def max_trips(n):
    """How many trips a loop with a per-example trip count needs: the largest one."""
    return int(np.max(n)) if np.size(n) else 0


def batch_size_of(value):
    return np.shape(value)[0]


# ---------------------------------------------------------------- axes

def lane_axis(axis, x):
    """A per-example axis argument as an axis of the batched array (None: all of them)."""
    if axis is None:
        return tuple(range(1, np.ndim(x)))
    if isinstance(axis, (tuple, list)):
        return tuple(a + 1 if a >= 0 else a for a in axis)
    return axis + 1 if axis >= 0 else axis


def flat_lanes(x):
    """Each example flattened: shape (n, size) (for functions whose axis=None flattens)."""
    x = array_module(x).asarray(x)
    return x.reshape(x.shape[0], -1)


def lane_shape(shape, n):
    """A per-example shape argument (int or tuple) as the batched shape."""
    if isinstance(shape, numbers.Integral):
        return (n, shape)
    return (n,) + tuple(shape)


def min_start(start):
    return int(np.min(start)) if np.size(start) else 0


def as_float(x):
    """float(x) for a batch of numbers."""
    return array_module(x).asarray(x, dtype=np.float64)


def lane_len(x):
    """len() of each example (the same for all): a batched array's second axis."""
    if isinstance(x, (tuple, list, dict)):
        return len(x)
    return np.shape(x)[1]


# ---------------------------------------------------------------- subscripts

def _as_tuple(index):
    return index if isinstance(index, tuple) else (index,)


def lane_index(x, index):
    """The index that applies a per-example `index` to every example of batched `x`: the
    same index for a container (a list of batched values), one more leading `:` for an array."""
    if isinstance(x, (tuple, list, dict)):
        return index
    return (slice(None),) + _as_tuple(index)


def lane_getitem(x, index):
    """x[index] in every example of batched x, for an index that is the same for all."""
    return x[lane_index(x, index)]


def _lane_positions(index, n):
    """A batched index (ints or int arrays per example, possibly in a tuple) as a numpy
    index into a batched array: a leading arange picks each example's own row."""
    parts = _as_tuple(index)
    for p in parts:
        if isinstance(p, slice) or p is None or p is Ellipsis:
            raise TransformError("an index that differs between examples can only be made "
                                 "of integers or integer arrays (no slices) under vmap")
    rows = np.arange(n)
    arrays = [np.asarray(p) for p in parts]
    depth = max((a.ndim - 1 for a in arrays if a.ndim), default=0)
    rows = rows.reshape((n,) + (1,) * depth)
    return (rows,) + tuple(a.reshape(a.shape + (1,) * (depth - a.ndim + 1)) if a.ndim else
                           np.broadcast_to(a, (n,)).reshape((n,) + (1,) * depth)
                           for a in arrays)


def lane_gather(x, index, x_batched):
    """x[index] per example, for an index that differs between examples."""
    parts = _as_tuple(index)
    n = next(np.shape(p)[0] for p in parts if np.ndim(p))
    if isinstance(x, (tuple, list)):
        raise TransformError("indexing a list with an index that differs between examples "
                             "cannot be batched; stack the list into an array first")
    if not x_batched:
        x = np.broadcast_to(x, (n,) + np.shape(x))
    return x[_lane_positions(index, n)]


def lane_scatter_index(index, n):
    """The numpy index for `x[index] = v` on batched x when `index` differs per example."""
    return _lane_positions(index, n)


# ---------------------------------------------------------------- linear algebra

def batched_dot(a, b, a_batched, b_batched):
    """np.dot per example, for a and/or b batched (on axis 0)."""
    xp = array_module(a, b)
    a, b = xp.asarray(a), xp.asarray(b)
    p = a.ndim - 1 if a_batched else a.ndim        # per-example ranks
    q = b.ndim - 1 if b_batched else b.ndim
    if p == 0 or q == 0:                            # a number times an array
        if a_batched and b_batched:
            return _expand(a, q) * _expand(b, p)
        return (_expand(a, q) * b) if a_batched else (a * _expand(b, p))
    if a_batched and not b_batched:                 # the batch is one more row of a
        return xp.dot(a, b)
    if not a_batched:                               # contract a's last axis per example
        if q == 1:
            return xp.tensordot(b, a, axes=([1], [p - 1]))
        out = xp.tensordot(a, b, axes=([p - 1], [q - 1]))   # (a..., n, b...)
        return xp.moveaxis(out, p - 1, 0)
    if p == 2 and q == 2:
        return xp.matmul(a, b)
    letters = "abcdefghijklmopqrstuvwxyz"
    la, lb = letters[:p], letters[p:p + q]
    if q == 1:
        spec_b, out = la[-1], la[:-1]
    else:
        spec_b, out = lb[:-2] + la[-1] + lb[-1], la[:-1] + lb[:-2] + lb[-1]
    return xp.einsum(f"n{la},n{spec_b}->n{out}", a, b)


__all__ = ["lane_len", "lane_getitem", "lane_gather", "lane_index", "lane_scatter_index",
           "batched_dot", "as_float", "min_start", "axis_size", "move_batch_axis", "batch_out", "broadcast_batch", "align",
           "align_lanes", "select", "any_lane", "max_trips", "lane_axis", "flat_lanes",
           "lane_shape", "TransformError"]
