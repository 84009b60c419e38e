"""Straight-line code after unrolling: saved values and adjoint trees as plain names.

Once a short loop is written out trip by trip, much of what reverse mode does at run time
is known before the call: which value each `rt.pop` returns, and which slot of a list of
layers each `rt.index_add` fills. On a small network those runtime helpers cost more than
the arithmetic (a 10-32-32-1 MLP's gradient: about half its time).

    fold_stacks      `rt.push(s, v)` ... `t = rt.pop(s)` -> `v_saved = v` ... `t = v_saved`
    rename_values    each assignment of a name at the top level gets a name of its own
                     (so a value can be referred to later, after its name is reused)
    propagate_copies `a = b` with both assigned once -> reads of `a` read `b`
    fold_trees       `rt.zeros_like` / `rt.index_add` of a known list -> nothing, followed
                     here; `rt.as_grad` of it -> the list of its leaves, written out

Only statements at the top level of the function are rewritten, and only names whose every
use is one of these forms: anything else keeps the general code.
"""
import gast

from ..ir import anno
from ..ir.nodes import assign, call, const, name
from ..ir.templates import dotted, literal_index
from .abstract import Array, Sequence
from .constants import name_counts
from .helpers import NEW_ARRAY_FUNCTIONS


def _replacing(old, new):
    """`new` in the place of statement `old` (its line and the user line it comes from)."""
    anno.copy(old, new)
    return gast.copy_location(new, old)


def _subscript(value, index):
    return gast.Subscript(value=value, slice=const(index), ctx=gast.Load())


# ----------------------------------------------------------------------- saved values
def fold_stacks(fdef, stacks, namer):
    """Stacks of saved values pushed and popped only at the top level: each push becomes a
    name of its own and each pop a read of the name the matching push made."""
    body = fdef.body
    top = {id(s) for s in body}
    for stack in sorted(stacks):
        ops, ok = {}, True
        for s in body:
            op = _stack_op(s, stack)
            if op is not None:
                ops[id(s)] = op
        uses = [n for n in gast.walk(fdef) if isinstance(n, gast.Name) and n.id == stack]
        # every use is the stack of one top-level push or pop, or its one `= []`
        if len(uses) != len(ops) or not all(i in top for i in ops):
            continue
        saved, new_body = [], []
        for s in body:
            op = ops.get(id(s))
            if op == "new":
                continue
            if op == "push":
                value = s.value.args[1]
                named = value.args[0] if isinstance(value, gast.Call) and value.args else \
                    value          # rt.shape_only(x): x's
                saved_as = namer.fresh(
                    (named.id if isinstance(named, gast.Name) else "value") + "_saved")
                saved.append(saved_as)
                s = _replacing(s, assign(saved_as, value))
            elif op == "pop":
                if not saved:
                    ok = False
                    break
                s = _replacing(s, gast.Assign(targets=s.targets, value=name(saved.pop()),
                                              type_comment=None))
            new_body.append(s)
        if ok:
            body = fdef.body = new_body
    return fdef


def _stack_op(s, stack):
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
            dotted(s.value.func) == "rt.push" and len(s.value.args) == 2 and \
            not s.value.keywords and _is_name(s.value.args[0], stack):
        return "push"
    if isinstance(s, gast.Assign) and len(s.targets) == 1:
        v = s.value
        if isinstance(v, gast.Call) and dotted(v.func) == "rt.pop" and len(v.args) == 1 \
                and not v.keywords and _is_name(v.args[0], stack):
            return "pop"
        if _is_name(s.targets[0], stack) and isinstance(v, gast.List) and not v.elts:
            return "new"
    return None


def _is_name(node, id_):
    return isinstance(node, gast.Name) and node.id == id_


