"""Forward mode (`tp.jvp`) and derivatives of any order, mixing forward and reverse mode.

The seed examples are checked against exact values: derivatives of tanh written through
`np.exp`, where the k-th derivative has a closed form. Programs with loops, branches,
calls, recursion, closures and in-place updates are checked with
`check_grads(order=3, modes=("fwd", "rev"))`, which composes jvp and vjp in every order
(jvp of jvp of jvp, grad of jvp of grad, ...) and compares each with central finite
differences. Mixed compositions through a loop and a branch (grad of grad of grad, jvp of
grad, grad of jvp, jacfwd of jacrev, jacrev of jacfwd) are compared with analytic values.
"""
import ast
import functools
import math
import zlib

import numpy as np
import pytest

import transpile as tp
from transpile.test_util import check_grads


def fd(f, x, eps=1e-6):
    """Central finite difference of f at a float x (f may return an array)."""
    return (np.asarray(f(x + eps)) - np.asarray(f(x - eps))) / (2 * eps)


def fd_jacobian(f, x, eps=1e-6):
    """Jacobian of f at array x by central differences, JAX's shape (out shape + in shape)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.asarray(f(x))
    jac = np.zeros(out.shape + x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        jac[(Ellipsis,) + idx] = (np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps)
    return jac


# =====================================================================================
# The seed example: tanh through exp, derivatives up to the third, exact values
# =====================================================================================

def tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def tanh_derivatives(x):
    """tanh and its first three derivatives, in closed form (t = tanh x, s = sech^2 x)."""
    t = math.tanh(x)
    s = 1.0 - t * t
    return t, s, -2.0 * t * s, -2.0 * s * (s - 2.0 * t * t)


def test_third_derivative_of_tanh_seed_value():
    got = tp.grad(tp.grad(tp.grad(tanh)))(1.0)
    # tanh'''(1) = -2 sech^2(1) (sech^2(1) - 2 tanh^2(1)) = 0.621626680771296263106530...
    # (30 digits from mpmath.diff(mpmath.tanh, 1, 3)); the same number in closed form and as
    # a rational function of u = e^-2, 16 u (u^2 - 4u + 1) / (1 + u)^4
    exact = 0.621626680771296263106530428722
    _, _, _, d3 = tanh_derivatives(1.0)
    u = math.exp(-2.0)
    rational = 16.0 * u * (u * u - 4.0 * u + 1.0) / (1.0 + u) ** 4
    assert np.isclose(d3, exact, rtol=1e-14, atol=0)
    assert np.isclose(rational, exact, rtol=1e-14, atol=0)
    assert np.isclose(got, exact, rtol=1e-12, atol=0)
    assert f"{float(got):.10f}" == "0.6216266808"
    assert type(got) in (float, np.float64)


@pytest.mark.parametrize("x", [-1.3, -0.2, 0.0, 0.7, 2.0])
def test_tanh_derivatives_every_order_and_mode(x):
    t, d1, d2, d3 = tanh_derivatives(x)
    assert np.isclose(tp.grad(tanh)(x), d1, rtol=1e-12, atol=1e-15)
    assert np.isclose(tp.grad(tp.grad(tanh))(x), d2, rtol=1e-12, atol=1e-15)
    assert np.isclose(tp.grad(tp.grad(tp.grad(tanh)))(x), d3, rtol=1e-12, atol=1e-14)
    out, dout = tp.jvp(tanh, (x,), (1.0,))
    assert np.isclose(out, t, rtol=1e-14, atol=1e-15)
    assert np.isclose(dout, d1, rtol=1e-12, atol=1e-15)
    # forward over reverse, reverse over forward, forward over forward
    assert np.isclose(tp.jvp(tp.grad(tanh), (x,), (1.0,))[1], d2, rtol=1e-12, atol=1e-15)
    assert np.isclose(tp.grad(tanh_jvp_tangent)(x), d2, rtol=1e-12, atol=1e-15)
    assert np.isclose(tp.jvp(tanh_jvp_tangent, (x,), (1.0,))[1], d2, rtol=1e-12, atol=1e-15)
    assert np.isclose(tp.grad(tp.grad(tanh_jvp_tangent))(x), d3, rtol=1e-12, atol=1e-14)
    assert np.isclose(tp.jvp(tp.grad(tp.grad(tanh)), (x,), (1.0,))[1], d3, rtol=1e-12,
                      atol=1e-14)


def tanh_jvp_tangent(x):
    return tp.jvp(tanh, (x,), (1.0,))[1]


def test_jvp_of_tanh_on_arrays_scales_with_the_tangent():
    x = np.linspace(-2.0, 2.0, 7)
    v = np.linspace(0.5, -1.5, 7)
    out, dout = tp.jvp(tanh, (x,), (v,))
    np.testing.assert_allclose(out, np.tanh(x), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(dout, v / np.cosh(x) ** 2, rtol=1e-12, atol=1e-15)
    assert dout.shape == x.shape and dout.dtype == np.float64


def test_jvp_source_is_readable():
    source = tp.Transformed(tanh, "jvp", {"has_aux": False}).source
    assert "def tanh_jvp(x, x_dot):" in source
    assert "import transpile" not in source and "transpile." not in source.split('"""')[2]
    assert "y_dot" in source                   # tangents are named after the user's names


