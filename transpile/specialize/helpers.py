"""What known shapes decide, and the clean-ups after it.

    decide_helpers   runtime helpers whose work known shapes decide, done now:
                     rt.unbroadcast -> g or one np.add.reduce, rt.expand -> np.full,
                     rt.reduced_size -> a number, 2-D matmul adjoints -> `g @ W.T`,
                     rt.add of two arrays -> `+`,
                     np.mean of a float array -> its sum divided, a float input's check
                     and a known sequence's loop check -> nothing, grad's seed of a float
                     scalar -> a constant
    forward_copies   `a = b; f(a)` -> `f(b)` within a block (chains fuse across copies)
    donate           a kernel writes its result into a donated argument nobody else sees
"""
import gast
import numpy as np

from ..ir.nodes import const
from ..ir.templates import dotted
from . import lanes
from .abstract import Array, Number, Sequence
from .constants import Changes, name_counts, stored_names


def decide_helpers(fdef, inference):
    """Runtime helpers whose work is decided by shapes now known, done now."""
    def known(node, weak=False):
        a = inference.of(node)
        return a if isinstance(a, Array) and (weak or not a.weak) else None

    changes = Changes()

    class Simplify(gast.NodeTransformer):
        def visit_Call(self, n):
            self.generic_visit(n)
            new = self.simplified(n)
            if new is not n:
                changes.count += 1
            return new

        def simplified(self, n):
            spelling = dotted(n.func)
            args = n.args
            rule = lanes.rule_for(n)
            if rule is not None and rule.decide is not None:
                new = rule.decide(args, [inference.of(a) for a in args],
                                  [lanes.literal(a) for a in args])
                return n if new is None else new
            if spelling in ("np.shape", "np.ndim") and len(args) == 1 and not n.keywords:
                x = known(args[0], weak=True)
                if x is not None:
                    return const(x.shape if spelling == "np.shape" else len(x.shape))
            if spelling == "np.asarray" and len(args) == 1 and not n.keywords:
                x = known(args[0])
                if x is not None and x.shape:
                    return args[0]      # an array already (a 0-d one may be a numpy scalar)
            if spelling == "rt.seq_array" and len(args) == 1 and not n.keywords:
                if known(args[0]) is not None:
                    return args[0]      # an array, not a list: rt.seq_array passes it on
            if spelling == "np.reshape" and len(args) == 2 and not n.keywords:
                x, shape = known(args[0]), lanes.literal(args[1])
                if x is not None and x.shape and (shape == x.shape or shape == x.shape[0]
                                                  and len(x.shape) == 1):
                    return args[0]      # a view of all of it, as it is
            if spelling == "np.moveaxis" and len(args) == 3 and not n.keywords:
                x = known(args[0])
                if x is not None and isinstance(inference.of(n), Array) and \
                        all(type(lanes.literal(a)) is int for a in args[1:]):
                    # (inference knows the result only for axes in range)
                    return _transposed_by(args[0], x, lanes.literal(args[1]),
                                          lanes.literal(args[2]))
            if spelling in ("np.ones_like", "np.zeros_like") and len(args) == 1 and \
                    not n.keywords:
                x = known(args[0])
                if x is not None and len(x.shape) <= 1:
                    # of an ndarray or a numpy scalar: an ndarray (of one memory layout)
                    return _np_call(spelling[3:-5], [const(x.shape), _dtype_node(x.dtype)])
            if n.keywords and spelling != "np.mean":
                return n
            if spelling == "rt.unbroadcast" and len(args) == 2 and all(
                    isinstance(inference.of(a), (Array, Number)) and
                    inference.of(a).shape == () for a in args):
                return args[0]     # a number against a number (either kind): g itself
            if spelling == "rt.unbroadcast" and len(args) == 2:
                g, x = known(args[0]), known(args[1])
                if g is not None and x is not None:
                    return _unbroadcast(args[0], g.shape, x.shape) or n
            if spelling == "rt.expand" and 2 <= len(args) <= 4 and \
                    all(isinstance(a, gast.Constant) and (a.value is None or a.value is False)
                        for a in args[2:]):
                g, x = known(args[0], weak=True), known(args[1])
                if g is not None and x is not None and not g.shape:
                    return _np_call("full", [const(x.shape), args[0]])
            if spelling == "np.mean" and len(args) == 1 and all(
                    k.arg in ("axis", "dtype", "keepdims") and
                    isinstance(k.value, gast.Constant) and
                    (k.value.value is None or k.value.value is False)   # not 0 == False
                    for k in n.keywords):
                x = known(args[0])
                if x is not None and x.dtype in (np.float32, np.float64) and x.size:
                    # what np.mean computes for a float array: the sum, divided
                    return gast.BinOp(left=_add_reduce(args[0], const(None)), op=gast.Div(),
                                      right=const(x.size))
            if spelling == "rt.add" and len(args) == 2 and \
                    all(known(a, weak=True) is not None for a in args):
                # adjoints that are arrays or numbers add as `+` (containers and None, for
                # which rt.add exists, are not Arrays)
                return gast.BinOp(left=args[0], op=gast.Add(), right=args[1])
            if spelling == "rt.seed" and len(args) == 2:
                out = known(args[0], weak=True)
                if out is not None and not out.shape and out.dtype.kind == "f":
                    # what rt.seed returns: a one of the output's own type
                    return const(1.0) if out.weak else \
                        _np_call(out.dtype.name, [const(1.0)])
            if spelling == "rt.reduced_size" and (len(args) == 1 or len(args) == 2 and
                                                  isinstance(args[1], gast.Constant) and
                                                  args[1].value is None):
                x = known(args[0])
                if x is not None:
                    return const(x.size)
            if spelling in ("rt.matmul_adj_x1", "rt.matmul_adj_x2") and len(args) == 3:
                shapes = [known(a) for a in args]
                if all(a is not None and len(a.shape) == 2 for a in shapes):
                    if spelling == "rt.matmul_adj_x1":      # (g, x2, x1): g @ x2.T
                        return gast.BinOp(left=args[0], op=gast.MatMult(),
                                          right=_transposed(args[1]))
                    return gast.BinOp(left=_transposed(args[0]), op=gast.MatMult(),
                                      right=args[1])        # (x1, g, x2): x1.T @ g
            return n

    def is_float_input(a):
        if isinstance(a, Array):
            return not a.weak and a.dtype.kind in "fc" or a.weak and a.dtype.kind == "f"
        if isinstance(a, Sequence):
            return all(is_float_input(i) for i in a.items)
        return False

    def jacobian_dtype_known_right(call):
        """rt.check_jacobian_dtype(x, transform, role[, holomorphic]) of an x whose leaves
        are known real arrays (complex ones, for holomorphic): it passes."""
        args = call.args
        holomorphic = len(args) > 3 and isinstance(args[3], gast.Constant) and \
            args[3].value is True
        if call.keywords or not args or not isinstance(args[0], gast.Name) or \
                len(args) > 3 and not holomorphic:
            return False
        def right(a):
            if isinstance(a, Array):
                return a.dtype.kind == ("c" if holomorphic else "f")
            return isinstance(a, Sequence) and all(right(i) for i in a.items)
        return right(inference.of(args[0]))

    def visit(stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                    dotted(s.value.func) == "rt.check_float_input" and s.value.args and \
                    isinstance(s.value.args[0], gast.Name) and \
                    is_float_input(inference.of(s.value.args[0])):
                changes.count += 1
                continue                      # its kind is known to be right
            if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                    dotted(s.value.func) == "rt.check_jacobian_dtype" and \
                    jacobian_dtype_known_right(s.value):
                changes.count += 1
                continue                      # a real (or, holomorphic, complex) array
            s = Simplify().visit(s)
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                    setattr(s, field, visit(inner) or [gast.Pass()])
            out.append(s)
        return out
    fdef.body = visit(fdef.body)
    return changes.count > 0


def fold_filled(fdef, inference):
    """Arithmetic on an array filled with one number (what `rt.expand` of a scalar adjoint
    becomes), done on the number: `np.full(S, g) / 8` -> `np.full(S, g / 8)`, and
    `np.full(S, g) * y` -> `g * y` where y alone has shape S and g is a numpy scalar (not a
    Python number, which numpy would treat as weak). An `np.full` assigned to a name read
    once, by a later top-level statement, moves into it first. True if anything changed.

    Each is what numpy computes: an operation on a filled array computes the same number at
    every element, and a numpy scalar takes part in dtype promotion as an array of its dtype
    does (NEP 50)."""
    changes = Changes()
    reads, stores = name_counts(fdef)
    body = fdef.body
    for i, s in enumerate(body):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name) and _filled(s.value) is not None):
            continue
        t = s.targets[0].id
        reads_of_fill = {n.id for n in gast.walk(s.value) if isinstance(n, gast.Name)}
        if reads.get(t) != 1 or stores.get(t) != 1:
            continue
        for later in body[i + 1:]:
            uses = [n for n in gast.walk(later) if isinstance(n, gast.Name) and n.id == t]
            if uses:
                if not isinstance(later, gast.Assign) or \
                        any(isinstance(n, gast.Name) and n.id == t for tg in later.targets
                            for n in gast.walk(tg)):
                    break
                _Replace(t, s.value).visit(later)
                s.value = None                     # moved: the statement goes below
                changes.count += 1
                break
            if reads_of_fill & stored_names(later) or \
                    isinstance(later, (gast.If, gast.For, gast.While, gast.With, gast.Try)):
                break
    fdef.body = [s for s in body if not (isinstance(s, gast.Assign) and s.value is None)]

    def strong_scalar(node):
        a = inference.of(node)
        return isinstance(a, Array) and not a.weak and a.shape == () and a.dtype.kind == "f"

    class Fold(gast.NodeTransformer):
        def visit_BinOp(self, n):
            self.generic_visit(n)
            if not isinstance(n.op, (gast.Add, gast.Sub, gast.Mult, gast.Div)):
                return n
            for filled, other, left in ((n.left, n.right, True), (n.right, n.left, False)):
                parts = _filled(filled)
                if parts is None:
                    continue
                shape, g = parts
                number = isinstance(other, gast.Constant) and \
                    type(other.value) in (int, float)
                kind = inference.of(g)
                if number and isinstance(kind, Array) and kind.dtype.kind == "f":
                    # the number and the literal, in the same order
                    changes.count += 1
                    value = gast.BinOp(left=g, op=n.op, right=other) if left else \
                        gast.BinOp(left=other, op=n.op, right=g)
                    return _np_call("full", [const(shape), value])
                a = inference.of(other)
                if isinstance(a, Array) and not a.weak and _broadcasts_to(shape, a.shape) \
                        and a.dtype.kind == "f" and strong_scalar(g):
                    changes.count += 1
                    return gast.BinOp(left=g, op=n.op, right=other) if left else \
                        gast.BinOp(left=other, op=n.op, right=g)
            return n
    fdef.body = [Fold().visit(s) for s in fdef.body]
    return changes.count > 0


