"""tp.tree_util: pytrees, as in JAX's jax.tree_util.

A pytree is a nest of containers (tuples, lists, dicts, namedtuples, None, and classes
registered here: dataclasses or any class with a flatten/unflatten pair) whose leaves are
arrays or numbers. Every transformation already takes and returns nests of tuples, lists
and dicts; these functions are for the code around it (optimizer updates, parameter
initialization, reading structures).

In transformed code (`tp.jit(update)`, a loss under `tp.grad`), `tree_map` with one to
three trees, and `tree_flatten`, `tree_leaves`, `tree_structure` and `tree_unflatten`, of
tuples, lists, dicts, namedtuples and None, are the plain Python below (`_tree_map_1`,
`_leaves`, ...), which transformations read like any code; classes registered here and
`is_leaf` are handled in plain code only. There a structure is the tree itself (its leaves
are not read again); `tree_unflatten` also takes a PyTreeDef made in plain code.
"""
import collections
import dataclasses
import functools

import runtime as rt
from . import stand_ins

__all__ = ["PyTreeDef", "tree_map", "tree_leaves", "tree_flatten", "tree_unflatten",
           "tree_structure", "tree_transpose", "register_pytree_node", "register_dataclass",
           "register_pytree_with_keys", "all_leaves", "tree_flatten_with_path",
           "tree_leaves_with_path", "tree_map_with_path", "keystr", "DictKey", "SequenceKey",
           "GetAttrKey", "FlattenedIndexKey", "tree_reduce", "tree_all"]

_NODES = {}      # registered class -> (flatten: x -> (children, aux), unflatten: (aux, children) -> x)
_KEYS = {}       # registered class -> x -> the keys of its children (paths name them)


@dataclasses.dataclass(frozen=True)
class DictKey:
    """A step of a path into a dict's entry: `['a']`."""
    key: object

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A step of a path into a tuple's or list's item: `[0]`."""
    idx: int

    def __str__(self):
        return f"[{self.idx}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """A step of a path into a namedtuple's or dataclass's field: `.w`."""
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """A step of a path into a registered class's child, by its place among the children
    its flatten function gives (the class said nothing better)."""
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def register_pytree_node(nodetype, flatten_func, unflatten_func):
    """Make instances of `nodetype` pytree nodes: flatten_func(x) -> (children, aux_data),
    unflatten_func(aux_data, children) -> x (JAX's signature)."""
    _NODES[nodetype] = (flatten_func, unflatten_func)
    _KEYS.setdefault(nodetype, lambda x: [FlattenedIndexKey(i)
                                          for i in range(len(list(flatten_func(x)[0])))])
    if nodetype is not collections.OrderedDict:     # (a dict to the transformations)
        stand_ins.register_node(nodetype, flatten_func, unflatten_func)
    return nodetype


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """register_pytree_node whose children have names for paths: flatten_with_keys(x) ->
    ([(key, child), ...], aux_data) (JAX's signature; keys such as GetAttrKey("w"))."""
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [child for _, child in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func)
    _KEYS[nodetype] = lambda x: [key for key, _ in flatten_with_keys(x)[0]]
    return nodetype


# an OrderedDict's children in insertion order, as JAX gives them (a dict's: by key)
register_pytree_with_keys(collections.OrderedDict,
                          lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d)),
                          lambda keys, children: collections.OrderedDict(zip(keys, children)))


def register_dataclass(nodetype, data_fields=None, meta_fields=None):
    """A dataclass as a pytree node: `data_fields` are children, `meta_fields` (static) are
    part of its structure. With no lists given, every field is data. Usable as a
    decorator."""
    if data_fields is None:
        data_fields = [f.name for f in dataclasses.fields(nodetype)]
        meta_fields = []
    meta_fields = list(meta_fields or [])
    data_fields = list(data_fields)

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(aux, children):
        values = dict(zip(data_fields, children))
        values.update(zip(meta_fields, aux))
        return nodetype(**values)

    if not meta_fields:
        stand_ins.register(nodetype, data_fields)
    register_pytree_node(nodetype, flatten, unflatten)
    _KEYS[nodetype] = lambda x: [GetAttrKey(n) for n in data_fields]
    return nodetype


class PyTreeDef:
    """The structure of a pytree: a node's kind and static data, and its children's."""

    def __init__(self, kind, aux, children):
        self.kind, self.aux, self.children = kind, aux, tuple(children)

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    @property
    def num_nodes(self):
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves):
        return tree_unflatten(self, leaves)

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and (self.kind, self.aux, self.children) == \
            (other.kind, other.aux, other.children)

    def __hash__(self):
        return hash((repr(self.kind), self.children))

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind is None:
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind is list:
            return f"[{inner}]"
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children)) \
                + "}"
        return f"{getattr(self.kind, '__name__', self.kind)}({inner})"


def _node(x):
    """(kind, aux, children) of a container node, or None for a leaf."""
    if x is None:
        return None, None, ()
    t = type(x)
    if t in _NODES:
        children, aux = _NODES[t][0](x)
        return t, aux, list(children)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return t, None, list(x)
    if t is tuple or t is list:
        return t, None, list(x)
    if t is dict or isinstance(x, dict):
        keys = rt.sorted_keys(x)      # JAX orders a dict's children by key
        return dict, tuple(keys), [x[k] for k in keys]
    return "leaf", None, ()




