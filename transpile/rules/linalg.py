"""Linear algebra: products, inverses, decompositions.

The adjoints of `x1 @ x2` are bilinear helpers (`rt.matmul_adj_x1/x2`) whose rules are
written in terms of each other, so products differentiate to any order.
"""
from .core import rev
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
