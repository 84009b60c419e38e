"""scipy.linalg: triangular, Cholesky and LU solves, expm, sqrtm, solve_sylvester.

Generated code reaches scipy through runtime's re-exports (`rt.expm` is scipy.linalg.expm),
and its rules through `rt.stacked_<name>` (runtime/scipy_linalg.py), the same function
applied to each matrix of a stack. Each template below is registered for both (stacked
decorators): the scipy function's rows and the stacked helper's row share their rules, and
vmap turns the first into the second, whose own batching rule is the same again.

The factorizations are differentiated as the functions of numbers they are, so that
`cho_solve(cho_factor(a), b)` is right by the chain rule and so is any use of the factor:
cho_factor's `c` holds the Cholesky factor of the Hermitian matrix read from one triangle
of `a` and, in the other strict triangle, `a`'s own entries (LAPACK leaves them), and its
derivative is exactly that; lu_factor's `lu` packs L (unit diagonal, not stored) and U of
a = P L U, with the pivots piecewise constant. cho_solve and lu_solve read only the
triangles that hold the factors, and their rules differentiate only those.

Complex arguments follow the package's convention (the rules are the transposes of the
forward rules, without conjugation): expm, solve_sylvester, sqrtm, solve_triangular (trans
0 and 1) and lu_solve (0 and 1) are holomorphic; a solve with trans=2 and the Cholesky
functions (which conjugate one triangle into the other and read the diagonal's real part)
are not, which the conjugations in rt.op_trans, rt.trans_conj, rt.herm_part and
rt.cho_l carry.
"""
import gast

from .core import batch, fold, fwd, nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401

try:
    import scipy.linalg  # noqa: F401  (makes the scipy.linalg spellings resolvable)
except ImportError:  # pragma: no cover - the rows below are then registered without them
    pass


# ---------------------------------------------------------------- solve_triangular
# x = op(T)^-1 b, where T is the triangle of `a` read (unit diagonal: not read) and op is
# chosen by `trans`. dx = op(T)^-1 (db - op(dT) x); transposed: gb = op(T)^-T g (a solve
# with conj(T) for trans=2, done by conjugating around a plain one), and dT = -op(gb x^T)
# on the triangle read (rt.solve_spec: gb x^T for a vector or matrix right-hand side).

@rev("rt.stacked_solve_triangular")
@rev("rt.solve_triangular", "scipy.linalg.solve_triangular")
def solve_triangular(dout, out, a, b, trans=0, lower=False, unit_diagonal=False,
                     check_finite=True):
    gb = rt.trans_conj(rt.stacked_solve_triangular(a, rt.trans_conj(dout, trans),
                                                   rt.trans_adjoint(trans), lower,
                                                   unit_diagonal), trans)
    da = -rt.tri_part(rt.op_trans(rt.einsum_gen(rt.solve_spec(a, out), a, gb, out), trans),
                      lower, unit_diagonal)
    db = rt.unbroadcast(gb, b)


@fwd("rt.stacked_solve_triangular")
@fwd("rt.solve_triangular", "scipy.linalg.solve_triangular")
def solve_triangular_fwd(out, a, b, trans=0, lower=False, unit_diagonal=False,
                         check_finite=True):
    dout = rt.stacked_solve_triangular(a, db, trans, lower, unit_diagonal)
    dout = -rt.stacked_solve_triangular(
        a, rt.einsum_gen(rt.einsum_swap(rt.solve_spec(a, out), 0), out,
                         rt.op_trans(rt.tri_part(da, lower, unit_diagonal), trans), out),
        trans, lower, unit_diagonal)


@batch("rt.solve_triangular", "scipy.linalg.solve_triangular", "rt.stacked_solve_triangular")
def solve_triangular_batch(a, b, trans=0, lower=False, unit_diagonal=False,
                           check_finite=True):
    if trans_batched or unit_diagonal_batched:
        out = rt.cannot_batch("scipy.linalg.solve_triangular",
                              "its trans or unit_diagonal differs between examples")
    else:
        out = rt.stacked_solve_triangular(rt.broadcast_batch(a, batch_size, a_batched),
                                          rt.broadcast_batch(b, batch_size, b_batched), trans,
                                          rt.broadcast_batch(lower, batch_size, lower_batched),
                                          unit_diagonal)


# ---------------------------------------------------------------- cho_factor, cho_solve
# cho_factor(a) = (c, lower): with L = rt.cho_l(c, lower) (a = L L^H), c = rt.cho_pack(L) +
# rt.rest_part(a). L is the Cholesky factor of rt.herm_part(a): one triangle mirrored, the
# diagonal's real part, so its tangent is np.linalg.cholesky's for the tangent
# rt.herm_part(da), and its adjoint np.linalg.cholesky's (unsymmetrized) mapped back by
# rt.herm_part_adj. `lower` is out[1]: under vmap, an array of one flag per example.

