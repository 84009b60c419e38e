"""What vmapped code calls: the batch axis is always axis 0 of a batched value.

A batched value holds one example per index of its leading axis; an unbatched value is the
same for every example. Per-example ranks are not known when code is generated, so the few
places where they matter (aligning operands of elementwise operations, choosing between
lanes) ask the arrays at run time, here.

vmap of vmapped code: the outer vmap adds its batch axis in front of the inner one. Helpers
whose meaning depends on where the batch axis is take `outer`, the number of such extra
leading axes (the outer vmap's rule passes outer + 1 and makes every array argument carry
them); everything else about them is relative to the inner batch axis.
"""
import numbers

import numpy as np

from .backend import array_module, to_host
from .errors import TransformError
from .ragged import Ragged, ragged_error, unbroadcast_ragged, unbroadcast_to_ragged
from .trees import rebuild_like as _rebuild, tree_map


# ---------------------------------------------------------------- entering and leaving

def leaves_with_axes(value, axes, path):
    """(path, leaf, axis) for each leaf of `value`, with `axes` a prefix tree of it."""
    if axes is None or isinstance(axes, numbers.Integral):
        if isinstance(value, (tuple, list)):
            for i, v in enumerate(value):
                yield from leaves_with_axes(v, axes, f"{path}[{i}]")
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from leaves_with_axes(v, axes, f"{path}[{k!r}]")
        elif value is not None:               # None: a node without leaves (JAX's)
            yield path, value, axes
        return
    if isinstance(axes, (tuple, list)) and isinstance(value, (tuple, list)) \
            and len(axes) == len(value):
        for i, (v, a) in enumerate(zip(value, axes)):
            yield from leaves_with_axes(v, a, f"{path}[{i}]")
        return
    if isinstance(axes, dict) and isinstance(value, dict) and set(axes) == set(value):
        for k in value:
            yield from leaves_with_axes(value[k], axes[k], f"{path}[{k!r}]")
        return
    raise ValueError(f"vmap: in_axes {axes!r} does not match the structure of argument "
                     f"{path} ({type(value).__name__})")


class _SeededLanes:
    """np.random.seed called inside a vmapped function (cs231n's dropout seeds its mask): a
    loop over examples restarts every example's draws from that seed, so after it each
    example draws from its own copy of numpy's global state, in example order, and the
    state left is the last example's, as after the loop (lanes_adjoint.lane_random).
    `states`: one per example, or None where no seed was called since the vmapped
    function's call began (axis_size)."""
    states = None


SEEDED = _SeededLanes()


def lane_random_seed(seed, n):
    """np.random.seed(seed) inside a vmapped function: the n examples' states start equal."""
    np.random.seed(seed)
    SEEDED.states = [np.random.get_state()] * n


def axis_size(args, in_axes, names, given, where, outer=None):
    """The batch size: `given` (axis_size=) or the size of every mapped axis, which must agree.

    Errors name the argument (and the leaf within it) whose axis is out of range or whose
    size disagrees with the others. `outer`: per argument, how many leading axes an
    enclosing vmap added (they are not counted). A vmapped function's call begins here,
    with no np.random.seed of its own yet (lane_random_seed)."""
    SEEDED.states = None
    sizes = []
    outer = outer or (0,) * len(args)
    for value, axes, name, lead in zip(args, in_axes, names, outer):
        for path, leaf, axis in leaves_with_axes(value, axes, name):
            if axis is None:
                continue
            shape = np.shape(leaf)[lead:]
            if not -len(shape) <= axis < len(shape):
                raise ValueError(f"vmap of {where}: in_axes={axis} is out of range for "
                                 f"argument {path} of shape {shape}")
            sizes.append((path, shape[axis]))
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


def tree_axes(value, axes, fn):
    """fn(leaf, axis) for each leaf whose axis (from the prefix tree `axes`) is not None."""
    if axes is None:
        return value
    if isinstance(axes, numbers.Integral):
        if isinstance(value, (tuple, list)):
            return _rebuild(value, (tree_axes(v, axes, fn) for v in value))
        if isinstance(value, dict):
            return {k: tree_axes(v, axes, fn) for k, v in value.items()}
        return None if value is None else fn(value, axes)
    if isinstance(axes, dict):
        return {k: tree_axes(value[k], axes[k], fn) for k in value}
    if not isinstance(value, (tuple, list)) or len(value) != len(axes):
        raise ValueError(f"vmap: axes {axes!r} do not match the structure of the value")
    return _rebuild(value, (tree_axes(v, a, fn) for v, a in zip(value, axes)))


def _shifted(axis, outer):
    return axis + outer if axis >= 0 else axis


def _move_leaves(value, axes, outer, entering):
    def move(leaf, axis):
        leaf = array_module(leaf).asarray(leaf)
        rank = leaf.ndim - outer         # the batch axis among the leaf's own
        if not -rank <= axis < rank:
            raise ValueError(f"{'in_axes' if entering else 'out_axes'}={axis} is out of "
                             f"bounds for a value of {rank} dimensions (the batch axis "
                             f"included)")
        a = _shifted(axis, outer) % leaf.ndim
        if a == outer:
            return leaf
        src, dst = (a, outer) if entering else (outer, a)
        return array_module(leaf).moveaxis(leaf, src, dst)
    return tree_axes(value, axes, move)


def move_batch_axis(value, axes, outer=0):
    """Enter vmap: move each leaf's mapped axis (`axes`, a prefix tree) to the front."""
    return _move_leaves(value, axes, outer, True)


def batch_out(value, axes, outer=0):
    """Leave vmap: put the batch axis of each output leaf where out_axes says."""
    return _move_leaves(value, axes, outer, False)


# ---------------------------------------------------------------- batched and unbatched

def _parts(have, value):
    """The spec of each element of the list or tuple `value`, from its spec `have`."""
    if not isinstance(have, (tuple, list)):
        return (have,) * len(value)
    if len(have) != len(value):     # a list that grew since its spec was written
        leaves = tree_leaves_(list(have))
        if all(h is True for h in leaves) and leaves:
            return (True,) * len(value)
        if any(h is not False for h in leaves):
            raise TransformError("internal: a list's batching spec does not match its length")
        return (False,) * len(value)
    return have


def broadcast_batch(value, n, have=False, outer=0):
    """`value` with every leaf batched: leaves not batched (per `have`, a bool or a tuple of
    them per element) get the batch axis, n copies (a writable array)."""
    if have is True or value is None:
        return value
    if isinstance(value, (tuple, list)):
        parts = _parts(have, value)
        return _rebuild(value, (broadcast_batch(v, n, h, outer)
                                for v, h in zip(value, parts)))
    if isinstance(value, dict):
        return {k: broadcast_batch(v, n, have[k] if isinstance(have, dict) else have, outer)
                for k, v in value.items()}
    if have is not False and have is not None and not isinstance(have, (tuple, list, dict)):
        return value            # an in_axes entry: an int means the leaf is mapped
    if isinstance(have, (tuple, list)) and _all_kept(have):
        return value            # a leaf where code elsewhere holds a container (`k = [k]`
        #                         on one path): every part of it is to be left alone
    if isinstance(value, str) or callable(value):
        return value
    if isinstance(value, slice) or value is Ellipsis:
        raise TransformError(
            "vmap: a slice (or `...`) is given a value that may differ between examples "
            f"({value!r} on some paths); an index must be the same for every example, or "
            "an integer (array) per example.\n  hint: compute the slice bounds outside the "
            "branch or loop whose condition differs between examples.")
    xp = array_module(value)
    value = xp.asarray(value)
    shape = value.shape[:outer] + (n,) + value.shape[outer:]
    out = xp.empty(shape, dtype=value.dtype)
    out[...] = xp.expand_dims(value, outer)
    return out


