"""jit of loops on numbers: compiled whole (specialize/scalar_loops.py, runtime ScalarLoop),
with the plain call's numbers and the plain call's kinds of number (Python float or
np.float64) after them."""
import math

import numpy as np
import pytest

import transpile as tp
from runtime.kernels import ScalarLoop, have_compiled_loops

needs_numba = pytest.mark.skipif(not have_compiled_loops(), reason="numba not installed")


def decay(x, n):
    i = 0
    while i < n:
        x = 0.999 * x + 0.001 * np.sin(x)
        i = i + 1
    return x * x


def sines(x, n):
    for _ in range(n):
        x = np.sin(x) + 0.5 * x
    return x


def loops_of(jitted):
    """The ScalarLoops of the specialization jitted ran last."""
    return [v for v in jitted._last.env.values() if isinstance(v, ScalarLoop)]


def _same_kind(a, b):
    assert type(a) is type(b), (type(a), type(b))


def _matches_plain(jitted, f, *args, rel=1e-14):
    """jitted(*args), called until its loop runs compiled, equals f(*args) in value and
    kind; the result."""
    got = _calls(jitted, *args)
    plain = f(*args)
    assert got == pytest.approx(plain, rel=rel)
    _same_kind(got, plain)
    assert loops_of(jitted)[0]._compiled
    return got


def _calls(f, *args, times=5):
    """f called enough times that its loop runs compiled; the last result."""
    for _ in range(times):
        out = f(*args)
    return out


@needs_numba
@pytest.mark.parametrize("x0", [0.7, np.float64(-1.3)])
def test_jit_grad_of_a_scalar_while_loop_runs_compiled_and_equals_grad(x0):
    rng = np.random.default_rng()
    trips = int(rng.integers(50, 400))
    jg = tp.jit(tp.grad(decay), static_argnums=(1,))
    plain = tp.grad(decay)(x0, trips)
    got = _calls(jg, x0, trips)
    assert got == pytest.approx(plain, rel=1e-13)
    _same_kind(got, plain)
    (loop,) = loops_of(jg)
    assert loop._compiled, loop.compile_error       # numba ran it, not Python
    eps = 1e-6
    fd = (decay(x0 + eps, trips) - decay(x0 - eps, trips)) / (2 * eps)
    assert got == pytest.approx(fd, rel=1e-6)


@needs_numba
def test_the_kind_of_number_after_the_loop_follows_the_trip_count():
    # n is not static: whether x is still the Python float it came in as is known only
    # when the loop has run (the region returns a flag beside it)
    jf = tp.jit(sines)
    x0 = float(np.random.default_rng().uniform(0.2, 2.0))
    for n in [0, 3, 0, 5, 1, 0, 2]:
        got, plain = jf(x0, n), sines(x0, n)
        _same_kind(got, plain)
        assert got == pytest.approx(plain, rel=1e-14)
    (loop,) = loops_of(jf)
    assert loop._compiled
    assert ("float64", None) in loop.outputs
    # a Python float after the loop keeps a float32 array float32
    arr = np.float32([1.5, 2.5])
    assert (arr * jf(x0, 0)).dtype == np.float32
    assert (arr * jf(x0, 2)).dtype == np.float64 == (arr * sines(x0, 2)).dtype


@needs_numba
def test_a_zero_dimensional_array_argument_runs_the_python_statements():
    jf = tp.jit(sines)
    x = np.array(0.4)
    for _ in range(5):
        got = jf(x, 3)
    plain = sines(x, 3)
    _same_kind(got, plain)
    assert got == plain
    got0, plain0 = jf(x, 0), sines(x, 0)
    _same_kind(got0, plain0)           # the 0-d array itself, not an np.float64


def divide_down(x, y, n):
    for _ in range(n):
        x = x / y + 1.0
    return x


@needs_numba
def test_division_by_zero_raises_for_python_numbers_and_gives_inf_for_numpy_ones():
    jf = tp.jit(divide_down)
    for _ in range(5):
        assert jf(3.0, 2.0, 4) == divide_down(3.0, 2.0, 4)
    with pytest.raises(ZeroDivisionError):
        divide_down(3.0, 0.0, 2)
    with pytest.raises(ZeroDivisionError):
        jf(3.0, 0.0, 2)
    jn = tp.jit(divide_down)
    y = np.float64(0.0)
    with np.errstate(divide="ignore"):
        for _ in range(5):
            got = jn(np.float64(3.0), y, 2)
        plain = divide_down(np.float64(3.0), y, 2)
    assert got == plain == np.inf
    _same_kind(got, plain)
    assert loops_of(jn)[0]._compiled


