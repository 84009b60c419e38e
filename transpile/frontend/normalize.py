"""Normalize: user Python -> the IR that every transformation works on (A-normal form).

    x = np.tanh(x @ W + b)          matmul = x @ W
                              ->    add = matmul + b
                                    x = np.tanh(add)

The IR a function body may contain after this pass (and `controlflow`):
  * `name = atom`                                  copy
  * `name = <prim>(atom, ..., kw=atom)`            call of a table primitive, spelled
    canonically (`np.tanh`, `a + b`, `x[i]`, `(a, b)`); annotated Anno.PRIM
  * `name = user_fn(atom, ...)`                    call of another IR function (Anno.CALLEE)
  * `name[index] = atom`                           update of a local array/list/dict
  * `name.append(atom)`                            append to a local list
  * `rt.push(s, atom)` / `name = rt.pop(s)`        stacks in generated code
  * `if name: ... else: ...`
  * `for name in range(atom, atom, atom): ...`
  * `while name: ...` whose last Anno.COND_LEN statements recompute `name`
  * `return atom`   (a single one, at the end, once `controlflow` has run)
  * `print(...)` and other side-effect primitives as expression statements
Atoms are names and constants. Method calls (`x.sum(0)`), attributes (`x.T`), augmented
assignment, unpacking, comprehensions, conditional expressions, `and`/`or`, loops over
lists/arrays/zip/enumerate, lambdas and nested defs (lifted to IR functions whose free
variables become parameters), `functools.partial` and calls of transformed functions are all
desugared here. Anything else raises TransformError at the offending line.
"""
import ast
import builtins
import collections
import contextlib
import copy
import functools
import importlib
import inspect
import numbers
import warnings

import gast
import numpy as np

import runtime
from .. import rules
from ..errors import ArgumentDependent, TransformError, error_at
from ..ir import anno
from ..ir.anno import Anno
from ..ir.naming import TEMP_FOR_OP, Namer
from ..ir.nodes import assign as _assign, const as _const, prim_call
from ..ir.program import FunctionIR, Snapshot, is_literal, is_module
from ..ir.templates import binop_spelling, cmp_spelling, dotted
from . import aliasing, controlflow, layouts
from .callees import Callees
from .calls import CallNormalizer
from .parse import parse_function, signature_of
from .resolved import (LocalFunction, LocalFunctions, LocalPartial, LocalTemplate,
                       LocalTransformed, Static, assigned_names,
                       library_module, plain_object)
from .attempts import try_probe
from .desugar import desugar
from .generators import as_list_builder, is_generator
from .variadic import prologue_statements

ARRAY_ATTRS = {"T": "np.transpose", "shape": "np.shape", "ndim": "np.ndim", "size": "np.size",
               "dtype": "rt.dtype_of", "real": "np.real", "imag": "np.imag",
               "mT": "np.matrix_transpose"}
TEMP_FOR_PRIM = {"[]": "item", "np.shape": "shape", "len": "n", "<": "less", "<=": "less_eq",
                 ">": "greater", ">=": "greater_eq", "==": "equal", "!=": "not_equal",
                 "not": "negated", "is": "same", "is not": "not_same", "in": "contained",
                 "not in": "not_contained", "~": "inverted", "//": "floordiv", "%": "mod"}


def _index_items(index):
    """The items of `np.r_[index]` as a tuple expression, slices as `slice(...)` calls."""
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    return gast.copy_location(gast.Tuple(elts=[gast.copy_location(gast.Call(
        func=_name("slice"), args=[_const(None) if p is None else p
                                   for p in (item.lower, item.upper, item.step)], keywords=[]),
        item) if isinstance(item, gast.Slice) else item for item in items], ctx=gast.Load()),
        index)


def _name(id_, ctx=None):
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


