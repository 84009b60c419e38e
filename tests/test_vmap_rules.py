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
    + _listed(P.LINALG) + _listed(P.SHAPE_OPS) + _listed(P.NN)
    + (_listed(P.SPECIAL) if P.scipy is not None else []))


@pytest.mark.parametrize("f,make,case_id", CASES, ids=[c[2] for c in CASES])
def test_batching_rule(f, make, case_id):
    run_case(f, make, case_id)


def test_every_primitive_has_a_batching_rule():
    from transpile import rules
    missing = sorted(s for p in rules.all_primitives() if p.batch is None
                     for s in p.spellings[:1])
    assert not missing, f"primitives without a batching rule: {missing}"


# =====================================================================================
# Per-example gradients and jvps of user programs (the rules of what reverse and forward
# mode emit: rt.seed, rt.unbroadcast, rt.expand, rt.as_grad, rt.add, rt.broadcast_like...)
# =====================================================================================

import test_programs as TPR  # noqa: E402


def _n(rng, *shape):
    return rng.standard_normal(shape)


def _summed(f, n):
    """np.sum of a program with a non-scalar output, so that it has a gradient."""
    if n == 1:
        def g(a):
            return np.sum(f(a))
    elif n == 2:
        def g(a, b):
            return np.sum(f(a, b))
    else:
        def g(a, b, c):
            return np.sum(f(a, b, c))
    g.__name__ = f"sum_{f.__name__}"
    return g


def _mapped_args(make, in_axes, case_id):
    """(args, per-example argument tuples): mapped arguments (in_axes 0) are stacked from
    NEX fresh draws, the others are shared."""
    rng = np.random.default_rng([SEED, zlib.crc32(case_id.encode())])
    draws = [make(rng) for _ in range(NEX)]
    args = tuple(d if ax is None else tree_map(lambda *ls: _stack(ls), *[x[k] for x in draws])
                 for k, (d, ax) in enumerate(zip(draws[0], in_axes)))
    examples = [tuple(draws[0][k] if ax is None else draws[b][k]
                      for k, ax in enumerate(in_axes)) for b in range(NEX)]
    return args, examples


def _against_loop(t, args, in_axes, examples, what):
    got = tp.vmap(t, in_axes=in_axes)(*args)
    _close(got, tree_map(lambda *ls: _stack(ls), *[t(*ex) for ex in examples]), what)


# (program, argument maker, in_axes, argnums): per-example gradients with respect to
# parameters shared by every example (in_axes None) and to per-example arguments
PER_EXAMPLE = [
    # loop over a list of (W, b) tuples; gradient of the shared parameters per example
    (TPR.mlp_loss, TPR._mlp_args, (None, 0, 0), 0),
    # calls of another function with a tuple state, tuple of parameters
    (TPR.rnn_loss, TPR._rnn_args, (None, 0, 0), (0, 2)),
    # a dict of parameters (one of them a Python float)
    (TPR.dict_model_loss, TPR._dict_model_args, (None, 0, 0), 0),
    (TPR.softmax_cross_entropy, lambda r: (_n(r, 4, 3), TPR._onehot(r, 4, 3)), (0, 0), 0),
    # a loop carrying an array; a shared float learning rate
    (TPR.inner_sgd, lambda r: (float(r.uniform(0.05, 0.2)), _n(r, 3), _n(r, 3)),
     (None, 0, 0), (0, 2)),
    # math.* on per-example Python floats
    (TPR.pendulum_energy, lambda r: (float(r.uniform(-1, 1)), float(r.uniform(-1, 1)),
                                     _n(r, 3)), (0, 0, None), (0, 1, 2)),
    # in-place row writes into a local array, in a loop
    (TPR.row_writes, lambda r: (_n(r, 4, 3), _n(r, 3)), (0, None), (0, 1)),
    # loops over enumerate and zip of lists of arrays
    (TPR.weighted_pairs, lambda r: ([_n(r, 3) for _ in range(3)],
                                    [_n(r, 3) for _ in range(3)]), (0, None), (0, 1)),
    # calls of a module-level transformed function (tp.grad inside)
    (TPR.leapfrog_loss, lambda r: (_n(r, 3), _n(r, 3)), (0, None), (0, 1)),
    # calls of other functions in a loop (non-scalar program, summed)
    (_summed(TPR.rk4_integrate, 2), lambda r: (_n(r, 3), float(r.uniform(0.5, 1.5))),
     (0, None), (0, 1)),
    (_summed(TPR.layer_norm, 3), lambda r: (_n(r, 3, 5), _n(r, 5), _n(r, 5)),
     (0, None, None), (0, 1, 2)),
    # tuple unpacking in a loop
    (_summed(TPR.linear_recurrence, 3), lambda r: (_n(r, 3), _n(r, 3),
                                                    float(r.uniform(0.5, 1.0))),
     (0, 0, None), (0, 1, 2)),
    # np.where, np.clip, np.maximum
    (TPR.where_clip, lambda r: (_n(r, 6),), (0,), 0),
    # branches on values that differ between examples
    (TPR.cond_expr, lambda r: (r.uniform(-1.0, 1.0, 4), r.uniform(-1.5, 1.5, 4)),
     (0, 0), (0, 1)),
    (TPR.huber, lambda r: (float(r.uniform(-3, 3)), 1.0), (0, None), 0),
    # recursion on the structure of a tuple (isinstance: a branch the same for all examples)
    (TPR.nested_sum, lambda r: (((_n(r, 2), _n(r, 3)), (_n(r, 2, 2), (_n(r, 1), 0.7))),),
     (0,), 0),
    # recursion on an unbatched int
    (TPR.fast_pow_loss, lambda r: (_n(r, 3),), (0,), 0),
    # early return and break in loops, on values that differ between examples
    (TPR.first_exceeding, TPR._first_exceeding_args(hit=True), (0, None), 0),
    (TPR.accumulate_until, lambda r: (r.uniform(0.2, 1.0, 6), 1.0), (0, None), 0),
    # writes into a local list and new keys of a local dict
    (TPR.local_list_and_dict_writes, lambda r: (_n(r, 4), _n(r, 4)), (0, None), (0, 1)),
]


def _per_example_id(case):
    f, _, in_axes, argnums = case
    return f"{f.__name__}-{in_axes}-{argnums}".replace(" ", "")


@pytest.mark.parametrize("kind", ["grad", "value_and_grad"])
@pytest.mark.parametrize("case", PER_EXAMPLE, ids=[_per_example_id(c) for c in PER_EXAMPLE])
def test_per_example_gradients_of_programs(case, kind):
    f, make, in_axes, argnums = case
    args, examples = _mapped_args(make, in_axes, _per_example_id(case))
    t = (tp.grad if kind == "grad" else tp.value_and_grad)(f, argnums=argnums)
    _against_loop(t, args, in_axes, examples, f"vmap({kind}({f.__name__}))")


def test_per_example_gradients_when_no_example_takes_a_branch():
    """Every example takes the else branch (the branch body is skipped as a whole)."""
    f = _summed(TPR.piecewise, 1)
    rng = np.random.default_rng([SEED, 7])
    xs = rng.uniform(-0.2, 0.2, (NEX, 4))          # each sum in (-1, 1): the last branch
    g = tp.grad(f)
    _close(tp.vmap(g)(xs), _stack([g(x) for x in xs]), "vmap(grad(piecewise)), one branch")


def test_per_example_gradients_with_branches_taken_differently():
    f = _summed(TPR.piecewise, 1)
    rng = np.random.default_rng([SEED, 8])
    xs = rng.uniform(-0.2, 0.2, (3, 4)) + np.array([[3.0], [-3.0], [0.0]]) / 4
    for t in (tp.grad(f), tp.value_and_grad(f)):
        _against_loop(t, (xs,), (0,), list(zip(xs)), "vmap(grad(piecewise)), all branches")


# ---------------------------------------------------------------- tp.jvp inside vmapped code

def _jvp_of(f):
    def directional(x, y, t):
        return tp.jvp(f, (x, y), (t, 0.5 * y))
    return directional


def _jvp_first(f):
    def column(x, y, t):
        out, tangent = tp.jvp(f, (x, y), (t, np.zeros_like(y)))
        return tangent
    return column


