"""scipy.stats distributions called by generated code (transpile/rules/stats.py has their
rules): `rt.norm_logpdf(x, loc, scale)` is `scipy.stats.norm.logpdf(x, loc, scale)`.

scipy.stats is imported at the first call, so that importing runtime stays cheap.
"""
import numpy as np

from .adjoints import no_derivative
from .errors import TransformError


def _stats():
    import scipy.stats
    return scipy.stats


def stats_no_derivative(what, hint, tangent, like):
    """The tangent term of a derivative with no rule: zeros shaped like `like` where the
    tangent is zero everywhere (that of a constant), else the refusal of rt.no_derivative."""
    if np.any(np.asarray(tangent) != 0):
        no_derivative(what, hint, tangent)      # (given the tangent: it raises)
    return np.zeros(np.shape(like))


def norm_pdf(x, loc=0, scale=1):
    """scipy.stats.norm.pdf."""
    return _stats().norm.pdf(x, loc, scale)


def norm_logpdf(x, loc=0, scale=1):
    """scipy.stats.norm.logpdf."""
    return _stats().norm.logpdf(x, loc, scale)


def norm_cdf(x, loc=0, scale=1):
    """scipy.stats.norm.cdf."""
    return _stats().norm.cdf(x, loc, scale)


def norm_logcdf(x, loc=0, scale=1):
    """scipy.stats.norm.logcdf."""
    return _stats().norm.logcdf(x, loc, scale)


def norm_sf(x, loc=0, scale=1):
    """scipy.stats.norm.sf."""
    return _stats().norm.sf(x, loc, scale)


def norm_logsf(x, loc=0, scale=1):
    """scipy.stats.norm.logsf."""
    return _stats().norm.logsf(x, loc, scale)


def norm_ppf(q, loc=0, scale=1):
    """scipy.stats.norm.ppf."""
    return _stats().norm.ppf(q, loc, scale)


def norm_isf(q, loc=0, scale=1):
    """scipy.stats.norm.isf."""
    return _stats().norm.isf(q, loc, scale)


def cauchy_pdf(x, loc=0, scale=1):
    """scipy.stats.cauchy.pdf."""
    return _stats().cauchy.pdf(x, loc, scale)


def cauchy_logpdf(x, loc=0, scale=1):
    """scipy.stats.cauchy.logpdf."""
    return _stats().cauchy.logpdf(x, loc, scale)


def cauchy_cdf(x, loc=0, scale=1):
    """scipy.stats.cauchy.cdf."""
    return _stats().cauchy.cdf(x, loc, scale)


def cauchy_logcdf(x, loc=0, scale=1):
    """scipy.stats.cauchy.logcdf."""
    return _stats().cauchy.logcdf(x, loc, scale)


def cauchy_sf(x, loc=0, scale=1):
    """scipy.stats.cauchy.sf."""
    return _stats().cauchy.sf(x, loc, scale)


def cauchy_logsf(x, loc=0, scale=1):
    """scipy.stats.cauchy.logsf."""
    return _stats().cauchy.logsf(x, loc, scale)


def cauchy_ppf(q, loc=0, scale=1):
    """scipy.stats.cauchy.ppf."""
    return _stats().cauchy.ppf(q, loc, scale)


def cauchy_isf(q, loc=0, scale=1):
    """scipy.stats.cauchy.isf."""
    return _stats().cauchy.isf(q, loc, scale)


def truncnorm_pdf(x, a, b, loc=0, scale=1):
    """scipy.stats.truncnorm.pdf."""
    return _stats().truncnorm.pdf(x, a, b, loc, scale)


def truncnorm_logpdf(x, a, b, loc=0, scale=1):
    """scipy.stats.truncnorm.logpdf."""
    return _stats().truncnorm.logpdf(x, a, b, loc, scale)


def t_pdf(x, df, loc=0, scale=1):
    """scipy.stats.t.pdf."""
    return _stats().t.pdf(x, df, loc, scale)


def t_logpdf(x, df, loc=0, scale=1):
    """scipy.stats.t.logpdf."""
    return _stats().t.logpdf(x, df, loc, scale)


def t_cdf(x, df, loc=0, scale=1):
    """scipy.stats.t.cdf."""
    return _stats().t.cdf(x, df, loc, scale)