class Normalizer(CallNormalizer):
    """Normalizes one user function (or lambda, or nested def) into an IR FunctionIR."""

    def __init__(self, program, source, globals_, closure, ir_name, lifted=()):
        self.program = program
        self.callees = program.callees if program.callees is not None else Callees()
        self.src = source
        self.globals = globals_
        self.closure = closure                # free var name -> value (for global functions)
        self.cells = {}                       # free var name -> its cell (set by the caller)
        self.lifted = list(lifted)            # free vars that became parameters
        self.ir_name = ir_name
        self.local_fns = {}                   # name -> LocalFunction / LocalPartial / Static
        self.iterators = {}                   # name -> (sequence name, position name)
        self.local_imports = {}
        self.params = set()
        self.namer = None
        self.locals = set()
        self.packed = {}                      # *args name -> its copies' names (one shape)
        self.keyed = {}                       # **kwargs name -> [(key, copy's name)]
        self.dict_keys = {}                   # name bound once to a dict display -> its keys
        self.argument_types = {}              # parameter -> the type of the value it gets
        self.loop_variables = {}              # name -> what it walks, inside its loop:
        # the item layout of an argument's sequence (typed_argument), or the sequence
        # (check_argument_dependent)
        self.pullbacks = {}                   # name -> Pullback of a tp.vjp made here
        self.entry = False                    # the function a transformation is applied to
        self.nested = False                   # a nested def or lambda (lifted)

    # ------------------------------------------------------------------ entry
    def run(self, fdef, shape=None):
        fdef = desugar(fdef, self.src, _all_names(fdef))
        if is_generator(fdef):          # a helper that yields: one that returns the list
            fdef = as_list_builder(fdef, self.src, _all_names(fdef))
        args = fdef.args
        if shape is not None:        # a copy for one call shape of *args / **kwargs
            params, written = shape.params, fdef
            fdef = gast.FunctionDef(
                name=fdef.name, args=fdef.args, decorator_list=fdef.decorator_list,
                body=prologue_statements(shape, args.vararg or args.kwarg or fdef) + fdef.body,
                returns=None, type_comment=None, type_params=[])
            gast.copy_location(fdef, written)
        elif (args.vararg or args.kwarg) and self.nested:
            raise error_at(args.vararg or args.kwarg, self.src,
                           f"{getattr(fdef, 'name', 'lambda')}: a nested function (or lambda) "
                           "with *args or **kwargs is not supported in transformed code.",
                           "define it at module level, where the functions the code calls "
                           "may take *args and **kwargs, or list its parameters.",
                           pass_name="normalize")
        elif args.vararg or args.kwarg:
            bad = args.vararg or args.kwarg
            raise error_at(bad, self.src, f"{self.src.name}: *args and **kwargs are not "
                           "supported in the function a transformation is applied to (the "
                           "functions it calls may have them).",
                           "list the parameters explicitly, or pass a tuple/dict as one "
                           "parameter (pytrees are supported).", pass_name="normalize")
        else:
            params = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
        self.params = set(params)
        self.locals = assigned_names(fdef.body) | set(params) | set(self.lifted)
        self.assignments = _assignment_counts(fdef.body, params)
        self.choices = self._function_choices(fdef, params)
        if shape is not None:      # `f(*args, **kwargs)` passes these copies on, unless the
            packed, keyed = shape.prologue      # body rebinds args or kwargs
            if packed is not None and self.assignments.get(packed[0], 0) <= 1:
                self.packed[packed[0]] = packed[1]
            if keyed is not None and self.assignments.get(keyed[0], 0) <= 1:
                self.keyed[keyed[0]] = keyed[1]
        self.appended = _appended_names(fdef)
        self.sequences = _sequence_names(fdef, params)
        self.name_counts = collections.Counter(
            n.id for n in gast.walk(fdef) if isinstance(n, gast.Name))
        self.namer = Namer(_all_names(fdef) | set(self.program.namespace) |
                           set(self.program.functions) | {"np", "rt", "math"})
        scope = (self.namer, self.locals)
        self.program.open_scopes.append(scope)
        try:
            body = self.block(fdef.body)
        finally:
            self.program.open_scopes.remove(scope)
        if not body or not isinstance(body[-1], gast.Return):
            body.append(gast.Return(value=_const(None)))
        all_params = params + [v for v in self.lifted if v not in params]
        node = gast.FunctionDef(
            name=self.ir_name,
            args=gast.arguments(args=[_name(p, gast.Param()) for p in all_params],
                                posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                kwarg=None, defaults=[]),
            body=body, decorator_list=[], returns=None, type_comment=None, type_params=[])
        gast.copy_location(node, fdef)
        return FunctionIR(self.ir_name, node, self.src, all_params, self.lifted)

    def normalize(self, fdef, shape=None):
        """The whole front end on `fdef`: A-normal form, one exit (`controlflow`), in-place
        writes resolved (`aliasing`)."""
        fir = self.run(fdef, shape)
        controlflow.transform(fir.node, self.namer)
        aliasing.resolve(fir, self.program.functions, self.program.namespace, self.namer)
        return fir

    def error(self, node, message, hint=None):
        return error_at(node, self.src, message, hint, pass_name="normalize")

    def function_ir(self, fn, node=None, bound_functions=None, extra_params=(), shape=None,
                    argument_types=None):
        """(ir_name, params, defaults) of the Python function `fn` in this program,
        normalized on its first use; `node`: the call, for errors that point at it;
        bound_functions, extra_params: a copy specialized to function arguments; shape: a
        copy for one call shape of *args/**kwargs; argument_types: a copy for arguments of
        these types (`normalize_function`)."""
        return normalize_function(fn, self.program, node, None if node is None else self.src,
                                  bound_functions=bound_functions, extra_params=extra_params,
                                  shape=shape, argument_types=argument_types)

    # ------------------------------------------------------------------ statements
    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, node):
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"'{type(node).__name__}' statements are not supported in "
                             "transformed code.", _STMT_HINTS.get(type(node).__name__,
                             "rewrite this part without it, or move it outside the "
                             "transformed function."))
        self.out = []
        result = method(node)
        return result

    def stmt_Pass(self, node):
        return []

    def stmt_With(self, node):
        """`with np.errstate(...)` (which vmapped code uses around lanes whose results are
        thrown away), `warnings.catch_warnings()`, `np.printoptions(...)` and
        `contextlib.nullcontext()` change no number: the body is transformed as if it were
        bare (the warnings filters set inside a catch_warnings block go with it: the
        warnings they silence are shown)."""
        silencing = False
        for item in node.items:
            manager = item.context_expr
            known = self.static(manager.func) if isinstance(manager, gast.Call) else None
            made_by = known.value if isinstance(known, Static) else None
            if item.optional_vars is not None or not any(
                    made_by is m for m in _NUMBERLESS_CONTEXTS) and \
                    dotted(getattr(manager, "func", manager)) != "rt.errstate":
                raise self.error(item.context_expr, "this with-block is not supported in "
                                 "transformed code.", _STMT_HINTS["With"])
            silencing = silencing or made_by is warnings.catch_warnings
        body = [s for s in node.body if not (silencing and self._sets_warning_filter(s))]
        return self.block(body)

    def _sets_warning_filter(self, s):
        if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)):
            return False
        known = self.static(s.value.func)
        return isinstance(known, Static) and any(
            known.value is f for f in (warnings.simplefilter, warnings.filterwarnings))

    def _function_choices(self, fdef, params):
        """Names bound to one of several functions known now, on different paths, and
        only called (`pool = np.max` in one branch, `pool = np.mean` in the other, then
        `pool(x)`): name -> those functions. The name then holds which one (0, 1, ...),
        and a call of it is an `if` over them (CallNormalizer.chosen_call)."""
        values, called, other, bindings = {}, set(), set(), {}
        for n in gast.walk(fdef):
            if isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                    isinstance(n.targets[0], gast.Name):
                known = self.static(n.value)
                fn = known.value if isinstance(known, Static) else None
                target = n.targets[0].id
                looked_up = self.code_lookup(n.value)
                if callable(fn) and not isinstance(fn, type) and not _user_object(fn):
                    values.setdefault(target, []).append((fn, n.value))
                elif looked_up:         # `act = ACTIVATIONS[kind]`: any of its functions
                    values.setdefault(target, []).extend((f, spelled)
                                                         for _, f, spelled in looked_up)
                else:
                    other.add(target)
                bindings[target] = bindings.get(target, 0) + 1
            elif isinstance(n, gast.Call) and isinstance(n.func, gast.Name):
                called.add(id(n.func))
        loads = {}
        for n in gast.walk(fdef):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                loads.setdefault(n.id, []).append(id(n) in called)
            elif isinstance(n, (gast.FunctionDef, gast.Lambda)) and n is not fdef:
                for inner in gast.walk(n):    # read in a nested function: a value there
                    if isinstance(inner, gast.Name):
                        loads.setdefault(inner.id, []).append(False)
        out = {}
        for name, fns in values.items():
            distinct = []            # (function, the expression first naming it)
            for fn, spelled in fns:
                if not any(fn is d for d, _ in distinct):
                    distinct.append((fn, spelled))
            if len(distinct) > 1 and name not in other and name not in params and \
                    self.assignments.get(name, 0) == bindings[name] and \
                    all(loads.get(name, [])):
                out[name] = distinct
        return out

    @staticmethod
    def maps_to_code(value):
        return _maps_to_code(value)

    def code_lookup(self, node):
        """[(key, function, `D[key]` with the key written)] for `D[key]` with a key known
        only when the code runs, of a dict `D` of functions known now whose keys are
        literals (`ACTIVATIONS[kind]`); else None."""
        if not isinstance(node, gast.Subscript) or isinstance(node.slice, gast.Constant):
            return None
        base = self.static(node.value)
        if not isinstance(base, Static) or not _maps_to_code(base.value) or \
                not all(type(k) in (str, int, bool) for k in base.value):
            return None
        found = []
        for key, fn in base.value.items():
            if callable(fn) and not isinstance(fn, type):
                spelled = gast.Subscript(value=copy.deepcopy(node.value), slice=_const(key),
                                         ctx=gast.Load())
                found.append((key, fn, gast.copy_location(spelled, node)))
        return found

    def code_lookup_chain(self, node, lookup, bodies):
        """The statements of an `if` over the keys of `lookup` (`D[key]`, code_lookup):
        `bodies[i]` where the key is the i-th function's; a key the dict does not map to
        a function raises KeyError, as `D[key]` would."""
        stmts = []
        key = self.atom(lookup.slice, stmts, hint="key")
        chain = [gast.Raise(exc=gast.Call(func=_name("KeyError"), args=[copy.deepcopy(key)],
                                          keywords=[]), cause=None)]
        for (k, _, _), body in reversed(list(zip(self.code_lookup(lookup), bodies))):
            test = gast.Compare(left=copy.deepcopy(key), ops=[gast.Eq()],
                                comparators=[_const(k)])
            chain = [gast.If(test=test, body=body, orelse=chain)]
        for s in chain:
            for n in gast.walk(s):
                gast.copy_location(n, node)
            stmts.extend(self.stmt(s))
        return stmts

    def stmt_Try(self, node):
        """try/except as an `if` on which handler catches (frontend/attempts.py); `else:`
        joins the path without an exception, `finally:` follows (an exception no handler
        catches leaves the transformed function anyway)."""
        kinds = []
        for h in node.handlers:
            if h.name is not None:
                raise self.error(h, "`except ... as name` is not supported in transformed "
                                 "code.", "drop `as name`: the exception object is not "
                                 "kept.")
            written = h.type.elts if isinstance(h.type, gast.Tuple) else [h.type]
            known = [self.static(t) if t is not None else Static(Exception) for t in written]
            kind = tuple(k.value if isinstance(k, Static) else None for k in known)
            kind = kind[0] if not isinstance(h.type, gast.Tuple) else kind
            if not (isinstance(kind, type) and issubclass(kind, BaseException) or
                    isinstance(kind, tuple) and all(isinstance(k, type) and
                                                    issubclass(k, BaseException)
                                                    for k in kind)):
                raise self.error(h.type, "an except clause in transformed code needs an "
                                 "exception class known while transforming.",
                                 "name the class: except np.linalg.LinAlgError:")
            kinds.append(kind)
        namespace = dict(self.globals)
        namespace.update({k: v for k, v in self.closure.items() if v is not None})
        probe, inputs = try_probe(node, self.src, namespace,
                                  lambda n: n in self.locals and n not in self.local_fns)
        stmts = []
        caught = self.namer.fresh("caught")
        self.locals.add(caught)
        values = gast.Tuple(elts=[_name(n) for n in inputs], ctx=gast.Load())
        check = prim_call("rt.caught", [_name(self.program.constant(probe, "try_block")),
                                        _name(self.program.constant(tuple(kinds),
                                                                    "handled")),
                                        self.atom(gast.copy_location(values, node), stmts)])
        stmts.append(_assign(caught, check, node))
        chain = []
        for k in reversed(range(len(node.handlers))):
            test = gast.Compare(left=_name(caught), ops=[gast.Eq()],
                                comparators=[_const(k + 1)])
            chain = [gast.If(test=test, body=node.handlers[k].body, orelse=chain)]
        lowered = gast.If(test=gast.Compare(left=_name(caught), ops=[gast.Eq()],
                                            comparators=[_const(0)]),
                          body=node.body + node.orelse, orelse=chain)
        for n in gast.walk(lowered):
            if getattr(n, "lineno", None) is None:
                gast.copy_location(n, node)
        return stmts + self.stmt(lowered) + self.block(node.finalbody)

    def stmt_Expr(self, node):
        v = node.value
        if isinstance(v, gast.Constant):
            return []  # docstring or bare constant
        if isinstance(v, gast.Call) and dotted(v.func) == "rt.check_record_fields" and \
                isinstance(v.args[0], gast.Tuple):
            # generated code transformed again for the functions passed to it: a function
            # has no fields to check
            v = copy.copy(v)
            v.args = [gast.Tuple(elts=[e for e in v.args[0].elts if not (
                isinstance(e, gast.Name) and e.id in self.local_fns)], ctx=gast.Load())] + \
                v.args[1:]
        if isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) \
                and v.func.attr == "append" and isinstance(v.func.value, gast.Name) \
                and v.func.value.id in self.locals and len(v.args) == 1:
            if v.func.value.id in self.params or v.func.value.id in self.lifted:
                raise self.error(v, f"appending to '{v.func.value.id}' changes a list the "
                                 "caller can see.", f"build a new list: {v.func.value.id} = "
                                 f"list({v.func.value.id}) first, or return the new items.")
            stmts = []
            item = self.atom(v.args[0], stmts)
            push = gast.Expr(value=gast.Call(func=gast.Attribute(
                value=_name(v.func.value.id), attr="append", ctx=gast.Load()),
                args=[item], keywords=[]))
            gast.copy_location(push, node)
            return stmts + [push]
        stmts = []
        value = self.expr(v, stmts)
        if isinstance(value, gast.Call) and anno.get(value, Anno.PRIM):
            prim = anno.get(value, Anno.PRIM)[0]
            if prim is not None and (prim.side_effect or prim.stateful):
                stmts.append(gast.copy_location(gast.Expr(value=value), node))
                return stmts
        if isinstance(value, (gast.Name, gast.Constant)):
            return stmts
        called = self.program.functions.get(anno.get(value, Anno.CALLEE)) \
            if isinstance(value, gast.Call) else None
        if called is not None and called.parameter_updates:
            # called for its effect, which can only be `p op= v` on a parameter: an array
            # the caller passed, updated in place (a number's update would be lost)
            update = called.parameter_updates[0]
            raise self.error(node, f"this call is made for its effect: {called.source.name} "
                             f"updates its argument in place (line "
                             f"{called.source.line_of(update)}), which transformed code "
                             "cannot follow.", "return the new value and bind it here "
                             "(w = step(w, g) with `return w - lr * g`).")
        tmp = self.namer.fresh("_")
        stmts.append(_assign(tmp, value, node))
        return stmts

    def stmt_Assign(self, node):
        stmts = []
        if len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            target = node.targets[0].id
            if target in self.choices:      # which of the functions: its number
                if isinstance(node.value, gast.Constant):   # (as code_lookup_chain sets it)
                    return [_assign(target, node.value, node)]
                looked_up = self.code_lookup(node.value)
                if looked_up:
                    numbers = [next(i for i, (f, _) in enumerate(self.choices[target])
                                    if f is fn) for _, fn, _ in looked_up]
                    return self.code_lookup_chain(
                        node, node.value, [[gast.Assign(targets=[_name(target, gast.Store())],
                                                        value=_const(k), type_comment=None)]
                                           for k in numbers])
                fn = self.static(node.value).value
                k = next(i for i, (f, _) in enumerate(self.choices[target]) if f is fn)
                return [_assign(target, _const(k), node)]
            if self._bind_local_function(target, node.value, stmts):
                return stmts
            if self._bind_iterator(target, node.value, stmts):
                return stmts
            mapping = self._function_dict_written(node.value)
            if mapping is not None and self.assignments.get(target, 0) <= 1:
                # `reg_types = dict(l1=reg.l1_reg, l2=reg.l2_reg)`: known here, as a global
                # dict of functions is (looked up by a key given when the code runs)
                self.local_fns[target] = Static(mapping)
                return stmts
            functions = self._functions_written(node.value, stmts)
            if functions is not None and self.assignments.get(target, 0) <= 1:
                # functions known while transforming: a tuple of them, as a global's is
                # (passed on to helpers too); with lambdas or nested defs, resolved here
                self.local_fns[target] = Static(tuple(f.value for f in functions)) \
                    if all(isinstance(f, Static) for f in functions) else \
                    LocalFunctions(functions)
                return stmts
            if isinstance(node.value, gast.Dict) and self.assignments.get(target, 0) <= 1 and \
                    all(isinstance(k, gast.Constant) and isinstance(k.value, str)
                        for k in node.value.keys):
                self.dict_keys[target] = tuple(k.value for k in node.value.keys)
            value = self.expr(node.value, stmts, hint=target)
            if isinstance(value, (Static, LocalFunction, LocalPartial, LocalTransformed)):
                if self.assignments.get(target, 0) <= 1:
                    self.local_fns[target] = value     # one binding: an alias, known here
                    return stmts
                # assigned elsewhere too (in another branch, say): the name holds a value
                # that depends on the path taken, so it cannot stand for this one
                if not (isinstance(value, Static) and _is_data(value.value)):
                    self.check_single_binding(target, node)
                value = self.static_atom(value.value, node.value)
            if (stmts and isinstance(stmts[-1], gast.Assign) and isinstance(value, gast.Name)
                    and stmts[-1].targets[0].id == value.id and value.id not in self.locals):
                stmts[-1].targets[0].id = target   # rename the last temporary to the target
                return stmts
            stmts.append(_assign(target, value, node))
            return stmts
        if self.vjp_assignment(node, stmts):
            return stmts
        if self._pairwise(node):
            for target, value in zip(node.targets[0].elts, node.value.elts):
                stmts += self.stmt_Assign(gast.copy_location(
                    gast.Assign(targets=[target], value=value, type_comment=None), node))
            return stmts
        value = self.atom(node.value, stmts)
        for target in node.targets:
            self.assign_target(target, value, stmts, node)
        return stmts

    def _function_dict_written(self, node):
        """The dict a display or `dict(...)` call of literal keys and functions known now
        writes (`{"l1": l1_reg, "l2": l2_reg}`, `dict(l1=reg.l1_reg)`), else None."""
        if isinstance(node, gast.Dict) and None not in node.keys:
            pairs = [(_literal_value(k), v) for k, v in zip(node.keys, node.values)]
        elif isinstance(node, gast.Call) and _is_builtin(self.static(node.func), "dict") and \
                not node.args and all(k.arg is not None for k in node.keywords):
            pairs = [(k.arg, k.value) for k in node.keywords]
        else:
            return None
        if not pairs:
            return None
        found = {}
        for key, value in pairs:
            known = self.static(value)
            if key is _UNKNOWN or not isinstance(known, Static) or \
                    not callable(known.value) or isinstance(known.value, type):
                return None
            found[key] = known.value
        return found

    def _functions_written(self, node, stmts):
        """The functions of a tuple or list display of functions only (`(np.tanh, relu)`,
        lambdas and nested defs included), resolved; else None."""
        if not isinstance(node, (gast.Tuple, gast.List)) or not node.elts:
            return None
        found = []
        for elt in node.elts:
            if isinstance(elt, gast.Lambda):
                found.append(self.expr(elt, stmts))
                continue
            known = self.static(elt)
            if isinstance(known, Static) and not (callable(known.value) and
                                                  not isinstance(known.value, type)):
                return None
            if not isinstance(known, (Static, LocalFunction, LocalPartial, LocalTransformed,
                                      LocalTemplate)):
                return None
            found.append(known)
        return found

    @staticmethod
    def _pairwise(node):
        """`a, (b, c) = x, y` whose values read none of the names in its targets: one
        assignment per pair, as if written so. A tuple of the values would tie them together (the
        tangents in a custom_jvp rule's `(x,), (x_dot,) = primals, tangents` made `x` a
        value to differentiate), and a function among them can be bound by its name."""
        if len(node.targets) != 1 or not isinstance(node.targets[0], (gast.Tuple, gast.List)) \
                or not isinstance(node.value, (gast.Tuple, gast.List)):
            return False
        targets, values = node.targets[0].elts, node.value.elts
        if len(targets) != len(values) or \
                any(isinstance(e, gast.Starred) for e in targets + values):
            return False
        # (every name in the targets: `x[0], x[1] = x[1], x[0]` writes into x, which the
        # values read; one pair at a time, x[1] would read the new x[0])
        written = {n.id for t in targets for n in gast.walk(t) if isinstance(n, gast.Name)}
        read = {n.id for v in values for n in gast.walk(v) if isinstance(n, gast.Name)}
        return not written & read

    # `it = iter(xs)` ... `next(it)`: the iterator is a position in xs, so every
    # transformation sees plain indexing (`xs[k]`, k counting up)
    def _bind_iterator(self, target, value, stmts):
        if not (isinstance(value, gast.Call) and len(value.args) == 1 and
                not value.keywords and _is_builtin(self.static(value.func), "iter")):
            return False
        items = self.namer.fresh(target + "_items")
        position = self.namer.fresh(target + "_position")
        stmts.append(_assign(items, self.atom(value.args[0], stmts), value))
        stmts.append(_assign(position, _const(0), value))
        self.iterators[target] = (items, position)
        return True

    def _next_item(self, node, stmts):
        """`next(it)` for an iterator bound by `_bind_iterator`."""
        arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
        if not isinstance(arg, gast.Name) or arg.id not in self.iterators:
            raise self.error(node, "next() in transformed code takes an iterator made here by "
                             "`it = iter(xs)`, and no default.",
                             "index the sequence instead: xs[k].")
        items, position = self.iterators[arg.id]
        item = self.namer.fresh(arg.id + "_item")
        stmts.append(_assign(item, prim_call("[]", [_name(items), _name(position)]), node))
        stmts.append(_assign(position, prim_call("+", [_name(position), _const(1)]), node))
        return _name(item)

    def stmt_AnnAssign(self, node):
        if node.value is None:
            return []
        return self.stmt_Assign(gast.copy_location(
            gast.Assign(targets=[node.target], value=node.value, type_comment=None), node))

    def starred_unpack(self, target, value, stmts, origin):
        """`first, *rest, last = seq`: seq[0], rt.to_list(seq[1:-1]) (a list, as Python
        gives), seq[-1], after checking that seq has at least the names without a star."""
        stars = [i for i, e in enumerate(target.elts) if isinstance(e, gast.Starred)]
        if len(stars) != 1 or not isinstance(target.elts[stars[0]].value, gast.Name):
            raise self.error(target, "starred unpacking takes one starred name here.",
                             "index the elements explicitly.")
        k = stars[0]
        after = len(target.elts) - k - 1
        line = self.src.line_of(origin)
        stmts.append(gast.copy_location(gast.Expr(value=prim_call("rt.check_length", [
            value, _const(k + after), _const(f"{self.src.filename}:{line} ({self.src.name})"),
            _const(True), _const("unpacking")])), origin))
        rest = gast.Slice(lower=_const(k) if k else None,
                          upper=_const(-after) if after else None, step=None)
        items = [(e, _const(i)) for i, e in enumerate(target.elts[:k])] + \
            [(target.elts[k].value, None)] + \
            [(e, _const(j - after)) for j, e in enumerate(target.elts[k + 1:])]
        for elt, index in items:
            if index is None:
                tmp = self.namer.fresh("rest")
                stmts.append(_assign(tmp, prim_call("[]", [value, rest]), origin))
                item = prim_call("rt.to_list", [_name(tmp)])
            else:
                item = prim_call("[]", [value, index])
            self._assign_item(elt, item, stmts, origin)

    def assign_target(self, target, value, stmts, origin):
        if isinstance(target, gast.Name):
            stmts.append(_assign(target.id, value, origin))
        elif isinstance(target, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in target.elts):
                self.starred_unpack(target, value, stmts, origin)
                return
            names = [e.id for e in target.elts if isinstance(e, gast.Name)]
            if isinstance(value, gast.Name) and len(names) == len(target.elts) and \
                    len(set(names)) == len(names) and value.id not in names:
                # `W, b = item` stays one statement: its adjoint is the tuple (dW, db)
                unpack = gast.Assign(targets=[gast.Tuple(elts=[_name(n, gast.Store())
                                                               for n in names],
                                                         ctx=gast.Store())],
                                     value=value, type_comment=None)
                gast.copy_location(unpack, origin)
                anno.set(unpack, Anno.ORIGIN, origin)
                stmts.append(unpack)
                return
            for i, elt in enumerate(target.elts):
                if isinstance(elt, gast.Name):
                    stmts.append(_assign(elt.id, prim_call("[]", [value, _const(i)]), origin))
                else:
                    tmp = self.namer.fresh("item")
                    stmts.append(_assign(tmp, prim_call("[]", [value, _const(i)]), origin))
                    self.assign_target(elt, _name(tmp), stmts, origin)
        elif isinstance(target, gast.Subscript):
            if not isinstance(target.value, gast.Name):
                base = self.atom(target.value, stmts)
                raise self.error(target, "writing into a subscript of a subscript or attribute "
                                 "is not supported.", f"assign to a local name first: "
                                 f"t = ...; t[...] = v", ) if base is not None else None
            name = target.value.id
            if name not in self.locals or name in self.lifted:
                raise self.error(target, f"'{name}' is not a local variable: writing into it "
                                 "would mutate an object the caller can see.",
                                 f"copy it first: {name} = {name}.copy()")
            index = self.index(target.slice, stmts)
            upd = gast.Assign(targets=[gast.Subscript(value=_name(name), slice=index,
                                                      ctx=gast.Store())],
                              value=value, type_comment=None)
            gast.copy_location(upd, origin)
            anno.set(upd, Anno.ORIGIN, origin)
            stmts.append(upd)
        elif isinstance(target, gast.Attribute):
            raise self.error(target, "assigning to an attribute mutates an object outside the "
                             "function, which transformed code cannot do.",
                             "return the new value instead.")
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__}.")

    def stmt_AugAssign(self, node):
        target = node.target
        op = binop_spelling(node.op)
        stmts = []
        if isinstance(target, gast.Name):
            if _sequence_kind(node.value, self.sequences) is not None:   # xs += [v]
                value = self.expr_BinOp(gast.copy_location(gast.BinOp(
                    left=_name(target.id), op=node.op, right=node.value), node), stmts)
            else:
                value = prim_call(op, [_name(target.id), self.atom(node.value, stmts)])
            stmts.append(_assign(target.id, value, node))
            # NumPy updates an array in place: `aliasing` gives other names for it the
            # new value, or refuses
            anno.set(stmts[-1], Anno.INPLACE, op)
            return stmts
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            index = self.index(target.slice, stmts)
            rhs = self.atom(node.value, stmts)
            old = self.namer.fresh(target.value.id + "_item")
            stmts.append(_assign(old, prim_call("[]", [_name(target.value.id), index]), node))
            new = self.namer.fresh(TEMP_FOR_OP.get(type(node.op).__name__, "t"))
            stmts.append(_assign(new, prim_call(op, [_name(old), rhs]), node))
            self.assign_target(target, _name(new), stmts, node)
            return stmts
        raise self.error(node, "augmented assignment to this target is not supported.")

    def stmt_If(self, node):
        stmts = []
        test = self.atom(node.test, stmts, hint="cond")
        if isinstance(test, gast.Constant):
            return stmts + self.block(node.body if test.value else node.orelse)
        new = gast.If(test=test, body=self.branch(node.body), orelse=self.branch(node.orelse))
        gast.copy_location(new, node)
        stmts.append(new)
        return stmts

    def branch(self, stmts):
        """A branch of an `if` on a value known only when the code runs. A statement here
        that cannot be transformed (plotting under `if ax:`, logging) is refused when the
        branch runs, with the error it would have raised now: the statement becomes
        `rt.raise_exception(error)` and the rest of the branch, which cannot run after it,
        is dropped."""
        out = []
        for s in stmts:
            try:
                out.extend(self.stmt(s))
            except ArgumentDependent:
                raise         # the API layer generates code for the argument instead
            except TransformError as error:
                refusal = prim_call("rt.raise_exception",
                                    [self.static_atom(error, s)])
                out.append(gast.copy_location(gast.Expr(value=refusal), s))
                break
        return out

    def stmt_While(self, node):
        stmts = []
        cond_stmts = []
        test = self.atom(node.test, cond_stmts, hint="cond")
        cond = self.namer.fresh("cond") if not isinstance(test, gast.Name) or \
            test.id in self.locals else test.id
        if not (cond_stmts and isinstance(test, gast.Name) and test.id == cond):
            cond_stmts.append(_assign(cond, test, node.test))
        body = self.block(node.body)
        recompute = [_copy_stmt(s) for s in cond_stmts]
        loop = gast.While(test=_name(cond), body=body + recompute, orelse=[])
        anno.set(loop, Anno.COND_LEN, len(recompute))
        gast.copy_location(loop, node)
        return stmts + cond_stmts + [loop]

    def stmt_For(self, node):
        known = self.static(node.iter)
        if isinstance(known, Static) and _holds_code(known.value):
            return self.unrolled(node, [Static(item) for item in known.value])
        if isinstance(known, LocalFunctions):
            return self.unrolled(node, known.items)
        stmts = []
        it = node.iter
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute) and \
                it.func.attr in ("items", "keys", "values") and not it.args and \
                not it.keywords:
            # `for k, v in d.items()`: over the list of the view (the loop walks by index)
            it = gast.copy_location(gast.Call(func=gast.Name(
                id="list", ctx=gast.Load(), annotation=None, type_comment=None),
                args=[it], keywords=[]), it)
        elif isinstance(it, gast.Call) and self.static(it.func) is not None and \
                isinstance(self.static(it.func), Static) and \
                self.static(it.func).value is builtins.enumerate and (
                    len(it.args) == 2 and not it.keywords or
                    len(it.args) == 1 and [k.arg for k in it.keywords] == ["start"]) and \
                isinstance(node.target, gast.Tuple) and len(node.target.elts) == 2:
            # `for i, x in enumerate(xs, start)` (or start=...): i counts from start
            start = it.args[1] if len(it.args) == 2 else it.keywords[0].value
            index = self._fresh_local("i")
            counted = gast.For(target=gast.Tuple(elts=[_name(index, gast.Store()),
                                                       node.target.elts[1]],
                                                 ctx=gast.Store()),
                               iter=gast.copy_location(gast.Call(
                                   func=it.func, args=it.args[:1], keywords=[]), it),
                               body=[gast.copy_location(gast.Assign(
                                   targets=[node.target.elts[0]], value=gast.BinOp(
                                       left=_name(index), op=gast.Add(), right=start),
                                   type_comment=None), node)] + node.body,
                               orelse=[], type_comment=None)
            return self.stmt_For(gast.copy_location(counted, node))
        func = self.static(it.func) if isinstance(it, gast.Call) else None
        fn = func.value if isinstance(func, Static) else None
        target = node.target
        prefix = []
        spelling = "range"
        walks = (None, None)          # (loop variable, the sequence whose items it takes)
        ranged = self._range_like(it, fn)
        if ranged is not None:
            range_args, spelling = ranged
            if not 1 <= len(range_args) <= 3:
                raise self.error(it, "range() takes 1 to 3 positional arguments here.")
            bounds = [self.atom(a, stmts) for a in range_args]
            if isinstance(target, gast.Name):
                index = target.id
            else:
                index = self.namer.fresh("i")
                self.assign_target(target, _name(index), prefix, node)
        elif fn is builtins.enumerate and len(it.args) == 1 and not it.keywords and \
                isinstance(it.args[0], gast.Call) \
                and isinstance(self.static(it.args[0].func), Static) \
                and self.static(it.args[0].func).value is builtins.zip \
                and isinstance(target, gast.Tuple) and len(target.elts) == 2:
            # for i, (a, b) in enumerate(zip(xs, ys))
            inner = gast.For(target=target.elts[1], iter=it.args[0], body=[], orelse=[],
                             type_comment=None)
            zipped = self.stmt_For(gast.copy_location(inner, node))
            loop = zipped[-1]
            self.assign_target(target.elts[0], _name(loop.target.id), prefix, node)
            loop.body = loop.body + prefix + self.block(node.body)
            return stmts + zipped
        elif fn is builtins.zip and not it.keywords and isinstance(target, gast.Tuple) and \
                len(target.elts) == len(it.args) and any(
                    isinstance(self.static(a), Static) and _holds_code(self.static(a).value)
                    for a in it.args):
            return self.zip_unrolled(node)
        elif fn is builtins.zip and len(it.args) == 1 and isinstance(it.args[0], gast.Starred) \
                and isinstance(target, gast.Tuple) and not it.keywords:
            # for a, b, c in zip(*seq): zip(seq[0], seq[1], seq[2]), once seq has 3 items
            seq = self._length_checked(it.args[0].value, len(target.elts), node, stmts)
            parts = [gast.copy_location(gast.Subscript(value=seq, slice=_const(k),
                                                       ctx=gast.Load()), it)
                     for k in range(len(target.elts))]
            spelled = gast.For(target=target, body=node.body, orelse=[], type_comment=None,
                               iter=gast.copy_location(gast.Call(func=it.func, args=parts,
                                                                 keywords=[]), it))
            return stmts + self.stmt_For(gast.copy_location(spelled, node))
        elif fn is builtins.enumerate and len(it.args) == 1 and not it.keywords and \
                isinstance(target, gast.Tuple) and len(target.elts) == 2 and \
                isinstance(target.elts[1], gast.Name) and \
                isinstance(self.typed_argument(it.args[0]), layouts.SequenceLayout) and \
                not layouts.one_object_type(self.typed_argument(it.args[0]).items):
            return self.items_unrolled(node, self.typed_argument(it.args[0]).items,
                                       it.args[0], *target.elts)
        elif fn is builtins.enumerate or fn is builtins.zip:
            if it.keywords:
                raise self.error(it, f"{fn.__name__}() with keyword arguments is not supported.")
            seqs = [self._walked(self.atom(a, stmts, hint="seq"), it, stmts)
                    for a in it.args]
            if fn is builtins.enumerate and len(it.args) != 1:
                raise self.error(it, "enumerate(xs, start) is not supported.",
                                 "add the offset to the index in the loop body.")
            n = self.namer.fresh("n")
            lens = []
            for s in seqs:
                ln = self.namer.fresh("n")
                stmts.append(_assign(ln, prim_call("len", [s]), it))
                lens.append(_name(ln))
            shortest = lens[0]
            for ln in lens[1:-1]:           # min is binary: zip(a, b, c) nests it
                tmp = self.namer.fresh("n")
                stmts.append(_assign(tmp, prim_call("min", [shortest, ln]), it))
                shortest = _name(tmp)
            stmts.append(_assign(n, shortest if len(lens) == 1 else
                                 prim_call("min", [shortest, lens[-1]]), it))
            bounds = [_name(n)]
            index = self.namer.fresh("i")
            items = [prim_call("[]", [s, _name(index)]) for s in seqs]
            if fn is builtins.enumerate:
                if not (isinstance(target, gast.Tuple) and len(target.elts) == 2):
                    raise self.error(target, "unpack enumerate as `for i, x in enumerate(xs)`.")
                self.assign_target(target.elts[0], _name(index), prefix, node)
                self._assign_item(target.elts[1], items[0], prefix, node)
                walks = (target.elts[1], it.args[0])
            else:
                if not (isinstance(target, gast.Tuple) and len(target.elts) == len(items)):
                    raise self.error(target, "unpack zip as `for a, b in zip(xs, ys)`.")
                for elt, item in zip(target.elts, items):
                    self._assign_item(elt, item, prefix, node)
        else:
            typed = self.typed_argument(it)
            if isinstance(typed, layouts.SequenceLayout) and isinstance(target, gast.Name) \
                    and not layouts.one_object_type(typed.items):
                return stmts + self.items_unrolled(node, typed.items)
            walks = (target, it)
            seq = self._walked(self.atom(it, stmts, hint="seq"), it, stmts)
            n = self.namer.fresh("n")
            stmts.append(_assign(n, prim_call("len", [seq]), it))
            bounds = [_name(n)]
            index = self.namer.fresh("i")
            self._assign_item(target, prim_call("[]", [seq, _name(index)]), prefix, node)
        with self._loop_variable(node, *walks):
            body = prefix + self.block(node.body)
        loop = gast.For(target=_name(index, gast.Store()),
                        iter=prim_call(spelling, bounds), body=body, orelse=[],
                        type_comment=None)
        gast.copy_location(loop, node)
        stmts.append(loop)
        return stmts

    def unrolled(self, node, items):
        """`for layer in self.layers:` over a sequence of functions or models known while
        transforming: the body once per item, with the loop variable naming that item
        (calls through it are then resolved as any call)."""
        if not isinstance(node.target, gast.Name):
            raise self.error(node.target, "unpacking the items of a sequence of functions "
                             "is not supported.", "loop over one item at a time.")
        if any(isinstance(n, (gast.Break, gast.Continue)) for s in node.body
               for n in gast.walk(s)):
            raise self.error(node, "break/continue in a loop over functions is not "
                             "supported.", "use a flag variable, or an if around the body.")
        name = node.target.id
        if name in self.locals and name not in self.local_fns and any(
                isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)
                for s in node.body for n in gast.walk(s)):
            raise self.error(node.target, f"'{name}' is assigned in the loop over functions.")
        out = []
        with self._restored(self.local_fns, name):
            for item in items:
                self.local_fns[name] = item
                out.extend(self.block([_copy_stmt(s) for s in node.body]))
        return out

    @staticmethod
    @contextlib.contextmanager
    def _restored(table, name):
        """What `name` stands for in `table` (local_fns, loop_variables), put back after a
        loop that binds it for its body (an unrolled one: to each item)."""
        before = table.get(name)
        try:
            yield
        finally:
            if before is None:
                table.pop(name, None)
            else:
                table[name] = before

    def items_unrolled(self, node, items, iter_=None, index=None, target=None):
        """`for layer in self.layers:` over the items of an argument whose layout holds
        objects of different classes (or functions): the body once per item, the loop
        variable typed by that item's layout, so each trip calls its own class's methods.
        (`for k, layer in enumerate(self.layers)`: iter_ the sequence, index `k`.)"""
        if any(isinstance(n, (gast.Break, gast.Continue)) for s in node.body
               for n in gast.walk(s)):
            raise self.error(node, "break/continue in a loop over objects of different "
                             "classes is not supported.",
                             "use a flag variable, or an if around the body.")
        name = (target or node.target).id
        stmts = []
        seq = self._pinned(self.atom(iter_ or node.iter, stmts, hint="seq"), node, stmts)
        if isinstance(seq, gast.Name):
            self.locals.add(seq.id)
        with self._restored(self.local_fns, name):
            for k, item in enumerate(items):
                if index is not None:
                    self.assign_target(index, _const(k), stmts, node)
                self.local_fns.pop(name, None)
                if isinstance(item, layouts.FunctionItem):
                    self.local_fns[name] = Static(item.fn)
                else:
                    value = gast.copy_location(gast.Subscript(
                        value=seq, slice=_const(k), ctx=gast.Load()), node.iter)
                    stmts.extend(self.stmt(gast.copy_location(gast.Assign(
                        targets=[_name(name, gast.Store())], value=value, type_comment=None),
                        node)))
                with self._loop_variable(node, _name(name), item):
                    stmts.extend(self.block([_copy_stmt(s) for s in node.body]))
        return stmts

    @contextlib.contextmanager
    def _loop_variable(self, loop, target, walks):
        """While `loop`'s body is normalized, what its variable `target` (a Name, else
        nothing is known) takes: an item layout, or the items of expression `walks`. Not
        where the body rebinds it."""
        name = target.id if isinstance(target, gast.Name) else None
        if name is None or walks is None or any(
                isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)
                for s in loop.body for n in gast.walk(s)):
            yield
            return
        if isinstance(walks, gast.AST):
            typed = self.typed_argument(walks)
            if isinstance(typed, layouts.SequenceLayout):     # of one layout (stmt_For)
                walks = typed.items[0]
        with self._restored(self.loop_variables, name):
            self.loop_variables[name] = walks
            yield

    def zip_unrolled(self, node):
        """`for layer, p in zip(self.layers, params):` where some sequences hold functions
        or models known while transforming: the body once per item of the shortest of
        those, their names naming the items, the others' items read by index (a data
        sequence shorter than that is refused when the code runs: Python would stop
        early)."""
        it, target = node.iter, node.target
        if any(isinstance(n, (gast.Break, gast.Continue)) for s in node.body
               for n in gast.walk(s)):
            raise self.error(node, "break/continue in a loop over functions is not "
                             "supported.", "use a flag variable, or an if around the body.")
        stmts, known, data = [], {}, {}
        for k, (elt, arg) in enumerate(zip(target.elts, it.args)):
            found = self.static(arg)
            if isinstance(found, Static) and _holds_code(found.value):
                if not isinstance(elt, gast.Name) or any(
                        isinstance(n, gast.Name) and n.id == elt.id and
                        isinstance(n.ctx, gast.Store) for s in node.body for n in gast.walk(s)):
                    raise self.error(elt, "the name of a sequence of functions in a zip must "
                                     "be a plain name the loop does not assign.")
                known[k] = list(found.value)
        trips = min(len(items) for items in known.values())
        for k, arg in enumerate(it.args):
            if k not in known:
                data[k] = self._length_checked(arg, trips, node, stmts, at_least=True)
        saved = {target.elts[k].id: self.local_fns.get(target.elts[k].id) for k in known}
        try:
            for trip in range(trips):
                for k, items in known.items():
                    self.local_fns[target.elts[k].id] = Static(items[trip])
                for k, seq in data.items():
                    item = gast.copy_location(gast.Subscript(value=seq, slice=_const(trip),
                                                             ctx=gast.Load()), it)
                    stmts.extend(self.stmt(gast.copy_location(gast.Assign(
                        targets=[_copy_stmt(target.elts[k])], value=item, type_comment=None),
                        node)))
                stmts.extend(self.block([_copy_stmt(s) for s in node.body]))
        finally:
            for name, before in saved.items():
                if before is None:
                    self.local_fns.pop(name, None)
                else:
                    self.local_fns[name] = before
        return stmts

    def _walked(self, seq, where, stmts):
        """The sequence a lowered `for` loop walks by index (`seq[i]`), under a name of its
        own: `rt.loop_sequence(seq, ...)`, which is `seq` itself, or a dict's keys, a set's
        items, as a list in the order Python's loop gives them (a dict's indexing gives
        values). Its own name also keeps what the header saw when the body rebinds the
        name (Python iterates over that object)."""
        line = self.src.line_of(where)
        walked = self.namer.fresh("seq")
        self.locals.add(walked)
        stmts.append(_assign(walked, prim_call("rt.loop_sequence", [
            seq, _const(f"{self.src.filename}:{line} ({self.src.name})")]), where))
        return _name(walked)

    def _length_checked(self, seq_expr, n, loop, stmts, at_least=False):
        """The sequence `seq_expr` of an unrolled zip, under a name the lowered loop reads
        it by (`seq[k]`), after `rt.check_length`: n items exactly (`zip(*seq)` unpacked
        into n names), or at least n (`zip(layers, params)`, Python stopping at the
        shorter)."""
        seq = self._pinned(self.atom(seq_expr, stmts, hint="seq"), loop, stmts)
        if isinstance(seq, gast.Name):
            self.locals.add(seq.id)
        line = self.src.line_of(loop.iter)
        stmts.append(gast.copy_location(gast.Expr(value=prim_call("rt.check_length", [
            seq, _const(n), _const(f"{self.src.filename}:{line} ({self.src.name})")] +
            ([_const(True)] if at_least else []))), loop.iter))
        return seq

    def _pinned(self, seq, loop, stmts):
        """The sequence a `for` walks, under a name of its own where the loop body binds
        the name it has: Python iterates over the object the header saw, and the lowered
        loop reads `seq[i]` on every trip."""
        if not isinstance(seq, gast.Name) or seq.id not in {
                n.id for st in loop.body for n in gast.walk(st)
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}:
            return seq
        pinned = self.namer.fresh("seq")
        stmts.append(_assign(pinned, seq, loop.iter))
        return _name(pinned)

    def _range_like(self, it, fn):
        """(arguments, spelling) for `range(...)`, `reversed(range(...))` and the
        `rt.reversed_range(...)` of generated backward loops; else None."""
        if not isinstance(it, gast.Call) or it.keywords:
            return None
        if fn is builtins.range:
            return it.args, "range"
        if fn is runtime.reversed_range:
            return it.args, "rt.reversed_range"
        if fn is builtins.reversed and len(it.args) == 1 and isinstance(it.args[0], gast.Call):
            inner = self.static(it.args[0].func)
            if isinstance(inner, Static) and inner.value is builtins.range:
                return it.args[0].args, "rt.reversed_range"
        return None

    def _assign_item(self, target, item, stmts, origin):
        if isinstance(target, gast.Name):
            stmts.append(_assign(target.id, item, origin))
        else:
            tmp = self.namer.fresh("item")
            stmts.append(_assign(tmp, item, origin))
            self.assign_target(target, _name(tmp), stmts, origin)

    def stmt_Break(self, node):
        return [node]

    def stmt_Continue(self, node):
        return [node]

    def stmt_Return(self, node):
        stmts = []
        value = self.atom(node.value, stmts, hint="out") if node.value is not None else _const(None)
        ret = gast.Return(value=value)
        gast.copy_location(ret, node)
        return stmts + [ret]


    def stmt_Import(self, node):
        for alias in node.names:
            module = __import__(alias.name)
            if alias.asname:
                for part in alias.name.split(".")[1:]:
                    module = getattr(module, part)
            self.local_fns[alias.asname or alias.name.split(".")[0]] = Static(module)
        return []

    def stmt_ImportFrom(self, node):
        """`from m import f` (and `from .m import f` relative to the function's package)."""
        name = "." * (node.level or 0) + (node.module or "")
        package = self.globals.get("__package__") or \
            str(self.globals.get("__name__", "")).rpartition(".")[0]
        try:
            module = importlib.import_module(name, package if node.level else None)
            for alias in node.names:
                if alias.name == "*":
                    raise self.error(node, "`from ... import *` in a function is not "
                                     "supported.", "import the names you use.")
                value = getattr(module, alias.name, None)
                if value is None:       # a submodule not imported by its package
                    value = importlib.import_module(f"{module.__name__}.{alias.name}")
                self.local_fns[alias.asname or alias.name] = Static(value)
        except ImportError as e:
            raise self.error(node, f"this import fails: {e}.") from None
        return []

    def stmt_Assert(self, node):
        """`assert test, msg` is kept: `if not test: raise AssertionError(msg)`."""
        error = gast.Call(func=_name("AssertionError"),
                          args=[node.msg] if node.msg is not None else [], keywords=[])
        check = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=node.test),
                        body=[gast.Raise(exc=error, cause=None)], orelse=[])
        for n in gast.walk(check):
            if not hasattr(n, "lineno") or n in (error, error.func, check, check.test):
                gast.copy_location(n, node)
        return self.stmt(check)

    def stmt_Raise(self, node):
        """`raise E(args)` is kept, as a call that raises (`rt.raise_exception(E, args)`):
        transformations pass it through like print, so it raises where the user's code
        would."""
        exc = node.exc
        if exc is None:
            raise self.error(node, "a bare `raise` (re-raising) is not supported in "
                             "transformed code.", "raise a new exception.")
        stmts = []
        if isinstance(exc, gast.Call) and isinstance(self.static(exc.func), Static) and \
                isinstance(self.static(exc.func).value, type) and \
                issubclass(self.static(exc.func).value, BaseException):
            if any(isinstance(a, gast.Starred) for a in exc.args) or exc.keywords:
                raise self.error(exc, "raise with *args or keywords is not supported in "
                                 "transformed code.", "pass the message as one argument.")
            args = [self.static_atom(self.static(exc.func).value, exc.func)] + \
                [self.atom(a, stmts) for a in exc.args]
        else:
            args = [self.atom(exc, stmts)]
        call = prim_call("rt.raise_exception", args)
        stmts.append(gast.copy_location(gast.Expr(value=call), node))
        return stmts

    def expr_JoinedStr(self, node, stmts):
        """An f-string: `rt.format_string("x = {:.3f}", x)` (no derivative flows through
        text)."""
        template, values = [], []
        for part in node.values:
            if isinstance(part, gast.Constant):
                template.append(str(part.value).replace("{", "{{").replace("}", "}}"))
                continue
            spec = ""
            if part.format_spec is not None:
                pieces = part.format_spec.values if isinstance(part.format_spec,
                                                                gast.JoinedStr) else []
                if not all(isinstance(p, gast.Constant) for p in pieces):
                    raise self.error(part, "a computed format spec in an f-string is not "
                                     "supported in transformed code.", "write it literally.")
                spec = ":" + "".join(str(p.value) for p in pieces)
            conversion = {115: "!s", 114: "!r", 97: "!a"}.get(part.conversion, "")
            template.append("{" + conversion + spec + "}")
            values.append(self.atom(part.value, stmts))
        return prim_call("rt.format_string", [_const("".join(template))] + values)

    # ------------------------------------------------------------------ expressions
    def atom(self, node, stmts, hint=None):
        """Normalize `node` and return an atom (Name or Constant) holding its value."""
        value = self.expr(node, stmts, hint=hint)
        if isinstance(value, (gast.Name, gast.Constant)):
            return value
        if isinstance(value, Static):
            return self.static_atom(value.value, node)
        if isinstance(value, (LocalFunction, LocalPartial, LocalTransformed, LocalFunctions)):
            raise self.error(node, "a function value can only be called here, not stored or "
                             "passed.", "call it directly, or pass its result.")
        tmp = self.namer.fresh(hint or _temp_name(value))
        stmts.append(_assign(tmp, value, node))
        return _name(tmp)

    def static_atom(self, value, node):
        if is_literal(value):
            return _const(value)
        if isinstance(value, (list, dict)) or isinstance(value, tuple):
            hint = node.id if isinstance(node, gast.Name) else "const"
            return _name(self.program.constant(value, hint))
        if isinstance(value, type):   # classes as values: isinstance(t, tuple), dtypes
            return _name(self.program.constant(value, getattr(value, "__name__", "cls")))
        if is_module(value) or callable(value) and not hasattr(value, "dtype") and \
                not _user_object(value):
            raise self.error(node, f"{getattr(value, '__name__', value)!r} is used as a value "
                             "here; transformed code can only call functions.")
        hint = node.id if isinstance(node, gast.Name) else getattr(node, "attr", "const")
        return _name(self.program.constant(value, hint))

    def expr(self, node, stmts, hint=None):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"'{type(node).__name__}' expressions are not supported in "
                             "transformed code.", _EXPR_HINTS.get(type(node).__name__))
        return method(node, stmts, hint) if method.__code__.co_argcount == 4 else \
            method(node, stmts)

    def expr_Constant(self, node, stmts):
        return node

    def expr_NamedExpr(self, node, stmts):
        """`(n := value)`: the assignment, then the name (A-normal form keeps the order:
        `and`, `or` and conditional expressions are already statements)."""
        stmts.extend(self.stmt_Assign(gast.copy_location(gast.Assign(
            targets=[node.target], value=node.value, type_comment=None), node)))
        return self.expr_Name(gast.copy_location(_name(node.target.id), node), stmts)

    def expr_Name(self, node, stmts):
        name = node.id
        if name in self.iterators:
            raise self.error(node, f"the iterator '{name}' can only be passed to next() in "
                             "transformed code.", "index the sequence instead: xs[k].")
        if name in self.local_fns:
            return self.local_fns[name]
        if name in self.pullbacks:
            raise self.error(node, f"'{name}', the pullback of a tp.vjp in transformed code, "
                             "can only be called here, not stored, passed or returned.",
                             f"call it where it is made: {name}(cotangent).")
        if name in self.locals:
            return _name(name)
        if name in self.closure:
            value = self.closure[name]
            if name in self.cells:
                # generated code holds the value: a cell rebound since (`nonlocal s; s =
                # 5.0` after a closure was transformed) needs new code, as a global does
                cell = self.cells[name]      # (a list may change in place, a name be rebound)
                self.program.global_reads[(id(cell), "cell_contents")] = (
                    cell, "cell_contents", _snapshot(value))
            return Static(value)
        if name in self.globals:
            value = self.globals[name]
            self.program.global_reads[(id(self.globals), name)] = (
                self.globals, name, _snapshot(value))
            return Static(value)
        if hasattr(builtins, name):
            return Static(getattr(builtins, name))
        raise self.error(node, f"name '{name}' is not defined.",
                         "define it (or import it) before the transformed function is first "
                         "called: its code is generated then.")

    def static(self, node):
        """The statically known value of `node`, or None."""
        if isinstance(node, gast.Call):
            return self.made_function(node)
        if isinstance(node, gast.Name):
            if node.id in self.local_fns:
                return self.local_fns[node.id]
            if node.id in self.locals:
                return None
            try:
                return self.expr_Name(node, [])
            except Exception:
                return None
        if isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant) and \
                type(node.slice.value) is int:
            base = self.static(node.value)       # layers[0] of a static list of models
            if isinstance(base, LocalFunctions) and \
                    -len(base.items) <= node.slice.value < len(base.items):
                return base.items[node.slice.value]
            if isinstance(base, Static) and _holds_code(base.value) and \
                    -len(base.value) <= node.slice.value < len(base.value):
                return Static(base.value[node.slice.value])
            return None
        if isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant):
            base = self.static(node.value)       # ACTIVATIONS["relu"], a dict of functions
            if isinstance(base, Static) and _maps_to_code(base.value):
                item = base.value.get(node.slice.value)
                if callable(item) and not isinstance(item, type):
                    return Static(item)
            return None
        if isinstance(node, gast.Attribute):
            base = self.static(node.value)
            if isinstance(base, Static) and hasattr(base.value, node.attr):
                owner, value = base.value, getattr(base.value, node.attr)
                if inspect.ismodule(owner):
                    if not library_module(owner):     # a user's settings module
                        self.program.global_reads[(id(vars(owner)), node.attr)] = (
                            vars(owner), node.attr, value)
                    return Static(value)
                users = plain_object(owner) or _user_object(owner) or \
                    isinstance(owner, type) and not library_module(inspect.getmodule(owner))
                if not users:
                    return Static(value)     # a library object's (a partial's arguments)
                if not _is_code(value) and not _holds_code(value) and \
                        not _maps_to_code(value) and not plain_object(value):
                    return None      # data on a user's object: read when the code runs
                # functions, models and user objects held by one (a layer's own weight
                # parser) are known while transforming, so their methods can be called
                self.program.global_reads[(id(owner), node.attr)] = (
                    owner, node.attr, _snapshot(value))
                return Static(value)
        return None

    def made_function(self, node):
        """The function a factory call returns, `make_activation("relu", 0.1)`, made now:
        a user's function every `return` of which gives a function (a lambda, a nested
        def, one it names), called with literal arguments. Else None. (Made once per
        call in the source: the function is then the same object wherever it is asked.)"""
        made = self.__dict__.setdefault("_made_functions", {})
        if id(node) in made:
            return made[id(node)][1]
        maker = self.static(node.func)
        found = None
        if isinstance(maker, Static) and inspect.isfunction(maker.value) and \
                not library_module(inspect.getmodule(maker.value)) and \
                all(_literal_value(a) is not _UNKNOWN for a in node.args) and \
                all(k.arg is not None and _literal_value(k.value) is not _UNKNOWN
                    for k in node.keywords) and \
                _returns_functions(maker.value):
            args = [_literal_value(a) for a in node.args]
            kwargs = {k.arg: _literal_value(k.value) for k in node.keywords}
            try:
                value = maker.value(*args, **kwargs)
            except Exception:        # (the call is then normalized, and refused, as before)
                value = None
            if callable(value) and not isinstance(value, type):
                found = Static(value)
        made[id(node)] = (node, found)      # (the node kept: its id stays its own)
        return found

    def expr_Attribute(self, node, stmts):
        static = self.static(node)
        if static is not None:
            return static
        base = self.static(node.value)
        if isinstance(base, Static) and not hasattr(base.value, node.attr):
            raise self.error(node, f"{getattr(base.value, '__name__', base.value)!r} has no "
                             f"attribute {node.attr!r}.")
        if isinstance(base, Static):
            # data on an object the function reads (`model.w`, `cfg.lr`): read when the code
            # runs, so that a value set since (by a training loop) is the one used
            return prim_call("rt.attribute", [self.static_atom(base.value, node.value),
                                              _const(node.attr)])
        value = self.atom(node.value, stmts)
        if node.attr in ARRAY_ATTRS:
            # an array's attribute; a namedtuple with a field of this name is refused where
            # it enters (pipeline.Build.finish), as numpy would read it as an array
            self.program.array_attributes.add(node.attr)
            return prim_call(ARRAY_ATTRS[node.attr], [value])
        # a namedtuple's field (`state.mu`, followed by every transformation as `state[1]`
        # is), or an attribute of a plain object passed in (hyperparameters)
        return prim_call("rt.attribute", [value, _const(node.attr)])

    def expr_BinOp(self, node, stmts, hint=None):
        kind = _sequence_kind(node, self.sequences)
        if kind is not None:
            return self._sequence_op(node, kind, stmts, hint)
        left = self.atom(node.left, stmts)
        right = self.atom(node.right, stmts)
        return prim_call(binop_spelling(node.op), [left, right])

    def expr_UnaryOp(self, node, stmts):
        operand = self.atom(node.operand, stmts)
        spelling = {gast.USub: "u-", gast.UAdd: "u+", gast.Not: "not", gast.Invert: "~"}[
            type(node.op)]
        if spelling == "u+":
            return operand
        if spelling == "u-" and isinstance(operand, gast.Constant):
            return _const(-operand.value)
        return prim_call(spelling, [operand])

    def expr_Compare(self, node, stmts, hint=None):
        if len(node.ops) == 1:
            left = self.atom(node.left, stmts)
            right = self.atom(node.comparators[0], stmts)
            if isinstance(node.ops[0], (gast.Is, gast.IsNot)) and \
                    isinstance(left, gast.Constant) and isinstance(right, gast.Constant) and \
                    (left.value is None or right.value is None):
                # `option is None` for a value known now (a closure's tuple): decided here,
                # so generated code does not compare a literal by identity
                same = left.value is right.value
                return _const(same if isinstance(node.ops[0], gast.Is) else not same)
            return prim_call(cmp_spelling(node.ops[0]), [left, right])
        # a < b < c  ->  a < b and b < c, evaluating b once
        result = self.namer.fresh(hint or "cond")
        left = self.atom(node.left, stmts)
        body = stmts
        for i, (op, comp) in enumerate(zip(node.ops, node.comparators)):
            right = self.atom(comp, body)
            body.append(_assign(result, prim_call(cmp_spelling(op), [left, right]), node))
            if i < len(node.ops) - 1:
                inner = []
                body.append(gast.If(test=_name(result), body=inner, orelse=[]))
                body = inner
            left = right
        return _name(result)

    def expr_BoolOp(self, node, stmts, hint=None):
        result = self.namer.fresh(hint or "cond")
        body = stmts
        for i, v in enumerate(node.values):
            value = self.expr(v, body)
            body.append(_assign(result, value if not isinstance(value, Static) else
                                self.static_atom(value.value, v), node))
            if i < len(node.values) - 1:
                inner = []
                is_and = isinstance(node.op, gast.And)
                body.append(gast.If(test=_name(result), body=inner if is_and else [],
                                    orelse=[] if is_and else inner))
                body = inner
        return _name(result)

    def expr_IfExp(self, node, stmts, hint=None):
        test = self.atom(node.test, stmts, hint="cond")
        result = self.namer.fresh(hint or "t")
        branches = []
        for branch in (node.body, node.orelse):
            b = []
            b.append(_assign(result, self.atom(branch, b), node))
            branches.append(b)
        if isinstance(test, gast.Constant):
            stmts.extend(branches[0] if test.value else branches[1])
        else:
            stmts.append(gast.copy_location(gast.If(test=test, body=branches[0],
                                                     orelse=branches[1]), node))
        return _name(result)

    def expr_Tuple(self, node, stmts):
        return self._container(node, stmts, "tuple")

    def expr_List(self, node, stmts):
        return self._container(node, stmts, "list")

    def _container(self, node, stmts, kind):
        if any(isinstance(e, gast.Starred) for e in node.elts):
            return self.expr(self._spread(node, kind), stmts)
        elts = [self.atom(e, stmts) for e in node.elts]
        new = (gast.Tuple if kind == "tuple" else gast.List)(elts=elts, ctx=gast.Load())
        anno.set(new, Anno.PRIM, (rules.lookup(kind), kind))
        return new

    def _spread(self, node, kind):
        """`(*a, b, *c)` as `tuple(a) + (b,) + tuple(c)` (a list display likewise), which
        the passes already follow element by element."""
        parts, run = [], []
        for e in node.elts + [None]:
            if (e is None or isinstance(e, gast.Starred)) and run:
                parts.append((gast.Tuple if kind == "tuple" else gast.List)(
                    elts=run, ctx=gast.Load()))
                run = []
            if isinstance(e, gast.Starred):
                parts.append(gast.Call(func=gast.Name(id=kind, ctx=gast.Load(), annotation=None,
                                                      type_comment=None),
                                       args=[e.value], keywords=[]))
            elif e is not None:
                run.append(e)
        whole = parts[0]
        for part in parts[1:]:
            whole = gast.BinOp(left=whole, op=gast.Add(), right=part)
        for new in gast.walk(whole):
            gast.copy_location(new, node)
        return whole

    def expr_Dict(self, node, stmts):
        if any(k is None for k in node.keys):
            return self.merged_dict(node, stmts)
        keys = [self.atom(k, stmts) for k in node.keys]
        values = [self.atom(v, stmts) for v in node.values]
        new = gast.Dict(keys=keys, values=values)
        anno.set(new, Anno.PRIM, (rules.lookup("dict"), "dict"))
        return new

    def merged_dict(self, node, stmts):
        """`{**a, "k": v, **b}`: each part a dict (a run of written pairs, a display of
        them), and the result `{k: b[k] if k in b else (part[k] if k in part else a[k])
        for k in rt.merged_keys(a, part, b)}`, Python's order of keys and the last value
        given for each (which part holds a key is known when the code runs, the same for
        every example)."""
        parts, run = [], None
        for k, v in zip(node.keys, node.values):
            if k is None:
                parts.append(self.atom(v, stmts, hint="part"))
                run = None
                continue
            if run is None:
                run = gast.Dict(keys=[], values=[])
                parts.append(run)
            run.keys.append(k)
            run.values.append(v)
        parts = [self.atom(self._located(p, node), stmts, hint="part")
                 if isinstance(p, gast.Dict) else p for p in parts]
        for p in parts:
            if isinstance(p, gast.Name):
                self.locals.add(p.id)     # (the comprehension below reads them by name)
        keys, key = self._fresh_local("keys"), self._fresh_local("key")
        stmts.append(_assign(keys, prim_call("rt.merged_keys", parts), node))
        value = None
        for p in parts:                   # the last part holding the key gives its value
            read = gast.Subscript(value=_copy_stmt(p), slice=_name(key), ctx=gast.Load())
            value = read if value is None else gast.IfExp(
                test=gast.Compare(left=_name(key), ops=[gast.In()], comparators=[_copy_stmt(p)]),
                body=read, orelse=value)
        merged = gast.DictComp(key=_name(key), value=value, generators=[
            gast.comprehension(target=gast.Name(id=key, ctx=gast.Store(), annotation=None,
                                                type_comment=None),
                               iter=_name(keys), ifs=[], is_async=0)])
        made = self.atom(self._located(merged, node), stmts, hint="merged")
        self.locals.add(made.id)
        return made

    def expr_Subscript(self, node, stmts):
        static = self.static(node.value)
        spelling = rules.lookup_subscript(static.value) if isinstance(static, Static) else None
        if spelling is not None:    # np.r_[x, 0:3]: a primitive called with the items
            return prim_call(spelling, [self.atom(_index_items(node.slice), stmts, "items")])
        value = self.atom(node.value, stmts)
        # `xs[-1]` of a list the function appends to counts from the end the list has now:
        # spelled `xs[len(xs) - 1]`, the position stays right in the backward pass, which
        # sees the list at its full length
        grows = value if isinstance(value, gast.Name) and value.id in self.appended else None
        return prim_call("[]", [value, self.index(node.slice, stmts, grows)])

    def index(self, node, stmts, from_end_of=None):
        """An index expression whose parts are atoms: slices, tuples, None, Ellipsis."""
        if isinstance(node, gast.Slice):
            parts = [None if p is None else self.index_part(p, stmts, from_end_of)
                     for p in (node.lower, node.upper)]
            step = None if node.step is None else self.atom(node.step, stmts)
            return gast.Slice(lower=parts[0], upper=parts[1], step=step)
        if isinstance(node, gast.Tuple):
            return gast.Tuple(elts=[self.index(e, stmts) for e in node.elts], ctx=gast.Load())
        return self.index_part(node, stmts, from_end_of)

    def index_part(self, node, stmts, from_end_of):
        back = _count_from_end(node) if from_end_of is not None else None
        if back is None:
            return self.atom(node, stmts, hint="idx")
        length = self.atom_of(prim_call("len", [from_end_of]), stmts, "n")
        return self.atom_of(prim_call("-", [length, _const(back)]), stmts, "idx")

    def _sequence_op(self, node, kind, stmts, hint):
        """`args + (ones,)` or `[x] * n` on tuples and lists (not arrays): the elements gathered
        by a comprehension, so every transformation sees each element's own data flow."""
        def load(n):
            return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)

        def loop(target, iter_):
            return gast.comprehension(target=gast.Name(id=target, ctx=gast.Store(),
                                                       annotation=None, type_comment=None),
                                      iter=iter_, ifs=[], is_async=0)
        item = self.namer.fresh("item")
        if isinstance(node.op, gast.Add):      # each part in turn, each element of the part
            part = self.namer.fresh("part")
            parts = gast.Tuple(elts=[node.left, node.right], ctx=gast.Load())
            generators = [loop(part, parts), loop(item, load(part))]
        else:                                  # the sequence, `count` times over
            seq, count = (node.left, node.right) \
                if _sequence_kind(node.left, self.sequences) else \
                (node.right, node.left)
            times = gast.Call(func=load("range"), args=[count], keywords=[])
            generators = [loop(self.namer.fresh("_"), times), loop(item, seq)]
        comp = gast.ListComp(elt=load(item), generators=generators)
        for n in gast.walk(comp):
            gast.copy_location(n, node)
        items = self._comprehension(comp, stmts, hint if kind == "list" else None)
        if kind == "list":
            return items
        call = gast.copy_location(gast.Call(func=load("tuple"), args=[items], keywords=[]), node)
        return self.expr(call, stmts)

    def expr_ListComp(self, node, stmts, hint=None):
        return self._comprehension(node, stmts, hint)

    def expr_GeneratorExp(self, node, stmts, hint=None):
        return self._comprehension(node, stmts, hint)

    def expr_DictComp(self, node, stmts, hint=None):
        """`{k: v for k in d}`: a dict built by a loop, each `for` over `list(...)` of its
        iterable (a dict's keys, as Python iterates it; the loop walks a list by index)."""
        node = self._own_scope(node)
        result = self.namer.fresh(hint or "items")
        stmts.append(_assign(result, gast.Dict(keys=[], values=[]), node))
        anno.set(stmts[-1].value, Anno.PRIM, (rules.lookup("dict"), "dict"))
        self.locals.add(result)
        put = gast.Assign(targets=[gast.Subscript(value=_name(result), slice=node.key,
                                                  ctx=gast.Store())],
                          value=node.value, type_comment=None)
        inner = [gast.copy_location(put, node)]
        for gen in reversed(node.generators):
            for cond in reversed(gen.ifs):
                inner = [gast.copy_location(gast.If(test=cond, body=inner, orelse=[]), node)]
            keys = gast.copy_location(gast.Call(func=gast.Name(
                id="list", ctx=gast.Load(), annotation=None, type_comment=None),
                args=[gen.iter], keywords=[]), gen.iter)
            inner = [gast.copy_location(gast.For(target=gen.target, iter=keys, body=inner,
                                                 orelse=[], type_comment=None), node)]
        for name in assigned_names(inner):
            self.locals.add(name)
        stmts.extend(self.block(inner))
        return _name(result)

    def _own_scope(self, node):
        """A comprehension's loop variables are its own (Python 3): lowered to a loop in the
        function, a target that the function also names (`a` in `a = x * 2; s = sum(a for a
        in xs); use a`) would overwrite it. Such targets are renamed, in the comprehension
        only (the first iterable is the function's: it keeps its names)."""
        inside = collections.Counter(n.id for n in gast.walk(node) if isinstance(n, gast.Name))
        if not any(isinstance(t, gast.Name) and self.name_counts.get(t.id, 0) > inside[t.id]
                   for gen in node.generators for t in gast.walk(gen.target)):
            return node
        node = _copy_stmt(node)          # (the parsed function is not changed)
        renames = {}
        for k, gen in enumerate(node.generators):
            if k:
                gen.iter = _renamed(gen.iter, renames)
            for t in gast.walk(gen.target):
                if isinstance(t, gast.Name) and t.id not in renames and \
                        self.name_counts.get(t.id, 0) > inside[t.id]:
                    renames[t.id] = self._fresh_local(t.id)
            gen.target = _renamed(gen.target, renames)
            gen.ifs = [_renamed(c, renames) for c in gen.ifs]
        for field in ("elt", "key", "value"):
            if getattr(node, field, None) is not None:
                setattr(node, field, _renamed(getattr(node, field), renames))
        return node

    def _comprehension(self, node, stmts, hint):
        node = self._own_scope(node)
        result = self.namer.fresh(hint or "items")
        stmts.append(_assign(result, gast.List(elts=[], ctx=gast.Load()), node))
        anno.set(stmts[-1].value, Anno.PRIM, (rules.lookup("list"), "list"))
        self.locals.add(result)
        elt = gast.Expr(value=gast.Call(func=gast.Attribute(value=_name(result), attr="append",
                                                            ctx=gast.Load()),
                                        args=[node.elt], keywords=[]))
        inner = [gast.copy_location(elt, node)]
        for gen in reversed(node.generators):
            for cond in reversed(gen.ifs):
                inner = [gast.copy_location(gast.If(test=cond, body=inner, orelse=[]), node)]
            inner = [gast.copy_location(gast.For(target=gen.target, iter=gen.iter, body=inner,
                                                 orelse=[], type_comment=None), node)]
        for name in assigned_names(inner):
            self.locals.add(name)
        stmts.extend(self.block(inner))
        return _name(result)


    # ------------------------------------------------------------------ lifting


