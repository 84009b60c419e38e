"""Gradient transformations in the style of optax:

    opt = tp.optim.adam(1e-3)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    params = tp.optim.apply_updates(params, updates)

An optimizer is a `GradientTransformation(init, update)`; `chain` composes them (clipping,
then Adam's scaling, then weight decay, then the learning rate) and the named optimizers
are such chains, as in optax, with optax's arguments, defaults and states (namedtuples
with optax's field names). Numbers agree with optax to rounding.

`update` is plain NumPy over pytrees (`tree_map` with lambdas, tuple states), so it runs
inside `tp.jit` (one compiled training step) and under `tp.vmap` (an ensemble of models,
each with its own state). Learning rates and weight decays may be schedules: functions of
the step count, such as `warmup_cosine_decay_schedule(...)`.
"""
from collections import namedtuple

import numpy as np

import runtime as rt
from ..codegen import function_from_source
from ..tree_util import tree_leaves, tree_map

__all__ = ["GradientTransformation", "EmptyState", "ScaleByAdamState", "ScaleByRmsState",
           "ScaleByRssState", "TraceState", "ScaleByScheduleState", "ScaleByLionState",
           "apply_updates", "chain", "identity", "scale", "scale_by_learning_rate",
           "scale_by_schedule", "scale_by_adam", "scale_by_rms", "scale_by_rss",
           "scale_by_trust_ratio", "scale_by_lion", "trace", "add_decayed_weights",
           "clip", "clip_by_global_norm", "global_norm", "sgd", "momentum", "nesterov",
           "adagrad", "rmsprop", "adam", "adamw", "lamb", "lion", "constant_schedule",
           "exponential_decay", "polynomial_schedule", "linear_schedule",
           "cosine_decay_schedule", "warmup_cosine_decay_schedule"]

GradientTransformation = namedtuple("GradientTransformation", ["init", "update"])
EmptyState = namedtuple("EmptyState", [])
ScaleByAdamState = namedtuple("ScaleByAdamState", ["count", "mu", "nu"])
ScaleByRmsState = namedtuple("ScaleByRmsState", ["nu"])
ScaleByRssState = namedtuple("ScaleByRssState", ["sum_of_squares"])
TraceState = namedtuple("TraceState", ["trace"])
ScaleByScheduleState = namedtuple("ScaleByScheduleState", ["count"])
ScaleByLionState = namedtuple("ScaleByLionState", ["count", "mu"])


def apply_updates(params, updates):
    """params + updates, leaf by leaf (in each parameter's dtype)."""
    return tree_map(lambda p, u: p + u.astype(p.dtype), params, updates)


def _zeros(params):
    return tree_map(lambda p: np.zeros_like(np.asarray(p)), params)


def _count():
    return np.zeros([], np.int32)


def _empty_init(params):
    return EmptyState()


# ---------------------------------------------------------------- the building blocks

def identity():
    """Leaves the updates as they are."""
    def update(updates, state, params=None):
        return updates, state
    return GradientTransformation(_empty_init, update)


def scale(step_size):
    """updates * step_size."""
    def update(updates, state, params=None):
        return tree_map(lambda g: step_size * g, updates), state
    return GradientTransformation(_empty_init, update)


def scale_by_schedule(step_size_fn):
    """updates * step_size_fn(count), count the number of updates made before."""
    def init(params):
        return ScaleByScheduleState(_count())

    def update(updates, state, params=None):
        count, = state
        step_size = step_size_fn(count)
        updates = tree_map(lambda g: step_size * g, updates)
        return updates, rt.to_like([count + 1], state)
    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate, flip_sign=True):
    """updates * -learning_rate (a number or a schedule): a descent step."""
    sign = -1.0 if flip_sign else 1.0
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * learning_rate)


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, nesterov=False):
    """Adam's scaling: bias-corrected first moment over the root of the second."""
    def init(params):
        return ScaleByAdamState(_count(), _zeros(params), _zeros(params))

    def update(updates, state, params=None):
        count, mu, nu = state
        mu = tree_map(lambda g, m: (1 - b1) * g + b1 * m, updates, mu)
        nu = tree_map(lambda g, v: (1 - b2) * (g * g) + b2 * v, updates, nu)
        count = count + 1
        c1 = 1 - b1 ** count
        c2 = 1 - b2 ** count
        if nesterov:
            c1_next = 1 - b1 ** (count + 1)
            mu_hat = tree_map(lambda m, g: b1 * (m / c1_next) + (1 - b1) * (g / c1), mu,
                              updates)
        else:
            mu_hat = tree_map(lambda m: m / c1, mu)
        updates = tree_map(lambda m, v: m / (np.sqrt(v / c2 + eps_root) + eps), mu_hat, nu)
        return updates, rt.to_like([count, mu, nu], state)
    return GradientTransformation(init, update)


def scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0):
    """updates / sqrt(a moving average of their squares + eps)."""
    def init(params):
        return ScaleByRmsState(tree_map(lambda p: np.full_like(np.asarray(p), initial_scale),
                                        params))

    def update(updates, state, params=None):
        nu, = state
        nu = tree_map(lambda g, v: (1 - decay) * (g * g) + decay * v, updates, nu)
        updates = tree_map(lambda g, v: g / np.sqrt(v + eps), updates, nu)
        return updates, rt.to_like([nu], state)
    return GradientTransformation(init, update)


def scale_by_rss(initial_accumulator_value=0.1, eps=1e-7):
    """updates / sqrt(the running sum of their squares): Adagrad's scaling."""
    def init(params):
        return ScaleByRssState(tree_map(
            lambda p: np.full_like(np.asarray(p), initial_accumulator_value), params))

    def update(updates, state, params=None):
        total, = state
        total = tree_map(lambda g, t: g * g + t, updates, total)
        updates = tree_map(lambda g, t: np.where(t > 0, g / np.sqrt(t + eps), 0.0 * g),
                           updates, total)
        return updates, rt.to_like([total], state)
    return GradientTransformation(init, update)


def trace(decay, nesterov=False):
    """Momentum: t = g + decay * t; the update is t (or g + decay * t with nesterov)."""
    def init(params):
        return TraceState(_zeros(params))

    def update(updates, state, params=None):
        t, = state
        t = tree_map(lambda g, m: g + decay * m, updates, t)
        if nesterov:
            updates = tree_map(lambda g, m: g + decay * m, updates, t)
        else:
            updates = t
        return updates, rt.to_like([t], state)
    return GradientTransformation(init, update)


def scale_by_trust_ratio(min_norm=0.0, trust_coefficient=1.0, eps=0.0):
    """Each leaf's update scaled by ||param|| / ||update|| (LAMB's layer-wise ratio)."""
    def update(updates, state, params):
        return tree_map(lambda u, p: u * _trust_ratio(u, p, min_norm, trust_coefficient,
                                                      eps), updates, params), state
    return GradientTransformation(_empty_init, update)


def _trust_ratio(u, p, min_norm, trust_coefficient, eps):
    param_norm = np.maximum(np.sqrt(np.sum(p * p)), min_norm)
    update_norm = np.maximum(np.sqrt(np.sum(u * u)), min_norm)
    ratio = trust_coefficient * param_norm / (update_norm + eps)
    return np.where((param_norm == 0.0) | (update_norm == 0.0), 1.0, ratio)


def scale_by_lion(b1=0.9, b2=0.99):
    """Lion's update: the sign of an interpolation of the gradient and its momentum."""
    def init(params):
        return ScaleByLionState(_count(), _zeros(params))

    def update(updates, state, params=None):
        count, mu = state
        signs = tree_map(lambda g, m: np.sign((1 - b1) * g + b1 * m), updates, mu)
        mu = tree_map(lambda g, m: (1 - b2) * g + b2 * m, updates, mu)
        return signs, rt.to_like([count + 1, mu], state)
    return GradientTransformation(init, update)


def add_decayed_weights(weight_decay=0.0):
    """updates + weight_decay * params (a number or a schedule)."""
    if callable(weight_decay):
        def init(params):
            return ScaleByScheduleState(_count())

        def update(updates, state, params):
            count, = state
            decay = weight_decay(count)
            updates = tree_map(lambda g, p: g + decay * p, updates, params)
            return updates, rt.to_like([count + 1], state)
        return GradientTransformation(init, update)

    def update_constant(updates, state, params):
        return tree_map(lambda g, p: g + weight_decay * p, updates, params), state
    return GradientTransformation(_empty_init, update_constant)


def clip(max_delta):
    """Each element clipped to [-max_delta, max_delta]."""
    def update(updates, state, params=None):
        return tree_map(lambda g: np.clip(g, -max_delta, max_delta), updates), state
    return GradientTransformation(_empty_init, update)


def global_norm(tree):
    """The 2-norm of all the leaves of `tree` together."""
    return np.sqrt(sum([np.sum(leaf * leaf) for leaf in tree_leaves(tree)]))


def clip_by_global_norm(max_norm):
    """All updates scaled by max_norm / their global norm when that is above max_norm."""
    def update(updates, state, params=None):
        norm = global_norm(updates)
        small = norm < max_norm
        return tree_map(lambda g: np.where(small, g, (g / norm) * max_norm), updates), state
    return GradientTransformation(_empty_init, update)


def chain(*transforms):
    """The transformations one after another; the state is the tuple of their states."""
    n = len(transforms)

    def init(params):
        return tuple(t.init(params) for t in transforms)

    lines = "".join(f"    updates, state_{i} = update_{i}(updates, state[{i}], params)\n"
                    for i in range(n))
    states = "".join(f"state_{i}, " for i in range(n))
    update = function_from_source(
        "chain_update", "def chain_update(updates, state, params=None):\n" + lines +
        f"    return updates, ({states})\n",
        {f"update_{i}": t.update for i, t in enumerate(transforms)})
    return GradientTransformation(init, update)


