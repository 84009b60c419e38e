"""Derivatives and batching of np.linalg's decompositions and friends: eigh, eigvalsh, svd,
eig, eigvals, pinv, qr, lstsq, matrix_power, multi_dot and norm (every ord), against finite
differences (check_grads, both modes, to second order), for real and complex inputs, and
under vmap against loops.

Eigenvectors and singular vectors are fixed only up to a sign (a phase), so the functions
checked read them through gauge-invariant expressions (|v|^2, U f(S) V^H, projectors), at
inputs whose spectra are well separated; one test looks at a degenerate spectrum.
"""
import numpy as np
import pytest

import transpile as tp
from transpile.errors import TransformError
from transpile.test_util import check_grads

from test_vmap_rules import _check_compositions, _close, _loop

SEED = int.from_bytes(np.random.SeedSequence().entropy.to_bytes(16, "little")[:4], "little")


def _rng(k):
    return np.random.default_rng([SEED, k])


def _separated(r, n, complex_=False):
    """A Hermitian (symmetric) matrix with eigenvalues 1, 2, ..., n in a random basis."""
    a = r.standard_normal((n, n)) + (1j * r.standard_normal((n, n)) if complex_ else 0)
    q = np.linalg.qr(a)[0]
    return (q * np.arange(1.0, n + 1)) @ np.conj(q.T)


def _well_conditioned(r, m, n):
    """An m x n matrix with singular values 1, 2, ..., min(m, n) in random bases."""
    k = min(m, n)
    u = np.linalg.qr(r.standard_normal((m, k)))[0]
    v = np.linalg.qr(r.standard_normal((n, k)))[0]
    return (u * np.arange(1.0, k + 1)) @ v.T


def _complex_check(f, z, k):
    """f of complex z, checked as a function of (Re z, Im z) to second order, and its
    gradient against JAX's convention df/dx - i df/dy."""
    def real_args(x, y):
        return f(x + 1j * y)
    check_grads(real_args, (np.real(z), np.imag(z)), order=2, modes=("fwd", "rev"),
                seed=k)
    gx, gy = tp.grad(real_args, argnums=(0, 1))(np.real(z), np.imag(z))
    np.testing.assert_allclose(tp.grad(f)(z), gx - 1j * gy, rtol=1e-9, atol=1e-10)


# ---------------------------------------------------------------- eigh, eigvalsh

def eigh_loss(a):
    w, v = np.linalg.eigh(a + a.T)
    return np.sum(w * np.sin(w)) + np.sum(v ** 4 * np.arange(1.0, 1.0 + np.shape(a)[0]))


def eigh_indexed(a):
    r = np.linalg.eigh(a + a.T, UPLO="U")
    return np.sum(r[0] ** 2) + np.sum(r.eigenvectors[:, 0] ** 2 * r[1][:, 1] ** 2)


def eigvalsh_loss(a):
    return np.sum(np.cos(np.linalg.eigvalsh(a + a.T)))


@pytest.mark.parametrize("f", [eigh_loss, eigh_indexed, eigvalsh_loss])
def test_eigh_real(f):
    r = _rng(1)
    a = 0.5 * _separated(r, 4) + 0.01 * r.standard_normal((4, 4))
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), seed=1)


def test_eigh_complex_hermitian():
    def f(z):
        h = z + np.conj(z.T)
        w, v = np.linalg.eigh(h)
        return np.sum(w ** 3) + np.sum(np.abs(v) ** 4 * np.arange(1.0, 5.0)) + \
            np.sum(np.linalg.eigvalsh(h, "U") * np.arange(4.0))
    r = _rng(2)
    z = 0.5 * _separated(r, 4, True) + 0.01 * (r.standard_normal((4, 4)) +
                                               1j * r.standard_normal((4, 4)))
    _complex_check(f, z, 2)


