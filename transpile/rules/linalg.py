"""Linear algebra: products, inverses, decompositions.

The adjoints of `x1 @ x2` are bilinear helpers (`rt.matmul_adj_x1/x2`) whose rules are
written in terms of each other, so products differentiate to any order.
"""
from .core import batch, batch_lanes, batch_same, fwd, nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("@", "np.matmul")
def matmul(dout, out, x1, x2):
    dx1 = rt.matmul_adj_x1(dout, x2, x1)
    dx2 = rt.matmul_adj_x2(x1, dout, x2)


@fwd("@", "np.matmul")
def matmul_fwd(out, x1, x2):
    dout = dx1 @ x2
    dout = x1 @ dx2


@batch("@", "np.matmul")
def matmul_batch(x1, x2):
    out = rt.lanes_matmul(x1, x2, x1_batched, x2_batched)


@rev("rt.matmul_adj_x1")
def matmul_adj_x1(dout, out, g, x2, x1):
    dg = rt.unbroadcast(dout @ x2, g)
    dx2 = rt.matmul_adj_x2(dout, g, x2)


@fwd("rt.matmul_adj_x1")
def matmul_adj_x1_fwd(out, g, x2, x1):
    dout = rt.matmul_adj_x1(dg, x2, x1)
    dout = rt.matmul_adj_x1(g, dx2, x1)


@batch("rt.matmul_adj_x1")
def matmul_adj_x1_batch(g, x2, x1):
    out = rt.lanes_matmul_adj_x1(rt.broadcast_batch(g, batch_size, g_batched),
                                 x1 if x1_batched else rt.lanes_view(x1, batch_size), x2,
                                 True, x2_batched)


@rev("rt.matmul_adj_x2")
def matmul_adj_x2(dout, out, x1, g, x2):
    dx1 = rt.matmul_adj_x1(g, dout, x1)
    dg = rt.unbroadcast(x1 @ dout, g)


@fwd("rt.matmul_adj_x2")
def matmul_adj_x2_fwd(out, x1, g, x2):
    dout = rt.matmul_adj_x2(dx1, g, x2)
    dout = rt.matmul_adj_x2(x1, dg, x2)


@batch("rt.matmul_adj_x2")
def matmul_adj_x2_batch(x1, g, x2):
    out = rt.lanes_matmul_adj_x2(rt.broadcast_batch(g, batch_size, g_batched), x1,
                                 x2 if x2_batched else rt.lanes_view(x2, batch_size),
                                 x1_batched, True)


@rev("np.dot")
def dot(dout, out, a, b):
    da = rt.dot_adj_a(dout, b, a)
    db = rt.dot_adj_b(a, dout, b)


@fwd("np.dot")
def dot_fwd(out, a, b):
    dout = np.dot(da, b)
    dout = np.dot(a, db)


@batch("np.dot")
def dot_batch(a, b):
    out = rt.batched_dot(a, b, a_batched, b_batched)


@rev("rt.dot_adj_a")
def dot_adj_a(dout, out, g, b, a):
    dg = np.dot(dout, b)
    db = rt.dot_adj_b(dout, g, b)


@fwd("rt.dot_adj_a")
def dot_adj_a_fwd(out, g, b, a):
    dout = rt.dot_adj_a(dg, b, a)
    dout = rt.dot_adj_a(g, db, a)


@batch("rt.dot_adj_a")
def dot_adj_a_batch(g, b, a):
    out = rt.batched_dot_adj_a(rt.broadcast_batch(g, batch_size, g_batched),
                               a if a_batched else rt.lanes_view(a, batch_size), b, True,
                               b_batched)


@rev("rt.dot_adj_b")
def dot_adj_b(dout, out, a, g, b):
    da = rt.dot_adj_a(g, dout, a)
    dg = np.dot(a, dout)


@fwd("rt.dot_adj_b")
def dot_adj_b_fwd(out, a, g, b):
    dout = rt.dot_adj_b(da, g, b)
    dout = rt.dot_adj_b(a, dg, b)


@batch("rt.dot_adj_b")
def dot_adj_b_batch(a, g, b):
    out = rt.batched_dot_adj_b(rt.broadcast_batch(g, batch_size, g_batched), a,
                               b if b_batched else rt.lanes_view(b, batch_size), a_batched,
                               True)


