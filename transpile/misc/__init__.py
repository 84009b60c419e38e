"""autograd's `autograd.misc` helpers with autograd's calling conventions, so that a program
written for autograd runs with its imports changed (`autograd.misc.X` -> `transpile.misc.X`):

    from transpile.misc.optimizers import adam       # adam(grad, x0, callback, num_iters=...)
    from transpile.misc.flatten import flatten, flatten_func

The toolkit's own optimizers are `tp.optim` (optax's API) and `tp.optim.optimizers` (JAX's
example_libraries); these are the same algorithms in autograd's form: plain Python loops
that call a gradient function `grad(x, i)` and return the final parameters.
"""
from . import optimizers  # noqa: F401
from .flatten import flatten, flatten_func  # noqa: F401  (the function, as autograd.misc's)

__all__ = ["flatten", "flatten_func", "optimizers"]
