"""scipy.linalg for generated code: the re-exported functions, stacked versions of them, and
the small linear maps their derivative rules are written with.

Generated code imports only numpy and `runtime`, so scipy's functions are spelled
`rt.expm`, `rt.cho_solve`, ... (re-exported below; scipy is optional). scipy's functions
take one matrix; `rt.stacked_<name>` applies one to every matrix of a stack (the leading
axes of `a`, which every other array argument shares): derivative rules call those, so
that differentiating vmapped code and vmapping derivative code stay within the family.

Flags that say which triangle holds a factor (`lower`) may be arrays over the leading
axes (cho_factor's result under vmap carries one per example): the helpers below read
them aligned with the leading axes of the arrays.
"""
import numpy as np

from .backend import array_module
from .errors import TransformError

try:  # re-exported so generated code can spell them `rt.expm`, ... (scipy is optional)
    from scipy.linalg import (cho_factor, cho_solve, expm, lu_factor, lu_solve,  # noqa: F401
                              solve_sylvester, solve_triangular, sqrtm)
except ImportError:  # pragma: no cover
    cho_factor = cho_solve = expm = lu_factor = lu_solve = None
    solve_sylvester = solve_triangular = sqrtm = None
REEXPORTED = ["cho_factor", "cho_solve", "expm", "lu_factor", "lu_solve", "solve_sylvester",
              "solve_triangular", "sqrtm"]


# ---------------------------------------------------------------- stacks of matrices

def _flag(flag, index):
    """The value of a per-matrix flag for the matrix at `index` of the leading axes: a
    Python value, or an array over the first of those axes."""
    if np.ndim(flag) == 0:
        return bool(flag)
    return bool(np.asarray(flag)[index[:np.ndim(flag)]])


def _stacked(fn, lead, fallback):
    """fn(index) for every index of the leading shape `lead`, stacked; `fallback()` is the
    (shape, dtype) of one result, used for an empty stack."""
    results = [fn(index) for index in np.ndindex(*lead)]
    if not results:
        shape, dtype = fallback()
        return np.zeros(tuple(lead) + tuple(shape), dtype)
    return np.stack(results).reshape(tuple(lead) + np.shape(results[0]))


def _float_type(*arrays):
    return np.result_type(*arrays, np.float64)


def _check_stack(name, lead, rhs=None, *others):
    """Refuse arguments that do not share the leading axes `lead` (a right-hand side `rhs`:
    those axes, then one or two): scipy broadcasts such stacks itself, which the rules do
    not follow (vmap is the way to map these functions)."""
    ok = rhs is None or (np.shape(rhs)[:len(lead)] == tuple(lead) and
                         np.ndim(rhs) - len(lead) in (1, 2))
    ok = ok and all(np.shape(x)[:-2] == tuple(lead) for x in others)
    if not ok:
        shapes = ", ".join(str(np.shape(x)) for x in (rhs,) + others if x is not None)
        raise TransformError(f"scipy.linalg.{name} of stacked arguments that do not share "
                             f"their leading axes {tuple(lead)} ({shapes}) has no derivative "
                             f"rule.\n  hint: call it on single matrices, mapped with "
                             f"tp.vmap.")


