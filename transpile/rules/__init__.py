"""The primitive table. Importing this package registers every rule."""
from . import core, elementwise, indexing, linalg, reductions, runtime_helpers, shape
from . import batching_helpers, collectives, nn, random, special
from . import fft, scipy_linalg, signal, stats
from .core import Primitive, all_primitives, lookup, lookup_object, lookup_subscript, no_rule_error
