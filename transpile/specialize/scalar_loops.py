"""Loops on numbers, compiled whole (the jit pass's last step on the CPU, with numba).

A loop on numbers, such as

    while i < n:
        x = 0.999 * x + 0.001 * np.sin(x)
        i = i + 1

with its reverse pass, costs microseconds per trip as Python: every `np.sin` of a number is
a ufunc call, every `+` of numpy scalars a dispatch. When, in a run of the function's
top-level statements that holds a loop, every value is a float64, int64 or bool number
(shapes.py: an Array of shape () or a Number) and every operation one that numba computes
as Python and numpy do, the run becomes a function of its own:

    dx, x = grad_decay_loop(x)

defined above the specialized function with the run's statements for numba (stacks as
lists, `reversed(range(n))` as a range counting down, helpers of numbers done), next to
the run's statements as they were (`grad_decay_loop_python`). runtime.kernels.ScalarLoop
runs the latter for its first calls and for arguments numba would change (a 0-d array),
and numba's compilation of the former from then on. Generated helpers called in a loop
that compute numbers from numbers are inlined first (`inline_number_helpers`).

After the run, what kind of number a value is matters: a Python float where the plain call
has one (`float32_array * x` stays float32), an np.float64 where it has that. The compiled
function returns plain float64s: where inference knows the kind, ScalarLoop converts; where
it does not (a Number: an argument 0.7 that the loop's first trip turns into an np.float64),
the function keeps a flag beside the value (`x_weak`, True for a Python number), set
wherever the value is and saved beside it, and returns it.

Left as Python (the run stops there): arrays (fused kernels are for those), integer `*` and
`**` (numba's int64 wraps where Python's int grows), `//` and `%`, `**` of Python floats
(Python raises OverflowError, numba gives inf), a division whose zero divisor Python would
raise on and numpy turn into inf within one run, calls other than numpy's elementwise math
and reductions of one float, tuples, None, and anything inference does not know.
"""
import copy

import gast
import numpy as np

from ..ir.analysis import assigned_in, definitely_assigned
from ..ir.nodes import assign, const, funcdef, name
from ..ir.templates import dotted
from .abstract import NUMBER_DTYPES, Array, Number
from .inline import written_out
from .shapes import infer

# numpy functions of one number that numba computes as numpy does (checked on edge values
# in tests/test_jit.py)
MATH = frozenset(f"np.{f}" for f in (
    "sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh", "arctan", "arcsin",
    "arccos", "log1p", "expm1", "abs", "absolute", "square"))

# reductions, which of one float64 give that float (as an np.float64)
REDUCTIONS = frozenset(f"np.{f}" for f in ("sum", "mean", "max", "min", "prod", "amax",
                                            "amin"))

_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div)
_COMPARISONS = (gast.Lt, gast.LtE, gast.Gt, gast.GtE, gast.Eq, gast.NotEq)


class ScalarRegion:
    """One run made a function: `fdef` (its definition) and how ScalarLoop calls it."""

    def __init__(self, fdef, python_fdef, weak_inputs, outputs, error_model):
        self.fdef = fdef                    # the statements for numba, with flags
        self.python_fdef = python_fdef      # the run's statements as they were
        self.weak_inputs = weak_inputs      # positions of inputs whose kind it is told
        self.outputs = outputs              # (dtype name, weak: True/False/None=flag)
        self.error_model = error_model      # numba's: "python" or "numpy" division by zero
        self.owner = None                   # the specialized function that calls it


def compile_scalar_loops(fdef, inference, environment_before, namer):
    """Turn each qualifying run of `fdef`'s top-level statements into a call of a function
    of its own; returns the ScalarRegions. `inference`: shapes.py's of the whole function;
    `environment_before(k)`: the abstract values of names before statement k."""
    checks = [_Check(inference).statement(s) for s in fdef.body]
    regions, k = [], 0
    while k < len(fdef.body):
        if checks[k] is None:
            k += 1
            continue
        end = k
        while end < len(fdef.body) and checks[end] is not None:
            end += 1
        region = _make_region(fdef, k, end, checks[k:end], inference, environment_before,
                              namer)
        if region is None:
            k = end
            continue
        region_fdef, call = region
        fdef.body[k:end] = [call]
        regions.append(region_fdef)
        checks[k:end] = [None]
        k += 1
    return regions


