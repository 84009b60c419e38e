"""vmap: regressions for wrong answers and needless refusals ("no silent wrong answers").

Every batched result is checked against a Python loop over examples (and derivatives of
Jacobians against finite differences). Each test failed before its fix."""
import typing

import numpy as np
import pytest

import transpile as tp
from runtime.trees import tree_leaves, tree_map
from transpile.test_util import check_grads

RNG = np.random.default_rng(20240611)


def loop(f, args, in_axes=0):
    """f applied example by example, stacked on axis 0."""
    if isinstance(in_axes, int):
        in_axes = (in_axes,) * len(args)
    n = [np.shape(tree_leaves(a)[0])[ax] for a, ax in zip(args, in_axes) if ax is not None][0]
    outs = []
    for k in range(n):
        ex = [a if ax is None else tree_map(lambda x, ax=ax: np.take(x, k, axis=ax), a)
              for a, ax in zip(args, in_axes)]
        outs.append(f(*ex))
    return tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


def close(got, want, tol=1e-9):
    lg, lw = tree_leaves(got), tree_leaves(want)
    assert len(lg) == len(lw)
    for a, b in zip(lg, lw):
        assert np.shape(a) == np.shape(b), (np.shape(a), np.shape(b))
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def check_all(f, args, in_axes=0, modes=("vmap", "vmap_grad", "grad_vmap")):
    """f under vmap, vmap(grad) and grad(sum of vmap), each against a loop."""
    if "vmap" in modes:
        close(tp.vmap(f, in_axes=in_axes)(*args), loop(f, args, in_axes))
    if "vmap_grad" in modes:
        g = tp.grad(f)
        close(tp.vmap(g, in_axes=in_axes)(*args), loop(g, args, in_axes))
    if "grad_vmap" in modes:
        batched = tp.vmap(f, in_axes=in_axes)
        per_example = loop(tp.grad(f), args, in_axes)
        close(tp.grad(_summed(batched, len(args)))(*args), per_example)
    if "hessian" in modes:
        h = tp.hessian(f)
        close(tp.vmap(h, in_axes=in_axes)(*args), loop(h, args, in_axes), 1e-7)


def _summed(batched, nargs):
    """a0, ... -> np.sum(batched(a0, ...)), as a function transformations can read."""
    from transpile.custom import file_backed
    params = ", ".join(f"a{i}" for i in range(nargs))
    text = ("import numpy as np\n\n"
            f"def total({params}):\n"
            f"    return np.sum(batched({params}))\n")
    return file_backed(text, {"batched": batched}, "total")


# ---------------------------------------------------------------- 1. numpy reading a list

def sum_list(a, b):
    return np.sum([a, b])


def mean_list(a, b):
    return np.mean([a, b])


def max_list(a, b):
    return np.max([a, b])


def min_list_axis(a, b):
    return np.sum(np.min([a, b * a], axis=1))


def prod_list(a, b):
    return np.prod([a, b])


def sum_comprehension(a, b):
    return np.sum([i * 3 for i in a])


def sum_axis0(a, b):
    return np.sum(np.sum([a, b], axis=0) ** 2)


def norm_list(a, b):
    return np.linalg.norm([a, b])


def tuple_sum(a, b):
    return np.sum((a, b))


def var_list(a, b):
    return np.var([a, b])


def exp_of_list(a, b):
    return np.sum(np.exp([a[0], b[1]]))


def cumsum_list(a, b):
    return np.sum(np.cumsum([a[0], b[0], a[1]]) ** 2)


def add_lists(a, b):
    return np.sum(np.add([a[0], b[1]], [1.0, 2.0]) ** 2)


def appended_then_reduced(a, b):
    xs = []
    for i in range(3):
        xs.append(a * i + b)
    return np.max(xs) + np.sum(xs)


def list_minus_mean(a, b):
    xs = [a, b]
    return np.sum((xs - np.mean(xs)) ** 2)


@pytest.mark.parametrize("f", [sum_list, mean_list, max_list, min_list_axis, prod_list,
                               sum_comprehension, sum_axis0, norm_list, tuple_sum, var_list,
                               exp_of_list, cumsum_list, add_lists, appended_then_reduced,
                               list_minus_mean])
def test_numpy_of_a_list_of_batched_arrays(f):
    a, b = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    check_all(f, (a, b))


def sum_with_constant(a, b):
    return np.sum([1.0, a])


def max_with_constant(a, b):
    return np.max([a, b, 0.3])


def std_with_constant(a, b):
    return np.std([a, b, 1.0])


def sorted_list(a, b):
    return np.sum(np.sort([a, b, 0.2]) * np.arange(3.0))


def nested_concatenate(a, b):
    return np.sum(np.concatenate([[a, b], [1.0]]) ** 2)


def mean_of_nested(a, b):
    return np.sum(np.mean([[a, b], [b, 1.0]], axis=0) ** 2)


def tile_list(a, b):
    return np.sum(np.tile([a, b], 2) * np.arange(4.0))


def comprehension_of_powers(a, b):
    return np.mean([a ** i for i in range(1, 4)]) + b


@pytest.mark.parametrize("f", [sum_with_constant, max_with_constant, std_with_constant,
                               sorted_list, nested_concatenate, mean_of_nested, tile_list,
                               comprehension_of_powers, norm_list, sum_list])
def test_numpy_of_a_list_of_batched_numbers(f):
    a, b = RNG.normal(size=4), RNG.normal(size=4)
    modes = ("vmap", "vmap_grad", "grad_vmap", "hessian")
    if f is norm_list:
        modes = modes[:3]        # the hessian: test_norm_of_a_list_per_example_hessian
    check_all(f, (a, b), modes=modes)


@pytest.mark.xfail(strict=True, raises=ValueError,
                   reason="np.linalg.norm's rules for every ord (issue 13) broke vmap of the "
                          "Hessian of the norm of a list of numbers: rt.align of the list's "
                          "tangent fails to broadcast under vmap of vmap (a crash, no wrong "
                          "value); the norm of np.array([a, b]) works")
def test_norm_of_a_list_per_example_hessian():
    a, b = RNG.normal(size=4), RNG.normal(size=4)
    check_all(norm_list, (a, b), modes=("hessian",))


def test_list_reduction_source_makes_one_array():
    src = tp.vmap(sum_list).source
    assert "rt.lanes_array(list_, (True, True), batch_size)" in src


# ---------------------------------------------------------------- 2. constant shapes in branches

def reshape_in_branch(x):
    if np.sum(x) > 0:
        y = np.reshape(x, (4, 3)) * 2.0
    else:
        y = np.reshape(x, (4, 3))
    return np.sum(y ** 2 * np.arange(3.0))


def shapes_in_branch(x):
    if x[0] > 0:
        t = np.tile(x[:2], (3, 1))
        z = np.zeros((3, 2)) + np.ones((3, 2)) + np.full((3, 2), 0.5)
        r = np.roll(x, 2)[:2] + np.broadcast_to(x[:2], (3, 2))
        return np.sum(t * z * r)
    return np.sum(x)


def shapes_in_batched_loop(x):
    s = 0.0
    for i in range(3):
        if x[i] > 0:
            s = s + np.sum(np.reshape(x, (4, 3)) ** 2)
    return s


@pytest.mark.parametrize("f", [reshape_in_branch, shapes_in_branch, shapes_in_batched_loop])
def test_constant_shapes_under_a_batched_condition(f):
    x = RNG.normal(size=(5, 12))
    x[::2, 0] = np.abs(x[::2, 0])
    check_all(f, (x,), modes=("vmap", "vmap_grad", "grad_vmap", "hessian"))


# ---------------------------------------------------------------- 3. generated code, recursion

def rec(u, n):
    if n == 0:
        return np.sum(u ** 2)
    return rec(u[1:] * 1.0, n - 1) + np.sum(u)


def recursive_slices(x):
    return rec(x, 2)


def rec2(u, n):
    if n <= 0:
        return np.sum(np.sin(u))
    v = u[:-1] * u[1:]
    return rec2(v, n - 1) * 0.5 + u[0]


def recursive_products(x):
    return rec2(x, 3)


@pytest.mark.parametrize("f", [recursive_slices, recursive_products])
def test_recursive_helper_that_slices(f):
    x = RNG.normal(size=(4, 5))
    check_all(f, (x,), modes=("vmap", "vmap_grad", "grad_vmap", "hessian"))


def _same_padding(x_shape, kernel_shape):
    pr, pc = (kernel_shape[0] - 1) // 2, (kernel_shape[1] - 1) // 2
    return (pr, pr, pc, pc)


def _pad2d(X, pad, kernel_shape=None):
    """numpy-ml's pad2D as written: `pad` an int, a 4-tuple or "same" (which recurses with
    the widths it works out), returned with the padded array."""
    p = pad
    if isinstance(p, int):
        p = (p, p, p, p)
    if isinstance(p, tuple):
        X_pad = np.pad(X, ((0, 0), (p[0], p[1]), (p[2], p[3]), (0, 0)), mode="constant",
                       constant_values=0)
    if p == "same" and kernel_shape:
        p = _same_padding(X.shape, kernel_shape)
        X_pad, p = _pad2d(X, p)
    return X_pad, p


