"""tp.optim.optimizers: JAX's example_libraries conventions, each update checked against
its formula written out here, and training with tp.grad that converges."""
import numpy as np
import pytest

import transpile as tp
from transpile.optim import optimizers

LEAF_STATES = {"sgd": 0, "momentum": 1, "nesterov": 1, "adagrad": 2, "rmsprop": 1,
               "rmsprop_momentum": 2, "adam": 2, "adamax": 2}


def _reference(name, x, grads, lr=0.05):
    """The updates written out for one array, over a list of gradients."""
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    for i, g in enumerate(grads):
        if name == "sgd":
            x = x - lr * g
        elif name == "momentum":
            m = 0.9 * m + g
            x = x - lr * m
        elif name == "nesterov":
            m = 0.9 * m + g
            x = x - lr * (0.9 * m + g)
        elif name == "adagrad":
            v = v + g * g
            m = 0.1 * g / np.sqrt(v) + 0.9 * m
            x = x - lr * m
        elif name == "rmsprop":
            v = 0.9 * v + 0.1 * g * g
            x = x - lr * g / np.sqrt(v + 1e-8)
        elif name == "rmsprop_momentum":
            v = 0.9 * v + 0.1 * g * g
            m = 0.9 * m + lr * g / np.sqrt(v + 1e-8)
            x = x - m
        elif name == "adam":
            m = 0.1 * g + 0.9 * m
            v = 0.001 * g * g + 0.999 * v
            x = x - lr * (m / (1 - 0.9 ** (i + 1))) / (np.sqrt(v / (1 - 0.999 ** (i + 1))) + 1e-8)
        elif name == "adamax":
            m = 0.1 * g + 0.9 * m
            v = np.maximum(0.999 * v, np.abs(g))
            x = x - lr / (1 - 0.9 ** (i + 1)) * m / (v + 1e-8)
    return x


@pytest.mark.parametrize("name", sorted(LEAF_STATES))
def test_updates_follow_their_formulas_on_pytrees(name):
    rng = np.random.default_rng()
    params = {"w": rng.standard_normal((3, 2)), "layers": [(rng.standard_normal(2), 0.5)]}
    args = (0.05, 0.9) if name in ("momentum", "nesterov") else (0.05,)
    init, update, get_params = getattr(optimizers, name)(*args)
    state = init(params)
    grads = [tp.tree_map(lambda p: rng.standard_normal(np.shape(p)), params) for _ in range(4)]
    for i, g in enumerate(grads):
        state = update(i, g, state)
    got = get_params(state)
    assert isinstance(got["layers"][0], tuple)
    assert np.allclose(got["w"], _reference(name, params["w"], [g["w"] for g in grads]))
    assert np.allclose(got["layers"][0][1],
                       _reference(name, np.asarray(0.5), [g["layers"][0][1] for g in grads]))
    with pytest.raises(ValueError, match="gradient structure"):
        update(0, {"w": grads[0]["w"]}, state)
    # the state round-trips through its pytree form (to save it)
    packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    assert np.allclose(get_params(packed)["w"], got["w"])


def test_schedules():
    assert optimizers.exponential_decay(1.0, 10, 0.5)(20) == 0.25
    assert optimizers.inverse_time_decay(1.0, 10, 1.0, staircase=True)(15) == 0.5
    assert np.isclose(optimizers.polynomial_decay(1.0, 10, 0.1)(5), 0.55)
    assert optimizers.polynomial_decay(1.0, 10, 0.1)(50) == 0.1
    schedule = optimizers.piecewise_constant([10, 20], [1.0, 0.5, 0.1])
    assert [schedule(i) for i in (0, 10, 11, 25)] == [1.0, 1.0, 0.5, 0.1]
    g = {"a": np.array([3.0, 4.0])}
    assert np.allclose(optimizers.clip_grads(g, 1.0)["a"], [0.6, 0.8])
    assert optimizers.clip_grads(g, 10.0) is g


def test_training_with_grad_converges():
    """Least squares with adam and tp.grad: the loss falls below a small fraction."""
    rng = np.random.default_rng()
    x = rng.standard_normal((64, 3))
    true_w = rng.standard_normal(3)
    y = x @ true_w + 0.01 * rng.standard_normal(64)

    def loss(params, x, y):
        w, b = params
        return np.mean((x @ w + b - y) ** 2)

    init, update, get_params = optimizers.adam(0.05)
    state = init((np.zeros(3), 0.0))
    first = loss(get_params(state), x, y)
    step = tp.jit(tp.grad(loss))
    for i in range(300):
        state = update(i, step(get_params(state), x, y), state)
    assert loss(get_params(state), x, y) < 0.01 * first
    assert np.allclose(get_params(state)[0], true_w, atol=0.05)