def inline_number_helpers(fdef, inference, functions, namer):
    """Calls, inside a loop of `fdef`, of generated helpers (`functions`: name -> the
    specialized FunctionDef) that compute numbers only from numbers become the helper's
    statements, with names of their own: `while abs_gap(x, a) > tol:` can then compile
    whole. True if any call was inlined (inference must run again)."""
    done = [False]

    def block(stmts, in_loop):
        out = []
        for s in stmts:
            inlined = in_loop and _inlined(s, inference, functions, namer)
            if inlined:
                out.extend(inlined)
                done[0] = True
                continue
            if isinstance(s, gast.If):
                s.body, s.orelse = block(s.body, in_loop), block(s.orelse, in_loop)
            elif isinstance(s, (gast.For, gast.While)):
                s.body = block(s.body, True)
            out.append(s)
        return out
    fdef.body = block(fdef.body, False)
    return done[0]


_BASES = frozenset(("np", "rt", "range", "reversed"))


def _inlined(s, inference, functions, namer):
    """The statements replacing `t = helper(a, b)`, or None."""
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
            isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call) and
            isinstance(s.value.func, gast.Name) and s.value.func.id in functions and
            not s.value.keywords):
        return None
    helper, args = functions[s.value.func.id], s.value.args
    params = [a.id for a in helper.args.args]
    if helper.args.vararg or helper.args.kwarg or helper.args.kwonlyargs or \
            len(params) != len(args) or \
            not all(isinstance(a, (gast.Name, gast.Constant)) for a in args) or \
            not all(_is_number(inference.of(a)) for a in args):
        return None
    body = helper.body
    if not body or not isinstance(body[-1], gast.Return) or body[-1].value is None or \
            any(isinstance(n, (gast.Return, gast.FunctionDef, gast.Lambda, gast.Global,
                               gast.Nonlocal, gast.Yield))
                for t in body[:-1] for n in gast.walk(t)):
        return None
    stored = {n.id for n in gast.walk(helper) if isinstance(n, gast.Name) and
              isinstance(n.ctx, (gast.Store, gast.Del))}
    loaded = {n.id for n in gast.walk(helper) if isinstance(n, gast.Name) and
              isinstance(n.ctx, gast.Load)}
    if loaded - stored - set(params) - _BASES:
        return None                  # a global or a closure's value: its scope differs
    helper_inference = infer(helper, {p: inference.of(a) for p, a in zip(params, args)})
    check = _Check(helper_inference)
    if not all(check.statement(t) for t in body[:-1]) or not check.expr(body[-1].value):
        return None
    return written_out(s, helper, {v: namer.fresh(f"{v}_{helper.name}")
                                   for v in sorted(stored | set(params))})