# ---------------------------------------------------------------- einsum and friends
# Adjoints are einsums with rearranged subscripts: `rt.einsum_swap(spec, i)` exchanges
# slot i's subscripts with the output's, and `rt.einsum_gen` evaluates it (placing values
# on diagonals or broadcasting where operand i repeats or alone carries a letter). The
# templates list nine argument slots (`subscripts`, op0..op7); unused slots stay None and
# their lines vanish. `rt.einsum_spec` marks the slots that hold subscripts '_': the string
# of the string form, the sublists of the sublist form np.einsum(a, [0, 1], b, [1, 2]),
# whose operands are in `subscripts`, op1, op3, ... (a line whose argument is not
# differentiated is not emitted, so a '_' slot never gets an adjoint).

@rev("np.einsum")
def einsum(dout, out, subscripts, op0=None, op1=None, op2=None, op3=None, op4=None,
           op5=None, op6=None, op7=None, optimize=False):
    spec = rt.einsum_spec(subscripts, op0, op1, op2, op3, op4, op5, op6, op7)
    dsubscripts = rt.einsum_gen(rt.einsum_swap(spec, 0), subscripts, dout, op0, op1, op2, op3, op4,
                                op5, op6, op7)
    dop0 = rt.einsum_gen(rt.einsum_swap(spec, 1), op0, subscripts, dout, op1, op2, op3, op4, op5,
                         op6, op7)
    dop1 = rt.einsum_gen(rt.einsum_swap(spec, 2), op1, subscripts, op0, dout, op2, op3, op4, op5,
                         op6, op7)
    dop2 = rt.einsum_gen(rt.einsum_swap(spec, 3), op2, subscripts, op0, op1, dout, op3, op4, op5,
                         op6, op7)
    dop3 = rt.einsum_gen(rt.einsum_swap(spec, 4), op3, subscripts, op0, op1, op2, dout, op4, op5,
                         op6, op7)
    dop4 = rt.einsum_gen(rt.einsum_swap(spec, 5), op4, subscripts, op0, op1, op2, op3, dout, op5,
                         op6, op7)
    dop5 = rt.einsum_gen(rt.einsum_swap(spec, 6), op5, subscripts, op0, op1, op2, op3, op4, dout,
                         op6, op7)
    dop6 = rt.einsum_gen(rt.einsum_swap(spec, 7), op6, subscripts, op0, op1, op2, op3, op4, op5,
                         dout, op7)
    dop7 = rt.einsum_gen(rt.einsum_swap(spec, 8), op7, subscripts, op0, op1, op2, op3, op4, op5,
                         op6, dout)


@fwd("np.einsum")
def einsum_fwd(out, subscripts, op0=None, op1=None, op2=None, op3=None, op4=None, op5=None,
               op6=None, op7=None, optimize=False):
    """Multilinear: one term per operand, the operand replaced by its tangent."""
    spec = rt.einsum_spec(subscripts, op0, op1, op2, op3, op4, op5, op6, op7)
    dout = rt.einsum_gen(rt.einsum_term(spec, 0), out, dsubscripts, op0, op1, op2, op3, op4, op5,
                         op6, op7)
    dout = rt.einsum_gen(rt.einsum_term(spec, 1), out, subscripts, dop0, op1, op2, op3, op4, op5,
                         op6, op7)
    dout = rt.einsum_gen(rt.einsum_term(spec, 2), out, subscripts, op0, dop1, op2, op3, op4, op5,
                         op6, op7)
    dout = rt.einsum_gen(rt.einsum_term(spec, 3), out, subscripts, op0, op1, dop2, op3, op4, op5,
                         op6, op7)
    dout = rt.einsum_gen(rt.einsum_term(spec, 4), out, subscripts, op0, op1, op2, dop3, op4, op5,
                         op6, op7)
    dout = rt.einsum_gen(rt.einsum_term(spec, 5), out, subscripts, op0, op1, op2, op3, dop4, op5,
                         op6, op7)
    dout = rt.einsum_gen(rt.einsum_term(spec, 6), out, subscripts, op0, op1, op2, op3, op4, dop5,
                         op6, op7)
    dout = rt.einsum_gen(rt.einsum_term(spec, 7), out, subscripts, op0, op1, op2, op3, op4, op5,
                         dop6, op7)
    dout = rt.einsum_gen(rt.einsum_term(spec, 8), out, subscripts, op0, op1, op2, op3, op4, op5,
                         op6, dop7)


