"""The one exception class shared by the transformer and the code it generates.

It lives in `runtime` (not `transpile`) because generated code raises it at run time, for
example when `grad` finds a non-scalar output, and generated code never imports `transpile`.
`transpile.TransformError` is this same class.
"""


class TransformError(Exception):
    """Raised for code the transformer refuses: the message names the file, line and source."""