def _all_kept(have):
    return all(_all_kept(h) if isinstance(h, (tuple, list)) else h is True for h in have)


def batch_view(value, n, outer=0):
    """`value` seen as the same in each of n examples: a read-only broadcast view (no copy),
    for arguments of helpers that only read them. Containers leaf by leaf; None stays."""
    def view(leaf):
        if leaf is None or isinstance(leaf, (str, type)) or callable(leaf):
            return leaf
        xp = array_module(leaf)
        leaf = xp.asarray(leaf)
        return xp.broadcast_to(xp.expand_dims(leaf, outer),
                               leaf.shape[:outer] + (n,) + leaf.shape[outer:])
    return tree_map(view, value)


def sum_batch(value, have=False, outer=0):
    """The adjoint of broadcast_batch: leaves it broadcast are summed over the batch axis."""
    if have is True or value is None:
        return value
    if isinstance(value, (tuple, list)):
        parts = _parts(have, value)
        return _rebuild(value, (sum_batch(v, h, outer) for v, h in zip(value, parts)))
    if isinstance(value, dict):
        return {k: sum_batch(v, have[k] if isinstance(have, dict) else have, outer)
                for k, v in value.items()}
    if have is not False and have is not None and not isinstance(have, (tuple, list, dict)):
        return value
    return array_module(value).sum(value, axis=outer)


def unsum_batch(d, like, have=False, outer=0):
    """The adjoint of sum_batch: `d` repeated along the batch axis of `like`."""
    if have is True or d is None:
        return d
    if isinstance(d, (tuple, list)):
        parts = _parts(have, d)
        return _rebuild(d, (unsum_batch(x, y, h, outer)
                            for x, y, h in zip(d, like, parts)))
    if isinstance(d, dict):
        return {k: unsum_batch(d[k], like[k], have[k] if isinstance(have, dict) else have,
                               outer) for k in d}
    if have is not False and have is not None and not isinstance(have, (tuple, list, dict)):
        return d
    return broadcast_batch(d, np.shape(like)[outer], False, outer)


def align(x, y, outer=0):
    """Batched `x` reshaped so its per-example axes line up with those of unbatched `y`
    under broadcasting: (n, 3) against a (4, 3) array stays, (n,) becomes (n, 1, 1)."""
    if isinstance(x, Ragged) or isinstance(y, Ragged):
        # a selection lines up with numbers and with what rt.reduced_size gives for it
        return x if isinstance(x, Ragged) or np.ndim(x) == 0 else y.per_element(x, outer)
    return _expand(x, np.ndim(y) - outer, outer)


def align_lanes(x, y, outer=0):
    """Like `align`, against another batched value (None: nothing to align with)."""
    if y is None or isinstance(x, Ragged):
        return x
    if isinstance(y, Ragged):       # a per-example value against each selected element
        return y.per_element(x, outer)
    return _expand(x, np.ndim(y) - 1 - outer, outer)


def align_adj(d, x, outer=0):
    """The adjoint of rt.align and rt.align_lanes, which only reshape: `d` in `x`'s shape;
    where they spread `x` over each example's selected elements (a Ragged), summed over
    them per example."""
    if (isinstance(x, Ragged) or isinstance(d, Ragged)) and outer:
        raise ragged_error("vmap of vmap")
    if isinstance(x, Ragged):
        return unbroadcast_to_ragged(d, x)
    if isinstance(d, Ragged):
        shape = np.shape(x)
        return np.reshape(unbroadcast_ragged(d, shape[1:]), shape)
    return np.reshape(d, np.shape(x))


def _expand(x, rank, outer=0):
    lead = 1 + outer
    missing = rank - (np.ndim(x) - lead)
    if missing <= 0:
        return x
    x = array_module(x).asarray(x)
    return x.reshape(x.shape[:lead] + (1,) * missing + x.shape[lead:])


def _kind(x):
    return list if isinstance(x, list) else tuple if isinstance(x, tuple) else dict


def select(cond, then, otherwise, outer=0, nested=False):
    """Per example: `then` where the batched condition holds, else `otherwise` (pytrees;
    None means "not defined on that path": the other value is taken). Inside a container
    (an adjoint of one, whose unset slots are None) None is zero: the examples of that
    path get zeros there, not the other path's value."""
    if isinstance(cond, (bool, np.bool_)):
        # one condition for every example (vmap took it for batched: `k != "b"` on a key of
        # a batched dict): the path they all took
        return then if cond else otherwise
    if otherwise is None:
        return select_adj(cond, then, True) if nested and then is not None else then
    if then is None:
        return select_adj(cond, otherwise, False) if nested else otherwise
    if type(then).__name__ == "ZeroList" and isinstance(otherwise, list):
        then = [None] * len(otherwise)            # the zero adjoint of a list
    if type(otherwise).__name__ == "ZeroList" and isinstance(then, list):
        otherwise = [None] * len(then)
    if isinstance(then, (tuple, list, dict)) or isinstance(otherwise, (tuple, list, dict)):
        if _kind(then) is not _kind(otherwise) or \
                not isinstance(otherwise, (tuple, list, dict)) or \
                not isinstance(then, (tuple, list, dict)) or len(then) != len(otherwise) or (
                isinstance(then, dict) and set(then) != set(otherwise)):
            raise TransformError(
                "the two paths of an `if` whose condition differs between examples give "
                f"values of different structure ({_structure(then)} and "
                f"{_structure(otherwise)}); vmap needs one structure for every example.\n"
                "  hint: return the same kind of value on both paths.")
        if isinstance(then, dict):
            return {k: select(cond, then[k], otherwise[k], outer, True) for k in then}
        like = otherwise if type(then).__name__ == "ZeroList" else then
        return _rebuild(like, (select(cond, a, b, outer, True)
                               for a, b in zip(then, otherwise)))
    if isinstance(then, Ragged) or isinstance(otherwise, Ragged):
        return _select_ragged(cond, then, otherwise, outer)
    xp = array_module(then, otherwise)
    c = xp.asarray(cond)
    lead = c.ndim
    rank = max(np.ndim(then), np.ndim(otherwise))
    c = c.reshape(c.shape + (1,) * (rank - c.ndim))
    if _dtype_of(then) != _dtype_of(otherwise):
        # where every example took one path, each example's value has that path's dtype
        # (np.poly's real coefficients of conjugate roots, complex on the other path)
        if bool(xp.all(c)):
            return then
        if not bool(xp.any(c)):
            return otherwise
    try:
        if np.ndim(then) >= lead and np.ndim(otherwise) >= lead and \
                np.shape(then)[lead:] != np.shape(otherwise)[lead:]:
            raise ValueError("shapes differ")    # broadcasting would change the shape of some
        return xp.where(c, then, otherwise)
    except ValueError:
        # where every example took the same path, no example sees the other shape (a loop
        # whose carried value changes shape between trips, before any example left it)
        if bool(xp.all(c)):
            return then
        if not bool(xp.any(c)):
            return otherwise
        raise TransformError(
            "vmap: a value has a different shape in different examples (one example of "
            f"shape {np.shape(then)[lead:]}, another of shape {np.shape(otherwise)[lead:]}), "
            "where paths whose condition differs between examples join; vmap needs one "
            "shape for every example.\n  hint: give the value the same shape on every path "
            "(a slice like x[:i] in a loop has a shape that changes with i).") from None


