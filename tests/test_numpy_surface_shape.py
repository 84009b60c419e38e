"""np.kron, np.cross, np.take, np.take_along_axis, np.append, np.column_stack, np.row_stack,
np.dsplit, np.partition, np.rollaxis, np.rot90, np.select, np.meshgrid, np.convolve,
np.correlate, np.vander, np.r_ and np.c_ under every transformation.

Each case is checked to second order in both modes against finite differences (fresh random
inputs: the seed changes per run and is printed on failure, TP_SEED replays it), under vmap
against a loop (a random subset of the arguments mapped along random axes, the rest shared),
and vmap(grad) against a loop of grad (test_vmap_rules.run_case). Complex inputs follow JAX's
convention (the gradient of a real function of z = x + iy is df/dx - i df/dy); numpy's
correlate conjugates its second argument, which its rule must follow.
"""
import zlib

import numpy as np
import pytest

import transpile as tp
from runtime.errors import TransformError
from transpile.test_util import check_grads

import test_primitives as P
from test_vmap_rules import run_case

SEED = P.SEED

# numpy 2 deprecates 2-vectors in np.cross and np.row_stack; both still work and are tested
pytestmark = [pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors"),
              pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated"),
              pytest.mark.filterwarnings("ignore:the matrix subclass")]


def N(r, *shape):
    return r.standard_normal(shape)


def C(r, *shape):
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


def distinct(r, *shape):
    """Values at least 0.1 apart (partition is not differentiable at ties)."""
    n = int(np.prod(shape))
    return (r.permutation(n) * 0.3 + r.uniform(0, 0.1, n)).reshape(shape)


# ---------------------------------------------------------------- the functions, as cases
# (function, input maker, id); functions are defined in this file so transpile reads them

def kron(a, b):
    return np.kron(a, b)


def cross(a, b):
    return np.cross(a, b)


def cross_axes(a, b):
    return np.cross(a, b, axisa=0, axisb=1, axisc=0)


def cross_axis(a, b):
    return np.cross(a, b, axis=0)


def cross_2d(a, b):
    return np.cross(a, b)


def take(a):
    return np.take(a, [0, 2, 2, -1], axis=1)


def take_flat(a):
    return np.take(a, np.array([[0, 5], [7, 7], [-2, 3]]))


def take_wrap(a):
    return np.take(a, [0, 5, -7, 4], axis=0, mode="wrap")


def take_clip(a):
    return np.take(a, [-1, 5, 1], axis=-1, mode="clip")


def take_scalar(a):
    return np.take(a, 1, axis=0)


def take_along(a):
    return np.take_along_axis(a, np.array([[0, 2, 2, 1], [1, 1, 0, 2]]).T, axis=0)


def take_along_broadcast(a):
    return np.take_along_axis(a, np.array([[3, 0, 0]]), axis=1)


def take_along_flat(a):
    return np.take_along_axis(a, np.array([5, 0, 0, 11, 3]), axis=None)


def append(a, b):
    return np.append(a, b)


def append_axis(a, b):
    return np.append(a, b, axis=0)


def column_stack(a, b):
    return np.column_stack((a, b, a))


def row_stack(a, b):
    return np.row_stack([a, b])


def dsplit(a):
    parts = np.dsplit(a, [1, 3])
    return parts[0] * parts[2][:, :, :1] + np.sum(parts[1] ** 2)


def partition(a):
    return np.partition(a, 2, axis=0) * np.arange(1.0, 5.0)


def partition_flat(a):
    return np.partition(a, [1, 4], axis=None) * np.arange(1.0, 13.0)


def rollaxis(a):
    return np.rollaxis(a, 2, 0)


def rollaxis_back(a):
    return np.rollaxis(a, 0, 3) * np.arange(1.0, 4.0)


def rollaxis_neg(a):
    return np.rollaxis(a, -1, 1)


def rot90(a):
    return np.rot90(a) * np.arange(1.0, 4.0)


def rot90_axes(a):
    return np.rot90(a, 3, (1, 2)) * np.arange(1.0, 3.0)


def rot90_neg(a):
    return np.rot90(a, -1, (-1, 0))


def rot90_half(a):
    return np.rot90(a, 2) * np.arange(1.0, 5.0)


def select(x, y):
    return np.select([x > 0, y > 0.5], [x * y, y ** 2], x)


def select_default(x, y):
    return np.select([x > 0.3, x < -0.3], [np.sin(x), y])


def meshgrid(x, y):
    gx, gy = np.meshgrid(x, y)
    return gx * gy + gx


def meshgrid_ij(x, y, z):
    gx, gy, gz = np.meshgrid(x, y, z, indexing="ij")
    return gx * gy - gz * gy


def meshgrid_sparse(x, y):
    gx, gy = np.meshgrid(x, y, sparse=True, copy=False)
    return gx * gy


def convolve(a, v):
    return np.convolve(a, v)


def convolve_same(a, v):
    return np.convolve(a, v, "same")


