"""Specialize generated code to one call's kinds of arguments (the jit pass).

`specialize` runs, on a copy of the entry function (and of each helper a call of it
reaches with arguments of known kind):

    constants.py    static arguments become constants, `if`s they decide keep one branch,
                    `len` of known sequences is a number, short loops are unrolled
    shapes.py       shape and dtype of every value that does not depend on data
    helpers.py      runtime helpers that known shapes decide are done now, arithmetic
                    on arrays filled with one number done on the number
    trees.py        in straight-line code, saved values and adjoints of known lists
                    become names of their own
    fusion.py       elementwise chains -> one kernel each (kernels.py writes them)
    scalar_loops.py runs of statements with a loop on numbers only -> one function that
                    numba compiles (CPU, where numba is installed)
    emit            one module: the kernels, then the specialized functions

Everything else stays as it was: a loop or branch on array values is still Python, and a
value whose shape depends on data keeps the general code around it.
"""
import copy

import gast
import numpy as np

from runtime.kernels import numba_module

from .. import emit, optimize
from ..ir import anno
from ..ir.anno import Anno
from ..ir.naming import Namer
from ..ir.program import is_literal
from . import kernels as kernel_text
from .abstract import abstract_of
from .constants import (bind_statics, fold_constants, fold_literals, known_lengths,
                        literal_arguments, name_counts, stored_names, unroll)
from .common import merge_common_subexpressions
from .fusion import fuse
from .inline import inline_helpers, unpack_tuples
from .scalar_loops import compile_scalar_loops, inline_number_helpers
from .helpers import decide_helpers, donate, elide_copies, fold_filled, forward_copies
from .shapes import NOT_HELPER, environment_before, infer, stack_names
from .trees import (fold_stacks, fold_trees, propagate_copies, rename_values,
                    restore_names)

# Fuse on the CPU only from this many elements: below it a chain's numpy statements cost a
# few microseconds, about what calling a compiled kernel does. (Kernels below
# CpuKernel.small_elements compile only once they have run long enough to repay it.)
CPU_MIN_ELEMENTS = 1 << 13


class Specialization:
    """The code for one kind of arguments: module text, entry function, kernels."""

    def __init__(self, text, env, entry, kernels, backend, namespace):
        self.text = text
        self.namespace = namespace  # objects the code refers to by name (not literals)
        self.env = env
        self.entry = entry
        self.kernels = kernels      # [fusion.Kernel]
        self.backend = backend      # "numpy" or "cupy"
        # the jit API's check of a call's arguments against this code's kind (abstract.
        # argument_guard; None where it cannot make one): made on first use
        self.guard = False

    global_arrays = ()    # (array, shape, dtype) of the global arrays the code relies on

    def globals_fit(self):
        """Whether every global array whose shape the code was made for still has that
        shape and dtype (an array can be reshaped in place: `A.shape = (n * n,)`)."""
        return all(a.shape == shape and a.dtype == dtype
                   for a, shape, dtype in self.global_arrays)

    @property
    def source(self):
        return self.text

    def cuda_kernels(self):
        """(name, CUDA C source) of each fused kernel (cupy specializations)."""
        return [(k.name, self.env[k.name].source) for k in self.kernels
                if self.backend == "cupy"]


