"""tp.jit against the plain call: specialization, static arguments, the cache, fusion, the
output pool, composition with the other transformations, and Python control flow kept."""
import functools
import gc

import sys

import numpy as np
import pytest

import transpile as tp
import transpile.specialize.module as specialize_module
from jit_programs import PROGRAMS, mlp_loss, newton_sqrt, selu, sine_loop, slow_f
from runtime.kernels import CpuKernel, devices as array_devices, have_compiled_loops
from runtime.trees import tree_leaves


@pytest.fixture(autouse=True)
def specialize_at_once():
    """Specialize on the first call of each kind of arguments (by default that waits for
    the second call: see test_the_first_call_runs_the_general_code)."""
    old = tp.Jitted.calls_before_specializing
    tp.Jitted.calls_before_specializing = 0
    yield
    tp.Jitted.calls_before_specializing = old


@pytest.fixture
def fuse_small():
    """Fuse chains of any size, as on the GPU (the tests' arrays are small), and compile
    each kernel's loop on its first call."""
    old = (specialize_module.CPU_MIN_ELEMENTS, CpuKernel.calls_before_compile,
           CpuKernel.compile_after_s)
    (specialize_module.CPU_MIN_ELEMENTS, CpuKernel.calls_before_compile,
     CpuKernel.compile_after_s) = 1, 0, 0.0
    yield
    (specialize_module.CPU_MIN_ELEMENTS, CpuKernel.calls_before_compile,
     CpuKernel.compile_after_s) = old


def assert_tree_close(got, expected, rtol):
    got_leaves, expected_leaves = tree_leaves(got), tree_leaves(expected)
    assert len(got_leaves) == len(expected_leaves)
    for g, e in zip(got_leaves, expected_leaves):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        # absolute: an ulp of difference in exp(x) survives `alpha * exp(x) - alpha`
        scale = max(1.0, float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0)))
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * scale, equal_nan=True)


def tolerance(result):
    """float32 kernels may round transcendental functions differently from numpy by an ulp
    or two; float64 ones by a few 1e-16."""
    return 2e-6 if any(np.asarray(v).dtype == np.float32 for v in tree_leaves(result)) \
        else 1e-12


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "default"])
def test_jit_matches_the_plain_call(name, fused, request):
    if fused:
        request.getfixturevalue("fuse_small")
    fn, make_args, options = PROGRAMS[name]
    jitted = tp.jit(fn, **options)
    for seed in (1, 2):                  # the second call runs the cached specialization
        args = make_args(seed)
        expected = fn(*args)
        got = jitted(*args)
        assert_tree_close(got, expected, tolerance(expected))
    if fused and name not in ("grad_mlp", "vmap_grad_mlp"):
        assert "rt.CpuKernel(" in jitted.source, jitted.source


def test_fused_kernel_writes_one_loop_and_keeps_the_statements_as_fallback(fuse_small):
    x = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    source = tp.jit(slow_f).lower(x).source
    assert "for i0 in range(4):" in source and "for i1 in range(5):" in source
    assert "x_ * np.float32(2.0)" in source          # float32 stays float32, as in numpy
    assert "out[...] = multiply + multiply_1" in source
    assert "out = fused(x)" in source
    assert "float32[4, 5]" in source.splitlines()[0]


def test_the_numpy_fallback_computes_the_same(fuse_small):
    x = np.random.default_rng(4).standard_normal((6, 3))
    spec = tp.jit(selu).lower(x)
    kernel = spec.env[spec.kernels[0].name]
    out = np.empty((6, 3))
    kernel.fallback(1.05, x, 1.67, out)
    np.testing.assert_array_equal(out, selu(x))


def test_small_arrays_are_not_fused_by_default():
    x = np.random.default_rng(5).standard_normal((10, 10))
    assert "CpuKernel" not in tp.jit(slow_f).lower(x).source
    big = np.random.default_rng(5).standard_normal((300, 300))
    assert "CpuKernel" in tp.jit(slow_f).lower(big).source


def test_a_new_kind_of_argument_makes_a_new_specialization():
    j = tp.jit(slow_f)
    a, b = np.ones((2, 3)), np.ones((3, 2))
    j(a)
    first = j.source
    j(a * 2)
    assert j.cache_info()["size"] == 1
    j(b)
    assert j.cache_info()["size"] == 2 and j.source != first
    j(a.astype(np.float32))
    j(2.0)
    assert j.cache_info()["size"] == 4
    assert "x: weak float64[]" in j.source


