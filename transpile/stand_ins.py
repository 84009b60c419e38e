"""Stand-ins for registered pytree classes: what transformations see in their place.

The transformations take tuples, lists, dicts and namedtuples. A dataclass registered with
`tp.tree_util.register_dataclass` (every field data) is handed to transformed code as a
namedtuple of the same fields, so the code reads `p.w` as any namedtuple field, and results
are turned back (`tp.grad` of a `Dense(w, b)` argument is a `Dense`). A class registered
with `register_pytree_node` (or a dataclass with meta fields) is handed over as a tuple of
its children named by the attributes that hold them (its flatten function's children must
be its attributes), its other attributes and its aux data kept by the stand-in's class;
results go back through its unflatten function. Stand-ins have the class's methods. The API
layer converts arguments and results only while some class is registered (`has_proxies`).
"""
import inspect
import operator
from collections import namedtuple

from .errors import TransformError

_PROXIES = {}          # registered dataclass -> (its namedtuple stand-in, data fields)
_CLASS_OF_PROXY = {}   # stand-in -> the dataclass
_NODES = {}            # class registered with flatten/unflatten -> (flatten, unflatten)
_NODE_PROXIES = {}     # (class, attributes of its children, static data) -> stand-in
_UNFLATTEN_OF_PROXY = {}   # such a stand-in -> (unflatten, aux data)


def register(nodetype, data_fields):
    """Give dataclass `nodetype` a namedtuple stand-in of its `data_fields`, with the
    dataclass's own methods (and its bases'): `p.norm()` in transformed code calls the
    class's `norm` with the stand-in for `self`, which reads the same fields."""
    fields = namedtuple(nodetype.__name__, data_fields)
    annotations = {}
    for cls in reversed(nodetype.__mro__[:-1]):
        annotations.update(vars(cls).get("__annotations__", {}))
    proxy = type(nodetype.__name__, (fields,), {
        "__slots__": (), **_methods(nodetype, data_fields),
        "__annotations__": {f: annotations[f] for f in data_fields if f in annotations},
        "__transpile_class__": nodetype,         # rt.type_of, rt.is_instance
        "__module__": nodetype.__module__, "__qualname__": nodetype.__qualname__})
    _PROXIES[nodetype] = (proxy, tuple(data_fields))
    _CLASS_OF_PROXY[proxy] = nodetype


def _methods(nodetype, fields):
    """The plain, static and class methods of `nodetype` and its bases (and the callables
    that bind as methods)."""
    methods = {}
    for cls in reversed(nodetype.__mro__[:-1]):
        methods.update((name, value) for name, value in vars(cls).items()
                       if not (name.startswith("__") and name.endswith("__")) and
                       name not in fields and
                       (inspect.isfunction(value) or
                        isinstance(value, (staticmethod, classmethod)) or
                        # a method transformed in the class (`@tp.jit def calc(self, y)`)
                        callable(value) and hasattr(type(value), "__get__")))
    return methods


def register_node(nodetype, flatten, unflatten):
    """A class registered with flatten/unflatten functions (register_pytree_node): its
    instances get a stand-in made from their attributes (_node_stand_in)."""
    _NODES[nodetype] = (flatten, unflatten)


def stand_in_class(cls):
    """The namedtuple standing in for registered dataclass `cls`, else None."""
    proxied = _PROXIES.get(cls) if isinstance(cls, type) else None
    return proxied[0] if proxied is not None else None


def is_registered(obj):
    """Whether `obj` is an instance of a registered class (a pytree node)."""
    return type(obj) in _PROXIES or type(obj) in _NODES


def holds_registered(tree):
    """Whether `tree` holds an instance of a registered class or a stand-in of one."""
    if is_registered(tree) or type(tree) in _CLASS_OF_PROXY or \
            type(tree) in _UNFLATTEN_OF_PROXY:
        return True
    if isinstance(tree, (tuple, list)):
        return any(holds_registered(v) for v in tree)
    if isinstance(tree, dict):
        return any(holds_registered(v) for v in tree.values())
    return False


