"""Adjoint helpers for linear algebra, einsum and special functions (`rt.*` in generated code).

The workhorse is `einsum_gen`, einsum generalized so that its output subscripts may repeat a
letter (the result is placed on a diagonal) or name a letter no input has (the result is
broadcast along it, its size read from `like`). With that, the adjoint of an einsum with
respect to operand i is again an einsum_gen: swap operand i's subscripts with the output's
(`einsum_swap`) and put the output adjoint in operand i's slot. The family is closed, so
einsum, tensordot, inner and the helpers built on them differentiate to any order.
"""
import string

import numpy as np

from .adjoints import expand, unbroadcast
from .backend import array_module, to_host, with_device_version
from .errors import TransformError

try:  # re-exported so generated code can spell it `rt.logsumexp` (scipy is optional)
    from scipy.special import logsumexp  # noqa: F401
except ImportError:  # pragma: no cover
    logsumexp = None
logsumexp = with_device_version(logsumexp, "cupyx.scipy.special")
REEXPORTED = ["logsumexp"]

_LETTERS = string.ascii_letters


# ---------------------------------------------------------------- matmul

def matmul_adj_x1(g, x2, x1):
    """Adjoint of `x1 @ x2` with respect to x1, for any ranks (1-D operands included).

    Any ranks: a 1-D operand next to a batched one included.
    """
    if type(g) is np.ndarray and type(x2) is np.ndarray and type(x1) is np.ndarray and \
            g.ndim == 2 and x2.ndim == 2 and x1.ndim == 2:
        return g @ x2.T                 # the common case, kept fast
    xp = array_module(g, x2)
    n1, n2 = np.ndim(x1), np.ndim(x2)
    if n1 == 1 and n2 == 1:
        out = g * x2
    elif n2 == 1:                       # x1 (..., n, k) @ x2 (k,) -> g (..., n)
        out = xp.expand_dims(g, -1) * x2
    elif n1 == 1:                       # x1 (k,) @ x2 (..., k, m) -> g (..., m)
        out = xp.matmul(xp.expand_dims(g, -2), xp.swapaxes(x2, -1, -2))[..., 0, :]
    else:
        out = xp.matmul(g, xp.swapaxes(x2, -1, -2))
    return unbroadcast(out, x1)


def matmul_adj_x2(x1, g, x2):
    """Adjoint of `x1 @ x2` with respect to x2, for any ranks (1-D operands included)."""
    if type(g) is np.ndarray and type(x1) is np.ndarray and type(x2) is np.ndarray and \
            g.ndim == 2 and x1.ndim == 2 and x2.ndim == 2:
        return x1.T @ g
    xp = array_module(g, x1)
    n1, n2 = np.ndim(x1), np.ndim(x2)
    if n1 == 1 and n2 == 1:
        out = x1 * g
    elif n1 == 1:                       # x1 (k,) @ x2 (..., k, m) -> g (..., m)
        out = xp.expand_dims(x1, -1) * xp.expand_dims(g, -2)
    elif n2 == 1:                       # x1 (..., n, k) @ x2 (k,) -> g (..., n)
        out = xp.matmul(xp.swapaxes(x1, -1, -2), xp.expand_dims(g, -1))[..., 0]
    else:
        out = xp.matmul(xp.swapaxes(x1, -1, -2), g)
    return unbroadcast(out, x2)


# ---------------------------------------------------------------- einsum

def einsum_spec(subscripts, op0=None, op1=None, op2=None, op3=None, op4=None, op5=None,
                op6=None, op7=None):
    """The subscripts of `np.einsum(subscripts, op0, ...)` made explicit ('->' present, '...'
    replaced by letters), one per argument slot: slot 0 is `subscripts` itself, slot k + 1 is
    `op<k>`. A slot that holds subscripts rather than an operand is '_': the string in the
    string form ('_,ij,jk->ik'); the sublists of the sublist form, whose operands sit in
    slots 0, 2, 4, ... (`np.einsum(a, [0, 1], b, [1, 2], [0, 2])` -> 'ab,_,bc,_,_->ac')."""
    slots = [subscripts, op0, op1, op2, op3, op4, op5, op6, op7]
    if isinstance(subscripts, str):
        operands = [k for k in range(1, 9) if slots[k] is not None]
        text = subscripts.replace(" ", "")
        n = len(operands) + 1
    else:
        n = max(k for k in range(9) if slots[k] is not None) + 1
        operands = list(range(0, n - n % 2, 2))
        text = ",".join(_sublist_letters(slots[k + 1]) for k in operands)
        if n % 2:
            text += "->" + _sublist_letters(slots[n - 1])
    ins, rhs = _explicit(text, [slots[k] for k in operands])
    out = ["_"] * n
    for k, sub in zip(operands, ins):
        out[k] = sub
    return ",".join(out) + "->" + rhs


