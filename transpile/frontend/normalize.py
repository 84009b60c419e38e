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
import builtins
import functools
import inspect

import gast

import runtime
from .. import custom, rules
from ..errors import TransformError, error_at
from ..ir import anno
from ..ir.anno import Anno
from ..ir.naming import TEMP_FOR_OP, Namer
from ..ir.nodes import assign as _assign, const as _const
from ..ir.program import FunctionIR, is_literal, is_module
from ..ir.templates import binop_spelling, cmp_spelling, dotted
from ..rules.core import BINOPS, CMPOPS, UNARYOPS
from . import aliasing, controlflow
from .callees import Callees
from .parse import parse_function

ARRAY_METHODS = {
    "sum": "np.sum", "mean": "np.mean", "prod": "np.prod", "max": "np.max", "min": "np.min",
    "var": "np.var", "std": "np.std", "cumsum": "np.cumsum", "cumprod": "np.cumprod",
    "argmax": "np.argmax", "argmin": "np.argmin", "dot": "np.dot", "ravel": "np.ravel",
    "flatten": "np.ravel", "squeeze": "np.squeeze", "swapaxes": "np.swapaxes",
    "clip": "np.clip", "any": "np.any", "all": "np.all", "round": "np.round",
    "trace": "np.trace", "diagonal": "np.diagonal", "repeat": "np.repeat",
    "argsort": "np.argsort", "nonzero": "np.nonzero", "conj": "np.conj",
    "copy": "rt.copy", "astype": "rt.astype", "item": "float", "tolist": "rt.tolist",
}
VARARG_METHODS = {"reshape": "np.reshape", "transpose": "np.transpose"}
ARRAY_ATTRS = {"T": "np.transpose", "shape": "np.shape", "ndim": "np.ndim", "size": "np.size",
               "dtype": "rt.dtype_of"}
TEMP_FOR_PRIM = {"[]": "item", "np.shape": "shape", "len": "n", "<": "less", "<=": "less_eq",
                 ">": "greater", ">=": "greater_eq", "==": "equal", "!=": "not_equal",
                 "not": "negated", "is": "same", "is not": "not_same", "in": "contained",
                 "not in": "not_contained", "~": "inverted", "//": "floordiv", "%": "mod"}


class Static:
    """A value known while transforming: a module, a function, a class, a constant."""

    def __init__(self, value):
        self.value = value


class LocalFunction:
    """A lambda or nested def bound to a local name: calls to it are resolved statically."""

    def __init__(self, ir_name, params, freevars, defaults):
        self.ir_name = ir_name
        self.params = params
        self.freevars = freevars
        self.defaults = defaults


class LocalTransformed:
    """`tp.grad(nested_fn)`: a Transformed of the lifted function, plus its free variables."""

    def __init__(self, transformed, freevars):
        self.transformed = transformed
        self.freevars = freevars


class LocalPartial:
    def __init__(self, target, args, keywords):
        self.target = target          # Static or LocalFunction
        self.args = args              # atoms
        self.keywords = keywords


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


def _spelled(spelling):
    """The callee expression for a spelling like 'np.linalg.inv'."""
    parts = spelling.split(".")
    node = _name(parts[0])
    for p in parts[1:]:
        node = gast.Attribute(value=node, attr=p, ctx=gast.Load())
    return node


def prim_call(spelling, args, keywords=()):
    """An IR call of the primitive spelled `spelling` (operators become operator nodes)."""
    prim = rules.lookup(spelling)
    if spelling in BINOPS:
        node = gast.BinOp(left=args[0], op=BINOPS[spelling][0](), right=args[1])
    elif spelling in UNARYOPS:
        node = gast.UnaryOp(op=UNARYOPS[spelling][0](), operand=args[0])
    elif spelling in CMPOPS:
        node = gast.Compare(left=args[0], ops=[CMPOPS[spelling]()], comparators=[args[1]])
    elif spelling == "[]":
        node = gast.Subscript(value=args[0], slice=args[1], ctx=gast.Load())
    else:
        node = gast.Call(func=_spelled(spelling), args=list(args),
                         keywords=[gast.keyword(arg=k, value=v) for k, v in keywords])
    anno.set(node, Anno.PRIM, (prim, spelling))
    return node


