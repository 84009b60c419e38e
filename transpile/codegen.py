"""Functions written as source while a program runs: the combinators of tp.nn and tp.optim.

`serial(*layers)` or `chain(*transforms)` hold a variable number of functions. Transformed
code can call a function it knows while transforming, not one picked from a container at
run time, so a combinator writes its apply or update function out, one line per part,
calling each by a name bound in the function's globals:

    def serial_apply(params, inputs, rng=None):
        ...
        inputs = layer_0(params[0], inputs)
        inputs = layer_1(params[1], inputs)

The source is registered with linecache under a name of its own, so transformations parse
it like any function in a file, and `inspect.getsource` shows it.
"""
import itertools
import linecache

import numpy as np

import runtime as rt

_ids = itertools.count()


def function_from_source(name, source, namespace):
    """The function `name` that `source` (one def) defines, with `namespace` (plus np and
    rt) as its globals."""
    filename = f"<transpile.{name}-{next(_ids)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = {"np": np, "rt": rt, **namespace}
    exec(compile(source, filename, "exec"), scope)
    return scope[name]
