"""Writes tests/data/optax.npz: parameters after a few updates of each optax optimizer (and
schedule values), the reference that tests/test_optim.py holds tp.optim to. Run by hand
where optax is installed (not in CI): `python tests/make_optax_reference.py`.

`optimizers(lib)` builds the same optimizers from optax or tp.optim; `problem()` gives the
parameters and the gradients of each step (drawn from a fixed seed)."""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 6


def optimizers(o):
    warm = o.warmup_cosine_decay_schedule(0.0, 0.1, 2, 6, 0.01)
    return {
        "sgd": o.sgd(0.1), "sgd_momentum": o.sgd(0.1, momentum=0.9),
        "sgd_nesterov": o.sgd(0.1, momentum=0.9, nesterov=True),
        "adagrad": o.adagrad(0.1), "rmsprop": o.rmsprop(0.01),
        "rmsprop_momentum": o.rmsprop(0.01, momentum=0.8),
        "adam": o.adam(0.05), "adam_nesterov": o.adam(0.05, nesterov=True),
        "adamw": o.adamw(0.05, weight_decay=0.1), "lamb": o.lamb(0.05, weight_decay=0.01),
        "lion": o.lion(0.01), "adam_warmup_cosine": o.adam(warm),
        "clipped_adam": o.chain(o.clip_by_global_norm(1.0), o.adam(0.05)),
        "clip_sgd": o.chain(o.clip(0.5), o.sgd(0.1)),
        "adamw_scheduled_decay": o.adamw(0.05, weight_decay=o.exponential_decay(0.1, 2, 0.5)),
    }


def schedules(o):
    return {
        "exponential_decay": o.exponential_decay(0.5, 3, 0.7, transition_begin=2),
        "exponential_staircase": o.exponential_decay(0.5, 3, 0.7, staircase=True,
                                                     end_value=0.2),
        "exponential_growth": o.exponential_decay(0.5, 3, 1.5, end_value=1.0),
        "polynomial": o.polynomial_schedule(1.0, 0.1, 2, 8, 3),
        "linear": o.linear_schedule(1.0, 0.0, 10),
        "cosine": o.cosine_decay_schedule(1.0, 10, alpha=0.1, exponent=2.0),
        "warmup_cosine": o.warmup_cosine_decay_schedule(0.0, 1.0, 4, 12, 0.05),
    }


def problem():
    """(params, [grads per step]): a dict holding a tuple, as models' parameters do."""
    rng = np.random.default_rng(5)
    params = {"w": rng.standard_normal((3, 4)), "layers": (rng.standard_normal(4),
                                                          rng.standard_normal((2, 2)))}
    grads = [{"w": rng.standard_normal((3, 4)), "layers": (rng.standard_normal(4),
                                                           rng.standard_normal((2, 2)))}
             for _ in range(STEPS)]
    return params, grads


def leaves(tree):
    return [tree["w"], tree["layers"][0], tree["layers"][1]]


def main():
    import jax
    import optax
    jax.config.update("jax_enable_x64", True)
    out = {}
    params0, grads = problem()
    for name, opt in optimizers(optax).items():
        params = params0
        state = opt.init(params)
        for step, g in enumerate(grads):
            updates, state = opt.update(g, state, params)
            params = optax.apply_updates(params, updates)
            for i, leaf in enumerate(leaves(params)):
                out[f"{name}/{step}/{i}"] = np.asarray(leaf)
    for name, schedule in schedules(optax).items():
        out[f"schedule/{name}"] = np.array([float(schedule(c)) for c in range(16)])
    np.savez_compressed(os.path.join(HERE, "data", "optax.npz"), **out)
    print(f"wrote {len(out)} arrays")


if __name__ == "__main__":
    main()