@batch("np.einsum")
def einsum_batch(subscripts, op0=None, op1=None, op2=None, op3=None, op4=None, op5=None,
                 op6=None, op7=None, optimize=False):
    out = rt.einsum_gen(rt.lanes_einsum_spec(subscripts, subscripts_batched, op0, op0_batched,
                                             op1, op1_batched, op2, op2_batched, op3,
                                             op3_batched, op4, op4_batched, op5, op5_batched,
                                             op6, op6_batched, op7, op7_batched),
                        None, subscripts, op0, op1, op2, op3, op4, op5, op6, op7)


@rev("rt.einsum_gen")
def einsum_gen(dout, out, spec, like, op0, op1=None, op2=None, op3=None, op4=None, op5=None,
               op6=None, op7=None, op8=None):
    dop0 = rt.einsum_gen(rt.einsum_swap(spec, 0), op0, dout, op1, op2, op3, op4, op5, op6, op7,
                         op8)
    dop1 = rt.einsum_gen(rt.einsum_swap(spec, 1), op1, op0, dout, op2, op3, op4, op5, op6, op7,
                         op8)
    dop2 = rt.einsum_gen(rt.einsum_swap(spec, 2), op2, op0, op1, dout, op3, op4, op5, op6, op7,
                         op8)
    dop3 = rt.einsum_gen(rt.einsum_swap(spec, 3), op3, op0, op1, op2, dout, op4, op5, op6, op7,
                         op8)
    dop4 = rt.einsum_gen(rt.einsum_swap(spec, 4), op4, op0, op1, op2, op3, dout, op5, op6, op7,
                         op8)
    dop5 = rt.einsum_gen(rt.einsum_swap(spec, 5), op5, op0, op1, op2, op3, op4, dout, op6, op7,
                         op8)
    dop6 = rt.einsum_gen(rt.einsum_swap(spec, 6), op6, op0, op1, op2, op3, op4, op5, dout, op7,
                         op8)
    dop7 = rt.einsum_gen(rt.einsum_swap(spec, 7), op7, op0, op1, op2, op3, op4, op5, op6, dout,
                         op8)
    dop8 = rt.einsum_gen(rt.einsum_swap(spec, 8), op8, op0, op1, op2, op3, op4, op5, op6, op7,
                         dout)


@fwd("rt.einsum_gen")
def einsum_gen_fwd(out, spec, like, op0, op1=None, op2=None, op3=None, op4=None, op5=None,
                   op6=None, op7=None, op8=None):
    dout = rt.einsum_gen(rt.einsum_term(spec, 0), like, dop0, op1, op2, op3, op4, op5, op6, op7,
                         op8)
    dout = rt.einsum_gen(rt.einsum_term(spec, 1), like, op0, dop1, op2, op3, op4, op5, op6, op7,
                         op8)
    dout = rt.einsum_gen(rt.einsum_term(spec, 2), like, op0, op1, dop2, op3, op4, op5, op6, op7,
                         op8)
    dout = rt.einsum_gen(rt.einsum_term(spec, 3), like, op0, op1, op2, dop3, op4, op5, op6, op7,
                         op8)
    dout = rt.einsum_gen(rt.einsum_term(spec, 4), like, op0, op1, op2, op3, dop4, op5, op6, op7,
                         op8)
    dout = rt.einsum_gen(rt.einsum_term(spec, 5), like, op0, op1, op2, op3, op4, dop5, op6, op7,
                         op8)
    dout = rt.einsum_gen(rt.einsum_term(spec, 6), like, op0, op1, op2, op3, op4, op5, dop6, op7,
                         op8)
    dout = rt.einsum_gen(rt.einsum_term(spec, 7), like, op0, op1, op2, op3, op4, op5, op6, dop7,
                         op8)
    dout = rt.einsum_gen(rt.einsum_term(spec, 8), like, op0, op1, op2, op3, op4, op5, op6, op7,
                         dop8)


@batch("rt.einsum_gen")
def einsum_gen_batch(spec, like, op0, op1=None, op2=None, op3=None, op4=None, op5=None,
                     op6=None, op7=None, op8=None):
    if like_batched:
        out = rt.einsum_gen(rt.lanes_spec(spec, op0_batched, op1_batched, op2_batched,
                                          op3_batched, op4_batched, op5_batched, op6_batched,
                                          op7_batched, op8_batched),
                            like, op0, op1, op2, op3, op4, op5, op6, op7, op8)
    else:
        out = rt.einsum_gen(rt.lanes_spec(spec, op0_batched, op1_batched, op2_batched,
                                          op3_batched, op4_batched, op5_batched, op6_batched,
                                          op7_batched, op8_batched),
                            rt.lanes_view(like, batch_size), op0, op1, op2, op3, op4, op5,
                            op6, op7, op8)