JVP_PROGRAMS = [
    (TPR.rk4_integrate, lambda r: (_n(r, 3), float(r.uniform(0.5, 1.5)), _n(r, 3))),
    (TPR.gram_energy, lambda r: (_n(r, 5, 3), _n(r, 3), _n(r, 5, 3))),
    (TPR.cond_expr, lambda r: (r.uniform(-1.0, 1.0, 4), r.uniform(-1.5, 1.5, 4),
                               _n(r, 4))),
    (TPR.standardized_score, lambda r: (_n(r, 5), _n(r, 5), _n(r, 5))),
    (TPR.chebyshev_sum, lambda r: (_n(r, 4), _n(r, 5), _n(r, 4))),
]


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (None, None, 0), (0, None, 0)],
                         ids=["all", "tangents", "primal_and_tangent"])
@pytest.mark.parametrize("f,make", JVP_PROGRAMS, ids=[f.__name__ for f, _ in JVP_PROGRAMS])
def test_per_example_jvp_inside_vmap(f, make, in_axes):
    """vmap of a function that calls tp.jvp: per-example directional derivatives (with
    in_axes (None, None, 0), the columns of a Jacobian at one point)."""
    case = f"jvp-{f.__name__}-{in_axes}"
    args, examples = _mapped_args(make, in_axes, case)
    for t in (_jvp_of(f), _jvp_first(f)):
        _against_loop(t, args, in_axes, examples, f"vmap of tp.jvp({f.__name__})")


# ---------------------------------------------------------------- the helpers one by one
# Each helper that reverse and forward mode emit, called directly, under random in_axes
# (so every mix of batched and unbatched arguments occurs across seeds), and the helpers
# vmap itself emits for them (called with one lane already, so vmap of them is vmap of
# vmap). run_case also checks vmap(grad) of each, which differentiates the helpers.

import runtime as rt  # noqa: E402


def h_unbroadcast_rows(g, x): return rt.unbroadcast(g, x)
def h_unbroadcast_ones(g, x): return rt.unbroadcast(g, x)
def h_unbroadcast_scalar(g, x): return rt.unbroadcast(g, x)
def h_expand_axis0(g, x): return rt.expand(g, x, 0)
def h_expand_all(g, x): return rt.expand(g, x)
def h_expand_keep(g, x): return rt.expand(g, x, 1, True)
def h_expand_neg(g, x): return rt.expand(g, x, (-1, 0))
def h_broadcast_like(t, out): return rt.broadcast_like(t, out)
def h_broadcast_like_same(t, out): return rt.broadcast_like(t, out)
def h_as_grad(g, x): return rt.as_grad(g, x)
def h_as_grad_tuple(g, x, y): return rt.as_grad((g, 2.0 * g), (x, y))
def h_cast_like(g, x): return rt.cast_like(g, x.astype(np.float32))
def h_add(a, b): return rt.add((a, 2.0 * a), (b, b * b))
def h_tree_vdot(a, b): return rt.tree_vdot((a, 2.0 * a), (b, b * b))
def h_tree_scale(x, s): return rt.tree_scale((x, 2.0 * x), np.sum(s))
def h_inside(a, lo, hi): return rt.inside(a, lo, hi)
def h_inside_none(a, hi): return rt.inside(a, None, hi)
def h_tie_share(x, y): return rt.tie_share(x > y, x == np.round(y))
def h_reduced_size(x): return rt.reduced_size(x, 1) * x
def h_size_of(x): return rt.size_of(x) * x
def h_basis_like(x): return rt.basis_like(x, 3) * x
def h_jacobian_rows(out, x): return rt.jacobian_rows(np.outer(out, x), out, x)
def h_jacobian_columns(out, x): return rt.jacobian_columns(np.outer(x, out), out, x)
def h_jacobian_rows_tree(out, x):
    rows = {"a": np.outer(out, x), "b": np.outer(out, x[:2]) * 2.0}
    return rt.jacobian_rows(rows, out, {"a": x, "b": x[:2]})["b"]
def h_jacobian_columns_tree(out, x):
    columns = (np.outer(x, out), np.outer(x, out[:1]) ** 2)
    return rt.jacobian_columns(columns, (out, out[:1]), x)[1]
def h_is_number(out, x): return x * rt.is_number(out) + x * rt.is_number(out[0])
def h_seed(x): return rt.seed(np.sum(x), "here:1 (h_seed)") * x
def h_copy(x): return rt.copy(x) + np.copy(x) + rt.astype(x, np.float32)
def h_zeros(x): return rt.zeros_like(x) + rt.tangent_zeros(x) + x
def h_lane_unbroadcast(g): return rt.lane_unbroadcast(g, (3,))
def h_lane_broadcast(t): return rt.lane_broadcast_to_shape(t, (2, 3))
def h_lane_expand(g): return rt.lane_expand_to(g, (4, 3), 0)
def h_lane_expand_adj(x): return rt.lane_expand_to_adj(x, -1, True)
def h_lane_as_grad(g, x): return rt.lane_as_grad(g, x, True, True, 2)
def h_lane_as_grad_unbatched(g, x): return rt.lane_as_grad(g, x, True, False, 2)
def h_lane_tree_vdot(a, b): return rt.lane_tree_vdot((a, 2.0 * a), (b, b * b))
def h_lane_tree_scale(x, s): return rt.lane_tree_scale([x, x], s)
def h_example_shape(x): return np.reshape(x, (2,) + rt.example_shape(x))
def h_lane_seed(x): return rt.lane_seed(np.sum(x, axis=1), "here:1 (h_lane_seed)") * x[:, 0]


HELPER_CASES = [
    (h_unbroadcast_rows, lambda r: (P.S(r, 4, 3), P.S(r, 3))),
    (h_unbroadcast_ones, lambda r: (P.S(r, 2, 4, 3), P.S(r, 1, 3))),
    (h_unbroadcast_scalar, lambda r: (P.S(r, 2, 3), P.S(r))),
    (h_expand_axis0, lambda r: (P.S(r, 3), P.S(r, 4, 3))),
    (h_expand_all, lambda r: (P.S(r), P.S(r, 2, 3))),
    (h_expand_keep, lambda r: (P.S(r, 4, 1), P.S(r, 4, 3))),
    (h_expand_neg, lambda r: (P.S(r, 3), P.S(r, 2, 3, 4))),
    (h_broadcast_like, lambda r: (P.S(r, 3), P.S(r, 4, 3))),
    (h_broadcast_like_same, lambda r: (P.S(r, 4, 3), P.S(r, 4, 3))),
    (h_as_grad, lambda r: (P.S(r, 3), P.S(r, 3))),
    (h_as_grad_tuple, lambda r: (P.S(r, 3), P.S(r, 3), P.S(r, 3))),
    (h_cast_like, lambda r: (P.S(r, 3), P.S(r, 3))),
    (h_add, lambda r: (P.S(r, 3), P.S(r, 3))),
    (h_tree_vdot, lambda r: (P.S(r, 2, 3), P.S(r, 2, 3))),
    (h_tree_scale, lambda r: (P.S(r, 2, 3), P.S(r, 2))),
    (h_inside, lambda r: (P.S(r, 4, 3), P.S(r, 3) - 0.5, P.S(r, 4, 1) + 0.5)),
    (h_inside_none, lambda r: (P.S(r, 4), P.S(r))),
    (h_tie_share, lambda r: (P.S(r, 4), P.S(r, 4))),
    (h_reduced_size, lambda r: (P.S(r, 2, 3),)),
    (h_size_of, lambda r: (P.S(r, 2, 3),)),
    (h_basis_like, lambda r: (P.S(r, 2, 3),)),
    (h_jacobian_rows, lambda r: (P.S(r, 2), P.S(r, 3))),
    (h_jacobian_columns, lambda r: (P.S(r, 2), P.S(r, 3))),
    (h_jacobian_rows_tree, lambda r: (P.S(r, 2), P.S(r, 3))),
    (h_jacobian_columns_tree, lambda r: (P.S(r, 2), P.S(r, 3))),
    (h_is_number, lambda r: (P.S(r, 2), P.S(r, 3))),
    (h_seed, lambda r: (P.S(r, 3),)),
    (h_copy, lambda r: (P.S(r, 3),)),
    (h_zeros, lambda r: (P.S(r, 3),)),
    (h_lane_unbroadcast, lambda r: (P.S(r, 2, 4, 3),)),
    (h_lane_broadcast, lambda r: (P.S(r, 4, 3),)),
    (h_lane_expand, lambda r: (P.S(r, 2, 3),)),
    (h_lane_expand_adj, lambda r: (P.S(r, 2, 3, 4),)),
    (h_lane_as_grad, lambda r: (P.S(r, 2, 3), P.S(r, 2, 3))),
    (h_lane_as_grad_unbatched, lambda r: (P.S(r, 2, 3), P.S(r, 3))),
    (h_lane_tree_vdot, lambda r: (P.S(r, 2, 3), P.S(r, 2, 3))),
    (h_lane_tree_scale, lambda r: (P.S(r, 2, 3), P.S(r, 2))),
    (h_example_shape, lambda r: (P.S(r, 2, 3, 4),)),
    (h_lane_seed, lambda r: (P.S(r, 2, 3),)),
]


