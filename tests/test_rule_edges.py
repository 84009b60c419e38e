"""Every differentiable rule of the primitive table, and the places where rules must choose.

1. A sweep over the table: each differentiable primitive, on fresh random inputs inside its
   domain, against finite differences in reverse and forward mode, to second order (grad of
   grad, jvp of jvp, grad of jvp, jvp of grad). Primitives that share an input domain are
   checked together, as the outputs of one function, which keeps the sweep fast; a failing
   group is checked again primitive by primitive to name the culprit.
   `test_the_sweep_covers_the_table` fails when a new rule has no line here.
2. The same for complex inputs, wherever numpy takes them: the gradient of a real function
   of z = x + iy is df/dx - i df/dy (JAX's convention), checked on the real and on the
   imaginary part of the input separately.
3. Edge points (x ** 0 at 0, ties of max/min/clip, norms and std at zero, ...): the value
   each rule gives there, following JAX where JAX is consistent, and saying why where not.
4. Regressions: one test per wrong answer these rules used to give silently.

Inputs are fresh random float64 values (the seed is printed on failure; TP_SEED replays).
"""
import linecache
import os

import numpy as np
import pytest

import transpile as tp
from transpile import rules
from transpile.test_util import (_jvp_scalarized, _scalarized, check_grads, check_jvp,
                                 check_vjp)
from runtime.trees import tree_leaves, tree_map

SEED = int(os.environ.get("TP_SEED", np.random.SeedSequence().entropy % (1 << 32)))


def _rng(*key):
    return np.random.default_rng([SEED, *key])


_COUNTER = iter(range(1 << 30))


def define(params, body):
    """A function `(params) -> body` with a source file, so transformations can read it."""
    name = f"case{next(_COUNTER)}"
    text = ("import math\nimport numpy as np\nimport scipy.linalg\nimport scipy.special\n"
            "import scipy.stats\nimport transpile.signal\n\n"
            "W = np.arange(1.0, 13.0).reshape(3, 4)   # weights that make permutations show\n"
            f"\n\ndef {name}({params}):\n    return {body}\n")
    filename = f"<test_rule_edges:{name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    env = {}
    exec(compile(text, filename, "exec"), env)  # noqa: S102
    return env[name]


# ---------------------------------------------------------------- inputs

def N(r, *s):
    return r.standard_normal(s)


def P(r, *s):
    """Positive, in [0.5, 2]."""
    return r.uniform(0.5, 2.0, s)


def S(r, *s):
    """At least 0.3 away from zero."""
    x = r.standard_normal(s)
    return np.where(x >= 0, x + 0.3, x - 0.3)


def D(r, *s):
    """Distinct values, at least 0.2 apart."""
    n = int(np.prod(s))
    return (r.permutation(n) * 0.5 + r.uniform(-0.1, 0.1, n)).reshape(s)


def SPD(r, n=3):
    a = r.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def F(r):
    return float(r.uniform(0.5, 1.5))


def C(r, *s):
    return r.standard_normal(s) + 1j * r.standard_normal(s)


def C_off_axes(r, *s):
    """Complex values at least 0.25 from both axes: every branch cut of log, sqrt, powers and
    the inverse trig and hyperbolic functions lies on an axis, and a finite difference that
    crosses one measures the jump, not the derivative."""
    def away(v):
        return v + 0.25 * np.where(v < 0, -1.0, 1.0)
    return away(r.standard_normal(s)) + 1j * away(r.standard_normal(s))


def HPD(r, n=3):
    a = C(r, n, n)
    return a @ a.conj().T + n * np.eye(n)


def _split_distinct(d):
    return d[:12].reshape(3, 4), d[12:]


# Argument lists by domain: (parameter names, generator).
DOMAINS = {
    "x": ("x", lambda r: (N(r, 3, 4),)),
    "pos": ("x", lambda r: (P(r, 3, 4),)),
    "unit": ("x", lambda r: (r.uniform(-0.8, 0.8, (3, 4)),)),
    "big": ("x", lambda r: (r.uniform(1.5, 3.0, (3, 4)),)),
    "away": ("x, y", lambda r: (S(r, 3, 4), S(r, 4))),
    "distinct": ("x, y", lambda r: _split_distinct(D(r, 16))),
    "pair": ("x, y", lambda r: (N(r, 3, 4), N(r, 4))),
    "quot": ("x, y", lambda r: (N(r, 3, 4) * 3.0, P(r, 4))),
    "power": ("x, y", lambda r: (P(r, 3, 4), N(r, 4))),
    "float": ("x, y", lambda r: (F(r), F(r) + 0.25)),
    "matrix": ("a, b", lambda r: (SPD(r), N(r, 3))),
}

