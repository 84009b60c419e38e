"""Shape and dtype inference over a generated function, for the arguments of one call.

`infer(fdef, params)` walks the function once in order (loops until their values stop
changing) and records, for every name read and every value assigned, an abstract value
(abstract.py) or None where it depends on data or on something inference does not model.
numpy decides every dtype: an operation is applied to one-element stand-ins of its operands
(`Array.dummy`), so type promotion, weak Python scalars and integer division come out as
numpy would compute them. Shapes follow broadcasting, reductions with literal axes and
matmul. A value whose kind differs between the paths of an `if` or between loop trips is
None from there on, and the code around it stays general; a number that is a Python number
on one and a numpy scalar of the same dtype on the other is a `Number`.
"""
import operator

import numpy as np

import gast

from ..ir.templates import dotted
from . import lanes
from .constants import literal_arguments
from .abstract import PY_DTYPES, Array, Number, Sequence, join_values

# Python's operators, not numpy's ufuncs: on two Python numbers `+` gives a Python number
# (weak: `float32_array * (s * 2.0)` stays float32), np.add a numpy scalar; on arrays and
# numpy scalars they are the same
_BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
           gast.Div: operator.truediv, gast.Pow: operator.pow,
           gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
           gast.BitAnd: operator.and_, gast.BitOr: operator.or_, gast.BitXor: operator.xor}
_CMPOPS = {gast.Gt: operator.gt, gast.GtE: operator.ge, gast.Lt: operator.lt,
           gast.LtE: operator.le, gast.Eq: operator.eq, gast.NotEq: operator.ne}
_UNARY = {gast.USub: operator.neg, gast.UAdd: operator.pos}
_REDUCTIONS = {"np.sum", "np.mean", "np.max", "np.min", "np.prod", "np.amax", "np.amin",
               "np.add.reduce"}


def ufunc_of(spelling):
    """The numpy ufunc a call spelled `np.<name>` is, else None."""
    if spelling is None or not spelling.startswith("np.") or spelling.count(".") != 1:
        return None
    f = getattr(np, spelling[3:], None)
    return f if isinstance(f, np.ufunc) else None


_ELEMENTWISE = {}      # (op, operands) -> result: numpy's answer, asked once


def elementwise(op, operands):
    """The abstract result of elementwise `op` (a numpy callable) on abstract operands."""
    if any(isinstance(a, Number) for a in operands):
        return _on_numbers(op, operands)
    if any(not isinstance(a, Array) for a in operands):
        return None
    key = (op, tuple(operands))
    if key not in _ELEMENTWISE:
        if len(_ELEMENTWISE) > 4096:
            _ELEMENTWISE.clear()
        _ELEMENTWISE[key] = _elementwise(op, operands)
    return _ELEMENTWISE[key]


def _on_numbers(op, operands):
    """`op` on operands some of which are Numbers: the result of every combination of their
    kinds, if all give one dtype (a Number where some give a Python number and some not)."""
    results = [[]]
    for a in operands:
        variants = a.variants() if isinstance(a, Number) else (a,)
        results = [r + [v] for r in results for v in variants]
    kinds = {elementwise(op, r) for r in results}
    if None in kinds:
        return None
    if len(kinds) == 1:
        return kinds.pop()
    first, *rest = kinds
    for k in rest:
        first = join_values(first, k)
    return first


def _elementwise(op, operands):
    try:
        shape = np.broadcast_shapes(*(a.shape for a in operands))
        with np.errstate(all="ignore"):
            result = op(*(a.dummy() for a in operands))
    except Exception:
        return None
    dtype = getattr(result, "dtype", None)
    if dtype is None:
        # an operator on Python numbers: a Python number (of a kind numpy's dtype names)
        dtype = PY_DTYPES.get(type(result))
        if dtype is None or not all(a.weak for a in operands):
            return None
        dtype = np.dtype(dtype)
        if op is operator.pow and dtype.kind in "iu" or \
                op is operator.pow and dtype.kind == "f" and operands[1].dtype.kind == "f":
            # 2 ** -1 is a float, (-8.0) ** (1/3) complex: the signs decide
            return None
    weak = all(a.weak for a in operands) and not isinstance(result, np.ndarray) and \
        not isinstance(result, np.generic)
    return Array(shape, dtype, weak=weak)


