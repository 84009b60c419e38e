"""Jacobians and Hessians: `jacfwd`, `jacrev`, `hessian`, with JAX's output shapes.

    jacrev(f)(x)  ->  def jacrev_f(x):
                          out, saved = f_fwd(x)
                          if rt.is_number(out):   # one output: one vjp, its gradient
                              cotangents = f_bwd(saved, np.ones_like(out))
                          else:
                              cotangents = f_bwd_batched(saved, rt.basis_of(out))
                          return rt.jacobian_rows(cotangents[0], out, x)

One vjp per output element, all at once: `f_bwd_batched` is vmap of the generated backward
function over a stack of basis cotangents (jacfwd likewise vmaps the jvp over basis
tangents). Each Jacobian is a small Python function with readable source around
transformed functions, so it is itself transformable: `hessian(f)` is `jacfwd(jacrev(f))`
by composition (a vmap of the jvp of vmapped code).
Arguments and outputs are arrays, Python floats or pytrees of them (tuples, lists, dicts):
the Jacobian then has JAX's layout, out's structure holding x's (rt.jacobian_rows).
"""
import collections
import itertools

from . import api
from .custom import file_backed
from .errors import ArgumentDependent, TransformError

_counter = itertools.count()

# Wrappers made before, by what they are made of: `tp.hessian(f)(x)` in a loop (Newton's
# method) makes the same wrapper function each time, so the code generated for it (and for
# jacfwd of it) is found in the caches, which know functions by their code. A key holds the
# generated code's identity and those of the values the wrapper's module binds (closure
# values, bound arguments); the entry keeps them alive, so no id is reused meanwhile.
_WRAPPERS = collections.OrderedDict()
_WRAPPERS_KEPT = 256


def _wrapper(key, values, make):
    """The wrapper function made for `key` before, or make() now."""
    key = key + tuple(id(v) for v in values)
    found = _WRAPPERS.get(key)
    if found is not None:
        _WRAPPERS.move_to_end(key)
        return found[0]
    fn = make()
    _WRAPPERS[key] = (fn, tuple(values))
    if len(_WRAPPERS) > _WRAPPERS_KEPT:
        _WRAPPERS.popitem(last=False)
    return fn


def _argnums(f, argnums):
    """(the differentiated positions, counted from the start; whether one int was given:
    a tuple gives a tuple of Jacobians, JAX's layout for a tuple of arguments)."""
    signature = api.Transformed(f, "transform").signature.parameters
    nparams = len(signature)
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums or not all(isinstance(i, int) and -nparams <= i < nparams for i in nums):
        raise TransformError(f"argnums={argnums!r}: the Jacobian needs positions of "
                             f"arguments of a function of {nparams} (an int or a tuple "
                             f"of ints).")
    if any(i < 0 for i in nums) and any(p.default is not p.empty for p in signature.values()):
        raise TransformError(f"argnums={argnums!r} counts back from the last positional "
                             "argument passed (as in JAX), and the function has parameters "
                             "with defaults: its Jacobian's code is made before any call.\n"
                             "  hint: give argnums counted from the first parameter.")
    nums = tuple(i % nparams for i in nums)
    if len(set(nums)) != len(nums):
        raise TransformError(f"argnums={argnums!r} names an argument twice.")
    return nums, single


def _header(params, defaults):
    """The wrapper's parameters, as written in its def: with their defaults (_generated)."""
    return ", ".join(p + (f"=default_{k}" if f"default_{k}" in defaults else "")
                     for k, p in enumerate(params))


def _taken(names, single):
    """The argument (or tuple of arguments) a Jacobian is taken for, as code."""
    return names[0] if single else f"({', '.join(names)},)"


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
    # the wrapper's parameters keep their defaults (`def jacrev_f(x, y, scale=default_2)`)
    defaults = {f"default_{k}": p.default for k, p in enumerate(
        t.signature.parameters.values()) if p.default is not p.empty}
    name = f"{prefix_name}_{getattr(f, '__name__', 'f').replace('<', '').replace('>', '')}"
    return t.generated(), params, prefix, extra, name, defaults