def has_proxies():
    """Whether any class is registered (the API converts arguments only then)."""
    return bool(_PROXIES or _NODES)


def to_transformable(tree):
    """`tree` with each registered class's instance replaced by its stand-in (the
    transformations take tuples, lists, dicts and namedtuples); unchanged (the same
    object) where there is none."""
    proxied = _PROXIES.get(type(tree))
    if proxied is not None:
        proxy, fields = proxied
        return proxy(*(to_transformable(getattr(tree, f)) for f in fields))
    if type(tree) in _NODES:
        return _node_stand_in(tree)
    return _map_children(to_transformable, tree)


def from_transformable(tree):
    """The inverse of to_transformable: stand-ins back to their classes (a gradient of a
    registered argument comes back as that class)."""
    cls = _CLASS_OF_PROXY.get(type(tree))
    if cls is not None:
        return cls(**{f: from_transformable(v) for f, v in zip(tree._fields, tree)})
    rebuild = _UNFLATTEN_OF_PROXY.get(type(tree))
    if rebuild is not None:
        unflatten, aux = rebuild
        return unflatten(aux, [from_transformable(v) for v in tree])
    return _map_children(from_transformable, tree)


def _node_stand_in(tree):
    """The stand-in of an instance of a class registered with flatten/unflatten: a tuple
    of its children, each named by the attribute that holds it, whose class (one per
    class, attribute names and static data) keeps its other attributes, its aux data and
    its methods."""
    cls = type(tree)
    flatten, unflatten = _NODES[cls]
    children, aux = flatten(tree)
    children = list(children)
    attributes = dict(vars(tree)) if hasattr(tree, "__dict__") else {
        name: getattr(tree, name) for c in cls.__mro__ for name in getattr(c, "__slots__", ())
        if hasattr(tree, name)}
    fields = []
    for child in children:
        names = [n for n, v in attributes.items() if v is child and n not in fields]
        if len(names) != 1:
            raise TransformError(
                f"a {cls.__name__} (a class registered with tp.tree_util."
                "register_pytree_node) is given to a transformation, and its flatten "
                "function's children are not each held by one of its attributes, which "
                "is how transformed code reads them.\n  hint: flatten to the attributes "
                "themselves (`return (self.a, self.b), aux`), or pass its leaves "
                "(tp.tree_util.tree_flatten).")
        fields.append(names[0])
    static = {n: v for n, v in attributes.items() if n not in fields}
    key = (cls, tuple(fields), _static_key(aux),
           tuple((n, _static_key(v)) for n, v in sorted(static.items())))
    proxy = _NODE_PROXIES.get(key)
    if proxy is None:
        proxy = _record_class(cls, fields, {**_methods(cls, fields), **static})
        _NODE_PROXIES[key] = proxy
        _UNFLATTEN_OF_PROXY[proxy] = (unflatten, aux)
    return proxy(*(to_transformable(c) for c in children))


def _static_key(value):
    """`value` where it can key a dict, else its identity (the stand-in class keeps it)."""
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))


def _record_class(cls, fields, namespace):
    """A tuple class with `fields` read by name (`_fields`, as a namedtuple's; names may
    start with an underscore) and `namespace` as class attributes."""
    def __new__(record, *items):
        if len(items) != len(fields):
            raise TypeError(f"{cls.__name__} stand-in takes {len(fields)} items")
        return tuple.__new__(record, items)

    def __repr__(self):
        return f"{cls.__name__}(" + ", ".join(f"{f}={v!r}" for f, v in zip(fields, self)) + ")"
    body = {"__slots__": (), "_fields": tuple(fields), "__new__": __new__,
            "__repr__": __repr__, "__module__": cls.__module__,
            "__qualname__": cls.__qualname__, "__transpile_class__": cls}
    body.update(namespace)
    body.update((f, property(operator.itemgetter(i))) for i, f in enumerate(fields))
    return type(cls.__name__, (tuple,), body)


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
