"""scipy.linalg's solve_triangular, cho_factor/cho_solve, lu_factor/lu_solve, expm, sqrtm and
solve_sylvester: derivatives to second order against finite differences (real and complex
inputs, both modes), vmap against loops (vmap, vmap of grad, grad of vmap, vmap of vmap),
jit, the spellings users write, and the variants that are refused.

The factorizations' outputs are differentiated as the numbers scipy returns: cho_factor's
`c` in both triangles (the factor in one, the input's entries in the other), lu_factor's
packed `lu`; the cases weight every entry of them.
"""
import zlib

import numpy as np
import pytest

import transpile as tp
from transpile.errors import TransformError
from transpile.test_util import check_grads
from runtime.trees import tree_leaves, tree_map

sla = pytest.importorskip("scipy.linalg")

SEED = 20261124
N = 4


def _rng(*key):
    return np.random.default_rng([SEED, *key])


def _key(name):
    return zlib.crc32(name.encode())


# ---------------------------------------------------------------- the functions checked
# Factories rather than lambdas with defaults: a transformed function's parameters are all
# arguments.

def tri(trans, lower, unit):
    def solve_tri(a, b):
        return sla.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    return solve_tri


def cho_factor_weighted(lower, w):
    def cho_factor_c(a):
        return sla.cho_factor(a, lower=lower)[0] * w
    return cho_factor_c


def cho_solve_composed(lower):
    def cho_solve_of_factor(a, b):
        return sla.cho_solve(sla.cho_factor(a, lower=lower), b)
    return cho_solve_of_factor


def cho_solve_direct(lower):
    def cho_solve_c(c, b):
        return sla.cho_solve((c, lower), b)
    return cho_solve_c


def lu_factor_weighted(w):
    def lu_factor_lu(a):
        return sla.lu_factor(a)[0] * w
    return lu_factor_lu


def lu_solve_composed(trans):
    def lu_solve_of_factor(a, b):
        return sla.lu_solve(sla.lu_factor(a), b, trans=trans)
    return lu_solve_of_factor


def expm(a):
    return sla.expm(a)


def expm_twice(a):
    return sla.expm(sla.expm(0.3 * a) @ a)


def sqrtm(a):
    return sla.sqrtm(a)


def solve_sylvester(a, b, q):
    return sla.solve_sylvester(a, b, q)


# ---------------------------------------------------------------- inputs

def well(r, n=N, cplx=False):
    """A matrix whose triangles are well conditioned (and the matrix itself)."""
    m = r.standard_normal((n, n)) + 4.0 * np.eye(n)
    return m + 1j * r.standard_normal((n, n)) if cplx else m


def spd(r, n=N, cplx=False):
    """Positive definite, plus unrelated entries (an asymmetric part): cho_factor reads one
    triangle, and the derivative must not depend on the other."""
    m = r.standard_normal((n, n)) + (1j * r.standard_normal((n, n)) if cplx else 0)
    return m @ np.conj(m.T) + n * np.eye(n) + 0.3 * r.standard_normal((n, n))


def gen(r, *shape, cplx=False):
    x = r.standard_normal(shape)
    return x + 1j * r.standard_normal(shape) if cplx else x


