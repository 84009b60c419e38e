"""Adjoint helpers of numpy's statistics and nan-reductions (called by generated code as
`rt.*`): cumulative_sum, quantiles (median, percentile), ... Their rules are in
transpile/rules/reductions.py.
"""
import numbers

import numpy as np

from .backend import array_module, to_host
from .errors import TransformError


def _axes(axis, ndim):
    """A sorted tuple of non-negative axes (all axes for None)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    return tuple(sorted(int(a) % max(ndim, 1) for a in axis))


def cumulative_sum_adj(g, axis=None, include_initial=False):
    """Adjoint of `np.cumulative_sum(x, axis=axis, include_initial=...)`: a reversed
    cumulative sum of `g`, without its leading entry (the initial 0) if included. axis=None
    is numpy's only axis of a 1-D x."""
    xp = array_module(g)
    g = xp.asarray(g)
    axis = -1 if axis is None else axis
    if include_initial:
        g = xp.delete(g, 0, axis=axis)
    return xp.flip(xp.cumsum(xp.flip(g, axis), axis), axis)


# ---------------------------------------------------------------- quantiles
# np.quantile (and percentile, median) is a weighted sum of two neighbouring order
# statistics of each slice: the sorted values at positions lo and lo + 1 around the virtual
# index that numpy's `method` computes, with weights 1 - w and w. The positions and weights
# depend on the sample size m, q and the method only; np.quantile of arange(m) is the
# virtual index itself (every method interpolates linearly between neighbours, or picks
# one), so one plan covers every method. The index is piecewise linear in q (slope
# m + 1 - alpha - beta in numpy's terms, 0 for the methods that pick, and where it is
# clipped to the ends), so d/dq moves the weight from lo to lo + 1 at that rate: the
# weights of the derivative (deriv=1); those of the second derivative (deriv=2) are 0.
# lo is at most m - 2, so that q = 1 has the slope of the last interval (its derivative
# from inside [0, 1]); at the other cell boundaries the slope is the one to the right.
# Derivatives flow to the elements sorted into those positions (a stable sort: between
# ties, as in JAX's sort-based quantile), and not at all in a slice holding a NaN (whose
# value is nan). `lead` leading axes of every array argument are batch axes (vmap).

_ALPHA_BETA = {"linear": (1.0, 1.0), "hazen": (0.5, 0.5), "weibull": (0.0, 0.0),
               "median_unbiased": (1 / 3, 1 / 3), "normal_unbiased": (3 / 8, 3 / 8),
               "interpolated_inverted_cdf": (0.0, 1.0)}


def _quantile_plan(a, q, axis, method, lead, deriv):
    xp = array_module(a)
    a = xp.asarray(a)
    batch, example = a.shape[:lead], a.shape[lead:]
    if isinstance(q, (list, tuple)) and lead:   # a list whose items a vmap gave the batch
        q = xp.stack([xp.broadcast_to(xp.asarray(v), batch + np.shape(v)[lead:]) for v in q],
                     axis=lead)
    q = xp.asarray(q, dtype=np.result_type(q, np.float64))
    if q.ndim < lead:                       # a number: the same q for every example
        q = xp.broadcast_to(q, batch)
    q = xp.broadcast_to(q, batch + q.shape[lead:])
    axes = _axes(axis, len(example))
    kept = [i for i in range(len(example)) if i not in axes]
    perm = tuple(range(lead)) + tuple(lead + i for i in kept) + tuple(lead + i for i in axes)
    rest = tuple(example[i] for i in kept)
    m = int(np.prod([example[i] for i in axes], dtype=np.int64))
    moved = xp.transpose(a, perm).reshape(batch + rest + (m,))
    order = xp.argsort(moved, axis=-1, kind="stable")
    pos = xp.asarray(np.quantile(np.arange(m, dtype=np.float64), to_host(q).reshape(-1),
                                 method=method)).reshape(q.shape)
    lo = xp.clip(xp.floor(pos), 0, max(m - 2, 0))
    hi = xp.minimum(lo + 1, m - 1)
    if deriv == 0:
        w = pos - lo
        k_lo, k_hi = 1.0 - w, w
    elif deriv == 1 and method in _ALPHA_BETA:
        alpha, beta = _ALPHA_BETA[method]
        free = m * q + alpha + q * (1 - alpha - beta) - 1      # the index before clipping
        slope = xp.where((free >= 0) & (free <= m - 1) & (hi > lo), m + 1 - alpha - beta, 0.0)
        k_lo, k_hi = -slope, slope
    else:
        k_lo = k_hi = xp.zeros(q.shape)
    slots = xp.arange(m)
    weights = k_lo[..., None] * (slots == lo[..., None]) + \
        k_hi[..., None] * (slots == hi[..., None])              # batch + q + (m,)
    nan = xp.isnan(moved).any(axis=-1)                           # batch + rest
    kept_shape = tuple(1 if i in axes else n for i, n in enumerate(example))
    return dict(batch=batch, qshape=q.shape[lead:], rest=rest, m=m, perm=perm,
                order=order, weights=weights, nan=nan, kept_shape=kept_shape,
                moved_shape=tuple(a.shape[p] for p in perm))


