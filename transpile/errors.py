"""Building `TransformError` messages that point at the user's source.

Every message names the file, the line, shows the source line with a caret under the
offending column, says what was found and gives a hint.
"""
import linecache

from runtime.errors import TransformError

__all__ = ["TransformError", "error_at", "where", "located"]


def located(exc):
    """A TransformError raised while generated code ran (vmap finding, say, that a shape
    differs between examples), with the user's line it comes from in front; `exc` itself
    if that cannot be found or the message already names a line."""
    if str(exc).startswith('File "'):
        return exc
    from .emit import origin_of
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


def where(node, src):
    """'file:line' for a node of a parsed function (`src` is its `parse.Source`)."""
    line = src.line_of(node)
    return f"{src.filename}:{line}" if line else src.filename


def error_at(node, src, message, hint=None, pass_name=None):
    """A TransformError for `node` in `src`: location, source line with a caret, hint."""
    parts = []
    if src is not None and node is not None and getattr(node, "lineno", None):
        line = src.line_of(node)
        text = linecache.getline(src.filename, line).rstrip("\n") if line else ""
        if not text and src.lines and 0 < node.lineno <= len(src.lines):
            text = src.lines[node.lineno - 1]
        col = getattr(node, "col_offset", 0) + src.col_offset
        parts.append(f'File "{src.filename}", line {line}, in {src.name}')
        if text:
            stripped = text.lstrip()
            caret_col = max(0, col - (len(text) - len(stripped)))
            parts.append(f"    {stripped}")
            parts.append("    " + " " * caret_col + "^")
    elif src is not None:
        parts.append(f'File "{src.filename}", in {src.name}')
    head = f"[{pass_name}] " if pass_name else ""
    parts.append(head + message)
    if hint:
        parts.append(f"  hint: {hint}")
    return TransformError("\n".join(parts))
