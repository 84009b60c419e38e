"""Aliasing: give in-place writes NumPy's meaning, or refuse them.

    y = np.zeros(3)                     y = np.zeros(3)
    v = y                               v = y
    y[0] = x          ->                y[0] = x
                                        v = y       # v is y: it sees the write
    return np.sum(v)                    return np.sum(v)

The transformations treat an in-place write as making a new value of the name written (the
reverse pass may even turn `y[0] = x` into `y = rt.index_update(y, 0, x)`). Another name
for the same array would then keep the old value where NumPy shows the new one. So, for
every in-place write (`x[idx] = v`, `x op= v`, `xs.append(v)`):

* a name that is surely the same object as `x` and is read afterwards is bound to `x` again
  right after the write, which is what NumPy's semantics amount to;
* a name that may share memory with `x` in any other way (a view such as `x.T` or `x[1:]`,
  a container holding `x`, one path of a branch) and is read afterwards is refused with a
  TransformError at the write, as is a write into an array the caller can see;
* `x op= v` is in place only when `x` holds an array or a list (for a number it just binds
  `x` anew): when the kind of `x` is unknown here and another name for it is read
  afterwards (or it may be a global array), `x = rt.number_only(x, ...)` goes before the
  write, which then binds `x` anew: a number passes, an array raises at run time.

Two flow-sensitive analyses decide this: which allocation sites each name may refer to
(sharing memory), and which names are surely one object (copies `a = b`, kept through
in-place writes, dropped at a join where one path disagrees).
"""
import gast
import numpy as np

from ..ir import anno
from ..ir.analysis import is_push, is_update, names_in, push_parts, reads, targets, walk_simple
from ..ir.anno import Anno
from ..errors import error_at
from ..ir.nodes import assign, prim_call

# Calls whose result may be the argument itself, or share its memory, besides the
# primitives registered with view=True: np.asarray returns an array argument unchanged.
_SHARING_CALLS = {"np.asarray", "np.asanyarray", "np.real", "np.imag"}
# Views that return their argument itself, or a new container holding its items (vmap's
# broadcast of a list some of whose items are batched), never an item of it.
_CONTAINER_KEEPING = {"rt.broadcast_batch"}
# Calls whose result is a new array or a read-only view of their first argument (np.diag
# of a matrix is its diagonal): it sees writes into the argument, never writes into it.
_READ_ONLY_VIEWS = {"np.diag"}
# Calls that return a number (immutable) when called without keywords such as axis.
_NUMBER_CALLS = {"np.sum", "np.mean", "np.max", "np.min", "np.prod", "np.std", "np.var",
                 "np.amax", "np.amin", "float", "int", "len", "np.linalg.norm", "np.dot",
                 "np.vdot", "np.trace", "np.linalg.det", "np.logsumexp", "rt.logsumexp"}
# Comparisons and logical functions: booleans (or one boolean), so that x[m] is a copy.
_MASK_MAKERS = {"<", "<=", ">", ">=", "==", "!=", "np.less", "np.less_equal", "np.greater",
                "np.greater_equal", "np.equal", "np.not_equal", "np.logical_and",
                "np.logical_or", "np.logical_not", "np.logical_xor", "np.isnan", "np.isinf",
                "np.isfinite"}
# Calls that always return a new, mutable ndarray: `x op= v` on one is in place.
_NEW_ARRAY_CALLS = {"np.zeros", "np.ones", "np.empty", "np.full", "np.zeros_like",
                    "np.ones_like", "np.empty_like", "np.full_like", "np.array", "np.eye",
                    "np.identity", "np.arange", "np.linspace", "np.logspace", "np.copy",
                    "np.stack", "np.concatenate", "np.vstack", "np.hstack", "np.outer",
                    "np.tile", "np.repeat"}