def t_logcdf(x, df, loc=0, scale=1):
    """scipy.stats.t.logcdf."""
    return _stats().t.logcdf(x, df, loc, scale)


def t_sf(x, df, loc=0, scale=1):
    """scipy.stats.t.sf."""
    return _stats().t.sf(x, df, loc, scale)


def t_logsf(x, df, loc=0, scale=1):
    """scipy.stats.t.logsf."""
    return _stats().t.logsf(x, df, loc, scale)


def beta_pdf(x, a, b, loc=0, scale=1):
    """scipy.stats.beta.pdf."""
    return _stats().beta.pdf(x, a, b, loc, scale)


def beta_logpdf(x, a, b, loc=0, scale=1):
    """scipy.stats.beta.logpdf."""
    return _stats().beta.logpdf(x, a, b, loc, scale)


def beta_cdf(x, a, b, loc=0, scale=1):
    """scipy.stats.beta.cdf."""
    return _stats().beta.cdf(x, a, b, loc, scale)


def beta_logcdf(x, a, b, loc=0, scale=1):
    """scipy.stats.beta.logcdf."""
    return _stats().beta.logcdf(x, a, b, loc, scale)


def beta_sf(x, a, b, loc=0, scale=1):
    """scipy.stats.beta.sf."""
    return _stats().beta.sf(x, a, b, loc, scale)


def beta_logsf(x, a, b, loc=0, scale=1):
    """scipy.stats.beta.logsf."""
    return _stats().beta.logsf(x, a, b, loc, scale)


def gamma_pdf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.pdf."""
    return _stats().gamma.pdf(x, a, loc, scale)


def gamma_logpdf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.logpdf."""
    return _stats().gamma.logpdf(x, a, loc, scale)


def gamma_cdf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.cdf."""
    return _stats().gamma.cdf(x, a, loc, scale)


def gamma_logcdf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.logcdf."""
    return _stats().gamma.logcdf(x, a, loc, scale)


def gamma_sf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.sf."""
    return _stats().gamma.sf(x, a, loc, scale)


def gamma_logsf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.logsf."""
    return _stats().gamma.logsf(x, a, loc, scale)


def chi2_pdf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.pdf."""
    return _stats().chi2.pdf(x, df, loc, scale)


def chi2_logpdf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.logpdf."""
    return _stats().chi2.logpdf(x, df, loc, scale)


def chi2_cdf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.cdf."""
    return _stats().chi2.cdf(x, df, loc, scale)


def chi2_logcdf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.logcdf."""
    return _stats().chi2.logcdf(x, df, loc, scale)


def chi2_sf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.sf."""
    return _stats().chi2.sf(x, df, loc, scale)


def chi2_logsf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.logsf."""
    return _stats().chi2.logsf(x, df, loc, scale)


def poisson_pmf(k, mu, loc=0):
    """scipy.stats.poisson.pmf."""
    return _stats().poisson.pmf(k, mu, loc)


def poisson_logpmf(k, mu, loc=0):
    """scipy.stats.poisson.logpmf."""
    return _stats().poisson.logpmf(k, mu, loc)


def poisson_cdf(k, mu, loc=0):
    """scipy.stats.poisson.cdf."""
    return _stats().poisson.cdf(k, mu, loc)


def poisson_logcdf(k, mu, loc=0):
    """scipy.stats.poisson.logcdf."""
    return _stats().poisson.logcdf(k, mu, loc)


def poisson_sf(k, mu, loc=0):
    """scipy.stats.poisson.sf."""
    return _stats().poisson.sf(k, mu, loc)


def poisson_logsf(k, mu, loc=0):
    """scipy.stats.poisson.logsf."""
    return _stats().poisson.logsf(k, mu, loc)


# ---------------------------------------------------------------- multivariate_normal
# scipy's layout: x (..., d) (a scalar, or a 1-D x with d == 1, is points of dimension 1),
# mean (d,) or None, cov a number, a diagonal (d,) or a matrix (d, d); the result, one value
# per point, is squeezed (every axis of length 1 dropped). The rules work on the points as
# an (N, d) array, the mean as (d,) and cov as a (d, d) matrix.

def multivariate_normal_logpdf(x, mean=None, cov=1, allow_singular=False):
    """scipy.stats.multivariate_normal.logpdf."""
    return _stats().multivariate_normal.logpdf(x, mean, cov, allow_singular)