# context managers that change no number the code computes (stmt_With)
_NUMBERLESS_CONTEXTS = (np.errstate, warnings.catch_warnings, np.printoptions,
                        contextlib.nullcontext)
_STMT_HINTS = {
    "With": "with-blocks other than np.errstate, warnings.catch_warnings, np.printoptions "
            "and contextlib.nullcontext are not supported: move them outside the "
            "transformed function.",
    "Nonlocal": "nonlocal writes are not supported: return the value instead.",
    "ClassDef": "define classes outside the transformed function.",
    "AsyncFunctionDef": "async functions cannot be transformed.",
}
_EXPR_HINTS = {
    "Yield": "yield as a statement: the value of a yield expression is not supported.",
    "YieldFrom": "yield as a statement: the value of a yield expression is not supported.",
    "Await": "async code cannot be transformed.",
    "SetComp": "sets have no derivative: use a list.",
    "NamedExpr": "assign with a separate statement.",
}


def _renamed(node, renames):
    """`node` with the names in `renames` replaced (loads and stores alike)."""
    if not renames:
        return node

    class Rename(gast.NodeTransformer):
        def visit_Name(self, n):
            if n.id in renames:
                return gast.copy_location(gast.Name(id=renames[n.id], ctx=n.ctx,
                                                    annotation=None, type_comment=None), n)
            return n
    return Rename().visit(node)


