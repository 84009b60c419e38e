"""scipy.special functions (registered only when scipy is installed).

Generated modules import only numpy and `runtime`, so a scipy function is spelled through
its re-export in `runtime` (`rt.logsumexp` is scipy.special.logsumexp itself): the first
spelling given to `rev` is the one generated code uses.
"""
from .core import batch, batch_elementwise, batch_same, fwd, rev
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


@rev("rt.logsumexp", "scipy.special.logsumexp")
def logsumexp(dout, out, a, axis=None, b=None, keepdims=False, return_sign=False):
    value = rt.logsumexp_value(out, return_sign)     # (first: refuses return_sign=True)
    w = rt.expand(dout, a, axis, keepdims) * np.exp(a - rt.expand(value, a, axis, keepdims))
    da = rt.weight(w, b, return_sign)
    db = rt.unbroadcast(w, b)


@fwd("rt.logsumexp", "scipy.special.logsumexp")
def logsumexp_fwd(out, a, axis=None, b=None, keepdims=False, return_sign=False):
    value = rt.logsumexp_value(out, return_sign)
    w = np.exp(a - rt.expand(value, a, axis, keepdims))
    dout = np.sum(rt.weight(w, b, return_sign) * da, axis, keepdims=keepdims)
    dout = np.sum(w * db, axis, keepdims=keepdims)


@batch("rt.logsumexp", "scipy.special.logsumexp")
def logsumexp_batch(a, axis=None, b=None, keepdims=False, return_sign=False):
    if not a_batched:
        out = rt.logsumexp(rt.broadcast_batch(a, batch_size), rt.lane_axes(axis, np.ndim(a)),
                           rt.align(b, a), keepdims, return_sign)
    elif b_batched:
        out = rt.logsumexp(a, rt.lane_axis(axis, a), rt.align_lanes(b, a), keepdims,
                           return_sign)
    else:
        out = rt.logsumexp(a, rt.lane_axis(axis, a), b, keepdims, return_sign)


# rt.logsumexp_value: the result its rules read, refusing return_sign=True (a pair) clearly
@rev("rt.logsumexp_value", view=(0,))
def logsumexp_value(dout, out, result, return_sign=False):
    dresult = dout


@fwd("rt.logsumexp_value")
def logsumexp_value_fwd(out, result, return_sign=False):
    dout = dresult


batch_same("rt.logsumexp_value")


@rev("rt.weight", view=True)
def weight(dout, out, w, b=None, return_sign=False):
    dw = rt.weight(dout, b)
    db = rt.unbroadcast(dout * w, b)


@fwd("rt.weight")
def weight_fwd(out, w, b=None, return_sign=False):
    dout = rt.weight(dw, b)
    dout = rt.broadcast_like(w * db, out)


@batch("rt.weight")
def weight_batch(w, b=None, return_sign=False):
    if not w_batched:
        out = rt.weight(w, rt.align(b, w), return_sign)
    elif b_batched:
        out = rt.weight(w, rt.align_lanes(b, w), return_sign)
    else:
        out = rt.weight(w, b, return_sign)


# ================================================================ elementwise functions
#
# Each function is re-exported in runtime/special.py, so its first spelling is `rt.<name>`.
# Constants are written as literals (templates are copied into generated code):
# 2 / sqrt(pi) = 1.1283791670955126, sqrt(pi) / 2 = 0.886226925452758,
# sqrt(2 pi) = 2.5066282746310002, log(sqrt(2 pi)) = 0.9189385332046727.
#
# Derivatives in an order or shape parameter (polygamma's n, iv's v, betainc's a and b,
# gammainc's a) have no closed form: their rules refuse (rt.no_derivative), only where that
# argument is differentiated. Complex arguments: the rules of the functions that scipy
# evaluates for complex numbers are holomorphic (no conjugation, as JAX), except ive's,
# which has the non-holomorphic factor exp(-|Re z|).

# Their forward rules use rt.no_derivative_term, which refuses too, except for a tangent of
# zeros: the passes hand those to orders that are not differentiated (jacfwd's tangents of
# the other arguments), and the rules' own calls (polygamma(n + 1, x), iv(v - 1, z)) meet them
# in higher derivatives.
@rev("rt.no_derivative_term")
def no_derivative_term(dout, out, what, hint, tangent, like):
    dtangent = rt.no_derivative(what, hint)


@fwd("rt.no_derivative_term")
def no_derivative_term_fwd(out, what, hint, tangent, like):
    dout = rt.no_derivative_term(what, hint, dtangent, out)


@batch("rt.no_derivative_term")
def no_derivative_term_batch(what, hint, tangent, like):
    if like_batched:
        out = rt.no_derivative_term(what, hint, tangent, like)
    else:
        out = rt.no_derivative_term(what, hint, tangent, rt.broadcast_batch(like, batch_size))

# ---------------------------------------------------------------- gamma and friends