def specialize(gen, args, static, backend, label, min_elements=None, donated=()):
    """Specialize `gen` (a pipeline.Generated) for the full argument tuple `args`.

    donated: positions of arguments the caller gives up: a kernel may write its result
    into one (see `donate`).
    static: {position: value} of static arguments. backend: "numpy" or "cupy" (which
    module `np` is in the specialized module).
    """
    memo = {}
    for f in gen.functions:
        src = anno.get(f, Anno.SOURCE)
        if src is not None:
            memo[id(src)] = src        # shared, not copied: it only names the user's lines
    # the entry function is rewritten in a copy; called functions are copied where a call
    # is specialized (_specialize_calls), and emitted as they are for the other calls
    functions = [copy.deepcopy(f, dict(memo)) if f.name == gen.entry_name else f
                 for f in gen.functions]
    entry = next(f for f in functions if f.name == gen.entry_name)
    params = [a.id for a in entry.args.args]
    namespace = dict(gen.namespace)
    namer = Namer({n.id for f in functions for n in gast.walk(f) if isinstance(n, gast.Name)}
                  | set(namespace) | {f.name for f in functions} | {"np", "rt", "math"})

    bind_statics(entry, {params[i]: v for i, v in static.items()}, namespace, namer)
    if min_elements is None:
        min_elements = CPU_MIN_ELEMENTS if backend == "numpy" else 1
    ctx = _Context(functions, namer, memo, min_elements)
    ctx.namespace, ctx.backend = namespace, backend
    # loops on numbers compile whole where numba can compile them (scalar_loops.py)
    ctx.compile_numbers = backend == "numpy" and numba_module() is not None
    abstract = {p: abstract_of(args[i]) for i, p in enumerate(params) if i not in static}
    _specialize_function(entry, abstract, ctx)
    functions = _reachable(entry, functions + ctx.new)
    for f, kinds in ctx.finish:
        if f in functions:
            _finish(f, kinds, ctx)
    kernels = [k for k in ctx.kernels if k.owner in functions]
    scalar_loops = [r for r in ctx.scalar_loops if r.owner in functions]
    entry_kernels = [k for k in kernels if k.owner is entry]
    if donated and entry_kernels:
        donate(entry, entry_kernels, {params[i] for i in donated if i not in static})

    doc = f"jit of {label} for {describe_arguments(params, args, static)}, generated by " \
          f"transpile. Edit the source function, not this."
    text = emit.module_source(functions, doc)
    if backend == "cupy":
        text = text.replace("\nimport numpy as np\n",
                            "\nimport cupy as np    # specialized for cupy arrays\n", 1)
    if kernels or scalar_loops:
        head, sep, rest = text.partition("\nimport runtime as rt\n")
        text = head + sep + "".join("\n\n" + _kernel_definition(k, backend) for k in kernels) \
            + "".join("\n\n" + _scalar_loop_definition(r) for r in scalar_loops) + rest
    if backend == "cupy":
        import cupy
        namespace["np"] = cupy
    env, _ = emit.compile_module(text, namespace, f"jit_{gen.entry_name}")
    namespace.pop("np", None)
    spec = Specialization(text, env, env[entry.name], kernels, backend, namespace)
    spec.global_arrays = tuple(ctx.global_arrays.values())
    return spec


def _reachable(entry, functions):
    """The functions `entry` calls, directly or not (a call specialized in a later round
    leaves the copy made earlier unused), in their order, the entry first."""
    by_name = {f.name: f for f in functions}
    seen, todo = {entry.name}, [entry]
    while todo:
        for n in gast.walk(todo.pop()):
            if isinstance(n, gast.Name) and n.id in by_name and n.id not in seen:
                seen.add(n.id)
                todo.append(by_name[n.id])
    return [f for f in functions if f.name in seen]


class _Context:
    """What specializing one call shares across the functions it specializes."""

    def __init__(self, functions, namer, memo, min_elements):
        self.by_name = {f.name: f for f in functions}   # the generated functions
        self.namer, self.memo, self.min_elements = namer, memo, min_elements
        self.made = {}        # (function name, argument abstract values) -> new name
        self.origin = {}      # new name -> the generated function it specializes
        self.returns = {}     # new name -> abstract value of its result (None: unknown)
        self.new = []         # the specialized copies of called functions
        self.kernels = []
        self.scalar_loops = []    # [scalar_loops.ScalarRegion]
        self.compile_numbers = False
        self.depth = 0
        self.finish = []      # (function, parameter kinds) that _finish has yet to see
        self.namespace, self.backend = {}, "numpy"
        self.global_arrays = {}   # name -> (array, shape, dtype) the code relies on


# how deep calls of helpers are specialized (the entry is depth 0)
CALL_DEPTH = 4


def _specialize_function(fdef, abstract, ctx):
    """Specialize `fdef` (a copy, rewritten in place) for parameter abstract values
    `abstract`: what known kinds decide, and calls of helpers specialized (and written out
    here where they are straight-line code). Returns the abstract value of its result.
    What comes after (names, fusion, compiled loops) waits for `_finish`, which specialize
    runs on the functions still called once every call is decided."""
    call_kind = _call_kind(ctx)

    def inferred():
        return infer(fdef, _with_globals(fdef, abstract, ctx), ctx.returns, call_kind)
    fold_constants(fdef)
    if known_lengths(fdef, inferred()):
        fold_constants(fdef)
    if unroll(fdef.body):
        fold_literals(fdef)
    _decide(fdef, inferred, ctx)
    if inline_helpers(fdef, {f.name: f for f in ctx.new}, ctx.namer):
        for _ in range(8):
            # the tuples the helpers returned taken apart, and what that lets decide
            while unpack_tuples(fdef) | propagate_copies(fdef):
                pass
            fdef.body = optimize.dce(fdef.body, set())
            if not _decide(fdef, inferred, ctx):
                break
    ctx.finish.append((fdef, abstract))
    last = fdef.body[-1] if fdef.body else None
    return inferred().of(last.value) if isinstance(last, gast.Return) and \
        last.value is not None else None


