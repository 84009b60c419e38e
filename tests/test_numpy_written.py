"""numpy functions written with others (transpile/numpy_written.py) and the ones that write
into their first argument (np.fill_diagonal, np.put, np.place, np.putmask, np.copyto): numpy's
values, shapes and dtypes under tp.jit, derivatives to second order against finite
differences, vmap against a loop over examples."""
import numpy as np
import pytest

import transpile as tp
from runtime.errors import TransformError
from transpile.test_util import check_grads

import test_primitives as P

SEED = P.SEED


def N(r, *shape):
    return r.standard_normal(shape)


def _outputs(x, y, v):
    """Each function once or more, named; numpy's result is the oracle for every entry."""
    return dict(
        insert_scalar=np.insert(x, 1, 2.5, axis=1),
        insert_repeated=np.insert(x, [0, 2, 2], 7.0, axis=1),
        insert_unsorted=np.insert(v, [3, 1], v[:2]),
        insert_flat=np.insert(x, 1, y[0]),
        insert_rows=np.insert(x, 2, y[:2], axis=0),
        insert_slice=np.insert(x, slice(0, 2), 1.5, axis=0),
        insert_negative=np.insert(x, -1, y[:, 0], axis=1),
        insert_ints=np.insert(np.arange(6), [1, 5], [-1, -2]),
        block_matrix=np.block([[x, y], [y, x]]),
        block_vector=np.block([v, 1.0, v]),
        block_rows=np.block([[x], [y]]),
        block_ranks=np.block([[x[0]], [v[:4]]]),
        geomspace=np.geomspace(1.0, 100.0, 5),
        geomspace_negative=np.geomspace(-2.0, -abs(v[0]) - 0.1, 4),
        geomspace_axis=np.geomspace(abs(v[:2]) + 0.5, 3.0, 3, endpoint=False, axis=1),
        geomspace_complex=np.geomspace(1j, 4j + v[0], 3),
        i0=np.i0(x * 5),
        i0_ends=np.i0(np.array([0.0, 1e-3, -29.999, 30.0, 30.001, 300.0, 709.0])),
        windows=(np.hanning(5) + np.hamming(6)[:5] + np.blackman(5) + np.bartlett(5) +
                 np.kaiser(5, 2.5)),
        kaiser_one=np.kaiser(1, 3.0), hanning_none=np.hanning(0), bartlett_two=np.bartlett(2),
        hamming_odd=np.hamming(7), kaiser_even=np.kaiser(8, abs(v[1]) * 4),
        frexp_mantissa=np.frexp(x * 100)[0], frexp_exponent=np.frexp(x * 100)[1],
        frexp_ends=np.frexp(np.array([5e-310, 0.0, -1e308, np.inf, -0.75]))[0],
        frexp_ends_exponent=np.frexp(np.array([5e-310, 0.0, -1e308, -0.75]))[1],
        frexp_float32=np.frexp(x.astype(np.float32))[0],
        frexp_ints=np.frexp(np.arange(-3, 4))[0],
        packbits=np.packbits(x > 0), packbits_axis=np.packbits(x > 0, axis=1, bitorder="little"),
        unpackbits=np.unpackbits(np.packbits(x > 0)),
        unpackbits_count=np.unpackbits(np.array([[7, 200]], np.uint8), axis=1, count=-3),
        unpackbits_more=np.unpackbits(np.array([7, 200], np.uint8), count=19),
        unwrap=np.unwrap(np.cumsum(x * 3, axis=1)),
        unwrap_period=np.unwrap(np.cumsum(x * 3, axis=0), axis=0, period=4.0),
        unwrap_discont=np.unwrap(np.cumsum(v * 4), discont=4.0),
        real_if_close=np.real_if_close(x + 1e-20j), real_if_close_not=np.real_if_close(x + 1j),
        asarray_chkfinite=np.asarray_chkfinite(x),
        lexsort=np.lexsort((np.round(x[0]), np.round(x[1]))),
        lexsort_rows=np.lexsort(np.round(x * 2)),
        argpartition=np.argpartition(v, 2), argpartition_axis=np.argpartition(x, 1, axis=0),
        ix=np.ix_(np.array([0, 2]), np.array([True, False, True, True]))[1],
        trim_zeros=np.trim_zeros(np.array([0.0, 0, 1, 2, 0, 3, 0])),
        trim_front=np.trim_zeros(np.array([0.0, 1, 0]), "f"),
        histogram=np.histogram(x)[0], histogram_edges=np.histogram(x, bins=4)[1],
        histogram_weights=np.histogram(x, bins=[-1.0, 0.0, 0.5, 2.0], weights=y)[0],
        histogram_density=np.histogram(x, bins=3, range=(-1.0, 1.0), density=True)[0],
        histogram_one_value=np.histogram(np.full(4, v[0]), bins=2)[1],
        histogram_bin_edges=np.histogram_bin_edges(x, 6),
        poly=np.poly(v[:3]), poly_matrix=np.poly(x[:3, :3]),
        polydiv_quotient=np.polydiv(v, v[:2])[0], polydiv_remainder=np.polydiv(v, v[:3])[1],
        roots=np.sort_complex(np.roots(np.array([1.0, -3.0, 2.0, 0.0, 0.0]))),
        roots_random=np.sort_complex(np.roots(v)),
        polyfit=np.polyfit(v, v ** 2 + np.arange(5.0), 2),
        polyfit_weighted=np.polyfit(v, np.stack([v, -v], 1), 1, w=np.abs(v) + 1),
        nanmedian=np.nanmedian(np.where(x > 1, np.nan, x)),
        nanmedian_axis=np.nanmedian(np.where(x > 1, np.nan, x), axis=1),
        nanpercentile=np.nanpercentile(np.where(x > 0.5, np.nan, x), [10, 50, 90], axis=0,
                                       keepdims=True),
        nanquantile=np.nanquantile(np.where(x > 0.5, np.nan, x), 0.3),
        matrix_norm=np.linalg.matrix_norm(x), matrix_norm_2=np.linalg.matrix_norm(x, ord=2),
        vector_norm=np.linalg.vector_norm(x),
        vector_norm_1=np.linalg.vector_norm(x, axis=1, ord=1),
        vector_norm_axes=np.linalg.vector_norm(x, axis=(0, 1), keepdims=True),
        svdvals=np.linalg.svdvals(x), linalg_diagonal=np.linalg.diagonal(x, offset=1),
        linalg_outer=np.linalg.outer(v, v[:2]),
        linalg_tensordot=np.linalg.tensordot(x, y.T, axes=1),
        linalg_trace=np.linalg.trace(x), linalg_vecdot=np.linalg.vecdot(x, y),
        linalg_matmul=np.linalg.matmul(x, y.T), unstack=np.unstack(x, axis=1)[2],
        astype=np.astype(x, np.float32), spacing=np.spacing(x), nextafter=np.nextafter(x, 5.0),
        bitwise_count=np.bitwise_count(np.arange(5)),
    )