def grows(k, n):
    for _ in range(n):
        k = k * 3 + 1
    return k


def test_integer_products_stay_python_where_int64_would_wrap():
    jf = tp.jit(grows)
    for _ in range(5):
        got = jf(7, 60)
    assert got == grows(7, 60) and got > 2 ** 64         # a Python int, exactly
    assert not loops_of(jf)


def math_loop(x, n):
    total = 0.0
    for _ in range(n):
        total = total + np.sin(x) + np.cos(x) + np.tan(x) + np.exp(x) + np.tanh(x) + \
            np.arctan(x) + np.abs(x) + np.sinh(x) * 1e-300 + np.cosh(x) * 1e-300 + \
            np.square(x) * 1e-300
    return total


def domain_loop(x, n):
    total = 0.0
    for _ in range(n):
        total = total + np.log(x) + np.sqrt(x) + np.log1p(x) + np.expm1(x) + \
            np.arcsin(x) + np.arccos(x)
    return total


@needs_numba
@pytest.mark.parametrize("f", [math_loop, domain_loop])
def test_compiled_math_gives_numpy_values_at_edge_points(f):
    rng = np.random.default_rng()
    jf = tp.jit(f)
    points = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.0, 1e-310, 710.0, -745.0, 1e300, np.inf,
              -np.inf, np.nan] + list(rng.uniform(-3, 3, 6))
    with np.errstate(all="ignore"):
        for _ in range(4):
            jf(np.float64(0.3), 1)
        assert loops_of(jf)[0]._compiled
        for x in points:
            x = np.float64(x)
            got, plain = jf(x, 2), f(x, 2)
            _same_kind(got, plain)
            if np.isnan(plain):
                assert np.isnan(got), x
            else:
                # terms of size up to 20 (exp(3)) may cancel to a small sum, whose
                # relative error a last-bit libm difference then magnifies (x = -0.509:
                # a sum of -0.0037 off by 6e-14 of itself): an absolute bound for that
                assert got == pytest.approx(plain, rel=4e-16 * 8, abs=4e-14), x


@needs_numba
def test_newton_iteration_on_python_floats_keeps_python_floats():
    def newton(a, tol):
        x = a
        while abs_gap(x, a) > tol:
            x = 0.5 * (x + a / x)
        return x

    def abs_gap(x, a):
        return np.abs(x * x - a)
    jf = tp.jit(newton)
    a = float(np.random.default_rng().uniform(2, 50))
    for _ in range(5):
        got = jf(a, 1e-12)
    assert got == pytest.approx(math.sqrt(a), rel=1e-12)
    _same_kind(got, newton(a, 1e-12))
    # the helper called in the loop's test is inlined, with names of its own, so the
    # loop compiles whole
    (loop,) = loops_of(jf)
    assert loop._compiled and "abs_gap" not in jf.source.split("def newton(")[0].split(
        "def newton_loop(")[1].split("rt.ScalarLoop")[0].replace("_abs_gap", "")


@needs_numba
def test_the_compiled_function_is_in_the_source_and_dumps_without_transpile():
    jg = tp.jit(tp.grad(decay), static_argnums=(1,))
    _calls(jg, 0.3, 10)
    text = jg.source
    assert "rt.ScalarLoop(" in text and "x_stack.append(x)" in text
    assert "transpile" not in text.split('"""', 2)[2]
    env = {}
    exec(compile(text, "<dumped>", "exec"), env)      # imports numpy and runtime only
    entry = [v for k, v in env.items() if k == "grad_decay"][0]
    assert _calls(entry, 0.3, 10) == pytest.approx(tp.grad(decay)(0.3, 10), rel=1e-14)


def scaled(x, s):
    t = s * 2.0            # a Python float: numpy keeps float32 arrays float32 with it
    return x * t + 1.0


def test_an_operator_on_python_numbers_gives_a_python_number_to_inference():
    # inference once took `s * 2.0` for an np.float64 (what np.multiply returns), so the
    # fused kernel computed and returned float64 where numpy gives float32
    jf = tp.jit(scaled)
    x = np.random.default_rng().standard_normal((300, 300)).astype(np.float32)
    for _ in range(5):          # 300 x 300 is fused; its loop compiled from the 3rd call
        got = jf(x, 0.37)
    plain = scaled(x, 0.37)
    assert got.dtype == plain.dtype == np.float32
    np.testing.assert_array_equal(got, plain)


