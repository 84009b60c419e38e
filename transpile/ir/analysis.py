"""Analyses over the IR: which names a statement reads and writes, activity, definedness.

The IR is structured (if/for/while, no jumps), so every analysis is a walk over statement
lists; loops iterate to a fixed point.
"""
import gast

from . import anno
from .anno import Anno


def names_in(node):
    """Names read by an expression (or an index, or a list of them)."""
    if node is None:
        return set()
    if isinstance(node, list):
        out = set()
        for n in node:
            out |= names_in(n)
        return out
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
            and not isinstance(n.ctx, gast.Store)}


def _is_rt(func, attr):
    return isinstance(func, gast.Attribute) and func.attr == attr and \
        isinstance(func.value, gast.Name) and func.value.id == "rt"


def is_push(s):
    """`rt.push(stack, v)` (a stack of saved values) or `xs.append(v)` (a user list)."""
    return push_parts(s) is not None


def is_stack_push(s):
    return is_push(s) and _is_rt(s.value.func, "push")


def push_parts(s):
    """(list name, item) of a push statement, else None."""
    if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)):
        return None
    f, args = s.value.func, s.value.args
    if _is_rt(f, "push") and len(args) == 2 and isinstance(args[0], gast.Name):
        return args[0].id, args[1]
    if isinstance(f, gast.Attribute) and f.attr == "append" and isinstance(f.value, gast.Name) \
            and len(args) == 1:
        return f.value.id, args[0]
    return None


def is_pop(s):
    """`v = rt.pop(s)`, or `v = rt.pop_adjoint(s, like)` (a pop that may find s empty)."""
    return pop_stack(s) is not None


def pop_stack(s):
    """The stack name a pop statement pops from, else None."""
    if not (isinstance(s, gast.Assign) and isinstance(s.value, gast.Call)
            and isinstance(s.targets[0], gast.Name)):
        return None
    f, args = s.value.func, s.value.args
    if (_is_rt(f, "pop") or _is_rt(f, "pop_adjoint")) and args and \
            isinstance(args[0], gast.Name):
        return args[0].id
    return None


def is_update(s):
    """`x[idx] = v`: an in-place update of the local `x`."""
    return (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript))


def targets(s):
    """Names a simple statement (re)binds or mutates."""
    if isinstance(s, gast.Assign):
        t = s.targets[0]
        if isinstance(t, gast.Subscript):
            return {t.value.id}
        if isinstance(t, (gast.Tuple, gast.List)):
            return {e.id for e in t.elts}
        out = {t.id}
        if is_pop(s):
            out.add(pop_stack(s))
        return out
    if is_push(s):
        return {push_parts(s)[0]}
    if isinstance(s, gast.For):
        return {s.target.id}
    return set()


def reads(s):
    """Names a simple statement reads (for if/for/while: only the header)."""
    if isinstance(s, gast.Assign):
        t = s.targets[0]
        out = names_in(s.value)
        if isinstance(t, gast.Subscript):
            out |= names_in(t.slice) | {t.value.id}
        return out
    if isinstance(s, gast.Expr):
        return names_in(s.value)
    if isinstance(s, (gast.If, gast.While)):
        return names_in(s.test)
    if isinstance(s, gast.For):
        return names_in(s.iter)
    if isinstance(s, gast.Return):
        return names_in(s.value)
    return set()


def walk_simple(stmts):
    """Every statement, including those nested in if/for/while bodies."""
    for s in stmts:
        yield s
        if isinstance(s, gast.If):
            yield from walk_simple(s.body)
            yield from walk_simple(s.orelse)
        elif isinstance(s, (gast.For, gast.While)):
            yield from walk_simple(s.body)


def assigned_in(stmts):
    out = set()
    for s in walk_simple(stmts):
        out |= targets(s)
    return out


def varied(stmts, inputs):
    """Names whose value may depend, differentiably, on the names in `inputs`."""
    active = set(inputs)
    changed = True
    while changed:
        changed = False
        for s in walk_simple(stmts):
            if isinstance(s, gast.For) or not targets(s) or isinstance(s, (gast.If, gast.While)):
                continue
            new = targets(s) - active
            if not new:
                continue
            if _is_active_statement(s, active):
                active |= new
                changed = True
    return active


