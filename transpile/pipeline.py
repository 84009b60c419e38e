"""The pipeline: what runs, in which order, for each transformation.

    front end (frontend/)      parse -> normalize (resolve, desugar, A-normal form; user
                               functions on first call) -> controlflow -> aliasing
    transformation             reverse/ (grad, vjp), forward.py (jvp), batching/ (vmap);
                               each meets calls of user functions and asks this module
                               for the callee's variant (`Build.reverse_pair`, ...)
    optimize.py                dead code, copies, constants (each pass calls it at its end)
    emit.py                    astor -> text -> compile under linecache

`generate` is the whole of it: normalize the entry function, run the transformation's
function below (`grad`, `vjp`, `jvp`, `vmap`, `transform`: a few pass calls each), emit
what the entry reaches. Order matters: controlflow needs normalized statements
(conditions are names); the derivative passes need one exit and no jumps; dead code
elimination runs when it is known which adjoints and saved values are really used. A
transformed function, once emitted, is an ordinary Python function with source, so
composing transformations is running the pipeline again on generated code.
"""
import copy
import inspect

import gast

from runtime.backend import allocating_with
from runtime.ragged import Ragged, ragged_error
from runtime.adjoints import check_cotangent
from runtime.trees import tree_leaves
from . import batching, emit, forward
from .emit import located
from .errors import TransformError
from .frontend import normalize_function
from .frontend.resolved import Static
from .ir import anno
from .ir.program import FunctionIR, Program, Snapshot, is_literal
from .ir.templates import dotted
from .reverse import gradients


def _located_call(entry, selects):
    """Call vmapped code; a TransformError it raises names the user's line it comes from
    (an argument of np.reshape that differs between examples is found when it runs).
    selects: the code reads through per-example masks, so its result is checked."""
    def call(t, args):
        try:
            out = entry(*args)
            return _not_ragged(out) if selects else out
        except TransformError as exc:
            new = located(exc)
            if new is exc:
                raise
            raise new from None
    return call


def _not_ragged(result):
    """`result`, unless vmapped code would return a selection of a mask that differs
    between examples (runtime.ragged.Ragged: it has no batched array)."""
    if type(result) is Ragged or isinstance(result, (tuple, list, dict)) and \
            any(type(leaf) is Ragged for leaf in tree_leaves(result)):
        raise ragged_error("a result made")
    return result


_UNBOUND = object()
_NUMBERS = frozenset((int, float, complex, bool, str))
# batched variants of one function before vmap gives up on a recursion whose argument
# specs never repeat (legitimate code asks for a handful)
_MOST_VARIANTS = 64
# rounds of a recursive variant's assumed result spec: growing as join says, then without
# nesting deeper, then taken as batched throughout
_GROWING_ROUNDS = 3
_FIXED_POINT_ROUNDS = 12