def _build(kind, aux, children):
    if kind is None:
        return None
    if kind in _NODES:
        return _NODES[kind][1](aux, children)
    if kind is dict:
        return dict(zip(aux, children))
    if kind is tuple or kind is list:
        return kind(children)
    return kind(*children)                   # a namedtuple


def tree_flatten(tree, is_leaf=None):
    """(leaves, treedef): the leaves left to right, and the structure to rebuild it."""
    leaves = []

    def walk(x):
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return PyTreeDef("leaf", None, ())
        kind, aux, children = _node(x)
        if kind == "leaf":
            leaves.append(x)
            return PyTreeDef("leaf", None, ())
        return PyTreeDef(kind, aux, [walk(c) for c in children])

    treedef = walk(tree)
    return leaves, treedef


def _child_keys(x, kind, aux, children):
    """The path steps to the children of a node `x` that _node gave (kind, aux, children)."""
    if kind in _KEYS:
        return _KEYS[kind](x)
    if kind is dict:
        return [DictKey(k) for k in aux]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return [GetAttrKey(n) for n in x._fields]
    return [SequenceKey(i) for i in range(len(children))]


def tree_flatten_with_path(tree, is_leaf=None):
    """([(path, leaf), ...], treedef): tree_flatten's leaves, each with its path from the
    root, a tuple of DictKey, SequenceKey, GetAttrKey and FlattenedIndexKey steps."""
    pairs = []

    def walk(x, path):
        if is_leaf is not None and is_leaf(x):
            pairs.append((path, x))
            return
        kind, aux, children = _node(x)
        if kind == "leaf":
            pairs.append((path, x))
            return
        for key, child in zip(_child_keys(x, kind, aux, children), children):
            walk(child, path + (key,))

    walk(tree, ())
    return pairs, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None):
    """[(path, leaf), ...]: tree_flatten_with_path's first result."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None):
    """f(path, leaf, *other_leaves) for each leaf of `tree`, in `tree`'s structure."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    others = [_flatten_up_to(treedef, r) for r in rest]
    return tree_unflatten(treedef, [f(path, x, *xs)
                                    for (path, x), *xs in zip(pairs, *others)])


# Paths are objects made while flattening; transformed code reads trees by structure only.
for _fn in (tree_flatten_with_path, tree_leaves_with_path, tree_map_with_path):
    _fn.__transpile_plain_only__ = (
        "call it outside the transformed function and pass in what the paths decide (or "
        "use tree_leaves / tree_map, which run in transformed code).")


def keystr(keys, *, simple=False, separator=""):
    """A path as text: `"['a'][0].w"`, or with `simple=True` and `separator="/"`,
    `"a/0/w"`."""
    if not simple:
        return separator.join(str(k) for k in keys)
    plain = {DictKey: "key", SequenceKey: "idx", GetAttrKey: "name", FlattenedIndexKey: "key"}
    return separator.join(str(getattr(k, plain[type(k)])) if type(k) in plain else str(k)
                          for k in keys)