def _sequence_kind(node, names=None):
    """"tuple" or "list" when `node` is `+` or `*` on a tuple or list written as one (a display,
    a comprehension, `tuple(...)`/`list(...)`, or such a sum), or `+` of two names of `names`
    (local names bound only to such values: name -> kind) or of such a name and such a
    value; else None (an array operation: `xs + a` adds elementwise when `a` is an array)."""
    kind = _written_sequence(node)
    if kind is not None or not names:
        return kind
    if isinstance(node, gast.Name):
        return names.get(node.id)
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add):
        left, right = _sequence_kind(node.left, names), _sequence_kind(node.right, names)
        return left if left is not None and right is not None else None
    return None


def _written_sequence(node):
    if isinstance(node, gast.Tuple):
        return "tuple"
    if isinstance(node, (gast.List, gast.ListComp)):
        return "list"
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
            node.func.id in ("tuple", "list") and len(node.args) <= 1:
        return node.func.id
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Add, gast.Mult)):
        return _written_sequence(node.left) or _written_sequence(node.right)
    return None


def _user_object(value):
    """An instance of a user's class with `__call__` (a model): data as a value (its
    attributes are read from it), a function when called."""
    call = getattr(type(value), "__call__", None)
    return not isinstance(value, type) and inspect.isfunction(call) and \
        not library_module(inspect.getmodule(type(value)))


