"""What code made for an argument object depends on: its class, and what its fields and
items hold where those are objects of users' classes or functions (a model's layers).

`Sequential((Linear(...), Tanh(), Linear(...)))` given to `loss(model, x)` whose
`model.apply` loops `for layer in self.layers: x = layer.apply(x)`: which `apply` each
trip calls depends on the items, not on the class Sequential. The API layer records the
argument's layout (`argument_type`) in the key of the code it makes, so another model of
other layers gets code of its own; the front end reads a field's or an item's layout
where it calls a method (typed_argument) and unrolls a loop over items of different
classes. Arrays and numbers in fields are data, not part of the layout.
"""
import dataclasses
import inspect

from .resolved import library_module

_INTERNED = {}          # layout -> the one object for it (keys compare by identity)
_MAX_DEPTH = 8
_MAX_ITEMS = 256        # a longer sequence is data (a dataset's records), not layers


class ObjectLayout:
    """An object of user class `cls` some of whose `fields` (name -> layout) hold objects,
    sequences of them, or functions."""
    __slots__ = ("cls", "fields")

    def __init__(self, cls, fields):
        self.cls = cls
        self.fields = dict(fields)

    def _key(self):
        return ("object", self.cls, tuple(sorted(self.fields.items(), key=lambda kv: kv[0])))

    def __repr__(self):
        return f"{self.cls.__name__}({', '.join(f'{k}={v!r}' for k, v in self.fields.items())})"


class SequenceLayout:
    """A tuple or list whose `items` (a layout each; None for data) include objects of
    users' classes or functions."""
    __slots__ = ("cls", "items")

    def __init__(self, cls, items):
        self.cls = cls
        self.items = tuple(items)

    def _key(self):
        return ("sequence", self.cls, self.items)

    def __repr__(self):
        return f"{self.cls.__name__}[{', '.join(map(repr, self.items))}]"


class FunctionItem:
    """A function held in a sequence or a field: code calling it is made for it."""
    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def _key(self):
        return ("function", id(self.fn))

    def __repr__(self):
        return getattr(self.fn, "__name__", "function")


def _interned(layout):
    key = layout._key()
    found = _INTERNED.get(key)
    if found is None:
        # the layout holds its classes and functions, so an id in a key is never reused
        found = _INTERNED[key] = layout
    return found


def class_of(layout):
    """The class of a value of type or layout `layout`."""
    return layout.cls if isinstance(layout, (ObjectLayout, SequenceLayout)) else layout


def argument_type(value):
    """The type code made for argument `value` depends on: its layout where it holds
    objects or functions, else its class."""
    layout = _layout(value, 0, set())
    return type(value) if layout is None or isinstance(layout, FunctionItem) else layout


def item_layout(layout, index):
    """The layout of item `index` (an int, or a slice: the items') of sequence layout
    `layout`, else None."""
    if not isinstance(layout, SequenceLayout):
        return None
    if isinstance(index, slice):
        items = layout.items[index]
        return _interned(SequenceLayout(layout.cls, items)) \
            if any(i is not None for i in items) else None
    if -len(layout.items) <= index < len(layout.items):
        return layout.items[index]
    return None


def field_layout(layout, name):
    """The layout of field `name` of object layout `layout`, else None."""
    return layout.fields.get(name) if isinstance(layout, ObjectLayout) else None


def _user_instance(value):
    cls = type(value)
    return not isinstance(value, type) and not inspect.isroutine(value) and \
        not inspect.ismodule(value) and not library_module(inspect.getmodule(cls)) and \
        not hasattr(value, "__array__")


def _function(value):
    return inspect.isfunction(value) or inspect.ismethod(value) or \
        inspect.isbuiltin(value) or type(value).__name__ == "ufunc"


def _field_names(value):
    if hasattr(type(value), "_fields"):                    # a namedtuple
        return type(value)._fields
    if dataclasses.is_dataclass(value):
        return tuple(f.name for f in dataclasses.fields(value))
    return tuple(getattr(value, "__dict__", {}))


def _layout(value, depth, seen):
    """The layout of `value`: None for data (arrays, numbers, containers of only those)."""
    if depth > _MAX_DEPTH or id(value) in seen:
        return None
    if _function(value):
        return _interned(FunctionItem(value))
    cls = type(value)
    if (cls is tuple or cls is list) and len(value) <= _MAX_ITEMS:
        seen.add(id(value))
        items = tuple(_layout(v, depth + 1, seen) for v in value)
        seen.discard(id(value))
        if all(i is None for i in items):
            return None
        return _interned(SequenceLayout(cls, items))
    if not _user_instance(value):
        return None
    seen.add(id(value))
    fields = {}
    for name in _field_names(value):
        found = _layout(getattr(value, name, None), depth + 1, seen)
        if found is not None and not isinstance(found, FunctionItem):
            fields[name] = found
    seen.discard(id(value))
    return _interned(ObjectLayout(cls, fields)) if fields else cls


def one_object_type(items):
    """Whether every item of a sequence layout is an object of the same layout."""
    first = items[0] if items else None
    return first is not None and not isinstance(first, FunctionItem) and \
        all(item is first for item in items)