def test_eigh_degenerate_spectrum_follows_jax():
    """At a repeated eigenvalue, functions of the eigenvalues alone keep finite derivatives
    (the eigenvector cotangent is zero, and zero over a zero gap gives zero); eigenvector
    derivatives divide by the zero gap, as JAX's do, and come out non-finite."""
    a = np.diag([1.0, 1.0, 3.0])
    g = tp.grad(lambda a: np.sum(np.linalg.eigh(a)[0] ** 2))(a)
    np.testing.assert_allclose(g, 2 * a)      # d sum(w^2) = d |a|_F^2
    g = tp.grad(lambda a: np.sum(np.linalg.eigvalsh(a) ** 3))(a)
    np.testing.assert_allclose(g, 3 * a @ a)
    with np.errstate(divide="ignore", invalid="ignore"):
        _, t = tp.jvp(lambda a: np.linalg.eigh(a)[1], (a,), (np.ones((3, 3)),))
    assert not np.all(np.isfinite(t))


# ---------------------------------------------------------------- svd

def svd_loss(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s ** 3) + np.sum(u @ np.diag(np.tanh(s)) @ vh * a) + \
        np.sum((u[:, :1] @ vh[:1]) ** 2)


def svd_square_full(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum((u * np.sin(s)) @ vh)


def svd_values(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) ** 3) + \
        np.sum(np.exp(np.linalg.svd(a, full_matrices=False, compute_uv=False)))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("f", [svd_loss, svd_values])
def test_svd_real(f, shape):
    check_grads(f, (_well_conditioned(_rng(3), *shape),), order=2, modes=("fwd", "rev"),
                seed=3)


def test_svd_square_full_matrices():
    check_grads(svd_square_full, (_well_conditioned(_rng(4), 3, 3),), order=2,
                modes=("fwd", "rev"), seed=4)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_svd_complex(shape):
    def f(z):
        u, s, vh = np.linalg.svd(z, full_matrices=False)
        return np.sum(s ** 3) + np.real(np.sum((u * np.tanh(s)) @ vh * np.conj(z))) + \
            np.sum(np.abs(u[:, :1] @ vh[:1]) ** 2 * np.abs(z)) + \
            np.sum(np.linalg.svd(z, compute_uv=False) ** 2)
    r = _rng(5)
    z = _well_conditioned(r, *shape) * np.exp(0.3j) + 0.05j * r.standard_normal(shape)
    _complex_check(f, z, 5)


def test_svd_refused_variants():
    a = np.arange(6.0).reshape(3, 2)
    with pytest.raises(TransformError, match="full_matrices=True"):
        tp.grad(lambda a: np.sum(np.linalg.svd(a)[0]))(a)
    with pytest.raises(TransformError, match="hermitian=True"):
        tp.grad(lambda a: np.sum(np.linalg.svd(a @ a.T, hermitian=True)[1]))(a)
    # the singular values alone of a non-square full SVD have a derivative
    g = tp.grad(lambda a: np.sum(np.linalg.svd(a, compute_uv=False)))(a)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(g, u @ vh)


def test_svd_degenerate_singular_values():
    """Repeated singular values: the nuclear norm (a function of S alone) keeps its
    derivative U V^H."""
    a = np.diag([2.0, 2.0, 1.0])
    g = tp.grad(lambda a: np.sum(np.linalg.svd(a)[1]))(a)
    np.testing.assert_allclose(g, np.eye(3))


# ---------------------------------------------------------------- norm

VECTOR_ORDS = [None, 2, 1, 3, 0.5, -1, -2, np.inf, -np.inf, 0]
MATRIX_ORDS = [None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=str)
def test_vector_norms(ord):
    r = _rng(6)
    v = r.uniform(0.5, 2.0, 5) * np.where(r.random(5) < 0.5, -1, 1)
    v[1] = 3.0       # one clear extremum for the max / min norms
    v[2] = 0.1
    x = np.stack([v, v[::-1] * 0.9, 1.5 * v])

    def f(v, x):
        return np.linalg.norm(v, ord) ** 2 + \
            np.sum(np.linalg.norm(x, ord, axis=1) * np.arange(1.0, 4.0)) + \
            np.sum(np.linalg.norm(x.T, ord, axis=0, keepdims=True) * x.T)
    check_grads(f, (v, x), order=2, modes=("fwd", "rev"), seed=6)


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
def test_matrix_norms(ord):
    r = _rng(7)
    a = _well_conditioned(r, 4, 3) + 0.1 * r.standard_normal((4, 3))
    stack = np.stack([a, 1.3 * a[::-1]]).transpose(1, 0, 2)    # the matrices on axes 0, 2

    def f(a, stack):
        return np.linalg.norm(a, ord) ** 2 + np.linalg.norm(a.T, ord) + \
            np.sum(np.linalg.norm(stack, ord, axis=(2, 0)) * np.arange(1.0, 3.0)) + \
            np.sum(np.linalg.norm(stack, ord, axis=(0, 2), keepdims=True) * stack)
    check_grads(f, (a, stack), order=2, modes=("fwd", "rev"), seed=7)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 2, -2, 1, np.inf, 3, -np.inf],
                         ids=str)