def _counts(plan):
    return (int(np.prod(plan["qshape"], dtype=np.int64)),
            int(np.prod(plan["rest"], dtype=np.int64)))


def _weigh(t, plan, fill):
    """sum_j weights[q, j] * sort(t along a's order)[rest, j] -> batch + q + rest."""
    xp = array_module(t)
    batch, m = plan["batch"], plan["m"]
    nq, nr = _counts(plan)
    moved = xp.transpose(xp.asarray(t), plan["perm"]).reshape(batch + plan["rest"] + (m,))
    ranked = xp.take_along_axis(moved, plan["order"], axis=-1)
    ranked = xp.where(plan["nan"][..., None], 0, ranked)
    out = xp.matmul(plan["weights"].reshape(batch + (nq, m)),
                    xp.swapaxes(ranked.reshape(batch + (nr, m)), -1, -2))
    out = out.reshape(batch + plan["qshape"] + plan["rest"])
    if fill is not None:
        out = xp.where(plan["nan"].reshape(batch + (1,) * len(plan["qshape"]) + plan["rest"]),
                       fill, out)
    return out


def _keep(x, plan, keepdims):
    shape = plan["kept_shape"] if keepdims else plan["rest"]
    return x.reshape(plan["batch"] + plan["qshape"] + shape)


def quantile_tangent(t, a, q, axis=None, method="linear", keepdims=False, deriv=0, lead=0):
    """The tangent of np.quantile(a, q, axis, method=..., keepdims=...) for a tangent `t` of
    `a`: t at the positions of a's order statistics, weighted as they are (deriv=0); with
    deriv=1 (2), the weights' derivative (second derivative) in q."""
    plan = _quantile_plan(a, q, axis, method, lead, deriv)
    return _keep(_weigh(t, plan, 0.0), plan, keepdims)


def quantile_adj(g, a, q, axis=None, method="linear", keepdims=False, deriv=0, lead=0):
    """The transpose of quantile_tangent in `t`: `g` weighted back onto the elements of `a`
    sorted into the positions used (the adjoint of np.quantile for deriv=0)."""
    xp = array_module(g)
    plan = _quantile_plan(a, q, axis, method, lead, deriv)
    batch, m = plan["batch"], plan["m"]
    nq, nr = _counts(plan)
    g = xp.asarray(g).reshape(batch + (nq, nr))
    ranked = xp.matmul(xp.swapaxes(g, -1, -2), plan["weights"].reshape(batch + (nq, m)))
    ranked = xp.where(plan["nan"][..., None], 0, ranked.reshape(batch + plan["rest"] + (m,)))
    moved = xp.zeros(ranked.shape, dtype=np.result_type(ranked, np.float64))
    xp.put_along_axis(moved, plan["order"], ranked, axis=-1)
    return xp.transpose(moved.reshape(plan["moved_shape"]),
                        tuple(np.argsort(plan["perm"]).tolist()))


def quantile_of(a, q, axis=None, method="linear", keepdims=False, lead=0):
    """np.quantile(a, q, axis, method=method, keepdims=keepdims) of each example of `a` and
    `q` (`lead` batch axes in front of both; `q` may be a number, the same for all)."""
    if lead == 0:
        return np.quantile(a, q, axis=axis, method=method, keepdims=keepdims)
    plan = _quantile_plan(a, q, axis, method, lead, 0)
    return _keep(_weigh(a, plan, np.nan), plan, keepdims)


