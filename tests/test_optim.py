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


# =====================================================================================
# The optax-style transformations (tp.optim.adam, chain, ...): optax's numbers (reference
# values written by make_optax_reference.py), inside jit and under vmap.
# =====================================================================================

import os  # noqa: E402

from make_optax_reference import STEPS, leaves, optimizers as optax_optimizers, problem, \
    schedules as optax_schedules  # noqa: E402

OPTAX = np.load(os.path.join(os.path.dirname(__file__), "data", "optax.npz"))
NAMES = list(optax_optimizers(tp.optim))
# optax evaluates a schedule at its int32 step count, which JAX's promotion computes in
# float32; here it is float64: those runs agree to float32's rounding, the rest to float64's
FLOAT32_SCHEDULED = {"adam_warmup_cosine", "adamw_scheduled_decay"}


def _train(opt, params, grads, update):
    state = opt.init(params)
    path = []
    for g in grads:
        updates, state = update(g, state, params)
        params = tp.optim.apply_updates(params, updates)
        path.append(params)
    return path, state


@pytest.mark.parametrize("name", NAMES)
def test_optax_style_updates_give_optax_numbers(name):
    opt = optax_optimizers(tp.optim)[name]
    params, grads = problem()
    path, _ = _train(opt, params, grads, opt.update)
    rtol = 1e-6 if name in FLOAT32_SCHEDULED else 1e-12
    for step in range(STEPS):
        for i, leaf in enumerate(leaves(path[step])):
            np.testing.assert_allclose(leaf, OPTAX[f"{name}/{step}/{i}"], rtol=rtol,
                                       atol=1e-14, err_msg=f"{name} step {step} leaf {i}")


@pytest.mark.parametrize("name", ["adam", "adamw_scheduled_decay", "clipped_adam", "lamb",
                                  "sgd_nesterov", "adam_warmup_cosine"])
def test_optax_style_updates_under_jit(name):
    opt = optax_optimizers(tp.optim)[name]
    params, grads = problem()
    want, _ = _train(opt, params, grads, opt.update)
    got, _ = _train(opt, params, grads, tp.jit(opt.update))
    for a, b in zip(leaves(got[-1]), leaves(want[-1])):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ["adam", "clipped_adam", "rmsprop_momentum", "lion"])
def test_optax_style_updates_under_vmap(name):
    """An ensemble of three models, each with its own parameters, gradients and state."""
    opt = optax_optimizers(tp.optim)[name]
    rng = np.random.default_rng()
    members = [problem()[0] for _ in range(3)]
    members = [tp.tree_map(lambda p: p + rng.standard_normal(p.shape), m) for m in members]
    grads = [[tp.tree_map(lambda p: rng.standard_normal(p.shape), m) for _ in range(3)]
             for m in members]
    stack = lambda trees: tp.tree_map(lambda *ls: np.stack(ls), *trees)  # noqa: E731
    params = stack(members)
    state = stack([opt.init(m) for m in members])
    update = tp.vmap(opt.update)
    for step in range(3):
        updates, state = update(stack([grads[k][step] for k in range(3)]), state, params)
        params = tp.optim.apply_updates(params, updates)
    for k in range(3):
        want, _ = _train(opt, members[k], grads[k], opt.update)
        for a, b in zip(leaves(tp.tree_map(lambda p: p[k], params)), leaves(want[-1])):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_optax_style_schedules():
    for name, schedule in optax_schedules(tp.optim).items():
        got = [float(schedule(c)) for c in range(16)]     # Python ints: float64 in optax
        np.testing.assert_allclose(got, OPTAX[f"schedule/{name}"], rtol=1e-13, atol=1e-15,
                                   err_msg=name)


def test_optax_style_states_keep_their_names():
    opt = tp.optim.adam(0.1)
    params, grads = problem()
    state = opt.init(params)
    _, state = tp.jit(opt.update)(grads[0], state, params)
    assert isinstance(state[0], tp.optim.ScaleByAdamState)
    assert int(state[0].count) == 1
    np.testing.assert_allclose(state[0].mu["w"], 0.1 * grads[0]["w"])


def test_a_jitted_step_reads_its_optimizer_from_a_closure():
    """The optimizer, a tuple of functions held by a closure, is read while transforming
    (not passed as data), so its update is compiled into the step."""
    def make_step(opt):
        @tp.jit
        def step(params, state, grads):
            updates, state = opt.update(grads, state, params)
            return tp.optim.apply_updates(params, updates), state
        return step
    opt = tp.optim.adam(0.1)
    params, grads = problem()
    want, _ = _train(opt, params, grads[:2], opt.update)
    step = make_step(opt)
    state = opt.init(params)
    for g in grads[:2]:
        params, state = step(params, state, g)
    for a, b in zip(leaves(params), leaves(want[-1])):
        np.testing.assert_allclose(a, b, rtol=1e-13)


@pytest.mark.parametrize("name", sorted(LEAF_STATES))
def test_example_libraries_updates_under_jit(name):
    """opt_update and get_params inside tp.jit (as JAX's examples call them) give the plain
    call's numbers and state."""
    maker = getattr(optimizers, name)
    init, update, get_params = maker(0.05, 0.9) if name in ("momentum", "nesterov") else \
        maker(0.05)
    params, grads = problem()
    plain, jitted = init(params), init(params)
    step, read = tp.jit(update), tp.jit(get_params)
    for i, g in enumerate(grads[:3]):
        plain, jitted = update(i, g, plain), step(i, g, jitted)
    assert isinstance(jitted, optimizers.OptimizerState)
    for a, b in zip(leaves(read(jitted)), leaves(get_params(plain))):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
