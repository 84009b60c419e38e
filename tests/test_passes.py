"""One pass at a time, on small functions: each test runs the passes before the one it
checks, then that pass alone, and reads the IR it made (as text). A failure here names the
pass; the end-to-end suites (test_programs, test_forward, test_vmap, ...) check the numbers.
"""
import gast
import numpy as np

import runtime as rt
import pytest

import transpile as tp
from transpile import batching, emit, forward, optimize
from transpile.frontend import aliasing, controlflow
from transpile.frontend.normalize import Normalizer
from transpile.frontend.parse import parse_function
from transpile.ir import anno
from transpile.ir.anno import Anno
from transpile.ir.program import Program
from transpile.ir.templates import bind_call, prim_annotation, substitute
from transpile.reverse import gradients
from transpile import rules


def _front(fn, stop_after="aliasing"):
    """(program, FunctionIR) of `fn` after the front end up to `stop_after`."""
    program = Program()
    fdef, src = parse_function(fn)
    normalizer = Normalizer(program, src, fn.__globals__, {}, fn.__name__)
    fir = normalizer.run(fdef)
    if stop_after in ("controlflow", "aliasing"):
        controlflow.transform(fir.node, normalizer.namer)
    if stop_after == "aliasing":
        aliasing.resolve(fir, program.functions)
    program.functions[fir.name] = fir
    return program, fir


def _lines(node):
    return [line.strip() for line in emit.function_source(node).splitlines() if line.strip()]


def _fresh(fir):
    import copy
    from transpile.ir.program import FunctionIR
    return FunctionIR(fir.name, copy.deepcopy(fir.node), fir.source, list(fir.params),
                      list(fir.freevars))


# ---------------------------------------------------------------- normalize

def layer(x, W, b):
    return np.tanh(x @ W + b)


def test_normalize_makes_one_primitive_per_statement():
    _, fir = _front(layer, "normalize")
    assert _lines(fir.node) == ["def layer(x, W, b):", "matmul = x @ W", "add = matmul + b",
                                "out = np.tanh(add)", "return out"]
    prims = [anno.get(s.value, Anno.PRIM)[1] for s in fir.node.body[:-1]]
    assert prims == ["@", "+", "np.tanh"]


def method_and_augmented(x):
    y = x.sum(0)
    y += 1.0
    return y.T


def test_normalize_desugars_methods_and_augmented_assignment():
    _, fir = _front(method_and_augmented, "normalize")
    assert _lines(fir.node)[1:] == ["y = np.sum(x, 0)", "y = y + 1.0", "out = np.transpose(y)",
                                    "return out"]
    augmented = fir.node.body[1]
    assert anno.get(augmented, Anno.INPLACE) == "+"     # in place on arrays, as written


# ---------------------------------------------------------------- controlflow

def early_exit(xs):
    total = 0.0
    for x in xs:
        if x > 2.0:
            return total
        total = total + x
    return -total


def test_controlflow_leaves_one_return_at_the_end():
    _, before = _front(early_exit, "normalize")
    assert sum(isinstance(n, gast.Return) for n in gast.walk(before.node)) == 2
    _, fir = _front(early_exit, "controlflow")
    returns = [n for n in gast.walk(fir.node) if isinstance(n, gast.Return)]
    assert len(returns) == 1 and fir.node.body[-1] is returns[0]
    assert not any(isinstance(n, (gast.Break, gast.Continue)) for n in gast.walk(fir.node))
    generated = emit.function_source(fir.node)
    namespace = {"np": np, "rt": rt}        # rt.loop_sequence: what the loop over xs walks
    exec(compile(generated, "<test>", "exec"), namespace)   # noqa: S102
    for xs in ([1.0, 0.5, 3.0, 4.0], [1.0, 0.25]):
        assert namespace["early_exit"](xs) == early_exit(xs)


# ---------------------------------------------------------------- aliasing

def write_through_alias(x):
    y = x * 1.0
    z = y
    z[0] = 5.0
    return y + z


def test_aliasing_binds_the_alias_again_after_an_in_place_write():
    _, fir = _front(write_through_alias, "controlflow")
    lines = _lines(fir.node)
    _, resolved = _front(write_through_alias)
    after = _lines(resolved.node)
    assert after != lines
    write = after.index("z[0] = 5.0")
    assert "y = z" in after[write + 1:], after     # y sees the write, as in numpy


def writes_a_parameter_view(x):
    row = x[0]
    row[1] = 0.0
    return np.sum(row)


def test_aliasing_refuses_a_write_the_caller_could_see():
    with pytest.raises(tp.TransformError, match=r"\[aliasing\]"):
        _front(writes_a_parameter_view)


# ---------------------------------------------------------------- reverse

def test_reverse_applies_the_rule_template_with_the_call_sites_names():
    program, fir = _front(layer)
    node = gradients.grad_function(program, _fresh(fir), "grad_layer", [0], False, False,
                                   split_callee=None)
    lines = _lines(node)
    assert "dadd = dout * (1.0 - out * out)" in lines, lines
    assert any(line.startswith("dx = rt.matmul_adj_x1(dmatmul, W, x)") for line in lines)
    assert lines[-1] == "return rt.as_grad(dx, x)"


