"""Linear algebra: products, inverses, decompositions.

The adjoints of `x1 @ x2` are bilinear helpers (`rt.matmul_adj_x1/x2`) whose rules are
written in terms of each other, so products differentiate to any order.
"""
from .core import nondiff, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("@", "np.matmul")
def matmul(dout, out, x1, x2):
    dx1 = rt.matmul_adj_x1(dout, x2, x1)
    dx2 = rt.matmul_adj_x2(x1, dout, x2)


@rev("rt.matmul_adj_x1")
def matmul_adj_x1(dout, out, g, x2, x1):
    dg = rt.unbroadcast(dout @ x2, g)
    dx2 = rt.matmul_adj_x2(dout, g, x2)


@rev("rt.matmul_adj_x2")
def matmul_adj_x2(dout, out, x1, g, x2):
    dx1 = rt.matmul_adj_x1(g, dout, x1)
    dg = rt.unbroadcast(x1 @ dout, g)


@rev("np.dot")
def dot(dout, out, a, b):
    da = rt.dot_adj_a(dout, b, a)
    db = rt.dot_adj_b(a, dout, b)


@rev("rt.dot_adj_a")
def dot_adj_a(dout, out, g, b, a):
    dg = np.dot(dout, b)
    db = rt.dot_adj_b(dout, g, b)


@rev("rt.dot_adj_b")
def dot_adj_b(dout, out, a, g, b):
    da = rt.dot_adj_a(g, dout, a)
    dg = np.dot(a, dout)


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


@rev("np.tensordot")
def tensordot(dout, out, a, b, axes=2):
    spec = rt.tensordot_spec(a, b, axes)
    da = rt.einsum_gen(rt.einsum_swap(spec, 0), a, dout, b)
    db = rt.einsum_gen(rt.einsum_swap(spec, 1), b, a, dout)


@rev("np.inner")
def inner(dout, out, a, b):
    spec = rt.inner_spec(a, b)
    da = rt.einsum_gen(rt.einsum_swap(spec, 0), a, dout, b)
    db = rt.einsum_gen(rt.einsum_swap(spec, 1), b, a, dout)


@rev("np.outer")
def outer(dout, out, a, b):
    da = np.reshape(np.dot(dout, np.ravel(b)), np.shape(a))
    db = np.reshape(np.dot(np.ravel(a), dout), np.shape(b))


@rev("np.vdot")
def vdot(dout, out, a, b):
    da = np.reshape(dout * np.ravel(b), np.shape(a))
    db = np.reshape(dout * np.ravel(a), np.shape(b))


@rev("np.trace")
def trace(dout, out, a, offset=0, axis1=0, axis2=1):
    da = rt.trace_adj(dout, a, offset, axis1, axis2)


@rev("rt.trace_adj")
def trace_adj(dout, out, g, a, offset=0, axis1=0, axis2=1):
    dg = np.trace(dout, offset, axis1, axis2)


# ---------------------------------------------------------------- inverses, determinants

@rev("np.linalg.inv")
def inv(dout, out, a):
    out_t = np.swapaxes(out, -1, -2)
    da = -(out_t @ dout @ out_t)


@rev("np.linalg.det")
def det(dout, out, a):
    da = np.expand_dims(dout * out, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


@rev("np.linalg.slogdet", container_out=True)
def slogdet(dout, out, a):
    """`out` is the pair (sign, logabsdet); only logabsdet carries a derivative."""
    da = np.expand_dims(dout[1], (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


@rev("np.linalg.solve", "rt.solve")
def solve(dout, out, a, b):
    gb = rt.solve(np.swapaxes(a, -1, -2), dout)
    da = -rt.einsum_gen(rt.solve_spec(a, out), a, gb, out)
    db = rt.unbroadcast(gb, b)


@rev("np.linalg.cholesky")
def cholesky(dout, out, a):
    """Symmetrized adjoint: `a` is taken to be symmetric (numpy reads its lower triangle)."""
    phi = rt.cholesky_phi(np.swapaxes(out, -1, -2) @ dout)
    l_inv = np.linalg.inv(out)
    s = np.swapaxes(l_inv, -1, -2) @ phi @ l_inv
    da = 0.5 * (s + np.swapaxes(s, -1, -2))


@rev("rt.cholesky_phi")
def cholesky_phi(dout, out, x):
    dx = rt.cholesky_phi(dout)


@rev("np.linalg.norm")
def norm(dout, out, x, ord=None, axis=None, keepdims=False):
    """The vector 2-norm and the Frobenius norm (other orders raise in rt.expand_norm)."""
    dx = rt.expand_norm(dout / out, x, ord, axis, keepdims) * x


@rev("rt.expand_norm")
def expand_norm(dout, out, g, x, ord=None, axis=None, keepdims=False):
    dg = np.sum(dout, axis, keepdims=keepdims)


nondiff("rt.einsum_spec", "rt.einsum_swap", "rt.tensordot_spec", "rt.inner_spec",
        "rt.solve_spec", "np.linalg.matrix_rank", "np.linalg.cond")