def _sublist_letters(sublist):
    """np.einsum's sublist [0, 1, Ellipsis] as subscripts 'ab...'."""
    return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sublist)


def _explicit(spec, ops):
    """(input subscripts, output subscripts) of an einsum spec string, '...' replaced by
    letters and the implicit output (no '->') spelled out."""
    if "->" in spec:
        lhs, rhs = spec.split("->")
        explicit = True
    else:
        lhs, rhs, explicit = spec, None, False
    ins = lhs.split(",")
    ops = ops[:len(ins)]
    used = set(c for c in spec if c.isalpha())
    free = [c for c in _LETTERS if c not in used]
    n_ell = 0
    for sub, op in zip(ins, ops):
        if "..." in sub:
            n_ell = max(n_ell, np.ndim(op) - (len(sub) - 3))
    ell = "".join(free[:n_ell])
    new_ins = []
    for sub, op in zip(ins, ops):
        if "..." in sub:
            k = np.ndim(op) - (len(sub) - 3)
            sub = sub.replace("...", ell[n_ell - k:] if k else "")
        new_ins.append(sub)
    if not explicit:
        letters = "".join(new_ins)
        singles = sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell)
        rhs = ell + "".join(singles)
    else:
        rhs = rhs.replace("...", ell)
    return new_ins, rhs


def einsum_swap(spec, i):
    """`spec` with operand i's subscripts and the output's exchanged (the adjoint of operand
    i); NO_ADJOINT where slot i holds subscripts, not an operand."""
    lhs, rhs = spec.split("->")
    ins = lhs.split(",")
    if ins[i] == "_":
        return NO_ADJOINT
    ins[i], rhs = rhs, ins[i]
    return ",".join(ins) + "->" + rhs


def einsum_term(spec, i):
    """The spec of the forward-mode term that carries slot i's tangent: `spec`, or `spec`
    marked zero (ZERO + spec) where slot i holds subscripts: the "tangent" of a sublist is
    no operand, and the term is zeros shaped like the result."""
    if spec.startswith(ZERO) or spec.split("->")[0].split(",")[i] != "_":
        return spec
    return ZERO + spec


NO_ADJOINT = "0"   # einsum_gen returns None: the adjoint of a slot that holds subscripts
ZERO = "0:"        # einsum_gen returns zeros shaped like its result