def test_values_shapes_and_dtypes_are_numpys():
    r = np.random.default_rng(SEED)
    x, y, v = N(r, 3, 4), N(r, 3, 4), N(r, 5)
    expected, got = _outputs(x, y, v), tp.jit(_outputs)(x, y, v)
    for name, want in expected.items():
        have = got[name]
        assert np.asarray(have).dtype == np.asarray(want).dtype, name
        assert np.shape(have) == np.shape(want), name
        np.testing.assert_allclose(have, want, rtol=2e-15 if name.startswith("i0") else 1e-13,
                                   atol=1e-300, equal_nan=True, err_msg=name)


def _inserted(x, y):
    return (np.sum(np.sin(np.insert(x, 1, y[0, 1], axis=1)) * 1.3) +
            np.sum(np.insert(x, [0, 2, 2], y[:, :3], axis=1) ** 2) +
            np.sum(np.insert(x, 2, y[:2], axis=0) ** 3))


def _blocked(x, y):
    return (np.sum(np.block([[x, y], [y * x, x]]) ** 3) +
            np.sum(np.block([x[0], 1.0, y[1]]) ** 2))


def _geometric(x, y):
    a, b = np.abs(x[0, 0]) + 0.5, -np.abs(y[0, 0]) - 0.3
    return (np.sum(np.geomspace(a, a * 3 + y[1, 1] ** 2, 5) ** 2) +
            np.sum(np.geomspace(-a, b, 4, endpoint=False)) +
            np.sum(np.geomspace(np.abs(x[1]) + 0.1, 2.0, 3, axis=1) ** 1.5))


def _bessel(x, y):
    return (np.sum(np.i0(x * 3) * y) + np.sum(np.i0(x * 12 + 30.0) * 1e-14) +
            np.sum(np.kaiser(6, 1.0 + x[0, 0] ** 2) * np.arange(6.0)))


