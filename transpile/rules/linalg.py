"""Linear algebra: products, inverses, decompositions.

The adjoints of `x1 @ x2` are bilinear helpers (`rt.matmul_adj_x1/x2`) whose rules are
written in terms of each other, so products differentiate to any order.
"""
import gast

from .core import batch, batch_elementwise, batch_lanes, batch_same, fold, fwd, nondiff, rev
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


@rev("rt.einsum_gen", view=(2, 3))
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
    da = np.expand_dims(dout, (-2, -1)) * rt.det_cofactor(a)


@fwd("np.linalg.det")
def det_fwd(out, a):
    dout = np.sum(rt.det_cofactor(a) * da, (-2, -1))


batch_same("np.linalg.det")


# det's derivative is the cofactor matrix det(a) inv(a)^T, a polynomial: its helpers hold at
# singular matrices, where the formulas on inv do not (runtime/linalg_helpers.py).
@rev("rt.det_cofactor")
def det_cofactor(dout, out, a):
    da = rt.det_cofactor_jvp(a, dout)


@fwd("rt.det_cofactor")
def det_cofactor_fwd(out, a):
    dout = rt.det_cofactor_jvp(a, da)


batch_same("rt.det_cofactor")


@rev("rt.det_cofactor_jvp")
def det_cofactor_jvp(dout, out, a, h):
    da = rt.no_derivative("np.linalg.det beyond its second derivative",
                          "its third derivative has no rule yet (add one next to "
                          "rt.det_cofactor_jvp in transpile/rules/linalg.py).")
    dh = rt.det_cofactor_jvp(a, dout)


@fwd("rt.det_cofactor_jvp")
def det_cofactor_jvp_fwd(out, a, h):
    dout = rt.no_derivative("np.linalg.det beyond its second derivative",
                            "its third derivative has no rule yet (add one next to "
                            "rt.det_cofactor_jvp in transpile/rules/linalg.py).", da)
    dout = rt.det_cofactor_jvp(a, dh)


@batch("rt.det_cofactor_jvp")
def det_cofactor_jvp_batch(a, h):
    out = rt.det_cofactor_jvp(rt.broadcast_batch(a, batch_size, a_batched),
                              rt.broadcast_batch(h, batch_size, h_batched))


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
def cholesky(dout, out, a, upper=False):
    """numpy reads one triangle of `a` (the lower one, the upper with upper=True), mirrored
    and conjugated, with its diagonal's real part (rt.herm_part), and returns L, or L^H with
    upper=True: L^-T phi(L^T g) conj(L^-1) is the adjoint for that Hermitian matrix, folded
    onto the triangle read (rt.herm_part_adj). The transpose of the forward rule below."""
    l = rt.cho_l(out, not upper)
    phi = rt.cholesky_phi(np.swapaxes(l, -1, -2) @ rt.cho_l(dout, not upper))
    l_inv = np.linalg.inv(l)
    da = rt.herm_part_adj(np.swapaxes(l_inv, -1, -2) @ phi @ np.conj(l_inv), not upper)


@fwd("np.linalg.cholesky")
def cholesky_fwd(out, a, upper=False):
    """dL = L phi(L^-1 dH L^-H), dH the Hermitian matrix read from the tangent."""
    l = rt.cho_l(out, not upper)
    l_inv = np.linalg.inv(l)
    dout = rt.cho_pack(l @ rt.cholesky_phi(l_inv @ rt.herm_part(da, not upper) @
                                           np.conj(np.swapaxes(l_inv, -1, -2))), not upper)


batch_same("np.linalg.cholesky")


@rev("rt.cholesky_phi")
def cholesky_phi(dout, out, x):
    dx = rt.cholesky_phi(dout)


@fwd("rt.cholesky_phi")
def cholesky_phi_fwd(out, x):
    dout = rt.cholesky_phi(dx)


batch_same("rt.cholesky_phi")


# ---------------------------------------------------------------- eigh, svd
# Eigenvector and singular vector derivatives weigh their rotations by inverse gaps
# 1 / (w_j - w_i) (rt.gap_div): 0 on the diagonal and, as in JAX, nothing special at a
# degenerate spectrum (inf or nan there), except that a zero cotangent gives zero, so
# functions of the eigenvalues (singular values) alone stay finite there.

@rev("np.linalg.eigh", container_out=True)
def eigh(dout, out, a, UPLO="L"):
    """`out` = (w, v) of the Hermitian matrix numpy reads from one triangle of `a`
    (rt.herm_part: the lower one unless UPLO is 'U'); the adjoint for that matrix is folded
    onto the triangle read (rt.herm_part_adj), as autograd's is: the transpose of the forward
    rule below."""
    vt = np.swapaxes(out[1], -1, -2)
    inner = np.expand_dims(np.real(dout[0]), -1) * vt + rt.gap_div(vt @ dout[1], out[0]) @ vt
    da = rt.herm_part_adj(np.conj(out[1]) @ inner, (UPLO != "U") & (UPLO != "u"))


@fwd("np.linalg.eigh")
def eigh_fwd(out, a, UPLO="L"):
    """With x = V^H dH V, dH the Hermitian matrix read from the tangent: dw = Re diag(x),
    dV = V (x / gaps)."""
    x = np.conj(np.swapaxes(out[1], -1, -2)) @ rt.herm_part(da, (UPLO != "U") & (UPLO != "u")) \
        @ out[1]
    dout = (np.real(np.diagonal(x, 0, -2, -1)), out[1] @ rt.gap_div(x, out[0]))


batch_same("np.linalg.eigh")


@rev("np.linalg.eigvalsh")
def eigvalsh(dout, out, a, UPLO="L"):
    """The eigenvalue part of np.linalg.eigh's rule: conj(V) diag(dout) V^T, folded onto the
    triangle read."""
    v = np.linalg.eigh(a, UPLO)[1]
    da = rt.herm_part_adj((np.conj(v) * np.expand_dims(np.real(dout), -2)) @
                          np.swapaxes(v, -1, -2), (UPLO != "U") & (UPLO != "u"))