def test_norms_complex(ord):
    r = _rng(8)
    z = _well_conditioned(r, 3, 3) * np.exp(0.4j) + 0.1j * r.standard_normal((3, 3))
    if isinstance(ord, str) or ord in (None, 2, -2, 1, np.inf):
        _complex_check(lambda z: np.linalg.norm(z, ord) ** 2, z, 8)
    _complex_check(lambda z: np.sum(np.linalg.norm(z, 2 if isinstance(ord, str) else ord,
                                                     axis=1)),
                   z, 9)


def test_norm_with_ord_known_only_at_run_time():
    x = _well_conditioned(_rng(9), 3, 4)
    for ord in MATRIX_ORDS:
        np.testing.assert_allclose(
            tp.grad(lambda x, o: np.linalg.norm(x, o), argnums=0)(x, ord),
            tp.grad(lambda x: np.linalg.norm(x, ord))(x), rtol=1e-12, atol=1e-12)


def test_norm_source_stays_plain_for_a_literal_ord():
    """With a literal ord the terms that do not apply fold away (no SVD for the 2-norm)."""
    src = tp.grad(lambda x: np.linalg.norm(x, axis=0)).source
    assert "svd" not in src and "norm_share" not in src, src
    assert "svd" in tp.grad(lambda x: np.linalg.norm(x, "nuc")).source


# ---------------------------------------------------------------- eig, eigvals

def _real_spectrum(r, n):
    return np.diag(np.arange(1.0, n + 1) * 1.5) + 0.2 * r.standard_normal((n, n))


def _complex_pair(r):
    """A real matrix with a pair of complex conjugate eigenvalues and a real one."""
    return np.array([[1.0, -2.0, 0.3], [2.0, 1.0, 0.1], [0.2, 0.4, 3.0]]) + \
        0.1 * r.standard_normal((3, 3))


def eig_loss(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.real(w) ** 2 + np.imag(w) ** 2 * 0.5) + \
        np.sum(np.abs(v) ** 4 * np.arange(1.0, 4.0)) + np.sum(np.real(v) * np.imag(v))


def eigvals_loss(a):
    w = np.linalg.eigvals(a)
    return np.sum(np.real(w) ** 3 + np.abs(w) ** 2)


@pytest.mark.parametrize("make", [_real_spectrum, _complex_pair], ids=["real", "pair"])
@pytest.mark.parametrize("f", [eig_loss, eigvals_loss])
def test_eig_real_input(f, make):
    r = _rng(10)
    a = make(r, 3) if make is _real_spectrum else make(r)
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), seed=10)


@pytest.mark.parametrize("f", [eig_loss, eigvals_loss])
def test_eig_complex_input(f):
    r = _rng(11)
    z = _real_spectrum(r, 3) + 0.3j * r.standard_normal((3, 3))
    _complex_check(f, z, 11)