def multivariate_normal_pdf(x, mean=None, cov=1, allow_singular=False):
    """scipy.stats.multivariate_normal.pdf."""
    return _stats().multivariate_normal.pdf(x, mean, cov, allow_singular)


def multivariate_normal_cdf(x, mean=None, cov=1, allow_singular=False, maxpts=None,
                            abseps=1e-5, releps=1e-5, lower_limit=None, rng=None):
    """scipy.stats.multivariate_normal.cdf (a randomized quasi-Monte Carlo estimate)."""
    return _stats().multivariate_normal.cdf(x, mean, cov, allow_singular, maxpts, abseps,
                                            releps, lower_limit=lower_limit, rng=rng)


def mvn_dim(mean, cov, mean_lanes=False, cov_lanes=False):
    """The dimension scipy infers: the size of the mean, else the side of cov (1 for a
    number or a diagonal, as scipy has it). `*_lanes`: that argument carries a batch axis
    in front (vmap's rule), which is not counted."""
    if mean is not None:
        return int(np.size(mean[0] if mean_lanes else mean))
    cov = cov[0] if cov_lanes else cov
    return 1 if np.ndim(cov) < 2 else int(np.shape(cov)[0])


def _loop_shape(x, dim, lanes):
    shape = np.shape(x)[1:] if lanes else np.shape(x)
    if len(shape) == 0:
        return ()
    if len(shape) == 1:
        return shape if dim == 1 else (1,)
    return shape[:-1]


def mvn_points_shape(x, dim, lanes=False, n=None):
    """The shape (N, dim) of the points of `x`, all N in one axis; lanes=True: x carries a
    batch axis of n examples in front, and so does the shape."""
    points = (int(np.prod(_loop_shape(x, dim, lanes), dtype=np.int64)), dim)
    return (n,) + points if lanes else points


def mvn_out_shape(x, dim, lanes=False, n=None):
    """The shape of scipy's (squeezed) result for `x` (lanes: as in mvn_points_shape), with
    a batch of n in front where n is given."""
    out = tuple(k for k in _loop_shape(x, dim, lanes) if k != 1)
    return out if n is None else (n,) + out


def mvn_mean(mean, dim, lead=0):
    """The mean as a vector (dim,) (zeros for None), after `lead` batch axes."""
    if mean is None:
        return np.zeros(dim)
    mean = np.asarray(mean, dtype=float)
    return mean.reshape(mean.shape[:lead] + (dim,))


def mvn_cov(cov, dim, lead=0):
    """cov as a (dim, dim) matrix, after `lead` batch axes: a number c is c * I, a vector
    its diagonal."""
    cov = np.asarray(cov, dtype=float)
    rank = cov.ndim - lead
    if rank == 0:
        return cov[..., None, None] * np.eye(dim)
    if rank == 1:
        return cov[..., :, None] * np.eye(dim)
    return cov


def mvn_cov_adj(g, rank, lead=0):
    """The adjoint of mvn_cov for a cov of `rank` axes (after `lead` batch axes): the trace
    of g for a number, its diagonal for a vector, g for a matrix."""
    g = np.asarray(g)
    if rank == 0:
        return np.trace(g, axis1=-2, axis2=-1)
    if rank == 1:
        return np.diagonal(g, 0, -2, -1).copy()
    return g


def mvn_nonsingular(matrix, allow_singular=False):
    """`matrix`, checked invertible where scipy would allow a singular cov: its derivatives
    (through the inverse) exist only for a nonsingular one."""
    if allow_singular and np.any(np.linalg.matrix_rank(matrix) < np.shape(matrix)[-1]):
        raise TransformError(
            "scipy.stats.multivariate_normal with a singular cov (allow_singular=True) has no "
            "derivative rule.\n  hint: its density lives on a subspace; differentiate it with "
            "a nonsingular cov.")
    return matrix


def mvn_square_shape(shape):
    """(..., d * d) -> (..., d, d)."""
    side = int(round(np.sqrt(shape[-1])))
    return tuple(shape[:-1]) + (side, side)


def mvn_flat_shape(shape):
    """(..., d, d) -> (..., d * d)."""
    return tuple(shape[:-2]) + (shape[-2] * shape[-1],)