def _dtype_of(value):
    dtype = getattr(value, "dtype", None)
    return dtype if dtype is not None else type(value)


def _select_ragged(cond, then, otherwise, outer):
    """select of selections (rt.Ragged): each example's elements from the path it took."""
    xp = array_module(cond)
    c = xp.asarray(cond)
    if outer or c.ndim != 1:
        raise ragged_error("vmap of vmap")
    if not (isinstance(then, Ragged) and isinstance(otherwise, Ragged)):
        if bool(xp.all(c)):
            return then
        if not bool(xp.any(c)):
            return otherwise
        raise ragged_error("a value that is such a selection on one path only")
    if then.element_shape != otherwise.element_shape:
        raise ragged_error("joining selections of different element shapes")
    keep_then, keep_other = c[then.lanes], ~c[otherwise.lanes]
    lanes = xp.concatenate([then.lanes[keep_then], otherwise.lanes[keep_other]])
    values = xp.concatenate([then.values[keep_then], otherwise.values[keep_other]])
    order = xp.argsort(lanes, kind="stable")      # example by example, each in its order
    counts = xp.where(c, then.counts, otherwise.counts)
    mask = None
    if then.mask is not None and otherwise.mask is not None and \
            then.mask.shape == otherwise.mask.shape:
        mask = xp.where(c.reshape(c.shape + (1,) * (then.mask.ndim - 1)), then.mask,
                        otherwise.mask)
    joined = not bool(xp.all(then.counts == otherwise.counts))
    return Ragged(values[order], lanes[order], counts, mask, joined)


def _select_adj_ragged(c, d, taken, like):
    """select_adj where the adjoint `d` or the branch `like` is a selection (rt.Ragged):
    `like`'s elements, d's where the example took this path (the same count there),
    zeros in the others."""
    if like is None or not isinstance(like, Ragged):
        like = d
    if not isinstance(d, Ragged):
        raise ragged_error("an adjoint")
    xp = array_module(d.values)
    c = xp.asarray(c).reshape(-1).astype(bool)
    take_d = c[d.lanes] == taken
    take_like = c[like.lanes] == taken
    out = xp.zeros(like.values.shape, dtype=d.values.dtype)
    out[take_like] = d.values[take_d]
    return like.like(out)


def lane_guard(x, mask, outer=0):
    """`x` itself, read by a path of an `if` whose condition differs between examples (the
    examples in `mask` take it) or by a trip of a loop some examples have left: reverse
    mode keeps its adjoint there only (lane_guard_adj), and differentiated code reads x
    through rt.lane_borrow instead."""
    return x


def lane_borrow(x, mask, outer=0):
    """`x` as differentiated code (and vmapped code calling a user's function there) reads
    it on a path that the examples in `mask` take (rt.lane_guard in vmapped code): the
    path computes for every example and its values in the others are thrown away, so
    there each example borrows the values of the first one that takes the path. The
    path's code then sees inputs it is defined at, and its partials are finite. (Were x
    read as it is, np.sqrt(x) of an x < 0 that takes the other path is nan, and the
    backward pass multiplies that partial by a zero adjoint: 0 * nan reached the gradient
    of every value the path reads, a weight shared by all examples included; forward mode
    computed nan tangents there, with warnings.) Plain vmap has no use for it (the values
    are thrown away and no partial is taken) and keeps rt.lane_guard, which costs nothing.
    Under vmap of vmap the first such example is sought within each outer example; an
    outer example none of whose examples takes the path borrows the batch's first one
    that does (values batched by the outer vmap only, such as a weight per outer example,
    are read as they are)."""
    m = array_module(mask).asarray(mask)
    if m.ndim == 0 or m.all() or not m.any():
        return x
    xp = array_module(m)
    first = xp.expand_dims(m.argmax(axis=-1), -1)
    # under vmap of vmap, an outer example none of whose examples takes the path borrows
    # the first example in the whole batch that does (its own values are the ones that
    # take the other path: np.sqrt(a) of its negative a)
    empty = None if m.ndim == 1 else ~m.any(axis=-1)
    donor = divmod(int(m.reshape(-1).argmax()), m.shape[-1]) if empty is not None and \
        bool(empty.any()) else None

    def borrow(v):
        if v is None or isinstance(v, Ragged) or not hasattr(v, "shape") \
                or tuple(v.shape[:m.ndim]) != m.shape:
            return v       # (a selection keeps its per-example counts: read as it is)
        vp = array_module(v)
        lanes = m.reshape(m.shape + (1,) * (v.ndim - m.ndim))
        at = first.reshape(first.shape + (1,) * (v.ndim - m.ndim))
        out = vp.where(lanes, v, vp.take_along_axis(v, at, axis=m.ndim - 1))
        if donor is not None:
            groups = v.reshape((-1,) + v.shape[m.ndim - 1:])
            out = vp.where(empty.reshape(empty.shape + (1,) * (v.ndim - m.ndim + 1)),
                           groups[donor], out)
        return out
    return tree_map(borrow, x)


def lane_guard_adj(d, mask, outer=0):
    """The adjoint of rt.lane_guard: `d` in the examples the path runs for, zero in the
    others whatever it is there (the path computes for every example; where it does not
    run, its values may be nan, and their partials times a zero adjoint are nan)."""
    def keep(g):
        if g is None:
            return None
        if isinstance(g, Ragged):
            return g.like(array_module(g.values).where(
                array_module(mask).asarray(mask).reshape(-1)[g.lanes].reshape(
                    (-1,) + (1,) * len(g.element_shape)), g.values, 0))
        xp = array_module(g, mask)
        m = xp.asarray(mask)
        g = xp.asarray(g)
        return xp.where(m.reshape(m.shape + (1,) * (g.ndim - m.ndim)), g,
                        xp.zeros((), g.dtype))
    return tree_map(keep, d)


def _structure(x):
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of {len(x)}"
    if isinstance(x, dict):
        return f"dict with keys {sorted(x)}"
    return "an array"


