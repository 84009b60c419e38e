"""Emit: IR/generated functions -> Python source text -> compiled functions.

The text is exactly what runs: it is compiled under a `linecache` entry, so tracebacks and
debuggers show the generated code. Cosmetic rewrites happen only here (`if x: pass else: y`
is written `if not x: y`).
"""
import ast
import copy
import hashlib
import linecache
import math
import re
import types

import astor
import gast
import numpy as np

import runtime
from .errors import TransformError
from .ir import anno
from .ir.anno import Anno

HEADER = '"""{doc}"""\nimport math\n\nimport numpy as np\n\nimport runtime as rt\n'


_REDUCTIONS = {"sum", "mean", "prod", "max", "min", "amax", "amin", "var", "std"}


class _Cosmetic(ast.NodeTransformer):
    def visit_Constant(self, node):
        """A negative number as `-(number)`: astor writes the constant -0.8 as `-0.8`
        without the parentheses that `(-0.8) ** 2` needs (it would read -(0.8 ** 2))."""
        v = node.value
        if type(v) in (int, float) and math.isfinite(v) and math.copysign(1, v) < 0:
            return ast.copy_location(ast.UnaryOp(op=ast.USub(),
                                                 operand=ast.Constant(value=-v)), node)
        if isinstance(v, complex) and type(v) is not complex:
            # np.complex128 (a complex subclass, which astor writes from its parts' reprs:
            # `(np.float64(0.5)+np.float64(0.25)j)`) as np.complex128((0.5+0.25j))
            return ast.copy_location(ast.Call(
                func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()),
                                   attr=type(v).__name__, ctx=ast.Load()),
                args=[ast.Constant(value=complex(v))], keywords=[]), node)
        return node

    def visit_Call(self, node):
        """Drop trailing arguments of runtime helpers that equal the helper's defaults, and
        `axis=None`/`keepdims=False` of numpy reductions (numpy's own defaults)."""
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id == "np" and f.attr in _REDUCTIONS:
            node.keywords = [k for k in node.keywords if not (
                isinstance(k.value, ast.Constant) and (
                    (k.arg == "keepdims" and k.value.value is False) or
                    (k.arg in ("dtype", "axis") and k.value.value is None) or
                    (k.arg == "ddof" and k.value.value == 0 and
                     type(k.value.value) is int)))]
            if len(node.args) == 2 and isinstance(node.args[1], ast.Constant) and \
                    node.args[1].value is None:
                node.args = node.args[:1]
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id == "rt" and not node.keywords:
            fn = getattr(runtime, f.attr, None)
            if fn is not None and hasattr(fn, "__code__") and \
                    len(node.args) <= fn.__code__.co_argcount and not fn.__code__.co_flags & 4:
                defaults = fn.__defaults__ or ()
                nparams = fn.__code__.co_argcount
                while node.args and len(node.args) > nparams - len(defaults):
                    i = len(node.args) - 1
                    default = defaults[i - (nparams - len(defaults))]
                    arg = node.args[-1]
                    if isinstance(arg, ast.Constant) and arg.value is default or \
                            (isinstance(arg, ast.Constant) and arg.value == default and
                             type(arg.value) is type(default)):
                        node.args.pop()
                    else:
                        break
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        if not node.body or all(isinstance(s, ast.Pass) for s in node.body):
            if node.orelse:
                test = node.test
                if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                    new_test = test.operand
                else:
                    new_test = ast.UnaryOp(op=ast.Not(), operand=test)
                return ast.copy_location(ast.If(test=new_test, body=node.orelse, orelse=[]),
                                         node)
        return node


_COMMENT = "#@@ "


def _line_comments(stmts, src, last=None):
    """Insert markers (emitted as comments) where the user line a statement comes from
    changes: `# 12: x = np.tanh(x @ W + b)` before the forward statements of line 12 and
    `# adjoint of 12: ...` before its backward statements."""
    out = []
    for s in stmts:
        origin = anno.get(s, Anno.ORIGIN)
        if origin is not None and getattr(origin, "lineno", None):
            line = src.line_of(origin)
            text = src.lines[origin.lineno - 1].strip() if origin.lineno <= len(src.lines) \
                else ""
            key = (line, anno.get(s, Anno.ADJOINT_OF, False))
            if key != last and text:
                label = f"adjoint of {line}" if key[1] else str(line)
                out.append(gast.Expr(value=gast.Constant(value=f"{_COMMENT}{label}: {text}",
                                                         kind=None)))
                last = key
        if isinstance(s, (gast.If, gast.For, gast.While, gast.With)):
            s = copy.copy(s)
            s.body = _line_comments(s.body, src, last)
            if isinstance(s, gast.If):
                s.orelse = _line_comments(s.orelse, src, last)
        out.append(s)
    return out


