"""Writes tests/data/jax_random_<mode>.npz: what jax.random draws for fixed keys, the
reference that tests/test_random.py holds tp.random to. Run by hand where JAX is installed
(not in CI): `python tests/make_jax_random_reference.py`; it runs itself once per mode
(JAX's 64-bit mode, tp.random's default dtypes, and its default 32-bit mode).

Each entry is named after the call that made it; test_random.py makes the same calls."""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def cases(f, i):
    """(name, function of the random module) pairs; f and i are the float and int dtypes of
    the mode."""
    x = np.arange(12.0).reshape(3, 4).astype(f)
    p = np.array([0.1, 0.2, 0.3, 0.4], f)
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], f))
    alphas = np.array([0.3, 1.0, 2.5, 10.0, 100.0], f)
    mean, cov = np.array([1.0, -1.0], f), np.array([[2.0, 0.5], [0.5, 1.0]], f)
    out = []
    for seed in (0, 1, 42, 2 ** 31 - 1):
        out.append((f"PRNGKey({seed})", lambda r, s=seed: r.PRNGKey(s)))
    out += [
        ("split(k)", lambda r: r.split(r.PRNGKey(42))),
        ("split(k, 7)", lambda r: r.split(r.PRNGKey(42), 7)),
        ("split(k, (2, 3))", lambda r: r.split(r.PRNGKey(42), (2, 3))),
        ("fold_in(k, 7)", lambda r: r.fold_in(r.PRNGKey(42), 7)),
        ("fold_in(split(k)[1], 123456)", lambda r: r.fold_in(r.split(r.PRNGKey(0))[1], 123456)),
        ("bits(k, (4, 5), uint8)", lambda r: r.bits(r.PRNGKey(3), (4, 5), np.uint8)),
        ("bits(k, (4, 5), uint16)", lambda r: r.bits(r.PRNGKey(3), (4, 5), np.uint16)),
        ("bits(k, (4, 5), uint32)", lambda r: r.bits(r.PRNGKey(3), (4, 5), np.uint32)),
        ("uniform(k, (1000,))", lambda r: r.uniform(r.PRNGKey(42), (1000,), f)),
        ("uniform(k, (3, 4), -2.5, 3.0)", lambda r: r.uniform(r.PRNGKey(5), (3, 4), f, -2.5, 3.0)),
        ("uniform(k, (2,), float32)", lambda r: r.uniform(r.PRNGKey(9), (2,), np.float32)),
        ("normal(k, (1000,))", lambda r: r.normal(r.PRNGKey(42), (1000,), f)),
        ("normal(k, (3, 3), complex)", lambda r: r.normal(r.PRNGKey(8), (3, 3),
                                                         np.complex64 if f == np.float32
                                                         else np.complex128)),
        ("randint(k, (1000,), -3, 100)", lambda r: r.randint(r.PRNGKey(42), (1000,), -3, 100, i)),
        ("randint(k, (50,), 0, 256, uint8)", lambda r: r.randint(r.PRNGKey(1), (50,), 0, 256,
                                                                 np.uint8)),
        ("randint(k, (50,), -5, 5, int8)", lambda r: r.randint(r.PRNGKey(2), (50,), -5, 5,
                                                               np.int8)),
        ("randint(k, (20,), 5, 5)", lambda r: r.randint(r.PRNGKey(2), (20,), 5, 5, i)),
        ("permutation(k, 10)", lambda r: r.permutation(r.PRNGKey(42), 10)),
        ("permutation(k, 2000)", lambda r: r.permutation(r.PRNGKey(4), 2000)),  # two rounds
        ("permutation(k, x, 1)", lambda r: r.permutation(r.PRNGKey(6), x, 1)),
        ("permutation(k, x, 1, True)", lambda r: r.permutation(r.PRNGKey(6), x, 1, True)),
        ("choice(k, 10, (5,))", lambda r: r.choice(r.PRNGKey(7), 10, (5,))),
        ("choice(k, 10, (5,), False)", lambda r: r.choice(r.PRNGKey(7), 10, (5,), False)),
        ("choice(k, 4, (6,), p=p)", lambda r: r.choice(r.PRNGKey(7), 4, (6,), True, p)),
        ("choice(k, 4, (3,), False, p)", lambda r: r.choice(r.PRNGKey(7), 4, (3,), False, p)),
        ("choice(k, x, (2,), axis=1)", lambda r: r.choice(r.PRNGKey(7), x, (2,), axis=1)),
        ("bernoulli(k, 0.3, (50,))", lambda r: r.bernoulli(r.PRNGKey(11), f(0.3), (50,))),
        ("categorical(k, logits)", lambda r: r.categorical(r.PRNGKey(12), logits)),
        ("categorical(k, logits, shape=(5, 2))", lambda r: r.categorical(r.PRNGKey(12), logits,
                                                                         shape=(5, 2))),
        ("categorical(k, logits, axis=0)", lambda r: r.categorical(r.PRNGKey(12), logits,
                                                                   axis=0)),
        ("exponential(k, (500,))", lambda r: r.exponential(r.PRNGKey(13), (500,), f)),
        ("gumbel(k, (500,))", lambda r: r.gumbel(r.PRNGKey(14), (500,), f)),
        ("truncated_normal(k, -1.5, 2.0, (500,))", lambda r: r.truncated_normal(
            r.PRNGKey(15), -1.5, 2.0, (500,), f)),
        ("gamma(k, alphas)", lambda r: r.gamma(r.PRNGKey(16), alphas, None, f)),
        ("gamma(k, 2.0, (200,))", lambda r: r.gamma(r.PRNGKey(17), 2.0, (200,), f)),
        ("beta(k, 2.0, 3.0, (50,))", lambda r: r.beta(r.PRNGKey(18), 2.0, 3.0, (50,), f)),
        ("dirichlet(k, [0.5, 1, 2], (20,))", lambda r: r.dirichlet(
            r.PRNGKey(19), np.array([0.5, 1.0, 2.0], f), (20,), f)),
        ("multivariate_normal(k, mean, cov, (30,))", lambda r: r.multivariate_normal(
            r.PRNGKey(20), mean, cov, (30,))),
    ]
    return out


def main(mode):
    import jax
    jax.config.update("jax_enable_x64", mode == "x64")
    import jax.random as jr
    f, i = (np.float64, np.int64) if mode == "x64" else (np.float32, np.int32)
    arrays = {name: np.asarray(fn(jr)) for name, fn in cases(f, i)}
    arrays["__jax_version__"] = np.array(jax.__version__)
    np.savez_compressed(os.path.join(HERE, "data", f"jax_random_{mode}.npz"), **arrays)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        for mode in ("x64", "x32"):
            subprocess.run([sys.executable, __file__, mode], check=True)
