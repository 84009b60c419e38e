"""Parse: a Python function object -> its gast `FunctionDef` plus where it came from.

Handles decorated functions, methods, nested functions and lambdas (a lambda becomes a
`FunctionDef` named after the variable it is assigned to, or `lambda_<line>`). Line numbers
on the returned nodes are relative to the parsed snippet; `Source.line_of` maps them back to
the user's file, so errors point at the user's line.
"""
import ast
import inspect
import textwrap

import gast

from ..errors import TransformError


class Source:
    """Where a parsed function lives: file, first line, indentation and its text."""

    def __init__(self, filename, first_line, col_offset, text, name):
        self.filename = filename
        self.first_line = first_line      # file line of snippet line 1
        self.col_offset = col_offset      # indentation removed by dedent
        self.lines = text.splitlines()
        self.name = name

    def line_of(self, node):
        lineno = getattr(node, "lineno", None)
        return lineno + self.first_line - 1 if lineno else None


def signature_of(fn):
    """inspect.signature of `fn`, a plain function's own (a decorator's wrapper made with
    functools.wraps is not its wrapped function: inspect follows `__wrapped__` otherwise)."""
    return inspect.signature(fn, follow_wrapped=not inspect.isfunction(fn))


def _get_source_lines(fn):
    try:
        # the code object's lines: inspect would follow a wrapper's __wrapped__ (a
        # functools.wraps decorator) to the function it wraps, and transform that one
        lines, first = inspect.getsourcelines(getattr(fn, "__code__", fn))
    except (OSError, TypeError) as e:
        raise TransformError(
            f"cannot read the source of {getattr(fn, '__qualname__', fn)!r}: {e}.\n"
            f"  hint: transpile works on functions defined in a file (or a notebook cell); "
            f"functions typed at an interactive prompt or built by exec have no source.") from e
    return "".join(lines), max(first, 1)


def _dedent(text):
    dedented = textwrap.dedent(text)
    first = next((l for l in text.splitlines() if l.strip()), "")
    first_d = next((l for l in dedented.splitlines() if l.strip()), "")
    return dedented, len(first) - len(first_d)


def parse_function(fn):
    """Return (gast.FunctionDef, Source) for the plain Python function `fn`."""
    code = fn.__code__
    filename = code.co_filename
    text, first = _get_source_lines(fn)
    text, col = _dedent(text)
    if fn.__name__ == "<lambda>":
        return _parse_lambda(fn, text, first, col, filename)
    try:
        module = gast.parse(text)
    except SyntaxError as e:
        raise TransformError(f'File "{filename}", line {first}: cannot parse the source of '
                             f"{fn.__qualname__}: {e.msg}") from e
    node = module.body[0]
    if not isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
        raise TransformError(f'File "{filename}", line {first}: expected a def for '
                             f"{fn.__qualname__}, found {type(node).__name__}")
    node.decorator_list = []
    return node, Source(filename, first, col, text, fn.__qualname__)


def parse_text(text, filename, name):
    """Parse generated module text; return {function name: (FunctionDef, Source)}."""
    module = gast.parse(text)
    out = {}
    for node in module.body:
        if isinstance(node, gast.FunctionDef):
            out[node.name] = (node, Source(filename, 1, 0, text, node.name))
    return out