def resolve(fir, functions=None, namespace=None, namer=None):
    """Bind same-object aliases again after each in-place write, or raise TransformError.

    `functions`: IR name -> FunctionIR of the functions already resolved; a call of one of
    them gives a result that shares memory only with the arguments its summary names (see
    `_summarize`); a call of any other (recursion in progress) may share with every
    argument. `namespace`: the values of the globals the code reads (an array there is
    updated in place by `x op= v` when x may be it). `namer` gives fresh names."""
    body = fir.node.body
    lists = {push_parts(s)[0] for s in walk_simple(body) if is_push(s)}   # xs.append: a list
    summaries = {name: f.result_sharing if f is not None else None
                 for name, f in (functions or {}).items()}
    memory = _flow(body, _MemoryFacts(fir.params, lists, summaries))
    same = _flow(body, _SameObject(summaries))
    fir.result_sharing = _summarize(fir, memory, same)
    writes = [s for s in walk_simple(body) if _written(s) is not None]
    if not writes:
        return
    order, loops = _positions(body)
    all_stmts = list(walk_simple(body))
    rebinds = {}
    for s in writes:
        x = _written(s)
        state = memory.before[id(s)]
        roots, _ = memory.of(state, x)
        outside = sorted(r for r in roots if r[0] in ("param", "global"))
        # `u = K; ...; u += v` with K a global array: the caller's array, updated in place
        mutable = [r for r in outside if r[0] == "global" and
                   isinstance((namespace or {}).get(r[1]), (np.ndarray, list))]
        inplace = _mutates(s, x, memory)
        surely_global = any(g == x or frozenset((x, g)) in same.before[id(s)]
                            for _, g in mutable)
        if mutable and _is_inplace_op(s) and inplace is None and not surely_global:
            # a number, bound anew, or the caller's array, updated in place: asked at
            # run time (`s1 = K1[-2]; s1 *= 2.0` on a 1-d K1 is the number)
            rebinds[id(s)] = (s, x, [], _number_only(fir, s, x, f"global '{mutable[0][1]}'"))
            continue
        params = [r for r in outside if r[0] == "param"]
        if params and _is_inplace_op(s) and inplace is None:
            # `w -= lr * g` on a parameter: a number is bound anew; an array is the
            # caller's, which NumPy updates in place (an optimizer step the caller reads
            # afterwards): asked at run time
            rebinds[id(s)] = (s, x, [], _number_only(fir, s, x, f"parameter '{params[0][1]}'"))
            fir.parameter_updates.append(s)
            continue
        if outside and is_update(s) or mutable and _is_inplace_op(s) or \
                params and _is_inplace_op(s) and inplace:
            kind, name = (mutable or outside)[0]
            raise error_at(s, fir.source,
                           f"writing into '{x}' changes an array the caller can see "
                           f"({'parameter' if kind == 'param' else 'global'} '{name}'"
                           f"{'' if name == x else ', through a view or copy'}).",
                           f"make a local copy first: {x} = {x}.copy()", pass_name="aliasing")
        shares = frozenset(n for n in state if n != x and memory.shares(state, n, roots))
        anno.set(s, Anno.SHARES_MEMORY, shares)     # reverse mode keeps their values intact
        sharing = sorted(n for n in shares if _read_after(n, s, all_stmts, order, loops))
        if not sharing:
            continue
        if inplace is False:
            continue                      # `x op= v` on a number binds x anew
        if inplace is None:
            if all(frozenset((x, other)) in same.before[id(s)] for other in sharing):
                # names surely x's object (`a = x.copy(); b = a; b += 1.0`): they see the
                # write if x holds an array, asked at run time; a number was bound anew
                rebinds[id(s)] = (s, x, sharing, [], True)
                continue
            # a number (bound anew: `acc = x[0]; acc += x[1]` on a 1-d x) or an array
            # (updated in place, which the others would see: an error), asked at run time
            rebinds[id(s)] = (s, x, [], _number_only(fir, s, x, f"'{sharing[0]}'"))
            continue
        for other in sharing:
            if frozenset((x, other)) not in same.before[id(s)]:
                raise error_at(s, fir.source,
                               f"writing into '{x}' here also changes '{other}', which shares "
                               f"its memory (a view or copy of it, or a container holding "
                               f"it) and is used afterwards.",
                               f"copy one of them, e.g. {other} = {other}.copy(), so each "
                               "name owns its data.", pass_name="aliasing")
        rebinds[id(s)] = (s, x, sharing, [])
    if rebinds:
        _insert_rebinds(body, rebinds, namer)


