"""tp.lax: JAX's structured control flow, as the Python it stands for.

    tp.lax.fori_loop(0, n, body, x)      the loop `for i in range(0, n): x = body(i, x)`
    tp.lax.scan(step, carry, xs)         a loop over xs' leading axis, outputs stacked

Code written for JAX runs with its import changed. Each function here is plain Python that
transformations read like the user's own code: a call with functions among its arguments is
normalized as a copy specialized to those functions (transpile/frontend/calls.py), so
`grad`, `vmap`, `jit` and the rest see an ordinary loop or `if`. Unlike JAX, nothing here
needs fixed shapes or a traced predicate: `while_loop` can stop on a value, and `cond`
takes a Python bool. Under vmap a predicate that differs between examples runs both
branches and selects per example, as JAX's does.

`cond` takes any number of operands; in transformed code it is one of the fixed-arity
versions below (up to four operands), chosen by `__transpile_variant__`; so is `switch`
(up to three operands), whose list of branches must be known while transforming.
"""
import numpy as np

import runtime as rt
from .custom import file_backed

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "select",
           "stop_gradient", "dynamic_slice_in_dim", "dynamic_index_in_dim"]


def fori_loop(lower, upper, body_fun, init_val, unroll=None):
    """`val = body_fun(i, val)` for i in range(lower, upper); returns val."""
    val = init_val
    for i in range(lower, upper):
        val = body_fun(i, val)
    return val


def while_loop(cond_fun, body_fun, init_val):
    """`val = body_fun(val)` while cond_fun(val); returns val."""
    val = init_val
    while cond_fun(val):
        val = body_fun(val)
    return val


def cond(pred, true_fun, false_fun, *operands, operand=None):
    """true_fun(*operands) if pred else false_fun(*operands)."""
    if operand is not None:                  # JAX's old single-operand keyword
        operands = operands + (operand,)
    if pred:
        return true_fun(*operands)
    return false_fun(*operands)


def _cond_0(pred, true_fun, false_fun):
    if pred:
        out = true_fun()
    else:
        out = false_fun()
    return out


def _cond_1(pred, true_fun, false_fun, a):
    if pred:
        out = true_fun(a)
    else:
        out = false_fun(a)
    return out


def _cond_2(pred, true_fun, false_fun, a, b):
    if pred:
        out = true_fun(a, b)
    else:
        out = false_fun(a, b)
    return out


def _cond_3(pred, true_fun, false_fun, a, b, c):
    if pred:
        out = true_fun(a, b, c)
    else:
        out = false_fun(a, b, c)
    return out


def _cond_4(pred, true_fun, false_fun, a, b, c, d):
    if pred:
        out = true_fun(a, b, c, d)
    else:
        out = false_fun(a, b, c, d)
    return out


_COND = (_cond_0, _cond_1, _cond_2, _cond_3, _cond_4)


def _cond_variant(n_positional, keywords):
    n = n_positional - 3 + (1 if "operand" in keywords else 0)
    if set(keywords) - {"operand"} or not 0 <= n < len(_COND):
        return None
    return _COND[n]


cond.__transpile_variant__ = _cond_variant


def switch(index, branches, *operands):
    """`branches[clip(index, 0, len(branches) - 1)](*operands)`."""
    index = int(np.clip(index, 0, len(branches) - 1))
    return branches[index](*operands)


# In transformed code, `switch(i, [f, g, h], x)` is a call of `switch_3_1(i, f, g, h, x)`:
# an if/elif chain over the branches, each example of a vmap taking its own. The branches
# are spread into arguments (calls.py, __transpile_spread__) so that each is a function
# known while transforming, as cond's are.
_SWITCHES = {}


def _switch_of(n_branches, n_operands):
    """The if/elif chain of `n_branches` branches taking `n_operands` operands."""
    key = (n_branches, n_operands)
    if key not in _SWITCHES:
        branches = [f"branch_{k}" for k in range(n_branches)]
        operands = [f"operand_{k}" for k in range(n_operands)]
        call = ", ".join(operands)
        lines = [f"def switch_{n_branches}_{n_operands}({', '.join(['index'] + branches + operands)}):",
                 f"    i = np.clip(index, 0, {n_branches - 1})"]
        for k, b in enumerate(branches):
            if k == n_branches - 1:
                lines.append("    else:" if n_branches > 1 else "    if True:")
            else:
                lines.append(f"    {'if' if k == 0 else 'elif'} i == {k}:")
            lines.append(f"        out = {b}({call})")
        lines.append("    return out")
        name = f"switch_{n_branches}_{n_operands}"
        _SWITCHES[key] = file_backed("\n".join(lines) + "\n", {"np": np}, name)
    return _SWITCHES[key]


switch.__transpile_spread__ = (1, _switch_of)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """carry, y = f(carry, x) for each x along xs' leading axis (every leaf of a tuple or
    list of arrays; xs None: `length` steps with x None); returns (carry, the ys stacked)."""
    n = rt.scan_length(xs, length)
    if n == 0:
        # JAX gives the outputs of zero steps in the shape the steps would stack: one step
        # is taken on ones for that shape, its values thrown away
        with np.errstate(all="ignore"):
            _, y = f(init, rt.tree_step_like(xs))
        return init, rt.tree_stack_empty(y)
    carry = init
    ys = []
    for t in range(n):
        if reverse:
            i = n - 1 - t
        else:
            i = t
        carry, y = f(carry, rt.tree_index(xs, i))
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    return carry, rt.tree_stack(ys)


def map(f, xs, batch_size=None):
    """f applied along xs' leading axis, results stacked (a loop, as JAX's lax.map; its
    `batch_size`, which only chooses how JAX computes it, changes nothing here)."""
    n = rt.scan_length(xs, None)
    if n == 0:                  # (as scan's zero steps)
        with np.errstate(all="ignore"):
            y = f(rt.tree_step_like(xs))
        return rt.tree_stack_empty(y)
    ys = []
    for i in range(n):
        ys.append(f(rt.tree_index(xs, i)))
    return rt.tree_stack(ys)


def select(pred, on_true, on_false):
    """on_true where pred, else on_false (elementwise)."""
    return np.where(pred, on_true, on_false)


def stop_gradient(x):
    """x, as a constant of every derivative taken through it."""
    return rt.stop_gradient(x)


# transformed code calls the primitive itself, so that what only it reads (a step size's
# error norm) gets no adjoint code at all: through a call, a zero cotangent still met
# sqrt's infinite slope at 0 and made nan (0 * inf) where the gradient is finite
stop_gradient.__transpile_variant__ = \
    lambda n_positional, keywords: rt.stop_gradient if n_positional == 1 and not keywords \
    else None


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """operand's `slice_size` entries along `axis` from `start_index` (from the end where
    negative), which is clamped so that the slice fits (as JAX clamps it)."""
    n = np.shape(operand)[axis]
    # a negative start counts from the end (JAX's allow_negative_indices), then clamped
    start = np.clip(np.where(start_index < 0, start_index + n, start_index), 0,
                    n - slice_size)
    moved = np.moveaxis(operand, axis, 0)
    # indexed by positions, not sliced: under vmap a start that differs between examples
    # (JAX's main use) picks each example's own rows
    return np.moveaxis(moved[start + np.arange(slice_size)], 0, axis)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """The entry `index` along `axis` (clamped), keeping that axis unless keepdims=False."""
    part = dynamic_slice_in_dim(operand, index, 1, axis)
    if keepdims:
        return part
    return np.squeeze(part, axis=axis)
