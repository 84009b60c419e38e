"""tp.nn: JAX's stax numbers for the same keys and inputs (reference values written by
make_jax_nn_reference.py), convolution and pooling against plain loops, and models under
every transformation (grad against finite differences, vmap against a loop, jit against
the plain call)."""
import itertools
import os

import numpy as np
import pytest

import transpile as tp
from transpile.nn import stax
from transpile.test_util import check_grads

from make_jax_nn_reference import flat, inputs, models

DATA = os.path.join(os.path.dirname(__file__), "data")
RNG = np.random.default_rng()


def sin_sum(y):
    return np.sum(np.sin(y))


def _loss(apply, pair):
    """sum(sin(outputs)): a scalar function of the parameters, for their gradients."""
    if pair:
        def loss(params, x, key):
            a, b = apply(params, x, rng=key)
            return sin_sum(a) + sin_sum(b)
    else:
        def loss(params, x, key):
            return sin_sum(apply(params, x, rng=key))
    return loss


@pytest.mark.parametrize("name", list(models(stax)))
def test_models_give_jax_stax_numbers(name):
    reference = np.load(os.path.join(DATA, "jax_stax.npz"))
    (init, apply), shape, keyed = models(stax)[name]
    _, params = init(tp.random.PRNGKey(7), shape)
    x = inputs(shape, name)
    key = tp.random.PRNGKey(11) if keyed else None
    for i, leaf in enumerate(flat(params)):
        np.testing.assert_allclose(leaf, reference[f"{name}/param{i}"], rtol=1e-13,
                                   atol=1e-15, err_msg=f"{name} parameter {i}")
    out = apply(params, x, rng=key)
    for i, leaf in enumerate(flat(out)):
        np.testing.assert_allclose(leaf, reference[f"{name}/out{i}"], rtol=1e-11, atol=1e-12,
                                   err_msg=f"{name} output {i}")
    grads = tp.grad(_loss(apply, isinstance(out, list)))(params, x, key)
    for i, leaf in enumerate(flat(grads)):
        np.testing.assert_allclose(leaf, reference[f"{name}/grad{i}"], rtol=1e-9, atol=1e-11,
                                   err_msg=f"{name} gradient {i}")


# ---------------------------------------------------------------- against loops

def naive_conv(x, w, strides, padding, dilation):
    """lax.conv's cross-correlation written as loops, x (N, *spatial, C), w (*window, C, O)."""
    nd = w.ndim - 2
    window = w.shape[:nd]
    pads = tp.nn.functions.rt.nn.padding_pairs(x.shape[1:-1], window, strides, padding,
                                               dilation)
    xp = np.pad(x, [(0, 0)] + list(pads) + [(0, 0)])
    out_shape = tp.nn.functions.rt.nn.output_shape(x.shape[1:-1], window, strides, padding,
                                                   dilation)
    out = np.zeros((x.shape[0],) + out_shape + (w.shape[-1],))
    for pos in itertools.product(*(range(n) for n in out_shape)):
        for off in itertools.product(*(range(k) for k in window)):
            at = tuple(p * s + o * d for p, s, o, d in zip(pos, strides, off, dilation))
            out[(slice(None),) + pos] += xp[(slice(None),) + at] @ w[off]
    return out


CONVS = [((2, 7, 3), (3, 3, 4), (1,), "VALID", (1,)),
         ((2, 8, 3), (3, 3, 2), (2,), "SAME", (2,)),
         ((2, 6, 5, 3), (2, 3, 3, 4), (1, 2), "SAME", (1, 1)),
         ((1, 7, 6, 2), (3, 2, 2, 3), (2, 1), ((1, 2), (0, 1)), (2, 1)),
         ((2, 5, 5, 1), (5, 5, 1, 2), (1, 1), "VALID", (1, 1))]


@pytest.mark.parametrize("xs,ws,strides,padding,dilation", CONVS)
def test_conv_is_the_loop(xs, ws, strides, padding, dilation):
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    got = tp.nn.conv(x, w, strides, padding, dilation)
    np.testing.assert_allclose(got, naive_conv(x, w, strides, padding, dilation), rtol=1e-12,
                               atol=1e-12)


def test_pooling_is_the_loop():
    x = RNG.standard_normal((2, 5, 4, 3))
    got_max = tp.nn.max_pool(x, (2, 3), (2, 1), "SAME")
    got_avg = tp.nn.avg_pool(x, (2, 3), (2, 1), "SAME")
    # SAME with strides (2, 1): the 5 rows pad (0, 1), the 4 columns (1, 1)
    padded = np.pad(x, [(0, 0), (0, 1), (1, 1), (0, 0)], constant_values=np.nan)
    for i, j in itertools.product(range(3), range(4)):
        block = padded[:, 2 * i:2 * i + 2, j:j + 3]
        np.testing.assert_allclose(got_max[:, i, j], np.nanmax(block, axis=(1, 2)))
        np.testing.assert_allclose(got_avg[:, i, j], np.nanmean(block, axis=(1, 2)))