def _broadcasts_to(small, big):
    """Whether an array of shape `small` broadcast against one of shape `big` gives `big`
    (then `np.full(small, g) * y` is `g * y` element by element)."""
    try:
        return np.broadcast_shapes(small, big) == big
    except ValueError:
        return False


def elide_copies(fdef, inference):
    """Copies and views that only feed operators, and gradients finished as they are:

        y = np.array(v)                 (a copy)
        y = np.broadcast_to(v, S)       (v's own shape S: a read-only view)
        y = v * 1                       (a copy, when of v's kind)
            -> y = v, where y is assigned once, at the top level, and every statement
               that reads it is an assignment whose operators or numpy functions make a
               new array of it (so neither a write nor its writability can tell);
        y = rt.as_grad(g, x)            (x an array of g's shape and dtype)
        y = rt.lane_as_grad(g, x, True, False, n)
            -> y = g, where g is made, once, by an operator or a numpy product: a
               writable array, which the helpers return as it is.
    True if anything changed."""
    reads, stores = name_counts(fdef)
    params = {a.id for a in fdef.args.args}
    body = fdef.body
    fresh = set()            # names made by an operator or a product (new arrays)
    changed = False
    for k, s in enumerate(body):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name)):
            continue
        y, v = s.targets[0].id, s.value
        kind = inference.of(v)
        if stores.get(y) == 1 and y not in params and isinstance(kind, Array) and \
                not kind.weak and kind.shape:
            if isinstance(v, (gast.BinOp, gast.UnaryOp, gast.Compare)) or \
                    isinstance(v, gast.Call) and dotted(v.func) in ("np.dot", "np.matmul"):
                fresh.add(y)
        source = _copied(v, kind, inference)
        if source is not None and stores.get(y) == 1 and y not in params and \
                all(makes_new_array(t, y) for t in body[k + 1:]):
            s.value = source
            changed = True
            continue
        g = _finished_as_is(v, kind, inference)
        if g is not None and g.id in fresh:
            s.value = g
            changed = True
    return changed