@rev("rt.gammaln", "scipy.special.gammaln", "math.lgamma")
def gammaln(dout, out, x):
    """gammaln is log|Gamma(x)|: its slope is digamma(x), also where Gamma(x) < 0."""
    dx = dout * rt.digamma(x)


@fwd("rt.gammaln", "scipy.special.gammaln", "math.lgamma")
def gammaln_fwd(out, x):
    dout = dx * rt.digamma(x)


batch_elementwise("rt.gammaln", "scipy.special.gammaln")


# psi is the same ufunc as digamma: `from scipy.special import psi` finds this row too.
@rev("rt.digamma", "scipy.special.digamma", "scipy.special.psi")
def digamma(dout, out, z):
    dz = dout * rt.trigamma(z)


@fwd("rt.digamma", "scipy.special.digamma", "scipy.special.psi")
def digamma_fwd(out, z):
    dout = dz * rt.trigamma(z)


batch_elementwise("rt.digamma", "scipy.special.digamma", "scipy.special.psi")


# trigamma(x) = polygamma(1, x), which refuses a complex x (scipy has polygamma for real x only;
# it has digamma for complex z too, so the refusal is the derivative's).
@rev("rt.trigamma")
def trigamma(dout, out, x):
    dx = dout * rt.polygamma(2, x)


@fwd("rt.trigamma")
def trigamma_fwd(out, x):
    dout = dx * rt.polygamma(2, x)


batch_elementwise("rt.trigamma")


@rev("rt.polygamma", "scipy.special.polygamma")
def polygamma(dout, out, n, x):
    dn = rt.no_derivative("scipy.special.polygamma with respect to its order n",
                          "n is an integer order; compute it outside the differentiated "
                          "code, or stop its gradient.")
    dx = rt.unbroadcast(dout * rt.polygamma(n + 1, x), x)


@fwd("rt.polygamma", "scipy.special.polygamma")
def polygamma_fwd(out, n, x):
    dout = rt.no_derivative_term(
        "scipy.special.polygamma with respect to its order n",
        "n is an integer order; compute it outside the differentiated "
        "code, or stop its gradient.", dn, out)
    dout = dx * rt.polygamma(n + 1, x)


# not a ufunc, but it broadcasts n against x elementwise
batch_elementwise("rt.polygamma", "scipy.special.polygamma")


@rev("rt.gamma", "scipy.special.gamma", "math.gamma")
def gamma(dout, out, z):
    dz = dout * out * rt.digamma(z)


@fwd("rt.gamma", "scipy.special.gamma", "math.gamma")
def gamma_fwd(out, z):
    dout = dz * out * rt.digamma(z)


batch_elementwise("rt.gamma", "scipy.special.gamma")


# rgamma = 1 / Gamma is entire. Its slope -rgamma(z) digamma(z) is 0 * inf at the poles of
# Gamma (z = 0, -1, -2, ...), where the slope is (-1)^n n!; left of 1/2 the slope of the
# reflection formula rgamma(z) = Gamma(1 - z) sin(pi z) / pi stays finite there. Each
# branch is evaluated at its own points only (`zl`, `zr`), so that the other branch's
# infinities do not reach higher derivatives through np.where.
@rev("rt.rgamma", "scipy.special.rgamma")
def rgamma(dout, out, z):
    left = np.real(z) < 0.5
    zl = np.where(left, z, 0.0)
    zr = np.where(left, 1.0, z)
    dz = dout * np.where(left, rt.gamma(1.0 - zl) * (np.cos(np.pi * zl) - rt.digamma(1.0 - zl)
                                                     * np.sin(np.pi * zl) / np.pi),
                         -out * rt.digamma(zr))


@fwd("rt.rgamma", "scipy.special.rgamma")
def rgamma_fwd(out, z):
    left = np.real(z) < 0.5
    zl = np.where(left, z, 0.0)
    zr = np.where(left, 1.0, z)
    dout = dz * np.where(left, rt.gamma(1.0 - zl) * (np.cos(np.pi * zl) - rt.digamma(1.0 - zl)
                                                     * np.sin(np.pi * zl) / np.pi),
                         -out * rt.digamma(zr))


batch_elementwise("rt.rgamma", "scipy.special.rgamma")


@rev("rt.beta", "scipy.special.beta")
def beta(dout, out, a, b):
    dab = rt.digamma(a + b)
    da = rt.unbroadcast(dout * out * (rt.digamma(a) - dab), a)
    db = rt.unbroadcast(dout * out * (rt.digamma(b) - dab), b)


@fwd("rt.beta", "scipy.special.beta")
def beta_fwd(out, a, b):
    dab = rt.digamma(a + b)
    dout = da * out * (rt.digamma(a) - dab)
    dout = db * out * (rt.digamma(b) - dab)


batch_elementwise("rt.beta", "scipy.special.beta")


@rev("rt.betaln", "scipy.special.betaln")
def betaln(dout, out, a, b):
    dab = rt.digamma(a + b)
    da = rt.unbroadcast(dout * (rt.digamma(a) - dab), a)
    db = rt.unbroadcast(dout * (rt.digamma(b) - dab), b)