@pytest.mark.parametrize("f,make", HELPER_CASES, ids=[f.__name__ for f, _ in HELPER_CASES])
def test_adjoint_helper_batching(f, make):
    run_case(f, make, f.__name__)


def test_pytree_helpers_with_partly_batched_containers():
    """A tuple holding one batched and one unbatched array: its gradient (rt.as_grad tells
    the leaves apart by rank) and the pytree inner products of custom_jvp rules."""
    rng = np.random.default_rng([SEED, 11])

    def f(p, x):
        a, b = p
        return np.sum(a * x) + np.sum(b ** 2) * np.sum(x)

    A, b, X = P.S(rng, NEX, 4), P.S(rng, 2), P.S(rng, NEX, 4)
    g = tp.grad(f)
    for in_axes, p in (((None, 0), (A[0], b)), (((0, None), 0), (A, b))):
        got = tp.vmap(g, in_axes=in_axes)(p, X)
        want = [g((A[k] if in_axes[0] else A[0], b), X[k]) for k in range(NEX)]
        _close(got, tree_map(lambda *ls: _stack(ls), *want), f"in_axes={in_axes}")

    def scaled(a, b, s):
        return rt.tree_scale((a, b), s)

    a, bb, s = P.S(rng, NEX, 3), P.S(rng, 2), P.S(rng, NEX)
    got = tp.vmap(scaled, in_axes=(0, None, 0))(a, bb, s)
    _close(got, tree_map(lambda *ls: _stack(ls), *[scaled(a[k], bb, s[k]) for k in range(NEX)]),
           "tree_scale of a partly batched tuple")


# ---------------------------------------------------------------- compositions

def _loss(w, x):
    return np.sum(np.tanh(w * x) ** 2) + np.mean(w) * np.sum(x) + \
        np.sum(np.clip(w, -0.5, 0.5) * x)


def test_vmap_of_vmap_of_grad():
    rng = np.random.default_rng([SEED, 12])
    g = tp.grad(_loss)
    X = P.S(rng, 2, NEX, 4)
    for inner, outer, W in (((None, 0), (None, 0), P.S(rng, 4)),
                            ((0, 0), (None, 0), P.S(rng, NEX, 4)),
                            ((None, 0), (0, 0), P.S(rng, 2, 4))):
        got = tp.vmap(tp.vmap(g, in_axes=inner), in_axes=outer)(W, X)

        def w_at(i, j):
            w = W[i] if outer[0] is not None else W
            return w[j] if inner[0] is not None else w
        want = _stack([_stack([g(w_at(i, j), X[i, j]) for j in range(NEX)]) for i in range(2)])
        _close(got, want, f"vmap(vmap(grad)) {inner} {outer}")


def test_grad_and_jvp_of_per_example_gradients():
    """Second derivatives through the batching helpers (their own rev and fwd rules)."""
    rng = np.random.default_rng([SEED, 13])
    g = tp.grad(_loss)
    per_example = tp.vmap(g, in_axes=(None, 0))
    W, X, v = P.S(rng, 4), P.S(rng, NEX, 4), P.S(rng, 4)

    def total(w, xs):
        return np.sum(per_example(w, xs) ** 2)

    def one(w, x):
        return np.sum(g(w, x) ** 2)

    _close(tp.grad(total)(W, X), sum(tp.grad(one)(W, X[k]) for k in range(NEX)),
           "grad(vmap(grad))")
    _, t = tp.jvp(lambda w: per_example(w, X), (W,), (v,))
    _close(t, _stack([tp.jvp(lambda w: g(w, X[k]), (W,), (v,))[1] for k in range(NEX)]),
           "jvp(vmap(grad))")


def test_per_example_jacobians():
    rng = np.random.default_rng([SEED, 14])

    def f(x):
        return np.sin(x) * x[0] + np.sum(x ** 2)

    def h(x):
        return np.sum(np.sin(x)) * x[1]

    X = P.S(rng, NEX, 3)
    for t in (tp.jacfwd(f), tp.jacrev(f), tp.hessian(h)):
        _against_loop(t, (X,), (0,), [(x,) for x in X], "vmap(jacobian)")


@tp.custom_jvp
def _softplus(x):
    return np.log1p(np.exp(x))


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return _softplus(x), t / (1.0 + np.exp(-x))


def test_per_example_gradient_through_custom_jvp():
    """Reverse mode of a custom_jvp function goes through rt.tree_vdot and rt.tree_scale."""
    rng = np.random.default_rng([SEED, 15])

    def f(w, x):
        return np.sum(_softplus(w * x) ** 2)

    g = tp.grad(f)
    W, X = P.S(rng, 3), P.S(rng, NEX, 3)
    got = tp.vmap(g, in_axes=(None, 0))(W, X)
    _close(got, _stack([g(W, x) for x in X]), "vmap(grad) through custom_jvp")


# ---------------------------------------------------------------- random numbers

def _normal(mu, sigma):
    return np.random.normal(mu, sigma)


def _normal_sized(mu):
    return np.random.normal(mu, 0.5, size=(2, 3))


def _uniform(lo):
    return np.random.uniform(lo, lo + 1.0, 4)


def _randint(hi):
    return np.random.randint(0, hi, size=5)


def _poisson(lam):
    return np.random.poisson(lam)


def _gamma(k):
    return np.random.gamma(k, 2.0, size=3)


def _binomial(p):
    return np.random.binomial(10, p)


def _exponential(scale):
    return np.random.exponential(scale, 2)


def _laplace(m):
    return np.random.laplace(m)


def _lognormal(m):
    return np.random.lognormal(m, 0.1)


def _logistic(m):
    return np.random.logistic(m, 1.0, 2)


def _standard_t(df):
    return np.random.standard_t(df, 3)


def _beta(a, b):
    return np.random.beta(a, b)


RANDOM_CASES = [
    (_normal, lambda r: (P.S(r, 4), r.uniform(0.5, 1.0, 4))),
    (_normal_sized, lambda r: (P.S(r, 3),)),
    (_uniform, lambda r: (P.S(r),)),
    (_randint, lambda r: (np.int64(r.integers(2, 50)),)),
    (_poisson, lambda r: (r.uniform(0.5, 20.0, 2),)),
    (_gamma, lambda r: (r.uniform(0.5, 5.0),)),
    (_binomial, lambda r: (r.uniform(0.1, 0.9, 3),)),
    (_exponential, lambda r: (r.uniform(0.1, 2.0),)),
    (_laplace, lambda r: (P.S(r, 2),)),
    (_lognormal, lambda r: (P.S(r),)),
    (_logistic, lambda r: (P.S(r),)),
    (_standard_t, lambda r: (r.uniform(1.0, 5.0),)),
    (_beta, lambda r: (r.uniform(0.5, 2.0), r.uniform(0.5, 2.0))),
]


@pytest.mark.parametrize("f,make", RANDOM_CASES, ids=[f.__name__ for f, _ in RANDOM_CASES])
def test_random_numbers_with_per_example_parameters(f, make):
    """One call draws every example's numbers, in the order a loop over examples draws
    them: with the same seed, vmap and the loop agree exactly (random in_axes). (With
    several random calls in one function, the batched draws come in another order.)"""
    rng = np.random.default_rng([SEED, zlib.crc32(f.__name__.encode())])
    args, in_axes, examples = _batch(make, rng)
    seed = int(rng.integers(1 << 30))
    np.random.seed(seed)
    got = tp.vmap(f, in_axes=in_axes)(*args)
    np.random.seed(seed)
    _close(got, _expected(f, examples, 0), f"vmap(in_axes={in_axes})")


