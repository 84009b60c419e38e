"""Building the gast nodes the passes emit: names, constants, assignments, calls.

One place for these, so every pass makes nodes the same way (and annotates calls of
primitives the same way).
"""
import gast

from . import anno
from .. import rules
from ..rules.core import BINOPS, CMPOPS, UNARYOPS
from .anno import Anno


def name(id_, store=False):
    return gast.Name(id=id_, ctx=gast.Store() if store else gast.Load(), annotation=None,
                     type_comment=None)


def const(value):
    return gast.Constant(value=value, kind=None)


def assign(target, value, origin=None):
    """`target = value`; a list/tuple of names unpacks. `origin`: the user node it comes from."""
    if isinstance(target, (list, tuple)):
        t = gast.Tuple(elts=[name(n, True) for n in target], ctx=gast.Store())
    else:
        t = name(target, True)
    node = gast.Assign(targets=[t], value=value, type_comment=None)
    if origin is not None:
        gast.copy_location(node, origin)
        anno.set(node, Anno.ORIGIN, origin)
    return node


def call(spelling, args):
    """A call spelled like 'np.linalg.inv' or 'rt.push', annotated with its primitive."""
    node = gast.Call(func=spelled(spelling), args=list(args), keywords=[])
    found = rules.lookup(spelling)
    if found is not None:
        anno.set(node, Anno.PRIM, (found, spelling))
    return node


def funcdef(name_, params, body, origin):
    """`def name_(params...): body`, located at the user node `origin`."""
    node = gast.FunctionDef(
        name=name_,
        args=gast.arguments(args=[name(p) for p in params], posonlyargs=[], vararg=None,
                            kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=body, decorator_list=[], returns=None, type_comment=None, type_params=[])
    for a in node.args.args:
        a.ctx = gast.Param()
    return gast.copy_location(node, origin)


def with_source(fdef, fir):
    """Mark a generated definition as made from IR function `fir` (emit then writes
    `# line: source` comments from the user's file)."""
    anno.set(fdef, Anno.SOURCE, fir.source)
    return fdef


def spelled(spelling):
    """The callee expression for a spelling like 'np.linalg.inv'."""
    parts = spelling.split(".")
    node = name(parts[0])
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
        node = gast.Call(func=spelled(spelling), args=list(args),
                         keywords=[gast.keyword(arg=k, value=v) for k, v in keywords])
    anno.set(node, Anno.PRIM, (prim, spelling))
    return node