def _copied(v, kind, inference):
    """The array `v` copies or views with its own shape (see elide_copies), or None."""
    if not isinstance(v, (gast.Call, gast.BinOp)) or kind is None:
        return None
    if isinstance(v, gast.BinOp):
        if not isinstance(v.op, gast.Mult):
            return None
        for one, other in ((v.right, v.left), (v.left, v.right)):
            if isinstance(one, gast.Constant) and type(one.value) is int and \
                    one.value == 1 and inference.of(other) == kind:
                return other
        return None
    spelling = dotted(v.func)
    if v.keywords or not v.args or inference.of(v.args[0]) != kind:
        return None
    if spelling == "np.array" and len(v.args) == 1:
        return v.args[0]
    if spelling == "np.broadcast_to" and len(v.args) == 2:
        return v.args[0]            # (the same kind: the same shape)
    return None


def _finished_as_is(v, kind, inference):
    """g of `rt.as_grad(g, x)` / `rt.lane_as_grad(g, x, True, False, n)` (a name) where
    the helper returns g itself if it is a writable ndarray: g of the result's kind."""
    if not (isinstance(v, gast.Call) and not v.keywords and v.args and
            isinstance(v.args[0], gast.Name) and inference.of(v.args[0]) == kind and
            isinstance(kind, Array) and kind.shape):
        return None
    spelling = dotted(v.func)
    if spelling == "rt.as_grad" and len(v.args) == 2 and inference.of(v.args[1]) == kind:
        return v.args[0]
    if spelling == "rt.lane_as_grad" and len(v.args) == 5 and \
            all(isinstance(a, gast.Constant) for a in v.args[2:4]) and \
            v.args[2].value is True and v.args[3].value is False:
        x = inference.of(v.args[1])
        if isinstance(x, Array) and not x.weak and (kind.shape[0],) + x.shape == kind.shape \
                and x.dtype == kind.dtype:
            return v.args[0]
    return None