def _literal(node):
    """The Python value of a literal argument (an int, a tuple of ints, None, a bool), or
    a marker that it is not one."""
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, gast.Tuple) and all(isinstance(e, gast.Constant) for e in node.elts):
        return tuple(e.value for e in node.elts)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and \
            isinstance(node.operand, gast.Constant):
        return -node.operand.value
    return _NOT_LITERAL


_NOT_LITERAL = object()


def _reduction(fn, x, axis, keepdims):
    if isinstance(x, (Array, Number)) and x.shape == () and (
            isinstance(x, Number) or x.weak) and axis is None and keepdims is False:
        # of a Python number (or either kind): a numpy scalar, as of a 0-d array
        x = Array((), x.dtype)
    if not isinstance(x, Array) or x.weak:
        return None
    nd = len(x.shape)
    if axis is None:
        axes = set(range(nd))
    else:
        items = axis if isinstance(axis, tuple) else (axis,)
        if not all(isinstance(a, int) and not isinstance(a, bool) and -nd <= a < nd
                   for a in items):
            return None
        axes = {a % nd for a in items}
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims else \
        tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if any(x.shape[i] == 0 for i in axes) and fn in (np.max, np.min, np.amax, np.amin):
        return None                         # numpy raises: leave it to the call
    try:
        with np.errstate(all="ignore"):
            dtype = np.asarray(fn(x.dummy())).dtype
    except Exception:
        return None
    return Array(shape, dtype)


def _matmul(a, b):
    if not isinstance(a, Array) or not isinstance(b, Array) or a.weak or b.weak or \
            not a.shape or not b.shape:
        return None
    sa, sb = a.shape, b.shape
    try:
        if len(sa) == 1 and len(sb) == 1:
            shape = () if sa == sb else None
        elif len(sb) == 1:
            shape = sa[:-1] if sa[-1] == sb[0] else None
        elif len(sa) == 1:
            shape = sb[:-2] + sb[-1:] if sa[0] == sb[-2] else None
        else:
            shape = np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1]) \
                if sa[-1] == sb[-2] else None
        dtype = np.result_type(a.dtype, b.dtype)
    except Exception:
        return None
    return None if shape is None else Array(shape, dtype)