def _assignment_counts(body, params):
    """How many assignments (parameters and nested defs included) each name of a function
    body has; the bodies of nested functions are their own."""
    counts = collections.Counter(params)
    todo = list(body)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            counts[n.id] += 1
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef)):
            counts[n.name] += 1
            continue
        if isinstance(n, gast.Lambda):
            continue
        todo.extend(gast.iter_child_nodes(n))
    return counts


def _is_data(value):
    """A number, string, array or container of them: a value, not code."""
    return is_literal(value) or isinstance(value, (numbers.Number, np.ndarray, np.generic)) \
        or isinstance(value, (tuple, list, dict)) and not _holds_code(value) and \
        not _maps_to_code(value)


def _holds_code(value):
    """A list or tuple of functions or models (a model's layers)."""
    return isinstance(value, (list, tuple)) and bool(value) and \
        any(callable(v) and not isinstance(v, type) or plain_object(v) for v in value)


_UNKNOWN = object()


def _literal_value(node):
    """The value of a literal written in the source (`0.1`, `-2`, `("a", 3)`), else
    _UNKNOWN."""
    if not all(isinstance(n, (gast.Constant, gast.Tuple, gast.List, gast.UnaryOp,
                              gast.USub, gast.UAdd, gast.Load)) for n in gast.walk(node)):
        return _UNKNOWN
    try:
        return ast.literal_eval(gast.unparse(node))
    except (ValueError, SyntaxError):
        return _UNKNOWN


