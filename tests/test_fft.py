"""numpy.fft: derivatives in both modes to second order, complex inputs (JAX's convention:
the gradient of a real f of z = x + iy is df/dx - i df/dy), every norm, sizes n/s below and
above the axis length, several axes, even and odd lengths for the real transforms, batching
against a loop, and the variants that are refused.

Each case is an expression of `z` (complex) or `x` (real). Reverse and forward mode are checked
against finite differences along real and imaginary directions (for complex inputs
check_grads alone only moves along the real axis), second order through the gradient of a
real loss, and the gradients against JAX where it is installed. Inputs are fresh random
values (the seed is printed on failure; TP_SEED replays).
"""
import linecache
import os
import warnings

import numpy as np
import numpy.fft as nfft
import pytest

import transpile as tp
from transpile.test_util import check_grads
from runtime.trees import tree_leaves, tree_map

SEED = int(os.environ.get("TP_SEED", np.random.SeedSequence().entropy % (1 << 32)))


def _rng(*key):
    return np.random.default_rng([SEED, *key])


_COUNTER = iter(range(1 << 30))


def define(params, body):
    """A function `(params) -> body` with a source file, so transformations can read it."""
    name = f"case{next(_COUNTER)}"
    text = f"import numpy as np\nfrom numpy.fft import fft, rfft2\n\n\ndef {name}({params}):\n" \
           f"    return {body}\n"
    filename = f"<test_fft:{name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    env = {}
    exec(compile(text, filename, "exec"), env)  # noqa: S102
    return env[name]


def C(r, *shape):
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


def R(r, *shape):
    return r.standard_normal(shape)


# the input of each kind of case: complex (z) or real (x), 2-D or 3-D; the half spectra of
# irfft have 4 bins on their last axis (n = 6 by default)
INPUTS = {"z2": ("z", lambda r: C(r, 4, 6)), "z3": ("z", lambda r: C(r, 3, 5, 4)),
          "x2": ("x", lambda r: R(r, 4, 6)), "x2odd": ("x", lambda r: R(r, 5, 5)),
          "x3": ("x", lambda r: R(r, 3, 5, 4))}