def _choice(a):
    return np.random.choice(a, 4)


def _choice_unique(a):
    return np.random.choice(a, 4, replace=False)


def _choice_weighted(p):
    return np.random.choice(4, 50, p=p)


def _permutation(a):
    return np.random.permutation(a)


def _multivariate_normal(m, c):
    return np.random.multivariate_normal(m, c, 4000)


def test_random_choice_permutation_multivariate_normal():
    rng = np.random.default_rng([SEED, 16])
    np.random.seed(int(rng.integers(1 << 30)))
    pops = P.S(rng, NEX, 6)
    out = tp.vmap(_choice)(pops)
    assert out.shape == (NEX, 4) and all(np.isin(out[k], pops[k]).all() for k in range(NEX))
    out = tp.vmap(_choice_unique)(pops)
    assert all(len(set(o)) == 4 and np.isin(o, p).all() for o, p in zip(out, pops))
    probs = rng.uniform(0.1, 1.0, (NEX, 4))
    probs[:, 1] = 0.0
    probs /= probs.sum(axis=1, keepdims=True)
    out = tp.vmap(_choice_weighted)(probs)
    assert out.shape == (NEX, 50) and not (out == 1).any() and (out < 4).all()
    out = tp.vmap(_permutation)(pops)
    np.testing.assert_array_equal(np.sort(out, axis=1), np.sort(pops, axis=1))
    means = P.S(rng, NEX, 2)
    covs = np.stack([np.array([[1.0, 0.3], [0.3, 0.5]]) * s for s in (0.5, 1.0, 2.0)])
    out = tp.vmap(_multivariate_normal)(means, covs)
    assert out.shape == (NEX, 4000, 2)
    np.testing.assert_allclose(out.mean(axis=1), means, atol=0.15)
    np.testing.assert_allclose(np.stack([np.cov(o.T) for o in out]), covs, atol=0.25)


def _shuffled(x):
    y = x * 1.0
    np.random.shuffle(y)
    return y


def test_random_shuffle_per_example():
    x = np.random.default_rng([SEED, 17]).standard_normal((NEX, 5))
    out = tp.vmap(_shuffled)(x)
    # each example is shuffled within itself (not the batch axis)
    np.testing.assert_allclose(np.sort(out, axis=1), np.sort(x, axis=1))


def _noise(x):
    return x + np.random.normal()


def test_random_draws_without_batched_arguments_differ_per_example():
    x = np.random.default_rng([SEED, 18]).standard_normal((NEX, 2))
    out = tp.vmap(_noise)(x) - x
    assert not np.allclose(out, out[0]), "every example got the same draw"


# ---------------------------------------------------------------- what cannot be batched

def _sliced(x, n):
    s = slice(0, n)
    return np.sum(x[s])


def _sized(mu, n):
    return np.random.normal(mu, 1.0, size=n)


def _member(x, y):
    return x in y


@pytest.mark.parametrize("f,args,in_axes,match", [
    (_sliced, (np.arange(1.0, 7.0).reshape(2, 3), np.array([1, 2])), (0, 0), "slice"),
    (_sized, (0.5, np.array([2, 3])), (None, 0), "np.random.normal"),
    (_member, (1.5, np.arange(6.0).reshape(2, 3)), (None, 0), "`in`"),
], ids=["slice", "random_size", "in"])
def test_unbatchable_calls_raise_clearly(f, args, in_axes, match):
    with pytest.raises(tp.TransformError, match=match):
        tp.vmap(f, in_axes=in_axes)(*args)


def _keyed(d, x):
    if "w" in d and "v" not in d:
        return np.sum(d["w"] * x)
    return np.sum(x)


def test_key_tests_on_dicts_of_batched_values():
    rng = np.random.default_rng([SEED, 19])
    d, x = {"w": P.S(rng, NEX, 3)}, P.S(rng, NEX, 3)
    _against_loop(_keyed, (d, x), (0, 0), [({"w": d["w"][k]}, x[k]) for k in range(NEX)],
                  "`in` on a dict")
    _against_loop(tp.grad(_keyed), (d, x), (0, 0),
                  [({"w": d["w"][k]}, x[k]) for k in range(NEX)], "grad of `in` on a dict")


# =====================================================================================
# Linear algebra and subscripts: every batched/unbatched combination, per-example ranks
# that numpy treats specially (1-D matmul operands, vector right-hand sides of solve, norms
# with axis=None), and the compositions vmap(grad), grad(vmap) (vjp, jvp), vmap(vmap).
# =====================================================================================

def _la_matmul(a, b): return a @ b
def _la_dot(a, b): return np.dot(a, b)
def _la_solve(a, b): return np.linalg.solve(a, b)
def _la_tensordot_pairs(a, b): return np.tensordot(a, b, axes=([0], [1]))
def _la_inner(a, b): return np.inner(a, b)
def _la_outer(a, b): return np.outer(a, b)
def _la_vdot(a, b): return np.vdot(a, b)
def _la_einsum_implicit(a, b): return np.einsum("ij,jk", a, b)
def _la_einsum_ellipsis(a, b): return np.einsum("...ij,...jk->...ik", a, b)
def _la_einsum_ellipsis_implicit(a, b): return np.einsum("...j,j", a, b)
def _la_einsum_trace(a): return np.einsum("ii", a)
def _la_einsum_three(a, b, c): return np.einsum("ij,jk,k->i", a, b, c)
def _la_trace_axes(a): return np.trace(a, -1, 1, 0)
def _la_trace_negative(a): return np.trace(a, 1, -2, -1)
def _la_slogdet(a):
    sign, logdet = np.linalg.slogdet(a)
    return sign * logdet
def _la_norm(x): return np.linalg.norm(x)
def _la_norm_keep(x): return np.linalg.norm(x, keepdims=True)
def _la_norm_last(x): return np.linalg.norm(x, axis=-1, keepdims=True)
def _la_norm_fro(x): return np.linalg.norm(x, "fro", (0, 1))
def _la_norm_ord2(x): return np.linalg.norm(x, 2)
def _la_norm_ord1(x): return np.linalg.norm(x, 1)
def _la_norm_inf(x): return np.linalg.norm(x, np.inf, axis=-1)
def _la_rank(a): return np.linalg.matrix_rank(a)
def _la_rank_tol(a, t): return np.linalg.matrix_rank(a, tol=t)
def _la_cond(a): return np.linalg.cond(a)


def _loop(f, args, in_axes):
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
            for i in range(n)]
    return tree_map(lambda *ls: _stack(ls), *outs)


def _check_compositions(f, args, in_axes, what, grads=True, nested=True):
    """vmap(f), vmap(grad), vjp and jvp of vmap(f), and vmap(vmap(f)), each against loops."""
    _close(tp.vmap(f, in_axes=in_axes)(*args), _loop(f, args, in_axes), f"vmap {what}")
    floats = [k for k, a in enumerate(args) if is_float_leaf(a)]
    if grads:
        s = _scalar(f, len(args))
        for k in floats:
            g = tp.grad(s, argnums=k)
            _close(tp.vmap(g, in_axes=in_axes)(*args), _loop(g, args, in_axes),
                   f"vmap(grad argnums={k}) {what}")
        vf = tp.vmap(f, in_axes=in_axes)
        rng = np.random.default_rng([SEED, zlib.crc32(what.encode())])
        out, back = tp.vjp(vf, *args)
        ct = rng.standard_normal(np.shape(out))
        got = back(ct)
        n = np.shape(out)[0]
        for k in floats:
            parts = []
            for i in range(n):
                ex = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]
                parts.append(tp.vjp(f, *ex)[1](ct[i])[k])
            want = np.sum(parts, axis=0) if in_axes[k] is None else \
                np.moveaxis(_stack(parts), 0, in_axes[k])
            _close(got[k], want, f"vjp(vmap) argument {k} {what}")
        tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
        _, t_out = tp.jvp(vf, args, tangents)
        jv = _loop(lambda *a: tp.jvp(f, a[:len(args)], a[len(args):])[1], args + tangents,
                   tuple(in_axes) * 2)
        _close(t_out, jv, f"jvp(vmap) {what}")
    if nested:
        outer_args = tuple(_stack([a, 0.5 * a + 0.25]) if is_float_leaf(a) and np.ndim(a)
                           and (ax is not None or k == 0) else a
                           for k, (a, ax) in enumerate(zip(args, in_axes)))
        outer_axes = tuple(0 if o is not a else None for o, a in zip(outer_args, args))
        inner = tp.vmap(f, in_axes=in_axes)
        _close(tp.vmap(inner, in_axes=outer_axes)(*outer_args),
               _loop(inner, outer_args, outer_axes), f"vmap(vmap) {what}")