# ---------------------------------------------------------------- forward

def test_forward_emits_one_tangent_statement_after_each_primal_one():
    program, fir = _front(layer)
    node = forward.jvp_function(program, _fresh(fir), "layer_jvp", ["x"], callee_jvp=None)
    lines = _lines(node)
    assert lines[1:3] == ["matmul = x @ W", "matmul_dot = x_dot @ W"], lines
    assert lines[-1] == "return out, out_dot"
    assert not any("W_dot" in line or "b_dot" in line for line in lines)   # not active


# ---------------------------------------------------------------- batching

def test_batching_moves_a_literal_axis_and_aligns_operands():
    def sums(x, y):
        return np.sum(x * x, axis=1) + y
    program, fir = _front(sums)
    opts = {"in_axes": (0, None), "out_axes": 0, "axis_name": None, "axis_size": None}
    node = batching.vmap_function(program, _fresh(fir), "vmap_sums", 0, 2, opts,
                                  callee_batched=None)
    text = "\n".join(_lines(node))
    assert "np.sum(multiply, axis=2)" in text, text
    assert "rt.align(" in text                 # the batched sum against the unbatched y


def test_batching_template_tests_fold_and_or_not_and_is_none():
    from transpile.batching.templates import NOT_KNOWN as _NOT_KNOWN, static_truth as _static_truth
    def test_of(src):
        return gast.parse(src).body[0].value
    assert _static_truth(test_of("True and not False")) is True
    assert _static_truth(test_of("False or (True and True)")) is True
    assert _static_truth(test_of("None is None and 2 != 3")) is True
    assert _static_truth(test_of("1 is not None and False")) is False
    assert _static_truth(test_of("False and axis > 0")) is False      # short-circuited
    assert _static_truth(test_of("True or axis > 0")) is True
    assert _static_truth(test_of("True and axis > 0")) is _NOT_KNOWN
    assert _static_truth(test_of("axis is None")) is _NOT_KNOWN


def test_batching_template_with_an_undecided_test_names_the_rule():
    from transpile.batching.templates import UndecidedTest as _UndecidedTest, fold_static_ifs as _fold_static_ifs
    body = gast.parse("if a_batched and axis > 0:\n    out = a\nelse:\n    out = b\n").body
    body[0].test.values[0] = gast.Constant(value=True, kind=None)
    with pytest.raises(_UndecidedTest, match="axis > 0"):
        _fold_static_ifs(body)
    body = gast.parse("if a_batched and b is None:\n    out = a\nelse:\n    out = b\n").body
    body[0].test.values[0] = gast.Constant(value=True, kind=None)
    body[0].test.values[1].left = gast.Constant(value=None, kind=None)
    assert _lines_of(_fold_static_ifs(body)) == ["out = a"]


def _lines_of(stmts):
    module = gast.Module(body=stmts, type_ignores=[])
    return [line.strip() for line in gast.unparse(module).splitlines() if line.strip()]


# ---------------------------------------------------------------- optimize

def test_dead_code_elimination_keeps_what_the_result_and_side_effects_need():
    stmts = gast.parse("a = x * 2\nb = a + 1\nunused = np.exp(a)\nprint(b)\nc = b * 3\n").body
    for n in gast.walk(gast.Module(body=stmts, type_ignores=[])):
        found = prim_annotation(n)
        if found is not None:
            anno.set(n, Anno.PRIM, found)
    kept = _lines_of(optimize.dce(stmts, {"c"}))
    assert kept == ["a = x * 2", "b = a + 1", "print(b)", "c = b * 3"]


def test_copy_propagation_replaces_a_copy_by_its_source():
    stmts = gast.parse("a = x\nb = a * 2\nreturn b\n").body
    assert _lines_of(optimize.propagate_copies(stmts, params=("x",))) == \
        ["b = x * 2", "return b"]


# ---------------------------------------------------------------- rule templates

def test_bind_call_fills_defaults_and_refuses_unknown_keywords():
    rule = rules.lookup("np.sum").rev
    call = gast.parse("np.sum(h, axis=1)").body[0].value
    bound = bind_call(rule, "np.sum", call)
    assert gast.unparse(bound["a"]).strip() == "h"
    assert gast.unparse(bound["axis"]).strip() == "1"
    assert bound["keepdims"].value is False
    bad = gast.parse("np.sum(h, where=m)").body[0].value
    assert "where" in bind_call(rule, "np.sum", bad)


def test_substitute_renames_placeholders_and_annotates_primitives():
    rule = rules.lookup("np.tanh").rev
    mapping = {"dout": gast.Name(id="dh", ctx=gast.Load(), annotation=None,
                                 type_comment=None),
               "out": gast.Name(id="h", ctx=gast.Load(), annotation=None, type_comment=None)}
    new = [substitute(st, mapping, {"dx": "dz"}, {}) for st in rule.body]
    assert _lines_of(new) == ["dz = dh * (1.0 - h * h)"]
    products = [n for n in gast.walk(new[0]) if isinstance(n, gast.BinOp)]
    assert all(anno.get(n, Anno.PRIM) is not None for n in products)