@fwd("np.linalg.eigvalsh")
def eigvalsh_fwd(out, a, UPLO="L"):
    v = np.linalg.eigh(a, UPLO)[1]
    dout = np.real(np.sum(np.conj(v) * (rt.herm_part(da, (UPLO != "U") & (UPLO != "u")) @ v),
                          -2))


batch_same("np.linalg.eigvalsh")


@rev("rt.gap_div")
def gap_div(dout, out, x, w):
    """Linear in x (its own transpose: the weights are elementwise); in w,
    d out_ij = -x_ij (dw_j - dw_i) / (w_j - w_i)^2."""
    dx = rt.gap_div(dout, w)
    h = rt.gap_div(rt.gap_div(dout * x, w), w)
    dw = np.sum(h, -1) - np.sum(h, -2)


@fwd("rt.gap_div")
def gap_div_fwd(out, x, w):
    dout = rt.gap_div(dx, w)
    dout = -rt.gap_div(rt.gap_div(x * (np.expand_dims(dw, -2) - np.expand_dims(dw, -1)), w), w)


batch_same("rt.gap_div")


@rev("rt.div_nonzero")
def div_nonzero(dout, out, x, y):
    dx = rt.unbroadcast(rt.div_nonzero(dout, y), x)
    dy = -rt.unbroadcast(rt.div_nonzero(rt.div_nonzero(dout * x, y), y), y)


@fwd("rt.div_nonzero")
def div_nonzero_fwd(out, x, y):
    dout = rt.broadcast_like(rt.div_nonzero(dx, y), out)
    dout = -rt.div_nonzero(rt.div_nonzero(x * dy, y), y)


batch_elementwise("rt.div_nonzero")


# np.linalg.svd's rules work on the reduced SVD (U, S, Vh) that rt.svd_factors gives (the
# result itself, or computed where compute_uv=False left the vectors out; it refuses the
# variants without a rule) and on a cotangent made a triple by rt.svd_cotangent. With
# P = U^H dA V, the forward rule is dS = Re diag(P), dU = U (F o (P S + S P^H) + i Im diag(P) / S)
# + (1 - U U^H) dA V / S, dV = V (F o (S P + P^H S)) + (1 - V V^H) dA^H U / S, where
# F_ij = 1 / (s_j^2 - s_i^2); the last terms exist only for a tall U (V), and the reverse
# rule is its transpose. rt.svd_factors has the same rules, reaching `a` only: its value is
# the SVD of `a` whether it was computed or passed through.

@rev("np.linalg.svd", container_out=True)
def svd(dout, out, a, full_matrices=True, compute_uv=True, hermitian=False):
    usv = rt.svd_factors(a, out, full_matrices, compute_uv, hermitian)
    g = rt.svd_cotangent(dout, usv, compute_uv)
    v = np.conj(np.swapaxes(usv[2], -1, -2))
    gv = np.conj(np.swapaxes(g[2], -1, -2))
    ut_gu = np.swapaxes(usv[0], -1, -2) @ g[0]
    fu = rt.gap_div(ut_gu, usv[1] * usv[1])
    fv = rt.gap_div(np.swapaxes(v, -1, -2) @ gv, usv[1] * usv[1])
    gp = (fu + np.conj(np.swapaxes(fu, -1, -2))) * np.expand_dims(usv[1], -2) + \
        np.expand_dims(usv[1], -1) * (fv + np.conj(np.swapaxes(fv, -1, -2)))
    h = rt.div_nonzero(np.diagonal(ut_gu, 0, -2, -1), usv[1])
    hu = rt.div_nonzero(rt.svd_tall(usv[0]) * g[0], np.expand_dims(usv[1], -2))
    hv = rt.div_nonzero(rt.svd_tall(v) * gv, np.expand_dims(usv[1], -2))
    ga = np.conj(usv[0]) @ (gp - np.swapaxes(usv[0], -1, -2) @ hu) + hu + \
        np.conj(usv[0]) * np.expand_dims(np.real(g[1]) + h - np.real(h), -2)
    kv = (hv - np.conj(v) @ (np.swapaxes(v, -1, -2) @ hv)) @ np.swapaxes(usv[0], -1, -2)
    da = ga @ np.swapaxes(v, -1, -2) + np.conj(np.swapaxes(kv, -1, -2))


@fwd("np.linalg.svd")
def svd_fwd(out, a, full_matrices=True, compute_uv=True, hermitian=False):
    usv = rt.svd_factors(a, out, full_matrices, compute_uv, hermitian)
    v = np.conj(np.swapaxes(usv[2], -1, -2))
    p = np.conj(np.swapaxes(usv[0], -1, -2)) @ da @ v
    pd = np.diagonal(p, 0, -2, -1)
    ps = p * np.expand_dims(usv[1], -2)
    sp = np.expand_dims(usv[1], -1) * p
    du = usv[0] @ rt.gap_div(ps + np.conj(np.swapaxes(ps, -1, -2)), usv[1] * usv[1]) + \
        usv[0] * np.expand_dims(rt.div_nonzero(pd - np.real(pd), usv[1]), -2) + \
        rt.div_nonzero(rt.svd_tall(usv[0]) * (da @ v - usv[0] @ p), np.expand_dims(usv[1], -2))
    dv = v @ rt.gap_div(sp + np.conj(np.swapaxes(sp, -1, -2)), usv[1] * usv[1]) + \
        rt.div_nonzero(rt.svd_tall(v) * (np.conj(np.swapaxes(da, -1, -2)) @ usv[0] -
                                         v @ np.conj(np.swapaxes(p, -1, -2))),
                       np.expand_dims(usv[1], -2))
    dout = rt.svd_result((du, np.real(pd), np.conj(np.swapaxes(dv, -1, -2))), compute_uv)