def padded_energy(X):
    X_pad, p = _pad2d(X, "same", (3, 5))
    return np.sum(X_pad[:, p[0]:, p[2]:] ** 2 * np.cos(X_pad[:, p[0]:, p[2]:]))


def _wrapped(x, p, n):
    if n == 0:
        return np.sum(x * len(p)) + np.sum(x) ** 2
    return _wrapped(np.sin(x) * 2.0, (p, p, p, n), n - 1)


def wrapping_recursion(x):
    return _wrapped(x, (1, 2), 3)


def _even(x, n, tag):
    if n == 0:
        return x, tag
    return _odd(x * 1.5, n - 1, tag)


def _odd(x, n, tag):
    if n == 0:
        return -x, tag
    out, t = _even(np.sin(x), n - 1, tag + 1)
    return out, t


def mutual_recursion_with_a_counter(x):
    out, t = _even(x, 5, 0)
    if t == 2:                   # the counter is the same for every example
        return np.sum(out ** 2)
    return np.sum(out)


@pytest.mark.parametrize("f", [padded_energy, wrapping_recursion,
                               mutual_recursion_with_a_counter])
def test_recursion_whose_arguments_nest_or_return_unbatched_parts(f):
    """Generating these never finished: `p = (p, p, p, p)` nested once more on every visit
    of the analysis (4**12 leaves before it was cut), and each recursive call asked for a
    variant nested once more. The widths pad2D returns with the padded array are the same
    for every example; the recursive variant had batched them, and `p == "same"` then
    differed between examples."""
    x = RNG.normal(size=(3, 2, 4, 5, 2)) if f is padded_energy else RNG.normal(size=(3, 4))
    check_all(f, (x,))


def _gate(h, b):
    N, H = h.shape
    a = np.concatenate([h, h * 0.5], axis=1) + b
    return np.tanh(a[:, H:]) + np.sin(a[:, :H])


def gates_in_a_loop(h, b):
    # cs231n's lstm_step_forward slices its gates by H of `N, H = prev_h.shape`
    for _ in range(2):
        h = _gate(h, b)
    return np.sum(h ** 2)


def test_slice_bounds_from_a_shape_saved_by_a_derivative_in_a_loop():
    """vmap(grad) refused: the saved values of each call in the loop are pushed on one
    stack, batched as a whole, so the backward pass read H as batched ("a slice cannot
    be batched"); its bound is checked to be the same in every example when it runs."""
    hs, bs = RNG.normal(size=(3, 2, 2)), RNG.normal(size=(3, 4))
    check_all(gates_in_a_loop, (hs, bs))
    check_all(gates_in_a_loop, (hs, bs[0]), in_axes=(0, None))
    with pytest.raises(tp.TransformError, match="differs between examples"):
        tp.vmap(lambda h, k: np.sum(np.tanh(h)[:, k:]))(hs, np.array([0, 1, 0]))


def _rnn_step(x, h, b):
    nh = np.tanh(x + h + b)
    cache = (nh, x)
    return nh, cache


def _rnn_forward(x, b):
    # cs231n's rnn_forward: writes each step into h, keeps a list of per-step caches
    N, T = x.shape
    h = np.zeros((N, T))
    nh, c = _rnn_step(x[:, 0], 0.0, b)
    h[:, 0] = nh
    cache = [c]
    for i in range(T - 1):
        nh, c = _rnn_step(x[:, i + 1], nh, b)
        h[:, i + 1] = nh
        cache.append(c)
    return h, cache


def rnn_energy(x, b):
    h, _ = _rnn_forward(x, b)
    return np.sum(h * h * np.cos(h))


def test_hessian_through_a_list_of_caches_appended_in_a_loop():
    """hessian refused in its own generated code: vmap's broadcast of `[c_dot]` was read
    as the items it holds, so appending to it seemed to write into the stack that also
    held c_dot ("writing into 'cache_dot' here also changes 'c_stack_dot'")."""
    x, b = RNG.normal(size=(2, 3)), RNG.normal(size=2)
    H = tp.hessian(rnn_energy, argnums=1)(x, b)
    grad, eps = tp.grad(rnn_energy, argnums=1), 1e-6
    numeric = np.stack([(grad(x, b + eps * e) - grad(x, b - eps * e)) / (2 * eps)
                        for e in np.eye(2)], axis=1)
    np.testing.assert_allclose(H, numeric, rtol=1e-6, atol=1e-8)
    check_grads(rnn_energy, (x, b), order=2, modes=("rev", "fwd"))


def test_hessian_of_recursion_checks_out_axes_none_at_run_time():
    """jacfwd's vmap returns the primal output once (out_axes=None); a recursive variant's
    results are batched throughout, so the vmap checks the examples agree when it runs."""
    f = tp.vmap(lambda_free_scale, in_axes=(0, None), out_axes=None)
    with pytest.raises(tp.TransformError, match="out_axes=None says output"):
        f(RNG.normal(size=3), 2.0)


def lambda_free_scale(x, c):
    return x * c


# ---------------------------------------------------------------- branches that share a name

def other_path_reads_old_value(x):
    y = x
    if x > 0:
        y = y * 2
        r = 1.0
    else:
        r = y + 1
    return r


def test_other_path_sees_the_value_from_before_the_branch():
    x = np.array([1.0, -1.0, 2.0, -3.0])
    close(tp.vmap(other_path_reads_old_value)(x), loop(other_path_reads_old_value, (x,)))


def writes_in_branch_in_loop(x):
    y = np.zeros(5)
    for i in range(5):
        if x[i] > 0:
            y[i] = x[i] ** 2
        else:
            y[i] = np.cos(x[i])
    return np.sum(y * x)


def test_adjoint_cleared_on_one_path_is_not_cleared_on_the_other():
    x = RNG.normal(size=(6, 5))
    check_all(writes_in_branch_in_loop, (x,), modes=("vmap", "vmap_grad", "grad_vmap",
                                                     "hessian"))


# ---------------------------------------------------------------- more programs

def concat_in_loop(x):
    y = x[:1]
    for i in range(1, 3):
        y = np.concatenate([y, x[i:i + 1] * y[-1:]])
    return np.sum(y ** 2)


def mean_and_max_of_comprehension(x):
    parts = [x[i] * x[i] for i in range(len(x))]
    return np.mean(parts) + np.max(parts)


def outer_and_dot(x):
    return np.sum(np.sin(np.outer(x, x)) + np.cos(np.dot(x, x)))


def solve_outer(x):
    m = np.outer(x, x) + np.eye(5)
    return np.sum(np.linalg.solve(m, x))


def zeros_like_shape(x):
    y = np.zeros(x.shape)
    for i in range(len(x)):
        y[i] = x[i] ** 2
    return np.sum(y * x)


@pytest.mark.parametrize("f", [concat_in_loop, mean_and_max_of_comprehension, outer_and_dot,
                               solve_outer, zeros_like_shape])
def test_programs_under_every_composition(f):
    x = RNG.normal(size=(4, 5))
    check_all(f, (x,), modes=("vmap", "vmap_grad", "grad_vmap", "hessian"))


def early_return_of_growing_slice(x):
    for i in range(len(x)):
        if x[i] > 1.0:
            return np.sum(x[:i] ** 2) + x[i]
    return np.sum(x)


def test_a_shape_that_differs_between_examples_is_an_error_not_a_crash():
    x = np.array([[0.5, 2.0, 0.1], [3.0, 0.2, 0.1], [0.1, 0.2, 0.3]])
    close(tp.vmap(early_return_of_growing_slice)(x), loop(early_return_of_growing_slice, (x,)))
    with pytest.raises(tp.TransformError, match="different shape in different examples"):
        tp.vmap(tp.grad(early_return_of_growing_slice))(x)


# ---------------------------------------------------------------- 5. Jacobians of Jacobians

def sin_outer_cos_dot(x):
    return np.sin(np.outer(x, x)) + np.cos(np.dot(x, x))


def outer_plus_element(x):
    return np.outer(x, x) + x[0]