class Inference:
    """The abstract values of one function's names and assigned values (see module doc)."""

    def __init__(self, stacks=(), unsafe_lists=(), returns=None, call_kind=None):
        self.at = {}          # id(node) -> abstract of every expression
        # specialized helpers' results: function name -> abstract value (or None)
        self.returns = returns or {}
        # (name, argument kinds) -> a generated helper's result kind, or NOT_HELPER
        self.call_kind = call_kind
        # stacks of saved values (lists only pushed to and popped from): their contents
        # are followed in the environment, under _STACK + name
        self.stacks = set(stacks)
        # lists that may change where inference does not look (passed on, written into)
        self.unsafe_lists = set(unsafe_lists)
        self._nodes = []      # keep annotated nodes alive so ids stay unique

    def of(self, node):
        return self.at.get(id(node))

    def _record(self, node, value):
        self.at[id(node)] = value
        self._nodes.append(node)
        return value

    # ---------------------------------------------------------------- statements
    def block(self, stmts, env):
        for s in stmts:
            env = self.statement(s, env)
        return env

    def statement(self, s, env):
        stack, op = _stack_operation(s, self.stacks)
        if op == "push":
            value = self.expr(s.value.args[1], env)
            env = dict(env)
            env[_STACK + stack] = _pushed(env.get(_STACK + stack), value)
            return env
        if op in ("pop", "new"):
            env = dict(env)
            if op == "pop":
                value, env[_STACK + stack] = _popped(env.get(_STACK + stack))
            else:
                value, env[_STACK + stack] = None, ()
            self._record(s.value, value)
            for t in s.targets:
                self._bind(t, value, env)
            return env
        if isinstance(s, gast.Assign):
            value = self.expr(s.value, env)
            env = dict(env)
            for t in s.targets:
                self._bind(t, value, env)
            return env
        if isinstance(s, (gast.Expr, gast.Return)) and s.value is not None:
            self.expr(s.value, env)
            return env
        if isinstance(s, gast.If):
            self.expr(s.test, env)
            return _join(self.block(s.body, env), self.block(s.orelse, env))
        if isinstance(s, (gast.For, gast.While)):
            return self._loop(s, env)
        if isinstance(s, gast.With) and all(i.optional_vars is None for i in s.items):
            for item in s.items:           # (`with rt.errstate(...)` around vmapped code)
                self.expr(item.context_expr, env)
            return self.block(s.body, env)
        # anything else (augmented assignment, try, with, nested def): what it assigns is
        # unknown from here on
        env = dict(env)
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                env[n.id] = None
        return env

    def _loop(self, s, env):
        entry = env
        for _ in range(8):
            trip = dict(entry)
            if isinstance(s, gast.For):
                self._bind(s.target, self._item_of(self.expr(s.iter, env)), trip)
            else:
                self.expr(s.test, trip)
            after = self.block(s.body, trip)
            joined = _join(entry, after)
            if joined == entry:
                break
            entry = joined
        else:   # did not settle: what the body assigns is unknown, and one more pass
            entry = dict(entry)        # records annotations valid on every trip
            for n in gast.walk(s):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    entry[n.id] = None
            trip = dict(entry)
            if isinstance(s, gast.For):
                self._bind(s.target, None, trip)
            self.block(s.body, trip)
        return _join(entry, self.block(s.orelse, entry)) if s.orelse else entry

    def _item_of(self, seq):
        if isinstance(seq, _Range):
            return Array((), np.int64, weak=True)
        if isinstance(seq, Sequence) and seq.items:
            first = seq.items[0]
            return first if all(i == first for i in seq.items) else None
        return None

    def _bind(self, target, value, env):
        if isinstance(target, gast.Name):
            if isinstance(value, Sequence) and value.kind is list and \
                    target.id in self.unsafe_lists:
                value = None
            env[target.id] = value
        elif isinstance(target, (gast.Tuple, gast.List)):
            items = value.items if isinstance(value, Sequence) and \
                len(value.items) == len(target.elts) else [None] * len(target.elts)
            for t, v in zip(target.elts, items):
                self._bind(t, v, env)
        # a subscript or attribute store keeps the stored-into value's shape and dtype

    # ---------------------------------------------------------------- expressions
    def expr(self, node, env):
        return self._record(node, self._expr(node, env))

    def _expr(self, node, env):
        if isinstance(node, gast.Name):
            return env.get(node.id)
        if isinstance(node, gast.Constant):
            v = node.value
            t = type(v)
            if isinstance(v, np.generic) and v.dtype.kind in "biufc":
                return Array((), v.dtype)           # a global numpy number, inlined
            return Array((), PY_DTYPES[t], weak=True) if t in PY_DTYPES else None
        if isinstance(node, gast.BinOp):
            a, b = self.expr(node.left, env), self.expr(node.right, env)
            if isinstance(node.op, gast.MatMult):
                return _matmul(a, b)
            op = _BINOPS.get(type(node.op))
            return elementwise(op, [a, b]) if op is not None else None
        if isinstance(node, gast.UnaryOp):
            a = self.expr(node.operand, env)
            op = _UNARY.get(type(node.op))
            return elementwise(op, [a]) if op is not None else None
        if isinstance(node, gast.Compare):
            values = [self.expr(node.left, env)] + [self.expr(c, env) for c in node.comparators]
            op = _CMPOPS.get(type(node.ops[0])) if len(node.ops) == 1 else None
            return elementwise(op, values) if op is not None else None
        if isinstance(node, gast.Tuple):
            return Sequence([self.expr(e, env) for e in node.elts], tuple)
        if isinstance(node, gast.Subscript):
            return self._subscript(node, env)
        if isinstance(node, gast.Attribute):
            base = self.expr(node.value, env)
            if node.attr == "T" and isinstance(base, Array) and not base.weak:
                return Array(base.shape[::-1], base.dtype)
            return None
        if isinstance(node, gast.Call):
            return self._call(node, env)
        for child in gast.iter_child_nodes(node):      # record the names it reads
            if isinstance(child, gast.expr):
                self.expr(child, env)
        return None

    def _subscript(self, node, env):
        base = self.expr(node.value, env)
        self.expr(node.slice, env)
        if not isinstance(base, Sequence):
            return None
        items = base.items
        if isinstance(node.slice, gast.Slice):
            bounds = [_literal(b) if b is not None else None
                      for b in (node.slice.lower, node.slice.upper, node.slice.step)]
            if all(b is None or type(b) is int for b in bounds) and bounds[2] != 0:
                return Sequence(items[slice(*bounds)], base.kind)
            return None
        index = _literal(node.slice)
        if type(index) is int:
            return items[index] if -len(items) <= index < len(items) else None
        # an index known only when it runs: what every item is, if they agree
        return items[0] if items and all(i == items[0] for i in items) else None

    def _call(self, node, env):
        spelling = dotted(node.func)
        args = [self.expr(a, env) for a in node.args]
        for k in node.keywords:
            self.expr(k.value, env)
        if spelling == "range":
            return _Range()
        if self.call_kind is not None and isinstance(node.func, gast.Name) and \
                not node.keywords and not any(isinstance(a, gast.Starred) for a in node.args):
            found = self.call_kind(spelling, tuple(args), literal_arguments(node.args))
            if found is not NOT_HELPER:
                return found
        if spelling in self.returns and not node.keywords:
            return self.returns[spelling]
        rule = lanes.rule_for(node)
        if rule is not None:
            return rule.kind(args, [lanes.literal(a) for a in node.args]) \
                if rule.kind is not None else None
        if spelling in ("np.ones", "np.zeros") and len(node.args) == 2 and \
                not node.keywords and dotted(node.args[1]) and \
                dotted(node.args[1]).startswith("np."):
            shape = lanes.literal(node.args[0])       # (what np.ones_like became)
            dtype = getattr(np, dotted(node.args[1])[3:], None)
            if isinstance(shape, tuple) and all(type(d) is int for d in shape) and \
                    isinstance(dtype, type) and issubclass(dtype, np.generic):
                return Array(shape, dtype)
            return None
        if not node.keywords and spelling in _SHAPE_FUNCTIONS:
            return _SHAPE_FUNCTIONS[spelling](args, [lanes.literal(a) for a in node.args])
        if node.keywords and spelling not in _REDUCTIONS:
            return None
        ufunc = ufunc_of(spelling)
        if ufunc is not None and len(args) == ufunc.nin:
            return elementwise(ufunc, args)
        if spelling == "np.where" and len(args) == 3:
            return elementwise(np.where, args)
        if spelling in _REDUCTIONS and len(node.args) == 1:
            kw = {k.arg: _literal(k.value) for k in node.keywords}
            axis, keepdims = kw.pop("axis", None), kw.pop("keepdims", False)
            if kw or axis is _NOT_LITERAL or keepdims not in (True, False):
                return None
            return _reduction(eval(spelling, {"np": np}), args[0], axis, keepdims)
        if spelling in ("np.matmul", "np.dot") and len(args) == 2 and \
                all(isinstance(a, Array) and len(a.shape) in (1, 2) for a in args if a):
            return _matmul(*args)
        if spelling == "len" and len(args) == 1 and isinstance(args[0], Sequence):
            return Array((), np.int64, weak=True)
        if spelling in _SCALAR_TYPES and len(args) == 1 and isinstance(args[0], Array) and \
                not args[0].shape:
            return Array((), _SCALAR_TYPES[spelling])     # np.float64(1.0)
        if spelling == "rt.unbroadcast" and len(args) == 2 and \
                all(isinstance(a, (Array, Number)) and a.shape == () for a in args):
            return args[0]      # a number's adjoint against a number: g itself, either kind
        if spelling == "rt.shape_only" and len(args) == 1:
            return args[0]         # a stand-in of the same shape and dtype (or the value)
        if spelling == "rt.number_only" and len(args) == 5:
            return args[0]         # the value (or an error)
        if spelling == "rt.add" and len(args) == 2 and \
                all(isinstance(a, Array) for a in args):
            return elementwise(np.add, args)      # adjoints of arrays or numbers: a + b
        if spelling == "rt.seed" and len(args) == 2:
            out = args[0]
            if isinstance(out, (Array, Number)) and not out.shape and out.dtype.kind == "f":
                return out            # one of the output's own type
            return None
        if spelling == "rt.expand" and 2 <= len(node.args) <= 4 and not node.keywords and \
                all(_literal(a) is None or _literal(a) is False for a in node.args[2:]):
            g, x = args[:2]
            if isinstance(g, Array) and isinstance(x, Array) and not g.shape and not x.weak:
                return Array(x.shape, np.full(1, g.dummy()).dtype)     # np.full(shape, g)
            return None
        if spelling == "rt.unbroadcast" and len(args) == 2:
            g, x = args
            if isinstance(g, Array) and isinstance(x, Array) and not g.weak and \
                    not x.weak:
                if g.shape == x.shape:
                    return g                # unbroadcast returns g itself: nothing to sum
                try:
                    if np.broadcast_shapes(g.shape, x.shape) == g.shape:
                        return Array(x.shape, g.dtype)     # g summed to x's shape
                except ValueError:
                    pass
            return None
        if spelling in ("rt.matmul_adj_x1", "rt.matmul_adj_x2") and len(args) == 3:
            shapes = [a for a in args if isinstance(a, Array) and not a.weak]
            if len(shapes) == 3:
                g, other, x = args if spelling == "rt.matmul_adj_x1" else \
                    (args[1], args[0], args[2])
                if all(len(a.shape) == 2 for a in shapes) or \
                        len(other.shape) == 2 and len(g.shape) == len(x.shape) == 1:
                    # a matrix's product with a vector included: the vector's adjoint
                    return Array(x.shape, np.result_type(g.dtype, other.dtype))
            return None
        if spelling == "rt.as_grad" and len(args) == 2:
            g, x = args
            if isinstance(g, Array) and isinstance(x, Array) and not g.weak and \
                    not x.weak and x.dtype.kind in "fc":
                try:
                    np.broadcast_shapes(g.shape, x.shape)
                except ValueError:
                    return None
                return Array(x.shape, x.dtype)     # broadcast and cast to x's kind
            return None
        if spelling == "np.full" and len(args) == 2:
            shape = _literal(node.args[0])
            if isinstance(shape, tuple) and all(type(d) is int for d in shape) and \
                    isinstance(args[1], Array) and not args[1].shape:
                return Array(shape, np.full(1, args[1].dummy()).dtype)
            return None
        return None