def sum_trailing(h, q):
    """`h` summed over its axes after the first ndim(q), in q's shape: the adjoint of q
    where q's axes lead the result's (np.quantile's q)."""
    xp = array_module(h)
    h = xp.asarray(h)
    nd = np.ndim(q)
    return xp.sum(h, axis=tuple(range(nd, h.ndim))).reshape(np.shape(q))


def expand_trailing(g, like):
    """`g` with length-1 axes appended up to the rank of `like` (the transpose of
    sum_trailing, with broadcasting)."""
    xp = array_module(g)
    g = xp.asarray(g)
    return g.reshape(g.shape + (1,) * (np.ndim(like) - g.ndim))


# ---------------------------------------------------------------- np.average

def average_weights(weights, a, axis=None, missing=1.0, lead=0):
    """np.average's weights in a's shape: a 1-D `weights` lies along `axis` (numpy's
    rule), None means `missing` everywhere (1: unweighted; 0: the tangent of no weights).
    `lead` leading axes of both are batch axes."""
    xp = array_module(a)
    shape = np.shape(a)
    if weights is None:
        return xp.full(shape, missing, dtype=np.result_type(a, np.float64))
    weights = xp.asarray(weights)
    if weights.shape[lead:] != shape[lead:]:        # 1-D, along axis
        along = [1] * (len(shape) - lead)
        along[axis] = weights.shape[-1]
        weights = weights.reshape(weights.shape[:lead] + tuple(along))
    return xp.broadcast_to(weights, shape)


def average_weights_adj(g, weights, a, axis=None, lead=0):
    """The transpose of average_weights in `weights`: `g` (a's shape) summed to the shape
    of `weights`."""
    xp = array_module(g)
    g = xp.asarray(g)
    if weights is None or np.shape(weights)[lead:] == np.shape(a)[lead:]:
        return g
    axis = axis % (g.ndim - lead) + lead
    others = tuple(i for i in range(lead, g.ndim) if i != axis)
    return xp.sum(g, axis=others)


def average_part(g, returned, which):
    """Part `which` of the adjoint (or tangent) `g` of np.average: the average's (0) or the
    sum of weights' (1, zeros when `returned` is False and the result has no such part)."""
    if returned:
        return g[which]
    return g if which == 0 else array_module(g).zeros_like(g)


def average_put(h, like, returned, which):
    """The transpose of average_part: `h` as part `which` of a result like `like` (the
    other part zeros), or `h` itself when the result is one array."""
    if not returned:
        return h if which == 0 else array_module(like).zeros_like(like)
    xp = array_module(h)
    parts = [xp.zeros_like(like[0]), xp.zeros_like(like[1])]
    parts[which] = h
    return tuple(parts)


def average_pack(avg, scl, returned):
    """np.average's result from its parts: (avg, scl) when `returned`, else avg."""
    return (avg, scl) if returned else avg


# ---------------------------------------------------------------- polynomials

def poly_coefficients(p, lead=0):
    """`p` as the array of one polynomial's coefficients (highest power first), each of
    `lead` leading batch axes; numpy's 2-D `p` (a polynomial per column) is refused."""
    xp = array_module(p)
    p = xp.asarray(p)
    if p.ndim - lead != 1:
        raise TransformError(
            f"np.polyval's derivative rule takes a 1-D array of coefficients, not one of "
            f"shape {p.shape[lead:]}.\n  hint: evaluate one polynomial per call.")
    return p


# ---------------------------------------------------------------- np.interp
# np.interp(x, xp, fp) is linear in fp: A(x) fp, where each x reads the two knots of its
# interval with weights 1 - t and t (t = (x - xp[lo]) / (xp[hi] - xp[lo])), and outside
# [xp[0], xp[-1]] the end value (fp[0], fp[-1]) unless left/right replace it. Its slope in
# x is S(x) fp: weights -1/h and 1/h on the same knots inside, 0 outside; S does not move
# with x (piecewise constant), and the knots move A and S through S and A again, so A, its
# transpose, S and its transpose are all the derivatives there are (in x, xp and fp; see
# transpile/rules/reductions.py). Intervals as JAX: x on a knot belongs
# to the interval on its right, the last knot to the last interval. `lead` leading axes of
# every array argument are batch axes (one set of knots each).