def test_the_cache_keeps_at_most_cache_size_specializations():
    j = tp.jit(slow_f, cache_size=2)
    for n in range(1, 6):
        np.testing.assert_array_equal(j(np.full(n, 1.5)), slow_f(np.full(n, 1.5)))
    assert j.cache_info() == {"size": 2, "limit": 2}


def layer_sum(params, x, n):
    for W, b in params:
        x = np.tanh(x @ W + b) * OFFSET
    return x + n


OFFSET = 1.0


def test_the_last_kind_of_arguments_is_recognised_without_its_key_and_only_it(monkeypatch):
    """A call with arguments of the kind the last call had runs its code again after a
    guard (no key built): any difference in structure, shape, dtype, array or number type,
    a static value or a global the code read goes the long way, to the right code."""
    rng = np.random.default_rng(46)
    params = [(rng.standard_normal((3, 4)), rng.standard_normal(4)),
              (rng.standard_normal((4, 4)), rng.standard_normal(4))]
    x = rng.standard_normal((2, 3))
    j = tp.jit(layer_sum, static_argnums=(2,))
    j(params, x, 1)
    j(params, x, 1)
    assert j._fast is not None
    keys = []
    real_key = j._key
    monkeypatch.setattr(j, "_key", lambda full: keys.append(1) or real_key(full))
    np.testing.assert_allclose(j(params, x, 1), layer_sum(params, x, 1), rtol=1e-14)
    assert not keys                                  # the guard's way
    others = [
        (params, x, 2),                              # another static value
        (params, x, True),                           # bool, not int
        (params[:1], x, 1),                          # one layer fewer
        ([tuple(params[0]), list(params[1])], x, 1),  # a list where a tuple was
        (params, x[:1], 1),                          # another shape
        (params, x.astype(np.float32), 1),           # another dtype
        ([(W.astype(np.float32), b) for W, b in params], x, 1),
        (params, x.view(np.matrix), 1),              # an ndarray subclass
    ]
    for args in others:
        j(params, x, 1)                              # the guard is the first kind's
        before = len(keys)
        with np.errstate(all="ignore"):
            got = j(*args)
            want = layer_sum(*args)
        assert len(keys) > before                    # a new kind: the long way
        assert type(got) is type(want) and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    del keys[:]
    np.testing.assert_allclose(j(params, x, 1), layer_sum(params, x, 1), rtol=1e-14)
    np.testing.assert_allclose(j(params, x, 1), layer_sum(params, x, 1), rtol=1e-14)
    assert len(keys) == 1                            # the first kind again, then its guard
    y = x.copy()
    j(params, y, 1)
    y.shape = (3, 2)                                  # the same array, reshaped in place
    with pytest.raises(ValueError):
        j(params, y, 1)                               # (3, 2) @ (3, 4): numpy's error
    monkeypatch.setattr(sys.modules[__name__], "OFFSET", 3.0)   # a global rebound
    np.testing.assert_allclose(j(params, x, 1), layer_sum(params, x, 1), rtol=1e-14)
    gradient = tp.jit(tp.grad(activation_sum))
    for _ in range(3):
        np.testing.assert_allclose(gradient(x), 1.0 - np.tanh(x) ** 2, rtol=1e-13)
    # the derivative of the function the global named is in the code: made again
    monkeypatch.setattr(sys.modules[__name__], "ACTIVATION", np.sin)
    np.testing.assert_allclose(gradient(x), np.cos(x), rtol=1e-13)


ACTIVATION = np.tanh


def activation_sum(x):
    return np.sum(ACTIVATION(x))


def test_source_before_the_first_call_says_how_to_see_it():
    with pytest.raises(ValueError, match=r"lower\(\*args\)\.source"):
        tp.jit(slow_f).source


def branchy(x, n, mode):
    if mode == "square":
        for _ in range(n):
            x = x * x
    else:
        x = x + n
    return x


def test_static_arguments_are_constants_and_decide_branches():
    j = tp.jit(branchy, static_argnums=(1,), static_argnames=("mode",))
    x = np.random.default_rng(6).random(4) + 0.5
    np.testing.assert_allclose(j(x, 2, "square"), x ** 4)
    body = j.source.split("def branchy")[1]
    # the static trip count makes a short literal loop: written out
    assert body.count("x = x * x") == 2 and "'square'" not in body and "if " not in body
    np.testing.assert_allclose(j(x, 3, mode="add"), x + 3)
    body = j.source.split("def branchy")[1]
    assert "x = x + 3" in body and "x * x" not in body
    assert j.cache_info()["size"] == 2


def test_an_unhashable_static_argument_is_a_clear_error():
    j = tp.jit(branchy, static_argnums=1, static_argnames="mode")
    with pytest.raises(TypeError, match="static argument 'n' of branchy must be hashable"):
        j(np.ones(2), [2], "add")