# =====================================================================================
# jvp against analytic derivatives
# =====================================================================================

def sin_times_x(x):
    return np.sin(x) * x


def bilinear(x, W, y):
    return x @ W @ y


def logsumexp(z):
    m = np.max(z)
    return m + np.log(np.sum(np.exp(z - m)))


def normalize(x):
    return x / np.sqrt(np.sum(x * x))


def layer(x, W, b):
    return np.tanh(x @ W + b)


def test_jvp_analytic_values():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4)
    v = rng.standard_normal(4)
    out, dout = tp.jvp(sin_times_x, (x,), (v,))
    np.testing.assert_allclose(out, np.sin(x) * x, rtol=1e-14)
    np.testing.assert_allclose(dout, (np.cos(x) * x + np.sin(x)) * v, rtol=1e-12)

    W = rng.standard_normal((4, 3))
    y = rng.standard_normal(3)
    dW, dy = rng.standard_normal((4, 3)), rng.standard_normal(3)
    out, dout = tp.jvp(bilinear, (x, W, y), (v, dW, dy))
    assert np.isclose(out, x @ W @ y, rtol=1e-13)
    assert np.isclose(dout, v @ W @ y + x @ dW @ y + x @ W @ dy, rtol=1e-12)

    out, dout = tp.jvp(logsumexp, (x,), (v,))
    p = np.exp(x - out)
    assert np.isclose(out, np.log(np.sum(np.exp(x))), rtol=1e-13)
    assert np.isclose(dout, p @ v, rtol=1e-12)

    out, dout = tp.jvp(normalize, (x,), (v,))
    r = np.linalg.norm(x)
    np.testing.assert_allclose(dout, v / r - x * (x @ v) / r ** 3, rtol=1e-11, atol=1e-14)

    X = rng.standard_normal((5, 4))
    b = rng.standard_normal(3)
    db = rng.standard_normal(3)
    out, dout = tp.jvp(layer, (X, W, b), (np.zeros_like(X), dW, db))
    np.testing.assert_allclose(dout, (1 - out ** 2) * (X @ dW + db), rtol=1e-11, atol=1e-14)


def test_jvp_of_python_float_is_float_and_has_aux():
    out, dout = tp.jvp(sin_times_x, (0.5,), (2.0,))
    assert np.isclose(dout, 2.0 * (math.cos(0.5) * 0.5 + math.sin(0.5)), rtol=1e-13)

    def with_aux(x):
        return np.sum(x ** 3), x * 2.0

    x = np.array([1.0, -2.0])
    out, dout, aux = tp.jvp(with_aux, (x,), (np.array([1.0, 0.5]),), has_aux=True)
    assert np.isclose(out, -7.0) and np.isclose(dout, 3.0 * 1.0 + 12.0 * 0.5)
    np.testing.assert_array_equal(aux, x * 2.0)


# =====================================================================================
# Any order, mixing modes, through a loop and a branch
# =====================================================================================

def looped(x):
    """sum_k c_k(x) with a loop and a branch on the (integer) trip counter."""
    acc = 0.0
    for k in range(1, 4):
        if k % 2 == 1:
            acc = acc + np.sin(k * x)
        else:
            acc = acc * x
    return acc


def looped_closed_form(x):
    """((sin x) x + sin 3x) and its derivatives 0..3, by hand."""
    s1, c1 = math.sin(x), math.cos(x)
    s3, c3 = math.sin(3 * x), math.cos(3 * x)
    f = s1 * x + s3
    d1 = c1 * x + s1 + 3 * c3
    d2 = -s1 * x + 2 * c1 - 9 * s3
    d3 = -c1 * x - 3 * s1 - 27 * c3
    return f, d1, d2, d3