@functools.lru_cache(maxsize=256)
def _returns_functions(fn):
    """Whether every `return` of `fn` (at least one) gives a function: a lambda, a def
    nested in it, or a name or attribute naming a function where it is defined (a
    factory, `def make_act(kind): ... return lambda z: ...`)."""
    try:
        fdef, _ = parse_function(fn)
    except (TransformError, OSError, TypeError):
        return False
    nested = {n.name for n in fdef.body if isinstance(n, gast.FunctionDef)}
    returns = []
    todo = list(fdef.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            if isinstance(n, gast.FunctionDef):
                nested.add(n.name)
            continue
        if isinstance(n, gast.Return):
            returns.append(n.value)
        todo.extend(gast.iter_child_nodes(n))
    lambdas = {n.targets[0].id for n in gast.walk(fdef) if isinstance(n, gast.Assign) and
               len(n.targets) == 1 and isinstance(n.targets[0], gast.Name) and
               isinstance(n.value, gast.Lambda)}

    def named_function(v):
        path = dotted(v)
        if path is None:
            return False
        head, *rest = path.split(".")
        scope = dict(vars(builtins), **fn.__globals__)
        if head not in scope:
            return False
        value = scope[head]
        for attr in rest:
            value = getattr(value, attr, None)
        return callable(value) and not isinstance(value, type)

    return bool(returns) and all(
        isinstance(v, gast.Lambda) or
        isinstance(v, gast.Name) and (v.id in nested or v.id in lambdas) or
        isinstance(v, (gast.Name, gast.Attribute)) and named_function(v)
        for v in returns)


def _maps_to_code(value):
    """A dict some of whose values are functions (`ACTIVATIONS = {"relu": relu, ...}`)."""
    return isinstance(value, dict) and any(callable(v) and not isinstance(v, type)
                                           for v in value.values())


def _snapshot(value):
    """What generated code made from `value` records of it: the items of a container of
    functions (which may change in place), else the value."""
    return Snapshot(value) if _holds_code(value) or _maps_to_code(value) else value


def _is_code(value):
    """Values that shape the generated code itself (functions, classes, modules) rather
    than data it computes with."""
    return callable(value) or inspect.ismodule(value)


def _is_builtin(found, name):
    return isinstance(found, Static) and found.value is getattr(builtins, name)


def _sequence_names(fdef, params):
    """Local names that every assignment binds to a tuple or list written as one, or to a
    sum of such values and such names (`out = []` ... `out = out + part(x)`): `+` on them
    joins sequences, whatever the other operand. Name -> "tuple" or "list"."""
    values = {p: [None] for p in params}      # None: a binding of unknown type
    for node in _own_nodes(fdef.body):
        if isinstance(node, gast.Assign):
            for t in node.targets:
                if isinstance(t, gast.Name):
                    values.setdefault(t.id, []).append(node.value)
                else:
                    for n in gast.walk(t):
                        if isinstance(n, gast.Name):
                            values.setdefault(n.id, []).append(None)
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            values.setdefault(node.target.id, []).append(
                gast.BinOp(left=node.target, op=node.op, right=node.value))
        elif isinstance(node, (gast.For, gast.comprehension, gast.AnnAssign, gast.NamedExpr,
                               gast.withitem)):
            target = getattr(node, "target", None) or getattr(node, "optional_vars", None)
            for n in gast.walk(target) if target is not None else ():
                if isinstance(n, gast.Name):
                    values.setdefault(n.id, []).append(None)
    candidates = {n for n, vs in values.items() if all(v is not None for v in vs)}
    while True:         # the largest set whose values are all sequences, given the set
        assumed = dict.fromkeys(candidates, "list")
        dropped = {n for n in candidates
                   if any(_sequence_kind(v, assumed) is None for v in values[n])}
        if not dropped:
            break
        candidates -= dropped
    kinds = {}
    for _ in range(len(candidates) + 1):     # each name's kind, from the displays it joins
        for n in candidates:
            for v in values[n]:
                kind = _sequence_kind(v, kinds)
                if kind is not None:
                    kinds[n] = kind
    return kinds


def _own_nodes(body):
    """The nodes of a function body, not those of the functions and lambdas it defines."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (gast.FunctionDef, gast.Lambda)):
            continue
        stack.extend(gast.iter_child_nodes(node))


def _temp_name(value):
    found = anno.get(value, Anno.PRIM)
    if found:
        prim, spelling = found
        if spelling in TEMP_FOR_PRIM:
            return TEMP_FOR_PRIM[spelling]
        if prim is not None:
            return prim.name
        return spelling.rsplit(".", 1)[-1]
    if isinstance(value, gast.Call):
        callee = anno.get(value, Anno.CALLEE)
        if callee:
            return callee.split("_")[0] + "_out"
        return "t"
    return TEMP_FOR_OP.get(type(getattr(value, "op", None)).__name__, "t")


def _count_from_end(node):
    """k for an index written `-k` (a negative int literal), else None."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and \
            isinstance(node.operand, gast.Constant) and type(node.operand.value) is int and \
            node.operand.value > 0:
        return node.operand.value
    if isinstance(node, gast.Constant) and type(node.value) is int and node.value < 0:
        return -node.value
    return None


def _appended_names(fdef):
    """Names the function appends to (`xs.append(v)`, `xs += [...]`): lists that grow."""
    out = set()
    for n in gast.walk(fdef):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and \
                n.func.attr in ("append", "extend", "insert") and \
                isinstance(n.func.value, gast.Name):
            out.add(n.func.value.id)
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name) and \
                _sequence_kind(n.value) == "list":
            out.add(n.target.id)
    return out