batch_same("np.linalg.svd")


@rev("rt.svd_factors", container_out=True)
def svd_factors(dout, out, a, svd, full_matrices=True, compute_uv=True, hermitian=False):
    v = np.conj(np.swapaxes(out[2], -1, -2))
    gv = np.conj(np.swapaxes(dout[2], -1, -2))
    ut_gu = np.swapaxes(out[0], -1, -2) @ dout[0]
    fu = rt.gap_div(ut_gu, out[1] * out[1])
    fv = rt.gap_div(np.swapaxes(v, -1, -2) @ gv, out[1] * out[1])
    gp = (fu + np.conj(np.swapaxes(fu, -1, -2))) * np.expand_dims(out[1], -2) + \
        np.expand_dims(out[1], -1) * (fv + np.conj(np.swapaxes(fv, -1, -2)))
    h = rt.div_nonzero(np.diagonal(ut_gu, 0, -2, -1), out[1])
    hu = rt.div_nonzero(rt.svd_tall(out[0]) * dout[0], np.expand_dims(out[1], -2))
    hv = rt.div_nonzero(rt.svd_tall(v) * gv, np.expand_dims(out[1], -2))
    ga = np.conj(out[0]) @ (gp - np.swapaxes(out[0], -1, -2) @ hu) + hu + \
        np.conj(out[0]) * np.expand_dims(np.real(dout[1]) + h - np.real(h), -2)
    kv = (hv - np.conj(v) @ (np.swapaxes(v, -1, -2) @ hv)) @ np.swapaxes(out[0], -1, -2)
    da = ga @ np.swapaxes(v, -1, -2) + np.conj(np.swapaxes(kv, -1, -2))


@fwd("rt.svd_factors")
def svd_factors_fwd(out, a, svd, full_matrices=True, compute_uv=True, hermitian=False):
    v = np.conj(np.swapaxes(out[2], -1, -2))
    p = np.conj(np.swapaxes(out[0], -1, -2)) @ da @ v
    pd = np.diagonal(p, 0, -2, -1)
    ps = p * np.expand_dims(out[1], -2)
    sp = np.expand_dims(out[1], -1) * p
    du = out[0] @ rt.gap_div(ps + np.conj(np.swapaxes(ps, -1, -2)), out[1] * out[1]) + \
        out[0] * np.expand_dims(rt.div_nonzero(pd - np.real(pd), out[1]), -2) + \
        rt.div_nonzero(rt.svd_tall(out[0]) * (da @ v - out[0] @ p), np.expand_dims(out[1], -2))
    dv = v @ rt.gap_div(sp + np.conj(np.swapaxes(sp, -1, -2)), out[1] * out[1]) + \
        rt.div_nonzero(rt.svd_tall(v) * (np.conj(np.swapaxes(da, -1, -2)) @ out[0] -
                                         v @ np.conj(np.swapaxes(p, -1, -2))),
                       np.expand_dims(out[1], -2))
    dout = (du, np.real(pd), np.conj(np.swapaxes(dv, -1, -2)))


batch_same("rt.svd_factors")


# rt.svd_cotangent and rt.svd_result only restructure (linear): each is the other's transpose
@rev("rt.svd_cotangent", container_out=True)
def svd_cotangent(dout, out, g, like, compute_uv=True):
    dg = rt.svd_result(dout, compute_uv)


@fwd("rt.svd_cotangent")
def svd_cotangent_fwd(out, g, like, compute_uv=True):
    dout = rt.svd_cotangent(dg, like, compute_uv)


batch_same("rt.svd_cotangent")


@rev("rt.svd_result", container_out=True)
def svd_result(dout, out, t, compute_uv=True):
    dt = rt.svd_cotangent(dout, t, compute_uv)


@fwd("rt.svd_result")
def svd_result_fwd(out, t, compute_uv=True):
    dout = rt.svd_result(dt, compute_uv)


batch_same("rt.svd_result")
nondiff("rt.svd_tall")
batch_same("rt.svd_tall", out_batched=False)


# ---------------------------------------------------------------- eig, eigvals, pinv, matrix_power

# np.linalg.eig: with P = V^-1 dA V, dw = diag(P) and dV = U + V diag(c), U = V (P / gaps):
# c fixes the eigenvectors' scale and phase as LAPACK's geev (and so numpy) does, unit norm
# and a real largest-magnitude component: c = -Re(v^H u) - i Im(u_k) / v_k (JAX, which
# differentiates eigenvectors so only with enable_eigvec_derivs=True). The reverse rule is
# its transpose; the adjoint of a real matrix is made real (rt.real_if_real).
@rev("np.linalg.eig", container_out=True)
def eig(dout, out, a):
    mask = rt.argmax_mask(out[1])
    gc = np.sum(dout[1] * out[1], -2)
    h = -gc / np.real(np.sum(mask * out[1], -2))
    gu = dout[1] - np.expand_dims(np.real(gc), -2) * np.conj(out[1]) + \
        np.expand_dims(h - np.real(h), -2) * mask
    vt = np.swapaxes(out[1], -1, -2)
    da = rt.real_if_real(np.linalg.solve(vt, rt.gap_div(vt @ gu, out[0]) @ vt +
                                         np.expand_dims(dout[0], -1) * vt), a)


@fwd("np.linalg.eig")
def eig_fwd(out, a):
    p = np.linalg.solve(out[1], da @ out[1])
    u = out[1] @ rt.gap_div(p, out[0])
    mask = rt.argmax_mask(out[1])
    uk = np.sum(mask * u, -2)
    c = -np.real(np.sum(np.conj(out[1]) * u, -2)) - \
        (uk - np.real(uk)) / np.real(np.sum(mask * out[1], -2))
    dout = (np.diagonal(p, 0, -2, -1), u + out[1] * np.expand_dims(c, -2))


