"""tp.tree_util: JAX's pytree functions in plain code, and tree_map inside transformed code
(derivatives against finite differences, vmap against a loop, jit against the plain call)."""
import dataclasses
import operator
from typing import NamedTuple
from collections import namedtuple

import numpy as np
import pytest

import transpile as tp
from transpile import tree_util as tu
from transpile.test_util import check_grads

Layer = namedtuple("Layer", "w b")


def test_flatten_unflatten_and_structure():
    rng = np.random.default_rng()
    tree = {"b": [rng.standard_normal(2), None, (1.5, rng.standard_normal(3))],
            "a": Layer(rng.standard_normal((2, 2)), 0.5)}
    leaves, treedef = tu.tree_flatten(tree)
    # dict children in key order, None has no leaves
    assert leaves[0] is tree["a"].w and leaves[1] == 0.5 and leaves[2] is tree["b"][0]
    assert len(leaves) == treedef.num_leaves == 5
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert isinstance(rebuilt["a"], Layer) and rebuilt["b"][1] is None
    assert tu.tree_structure(rebuilt) == treedef
    assert repr(tu.tree_structure((1, [2, None]))) == "(*, [*, None])"
    with pytest.raises(ValueError, match="takes 5 leaves"):
        tu.tree_unflatten(treedef, leaves[:-1])
    assert tu.tree_leaves([1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple)) == [1, (2, 3)]


def test_tree_map_several_trees_and_prefixes():
    a = {"x": 1.0, "y": (2.0, 3.0)}
    b = {"x": 10.0, "y": (20.0, 30.0)}
    assert tp.tree_map(lambda u, v: u + v, a, b) == {"x": 11.0, "y": (22.0, 33.0)}
    with pytest.raises(ValueError, match="different structure"):
        tp.tree_map(lambda u, v: u + v, a, {"x": 1.0, "y": [2.0, 3.0]})
    counts = tp.tree_map(lambda t: len(t), [(1, 2), (3,)], is_leaf=lambda t: isinstance(t, tuple))
    assert counts == [2, 1]


def test_registered_classes_and_dataclasses():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Params:
        w: np.ndarray
        b: np.ndarray

    class Box:
        def __init__(self, value, label):
            self.value, self.label = value, label

    tu.register_pytree_node(Box, lambda box: ([box.value], box.label),
                            lambda label, children: Box(children[0], label))
    p = Params(np.ones(2), np.zeros(2))
    doubled = tp.tree_map(lambda x: 2 * x, {"p": p, "box": Box(np.arange(3.0), "tag")})
    assert isinstance(doubled["p"], Params) and np.array_equal(doubled["p"].w, [2, 2])
    assert doubled["box"].label == "tag" and np.array_equal(doubled["box"].value, [0, 2, 4])

    @dataclasses.dataclass
    class Config:
        lr: float
        name: str
    tu.register_dataclass(Config, data_fields=["lr"], meta_fields=["name"])
    leaves, treedef = tu.tree_flatten(Config(0.1, "sgd"))
    assert leaves == [0.1] and tu.tree_unflatten(treedef, [0.2]) == Config(0.2, "sgd")


def test_tree_transpose():
    outer = tu.tree_structure([0, 0, 0])
    inner = tu.tree_structure((0, 0))
    got = tu.tree_transpose(outer, inner, [(1, 2), (3, 4), (5, 6)])
    assert got == ([1, 3, 5], [2, 4, 6])


def sgd_loss(params, x):
    """A loss that takes one SGD step on its own parameters first (a meta-learning shape),
    with tree_map over a dict of a namedtuple and a list."""
    grads = tp.tree_map(lambda p: np.tanh(p), params)
    stepped = tp.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    w, b = stepped["layer"]
    scale = stepped["scale"][0]
    h = tp.tree_map(lambda p, g, s: p * g + s, w, w, 0.5 * w)
    return np.sum(np.tanh(x @ h + b) * scale)


