"""scipy.stats distributions: the pdf, logpdf, cdf, logcdf, sf and logsf of norm, cauchy, t,
beta, gamma and chi2, the pdf and logpdf of truncnorm, the ppf and isf of norm and cauchy,
the pmf, logpmf, cdf, logcdf, sf and logsf of poisson, dirichlet's and multivariate_normal's
pdf and logpdf (and multivariate_normal.cdf, whose derivatives refuse).

A distribution's method is a bound method of its instance (`scipy.stats.norm.logpdf`): the
table finds it by instance and function (core.lookup_object), and generated code calls its
runtime re-export (`rt.norm_logpdf`, runtime/stats.py), which calls scipy. Parameters are
named and defaulted as scipy's (`x, df, loc=0, scale=1`), so they bind positionally and by
keyword (norm's private standard ones too, `norm._cdf(x)`, which statsmodels calls).
Other methods (moments, ...) have no row. A frozen distribution's method is its
distribution's with the frozen parameters (frontend/calls.py: `norm(loc, scale).logpdf(x)`
made in the call, or a frozen one known while transforming, its parameters constants).

The continuous ones are loc-scale families: with z = (x - loc) / scale and the standard
log-density l(z), d/dx = l'(z) / scale, d/dloc = -d/dx, d/dscale = -(1 + z l'(z)) / scale;
the shape parameters' derivatives are closed forms in rt.digamma. Outside the support (where
logpdf is -inf, pdf 0) every derivative is 0, the formulas being evaluated at a safe z there
so that no nan leaks through np.where. The cdf and sf differentiate to the density in x,
loc and scale (logcdf and logsf to exp(logpdf - logcdf), finite far in the tails); in the
shape parameters they have no closed form and refuse (poisson's cdf in mu has one:
-pmf(floor(k), mu)). Invalid parameters (scale <= 0, df <= 0, ...) give scipy's nan values;
their derivatives are not checked.

The elementwise ones batch by broadcasting. scipy's dirichlet and multivariate_normal take
one alpha, one mean and cov: vmap calls rt.dirichlet_logpdf_lanes / rt.mvn_logpdf_lanes,
numpy versions broadcasting over leading axes, with rules of their own.
"""
from .core import batch, batch_elementwise, batch_same, fwd, nondiff, rev  # noqa: F401
import numpy as np  # noqa: F401
import runtime as rt  # noqa: F401


# The forward rules' refusal: a zero tangent (a constant's, such as an array a function
# closes over, which tp.jvp gives zero tangents) contributes zero; another one raises.
nondiff("rt.stats_no_derivative", side_effect=True)


@batch("rt.stats_no_derivative")
def stats_no_derivative_batch(what, hint, tangent, like):
    out = rt.stats_no_derivative(what, hint, tangent,
                                 rt.broadcast_batch(like, batch_size, like_batched))


# ---------------------------------------------------------------- norm
# l(z) = -z^2 / 2 - log(2 pi) / 2
@rev("rt.norm_pdf", "scipy.stats.norm.pdf", "scipy.stats.norm._pdf")
def norm_pdf(dout, out, x, loc=0, scale=1):
    z = (x - loc) / scale
    weight = dout * out
    slope = weight * (-z) / scale
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(-weight / scale - slope * z, scale)


@fwd("rt.norm_pdf", "scipy.stats.norm.pdf", "scipy.stats.norm._pdf")
def norm_pdf_fwd(out, x, loc=0, scale=1):
    z = (x - loc) / scale
    slope = out * (-z) / scale
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (-out / scale - slope * z)


batch_elementwise("rt.norm_pdf")


@rev("rt.norm_logpdf", "scipy.stats.norm.logpdf", "scipy.stats.norm._logpdf")
def norm_logpdf(dout, out, x, loc=0, scale=1):
    z = (x - loc) / scale
    slope = dout * (-z) / scale
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(-dout / scale - slope * z, scale)


@fwd("rt.norm_logpdf", "scipy.stats.norm.logpdf", "scipy.stats.norm._logpdf")
def norm_logpdf_fwd(out, x, loc=0, scale=1):
    z = (x - loc) / scale
    slope = (-z) / scale
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (-1.0 / scale - slope * z)


batch_elementwise("rt.norm_logpdf")


@rev("rt.norm_cdf", "scipy.stats.norm.cdf", "scipy.stats.norm._cdf")
def norm_cdf(dout, out, x, loc=0, scale=1):
    density = dout * rt.norm_pdf(x, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)


@fwd("rt.norm_cdf", "scipy.stats.norm.cdf", "scipy.stats.norm._cdf")
def norm_cdf_fwd(out, x, loc=0, scale=1):
    density = rt.norm_pdf(x, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale


batch_elementwise("rt.norm_cdf")


@rev("rt.norm_logcdf", "scipy.stats.norm.logcdf", "scipy.stats.norm._logcdf")
def norm_logcdf(dout, out, x, loc=0, scale=1):
    density = dout * rt.ndtr_hazard((x - loc) / scale) / scale
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)


@fwd("rt.norm_logcdf", "scipy.stats.norm.logcdf", "scipy.stats.norm._logcdf")
def norm_logcdf_fwd(out, x, loc=0, scale=1):
    density = rt.ndtr_hazard((x - loc) / scale) / scale
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale


batch_elementwise("rt.norm_logcdf")


@rev("rt.norm_sf", "scipy.stats.norm.sf", "scipy.stats.norm._sf")
def norm_sf(dout, out, x, loc=0, scale=1):
    density = -dout * rt.norm_pdf(x, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)


@fwd("rt.norm_sf", "scipy.stats.norm.sf", "scipy.stats.norm._sf")
def norm_sf_fwd(out, x, loc=0, scale=1):
    density = -rt.norm_pdf(x, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale


batch_elementwise("rt.norm_sf")


@rev("rt.norm_logsf", "scipy.stats.norm.logsf", "scipy.stats.norm._logsf")
def norm_logsf(dout, out, x, loc=0, scale=1):
    density = -dout * rt.ndtr_hazard((loc - x) / scale) / scale
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)


@fwd("rt.norm_logsf", "scipy.stats.norm.logsf", "scipy.stats.norm._logsf")
def norm_logsf_fwd(out, x, loc=0, scale=1):
    density = -rt.ndtr_hazard((loc - x) / scale) / scale
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale


batch_elementwise("rt.norm_logsf")


# The quantile functions: out = loc + scale * Q(q), Q the standard one, so d/dq is
# 1 / density(out) (infinite at q = 0 and 1, where out is infinite), d/dloc 1, d/dscale Q(q).
@rev("rt.norm_ppf", "scipy.stats.norm.ppf", "scipy.stats.norm._ppf")
def norm_ppf(dout, out, q, loc=0, scale=1):
    dq = rt.unbroadcast(dout / rt.norm_pdf(out, loc, scale), q)
    dloc = rt.unbroadcast(dout, loc)
    dscale = rt.unbroadcast(dout * (out - loc) / scale, scale)


@fwd("rt.norm_ppf", "scipy.stats.norm.ppf", "scipy.stats.norm._ppf")
def norm_ppf_fwd(out, q, loc=0, scale=1):
    dout = dq / rt.norm_pdf(out, loc, scale)
    dout = rt.broadcast_like(dloc, out)
    dout = dscale * (out - loc) / scale


batch_elementwise("rt.norm_ppf")


@rev("rt.norm_isf", "scipy.stats.norm.isf", "scipy.stats.norm._isf")
def norm_isf(dout, out, q, loc=0, scale=1):
    dq = rt.unbroadcast(-dout / rt.norm_pdf(out, loc, scale), q)
    dloc = rt.unbroadcast(dout, loc)
    dscale = rt.unbroadcast(dout * (out - loc) / scale, scale)


@fwd("rt.norm_isf", "scipy.stats.norm.isf", "scipy.stats.norm._isf")
def norm_isf_fwd(out, q, loc=0, scale=1):
    dout = -dq / rt.norm_pdf(out, loc, scale)
    dout = rt.broadcast_like(dloc, out)
    dout = dscale * (out - loc) / scale


batch_elementwise("rt.norm_isf")


# ---------------------------------------------------------------- cauchy
# l(z) = -log(pi) - log(1 + z^2), l'(z) = -2 z / (1 + z^2)
@rev("rt.cauchy_pdf", "scipy.stats.cauchy.pdf")
def cauchy_pdf(dout, out, x, loc=0, scale=1):
    z = (x - loc) / scale
    weight = dout * out
    slope = weight * (-2.0 * z / (1.0 + z * z)) / scale
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(-weight / scale - slope * z, scale)


@fwd("rt.cauchy_pdf", "scipy.stats.cauchy.pdf")
def cauchy_pdf_fwd(out, x, loc=0, scale=1):
    z = (x - loc) / scale
    slope = out * (-2.0 * z / (1.0 + z * z)) / scale
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (-out / scale - slope * z)


batch_elementwise("rt.cauchy_pdf")