def _each_batching(f, shapes, rng, makers=None, **kw):
    """Every way of batching the arguments (at least one)."""
    import itertools
    makers = makers or [P.N] * len(shapes)
    for flags in itertools.product([False, True], repeat=len(shapes)):
        if not any(flags):
            continue
        args = tuple(m(rng, NEX, *s) if b else m(rng, *s)
                     for m, s, b in zip(makers, shapes, flags))
        axes = tuple(0 if b else None for b in flags)
        _check_compositions(f, args, axes, f"{f.__name__} {shapes} in_axes={axes}", **kw)


@pytest.mark.parametrize("sa,sb", [((4,), (4,)), ((4,), (4, 2)), ((4,), (2, 4, 2)),
                                   ((3, 4), (4,)), ((3, 4), (4, 2)), ((3, 4), (5, 1, 4, 2)),
                                   ((2, 3, 4), (4,)), ((1, 3, 4), (2, 4, 2)),
                                   ((2, 3, 4), (4, 2))])
def test_matmul_per_example_ranks(sa, sb):
    """np.matmul's 1-D operands (a row or a column, dropped from the result) and its
    broadcast stacks, read per example."""
    _each_batching(_la_matmul, [sa, sb], np.random.default_rng([SEED, 21]))


@pytest.mark.parametrize("sa,sb", [((), (3,)), ((4,), ()), ((4,), (4,)), ((3, 4), (4,)),
                                   ((4,), (4, 2)), ((2, 3, 4), (4,)), ((2, 3, 4), (2, 4, 5))])
def test_dot_per_example_ranks(sa, sb):
    _each_batching(_la_dot, [sa, sb], np.random.default_rng([SEED, 22]))


def _spd(r, *shape):
    a = r.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("sa,sb", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)),
                                   ((2, 3, 3), (2, 3, 2)), ((3, 3), (2, 3, 2)),
                                   ((2, 3, 3), (3, 2))])
def test_solve_vector_and_matrix_right_hand_sides(sa, sb):
    """numpy 2 reads `b` as a vector per example iff it is 1-D; with a stack of matrices
    and one matrix `b` (the last case), `b` is broadcast as a matrix."""
    _each_batching(_la_solve, [sa, sb], np.random.default_rng([SEED, 23]), [_spd, P.N])


EINSUM_LIKE = [
    (_la_einsum_implicit, [(3, 4), (4, 2)]),
    (_la_einsum_ellipsis, [(2, 3, 4), (4, 5)]),
    (_la_einsum_ellipsis, [(3, 4), (2, 4, 5)]),
    (_la_einsum_ellipsis_implicit, [(2, 3, 4), (4,)]),
    (_la_einsum_trace, [(3, 3)]),
    (_la_einsum_three, [(3, 4), (4, 2), (2,)]),
    (_la_tensordot_pairs, [(3, 4), (2, 3)]),
    (_la_inner, [(2, 3), (4, 3)]),
    (_la_inner, [(), (3,)]),
    (_la_outer, [(2, 2), (3,)]),
    (_la_vdot, [(2, 3), (3, 2)]),
    (_la_trace_axes, [(3, 4, 2)]),
    (_la_trace_negative, [(2, 3, 4)]),
    (_la_slogdet, [(2, 3, 3)]),
]


@pytest.mark.parametrize("f,shapes", EINSUM_LIKE,
                         ids=[f"{f.__name__}-{s}" for f, s in EINSUM_LIKE])
def test_einsum_shaped_products(f, shapes):
    makers = [_spd] if f is _la_slogdet else None
    _each_batching(f, shapes, np.random.default_rng([SEED, 24]), makers)


NORMS = [(_la_norm, (4,)), (_la_norm, (3, 4)), (_la_norm, (2, 3, 4)), (_la_norm, ()),
         (_la_norm_keep, (2, 3, 4)), (_la_norm_last, (3, 4)), (_la_norm_fro, (3, 4, 2)),
         (_la_norm_ord2, (4,))]


@pytest.mark.parametrize("f,shape", NORMS, ids=[f"{f.__name__}-{s}" for f, s in NORMS])
def test_norms_per_example(f, shape):
    """axis=None: the vector norm of a 1-D example, Frobenius of a 2-D one, the 2-norm of
    every element of a higher one."""
    _each_batching(f, [shape], np.random.default_rng([SEED, 25]))


def test_norms_ranks_and_conditions_without_derivatives():
    rng = np.random.default_rng([SEED, 26])
    for f, shapes, makers in [(_la_norm_ord1, [(4,)], None), (_la_norm_ord1, [(3, 4)], None),
                              (_la_norm_inf, [(3, 4)], None), (_la_rank, [(3, 3)], None),
                              (_la_rank, [(4,)], None), (_la_rank, [(2, 3, 3)], None),
                              (_la_cond, [(3, 3)], [_spd]),
                              (_la_rank_tol, [(2, 3, 3), ()],
                               [P.N, lambda r, *s: 3 * r.uniform(0.2, 1.0, s)])]:
        _each_batching(f, shapes, rng, makers, grads=False)
    # a rank-deficient example among full-rank ones
    a = P.N(rng, NEX, 3, 3)
    a[1, 2] = a[1, 0] + a[1, 1]
    _close(tp.vmap(_la_rank)(a), _loop(_la_rank, (a,), (0,)), "matrix_rank, one deficient")


def _ix_slices(x): return x[1:, ::2] * 2.0 + x[-1, -2]
def _ix_negative(x): return x[-1, :3] + x[:, -2]
def _ix_int(x, i): return x[i] * 2.0
def _ix_pair(x, i, j): return x[i, j] * 3.0
def _ix_list(x): return x[[0, 2], 1:3] + x[0, 1]
def _ix_ellipsis_newaxis(x): return x[..., 0] * 2.0 + x[None, :, 1]


def _ix_write(x, v):
    y = x * 1.0
    y[0] = v
    y[1:, 1] = np.sin(v[1:3])
    y[-1, -2] = v[0]
    return y * x


def _ix_write_at(x, i, v):
    y = x * 1.0
    y[i] = v
    y[i, 1] = v[0] * 2.0
    return y * x


def _ix_write_repeated(x):
    y = x * 1.0
    y[[0, 2, 0], 3] = x[2, :3] * x[1, :3]    # the last write wins
    return y * x


def _ix_sequences(x):
    t = tuple(x)
    items = list(x * 2.0)
    return t[0] * t[1] * items[2] + np.sin(t[2])


def _ix_params(w, x):
    ps = [w, w * 2.0]
    return ps[0] @ x + ps[1][0]


