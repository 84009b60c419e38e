"""Functions with *args, **kwargs or keyword-only parameters.

Transformed code binds every call while transforming, so a call of `h(*args, **kwargs)`
with two extra positional arguments and the keyword `s` binds to a copy of `h` specialized
to that shape: its parameters are `args_0, args_1` and `kwargs_s`, and its body starts with
`args = (args_0, args_1)` and `kwargs = {'s': kwargs_s}`. Keyword-only parameters are
ordinary parameters that a call can bind by name only.
"""
import inspect

import gast

from ..ir.nodes import assign, const, name
from .parse import parse_function, signature_of


class Shape:
    """How a call fills a function's parameters: `positional` names bound by position
    (the named ones, then the *args copies), `keywords` maps a keyword the call passes to
    the parameter it binds (a **kwargs entry to its copy)."""

    def __init__(self, params, positional, keywords, key, prologue):
        self.params = params            # the specialized function's parameters, in order
        self.positional = positional    # how many of them a call may bind by position
        self.keywords = keywords        # call keyword -> parameter
        self.key = key                  # (extra positional count, extra keyword names)
        self.prologue = prologue        # (vararg, [names]) and (kwarg, [(key, name)]) or None

    def rename(self, keywords):
        """A call's (keyword, value) pairs with each keyword as the parameter it binds."""
        return [(self.keywords.get(k, k), v) for k, v in keywords]


def has_variadic(fn):
    """Whether `fn` has *args, **kwargs or keyword-only parameters."""
    try:
        params = signature_of(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params)


def call_shape(fn, n_args, keywords):
    """The Shape of a call of `fn` with `n_args` positional arguments and keyword names
    `keywords` (the copies' names avoid every name the function's source uses)."""
    fdef, _ = parse_function(fn)
    taken = {n.id for n in gast.walk(fdef) if isinstance(n, gast.Name)}
    params = list(signature_of(fn).parameters.values())
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    vararg = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    kwarg = next((p.name for p in params if p.kind == p.VAR_KEYWORD), None)
    kwonly = [p.name for p in params if p.kind == p.KEYWORD_ONLY]
    n_extra = max(0, n_args - len(positional)) if vararg else 0
    extra_keys = sorted(k for k in keywords if k not in by_name) if kwarg else []
    taken = set(taken) | {p.name for p in params}

    def fresh(base):
        candidate = base
        while candidate in taken:
            candidate += "_"
        taken.add(candidate)
        return candidate

    var_names = [fresh(f"{vararg}_{i}") for i in range(n_extra)]
    kw_names = [fresh(f"{kwarg}_{k}") for k in extra_keys]
    mapping = {p: p for p in by_name}
    mapping.update(zip(extra_keys, kw_names))
    prologue = ((vararg, var_names) if vararg else None,
                (kwarg, list(zip(extra_keys, kw_names))) if kwarg else None)
    return Shape(positional + var_names + kwonly + kw_names, len(positional) + n_extra,
                 mapping, (n_extra, tuple(extra_keys)), prologue)


def prologue_statements(shape, where):
    """`args = (args_0, ...)` and `kwargs = {'k': kwargs_k, ...}`, located at `where`."""
    stmts = []
    packed, keyed = shape.prologue
    if packed is not None:
        target, names = packed
        stmts.append(assign(target, gast.Tuple(elts=[name(n) for n in names],
                                               ctx=gast.Load())))
    if keyed is not None:
        target, items = keyed
        stmts.append(assign(target, gast.Dict(keys=[const(k) for k, _ in items],
                                              values=[name(n) for _, n in items])))
    for s in stmts:
        gast.copy_location(s, where)
        for n in gast.walk(s):
            gast.copy_location(n, where)
    return stmts