def test_static_argument_positions_are_checked():
    with pytest.raises(TypeError, match="static_argnums entry 5"):
        tp.jit(branchy, static_argnums=5)
    with pytest.raises(TypeError, match="static_argnames entry 'm'"):
        tp.jit(branchy, static_argnames="m")


def test_the_output_pool_never_hands_out_a_buffer_the_caller_holds(fuse_small):
    j = tp.jit(slow_f)
    x, y = np.full((3, 4), 1.5), np.full((3, 4), -0.5)
    r1 = j(x)
    r2 = j(y)                     # r1 is held: a new buffer
    np.testing.assert_array_equal(r1, slow_f(x))
    np.testing.assert_array_equal(r2, slow_f(y))
    view = r2[1:]
    del r2
    r3 = j(x)                     # r2's buffer is still seen through `view`
    np.testing.assert_array_equal(view, slow_f(y)[1:])
    kernel = j.lower(x).env["fused"]
    reused = kernel.pool.reused
    del r1, r3, view
    gc.collect()
    j(x)
    assert kernel.pool.reused == reused + 1


def long_sine_loop(x):
    for _ in range(40):            # too many trips to write out
        x = 0.5 * x + 0.1 * np.sin(x)
    return np.sum(x)


def test_a_kernel_in_a_loop_never_overwrites_its_own_input(fuse_small):
    x = np.random.default_rng(7).standard_normal((5, 5))
    j = tp.jit(tp.grad(long_sine_loop))
    for _ in range(3):
        np.testing.assert_allclose(j(x), tp.grad(long_sine_loop)(x), rtol=1e-13)
    assert "x = fused(x)" in j.source          # the forward loop is one kernel per trip
    # ten trips are written out, a kernel each
    j = tp.jit(tp.grad(sine_loop))
    np.testing.assert_allclose(j(x), tp.grad(sine_loop)(x), rtol=1e-13)
    assert "x_1 = fused(x)" in j.source and "x_2 = fused_1(x_1)" in j.source


def writes_between(x):
    z = x.copy()
    t = z * 2.0
    z[0] = 5.0                     # t must be computed before this write
    return t + z * 3.0


def test_a_write_between_two_statements_keeps_them_apart(fuse_small):
    x = np.random.default_rng(8).standard_normal((4, 3))
    np.testing.assert_array_equal(tp.jit(writes_between)(x), writes_between(x))


def data_dependent(x):
    y = x[x > 0]                   # its shape depends on the data
    return np.sum(y * 2.0 + 1.0) + np.sum(x * x - 1.0)


def test_values_shaped_by_data_keep_general_code(fuse_small):
    j = tp.jit(data_dependent)
    for seed in (9, 10, 11):
        x = np.random.default_rng(seed).standard_normal(20)
        np.testing.assert_allclose(j(x), data_dependent(x), rtol=1e-13)
    assert j.cache_info()["size"] == 1
    assert "y * 2.0 + 1.0" not in j.source.split("def data_dependent")[0]


def growing(x):
    for _ in range(3):
        x = np.concatenate([x, x * 0.5]) + 1.0
    return x * x - x


def test_a_shape_that_changes_between_trips_is_not_assumed(fuse_small):
    x = np.random.default_rng(12).standard_normal(4)
    np.testing.assert_allclose(tp.jit(growing)(x), growing(x), rtol=1e-13)


def test_python_while_on_array_values_stays_python(fuse_small):
    a = np.random.default_rng(13).random(30) + 0.5
    j = tp.jit(newton_sqrt)
    np.testing.assert_allclose(j(a), np.sqrt(a), rtol=1e-12)
    assert "while cond:" in j.source


def test_transformations_see_through_jit():
    a = np.random.default_rng(14).random(6) + 0.5
    np.testing.assert_allclose(tp.grad(lambda v: np.sum(tp.jit(newton_sqrt)(v)))(a),
                               0.5 / np.sqrt(a), rtol=1e-9)
    np.testing.assert_allclose(tp.grad(tp.jit(lambda v: np.sum(np.sin(v))))(a), np.cos(a))
    np.testing.assert_allclose(tp.vmap(tp.jit(selu))(a), selu(a))
    np.testing.assert_allclose(tp.jit(tp.jit(selu))(a), selu(a))


