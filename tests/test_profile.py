"""tp.profile: times per generated line, mapped back to the user's lines."""
import sys

import numpy as np

import transpile as tp


def loss(params, x, y):
    for W, b in params:
        x = np.tanh(x @ W + b)
    return np.sum((x - y) ** 2)


def _args():
    rng = np.random.default_rng()
    params = [(rng.standard_normal((64, 64)), rng.standard_normal(64)) for _ in range(3)]
    return params, rng.standard_normal((32, 64)), rng.standard_normal((32, 64))


def _lines(profile):
    here = __file__
    return {line: (text, seconds, hits) for f, line, text, seconds, hits in
            profile.by_source_line() if f == here}


def test_a_gradient_is_timed_by_the_users_lines():
    args = _args()
    g = tp.profile(tp.grad(loss), show=False)
    got = g(*args)
    for a, b in zip(tp.tree_leaves(got), tp.tree_leaves(tp.grad(loss)(*args))):
        np.testing.assert_array_equal(a, b)
    lines = _lines(g.last)
    line = loss.__code__.co_firstlineno + 2            # x = np.tanh(x @ W + b)
    text, seconds, hits = lines[line]
    assert text == "x = np.tanh(x @ W + b)"
    # three trips forward and three backward, several generated lines each
    assert hits >= 6 and seconds > 0
    assert lines[line + 1][0] == "return np.sum((x - y) ** 2)"
    assert g.last.total >= sum(r[3] for r in g.last.by_source_line())
    table = g.last.table()
    assert "x = np.tanh(x @ W + b)" in table and "share" in table
    annotated = g.last.annotated()
    assert "matmul = x @ W" in annotated and " ms | " in annotated
    assert sys.gettrace() is None


def test_a_block_and_a_plain_function():
    args = _args()
    step = tp.jit(tp.grad(loss))
    with tp.profile() as prof:
        for _ in range(2):
            step(*args)
    assert (loss.__code__.co_firstlineno + 2) in _lines(prof)
    assert "x = np.tanh(x @ W + b)" in str(prof)
    plain = tp.profile(loss, show=False)
    assert plain(*args) == loss(*args)
    assert _lines(plain.last)[loss.__code__.co_firstlineno + 2][2] == 3