def convolve_valid(a, v):
    return np.convolve(a, v, mode="valid")


def convolve_number(s, v):
    return np.convolve(s, v, "same") * np.convolve(v, s)


def correlate(a, v):
    return np.correlate(a, v)


def correlate_same(a, v):
    return np.correlate(a, v, "same")


def correlate_full(a, v):
    return np.correlate(a, v, mode="full")


def vander(x):
    return np.vander(x)


def vander_n(x):
    return np.vander(x, 5, increasing=True)


def r_items(x, y):
    return np.r_[x, 0.5, y, 1:3]


def r_slice(x):
    return np.r_[0:3] * x + np.r_[x, x][1:4]


def r_directive(x, y):
    return np.r_["0,2", x, y]


def r_last_axis(a, b):
    return np.r_["-1", a, b]


def c_columns(x, y):
    return np.c_[x, y]


def c_matrix(a, x):
    return np.c_[a, x, a]


CASES = [
    (kron, lambda r: (N(r, 2, 3), N(r, 3, 2)), "kron"),
    (kron, lambda r: (N(r, 3), N(r, 2, 2)), "kron-ranks"),
    (cross, lambda r: (N(r, 4, 3), N(r, 3)), "cross-broadcast"),
    (cross_axes, lambda r: (N(r, 3, 4), N(r, 4, 3)), "cross-axes"),
    (cross_axis, lambda r: (N(r, 3, 2), N(r, 3, 2)), "cross-axis"),
    (cross_2d, lambda r: (N(r, 4, 2), N(r, 2)), "cross-2d"),
    (cross_2d, lambda r: (N(r, 4, 2), N(r, 4, 3)), "cross-2d-3d"),
    (take, lambda r: (N(r, 3, 4),), "take"),
    (take_flat, lambda r: (N(r, 3, 4),), "take-flat"),
    (take_wrap, lambda r: (N(r, 3, 2),), "take-wrap"),
    (take_clip, lambda r: (N(r, 2, 3),), "take-clip"),
    (take_scalar, lambda r: (N(r, 3, 2),), "take-scalar"),
    (take_along, lambda r: (N(r, 3, 2),), "take-along"),
    (take_along_broadcast, lambda r: (N(r, 3, 4),), "take-along-broadcast"),
    (take_along_flat, lambda r: (N(r, 3, 4),), "take-along-flat"),
    (append, lambda r: (N(r, 2, 3), N(r, 4)), "append"),
    (append_axis, lambda r: (N(r, 2, 3), N(r, 1, 3)), "append-axis"),
    (column_stack, lambda r: (N(r, 3), N(r, 3, 2)), "column-stack"),
    (row_stack, lambda r: (N(r, 3), N(r, 2, 3)), "row-stack"),
    (dsplit, lambda r: (N(r, 2, 2, 4),), "dsplit"),
    (partition, lambda r: (distinct(r, 5, 4),), "partition"),
    (partition_flat, lambda r: (distinct(r, 3, 4),), "partition-flat"),
    (rollaxis, lambda r: (N(r, 3, 4, 2),), "rollaxis"),
    (rollaxis_back, lambda r: (N(r, 3, 4, 2),), "rollaxis-back"),
    (rollaxis_neg, lambda r: (N(r, 3, 4, 2),), "rollaxis-neg"),
    (rot90, lambda r: (N(r, 3, 3),), "rot90"),
    (rot90_axes, lambda r: (N(r, 3, 2, 2),), "rot90-axes"),
    (rot90_neg, lambda r: (N(r, 3, 4),), "rot90-neg"),
    (rot90_half, lambda r: (N(r, 2, 4),), "rot90-half"),
    (select, lambda r: (N(r, 4, 3), N(r, 3)), "select"),
    (select_default, lambda r: (N(r, 4, 3), N(r, 4, 1)), "select-default"),
    (meshgrid, lambda r: (N(r, 3), N(r, 4)), "meshgrid"),
    (meshgrid_ij, lambda r: (N(r, 2), N(r, 3), N(r, 2)), "meshgrid-ij"),
    (meshgrid_sparse, lambda r: (N(r, 3), N(r, 2)), "meshgrid-sparse"),
    (convolve, lambda r: (N(r, 4), N(r, 3)), "convolve"),
    (convolve_same, lambda r: (N(r, 2), N(r, 5)), "convolve-same-short"),
    (convolve_same, lambda r: (N(r, 6), N(r, 3)), "convolve-same"),
    (convolve_valid, lambda r: (N(r, 3), N(r, 5)), "convolve-valid"),
    (convolve_number, lambda r: (N(r), N(r, 4)), "convolve-number"),
    (correlate, lambda r: (N(r, 5), N(r, 3)), "correlate"),
    (correlate_same, lambda r: (N(r, 4), N(r, 5)), "correlate-same-short"),
    (correlate_same, lambda r: (N(r, 5), N(r, 2)), "correlate-same"),
    (correlate_full, lambda r: (N(r, 3), N(r, 4)), "correlate-full"),
    (vander, lambda r: (N(r, 4),), "vander"),
    (vander_n, lambda r: (np.r_[N(r, 3), 0.0],), "vander-n-at-zero"),
    (r_items, lambda r: (N(r, 3), N(r, 2)), "r-items"),
    (r_slice, lambda r: (N(r, 3),), "r-slice"),
    (r_directive, lambda r: (N(r, 3), N(r, 3)), "r-directive"),
    (r_last_axis, lambda r: (N(r, 2, 3), N(r, 2, 1)), "r-last-axis"),
    (c_columns, lambda r: (N(r, 3), N(r, 3)), "c-columns"),
    (c_matrix, lambda r: (N(r, 3, 2), N(r, 3)), "c-matrix"),
]
IDS = [c[2] for c in CASES]


