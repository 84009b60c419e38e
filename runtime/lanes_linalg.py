"""Batching (vmap) helpers of linear algebra and indexing; conventions in runtime/batching.py.

A batched value carries its examples on axis 0. `<x>_batched` flags say whether an argument
carries that batch axis. A helper taking `outer` is told that many more leading axes (vmap
of vmap) come before the batch axis; every array argument then carries them (the batching
rule `batch_lanes` broadcasts the others first).

Products whose result per example depends on per-example ranks (np.matmul, np.linalg.solve)
line their operands up by inserting size-1 axes: a size-1 batch axis where an operand is not
batched, and size-1 stack axes so that per-example ranks agree. numpy broadcasting then
computes every example at once, and the adjoints are those of the padded operands reshaped
back (summing over the batch where an operand is not batched).

Einsum-shaped products (np.einsum, np.tensordot, np.inner and their adjoints) are batched
with `rt.einsum_gen` and a subscript string with one more letter: `lanes_spec` adds it to
the batched operands and to the output.
"""
import string

import numpy as np

from .backend import array_module
from .adjoints import is_identity_basis
from .batching import batch_view, frames
from .errors import TransformError
from .linalg_helpers import (NO_ADJOINT, ZERO, einsum_spec, inner_spec, matmul_adj_x1,
                             matmul_adj_x2, solve as _solve, tensordot_spec)
from .trees import is_container, rebuild_like

_LETTERS = string.ascii_letters


def _lead(outer, batched):
    return outer + (1 if batched else 0)


def _with_lane(xp, x, batched, flags):
    """`x` as an array with one leading lane axis per enclosing vmap (`flags`: which it
    carries) and one for the batch, each of size 1 where x does not carry it."""
    x = xp.asarray(x)
    for j, f in enumerate(flags):
        if not f:
            x = xp.expand_dims(x, j)
    return x if batched else xp.expand_dims(x, len(flags))


def _pad(xp, x, rank, k):
    """Insert size-1 axes after the k leading lane axes until x has `rank` axes."""
    missing = rank - x.ndim
    if missing <= 0:
        return x
    return xp.reshape(x, x.shape[:k] + (1,) * missing + x.shape[k:])


def _sum_to(xp, g, shape):
    """`g` summed over the axes where `shape` (of the same rank) has size 1."""
    axes = tuple(i for i, (m, n) in enumerate(zip(shape, g.shape)) if m == 1 and n != 1)
    return xp.sum(g, axis=axes, keepdims=True) if axes else g


# ---------------------------------------------------------------- shape-only arguments

def lanes_view(x, n, outer=0):
    """`x` repeated n times along a new axis `outer` (a read-only view). Only for arguments
    that lend their shape (einsum_gen's `like`, the `x` of an adjoint helper): unlike
    rt.batch_view, the same view, it carries no derivative."""
    return batch_view(x, n, outer)


def lanes_probe(x, outer=0):
    """An array shaped like one example of batched `x` (a zero-filled view, the same for
    every example): for helpers that only read shapes (spec and axis helpers)."""
    if x is None or isinstance(x, (str, bytes)):
        return x
    if isinstance(x, (tuple, list)):
        return rebuild_like(x, (lanes_probe(v, outer) for v in x))
    if isinstance(x, dict):
        return {k: lanes_probe(v, outer) for k, v in x.items()}
    xp = array_module(x)
    x = xp.asarray(x)
    return xp.broadcast_to(xp.zeros((), dtype=x.dtype), x.shape[outer + 1:])


def _probes(ops, flags, outer):
    return [None if op is None else
            np.broadcast_to(np.zeros((), dtype=np.result_type(op) if hasattr(op, "dtype")
                                     else np.float64),
                            np.shape(op)[_lead(outer, b):])
            for op, b in zip(ops, flags)]


# ---------------------------------------------------------------- einsum subscripts