def jacrev(f, argnums=0, holomorphic=False, *, argnum=None, has_aux=False):
    """Reverse-mode Jacobian of f with respect to argument `argnums` (autograd's `argnum`;
    a tuple: with respect to those arguments, as a tuple): shape out + in. Complex
    arguments give rows of grad's gradients; a complex output needs `holomorphic=True`
    (rt.check_jacobian_dtype). has_aux: f returns (out, aux); the result is (jacobian,
    aux)."""
    nums, single = _argnums(f, api.argnums_or_argnum(argnums, argnum))
    nparams = len(api.Transformed(f, "transform").signature.parameters)
    # adjoints of arguments `argnums` only (the others, a Bessel function's order say, are
    # constants of it: no rule for them is asked for)
    active = tuple(i in nums for i in range(nparams))
    gen, params, prefix, extra, name, defaults = _generated(
        f, "vjp", {"has_aux": has_aux, "active": active}, "jacrev")
    call = ", ".join(list(prefix) + params + list(extra))
    x = _taken([params[i] for i in nums], single)
    rows = _taken([f"cotangents[{len(prefix) + i}]" for i in nums], single)
    check = (f"    rt.check_jacobian_dtype({x}, 'jacrev', 'argument', True)\n"
             if holomorphic else "")
    text = (f"import numpy as np\nimport runtime as rt\n\n"
            f"def {name}({_header(params, defaults)}):\n"
            f"{check}"
            f"    out, {'aux, ' * has_aux}saved = f_fwd({call})\n"
            f"    rt.check_jacobian_dtype(out, 'jacrev', 'output'{', True' * holomorphic})\n"
            f"    if rt.is_number(out):   # one output: one vjp, its gradient\n"
            f"        cotangents = f_bwd(saved, np.ones_like(out))\n"
            f"    else:\n"
            f"        cotangents = f_bwd_batched(saved, rt.basis_of(out))\n"
            f"    return rt.jacobian_rows({rows}, out, {x}){', aux' * has_aux}\n")
    def make():
        env = {"f_fwd": gen.entry, "f_bwd": gen.extra["bwd"],
               "f_bwd_batched": api.vmap(gen.extra["bwd"], in_axes=(None, 0)), **prefix,
               **extra, **defaults}
        return file_backed(text, env, name)
    fn = _wrapper(("jacrev", gen, text), [gen, *prefix.values(), *extra.values(),
                                          *defaults.values()], make)
    return api.Transformed(fn, "transform")


jacobian = jacrev       # JAX's jax.jacobian is jax.jacrev

def jacfwd(f, argnums=0, holomorphic=False, *, argnum=None, has_aux=False):
    """Forward-mode Jacobian of f with respect to argument `argnums` (autograd's `argnum`;
    a tuple: with respect to those arguments, as a tuple): shape out + in. A complex
    argument needs `holomorphic=True` (rt.check_jacobian_dtype). has_aux: f returns (out,
    aux); the result is (jacobian, aux)."""
    nums, single = _argnums(f, api.argnums_or_argnum(argnums, argnum))
    nparams = len(api.Transformed(f, "transform").signature.parameters)
    active = tuple(i in nums for i in range(nparams))
    # the jvp takes the active arguments' tangents in the parameters' order; the basis
    # is in argnums' order
    tangents = "basis" if single else ", ".join(f"basis[{nums.index(i)}]" for i in sorted(nums))
    # a jvp whose only tangents are arguments `argnums`' (the others are constants of it)
    gen, params, prefix, extra, name, defaults = _generated(
        f, "jvp", {"has_aux": has_aux, "active": active}, "jacfwd")
    primals = list(prefix) + params + list(extra)
    x = _taken([params[i] for i in nums], single)
    in_axes = (None,) * len(primals) + (0,) * len(nums)
    text = (f"import numpy as np\nimport runtime as rt\n\n"
            f"def {name}({_header(params, defaults)}):\n"
            f"    rt.check_jacobian_dtype({x}, 'jacfwd', 'argument'{', True' * holomorphic})\n"
            f"    basis = rt.basis_of({x})\n"
            f"    out, columns{', aux' * has_aux} = f_jvp_batched({', '.join(primals)}, "
            f"{tangents})\n"
            f"    return rt.jacobian_columns(columns, out, {x}){', aux' * has_aux}\n")
    out_axes = (None, 0, None) if has_aux else (None, 0)     # aux: the same for each column
    def make():
        env = {"f_jvp_batched": api.vmap(gen.entry, in_axes=in_axes, out_axes=out_axes),
               **prefix, **extra, **defaults}
        return file_backed(text, env, name)
    fn = _wrapper(("jacfwd", gen, text), [gen, *prefix.values(), *extra.values(),
                                          *defaults.values()], make)
    return api.Transformed(fn, "transform")


