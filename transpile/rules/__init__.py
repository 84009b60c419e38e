"""The primitive table. Importing this package registers every rule."""
from . import core, elementwise, indexing, linalg, reductions, runtime_helpers, shape  # noqa: F401
from . import batching_helpers, collectives, special  # noqa: F401
from .core import (Primitive, all_primitives, lookup, lookup_object,  # noqa: F401
                   lookup_subscript, no_rule_error)