def lanes_spec(spec, op0_batched, op1_batched=False, op2_batched=False, op3_batched=False,
               op4_batched=False, op5_batched=False, op6_batched=False, op7_batched=False,
               op8_batched=False):
    """Explicit einsum subscripts `spec` (of one example) with a batch letter added in front
    of the batched operands' subscripts and of the output's ('_' slots hold no operand)."""
    if spec == NO_ADJOINT:
        return spec
    if spec.startswith(ZERO):
        return ZERO + lanes_spec(spec[len(ZERO):], op0_batched, op1_batched, op2_batched,
                                 op3_batched, op4_batched, op5_batched, op6_batched,
                                 op7_batched, op8_batched)
    lhs, rhs = spec.split("->")
    ins = lhs.split(",")
    flags = (op0_batched, op1_batched, op2_batched, op3_batched, op4_batched, op5_batched,
             op6_batched, op7_batched, op8_batched)[:len(ins)]
    free = [c for c in _LETTERS if c not in spec]
    if not free:
        raise TransformError(f"vmap of np.einsum: no letter left for the batch in {spec!r}")
    z = free[-1]
    ins = [z + s if b and s != "_" else s for s, b in zip(ins, flags)]
    return ",".join(ins) + "->" + z + rhs


def example_einsum_spec(subscripts, subscripts_batched=False, op0=None, op0_batched=False,
                        op1=None, op1_batched=False, op2=None, op2_batched=False, op3=None,
                        op3_batched=False, op4=None, op4_batched=False, op5=None,
                        op5_batched=False, op6=None, op6_batched=False, op7=None,
                        op7_batched=False, outer=0):
    """rt.einsum_spec of one example: `subscripts` made explicit for the operands' shapes
    per example (the batched ones lose their batch axis). In the sublist form the operands
    are `subscripts`, op1, op3, ...; the sublists in between are read as they are."""
    slots = [subscripts, op0, op1, op2, op3, op4, op5, op6, op7]
    flags = [subscripts_batched, op0_batched, op1_batched, op2_batched, op3_batched,
             op4_batched, op5_batched, op6_batched, op7_batched]
    if isinstance(subscripts, str):
        probes = [subscripts] + _probes(slots[1:], flags[1:], outer)
    else:
        probes = [_probes([v], [b], outer)[0] if k % 2 == 0 else _sublist(v, outer)
                  for k, (v, b) in enumerate(zip(slots, flags))]
        last = max(k for k, v in enumerate(slots) if v is not None)
        if last % 2 == 0 and last > 0:      # an odd number of arguments: the output's sublist
            probes[last] = _sublist(slots[last], outer)
    return einsum_spec(*probes)


def _sublist(value, outer):
    """A sublist argument of np.einsum, whose integers an enclosing vmap may have viewed
    along its batch axes (they are the same for every example)."""
    if value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [v if v is Ellipsis else int(np.asarray(v).flat[0]) for v in value]
    value = np.asarray(value)
    return value[(0,) * (value.ndim - 1)].tolist() if value.ndim > 1 else value.tolist()


def lanes_einsum_spec(subscripts, subscripts_batched=False, op0=None, op0_batched=False,
                      op1=None, op1_batched=False, op2=None, op2_batched=False, op3=None,
                      op3_batched=False, op4=None, op4_batched=False, op5=None,
                      op5_batched=False, op6=None, op6_batched=False, op7=None,
                      op7_batched=False, outer=0):
    """Subscripts of np.einsum(subscripts, ops) for every example at once: explicit, with a
    batch letter on the batched operands and the output (implicit output and '...' are
    resolved per example first)."""
    spec = example_einsum_spec(subscripts, subscripts_batched, op0, op0_batched, op1,
                               op1_batched, op2, op2_batched, op3, op3_batched, op4,
                               op4_batched, op5, op5_batched, op6, op6_batched, op7,
                               op7_batched, outer)
    return lanes_spec(spec, subscripts_batched, op0_batched, op1_batched, op2_batched,
                      op3_batched, op4_batched, op5_batched, op6_batched, op7_batched)


def lanes_tensordot_spec(a, b, axes, a_batched, b_batched, outer=0):
    """Subscripts of np.tensordot(a, b, axes) for every example at once."""
    pa, pb = _probes((a, b), (a_batched, b_batched), outer)
    return lanes_spec(tensordot_spec(pa, pb, axes), a_batched, b_batched)