def function_source(fdef, src=None):
    if src is not None:
        fdef = copy.copy(fdef)
        fdef.body = _line_comments(fdef.body, src)
    node = gast.gast_to_ast(fdef)        # makes new nodes: fdef is not changed
    node = _Cosmetic().visit(node)
    ast.fix_missing_locations(node)
    text = astor.to_source(node, indent_with="    ")
    return _MARKER_LINE.sub(lambda m: m.group(1) + "# " + _unescape(m.group(3)), text)


_MARKER_LINE = re.compile(r"^(\s*)(\"\"\"|'|\")#@@ (.*?)\2\s*$", re.M)


def _unescape(s):
    return s.encode("utf-8").decode("unicode_escape") if "\\" in s else s


# generated file name -> {generated function name: the parse.Source it was made from}, so
# an error found in generated code transformed again can name the user's line (origin_of)
ORIGINS = {}
_MADE_FROM = {}


def module_source(functions, doc):
    parts = [HEADER.format(doc=doc)]
    for fdef in functions:
        parts.append("\n" + function_source(fdef, anno.get(fdef, Anno.SOURCE)))
    text = "\n".join(parts)
    _MADE_FROM[text] = {f.name: anno.get(f, Anno.SOURCE) for f in functions
                        if anno.get(f, Anno.SOURCE) is not None}
    return text


def origin_of(filename, line, depth=0):
    """(parse.Source, file line) of the user's code that line `line` of the generated file
    `filename` comes from (following `# 12: ...` markers through generated code made from
    generated code), or None."""
    made = ORIGINS.get(filename)
    lines = linecache.getlines(filename)
    if not made or not lines or depth > 8:
        return None
    mark = None
    for i in range(min(line, len(lines)) - 1, -1, -1):
        text = lines[i].strip()
        found = _MARK.match(text)
        if mark is None and found:
            mark = int(found.group(2))
        if text.startswith("def "):
            src = made.get(text[4:].split("(")[0].strip())
            if mark is None or src is None:
                return None
            # a loop or branch header carries no marker of its own: the same text a few lines
            # after the marked line is the one
            own = lines[line - 1].strip() if line <= len(lines) else ""
            parent = linecache.getlines(src.filename)
            for k in range(mark, min(mark + 12, len(parent) + 1)):
                if own and own.endswith(":") and parent[k - 1].strip() == own:
                    mark = k
                    break
            if str(src.filename).startswith("<transpile"):
                return origin_of(src.filename, mark, depth + 1)
            return src, mark
    return None


_MARK = re.compile(r"^# (adjoint of )?(\d+): ")


def compile_module(text, namespace, label):
    """Execute generated `text`; returns its globals. `namespace` adds referenced objects."""
    digest = hashlib.sha1(text.encode()).hexdigest()[:8]
    filename = f"<transpile:{label}:{digest}>"   # same text, same name: stable output
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    if text in _MADE_FROM:
        ORIGINS[filename] = _MADE_FROM.pop(text)
    code = compile(text, filename, "exec")
    env = {"__name__": "transpile_generated", "np": np, "rt": runtime}
    env.update(namespace)
    exec(code, env)  # noqa: S102 - running the code we generated is the point
    return env, filename


def rebind_module(env, **names):
    """A copy of generated module globals `env` with `names` rebound (np to cupy, say), and
    every function defined in it re-created over the copy, so that the functions call each
    other, and read the rebound names, there."""
    new = dict(env)
    new.update(names)
    for key, value in env.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is env:
            fn = types.FunctionType(value.__code__, new, value.__name__, value.__defaults__,
                                    value.__closure__)
            fn.__kwdefaults__ = value.__kwdefaults__
            fn.__dict__.update(value.__dict__)
            new[key] = fn
    return new


def located(exc):
    """A TransformError raised while generated code ran (vmap finding, say, that a shape
    differs between examples), with the user's line it comes from in front; `exc` itself
    if that cannot be found or the message already names a line."""
    if str(exc).startswith('File "'):
        return exc
    tb, frames = exc.__traceback__, []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    for filename, line in reversed(frames):
        if not filename.startswith("<transpile"):
            continue
        found = origin_of(filename, line)
        if found is None:
            continue
        src, user_line = found
        text = linecache.getline(src.filename, user_line).strip()
        head = f'File "{src.filename}", line {user_line}, in {src.name}\n' + \
            (f"    {text}\n" if text else "")
        return TransformError(head + str(exc))
    return exc