def vec_looped(x):
    """R^3 -> scalar with a loop, a value-dependent branch and an accumulation."""
    total = 0.0
    h = x
    for i in range(3):
        if np.sum(h) > 0.0:
            h = np.tanh(h) * 1.5
        else:
            h = h * h - 0.5
        total = total + np.sum(h * x)
    return total


V = np.array([0.3, -0.7, 1.1])


def grad_of_jvp_target(x):
    return tp.jvp(vec_looped, (x,), (V,))[1]


def jvp_inside_scalar(x):
    return tp.jvp(looped, (x,), (1.0,))[1]


def jvp_of(f):
    return lambda x: tp.jvp(f, (x,), (1.0,))[1]


# (name, derivative order, function of x) for the scalar `looped`
SCALAR_COMPOSITIONS = [
    ("grad", 1, lambda: tp.grad(looped)),
    ("jvp", 1, lambda: jvp_of(looped)),
    ("jacfwd", 1, lambda: tp.jacfwd(looped)),
    ("jacrev", 1, lambda: tp.jacrev(looped)),
    ("grad of grad", 2, lambda: tp.grad(tp.grad(looped))),
    ("jvp of grad", 2, lambda: jvp_of(tp.grad(looped))),
    ("grad of jvp", 2, lambda: tp.grad(jvp_inside_scalar)),
    ("jvp of jvp", 2, lambda: jvp_of(jvp_inside_scalar)),
    ("jacfwd of jacrev", 2, lambda: tp.jacfwd(tp.jacrev(looped))),
    ("jacrev of jacfwd", 2, lambda: tp.jacrev(tp.jacfwd(looped))),
    ("hessian", 2, lambda: tp.hessian(looped)),
    ("grad of grad of grad", 3, lambda: tp.grad(tp.grad(tp.grad(looped)))),
    ("jvp of grad of grad", 3, lambda: jvp_of(tp.grad(tp.grad(looped)))),
    ("grad of grad of jvp", 3, lambda: tp.grad(tp.grad(jvp_inside_scalar))),
    ("grad of jvp of grad", 3, lambda: tp.grad(grad_inside_jvp)),
    ("jvp of jvp of jvp", 3, lambda: jvp_of(jvp_of(jvp_inside_scalar))),
]


grad_looped = tp.grad(looped)     # transformations inside transformed code take a name


def grad_inside_jvp(x):
    return tp.jvp(grad_looped, (x,), (1.0,))[1]


@pytest.mark.parametrize("name, order, make", SCALAR_COMPOSITIONS,
                         ids=[c[0].replace(" ", "_") for c in SCALAR_COMPOSITIONS])
def test_mixed_orders_through_loop_and_branch_scalar(name, order, make):
    f = make()
    for x in (0.4, 1.3, -0.8):
        want = looped_closed_form(x)[order]
        got = f(x)
        assert np.shape(got) == ()
        assert np.isclose(got, want, rtol=1e-12, atol=1e-13), (name, x, got, want)


grad_vec_looped = tp.grad(vec_looped)


def hvv(x):
    """v^T H(x) v by jvp of grad: the directional second derivative of vec_looped."""
    return tp.jvp(grad_vec_looped, (x,), (V,))[1] @ V


VECTOR_COMPOSITIONS = [
    ("jacfwd of jacrev", lambda: tp.jacfwd(tp.jacrev(vec_looped))),
    ("jacrev of jacfwd", lambda: tp.jacrev(tp.jacfwd(vec_looped))),
    ("hessian", lambda: tp.hessian(vec_looped)),
    ("jacfwd of grad", lambda: tp.jacfwd(tp.grad(vec_looped))),
    ("jacrev of grad", lambda: tp.jacrev(tp.grad(vec_looped))),
    ("jvp of grad", lambda: lambda x: np.outer(tp.jvp(tp.grad(vec_looped), (x,), (V,))[1], V)),
    ("grad of jvp", lambda: lambda x: np.outer(tp.grad(grad_of_jvp_target)(x), V)),
]


def _vector_point(seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.2, 1.0, 3) * (1 if seed % 2 == 0 else -1)