def lanes_inner_spec(a, b, a_batched, b_batched, outer=0):
    """Subscripts of np.inner(a, b) for every example at once."""
    pa, pb = _probes((a, b), (a_batched, b_batched), outer)
    return lanes_spec(inner_spec(pa, pb), a_batched, b_batched)


# ---------------------------------------------------------------- matmul

def _matmul_operands(x1, x2, x1_batched, x2_batched, outer):
    """x1, x2 lined up for one np.matmul: lane axes first (size 1 where not batched), 1-D
    examples made a row (x1) or a column (x2), per-example ranks equal."""
    xp = array_module(x1, x2)
    f1, f2 = frames(outer, 2)
    k = len(f1) + 1
    a, b = _with_lane(xp, x1, x1_batched, f1), _with_lane(xp, x2, x2_batched, f2)
    p, q = a.ndim - k, b.ndim - k
    if p == 0 or q == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions (an "
                         "example is a number; use * or np.dot)")
    if p == 1:
        a = xp.expand_dims(a, -2)
    if q == 1:
        b = xp.expand_dims(b, -1)
    rank = max(a.ndim, b.ndim)
    return xp, _pad(xp, a, rank, k), _pad(xp, b, rank, k), p == 1, q == 1


def _plain_matmul(x1, x2, x1_batched, x2_batched, outer):
    """Whether x1 @ x2 of the batched arrays is already the stack of every example's
    product (the batch is one more stack axis or more rows): then the plain product and
    its adjoints (on BLAS, no padding) serve."""
    if outer:
        return False
    n1, n2 = np.ndim(x1), np.ndim(x2)
    if x1_batched and not x2_batched:
        return n1 >= 2 and n2 in (1, 2)
    if x2_batched and not x1_batched:
        return n2 >= 3 and n1 in (1, 2)
    return n1 == n2 and n1 >= 3


def _matrix(x, lanes, view_ok):
    """x as the one matrix every example shares: x itself when it has no lane axes, or (if
    view_ok: it is only read) its first entry when a vmap only viewed it along them
    (rt.batch_view: stride 0); else None."""
    if np.ndim(x) != lanes + 2:
        return None
    if lanes == 0:
        return x
    if view_ok and hasattr(x, "strides") and all(st == 0 for st in x.strides[:lanes]):
        return x[(0,) * lanes]
    return None


def _shared_matrix(x1, x2, x1_batched, x2_batched, outer, view_ok=0):
    """(side, matrix, k): side 1 or 2 when x1 (or x2) is one matrix shared by every example
    and the other operand is a vector per example carrying every lane axis (k of them):
    then the whole batch is one matrix-matrix product (one GEMM, not one matrix-vector
    product per example). view_ok: which side may be a read-only view along its lanes."""
    f1, f2 = frames(outer, 2)
    k = len(f1) + 1
    lanes1 = sum(f1) + (1 if x1_batched else 0)
    lanes2 = sum(f2) + (1 if x2_batched else 0)
    if lanes2 == k and np.ndim(x2) == k + 1:
        m = _matrix(x1, lanes1, view_ok == 1)
        if m is not None:
            return 1, m, k
    if lanes1 == k and np.ndim(x1) == k + 1:
        m = _matrix(x2, lanes2, view_ok == 2)
        if m is not None:
            return 2, m, k
    return None, None, k


def _rows(x, k):
    """The k lane axes of x merged into one: (lanes, size)."""
    return x.reshape((-1,) + np.shape(x)[k:])


def lanes_matmul(x1, x2, x1_batched, x2_batched, outer=0):
    """x1 @ x2 per example (numpy's matmul rules, 1-D examples included), for x1 and/or x2
    batched."""
    if _plain_matmul(x1, x2, x1_batched, x2_batched, outer):
        return array_module(x1, x2).matmul(x1, x2)
    shared, m, k = _shared_matrix(x1, x2, x1_batched, x2_batched, outer, view_ok=1)
    if not shared:
        shared, m, k = _shared_matrix(x1, x2, x1_batched, x2_batched, outer, view_ok=2)
    if shared == 1:        # A @ x_i for every example: X A^T
        xp = array_module(x1, x2)
        if k == 1 and is_identity_basis(x2):   # A @ e_i: the columns of A
            return xp.array(xp.asarray(m).T)
        return xp.dot(_rows(x2, k), xp.asarray(m).T).reshape(np.shape(x2)[:k] + (-1,))
    if shared == 2:        # x_i @ B for every example: X B
        xp = array_module(x1, x2)
        return xp.dot(_rows(x1, k), m).reshape(np.shape(x1)[:k] + (-1,))
    xp, a, b, row, col = _matmul_operands(x1, x2, x1_batched, x2_batched, outer)
    r = xp.matmul(a, b)
    if col:
        r = r[..., 0]
    if row:
        r = r[..., 0] if col else r[..., 0, :]
    return r