@fwd("rt.betaln", "scipy.special.betaln")
def betaln_fwd(out, a, b):
    dab = rt.digamma(a + b)
    dout = da * (rt.digamma(a) - dab)
    dout = db * (rt.digamma(b) - dab)


batch_elementwise("rt.betaln", "scipy.special.betaln")


# multigammaln(a, d) is a constant plus the sum of gammaln(a - j / 2) over j < d; d is an
# integer (the dimension), and rt.multipolygamma(n, a, d) sums polygamma(n, a - j / 2).
@rev("rt.multigammaln", "scipy.special.multigammaln")
def multigammaln(dout, out, a, d):
    da = dout * rt.multipolygamma(0, a, d)


@fwd("rt.multigammaln", "scipy.special.multigammaln")
def multigammaln_fwd(out, a, d):
    dout = da * rt.multipolygamma(0, a, d)


@batch("rt.multigammaln", "scipy.special.multigammaln")
def multigammaln_batch(a, d):
    if d_batched:
        out = rt.cannot_batch("scipy.special.multigammaln",
                              "its dimension d differs between examples")
    else:
        out = rt.multigammaln(a, d)


@rev("rt.multipolygamma")
def multipolygamma(dout, out, n, a, d):
    da = dout * rt.multipolygamma(n + 1, a, d)


@fwd("rt.multipolygamma")
def multipolygamma_fwd(out, n, a, d):
    dout = da * rt.multipolygamma(n + 1, a, d)


@batch("rt.multipolygamma")
def multipolygamma_batch(n, a, d):
    if n_batched or d_batched:
        out = rt.cannot_batch("scipy.special.multigammaln",
                              "its dimension d differs between examples")
    else:
        out = rt.multipolygamma(n, a, d)


# ---------------------------------------------------------------- incomplete gamma and beta
# The slopes in x are densities, written through logs so that they stay finite where the
# factors under- or overflow: x^(a-1) e^-x / Gamma(a) and x^(a-1) (1-x)^(b-1) / B(a, b).
# xlogy keeps x^0 = 1 at x = 0 (a = 1, b = 1).

@rev("rt.gammainc", "scipy.special.gammainc")
def gammainc(dout, out, a, x):
    da = rt.no_derivative("scipy.special.gammainc with respect to a",
                          "the derivative in the shape a has no closed form (JAX has none "
                          "either); differentiate with respect to x only.")
    dx = rt.unbroadcast(dout * np.exp(rt.xlogy(a - 1.0, x) - x - rt.gammaln(a)), x)


@fwd("rt.gammainc", "scipy.special.gammainc")
def gammainc_fwd(out, a, x):
    dout = rt.no_derivative_term(
        "scipy.special.gammainc with respect to a",
        "the derivative in the shape a has no closed form (JAX has none "
        "either); differentiate with respect to x only.", da, out)
    dout = dx * np.exp(rt.xlogy(a - 1.0, x) - x - rt.gammaln(a))


batch_elementwise("rt.gammainc", "scipy.special.gammainc")


@rev("rt.gammaincc", "scipy.special.gammaincc")
def gammaincc(dout, out, a, x):
    da = rt.no_derivative("scipy.special.gammaincc with respect to a",
                          "the derivative in the shape a has no closed form (JAX has none "
                          "either); differentiate with respect to x only.")
    dx = rt.unbroadcast(-dout * np.exp(rt.xlogy(a - 1.0, x) - x - rt.gammaln(a)), x)


@fwd("rt.gammaincc", "scipy.special.gammaincc")
def gammaincc_fwd(out, a, x):
    dout = rt.no_derivative_term(
        "scipy.special.gammaincc with respect to a",
        "the derivative in the shape a has no closed form (JAX has none "
        "either); differentiate with respect to x only.", da, out)
    dout = -dx * np.exp(rt.xlogy(a - 1.0, x) - x - rt.gammaln(a))


batch_elementwise("rt.gammaincc", "scipy.special.gammaincc")


@rev("rt.betainc", "scipy.special.betainc")
def betainc(dout, out, a, b, x):
    da = rt.no_derivative("scipy.special.betainc with respect to a",
                          "the derivatives in a and b have no closed form (JAX has none "
                          "either); differentiate with respect to x only.")
    db = rt.no_derivative("scipy.special.betainc with respect to b",
                          "the derivatives in a and b have no closed form (JAX has none "
                          "either); differentiate with respect to x only.")
    dx = rt.unbroadcast(dout * np.exp(rt.xlogy(a - 1.0, x) + rt.xlog1py(b - 1.0, -x)
                                      - rt.betaln(a, b)), x)