batch_same("np.linalg.eig")


@rev("np.linalg.eigvals")
def eigvals(dout, out, a):
    """dw = diag(V^-1 dA V); its transpose V^-T diag(dout) V^T."""
    vt = np.swapaxes(np.linalg.eig(a)[1], -1, -2)
    da = rt.real_if_real(np.linalg.solve(vt, np.expand_dims(dout, -1) * vt), a)


@fwd("np.linalg.eigvals")
def eigvals_fwd(out, a):
    v = np.linalg.eig(a)[1]
    dout = np.diagonal(np.linalg.solve(v, da @ v), 0, -2, -1)


batch_same("np.linalg.eigvals")


@rev("rt.real_if_real")
def real_if_real(dout, out, g, x):
    dg = rt.real_if_real(dout, x)


@fwd("rt.real_if_real")
def real_if_real_fwd(out, g, x):
    dout = rt.real_if_real(dg, x)


@batch("rt.real_if_real")
def real_if_real_batch(g, x):
    if g_batched:
        out = rt.real_if_real(g, x)
    else:
        out = rt.real_if_real(rt.broadcast_batch(g, batch_size), x)


nondiff("rt.argmax_mask")
batch_same("rt.argmax_mask")


# The Moore-Penrose inverse P of `a` (its rank held fixed, as in JAX):
# dP = -P dA P + P P^H dA^H (1 - A P) + (1 - P A) dA^H P^H P.
@rev("np.linalg.pinv")
def pinv(dout, out, a, rcond=None, rtol=None):
    kept = rt.fixed_rank(out, a, rcond, rtol)
    pc = np.conj(kept)
    pt = np.swapaxes(kept, -1, -2)
    gh = np.conj(np.swapaxes(dout, -1, -2))
    da = -(pt @ dout @ pt) + (gh - np.conj(a) @ pc @ gh) @ pc @ pt + \
        pt @ pc @ (gh - gh @ pc @ np.conj(a))


@fwd("np.linalg.pinv")
def pinv_fwd(out, a, rcond=None, rtol=None):
    kept = rt.fixed_rank(out, a, rcond, rtol)
    ph = np.conj(np.swapaxes(kept, -1, -2))
    dah = np.conj(np.swapaxes(da, -1, -2))
    dout = -(kept @ da @ kept) + kept @ ph @ (dah - dah @ a @ kept) + \
        (dah - kept @ a @ dah) @ ph @ kept


# rt.fixed_rank: pinv's result once checked (a runtime refusal where the rank-fixed rules
# are not the derivative); the identity in it
@rev("rt.fixed_rank", view=(0,))
def fixed_rank(dout, out, p, a, rcond=None, rtol=None, lstsq=False):
    dp = dout


@fwd("rt.fixed_rank")
def fixed_rank_fwd(out, p, a, rcond=None, rtol=None, lstsq=False):
    dout = dp


batch_same("rt.fixed_rank")


batch_same("np.linalg.pinv")


# The derivative of a matrix function is the upper right block of the function of
# [[a, da], [0, a]]; for a^n the sum of a^k da a^(n-1-k) (any integer n, a^-1 included).
# Its transpose is the same block of ([[a^T, g], [0, a^T]])^n.
@rev("np.linalg.matrix_power")
def matrix_power(dout, out, a, n):
    at = np.swapaxes(a, -1, -2)
    da = rt.block_take(np.linalg.matrix_power(rt.block_place(at, 0) + rt.block_place(dout, 1),
                                              n), 1)


@fwd("np.linalg.matrix_power")
def matrix_power_fwd(out, a, n):
    dout = rt.block_take(np.linalg.matrix_power(rt.block_place(a, 0) + rt.block_place(da, 1),
                                                n), 1)


@batch("np.linalg.matrix_power")
def matrix_power_batch(a, n):
    if n_batched:
        out = rt.cannot_batch("np.linalg.matrix_power", "its power differs between examples")
    else:
        out = np.linalg.matrix_power(a, n)


@rev("rt.block_place")
def block_place(dout, out, x, corner):
    dx = rt.block_take(dout, corner)


@fwd("rt.block_place")
def block_place_fwd(out, x, corner):
    dout = rt.block_place(dx, corner)


batch_same("rt.block_place")


@rev("rt.block_take")
def block_take(dout, out, m, corner):
    dm = rt.block_place(dout, corner)


@fwd("rt.block_take")
def block_take_fwd(out, m, corner):
    dout = rt.block_take(dm, corner)


batch_same("rt.block_take")


# ---------------------------------------------------------------- qr, lstsq

# np.linalg.qr, for R's leading k x k block R1 invertible (k = min(m, n)): with
# B = dA1 R1^-1 (dA1, A2: the first k and the other columns), C = Q^H B and
# W = tril(C, -1) - tril(C, -1)^H + i Im diag(C) - C:
# dQ = Q W + B, dR = [-W R1, dQ^H A2 + Q^H dA2] (JAX's rule; the reverse rule is its
# transpose). rt.qr_factors / qr_cotangent / qr_result play svd's helpers' parts.
@rev("np.linalg.qr", container_out=True)
def qr(dout, out, a, mode="reduced"):
    qr = rt.qr_factors(a, out, mode)
    g = rt.qr_cotangent(dout, qr, mode)
    k = np.shape(qr[1])[-2]
    gq = g[0] + np.conj(a[..., k:]) @ np.conj(np.swapaxes(g[1][..., k:], -1, -2))
    gw = np.swapaxes(qr[0], -1, -2) @ gq - g[1][..., :k] @ np.swapaxes(qr[1][..., :k], -1, -2)
    gc = np.tril(gw - np.conj(np.swapaxes(gw, -1, -2)), -1) + \
        np.triu(np.tril(gw - np.real(gw))) - gw
    gb = gq + np.conj(qr[0]) @ gc
    da = np.concatenate([gb @ np.swapaxes(np.linalg.inv(qr[1][..., :k]), -1, -2),
                         np.conj(qr[0]) @ g[1][..., k:]], -1)