def _fd_jacobian(g, x, eps=1e-6):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        cols.append((g(x + e) - g(x - e)) / (2 * eps))
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("f", [sin_outer_cos_dot, outer_plus_element])
@pytest.mark.parametrize("outer", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("inner", ["jacrev", "jacfwd"])
def test_jacobian_of_jacobian_of_non_scalar(f, outer, inner):
    x = RNG.normal(size=3)
    jac = getattr(tp, inner)(f)
    got = getattr(tp, outer)(jac)(x)
    close(got, _fd_jacobian(jac, x), 1e-5)
    assert got.shape == (3, 3, 3, 3)


A = np.arange(9.0).reshape(3, 3) + np.eye(3)


def matmul_reversed(x):
    return A @ x[::-1]


def dot_reversed(x):
    return np.dot(A, x[::-1])


@pytest.mark.parametrize("f", [matmul_reversed, dot_reversed])
def test_jacfwd_through_a_view_of_the_basis(f):
    """The identity basis of jacfwd multiplies as its other factor; a reversed view of it
    is no identity."""
    close(tp.jacfwd(f)(np.ones(3)), A[:, ::-1])


def test_hessian_of_concatenate_with_the_basis():
    x = RNG.normal(size=5)
    close(tp.hessian(concat_in_loop)(x), _fd_jacobian(tp.grad(concat_in_loop), x), 1e-5)


# ---------------------------------------------------------------- per-example indices, twice
# (vmap of a Hessian: the inner vmaps' index helpers get one index per outer example)

def gather_argmax(x):
    k = np.argmax(x)
    return x[k] ** 2 + np.sum(x)


def while_index(x):
    i = 0
    while i < 5 and x[i] < 0.5:
        i += 1
    return x[i] * np.sum(x ** 2)


def write_at_argmin(x):
    y = np.zeros(6)
    k = np.argmin(x)
    y[k] = x[k] ** 2
    return np.sum(y * x)


def break_on_total(x):
    s = 0.0
    i = 0
    while i < 6:
        s = s + x[i] ** 2
        if s > 1.0:
            break
        i += 1
    return s


def accumulate_in_place(x):
    y = x.copy()
    for i in range(1, 6):
        if y[i - 1] > 0:
            y[i] = y[i] + y[i - 1] * 0.5
    return np.sum(y ** 2)


def rb(x, i):
    if i >= 5:
        return x[i]
    if x[i] > 0:
        return x[i] * rb(x, i + 1)
    return rb(x, i + 1) + x[i]


def recursive_index(x):
    return rb(x, 0)


@pytest.mark.parametrize("f", [gather_argmax, while_index, write_at_argmin, break_on_total,
                               accumulate_in_place, recursive_index])
def test_per_example_indices_under_vmap_of_hessian(f):
    x = RNG.normal(size=(4, 6))
    check_all(f, (x,), modes=("vmap", "vmap_grad", "grad_vmap", "hessian"))


# ---------------------------------------------------------------- joining paths

def scalar_or_vector(x):
    if x[0] > 0:
        y = 1.0
    else:
        y = x
    return np.sum(y)


def test_paths_giving_different_shapes_are_an_error_not_a_broadcast():
    """With 3 examples of 3 elements, np.where would broadcast the number to a row."""
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 2.0, 3.0], [2.0, 1.0, 0.0]])
    with pytest.raises(tp.TransformError, match=r"(?s)line \d+, in scalar_or_vector.*"
                                                r"different shape in different examples"):
        tp.vmap(scalar_or_vector)(x)


def pick_parameter(p, x):
    s = 0.0
    for i in range(2):
        if x[i] > 0:
            s = s + p[0] * x[i]
        else:
            s = s + p[1] * x[i]
    return s


def test_unset_slot_of_a_container_adjoint_is_zero_where_paths_join():
    """The adjoint of `p` is (d0, None) on one path and (None, d1) on the other: the
    examples of each path get zeros in the other's slot."""
    p = (1.5, 2.5)
    x = np.array([[1.0, -2.0], [-1.0, -1.0], [2.0, 3.0]])
    g = tp.grad(pick_parameter)
    close(tp.vmap(g, in_axes=(None, 0))(p, x), loop(g, (p, x), (None, 0)))


def rl(v, n):
    if n == 0:
        return [v]
    return rl(v * 2.0, n - 1) + [v]


def recursive_list(x):
    return np.sum(np.stack(rl(x, 2)) ** 2)


def cumsum_squares(x):
    return np.sum(np.cumsum(x) ** 2)


@pytest.mark.parametrize("f", [recursive_list, cumsum_squares])
def test_more_programs_under_every_composition(f):
    x = RNG.normal(size=(4, 6))
    check_all(f, (x,), modes=("vmap", "vmap_grad", "grad_vmap", "hessian"))


# ---------------------------------------------------------------- 4. messages at the user's line

def append_in_branch(x):
    out = []
    for i in range(3):
        if x[i] > 0:
            out.append(x[i] ** 2)
    return np.sum(np.array(out + [0.0]))


def stepped_loop(x):
    n = int(x[0] > 0) * 4 + 2
    s = 0.0
    for i in range(0, n, 2):
        s = s + x[i]
    return s


def shape_from_a_value(x):
    n = int(x[0] > 0) + 2
    return np.sum(np.zeros(n) + x[0] ** 2)


@pytest.mark.parametrize("f,line", [(append_in_branch, "out.append(x[i] ** 2)"),
                                    (stepped_loop, "for i in range(0, n, 2):"),
                                    (shape_from_a_value, "np.zeros(n)")])
@pytest.mark.parametrize("how", ["vmap", "vmap_grad", "vmap_hessian"])
def test_refusals_name_the_users_line(f, line, how):
    x = np.array([[1.0, -2.0, 3.0, 0.5, 0.1, 0.2], [-1.0, 2.0, -3.0, 0.5, 0.1, 0.2]])
    t = {"vmap": lambda: tp.vmap(f), "vmap_grad": lambda: tp.vmap(tp.grad(f)),
         "vmap_hessian": lambda: tp.vmap(tp.hessian(f))}[how]()
    with pytest.raises(tp.TransformError) as info:
        t(x)
    first = str(info.value).splitlines()
    assert first[0].startswith('File "') and "test_vmap_regressions.py" in first[0]
    assert f", in {f.__name__}" in first[0] and line in first[1]


def rows_appended(x):
    rows = [x]
    for i in range(2):
        rows.append(np.roll(rows[-1], 1) * x)
    return np.sum(np.stack(rows) ** 2)


def test_grad_of_vmap_of_a_list_that_grew():
    """The adjoint of a list made batched and then appended to had its spec cut to the
    list's first length."""
    check_all(rows_appended, (RNG.normal(size=(4, 6)),),
              modes=("vmap", "vmap_grad", "grad_vmap", "hessian"))


def sum_of_list_argument(xs):
    return np.sum(xs)


def max_of_list_argument(xs):
    return np.max(xs, axis=0)


@pytest.mark.parametrize("f", [sum_of_list_argument, max_of_list_argument])
def test_list_argument_read_as_an_array(f):
    xs = [RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))]
    close(tp.vmap(f)(xs), loop(f, (xs,)))


def loop_or_one_step(x):
    if x[0] < 0.3:
        while np.sum(x * x) > 0.05:
            x = 0.7 * np.sin(x)
    else:
        x = np.tanh(x)
    return np.sum(x)


def test_paths_that_pop_the_same_stack_pop_in_reverse_order():
    """Both paths of the forward branch save `x` on one stack, the `else` path last; under
    vmap both run, so the backward `else` path must pop first (random program, seed 7)."""
    x = np.array([[0.7, -0.1, -0.0, -1.2], [-0.4, 0.6, -0.1, 0.1], [-0.2, 0.9, -0.0, -1.8]])
    check_all(loop_or_one_step, (x,), modes=("vmap", "vmap_grad", "grad_vmap", "hessian"))


def return_in_nested_branch(x):
    if x[0] > 0.0:
        return -x[1]
    s5 = x[1]
    if s5 < 0.1:
        u3 = np.exp(x)
    elif x[2] > -0.6:
        return s5
    return np.sum(u3)


def test_flag_set_on_one_nested_path_is_merged():
    """`returned` is set by the first path and read, after a nested branch that sets it on
    one of its paths, by the second: the second path must start from the value before the
    first (random program, seed 1040)."""
    x = np.array([[0.5, 0.1, -0.9, -1.6], [0.5, 0.0, 0.5, 0.3], [-0.7, -0.7, 0.4, -0.3]])
    check_all(return_in_nested_branch, (x,), modes=("vmap", "vmap_grad", "grad_vmap"))


def loop_over_list_in_branch(x, ws):
    for i1 in range(3):
        x = np.tanh(x)
    if np.log(1.5 + np.tanh(x)) > 0.1:
        for W in ws:
            pass
        return np.log(1.0 + np.square(np.max(x * np.linspace(-0.6, 0.8, 4).reshape(2, 2))))
    h2 = x * np.ones(3)
    for W in ws:
        h2 = np.tanh(h2 @ W) + 0.1 * np.sum(h2)
    return np.sum(h2)


def test_loop_over_a_shared_list_in_a_branch():
    """`n = len(ws)` bound in a branch is the same in every example that binds it: the loop
    over `ws` stays one loop, not one per example (random program, seed 1036)."""
    ws = [np.array([[-0.5, 1.0], [1.6, -0.4], [1.6, 0.3]]), np.array([[1.0, -0.2], [-0.6, -0.3]])]
    x = np.array([1.2, -0.5, -0.3])
    check_all(loop_over_list_in_branch, (x, ws), in_axes=(0, None),
              modes=("vmap", "vmap_grad"))