CASES = [
    # complex transforms: n below and above the axis length, each axis, each norm
    ("np.fft.fft(z)", "z2"), ("np.fft.fft(z, 4)", "z2"), ("np.fft.fft(z, 9, 0)", "z2"),
    ("np.fft.fft(z, norm='ortho')", "z2"), ("np.fft.fft(z, 5, axis=-2, norm='forward')", "z2"),
    ("np.fft.fft(z, None, 1, 'backward')", "z2"), ("np.fft.fft(z, 3, 2)", "z3"),
    ("np.fft.ifft(z)", "z2"), ("np.fft.ifft(z, 3, 0, 'ortho')", "z2"),
    ("np.fft.ifft(z, 8, norm='forward')", "z2"), ("np.fft.ifft(z, axis=1)", "z3"),
    ("np.fft.fft2(z)", "z2"), ("np.fft.fft2(z, (3, 8))", "z2"),
    ("np.fft.fft2(z, s=(5, 4), axes=(1, 0), norm='ortho')", "z2"),
    ("np.fft.fft2(z, axes=(0, 2))", "z3"), ("np.fft.ifft2(z, norm='forward')", "z2"),
    ("np.fft.ifft2(z, (6, 3))", "z2"), ("np.fft.ifft2(z, (2, 7), (-1, 0))", "z3"),
    ("np.fft.fftn(z)", "z3"), ("np.fft.fftn(z, axes=(0, 2))", "z3"),
    ("np.fft.fftn(z, (2, 7), (2, 0), 'ortho')", "z3"),
    ("np.fft.fftn(z, s=(4, 3, 6), axes=(0, 1, 2), norm='forward')", "z3"),
    ("np.fft.fftn(z, (3, 4), axes=(0, 0))", "z3"),          # one axis twice
    ("np.fft.fftn(z, (-1, 7), axes=(1, 2))", "z3"),         # -1: the axis' own length
    ("np.fft.ifftn(z)", "z3"), ("np.fft.ifftn(z, (6, 2), axes=(1, 2))", "z3"),
    ("np.fft.ifftn(z, axes=(-1,), norm='ortho')", "z3"), ("np.fft.ifftn(z, axes=(1, 0))", "z2"),
    # real input to the complex transforms
    ("np.fft.fft(x, 5)", "x2"), ("np.fft.fftn(x, norm='ortho')", "x3"),
    ("np.fft.ifft2(x)", "x2odd"),
    # rfft: even and odd lengths, n below and above
    ("np.fft.rfft(x)", "x2"), ("np.fft.rfft(x)", "x2odd"), ("np.fft.rfft(x, 7)", "x2"),
    ("np.fft.rfft(x, 4)", "x2odd"), ("np.fft.rfft(x, 3, 0, 'ortho')", "x2"),
    ("np.fft.rfft(x, axis=0, norm='forward')", "x2odd"), ("np.fft.rfft(x, 8, 1)", "x3"),
    ("np.fft.rfft2(x)", "x2"), ("np.fft.rfft2(x, (5, 7))", "x2"),
    ("np.fft.rfft2(x, (3, 4), axes=(1, 0), norm='ortho')", "x2odd"),
    ("np.fft.rfftn(x)", "x3"), ("np.fft.rfftn(x, (4, 3), axes=(2, 0))", "x3"),
    ("np.fft.rfftn(x, axes=(1,), norm='forward')", "x3"),
    ("np.fft.rfftn(x, (2, 6, 5), (0, 1, 2), 'ortho')", "x3"),
    # irfft: its input is a half spectrum; the output length n even and odd
    ("np.fft.irfft(z)", "z2"), ("np.fft.irfft(z, 7)", "z2"), ("np.fft.irfft(z, 8)", "z2"),
    ("np.fft.irfft(z, 3)", "z2"), ("np.fft.irfft(z, 5, axis=0, norm='ortho')", "z2"),
    ("np.fft.irfft(z, norm='forward')", "z2"), ("np.fft.irfft(z, 6, 1)", "z3"),
    ("np.fft.irfft2(z)", "z2"), ("np.fft.irfft2(z, (3, 5))", "z2"),
    ("np.fft.irfft2(z, (6, 6), axes=(1, 0), norm='ortho')", "z2"),
    ("np.fft.irfftn(z)", "z3"), ("np.fft.irfftn(z, (4, 7), axes=(0, 2))", "z3"),
    ("np.fft.irfftn(z, axes=(1,), norm='forward')", "z3"),
    ("np.fft.irfftn(z, (2, 5, 4), (2, 0, 1), 'ortho')", "z3"),
    ("np.fft.irfft(x, 5)", "x2"),                            # a real half spectrum
    # shifts, odd and even lengths
    ("np.fft.fftshift(z)", "z3"), ("np.fft.fftshift(x, axes=1)", "x2odd"),
    ("np.fft.ifftshift(z, axes=(0, 2))", "z3"), ("np.fft.ifftshift(x)", "x2odd"),
    # compositions
    ("np.fft.ifft(np.fft.fft(z) * np.fft.fftshift(z))", "z2"),
    ("np.fft.irfft(np.fft.rfft(x) ** 2, 5)", "x2odd"),
    # the spellings a user may write
    ("fft(z, 5)", "z2"), ("rfft2(x, axes=(0, 1))", "x2"),
]
IDS = [f"{e}-{k}" for e, k in CASES]

TRANSFORMS = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
              "irfft2", "rfftn", "irfftn"]
NORMS = [None, "backward", "ortho", "forward"]


def loss_of(expr):
    """A real, non-linear function of the transform's result (so that second derivatives
    go through the transposes of the transposes)."""
    return f"np.sum(np.sin(np.real({expr})) + np.abs({expr}) ** 2)"


def _pairing(a, b):
    """Re <a, b> without conjugation: the pairing under which vjp is the transpose of jvp
    for the convention df/dx - i df/dy."""
    return sum(float(np.real(np.sum(np.asarray(x) * np.asarray(y))))
               for x, y in zip(tree_leaves(a), tree_leaves(b)))


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