def _number_only(fir, s, x, other):
    """`x = rt.number_only(x, ...)`, to put before `x op= v` (statement s): x passes if it
    holds a number at run time; an array raises, naming `other` that would see the write."""
    line = fir.source.line_of(s)
    where = f"{fir.source.filename}:{line} ({fir.source.name})"
    check = assign(x, prim_call("rt.number_only", [
        gast.Name(id=x, ctx=gast.Load(), annotation=None, type_comment=None),
        gast.Constant(value=x, kind=None), gast.Constant(value=_op_symbol(s), kind=None),
        gast.Constant(value=other, kind=None),
        gast.Constant(value=where, kind=None)]))
    gast.copy_location(check, s)
    if anno.get(s, Anno.ORIGIN) is not None:
        anno.set(check, Anno.ORIGIN, anno.get(s, Anno.ORIGIN))
    anno.set(s, Anno.INPLACE, None)       # (now a plain `x = x op v`)
    return [check]


def _summarize(fir, memory, same):
    """(indices of the parameters whose memory the result may share, index of the one it
    surely is or None, per element of a returned tuple display (group, the parameters it
    may share) or None): what a caller needs to follow `y = f(x)` and `a, b = f(x)`.
    Elements in one group may share memory with each other; elements of different groups
    do not."""
    ret = fir.node.body[-1] if fir.node.body else None
    if not isinstance(ret, gast.Return) or not isinstance(ret.value, gast.Name):
        return frozenset(), None, None
    state = memory.before.get(id(ret), {})
    obj, held = memory.of(state, ret.value.id)
    roots = obj | held
    if any(kind == "global" for kind, _ in roots):
        return None                    # a global: treat as sharing with everything

    def params_in(roots):
        return frozenset(k for k, p in enumerate(fir.params)
                         if ("param", p) in roots or ("sees", ("param", p)) in roots)
    may = params_in(roots)
    elements = _element_tree(memory, state, ret.value, params_in)
    # a parameter still names the caller's argument at the return only if the body never
    # binds it anew (`a = 0.7 * np.cos(a)` in a loop: `return a` may be either object)
    rebound = {n.id for n in gast.walk(fir.node) if isinstance(n, gast.Name) and
               isinstance(n.ctx, (gast.Store, gast.Del))}
    surely = next((k for k, p in enumerate(fir.params)
                   if p not in rebound and (p == ret.value.id or frozenset((p, ret.value.id)) in
                                            same.before.get(id(ret), frozenset()))), None)
    return may, surely, elements


def _element_tree(memory, state, value, params_in):
    """The elements of the tuple display `value` is bound to, as a tree of (group, the
    parameters it may share, its own elements or None), nested tuples made here followed
    too; None where `value` is no such tuple. Nodes whose objects meet share a group:
    nodes of different groups share no memory."""
    nodes = []                               # the roots each node is compared by

    def tree(fact, depth):
        obj, held = fact
        inner = None
        # (nested tuples are followed 4 deep and to 64 nodes: a tuple of tuples of results
        # of tuples, as nested higher-order code makes, grew as its breadth to the 4th)
        if depth < 4 and len(nodes) < 64 and len(obj) == 1 and \
                next(iter(obj))[0] == "site" and next(iter(obj))[1] in memory.site_elements:
            inner = memory.site_elements[next(iter(obj))[1]]
        k = len(nodes)
        # a tuple made here is its own object; anything else is all it may be or hold
        nodes.append(frozenset(obj) if inner is not None else
                     frozenset(r[1] if r[0] == "sees" else r for r in obj | held))
        children = None if inner is None else [tree(f, depth + 1) for f in inner]
        return k, params_in(obj | held), children
    top = memory._elements(state, value, None)
    if top is None:
        return None
    made = [tree(f, 0) for f in top]
    parent = list(range(len(nodes)))              # nodes whose roots meet: one group

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k
    for i in range(len(nodes)):
        for j in range(i):
            if nodes[i] & nodes[j]:
                parent[root(i)] = root(j)
    groups = [root(k) for k in range(len(nodes))]

    def grouped(node):
        k, may, children = node
        return groups[k], may, None if children is None else tuple(map(grouped, children))
    return tuple(map(grouped, made))


