"""Front end: Python function -> normalized IR in a Program (parse, anf, controlflow).

This is the first half of the pipeline; `pipeline.py` runs a transformation on the result.
Functions are normalized on first use and memoized per Program, so a recursive call finds
its own (possibly unfinished) IR function by name.
"""
import inspect

from .anf import Normalizer
from .errors import TransformError
from .parse import parse_function


def closure_values(fn):
    if not fn.__closure__:
        return {}
    out = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # cell not filled yet (recursive inner function)
            out[name] = None
    return out


def lifted_closure_names(fn):
    """Free variables passed as extra parameters: data, not functions or modules."""
    return [name for name, value in closure_values(fn).items()
            if not (callable(value) or inspect.ismodule(value))]


def defaults_of(fn):
    out = {}
    for p in inspect.signature(fn).parameters.values():
        if p.default is not inspect.Parameter.empty:
            out[p.name] = p.default
    return out


def normalize_function(fn, program, call_node=None, call_src=None, lift_closure=False):
    """(ir_name, params, defaults) of `fn` inside `program`, normalizing it if new."""
    bound_self = None
    if inspect.ismethod(fn):
        bound_self, fn = fn.__self__, fn.__func__
    if not inspect.isfunction(fn):
        raise TransformError(f"cannot transform {fn!r}: expected a Python function.")
    closure = closure_values(fn)
    lifted = lifted_closure_names(fn) if lift_closure else []
    key = (id(fn.__code__), fn.__code__, tuple(id(v) for k, v in closure.items() if k not in lifted),
           tuple(lifted))
    name, new = program.function_name(key, _hint(fn))
    if new:
        fdef, src = parse_function(fn)
        static_closure = {k: v for k, v in closure.items() if k not in lifted}
        normalizer = Normalizer(program, src, fn.__globals__, static_closure, name,
                                lifted=lifted)
        program.functions[name] = None
        program.functions[name] = normalizer.normalize(fdef)
    params = list(inspect.signature(fn).parameters)
    if bound_self is not None:
        raise TransformError(f"calling the bound method {fn.__qualname__} from transformed "
                             "code is not supported yet.\n  hint: call it as a plain function "
                             "with the object as an argument.")
    return name, params + lifted, defaults_of(fn)


def _hint(fn):
    name = fn.__name__
    if name == "<lambda>":
        return "lambda"
    return name