def test_jit_of_vmap_of_grad_gives_per_example_gradients(fuse_small):
    r = np.random.default_rng(15)
    params = [(r.standard_normal((3, 4)), r.standard_normal(4)),
              (r.standard_normal((4, 1)), r.standard_normal(1))]
    x, y = r.standard_normal((5, 3)), r.standard_normal((5, 1))
    got = tp.jit(tp.vmap(tp.grad(mlp_loss), in_axes=(None, 0, 0)))(params, x, y)
    for i in range(5):
        one = tp.grad(mlp_loss)(params, x[i:i + 1], y[i:i + 1])
        for (gw, gb), (w, b) in zip(got, one):
            np.testing.assert_allclose(gw[i], w, rtol=1e-12)
            np.testing.assert_allclose(gb[i], b, rtol=1e-12)


def test_known_shapes_remove_runtime_work():
    x = np.random.default_rng(16).standard_normal((30, 30))
    source = tp.jit(tp.grad(sine_loop)).lower(x).source
    assert "rt.unbroadcast" not in source and "rt.check_float_input" not in source
    assert "sin_stack" not in source      # saved only for its shape: not saved at all


def _mlp_problem(seed, sizes=(10, 32, 32, 1), batch=8):
    rng = np.random.default_rng(seed)
    params = [(rng.standard_normal((a, b)), rng.standard_normal(b))
              for a, b in zip(sizes[:-1], sizes[1:])]
    return params, rng.standard_normal((batch, sizes[0])), rng.standard_normal((batch, 1))


def test_unrolled_layers_keep_saved_values_and_adjoints_in_names():
    """A short loop over layers, written out: its pushes and pops, the adjoints of the list
    of layers and the finished gradient's tree walk are decided before the call."""
    params, x, y = _mlp_problem(40)
    jitted = tp.jit(tp.grad(mlp_loss))
    got = jitted(params, x, y)
    body = jitted.source.split("def grad_mlp_loss")[1]
    for helper in ("rt.push", "rt.pop", "rt.zeros_like", "rt.index_add", "rt.as_grad",
                   "rt.loop_sequence", "rt.seed", "_stack"):
        assert helper not in body, helper
    assert_tree_close(got, tp.grad(mlp_loss)(params, x, y), 1e-12)
    assert type(got) is list and all(type(layer) is tuple for layer in got)
    # every leaf is an array of its own, as the general code returns
    leaves = tree_leaves(got)
    assert len({id(v) for v in leaves}) == len(leaves)
    assert all(v.flags.writeable for v in leaves)
    value, grads = tp.jit(tp.value_and_grad(mlp_loss))(params, x, y)
    assert value == pytest.approx(mlp_loss(params, x, y), rel=1e-12)
    assert_tree_close(grads, got, 1e-12)


def mean_square_error(x, y):
    return np.mean((x * 0.5 - y) ** 2) + np.sum(x * 2.0) / 3.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arithmetic_on_a_filled_adjoint_is_done_on_its_number(dtype):
    """The adjoint of a mean or sum is an array filled with one number: scaling it scales
    the number, and its product with an array of its shape is a product with the number,
    in numpy's dtypes (float32 stays float32)."""
    rng = np.random.default_rng(43)
    x, y = rng.standard_normal((6, 5)).astype(dtype), rng.standard_normal((6, 5)).astype(dtype)
    for fn in (tp.grad(mean_square_error), tp.grad(mean_square_error, argnums=(0, 1)),
               tp.value_and_grad(mean_square_error)):
        jitted = tp.jit(fn)
        assert_tree_close(jitted(x, y), fn(x, y), 2e-7 if dtype == np.float32 else 1e-15)
    source = tp.jit(tp.grad(mean_square_error)).lower(x, y).source
    body = source.split("def grad_mean_square_error")[1]
    assert "dout / 30 * 2 * subtract" in body      # the mean's adjoint, never filled
    assert body.count("np.full") <= 1              # the sum's, added to it


def trig_chain(x, y):
    return np.sin(x) * 2.0 + np.cos(x * 0.5) - y * np.sin(y)


def _ulps(got, expected):
    return np.abs(got - expected) / np.spacing(np.maximum(np.abs(expected), 1e-300))


