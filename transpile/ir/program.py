"""A program being generated: the functions of one generated module and what they reference.

Every transformation produces one `Program`, emitted as one module: its entry function, the
IR of every user function reachable from it (normalized on first use, so recursion works),
and a namespace of the non-literal objects the code refers to (global arrays, partial
objects). Generated functions refer to each other by name.
"""
import types

import numpy as np

from .naming import Namer


class FunctionIR:
    """One normalized function: its gast FunctionDef, where it came from, lifted free vars."""

    def __init__(self, name, node, source, params, freevars):
        self.name = name
        self.node = node
        self.source = source
        self.params = params          # user parameters, then lifted free variables
        self.freevars = freevars
        # set by frontend/aliasing.py: which parameters the result may share memory with
        self.result_sharing = None
        # also: `p op= v` statements on a parameter that may hold the caller's array
        self.parameter_updates = []


class Program:
    def __init__(self, callees=None):
        self.callees = callees        # frontend.callees.Callees: the API layer's answers
        self.functions = {}           # IR name -> FunctionIR (in creation order)
        self.keys = {}                # identity of a user function -> IR name
        self.namespace = {}           # name -> object referenced by generated code
        self.namer = Namer(["np", "rt", "math", "scipy"])
        # (namer, local names) of the functions being normalized now: a constant named
        # while they are must not take a name they bind, and they must not take it later
        self.open_scopes = []
        self.in_progress = set()
        self.custom = {}              # IR name -> custom_vjp / custom_jvp object
        # (id of a module's globals, name) -> (those globals, name, the object it named):
        # the globals the code was generated with, checked again before it is reused
        self.global_reads = {}
        # the array attributes (`x.shape`, `x.T`, ...) the code reads from values not known
        # while transforming: a namedtuple with a field of that name must not reach them
        self.array_attributes = set()

    def constant(self, obj, hint):
        """A name under which generated code can refer to the non-literal object `obj`."""
        for name, value in self.namespace.items():
            # (one made while another function was normalized may be a local name here)
            if value is obj and not any(name in local for _, local in self.open_scopes):
                self._reserve(name)
                return name
        name = self.namer.fresh(hint)
        while any(name in namer.generated or name in local
                  for namer, local in self.open_scopes):
            name = self.namer.fresh(hint)
        self._reserve(name)
        self.namespace[name] = obj
        return name

    def _reserve(self, name):
        for namer, _ in self.open_scopes:
            namer.reserve(name)

    def function_namer(self, fir):
        """A Namer for new names inside `fir` that avoids every name already in use."""
        import gast
        used = {n.id for n in gast.walk(fir.node) if isinstance(n, gast.Name)}
        return Namer(used | set(self.functions) | set(self.namespace) | {"np", "rt", "math"})

    def forget_function(self, key, name):
        """Undo `function_name` for a function whose normalization failed."""
        self.keys.pop(key, None)
        self.functions.pop(name, None)

    def function_name(self, key, hint):
        """(name, is_new) for the function identified by `key`."""
        if key in self.keys:
            return self.keys[key], False
        name = self._fresh_outside_scopes(hint)
        self.keys[key] = name
        return name, True

    def _fresh_outside_scopes(self, hint):
        """A new module-level name that no function being normalized binds (a parameter
        `shift_fn` would hide a function of that name called in its body)."""
        name = self.namer.fresh(hint)
        while any(name in namer.generated or name in local
                  for namer, local in self.open_scopes):
            name = self.namer.fresh(hint)
        self._reserve(name)   # nor may they name a temporary so later (`layer_out_1 = ...`)
        return name

    def function_alias(self, name, avoid):
        """Another module-level name for IR function `name`, for a caller that binds
        `name` itself (its parameter passes the function it calls): a copy of the
        definition under a name outside `avoid`. `name` itself while it is being made."""
        fir = self.functions.get(name)
        if fir is None:
            return name
        aliases = self.__dict__.setdefault("_aliases", {})
        alias = aliases.get(name)
        if alias is None or alias in avoid:
            alias = self.namer.fresh(name + "_fn")
            while alias in avoid:
                alias = self.namer.fresh(name + "_fn")
            import copy as _copy
            node = _copy.deepcopy(fir.node)
            node.name = alias
            made = FunctionIR(alias, node, fir.source, fir.params, fir.freevars)
            made.result_sharing = fir.result_sharing
            self.functions[alias] = made
            if name in self.custom:          # a custom rule's function keeps its rules
                self.custom[alias] = self.custom[name]
            aliases[name] = alias
        return alias


class Snapshot:
    """The items of a list or tuple of functions that generated code was made from (a
    model's layers), or of a dict whose keys it spelled (`f(**OPTIONS)`), for the check
    that it still holds them (a list or dict changes in place)."""

    def __init__(self, container):
        self.mapping = isinstance(container, dict)
        self.items = tuple(container.items() if self.mapping else container)

    def matches(self, current):
        if self.mapping:
            return isinstance(current, dict) and len(current) == len(self.items) and \
                all(k in current and current[k] is v for k, v in self.items)
        return isinstance(current, (list, tuple)) and len(current) == len(self.items) and \
            all(a is b for a, b in zip(current, self.items))


def is_literal(value):
    """Values that generated code can spell as a literal instead of a namespace reference."""
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return not (isinstance(value, float) and not np.isfinite(value))
    if type(value) is tuple:       # (a namedtuple's repr names its class: a reference)
        return all(is_literal(v) for v in value)
    return False


def is_module(value):
    return isinstance(value, types.ModuleType)