@rev("np.tensordot")
def tensordot(dout, out, a, b, axes=2):
    spec = rt.tensordot_spec(a, b, axes)
    da = rt.einsum_gen(rt.einsum_swap(spec, 0), a, dout, b)
    db = rt.einsum_gen(rt.einsum_swap(spec, 1), b, a, dout)


@fwd("np.tensordot")
def tensordot_fwd(out, a, b, axes=2):
    dout = np.tensordot(da, b, axes)
    dout = np.tensordot(a, db, axes)


@batch("np.tensordot")
def tensordot_batch(a, b, axes=2):
    out = rt.einsum_gen(rt.lanes_tensordot_spec(a, b, axes, a_batched, b_batched), None, a, b)


@rev("np.inner")
def inner(dout, out, a, b):
    spec = rt.inner_spec(a, b)
    da = rt.einsum_gen(rt.einsum_swap(spec, 0), a, dout, b)
    db = rt.einsum_gen(rt.einsum_swap(spec, 1), b, a, dout)


@fwd("np.inner")
def inner_fwd(out, a, b):
    dout = np.inner(da, b)
    dout = np.inner(a, db)


@batch("np.inner")
def inner_batch(a, b):
    out = rt.einsum_gen(rt.lanes_inner_spec(a, b, a_batched, b_batched), None, a, b)


@rev("np.outer")
def outer(dout, out, a, b):
    da = np.reshape(np.dot(dout, np.ravel(b)), np.shape(a))
    db = np.reshape(np.dot(np.ravel(a), dout), np.shape(b))


@fwd("np.outer")
def outer_fwd(out, a, b):
    dout = np.outer(da, b)
    dout = np.outer(a, db)


@batch("np.outer")
def outer_batch(a, b):
    if a_batched:
        if b_batched:
            out = np.einsum("ni,nj->nij", rt.flat_lanes(a), rt.flat_lanes(b))
        else:
            out = np.einsum("ni,j->nij", rt.flat_lanes(a), np.ravel(b))
    else:
        out = np.einsum("i,nj->nij", np.ravel(a), rt.flat_lanes(b))


@rev("np.vdot")
def vdot(dout, out, a, b):
    """vdot(a, b) = sum(conj(a) * b): antilinear in a, so a's adjoint is conjugated."""
    da = np.reshape(np.conj(dout * np.ravel(b)), np.shape(a))
    db = np.reshape(dout * np.conj(np.ravel(a)), np.shape(b))


@fwd("np.vdot")
def vdot_fwd(out, a, b):
    dout = np.vdot(da, b)
    dout = np.vdot(a, db)


@batch("np.vdot")
def vdot_batch(a, b):
    if a_batched:
        if b_batched:
            out = np.einsum("ni,ni->n", np.conj(rt.flat_lanes(a)), rt.flat_lanes(b))
        else:
            out = np.conj(rt.flat_lanes(a)) @ np.ravel(b)
    else:
        out = rt.flat_lanes(b) @ np.conj(np.ravel(a))


@rev("np.trace")
def trace(dout, out, a, offset=0, axis1=0, axis2=1):
    da = rt.trace_adj(dout, a, offset, axis1, axis2)


@fwd("np.trace")
def trace_fwd(out, a, offset=0, axis1=0, axis2=1):
    dout = np.trace(da, offset, axis1, axis2)


@batch("np.trace")
def trace_batch(a, offset=0, axis1=0, axis2=1):
    if a_batched:
        out = np.trace(a, offset, rt.lane_axis(axis1, a), rt.lane_axis(axis2, a))
    else:
        out = rt.cannot_batch("np.trace", "its offset or axes differ between examples")


@rev("rt.trace_adj")
def trace_adj(dout, out, g, a, offset=0, axis1=0, axis2=1):
    dg = np.trace(dout, offset, axis1, axis2)


@fwd("rt.trace_adj")
def trace_adj_fwd(out, g, a, offset=0, axis1=0, axis2=1):
    dout = rt.trace_adj(dg, a, offset, axis1, axis2)