@pytest.mark.skipif(not have_compiled_loops(), reason="needs numba")
def test_compiled_sin_and_cos_are_within_two_ulp_and_hand_back_arguments_out_of_range(
        fuse_small):
    """The compiled loop computes float64 sin and cos itself (vectorized: libm's are one
    call per element); an argument beyond 1e6, infinite or NaN makes numpy's statements
    compute the result instead, so those are numpy's exactly."""
    rng = np.random.default_rng(44)
    x = np.concatenate([rng.uniform(-10, 10, 4000), rng.uniform(-1e6, 1e6, 4000),
                        np.arange(-40, 41) * (np.pi / 2), [0.0, -0.0, 1e-310, -1e-310]])
    y = rng.uniform(-50, 50, x.size)
    jitted = tp.jit(trig_chain)
    for _ in range(3):                       # past the calls that run numpy's statements
        got = jitted(x, y)
    assert "np.floor" in jitted.source and "checks_range=True" in jitted.source
    expected = trig_chain(x, y)
    # each term within 2 ulp of its own size (the sum may cancel)
    size = 2.0 + 1.0 + np.abs(y)
    assert np.max(np.abs(got - expected) / size) <= 8 * np.finfo(np.float64).eps
    one = tp.jit(np.sin)
    for _ in range(3):
        s = one(x)
    assert np.max(_ulps(s, np.sin(x))) <= 2
    assert np.array_equal(np.signbit(s[np.sin(x) == 0]), np.signbit(np.sin(x)[np.sin(x) == 0]))
    for bad in (np.inf, -np.inf, np.nan, 1e7):
        z = x.copy()
        z[17] = bad
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(jitted(z, y), trig_chain(z, y))
    gradient = tp.jit(tp.grad(lambda_free_trig))
    for _ in range(3):
        g = gradient(x[:300])
    np.testing.assert_allclose(g, tp.grad(lambda_free_trig)(x[:300]), rtol=1e-14, atol=1e-14)


def tanh_and_exp(x, y):
    return np.tanh(x) * 1.0 + np.exp(y) * 1.0


@pytest.mark.skipif(not have_compiled_loops(), reason="needs numba")
def test_compiled_tanh_and_exp_are_within_two_ulp_and_exp_hands_back_arguments_out_of_range(
        fuse_small):
    """float64 tanh and exp are computed by the compiled loop itself (vectorized; libm's are
    one call per element): tanh everywhere (signed zeros, infinities and NaN kept), exp for
    |y| <= 708; beyond (overflow, subnormal results, inf, NaN) numpy computes the result."""
    rng = np.random.default_rng(45)
    x = np.concatenate([rng.uniform(-1e-8, 1e-8, 2000), rng.uniform(-0.7, 0.7, 4000),
                        rng.uniform(-25, 25, 4000), [0.0, -0.0, 0.625, -0.625, 20.0, -20.0,
                                                     1e-310, -1e-310, np.inf, -np.inf,
                                                     np.nan, 800.0]])
    y = np.concatenate([rng.uniform(-700, 700, 6000), rng.uniform(-3, 3, 4000),
                        np.linspace(-708, 708, x.size - 10000)])
    tanh_only, exp_only = tp.jit(lambda_free_tanh), tp.jit(lambda_free_exp)
    for _ in range(3):                         # past the calls that run numpy's statements
        t, e = tanh_only(x), exp_only(y)
    assert "np.floor" in tanh_only.source and "checks_range" not in tanh_only.source
    assert "checks_range=True" in exp_only.source
    with np.errstate(invalid="ignore"):
        assert np.nanmax(_ulps(t, np.tanh(x))) <= 2
        assert np.array_equal(t[~np.isfinite(np.tanh(x))], np.tanh(x)[~np.isfinite(np.tanh(x))],
                              equal_nan=True)
    assert np.array_equal(np.signbit(t), np.signbit(np.tanh(x)))
    assert np.max(_ulps(e, np.exp(y))) <= 1
    jitted = tp.jit(tanh_and_exp)
    for bad in (np.inf, -np.inf, np.nan, 709.9, -740.0):
        z = y.copy()
        z[17] = bad
        with np.errstate(all="ignore"):
            got = jitted(x[:z.size], z)
            np.testing.assert_array_equal(got[17], tanh_and_exp(x[:z.size], z)[17])
    assert "np.floor" in jitted.source


def lambda_free_tanh(x):
    return np.tanh(x) * 1.0


def lambda_free_exp(x):
    return np.exp(x) * 1.0


def lambda_free_trig(x):
    return np.sum(np.sin(x) * np.cos(2.0 * x))


def shared_layer(params, x):
    W, b = params[0]
    h = np.tanh(x @ W + b)
    W2, b2 = params[0]                      # the same layer again: adjoints add up
    h = np.sin(h @ W2 + b2)
    scale, unused = params[1]
    return np.sum(h * scale)


