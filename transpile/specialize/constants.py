"""Static arguments and literals: what jit can decide before the code runs.

    bind_statics     a static argument's reads -> its value (a literal, or a global name)
    fold_constants   literals assigned once at the top propagated, operators on literals
                     folded, `if`s on literals decided
    known_lengths    `len(seq)` of a tuple or list inference knows -> a number
    unroll           a short loop over a literal range written out trip by trip
    fold_literals    literals propagated through straight-line code (after unrolling)
"""
import copy
import operator as op

import gast

from ..ir.nodes import const
from ..ir.program import is_literal
from ..ir.templates import dotted
from .abstract import Sequence


def stored_names(node):
    """The names `node` (a statement or a whole function) assigns or deletes."""
    return {n.id for n in gast.walk(node)
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del))}


def name_counts(fdef):
    """(reads, stores): how often each name is read and assigned in `fdef`."""
    reads, stores = {}, {}
    for n in gast.walk(fdef):
        if isinstance(n, gast.Name):
            table = stores if isinstance(n.ctx, (gast.Store, gast.Del)) else reads
            table[n.id] = table.get(n.id, 0) + 1
    return reads, stores


def bind_statics(fdef, values, namespace, namer):
    """Reads of a static parameter become its value: a literal, or a module-level name."""
    stored = stored_names(fdef)
    replace = {}
    for name, value in values.items():
        if name in stored:
            # reassigned in the body: bind it once at the top instead
            node = const(value) if is_literal(value) else _global(value, name, namespace, namer)
            fdef.body.insert(0, gast.Assign(targets=[gast.Name(id=name, ctx=gast.Store(),
                                                                annotation=None,
                                                                type_comment=None)],
                                            value=node, type_comment=None))
            continue
        replace[name] = value

    class Bind(gast.NodeTransformer):
        def visit_Name(self, n):
            if isinstance(n.ctx, gast.Load) and n.id in replace:
                v = replace[n.id]
                return const(v) if is_literal(v) else _global(v, n.id, namespace, namer)
            return n
    fdef.body = [Bind().visit(s) for s in fdef.body]


def literal_arguments(args):
    """((position, type, value), ...) of the arguments of a call that are literal numbers,
    booleans, strings or None: a helper's copy is specialized to their values too (the
    batch size a vmapped function passes on, a flag)."""
    return tuple((i, type(a.value), a.value) for i, a in enumerate(args)
                 if isinstance(a, gast.Constant) and
                 type(a.value) in (int, float, bool, str, type(None)))


def _global(value, hint, namespace, namer):
    for name, v in namespace.items():
        if v is value:
            break
    else:
        name = namer.fresh("static_" + hint)
        namespace[name] = value
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def _literal_value(node):
    if isinstance(node, gast.Constant) and is_literal(node.value):
        return True, node.value
    if isinstance(node, gast.Tuple) and isinstance(node.ctx, gast.Load):
        items = [_literal_value(e) for e in node.elts]
        if all(ok for ok, _ in items):
            return True, tuple(v for _, v in items)
    return False, None


