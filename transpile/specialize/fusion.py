"""Fusion: a chain of elementwise statements becomes one kernel, one pass over memory.

    multiply = x * x                      out = fused(x)
    multiply_1 = x * 2.0          ->      (fused computes x * x + x * 2.0 element by
    out = multiply + multiply_1            element: one read of x, one write of out)

A statement joins the expression of the statement that reads its value when: both are
elementwise operations numpy would compute in float32, float64 or bool (shape inference
knows their shapes and dtypes), the value is assigned once and read once in the whole
function, by a later statement of the same block, with the same shape (a smaller operand
stays an input: inlining it would recompute it for every element of the larger result),
and nothing between the two can change what it reads: no assignment of a name it reads,
and only statements that cannot write into an array (assignments of operators, numpy
calls without `out=` that write into no argument, pushes of saved values). The last
statement of a chain (its *root*) keeps its target; the others disappear. The kernels
themselves are written by kernels.py.
"""
import ast

import gast
import numpy as np

from ..ir import anno
from ..ir.templates import dotted
from .abstract import Array
from .constants import name_counts, stored_names

# Elementwise operations fusion knows, by the names kernels.py writes them in.
BINARY = {gast.Add: "add", gast.Sub: "subtract", gast.Mult: "multiply",
          gast.Div: "true_divide", gast.Pow: "power"}
COMPARE = {gast.Gt: "greater", gast.GtE: "greater_equal", gast.Lt: "less",
           gast.LtE: "less_equal", gast.Eq: "equal", gast.NotEq: "not_equal"}
CALLS = {"np.exp": "exp", "np.log": "log", "np.log1p": "log1p", "np.expm1": "expm1",
         "np.sin": "sin", "np.cos": "cos", "np.tan": "tan", "np.tanh": "tanh",
         "np.sinh": "sinh", "np.cosh": "cosh", "np.arctan": "arctan", "np.sqrt": "sqrt",
         "np.abs": "absolute", "np.absolute": "absolute", "np.square": "square",
         "np.negative": "negative", "np.reciprocal": "reciprocal", "np.maximum": "maximum",
         "np.minimum": "minimum", "np.where": "where", "np.add": "add",
         "np.subtract": "subtract", "np.multiply": "multiply", "np.divide": "true_divide",
         "np.true_divide": "true_divide", "np.power": "power"}
DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.bool_))


class Leaf:
    """A kernel input: an array (`name`) or a Python number passed by name or written as a
    literal (`value`)."""

    def __init__(self, abstract, name=None, value=None):
        self.abstract, self.name, self.value = abstract, name, value


class Op:
    """One elementwise operation of a fused expression; `abstract` holds the shape and the
    dtype numpy gives its result (kernels.py converts every operand to it first, as numpy
    does); `node` is the statement it came from (None inside a statement)."""

    def __init__(self, op, operands, abstract, node):
        self.op, self.operands, self.abstract, self.node = op, operands, abstract, node

    def count(self):
        return 1 + sum(o.count() for o in self.operands if isinstance(o, Op))


class Kernel:
    """One fused group: its expression tree, its inputs (in call order), its result."""

    def __init__(self, name, tree, inputs, statements):
        self.name = name
        self.tree = tree
        self.inputs = inputs          # [Leaf] with a name: arrays and named numbers
        self.out = tree.abstract
        self.statements = statements  # the statements it replaces, in order
        self.owner = None             # the FunctionDef it is called from
        # the comment above its call, naming what it computes
        self.comment = gast.Expr(value=gast.Constant(value="", kind=None))
        self.refresh_comment()

    def describe(self):
        return "; ".join(source_text(s) for s in self.statements)

    def refresh_comment(self):
        """Write the comment again (after the statements' names changed)."""
        self.comment.value.value = f"#@@ {self.name}: {self.describe()}"


def source_text(node):
    """One line of Python for a statement or expression."""
    node = gast.gast_to_ast(node)
    ast.fix_missing_locations(node)
    if not hasattr(node, "lineno") and isinstance(node, ast.stmt):
        node.lineno = 1
    return ast.unparse(node).strip()


def _operation(value):
    """(op name, operand nodes) of an elementwise expression fusion knows, else None."""
    if isinstance(value, gast.BinOp) and type(value.op) in BINARY:
        return BINARY[type(value.op)], [value.left, value.right]
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.USub):
        return "negative", [value.operand]
    if isinstance(value, gast.Compare) and len(value.ops) == 1 and type(value.ops[0]) in COMPARE:
        return COMPARE[type(value.ops[0])], [value.left, value.comparators[0]]
    if isinstance(value, gast.Call) and not value.keywords:
        op = CALLS.get(dotted(value.func))
        if op is not None and len(value.args) == {"where": 3, "maximum": 2, "minimum": 2,
                                                  "add": 2, "subtract": 2, "multiply": 2,
                                                  "true_divide": 2, "power": 2}.get(op, 1):
            return op, list(value.args)
    return None


def _kernel_value(abstract):
    return isinstance(abstract, Array) and not abstract.weak and abstract.dtype in DTYPES


def _leaf_ok(abstract):
    if not isinstance(abstract, Array):
        return False
    if abstract.weak:
        return abstract.dtype.kind in "bif"
    return abstract.dtype in DTYPES