def _frexp_unwrap(x, y):
    mantissa, exponent = np.frexp(x * 10)
    return (np.sum(mantissa ** 2 * y) + np.sum(exponent * x) +
            np.sum(np.sin(np.unwrap(np.cumsum(x * 4, axis=1))) * y) +
            np.sum(np.unwrap(x * 5, axis=0, period=3.0) ** 2))


def _histograms(x, y):
    weighted, edges = np.histogram(x, bins=3, weights=y ** 2)
    density, edges_2 = np.histogram(x, bins=4, density=True)
    return (np.sum(weighted * np.arange(3)) + np.sum(edges ** 2) +
            np.sum(density * edges_2[:-1]))


def _polynomials(x, y):
    quotient, remainder = np.polydiv(x[0], y[1, :2] + np.array([2.0, 0.0]))
    return (np.sum(np.poly(x[1]) ** 2) + np.sum(quotient ** 2) + np.sum(remainder ** 2) +
            np.sum(np.abs(np.poly(x[:3, :3])) ** 2) +
            np.sum(np.polyfit(x[0] + np.arange(4.0), y[0], 2) ** 2) +
            np.sum(np.polyfit(x[1] + np.arange(4.0), y[1:].T, 1, w=np.abs(y[0]) + 1) ** 2))


def _nan_statistics(x, y):
    xn = np.where(y > 1.0, np.nan, x)
    return (np.sum(np.nanmedian(xn, axis=1) ** 2) + np.nanpercentile(xn, 30) +
            np.sum(np.nanquantile(xn, [0.2, 0.7], axis=0) ** 2))


def _array_api(x, y):
    return (np.linalg.matrix_norm(x) + np.linalg.matrix_norm(x, ord="nuc") +
            np.sum(np.linalg.vector_norm(x, axis=1)) + np.sum(np.linalg.svdvals(x) ** 3) +
            np.linalg.vector_norm(x, ord=3) +
            np.sum(np.linalg.vector_norm(x, axis=(0, 1), keepdims=True)) +
            np.sum(np.linalg.tensordot(x, y.T, axes=1) ** 2) + np.linalg.trace(x[:, :3] ** 2) +
            np.sum(np.linalg.vecdot(x, y)) + np.sum(np.linalg.matmul(x, y.T) ** 2) +
            np.sum(np.unstack(x, axis=1)[1] ** 2) + np.sum(np.linalg.outer(x[0], y[0]) ** 2) +
            np.sum(np.linalg.diagonal(x, offset=1) ** 2) +
            np.sum(np.astype(x, np.float64) ** 3) + np.sum(np.nextafter(x, 5.0) ** 2))


def _written_into(x, y):
    a = x * 2.0
    np.fill_diagonal(a, y[0, :2])
    b = y * 1.0
    np.put(b, [0, 5, -1], x[1, :3] ** 2)
    c = x + y
    np.place(c, x > 0, y[2, :2] * 3)
    d = x * y
    np.putmask(d, y > 0.3, x[0, :3])
    e = y - 1.0
    np.copyto(e, x[1] ** 2, where=x < 0.2)
    return (np.sum(a ** 2 * y) + np.sum(np.sin(b)) + np.sum(c ** 3) + np.sum(d ** 2) +
            np.sum(e * x))


@pytest.mark.parametrize("f", [_inserted, _blocked, _geometric, _bessel, _frexp_unwrap,
                               _histograms, _polynomials, _nan_statistics, _array_api,
                               _written_into])
def test_derivatives_and_batches(f):
    r = np.random.default_rng([SEED, 7])
    x, y = N(r, 3, 4), N(r, 3, 4)
    assert tp.jit(f)(x, y) == pytest.approx(f(x, y), rel=1e-12)
    check_grads(f, (x, y), order=2, modes=("rev", "fwd"), seed=int(r.integers(1 << 31)))
    xs, ys = N(r, 3, 3, 4), N(r, 3, 3, 4)
    np.testing.assert_allclose(tp.vmap(f)(xs, ys), [f(a, b) for a, b in zip(xs, ys)],
                               rtol=1e-11)
    grad = tp.grad(f, argnums=(0, 1))
    for got, expected in zip(tp.vmap(grad)(xs, ys), zip(*[grad(a, b) for a, b in zip(xs, ys)])):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_i0_against_numpy_and_its_derivatives():
    """Within 2e-15 of numpy over both series (|x| = 30 joins them), numpy's overflow above
    709.78; the derivative is i1 (0 at 0) and the second derivative at 0 is 1/2."""
    r = np.random.default_rng([SEED, 8])
    x = np.concatenate([r.uniform(-40, 40, 400), r.uniform(29.9, 30.1, 50),
                        np.exp(r.uniform(-15, np.log(709.0), 100)), [0.0, 720.0, -720.0]])
    with np.errstate(over="ignore"):
        expected = np.i0(x)
        got = tp.jit(lambda x: np.i0(x))(x)
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=2e-15)
    assert np.all(np.isinf(got[~finite]))
    slope = tp.grad(lambda t: np.i0(t))
    assert slope(0.0) == 0.0
    assert tp.grad(slope)(0.0) == pytest.approx(0.5, rel=1e-15)
    special = pytest.importorskip("scipy.special")
    points = r.uniform(-35, 35, 20)
    np.testing.assert_allclose(tp.vmap(slope)(points), special.i1(points), rtol=1e-13)