@fwd("np.linalg.qr")
def qr_fwd(out, a, mode="reduced"):
    qr = rt.qr_factors(a, out, mode)
    k = np.shape(qr[1])[-2]
    b = da[..., :k] @ np.linalg.inv(qr[1][..., :k])
    c = np.conj(np.swapaxes(qr[0], -1, -2)) @ b
    w = np.tril(c, -1) - np.conj(np.swapaxes(np.tril(c, -1), -1, -2)) + \
        np.triu(np.tril(c - np.real(c))) - c
    dq = qr[0] @ w + b
    dout = rt.qr_result((dq, np.concatenate([-(w @ qr[1][..., :k]),
                                             np.conj(np.swapaxes(dq, -1, -2)) @ a[..., k:] +
                                             np.conj(np.swapaxes(qr[0], -1, -2)) @
                                             da[..., k:]], -1)), mode)


batch_same("np.linalg.qr")


@rev("rt.qr_factors", container_out=True)
def qr_factors(dout, out, a, qr, mode="reduced"):
    k = np.shape(out[1])[-2]
    gq = dout[0] + np.conj(a[..., k:]) @ np.conj(np.swapaxes(dout[1][..., k:], -1, -2))
    gw = np.swapaxes(out[0], -1, -2) @ gq - \
        dout[1][..., :k] @ np.swapaxes(out[1][..., :k], -1, -2)
    gc = np.tril(gw - np.conj(np.swapaxes(gw, -1, -2)), -1) + \
        np.triu(np.tril(gw - np.real(gw))) - gw
    gb = gq + np.conj(out[0]) @ gc
    da = np.concatenate([gb @ np.swapaxes(np.linalg.inv(out[1][..., :k]), -1, -2),
                         np.conj(out[0]) @ dout[1][..., k:]], -1)


@fwd("rt.qr_factors")
def qr_factors_fwd(out, a, qr, mode="reduced"):
    k = np.shape(out[1])[-2]
    b = da[..., :k] @ np.linalg.inv(out[1][..., :k])
    c = np.conj(np.swapaxes(out[0], -1, -2)) @ b
    w = np.tril(c, -1) - np.conj(np.swapaxes(np.tril(c, -1), -1, -2)) + \
        np.triu(np.tril(c - np.real(c))) - c
    dq = out[0] @ w + b
    dout = (dq, np.concatenate([-(w @ out[1][..., :k]),
                                np.conj(np.swapaxes(dq, -1, -2)) @ a[..., k:] +
                                np.conj(np.swapaxes(out[0], -1, -2)) @ da[..., k:]], -1))


batch_same("rt.qr_factors")


@rev("rt.qr_cotangent", container_out=True)
def qr_cotangent(dout, out, g, like, mode="reduced"):
    dg = rt.qr_result(dout, mode)


@fwd("rt.qr_cotangent")
def qr_cotangent_fwd(out, g, like, mode="reduced"):
    dout = rt.qr_cotangent(dg, like, mode)


batch_same("rt.qr_cotangent")


@rev("rt.qr_result", container_out=True)
def qr_result(dout, out, t, mode="reduced"):
    dt = rt.qr_cotangent(dout, t, mode)


@fwd("rt.qr_result")
def qr_result_fwd(out, t, mode="reduced"):
    dout = rt.qr_result(dt, mode)


batch_same("rt.qr_result")


# np.linalg.lstsq: x = pinv(a) b (the rank held fixed: np.linalg.pinv's rule), the
# residuals |b - a x|^2 move by 2 Re(r^H (db - da x)) (a^H r = 0 at the solution), the
# singular values as np.linalg.svd's; the rank is an integer.
@rev("np.linalg.lstsq", container_out=True)
def lstsq(dout, out, a, b, rcond=None):
    p = rt.fixed_rank(np.linalg.pinv(a, rcond), a, rcond, None, True)
    r = b - a @ out[0]
    gr = 2.0 * np.conj(r) * rt.lstsq_res_cot(dout[1], np.atleast_1d(np.sum(np.real(
        r * np.conj(r)), 0)))
    gp = rt.matmul_adj_x1(dout[0], b, p)
    gh = np.conj(np.swapaxes(gp, -1, -2))
    pc = np.conj(p)
    pt = np.swapaxes(p, -1, -2)
    usv = np.linalg.svd(a, full_matrices=False)
    da = -(pt @ gp @ pt) + (gh - np.conj(a) @ pc @ gh) @ pc @ pt + \
        pt @ pc @ (gh - gh @ pc @ np.conj(a)) - rt.matmul_adj_x1(gr, out[0], a) + \
        np.conj((usv[0] * np.expand_dims(np.real(dout[3]), -2)) @ usv[2])
    db = rt.matmul_adj_x2(p, dout[0], b) + gr


@fwd("np.linalg.lstsq")
def lstsq_fwd(out, a, b, rcond=None):
    p = rt.fixed_rank(np.linalg.pinv(a, rcond), a, rcond, None, True)
    ph = np.conj(np.swapaxes(p, -1, -2))
    dah = np.conj(np.swapaxes(da, -1, -2))
    r = b - a @ out[0]
    usv = np.linalg.svd(a, full_matrices=False)
    dout = ((-(p @ da @ p) + p @ ph @ (dah - dah @ a @ p) + (dah - p @ a @ dah) @ ph @ p) @ b +
            p @ db,
            rt.lstsq_res_tan(2.0 * np.atleast_1d(np.sum(np.real(np.conj(r) * (db - da @ out[0])),
                                                        0)), out[1]),
            np.zeros(np.shape(out[2])),
            np.real(np.sum(np.conj(usv[0]) * (da @ np.conj(np.swapaxes(usv[2], -1, -2))), -2)))