@rev("rt.cauchy_logpdf", "scipy.stats.cauchy.logpdf")
def cauchy_logpdf(dout, out, x, loc=0, scale=1):
    z = (x - loc) / scale
    slope = dout * (-2.0 * z / (1.0 + z * z)) / scale
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(-dout / scale - slope * z, scale)


@fwd("rt.cauchy_logpdf", "scipy.stats.cauchy.logpdf")
def cauchy_logpdf_fwd(out, x, loc=0, scale=1):
    z = (x - loc) / scale
    slope = (-2.0 * z / (1.0 + z * z)) / scale
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (-1.0 / scale - slope * z)


batch_elementwise("rt.cauchy_logpdf")


@rev("rt.cauchy_cdf", "scipy.stats.cauchy.cdf")
def cauchy_cdf(dout, out, x, loc=0, scale=1):
    density = dout * rt.cauchy_pdf(x, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)


@fwd("rt.cauchy_cdf", "scipy.stats.cauchy.cdf")
def cauchy_cdf_fwd(out, x, loc=0, scale=1):
    density = rt.cauchy_pdf(x, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale


batch_elementwise("rt.cauchy_cdf")


# log cdf and log sf: the density over the cdf (sf) as exp(logpdf - logcdf): the tails are
# heavy, both fall like 1 / |z|, and neither underflows before the other
@rev("rt.cauchy_logcdf", "scipy.stats.cauchy.logcdf")
def cauchy_logcdf(dout, out, x, loc=0, scale=1):
    density = dout * np.exp(rt.cauchy_logpdf(x, loc, scale) - out)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)


@fwd("rt.cauchy_logcdf", "scipy.stats.cauchy.logcdf")
def cauchy_logcdf_fwd(out, x, loc=0, scale=1):
    density = np.exp(rt.cauchy_logpdf(x, loc, scale) - out)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale


batch_elementwise("rt.cauchy_logcdf")


@rev("rt.cauchy_sf", "scipy.stats.cauchy.sf")
def cauchy_sf(dout, out, x, loc=0, scale=1):
    density = -dout * rt.cauchy_pdf(x, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)


@fwd("rt.cauchy_sf", "scipy.stats.cauchy.sf")
def cauchy_sf_fwd(out, x, loc=0, scale=1):
    density = -rt.cauchy_pdf(x, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale


batch_elementwise("rt.cauchy_sf")


@rev("rt.cauchy_logsf", "scipy.stats.cauchy.logsf")
def cauchy_logsf(dout, out, x, loc=0, scale=1):
    density = -dout * np.exp(rt.cauchy_logpdf(x, loc, scale) - out)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)


@fwd("rt.cauchy_logsf", "scipy.stats.cauchy.logsf")
def cauchy_logsf_fwd(out, x, loc=0, scale=1):
    density = -np.exp(rt.cauchy_logpdf(x, loc, scale) - out)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale


batch_elementwise("rt.cauchy_logsf")


@rev("rt.cauchy_ppf", "scipy.stats.cauchy.ppf")
def cauchy_ppf(dout, out, q, loc=0, scale=1):
    dq = rt.unbroadcast(dout / rt.cauchy_pdf(out, loc, scale), q)
    dloc = rt.unbroadcast(dout, loc)
    dscale = rt.unbroadcast(dout * (out - loc) / scale, scale)


@fwd("rt.cauchy_ppf", "scipy.stats.cauchy.ppf")
def cauchy_ppf_fwd(out, q, loc=0, scale=1):
    dout = dq / rt.cauchy_pdf(out, loc, scale)
    dout = rt.broadcast_like(dloc, out)
    dout = dscale * (out - loc) / scale


batch_elementwise("rt.cauchy_ppf")


@rev("rt.cauchy_isf", "scipy.stats.cauchy.isf")
def cauchy_isf(dout, out, q, loc=0, scale=1):
    dq = rt.unbroadcast(-dout / rt.cauchy_pdf(out, loc, scale), q)
    dloc = rt.unbroadcast(dout, loc)
    dscale = rt.unbroadcast(dout * (out - loc) / scale, scale)


@fwd("rt.cauchy_isf", "scipy.stats.cauchy.isf")
def cauchy_isf_fwd(out, q, loc=0, scale=1):
    dout = -dq / rt.cauchy_pdf(out, loc, scale)
    dout = rt.broadcast_like(dloc, out)
    dout = dscale * (out - loc) / scale


batch_elementwise("rt.cauchy_isf")