def _interp_plan(x, xp, left, right, lead):
    xpm = array_module(x)
    x = xpm.asarray(x)
    knots = xpm.asarray(xp)
    batch, n = knots.shape[:lead], knots.shape[-1]
    x = xpm.broadcast_to(x, batch + x.shape[lead:]) if x.ndim >= lead else \
        xpm.broadcast_to(x, batch)
    line = knots.reshape(batch + (1,) * (x.ndim - lead) + (n,))
    i = xpm.clip(xpm.sum(line <= x[..., None], axis=-1), 1, max(n - 1, 1))
    lo, hi = xpm.maximum(i - 1, 0), xpm.minimum(i, n - 1)
    along = xpm.broadcast_to(line, x.shape + (n,))
    x0 = xpm.take_along_axis(along, lo[..., None], axis=-1)[..., 0]
    h = xpm.take_along_axis(along, hi[..., None], axis=-1)[..., 0] - x0
    safe = xpm.where(h == 0, 1.0, h)
    t = xpm.where(h == 0, 0.0, (x - x0) / safe)
    below, above = x < line[..., 0], x > line[..., -1]
    inside = ~(below | above)
    w_lo = xpm.where(inside, 1.0 - t, 0.0)
    w_hi = xpm.where(inside, t, 0.0)
    if left is None:                    # fp[0] to the left
        lo = xpm.where(below, 0, lo)
        w_lo = xpm.where(below, 1.0, w_lo)
    if right is None:                   # fp[-1] to the right
        lo = xpm.where(above, n - 1, lo)
        w_lo = xpm.where(above, 1.0, w_lo)
    s = xpm.where(inside & (h != 0), 1.0 / safe, 0.0)
    return dict(batch=batch, n=n, lo=lo, hi=hi, w_lo=w_lo, w_hi=w_hi, s=s, below=below,
                above=above)


def _gather(v, index, plan):
    """v[..., index] for each batch row: v is batch + (n,), index batch + shape."""
    xp = array_module(v)
    v = xp.asarray(v)
    v = xp.broadcast_to(v, plan["batch"] + v.shape[len(plan["batch"]):])
    rows = int(np.prod(plan["batch"], dtype=np.int64))
    flat = v.reshape(rows, plan["n"])
    idx = index.reshape(rows, -1)
    return flat[xp.arange(rows)[:, None], idx].reshape(index.shape)


def _scatter(g, index, plan):
    """The transpose of _gather: g (batch + shape) added into batch + (n,)."""
    xp = array_module(g)
    rows = int(np.prod(plan["batch"], dtype=np.int64))
    out = xp.zeros((rows, plan["n"]), dtype=np.result_type(g, np.float64))
    idx = index.reshape(rows, -1)
    xp.add.at(out, (xp.broadcast_to(xp.arange(rows)[:, None], idx.shape), idx),
              xp.broadcast_to(g, index.shape).reshape(rows, -1))
    return out.reshape(plan["batch"] + (plan["n"],))


def interp_tangent(t, x, xp, left=None, right=None, lead=0):
    """A(x) t: np.interp(x, xp, t) with 0 to the left (right) where `left` (`right`) is
    given (the tangent of np.interp for a tangent t of fp)."""
    plan = _interp_plan(x, xp, left, right, lead)
    return _gather(t, plan["lo"], plan) * plan["w_lo"] + _gather(t, plan["hi"], plan) * \
        plan["w_hi"]


def interp_adj(g, x, xp, left=None, right=None, lead=0):
    """The transpose of interp_tangent: g (x's shape) added into the knots it read."""
    plan = _interp_plan(x, xp, left, right, lead)
    return _scatter(g * plan["w_lo"], plan["lo"], plan) + \
        _scatter(g * plan["w_hi"], plan["hi"], plan)


def interp_slope(x, xp, fp, lead=0):
    """S(x) fp: the slope of np.interp(x, xp, fp) in x (0 outside [xp[0], xp[-1]])."""
    plan = _interp_plan(x, xp, None, None, lead)
    return (_gather(fp, plan["hi"], plan) - _gather(fp, plan["lo"], plan)) * plan["s"]