def test_tree_map_in_transformed_code():
    rng = np.random.default_rng()
    params = {"layer": Layer(rng.standard_normal((3, 2)), rng.standard_normal(2)),
              "scale": [rng.standard_normal(2)]}
    x = rng.standard_normal((4, 3))
    check_grads(sgd_loss, (params, x), order=2, modes=("rev", "fwd"))
    g = tp.grad(sgd_loss)(params, x)
    assert isinstance(g["layer"], Layer)              # grad returns the same classes
    xs = rng.standard_normal((3, 4, 3))
    assert np.allclose(tp.vmap(sgd_loss, in_axes=(None, 0))(params, xs),
                       [sgd_loss(params, b) for b in xs])
    jitted = tp.jit(sgd_loss)
    for _ in range(3):
        assert np.allclose(jitted(params, x), sgd_loss(params, x))


# ---------------------------------------------------------------- flatten in transformed code

def _clip_by_norm(params, limit):
    """What DP-SGD does to each example's gradient: flatten, scale, unflatten."""
    leaves, treedef = tp.tree_flatten(params)
    norm = np.sqrt(sum([np.sum(leaf * leaf) for leaf in leaves]))
    scaled = [leaf * (limit / np.maximum(norm, limit)) for leaf in leaves]
    return tp.tree_unflatten(treedef, scaled)


def _loss(params, x):
    p = _clip_by_norm(params, 1.5)
    return np.sum(np.sin(p["w"] @ x)) + np.sum(p["b"][0] ** 2) + np.sum(p["b"][1] * x[:2])


def _params(rng):
    return {"w": rng.standard_normal((3, 4)),
            "b": (rng.standard_normal(3), rng.standard_normal(2))}


def test_flatten_and_unflatten_under_grad_jit_and_vmap():
    rng = np.random.default_rng()
    params, x = _params(rng), rng.standard_normal(4)
    check_grads(_loss, (params, x), order=1, modes=("rev", "fwd"))
    assert np.isclose(tp.jit(_loss)(params, x), _loss(params, x), rtol=1e-13)
    xs = rng.standard_normal((5, 4))
    per_example = tp.vmap(tp.grad(_loss), in_axes=(None, 0))(params, xs)
    for i in range(5):
        want = tp.grad(_loss)(params, xs[i])
        for a, b in zip(tp.tree_leaves(per_example), tp.tree_leaves(want)):
            np.testing.assert_allclose(a[i], b, rtol=1e-10, atol=1e-12)
    clipped = tp.vmap(_clip_by_norm, in_axes=(0, None))(
        tp.tree_map(lambda p: np.stack([p, 3 * p]), params), 1.5)
    for i, factor in enumerate((1.0, 3.0)):
        want = _clip_by_norm(tp.tree_map(lambda p: factor * p, params), 1.5)
        for a, b in zip(tp.tree_leaves(clipped), tp.tree_leaves(want)):
            np.testing.assert_allclose(a[i], b, rtol=1e-12)


def test_a_structure_made_in_plain_code_is_used_in_transformed_code():
    rng = np.random.default_rng()
    params = _params(rng)
    treedef = tp.tree_structure(params)

    def rebuild(leaves):
        return tp.tree_unflatten(treedef, [2.0 * leaf for leaf in leaves])
    got = tp.jit(rebuild)(tp.tree_leaves(params))
    assert tp.tree_structure(got) == treedef
    for a, b in zip(tp.tree_leaves(got), tp.tree_leaves(params)):
        np.testing.assert_array_equal(a, 2.0 * b)

    @dataclasses.dataclass
    class Pair:
        a: np.ndarray
        b: np.ndarray
    tu.register_dataclass(Pair)
    pair_def = tp.tree_structure(Pair(np.ones(2), np.ones(2)))

    def rebuild_pair(leaves):
        return tp.tree_unflatten(pair_def, leaves)
    with pytest.raises(tp.TransformError, match="registered class Pair"):
        tp.jit(rebuild_pair)([np.ones(2), np.ones(2)])


# ---------------------------------------------------------------- namedtuple fields by name

Layer = namedtuple("Layer", ["w", "b"])


def _layer_loss(p, x):
    h = np.tanh(x @ p.w + p.b)
    return np.sum(h * h) + 0.1 * np.sum(p.w)