# ------------------------------------------------------------------------- renaming
def rename_values(fdef, namer):
    """Give each top-level assignment of a name after its first (or after the parameter
    it reassigns) a fresh name, and its later reads that name. Only names used nowhere but
    in top-level simple statements, and assigned only by `=`, are renamed."""
    params = {a.id for a in fdef.args.args + fdef.args.posonlyargs + fdef.args.kwonlyargs}
    for extra in (fdef.args.vararg, fdef.args.kwarg):
        if extra is not None:
            params.add(extra.id)
    excluded = set()
    for s in fdef.body:
        if _is_compound(s):
            excluded |= _names_in(s)
            continue
        for n in gast.walk(s):
            if isinstance(n, (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
                              gast.GeneratorExp, gast.NamedExpr)):
                excluded |= _names_in(n)
        if not isinstance(s, gast.Assign):
            excluded |= {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and
                         isinstance(n.ctx, (gast.Store, gast.Del))}
        elif not all(_plain_target(t) for t in s.targets):
            excluded |= {n.id for t in s.targets for n in gast.walk(t)
                         if isinstance(n, gast.Name)}
    current, defined, renamed = {}, set(params), {}
    for s in fdef.body:
        if _is_compound(s):
            continue
        stores = [n for n in gast.walk(s) if isinstance(n, gast.Name) and
                  isinstance(n.ctx, gast.Store)]
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and \
                    n.id in current:
                n.id = current[n.id]
        for n in stores:
            if n.id in excluded:
                continue
            if n.id in defined:
                current[n.id] = namer.fresh(n.id)
                renamed[current[n.id]] = n.id
                n.id = current[n.id]
            else:
                defined.add(n.id)
                current.pop(n.id, None)
    return renamed


def restore_names(fdef, renamed, kernels=()):
    """Undo `rename_values` where the old value is read no more after the new one is made
    (`x = x + 3` stays `x = x + 3`); `renamed`: {new name: the name it replaced}; `kernels`:
    the fused kernels called (their statements, shown beside each call, and inputs are
    renamed with the code; their names count as read where they are called)."""
    body = fdef.body
    by_name = {k.name: k for k in kernels}
    reads_at = {}          # name -> the index of the last top-level statement reading it
    for i, s in enumerate(body):
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                reads_at[n.id] = i
                for fused in by_name[n.id].statements if n.id in by_name else ():
                    for m in gast.walk(fused):
                        if isinstance(m, gast.Name):
                            reads_at[m.id] = i
    back = {}
    for i, s in enumerate(body):
        if _is_compound(s):
            continue
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and \
                    n.id in renamed and n.id not in back:
                old = renamed[n.id]
                # `old` holds, up to here, its first value or the last one given back to it
                if reads_at.get(old, -1) <= i:
                    back[n.id] = old
                    reads_at[old] = max(reads_at.get(old, -1), reads_at.get(n.id, -1))
    for node in [fdef, *(s for k in kernels for s in k.statements)]:
        for n in gast.walk(node):
            if isinstance(n, gast.Name) and n.id in back:
                n.id = back[n.id]
    for k in kernels:
        todo = [k.tree, *k.inputs]
        while todo:
            node = todo.pop()
            if hasattr(node, "operands"):
                todo.extend(node.operands)
            elif node.name is not None:          # a kernel input (not a literal)
                node.name = back.get(node.name, node.name)


def propagate_copies(fdef):
    """Top-level `a = b` where `a` is assigned nowhere else and `b` is a parameter never
    assigned or a name assigned once, above: every read of `a` reads `b` (the copies that
    folded stacks and renaming leave)."""
    params = {a.id for a in fdef.args.args + fdef.args.posonlyargs + fdef.args.kwonlyargs}
    reads, stores = name_counts(fdef)
    assigned_above, copies = set(), {}
    for s in fdef.body:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Name):
            a, b = s.targets[0].id, copies.get(s.value.id, s.value.id)
            if a != b and a not in params and stores.get(a) == 1 and (
                    b in params and not stores.get(b) or
                    b in assigned_above and stores.get(b) == 1):
                copies[a] = b
        if not _is_compound(s):
            assigned_above |= {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and
                               isinstance(n.ctx, gast.Store)}
    if not copies:
        return False
    fdef.body = [s for s in fdef.body if not (
        isinstance(s, gast.Assign) and len(s.targets) == 1 and
        isinstance(s.targets[0], gast.Name) and s.targets[0].id in copies)]
    for n in gast.walk(fdef):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in copies:
            n.id = copies[n.id]
    return True


def _is_compound(s):
    return isinstance(s, (gast.If, gast.For, gast.While, gast.With, gast.Try,
                          gast.FunctionDef, gast.ClassDef, gast.AsyncFor, gast.AsyncWith,
                          gast.AsyncFunctionDef, gast.Global, gast.Nonlocal))


def _plain_target(t):
    if isinstance(t, gast.Name):
        return True
    return isinstance(t, (gast.Tuple, gast.List)) and all(_plain_target(e) for e in t.elts)


def _names_in(node):
    names = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    if isinstance(node, (gast.Global, gast.Nonlocal)):
        names |= set(node.names)
    return names