@pytest.mark.parametrize("name, make", VECTOR_COMPOSITIONS,
                         ids=[c[0].replace(" ", "_") for c in VECTOR_COMPOSITIONS])
def test_mixed_orders_through_loop_and_branch_vector(name, make):
    f = make()
    for seed in (0, 1):
        x = _vector_point(seed)
        np.testing.assert_allclose(tp.grad(vec_looped)(x), fd_jacobian(vec_looped, x),
                                   rtol=1e-6, atol=1e-7)
        hess_fd = fd_jacobian(tp.grad(vec_looped), x)   # finite differences of exact grad
        got = f(x)
        if name in ("jvp of grad", "grad of jvp"):      # H v (H is symmetric), as outer(Hv, v)
            hess_fd = np.outer(hess_fd @ V, V)
        np.testing.assert_allclose(got, hess_fd, rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("third", ["jvp of (jvp of grad)", "grad of (jvp of grad)"])
def test_third_order_directional_derivative_vector(third):
    """d/dt v^T H(x + t v) v, by finite differences of the exact Hessian and by transforms."""
    for seed in (0, 1):
        x = _vector_point(seed)
        want = fd(lambda t: V @ tp.jacfwd(tp.grad(vec_looped))(x + t * V) @ V, 0.0,
                  eps=1e-5)
        if third.startswith("jvp"):
            got = tp.jvp(hvv, (x,), (V,))[1]
        else:
            got = tp.grad(hvv)(x) @ V
        assert np.isclose(got, want, rtol=1e-5, atol=1e-6), (third, got, want)


def tanh_chain(x):
    """tanh(x) + tanh(tanh(x)): a loop that overwrites h and accumulates it."""
    h = x
    total = 0.0
    for t in range(2):
        h = np.tanh(h)
        total = total + h
    return total


def exp_chain(x):
    """exp(x) + exp(exp(x)), the same shape of loop."""
    h = x
    total = 0.0
    for t in range(2):
        h = np.exp(h)
        total = total + h
    return total


def chain_derivatives(f, x):
    """Derivatives 1..3 at x = 0.3 (tanh_chain: 25 digits from mpmath.diff) or any x
    (exp_chain: with a = e^x, b = e^a, the derivatives are d1 = a + ab, d2 = d1 + a^2 b,
    d3 = d1 + 3 a^2 b + a^3 b)."""
    if f is tanh_chain:
        assert x == 0.3
        return (1.756804011836238223270566, -1.460042131694531796920973,
                -2.926376522046412535298348)
    a = math.exp(x)
    b = math.exp(a)
    return (a + a * b, a + a * b + a * a * b, a + a * b + 3 * a * a * b + a ** 3 * b)


@pytest.mark.parametrize("f", [tanh_chain, exp_chain])
@pytest.mark.parametrize("how", ["grad", "jvp of grad", "jvp of jvp"])
def test_third_derivative_through_a_loop_that_overwrites_and_accumulates(f, how):
    x = 0.3
    want = chain_derivatives(f, x)
    g1 = tp.grad(f)
    g2 = tp.grad(g1)
    if how == "grad":
        got = (g1(x), g2(x), tp.grad(g2)(x))
    elif how == "jvp of grad":
        got = (g1(x), tp.jvp(g1, (x,), (1.0,))[1], tp.jvp(g2, (x,), (1.0,))[1])
    else:
        got = (tp.jvp(f, (x,), (1.0,))[1], tp.jvp(jvp_of(f), (x,), (1.0,))[1],
               tp.jvp(jvp_of(jvp_of(f)), (x,), (1.0,))[1])
    for k, (a, b) in enumerate(zip(got, want), 1):
        assert np.isclose(a, b, rtol=1e-12), f"{how}: derivative {k} is {a!r}, exact {b!r}"


# =====================================================================================
# check_grads, order 3, forward and reverse, over a corpus of programs
# =====================================================================================

def helper(a, b):
    return a * np.cos(b) + b


def calls_helper(x, y):
    z = helper(x, y)
    return helper(z, x * y)


def recursive_power(x, n):
    if n == 0:
        return np.ones_like(x)
    return np.sin(x) * recursive_power(x, n - 1)


def while_loop(x):
    y = x
    k = 0
    while k < 3:
        y = np.sin(y) + 0.5 * y
        k += 1
    return y


def loop_with_branch(x, w):
    acc = np.zeros_like(x)
    for i in range(3):
        if i % 2 == 0:
            acc = acc + np.sin(w * x)
        else:
            acc = acc * np.tanh(x) + w
    return acc


def in_place(x):
    y = np.zeros(4)
    y[0] = x[0] * x[1]
    y[1:3] = np.sin(x[1:3]) * x[0]
    y[3] += y[0] ** 2
    y[2] *= x[2]
    return y


W_CLOSED = np.array([[0.5, -1.0], [0.3, 0.8], [-0.2, 0.4]])


def make_closure(scale):
    def model(x):
        h = np.tanh(x @ W_CLOSED) * scale
        return np.sum(h ** 2) + np.exp(scale * x[0])
    return model


closure_model = make_closure(0.7)


def list_rnn(x, W):
    hs = []
    h = x
    for t in range(2):
        h = np.tanh(h @ W + 0.1 * t)
        hs.append(h)
    return np.stack(hs) * 1.0 + np.sum(hs[0])


def early_return(x):
    for i in range(4):
        x = x * 0.9 + np.sin(x)
        if i == 1:
            return x * x
    return x


def make_scaled_caller(k):
    def inner(x):
        return np.sin(x) * k
    def outer(x):
        return inner(x) * 2.0
    return outer


def test_closures_over_fresh_functions_get_their_own_code():
    """Each call of the factory makes a new `inner` (a new object with a new k); its code
    must not be reused for another factory call, even after the old one is collected."""
    for k in range(1, 6):
        x = 0.3
        f = make_scaled_caller(float(k))
        assert np.isclose(tp.grad(f)(x), 2.0 * k * math.cos(x), rtol=1e-13), k
        assert np.isclose(tp.jvp(f, (x,), (1.0,))[1], 2.0 * k * math.cos(x), rtol=1e-13), k
        del f


CORPUS = [
    (calls_helper, lambda r: (r.standard_normal(3), r.standard_normal(3))),
    (recursive_power, lambda r: (r.standard_normal(3), 3)),
    (while_loop, lambda r: (r.standard_normal(4),)),
    (loop_with_branch, lambda r: (r.standard_normal(3), r.standard_normal(3))),
    (in_place, lambda r: (r.standard_normal(3),)),
    (closure_model, lambda r: (r.standard_normal(3),)),
    (list_rnn, lambda r: (r.standard_normal(2), 0.5 * r.standard_normal((2, 2)))),
    (early_return, lambda r: (r.standard_normal(3),)),
]
IDS = ["closure_model" if f is closure_model else f.__name__ for f, _ in CORPUS]


@pytest.mark.parametrize("f, make_args", CORPUS, ids=IDS)
def test_check_grads_order3_fwd_and_rev(f, make_args):
    rng = np.random.default_rng(zlib.crc32(f.__name__.encode()))
    args = make_args(rng)
    out, _ = tp.jvp(f, args, tuple(np.zeros_like(a) if isinstance(a, np.ndarray) else 0
                                   for a in args))
    np.testing.assert_allclose(out, f(*args), rtol=1e-13, atol=1e-14)
    check_grads(f, args, order=3, modes=("fwd", "rev"), seed=7)


# =====================================================================================
# The generated source of a Hessian is readable
# =====================================================================================

def hess_target(x):
    h = x
    for i in range(2):
        if np.sum(h) > 0.0:
            h = np.tanh(h)
        else:
            h = h * 0.5
    return np.sum(h * h)


def _functions(source):
    tree = ast.parse(source)
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)]