def _matmul_adjoint_parts(g, x1, x2, x1_batched, x2_batched, outer):
    xp, a, b, row, col = _matmul_operands(x1, x2, x1_batched, x2_batched, outer)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    return xp, a, b, xp.reshape(xp.asarray(g), shape)


def lanes_matmul_adj_x1(g, x1, x2, x1_batched, x2_batched, outer=0):
    """The adjoint of lanes_matmul for x1 (x1 lends its shape only): summed over the batch
    where x1 is not batched."""
    if _plain_matmul(x1, x2, x1_batched, x2_batched, outer):
        return matmul_adj_x1(g, x2, x1)
    shared, m, k = _shared_matrix(x1, x2, x1_batched, x2_batched, outer, view_ok=2)
    if shared == 1 and not x1_batched and np.ndim(x1) == 2:   # sum over examples g_i x_i^T
        xp = array_module(g, x2)
        return xp.dot(_rows(xp.asarray(g), k).T, _rows(xp.asarray(x2), k))
    if shared == 2:        # g_i B^T for every example
        xp = array_module(g, x2)
        return xp.dot(_rows(xp.asarray(g), k), xp.asarray(m).T).reshape(np.shape(x1))
    xp, a, b, g = _matmul_adjoint_parts(g, x1, x2, x1_batched, x2_batched, outer)
    da = _sum_to(xp, xp.matmul(g, xp.swapaxes(b, -1, -2)), a.shape)
    return xp.reshape(da, np.shape(x1))


def lanes_matmul_adj_x2(g, x1, x2, x1_batched, x2_batched, outer=0):
    """The adjoint of lanes_matmul for x2 (x2 lends its shape only)."""
    if _plain_matmul(x1, x2, x1_batched, x2_batched, outer):
        return matmul_adj_x2(x1, g, x2)
    shared, m, k = _shared_matrix(x1, x2, x1_batched, x2_batched, outer, view_ok=1)
    if shared == 1:        # A^T g_i for every example: G A
        xp = array_module(g, x1)
        return xp.dot(_rows(xp.asarray(g), k), xp.asarray(m)).reshape(np.shape(x2))
    if shared == 2 and not x2_batched and np.ndim(x2) == 2:   # sum over examples x_i^T g_i
        xp = array_module(g, x1)
        return xp.dot(_rows(xp.asarray(x1), k).T, _rows(xp.asarray(g), k))
    xp, a, b, g = _matmul_adjoint_parts(g, x1, x2, x1_batched, x2_batched, outer)
    db = _sum_to(xp, xp.matmul(xp.swapaxes(a, -1, -2), g), b.shape)
    return xp.reshape(db, np.shape(x2))


# ---------------------------------------------------------------- solve

def lanes_solve_shape(a, b, a_batched, b_batched, rt_rule, which, outer=0):
    """The shape `a` (which=0) or `b` (which=1) is reshaped to so that rt.solve of the two
    solves every example: lane axes first (size 1 where not batched), stack axes padded
    with 1s to equal length. A `b` per example is a vector iff it is 1-D (np.linalg.solve,
    numpy 2) or, with rt_rule, iff it has one axis fewer than `a` (rt.solve)."""
    k = outer + 1
    sa, sb = np.shape(a), np.shape(b)
    ea, eb = sa[_lead(outer, a_batched):], sb[_lead(outer, b_batched):]
    if len(ea) < 2:
        raise np.linalg.LinAlgError(f"{len(ea)}-dimensional array given. Array must be at "
                                    "least two-dimensional")
    vector = len(eb) == len(ea) - 1 if rt_rule else len(eb) == 1
    stack = max(len(ea) - 2, len(eb) - (1 if vector else 2))
    if which == 0:
        lanes, per, core = sa[:k] if a_batched else sa[:outer] + (1,), ea, 2
    else:
        lanes, per, core = sb[:k] if b_batched else sb[:outer] + (1,), eb, 1 if vector else 2
    return tuple(lanes) + (1,) * (stack + core - len(per)) + tuple(per)