# (spelling the line covers, expression, domain): one line per primitive (other spellings of
# a row share its rules). Expressions combine the primitive with smooth ones only, so each
# line checks one rule; `W` is a fixed weight array of shape (3, 4).
SWEEP = [
    # arithmetic and powers
    ("+", "x + y", "pair"), ("-", "x - y", "pair"), ("*", "x * y", "pair"),
    ("/", "x / y", "quot"), ("**", "x ** y + x ** 3 + x ** 0.5", "power"),
    ("%", "x % y + np.remainder(y, 0.3)", "quot"), ("np.fmod", "np.fmod(x, y)", "quot"),
    ("np.heaviside", "np.heaviside(np.round(x), y) * x", "pair"),
    ("np.copysign", "np.copysign(x, y)", "pair"),
    ("np.nextafter", "np.nextafter(x, y) * x", "pair"),
    ("u-", "-x", "x"), ("u+", "+x", "x"),
    # exponentials, logs, roots
    ("np.exp", "np.exp(x)", "x"), ("np.exp2", "np.exp2(x)", "x"),
    ("np.expm1", "np.expm1(x)", "x"), ("np.log", "np.log(x)", "pos"),
    ("np.log2", "np.log2(x)", "pos"), ("np.log10", "np.log10(x)", "pos"),
    ("np.log1p", "np.log1p(x)", "pos"), ("np.logaddexp", "np.logaddexp(x, y)", "pair"),
    ("np.logaddexp2", "np.logaddexp2(x, y)", "pair"), ("np.sqrt", "np.sqrt(x)", "pos"),
    ("np.cbrt", "np.cbrt(x)", "away"), ("np.square", "np.square(x)", "x"),
    ("np.reciprocal", "np.reciprocal(x)", "pos"),
    # trigonometric, hyperbolic
    ("np.sin", "np.sin(x)", "x"), ("np.cos", "np.cos(x)", "x"), ("np.tan", "np.tan(x)", "unit"),
    ("np.arcsin", "np.arcsin(x)", "unit"), ("np.arccos", "np.arccos(x)", "unit"),
    ("np.arctan", "np.arctan(x)", "x"), ("np.arctan2", "np.arctan2(x, y)", "away"),
    ("np.sinh", "np.sinh(x)", "x"), ("np.cosh", "np.cosh(x)", "x"),
    ("np.tanh", "np.tanh(x)", "x"), ("np.arcsinh", "np.arcsinh(x)", "x"),
    ("np.arccosh", "np.arccosh(x)", "big"), ("np.arctanh", "np.arctanh(x)", "unit"),
    ("np.deg2rad", "np.deg2rad(x)", "x"), ("np.rad2deg", "np.rad2deg(x)", "x"),
    ("np.sinc", "np.sinc(x)", "x"),
    # piecewise
    ("np.abs", "np.abs(x)", "away"), ("np.maximum", "np.maximum(x, y)", "distinct"),
    ("np.minimum", "np.minimum(x, y)", "distinct"),
    ("np.where", "np.where(x > 0, x * y, y)", "pair"),
    ("np.clip", "np.clip(x, -0.2, 5.0) + np.clip(y, y - 1.0, y + 1.0)", "away"),
    ("np.hypot", "np.hypot(x, y)", "away"),
    ("np.asarray", "np.asarray(x) * y", "pair"),
    # (a float32 cast of a value float32 holds exactly: finite differences of a rounded
    # one would measure the rounding)
    ("np.float32", "np.float32(np.round(x * 64) / 64) * y + np.float32(0.5) * x", "pair"),
    ("np.conj", "np.conj(x)", "x"), ("np.real", "np.real(x)", "x"),
    ("np.imag", "np.imag(x) + x", "x"),
    # math and builtins on Python floats (the same rows as numpy's, on another code path)
    ("math.exp", "math.exp(x) * math.log(y) + math.sqrt(x) + math.tanh(y) + math.atan2(x, y)",
     "float"),
    ("math.fabs", "math.fabs(x) + math.hypot(x, y) + float(x) + max(x, y) * min(x, y)",
     "float"),
    ("math.erf", "math.erf(x) * math.erfc(y) + math.gamma(x + 3.0) * math.lgamma(y + 3.0) "
     "+ math.pow(math.fabs(x) + 0.5, y)", "float"),
    # products
    ("@", "x @ y", "pair"), ("np.dot", "np.dot(x, y)", "pair"),
    ("np.inner", "np.inner(x, y)", "pair"),
    ("np.outer", "np.outer(x, y)", "pair"), ("np.vdot", "np.vdot(x[0], y)", "pair"),
    ("np.tensordot", "np.tensordot(x, y, 1)", "pair"),
    ("np.einsum", "np.einsum('ij,j->i', x, y) + np.einsum(x, [0, 1], y, [1], [0])", "pair"),
    ("np.trace", "np.trace(x) + np.trace(x, 1)", "x"),
    ("np.linalg.inv", "np.linalg.inv(a)", "matrix"),
    ("np.linalg.det", "np.linalg.det(a)", "matrix"),
    ("np.linalg.slogdet", "np.linalg.slogdet(a)[1]", "matrix"),
    ("np.linalg.solve", "np.linalg.solve(a, b)", "matrix"),
    ("np.linalg.cholesky", "np.linalg.cholesky(0.5 * (a + a.T))", "matrix"),
    ("np.linalg.norm", "np.linalg.norm(x) + np.linalg.norm(x, axis=1)", "x"),
    # reductions
    ("np.sum", "np.sum(x, axis=0)", "x"), ("sum", "sum(x) + sum([x, y], 1.0)", "pair"),
    ("np.mean", "np.mean(x, axis=1)", "x"), ("np.prod", "np.prod(x, axis=0)", "pos"),
    ("np.max", "np.max(x, axis=1)", "distinct"), ("np.min", "np.min(x)", "distinct"),
    ("np.var", "np.var(x, axis=0)", "x"), ("np.std", "np.std(x, axis=1, ddof=1)", "x"),
    ("np.cumsum", "np.cumsum(x, axis=1)", "x"), ("np.cumprod", "np.cumprod(x, axis=0)", "pos"),
    ("np.unique", "np.unique(x) * np.ravel(W)", "distinct"),
    ("scipy.special.logsumexp", "scipy.special.logsumexp(x, axis=1)",
     "x"),
    # shapes
    ("[]", "x[1:, ::2] + x[0, 1]", "x"), ("np.copy", "np.copy(x) * x.copy()", "x"),
    ("np.reshape", "np.reshape(x, (4, 3)) * W.T", "x"),
    ("np.ravel", "np.ravel(x) * np.ravel(W)", "x"),
    ("np.squeeze", "np.squeeze(x[None]) * W", "x"),
    ("np.expand_dims", "np.expand_dims(x, 1) ** 2", "x"),
    ("np.atleast_2d", "np.atleast_2d(y) ** 2 + np.atleast_1d(x[0, 0]) + np.atleast_3d(y)",
     "pair"),
    ("np.transpose", "np.transpose(x) * W.T", "x"),
    ("np.matrix_transpose", "np.linalg.matrix_transpose(x) * W.T", "x"),
    ("np.swapaxes", "np.swapaxes(x, 0, 1) * W.T", "x"),
    ("np.moveaxis", "np.moveaxis(x, 0, 1) * W.T", "x"),
    ("np.flip", "np.flip(x) * W", "x"), ("np.fliplr", "np.fliplr(x) * W", "x"),
    ("np.flipud", "np.flipud(x) * W", "x"), ("np.roll", "np.roll(x, 2) * W", "x"),
    ("np.diagonal", "np.diagonal(x, 1) ** 2", "x"),
    ("np.diag", "np.diag(x[0, :3]) ** 2 + np.diag(np.diag(x))", "x"),
    ("np.tril", "np.tril(x) * W", "x"), ("np.triu", "np.triu(x, 1) ** 2", "x"),
    ("np.diff", "np.diff(x) * W[:, 1:]", "x"), ("np.sort", "np.sort(x) * W", "distinct"),
    ("np.concatenate", "np.concatenate([x, y[None]]) ** 2", "pair"),
    ("np.stack", "np.stack([x[0], y]) ** 2", "pair"),
    ("np.vstack", "np.vstack([x, y]) ** 2", "pair"),
    ("np.hstack", "np.hstack([x[0], y]) ** 2", "pair"),
    ("np.split", "np.split(x, 2, axis=1)[0] * np.array_split(x, 2, axis=1)[1]", "x"),
    ("np.hsplit", "np.hsplit(x, 2)[1] ** 2", "x"), ("np.vsplit", "np.vsplit(x, [1])[1] ** 2", "x"),
    ("np.tile", "np.tile(x, (2, 1)) ** 2", "x"), ("np.repeat", "np.repeat(x, 2, 1) ** 2", "x"),
    ("np.pad", "np.pad(x, 1) ** 2", "x"), ("np.broadcast_to", "np.broadcast_to(y, (3, 4)) * x",
                                             "pair"),
    ("np.full", "np.full((3, 4), x[0, 0]) * x", "x"),
    ("np.full_like", "np.full_like(x, x[1, 1]) ** 2", "x"),
    # arrays made from values
    ("np.linspace", "np.linspace(x[0], x[1], 5, axis=1) ** 2", "x"),
    ("np.logspace", "np.logspace(x[0, 0], x[1, 0], 4, base=2.0) ** 2", "x"),
    ("np.arange", "np.arange(x, 4.0, y) ** 2", "float"),
    ("np.r_", "np.r_[x[0], 2.0 * y, 0:2] ** 2", "pair"),
    ("np.c_", "np.c_[x[0], y, 0:4] ** 2", "pair"),
    # random draws, along the draw (the same seed each call): loc + scale * z
    ("np.random.normal", "(np.random.seed(1), np.random.normal(x, y))[1]", "quot"),
    ("np.random.laplace", "(np.random.seed(2), np.random.laplace(x, y))[1]", "quot"),
    ("np.random.logistic", "(np.random.seed(3), np.random.logistic(x, y))[1]", "quot"),
    ("np.random.uniform", "(np.random.seed(4), np.random.uniform(x, x + y))[1]", "quot"),
    ("np.random.lognormal", "(np.random.seed(5), np.random.lognormal(0.3 * x, y))[1]", "quot"),
    ("np.random.exponential", "(np.random.seed(6), np.random.exponential(y, (3, 4)))[1]",
     "quot"),
    ("np.random.gamma", "(np.random.seed(7), np.random.gamma(2.0, y, (3, 4)))[1]", "quot"),
    ("np.random.multivariate_normal",
     "(np.random.seed(8), np.random.multivariate_normal(x[0], np.eye(4), 2))[1]", "quot"),
    # numpy.fft (tests/test_fft.py has the full matrix)
    ("np.fft.fft", "np.abs(np.fft.fft(x, 5)) ** 2", "x"),
    ("np.fft.ifft", "np.abs(np.fft.ifft(x, 2, axis=0, norm='ortho')) ** 2", "x"),
    ("np.fft.fft2", "np.abs(np.fft.fft2(x, (4, 3))) ** 2", "x"),
    ("np.fft.ifft2", "np.abs(np.fft.ifft2(x, norm='forward')) ** 2", "x"),
    ("np.fft.fftn", "np.abs(np.fft.fftn(x, axes=(0,))) ** 2", "x"),
    ("np.fft.ifftn", "np.abs(np.fft.ifftn(x)) ** 2", "x"),
    ("np.fft.rfft", "np.abs(np.fft.rfft(x, 7)) ** 2", "x"),
    ("np.fft.irfft", "np.fft.irfft(x, 5) ** 2", "x"),
    ("np.fft.rfft2", "np.abs(np.fft.rfft2(x)) ** 2", "x"),
    ("np.fft.irfft2", "np.fft.irfft2(x) ** 2", "x"),
    ("np.fft.rfftn", "np.abs(np.fft.rfftn(x, (2, 5), axes=(1, 0))) ** 2", "x"),
    ("np.fft.irfftn", "np.fft.irfftn(x, (3, 5), axes=(0, 1)) ** 2", "x"),
    ("np.fft.fftshift", "np.fft.fftshift(x) * W", "x"),
    ("np.fft.ifftshift", "np.fft.ifftshift(x, axes=0) * W", "x"),
    # scipy.special (tests/test_scipy_special.py has the full matrix)
    ('scipy.special.erf', 'scipy.special.erf(x)', 'x'),
    ('scipy.special.erfc', 'scipy.special.erfc(x)', 'x'),
    ('scipy.special.erfinv', 'scipy.special.erfinv(x)', 'unit'),
    ('scipy.special.erfcinv', 'scipy.special.erfcinv(x + 1.0)', 'unit'),
    ('scipy.special.expit', 'scipy.special.expit(x)', 'x'),
    ('scipy.special.logit', 'scipy.special.logit(0.5 * x + 0.5)', 'unit'),
    ('scipy.special.gamma', 'scipy.special.gamma(x)', 'pos'),
    ('scipy.special.gammaln', 'scipy.special.gammaln(x)', 'pos'),
    ('scipy.special.digamma', 'scipy.special.digamma(x)', 'pos'),
    ('scipy.special.polygamma', 'scipy.special.polygamma(2, x)', 'pos'),
    ('scipy.special.multigammaln', 'scipy.special.multigammaln(x + 1.0, 3)', 'pos'),
    ('scipy.special.rgamma', 'scipy.special.rgamma(x)', 'x'),
    ('scipy.special.beta', 'scipy.special.beta(x, y * y + 0.5)', 'power'),
    ('scipy.special.betaln', 'scipy.special.betaln(x, y * y + 0.5)', 'power'),
    ('scipy.special.betainc', 'scipy.special.betainc(1.5, 2.5, 0.5 * x + 0.5)', 'unit'),
    ('scipy.special.gammainc', 'scipy.special.gammainc(1.5, x)', 'pos'),
    ('scipy.special.gammaincc', 'scipy.special.gammaincc(0.7, x)', 'pos'),
    ('scipy.special.i0', 'scipy.special.i0(x)', 'x'),
    ('scipy.special.i1', 'scipy.special.i1(x)', 'x'),
    ('scipy.special.i0e', 'scipy.special.i0e(x) * y', 'away'),
    ('scipy.special.i1e', 'scipy.special.i1e(x) * y', 'away'),
    ('scipy.special.iv', 'scipy.special.iv(1.5, x)', 'pos'),
    ('scipy.special.ive', 'scipy.special.ive(1.0, x) * y', 'away'),
    ('scipy.special.j0', 'scipy.special.j0(x)', 'x'),
    ('scipy.special.j1', 'scipy.special.j1(x)', 'x'),
    ('scipy.special.jv', 'scipy.special.jv(2.5, x)', 'pos'),
    ('scipy.special.y0', 'scipy.special.y0(x)', 'pos'),
    ('scipy.special.y1', 'scipy.special.y1(x)', 'pos'),
    ('scipy.special.yn', 'scipy.special.yn(2, x)', 'pos'),
    ('scipy.special.yv', 'scipy.special.yv(1.5, x)', 'pos'),
    ('scipy.special.kv', 'scipy.special.kv(0.7, x)', 'pos'),
    ('scipy.special.kve', 'scipy.special.kve(2.0, x)', 'pos'),
    ('scipy.special.wright_bessel', 'scipy.special.wright_bessel(0.6, 1.2, x)', 'pos'),
    ('scipy.special.k0', 'scipy.special.k0(x)', 'pos'),
    ('scipy.special.k1', 'scipy.special.k1(x)', 'pos'),
    ('scipy.special.k0e', 'scipy.special.k0e(x)', 'pos'),
    ('scipy.special.k1e', 'scipy.special.k1e(x)', 'pos'),
    ('scipy.special.erfcx', 'scipy.special.erfcx(x)', 'x'),
    ('scipy.special.loggamma', 'scipy.special.loggamma(x)', 'pos'),
    ('scipy.special.expi', 'scipy.special.expi(x)', 'away'),
    ('scipy.special.exp1', 'scipy.special.exp1(x)', 'pos'),
    ('scipy.special.xlogy', 'scipy.special.xlogy(y, x)', 'power'),
    ('scipy.special.xlog1py', 'scipy.special.xlog1py(y, x)', 'power'),
    ('scipy.special.entr', 'scipy.special.entr(x)', 'pos'),
    ('scipy.special.ndtr', 'scipy.special.ndtr(x)', 'x'),
    ('scipy.special.ndtri', 'scipy.special.ndtri(0.5 * x + 0.5)', 'unit'),
    ('scipy.special.log_ndtr', 'scipy.special.log_ndtr(3.0 * x)', 'x'),
    ('scipy.special.softmax', 'scipy.special.softmax(x, axis=1) * W', 'x'),
    ('scipy.special.log_softmax', 'scipy.special.log_softmax(x) * W', 'x'),
    # shape and indexing functions (tests/test_numpy_surface_shape.py)
    ('np.kron', 'np.kron(x, y) ** 2', 'pair'),
    ('np.cross', 'np.cross(x[:, :3], y[:3]) ** 2 + np.cross(x[:, :3], x[:, 1:], axis=1)', 'pair'),
    ('np.take', "np.take(x, [0, 2, 2], axis=1) ** 2 + np.take(y, [3, -1, 5], mode='wrap')", 'pair'),
    ('np.take_along_axis', 'np.take_along_axis(x, np.array([[2, 0, 0, 1]]), axis=0) * y', 'pair'),
    ('np.append', 'np.append(x, y) ** 2', 'pair'),
    ('np.column_stack', 'np.column_stack([x[0], y]) ** 2', 'pair'),
    ('np.dsplit', 'np.dsplit(x[:, :, None] * y, 2)[1] ** 2', 'pair'),
    ('np.partition', 'np.partition(x, 1, axis=0) * W', 'distinct'),
    ('np.rollaxis', 'np.rollaxis(x, 1) * np.transpose(W)', 'x'),
    ('np.rot90', 'np.rot90(x) * np.transpose(W) + np.rot90(x, -1) ** 2', 'x'),
    ('np.select', 'np.select([x > 0, y > 0], [x * y, y ** 2], x)', 'away'),
    ('np.meshgrid', "np.meshgrid(x[0], y)[0] * np.meshgrid(x[0], y, indexing='ij')[1].T", 'pair'),
    ('np.convolve', "np.convolve(x[0], y, 'same') ** 2 + np.convolve(y, x[1])[1:5]", 'pair'),
    ('np.correlate', 'np.correlate(x[0], y[:3]) ** 2 + np.correlate(y[:2], x[1, :3])', 'pair'),
    ('np.vander', 'np.vander(y, 3) ** 2 + np.vander(y, increasing=True)[:, :3]', 'pair'),
    ('rt.tensor_convolve', "transpile.signal.convolve(x, x[1:, 1:] * y[:3], mode='same') ** 2 "
     "+ transpile.signal.convolve(x, y[:, None] * x.T, axes=([1], [0]), dot_axes=([0], [1]), "
     "mode='valid')", 'pair'),
    # numpy reductions, statistics and elementwise functions
    # (tests/test_numpy_surface_reductions.py); `W % 5 == 0` puts a NaN in rows 1 and 2
    ('np.angle', 'np.angle(x + 1j * y) + np.angle(x, deg=True) * y', 'away'),
    ('np.average', 'np.average(x, axis=1, weights=y) + np.average(x[:, :3], 0, y[:3])', 'quot'),
    ('np.corrcoef', 'np.corrcoef(x, y)', 'distinct'),
    ('np.cov', 'np.cov(x, y, ddof=2) + np.cov(x.T, rowvar=False)[0, 0]', 'distinct'),
    ('np.cumulative_sum', 'np.cumulative_sum(x, axis=1, include_initial=True) ** 2', 'x'),
    ('np.float_power', 'np.float_power(x, y) + np.float_power(x, 3)', 'power'),
    ('np.gradient', 'np.gradient(x, axis=1) * W + np.gradient(x, 0.5, axis=0, edge_order=2) ** 2',
     'x'),
    ('np.interp', 'np.interp(x, np.array([-1.0, 0.0, 0.5, 1.5]) + 0.1 * np.tanh(y), y ** 2, '
     '2.0 * y[0], y[1])', 'pair'),
    ('np.median', 'np.median(x, axis=1) + np.median(x)', 'distinct'),
    ('np.nan_to_num', 'np.nan_to_num(np.where(W % 5 == 0, np.nan, np.where(W == 3, np.inf, '
     'np.where(W == 8, -np.inf, x))), nan=y[0], posinf=y[1], neginf=y[2]) * y', 'pair'),
    ('np.nanmax', 'np.nanmax(np.where(W % 5 == 0, np.nan, x), axis=1)', 'distinct'),
    ('np.nanmean', 'np.nanmean(np.where(W % 5 == 0, np.nan, x), axis=1)', 'x'),
    ('np.nanmin', 'np.nanmin(np.where(W % 5 == 0, np.nan, x), axis=1)', 'distinct'),
    ('np.nanprod', 'np.nanprod(np.where(W % 5 == 0, np.nan, x), axis=1)', 'pos'),
    ('np.nanstd', 'np.nanstd(np.where(W % 5 == 0, np.nan, x), axis=1, ddof=1)', 'x'),
    ('np.nansum', 'np.nansum(np.where(W % 5 == 0, np.nan, x), axis=1)', 'x'),
    ('np.nanvar', 'np.nanvar(np.where(W % 5 == 0, np.nan, x), axis=1)', 'x'),
    ('np.percentile', 'np.percentile(x, 20.0 + 5.0 * y[:2], axis=1)', 'distinct'),
    ('np.polyval', 'np.polyval(y, x)', 'pair'),
    ('np.ptp', 'np.ptp(x, axis=1)', 'distinct'),
    ('np.quantile', 'np.quantile(x, 0.2 + 0.05 * y[:2], axis=1)', 'distinct'),
    ('np.trapezoid', 'np.trapezoid(x, axis=1) + np.trapezoid(x, y) + np.trapezoid(x, dx=y[0])',
     'pair'),
    # np.linalg (tests/test_linalg_decompositions.py): spectra kept apart by a fixed diagonal,
    # eigen- and singular vectors only squared (their signs are arbitrary)
    ('np.linalg.eig', 'np.linalg.eig(0.1 * x[:, :3] + np.diag([1.0, 3.0, 5.0]))[0] '
     '+ np.linalg.eig(0.1 * x[:, :3] + np.diag([1.0, 3.0, 5.0]))[1] ** 2', 'x'),
    ('np.linalg.eigvals', 'np.linalg.eigvals(0.1 * x[:, 1:] + np.diag([1.0, 3.0, 5.0]))', 'x'),
    ('np.linalg.eigh', 'np.linalg.eigh(0.1 * (x[:, :3] + x[:, :3].T) + np.diag([1.0, 3.0, 5.0]))[0]'
     ' + np.linalg.eigh(0.1 * (x[:, :3] + x[:, :3].T) + np.diag([1.0, 3.0, 5.0]))[1] ** 2', 'x'),
    ('np.linalg.eigvalsh', 'np.linalg.eigvalsh(0.1 * (x[:, 1:] + x[:, 1:].T) '
     '+ np.diag([1.0, 3.0, 5.0]))', 'x'),
    ('np.linalg.svd', 'np.linalg.svd(0.1 * x + np.diag([1.0, 3.0, 5.0]) @ np.eye(3, 4), '
     'full_matrices=False)[1] * np.linalg.svd(0.1 * x + np.diag([1.0, 3.0, 5.0]) @ np.eye(3, 4), '
     'full_matrices=False)[0] ** 2 @ np.linalg.svd(0.1 * x + np.diag([1.0, 3.0, 5.0]) '
     '@ np.eye(3, 4), full_matrices=False)[2] ** 2', 'x'),
    ('np.linalg.pinv', 'np.linalg.pinv(0.3 * x + 2.0 * np.eye(3, 4))', 'x'),
    ('np.linalg.qr', 'np.linalg.qr(0.3 * x.T + 2.0 * np.eye(4, 3))[0] ** 3 '
     '@ np.linalg.qr(0.3 * x.T + 2.0 * np.eye(4, 3))[1]', 'x'),
    ('np.linalg.lstsq', 'np.linalg.lstsq(0.3 * x.T + 2.0 * np.eye(4, 3), y, rcond=None)[0] '
     '+ np.linalg.lstsq(0.3 * x.T + 2.0 * np.eye(4, 3), y, rcond=None)[1] '
     '* np.linalg.lstsq(0.3 * x.T + 2.0 * np.eye(4, 3), y, rcond=None)[3]', 'pair'),
    ('np.linalg.matrix_power', 'np.linalg.matrix_power(0.3 * a, 3) + np.linalg.matrix_power(a, -2)',
     'matrix'),
    ('np.linalg.multi_dot', 'np.linalg.multi_dot([x.T, x, y]) + np.linalg.multi_dot([y, x.T, x])',
     'pair'),
    # scipy.linalg (tests/test_scipy_linalg.py); cho_factor reads one triangle of `a`
    ('scipy.linalg.solve_triangular', 'scipy.linalg.solve_triangular(a, b, lower=True) '
     '+ scipy.linalg.solve_triangular(a, b, trans=1)', 'matrix'),
    ('scipy.linalg.cho_factor', 'scipy.linalg.cho_factor(a, lower=True)[0] * W[:, :3]', 'matrix'),
    ('scipy.linalg.cho_solve', 'scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), b)', 'matrix'),
    ('scipy.linalg.lu_factor', 'scipy.linalg.lu_factor(a)[0] * W[:, :3]', 'matrix'),
    ('scipy.linalg.lu_solve', 'scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b, trans=1)',
     'matrix'),
    ('scipy.linalg.expm', 'scipy.linalg.expm(0.5 * x[:, 1:])', 'x'),
    ('scipy.linalg.sqrtm', 'scipy.linalg.sqrtm(a)', 'matrix'),
    ('scipy.linalg.solve_sylvester', 'scipy.linalg.solve_sylvester(a, a.T + np.eye(3), '
     'np.outer(b, b[::-1]))', 'matrix'),
    # scipy.stats (tests/test_scipy_stats.py): densities in every argument, the cumulative
    # functions in x, loc and scale (their shape parameters refuse: held constant here)
    ('scipy.stats.norm.pdf', 'scipy.stats.norm.pdf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.norm.logpdf', 'scipy.stats.norm.logpdf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.norm.cdf', 'scipy.stats.norm.cdf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.norm.logcdf', 'scipy.stats.norm.logcdf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.norm.sf', 'scipy.stats.norm.sf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.norm.logsf', 'scipy.stats.norm.logsf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.norm.ppf', 'scipy.stats.norm.ppf(0.5 * x + 0.5, 0.2 * x, 1.0 + 0.3 * x * x)',
     'unit'),
    ('scipy.stats.norm.isf', 'scipy.stats.norm.isf(0.5 * x + 0.5, 0.2 * x, 1.0 + 0.3 * x * x)',
     'unit'),
    ('scipy.stats.cauchy.pdf', 'scipy.stats.cauchy.pdf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.cauchy.logpdf', 'scipy.stats.cauchy.logpdf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.cauchy.cdf', 'scipy.stats.cauchy.cdf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.cauchy.logcdf', 'scipy.stats.cauchy.logcdf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.cauchy.sf', 'scipy.stats.cauchy.sf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.cauchy.logsf', 'scipy.stats.cauchy.logsf(x, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.cauchy.ppf', 'scipy.stats.cauchy.ppf(0.5 * x + 0.5, 0.2 * x, '
     '1.0 + 0.3 * x * x)', 'unit'),
    ('scipy.stats.cauchy.isf', 'scipy.stats.cauchy.isf(0.5 * x + 0.5, 0.2 * x, '
     '1.0 + 0.3 * x * x)', 'unit'),
    ('scipy.stats.truncnorm.pdf', 'scipy.stats.truncnorm.pdf(x, -4.0 + 0.1 * x, 4.5 + 0.1 * x, '
     '0.1 * x, 1.5)', 'x'),
    ('scipy.stats.truncnorm.logpdf', 'scipy.stats.truncnorm.logpdf(x, -4.0 + 0.1 * x, '
     '4.5 + 0.1 * x, 0.1 * x, 1.5)', 'x'),
    ('scipy.stats.t.pdf', 'scipy.stats.t.pdf(x, 1.0 + y, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.t.logpdf', 'scipy.stats.t.logpdf(x, 1.0 + y, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.t.cdf', 'scipy.stats.t.cdf(x, 2.5, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.t.logcdf', 'scipy.stats.t.logcdf(x, 2.5, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.t.sf', 'scipy.stats.t.sf(x, 2.5, 0.5 * x[0], y)', 'quot'),
    ('scipy.stats.t.logsf', 'scipy.stats.t.logsf(x, 2.5, 0.5 * x[0], y)', 'quot'),
    # (x in (-0.8, 0.8), loc near -1, scale near 2: inside beta's support (0, 1))
    ('scipy.stats.beta.pdf', 'scipy.stats.beta.pdf(x, 2.0 + x[0], 2.0 - x[1], '
     '-1.0 + 0.1 * x[2], 2.0 + 0.1 * x[1])', 'unit'),
    ('scipy.stats.beta.logpdf', 'scipy.stats.beta.logpdf(x, 2.0 + x[0], 2.0 - x[1], '
     '-1.0 + 0.1 * x[2], 2.0 + 0.1 * x[1])', 'unit'),
    ('scipy.stats.beta.cdf', 'scipy.stats.beta.cdf(x, 2.0, 3.0, -1.0 + 0.1 * x[2], '
     '2.0 + 0.1 * x[1])', 'unit'),
    ('scipy.stats.beta.logcdf', 'scipy.stats.beta.logcdf(x, 2.0, 3.0, -1.0 + 0.1 * x[2], '
     '2.0 + 0.1 * x[1])', 'unit'),
    ('scipy.stats.beta.sf', 'scipy.stats.beta.sf(x, 2.0, 3.0, -1.0 + 0.1 * x[2], '
     '2.0 + 0.1 * x[1])', 'unit'),
    ('scipy.stats.beta.logsf', 'scipy.stats.beta.logsf(x, 2.0, 3.0, -1.0 + 0.1 * x[2], '
     '2.0 + 0.1 * x[1])', 'unit'),
    # (x >= 0.5, loc in (-0.2, 0.2): inside the support of gamma and chi2)
    ('scipy.stats.gamma.pdf', 'scipy.stats.gamma.pdf(x, 1.0 + y * y, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.gamma.logpdf', 'scipy.stats.gamma.logpdf(x, 1.0 + y * y, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.gamma.cdf', 'scipy.stats.gamma.cdf(x, 2.5, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.gamma.logcdf', 'scipy.stats.gamma.logcdf(x, 2.5, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.gamma.sf', 'scipy.stats.gamma.sf(x, 2.5, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.gamma.logsf', 'scipy.stats.gamma.logsf(x, 2.5, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.chi2.pdf', 'scipy.stats.chi2.pdf(x, 2.0 + y * y, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.chi2.logpdf', 'scipy.stats.chi2.logpdf(x, 2.0 + y * y, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.chi2.cdf', 'scipy.stats.chi2.cdf(x, 3.0, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.chi2.logcdf', 'scipy.stats.chi2.logcdf(x, 3.0, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.chi2.sf', 'scipy.stats.chi2.sf(x, 3.0, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    ('scipy.stats.chi2.logsf', 'scipy.stats.chi2.logsf(x, 3.0, 0.2 * np.tanh(y), '
     '1.0 + 0.1 * y * y)', 'power'),
    # (counts W % 5 held; the rate differentiated)
    ('scipy.stats.poisson.pmf', 'scipy.stats.poisson.pmf(W % 5, 2.0 * x)', 'pos'),
    ('scipy.stats.poisson.logpmf', 'scipy.stats.poisson.logpmf(W % 5, 2.0 * x)', 'pos'),
    ('scipy.stats.poisson.cdf', 'scipy.stats.poisson.cdf(W % 5, 2.0 * x)', 'pos'),
    ('scipy.stats.poisson.logcdf', 'scipy.stats.poisson.logcdf(W % 5, 2.0 * x)', 'pos'),
    ('scipy.stats.poisson.sf', 'scipy.stats.poisson.sf(W % 5, 2.0 * x)', 'pos'),
    ('scipy.stats.poisson.logsf', 'scipy.stats.poisson.logsf(W % 5, 2.0 * x)', 'pos'),
    # (points of the simplex along axis 0, all K components or the first K - 1)
    ('scipy.stats.dirichlet.pdf', 'scipy.stats.dirichlet.pdf(scipy.special.softmax(x, axis=0)'
     '[:-1], np.exp(0.5 * y[:3]))', 'pair'),
    ('scipy.stats.dirichlet.logpdf', 'scipy.stats.dirichlet.logpdf(scipy.special.softmax(x, '
     'axis=0), np.exp(0.5 * y[:3]))', 'pair'),
    ('scipy.stats.multivariate_normal.pdf', 'scipy.stats.multivariate_normal.pdf(x, y, '
     'x.T @ x / 3.0 + np.eye(4))', 'pair'),
    ('scipy.stats.multivariate_normal.logpdf', 'scipy.stats.multivariate_normal.logpdf(x, y, '
     'x.T @ x / 3.0 + np.eye(4))', 'pair'),
]

# Rules that refuse rather than differentiate: their check is in the regression tests below.
REFUSED = {"np.linalg.cond", "np.random.beta", "np.random.standard_t", "np.random.choice",
           "np.random.permutation", "scipy.stats.multivariate_normal.cdf"}


def _groups():
    by_domain = {}
    for spelling, expr, domain in SWEEP:
        by_domain.setdefault(domain, []).append((spelling, expr))
    return by_domain


def check_rules(f, args, rng):
    """Reverse and forward mode against finite differences, then the two mixed second orders:
    jvp of grad (every reverse rule, and the helpers it emits, differentiated in forward
    mode) and grad of jvp (every forward rule in reverse mode). test_primitives.py runs
    grad of grad and jvp of jvp on the same rules; together they make every order-2 path."""
    v, u_fwd = check_jvp(f, args, rng)
    _, u = check_vjp(f, args, rng)
    check_vjp(_jvp_scalarized(f, v, u_fwd, len(args)), args, rng, atol=1e-5, rtol=1e-4)
    grad = tp.grad(_scalarized(f, u, len(args)), argnums=tuple(range(len(args))))
    check_jvp(grad, args, rng, atol=1e-5, rtol=1e-4)


def _check(params, exprs, make, key):
    rng = _rng(*key)
    check_rules(define(params, "(" + ", ".join(exprs) + ",)"), make(rng), rng)


@pytest.mark.parametrize("domain", sorted(_groups()))
def test_sweep(domain):
    """All the rules of one input domain, to second order in both modes."""
    params, make = DOMAINS[domain]
    lines = _groups()[domain]
    key = (sum(map(ord, domain)),)
    try:
        _check(params, [e for _, e in lines], make, key)
    except AssertionError:
        for spelling, expr in lines:      # name the rule that fails
            try:
                _check(params, [expr], make, key)
            except AssertionError as e:
                raise AssertionError(f"{spelling} ({expr}): {e}\n  (replay with "
                                     f"TP_SEED={SEED})") from None
        raise


def test_the_sweep_covers_the_table():
    """Every primitive with a reverse rule and a user-facing spelling has a sweep line."""
    covered = {rules.lookup(s) for s, _, _ in SWEEP} | \
        {rules.lookup(rules.lookup_subscript(eval(s, {"np": np})))  # noqa: S307
         for s, _, _ in SWEEP if s in ("np.r_", "np.c_")} | \
        {rules.lookup(s) for s in REFUSED}
    missing = sorted(p.name for p in rules.all_primitives()
                     if p.rev is not None and p not in covered and p.spellings and
                     not all(s.startswith("rt.") for s in p.spellings))
    assert not missing, f"rules with no line in SWEEP: {missing}"


# ---------------------------------------------------------------- complex inputs

def _direction(x, part, r):
    x = np.asarray(x)
    if x.dtype.kind != "c":
        return r.standard_normal(x.shape) if part == "re" else np.zeros(x.shape)
    d = r.standard_normal(x.shape)
    return d + 0j if part == "re" else 1j * d


def _numeric_jvp(f, args, v, eps=1e-6):
    plus = f(*[a + eps * t for a, t in zip(args, v)])
    minus = f(*[a - eps * t for a, t in zip(args, v)])
    return tree_map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps), plus, minus)