def _cases():
    """(name, function, make(rng, cplx) -> args, complex supported)."""
    cases = []
    for trans in (0, 1, 2, "N", "T", "C"):
        for lower in (False, True):
            for unit in (False, True):
                cases.append((f"solve_triangular-{trans}-{lower}-{unit}",
                              tri(trans, lower, unit),
                              lambda r, c: (well(r, cplx=c), gen(r, N, 2, cplx=c))))
    cases.append(("solve_triangular-vector", tri(0, True, False),
                  lambda r, c: (well(r, cplx=c), gen(r, N, cplx=c))))
    for lower in (False, True):
        cases.append((f"cho_factor-{lower}", None, lower))
        cases.append((f"cho_solve_composed-{lower}", cho_solve_composed(lower),
                      lambda r, c: (spd(r, cplx=c), gen(r, N, 2, cplx=c))))
        cases.append((f"cho_solve_direct-{lower}", cho_solve_direct(lower),
                      lambda r, c: (well(r, cplx=c), gen(r, N, cplx=c))))
    cases.append(("lu_factor", None, None))
    for trans in (0, 1, 2):
        cases.append((f"lu_solve-{trans}", lu_solve_composed(trans),
                      lambda r, c: (gen(r, N, N, cplx=c), gen(r, N, 3, cplx=c))))
    cases.append(("expm", expm, lambda r, c: (gen(r, N, N, cplx=c),)))
    cases.append(("expm_twice", expm_twice, lambda r, c: (0.5 * gen(r, 3, 3, cplx=c),)))
    cases.append(("sqrtm", sqrtm, lambda r, c: (spd(r, cplx=c) - 0.3 * np.eye(N),)))
    cases.append(("solve_sylvester", solve_sylvester,
                  lambda r, c: (well(r, cplx=c), well(r, 3, cplx=c), gen(r, N, 3, cplx=c))))
    return cases


def _case(name, cplx=False):
    r = _rng(_key(name), cplx)
    for case_name, f, make in _cases():
        if case_name != name:
            continue
        if case_name.startswith("cho_factor"):
            w = gen(r, N, N)
            return cho_factor_weighted(make, w), (spd(r, cplx=cplx),)
        if case_name == "lu_factor":
            w = gen(r, N, N)
            return lu_factor_weighted(w), (gen(r, N, N, cplx=cplx),)
        return f, make(r, cplx)
    raise KeyError(name)


NAMES = [name for name, _, _ in _cases()]


# ---------------------------------------------------------------- derivatives

@pytest.mark.parametrize("name", NAMES)
def test_second_order_real(name):
    f, args = _case(name)
    check_grads(f, args, order=2, modes=("fwd", "rev"), seed=_key(name))


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
    """Re <a, b> without conjugation: vjp is the transpose of jvp under it (the convention
    grad = df/dx - i df/dy)."""
    return sum(float(np.real(np.sum(np.asarray(x) * np.asarray(y))))
               for x, y in zip(tree_leaves(a), tree_leaves(b)))


def check_complex(f, args, r, tol=1e-5):
    """vjp and jvp of `f` against finite differences along the real and the imaginary part
    of each complex argument."""
    for part in ("re", "im"):
        v = [_direction(a, part, r) for a in args]
        numeric = _numeric_jvp(f, args, v)
        out, vjp_fn = tp.vjp(f, *args)
        u = tree_map(lambda o: _direction(o, "re", r) + (
            1j * r.standard_normal(np.shape(o)) if np.iscomplexobj(o) else 0), out)
        cot = vjp_fn(u)
        got, want = _pairing(cot, v), _pairing(u, numeric)
        assert np.isclose(got, want, rtol=tol, atol=tol), \
            f"{f.__name__}, reverse mode along the {part} part: {got} vs {want}"
        _, tangent = tp.jvp(f, tuple(args), tuple(v))
        for t, n in zip(tree_leaves(tangent), tree_leaves(numeric)):
            np.testing.assert_allclose(t, n, rtol=tol, atol=tol,
                                       err_msg=f"{f.__name__}, forward mode, {part} part")


def _real_scalar(f, w, nargs):
    """Re(sum(f(...) * w)): a real function of complex arguments, for second derivatives."""
    if nargs == 1:
        def s(a):
            return np.real(np.sum(f(a) * w))
    elif nargs == 2:
        def s(a, b):
            return np.real(np.sum(f(a, b) * w))
    else:
        def s(a, b, c):
            return np.real(np.sum(f(a, b, c) * w))
    return s