def _call_elements(summaries, value, length):
    """For `a, b = f(x)` of a user function returning a tuple display: per element, (its
    group, the argument names whose memory it may share, its elements or None); None
    where that is not known."""
    summary = summaries.get(anno.get(value, Anno.CALLEE))
    if summary is None or summary[2] is None or \
            length is not None and len(summary[2]) != length:
        return None
    names = [a.id if isinstance(a, gast.Name) else None for a in value.args]

    def named(node):
        group, may, children = node
        if any(k >= len(names) for k in may):
            raise LookupError                # (a parameter given by keyword or default)
        return (group, {names[k] for k in may if names[k]},
                None if children is None else [named(c) for c in children])
    try:
        return [named(node) for node in summary[2]]
    except LookupError:
        return None


def _call_shares(summaries, value):
    """The argument names whose memory the result of the user call `value` may share, and
    the one it surely is (or None)."""
    callee = anno.get(value, Anno.CALLEE)
    names = [a.id if isinstance(a, gast.Name) else None for a in value.args]
    summary = summaries.get(callee)
    if summary is None:
        return {n for n in names if n}, None
    may, surely, _ = summary
    return ({names[k] for k in may if k < len(names) and names[k]},
            names[surely] if surely is not None and surely < len(names) else None)


# ---------------------------------------------------------------- what a statement writes

def _written(s):
    """The name an in-place write changes, or None."""
    if is_update(s):
        return s.targets[0].value.id
    if _is_inplace_op(s):
        return s.targets[0].id
    if is_push(s):
        stack, _ = push_parts(s)      # xs.append(v): the list itself grows
        return stack
    return None


def _is_inplace_op(s):
    """`x = x op v` made from `x op= v`."""
    return isinstance(s, gast.Assign) and anno.get(s, Anno.INPLACE) is not None


def _op_symbol(s):
    return anno.get(s, Anno.INPLACE) or "+"


def _mutates(s, x, memory):
    """True: the write changes x's object; False: it binds x anew; None: unknown here."""
    if not _is_inplace_op(s):
        return True
    kind = memory.kind(memory.of(memory.before[id(s)], x)[0])
    if kind in ("array", "list"):
        return True
    if kind in ("number", "tuple"):
        return False          # bound anew
    return None


# ---------------------------------------------------------------- analyses

class _Facts:
    """name -> fact, at each statement (`before`), computed forward to a fixed point."""

    def __init__(self):
        self.before = {}


def _age(state, s):
    """Statement `s` makes a new object (a display, np.zeros): in a loop, the names that
    still refer to the one it made on an earlier trip now refer to ("old", id(s)), so a
    write into the new one is not taken to reach them (the recency abstraction; without
    it `out = out + [x]` in a loop looked like writing into the previous trip's list)."""
    new, old = ("site", id(s)), ("old", id(s))
    aged = {new: old, ("sees", new): ("sees", old)}
    for name, (obj, held) in list(state.items()):
        if any(r in aged for r in obj | held):
            state[name] = (frozenset(aged.get(r, r) for r in obj),
                           frozenset(aged.get(r, r) for r in held))