def test_eig_vectors_follow_lapack_normalization():
    """numpy's eigenvectors have unit norm and a real largest component; their tangents
    keep both (what the derivative of numpy's function is)."""
    r = _rng(12)
    z = _real_spectrum(r, 3) + 0.3j * r.standard_normal((3, 3))
    dz = r.standard_normal((3, 3)) + 1j * r.standard_normal((3, 3))
    (w, v), (dw, dv) = tp.jvp(np.linalg.eig, (z,), (dz,))
    assert np.allclose(np.real(np.sum(np.conj(v) * dv, 0)), 0)
    k = np.argmax(np.abs(v), 0)
    assert np.allclose(np.imag(dv[k, range(3)]), 0)
    eps = 1e-7
    w2, v2 = np.linalg.eig(z + eps * dz)
    np.testing.assert_allclose((w2 - w) / eps, dw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose((v2 - v) / eps, dv, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- pinv, lstsq

@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_pinv(shape):
    r = _rng(13)
    a = _well_conditioned(r, *shape) + 0.1 * r.standard_normal(shape)

    def f(a):
        return np.sum(np.linalg.pinv(a) ** 2 * np.arange(1.0, 1.0 + shape[1])[:, None]) + \
            np.sum(np.linalg.pinv(a, 1e-10) * a.T)
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), seed=13)
    _complex_check(lambda z: np.sum(np.abs(np.linalg.pinv(z)) ** 2 *
                                    np.arange(1.0, 1.0 + shape[1])[:, None]),
                   a + 0.3j * r.standard_normal(shape), 13)


def test_pinv_hermitian_is_refused():
    a = np.eye(3) + 0.1 * np.ones((3, 3))
    with pytest.raises(TransformError, match="hermitian"):
        tp.grad(lambda a: np.sum(np.linalg.pinv(a, hermitian=True)))(a)


def test_pinv_of_a_rank_deficient_matrix():
    """At fixed rank the derivative of the pseudo-inverse exists (as in JAX): along
    directions that keep the rank it matches finite differences."""
    r = _rng(14)
    u, v = r.standard_normal((4, 2)), r.standard_normal((2, 3))
    du, dv = r.standard_normal((4, 2)), r.standard_normal((2, 3))

    def f(t):
        return np.sum(np.linalg.pinv((u + t * du) @ (v + t * dv)) ** 2)
    check_grads(f, (0.3,), order=2, modes=("fwd", "rev"), seed=14)


def lstsq_loss(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b)
    weights = np.arange(1.0, 1.0 + np.shape(x)[0]).reshape((-1,) + (1,) * (np.ndim(x) - 1))
    return np.sum(x ** 2 * weights) + \
        np.sum(res ** 1.5) + np.sum(s ** 3) + rank


@pytest.mark.parametrize("sa,sb", [((5, 3), (5,)), ((5, 3), (5, 2)), ((3, 3), (3, 2)),
                                   ((2, 4), (2,)), ((2, 4), (2, 3))])
def test_lstsq(sa, sb):
    r = _rng(15)
    check_grads(lstsq_loss, (_well_conditioned(r, *sa) + 0.1 * r.standard_normal(sa),
                             r.standard_normal(sb)), order=2, modes=("fwd", "rev"), seed=15)


def test_lstsq_complex():
    r = _rng(16)
    a = r.standard_normal((5, 3)) + 1j * r.standard_normal((5, 3))
    b = r.standard_normal(5) + 1j * r.standard_normal(5)

    def f(ax, ay, bx, by):
        x, res, rank, s = np.linalg.lstsq(ax + 1j * ay, bx + 1j * by, rcond=None)
        return np.sum(np.abs(x) ** 2 * np.arange(1.0, 4.0)) + np.sum(res) + np.sum(s)
    check_grads(f, (a.real, a.imag, b.real, b.imag), order=2, modes=("fwd", "rev"), seed=16)


# ---------------------------------------------------------------- qr

def qr_loss(a):
    q, r = np.linalg.qr(a)
    return np.sum(q * np.arange(1.0, 1.0 + np.shape(q)[1])) + \
        np.sum(r ** 2 * np.arange(1.0, 1.0 + np.shape(r)[1]))


def qr_r_loss(a):
    return np.sum(np.linalg.qr(a, mode="r") ** 3)