# ---------------------------------------------------------------- optimizers

def sgd(learning_rate, momentum=None, nesterov=False):
    """Stochastic gradient descent, with optional (Nesterov) momentum: updates * -learning_rate."""
    if momentum is None:
        return scale_by_learning_rate(learning_rate)
    return chain(trace(momentum, nesterov), scale_by_learning_rate(learning_rate))


def momentum(learning_rate, decay=0.9):
    """SGD with momentum (`sgd(learning_rate, momentum=decay)`)."""
    return sgd(learning_rate, decay)


def nesterov(learning_rate, decay=0.9):
    """SGD with Nesterov momentum (`sgd(learning_rate, decay, nesterov=True)`)."""
    return sgd(learning_rate, decay, nesterov=True)


def adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-7):
    """Adagrad: updates over the root of the running sum of their squares, times -learning_rate."""
    return chain(scale_by_rss(initial_accumulator_value, eps),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, momentum=None,
            nesterov=False):
    """RMSProp: updates over the root of a moving average of their squares, times
    -learning_rate; optional momentum."""
    parts = [scale_by_rms(decay, eps, initial_scale), scale_by_learning_rate(learning_rate)]
    if momentum is not None:
        parts.append(trace(momentum, nesterov))
    return chain(*parts)


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, nesterov=False):
    """Adam (Kingma and Ba): scale_by_adam, then -learning_rate."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, weight_decay=1e-4,
          nesterov=False):
    """Adam with decoupled weight decay (added after Adam's scaling, before the rate)."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov),
                 add_decayed_weights(weight_decay), scale_by_learning_rate(learning_rate))


def lamb(learning_rate, b1=0.9, b2=0.999, eps=1e-6, eps_root=0.0, weight_decay=0.0):
    """LAMB (You et al.): Adam's scaling plus weight decay, scaled per leaf by the trust
    ratio, then -learning_rate."""
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay),
                 scale_by_trust_ratio(), scale_by_learning_rate(learning_rate))


def lion(learning_rate, b1=0.9, b2=0.99, weight_decay=1e-3):
    """Lion (Chen et al.): the sign of interpolated momentum plus weight decay, then
    -learning_rate."""
    return chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay),
                 scale_by_learning_rate(learning_rate))


# ---------------------------------------------------------------- schedules

def constant_schedule(value):
    """A schedule that is `value` at every step."""
    def schedule(count):
        return value
    return schedule


def exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0,
                      staircase=False, end_value=None):
    """init_value * decay_rate ** ((count - transition_begin) / transition_steps), held at
    init_value before transition_begin and bounded by end_value."""
    if transition_steps <= 0 or decay_rate == 0:
        return constant_schedule(init_value)
    transition_begin = max(transition_begin, 0)
    lower = decay_rate < 1.0

    def schedule(count):
        steps = count - transition_begin
        p = steps / transition_steps
        if staircase:
            p = np.floor(p)
        value = np.where(steps <= 0, init_value, init_value * decay_rate ** p)
        if end_value is None:
            return value
        if lower:
            return np.maximum(value, end_value)
        return np.minimum(value, end_value)
    return schedule


def polynomial_schedule(init_value, end_value, power, transition_steps, transition_begin=0):
    """From init_value to end_value over transition_steps, as (1 - t) ** power."""
    if transition_steps <= 0:
        return constant_schedule(init_value)

    def schedule(count):
        steps = np.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - steps / transition_steps
        return (init_value - end_value) * frac ** power + end_value
    return schedule


def linear_schedule(init_value, end_value, transition_steps, transition_begin=0):
    """From init_value to end_value linearly over transition_steps, after transition_begin."""
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def cosine_decay_schedule(init_value, decay_steps, alpha=0.0, exponent=1.0):
    """init_value times a half cosine from 1 down to alpha over decay_steps."""
    if decay_steps <= 0:
        raise ValueError("cosine_decay_schedule needs decay_steps > 0")

    def schedule(count):
        steps = np.minimum(count, decay_steps)
        cosine = 0.5 * (1 + np.cos(np.pi * steps / decay_steps))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)
    return schedule


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps, decay_steps,
                                 end_value=0.0, exponent=1.0):
    """A linear warmup from init_value to peak_value over warmup_steps, then a cosine decay
    to end_value at decay_steps (counted from the start, as optax counts)."""
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    warmup = linear_schedule(init_value, peak_value, warmup_steps)
    decay = cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)

    def schedule(count):
        return np.where(count < warmup_steps, warmup(count), decay(count - warmup_steps))
    return schedule