@batch("np.linalg.lstsq")
def lstsq_batch(a, b, rcond=None):
    if rcond_batched:
        out = rt.cannot_batch("np.linalg.lstsq", "its rcond differs between examples")
    else:
        out = rt.lanes_lstsq(a, b, rcond, a_batched, b_batched)


# rt.lanes_lstsq loops over examples; differentiating vmapped code through it (grad of vmap)
# has no rule yet (vmap of grad does: the gradient's code batches without it).
@rev("rt.lanes_lstsq", container_out=True)
def lanes_lstsq(dout, out, a, b, rcond=None, a_batched=True, b_batched=False, outer=0):
    da = rt.no_derivative("np.linalg.lstsq under vmap", "take the derivative inside the "
                          "vmap (tp.vmap(tp.grad(f))), or write the solution with "
                          "np.linalg.pinv(a) @ b.")
    db = rt.no_derivative("np.linalg.lstsq under vmap", "take the derivative inside the "
                          "vmap (tp.vmap(tp.grad(f))), or write the solution with "
                          "np.linalg.pinv(a) @ b.")


@fwd("rt.lanes_lstsq")
def lanes_lstsq_fwd(out, a, b, rcond=None, a_batched=True, b_batched=False, outer=0):
    dout = rt.no_derivative("np.linalg.lstsq under vmap", "take the derivative inside the "
                            "vmap (tp.vmap(tp.jvp(f, ...))), or write the solution with "
                            "np.linalg.pinv(a) @ b.", da)
    dout = rt.no_derivative("np.linalg.lstsq under vmap", "take the derivative inside the "
                            "vmap (tp.vmap(tp.jvp(f, ...))), or write the solution with "
                            "np.linalg.pinv(a) @ b.", db)


batch_lanes("rt.lanes_lstsq", ("a", "b"))


@rev("rt.lstsq_res_cot")
def lstsq_res_cot(dout, out, g, full):
    dg = rt.lstsq_res_tan(dout, g)


@fwd("rt.lstsq_res_cot")
def lstsq_res_cot_fwd(out, g, full):
    dout = rt.lstsq_res_cot(dg, full)


@batch("rt.lstsq_res_cot")
def lstsq_res_cot_batch(g, full):
    if full_batched:
        out = rt.lstsq_res_cot(g, full)
    else:
        out = rt.lstsq_res_cot(g, rt.broadcast_batch(full, batch_size))


@rev("rt.lstsq_res_tan")
def lstsq_res_tan(dout, out, t, res):
    dt = rt.lstsq_res_cot(dout, t)


@fwd("rt.lstsq_res_tan")
def lstsq_res_tan_fwd(out, t, res):
    dout = rt.lstsq_res_tan(dt, res)


batch_same("rt.lstsq_res_tan")


# ---------------------------------------------------------------- multi_dot

# np.linalg.multi_dot: the adjoint of factor i is (the product before it)^T g (the product
# after it)^T (rt.lanes_multi_dot_adj, any number of factors); the tangent is the sum of the
# products with one factor replaced by its tangent (rt.lanes_multi_dot_tangent). Both are
# multilinear: their derivatives replace one more factor (rt.lanes_multi_dot_adj_tangent,
# rt.lanes_multi_dot_tangent2), which gives second derivatives; third ones have no rule.
@rev("np.linalg.multi_dot")
def multi_dot(dout, out, arrays):
    darrays = rt.lanes_multi_dot_adj(dout, arrays)


@fwd("np.linalg.multi_dot")
def multi_dot_fwd(out, arrays):
    dout = rt.lanes_multi_dot_tangent(arrays, darrays)


@batch("np.linalg.multi_dot")
def multi_dot_batch(arrays):
    out = rt.lanes_multi_dot(rt.broadcast_batch(arrays, batch_size, arrays_spec), 1)


@rev("rt.lanes_multi_dot")
def lanes_multi_dot(dout, out, arrays, lanes=0):
    darrays = rt.lanes_multi_dot_adj(dout, arrays, lanes)


@fwd("rt.lanes_multi_dot")
def lanes_multi_dot_fwd(out, arrays, lanes=0):
    dout = rt.lanes_multi_dot_tangent(arrays, darrays, lanes)


@batch("rt.lanes_multi_dot")
def lanes_multi_dot_batch(arrays, lanes=0):
    out = rt.lanes_multi_dot(rt.broadcast_batch(arrays, batch_size, arrays_spec), lanes + 1)


@rev("rt.lanes_multi_dot_adj", container_out=True)
def lanes_multi_dot_adj(dout, out, g, arrays, lanes=0):
    dg = rt.lanes_multi_dot_tangent(arrays, dout, lanes)
    darrays = rt.lanes_multi_dot_adj_tangent(g, arrays, dout, lanes)


@fwd("rt.lanes_multi_dot_adj")
def lanes_multi_dot_adj_fwd(out, g, arrays, lanes=0):
    dout = rt.add(rt.lanes_multi_dot_adj(dg, arrays, lanes),
                  rt.lanes_multi_dot_adj_tangent(g, arrays, darrays, lanes))


@batch("rt.lanes_multi_dot_adj")
def lanes_multi_dot_adj_batch(g, arrays, lanes=0):
    out = rt.lanes_multi_dot_adj(rt.broadcast_batch(g, batch_size, g_batched),
                                 rt.broadcast_batch(arrays, batch_size, arrays_spec), lanes + 1)


@rev("rt.lanes_multi_dot_tangent")
def lanes_multi_dot_tangent(dout, out, arrays, tangents, lanes=0):
    darrays = rt.lanes_multi_dot_adj_tangent(dout, arrays, tangents, lanes)
    dtangents = rt.lanes_multi_dot_adj(dout, arrays, lanes)