@pytest.mark.parametrize("name", NAMES)
def test_complex(name):
    """Complex inputs along both parts; then the gradient of a real function of them (its
    rules are the second derivatives)."""
    f, args = _case(name, cplx=True)
    r = _rng(_key(name), 7)
    check_complex(f, args, r)
    w = gen(r, *np.shape(f(*args)), cplx=True)
    grad = tp.grad(_real_scalar(f, w, len(args)), argnums=tuple(range(len(args))))
    check_complex(_grad_fn(grad, len(args)), args, r, tol=1e-4)


def _grad_fn(grad, nargs):
    if nargs == 1:
        def g(a):
            return grad(a)
    elif nargs == 2:
        def g(a, b):
            return grad(a, b)
    else:
        def g(a, b, c):
            return grad(a, b, c)
    return g


def test_cho_factor_keeps_the_other_triangle():
    """What the derivative of `c` is built on: the triangle cho_factor does not factor holds
    the input's entries."""
    a = spd(_rng(1))
    for lower in (False, True):
        c, flag = sla.cho_factor(a, lower=lower)
        assert flag is lower
        other = np.triu(a, 1) if lower else np.tril(a, -1)
        np.testing.assert_array_equal(np.triu(c, 1) if lower else np.tril(c, -1), other)


def test_third_order():
    r = _rng(3)
    check_grads(expm, (0.5 * gen(r, 3, 3),), order=3, modes=("fwd", "rev"), seed=3)
    check_grads(sqrtm, (spd(r, 3),), order=3, modes=("rev",), seed=4)
    check_grads(cho_solve_composed(True), (spd(r, 3), gen(r, 3)), order=3, modes=("rev",),
                seed=5)
    check_grads(lu_solve_composed(2), (well(r, 3), gen(r, 3)), order=3, modes=("fwd",),
                seed=6)


# ---------------------------------------------------------------- vmap

def _stack(xs):
    return np.stack([np.asarray(x) for x in xs])


def _loop(f, args, in_axes):
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
            for i in range(n)]
    return tree_map(lambda *ls: _stack(ls), *outs)


def _close(got, want, what):
    g, w = tree_leaves(got), tree_leaves(want)
    assert len(g) == len(w), what
    for a, b in zip(g, w):
        assert np.shape(a) == np.shape(b), f"{what}: {np.shape(a)} != {np.shape(b)}"
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-8, atol=1e-10,
                                   err_msg=what)


def _scalar(f, nargs):
    if nargs == 1:
        def s(a):
            return np.sum(np.sin(f(a)))
    elif nargs == 2:
        def s(a, b):
            return np.sum(np.sin(f(a, b)))
    else:
        def s(a, b, c):
            return np.sum(np.sin(f(a, b, c)))
    return s


def _batched_args(name, mapped, axis):
    """Three examples; the arguments in `mapped` stacked along `axis`, the others shared."""
    examples = [_case(name)[1]]
    f = _case(name)[0]
    r = _rng(_key(name), 11)
    for _ in range(2):
        examples.append(tuple(a + 0.05 * r.standard_normal(np.shape(a)) for a in examples[0]))
    args = tuple(np.moveaxis(_stack([ex[k] for ex in examples]), 0, axis) if k in mapped
                 else examples[0][k] for k in range(len(examples[0])))
    axes = tuple(axis if k in mapped else None for k in range(len(args)))
    return f, args, axes


VMAP_NAMES = ["solve_triangular-0-False-False", "solve_triangular-C-True-True",
              "solve_triangular-T-False-True", "solve_triangular-vector",
              "cho_factor-False", "cho_factor-True", "cho_solve_composed-False",
              "cho_solve_composed-True", "cho_solve_direct-True", "lu_factor", "lu_solve-0",
              "lu_solve-2", "expm", "sqrtm", "solve_sylvester"]