def write_after_break(x, y):
    x = np.tanh(x)
    if y.mean() < 0.3:
        for row1 in y:
            break
            x[1:] = x[0:3]
    return np.sum(x)


def test_break_is_not_removed_as_dead_code():
    """The clean-up of generated code dropped a `break` (it defines nothing), so the write
    after it ran (random program, seed 2025)."""
    x, y = RNG.normal(size=(3, 4, 4)), RNG.normal(size=(3, 3, 3))
    check_all(write_after_break, (x, y), modes=("vmap",))


def write_into_empty_slice(x, y):
    buf1 = np.zeros((1, 2))
    buf1[1:] += y @ x
    return np.mean(y * y) + np.sum(buf1) + np.sum(np.sin(x) * y[0])


def test_hessian_through_an_element_of_a_partly_batched_tuple():
    """Forward mode spells `cotangents[0]` rt.getitem(cotangents_dot, 0); under jacfwd's
    vmap that element was taken as batched when only the other one is (random program,
    seed 2143)."""
    x, y = np.array([1.1, -0.8]), np.array([[-0.2, -1.0], [0.3, 0.1]])
    g = tp.grad(write_into_empty_slice)
    close(tp.hessian(write_into_empty_slice)(x, y),
          _fd_jacobian(lambda v: g(v, y), x), 1e-6)


def _gather_outer(x):
    return tp.all_gather(x, "i")


def _scatter_outer(x):
    return tp.psum_scatter(x, "i")


def test_a_collective_over_an_outer_axis_with_its_default_axis():
    """Inside vmap over "j", all_gather/psum_scatter over the enclosing vmap's "i" with
    axis (scatter_dimension) left at its default 0: the axis must move past the inner
    batch axis as a given one does. It stayed, and the result came out transposed, of
    shape (2, 2, 3, 4) for (2, 3, 2, 4) (found by the pmap work between processes)."""
    x = np.random.default_rng().standard_normal((2, 3, 4))
    gathered = tp.vmap(lambda v: tp.vmap(_gather_outer, axis_name="j")(v), axis_name="i")(x)
    want = np.stack([np.stack([x[:, j] for j in range(3)]) for i in range(2)])
    np.testing.assert_array_equal(gathered, want)
    y = np.random.default_rng().standard_normal((2, 3, 2, 5))
    scattered = tp.vmap(lambda v: tp.vmap(_scatter_outer, axis_name="j")(v), axis_name="i")(y)
    total = np.sum(y, axis=0)                                  # (3, 2, 5): per j, per block
    want = np.stack([np.stack([total[j, i] for j in range(3)]) for i in range(2)])
    np.testing.assert_allclose(scattered, want, rtol=1e-14)


def written_in_both_paths(x, w):
    u = np.stack([x * w, x])
    s = 0.0
    if np.mean(u) > 0.1:
        u *= 2.0
        s = np.sum(x)
    else:
        u[:1] = np.sin(u[:1])
    return np.sum(u * u) + s


def test_grad_of_vmap_with_in_place_writes_under_a_batched_if():
    """grad of vmapped code whose batched `if` writes in place on the `else` path: vmap
    gave that path the array the `then` path's result was still to be chosen from
    (right under vmap, masked; refused by grad's aliasing check). Against a loop."""
    x = RNG.normal(size=(6, 3))
    x[0] = np.abs(x[0]) + 0.5             # both paths taken
    x[1] = -np.abs(x[1]) - 0.5
    w = RNG.normal(size=3)
    batched = tp.vmap(written_in_both_paths, in_axes=(0, None))
    np.testing.assert_allclose(batched(x, w), [written_in_both_paths(e, w) for e in x],
                               rtol=1e-12)
    gx, gw = tp.grad(lambda x, w: np.sum(batched(x, w)), argnums=(0, 1))(x, w)
    per_example = [tp.grad(written_in_both_paths, argnums=(0, 1))(e, w) for e in x]
    np.testing.assert_allclose(gx, [g[0] for g in per_example], rtol=1e-10)
    np.testing.assert_allclose(gw, np.sum([g[1] for g in per_example], axis=0), rtol=1e-10)


INNER_COLLECTIVES = {
    "all_gather": lambda v: tp.all_gather(v, "i"),
    "all_gather axis 1": lambda v: tp.all_gather(v, "i", axis=1),
    "all_gather axis -1": lambda v: tp.all_gather(v, "i", axis=-1),
    "all_gather tiled": lambda v: tp.all_gather(v, "i", tiled=True),
    "all_gather tiled axis 1": lambda v: tp.all_gather(v, "i", axis=1, tiled=True),
    "psum_scatter": lambda v: tp.psum_scatter(v, "i"),
    "psum_scatter dimension 1": lambda v: tp.psum_scatter(v.T, "i", scatter_dimension=1),
    "psum_scatter tiled": lambda v: tp.psum_scatter(v, "i", tiled=True),
    "ppermute": lambda v: tp.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)]),
    "ppermute, some get zeros": lambda v: tp.ppermute(v, "i", [(2, 0)]),
    "all_to_all": lambda v: tp.all_to_all(v, "i", 0, 1),
    "all_to_all tiled": lambda v: tp.all_to_all(v, "i", 0, 0, tiled=True),
}


def _inner_collective(name):
    collective = INNER_COLLECTIVES[name]

    def f(x, w):
        return np.sin(collective(x * w)) * 2.0
    return f


@pytest.mark.parametrize("name", sorted(INNER_COLLECTIVES))
def test_vmap_of_vmap_over_a_collective_of_the_inner_axis(name):
    """vmap of a vmapped function whose collective names the inner axis (the lane helpers
    take the outer axes in front): against a loop over the outer examples, values and
    gradients, and pmap of that vmap and vmap of that pmap alike."""
    f = _inner_collective(name)
    x, w = RNG.normal(size=(2, 3, 3, 2)), RNG.normal(size=2)
    inner = tp.vmap(f, in_axes=(0, None), axis_name="i")
    outer = tp.vmap(inner, in_axes=(0, None))
    expected = np.stack([inner(e, w) for e in x])
    np.testing.assert_allclose(outer(x, w), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(tp.pmap(inner, in_axes=(0, None))(x, w)), expected,
                               rtol=1e-12, atol=1e-12)
    by_devices = tp.vmap(tp.pmap(f, "i", in_axes=(0, None)), in_axes=(0, None))
    np.testing.assert_allclose(np.asarray(by_devices(x, w)), expected, rtol=1e-12, atol=1e-12)
    weights = RNG.normal(size=expected.shape)
    gx, gw = tp.grad(lambda x, w: np.sum(outer(x, w) * weights), argnums=(0, 1))(x, w)
    per_example = [tp.grad(lambda e, w, k=k: np.sum(inner(e, w) * weights[k]),
                           argnums=(0, 1))(x[k], w) for k in range(2)]
    np.testing.assert_allclose(gx, [g[0] for g in per_example], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw, np.sum([g[1] for g in per_example], axis=0), rtol=1e-10,
                               atol=1e-12)
    direction = RNG.normal(size=x.shape)
    _, tangent = tp.jvp(lambda x: outer(x, w), (x,), (direction,))
    np.testing.assert_allclose(
        tangent, np.stack([tp.jvp(lambda e: inner(e, w), (x[k],), (direction[k],))[1]
                           for k in range(2)]), rtol=1e-10, atol=1e-12)


def written_in_a_masked_loop(x):
    u = np.sin(x[:3] * 1.5)
    if np.sum(x) > 0.1:
        k = 0
        while k < 2:
            u[1:] = np.cos(u[1:] + x[0])
            k += 1
    return np.mean(u * u)


def test_vmap_of_vmap_and_grad_of_vmap_with_writes_in_a_masked_path():
    """Under a batched `if`, a loop writes in place into a value saved for the merge: vmap
    kept two names of one array (right when masked, refused when vmap's code was itself
    transformed again: vmap of vmap, grad of vmap; found by the generator's vmap(vmap)
    check)."""
    x = RNG.normal(size=(2, 5, 4))
    x[:, 0] = np.abs(x[:, 0]) + 1.0       # both paths taken in each batch
    x[:, 1] = -np.abs(x[:, 1]) - 1.0
    inner = tp.vmap(written_in_a_masked_loop)
    expected = np.array([[written_in_a_masked_loop(e) for e in batch] for batch in x])
    np.testing.assert_allclose(tp.vmap(inner)(x), expected, rtol=1e-12)
    got = tp.grad(lambda x: np.sum(inner(x)))(x[0])
    np.testing.assert_allclose(got, [tp.grad(written_in_a_masked_loop)(e) for e in x[0]],
                               rtol=1e-10)


def layers_until_large(x, ws):
    h = np.exp(x * np.linspace(0.6, 0.8, 2))
    for W in ws:
        h = h @ W
        x = np.mean(h)
        if np.sum(h) > 0.3:
            break
    return x * np.sum(np.tanh(h))