def _pairing(a, b):
    """Re <a, b> without conjugation: the pairing under which vjp is the transpose of jvp for
    the convention df/dx - i df/dy."""
    return sum(float(np.real(np.sum(np.asarray(x) * np.asarray(y))))
               for x, y in zip(tree_leaves(a), tree_leaves(b)))


def check_complex(f, args, r, tol=1e-5):
    """vjp and jvp of `f` against finite differences along the real and the imaginary part of
    each complex argument; real outputs must get real tangents."""
    for part in ("re", "im"):
        v = [_direction(a, part, r) for a in args]
        numeric = _numeric_jvp(f, args, v)
        out, vjp_fn = tp.vjp(f, *args)
        u = tree_map(lambda o: _direction(o, "re", r) + (
            1j * r.standard_normal(np.shape(o)) if np.iscomplexobj(o) else 0), out)
        cot = vjp_fn(u)
        for c, a in zip(tree_leaves(cot), tree_leaves(args)):
            assert np.iscomplexobj(c) == np.iscomplexobj(a), \
                f"{f.__name__}: gradient of dtype {np.asarray(c).dtype} for an input of " \
                f"dtype {np.asarray(a).dtype}"
        got, want = _pairing(cot, v), _pairing(u, numeric)
        assert np.isclose(got, want, rtol=tol, atol=tol), \
            f"{f.__name__}, reverse mode along the {part} part: {got} vs {want}"
        _, tangent = tp.jvp(f, tuple(args), tuple(v))
        for t, o, n in zip(tree_leaves(tangent), tree_leaves(out), tree_leaves(numeric)):
            assert np.iscomplexobj(t) <= np.iscomplexobj(o), \
                f"{f.__name__}: complex tangent of a real output"
            np.testing.assert_allclose(t, n, rtol=tol, atol=tol,
                                       err_msg=f"{f.__name__}, forward mode, {part} part")