class _MemoryFacts(_Facts):
    """name -> (the objects it may be or view, the objects it may hold as a container).

    Objects are roots: ("param", p), ("global", g), ("site", id of the statement that
    made it) or ("old", that id) for what it made on an earlier trip through a loop."""

    def __init__(self, params, lists, summaries):
        super().__init__()
        self.summaries = summaries
        self.entry = {p: (frozenset({("param", p)}),) * 2 for p in params}
        self.site_kind = {}       # id(statement) -> "array", "list", "tuple" or "number"
        self.lists = lists        # names something is appended to: they hold lists
        self.site_elements = {}   # id(statement making a tuple) -> facts of its elements
        self.masks = set()        # id(statement) of comparisons: booleans, index copies

    def kind_of(self, root):
        return self.site_kind.get(root[1], "unknown") if root[0] in ("site", "old") \
            else "unknown"

    def join(self, a, b):
        out = dict(a)
        for k, (obj, held) in b.items():
            old = out.get(k, (frozenset(), frozenset()))
            out[k] = (old[0] | obj, old[1] | held)
        return out

    @staticmethod
    def of(state, name):
        outside = frozenset({("global", name)})
        return state.get(name, (outside, outside))

    def shares(self, state, name, roots):
        """May `name` see a change to the objects `roots`: be one, view one or hold one
        (or be a read-only view of one, ("sees", root): np.diag of a matrix)?"""
        obj, held = self.of(state, name)
        return bool((obj | held) & (roots | {("sees", r) for r in roots}))

    def transfer(self, s, state):
        if is_update(s):
            return state               # same object, same memory
        if is_push(s):
            stack, item = push_parts(s)
            state = dict(state)
            obj, held = self.of(state, stack)
            if isinstance(item, gast.Name):
                item_obj, item_held = self.of(state, item.id)
                held = held | item_obj | item_held
            state[stack] = (obj, held)
            return state
        if not isinstance(s, gast.Assign):
            return state
        target, value = s.targets[0], s.value
        state = dict(state)
        if isinstance(target, (gast.Tuple, gast.List)):      # a, b = t: parts of t
            elements = self._elements(state, value, len(target.elts))
            if elements is not None:                        # element k to name k
                for e, fact in zip(target.elts, elements):
                    state[e.id] = fact
                return state
            made = _call_elements(self.summaries, value, len(target.elts)) \
                if isinstance(value, gast.Call) and anno.get(value, Anno.CALLEE) else None
            if made is not None:        # `a, b = f(x)`: new objects, or views of arguments
                for e, node in zip(target.elts, made):
                    state[e.id] = self._made_by_call(state, s, node)
                return state
            parts = frozenset()
            for n in names_in(value):
                obj, held = self.of(state, n)
                parts |= held | (obj if not self._container(obj) else frozenset())
            for e in target.elts:
                state[e.id] = (parts, parts)
            return state
        name = target.id
        site = frozenset({("site", id(s))})
        if _is_inplace_op(s):
            obj, held = self.of(state, name)
            kind = self.kind(obj)
            if kind in ("array", "list"):
                return state               # the same object, updated
            if kind == "number" and self.kind(self.of(state, _operand(value))[0]) == "number":
                self.site_kind[id(s)] = "number"
                state[name] = (site, frozenset())
            else:                          # a new value, or the same object updated
                state[name] = (obj | site, held)
            return state
        made = _call_elements(self.summaries, value, None) \
            if isinstance(value, gast.Call) and anno.get(value, Anno.CALLEE) else None
        if isinstance(value, gast.Name):
            state[name] = self.of(state, value.id)
        elif made is not None:
            # `t = f(x)` of a function returning a tuple display: t[k] is known element by
            # element (a new object per group, or views of arguments)
            facts = [self._made_by_call(state, s, node) for node in made]
            self.site_kind[id(s)] = "tuple"
            self.site_elements[id(s)] = facts
            state[name] = (site, frozenset().union(*(o | h for o, h in facts)))
        elif isinstance(value, gast.Call) and anno.get(value, Anno.CALLEE):
            shared = frozenset()            # a user function may return (a view of) an argument
            for n in _call_shares(self.summaries, value)[0]:
                obj, held = self.of(state, n)
                shared |= obj | held
            state[name] = (site | shared, shared)
        elif isinstance(value, gast.Constant):
            state[name] = (frozenset(), frozenset())
        else:
            found = anno.get(value, Anno.PRIM)
            prim, spelling = found if found else (None, None)
            index = value.slice if isinstance(value, gast.Subscript) else \
                value.args[1] if isinstance(value, gast.Call) and len(value.args) == 2 else None
            elements = self._elements(state, _name_or_none(_base(value)), None) \
                if prim is not None and spelling in ("[]", "rt.getitem") else None
            if elements is not None and isinstance(index, gast.Constant) and \
                    type(index.value) is int and -len(elements) <= index.value < len(elements):
                state[name] = elements[index.value]          # t[k] of a tuple made here
            elif prim is not None and spelling in ("[]", "rt.getitem") and _base(value) and \
                    not (_base(value) in self.lists or
                         self._container(self.of(state, _base(value))[0])) and \
                    self._is_mask(state, index):
                # x[x > 0]: a boolean (or boolean scalar) index makes a copy
                _age(state, s)
                state[name] = (site, frozenset())
            elif prim is not None and spelling in ("[]", "rt.getitem") and _base(value):
                base = _base(value)
                obj, held = self.of(state, base)
                # an element of a container, or a view of an array
                element = base in self.lists or self._container(obj)
                state[name] = (held | (frozenset() if element else obj), held)
            elif spelling in ("rt.to_list", "rt.to_tuple") and _base(value):
                # list(x), tuple(x): a new container (a tuple may be x itself, which no
                # write changes) holding x's items: the rows of an array (views of it),
                # the items of a container made here (a write into its slots leaves the
                # copy as it was; `for k in list(d): d[k] = ...`), or either
                _age(state, s)
                self.site_kind[id(s)] = "list" if spelling == "rt.to_list" else "tuple"
                obj, inner = self.of(state, _base(value))
                state[name] = (site, inner if self._container(obj) else obj | inner)
            elif spelling in _READ_ONLY_VIEWS and isinstance(value, gast.Call) and \
                    value.args and isinstance(value.args[0], gast.Name):
                # a new array, or a read-only view of the argument (np.diag of a matrix):
                # it sees a write into the argument; a write into it is numpy's error
                _age(state, s)
                self.site_kind[id(s)] = "array"
                arg_obj, arg_held = self.of(state, value.args[0].id)
                state[name] = (site | {("sees", r) for r in arg_obj | arg_held
                                       if r[0] != "sees"}, frozenset())
            elif prim is not None and (prim.view or spelling in _SHARING_CALLS):
                # a view of an argument, or the argument itself
                args = value.args if isinstance(value, gast.Call) else \
                    [getattr(value, "value", None)]
                bases = [args[k].id for k in prim.view or (0,)
                         if k < len(args) and isinstance(args[k], gast.Name)]
                if not bases:
                    _age(state, s)
                    state[name] = (site, frozenset())
                elif spelling in _CONTAINER_KEEPING:
                    # the argument itself, or a new container holding its items (or a new
                    # array): an append to the result changes no other list holding them
                    _age(state, s)
                    obj, held = site, frozenset()
                    for b in bases:
                        more, inner = self.of(state, b)
                        obj |= more
                        held |= inner
                    state[name] = (obj, held)
                else:       # of a container (rt.part of a tuple): what it holds
                    obj, held = frozenset(), frozenset()
                    for b in bases:
                        more, inner = self.of(state, b)
                        obj |= inner | (frozenset() if self._container(more) else more)
                        held |= inner
                    state[name] = (obj, held)
            elif prim is not None and prim.container:   # holds its elements
                _age(state, s)
                self.site_kind[id(s)] = "tuple" if spelling == "tuple" else "list"
                if spelling == "tuple" and isinstance(value, gast.Tuple):
                    self.site_elements[id(s)] = [
                        self.of(state, e.id) if isinstance(e, gast.Name) else
                        (frozenset(), frozenset()) for e in value.elts]
                held = frozenset()
                for n in names_in(value):
                    obj, inner = self.of(state, n)
                    held |= obj | inner
                state[name] = (site, held)
            else:                           # a new object (on each trip of a loop)
                _age(state, s)
                if spelling in _MASK_MAKERS:
                    self.masks.add(id(s))
                if spelling in _NEW_ARRAY_CALLS:
                    self.site_kind[id(s)] = "array"
                elif spelling in _NUMBER_CALLS and not value.keywords or \
                        isinstance(value, (gast.BinOp, gast.UnaryOp)) and all(
                            self.kind(self.of(state, n)[0]) == "number"
                            for n in names_in(value)):
                    self.site_kind[id(s)] = "number"
                state[name] = (site, frozenset())
        return state

    def _is_mask(self, state, index):
        """Is `index` surely a comparison's result (booleans: indexing with it copies)?"""
        if not isinstance(index, gast.Name):
            return False
        obj, _ = self.of(state, index.id)
        return bool(obj) and all(r[0] in ("site", "old") and r[1] in self.masks for r in obj)

    def _made_by_call(self, state, s, node):
        """The facts of an element (group, argument names it may share, its elements) of
        what the user call in statement s returns: a tuple of its own, a new object of its
        group, or a view of those arguments."""
        group, names, children = node
        key = (id(s), group)
        if children is not None:
            facts = [self._made_by_call(state, s, c) for c in children]
            self.site_kind[key] = "tuple"
            self.site_elements[key] = facts
            return (frozenset({("site", key)}), frozenset().union(*(o | h for o, h in facts)))
        shared = frozenset()
        for n in names:
            obj, held = self.of(state, n)
            shared |= obj | held
        return (frozenset({("site", key)}) | shared, shared)

    def _elements(self, state, value, length):
        """The facts of each element of `value` where it is known element by element: a
        tuple display of names and constants, or a name bound only to a tuple display made
        here (tuples cannot change). None otherwise, or if its length is not `length`."""
        if isinstance(value, (gast.Tuple, gast.List)) and all(
                isinstance(e, (gast.Name, gast.Constant)) for e in value.elts):
            facts = [self.of(state, e.id) if isinstance(e, gast.Name) else
                     (frozenset(), frozenset()) for e in value.elts]
        elif isinstance(value, gast.Name):
            obj, _ = self.of(state, value.id)
            if len(obj) != 1 or next(iter(obj))[0] != "site" or \
                    next(iter(obj))[1] not in self.site_elements:
                return None
            facts = self.site_elements[next(iter(obj))[1]]
        else:
            return None
        return facts if length is None or len(facts) == length else None

    def kind(self, roots):
        """"array", "list", "tuple", "number" (no object made here: a constant) or None."""
        kinds = {self.kind_of(r) for r in roots if r[0] != "sees"}
        if not kinds:
            return "number"
        return kinds.pop() if len(kinds) == 1 and "unknown" not in kinds else None

    def _container(self, roots):
        """Are all of `roots` containers made here (so a subscript is one of their elements)?"""
        return bool(roots) and all(self.kind_of(r) in ("list", "tuple") for r in roots)


