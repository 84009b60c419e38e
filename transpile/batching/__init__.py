"""vmap: an IR function -> the same function on a batch of examples.

    dot = np.dot(W, input_vec)          dot = rt.batched_dot(W, input_vec, False, True)
    add = dot + b                 ->    add = rt.align(dot, b) + b
    cond = x > 0                        cond = x > 0
    if cond: result = x * x             result_then = x * x ... result = 0.1 * x
    else: result = 0.1 * x              result = rt.select(cond, result_then, result)

Every batched value carries the batch on axis 0. A flow-insensitive analysis gives each
name a *spec*: False (the same for every example), True (every leaf batched) or a tuple of
specs (a tuple or list whose elements differ). A name assigned under a batched condition is
batched. Where an unbatched value flows into a batched name it is broadcast
(`rt.broadcast_batch`). Each primitive's batching rule lives next to its derivative rules.

    functions.py   the definitions vmap makes: entry function, batched variants of callees
    statements.py  the pass over one function: analysis and statements (`Batching`)
    calls.py       a call: the primitive's rule from the table, or a callee's variant
    control.py     if/for/while on batched conditions
    templates.py   a rule template's `if`s decided when the code is generated
    specs.py       specs: how a value is batched
"""
from .functions import batched_function, vmap_function
from .specs import join, settled, widened_join

__all__ = ["batched_function", "join", "settled", "vmap_function", "widened_join"]