COMPLEX = [
    ("np.exp(z)", "z"), ("np.log(z)", "z"), ("np.sinc(z)", "z"), ("np.sin(z) + np.cos(z)", "z"),
    ("np.tan(0.5 * z)", "z"), ("np.sinh(z) * np.cosh(z)", "z"), ("np.tanh(0.5 * z)", "z"),
    ("np.sqrt(z)", "z"), ("np.square(z) + np.reciprocal(z)", "z"),
    ("z ** w", "zw"), ("z ** 3 + z ** 2.5", "z"), ("z * w + z / w - w", "zw"),
    ("np.log1p(z) + np.expm1(z) + np.log2(z) + np.log10(z) + np.exp2(z)", "z"),
    ("np.arcsin(0.5 * z) + np.arccos(0.5 * z) + np.arctan(0.5 * z)", "z"),
    ("np.arcsinh(0.5 * z) + np.arccosh(z + 2.0) + np.arctanh(0.5 * z)", "z"),
    ("np.real(z) * np.imag(w) + np.conj(z)", "zw"),
    ("np.abs(z)", "z"), ("np.sum(np.abs(z) ** 2)", "z"), ("np.max(np.abs(z))", "z"),
    ("np.linalg.norm(z) + np.linalg.norm(z, axis=1)", "z"),
    ("np.var(z) + np.var(z, axis=0)", "z"), ("np.std(z) + np.std(z, axis=1, ddof=1)", "z"),
    ("np.sum(z, axis=0) + np.mean(z) + np.prod(z[0]) + np.cumsum(z)[-1]", "z"),
    ("np.cumprod(z[0])", "z"),
    ("np.dot(z, w) + z @ w + np.einsum('ij,j->i', z, w)", "zw"),
    ("np.vdot(z[0], w) + np.inner(z, w).sum() + np.outer(z[0], w).sum()", "zw"),
    ("np.tensordot(z, w, 1) + np.trace(z[:, :3])", "zw"),
    ("np.linalg.inv(a) + np.linalg.solve(a, b)[:, None]", "ab"),
    ("np.linalg.det(a)", "ab"), ("np.linalg.slogdet(a)[1]", "ab"),
    ("np.linalg.slogdet(a)[0]", "ab"),
    ("np.linalg.cholesky(0.5 * (a + np.conj(a.T)))", "ab"),
    ("np.where(np.real(z) > 0, z, 2.0 * z)", "z"),
    ("np.abs(x * z) ** 2 + x * np.real(z)", "xz"),
    ("scipy.special.logsumexp(z)", "z"),
]
COMPLEX_DOMAINS = {
    "z": ("z", lambda r: (C_off_axes(r, 3, 4),)),
    "zw": ("z, w", lambda r: (C_off_axes(r, 3, 4), 0.3 * C(r, 4))),
    "xz": ("x, z", lambda r: (N(r, 4), C(r, 4))),
    "ab": ("a, b", lambda r: (HPD(r) + 0.5 * C(r, 3, 3), C(r, 3))),
}