def _rng(case_id, salt=0):
    return np.random.default_rng([SEED, zlib.crc32(case_id.encode()), salt])


def _replayed(check):
    try:
        check()
    except AssertionError as e:
        raise AssertionError(f"{e}\n  (replay with TP_SEED={SEED})") from None


@pytest.mark.parametrize("f,make,case_id", CASES, ids=IDS)
def test_derivatives_to_second_order(f, make, case_id):
    r = _rng(case_id)
    args = make(r)
    _replayed(lambda: check_grads(f, args, order=2, modes=("fwd", "rev"),
                                  seed=int(r.integers(1 << 31))))


@pytest.mark.parametrize("f,make,case_id", CASES, ids=IDS)
def test_vmap_and_per_example_gradients(f, make, case_id):
    run_case(f, make, case_id)


# ---------------------------------------------------------------- complex inputs

def _loss(F, c, n):
    """A real scalar of F's complex result, weighted so every part counts."""
    if n == 1:
        def loss(a):
            return np.sum(np.real(F(a) * c))
    else:
        def loss(a, b):
            return np.sum(np.real(F(a, b) * c))
    return loss


def _check_complex(F, args, r, tol=1e-6):
    """grad of a real loss of F against df/dx - i df/dy by central differences, and jvp of F
    along complex directions against differences of F."""
    c = C(r, *np.shape(F(*args)))
    loss = _loss(F, c, len(args))
    grads = tp.grad(loss, argnums=tuple(range(len(args))))(*args)
    eps = 1e-6
    for k, a in enumerate(args):
        for part in (1.0, 1j):
            t = N(r, *np.shape(a)) * part
            plus = loss(*args[:k], a + eps * t, *args[k + 1:])
            minus = loss(*args[:k], a - eps * t, *args[k + 1:])
            numeric = (plus - minus) / (2 * eps)
            analytic = np.sum(np.real(grads[k]) * np.real(t) - np.imag(grads[k]) * np.imag(t))
            assert np.isclose(analytic, numeric, rtol=tol, atol=tol), \
                f"{F.__name__}: gradient of argument {k} along {part}: {analytic} vs {numeric}"
    tangents = tuple(C(r, *np.shape(a)) for a in args)
    _, got = tp.jvp(F, args, tangents)
    want = (F(*[a + eps * t for a, t in zip(args, tangents)]) -
            F(*[a - eps * t for a, t in zip(args, tangents)])) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=F.__name__)


COMPLEX_CASES = [
    (kron, lambda r: (C(r, 2, 3), C(r, 2))),
    (convolve, lambda r: (C(r, 4), C(r, 3))),
    (convolve_same, lambda r: (C(r, 2), C(r, 5))),
    (convolve_valid, lambda r: (C(r, 5), C(r, 3))),
    (correlate, lambda r: (C(r, 5), C(r, 3))),
    (correlate_same, lambda r: (C(r, 4), C(r, 5))),
    (correlate_full, lambda r: (C(r, 3), C(r, 4))),
    (cross, lambda r: (C(r, 4, 3), C(r, 3))),
    (take, lambda r: (C(r, 3, 4),)),
    (vander_n, lambda r: (C(r, 3),)),
    (meshgrid, lambda r: (C(r, 3), C(r, 2))),
]


@pytest.mark.parametrize("F,make", COMPLEX_CASES, ids=[c[0].__name__ + str(i) for i, c in
                                                      enumerate(COMPLEX_CASES)])
def test_complex_inputs(F, make):
    r = _rng(F.__name__, 1)
    _replayed(lambda: _check_complex(F, make(r), r))


def correlate_real_parts(ar, ai, vr, vi):
    """A real function of real arguments through np.correlate of complex arrays: checked to
    second order, it checks the conjugation of the second argument in both modes."""
    out = np.correlate(ar + 1j * ai, vr + 1j * vi, "same")
    return np.sum(np.real(out) * np.arange(1.0, 5.0) + np.imag(out) ** 2)


def kron_convolve_real_parts(ar, ai, br, bi):
    z = np.kron(ar + 1j * ai, br - 1j * bi)
    w = np.convolve(z, br + 1j * bi, "valid")
    return np.sum(np.abs(w) ** 2) + np.sum(np.imag(z))


