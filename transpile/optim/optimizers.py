"""Optimizers with the calling conventions of `jax.example_libraries.optimizers`:

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    state = opt_init(params)                       # params: any pytree of arrays
    state = opt_update(step, grads, state)         # grads: the same structure
    params = get_params(state)

Each optimizer is written for one array (`init(x0) -> leaf state`, `update(i, g, leaf
state) -> leaf state`, `get_params(leaf state) -> x`); `optimizer` lifts it to pytrees.
Step sizes are numbers or schedules (functions of the step number).
"""
import functools
from collections import namedtuple

import numpy as np

import runtime as rt
from ..tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten

__all__ = ["Optimizer", "OptimizerState", "optimizer", "sgd", "momentum", "nesterov",
           "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "constant",
           "exponential_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "make_schedule", "clip_grads", "l2_norm",
           "unpack_optimizer_state", "pack_optimizer_state"]

Optimizer = namedtuple("Optimizer", ["init_fn", "update_fn", "params_fn"])
OptimizerState = namedtuple("OptimizerState", ["leaf_states", "tree_def"])


def optimizer(opt_maker):
    """Lift an optimizer written for one array to pytrees of arrays."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        def tree_init(params):
            leaves, tree_def = tree_flatten(params)
            return OptimizerState([init(np.asarray(x)) for x in leaves], tree_def)

        # update and get_params are transformable (a jitted training step calls them):
        # the state is unpacked, not read by field name, and rebuilt with rt.to_like
        def tree_update(i, grads, state):
            leaf_states, tree_def = state
            rt.check_structure(grads, tree_def, "optimizer update: gradient structure")
            grad_leaves = tree_leaves(grads)
            new_states = [update(i, g, s) for g, s in zip(grad_leaves, leaf_states)]
            return rt.to_like([new_states, tree_def], state)

        def tree_get_params(state):
            leaf_states, tree_def = state
            return tree_unflatten(tree_def, [get_params(s) for s in leaf_states])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


def unpack_optimizer_state(state):
    """The state as a pytree (the parameters' structure, a tuple per leaf): to save it."""
    return tree_unflatten(state.tree_def, [tuple(s) if isinstance(s, tuple) else (s,)
                                           for s in state.leaf_states])


def pack_optimizer_state(marked_pytree):
    """The inverse of unpack_optimizer_state."""
    leaves, tree_def = tree_flatten(marked_pytree, is_leaf=lambda x: isinstance(x, tuple))
    return OptimizerState([s if len(s) > 1 else s[0] for s in leaves], tree_def)


# ---------------------------------------------------------------- schedules

def constant(step_size):
    """A schedule that is step_size at every step."""
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate):
    """step_size * decay_rate ** (i / decay_steps)."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """step_size / (1 + decay_rate * i / decay_steps), optionally in whole steps."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * np.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From step_size to final_step_size as (1 - i / decay_steps) ** power, then constant."""
    def schedule(i):
        fraction = 1 - min(i, decay_steps) / decay_steps
        return fraction ** power * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """values[k] for i between boundaries[k - 1] and boundaries[k]."""
    boundaries, values = np.asarray(boundaries), np.asarray(values)
    if not boundaries.ndim == values.ndim == 1 or len(values) != len(boundaries) + 1:
        raise ValueError("piecewise_constant: values must be one longer than boundaries")
    return lambda i: values[int(np.sum(i > boundaries))]


def make_schedule(step_size):
    """step_size as a schedule: itself if callable, else constant(step_size)."""
    return step_size if callable(step_size) else constant(step_size)


# ---------------------------------------------------------------- optimizers

@optimizer
def sgd(step_size):
    """Stochastic gradient descent: x - step_size(i) * g."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0,
            lambda i, g, x: x - step_size(i) * g,
            lambda x: x)


@optimizer
def momentum(step_size, mass):
    """Heavy ball: v = mass v + g; x -= step v."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return (lambda x0: (x0, np.zeros_like(x0)), update, lambda state: state[0])


@optimizer
def nesterov(step_size, mass):
    """Nesterov momentum: v = mass v + g; x -= step (mass v + g)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return (lambda x0: (x0, np.zeros_like(x0)), update, lambda state: state[0])


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum on the scaled gradient."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, sum_sq, m = state
        sum_sq = sum_sq + g * g
        with np.errstate(divide="ignore"):
            scale = np.where(sum_sq > 0, 1.0 / np.sqrt(sum_sq), 0.0)
        m = (1.0 - momentum) * (g * scale) + momentum * m
        return x - step_size(i) * m, sum_sq, m
    return (lambda x0: (x0, np.zeros_like(x0), np.zeros_like(x0)), update,
            lambda state: state[0])


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: g over the root of a moving average of g squared."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, mean_sq = state
        mean_sq = mean_sq * gamma + g * g * (1.0 - gamma)
        return x - step_size(i) * g / np.sqrt(mean_sq + eps), mean_sq
    return (lambda x0: (x0, np.zeros_like(x0)), update, lambda state: state[0])


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, mean_sq, mom = state
        mean_sq = mean_sq * gamma + g * g * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / np.sqrt(mean_sq + eps)
        return x - mom, mean_sq, mom
    return (lambda x0: (x0, np.zeros_like(x0), np.zeros_like(x0)), update,
            lambda state: state[0])


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba, 2015), with bias-corrected moments."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g * g + b2 * v
        dtype = np.result_type(m)
        m_hat = m / (1 - np.asarray(b1, dtype) ** (i + 1))
        v_hat = v / (1 - np.asarray(b2, dtype) ** (i + 1))
        return x - step_size(i) * m_hat / (np.sqrt(v_hat) + eps), m, v
    return (lambda x0: (x0, np.zeros_like(x0), np.zeros_like(x0)), update,
            lambda state: state[0])


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: Adam with the infinity norm in place of the second moment."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = np.maximum(b2 * u, np.abs(g))
        correction = 1 - np.asarray(b1, np.result_type(m)) ** (i + 1)
        return x - (step_size(i) / correction) * m / (u + eps), m, u
    return (lambda x0: (x0, np.zeros_like(x0), np.zeros_like(x0)), update,
            lambda state: state[0])


# ---------------------------------------------------------------- gradient utilities

def l2_norm(tree):
    """The Euclidean norm of all leaves together."""
    return float(np.sqrt(sum(np.vdot(x, x).real for x in tree_leaves(tree))))


def clip_grads(grad_tree, max_norm):
    """Scale the gradients down to global norm max_norm, when above it."""
    norm = l2_norm(grad_tree)
    if norm < max_norm:
        return grad_tree
    return tree_map(lambda g: g * (max_norm / norm), grad_tree)