def _shape_of(args, lits):
    a = args[0] if len(args) == 1 else None
    return Sequence([Array((), np.int64, weak=True)] * len(a.shape), tuple) \
        if isinstance(a, Array) else None


def _ndim_of(args, lits):
    return Array((), np.int64, weak=True) if len(args) == 1 and \
        isinstance(args[0], Array) else None


def _like(args, lits):
    """np.asarray(x), np.ones_like(x), np.zeros_like(x): an array of x's shape and dtype."""
    a = args[0] if len(args) == 1 else None
    return Array(a.shape, a.dtype) if isinstance(a, Array) else None


def _reshaped(args, lits):
    a = args[0] if len(args) == 2 else None
    shape = lits[1] if a is not None else None
    if type(shape) is int:
        shape = (shape,)
    if not isinstance(a, Array) or a.weak or not isinstance(shape, tuple) or \
            not all(type(d) is int for d in shape):
        return None
    try:
        return Array(np.empty(a.shape, np.bool_).reshape(shape).shape, a.dtype)
    except ValueError:
        return None


def _moved(args, lits):
    a = args[0] if len(args) == 3 else None
    if not isinstance(a, Array) or a.weak or not all(type(v) is int for v in lits[1:]):
        return None
    try:
        return Array(np.moveaxis(np.empty(a.shape, np.bool_), lits[1], lits[2]).shape,
                     a.dtype)
    except (ValueError, np.exceptions.AxisError):
        return None