def test_adjoints_of_one_layer_read_twice_add_up_and_unread_ones_are_zero():
    rng = np.random.default_rng(41)
    params = [(rng.standard_normal((4, 4)), rng.standard_normal(4)),
              (rng.standard_normal(4), rng.standard_normal(3))]
    x = rng.standard_normal((5, 4))
    jitted = tp.jit(tp.grad(shared_layer))
    got = jitted(params, x)
    assert_tree_close(got, tp.grad(shared_layer)(params, x), 1e-12)
    np.testing.assert_array_equal(got[1][1], np.zeros(3))
    assert "rt.index_add" not in jitted.source.split("def grad_shared_layer")[1]


def rebinds_and_reads_the_old_value(x, n):
    y = x
    x = np.sin(x)
    out = 0.0
    for i in range(n):
        x = x * y + 0.5
        out = out + np.sum(x * x)
    return out + np.sum(y * x)


def test_straight_line_renaming_keeps_each_old_value(fuse_small):
    """After unrolling, a name assigned again while its old value is still read gets a
    name of its own; where the old value is dead the name stays the user's."""
    x = np.random.default_rng(42).standard_normal(6)
    for fn in (rebinds_and_reads_the_old_value, tp.grad(rebinds_and_reads_the_old_value)):
        jitted = tp.jit(fn, static_argnums=(1,))
        assert_tree_close(jitted(x, 3), fn(x, 3), 1e-12)
    plain = tp.jit(rebinds_and_reads_the_old_value, static_argnums=(1,))
    plain(x, 3)
    assert "out = out + " in plain.source or "out = " in plain.source


def test_a_backend_that_does_not_exist_is_a_clear_error():
    with pytest.raises(ValueError, match="backend must be None, 'cpu' or 'cuda'"):
        tp.jit(slow_f, backend="tpu")


def test_devices_and_device_put_without_a_gpu():
    x = np.ones(3)
    if array_devices() == ["cpu"]:     # tp.devices() lists pmap's devices since pmap
        assert tp.device_put(x) is x
    assert tp.block_until_ready(x) is x


def test_a_kernel_compiles_its_loop_once_it_is_called_again_and_again():
    old = specialize_module.CPU_MIN_ELEMENTS, CpuKernel.small_elements
    specialize_module.CPU_MIN_ELEMENTS = CpuKernel.small_elements = 1
    try:
        x = np.random.default_rng(17).standard_normal((6, 7))
        j = tp.jit(selu)
        kernel = j.lower(x).env["fused"]
        for call in range(1, 5):
            np.testing.assert_allclose(j(x), selu(x), rtol=1e-13)
            compiled = kernel._compiled is not None
            assert compiled == (call > CpuKernel.calls_before_compile and
                                have_compiled_loops()), call
    finally:
        specialize_module.CPU_MIN_ELEMENTS, CpuKernel.small_elements = old


def test_a_small_kernel_compiles_once_its_numpy_statements_have_taken_long_enough():
    """Below CpuKernel.small_elements a kernel saves microseconds a call: it compiles only
    after its numpy statements have run compile_after_s seconds in all."""
    old = specialize_module.CPU_MIN_ELEMENTS, CpuKernel.compile_after_s
    specialize_module.CPU_MIN_ELEMENTS = 1
    try:
        x = np.random.default_rng(18).standard_normal((6, 7))
        for budget, expect_compiled in ((3600.0, False), (1e-9, True)):
            CpuKernel.compile_after_s = budget
            j = tp.jit(selu)
            kernel = j.lower(x).env["fused"]
            assert kernel.small
            for call in range(CpuKernel.calls_before_compile + 3):
                np.testing.assert_allclose(j(x), selu(x), rtol=1e-13)
            assert (kernel._compiled is not None) == (expect_compiled and
                                                       have_compiled_loops()), budget
            assert kernel.spent > 0.0
    finally:
        specialize_module.CPU_MIN_ELEMENTS, CpuKernel.compile_after_s = old


def donated_update(w, g, lr):
    return w - lr * g * (1.0 + g * g)


def donated_but_returned(w, g):
    new = w * 0.5 + g
    return new, w                     # the caller gets w back: it must keep its values


def donated_but_aliased(w, g):
    v = w[0]                          # a view of w, read after the update
    new = w * 0.5 + g
    return new, v * 2.0


def test_a_donated_argument_receives_the_result(fuse_small):
    rng = np.random.default_rng(18)
    w, g = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    expected = donated_update(w, g, 0.1)
    j = tp.jit(donated_update, donate_argnums=0)
    got = j(w, g, 0.1)
    assert got is w                    # written in place: no new buffer
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    assert "out=w" in j.source


@pytest.mark.parametrize("fn", [donated_but_returned, donated_but_aliased])
def test_a_donated_argument_still_seen_elsewhere_is_not_written(fuse_small, fn):
    rng = np.random.default_rng(19)
    w, g = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    before = w.copy()
    expected = fn(w.copy(), g)
    got = tp.jit(fn, donate_argnums=(0,))(w, g)
    assert_tree_close(got, expected, 1e-14)
    np.testing.assert_array_equal(w, before)