def select_adj(cond, dout, taken, outer=0, like=None):
    """The part of an adjoint (or tangent) `dout` that flows to select's `then` (taken=True)
    or `otherwise` branch: zeros in the other examples.

    `like` is that branch's value (or select's result, for a tangent), read only for its
    shape: where the two branches' shapes differ, select took the other one in every example
    (a loop whose carried value changes shape), and this branch gets zeros of its own shape."""
    def part(d, lk=None):
        if d is None:
            return None
        if isinstance(d, Ragged) or isinstance(lk, Ragged):
            if outer:
                raise ragged_error("vmap of vmap")
            return _select_adj_ragged(cond, d, taken, lk)
        xp = array_module(d)
        c = xp.asarray(cond)
        if lk is not None and np.ndim(lk) >= c.ndim and np.ndim(d) >= c.ndim and \
                np.shape(lk)[c.ndim:] != np.shape(d)[c.ndim:]:
            return xp.zeros(np.shape(lk), dtype=xp.asarray(d).dtype)
        c = c.reshape(c.shape + (1,) * (np.ndim(d) - c.ndim))
        zero = xp.zeros((), dtype=xp.asarray(d).dtype)
        return xp.where(c, d, zero) if taken else xp.where(c, zero, d)
    if like is None:
        return tree_map(part, dout)
    return _zip_leaves(part, dout, like)


def _zip_leaves(fn, tree, like):
    """fn(leaf, like's leaf at the same place), where like has the same structure there;
    fn(leaf) elsewhere."""
    if isinstance(tree, (tuple, list)) and isinstance(like, (tuple, list)) and \
            len(tree) == len(like) and type(tree).__name__ != "ZeroList":
        return _rebuild(tree, (_zip_leaves(fn, t, l) for t, l in zip(tree, like)))
    if isinstance(tree, dict) and isinstance(like, dict) and set(tree) == set(like):
        return {k: _zip_leaves(fn, tree[k], like[k]) for k in tree}
    if isinstance(tree, (tuple, list, dict)):
        return tree_map(fn, tree)
    return fn(tree, None if isinstance(like, (tuple, list, dict)) else like)


def any_lane(cond):
    """Whether a batched condition holds for some example (a branch or loop to run)."""
    return bool(np.any(cond))


def max_trips(n, active=None):
    """How many trips a loop with a per-example trip count needs: the largest one among
    the examples that run it (`active`: the lanes of an enclosing loop still running; the
    other lanes' counts are left from trips they took earlier, and the trips of this loop
    must match the trips that saved values for it)."""
    if active is not None:
        n = array_module(n).where(active, n, 0)
    return int(np.max(n)) if np.size(n) else 0


def min_start(start, active=None):
    """The smallest start among the examples that run the loop (`active`, as in max_trips)."""
    if active is not None:
        if not np.any(active):
            return 0
        start = to_host(start)[np.broadcast_to(to_host(active), np.shape(start))]
    return int(np.min(start)) if np.size(start) else 0


def as_float(x):
    """float(x) for a batch of numbers."""
    return array_module(x).asarray(x, dtype=np.float64)


def _depth(x):
    depth = 0
    while isinstance(x, (tuple, list)) and len(x):
        x, depth = x[0], depth + 1
    return depth


def lanes_array(x, spec, n, outer=0):
    """np.array(x) per example, x batched by `spec` (a list of batched values is stacked
    along the axis after the batch, unbatched elements repeated for every example)."""
    if x is None or isinstance(x, Ragged):
        return x            # (a selection passed to a function: its elements, as they are)
    if not isinstance(x, (tuple, list)):
        return array_module(x).asarray(x)
    if not x and not outer:
        return np.zeros((n, 0))                  # np.array([]) in every example
    x = broadcast_batch(x, n, spec, outer)
    leaves = tree_leaves_(x)
    arr = array_module(*leaves).asarray(x) if leaves else np.asarray(x)
    depth = _depth(x)
    return np.moveaxis(arr, list(range(depth, depth + outer + 1)), list(range(outer + 1)))


def lanes_unarray(d, x, spec, outer=0):
    """The adjoint of lanes_array: `d` split back into x's structure (summed over the batch
    for elements that were not batched)."""
    if not isinstance(x, (tuple, list)):
        return d
    depth = _depth(x)
    d = np.moveaxis(d, list(range(outer + 1)), list(range(depth, depth + outer + 1)))
    parts = spec if isinstance(spec, (tuple, list)) else (spec,) * len(x)

    def split(dd, xx, sp):
        if isinstance(xx, (tuple, list)):
            sps = sp if isinstance(sp, (tuple, list)) else (sp,) * len(xx)
            return _rebuild(xx, (split(dd[i], xi, s)
                                 for i, (xi, s) in enumerate(zip(xx, sps))))
        return dd if sp else np.sum(dd, axis=outer)
    return _rebuild(x, (split(d[i], xi, s) for i, (xi, s) in enumerate(zip(x, parts))))


def batch_size_of(value, outer=0):
    """The batch size of a batched value (its first leaf's axis after the outer ones)."""
    leaves = tree_leaves_(value) if isinstance(value, (tuple, list)) else [value]
    return np.shape(leaves[0])[outer]


def tree_leaves_(x):
    if isinstance(x, (tuple, list)):
        return [leaf for t in x for leaf in tree_leaves_(t)]
    return [x]


# ---------------------------------------------------------------- axes and shapes

def lane_axis(axis, x, outer=0):
    """A per-example axis argument as an axis of the batched array; None means every
    per-example axis (what None means to reductions: np.sum, np.mean, ...). For functions
    whose axis=None means "flattened" (cumsum, sort, concatenate) use rt.batched_axis, which
    maps None to the last axis of rt.lane_flat's flattened examples."""
    if axis is None:
        return tuple(range(1, np.ndim(x) - outer))
    # the example's rank bounds the axis for an array; a container's axis is its leaves'
    rank = np.ndim(x) - outer - 1 if hasattr(x, "ndim") else None
    if isinstance(axis, (tuple, list)):
        return tuple(_example_axis(a, rank) for a in axis)
    return _example_axis(axis, rank)


def _example_axis(axis, rank):
    """Per-example `axis` of an example of rank `rank` as an axis of the batched array; an
    axis outside the example raises as numpy would for the example (a negative one must not
    reach the batch axis)."""
    if rank is None:
        return axis + 1 if axis >= 0 else axis
    if not -rank <= axis < rank:
        raise np.exceptions.AxisError(axis, rank)
    return axis % rank + 1


def flat_lanes(x, outer=0):
    """Each example flattened, always: shape (n, size). rt.lane_flat flattens only where
    the call's axis is None (and maps over lists)."""
    x = array_module(x).asarray(x)
    return x.reshape(x.shape[:outer + 1] + (-1,))


def lane_shape(shape, n):
    """A per-example shape argument (int or tuple) as the batched shape."""
    if isinstance(shape, numbers.Integral):
        return (n, shape)
    return (n,) + tuple(shape)


def lane_len(x, outer=0):
    """len() of each example (the same for all): a batched array's second axis."""
    if isinstance(x, (tuple, list, dict, str)):     # a string is never batched
        return len(x)
    return np.shape(x)[1 + outer]


def lane_check_unpack(x, n, outer=0):
    """`a, b = x` in every example of batched x: Python's error where x does not hold n
    items (a batched array holds them along its second axis)."""
    have = lane_len(x, outer)
    if have != n:
        raise ValueError(f"{'too many' if have > n else 'not enough'} values to unpack "
                         f"(expected {n}, got {have})")


