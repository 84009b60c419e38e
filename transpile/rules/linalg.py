"""Linear algebra: products, inverses, decompositions.

The adjoints of `x1 @ x2` are bilinear helpers (`rt.matmul_adj_x1/x2`) whose rules are
written in terms of each other, so products differentiate to any order.
"""
from .core import batch, fwd, nondiff, rev
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


@rev("rt.matmul_adj_x1")
def matmul_adj_x1(dout, out, g, x2, x1):
    dg = rt.unbroadcast(dout @ x2, g)
    dx2 = rt.matmul_adj_x2(dout, g, x2)


@fwd("rt.matmul_adj_x1")
def matmul_adj_x1_fwd(out, g, x2, x1):
    dout = rt.matmul_adj_x1(dg, x2, x1)
    dout = rt.matmul_adj_x1(g, dx2, x1)


@rev("rt.matmul_adj_x2")
def matmul_adj_x2(dout, out, x1, g, x2):
    dx1 = rt.matmul_adj_x1(g, dout, x1)
    dg = rt.unbroadcast(x1 @ dout, g)


@fwd("rt.matmul_adj_x2")
def matmul_adj_x2_fwd(out, x1, g, x2):
    dout = rt.matmul_adj_x2(dx1, g, x2)
    dout = rt.matmul_adj_x2(x1, dg, x2)


@rev("np.dot")
def dot(dout, out, a, b):
    da = rt.dot_adj_a(dout, b, a)
    db = rt.dot_adj_b(a, dout, b)


@fwd("np.dot")
def dot_fwd(out, a, b):
    dout = np.dot(da, b)
    dout = np.dot(a, db)


@rev("rt.dot_adj_a")
def dot_adj_a(dout, out, g, b, a):
    dg = np.dot(dout, b)
    db = rt.dot_adj_b(dout, g, b)


@fwd("rt.dot_adj_a")
def dot_adj_a_fwd(out, g, b, a):
    dout = rt.dot_adj_a(dg, b, a)
    dout = rt.dot_adj_a(g, db, a)


@rev("rt.dot_adj_b")
def dot_adj_b(dout, out, a, g, b):
    da = rt.dot_adj_a(g, dout, a)
    dg = np.dot(a, dout)


@fwd("rt.dot_adj_b")
def dot_adj_b_fwd(out, a, g, b):
    dout = rt.dot_adj_b(da, g, b)
    dout = rt.dot_adj_b(a, dg, b)


# ---------------------------------------------------------------- einsum and friends
# Adjoints are einsums with rearranged subscripts: `rt.einsum_swap(spec, i)` exchanges
# operand i's subscripts with the output's, and `rt.einsum_gen` evaluates it (placing values
# on diagonals or broadcasting where operand i repeats or alone carries a letter). The
# templates list eight operand slots; unused slots stay None and their lines vanish.

@rev("np.einsum")
def einsum(dout, out, subscripts, op0=None, op1=None, op2=None, op3=None, op4=None,
           op5=None, op6=None, op7=None, optimize=False):
    spec = rt.einsum_spec(subscripts, op0, op1, op2, op3, op4, op5, op6, op7)
    dop0 = rt.einsum_gen(rt.einsum_swap(spec, 0), op0, dout, op1, op2, op3, op4, op5, op6, op7)
    dop1 = rt.einsum_gen(rt.einsum_swap(spec, 1), op1, op0, dout, op2, op3, op4, op5, op6, op7)
    dop2 = rt.einsum_gen(rt.einsum_swap(spec, 2), op2, op0, op1, dout, op3, op4, op5, op6, op7)
    dop3 = rt.einsum_gen(rt.einsum_swap(spec, 3), op3, op0, op1, op2, dout, op4, op5, op6, op7)
    dop4 = rt.einsum_gen(rt.einsum_swap(spec, 4), op4, op0, op1, op2, op3, dout, op5, op6, op7)
    dop5 = rt.einsum_gen(rt.einsum_swap(spec, 5), op5, op0, op1, op2, op3, op4, dout, op6, op7)
    dop6 = rt.einsum_gen(rt.einsum_swap(spec, 6), op6, op0, op1, op2, op3, op4, op5, dout, op7)
    dop7 = rt.einsum_gen(rt.einsum_swap(spec, 7), op7, op0, op1, op2, op3, op4, op5, op6, dout)


