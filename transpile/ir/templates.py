"""Binding a rule template to a call site: the one place every pass does it the same way.

A rule in `rules/` is a template written as Python whose parameters are placeholders
(`def tanh(dout, out, x): dx = dout * (1.0 - out * out)`). A pass that applies a rule at
`h = np.tanh(z)` binds the template's parameters to the call's arguments (`bind_call`),
copies the body with the placeholders replaced by the call site's expressions and fresh
names (`substitute`), and annotates the primitives the copy calls (`annotate_prims`), so a
later pass can apply their rules in turn. Reverse, forward and batching all go through here.
"""
import copy
import inspect

import gast

from .. import rules
from ..rules.core import BINOPS, CMPOPS
from . import anno
from .anno import Anno
from .nodes import const, name


def as_index_value(idx):
    """An index used as a value (slices become slice(...) calls)."""
    if isinstance(idx, gast.Slice):
        parts = [p if p is not None else const(None) for p in (idx.lower, idx.upper, idx.step)]
        return gast.Call(func=name("slice"), args=parts, keywords=[])
    if isinstance(idx, gast.Tuple):
        return gast.Tuple(elts=[as_index_value(e) for e in idx.elts], ctx=gast.Load())
    return idx


def bind_call(template, spelling, value, skip=2, rule="derivative rule"):
    """Map template parameter -> AST of the actual argument (or default) at a call site;
    a string saying why not where the call does not fit the template (`rule`: what the
    template is, for that message)."""
    if isinstance(value, gast.BinOp):
        args, keywords = [value.left, value.right], []
    elif isinstance(value, gast.UnaryOp):
        args, keywords = [value.operand], []
    elif isinstance(value, gast.Subscript):
        args, keywords = [value.value, as_index_value(value.slice)], []
    elif isinstance(value, gast.Compare):
        args, keywords = [value.left] + value.comparators, []
    else:
        args, keywords = value.args, [(k.arg, k.value) for k in value.keywords]
    params = template.params[skip:]   # after the placeholders (dout, out) or (out,)
    sig = template.signature
    bound = {}
    positional = [p for p in params if sig.parameters[p].kind is not
                  inspect.Parameter.KEYWORD_ONLY]    # numpy's keyword-only ones (meshgrid's)
    if len(args) > len(positional):
        return f"takes at most {len(positional)} positional arguments here"
    for p, a in zip(positional, args):
        bound[p] = a
    for k, v in keywords:
        if k not in params:
            return f"argument '{k}' is not supported by its {rule}"
        bound[k] = v
    for p in params:
        if p not in bound:
            default = sig.parameters[p].default
            if default is sig.empty:
                return f"missing argument '{p}'"
            bound[p] = const(default)
    return bound


def substitute(node, mapping, local, extra):
    """A copy of template code `node`: reads of `extra`/`mapping` names become (copies of)
    the expressions they map to, names in `local` are renamed; primitives annotated."""
    node = copy.deepcopy(node)

    class Sub(gast.NodeTransformer):
        def visit_Name(self, n):
            if n.id in extra and not isinstance(n.ctx, gast.Store):
                return copy.deepcopy(extra[n.id])
            if n.id in mapping and not isinstance(n.ctx, gast.Store):
                return copy.deepcopy(mapping[n.id])
            if n.id in local and local[n.id]:
                n.id = local[n.id]
            return n

    new = Sub().visit(node)
    annotate_prims(new)
    return new


def annotate_prims(node):
    """Attach primitive annotations to calls and operators in template-made code."""
    for n in gast.walk(node):
        if anno.get(n, Anno.PRIM) is None:
            found = prim_annotation(n)
            if found is not None:
                anno.set(n, Anno.PRIM, found)


def prim_annotation(node):
    """(Primitive, spelling) for an operator or a call spelled canonically, else None."""
    if isinstance(node, gast.BinOp):
        s = binop_spelling(node.op)
    elif isinstance(node, gast.UnaryOp):
        s = {gast.USub: "u-", gast.UAdd: "u+", gast.Not: "not", gast.Invert: "~"}[type(node.op)]
    elif isinstance(node, gast.Compare) and len(node.ops) == 1:
        s = cmp_spelling(node.ops[0])
    elif isinstance(node, gast.Subscript) and not isinstance(node.ctx, gast.Store):
        s = "[]"
    elif isinstance(node, (gast.Tuple, gast.List)) and not isinstance(node.ctx, gast.Store):
        s = "tuple" if isinstance(node, gast.Tuple) else "list"
    elif isinstance(node, gast.Dict):
        s = "dict"
    elif isinstance(node, gast.Call):
        s = dotted(node.func)
        if s is None:
            return None
    else:
        return None
    prim = rules.lookup(s)
    return (prim, s) if prim is not None else None


def dotted(node):
    """'np.linalg.inv' for the expression np.linalg.inv, else None."""
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, gast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def binop_spelling(op):
    """The table's spelling of a binary operator node's op ("+" for gast.Add)."""
    for s, (cls, _) in BINOPS.items():
        if isinstance(op, cls):
            return s
    raise ValueError(op)


def cmp_spelling(op):
    """The table's spelling of a comparison operator ("<" for gast.Lt)."""
    for s, cls in CMPOPS.items():
        if isinstance(op, cls):
            return s
    raise ValueError(op)


def literal_index(node):
    """The int, or slice of literal ints (None allowed), that `node` writes (`0`, `-1`,
    `1:`, `slice(None, 2)`), else None."""
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and \
            isinstance(node.operand, gast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
    if isinstance(node, gast.Slice):
        parts = [node.lower, node.upper, node.step]
    elif isinstance(node, gast.Call) and dotted(node.func) == "slice" and \
            not node.keywords and 1 <= len(node.args) <= 3:
        parts = list(node.args)
    else:
        return None
    values = [None if _writes_none(p) else literal_index(p) for p in parts]
    if all(_writes_none(p) or type(v) is int for p, v in zip(parts, values)):
        return slice(*values)
    return None


def _writes_none(node):
    return node is None or isinstance(node, gast.Constant) and node.value is None
