"""Building `TransformError` messages that point at the user's source.

Every message names the file, the line, shows the source line with a caret under the
offending column, says what was found and gives a hint.
"""
import linecache

from runtime.errors import TransformError

__all__ = ["TransformError", "ArgumentDependent", "error_at", "where", "IN_PLACE_CALL_HINT"]

# Said wherever a derivative pass refuses a call that writes its argument in place.
IN_PLACE_CALL_HINT = ("assign a new value instead (y = np.random.permutation(y) for a "
                      "shuffle), or call it on data that is not differentiated.")


class ArgumentDependent(TransformError):
    """The front end met code whose meaning depends on what an argument of the transformed
    function is: it calls the argument (a function passed in), or a method of it (an object
    passed in). The API layer then generates code for that argument's function (by
    identity) or type, on the first call with it; where no call tells (`.source` before
    any call), the message says what is needed."""

    def __init__(self, message, params):
        super().__init__(message)
        self.params = tuple(params)


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