@rev("rt.stacked_cho_factor", container_out=True)
@rev("rt.cho_factor", "scipy.linalg.cho_factor", container_out=True)
def cho_factor(dout, out, a, lower=False, check_finite=True):
    l = rt.cho_l(out[0], out[1])
    l_inv = np.linalg.inv(l)
    s = np.swapaxes(l_inv, -1, -2) @ rt.cholesky_phi(np.swapaxes(l, -1, -2) @
                                                     rt.cho_l(dout[0], out[1])) @ np.conj(l_inv)
    da = rt.herm_part_adj(s, out[1]) + rt.rest_part(dout[0], out[1])


@fwd("rt.stacked_cho_factor")
@fwd("rt.cho_factor", "scipy.linalg.cho_factor")
def cho_factor_fwd(out, a, lower=False, check_finite=True):
    l = rt.cho_l(out[0], out[1])
    l_inv = np.linalg.inv(l)
    dout = (rt.cho_pack(l @ rt.cholesky_phi(l_inv @ rt.herm_part(da, out[1]) @
                                            np.conj(np.swapaxes(l_inv, -1, -2))), out[1]) +
            rt.rest_part(da, out[1]), np.zeros(np.shape(out[1])))


@batch("rt.cho_factor", "scipy.linalg.cho_factor", "rt.stacked_cho_factor")
def cho_factor_batch(a, lower=False, check_finite=True):
    out = rt.stacked_cho_factor(rt.broadcast_batch(a, batch_size, a_batched),
                                rt.broadcast_batch(lower, batch_size, lower_batched))


# x = A^-1 b with A = L L^H, L = rt.cho_l(c): dA = dL L^H + L dL^H = rt.herm_sum(dL L^H).
# A is Hermitian, so A^-T g = conj(A^-1 conj(g)).

@rev("rt.stacked_cho_solve")
@rev("rt.cho_solve", "scipy.linalg.cho_solve")
def cho_solve(dout, out, c_and_lower, b, check_finite=True):
    gb = np.conj(rt.stacked_cho_solve(c_and_lower, np.conj(dout)))
    l = rt.cho_l(c_and_lower[0], c_and_lower[1])
    dc_and_lower = (-rt.cho_pack(rt.herm_sum(rt.einsum_gen(rt.solve_spec(l, out), l, gb, out))
                                 @ np.conj(l), c_and_lower[1]), None)
    db = rt.unbroadcast(gb, b)


@fwd("rt.stacked_cho_solve")
@fwd("rt.cho_solve", "scipy.linalg.cho_solve")
def cho_solve_fwd(out, c_and_lower, b, check_finite=True):
    l = rt.cho_l(c_and_lower[0], c_and_lower[1])
    dout = rt.stacked_cho_solve(c_and_lower, db)
    dout = -rt.stacked_cho_solve(c_and_lower, rt.einsum_gen(
        rt.einsum_swap(rt.solve_spec(l, out), 0), out,
        rt.herm_sum(rt.cho_l(dc_and_lower[0], c_and_lower[1]) @ np.conj(np.swapaxes(l, -1, -2))),
        out))


@batch("rt.cho_solve", "scipy.linalg.cho_solve", "rt.stacked_cho_solve")
def cho_solve_batch(c_and_lower, b, check_finite=True):
    out = rt.stacked_cho_solve(rt.broadcast_batch(c_and_lower, batch_size, c_and_lower_spec),
                               rt.broadcast_batch(b, batch_size, b_batched))


# ---------------------------------------------------------------- lu_factor, lu_solve
# a = P L U (square a; the pivots are piecewise constant). With F = L^-1 P^T da U^-1,
# dL = L tril(F, -1) and dU = triu(F) U, packed in one matrix as `lu` packs L and U; the
# triangular solves read L and U straight from `lu`.

@rev("rt.stacked_lu_factor", container_out=True)
@rev("rt.lu_factor", "scipy.linalg.lu_factor", container_out=True)
def lu_factor(dout, out, a, check_finite=True):
    p = rt.lu_perm(out[1], out[0])
    l = rt.tri_part(out[0], True, True) + np.eye(np.shape(out[0])[-1])
    u = rt.tri_part(out[0], False)
    gf = rt.tri_part(np.swapaxes(l, -1, -2) @ dout[0], True, True) + \
        rt.tri_part(dout[0] @ np.swapaxes(u, -1, -2), False)
    y = rt.stacked_solve_triangular(out[0], gf, 1, True, True)
    da = p @ np.swapaxes(
        rt.stacked_solve_triangular(out[0], np.swapaxes(y, -1, -2), 0, False), -1, -2)