def hessian(f, argnums=0, holomorphic=False, *, argnum=None, has_aux=False):
    """Second derivatives: jacfwd(jacrev(f)), shape in + in for a scalar f (`argnum`:
    autograd's name for argnums; has_aux: f returns (out, aux), the result is (hessian,
    aux))."""
    argnums = api.argnums_or_argnum(argnums, argnum)
    return jacfwd(jacrev(f, argnums, holomorphic, has_aux=has_aux), argnums, holomorphic,
                  has_aux=has_aux)


def hessian_vector_product(f, argnums=0, *, argnum=None):
    """autograd's hessian_vector_product: a function of `(*args, vector)` giving the Hessian
    of scalar `f` with respect to argument `argnums`, applied to `vector` (the shape of that
    argument). One jvp of the gradient (forward over reverse): no Hessian is formed, so it
    costs a few gradients whatever the size (scipy's Newton-CG `hessp=`)."""
    (argnum,), single = _argnums(f, api.argnums_or_argnum(argnums, argnum))
    if not single:
        raise TransformError("hessian_vector_product takes one argument position (an int).")
    gradient = api.grad(f, argnum)
    nparams = len(gradient.signature.parameters)
    active = tuple(i == argnum % nparams for i in range(nparams))
    gen, params, prefix, extra, name, defaults = _generated(
        gradient, "jvp", {"has_aux": False, "active": active}, "hvp")
    vector = "vector"
    while vector in params:
        vector += "_"
    primals = list(prefix) + params + list(extra)
    if not defaults:
        text = (f"def {name}({', '.join(params + [vector])}):\n"
                f"    _, product = gradient_jvp({', '.join(primals)}, {vector})\n"
                f"    return product\n")
    else:
        # autograd's order: the vector is the last argument given, whichever of f's
        # defaulted parameters come before it (hvp(x, v) for f(x, scale=2.0))
        text = (f"def {name}(*args):\n"
                f"    return {name}_at(args[-1], *args[:-1])\n\n\n"
                f"def {name}_at({vector}, {_header(params, defaults)}):\n"
                f"    _, product = gradient_jvp({', '.join(primals)}, {vector})\n"
                f"    return product\n")
    def make():
        return file_backed(text, {"gradient_jvp": gen.entry, **prefix, **extra, **defaults},
                           name)
    fn = _wrapper(("hvp", gen, text), [gen, *prefix.values(), *extra.values()], make)
    return api.Transformed(fn, "transform")


# transformed code may apply them too: `tp.grad(lambda x: np.sum(jacrev(f)(x)))`
api.add_transformation("jacrev", jacrev)
api.add_transformation("jacfwd", jacfwd)
api.add_transformation("hessian", hessian)
api.add_transformation("hessian_vector_product", hessian_vector_product)
