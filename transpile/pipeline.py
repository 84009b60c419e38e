"""The pipeline, as one flat list of passes. Each transformation is a few lines here.

    parse        Python function -> gast FunctionDef              (parse.py)
    normalize    desugar + A-normal form, user calls on demand    (anf.py, frontend.py)
    controlflow  return/break/continue -> flags, one exit         (controlflow.py)
    reverse      forward + backward statements per function       (reverse.py, gradients.py)
    optimize     dead code elimination                            (optimize.py)
    emit         astor -> text -> compile under linecache         (emit.py)

Order matters: controlflow needs normalized statements (conditions are names); reverse
needs one exit and no jumps; dead code elimination runs last, when it is known which
adjoints and saved values are really used. A transformed function, once emitted, is an
ordinary Python function with source, so composing transformations is running this list
again on generated code.
"""
import functools

import gast

from . import batching, custom, emit, forward, gradients
from .errors import TransformError, located
from .frontend import normalize_function
from .program import Program


def _located_call(entry):
    """Call vmapped code; a TransformError it raises names the user's line it comes from
    (an argument of np.reshape that differs between examples is found when it runs)."""
    def call(t, args):
        try:
            return entry(*args)
        except TransformError as exc:
            new = located(exc)
            if new is exc:
                raise
            raise new from None
    return call


class Generated:
    """The compiled result of one transformation: text, entry function(s), calling glue."""

    def __init__(self, text, env, entry, kind, options, nprefix, nuser, extra=None):
        self.text = text
        self.env = env
        self.entry = entry
        self.kind = kind
        self.options = options
        self.nprefix = nprefix
        self.nuser = nuser
        self.extra = extra or {}
        if kind == "vmap":
            self.call = _located_call(entry)
        elif kind != "vjp":
            self.call = lambda t, args, _entry=entry: _entry(*args)

    def call(self, t, args, nprimals=None):  # vjp: (out, vjp_fn[, aux])
        result = self.entry(*args)
        out, saved = result[0], result[-1]
        fn = VJPFunction(self.extra["bwd"], saved, self.nprefix,
                         self.nuser if nprimals is None else nprimals, self.text)
        if self.options.get("has_aux"):
            return out, fn, result[1]
        return out, fn


class VJPFunction:
    """vjp_fn(cotangent) -> tuple of cotangents, one per primal; `.source` shows the code."""

    def __init__(self, bwd, saved, nprefix, nuser, text):
        self.bwd, self.saved, self.nprefix, self.nuser = bwd, saved, nprefix, nuser
        self.source = text

    def __call__(self, cotangent):
        grads = self.bwd(self.saved, cotangent)
        return tuple(grads[self.nprefix:self.nprefix + self.nuser])


def _reachable(program, roots, generated):
    """Names of IR functions referenced (transitively) from the generated definitions."""
    defs = {d.name: d for d in generated}
    order, seen, todo = [], set(), [d.name for d in roots]
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        node = defs.get(name)
        if node is None:
            fir = program.functions.get(name)
            if fir is None:
                continue
            node = fir.node
        order.append(node)
        for n in gast.walk(node):
            if isinstance(n, gast.Name) and (n.id in program.functions or n.id in defs) \
                    and n.id not in seen:
                todo.append(n.id)
    return order


