"""Error messages for code that cannot be differentiated.

Each error must be a tp.TransformError (or TypeError for wrong argument types) whose message
names this file, the right line (found with inspect, never hardcoded), shows the offending
source line with a caret under it, and gives a hint.
"""
import inspect
import os
import re

import numpy as np
import pytest

import transpile as tp

FILE = os.path.basename(__file__)
COUNTER = 0.0
BUFFER = np.zeros(3)


def _line_of(fn, marker):
    """(file line number, stripped source text) of the first line of `fn` containing marker."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if marker in line:
            return start + i, line.strip()
    raise AssertionError(f"{marker!r} not found in {fn.__name__}")


def _check_message(excinfo, fn, markers):
    """The message names this file, one of the marked lines, its source and a caret, a hint."""
    msg = str(excinfo.value)
    assert FILE in msg, f"file name missing from:\n{msg}"
    candidates = [_line_of(fn, m) for m in markers]
    ok = [(n, text) for n, text in candidates
          if re.search(rf"(line {n}\b|{re.escape(FILE)}:{n}\b)", msg) and text in msg]
    assert ok, (f"expected line {[n for n, _ in candidates]} with its source "
                f"{[t for _, t in candidates]!r} in:\n{msg}")
    assert re.search(r"^\s*\^+\s*$", msg, re.M), f"no caret line in:\n{msg}"
    assert "hint" in msg.lower(), f"no hint in:\n{msg}"
    return msg


# ---------------------------------------------------------------------------------------
# Unsupported constructs
# ---------------------------------------------------------------------------------------

def receives_from_its_consumer(x):
    total = 0.0
    for i in range(3):
        total = yield x * i  # MARK
    return total


def uses_generator(x):
    return sum(receives_from_its_consumer(x))


def test_generator_expression_value():
    # generators consumed by for/list/unpacking work (test_python_forms.py); the value of a
    # yield expression (what a consumer sends back) does not
    with pytest.raises(tp.TransformError) as e:
        tp.grad(uses_generator)(1.0)
    _check_message(e, receives_from_its_consumer, ["# MARK"])


def writes_global(x):
    global COUNTER  # MARK-global
    COUNTER = x * 2.0  # MARK-assign
    return x * x


def test_global_write():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(writes_global)(1.0)
    _check_message(e, writes_global, ["# MARK-global", "# MARK-assign"])


def uses_try(x):
    y = np.sin(x)
    try:  # MARK
        y = y / np.sum(x)
    except ZeroDivisionError:
        y = y * 0.0
    return np.sum(y)


def test_try_except():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(uses_try)(np.ones(3))
    _check_message(e, uses_try, ["# MARK"])


def star_kwargs(x, **options):  # MARK
    return np.sum(x * options["scale"])


def test_star_kwargs_parameter():
    """(*args at the entry is supported: test_python_forms.test_args_at_the_entry.)"""
    with pytest.raises(tp.TransformError) as e:
        tp.grad(star_kwargs)(np.ones(2), scale=2.0)
    _check_message(e, star_kwargs, ["# MARK"])


def _helper_pair(a, b):
    return a * b


def star_args_call(x):
    parts = (x, 2.0 * x)
    return np.sum(_helper_pair(*parts))  # MARK


def test_star_args_call():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(star_args_call)(np.ones(2))
    _check_message(e, star_args_call, ["# MARK"])


def kwargs_parameter(x, **options):  # MARK
    return np.sum(x * options.get("scale", 1.0))


def test_kwargs_parameter():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(kwargs_parameter)(np.ones(2))
    _check_message(e, kwargs_parameter, ["# MARK"])


def writes_into_parameter(x):
    x[0] = 1.0  # MARK
    return np.sum(x ** 2)


def test_mutating_a_parameter():
    x = np.arange(3.0)
    with pytest.raises(tp.TransformError) as e:
        tp.grad(writes_into_parameter)(x)
    msg = _check_message(e, writes_into_parameter, ["# MARK"])
    assert "copy" in msg
    assert np.array_equal(x, np.arange(3.0)), "the caller's array was modified"


def augmented_write_into_parameter(x, v):
    x[:, 0] += v  # MARK
    return np.sum(x)


def test_augmented_write_into_parameter():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(augmented_write_into_parameter)(np.ones((2, 2)), np.ones(2))
    _check_message(e, augmented_write_into_parameter, ["# MARK"])


def writes_into_global_array(x):
    BUFFER[0] = np.sum(x)  # MARK
    return np.sum(x * BUFFER)


def test_mutating_a_global_array():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(writes_into_global_array)(np.ones(3))
    _check_message(e, writes_into_global_array, ["# MARK"])
    assert not np.any(BUFFER)


def make_closure_writer(buf):
    def closure_writer(x):
        buf[1] = x  # MARK
        return x * 2.0
    return closure_writer


def test_mutating_a_closure_array():
    buf = np.zeros(3)
    f = make_closure_writer(buf)
    with pytest.raises(tp.TransformError) as e:
        tp.grad(f)(1.0)
    _check_message(e, f, ["# MARK"])
    assert not np.any(buf)


def appends_to_parameter_list(xs):
    xs.append(xs[0] * 2.0)  # MARK
    return np.sum(xs[-1])


def test_appending_to_a_parameter_list():
    xs = [np.ones(2)]
    with pytest.raises(tp.TransformError) as e:
        tp.grad(appends_to_parameter_list)(xs)
    _check_message(e, appends_to_parameter_list, ["# MARK"])
    assert len(xs) == 1


# ---------------------------------------------------------------------------------------
# Unknown functions
# ---------------------------------------------------------------------------------------

def unknown_numpy(x):
    y = np.tanh(x)
    return np.sum(np.histogram2d(y, x)[0])  # MARK


def test_unknown_numpy_function():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(unknown_numpy)(np.ones(3))
    msg = _check_message(e, unknown_numpy, ["# MARK"])
    assert "np.histogram2d" in msg


def inner_with_unknown(x):
    return np.histogram2d(x, x)[0] * 2.0  # MARK


def outer_calls_unknown(x):
    return np.sum(inner_with_unknown(x))


def test_unknown_numpy_function_in_callee_points_at_callee():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(outer_calls_unknown)(np.ones(3))
    _check_message(e, inner_with_unknown, ["# MARK"])


OPAQUE = np.frompyfunc(lambda v: v * 2.0, 1, 1)   # (np.vectorize is supported: a vmap)


def calls_opaque_object(x):
    return np.sum(OPAQUE(x))  # MARK


def test_unknown_callable_object():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(calls_opaque_object)(np.ones(3))
    _check_message(e, calls_opaque_object, ["# MARK"])


# ---------------------------------------------------------------------------------------
# Wrong outputs and inputs
# ---------------------------------------------------------------------------------------

def vector_output(x):
    y = np.sin(x)
    return y * 2.0  # MARK


def test_non_scalar_output_to_grad():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(vector_output)(np.ones(3))
    msg = _check_message(e, vector_output, ["# MARK"])
    assert "(3,)" in msg and "vjp" in msg


def tuple_output(x):
    return np.sum(x), np.sum(x ** 2)  # MARK


def test_tuple_output_to_grad():
    with pytest.raises(tp.TransformError) as e:
        tp.grad(tuple_output)(np.ones(3))
    msg = _check_message(e, tuple_output, ["# MARK"])
    assert "has_aux" in msg


def scaled_sum(x, scale):  # MARK
    return np.sum(x) * scale


def test_grad_wrt_int():
    with pytest.raises((tp.TransformError, TypeError)) as e:
        tp.grad(scaled_sum, argnums=1)(np.ones(3), 2)
    msg = _check_message(e, scaled_sum, ["# MARK"])
    assert "scale" in msg and "int" in msg


def test_grad_wrt_int_array():
    with pytest.raises((tp.TransformError, TypeError)) as e:
        tp.grad(scaled_sum)(np.arange(3), 2.0)
    msg = _check_message(e, scaled_sum, ["# MARK"])
    assert "'x'" in msg or " x " in msg


def test_grad_wrt_int_inside_pytree():
    def loss(params):  # MARK
        return np.sum(params["w"]) * params["n"]

    with pytest.raises((tp.TransformError, TypeError)) as e:
        tp.grad(loss)({"w": np.ones(2), "n": 3})
    _check_message(e, loss, ["# MARK"])


# ---------------------------------------------------------------------------------------
# Wrong argument types to the API itself (TypeError; no source location needed)
# ---------------------------------------------------------------------------------------

def test_bad_argnums_type():
    with pytest.raises(TypeError):
        tp.grad(scaled_sum, argnums="x")


def test_argnums_out_of_range():
    with pytest.raises(TypeError, match="argnums"):
        tp.grad(scaled_sum, argnums=5)(np.ones(2), 1.0)


def test_transforming_a_non_function():
    with pytest.raises(TypeError):
        tp.grad(3.0)


def test_vjp_inside_transformed_code_outside_its_two_forms_is_refused_clearly():
    """The pullback is a function value: held in a list, returned or passed, or a vjp not
    unpacked, it is refused at the user's line."""
    def stored(x):
        y, pullback = tp.vjp(np.sin, x)
        fs = [pullback]
        return y
    with pytest.raises(tp.TransformError, match="'pullback', the pullback of a tp.vjp"):
        tp.grad(stored)(0.3)

    def not_unpacked(z):
        pair = tp.vjp(np.sin, z)
        return pair[0]
    with pytest.raises(tp.TransformError, match="tp.vjp inside transformed code is supported "
                       "in two forms only"):
        tp.vmap(not_unpacked)(np.ones(3))