def test_namedtuple_fields_read_by_name_under_every_transformation():
    rng = np.random.default_rng()
    p = Layer(rng.standard_normal((3, 2)), rng.standard_normal(2))
    x = rng.standard_normal((4, 3))
    g = tp.grad(_layer_loss)(p, x)
    assert isinstance(g, Layer) and g.w.shape == (3, 2)
    check_grads(_layer_loss, (p, x), order=2, modes=("rev", "fwd"))
    assert np.isclose(tp.jit(_layer_loss)(p, x), _layer_loss(p, x), rtol=1e-13)
    xs = rng.standard_normal((5, 4, 3))
    per_example = tp.vmap(tp.grad(_layer_loss), in_axes=(None, 0))(p, xs)
    for i in range(5):
        np.testing.assert_allclose(per_example.w[i], tp.grad(_layer_loss)(p, xs[i]).w,
                                   rtol=1e-12)
    batch = Layer(rng.standard_normal((5, 3, 2)), rng.standard_normal((5, 2)))
    np.testing.assert_allclose(tp.vmap(_layer_loss, in_axes=(0, None))(batch, x),
                               [_layer_loss(Layer(batch.w[i], batch.b[i]), x)
                                for i in range(5)], rtol=1e-12)


def test_other_attribute_reads_are_refused():
    def byte_count(a):          # (.real and .imag are np.real and np.imag)
        return np.sum(a) * a.nbytes
    with pytest.raises(tp.TransformError, match="namedtuples"):
        tp.grad(byte_count)(np.ones(3))


# ---------------------------------------------------------------- dataclasses as arguments

@dataclasses.dataclass
class Dense:
    w: np.ndarray
    b: np.ndarray


tu.register_dataclass(Dense)


def _dense_loss(layer, x):
    return np.sum(np.tanh(x @ layer.w + layer.b) ** 2)


def test_registered_dataclasses_are_arguments_and_results_of_every_transformation():
    rng = np.random.default_rng()
    layer = Dense(rng.standard_normal((3, 2)), rng.standard_normal(2))
    x = rng.standard_normal((4, 3))
    as_tuple = Layer(layer.w, layer.b)          # the same numbers as a namedtuple
    want = tp.grad(_layer_loss_plain)(as_tuple, x)
    for g in (tp.grad(_dense_loss)(layer, x), tp.jit(tp.grad(_dense_loss))(layer, x),
              tp.vjp(_dense_loss, layer, x)[1](1.0)[0]):
        assert isinstance(g, Dense)
        np.testing.assert_allclose(g.w, want.w, rtol=1e-12)
        np.testing.assert_allclose(g.b, want.b, rtol=1e-12)
    direction = Dense(rng.standard_normal((3, 2)), rng.standard_normal(2))
    _, slope = tp.jvp(_dense_loss, (layer, x), (direction, np.zeros_like(x)))
    assert np.isclose(slope, np.sum(want.w * direction.w) + np.sum(want.b * direction.b))
    xs = rng.standard_normal((5, 4, 3))
    per_example = tp.vmap(tp.grad(_dense_loss), in_axes=(None, 0))(layer, xs)
    assert isinstance(per_example, Dense) and per_example.w.shape == (5, 3, 2)
    np.testing.assert_allclose(per_example.b[2], tp.grad(_dense_loss)(layer, xs[2]).b,
                               rtol=1e-12)


def _layer_loss_plain(p, x):
    return np.sum(np.tanh(x @ p.w + p.b) ** 2)


