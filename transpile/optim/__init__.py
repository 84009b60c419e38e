"""tp.optim: optimizers. `tp.optim.optimizers` has the calling conventions of JAX's
`jax.example_libraries.optimizers` (`init_fun, update_fun, get_params = adam(1e-3)`), so
code written against it runs with its import changed. (An optax-style interface is
planned; see the toolkit issue.)"""
from . import optimizers  # noqa: F401
