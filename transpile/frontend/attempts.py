"""try/except in transformed code, as an `if` on which handler (if any) catches.

    try:                                   caught = rt.caught(try_block, (LinAlgError,),
        L = np.linalg.cholesky(K)    ->                       (K,))
    except np.linalg.LinAlgError:          if caught == 0:
        L = np.linalg.cholesky(K + I)          L = np.linalg.cholesky(K)
                                           else:
                                               L = np.linalg.cholesky(K + I)

`try_block` is the try block as the user wrote it, compiled as a plain Python function of
the names it reads: rt.caught runs it (numpy only, no derivative) and says which handler
catches what it raises. The transformations then see an ordinary `if` and differentiate,
batch or compile the path taken (under vmap each example takes its own: rt.caught runs per
example). The block therefore runs twice on its way, which is why it may only bind names:
a write into an array, an augmented assignment or a call that changes its argument would
happen twice. A name the block binds before a statement that may raise must be bound by
every handler, or not be read outside the block: after a failure Python keeps its partial
value, which the `if` cannot know.
"""
import copy

import ast
import gast

from runtime.errors import TryBlock

from ..errors import error_at

# methods and functions that change an argument in place (run twice, they would add twice)
_CHANGING = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
             "popitem", "sort", "reverse", "fill", "put", "itemset", "resize", "at",
             "copyto", "place", "putmask", "fill_diagonal", "shuffle"}


def try_probe(node, src, namespace, is_local):
    """(the try block as a Python function (a runtime TryBlock), the local names it
    reads, in its parameters' order) for `try` statement `node`; a TransformError where the block does more than
    bind names, or binds a name a failure would leave half done. `namespace`: the
    function's globals and closure values; `is_local(name)`: a name of the function."""
    def error(at, message, hint):
        return error_at(at, src, message, hint, pass_name="normalize")
    block = node.body
    for n in (x for s in block for x in gast.walk(s)):
        target = None
        if isinstance(n, gast.AugAssign):
            target = n
        elif isinstance(n, (gast.Assign, gast.AnnAssign)):
            targets = n.targets if isinstance(n, gast.Assign) else [n.target]
            target = next((t for t in targets for x in gast.walk(t)
                           if isinstance(x, (gast.Subscript, gast.Attribute))), None)
        elif isinstance(n, gast.Call) and (
                isinstance(n.func, gast.Attribute) and n.func.attr in _CHANGING or
                isinstance(n.func, gast.Name) and n.func.id in _CHANGING or
                any(k.arg == "out" for k in n.keywords)):
            target = n
        elif isinstance(n, (gast.Delete, gast.Global, gast.Nonlocal, gast.Yield,
                            gast.YieldFrom, gast.FunctionDef, gast.Lambda)):
            target = n
        if target is not None:
            raise error(target, "in a try block of transformed code, only assignments to "
                        "names (and calls that change nothing) are supported: the block "
                        "runs twice (once to find what it raises).",
                        "compute the value in the try block, then write it into the array "
                        "after the try statement.")
    stored = _names(block, gast.Store)
    loaded = _names(block, gast.Load)
    # a name bound before the block's last statement is half done when a later one raises
    partial = _names(block[:-1], gast.Store) | (
        _names(block[-1:], gast.Store) if not isinstance(block[-1], (gast.Assign,
                                                                     gast.Return,
                                                                     gast.Expr)) else set())
    for name in sorted(partial):
        if all(name in _top_level_targets(h.body) for h in node.handlers):
            continue
        raise error(node, f"'{name}' is bound in this try block before a statement that "
                    "may raise, and the except block does not bind it again: after a "
                    "failure it would keep a value the transformation cannot follow.",
                    f"bind '{name}' in each except block too, or compute it before the try.")
    # a name both read and bound in the block: read only after the block binds it
    for name in sorted(loaded & stored):
        if not _bound_before_read(block, name):
            raise error(node, f"'{name}' is read and rebound in this try block.",
                        f"give the new value of '{name}' a name of its own.")
    inputs = sorted(n for n in loaded - stored if is_local(n))
    return _compiled(block, inputs, src, namespace), inputs


def _names(stmts, ctx):
    return {n.id for s in stmts for n in gast.walk(s)
            if isinstance(n, gast.Name) and isinstance(n.ctx, ctx)}


def _top_level_targets(stmts):
    return {t.id for s in stmts if isinstance(s, gast.Assign)
            for x in s.targets for t in gast.walk(x) if isinstance(t, gast.Name)}


def _bound_before_read(block, name):
    """Does a simple assignment at the block's top level bind `name` before anything in
    the block reads it?"""
    for s in block:
        reads = name in _names([s.value] if isinstance(s, gast.Assign) else [s], gast.Load)
        if reads:
            return False
        if isinstance(s, gast.Assign) and name in _top_level_targets([s]):
            return True
    return False


def _compiled(block, inputs, src, namespace):
    """The block as `def try_block(*inputs)`, its `break` and `continue` leaving,
    positioned at the user's lines (a traceback points there)."""
    body = [_leaving(copy.deepcopy(s)) for s in block] + [gast.Return(value=None)]
    fdef = gast.FunctionDef(
        name="try_block", args=gast.arguments(
            args=[gast.Name(id=n, ctx=gast.Param(), annotation=None, type_comment=None)
                  for n in inputs], posonlyargs=[], vararg=None, kwonlyargs=[],
            kw_defaults=[], kwarg=None, defaults=[]),
        body=body, decorator_list=[], returns=None, type_comment=None, type_params=[])
    gast.copy_location(fdef, block[0])
    module = gast.gast_to_ast(gast.Module(body=[fdef], type_ignores=[]))
    offset = src.line_of(block[0]) - block[0].lineno if hasattr(src, "line_of") else 0
    if offset:
        ast.increment_lineno(module, offset)
    ast.fix_missing_locations(module)
    scope = dict(namespace)
    exec(compile(module, src.filename, "exec"), scope)
    return TryBlock(scope["try_block"], ast.unparse(module))


def _leaving(s):
    """`s` with the block's own `break` and `continue` (of a loop around the try) made
    plain exits of the function; a `return` stays one."""
    if isinstance(s, (gast.Break, gast.Continue)):
        return gast.copy_location(gast.Return(value=None), s)
    if isinstance(s, (gast.For, gast.While)):
        s.orelse = [_leaving(x) for x in s.orelse]
        return s                      # its own break/continue stay its own
    for field in ("body", "orelse", "finalbody"):
        if isinstance(getattr(s, field, None), list):
            setattr(s, field, [_leaving(x) for x in getattr(s, field)])
    for h in getattr(s, "handlers", None) or []:
        h.body = [_leaving(x) for x in h.body]
    return s