def count_up(k, n):
    for _ in range(n):
        k = k + 1
    return k


@needs_numba
def test_a_python_int_beyond_int64_runs_the_python_statements():
    jf = tp.jit(count_up)
    for _ in range(4):
        assert jf(5, 3) == 8
    assert loops_of(jf)[0]._compiled
    big = 2 ** 70
    assert jf(big, 3) == big + 3


RATE = np.float64(0.9)


def relax(x, n):
    for _ in range(n):
        x = np.sin(x) * RATE + 0.5 * x
    return x


@needs_numba
def test_a_global_numpy_number_is_read_in_the_compiled_loop_and_a_new_one_remakes_it():
    global RATE
    jf = tp.jit(relax)
    x0 = float(np.random.default_rng().uniform(-1, 1))
    try:
        for rate in (np.float64(0.9), np.float64(0.25), 0.6):
            RATE = rate
            _matches_plain(jf, relax, x0, 6)
    finally:
        RATE = np.float64(0.9)


def branch_after(x, c, n):
    for _ in range(n):
        x = 0.5 * x
    if c > 0:
        y = np.sin(x)         # an np.float64
    else:
        y = 0.5 * x           # a Python float: y is either only after the run
    return y


@needs_numba
def test_a_value_of_either_kind_only_after_the_run_keeps_its_kind():
    jf = tp.jit(branch_after)
    x0 = float(np.random.default_rng().uniform(-1, 1))
    for c in (1.0, -1.0, 1.0, -1.0, 2.0, -2.0):
        got, plain = jf(x0, c, 4), branch_after(x0, c, 4)
        _same_kind(got, plain)
        assert got == pytest.approx(plain, rel=1e-14)
    assert loops_of(jf)[0]._compiled


def shifted(y):
    x = y * y                 # `x` as the caller's: the inlined copy takes a name of its own
    return x + 0.25


def uses_helper(x, n):
    total = 0.0
    for _ in range(n):
        x = 0.5 * x + np.cos(x)
        total = total + shifted(x) * 0.1
    return total + x


@needs_numba
def test_a_helper_called_in_a_loop_is_inlined_with_names_of_its_own():
    jf = tp.jit(uses_helper)
    _matches_plain(jf, uses_helper, float(np.random.default_rng().uniform(-0.5, 0.5)), 7)
    loop_source = jf.source.split("rt.ScalarLoop")[0]
    assert "x_shifted" in loop_source and "shifted(" not in loop_source


def half_square_plus_cos(y):
    x = y * y
    return 0.5 * x + np.cos(y)


def carried_through_helper(x, n):
    for _ in range(n):
        x = half_square_plus_cos(x) * 0.9      # x's kind settles only through the helper
    return x


@needs_numba
@pytest.mark.parametrize("n", [0, 1, 6])
def test_a_value_the_loop_carries_through_a_helper_compiles_and_keeps_its_kind(n):
    x0 = float(np.random.default_rng().uniform(-0.8, 0.8))
    _matches_plain(tp.jit(carried_through_helper), carried_through_helper, x0, n)
    grad = _calls(tp.jit(tp.grad(carried_through_helper)), x0, n)
    plain_grad = tp.grad(carried_through_helper)(x0, n)
    assert grad == pytest.approx(plain_grad, rel=1e-13)
    _same_kind(grad, plain_grad)
    # under grad the helper's forward half returns its saved values as a tuple, which a
    # compiled loop does not carry: that loop stays Python (and right)


def halve_then_sum(x, n):
    for _ in range(n):
        x = 0.5 * x
    return np.sum(x) + np.mean(x) * 0.5        # numpy scalars from a Python float


@needs_numba
def test_every_call_before_and_after_compiling_gives_the_plain_kinds():
    jf = tp.jit(halve_then_sum)
    x0 = float(np.random.default_rng().uniform(-2, 2))
    for k in range(6):          # the first calls run the statements as generated
        for x in (np.array(x0), np.float64(x0), x0):
            got, plain = jf(x, 3), halve_then_sum(x, 3)
            _same_kind(got, plain)
            assert got == plain
    assert loops_of(jf)[0]._compiled