@pytest.mark.parametrize("leave_at", [0, 1, None])
def test_loop_whose_carried_value_changes_shape_with_a_batched_break(leave_at):
    """grad(vmap) and jvp(vmap) of a loop whose carried value changes shape (2 -> 4 -> 2
    columns) and every example breaks at the same trip: the masking select took one whole
    branch, and the adjoint of the other got zeros shaped like the value it was given, not
    like its own branch (a broadcast error, seed 1692 of the generator). Against a loop."""
    ws = [RNG.normal(size=(2, 4)), RNG.normal(size=(4, 2)), RNG.normal(size=(2, 3))]
    if leave_at is not None:      # make sum(h) > 0.3 first hold at trip `leave_at`
        scale = [-1.0, -1.0, -1.0]
        scale[leave_at] = 1.0
        ws = [np.abs(W) * s for W, s in zip(ws, scale)]
    x = RNG.uniform(0.2, 1.0, size=4)
    batched = tp.vmap(layers_until_large, in_axes=(0, None))
    loop = [layers_until_large(e, ws) for e in x]
    np.testing.assert_allclose(batched(x, ws), loop, rtol=1e-12)
    gx, gws = tp.grad(lambda x, ws: np.sum(batched(x, ws)), argnums=(0, 1))(x, ws)
    per_example = [tp.grad(layers_until_large, argnums=(0, 1))(e, ws) for e in x]
    np.testing.assert_allclose(gx, [g[0] for g in per_example], rtol=1e-10)
    for i, W in enumerate(ws):
        np.testing.assert_allclose(gws[i], sum(g[1][i] for g in per_example), rtol=1e-10,
                                   atol=1e-14)
    eps = 1e-6
    fd = (np.sum(batched(x + eps, ws)) - np.sum(batched(x - eps, ws))) / (2 * eps)
    np.testing.assert_allclose(np.sum(gx), fd, rtol=1e-6)
    dx = RNG.normal(size=4)
    dws = [RNG.normal(size=W.shape) for W in ws]
    _, tangent = tp.jvp(batched, (x, ws), (dx, dws))
    per_example = [tp.jvp(layers_until_large, (e, ws), (d, dws))[1] for e, d in zip(x, dx)]
    np.testing.assert_allclose(tangent, per_example, rtol=1e-10)


# ---------------------------------------------------------------- writes through a boolean
# mask that differs between examples: `y[mask] = v` writes in place, whatever each example's
# count (reading y[mask] gives each example its own selection: tests/test_vmap_ragged.py)

def mask_clip(y):
    y = y * 1.0
    y[y < 0] = 0.0
    return np.sum(y ** 2)


def mask_fill_param(y, t):
    z = np.sin(y)
    z[y > 0.3] = t * 2.0
    return np.sum(z * y)


def mask_rows(m, row):
    out = m * 1.0
    out[np.sum(m, axis=1) > 0] = row        # a mask over rows, a value per column
    return np.sum(out * m)


def mask_two_d(m, t):
    out = np.cos(m)
    out[m > 0.1] = t
    return np.sum(out ** 2)


def mask_in_branch(y, t):
    z = y * 1.0
    if np.sum(y) > 0:
        z[y < 0] = t
    return np.sum(z * y)


def mask_in_loop(y, t):
    z = y * 1.0
    for k in range(3):
        z[z > t] = z[0] * 0.5 + t     # each example's mask changes with each trip
    return np.sum(z ** 2)


def mask_count_one(y, t):
    z = y * 1.0
    z[y < 0] = np.array([t])           # one value per selected element, broadcast
    return np.sum(z * y)


MASK_CASES = [(mask_clip, lambda: (RNG.normal(size=(5, 7)),), 0),
              (mask_fill_param, lambda: (RNG.normal(size=(5, 7)), RNG.normal(size=5)), 0),
              (mask_fill_param, lambda: (RNG.normal(size=(5, 7)), 0.7), (0, None)),
              (mask_fill_param, lambda: (RNG.normal(size=7), RNG.normal(size=5)), (None, 0)),
              (mask_rows, lambda: (RNG.normal(size=(4, 3, 6)), RNG.normal(size=(4, 6))), 0),
              (mask_two_d, lambda: (RNG.normal(size=(4, 3, 6)), RNG.normal(size=4)), 0),
              (mask_in_branch, lambda: (RNG.normal(size=(6, 5)), RNG.normal(size=6)), 0),
              (mask_in_loop, lambda: (RNG.normal(size=(6, 5)), RNG.normal(size=6)), 0),
              (mask_count_one, lambda: (RNG.normal(size=(5, 7)), RNG.normal(size=5)), 0)]


@pytest.mark.parametrize("f, make, in_axes", MASK_CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(MASK_CASES)])
def test_writes_through_a_per_example_boolean_mask(f, make, in_axes):
    args = make()
    # (grad of the summed batch adds up an unbatched argument's per-example gradients)
    check_all(f, args, in_axes, ("vmap", "vmap_grad") + (() if in_axes == (None, 0) else
                                                         ("grad_vmap",)))
    close(tp.jit(tp.vmap(f, in_axes=in_axes))(*args), loop(f, args, in_axes))
    every = tp.grad(f, argnums=tuple(range(len(args))))      # the value written, too
    close(tp.vmap(every, in_axes=in_axes)(*args), loop(every, args, in_axes))
    tangents = tuple(RNG.normal(size=np.shape(a)) for a in args)
    axes = in_axes if in_axes == 0 else tuple(in_axes) * 2
    if len(args) == 1:
        def tangent_out(a, da):
            return tp.jvp(f, (a,), (da,))[1]
    else:
        def tangent_out(a, b, da, db):
            return tp.jvp(f, (a, b), (da, db))[1]
    close(tp.vmap(tangent_out, in_axes=axes)(*args, *tangents),
          loop(tangent_out, args + tangents, axes))


def test_a_per_example_mask_writing_a_value_per_selected_element_is_refused():
    def f(y):
        z = y * 1.0
        z[y < 0] = y[:2]              # fits only an example that selects exactly two
        return z
    y = RNG.normal(size=(4, 6))
    with pytest.raises(tp.TransformError, match="number selected may differ"):
        tp.vmap(f)(y)


# ---------------------------------------------------------------- a list read at a negative
# index, under grad of vmap (JAX's test_hard_stuff3): the adjoint of `c[-1]` in vmapped code
# was placed at no item (`i == -1` never holds), so the gradient was zero.

def _last_of_concatenated(x):
    c = [x] + [3.0 * x, np.sin(x)]
    return c[-1] * c[-2] + np.sum(np.stack(c[1:]))


def test_grad_of_vmap_through_a_negative_index_and_a_slice_of_a_list():
    rng = np.random.default_rng(12)
    xs = rng.normal(size=4)
    expected = [tp.grad(_last_of_concatenated)(v) for v in xs]
    np.testing.assert_allclose(tp.grad(lambda v: np.sum(tp.vmap(_last_of_concatenated)(v)))(xs),
                               expected, rtol=1e-14)
    np.testing.assert_allclose(3.0 * np.sin(xs) + 3.0 * xs * np.cos(xs) + 3.0 + np.cos(xs),
                               expected, rtol=1e-14)


# ---------------------------------------------------------------- unpacking a batched array
# (JAX's testIssue489, `key, sub = random.split(key)` in a loop): `a, b = x` of a batched
# array unpacked the batch axis, silently wrong where the batch size equals the number of
# names (and a ValueError otherwise). Each example's items are its rows now.

def _unpacked_rows(x):
    a, b = x
    return a - 2.0 * np.sin(b)


def _pairs_in_a_loop(x):
    s = 0.0
    for a, b in x:
        s = s + a * b
    return s


def _draws_until(key):
    n = 0
    total = 0.0
    while n < 3:
        key, sub = tp.random.split(key)
        total = total + tp.random.normal(sub)
        n = n + 1
    return total


@pytest.mark.parametrize("batch", [2, 3])
def test_unpacking_a_batched_array_takes_each_examples_rows(batch):
    rng = np.random.default_rng(13)
    xs = rng.normal(size=(batch, 2, 3))
    loop = np.stack([_unpacked_rows(v) for v in xs])
    np.testing.assert_allclose(tp.vmap(_unpacked_rows)(xs), loop, rtol=1e-15)
    np.testing.assert_allclose(tp.jit(tp.vmap(_unpacked_rows))(xs), loop, rtol=1e-15)
    np.testing.assert_allclose(tp.vmap(_unpacked_rows, in_axes=1)(np.moveaxis(xs, 0, 1)), loop,
                               rtol=1e-15)
    np.testing.assert_allclose(tp.vmap(tp.vmap(_unpacked_rows))(np.stack([xs, 2 * xs])),
                               np.stack([loop, np.stack([_unpacked_rows(2 * v) for v in xs])]),
                               rtol=1e-15)
    summed = lambda v: np.sum(tp.vmap(_unpacked_rows)(v))     # noqa: E731
    np.testing.assert_allclose(tp.grad(summed)(xs), np.stack(
        [tp.grad(lambda v: np.sum(_unpacked_rows(v)))(v) for v in xs]), rtol=1e-15)
    np.testing.assert_allclose(tp.vmap(tp.grad(lambda v: np.sum(_unpacked_rows(v))))(xs),
                               tp.grad(summed)(xs), rtol=1e-15)
    pairs = rng.normal(size=(batch, 4, 2))
    np.testing.assert_allclose(tp.vmap(_pairs_in_a_loop)(pairs),
                               [_pairs_in_a_loop(v) for v in pairs], rtol=1e-14)
    with pytest.raises(ValueError, match="too many values to unpack"):
        tp.vmap(_unpacked_rows)(rng.normal(size=(batch, 3, 3)))


