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
from .backend import array_module
from .errors import TransformError

try:  # re-exported so generated code can spell it `rt.logsumexp` (scipy is optional)
    from scipy.special import logsumexp  # noqa: F401
except ImportError:  # pragma: no cover
    logsumexp = None
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
    """`g` broadcast back over the axes np.linalg.norm reduced (the 2-norm/Frobenius adjoint).

    Other orders have no rule yet: they raise here, when the derivative is first needed.
    """
    return expand(g, x, norm_axis(x, ord, axis), keepdims)


def norm_axis(x, ord=None, axis=None):
    """`axis` of np.linalg.norm(x, ord, axis), checked to be a supported (2-norm/Frobenius)
    case (forward mode sums `x * dx` over it)."""
    nd = np.ndim(x)
    n_axes = nd if axis is None else (1 if isinstance(axis, (int, np.integer)) else len(axis))
    ok = ord is None or (ord == "fro" and n_axes == 2) or \
        (not isinstance(ord, str) and ord == 2 and n_axes == 1)
    if not ok:
        raise TransformError(
            f"np.linalg.norm(..., ord={ord!r}) over {n_axes} axes has no derivative rule: "
            f"only the vector 2-norm and the Frobenius norm (ord=None or 'fro') are "
            f"supported.\n  hint: write the norm with np.sum/np.abs/np.max, or use "
            f"@tp.custom_vjp.")
    return axis


def weight(w, b=None, return_sign=False):
    """`w * b`, or `w` when there are no weights `b` (logsumexp's adjoint of `a`)."""
    if return_sign:
        raise TransformError("scipy.special.logsumexp(..., return_sign=True) has no "
                             "derivative rule.\n  hint: use return_sign=False.")
    return w if b is None else w * b


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