@pytest.mark.parametrize("name", VMAP_NAMES)
def test_vmap_against_loops(name):
    """Every subset of the arguments mapped (one of them along axis 1), vmap and vmap of
    grad against loops; grad of vmap and vmap of vmap for the all-mapped case."""
    nargs = len(_case(name)[1])
    subsets = [s for k in range(1, 1 << nargs)
               for s in [tuple(i for i in range(nargs) if k >> i & 1)]]
    for n_subset, mapped in enumerate(subsets):
        axis = 1 if n_subset == 0 else 0
        f, args, axes = _batched_args(name, mapped, axis)
        what = f"{name} in_axes={axes}"
        _close(tp.vmap(f, in_axes=axes)(*args), _loop(f, args, axes), f"vmap {what}")
        s = _scalar(f, nargs)
        for k in range(nargs):
            g = tp.grad(s, argnums=k)
            _close(tp.vmap(g, in_axes=axes)(*args), _loop(g, args, axes),
                   f"vmap(grad argnums={k}) {what}")
    f, args, axes = _batched_args(name, tuple(range(nargs)), 0)
    vs = _scalar(tp.vmap(f, in_axes=axes), nargs)
    for k in range(nargs):
        want = _loop(tp.grad(_scalar(f, nargs), argnums=k), args, axes)
        _close(tp.grad(vs, argnums=k)(*args), want, f"grad(vmap) argnums={k} {name}")
    outer = tuple(_stack([a, a + 0.01]) for a in args)
    inner = tp.vmap(f, in_axes=axes)
    _close(tp.vmap(inner, in_axes=(0,) * nargs)(*outer), _loop(inner, outer, (0,) * nargs),
           f"vmap(vmap) {name}")


def test_vmap_of_jvp_cho_solve():
    f, args = _case("cho_solve_composed-True")
    r = _rng(5)
    stacked = tuple(_stack([a, a + 0.02 * r.standard_normal(a.shape)]) for a in args)
    tangents = tuple(r.standard_normal(a.shape) for a in stacked)

    def jv(a, b, ta, tb):
        return tp.jvp(f, (a, b), (ta, tb))[1]

    _close(tp.vmap(jv)(*stacked, *tangents), _loop(jv, stacked + tangents, (0,) * 4),
           "vmap(jvp) cho_solve")


# ---------------------------------------------------------------- spellings, jit, refusals

def test_user_spellings():
    import scipy
    import scipy.linalg as sl
    from scipy.linalg import expm as expm_

    def dotted(a):
        return np.sum(scipy.linalg.expm(a))

    def aliased(a):
        return np.sum(sl.expm(a))

    def imported(a):
        return np.sum(expm_(a))

    a = gen(_rng(6), 3, 3)
    want = tp.grad(dotted)(a)
    np.testing.assert_allclose(tp.grad(aliased)(a), want)
    np.testing.assert_allclose(tp.grad(imported)(a), want)
    check_grads(imported, (a,), order=1, modes=("fwd", "rev"))


def test_jit():
    r = _rng(8)
    for name in ("cho_solve_composed-False", "lu_solve-1", "expm", "solve_sylvester",
                 "solve_triangular-T-True-False"):
        f, args = _case(name)
        np.testing.assert_allclose(tp.jit(f)(*args), f(*args), rtol=1e-12, atol=1e-12)
        g = tp.grad(_scalar(f, len(args)))
        np.testing.assert_allclose(tp.jit(g)(*args), g(*args), rtol=1e-12, atol=1e-12)
    del r


def test_grad_source_reads_well():
    f, _ = _case("cho_solve_composed-True")
    src = tp.grad(_scalar(f, 2)).source
    assert "rt.cho_factor(" in src and "rt.stacked_cho_solve(" in src


def _overwrite(a, b):
    return np.sum(sla.solve_triangular(a, b, overwrite_b=True))


def _sqrtm_blocksize(a):
    return np.sum(sla.sqrtm(a, blocksize=2))


def _lu_rect(a):
    return np.sum(sla.lu_factor(a)[0])


def test_refused_variants():
    r = _rng(9)
    a, b = well(r), gen(r, N)
    with pytest.raises(TransformError, match="overwrite_b"):
        tp.grad(_overwrite)(a, b)
    with pytest.raises(TransformError, match="blocksize"):
        tp.grad(_sqrtm_blocksize)(spd(r))
    with pytest.raises(TransformError, match="only square"):
        tp.grad(_lu_rect)(gen(r, 4, 3))


