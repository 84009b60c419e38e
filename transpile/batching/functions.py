"""The definitions vmap generates: the entry function (moves each mapped axis to the front,
runs the batched body, puts the batch axis where out_axes says) and batched variants of
called user functions."""
import copy as _copy

import gast

from .. import optimize, rules
from ..errors import TransformError
from ..ir import anno
from ..ir.anno import Anno
from ..ir.nodes import assign, call, const, funcdef, name, with_source
from ..ir.templates import dotted
from .specs import axes_spec, batched, flat, is_dict_mixed, keep, literal_ast, unbatched_spec
from .statements import Batching


def batched_function(program, fir, name_, in_specs, callee_batched, axis_name,
                     force_out=None):
    """`f_vmap(batch_size, params...)`: the batched variant of a user function for
    arguments of the given specs; returns (FunctionDef, result spec)."""
    bt = Batching(program, fir, in_specs, callee_batched, axis_name, helper=True)
    stmts, out, spec = bt.run()
    if force_out is not None and spec != force_out:   # a recursive variant: fully batched
        stmts.append(assign(bt.namer.fresh("result"), bt.convert(out, spec, force_out)))
        out, spec = name(stmts[-1].targets[0].id), force_out
    body = _quiet(optimize.dce(stmts + [gast.Return(value=_copy.deepcopy(out))], set()))
    fdef = funcdef(name_, [bt.size] + list(fir.params), body, fir.node)
    return with_source(fdef, fir), spec


def vmap_function(program, fir, name_, nprefix, nuser, opts, callee_batched):
    """The entry function of `vmap`: takes the user's arguments as they are, moves each
    mapped axis to the front, runs the batched body and puts the batch axis of each output
    where out_axes says."""
    params = list(fir.params)
    in_axes = opts["in_axes"]
    axes = [None] * len(params)
    for i, a in zip(range(nprefix, nprefix + nuser), in_axes):
        axes[i] = a
    specs = [axes_spec(a) for a in axes]
    bt = Batching(program, fir, specs, callee_batched, opts["axis_name"])
    for i, a in enumerate(axes):         # a dict mapped on some keys is made fully batched
        if isinstance(a, dict) and specs[i]:
            bt.in_specs[params[i]] = True
    mapped = [(p, a) for p, a in zip(params, axes) if a is not None]
    where = fir.name
    size_args = [gast.Tuple(elts=[name(p) for p, _ in mapped], ctx=gast.Load()),
                 literal_ast(tuple(a for _, a in mapped)),
                 literal_ast(tuple(p for p, _ in mapped)), const(opts["axis_size"]), const(where)]
    for node in size_args[:1]:
        anno.set(node, Anno.PRIM, (rules.lookup("tuple"), "tuple"))
    prologue = [assign(bt.size, call("rt.axis_size", size_args))]
    for p, a, sp in zip(params, axes, specs):
        if all(x is None or x == 0 for x in flat(a)):
            continue
        if isinstance(a, int) or not is_dict_mixed(a):
            prologue.append(assign(p, call("rt.move_batch_axis", [name(p), literal_ast(a)])))
    for p, a, sp in zip(params, axes, specs):
        if isinstance(a, dict) and sp and is_dict_mixed(a):
            moved = call("rt.move_batch_axis", [name(p), literal_ast(a)])
            prologue.append(assign(p, call("rt.broadcast_batch",
                                           [moved, name(bt.size), literal_ast(a)])))
    stmts, out, spec = bt.run()
    out_axes = opts["out_axes"]
    if _has_mixed_dict(out_axes):
        # a dict's spec is one bool for all its values, so such a leaf would come out
        # batched (n copies): refused rather than returned so
        raise TransformError(f"vmap of {fir.name}: out_axes={out_axes!r} maps some values "
                             "of a dict and leaves others unmapped (None), which vmap does "
                             "not support yet.\n  hint: return the unmapped values outside "
                             "the dict (a tuple output with out_axes=(..., None)).")
    want = axes_spec(out_axes)
    unsure = _check_out(bt, fir, spec, want, out_axes)
    result = _copy.deepcopy(out)
    if unsure:
        # out_axes=None on outputs the analysis thinks may differ between examples (a
        # recursive function's results are batched throughout): checked when it runs
        where = ", ".join(f"output{p}" for p in unsure)
        msg = (f"vmap of {fir.name}: out_axes={out_axes!r} says {where} is the same for every "
               "example, but it differs between examples.\n  hint: give it an integer "
               "out_axes.")
        result = call("rt.unbatch_out", [result, literal_ast(spec), literal_ast(want), const(msg)])
        spec = unbatched_spec(spec, want)
    if want is True:
        result = bt.convert(result, spec, True)
    elif isinstance(want, tuple) and spec != want and \
            not all(k is True for k in flat(keep(spec, want))):
        # batch the leaves out_axes maps; leaves it leaves unmapped stay as they are
        result = call("rt.broadcast_batch", [result, name(bt.size),
                                             literal_ast(keep(spec, want))])
    if out_axes not in (0, None):
        result = call("rt.batch_out", [result, literal_ast(out_axes)])
    body = _quiet(optimize.dce(prologue + stmts + [gast.Return(value=result)], set()))
    fdef = funcdef(name_, params, body, fir.node)
    return with_source(fdef, fir)


def _has_mixed_dict(axes):
    if isinstance(axes, dict):
        return is_dict_mixed(axes) or any(_has_mixed_dict(a) for a in axes.values())
    if isinstance(axes, (tuple, list)):
        return any(_has_mixed_dict(a) for a in axes)
    return False


def _check_out(bt, fir, spec, want, out_axes):
    """The paths of outputs that out_axes leaves unmapped but that may be batched."""
    unsure = []

    def visit(have, w, path):
        if w is False and batched(have):
            unsure.append(path)
        if isinstance(w, tuple) and (have is True or isinstance(have, tuple) and
                                     len(w) == len(have)):
            # (a tuple batched as a whole: every element may be)
            for k, (h, x) in enumerate(zip(have if have is not True else (True,) * len(w),
                                           w)):
                visit(h, x, f"{path}[{k}]")
    if isinstance(want, tuple) and isinstance(spec, tuple) and len(want) != len(spec):
        raise TransformError(f"vmap of {fir.name}: out_axes={out_axes!r} does not match the "
                             f"output's structure ({len(spec)} values)")
    visit(spec, want, "")
    return unsure


def _quiet(body):
    """Examples on a path they do not take compute values that are thrown away: their
    floating point warnings (0/0, overflow) mean nothing, so a function that selects
    between paths runs under numpy's errstate(all='ignore') (rt.errstate: cupy has none)."""
    if not _has_batched_control(body):
        return body
    ctx = call("rt.errstate", [])
    ctx.keywords = [gast.keyword(arg="all", value=const("ignore"))]
    return [gast.With(items=[gast.withitem(context_expr=ctx, optional_vars=None)],
                      body=body, type_comment=None)]


def _has_batched_control(body):
    for n in gast.walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, gast.Call) and dotted(n.func) == "rt.select":
            return True
    return False
