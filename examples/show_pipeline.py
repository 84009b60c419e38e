"""Print one function after every pass of the grad pipeline (the text of docs/pipeline.md).

    python examples/show_pipeline.py

It calls the passes one by one, as `transpile/frontend.py` and `transpile/pipeline.py` do,
so every listing is real output, not a sketch.
"""
import copy

import numpy as np

import transpile as tp
from transpile import aliasing, controlflow, emit, optimize, parse, pipeline
from transpile.anf import Normalizer
from transpile.program import Program


def loss(params, x, y):
    for W, b in params:
        x = np.tanh(x @ W + b)
    err = x - y
    if np.mean(err) > 0.0:          # over-predicting costs double
        return 2.0 * np.sum(err ** 2)
    return np.sum(err ** 2)


def show(title, text):
    print(f"==== {title}\n{text.rstrip()}\n")


def without_optimize(t):
    """Generate `t` with dead-code elimination and simplification switched off."""
    saved = optimize.dce, optimize.simplify
    optimize.dce = lambda stmts, live_out: list(stmts)
    optimize.simplify = lambda stmts: list(stmts)
    try:
        return pipeline.generate(t).text     # not through t.source: keeps the cache clean
    finally:
        optimize.dce, optimize.simplify = saved


def main():
    # 1. parse: the function's source as a gast tree, line numbers kept.
    fdef, src = parse.parse_function(loss)
    show("1. parse", emit.function_source(fdef))

    # 2. normalize (anf.py): one primitive per statement, for-each loops become index loops.
    program = Program()
    name, _ = program.function_name(("show_pipeline", id(loss)), "loss")
    normalizer = Normalizer(program, src, loss.__globals__, {}, name)
    fir = normalizer.run(copy.deepcopy(fdef))
    show("2. normalize", emit.function_source(fir.node, src))

    # 3. controlflow: one return at the end (frontend.normalize_function runs 2 + 3 and the
    #    aliasing check).
    controlflow.transform(fir.node, normalizer.namer)
    aliasing.check(fir)
    show("3. controlflow", emit.function_source(fir.node, src))

    # 4. reverse (+ saves), before optimize.
    show("4. reverse, before optimize", without_optimize(tp.grad(loss)))

    # 5-6. optimize and emit: what tp.grad(loss).source shows.
    show("5-6. optimize + emit = tp.grad(loss).source", tp.grad(loss).source)

    # The same function split for tp.vjp: loss_fwd returns the residuals loss_bwd needs.
    params = [(np.ones((2, 3)), np.zeros(3)), (np.ones((3, 1)), np.zeros(1))]
    _, vjp_fn = tp.vjp(loss, params, np.ones((4, 2)), np.zeros((4, 1)))
    show("vjp: tp.vjp(loss, params, x, y)[1].source", vjp_fn.source)


if __name__ == "__main__":
    main()