def test_keys_split_and_unpacked_in_a_loop_under_vmap():
    keys = tp.random.split(tp.random.PRNGKey(4), 6)
    np.testing.assert_allclose(tp.vmap(_draws_until)(keys), [_draws_until(k) for k in keys],
                               rtol=1e-15)


# ---------------------------------------------------------------- smaller findings of JAX's
# batching_test and api_test ports

def _largest_and_smallest(x):
    return max(x) * 2.0 + min([x[0], x[1] * 3.0])


def test_builtin_max_and_min_of_one_sequence():
    rng = np.random.default_rng(14)
    xs = rng.normal(size=(4, 3))
    np.testing.assert_allclose(tp.vmap(_largest_and_smallest)(xs),
                               [_largest_and_smallest(v) for v in xs], rtol=1e-15)
    x = xs[0]
    expected = np.zeros(3)
    expected[np.argmax(x)] += 2.0
    if x[0] <= 3.0 * x[1]:
        expected[0] += 1.0
    else:
        expected[1] += 3.0
    np.testing.assert_allclose(tp.grad(_largest_and_smallest)(x), expected, rtol=1e-15)


def test_numpy_reductions_given_to_vmap_directly():
    x = np.array([[0.0, 1.0], [0.0, 0.0], [2.0, 3.0]])
    for f in (np.any, np.all, np.argmax, np.round):
        np.testing.assert_array_equal(tp.vmap(f)(x), np.stack([f(v) for v in x]))


def test_out_axes_out_of_bounds_is_an_error():
    with pytest.raises(ValueError, match="out_axes=-4 is out of bounds"):
        tp.vmap(lambda y: y, out_axes=-4)(np.zeros((3, 4, 5)))
    assert tp.vmap(lambda y: y, out_axes=-1)(np.zeros((3, 4, 5))).shape == (4, 5, 3)


def test_none_in_a_vmapped_tree_is_a_node_without_leaves():
    p = {"a": np.arange(6.0).reshape(3, 2), "b": None}
    np.testing.assert_allclose(tp.vmap(lambda q: np.sum(q["a"] ** 2))(p), [1.0, 13.0, 41.0])
    g = tp.vmap(tp.grad(lambda q: np.sum(q["a"] ** 2)))(p)
    assert g["b"] is None
    np.testing.assert_allclose(g["a"], 2 * p["a"])


# ---------------------------------------------------------------- found by porting JAX's
# lax_control_flow_test (Python loops and branches under compositions)

def _squared(v):
    return v * v


def _until_three(val):
    while val < 3.0:
        val = _squared(val)
    return val


def _carried_pair(x):
    s = (x, 0.0)
    for _ in range(2):
        xx, y = s
        s = (xx, xx * xx + y)
    return np.sum(s[1])


def _pair_by_branch(x):
    if x < 3:
        return (x, x)
    return (2 * x, 4 * x)


def _product_of_pair_by_branch(x):
    a, b = _pair_by_branch(x)
    return a * b


def _early_exit(x):
    for _ in range(3):
        x = x * 2.0
        if x > 5.0:
            return x
    return -x


def _counted(a, n):
    i = 0
    while i < n and i < a.shape[0]:
        i += 1
    return i


def _passes_through(x, y):
    if x < 3:
        return x * 2, y
    return x * 3, y


def test_second_order_through_a_helper_loop_with_different_trip_counts():
    # the adjoint stack of the helper's calls was read through a copy in the trips of
    # some examples, so it was never popped: [24, 6] for [27, 2]
    xs = np.array([1.5, 1.9])
    hess = tp.grad(tp.grad(_until_three))
    np.testing.assert_allclose(tp.vmap(hess)(xs), [hess(v) for v in xs], rtol=1e-14)
    np.testing.assert_allclose(tp.vmap(hess)(xs), [27.0, 2.0], rtol=1e-14)


def test_hessian_through_a_loop_unpacking_its_carried_tuple():
    # a container made by a call took the batch on all its elements, its name's spec on
    # some: twice the Hessian
    x = np.array([0.7, 1.1, -0.4])
    np.testing.assert_allclose(tp.hessian(_carried_pair)(x), np.diag(np.full(3, 4.0)),
                               rtol=1e-14)


def test_forward_mode_of_vmap_through_branches_returning_tuples():
    # the two terms of rt.select's tangent were joined by `+`, which concatenated tuples
    xs = np.array([0.3, 3.5])
    expected = [2 * xs[0], 16 * xs[1]]
    np.testing.assert_allclose(tp.jvp(tp.vmap(_product_of_pair_by_branch), (xs,),
                                      (np.ones(2),))[1], expected, rtol=1e-14)
    for jac in (tp.jacfwd, tp.jacrev):
        np.testing.assert_allclose(jac(tp.vmap(_product_of_pair_by_branch))(xs),
                                   np.diag(expected), rtol=1e-14)
    out, tangent = tp.jvp(tp.vmap(_early_exit), (np.array([0.1, 4.0]),), (np.ones(2),))
    np.testing.assert_allclose(tangent, [-8.0, 2.0], rtol=1e-14)


def test_a_shape_read_on_a_path_some_examples_take():
    np.testing.assert_array_equal(tp.vmap(_counted, (None, 0))(np.zeros(3), np.array([0, 1, 5])),
                                  [0, 1, 3])


def test_out_axes_none_for_a_value_returned_through_a_branch():
    doubled, y = tp.vmap(_passes_through, in_axes=(0, None), out_axes=(0, None))(
        np.arange(3.0), np.array(3.0))
    assert np.shape(y) == () and y == 3.0
    np.testing.assert_allclose(doubled, [0.0, 2.0, 4.0])


def _scan_with_a_carried_flag(x):
    def body(state, _):
        val, flag = state
        return tp.lax.cond(flag, lambda v: (v * x, True), lambda v: (v, False), val), None
    return tp.lax.scan(body, (1.0, True), np.zeros(3))[0][0]


def test_a_carried_tuple_whose_flag_no_example_differs_in():
    # (JAX's test_xla_cpu_gpu_loop_cond_bug) the carry held by a name was given the batch
    # on all its elements where its spec has it on the value only: `if flag:` then met an
    # array of flags
    xs = np.array([2.0, 3.0])
    np.testing.assert_allclose(tp.vmap(_scan_with_a_carried_flag)(xs), xs ** 3, rtol=1e-15)
    np.testing.assert_allclose(tp.vmap(tp.grad(_scan_with_a_carried_flag))(xs), 3 * xs ** 2,
                               rtol=1e-15)


# ---------------------------------------------------------------- a namedtuple made in
# vmapped code of one batched field and one the examples share (jax-md's FIRE state): every
# field was taken for batched, so the shared one's first axis was read as the batch

class _State(typing.NamedTuple):
    x: typing.Any
    w: typing.Any


def _through_a_state(x, w):
    s = _State(x * 2.0, w)
    t = _State(s.x + 1.0, s.w * 3.0)
    return np.sum(t.x * t.w) + np.sum(s.w)


def test_a_namedtuple_of_batched_and_shared_fields():
    xs, w = np.array([0.1, 0.4, 0.9]), np.array([1.0, 2.0, 3.0])
    for f in (tp.vmap(_through_a_state, in_axes=(0, None)),
              tp.jit(tp.vmap(_through_a_state, in_axes=(0, None)))):
        np.testing.assert_allclose(f(xs, w), [_through_a_state(a, w) for a in xs], rtol=1e-14)
    np.testing.assert_allclose(tp.vmap(tp.grad(_through_a_state, argnums=(0, 1)),
                                       in_axes=(0, None))(xs, w)[1],
                               [tp.grad(_through_a_state, argnums=1)(a, w) for a in xs],
                               rtol=1e-14)


def _summed_with(x, keepdims=False):
    return np.sum(x, keepdims=keepdims)


def _twice_in_a_loop(r):
    u = 0.0
    for _ in range(2):
        u = u + _summed_with(r ** 2)
    return u