@fwd("rt.betainc", "scipy.special.betainc")
def betainc_fwd(out, a, b, x):
    dout = rt.no_derivative_term(
        "scipy.special.betainc with respect to a",
        "the derivatives in a and b have no closed form (JAX has none "
        "either); differentiate with respect to x only.", da, out)
    dout = rt.no_derivative_term(
        "scipy.special.betainc with respect to b",
        "the derivatives in a and b have no closed form (JAX has none "
        "either); differentiate with respect to x only.", db, out)
    dout = dx * np.exp(rt.xlogy(a - 1.0, x) + rt.xlog1py(b - 1.0, -x) - rt.betaln(a, b))


batch_elementwise("rt.betainc", "scipy.special.betainc")

# ---------------------------------------------------------------- x log y

# xlogy(x, y) = x log(y), 0 where x == 0 (whatever y is). As in JAX, its slope in x is
# log(y) also at x == 0; its slope in y is x / y, 0 where x == 0 (rt.xdivy, also at y == 0).
@rev("rt.xlogy", "scipy.special.xlogy")
def xlogy(dout, out, x, y):
    dx = rt.unbroadcast(rt.xlogy(dout, y), x)      # (a zero adjoint stays 0 at y == 0)
    dy = rt.unbroadcast(dout * rt.xdivy(x, y), y)


@fwd("rt.xlogy", "scipy.special.xlogy")
def xlogy_fwd(out, x, y):
    dout = rt.xlogy(dx, y)          # a zero tangent of x adds 0, also where y == 0
    dout = dy * rt.xdivy(x, y)


batch_elementwise("rt.xlogy", "scipy.special.xlogy")


@rev("rt.xlog1py", "scipy.special.xlog1py")
def xlog1py(dout, out, x, y):
    dx = rt.unbroadcast(rt.xlog1py(dout, y), x)
    dy = rt.unbroadcast(dout * rt.xdivy(x, 1.0 + y), y)


@fwd("rt.xlog1py", "scipy.special.xlog1py")
def xlog1py_fwd(out, x, y):
    dout = rt.xlog1py(dx, y)
    dout = dy * rt.xdivy(x, 1.0 + y)


batch_elementwise("rt.xlog1py", "scipy.special.xlog1py")


# xdivy(x, y) = x / y, 0 where x == 0. Its slope in y, -x / y^2, is -xdivy(out, y): 0 where
# x == 0 again.
@rev("rt.xdivy")
def xdivy(dout, out, x, y):
    dx = rt.unbroadcast(rt.xdivy(dout, y), x)      # (a zero adjoint stays 0 at y == 0)
    dy = rt.unbroadcast(-dout * rt.xdivy(out, y), y)


@fwd("rt.xdivy")
def xdivy_fwd(out, x, y):
    dout = rt.xdivy(dx, y)          # a zero tangent of x adds 0, also where y == 0
    dout = -dy * rt.xdivy(out, y)


batch_elementwise("rt.xdivy")


# entr(x) = -x log(x) for x > 0, 0 at 0, -inf for x < 0 (a constant there: slope 0). The
# slope -(1 + log(x)) is +inf at 0, as in JAX; `safe` keeps log's nan for x < 0 out of higher
# derivatives.
@rev("rt.entr", "scipy.special.entr")
def entr(dout, out, x):
    neg = x < 0.0
    safe = np.where(neg, 1.0, x)
    dx = dout * np.where(neg, 0.0, -1.0 - np.log(safe))


@fwd("rt.entr", "scipy.special.entr")
def entr_fwd(out, x):
    neg = x < 0.0
    safe = np.where(neg, 1.0, x)
    dout = dx * np.where(neg, 0.0, -1.0 - np.log(safe))


batch_elementwise("rt.entr", "scipy.special.entr")

# ---------------------------------------------------------------- error function, normal cdf

@rev("rt.erf", "scipy.special.erf", "math.erf")
def erf(dout, out, z):
    dz = dout * 1.1283791670955126 * np.exp(-z * z)


@fwd("rt.erf", "scipy.special.erf", "math.erf")
def erf_fwd(out, z):
    dout = dz * 1.1283791670955126 * np.exp(-z * z)


batch_elementwise("rt.erf", "scipy.special.erf")


@rev("rt.erfc", "scipy.special.erfc", "math.erfc")
def erfc(dout, out, x):
    dx = -dout * 1.1283791670955126 * np.exp(-x * x)


@fwd("rt.erfc", "scipy.special.erfc", "math.erfc")
def erfc_fwd(out, x):
    dout = -dx * 1.1283791670955126 * np.exp(-x * x)


batch_elementwise("rt.erfc", "scipy.special.erfc")
# math's versions work on one number; their batched spelling is the array one
for _math, _array in {"erf": "rt.erf", "erfc": "rt.erfc", "gamma": "rt.gamma",
                      "lgamma": "rt.gammaln"}.items():
    batch_elementwise("math." + _math, vectorized=_array)


# The inverses' slopes are the reciprocals of erf's at the result (infinite at y = +-1).
@rev("rt.erfinv", "scipy.special.erfinv")
def erfinv(dout, out, y):
    dy = dout * 0.886226925452758 * np.exp(out * out)


