"""The jit pass: code specialized to its arguments' shapes, dtypes and static values, with elementwise
chains fused into one kernel each (a compiled loop on the CPU, CUDA C on a GPU).

    abstract.py     what a specialization depends on: argument kinds, the cache key
    shapes.py       shape and dtype inference over generated code
    fusion.py       which statements become one kernel
    kernels.py      the kernels' text: CPU loop, numpy fallback, CUDA C
    module.py       the pass: statics, known shapes, fusion, emission (`specialize`)
"""
from .abstract import argument_key, array_module_name, stand_in
from .module import Specialization, specialize

__all__ = ["argument_key", "array_module_name", "stand_in", "Specialization", "specialize"]