def test_donate_argnums_are_checked():
    with pytest.raises(TypeError, match="donate_argnums entry 3"):
        tp.jit(donated_update, donate_argnums=3)


def test_the_first_call_runs_the_general_code(monkeypatch):
    monkeypatch.setattr(tp.Jitted, "calls_before_specializing", 1)
    x = np.random.default_rng(20).standard_normal((4, 3))
    j = tp.jit(selu)
    np.testing.assert_allclose(j(x), selu(x), rtol=1e-15)
    assert j.cache_info()["size"] == 0           # nothing specialized yet
    assert "float64[4, 3]" in j.source           # .source specializes for that call's kind
    j2 = tp.jit(selu)
    j2(x)
    np.testing.assert_allclose(j2(x * 2), selu(x * 2), rtol=1e-15)
    assert j2.cache_info()["size"] == 1          # the second call of the kind specialized


# JAX's documentation on jit and control flow lists functions that jax.jit refuses
# (TracerBoolConversionError, ConcretizationTypeError) or needs static arguments for. Here
# they run as written, and give what the plain call gives.

def piecewise(x):
    if x < 3:
        return 3. * x ** 2
    else:
        return -4 * x


def in_range(x):
    return (x < 3) and (x > 0)


def smaller_sum(x, y):
    return x if x.sum() < y.sum() else y


def maybe_normalized(x, normalize=True):
    if normalize:
        return x / x.sum()
    return x


def count_to(x, n):
    i = 0
    while i < n:
        i += 1
    return x + i


def doubled_thrice(x):
    for i in range(3):
        x = 2 * x
    return x


def summed_by_index(x):
    y = 0.
    for i in range(x.shape[0]):
        y = y + x[i]
    return y


def minimum_along(x, axis):
    return x.min(axis)


@pytest.mark.parametrize("fn, args", [
    (piecewise, (2.0,)), (piecewise, (4.5,)), (piecewise, (np.float64(2.5),)),
    (in_range, (2.0,)), (in_range, (-1.0,)),
    (smaller_sum, (np.ones(4), np.zeros(4))), (smaller_sum, (np.zeros(4), np.ones(4))),
    (maybe_normalized, (np.arange(1.0, 6.0), True)),
    (maybe_normalized, (np.arange(1.0, 6.0), False)),
    (count_to, (np.ones(3), 5)), (count_to, (2.5, 0)),
    (doubled_thrice, (3.0,)), (summed_by_index, (np.array([1., 2., 3.]),)),
    (minimum_along, (np.arange(12.0).reshape(3, 4), 0)),
    (minimum_along, (np.arange(12.0).reshape(3, 4), 1)),
], ids=lambda v: getattr(v, "__name__", None))
def test_jax_documented_refusals_run_here(fn, args):
    jitted = tp.jit(fn)
    for _ in range(2):                  # the general code, then the specialization
        got, expected = jitted(*args), fn(*args)
        assert_tree_close(got, expected, 1e-15)


def test_jax_documented_control_flow_differentiates_under_jit():
    for x in (2.0, 4.5):
        expected = 6.0 * x if x < 3 else -4.0
        assert tp.jit(tp.grad(piecewise))(x) == pytest.approx(expected)
    assert tp.jit(tp.grad(count_to))(1.5, 4) == 1.0


def _affine(x, a, b):
    return a * x + b * x * x


def test_closures_partials_keywords_and_other_dtypes(fuse_small):
    rng = np.random.default_rng(21)
    x = rng.standard_normal((4, 3))
    scale = float(rng.uniform(1, 2))

    def closure(v):
        return np.exp(-v * scale) + v
    np.testing.assert_allclose(tp.jit(closure)(x), closure(x), rtol=1e-14)
    partial = functools.partial(_affine, a=2.0)
    np.testing.assert_allclose(tp.jit(partial)(x, b=3.0), _affine(x, 2.0, 3.0), rtol=1e-14)
    np.testing.assert_allclose(tp.jit(selu)(x, lmbda=2.0), selu(x, lmbda=2.0), rtol=1e-14)
    ints = np.arange(12).reshape(3, 4)
    got = tp.jit(slow_f)(ints)                 # integer inputs: not fused, numpy's result
    assert got.dtype == slow_f(ints).dtype and np.array_equal(got, slow_f(ints))
    z = x + 1j * rng.standard_normal((4, 3))
    np.testing.assert_allclose(tp.jit(slow_f)(z), slow_f(z), rtol=1e-14)
    mixed = tp.jit(lambda v: np.where(v > 0, v, 0.0) + (v > 1))
    np.testing.assert_array_equal(mixed(x), np.where(x > 0, x, 0.0) + (x > 1))


