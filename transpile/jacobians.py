"""Jacobians and Hessians: `jacfwd`, `jacrev`, `hessian`, with JAX's output shapes.

    jacrev(f)(x)  ->  def jacrev_f(x):
                          out, saved = f_fwd(x)
                          if np.ndim(out) == 0:   # one output: one vjp, its gradient
                              cotangents = f_bwd(saved, np.ones_like(out))
                          else:
                              cotangents = f_bwd_batched(saved, rt.basis_of(out))
                          return np.reshape(cotangents[0], rt.jacobian_shape(out, x))

One vjp per output element, all at once: `f_bwd_batched` is vmap of the generated backward
function over a stack of basis cotangents (jacfwd likewise vmaps the jvp over basis
tangents). Each Jacobian is a small Python function with readable source around
transformed functions, so it is itself transformable: `hessian(f)` is `jacfwd(jacrev(f))`
by composition (a vmap of the jvp of vmapped code).
Arguments and outputs are arrays or Python floats (pytrees are not supported here yet).
"""
import itertools

from . import api
from .custom import file_backed
from .errors import ArgumentDependent, TransformError

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


def _generated(f, kind, options, prefix_name):
    """The transformation of f the wrapper calls, the user's parameter names, the bound
    prefix and closure values (as names for the wrapper's module) and the wrapper's name."""
    t = api.Transformed(f, kind, options)
    try:
        t.generated()
    except ArgumentDependent as e:
        raise TransformError(
            f"{e}\n  (jacfwd, jacrev and hessian generate their code before any call: "
            f"they need every function the code calls to be known then; close over the "
            f"function instead: jacrev(lambda x: f(x, np.tanh)))") from None
    params = list(t.signature.parameters)
    prefix, extra = _constants(t)
    name = f"{prefix_name}_{getattr(f, '__name__', 'f').replace('<', '').replace('>', '')}"
    return t.generated(), params, prefix, extra, name


def jacrev(f, argnums=0, holomorphic=False, *, argnum=None):
    """Reverse-mode Jacobian of f with respect to argument `argnums` (autograd's `argnum`):
    shape out + in. Complex arguments give rows of grad's gradients; a complex output needs
    `holomorphic=True` (rt.check_jacobian_dtype)."""
    argnum = _argnum(f, api.argnums_or_argnum(argnums, argnum))
    gen, params, prefix, extra, name = _generated(f, "vjp", {"has_aux": False}, "jacrev")
    call = ", ".join(list(prefix) + params + list(extra))
    k = len(prefix) + argnum
    check = (f"    rt.check_jacobian_dtype({params[argnum]}, 'jacrev', 'argument', True)\n"
             if holomorphic else "")
    text = (f"import numpy as np\nimport runtime as rt\n\n"
            f"def {name}({', '.join(params)}):\n"
            f"{check}"
            f"    out, saved = f_fwd({call})\n"
            f"    rt.check_jacobian_dtype(out, 'jacrev', 'output'{', True' * holomorphic})\n"
            f"    if np.ndim(out) == 0:   # one output: one vjp, its gradient\n"
            f"        cotangents = f_bwd(saved, np.ones_like(out))\n"
            f"    else:\n"
            f"        cotangents = f_bwd_batched(saved, rt.basis_of(out))\n"
            f"    return np.reshape(cotangents[{k}], rt.jacobian_shape(out, {params[argnum]}))\n")
    env = {"f_fwd": gen.entry, "f_bwd": gen.extra["bwd"],
           "f_bwd_batched": api.vmap(gen.extra["bwd"], in_axes=(None, 0)), **prefix, **extra}
    return api.Transformed(file_backed(text, env, name), "transform")


def jacfwd(f, argnums=0, holomorphic=False, *, argnum=None):
    """Forward-mode Jacobian of f with respect to argument `argnums` (autograd's `argnum`):
    shape out + in. A complex argument needs `holomorphic=True` (rt.check_jacobian_dtype)."""
    argnum = _argnum(f, api.argnums_or_argnum(argnums, argnum))
    nparams = len(api.Transformed(f, "transform").signature.parameters)
    active = tuple(i == argnum % nparams for i in range(nparams))
    # a jvp whose only tangent is argument `argnums`'s (the others are constants of it)
    gen, params, prefix, extra, name = _generated(f, "jvp", {"has_aux": False,
                                                             "active": active}, "jacfwd")
    primals = list(prefix) + params + list(extra)
    x = params[argnum]
    in_axes = (None,) * len(primals) + (0,)
    text = (f"import numpy as np\nimport runtime as rt\n\n"
            f"def {name}({', '.join(params)}):\n"
            f"    rt.check_jacobian_dtype({x}, 'jacfwd', 'argument'{', True' * holomorphic})\n"
            f"    basis = rt.basis_of({x})\n"
            f"    out, columns = f_jvp_batched({', '.join(primals)}, basis)\n"
            f"    jacobian = np.moveaxis(columns, 0, -1)\n"
            f"    return np.reshape(jacobian, rt.jacobian_shape(out, {x}))\n")
    env = {"f_jvp_batched": api.vmap(gen.entry, in_axes=in_axes, out_axes=(None, 0)),
           **prefix, **extra}
    return api.Transformed(file_backed(text, env, name), "transform")


def hessian(f, argnums=0, holomorphic=False, *, argnum=None):
    """Second derivatives: jacfwd(jacrev(f)), shape in + in for a scalar f (`argnum`:
    autograd's name for argnums)."""
    argnums = api.argnums_or_argnum(argnums, argnum)
    return jacfwd(jacrev(f, argnums, holomorphic), argnums, holomorphic)


def hessian_vector_product(f, argnums=0, *, argnum=None):
    """autograd's hessian_vector_product: a function of `(*args, vector)` giving the Hessian
    of scalar `f` with respect to argument `argnums`, applied to `vector` (the shape of that
    argument). One jvp of the gradient (forward over reverse): no Hessian is formed, so it
    costs a few gradients whatever the size (scipy's Newton-CG `hessp=`)."""
    argnum = _argnum(f, api.argnums_or_argnum(argnums, argnum))
    gradient = api.grad(f, argnum)
    nparams = len(gradient.signature.parameters)
    active = tuple(i == argnum % nparams for i in range(nparams))
    gen, params, prefix, extra, name = _generated(gradient, "jvp", {"has_aux": False,
                                                                    "active": active}, "hvp")
    vector = "vector"
    while vector in params:
        vector += "_"
    primals = list(prefix) + params + list(extra)
    text = (f"def {name}({', '.join(params + [vector])}):\n"
            f"    _, product = gradient_jvp({', '.join(primals)}, {vector})\n"
            f"    return product\n")
    env = {"gradient_jvp": gen.entry, **prefix, **extra}
    return api.Transformed(file_backed(text, env, name), "transform")


# transformed code may apply them too: `tp.grad(lambda x: np.sum(jacrev(f)(x)))`
api.add_transformation("jacrev", jacrev)
api.add_transformation("jacfwd", jacfwd)
api.add_transformation("hessian", hessian)
api.add_transformation("hessian_vector_product", hessian_vector_product)