def _all_names(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def _copy_stmt(stmt):
    import copy
    new = copy.deepcopy(stmt)
    for a, b in zip(gast.walk(stmt), gast.walk(new)):
        anno.copy(a, b)
    return new


# ------------------------------------------------------------------ functions
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
    """Free variables passed as extra parameters: data, not functions or modules, nor
    tuples holding functions (an optimizer's (init, update), a layer's pair), whose
    functions transformed code calls as it calls any function it knows."""
    return [name for name, value in closure_values(fn).items()
            if not (callable(value) or inspect.ismodule(value) or _holds_code(value) or
                    _maps_to_code(value) or _user_object(value) or plain_object(value))]


def defaults_of(fn):
    out = {}
    for p in signature_of(fn).parameters.values():
        if p.default is not inspect.Parameter.empty:
            out[p.name] = p.default
    return out


def normalize_function(fn, program, call_node=None, call_src=None, lift_closure=False,
                       bound_functions=None, extra_params=(), shape=None, argument_types=None,
                       entry=False):
    """(ir_name, params, defaults) of `fn` inside `program`, normalizing it if new.

    bound_functions: parameter -> the function value a call passes it (`Static` or
    `LocalFunction`), for a copy of `fn` specialized to those functions (their parameters
    then receive None); extra_params: parameters added at the end for the free variables
    of the lambdas among them; argument_types: parameter -> the type of the value it
    receives, for calls of its methods; entry: `fn` is the function a transformation is
    applied to, whose call of a parameter of unknown type raises ArgumentDependent (the API
    layer answers with the argument's function or type)."""
    bound_self = None
    if inspect.ismethod(fn):
        bound_self, fn = fn.__self__, fn.__func__
    if not inspect.isfunction(fn):
        raise TransformError(f"cannot transform {fn!r}: expected a Python function.")
    for read in getattr(fn, "__transpile_global_reads__", ()):
        # the entry function of code generated before: the globals it was made from
        program.global_reads[(id(read[0]), read[1])] = read
    closure = closure_values(fn)
    lifted = lifted_closure_names(fn) if lift_closure else []
    bound_functions = bound_functions or {}
    key = (id(fn.__code__), fn.__code__, tuple(id(v) for k, v in closure.items() if k not in lifted),
           tuple(lifted), tuple((p, _function_identity(v)) for p, v in bound_functions.items()),
           None if shape is None else shape.key,
           tuple(sorted((p, id(t)) for p, t in (argument_types or {}).items())), entry)
    name, new = program.function_name(key, _hint(fn))
    if new:
        fdef, src = parse_function(fn)
        static_closure = {k: v for k, v in closure.items() if k not in lifted}
        normalizer = Normalizer(program, src, fn.__globals__, static_closure, name,
                                lifted=lifted + list(extra_params))
        normalizer.local_fns.update(bound_functions)
        normalizer.argument_types = dict(argument_types or {})
        normalizer.entry = entry
        normalizer.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        program.functions[name] = None
        try:
            program.functions[name] = normalizer.normalize(fdef, shape)
        except BaseException:
            # a refusal inside a branch is raised when the branch runs: the function must
            # not stay registered half-normalized for a later call to find
            program.forget_function(key, name)
            raise
    params = shape.params if shape is not None else list(signature_of(fn).parameters)
    if bound_self is not None:
        raise TransformError(f"calling the bound method {fn.__qualname__} from transformed "
                             "code is not supported yet.\n  hint: call it as a plain function "
                             "with the object as an argument.")
    return name, params + lifted + list(extra_params), defaults_of(fn)


def _function_identity(value):
    """What tells two function values apart in the key of a specialized function."""
    if isinstance(value, LocalFunction):
        # by the lifted function alone: a recursive call passing it on reuses the copy
        # (its free variables arrive in the same order, under the copy's own names)
        return value.ir_name, len(value.freevars)
    return id(value.value)


def _hint(fn):
    name = fn.__name__
    if name == "<lambda>":
        return "lambda"
    owner = fn.__qualname__.split(".")[-2] if "." in fn.__qualname__ else "<locals>"
    if owner != "<locals>":
        # a method: Dense.__call__ -> Dense_call, Box.grown -> Box_grown (not `grown`, which
        # the caller may well hold in a local: `grown = box.grown(0.3)`)
        return owner + "_" + name.strip("_")
    return name