@fwd("rt.stacked_lu_factor")
@fwd("rt.lu_factor", "scipy.linalg.lu_factor")
def lu_factor_fwd(out, a, check_finite=True):
    p = rt.lu_perm(out[1], out[0])
    l = rt.tri_part(out[0], True, True) + np.eye(np.shape(out[0])[-1])
    u = rt.tri_part(out[0], False)
    y = rt.stacked_solve_triangular(
        out[0], np.swapaxes(p, -1, -2) @ da, 0, True, True)
    f = np.swapaxes(rt.stacked_solve_triangular(out[0], np.swapaxes(y, -1, -2), 1, False),
                    -1, -2)
    dout = (l @ rt.tri_part(f, True, True) + rt.tri_part(f, False) @ u,
            np.zeros(np.shape(out[1])))


@batch("rt.lu_factor", "scipy.linalg.lu_factor", "rt.stacked_lu_factor")
def lu_factor_batch(a, check_finite=True):
    out = rt.stacked_lu_factor(a)


# x = op(A)^-1 b with A = P L U: as for solve_triangular, gb = op(A)^-T g and
# dA = -op(gb x^T), mapped onto L's strict lower and U's upper triangle of `lu`.

@rev("rt.stacked_lu_solve")
@rev("rt.lu_solve", "scipy.linalg.lu_solve")
def lu_solve(dout, out, lu_and_piv, b, trans=0, check_finite=True):
    gb = rt.trans_conj(rt.stacked_lu_solve(lu_and_piv, rt.trans_conj(dout, trans),
                                           rt.trans_adjoint(trans)), trans)
    l = rt.tri_part(lu_and_piv[0], True, True) + np.eye(np.shape(lu_and_piv[0])[-1])
    u = rt.tri_part(lu_and_piv[0], False)
    gm = -np.swapaxes(rt.lu_perm(lu_and_piv[1], lu_and_piv[0]), -1, -2) @ rt.op_trans(
        rt.einsum_gen(rt.solve_spec(lu_and_piv[0], out), lu_and_piv[0], gb, out), trans)
    dlu_and_piv = (rt.tri_part(gm @ np.swapaxes(u, -1, -2), True, True) +
                   rt.tri_part(np.swapaxes(l, -1, -2) @ gm, False), None)
    db = rt.unbroadcast(gb, b)


@fwd("rt.stacked_lu_solve")
@fwd("rt.lu_solve", "scipy.linalg.lu_solve")
def lu_solve_fwd(out, lu_and_piv, b, trans=0, check_finite=True):
    l = rt.tri_part(lu_and_piv[0], True, True) + np.eye(np.shape(lu_and_piv[0])[-1])
    u = rt.tri_part(lu_and_piv[0], False)
    dout = rt.stacked_lu_solve(lu_and_piv, db, trans)
    dout = -rt.stacked_lu_solve(lu_and_piv, rt.einsum_gen(
        rt.einsum_swap(rt.solve_spec(lu_and_piv[0], out), 0), out,
        rt.op_trans(rt.lu_perm(lu_and_piv[1], lu_and_piv[0]) @ (
            rt.tri_part(dlu_and_piv[0], True, True) @ u +
            l @ rt.tri_part(dlu_and_piv[0], False)), trans), out), trans)


@batch("rt.lu_solve", "scipy.linalg.lu_solve", "rt.stacked_lu_solve")
def lu_solve_batch(lu_and_piv, b, trans=0, check_finite=True):
    if trans_batched:
        out = rt.cannot_batch("scipy.linalg.lu_solve", "its trans differs between examples")
    else:
        out = rt.stacked_lu_solve(rt.broadcast_batch(lu_and_piv, batch_size, lu_and_piv_spec),
                                  rt.broadcast_batch(b, batch_size, b_batched), trans)


# ---------------------------------------------------------------- expm, sqrtm, sylvester
# The Frechet derivative of expm at A in direction E is the top right block of
# expm([[A, E], [0, A]]), and its transpose at G is the derivative at A^T in direction G.
# Written with expm itself, the rules differentiate again (a block matrix twice as large).

