"""The front end: a Python function -> normalized IR in a Program.

    parse.py        source of a Python function -> gast FunctionDef (with where it came from)
    normalize.py    resolve names, desugar, A-normal form; user functions normalized on
                    first call (`normalize_function`, the entry point)
    calls.py        calls: primitives, user functions, lifted defs and lambdas,
                    transformations applied while transforming (part of the normalizer)
    resolved.py     what a name stands for while transforming (Static, LocalFunction, ...)
    controlflow.py  return/break/continue -> flags, one exit at the end
    aliasing.py     in-place writes: which names may share memory, writes made functional
                    or refused
    callees.py      the questions about called objects that the API layer answers

Functions are normalized on first use and memoized per Program, so a recursive call finds
its own (possibly unfinished) IR function by name. `pipeline.py` runs a transformation on
the result.
"""
from .normalize import closure_values, defaults_of, lifted_closure_names, normalize_function

__all__ = ["normalize_function", "closure_values", "lifted_closure_names", "defaults_of"]