def _mean_over_rows(x):
    return np.sum(x * np.mean(x, axis=0)) + np.sum(np.sum(x, axis=0) ** 2)


def test_a_reduction_along_axis_zero_is_not_taken_for_a_full_one(fuse_small):
    # `axis=0` once passed a test meant for `axis=None` (0 == False): np.mean(x, axis=0)
    # became the mean of every element, and the adjoint of np.sum(x, axis=0) a np.full
    # (random programs, seed 9107)
    x = np.random.default_rng(9107).standard_normal((3, 2))
    np.testing.assert_allclose(tp.jit(_mean_over_rows)(x), _mean_over_rows(x), rtol=1e-14)
    np.testing.assert_allclose(tp.jit(tp.grad(_mean_over_rows))(x),
                               tp.grad(_mean_over_rows)(x), rtol=1e-14)


def _layer(x, W, b):
    return np.tanh(x @ W + b) * 0.5 + x @ W * 0.1


def _network(params, x):
    for W, b in params:
        x = _layer(x, W, b)
    return np.sum(x * x)


def _countdown(x, n):
    if n == 0:
        return x
    return _countdown(x * 0.5 + 1.0, n - 1)


def test_called_helpers_are_specialized_too(fuse_small):
    rng = np.random.default_rng(22)
    params = [(rng.standard_normal((4, 4)), rng.standard_normal(4)) for _ in range(3)]
    x = rng.standard_normal((5, 4))
    j = tp.jit(_network)
    np.testing.assert_allclose(j(params, x), _network(params, x), rtol=1e-13)
    # the unrolled loop's calls are written out in the caller, each chain one kernel
    network = j.source.split("def _network(")[1]
    assert "_layer" not in network and network.count("= fused") == 3, network
    g = tp.jit(tp.grad(_network))(params, x)
    for (gw, gb), (ew, eb) in zip(g, tp.grad(_network)(params, x)):
        np.testing.assert_allclose(gw, ew, rtol=1e-12)
        np.testing.assert_allclose(gb, eb, rtol=1e-12)
    countdown = tp.jit(_countdown)
    np.testing.assert_allclose(countdown(x, 6), _countdown(x, 6), rtol=1e-14)
    # a recursive helper stays a call, of its copy specialized to the kinds it is given
    assert "result = _countdown_2(add, subtract)" in countdown.lower(x, 6).source


def _nested_twice(x):
    def inner(z):
        return np.sqrt(1.0 + np.square(np.sin(z)))
    return np.sum(x) + np.sum(inner(inner(x)))


def test_a_kernel_input_named_like_its_output_buffer(fuse_small):
    """The backward pass of `inner` reads its primal output, named `out`: a fused kernel
    took it as an input beside its own output parameter `out`, and its definition did not
    compile (found by the random program generator, seed 140319)."""
    x = np.random.default_rng().standard_normal((3, 4))
    step = tp.jit(tp.grad(_nested_twice))
    for _ in range(2):
        np.testing.assert_allclose(step(x), tp.grad(_nested_twice)(x), rtol=1e-12)
    # (the helpers are written out in the caller now, with names of their own: a
    # parameter named `out` is such an input still)
    scaled = tp.jit(_scaled_out)
    assert "out_)" in scaled.lower(x).source or "out_[" in scaled.lower(x).source
    for _ in range(2):
        np.testing.assert_allclose(scaled(x), _scaled_out(x), rtol=1e-14)


def _scaled_out(out):
    return np.sqrt(1.0 + np.square(out)) * out


EPS = np.finfo(float).eps     # a NumPy scalar at module level, as statsmodels' FLOAT_EPS


def _clip_with_numpy_scalar(p):
    return np.clip(p * EPS + p * EPS, EPS, 1.0 - EPS) * (p + EPS)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_scalar_constants_are_kept_with_their_type(dtype):
    # jit compared expressions holding np.float64 constants through gast.dump, which
    # raised (numpy answers `value == []` with an array); and np.float64 must not be
    # merged with a Python float: it makes float32 arithmetic float64
    p = np.random.default_rng().uniform(0.1, 0.9, 12).astype(dtype)
    jitted = tp.jit(_clip_with_numpy_scalar)
    for _ in range(3):
        got = jitted(p)
    want = _clip_with_numpy_scalar(p)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)