def test_an_ordered_dict_keeps_its_order_and_type():
    """JAX flattens an OrderedDict in insertion order (a dict by key) and rebuilds an
    OrderedDict; transpile sorted its keys and gave dicts back."""
    import collections
    from transpile.flatten_util import ravel_pytree
    rng = np.random.default_rng(59)
    od = collections.OrderedDict([("b", rng.normal(size=2)), ("a", 0.7)])
    assert tp.tree_util.tree_leaves(od)[1] == 0.7
    assert type(tp.tree_util.tree_map(lambda x: x * 2, od)) is collections.OrderedDict
    flat, unravel = ravel_pytree(od)
    np.testing.assert_allclose(flat, np.append(od["b"], 0.7))
    assert list(unravel(flat)) == ["b", "a"]

    def f(p):
        return np.sum(p["b"] * 3.0) + p["a"] ** 2
    for grad in (tp.grad(f), tp.jit(tp.grad(f))):
        g = grad(od)
        assert type(g) is collections.OrderedDict and list(g) == ["b", "a"]
        np.testing.assert_allclose(g["b"], [3.0, 3.0])
        assert np.isclose(g["a"], 1.4)
    axes = collections.OrderedDict([("b", 0), ("a", None)])     # (a NameError before)
    batch = collections.OrderedDict([("b", rng.normal(size=(3, 2))), ("a", 0.7)])
    np.testing.assert_allclose(tp.vmap(f, in_axes=(axes,))(batch),
                               [f({"b": b, "a": 0.7}) for b in batch["b"]])


def test_a_namedtuple_of_in_axes():
    import collections
    point = collections.namedtuple("point", ["x", "y"])

    def f(p):
        return p.x * 2.0 + p.y
    xs = np.random.default_rng(61).normal(size=3)
    np.testing.assert_allclose(tp.vmap(f, in_axes=(point(0, None),))(point(xs, 1.5)),
                               xs * 2.0 + 1.5)


class _Holder:
    """Registered with flatten/unflatten functions, as JAX's pytree docs do."""

    def __init__(self, a, _scale, name="held"):
        self.a = a
        self._scale = _scale
        self.name = name

    def scaled(self):
        return self.a * self._scale


tu.register_pytree_node(_Holder, lambda t: ((t.a, t._scale), t.name),
                        lambda name, children: _Holder(*children, name=name))


def _holder_loss(t, k):
    return np.sum(np.sin(t.scaled()) * k) + (1.0 if t.name == "held" else 2.0)


def test_a_class_registered_with_flatten_functions_given_to_transformations():
    """vmap took it for one leaf ("in_axes=0 is out of range ... shape ()"), jvp crashed;
    then it was refused. Its stand-in is a tuple of its children named by the attributes
    holding them (an underscore name included), its other attributes and methods on the
    stand-in's class, and results come back through its unflatten function."""
    rng = np.random.default_rng()
    t, k = _Holder(rng.normal(size=3), rng.normal(size=3)), rng.normal()
    g = tp.grad(_holder_loss)(t, k)
    assert type(g) is _Holder and g.name == "held"
    np.testing.assert_allclose(g.a, np.cos(t.a * t._scale) * k * t._scale, rtol=1e-14)
    np.testing.assert_allclose(g._scale, np.cos(t.a * t._scale) * k * t.a, rtol=1e-14)
    check_grads(_holder_loss, (t, k), order=1, modes=("fwd", "rev"))
    assert np.isclose(tp.jit(_holder_loss)(t, k), _holder_loss(t, k), rtol=1e-14)
    other = _Holder(t.a, t._scale, name="other")          # other static data: new code
    assert np.isclose(tp.jit(_holder_loss)(other, k), _holder_loss(other, k), rtol=1e-14)
    batch = _Holder(rng.normal(size=(4, 3)), rng.normal(size=(4, 3)))

    def scaled_sines(t):
        return np.sum(np.sin(t.scaled()))
    np.testing.assert_allclose(
        tp.vmap(scaled_sines)(batch),
        [scaled_sines(_Holder(a, s)) for a, s in zip(batch.a, batch._scale)], rtol=1e-14)
    out = tp.vmap(lambda t: t)(batch)
    assert type(out) is _Holder and np.array_equal(out.a, batch.a)
    # its static data (here the name) is read where no batching needs it only
    with pytest.raises(tp.TransformError, match="'.name' is read from a value of type"):
        tp.vmap(_holder_loss, in_axes=(0, None))(batch, k)


