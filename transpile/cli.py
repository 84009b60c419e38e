"""`python -m transpile dump module.py [-o out.py] [--apply "grad(loss)"] [--lower "f(x)"]`.

Writes one importable module holding the generated code of every module-level transformed
function of `module.py` (and of each `--apply` expression, evaluated in the module's
namespace). The dumped module imports numpy and `runtime` only, never `transpile`, and
computes the same results.
"""
import argparse
import ast
import copy
import importlib.util
import os
import re
import sys
import types

import numpy as np
from runtime.errors import TryBlock

from . import api
from .errors import TransformError
from .ir.program import is_literal

MAX_ARRAY_ELEMENTS = 1_000_000

DESCRIPTION = """\
transpile: composable function transformations by source rewriting.

commands:
  dump   write the generated code of a module's transformed functions to one file

examples:
  python -m transpile dump model.py -o model_generated.py
  python -m transpile dump model.py --apply "grad(loss)" --apply "value_and_grad(loss, argnums=(0, 1))"
  python -m transpile dump model.py --lower "predict(np.ones((128, 784)))" [--backend cuda]

The dumped module imports numpy (or cupy, for --backend cuda) and `runtime` (shipped with
transpile), never `transpile`. --lower writes jit's specialization for the given arguments'
shapes and dtypes, fused kernels included (their CUDA source too).
Functions decorated with @tp.transform or assigned from tp.grad(...) etc. at module level
appear under their module-level names; --apply expressions under the generated names
(e.g. grad_loss). Global arrays the code reads are written into the module as literals.
"""


def load_module(path):
    path = os.path.abspath(path)
    name = os.path.splitext(os.path.basename(path))[0]
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _literal_source(value, name):
    """Python source that rebuilds `value`, for globals the generated code refers to."""
    if is_literal(value):
        return repr(value)
    if isinstance(value, float):
        return f"float({repr(str(value))})"
    if isinstance(value, type) and getattr(__builtins__, "get", lambda k: None)(value.__name__) \
            is value or isinstance(value, type) and value.__module__ == "builtins":
        return value.__name__
    if isinstance(value, type) and value.__module__.split(".")[0] == "numpy":
        return f"np.{value.__name__}" if value.__module__ == "numpy" else \
            f"np.{value.__module__.split('.', 1)[1]}.{value.__name__}"   # np.linalg.LinAlgError
    if isinstance(value, TryBlock):
        return f"rt.TryBlock.of_source({value.source!r})"
    if isinstance(value, np.ndarray):
        if value.size > MAX_ARRAY_ELEMENTS:
            raise TransformError(f"cannot dump global '{name}': an array of {value.size} "
                                 "elements is too large to write into the module.\n  hint: "
                                 "pass it as an argument instead of reading it as a global.")
        return f"np.array({value.tolist()!r}, dtype=np.{value.dtype.name})"
    if isinstance(value, np.generic):
        return f"np.{value.dtype.name}({value.item()!r})"
    if isinstance(value, (tuple, list)):
        items = ", ".join(_literal_source(v, name) for v in value)
        if isinstance(value, tuple):
            return f"({items}{',' if len(value) == 1 else ''})"
        return f"[{items}]"
    if isinstance(value, dict):
        items = ", ".join(f"{k!r}: {_literal_source(v, name)}" for k, v in value.items())
        return "{" + items + "}"
    raise TransformError(f"cannot dump global '{name}' of type {type(value).__name__}: only "
                         "numbers, strings, arrays and tuples/lists/dicts of them can be "
                         "written into a module.\n  hint: pass it as an argument.")