def qr_complete_loss(a):
    q, r = np.linalg.qr(a, mode="complete")
    return np.sum(q ** 3) + np.sum(np.sin(r))


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5)])
@pytest.mark.parametrize("f", [qr_loss, qr_r_loss, qr_complete_loss])
def test_qr(f, shape):
    if f is qr_complete_loss and shape[0] > shape[1]:
        pytest.skip("refused: see test_qr_refused_variants")
    r = _rng(17)
    a = _well_conditioned(r, *shape) + 0.1 * r.standard_normal(shape)
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), seed=17)
    if f is qr_loss:
        _complex_check(lambda z: np.sum(np.abs(np.linalg.qr(z)[0]) ** 3) +
                       np.real(np.sum(np.linalg.qr(z).R * np.conj(z[:min(shape)]))),
                       a + 0.3j * r.standard_normal(shape), 17)


def test_qr_refused_variants():
    a = np.arange(1.0, 7.0).reshape(3, 2) + np.eye(3, 2)
    with pytest.raises(TransformError, match="mode='complete'"):
        tp.grad(lambda a: np.sum(np.linalg.qr(a, mode="complete")[0]))(a)
    with pytest.raises(TransformError, match="raw"):
        tp.grad(lambda a: np.sum(np.linalg.qr(a, mode="raw")[0]))(a)


# ---------------------------------------------------------------- matrix_power, multi_dot

def test_matrix_power():
    r = _rng(18)

    def f(a):
        return np.sum(np.linalg.matrix_power(a, 3) * a) + np.sum(np.linalg.matrix_power(a, -2)) + \
            np.sum(np.linalg.matrix_power(a, 0) * a) + np.sum(np.linalg.matrix_power(a, 1) ** 2)
    a = np.eye(3) + 0.3 * r.standard_normal((3, 3))
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), seed=18)
    _complex_check(lambda z: np.real(np.sum(np.linalg.matrix_power(z, 3) * np.conj(z))),
                   a + 0.3j * r.standard_normal((3, 3)), 18)


def test_multi_dot():
    r = _rng(19)

    def f(a, b, c):
        return np.sum(np.sin(np.linalg.multi_dot([a, b, c])))

    def g(v, b, w):
        return np.sin(np.linalg.multi_dot([v, b, b.T, w]))
    abc = (r.standard_normal((2, 3)), r.standard_normal((3, 4)), r.standard_normal((4, 2)))
    check_grads(f, abc, order=2, modes=("fwd", "rev"), seed=19)
    check_grads(g, (r.standard_normal(3), r.standard_normal((3, 4)), r.standard_normal(3)),
                order=2, modes=("fwd", "rev"), seed=19)
    z = r.standard_normal((3, 3)) + 1j * r.standard_normal((3, 3))
    _complex_check(lambda z: np.real(np.sum(np.linalg.multi_dot([z, np.conj(z).T, z]) ** 2)),
                   z, 19)
    with pytest.raises(TransformError, match="third derivative of np.linalg.multi_dot"):
        check_grads(f, abc, order=3, modes=("rev",), seed=19)


# ---------------------------------------------------------------- vmap

def _v_eigh(a):
    w, v = np.linalg.eigh(a + np.swapaxes(a, -1, -2))
    return w + np.sum(v ** 4, axis=-2)


def _v_eigvalsh(a):
    return np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2))


def _v_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return (u * np.tanh(s)[..., None, :]) @ vh + s[..., :1, None]


def _v_svals(a):
    return np.linalg.svd(a, compute_uv=False)


def _v_norms(x):
    return np.stack([np.linalg.norm(x, o) for o in MATRIX_ORDS])


def _v_vector_norms(x):
    return np.stack([np.linalg.norm(x, o, axis=-1) for o in VECTOR_ORDS if o != 0])


def _v_eigh_shared(a, b):
    """Only the shift `b` is batched: a shared matrix with a batched diagonal shift."""
    return np.linalg.eigvalsh(a + a.T + b * np.eye(3)) + np.linalg.norm(a * b, 2)


def _v_eig(a):
    w, v = np.linalg.eig(a)
    return np.real(w) + np.sum(np.abs(v) ** 4, axis=-2) + np.abs(np.linalg.eigvals(a))


def _v_pinv(a):
    return np.linalg.pinv(a)


def _v_matrix_power(a):
    return np.linalg.matrix_power(a, 3) + np.linalg.matrix_power(a, -1)


def _v_qr(a):
    q, r = np.linalg.qr(a)
    return np.concatenate([np.sum(q ** 3, -1), np.sum(r, -1), np.linalg.qr(a, "r")[..., 0]], -1)