def test_subscripts_and_writes_under_vmap():
    """Indices the same for every example or not, on arrays batched or not: slices,
    negative indices, integer arrays, tuples of indices; writes `y[i] = v`; tuple(x) and
    list(x); a list of parameters."""
    rng = np.random.default_rng([SEED, 27])
    X, Xb = P.N(rng, 3, 4), P.N(rng, NEX, 3, 4)
    V, Vb = P.N(rng, 4), P.N(rng, NEX, 4)
    rows = np.array([2, 0, 1])
    back = np.array([-1, 0, -3])
    cols = np.array([3, -1, 0])
    picks = np.array([[0, 2], [1, 1], [2, 0]])
    cases = [
        (_ix_slices, (Xb,), (0,)), (_ix_slices, (np.moveaxis(Xb, 0, 2),), (2,)),
        (_ix_negative, (np.moveaxis(Xb, 0, -1),), (-1,)),
        (_ix_int, (Xb, rows), (0, 0)), (_ix_int, (X, rows), (None, 0)),
        (_ix_int, (Xb, 1), (0, None)), (_ix_int, (X, back), (None, 0)),
        (_ix_int, (Xb, picks), (0, 0)), (_ix_int, (X, picks), (None, 0)),
        (_ix_pair, (Xb, rows, cols), (0, 0, 0)), (_ix_pair, (X, rows, cols), (None, 0, 0)),
        (_ix_pair, (X, rows, 2), (None, 0, None)), (_ix_pair, (Xb, 1, cols), (0, None, 0)),
        (_ix_list, (Xb,), (0,)), (_ix_ellipsis_newaxis, (Xb,), (0,)),
        (_ix_write, (Xb, Vb), (0, 0)), (_ix_write, (X, Vb), (None, 0)),
        (_ix_write, (Xb, V), (0, None)),
        (_ix_write_at, (Xb, rows, Vb), (0, 0, 0)), (_ix_write_at, (X, back, V), (None, 0, None)),
        (_ix_write_at, (X, rows, Vb), (None, 0, 0)), (_ix_write_at, (Xb, 2, V), (0, None, None)),
        (_ix_write_repeated, (Xb,), (0,)),
        (_ix_sequences, (P.N(rng, NEX, 3),), (0,)),
        (_ix_sequences, (P.N(rng, 3, NEX, 2),), (1,)),
        (_ix_params, (P.N(rng, 2, 2), P.N(rng, NEX, 2)), (None, 0)),
        (_ix_params, (P.N(rng, NEX, 2, 2), P.N(rng, 2)), (0, None)),
    ]
    for f, args, in_axes in cases:
        _check_compositions(f, args, in_axes, f"{f.__name__} in_axes={in_axes}")


def _ix_mixed(x, i): return x[i, 1:3]
def _ix_mask(x): return np.sum(x[x > 0])


def test_per_example_index_followed_by_a_slice():
    rng = np.random.default_rng([SEED, 28])
    x, i = P.N(rng, NEX, 3, 4), np.array([2, 0, 1])
    got = tp.vmap(_ix_mixed)(x, i)
    _close(got, _loop(_ix_mixed, (x, i), (0, 0)), "x[i, 1:3]")


def _ix_mask_sorted(x): return np.sort(x[x > 0])[-1]


def test_boolean_mask_read_is_batched_and_its_ragged_uses_raise():
    # a sum over each example's selection (tests/test_vmap_ragged.py has the rest); a
    # result shaped by the selection has no batched form
    rng = np.random.default_rng([SEED, 29])
    x = P.N(rng, NEX, 3, 4)
    _close(tp.vmap(_ix_mask)(x), _loop(_ix_mask, (x,), (0,)), "np.sum(x[x > 0])")
    from transpile.errors import TransformError
    with pytest.raises(TransformError, match="ragged"):
        tp.vmap(_ix_mask_sorted)(x)


def _ix_inner_loss(x): return np.sum(np.sin(x[1:, ::2]) * x[0, 1]) + np.sum(x[[0, 2], 1:3] ** 3)
def _ix_pair_loss(p, x):
    a, b = p
    return np.sum(np.tanh(a @ x) * b[0])


_ix_inner_grad = tp.grad(_ix_inner_loss)
_ix_pair_grad = tp.grad(_ix_pair_loss)


def _ix_hvp(x, v): return np.sum(_ix_inner_grad(x) * v)
def _ix_pair_hvp(a, b, x):
    da, db = _ix_pair_grad((a, b), x)
    return np.sum(da * a) + np.sum(db ** 2)


def test_per_example_second_derivatives_through_subscripts():
    """vmap(grad(grad)): the adjoint helpers of subscripts and containers (rt.index_add,
    rt.part, rt.getitem) batched, with the indexed value batched or not."""
    rng = np.random.default_rng([SEED, 30])
    for f, args, in_axes in [
            (_ix_hvp, (P.N(rng, NEX, 3, 4), P.N(rng, 3, 4)), (0, None)),
            (_ix_hvp, (P.N(rng, 3, 4), P.N(rng, NEX, 3, 4)), (None, 0)),
            (_ix_pair_hvp, (P.N(rng, 2, 2), P.N(rng, 2), P.N(rng, NEX, 2)), (None, None, 0)),
            (_ix_pair_hvp, (P.N(rng, NEX, 2, 2), P.N(rng, 2), P.N(rng, 2)), (0, None, None))]:
        for k in range(len(args)):
            g = tp.grad(f, argnums=k)
            _close(tp.vmap(g, in_axes=in_axes)(*args), _loop(g, args, in_axes),
                   f"vmap(grad({f.__name__}, argnums={k})) in_axes={in_axes}")


# =====================================================================================
# Shape operations, reductions, scipy.special: what the primitive cases above leave out
# (nondifferentiable functions, per-example ranks numpy treats specially, arguments that
# make shapes, lists of arrays only some of which are batched), the compositions
# vmap(grad), grad(vmap) (vjp, jvp), vmap(vmap), and the rt.lane_* helpers themselves.
# =====================================================================================

def _sh_loop(f, args, in_axes):
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
            for i in range(n)]
    return tree_map(lambda *ls: _stack(ls), *outs)


def _sh_check(f, args, in_axes, what, grads=True):
    """vmap(f), vmap(vmap(f)), and for float results vmap(grad), vjp(vmap), jvp(vmap)."""
    _close(tp.vmap(f, in_axes=in_axes)(*args), _sh_loop(f, args, in_axes), f"vmap {what}")
    inner = tp.vmap(f, in_axes=in_axes)
    outer_args = tuple(_stack([a, np.flip(a, -1) if np.ndim(a) else a]) if ax is not None
                       or k == 0 else a for k, (a, ax) in enumerate(zip(args, in_axes)))
    outer_axes = tuple(0 if ax is not None or k == 0 else None
                       for k, ax in enumerate(in_axes))
    _close(tp.vmap(inner, in_axes=outer_axes)(*outer_args),
           _sh_loop(inner, outer_args, outer_axes), f"vmap(vmap) {what}")
    floats = [k for k, a in enumerate(args) if is_float_leaf(a)]
    if not grads or not floats:
        return
    s = _scalar(f, len(args))
    for k in floats:
        g = tp.grad(s, argnums=k)
        _close(tp.vmap(g, in_axes=in_axes)(*args), _sh_loop(g, args, in_axes),
               f"vmap(grad argnums={k}) {what}")
    rng = np.random.default_rng([SEED, zlib.crc32(what.encode())])
    out, back = tp.vjp(inner, *args)
    ct = rng.standard_normal(np.shape(out))
    got = back(ct)
    for k in floats:
        parts = [tp.vjp(f, *[a if ax is None else np.take(a, i, axis=ax)
                             for a, ax in zip(args, in_axes)])[1](ct[i])[k]
                 for i in range(np.shape(out)[0])]
        want = np.sum(parts, axis=0) if in_axes[k] is None else \
            np.moveaxis(_stack(parts), 0, in_axes[k])
        _close(got[k], want, f"vjp(vmap) argument {k} {what}")
    tangents = tuple(rng.standard_normal(np.shape(a)) if is_float_leaf(a) else
                     np.zeros(np.shape(a)) for a in args)
    _, t_out = tp.jvp(inner, args, tangents)
    want = _sh_loop(lambda *a: tp.jvp(f, a[:len(args)], a[len(args):])[1], args + tangents,
                    tuple(in_axes) * 2)
    _close(t_out, want, f"jvp(vmap) {what}")


def _sh_each(f, makers, rng, **kw):
    """Every way of batching the arguments (at least one), along axis 0."""
    import itertools
    for flags in itertools.product([False, True], repeat=len(makers)):
        if any(flags):
            args = tuple(_stack([m(rng) for _ in range(NEX)]) if b else m(rng)
                         for m, b in zip(makers, flags))
            axes = tuple(0 if b else None for b in flags)
            try:
                _sh_check(f, args, axes, f"{f.__name__} in_axes={axes}", **kw)
            except Exception:
                if f.__name__ in _PARTLY_BATCHED_LISTS and not _lanes_broadcast_lists():
                    pytest.xfail("vmap pass: Batching.lanes passes a list only some elements "
                                 "of which are batched to a helper's `outer` rule as it is "
                                 "(vmap of vmap of joining such lists)")
                raise


def _probe_lanes(x, y):
    return np.concatenate(rt.lane_flat([x, y], None), -1)


