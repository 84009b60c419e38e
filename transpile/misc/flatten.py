"""autograd.misc.flatten: `flatten(tree) -> (vector, unflatten)` and `flatten_func`.

`flatten` is tp.flatten_util.ravel_pytree (autograd's order: lists and tuples left to right,
dicts by sorted key), so it also works inside a transformed loss (an L2 penalty over all
parameters, as autograd's neural_net example writes it).
"""
import inspect

from ..custom import file_backed
from ..flatten_util import ravel_pytree as flatten

__all__ = ["flatten", "flatten_func"]


def flatten_func(func, example):
    """(flat_func, unflatten, flat_example): `flat_func(vector, *rest)` is
    `flatten(func(unflatten(vector), *rest))[0]`, for optimizers that take one vector.

    `flat_func` is a plain function with named parameters (one per parameter of `func`),
    so it can be transformed: `tp.grad(flat_func)`, `tp.hessian_vector_product(flat_func)`.
    """
    flat_example, unflatten = flatten(example)
    params = _parameter_names(func)
    rest = "".join(", " + p for p in params[1:])
    text = (f"def flat_{_identifier(func)}(flat_x{rest}):\n"
            f"    return flatten(func(unflatten(flat_x){rest}))[0]\n")
    env = {"flatten": flatten, "func": func, "unflatten": unflatten}
    flat_func = file_backed(text, env, f"flat_{_identifier(func)}")
    return flat_func, unflatten, flat_example


def _parameter_names(func):
    params = list(inspect.signature(func).parameters.values())
    if not params or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY)
                         for p in params):
        raise TypeError(f"flatten_func needs a function of positional parameters, the first "
                        f"of them the one to flatten; got {func!r}")
    return [f"arg{i}" for i in range(len(params))]


def _identifier(func):
    name = getattr(func, "__name__", "func")
    return name if name.isidentifier() and name != "<lambda>" else "func"
