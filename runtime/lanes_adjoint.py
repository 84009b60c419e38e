"""Batching (vmap) helpers of what reverse and forward mode emit, and of random numbers.

Conventions as in runtime/batching.py: a batched value carries its batch on axis 0, and a
helper taking `outer` is told that many more leading axes (vmap of vmap) come before it,
which every batched array argument carries too. "Per example" below means: for each index
of those leading axes.
"""
import numbers

import numpy as np

from .adjoints import check_scalar_output, clip_share, inside
from .backend import array_module, read_only
from .batching import SEEDED
from .errors import TransformError
from .ragged import Ragged, RaggedShape, unbroadcast_ragged, unbroadcast_to_ragged
from .trees import is_float_leaf, rebuild_like, tree_leaves


def cannot_batch(what, why, hint=None):
    """Raise the error of a call that vmap cannot batch (its result would differ in shape
    between examples, or it changes state shared by all of them)."""
    msg = f"vmap: {what} cannot be batched: {why}."
    if hint:
        msg += f"\n  hint: {hint}"
    raise TransformError(msg)


def example_shape(x, outer=0):
    """The shape of one example of batched `x` (its axes after the batch axis); None for a
    tuple, list or dict (a container stored whole, which rt.unbroadcast leaves alone)."""
    if isinstance(x, (tuple, list, dict)):
        return None
    if isinstance(x, Ragged):
        return RaggedShape(x)
    return tuple(np.shape(x)[outer + 1:])


# ---------------------------------------------------------------- reverse mode

def lane_seed(out, where, outer=0):
    """rt.seed per example: 1 for each example's output, which must be a scalar."""
    dtype = check_scalar_output(out, where, lead=outer + 1)
    return array_module(out).ones(np.shape(out),
                                  dtype=dtype if dtype is not None else np.float64)


def lane_seed_holomorphic(out, where, outer=0):
    """rt.seed_holomorphic per example: 1 for each example's complex scalar output."""
    dtype = check_scalar_output(out, where, lead=outer + 1, holomorphic=True)
    return array_module(out).ones(np.shape(out),
                                  dtype=dtype if dtype is not None else np.complex128)


def lane_unbroadcast(g, shape, outer=0):
    """rt.unbroadcast per example: each example of `g` summed over the axes that
    broadcasting added to an example of shape `shape` (None: g is the adjoint of a
    container, left as it is)."""
    if shape is None:
        return g
    if isinstance(shape, RaggedShape):
        return unbroadcast_to_ragged(g, shape.ragged)
    if isinstance(g, Ragged):
        return unbroadcast_ragged(g, shape)
    return _unbroadcast_lanes(g, outer + 1, shape)


def _unbroadcast_lanes(g, k, shape):
    """unbroadcast of each g[i...] (the first k axes index examples) to `shape`."""
    if g is None:
        return None
    xp = array_module(g)
    g = xp.asarray(g)
    lanes, per, shape = g.shape[:k], g.shape[k:], tuple(shape)
    if per == shape:
        return g
    lead = len(per) - len(shape)
    if lead < 0:                    # fewer axes than an example: broadcast instead
        g = xp.reshape(g, lanes + (1,) * -lead + per)
        return xp.broadcast_to(g, lanes + shape)
    axes = tuple(range(k, k + lead)) + tuple(
        k + lead + i for i, m in enumerate(shape) if m == 1 and per[lead + i] != 1)
    if axes:
        g = xp.sum(g, axis=axes)
    return xp.reshape(g, lanes + shape) if g.shape != lanes + shape else g


def lane_broadcast_to_shape(t, shape, outer=0):
    """np.broadcast_to per example: each example of `t` broadcast to `shape` (a view)."""
    xp = array_module(t)
    t = xp.asarray(t)
    k = outer + 1
    lanes, per, shape = t.shape[:k], t.shape[k:], tuple(shape)
    if len(per) < len(shape):
        t = xp.reshape(t, lanes + (1,) * (len(shape) - len(per)) + per)
    return xp.broadcast_to(t, lanes + shape)


def _example_axes(axis, rank, outer):
    """A per-example axis argument (None: all) as axes of an array with outer + 1 lanes."""
    k = outer + 1
    if axis is None:
        return tuple(range(k, k + rank))
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    return tuple(k + a % rank for a in axes) if rank else ()


