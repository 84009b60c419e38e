"""`tp.tree`: JAX's short names for tp.tree_util's functions (`jax.tree.map` is
`jax.tree_util.tree_map`); each is the tree_util function itself, in plain and in
transformed code."""
from .tree_util import (tree_all as all, tree_flatten as flatten,  # noqa: A004
                        tree_flatten_with_path as flatten_with_path, tree_leaves as leaves,
                        tree_leaves_with_path as leaves_with_path, tree_map as map,
                        tree_map_with_path as map_with_path, tree_reduce as reduce,
                        tree_structure as structure, tree_transpose as transpose,
                        tree_unflatten as unflatten)

__all__ = ["all", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
           "map_with_path", "reduce", "structure", "transpose", "unflatten"]
