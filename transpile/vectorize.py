"""np.vectorize in transformed code: the function over the broadcast elements, as a vmap.

    @np.vectorize                        np.vectorize(piece)(x, y) in transformed code is
    def piece(x, y):                         shape = np.broadcast_shapes(np.shape(x), ...)
        if x > y:                            out = vmap(piece)(np.ravel(x'), np.ravel(y'))
            return np.sin(x) * y             np.reshape(out, shape)  (each output)
        return x ** 2 + y

numpy calls the function once per element in a Python loop; here every transformation
sees one vmap of it (a data-dependent `if` takes each element's own branch, derivatives
flow through), and the batched code runs at numpy speed. As numpy does, the results take
the dtype of the function's output at the first element (ints stay ints) unless `otypes`
names them, and the positions in `excluded` are passed whole. A `signature` (gufunc
semantics) and excluded keywords are refused.
"""
import numpy as np

from .custom import file_backed
from .frontend.calls import REPLACEMENTS
from .tree_util import tree_map

_CALLERS = {}


def vectorized_caller(n, excluded, otypes, vmap):
    """The function `vectorize_...(pyfunc, a0, ..., a{n-1})` computing
    np.vectorize(pyfunc, excluded=excluded, otypes=otypes)(a0, ...), through `vmap`."""
    key = (n, excluded, otypes, id(vmap))
    if key in _CALLERS:
        return _CALLERS[key][0]
    args = [f"a{k}" for k in range(n)]
    mapped = [a for k, a in enumerate(args) if k not in excluded]
    flat = [f"np.ravel(np.broadcast_to({a}, shape))" if k not in excluded else a
            for k, a in enumerate(args)]
    first = [f"np.ravel({a})[0]" if k not in excluded else a for k, a in enumerate(args)]
    in_axes = tuple(None if k in excluded else 0 for k in range(n))
    name = f"vectorize_{n}" + "".join("_x" if k in excluded else "_m" for k in range(n))
    if otypes:
        # numpy's otypes: one dtype per output, in order
        cast = (f"    dtypes = {tuple(np.dtype(t).str for t in otypes)!r}\n"
                f"    if len(dtypes) == 1:\n"
                f"        return np.reshape(out, shape).astype(dtypes[0])\n"
                f"    return tuple(np.reshape(o, shape).astype(d) for o, d in "
                f"zip(out, dtypes))\n")
    else:
        # numpy's: the dtype of each output at the first element
        cast = (f"    at_first = pyfunc({', '.join(first)})\n"
                f"    return tree_map(lambda o, f: np.reshape(o, shape).astype("
                f"np.result_type(f)), out, at_first)\n")
    text = (f"def {name}(pyfunc, {', '.join(args)}):\n"
            f"    shape = np.broadcast_shapes({', '.join(f'np.shape({a})' for a in mapped)})\n"
            f"    out = vmap(pyfunc, in_axes={in_axes!r})({', '.join(flat)})\n" + cast)
    made = file_backed(text, {"np": np, "vmap": vmap, "tree_map": tree_map}, name)
    _CALLERS[key] = (made, vmap)      # (vmap kept alive: its id is in the key)
    return made


REPLACEMENTS["vectorize"] = vectorized_caller