@fwd("rt.lanes_multi_dot_tangent")
def lanes_multi_dot_tangent_fwd(out, arrays, tangents, lanes=0):
    dout = rt.lanes_multi_dot_tangent2(arrays, tangents, darrays, lanes)
    dout = rt.lanes_multi_dot_tangent(arrays, dtangents, lanes)


@batch("rt.lanes_multi_dot_tangent")
def lanes_multi_dot_tangent_batch(arrays, tangents, lanes=0):
    out = rt.lanes_multi_dot_tangent(rt.broadcast_batch(arrays, batch_size, arrays_spec),
                                     rt.broadcast_batch(tangents, batch_size, tangents_spec),
                                     lanes + 1)


@rev("rt.lanes_multi_dot_adj_tangent", container_out=True)
def lanes_multi_dot_adj_tangent(dout, out, g, arrays, tangents, lanes=0):
    dg = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                          "write the product with @ (np.matmul), which differentiates to "
                          "any order.")
    darrays = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                               "write the product with @ (np.matmul), which differentiates "
                               "to any order.")
    dtangents = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                                 "write the product with @ (np.matmul), which differentiates "
                                 "to any order.")


@fwd("rt.lanes_multi_dot_adj_tangent")
def lanes_multi_dot_adj_tangent_fwd(out, g, arrays, tangents, lanes=0):
    dout = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                            "write the product with @ (np.matmul), which differentiates to "
                            "any order.", dg)
    dout = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                            "write the product with @ (np.matmul), which differentiates to "
                            "any order.", darrays)
    dout = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                            "write the product with @ (np.matmul), which differentiates to "
                            "any order.", dtangents)


@batch("rt.lanes_multi_dot_adj_tangent")
def lanes_multi_dot_adj_tangent_batch(g, arrays, tangents, lanes=0):
    out = rt.lanes_multi_dot_adj_tangent(rt.broadcast_batch(g, batch_size, g_batched),
                                         rt.broadcast_batch(arrays, batch_size, arrays_spec),
                                         rt.broadcast_batch(tangents, batch_size,
                                                            tangents_spec), lanes + 1)


@rev("rt.lanes_multi_dot_tangent2")
def lanes_multi_dot_tangent2(dout, out, arrays, tangents, others, lanes=0):
    darrays = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                               "write the product with @ (np.matmul), which differentiates "
                               "to any order.")
    dtangents = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                                 "write the product with @ (np.matmul), which differentiates "
                                 "to any order.")
    dothers = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                               "write the product with @ (np.matmul), which differentiates "
                               "to any order.")


@fwd("rt.lanes_multi_dot_tangent2")
def lanes_multi_dot_tangent2_fwd(out, arrays, tangents, others, lanes=0):
    dout = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                            "write the product with @ (np.matmul), which differentiates to "
                            "any order.", darrays)
    dout = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                            "write the product with @ (np.matmul), which differentiates to "
                            "any order.", dtangents)
    dout = rt.no_derivative("the third derivative of np.linalg.multi_dot",
                            "write the product with @ (np.matmul), which differentiates to "
                            "any order.", dothers)


@batch("rt.lanes_multi_dot_tangent2")
def lanes_multi_dot_tangent2_batch(arrays, tangents, others, lanes=0):
    out = rt.lanes_multi_dot_tangent2(rt.broadcast_batch(arrays, batch_size, arrays_spec),
                                      rt.broadcast_batch(tangents, batch_size, tangents_spec),
                                      rt.broadcast_batch(others, batch_size, others_spec),
                                      lanes + 1)


# ---------------------------------------------------------------- norm

# Every order's derivative is conj(x) |x|^(p-2) share / |x|_p^(p-1) (p = rt.norm_power: 2 for
# 'fro', 1 for the max/min norms; share = rt.norm_share: 1, or the elements at the extremum),
# plus, for the norms of singular values ('nuc', 2, -2 of a matrix), conj(U diag(c) Vh) with
# c = d norm / d s (rt.norm_svd_share), the SVD taken in the template so that higher
# derivatives go through np.linalg.svd's rules. rt.norm_route gives that SVD 1 x 1 zeros for
# the other norms; with a literal `ord` the folds below drop the terms that do not apply.
# At x = 0 the derivative is 0, as for np.abs (JAX gives nan there).
@rev("np.linalg.norm")
def norm(dout, out, x, ord=None, axis=None, keepdims=False):
    mag = np.abs(x)
    usv = np.linalg.svd(rt.norm_route(x, ord, axis), full_matrices=False)
    w = rt.norm_unroute(np.conj((usv[0] * np.expand_dims(rt.norm_svd_share(usv[1], x, ord, axis),
                                                         -2)) @ usv[2]), x, ord, axis) + \
        rt.div_nonzero(rt.div_nonzero(np.conj(x) * mag ** (rt.norm_power(x, ord, axis) - 1), mag) *
                       rt.norm_share(x, ord, axis),
                       rt.expand_norm(out, x, ord, axis, keepdims) **
                       (rt.norm_power(x, ord, axis) - 1))
    dx = rt.expand_norm(np.real(dout), x, ord, axis, keepdims) * w


@fwd("np.linalg.norm")
def norm_fwd(out, x, ord=None, axis=None, keepdims=False):
    mag = np.abs(x)
    usv = np.linalg.svd(rt.norm_route(x, ord, axis), full_matrices=False)
    w = rt.norm_unroute(np.conj((usv[0] * np.expand_dims(rt.norm_svd_share(usv[1], x, ord, axis),
                                                         -2)) @ usv[2]), x, ord, axis) + \
        rt.div_nonzero(rt.div_nonzero(np.conj(x) * mag ** (rt.norm_power(x, ord, axis) - 1), mag) *
                       rt.norm_share(x, ord, axis),
                       rt.expand_norm(out, x, ord, axis, keepdims) **
                       (rt.norm_power(x, ord, axis) - 1))
    dout = np.sum(np.real(w * dx), rt.norm_axis(x, ord, axis), keepdims=keepdims)