class Generated:
    """The compiled result of one transformation: text, entry function(s), calling glue."""

    global_reads = ()
    device_constants = False

    def globals_unchanged(self):
        """Whether every global name (or attribute of a module or object) the code was
        generated from still names the same object: generated code holds what they named
        then (a global array, a function defined again in a loop or a cell run again, a
        module's setting), so a rebound one needs new code. Checked on every call."""
        for scope, name, value in self.global_reads:
            current = scope.get(name, _UNBOUND) if type(scope) is dict else \
                getattr(scope, name, _UNBOUND)
            if current is not value and not (inspect.ismethod(value) and current == value) \
                    and not (isinstance(value, Snapshot) and value.matches(current)) \
                    and not (type(current) is type(value) and type(value) in _NUMBERS and
                             current == value):
                return False     # (a bound method read again is a new, equal object; so
        return True              # is a number computed again, `scale = 2 * base`)

    def __init__(self, text, env, entry, kind, options, nprefix, nuser, extra=None):
        self.text = text
        self.env = env
        self.entry = entry
        self.kind = kind
        self.options = options
        self.nprefix = nprefix
        self.nuser = nuser
        self.extra = extra or {}
        # only code that gathers per example can return a selection (runtime.ragged)
        selects = "rt.lane_gather(" in text
        if kind == "vmap":
            self.call = _located_call(entry, selects)
        elif kind in ("jit", "pmap") and selects:
            self.call = lambda t, args, _entry=entry: _not_ragged(_entry(*args))
        elif kind != "vjp":
            self.call = lambda t, args, _entry=entry: _entry(*args)

    def on_device(self, cupy):
        """This code with `np` bound to cupy, for calls with cupy arrays: every numpy call
        it makes then runs on the GPU, those no argument dispatches (np.zeros(shape), the
        user's np.linspace) included. Made once, on the first such call."""
        gen = self.__dict__.get("_on_device")
        if gen is None:
            env = emit.rebind_module(self.env, np=cupy)
            extra = dict(self.extra)
            if "bwd_name" in extra:
                extra["bwd"] = allocating_with(cupy, env[extra["bwd_name"]])
            gen = Generated(self.text, env, allocating_with(cupy, env[self.entry_name]),
                            self.kind, self.options, self.nprefix, self.nuser, extra)
            gen.__dict__.update({k: v for k, v in self.__dict__.items()
                                 if k in ("namespace", "entry_name", "functions")})
            gen.global_reads = self.global_reads
            self._on_device = gen
        return gen

    def call(self, t, args, nprimals=None):  # vjp: (out, vjp_fn[, aux])
        result = self.entry(*args)
        out, saved = result[0], result[-1]
        fn = VJPFunction(self.extra["bwd"], saved, self.nprefix,
                         self.nuser if nprimals is None else nprimals, self.text, out)
        if self.options.get("has_aux"):
            return out, fn, result[1]
        return out, fn


class VJPFunction:
    """vjp_fn(cotangent) -> tuple of cotangents, one per primal; `.source` shows the code."""

    def __init__(self, bwd, saved, nprefix, nuser, text, out=None):
        self.bwd, self.saved, self.nprefix, self.nuser = bwd, saved, nprefix, nuser
        self.source = text
        self.out = out

    def __call__(self, cotangent):
        if self.out is not None:
            check_cotangent(cotangent, self.out)
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


def generate(t, callees=None):
    """Run the pipeline for Transformed `t`; returns a Generated."""
    build = Build(t, callees)
    fir = build.program.functions[build.normalize_entry()]
    entry = TRANSFORMATIONS[t.kind](build, fir)
    return build.finish(entry)


# ---------------------------------------------------------------- one function per kind
# Each takes the Build and the entry function's IR, adds the generated definitions and
# returns the Entry: the name generated code is called by and the definitions it starts at.

def transform(build, fir):
    """tp.transform: the normalized function itself (emitted as readable code)."""
    return Entry(fir.name, [fir.node])


def grad(build, fir):
    """grad / value_and_grad: forward pass, seed, backward pass in one function."""
    opts = build.options
    argnums = [build.nprefix + build.argnum(a) for a in opts["argnums"]]
    name = build.fresh(("value_and_grad_" if opts["value"] else "grad_") + fir.name)
    node = gradients.grad_function(build.program, _fresh(fir), name, argnums, opts["has_aux"],
                                   opts["value"], build.reverse_pair, single=opts["single"],
                                   holomorphic=opts.get("holomorphic", False))
    return Entry(name, [build.add(node, first=True)])


def vjp(build, fir):
    """vjp: `f_fwd` returns the value and what the backward pass needs; `f_bwd` takes that
    and the cotangent."""
    fwd, bwd = build.fresh(fir.name + "_fwd"), build.fresh(fir.name + "_bwd")
    opts = build.options
    wrt = None
    if "active" in opts:         # adjoints only for the user's arguments marked active
        wrt = [p for i, p in enumerate(fir.params)
               if build.nprefix <= i < build.nprefix + build.nuser
               and opts["active"][i - build.nprefix]]
    else:
        build.reverse_pairs[(fir.name, None)] = (fwd, bwd)     # recursion calls this pair
    pair = gradients.vjp_functions(build.program, _fresh(fir), fwd, bwd, build.reverse_pair,
                                   has_aux=opts["has_aux"], finish=True, wrt=wrt,
                                   given_cotangent=_only_the_user_calls(fir, opts))
    for node in reversed(pair):
        build.add(node, first=True)
    return Entry(fwd, list(pair), bwd_name=bwd)