def test_a_registered_class_whose_children_are_not_its_attributes_is_refused_clearly():
    class Computed:
        def __init__(self, a):
            self.a = a
    tu.register_pytree_node(Computed, lambda t: ((t.a * 1.0,), None),
                            lambda _, ch: Computed(*ch))
    for call in (lambda: tp.vmap(lambda t: np.sin(t.a))(Computed(np.ones((2, 3)))),
                 lambda: tp.grad(lambda t: np.sum(t.a))(Computed(np.ones(3)))):
        with pytest.raises(tp.TransformError, match="not each held by one of its attributes"):
            call()


@tu.register_dataclass
@dataclasses.dataclass
class AffineLayer:
    w: np.ndarray
    b: float = 0.5


def _affine_loss(p, x):
    return np.sum(np.tanh(x @ p.w + p.b) ** 2)


def _affine_step(p, x):
    g = tp.grad(_affine_loss)(p, x)
    return AffineLayer(p.w - 0.1 * g.w, b=p.b - 0.1 * g.b)


def _affine_of_w(w, x):
    return _affine_loss(AffineLayer(w), x)          # b left to its default


def test_a_registered_dataclass_made_in_transformed_code():
    """It was refused ("AffineLayer has no rule in transpile's primitive table")."""
    rng = np.random.default_rng(71)
    p, x = AffineLayer(rng.normal(size=3), 0.2), rng.normal(size=(4, 3))
    g = tp.grad(_affine_loss)(p, x)
    for step in (_affine_step, tp.jit(_affine_step)):
        got = step(p, x)
        assert type(got) is AffineLayer
        np.testing.assert_allclose(got.w, p.w - 0.1 * g.w, rtol=1e-12)
    check_grads(_affine_of_w, (p.w, x), order=2)
    out, tangent = tp.jvp(lambda w: AffineLayer(w * 2.0, np.sum(w)), (p.w,), (np.ones(3),))
    assert type(out) is AffineLayer and type(tangent) is AffineLayer
    assert np.isclose(tangent.b, 3.0)


Pair = namedtuple("Pair", "w b")


@dataclasses.dataclass
class _Scaled:
    value: float
    scale: float


tu.register_dataclass(_Scaled, data_fields=["value"], meta_fields=["scale"])


class _Opaque:
    def __init__(self, a, b):
        self.a, self.b = a, b


tu.register_pytree_node(_Opaque, lambda o: ((o.a, o.b), None), lambda aux, ch: _Opaque(*ch))


class _Named:
    def __init__(self, left, right):
        self.left, self.right = left, right


tu.register_pytree_with_keys(
    _Named, lambda n: ([(tu.GetAttrKey("left"), n.left), (tu.GetAttrKey("right"), n.right)],
                       None), lambda aux, ch: _Named(*ch))


def _path_tree(rng):
    from collections import OrderedDict
    return {"b": [rng.normal(), (rng.normal(size=3), None)], "a": Pair(rng.normal(), rng.normal()),
            "c": OrderedDict([("z", rng.normal()), ("y", rng.normal())]),
            "d": _Scaled(rng.normal(), 2.0), "e": _Opaque(rng.normal(), rng.normal()),
            "f": _Named(rng.normal(), rng.normal())}


def test_paths_name_every_leaf_as_jax_does():
    rng = np.random.default_rng()
    tree = _path_tree(rng)
    pairs, treedef = tu.tree_flatten_with_path(tree)
    assert treedef == tu.tree_structure(tree)
    leaves = tu.tree_leaves(tree)
    assert len(pairs) == len(leaves) and all(p[1] is x for p, x in zip(pairs, leaves))
    assert [tu.keystr(p) for p, _ in pairs] == [
        "['a'].w", "['a'].b", "['b'][0]", "['b'][1][0]", "['c']['z']", "['c']['y']",
        "['d'].value", "['e'][<flat index 0>]", "['e'][<flat index 1>]", "['f'].left",
        "['f'].right"]
    path = pairs[3][0]
    assert path == (tu.DictKey("b"), tu.SequenceKey(1), tu.SequenceKey(0))
    assert tu.keystr(path, simple=True, separator="/") == "b/1/0"
    assert tu.tree_flatten_with_path(None) == ([], tu.tree_structure(None))
    assert tu.tree_leaves_with_path(2.5) == [((), 2.5)]
    # is_leaf stops the walk: the list is one leaf at its path
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(
        tree, is_leaf=lambda x: isinstance(x, list))][2] == "['b']"