# ---------------------------------------------------------------- subscripts

def _as_tuple(index):
    return index if isinstance(index, tuple) else (index,)


def lane_index(x, index, outer=0):
    """The index that applies a per-example `index` to every example of batched `x`: the
    same index for a container (a list of batched values), one more leading `:` for an
    array. `outer`: how many batch axes of an outer vmap lead x's (its own lane_index
    adds theirs after)."""
    if isinstance(x, (tuple, list, dict)):
        return index
    return _lanes_first(x, _as_tuple(index), 1, outer)


def lane_slot(x, index):
    """x[index] before the vmap pass's write `x[index] = value` (which aligns value with
    it), or None for a key that dict `x` does not hold yet."""
    if isinstance(x, dict) and index not in x:
        return None
    return x[index]


def lane_getitem(x, index, outer=0):
    """x[index] in every example of batched x, for an index that is the same for all."""
    if isinstance(x, (tuple, list, dict)):
        return x[index]
    return x[_lanes_first(x, _as_tuple(index), 1 + outer)]


def _lanes_first(x, parts, lead, skip=0):
    """The index applying per-example `parts` to each example of `x`, whose first `lead`
    axes are the batch's: `:` for each of those, unless numpy would move axes in front of
    them. Advanced indices (integer or boolean arrays, and the integers beside them) that
    are apart (`x[0, :, idx]`) put their axes first; then aranges over the batch axes, made
    advanced indices too, keep the batch axes first, each example's axes as numpy orders
    them after. `skip`: leading axes of outer batches before those `lead`."""
    advanced = _apart_advanced_ndim(parts)
    if advanced is None:
        return (slice(None),) * lead + parts
    xp = array_module(x)
    sizes = np.shape(x)[skip:skip + lead]
    return tuple(xp.arange(n).reshape((1,) * k + (n,) + (1,) * (lead - k - 1 + advanced))
                 for k, n in enumerate(sizes)) + parts


def _apart_advanced_ndim(parts):
    """The number of axes the advanced indices among `parts` make when they are apart (not
    next to each other), or None (basic indexing, or advanced indices side by side, whose
    axes stay where they are)."""
    kinds = []
    for p in parts:
        if p is None or p is Ellipsis or isinstance(p, slice):
            kinds.append(None)
        elif isinstance(p, (bool, np.bool_)) or (getattr(p, "dtype", None) == bool and
                                                  np.ndim(p) == 0):
            kinds.append("flag")
        elif isinstance(p, (int, np.integer)) or (hasattr(p, "dtype") and np.ndim(p) == 0):
            kinds.append("int")
        else:
            kinds.append("array")
    if "array" not in kinds and "flag" not in kinds:
        return None
    at = [k for k, kind in enumerate(kinds) if kind is not None]
    if at == list(range(at[0], at[-1] + 1)):
        return None
    if "flag" in kinds:
        raise TransformError("under vmap, a True or False index beside other advanced "
                             "indices that are apart is not supported.\n  hint: index "
                             "with the arrays side by side, or use np.expand_dims.")
    shapes = []
    for p, kind in zip(parts, kinds):
        if kind == "int":
            shapes.append(())
        elif kind == "array":
            a = np.asarray(p) if not hasattr(p, "dtype") else p
            shapes.append((int(np.count_nonzero(a)),) if a.dtype == bool else np.shape(a))
    return len(np.broadcast_shapes(*shapes))


def _lane_positions(index, n):
    """A batched index (ints or int arrays per example, possibly in a tuple, possibly
    followed by slices) as a numpy index into a batched array: a leading arange picks each
    example's own row."""
    parts = _as_tuple(index)
    k = len(parts)
    while k and isinstance(parts[k - 1], slice):
        k -= 1                          # trailing slices apply to every example alike
    head, tail = parts[:k], parts[k:]
    for p in head:
        if isinstance(p, slice) or p is None or p is Ellipsis:
            raise TransformError("an index that differs between examples can only be made "
                                 "of integers or integer arrays, followed by slices, under "
                                 "vmap (x[i, 1:3] works, x[1:3, i] does not)")
        if getattr(p, "dtype", np.asarray(p).dtype) == bool:
            raise TransformError("a boolean mask that differs between examples selects a "
                                 "different number of elements in each: the batched result "
                                 "would be ragged. hint: use np.where(mask, x, 0) instead")
    xp = array_module(*head)
    arrays = [xp.asarray(p) for p in head]
    depth = max((a.ndim - 1 for a in arrays if a.ndim), default=0)
    rows = xp.arange(n).reshape((n,) + (1,) * depth)
    out = []
    for a in arrays:
        if a.ndim == 0:
            a = xp.broadcast_to(a, (n,))
        # each example's axes broadcast against the others' from the right, as numpy
        # broadcasts them in one example: the ones it lacks go right after the batch axis
        out.append(a.reshape(a.shape[:1] + (1,) * (depth + 1 - a.ndim) + a.shape[1:]))
    return (rows,) + tuple(out) + tuple(tail)


def lane_getitem_adj(dout, x, index, outer=0):
    """The adjoint of lane_getitem: `dout` placed at `index` of zeros shaped like x."""
    if isinstance(x, dict):
        return {k: dout if k == index else None for k in x}
    if isinstance(x, (tuple, list)):
        n = len(x)
        if isinstance(index, slice):          # xs[1:]: dout holds the items picked
            picked = dict(zip(range(n)[index], dout if dout is not None else ()))
            return _rebuild(x, (picked.get(i) for i in range(n)))
        index = int(index) % n if -n <= int(index) < n else index     # xs[-1]
        return _rebuild(x, (dout if i == index else None for i in range(n)))
    xp = array_module(dout)
    dx = xp.zeros(np.shape(x), dtype=xp.result_type(dout, np.float32))
    full = _lanes_first(dx, _as_tuple(index), 1 + outer)
    xp.add.at(dx, full, dout) if not _basic(index) else dx.__setitem__(full, dout)
    return dx


def _basic(index):
    return all(isinstance(i, (int, slice)) or i is None or i is Ellipsis
               for i in _as_tuple(index))


def lane_gather_adj(dout, x, index, x_batched, outer=0):
    """The adjoint of lane_gather (summed over examples when x is not batched)."""
    if isinstance(index, str):
        return {k: dout if k == index else None for k in x}
    if outer:
        n = np.shape(dout)[0]
        return np.stack([lane_gather_adj(dout[k], x[k], tuple(p[k] for p in _as_tuple(index))
                                         if isinstance(index, tuple) else index[k],
                                         x_batched, outer - 1) for k in range(n)])
    parts = _as_tuple(index)
    n = next(np.shape(p)[0] for p in parts if not isinstance(p, slice) and np.ndim(p))
    shape = ((n,) if x_batched else ()) + np.shape(x)[1 if x_batched else 0:]
    if isinstance(dout, Ragged):
        if not _is_lane_mask(parts):
            raise ragged_error("an adjoint")
        mask = parts[0]
        dx = array_module(dout.values).zeros((n,) + np.shape(x)[1 if x_batched else 0:],
                                            dtype=np.result_type(dout.values, np.float32))
        dout.same_counts(Ragged.gather(dx, mask), "x[mask]")
        dx[mask] = dout.values           # each element once: a mask selects no repeats
        return dx if x_batched else dx.sum(axis=0).reshape(shape)
    dx = np.zeros((n,) + np.shape(x)[1 if x_batched else 0:],
                  dtype=np.result_type(dout, np.float32))
    np.add.at(dx, _lane_positions(index, n), dout)
    return dx if x_batched else dx.sum(axis=0).reshape(shape)