# ---------------------------------------------------------------- truncnorm
# The normal restricted to a <= z <= b (a, b in units of scale from loc): l(z) = -z^2 / 2 -
# log(2 pi) / 2 - log(mass), mass = ndtr(b) - ndtr(a), so d/da = phi(a) / mass and
# d/db = -phi(b) / mass, as exp(log phi - log mass), log mass read back from the logpdf scipy
# computed (no cancellation of ndtr(b) - ndtr(a) far in a tail); outside [a, b] the logpdf is
# -inf and every derivative 0. The ends count as inside (the density is finite there).
@rev("rt.truncnorm_logpdf", "scipy.stats.truncnorm.logpdf")
def truncnorm_logpdf(dout, out, x, a, b, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_and(z >= a, z <= b)
    slope = np.where(inside, dout * (-z) / scale, 0.0)
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(np.where(inside, -dout / scale, 0.0) - slope * z, scale)
    log_mass = np.where(inside, -0.5 * z * z - 0.9189385332046727 - np.log(scale) - out,
                        0.0)
    da = rt.unbroadcast(np.where(inside, dout * np.exp(rt.norm_logpdf(a) - log_mass), 0.0), a)
    db = rt.unbroadcast(np.where(inside, -dout * np.exp(rt.norm_logpdf(b) - log_mass), 0.0),
                        b)


@fwd("rt.truncnorm_logpdf", "scipy.stats.truncnorm.logpdf")
def truncnorm_logpdf_fwd(out, x, a, b, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_and(z >= a, z <= b)
    slope = np.where(inside, (-z) / scale, 0.0)
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (np.where(inside, -1.0 / scale, 0.0) - slope * z)
    log_mass = np.where(inside, -0.5 * z * z - 0.9189385332046727 - np.log(scale) - out,
                        0.0)
    dout = da * np.where(inside, np.exp(rt.norm_logpdf(a) - log_mass), 0.0)
    dout = db * np.where(inside, -np.exp(rt.norm_logpdf(b) - log_mass), 0.0)


batch_elementwise("rt.truncnorm_logpdf")


@rev("rt.truncnorm_pdf", "scipy.stats.truncnorm.pdf")
def truncnorm_pdf(dout, out, x, a, b, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_and(z >= a, z <= b)
    weight = dout * out
    slope = np.where(inside, weight * (-z) / scale, 0.0)
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(np.where(inside, -weight / scale, 0.0) - slope * z, scale)
    log_mass = np.where(inside, -0.5 * z * z - 0.9189385332046727 - np.log(scale) -
                        np.log(np.where(inside, out, 1.0)), 0.0)
    da = rt.unbroadcast(np.where(inside, weight * np.exp(rt.norm_logpdf(a) - log_mass), 0.0), a)
    db = rt.unbroadcast(np.where(inside, -weight * np.exp(rt.norm_logpdf(b) - log_mass), 0.0),
                        b)


@fwd("rt.truncnorm_pdf", "scipy.stats.truncnorm.pdf")
def truncnorm_pdf_fwd(out, x, a, b, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_and(z >= a, z <= b)
    slope = np.where(inside, out * (-z) / scale, 0.0)
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (np.where(inside, -out / scale, 0.0) - slope * z)
    log_mass = np.where(inside, -0.5 * z * z - 0.9189385332046727 - np.log(scale) -
                        np.log(np.where(inside, out, 1.0)), 0.0)
    dout = da * np.where(inside, out * np.exp(rt.norm_logpdf(a) - log_mass), 0.0)
    dout = db * np.where(inside, -out * np.exp(rt.norm_logpdf(b) - log_mass), 0.0)


batch_elementwise("rt.truncnorm_pdf")


# ---------------------------------------------------------------- t
# l(z) = log G((df + 1) / 2) - log G(df / 2) - log(df pi) / 2
#   - (df + 1) / 2 log(1 + z^2 / df)
@rev("rt.t_pdf", "scipy.stats.t.pdf")
def t_pdf(dout, out, x, df, loc=0, scale=1):
    z = (x - loc) / scale
    weight = dout * out
    slope = weight * (-(df + 1.0) * z / (df + z * z)) / scale
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(-weight / scale - slope * z, scale)
    score = 0.5 * (rt.digamma(0.5 * df + 0.5) - rt.digamma(0.5 * df) - 1.0 / df
                   - np.log1p(z * z / df) + (df + 1.0) * z * z / (df * (df + z * z)))
    ddf = rt.unbroadcast(weight * score, df)


@fwd("rt.t_pdf", "scipy.stats.t.pdf")
def t_pdf_fwd(out, x, df, loc=0, scale=1):
    z = (x - loc) / scale
    slope = out * (-(df + 1.0) * z / (df + z * z)) / scale
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (-out / scale - slope * z)
    score = 0.5 * (rt.digamma(0.5 * df + 0.5) - rt.digamma(0.5 * df) - 1.0 / df
                   - np.log1p(z * z / df) + (df + 1.0) * z * z / (df * (df + z * z)))
    dout = ddf * out * score


batch_elementwise("rt.t_pdf")


@rev("rt.t_logpdf", "scipy.stats.t.logpdf")
def t_logpdf(dout, out, x, df, loc=0, scale=1):
    z = (x - loc) / scale
    slope = dout * (-(df + 1.0) * z / (df + z * z)) / scale
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(-dout / scale - slope * z, scale)
    score = 0.5 * (rt.digamma(0.5 * df + 0.5) - rt.digamma(0.5 * df) - 1.0 / df
                   - np.log1p(z * z / df) + (df + 1.0) * z * z / (df * (df + z * z)))
    ddf = rt.unbroadcast(dout * score, df)


@fwd("rt.t_logpdf", "scipy.stats.t.logpdf")
def t_logpdf_fwd(out, x, df, loc=0, scale=1):
    z = (x - loc) / scale
    slope = (-(df + 1.0) * z / (df + z * z)) / scale
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (-1.0 / scale - slope * z)
    score = 0.5 * (rt.digamma(0.5 * df + 0.5) - rt.digamma(0.5 * df) - 1.0 / df
                   - np.log1p(z * z / df) + (df + 1.0) * z * z / (df * (df + z * z)))
    dout = ddf * score


batch_elementwise("rt.t_logpdf")


@rev("rt.t_cdf", "scipy.stats.t.cdf")
def t_cdf(dout, out, x, df, loc=0, scale=1):
    density = dout * rt.t_pdf(x, df, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    ddf = rt.no_derivative(
        "scipy.stats.t.cdf with respect to df",
        "the t cdf's derivative in df has no closed form: differentiate in x, loc, scale")


@fwd("rt.t_cdf", "scipy.stats.t.cdf")
def t_cdf_fwd(out, x, df, loc=0, scale=1):
    density = rt.t_pdf(x, df, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.t.cdf with respect to df",
        "the t cdf's derivative in df has no closed form: differentiate in x, loc, scale",
        ddf, out)


batch_elementwise("rt.t_cdf")


@rev("rt.t_logcdf", "scipy.stats.t.logcdf")
def t_logcdf(dout, out, x, df, loc=0, scale=1):
    density = dout * np.exp(rt.t_logpdf(x, df, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    ddf = rt.no_derivative(
        "scipy.stats.t.logcdf with respect to df",
        "the t cdf's derivative in df has no closed form: differentiate in x, loc, scale")


@fwd("rt.t_logcdf", "scipy.stats.t.logcdf")
def t_logcdf_fwd(out, x, df, loc=0, scale=1):
    density = np.exp(rt.t_logpdf(x, df, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.t.logcdf with respect to df",
        "the t cdf's derivative in df has no closed form: differentiate in x, loc, scale",
        ddf, out)


batch_elementwise("rt.t_logcdf")


@rev("rt.t_sf", "scipy.stats.t.sf")
def t_sf(dout, out, x, df, loc=0, scale=1):
    density = -dout * rt.t_pdf(x, df, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    ddf = rt.no_derivative(
        "scipy.stats.t.sf with respect to df",
        "the t cdf's derivative in df has no closed form: differentiate in x, loc, scale")


@fwd("rt.t_sf", "scipy.stats.t.sf")
def t_sf_fwd(out, x, df, loc=0, scale=1):
    density = -rt.t_pdf(x, df, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.t.sf with respect to df",
        "the t cdf's derivative in df has no closed form: differentiate in x, loc, scale",
        ddf, out)


batch_elementwise("rt.t_sf")


@rev("rt.t_logsf", "scipy.stats.t.logsf")
def t_logsf(dout, out, x, df, loc=0, scale=1):
    density = -dout * np.exp(rt.t_logpdf(x, df, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    ddf = rt.no_derivative(
        "scipy.stats.t.logsf with respect to df",
        "the t cdf's derivative in df has no closed form: differentiate in x, loc, scale")


@fwd("rt.t_logsf", "scipy.stats.t.logsf")
def t_logsf_fwd(out, x, df, loc=0, scale=1):
    density = -np.exp(rt.t_logpdf(x, df, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.t.logsf with respect to df",
        "the t cdf's derivative in df has no closed form: differentiate in x, loc, scale",
        ddf, out)


batch_elementwise("rt.t_logsf")


# ---------------------------------------------------------------- beta
# l(z) = (a - 1) log z + (b - 1) log(1 - z) - log B(a, b), 0 < z < 1
@rev("rt.beta_pdf", "scipy.stats.beta.pdf")
def beta_pdf(dout, out, x, a, b, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(np.logical_and(z > 0.0, z < 1.0), np.logical_or(
        np.logical_and(z == 0.0, a == 1.0), np.logical_and(z == 1.0, b == 1.0)))
    zs = np.where(np.logical_and(z > 0.0, z < 1.0), z, 0.5)
    zs_a = np.where(z < 1.0, np.where(z > 0.0, zs, 1.0), 1.0)     # z at the end z = 1 too
    zs_b = np.where(z > 0.0, np.where(z < 1.0, zs, 0.0), 0.0)     # and at z = 0
    weight = dout * out
    slope = np.where(inside, weight * ((a - 1.0) / zs_a - (b - 1.0) / (1.0 - zs_b)) / scale, 0.0)
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(np.where(inside, -weight / scale, 0.0) - slope * z, scale)
    score_a = np.where(inside, np.where(z > 0.0, np.log(zs_a), -np.inf) - rt.digamma(a) +
                       rt.digamma(a + b), 0.0)
    da = rt.unbroadcast(weight * score_a, a)
    score_b = np.where(inside, np.where(z < 1.0, np.log1p(-zs_b), -np.inf) -
                       rt.digamma(b) + rt.digamma(a + b), 0.0)
    db = rt.unbroadcast(weight * score_b, b)


@fwd("rt.beta_pdf", "scipy.stats.beta.pdf")
def beta_pdf_fwd(out, x, a, b, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(np.logical_and(z > 0.0, z < 1.0), np.logical_or(
        np.logical_and(z == 0.0, a == 1.0), np.logical_and(z == 1.0, b == 1.0)))
    zs = np.where(np.logical_and(z > 0.0, z < 1.0), z, 0.5)
    zs_a = np.where(z < 1.0, np.where(z > 0.0, zs, 1.0), 1.0)     # z at the end z = 1 too
    zs_b = np.where(z > 0.0, np.where(z < 1.0, zs, 0.0), 0.0)     # and at z = 0
    slope = np.where(inside, out * ((a - 1.0) / zs_a - (b - 1.0) / (1.0 - zs_b)) / scale, 0.0)
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (np.where(inside, -out / scale, 0.0) - slope * z)
    score_a = np.where(inside, np.where(z > 0.0, np.log(zs_a), -np.inf) - rt.digamma(a) +
                       rt.digamma(a + b), 0.0)
    dout = da * out * score_a
    score_b = np.where(inside, np.where(z < 1.0, np.log1p(-zs_b), -np.inf) -
                       rt.digamma(b) + rt.digamma(a + b), 0.0)
    dout = db * out * score_b


batch_elementwise("rt.beta_pdf")


@rev("rt.beta_logpdf", "scipy.stats.beta.logpdf")
def beta_logpdf(dout, out, x, a, b, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(np.logical_and(z > 0.0, z < 1.0), np.logical_or(
        np.logical_and(z == 0.0, a == 1.0), np.logical_and(z == 1.0, b == 1.0)))
    zs = np.where(np.logical_and(z > 0.0, z < 1.0), z, 0.5)
    zs_a = np.where(z < 1.0, np.where(z > 0.0, zs, 1.0), 1.0)     # z at the end z = 1 too
    zs_b = np.where(z > 0.0, np.where(z < 1.0, zs, 0.0), 0.0)     # and at z = 0
    slope = np.where(inside, dout * ((a - 1.0) / zs_a - (b - 1.0) / (1.0 - zs_b)) / scale, 0.0)
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(np.where(inside, -dout / scale, 0.0) - slope * z, scale)
    score_a = np.where(inside, np.where(z > 0.0, np.log(zs_a), -np.inf) - rt.digamma(a) +
                       rt.digamma(a + b), 0.0)
    da = rt.unbroadcast(dout * score_a, a)
    score_b = np.where(inside, np.where(z < 1.0, np.log1p(-zs_b), -np.inf) -
                       rt.digamma(b) + rt.digamma(a + b), 0.0)
    db = rt.unbroadcast(dout * score_b, b)


@fwd("rt.beta_logpdf", "scipy.stats.beta.logpdf")
def beta_logpdf_fwd(out, x, a, b, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(np.logical_and(z > 0.0, z < 1.0), np.logical_or(
        np.logical_and(z == 0.0, a == 1.0), np.logical_and(z == 1.0, b == 1.0)))
    zs = np.where(np.logical_and(z > 0.0, z < 1.0), z, 0.5)
    zs_a = np.where(z < 1.0, np.where(z > 0.0, zs, 1.0), 1.0)     # z at the end z = 1 too
    zs_b = np.where(z > 0.0, np.where(z < 1.0, zs, 0.0), 0.0)     # and at z = 0
    slope = np.where(inside, ((a - 1.0) / zs_a - (b - 1.0) / (1.0 - zs_b)) / scale, 0.0)
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (np.where(inside, -1.0 / scale, 0.0) - slope * z)
    score_a = np.where(inside, np.where(z > 0.0, np.log(zs_a), -np.inf) - rt.digamma(a) +
                       rt.digamma(a + b), 0.0)
    dout = da * score_a
    score_b = np.where(inside, np.where(z < 1.0, np.log1p(-zs_b), -np.inf) -
                       rt.digamma(b) + rt.digamma(a + b), 0.0)
    dout = db * score_b


batch_elementwise("rt.beta_logpdf")


@rev("rt.beta_cdf", "scipy.stats.beta.cdf")
def beta_cdf(dout, out, x, a, b, loc=0, scale=1):
    density = dout * rt.beta_pdf(x, a, b, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    da = rt.no_derivative(
        "scipy.stats.beta.cdf with respect to a",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale")
    db = rt.no_derivative(
        "scipy.stats.beta.cdf with respect to b",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale")


@fwd("rt.beta_cdf", "scipy.stats.beta.cdf")
def beta_cdf_fwd(out, x, a, b, loc=0, scale=1):
    density = rt.beta_pdf(x, a, b, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.beta.cdf with respect to a",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale",
        da, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.beta.cdf with respect to b",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale",
        db, out)


batch_elementwise("rt.beta_cdf")


@rev("rt.beta_logcdf", "scipy.stats.beta.logcdf")
def beta_logcdf(dout, out, x, a, b, loc=0, scale=1):
    density = dout * np.exp(rt.beta_logpdf(x, a, b, loc, scale)
                            - np.where(out == -np.inf, 0.0, out))
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    da = rt.no_derivative(
        "scipy.stats.beta.logcdf with respect to a",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale")
    db = rt.no_derivative(
        "scipy.stats.beta.logcdf with respect to b",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale")


@fwd("rt.beta_logcdf", "scipy.stats.beta.logcdf")
def beta_logcdf_fwd(out, x, a, b, loc=0, scale=1):
    density = np.exp(rt.beta_logpdf(x, a, b, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.beta.logcdf with respect to a",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale",
        da, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.beta.logcdf with respect to b",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale",
        db, out)


batch_elementwise("rt.beta_logcdf")


@rev("rt.beta_sf", "scipy.stats.beta.sf")
def beta_sf(dout, out, x, a, b, loc=0, scale=1):
    density = -dout * rt.beta_pdf(x, a, b, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    da = rt.no_derivative(
        "scipy.stats.beta.sf with respect to a",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale")
    db = rt.no_derivative(
        "scipy.stats.beta.sf with respect to b",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale")


@fwd("rt.beta_sf", "scipy.stats.beta.sf")
def beta_sf_fwd(out, x, a, b, loc=0, scale=1):
    density = -rt.beta_pdf(x, a, b, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.beta.sf with respect to a",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale",
        da, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.beta.sf with respect to b",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale",
        db, out)


batch_elementwise("rt.beta_sf")


@rev("rt.beta_logsf", "scipy.stats.beta.logsf")
def beta_logsf(dout, out, x, a, b, loc=0, scale=1):
    density = -dout * np.exp(rt.beta_logpdf(x, a, b, loc, scale)
                             - np.where(out == -np.inf, 0.0, out))
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    da = rt.no_derivative(
        "scipy.stats.beta.logsf with respect to a",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale")
    db = rt.no_derivative(
        "scipy.stats.beta.logsf with respect to b",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale")


@fwd("rt.beta_logsf", "scipy.stats.beta.logsf")
def beta_logsf_fwd(out, x, a, b, loc=0, scale=1):
    density = -np.exp(rt.beta_logpdf(x, a, b, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.beta.logsf with respect to a",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale",
        da, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.beta.logsf with respect to b",
        "the beta cdf's derivative in a, b has no closed form: differentiate in x, loc, scale",
        db, out)


batch_elementwise("rt.beta_logsf")


# ---------------------------------------------------------------- gamma
# l(z) = (a - 1) log z - z - log G(a), z > 0
@rev("rt.gamma_pdf", "scipy.stats.gamma.pdf")
def gamma_pdf(dout, out, x, a, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(z > 0.0, np.logical_and(z == 0.0, a == 1.0))
    zs = np.where(z > 0.0, z, 1.0)
    weight = dout * out
    slope = np.where(inside, weight * ((a - 1.0) / zs - 1.0) / scale, 0.0)
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(np.where(inside, -weight / scale, 0.0) - slope * z, scale)
    score = np.where(inside, np.where(z > 0.0, np.log(zs), -np.inf) - rt.digamma(a), 0.0)
    da = rt.unbroadcast(weight * score, a)


@fwd("rt.gamma_pdf", "scipy.stats.gamma.pdf")
def gamma_pdf_fwd(out, x, a, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(z > 0.0, np.logical_and(z == 0.0, a == 1.0))
    zs = np.where(z > 0.0, z, 1.0)
    slope = np.where(inside, out * ((a - 1.0) / zs - 1.0) / scale, 0.0)
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (np.where(inside, -out / scale, 0.0) - slope * z)
    score = np.where(inside, np.where(z > 0.0, np.log(zs), -np.inf) - rt.digamma(a), 0.0)
    dout = da * out * score


batch_elementwise("rt.gamma_pdf")


@rev("rt.gamma_logpdf", "scipy.stats.gamma.logpdf")
def gamma_logpdf(dout, out, x, a, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(z > 0.0, np.logical_and(z == 0.0, a == 1.0))
    zs = np.where(z > 0.0, z, 1.0)
    slope = np.where(inside, dout * ((a - 1.0) / zs - 1.0) / scale, 0.0)
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(np.where(inside, -dout / scale, 0.0) - slope * z, scale)
    score = np.where(inside, np.where(z > 0.0, np.log(zs), -np.inf) - rt.digamma(a), 0.0)
    da = rt.unbroadcast(dout * score, a)


@fwd("rt.gamma_logpdf", "scipy.stats.gamma.logpdf")
def gamma_logpdf_fwd(out, x, a, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(z > 0.0, np.logical_and(z == 0.0, a == 1.0))
    zs = np.where(z > 0.0, z, 1.0)
    slope = np.where(inside, ((a - 1.0) / zs - 1.0) / scale, 0.0)
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (np.where(inside, -1.0 / scale, 0.0) - slope * z)
    score = np.where(inside, np.where(z > 0.0, np.log(zs), -np.inf) - rt.digamma(a), 0.0)
    dout = da * score


batch_elementwise("rt.gamma_logpdf")


@rev("rt.gamma_cdf", "scipy.stats.gamma.cdf")
def gamma_cdf(dout, out, x, a, loc=0, scale=1):
    density = dout * rt.gamma_pdf(x, a, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    da = rt.no_derivative(
        "scipy.stats.gamma.cdf with respect to a",
        "the gamma cdf's derivative in a has no closed form: differentiate in x, loc, scale")


@fwd("rt.gamma_cdf", "scipy.stats.gamma.cdf")
def gamma_cdf_fwd(out, x, a, loc=0, scale=1):
    density = rt.gamma_pdf(x, a, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.gamma.cdf with respect to a",
        "the gamma cdf's derivative in a has no closed form: differentiate in x, loc, scale",
        da, out)


batch_elementwise("rt.gamma_cdf")


@rev("rt.gamma_logcdf", "scipy.stats.gamma.logcdf")
def gamma_logcdf(dout, out, x, a, loc=0, scale=1):
    density = dout * np.exp(rt.gamma_logpdf(x, a, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    da = rt.no_derivative(
        "scipy.stats.gamma.logcdf with respect to a",
        "the gamma cdf's derivative in a has no closed form: differentiate in x, loc, scale")


@fwd("rt.gamma_logcdf", "scipy.stats.gamma.logcdf")
def gamma_logcdf_fwd(out, x, a, loc=0, scale=1):
    density = np.exp(rt.gamma_logpdf(x, a, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.gamma.logcdf with respect to a",
        "the gamma cdf's derivative in a has no closed form: differentiate in x, loc, scale",
        da, out)


batch_elementwise("rt.gamma_logcdf")


@rev("rt.gamma_sf", "scipy.stats.gamma.sf")
def gamma_sf(dout, out, x, a, loc=0, scale=1):
    density = -dout * rt.gamma_pdf(x, a, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    da = rt.no_derivative(
        "scipy.stats.gamma.sf with respect to a",
        "the gamma cdf's derivative in a has no closed form: differentiate in x, loc, scale")


@fwd("rt.gamma_sf", "scipy.stats.gamma.sf")
def gamma_sf_fwd(out, x, a, loc=0, scale=1):
    density = -rt.gamma_pdf(x, a, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.gamma.sf with respect to a",
        "the gamma cdf's derivative in a has no closed form: differentiate in x, loc, scale",
        da, out)


batch_elementwise("rt.gamma_sf")


@rev("rt.gamma_logsf", "scipy.stats.gamma.logsf")
def gamma_logsf(dout, out, x, a, loc=0, scale=1):
    density = -dout * np.exp(rt.gamma_logpdf(x, a, loc, scale)
                             - np.where(out == -np.inf, 0.0, out))
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    da = rt.no_derivative(
        "scipy.stats.gamma.logsf with respect to a",
        "the gamma cdf's derivative in a has no closed form: differentiate in x, loc, scale")


@fwd("rt.gamma_logsf", "scipy.stats.gamma.logsf")
def gamma_logsf_fwd(out, x, a, loc=0, scale=1):
    density = -np.exp(rt.gamma_logpdf(x, a, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.gamma.logsf with respect to a",
        "the gamma cdf's derivative in a has no closed form: differentiate in x, loc, scale",
        da, out)


batch_elementwise("rt.gamma_logsf")


# ---------------------------------------------------------------- chi2
# l(z) = (df / 2 - 1) log z - z / 2 - log G(df / 2) - df / 2 log 2, z > 0
@rev("rt.chi2_pdf", "scipy.stats.chi2.pdf")
def chi2_pdf(dout, out, x, df, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(z > 0.0, np.logical_and(z == 0.0, df == 2.0))
    zs = np.where(z > 0.0, z, 1.0)
    weight = dout * out
    slope = np.where(inside, weight * ((0.5 * df - 1.0) / zs - 0.5) / scale, 0.0)
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(np.where(inside, -weight / scale, 0.0) - slope * z, scale)
    score = np.where(inside, 0.5 * (np.where(z > 0.0, np.log(0.5 * zs), -np.inf) -
                                    rt.digamma(0.5 * df)), 0.0)
    ddf = rt.unbroadcast(weight * score, df)


@fwd("rt.chi2_pdf", "scipy.stats.chi2.pdf")
def chi2_pdf_fwd(out, x, df, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(z > 0.0, np.logical_and(z == 0.0, df == 2.0))
    zs = np.where(z > 0.0, z, 1.0)
    slope = np.where(inside, out * ((0.5 * df - 1.0) / zs - 0.5) / scale, 0.0)
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (np.where(inside, -out / scale, 0.0) - slope * z)
    score = np.where(inside, 0.5 * (np.where(z > 0.0, np.log(0.5 * zs), -np.inf) -
                                    rt.digamma(0.5 * df)), 0.0)
    dout = ddf * out * score


batch_elementwise("rt.chi2_pdf")


@rev("rt.chi2_logpdf", "scipy.stats.chi2.logpdf")
def chi2_logpdf(dout, out, x, df, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(z > 0.0, np.logical_and(z == 0.0, df == 2.0))
    zs = np.where(z > 0.0, z, 1.0)
    slope = np.where(inside, dout * ((0.5 * df - 1.0) / zs - 0.5) / scale, 0.0)
    dx = rt.unbroadcast(slope, x)
    dloc = rt.unbroadcast(-slope, loc)
    dscale = rt.unbroadcast(np.where(inside, -dout / scale, 0.0) - slope * z, scale)
    score = np.where(inside, 0.5 * (np.where(z > 0.0, np.log(0.5 * zs), -np.inf) -
                                    rt.digamma(0.5 * df)), 0.0)
    ddf = rt.unbroadcast(dout * score, df)


@fwd("rt.chi2_logpdf", "scipy.stats.chi2.logpdf")
def chi2_logpdf_fwd(out, x, df, loc=0, scale=1):
    z = (x - loc) / scale
    inside = np.logical_or(z > 0.0, np.logical_and(z == 0.0, df == 2.0))
    zs = np.where(z > 0.0, z, 1.0)
    slope = np.where(inside, ((0.5 * df - 1.0) / zs - 0.5) / scale, 0.0)
    dout = dx * slope
    dout = -dloc * slope
    dout = dscale * (np.where(inside, -1.0 / scale, 0.0) - slope * z)
    score = np.where(inside, 0.5 * (np.where(z > 0.0, np.log(0.5 * zs), -np.inf) -
                                    rt.digamma(0.5 * df)), 0.0)
    dout = ddf * score


batch_elementwise("rt.chi2_logpdf")


@rev("rt.chi2_cdf", "scipy.stats.chi2.cdf")
def chi2_cdf(dout, out, x, df, loc=0, scale=1):
    density = dout * rt.chi2_pdf(x, df, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    ddf = rt.no_derivative(
        "scipy.stats.chi2.cdf with respect to df",
        "the chi2 cdf's derivative in df has no closed form: differentiate in x, loc, scale")


@fwd("rt.chi2_cdf", "scipy.stats.chi2.cdf")
def chi2_cdf_fwd(out, x, df, loc=0, scale=1):
    density = rt.chi2_pdf(x, df, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.chi2.cdf with respect to df",
        "the chi2 cdf's derivative in df has no closed form: differentiate in x, loc, scale",
        ddf, out)


batch_elementwise("rt.chi2_cdf")


@rev("rt.chi2_logcdf", "scipy.stats.chi2.logcdf")
def chi2_logcdf(dout, out, x, df, loc=0, scale=1):
    density = dout * np.exp(rt.chi2_logpdf(x, df, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    ddf = rt.no_derivative(
        "scipy.stats.chi2.logcdf with respect to df",
        "the chi2 cdf's derivative in df has no closed form: differentiate in x, loc, scale")


@fwd("rt.chi2_logcdf", "scipy.stats.chi2.logcdf")
def chi2_logcdf_fwd(out, x, df, loc=0, scale=1):
    density = np.exp(rt.chi2_logpdf(x, df, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.chi2.logcdf with respect to df",
        "the chi2 cdf's derivative in df has no closed form: differentiate in x, loc, scale",
        ddf, out)


batch_elementwise("rt.chi2_logcdf")


@rev("rt.chi2_sf", "scipy.stats.chi2.sf")
def chi2_sf(dout, out, x, df, loc=0, scale=1):
    density = -dout * rt.chi2_pdf(x, df, loc, scale)
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    ddf = rt.no_derivative(
        "scipy.stats.chi2.sf with respect to df",
        "the chi2 cdf's derivative in df has no closed form: differentiate in x, loc, scale")


@fwd("rt.chi2_sf", "scipy.stats.chi2.sf")
def chi2_sf_fwd(out, x, df, loc=0, scale=1):
    density = -rt.chi2_pdf(x, df, loc, scale)
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.chi2.sf with respect to df",
        "the chi2 cdf's derivative in df has no closed form: differentiate in x, loc, scale",
        ddf, out)


batch_elementwise("rt.chi2_sf")


@rev("rt.chi2_logsf", "scipy.stats.chi2.logsf")
def chi2_logsf(dout, out, x, df, loc=0, scale=1):
    density = -dout * np.exp(rt.chi2_logpdf(x, df, loc, scale)
                             - np.where(out == -np.inf, 0.0, out))
    dx = rt.unbroadcast(density, x)
    dloc = rt.unbroadcast(-density, loc)
    dscale = rt.unbroadcast(-density * (x - loc) / scale, scale)
    ddf = rt.no_derivative(
        "scipy.stats.chi2.logsf with respect to df",
        "the chi2 cdf's derivative in df has no closed form: differentiate in x, loc, scale")


@fwd("rt.chi2_logsf", "scipy.stats.chi2.logsf")
def chi2_logsf_fwd(out, x, df, loc=0, scale=1):
    density = -np.exp(rt.chi2_logpdf(x, df, loc, scale) - np.where(out == -np.inf, 0.0, out))
    dout = dx * density
    dout = -dloc * density
    dout = -dscale * density * (x - loc) / scale
    dout = rt.stats_no_derivative(
        "scipy.stats.chi2.logsf with respect to df",
        "the chi2 cdf's derivative in df has no closed form: differentiate in x, loc, scale",
        ddf, out)


batch_elementwise("rt.chi2_logsf")


# ---------------------------------------------------------------- poisson
# log pmf = k log mu - mu - log k!: d/dmu = k / mu - 1 (k - loc for k). The cdf is
# Q(floor(k) + 1, mu), the regularized upper incomplete gamma function, whose
# derivative in mu is -pmf(floor(k), mu). k and loc are counts: no derivative.
@rev("rt.poisson_pmf", "scipy.stats.poisson.pmf")
def poisson_pmf(dout, out, k, mu, loc=0):
    """d pmf(k) / d mu = pmf(k - 1) - pmf(k), also at mu = 0 (1 for k = 1); pmf(k - 1) is
    pmf(k) k / mu where mu > 0."""
    count = k - loc
    previous = np.where(mu > 0.0, out * count / np.where(mu > 0.0, mu, 1.0),
                        np.where(count == 1.0, 1.0, 0.0))
    dmu = rt.unbroadcast(dout * (previous - out), mu)
    dk = rt.no_derivative(
        "scipy.stats.poisson.pmf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")
    dloc = rt.no_derivative(
        "scipy.stats.poisson.pmf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")


@fwd("rt.poisson_pmf", "scipy.stats.poisson.pmf")
def poisson_pmf_fwd(out, k, mu, loc=0):
    count = k - loc
    previous = np.where(mu > 0.0, out * count / np.where(mu > 0.0, mu, 1.0),
                        np.where(count == 1.0, 1.0, 0.0))
    dout = dmu * (previous - out)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.pmf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dk, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.pmf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dloc, out)


batch_elementwise("rt.poisson_pmf")


@rev("rt.poisson_logpmf", "scipy.stats.poisson.logpmf")
def poisson_logpmf(dout, out, k, mu, loc=0):
    count = k - loc
    dmu = rt.unbroadcast(dout * np.where(
        np.logical_and(out == -np.inf, mu > 0.0), 0.0,
        count / np.where(count == 0, 1.0, mu) - 1.0), mu)
    dk = rt.no_derivative(
        "scipy.stats.poisson.logpmf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")
    dloc = rt.no_derivative(
        "scipy.stats.poisson.logpmf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")


@fwd("rt.poisson_logpmf", "scipy.stats.poisson.logpmf")
def poisson_logpmf_fwd(out, k, mu, loc=0):
    count = k - loc
    dout = dmu * np.where(np.logical_and(out == -np.inf, mu > 0.0), 0.0,
                          count / np.where(count == 0, 1.0, mu) - 1.0)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.logpmf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dk, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.logpmf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dloc, out)


batch_elementwise("rt.poisson_logpmf")


@rev("rt.poisson_cdf", "scipy.stats.poisson.cdf")
def poisson_cdf(dout, out, k, mu, loc=0):
    dmu = rt.unbroadcast(dout * -rt.poisson_pmf(np.floor(k - loc), mu), mu)
    dk = rt.no_derivative(
        "scipy.stats.poisson.cdf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")
    dloc = rt.no_derivative(
        "scipy.stats.poisson.cdf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")


@fwd("rt.poisson_cdf", "scipy.stats.poisson.cdf")
def poisson_cdf_fwd(out, k, mu, loc=0):
    dout = dmu * -rt.poisson_pmf(np.floor(k - loc), mu)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.cdf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dk, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.cdf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dloc, out)


batch_elementwise("rt.poisson_cdf")


@rev("rt.poisson_logcdf", "scipy.stats.poisson.logcdf")
def poisson_logcdf(dout, out, k, mu, loc=0):
    dmu = rt.unbroadcast(dout * -np.exp(rt.poisson_logpmf(np.floor(k - loc), mu)
                                        - np.where(out == -np.inf, 0.0, out)), mu)
    dk = rt.no_derivative(
        "scipy.stats.poisson.logcdf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")
    dloc = rt.no_derivative(
        "scipy.stats.poisson.logcdf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")


@fwd("rt.poisson_logcdf", "scipy.stats.poisson.logcdf")
def poisson_logcdf_fwd(out, k, mu, loc=0):
    dout = dmu * -np.exp(rt.poisson_logpmf(np.floor(k - loc), mu)
                         - np.where(out == -np.inf, 0.0, out))
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.logcdf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dk, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.logcdf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dloc, out)


batch_elementwise("rt.poisson_logcdf")


@rev("rt.poisson_sf", "scipy.stats.poisson.sf")
def poisson_sf(dout, out, k, mu, loc=0):
    dmu = rt.unbroadcast(dout * rt.poisson_pmf(np.floor(k - loc), mu), mu)
    dk = rt.no_derivative(
        "scipy.stats.poisson.sf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")
    dloc = rt.no_derivative(
        "scipy.stats.poisson.sf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")


@fwd("rt.poisson_sf", "scipy.stats.poisson.sf")
def poisson_sf_fwd(out, k, mu, loc=0):
    dout = dmu * rt.poisson_pmf(np.floor(k - loc), mu)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.sf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dk, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.sf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dloc, out)


batch_elementwise("rt.poisson_sf")


@rev("rt.poisson_logsf", "scipy.stats.poisson.logsf")
def poisson_logsf(dout, out, k, mu, loc=0):
    dmu = rt.unbroadcast(dout * np.exp(rt.poisson_logpmf(np.floor(k - loc), mu)
                                       - np.where(out == -np.inf, 0.0, out)), mu)
    dk = rt.no_derivative(
        "scipy.stats.poisson.logsf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")
    dloc = rt.no_derivative(
        "scipy.stats.poisson.logsf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu")


@fwd("rt.poisson_logsf", "scipy.stats.poisson.logsf")
def poisson_logsf_fwd(out, k, mu, loc=0):
    dout = dmu * np.exp(rt.poisson_logpmf(np.floor(k - loc), mu)
                        - np.where(out == -np.inf, 0.0, out))
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.logsf with respect to k",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dk, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.poisson.logsf with respect to loc",
        "k and loc are counts, in which it is not differentiable: differentiate in mu",
        dloc, out)


batch_elementwise("rt.poisson_logsf")


# ---------------------------------------------------------------- multivariate_normal
# With the points as an (N, d) array (rt.mvn_points_shape), P = inv(cov) and the whitened
# residuals w = P (x - mean), logpdf = -(d log 2 pi + log det cov + w . (x - mean)) / 2:
#   d/dx = -w, d/dmean = the sum of w over the points,
#   d/dcov = (the sum of w w^T - N P) / 2,
# the last one symmetric, as JAX's (whose cholesky symmetrizes its input): the gradient of
# cov -> logpdf(x, mean, (cov + cov^T) / 2), so that a symmetric perturbation of cov moves
# the value by its inner product with it (scipy reads one triangle of cov: a non-symmetric
# perturbation has no meaning there). A cov given as a number or a diagonal gets the trace or
# the diagonal of that matrix (rt.mvn_cov_adj). pdf = exp(logpdf) scales all by pdf.
@rev("rt.multivariate_normal_logpdf", "scipy.stats.multivariate_normal.logpdf")
def multivariate_normal_logpdf(dout, out, x, mean=None, cov=1, allow_singular=False):
    dim = rt.mvn_dim(mean, cov)
    full = rt.mvn_cov(cov, dim)
    precision = np.linalg.inv(rt.mvn_nonsingular(0.5 * (full + np.transpose(full)),
                                                 allow_singular))
    white = (np.reshape(x, rt.mvn_points_shape(x, dim)) - rt.mvn_mean(mean, dim)) @ precision
    weighted = np.reshape(dout, (-1, 1)) * white
    dx = np.reshape(-weighted, np.shape(x))
    dmean = np.reshape(np.sum(weighted, 0), np.shape(mean))
    dcov = rt.mvn_cov_adj(0.5 * (np.transpose(white) @ weighted - np.sum(dout) * precision),
                          np.ndim(cov))


@fwd("rt.multivariate_normal_logpdf", "scipy.stats.multivariate_normal.logpdf")
def multivariate_normal_logpdf_fwd(out, x, mean=None, cov=1, allow_singular=False):
    dim = rt.mvn_dim(mean, cov)
    full = rt.mvn_cov(cov, dim)
    precision = np.linalg.inv(rt.mvn_nonsingular(0.5 * (full + np.transpose(full)),
                                                 allow_singular))
    white = (np.reshape(x, rt.mvn_points_shape(x, dim)) - rt.mvn_mean(mean, dim)) @ precision
    dout = np.reshape(-np.sum(white * np.reshape(dx, rt.mvn_points_shape(x, dim)), 1),
                      np.shape(out))
    dout = np.reshape(white @ rt.mvn_mean(dmean, dim), np.shape(out))
    dout = np.reshape(0.5 * (np.sum((white @ rt.mvn_cov(dcov, dim)) * white, 1)
                             - np.sum(precision * rt.mvn_cov(dcov, dim))), np.shape(out))


# vmap: scipy takes one mean and one cov, so the batched call is rt.mvn_logpdf_lanes, which
# broadcasts over leading axes: the points (B, N, d) (or (N, d) where x is not batched), the
# mean (B, 1, d) (or (d,)) and cov flattened, (B, 1, d * d) (or (d * d,)); then the result
# (B, N) gets each example's (squeezed) shape.
@batch("rt.multivariate_normal_logpdf")
def multivariate_normal_logpdf_batch(x, mean=None, cov=1, allow_singular=False):
    out = np.reshape(
        rt.mvn_logpdf_lanes(
            np.reshape(x, rt.mvn_points_shape(
                x, rt.mvn_dim(mean, cov, mean_batched, cov_batched), x_batched, batch_size)),
            np.expand_dims(rt.mvn_mean(mean, rt.mvn_dim(mean, cov, True, cov_batched), 1), -2)
            if mean_batched else rt.mvn_mean(mean, rt.mvn_dim(mean, cov, False, cov_batched)),
            np.reshape(rt.mvn_cov(cov, rt.mvn_dim(mean, cov, mean_batched, True), 1),
                       (batch_size, 1, -1))
            if cov_batched else
            np.reshape(rt.mvn_cov(cov, rt.mvn_dim(mean, cov, mean_batched, False)), (-1,))),
        rt.mvn_out_shape(x, rt.mvn_dim(mean, cov, mean_batched, cov_batched), x_batched,
                         batch_size))


@rev("rt.multivariate_normal_pdf", "scipy.stats.multivariate_normal.pdf")
def multivariate_normal_pdf(dout, out, x, mean=None, cov=1, allow_singular=False):
    dim = rt.mvn_dim(mean, cov)
    full = rt.mvn_cov(cov, dim)
    precision = np.linalg.inv(rt.mvn_nonsingular(0.5 * (full + np.transpose(full)),
                                                 allow_singular))
    white = (np.reshape(x, rt.mvn_points_shape(x, dim)) - rt.mvn_mean(mean, dim)) @ precision
    weight = dout * out
    weighted = np.reshape(weight, (-1, 1)) * white
    dx = np.reshape(-weighted, np.shape(x))
    dmean = np.reshape(np.sum(weighted, 0), np.shape(mean))
    dcov = rt.mvn_cov_adj(0.5 * (np.transpose(white) @ weighted - np.sum(weight) * precision),
                          np.ndim(cov))


@fwd("rt.multivariate_normal_pdf", "scipy.stats.multivariate_normal.pdf")
def multivariate_normal_pdf_fwd(out, x, mean=None, cov=1, allow_singular=False):
    dim = rt.mvn_dim(mean, cov)
    full = rt.mvn_cov(cov, dim)
    precision = np.linalg.inv(rt.mvn_nonsingular(0.5 * (full + np.transpose(full)),
                                                 allow_singular))
    white = (np.reshape(x, rt.mvn_points_shape(x, dim)) - rt.mvn_mean(mean, dim)) @ precision
    dout = out * np.reshape(-np.sum(white * np.reshape(dx, rt.mvn_points_shape(x, dim)), 1),
                            np.shape(out))
    dout = out * np.reshape(white @ rt.mvn_mean(dmean, dim), np.shape(out))
    dout = out * np.reshape(0.5 * (np.sum((white @ rt.mvn_cov(dcov, dim)) * white, 1)
                                   - np.sum(precision * rt.mvn_cov(dcov, dim))), np.shape(out))


@batch("rt.multivariate_normal_pdf")
def multivariate_normal_pdf_batch(x, mean=None, cov=1, allow_singular=False):
    out = np.exp(np.reshape(
        rt.mvn_logpdf_lanes(
            np.reshape(x, rt.mvn_points_shape(
                x, rt.mvn_dim(mean, cov, mean_batched, cov_batched), x_batched, batch_size)),
            np.expand_dims(rt.mvn_mean(mean, rt.mvn_dim(mean, cov, True, cov_batched), 1), -2)
            if mean_batched else rt.mvn_mean(mean, rt.mvn_dim(mean, cov, False, cov_batched)),
            np.reshape(rt.mvn_cov(cov, rt.mvn_dim(mean, cov, mean_batched, True), 1),
                       (batch_size, 1, -1))
            if cov_batched else
            np.reshape(rt.mvn_cov(cov, rt.mvn_dim(mean, cov, mean_batched, False)), (-1,))),
        rt.mvn_out_shape(x, rt.mvn_dim(mean, cov, mean_batched, cov_batched), x_batched,
                         batch_size)))


# The cdf is a randomized quasi-Monte Carlo estimate (Genz): no exact derivative. vmap
# calls it example by example.
@rev("rt.multivariate_normal_cdf", "scipy.stats.multivariate_normal.cdf")
def multivariate_normal_cdf(dout, out, x, mean=None, cov=1, allow_singular=False, maxpts=None,
                            abseps=1e-5, releps=1e-5, lower_limit=None, rng=None):
    dx = rt.no_derivative("scipy.stats.multivariate_normal.cdf",
                          "it is a randomized numerical estimate, with no exact derivative")
    dmean = rt.no_derivative("scipy.stats.multivariate_normal.cdf",
                             "it is a randomized numerical estimate, with no exact derivative")
    dcov = rt.no_derivative("scipy.stats.multivariate_normal.cdf",
                            "it is a randomized numerical estimate, with no exact derivative")
    dlower_limit = rt.no_derivative(
        "scipy.stats.multivariate_normal.cdf",
        "it is a randomized numerical estimate, with no exact derivative")


@fwd("rt.multivariate_normal_cdf", "scipy.stats.multivariate_normal.cdf")
def multivariate_normal_cdf_fwd(out, x, mean=None, cov=1, allow_singular=False, maxpts=None,
                                abseps=1e-5, releps=1e-5, lower_limit=None, rng=None):
    dout = rt.stats_no_derivative(
        "scipy.stats.multivariate_normal.cdf",
        "it is a randomized numerical estimate, with no exact derivative", dx, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.multivariate_normal.cdf",
        "it is a randomized numerical estimate, with no exact derivative", dmean, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.multivariate_normal.cdf",
        "it is a randomized numerical estimate, with no exact derivative", dcov, out)
    dout = rt.stats_no_derivative(
        "scipy.stats.multivariate_normal.cdf",
        "it is a randomized numerical estimate, with no exact derivative", dlower_limit, out)


@batch("rt.multivariate_normal_cdf")
def multivariate_normal_cdf_batch(x, mean=None, cov=1, allow_singular=False, maxpts=None,
                                  abseps=1e-5, releps=1e-5, lower_limit=None, rng=None):
    out = rt.each_lane("rt.multivariate_normal_cdf", batch_size,
                       (x_batched, mean_batched, cov_batched, allow_singular_batched,
                        maxpts_batched, abseps_batched, releps_batched, lower_limit_batched,
                        rng_batched),
                       x, mean, cov, allow_singular, maxpts, abseps, releps, lower_limit, rng)


# The batched logpdf: points (..., N, d), mean (..., 1, d) or (d,), cov (..., 1, d * d) or
# (d * d,), the leading axes broadcast. Its rules are those above with these axes; a vmap
# around it aligns a batched mean or cov with the points (which carry every axis).
@rev("rt.mvn_logpdf_lanes")
def mvn_logpdf_lanes(dout, out, points, mean, cov):
    precision = np.linalg.inv(np.reshape(cov, rt.mvn_square_shape(np.shape(cov))))
    white = np.sum(precision * np.expand_dims(points - mean, -2), -1)
    weighted = np.expand_dims(dout, -1) * white
    dpoints = rt.unbroadcast(-weighted, points)
    dmean = rt.unbroadcast(weighted, mean)
    gram = 0.5 * (np.expand_dims(white, -1) * np.expand_dims(weighted, -2)
                  - np.expand_dims(np.expand_dims(dout, -1), -1) * precision)
    dcov = rt.unbroadcast(np.reshape(gram, rt.mvn_flat_shape(np.shape(gram))), cov)


@fwd("rt.mvn_logpdf_lanes")
def mvn_logpdf_lanes_fwd(out, points, mean, cov):
    precision = np.linalg.inv(np.reshape(cov, rt.mvn_square_shape(np.shape(cov))))
    white = np.sum(precision * np.expand_dims(points - mean, -2), -1)
    dout = -np.sum(white * dpoints, -1)
    dout = np.sum(white * dmean, -1)
    dout = 0.5 * np.sum((np.expand_dims(white, -1) * np.expand_dims(white, -2) - precision)
                        * np.reshape(dcov, rt.mvn_square_shape(np.shape(dcov))), (-2, -1))


@batch("rt.mvn_logpdf_lanes")
def mvn_logpdf_lanes_batch(points, mean, cov):
    out = rt.mvn_logpdf_lanes(
        points,
        (rt.align_lanes(mean, points) if points_batched else rt.align(mean, points))
        if mean_batched else mean,
        (rt.align_lanes(cov, points) if points_batched else rt.align(cov, points))
        if cov_batched else cov)


# The canonical mean and cov are linear in the arguments; mvn_cov and mvn_cov_adj are each
# other's adjoints. `lead` counts the batch axes in front (one more under each vmap).
@rev("rt.mvn_mean")
def mvn_mean(dout, out, mean, dim, lead=0):
    dmean = np.reshape(dout, np.shape(mean))


@fwd("rt.mvn_mean")
def mvn_mean_fwd(out, mean, dim, lead=0):
    dout = rt.mvn_mean(dmean, dim, lead)


@batch("rt.mvn_mean")
def mvn_mean_batch(mean, dim, lead=0):
    out = rt.mvn_mean(mean, dim, lead + 1)


@rev("rt.mvn_cov")
def mvn_cov(dout, out, cov, dim, lead=0):
    dcov = rt.mvn_cov_adj(dout, np.ndim(cov) - lead, lead)


@fwd("rt.mvn_cov")
def mvn_cov_fwd(out, cov, dim, lead=0):
    dout = rt.mvn_cov(dcov, dim, lead)


@batch("rt.mvn_cov")
def mvn_cov_batch(cov, dim, lead=0):
    out = rt.mvn_cov(cov, dim, lead + 1)


@rev("rt.mvn_cov_adj")
def mvn_cov_adj(dout, out, g, rank, lead=0):
    dg = rt.mvn_cov(dout, np.shape(g)[-1], lead)


@fwd("rt.mvn_cov_adj")
def mvn_cov_adj_fwd(out, g, rank, lead=0):
    dout = rt.mvn_cov_adj(dg, rank, lead)


@batch("rt.mvn_cov_adj")
def mvn_cov_adj_batch(g, rank, lead=0):
    out = rt.mvn_cov_adj(g, rank, lead + 1)


@rev("rt.mvn_nonsingular")
def mvn_nonsingular(dout, out, matrix, allow_singular=False):
    dmatrix = dout


@fwd("rt.mvn_nonsingular")
def mvn_nonsingular_fwd(out, matrix, allow_singular=False):
    dout = dmatrix


batch_same("rt.mvn_nonsingular")

# shapes and sizes
nondiff("rt.mvn_dim", "rt.mvn_points_shape", "rt.mvn_out_shape", "rt.mvn_square_shape",
        "rt.mvn_flat_shape")
batch_same("rt.mvn_square_shape", "rt.mvn_flat_shape", out_batched=False)


@batch("rt.mvn_dim", out_batched=False)
def mvn_dim_batch(mean, cov, mean_lanes=False, cov_lanes=False):
    out = rt.mvn_dim(rt.lane_example(mean) if mean_batched else mean,
                     rt.lane_example(cov) if cov_batched else cov, mean_lanes, cov_lanes)


@batch("rt.mvn_points_shape", out_batched=False)
def mvn_points_shape_batch(x, dim, lanes=False, n=None):
    out = rt.mvn_points_shape(rt.lane_example(x), dim, lanes, n)


@batch("rt.mvn_out_shape", out_batched=False)
def mvn_out_shape_batch(x, dim, lanes=False, n=None):
    out = rt.mvn_out_shape(rt.lane_example(x), dim, lanes, n)


# ---------------------------------------------------------------- dirichlet
# With the points as (N, K) (rt.dirichlet_points: completed where x has K - 1 components),
# logpdf = sum_i (alpha_i - 1) log x_i - log B(alpha):
#   d/dx_i = (alpha_i - 1) / x_i (0 where alpha_i = 1: xlogy(0, x) is 0 for all x),
#   d/dalpha_i = log x_i - digamma(alpha_i) + digamma(sum alpha),
# as JAX's: the gradient of the formula in every component; only its part along the
# simplex is a derivative of the density (x off the simplex is outside its domain). With
# K - 1 components given, the last one's share goes to them through 1 - sum.
@rev("rt.dirichlet_logpdf", "scipy.stats.dirichlet.logpdf")
def dirichlet_logpdf(dout, out, x, alpha):
    points = rt.dirichlet_points(x, np.size(alpha))
    weight = np.reshape(dout, (-1, 1))
    dx = rt.dirichlet_points_adj(weight * np.where(alpha == 1.0, 0.0, (alpha - 1.0) / points),
                                 np.shape(x))
    dalpha = np.sum(weight * np.log(points), 0) \
        - np.sum(dout) * (rt.digamma(alpha) - rt.digamma(np.sum(alpha)))


@fwd("rt.dirichlet_logpdf", "scipy.stats.dirichlet.logpdf")
def dirichlet_logpdf_fwd(out, x, alpha):
    points = rt.dirichlet_points(x, np.size(alpha))
    dout = np.reshape(np.sum(np.where(alpha == 1.0, 0.0, (alpha - 1.0) / points)
                             * rt.dirichlet_points(dx, np.size(alpha), 0, 0.0), 1),
                      np.shape(out))
    dout = np.reshape(np.log(points) @ dalpha
                      - (rt.digamma(alpha) - rt.digamma(np.sum(alpha))) @ dalpha, np.shape(out))


# vmap: scipy takes one alpha, so the batched call is rt.dirichlet_logpdf_lanes, which
# broadcasts over leading axes: the points (B, N, K) (or (N, K)), alpha (B, 1, K) (or (K,)).
@batch("rt.dirichlet_logpdf")
def dirichlet_logpdf_batch(x, alpha):
    out = np.reshape(
        rt.dirichlet_logpdf_lanes(rt.dirichlet_points(x, np.shape(alpha)[-1],
                                                     1 if x_batched else 0),
                                  np.expand_dims(alpha, -2) if alpha_batched else alpha),
        rt.dirichlet_out_shape(x, x_batched, batch_size))


@rev("rt.dirichlet_pdf", "scipy.stats.dirichlet.pdf")
def dirichlet_pdf(dout, out, x, alpha):
    points = rt.dirichlet_points(x, np.size(alpha))
    weight = np.reshape(dout * out, (-1, 1))
    dx = rt.dirichlet_points_adj(weight * np.where(alpha == 1.0, 0.0, (alpha - 1.0) / points),
                                 np.shape(x))
    dalpha = np.sum(weight * np.log(points), 0) \
        - np.sum(dout * out) * (rt.digamma(alpha) - rt.digamma(np.sum(alpha)))


@fwd("rt.dirichlet_pdf", "scipy.stats.dirichlet.pdf")
def dirichlet_pdf_fwd(out, x, alpha):
    points = rt.dirichlet_points(x, np.size(alpha))
    dout = out * np.reshape(np.sum(np.where(alpha == 1.0, 0.0, (alpha - 1.0) / points)
                                   * rt.dirichlet_points(dx, np.size(alpha), 0, 0.0), 1),
                            np.shape(out))
    dout = out * np.reshape(np.log(points) @ dalpha
                            - (rt.digamma(alpha) - rt.digamma(np.sum(alpha))) @ dalpha,
                            np.shape(out))


@batch("rt.dirichlet_pdf")
def dirichlet_pdf_batch(x, alpha):
    out = np.exp(np.reshape(
        rt.dirichlet_logpdf_lanes(rt.dirichlet_points(x, np.shape(alpha)[-1],
                                                     1 if x_batched else 0),
                                  np.expand_dims(alpha, -2) if alpha_batched else alpha),
        rt.dirichlet_out_shape(x, x_batched, batch_size)))


# The batched logpdf: points (..., N, K), alpha (..., 1, K) or (K,), the leading axes
# broadcast.
@rev("rt.dirichlet_logpdf_lanes")
def dirichlet_logpdf_lanes(dout, out, points, alpha):
    weight = np.expand_dims(dout, -1)
    dpoints = rt.unbroadcast(weight * np.where(alpha == 1.0, 0.0, (alpha - 1.0) / points),
                             points)
    dalpha = rt.unbroadcast(weight * (np.log(points) - rt.digamma(alpha)
                                      + rt.digamma(np.sum(alpha, -1, keepdims=True))), alpha)


@fwd("rt.dirichlet_logpdf_lanes")
def dirichlet_logpdf_lanes_fwd(out, points, alpha):
    dout = np.sum(np.where(alpha == 1.0, 0.0, (alpha - 1.0) / points) * dpoints, -1)
    dout = np.sum((np.log(points) - rt.digamma(alpha)
                   + rt.digamma(np.sum(alpha, -1, keepdims=True))) * dalpha, -1)


@batch("rt.dirichlet_logpdf_lanes")
def dirichlet_logpdf_lanes_batch(points, alpha):
    out = rt.dirichlet_logpdf_lanes(
        points,
        (rt.align_lanes(alpha, points) if points_batched else rt.align(alpha, points))
        if alpha_batched else alpha)


# The points are affine in x (linear but for the completed component's constant); the
# linear part (const=0) and rt.dirichlet_points_adj are each other's adjoints.
@rev("rt.dirichlet_points")
def dirichlet_points(dout, out, x, k, lead=0, const=1.0):
    dx = rt.dirichlet_points_adj(dout, np.shape(x)[lead:], lead)


@fwd("rt.dirichlet_points")
def dirichlet_points_fwd(out, x, k, lead=0, const=1.0):
    dout = rt.dirichlet_points(dx, k, lead, 0.0)


@batch("rt.dirichlet_points")
def dirichlet_points_batch(x, k, lead=0, const=1.0):
    out = rt.dirichlet_points(x, k, lead + 1, const)


@rev("rt.dirichlet_points_adj")
def dirichlet_points_adj(dout, out, g, x_shape, lead=0):
    dg = rt.dirichlet_points(dout, np.shape(g)[-1], lead, 0.0)


@fwd("rt.dirichlet_points_adj")
def dirichlet_points_adj_fwd(out, g, x_shape, lead=0):
    dout = rt.dirichlet_points_adj(dg, x_shape, lead)


@batch("rt.dirichlet_points_adj")
def dirichlet_points_adj_batch(g, x_shape, lead=0):
    out = rt.dirichlet_points_adj(g, x_shape, lead + 1)


nondiff("rt.dirichlet_out_shape")


@batch("rt.dirichlet_out_shape", out_batched=False)
def dirichlet_out_shape_batch(x, lanes=False, n=None):
    out = rt.dirichlet_out_shape(rt.lane_example(x), lanes, n)
