"""Jacobians and Hessians: `jacfwd`, `jacrev`, `hessian`, with JAX's output shapes.

    jacrev(f)(x)  ->  def jacrev_f(x):
                          out, saved = f_fwd(x)
                          rows = []
                          for i in range(rt.size_of(out)):
                              cotangents = f_bwd(saved, rt.basis_like(out, i))
                              rows.append(cotangents[0])
                          return np.reshape(np.stack(rows), rt.jacobian_shape(out, x))

Each is a small Python function around the generated forward/backward (or jvp) functions,
compiled with readable source, so it is itself transformable: `hessian(f)` is
`jacfwd(jacrev(f))` by composition. The loop over basis vectors runs one vjp (jvp) per
output (input) element; it becomes a single batched call once `vmap` exists.
Arguments and outputs are arrays or Python floats (pytrees are not supported here yet).
"""
import itertools

from . import api
from .custom import file_backed

_counter = itertools.count()


def _argnum(f, argnums):
    if not isinstance(argnums, int):
        raise NotImplementedError("jacfwd/jacrev/hessian support one integer argnums for now; "
                                  "call them once per argument.")
    return argnums


def _constants(t):
    """Names and values for the bound prefix and closure values of a Transformed."""
    root = t.root
    prefix = {f"bound_{i}": v for i, v in enumerate(root.prefix)}
    extra = {f"closed_{i}": v for i, v in enumerate(root.extra_values())}
    return prefix, extra


def jacrev(f, argnums=0):
    """Reverse-mode Jacobian of f with respect to argument `argnums`: shape out + in."""
    argnum = _argnum(f, argnums)
    t = api.Transformed(f, "vjp", {"has_aux": False})
    gen = t.generated()
    params = list(t.signature.parameters)
    prefix, extra = _constants(t)
    call = ", ".join(list(prefix) + params + list(extra))
    k = len(prefix) + argnum
    name = f"jacrev_{getattr(f, '__name__', 'f').replace('<', '').replace('>', '')}"
    text = (f"import numpy as np\nimport runtime as rt\n\n"
            f"def {name}({', '.join(params)}):\n"
            f"    out, saved = f_fwd({call})\n"
            f"    rows = []\n"
            f"    for i in range(rt.size_of(out)):\n"
            f"        cotangents = f_bwd(saved, rt.basis_like(out, i))\n"
            f"        rows.append(cotangents[{k}])\n"
            f"    return np.reshape(np.stack(rows), rt.jacobian_shape(out, {params[argnum]}))\n")
    env = {"f_fwd": gen.entry, "f_bwd": gen.extra["bwd"], **prefix, **extra}
    return api.Transformed(file_backed(text, env, name), "transform")


def jacfwd(f, argnums=0):
    """Forward-mode Jacobian of f with respect to argument `argnums`: shape out + in."""
    argnum = _argnum(f, argnums)
    t = api.Transformed(f, "jvp", {"has_aux": False})
    gen = t.generated()
    params = list(t.signature.parameters)
    prefix, extra = _constants(t)
    primals = list(prefix) + params + list(extra)
    x = params[argnum]
    tangents = [f"rt.basis_like({x}, i)" if p == x else f"rt.tangent_zeros({p})"
                for p in primals]
    name = f"jacfwd_{getattr(f, '__name__', 'f').replace('<', '').replace('>', '')}"
    text = (f"import numpy as np\nimport runtime as rt\n\n"
            f"def {name}({', '.join(params)}):\n"
            f"    columns = []\n"
            f"    for i in range(rt.size_of({x})):\n"
            f"        out, out_dot = f_jvp({', '.join(primals)}, {', '.join(tangents)})\n"
            f"        columns.append(out_dot)\n"
            f"    jacobian = np.moveaxis(np.stack(columns), 0, -1)\n"
            f"    return np.reshape(jacobian, rt.jacobian_shape(columns[0], {x}))\n")
    env = {"f_jvp": gen.entry, **prefix, **extra}
    return api.Transformed(file_backed(text, env, name), "transform")


def hessian(f, argnums=0):
    """Second derivatives: jacfwd(jacrev(f)), shape in + in for a scalar f."""
    return jacfwd(jacrev(f, argnums), argnums)
