"""The one exception class shared by the transformer and the code it generates.

It lives in `runtime` (not `transpile`) because generated code raises it at run time, for
example when `grad` finds a non-scalar output, and generated code never imports `transpile`.
`transpile.TransformError` is this same class.
"""
import re


class TransformError(Exception):
    """Raised for code the transformer refuses: the message names the file, line and source."""


def located(where, message, hint):
    """A TransformError raised by generated code at run time, pointing at the user's line.

    `where` is 'file:line (function)', written into the generated code by the transformer;
    the source line is read back with linecache, as tracebacks do."""
    import linecache
    head, _, func = where.rpartition(" (")
    filename, _, line = head.rpartition(":")
    parts = [f'File "{filename}", line {line}, in {func.rstrip(")")}']
    text = linecache.getline(filename, int(line)) if line.isdigit() else ""
    if text.strip():
        parts.append("    " + text.strip())
        parts.append("    ^")
    parts.append(message)
    parts.append("  hint: " + hint)
    return TransformError("\n".join(parts))


def raise_exception(exc, *args):
    """`raise exc(*args)` (or `raise exc` for an instance): the user's raise statement, kept
    in generated code as a call so that every transformation passes it through."""
    if isinstance(exc, type):
        raise exc(*args)
    raise exc


def format_string(template, *values):
    """An f-string of the user's code: `template.format(*values)`. A format spec that an
    array does not take (`{:.2f}` of a whole batch under vmap) falls back to str()."""
    try:
        return template.format(*values)
    except (TypeError, ValueError):
        return _SPEC.sub("{}", template).format(*values)


def debug_print(fmt, *args, **kwargs):
    """tp.debug.print (JAX's jax.debug.print): print `fmt.format(*args, **kwargs)`. It runs
    where the code runs, in every transformation (under vmap: once, with the batch)."""
    try:
        text = fmt.format(*args, **kwargs)
    except (TypeError, ValueError):     # a spec like {:.2f} of an array
        text = _SPEC.sub("{}", fmt).format(*args, **kwargs)
    print(text)


_SPEC = re.compile(r"(?<!{){(![sra])?:[^{}]*}")
