"""The jit pass: code specialized to its arguments' shapes, dtypes and static values, with
elementwise chains fused into one kernel each (a compiled loop on the CPU, CUDA C on a GPU).

    module.py       the pass, top-down (`specialize`): each step below, in order, on the
                    entry function and the helpers it calls; then emission
    abstract.py     what a specialization depends on: argument kinds, the cache key and
                    the guard that checks a call's arguments without building it
    constants.py    static arguments, literals, known lengths, short loops unrolled
    shapes.py       shape and dtype inference over generated code
    helpers.py      runtime helpers that known shapes decide, done when generating
    fusion.py       which statements become one kernel
    kernels.py      the kernels' text: CPU loop, numpy fallback, CUDA C
"""
from .abstract import argument_guard, argument_key, array_module_name, stand_in
from .module import Specialization, specialize

__all__ = ["argument_guard", "argument_key", "array_module_name", "stand_in", "Specialization", "specialize"]