def _decide(fdef, inferred, ctx):
    """Helpers decided by known kinds, filled arrays folded, calls specialized, until
    nothing changes (a decided helper lets inference see further); True if anything did."""
    any_change = False
    for _ in range(4):
        inference = inferred()
        changed = decide_helpers(fdef, inference)
        if changed:
            # a helper decided into the name it was given (`seq = rt.loop_sequence(xs)`
            # -> `seq = xs`): one name again, so that inference follows the list
            propagate_copies(fdef)
        changed = fold_filled(fdef, inference) or changed
        changed = _specialize_calls(fdef, inference, ctx) or changed
        if not changed:
            break
        any_change = True
        fold_constants(fdef)      # (a shape or rank decided: `if np.ndim(out) == 0`)
    return any_change


def _finish(fdef, abstract, ctx):
    """The rest of specializing `fdef`: saved values and adjoints named, dead code gone,
    elementwise chains fused (ctx.kernels), loops on numbers compiled (ctx.scalar_loops)."""
    call_kind = _call_kind(ctx)

    def inferred():
        return infer(fdef, _with_globals(fdef, abstract, ctx), ctx.returns, call_kind)
    fold_stacks(fdef, stack_names(fdef), ctx.namer)
    renamed = rename_values(fdef, ctx.namer)
    propagate_copies(fdef)
    fold_trees(fdef, inferred(), ctx.namer)
    fdef.body = optimize.dce(fdef.body, set())
    if elide_copies(fdef, inferred()):
        propagate_copies(fdef)
    while merge_common_subexpressions(fdef, inferred(), ctx.min_elements) and \
            propagate_copies(fdef):
        pass
    fdef.body = optimize.dce(fdef.body, set())
    forward_copies(fdef.body, name_counts(fdef))
    kernels = fuse(fdef, inferred(), ctx.min_elements, ctx.namer)
    # after fusion, which inlines only values assigned once
    restore_names(fdef, renamed, kernels)
    for k in kernels:
        k.owner = fdef
        k.refresh_comment()
    ctx.kernels.extend(kernels)
    if ctx.compile_numbers:
        helpers = {**ctx.by_name, **{f.name: f for f in ctx.new}}
        if inline_number_helpers(fdef, inferred(), helpers, ctx.namer):
            fdef.body = optimize.dce(fdef.body, set())
        regions = compile_scalar_loops(
            fdef, inferred(),
            lambda k: environment_before(fdef, _with_globals(fdef, abstract, ctx), k,
                                         ctx.returns, call_kind),
            ctx.namer)
        for r in regions:
            r.owner = fdef
        ctx.scalar_loops.extend(regions)


def _with_globals(fdef, abstract, ctx):
    """Parameter kinds `abstract`, and the kinds of the numpy arrays that `fdef` reads
    from the module's namespace (a global array `A` of the user's function, held by the
    generated code since it was transformed): shapes the specialization then relies on,
    so it records them (ctx.global_arrays) and is used only while they hold."""
    if ctx.backend != "numpy":
        return abstract
    kinds = dict(abstract)
    stored = stored_names(fdef)
    for n in gast.walk(fdef):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and \
                n.id not in kinds and n.id not in stored and \
                type(ctx.namespace.get(n.id)) is np.ndarray:
            value = ctx.namespace[n.id]
            kinds[n.id] = abstract_of(value)
            ctx.global_arrays[n.id] = (value, value.shape, value.dtype)
    return kinds