def lanes_solve(a, b, a_batched, b_batched, rt_rule=False, outer=0):
    """np.linalg.solve(a, b) per example (rt.solve(a, b) with rt_rule), for a and/or b
    batched."""
    xp = array_module(a, b)
    pa = xp.reshape(xp.asarray(a), lanes_solve_shape(a, b, a_batched, b_batched, rt_rule, 0,
                                                     outer))
    pb = xp.reshape(xp.asarray(b), lanes_solve_shape(a, b, a_batched, b_batched, rt_rule, 1,
                                                     outer))
    return _solve(pa, pb)


# ---------------------------------------------------------------- norms, ranks

def lanes_norm_axes(x, ord=None, axis=None, outer=0):
    """The axes of batched `x` (with outer + 1 lane axes) that np.linalg.norm(x, ord, axis)
    reduces in one example: axis None means all of its axes."""
    k = outer + 1
    rank = np.ndim(x) - k
    if axis is None:
        if ord is not None and rank > 2:
            raise ValueError("Improper number of dimensions to norm.")
        return tuple(range(k, k + rank))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(k + a % rank for a in axes)


def lanes_norm(x, ord=None, axis=None, keepdims=False, outer=0):
    """np.linalg.norm(x, ord, axis, keepdims) per example of batched `x`."""
    xp = array_module(x)
    x = xp.asarray(x)
    axes = lanes_norm_axes(x, ord, axis, outer)
    if len(axes) in (1, 2):
        return xp.linalg.norm(x, ord, axes, keepdims)
    # numpy flattens: the 2-norm of all of an example's elements (or |x| of a number)
    sq = x.real ** 2 + x.imag ** 2 if xp.iscomplexobj(x) else x * x
    return xp.sqrt(xp.sum(sq, axis=axes, keepdims=keepdims))


def lanes_matrix_rank(A, tol=None, hermitian=False, rtol=None, A_batched=True,
                      tol_batched=False, rtol_batched=False, outer=0):
    """np.linalg.matrix_rank per example: 1-D examples have rank 0 or 1; tolerances that
    differ between examples line up with their examples."""
    xp = array_module(A)
    A = xp.asarray(A)
    A = A if A_batched else xp.expand_dims(A, outer)
    k = outer + 1
    rank = A.ndim - k
    if rank < 2:      # numpy: a vector (or number) has rank 1 unless it is all zeros
        return xp.any(A != 0, axis=tuple(range(k, A.ndim))).astype(np.int64)

    def per_stack(t, batched):    # numpy reads a tolerance per matrix of the stack
        if t is None:
            return None
        t = _with_lane(xp, t, batched, frames(outer, 1)[0])
        return _pad(xp, t, A.ndim - 2, k)
    return np.linalg.matrix_rank(A, tol=per_stack(tol, tol_batched), hermitian=hermitian,
                                 rtol=per_stack(rtol, rtol_batched))


# ---------------------------------------------------------------- subscripts

def lanes_slot(x, index):
    """A zero array shaped like x[index] (for lining a written value up with the slot it
    fills: rt.align_lanes reads its rank); None for a container, whose elements are
    written as they are (a new key included)."""
    if is_container(x):
        return None
    xp = array_module(x)
    x = xp.asarray(x)
    return xp.broadcast_to(xp.zeros((), dtype=x.dtype), x.shape)[index]


# ---------------------------------------------------------------- sequences of examples

def lanes_items(x, outer=0):
    """list(x) per example of batched `x`: the rows of each example (its axis outer + 1),
    or the elements of a container (whose elements are batched)."""
    if is_container(x):
        return list(x)
    xp = array_module(x)
    x = xp.asarray(x)
    return [x[(slice(None),) * (outer + 1) + (i,)] for i in range(x.shape[outer + 1])]