def seq_array(x):
    """np.asarray(x) for a list or tuple, which vmapped code reads as one array; anything
    else as it is (a name unpacked from saved values may hold a string, None, a number)."""
    return array_module(*x).asarray(x) if isinstance(x, (list, tuple)) else x


def lane_index_parts(index, n, have, outer=0):
    """An index that differs between examples (`have`: its spec, one flag per part of a
    tuple) with every integer array part given the batch axis (a view): rt.lane_gather and
    its adjoint read the first axis of each array part as the batch's, so a part the same
    for all examples (`x[i, np.array([0, 2, 1])]`, i batched) would have its own first axis
    taken for it. A constant boolean part becomes its integer arrays first."""
    if not isinstance(index, tuple) or not isinstance(have, (tuple, list)):
        return index
    constant = [batched_part is False and not isinstance(part, slice) and part is not None
                and part is not Ellipsis and np.ndim(part) > 0
                for part, batched_part in zip(index, _parts(have, index))]
    if not any(constant):
        return index
    if outer:
        raise TransformError("vmap of vmap: an index that differs between examples beside "
                             "an index array that is the same for all is not supported.\n  "
                             "hint: give the constant index array the batch axes "
                             "(np.broadcast_to) before indexing.")
    out = []
    for part, is_constant in zip(index, constant):
        if not is_constant:
            out.append(part)
            continue
        xp = array_module(part)
        part = xp.asarray(part)
        for p in (xp.nonzero(part) if part.dtype == bool else (part,)):
            out.append(xp.broadcast_to(p, (n,) + p.shape))
    return tuple(out)


def lane_gather(x, index, x_batched, outer=0):
    """x[index] per example, for an index that differs between examples."""
    if isinstance(x, dict) or isinstance(index, str):
        # a dict's key (`for k in list(d): d[k]`): vmap took the keys of a batched dict
        # for batched values, but a key is the same in every example
        return x[uniform_lanes(index, True, "indexing a dict", "key", outer)]
    if outer:   # vmap of vmap: one outer example at a time (a loop over the outer axis)
        n = np.shape(x)[0]
        return np.stack([lane_gather(x[k], tuple(p[k] for p in _as_tuple(index))
                                     if isinstance(index, tuple) else index[k],
                                     x_batched, outer - 1) for k in range(n)])
    parts = _as_tuple(index)
    arrays = [p for p in parts if not isinstance(p, slice) and p is not None and
              p is not Ellipsis and np.ndim(p)]
    if not arrays:
        raise TransformError("an index that differs between examples can only be made of "
                             "integers or integer arrays, followed by slices, under vmap")
    n = np.shape(arrays[0])[0]
    if isinstance(x, (tuple, list)):
        raise TransformError("indexing a list with an index that differs between examples "
                             "cannot be batched; stack the list into an array first")
    if not x_batched:
        x = np.broadcast_to(x, (n,) + np.shape(x))
    if _is_lane_mask(parts):
        return Ragged.gather(x, parts[0])
    return x[_lane_positions(index, n)]


def _is_lane_mask(parts):
    """A batched boolean mask, alone or followed by full slices (`x[m]`, `x[m, :]`)."""
    head = parts[0] if parts else None
    return getattr(head, "dtype", None) == bool and np.ndim(head) >= 2 and \
        all(isinstance(p, slice) and p == slice(None) for p in parts[1:])


def lane_key(g, key, n, outer=0, spec=True):
    """The index of `g[key]` for a `key` that vmap sees as batched: for a list, tuple or
    dict (whose elements cannot differ in number between examples) the key must be the
    same in every example, and is that key; for an array, each example's own element.
    `spec`: the key's (one flag per part of a tuple: rt.lane_index_parts)."""
    if isinstance(g, (tuple, list, dict)):
        return uniform_lanes(key, True, "indexing a list", "index", outer)
    return lane_scatter_index(key, n, spec, outer)


class MaskIndex(tuple):
    """The index of `x[mask] = v` on batched x for a boolean `mask` that differs between
    examples: the batched mask itself (it selects each example's own elements, example by
    example), marked so that the values written are lined up with what it selects
    (rt.align_to_slot), not with the examples."""


def lane_scatter_index(index, n, spec=True, outer=0):
    """The numpy index for `x[index] = v` on batched x when `index` differs per example
    (rt.lane_key where x may be a container). A boolean mask, unlike the same mask read
    (`x[mask]`: a different number of elements per example), writes in place: MaskIndex.
    `spec`: the index's (one flag per part of a tuple: rt.lane_index_parts)."""
    index = lane_index_parts(index, n, spec, outer)
    parts = _as_tuple(index)
    head = parts[0] if parts else None
    if getattr(head, "dtype", None) == bool and np.ndim(head) >= 2 and \
            all(isinstance(p, slice) and p == slice(None) for p in parts[1:]):
        return MaskIndex(parts)
    return _lane_positions(index, n)


def align_to_slot(value, slot, index, outer=0):
    """`value`, batched, lined up with `slot` (x[index], batched x) that it is written to:
    as rt.align_lanes for an index with one entry per example; for a MaskIndex, the value
    of each example repeated over the elements its mask selects, in the order the mask
    selects them (as numpy broadcasts one example's value over its selection). `outer`:
    axes of enclosing vmaps (Jacobians) that `value` and `slot` lead with, not `index`."""
    if isinstance(value, Ragged):
        return _ragged_to_slot(value, index, outer)
    if not isinstance(index, MaskIndex):
        return align_lanes(value, slot, outer)
    mask = index[0]
    xp = array_module(value, mask)
    value = xp.asarray(value)
    lead = value.shape[:outer]
    rest = np.shape(slot)[outer + 1:]            # per selected element
    per_example = value.shape[outer + 1:]
    if len(per_example) == len(rest) + 1:         # a leading axis for the selected elements
        if per_example[0] != 1:
            raise TransformError(
                "x[mask] = v, with a boolean mask that differs between examples, where v "
                f"has one entry per selected element (shape {per_example}): the number "
                "selected may differ between examples (or, under vmap of vmap, v differs "
                "between examples: there only a value the same for all can be written "
                "through such a mask).\n  hint: write x = np.where(mask, v, x) with v "
                "shaped like x")
        value = value.reshape(value.shape[:outer + 1] + per_example[1:])
        per_example = per_example[1:]
    elif len(per_example) > len(rest):
        raise TransformError(f"x[mask] = v: v of shape {per_example} does not fit the "
                             f"selected elements of shape (count,) + {rest}")
    spread = lead + mask.shape + rest
    full = xp.broadcast_to(_expand(value, len(spread) - outer - 1, outer), spread)
    return full[(slice(None),) * outer + (mask,)]