@pytest.mark.parametrize("domain", sorted(COMPLEX_DOMAINS))
def test_complex(domain):
    """The lines of one domain together (outputs of one function), then one by one to name
    a failing rule."""
    params, make = COMPLEX_DOMAINS[domain]
    exprs = [e for e, d in COMPLEX if d == domain]
    key = sum(map(ord, domain))
    try:
        r = _rng(key)
        check_complex(define(params, "(" + ", ".join(exprs) + ",)"), make(r), r)
    except AssertionError:
        for expr in exprs:
            try:
                r = _rng(key)
                check_complex(define(params, expr), make(r), r)
            except AssertionError as e:
                raise AssertionError(f"{expr}: {e}\n  (replay with TP_SEED={SEED})") from None
        raise


@pytest.mark.parametrize("expr,domain", [
    ("np.sum(np.abs(z) ** 3)", "z"), ("np.linalg.norm(z) * np.sum(np.real(z))", "z"),
    ("np.std(z) + np.var(z)", "z"), ("np.sum(np.abs(np.sin(z)))", "z"),
    ("np.real(np.sum(z ** w))", "zw"), ("np.linalg.slogdet(a)[1]", "ab"),
], ids=["abs", "norm", "std_var", "abs_sin", "power", "slogdet"])
def test_complex_second_order(expr, domain):
    """The gradient of a real function of complex inputs, itself checked in both modes
    (jvp of grad, vjp of grad) along the real and imaginary parts."""
    params, make = COMPLEX_DOMAINS[domain]
    r = _rng(len(expr), 7)
    grad = tp.grad(define(params, expr), argnums=0)
    check_complex(grad, make(r), r, tol=1e-4)