def _fold_expr(node):
    """An operator expression of literals, evaluated (only Python numbers, as Python does)."""
    binops = {gast.Add: op.add, gast.Sub: op.sub, gast.Mult: op.mul, gast.Div: op.truediv,
              gast.FloorDiv: op.floordiv, gast.Mod: op.mod, gast.Pow: op.pow}
    cmps = {gast.Lt: op.lt, gast.LtE: op.le, gast.Gt: op.gt, gast.GtE: op.ge,
            gast.Eq: op.eq, gast.NotEq: op.ne, gast.Is: op.is_, gast.IsNot: op.is_not}
    try:
        if isinstance(node, gast.BinOp) and type(node.op) in binops:
            (ok1, a), (ok2, b) = _literal_value(node.left), _literal_value(node.right)
            if ok1 and ok2 and _number(a) and _number(b):
                return True, binops[type(node.op)](a, b)
        if isinstance(node, gast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in cmps:
            (ok1, a), (ok2, b) = _literal_value(node.left), _literal_value(node.comparators[0])
            if ok1 and ok2 and (_number(a) and _number(b) or a is None or b is None or
                                type(node.ops[0]) in (gast.Eq, gast.NotEq) and
                                type(a) in (str, tuple) and type(b) in (str, tuple)):
                return True, cmps[type(node.ops[0])](a, b)
        if isinstance(node, gast.UnaryOp):
            ok, a = _literal_value(node.operand)
            if ok and isinstance(node.op, gast.Not):
                return True, not a
            if ok and _number(a) and isinstance(node.op, gast.USub):
                return True, -a
    except (ArithmeticError, ValueError):
        pass
    return False, None


def _number(v):
    return type(v) in (bool, int, float)


def fold_constants(fdef):
    """Propagate literals assigned once at the top level, fold operators on them, and keep
    one branch of an `if` whose test is then a literal. Repeats until nothing changes."""
    for _ in range(20):
        changed = False
        stored = {}
        for n in gast.walk(fdef):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                stored[n.id] = stored.get(n.id, 0) + 1
        params = {a.id for a in fdef.args.args}
        known, position = {}, {}
        for k, s in enumerate(fdef.body):
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], gast.Name):
                name = s.targets[0].id
                ok, value = _literal_value(s.value)
                if not ok:
                    ok, value = _fold_expr(s.value)
                    if ok and is_literal(value):
                        s.value = const(value)
                        changed = True
                if ok and is_literal(value) and stored.get(name) == 1 and name not in params:
                    known[name], position[name] = value, k
        if known:
            for k, s in enumerate(fdef.body):
                for n in gast.walk(s):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and \
                            n.id in known and k > position[n.id]:
                        break
                else:
                    continue
                new = _Substitute(known, position, k).visit(s)
                fdef.body[k] = new
                changed = True
        new_body = _fold_ifs(fdef.body)
        if new_body is not None:
            fdef.body = new_body
            changed = True
        if not changed:
            return


class _Substitute(gast.NodeTransformer):
    """Reads of `known` names -> their literal values (with `position`, only in top-level
    statements after the one that assigns the name)."""

    def __init__(self, known, position, k, changes=None):
        self.known, self.position, self.k = known, position, k
        self.changes = changes

    def visit_Name(self, n):
        if isinstance(n.ctx, gast.Load) and n.id in self.known and \
                (self.position is None or self.k > self.position[n.id]):
            if self.changes is not None:
                self.changes.count += 1
            return const(self.known[n.id])
        return n


def _fold_ifs(stmts):
    """`stmts` with literal-test `if`s replaced by their branch (recursively), or None when
    there are none."""
    changed = False
    out = []
    for s in stmts:
        if isinstance(s, gast.If):
            ok, value = _literal_value(s.test)
            if ok:
                out.extend(_fold_ifs(s.body if value else s.orelse) or
                           (s.body if value else s.orelse))
                changed = True
                continue
            for field in ("body", "orelse"):
                inner = _fold_ifs(getattr(s, field))
                if inner is not None:
                    setattr(s, field, inner or [gast.Pass()] if field == "body" else inner)
                    changed = True
        elif isinstance(s, (gast.For, gast.While)):
            inner = _fold_ifs(s.body)
            if inner is not None:
                s.body = inner or [gast.Pass()]
                changed = True
        out.append(s)
    return out if changed else None


# A loop over a known, short range is written out trip by trip when its trips may see
# values of different shapes (the layers of an MLP): each copy then has known shapes.
UNROLL_TRIPS = 16


UNROLL_STATEMENTS = 400


def known_lengths(fdef, inference):
    """`len(seq)` of a tuple or list whose length inference knows -> that number."""
    changed = False

    class Lengths(gast.NodeTransformer):
        def visit_Call(self, n):
            nonlocal changed
            self.generic_visit(n)
            if dotted(n.func) == "len" and len(n.args) == 1 and not n.keywords:
                seq = inference.of(n.args[0])
                if isinstance(seq, Sequence):
                    changed = True
                    return const(len(seq.items))
            return n
    fdef.body = [Lengths().visit(s) for s in fdef.body]
    return changed


