"""Backend dispatch: which array module (numpy or cupy) a value belongs to.

Generated code spells numpy calls as `np.<name>`; the module it runs in binds `np` to numpy.
Helpers in `runtime` that allocate pick the array module from their arguments, so the same
helper serves numpy and cupy arrays. cupy is optional and imported lazily.
"""
import numpy as np

_cupy = None
_cupy_checked = False


def _get_cupy():
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:  # pragma: no cover - depends on the machine
            import cupy
            _cupy = cupy
        except Exception:
            _cupy = None
    return _cupy


def array_module(*values):
    """numpy, or cupy when any of `values` is a cupy array."""
    for v in values:
        if type(v).__module__.startswith("cupy"):
            return _get_cupy()
    return np