def test_frexp_mantissa_of_subnormals_and_its_derivative():
    x = np.array([5e-324, 3e-310, -1e-300, 0.75, -6.0, 1e308])
    mantissa, exponent = tp.jit(lambda x: np.frexp(x))(x)
    want_mantissa, want_exponent = np.frexp(x)
    np.testing.assert_array_equal(mantissa, want_mantissa)
    np.testing.assert_array_equal(exponent, want_exponent)
    assert exponent.dtype == want_exponent.dtype
    np.testing.assert_array_equal(tp.grad(lambda x: np.sum(np.frexp(x)[0]))(x[3:5]),
                                  2.0 ** -want_exponent[3:5])


def _fill_cube(a, v):
    a = a.copy()
    np.fill_diagonal(a, v)
    return a


def _fill_tall(a, v):
    a = a * 1.0
    np.fill_diagonal(a, v, wrap=True)
    return a


def _put_modes(a, v):
    b, c = a * 1.0, a + 0.0
    np.put(b, [1, 40, -3], v, mode="wrap")
    np.put(c, [1, 40, -3], v[:2], mode="clip")
    return b + c


def _place_cycled(a, v):
    a = a.copy()
    np.place(a, a > 0.1, v[:3])
    return a


def test_writes_into_the_first_argument_as_numpy():
    r = np.random.default_rng([SEED, 9])
    for f, a, v in ((_fill_cube, N(r, 3, 3, 3), N(r, 2)), (_fill_tall, N(r, 7, 3), N(r, 2)),
                    (_put_modes, N(r, 4, 5), N(r, 3)), (_place_cycled, N(r, 4, 5), N(r, 4))):
        np.testing.assert_array_equal(tp.jit(f)(a, v), f(a, v))
        check_grads(lambda a, v: np.sum(np.sin(f(a, v))), (a, v), order=1,
                    modes=("rev", "fwd"))
        vs = N(r, 3, *v.shape)
        np.testing.assert_array_equal(tp.vmap(f, (None, 0))(a, vs), [f(a, w) for w in vs])


def _filled_row_view(a, v):
    a = a * 1.0
    row = a[0]
    np.fill_diagonal(a, v)
    return row * 2.0


def test_writes_into_the_first_argument_seen_through_views_or_refused():
    """numpy writes into `a` itself: a view of it taken before sees the write."""
    r = np.random.default_rng([SEED, 10])
    a, v = N(r, 3, 3), N(r, 3)
    try:
        got = tp.grad(lambda a, v: np.sum(_filled_row_view(a, v) ** 2), argnums=1)(a, v)
    except TransformError as e:
        assert "shares its memory" in str(e), str(e)
    else:
        assert got[0] == pytest.approx(8 * v[0]) and got[1] == got[2] == 0.0
    try:
        got = tp.jit(_filled_row_view)(a, v)
    except TransformError as e:
        assert "shares its memory" in str(e), str(e)
    else:
        np.testing.assert_array_equal(got, _filled_row_view(a, v))


def _fill_expression(a, v):
    np.fill_diagonal(a[0], v)
    return a


def test_writes_into_an_expression_are_refused_clearly():
    with pytest.raises(TransformError, match="np.fill_diagonal is supported .* variable"):
        tp.jit(_fill_expression)(np.zeros((2, 3, 3)), 1.0)


def _roots_total(p):
    return np.sum(np.abs(np.roots(p)) ** 2)