def test_keepdims_passed_through_a_helper_saved_in_a_loop():
    # (jax-md's species energies) the helper's saved (x, keepdims) were pushed on a stack
    # batched as a whole, and keepdims reached np.sum's adjoint as an array of flags
    xs = np.random.default_rng(15).normal(size=(3, 4))
    np.testing.assert_allclose(tp.vmap(tp.grad(_twice_in_a_loop))(xs), 4 * xs, rtol=1e-15)


# ---------------------------------------------------------------- a helper of nested vmaps
# (rt.lanes_matmul's `outer`) saved by the forward pass: vmapping the backward pass again
# met the name, not a literal, and stopped with an internal error (jax-md's displacement
# functions under hessian and vmap(grad))

def _box_map(r, box):
    return r @ box.T


def _box_energy(R, box):
    return np.sum(tp.vmap(tp.vmap(_box_map, (0, None)), (0, None))(R, box) ** 2)


def test_the_saved_outer_axes_of_a_nested_vmap_are_batched_again():
    rng = np.random.default_rng(11)
    R, box = rng.normal(size=(4, 2, 3, 2)), rng.normal(size=(2, 2))
    grads = [tp.grad(_box_energy)(r, box) for r in R]
    close(tp.vmap(tp.grad(_box_energy), (0, None))(R, box), np.stack(grads))
    check_grads(_box_energy, (R[0], box), order=2, modes=("rev", "fwd"))
    hessians = [tp.hessian(_box_energy)(r, box) for r in R[:2]]
    close(tp.vmap(tp.hessian(_box_energy), (0, None))(R[:2], box), np.stack(hessians))
    close(tp.vmap(tp.vmap(tp.grad(_box_energy), (0, None)), (0, None))(R[None], box),
          np.stack(grads)[None])
    close(tp.jacrev(tp.grad(_box_energy, argnums=1), argnums=1)(R[0], box),
          tp.jacfwd(tp.grad(_box_energy, argnums=1), argnums=1)(R[0], box))


# ---------------------------------------------------------------- axes of the argument, not
# of the adjoint: rt.diagonal_adj's axis1/axis2 are axes of the matrix, but its batching rule
# read negative ones against the diagonal (one axis fewer): vmap(grad) of
# np.diagonal(x, 0, -2, -1) on 3-d examples took the wrong pair of axes (silently: 2.6 off
# for (3, 3, 3) examples) and raised on 2-d ones

def _diagonal_weighted(x, w):
    return np.sum(np.sin(np.diagonal(x, 0, -2, -1)) * w)


def _diagonal_offset(x, w):
    return np.sum(np.diagonal(x, 1, -1, -2) ** 2 * w[..., :2])


def test_negative_axes_of_a_diagonal_are_the_matrix_axes():
    r = np.random.default_rng(41)
    for f, xs, w in ((_diagonal_weighted, r.normal(size=(2, 3, 3, 3)), r.normal(size=(3, 3))),
                     (_diagonal_offset, r.normal(size=(2, 3, 3)), r.normal(size=(2,))),
                     (_diagonal_offset, r.normal(size=(2, 2, 3, 3)), r.normal(size=(2, 2)))):
        grad = tp.grad(f)
        close(tp.vmap(grad, (0, None))(xs, w), np.stack([grad(x, w) for x in xs]))
        ws = r.normal(size=(2,) + w.shape)
        close(tp.vmap(grad, (None, 0))(xs[0], ws), np.stack([grad(xs[0], v) for v in ws]))


# ---------------------------------------------------------------- a class passed on as a
# value (a dtype: np.float64) got a zero adjoint made for it at second order, which read
# the class's `dtype` attribute (a descriptor) and raised

def _cast_to(x, dtype):
    return np.asarray(x).astype(dtype)


def _through_a_dtype_argument(x):
    return np.sum(_cast_to(x, np.float64) ** 3)


def test_a_dtype_class_passed_to_a_function_at_second_order():
    x = np.random.default_rng(42).normal(size=4)
    check_grads(_through_a_dtype_argument, (x,), order=2, modes=("rev", "fwd"))


# ---------------------------------------------------------------- advanced indices apart
# (x[0, :, idx]): numpy puts their axes first, and under vmap in front of the batch axis
# too, so every example read the others' elements (34.0 off on (3, 3, 2, 3)); writes,
# their derivatives and np.add.at went wrong with them. Index arrays that broadcast against
# each other (i of (1, 2), j of (2,)) lined the batch axis of j up with the 1 of i.

def _apart_read(x):
    return x[0, :, np.array([0, 2, 1])] * 2.0


def _apart_loss(x):
    return np.sum(np.sin(x[1, :, 0, np.array([0, 1])]) * x[0, :, 1, np.array([[1], [0]])])


def _apart_write(x, v):
    y = x * 1.0
    y[0, :, np.array([2, 0])] += v
    y[1, :, np.array([1, 1])] = v * y[1, :, np.array([0, 0])]
    np.add.at(y, (1, slice(None), np.array([0, 0])), v)
    return np.sum(np.sin(y) * y)


def _pair_gather(x, i, j):
    return x[i, j] * 3.0


def test_advanced_indices_apart_keep_the_batch_axis_first():
    r = np.random.default_rng(43)
    xs = r.normal(size=(3, 3, 2, 3))
    close(tp.vmap(_apart_read)(xs), np.stack([_apart_read(x) for x in xs]), 0)
    xs4 = r.normal(size=(3, 2, 3, 2, 3))
    grad = tp.grad(_apart_loss)
    close(tp.vmap(_apart_loss)(xs4), np.stack([_apart_loss(x) for x in xs4]))
    close(tp.vmap(grad)(xs4), np.stack([grad(x) for x in xs4]))
    check_grads(_apart_loss, (xs4[0],), order=2, modes=("rev", "fwd"))
    close(tp.jacrev(_apart_read)(xs[0]), tp.jacfwd(_apart_read)(xs[0]), 0)
    vs = r.normal(size=(3, 2, 2))
    write_grad = tp.grad(_apart_write, argnums=(0, 1))
    close(tp.vmap(_apart_write)(xs, vs), np.stack([_apart_write(x, v) for x, v in zip(xs, vs)]))
    for got, want in zip(tp.vmap(write_grad)(xs, vs),
                         zip(*[write_grad(x, v) for x, v in zip(xs, vs)])):
        close(got, np.stack(want))
    close(tp.vmap(write_grad, (0, None))(xs, vs[0])[0],
          np.stack([write_grad(x, vs[0])[0] for x in xs]))


def test_batched_index_arrays_broadcast_within_each_example():
    r = np.random.default_rng(44)
    x = r.normal(size=(3, 3))
    i = np.array([[[0, 1]], [[2, 2]], [[1, 0]]])
    j = np.array([[1, 2], [0, 0], [2, 1]])
    got = tp.vmap(_pair_gather, (None, 0, 0))(x, i, j)
    close(got, np.stack([_pair_gather(x, a, b) for a, b in zip(i, j)]), 0)
    grad = tp.grad(lambda x, i, j: np.sum(np.sin(_pair_gather(x, i, j))))
    close(tp.vmap(grad, (None, 0, 0))(x, i, j), np.stack([grad(x, a, b) for a, b in zip(i, j)]))


def _write_zero_d(x, v):
    y = x.copy()
    y[...] = v
    z = np.array(x * 2.0)
    z[()] += v
    return np.sin(y) + np.cos(z)


def test_reverse_mode_writes_into_a_zero_d_array():
    """The adjoint of a write into a 0-d array was a numpy scalar, written into."""
    x, v = np.asarray(0.3), np.asarray(0.7)
    # y = v, z = 2x + v: sin(v) + cos(2x + v)
    dx, dv = tp.grad(_write_zero_d, argnums=(0, 1))(x, v)
    assert dx == pytest.approx(-2 * np.sin(1.3)) and dv == pytest.approx(np.cos(0.7) -
                                                                         np.sin(1.3))
    tangent = tp.jvp(_write_zero_d, (x, v), (np.asarray(1.0), np.asarray(0.5)))[1]
    assert tangent == pytest.approx(dx + 0.5 * dv)


# ---------------------------------------------------------------- an index that differs
# between examples beside an index array that does not (x[i, J], i batched, J constant):
# rt.lane_gather took J's first axis for the batch's ([0, 6, 9] for
# [[0, 2, 1], [4, 6, 5], [8, 10, 9]]: silent where J's length is the batch size)

_CONSTANT_COLUMNS = np.array([0, 2, 1])


def _beside_constant(x, i):
    return x[i, _CONSTANT_COLUMNS] * 2.0


def _beside_constant_written(x, i, v):
    y = x * 1.0
    y[i, _CONSTANT_COLUMNS] = v
    np.add.at(y, (i, _CONSTANT_COLUMNS), v * v)
    return y