# ---------------------------------------------------------------- edge points

def _grad(expr, params="x", argnums=0):
    return tp.grad(define(params, expr), argnums=argnums)


def test_sinc_at_zero_to_the_third_derivative():
    """At 0 the first three derivatives of sinc are 0, -pi^2/3 and 0, in both modes; beside 0
    the generic formula agrees with finite differences."""
    def f(x):
        return np.sinc(x)
    d1, d2, d3 = tp.grad(f), tp.grad(tp.grad(f)), tp.grad(tp.grad(tp.grad(f)))
    assert d1(0.0) == 0.0
    np.testing.assert_allclose(d2(0.0), -np.pi ** 2 / 3.0, rtol=1e-14)
    assert d3(0.0) == 0.0
    jvp2 = tp.jvp(lambda x: tp.jvp(f, (x,), (1.0,))[1], (0.0,), (1.0,))[1]
    np.testing.assert_allclose(jvp2, -np.pi ** 2 / 3.0, rtol=1e-14)
    for x in (1e-3, -0.37, 2.5):
        h = 1e-5
        np.testing.assert_allclose(d1(x), (np.sinc(x + h) - np.sinc(x - h)) / (2 * h),
                                   rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(d2(x), (d1(x + h) - d1(x - h)) / (2 * h), rtol=1e-6,
                                   atol=1e-8)


def test_copysign_slope_is_the_sign_product_and_zero_at_zero():
    x = np.array([0.0, -1.5, 2.0, -0.25])
    y = np.array([-3.0, -2.0, 1.0, 0.5])
    def f(x, y):
        return np.sum(np.copysign(x, y) * np.array([1.0, 2.0, 3.0, 4.0]))
    gx, gy = tp.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [0.0, 2.0, 3.0, -4.0])
    np.testing.assert_array_equal(gy, np.zeros(4))
    tangent = tp.jvp(f, (x, y), (np.ones(4), np.ones(4)))[1]
    assert tangent == np.sum(gx)


def test_power_of_zero_exponent_at_zero_is_zero():
    """d(x ** 0)/dx = 0 everywhere, also at x = 0 (JAX); it was 0 * inf (nan on arrays,
    ZeroDivisionError on a Python float)."""
    assert _grad("x ** 0.0")(0.0) == 0.0
    np.testing.assert_array_equal(_grad("np.sum(x ** 0.0)")(np.zeros(3)), 0.0)
    np.testing.assert_array_equal(_grad("np.sum(x ** p)", "x, p")(np.zeros(2), 0.0), 0.0)
    assert _grad("x ** p", "x, p")(0.0, 0.0) == 0.0
    assert tp.grad(_grad("x ** 0.0"))(0.0) == 0.0
    assert tp.jvp(define("x", "x ** 0.0"), (0.0,), (1.0,))[1] == 0.0
    assert _grad("x ** 1.0")(0.0) == 1.0
    assert tp.grad(_grad("x ** 1"))(0.0) == 0.0


def test_fractional_power_and_roots_at_zero_are_infinite():
    """As in JAX: the slope of x ** 0.5, sqrt and cbrt at 0 is +inf (not an exception)."""
    with np.errstate(divide="ignore"):
        assert _grad("x ** 0.5")(0.0) == np.inf
        assert _grad("np.sum(x ** 0.5)")(np.zeros(2))[0] == np.inf
        assert _grad("np.sqrt(x)")(0.0) == np.inf
        assert _grad("np.cbrt(x)")(0.0) == np.inf


