"""tp.flatten_util.ravel_pytree: a pytree as one flat vector, as JAX's
jax.flatten_util.ravel_pytree and autograd's autograd.misc.flatten.flatten (same order:
lists and tuples left to right, dicts by sorted key; same result: `(flat, unravel)`).

    flat, unravel = ravel_pytree(params)      # plain code: unravel(flat) rebuilds params

In transformed code (an L2 penalty `flat, _ = ravel_pytree(params)` inside a loss under
`tp.grad`, as autograd's neural_net example writes it), ravel_pytree is the plain Python
`_ravel_pytree_1` below, which transformations read like any code, so the flat vector has
its derivatives. Its `unravel` there is a marker, not a function: transformed code cannot
make and return functions, and one made from a batched tree would rebuild the wrong shapes.
"""
import numpy as np

from .tree_util import tree_flatten, tree_leaves, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(tree):
    """(flat, unravel): the leaves of `tree` raveled and concatenated into one 1-d array, and
    the function that splits such a vector back into a tree of the same structure, shapes
    and dtypes."""
    leaves, treedef = tree_flatten(tree)
    leaves = [np.asarray(leaf) for leaf in leaves]
    shapes = [leaf.shape for leaf in leaves]
    dtypes = [leaf.dtype for leaf in leaves]
    sizes = [leaf.size for leaf in leaves]
    if leaves:
        flat = np.concatenate([np.ravel(leaf) for leaf in leaves])
    else:
        flat = np.zeros(0)

    def unravel(vector):
        vector = np.asarray(vector)
        if vector.shape != flat.shape:
            raise ValueError(f"unravel takes a vector of shape {flat.shape} (the raveled "
                             f"tree), got {vector.shape}")
        parts = np.split(vector, np.cumsum(sizes)[:-1]) if leaves else []
        # astype copies: the leaves own their memory (not views of `vector`), and
        # transformed code (flatten_func's flat function) reads it like any numpy call
        return tree_unflatten(treedef, [part.reshape(shape).astype(dtype)
                                        for part, shape, dtype in zip(parts, shapes, dtypes)])

    return flat, unravel


class UnravelFromTransformedCode:
    """What ravel_pytree gives as `unravel` in transformed code: a marker, not a function
    (transformed code can hold only data), whose repr says why."""

    def __repr__(self):
        return ("<the unravel of a ravel_pytree called in transformed code: not a function; "
                "call tp.flatten_util.ravel_pytree(tree) outside the transformed function "
                "to get one>")


_UNRAVEL_FROM_TRANSFORMED_CODE = UnravelFromTransformedCode()


def _ravel_pytree_1(tree):
    leaves = tree_leaves(tree)
    flat = np.concatenate([np.ravel(leaf) for leaf in leaves])
    return flat, _UNRAVEL_FROM_TRANSFORMED_CODE


ravel_pytree.__transpile_variant__ = \
    lambda n_positional, keywords: _ravel_pytree_1 if n_positional == 1 and not keywords \
    else None