def lane_expand_to(g, shape, axis=None, keepdims=False, outer=0):
    """rt.expand per example: each example of the reduction adjoint `g` broadcast back to
    an example of shape `shape` that was reduced over `axis`."""
    xp = array_module(g)
    g = xp.asarray(g)
    k = outer + 1
    lanes, shape = g.shape[:k], tuple(shape)
    if not keepdims:
        g = xp.reshape(g, g.shape + (1,) * len(shape)) if axis is None else \
            xp.expand_dims(g, _example_axes(axis, len(shape), outer))
    return xp.broadcast_to(g, lanes + shape)


def lane_expand_to_adj(x, axis=None, keepdims=False, outer=0):
    """np.sum per example over a per-example `axis` (the adjoint of lane_expand_to)."""
    xp = array_module(x)
    x = xp.asarray(x)
    return xp.sum(x, axis=_example_axes(axis, x.ndim - outer - 1, outer), keepdims=keepdims)


def _lanes_of(g, x, g_flag, x_flag):
    """(g carries the batch, x carries the batch) for one leaf of each.

    A container whose spec is batched may hold leaves that are the same for every example
    (a tuple of gradients only some of which depend on the batch). One example of a
    gradient has the rank of one example of its input, which tells them apart; a flag that
    is False is certain (no leaf of that container is batched)."""
    if g is None:
        return False, x_flag
    for gb, xb in ((g_flag, x_flag), (g_flag, False), (False, x_flag), (False, False)):
        if (gb and not g_flag) or (xb and not x_flag):
            continue
        if np.ndim(g) - gb == np.ndim(x) - xb:
            return gb, xb
    return g_flag, x_flag


def lane_as_grad(g, x, g_batched, x_batched, n, outer=0):
    """rt.as_grad per example: the gradient `g` of input `x` with x's structure and, per
    example, x's shape and dtype. Every float leaf of the result is batched: the gradient
    of an input that is the same for all examples is still one gradient per example."""
    def leaf(gl, xl):
        if not is_float_leaf(xl):
            return None               # integers, bools, strings, None: no derivative
        items = isinstance(gl, (tuple, list))   # an array's rows' adjoints (`a, b = x`)
        gb, xb = _lanes_of(None if items else gl, xl, g_batched, x_batched)
        xp = array_module(xl, *(gl if items else (gl,)))
        xa = xp.asarray(xl)
        per = xa.shape[outer + (1 if xb else 0):]
        dtype = xa.dtype if xa.dtype.kind in "fc" else np.dtype(np.float64)
        full = xa.shape[:outer] + (n,) + per
        if gl is None:
            return xp.zeros(full, dtype=dtype)
        if items:
            gl, gb = _rows_stacked(gl, full, outer, dtype, xp), True
        ga = xp.asarray(gl)
        if not gb:
            ga = xp.expand_dims(ga, outer)
        if ga.ndim - outer - 1 > len(per):
            ga = lane_unbroadcast(ga, per, outer)
        if ga.shape != full:
            ga = xp.broadcast_to(lane_broadcast_to_shape(ga, per, outer), full)
        if ga.dtype.kind == "c" and dtype.kind != "c":
            ga = xp.real(ga)          # a real input's gradient is real (rt.as_grad)
        if ga.dtype != dtype:
            ga = ga.astype(dtype)
        elif read_only(ga):
            ga = ga.copy()
        return ga

    def finish(gt, xt):
        if isinstance(xt, tuple):
            items = [finish(None if gt is None else gt[i], v) for i, v in enumerate(xt)]
            return type(xt)(*items) if hasattr(xt, "_fields") else tuple(items)
        if isinstance(xt, list):
            return [finish(None if gt is None else gt[i], v) for i, v in enumerate(xt)]
        if isinstance(xt, dict):
            return {k: finish(None if gt is None else gt.get(k), v) for k, v in xt.items()}
        return leaf(gt, xt)
    return finish(g, x)