def _filled(node):
    """(shape, value) of `np.full(shape, value)` with a literal shape, else None."""
    if isinstance(node, gast.Call) and dotted(node.func) == "np.full" and \
            len(node.args) == 2 and not node.keywords and \
            isinstance(node.args[0], gast.Constant) and isinstance(node.args[0].value, tuple):
        return node.args[0].value, node.args[1]
    return None


class _Replace(gast.NodeTransformer):
    def __init__(self, name, value):
        self.name, self.value = name, value

    def visit_Name(self, n):
        return self.value if n.id == self.name and isinstance(n.ctx, gast.Load) else n


def donate(fdef, kernels, donated):
    """Let a kernel write its result into a donated argument `p` (`fused(p, y, out=p)`)
    where that is invisible: the call is a top-level statement, `p` is one of its inputs
    with the result's shape and dtype, `p` is never assigned before it or read after it,
    and every earlier read of `p` makes a new array (an operator or numpy function on it:
    no alias, view, container or saved value of it can see the write). The kernel reads
    each element before it writes it, so its input and output may be one array."""
    by_name = {k.name: k for k in kernels}
    body = fdef.body
    for j, s in enumerate(body):
        if not (isinstance(s, gast.Assign) and isinstance(s.value, gast.Call) and
                isinstance(s.value.func, gast.Name) and s.value.func.id in by_name):
            continue
        kernel = by_name[s.value.func.id]
        for leaf in kernel.inputs:
            p = leaf.name
            if p not in donated or leaf.abstract != kernel.out or \
                    any(p in stored_names(t) for t in body[:j]) or \
                    any(isinstance(n, gast.Name) and n.id == p
                        for t in body[j + 1:] for n in gast.walk(t)) or \
                    not all(makes_new_array(t, p) for t in body[:j]):
                continue
            s.value.keywords = [gast.keyword(arg="out", value=gast.Name(
                id=p, ctx=gast.Load(), annotation=None, type_comment=None))]
            donated = donated - {p}
            break