# ---------------------------------------------------------------------- adjoint trees
class _Tree:
    """An adjoint container followed here: a slot per item, each None (zero), an
    expression whose value is the item's adjoint, or a _Tree."""

    def __init__(self, slots):
        self.slots = list(slots)


class _GiveUp(Exception):
    def __init__(self, name):
        super().__init__(name)
        self.name = name


_INDEX_ADD = ("rt.index_add", "rt.index_add_into")


def fold_trees(fdef, inference, namer):
    """Adjoints of known lists and tuples built by rt.zeros_like / rt.index_add at the top
    level and read only by rt.as_grad: followed slot by slot here, and written out where
    rt.as_grad reads them. True if anything changed."""
    reads, stores = name_counts(fdef)
    defs = {}
    for s in fdef.body:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name):
            defs[s.targets[0].id] = s
    tracked = {name for name, s in defs.items()
               if stores.get(name) == 1 and _tree_definition(s.value, inference) is not None}
    while tracked:
        try:
            body = _Folder(fdef, inference, namer, tracked, defs, stores).run()
        except _GiveUp as e:
            if e.name not in tracked:
                return False          # nothing left to give up: keep the general code
            tracked.discard(e.name)
            continue
        fdef.body = body
        return True
    return False


def _tree_definition(value, inference):
    """(kind, arguments) of `rt.zeros_like(x)` or `rt.index_add[_into](d, x, idx, dy)` with
    x a sequence of known length and idx a literal int or slice, else None."""
    if not isinstance(value, gast.Call) or value.keywords:
        return None
    spelling, args = dotted(value.func), value.args
    if spelling == "rt.zeros_like" and len(args) == 1 and \
            isinstance(inference.of(args[0]), Sequence):
        return "zeros", args
    if spelling in _INDEX_ADD and len(args) == 4 and \
            isinstance(inference.of(args[1]), Sequence) and literal_index(args[2]) \
            is not None and (_is_none(args[0]) or isinstance(args[0], gast.Name)):
        return "index_add", args
    return None


def _is_none(node):
    return isinstance(node, gast.Constant) and node.value is None


