"""Runtime helpers that may return an argument (or a view of one) say so in the rule table.

The aliasing pass decides from the table (`view=` on a rule, transpile/rules/core.py) which
names share memory. A helper that passes an argument through without saying so hides the
sharing: the reverse pass then keeps a later in-place write in place and its backward pass
reads the overwritten values (the generator's seed 65085: rt.align_lanes passed a view on,
and grad(vmap(f)) was wrong). Here every rt.* primitive is watched while transformed
programs run, and each result that shares memory with an argument must be declared.
"""
import collections
import functools

import numpy as np
import pytest

import runtime as rt
import transpile as tp
from transpile.rules import core

from program_generator import check_seed

# Helpers whose sharing the passes handle by kind, not through `view=`: a popped item is the
# pushed object (reverse/adjoints.py), list(x)/tuple(x) hold x's items (frontend/aliasing.py).
_BY_KIND = {"rt.pop", "rt.to_list", "rt.to_tuple"}


def _arrays(value, depth=0):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (tuple, list)) and depth < 3:
        for item in value:
            yield from _arrays(item, depth + 1)
    elif isinstance(value, dict) and depth < 3:
        for item in value.values():
            yield from _arrays(item, depth + 1)


def _shared_with(result, args):
    outs = list(_arrays(result))
    return [k for k, arg in enumerate(args)
            if outs and any(np.shares_memory(o, a) for a in _arrays(arg) for o in outs)]


@pytest.fixture
def watched(monkeypatch):
    """Wrap each rt.* primitive of the table not declared a view of every argument it has;
    yields the Counter of (spelling, position) it saw shared and not declared."""
    seen = collections.Counter()

    def watch(spelling, prim, fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            result = fn(*args, **kwargs)
            for k in _shared_with(result, args):
                # (an argument that already shares memory with a declared one: the
                # aliasing pass knows that from where they were made)
                if k not in prim.view and not any(
                        k in _shared_with(args[j], args) for j in prim.view if j < len(args)):
                    seen[(spelling, k)] += 1
            return result
        return call

    for spelling, prim in list(core._BY_SPELLING.items()):
        fn = getattr(rt, spelling[3:], None) if spelling.startswith("rt.") else None
        if fn is None or not callable(fn) or isinstance(fn, type) or spelling in _BY_KIND:
            continue
        wrapper = watch(spelling, prim, fn)
        found = core.lookup_object(fn)
        if found is not None:           # transformations still know the helper by object
            monkeypatch.setitem(core._BY_OBJECT, id(wrapper), found)
            core._OBJECTS.append(wrapper)
        monkeypatch.setattr(rt, spelling[3:], wrapper)
    yield seen


def _branches_and_writes(x, w):
    y = np.zeros(x.shape[0])
    pair = (x * w, np.sin(x))
    a, b = pair
    for i in range(x.shape[0]):
        if x[i] > 0:
            y[i] = a[i] ** 2
        else:
            y[i] = np.cos(b[i])
    head = y[1:]
    scaled = head * np.sum(x[:1])
    y[1:] *= np.sum(w)
    return np.sum(scaled * y[1:]) + np.sum(y * w)


def _lists_and_loops(x):
    parts = [x[0], x[1]]
    total = 0.0
    for p in parts:
        total = total + np.tanh(p) * x[2]
    acc = np.concatenate([x[:2], x[:2]])
    acc[2:] += total
    view = acc.reshape(2, 2).T
    return np.sum(view[0] * acc[:2]) + total


@pytest.mark.parametrize("seed", range(3))
def test_generated_programs_declare_their_views(watched, seed):
    check_seed(seed)
    assert not watched, f"runtime helpers share memory with arguments undeclared: {watched}"


def test_transformations_of_vmap_declare_their_views(watched):
    rng = np.random.default_rng(34)
    x, w = rng.normal(size=(3, 4)), rng.normal(size=4)

    def summed(xs):
        return np.sum(tp.vmap(_branches_and_writes, in_axes=(0, None))(xs, w))

    tp.grad(summed)(x)
    tp.vmap(tp.grad(_branches_and_writes), in_axes=(0, None))(x, w)
    tp.jacfwd(tp.vmap(_lists_and_loops))(x)
    tp.hessian(lambda v: np.sum(tp.vmap(_lists_and_loops)(v)))(x)
    tp.vmap(tp.hessian(_lists_and_loops))(x)
    assert not watched, f"runtime helpers share memory with arguments undeclared: {watched}"