def makes_new_array(stmt, p):
    """Every read of `p` in `stmt` is an operand of an operator, or an argument of a numpy
    function that returns a new array, whose result is not `p` itself."""
    reads = [n for n in gast.walk(stmt) if isinstance(n, gast.Name) and n.id == p]
    if not reads:
        return True
    if not isinstance(stmt, gast.Assign) or isinstance(stmt.value, gast.Name):
        return False
    allowed = set()
    for n in gast.walk(stmt.value):
        if isinstance(n, (gast.BinOp, gast.UnaryOp, gast.Compare)):
            operands = [n.left, n.right] if isinstance(n, gast.BinOp) else \
                [n.operand] if isinstance(n, gast.UnaryOp) else [n.left] + n.comparators
            allowed |= {id(o) for o in operands if isinstance(o, gast.Name)}
        elif isinstance(n, gast.Call) and dotted(n.func) in NEW_ARRAY_FUNCTIONS:
            allowed |= {id(a) for a in n.args if isinstance(a, gast.Name)}
    return all(id(n) in allowed for n in reads)


# numpy functions whose result never shares memory with their arguments
NEW_ARRAY_FUNCTIONS = {"np.sum", "np.mean", "np.max", "np.min", "np.prod", "np.exp",
                        "np.log", "np.sin", "np.cos", "np.tanh", "np.sqrt", "np.abs",
                        "np.square", "np.maximum", "np.minimum", "np.where", "np.dot",
                        "np.matmul", "np.full_like", "np.zeros_like", "np.ones_like",
                        "np.add.reduce"}


def _np_call(name, args, keywords=()):
    return gast.Call(func=gast.Attribute(value=gast.Name(id="np", ctx=gast.Load(),
                                                         annotation=None, type_comment=None),
                                         attr=name, ctx=gast.Load()),
                     args=args, keywords=list(keywords))


def _add_reduce(node, axis):
    reduce = gast.Attribute(value=gast.Attribute(
        value=gast.Name(id="np", ctx=gast.Load(), annotation=None, type_comment=None),
        attr="add", ctx=gast.Load()), attr="reduce", ctx=gast.Load())
    return gast.Call(func=reduce, args=[node], keywords=[gast.keyword(arg="axis", value=axis)])


def _transposed_by(node, x, source, destination):
    """np.moveaxis(node, source, destination) of an array of x's rank: `node.T` for a
    matrix's two axes swapped, else np.transpose with the permutation (both are the view
    moveaxis returns)."""
    rank = len(x.shape)
    order = [a for a in range(rank) if a != source % rank]
    order.insert(destination % rank, source % rank)
    if order == list(range(rank)):
        return node
    if rank == 2:
        return _transposed(node)
    return _np_call("transpose", [node, const(tuple(order))])


def _dtype_node(dtype):
    return gast.Attribute(value=gast.Name(id="np", ctx=gast.Load(), annotation=None,
                                          type_comment=None),
                          attr=np.dtype(dtype).name, ctx=gast.Load())


def _transposed(node):
    return gast.Attribute(value=node, attr="T", ctx=gast.Load())


def _unbroadcast(g, gshape, xshape):
    """`rt.unbroadcast(g, x)` for known shapes, as runtime.adjoints.unbroadcast computes it:
    g itself, or one np.sum over the axes broadcasting added (and a reshape)."""
    if gshape == xshape:
        return g
    lead = len(gshape) - len(xshape)
    if lead < 0:
        return None
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(xshape)
                                      if n == 1 and gshape[lead + i] != 1)
    summed = tuple(d for i, d in enumerate(gshape) if i not in axes)
    # np.add.reduce is what np.sum calls, without np.sum's Python-level dispatch
    node = _add_reduce(g, const(axes)) if axes else g
    return node if summed == xshape else _np_call("reshape", [node, const(xshape)])


def forward_copies(stmts, name_counts):
    """`a = b; ...; f(a)` -> `...; f(b)` within one block, when `a` is assigned once and read
    once, there, and `b` is not assigned in between (so chains fuse across the copies that
    known shapes leave)."""
    for s in stmts:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                forward_copies(inner, name_counts)
    reads, stores = name_counts
    drop = set()
    for i, s in enumerate(stmts):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Name)):
            continue
        a, b = s.targets[0].id, s.value.id
        if stores.get(a) != 1 or reads.get(a) != 1 or a == b:
            continue
        for j in range(i + 1, len(stmts)):
            later = stmts[j]
            uses = [n for n in gast.walk(later) if isinstance(n, gast.Name) and n.id == a
                    and isinstance(n.ctx, gast.Load)]
            if uses:
                if isinstance(later, (gast.If, gast.For, gast.While)):
                    break               # read inside a nested block: leave it
                for n in uses:
                    n.id = b
                drop.add(i)
                break
            if b in stored_names(later):
                break
    stmts[:] = [s for i, s in enumerate(stmts) if i not in drop]