def _operand(value):
    """The right operand's name of `x op v` (or x's own when v is a constant)."""
    right = value.right if isinstance(value, gast.BinOp) else None
    return right.id if isinstance(right, gast.Name) else None


def _name_or_none(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None) \
        if name else None


def _base(value):
    if isinstance(value, gast.Subscript):
        base = value.value
    elif isinstance(value, gast.Call) and value.args:
        base = value.args[0]
    else:
        return None
    return base.id if isinstance(base, gast.Name) else None


class _SameObject(_Facts):
    """The pairs of names surely bound to one object (a set of frozensets of two names)."""

    entry = frozenset()

    def __init__(self, summaries=None):
        super().__init__()
        self.summaries = summaries or {}

    def join(self, a, b):
        return a & b

    def transfer(self, s, state):
        if not isinstance(s, gast.Assign) or is_update(s):
            return state                # pushes and subscript writes keep every object
        if _is_inplace_op(s):
            return state                # in place: still the same object (else refused)
        bound = targets(s)
        kept = frozenset(p for p in state if not (p & bound))
        same_as = s.value.id if isinstance(s.value, gast.Name) else \
            _call_shares(self.summaries, s.value)[1] if isinstance(s.value, gast.Call) and \
            anno.get(s.value, Anno.CALLEE) else None     # `v = f(x)` where f returns x
        if isinstance(s.targets[0], gast.Name) and same_as and same_as != s.targets[0].id:
            a, b = s.targets[0].id, same_as
            new = {frozenset((a, b))} | {frozenset((a, c)) for p in kept if b in p
                                         for c in p if c != b}
            kept = kept | new
        return kept