def lanes_stack_like(g, x, x_batched, n=None, outer=0):
    """rt.to_like(g, x) per example: a container adjoint `g` in the container type of `x`,
    or, for an array `x`, its items stacked along each example's first axis (None items:
    zeros). Items are batched (or lane-less ones are repeated for every example)."""
    if isinstance(x, (tuple, list)):
        return type(x)(g)
    if not isinstance(g, (tuple, list)):
        return array_module(g).asarray(g)
    xp = array_module(x, *[v for v in g if v is not None])
    x = xp.asarray(x)
    k = outer + 1
    per = x.shape[_lead(outer, x_batched):]
    if n is None:
        n = x.shape[outer] if x_batched else next(
            np.shape(v)[outer] for v in g if v is not None and np.ndim(v) - k == len(per) - 1)
    lanes = x.shape[:outer] + (n,)
    dtype = np.result_type(*[getattr(v, "dtype", type(v)) for v in g if v is not None],
                           np.float32) if any(v is not None for v in g) else np.float64
    items = []
    for v in g:
        if v is None:
            items.append(xp.zeros(lanes + per[1:], dtype=dtype))
            continue
        v = xp.asarray(v)
        if v.ndim - outer == len(per) - 1:          # the same for every example
            v = xp.broadcast_to(xp.expand_dims(v, outer), lanes + v.shape[outer:])
        items.append(v)
    return xp.stack(items, axis=k)


def lanes_unstack_like(d, g, outer=0):
    """The adjoint of lanes_stack_like for `g`: `d` as a container of g's type (split along
    each example's first axis when `d` is an array)."""
    if not isinstance(g, (tuple, list)):
        return d
    items = list(d) if is_container(d) else lanes_items(d, outer)
    return type(g)(items)


# ---------------------------------------------------------------- lstsq

def lanes_lstsq(a, b, rcond=None, a_batched=True, b_batched=False, outer=0):
    """np.linalg.lstsq per example (numpy's takes one matrix): a loop over the examples,
    results stacked (the residuals of each example must then be all there or all absent)."""
    xp = array_module(a, b)
    k = outer + 1
    a = _with_lane(xp, a, a_batched, frames(outer, 1)[0])
    b = _with_lane(xp, b, b_batched, frames(outer, 1)[0])
    lanes = np.broadcast_shapes(a.shape[:k], b.shape[:k])
    a = xp.broadcast_to(a, lanes + a.shape[k:])
    b = xp.broadcast_to(b, lanes + b.shape[k:])
    results = [np.linalg.lstsq(a[i], b[i], rcond) for i in np.ndindex(*lanes)]
    sizes = {np.size(r[1]) for r in results}
    if len(sizes) > 1:
        raise TransformError("vmap of np.linalg.lstsq: some examples have residuals and "
                             "others not (their ranks differ); lstsq cannot stack them.")
    return tuple(xp.asarray(np.stack([r[j] for r in results])).reshape(
        lanes + np.shape(results[0][j])) for j in range(4))


# ---------------------------------------------------------------- multi_dot

def _chain_matrices(arrays, lanes):
    """The factors of np.linalg.multi_dot as matrices (a 1-D first one a row, a 1-D last
    one a column), each carrying `lanes` leading batch axes; and which ends were 1-D."""
    xp = array_module(*arrays)
    mats = [xp.asarray(x) for x in arrays]
    first, last = mats[0].ndim - lanes == 1, mats[-1].ndim - lanes == 1
    if first:
        mats[0] = mats[0][..., None, :]
    if last:
        mats[-1] = mats[-1][..., :, None]
    return xp, mats, first, last


def _unmatrix(r, first, last):
    if last:
        r = r[..., 0]
    if first:
        r = r[..., 0] if last else r[..., 0, :]
    return r