def _dead_assignments(fn):
    """Plain `name = value` statements whose name is never read afterwards.

    Reads anywhere in the function count (a loop may read a name before its assignment in
    the text); unpacking targets (`out, out_dot = pair`) may leave a part unused and are
    not checked.
    """
    loads = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and
             isinstance(n.ctx, ast.Load)}
    dead = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and node.targets[0].id not in loads:
            dead.append(ast.unparse(node))
    return dead


def test_hessian_source_is_readable():
    h = tp.jacfwd(tp.jacrev(hess_target))
    x = np.array([0.3, -0.1, 0.5])
    np.testing.assert_allclose(h(x), fd_jacobian(tp.grad(hess_target), x), rtol=1e-6,
                               atol=1e-8)
    source = h.source
    compile(source, "<hessian>", "exec")
    assert "def " in source
    assert "import transpile" not in source and "from transpile" not in source
    functions = _functions(source)
    assert functions[0].name == "jacfwd_jacrev_hess_target", source
    for fn in functions:
        dead = _dead_assignments(fn)
        assert not dead, f"dead statements in {fn.name}: {dead}\n{source}"
        assert len(fn.body) < 80, f"{fn.name} is {len(fn.body)} statements long"
    assert "for i in range(" in source            # the loop over basis vectors is visible
    assert source == tp.jacfwd(tp.jacrev(hess_target)).source   # deterministic