class Dump:
    """Merges the generated modules of several transformed functions into one text."""

    def __init__(self):
        self.functions = {}      # name -> source text
        self.constants = {}      # name -> (object, source)
        self.aliases = []        # lines defining the public names
        self.backend = "numpy"   # "cupy" once a specialization for cupy arrays is added

    def add(self, public_name, transformed):
        gen = transformed.generated()
        entry = self._merge(gen.text, gen.namespace, gen.entry_name)
        return self._alias(public_name, entry, transformed)

    def add_specialization(self, public_name, jitted, spec):
        """A jit specialization: its kernels and functions (for the example arguments'
        kinds), under the jitted function's name."""
        if spec.backend == "cupy":
            self.backend = "cupy"
        entry = self._merge(spec.text, spec.namespace, spec.entry.__name__)
        return self._alias(public_name, entry, jitted.inner)

    def _merge(self, text, namespace, entry_name):
        """Add a generated module's definitions (renamed where a name is taken by a
        different definition); the entry function's name in the dump."""
        tree = ast.parse(text)
        renames = {}
        for name, value in namespace.items():
            new = name
            while new in self.constants and self.constants[new][0] is not value:
                new += "_"
            renames[name] = new
            if new not in self.constants:
                self.constants[new] = (value, _literal_source(value, name))
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) or
                isinstance(n, ast.Assign) and len(n.targets) == 1 and
                isinstance(n.targets[0], ast.Name)]
        names = [_defined_name(n) for n in defs]
        for node, name in zip(defs, names):
            new = name
            while new in self.functions:
                if self.functions[new] == _rename(node, {**renames, name: new}, text):
                    break
                new += "_"
            renames[name] = new
        for node, name in zip(defs, names):
            if renames[name] not in self.functions:
                self.functions[renames[name]] = _rename(node, renames, text)
        return renames[entry_name]

    def _alias(self, public_name, entry, transformed):
        if public_name is None or public_name == entry:
            return entry
        root = transformed.root
        extra = root.prefix + root.extra_values()
        params = list(transformed.signature.parameters)
        if not extra and not transformed.defaults():
            self.aliases.append(f"{public_name} = {entry}")
        else:
            sig = ", ".join(p if p not in transformed.defaults() else
                            f"{p}={_literal_source(transformed.defaults()[p], p)}"
                            for p in params)
            prefix = [_literal_source(v, public_name) for v in root.prefix]
            lifted = [_literal_source(v, public_name) for v in root.extra_values()]
            args = ", ".join(prefix + params + lifted)
            self.aliases.append(f"def {public_name}({sig}):\n    return {entry}({args})\n")
        return entry

    def text(self, source_path):
        lines = [f'"""Generated by `python -m transpile dump {os.path.basename(source_path)}`.',
                 "",
                 "Imports numpy and runtime only; edit the source module, not this file.",
                 '"""', "import math", "", "import numpy as np", "", "import runtime as rt"]
        if self.backend == "cupy":
            lines[lines.index("import numpy as np")] = \
                "import cupy as np    # specialized for cupy arrays"
            lines[2] = "Imports cupy and runtime only; edit the source module, not this file."
        body = "\n\n".join(self.functions.values())
        if "scipy." in body:
            lines.insert(lines.index("import numpy as np") + 1, "import scipy.special")
        lines.append("")
        for name, (_, src) in self.constants.items():
            lines.append(f"{name} = {src}")
        lines.append("\n")
        lines.append(body)
        lines.append("")
        lines.extend(self.aliases)
        return "\n".join(lines) + "\n"


def _defined_name(node):
    return node.name if isinstance(node, ast.FunctionDef) else node.targets[0].id


def _rename(node, renames, text):
    """The source of a module-level definition with names renamed. A function is
    unparsed; an assignment (a jit kernel) keeps its text, CUDA source included, with the
    names replaced as words."""
    if isinstance(node, ast.Assign):
        segment = ast.get_source_segment(text, node)
        for old, new in renames.items():
            if old != new:
                segment = re.sub(rf"\b{re.escape(old)}\b", new, segment)
        return segment

    class R(ast.NodeTransformer):
        def visit_Name(self, n):
            if n.id in renames:
                n.id = renames[n.id]
            return n

        def visit_FunctionDef(self, n):
            self.generic_visit(n)
            n.name = renames.get(n.name, n.name)
            return n
    return ast.unparse(R().visit(copy.deepcopy(node)))