def mvn_logpdf_lanes(points, mean, cov):
    """multivariate_normal.logpdf per example of a batch, numpy broadcasting over the leading
    axes: points (..., N, d), mean (..., 1, d) or (d,), cov flattened (..., 1, d * d) or
    (d * d,); the result is (..., N). vmap's rule for scipy's function (which takes one mean
    and one cov) calls it with the batch in front."""
    d = np.shape(points)[-1]
    matrix = np.reshape(cov, mvn_square_shape(np.shape(cov)))
    chol = np.linalg.cholesky(matrix)   # raises, as scipy does, for a cov not positive definite
    logdet = 2.0 * np.sum(np.log(np.diagonal(chol, 0, -2, -1)), -1)
    residual = points - mean
    white = np.sum(np.linalg.inv(matrix) * residual[..., None, :], -1)
    return -0.5 * (d * np.log(2.0 * np.pi) + logdet + np.sum(white * residual, -1))


# ---------------------------------------------------------------- dirichlet
# scipy's layout: x (K, ...) or (K - 1, ...) (the last component is then 1 - the sum of the
# others), the components along the first axis; alpha (K,); the result squeezed. The rules
# work on the points as an (N, K) array, the components last (rt.dirichlet_points).

def dirichlet_pdf(x, alpha):
    """scipy.stats.dirichlet.pdf."""
    return _stats().dirichlet.pdf(x, alpha)


def dirichlet_logpdf(x, alpha):
    """scipy.stats.dirichlet.logpdf."""
    return _stats().dirichlet.logpdf(x, alpha)


def dirichlet_points(x, k, lead=0, const=1.0):
    """x (after `lead` batch axes: (K, ...) or (K - 1, ...)) as points (N, K): completed by
    the component const - (the sum of the others) where one is missing (const 1 for points,
    0 for their tangents), the components moved last."""
    x = np.asarray(x, dtype=float)
    if x.shape[lead] != k:
        x = np.concatenate([x, const - np.sum(x, axis=lead, keepdims=True)], axis=lead)
    return np.reshape(np.moveaxis(x, lead, -1), x.shape[:lead] + (-1, k))


def dirichlet_points_adj(g, x_shape, lead=0):
    """The adjoint of dirichlet_points for an x shaped `x_shape` (without the batch axes):
    g (..., N, K) back in x's layout, the completed component's share taken from the
    others."""
    g = np.asarray(g)
    k = g.shape[-1]
    full = np.moveaxis(np.reshape(g, g.shape[:lead] + tuple(x_shape[1:]) + (k,)), -1, lead)
    if x_shape[0] == k:
        return full
    index = [slice(None)] * full.ndim
    index[lead] = slice(0, k - 1)
    last = np.take(full, [k - 1], axis=lead)
    return full[tuple(index)] - last


def dirichlet_out_shape(x, lanes=False, n=None):
    """The shape of scipy's (squeezed) result for `x` (lanes: x carries a batch axis in
    front), with a batch of n in front where n is given."""
    shape = np.shape(x)[2:] if lanes else np.shape(x)[1:]
    out = tuple(k for k in shape if k != 1)
    return out if n is None else (n,) + out


def dirichlet_logpdf_lanes(points, alpha):
    """dirichlet.logpdf per example of a batch, numpy broadcasting over the leading axes:
    points (..., N, K), alpha (..., 1, K) or (K,); the result is (..., N). Checks x as scipy
    does (vmap's rule for scipy's function, which takes one alpha)."""
    from scipy.special import gammaln, xlogy
    points, alpha = np.asarray(points, dtype=float), np.asarray(alpha, dtype=float)
    if np.any(points < 0) or np.any(points > 1):
        raise ValueError("Each entry in 'x' must be between zero and one.")
    if np.any(np.logical_and(points == 0, alpha < 1)):
        raise ValueError("Each entry in 'x' must be greater than zero if its alpha is less "
                         "than one.")
    if np.any(np.abs(np.sum(points, -1) - 1.0) > 10e-10):
        raise ValueError("The input vector 'x' must lie within the normal simplex.")
    lnb = np.sum(gammaln(alpha), -1) - gammaln(np.sum(alpha, -1))
    return np.sum(xlogy(alpha - 1.0, points), -1) - lnb