def _trips(loop):
    """The values `i` takes in `for i in range(K)` / `reversed(range(K))` (K, and the
    range's other bounds, literals), else None."""
    it = loop.iter
    backwards = False
    if isinstance(it, gast.Call) and dotted(it.func) == "reversed" and len(it.args) == 1:
        it, backwards = it.args[0], True
    if not (isinstance(it, gast.Call) and dotted(it.func) == "range" and not it.keywords and
            1 <= len(it.args) <= 3 and all(isinstance(a, gast.Constant) and
                                           type(a.value) is int for a in it.args)):
        return None
    values = list(range(*(a.value for a in it.args)))
    return values[::-1] if backwards else values


def unroll(stmts):
    """Write out short literal-range loops (no break, continue or return inside); True if
    any was."""
    changed = False
    out = []
    for s in stmts:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                changed |= unroll(inner)
        trips = _trips(s) if isinstance(s, gast.For) and not s.orelse and \
            isinstance(s.target, gast.Name) else None
        if trips is not None and len(trips) <= UNROLL_TRIPS and \
                len(trips) * sum(1 for _ in gast.walk(s)) <= UNROLL_STATEMENTS * 8 and \
                not any(isinstance(n, (gast.Break, gast.Continue, gast.Return, gast.FunctionDef,
                                       gast.Lambda, gast.Yield)) for n in gast.walk(s)):
            for value in trips:
                out.append(gast.Assign(targets=[gast.Name(id=s.target.id, ctx=gast.Store(),
                                                          annotation=None, type_comment=None)],
                                       value=const(value), type_comment=None))
                out.extend(copy.deepcopy(s.body))
            changed = True
            continue
        out.append(s)
    stmts[:] = out
    return changed


def fold_literals(fdef):
    """Propagate literals through straight-line code (a name assigned a literal is that
    literal until it is assigned again), fold operators on them, keep the branch a literal
    test takes; until nothing changes."""
    for _ in range(10):
        changes = Changes()
        fdef.body = _propagate(fdef.body, {}, changes)
        _fold_expressions(fdef, changes)
        folded = _fold_ifs(fdef.body)
        if folded is not None:
            fdef.body = folded
        elif not changes.count:
            return


class Changes:
    """How many rewrites a pass made (a pass that made none is done)."""

    def __init__(self):
        self.count = 0


def _propagate(stmts, env, changes):
    def substitute(node):
        return _Substitute(env, None, None, changes).visit(node)
    out = []
    for s in stmts:
        if isinstance(s, gast.If):
            s.test = substitute(s.test)
            s.body = _propagate(s.body, dict(env), changes)
            s.orelse = _propagate(s.orelse, dict(env), changes)
            for name in stored_names(s):
                env.pop(name, None)
        elif isinstance(s, (gast.For, gast.While)):
            for name in stored_names(s):
                env.pop(name, None)       # carried from trip to trip
            if isinstance(s, gast.For):
                s.iter = substitute(s.iter)
            else:
                s.test = substitute(s.test)
            s.body = _propagate(s.body, dict(env), changes)
            s.orelse = _propagate(s.orelse, dict(env), changes)
        elif isinstance(s, (gast.Assign, gast.Expr, gast.Return, gast.AugAssign)):
            value = getattr(s, "value", None)
            if value is not None:
                s.value = substitute(value)
            for name in stored_names(s):
                env.pop(name, None)
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], gast.Name):
                ok, literal = _literal_value(s.value)
                if ok and is_literal(literal):
                    env[s.targets[0].id] = literal
        else:
            for name in stored_names(s):
                env.pop(name, None)
        out.append(s)
    return out


def _fold_expressions(fdef, changes):
    class Fold(gast.NodeTransformer):
        def generic_visit(self, n):
            n = super().generic_visit(n)
            if isinstance(n, (gast.BinOp, gast.Compare, gast.UnaryOp)):
                ok, value = _fold_expr(n)
                if ok and is_literal(value):
                    changes.count += 1
                    return const(value)
            return n
    fdef.body = [Fold().visit(s) for s in fdef.body]
