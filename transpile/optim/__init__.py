"""tp.optim: optimizers.

The optax-style gradient transformations (`tp.optim.adam(1e-3)`, `chain`,
`clip_by_global_norm`, schedules, `apply_updates`) are here at the top, from
transforms.py; `tp.optim.optimizers` has the calling conventions of JAX's
`jax.example_libraries.optimizers` (`init_fun, update_fun, get_params = adam(1e-3)`), so
code written against it runs with its import changed."""
from . import optimizers, transforms  # noqa: F401
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms

__all__ = ["optimizers", "transforms"] + list(_transforms)