def _specialize_calls(fdef, inference, ctx):
    """Calls of generated helpers with some arguments of known kind call a copy of the
    helper specialized to them (made once per kind, recursion included); True if any."""
    if ctx.depth >= CALL_DEPTH:
        return False
    changed = False
    for n in gast.walk(fdef):
        if not (isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and
                ctx.origin.get(n.func.id, n.func.id) in ctx.by_name and not n.keywords and
                not any(isinstance(a, gast.Starred) for a in n.args)):
            continue
        # a call specialized in an earlier round is looked at again: inference may know
        # more of its arguments now (the result of another specialized call)
        helper = ctx.by_name[ctx.origin.get(n.func.id, n.func.id)]
        name = _specialized_name(helper, tuple(inference.of(a) for a in n.args), ctx,
                                 literal_arguments(n.args))
        if name is None or name == n.func.id:
            continue
        n.func = gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)
        changed = True
    return changed


def _specialized_name(helper, kinds, ctx, literals=()):
    """The name of the copy of generated function `helper` specialized to argument kinds
    `kinds` and literal arguments `literals` (made now if new: once per kind, recursion
    included), or None where it is not specialized (no kind known, *args or **kwargs,
    calls too deep)."""
    params = [a.id for a in helper.args.args]
    if len(params) != len(kinds) or all(k is None for k in kinds) or \
            helper.args.vararg or helper.args.kwarg or ctx.depth >= CALL_DEPTH:
        return None
    key = (helper.name, kinds, literals)
    if key not in ctx.made:
        name = ctx.made[key] = ctx.namer.fresh(helper.name)
        ctx.origin[name] = helper.name
        ctx.returns[name] = None          # unknown while it is being made (recursion)
        copy_ = copy.deepcopy(helper, dict(ctx.memo))
        copy_.name = name
        if literals:
            bind_statics(copy_, {params[i]: v for i, _, v in literals}, ctx.namespace,
                         ctx.namer)
        ctx.depth += 1
        try:
            ctx.returns[name] = _specialize_function(copy_, dict(zip(params, kinds)), ctx)
        finally:
            ctx.depth -= 1
        ctx.new.append(copy_)
    return ctx.made[key]


def _call_kind(ctx):
    """For inference: the kind of a generated helper's result for arguments of given
    kinds, specializing the helper to them when it runs into the call (a loop whose value
    goes through a helper, `x = step(x)`, settles only if each trip asks anew); NOT_HELPER
    for other calls."""
    def kind(spelling, kinds, literals):
        origin = ctx.origin.get(spelling, spelling)
        if origin not in ctx.by_name:
            return NOT_HELPER
        name = _specialized_name(ctx.by_name[origin], kinds, ctx, literals)
        return ctx.returns.get(name) if name is not None else None
    return kind


def describe_arguments(params, args, static):
    parts = []
    for i, (p, v) in enumerate(zip(params, args)):
        if i in static:
            parts.append(f"{p}={v!r}" if is_literal(v) else f"{p}=<{type(v).__name__}>")
        else:
            parts.append(f"{p}: {abstract_of(v)!r}" if abstract_of(v) is not None
                         else f"{p}: {type(v).__name__}")
    return ", ".join(parts)


def _scalar_loop_definition(region):
    name, python = region.fdef.name, region.python_fdef.name
    src = anno.get(region.owner, Anno.SOURCE)     # the user's lines, as comments
    return (emit.function_source(region.fdef, src) + "\n\n" +
            emit.function_source(region.python_fdef, src) +
            f"\n\n{name} = rt.ScalarLoop({name}, {python}, "
            f"weak_inputs={region.weak_inputs!r}, outputs={region.outputs!r}, "
            f"error_model={region.error_model!r})\n")


def _kernel_definition(kernel, backend):
    out = kernel.out
    if backend == "cupy":
        source = kernel_text.cuda_source(kernel)
        return (f"{kernel.name} = rt.CudaKernel({kernel.name!r}, r'''\n{source}''', "
                f"{kernel_text.input_kinds(kernel)!r}, {out.shape!r}, {out.dtype.name!r})\n")
    loop, checks_range = kernel_text.cpu_loop(kernel)
    checks = ", checks_range=True" if checks_range else ""
    return (loop + "\n\n" + kernel_text.numpy_fallback(kernel) +
            f"\n\n{kernel.name} = rt.CpuKernel({kernel.name}_loop, {kernel.name}_numpy, "
            f"{kernel_text.input_kinds(kernel)!r}, {out.shape!r}, np.{out.dtype.name}"
            f"{checks})\n")