def _ragged_to_slot(value, index, outer):
    """The elements of a selection written through a mask (`y[m] = f(y[m])`): as many in
    each example, in order."""
    if outer or not isinstance(index, MaskIndex):
        raise ragged_error("writing the selection other than through a boolean mask")
    value.same_counts(Ragged.gather(index[0], index[0]), "x[mask] = values")
    return value.values


def align_to_slot_adj(d, value, index, outer=0):
    """The adjoint of align_to_slot: a MaskIndex's selected adjoints summed per example."""
    if isinstance(value, Ragged):
        return value.like(array_module(d).reshape(d, value.values.shape))
    if not isinstance(index, MaskIndex):
        return np.reshape(d, np.shape(value))
    mask = index[0]
    xp = array_module(d, mask)
    d = xp.asarray(d)
    spread = d.shape[:outer] + mask.shape + d.shape[outer + 1:]
    full = xp.zeros(spread, dtype=d.dtype)
    full[(slice(None),) * outer + (mask,)] = d
    shape = np.shape(value)
    target = shape[:outer + 1] + (1,) * (len(spread) - len(shape)) + shape[outer + 1:]
    axes = tuple(i for i, (a, b) in enumerate(zip(spread, target)) if b == 1 and a != 1)
    return full.sum(axis=axes, keepdims=True).reshape(shape)


# ---------------------------------------------------------------- np.dot per example

_LETTERS = "abcdefghijklmopqrstuvwxyz"     # no "n": that is the batch
_FRAMES = "ABCDEFGHIJ"                      # axes of enclosing vmaps


def frames(outer, count):
    """`outer` of a helper that batches each array argument separately, as one tuple of
    flags per argument (outermost vmap first): which enclosing vmaps' axes it carries.
    An int means every argument carries that many."""
    if isinstance(outer, int):
        return ((1,) * outer,) * count
    return tuple(tuple(f) for f in outer)


def outer_frames(outer, flags=None):
    """`outer` of a helper batched by one more vmap, where the code holds it in a name (a
    value the forward pass saved for the backward pass) rather than spelling it: as the
    vmap pass computes it from a literal. `flags`: for a helper batching each argument
    separately, which arguments this vmap batches."""
    if outer == ():
        outer = 0
    if flags is not None:
        return tuple((f,) + tuple(b) for f, b in zip(flags, frames(outer, len(flags))))
    if isinstance(outer, tuple):            # per-argument frames, all now batched
        return tuple((1,) + tuple(f) for f in outer)
    return outer + 1


def _lead(flags):
    return "".join(_FRAMES[j] for j, f in enumerate(flags) if f)


def dot_subscripts(p, q, a_batched, b_batched, fa=(), fb=(), fo=None):
    """einsum subscripts of np.dot for per-example ranks p and q, either side batched;
    fa/fb/fo: the enclosing vmaps' axes a, b and the result carry (default: the result
    carries every one)."""
    if fo is None:
        fo = (1,) * max(len(fa), len(fb))
    sa, sb = _LETTERS[:p], _LETTERS[p:p + q]
    if p == 0 or q == 0:                      # a number times an array
        out = sa + sb
    else:
        c = sa[-1]
        if q == 1:
            sb, out = c, sa[:-1]
        else:
            sb = sb[:-2] + c + sb[-1]
            out = sa[:-1] + sb[:-2] + sb[-1]
    na, nb = ("n" if a_batched else ""), ("n" if b_batched else "")
    return _lead(fa) + na + sa, _lead(fb) + nb + sb, _lead(fo) + "n" + out


def batched_dot(a, b, a_batched, b_batched, outer=0):
    """np.dot per example, for a and/or b batched (on axis 0)."""
    xp = array_module(a, b)
    identity = type(b).__name__ == "IdentityBasis" and getattr(b, "exact", False) and \
        np.ndim(b) == 2 and np.shape(b)[0] == np.shape(b)[1]
    a, b = xp.asarray(a), xp.asarray(b)
    fa, fb = frames(outer, 2)
    p = np.ndim(a) - sum(fa) - (1 if a_batched else 0)
    q = np.ndim(b) - sum(fb) - (1 if b_batched else 0)
    if not outer and p and q:                 # the common cases, on BLAS directly
        if a_batched and not b_batched:       # the batch is more rows of a
            return xp.dot(a, b)
        if not a_batched and q == 1:          # dot(A, x) for every example: X A^T
            if p == 2 and identity:
                return xp.array(a.T)              # dot(A, e_i): the columns of A
            return xp.tensordot(b, a, axes=([1], [p - 1]))
        if a_batched and b_batched and p == 2 and q == 2:
            return xp.matmul(a, b)
    sa, sb, so = dot_subscripts(p, q, a_batched, b_batched, fa, fb)
    return xp.einsum(f"{sa},{sb}->{so}", a, b, optimize=True)


_LATER = "PQRSTUVWXY"                       # axes of vmaps applied to an adjoint itself


def unvmapped_adjoint(g, outer_adj):
    """`g`, where the batched_dot_adj_a/_b call being differentiated was made by no vmap
    (`outer_adj` empty); their reverse rules do not carry those axes, so differentiating
    such a call again in reverse mode is refused here instead of multiplying the wrong
    axes (it crashed, or with square shapes could have given wrong numbers)."""
    if outer_adj:
        raise TransformError(
            "reverse mode through vmapped gradient code of a product (np.dot or @ inside "
            "a vmap inside a gradient, differentiated again in reverse mode: "
            "grad(... jacrev(jacrev(f)) ...)) is not supported.\n  hint: differentiate "
            "the outer level in forward mode (tp.jvp, tp.jacfwd), which is supported.")
    return g


def _dot_adj(dout, a, b, a_batched, b_batched, outer, outer_adj, wrt_a):
    """The adjoint of batched_dot for a (wrt_a) or b, as an einsum.

    Axes of the vmaps that batched the primal product (`outer`, per a and b; the cotangent
    carries all of them): the adjoint keeps those its argument carries and sums the rest,
    like any adjoint. Axes of vmaps applied to this adjoint call afterwards (`outer_adj`,
    per dout, a, b: vmap of gradient code): the result carries every one that some
    argument carries; one only the argument itself carries gives the same adjoint along it.
    """
    xp = array_module(dout, a, b)
    fa, fb = frames(outer, 2)
    gd, ga, gb = frames(outer_adj, 3) if outer_adj else ((), (), ())
    p = np.ndim(a) - sum(fa) - sum(ga) - (1 if a_batched else 0)
    q = np.ndim(b) - sum(fb) - sum(gb) - (1 if b_batched else 0)
    sa, sb, so = dot_subscripts(p, q, a_batched, b_batched, fa, fb)
    later = lambda flags: "".join(_LATER[j] for j, f in enumerate(flags) if f)  # noqa: E731
    sa, sb, so = later(ga) + sa, later(gb) + sb, later(gd) + so
    g_mine, g_other = (ga, gb) if wrt_a else (gb, ga)
    mine = sa if wrt_a else sb
    g_res = tuple(int(x or y) for x, y in zip(gd, g_other))
    res = later(g_res) + mine[len(later(g_mine)):]
    out = xp.einsum(f"{so},{sb if wrt_a else sa}->{res}", dout, b if wrt_a else a,
                    optimize=True)
    shape = np.shape(a if wrt_a else b)
    for j, f in enumerate(g_mine):       # axes only the argument carries: repeat
        if f and not g_res[j]:
            pos = sum(1 for k in range(j) if g_res[k] or (g_mine[k] and not g_res[k]))
            size = shape[sum(1 for k in range(j) if g_mine[k])]
            out = xp.repeat(xp.expand_dims(out, pos), size, axis=pos)
    return out