@fwd("rt.erfinv", "scipy.special.erfinv")
def erfinv_fwd(out, y):
    dout = dy * 0.886226925452758 * np.exp(out * out)


batch_elementwise("rt.erfinv", "scipy.special.erfinv")


@rev("rt.erfcinv", "scipy.special.erfcinv")
def erfcinv(dout, out, y):
    dy = -dout * 0.886226925452758 * np.exp(out * out)


@fwd("rt.erfcinv", "scipy.special.erfcinv")
def erfcinv_fwd(out, y):
    dout = -dy * 0.886226925452758 * np.exp(out * out)


batch_elementwise("rt.erfcinv", "scipy.special.erfcinv")


@rev("rt.ndtr", "scipy.special.ndtr")
def ndtr(dout, out, x):
    dx = dout * np.exp(-0.5 * x * x - 0.9189385332046727)


@fwd("rt.ndtr", "scipy.special.ndtr")
def ndtr_fwd(out, x):
    dout = dx * np.exp(-0.5 * x * x - 0.9189385332046727)


batch_elementwise("rt.ndtr", "scipy.special.ndtr")


@rev("rt.ndtri", "scipy.special.ndtri")
def ndtri(dout, out, y):
    dy = dout * np.exp(0.5 * out * out + 0.9189385332046727)


@fwd("rt.ndtri", "scipy.special.ndtri")
def ndtri_fwd(out, y):
    dout = dy * np.exp(0.5 * out * out + 0.9189385332046727)


batch_elementwise("rt.ndtri", "scipy.special.ndtri")


# the slope pdf(x) / ndtr(x): both underflow for very negative x, their ratio (about -x)
# does not (rt.ndtr_hazard)
@rev("rt.log_ndtr", "scipy.special.log_ndtr")
def log_ndtr(dout, out, x):
    dx = dout * rt.ndtr_hazard(x)


@fwd("rt.log_ndtr", "scipy.special.log_ndtr")
def log_ndtr_fwd(out, x):
    dout = dx * rt.ndtr_hazard(x)


# h = pdf / ndtr: h' = -h (x + h)
@rev("rt.ndtr_hazard")
def ndtr_hazard(dout, out, x):
    dx = -dout * out * (x + out)


@fwd("rt.ndtr_hazard")
def ndtr_hazard_fwd(out, x):
    dout = -dx * out * (x + out)


batch_elementwise("rt.ndtr_hazard")
batch_elementwise("rt.log_ndtr", "scipy.special.log_ndtr")

# ---------------------------------------------------------------- logistic

# expit' = expit(x) (1 - expit(x)) = expit(x) expit(-x): the second form keeps its digits in the
# right tail too, where 1 - expit(x) rounds to 0 (x > 37).
@rev("rt.expit", "scipy.special.expit")
def expit(dout, out, x):
    dx = dout * out * rt.expit(-x)


@fwd("rt.expit", "scipy.special.expit")
def expit_fwd(out, x):
    dout = dx * out * rt.expit(-x)


batch_elementwise("rt.expit", "scipy.special.expit")


@rev("rt.logit", "scipy.special.logit")
def logit(dout, out, x):
    dx = dout / (x * (1.0 - x))


@fwd("rt.logit", "scipy.special.logit")
def logit_fwd(out, x):
    dout = dx / (x * (1.0 - x))


batch_elementwise("rt.logit", "scipy.special.logit")

# ---------------------------------------------------------------- Bessel functions
# I_v' = (I_{v-1} + I_v+1) / 2, J_v' = (J_{v-1} - J_{v+1}) / 2, the same for Y_n; with
# I_{-1} = I_1, J_{-1} = -J_1, Y_{-1} = -Y_1 the integer orders 0 and 1 follow. The
# exponentially scaled ones, ive = iv exp(-|Re z|), add -sign(Re z) ive.

@rev("rt.i0", "scipy.special.i0")
def i0(dout, out, x):
    dx = dout * rt.i1(x)


@fwd("rt.i0", "scipy.special.i0")
def i0_fwd(out, x):
    dout = dx * rt.i1(x)


batch_elementwise("rt.i0", "scipy.special.i0")


@rev("rt.i1", "scipy.special.i1")
def i1(dout, out, x):
    dx = dout * 0.5 * (rt.i0(x) + rt.iv(2.0, x))


@fwd("rt.i1", "scipy.special.i1")
def i1_fwd(out, x):
    dout = dx * 0.5 * (rt.i0(x) + rt.iv(2.0, x))


batch_elementwise("rt.i1", "scipy.special.i1")


@rev("rt.iv", "scipy.special.iv")
def iv(dout, out, v, z):
    dv = rt.no_derivative("scipy.special.iv with respect to its order v",
                          "the derivative in the order has no closed form (JAX has none "
                          "either); differentiate with respect to z only.")
    dz = rt.unbroadcast(dout * 0.5 * (rt.iv(v - 1.0, z) + rt.iv(v + 1.0, z)), z)


