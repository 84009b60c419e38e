"""autograd.misc.flatten: `flatten(tree) -> (vector, unflatten)` and `flatten_func`.

`flatten` is tp.flatten_util.ravel_pytree (autograd's order: lists and tuples left to right,
dicts by sorted key), so it also works inside a transformed loss (an L2 penalty over all
parameters, as autograd's neural_net example writes it).
"""
import inspect

from ..custom import file_backed, identifier, positional_names
from ..flatten_util import ravel_pytree as flatten

__all__ = ["flatten", "flatten_func"]


def flatten_func(func, example):
    """(flat_func, unflatten, flat_example): `flat_func(vector, *rest)` is
    `flatten(func(unflatten(vector), *rest))[0]`, for optimizers that take one vector.

    `flat_func` is a plain function with named parameters (one per parameter of `func`),
    so it can be transformed: `tp.grad(flat_func)`, `tp.hessian_vector_product(flat_func)`.
    """
    flat_example, unflatten = flatten(example)
    params = list(inspect.signature(func).parameters.values())
    if not params or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY)
                         for p in params):
        raise TypeError(f"flatten_func needs a function of positional parameters, the first "
                        f"of them the one to flatten; got {func!r}")
    rest = "".join(", " + p for p in positional_names(len(params))[1:])
    name = "flat_" + identifier(getattr(func, "__name__", "func"))
    text = (f"def {name}(flat_x{rest}):\n"
            f"    return flatten(func(unflatten(flat_x){rest}))[0]\n")
    env = {"flatten": flatten, "func": func, "unflatten": unflatten}
    return file_backed(text, env, name), unflatten, flat_example
