"""`tp.jacfwd`, `tp.jacrev` and `tp.hessian`: JAX's output shapes (out shape + in shape) and
values checked against central finite differences and closed forms.
"""
import numpy as np
import pytest

import transpile as tp
from transpile.test_util import check_grads

RTOL, ATOL = 1e-6, 1e-8


def fd_jacobian(f, args, argnum=0, eps=1e-6):
    """d f(*args) / d args[argnum] by central differences, shape out + in (floats: ())."""
    args = list(args)
    x = args[argnum]
    scalar = isinstance(x, float)
    x = np.asarray(x, dtype=np.float64)

    def at(xx):
        a = list(args)
        a[argnum] = float(xx) if scalar else xx
        return np.asarray(f(*a), dtype=np.float64)

    out = at(x)
    jac = np.zeros(out.shape + x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        jac[(Ellipsis,) + idx] = (at(x + e) - at(x - e)) / (2 * eps)
    return jac


def check_jacobians(f, args, argnum=0, rtol=RTOL, atol=ATOL):
    """jacfwd and jacrev against finite differences, with JAX's shape."""
    want = fd_jacobian(f, args, argnum)
    out_shape = np.shape(f(*args))
    in_shape = np.shape(args[argnum])
    for name, jac in (("jacfwd", tp.jacfwd), ("jacrev", tp.jacrev)):
        got = jac(f, argnums=argnum)(*args)
        assert np.shape(got) == out_shape + in_shape, \
            f"{name}: shape {np.shape(got)}, expected {out_shape + in_shape}"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    return want


# ---------------------------------------------------------------- functions
A = np.array([[0.8, -0.3, 0.5, 0.1],
              [0.2, 0.9, -0.4, 0.7],
              [-0.6, 0.1, 0.3, -0.2]])


def rn_to_rm(x):                   # R^4 -> R^3
    return np.tanh(A @ x) * np.exp(0.1 * x[0])


def scalar_to_vector(t):           # R -> R^3
    return np.array([np.sin(t), t * t, np.exp(-t)]) * np.cos(2.0 * t)


def vector_to_scalar(x):           # R^4 -> R
    return np.sum(np.log1p(x * x)) + np.prod(np.cos(x))


def matrix_input(M):               # R^{3x2} -> R^2
    return np.sum(np.tanh(M) * M, axis=0) + M[0] * M[2]


def float_input(t):                # float -> float
    return t ** 3 * np.sin(t)


def two_args(x, W):                # argnums=1: d/dW, shape (3,) + (4, 3)
    return np.tanh(x @ W)


def tanh_sum(x):                   # f(x) = sum(tanh(A x)), the Hessian benchmark
    return np.sum(np.tanh(A @ x))


def looped_branchy(x):
    h = x
    total = 0.0
    for i in range(3):
        if np.sum(h) > 0.0:
            h = np.sin(h) * 1.2
        else:
            h = h * h - 0.3
        total = total + np.sum(h * x) * (i + 1)
    return total


X4 = np.array([0.3, -0.5, 0.8, 0.2])


def test_rn_to_rm():
    check_jacobians(rn_to_rm, (X4,))


def test_scalar_to_vector():
    want = check_jacobians(scalar_to_vector, (0.7,))
    assert want.shape == (3,)


def test_scalar_to_vector_0d_array():
    check_jacobians(scalar_to_vector, (np.array(0.7),))


def test_vector_to_scalar():
    want = check_jacobians(vector_to_scalar, (X4,))
    assert want.shape == (4,)
    np.testing.assert_allclose(tp.grad(vector_to_scalar)(X4), want, rtol=RTOL, atol=ATOL)


def test_matrix_input():
    M = np.array([[0.3, -0.2], [0.5, 0.9], [-0.7, 0.4]])
    want = check_jacobians(matrix_input, (M,))
    assert want.shape == (2, 3, 2)


def test_float_input():
    for jac in (tp.jacfwd, tp.jacrev, tp.hessian):
        got = jac(float_input)(0.9)
        assert np.shape(got) == ()
    t = 0.9
    d1 = 3 * t ** 2 * np.sin(t) + t ** 3 * np.cos(t)
    d2 = 6 * t * np.sin(t) + 6 * t ** 2 * np.cos(t) - t ** 3 * np.sin(t)
    assert np.isclose(tp.jacfwd(float_input)(t), d1, rtol=1e-12)
    assert np.isclose(tp.jacrev(float_input)(t), d1, rtol=1e-12)
    assert np.isclose(tp.hessian(float_input)(t), d2, rtol=1e-12)


def test_argnums_1():
    rng = np.random.default_rng(3)
    x, W = rng.standard_normal(4), rng.standard_normal((4, 3)) * 0.5
    want = check_jacobians(two_args, (x, W), argnum=1)
    assert want.shape == (3, 4, 3)
    want0 = check_jacobians(two_args, (x, W), argnum=0)
    assert want0.shape == (3, 4)


def test_hessian_argnums_1():
    rng = np.random.default_rng(4)
    x, W = rng.standard_normal(4), rng.standard_normal((4, 3)) * 0.5

    def loss(x, W):
        return np.sum(two_args(x, W) ** 2)

    H = tp.hessian(loss, argnums=1)(x, W)
    assert H.shape == (4, 3, 4, 3)
    want = fd_jacobian(tp.grad(loss, argnums=1), (x, W), argnum=1)
    np.testing.assert_allclose(H, want, rtol=RTOL, atol=ATOL)


def test_jacobian_of_linear_map_is_exact():
    def linear(x):
        return A @ x

    np.testing.assert_array_equal(tp.jacfwd(linear)(X4), A)
    np.testing.assert_array_equal(tp.jacrev(linear)(X4), A)


def test_hessian_of_tanh_sum_is_analytic():
    rng = np.random.default_rng(5)
    for x in (X4, rng.standard_normal(4)):
        t = np.tanh(A @ x)
        want = A.T @ np.diag(-2.0 * t * (1.0 - t * t)) @ A
        H = tp.hessian(tanh_sum)(x)
        assert H.shape == (4, 4)
        np.testing.assert_allclose(H, want, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-14)


def test_hessian_against_finite_differences_of_grad():
    for f, x in ((vector_to_scalar, X4), (tanh_sum, X4)):
        H = tp.hessian(f)(x)
        np.testing.assert_allclose(H, fd_jacobian(tp.grad(f), (x,)), rtol=RTOL, atol=ATOL)
    M = np.array([[0.3, -0.2], [0.5, 0.9], [-0.7, 0.4]])

    def mat_scalar(M):
        return np.sum(matrix_input(M) ** 2)

    H = tp.hessian(mat_scalar)(M)
    assert H.shape == (3, 2, 3, 2)
    np.testing.assert_allclose(H, fd_jacobian(tp.grad(mat_scalar), (M,)), rtol=RTOL,
                               atol=ATOL)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_hessian_through_loop_and_branch(sign):
    x = sign * np.array([0.4, 0.3, 0.6])
    assert looped_branchy(x) != 0.0
    H = tp.hessian(looped_branchy)(x)
    assert H.shape == (3, 3)
    np.testing.assert_allclose(H, fd_jacobian(tp.grad(looped_branchy), (x,)), rtol=RTOL,
                               atol=ATOL)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_jacobians_through_loop_and_branch(sign):
    x = sign * np.array([0.4, 0.3, 0.6])
    check_jacobians(tp.grad(looped_branchy), (x,))


def test_jacrev_of_vector_function_with_a_loop():
    """jacrev runs the backward pass once per output element on the same saved values."""
    def rolled(x):
        for i in range(3):
            x = np.sin(x) * 1.1
        return x

    check_jacobians(rolled, (X4,))


def test_jacobian_source_is_transformable_code():
    source = tp.jacrev(rn_to_rm).source
    assert "def jacrev_rn_to_rm(x):" in source
    # one batched vjp over the basis cotangents (vmap), not a loop over them
    assert "rt.basis_of(out)" in source and "for i in range(" not in source
    assert "import transpile" not in source
    source = tp.jacfwd(rn_to_rm).source
    assert "def jacfwd_rn_to_rm(x):" in source


def test_bad_argnums():
    for argnums in ((0, 2), (), 2, -3, (0.5,)):
        for jac in (tp.jacfwd, tp.jacrev, tp.hessian):
            with pytest.raises(tp.TransformError, match="the Jacobian needs positions"):
                jac(two_args, argnums=argnums)


def test_identity_basis_products_are_exact_and_plain():
    """Jacobians push rt.basis_of(x) (an identity) through f; products with it are taken
    as the other factor's columns, everything else computes with the plain identity."""
    import runtime as rt
    from runtime.adjoints import IdentityBasis
    rng = np.random.default_rng()
    A, x = rng.standard_normal((3, 4)), rng.standard_normal(4)
    basis = rt.basis_of(x)
    assert isinstance(basis, IdentityBasis) and np.array_equal(basis, np.eye(4))
    plain = np.eye(4)
    for got, want in [(rt.lanes_matmul(A, basis, False, True), (A @ plain).T),
                      (rt.batched_dot(A, basis, False, True), np.dot(plain, A.T)),
                      (np.sin(basis), np.sin(plain)), (basis * 2.0, plain * 2.0),
                      (np.dot(basis, A.T), np.dot(plain, A.T))]:
        assert type(got) is np.ndarray
        np.testing.assert_allclose(got, want)


def _of_a_dict(p, x):
    return np.sum(np.tanh(p["a"] * x) * p["b"])


def _vector_of_a_dict(p, x):
    return np.tanh(p["a"] * x) * p["b"]


def test_jacobians_of_a_dict_where_numpy_saw_a_number():
    # np.shape of a dict is (): its basis was one number, and the Jacobian an IndexError
    # (jacfwd, hessian) or a ValueError (jacrev of a vector); then a clear refusal; now
    # JAX's layout, checked against finite differences
    rng = np.random.default_rng(23)
    p = {"a": rng.normal(size=3), "b": rng.normal(size=3)}
    x = rng.normal(size=3)
    grad = tp.grad(_of_a_dict)(p, x)
    for transform in (tp.jacfwd, tp.jacrev):
        assert_tree_close(transform(_of_a_dict)(p, x), grad)
        assert_tree_close(transform(_vector_of_a_dict)(p, x),
                          fd_tree_jacobian(lambda q: _vector_of_a_dict(q, x), p))
    want = fd_tree_jacobian(lambda q: tp.grad(_of_a_dict)(q, x), p)
    got = tp.hessian(_of_a_dict)(p, x)
    for a in p:
        for b in p:
            np.testing.assert_allclose(got[a][b], want[b][a], rtol=1e-6, atol=1e-8)


def _jac_inner(x):
    return np.sin(x) * np.sum(x ** 2)


def _through_jacrev(x):
    return np.sum(np.sin(tp.jacrev(_jac_inner)(x)))


def _through_jacfwd_and_hessian(x):
    return np.sum(np.cos(tp.jacfwd(_jac_inner)(x))) + \
        np.sum(tp.hessian(lambda y: np.sum(y ** 3) * x[0])(x))


def test_jacobians_inside_transformed_code():
    """jacrev, jacfwd and hessian applied inside a transformed function (autograd's
    test_jacobian_higher_order: grad of a function of jacobian(f)(x)), a closure over the
    outer argument included."""
    x = np.random.default_rng(5).standard_normal(3)
    check_grads(_through_jacrev, (x,), order=2, modes=("fwd", "rev"))
    check_grads(_through_jacfwd_and_hessian, (x,), order=1, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.vmap(tp.grad(_through_jacrev))(np.stack([x, 2 * x]))[1],
                               tp.grad(_through_jacrev)(2 * x))


def _second_jacobian(x):
    return np.sin(np.outer(x, x)) + np.cos(np.dot(x, x))


def _through_two_jacrevs(x):
    return np.sum(np.sin(tp.jacrev(tp.jacrev(_second_jacobian))(x)))


def test_reverse_mode_through_vmapped_gradient_code_of_a_product_is_refused():
    """grad of a function of jacrev(jacrev(f)) differentiates vmapped adjoints of np.dot,
    whose reverse rules ignored the vmap's axes: it crashed with a shape error (and with
    square shapes could have multiplied the wrong axes); now a TransformError. Forward
    mode carries those axes and is right."""
    x = np.random.default_rng(6).standard_normal(2)
    with pytest.raises(tp.TransformError, match="not supported"):
        tp.grad(_through_two_jacrevs)(x)
    eps = 1e-6
    numeric = [(_through_two_jacrevs(x + eps * e) - _through_two_jacrevs(x - eps * e)) /
               (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(tp.jacfwd(_through_two_jacrevs)(x), numeric, rtol=1e-6,
                               atol=1e-8)


def _leaves_or_none(tree):
    if tree is None:
        return []
    return [tree]


def _first_leaf_doubled(v):
    return _leaves_or_none(v * 2.0)[0]


def _first_leaf_squared(v):
    return _leaves_or_none(v * 2.0)[0] ** 2


def test_hessian_through_a_list_built_on_two_paths():
    """`[]` on one path and `[tree]` on the other: vmap joined the two list specs of
    different lengths into "batched", so the Hessian's vmap over basis tangents took the
    primal for per-example (refused with an out_axes message, or an IndexError)."""
    v = np.random.default_rng().normal(size=3)
    np.testing.assert_allclose(tp.hessian(_first_leaf_doubled)(v), np.zeros((3, 3, 3)))
    np.testing.assert_allclose(tp.hessian(_first_leaf_squared)(v),
                               np.einsum("ij,jk->ijk", np.eye(3), 8.0 * np.eye(3)), atol=1e-12)
    np.testing.assert_allclose(tp.jacrev(tp.jacrev(_first_leaf_squared))(v),
                               tp.hessian(_first_leaf_squared)(v), atol=1e-12)


# ---------------------------------------------------------------- complex numbers (JAX's rules)

CA = np.random.default_rng(11).normal(size=(2, 3)) + 1j * np.random.default_rng(12).normal(
    size=(2, 3))


def holomorphic_map(z):
    return np.sin(CA @ z) * z[0]


def holomorphic_scalar(z):
    return np.sum(np.exp(z) * z ** 2)


def complex_fd(f, z, eps=1e-6):
    """f'(z) of a holomorphic f by central differences along the real axes."""
    cols = []
    for k in range(z.size):
        e = np.zeros_like(z)
        e[k] = eps
        cols.append((np.asarray(f(z + e)) - np.asarray(f(z - e))) / (2 * eps))
    return np.moveaxis(np.array(cols), 0, -1)


def test_holomorphic_jacobians_are_the_complex_derivative():
    rng = np.random.default_rng(13)
    z = rng.normal(size=3) + 1j * rng.normal(size=3)
    want = complex_fd(holomorphic_map, z)
    for jac in (tp.jacrev, tp.jacfwd):
        np.testing.assert_allclose(jac(holomorphic_map, holomorphic=True)(z), want,
                                   rtol=RTOL, atol=ATOL)
    grad = tp.grad(holomorphic_scalar, holomorphic=True)
    np.testing.assert_allclose(tp.hessian(holomorphic_scalar, holomorphic=True)(z),
                               complex_fd(grad, z), rtol=RTOL, atol=ATOL)


def test_jacfwd_of_a_complex_argument_needs_holomorphic():
    """Its real basis tangents give df/dx only: for |z|^2 that was 2x, where grad and jacrev
    give df/dx - i df/dy = 2x - 2iy (a silent wrong answer before)."""
    rng = np.random.default_rng(14)
    z = rng.normal(size=2) + 1j * rng.normal(size=2)

    def f(z):
        return np.sum(np.abs(z) ** 2)
    np.testing.assert_allclose(tp.jacrev(f)(z), 2 * np.conj(z), rtol=RTOL)
    for jac in (tp.jacfwd, tp.hessian):
        with pytest.raises(tp.TransformError, match="needs holomorphic=True"):
            jac(f)(z)
    with pytest.raises(tp.TransformError, match="complex output needs holomorphic=True"):
        tp.jacrev(holomorphic_map)(np.append(z, 0.3 - 1j))
    with pytest.raises(tp.TransformError, match=r"holomorphic=True\) takes complex"):
        tp.jacrev(lambda x: np.sin(x), holomorphic=True)(z.real)


def test_jacfwd_of_a_real_argument_may_have_a_complex_output():
    x = np.random.default_rng(15).normal(size=3)

    def f(x):
        return np.exp(1j * x) * x
    want = np.diag(np.exp(1j * x) * (1 + 1j * x))
    np.testing.assert_allclose(tp.jacfwd(f)(x), want, rtol=RTOL, atol=ATOL)


def test_a_global_numpy_complex_scalar_in_transformed_code():
    """np.complex128 (a subclass of complex) was written into generated code from its
    parts' reprs, `(np.float64(0.5)+np.float64(0.25)j)`: a SyntaxError."""
    z = np.random.default_rng(16).normal(size=2) + 0.5j
    scale = (CA[0, :2] * 1.0)[0]                # an np.complex128
    assert type(scale) is np.complex128

    def f(z):
        return np.sum(scale * z ** 2)
    np.testing.assert_allclose(tp.grad(f, holomorphic=True)(z), 2 * scale * z, rtol=1e-12)
    check_grads(lambda z: np.sum(z ** 2) * scale, (z,), order=2)


# ---------------------------------------------------------------- pytrees (JAX's layout:
# the output's structure holding the argument's, each block out_leaf.shape + x_leaf.shape)

PR = np.random.default_rng(21)
PARAMS = {"W": PR.normal(size=(3, 4)), "b": PR.normal(size=3)}
XIN = PR.normal(size=4)


def layer(p, x):
    return np.tanh(p["W"] @ x + p["b"])


def layer_loss(p, x):
    return np.sum(layer(p, x) ** 2) + 0.1 * np.sum(p["W"] * p["W"][0])


def many_outputs(x):
    return {"a": np.sin(x), "b": (np.cos(x[:2]) * x[3], np.sum(x ** 3))}


def fd_tree_jacobian(f, x_tree, eps=1e-6):
    """Central differences leaf by leaf: {out path: {x leaf name: block}} as nested dicts
    keyed like the trees (dict argument, any output)."""
    from runtime.trees import tree_leaves, tree_map
    out_leaves = len(tree_leaves(f(x_tree)))
    blocks = {}
    for name, leaf in x_tree.items():
        cols = []
        for idx in np.ndindex(*leaf.shape):
            up = {k: v.copy() for k, v in x_tree.items()}
            down = {k: v.copy() for k, v in x_tree.items()}
            up[name][idx] += eps
            down[name][idx] -= eps
            cols.append(tree_map(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * eps),
                                 f(up), f(down)))
        blocks[name] = tree_map(lambda *c: np.moveaxis(np.array(c), 0, -1).reshape(
            np.shape(c[0]) + leaf.shape), *cols)
    assert out_leaves
    return blocks


def assert_tree_close(got, want, rtol=1e-6, atol=1e-8):
    from runtime.trees import tree_leaves
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            assert_tree_close(got[k], want[k], rtol, atol)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert_tree_close(a, b, rtol, atol)
    else:
        assert np.shape(got) == np.shape(want), (np.shape(got), np.shape(want))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    assert tree_leaves(got)


@pytest.mark.parametrize("jac", [tp.jacrev, tp.jacfwd])
def test_jacobian_of_a_dict_argument(jac):
    got = jac(layer)(PARAMS, XIN)
    by_leaf = fd_tree_jacobian(lambda p: layer(p, XIN), PARAMS)
    assert_tree_close(got, by_leaf)


@pytest.mark.parametrize("jac", [tp.jacrev, tp.jacfwd])
def test_jacobian_of_a_dict_output(jac):
    """(jacrev of a dict output crashed in generated code: np.ndim of a dict is 0)"""
    got = jac(many_outputs)(XIN)
    want = fd_tree_jacobian(lambda p: many_outputs(p["x"]), {"x": XIN})["x"]
    assert_tree_close(got, want)


def test_hessian_of_a_dict_argument_and_of_a_tuple_of_arguments():
    h = tp.hessian(layer_loss)(PARAMS, XIN)
    grad = tp.grad(layer_loss)
    want = fd_tree_jacobian(lambda p: grad(p, XIN), PARAMS)     # {x leaf: {out leaf: .}}
    for a in PARAMS:
        for b in PARAMS:
            np.testing.assert_allclose(h[a][b], want[b][a], rtol=1e-6, atol=1e-8)
    # JAX's layout: the gradients' structure (p's dict, then x), each leaf holding blocks
    # for (p's dict, x)
    pair = tp.hessian(layer_loss, argnums=(0, 1))(PARAMS, XIN)
    assert isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], dict)
    assert_tree_close({a: pair[0][a][0] for a in PARAMS}, h, rtol=1e-12)
    np.testing.assert_allclose(pair[1][1], tp.hessian(layer_loss, argnums=1)(PARAMS, XIN),
                               rtol=1e-12)
    np.testing.assert_allclose(pair[0]["b"][1], pair[1][0]["b"].T, rtol=1e-10)