def test_a_batched_index_beside_a_constant_index_array():
    r = np.random.default_rng(45)
    x, i = r.normal(size=(3, 4)), np.array([0, 2, 2])
    close(tp.vmap(_beside_constant, (None, 0))(x, i),
          np.stack([_beside_constant(x, k) for k in i]), 0)
    close(tp.vmap(_beside_constant, (None, 0))(x, i[:2]),
          np.stack([_beside_constant(x, k) for k in i[:2]]), 0)
    grad = tp.grad(lambda x, i: np.sum(np.sin(_beside_constant(x, i))))
    close(tp.vmap(grad, (None, 0))(x, i), np.stack([grad(x, k) for k in i]))
    v = r.normal(size=(3, 3))
    close(tp.vmap(_beside_constant_written, (None, 0, 0))(x, i, v),
          np.stack([_beside_constant_written(x, k, w) for k, w in zip(i, v)]))
    write_grad = tp.grad(lambda x, i, v: np.sum(np.sin(_beside_constant_written(x, i, v))),
                         argnums=(0, 2))
    for got, want in zip(tp.vmap(write_grad, (None, 0, 0))(x, i, v),
                         zip(*[write_grad(x, k, w) for k, w in zip(i, v)])):
        close(got, np.stack(want))


def _constants_listed(c, k, lbnd):      # numpy.polynomial's polyint: k may be a number
    if not isinstance(k, (list, tuple, np.ndarray)):
        k = [k]
    if len(k) > 1:
        raise ValueError("Too many integration constants")
    k = list(k) + [0] * (1 - len(k))
    return c * k[0] + lbnd


def test_a_value_put_in_a_list_of_itself_on_a_path():
    """`k = [k]` on one path made vmap's analysis nest k's spec once more on every visit:
    RecursionError; cut at a depth, the scalar k (a container's spec elsewhere) was then
    broadcast over the batch at entry (len(k) was the batch size). Now both hold."""
    c = np.random.default_rng(72).normal(size=(3, 4))
    lbnd = np.array([0.4, -0.3, 1.0])
    f = lambda c, l: _constants_listed(c, 0.3, l)      # noqa: E731
    np.testing.assert_allclose(tp.vmap(f)(c, lbnd), [f(x, l) for x, l in zip(c, lbnd)])
    np.testing.assert_allclose(tp.jacfwd(f)(c[0], 0.4), 0.3 * np.eye(4))
    np.testing.assert_allclose(tp.jacrev(f)(c[0], 0.4), 0.3 * np.eye(4))


_APART = np.array([0, 2, 0])


def _apart_set(x, v):
    y = x.copy()
    y[0, :, _APART] = v
    return y


def _apart_scaled(x, v):
    y = x.copy()
    y[0, ..., _APART] *= v
    np.add.at(y, (1, slice(None), _APART), v)
    return y


@pytest.mark.parametrize("f", [_apart_set, _apart_scaled])
def test_vmap_of_vmap_writes_with_advanced_indices_apart(f):
    # the inner vmap's aranges over its batch axis were sized from the outer batch axis:
    # a shape mismatch, or an IndexError, whenever the two batch sizes differed
    r = np.random.default_rng(45)
    loss = tp.grad(lambda x, v: np.sum(np.sin(f(x, v))), argnums=(0, 1))
    for outer, inner in [(2, 3), (3, 2)]:
        xs = r.normal(size=(outer, inner, 2, 4, 3))
        vs = r.normal(size=(outer, inner, 3, 4))
        close(tp.vmap(tp.vmap(f))(xs, vs), loop(lambda x, v: loop(f, (x, v)), (xs, vs)))
        got = tp.vmap(tp.vmap(loss))(xs, vs)
        want = loop(lambda x, v: loop(loss, (x, v)), (xs, vs))
        for g, w in zip(got, want):
            close(g, w)
    xs = r.normal(size=(2, 3, 2, 2, 4, 3))
    vs = r.normal(size=(2, 3, 2, 3, 4))
    close(tp.vmap(tp.vmap(tp.vmap(f)))(xs, vs),
          loop(lambda x, v: loop(lambda y, w: loop(f, (y, w)), (x, v)), (xs, vs)))


def _largest(values):
    return np.max(values)


def _log_sum_exp(values):
    top = np.max(values)
    return top + np.log(np.sum(np.exp(values - top)))


def _squares_largest(a):
    return _largest([a[i] * a[i] for i in range(2)])


def _forward_messages(A):
    out = np.zeros(2)
    for s in range(2):
        out[s] = _log_sum_exp([A[r, s] for r in range(2)])
    return out


def test_a_helper_given_a_list_of_batched_values():
    # the helper's parameter is a Python list of batched values, which numpy reads with the
    # batch axis second: the max over the batch was taken (nan gradients, wrong values,
    # or a broadcast error); numpy-ml's logsumexp in its HMM and GMM code
    r = np.random.default_rng(46)
    for n in (2, 3):
        As = r.normal(size=(n, 2))
        close(tp.vmap(_squares_largest)(As), loop(_squares_largest, (As,)))
        grad = tp.grad(_squares_largest)
        close(tp.vmap(grad)(As), loop(grad, (As,)))
    Ms = r.normal(size=(3, 2, 2))
    close(tp.vmap(_forward_messages)(Ms), loop(_forward_messages, (Ms,)))
    total = tp.grad(lambda A: np.sum(_forward_messages(A)))
    close(tp.vmap(total)(Ms), loop(total, (Ms,)))
    close(tp.jacfwd(_forward_messages)(Ms[0]), tp.jacrev(_forward_messages)(Ms[0]))
    check_grads(_forward_messages, (Ms[0],), order=2, modes=("rev", "fwd"))


def _norm_of_parts(parts):
    if parts is None:
        return 0.0
    total = 0.0
    for p in parts:
        total = total + np.sum(p ** 2)
    return np.sqrt(total)


def _clipped_norm(w, b):
    return _norm_of_parts((w, b)) + _norm_of_parts(None)


def test_a_helper_testing_its_parameter_is_none():
    # a helper's parameter may be a list of batched values (read as an array), but
    # `parts is None` asks about the object: the tuple of two shapes was made one array
    r = np.random.default_rng(47)
    ws, bs = r.normal(size=(3, 2, 2)), r.normal(size=(3, 2))
    close(tp.vmap(_clipped_norm)(ws, bs), loop(_clipped_norm, (ws, bs)))
    grad = tp.grad(_clipped_norm, argnums=(0, 1))
    for got, want in zip(tp.vmap(grad)(ws, bs), loop(grad, (ws, bs))):
        close(got, want)


# ---------------------------------------------------------------- np.random.seed in the code

def _seeded_normal(x, y):
    np.random.seed(1)
    return np.random.normal(x, y)


def _seeded_dropout(x, p=0.5):
    # cs231n's dropout_forward with a seed in its parameters, then more draws
    np.random.seed(123)
    mask = (np.random.rand(*x.shape) < p) / p
    noise = np.random.normal(0.0, 0.1, size=x.shape) + np.random.randint(0, 3, size=x.shape)
    return np.sum(np.tanh(x) * mask + noise)


def _seeded_permutation(x):
    np.random.seed(1)
    return np.sum(np.random.permutation(x) * np.arange(4.0))


def test_a_seed_inside_the_vmapped_function_restarts_every_example():
    """A silent wrong answer: in a loop every example restarts from np.random.seed(1) and
    draws the same numbers; vmap's one draw for the batch gave every example others. Now
    each example draws from its own copy of the seeded state, and the state left is the
    last example's, as after the loop."""
    xs, ys = RNG.normal(size=(2, 3, 4))
    ys = np.abs(ys) + 0.5
    close(tp.vmap(_seeded_normal)(xs, ys), loop(_seeded_normal, (xs, ys)), 0)
    np.random.seed(0)
    got = tp.vmap(_seeded_dropout)(xs)
    after_vmap = np.random.random()
    np.random.seed(0)
    want = loop(_seeded_dropout, (xs,))
    assert np.random.random() == after_vmap
    close(got, want, 0)
    check_all(_seeded_dropout, (xs,), modes=("vmap_grad", "grad_vmap"))
    with pytest.raises(tp.TransformError, match="after np.random.seed"):
        tp.vmap(_seeded_permutation)(xs)


def _scaled_tanh(x, p=0.5):
    return np.sum(np.tanh(x) * p)


_VMAPPED_SCALED_TANH = tp.vmap(_scaled_tanh)


def _sum_of_vmapped(xs):
    return np.sum(_VMAPPED_SCALED_TANH(xs)) + np.sum(_VMAPPED_SCALED_TANH(xs, 2.0 + 0 * xs[:, 0]))


def test_a_vmap_called_in_transformed_code_leaves_defaults_unmapped():
    # vmap(f) with one int in_axes maps the arguments passed; called inside code that grad
    # transforms it mapped f's default too: "in_axes=0 is out of range for argument p"
    xs = RNG.normal(size=(3, 4))
    want = (0.5 + 2.0) * (1.0 - np.tanh(xs) ** 2)
    np.testing.assert_allclose(tp.grad(_sum_of_vmapped)(xs), want, rtol=1e-14)