def batched_dot_adj_a(dout, a, b, a_batched, b_batched, outer=0, outer_adj=()):
    """The adjoint of batched_dot for `a` (summed over the batch when a is not batched)."""
    return _dot_adj(dout, a, b, a_batched, b_batched, outer, outer_adj, True)


def batched_dot_adj_b(dout, a, b, a_batched, b_batched, outer=0, outer_adj=()):
    """The adjoint of batched_dot for `b`."""
    return _dot_adj(dout, a, b, a_batched, b_batched, outer, outer_adj, False)


# ---------------------------------------------------------------- out_axes=None

def _unbatched_leaves(value, have, want, fn):
    """fn(leaf) for each leaf that `want` (out_axes as specs) leaves unmapped and `have`
    (the vmap pass's spec) says may carry the batch."""
    if want is False:
        if have is False:
            return value
        if isinstance(value, (tuple, list)) and isinstance(have, (tuple, list)):
            return _rebuild(value, (_unbatched_leaves(v, h, False, fn)
                                    for v, h in zip(value, have)))
        return tree_map(fn, value)
    if isinstance(want, (tuple, list)) and isinstance(value, (tuple, list)):
        haves = have if isinstance(have, (tuple, list)) else (have,) * len(value)
        return _rebuild(value, (_unbatched_leaves(v, h, w, fn)
                                for v, h, w in zip(value, haves, want)))
    return value


def unbatch_out(value, have, want, where, outer=0):
    """out_axes=None for outputs that the vmap pass could not prove the same for every
    example (a recursive function's results are batched throughout): each such leaf must be
    equal in every example, and is returned once; otherwise it is the user's error."""
    def leaf(x):
        if x is None or isinstance(x, (str, bytes)) or callable(x):
            return x
        xp = array_module(x)
        x = xp.asarray(x)
        first = xp.take(x, 0, axis=outer)
        if where is None:         # a tangent: example 0's
            return first
        same = (x == xp.expand_dims(first, outer)) | \
            ((x != x) & xp.expand_dims(first != first, outer))
        if not bool(xp.all(same)):
            raise TransformError(where)
        return first
    return _unbatched_leaves(value, have, want, leaf)


def unbatch_out_adj(dout, value, have, want, outer=0):
    """The adjoint (and tangent) of unbatch_out, whose output is example 0's value: `dout`
    in example 0, zeros in the others."""
    def leaf(d, x):
        if d is None:
            return None
        xp = array_module(x)
        x = xp.asarray(x)
        g = xp.zeros(x.shape, dtype=np.result_type(x.dtype, xp.asarray(d).dtype))
        g[(slice(None),) * outer + (0,)] = d
        return g

    def visit(d, x, h, w):
        if w is False:
            if h is False:
                return d
            if isinstance(x, (tuple, list)) and isinstance(h, (tuple, list)):
                return _rebuild(x, (visit(di, xi, hi, False) for di, xi, hi in zip(d, x, h)))
            return tree_map(leaf, d, x)
        if isinstance(w, (tuple, list)) and isinstance(x, (tuple, list)):
            hs = h if isinstance(h, (tuple, list)) else (h,) * len(x)
            return _rebuild(x, (visit(di, xi, hi, wi)
                                for di, xi, hi, wi in zip(d, x, hs, w)))
        return d
    return visit(dout, value, have, want)


def uniform_lanes(value, spec, what, role, outer=0):
    """A shape, count or axis argument that the vmap pass sees as batched (it was made under
    a condition that differs between examples, or saved and restored by generated code): it
    must be the same in every example, and is that value. Otherwise the call cannot be
    batched (its result's shape would differ between examples)."""
    def leaf(x):
        if x is None or isinstance(x, (str, bytes, slice, numbers.Number)) or callable(x):
            return x             # (a Python number vmap took for batched: one for all)
        a = to_host(x)              # shapes, counts, axes: small, and read on the host
        first = np.take(a, 0, axis=outer)
        if not bool(np.all(a == np.expand_dims(first, outer))):
            raise TransformError(f"vmap: {what} cannot be batched: its {role} argument differs "
                                 "between examples.\n  hint: compute shapes, counts and axes "
                                 "from shapes (x.shape, len(x)), not from values.")
        return first.item() if first.ndim == 0 else first
    return _unbatched_leaves(value, spec, False, leaf)


# Every helper runtime exports, by name (runtime/__init__.py fills it): `each_lane` is given
# a helper's name, since the code that calls it is transformed again and names functions
# only in calls.
HELPERS = {}


def each_lane(fn, n, flags, *args, **kwargs):
    """fn(*args) for each of the n examples of an enclosing vmap, stacked on a new leading
    axis: the arguments flagged batched are sliced to one example (their leaves that are
    arrays: a tuple index (slice(None), k) gives (slice(None), k[i])). For batching helpers
    given per-example indices by a vmap around them (vmap of vmap): a loop over the outer
    examples, as rt.lane_gather does."""
    def pick(value, i):
        if isinstance(value, (tuple, list)):
            return _rebuild(value, (pick(v, i) for v in value))
        if isinstance(value, dict):
            return {k: pick(v, i) for k, v in value.items()}
        if value is None or isinstance(value, (slice, str)) or value is Ellipsis or \
                np.ndim(value) == 0:
            return value
        return value[i]
    if isinstance(fn, str):                 # "rt.index_add": generated code spells helpers
        fn = HELPERS[fn.split(".", 1)[1]]  # only in calls, so it passes the name
    outs = [fn(*[pick(a, i) if f else a for a, f in zip(args, flags)], **kwargs)
            for i in range(n)]
    def stacked(*xs):
        if isinstance(xs[0], str) and all(x == xs[0] for x in xs):
            return xs[0]          # a dict's key, the same in every example (lane_gather)
        if any(x is None for x in xs):        # an adjoint left unset (zero) in some
            given = [x for x in xs if x is not None]
            if not given:
                return None
            xs = [array_module(given[0]).zeros_like(given[0]) if x is None else x
                  for x in xs]
        xp = array_module(*xs)
        if any(np.shape(x) != np.shape(xs[0]) for x in xs):
            raise TransformError(
                f"vmap: {getattr(fn, '__name__', fn)} gives results of different shapes in "
                f"different examples ({np.shape(xs[0])} and "
                f"{next(np.shape(x) for x in xs if np.shape(x) != np.shape(xs[0]))}): the "
                "batched result would be ragged (a boolean mask that differs between "
                "examples?).\n  hint: use np.where(mask, x, 0) instead of x[mask]")
        return xp.stack([xp.asarray(x) for x in xs])
    return tree_map(stacked, *outs)