def test_complex_intermediates_to_second_order():
    r = _rng("complex-second-order")
    _replayed(lambda: check_grads(correlate_real_parts, (N(r, 4), N(r, 4), N(r, 3), N(r, 3)),
                                  order=2, modes=("fwd", "rev"),
                                  seed=int(r.integers(1 << 31))))
    _replayed(lambda: check_grads(kron_convolve_real_parts, (N(r, 3), N(r, 3), N(r, 2),
                                                             N(r, 2)),
                                  order=2, modes=("fwd", "rev"),
                                  seed=int(r.integers(1 << 31))))


def test_correlate_conjugates_its_second_argument():
    """d/dv of real(correlate(a, v)) is conj-free in a but conjugates v: the gradient with
    respect to v of sum(real(correlate(a, v))) is sum_k conj(a)[...] (by hand)."""
    r = _rng("correlate-conj")
    a, v = C(r, 5), C(r, 5)

    def loss(v):
        return np.sum(np.real(np.correlate(a, v, "full")))
    got = tp.grad(loss)(v)
    # real(sum_k a[n+k] conj(v[n])) summed over k: real(sum(a) * conj(v[n])) for every n
    # = Re(S) Re(v) + Im(S) Im(v), S = sum(a): df/dx - i df/dy = Re(S) - i Im(S) = conj(S)
    np.testing.assert_allclose(got, np.full(5, np.conj(np.sum(a))), rtol=1e-12)


# ---------------------------------------------------------------- vmap: nested, axes, jit

def _summed(f, n):
    """sum(sin(f(...))): a scalar function of f's arguments."""
    if n == 1:
        def loss(a):
            return np.sum(np.sin(f(a)))
    else:
        def loss(a, b):
            return np.sum(np.sin(f(a, b)))
    return loss


def _loop(f, args, axes):
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)])
            for i in range(n)]
    return np.stack([np.asarray(o) for o in outs])


NESTED = [
    (kron, lambda r: (N(r, 2, 3, 2, 2), N(r, 2))),
    (cross, lambda r: (N(r, 2, 3, 4, 3), N(r, 3))),
    (take_flat, lambda r: (N(r, 2, 3, 3, 4),)),
    (take_along, lambda r: (N(r, 2, 3, 3, 2),)),
    (select, lambda r: (N(r, 2, 3, 4, 3), N(r, 3))),
    (meshgrid, lambda r: (N(r, 2, 3, 3), N(r, 4))),
    (convolve_same, lambda r: (N(r, 2, 3, 2), N(r, 5))),
    (correlate_same, lambda r: (N(r, 2, 3, 4), N(r, 5))),
    (r_items, lambda r: (N(r, 2, 3, 3), N(r, 2))),
    (c_matrix, lambda r: (N(r, 2, 3, 3, 2), N(r, 3))),
    (column_stack, lambda r: (N(r, 2, 3, 3), N(r, 3, 2))),
    (partition, lambda r: (distinct(r, 2, 3, 5, 4),)),
    (vander_n, lambda r: (N(r, 2, 3, 3),)),
]


