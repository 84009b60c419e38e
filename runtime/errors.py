"""The one exception class shared by the transformer and the code it generates.

It lives in `runtime` (not `transpile`) because generated code raises it at run time, for
example when `grad` finds a non-scalar output, and generated code never imports `transpile`.
`transpile.TransformError` is this same class.
"""
import re

import numpy as np

from .backend import array_module


class TransformError(Exception):
    """Raised for code the transformer refuses: the message names the file, line and source."""


class MissingDerivative:
    """The adjoint of an argument whose derivative has no rule (rt.no_derivative in a
    reverse rule). Reverse mode computes adjoints for whatever a value came from, needed or
    not (a Bessel function's order saved with x for a second derivative in x): so the error
    is raised only where this adjoint is used. Adjoint bookkeeping passes it on (rt.add,
    rt.unbroadcast, items of it); any arithmetic, conversion or finished gradient raises."""
    __slots__ = ("message",)
    __array_ufunc__ = None      # numpy's operators defer to the ones below, which raise

    def __init__(self, message):
        self.message = message

    def error(self):
        return TransformError(self.message)

    def __getitem__(self, key):
        return self             # an item of a missing adjoint is missing too

    def _raise(self, *args, **kwargs):
        raise self.error()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _raise
    __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __rpow__ = __neg__ = _raise
    __bool__ = __float__ = __complex__ = __int__ = __index__ = __array__ = _raise
    __lt__ = __le__ = __gt__ = __ge__ = __iter__ = __len__ = __array_function__ = _raise

    @property
    def shape(self):
        raise self.error()

    ndim = dtype = shape


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


def format_string(template, *values, **named):
    """An f-string of the user's code: `template.format(*values)`. A format spec that an
    array does not take (`{:.2f}` of a whole batch under vmap) falls back to str()."""
    try:
        return template.format(*values, **named)
    except (TypeError, ValueError):
        return _SPEC.sub("{}", template).format(*values, **named)


class TryBlock:
    """A try block of the user's code as a plain function (frontend/attempts.py), held so
    that transformed code passes it to rt.caught as a value, not a function to follow."""
    __slots__ = ("run", "source")

    def __init__(self, run, source):
        self.run = run
        self.source = source         # `def try_block(...)`: what a dumped module rebuilds

    @classmethod
    def of_source(cls, source):
        """The block of a dumped module: it sees numpy (np) and math."""
        import math
        scope = {"np": np, "numpy": np, "math": math}
        exec(compile(source, "<try block>", "exec"), scope)
        return cls(scope["try_block"], source)

    def __repr__(self):
        return f"TryBlock({self.run.__code__.co_filename}, line {self.run.__code__.co_firstlineno})"


def caught(block, handled, values):
    """Which of the handlers `handled` (exception classes, or tuples of them; in order)
    catches what the user's try block `block` raises on `values`: 0 when it raises
    nothing, k for the k-th handler. What none catches is raised (frontend/attempts.py)."""
    try:
        block.run(*values)
    except (NameError, UnboundLocalError):
        raise             # the block reads a name it was not given: never a handler's case
    except Exception as error:
        for k, kind in enumerate(handled):
            if isinstance(error, kind):
                return k + 1
        raise
    return 0


def lane_caught(block, handled, values, n, have):
    """rt.caught for each of the n examples of a vmap (`have`: which of `values` carry its
    axis): an int array, one handler number per example."""
    flags = have if isinstance(have, (tuple, list)) else (have,) * len(values)
    return np.array([caught(block, handled, tuple(v[i] if f else v
                                                  for v, f in zip(values, flags)))
                     for i in range(n)])


def str_method(text, method, *args, **kwargs):
    """`text.method(*args)` for a method of str the user's code calls (`mode.lower()`):
    text passes through every transformation unchanged."""
    if not isinstance(text, str):
        raise TypeError(f"'.{method}()' is a method of str; transformed code called it on "
                        f"a {type(text).__name__}")
    return getattr(text, method)(*args, **kwargs)


def is_integer(x):
    """`x.is_integer()` of a float the user's code calls it on (hipsternet's conv checks
    `h_out.is_integer()` of a size it divides out); elementwise on an array (a batch of
    such numbers under vmap)."""
    if isinstance(x, (int, float, np.floating, np.integer)):
        return bool(float(x).is_integer())
    xp = array_module(x)
    return xp.isfinite(x) & (xp.floor(x) == x)


def each_example_check(check, n, flags, *args):
    """An assertion the user's code makes (`np.testing.assert_allclose(y, want)`) under vmap:
    made for each of the n examples, with the arguments `flags` marks batched sliced to
    that example, as a loop over examples makes it."""
    for i in range(n):
        check(*[a[i] if f else a for a, f in zip(args, flags)], *args[len(flags):])


def debug_print(fmt, *args, **kwargs):
    """tp.debug.print (JAX's jax.debug.print): print `fmt.format(*args, **kwargs)`. It runs
    where the code runs, in every transformation (under vmap: once, with the batch)."""
    print(format_string(fmt, *args, **kwargs))


_SPEC = re.compile(r"(?<!{){(![sra])?:[^{}]*}")