def affine_loss(W, x, y):
    return np.sum((np.tanh(x @ W) - y) ** 2)


def test_zero_tangents_make_constants():
    """An argument whose tangent is zero is a constant of the generated jvp (no products
    with its zero tangent), with the same result as a full jvp."""
    rng = np.random.default_rng()
    W, x, y = rng.standard_normal((4, 3)), rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
    dW = rng.standard_normal((4, 3))
    out, dout = tp.jvp(affine_loss, (W, x, y), (dW, np.zeros_like(x), np.zeros_like(y)))
    eps = 1e-6
    fd = (affine_loss(W + eps * dW, x, y) - affine_loss(W - eps * dW, x, y)) / (2 * eps)
    np.testing.assert_allclose(dout, fd, rtol=1e-6)
    np.testing.assert_allclose(out, affine_loss(W, x, y))
    import transpile.api as api
    texts = [g.text for k, g in api._CACHE.items() if k[0] == "jvp" and
             dict(k[1]).get("active") == (True, False, False)]
    assert texts and "x_dot" not in texts[-1] and "y_dot" not in texts[-1]


def layers(params, x):
    for W in params:
        x = np.tanh(x @ W)
    return np.sum(x ** 2)


def test_loop_entry_tangent_is_a_lazy_zero():
    """A tangent that enters a loop as zeros (x, reassigned in the loop from active values)
    is rt.zero_tangent: the first trip's product with it is skipped; results unchanged."""
    from runtime.trees import ZeroTangent, zero_tangent
    rng = np.random.default_rng()
    params = [rng.standard_normal((4, 4)) for _ in range(3)]
    dparams = [rng.standard_normal((4, 4)) for _ in range(3)]
    x = rng.standard_normal((5, 4))
    out, dout = tp.jvp(layers, (params, x), (dparams, np.zeros_like(x)))
    eps = 1e-6
    plus = layers([p + eps * d for p, d in zip(params, dparams)], x)
    minus = layers([p - eps * d for p, d in zip(params, dparams)], x)
    np.testing.assert_allclose(dout, (plus - minus) / (2 * eps), rtol=1e-6)
    z = zero_tangent(x)
    W = rng.standard_normal((4, 3))
    assert isinstance(z @ W, ZeroTangent) and (z @ W).shape == (5, 3)
    y = rng.standard_normal((5, 3))
    s = z @ W + y
    assert type(s) is np.ndarray and np.array_equal(s, y) and s is not y
    assert type(np.sin(z)) is np.ndarray          # anything else computes with zeros
    c = z.copy()
    c[0, 0] = 1.0                                 # copies are ordinary, writable arrays
    assert type(c) is np.ndarray and not z.any()
    with pytest.raises(ValueError):
        z[0, 0] = 1.0


def _scaled_sine(a, k=2.0, shift=0.5):
    return np.sum(np.sin(a * k + shift))


def _jvp_inside(a):
    return tp.jvp(_scaled_sine, (a,), (a,))[1]


def test_jvp_inside_transformed_code_of_a_function_with_defaults():
    """tp.jvp(g, (a,), (t,)) inside transformed code, g with parameters left at their
    defaults: they are constants of the jvp, as at the top level (the call passed too few
    arguments, a TypeError; check_grads' second-order forward check of any function with a
    default parameter met it)."""
    a = np.random.default_rng(5).uniform(-1.0, 1.0, size=4)
    inner = np.cos(2 * a + 0.5)
    assert np.isclose(_jvp_inside(a), np.sum(inner * 2 * a))
    want = 2 * inner - 4 * a * np.sin(2 * a + 0.5)        # d/da of sum(cos(2a+.5) 2a)
    np.testing.assert_allclose(tp.grad(_jvp_inside)(a), want, rtol=1e-12)
    np.testing.assert_allclose(tp.jvp(_jvp_inside, (a,), (np.ones(4),))[1], np.sum(want),
                               rtol=1e-12)
    check_grads(_scaled_sine, (a,), order=3, modes=("fwd", "rev"))