class _Check:
    """Whether one statement can run compiled, and what it needs (a statement's check)."""

    def __init__(self, inference):
        self.inference = inference
        self.loads = set()        # names read
        self.numbers = set()      # names and stacks that hold a Number somewhere
        self.stacks = set()       # stacks it creates, pushes to or pops from
        self.divisions = set()    # "python" / "numpy": what a division by zero does
        self.has_loop = False

    def kind(self, node):
        a = self.inference.of(node)
        return a if _is_number(a) else None

    def statement(self, s):
        """self if `s` qualifies, else None."""
        return self if self._statement(s) else None

    def _statement(self, s):
        if isinstance(s, gast.Assign):
            if len(s.targets) != 1 or not isinstance(s.targets[0], gast.Name):
                return False
            target, v = s.targets[0].id, s.value
            if isinstance(v, gast.List) and not v.elts:
                self.stacks.add(target)            # a stack of saved numbers, made here
                return True
            if isinstance(v, gast.Call) and dotted(v.func) == "rt.pop":
                if len(v.args) != 1 or not isinstance(v.args[0], gast.Name) or \
                        self.kind(v) is None:
                    return False
                self.stacks.add(v.args[0].id)
                if isinstance(self.kind(v), Number):
                    self.numbers |= {target, v.args[0].id}
                return True
            if not self.expr(v):
                return False
            if isinstance(self.kind(v), Number):
                self.numbers.add(target)
            return True
        if isinstance(s, gast.Expr):
            v = s.value
            if isinstance(v, gast.Call) and dotted(v.func) == "rt.push" and len(v.args) == 2 \
                    and isinstance(v.args[0], gast.Name) and not v.keywords:
                self.stacks.add(v.args[0].id)
                if isinstance(self.kind(v.args[1]), Number):
                    self.numbers.add(v.args[0].id)
                return self.expr(v.args[1])
            return False
        if isinstance(s, gast.If):
            return self.expr(s.test) and all(self._statement(t) for t in s.body + s.orelse)
        if isinstance(s, gast.While):
            self.has_loop = True
            return not s.orelse and self.expr(s.test) and all(map(self._statement, s.body))
        if isinstance(s, gast.For):
            self.has_loop = True
            return not s.orelse and isinstance(s.target, gast.Name) and \
                self._range(s.iter) is not None and all(map(self._statement, s.body))
        return isinstance(s, (gast.Break, gast.Continue, gast.Pass))

    def _range(self, node):
        """The arguments of `range(...)` or `reversed(range(...))` of ints, and whether
        reversed; else None."""
        reverse = isinstance(node, gast.Call) and dotted(node.func) == "reversed" and \
            len(node.args) == 1
        if reverse:
            node = node.args[0]
        if not (isinstance(node, gast.Call) and dotted(node.func) == "range" and
                1 <= len(node.args) <= (2 if reverse else 3) and not node.keywords):
            return None
        for a in node.args:
            if not self.expr(a) or self.kind(a).dtype.kind != "i":
                return None
        return node.args, reverse

    def expr(self, node):
        """True if `node` is a number computed by operations numba shares."""
        kind = self.kind(node)
        if kind is None:
            return False
        if isinstance(node, gast.Constant):      # (a numpy number: a global, inlined)
            return type(node.value) in (bool, int, float, np.float64, np.int64, np.bool_)
        if isinstance(node, gast.Name):
            self.loads.add(node.id)
            if isinstance(kind, Number):
                self.numbers.add(node.id)
            return True
        if isinstance(node, gast.UnaryOp):
            return isinstance(node.op, (gast.USub, gast.UAdd)) and kind.dtype.kind != "b" \
                and self.expr(node.operand)
        if isinstance(node, gast.Compare):
            return len(node.ops) == 1 and isinstance(node.ops[0], _COMPARISONS) and \
                self.expr(node.left) and self.expr(node.comparators[0])
        if isinstance(node, gast.BinOp):
            return self._binop(node)
        if isinstance(node, gast.Call) and not node.keywords:
            spelling, args = dotted(node.func), node.args
            if spelling in MATH and len(args) == 1:
                return self.kind(args[0]) is not None and \
                    self.kind(args[0]).dtype.kind in "if" and self.expr(args[0])
            if spelling == "rt.seed" and len(args) == 2 and \
                    isinstance(args[1], gast.Constant):
                return self.expr(args[0])
            if spelling in ("rt.shape_only", "np.float64") and len(args) == 1:
                return self.expr(args[0])
            if spelling == "rt.number_only" and len(args) == 5 and \
                    self.kind(args[0]) is not None and not self.kind(args[0]).shape:
                return self.expr(args[0])        # a number: itself
            if spelling in REDUCTIONS and len(args) == 1:     # of one float: itself
                return self.kind(args[0]) is not None and \
                    self.kind(args[0]).dtype.kind == "f" and self.expr(args[0])
            if spelling == "rt.unbroadcast" and len(args) == 2:
                return self.expr(args[0]) and self.expr(args[1])
            if spelling == "rt.add" and len(args) == 2:
                return all(self.kind(a) is not None and self.kind(a).dtype.kind != "b"
                           for a in args) and self.expr(args[0]) and self.expr(args[1])
        return False

    def _binop(self, node):
        left, right = self.kind(node.left), self.kind(node.right)
        if left is None or right is None or not isinstance(node.op, _ARITHMETIC) or \
                "b" in (left.dtype.kind, right.dtype.kind):
            return False
        if isinstance(node.op, gast.Mult) and left.dtype.kind == right.dtype.kind == "i":
            return False                   # may pass 2**63: Python grows, numba wraps
        if isinstance(node.op, gast.Div):
            divisor = node.right
            if not (isinstance(divisor, gast.Constant) and divisor.value != 0):
                if isinstance(left, Number) or isinstance(right, Number):
                    return False           # raises or gives inf: unknown here
                # two Python numbers: ZeroDivisionError; a numpy scalar: inf or nan
                self.divisions.add("python" if left.weak and right.weak else "numpy")
        return self.expr(node.left) and self.expr(node.right)

    def merge(self, other):
        self.loads |= other.loads
        self.numbers |= other.numbers
        self.stacks |= other.stacks
        self.divisions |= other.divisions
        self.has_loop = self.has_loop or other.has_loop


