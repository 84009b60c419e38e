"""Reverse mode (grad, vjp), in two modules.

    adjoints.py   statement level: an IR function -> forward statements and backward
                  (adjoint) statements, from each primitive's `@rev` rule
    gradients.py  function level: which primal values must be saved, pushes and pops,
                  dead code, and the definitions `grad_f` or the pair `f_fwd`/`f_bwd`
"""
