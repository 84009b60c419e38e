"""jit of vmapped code and of Jacobians: the vmap helpers that known shapes decide
(transpile/specialize/lanes.py), helpers written out in their caller (inline.py), global
arrays given their shapes, and copies elided only where nothing can tell. Every result is
compared with the same transformation without jit."""
import numpy as np
import pytest

import transpile as tp
from runtime.kernels import CpuKernel
from transpile.specialize import module as specialize_module

SEED = np.random.SeedSequence().entropy % (1 << 32)


def rng(k):
    return np.random.default_rng([SEED, k])


@pytest.fixture(autouse=True)
def specialize_at_once():
    old = (tp.Jitted.calls_before_specializing, specialize_module.CPU_MIN_ELEMENTS,
           CpuKernel.calls_before_compile, CpuKernel.compile_after_s)
    tp.Jitted.calls_before_specializing = 0
    specialize_module.CPU_MIN_ELEMENTS = 1
    CpuKernel.calls_before_compile, CpuKernel.compile_after_s = 0, 0.0
    yield
    (tp.Jitted.calls_before_specializing, specialize_module.CPU_MIN_ELEMENTS,
     CpuKernel.calls_before_compile, CpuKernel.compile_after_s) = old


A = rng(0).standard_normal((7, 7)) / 3.0


def tanh_sum(x):
    return np.sum(np.tanh(A @ x))


def linear(x):
    return A @ x


def test_the_hessian_of_a_global_matrix_product_is_one_product():
    """jacfwd(jacrev(f)) pushes the identity basis through f: A @ basis is A's columns,
    and what is left is the one matrix product the hand-derived Hessian makes."""
    x = rng(1).standard_normal(7)
    h = tp.jit(tp.hessian(tanh_sum))
    want = tp.hessian(tanh_sum)(x)
    t = np.tanh(A @ x)
    np.testing.assert_allclose(want, A.T @ ((-2 * t * (1 - t * t))[:, None] * A), rtol=1e-12)
    for _ in range(3):
        np.testing.assert_allclose(h(x), want, rtol=1e-13, atol=1e-15)
    source = h.lower(x).source
    assert "rt.lanes" not in source and "rt.align" not in source, source
    assert "rt.basis_of" not in source and "rt.batch_out" not in source, source
    assert source.count("np.dot(") == 1 and "A.T" in source, source
    assert "def " not in source.split("def jacfwd_jacrev_tanh_sum(")[1], source  # inlined


def test_a_jacobian_never_hands_out_a_global_array():
    """The Jacobian of A @ x is A itself: the helper copies A.T's columns, and jit must too
    (a caller writing into the Jacobian must not change A)."""
    x = rng(2).standard_normal(7)
    before = A.copy()
    for jac in (tp.jit(tp.jacfwd(linear)), tp.jit(tp.jacrev(linear)),
                tp.jit(tp.jacfwd(tp.jacrev(tanh_sum)))):
        for _ in range(2):
            out = jac(x)
            assert not np.shares_memory(out, A)
            out[...] = 0.0
            np.testing.assert_array_equal(A, before)


def test_a_global_array_reshaped_in_place_gets_new_code():
    """A specialization relies on the global array's shape: reshaping the same object in
    place must not run the old code (the arguments' kind is the same)."""
    global B
    B = rng(3).standard_normal((4, 6))
    x = rng(4).standard_normal(1)
    j = tp.jit(_times_b)
    for _ in range(2):
        np.testing.assert_allclose(j(x), x * B * 2.0 + B, rtol=1e-15)
    B.shape = (6, 4)                     # the same array object, another shape
    for _ in range(2):
        got = j(x)
        assert got.shape == (6, 4)
        np.testing.assert_allclose(got, x * B * 2.0 + B, rtol=1e-15)
    B.shape = (4, 6)
    np.testing.assert_allclose(j(x), x * B * 2.0 + B, rtol=1e-15)


def _times_b(x):
    return x * B * 2.0 + B


def per_example_loss(w, x, t):
    h = np.tanh(x @ w[0] + w[1])
    return np.mean((h @ w[2] - t) ** 2) + 0.01 * np.sum(w[0] * w[0])