def _tri_per_example_trans(a, b, trans):
    return sla.solve_triangular(a, b, trans=trans)


def test_per_example_flags_are_refused_by_vmap():
    r = _rng(10)
    a, b = _stack([well(r), well(r)]), _stack([gen(r, N), gen(r, N)])
    with pytest.raises(TransformError, match="trans"):
        tp.vmap(_tri_per_example_trans)(a, b, np.array([0, 1]))


def _tri_stacked(a, b):
    return sla.solve_triangular(a, b, lower=True)


def test_stacks_scipy_maps_itself():
    """scipy (1.15+) maps solve_triangular over stacks itself, and broadcasts a right-hand
    side shared by all matrices. Reverse mode follows both (the shared right-hand side's
    adjoint is summed); forward mode refuses the broadcast rather than misread it."""
    r = _rng(12)
    a = _stack([well(r), well(r)])
    try:
        _tri_stacked(a, gen(r, 2, N, 3))
    except ValueError:
        pytest.skip("this scipy does not map solve_triangular over stacks")
    check_grads(_tri_stacked, (a, gen(r, 2, N, 3)), order=2, modes=("fwd", "rev"))
    check_grads(_tri_stacked, (a, gen(r, N, 3)), order=2, modes=("rev",))
    with pytest.raises(TransformError, match="do not share"):
        tp.jvp(_tri_stacked, (a, gen(r, N, 3)), (a, gen(r, N, 3)))


def factor_and_solve(a, b):
    """The factors unpacked, repacked and used directly as well."""
    c, low = sla.cho_factor(a)
    lu, piv = sla.lu_factor(a)
    return sla.cho_solve((c, low), b) + sla.lu_solve((lu, piv), b, trans=1) + \
        np.sum(c) * lu[0]


def test_factors_unpacked_and_repacked():
    r = _rng(13)
    a, b = spd(r), gen(r, N)
    check_grads(factor_and_solve, (a, b), order=2, modes=("fwd", "rev"), seed=13)
    bs = gen(r, 3, N)
    _close(tp.vmap(factor_and_solve, in_axes=(None, 0))(a, bs),
           _loop(factor_and_solve, (a, bs), (None, 0)), "vmap factor_and_solve")


def _cho_factor_pair(a, lower):
    return sla.cho_factor(a, lower)


def test_vmap_of_cho_factor_pair():
    """Under vmap the flag comes back with one entry per example, as a loop stacks it."""
    a = _stack([spd(_rng(14, k)) for k in range(3)])
    got = tp.vmap(_cho_factor_pair, in_axes=(0, None))(a, True)
    want = _loop(_cho_factor_pair, (a, True), (0, None))
    _close(got, want, "vmap cho_factor pair")


@pytest.mark.parametrize("lower", [False, True])
def test_scipy_cholesky_reads_its_own_triangle(lower):
    """scipy.linalg.cholesky (upper by default) was refused; it is numpy's with upper=not
    lower, reading that triangle only (the other one is perturbed here to show it)."""
    rng = np.random.default_rng(78)
    m = rng.normal(size=(4, 4))
    a = m @ m.T + 4.0 * np.eye(4)
    a[np.triu_indices(4, 1) if lower else np.tril_indices(4, -1)] += 0.7   # not read
    np.testing.assert_allclose(tp.jit(lambda a: sla.cholesky(a, lower=lower))(a),
                               sla.cholesky(a, lower=lower), rtol=1e-12)

    def loss(a):
        return np.sum(np.sin(sla.cholesky(a, lower=lower)))
    check_grads(loss, (a,), order=2, modes=("fwd", "rev"))
    stack = np.stack([a, a + np.eye(4)])
    np.testing.assert_allclose(tp.vmap(loss)(stack), [loss(s) for s in stack], rtol=1e-12)