def _broadcast_to(args, lits):
    a, shape = (args[0], lits[1]) if len(args) == 2 else (None, None)
    if type(shape) is int:
        shape = (shape,)
    if not isinstance(a, Array) or not isinstance(shape, tuple) or \
            not all(type(d) is int and d >= 0 for d in shape):
        return None
    try:
        np.broadcast_to(np.empty(a.shape, np.bool_), shape)
    except ValueError:
        return None
    return Array(shape, a.dtype)


# numpy functions whose result's kind follows from their argument's shape
_SHAPE_FUNCTIONS = {"np.shape": _shape_of, "np.ndim": _ndim_of, "np.asarray": _like,
                    "rt.seq_array": _like,
                    "np.array": _like, "np.broadcast_to": _broadcast_to,
                    "np.ones_like": _like, "np.zeros_like": _like, "np.reshape": _reshaped,
                    "np.moveaxis": _moved}


_SCALAR_TYPES = {f"np.{t.__name__}": t for t in (np.float16, np.float32, np.float64,
                                                   np.complex64, np.complex128)}

_STACK = "\0stack "   # environment key prefix of a stack's contents


class _Homogeneous:
    """A stack of any number of items, all of one abstract value (pushed in a loop)."""
    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item

    def __eq__(self, other):
        return isinstance(other, _Homogeneous) and other.item == self.item

    def __hash__(self):
        return hash(("homogeneous", self.item))


