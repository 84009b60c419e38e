"""What a name in a user's function stands for while it is transformed.

The normalizer resolves names statically: a global or closure value (`Static`: a module, a
function, a constant), a nested def or lambda lifted to an IR function (`LocalFunction`),
a transformation applied to one (`LocalTransformed`), a `functools.partial` of either
(`LocalPartial`). Anything else is a local variable, read at run time.
"""
import functools
import inspect
import numbers

import gast
import numpy as np

# Modules whose attributes do not change while a program runs (numpy's functions): reading
# them is not recorded for the check of rebound globals.
LIBRARIES = ("numpy", "scipy", "math", "builtins", "runtime", "transpile", "cupy", "cupyx",
             "functools", "operator", "itertools", "collections", "jax")
# Packages whose Python functions transformed code must not step into: a function of theirs
# needs a rule (stepping into scipy's source fails deep inside it, pointing at scipy).
THIRD_PARTY = ("numpy", "scipy", "cupy", "cupyx", "jax", "jaxlib", "sklearn", "torch",
               "autograd", "matplotlib", "pandas")


def library_module(module, packages=LIBRARIES):
    """Whether `module` belongs to one of `packages`."""
    name = getattr(module, "__name__", "") or ""
    return name.split(".")[0] in packages


def third_party_function(fn):
    """A Python function of a package in THIRD_PARTY (scipy.integrate.odeint)."""
    return library_module(inspect.getmodule(getattr(fn, "__func__", fn)), THIRD_PARTY)


class Static:
    """A value known while transforming: a module, a function, a class, a constant."""

    def __init__(self, value):
        self.value = value


class LocalFunction:
    """A lambda or nested def bound to a local name: calls to it are resolved statically."""

    def __init__(self, ir_name, params, freevars, defaults):
        self.ir_name = ir_name
        self.params = params
        self.freevars = freevars
        self.defaults = defaults


class LocalTemplate:
    """A nested def or lambda that calls one of its parameters (`def twice(g, x): return
    g(g(x))`): lifted anew for each call, with the functions that call passes (`made`:
    those functions' identities -> the LocalFunction lifted for them)."""

    def __init__(self, fdef, hint, local_fns):
        self.fdef = fdef
        self.hint = hint
        self.local_fns = local_fns     # the enclosing function's, where it is defined
        self.made = {}


class LocalTransformed:
    """`tp.grad(nested_fn)`: a Transformed of the lifted function, plus its free variables;
    `params` and `defaults` are the nested function's own (a call binds them, as one of
    the function itself does: the lifted function has no defaults)."""

    def __init__(self, transformed, freevars, params=None, defaults=None):
        self.transformed = transformed
        self.freevars = freevars
        self.params = params
        self.defaults = defaults or {}


class LocalFunctions:
    """`acts = (np.tanh, relu)`: a tuple or list of functions written in the code and bound
    to a name: `acts[1](x)` and `for act in acts:` are resolved while transforming."""

    def __init__(self, items):
        self.items = list(items)      # Static, LocalFunction, LocalPartial, ...


class LocalDefault:
    """The default of a nested function's parameter that is not a constant (`def fact(n=x)`):
    the local name its value was stored in where the def is."""

    def __init__(self, name):
        self.name = name


class LocalPartial:
    def __init__(self, target, args, keywords):
        self.target = target          # Static or LocalFunction
        self.args = args              # atoms
        self.keywords = keywords


def assigned_names(stmts):
    names = set()
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                names.add(n.id)
            elif isinstance(n, (gast.FunctionDef,)):
                names.add(n.name)
    return names


def plain_object(value):
    """An instance of a user's class (a model without __call__, a config): a closure
    variable holding one stays known while transforming, so its methods can be called;
    its data attributes are read when the code runs."""
    if isinstance(value, (np.ndarray, np.generic, numbers.Number, str, bytes, list, tuple,
                          dict, set, frozenset, type, functools.partial)) or value is None \
            or inspect.ismodule(value) or callable(value):
        return False
    return hasattr(value, "__dict__") and not library_module(inspect.getmodule(type(value)))