def einsum_gen(spec, like, op0, op1=None, op2=None, op3=None, op4=None, op5=None, op6=None,
               op7=None, op8=None):
    """np.einsum(spec, ops...) where the output may repeat letters or add new ones.

    A repeated output letter places values on the diagonal (zeros elsewhere); a letter in no
    input broadcasts, with its size taken from `like`'s shape. Where `like` has size 1 but
    the inputs broadcast to more, the result is summed back to `like`'s shape. A slot whose
    subscripts are '_' is not an operand (np.einsum's subscripts, see einsum_spec).
    """
    if spec == NO_ADJOINT:
        return None
    zero = spec.startswith(ZERO)
    lhs, rhs = spec[len(ZERO):].split("->") if zero else spec.split("->")
    ins = lhs.split(",")
    ops = [op0, op1, op2, op3, op4, op5, op6, op7, op8][:len(ins)]
    if "_" in ins:
        ops = [op for sub, op in zip(ins, ops) if sub != "_"]
        ins = [sub for sub in ins if sub != "_"]
        lhs = ",".join(ins)
    xp = array_module(*ops)
    sizes = {}
    for sub, op in zip(ins, ops):
        for c, n in zip(sub, np.shape(op)):
            if n != 1 or c not in sizes:
                sizes[c] = n
    like_shape = np.shape(like) if like is not None else None
    for pos, c in enumerate(rhs):
        if c not in sizes:
            if like_shape is None:
                raise TransformError(f"einsum_gen: output letter {c!r} needs a shape")
            sizes[c] = like_shape[pos]
    if zero:
        return xp.zeros(like_shape if like_shape is not None else
                        tuple(sizes[c] for c in rhs),
                        np.result_type(*(getattr(op, "dtype", np.float64) for op in ops)))
    uniq = "".join(dict.fromkeys(rhs))
    present = "".join(c for c in uniq if any(c in s for s in ins))
    r = np.einsum(lhs + "->" + present, *ops, optimize=len(ops) > 2) if xp is np else \
        xp.einsum(lhs + "->" + present, *ops)
    if present != uniq:
        r = xp.reshape(r, tuple(sizes[c] if c in present else 1 for c in uniq))
        r = xp.broadcast_to(r, tuple(sizes[c] for c in uniq))
    if uniq != rhs:  # repeated letters: place on the diagonal
        full = xp.zeros(tuple(sizes[c] for c in rhs), dtype=r.dtype)
        grids = np.indices(tuple(sizes[c] for c in uniq), sparse=True)
        full[tuple(grids[uniq.index(c)] for c in rhs)] = r
        r = full
    if like_shape is not None and np.shape(r) != like_shape and len(like_shape) == r.ndim:
        axes = tuple(i for i, (m, n) in enumerate(zip(like_shape, r.shape)) if m == 1 and n != 1)
        r = xp.sum(r, axis=axes, keepdims=True)
    return r