class Normalizer:
    """Normalizes one user function (or lambda, or nested def) into an IR FunctionIR."""

    def __init__(self, program, source, globals_, closure, ir_name, lifted=()):
        self.program = program
        self.callees = program.callees if program.callees is not None else Callees()
        self.src = source
        self.globals = globals_
        self.closure = closure                # free var name -> value (for global functions)
        self.lifted = list(lifted)            # free vars that became parameters
        self.ir_name = ir_name
        self.local_fns = {}                   # name -> LocalFunction / LocalPartial / Static
        self.local_imports = {}
        self.params = set()
        self.namer = None
        self.locals = set()

    # ------------------------------------------------------------------ entry
    def run(self, fdef):
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs:
            bad = args.vararg or args.kwarg or args.kwonlyargs[0]
            raise error_at(bad, self.src, f"{self.src.name}: *args, **kwargs and keyword-only "
                           "parameters are not supported in transformed functions.",
                           "list the parameters explicitly, or pass a tuple/dict as one "
                           "parameter (pytrees are supported).", pass_name="normalize")
        params = [a.id for a in args.posonlyargs + args.args]
        self.params = set(params)
        self.locals = _assigned_names(fdef.body) | set(params) | set(self.lifted)
        self.appended = _appended_names(fdef)
        self.namer = Namer(_all_names(fdef) | set(self.program.namespace) | {"np", "rt", "math"})
        body = self.block(fdef.body)
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

    def normalize(self, fdef):
        """The whole front end on `fdef`: A-normal form, one exit (`controlflow`), in-place
        writes resolved (`aliasing`)."""
        fir = self.run(fdef)
        controlflow.transform(fir.node, self.namer)
        aliasing.resolve(fir, self.program.functions)
        return fir

    def error(self, node, message, hint=None):
        return error_at(node, self.src, message, hint, pass_name="normalize")

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
        # `with np.errstate(...)` (which vmapped code uses around lanes whose results are
        # thrown away) only silences warnings: its body is transformed as if it were bare
        items = node.items
        if len(items) == 1 and items[0].optional_vars is None and \
                isinstance(items[0].context_expr, gast.Call) and \
                dotted(items[0].context_expr.func) in ("np.errstate", "numpy.errstate"):
            return self.block(node.body)
        raise self.error(node, "'With' statements are not supported in transformed code.",
                         _STMT_HINTS["With"])

    def stmt_Expr(self, node):
        v = node.value
        if isinstance(v, gast.Constant):
            return []  # docstring or bare constant
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
        tmp = self.namer.fresh("_")
        stmts.append(_assign(tmp, value, node))
        return stmts

    def stmt_Assign(self, node):
        stmts = []
        if len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            target = node.targets[0].id
            if self._bind_local_function(target, node.value, stmts):
                return stmts
            value = self.expr(node.value, stmts, hint=target)
            if isinstance(value, (Static, LocalFunction, LocalPartial, LocalTransformed)):
                self.local_fns[target] = value
                return stmts
            if (stmts and isinstance(stmts[-1], gast.Assign) and isinstance(value, gast.Name)
                    and stmts[-1].targets[0].id == value.id and value.id not in self.locals):
                stmts[-1].targets[0].id = target   # rename the last temporary to the target
                return stmts
            stmts.append(_assign(target, value, node))
            return stmts
        value = self.atom(node.value, stmts)
        for target in node.targets:
            self.assign_target(target, value, stmts, node)
        return stmts

    def stmt_AnnAssign(self, node):
        if node.value is None:
            return []
        return self.stmt_Assign(gast.copy_location(
            gast.Assign(targets=[node.target], value=node.value, type_comment=None), node))

    def assign_target(self, target, value, stmts, origin):
        if isinstance(target, gast.Name):
            stmts.append(_assign(target.id, value, origin))
        elif isinstance(target, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in target.elts):
                raise self.error(target, "starred unpacking is not supported.",
                                 "index the elements explicitly.")
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
            if _sequence_kind(node.value) is not None:    # xs += [v]: list extension
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
        new = gast.If(test=test, body=self.block(node.body), orelse=self.block(node.orelse))
        gast.copy_location(new, node)
        stmts.append(new)
        return stmts

    def stmt_While(self, node):
        if node.orelse:
            raise self.error(node, "while ... else is not supported.", "use a flag variable.")
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
        if node.orelse:
            raise self.error(node, "for ... else is not supported.", "use a flag variable.")
        stmts = []
        it = node.iter
        func = self.static(it.func) if isinstance(it, gast.Call) else None
        fn = func.value if isinstance(func, Static) else None
        target = node.target
        prefix = []
        spelling = "range"
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
        elif fn is builtins.enumerate and len(it.args) == 1 and isinstance(it.args[0], gast.Call) \
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
        elif fn is builtins.enumerate or fn is builtins.zip:
            if it.keywords:
                raise self.error(it, f"{fn.__name__}() with keyword arguments is not supported.")
            seqs = [self._pinned(self.atom(a, stmts, hint="seq"), node, stmts)
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
            stmts.append(_assign(n, lens[0] if len(lens) == 1 else prim_call("min", lens), it))
            if len(lens) > 2:
                raise self.error(it, "zip of more than two sequences is not supported yet.",
                                 "zip two at a time, or index by position.")
            bounds = [_name(n)]
            index = self.namer.fresh("i")
            items = [prim_call("[]", [s, _name(index)]) for s in seqs]
            if fn is builtins.enumerate:
                if not (isinstance(target, gast.Tuple) and len(target.elts) == 2):
                    raise self.error(target, "unpack enumerate as `for i, x in enumerate(xs)`.")
                self.assign_target(target.elts[0], _name(index), prefix, node)
                self._assign_item(target.elts[1], items[0], prefix, node)
            else:
                if not (isinstance(target, gast.Tuple) and len(target.elts) == len(items)):
                    raise self.error(target, "unpack zip as `for a, b in zip(xs, ys)`.")
                for elt, item in zip(target.elts, items):
                    self._assign_item(elt, item, prefix, node)
        else:
            seq = self._pinned(self.atom(it, stmts, hint="seq"), node, stmts)
            if isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute) \
                    and it.func.attr in ("items", "keys", "values"):
                raise self.error(it, "loops over dict views are not supported yet.",
                                 "loop over `for k in sorted(d)` keys held in a list.")
            n = self.namer.fresh("n")
            stmts.append(_assign(n, prim_call("len", [seq]), it))
            bounds = [_name(n)]
            index = self.namer.fresh("i")
            self._assign_item(target, prim_call("[]", [seq, _name(index)]), prefix, node)
        body = prefix + self.block(node.body)
        loop = gast.For(target=_name(index, gast.Store()),
                        iter=prim_call(spelling, bounds), body=body, orelse=[],
                        type_comment=None)
        gast.copy_location(loop, node)
        stmts.append(loop)
        return stmts

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

    def stmt_FunctionDef(self, node):
        decorators, node.decorator_list = node.decorator_list, []
        fn = self.lift(node, node.name)
        for deco in reversed(decorators):     # @tp.vmap, @partial(tp.vmap, in_axes=...)
            fn = self.decorate(fn, deco)
        self.local_fns[node.name] = fn
        return []

    def decorate(self, fn, deco):
        """A nested function under a decorator: only transformations are known here."""
        transform, options = self.static(deco), {}
        if transform is None and isinstance(deco, gast.Call) and deco.args and \
                not any(isinstance(a, gast.Starred) for a in deco.args):
            head = self.static(deco.func)
            if isinstance(head, Static) and head.value is functools.partial:
                transform, rest = self.static(deco.args[0]), deco.args[1:]
            else:
                transform, rest = None, []
            if rest or any(not isinstance(k.value, (gast.Constant, gast.Tuple))
                           for k in deco.keywords):
                transform = None
            options = {k.arg: _literal(k.value) for k in deco.keywords}
        elif transform is None and isinstance(deco, gast.Call) and not deco.args:
            head = self.static(deco.func)          # @tp.vmap(in_axes=...) is not JAX's
            transform = None if head is None else head
        if isinstance(transform, Static) and \
                self.callees.transformation(transform.value) not in (None, "jvp"):
            return self.apply_transformation(transform.value, fn, [], options, deco)
        raise self.error(deco, "this decorator cannot be applied to a nested function in "
                         "transformed code: only transpile's transformations can (tp.grad, "
                         "tp.vmap, ..., or functools.partial of one with literal options).",
                         "define the function outside the transformed one.")

    def stmt_Import(self, node):
        for alias in node.names:
            module = __import__(alias.name)
            if alias.asname:
                for part in alias.name.split(".")[1:]:
                    module = getattr(module, part)
            self.local_fns[alias.asname or alias.name.split(".")[0]] = Static(module)
        return []

    def stmt_ImportFrom(self, node):
        module = __import__(node.module, fromlist=[a.name for a in node.names])
        for alias in node.names:
            self.local_fns[alias.asname or alias.name] = Static(getattr(module, alias.name))
        return []

    def stmt_Assert(self, node):
        return []  # assertions are checks on the primal; the transformed code drops them

    # ------------------------------------------------------------------ expressions
    def atom(self, node, stmts, hint=None):
        """Normalize `node` and return an atom (Name or Constant) holding its value."""
        value = self.expr(node, stmts, hint=hint)
        if isinstance(value, (gast.Name, gast.Constant)):
            return value
        if isinstance(value, Static):
            return self.static_atom(value.value, node)
        if isinstance(value, (LocalFunction, LocalPartial, LocalTransformed)):
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
        if is_module(value) or callable(value) and not hasattr(value, "dtype"):
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

    def expr_Name(self, node, stmts):
        name = node.id
        if name in self.local_fns:
            return self.local_fns[name]
        if name in self.locals:
            return _name(name)
        if name in self.closure:
            return Static(self.closure[name])
        if name in self.globals:
            return Static(self.globals[name])
        if hasattr(builtins, name):
            return Static(getattr(builtins, name))
        raise self.error(node, f"name '{name}' is not defined.")

    def static(self, node):
        """The statically known value of `node`, or None."""
        if isinstance(node, gast.Name):
            if node.id in self.local_fns:
                return self.local_fns[node.id]
            if node.id in self.locals:
                return None
            try:
                return self.expr_Name(node, [])
            except Exception:
                return None
        if isinstance(node, gast.Attribute):
            base = self.static(node.value)
            if isinstance(base, Static) and hasattr(base.value, node.attr):
                return Static(getattr(base.value, node.attr))
        return None

    def expr_Attribute(self, node, stmts):
        static = self.static(node)
        if static is not None:
            return static
        base = self.static(node.value)
        if isinstance(base, Static):
            raise self.error(node, f"{getattr(base.value, '__name__', base.value)!r} has no "
                             f"attribute {node.attr!r}.")
        value = self.atom(node.value, stmts)
        if node.attr in ARRAY_ATTRS:
            return prim_call(ARRAY_ATTRS[node.attr], [value])
        raise self.error(node, f"attribute '.{node.attr}' is not supported in transformed code.",
                         "supported array attributes: " + ", ".join(sorted(ARRAY_ATTRS)))

    def expr_BinOp(self, node, stmts, hint=None):
        kind = _sequence_kind(node)
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
            raise self.error(node, "starred elements in literals are not supported.")
        elts = [self.atom(e, stmts) for e in node.elts]
        new = (gast.Tuple if kind == "tuple" else gast.List)(elts=elts, ctx=gast.Load())
        anno.set(new, Anno.PRIM, (rules.lookup(kind), kind))
        return new

    def expr_Dict(self, node, stmts):
        if any(k is None for k in node.keys):
            raise self.error(node, "**unpacking in dict literals is not supported.")
        keys = [self.atom(k, stmts) for k in node.keys]
        values = [self.atom(v, stmts) for v in node.values]
        new = gast.Dict(keys=keys, values=values)
        anno.set(new, Anno.PRIM, (rules.lookup("dict"), "dict"))
        return new

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
            seq, count = (node.left, node.right) if _sequence_kind(node.left) else \
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

    def _comprehension(self, node, stmts, hint):
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
        for name in _assigned_names(inner):
            self.locals.add(name)
        stmts.extend(self.block(inner))
        return _name(result)

    def expr_Lambda(self, node, stmts):
        fdef = gast.FunctionDef(name="lambda", args=node.args, body=[gast.Return(value=node.body)],
                                decorator_list=[], returns=None, type_comment=None,
                                type_params=[])
        gast.copy_location(fdef, node)
        return self.lift(fdef, "lambda")

    def expr_Call(self, node, stmts, hint=None):
        if any(isinstance(a, gast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            raise self.error(node, "*args and **kwargs in calls are not supported.",
                             "pass the arguments one by one.")
        func = node.func
        if isinstance(func, gast.Attribute) and self.static(func) is None:
            return self.method_call(node, stmts)
        callee = self.static(func)
        if callee is None:
            if isinstance(func, gast.Call):
                callee = self.expr(func, stmts)
                if not isinstance(callee, (Static, LocalTransformed)):
                    raise self.error(func, "this call does not produce a function known "
                                     "while transforming.")
            else:
                raise self.error(func, "calling a function held in a variable is not supported.",
                                 "call the function by its name.")
        return self.call(callee, node, stmts)

    def call(self, callee, node, stmts):
        kind = self.callees.transformation(callee.value) if isinstance(callee, Static) else None
        if kind == "jvp":
            return self.jvp_call(node, stmts)
        if kind is not None:
            return self.transformation(callee.value, node)
        if isinstance(callee, LocalTransformed):
            args = [self.atom(a, stmts) for a in node.args] + \
                [_name(v) for v in callee.freevars]
            return self.call_static(callee.transformed, args, [], node, stmts)
        if isinstance(callee, Static) and callee.value is functools.partial:
            target = self.static(node.args[0]) if node.args else None
            if target is None:
                raise self.error(node, "functools.partial needs a function known while "
                                 "transforming.")
            if any(k.arg is None for k in node.keywords):
                raise self.error(node, "**kwargs in calls are not supported.",
                                 "pass the arguments one by one.")
            return LocalPartial(target, [self.atom(a, stmts) for a in node.args[1:]],
                                [(k.arg, self.atom(k.value, stmts)) for k in node.keywords])
        args = [self.atom(a, stmts) for a in node.args]
        keywords = [(k.arg, self.atom(k.value, stmts)) for k in node.keywords]
        if isinstance(callee, LocalPartial):
            args = callee.args + args
            given = {k for k, _ in keywords}       # the call's keywords win over the partial's
            keywords = [(k, v) for k, v in callee.keywords if k not in given] + keywords
            callee = callee.target
        if isinstance(callee, LocalFunction):
            return self.user_call(callee.ir_name, callee.params, callee.defaults, args, keywords,
                                  node, extra=[_name(v) for v in callee.freevars])
        value = callee.value
        if isinstance(value, functools.partial):
            pname = self.program.constant(value, getattr(node.func, "id", "partial"))
            pargs = []
            for i in range(len(value.args)):
                pargs.append(self.atom_of(prim_call("[]", [
                    self.atom_of(gast.Attribute(value=_name(pname), attr="args",
                                                ctx=gast.Load()), stmts, "partial_args"),
                    _const(i)]), stmts, "partial_arg"))
            given = {k for k, _ in keywords}
            bound = [k for k in value.keywords if k not in given]   # the call's keywords win
            if bound:
                kwargs = self.atom_of(gast.Attribute(value=_name(pname), attr="keywords",
                                                     ctx=gast.Load()), stmts, "partial_kwargs")
                keywords = [(k, self.atom_of(prim_call("[]", [kwargs, _const(k)]), stmts,
                                             k)) for k in bound] + list(keywords)
            return self.call_static(value.func, pargs + args, keywords, node, stmts)
        return self.call_static(value, args, keywords, node, stmts)

    def atom_of(self, value, stmts, hint):
        """A fresh name assigned `value` (for reading a partial object's bound arguments)."""
        tmp = self.namer.fresh(hint)
        stmts.append(_assign(tmp, value))
        return _name(tmp)

    def call_static(self, value, args, keywords, node, stmts):
        if isinstance(value, custom.CustomRule):
            # Generated code calls the custom object itself, so code transformed again
            # still meets its rules.
            name = self.program.constant(value, value.__name__)
            self.program.custom[name] = value
            params = list(value.signature.parameters)
            defaults = {p.name: p.default for p in value.signature.parameters.values()
                        if p.default is not inspect.Parameter.empty}
            return self.user_call(name, params, defaults, args, keywords, node)
        transformed = self.callees.transformed_call(value)
        if transformed is not None:
            ir_name, params, _ = normalize_function(transformed.entry_function, self.program)
            prefix = [self.static_atom(v, node) for v in transformed.prefix]
            extra = [self.static_atom(v, node) for v in transformed.extra]
            return self.user_call(ir_name, params, transformed.defaults, prefix + args,
                                  keywords, node, extra=extra)
        found = rules.lookup_object(value)
        if found is not None:
            return prim_call(found[1], args, keywords)
        if value in (builtins.tuple, builtins.list) and len(args) == 1 and not keywords:
            return prim_call("rt.to_" + value.__name__, args)   # converting a container
        if inspect.isfunction(value) or inspect.ismethod(value):
            ir_name, params, defaults = self.program_function(value, node)
            return self.user_call(ir_name, params, defaults, args, keywords, node)
        written = dotted(node.func) if isinstance(node, gast.Call) else None
        raise self.error(node, *rules.core.missing_rule_message(value, written))

    def program_function(self, fn, node):
        return normalize_function(fn, self.program, node, self.src)

    def user_call(self, ir_name, params, defaults, args, keywords, node, extra=()):
        bound = list(args)
        n_user = len(params) - len(extra)
        if len(bound) > n_user:
            raise self.error(node, f"too many arguments: {ir_name} takes {n_user}.")
        kw = dict(keywords)
        for p in params[len(bound):n_user]:
            if p in kw:
                bound.append(kw.pop(p))
            elif p in defaults:
                d = defaults[p]
                bound.append(_const(d) if is_literal(d) else
                             _name(self.program.constant(d, p + "_default")))
            else:
                raise self.error(node, f"missing argument '{p}' in call to {ir_name}.")
        if kw:
            raise self.error(node, f"unexpected keyword argument '{next(iter(kw))}' in call "
                             f"to {ir_name}.")
        call = gast.Call(func=_name(ir_name), args=bound + list(extra), keywords=[])
        anno.set(call, Anno.CALLEE, ir_name)
        return call

    def method_call(self, node, stmts):
        func = node.func
        obj = self.atom(func.value, stmts)
        name = func.attr
        args = [self.atom(a, stmts) for a in node.args]
        keywords = [(k.arg, self.atom(k.value, stmts)) for k in node.keywords]
        if name in VARARG_METHODS:
            if len(args) > 1:
                packed = gast.Tuple(elts=args, ctx=gast.Load())
                anno.set(packed, Anno.PRIM, (rules.lookup("tuple"), "tuple"))
                tmp = self.namer.fresh("shape" if name == "reshape" else "axes")
                stmts.append(_assign(tmp, packed, node))
                args = [_name(tmp)]
            return prim_call(VARARG_METHODS[name], [obj] + args, keywords)
        if name in ARRAY_METHODS:
            return prim_call(ARRAY_METHODS[name], [obj] + args, keywords)
        raise self.error(node, f"method '.{name}()' is not supported in transformed code.",
                         "call the numpy function instead (np.<name>(x, ...)); supported "
                         "methods: " + ", ".join(sorted(ARRAY_METHODS) + sorted(VARARG_METHODS)))

    def transformation(self, transform, node):
        """`tp.grad(g, ...)` inside transformed code: applied now, while transforming.

        A nested g is compiled from its lifted IR (free variables become trailing
        parameters, passed at each call), so an outer transformation sees how the inner
        result depends on them: no perturbation confusion."""
        if not node.args or any(not isinstance(a, gast.Constant) for a in node.args[1:]) or \
                any(not isinstance(k.value, (gast.Constant, gast.Tuple)) for k in node.keywords):
            raise self.error(node, f"{transform.__name__}() inside transformed code needs a "
                             "function and constant options.",
                             f"write {transform.__name__}(f, argnums=0) with literal options.")
        options = {k.arg: _literal(k.value) for k in node.keywords}
        extra = [a.value for a in node.args[1:]]
        fn = node.args[0]
        if isinstance(fn, gast.Lambda):          # tp.vmap(lambda r: ...)
            target = self.expr_Lambda(fn, [])
        else:
            target = self.static(fn)
            if target is None and isinstance(fn, gast.Call):   # tp.grad(tp.grad(f))
                target = self.expr(fn, [])
        return self.apply_transformation(transform, target, extra, options, fn)

    def apply_transformation(self, transform, target, extra, options, where):
        """`transform(target, *extra, **options)` for a function known while transforming."""
        freevars = getattr(target, "freevars", ())
        if self.callees.transformation(transform) == "vmap" and freevars:
            # a nested function's free variables are trailing parameters: the same for
            # every example
            options = dict(options)
            in_axes = extra[0] if extra else options.pop("in_axes", 0)
            extra = []
            nparams = len(target.params) - len(freevars) if isinstance(target, LocalFunction) \
                else len(target.transformed.signature.parameters) - len(freevars)
            if not isinstance(in_axes, (tuple, list)):
                in_axes = (in_axes,) * nparams
            options["in_axes"] = tuple(in_axes) + (None,) * len(freevars)
        if isinstance(target, LocalTransformed):
            return LocalTransformed(transform(target.transformed, *extra, **options),
                                    target.freevars)
        if isinstance(target, Static):
            return Static(transform(target.value, *extra, **options))
        if isinstance(target, LocalFunction):
            fn = self.callees.compile(self.program, target.ir_name)
            return LocalTransformed(transform(fn, *extra, **options), target.freevars)
        raise self.error(where, f"{transform.__name__}() needs a function known while "
                         "transforming.")

    def jvp_call(self, node, stmts):
        """`tp.jvp(f, (x, y), (dx, dy))` inside transformed code: a call of f's jvp function."""
        if len(node.args) != 3 or not all(isinstance(a, (gast.Tuple, gast.List))
                                          for a in node.args[1:]) or \
                any(k.arg != "has_aux" for k in node.keywords):
            raise self.error(node, "tp.jvp inside transformed code needs literal tuples: "
                             "tp.jvp(f, (x, ...), (dx, ...)).")
        options = {k.arg: _literal(k.value) for k in node.keywords}
        target = self.static(node.args[0])
        if target is None and isinstance(node.args[0], gast.Call):   # tp.jvp(tp.grad(f), ...)
            target = self.expr(node.args[0], stmts)
        if isinstance(target, LocalTransformed):
            fn, extra = target.transformed, target.freevars
        elif isinstance(target, Static):
            fn, extra = target.value, []
        elif isinstance(target, LocalFunction):
            fn, extra = self.callees.compile(self.program, target.ir_name), target.freevars
        else:
            raise self.error(node.args[0], "tp.jvp needs a function known while transforming.")
        t = self.callees.transformed_call(self.callees.jvp_of(fn, options))
        # the jvp function takes: bound prefix, arguments, closure values, lifted free
        # variables; then one tangent for each (zero for all but the arguments')
        before = [self.static_atom(v, node) for v in t.prefix]
        after = [self.static_atom(v, node) for v in t.extra] + \
            [_name(v) for v in extra]
        primals = before + [self.atom(a, stmts) for a in node.args[1].elts] + after
        tangents = [self.atom(a, stmts) for a in node.args[2].elts]
        zeros = []
        for v in before + after:   # values the caller does not perturb
            z = self.namer.fresh("zero_dot")
            stmts.append(_assign(z, prim_call("rt.tangent_zeros", [v])))
            zeros.append(_name(z))
        tangents = zeros[:len(before)] + tangents + zeros[len(before):]
        ir_name, params, _ = normalize_function(t.entry_function, self.program)
        call = gast.Call(func=_name(ir_name), args=primals + tangents, keywords=[])
        anno.set(call, Anno.CALLEE, ir_name)
        return call

    # ------------------------------------------------------------------ lifting
    def _bind_local_function(self, target, value, stmts):
        if isinstance(value, gast.Lambda):
            fdef = gast.FunctionDef(name=target, args=value.args,
                                    body=[gast.Return(value=value.body)], decorator_list=[],
                                    returns=None, type_comment=None, type_params=[])
            gast.copy_location(fdef, value)
            self.local_fns[target] = self.lift(fdef, target)
            return True
        return False

    def lift(self, fdef, hint):
        """Lift a nested def/lambda to an IR function; its free variables become parameters."""
        own = _assigned_names(fdef.body) | {a.id for a in fdef.args.args}
        used = {n.id for n in gast.walk(fdef) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load)}
        # local functions it calls are resolved while transforming; what they read from
        # here is read by this one too
        called = [self.local_fns[n] for n in used - own if n in self.local_fns]
        used = (used - {n for n in used - own if n in self.local_fns}) | \
            {v for f in called for v in getattr(f, "freevars", ())}
        free = sorted((used - own) & (self.locals | set(self.lifted)))
        name = self.program.namer.fresh(f"{self.ir_name}_{hint}")
        defaults = {}
        if fdef.args.defaults:
            names = [a.id for a in fdef.args.args][-len(fdef.args.defaults):]
            for n, d in zip(names, fdef.args.defaults):
                if not isinstance(d, gast.Constant):
                    raise self.error(d, "default values of nested functions must be constants.")
                defaults[n] = d.value
            fdef.args.defaults = []
        inner = Normalizer(self.program, self.src, self.globals, self.closure, name,
                           lifted=free)
        inner.local_fns = dict(self.local_fns)
        self.program.functions[name] = None  # reserve (recursion)
        self.program.functions[name] = inner.normalize(fdef)
        params = [a.id for a in fdef.args.args]
        return LocalFunction(name, params + free, free, defaults)


_STMT_HINTS = {
    "Try": "try/except inside transformed code is not supported: move it outside the "
           "transformed function.",
    "With": "with-blocks are not supported: move them outside the transformed function.",
    "Global": "writing globals from transformed code is not supported: return the value.",
    "Nonlocal": "nonlocal writes are not supported: return the value instead.",
    "Delete": "del is not supported: just stop using the name.",
    "ClassDef": "define classes outside the transformed function.",
    "Raise": "raise is not supported inside transformed code: check inputs before calling.",
    "AsyncFunctionDef": "async functions cannot be transformed.",
}
_EXPR_HINTS = {
    "Yield": "generators cannot be transformed: build a list and return it.",
    "YieldFrom": "generators cannot be transformed: build a list and return it.",
    "Await": "async code cannot be transformed.",
    "SetComp": "sets have no derivative: use a list.",
    "DictComp": "build the dict with a loop over keys.",
    "NamedExpr": "assign with a separate statement.",
    "JoinedStr": "f-strings are only supported inside print().",
}


def _literal(node):
    if isinstance(node, gast.Tuple):
        return tuple(_literal(e) for e in node.elts)
    if isinstance(node, gast.Constant):
        return node.value
    raise ValueError(node)


def _call_like(node, pargs, args, keywords):
    call = gast.Call(func=node.func, args=pargs + args,
                     keywords=[gast.keyword(arg=k, value=v) for k, v in keywords])
    return gast.copy_location(call, node)


def _sequence_kind(node):
    """"tuple" or "list" when `node` is `+` or `*` on a tuple or list written as one (a display,
    a comprehension, `tuple(...)`/`list(...)`, or such a sum), else None (an array operation)."""
    if isinstance(node, gast.Tuple):
        return "tuple"
    if isinstance(node, (gast.List, gast.ListComp)):
        return "list"
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
            node.func.id in ("tuple", "list") and len(node.args) <= 1:
        return node.func.id
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add):
        return _sequence_kind(node.left) or _sequence_kind(node.right)
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Mult):
        return _sequence_kind(node.left) or _sequence_kind(node.right)
    return None


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


def _assigned_names(stmts):
    names = set()
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                names.add(n.id)
            elif isinstance(n, (gast.FunctionDef,)):
                names.add(n.name)
    return names


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
