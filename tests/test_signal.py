"""tp.signal.convolve (autograd's tensor convolution, as convnet writes it) and
tp.flatten_util.ravel_pytree (autograd's flatten, as neural_net's L2 penalty calls it inside
the loss).

convolve's values are checked against a plain loop over kernel offsets written here (and
against scipy.signal.convolve and autograd's convolve where they are installed); every
layout below goes through check_grads to second order in both modes, complex inputs through
the conjugation convention, and vmap and vmap(grad) against loops.
"""
import itertools
import zlib

import numpy as np
import pytest

import transpile as tp
from transpile.flatten_util import ravel_pytree
from transpile.signal import convolve
from transpile.test_util import check_grads

import test_primitives as P
from test_vmap_rules import run_case

SEED = P.SEED


def _rng(case_id, salt=0):
    return np.random.default_rng([SEED, zlib.crc32(case_id.encode()), salt])


def reference(a, b, axes, dot_axes, mode):
    """The definition, by a loop over b's offsets along the convolved axes: the full
    convolution accumulated shift by shift, then the mode's window."""
    if axes is None:
        axes = (list(range(a.ndim)), list(range(b.ndim)))
    (a_conv, b_conv), (a_dot, b_dot) = axes, dot_axes
    a_ign = [i for i in range(a.ndim) if i not in a_conv and i not in a_dot]
    b_ign = [i for i in range(b.ndim) if i not in b_conv and i not in b_dot]
    A = np.transpose(a, a_ign + list(a_dot) + list(a_conv))
    B = np.transpose(b, b_ign + list(b_dot) + list(b_conv))
    na, nb = [a.shape[i] for i in a_conv], [b.shape[i] for i in b_conv]
    ia, ib, nd = len(a_ign), len(b_ign), len(a_dot)
    full = np.zeros(A.shape[:ia] + B.shape[:ib] + tuple(p + q - 1 for p, q in zip(na, nb)),
                    dtype=np.result_type(a, b))
    for j in itertools.product(*[range(n) for n in nb]):
        piece = np.tensordot(A, B[(slice(None),) * (ib + nd) + j],
                             axes=(list(range(ia, ia + nd)), list(range(ib, ib + nd))))
        # piece: (a ign, conv of a, b ign) -> (a ign, b ign, conv)
        piece = np.moveaxis(piece, list(range(ia, ia + len(na))),
                            list(range(piece.ndim - len(na), piece.ndim)))
        place = tuple(slice(k, k + n) for k, n in zip(j, na))
        full[(Ellipsis,) + place] += piece
    cut = []
    for p, q in zip(na, nb):
        start, length = {"full": (0, p + q - 1), "valid": (min(p, q) - 1, abs(p - q) + 1),
                         "same": ((q - 1) // 2, p)}[mode]
        cut.append(slice(start, start + length))
    return full[(Ellipsis,) + tuple(cut)]


# (A's shape, B's shape, axes, dot_axes): the layouts convolve is used with
LAYOUTS = [
    ((3, 1, 7, 6), (1, 2, 3, 2), ([2, 3], [2, 3]), ([1], [0])),   # convnet's layer
    ((6,), (3,), None, ((), ())),
    ((3,), (5,), None, ((), ())),
    ((5, 4), (2, 3), None, ((), ())),
    ((2, 5), (4, 3), None, ((), ())),
    ((3, 4, 5), (2, 3, 4), ([2], [2]), ([0], [1])),
    ((6, 3, 2), (4, 2, 3), ([0], [0]), ([2, 1], [1, 2])),          # dot pairs out of order
    ((2, 5, 3), (3, 4), ([1], [1]), ((), ())),
    ((4, 5, 6), (5, 4, 3), ([2], [2]), ([1], [0])),   # 4 and more channels: im2col and BLAS
]
MODES = ["full", "valid", "same"]
CASES = [(layout, mode) for layout in LAYOUTS for mode in MODES
         if not (mode == "valid" and layout[2] is None and
                 any(p < q for p, q in zip(layout[0], layout[1])) and
                 any(p > q for p, q in zip(layout[0], layout[1])))]
IDS = [f"{'x'.join(map(str, a))}-{'x'.join(map(str, b))}-{mode}"
       for (a, b, _, _), mode in CASES]


@pytest.mark.parametrize("layout,mode", CASES, ids=IDS)
def test_values(layout, mode):
    r = _rng("values" + str(layout) + mode)
    shape_a, shape_b, axes, dot_axes = layout
    a, b = r.standard_normal(shape_a), r.standard_normal(shape_b)
    got = convolve(a, b, axes=axes, dot_axes=dot_axes, mode=mode)
    np.testing.assert_allclose(got, reference(a, b, axes, dot_axes, mode), rtol=1e-12,
                               atol=1e-12)
    if axes is None:
        scipy_signal = pytest.importorskip("scipy.signal")
        if mode != "valid" or all(p >= q for p, q in zip(shape_a, shape_b)) or \
                all(p <= q for p, q in zip(shape_a, shape_b)):
            np.testing.assert_allclose(got, scipy_signal.convolve(a, b, mode=mode),
                                       rtol=1e-12, atol=1e-12)


def test_matches_autograd_convolve():
    autograd_signal = pytest.importorskip("autograd.scipy.signal")
    r = _rng("autograd")
    for (shape_a, shape_b, axes, dot_axes), mode in CASES[:9]:
        a, b = r.standard_normal(shape_a), r.standard_normal(shape_b)
        kw = {} if axes is None else {"axes": axes, "dot_axes": dot_axes}
        np.testing.assert_allclose(convolve(a, b, mode=mode, **kw),
                                   autograd_signal.convolve(a, b, mode=mode, **kw),
                                   rtol=1e-12, atol=1e-12)


def _scalar(axes, dot_axes, mode, weights):
    def f(a, b):
        return np.sum(np.sin(convolve(a, b, axes=axes, dot_axes=dot_axes, mode=mode)) *
                      weights)
    return f


@pytest.mark.parametrize("layout,mode", CASES, ids=IDS)
def test_derivatives_to_second_order(layout, mode):
    r = _rng("grads" + str(layout) + mode)
    shape_a, shape_b, axes, dot_axes = layout
    a, b = r.standard_normal(shape_a), r.standard_normal(shape_b)
    weights = r.standard_normal(np.shape(reference(a, b, axes, dot_axes, mode)))
    check_grads(_scalar(axes, dot_axes, mode, weights), (a, b), order=2,
                modes=("fwd", "rev"), seed=int(r.integers(1 << 31)))


def convnet_layer(x, w):
    return np.tanh(convolve(x, w, axes=([2, 3], [2, 3]), dot_axes=([1], [0]), mode="valid"))


def convolve_same(a, b):
    return convolve(a, b, mode="same")


def convolve_rows(a, b):
    return convolve(a, b, axes=([1], [1]), mode="full")


@pytest.mark.parametrize("f,make,case_id", [
    (convnet_layer, lambda r: (r.standard_normal((2, 1, 5, 5)),
                               r.standard_normal((1, 2, 3, 2))), "convnet-layer"),
    (convolve_same, lambda r: (r.standard_normal((4, 3)), r.standard_normal((2, 2))),
     "same-2d"),
    (convolve_rows, lambda r: (r.standard_normal((2, 5)), r.standard_normal((3, 2))),
     "rows"),
], ids=["convnet-layer", "same-2d", "rows"])
def test_vmap_and_per_example_gradients(f, make, case_id):
    run_case(f, make, case_id)


def test_complex_inputs_follow_the_convention():
    """grad of a real function of complex A and B is df/dx - i df/dy (central
    differences along real and imaginary directions), and jvp is the complex derivative."""
    r = _rng("complex")
    a = r.standard_normal((4, 3)) + 1j * r.standard_normal((4, 3))
    b = r.standard_normal((2, 3)) + 1j * r.standard_normal((2, 3))
    c = r.standard_normal((5, 5)) + 1j * r.standard_normal((5, 5))

    def loss(a, b):
        return np.sum(np.real(convolve(a, b, mode="full") * c))
    grads = tp.grad(loss, argnums=(0, 1))(a, b)
    eps = 1e-6
    for k, x in enumerate((a, b)):
        for part in (1.0, 1j):
            t = r.standard_normal(x.shape) * part
            args_plus = [a, b]
            args_minus = [a, b]
            args_plus[k] = x + eps * t
            args_minus[k] = x - eps * t
            numeric = (loss(*args_plus) - loss(*args_minus)) / (2 * eps)
            analytic = np.sum(np.real(grads[k]) * np.real(t) - np.imag(grads[k]) * np.imag(t))
            assert np.isclose(analytic, numeric, rtol=1e-6, atol=1e-6)
    ta, tb = (r.standard_normal(a.shape) + 1j * r.standard_normal(a.shape),
              r.standard_normal(b.shape) + 1j * r.standard_normal(b.shape))
    _, got = tp.jvp(lambda a, b: convolve(a, b), (a, b), (ta, tb))
    np.testing.assert_allclose(got, convolve(ta, b) + convolve(a, tb), rtol=1e-12)


def test_bad_mode_is_an_error():
    with pytest.raises(ValueError, match="mode must be"):
        convolve(np.ones(3), np.ones(2), mode="wrap")


# ---------------------------------------------------------------- ravel_pytree

def test_ravel_pytree_order_and_unravel():
    r = _rng("ravel")
    tree = {"b": [r.standard_normal((2, 3)), 1.5], "a": (r.standard_normal(4),
                                                        np.arange(3, dtype=np.int32))}
    flat, unravel = ravel_pytree(tree)
    want = np.concatenate([tree["a"][0], tree["a"][1], np.ravel(tree["b"][0]), [1.5]])
    np.testing.assert_array_equal(flat, want)
    back = unravel(flat * 2)
    np.testing.assert_array_equal(back["b"][0], tree["b"][0] * 2)
    assert back["a"][1].dtype == np.int32 and isinstance(back["b"], list)
    with pytest.raises(ValueError, match="shape"):
        unravel(flat[:-1])


def test_ravel_pytree_matches_autograd_flatten():
    flatten = pytest.importorskip("autograd.misc.flatten").flatten
    r = _rng("ravel-autograd")
    tree = [(r.standard_normal((3, 2)), r.standard_normal(2)), {"w": r.standard_normal(3),
                                                               "v": r.standard_normal((1,))}]
    np.testing.assert_array_equal(ravel_pytree(tree)[0], flatten(tree)[0])


def l2_penalized_loss(params, x):
    """neural_net's shape: an L2 penalty on the flattened parameters inside the loss."""
    flat, _ = ravel_pytree(params)
    h = x
    for W, b in params:
        h = np.tanh(h @ W + b)
    return np.sum(h ** 2) + 0.1 * np.dot(flat, flat)


def test_ravel_pytree_inside_a_loss():
    r = _rng("ravel-loss")
    params = [(r.standard_normal((3, 4)), r.standard_normal(4)),
              (r.standard_normal((4, 2)), r.standard_normal(2))]
    x = r.standard_normal((5, 3))
    check_grads(l2_penalized_loss, (params, x), order=2, modes=("fwd", "rev"),
                seed=int(r.integers(1 << 31)))
    per_example = tp.vmap(tp.grad(l2_penalized_loss), in_axes=(None, 0))(params, x[:, None])
    for i in range(5):
        one = tp.grad(l2_penalized_loss)(params, x[i:i + 1])
        for got, want in zip(tp.tree_leaves(per_example), tp.tree_leaves(one)):
            np.testing.assert_allclose(got[i], want, rtol=1e-12, atol=1e-12)


def test_unravel_from_transformed_code_is_refused():
    def rebuilt(params):
        flat, unravel = ravel_pytree(params)
        return np.sum(unravel(flat * 2.0)[0])
    with pytest.raises(tp.TransformError, match="calling a function held in a variable"):
        tp.grad(rebuilt)([np.ones(2)])


# ---------------------------------------------------------------- scipy.signal.convolve

scipy_signal = pytest.importorskip("scipy.signal")


def _scipy_convolved(mode):
    def loss(a, b):
        return np.sum(np.sin(scipy_signal.convolve(a, b, mode=mode)))
    return loss


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_scipy_signal_convolve_in_transformed_code(mode):
    """A user's own `scipy.signal.convolve(a, b, mode)` is transformed (it runs tp.signal's
    convolution, which equals scipy's on every axis): both modes to second order, complex
    inputs, vmap against a loop, and scipy's refusals kept."""
    r = _rng("scipy-convolve-" + mode)
    a, b = r.standard_normal((5, 4)), r.standard_normal((3, 2))
    loss = _scipy_convolved(mode)
    np.testing.assert_allclose(tp.jit(lambda a, b: scipy_signal.convolve(a, b, mode=mode))(a, b),
                               scipy_signal.convolve(a, b, mode=mode), rtol=1e-12, atol=1e-12)
    check_grads(loss, (a, b), order=2, modes=("fwd", "rev"))
    za = a + 1j * r.standard_normal(a.shape)
    check_grads(lambda z: np.sum(np.abs(scipy_signal.convolve(z, b, mode)) ** 2), (za,),
                order=2, modes=("fwd", "rev"))
    batch = r.standard_normal((3, 5, 4))
    np.testing.assert_allclose(tp.vmap(loss, in_axes=(0, None))(batch, b),
                               [loss(x, b) for x in batch], rtol=1e-12)
    with pytest.raises(ValueError, match="same dimensionality"):
        tp.grad(lambda a: np.sum(scipy_signal.convolve(a, b[0], mode)))(a)
    if mode == "valid":
        with pytest.raises(ValueError, match="at least as large"):
            tp.grad(lambda a: np.sum(scipy_signal.convolve(a, np.ones((6, 1)), mode)))(a)


_SCIPY_CONVOLUTIONS = ["correlate", "fftconvolve", "oaconvolve", "convolve2d", "correlate2d"]


@pytest.mark.parametrize("name", _SCIPY_CONVOLUTIONS)
@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_scipy_signal_relatives_of_convolve(name, mode):
    """correlate (convolve with in2 reversed and conjugated), fftconvolve/oaconvolve (every
    axis), convolve2d/correlate2d (zero-filled boundary; correlate2d's 'same' window and
    swapped 'valid' are its own): values against scipy for both orders of sizes, complex
    inputs, derivatives to second order, vmap against a loop."""
    fn = getattr(scipy_signal, name)
    r = _rng("scipy-" + name + mode)
    for sa, sb in (((5, 4), (3, 2)), ((3, 2), (5, 4)), ((4, 6), (2, 3))):
        a = r.standard_normal(sa) + 1j * r.standard_normal(sa)
        b = r.standard_normal(sb) + 1j * r.standard_normal(sb)
        np.testing.assert_allclose(tp.jit(lambda a, b: fn(a, b, mode=mode))(a, b),
                                   fn(a, b, mode=mode), rtol=1e-12, atol=1e-12)
    a, b = r.standard_normal((5, 4)), r.standard_normal((3, 2))

    def loss(a, b):
        return np.sum(np.sin(fn(a, b, mode=mode)))
    check_grads(loss, (a, b), order=2, modes=("fwd", "rev"))
    check_grads(loss, (b, a), order=1, modes=("fwd", "rev"))
    batch = r.standard_normal((3, 5, 4))
    np.testing.assert_allclose(tp.vmap(loss, in_axes=(0, None))(batch, b),
                               [loss(x, b) for x in batch], rtol=1e-12)


def test_scipy_signal_variants_not_written_are_refused():
    a, b = np.ones((4, 4)), np.ones((2, 2))
    with pytest.raises(tp.TransformError, match="boundary='fill'"):
        tp.jit(lambda a: scipy_signal.convolve2d(a, b, boundary="wrap"))(a)
    with pytest.raises(tp.TransformError, match="axes="):
        tp.jit(lambda a: scipy_signal.fftconvolve(a, b, axes=[0]))(a)