def test_abs_norm_hypot_std_at_zero_are_zero():
    """A kink or a cone at 0: these rules take the subgradient 0 there (abs like autograd and
    PyTorch; JAX takes 1 for a real abs and nan for norm, hypot and std, which makes abs
    and the norm of a 1-vector disagree). The issue asks for 0 for std."""
    assert _grad("np.abs(x)")(0.0) == 0.0
    assert _grad("np.abs(x)")(0j) == 0.0
    np.testing.assert_array_equal(_grad("np.linalg.norm(x)")(np.zeros(3)), 0.0)
    np.testing.assert_allclose(_grad("np.sum(np.linalg.norm(x, axis=1))")(
        np.array([[0.0, 0.0], [3.0, 4.0]])), [[0.0, 0.0], [0.6, 0.8]])
    assert _grad("np.hypot(x, 0.0)")(0.0) == 0.0
    np.testing.assert_array_equal(_grad("np.std(x)")(np.full(4, 2.5)), 0.0)
    np.testing.assert_array_equal(_grad("np.sum(np.std(x, axis=0))")(np.full((3, 2), 0.5)),
                                  0.0)
    np.testing.assert_array_equal(_grad("np.var(x)")(np.full(4, 2.5)), 0.0)
    assert tp.jvp(define("x", "np.linalg.norm(x)"), (np.zeros(3),), (np.ones(3),))[1] == 0.0
    assert tp.jvp(define("x", "np.std(x)"), (np.ones(3),), (np.arange(3.0),))[1] == 0.0
    assert tp.grad(_grad("np.abs(x)"))(0.0) == 0.0          # no second derivative at the kink
    assert tp.grad(_grad("np.abs(x)"))(-1.5) == 0.0