def check_complex(f, args, r, tol=1e-6):
    """vjp and jvp of `f` against finite differences along the real and the imaginary part of
    each argument; a real input gets a real gradient, a real output a real tangent."""
    for part in ("re", "im"):
        v = [_direction(a, part, r) for a in args]
        numeric = _numeric_jvp(f, args, v)
        out, vjp_fn = tp.vjp(f, *args)
        u = tree_map(lambda o: r.standard_normal(np.shape(o)) + (
            1j * r.standard_normal(np.shape(o)) if np.iscomplexobj(o) else 0), out)
        cot = vjp_fn(u)
        for c, a in zip(tree_leaves(cot), tree_leaves(args)):
            assert np.iscomplexobj(c) == np.iscomplexobj(a) and np.shape(c) == np.shape(a)
        got, want = _pairing(cot, v), _pairing(u, numeric)
        assert np.isclose(got, want, rtol=tol, atol=tol), \
            f"reverse mode along the {part} part: {got} vs {want} (TP_SEED={SEED})"
        _, tangent = tp.jvp(f, tuple(args), tuple(v))
        for t, o, n in zip(tree_leaves(tangent), tree_leaves(out), tree_leaves(numeric)):
            assert np.iscomplexobj(t) <= np.iscomplexobj(o), "complex tangent of a real output"
            np.testing.assert_allclose(t, n, rtol=tol, atol=tol,
                                       err_msg=f"forward mode, {part} part (TP_SEED={SEED})")


def _key(expr, kind):
    return (sum(map(ord, expr + kind)),)


# ---------------------------------------------------------------- derivatives

@pytest.mark.parametrize("expr,kind", CASES, ids=IDS)
def test_first_order_real_and_imaginary_directions(expr, kind):
    name, make = INPUTS[kind]
    r = _rng(*_key(expr, kind))
    check_complex(define(name, expr), (make(r),), r)


@pytest.mark.parametrize("expr,kind", CASES, ids=IDS)
def test_second_order(expr, kind):
    """The gradient of a real loss, itself checked along real and imaginary directions in both
    modes (vjp of grad, jvp of grad); and check_grads to second order in both modes (grad of
    grad, jvp of jvp, ...), with a complex input split into its real and imaginary parts so
    that every direction is checked."""
    name, make = INPUTS[kind]
    r = _rng(*_key(expr, kind), 2)
    arg = make(r)
    check_complex(tp.grad(define(name, loss_of(expr))), (arg,), r, tol=1e-5)
    if name == "z":
        split = define("x, y", loss_of(expr.replace("z", "(x + 1j * y)")))
        check_grads(split, (np.real(arg), np.imag(arg)), order=2, modes=("fwd", "rev"),
                    seed=r.integers(1 << 31))
    else:
        check_grads(define(name, loss_of(expr)), (arg,), order=2, modes=("fwd", "rev"),
                    seed=r.integers(1 << 31))


@pytest.mark.parametrize("fn", TRANSFORMS)
@pytest.mark.parametrize("norm", NORMS, ids=[str(n) for n in NORMS])
def test_every_norm(fn, norm):
    kind = "x3" if fn.startswith("rfft") else "z3"
    expr = f"np.fft.{fn}({kind[0]}, norm={norm!r})"
    name, make = INPUTS[kind]
    r = _rng(*_key(expr, kind))
    arg = make(r)
    check_complex(define(name, expr), (arg,), r)
    check_complex(tp.grad(define(name, loss_of(expr))), (arg,), r, tol=1e-5)


def test_parseval_gradients():
    """sum |fft(x)|^2 = n sum |x|^2 (norm "backward"), = sum |x|^2 ("ortho"): the gradients
    are 2 n conj(z) and 2 conj(z) under JAX's convention, real and complex inputs alike."""
    r = _rng(1)
    z, x = C(r, 8), R(r, 7)
    power = define("z", "np.sum(np.abs(np.fft.fft(z)) ** 2)")
    np.testing.assert_allclose(tp.grad(power)(z), 16 * np.conj(z), rtol=1e-12)
    g = tp.grad(power)(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 14 * x, rtol=1e-12)
    ortho = define("z", "np.sum(np.abs(np.fft.fftn(z, norm='ortho')) ** 2)")
    w = C(r, 3, 4)
    np.testing.assert_allclose(tp.grad(ortho)(w), 2 * np.conj(w), rtol=1e-12)
    real_part = define("x", "np.sum(np.real(np.fft.fft(x)))")
    np.testing.assert_allclose(tp.grad(real_part)(x), np.real(np.fft.fft(np.ones(7))),
                               atol=1e-12)


def test_irfft_ignores_the_imaginary_parts_it_drops():
    """irfft reads bin 0 (and bin n/2 for even n) as real: their imaginary parts get a zero
    gradient, the others do not."""
    r = _rng(2)
    for n, dropped in ((6, [0, 3]), (7, [0])):
        z = C(r, 4)
        g = tp.grad(define("z", f"np.sum(np.sin(np.fft.irfft(z, {n})))"))(z)
        np.testing.assert_array_equal(np.imag(g)[dropped], 0.0)
        assert np.all(np.imag(np.delete(g, dropped)) != 0.0)