# ---------------------------------------------------------------- linearize, linear_transpose

def test_linearize_gives_the_jvp_at_the_primals():
    rng = np.random.default_rng()
    x, w = rng.normal(size=5), rng.normal(size=(3, 5))

    def f(x, w):
        return np.tanh(w @ np.sin(x))

    out, f_jvp = tp.linearize(f, x, w)
    np.testing.assert_allclose(out, f(x, w))
    for _ in range(2):
        dx, dw = rng.normal(size=5), rng.normal(size=(3, 5))
        np.testing.assert_allclose(f_jvp(dx, dw), tp.jvp(f, (x, w), (dx, dw))[1])
        eps = 1e-6
        fd = (f(x + eps * dx, w + eps * dw) - f(x - eps * dx, w - eps * dw)) / (2 * eps)
        np.testing.assert_allclose(f_jvp(dx, dw), fd, rtol=1e-6, atol=1e-9)
    with pytest.raises(TypeError, match="takes 2 tangents"):
        f_jvp(dx)
    out, f_jvp, aux = tp.linearize(lambda x: (np.sum(x ** 3), x[0]), x, has_aux=True)
    assert aux == x[0]
    np.testing.assert_allclose(f_jvp(np.ones(5)), np.sum(3 * x ** 2))


def test_linear_transpose_is_the_adjoint():
    rng = np.random.default_rng()
    a = rng.normal(size=(4, 3))

    def f(x, y):
        return a @ x + 2.0 * np.cumsum(y)[:4]

    f_t = tp.linear_transpose(f, np.zeros(3), np.zeros(6))
    u, x, y = rng.normal(size=4), rng.normal(size=3), rng.normal(size=6)
    tx, ty = f_t(u)
    # <u, f(x, y)> = <f^T u, (x, y)>
    np.testing.assert_allclose(u @ f(x, y), tx @ x + ty @ y)
    np.testing.assert_allclose(tx, a.T @ u)

    class Spec:                      # shapes and dtypes only, as jax.ShapeDtypeStruct
        shape, dtype = (3,), np.float64
    g_t = tp.linear_transpose(lambda x: 3.0 * x[::-1], Spec())
    np.testing.assert_allclose(g_t(u[:3])[0], 3.0 * u[:3][::-1])


def _quadratic_sine(x, y):
    return np.sum(np.sin(x) * y ** 2)


def test_jvp_inside_code_of_a_tuple_given_whole():
    """JAX's hvp_revfwd: the primals a parameter (a tuple), the tangents a closure's tuple;
    each is read item by item, as many as the other has (checked when the code runs)."""
    rng = np.random.default_rng()
    x, y, dx, dy = (rng.normal(size=3) for _ in range(4))

    def hvp_revfwd(f, primals, tangents):
        g = lambda primals: tp.jvp(f, primals, tangents)[1]     # noqa: E731
        return tp.grad(g)(primals)

    got = hvp_revfwd(_quadratic_sine, (x, y), (dx, dy))
    hessian = tp.hessian(lambda v: _quadratic_sine(v[:3], v[3:]))(np.concatenate([x, y]))
    want = hessian @ np.concatenate([dx, dy])
    np.testing.assert_allclose(np.concatenate(got), want, rtol=1e-12)

    def wrong_count(p):
        return tp.jvp(_quadratic_sine, p, (dx, dy))[1]

    with pytest.raises(tp.TransformError, match="got 3 primals or tangents where the other "
                       "tuple has 2"):
        tp.grad(wrong_count)((x, y, x))


class _Cone:
    def __init__(self, beta):
        self._beta = beta


def _cone_logpdf(self, x):
    return -np.linalg.norm(x) ** self._beta


def test_jvp_of_a_partial_binding_an_object():
    # PINTS' toy densities are methods reading self's attributes: jvp of
    # functools.partial(f, obj) treated obj as a differentiated argument (with a zero
    # tangent) and refused its attribute reads, which grad and vmap of the same accept
    rng = np.random.default_rng()
    x, v = rng.normal(size=3), rng.normal(size=3)
    cone = _Cone(rng.uniform(1.2, 2.0))
    out, tangent = tp.jvp(functools.partial(_cone_logpdf, cone), (x,), (v,))
    norm = np.linalg.norm(x)
    assert np.isclose(out, -norm ** cone._beta)
    assert np.isclose(tangent, -cone._beta * norm ** (cone._beta - 2) * (x @ v))