@fwd("np.einsum")
def einsum_fwd(out, subscripts, op0=None, op1=None, op2=None, op3=None, op4=None, op5=None,
               op6=None, op7=None, optimize=False):
    """Multilinear: one term per operand, the operand replaced by its tangent."""
    spec = rt.einsum_spec(subscripts, op0, op1, op2, op3, op4, op5, op6, op7)
    dout = rt.einsum_gen(spec, out, dop0, op1, op2, op3, op4, op5, op6, op7)
    dout = rt.einsum_gen(spec, out, op0, dop1, op2, op3, op4, op5, op6, op7)
    dout = rt.einsum_gen(spec, out, op0, op1, dop2, op3, op4, op5, op6, op7)
    dout = rt.einsum_gen(spec, out, op0, op1, op2, dop3, op4, op5, op6, op7)
    dout = rt.einsum_gen(spec, out, op0, op1, op2, op3, dop4, op5, op6, op7)
    dout = rt.einsum_gen(spec, out, op0, op1, op2, op3, op4, dop5, op6, op7)
    dout = rt.einsum_gen(spec, out, op0, op1, op2, op3, op4, op5, dop6, op7)
    dout = rt.einsum_gen(spec, out, op0, op1, op2, op3, op4, op5, op6, dop7)


@rev("rt.einsum_gen")
def einsum_gen(dout, out, spec, like, op0, op1=None, op2=None, op3=None, op4=None, op5=None,
               op6=None, op7=None):
    dop0 = rt.einsum_gen(rt.einsum_swap(spec, 0), op0, dout, op1, op2, op3, op4, op5, op6, op7)
    dop1 = rt.einsum_gen(rt.einsum_swap(spec, 1), op1, op0, dout, op2, op3, op4, op5, op6, op7)
    dop2 = rt.einsum_gen(rt.einsum_swap(spec, 2), op2, op0, op1, dout, op3, op4, op5, op6, op7)
    dop3 = rt.einsum_gen(rt.einsum_swap(spec, 3), op3, op0, op1, op2, dout, op4, op5, op6, op7)
    dop4 = rt.einsum_gen(rt.einsum_swap(spec, 4), op4, op0, op1, op2, op3, dout, op5, op6, op7)
    dop5 = rt.einsum_gen(rt.einsum_swap(spec, 5), op5, op0, op1, op2, op3, op4, dout, op6, op7)
    dop6 = rt.einsum_gen(rt.einsum_swap(spec, 6), op6, op0, op1, op2, op3, op4, op5, dout, op7)
    dop7 = rt.einsum_gen(rt.einsum_swap(spec, 7), op7, op0, op1, op2, op3, op4, op5, op6, dout)


@fwd("rt.einsum_gen")
def einsum_gen_fwd(out, spec, like, op0, op1=None, op2=None, op3=None, op4=None, op5=None,
                   op6=None, op7=None):
    dout = rt.einsum_gen(spec, like, dop0, op1, op2, op3, op4, op5, op6, op7)
    dout = rt.einsum_gen(spec, like, op0, dop1, op2, op3, op4, op5, op6, op7)
    dout = rt.einsum_gen(spec, like, op0, op1, dop2, op3, op4, op5, op6, op7)
    dout = rt.einsum_gen(spec, like, op0, op1, op2, dop3, op4, op5, op6, op7)
    dout = rt.einsum_gen(spec, like, op0, op1, op2, op3, dop4, op5, op6, op7)
    dout = rt.einsum_gen(spec, like, op0, op1, op2, op3, op4, dop5, op6, op7)
    dout = rt.einsum_gen(spec, like, op0, op1, op2, op3, op4, op5, dop6, op7)
    dout = rt.einsum_gen(spec, like, op0, op1, op2, op3, op4, op5, op6, dop7)


@rev("np.tensordot")
def tensordot(dout, out, a, b, axes=2):
    spec = rt.tensordot_spec(a, b, axes)
    da = rt.einsum_gen(rt.einsum_swap(spec, 0), a, dout, b)
    db = rt.einsum_gen(rt.einsum_swap(spec, 1), b, a, dout)


@fwd("np.tensordot")
def tensordot_fwd(out, a, b, axes=2):
    dout = np.tensordot(da, b, axes)
    dout = np.tensordot(a, db, axes)


@rev("np.inner")
def inner(dout, out, a, b):
    spec = rt.inner_spec(a, b)
    da = rt.einsum_gen(rt.einsum_swap(spec, 0), a, dout, b)
    db = rt.einsum_gen(rt.einsum_swap(spec, 1), b, a, dout)


@fwd("np.inner")
def inner_fwd(out, a, b):
    dout = np.inner(da, b)
    dout = np.inner(a, db)


@rev("np.outer")
def outer(dout, out, a, b):
    da = np.reshape(np.dot(dout, np.ravel(b)), np.shape(a))
    db = np.reshape(np.dot(np.ravel(a), dout), np.shape(b))


@fwd("np.outer")
def outer_fwd(out, a, b):
    dout = np.outer(da, b)
    dout = np.outer(a, db)


@rev("np.vdot")
def vdot(dout, out, a, b):
    da = np.reshape(dout * np.ravel(b), np.shape(a))
    db = np.reshape(dout * np.ravel(a), np.shape(b))


@fwd("np.vdot")
def vdot_fwd(out, a, b):
    dout = np.vdot(da, b)
    dout = np.vdot(a, db)