def test_losses_and_metrics():
    logits, labels = RNG.standard_normal((6, 4)), RNG.integers(0, 4, 6)
    log_p = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    want = -np.mean(log_p[np.arange(6), labels])
    assert np.isclose(tp.nn.sparse_softmax_cross_entropy(logits, labels), want)
    assert np.isclose(tp.nn.softmax_cross_entropy(logits, np.eye(4)[labels]), want)
    assert tp.nn.accuracy(logits, labels) == np.mean(np.argmax(logits, 1) == labels)
    assert tp.nn.accuracy(logits, np.eye(4)[labels]) == tp.nn.accuracy(logits, labels)
    p, t = RNG.standard_normal(5), RNG.standard_normal(5)
    assert np.isclose(tp.nn.mse(p, t), np.mean((p - t) ** 2))
    np.testing.assert_allclose(tp.nn.softmax(logits), np.exp(log_p))
    np.testing.assert_allclose(tp.nn.logsumexp(logits, axis=1),
                               np.log(np.sum(np.exp(logits), axis=1)))


# ---------------------------------------------------------------- under transformations

def _cnn():
    init, apply = stax.serial(stax.Conv(3, (3, 3), padding="SAME", strides=(2, 2)), stax.Relu,
                              stax.MaxPool((2, 2), (1, 1)), stax.Conv(2, (2, 2)), stax.Tanh,
                              stax.AvgPool((2, 2), (1, 1), "SAME"), stax.Flatten,
                              stax.Dense(5), stax.Dropout(0.8), stax.Dense(3),
                              stax.LogSoftmax)
    _, params = init(tp.random.PRNGKey(int(RNG.integers(1 << 31))), (-1, 7, 7, 2))
    return apply, params


def _clear_of_pooling_ties(params, x, margin=1e-4):
    """Whether _cnn's first max-pooling compares no two positive values closer than
    `margin`, and its ReLU sees no value that close to 0: finite differences (steps of
    1e-6) across a switch of the maximum differ from any derivative (seed 792 of this test
    had two window entries 8e-7 apart, and forward mode differed from them by 1.7%)."""
    _, conv = stax.Conv(3, (3, 3), padding="SAME", strides=(2, 2))
    z = conv(params[0], x)
    relu = np.maximum(z, 0.0)
    windows = np.sort(np.stack([relu[:, i:i + 3, j:j + 3] for i in (0, 1) for j in (0, 1)]),
                      axis=0)
    gaps = (windows[-1] - windows[-2])[windows[-1] > 0]
    return np.min(np.abs(z)) > margin and (gaps.size == 0 or np.min(gaps) > margin)


def test_cnn_gradients_against_finite_differences():
    apply, params = _cnn()
    x = RNG.standard_normal((3, 7, 7, 2))
    while not _clear_of_pooling_ties(params, x):
        x = RNG.standard_normal((3, 7, 7, 2))
    labels = np.eye(3)[RNG.integers(0, 3, 3)]
    key = tp.random.PRNGKey(int(RNG.integers(1 << 31)))

    def loss(params, x):
        return tp.nn.softmax_cross_entropy(apply(params, x, rng=key), labels)
    check_grads(loss, (params, x), order=1, modes=("fwd", "rev"))


def test_per_example_gradients_with_per_example_keys():
    apply, params = _cnn()
    x = RNG.standard_normal((4, 1, 7, 7, 2))
    labels = np.eye(3)[RNG.integers(0, 3, (4, 1))]
    keys = tp.random.split(tp.random.PRNGKey(int(RNG.integers(1 << 31))), 4)

    def loss(params, x, y, key):
        return tp.nn.softmax_cross_entropy(apply(params, x, rng=key), y)
    got = tp.vmap(tp.grad(loss), in_axes=(None, 0, 0, 0))(params, x, labels, keys)
    for b in range(4):
        want = tp.grad(loss)(params, x[b], labels[b], keys[b])
        for g, w in zip(flat(got), flat(want)):
            np.testing.assert_allclose(g[b], w, rtol=1e-10, atol=1e-12)