def test_ties_share_the_derivative_evenly():
    """maximum, minimum, max and clip at a tie give each side half (JAX; jnp.clip is
    minimum(maximum(x, lo), hi))."""
    assert _grad("np.maximum(x, y)", "x, y", (0, 1))(1.0, 1.0) == (0.5, 0.5)
    assert _grad("np.minimum(x, y)", "x, y", (0, 1))(1.0, 1.0) == (0.5, 0.5)
    np.testing.assert_array_equal(_grad("np.max(x)")(np.array([1.0, 3.0, 3.0])),
                                  [0.0, 0.5, 0.5])
    g = _grad("np.sum(np.clip(x, lo, hi) * np.arange(1.0, 5.0))", "x, lo, hi", (0, 1, 2))
    gx, glo, ghi = g(np.array([-1.0, 0.0, 0.5, 1.0]), np.zeros(4), np.ones(4))
    np.testing.assert_array_equal(gx, [0.0, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(glo, [1.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(ghi, [0.0, 0.0, 0.0, 2.0])
    t = tp.jvp(define("x", "np.clip(x, 0.0, 1.0)"), (np.array([0.0, 1.0, 0.5]),),
               (np.ones(3),))[1]
    np.testing.assert_array_equal(t, [0.5, 0.5, 1.0])


def test_prod_with_zero_elements_is_exact():
    """The derivative of a product by one element is the product of the others: with one
    zero in a slice, the zero's derivative is not zero; with two, every derivative is (JAX
    gives the same; out / a gave nan)."""
    x = np.array([[0.0, 2.0, 0.0], [1.5, 0.0, 3.0], [2.0, 0.5, 4.0]])
    weights = np.array([1.0, 2.0, 3.0])
    f = _grad("np.sum(np.prod(x, axis=1) * w)", "x, w")
    expected = np.array([[0.0, 0.0, 0.0], [0.0, 2 * 4.5, 0.0],
                         [3 * 2.0, 3 * 8.0, 3 * 1.0]])
    np.testing.assert_allclose(f(x, weights), expected)
    tangent = tp.jvp(define("x", "np.prod(x)"), (np.array([0.0, 2.0, 3.0]),),
                     (np.array([0.7, 0.0, 0.0]),))[1]
    np.testing.assert_allclose(tangent, 0.7 * 6.0)


def test_where_and_arctan2_at_zero_follow_jax():
    """np.where picks the branch derivative (0 for the unselected one); arctan2 at the
    origin has no limit and gives nan, as in JAX."""
    assert _grad("np.where(x > 0, x, 0.0)")(0.0) == 0.0
    with np.errstate(invalid="ignore"):
        assert np.isnan(_grad("np.arctan2(x, y)", "x, y")(0.0, 0.0))


def test_mod_quotient_is_read_from_the_result():
    """1.0 % 0.1: 1.0 / 0.1 rounds to 10.0 but numpy's quotient is 9; the derivative with
    respect to the divisor is minus the quotient numpy used."""
    g = _grad("x % y", "x, y", (0, 1))
    assert g(1.0, 0.1) == (1.0, -9.0)
    assert _grad("np.fmod(x, y)", "x, y", 1)(1.0, 0.1) == -9.0
    assert _grad("np.fmod(x, y)", "x, y", 1)(-7.5, 2.0) == 3.0      # truncation: -3
    assert _grad("np.mod(x, y)", "x, y", 1)(-7.5, 2.0) == 4.0       # floor: -4


def test_heaviside_at_zero_reads_its_second_argument():
    g = _grad("np.sum(np.heaviside(x, h))", "x, h", (0, 1))
    gx, gh = g(np.array([-1.0, 0.0, 2.0]), np.array([0.3, 0.4, 0.5]))
    np.testing.assert_array_equal(gx, 0.0)
    np.testing.assert_array_equal(gh, [0.0, 1.0, 0.0])


# ---------------------------------------------------------------- regressions

def test_mod_remainder_and_fmod_are_differentiated():
    """They were marked nondiff: grad was 0 (d/dx of x % y is 1)."""
    x, y = np.array([2.5, -1.2]), np.array([0.7, 0.5])
    for expr in ("np.sum(x % y)", "np.sum(np.mod(x, y))", "np.sum(np.remainder(x, y))",
                 "np.sum(np.fmod(x, y))"):
        gx, gy = _grad(expr, "x, y", (0, 1))(x, y)
        np.testing.assert_array_equal(gx, 1.0)
        assert np.all(gy != 0.0), expr
    r = _rng(11)
    check_grads(define("x, y", "np.fmod(x, y) * (x % y)"), (N(r, 3) * 3, P(r, 3)), order=2,
                modes=("rev", "fwd"))


def test_linspace_logspace_arange_are_differentiated():
    """Marked nondiff, they gave zero gradients for their start and stop."""
    np.testing.assert_allclose(_grad("np.sum(np.linspace(a, b, 5))", "a, b", (0, 1))(0.5, 2.0),
                               (2.5, 2.5))
    r = _rng(12)
    check_grads(define("a, b, s, t", "(np.linspace(a, b, 4, endpoint=False, axis=1), "
                       "np.logspace(b, a[0], 3, base=3.0, axis=-1), "
                       "np.arange(s, 3.0, t) ** 2)"),
                (N(r, 2, 3), N(r, 3), F(r) - 0.5, F(r) * 0.5), order=2, modes=("rev", "fwd"))
    check_grads(define("a, b", "np.linspace(a, b, 6, retstep=True)"), (F(r), F(r) + 1),
                order=2, modes=("fwd",))
    assert _grad("np.sum(np.arange(a) * 1.0)", "a")(3.5) == 0.0    # a is numpy's stop


def test_linspace_variants_without_a_rule_refuse():
    with pytest.raises(tp.TransformError, match="retstep"):
        _grad("np.linspace(a, b, 3, retstep=True)[1]", "a, b")(0.0, 1.0)
    with pytest.raises(tp.TransformError, match="dtype"):
        _grad("np.sum(np.linspace(a, b, 3, dtype=int))", "a, b")(0.0, 4.0)
    with pytest.raises(tp.TransformError, match="base"):
        _grad("np.sum(np.logspace(0.0, 1.0, 3, base=b))", "b")(2.0)


def test_r_and_c_are_concatenations():
    """np.r_[...] and np.c_[...] gave zero gradients (their items were read as an index)."""
    g = _grad("np.sum(np.r_[x, 2.0 * y, 0:3] * np.arange(1.0, 9.0))", "x, y", (0, 1))
    gx, gy = g(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0]))
    np.testing.assert_array_equal(gx, [1.0, 2.0])
    np.testing.assert_array_equal(gy, [6.0, 8.0, 10.0])
    gx, gs = _grad("np.sum(np.c_[x, s * x] ** 2)", "x, s", (0, 1))(np.array([1.0, 2.0]), 3.0)
    np.testing.assert_allclose(gx, 2 * np.array([1.0, 2.0]) * 10.0)
    np.testing.assert_allclose(gs, 2 * 3.0 * 5.0)
    r = _rng(13)
    check_grads(define("x, y", "np.r_['0,2', x, y].T ** 2 + np.c_[x, y]"), (N(r, 3), N(r, 3)),
                order=2, modes=("rev", "fwd"))
    xs = N(r, 2, 3)     # batched since np.r_/np.c_ have batching rules
    np.testing.assert_array_equal(tp.vmap(define("x", "np.r_[x, x]"))(xs), np.c_[xs, xs])


def test_einsum_sublist_form():
    """np.einsum(x, [0, 1], [1, 0]) gave a zero gradient (the operand sat in the slot of
    the subscripts string); several operands lost all but one gradient."""
    r = _rng(14)
    a, b, c = N(r, 2, 3), N(r, 3, 4), N(r, 4, 2)
    g = _grad("np.sum(np.einsum(x, [0, 1], [1, 0]) * w)", "x, w")(a, np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(g, np.arange(6.0).reshape(3, 2).T)
    f = define("a, b, c", "(np.einsum(a, [0, 1], b, [1, 2], [0, 2]), "
               "np.einsum(a, [0, 1], b, [1, 2]), "
               "np.einsum(a, [0, 1], b, [1, 2], c, [2, 3], [0, 3]), "
               "np.einsum(a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2]))")
    check_rules(f, (a, b, c), r)
    batched = tp.vmap(f, in_axes=(0, None, 0))(np.stack([a, 2 * a]), b, np.stack([c, -c]))
    for k, (s, t) in enumerate([(1, 1), (2, -1)]):
        tree_map(lambda got, want: np.testing.assert_allclose(got[k], want), batched,
                 f(s * a, b, t * c))
    loss = define("a, b", "np.sum(np.einsum(a, [0, 1], b, [1, 2], [0, 2]) ** 2)")
    grads = tp.vmap(tp.grad(loss, argnums=(0, 1)))(np.stack([a, 2 * a]), np.stack([b, b]))
    for k in (0, 1):
        for got, want in zip(grads, tp.grad(loss, argnums=(0, 1))((k + 1) * a, b)):
            np.testing.assert_allclose(got[k], want)


def test_complex_abs_norm_var_use_the_gradient_convention():
    """grad of |z|^2 is 2 conj(z) (df/dx - i df/dy), as for every other rule; abs, norm, var
    and std returned the conjugate. jvp of abs returned a complex tangent for a real output."""
    z = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    np.testing.assert_allclose(_grad("np.sum(np.abs(x) ** 2)")(z), 2 * np.conj(z))
    np.testing.assert_allclose(_grad("np.linalg.norm(x) ** 2")(z), 2 * np.conj(z))
    np.testing.assert_allclose(_grad("np.var(x)")(z), np.conj(z - z.mean()))
    np.testing.assert_allclose(_grad("np.std(x)")(z), np.conj(z - z.mean()) / 2 / np.std(z))
    np.testing.assert_allclose(_grad("np.real(np.vdot(x, y))", "x, y")(z, z[::-1]),
                               np.conj(z[::-1]))
    t = tp.jvp(define("x", "np.abs(x)"), (z,), (np.ones(2) + 0j,))[1]
    assert t.dtype.kind == "f"
    np.testing.assert_allclose(t, np.real(z) / np.abs(z))


def test_complex_cotangent_reaching_a_real_input_is_made_real():
    """It crashed in rt.as_grad (float(complex)); the gradient of a real input is the real
    part (JAX)."""
    z = np.array([1.0 + 2.0j, 3.0 - 1.0j])
    g = _grad("np.real(np.sum(x * z))", "x, z")(0.5, z)
    assert type(g) is float and g == 4.0
    g = _grad("np.real(np.sum(x * z))", "x, z")(np.array([0.5, 1.5]), z)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [1.0, 3.0])
    g = tp.vmap(_grad("np.real(np.sum(x * z))", "x, z"), in_axes=(0, None))(np.ones((2, 2)), z)
    assert g.dtype == np.float64


def test_complex_slogdet_sign_and_cholesky():
    """slogdet's sign is a phase for complex matrices (it was given a zero derivative) and
    its log is real; cholesky of a Hermitian matrix conjugates."""
    r = _rng(15)
    a = HPD(r) + 0.5 * C(r, 3, 3)
    check_complex(define("a", "np.linalg.slogdet(a)[0]"), (a,), r)
    check_complex(define("a", "np.linalg.cholesky(0.5 * (a + np.conj(a.T)))"), (HPD(r),), r)
    check_complex(define("z, w", "z ** w"), (C(r, 3), 0.3 * C(r, 3)), r)


@pytest.mark.parametrize("body,what", [
    ("np.allclose(x, 1.0)", "a bool"), ("x[0] > 0", "a bool"), ("np.any(x > 0)", "a bool"),
    ("len(x)", "an integer"), ("np.sum(x > 0)", "an integer"),
])
def test_grad_of_a_bool_or_integer_output_refuses(body, what):
    """It returned zeros."""
    f = define("x", body)
    with pytest.raises(tp.TransformError, match=f"grad of {f.__name__} returned {what}"):
        tp.grad(f)(np.ones(3))
    with pytest.raises(tp.TransformError, match=f"returned {what}"):
        tp.vmap(tp.grad(f))(np.ones((2, 3)))


def _no_rule_message(body):
    with pytest.raises(tp.TransformError) as info:
        tp.grad(define("x", body))(np.eye(2) + 1.0)
    return str(info.value)


def test_no_rule_message_names_the_full_spelling():
    """It dropped submodules (np.fft.fft was reported as np.fft) and hinted a spelling that
    does not exist."""
    msg = _no_rule_message("np.sum(np.linalg.tensorinv(x, ind=1))")
    assert "np.linalg.tensorinv has no rule" in msg and '@rev("np.linalg.tensorinv")' in msg
    assert "transpile/rules/linalg.py" in msg
    msg = " ".join(rules.core.missing_rule_message(np.fft.hfft))   # (written, no row)
    assert "np.fft.hfft has no rule" in msg and '@rev("np.fft.hfft")' in msg
    assert "transpile/rules/fft.py" in msg
    pytest.importorskip("scipy")
    msg = _no_rule_message("np.sum(scipy.special.zeta(x, 2.0))")
    assert "scipy.special.zeta" in msg and "transpile/rules/special.py" in msg


def test_cond_refuses_and_unique_is_differentiated():
    """np.linalg.cond was nondiff (zero gradient); np.unique's values are elements of x."""
    with pytest.raises(tp.TransformError, match="np.linalg.cond has no derivative rule"):
        _grad("np.linalg.cond(x)")(np.eye(2) * 2.0)
    with pytest.raises(tp.TransformError, match="np.linalg.cond has no derivative rule"):
        tp.jvp(define("x", "np.linalg.cond(x)"), (np.eye(2),), (np.eye(2),))
    g = _grad("np.sum(np.unique(x) * np.arange(1.0, 4.0))")(np.array([3.0, 1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [1.5, 1.0, 1.5, 2.0])
    with pytest.raises(tp.TransformError, match="np.unique"):
        _grad("np.sum(np.unique(x, return_counts=True)[0])")(np.array([1.0, 2.0]))


def test_random_draws_are_differentiated_along_the_draw():
    """np.random.normal(mu, sigma) and its kind were nondiff: a zero gradient for mu and
    sigma. With the random state fixed, a draw is a smooth function of them (mu + sigma z).
    Parameters whose draw is no such function refuse."""
    g = _grad("(np.random.seed(0), np.sum(np.random.normal(m, s, 5)))[1]", "m, s", (0, 1))
    np.random.seed(0)
    z = np.random.standard_normal(5)
    np.testing.assert_allclose(g(0.5, 2.0), (5.0, np.sum(z)))
    for body, params in [("np.sum(np.random.beta(a, 2.0, 3))", "a"),
                         ("np.sum(np.random.standard_t(a, 3))", "a"),
                         ("np.sum(np.random.gamma(a, 1.0, 3))", "a"),
                         ("np.sum(np.random.choice(a, 2))", "a"),
                         ("np.sum(np.random.permutation(a))", "a"),
                         ("np.sum(np.random.multivariate_normal(np.zeros(2), a))", "a")]:
        arg = np.eye(2) if "multivariate" in body else np.array([1.5, 2.5, 3.5])
        if "beta" in body or "standard_t" in body or "gamma" in body:
            arg = 2.5
        with pytest.raises(tp.TransformError, match="has no derivative rule"):
            _grad(body, params)(arg)