def _parse_lambda(fn, text, first, col, filename):
    candidates = None
    # getsource returns whole lines: the lambda may sit inside a larger, incomplete statement.
    lines = text.splitlines()
    for end in range(len(lines), 0, -1):
        snippet = "\n".join(lines[:end])
        for attempt in (snippet, "(" + snippet + ")", snippet.rstrip(",) ") ):
            try:
                candidates = [n for n in ast.walk(ast.parse(attempt)) if isinstance(n, ast.Lambda)]
                text = attempt
                break
            except SyntaxError:
                continue
        if candidates is not None:
            break
    if not candidates:      # inside a statement cut off mid-way (a `for` header, ...)
        candidates = _lambda_expressions(text)
        text = "\n".join(lines)
    if not candidates:
        raise TransformError(f'File "{filename}", line {first}: cannot find the source of this '
                             f"lambda.\n  hint: define it with def instead.")
    lam = _match_lambda(fn.__code__, candidates, first, col)
    args = [a.arg for a in lam.args.args]
    fdef = ast.FunctionDef(name=f"lambda_{first}", args=lam.args,
                           body=[ast.Return(lam.body)], decorator_list=[], returns=None,
                           type_params=[])
    ast.copy_location(fdef, lam)
    ast.fix_missing_locations(fdef)
    node = gast.ast_to_gast(ast.Module(body=[fdef], type_ignores=[])).body[0]
    del args
    return node, Source(filename, first, col, text, "<lambda>")


def _lambda_expressions(text):
    """Each `lambda ...` in `text` parsed on its own: from the keyword, the longest piece
    that ends before a closing bracket, a comma or a colon and parses as a lambda. Line
    numbers and columns stay those of `text`."""
    found = []
    lines = text.splitlines()
    for row, line in enumerate(lines):
        start = line.find("lambda")
        while start >= 0:
            rest = "\n".join([line[start:]] + lines[row + 1:])
            ends = [i for i, ch in enumerate(rest) if ch in ",)]}:\n"] + [len(rest)]
            for end in sorted(set(ends), reverse=True):
                try:
                    tree = ast.parse("(" + rest[:end] + ")", mode="eval")
                except SyntaxError:
                    continue
                if isinstance(tree.body, ast.Lambda):
                    for node in ast.walk(tree):      # back to the positions in `text`
                        if hasattr(node, "lineno"):
                            starts_first = node.lineno == 1
                            ends_first = getattr(node, "end_lineno", 1) == 1
                            node.lineno += row
                            node.end_lineno = getattr(node, "end_lineno", 1) + row
                            if starts_first:
                                node.col_offset += start - 1
                            if ends_first and getattr(node, "end_col_offset", None) is not None:
                                node.end_col_offset += start - 1
                    found.append(tree.body)
                    break
            start = line.find("lambda", start + 6)
    return found


def _match_lambda(code, candidates, first, col):
    if len(candidates) == 1:
        return candidates[0]
    want_args = code.co_varnames[:code.co_argcount]
    same_args = [c for c in candidates if tuple(a.arg for a in c.args.args) == want_args]
    if len(same_args) == 1:
        return same_args[0]
    # the code's own source positions tell where its body starts: exact, where they exist
    starts = [(line, c) for line, end_line, c, end in getattr(code, "co_positions", tuple)()
              if line is not None and c is not None and (line, c) != (end_line, end)]
    if starts:
        line, c = min(starts)
        near = [cand for cand in same_args or candidates
                if cand.body.lineno + first - 1 == line and
                abs(cand.body.col_offset + col - c) <= 1]
        if len(near) == 1:
            return near[0]
    # else the same bytecode, names and constants, and only one lambda with them (two
    # lambdas reading different globals, `lambda x: x * a, lambda x: x * b`, differ only
    # in their names: comparing the bytecode alone took the first for both)
    same_code = []
    for cand in same_args or candidates:
        compiled = compile(ast.Expression(cand), "<lambda-match>", "eval")
        inner = next((c for c in compiled.co_consts if inspect.iscode(c)), None)
        if inner is not None and inner.co_code == code.co_code and \
                inner.co_consts == code.co_consts and inner.co_names == code.co_names and \
                inner.co_varnames == code.co_varnames:
            same_code.append(cand)
    if len(same_code) == 1:
        return same_code[0]
    raise TransformError(f'File "{code.co_filename}", line {code.co_firstlineno}: several '
                         f"lambdas on one line; cannot tell which one to transform.\n"
                         f"  hint: put the lambda on its own line or use def.")