def jvp(build, fir):
    """jvp: the function and its tangents, forward mode, in one function."""
    opts = build.options
    name = build.fresh(fir.name + "_jvp")
    wrt = fir.params
    if "active" in opts:         # tangents only for the user's arguments marked active
        wrt = [p for i, p in enumerate(fir.params)
               if build.nprefix <= i < build.nprefix + build.nuser
               and opts["active"][i - build.nprefix]]
    else:
        build.jvp_variants[(fir.name, None)] = name         # recursion calls this one
    node = forward.jvp_function(build.program, _fresh(fir), name, wrt, build.jvp_variant,
                                has_aux=opts.get("has_aux", False),
                                given_tangents=_only_the_user_calls(fir, opts))
    return Entry(name, [build.add(node, first=True)])


def _only_the_user_calls(fir, opts):
    """Whether only the user passes this vjp's cotangent or jvp's tangents: a variant for
    some arguments ("active") is never a recursive call's, and a function calling no other
    is not recursive; otherwise a caller's own derivative pass may call it too."""
    return "active" in opts or not any(anno.get(n, anno.Anno.CALLEE) for n in gast.walk(fir.node))


def vmap(build, fir):
    """vmap: the function on a batch of examples, the batch axis carried through."""
    opts = build.options
    name = build.fresh("vmap_" + fir.name)
    node = batching.vmap_function(build.program, _fresh(fir), name, build.nprefix, build.nuser,
                                  dict(opts, in_axes=opts["in_axes"].value,
                                       out_axes=opts["out_axes"].value),
                                  build.batched_variant)
    return Entry(name, [build.add(node, first=True)])


TRANSFORMATIONS = {"transform": transform, "grad": grad, "vjp": vjp, "jvp": jvp, "vmap": vmap}


# ---------------------------------------------------------------- the state of one run

class Entry:
    """What a transformation made: the entry function's name, the definitions reachable
    code starts from, and the name of a backward function (vjp)."""

    def __init__(self, name, roots, bwd_name=None):
        self.name = name
        self.roots = roots
        self.bwd_name = bwd_name