def _loads(stmts):
    return {n.id for s in stmts for n in gast.walk(s)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _make_region(fdef, start, end, checks, inference, environment_before, namer):
    """(the region's function, the statement calling it) for fdef.body[start:end], or None
    where the run does not qualify as a whole."""
    info = copy.copy(checks[0])
    info.loads, info.numbers = set(info.loads), set(info.numbers)
    info.stacks, info.divisions = set(info.stacks), set(info.divisions)
    for c in checks[1:]:
        info.merge(c)
    run = fdef.body[start:end]
    if not info.has_loop or len(info.divisions) > 1:
        return None
    outside = fdef.body[:start] + fdef.body[end:]
    if info.stacks & {n.id for s in outside for n in gast.walk(s) if isinstance(n, gast.Name)}:
        return None                       # a stack also used outside the run
    entry = environment_before(start)
    defined_before = set(entry)
    stored = assigned_in(run)
    live_out = (_loads(fdef.body[end:]) & stored) - info.stacks
    if live_out - defined_before - definitely_assigned(run):
        return None                       # maybe unbound after the run
    live_in = sorted((info.loads | live_out) & defined_before)
    if info.loads - defined_before - stored:
        return None                       # a global or a closure's value
    if any(not _is_number(entry.get(v)) for v in live_in):
        return None
    exit_kinds = environment_before(end)
    if any(not _is_number(exit_kinds.get(v)) for v in live_out):
        return None

    # a flag for every name and stack that holds a Number anywhere in the run, comes in as
    # one, or leaves as one (`y = np.sin(x) if ... else 0.5`, read only after the run)
    flagged = info.numbers | {v for v in live_in if isinstance(entry.get(v), Number)} | \
        {v for v in live_out if isinstance(exit_kinds.get(v), Number)}
    flags = {v: namer.fresh(f"{v}_weak") for v in sorted(flagged)}
    writer = _Writer(inference, flags, info.stacks)
    body = writer.block(run)
    outputs, returned = [], []
    for v in sorted(live_out):
        kind = exit_kinds[v]
        returned.append(name(v))
        if isinstance(kind, Number):
            returned.append(name(flags[v]))
            outputs.append((kind.dtype.name, None))
        else:
            outputs.append((kind.dtype.name, kind.weak))
    body.append(gast.Return(value=gast.Tuple(elts=returned, ctx=gast.Load())))
    body = _without_unread_flags(body, set(flags.values()))
    weak_inputs = tuple(i for i, v in enumerate(live_in) if v in flags)
    params = live_in + [flags[live_in[i]] for i in weak_inputs]
    region_name = namer.fresh(f"{fdef.name}_loop")
    region_fdef = funcdef(region_name, params, body, run[0])
    error_model = "python" if "python" in info.divisions else "numpy"
    # the run as it was, for calls numba does not run (its first, a 0-d array argument):
    # the plain code's kinds of number come out of it as they are
    python_fdef = funcdef(f"{region_name}_python", live_in, copy.deepcopy(run) + [
        gast.Return(value=gast.Tuple(elts=[name(v) for v in sorted(live_out)],
                                     ctx=gast.Load()))], run[0])
    region = ScalarRegion(region_fdef, python_fdef, weak_inputs, tuple(outputs),
                          error_model)
    value = gast.Call(func=name(region_name), args=[name(v) for v in live_in], keywords=[])
    if live_out:
        call = assign(sorted(live_out), value)
    else:
        call = gast.Expr(value=value)
    gast.copy_location(call, run[0])
    return region, call


def _without_unread_flags(body, flag_names):
    """The body without assignments of flags nothing reads (a flag is kept for every
    number whose kind may be asked for; most never are)."""
    def size(stmts):
        return sum(1 for s in stmts for _ in gast.walk(s))

    while True:
        before = size(body)      # (keep rewrites loop bodies in place)
        read = {n.id for s in body for n in gast.walk(s)
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
        unread = flag_names - read

        def keep(stmts):
            out = []
            for s in stmts:
                if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and \
                        s.targets[0].id in unread:
                    if isinstance(s.value, gast.Call):      # a flag stack's pop: still popped
                        out.append(gast.Expr(value=s.value))
                    continue
                if isinstance(s, (gast.If, gast.For, gast.While)):
                    s.body = keep(s.body) or [gast.Pass()]
                    s.orelse = keep(s.orelse)
                out.append(s)
            return out
        new = keep(body)
        if size(new) == before:
            return new
        body = new


def _is_number(a):
    return isinstance(a, (Array, Number)) and a.shape == () and a.dtype in NUMBER_DTYPES


class _Writer:
    """The run's statements as the region function's: stacks as lists, helpers done, and
    the flag of every number whose kind is known only when it runs."""

    def __init__(self, inference, flags, stacks):
        self.inference, self.flags, self.stacks = inference, flags, stacks

    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.statement(s))
        return out

    def statement(self, s):
        if isinstance(s, gast.Assign):
            target, v = s.targets[0].id, s.value
            if isinstance(v, gast.List):
                made = [assign(target, gast.List(elts=[], ctx=gast.Load()))]
                if target in self.flags:
                    made.append(assign(self.flags[target], gast.List(elts=[], ctx=gast.Load())))
                return made
            if isinstance(v, gast.Call) and dotted(v.func) == "rt.pop":
                stack = v.args[0].id
                made = [assign(target, _method(stack, "pop", []))]
                if stack in self.flags:
                    popped = _method(self.flags[stack], "pop", [])
                    made.append(assign(self.flags[target], popped) if target in self.flags
                                else gast.Expr(value=popped))
                elif target in self.flags:
                    made.append(assign(self.flags[target], const(self._kind(v).weak)))
                return made
            made = [assign(target, self.expr(v))]
            if target in self.flags:
                made.append(assign(self.flags[target], self.flag(v)))
            return made
        if isinstance(s, gast.Expr):               # rt.push(stack, value)
            stack, value = s.value.args[0].id, s.value.args[1]
            made = [gast.Expr(value=_method(stack, "append", [self.expr(value)]))]
            if stack in self.flags:
                made.append(gast.Expr(value=_method(self.flags[stack], "append",
                                                    [self.flag(value)])))
            return made
        if isinstance(s, gast.If):
            return [gast.If(test=self.expr(s.test), body=self.block(s.body) or [gast.Pass()],
                            orelse=self.block(s.orelse))]
        if isinstance(s, gast.While):
            return [gast.While(test=self.expr(s.test), body=self.block(s.body) or
                               [gast.Pass()], orelse=[])]
        if isinstance(s, gast.For):
            target = copy.deepcopy(s.target)
            made = [gast.For(target=target, iter=self._range(s.iter),
                             body=self.block(s.body) or [gast.Pass()], orelse=[],
                             type_comment=None)]
            if target.id in self.flags:       # a loop index is a Python int
                made[0].body.insert(0, assign(self.flags[target.id], const(True)))
            return made
        return [copy.deepcopy(s)]

    def _range(self, node):
        """`reversed(range(a, b))` -> `range(b - 1, a - 1, -1)` (numba has no reversed)."""
        if dotted(node.func) != "reversed":
            return self.expr(node)
        args = [self.expr(a) for a in node.args[0].args]
        low, high = (const(0), args[0]) if len(args) == 1 else args
        stop = const(-1) if isinstance(low, gast.Constant) and low.value == 0 else \
            gast.BinOp(left=low, op=gast.Sub(), right=const(1))
        return gast.Call(func=name("range"), args=[
            gast.BinOp(left=high, op=gast.Sub(), right=const(1)), stop, const(-1)],
            keywords=[])

    def _kind(self, node):
        return self.inference.of(node)

    def expr(self, node):
        """The expression as the region computes it (helpers of numbers done)."""
        if isinstance(node, gast.Call):
            spelling, args = dotted(node.func), node.args
            if spelling == "rt.seed":
                return const(1.0)        # the output's kind follows in its flag
            if spelling in ("rt.shape_only", "rt.unbroadcast", "rt.number_only") or \
                    spelling in REDUCTIONS:
                return self.expr(args[0])     # (a reduction of one float is that float)
            if spelling == "rt.add":
                return gast.BinOp(left=self.expr(args[0]), op=gast.Add(),
                                  right=self.expr(args[1]))
            return gast.Call(func=copy.deepcopy(node.func),
                             args=[self.expr(a) for a in args], keywords=[])
        if isinstance(node, gast.BinOp):
            return gast.BinOp(left=self.expr(node.left), op=copy.deepcopy(node.op),
                              right=self.expr(node.right))
        if isinstance(node, gast.UnaryOp):
            return gast.UnaryOp(op=copy.deepcopy(node.op), operand=self.expr(node.operand))
        if isinstance(node, gast.Compare):
            return gast.Compare(left=self.expr(node.left), ops=copy.deepcopy(node.ops),
                                comparators=[self.expr(c) for c in node.comparators])
        return copy.deepcopy(node)

    def flag(self, node):
        """An expression that is True where `node` is a Python number when it runs (numpy
        gives a Python number only from an operator on Python numbers)."""
        kind = self._kind(node)
        if isinstance(kind, Array):
            return const(kind.weak)
        if isinstance(node, gast.Name):
            return name(self.flags[node.id])
        if isinstance(node, gast.Call):
            spelling = dotted(node.func)
            parts = node.args[:2] if spelling == "rt.add" else node.args[:1]
        elif isinstance(node, gast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, gast.Compare):
            parts = [node.left] + node.comparators
        else:                                       # a unary operator
            parts = [node.operand]
        flags = [self.flag(p) for p in parts]
        if any(isinstance(f, gast.Constant) and f.value is False for f in flags):
            return const(False)
        flags = [f for f in flags if not isinstance(f, gast.Constant)]
        if not flags:
            return const(True)
        unique = {}
        for f in flags:      # `x * x`: x's flag once
            unique.setdefault(f.id if isinstance(f, gast.Name) else id(f), f)
        flags = list(unique.values())
        return flags[0] if len(flags) == 1 else \
            gast.BoolOp(op=gast.And(), values=flags)


def _method(obj, method, args):
    return gast.Call(func=gast.Attribute(value=name(obj), attr=method, ctx=gast.Load()),
                     args=args, keywords=[])
