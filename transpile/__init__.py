"""transpile: composable function transformations for plain Python + NumPy, by rewriting source.

    import transpile as tp
    g = tp.grad(loss)        # a new Python function; print(g.source) shows it
"""
from . import rules  # noqa: F401  (importing it registers the primitive table)
from .api import (Jitted, Transformed, elementwise_grad, grad, jit, jvp, linear_transpose,
                  linearize, transform, value_and_grad, vjp, vmap)
from .custom import checkpoint, custom_jvp, custom_vjp, remat
from .errors import TransformError
from .jacobians import hessian, hessian_vector_product, jacfwd, jacobian, jacrev
from . import debug, distributed, flatten_util, integrate, lax, misc, nn, optim, signal, tree, tree_util
from . import numpy_functions  # noqa: F401  (np.vectorize, np.piecewise in transformed code)
from . import numpy_written  # noqa: F401  (np.insert, np.histogram, ... in transformed code)
from . import scipy_written  # noqa: F401  (scipy.fft, scipy.linalg.cholesky in transformed code)
from .profile import profile
from . import profiler
from .tree_util import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from .lax import cond, fori_loop, scan, select, stop_gradient, switch, while_loop
from runtime.collectives import (all_gather, all_to_all, axis_index, pmax, pmean, pmin,
                                 ppermute, psum, psum_scatter)
from runtime.kernels import block_until_ready, device_put
from runtime.spmd import ShardedArray
from .pmap import (device_count, devices, local_device_count, local_devices, pmap,
                   process_count, process_index)
from runtime import random
import sys as _sys
_sys.modules[__name__ + ".random"] = random   # `import transpile.random` (JAX's spelling)

__all__ = ["debug", "distributed", "flatten_util", "misc", "integrate", "signal", "profile", "profiler", "random", "lax", "nn", "optim", "tree", "tree_util", "tree_flatten", "tree_leaves", "tree_map", "tree_structure", "tree_unflatten", "cond", "fori_loop", "scan", "select", "stop_gradient", "switch", "while_loop", "Jitted", "block_until_ready", "device_put", "devices", "device_count", "local_devices", "local_device_count", "process_index", "process_count", "pmap", "ShardedArray", "jit", "all_gather", "all_to_all", "axis_index", "pmax", "pmean", "pmin", "ppermute", "psum", "psum_scatter", "TransformError", "Transformed", "checkpoint", "remat", "custom_jvp", "custom_vjp", "elementwise_grad", "grad", "hessian", "hessian_vector_product", "jacfwd", "jacobian", "jacrev", "jvp", "transform", "value_and_grad", "vjp", "vmap"]
__version__ = "0.1.0"