def test_tree_map_with_path_gives_each_leaf_its_path():
    rng = np.random.default_rng()
    a, b = rng.normal(size=4), rng.normal(size=4)
    tree = {"w": [a[0], a[1]], "v": (a[2], a[3])}
    other = {"w": [b[0], b[1]], "v": (b[2], b[3])}
    named = tu.tree_map_with_path(lambda p, x: (tu.keystr(p), x), tree)
    assert named == {"w": [("['w'][0]", a[0]), ("['w'][1]", a[1])],
                     "v": (("['v'][0]", a[2]), ("['v'][1]", a[3]))}
    # weight decay on the leaves whose path says "w", as optimizers choose by name
    decayed = tu.tree_map_with_path(
        lambda p, x, y: x - 0.1 * y if p[0] == tu.DictKey("w") else x, tree, other)
    assert decayed["w"] == [a[0] - 0.1 * b[0], a[1] - 0.1 * b[1]]
    assert decayed["v"] == (a[2], a[3])


def test_paths_match_jax():
    jtu = pytest.importorskip("jax.tree_util")
    rng = np.random.default_rng()
    tree = {"b": [rng.normal(), (rng.normal(), None)], "a": Pair(rng.normal(), rng.normal())}
    ours = [(tu.keystr(p), x) for p, x in tu.tree_leaves_with_path(tree)]
    theirs = [(jtu.keystr(p), x) for p, x in jtu.tree_leaves_with_path(tree)]
    assert ours == theirs


def test_paths_are_refused_in_transformed_code():
    def loss(params):
        total = 0.0
        for path, leaf in tu.tree_leaves_with_path(params):
            total = total + np.sum(leaf ** 2)
        return total

    with pytest.raises(tp.TransformError, match="tree_leaves_with_path runs in plain code "
                       "only") as info:
        tp.grad(loss)({"a": np.ones(2)})
    assert "test_tree_util.py" in str(info.value)