class Build:
    """One run of the pipeline: the Program, the definitions generated so far, and the
    variants of called user functions made on demand (a derivative pass meets
    `y = g(x)` and asks for g's forward/backward pair, jvp or batched variant here; each
    is made once per argument pattern, so recursion finds the one being made)."""

    def __init__(self, t, callees):
        self.t = t
        self.options = t.options
        self.program = Program(callees)
        self.generated = []
        self.nprefix = len(t.root.prefix)
        self.nuser = len(t.signature.parameters)
        self.reverse_pairs = {}       # (ir name, mask) -> (fwd name, bwd name)
        # custom functions differentiated through their bodies here: the transposition of a
        # custom_jvp's rule, which may apply the function to the tangents (it is linear
        # there), would otherwise meet its own reverse rule, which is that transposition
        self.bodies_of = {id(c) for c in getattr(t.root.fn, "__transpile_bodies_of__", ())}
        self.jvp_variants = {}        # (ir name, mask) -> jvp function name
        self.batch_variants = {}      # (ir name, specs) -> [name, result spec, recursive]

    def fresh(self, hint):
        return self.program.namer.fresh(hint)

    def add(self, node, first=False):
        """A generated definition, kept for emission (the entry function goes first)."""
        if first:
            self.generated.insert(0, node)
        else:
            self.generated.append(node)
        return node

    def argnum(self, a):
        if not -self.nuser <= a < self.nuser:
            raise TypeError(f"argnums={a} is out of range: {self.t.__name__} takes "
                            f"{self.nuser} arguments")
        if a < 0 and any(p.default is not p.empty for p in self.t.signature.parameters.values()):
            # the API layer counts them for each call (Transformed._counted_from)
            raise TransformError(
                f"argnums={a} counts back from the last positional argument passed (as in "
                f"JAX), and {self.t.__name__} has parameters with defaults: where this "
                "gradient is transformed again, how many are passed is not known.\n"
                "  hint: give argnums counted from the first parameter.")
        return a % self.nuser

    def normalize_entry(self):
        """Normalize the function `t` was applied to; its IR name."""
        root = self.t.root
        inner = root.inner
        while inner is not None and inner.kind == "transform" and inner.root.inner is not None:
            inner = inner.root.inner
        bindings = self.t.bindings
        if inner is not None and inner.kind == "transform":
            # @tp.transform only parses: transform the user's own function, so comments
            # and errors point at the user's file
            fn, lift = inner.root.fn, True
        elif inner is not None:
            # code generated for the arguments this one is made for (functions, types)
            fn, lift = inner.specialized(bindings).entry_function(), False
        else:
            fn, lift = root.fn, True
        functions = {p: Static(v) for p, (kind, v) in bindings.items() if kind == "function"}
        types = {p: v for p, (kind, v) in bindings.items() if kind == "type"}
        return normalize_function(fn, self.program, lift_closure=lift,
                                  bound_functions=functions, argument_types=types,
                                  entry=True)[0]

    # -------------------------------------------------------------- variants of callees
    def reverse_pair(self, ir_name, mask=None):
        """(fwd, bwd) names for calls of `ir_name` whose arguments `mask` carry derivatives."""
        program = self.program
        if ir_name in program.custom and id(program.custom[ir_name]) in self.bodies_of:
            ir_name = normalize_function(program.custom[ir_name].fn, program)[0]
        if ir_name in program.custom and getattr(program.custom[ir_name], "recomputes", False):
            self._check_replayable(program.custom[ir_name])
        if ir_name in program.custom:     # the user's rules replace the body
            pair = program.custom[ir_name].reverse_rules(mask, program.callees.grad)
            if pair not in self.reverse_pairs:
                self.reverse_pairs[pair] = tuple(normalize_function(fn, program)[0]
                                                 for fn in pair)
            return self.reverse_pairs[pair]
        key = (ir_name, mask)
        if key not in self.reverse_pairs:
            fir = program.functions[ir_name]
            fwd, bwd = self.fresh(ir_name + "_fwd"), self.fresh(ir_name + "_bwd")
            self.reverse_pairs[key] = (fwd, bwd)
            wrt = fir.params if mask is None else [p for p, m in zip(fir.params, mask) if m]
            for node in gradients.vjp_functions(program, _fresh(fir), fwd, bwd,
                                                self.reverse_pair, finish=False, wrt=wrt):
                self.add(node)
        return self.reverse_pairs[key]

    def _check_replayable(self, custom):
        """A function whose forward pass the backward pass runs again (tp.checkpoint) must
        compute the same values again: a draw from a numpy generator (or np.random) would
        draw new numbers, and the derivative would be of another function."""
        program = self.program
        todo, seen = [normalize_function(custom.fn, program)[0]], set()
        while todo:
            name = todo.pop()
            if name in seen or name not in program.functions:
                continue
            seen.add(name)
            for n in gast.walk(program.functions[name].node):
                spelled = dotted(n.func) if isinstance(n, gast.Call) else None
                if spelled == "rt.draw" or spelled and spelled.startswith("np.random.") and \
                        spelled != "np.random.seed":
                    raise TransformError(
                        f"tp.checkpoint of {custom.__name__}: it draws random numbers ("
                        f"{'from a numpy Generator' if spelled == 'rt.draw' else spelled}), "
                        "and the backward pass, which runs it "
                        "again, would draw other numbers (the derivative would be of "
                        "another function).\n  hint: draw with tp.random and a key passed "
                        "in (the same key draws the same numbers), or draw outside the "
                        "checkpointed function and pass the numbers in.")
                if isinstance(n, gast.Name) and n.id in program.functions:
                    todo.append(n.id)

    def jvp_variant(self, ir_name, mask):
        """The forward-mode function of `ir_name` for arguments carrying tangents (`mask`)."""
        key = (ir_name, mask)
        program = self.program
        body = ir_name
        if key not in self.jvp_variants and ir_name in program.custom:
            fn = program.custom[ir_name].forward_rule(mask)
            if fn is not None:
                self.jvp_variants[key] = normalize_function(fn, program)[0]
            else:             # no rule of its own in forward mode (checkpoint): the body's
                body = normalize_function(program.custom[ir_name].fn, program)[0]
        if key not in self.jvp_variants:
            name = self.jvp_variants[key] = self.fresh(ir_name + "_jvp")
            callee = program.functions[body]
            wrt = [p for p, m in zip(callee.params, mask) if m]
            self.add(forward.jvp_function(program, _fresh(callee), name, wrt, self.jvp_variant))
        return self.jvp_variants[key]

    def batched_variant(self, ir_name, specs):
        """(name, result spec) of the batched variant of `ir_name` for argument `specs`."""
        if any(k[0] == ir_name and v[1] is None for k, v in self.batch_variants.items()):
            # a recursive call: its arguments' parts that no example differs in are read
            # as wholes, or `f((p, n))` in `f` would ask for a variant nested once more
            # at every level
            specs = tuple(batching.settled(s) for s in specs)
        key = (ir_name, specs)
        found = self.batch_variants.get(key)
        if found is not None:
            if found[1] is None:          # recursion: what the variant is assumed to return
                found[2] = True
                return found[0], found[3]
            return found[0], found[1]
        program = self.program
        axis_name = self.options.get("axis_name")
        custom_rule = program.custom.get(ir_name)
        own = custom_rule.batched(specs, axis_name, program.callees.vmap) \
            if custom_rule is not None else None
        if own is not None:
            # a function that batches itself (pmap: a pmap of the vmapped function), called
            # as batched variants are: (batch size, arguments), its result batched
            name = normalize_function(own, program)[0]
            self.batch_variants[key] = [name, True, False]
            return name, True
        if sum(k[0] == ir_name for k in self.batch_variants) >= _MOST_VARIANTS:
            # a recursive function whose arguments nest deeper at every level
            # (`p = (p, x)` with x batched): each level would be a variant of its own
            callee = program.functions.get(ir_name)
            label = callee.name if callee is not None else ir_name
            raise TransformError(
                f"vmap of {label}: its calls ask for more than {_MOST_VARIANTS} batched "
                f"variants (the latest for arguments batched as {specs!r}); a recursive "
                f"call whose arguments nest one level deeper each time cannot be batched. "
                f"Hint: pass the nested parts as separate arguments, or make them arrays.")
        name = self.fresh(ir_name + "_vmap")
        # [name, result spec (None while it is being made), recursive, assumed result]
        entry = self.batch_variants[key] = [name, None, False, False]
        if custom_rule is not None:
            # (arguments batched in part, which `batched` leaves): the function's own
            # body, whose value is the function's; a derivative pass running first sees
            # the rules, one running on this code would not (custom.py refuses that)
            plain = normalize_function(custom_rule.fn, program)[0]
            callee = program.functions[plain]
        else:
            callee = program.functions[ir_name]
        node, spec = self._recursive_fixed_point(key, callee, specs)
        entry[1] = spec
        self.add(node)
        return name, spec

    def _recursive_fixed_point(self, key, callee, specs):
        """(definition, result spec) of a variant being made. A recursive call inside it
        reads the result spec it is assumed to have, first nothing batched; while what the
        body returns differs, the variant is made again assuming the join of the two, so a
        part every level returns unbatched (numpy-ml's pad2D returns its padding widths
        with the padded array) stays unbatched. Variants made under an assumption that
        changed are made again too. After _GROWING_ROUNDS the assumption may not nest
        deeper (batching.widened_join), and after _FIXED_POINT_ROUNDS every part is
        assumed batched, which any result converts to."""
        entry = self.batch_variants[key]
        axis_name = self.options.get("axis_name")
        before_keys, before_nodes = set(self.batch_variants), len(self.generated)
        for rounds in range(_FIXED_POINT_ROUNDS + 1):
            if rounds == _FIXED_POINT_ROUNDS:
                entry[3] = True
            node, spec = batching.batched_function(self.program, _fresh(callee), entry[0],
                                                   specs, self.batched_variant, axis_name)
            if not entry[2]:
                return node, spec
            assumed = entry[3]
            grown = batching.join(assumed, spec) if rounds < _GROWING_ROUNDS else \
                batching.widened_join(assumed, spec)
            if grown == assumed:
                break
            # another round: the variants it made may have read this one's assumption
            for k in set(self.batch_variants) - before_keys:
                del self.batch_variants[k]
            del self.generated[before_nodes:]
            entry[2], entry[3] = False, grown
        if spec == assumed:
            return node, spec
        return batching.batched_function(self.program, _fresh(callee), entry[0], specs,
                                         self.batched_variant, axis_name, force_out=assumed)

    # -------------------------------------------------------------- emission
    def finish(self, entry):
        """Emit the entry function and everything it reaches as one module; compile it."""
        t, program = self.t, self.program
        if program.array_attributes:
            _check_record_fields(program, entry)
        if t.kind in ("transform", "grad") and not t.root.prefix and not t.root.extra_values():
            _set_defaults(entry.roots[0], t.defaults())
        functions = _reachable(program, entry.roots, self.generated)
        functions += [d for d in self.generated if d not in functions]
        qual = getattr(t.target, "__qualname__", getattr(t.target, "__name__", "function"))
        doc = f"{t.kind} of {qual}, generated by transpile. Edit the source function, not this."
        text = emit.module_source(functions, doc)
        env, _ = emit.compile_module(text, program.namespace, entry.name)
        extra = {}
        if entry.bwd_name is not None:
            extra = {"bwd_name": entry.bwd_name, "bwd": env[entry.bwd_name]}
        gen = Generated(text, env, env[entry.name], t.kind, t.options, self.nprefix,
                        self.nuser, extra)
        gen.namespace = dict(program.namespace)
        gen.entry_name = entry.name
        gen.functions = functions        # the emitted definitions (jit specializes them)
        gen.global_reads = list(program.global_reads.values())
        # a cupy array among the values the code holds (a global, a closed-over constant):
        # the code runs with np bound to cupy, as for cupy arguments
        gen.device_constants = any(type(v).__module__.startswith("cupy") and
                                   hasattr(v, "shape") for v in program.namespace.values())
        # code transformed again from this entry function holds what these globals named
        # too: normalizing it merges them into that program's reads (normalize_function)
        gen.entry.__transpile_global_reads__ = gen.global_reads
        return gen