@rev("rt.stacked_expm")
@rev("rt.expm", "scipy.linalg.expm")
def expm(dout, out, A):
    n = np.shape(A)[-1]
    at = np.swapaxes(A, -1, -2)
    dA = rt.stacked_expm(np.concatenate([np.concatenate([at, dout], -1),
                                         np.concatenate([np.zeros_like(at), at], -1)],
                                        -2))[..., :n, n:]


@fwd("rt.stacked_expm")
@fwd("rt.expm", "scipy.linalg.expm")
def expm_fwd(out, A):
    n = np.shape(A)[-1]
    dout = rt.stacked_expm(np.concatenate([np.concatenate([A, dA], -1),
                                           np.concatenate([np.zeros_like(A), A], -1)],
                                          -2))[..., :n, n:]


@batch("rt.expm", "scipy.linalg.expm", "rt.stacked_expm")
def expm_batch(A):
    out = rt.stacked_expm(A)


# X = sqrtm(A), X X = A: X dX + dX X = dA, a Sylvester equation; its transpose solves
# X^T G' + G' X^T = G.

@rev("rt.stacked_sqrtm")
@rev("rt.sqrtm", "scipy.linalg.sqrtm")
def sqrtm(dout, out, A):
    xt = np.swapaxes(out, -1, -2)
    dA = rt.stacked_solve_sylvester(xt, xt, dout)


@fwd("rt.stacked_sqrtm")
@fwd("rt.sqrtm", "scipy.linalg.sqrtm")
def sqrtm_fwd(out, A):
    dout = rt.stacked_solve_sylvester(out, out, dA)


@batch("rt.sqrtm", "scipy.linalg.sqrtm", "rt.stacked_sqrtm")
def sqrtm_batch(A):
    out = rt.stacked_sqrtm(A)


# a X + X b = q: a dX + dX b = dq - da X - X db. The transposed equation
# a^T Gq + Gq b^T = G gives dq = Gq, da = -Gq X^T, db = -X^T Gq.

@rev("rt.stacked_solve_sylvester")
@rev("rt.solve_sylvester", "scipy.linalg.solve_sylvester")
def solve_sylvester(dout, out, a, b, q):
    gq = rt.stacked_solve_sylvester(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), dout)
    da = rt.unbroadcast(-(gq @ np.swapaxes(out, -1, -2)), a)
    db = rt.unbroadcast(-(np.swapaxes(out, -1, -2) @ gq), b)
    dq = rt.unbroadcast(gq, q)


@fwd("rt.stacked_solve_sylvester")
@fwd("rt.solve_sylvester", "scipy.linalg.solve_sylvester")
def solve_sylvester_fwd(out, a, b, q):
    dout = rt.stacked_solve_sylvester(a, b, dq)
    dout = -rt.stacked_solve_sylvester(a, b, da @ out)
    dout = -rt.stacked_solve_sylvester(a, b, out @ db)


@batch("rt.solve_sylvester", "scipy.linalg.solve_sylvester", "rt.stacked_solve_sylvester")
def solve_sylvester_batch(a, b, q):
    out = rt.stacked_solve_sylvester(rt.broadcast_batch(a, batch_size, a_batched),
                                     rt.broadcast_batch(b, batch_size, b_batched),
                                     rt.broadcast_batch(q, batch_size, q_batched))


# ---------------------------------------------------------------- the rules' linear maps
# Each is linear (over the reals) and maps stacks matrix by matrix; `lower` may be an array
# over the leading axes. Batching broadcasts what is not batched.

@rev("rt.tri_part")
def tri_part(dout, out, x, lower, unit_diagonal=False):
    dx = rt.tri_part(dout, lower, unit_diagonal)


@fwd("rt.tri_part")
def tri_part_fwd(out, x, lower, unit_diagonal=False):
    dout = rt.tri_part(dx, lower, unit_diagonal)


@batch("rt.tri_part")
def tri_part_batch(x, lower, unit_diagonal=False):
    if unit_diagonal_batched:
        out = rt.cannot_batch("rt.tri_part", "its unit_diagonal differs between examples")
    else:
        out = rt.tri_part(rt.broadcast_batch(x, batch_size, x_batched),
                          rt.broadcast_batch(lower, batch_size, lower_batched), unit_diagonal)


@rev("rt.rest_part")
def rest_part(dout, out, x, lower):
    dx = rt.rest_part(dout, lower)


@fwd("rt.rest_part")
def rest_part_fwd(out, x, lower):
    dout = rt.rest_part(dx, lower)


@batch("rt.rest_part")
def rest_part_batch(x, lower):
    out = rt.rest_part(rt.broadcast_batch(x, batch_size, x_batched),
                       rt.broadcast_batch(lower, batch_size, lower_batched))