def _lanes_broadcast_lists():
    """Whether the pass broadcasts the unbatched elements of a partly batched list passed
    to a helper whose batching rule is `batch_lanes` (as templates do with `<param>_spec`)."""
    x, y = np.arange(12.0).reshape(2, 3, 2), np.arange(6.0).reshape(3, 2)
    try:
        got = tp.vmap(_probe_lanes, in_axes=(0, None))(x, y)
    except Exception:
        return False
    return np.shape(got) == (2, 3, 4) and np.allclose(got, np.stack([_probe_lanes(a, y)
                                                                     for a in x]))


def _mk(*shape):
    return lambda r: P.N(r, *shape)


# lists of arrays only some of which are batched, axis=None, per-example 1-D arrays
def _sh_concat_none(x, y): return np.concatenate((x, y), axis=None) * 2.0
def _sh_concat_neg(x, y): return np.concatenate([x, np.sin(y), x], axis=-1)
def _sh_stack3(x, y): return np.stack([x, y, x * y], axis=-2)
def _sh_vstack_1d(x, y): return np.vstack((x, y, x))
def _sh_hstack_3d(x, y): return np.hstack([x, y])
def _sh_hstack_0d(x, y): return np.hstack([x, y, x]) * 1.0
def _sh_list_named(x, y):
    xs = [x, y]
    ys = (y, x)
    return np.stack(xs) + np.concatenate(ys, 0)[:2] + sum(xs) + sum(ys, x)
def _sh_split_back(x, y):
    a, b = np.split(np.concatenate([x, y], 1), [2], axis=1)
    return a * np.sum(b, axis=1, keepdims=True)
def _sh_hsplit_1d(x): return np.hsplit(x, 2)[1] * np.vsplit(np.outer(x, x), 2)[0][:, 0]


JOIN_CASES = [
    (_sh_concat_none, [_mk(2, 3), _mk(4)]), (_sh_concat_neg, [_mk(2, 3), _mk(2, 1)]),
    (_sh_stack3, [_mk(2, 3), _mk(2, 3)]), (_sh_vstack_1d, [_mk(3), _mk(2, 3)]),
    (_sh_hstack_3d, [_mk(2, 3, 2), _mk(2, 1, 2)]), (_sh_hstack_0d, [_mk(), _mk(2)]),
    (_sh_list_named, [_mk(2, 3), _mk(2, 3)]), (_sh_split_back, [_mk(3, 2), _mk(3, 3)]),
    (_sh_hsplit_1d, [_mk(4)]),
]


# vmap of vmap of these joins lists only some elements of which carry the outer batch
_PARTLY_BATCHED_LISTS = {f.__name__ for f, _ in JOIN_CASES} | {
    "_sh_builtin_sum", "_hl_flat_list", "_hl_total", "_hl_sum_adj", "_hl_sum_adj_t"}


@pytest.mark.parametrize("f,makers", JOIN_CASES, ids=[c[0].__name__ for c in JOIN_CASES])
def test_joining_lists_partly_batched(f, makers):
    _sh_each(f, makers, np.random.default_rng([SEED, 40]))


# per-example axes and ranks
def _sh_transpose3(x): return np.transpose(x) + np.permute_dims(x, (2, 1, 0)) + x.T
def _sh_moveaxis_tuple(x): return np.moveaxis(x, (0, 1), (-1, 0)) ** 2
def _sh_flip_tuple(x): return np.flip(x, (0, 2)) * np.flipud(x)
def _sh_expand_neg(x): return np.expand_dims(x, -1) * np.expand_dims(x, (0, -2))
def _sh_squeeze_all(x): return np.squeeze(x) + np.squeeze(x, (0, 2)).sum()
def _sh_atleast(x): return np.atleast_3d(x) + np.atleast_1d(x)[..., None] * np.atleast_2d(x)
def _sh_reshape_neg(x): return np.reshape(x, (-1, 2)) * np.ravel(x)[:2]
def _sh_roll_none_neg(x): return np.roll(x, -2) + np.roll(x, 1, axis=-1)
def _sh_repeat_none(x): return np.repeat(x, [1, 2, 0, 1, 3, 1]) ** 2
def _sh_tile_rank(x): return np.tile(x, (2, 1, 1, 2)) * 1.5
def _sh_pad_modes(x): return np.pad(x, ((0, 1), (2, 0)), mode="edge") * np.pad(x, ((1, 0), (0, 2)))
def _sh_diag_vec(v): return np.diag(v, -1) + np.diag(np.outer(v, v), 1)[0]
def _sh_diff_axis(x): return np.diff(x, axis=0) * np.diff(x, n=2)[0, 0]
def _sh_sort_none(x): return np.sort(x, axis=None) + np.sort(x, 0).ravel()
def _sh_cumprod_none(x): return np.cumprod(x) + np.cumsum(x, axis=-1).ravel()
def _sh_broadcast(x): return np.broadcast_to(x, (2, 3, 4)) * np.full_like(x, 2.0)
def _sh_logsumexp_axes(x, b): return rt.logsumexp(x, axis=(0, 2), b=b)
def _sh_builtin_sum(x, y): return sum(x) + sum([x, y, 1.0], y)


AXES_CASES = [
    (_sh_transpose3, [_mk(2, 3, 4)]), (_sh_moveaxis_tuple, [_mk(2, 3, 4)]),
    (_sh_flip_tuple, [_mk(2, 3, 4)]), (_sh_expand_neg, [_mk(3, 2)]),
    (_sh_squeeze_all, [_mk(1, 3, 1)]), (_sh_atleast, [_mk(3)]), (_sh_reshape_neg, [_mk(3, 4)]),
    (_sh_roll_none_neg, [_mk(2, 3)]), (_sh_repeat_none, [_mk(2, 3)]), (_sh_tile_rank, [_mk(2, 3)]),
    (_sh_diag_vec, [_mk(3)]), (_sh_diff_axis, [_mk(3, 4)]),
    (_sh_sort_none, [lambda r: P.D(r, 2, 3)]), (_sh_cumprod_none, [lambda r: P.P(r, 2, 3)]),
    (_sh_broadcast, [_mk(3, 1)]), (_sh_builtin_sum, [_mk(3, 4), _mk(4)]),
] + ([(_sh_logsumexp_axes, [_mk(2, 3, 4), lambda r: P.P(r, 3, 1)])]
     if P.scipy is not None else [])


@pytest.mark.parametrize("f,makers", AXES_CASES, ids=[c[0].__name__ for c in AXES_CASES])
def test_shape_ops_per_example_axes(f, makers):
    _sh_each(f, makers, np.random.default_rng([SEED, 41]))


def test_squeeze_never_removes_the_batch_axis():
    x = np.random.default_rng([SEED, 42]).standard_normal((1, 1, 3, 1))
    got = tp.vmap(lambda x: np.squeeze(x) * 2.0)(x)
    assert got.shape == (1, 3)
    _close(got, np.squeeze(x[0])[None] * 2.0, "squeeze of a batch of one")


# values that differ between examples in arguments that do not make shapes
def _sh_full_fill(x, c): return np.full((2, 3), c) * x + np.full_like(x, c)
def _sh_pad_value(x, c): return np.pad(x, ((1, 0), (0, 2)), constant_values=c) ** 2
def _sh_eye_k(x, k): return np.eye(3, 4, k) * x + np.tri(3, 4, k) + np.tril(x, k) + np.triu(x, k)
def _sh_linspace(a, b): return np.linspace(a, b, 4) + np.linspace(a, b, 4, axis=-1).T


def _int_k(r):
    return np.asarray(r.integers(-1, 2))


def test_values_that_differ_between_examples():
    rng = np.random.default_rng([SEED, 43])
    _sh_each(_sh_full_fill, [_mk(2, 3), _mk()], rng)
    _sh_each(_sh_full_fill, [_mk(2, 3), _mk(3)], rng)
    _sh_each(_sh_pad_value, [_mk(2, 3), _mk()], rng)
    _sh_each(_sh_eye_k, [_mk(3, 4), _int_k], rng)
    _sh_each(_sh_linspace, [_mk(), _mk(2)], rng)


# nondifferentiable functions
def _sh_arg(x): return np.argmax(x) * 10 + np.argmin(x, axis=1), np.argmax(x, 0, keepdims=True)
def _sh_argsort(x): return np.argsort(x), np.argsort(x, axis=None), np.argsort(x, axis=0)
def _sh_truth(x):
    return (np.any(x > 0.5, axis=0), np.all(x > -1.0), np.count_nonzero(x > 0, axis=1),
            np.count_nonzero(x > 0))