class Fusion:
    def __init__(self, fdef, inference, min_elements, namer):
        self.inference = inference
        self.min_elements = min_elements
        self.namer = namer
        self.reads, self.stores = name_counts(fdef)
        self.params = {a.id for a in fdef.args.args}
        self.kernels = []

    def block(self, stmts):
        """Rewrite `stmts` (and nested blocks) in place."""
        for s in stmts:
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                    self.block(inner)
        trees = {}          # index of a fusible statement -> its Op tree (so far)
        producer = {}       # name -> index of the fusible statement that assigns it
        consumed = set()    # indices inlined into a later statement
        for j, s in enumerate(stmts):
            tree = self._tree(s, stmts, j, trees, producer, consumed)
            if tree is None:
                continue
            trees[j] = tree
            producer[s.targets[0].id] = j
        roots = {j for j in trees if j not in consumed and trees[j].count() > 1}
        new = []
        for j, s in enumerate(stmts):
            if j in roots:
                new.extend(self._replace(s, trees[j]))
            elif j not in consumed:
                new.append(s)
        stmts[:] = new

    def _tree(self, s, stmts, j, trees, producer, consumed):
        """The Op tree of statement j, inlining the trees of values only it reads."""
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name)):
            return None
        abstract = self.inference.of(s.value)
        if _operation(s.value) is None or not _kernel_value(abstract) or \
                not abstract.shape or abstract.size < self.min_elements:   # arrays only
            return None
        taken = set()
        tree = self._expr_tree(s.value, abstract.shape, stmts, j, trees, producer,
                               consumed | taken, taken)
        if not isinstance(tree, Op):
            return None
        consumed |= taken
        tree.node = s
        return tree

    def _expr_tree(self, node, shape, stmts, j, trees, producer, consumed, taken):
        found = _operation(node)
        a = self.inference.of(node)
        if found is not None and _kernel_value(a) and a.shape == shape:
            op, nodes = found
            operands = []
            for n in nodes:
                o = self._expr_tree(n, shape, stmts, j, trees, producer, consumed | taken,
                                    taken)
                if o is None:
                    return None
                operands.append(o)
            return Op(op, operands, a, None)
        if isinstance(node, gast.Constant):
            a = a or _constant_abstract(node.value)
            return Leaf(a, value=node.value) if _leaf_ok(a) else None
        if not isinstance(node, gast.Name) or not _leaf_ok(a):
            return None
        i = producer.get(node.id)
        if i is not None and i not in consumed and trees[i].abstract.shape == shape and \
                self._inlinable(node.id, trees[i], i, j, stmts):
            taken.add(i)
            return trees[i]
        return Leaf(a, name=node.id)

    def _inlinable(self, name, tree, i, j, stmts):
        """`name`, assigned by statement i as `tree`, can move to statement j: nothing
        between them changes what the tree reads (no store to its names, and only
        statements that cannot write into an array: plain assignments of operators and
        numpy calls without `out=`)."""
        if self.reads.get(name) != 1 or self.stores.get(name) != 1 or name in self.params:
            return False
        between = stmts[i + 1:j]
        if not all(harmless(s) for s in between):
            return False
        return not any(_tree_names(tree) & stored_names(s) for s in between)

    def _replace(self, old, tree):
        """The kernel call (and a comment naming what it computes) that replaces `old`."""
        name = self.namer.fresh("fused")
        inputs, seen = [], {}
        _collect_inputs(tree, inputs, seen)
        kernel = Kernel(name, tree, inputs, list(_statements(tree)))
        self.kernels.append(kernel)
        call = gast.Call(func=_load(name), args=[_load(leaf.name) for leaf in inputs],
                         keywords=[])
        new = gast.Assign(targets=old.targets, value=call, type_comment=None)
        anno.copy(old, new)
        anno.copy(old, kernel.comment)       # the user's line is named above the comment
        return [kernel.comment, new]


def _load(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


# numpy functions that write into an argument without `out=` (and every `ufunc.at`)
_WRITES_INTO = {"np.copyto", "np.put", "np.place", "np.putmask", "np.fill_diagonal",
                "np.put_along_axis", "np.random.shuffle"}


def harmless(s):
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant):
        return True                               # a comment marker
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
            dotted(s.value.func) == "rt.push":
        return True                               # appends to a list of saved values
    if not isinstance(s, gast.Assign) or not all(
            isinstance(t, gast.Name) or isinstance(t, gast.Tuple) and
            all(isinstance(e, gast.Name) for e in t.elts) for t in s.targets):
        return False
    for n in gast.walk(s.value):
        if isinstance(n, gast.Call):
            spelling = dotted(n.func) or ""
            if not spelling.startswith("np.") or spelling in _WRITES_INTO or \
                    spelling.endswith(".at") or any(k.arg == "out" for k in n.keywords):
                return False
    return True


def _tree_names(tree):
    names = set()
    for o in tree.operands:
        if isinstance(o, Op):
            names |= _tree_names(o)
        elif o.name is not None:
            names.add(o.name)
    return names


def _constant_abstract(value):
    t = type(value)
    if t in (bool, int, float):
        return Array((), {bool: np.bool_, int: np.int64, float: np.float64}[t], weak=True)
    return None


def _collect_inputs(tree, inputs, seen):
    for o in tree.operands:
        if isinstance(o, Op):
            _collect_inputs(o, inputs, seen)
        elif o.name is not None and o.name not in seen:
            seen[o.name] = o
            inputs.append(o)


def _statements(tree):
    for o in tree.operands:
        if isinstance(o, Op):
            yield from _statements(o)
    if tree.node is not None:
        yield tree.node


def fuse(fdef, inference, min_elements, namer):
    """Fuse elementwise chains of `fdef` in place; the list of Kernels made."""
    fusion = Fusion(fdef, inference, min_elements, namer)
    fusion.block(fdef.body)
    return fusion.kernels