VMAP_CASES = [
    (_v_eigh, lambda r: (_separated(r, 3) + 0.05 * r.standard_normal((3, 3)),)),
    (_v_eigh, lambda r: (np.stack([_separated(r, 3), 2 * _separated(r, 3)]),)),
    (_v_eigvalsh, lambda r: (_separated(r, 3),)),
    (_v_svd, lambda r: (_well_conditioned(r, 4, 3),)),
    (_v_svd, lambda r: (_well_conditioned(r, 2, 3),)),
    (_v_svals, lambda r: (_well_conditioned(r, 3, 4),)),
    (_v_norms, lambda r: (_well_conditioned(r, 3, 4) + 0.1 * r.standard_normal((3, 4)),)),
    (_v_vector_norms, lambda r: (r.uniform(0.5, 2.0, (2, 4)) * np.arange(1.0, 5.0),)),
    (_v_eig, lambda r: (_real_spectrum(r, 3),)),
    (_v_pinv, lambda r: (_well_conditioned(r, 4, 3),)),
    (_v_pinv, lambda r: (_well_conditioned(r, 2, 3),)),
    (_v_matrix_power, lambda r: (np.eye(3) + 0.3 * r.standard_normal((3, 3)),)),
    (_v_qr, lambda r: (_well_conditioned(r, 4, 3),)),
    (_v_qr, lambda r: (_well_conditioned(r, 3, 4),)),
]


@pytest.mark.parametrize("k", range(len(VMAP_CASES)),
                         ids=[f.__name__ for f, _ in VMAP_CASES])
def test_vmap_against_loops(k):
    f, make = VMAP_CASES[k]
    r = _rng(20 + k)
    examples = [make(r) for _ in range(3)]
    stacked = np.stack([e[0] for e in examples])
    _check_compositions(f, (stacked,), (0,), f"{f.__name__} axis 0")
    moved = np.moveaxis(stacked, 0, -1)      # the batch on the last axis
    _close(tp.vmap(f, in_axes=-1)(moved), _loop(f, (moved,), (-1,)), f"{f.__name__} axis -1")
    g = tp.grad(lambda a: np.sum(np.sin(f(a))))
    _close(tp.vmap(g, in_axes=-1)(moved), _loop(g, (moved,), (-1,)),
           f"vmap(grad) {f.__name__} axis -1")


def test_vmap_of_one_batched_argument():
    r = _rng(40)
    a, b = r.standard_normal((3, 3)), r.uniform(0.5, 1.5, 3)
    _check_compositions(_v_eigh_shared, (a, b), (None, 0), "eigh shared matrix")
    _check_compositions(_v_eigh_shared, (np.stack([a, a.T, 2 * a]), b), (0, 0),
                        "eigh both batched")


def _v_lstsq(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b)
    return np.concatenate([x, res, s])


@pytest.mark.parametrize("axes", [(0, 0), (None, 0), (0, None), (2, -1)])
def test_vmap_lstsq(axes):
    """numpy's lstsq takes one matrix: vmap loops over the examples. vmap of its gradient
    batches the gradient's code; grad of vmap is refused (no rule for the loop yet)."""
    r = _rng(42)
    a = np.stack([_well_conditioned(r, 5, 3) for _ in range(3)])
    b = r.standard_normal((3, 5))
    args = (a if axes[0] is not None else a[0], b if axes[1] is not None else b[0])
    args = tuple(x if ax is None else np.moveaxis(x, 0, ax) for x, ax in zip(args, axes))
    _close(tp.vmap(_v_lstsq, in_axes=axes)(*args), _loop(_v_lstsq, args, axes), "lstsq")
    g = tp.grad(lambda a, b: np.sum(np.sin(_v_lstsq(a, b))), argnums=(0, 1))
    _close(tp.vmap(g, in_axes=axes)(*args), _loop(g, args, axes), "vmap(grad) lstsq")
    with pytest.raises(TransformError, match="lstsq under vmap"):
        out, back = tp.vjp(tp.vmap(_v_lstsq, in_axes=axes), *args)
        back(np.ones_like(out))