def _rows_stacked(rows, full, outer, dtype, xp):
    """The batched adjoint (shape `full`) of an array whose rows' adjoints are `rows`,
    each batched or the same for every example (None: zero)."""
    row_shape = full[:outer + 1] + full[outer + 2:]
    stacked = []
    for row in rows:
        if row is None:
            stacked.append(xp.zeros(row_shape, dtype=dtype))
            continue
        row = xp.asarray(row)
        if row.ndim < len(row_shape):          # the same in every example
            row = xp.broadcast_to(xp.expand_dims(row, outer), row_shape)
        stacked.append(row)
    return xp.stack(stacked, axis=outer + 1)


def lane_as_grad_adj(d, g, x, g_batched, x_batched, n, outer=0):
    """The adjoint of lane_as_grad with respect to `g` (it is linear in g): leaves of g
    that the batch was added to get the sum over examples."""
    def leaf(dl, gl, xl):
        if dl is None or gl is None:
            return None
        gb, _ = _lanes_of(gl, xl, g_batched, x_batched)
        xp = array_module(dl)
        dl = xp.asarray(dl)
        if gb:
            return _unbroadcast_lanes(dl, outer + 1, np.shape(gl)[outer + 1:])
        return _unbroadcast_lanes(xp.sum(dl, axis=outer), outer, np.shape(gl)[outer:])

    def walk(dt, gt, xt):
        if isinstance(xt, (tuple, list)):
            items = [walk(None if dt is None else dt[i], None if gt is None else gt[i], v)
                     for i, v in enumerate(xt)]
            return type(gt)(items) if isinstance(gt, (tuple, list)) and not \
                hasattr(gt, "_fields") else items
        if isinstance(xt, dict):
            return {k: walk(None if dt is None else dt.get(k),
                            None if gt is None else gt.get(k), v) for k, v in xt.items()}
        return leaf(dt, gt, xt)
    return walk(d, g, x)