def _sh_queries(x):
    return np.zeros(np.shape(x)) + x * np.ndim(x) + np.size(x) + np.size(x, 1) + len(x)
def _sh_search(a, v): return np.searchsorted(np.sort(a), v), np.searchsorted(a, v, "right",
                                                                             np.argsort(a))
def _sh_close(x, y):
    return np.isclose(x, y, atol=0.5), np.allclose(x, x + 1e-12), np.allclose(x, y), \
        np.array_equal(x, x), np.array_equal(x, y)
def _sh_casts(s, x): return int(s * 3.0) + x, bool(s > 0) * x, float(s) * x
def _sh_types(x):
    return np.isscalar(x[0, 0]) * 1.0 + isinstance(x, np.ndarray) + (type(x) is np.ndarray) \
        + np.iscomplexobj(x) + x


NONDIFF_CASES = [
    (_sh_arg, [_mk(3, 4)]), (_sh_argsort, [lambda r: P.D(r, 3, 4)]), (_sh_truth, [_mk(3, 4)]),
    (_sh_queries, [_mk(3, 4)]), (_sh_search, [_mk(5), _mk(2, 3)]), (_sh_close, [_mk(3), _mk(3)]),
    (_sh_casts, [_mk(), _mk(3)]), (_sh_types, [_mk(2, 3)]),
]


@pytest.mark.parametrize("f,makers", NONDIFF_CASES,
                         ids=[c[0].__name__ for c in NONDIFF_CASES])
def test_nondifferentiable_reductions_and_queries(f, makers):
    _sh_each(f, makers, np.random.default_rng([SEED, 44]), grads=False)


# what cannot be batched: the shape of the result would differ between examples
def _sh_arange(x, n): return x * np.sum(np.arange(n))
def _sh_zeros(x, n): return x + np.sum(np.zeros(n))
def _sh_reshape_n(x, n): return np.sum(np.reshape(x, (n, -1)), axis=1)
def _sh_roll_n(x, n): return np.roll(x, n)
def _sh_nonzero(x): return np.nonzero(x > 0)[0]
def _sh_unique(x): return np.unique(x)
def _sh_repeat_n(x, n): return np.repeat(x, n)


@pytest.mark.parametrize("f,batched_int", [
    (_sh_arange, True), (_sh_zeros, True), (_sh_reshape_n, True), (_sh_roll_n, True),
    (_sh_nonzero, False), (_sh_unique, False), (_sh_repeat_n, True)],
    ids=["arange", "zeros", "reshape", "roll", "nonzero", "unique", "repeat"])
def test_shapes_that_differ_between_examples_raise(f, batched_int):
    x = np.random.default_rng([SEED, 45]).standard_normal((NEX, 6))
    if batched_int:
        args, axes = (x, np.array([1, 2, 3])), (0, 0)
    else:
        args, axes = (x,), (0,)
    with pytest.raises(tp.TransformError, match="cannot be batched"):
        tp.vmap(f, in_axes=axes)(*args)


# the helpers that the batching rules emit, called directly (vmap of them is vmap of vmap)
def _hl_flat(x): return rt.lane_flat(x, None) * 2.0 + rt.lane_flat(x, 0)[:, :1, 0]
def _hl_flat_list(x, y): return np.concatenate(rt.lane_flat([x, y], None), -1)
def _hl_reshape_like(g, a): return rt.reshape_like(g, a) * a
def _hl_reshape_lanes(g, a): return rt.reshape_like(g, a, 1) + a
def _hl_promote(x): return rt.lane_promote(x, 3) * 1.5
def _hl_atleast(x): return rt.lane_atleast(x, 3) + rt.lane_atleast(x, 2)[..., None]
def _hl_diag_vec(v): return rt.lane_diag(v, 1) ** 2
def _hl_diag_mat(m): return rt.lane_diag(m, -1) ** 2
def _hl_diag_adj_vec(g, v): return rt.lane_diag_adj(g, v, 1) * 3.0
def _hl_diag_adj_mat(g, m): return rt.lane_diag_adj(g, m, -1) * 3.0
def _hl_total(x, y, s): return rt.lane_total([x, y], s)
def _hl_total_rows(x): return rt.lane_total(x, np.ones(2))
def _hl_sum_adj(g, a, b):
    da, db = rt.lane_sum_adj(g, [a, b])
    return da * 2.0 + np.sum(db)
def _hl_sum_adj_rows(g, xs): return rt.lane_sum_adj(g, xs) * xs
def _hl_sum_adj_t(d1, d2, g): return rt.lane_sum_adj_t([d1, d2], g)
def _hl_pad(x, c): return rt.lane_pad(x, ((1, 0), (0, 2)), "constant", c) ** 2
def _hl_pad_edge(x): return rt.lane_pad(x, 1, "edge") ** 2
def _hl_queries(x):
    return x * rt.lane_size(x) + rt.lane_shape_of(x)[0] + rt.lane_example(x)[0]


def _hl_nondiff(a, v):
    return rt.lane_searchsorted(np.sort(a, -1), v), rt.lane_array_equal(a, a)


HELPER_LANE_CASES = [
    (_hl_flat, [_mk(2, 3, 4)]), (_hl_flat_list, [_mk(2, 3, 2), _mk(2, 3)]),
    (_hl_reshape_like, [_mk(6), _mk(2, 3)]), (_hl_reshape_lanes, [_mk(2, 6), _mk(3, 2)]),
    (_hl_promote, [_mk(2, 4)]), (_hl_atleast, [_mk(2, 4)]), (_hl_diag_vec, [_mk(2, 3)]),
    (_hl_diag_mat, [_mk(2, 3, 4)]), (_hl_diag_adj_vec, [_mk(2, 4, 4), _mk(2, 3)]),
    (_hl_diag_adj_mat, [_mk(2, 2), _mk(2, 3, 4)]),
    (_hl_total, [_mk(2, 3, 4), _mk(2, 4), _mk(2)]), (_hl_total_rows, [_mk(2, 3, 4)]),
    (_hl_sum_adj, [_mk(2, 3, 4), _mk(2, 4), _mk(2, 3, 1)]),
    (_hl_sum_adj_rows, [_mk(2, 4), _mk(2, 3, 4)]),
    (_hl_sum_adj_t, [_mk(2, 4), _mk(2, 3, 1), _mk(2, 3, 4)]),
    (_hl_pad, [_mk(2, 2, 3), _mk()]),
    (_hl_queries, [_mk(2, 3)]),
]


@pytest.mark.parametrize("f,makers", HELPER_LANE_CASES,
                         ids=[c[0].__name__ for c in HELPER_LANE_CASES])
def test_shape_lane_helpers(f, makers):
    _sh_each(f, makers, np.random.default_rng([SEED, 46]))


def test_shape_lane_helpers_nondiff():
    _sh_each(_hl_nondiff, [_mk(2, 5), _mk(2, 3)], np.random.default_rng([SEED, 47]),
             grads=False)


def test_grad_of_vmap_of_shape_ops_second_order():
    """grad and jvp of vmapped shape code, to second order (rules of the helpers' rules)."""
    from transpile.test_util import check_grads
    rng = np.random.default_rng([SEED, 48])
    vf = tp.vmap(_sh_list_named, in_axes=(0, None))
    vs = tp.vmap(_sh_sort_none)
    vp = tp.vmap(_sh_pad_value)
    x, y = P.N(rng, NEX, 2, 3), P.N(rng, 2, 3)

    def loss(x, y):
        return np.sum(np.sin(vf(x, y))) + np.sum(vs(x) ** 2) + np.sum(vp(x, y[0, :NEX]))
    check_grads(loss, (x, y), order=2, modes=("fwd", "rev"))


def test_pad_modes_without_derivatives():
    """np.pad's other modes have no derivative rule (rt.unpad raises), but batch."""
    _sh_each(_sh_pad_modes, [_mk(2, 3)], np.random.default_rng([SEED, 49]), grads=False)
    _sh_each(_hl_pad_edge, [_mk(2, 2, 3)], np.random.default_rng([SEED, 50]), grads=False)