@rev("rt.herm_part")
def herm_part(dout, out, x, lower):
    dx = rt.herm_part_adj(dout, lower)


@fwd("rt.herm_part")
def herm_part_fwd(out, x, lower):
    dout = rt.herm_part(dx, lower)


@batch("rt.herm_part")
def herm_part_batch(x, lower):
    out = rt.herm_part(rt.broadcast_batch(x, batch_size, x_batched),
                       rt.broadcast_batch(lower, batch_size, lower_batched))


@rev("rt.herm_part_adj")
def herm_part_adj(dout, out, g, lower):
    dg = rt.herm_part(dout, lower)


@fwd("rt.herm_part_adj")
def herm_part_adj_fwd(out, g, lower):
    dout = rt.herm_part_adj(dg, lower)


@batch("rt.herm_part_adj")
def herm_part_adj_batch(g, lower):
    out = rt.herm_part_adj(rt.broadcast_batch(g, batch_size, g_batched),
                           rt.broadcast_batch(lower, batch_size, lower_batched))


@rev("rt.cho_l")
def cho_l(dout, out, c, lower):
    dc = rt.cho_pack(dout, lower)


@fwd("rt.cho_l")
def cho_l_fwd(out, c, lower):
    dout = rt.cho_l(dc, lower)


@batch("rt.cho_l")
def cho_l_batch(c, lower):
    out = rt.cho_l(rt.broadcast_batch(c, batch_size, c_batched),
                   rt.broadcast_batch(lower, batch_size, lower_batched))


@rev("rt.cho_pack")
def cho_pack(dout, out, l, lower):
    dl = rt.cho_l(dout, lower)


@fwd("rt.cho_pack")
def cho_pack_fwd(out, l, lower):
    dout = rt.cho_pack(dl, lower)


@batch("rt.cho_pack")
def cho_pack_batch(l, lower):
    out = rt.cho_pack(rt.broadcast_batch(l, batch_size, l_batched),
                      rt.broadcast_batch(lower, batch_size, lower_batched))


@rev("rt.herm_sum")
def herm_sum(dout, out, x):
    dx = rt.herm_sum(dout)


@fwd("rt.herm_sum")
def herm_sum_fwd(out, x):
    dout = rt.herm_sum(dx)


@batch("rt.herm_sum")
def herm_sum_batch(x):
    out = rt.herm_sum(x)


@rev("rt.op_trans")
def op_trans(dout, out, x, trans):
    dx = rt.op_trans(dout, trans)


@fwd("rt.op_trans")
def op_trans_fwd(out, x, trans):
    dout = rt.op_trans(dx, trans)


@batch("rt.op_trans")
def op_trans_batch(x, trans):
    if trans_batched:
        out = rt.cannot_batch("scipy.linalg's trans", "it differs between examples")
    else:
        out = rt.op_trans(x, trans)


@rev("rt.trans_conj")
def trans_conj(dout, out, x, trans):
    dx = rt.trans_conj(dout, trans)


@fwd("rt.trans_conj")
def trans_conj_fwd(out, x, trans):
    dout = rt.trans_conj(dx, trans)


@batch("rt.trans_conj")
def trans_conj_batch(x, trans):
    if trans_batched:
        out = rt.cannot_batch("scipy.linalg's trans", "it differs between examples")
    else:
        out = rt.trans_conj(x, trans)


# With a literal `trans` (the usual case) generated code drops the maps that do nothing.
_TRANS_CODES = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}


def _trans_literal(node):
    """0, 1 or 2 for a literal trans argument, else None."""
    if isinstance(node, gast.Constant) and type(node.value) in (int, str):
        return _TRANS_CODES.get(node.value)
    return None


@fold("rt.op_trans")
def op_trans_fold(x, trans):
    return x if _trans_literal(trans) == 0 else None


@fold("rt.trans_conj")
def trans_conj_fold(x, trans):
    return x if _trans_literal(trans) in (0, 1) else None


@fold("rt.trans_adjoint")
def trans_adjoint_fold(trans):
    code = _trans_literal(trans)
    return None if code is None else gast.Constant(value=1 if code == 0 else 0, kind=None)


nondiff("rt.trans_adjoint", "rt.lu_perm")


@batch("rt.trans_adjoint")
def trans_adjoint_batch(trans):
    out = rt.cannot_batch("scipy.linalg's trans", "it differs between examples")


@batch("rt.lu_perm")
def lu_perm_batch(piv, lu):
    out = rt.lu_perm(rt.broadcast_batch(piv, batch_size, piv_batched),
                     rt.broadcast_batch(lu, batch_size, lu_batched))