def _flow(stmts, facts):
    """Run `facts` forward over structured code; loops iterate to a fixed point."""
    def visit(block, state):
        for s in block:
            if isinstance(s, gast.If):
                facts.before[id(s)] = state
                state = facts.join(visit(s.body, state), visit(s.orelse, state))
            elif isinstance(s, (gast.For, gast.While)):
                entry = state
                for _ in range(50):
                    facts.before[id(s)] = state
                    after = visit(s.body, state)
                    new = facts.join(entry, after)
                    if new == state:
                        break
                    state = new
                else:
                    raise RuntimeError("internal: aliasing analysis did not settle")
                if _runs_at_least_once(s):
                    state = after       # the loop's entry state is not one of its exits
            else:
                facts.before[id(s)] = state
                state = facts.transfer(s, state)
        return state
    visit(stmts, facts.entry)
    return facts


def _runs_at_least_once(loop):
    """`for i in range(a, b)` with constant bounds that make at least one trip."""
    it = loop.iter if isinstance(loop, gast.For) else None
    if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and
            it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3 and
            all(isinstance(a, gast.Constant) and type(a.value) is int for a in it.args)):
        return False
    step = it.args[2].value if len(it.args) == 3 else 1
    return step != 0 and len(range(*(a.value for a in it.args))) > 0