def test_float32_stays_float32():
    """In the adjoint helpers themselves (rt.as_grad would hide a float64 one), and in the
    gradients and tangents."""
    import runtime as rt
    g32, c64 = np.ones((2, 5), np.float32), np.ones((2, 3), np.complex64)
    assert rt.fft_adj(g32, (2, 4), 5).dtype == np.complex64
    assert rt.rfft_adj(c64, (2, 4), 5, norm="ortho").dtype == np.float32
    assert rt.irfft_adj(g32, (2, 3), 5).dtype == np.complex64
    assert rt.rfftn_adj(c64, (2, 4), (2, 5)).dtype == np.float32
    assert rt.irfftn_adj(g32, (2, 3), (2, 5), norm="forward").dtype == np.complex64
    r = _rng(3)
    x = R(r, 4, 5).astype(np.float32)
    for expr in ("np.fft.rfft(x)", "np.fft.fft2(x)", "np.fft.irfft(np.fft.rfft(x), 5)",
                 "np.fft.rfftn(x, (3, 6), axes=(0, 1))"):
        f = define("x", loss_of(expr))
        g = tp.grad(f)(x)
        assert g.dtype == np.float32, expr
        want = tp.grad(f)(x.astype(np.float64))
        np.testing.assert_allclose(g, want, rtol=1e-3, atol=1e-3)
        _, t = tp.jvp(define("x", expr), (x,), (x,))
        assert t.dtype in (np.float32, np.complex64), expr


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_gradients_match_jax(kind):
    """The gradients of the losses of all the cases of one input kind, summed (one compiled
    JAX function per kind), then case by case to name a failing one."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    name, make = INPUTS[kind]
    # jax.numpy.fft takes neither a repeated axis nor -1 in s
    exprs = [e for e, k in CASES if k == kind and "axes=(0, 0)" not in e and "(-1, 7)" not in e]
    env = {"jnp": jnp, "fft": jnp.fft.fft, "rfft2": jnp.fft.rfft2}

    def compare(exprs):
        text = " + ".join(loss_of(e) for e in exprs)
        r = _rng(sum(map(ord, text)))
        arg = make(r)
        want = jax.jit(jax.grad(eval(f"lambda {name}: " + text.replace("np.", "jnp."),
                                     env)))(arg)  # noqa: S307
        got = tp.grad(define(name, text))(arg)
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-9, atol=1e-9)
    try:
        compare(exprs)
    except AssertionError:
        for expr in exprs:
            try:
                compare([expr])
            except AssertionError as e:
                raise AssertionError(f"{expr}: {e}\n  (replay with TP_SEED={SEED})") from None
        raise


def spectral_energy(x):
    product = np.fft.rfft(x, 6) * np.fft.rfft(x[::-1], 6)
    return np.sum(np.fft.irfft(product, 5) ** 3) + np.sum(
        np.abs(np.fft.fft2(np.reshape(x, (2, 3)), (3, 2), norm="ortho")) ** 4)


def test_hessian_against_finite_differences_of_the_gradient():
    """tp.hessian (forward over reverse, batched over the basis) and jacrev of grad (reverse
    over reverse): the rules of the adjoint helpers under vmap and in both modes."""
    x = _rng(8).standard_normal(6)
    grad = tp.grad(spectral_energy)
    eps = 1e-6
    numeric = np.stack([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(6)])
    np.testing.assert_allclose(tp.hessian(spectral_energy)(x), numeric, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(tp.jacrev(grad)(x), numeric, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- vmap

def _loop(f, args, in_axes):
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, in_axes)])
            for k in range(n)]
    return np.stack(outs)


@pytest.mark.parametrize("expr,kind", CASES, ids=IDS)
def test_vmap_against_a_loop(expr, kind):
    """The batch on every axis of the stacked input in turn; vmap(grad) too."""
    name, make = INPUTS[kind]
    r = _rng(*_key(expr, kind), 4)
    examples = [make(r) for _ in range(3)]
    f, loss = define(name, expr), define(name, loss_of(expr))
    for axis in (0, -1, 1):
        stacked = np.stack(examples, axis=axis)
        got = tp.vmap(f, in_axes=(axis,))(stacked)
        np.testing.assert_allclose(got, _loop(f, (stacked,), (axis,)), rtol=1e-12, atol=1e-12)
    stacked = np.stack(examples, axis=1)
    got = tp.vmap(tp.grad(loss), in_axes=1)(stacked)
    np.testing.assert_allclose(got, _loop(tp.grad(loss), (stacked,), (1,)), rtol=1e-12,
                               atol=1e-12)


def batched_and_shared(z, w):
    return np.fft.ifft2(np.fft.fft2(z, (5, 4)) * np.fft.fftn(w, (5, 4), axes=(0, 1)))


def squared_spectrum(x):
    return np.fft.irfftn(np.fft.rfftn(x) ** 2, np.shape(x), axes=(0, 1))


def per_example_jvp(x, v):
    return tp.jvp(squared_spectrum, (x,), (v,))[1]


def test_vmap_of_two_arguments_one_shared_and_of_vmap():
    r = _rng(5)
    z, w = C(r, 4, 3, 6), C(r, 3, 6)
    for in_axes, args in (((1, None), (z, w)), ((None, 0), (w, np.moveaxis(z, 1, 0))),
                          ((-1, 2), (np.moveaxis(z, 1, -1), np.moveaxis(z, 1, 2)))):
        got = tp.vmap(batched_and_shared, in_axes=in_axes)(*args)
        np.testing.assert_allclose(got, _loop(batched_and_shared, args, in_axes), atol=1e-12)
    loss = define("z, w", "np.sum(np.abs(np.fft.ifft2(np.fft.fft2(z, (5, 4)) * "
                  "np.fft.fftn(w, (5, 4), axes=(0, 1)))) ** 2)")
    g = tp.vmap(tp.grad(loss, argnums=(0, 1)), in_axes=(0, None))(np.moveaxis(z, 1, 0), w)
    for k in range(3):
        want = tp.grad(loss, argnums=(0, 1))(z[:, k], w)
        np.testing.assert_allclose(g[0][k], want[0], atol=1e-10)
        np.testing.assert_allclose(g[1][k], want[1], atol=1e-10)
    # vmap of vmap: each example's transform over its own axes
    x, v = R(r, 2, 3, 4, 6), R(r, 2, 3, 4, 6)
    got = tp.vmap(tp.vmap(per_example_jvp))(x, v)
    want = np.stack([np.stack([per_example_jvp(x[i, j], v[i, j]) for j in range(3)])
                     for i in range(2)])
    np.testing.assert_allclose(got, want, atol=1e-12)
    f = define("z", "np.fft.fftn(z)[:3, :4] * np.fft.fftn(z, (3, 4), axes=None)")
    z = C(r, 4, 3, 5, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # s without axes
        got = tp.vmap(tp.vmap(f, in_axes=1), in_axes=2)(z)
        want = np.stack([np.stack([f(z[:, i, k]) for i in range(3)]) for k in range(5)])
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("expr", ["np.fft.fft(x, axis=-2)", "np.fft.rfft2(x)",
                                  "np.fft.fftshift(x, axes=(-2,))",
                                  "np.fft.ifftn(x, (2, 2), axes=None)"])
def test_an_axis_outside_the_example_raises_as_numpy_does(expr):
    """A negative axis beyond each example's rank must not reach the batch axis (numpy's
    error is an AxisError or an IndexError; AxisError is an IndexError)."""
    f = define("x", expr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(IndexError):
            f(np.ones(4))
        with pytest.raises(IndexError):
            tp.vmap(f)(np.ones((3, 4)))
        with pytest.raises(IndexError):
            tp.vmap(tp.vmap(f))(np.ones((2, 3, 4)))


def test_jit_matches_the_plain_call():
    r = _rng(6)
    x = R(r, 4, 6)
    for expr in ("np.fft.irfft(np.fft.rfft(x, 7) * 2.0, 6)",
                 "np.abs(np.fft.fftshift(np.fft.fft2(x, norm='ortho')))",
                 "np.fft.ifftn(np.fft.ifftshift(x), (3, 5), axes=(1, 0))"):
        f = define("x", expr)
        np.testing.assert_allclose(tp.jit(f)(x), f(x), rtol=1e-12, atol=1e-12)
    g = define("x", loss_of("np.fft.rfft2(x, (5, 5))"))
    np.testing.assert_allclose(tp.jit(tp.grad(g))(x), tp.grad(g)(x), rtol=1e-12)


# ---------------------------------------------------------------- spellings and refusals

def test_generated_code_spells_numpy_fft():
    src = tp.grad(define("z", "np.sum(np.abs(fft(z, 5)) ** 2)")).source
    assert "np.fft.fft(z, 5)" in src and "rt.fft_adj(" in src
    src = tp.vmap(define("z", "np.fft.fft2(z, axes=(0, 1))")).source
    assert "np.fft.fft2(z, None, rt.lane_fft_axes(" in src, src
    x = _rng(7).standard_normal(5)
    np.testing.assert_allclose(tp.grad(module_spelling)(x), tp.grad(define(
        "x", "np.sum(np.real(np.fft.rfft(x)) * np.arange(3.0))"))(x), rtol=1e-12)


def module_spelling(x):
    return np.sum(np.real(nfft.rfft(x)) * np.arange(3.0))


def test_a_function_of_numpy_fft_without_rule_is_named_exactly():
    """(every numpy.fft function has a rule or is written with them now: the message is
    asked of the table for one that has no row, np.fft.hfft being written)"""
    from transpile import rules
    msg = " ".join(rules.core.missing_rule_message(np.fft.hfft))
    assert "np.fft.hfft has no rule in transpile's primitive table" in msg
    assert '@rev("np.fft.hfft")' in msg and "transpile/rules/fft.py" in msg


def test_out_argument_is_refused():
    """numpy's `out=` would be written behind the transformations' back."""
    f = define("x, buf", "np.sum(np.real(np.fft.fft(x, out=buf)))")
    buf = np.zeros(4, complex)
    with pytest.raises(tp.TransformError, match="output array"):
        tp.grad(f)(np.ones(4), buf)
    with pytest.raises(tp.TransformError, match="output array"):
        tp.jvp(f, (np.ones(4), buf), (np.ones(4), buf))
    g = define("x, buf", "np.sum(np.fft.irfftn(x, None, None, None, buf))")
    with pytest.raises(tp.TransformError, match="output array"):
        tp.grad(g)(np.ones((2, 3)), np.zeros((2, 4)))


def test_sizes_and_axes_that_differ_between_examples_are_refused():
    x = np.ones((3, 8))
    f = define("x, n", "np.fft.fft(x, n)")
    with pytest.raises(tp.TransformError, match="np.fft.fft cannot be batched: its n"):
        tp.vmap(f)(x, np.array([4, 5, 6]))
    g = define("x, s", "np.fft.rfftn(x, s, axes=(0,))")
    with pytest.raises(tp.TransformError, match="np.fft.rfftn cannot be batched: its s"):
        tp.vmap(g)(x, np.array([[4], [5], [6]]))
    h = define("x, k", "np.fft.ifft(x, axis=k)")
    with pytest.raises(tp.TransformError, match="cannot be batched"):
        tp.vmap(h, in_axes=(None, 0))(np.ones((4, 4)), np.array([0, 1]))
    # the same axis in every example is fine
    np.testing.assert_allclose(tp.vmap(h, in_axes=(None, 0))(np.eye(4), np.array([1, 1])),
                               np.stack([np.fft.ifft(np.eye(4), axis=1)] * 2))


# ---------------------------------------------------------------- a value passed on as an
# argument (norm, s) reached the vmapped backward pass of jacrev as np.asarray of it (vmap
# reads a value unpacked from saved ones as a possible list): a 0-d array of "ortho" was
# no key of the norm table, None no norm, and s=None not a sequence

def _irfft_with(x, norm):
    return np.fft.irfft(x, norm=norm)


def _fftn_with(x, s):
    return np.real(np.fft.fftn(x, s=s, axes=(0, 1)))


def test_jacrev_with_norm_and_s_passed_as_values():
    r = np.random.default_rng(SEED)
    x = r.standard_normal(3)
    for norm in ("ortho", None, "forward"):
        np.testing.assert_allclose(tp.jacrev(_irfft_with)(x, norm),
                                   tp.jacfwd(_irfft_with)(x, norm), rtol=1e-12, atol=1e-14)
    y, pullback = tp.vjp(lambda z: _irfft_with(z, "ortho"), x)
    np.testing.assert_allclose(tp.vmap(pullback)(np.eye(4))[0],
                               tp.jacrev(_irfft_with)(x, "ortho"), rtol=1e-12, atol=1e-14)
    m = r.standard_normal((2, 3))
    np.testing.assert_allclose(tp.jacrev(_fftn_with)(m, None), tp.jacfwd(_fftn_with)(m, None),
                               rtol=1e-12, atol=1e-14)


def _hermitian_and_frequencies(x, z, d):
    return (np.fft.hfft(z), np.fft.hfft(z, 7, norm="ortho"), np.fft.hfft(z, 4, norm="forward"),
            np.fft.ihfft(x), np.fft.ihfft(x, 5, norm="ortho"), np.fft.ihfft(x, 9, norm="forward"),
            np.fft.fftfreq(7, d), np.fft.fftfreq(8), np.fft.rfftfreq(7, d),
            np.fft.rfftfreq(8, 0.1), np.fft.hfft(np.stack([z, z * 2]), axis=1),
            np.fft.ihfft(np.stack([x, x]), axis=-1))


def _hermitian_total(x, z, d):
    return sum(np.sum(np.abs(o) ** 2 * (k + 1))
               for k, o in enumerate(_hermitian_and_frequencies(x, z, d)))


def test_hfft_ihfft_and_the_sample_frequencies():
    """np.fft.hfft / ihfft (irfft and rfft of the conjugate, scaled the other way, as numpy
    computes them) and fftfreq / rfftfreq (differentiable in d) in transformed code."""
    r = np.random.default_rng(SEED)
    x, z, d = r.standard_normal(6), r.standard_normal(5) + 1j * r.standard_normal(5), 0.3
    for got, want in zip(tp.jit(_hermitian_and_frequencies)(x, z, d),
                         _hermitian_and_frequencies(x, z, d)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    check_grads(_hermitian_total, (x, z, d), order=2, modes=("rev", "fwd"))
    xs = r.standard_normal((3, 6))
    np.testing.assert_allclose(tp.vmap(_hermitian_total, (0, None, None))(xs, z, d),
                               [_hermitian_total(v, z, d) for v in xs], rtol=1e-12)


# ---------------------------------------------------------------- scipy.fft in transformed code

scipy_fft = pytest.importorskip("scipy.fft")


@pytest.mark.parametrize("name", ["dct", "idct"])
@pytest.mark.parametrize("kind", [1, 2, 3, 4])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_scipy_dct_and_idct(name, kind, norm):
    """scipy.fft.dct/idct, written on FFTs of twice the length: values against scipy for
    real and complex inputs, lengths down to 2, `n` and `axis`; derivatives to second order;
    vmap against a loop."""
    fn = getattr(scipy_fft, name)
    rng = np.random.default_rng([kind, len(str(norm)), len(name)])
    for size in (2, 5, 8):
        for x in (rng.normal(size=(3, size)),
                  rng.normal(size=(3, size)) + 1j * rng.normal(size=(3, size))):
            got = tp.jit(lambda v: fn(v, type=kind, norm=norm))(x)
            expected = fn(x, type=kind, norm=norm)
            assert got.dtype == expected.dtype
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    x = rng.normal(size=(4, 6))
    np.testing.assert_allclose(tp.jit(lambda v: fn(v, kind, 9, 0, norm))(x),
                               fn(x, kind, 9, 0, norm), rtol=1e-12, atol=1e-12)

    def loss(v):
        return np.sum(np.sin(fn(v, type=kind, n=5, norm=norm)))
    check_grads(loss, (x,), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(tp.vmap(loss)(x), [loss(row) for row in x], rtol=1e-12)


def test_scipy_fft_names_and_dctn():
    rng = np.random.default_rng(77)
    x = rng.normal(size=(4, 6))
    for name in ("fft", "ifft", "rfft", "ihfft", "fftn", "ifftn", "rfftn", "fft2", "ifft2",
                 "rfft2", "fftshift", "ifftshift", "dctn", "idctn"):
        fn = getattr(scipy_fft, name)
        np.testing.assert_allclose(tp.jit(lambda v: fn(v))(x), fn(x), rtol=1e-12, atol=1e-12)
    for name in ("irfft", "hfft", "irfftn", "irfft2"):
        fn = getattr(scipy_fft, name)
        z = np.fft.rfft2(x)
        np.testing.assert_allclose(tp.jit(lambda v: fn(v))(z), fn(z), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tp.jit(lambda: scipy_fft.fftfreq(5, 0.1))(),
                               scipy_fft.fftfreq(5, 0.1))
    check_grads(lambda v: np.sum(scipy_fft.dctn(v, norm="ortho") ** 3), (x,), order=2)