def test_jit_of_a_training_step_is_the_plain_call():
    apply, params = _cnn()
    x = RNG.standard_normal((3, 7, 7, 2))
    labels = RNG.integers(0, 3, 3)
    key = tp.random.PRNGKey(int(RNG.integers(1 << 31)))

    def loss(params, x, y, key):
        return tp.nn.sparse_softmax_cross_entropy(apply(params, x, rng=key), y)
    step = tp.jit(tp.value_and_grad(loss))
    for _ in range(2):                        # the second call runs the compiled version
        (value, grads) = step(params, x, labels, key)
    want_value, want_grads = tp.value_and_grad(loss)(params, x, labels, key)
    assert np.isclose(value, want_value, rtol=1e-12)
    for g, w in zip(flat(grads), flat(want_grads)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_dropout_masks_follow_the_key():
    init, apply = stax.Dropout(0.5)
    x = RNG.standard_normal((50,)) + 3.0
    a = apply((), x, rng=tp.random.PRNGKey(1))
    b = apply((), x, rng=tp.random.PRNGKey(2))
    assert not np.array_equal(a == 0, b == 0)
    np.testing.assert_allclose(a[a != 0], 2.0 * x[a != 0])
    np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), x), x)
    with pytest.raises(AssertionError, match="needs a key"):
        apply((), x)


def test_layer_norm_and_embedding():
    init, apply = stax.serial(tp.nn.Embedding(7, 4), tp.nn.LayerNorm())
    shape, params = init(tp.random.PRNGKey(0), (3, 5))
    assert shape == (3, 5, 4)
    ids = RNG.integers(0, 7, (3, 5))
    out = apply(params, ids)
    np.testing.assert_allclose(np.mean(out, -1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.var(out, -1), 1.0, rtol=1e-4)

    def loss(params):
        return np.sum(np.sin(apply(params, ids)) * np.arange(4.0))
    check_grads(loss, (params,), order=1, modes=("rev",))


# Each activation against its definition written naively (fine in this range), its first and
# second derivatives against finite differences away from its kinks, and vmap against a loop.
_ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0.0), 6.0),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "log_sigmoid": lambda x: -np.log1p(np.exp(-x)),
    "elu": lambda x: np.where(x > 0, x, np.exp(x) - 1.0),
    "celu": lambda x: np.where(x > 0, x, np.exp(x) - 1.0),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 *
                                                    (np.exp(x) - 1.0)),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "soft_sign": lambda x: x / (np.abs(x) + 1.0),
    "squareplus": lambda x: (x + np.sqrt(x ** 2 + 4.0)) / 2.0,
    "sparse_plus": lambda x: np.select([x <= -1, x >= 1], [0.0 * x, x], (x + 1) ** 2 / 4),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "hard_tanh": lambda x: np.minimum(np.maximum(x, -1.0), 1.0),
    "hard_sigmoid": lambda x: np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0,
    "hard_silu": lambda x: x * np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0,
}
_KINKS = {"relu": [0.0], "relu6": [0.0, 6.0], "leaky_relu": [0.0], "elu": [0.0], "celu": [0.0],
          "selu": [0.0], "soft_sign": [0.0], "sparse_plus": [-1.0, 1.0],
          "hard_tanh": [-1.0, 1.0], "hard_sigmoid": [-3.0, 3.0], "hard_silu": [-3.0, 3.0]}


@pytest.mark.parametrize("name", sorted(_ACTIVATIONS))
def test_activations_are_their_definitions(name):
    f = getattr(tp.nn, name)
    rng = np.random.default_rng(abs(hash(name)) % 2 ** 32)
    x = rng.uniform(-7.0, 7.0, size=40)
    x = x[np.min([np.abs(x - k) for k in _KINKS.get(name, [np.inf])], axis=0) > 1e-3]
    np.testing.assert_allclose(f(x), _ACTIVATIONS[name](x), rtol=1e-12, atol=1e-14)
    check_grads(lambda v: np.sum(f(v) ** 2), (x,), order=2, modes=("fwd", "rev"))
    rows = rng.normal(size=(3, 4)) * 3
    np.testing.assert_allclose(tp.vmap(f)(rows), [f(r) for r in rows], rtol=1e-12)


def test_glu_and_the_new_aliases():
    x = np.random.default_rng(41).normal(size=(4, 6))
    a, b = x[:, :3], x[:, 3:]
    np.testing.assert_allclose(tp.nn.glu(x), a / (1.0 + np.exp(-b)), rtol=1e-12)
    np.testing.assert_allclose(tp.nn.glu(x, axis=0), x[:2] / (1.0 + np.exp(-x[2:])),
                               rtol=1e-12)
    check_grads(lambda v: np.sum(tp.nn.glu(v) ** 2), (x,), order=2)
    assert tp.nn.hard_swish is tp.nn.hard_silu and tp.nn.swish is tp.nn.silu