def interp_slope_adj(g, x, xp, lead=0):
    """The transpose of interp_slope in fp."""
    plan = _interp_plan(x, xp, None, None, lead)
    return _scatter(g * plan["s"], plan["hi"], plan) - _scatter(g * plan["s"], plan["lo"], plan)


def interp_outside(x, xp, side, lead=0):
    """1.0 where x is left of xp[0] (side -1) or right of xp[-1] (side 1), else 0.0: where
    np.interp returns `left` (`right`)."""
    plan = _interp_plan(x, xp, 0.0, 0.0, lead)
    return (plan["below"] if side < 0 else plan["above"]).astype(np.float64)


def interp_of(x, xp, fp, left=None, right=None, lead=0):
    """np.interp(x, xp, fp, left, right) for each example (`lead` batch axes in front of
    every argument; left and right one number per example)."""
    if lead == 0:
        return np.interp(x, xp, fp, left, right)
    xpm = array_module(fp)
    plan = _interp_plan(x, xp, left, right, lead)
    out = _gather(fp, plan["lo"], plan) * plan["w_lo"] + _gather(fp, plan["hi"], plan) * \
        plan["w_hi"]
    shape = plan["batch"] + (1,) * (out.ndim - len(plan["batch"]))
    for value, where in ((left, plan["below"]), (right, plan["above"])):
        if value is not None:
            value = xpm.asarray(value)
            out = xpm.where(where, value.reshape(shape) if value.ndim else value, out)
    return out


# ---------------------------------------------------------------- np.gradient
# np.gradient along one axis is a banded linear map G (row i reads i-2 .. i+2 at most:
# centred differences inside, one- or two-sided stencils of edge_order at the ends). Its
# transpose is read off np.gradient itself: applied to the comb of every fifth element
# starting at k, row i of the result is G[i, j] for the one j = k (mod 5) in i's band.

def _gradient_axes(axis, ndim, lead):
    axes = _axes(axis, ndim - lead) if not isinstance(axis, (tuple, list)) else \
        tuple(int(a) % max(ndim - lead, 1) for a in axis)
    return tuple(a + lead for a in axes)


def _gradient_t(g, spacing, axis, edge_order):
    """G^T g along `axis` (spacing: numpy's scalar or coordinates for that axis)."""
    xp = array_module(g)
    g = xp.moveaxis(xp.asarray(g), axis, -1)
    n = g.shape[-1]
    i = np.arange(n)
    combs = np.stack([np.gradient((i % 5 == k).astype(np.float64), spacing,
                                  edge_order=edge_order) for k in range(5)])
    out = xp.zeros(g.shape, dtype=np.result_type(g, np.float64))
    for d in range(-2, 3):
        valid = (i + d >= 0) & (i + d < n)
        coef = xp.asarray(np.where(valid, combs[(i + d) % 5, i], 0.0))
        part = g * coef
        if d >= 0:
            out[..., d:] += part[..., :n - d]
        else:
            out[..., :n + d] += part[..., -d:]
    return xp.moveaxis(out, -1, axis)


def gradient_of(f, varargs=1.0, axis=None, edge_order=1, lead=0):
    """np.gradient(f, varargs, axis=axis, edge_order=edge_order) of each example (`lead`
    batch axes in front of f, which `axis` does not count)."""
    axes = _gradient_axes(axis, np.ndim(f), lead)
    return np.gradient(f, varargs, axis=axes, edge_order=edge_order)


def gradient_adj(g, varargs=1.0, axis=None, edge_order=1, lead=0):
    """The transpose of np.gradient(f, varargs, axis=..., edge_order=...) in f: `g` is one
    array (one axis) or one per axis, each of f's shape."""
    parts = list(g) if isinstance(g, (tuple, list)) else [g]
    axes = _gradient_axes(axis, np.ndim(parts[0]), lead)
    spacings = [varargs] * len(axes)
    total = None
    for part, ax, spacing in zip(parts, axes, spacings):
        t = _gradient_t(part, spacing, ax, edge_order)
        total = t if total is None else total + t
    return total