def lane_to_like(g, x, outer=0):
    """rt.to_like per example (the adjoint of tuple(x)/list(x)), g and x both batched: the
    adjoint in the container type of x; for an array x, the list of per-element adjoints
    stacked along each example's first axis (unset elements are zeros)."""
    k = outer + 1
    if isinstance(x, dict):
        return None         # list(d) is d's keys: they carry no derivative (as rt.to_like)
    if isinstance(x, (tuple, list)):
        if isinstance(g, (tuple, list)):
            return rebuild_like(x, g)
        xp = array_module(g)
        return rebuild_like(x, xp.moveaxis(xp.asarray(g), k, 0))
    xp = array_module(x)
    if not isinstance(g, (tuple, list)):
        return xp.asarray(g)
    x = xp.asarray(x)
    zero = x.shape[:k] + x.shape[k + 1:]
    parts = [xp.zeros(zero, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
             if v is None else v for v in g]
    return xp.stack(parts, axis=k)


# ---------------------------------------------------------------- pytree inner products

def _lane_vdot_leaf(a, b, outer):
    xp = array_module(a, b)
    p = xp.asarray(a) * xp.asarray(b)
    return xp.sum(p, axis=tuple(range(outer + 1, p.ndim)))


def lane_tree_vdot(a, b, outer=0):
    """rt.tree_vdot per example: the sum over matching leaves of the inner product of one
    example of each (both batched). None is zero at any depth, as in rt.tree_vdot."""
    total = _lane_tree_vdot(a, b, outer)
    if isinstance(total, float):
        # no leaf set on both sides: zero in every example, which the batched code reading
        # it expects one of per example
        leaves = [v for v in tree_leaves(a) + tree_leaves(b) if v is not None]
        if leaves:
            return array_module(leaves[0]).zeros(np.shape(leaves[0])[:outer + 1])
    return total


def _lane_tree_vdot(a, b, outer):
    if a is None or b is None:
        return 0.0
    if isinstance(a, (tuple, list)):
        parts = [_lane_tree_vdot(x, y, outer) for x, y in zip(a, b)]
    elif isinstance(a, dict):
        parts = [_lane_tree_vdot(a[k], b[k], outer) for k in a]
    else:
        return _lane_vdot_leaf(a, b, outer)
    return sum(parts, 0.0)


def lane_tree_scale(x, s, outer=0):
    """rt.tree_scale per example: every leaf of x times its example's scalar `s`."""
    if isinstance(x, (tuple, list)):
        return rebuild_like(x, (lane_tree_scale(v, s, outer) for v in x))
    if isinstance(x, dict):
        return {k: lane_tree_scale(v, s, outer) for k, v in x.items()}
    if x is None:
        return None
    xp = array_module(x, s)
    s = xp.asarray(s)
    x = xp.asarray(x)
    return x * s.reshape(s.shape + (1,) * (x.ndim - s.ndim))


# ---------------------------------------------------------------- masks, sizes, bases

def lane_inside(a, lo, hi):
    """rt.inside with all three broadcast together (1 inside, 0.5 on a bound, 0 outside)."""
    if any(isinstance(v, Ragged) for v in (a, lo, hi)):
        return inside(a, lo, hi)
    xp = array_module(a)
    shape = np.broadcast_shapes(np.shape(a), np.shape(lo) if lo is not None else (),
                                np.shape(hi) if hi is not None else ())
    share = xp.broadcast_to(clip_share(a, lo, hi, xp), shape)
    dtype = getattr(a, "dtype", np.float64)
    return share.astype(dtype if np.dtype(dtype).kind in "fc" else np.float64)


def lane_basis_like(x, i, outer=0):
    """rt.basis_like per example: in every example, the i-th standard basis vector shaped
    like one example of x (flat index i)."""
    xp = array_module(x)
    x = xp.asarray(x)
    e = xp.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    e.reshape(x.shape[:outer + 1] + (-1,))[..., i] = 1
    return e


def lane_contains(x, y, negate=False):
    """`x in y` (or `not in`) where y holds batched values: a key test on a dict or a
    string, which is the same for every example."""
    if isinstance(y, (dict, str)) and not hasattr(x, "shape"):
        return (x not in y) if negate else (x in y)
    cannot_batch("`in`", "membership among values that differ between examples is "
                 "ambiguous for arrays", "compare explicitly, e.g. np.any(x == y)")


# ---------------------------------------------------------------- random numbers

def _size_tuple(size):
    if size is None:
        return None
    return (int(size),) if isinstance(size, numbers.Integral) else tuple(size)


def _seeded_draws(what, n=None, outer=0):
    """Refuse `what` after rt.lane_random_seed where it cannot draw each example's numbers
    from that example's state (n None: a draw that vmap makes otherwise; a vmap of a
    vmap)."""
    if n is None or outer or len(SEEDED.states) != n:
        raise TransformError(f"vmap: {what} after np.random.seed in the vmapped function "
                             "cannot draw what a loop over examples draws (each example "
                             "restarting from that seed).\n  hint: seed outside the vmapped "
                             "function, or draw from a Generator made in it (rng = "
                             "np.random.default_rng(seed)), which vmap makes per example.")


def lane_random(dist, n, size, a, b=None, a_batched=False, b_batched=False, dtype=None,
                outer=0):
    """np.random.<dist>(a, b, size) per example, drawn in one call: the batch becomes the
    leading axes of `size`, and each parameter's examples line up with them. The numbers
    come out in the order a loop over examples draws them (for a function with one random
    call, vmap and the loop agree exactly under the same seed). After np.random.seed in
    the function, each example draws from its own state, as in a loop
    (batching.lane_random_seed)."""
    if SEEDED.states is not None:
        _seeded_draws(f"np.random.{dist}", n, outer)
        kw = {} if dtype is None else {"dtype": dtype}
        outs = []
        for i in range(n):
            np.random.set_state(SEEDED.states[i])
            args = [a[i] if a_batched else a]
            if b is not None or b_batched:
                args.append(b[i] if b_batched else b)
            outs.append(getattr(np.random, dist)(*args, size=size, **kw))
            SEEDED.states[i] = np.random.get_state()
        return np.stack([np.asarray(o) for o in outs])
    params = [(a, a_batched)]
    if b is not None or b_batched:
        params.append((b, b_batched))
    lead = None
    shapes = []
    for p, flag in params:
        if outer and np.ndim(p) == 0:      # a literal number: no lanes at all
            shapes.append(())
            continue
        s = np.shape(p)
        if lead is None and outer:
            lead = s[:outer]
        shapes.append(s[outer + (1 if flag else 0):])
    lead = lead or ()
    per = _size_tuple(size)
    if per is None:
        per = np.broadcast_shapes(*shapes)
    args = []
    for (p, flag), s in zip(params, shapes):
        if outer and np.ndim(p) == 0 or not (flag or outer):
            args.append(p)
            continue
        lanes = lead + ((n,) if flag else (1,))
        args.append(np.reshape(p, lanes + (1,) * (len(per) - len(s)) + s))
    kw = {} if dtype is None else {"dtype": dtype}
    return getattr(np.random, dist)(*args, size=lead + (n,) + tuple(per), **kw)


def lane_choice(a, size, replace, p, a_batched, p_batched, n):
    """np.random.choice per example, for a population `a` (an int or a 1-D array) and/or
    probabilities `p` that differ between examples."""
    if SEEDED.states is not None:
        _seeded_draws("np.random.choice")
    per = _size_tuple(size) or ()
    m = int(np.prod(per))
    a_arr = np.asarray(a)
    pop_is_int = a_arr.ndim == (1 if a_batched else 0)
    if pop_is_int:
        counts = np.broadcast_to(a_arr, (n,)) if a_batched else np.full(n, int(a_arr))
    else:
        k = a_arr.shape[-1]
        counts = np.full(n, k)
    if p is not None:
        probs = np.asarray(p, dtype=np.float64)
        probs = np.broadcast_to(probs if p_batched else probs[None], (n, probs.shape[-1]))
        if not replace:
            cannot_batch("np.random.choice", "sampling without replacement with "
                         "probabilities that differ between examples is not supported")
        cdf = np.cumsum(probs, axis=1)
        cdf = cdf / cdf[:, -1:]
        u = np.random.random_sample((n, m))
        idx = (u[:, :, None] >= cdf[:, None, :]).sum(axis=2)
        idx = np.minimum(idx, probs.shape[1] - 1)
    elif replace:
        u = np.random.random_sample((n, m))
        idx = np.floor(u * counts[:, None]).astype(np.int64)
    else:
        if len(set(np.asarray(counts).tolist())) > 1:
            cannot_batch("np.random.choice", "without replacement, the population size "
                         "must be the same for every example")
        keys = np.random.random_sample((n, int(counts[0]) if n else 0))
        if m > keys.shape[1]:
            raise ValueError("Cannot take a larger sample than population when "
                             "'replace=False'")
        idx = np.argsort(keys, axis=1)[:, :m]
    if not pop_is_int:
        idx = np.take_along_axis(a_arr, idx, axis=1) if a_batched else a_arr[idx]
    return idx.reshape((n,) + per)


def _lane_orders(n, k):
    return np.argsort(np.random.random_sample((n, k)), axis=1)


def lane_permutation(x):
    """np.random.permutation per example of batched x: each example's array shuffled along
    its first axis, or (for a number per example, all equal) a permuted range."""
    if SEEDED.states is not None:
        _seeded_draws("np.random.permutation")
    x = np.asarray(x)
    n = x.shape[0]
    if x.ndim == 1:
        if len(set(x.tolist())) > 1:
            cannot_batch("np.random.permutation", "the length of the permuted range differs "
                         "between examples")
        return _lane_orders(n, int(x[0]) if n else 0)
    order = _lane_orders(n, x.shape[1])
    return np.take_along_axis(x, order.reshape(order.shape + (1,) * (x.ndim - 2)), axis=1)


def lane_shuffle(x):
    """np.random.shuffle per example of batched x (in place, along each example's first
    axis)."""
    x[...] = lane_permutation(x) if np.ndim(x) > 1 else x
    return None


def lane_multivariate_normal(mean, cov, size, mean_batched, cov_batched, n):
    """np.random.multivariate_normal per example (mean and/or cov differ): like numpy,
    the draws are z @ (sqrt(s) v) for cov = u s v (an SVD), plus the mean."""
    if SEEDED.states is not None:
        _seeded_draws("np.random.multivariate_normal")
    per = _size_tuple(size) or ()
    mean = np.asarray(mean, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    d = mean.shape[-1]
    z = np.random.standard_normal((n, int(np.prod(per)), d))
    _, s, v = np.linalg.svd(cov if cov_batched else cov[None])
    factor = np.sqrt(s)[..., :, None] * v
    draws = z @ factor
    m = mean if mean_batched else mean[None]
    draws = draws + m[:, None, :]
    return draws.reshape((n,) + per + (d,))