@batch("rt.trace_adj")
def trace_adj_batch(g, a, offset=0, axis1=0, axis2=1):
    if g_batched:
        if a_batched:
            out = rt.trace_adj(g, a, offset, rt.lane_axis(axis1, a), rt.lane_axis(axis2, a))
        else:
            out = rt.trace_adj(g, rt.lanes_view(a, batch_size), offset,
                               rt.lane_axis(axis1, rt.lanes_view(a, batch_size)),
                               rt.lane_axis(axis2, rt.lanes_view(a, batch_size)))
    else:
        out = rt.trace_adj(rt.broadcast_batch(g, batch_size), a, offset,
                           rt.lane_axis(axis1, a), rt.lane_axis(axis2, a))


# ---------------------------------------------------------------- inverses, determinants

@rev("np.linalg.inv")
def inv(dout, out, a):
    out_t = np.swapaxes(out, -1, -2)
    da = -(out_t @ dout @ out_t)


@fwd("np.linalg.inv")
def inv_fwd(out, a):
    dout = -(out @ da @ out)


batch_same("np.linalg.inv")


@rev("np.linalg.det")
def det(dout, out, a):
    da = np.expand_dims(dout * out, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


@fwd("np.linalg.det")
def det_fwd(out, a):
    dout = out * np.sum(np.swapaxes(np.linalg.inv(a), -1, -2) * da, (-2, -1))


batch_same("np.linalg.det")


@rev("np.linalg.slogdet", container_out=True)
def slogdet(dout, out, a):
    """`out` is the pair (sign, logabsdet). With t = tr(a^-1 da), logabsdet moves by Re(t)
    and the sign by i Im(t) sign: a real sign is piecewise constant, a complex one (a
    phase) is not."""
    w = np.real(dout[1]) + np.imag(dout[0] * out[0]) * rt.imag_unit(a)
    da = np.expand_dims(w, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


@fwd("np.linalg.slogdet")
def slogdet_fwd(out, a):
    t = np.sum(np.swapaxes(np.linalg.inv(a), -1, -2) * da, (-2, -1))
    dout = ((t - np.real(t)) * out[0], np.real(t))


batch_same("np.linalg.slogdet")


@rev("np.linalg.solve")
def solve(dout, out, a, b):
    gb = rt.solve(np.swapaxes(a, -1, -2), dout)
    da = -rt.einsum_gen(rt.solve_spec(a, out), a, gb, out)
    db = rt.unbroadcast(gb, b)


@fwd("np.linalg.solve")
def solve_fwd(out, a, b):
    """d(a^-1 b) = a^-1 (db - da out); `da @ out` is an einsum that reads `out` as a (batch
    of) vector(s) where `b` was one. `db` is read as `b` is (np.linalg.solve, not rt.solve:
    they differ for a stack of matrices `a` and one matrix `b`)."""
    dout = np.linalg.solve(a, db)
    dout = -rt.solve(a, rt.einsum_gen(rt.einsum_swap(rt.solve_spec(a, out), 0), out, da, out))


@batch("np.linalg.solve")
def solve_batch(a, b):
    out = rt.lanes_solve(a, b, a_batched, b_batched)


# rt.solve has np.linalg.solve's derivative rules but its own primitive: it reads `b` as a
# vector by another rule (one axis fewer than `a`), so it batches differently.
@rev("rt.solve")
def rt_solve(dout, out, a, b):
    gb = rt.solve(np.swapaxes(a, -1, -2), dout)
    da = -rt.einsum_gen(rt.solve_spec(a, out), a, gb, out)
    db = rt.unbroadcast(gb, b)


@fwd("rt.solve")
def rt_solve_fwd(out, a, b):
    dout = rt.solve(a, db)
    dout = -rt.solve(a, rt.einsum_gen(rt.einsum_swap(rt.solve_spec(a, out), 0), out, da, out))


@batch("rt.solve")
def rt_solve_batch(a, b):
    out = rt.lanes_solve(a, b, a_batched, b_batched, True)


@rev("np.linalg.cholesky")
def cholesky(dout, out, a):
    """Symmetrized adjoint: `a` is taken to be symmetric, or Hermitian if complex (numpy reads
    its lower triangle). The transpose of the forward rule below: L^-T phi(L^T g) conj(L^-1)."""
    phi = rt.cholesky_phi(np.swapaxes(out, -1, -2) @ dout)
    l_inv = np.linalg.inv(out)
    s = np.swapaxes(l_inv, -1, -2) @ phi @ np.conj(l_inv)
    da = 0.5 * (s + np.conj(np.swapaxes(s, -1, -2)))


@fwd("np.linalg.cholesky")
def cholesky_fwd(out, a):
    """dL = L phi(L^-1 dA L^-H), for a symmetric (Hermitian) tangent dA."""
    l_inv = np.linalg.inv(out)
    dout = out @ rt.cholesky_phi(l_inv @ da @ np.conj(np.swapaxes(l_inv, -1, -2)))


batch_same("np.linalg.cholesky")


@rev("rt.cholesky_phi")
def cholesky_phi(dout, out, x):
    dx = rt.cholesky_phi(dout)


@fwd("rt.cholesky_phi")
def cholesky_phi_fwd(out, x):
    dout = rt.cholesky_phi(dx)


batch_same("rt.cholesky_phi")


@rev("np.linalg.norm")
def norm(dout, out, x, ord=None, axis=None, keepdims=False):
    """The vector 2-norm and the Frobenius norm (other orders raise in rt.expand_norm):
    conj(x) / |x|, real for complex x (see np.abs), and 0 at x = 0 as for np.abs (JAX
    gives nan there)."""
    safe = np.where(out == 0, 1.0, out)
    dx = rt.expand_norm(np.real(dout) / safe, x, ord, axis, keepdims) * np.conj(x)


@fwd("np.linalg.norm")
def norm_fwd(out, x, ord=None, axis=None, keepdims=False):
    safe = np.where(out == 0, 1.0, out)
    dout = np.sum(np.real(np.conj(x) * dx), rt.norm_axis(x, ord, axis), keepdims=keepdims) / safe


@batch("np.linalg.norm")
def norm_batch(x, ord=None, axis=None, keepdims=False):
    out = rt.lanes_norm(x, ord, axis, keepdims)


@rev("rt.expand_norm")
def expand_norm(dout, out, g, x, ord=None, axis=None, keepdims=False):
    dg = np.sum(dout, axis, keepdims=keepdims)


@fwd("rt.expand_norm")
def expand_norm_fwd(out, g, x, ord=None, axis=None, keepdims=False):
    dout = rt.expand_norm(dg, x, ord, axis, keepdims)


@batch("rt.expand_norm")
def expand_norm_batch(g, x, ord=None, axis=None, keepdims=False):
    if g_batched:
        if x_batched:
            out = rt.expand_norm(g, x, ord, rt.lanes_norm_axes(x, ord, axis), keepdims)
        else:
            out = rt.expand_norm(g, rt.lanes_view(x, batch_size), ord,
                                 rt.lanes_norm_axes(rt.lanes_view(x, batch_size), ord, axis),
                                 keepdims)
    else:
        out = rt.expand_norm(rt.broadcast_batch(g, batch_size), x, ord,
                             rt.lanes_norm_axes(x, ord, axis), keepdims)


nondiff("rt.einsum_spec", "rt.einsum_swap", "rt.einsum_term", "rt.tensordot_spec",
        "rt.inner_spec", "rt.solve_spec", "rt.norm_axis", "np.linalg.matrix_rank")


@batch("rt.einsum_spec", out_batched=False)
def einsum_spec_batch(subscripts, op0=None, op1=None, op2=None, op3=None, op4=None,
                      op5=None, op6=None, op7=None):
    out = rt.example_einsum_spec(subscripts, subscripts_batched, op0, op0_batched, op1,
                                 op1_batched, op2, op2_batched, op3, op3_batched, op4,
                                 op4_batched, op5, op5_batched, op6, op6_batched, op7,
                                 op7_batched)


@batch("rt.tensordot_spec", out_batched=False)
def tensordot_spec_batch(a, b, axes=2):
    if a_batched:
        if b_batched:
            out = rt.tensordot_spec(rt.lanes_probe(a), rt.lanes_probe(b), axes)
        else:
            out = rt.tensordot_spec(rt.lanes_probe(a), b, axes)
    else:
        out = rt.tensordot_spec(a, rt.lanes_probe(b), axes)


@batch("rt.inner_spec", out_batched=False)
def inner_spec_batch(a, b):
    if a_batched:
        if b_batched:
            out = rt.inner_spec(rt.lanes_probe(a), rt.lanes_probe(b))
        else:
            out = rt.inner_spec(rt.lanes_probe(a), b)
    else:
        out = rt.inner_spec(a, rt.lanes_probe(b))


@batch("rt.solve_spec", out_batched=False)
def solve_spec_batch(a, x):
    if a_batched:
        if x_batched:
            out = rt.solve_spec(rt.lanes_probe(a), rt.lanes_probe(x))
        else:
            out = rt.solve_spec(rt.lanes_probe(a), x)
    else:
        out = rt.solve_spec(a, rt.lanes_probe(x))


@batch("rt.norm_axis", out_batched=False)
def norm_axis_batch(x, ord=None, axis=None):
    out = rt.norm_axis(rt.lanes_probe(x), ord, axis)


batch_same("rt.einsum_swap", "rt.einsum_term", out_batched=False)


@batch("np.linalg.matrix_rank")
def matrix_rank_batch(A, tol=None, hermitian=False, rtol=None):
    out = rt.lanes_matrix_rank(A, tol, hermitian, rtol, A_batched, tol_batched, rtol_batched)


# np.linalg.cond is a ratio of singular values (or of norms): differentiable, but without a
# rule here. Refusing beats the zero gradient a nondiff mark would give.
@rev("np.linalg.cond")
def cond(dout, out, x, p=None):
    dx = rt.no_derivative("np.linalg.cond", "for the Frobenius condition number write "
                          "np.linalg.norm(x, 'fro') * np.linalg.norm(np.linalg.inv(x), 'fro'), "
                          "or give it a rule with @tp.custom_vjp.")


@fwd("np.linalg.cond")
def cond_fwd(out, x, p=None):
    dout = rt.no_derivative("np.linalg.cond", "for the Frobenius condition number write "
                            "np.linalg.norm(x, 'fro') * np.linalg.norm(np.linalg.inv(x), "
                            "'fro'), or give it a rule with @tp.custom_jvp.", dx)


batch_same("np.linalg.cond")


# ---------------------------------------------------------------- helpers of vmapped code
# Per-example ranks are known only at run time, so products that depend on them call
# helpers (runtime/lanes_linalg.py). An adjoint helper batched for per-example gradients
# (vmap of grad) keeps one adjoint per example: an argument that only lends its shape is
# viewed along the batch (rt.lanes_view), an unbatched cotangent is broadcast.


@rev("rt.lanes_matmul")
def lanes_matmul(dout, out, x1, x2, x1_batched, x2_batched, outer=0):
    dx1 = rt.lanes_matmul_adj_x1(dout, x1, x2, x1_batched, x2_batched, outer)
    dx2 = rt.lanes_matmul_adj_x2(dout, x1, x2, x1_batched, x2_batched, outer)


@fwd("rt.lanes_matmul")
def lanes_matmul_fwd(out, x1, x2, x1_batched, x2_batched, outer=0):
    dout = rt.lanes_matmul(dx1, x2, x1_batched, x2_batched, outer)
    dout = rt.lanes_matmul(x1, dx2, x1_batched, x2_batched, outer)


# adj_x1(g, x1, x2) is linear in g and x2 (x1 lends its shape); adj_x2 in g and x1
@rev("rt.lanes_matmul_adj_x1")
def lanes_matmul_adj_x1(dout, out, g, x1, x2, x1_batched, x2_batched, outer=0):
    dg = rt.lanes_matmul(dout, x2, x1_batched, x2_batched, outer)
    dx2 = rt.lanes_matmul_adj_x2(g, dout, x2, x1_batched, x2_batched, outer)


@fwd("rt.lanes_matmul_adj_x1")
def lanes_matmul_adj_x1_fwd(out, g, x1, x2, x1_batched, x2_batched, outer=0):
    dout = rt.lanes_matmul_adj_x1(dg, x1, x2, x1_batched, x2_batched, outer)
    dout = rt.lanes_matmul_adj_x1(g, x1, dx2, x1_batched, x2_batched, outer)


@rev("rt.lanes_matmul_adj_x2")
def lanes_matmul_adj_x2(dout, out, g, x1, x2, x1_batched, x2_batched, outer=0):
    dg = rt.lanes_matmul(x1, dout, x1_batched, x2_batched, outer)
    dx1 = rt.lanes_matmul_adj_x1(g, x1, dout, x1_batched, x2_batched, outer)


@fwd("rt.lanes_matmul_adj_x2")
def lanes_matmul_adj_x2_fwd(out, g, x1, x2, x1_batched, x2_batched, outer=0):
    dout = rt.lanes_matmul_adj_x2(dg, x1, x2, x1_batched, x2_batched, outer)
    dout = rt.lanes_matmul_adj_x2(g, dx1, x2, x1_batched, x2_batched, outer)


# einsum-shaped products: rt.einsum_gen with a batch letter on the batched operands and the
# output (rt.lanes_spec); its own rules then give every derivative.


# np.outer and np.vdot flatten each example


@rev("rt.lanes_solve")
def lanes_solve(dout, out, a, b, a_batched, b_batched, rt_rule=False, outer=0):
    """The rules of rt.solve on the padded operands (their shapes reshaped back)."""
    pa = np.reshape(a, rt.lanes_solve_shape(a, b, a_batched, b_batched, rt_rule, 0, outer))
    pb = np.reshape(b, rt.lanes_solve_shape(a, b, a_batched, b_batched, rt_rule, 1, outer))
    gb = rt.solve(np.swapaxes(pa, -1, -2), dout)
    da = np.reshape(-rt.einsum_gen(rt.solve_spec(pa, out), pa, gb, out), np.shape(a))
    db = np.reshape(rt.unbroadcast(gb, pb), np.shape(b))


@fwd("rt.lanes_solve")
def lanes_solve_fwd(out, a, b, a_batched, b_batched, rt_rule=False, outer=0):
    pa = np.reshape(a, rt.lanes_solve_shape(a, b, a_batched, b_batched, rt_rule, 0, outer))
    dout = rt.lanes_solve(a, db, a_batched, b_batched, rt_rule, outer)
    dout = -rt.solve(pa, rt.einsum_gen(rt.einsum_swap(rt.solve_spec(pa, out), 0), out,
                                       np.reshape(da, np.shape(pa)), out))


@rev("rt.lanes_norm")
def lanes_norm(dout, out, x, ord=None, axis=None, keepdims=False, outer=0):
    safe = np.where(out == 0, 1.0, out)
    dx = rt.expand_norm(np.real(dout) / safe, x, ord, rt.lanes_norm_axes(x, ord, axis, outer),
                        keepdims) * np.conj(x)


@fwd("rt.lanes_norm")
def lanes_norm_fwd(out, x, ord=None, axis=None, keepdims=False, outer=0):
    safe = np.where(out == 0, 1.0, out)
    dout = np.sum(np.real(np.conj(x) * dx),
                  rt.norm_axis(x, ord, rt.lanes_norm_axes(x, ord, axis, outer)),
                  keepdims=keepdims) / safe


# the helpers above, batched again (vmap of vmap): their `outer` goes up by one
nondiff("rt.lanes_view", "rt.lanes_probe", "rt.lanes_spec", "rt.example_einsum_spec",
        "rt.lanes_einsum_spec", "rt.lanes_tensordot_spec", "rt.lanes_inner_spec",
        "rt.lanes_solve_shape", "rt.lanes_norm_axes", "rt.lanes_matrix_rank")
batch_same("rt.lanes_spec", out_batched=False)


@batch("rt.lanes_solve_shape", out_batched=False)
def lanes_solve_shape_batch(a, b, batched_a, batched_b, rt_rule, which, outer=0):
    if a_batched:
        if b_batched:
            out = rt.lanes_solve_shape(rt.lanes_probe(a), rt.lanes_probe(b), batched_a,
                                       batched_b, rt_rule, which, outer)
        else:
            out = rt.lanes_solve_shape(rt.lanes_probe(a), b, batched_a, batched_b, rt_rule,
                                       which, outer)
    else:
        out = rt.lanes_solve_shape(a, rt.lanes_probe(b), batched_a, batched_b, rt_rule, which,
                                   outer)


@batch("rt.lanes_norm_axes", out_batched=False)
def lanes_norm_axes_batch(x, ord=None, axis=None, outer=0):
    out = rt.lanes_norm_axes(rt.lanes_probe(x), ord, axis, outer)
batch_lanes("rt.lanes_view", ("x",))
batch_lanes("rt.lanes_probe", ("x",), out_batched=False)
batch_lanes("rt.example_einsum_spec", ("subscripts",) + tuple(f"op{i}" for i in range(8)),
            out_batched=False)
batch_lanes("rt.lanes_einsum_spec", ("subscripts",) + tuple(f"op{i}" for i in range(8)),
            out_batched=False)
batch_lanes("rt.lanes_tensordot_spec", ("a", "b"), out_batched=False)
batch_lanes("rt.lanes_inner_spec", ("a", "b"), out_batched=False)
batch_lanes("rt.lanes_matrix_rank", ("A", "tol", "rtol"))
batch_lanes("rt.lanes_matmul", ("x1", "x2"), each=True)
batch_lanes("rt.lanes_matmul_adj_x1", ("g", "x1", "x2"))
batch_lanes("rt.lanes_matmul_adj_x2", ("g", "x1", "x2"))
batch_lanes("rt.lanes_solve", ("a", "b"))
batch_lanes("rt.lanes_norm", ("x",))