# transformations whose generated entry takes the user's arguments as they are
_DUMPABLE = ("transform", "grad", "vmap")


def dump(path, applies=(), output=None, lowers=(), backend=None):
    module = load_module(path)
    d = Dump()
    for name, value in list(vars(module).items()):
        if isinstance(value, api.Transformed) and value.kind in _DUMPABLE:
            d.add(name, value)
    env = dict(vars(module))
    env.update(grad=api.grad, value_and_grad=api.value_and_grad, transform=api.transform,
               vmap=api.vmap, jit=api.jit, np=np)
    for expr in lowers:
        _lower(d, expr, env, backend)
    for expr in applies:
        try:
            value = eval(expr, env)  # noqa: S307 - the user's own expression
        except Exception as e:
            raise TransformError(f"--apply {expr!r}: {type(e).__name__}: {e}") from e
        if not isinstance(value, api.Transformed) or value.kind not in _DUMPABLE:
            raise TransformError(f"--apply {expr!r} must give a transformed function "
                                 "(grad, value_and_grad, vmap or transform of a function).")
        d.add(None, value)
    text = d.text(path)
    if output:
        with open(output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return text


def _lower(d, expr, env, backend):
    """`--lower "f(np.ones((5000, 5000), np.float32))"`: jit f (if it is not jitted yet)
    for these arguments' kinds and add that specialization under f's name."""
    try:
        call = ast.parse(expr, mode="eval").body
    except SyntaxError as e:
        raise TransformError(f"--lower {expr!r}: not a Python expression ({e.msg})") from e
    if not isinstance(call, ast.Call):
        raise TransformError(f"--lower {expr!r} must be a call, e.g. "
                             "\"f(np.ones((100, 100), np.float32))\"")
    try:
        fn = eval(compile(ast.Expression(call.func), "<--lower>", "eval"), env)  # noqa: S307
        args = [eval(compile(ast.Expression(a), "<--lower>", "eval"), env) for a in call.args]
        kwargs = {k.arg: eval(compile(ast.Expression(k.value), "<--lower>", "eval"), env)
                  for k in call.keywords}
    except Exception as e:
        raise TransformError(f"--lower {expr!r}: {type(e).__name__}: {e}") from e
    jitted = fn if isinstance(fn, api.Jitted) else api.jit(fn)
    if backend is not None:
        jitted = jitted.with_backend(backend)
    name = call.func.id if isinstance(call.func, ast.Name) else None
    d.add_specialization(name, jitted, jitted.lower(*args, **kwargs))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m transpile", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("dump", help="write the generated code of a module's transformed "
                       "functions to one importable module")
    p.add_argument("path", help="the Python module to transform")
    p.add_argument("-o", "--output", help="file to write (default: standard output)")
    p.add_argument("--apply", action="append", default=[], metavar="EXPR",
                   help='a transformation to apply, e.g. "grad(loss)" or '
                        '"value_and_grad(loss, argnums=(0, 1))"; may be repeated')
    p.add_argument("--lower", action="append", default=[], metavar="CALL",
                   help='a call whose arguments\' kinds to specialize for (jit), e.g. '
                        '"slow_f(np.ones((5000, 5000), np.float32))"; may be repeated')
    p.add_argument("--backend", choices=("cpu", "cuda"), default=None,
                   help="what --lower specializes for: numpy arrays (cpu) or cupy arrays "
                        "(cuda; the module then imports cupy as np)")
    args = parser.parse_args(argv)
    if args.command != "dump":
        parser.print_help()
        return 2
    try:
        dump(args.path, args.apply, args.output, args.lower, args.backend)
    except TransformError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


__all__ = ["dump", "main", "types"]