@pytest.mark.parametrize("f,make", NESTED, ids=[c[0].__name__ for c in NESTED])
def test_vmap_of_vmap_and_its_gradients(f, make):
    """The first argument batched twice (axes 0 and 1), the others shared; then per-example
    gradients of the same under both vmaps."""
    r = _rng(f.__name__, 2)
    args = make(r)
    rest = (None,) * (len(args) - 1)
    inner = tp.vmap(f, in_axes=(0,) + rest)
    got = tp.vmap(inner, in_axes=(1,) + rest)(*args)
    want = np.stack([np.stack([np.asarray(f(args[0][i, j], *args[1:])) for i in range(2)])
                     for j in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)

    grad = tp.grad(_summed(f, len(args)))
    got = tp.vmap(tp.vmap(grad, in_axes=(0,) + rest), in_axes=(1,) + rest)(*args)
    want = np.stack([np.stack([grad(args[0][i, j], *args[1:]) for i in range(2)])
                     for j in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _tangent_map(f, n):
    """(args, tangents) -> the tangent of f: its forward rules, to batch."""
    if n == 1:
        def tangent(a, ta):
            return tp.jvp(f, (a,), (ta,))[1]
    else:
        def tangent(a, b, ta, tb):
            return tp.jvp(f, (a, b), (ta, tb))[1]
    return tangent


@pytest.mark.parametrize("f,make,case_id", CASES, ids=IDS)
def test_vmap_of_forward_mode(f, make, case_id):
    """Batched tangents (the forward rules' helpers under vmap), the primal shared or not."""
    r = _rng(case_id, 3)
    args = make(r)
    if len(args) > 2 or not isinstance(f(*args), np.ndarray):
        pytest.skip("one or two arguments, one array result")
    tangent = _tangent_map(f, len(args))
    tans = [N(r, 3, *np.shape(a)) for a in args]
    for shared in (True, False):
        prim = args if shared else tuple(np.stack([a, a + 0.01 * N(r, *np.shape(a)), a])
                                         for a in args)
        axes = (None if shared else 0,) * len(args) + (0,) * len(args)
        got = tp.vmap(tangent, in_axes=axes)(*prim, *tans)
        np.testing.assert_allclose(got, _loop(tangent, (*prim, *tans), axes), rtol=1e-10,
                                   atol=1e-12)


def take_batched_indices(a, idx):
    return np.take(a, idx, axis=1)


def take_along_batched(a, idx):
    return np.take_along_axis(a, idx, axis=0)


def test_indices_that_differ_between_examples():
    """np.take and np.take_along_axis with per-example indices (batched on a non-leading
    axis), with and without the array batched; per-example gradients too."""
    r = _rng("batched-indices")
    a = N(r, 3, 4)
    a_b = N(r, 3, 4, 5)
    idx = r.integers(-4, 4, size=(2, 5))
    for args, axes in (((a, idx), (None, 1)), ((a_b, idx), (2, 1))):
        got = tp.vmap(take_batched_indices, in_axes=axes)(*args)
        np.testing.assert_allclose(got, _loop(take_batched_indices, args, axes))
        g = tp.grad(lambda x, i: np.sum(np.sin(take_batched_indices(x, i))))
        got = tp.vmap(g, in_axes=axes)(*args)
        np.testing.assert_allclose(got, _loop(g, args, axes), rtol=1e-12)
    idx = r.integers(0, 3, size=(4, 2, 5))
    for args, axes in (((N(r, 3, 2), idx), (None, 2)), ((N(r, 3, 5, 2), idx), (1, 2))):
        got = tp.vmap(take_along_batched, in_axes=axes)(*args)
        np.testing.assert_allclose(got, _loop(take_along_batched, args, axes))


def test_jit_matches_the_plain_call():
    r = _rng("jit")
    for f, args in ((kron, (N(r, 2, 3), N(r, 3, 2))), (take_flat, (N(r, 3, 4),)),
                    (select, (N(r, 4, 3), N(r, 3))), (convolve_same, (N(r, 6), N(r, 3))),
                    (r_items, (N(r, 3), N(r, 2))), (rot90_axes, (N(r, 3, 2, 2),))):
        np.testing.assert_allclose(tp.jit(f)(*args), f(*args), rtol=1e-12)
        loss = tp.grad(_summed(f, len(args)))
        np.testing.assert_allclose(tp.jit(loss)(*args), loss(*args), rtol=1e-12)


# ---------------------------------------------------------------- edges

def test_partition_with_ties_gives_each_value_its_own_weight():
    """Equal values may trade places: the gradient must still give each output weight to an
    input holding that value, once, in both modes."""
    x = np.array([3.0, 1.0, 2.0, 1.0, 3.0, 2.0, 1.0])
    w = np.arange(1.0, 8.0)

    def f(x):
        return np.sum(np.partition(x, 3) * w)
    g = tp.grad(f)(x)
    part = np.partition(x, 3)
    for v in np.unique(x):
        assert sorted(g[x == v]) == sorted(w[part == v])
    jac_fwd = np.stack([tp.jvp(f, (x,), (e,))[1] for e in np.eye(7)])
    np.testing.assert_allclose(jac_fwd, g)


def test_cross_of_2_vectors_is_the_third_component():
    r = _rng("cross-2d")
    a, b = N(r, 5, 2), N(r, 5, 2)
    out, tangent = tp.jvp(cross_2d, (a, b), (np.ones_like(a), np.zeros_like(b)))
    np.testing.assert_allclose(out, a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])
    np.testing.assert_allclose(tangent, b[:, 1] - b[:, 0])


def test_rollaxis_matches_numpy_for_every_axis_and_start():
    x = np.arange(24.0).reshape(2, 3, 4)
    for axis in range(-3, 3):
        for start in range(-3, 4):
            def f(x, axis=axis, start=start):
                return np.rollaxis(x, axis, start) * 1.0
            out, tangent = tp.jvp(f, (x,), (x + 1.0,))
            np.testing.assert_array_equal(out, np.rollaxis(x, axis, start))
            np.testing.assert_array_equal(tangent, np.rollaxis(x + 1.0, axis, start))
            g = tp.grad(lambda x: np.sum(f(x) * np.arange(24.0).reshape(f(x).shape)))(x)
            np.testing.assert_array_equal(
                np.rollaxis(g, axis, start), np.arange(24.0).reshape(out.shape))


def test_vander_slope_at_zero():
    """The constant column has slope 0 and x ** 1 slope 1 at x = 0 (no 0 * inf)."""
    def f(x):
        return np.sum(np.vander(x, 4) * np.arange(1.0, 5.0))
    g = tp.grad(f)(np.zeros(3))
    np.testing.assert_allclose(g, np.full(3, 3.0))
    h = tp.jvp(tp.grad(f), (np.zeros(3),), (np.ones(3),))[1]
    np.testing.assert_allclose(h, np.full(3, 2 * 2.0))


def select_scalar_default(x):
    return np.select([x > 1.0, x < -1.0], [x ** 2, -x], 0.5 * x)


def test_select_gives_each_element_to_the_first_condition_that_holds():
    x = np.array([-2.0, -0.5, 0.5, 2.0])
    g = tp.grad(lambda x: np.sum(select_scalar_default(x)))(x)
    np.testing.assert_allclose(g, [-1.0, 0.5, 0.5, 4.0])


# ---------------------------------------------------------------- refusals

def take_into(a, buf):
    return np.take(a, [0, 1], out=buf)


def meshgrid_five(a):
    return np.meshgrid(a, a, a, a, a)[0]


def partition_kth(a, k):
    return np.partition(a, k)


def rot90_k(a, k):
    return np.rot90(a, k)


def vander_columns(x, n):
    return np.vander(x, n)


def r_matrix(x):
    return np.r_["r", x, x]


def test_unsupported_variants_are_refused():
    x = np.arange(1.0, 7.0)
    with pytest.raises(TransformError, match="output array"):
        tp.grad(lambda a: np.sum(take_into(a, np.zeros(2))))(x)
    with pytest.raises(TransformError, match="at most"):
        tp.grad(lambda a: np.sum(meshgrid_five(a)))(x[:2])
    with pytest.raises(TransformError, match="kth differs between examples"):
        tp.vmap(partition_kth)(np.ones((2, 6)), np.array([1, 2]))
    with pytest.raises(TransformError, match="k differs between examples"):
        tp.vmap(rot90_k)(np.ones((2, 3, 3)), np.array([1, 2]))
    with pytest.raises(TransformError, match="N.*differs between examples"):
        tp.vmap(vander_columns)(np.ones((2, 3)), np.array([2, 3]))
    with pytest.raises(TransformError, match="np.matrix"):
        tp.grad(lambda a: np.sum(r_matrix(a)))(x)


# ---------------------------------------------------------------- aliasing after views

def rot90_write_through(x):
    y = np.rot90(x)
    y[0, 0] = 1.0              # writes into x as well
    return np.sum(y * x)


def rot90_write_copy(x):
    y = np.rot90(x.copy())
    y[0, 0] = 1.0              # a copy: x stays as it was
    return np.sum(y * x)


def rollaxis_write_through(x):
    y = np.rollaxis(x, 1)
    y[0] = 0.0
    return np.sum(x ** 2)


def rot90_write_local(x):
    z = x * 2.0
    y = np.rot90(z)
    y[0, 0] = 1.0              # changes z, read below
    return np.sum(z * x)


def rollaxis_write_local(x):
    z = x * 2.0
    y = np.rollaxis(z, 1)
    y[0] = 0.0
    return np.sum(z * x)


def dsplit_write_local(x):
    z = x * 2.0
    parts = np.dsplit(z, 2)
    first = parts[0]
    first[0, 0, 0] = 1.0       # np.dsplit (like np.split) returns views of z
    return np.sum(z * x)


def split_write_local(x):
    z = x * 2.0
    parts = np.split(z, 2, axis=2)
    first = parts[1]
    first[0, 0, 0] = 1.0
    return np.sum(z * x)


def test_writes_into_split_parts_are_refused():
    """A write into a part of np.split/np.dsplit changed the array split, which the gradient
    did not see (a wrong answer): the parts are views."""
    x = _rng("split-views").standard_normal((2, 2, 4))
    for f in (dsplit_write_local, split_write_local):
        with pytest.raises(TransformError, match="aliasing"):
            tp.grad(f)(x)


def test_writes_into_views_are_refused_or_right():
    """np.rot90 and np.rollaxis return views: a write through one changes the argument, which
    transformed code must either follow exactly or refuse; a write into a copy is fine."""
    r = _rng("aliasing")
    x = N(r, 3, 3)
    check_grads(rot90_write_copy, (x,), order=2, modes=("fwd", "rev"),
                seed=int(r.integers(1 << 31)))
    for f in (rot90_write_through, rollaxis_write_through, rot90_write_local,
              rollaxis_write_local):
        try:
            g = tp.grad(f)(x.copy())
        except TransformError as e:
            assert "alias" in str(e) or "view" in str(e), str(e)
            continue
        check_grads(f, (x.copy(),), order=1, modes=("rev",))
        assert np.all(np.isfinite(g))


# ---------------------------------------------------------------- numpy functions written with
# others (transpile/numpy_functions.py): np.dstack, np.isin, np.unravel_index, np.delete,
# np.resize (refusals of the JAX batching_test port: no rule)

def _written_with_others(x, y):
    stacked = np.dstack([x, y, x * y])
    found = np.isin(np.round(x * 2), [0.0, 1.0])
    rows, cols = np.unravel_index(np.array([5, 7, 2]), (3, 4))
    kept = np.delete(x, [0, 2], axis=1)
    flat_kept = np.delete(y, 1)
    filled = np.resize(y, (2, 5))
    return (np.sum(stacked ** 2) + np.sum(np.where(found, x, 0.5 * x)) +
            np.sum(x[rows, cols]) + np.sum(kept * 3) + np.sum(flat_kept) + np.sum(filled ** 2))


def _each_dstack(x, y):
    return np.dstack([x, y]), np.dstack([x[0], y[0]]), np.dstack([x[0, 0], 1.0])


def _each_isin(x, y):
    return np.isin(x, [x[0, 0], y[1, 1]]), np.isin(x, x[1], invert=True), np.isin(2, [1, 2])


def _each_delete(x, y):
    return np.delete(x, 1, 0), np.delete(x, [0, -1], axis=1), np.delete(y, slice(1, 5))


def _each_resize(x, y):
    return np.resize(y, (5, 3)), np.resize(x[0], 7), np.resize(x, (2, 2))


def _each_unravel(x, y):
    return np.unravel_index(np.array([3, 11, 0]), (3, 4)) + np.unravel_index(5, (2, 3))


def test_numpy_functions_written_with_others():
    r = np.random.default_rng(SEED)
    x, y = N(r, 3, 4), N(r, 3, 4)
    for each in (_each_dstack, _each_isin, _each_delete, _each_resize, _each_unravel):
        for got, expected in zip(tp.jit(each)(x, y), each(x, y)):   # values and dtypes
            assert np.asarray(got).dtype == np.asarray(expected).dtype
            np.testing.assert_array_equal(got, expected)
    assert tp.jit(_written_with_others)(x, y) == pytest.approx(_written_with_others(x, y),
                                                                rel=1e-14)
    check_grads(_written_with_others, (x, y), order=2, modes=("rev", "fwd"))
    xs, ys = N(r, 2, 3, 4), N(r, 2, 3, 4)
    np.testing.assert_allclose(tp.vmap(_written_with_others)(xs, ys),
                               [_written_with_others(a, b) for a, b in zip(xs, ys)], rtol=1e-13)
    grad = tp.grad(_written_with_others)
    np.testing.assert_allclose(tp.vmap(grad)(xs, ys), [grad(a, b) for a, b in zip(xs, ys)],
                               rtol=1e-12)


def _bins_and_counts(x, w):
    idx = np.digitize(x, [-1.0, 0.0, 1.0])
    down = np.digitize(x, [1.0, 0.0, -1.0], right=True)
    counts = np.bincount(idx, minlength=5)
    sums = np.bincount(idx, weights=w * w)
    return (np.sum(sums * np.arange(np.size(sums))) + np.sum(counts) * 0.1 +
            np.sum(down * w) + np.sum(x.reshape(2, 3).mT) * 0.5), idx, down, counts


def test_digitize_bincount_and_mT():
    """np.digitize (bins up or down), np.bincount (with weights: differentiable in them) and
    x.mT in transformed code (no rule before; x.mT's message spoke of namedtuples)."""
    r = np.random.default_rng(SEED)
    x, w = N(r, 6), N(r, 6)
    got, expected = tp.jit(_bins_and_counts)(x, w), _bins_and_counts(x, w)
    assert got[0] == pytest.approx(expected[0], rel=1e-14)
    for a, b in zip(got[1:], expected[1:]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    check_grads(lambda x, w: _bins_and_counts(x, w)[0], (x, w), order=2, modes=("rev", "fwd"))


def _more_written(x, y, v, w):
    xn = np.where(x > 1.0, np.nan, x)
    quotient, remainder = np.divmod(x * 3, 1.3)
    fraction, whole = np.modf(x * 2.5)
    return (np.ediff1d(x, to_end=[1.0], to_begin=y[:2]), np.nancumsum(xn, axis=1),
            np.nancumprod(xn), np.polyadd(v, w[:2]), np.polysub(v[:2], w), np.polymul(v, w),
            np.polyder(v, 2), np.polyint(w, 2, [0.5, 1.5]), np.vecdot(x, y),
            np.matvec(x[:, :3], y[:, :3]), np.vecmat(y[:, :3], x[:, :3]),
            np.linalg.cross(x[:, :3], y[:, :3]), np.diagflat(v, 1),
            np.compress(v > 0, x, axis=1), np.extract(v > 0, y[0]), quotient, remainder,
            fraction, whole, np.ldexp(x, np.array([1, -2, 3, 0])))


def _more_written_total(x, y, v, w):
    return sum(np.sum(np.where(np.isnan(o), 0.0, o) ** 2) for o in _more_written(x, y, v, w))


def test_more_numpy_functions_written_with_others():
    """(the lax_numpy_test port's functions without a rule) np.ediff1d, nancumsum,
    nancumprod, polyadd, polysub, polymul, polyder, polyint, vecdot, matvec, vecmat,
    linalg.cross, diagflat, compress, extract, divmod, modf and ldexp, as numpy gives them
    (values, shapes and dtypes), differentiated and batched."""
    r = np.random.default_rng(SEED)
    x, y, v, w = N(r, 3, 4), N(r, 3, 4), N(r, 4), N(r, 3)
    for got, expected in zip(tp.jit(_more_written)(x, y, v, w), _more_written(x, y, v, w)):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-14, equal_nan=True)
    check_grads(_more_written_total, (x, y, v, w), order=2, modes=("rev", "fwd"))
    xs, ys = N(r, 2, 3, 4), N(r, 2, 3, 4)
    np.testing.assert_allclose(tp.vmap(_more_written_total, (0, 0, None, None))(xs, ys, v, w),
                               [_more_written_total(a, b, v, w) for a, b in zip(xs, ys)],
                               rtol=1e-13)


def _set_and_index_functions(x, y):
    xn = np.where(x > 1.0, np.nan, x)
    return (np.nanargmin(xn, axis=1), np.nanargmax(xn),
            np.cumulative_sum(x, axis=0, include_initial=True),
            np.cumulative_prod(x[0], include_initial=True), np.cumulative_sum(x[1]),
            np.sort_complex(x[0]), np.union1d(np.round(x[0]), np.round(y[0])),
            np.intersect1d(np.round(x), np.round(y)), np.setdiff1d(np.round(x * 2), np.round(y)),
            np.triu_indices_from(x, 1)[1], np.tril_indices_from(x)[0],
            np.ravel_multi_index((np.array([1, 2]), np.array([3, 0])), (3, 4)))


def _set_and_index_total(x, y):
    o = _set_and_index_functions(x, y)
    return (np.sum(o[2] ** 2) + np.sum(o[3] ** 2) + np.sum(o[4] * x[0]) +
            np.sum(np.abs(o[5]) ** 2))


def test_nan_arg_cumulative_set_and_index_functions():
    """np.nanargmin/nanargmax, cumulative_sum/prod (include_initial), sort_complex, the set
    functions union1d/intersect1d/setdiff1d, triu/tril_indices_from, ravel_multi_index."""
    r = np.random.default_rng(SEED)
    x, y = N(r, 3, 4), N(r, 3, 4)
    for got, expected in zip(tp.jit(_set_and_index_functions)(x, y),
                             _set_and_index_functions(x, y)):
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_array_equal(got, expected)
    check_grads(_set_and_index_total, (x, y), order=2, modes=("rev", "fwd"))
    xs = N(r, 2, 3, 4)
    np.testing.assert_array_equal(
        tp.vmap(lambda v: np.cumulative_sum(v, axis=0, include_initial=True))(xs),
        [np.cumulative_sum(v, axis=0, include_initial=True) for v in xs])


def _complex_written(x, y):
    return (np.sum(np.abs(np.vecdot(x, y)) ** 2) +
            np.sum(np.abs(np.vecmat(x[:, :3], np.outer(y[0, :3], y[1, :3]))) ** 2) +
            np.sum(np.real(np.polymul(x[0], y[1])) ** 2) +
            np.sum(np.abs(np.nancumsum(x, axis=0)) ** 2))


def test_written_functions_of_complex_inputs():
    r = np.random.default_rng(SEED)
    x, y = C(r, 3, 4), C(r, 3, 4)
    assert tp.jit(_complex_written)(x, y) == pytest.approx(_complex_written(x, y), rel=1e-13)
    check_grads(_complex_written, (x, y), order=2, modes=("rev", "fwd"))


def _fortran_order_and_diff_ends(b, s):
    return (np.reshape(b, (4, 6), order="F"), np.ravel(b, order="F"), b.flatten("F"),
            b.ravel("C"), np.reshape(b, s, order="F"), np.reshape(b, 24, order="F"),
            np.diff(b, axis=1, prepend=1.0, append=b[:, :2]),
            np.diff(b, 2, prepend=b[..., :1] * 2))


def _fortran_total(b, s):
    return sum(np.sum(np.sin(v)) for v in _fortran_order_and_diff_ends(b, s))


def test_fortran_order_and_diff_prepend_append():
    """order="F" of reshape/ravel/flatten (transposes around C order) and np.diff's prepend
    and append (joined first): refused before by their rules (the lax_numpy_test port)."""
    r = np.random.default_rng(SEED)
    b, s = N(r, 2, 3, 4), (6, 4)
    for got, expected in zip(tp.jit(_fortran_order_and_diff_ends)(b, s),
                             _fortran_order_and_diff_ends(b, s)):
        np.testing.assert_array_equal(got, expected)
    check_grads(_fortran_total, (b, s), order=2, modes=("rev", "fwd"))
    bs = N(r, 3, 2, 3, 4)
    grad = tp.grad(_fortran_total)
    np.testing.assert_allclose(tp.vmap(grad, (0, None))(bs, s), [grad(v, s) for v in bs],
                               rtol=1e-12)