@pytest.mark.parametrize("jac", [tp.jacrev, tp.jacfwd])
def test_jacobian_of_a_tuple_of_arguments(jac):
    def f(a, b):
        return np.sin(a)[:, None] * b[None, :] ** 2
    a, b = PR.normal(size=3), PR.normal(size=2)
    got = jac(f, argnums=(0, 1))(a, b)
    assert isinstance(got, tuple) and len(got) == 2
    assert_tree_close(got[0], jac(f, argnums=0)(a, b))
    assert_tree_close(got[1], jac(f, argnums=-1)(a, b))
    assert_tree_close(got[1], fd_jacobian(f, (a, b), 1))


def test_jacobians_of_pytrees_compose():
    xs = PR.normal(size=(5, 4))
    per_example = tp.vmap(tp.jacrev(layer), in_axes=(None, 0))(PARAMS, xs)
    for k in range(5):
        assert_tree_close({n: v[k] for n, v in per_example.items()},
                          tp.jacfwd(layer)(PARAMS, xs[k]), rtol=1e-10)
    assert_tree_close(tp.jit(tp.hessian(layer_loss))(PARAMS, XIN),
                      tp.hessian(layer_loss)(PARAMS, XIN), rtol=1e-10)

    def jacobian_norm(p):           # grad through the Jacobian's blocks (one unread)
        return np.sum(tp.jacrev(layer)(p, XIN)["W"] ** 2)
    assert_tree_close(tp.grad(jacobian_norm)(PARAMS),
                      {k: v for k, v in fd_tree_jacobian(jacobian_norm, PARAMS).items()})