@batch("np.linalg.norm")
def norm_batch(x, ord=None, axis=None, keepdims=False):
    out = rt.lanes_norm(x, ord, axis, keepdims)


@rev("rt.expand_norm", view=True)
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
    """np.linalg.norm's rules, with the helpers told of the `outer` + 1 batch axes."""
    mag = np.abs(x)
    usv = np.linalg.svd(rt.norm_route(x, ord, axis, outer + 1), full_matrices=False)
    w = rt.norm_unroute(np.conj((usv[0] * np.expand_dims(
        rt.norm_svd_share(usv[1], x, ord, axis, outer + 1), -2)) @ usv[2]), x, ord, axis,
        outer + 1) + \
        rt.div_nonzero(rt.div_nonzero(np.conj(x) *
                                      mag ** (rt.norm_power(x, ord, axis, outer + 1) - 1), mag) *
                       rt.norm_share(x, ord, axis, outer + 1),
                       rt.expand_norm(out, x, ord, rt.lanes_norm_axes(x, ord, axis, outer),
                                      keepdims) ** (rt.norm_power(x, ord, axis, outer + 1) - 1))
    dx = rt.expand_norm(np.real(dout), x, ord, rt.lanes_norm_axes(x, ord, axis, outer),
                        keepdims) * w


@fwd("rt.lanes_norm")
def lanes_norm_fwd(out, x, ord=None, axis=None, keepdims=False, outer=0):
    mag = np.abs(x)
    usv = np.linalg.svd(rt.norm_route(x, ord, axis, outer + 1), full_matrices=False)
    w = rt.norm_unroute(np.conj((usv[0] * np.expand_dims(
        rt.norm_svd_share(usv[1], x, ord, axis, outer + 1), -2)) @ usv[2]), x, ord, axis,
        outer + 1) + \
        rt.div_nonzero(rt.div_nonzero(np.conj(x) *
                                      mag ** (rt.norm_power(x, ord, axis, outer + 1) - 1), mag) *
                       rt.norm_share(x, ord, axis, outer + 1),
                       rt.expand_norm(out, x, ord, rt.lanes_norm_axes(x, ord, axis, outer),
                                      keepdims) ** (rt.norm_power(x, ord, axis, outer + 1) - 1))
    dout = np.sum(np.real(w * dx), rt.norm_axis(x, ord, rt.lanes_norm_axes(x, ord, axis, outer)),
                  keepdims=keepdims)


@rev("rt.norm_route")
def norm_route(dout, out, x, ord=None, axis=None, outer=0):
    dx = rt.norm_unroute(dout, x, ord, axis, outer)


@fwd("rt.norm_route")
def norm_route_fwd(out, x, ord=None, axis=None, outer=0):
    dout = rt.norm_route(dx, ord, axis, outer)


@rev("rt.norm_unroute")
def norm_unroute(dout, out, w, x, ord=None, axis=None, outer=0):
    dw = rt.norm_route(dout, ord, axis, outer)


@fwd("rt.norm_unroute")
def norm_unroute_fwd(out, w, x, ord=None, axis=None, outer=0):
    dout = rt.norm_unroute(dw, x, ord, axis, outer)


def _ord_literal(node):
    """The value of a literal `ord` (None, a number, a string, np.inf, -np.inf), or the
    string "?" where it is not a literal."""
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, gast.Attribute) and node.attr == "inf" and \
            isinstance(node.value, gast.Name) and node.value.id == "np":
        return np.inf
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _ord_literal(node.operand)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) \
            else "?"
    return "?"


def _vector_p(ord_node, axis_node):
    """A literal vector p-norm (p not 0 or +-inf) over a literal axis: p, else None."""
    p = _ord_literal(ord_node)
    if not isinstance(axis_node, gast.Constant) or type(axis_node.value) is not int or \
            isinstance(p, (str, bool)) or p is None or p in (0, np.inf, -np.inf):
        return None
    return p


@fold("rt.norm_power")
def norm_power_fold(x, ord=None, axis=None, outer=None):
    p = _ord_literal(ord) if ord is not None else None
    if p is None or p == "fro":
        return gast.Constant(value=2, kind=None)
    p = _vector_p(ord, axis)
    if p is None:
        return None
    return gast.Constant(value=int(p) if float(p).is_integer() else float(p), kind=None)


@fold("rt.norm_share")
def norm_share_fold(x, ord=None, axis=None, outer=None):
    p = _ord_literal(ord) if ord is not None else None
    if p is None or p == "fro" or _vector_p(ord, axis) is not None:
        return gast.Constant(value=1, kind=None)
    return None


@fold("rt.norm_unroute")
def norm_unroute_fold(w, x, ord=None, axis=None, outer=None):
    p = _ord_literal(ord) if ord is not None else None
    if p is None or p == "fro" or _vector_p(ord, axis) is not None or \
            p in (1, -1, 0, np.inf, -np.inf) and not isinstance(p, bool):
        return gast.Constant(value=0, kind=None)
    return None


nondiff("rt.norm_power", "rt.norm_share", "rt.norm_svd_share")
batch_lanes("rt.norm_power", ("x",), out_batched=False)
batch_lanes("rt.norm_share", ("x",))
batch_lanes("rt.norm_svd_share", ("s", "x"))
batch_lanes("rt.norm_route", ("x",))
batch_lanes("rt.norm_unroute", ("w", "x"))


# the helpers above, batched again (vmap of vmap): their `outer` goes up by one
nondiff("rt.lanes_view", view=True)
nondiff("rt.lanes_probe", "rt.lanes_spec", "rt.example_einsum_spec",
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