def tree_unflatten(treedef, leaves):
    """The pytree of structure `treedef` holding `leaves` (left to right)."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: {treedef} takes {treedef.num_leaves} leaves, "
                         f"got {len(leaves)}")
    it = iter(leaves)

    def build(d):
        if d.kind == "leaf":
            return next(it)
        return _build(d.kind, d.aux, [build(c) for c in d.children])

    return build(treedef)


def tree_leaves(tree, is_leaf=None):
    """The leaves of `tree`, left to right (tree_flatten's first result)."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    """The structure of `tree` (tree_flatten's PyTreeDef)."""
    return tree_flatten(tree, is_leaf)[1]


def all_leaves(iterable, is_leaf=None):
    """True when every item is a leaf."""
    return all(tree_structure(x, is_leaf).kind == "leaf" for x in iterable)


def tree_map(f, tree, *rest, is_leaf=None):
    """f applied leaf by leaf to `tree` and the trees in `rest` (of the same structure, or
    with `tree`'s structure as a prefix), in `tree`'s structure."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to(treedef, r) for r in rest]
    return tree_unflatten(treedef, [f(x, *xs) for x, *xs in zip(leaves, *others)])


_NO_INITIALIZER = object()


def tree_reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    """function(function(initializer, leaf0), leaf1)... over the leaves of `tree`
    (functools.reduce; without an initializer the first leaf starts)."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, is_leaf=None):
    """Whether every leaf of `tree` is true (all())."""
    return all(tree_leaves(tree, is_leaf))


def _flatten_up_to(treedef, tree):
    out = []

    def walk(d, x):
        if d.kind == "leaf":
            out.append(x)
            return
        kind, aux, children = _node(x)
        if kind != d.kind or (kind is dict and tuple(aux) != tuple(d.aux)) or \
                len(children) != len(d.children):
            raise ValueError(f"tree_map: trees of different structure ({d} and "
                             f"{tree_structure(x)})")
        for c, y in zip(d.children, children):
            walk(c, y)

    walk(treedef, tree)
    return out


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """A tree of structure outer(inner(leaves)) as inner(outer(leaves)) (JAX's signature)."""
    flat = _flatten_up_to(outer_treedef, pytree_to_transpose)
    inner = [_flatten_up_to(inner_treedef, x) for x in flat]
    columns = [tree_unflatten(outer_treedef, list(col)) for col in zip(*inner)]
    return tree_unflatten(inner_treedef, columns)


# ---------------------------------------------------------------- in transformed code

def _tree_map_1(f, a):
    if a is None:
        return None
    if isinstance(a, (tuple, list)):
        items = []
        for i in range(len(a)):
            items.append(_tree_map_1(f, a[i]))
        return rt.to_like(items, a)
    if isinstance(a, dict):
        out = {}
        for k in rt.dict_keys(a):
            out[k] = _tree_map_1(f, a[k])
        return out
    return f(a)


def _tree_map_2(f, a, b):
    if a is None:
        return None
    if isinstance(a, (tuple, list)):
        items = []
        for i in range(len(a)):
            items.append(_tree_map_2(f, a[i], b[i]))
        return rt.to_like(items, a)
    if isinstance(a, dict):
        out = {}
        for k in rt.dict_keys(a):
            out[k] = _tree_map_2(f, a[k], b[k])
        return out
    return f(a, b)


def _tree_map_3(f, a, b, c):
    if a is None:
        return None
    if isinstance(a, (tuple, list)):
        items = []
        for i in range(len(a)):
            items.append(_tree_map_3(f, a[i], b[i], c[i]))
        return rt.to_like(items, a)
    if isinstance(a, dict):
        out = {}
        for k in rt.dict_keys(a):
            out[k] = _tree_map_3(f, a[k], b[k], c[k])
        return out
    return f(a, b, c)


def _tree_map_variant(n_positional, keywords):
    if keywords:
        return None
    return {2: _tree_map_1, 3: _tree_map_2, 4: _tree_map_3}.get(n_positional)


tree_map.__transpile_variant__ = _tree_map_variant


def _leaves(tree):
    """The leaves of a nest of tuples, lists, dicts (by key) and None, left to right."""
    if tree is None:
        return []
    if isinstance(tree, (tuple, list)):
        out = []
        for i in range(len(tree)):
            out = out + list(_leaves(tree[i]))
        return out
    if isinstance(tree, dict):
        out = []
        for k in rt.sorted_keys(tree):
            out = out + list(_leaves(tree[k]))
        return out
    return [tree]


def _count(like):
    """The number of leaves of a nest of tuples, lists, dicts and None."""
    if like is None:
        return 0
    if isinstance(like, (tuple, list)):
        n = 0
        for j in range(len(like)):
            n = n + _count(like[j])
        return n
    if isinstance(like, dict):
        n = 0
        for k in rt.sorted_keys(like):
            n = n + _count(like[k])
        return n
    return 1


def _rebuild(like, leaves):
    """The tree shaped like `like` holding `leaves` (as many as it has). Each child takes
    the slice of leaves its count says: counts depend on the structure only, the same in
    every example under vmap."""
    if like is None:
        return None
    if isinstance(like, (tuple, list)):
        items = []
        start = 0
        for j in range(len(like)):
            n = _count(like[j])
            items.append(_rebuild(like[j], leaves[start:start + n]))
            start = start + n
        return rt.to_like(items, like)
    if isinstance(like, dict):
        out = {}
        start = 0
        for k in rt.sorted_keys(like):
            n = _count(like[k])
            out[k] = _rebuild(like[k], leaves[start:start + n])
            start = start + n
        return out
    return leaves[0]


def _tree_flatten_1(tree):
    return _leaves(tree), tree


def _tree_structure_1(tree):
    return tree


def _tree_unflatten_2(treedef, leaves):
    like = rt.tree_skeleton(treedef)
    assert _count(like) == len(leaves), "tree_unflatten: the number of leaves does not match"
    return _rebuild(like, leaves)


def _one_tree(fixed):
    def variant(n_positional, keywords):
        return fixed if n_positional == 1 and not keywords else None
    return variant


tree_flatten.__transpile_variant__ = _one_tree(_tree_flatten_1)
tree_leaves.__transpile_variant__ = _one_tree(_leaves)
tree_structure.__transpile_variant__ = _one_tree(_tree_structure_1)
def _tree_reduce_2(function, tree):
    leaves = _leaves(tree)
    acc = leaves[0]
    for leaf in leaves[1:]:
        acc = function(acc, leaf)
    return acc


def _tree_reduce_3(function, tree, initializer):
    acc = initializer
    for leaf in _leaves(tree):
        acc = function(acc, leaf)
    return acc


tree_reduce.__transpile_variant__ = \
    lambda n_positional, keywords: None if keywords else \
    {2: _tree_reduce_2, 3: _tree_reduce_3}.get(n_positional)
tree_unflatten.__transpile_variant__ = \
    lambda n_positional, keywords: _tree_unflatten_2 if n_positional == 2 and not keywords \
    else None