def test_a_jacobian_of_a_string_leaf_is_refused():
    with pytest.raises(tp.TransformError, match="Jacobians of arrays and numbers"):
        tp.jacrev(lambda x: (np.sin(x), "label"))(XIN)


def test_argnums_out_of_order():
    """jacfwd passed the basis tangents in argnums' order where the jvp takes them in the
    parameters' order: argnums=(1, 0) mixed the two Jacobians up (found by porting JAX's
    jacobian-vector-products page)."""
    rng = np.random.default_rng(29)
    x, s = rng.normal(size=3), 0.7

    def f(x, s):
        return np.sin(x) * s ** 2

    want = (fd_jacobian(f, (x, s), 1), fd_jacobian(f, (x, s), 0))
    for jac in (tp.jacfwd, tp.jacrev):
        got = jac(f, argnums=(1, 0))(x, s)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)
    h = tp.hessian(lambda x, s: np.sum(f(x, s)), argnums=(1, 0))(x, s)
    np.testing.assert_allclose(h[0][0], 2.0 * np.sum(np.sin(x)), rtol=1e-12)
    np.testing.assert_allclose(h[0][1], 2.0 * s * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(h[1][1], np.diag(-np.sin(x) * s ** 2), rtol=1e-12)
    p = {"w": rng.normal(size=2)}
    got = tp.jacfwd(lambda p, u, x: np.tanh(p["w"] * x) * u, argnums=(2, 0))(p, 1.5, x[:2])
    ref = tp.jacrev(lambda p, u, x: np.tanh(p["w"] * x) * u, argnums=(2, 0))(p, 1.5, x[:2])
    assert_tree_close(got, ref, rtol=1e-12)
    with pytest.raises(tp.TransformError, match="names an argument twice"):
        tp.jacfwd(f, argnums=(0, 0))


SCALE = 2.0


def _scaled_cube(x):
    return np.sum(SCALE * x ** 3)


def test_jacobians_made_again_reuse_their_code_and_see_new_values():
    """`tp.hessian(f)(x)` in a loop made a new wrapper each time, and generated its code
    anew (a quarter second per Newton step); the same wrapper now comes back, and a
    closure or global that names another value makes a new one."""
    global SCALE
    rng = np.random.default_rng()
    x = rng.normal(size=3)
    first = tp.hessian(_scaled_cube)
    assert first.source == tp.hessian(_scaled_cube).source
    assert tp.jacrev(_scaled_cube).target is tp.jacrev(_scaled_cube).target
    np.testing.assert_allclose(tp.hessian(_scaled_cube)(x), np.diag(6 * SCALE * x))
    try:
        SCALE = 5.0
        np.testing.assert_allclose(tp.hessian(_scaled_cube)(x), np.diag(30 * x))
    finally:
        SCALE = 2.0
    for c in (1.5, -0.5):
        def f(y):
            return np.sum(c * np.sin(y))
        np.testing.assert_allclose(tp.jacfwd(tp.jacrev(f))(x), np.diag(-c * np.sin(x)))
        np.testing.assert_allclose(tp.hessian_vector_product(f)(x, x), -c * np.sin(x) * x)


def _with_aux(x):
    y = np.sin(x) * x[0]
    return y, {"norm": np.sum(x ** 2), "y": y}


def _scalar_with_aux(x):
    return np.sum(np.sin(x) ** 2 * x[0]), x * 2.0


def test_jacobians_with_has_aux():
    # JAX's has_aux on jacfwd, jacrev and hessian (api_test): refused before
    x = np.array([0.3, -1.2, 0.7])
    expected = np.diag(np.cos(x) * x[0])
    expected[:, 0] += np.sin(x)
    for jac in (tp.jacrev, tp.jacfwd):
        found, aux = jac(_with_aux, has_aux=True)(x)
        np.testing.assert_allclose(found, expected, rtol=1e-14)
        np.testing.assert_allclose(aux["y"], np.sin(x) * x[0], rtol=1e-15)
        assert aux["norm"] == pytest.approx(np.sum(x ** 2), rel=1e-15)
    h, aux = tp.hessian(_scalar_with_aux, has_aux=True)(x)
    np.testing.assert_allclose(h, tp.hessian(lambda v: _scalar_with_aux(v)[0])(x), rtol=1e-14)
    np.testing.assert_allclose(aux, 2.0 * x, rtol=1e-15)
