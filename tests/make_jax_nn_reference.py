"""Writes tests/data/jax_stax.npz: what JAX's stax gives for a few models (parameters from a
fixed key, outputs and gradients on fixed inputs), the reference that tests/test_nn.py holds
tp.nn to. Run by hand where JAX is installed (not in CI):
`python tests/make_jax_nn_reference.py`. JAX runs in 64-bit mode, tp's default.

`models(stax)` builds the same models from either library; `inputs()` draws the inputs."""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def models(S):
    """name -> (layer, input shape, whether apply_fun takes a key)."""
    return {
        "mlp": (S.serial(S.Dense(16), S.Relu, S.Dense(10), S.LogSoftmax), (5, 8), False),
        "cnn": (S.serial(S.Conv(4, (3, 3), padding="SAME", strides=(2, 2)), S.Relu,
                         S.MaxPool((2, 2), (1, 1)),
                         S.Conv(6, (2, 2), padding="VALID", strides=(1, 2)), S.Relu,
                         S.MaxPool((2, 2), (1, 1), "SAME"), S.Flatten, S.Dense(8), S.Relu,
                         S.Dense(3)), (4, 9, 9, 2), False),
        "encoder": (S.serial(S.Dense(12), S.Relu, S.FanOut(2),
                             S.parallel(S.Dense(3), S.serial(S.Dense(3), S.Softplus))),
                    (6, 5), False),
        "mixed": (S.serial(S.Conv(3, (2, 2), strides=(2, 1), padding="SAME"), S.Tanh,
                           S.AvgPool((2, 2), (1, 1), "SAME"), S.SumPool((2, 2)),
                           S.BatchNorm(), S.Flatten, S.Dense(4), S.Elu, S.Dense(4),
                           S.LeakyRelu, S.Dense(4), S.Selu, S.Dense(4), S.Sigmoid,
                           S.Dense(4), S.Gelu, S.FanOut(2), S.parallel(S.Identity, S.Dense(4)),
                           S.FanInConcat(), S.Dense(4), S.FanOut(3), S.FanInSum, S.Exp,
                           S.Softmax), (3, 7, 6, 2), False),
        "nchw": (S.serial(S.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (2, 2)), S.Relu,
                          S.MaxPool((2, 2), spec="NCHW"), S.Flatten, S.Dense(2)),
                 (2, 2, 6, 5), False),
        "dropout": (S.serial(S.Dense(6), S.Dropout(0.6), S.Dense(3)), (4, 5), True),
    }


def inputs(shape, name):
    seed = sum(map(ord, name))
    return np.random.default_rng(seed).standard_normal(shape)


def flat(tree):
    """The leaves of nested tuples and lists of arrays, in order."""
    if isinstance(tree, (tuple, list)):
        return [leaf for part in tree for leaf in flat(part)]
    return [tree]


def main():
    import jax
    import jax.numpy as jnp
    from jax.example_libraries import stax
    jax.config.update("jax_enable_x64", True)
    out = {}
    for name, ((init, apply), shape, keyed) in models(stax).items():
        _, params = init(jax.random.PRNGKey(7), shape)
        x = inputs(shape, name)
        kw = {"rng": jax.random.PRNGKey(11)} if keyed else {}

        def loss(p):
            return sum(jnp.sum(jnp.sin(y)) for y in flat(apply(p, x, **kw)))
        for i, leaf in enumerate(flat(params)):
            out[f"{name}/param{i}"] = np.asarray(leaf)
        for i, leaf in enumerate(flat(apply(params, x, **kw))):
            out[f"{name}/out{i}"] = np.asarray(leaf)
        for i, leaf in enumerate(flat(jax.grad(loss)(params))):
            out[f"{name}/grad{i}"] = np.asarray(leaf)
    np.savez_compressed(os.path.join(HERE, "data", "jax_stax.npz"), **out)
    print(f"wrote {len(out)} arrays")


if __name__ == "__main__":
    main()