def test_per_example_gradients_under_jit():
    r = rng(6)
    w = (r.standard_normal((3, 5)), r.standard_normal(5), r.standard_normal(5))
    xs, ts = r.standard_normal((8, 3)), r.standard_normal(8)
    per_example = tp.vmap(tp.grad(per_example_loss), in_axes=(None, 0, 0))
    jitted = tp.jit(per_example)
    want = per_example(w, xs, ts)
    loop = [tp.grad(per_example_loss)(w, xs[b], ts[b]) for b in range(8)]
    for k in range(3):
        np.testing.assert_allclose(want[k], np.stack([g[k] for g in loop]), rtol=1e-12)
    for _ in range(2):
        got = jitted(w, xs, ts)
        for g, e in zip(got, want):
            # (jit's GEMM sums in another order than rt.lanes_matmul: an element near zero
            # once differed by 2e-15, relatively 6e-13)
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
            assert g.dtype == e.dtype and g.shape == e.shape
    source = jitted.lower(w, xs, ts).source
    # (the forward pass's product of the batch with a shared matrix is numpy's own)
    assert "rt.lanes_matmul(" not in source and "x @ item" in source, source


def lane_shapes(x, y):
    """Operands of every rank against batched ones (rt.align pads with a reshape),
    reductions over an example's axes (rt.lane_axis) and their adjoints broadcast back
    (rt.lane_expand_to, rt.lane_broadcast_to_shape)."""
    z = x[:, None] * y + np.sum(y, axis=0) - np.mean(x)
    return np.sum(z * z, axis=1) + np.max(y)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (1, 2)])
def test_vmap_and_vmap_of_grad_under_jit_against_a_loop(in_axes):
    r = rng(7)
    xb = r.standard_normal((4, 3)) if in_axes[0] != 1 else r.standard_normal((3, 4))
    yb = r.standard_normal((4, 3, 2))
    if in_axes[1] == 2:
        yb = np.moveaxis(yb, 0, 2)
    x1, y1 = r.standard_normal(3), r.standard_normal((3, 2))
    args = (xb if in_axes[0] is not None else x1, yb if in_axes[1] is not None else y1)

    def example(b):
        return tuple(np.take(a, b, axis=ax) if ax is not None else a
                     for a, ax in zip(args, in_axes))
    for fn, f in ((lane_shapes, lane_shapes), (tp.grad(_scalar_lane_shapes, argnums=(0, 1)),
                                               tp.grad(_scalar_lane_shapes, argnums=(0, 1)))):
        mapped = tp.vmap(fn, in_axes=in_axes)
        want = [f(*example(b)) for b in range(4)]
        jitted = tp.jit(mapped)
        for _ in range(2):
            got = jitted(*args)
            expected = mapped(*args)
            _assert_tree_close(got, expected)
            for b in range(4):
                _assert_tree_close(_take_example(got, b), want[b])


def _scalar_lane_shapes(x, y):
    return np.sum(lane_shapes(x, y))


def _take_example(tree, b):
    if isinstance(tree, tuple):
        return tuple(_take_example(t, b) for t in tree)
    return tree[b]


def _assert_tree_close(got, expected):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_tree_close(g, e)
        return
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    assert np.asarray(got).dtype == np.asarray(expected).dtype


def swap_pair(x):
    a, b = _pair(x)
    b, a = a, b                      # unpacking must not read a name it has just written
    return a * 2.0 - b


def _pair(x):
    return np.sin(x), np.cos(x)


def test_helpers_written_out_keep_tuple_unpacking_simultaneous():
    x = rng(8).standard_normal(5)
    j = tp.jit(swap_pair)
    for _ in range(2):
        # numba's loop calls libm's sin and cos, numpy its own SIMD ones: they may differ in
        # the last bit, which a near-cancelling difference turns into a larger relative one
        np.testing.assert_allclose(j(x), np.cos(x) * 2.0 - np.sin(x), rtol=1e-14, atol=1e-15)
    assert "_pair" not in j.lower(x).source.split("def swap_pair(")[1]


def data_dependent_loop(x, y):
    k = 0
    while k < 3:
        if x < -0.6:
            break
        x = x * 0.5 + y
        k += 1
    return np.sin(x)


