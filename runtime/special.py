"""scipy.special functions as generated code calls them, and the helpers of their rules.

Generated modules import only numpy and `runtime`, so a scipy.special function is spelled
through its re-export here: `rt.erf` is `scipy.special.erf` itself (the rules in
transpile/rules/special.py list both spellings, so `from scipy.special import erf`,
`sp.erf` and `scipy.special.erf` all find the same row). scipy is optional: without it the
names below are None, runtime does not export them and the rules are not registered.

The helpers are numpy-only around scipy's functions:

    trigamma         polygamma(1, x), the slope of digamma, refusing complex x clearly
    no_derivative_term  the tangent term of an order with no derivative: 0 for a zero tangent
    xdivy            x / y, 0 where x == 0: the slopes of xlogy and xlog1py in y
    multipolygamma   the derivatives of multigammaln in a (sums of polygamma)
    ndtr_hazard      pdf(x) / ndtr(x), the slope of log_ndtr, without cancellation far left
"""
import numpy as np

from .adjoints import no_derivative
from .backend import array_module, with_device_version
from .errors import TransformError

try:  # re-exported so generated code can spell them `rt.erf`, ... (scipy is optional)
    from scipy.special import (  # noqa: F401
        beta, betainc, betaln, digamma, entr, erf, erfc, erfcinv, erfinv, expit, gamma,
        gammainc, gammaincc, gammaln, i0, i0e, i1, i1e, iv, ive, j0, j1, jv, log_ndtr,
        log_softmax, logit, multigammaln, ndtr, ndtri, polygamma, rgamma, softmax, xlog1py,
        xlogy, y0, y1, yn, yv, kv, kve, k0, k0e, k1, k1e, erfcx, loggamma, expi, exp1,
        wright_bessel)
except ImportError:  # pragma: no cover
    beta = betainc = betaln = digamma = entr = erf = erfc = erfcinv = erfinv = expit = None
    gamma = gammainc = gammaincc = gammaln = i0 = i0e = i1 = i1e = iv = ive = None
    j0 = j1 = jv = log_ndtr = log_softmax = logit = multigammaln = ndtr = ndtri = None
    polygamma = rgamma = softmax = xlog1py = xlogy = y0 = y1 = yn = None
    yv = kv = kve = k0 = k0e = k1 = k1e = erfcx = loggamma = expi = exp1 = None
    wright_bessel = None

# no ufuncs, so cupy's __array_ufunc__ cannot send them to cupyx: called there by name
log_softmax, multigammaln, polygamma, softmax = (
    with_device_version(f, "cupyx.scipy.special")
    for f in (log_softmax, multigammaln, polygamma, softmax))

REEXPORTED = ["beta", "betainc", "betaln", "digamma", "entr", "erf", "erfc", "erfcinv",
              "erfinv", "expit", "gamma", "gammainc", "gammaincc", "gammaln", "i0", "i0e",
              "i1", "i1e", "iv", "ive", "j0", "j1", "jv", "log_ndtr", "log_softmax", "logit",
              "multigammaln", "ndtr", "ndtri", "polygamma", "rgamma", "softmax", "xlog1py",
              "xlogy", "y0", "y1", "yn", "yv", "kv", "kve", "k0", "k0e", "k1", "k1e", "erfcx",
              "loggamma", "expi", "exp1", "wright_bessel"]


def ndtr_hazard(x):
    """pdf(x) / ndtr(x), the slope of log_ndtr. As exp(log pdf - log_ndtr) it loses digits
    for very negative x (1e-4 of it at -1e6, most of it at -1e8, where both logs are about
    -x^2 / 2): there it is sqrt(2 / pi) / erfcx(-x / sqrt 2), erfcx being the scaled erfc."""
    from scipy.special import erfcx       # (a ufunc: cupy arrays go to cupyx's)
    xp = array_module(x)
    x = xp.asarray(x)
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    left = xp.minimum(x, -5.0)
    right = xp.maximum(x, -5.0)
    with np.errstate(under="ignore"):
        near = xp.exp(-0.5 * right * right - 0.9189385332046727 - log_ndtr(right))
    far = 0.7978845608028654 / erfcx(-left * 0.7071067811865476)
    return xp.where(x < -5.0, far, near)


def trigamma(x):
    """polygamma(1, x), the slope of digamma. scipy evaluates digamma for complex numbers but
    polygamma for real ones only: for a complex x (the derivative of digamma, or the second
    one of gamma and rgamma, at a complex z) this raises a TransformError, not scipy's
    TypeError about ufunc loops."""
    if np.iscomplexobj(x):
        raise TransformError("scipy.special.digamma of a complex argument has no derivative "
                             "rule.\n  hint: its slope, polygamma(1, z), is in scipy for real "
                             "arguments only.")
    if type(x).__module__.startswith("cupy"):           # scipy's takes no cupy array
        from cupyx.scipy.special import polygamma as on_device
        return on_device(1, x)
    return polygamma(1, x)


def no_derivative_term(what, hint, tangent, like):
    """The forward-mode term of an argument whose derivative has no rule (polygamma's order,
    gammainc's shape): zeros shaped like `like` (the result) where that argument's tangent is
    0 everywhere, else the TransformError of rt.no_derivative.

    Higher derivatives call the rules' own formulas (polygamma(n + 1, x), iv(v - 1, z)) with
    the order as an argument, and the passes may hand an order that is not differentiated a
    tangent of zeros (jacfwd's zero tangents of other arguments, an order saved by a callee);
    its term is then exactly 0, whatever the missing derivative is."""
    if np.any(np.not_equal(tangent, 0)):    # nan included
        no_derivative(what, hint, tangent)      # (given the tangent: it raises)
    return np.zeros_like(like)


def xdivy(x, y):
    """x / y, and 0 where x == 0 whatever y is (0 / 0 included).

    The slope of xlogy(x, y) in y is x / y: 0 where x == 0, as xlogy itself is 0 there, also
    at y == 0 (JAX's xlogy gives nan there)."""
    zero = np.equal(x, 0)
    safe = np.where(zero, 1, y)
    return np.where(zero, 0, np.divide(x, safe))


def multipolygamma(n, a, d):
    """The (n + 1)-th derivative of multigammaln(a, d) in a: the sum of polygamma(n, a - j / 2)
    over j < d (n = 0: digamma), multigammaln(a, d) being a constant plus the sum of
    gammaln(a - j / 2)."""
    a = np.asarray(a)
    terms = [polygamma(n, a - 0.5 * j) for j in range(int(d))]
    return np.sum(terms, axis=0).astype(np.result_type(a, np.float32), copy=False)