def stacked_solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False):
    """scipy.linalg.solve_triangular for each matrix of a stack: `a` (..., n, n), `b` with
    the same leading axes and then (n,) or (n, k)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim == 2 and np.ndim(lower) == 0:
        return solve_triangular(a, b, trans, bool(lower), unit_diagonal)
    _check_stack("solve_triangular", a.shape[:-2], b)
    return _stacked(lambda i: solve_triangular(a[i], b[i], trans, _flag(lower, i),
                                               unit_diagonal),
                    a.shape[:-2], lambda: (b.shape[a.ndim - 2:], _float_type(a, b)))


def stacked_cho_factor(a, lower=False):
    """scipy.linalg.cho_factor for each matrix of a stack: (c, lower), where `lower` is an
    array over the leading axes when there are any."""
    a = np.asarray(a)
    if a.ndim == 2 and np.ndim(lower) == 0:
        return cho_factor(a, bool(lower))
    c = _stacked(lambda i: cho_factor(a[i], _flag(lower, i))[0], a.shape[:-2],
                 lambda: (a.shape[-2:], _float_type(a)))
    flags = np.broadcast_to(np.reshape(np.asarray(lower, bool), np.shape(lower) + (1,) * (
        a.ndim - 2 - np.ndim(lower))), a.shape[:-2]).copy()
    return c, flags


def stacked_cho_solve(c_and_lower, b):
    """scipy.linalg.cho_solve for each matrix of a stack (`c` (..., n, n), `lower` a bool or
    an array over the leading axes, `b` as for stacked_solve_triangular)."""
    c, lower = c_and_lower
    c, b = np.asarray(c), np.asarray(b)
    if c.ndim == 2 and np.ndim(lower) == 0:
        return cho_solve((c, bool(lower)), b)
    _check_stack("cho_solve", c.shape[:-2], b)
    return _stacked(lambda i: cho_solve((c[i], _flag(lower, i)), b[i]), c.shape[:-2],
                    lambda: (b.shape[c.ndim - 2:], _float_type(c, b)))


def stacked_lu_factor(a):
    """scipy.linalg.lu_factor for each matrix of a stack: (lu, piv) stacked."""
    a = np.asarray(a)
    if a.ndim == 2:
        return lu_factor(a)
    parts = [lu_factor(a[i]) for i in np.ndindex(*a.shape[:-2])]
    if not parts:
        return (np.zeros(a.shape, _float_type(a)),
                np.zeros(a.shape[:-2] + (min(a.shape[-2:]),), np.int32))
    lead = a.shape[:-2]
    return (np.stack([p[0] for p in parts]).reshape(lead + parts[0][0].shape),
            np.stack([p[1] for p in parts]).reshape(lead + parts[0][1].shape))


def stacked_lu_solve(lu_and_piv, b, trans=0):
    """scipy.linalg.lu_solve for each matrix of a stack."""
    lu, piv = lu_and_piv
    lu, piv, b = np.asarray(lu), np.asarray(piv), np.asarray(b)
    if lu.ndim == 2:
        return lu_solve((lu, piv), b, trans)
    _check_stack("lu_solve", lu.shape[:-2], b)
    return _stacked(lambda i: lu_solve((lu[i], piv[i]), b[i], trans), lu.shape[:-2],
                    lambda: (b.shape[lu.ndim - 2:], _float_type(lu, b)))


def stacked_expm(A):
    """scipy.linalg.expm for each matrix of a stack."""
    A = np.asarray(A)
    if A.ndim == 2:
        return expm(A)
    return _stacked(lambda i: expm(A[i]), A.shape[:-2], lambda: (A.shape[-2:], _float_type(A)))


def stacked_sqrtm(A):
    """scipy.linalg.sqrtm for each matrix of a stack (complex as soon as one root is)."""
    A = np.asarray(A)
    if A.ndim == 2:
        return sqrtm(A)
    return _stacked(lambda i: sqrtm(A[i]), A.shape[:-2], lambda: (A.shape[-2:], _float_type(A)))


def stacked_solve_sylvester(a, b, q):
    """scipy.linalg.solve_sylvester (a x + x b = q) for each matrix of a stack."""
    a, b, q = np.asarray(a), np.asarray(b), np.asarray(q)
    if a.ndim == 2:
        return solve_sylvester(a, b, q)
    _check_stack("solve_sylvester", a.shape[:-2], None, b, q)
    return _stacked(lambda i: solve_sylvester(a[i], b[i], q[i]), a.shape[:-2],
                    lambda: (q.shape[-2:], _float_type(a, b, q)))


# ---------------------------------------------------------------- linear maps of the rules

def _lower_mask(lower, x):
    """`lower` shaped to broadcast against the stack `x` (aligned with its leading axes)."""
    lower = np.asarray(lower, bool)
    return np.reshape(lower, lower.shape + (1,) * (np.ndim(x) - lower.ndim))


def _pick(lower, x, if_lower, if_upper):
    if np.ndim(lower) == 0:
        return if_lower() if lower else if_upper()
    return np.where(_lower_mask(lower, x), if_lower(), if_upper())


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def tri_part(x, lower, unit_diagonal=False):
    """The triangle of `x` that solve_triangular reads: the lower (or upper) one, without
    the diagonal where it is taken to be ones. A projection: its own adjoint."""
    k = 1 if unit_diagonal else 0
    return _pick(lower, x, lambda: np.tril(x, -k), lambda: np.triu(x, k))


def rest_part(x, lower):
    """The strict triangle of `x` opposite to `lower`'s: what cho_factor leaves as it
    found it. A projection: its own adjoint."""
    return _pick(lower, x, lambda: np.triu(x, 1), lambda: np.tril(x, -1))


def herm_part(x, lower):
    """The Hermitian matrix that LAPACK's Cholesky reads from `x`: the `lower` (or upper)
    strict triangle mirrored (conjugated), and the real part of the diagonal."""
    strict = tri_part(x, lower, True)
    return strict + _h(strict) + _real_diagonal(x)


def herm_part_adj(g, lower):
    """The adjoint of herm_part (for the pairing Re(sum(g * x))): the mirrored halves of `g`
    folded onto the triangle read, and the real part of its diagonal."""
    return tri_part(g + _h(g), lower, True) + _real_diagonal(g)


def _real_diagonal(x):
    """The matrix holding the real part of x's diagonal (zeros elsewhere), in x's array
    module and precision (np.eye would be a float64 host array)."""
    d = np.real(np.diagonal(x, 0, -2, -1))
    return d[..., None] * array_module(x).eye(np.shape(x)[-1], dtype=d.dtype)


def cho_l(c, lower):
    """The lower-triangular Cholesky factor L (a = L L^H) held by cho_factor's `c`: its
    lower triangle, or the conjugate transpose of its upper one. Adjoint: cho_pack."""
    return _pick(lower, c, lambda: np.tril(c), lambda: _h(np.triu(c)))


def cho_pack(l, lower):
    """A lower-triangular L written as cho_factor's `c` holds it (the other triangle zero):
    the inverse of cho_l on that triangle, and its adjoint."""
    return _pick(lower, l, lambda: np.tril(l), lambda: np.triu(_h(l)))


def herm_sum(x):
    """x + x^H (conjugate transpose of the last two axes); its own adjoint."""
    return x + _h(x)


def _trans(trans):
    codes = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}
    if isinstance(trans, (bool, np.bool_)) or trans not in codes:
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', not {trans!r}")
    return codes[trans]


def op_trans(x, trans):
    """op(x) of a solve with `trans`: x, its transpose, or its conjugate transpose (last two
    axes). Its own adjoint."""
    t = _trans(trans)
    return x if t == 0 else np.swapaxes(x, -1, -2) if t == 1 else _h(x)


def trans_conj(x, trans):
    """conj(x) where `trans` asks for the conjugate transpose, else x: with it the adjoint
    of a solve with op(a) = a^H, a solve with conj(a), is one scipy can do. Its own adjoint."""
    return np.conj(x) if _trans(trans) == 2 else x


def trans_adjoint(trans):
    """The `trans` of the solve that transposes a solve with `trans` (used with trans_conj):
    op(a)^-T is a^-T, a^-1, conj(a)^-1 for trans 0, 1, 2."""
    return 1 if _trans(trans) == 0 else 0


def lu_perm(piv, lu):
    """The permutation matrix P with a = P L U, from lu_factor's pivots (row i was
    exchanged with row piv[i], in order); a stack of them for stacked pivots."""
    if np.shape(lu)[-1] != np.shape(lu)[-2]:
        raise TransformError(f"scipy.linalg.lu_factor of a {np.shape(lu)[-2]}x"
                             f"{np.shape(lu)[-1]} matrix has no derivative rule (only square "
                             f"matrices do).")
    piv = np.asarray(piv)
    n = piv.shape[-1]
    perm = np.broadcast_to(np.arange(n), piv.shape).copy()
    rows = np.arange(perm[..., 0].size)
    flat, flat_piv = perm.reshape(-1, n), piv.reshape(-1, n)
    for i in range(n):
        j = flat_piv[:, i]
        flat[rows, i], flat[rows, j] = flat[rows, j], flat[rows, i].copy()
    eye = np.eye(n)
    return np.swapaxes(eye[flat.reshape(piv.shape)], -1, -2)