def lanes_multi_dot(arrays, lanes=0):
    """np.linalg.multi_dot(arrays) of every example, the arrays carrying `lanes` leading
    batch axes (all of them: vmap broadcasts the others first)."""
    if not isinstance(arrays, (list, tuple)):    # never a stack of factors: refuse to guess
        raise TransformError("np.linalg.multi_dot under vmap needs its factors as a list.")
    if lanes == 0:
        return np.linalg.multi_dot(arrays)
    xp, mats, first, last = _chain_matrices(arrays, lanes)
    r = mats[0]
    for m in mats[1:]:
        r = xp.matmul(r, m)
    return _unmatrix(r, first, last)


def lanes_multi_dot_adj(g, arrays, lanes=0):
    """The adjoints of np.linalg.multi_dot(arrays) (with `lanes` batch axes) for the
    cotangent `g`: a list, for factor i (prefix)^T g (suffix)^T."""
    xp, mats, first, last = _chain_matrices(arrays, lanes)
    if g is None:      # a zero cotangent (or tangent) left unset
        return [xp.zeros_like(xp.asarray(x)) for x in arrays]
    g = xp.asarray(g)
    if last:
        g = g[..., None]
    if first:
        g = g[..., None, :]
    n = len(mats)
    prefix, suffix = [None] * n, [None] * n
    for i in range(1, n):
        prefix[i] = mats[0] if i == 1 else xp.matmul(prefix[i - 1], mats[i - 1])
    for i in range(n - 2, -1, -1):
        suffix[i] = mats[-1] if i == n - 2 else xp.matmul(mats[i + 1], suffix[i + 1])
    out = []
    for i in range(n):
        d = g if prefix[i] is None else xp.matmul(xp.swapaxes(prefix[i], -1, -2), g)
        if suffix[i] is not None:
            d = xp.matmul(d, xp.swapaxes(suffix[i], -1, -2))
        out.append(xp.reshape(d, np.shape(arrays[i])))
    return out


def lanes_multi_dot_tangent(arrays, tangents, lanes=0):
    """The tangent of np.linalg.multi_dot(arrays): the sum over the factors with a tangent
    (not None) of the product with that factor replaced by it."""
    total = None
    tangents = [None] * len(arrays) if tangents is None else tangents
    for i, t in enumerate(tangents):
        if t is None:
            continue
        term = lanes_multi_dot(list(arrays[:i]) + [t] + list(arrays[i + 1:]), lanes)
        total = term if total is None else total + term
    if total is None:
        return array_module(*arrays).zeros_like(lanes_multi_dot(arrays, lanes))
    return total


def _swapped(arrays, *subs):
    """`arrays` as a list with the (index, value) pairs of `subs` put in."""
    out = list(arrays)
    for i, v in subs:
        out[i] = v
    return out


def lanes_multi_dot_adj_tangent(g, arrays, tangents, lanes=0):
    """The tangent of lanes_multi_dot_adj(g, arrays) for tangents of the arrays: for factor
    i, the sum over the other factors j with a tangent of the adjoint of i with factor j
    replaced by its tangent (factor i's adjoint does not read factor i)."""
    n = len(arrays)
    tangents = [None] * n if tangents is None else tangents
    out = []
    for i in range(n):
        total = None
        for j, t in enumerate(tangents):
            if t is None or j == i:
                continue
            term = lanes_multi_dot_adj(g, _swapped(arrays, (j, t)), lanes)[i]
            total = term if total is None else total + term
        out.append(array_module(g).zeros_like(lanes_multi_dot_adj(g, arrays, lanes)[i])
                   if total is None else total)
    return out


def lanes_multi_dot_tangent2(arrays, tangents, others, lanes=0):
    """The tangent of lanes_multi_dot_tangent(arrays, tangents) for tangents `others` of
    the arrays: the products with one factor i replaced by tangents[i] and another j by
    others[j], summed over i != j."""
    total = None
    tangents = [None] * len(arrays) if tangents is None else tangents
    others = [None] * len(arrays) if others is None else others
    for i, t in enumerate(tangents):
        for j, d in enumerate(others):
            if t is None or d is None or i == j:
                continue
            term = lanes_multi_dot(_swapped(arrays, (i, t), (j, d)), lanes)
            total = term if total is None else total + term
    if total is None:
        return array_module(*arrays).zeros_like(lanes_multi_dot(arrays, lanes))
    return total