def test_vmap_multi_dot():
    r = _rng(43)
    a, b, c = r.standard_normal((3, 2, 3)), r.standard_normal((3, 3, 4)), r.standard_normal(4)

    def f(a, b, c):
        return np.linalg.multi_dot([a, b, c])
    _check_compositions(f, (a, b, c), (0, 0, None), "multi_dot")
    _check_compositions(f, (a[0], b, c), (None, 0, None), "multi_dot one batched")
    h = tp.hessian(lambda a, b, c: np.sum(np.sin(np.linalg.multi_dot([a, b, c]))))
    _close(tp.vmap(h, in_axes=(0, None, None))(a, b[0], c), _loop(h, (a, b[0], c),
                                                                   (0, None, None)),
           "vmap(hessian) multi_dot")


def test_jit_matches_plain_calls():
    r = _rng(41)
    a = _well_conditioned(r, 4, 3)
    for f in (_v_svd, _v_svals, _v_norms):
        np.testing.assert_allclose(tp.jit(f)(a), f(a), rtol=1e-12, atol=1e-12)
    s = _separated(r, 3)
    np.testing.assert_allclose(tp.jit(_v_eigh)(s), _v_eigh(s), rtol=1e-12, atol=1e-12)
    g = tp.jit(tp.grad(lambda a: np.sum(_v_svd(a) ** 2)))
    np.testing.assert_allclose(g(a), tp.grad(lambda a: np.sum(_v_svd(a) ** 2))(a),
                               rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- a factorization's unused
# output in Hessians: the tangent of eigh's adjoint held zeros for the unused eigenvectors
# made unbatched, which rt.filled's batching rule took for batched (it tested a container's
# flag, not each leaf's): jacrev and hessian stopped with shape errors (eigh or eig with
# only w used, svd with only s, qr's r alone under jacrev, lstsq unpacked)

def _eigenvalues_only(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w ** 3)


def _singular_values_only(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(s ** 3)


def _r_of_qr(a):
    q, r = np.linalg.qr(a)
    return r


def _lstsq_unpacked(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=None)
    return np.sum(x ** 3) + np.sum(residuals ** 2)


def test_hessians_through_a_factorization_with_an_output_unused():
    r = np.random.default_rng([SEED, 21])
    a = r.normal(size=(3, 3))
    s = a + a.T
    for f, x in ((_eigenvalues_only, s), (_singular_values_only, a)):
        _close(tp.hessian(f)(x), tp.jacrev(tp.jacfwd(f))(x), f.__name__)
        grad = tp.grad(f)
        h = 1e-6
        for i, j in ((0, 0), (1, 2)):
            e = np.zeros((3, 3))
            e[i, j] = 1.0
            e = e + e.T if f is _eigenvalues_only else e
            np.testing.assert_allclose(np.sum(tp.hessian(f)(x) * e, axis=(2, 3)),
                                       (grad(x + h * e) - grad(x - h * e)) / (2 * h),
                                       rtol=1e-5, atol=1e-7)
    _close(tp.jacrev(_r_of_qr)(a), tp.jacfwd(_r_of_qr)(a), "qr")
    tall, rhs = r.normal(size=(5, 3)), r.normal(size=(5, 2))
    _close(tp.hessian(_lstsq_unpacked)(tall, rhs),
           tp.jacrev(tp.jacfwd(_lstsq_unpacked))(tall, rhs), "lstsq")


def _pinv_truncated(a):
    return np.sum(np.sin(np.linalg.pinv(a, rcond=0.3)))


def _lstsq_truncated(a, b):
    return np.sum(np.linalg.lstsq(a, b, rcond=0.3)[0] ** 3)


def test_a_cutoff_dropping_a_singular_value_that_is_not_zero_is_refused():
    """The rules hold the rank fixed: the derivative where the dropped singular values are
    zero, 3e-3 off here (a dropped 0.1); JAX's pinv gives the same wrong numbers."""
    r = np.random.default_rng([SEED, 22])
    a = np.diag([3.0, 1.0, 0.1]) + 0.01 * r.normal(size=(3, 3))
    for call in (lambda: tp.grad(_pinv_truncated)(a),
                 lambda: tp.jvp(_pinv_truncated, (a,), (a,)),
                 lambda: tp.grad(_lstsq_truncated)(a, a[0])):
        with pytest.raises(TransformError, match="drops a singular value that is not zero"):
            call()
    # a rank-deficient matrix (the dropped value zero) keeps its derivative, along the
    # directions that keep the rank (finite differences in others cross the cutoff)
    left, right, move = r.normal(size=(4, 2)), r.normal(size=(2, 3)), r.normal(size=(4, 2))

    def f(a):
        return np.sum(np.sin(np.linalg.pinv(a, rcond=1e-10)))

    h = 1e-6
    fd = (f((left + h * move) @ right) - f((left - h * move) @ right)) / (2 * h)
    assert tp.jvp(f, (left @ right,), (move @ right,))[1] == pytest.approx(fd, rel=1e-6)
    assert np.sum(tp.grad(f)(left @ right) * (move @ right)) == pytest.approx(fd, rel=1e-6)


def _det(a):
    return np.linalg.det(a)


def _det_hessian_by_minors(a):
    """det is affine in each entry, so d2 det / da_ij da_kl is exactly the mixed difference
    det(a + E_ij + E_kl) - det(a + E_ij) - det(a + E_kl) + det(a) (0 for i == k or j == l)."""
    n = a.shape[-1]
    unit = np.eye(n * n).reshape(n, n, n, n)
    d = np.linalg.det
    out = np.zeros((n, n, n, n))
    for i, j, k, m in np.ndindex(n, n, n, n):
        if i != k and j != m:
            out[i, j, k, m] = (d(a + unit[i, j] + unit[k, m]) - d(a + unit[i, j])
                               - d(a + unit[k, m]) + d(a))
    return out


@pytest.mark.parametrize("tiny", [1e-3, 1e-14, 0.0])
def test_det_derivatives_at_and_near_singular_matrices(tiny):
    """det's gradient is the cofactor matrix and its Hessian a polynomial too: the formulas on
    inv(a) cancelled terms of size 1/det (the Hessian was off by 1.0 in entries of size 1.6 at
    a rank-2 3 x 3 matrix) and raised LinAlgError at an exactly singular one."""
    rng = _rng(31)
    a = rng.normal(size=(3, 2)) @ rng.normal(size=(2, 3)) + tiny * rng.normal(size=(3, 3))
    expected = _det_hessian_by_minors(a)
    scale = np.abs(expected).max()
    for hess in (tp.hessian(_det), tp.jacrev(tp.jacrev(_det)), tp.jacfwd(tp.grad(_det)),
                 tp.jit(tp.hessian(_det))):
        np.testing.assert_allclose(hess(a), expected, atol=1e-12 * scale)
    stack = np.stack([a, rng.normal(size=(3, 3)), np.outer([1.0, 2, 3], [2.0, 1, 1])])
    np.testing.assert_allclose(tp.vmap(tp.hessian(_det))(stack),
                               [_det_hessian_by_minors(m) for m in stack], atol=1e-12 * scale)
    exactly = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(tp.grad(_det)(exactly), [[4.0, -2.0], [-2.0, 1.0]])
    np.testing.assert_allclose(tp.hessian(_det)(exactly), _det_hessian_by_minors(exactly),
                               atol=1e-14)


def test_det_hessian_complex_and_third_order_refused():
    rng = _rng(32)
    z = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    w = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    hess = tp.hessian(_det, holomorphic=True)(z)
    grad = tp.grad(_det, holomorphic=True)
    eps = 1e-6
    np.testing.assert_allclose(np.einsum("ijkl,kl->ij", hess, w),
                               (grad(z + eps * w) - grad(z - eps * w)) / (2 * eps), atol=1e-8)
    m = rng.normal(size=(3, 3))

    def scaled(x):
        return np.linalg.det(x * m)

    np.testing.assert_allclose(tp.grad(tp.grad(scaled))(1.3), 6 * 1.3 * np.linalg.det(m))
    with pytest.raises(TransformError, match="beyond its second derivative"):
        tp.grad(tp.grad(tp.grad(scaled)))(1.3)