# ---------------------------------------------------------------- np.cov, np.corrcoef
# Both start from numpy's data matrix X (variables x observations): m as rows (columns if
# rowvar is False and m is 2-D), then y's rows. cov_data builds it, linearly in m and y;
# cov_data_adj takes the part of an X-shaped adjoint that belongs to m (which=0) or y (1),
# cov_data_put puts one back. `lead` leading axes of every array are batch axes.

def _turned(v, rowvar, lead):
    """Whether X holds an example of `v` transposed (rowvar False, 2-D with several rows)."""
    example = np.shape(v)[lead:]
    return not rowvar and ((1,) * max(2 - len(example), 0) + tuple(example))[0] != 1


def _rows(v, rowvar, lead):
    xp = array_module(v)
    v = xp.asarray(v)
    shape = v.shape[:lead] + (1,) * max(2 - (v.ndim - lead), 0) + v.shape[lead:]
    turned = _turned(v, rowvar, lead)
    v = v.reshape(shape)                             # ndmin=2 of each example
    return xp.swapaxes(v, -1, -2) if turned else v


def cov_data(m, y=None, rowvar=True, lead=0):
    """numpy's X of np.cov(m, y, rowvar): variables along axis -2, observations along -1."""
    xp = array_module(m)
    x = _rows(m, rowvar, lead)
    if y is None:
        return x
    return xp.concatenate([x, _rows(y, rowvar, lead)], axis=-2)


def cov_data_adj(g, m, y=None, rowvar=True, which=0, lead=0):
    """The part of `g` (X's shape) that cov_data took from m (which=0) or y (which=1), in
    that argument's shape (0.0 for a y that is None)."""
    xp = array_module(g)
    if which == 1 and y is None:
        return 0.0
    k = _rows(m, rowvar, lead).shape[-2]
    part = g[..., :k, :] if which == 0 else g[..., k:, :]
    v = m if which == 0 else y
    if _turned(v, rowvar, lead):
        part = xp.swapaxes(part, -1, -2)
    return part.reshape(np.shape(v))


def cov_data_put(h, m, y=None, rowvar=True, which=0, lead=0):
    """The transpose of cov_data_adj: `h` (m's or y's shape) placed in X's rows, zeros in
    the others."""
    xp = array_module(h)
    if which == 0:
        x = _rows(h, rowvar, lead)
        if y is None:
            return x
        other = xp.zeros_like(_rows(y, rowvar, lead), dtype=np.result_type(h, y))
        return xp.concatenate([x, other], axis=-2)
    x = _rows(m, rowvar, lead)
    if y is None:
        return xp.zeros_like(x)
    part = _rows(h, rowvar, lead)
    return xp.concatenate([xp.zeros(x.shape, dtype=np.result_type(h, x)), part], axis=-2)


def cov_dof(x, bias=False, ddof=None):
    """np.cov's divisor: the number of observations (the last axis of X) less ddof (1,
    or 0 when bias)."""
    if ddof is None:
        ddof = 0 if bias else 1
    return np.shape(x)[-1] - ddof


def cov_grid(g, x, outer=0):
    """`g` (np.cov's or np.corrcoef's result, squeezed as numpy squeezes it) as the
    k x k matrix of X's k variables (X: variables x observations)."""
    xp = array_module(g)
    shape = np.shape(x)
    return xp.reshape(xp.asarray(g), shape[:-1] + shape[-2:-1])


def cov_of(m, y=None, rowvar=True, bias=False, ddof=None, lead=0):
    """np.cov(m, y, rowvar, bias, ddof) of each example (`lead` batch axes in front)."""
    if lead == 0:
        return np.cov(m, y, rowvar, bias, ddof)
    xp = array_module(m)
    x = cov_data(m, y, rowvar, lead)
    xc = x - xp.mean(x, axis=-1, keepdims=True)
    c = xp.matmul(xc, xp.conj(xp.swapaxes(xc, -1, -2))) / cov_dof(x, bias, ddof)
    return c.reshape(c.shape[:lead]) if c.shape[-1] == 1 else c