@fwd("rt.iv", "scipy.special.iv")
def iv_fwd(out, v, z):
    dout = rt.no_derivative_term(
        "scipy.special.iv with respect to its order v",
        "the derivative in the order has no closed form (JAX has none "
        "either); differentiate with respect to z only.", dv, out)
    dout = dz * 0.5 * (rt.iv(v - 1.0, z) + rt.iv(v + 1.0, z))


batch_elementwise("rt.iv", "scipy.special.iv")


# Wright's generalized Bessel function, sum_k x^k / (k! gamma(a k + b)): in x its slope is
# the same series with b + a (term by term); in a and b it has no closed form
@rev("rt.wright_bessel", "scipy.special.wright_bessel")
def wright_bessel(dout, out, a, b, x):
    da = rt.no_derivative("scipy.special.wright_bessel with respect to a",
                          "the derivatives in a and b have no closed form; differentiate "
                          "with respect to x only.")
    db = rt.no_derivative("scipy.special.wright_bessel with respect to b",
                          "the derivatives in a and b have no closed form; differentiate "
                          "with respect to x only.")
    dx = rt.unbroadcast(dout * rt.wright_bessel(a, a + b, x), x)


@fwd("rt.wright_bessel", "scipy.special.wright_bessel")
def wright_bessel_fwd(out, a, b, x):
    dout = rt.no_derivative_term(
        "scipy.special.wright_bessel with respect to a",
        "the derivatives in a and b have no closed form; differentiate with respect to x "
        "only.", da, out)
    dout = rt.no_derivative_term(
        "scipy.special.wright_bessel with respect to b",
        "the derivatives in a and b have no closed form; differentiate with respect to x "
        "only.", db, out)
    dout = dx * rt.wright_bessel(a, a + b, x)


batch_elementwise("rt.wright_bessel", "scipy.special.wright_bessel")


@rev("rt.i0e", "scipy.special.i0e")
def i0e(dout, out, x):
    dx = dout * (rt.i1e(x) - np.sign(x) * out)


@fwd("rt.i0e", "scipy.special.i0e")
def i0e_fwd(out, x):
    dout = dx * (rt.i1e(x) - np.sign(x) * out)


batch_elementwise("rt.i0e", "scipy.special.i0e")


@rev("rt.i1e", "scipy.special.i1e")
def i1e(dout, out, x):
    dx = dout * (0.5 * (rt.i0e(x) + rt.ive(2.0, x)) - np.sign(x) * out)


@fwd("rt.i1e", "scipy.special.i1e")
def i1e_fwd(out, x):
    dout = dx * (0.5 * (rt.i0e(x) + rt.ive(2.0, x)) - np.sign(x) * out)


batch_elementwise("rt.i1e", "scipy.special.i1e")


# For a complex z the factor exp(-|Re z|) is not holomorphic: the tangent has a term in
# Re(dz), whose transpose (JAX's convention, no conjugation) is Re(dout * ...). For a real z
# np.real changes nothing.
@rev("rt.ive", "scipy.special.ive")
def ive(dout, out, v, z):
    dv = rt.no_derivative("scipy.special.ive with respect to its order v",
                          "the derivative in the order has no closed form (JAX has none "
                          "either); differentiate with respect to z only.")
    dz = rt.unbroadcast(dout * 0.5 * (rt.ive(v - 1.0, z) + rt.ive(v + 1.0, z))
                        - np.real(dout * np.sign(np.real(z)) * out), z)


@fwd("rt.ive", "scipy.special.ive")
def ive_fwd(out, v, z):
    dout = rt.no_derivative_term(
        "scipy.special.ive with respect to its order v",
        "the derivative in the order has no closed form (JAX has none "
        "either); differentiate with respect to z only.", dv, out)
    dout = dz * 0.5 * (rt.ive(v - 1.0, z) + rt.ive(v + 1.0, z)) \
        - np.sign(np.real(z)) * out * np.real(dz)


batch_elementwise("rt.ive", "scipy.special.ive")


@rev("rt.j0", "scipy.special.j0")
def j0(dout, out, x):
    dx = -dout * rt.j1(x)


@fwd("rt.j0", "scipy.special.j0")
def j0_fwd(out, x):
    dout = -dx * rt.j1(x)


batch_elementwise("rt.j0", "scipy.special.j0")


@rev("rt.j1", "scipy.special.j1")
def j1(dout, out, x):
    dx = dout * 0.5 * (rt.j0(x) - rt.jv(2.0, x))


@fwd("rt.j1", "scipy.special.j1")
def j1_fwd(out, x):
    dout = dx * 0.5 * (rt.j0(x) - rt.jv(2.0, x))


batch_elementwise("rt.j1", "scipy.special.j1")


