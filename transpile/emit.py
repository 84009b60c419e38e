"""Emit: IR/generated functions -> Python source text -> compiled functions.

The text is exactly what runs: it is compiled under a `linecache` entry, so tracebacks and
debuggers show the generated code. Cosmetic rewrites happen only here (`if x: pass else: y`
is written `if not x: y`).
"""
import ast
import copy
import itertools
import linecache

import astor
import gast
import numpy as np

import runtime

_counter = itertools.count()

HEADER = '"""{doc}"""\nimport math\n\nimport numpy as np\n\nimport runtime as rt\n'


class _Cosmetic(ast.NodeTransformer):
    def visit_Call(self, node):
        """Drop trailing arguments of runtime helpers that equal the helper's defaults."""
        self.generic_visit(node)
        f = node.func
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


def function_source(fdef):
    node = gast.gast_to_ast(copy.deepcopy(fdef))
    node = _Cosmetic().visit(node)
    ast.fix_missing_locations(node)
    return astor.to_source(node, indent_with="    ")


def module_source(functions, doc):
    parts = [HEADER.format(doc=doc)]
    for fdef in functions:
        parts.append("\n" + function_source(fdef))
    return "\n".join(parts)


def compile_module(text, namespace, label):
    """Execute generated `text`; returns its globals. `namespace` adds referenced objects."""
    filename = f"<transpile:{label}:{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    code = compile(text, filename, "exec")
    env = {"__name__": "transpile_generated", "np": np, "rt": runtime}
    env.update(namespace)
    exec(code, env)  # noqa: S102 - running the code we generated is the point
    return env, filename