def corrcoef_of(x, y=None, rowvar=True, lead=0):
    """np.corrcoef(x, y, rowvar) of each example (`lead` batch axes in front)."""
    if lead == 0:
        return np.corrcoef(x, y, rowvar)
    xp = array_module(x)
    c = cov_of(x, y, rowvar, False, None, lead)
    if np.ndim(c) == lead:
        return c / c
    s = xp.sqrt(xp.real(xp.diagonal(c, 0, -2, -1)))
    r = c / (s[..., :, None] * s[..., None, :])
    r = xp.clip(xp.real(r), -1, 1) + (1j * xp.clip(xp.imag(r), -1, 1) if xp.iscomplexobj(r)
                                      else 0)
    return r


# ---------------------------------------------------------------- np.trapezoid
# sum over `axis` of pairs * spacing: pairs the means of neighbouring samples of y (linear
# in y), spacing the differences of x (linear in x; shaped to broadcast along axis when x is
# 1-D) or the scalar dx. `lead` leading axes of every array are batch axes.

def _example_axis(axis, ndim, lead):
    return axis % (ndim - lead) + lead


def trapezoid_pairs(y, axis=-1, lead=0):
    """(y[1:] + y[:-1]) / 2 along `axis`."""
    xp = array_module(y)
    y = xp.asarray(y)
    ax = _example_axis(axis, y.ndim, lead)
    n = y.shape[ax]
    return (xp.take(y, xp.arange(1, n), axis=ax) + xp.take(y, xp.arange(n - 1), axis=ax)) / 2.0


def trapezoid_pairs_adj(g, axis=-1, lead=0):
    """The transpose of trapezoid_pairs: each pair's g shared by its two samples."""
    xp = array_module(g)
    g = xp.asarray(g) / 2.0
    ax = _example_axis(axis, g.ndim, lead)
    widths = [(0, 0)] * g.ndim
    widths[ax] = (1, 0)
    first = xp.pad(g, widths)
    widths[ax] = (0, 1)
    return first + xp.pad(g, widths)


def trapezoid_step(x, y, axis=-1, lead=0):
    """np.trapezoid's spacing from the sample points x: np.diff(x) along `axis`, a 1-D x
    shaped to broadcast against y's pairs; 0.0 for x None (then dx is the spacing)."""
    if x is None:
        return 0.0
    xp = array_module(x)
    x = xp.asarray(x)
    ndim = np.ndim(y)
    ax = _example_axis(axis, ndim, lead)
    if x.ndim - lead == 1 and ndim - lead != 1:
        d = xp.diff(x, axis=-1)
        shape = [1] * (ndim - lead)
        shape[ax - lead] = d.shape[-1]
        return d.reshape(d.shape[:lead] + tuple(shape))
    return xp.diff(x, axis=ax if x.ndim == ndim else -1)


def trapezoid_step_adj(g, x, y, axis=-1, lead=0):
    """The transpose of trapezoid_step (g summed over the axes it was broadcast along)."""
    xp = array_module(g)
    g = xp.asarray(g)
    x_shape = np.shape(x)
    ndim = np.ndim(y)
    ax = _example_axis(axis, ndim, lead)
    if len(x_shape) - lead == 1 and ndim - lead != 1:
        g = xp.sum(g, axis=tuple(i for i in range(lead, g.ndim) if i != ax))
        ax = -1
    elif len(x_shape) != ndim:
        ax = -1
    g = xp.broadcast_to(g, x_shape[:-1] + (x_shape[-1] - 1,)) if ax == -1 else g
    widths = [(0, 0)] * g.ndim
    widths[ax] = (1, 1)
    return -xp.diff(xp.pad(g, widths), axis=ax)


def trapezoid_uses_dx(x):
    """1.0 where np.trapezoid's spacing is dx (no sample points x), else 0.0."""
    return 1.0 if x is None else 0.0


def refuse_in_place(what, overwrite_input=False, copy=True):
    """1.0, or a TransformError where `what` was asked to work in place (overwrite_input
    of median/quantile/percentile, copy=False of nan_to_num): the rules read the input
    after the call, which would then have been reordered or overwritten."""
    if overwrite_input or copy is False:
        raise TransformError(
            f"{what} in place (overwrite_input=True or copy=False) has no derivative rule: "
            f"the call changes its input, which its derivative reads.\n  hint: leave "
            f"overwrite_input and copy at their defaults.")
    return 1.0
