"""Which adjoints hold only structural zeros, so that 0 * inf there can be made 0.

    y = np.where(x > 0, np.sqrt(x), 0.0)      dy = rt.expand(dout, y)
    return np.sum(y)                    ->    dsqrt = np.where(x > 0, dy, 0.0)
                                              dx = rt.zero_where_unused(dsqrt, dsqrt * 0.5 / sqrt)

At x = 0 the adjoint of sqrt(x) is 0 (np.where did not take it) and sqrt's partial is
infinite: 0 * inf is nan, while the function does not depend on sqrt(x) there and its
derivative is 0. JAX and autograd give nan (JAX's FAQ teaches a second np.where around the
argument). Making every 0 * inf a 0 would be wrong in general: a zero that comes from a
vanishing partial (`s * s` at s = 0, `sqrt(x) ** 2` at x = 0) is not structural, and the
honest answer there is nan. So each adjoint carries a *flow* while the backward code is
made, `(linear, zeroed)` or None (unknown):

- linear: the adjoint is the output's adjoint passed through rules with constant
  coefficients and selections only, so any zero in it, cancellations included, is
  structural;
- otherwise (a flow with linear False) its zeros are still structural, but only rules that
  do not sum entries may pass it on (a sum of nonlinear terms can cancel to 0);
- zeroed: some of its zeros may be structural ones (made by np.where, a write, indexing,
  max/min, or given: a vjp's cotangent or a Jacobian's basis), which is when the guard is
  worth a pass over the values.

An elementwise rule whose output adjoint has a zeroed flow wraps what it computes in
`rt.zero_where_unused` (one sum when nothing is nan). Each primitive says how zeros pass
through it (`zero_flow` in rules/core.py); primitives that say nothing end the flow.
"""

import gast

from .nodes import call, name

SEED = (True, False)         # grad's seed 1.0: no zeros
COTANGENT = (True, True)     # a cotangent someone gave: its zeros are structural


def join(a, b):
    """The flow of a sum of two contributions (or of a value two branches may leave)."""
    if a is None or b is None or not (a[0] and b[0]):
        return None
    return (True, a[1] or b[1])


def either(a, b):
    """The flow of an adjoint that holds one of two values (branches that join)."""
    if a is None or b is None:
        return None
    return (a[0] and b[0], a[1] or b[1])


def may_be_infinite(prim, param, active_args):
    """Whether the rule of `prim` for `param` multiplies the output's adjoint by a partial
    derivative that may be infinite (0 * inf there is nan): not for rules with constant
    coefficients (+, np.where, a product with a constant), nor for non-elementwise ones,
    whose results do not line up with the output entry by entry."""
    if prim.batch is None or prim.batch.kind != "elementwise":
        return False
    if prim.zero_flow in ("linear", "select", "rearrange"):
        return False
    return not _by_a_constant(prim, param, active_args)


def _by_a_constant(prim, param, active_args):
    """`x1 * c`, `c * x2` or `x1 / c` with `c` not differentiated: the rule for `param`
    scales the adjoint by a constant (its zeros stay structural, nothing is infinite)."""
    other = {"x1": "x2", "x2": "x1"}.get(param)
    return prim.zero_flow == "scale" and other is not None and other not in active_args \
        and (param == "x1" or prim.name == "multiply")


def through(prim, param, dout_flow, active_args):
    """(flow of the adjoint of `param`, whether to guard its rule with rt.zero_where_unused),
    for a rule whose output adjoint has `dout_flow`. `active_args`: which of the call's
    arguments (by template parameter) are differentiated."""
    kind = prim.zero_flow
    if dout_flow is None:
        return None, False
    linear, zeroed = dout_flow
    guard = zeroed and may_be_infinite(prim, param, active_args)
    if kind in ("linear", "rearrange"):
        return dout_flow, False
    if kind == "select":
        return (linear, True), False
    if kind == "scale":
        if _by_a_constant(prim, param, active_args):
            return dout_flow, False
        if param == "x1":                        # over a differentiated x2: never 0
            return (False, zeroed), guard
        return None, guard
    if kind == "nonvanishing":
        return (False, zeroed), guard
    return None, guard


def guarded(expr, cotangent, helper_name="rt.zero_where_unused"):
    """`rt.zero_where_unused(cotangent, expr)` (inside the unbroadcast of
    `rt.unbroadcast(expr, x)`): an elementwise rule's result, 0 where `cotangent` (a template
    placeholder: the output's adjoint, or an argument's tangent) has a structural 0."""
    helper = expr.func.attr if isinstance(expr, gast.Call) and \
        isinstance(expr.func, gast.Attribute) and isinstance(expr.func.value, gast.Name) and \
        expr.func.value.id == "rt" else None
    if helper == "unbroadcast" and len(expr.args) == 2:
        return gast.Call(func=expr.func,
                         args=[guarded(expr.args[0], cotangent, helper_name), expr.args[1]],
                         keywords=[])
    if helper == "no_derivative":
        return expr
    return call(helper_name, [name(cotangent), expr])
