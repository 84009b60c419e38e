"""Stand-ins for registered dataclasses: what transformations see in their place.

The transformations take tuples, lists, dicts and namedtuples. A dataclass registered with
`tp.tree_util.register_dataclass` (every field data) is handed to transformed code as a
namedtuple of the same fields, so the code reads `p.w` as any namedtuple field, and results
are turned back (`tp.grad` of a `Dense(w, b)` argument is a `Dense`). The API layer
converts arguments and results only while some dataclass is registered (`has_proxies`).
"""
import inspect
from collections import namedtuple

from .errors import TransformError

_PROXIES = {}          # registered dataclass -> (its namedtuple stand-in, data fields)
_CLASS_OF_PROXY = {}   # stand-in -> the dataclass
# classes registered as pytree nodes that have no stand-in (a flatten function of the
# user's, a dataclass with meta fields): refused as arguments of transformations, where
# they were taken for one leaf (vmap: "in_axes=0 is out of range for ... shape ()")
_REFUSED = set()


def register(nodetype, data_fields):
    """Give dataclass `nodetype` a namedtuple stand-in of its `data_fields`, with the
    dataclass's own methods (and its bases'): `p.norm()` in transformed code calls the
    class's `norm` with the stand-in for `self`, which reads the same fields."""
    fields = namedtuple(nodetype.__name__, data_fields)
    methods = {}
    for cls in reversed(nodetype.__mro__[:-1]):
        methods.update((name, value) for name, value in vars(cls).items()
                       if not (name.startswith("__") and name.endswith("__")) and
                       name not in data_fields and
                       (inspect.isfunction(value) or
                        isinstance(value, (staticmethod, classmethod))))
    annotations = {}
    for cls in reversed(nodetype.__mro__[:-1]):
        annotations.update(vars(cls).get("__annotations__", {}))
    proxy = type(nodetype.__name__, (fields,), {
        "__slots__": (), **methods,
        "__annotations__": {f: annotations[f] for f in data_fields if f in annotations},
                                                "__module__": nodetype.__module__,
                                                "__qualname__": nodetype.__qualname__})
    _PROXIES[nodetype] = (proxy, tuple(data_fields))
    _CLASS_OF_PROXY[proxy] = nodetype


def refuse(nodetype):
    """Instances of `nodetype` (a registered pytree node without a stand-in) raise a clear
    error where a transformation is given one."""
    if nodetype not in _PROXIES:
        _REFUSED.add(nodetype)


def stand_in_class(cls):
    """The namedtuple standing in for registered dataclass `cls`, else None."""
    proxied = _PROXIES.get(cls) if isinstance(cls, type) else None
    return proxied[0] if proxied is not None else None


def is_registered(obj):
    """Whether `obj` is an instance of a registered dataclass (a pytree node)."""
    return type(obj) in _PROXIES


def has_proxies():
    """Whether any dataclass is registered (the API converts arguments only then)."""
    return bool(_PROXIES or _REFUSED)


def to_transformable(tree):
    """`tree` with each registered dataclass instance replaced by a namedtuple of its
    fields (the transformations take tuples, lists, dicts and namedtuples); unchanged
    (the same object) where there is none."""
    if type(tree) in _REFUSED:
        name = type(tree).__name__
        raise TransformError(
            f"a {name} (a class registered with tp.tree_util.register_pytree_node, or a "
            "dataclass with meta fields) is given to a transformation, which takes tuples, "
            "lists, dicts, namedtuples and dataclasses whose fields are all data.\n  hint: "
            "pass its leaves (tp.tree_util.tree_flatten), or make it a namedtuple or an "
            "all-data dataclass (register_dataclass); an object whose methods the function "
            "calls (a model) is taken as it is when its class is not registered.")
    proxied = _PROXIES.get(type(tree))
    if proxied is not None:
        proxy, fields = proxied
        return proxy(*(to_transformable(getattr(tree, f)) for f in fields))
    return _map_children(to_transformable, tree)


def from_transformable(tree):
    """The inverse of to_transformable: stand-ins back to their dataclasses (a gradient
    of a dataclass argument comes back as that dataclass)."""
    cls = _CLASS_OF_PROXY.get(type(tree))
    if cls is not None:
        return cls(**{f: from_transformable(v) for f, v in zip(tree._fields, tree)})
    return _map_children(from_transformable, tree)


def _map_children(convert, tree):
    """A tuple, list or dict with `convert` applied to each child (the same object when
    no child changes); any other value as it is."""
    if isinstance(tree, (tuple, list)):
        items = [convert(x) for x in tree]
        if all(a is b for a, b in zip(items, tree)):
            return tree
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    if isinstance(tree, dict):
        items = {k: convert(v) for k, v in tree.items()}
        return tree if all(items[k] is tree[k] for k in tree) else items
    return tree