def tensordot_spec(a, b, axes=2):
    """einsum subscripts equal to np.tensordot(a, b, axes)."""
    na, nb = np.ndim(a), np.ndim(b)
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(na - axes, na))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        ax_a = [x % na for x in ax_a]
        ax_b = [x % nb for x in ax_b]
    letters = iter(_LETTERS)
    sa = [next(letters) for _ in range(na)]
    sb = [next(letters) for _ in range(nb)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [sa[i] for i in range(na) if i not in ax_a] + \
          [sb[j] for j in range(nb) if j not in ax_b]
    return "".join(sa) + "," + "".join(sb) + "->" + "".join(out)


def inner_spec(a, b):
    """einsum subscripts equal to np.inner(a, b) (the last axes are contracted)."""
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0:
        sa, sb = _LETTERS[:na], _LETTERS[na:na + nb]
        return sa + "," + sb + "->" + sa + sb
    sa = _LETTERS[:na - 1] + "z"
    sb = _LETTERS[na - 1:na + nb - 2] + "z"
    return sa + "," + sb + "->" + sa[:-1] + sb[:-1]


# ---------------------------------------------------------------- solve, cholesky

def solve(a, b):
    """np.linalg.solve, where `b` is a (batch of) vector(s) iff b.ndim == a.ndim - 1.

    numpy 2 treats only 1-D `b` as a vector; adjoints of a batched solve with a vector
    right-hand side are batches of vectors, so the reverse pass needs this reading.
    """
    xp = array_module(a, b)
    if np.ndim(b) == np.ndim(a) - 1 and np.ndim(b) > 1:
        return xp.linalg.solve(a, b[..., None])[..., 0]
    return xp.linalg.solve(a, b)


def solve_spec(a, x):
    """einsum subscripts of the adjoint of `a` in `x = solve(a, b)`: -gb x^T (batched)."""
    na, nx = np.ndim(a), np.ndim(x)
    vector = nx == na - 1
    nbatch = nx - 1 if vector else nx - 2
    batch = _LETTERS[:nbatch]
    a_batch = batch[nbatch - (na - 2):] if na > 2 else ""
    if vector:
        return f"{batch}i,{batch}j->{a_batch}ij"
    return f"{batch}ik,{batch}jk->{a_batch}ij"


# ---------------------------------------------------------------- det's cofactors

def det_cofactor(a):
    """det(a) inv(a)^T, the derivative of np.linalg.det: the cofactor matrix. It is a
    polynomial in a's entries, defined at singular matrices too. det and inv come from the
    same LU factors, so their product is the cofactor matrix of a matrix within rounding of
    `a` (accurate however near singular); where a pivot is exactly 0 (inv raises, or gives
    inf on a GPU) it is read from the SVD instead."""
    xp = array_module(a)
    try:
        with np.errstate(all="ignore"):
            cofactor = xp.linalg.det(a)[..., None, None] * xp.swapaxes(xp.linalg.inv(a), -1, -2)
        if bool(xp.all(xp.isfinite(cofactor))) or not bool(xp.all(xp.isfinite(a))):
            return cofactor
    except np.linalg.LinAlgError:
        pass
    u, s, vh, phase = _det_svd(a)
    return phase * (xp.conj(u) * _products_but_one(s)[..., None, :]) @ xp.conj(vh)


def det_cofactor_jvp(a, h):
    """The derivative of det_cofactor(a) along h: det's second derivative, as a matrix.

    Written on the SVD a = u diag(s) vh, because the formula on inv(a) subtracts terms of
    size 1/det that cancel (Hessians of det near singular matrices were wrong in their
    first digit): adj is multiplicative, so d adj(a)[h] = phase vh^H d adj(diag(s))[k] u^H
    with k = u^H h vh^H, and d adj(diag(s))[k] = diag(P k_diag) - P * k off the diagonal,
    where P[i, j] is the product of all s but s_i and s_j: products, no division. The map
    is symmetric (a Hessian), so it is its own adjoint."""
    xp = array_module(a, h)
    u, s, vh, phase = _det_svd(a)
    pairs = _products_but_two(s)
    k = xp.swapaxes(xp.conj(u), -1, -2) @ h @ xp.swapaxes(xp.conj(vh), -1, -2)
    diagonal = (pairs @ xp.diagonal(k, 0, -2, -1)[..., None])[..., 0]
    n = s.shape[-1]
    inner = xp.eye(n, dtype=bool) * diagonal[..., None, :] - pairs * xp.swapaxes(k, -1, -2)
    return phase * xp.conj(u) @ inner @ xp.conj(vh)


def _det_svd(a):
    """(u, s, vh, det(u) det(vh)) of a = u diag(s) vh, the phase a [..., None, None] array."""
    xp = array_module(a)
    u, s, vh = xp.linalg.svd(a)
    phase = (xp.linalg.det(u) * xp.linalg.det(vh))[..., None, None]
    return u, s, vh, phase


def _products_but_one(s):
    """p[..., i] = the product of s[..., j] over j != i, by running products from both ends
    (no division: exact where some s are 0)."""
    xp = array_module(s)
    ones = xp.ones_like(s[..., :1])
    before = xp.cumprod(xp.concatenate([ones, s[..., :-1]], -1), -1)
    after = xp.flip(xp.cumprod(xp.flip(xp.concatenate([s[..., 1:], ones], -1), -1), -1), -1)
    return before * after


def _products_but_two(s):
    """p[..., i, j] = the product of s[..., k] over k != i, j (0 on the diagonal)."""
    xp = array_module(s)
    eye = xp.eye(s.shape[-1], dtype=bool)
    return xp.where(eye, 0, _products_but_one(xp.where(eye, 1, s[..., None, :])))


def cholesky_phi(x):
    """Lower triangle of `x` with the diagonal halved (the cholesky adjoint's projection).

    Linear and self-adjoint, so its rule is itself.
    """
    xp = array_module(x)
    n = np.shape(x)[-1]
    return xp.tril(x) - 0.5 * x * xp.eye(n, dtype=_dtype(x))


def _dtype(x):
    dt = getattr(x, "dtype", None)
    return dt if dt is not None and dt.kind in "fc" else np.dtype(np.float64)


# ---------------------------------------------------------------- norms, special functions

def expand_norm(g, x, ord=None, axis=None, keepdims=False):
    """`g` broadcast back over the axes np.linalg.norm(x, ord, axis) reduced."""
    return expand(g, x, norm_axis(x, ord, axis), keepdims)


def norm_axis(x, ord=None, axis=None):
    """`axis` of np.linalg.norm(x, ord, axis): the axes it reduces (None: all of them)."""
    return axis


def _norm_reduced(x, ord, axis, outer):
    """(the axes of `x` that np.linalg.norm(x, ord, axis) reduces, whether it is a matrix
    norm), the first `outer` axes of `x` being batch axes (vmap)."""
    nd = np.ndim(x) - outer
    if axis is None:
        return tuple(range(outer, outer + nd)), ord is not None and nd == 2
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(outer + a % nd for a in axes), len(axes) == 2


def _is_fro(ord):
    return ord is None or isinstance(ord, str) and ord == "fro"


def _svd_norm(ord, matrix):
    """Whether the norm reads singular values: the matrix norms 'nuc', 2 and -2."""
    return matrix and (ord == "nuc" if isinstance(ord, str) else ord in (2, -2))


def norm_power(x, ord=None, axis=None, outer=0):
    """The p of the norm's derivative conj(x) |x|^(p-2) share / |x|_p^(p-1): 2 for the
    Frobenius and 2-norm, ord for other vector p-norms, 1 for the norms that pick an
    extremum (max/min of |x| or of its row or column sums)."""
    _, matrix = _norm_reduced(x, ord, axis, outer)
    if _is_fro(ord):
        return 2
    if matrix or isinstance(ord, str) or ord in (0, np.inf, -np.inf):
        return 1
    return int(ord) if float(ord).is_integer() else float(ord)


def norm_share(x, ord=None, axis=None, outer=0):
    """The weight each element of `x` gets in the derivative of np.linalg.norm(x, ord,
    axis) besides conj(x) |x|^(p-2) (see norm_power): 1 for p-norms; for max/min norms the
    elements that attain the extremum (split evenly between ties, as np.max's rule does);
    0 for ord=0 (a count) and for the norms of singular values (their own term)."""
    axes, matrix = _norm_reduced(x, ord, axis, outer)
    if _is_fro(ord):
        return 1.0
    if isinstance(ord, str) or _svd_norm(ord, matrix) or (not matrix and ord == 0):
        return 0.0
    if not matrix and ord not in (np.inf, -np.inf):
        return 1.0
    xp = array_module(x)
    mag = xp.abs(x)
    if matrix:     # ord 1 / -1: largest / smallest column sum; inf / -inf: row sum
        summed, picked = (axes[0], axes[1]) if ord in (1, -1) else (axes[1], axes[0])
        mag = xp.sum(mag, axis=summed, keepdims=True)
        axes = (picked,)
    pick = xp.max if ord > 0 else xp.min
    hit = mag == pick(mag, axis=axes, keepdims=True)
    return hit / xp.sum(hit, axis=axes, keepdims=True)


def norm_svd_share(s, x, ord=None, axis=None, outer=0):
    """For the norms of singular values (matrix 'nuc', 2, -2): d norm / d s, for the
    singular values `s` of the matrices of `x` (1 for 'nuc'; the largest or smallest one,
    ties split evenly); 0 for other norms."""
    _, matrix = _norm_reduced(x, ord, axis, outer)
    xp = array_module(s)
    if not _svd_norm(ord, matrix):
        return xp.zeros_like(s)
    if isinstance(ord, str):
        return xp.ones_like(s)
    hit = s == (xp.max if ord > 0 else xp.min)(s, axis=-1, keepdims=True)
    return hit / xp.sum(hit, axis=-1, keepdims=True)


def norm_route(x, ord=None, axis=None, outer=0):
    """For the norms of singular values: `x` with the two matrix axes last (a stack of the
    matrices whose SVD the derivative reads). For any other norm a stack of 1 x 1 zero
    matrices, so that the derivative rule, which takes the SVD of the result either way,
    computes nothing of size there."""
    axes, matrix = _norm_reduced(x, ord, axis, outer)
    xp = array_module(x)
    if _svd_norm(ord, matrix):
        return xp.moveaxis(x, axes, (-2, -1))
    rest = tuple(n for i, n in enumerate(np.shape(x)) if i not in axes)
    return xp.zeros(rest + (1, 1), dtype=_dtype(x))


def norm_unroute(w, x, ord=None, axis=None, outer=0):
    """The transpose of norm_route: `w` (a stack of matrices) with its two last axes moved
    back to where np.linalg.norm reads them in `x`; zeros like `x` for the other norms."""
    axes, matrix = _norm_reduced(x, ord, axis, outer)
    xp = array_module(w, x)
    if _svd_norm(ord, matrix):
        return xp.moveaxis(w, (-2, -1), axes)
    return xp.zeros(np.shape(x), dtype=np.result_type(_dtype(x), _dtype(w)))


def logsumexp_value(result, return_sign=False):
    """logsumexp's result, as its derivative rules read it: with return_sign=True it is a
    (value, sign) pair, which they do not take."""
    if return_sign:
        raise TransformError("scipy.special.logsumexp(..., return_sign=True) has no "
                             "derivative rule.\n  hint: use return_sign=False (weights b of "
                             "one sign), or differentiate log|sum(b exp(a))| written out.")
    return result


def weight(w, b=None, return_sign=False):
    """`w * b`, or `w` when there are no weights `b` (logsumexp's adjoint of `a`). A term
    weighted 0 gives 0 also where its w overflowed (exp(a - out) of an `a` far above the
    result); `return_sign` is refused before (rt.logsumexp_value)."""
    if b is None:
        return w
    return array_module(w, b).where(b == 0, 0.0, w * b)


# ---------------------------------------------------------------- np.dot

def dot_adj_a(g, b, a):
    """Adjoint of `np.dot(a, b)` with respect to a (scalars, vectors and matrices)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(np.sum(g * b) if np.ndim(a) == 0 else g * b, a)
    if np.ndim(b) > 2 or np.ndim(a) > 2:
        return _dot_nd_adj_a(g, b, a)
    return matmul_adj_x1(g, b, a)


def dot_adj_b(a, g, b):
    """Adjoint of `np.dot(a, b)` with respect to b."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(np.sum(g * a) if np.ndim(b) == 0 else g * a, b)
    if np.ndim(b) > 2 or np.ndim(a) > 2:
        return _dot_nd_adj_b(a, g, b)
    return matmul_adj_x2(a, g, b)


def _dot_nd_adj_a(g, b, a):
    # dot(a, b)[i..., j..., l] = sum_k a[i..., k] b[j..., k, l]
    nb = np.ndim(b)
    if nb == 1:                       # dot(a, b)[i...] = sum_k a[i..., k] b[k]
        return np.multiply.outer(g, b)
    b_axes = [i for i in range(nb) if i != nb - 2]
    g_axes = list(range(np.ndim(a) - 1, np.ndim(g)))
    return np.tensordot(g, b, axes=(g_axes, b_axes))


def _dot_nd_adj_b(a, g, b):
    na, nb = np.ndim(a), np.ndim(b)
    a_lead = list(range(na - 1))
    g_lead = list(range(na - 1))
    t = np.tensordot(a, g, axes=(a_lead, g_lead))  # (k, j..., l)
    # move k to position nb - 2
    return np.moveaxis(t, 0, nb - 2)


# ---------------------------------------------------------------- eigh, svd

def gap_div(x, w):
    """x[..., i, j] / (w[..., j] - w[..., i]), 0 on the diagonal and wherever x is 0.

    The eigenvector (and singular vector) derivatives weigh V^H dA V by these inverse gaps.
    At a degenerate spectrum a gap is 0: as in JAX the result is then inf (or nan), except
    where x is exactly 0, which is what a function of the eigenvalues alone passes (its
    eigenvector cotangent is 0), so such functions keep finite derivatives there.
    """
    xp = array_module(x, w)
    gap = xp.expand_dims(w, -2) - xp.expand_dims(w, -1)
    skip = xp.eye(np.shape(w)[-1], dtype=bool) | (x == 0)
    return xp.where(skip, 0, x / xp.where(skip, 1, gap))


def div_nonzero(x, y):
    """x / y, but 0 wherever x is 0 (also where y is 0): for terms of a derivative that
    divide a cotangent or tangent by a singular value that may vanish."""
    xp = array_module(x, y)
    zero = x == 0
    return xp.where(zero, 0, x / xp.where(zero, 1, y))


def svd_factors(a, out, full_matrices=True, compute_uv=True, hermitian=False):
    """(U, S, Vh) of the reduced SVD of `a`, given `out` = np.linalg.svd(a, full_matrices,
    compute_uv, hermitian): `out` itself when it holds the vectors, else computed.

    Raises for the variants without a derivative rule (as JAX: the vectors of a full SVD
    of a non-square matrix; and hermitian=True)."""
    if hermitian:
        raise TransformError("np.linalg.svd(..., hermitian=True) has no derivative rule.\n"
                             "  hint: use hermitian=False (the default), or np.linalg.eigh.")
    if not compute_uv:
        xp = array_module(a)
        return xp.linalg.svd(a, full_matrices=False)
    if full_matrices and np.shape(a)[-2] != np.shape(a)[-1]:
        raise TransformError(
            "np.linalg.svd(a, full_matrices=True) of a non-square matrix has no derivative "
            "rule (the extra singular vectors are not unique; JAX refuses it too).\n"
            "  hint: pass full_matrices=False, or compute_uv=False for the singular values.")
    return out


def svd_cotangent(g, like, compute_uv=True):
    """The cotangent (or tangent) `g` of np.linalg.svd's result as a triple (gU, gS, gVh):
    `g` itself when the SVD computed the vectors, else (0, g, 0), shaped as like =
    (U, S, Vh). Each part is broadcast against `like`'s, so that a `g` shared by every
    example of a batched `like` (vmap) comes out batched like it."""
    xp = array_module(g, like[0])
    if compute_uv:
        return tuple(xp.broadcast_to(p, np.broadcast_shapes(np.shape(p), np.shape(q)))
                     for p, q in zip(g, like))
    lead = np.broadcast_shapes(np.shape(g)[:-1], np.shape(like[1])[:-1])
    dtype = np.result_type(like[0], g)
    return (xp.zeros(lead + np.shape(like[0])[-2:], dtype),
            xp.broadcast_to(g, lead + np.shape(g)[-1:]),
            xp.zeros(lead + np.shape(like[2])[-2:], dtype))


def svd_result(t, compute_uv=True):
    """The triple (U, S, Vh) (a tangent of one) as np.linalg.svd returns it: all of it, or
    S alone for compute_uv=False."""
    return t if compute_uv else t[1]


def svd_tall(u):
    """1.0 if the matrices `u` have more rows than columns, else 0.0: the SVD derivative's
    terms in the complement of the singular vectors exist only on the long side."""
    return 1.0 if np.shape(u)[-2] > np.shape(u)[-1] else 0.0


# ---------------------------------------------------------------- eig, matrix_power

def argmax_mask(v):
    """1.0 at the largest-magnitude entry of each column of `v` (the first one among ties),
    0.0 elsewhere: where LAPACK's geev makes each eigenvector real (np.linalg.eig)."""
    xp = array_module(v)
    k = xp.argmax(xp.abs(v), axis=-2)
    return (xp.arange(np.shape(v)[-2])[:, None] == xp.expand_dims(k, -2)).astype(np.float64)


def real_if_real(g, x):
    """`g`, made real where `x` is real: the adjoint of a real input whose function went
    through complex intermediates (the eigenvectors of a real matrix)."""
    if np.iscomplexobj(x) or not np.iscomplexobj(g):
        return g
    return array_module(g).real(g)


def block_place(x, corner):
    """The 2n x 2n matrices [[x, 0], [0, x]] (corner=0) or [[0, x], [0, 0]] (corner=1) of
    the n x n matrices `x`. A matrix function's derivative is the corner of the function of
    [[a, da], [0, a]] (np.linalg.matrix_power's rules)."""
    xp = array_module(x)
    n = np.shape(x)[-1]
    out = xp.zeros(np.shape(x)[:-2] + (2 * n, 2 * n), dtype=_dtype(x))
    if corner:
        out[..., :n, n:] = x
    else:
        out[..., :n, :n] = x
        out[..., n:, n:] = x
    return out


def block_take(m, corner):
    """The transpose of block_place: the sum of the diagonal n x n blocks of the 2n x 2n
    matrices `m` (corner=0) or their upper right block (corner=1)."""
    n = np.shape(m)[-1] // 2
    if corner:
        return m[..., :n, n:].copy()
    return m[..., :n, :n] + m[..., n:, n:]


# ---------------------------------------------------------------- qr

def qr_factors(a, out, mode="reduced"):
    """(Q, R) of the reduced QR decomposition of `a`, given out = np.linalg.qr(a, mode):
    `out` itself, or computed where mode='r' left Q out. Raises for the variants without a
    derivative rule: mode='complete' of a tall matrix (its extra columns of Q are not
    unique), mode='raw'."""
    if mode == "r":
        return array_module(a).linalg.qr(a)
    if mode == "complete" and np.shape(a)[-2] > np.shape(a)[-1]:
        raise TransformError(
            "np.linalg.qr(a, mode='complete') of a matrix with more rows than columns has no "
            "derivative rule (the extra columns of Q are not unique).\n"
            "  hint: use mode='reduced' (the default), or mode='r' for R alone.")
    if mode not in ("reduced", "complete"):
        raise TransformError(f"np.linalg.qr(a, mode={mode!r}) has no derivative rule.\n"
                             "  hint: use mode='reduced', 'complete' or 'r'.")
    return out


def qr_cotangent(g, like, mode="reduced"):
    """The cotangent (or tangent) `g` of np.linalg.qr's result as a pair (gQ, gR): `g`
    itself, or (0, g) for mode='r', shaped as like = (Q, R) (each part broadcast against
    `like`'s, as in svd_cotangent)."""
    xp = array_module(g, like[0])
    if mode != "r":
        return tuple(xp.broadcast_to(p, np.broadcast_shapes(np.shape(p), np.shape(q)))
                     for p, q in zip(g, like))
    lead = np.broadcast_shapes(np.shape(g)[:-2], np.shape(like[1])[:-2])
    return (xp.zeros(lead + np.shape(like[0])[-2:], np.result_type(like[0], g)),
            xp.broadcast_to(g, lead + np.shape(g)[-2:]))


def qr_result(t, mode="reduced"):
    """The pair (Q, R) (a tangent of one) as np.linalg.qr returns it: R alone for mode='r'."""
    return t[1] if mode == "r" else t


# ---------------------------------------------------------------- lstsq

def fixed_rank(p, a, rcond=None, rtol=None, lstsq=False):
    """`p` (np.linalg.pinv(a, ...), or what np.linalg.lstsq's rule computes with it), once
    the singular values of `a` that the cutoff drops are found to be zero to working
    precision: the derivative rules hold the rank fixed, which is the derivative only then
    (a dropped value of 0.1 moved pinv's gradient by 3e-3)."""
    shape = np.shape(a)
    eps = np.finfo(np.result_type(a, np.float32)).eps
    if rcond is None or (lstsq and np.ndim(rcond) == 0 and rcond < 0):
        rcond = rtol if rtol is not None else \
            (eps * max(shape[-2:]) if lstsq else 1e-15)
    if min(shape[-2:], default=0) == 0:
        return p
    s = to_host(np.linalg.svd(a, compute_uv=False))
    top = np.max(s, axis=-1, keepdims=True)
    dropped = np.where(s <= np.asarray(rcond)[..., None] * top, s, 0.0)
    if np.any(dropped > np.sqrt(eps) * top):
        what = "np.linalg.lstsq" if lstsq else "np.linalg.pinv"
        raise TransformError(
            f"{what} drops a singular value that is not zero here ({float(np.max(dropped)):.3g}"
            f", below the cutoff): its derivative rule holds the rank fixed, which is the "
            "derivative only where the dropped singular values are zero.\n  hint: lower rcond "
            "(rtol) below the smallest singular value, or differentiate through "
            "np.linalg.svd with the small values masked.")
    return p


def lstsq_res_cot(g, full):
    """The cotangent `g` of np.linalg.lstsq's residuals, or zeros shaped like `full` (the
    squared residual norms of every column) where lstsq returned no residuals (rank < n or
    m <= n: `g` is then empty)."""
    if np.size(g) or not np.size(full):
        return g
    return array_module(full).zeros_like(full)


def lstsq_res_tan(t, res):
    """The transpose of lstsq_res_cot: the tangent `t` of the squared residual norms, or an
    empty array where lstsq returned no residuals `res`."""
    if np.size(res) or not np.size(t):
        return t
    return t[..., :0]