def generate(t):
    """Run the pipeline for Transformed `t`; returns a Generated."""
    program = Program()
    root = t.root
    inner = root.inner
    while inner is not None and inner.kind == "transform" and inner.root.inner is not None:
        inner = inner.root.inner
    if inner is not None and inner.kind == "transform":
        # @tp.transform only parses: transform the user's own function, so comments and
        # errors point at the user's file
        fn, lift = inner.root.fn, True
    else:
        fn, lift = (inner.entry_function(), False) if inner is not None else (root.fn, True)
    entry_ir, params, _ = normalize_function(fn, program, lift_closure=lift)
    fir = program.functions[entry_ir]
    nprefix = len(root.prefix)
    nuser = len(t.signature.parameters)
    callee_pairs = {}
    generated = []

    def split_callee(ir_name, mask=None):
        """(fwd, bwd) names for calls of `ir_name` whose arguments `mask` carry derivatives."""
        if ir_name in program.custom:
            if ir_name not in callee_pairs:   # the user's rules replace the function's body
                pair = custom.vjp_pair(program.custom[ir_name])
                callee_pairs[ir_name] = tuple(normalize_function(fn, program)[0]
                                              for fn in pair)
            return callee_pairs[ir_name]
        key = (ir_name, mask)
        if key not in callee_pairs:
            fir = program.functions[ir_name]
            fwd = program.namer.fresh(ir_name + "_fwd")
            bwd = program.namer.fresh(ir_name + "_bwd")
            callee_pairs[key] = (fwd, bwd)
            wrt = fir.params if mask is None else [p for p, m in zip(fir.params, mask) if m]
            pair = gradients.vjp_functions(program, _fresh(fir), fwd, bwd, split_callee,
                                           finish=False, wrt=wrt)
            generated.extend(pair)
        return callee_pairs[key]

    jvp_variants = {}

    def callee_jvp(ir_name, mask):
        """The forward-mode function of `ir_name` for arguments carrying tangents (`mask`)."""
        key = (ir_name, mask)
        if key not in jvp_variants and ir_name in program.custom:
            fn = custom.jvp_function(program.custom[ir_name], mask)
            jvp_variants[key] = normalize_function(fn, program)[0]
        if key not in jvp_variants:
            name = program.namer.fresh(ir_name + "_jvp")
            jvp_variants[key] = name
            callee = program.functions[ir_name]
            wrt = [p for p, m in zip(callee.params, mask) if m]
            generated.append(forward.jvp_function(program, _fresh(callee), name, wrt,
                                                  callee_jvp))
        return jvp_variants[key]

    batch_variants = {}
    axis_name = t.options.get("axis_name")

    def callee_batched(ir_name, specs):
        """(name, result spec) of the batched variant of `ir_name` for argument `specs`."""
        key = (ir_name, specs)
        found = batch_variants.get(key)
        if found is not None:
            if found[1] is None:          # recursion: the variant returns a batched value
                found[2] = True
                return found[0], True
            return found[0], found[1]
        name = program.namer.fresh(ir_name + "_vmap")
        entry = batch_variants[key] = [name, None, False]
        if ir_name in program.custom:
            # batching computes the function's value: its own body (a custom derivative
            # rule matters to the derivative passes, which see it when they run first)
            plain = normalize_function(program.custom[ir_name].fn, program)[0]
            callee = program.functions[plain]
        else:
            callee = program.functions[ir_name]
        node, spec = batching.batched_function(program, _fresh(callee), name, specs,
                                               callee_batched, axis_name)
        if entry[2] and spec is not True:
            node, spec = batching.batched_function(program, _fresh(callee), name, specs,
                                                   callee_batched, axis_name, force_out=True)
        entry[1] = spec
        generated.append(node)
        return name, spec

    opts = t.options
    extra = {}
    if t.kind == "transform":
        entry_name = entry_ir
        roots = [fir.node]
    elif t.kind == "grad":
        argnums = [nprefix + a for a in opts["argnums"]]
        for a in opts["argnums"]:
            if not -nuser <= a < nuser:
                raise TypeError(f"argnums={a} is out of range: {t.__name__} takes {nuser} "
                                "arguments")
        argnums = [nprefix + (a % nuser) for a in opts["argnums"]]
        entry_name = program.namer.fresh(("value_and_grad_" if opts["value"] else "grad_")
                                         + fir.name)
        node = gradients.grad_function(program, _fresh(fir), entry_name, argnums,
                                       opts["has_aux"], opts["value"], split_callee,
                                       single=opts["single"])
        roots = [node]
        generated.insert(0, node)
    elif t.kind == "vjp":
        fwd = program.namer.fresh(fir.name + "_fwd")
        bwd = program.namer.fresh(fir.name + "_bwd")
        callee_pairs[(entry_ir, None)] = (fwd, bwd)
        pair = gradients.vjp_functions(program, _fresh(fir), fwd, bwd, split_callee,
                                       has_aux=opts["has_aux"], finish=True)
        generated[:0] = list(pair)
        roots = list(pair)
        entry_name = fwd
        extra["bwd_name"] = bwd
    elif t.kind == "jvp":
        entry_name = program.namer.fresh(fir.name + "_jvp")
        wrt = fir.params
        if "active" in opts:         # tangents only for the user's arguments marked active
            wrt = [p for i, p in enumerate(fir.params)
                   if nprefix <= i < nprefix + nuser and opts["active"][i - nprefix]]
        else:
            jvp_variants[(entry_ir, None)] = entry_name
        node = forward.jvp_function(program, _fresh(fir), entry_name, wrt, callee_jvp,
                                    has_aux=opts.get("has_aux", False))
        generated.insert(0, node)
        roots = [node]
    elif t.kind == "vmap":
        entry_name = program.namer.fresh("vmap_" + fir.name)
        node = batching.vmap_function(program, _fresh(fir), entry_name, nprefix, nuser,
                                      dict(opts, in_axes=opts["in_axes"].value,
                                           out_axes=opts["out_axes"].value),
                                      callee_batched)
        generated.insert(0, node)
        roots = [node]
    else:
        raise ValueError(t.kind)
    if t.kind in ("transform", "grad") and not root.prefix and not root.extra_values():
        _set_defaults(roots[0], t.defaults())
    functions = _reachable(program, roots, generated)
    for d in generated:
        if d not in functions:
            functions.append(d)
    qual = getattr(t.target, "__qualname__", getattr(t.target, "__name__", "function"))
    doc = f"{t.kind} of {qual}, generated by transpile. Edit the source function, not this."
    text = emit.module_source(functions, doc)
    env, _ = emit.compile_module(text, program.namespace, entry_name)
    if "bwd_name" in extra:
        extra["bwd"] = env[extra["bwd_name"]]
    gen = Generated(text, env, env[entry_name], t.kind, opts, nprefix, nuser, extra)
    gen.namespace = dict(program.namespace)
    gen.entry_name = entry_name
    return gen


def _set_defaults(fdef, defaults):
    """Give the entry function the user's literal default values (callable as written)."""
    from .program import is_literal
    params = [a.id for a in fdef.args.args]
    values = []
    for p in reversed(params):
        if p not in defaults or not is_literal(defaults[p]):
            break
        values.insert(0, gast.Constant(value=defaults[p], kind=None))
    fdef.args.defaults = values


def _fresh(fir):
    """A deep copy of an IR function, so a pass can rewrite it without touching the original."""
    import copy
    from .program import FunctionIR
    return FunctionIR(fir.name, copy.deepcopy(fir.node), fir.source, list(fir.params),
                      list(fir.freevars))


def compile_ir_function(program, ir_name):
    """Compile one IR function of `program` (and what it calls) into a Python function with
    readable source, so that it can be transformed like any user function."""
    fir = program.functions[ir_name]
    functions = _reachable(program, [fir.node], [])
    text = emit.module_source(functions, f"lifted {ir_name}, generated by transpile.")
    env, _ = emit.compile_module(text, program.namespace, ir_name)
    return env[ir_name]


__all__ = ["generate", "Generated", "functools"]