# ---------------------------------------------------------------- reads after a write

def _positions(stmts):
    """Program order of every statement, and the loops enclosing each."""
    order, loops = {}, {}

    def visit(block, enclosing):
        for s in block:
            order[id(s)] = len(order)
            loops[id(s)] = enclosing
            if isinstance(s, gast.If):
                visit(s.body, enclosing)
                visit(s.orelse, enclosing)
            elif isinstance(s, (gast.For, gast.While)):
                visit(s.body, enclosing + [s])
    visit(stmts, [])
    return order, loops


def _read_after(name, site, all_stmts, order, loops):
    """Is `name` read after `site` runs: later in program order, or on a later trip of a
    loop around `site` before being assigned afresh in that trip?"""
    after = order[id(site)]
    for s in all_stmts:
        if name not in reads(s) or (s is site and not loops[id(site)]):
            continue      # (the write itself reads it again on a later trip of a loop)
        if order[id(s)] > after:
            if not any(after < order[id(a)] < order[id(s)] and name in _rebound(a)
                       for a in all_stmts):
                return True   # no fresh assignment in between: it still sees the old data
            continue
        shared = [l for l in loops[id(site)] if any(l is m for m in loops[id(s)])]
        if shared:
            start = order[id(shared[-1])]
            fresh = any(start < order[id(a)] < order[id(s)] and name in _rebound(a)
                        for a in all_stmts)
            if not fresh:
                return True
    return False


def _rebound(s):
    """Names a statement binds to another object (not writes into their object)."""
    if is_update(s) or is_push(s) or _is_inplace_op(s):
        return set()
    return targets(s) if not isinstance(s, (gast.If, gast.For, gast.While)) else set()


# ---------------------------------------------------------------- the rewrite

def _insert_rebinds(stmts, rebinds, namer, inserted=None):
    """Put `other = x` after each write in `rebinds` (id -> (stmt, x, others, before[,
    if_array])); with if_array, only where x holds an array when the code runs."""
    inserted = set() if inserted is None else inserted
    for i in range(len(stmts) - 1, -1, -1):
        s = stmts[i]
        if isinstance(s, gast.If):
            _insert_rebinds(s.body, rebinds, namer, inserted)
            _insert_rebinds(s.orelse, rebinds, namer, inserted)
        elif isinstance(s, (gast.For, gast.While)):
            _insert_rebinds(s.body, rebinds, namer, inserted)
            tail = anno.get(s, Anno.COND_LEN) if isinstance(s, gast.While) else None
            if tail:     # the statements recomputing a while test stay last, rebinds included
                anno.set(s, Anno.COND_LEN, _tail_length(s.body, tail, inserted))
        if id(s) in rebinds:
            _, x, others, before, *if_array = rebinds[id(s)]
            made = [assign(o, _load(x)) for o in others]
            if if_array:       # (asked before the write: a 0-d array plus v is a number)
                flag = namer.fresh(x + "_is_array")
                before = before + [assign(flag, prim_call("rt.holds_array", [_load(x)]))]
                made = [gast.If(test=_load(flag), body=made, orelse=[])]
            origin = anno.get(s, Anno.ORIGIN)
            for m in made + before:
                for node in gast.walk(m):
                    if isinstance(node, gast.stmt):
                        gast.copy_location(node, s)
                        if origin is not None:
                            anno.set(node, Anno.ORIGIN, origin)
                        inserted.add(id(node))
            stmts[i + 1:i + 1] = made
            stmts[i:i] = before


def _load(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def _tail_length(body, tail, inserted):
    """The length of the last `tail` original statements of `body` with what was inserted
    among them."""
    length = original = 0
    for s in reversed(body):
        if original == tail:
            break
        length += 1
        if id(s) not in inserted:
            original += 1
    return length