def _pushed(state, value):
    if isinstance(state, tuple):
        return state + (value,)
    if isinstance(state, _Homogeneous):
        item = join_values(state.item, value)
        return _Homogeneous(item) if item is not None else None
    return None


def _popped(state):
    """(the popped abstract value, the stack after)."""
    if isinstance(state, tuple) and state:
        return state[-1], state[:-1]
    if isinstance(state, _Homogeneous):
        return state.item, state
    return None, None


def _join_stacks(a, b):
    if a is None or b is None:
        return None
    items = [i for s in (a, b) for i in (s if isinstance(s, tuple) else (s.item,))]
    if not items:
        return ()
    item = items[0]
    for i in items[1:]:
        item = join_values(item, i) if item is not None and i is not None else None
    return _Homogeneous(item) if item is not None else None


def _stack_operation(s, stacks):
    """(stack name, "push" | "pop" | "new") for a statement on a followed stack, else
    (None, None)."""
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
            dotted(s.value.func) == "rt.push" and len(s.value.args) == 2 and \
            isinstance(s.value.args[0], gast.Name) and s.value.args[0].id in stacks:
        return s.value.args[0].id, "push"
    if isinstance(s, gast.Assign) and len(s.targets) == 1:
        v = s.value
        if isinstance(v, gast.Call) and dotted(v.func) == "rt.pop" and len(v.args) == 1 and \
                isinstance(v.args[0], gast.Name) and v.args[0].id in stacks:
            return v.args[0].id, "pop"
        if isinstance(s.targets[0], gast.Name) and s.targets[0].id in stacks and \
                isinstance(v, gast.List) and not v.elts:
            return s.targets[0].id, "new"
    return None, None