def _is_active_statement(s, active):
    if isinstance(s, gast.Assign):
        value = s.value
        found = anno.get(value, Anno.PRIM)
        if found and found[0] is not None and found[0].nondiff:
            return False
        if found and found[1] == "[]":
            return bool(names_in(value.value) & active)  # the index carries no derivative
        if is_update(s):
            return bool((names_in(s.value) | {s.targets[0].value.id}) & active)
        if is_pop(s):
            return pop_stack(s) in active
    return bool(reads(s) & active)


def loop_depth_sites(stmts):
    """name -> list of (statement, inside_loop) for every assignment site."""
    sites = {}

    def visit(block, in_loop):
        for s in block:
            if isinstance(s, gast.If):
                visit(s.body, in_loop)
                visit(s.orelse, in_loop)
            elif isinstance(s, (gast.For, gast.While)):
                if isinstance(s, gast.For):
                    sites.setdefault(s.target.id, []).append((s, in_loop))
                visit(s.body, True)
            else:
                for t in targets(s):
                    sites.setdefault(t, []).append((s, in_loop))
    visit(stmts, False)
    return sites


def definitely_defined(stmts, params):
    """statement id -> names surely bound just before it runs."""
    before = {}

    def visit(block, defined):
        defined = set(defined)
        for s in block:
            before[id(s)] = set(defined)
            if isinstance(s, gast.If):
                a = visit(s.body, defined)
                b = visit(s.orelse, defined)
                defined |= a & b
            elif isinstance(s, (gast.For, gast.While)):
                visit(s.body, defined | ({s.target.id} if isinstance(s, gast.For) else set()))
            else:
                defined |= targets(s)
        return defined
    visit(stmts, set(params))
    return before


def definitely_assigned(stmts):
    """Names that every path through `stmts` assigns (a loop may run no trip: not counted)."""
    out = set()
    for s in stmts:
        if isinstance(s, gast.If):
            out |= definitely_assigned(s.body) & definitely_assigned(s.orelse)
        elif not isinstance(s, (gast.For, gast.While)):
            out |= targets(s)
    return out


def maybe_defined(stmts, params):
    """statement id -> names that may be bound just before it runs."""
    before = {}

    def visit(block, defined):
        defined = set(defined)
        for s in block:
            before[id(s)] = before.get(id(s), set()) | defined
            if isinstance(s, gast.If):
                defined = visit(s.body, defined) | visit(s.orelse, defined)
            elif isinstance(s, (gast.For, gast.While)):
                entry = defined | ({s.target.id} if isinstance(s, gast.For) else set())
                after = visit(s.body, entry)
                after = visit(s.body, entry | after)   # second trip sees the first's names
                defined |= after
            else:
                defined |= targets(s)
        return defined
    visit(stmts, set(params))
    return before


def free_reads(stmts, defined=frozenset()):
    """Names read before any assignment in `stmts` (the inputs a function body needs)."""
    free = set()

    def visit(block, defined):
        defined = set(defined)
        for s in block:
            if isinstance(s, gast.If):
                free.update(names_in(s.test) - defined)
                a, b = visit(s.body, defined), visit(s.orelse, defined)
                defined |= a & b
            elif isinstance(s, (gast.For, gast.While)):
                header = names_in(s.iter) if isinstance(s, gast.For) else names_in(s.test)
                free.update(header - defined)
                inner = defined | ({s.target.id} if isinstance(s, gast.For) else set())
                visit(s.body, inner)
            else:
                free.update(reads(s) - defined)
                if not is_update(s) and not is_push(s):
                    defined |= targets(s)
        return defined
    visit(stmts, defined)
    return free


def changed_by_call(s, active):
    """The spelling of a differentiable primitive called for its effect on an argument that
    carries a derivative (`np.random.shuffle(y)` reorders y in place), else None: the
    passes see no assignment there, so they must refuse it."""
    if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)) or is_push(s):
        return None
    found = anno.get(s.value, Anno.PRIM)
    if not found or found[0] is None or found[0].nondiff:
        return None
    if names_in(s.value.args) & active:
        return found[1]
    return None