class _Params(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def _doubled_params(p):
    return tp.tree_util.tree_map(lambda a: a * 2.0, p)


def test_namedtuples_rebuilt_by_vmap_and_device_put():
    """Runtime helpers rebuilt tuples with type(x)(generator), which a namedtuple's
    constructor takes as one argument: vmap of a tree_map over one raised TypeError
    (JAX's stateful-computations page vmaps an `update` of its Params so)."""
    rng = np.random.default_rng()
    p = _Params(rng.normal(size=(3, 2)), rng.normal(size=3))
    out = tp.vmap(_doubled_params)(p)
    assert isinstance(out, _Params)
    np.testing.assert_array_equal(out.w, 2.0 * p.w)
    np.testing.assert_array_equal(out.b, 2.0 * p.b)
    per_example = tp.vmap(tp.grad(lambda p: np.sum(_doubled_params(p).w ** 2)))(p)
    assert isinstance(per_example, _Params)
    np.testing.assert_allclose(per_example.w, 8.0 * p.w, rtol=1e-14)
    np.testing.assert_array_equal(per_example.b, 0.0 * p.b)
    moved = tp.device_put(p)
    assert isinstance(moved, _Params) and np.array_equal(moved.w, p.w)


class _Shape:
    def area(self):
        return self.height * self.width


@tu.register_dataclass
@dataclasses.dataclass
class _Box(_Shape):
    height: np.ndarray
    width: np.ndarray

    def grown(self, by):
        return _Box(self.height + by, self.width * np.exp(by))

    def volume(self, depth):
        return self.area() * depth

    @staticmethod
    def unit():
        return 1.0


def test_methods_of_a_registered_dataclass():
    """Its namedtuple stand-in lacked the class's methods: 'Box has no method 'volume''
    (Myia's test_dataclass and models passed as the differentiated argument)."""
    rng = np.random.default_rng()
    box = _Box(rng.uniform(1, 2), rng.uniform(1, 2))
    d = rng.uniform(1, 2)

    def loss(b, d):
        grown = b.grown(0.3)
        return b.volume(d) + np.sin(grown.height * grown.width) * b.unit()

    check_grads(loss, (box, d), order=1, modes=("fwd", "rev"))
    g = tp.grad(loss)(box, d)
    assert type(g) is _Box
    h, w = box.height, box.width
    e = np.exp(0.3)
    inner = np.cos((h + 0.3) * w * e)
    np.testing.assert_allclose(g.height, w * d + inner * w * e, rtol=1e-12)
    np.testing.assert_allclose(g.width, h * d + inner * (h + 0.3) * e, rtol=1e-12)
    out, pullback = tp.vjp(loss, box, d)           # (vjp did not ask for the argument's type)
    np.testing.assert_allclose(pullback(1.0)[0].height, g.height, rtol=1e-14)
    assert np.isclose(tp.jit(loss)(box, d), loss(box, d), rtol=1e-14)
    # a transformation inside transformed code does not know its arguments' types: a
    # clear error, not a KeyError from the API layer
    with pytest.raises(tp.TransformError, match="calls 'b' or a method of it"):
        tp.jvp(lambda box, d: tp.jvp(loss, (box, d), (box, 1.0))[1], (box, d), (box, 1.0))
    boxes = _Box(rng.uniform(1, 2, 4), rng.uniform(1, 2, 4))
    np.testing.assert_allclose(tp.vmap(loss, in_axes=(0, None))(boxes, d),
                               [loss(_Box(a, b), d) for a, b in zip(boxes.height, boxes.width)],
                               rtol=1e-14)


def _none_aware_loss(p):
    scale = 1.0 if p["b"] is None else 2.0
    return np.sum(p["w"] ** 2) * scale + p["pair"][0] * 3.0


def test_none_in_a_differentiated_tree_is_a_node_without_leaves():
    """As in JAX: its gradient is None (it was refused as a leaf of type NoneType)."""
    rng = np.random.default_rng()
    p = {"w": rng.normal(size=3), "b": None, "pair": (rng.normal(), None)}
    for grad in (tp.grad(_none_aware_loss), tp.jit(tp.grad(_none_aware_loss))):
        g = grad(p)
        assert g["b"] is None and g["pair"][1] is None
        np.testing.assert_allclose(g["w"], 2.0 * p["w"], rtol=1e-15)
        assert g["pair"][0] == 3.0
    ws = rng.normal(size=(4, 3))
    batched = tp.vmap(tp.grad(_none_aware_loss),
                      in_axes=({"w": 0, "b": None, "pair": None},))(dict(p, w=ws))
    np.testing.assert_allclose(batched["w"], 2.0 * ws, rtol=1e-15)
    assert batched["b"] is None


def _reduced_loss(p):
    squares = tp.tree.map(lambda a: np.sum(a ** 2), p)
    total = tp.tree.reduce(operator.add, squares, 0.0)
    return total + tp.tree.reduce(lambda a, b: a * b, tp.tree.leaves(squares))


def test_jax_tree_short_names_and_tree_reduce():
    """`jax.tree.map` and friends (JAX's preferred spelling) are tp.tree's; tree_reduce and
    tree_all are new, in plain and transformed code."""
    assert tp.tree.map is tu.tree_map and tp.tree.unflatten is tu.tree_unflatten
    rng = np.random.default_rng()
    p = {"w": rng.normal(size=3), "b": (rng.normal(), rng.normal(size=2))}
    sq = [np.sum(p["b"][0] ** 2), np.sum(p["b"][1] ** 2), np.sum(p["w"] ** 2)]
    assert np.isclose(_reduced_loss(p), sum(sq) + np.prod(sq), rtol=1e-14)
    assert np.isclose(tp.jit(_reduced_loss)(p), _reduced_loss(p), rtol=1e-14)
    check_grads(_reduced_loss, (p,), order=2, modes=("fwd", "rev"))
    assert tu.tree_reduce(operator.add, [1, (2, 3)]) == 6
    assert tp.tree.all([True, (1, 2.0)]) and not tp.tree.all({"a": 0, "b": 1})