def stack_names(fdef):
    """Names bound to `[]` once and otherwise only passed to rt.push/rt.pop as the stack:
    the stacks of saved values whose contents inference follows."""
    candidates = set()
    for n in gast.walk(fdef):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], gast.Name) and isinstance(n.value, gast.List) and \
                not n.value.elts:
            candidates.add(n.targets[0].id)
    used_as_stack = set()
    for n in gast.walk(fdef):
        if isinstance(n, gast.Call) and dotted(n.func) in ("rt.push", "rt.pop") and \
                n.args and isinstance(n.args[0], gast.Name):
            used_as_stack.add(id(n.args[0]))
    stores, other = {}, set()
    for n in gast.walk(fdef):
        if isinstance(n, gast.Name) and n.id in candidates:
            if isinstance(n.ctx, (gast.Store, gast.Del)):
                stores[n.id] = stores.get(n.id, 0) + 1
            elif id(n) not in used_as_stack:
                other.add(n.id)
    return {name for name in candidates if name not in other and stores.get(name) == 1}


# calls that only read the list passed at `position` (its structure and items)
_READS_LIST = {"len": 0, "rt.zeros_like": 0, "rt.index_add": 1, "rt.index_add_into": 1,
               "rt.as_grad": 1, "rt.check_float_input": 0, "rt.loop_sequence": 0,
               "rt.loop_sequence_adj": 1, "rt.loop_sequence_tangent": 1,
               "rt.check_length": 0, "rt.check_jacobian_dtype": 0, "rt.check_instance": 0}


def unsafe_lists(fdef):
    """Names whose list may change in a way inference does not follow: used anywhere but as
    the base of a subscript read or an argument of a call in _READS_LIST."""
    safe = set()
    for n in gast.walk(fdef):
        if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Load) and \
                isinstance(n.value, gast.Name):
            safe.add(id(n.value))
        elif isinstance(n, gast.Call) and dotted(n.func) in _READS_LIST:
            k = _READS_LIST[dotted(n.func)]
            if k < len(n.args) and isinstance(n.args[k], gast.Name):
                safe.add(id(n.args[k]))
    return {n.id for n in gast.walk(fdef) if isinstance(n, gast.Name) and
            (isinstance(n.ctx, gast.Load) and id(n) not in safe or
             isinstance(n.ctx, gast.Del))} | \
        {n.value.id for n in gast.walk(fdef) if isinstance(n, gast.Subscript) and
         isinstance(n.ctx, (gast.Store, gast.Del)) and isinstance(n.value, gast.Name)}


class _Range:
    """The value of `range(...)`: its items are Python ints."""

    def __eq__(self, other):
        return isinstance(other, _Range)

    def __hash__(self):
        return 0


def _join(a, b):
    """Names bound to the same abstract value on both paths keep it; others become None."""
    if a is b:
        return a
    out = {}
    for name in set(a) | set(b):
        va, vb = a.get(name), b.get(name)
        if va == vb:
            out[name] = va
        elif name.startswith(_STACK):
            out[name] = _join_stacks(va, vb)
        else:
            out[name] = join_values(va, vb)
    return out


NOT_HELPER = object()      # what Inference.call_kind says of a call of anything else


def infer(fdef, params, returns=None, call_kind=None):
    """An Inference of `fdef` (gast FunctionDef) for parameter abstract values `params`
    (name -> abstract value or None); `returns`: what calls of specialized helpers give;
    `call_kind(name, kinds, literals)`: what a call of a generated helper gives (specializing it)."""
    inference = Inference(stack_names(fdef), unsafe_lists(fdef), returns, call_kind)
    inference.block(fdef.body, dict(params))
    return inference


def environment_before(fdef, params, index, returns=None, call_kind=None):
    """The abstract values of names just before `fdef.body[index]` runs (names a path
    may not have bound are None)."""
    inference = Inference(stack_names(fdef), unsafe_lists(fdef), returns, call_kind)
    env = inference.block(fdef.body[:index], dict(params))
    return {k: v for k, v in env.items() if not k.startswith(_STACK)}