def _check_record_fields(program, entry):
    """The code reads array attributes (`x.shape`, `x.T`) as numpy does (np.shape(x)): a
    namedtuple with a field of such a name (`Cfg(size=...)`) would be read as an array
    there, silently. One made in the code is refused now; the entry function checks its
    arguments when it runs (rt.check_record_fields)."""
    names = tuple(sorted(program.array_attributes))
    for value in program.namespace.values():
        fields = getattr(type(value), "_fields", None)
        # (the instance of None fields the code makes a namedtuple class from: one made
        # in the code; a namedtuple constant's fields are read by name, `CFG.size`)
        if isinstance(value, tuple) and fields and set(fields) & set(names) and \
                all(v is None for v in value):
            field = sorted(set(fields) & set(names))[0]
            raise TransformError(
                f"{type(value).__name__} has a field '{field}', and the transformed code reads "
                f"'.{field}' of values it knows only when it runs, as an array's attribute "
                f"(np.{'transpose' if field == 'T' else field}(x)).\n  hint: rename the field, "
                f"or read it by position.")
    fdef = entry.roots[0]
    params = [a.id for a in fdef.args.args]
    if not params or not isinstance(fdef, gast.FunctionDef):
        return
    check = gast.Expr(value=gast.Call(
        func=gast.Attribute(value=gast.Name(id="rt", ctx=gast.Load(), annotation=None,
                                            type_comment=None),
                            attr="check_record_fields", ctx=gast.Load()),
        args=[gast.Tuple(elts=[gast.Name(id=p, ctx=gast.Load(), annotation=None,
                                         type_comment=None) for p in params],
                         ctx=gast.Load()),
              gast.Constant(value=names, kind=None)], keywords=[]))
    fdef.body.insert(0, check)


def _set_defaults(fdef, defaults):
    """Give the entry function the user's literal default values (callable as written)."""
    params = [a.id for a in fdef.args.args]
    values = []
    for p in reversed(params):
        if p not in defaults or not is_literal(defaults[p]):
            break
        values.insert(0, gast.Constant(value=defaults[p], kind=None))
    fdef.args.defaults = values


def _fresh(fir):
    """A deep copy of an IR function, so a pass can rewrite it without touching the original."""
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


__all__ = ["generate", "Generated", "compile_ir_function"]