def calls_an_undefined_name(x):
    return helper_never_defined(x) * 2.0  # MARK  # noqa: F821


def test_calling_an_undefined_name_says_so():
    # Python's NameError, not "a function held in a variable"
    for transform in (tp.grad, tp.jit, tp.vmap):
        with pytest.raises(tp.TransformError, match="name 'helper_never_defined' is not "
                           "defined") as e:
            transform(calls_an_undefined_name)(np.ones(3) if transform is tp.vmap else 1.0)
        _check_message(e, calls_an_undefined_name, ["# MARK"])


def test_functions_chosen_by_a_conditional_expression_are_called():
    """Refused once ("calling a function held in a variable"), then with a clear message;
    now the call runs on the chosen path (Myia's test_switch_nontail)."""
    def chosen(x, y):
        def f1():
            return x * y

        def f2():
            return x - y
        return (f1 if x > y else f2)()
    assert tp.grad(chosen, argnums=(0, 1))(0.7, 1.3) == (1.0, -1.0)
    assert tp.grad(chosen, argnums=(0, 1))(1.3, 0.7) == (0.7, 1.3)


def _with_a_nested_kwargs_helper(x):
    def shift(r, dr, **unused):
        return r + dr
    return np.sum(shift(x, 0.5 * x))


def test_a_nested_function_with_kwargs_is_named_in_the_error():
    with pytest.raises(tp.TransformError, match="shift: a nested function .* with \\*args or "
                       "\\*\\*kwargs is not supported"):
        tp.grad(_with_a_nested_kwargs_helper)(np.ones(3))


class _Scaler:
    def __init__(self, scale=2.0):
        self.scale = scale

    def loss(self, x):
        return np.sum(x ** 2) * self.scale


def _makes_an_object(x):
    return _Scaler().loss(x)


def test_making_an_object_of_a_user_class_says_what_to_do():
    """It was "has no rule in transpile's primitive table", with a hint to add a rule."""
    with pytest.raises(tp.TransformError) as info:
        tp.grad(_makes_an_object)(np.ones(2))
    message = str(info.value)
    assert "making an object of class _Scaler" in message and "pass it in" in message
    assert "_Scaler().loss(x)" in message