class _Folder:
    def __init__(self, fdef, inference, namer, tracked, defs, stores):
        self.fdef, self.inference, self.namer = fdef, inference, namer
        self.tracked, self.defs, self.stores = tracked, defs, stores
        self.trees = {}
        self.params = {a.id for a in fdef.args.args + fdef.args.posonlyargs +
                       fdef.args.kwonlyargs}
        self.top_assigned = {n.id for s in fdef.body if isinstance(s, gast.Assign)
                             for t in s.targets for n in gast.walk(t)
                             if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}

    def run(self):
        body = []
        for s in self.fdef.body:
            target = s.targets[0].id if isinstance(s, gast.Assign) and \
                len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) else None
            if target in self.tracked:
                body.extend(self.define(target, s.value))
                continue
            self.check_uses(s)
            body.append(_AsGrad(self).visit(s))
        return body

    def check_uses(self, s):
        """A tracked name may be read only by the forms this pass rewrites."""
        allowed = set()
        for n in gast.walk(s):
            if isinstance(n, gast.Call) and dotted(n.func) == "rt.as_grad" and \
                    len(n.args) == 2 and not n.keywords and isinstance(n.args[0], gast.Name):
                allowed.add(id(n.args[0]))
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and n.id in self.tracked and id(n) not in allowed:
                raise _GiveUp(n.id)

    def define(self, target, value):
        kind, args = _tree_definition(value, self.inference)
        if kind == "zeros":
            self.trees[target] = _Tree([None] * len(self.inference.of(args[0]).items))
            return []
        base, x, index, dy = args
        n = len(self.inference.of(x).items)
        if _is_none(base):
            slots = [None] * n
        elif base.id in self.trees:
            slots = list(self.trees[base.id].slots)
        else:
            raise _GiveUp(target)
        if len(slots) > n:
            raise _GiveUp(target)
        slots += [None] * (n - len(slots))     # the adjoint of a list that grew
        index = literal_index(index)
        if isinstance(index, int):
            if not -n <= index < n:
                raise _GiveUp(target)
            positions, parts = [index % n], [self.value_of(dy, target)]
        else:
            positions = list(range(*index.indices(n)))
            parts = self.items_of(dy, target)
        made = []
        for j, part in zip(positions, parts):     # zip: as index_add's loop over a slice
            if slots[j] is None:
                slots[j] = part
            elif part is not None:
                if isinstance(slots[j], _Tree) or isinstance(part, _Tree):
                    raise _GiveUp(target)
                total = self.namer.fresh("d_sum")
                made.append(assign(total, call("rt.add", [slots[j], part])))
                slots[j] = name(total)
        self.trees[target] = _Tree(slots)
        return made

    def value_of(self, dy, owner):
        """What `dy` (an argument of a tracked rt.index_add) puts in its slot."""
        if isinstance(dy, gast.Name) and dy.id in self.trees:
            return self.trees[dy.id]
        if isinstance(dy, gast.Name) and dy.id in self.tracked:
            raise _GiveUp(dy.id)             # used before it is defined
        if _is_none(dy):
            return None
        if not self.single_value(dy):
            raise _GiveUp(owner)
        return dy

    def items_of(self, dy, owner):
        if isinstance(dy, gast.Name) and dy.id in self.trees:
            return self.trees[dy.id].slots
        seq = self.inference.of(dy)
        if not isinstance(seq, Sequence) or not self.single_value(dy):
            raise _GiveUp(owner)
        return [_subscript(dy, k) for k in range(len(seq.items))]

    def single_value(self, node):
        """A name that keeps its value to the end of the function (read later in its place):
        a parameter never assigned, or a name assigned once, by a top-level `=`."""
        if not isinstance(node, gast.Name) or node.id in self.tracked:
            return False
        stores = self.stores.get(node.id, 0)
        return stores == 0 and node.id in self.params or \
            stores == 1 and node.id in self.top_assigned

    def written_out(self, tree, like, x):
        """The finished gradient of `x` (abstract value `like`) whose adjoint is `tree`."""
        items = []
        for j, item in enumerate(like.items):
            slot = tree.slots[j] if j < len(tree.slots) else None
            x_j = _subscript(x, j)
            slot = self.resolved(slot)
            if isinstance(slot, _Tree):
                if not isinstance(item, Sequence):
                    return None
                part = self.written_out(slot, item, x_j)
                if part is None:
                    return None
                items.append(part)
            elif slot is not None and self.finished_leaf(slot, item):
                items.append(slot)
            else:
                items.append(call("rt.as_grad", [slot if slot is not None else const(None),
                                                 x_j]))
        display = gast.List if like.kind is list else gast.Tuple
        return display(elts=items, ctx=gast.Load())

    def resolved(self, slot):
        """A name bound once to a tuple or list display: a tree of its items."""
        if isinstance(slot, gast.Name) and self.stores.get(slot.id) == 1 and \
                slot.id in self.defs and \
                isinstance(self.defs[slot.id].value, (gast.Tuple, gast.List)):
            elts = self.defs[slot.id].value.elts
            if all(isinstance(e, gast.Name) and self.single_value(e) for e in elts):
                return _Tree([name(e.id) for e in elts])
        return slot

    def finished_leaf(self, slot, item):
        """`slot` is already what rt.as_grad would return for an input of kind `item`: a
        new array (made by an operator or a reduction along axes) of its shape and dtype."""
        if not (isinstance(slot, gast.Name) and isinstance(item, Array) and
                not item.weak and item.shape and slot.id in self.defs and
                self.stores.get(slot.id) == 1):
            return False
        value = self.defs[slot.id].value
        made = self.inference.of(value)
        new_array = isinstance(value, gast.BinOp) or (
            isinstance(value, gast.Call) and dotted(value.func) in NEW_ARRAY_FUNCTIONS)
        return new_array and isinstance(made, Array) and not made.weak and \
            made.shape == item.shape and made.dtype == item.dtype


class _AsGrad(gast.NodeTransformer):
    """rt.as_grad(tree, x) -> the finished gradient written out."""

    def __init__(self, folder):
        self.folder = folder

    def visit_Call(self, n):
        self.generic_visit(n)
        if dotted(n.func) != "rt.as_grad" or len(n.args) != 2 or \
                not isinstance(n.args[0], gast.Name) or n.args[0].id not in self.folder.tracked:
            return n
        name, x = n.args[0].id, n.args[1]
        like = self.folder.inference.of(x)
        tree = self.folder.trees.get(name)
        if tree is None or not isinstance(like, Sequence) or not isinstance(x, gast.Name):
            raise _GiveUp(name)
        out = self.folder.written_out(tree, like, x)
        if out is None:
            raise _GiveUp(name)
        return out