def test_roots_under_vmap_is_refused_clearly():
    """np.roots strips each polynomial's leading and trailing zeros: the number of roots
    could differ between examples."""
    with pytest.raises(TransformError, match="differ between examples"):
        tp.vmap(_roots_total)(np.array([[1.0, -3.0, 2.0], [2.0, 1.0, -1.0]]))
    check_grads(_roots_total, (np.array([1.0, -3.5, 2.0, 0.5]),), order=2,
                modes=("rev", "fwd"))


def _subtracted_at(x, v):
    y = x * 1.0
    np.subtract.at(y, np.array([0, 2, 0]), v)
    np.add.at(y, [1, 1], v[:2] * 2)
    return np.sum(np.sin(y) * y)


def test_subtract_at_is_an_add_of_the_negated_values():
    """np.subtract.at (repeated indices subtract each time), as np.add.at of -v."""
    r = np.random.default_rng([SEED, 11])
    x, v = N(r, 4), N(r, 3)
    assert tp.jit(_subtracted_at)(x, v) == pytest.approx(_subtracted_at(x, v), rel=1e-14)
    check_grads(_subtracted_at, (x, v), order=2, modes=("rev", "fwd"))
    xs = N(r, 3, 4)
    grad = tp.grad(_subtracted_at, argnums=(0, 1))
    for got, want in zip(tp.vmap(grad, (0, None))(xs, v), zip(*[grad(a, v) for a in xs])):
        np.testing.assert_allclose(got, np.stack(want), rtol=1e-12)


def _poly_of_matrix(a):
    return np.poly(a)


def _poly_loss(a):
    return np.sum(np.poly(a) ** 2)


def test_vmap_keeps_each_examples_dtype_where_all_take_one_path():
    """np.poly of real matrices is real (conjugate roots); under vmap its `if` on the roots
    joined a complex path with the real one and gave complex128 (vmap(grad) of a real loss
    was refused as complex). Where every example takes one path, that path's value is kept."""
    a = np.random.default_rng(40).normal(size=(3, 3, 3))
    loop = np.stack([_poly_of_matrix(m) for m in a])
    got = tp.vmap(_poly_of_matrix)(a)
    assert got.dtype == loop.dtype == np.float64
    np.testing.assert_allclose(got, loop, rtol=1e-10)
    np.testing.assert_allclose(tp.vmap(tp.grad(_poly_loss))(a),
                               [tp.grad(_poly_loss)(m) for m in a], rtol=1e-10)


def _product_sum(x):
    return np.sum(np.prod(x, axis=0)) + np.sum(np.multiply.reduce(x, axis=1) ** 2)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_derivatives_of_a_product_over_an_empty_axis(shape):
    """prod_others reshaped an empty slice's ones into the wrong shape (ValueError)."""
    x = np.zeros(shape)
    assert tp.grad(_product_sum)(x).shape == shape
    assert tp.hessian(_product_sum)(x).shape == shape + shape
    assert tp.jvp(_product_sum, (x,), (x,)) == (_product_sum(x), 0.0)
    assert tp.vmap(tp.grad(_product_sum))(np.zeros((2,) + shape)).shape == (2,) + shape


def _polyfit_full(x, y):
    return np.polyfit(x, y, 2, full=True)[0]


def _histogram_auto(x):
    return np.histogram(x, bins="auto")[0]


def test_variants_not_written_are_refused_as_transform_errors():
    x = np.linspace(0.0, 1.0, 8)
    with pytest.raises(TransformError, match="full=True or cov=True"):
        tp.jit(_polyfit_full)(x, np.sin(3 * x))
    with pytest.raises(TransformError, match="estimator"):
        tp.jit(_histogram_auto)(x)


def _diagonal_raised(a):
    k = a @ a.T
    k[np.diag_indices_from(k)] += 1.5
    return np.sum(np.log(np.abs(k) + 1.0)) + pow(np.sum(k), 2)


def test_diag_indices_from_and_builtin_pow():
    """np.diag_indices_from (sklearn's kernels add noise on the diagonal) and Python's
    pow(a, b) had no rule."""
    a = np.random.default_rng(42).normal(size=(3, 3))
    np.testing.assert_allclose(tp.jit(_diagonal_raised)(a), _diagonal_raised(a.copy()))
    check_grads(_diagonal_raised, (a,), order=2, modes=("fwd", "rev"))
    stack = np.stack([a, a + 1.0])
    np.testing.assert_allclose(tp.vmap(_diagonal_raised)(stack),
                               [_diagonal_raised(m) for m in stack], rtol=1e-12)
    with pytest.raises(TransformError, match="at most 2 positional"):
        tp.grad(lambda x: pow(x, 3, 5))(2.0)