@rev("rt.jv", "scipy.special.jv")
def jv(dout, out, v, z):
    dv = rt.no_derivative("scipy.special.jv with respect to its order v",
                          "the derivative in the order has no closed form (JAX has none "
                          "either); differentiate with respect to z only.")
    dz = rt.unbroadcast(dout * 0.5 * (rt.jv(v - 1.0, z) - rt.jv(v + 1.0, z)), z)


@fwd("rt.jv", "scipy.special.jv")
def jv_fwd(out, v, z):
    dout = rt.no_derivative_term(
        "scipy.special.jv with respect to its order v",
        "the derivative in the order has no closed form (JAX has none "
        "either); differentiate with respect to z only.", dv, out)
    dout = dz * 0.5 * (rt.jv(v - 1.0, z) - rt.jv(v + 1.0, z))


batch_elementwise("rt.jv", "scipy.special.jv")


@rev("rt.y0", "scipy.special.y0")
def y0(dout, out, x):
    dx = -dout * rt.y1(x)


@fwd("rt.y0", "scipy.special.y0")
def y0_fwd(out, x):
    dout = -dx * rt.y1(x)


batch_elementwise("rt.y0", "scipy.special.y0")


@rev("rt.y1", "scipy.special.y1")
def y1(dout, out, x):
    dx = dout * 0.5 * (rt.y0(x) - rt.yn(2, x))


@fwd("rt.y1", "scipy.special.y1")
def y1_fwd(out, x):
    dout = dx * 0.5 * (rt.y0(x) - rt.yn(2, x))


batch_elementwise("rt.y1", "scipy.special.y1")


@rev("rt.yn", "scipy.special.yn")
def yn(dout, out, n, x):
    dn = rt.no_derivative("scipy.special.yn with respect to its order n",
                          "n is an integer order; compute it outside the differentiated "
                          "code, or stop its gradient.")
    dx = rt.unbroadcast(dout * 0.5 * (rt.yn(n - 1, x) - rt.yn(n + 1, x)), x)


@fwd("rt.yn", "scipy.special.yn")
def yn_fwd(out, n, x):
    dout = rt.no_derivative_term(
        "scipy.special.yn with respect to its order n",
        "n is an integer order; compute it outside the differentiated "
        "code, or stop its gradient.", dn, out)
    dout = dx * 0.5 * (rt.yn(n - 1, x) - rt.yn(n + 1, x))


batch_elementwise("rt.yn", "scipy.special.yn")

# Y_v' = (Y_{v-1} - Y_{v+1}) / 2 and K_v' = -(K_{v-1} + K_{v+1}) / 2 (K_{-1} = K_1); the
# scaled kve = kv exp(z) adds kve (holomorphic: exp(z), not exp(|z|)), k0e and k1e likewise.
@rev("rt.yv", "scipy.special.yv")
def yv(dout, out, v, z):
    dv = rt.no_derivative("scipy.special.yv with respect to its order v",
                          "the derivative in the order has no closed form (JAX has none "
                          "either); differentiate with respect to z only.")
    dz = rt.unbroadcast(dout * 0.5 * (rt.yv(v - 1.0, z) - rt.yv(v + 1.0, z)), z)


@fwd("rt.yv", "scipy.special.yv")
def yv_fwd(out, v, z):
    dout = rt.no_derivative_term(
        "scipy.special.yv with respect to its order v",
        "the derivative in the order has no closed form (JAX has none "
        "either); differentiate with respect to z only.", dv, out)
    dout = dz * 0.5 * (rt.yv(v - 1.0, z) - rt.yv(v + 1.0, z))


batch_elementwise("rt.yv", "scipy.special.yv")


@rev("rt.kv", "scipy.special.kv")
def kv(dout, out, v, z):
    dv = rt.no_derivative("scipy.special.kv with respect to its order v",
                          "the derivative in the order has no closed form (JAX has none "
                          "either); differentiate with respect to z only.")
    dz = rt.unbroadcast(-dout * 0.5 * (rt.kv(v - 1.0, z) + rt.kv(v + 1.0, z)), z)


@fwd("rt.kv", "scipy.special.kv")
def kv_fwd(out, v, z):
    dout = rt.no_derivative_term(
        "scipy.special.kv with respect to its order v",
        "the derivative in the order has no closed form (JAX has none "
        "either); differentiate with respect to z only.", dv, out)
    dout = -dz * 0.5 * (rt.kv(v - 1.0, z) + rt.kv(v + 1.0, z))


batch_elementwise("rt.kv", "scipy.special.kv")


@rev("rt.kve", "scipy.special.kve")
def kve(dout, out, v, z):
    dv = rt.no_derivative("scipy.special.kve with respect to its order v",
                          "the derivative in the order has no closed form (JAX has none "
                          "either); differentiate with respect to z only.")
    dz = rt.unbroadcast(dout * (out - 0.5 * (rt.kve(v - 1.0, z) + rt.kve(v + 1.0, z))), z)


