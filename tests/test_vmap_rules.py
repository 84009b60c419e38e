"""Every batching rule against a Python loop over examples.

The cases are the primitive cases of test_primitives.py. For each, three examples are drawn
fresh; a random subset of the arguments is mapped (at least one), each along a random axis
(negative ones too); the rest are shared. vmap(f) must equal stacking f over the examples,
and vmap(grad(f)) (per-example gradients, which exercise the batching rules of the runtime
helpers that reverse mode emits) must equal a loop over grad(f).
"""
import os
import zlib

import numpy as np
import pytest

import transpile as tp
from runtime.trees import is_float_leaf, tree_leaves, tree_map

import test_primitives as P

SEED = P.SEED
NEX = 3          # examples per batch


def _stack(leaves):
    return np.stack([np.asarray(x) for x in leaves])


def _batch(make, rng):
    """(args, in_axes, per-example argument tuples)."""
    draws = [make(rng) for _ in range(NEX)]
    n = len(draws[0])
    mapped = rng.random(n) < 0.6
    if not mapped.any():
        mapped[rng.integers(n)] = True
    args, axes = [], []
    for k in range(n):
        if not mapped[k]:
            args.append(draws[0][k])
            axes.append(None)
            continue
        parts = [d[k] for d in draws]
        if isinstance(parts[0], (tuple, list, dict)):
            args.append(tree_map(lambda *ls: _stack(ls), *parts))
            axes.append(0)
            continue
        stacked = _stack(parts)
        axis = int(rng.integers(-stacked.ndim, stacked.ndim))
        args.append(np.moveaxis(stacked, 0, axis))
        axes.append(axis)
    examples = [tuple(draws[b][k] if mapped[k] else draws[0][k] for k in range(n))
                for b in range(NEX)]
    return tuple(args), tuple(axes), examples


def _expected(f, examples, out_axis):
    outs = [f(*ex) for ex in examples]
    return tree_map(lambda *ls: np.moveaxis(_stack(ls), 0, out_axis), *outs)


def _close(got, want, what):
    g, w = tree_leaves(got), tree_leaves(want)
    assert len(g) == len(w), f"{what}: {len(g)} outputs, expected {len(w)}"
    for a, b in zip(g, w):
        assert np.shape(a) == np.shape(b), f"{what}: shape {np.shape(a)} != {np.shape(b)}"
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                   rtol=1e-9, atol=1e-10, err_msg=what)


def _scalar(f, n):
    """sum(sin(f(...))): a scalar function of the same arguments, to take gradients of."""
    if n == 1:
        def g(a):
            return np.sum(np.sin(f(a)))
    elif n == 2:
        def g(a, b):
            return np.sum(np.sin(f(a, b)))
    else:
        def g(a, b, c):
            return np.sum(np.sin(f(a, b, c)))
    return g


def run_case(f, make, case_id, grads=True):
    rng = np.random.default_rng([SEED, zlib.crc32(case_id.encode())])
    args, in_axes, examples = _batch(make, rng)
    out_axis = 0 if rng.random() < 0.7 else -1
    try:
        got = tp.vmap(f, in_axes=in_axes, out_axes=out_axis)(*args)
        _close(got, _expected(f, examples, out_axis),
               f"vmap(in_axes={in_axes}, out_axes={out_axis})")
        first = examples[0][0]
        single = not isinstance(f(*examples[0]), (tuple, list, dict))
        if grads and single and is_float_leaf(first) and len(examples[0]) <= 3:
            g = tp.grad(_scalar(f, len(examples[0])))
            got = tp.vmap(g, in_axes=in_axes)(*args)
            _close(got, _expected(g, examples, 0), f"vmap(grad) in_axes={in_axes}")
    except AssertionError as e:
        raise AssertionError(f"{e}\n  (replay with TP_SEED={SEED})") from None
    except Exception as e:
        if hasattr(e, "add_note"):
            e.add_note(f"(replay with TP_SEED={SEED}; in_axes={in_axes})")
        raise


def _unary_cases():
    return [(P.unary(fn), (lambda g: lambda r: (g(r, 3, 4),))(gen), fn.__name__)
            for fn, gen in P.UNARY]


def _binary_cases():
    out = []
    for fn, (sx, sy) in P.BINARY_CASES:
        if fn in (np.maximum, np.minimum, np.fmax, np.fmin):
            def make(r, sx=sx, sy=sy):
                both = P.D(r, int(np.prod(sx)) + int(np.prod(sy)))
                return both[:int(np.prod(sx))].reshape(sx), both[int(np.prod(sx)):].reshape(sy)
        elif fn is np.divide:
            def make(r, sx=sx, sy=sy):
                return P.N(r, *sx), P.P(r, *sy)
        else:
            def make(r, sx=sx, sy=sy):
                return P.S(r, *sx), P.S(r, *sy)
        out.append((P.binary(fn), make, f"{fn.__name__}-{sx}-{sy}"))
    return out


def _listed(cases):
    return [(f, make, f"{f.__name__}{i}") for i, (f, make) in enumerate(cases)]


CASES = (_unary_cases() + _binary_cases() + _listed(P.OPS) + _listed(
    [(f, (lambda g, s: lambda r: (g(r, *s),))(gen, shape)) for f, gen, shape in P.REDUCTIONS])
    + _listed(P.LINALG) + _listed(P.SHAPE_OPS)
    + (_listed(P.SPECIAL) if P.scipy is not None else []))


@pytest.mark.parametrize("f,make,case_id", CASES, ids=[c[2] for c in CASES])
def test_batching_rule(f, make, case_id):
    run_case(f, make, case_id)


def test_every_primitive_has_a_batching_rule():
    from transpile import rules
    missing = sorted(s for p in rules.all_primitives() if p.batch is None
                     for s in p.spellings[:1])
    assert not missing, f"primitives without a batching rule: {missing}"