@rev("np.trace")
def trace(dout, out, a, offset=0, axis1=0, axis2=1):
    da = rt.trace_adj(dout, a, offset, axis1, axis2)


@fwd("np.trace")
def trace_fwd(out, a, offset=0, axis1=0, axis2=1):
    dout = np.trace(da, offset, axis1, axis2)


@rev("rt.trace_adj")
def trace_adj(dout, out, g, a, offset=0, axis1=0, axis2=1):
    dg = np.trace(dout, offset, axis1, axis2)


@fwd("rt.trace_adj")
def trace_adj_fwd(out, g, a, offset=0, axis1=0, axis2=1):
    dout = rt.trace_adj(dg, a, offset, axis1, axis2)


# ---------------------------------------------------------------- inverses, determinants

@rev("np.linalg.inv")
def inv(dout, out, a):
    out_t = np.swapaxes(out, -1, -2)
    da = -(out_t @ dout @ out_t)


@fwd("np.linalg.inv")
def inv_fwd(out, a):
    dout = -(out @ da @ out)


@rev("np.linalg.det")
def det(dout, out, a):
    da = np.expand_dims(dout * out, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


@fwd("np.linalg.det")
def det_fwd(out, a):
    dout = out * np.sum(np.swapaxes(np.linalg.inv(a), -1, -2) * da, (-2, -1))


@rev("np.linalg.slogdet", container_out=True)
def slogdet(dout, out, a):
    """`out` is the pair (sign, logabsdet); only logabsdet carries a derivative."""
    da = np.expand_dims(dout[1], (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


@fwd("np.linalg.slogdet")
def slogdet_fwd(out, a):
    """The sign is piecewise constant: its tangent is zero."""
    dout = (np.zeros_like(out[0]), np.sum(np.swapaxes(np.linalg.inv(a), -1, -2) * da, (-2, -1)))


@rev("np.linalg.solve", "rt.solve")
def solve(dout, out, a, b):
    gb = rt.solve(np.swapaxes(a, -1, -2), dout)
    da = -rt.einsum_gen(rt.solve_spec(a, out), a, gb, out)
    db = rt.unbroadcast(gb, b)


@fwd("np.linalg.solve", "rt.solve")
def solve_fwd(out, a, b):
    """d(a^-1 b) = a^-1 (db - da out); `da @ out` is an einsum that reads `out` as a (batch
    of) vector(s) where `b` was one."""
    dout = rt.solve(a, db)
    dout = -rt.solve(a, rt.einsum_gen(rt.einsum_swap(rt.solve_spec(a, out), 0), out, da, out))


@rev("np.linalg.cholesky")
def cholesky(dout, out, a):
    """Symmetrized adjoint: `a` is taken to be symmetric (numpy reads its lower triangle)."""
    phi = rt.cholesky_phi(np.swapaxes(out, -1, -2) @ dout)
    l_inv = np.linalg.inv(out)
    s = np.swapaxes(l_inv, -1, -2) @ phi @ l_inv
    da = 0.5 * (s + np.swapaxes(s, -1, -2))


@fwd("np.linalg.cholesky")
def cholesky_fwd(out, a):
    """dL = L phi(L^-1 dA L^-T), for a symmetric tangent dA."""
    l_inv = np.linalg.inv(out)
    dout = out @ rt.cholesky_phi(l_inv @ da @ np.swapaxes(l_inv, -1, -2))


@rev("rt.cholesky_phi")
def cholesky_phi(dout, out, x):
    dx = rt.cholesky_phi(dout)


@fwd("rt.cholesky_phi")
def cholesky_phi_fwd(out, x):
    dout = rt.cholesky_phi(dx)


@rev("np.linalg.norm")
def norm(dout, out, x, ord=None, axis=None, keepdims=False):
    """The vector 2-norm and the Frobenius norm (other orders raise in rt.expand_norm)."""
    dx = rt.expand_norm(dout / out, x, ord, axis, keepdims) * x


@fwd("np.linalg.norm")
def norm_fwd(out, x, ord=None, axis=None, keepdims=False):
    dout = np.sum(x * dx, rt.norm_axis(x, ord, axis), keepdims=keepdims) / out


@rev("rt.expand_norm")
def expand_norm(dout, out, g, x, ord=None, axis=None, keepdims=False):
    dg = np.sum(dout, axis, keepdims=keepdims)


@fwd("rt.expand_norm")
def expand_norm_fwd(out, g, x, ord=None, axis=None, keepdims=False):
    dout = rt.expand_norm(dg, x, ord, axis, keepdims)


nondiff("rt.einsum_spec", "rt.einsum_swap", "rt.tensordot_spec", "rt.inner_spec",
        "rt.solve_spec", "rt.norm_axis", "np.linalg.matrix_rank", "np.linalg.cond")


# ---------------------------------------------------------------- batching (vmap)

@batch("np.dot")
def dot_batch(a, b):
    out = rt.batched_dot(a, b, a_batched, b_batched)