@fwd("rt.kve", "scipy.special.kve")
def kve_fwd(out, v, z):
    dout = rt.no_derivative_term(
        "scipy.special.kve with respect to its order v",
        "the derivative in the order has no closed form (JAX has none "
        "either); differentiate with respect to z only.", dv, out)
    dout = dz * (out - 0.5 * (rt.kve(v - 1.0, z) + rt.kve(v + 1.0, z)))


batch_elementwise("rt.kve", "scipy.special.kve")


@rev("rt.k0", "scipy.special.k0")
def k0(dout, out, x):
    dx = -dout * rt.k1(x)


@fwd("rt.k0", "scipy.special.k0")
def k0_fwd(out, x):
    dout = -dx * rt.k1(x)


batch_elementwise("rt.k0", "scipy.special.k0")


@rev("rt.k1", "scipy.special.k1")
def k1(dout, out, x):
    dx = -dout * 0.5 * (rt.k0(x) + rt.kv(2.0, x))


@fwd("rt.k1", "scipy.special.k1")
def k1_fwd(out, x):
    dout = -dx * 0.5 * (rt.k0(x) + rt.kv(2.0, x))


batch_elementwise("rt.k1", "scipy.special.k1")


@rev("rt.k0e", "scipy.special.k0e")
def k0e(dout, out, x):
    dx = dout * (out - rt.k1e(x))


@fwd("rt.k0e", "scipy.special.k0e")
def k0e_fwd(out, x):
    dout = dx * (out - rt.k1e(x))


batch_elementwise("rt.k0e", "scipy.special.k0e")


@rev("rt.k1e", "scipy.special.k1e")
def k1e(dout, out, x):
    dx = dout * (out - 0.5 * (rt.k0e(x) + rt.kve(2.0, x)))


@fwd("rt.k1e", "scipy.special.k1e")
def k1e_fwd(out, x):
    dout = dx * (out - 0.5 * (rt.k0e(x) + rt.kve(2.0, x)))


batch_elementwise("rt.k1e", "scipy.special.k1e")


# erfcx(x) = exp(x^2) erfc(x): erfcx' = 2 x erfcx(x) - 2 / sqrt(pi)
@rev("rt.erfcx", "scipy.special.erfcx")
def erfcx(dout, out, x):
    dx = dout * (2.0 * x * out - 1.1283791670955126)


@fwd("rt.erfcx", "scipy.special.erfcx")
def erfcx_fwd(out, x):
    dout = dx * (2.0 * x * out - 1.1283791670955126)


batch_elementwise("rt.erfcx", "scipy.special.erfcx")


# loggamma's slope is digamma, for complex z too (scipy has both there)
@rev("rt.loggamma", "scipy.special.loggamma")
def loggamma(dout, out, x):
    dx = dout * rt.digamma(x)


@fwd("rt.loggamma", "scipy.special.loggamma")
def loggamma_fwd(out, x):
    dout = dx * rt.digamma(x)


batch_elementwise("rt.loggamma", "scipy.special.loggamma")


# the exponential integrals: Ei' = exp(x) / x, E1' = -exp(-z) / z
@rev("rt.expi", "scipy.special.expi")
def expi(dout, out, x):
    dx = dout * np.exp(x) / x


@fwd("rt.expi", "scipy.special.expi")
def expi_fwd(out, x):
    dout = dx * np.exp(x) / x


batch_elementwise("rt.expi", "scipy.special.expi")


@rev("rt.exp1", "scipy.special.exp1")
def exp1(dout, out, x):
    dx = -dout * np.exp(-x) / x


@fwd("rt.exp1", "scipy.special.exp1")
def exp1_fwd(out, x):
    dout = -dx * np.exp(-x) / x


batch_elementwise("rt.exp1", "scipy.special.exp1")

# ---------------------------------------------------------------- softmax

# axis=None (scipy's default) normalizes over all elements; np.sum(..., None, keepdims=True)
# sums over the same ones.
@rev("rt.softmax", "scipy.special.softmax")
def softmax(dout, out, x, axis=None):
    dx = out * (dout - np.sum(dout * out, axis, keepdims=True))


@fwd("rt.softmax", "scipy.special.softmax")
def softmax_fwd(out, x, axis=None):
    dout = out * (dx - np.sum(dx * out, axis, keepdims=True))


@batch("rt.softmax", "scipy.special.softmax")
def softmax_batch(x, axis=None):
    out = rt.softmax(x, rt.lane_axis(axis, x))


@rev("rt.log_softmax", "scipy.special.log_softmax")
def log_softmax(dout, out, x, axis=None):
    dx = dout - np.exp(out) * np.sum(dout, axis, keepdims=True)


@fwd("rt.log_softmax", "scipy.special.log_softmax")
def log_softmax_fwd(out, x, axis=None):
    dout = dx - np.sum(np.exp(out) * dx, axis, keepdims=True)


@batch("rt.log_softmax", "scipy.special.log_softmax")
def log_softmax_batch(x, axis=None):
    out = rt.log_softmax(x, rt.lane_axis(axis, x))