def test_jit_of_vmap_with_a_data_dependent_loop():
    """vmapped code with masks runs inside `with rt.errstate(...)`: dead-code elimination
    dropped the whole block, and the specialization did not compile (found by the random
    program generator's jit(vmap) check, seed 950001)."""
    r = rng(9)
    xb, yb = r.uniform(-1.5, 1.0, 6), r.standard_normal(6)
    mapped = tp.vmap(data_dependent_loop)
    want = np.array([data_dependent_loop(a, b) for a, b in zip(xb, yb)])
    for _ in range(2):
        np.testing.assert_allclose(tp.jit(mapped)(xb, yb), want, rtol=1e-14)
        np.testing.assert_allclose(tp.jit(tp.vmap(tp.grad(data_dependent_loop)))(xb, yb),
                                   tp.vmap(tp.grad(data_dependent_loop))(xb, yb), rtol=1e-14)


def layer_twice(x, W, b):
    return np.tanh(x @ W + b) * 0.5 + x @ W * 0.1


def written_between(x):
    y = np.exp(x)
    y[0] = 0.0                         # y changes in place: a later np.exp(x) is not y
    z = np.exp(x)
    return y + z * 2.0


def test_common_subexpressions_are_computed_once():
    r = rng(10)
    x, W, b = r.standard_normal((6, 4)), r.standard_normal((4, 3)), r.standard_normal(3)
    j = tp.jit(layer_twice)
    for _ in range(2):
        # libm's tanh (numba's loop) and numpy's may differ in the last bit; the two terms
        # can nearly cancel (CI saw 8e-14 relative, 3e-17 absolute, at a result of 3e-4)
        np.testing.assert_allclose(j(x, W, b), layer_twice(x, W, b), rtol=1e-14, atol=1e-15)
    assert j.lower(x, W, b).source.count("x @ W") == 1, j.lower(x, W, b).source
    w = tp.jit(written_between)
    for _ in range(2):
        np.testing.assert_allclose(w(x[0]), written_between(x[0].copy()), rtol=1e-15)
    source = w.lower(x[0]).source
    assert "z = np.exp(x)" in source and "z = y" not in source, source


def product_rule(a, b):
    return (a * b + b * a) * 0.75 + (a - b) * (b + a)


def test_a_sum_of_twins_is_one_doubled_and_exact():
    """`a * b + b * a` (what the product rule gives a square) is `m * 2.0`: exactly `m + m`
    in floating point, for every dtype and value, so jit's numbers are numpy's bit for
    bit; integers keep their sum."""
    r = rng(11)
    for dtype in (np.float32, np.float64):
        a = r.standard_normal((40, 30)).astype(dtype)
        b = r.standard_normal((40, 30)).astype(dtype)
        b[0, :3] = [np.inf, np.nan, -0.0]
        j = tp.jit(product_rule)
        with np.errstate(invalid="ignore"):
            want = product_rule(a, b)
            for _ in range(2):
                got = j(a, b)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
        assert "* 2.0" in j.lower(a, b).source
    ints = r.integers(-5, 5, (4, 3))
    np.testing.assert_array_equal(tp.jit(_int_twins)(ints, ints.T.copy().T),
                                  _int_twins(ints, ints))


def _int_twins(a, b):
    return a * b + b * a


def shared_reductions(x, w):
    return np.sin(tp.psum(w * w, "i")) * x + tp.psum(w > 0, "i") + tp.pmean(x, "i")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
def test_psum_of_a_shared_value_under_jit_of_vmap(dtype):
    """psum of a value every example shares is `w * n` once its dtype is np.sum's; a
    narrower one (int8, booleans) keeps rt.psum_copies, which sums in int64."""
    r = rng(20)
    x = r.standard_normal((5, 3)).astype(np.float64)
    w = (r.standard_normal(3) * 40).astype(dtype)
    mapped = tp.vmap(shared_reductions, in_axes=(0, None), axis_name="i")
    jitted = tp.jit(mapped)
    expected = mapped(x, w)
    got = jitted(x, w)
    assert got.dtype == expected.dtype
    # (float32 rounding, measured against the largest value: a fused kernel may round an
    # element that cancels to near zero differently)
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == np.float32 else 1e-13,
                               atol=1e-6 * scale if dtype == np.float32 else 0)
    source = jitted.lower(x, w).source
    assert ("rt.psum_copies(multiply, 5)" in source) == (dtype == np.int8), source
    assert ("multiply * 5" in source) == (dtype != np.int8), source
    assert "rt.psum_copies(greater, 5)" in source, source
