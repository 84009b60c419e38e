"""Random valid Python + NumPy programs, each checked under every transformation.

From the issue "No silent wrong answers": a wrong gradient that nobody notices is the worst
thing transpile can produce, so this file makes finding one routine. It has two halves.

The generator (`generate_program(seed)`) writes the source text of a random program that
uses the constructs the README promises: smooth NumPy primitives with broadcasting,
reductions, `@`, reshape/transpose/concatenate, indexing and slicing; `if`/`elif`/`else`
on data; `for` and `while` loops whose carried values may change shape between trips
(`for W in ws: h = np.tanh(h @ W)`); `break`, `continue`, early `return`; helper calls,
recursion with a depth counter, closures and lambdas; in-place writes into local arrays;
list building; tuple unpacking. One seed in five writes a *collective program*: `f` also
calls tp.psum, pmean, pmax, pmin, ppermute, all_gather, psum_scatter, all_to_all and
axis_index over the mapped axis "i" (in statements every example runs, in `f` or in a
helper it calls), so it has values
only under vmap or pmap; its reference runs the untransformed source of every example at
once, each in a thread bound to its rank (CollectiveReference), and its derivatives are
finite differences of the examples' values summed. Every program is a function `f` (plus helpers) in a real
`.py` file, with its inputs drawn from `np.random.default_rng`; everything follows from one
integer seed. A program is kept only if plain Python runs it to a finite, moderate value
with every branch condition and every `np.max` well away from its kink at the inputs, so
that central finite differences are valid there.

The harness (`check_program`) runs each program under each transformation (`CHECKS`) and
classifies the outcome:
    OK       the numbers agree (with plain Python, with finite differences, or with a loop)
    WRONG    a number, shape or structure differs: a silent wrong answer, the worst kind
    CRASH    any exception other than tp.TransformError (including a time-out)
    REFUSED  tp.TransformError; recorded with its message (the generator only writes
             supported programs, so a refusal is worth reading, above all when plain
             `grad` accepted the program and a composition refused it)
    SKIP     not applicable, a finite-difference step crossed a kink, or a check this one
             builds on failed
A failure is shrunk (`shrink`) while the same transformation keeps failing the same way,
and printed as a standalone program to paste (`repro_text`).

    python tests/program_generator.py --count 5000 --seed 0 --jobs 2   # table + shrunk repros
    python tests/program_generator.py --seed 12 --show        # one program and its outcomes

tests/test_random_programs.py runs a fixed budget of seeds under pytest.
"""
import argparse
import ast
import atexit
import copy
import dataclasses
import functools
import importlib.util
import itertools
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections import Counter, defaultdict
from contextlib import contextmanager

import numpy as np

import transpile as tp
import transpile.specialize.module as specialize_module
from transpile.custom import file_backed
from runtime import spmd
from runtime.kernels import CpuKernel, ScalarLoop

# =====================================================================================
# 1. The generator
# =====================================================================================

# Constants the programs use. Thresholds of conditions are a few fixed values; the inputs
# are redrawn until every condition is far enough from its threshold (`MIN_MARGIN`).
SCALE_CONSTANTS = ("0.3", "0.5", "0.7", "0.9", "1.2", "-0.4", "-0.8")
THRESHOLDS = ("-0.6", "-0.2", "0.1", "0.3", "0.7", "1.0")
MAX_STATEMENTS = 10           # per function body, nested statements included
MAX_HELPERS = 3
ARGUMENT_NAMES = ("x", "ws", "y")
RESULT_OF_CALL = frozenset(["<call result>"])   # see FunctionBody.bind


@dataclasses.dataclass
class Var:
    """A float variable of a known shape (() for scalars) in the function being written."""
    name: str
    shape: tuple
    # A local array that no other name, list or closure refers to. Only those are written
    # in place (`v[i] = ...`, `v += ...`): a write into an alias would be seen elsewhere.
    writable: bool = False
    # Bound to a value that shares no other name's memory. `v += e` on a number bound to
    # `x[1]` is refused (x[1] is a view where x has two axes), so it is written only here.
    alias_free: bool = True


@dataclasses.dataclass
class Expr:
    """Generated expression text, and the variables whose memory its value may share."""
    text: str
    aliases: frozenset = frozenset()   # non-empty for a bare name, slice, view
    atomic: bool = True                # needs no parentheses as an operand

    def operand(self):
        return self.text if self.atomic else f"({self.text})"


@dataclasses.dataclass
class Scope:
    """What the code at the current point may use, and where that point is."""
    vars: dict                 # name -> Var
    # name of an int -> exclusive bound, for a for-loop index; None for a while loop's
    # counter, which is never an index: its value differs between the examples of a vmap
    # batch, and vmap refuses such an index after a slice (`m[:, k]`, a documented limit)
    ints: dict
    lists: dict                # name of a list argument -> ("mats" | "pairs", shapes)
    closures: dict             # name -> (parameter shapes, return shape)
    return_shape: tuple        # what `return` in this function must give
    in_loop: bool = False
    nesting: int = 0           # depth of if/for/while blocks
    top_level_of_entry: bool = False
    # Code here may run for some examples of a vmap batch and not others: inside an if or
    # a while on data, in a loop that breaks on data, or after an early return on data.
    # vmap refuses a list append there (a documented limit), so none is written there.
    conditional: bool = False
    returned: bool = False     # an early return was written in this block
    # A collective program's entry function: statements every example runs (not under a
    # branch or a loop on data) may call collectives over the mapped axis "i".
    collectives: bool = False

    def copy(self):
        return Scope({name: dataclasses.replace(var) for name, var in self.vars.items()},
                     dict(self.ints), dict(self.lists), dict(self.closures),
                     self.return_shape, self.in_loop, self.nesting, False, self.conditional,
                     collectives=self.collectives)

    def nested(self, loop=False, conditional=False):
        inner = self.copy()
        inner.nesting += 1
        inner.in_loop = self.in_loop or loop
        inner.conditional = self.conditional or conditional
        return inner


@dataclasses.dataclass
class Program:
    """A generated program: its source, its entry function's arguments and their values."""
    seed: int
    source: str
    arg_names: tuple
    args: tuple                # values of the arguments, in order
    batch: tuple               # a batch of 3 values for each argument vmap maps over
    in_axes: tuple             # 0 for the mapped arguments, None for the others
    features: frozenset        # construct tags, for the coverage table
    attempt: int = 0           # how many drawn programs were rejected before this one
    # f calls collectives over the mapped axis "i": it has values only under vmap or
    # pmap, and `args` is the batch's first example (see CollectiveReference)
    collective: bool = False


def indent(lines):
    return ["    " + line for line in lines]


def shape_text(shape):
    return f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(map(str, shape))})"


class ProgramWriter:
    """Writes one random program: the entry function `f` and the helpers it calls."""

    def __init__(self, rng, scalars=False, collectives=False):
        self.rng = rng
        # every value a number (jit compiles such loops whole: specialize/scalar_loops.py)
        self.scalars = scalars
        self.collectives = collectives
        self.helpers = []            # source blocks of module-level helper functions
        self.module_constants = []   # `K1 = 0.7` lines: globals the functions read
        self.helper_signatures = []  # (name, parameter shapes, return shape, has default)
        self.counters = Counter()
        self.features = set()
        self.statements_left = MAX_STATEMENTS
        # Two or three sizes shared by the whole program, so that shapes meet often
        # enough for @, broadcasting and concatenation to have partners.
        self.dims = sorted(set(int(d) for d in rng.choice([2, 3, 4], size=3)))

    # ---- random helpers -------------------------------------------------------------
    def chance(self, p):
        return self.rng.random() < p

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def weighted(self, options):
        """One value from (weight, value) pairs."""
        weights = np.array([w for w, _ in options], dtype=float)
        return options[int(self.rng.choice(len(options), p=weights / weights.sum()))][1]

    def fresh_name(self, prefix):
        self.counters[prefix] += 1
        return f"{prefix}{self.counters[prefix]}"

    def var_name(self, shape):
        return self.fresh_name({0: "s", 1: "u", 2: "m"}[len(shape)])

    def dim(self):
        return self.choice(self.dims)

    # ---- shapes ------------------------------------------------------------------------
    def pick_shape(self, scope):
        """A shape for a new value: mostly one already in play, so leaves can be found."""
        options = [(2.0, ())]
        if self.scalars:
            return ()
        for var in scope.vars.values():
            options.append((1.0, var.shape))
        options.append((0.5, (self.dim(),)))
        return self.weighted(options)

    # ---- expressions -------------------------------------------------------------------
    def expr(self, scope, shape, depth):
        """An expression of exactly `shape` built from what `scope` holds."""
        if depth <= 0 or self.chance(0.25):
            return self.leaf(scope, shape)
        productions = [
            (3.0, self.unary_expr), (3.0, self.binary_expr), (1.0, self.reduction_expr),
            (1.5, self.matmul_expr), (0.5, self.shape_op_expr), (0.4, self.concat_expr),
            (0.6, self.call_expr), (0.2, self.conditional_expr), (0.3, self.where_expr),
        ]
        if self.scalars:          # no production that makes an array on the way
            productions = [p for p in productions if p[1] in (
                self.unary_expr, self.binary_expr, self.conditional_expr, self.where_expr)]
        while productions:
            production = self.weighted(productions)
            productions = [p for p in productions if p[1] != production]
            result = production(scope, shape, depth)
            if result is not None:
                return result
        return self.leaf(scope, shape)

    def bounded(self, scope, shape, depth):
        """An expression whose values stay in [-1, 1]: what a loop may carry from trip
        to trip without growing."""
        inner = self.expr(scope, shape, depth)
        fn = self.choice(("np.tanh", "np.sin", "np.cos"))
        return Expr(f"{fn}({inner.text})")

    def leaf(self, scope, shape):
        sources = self.sources(scope, shape)
        if sources:
            return self.weighted(sources)
        return self.spread(scope, shape)

    def spread(self, scope, shape):
        """A value of `shape` when no variable has it: a scalar summary of some variable
        times a constant pattern, so that the value still depends on the inputs."""
        if not scope.vars or shape == ():
            return self.constant(shape)
        var = self.choice(list(scope.vars.values()))
        summary = var.name if var.shape == () else f"np.{self.choice(('sum', 'mean'))}({var.name})"
        return Expr(f"{summary} * {self.constant(shape).text}", atomic=False)

    def mentions_data(self, text, scope):
        """Does `text` read a float variable (so that its value depends on the inputs)?"""
        return any(re.search(rf"\b{name}\b", text) for name in scope.vars)

    def data_expr(self, scope, shape, depth, tries=6):
        """Like `expr`, but retried until it reads some variable."""
        for _ in range(tries):
            result = self.expr(scope, shape, depth)
            if self.mentions_data(result.text, scope):
                return result
        return result

    def constant(self, shape):
        if shape == ():
            value = self.choice(SCALE_CONSTANTS)
            return Expr(value, atomic=not value.startswith("-"))
        size = int(np.prod(shape))
        text = f"np.linspace(-0.6, 0.8, {size})"
        if len(shape) == 2:
            text += f".reshape{shape_text(shape)}"
        return Expr(text)

    def module_constant(self, shape):
        """The name of a new module-level constant of `shape` (a global the code reads)."""
        name = f"K{len(self.module_constants) + 1}"
        self.module_constants.append(f"{name} = {self.constant(shape).text}")
        return name

    def sources(self, scope, shape):
        """(weight, Expr) for every way to get `shape` from one variable in one step."""
        out = []
        vars_ = list(scope.vars.values())
        for var in vars_:
            name, vshape = var.name, var.shape
            view = frozenset([name])
            if vshape == shape:
                out.append((6.0, Expr(name, view)))
            if len(vshape) == 2 and vshape[::-1] == shape and vshape != shape:
                out.append((1.0, Expr(self.choice((f"{name}.T", f"np.transpose({name})")), view)))
            if len(vshape) >= 1 and len(shape) >= 1 and vshape != shape \
                    and int(np.prod(vshape)) == int(np.prod(shape)):
                form = self.choice((f"{name}.reshape{shape_text(shape)}",
                                    f"np.reshape({name}, {shape_text(shape)})"))
                out.append((0.7, Expr(form, view)))
            # indexing: a row, a column, an element, with a constant or a loop index
            if len(vshape) == 2 and shape == vshape[1:]:
                out.append((1.0, Expr(f"{name}[{self.index(scope, vshape[0])}]", view)))
            if len(vshape) == 2 and shape == (vshape[0],):
                out.append((0.7, Expr(f"{name}[:, {self.index(scope, vshape[1])}]", view)))
            if len(vshape) == 1 and shape == ():
                out.append((1.0, Expr(f"{name}[{self.index(scope, vshape[0], negative=True)}]")))
            if len(vshape) == 2 and shape == ():
                out.append((0.5, Expr(f"{name}[{self.index(scope, vshape[0])}, "
                                      f"{self.index(scope, vshape[1])}]")))
            # slices
            if len(vshape) == 1 and len(shape) == 1 and shape[0] < vshape[0]:
                start = int(self.rng.integers(vshape[0] - shape[0] + 1))
                text = (f"{name}[{start}:{start + shape[0]}]" if self.chance(0.7) else
                        f"{name}[{start - vshape[0]}:]" if start + shape[0] == vshape[0] and start else
                        f"{name}[:{shape[0]}]" if start == 0 else f"{name}[{start}:{start + shape[0]}]")
                out.append((1.0, Expr(text, view)))
            if len(vshape) == 2 and len(shape) == 2 and shape[1] == vshape[1] and shape[0] < vshape[0]:
                start = int(self.rng.integers(vshape[0] - shape[0] + 1))
                out.append((0.7, Expr(f"{name}[{start}:{start + shape[0]}]", view)))
            if len(vshape) == 2 and len(shape) == 2 and shape[0] == vshape[0] and shape[1] < vshape[1]:
                start = int(self.rng.integers(vshape[1] - shape[1] + 1))
                out.append((0.7, Expr(f"{name}[:, {start}:{start + shape[1]}]", view)))
            # reductions (they make new arrays)
            if shape == () and vshape != ():
                fn = self.choice(("np.sum", "np.mean", "np.max", "np.sum", "np.mean"))
                text = f"{fn}({name})" if self.chance(0.8) else f"{name}.{self.choice(('sum', 'mean'))}()"
                out.append((1.5, Expr(text)))
            if len(vshape) == 2 and len(shape) == 1:
                for axis in (0, 1):
                    if vshape[1 - axis] == shape[0]:
                        fn = self.choice(("np.sum", "np.mean", "np.max"))
                        out.append((0.7, Expr(f"{fn}({name}, axis={axis})")))
        # products of two variables
        for a, b in itertools.product(vars_, vars_):
            if len(a.shape) == 2 and len(b.shape) >= 1 and a.shape[1] == b.shape[0]:
                result = (a.shape[0],) + b.shape[1:]
                if result == shape:
                    text = f"{a.name} @ {b.name}" if self.chance(0.6) else f"np.dot({a.name}, {b.name})"
                    out.append((1.0, Expr(text, atomic=text.startswith("np."))))
            if len(a.shape) == 1 and len(b.shape) == 2 and a.shape[0] == b.shape[0] \
                    and shape == b.shape[1:]:
                out.append((1.0, Expr(f"{a.name} @ {b.name}", atomic=False)))
            if len(a.shape) == 1 and a.shape == b.shape and shape == () and a.name != b.name:
                out.append((0.5, Expr(f"np.dot({a.name}, {b.name})")))
            if len(a.shape) == 1 and len(b.shape) == 1 and len(shape) == 1 \
                    and a.shape[0] + b.shape[0] == shape[0]:
                out.append((0.5, Expr(f"np.concatenate([{a.name}, {b.name}])")))
        # loop indices and counters, as floats
        if shape == ():
            for name in scope.ints:
                out.append((0.5, Expr(f"0.1 * {name}", atomic=False)))
            out.append((0.6, self.constant(())))
        return out

    def index(self, scope, length, negative=False):
        """An index into an axis of `length`: a loop index that fits, or a constant."""
        usable = [name for name, bound in scope.ints.items() if bound is not None and bound <= length]
        if usable and self.chance(0.6):
            return self.choice(usable)
        if negative and self.chance(0.3):
            return str(-int(self.rng.integers(1, length + 1)))
        return str(int(self.rng.integers(length)))

    def unary_expr(self, scope, shape, depth):
        """A smooth elementwise function, its argument kept in its smooth domain (log and
        sqrt of values >= 0.5, exp of values in [-1, 1])."""
        inner = self.expr(scope, shape, depth - 1)
        t = inner.text
        form = self.weighted([
            (3, f"np.tanh({t})"), (2, f"np.sin({t})"), (1, f"np.cos({t})"),
            (1.5, f"np.exp(np.tanh({t}))"), (1, f"np.exp(0.5 * np.sin({t}))"),
            (1, f"np.log(1.0 + np.square({t}))"), (1, f"np.log(1.5 + np.tanh({t}))"),
            (1, f"np.sqrt(1.0 + np.square({t}))"), (1, f"np.sqrt(2.0 + np.sin({t}))"),
            (1, f"np.square({t})"), (1, f"{inner.operand()} ** 2"), (1, f"-{inner.operand()}"),
        ])
        return Expr(form, atomic=form.startswith("np."))

    def binary_expr(self, scope, shape, depth):
        """`a op b` with broadcasting; a denominator is kept >= 0.5 away from zero."""
        left = self.expr(scope, shape, depth - 1)
        # the other operand broadcasts against `shape`
        partner_shapes = [shape, ()]
        if len(shape) == 2:
            partner_shapes.append(shape[1:])
        right_shape = self.choice(partner_shapes)
        if len(shape) == 2 and self.chance(0.15):
            column = self.expr(scope, (shape[0],), depth - 1)
            right = Expr(f"{column.operand()}[:, None]")
        else:
            right = self.expr(scope, right_shape, depth - 1)
        op = self.weighted([(3, "+"), (2, "-"), (3, "*"), (1.2, "/")])
        if op == "/":
            denominator = self.choice((f"(1.5 + np.tanh({right.text}))",
                                       f"(1.0 + np.square({right.text}))",
                                       f"(2.0 + np.sin({right.text}))"))
            return Expr(f"{left.operand()} / {denominator}", atomic=False)
        if self.chance(0.4) and op != "-":
            left, right = right, left
        if self.chance(0.2) and shape == ():
            # a scalar times a constant, so products do not only square magnitudes
            return Expr(f"{self.choice(SCALE_CONSTANTS[:5])} * {left.operand()}", atomic=False)
        return Expr(f"{left.operand()} {op} {right.operand()}", atomic=False)

    def reduction_expr(self, scope, shape, depth):
        """np.sum / np.mean / np.max of a bigger value, over all axes or one."""
        if len(shape) >= 2:
            return None
        if shape == ():
            bigger = self.choice([(self.dim(),), (self.dim(), self.dim())]
                                 + [v.shape for v in scope.vars.values() if v.shape])
            fn = self.choice(("np.sum", "np.mean", "np.max"))
            return Expr(f"{fn}({self.expr(scope, bigger, depth - 1).text})")
        axis = int(self.rng.integers(2))
        bigger = (self.dim(), shape[0]) if axis == 0 else (shape[0], self.dim())
        fn = self.choice(("np.sum", "np.mean", "np.max"))
        keep = self.chance(0.2)
        inner = self.expr(scope, bigger, depth - 1).text
        if keep:   # keepdims, then drop the kept axis again by indexing
            index = "0" if axis == 0 else ":, 0"
            return Expr(f"{fn}({inner}, axis={axis}, keepdims=True)[{index}]")
        return Expr(f"{fn}({inner}, axis={axis})")

    def matmul_expr(self, scope, shape, depth):
        """`@` or np.dot, with one factor a matrix or vector variable of a fitting shape."""
        k = self.dim()
        if shape == ():
            a = self.expr(scope, (k,), depth - 1)
            b = self.leaf(scope, (k,))
            return Expr(f"np.dot({a.text}, {b.text})")
        if len(shape) == 1:
            matrices = [v for v in scope.vars.values() if len(v.shape) == 2 and shape[0] in v.shape]
            if not matrices:
                return None
            w = self.choice(matrices)
            if w.shape[0] == shape[0] and (w.shape[1] != shape[0] or self.chance(0.5)):
                vec = self.expr(scope, (w.shape[1],), depth - 1)
                return Expr(f"{w.name} @ {vec.operand()}", atomic=False)
            vec = self.expr(scope, (w.shape[0],), depth - 1)
            return Expr(f"{vec.operand()} @ {w.name}", atomic=False)
        a = self.expr(scope, (shape[0], k), depth - 1)
        b = self.leaf(scope, (k, shape[1]))
        return Expr(f"{a.operand()} @ {b.operand()}", atomic=False)

    def shape_op_expr(self, scope, shape, depth):
        """A transpose or reshape of a value of another shape."""
        if len(shape) == 2 and self.chance(0.5):
            inner = self.expr(scope, shape[::-1], depth - 1)
            return Expr(self.choice((f"{inner.operand()}.T", f"np.transpose({inner.text})")),
                        inner.aliases)   # a view of a bare variable aliases it
        if len(shape) >= 1:
            size = int(np.prod(shape))
            others = [s for s in [(size,)] + [(a, size // a) for a in range(2, size) if size % a == 0]
                      if s != shape]
            if not others:
                return None
            inner = self.expr(scope, self.choice(others), depth - 1)
            return Expr(f"np.reshape({inner.text}, {shape_text(shape)})", inner.aliases)
        return None

    def concat_expr(self, scope, shape, depth):
        """np.concatenate of two shorter vectors."""
        if len(shape) != 1 or shape[0] < 2:
            return None
        first = int(self.rng.integers(1, shape[0]))
        a = self.expr(scope, (first,), depth - 1)
        b = self.expr(scope, (shape[0] - first,), depth - 1)
        return Expr(f"np.concatenate([{a.text}, {b.text}])")

    def call_expr(self, scope, shape, depth):
        """A call of a closure in scope, or of a (new or existing) helper function. A
        function may return its argument itself, so the result counts as an alias (of
        nothing nameable: it is just never written in place)."""
        closures = [(n, sig) for n, sig in scope.closures.items() if sig[1] == shape]
        if closures and self.chance(0.6):
            name, (param_shapes, _) = self.choice(closures)
            args = [self.expr(scope, s, depth - 1).text for s in param_shapes]
            return Expr(f"{name}({', '.join(args)})", RESULT_OF_CALL)
        helper = self.helper_for(scope, shape)
        if helper is None:
            return None
        name, param_shapes, optional = helper
        args = [self.expr(scope, s, depth - 1).text for s in param_shapes]
        if optional and self.chance(0.5):
            args.append(self.choice(SCALE_CONSTANTS[:5]))
        return Expr(f"{name}({', '.join(args)})", RESULT_OF_CALL)

    def conditional_expr(self, scope, shape, depth):
        a = self.expr(scope, shape, depth - 1)
        b = self.expr(scope, shape, depth - 1)
        self.features.add("conditional expression")
        return Expr(f"{a.operand()} if {self.condition(scope)} else {b.operand()}",
                    a.aliases | b.aliases, atomic=False)

    def where_expr(self, scope, shape, depth):
        """np.where picking, entry by entry, a function that is nan or infinite on the
        entries it does not pick (log or sqrt of t - threshold + 0.5): its derivative there
        is 0 * nan, which the structural-zero guards must make 0 (JAX's double-where
        case). The comparison is instrumented, so entries stay off the threshold."""
        t = self.expr(scope, shape, depth - 1)
        other = self.expr(scope, shape, depth - 1)
        threshold = self.choice(THRESHOLDS)
        shifted = f"{t.operand()} - ({round(float(threshold) - 0.5, 6)!r})"
        picked = self.choice((f"np.log({shifted})", f"np.sqrt({shifted})"))
        self.features.add("np.where over a singular branch")
        return Expr(f"np.where({t.operand()} > {threshold}, {picked}, {other.operand()})",
                    other.aliases)

    def condition(self, scope, allow_int=False):
        """A data-dependent condition, written as a comparison against a threshold."""
        if allow_int and scope.ints and self.chance(0.4):
            name = self.choice(list(scope.ints))
            return self.choice((f"{name} == 1", f"{name} % 2 == 0", f"{name} > 0"))
        value = self.data_expr(scope, (), int(self.rng.integers(1, 3)))
        if value.atomic is False:
            value = Expr(f"np.sum({value.text})")   # keep `a + b > c` readable
        op = self.choice((">", "<"))
        test = f"{value.text} {op} {self.choice(THRESHOLDS)}"
        if self.chance(0.12):
            other = self.data_expr(scope, (), 1)
            test = f"{test} {self.choice(('and', 'or'))} {other.operand()} > {self.choice(THRESHOLDS)}"
            self.features.add("and/or")
        return test

    # ---- helpers (module-level functions) -----------------------------------------------
    def helper_for(self, scope, return_shape):
        """A helper returning `return_shape`: an existing one, or a new one."""
        existing = [h for h in self.helper_signatures if h[2] == return_shape]
        if existing and self.chance(0.5):
            name, params, _, optional = self.choice(existing)
            return name, params, optional
        if len(self.helpers) >= MAX_HELPERS or scope.nesting > 2:
            return None
        param_shapes = [self.pick_shape(scope) for _ in range(int(self.rng.integers(1, 3)))]
        return self.write_helper(param_shapes, return_shape)

    def write_helper(self, param_shapes, return_shape):
        name = self.fresh_name("helper")
        params = list(("a", "b", "c")[:len(param_shapes)])
        optional = self.chance(0.25)
        scope = Scope({p: Var(p, s) for p, s in zip(params, param_shapes)}, {}, {}, {},
                      return_shape, nesting=1)
        saved_left = self.statements_left
        self.statements_left = int(self.rng.integers(0, 3))
        body = FunctionBody(self, scope).block(self.statements_left) if self.statements_left else []
        self.statements_left = saved_left
        if optional:
            params.append("scale=0.5")
            scope.vars["scale"] = Var("scale", ())
        result = self.data_expr(scope, return_shape, 2)
        header = f"def {name}({', '.join(params)}):"
        self.helpers.append([header] + indent(body + [f"return {result.text}"]))
        self.helper_signatures.append((name, param_shapes, return_shape, optional))
        self.features.add("helper call")
        if optional:
            self.features.add("default argument")
        return name, param_shapes, optional

    def write_recursive_helper(self, shape):
        """A recursive helper with a depth counter: `rec(h, depth)` calls `rec(.., depth-1)`."""
        name = self.fresh_name("rec")
        scope = Scope({"h": Var("h", shape)}, {}, {}, {}, shape, nesting=1)
        stop = "depth == 0"
        if self.chance(0.3):   # a data-dependent stop as well
            stop += f" or np.sum(h) > {self.choice(('1.5', '2.0'))}"
        base = self.expr(scope, shape, 1)
        update = self.bounded(scope, shape, 2)
        step = self.choice((f"{name}(h, depth - 1)",
                            f"0.5 * {name}(h, depth - 1) + h",
                            f"np.tanh({name}(h, depth - 1)) * h"))
        lines = [f"def {name}(h, depth):",
                 f"    if {stop}:",
                 f"        return {base.text}",
                 f"    h = {update.text}",
                 f"    return {step}"]
        self.helpers.append(lines)
        self.features.add("recursion")
        return name

    # ---- the whole program -------------------------------------------------------------
    def write(self):
        """Source text, argument names and specs of the entry function `f`."""
        x_shape = self.weighted([(1.0, ()), (2.5, (self.dim(),)), (1.5, (self.dim(), self.dim()))])
        if self.scalars:
            x_shape = ()
        arg_specs = [("x", x_shape)]
        lists = {}
        if self.chance(0.45) and not self.scalars:
            widths = [x_shape[-1] if x_shape else self.dim()] + \
                     [self.dim() for _ in range(int(self.rng.integers(1, 4)))]
            shapes = [(widths[i], widths[i + 1]) for i in range(len(widths) - 1)]
            kind = "pairs" if self.chance(0.35) else "mats"
            lists["ws"] = (kind, shapes)
            arg_specs.append(("ws", (kind, shapes)))
        if self.chance(0.3):
            arg_specs.append(("y", self.choice([(self.dim(),), (self.dim(), self.dim())])
                              if not self.scalars else ()))
        scope = Scope({name: Var(name, spec) for name, spec in arg_specs if name != "ws"},
                      {}, lists, {}, (), top_level_of_entry=True, collectives=self.collectives)
        body = FunctionBody(self, scope).block(int(self.rng.integers(2, 7)))
        if self.collectives and "collective" not in self.features:
            if scope.conditional:      # only some examples reach the end: try another
                return None, arg_specs
            body += FunctionBody(self, scope).stmt_collective(scope)
        body.append(f"return {FunctionBody(self, scope).final_value()}")
        names = [name for name, _ in arg_specs]
        lines = ["import numpy as np"] + (["import transpile as tp"] if self.collectives else [])
        lines += [""] + self.module_constants
        for helper in self.helpers:
            lines += ["", *helper, ""]
        lines += ["", f"def f({', '.join(names)}):"] + indent(body)
        return "\n".join(lines) + "\n", arg_specs


class FunctionBody:
    """Writes statements into one function body, keeping `scope` up to date."""

    def __init__(self, writer, scope):
        self.w = writer
        self.scope = scope

    def block(self, count, scope=None):
        """`count` statements (fewer when the program's statement budget runs out)."""
        scope = scope or self.scope
        lines = []
        for _ in range(count):
            if self.w.statements_left <= 0:
                break
            self.w.statements_left -= 1
            kind = self.w.weighted(self.statement_kinds(scope))
            lines += getattr(self, "stmt_" + kind)(scope)
        if not lines and count > 0:   # a body may not be empty
            lines = self.stmt_assign(scope)
        return lines

    def statement_kinds(self, scope):
        kinds = [(3.0, "assign"), (2.5, "update"), (0.6, "tuple_assign")]
        shallow = scope.nesting < 2
        if any(v.writable and v.shape for v in scope.vars.values()):
            kinds.append((1.2, "inplace_write"))
        if any(v.writable or (v.shape == () and v.alias_free) for v in scope.vars.values()):
            kinds.append((0.8, "augmented"))
        if shallow:
            kinds += [(1.3, "if"), (1.2, "for_range"), (0.6, "while"), (0.5, "buffer")]
            if not scope.conditional:
                kinds.append((0.7, "list_build"))
            if any(len(v.shape) == 2 for v in scope.vars.values()):
                kinds.append((0.7, "for_rows"))
            if not scope.in_loop:
                kinds.append((0.6, "if_return"))
            else:
                kinds.append((0.4, "if_return"))
            kinds += [(0.5, "helper_call"), (0.3, "recursion")]
        if scope.lists and shallow:
            kinds.append((2.0, "for_list"))
        if (scope.conditional or scope.in_loop) and scope.vars:
            kinds.append((0.8 if scope.conditional else 0.3, "constant_rebind"))
        if scope.top_level_of_entry:
            kinds += [(0.5, "closure"), (0.3, "grow_loop")]
            if not scope.conditional:
                kinds.append((0.3, "comprehension"))
        if scope.collectives and not scope.conditional:
            kinds.append((2.0, "collective"))
        if self.w.scalars:        # loops on numbers: what jit compiles whole
            kinds = [(w, k) for w, k in kinds if k not in (
                "buffer", "list_build", "grow_loop", "comprehension", "helper_call",
                "recursion", "closure")] + [(2.0, "for_range"), (1.5, "while")]
        return kinds

    # ---- binding values to names ----------------------------------------------------
    def binding(self, scope, expr):
        """The expression to bind to a name: a copy if it would alias a writable array,
        so that writable arrays stay unaliased."""
        if any(scope.vars.get(name) is not None and scope.vars[name].writable
               for name in expr.aliases):
            self.w.features.add("copy")
            return Expr(f"{expr.operand()}.copy()")
        return expr

    def bind(self, scope, name, shape, expr):
        expr = self.binding(scope, expr)
        scope.vars[name] = Var(name, shape, writable=bool(shape) and not expr.aliases,
                               alias_free=not expr.aliases)
        return f"{name} = {expr.text}"

    def carried(self, scope):
        """An existing variable to update; arguments less often, since overwriting one
        early would cut the output off from that input."""
        options = [(0.3 if v.name in ARGUMENT_NAMES else 1.0, v) for v in scope.vars.values()]
        return self.w.weighted(options) if options else None

    # ---- simple statements ------------------------------------------------------------
    def stmt_assign(self, scope):
        shape = self.w.pick_shape(scope)
        expr = self.w.data_expr(scope, shape, int(self.w.rng.integers(1, 4)))
        return [self.bind(scope, self.w.var_name(shape), shape, expr)]

    def stmt_update(self, scope):
        """Rebind an existing variable to a new value of its shape, usually from itself."""
        var = self.carried(scope)
        if var is None:
            return self.stmt_assign(scope)
        if scope.in_loop:   # carried from trip to trip: keep it bounded
            new = self.w.bounded(scope, var.shape, 2)
            if self.w.chance(0.4):
                new = Expr(f"0.5 * {var.name} + 0.5 * {new.text}", atomic=False)
        else:
            new = self.w.data_expr(scope, var.shape, int(self.w.rng.integers(1, 4)))
            if new.text == var.name:   # `v = v` says nothing
                new = self.w.unary_expr(scope, var.shape, 1)
        return [self.bind(scope, var.name, var.shape, new)]

    def stmt_constant_rebind(self, scope):
        """`v = K3` in a branch or loop: a variable rebound to a module-level constant on
        some paths only (the name holds data, whichever path ran)."""
        var = self.carried(scope)
        if var is None:
            return self.stmt_assign(scope)
        self.w.features.add("global constant")
        name = self.w.module_constant(var.shape)
        if var.shape and scope.in_loop:
            # an in-place write earlier in the loop body would reach the global on the next
            # trip (the program would change its own constant): a copy in loops
            return [self.bind(scope, var.name, var.shape, Expr(f"{name}.copy()"))]
        return [self.bind(scope, var.name, var.shape, Expr(name, aliases=frozenset([name])))]

    def stmt_tuple_assign(self, scope):
        self.w.features.add("tuple unpacking")
        same = [(a, b) for a, b in itertools.permutations(scope.vars.values(), 2)
                if a.shape == b.shape]
        if same and self.w.chance(0.4):
            a, b = self.w.choice(same)
            scope.vars[a.name], scope.vars[b.name] = (dataclasses.replace(b, name=a.name),
                                                      dataclasses.replace(a, name=b.name))
            return [f"{a.name}, {b.name} = {b.name}, {a.name}"]
        shapes = [self.w.pick_shape(scope), self.w.pick_shape(scope)]
        values = [self.binding(scope, self.w.expr(scope, s, 2)) for s in shapes]
        names = [self.w.var_name(s) for s in shapes]
        for name, shape, value in zip(names, shapes, values):
            scope.vars[name] = Var(name, shape, writable=bool(shape) and not value.aliases,
                                   alias_free=not value.aliases)
        return [f"{names[0]}, {names[1]} = {values[0].text}, {values[1].text}"]

    def stmt_augmented(self, scope):
        """`v += e` on a scalar (rebinding) or on a writable array (in place)."""
        targets = [v for v in scope.vars.values()
                   if v.writable or (v.shape == () and v.alias_free)]
        var = self.w.choice(targets)
        op = self.w.choice(("+=", "-=", "*="))
        value = self.w.bounded(scope, var.shape, 2) if scope.in_loop or op == "*=" \
            else self.w.expr(scope, var.shape, 2)
        if op == "*=":
            value = Expr(f"(1.0 + 0.5 * {value.text})")
        if var.shape:
            self.w.features.add("in-place write")
        return [f"{var.name} {op} {value.text}"]

    def stmt_inplace_write(self, scope):
        """A subscript write into a writable local array: an element, a row, a slice."""
        var = self.w.choice([v for v in scope.vars.values() if v.writable and v.shape])
        shape = var.shape
        self.w.features.add("in-place write")
        form = int(self.w.rng.integers(5))
        if form == 3:      # through a boolean mask of the data (per example under vmap)
            return self.mask_write(scope, var)
        if form == 4:      # np.add.at: repeated indices add up
            return self.scatter_add(scope, var)
        if form == 0:      # one element / one row
            target = f"{var.name}[{self.w.index(scope, shape[0])}]"
            value_shape = shape[1:]
        elif form == 1 and shape[0] >= 2:   # a slice from 1 on
            target = f"{var.name}[1:]"
            value_shape = (shape[0] - 1,) + shape[1:]
        elif len(shape) == 2:               # a column
            target = f"{var.name}[:, {self.w.index(scope, shape[1])}]"
            value_shape = (shape[0],)
        else:
            target = f"{var.name}[:{shape[0] - 1}]" if shape[0] >= 2 else f"{var.name}[0]"
            value_shape = (shape[0] - 1,) if shape[0] >= 2 else ()
        op = self.w.choice(("=", "+=", "*=")) if value_shape != () or self.w.chance(0.5) else "="
        value = self.w.bounded(scope, value_shape, 2)
        if op == "*=":
            value = Expr(f"(1.0 + 0.5 * {value.text})")
        return [f"{target} {op} {value.text}"]

    def mask_write(self, scope, var):
        """`v[v > t] = value` (elements) or `v[np.sum(d, axis=1) > t] = row` (rows of a
        matrix): what each example selects differs under vmap, the value written does not
        depend on how many. Or the selection read too (each example its own number of
        elements under vmap: runtime/ragged.py): `v[m] *= s`, `v[m] = np.tanh(v[m]) * s`,
        `v[m] += np.sum(d[m] ** 2)`."""
        self.w.features.add("mask write")
        shape = var.shape
        op = self.w.choice((">", "<"))
        rows = len(shape) == 2 and self.w.chance(0.5)
        if rows:
            source = self.w.data_expr(scope, shape, 1)
            mask = f"np.sum({source.text}, axis=1) {op} {self.w.choice(THRESHOLDS)}"
            value = self.w.bounded(scope, shape[1:], 2)
        else:
            source = self.w.data_expr(scope, shape, 1) if self.w.chance(0.5) else Expr(var.name)
            mask = f"{source.operand()} {op} {self.w.choice(THRESHOLDS)}"
            value = self.w.bounded(scope, (), 2)
        form = int(self.w.rng.integers(4))
        if form == 0:
            return [f"{var.name}[{mask}] = {value.text}"]
        self.w.features.add("mask read")
        scale = self.w.bounded(scope, (), 2)
        if form == 1:
            return [f"{var.name}[{mask}] *= (1.0 + 0.5 * {scale.text})"]
        if form == 2:
            return [f"{var.name}[{mask}] = np.tanh({var.name}[{mask}]) * "
                    f"(1.0 + 0.5 * {scale.text})"]
        data = self.w.data_expr(scope, shape, 1)
        return [f"{var.name}[{mask}] += 0.1 * np.sum(np.sin({data.operand()}[{mask}]) ** 2)"]

    def scatter_add(self, scope, var):
        """np.add.at(v, [i, j, i, ...], values): rows given more than once add up."""
        self.w.features.add("np.add.at")
        n = var.shape[0]
        count = int(self.w.rng.integers(2, 5))
        rows = [int(r) for r in self.w.rng.integers(0, n, size=count)]
        rows[-1] = rows[0]                       # at least one repeat
        shape = (count,) + var.shape[1:] if self.w.chance(0.6) else ()
        value = self.w.bounded(scope, shape, 2)
        return [f"np.add.at({var.name}, np.array({rows}), {value.text})"]

    def stmt_buffer(self, scope):
        """`buf = np.zeros(..)`, filled by writes (in a loop or one at a time)."""
        self.w.features.add("in-place write")
        k = self.w.dim()
        shape = (k,) if self.w.chance(0.6) else (k, self.w.dim())
        name = self.w.fresh_name("buf")
        lines = [f"{name} = np.zeros({shape[0] if len(shape) == 1 else shape_text(shape)})"]
        inner = scope.nested(loop=True)
        index = self.w.fresh_name("i")
        inner.ints[index] = k
        if self.w.chance(0.6):
            value = self.w.bounded(inner, shape[1:], 2)
            lines += [f"for {index} in range({k}):", f"    {name}[{index}] = {value.text}"]
            self.w.features.add("for range")
        else:
            lines.append(f"{name}[0] = {self.w.bounded(scope, shape[1:], 2).text}")
            if k >= 2:
                value = self.w.expr(scope, (k - 1,) + shape[1:], 1)
                lines.append(f"{name}[1:] += {value.text}")
        scope.vars[name] = Var(name, shape, writable=True)
        return lines

    # ---- control flow ------------------------------------------------------------------
    def merge(self, scope, branches):
        """After an if: the variables every (non-returning) branch leaves with one shape."""
        scope.conditional = scope.conditional or any(b.returned for b in branches)
        scope.returned = scope.returned or any(b.returned for b in branches)
        for name in list(scope.vars):
            del scope.vars[name]
        common = set.intersection(*(set(b.vars) for b in branches)) if branches else set()
        for name in sorted(common):
            shapes = {b.vars[name].shape for b in branches}
            if len(shapes) == 1:
                scope.vars[name] = Var(name, shapes.pop(),
                                       writable=all(b.vars[name].writable for b in branches),
                                       alias_free=all(b.vars[name].alias_free
                                                      for b in branches))

    def stmt_if(self, scope):
        self.w.features.add("if/else")
        lines = [f"if {self.w.condition(scope, allow_int=scope.in_loop)}:"]
        n_branches = self.w.weighted([(1.0, 1), (2.0, 2), (1.0, 3)])
        if n_branches == 3:
            self.w.features.add("elif")
        # a new variable that every branch defines (needs an else)
        joint = None
        if n_branches >= 2 and self.w.chance(0.4):
            shape = self.w.pick_shape(scope)
            joint = (self.w.var_name(shape), shape)
        branches = []
        for k in range(n_branches):
            inner = scope.nested(conditional=True)
            body = self.block(int(self.w.rng.integers(1, 3)), inner)
            if joint:
                body.append(self.bind(inner, joint[0], joint[1], self.w.expr(inner, joint[1], 2)))
            if k == 1 and n_branches == 3:
                lines.append(f"elif {self.w.condition(scope)}:")
            elif k >= 1:
                lines.append("else:")
            lines += indent(body)
            branches.append(inner)
        if n_branches == 1:
            branches.append(scope.copy())   # the path that skips the if
        self.merge(scope, branches)
        return lines

    def stmt_if_return(self, scope):
        """`if cond: ...; return value`: an early return (also from inside loops)."""
        self.w.features.add("early return")
        scope.conditional = scope.returned = True   # what follows runs only if we did not return
        inner = scope.nested(conditional=True)
        body = self.block(int(self.w.rng.integers(0, 2)), inner) if self.w.chance(0.4) else []
        value = self.w.expr(inner, scope.return_shape, 2)
        return [f"if {self.w.condition(scope)}:"] + indent(body + [f"return {value.text}"])

    def loop_body(self, inner, count):
        """Statements of a loop body, plus maybe `if cond: break` / `continue` among them."""
        jumps = self.w.chance(0.35)
        inner.conditional = inner.conditional or jumps
        body = self.block(count, inner)
        if jumps:
            jump = self.w.choice(("break", "continue"))
            self.w.features.add(jump)
            guard = [f"if {self.w.condition(inner, allow_int=True)}:", f"    {jump}"]
            at = int(self.w.rng.integers(len(body) + 1)) if jump == "break" else len(body)
            # `continue` at the end would do nothing; put it before the last statement
            if jump == "continue" and body:
                at = len(body) - 1
            body[at:at] = guard
        return body

    def after_loop(self, scope, inner):
        """Variables that survive a loop: those defined before it, with unchanged shape."""
        scope.conditional = scope.conditional or inner.returned
        scope.returned = scope.returned or inner.returned
        for name, var in list(scope.vars.items()):
            if name not in inner.vars or inner.vars[name].shape != var.shape:
                del scope.vars[name]
            else:
                var.writable = var.writable and inner.vars[name].writable
                var.alias_free = var.alias_free and inner.vars[name].alias_free

    def stmt_for_range(self, scope):
        self.w.features.add("for range")
        trips = int(self.w.rng.integers(1, 5))
        index = self.w.fresh_name("i")
        header = self.w.weighted([(4, f"range({trips})"), (1, f"reversed(range({trips}))"),
                                  (1, f"range(1, {trips + 1})")])
        inner = scope.nested(loop=True)
        inner.ints[index] = trips + 1 if header.startswith("range(1,") else trips
        body = self.loop_body(inner, int(self.w.rng.integers(1, 4)))
        self.after_loop(scope, inner)
        return [f"for {index} in {header}:"] + indent(body)

    def stmt_for_rows(self, scope):
        """`for row in M`, `for i, row in enumerate(M)` or `for a, b in zip(M, N)`."""
        matrices = [v for v in scope.vars.values() if len(v.shape) == 2]
        m = self.w.choice(matrices)
        inner = scope.nested(loop=True)
        row = self.w.fresh_name("row")
        inner.vars[row] = Var(row, m.shape[1:])
        partners = [v for v in matrices if v.shape[0] == m.shape[0] and v.name != m.name]
        kind = self.w.weighted([(2, "plain"), (1, "enumerate"), (1 if partners else 0, "zip")])
        # each row is a view of the matrix: no writes into it while the loop reads them
        inner.vars[m.name].writable = False
        if kind == "enumerate":
            index = self.w.fresh_name("i")
            inner.ints[index] = m.shape[0]
            header = f"for {index}, {row} in enumerate({m.name}):"
        elif kind == "zip":
            other = self.w.choice(partners)
            inner.vars[other.name].writable = False
            row2 = self.w.fresh_name("row")
            inner.vars[row2] = Var(row2, other.shape[1:])
            header = f"for {row}, {row2} in zip({m.name}, {other.name}):"
        else:
            header = f"for {row} in {m.name}:"
        self.w.features.add(f"for over rows ({kind})")
        body = self.loop_body(inner, int(self.w.rng.integers(1, 3)))
        self.after_loop(scope, inner)
        return [header] + indent(body)

    def stmt_for_list(self, scope):
        """The loop over the list argument `ws`; `h` changes shape on every trip."""
        kind, shapes = scope.lists["ws"]
        self.w.features.add("for over list (shape changes)")
        h = self.w.fresh_name("h")
        rows = () if self.w.chance(0.6) else (self.w.dim(),)
        start = self.w.expr(scope, rows + (shapes[0][0],), 2)
        lines = [self.bind(scope, h, rows + (shapes[0][0],), start)]
        index = None
        if kind == "pairs":
            header = "for W, b in ws:"
            affine = f"{h} @ W + b"
        else:
            if self.w.chance(0.3):
                index = self.w.fresh_name("i")
                header = f"for {index}, W in enumerate(ws):"
            else:
                header = "for W in ws:"
            affine = f"{h} @ W"
        step = self.w.choice((f"np.tanh({affine})", f"np.sin({affine}) * 0.9",
                              f"np.tanh({affine}) + 0.1 * np.sum({h})"))
        if index:
            step = f"{step} * (1.0 - 0.1 * {index})"
        body = [f"{h} = {step}"]
        # something else carried through the loop that does not depend on h's shape
        scalars = [v for v in scope.vars.values() if v.shape == () and v.name != h]
        broke = False
        if scalars and self.w.chance(0.5):
            acc = self.w.choice(scalars)
            body.append(f"{acc.name} = {acc.name} + {self.w.choice(('np.sum', 'np.mean', 'np.max'))}({h})")
        if self.w.chance(0.25):
            jump = self.w.choice(("break", "continue"))
            self.w.features.add(jump)
            guard = [f"if np.sum({h}) {self.w.choice(('>', '<'))} {self.w.choice(THRESHOLDS)}:",
                     f"    {jump}"]
            # `continue` skips the step on some trips, `break` stops after one
            body = guard + body if jump == "continue" else body + guard
            broke = True
        lines += [header] + indent(body)
        if broke:           # h's final shape depends on where the loop stopped
            scope.vars.pop(h)
        else:
            scope.vars[h] = Var(h, rows + (shapes[-1][1],), writable=True)
        return lines

    def stmt_grow_loop(self, scope):
        """A vector that grows by one element per trip."""
        self.w.features.add("growing carried array")
        n = self.w.dim()
        g = self.w.fresh_name("g")
        trips = int(self.w.rng.integers(1, 4))
        first = self.w.expr(scope, (n,), 2)
        index = self.w.fresh_name("i")
        last = self.w.choice((f"{g}[-1:]", f"{g}[-2:-1]" if n >= 2 else f"{g}[-1:]"))
        lines = [self.bind(scope, g, (n,), first),
                 f"for {index} in range({trips}):",
                 f"    {g} = np.concatenate([{g}, np.tanh({last} * 0.8 + 0.1 * {index})])"]
        scope.vars[g] = Var(g, (n + trips,), writable=True)
        return lines

    def stmt_while(self, scope):
        """A while loop with a data-dependent condition and a trip cap."""
        self.w.features.add("while")
        carried = [v for v in scope.vars.values()]
        var = self.w.choice(carried)
        counter = self.w.fresh_name("k")
        cap = int(self.w.rng.integers(2, 5))
        inner = scope.nested(loop=True, conditional=True)
        inner.ints[counter] = None
        measure = f"np.sum({var.name} * {var.name})" if var.shape else f"{var.name} * {var.name}"
        condition = f"{measure} > {self.w.choice(('0.05', '0.2', '0.5'))} and {counter} < {cap}"
        if self.w.chance(0.3):
            condition = f"{counter} < {cap}"
        update = self.w.bounded(inner, var.shape, 2)
        body = [f"{var.name} = {self.w.choice(('0.7', '0.8', '0.9'))} * {update.text}"]
        inner.vars[var.name] = Var(var.name, var.shape)
        if self.w.chance(0.5):
            body = self.block(1, inner) + body
        if self.w.chance(0.25):
            self.w.features.add("break")
            body += [f"if {self.w.condition(inner)}:", "    break"]
        body.append(f"{counter} += 1")
        self.after_loop(scope, inner)
        return [f"{counter} = 0", f"while {condition}:"] + indent(body)

    def stmt_list_build(self, scope):
        """`hs = []`, `hs.append(..)` in a loop, then np.stack / np.sum / sum of the list."""
        self.w.features.add("list append")
        hs = self.w.fresh_name("hs")
        shape = self.w.pick_shape(scope)
        trips = int(self.w.rng.integers(1, 4))
        index = self.w.fresh_name("i")
        inner = scope.nested(loop=True)
        inner.ints[index] = trips
        pre = self.block(int(self.w.rng.integers(0, 2)), inner) if self.w.chance(0.5) else []
        item = self.binding(inner, self.w.expr(inner, shape, 2))
        lines = [f"{hs} = []", f"for {index} in range({trips}):"]
        lines += indent(pre + [f"{hs}.append({item.text})"])
        self.after_loop(scope, inner)
        name = self.w.var_name(shape)
        combine = self.w.weighted([(2, (f"np.sum(np.stack({hs}), axis=0)", shape)),
                                   (1, (f"np.mean(np.stack({hs}), axis=0)", shape)),
                                   (1, (f"sum({hs})", shape)),
                                   # zip, enumerate and reversed outside a loop header, a
                                   # dict comprehension and a dict's values
                                   (0.5, (f"sum(a * b for a, b in zip({hs}, reversed({hs})))",
                                          shape)),
                                   (0.5, (f"np.sum(np.stack([v * k for k, v in "
                                          f"list(enumerate({hs}, 1))]), axis=0)", shape)),
                                   (0.5, (f"np.mean(np.stack(list({{k: v for k, v in "
                                          f"dict(zip(range({trips}), {hs})).items()}}"
                                          f".values())), axis=0)", shape)),
                                   (1, (f"np.stack({hs})", (trips,) + shape)),
                                   (1 if len(shape) == 1 else 0,
                                    (f"np.concatenate({hs})", (trips * shape[0],) if shape else ()))])
        text, result_shape = combine
        if len(result_shape) > 2:
            text, result_shape = f"np.sum(np.stack({hs}), axis=0)", shape
        if text.startswith("sum("):
            self.w.features.add("builtin sum")
        lines.append(f"{name} = {text}")
        scope.vars[name] = Var(name, result_shape, writable=bool(result_shape) and not text.startswith("sum"))
        if result_shape == () or text.startswith("sum("):
            scope.vars[name].writable = False
        return lines

    def stmt_comprehension(self, scope):
        self.w.features.add("list comprehension")
        matrices = [v for v in scope.vars.values() if len(v.shape) == 2]
        name = self.w.fresh_name("hs")
        if matrices and self.w.chance(0.6):
            m = self.w.choice(matrices)
            inner = scope.nested(loop=True)
            inner.vars["r"] = Var("r", m.shape[1:])
            item_shape = self.w.choice([m.shape[1:], ()])
            item = self.w.expr(inner, item_shape, 2)
            lines = [f"{name} = [{item.text} for r in {m.name}]"]
            count = m.shape[0]
        else:
            count = int(self.w.rng.integers(1, 4))
            inner = scope.nested(loop=True)
            inner.ints["j"] = count
            item_shape = self.w.pick_shape(scope)
            item = self.w.expr(inner, item_shape, 2)
            lines = [f"{name} = [{item.text} for j in range({count})]"]
        result = self.w.var_name((count,) + item_shape if len(item_shape) < 2 else item_shape)
        if len(item_shape) < 2:
            lines.append(f"{result} = np.stack({name})")
            scope.vars[result] = Var(result, (count,) + item_shape, writable=True)
        else:
            lines.append(f"{result} = np.sum(np.stack({name}), axis=0)")
            scope.vars[result] = Var(result, item_shape, writable=True)
        return lines

    def stmt_helper_call(self, scope):
        if self.w.chance(0.3) and len(self.w.helpers) < MAX_HELPERS:
            return self.tuple_helper_call(scope)
        shape = self.w.pick_shape(scope)
        call = self.w.call_expr(scope, shape, 2)
        if call is None:
            return self.stmt_assign(scope)
        return [self.bind(scope, self.w.var_name(shape), shape, call)]

    def tuple_helper_call(self, scope):
        """A helper returning a tuple, unpacked at the call."""
        self.w.features.add("tuple unpacking")
        self.w.features.add("helper call")
        name = self.w.fresh_name("helper")
        param_shape = self.w.pick_shape(scope)
        shapes = [self.w.pick_shape(scope), self.w.pick_shape(scope)]
        inner = Scope({"a": Var("a", param_shape)}, {}, {}, {}, (), nesting=1)
        values = [self.w.data_expr(inner, s, 2).text for s in shapes]
        self.w.helpers.append([f"def {name}(a):", f"    return {values[0]}, {values[1]}"])
        names = [self.w.var_name(s) for s in shapes]
        arg = self.w.expr(scope, param_shape, 1)
        for n, s in zip(names, shapes):   # the helper may return `a` itself: not writable
            scope.vars[n] = Var(n, s)
        return [f"{names[0]}, {names[1]} = {name}({arg.text})"]

    def stmt_recursion(self, scope):
        shape = self.w.pick_shape(scope)
        rec = self.w.write_recursive_helper(shape)
        arg = self.w.expr(scope, shape, 1)
        name = self.w.var_name(shape)
        depth = int(self.w.rng.integers(1, 4))
        scope.vars[name] = Var(name, shape, writable=False)
        return [f"{name} = {rec}({arg.text}, {depth})"]

    def stmt_collective(self, scope, in_helper=True):
        """`v = tp.psum(e, "i")` or another collective over the mapped axis "i", where every
        example of the batch runs it: pmap needs every device in every collective, in
        the same order (vmap runs one under a branch on data for all examples, masked).
        Sometimes in a helper the entry calls (`in_helper`)."""
        if in_helper and self.w.chance(0.25) and len(self.w.helpers) < MAX_HELPERS:
            return self.collective_in_helper(scope)
        shape = self.w.pick_shape(scope)
        inner = self.w.data_expr(scope, shape, int(self.w.rng.integers(1, 3)))
        t = inner.text
        perm = self.w.choice(("[(0, 1), (1, 2), (2, 0)]", "[(0, 2), (2, 0)]", "[(1, 0)]",
                              "[(0, 1), (1, 0), (2, 2)]"))
        new_axis = len(shape)
        options = [
            (3.0, ("psum", f'tp.psum({t}, "i")', shape)),
            (2.0, ("pmean", f'tp.pmean({t}, "i")', shape)),
            (0.6, ("pmax", f'tp.pmax({t}, "i")', shape)),
            (0.4, ("pmin", f'tp.pmin({t}, "i")', shape)),
            (1.2, ("ppermute", f'tp.ppermute({t}, "i", {perm})', shape)),
            (0.8, ("all_gather", f'np.sum(tp.all_gather({t}, "i"), axis=0)', shape)),
            (0.6, ("all_gather", f'tp.all_gather({t}, "i")[{int(self.w.rng.integers(BATCH))}]',
                   shape)),
            (0.6, ("all_gather", f'np.mean(tp.all_gather({t}, "i", axis={new_axis}), '
                                 f'axis=-1)', shape)),
            (0.8, ("axis_index", f'(1.0 + 0.3 * tp.axis_index("i")) * {inner.operand()}',
                   shape)),
        ]
        if shape and shape[0] == BATCH:
            options += [(0.8, ("psum_scatter", f'tp.psum_scatter({t}, "i")', shape[1:])),
                        (0.8, ("all_to_all", f'tp.all_to_all({t}, "i", 0, 0)', shape))]
        kind, text, result_shape = self.w.weighted(options)
        self.w.features.update(("collective", kind))
        name = self.w.var_name(result_shape)
        # a new array in every example (under vmap too, where pmax of a value every
        # example shares may be that value: a write into it must not reach the value)
        scope.vars[name] = Var(name, result_shape, writable=bool(result_shape))
        return [f"{name} = {text}"]

    def collective_in_helper(self, scope):
        """`v = helperK(e)`, where helperK calls a collective over "i" that its caller's
        mapping binds (vmap batches the callee for the caller's axis; under pmap each
        device's call meets the others')."""
        self.w.features.add("collective in a helper")
        name = self.w.fresh_name("helper")
        param_shape = self.w.pick_shape(scope)
        inner = Scope({"a": Var("a", param_shape)}, {}, {}, {}, (), nesting=1,
                      collectives=True)
        body = FunctionBody(self.w, inner).stmt_collective(inner, in_helper=False)
        result = body[-1].split(" = ")[0]
        if self.w.chance(0.5):      # more work after the collective, on its result
            shape = inner.vars[result].shape
            more = self.w.data_expr(inner, shape, 2)
            body.append(f"{result} = {more.text}")
        self.w.helpers.append([f"def {name}(a):"] + indent(body + [f"return {result}"]))
        shape = inner.vars[result].shape
        out = self.w.var_name(shape)
        arg = self.w.expr(scope, param_shape, 1)
        scope.vars[out] = Var(out, shape)        # (it may be `a` itself: not writable)
        return [f"{out} = {name}({arg.text})"]

    def stmt_closure(self, scope):
        """An inner def (or lambda) reading variables of f, called later."""
        self.w.features.add("closure")
        param_shape = self.w.pick_shape(scope)
        inner = scope.nested()
        inner.vars["z"] = Var("z", param_shape)
        result_shape = param_shape if self.w.chance(0.7) else ()
        value = self.w.expr(inner, result_shape, 2)
        # the closure reads these later: they must not be written in place from now on
        for var in scope.vars.values():
            if re.search(rf"\b{var.name}\b", value.text):
                var.writable = False
        if self.w.chance(0.3):
            name = self.w.fresh_name("fn")
            lines = [f"{name} = lambda z: {value.text}"]
            self.w.features.add("lambda")
        else:
            name = self.w.fresh_name("inner")
            lines = [f"def {name}(z):", f"    return {value.text}"]
        scope.closures[name] = ([param_shape], result_shape)
        arg = self.w.expr(scope, param_shape, 1)
        result = self.w.var_name(result_shape)
        lines.append(f"{result} = {name}({arg.text})")
        scope.vars[result] = Var(result, result_shape, writable=False)
        return lines

    def final_value(self):
        """The scalar f returns: a combination of the last few live variables."""
        live = [v for v in self.scope.vars.values()]
        picked = live[-3:] if len(live) > 3 else live
        terms = []
        for var in picked:
            if var.shape == ():
                terms.append(self.w.choice((var.name, f"np.tanh({var.name})", f"np.sin({var.name})")))
            else:
                terms.append(self.w.choice((f"np.sum({var.name})", f"np.mean({var.name} * {var.name})",
                                            f"np.sum(np.tanh({var.name}))")))
        if not terms:
            terms.append(self.w.expr(self.scope, (), 2).text)
        return " + ".join(terms)


# =====================================================================================
# 2. Loading: source text -> a module in a real file
# =====================================================================================

_module_dir = None
_module_numbers = itertools.count()


def module_dir():
    global _module_dir
    if _module_dir is None:
        _module_dir = tempfile.mkdtemp(prefix="transpile_random_programs_")
        atexit.register(shutil.rmtree, _module_dir, ignore_errors=True)
    return _module_dir


def load_module(source, tag):
    """Import `source` from a new file: transpile reads functions back with
    inspect.getsource. Every load gets a new file name, so linecache never serves the
    text of an earlier version."""
    name = f"random_program_{tag}_{next(_module_numbers)}"
    path = os.path.join(module_dir(), name + ".py")
    with open(path, "w") as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def unload_module(module):
    sys.modules.pop(module.__name__, None)


# =====================================================================================
# 3. Kink probes: which branches a run took, and how far it was from taking another
# =====================================================================================

class KinkCrossed(Exception):
    """A finite-difference step changed a branch (or the argmax of an np.max)."""


# wall-clock seconds a program's examples may run together (CollectiveReference)
REFERENCE_SECONDS = 10.0


class PathRecorder:
    """Called by the instrumented copy of a program at every comparison and np.max.

    `path` is the sequence of branch outcomes and argmaxes; `margin` the smallest distance
    of a float comparison from its threshold (or of a maximum from the runner-up)."""

    COMPARISONS = {"Gt": np.greater, "Lt": np.less, "GtE": np.greater_equal,
                   "LtE": np.less_equal, "Eq": np.equal, "NotEq": np.not_equal}

    def __init__(self):
        self.reset()
        # (monotonic) time after which the program stops at its next comparison: a copy
        # run in a thread (CollectiveReference), where time_limit cannot reach, would
        # otherwise spin on in a loop that does not end, slowing every later program
        self.deadline = None

    def reset(self):
        self.path = []
        self.margin = math.inf

    def compare(self, left, op, right):
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise CheckTimeout("the program ran past its time")
        result = self.COMPARISONS[op](left, right)
        if _is_float(left) or _is_float(right):
            gap = np.min(np.abs(np.asarray(left, float) - np.asarray(right, float)))
            self.margin = min(self.margin, float(gap))
        self.path.append(np.asarray(result).tobytes())
        return bool(result) if np.ndim(result) == 0 else result

    def max(self, a, axis=None, keepdims=False):
        values = np.asarray(a, dtype=float)
        if values.size > 1:
            ordered = np.sort(values.ravel() if axis is None else values,
                              axis=-1 if axis is None else axis)
            along = -1 if axis is None else axis
            if ordered.shape[along] > 1:
                gap = np.take(ordered, -1, along) - np.take(ordered, -2, along)
                self.margin = min(self.margin, float(np.min(gap)))
        self.path.append(np.asarray(np.argmax(values, axis=axis)).tobytes())
        return np.max(a, axis=axis, keepdims=keepdims)


def _is_float(value):
    return isinstance(value, (float, np.floating)) or (
        isinstance(value, np.ndarray) and value.dtype.kind == "f")


class Instrument(ast.NodeTransformer):
    """Rewrites `a > b` into `__probe__.compare(a, 'Gt', b)` and `np.max(...)` into
    `__probe__.max(...)`."""

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) != 1:
            return node
        return ast.Call(ast.Attribute(ast.Name("__probe__", ast.Load()), "compare", ast.Load()),
                        [node.left, ast.Constant(type(node.ops[0]).__name__), node.comparators[0]],
                        [])

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "max" \
                and isinstance(func.value, ast.Name) and func.value.id == "np":
            node.func = ast.Attribute(ast.Name("__probe__", ast.Load()), "max", ast.Load())
        return node


class Reference:
    """Plain Python evaluation of a program, by an instrumented copy that records its path.

    `value_at` is what finite differences call: it raises KinkCrossed when a point takes a
    different path from the centre, where the difference quotient would be meaningless."""

    def __init__(self, source, args):
        self.load(source)
        self.value, self.path = self.run(args)
        self.margin = self.recorder.margin

    def load(self, source):
        tree = ast.fix_missing_locations(Instrument().visit(ast.parse(source)))
        self.recorder = PathRecorder()
        namespace = {"__probe__": self.recorder, "__name__": "probed_program"}
        with warnings.catch_warnings():   # a shrunk variant may be odd ("1[0]")
            warnings.simplefilter("ignore", SyntaxWarning)
            exec(compile(tree, "<probed program>", "exec"), namespace)
        self.f = namespace["f"]

    def run(self, args):
        """f at a read-only copy of `args`: a valid program never writes into memory its
        caller can see (transpile refuses that, rightly), and here such a write raises."""
        args = copy.deepcopy(args)
        for _, leaf in tree_leaves(args):
            if isinstance(leaf, np.ndarray):
                leaf.flags.writeable = False
        self.recorder.reset()
        with np.errstate(all="ignore"):
            value = self.f(*args)
        return value, list(self.recorder.path)

    def value_at(self, args):
        value, path = self.run(args)
        if path != self.path:
            raise KinkCrossed("a finite-difference step changed the branch path")
        return float(value)


class CollectiveReference:
    """Plain Python evaluation of a program with collectives, at a batch: each example's
    own instrumented copy of f runs in a thread bound to rank b of the mapped axis "i"
    (runtime/spmd.py, as pmap runs device code, but on the untransformed source), so
    tp.psum & co. meet the other examples'.

    `values` are the examples' values; `value_at(batch)` (for finite differences) is
    their sum, T, and raises KinkCrossed when any example takes another path."""

    def __init__(self, source, batch, in_axes):
        self.in_axes = in_axes
        self.copies = [Reference.__new__(Reference) for _ in range(BATCH)]
        for copy_ in self.copies:
            copy_.load(source)
        self.values, self.path = self.run(batch)
        self.margin = min(c.recorder.margin for c in self.copies)

    def run(self, batch):
        mapped = [axis == 0 for axis in self.in_axes]
        examples = [example_args(batch, mapped, batch, b) for b in range(BATCH)]

        def example(b, *args):
            return self.copies[b].run(args)
        devices = tp.devices()[:BATCH]
        for copy_ in self.copies:
            copy_.recorder.deadline = time.monotonic() + REFERENCE_SECONDS
        try:
            results = spmd.run(example, [(b,) + e for b, e in enumerate(examples)], "i",
                               devices)
        finally:
            for copy_ in self.copies:
                copy_.recorder.deadline = None
        return [v for v, _ in results], [p for _, p in results]

    def value_at(self, batch):
        values, path = self.run(batch)
        if path != self.path:
            raise KinkCrossed("a finite-difference step changed the branch path")
        return float(sum(values))


# =====================================================================================
# Pytrees of the arguments and results: nested lists and tuples of arrays and floats
# =====================================================================================

def tree_leaves(tree, path=""):
    """(path, leaf) pairs in order; `path` reads like `[1][0]`."""
    if isinstance(tree, (list, tuple)):
        out = []
        for i, item in enumerate(tree):
            out += tree_leaves(item, f"{path}[{i}]")
        return out
    return [(path, tree)]


def tree_structure(tree):
    if isinstance(tree, (list, tuple)):
        return (type(tree).__name__, tuple(tree_structure(t) for t in tree))
    if tree is None:
        return "None"
    return np.shape(tree)


def tree_vector(tree):
    leaves = [np.ravel(np.asarray(leaf, dtype=float)) for _, leaf in tree_leaves(tree)]
    return np.concatenate(leaves) if leaves else np.zeros(0)


def tree_from_vector(template, vector):
    """A tree shaped like `template` holding the numbers of `vector` (floats stay floats)."""
    position = 0

    def build(t):
        nonlocal position
        if isinstance(t, (list, tuple)):
            return type(t)(build(item) for item in t)
        size = int(np.size(t))
        chunk = vector[position:position + size]
        position += size
        return float(chunk[0]) if isinstance(t, float) else chunk.reshape(np.shape(t)).copy()
    return build(template)


def tree_stack(trees):
    """Stack a list of same-structure trees leafwise (per-example results of a loop)."""
    first = trees[0]
    if isinstance(first, (list, tuple)):
        return type(first)(tree_stack([t[i] for t in trees]) for i in range(len(first)))
    return np.stack([np.asarray(t, dtype=float) for t in trees])


def tree_zeros_like(tree):
    return tree_from_vector(tree, np.zeros(tree_vector(tree).size))


def trees_equal(a, b):
    return tree_structure(a) == tree_structure(b) and np.array_equal(tree_vector(a), tree_vector(b))


# =====================================================================================
# Drawing a program with inputs where it is valid
# =====================================================================================

MIN_MARGIN = 2e-3          # distance of every branch condition from its threshold
MAX_VALUE = 1e3            # |f| at the inputs; larger means ill-conditioned, redraw
BATCH = 3                  # examples in a vmap batch
INPUT_DRAWS = 12           # input draws per program before the program is rejected


def draw_argument(spec, rng):
    if spec and isinstance(spec[0], str):   # the list argument ws
        kind, shapes = spec
        mats = [1.3 * rng.standard_normal(s) / np.sqrt(s[0]) for s in shapes]
        if kind == "pairs":
            return [(w, 0.3 * rng.standard_normal(w.shape[1])) for w in mats]
        return mats
    if spec == ():
        return float(rng.standard_normal())
    return 0.8 * rng.standard_normal(spec)


def plain_value_ok(value):
    return np.ndim(value) == 0 and np.isrealobj(value) and np.isfinite(value) \
        and abs(float(value)) < MAX_VALUE


def smooth_at(source, args):
    """Does plain Python run the program at `args` to a moderate value, with every branch
    condition and np.max well away from its kink? (None: the program itself is broken.)"""
    try:
        with time_limit(5):
            reference = Reference(source, args)
    except Exception:
        return None
    return plain_value_ok(reference.value) and reference.margin >= MIN_MARGIN


def draw_inputs(source, arg_specs, rng):
    """Arguments at which the program is smooth, and a vmap batch of such arguments;
    None if none were found in a few draws."""
    for _ in range(INPUT_DRAWS):
        args = tuple(draw_argument(spec, rng) for _, spec in arg_specs)
        smooth = smooth_at(source, args)
        if smooth is None:
            return None
        if smooth:
            break
    else:
        return None
    # vmap maps over x, and over y half of the time; ws is shared by the examples. The
    # examples are smooth too, so that rounding differences cannot flip a branch.
    mapped = [name == "x" or (name == "y" and rng.random() < 0.5) for name, _ in arg_specs]
    examples = []
    for _ in range(INPUT_DRAWS):
        example = tuple(draw_argument(spec, rng) if m else arg
                        for (_, spec), arg, m in zip(arg_specs, args, mapped))
        if smooth_at(source, example):
            examples.append(example)
            if len(examples) == BATCH:
                break
    else:
        return None
    batch = tuple(np.array([e[i] for e in examples]) if m else arg
                  for i, (arg, m) in enumerate(zip(args, mapped)))
    in_axes = tuple(0 if m else None for m in mapped)
    return args, batch, in_axes


def draw_collective_inputs(source, arg_specs, rng):
    """For a program with collectives: a batch at which every example's value is moderate
    and every branch condition well away from its kink, run as pmap runs it (each example
    in a thread, the collectives between them); the first example as `args`."""
    for _ in range(INPUT_DRAWS):
        shared = tuple(draw_argument(spec, rng) for _, spec in arg_specs)
        mapped = [name == "x" or (name == "y" and rng.random() < 0.5) for name, _ in arg_specs]
        examples = [tuple(draw_argument(spec, rng) if m else arg
                          for (_, spec), arg, m in zip(arg_specs, shared, mapped))
                    for _ in range(BATCH)]
        batch = tuple(np.array([e[i] for e in examples]) if m else arg
                      for i, (arg, m) in enumerate(zip(shared, mapped)))
        in_axes = tuple(0 if m else None for m in mapped)
        try:
            with time_limit(5):
                reference = CollectiveReference(source, batch, in_axes)
        except Exception:
            return None               # the program itself is broken
        if all(plain_value_ok(v) for v in reference.values) and \
                reference.margin >= MIN_MARGIN:
            return examples[0], batch, in_axes
    return None


def example_args(batch, mapped, args, b):
    """The arguments of example `b` of a vmap batch (a float stays a float)."""
    out = []
    for value, is_mapped, original in zip(batch, mapped, args):
        if not is_mapped:
            out.append(value)
        elif isinstance(original, float):
            out.append(float(value[b]))
        else:
            out.append(value[b])
    return tuple(out)


def writes_collectives(seed):
    """Does `seed` give a collective program (one that has values only under a mapping)?"""
    return seed % 5 == 2


def generate_program(seed):
    """The program of `seed`: drawn programs are rejected until one is valid at its inputs."""
    for attempt in range(200):
        rng = np.random.default_rng([seed, attempt])
        # one seed in seven writes a program on numbers only, one in five a program with
        # collectives over the mapped axis "i"
        collective = writes_collectives(seed)
        writer = ProgramWriter(rng, scalars=seed % 7 == 3, collectives=collective)
        source, arg_specs = writer.write()
        if source is None:
            continue
        drawn = (draw_collective_inputs if collective else draw_inputs)(source, arg_specs, rng)
        if drawn is None:
            continue
        args, batch, in_axes = drawn
        return Program(seed, source, tuple(n for n, _ in arg_specs), args, batch, in_axes,
                       frozenset(writer.features), attempt, collective)
    raise RuntimeError(f"seed {seed}: no valid program in 200 attempts")


# =====================================================================================
# 4. The checks
# =====================================================================================

OK, WRONG, CRASH, REFUSED, SKIP = "OK", "WRONG", "CRASH", "REFUSED", "SKIP"
STATUSES = (OK, WRONG, CRASH, REFUSED, SKIP)

EXACT_RTOL = 1e-8          # same computation, different code: rounding only
FD_RTOL = 1e-4             # against central differences in float64
FD_EPS = 1e-6              # step for first derivatives of f
FD_EPS_GRAD = 1e-5         # step for derivatives of the gradient
CHECK_SECONDS = 60         # a transformation that takes longer is a CRASH (time-out)
HESSIAN_MAX_SIZE = 4       # hessian only for small x (it is the slowest check by far)


class Wrong(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class Skip(Exception):
    pass


class CheckTimeout(Exception):
    pass


@contextmanager
def time_limit(seconds):
    """Raise CheckTimeout in the main thread after `seconds` of CPU time (a no-op in other
    threads). CPU time, not wall time, so that a loaded machine cannot cause a time-out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise CheckTimeout(f"timed out after {seconds} s of CPU time")
    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@dataclasses.dataclass
class Outcome:
    check: str
    status: str
    detail: str = ""
    pattern: str = ""          # what identifies the failure class (see `signature`)
    expected: object = None    # the reference value, for the repro
    seconds: float = 0.0

    @property
    def signature(self):
        return (self.check, self.status, self.pattern)


def message_pattern(exc):
    """An exception reduced to its kind: the `[pass] message` line of a TransformError or
    the first line of anything else, with numbers, quoted text and generated names
    blotted out, so that one bug on different programs dedupes to one class."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if lines and lines[0].startswith("File "):
        # a located error: `File ...`, the source line, maybe a caret line, the message
        lines = lines[2:]
        if lines and set(lines[0]) <= set("^~ "):
            lines = lines[1:]
    line = next((l for l in lines if re.match(r"\[\w[\w ]*\]", l)), lines[0] if lines else "")
    line = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", line)
    line = re.sub(r"\b(s|u|m|h|g|hs|buf|i|k|j|row|helper|rec|inner|fn)\d+\b", "<name>", line)
    line = re.sub(r"\d+", "N", line)
    return f"{type(exc).__name__}: {line[:160]}"


class Case:
    """One program loaded for checking, with the reference values the checks share."""

    def __init__(self, program, tag=None):
        self.program = program
        self.module = load_module(program.source, tag if tag is not None else program.seed)
        self.f = self.module.f
        self.reference = CollectiveReference(program.source, program.batch, program.in_axes) \
            if program.collective else Reference(program.source, program.args)
        self.argnums = tuple(range(len(program.args)))
        rng = np.random.default_rng([program.seed, 99])
        self.tangents = tree_from_vector(program.args,
                                         rng.standard_normal(tree_vector(program.args).size))
        x = program.args[0]
        self.x_direction = float(rng.standard_normal()) if isinstance(x, float) \
            else rng.standard_normal(np.shape(x))
        self.outcomes = {}
        self._cache = {}

    def close(self):
        unload_module(self.module)

    # ---- inputs -------------------------------------------------------------------------
    def args(self):
        """A fresh copy of the arguments for one transformed call."""
        return copy.deepcopy(self.program.args)

    def call(self, fn, *args):
        """fn(*args), then make sure it left the caller's arguments alone."""
        before = copy.deepcopy(args)
        result = fn(*args)
        if not trees_equal(list(args), list(before)):
            raise Wrong("input mutated", "the transformed function changed its arguments in place")
        return result

    def with_x(self, x):
        return (x,) + self.program.args[1:]

    # ---- references ---------------------------------------------------------------------
    @property
    def value(self):
        return self.reference.value

    def fd_gradient(self, eps=FD_EPS):
        """Central differences of f in every argument element, shaped like the arguments."""
        return self._central_differences("gradient", self.program.args, eps)

    def fd_total_gradient(self, eps=FD_EPS):
        """Central differences of T, the sum of the examples' values (the program run on
        its batch by CollectiveReference), in every element of the batch's arguments."""
        return self._central_differences("total gradient", self.program.batch, eps)

    def _central_differences(self, what, point, eps):
        """The reference's value_at differentiated in every element of `point` (cached)."""
        key = (what, eps)
        if key not in self._cache:
            center = tree_vector(point)
            gradient = np.empty_like(center)
            for k in range(center.size):
                step = np.zeros_like(center)
                step[k] = eps
                plus = self.reference.value_at(tree_from_vector(point, center + step))
                minus = self.reference.value_at(tree_from_vector(point, center - step))
                gradient[k] = (plus - minus) / (2 * eps)
            self._cache[key] = tree_from_vector(tuple(point), gradient)
        return self._cache[key]

    def fd_directional(self, eps=FD_EPS):
        args, tangents = self.program.args, self.tangents
        center, direction = tree_vector(args), tree_vector(tangents)
        plus = self.reference.value_at(tree_from_vector(args, center + eps * direction))
        minus = self.reference.value_at(tree_from_vector(args, center - eps * direction))
        return (plus - minus) / (2 * eps)

    def grad_x(self, x):
        """tp.grad(f) (in x only) at x, used as the function whose derivative second-order
        transformations must match; the centre's branch path is checked at x as well."""
        self.reference.value_at(self.with_x(x))
        return tp.grad(self.f)(*copy.deepcopy(self.with_x(x)))

    def fd_of_grad(self, direction, eps=FD_EPS_GRAD):
        """d/dt grad_x(x + t direction) by central differences."""
        x = self.program.args[0]
        plus, minus = self.grad_x(x + eps * direction), self.grad_x(x - eps * direction)
        return (np.asarray(plus, float) - np.asarray(minus, float)) / (2 * eps)

    def requires(self, check):
        outcome = self.outcomes.get(check)
        if outcome is None:
            outcome = run_check(self, check)
        if outcome.status != OK:
            raise Skip(f"needs {check}, which was {outcome.status}")

    # ---- comparisons --------------------------------------------------------------------
    def expect(self, got, expected, rtol, what, remeasure=None, source=None):
        """Raise Wrong unless `got` matches `expected` (structure, shapes, then numbers).

        `remeasure()` recomputes a finite-difference reference with another step: when
        the first comparison fails, the two references must agree with each other, or the
        difference quotient is not trustworthy here and the check is skipped. `source`
        names where `expected` came from, for the repro."""
        source = source or ("finite differences" if remeasure else "plain Python")
        self.last_expected = (expected, source)
        if tree_structure(got) != tree_structure(expected):
            raise Wrong(f"{what} structure",
                        f"{what}: structure {tree_structure(got)}, expected {tree_structure(expected)}")
        error, where = relative_error(got, expected)
        if error <= rtol:
            return
        if remeasure is not None:
            other = remeasure()
            if relative_error(other, expected)[0] > rtol / 2:
                raise Skip("finite differences disagree with themselves (ill-conditioned)")
        g, e = tree_vector(got), tree_vector(expected)
        kind = "nan" if not np.all(np.isfinite(g)) else "value"
        raise Wrong(f"{what} {kind}",
                    f"{what}: relative error {error:.2e} at {where}: got {_short(g)}, "
                    f"expected {_short(e)}")


def relative_error(got, expected):
    """max |got - expected| / max(max |expected|, 0.01), and where the worst leaf is."""
    worst, where = 0.0, ""
    scale = max(float(np.max(np.abs(tree_vector(expected)), initial=0.0)), 1e-2)
    for (path, g), (_, e) in zip(tree_leaves(got), tree_leaves(expected)):
        g, e = np.asarray(g, dtype=float), np.asarray(e, dtype=float)
        if g.size == 0:
            continue
        diff = np.abs(g - e)
        error = math.inf if not np.all(np.isfinite(diff)) else float(np.max(diff)) / scale
        if error > worst or where == "":
            worst, where = error, path or "the value"
    return worst, where


def _short(vector, limit=6):
    text = np.array2string(np.asarray(vector)[:limit], precision=6, separator=", ")
    return text[:-1] + ", ...]" if np.size(vector) > limit else text


# Each check: run the transformation, compare with a reference, raise Wrong on a mismatch.
# Their names are the "transformation" column of the summary.

def check_transform(case):
    got = case.call(tp.transform(case.f), *case.args())
    case.expect(got, case.value, EXACT_RTOL, "value")


def check_grad(case):
    got = case.call(tp.grad(case.f, argnums=case.argnums), *case.args())
    case.expect(got, case.fd_gradient(), FD_RTOL, "gradient",
                remeasure=lambda: case.fd_gradient(10 * FD_EPS))


def check_value_and_grad(case):
    value, gradient = case.call(tp.value_and_grad(case.f, argnums=case.argnums), *case.args())
    case.expect(value, case.value, EXACT_RTOL, "value")
    case.expect(gradient, case.fd_gradient(), FD_RTOL, "gradient",
                remeasure=lambda: case.fd_gradient(10 * FD_EPS))


def check_vjp(case):
    out, vjp_fn = case.call(lambda *a: tp.vjp(case.f, *a), *case.args())
    case.expect(out, case.value, EXACT_RTOL, "value")
    cotangents = vjp_fn(1.0)
    case.expect(tuple(cotangents), case.fd_gradient(), FD_RTOL, "cotangent",
                remeasure=lambda: case.fd_gradient(10 * FD_EPS))


def check_jvp(case):
    """jvp against finite differences along the tangent; where a step would cross a kink,
    against grad . tangent instead (both are exact derivatives at the centre)."""
    tangents = copy.deepcopy(case.tangents)
    out, tangent_out = case.call(lambda *a: tp.jvp(case.f, a, tangents), *case.args())
    case.expect(out, case.value, EXACT_RTOL, "primal value")
    try:
        reference = case.fd_directional()
    except KinkCrossed:
        case.requires("grad")
        gradient = tp.grad(case.f, argnums=case.argnums)(*case.args())
        reference = float(np.dot(tree_vector(gradient), tree_vector(case.tangents)))
        case.expect(tangent_out, reference, FD_RTOL, "tangent vs grad.v", source="tp.grad . tangent")
        return
    case.expect(tangent_out, reference, FD_RTOL, "tangent",
                remeasure=lambda: case.fd_directional(10 * FD_EPS))


def check_grad_of_grad(case):
    if not isinstance(case.program.args[0], float):
        raise Skip("x is not a scalar")
    case.requires("grad")
    got = case.call(tp.grad(tp.grad(case.f)), *case.args())
    case.expect(got, float(case.fd_of_grad(1.0)), FD_RTOL, "second derivative",
                remeasure=lambda: float(case.fd_of_grad(1.0, 10 * FD_EPS_GRAD)))


def check_hessian(case):
    x = case.program.args[0]
    if isinstance(x, float) or np.size(x) > HESSIAN_MAX_SIZE:
        raise Skip("x is not a small array")
    case.requires("grad")
    got = case.call(tp.hessian(case.f), *case.args())

    def reference(eps=FD_EPS_GRAD):
        columns = []
        for k in range(np.size(x)):
            basis = np.zeros(np.size(x))
            basis[k] = 1.0
            columns.append(case.fd_of_grad(basis.reshape(np.shape(x)), eps))
        return np.stack(columns, axis=-1).reshape(np.shape(x) + np.shape(x))
    case.expect(got, reference(), FD_RTOL, "hessian", remeasure=lambda: reference(10 * FD_EPS_GRAD))


def check_jvp_of_grad(case):
    """Forward over reverse: tp.jvp(tp.grad(f)) gives (grad, H v) for a direction v in x."""
    case.requires("grad")
    direction = case.x_direction
    tangents = (direction,) + tuple(tree_zeros_like(a) for a in case.program.args[1:])
    gradient, hv = case.call(lambda *a: tp.jvp(tp.grad(case.f), a, copy.deepcopy(tangents)),
                             *case.args())
    case.expect(gradient, tp.grad(case.f)(*case.args()), EXACT_RTOL, "primal (gradient)",
                source="tp.grad")
    expected = case.fd_of_grad(direction)
    if isinstance(case.program.args[0], float):
        expected = float(expected)
    case.expect(hv, expected, FD_RTOL, "tangent (H v)",
                remeasure=lambda: case.fd_of_grad(direction, 10 * FD_EPS_GRAD))


def batch_examples(case):
    p = case.program
    mapped = [axis == 0 for axis in p.in_axes]
    return [example_args(p.batch, mapped, p.args, b) for b in range(BATCH)]


def example_values(case):
    """Each example's value: plain Python example by example, or for a program with
    collectives, the examples run together (CollectiveReference)."""
    if case.program.collective:
        return np.array([float(v) for v in case.reference.values])
    return np.array([float(case.f(*copy.deepcopy(e))) for e in batch_examples(case)])


def over_axis_i(transformation, f, in_axes):
    """vmap or pmap of f over the axis "i" that a program's collectives name."""
    if transformation is tp.vmap:
        return tp.vmap(f, in_axes=in_axes, axis_name="i")
    return tp.pmap(f, "i", in_axes=in_axes)


def check_vmap(case):
    batch = copy.deepcopy(case.program.batch)
    got = case.call(over_axis_i(tp.vmap, case.f, case.program.in_axes), *batch)
    case.expect(got, example_values(case), EXACT_RTOL, "batched value")


def per_example_gradients(case):
    """(tp.grad of f, its gradient at each example of the batch), the reference of the
    checks that map a gradient over examples."""
    grad_f = tp.grad(case.f, argnums=case.argnums)
    try:
        return grad_f, [grad_f(*copy.deepcopy(e)) for e in batch_examples(case)]
    except Exception as exc:
        raise Skip(f"tp.grad fails on an example: {message_pattern(exc)}")


def check_vmap_of_vmap(case, outer_map=tp.vmap, inner_map=tp.vmap):
    """vmap of the vmapped program over two batches: the program's, and the same examples
    in reverse order (for a program with collectives, another meeting of the examples:
    all_gather, ppermute and axis_index see them permuted). Against each batch's own
    values; skipped where the reversed batch puts a branch condition near its kink.
    `outer_map`, `inner_map`: pmap for pmap(vmap) and vmap(pmap)."""
    p = case.program
    if "mask write" in p.features and outer_map is tp.vmap and inner_map is tp.vmap:
        raise Skip("a write through a mask that differs between examples is refused under "
                   "vmap of vmap where the value written does too (docs/vmap.md)")
    is_mapped = [axis == 0 for axis in p.in_axes]
    reversed_batch = tuple(np.ascontiguousarray(v[::-1]) if m else v
                           for v, m in zip(p.batch, is_mapped))
    if p.collective:
        other = CollectiveReference(p.source, reversed_batch, p.in_axes)
        if other.margin < MIN_MARGIN:
            raise Skip("the reversed batch takes a branch near its kink")
        expected = np.array([example_values(case), [float(v) for v in other.values]])
    else:
        expected = example_values(case)
        expected = np.array([expected, expected[::-1]])
    outer = tuple(np.stack([v, r]) if m else v
                  for v, r, m in zip(p.batch, reversed_batch, is_mapped))
    twice = outer_map(over_axis_i(inner_map, case.f, p.in_axes), in_axes=p.in_axes)
    got = gathered(case.call(twice, *copy.deepcopy(outer)))
    case.expect(got, expected, EXACT_RTOL, "value of each batch")


def check_mapped_grad(case, transformation):
    """vmap or pmap of grad(f). With collectives, example b's gradient in a mapped
    argument is the derivative of T (the examples' values summed) in example b's
    argument, and the examples' gradients in a shared argument add up to T's (JAX's
    meaning: a collective's transpose moves cotangents between examples): against
    finite differences of T. Otherwise against tp.grad example by example."""
    in_axes = case.program.in_axes
    grad_f = tp.grad(case.f, argnums=case.argnums)
    batch = copy.deepcopy(case.program.batch)
    if case.program.collective:
        got = gathered(case.call(over_axis_i(transformation, grad_f, in_axes), *batch))
        got = tuple(g if in_axes[k] is not None else tree_sum_examples(g)
                    for k, g in zip(case.argnums, got))
        case.expect(got, case.fd_total_gradient(), FD_RTOL,
                    "per-example gradients (shared arguments' summed)",
                    remeasure=lambda: case.fd_total_gradient(10 * FD_EPS))
        return
    _, per_example = per_example_gradients(case)
    got = gathered(case.call(over_axis_i(transformation, grad_f, in_axes), *batch))
    case.expect(got, tree_stack(per_example), EXACT_RTOL, "per-example gradient")


def check_vmap_of_grad(case):
    check_mapped_grad(case, tp.vmap)


def check_pmap(case):
    batch = copy.deepcopy(case.program.batch)
    got = case.call(over_axis_i(tp.pmap, case.f, case.program.in_axes), *batch)
    case.expect(gathered(got), example_values(case), EXACT_RTOL, "value on each device")


def check_pmap_of_grad(case):
    check_mapped_grad(case, tp.pmap)


def check_grad_of_mapped(case, transformation):
    """grad of T, the sum over examples of vmap(f) or pmap(f) (for pmap the backward pass
    runs on the devices too). Expected: each example's gradient for a mapped argument,
    their sum for the others (tp.grad example by example); with collectives, finite
    differences of T."""
    in_axes = case.program.in_axes
    names = ", ".join(case.program.arg_names)
    total = file_backed(f"def total_over_examples({names}):\n"
                        f"    return np.sum(mapped({names}))\n",
                        {"np": np, "mapped": over_axis_i(transformation, case.f, in_axes)},
                        "total_over_examples")
    if case.program.collective:
        expected, rtol = case.fd_total_gradient(), FD_RTOL
        remeasure = lambda: case.fd_total_gradient(10 * FD_EPS)   # noqa: E731
    else:
        _, per_example = per_example_gradients(case)
        stacked = tree_stack(per_example)
        expected = tuple(g if in_axes[k] is not None else tree_sum_examples(g)
                         for k, g in zip(case.argnums, stacked))
        rtol, remeasure = EXACT_RTOL, None
    batch = copy.deepcopy(case.program.batch)
    got = case.call(tp.grad(total, argnums=case.argnums), *batch)
    name = "pmap" if transformation is tp.pmap else "vmap"
    case.expect(got, expected, rtol, f"gradient through {name}", remeasure=remeasure,
                source=None if case.program.collective else "tp.grad per example")


def check_grad_of_pmap(case):
    check_grad_of_mapped(case, tp.pmap)


def check_grad_of_vmap(case):
    check_grad_of_mapped(case, tp.vmap)


def tree_sum_examples(tree):
    if isinstance(tree, (list, tuple)):
        return type(tree)(tree_sum_examples(t) for t in tree)
    return np.sum(tree, axis=0)


def gathered(tree):
    """pmap's sharded results as numpy arrays (containers rebuilt around them)."""
    if isinstance(tree, tp.ShardedArray):
        return np.asarray(tree)
    if isinstance(tree, (tuple, list)):
        return type(tree)(gathered(t) for t in tree)
    if isinstance(tree, dict):
        return {k: gathered(v) for k, v in tree.items()}
    return tree


@contextmanager
def fusing_small_arrays():
    """jit fuses only large arrays on the CPU, and compiles a kernel once it is called
    again and again; the programs' arrays are small and called once, so the jit checks
    fuse every chain they can and compile each kernel on its first call."""
    old = (specialize_module.CPU_MIN_ELEMENTS, CpuKernel.calls_before_compile,
           CpuKernel.compile_after_s, ScalarLoop.calls_before_compile,
           tp.Jitted.calls_before_specializing)
    specialize_module.CPU_MIN_ELEMENTS, CpuKernel.calls_before_compile = 1, 0
    CpuKernel.compile_after_s = 0.0
    ScalarLoop.calls_before_compile = tp.Jitted.calls_before_specializing = 0
    try:
        yield
    finally:
        (specialize_module.CPU_MIN_ELEMENTS, CpuKernel.calls_before_compile,
         CpuKernel.compile_after_s, ScalarLoop.calls_before_compile,
         tp.Jitted.calls_before_specializing) = old


def expect_same_kinds(got, expected, what):
    """jit gives each value the type and dtype the plain call gives (a Python float stays
    one: `float32_array * value` depends on it)."""
    for (path, g), (_, e) in zip(tree_leaves(got), tree_leaves(expected)):
        if type(g) is not type(e) or getattr(g, "dtype", None) != getattr(e, "dtype", None):
            raise Wrong(f"{what} kind", f"{what}{path}: {type(g).__name__} "
                        f"{getattr(g, 'dtype', '')}, expected {type(e).__name__} "
                        f"{getattr(e, 'dtype', '')}")


def check_jit(case):
    with fusing_small_arrays():
        got = case.call(tp.jit(case.f), *case.args())
    case.expect(got, case.value, EXACT_RTOL, "value")
    expect_same_kinds(got, case.value, "value")


def check_jit_of_grad(case):
    case.requires("grad")
    grad_f = tp.grad(case.f, argnums=case.argnums)
    expected = grad_f(*case.args())
    with fusing_small_arrays():
        got = case.call(tp.jit(grad_f), *case.args())
    case.expect(got, expected, EXACT_RTOL, "gradient", source="tp.grad")
    expect_same_kinds(got, expected, "gradient")


def check_jit_of_vmap(case):
    """jit of vmapped code (the lanes helpers known shapes decide) against vmap itself."""
    batched = over_axis_i(tp.vmap, case.f, case.program.in_axes)
    expected = batched(*copy.deepcopy(case.program.batch))
    with fusing_small_arrays():
        got = case.call(tp.jit(batched), *copy.deepcopy(case.program.batch))
    case.expect(got, expected, EXACT_RTOL, "batched value", source="tp.vmap")
    expect_same_kinds(got, expected, "batched value")


def check_jit_of_vmap_of_grad(case):
    case.requires("vmap(grad)" if case.program.collective else "grad")
    batched = over_axis_i(tp.vmap, tp.grad(case.f, argnums=case.argnums), case.program.in_axes)
    expected = batched(*copy.deepcopy(case.program.batch))
    with fusing_small_arrays():
        got = case.call(tp.jit(batched), *copy.deepcopy(case.program.batch))
    case.expect(got, expected, EXACT_RTOL, "per-example gradient", source="tp.vmap")
    expect_same_kinds(got, expected, "per-example gradient")


def check_jit_of_hessian(case):
    """jit of a Hessian (jacfwd of jacrev: the identity basis, helpers written out in their
    caller) against tp.hessian itself."""
    x = case.program.args[0]
    if isinstance(x, float) or np.size(x) > HESSIAN_MAX_SIZE:
        raise Skip("x is not a small array")
    case.requires("grad")
    expected = tp.hessian(case.f)(*case.args())
    with fusing_small_arrays():
        got = case.call(tp.jit(tp.hessian(case.f)), *case.args())
    case.expect(got, expected, EXACT_RTOL, "hessian", source="tp.hessian")
    expect_same_kinds(got, expected, "hessian")


CHECKS = {
    "transform": check_transform,
    "grad": check_grad,
    "value_and_grad": check_value_and_grad,
    "vjp": check_vjp,
    "jvp": check_jvp,
    "grad(grad)": check_grad_of_grad,
    "hessian": check_hessian,
    "jvp(grad)": check_jvp_of_grad,
    "vmap": check_vmap,
    "vmap(grad)": check_vmap_of_grad,
    "vmap(vmap)": check_vmap_of_vmap,
    "pmap(vmap)": functools.partial(check_vmap_of_vmap, outer_map=tp.pmap),
    "vmap(pmap)": functools.partial(check_vmap_of_vmap, inner_map=tp.pmap),
    "jit": check_jit,
    "jit(grad)": check_jit_of_grad,
    "jit(vmap)": check_jit_of_vmap,
    "jit(vmap(grad))": check_jit_of_vmap_of_grad,
    "jit(hessian)": check_jit_of_hessian,
    "pmap": check_pmap,
    "pmap(grad)": check_pmap_of_grad,
    "grad(pmap)": check_grad_of_pmap,
    "grad(vmap)": check_grad_of_vmap,
}
# the checks of a program with collectives (the others need f outside any mapping)
COLLECTIVE_CHECKS = ("vmap", "vmap(grad)", "vmap(vmap)", "pmap(vmap)", "vmap(pmap)",
                     "jit(vmap)", "jit(vmap(grad))", "pmap", "pmap(grad)", "grad(pmap)",
                     "grad(vmap)")


def run_check(case, name, seconds=CHECK_SECONDS):
    """Run one check and classify what happened."""
    start = time.perf_counter()
    try:
        if case.program.collective and name not in COLLECTIVE_CHECKS:
            raise Skip("f calls collectives: it has values only under vmap or pmap")
        with time_limit(seconds), np.errstate(all="ignore"):
            CHECKS[name](case)
        outcome = Outcome(name, OK)
    except Wrong as exc:
        outcome = Outcome(name, WRONG, str(exc), exc.kind, getattr(case, "last_expected", None))
    except (Skip, KinkCrossed) as exc:
        outcome = Outcome(name, SKIP, str(exc))
    except tp.TransformError as exc:
        outcome = Outcome(name, REFUSED, str(exc), message_pattern(exc))
    except Exception as exc:      # anything else, a time-out included, is a crash
        outcome = Outcome(name, CRASH, "".join(traceback.format_exception_only(exc)).strip(),
                          message_pattern(exc))
        outcome.traceback = traceback.format_exc()
    outcome.seconds = time.perf_counter() - start
    case.outcomes[name] = outcome
    return outcome


@dataclasses.dataclass
class ProgramReport:
    program: Program
    outcomes: dict              # check name -> Outcome

    @property
    def failures(self):
        return [o for o in self.outcomes.values() if o.status in (WRONG, CRASH)]

    @property
    def refusals(self):
        return [o for o in self.outcomes.values() if o.status == REFUSED]

    def table(self):
        """One line per check: status, time, and what went wrong."""
        rows = []
        for o in self.outcomes.values():
            what = o.pattern if o.status in (CRASH, REFUSED) else o.detail
            rows.append(f"  {o.check:15s} {o.status:8s} {o.seconds:6.2f}s  {what}"[:240])
        return "\n".join(rows)


def check_program(program, checks=None):
    """Every check (or those named) on one program."""
    case = Case(program)
    try:
        for name in checks or CHECKS:
            if name not in case.outcomes:
                run_check(case, name)
        return ProgramReport(program, {n: case.outcomes[n] for n in CHECKS if n in case.outcomes})
    finally:
        case.close()


def check_seed(seed, checks=None):
    return check_program(generate_program(seed), checks)


# =====================================================================================
# 5. Shrinking and standalone repros
# =====================================================================================

def fails_the_same_way(variant, outcome, tag):
    """Is `variant` (a simplified program) still valid, and does it still fail
    `outcome.check` with the same signature?"""
    try:
        # plain Python takes milliseconds: a variant that takes seconds loops forever
        with time_limit(2):
            if variant.collective:
                values = CollectiveReference(variant.source, variant.batch,
                                             variant.in_axes).values
                if not all(plain_value_ok(v) for v in values):
                    return False
            elif not plain_value_ok(Reference(variant.source, variant.args).value):
                return False
            elif outcome.check.startswith("vmap"):   # every example must stay valid too
                mapped = [axis == 0 for axis in variant.in_axes]
                if not any(mapped):
                    return False
                for b in range(BATCH):
                    example = example_args(variant.batch, mapped, variant.args, b)
                    if not plain_value_ok(Reference(variant.source, example).value):
                        return False
        case = Case(variant, tag=tag)
    except Exception:
        return False
    try:
        limit = max(10, int(3 * outcome.seconds))
        return run_check(case, outcome.check, limit).signature == outcome.signature
    finally:
        case.close()


def shrink(program, outcome, seconds=60.0, log=None):
    """A small variant of `program` that still fails `outcome.check` with the same
    signature, found greedily: the first simplification that keeps the failure is taken,
    and the search starts again from it, until none helps or time is up.
    Returns (the variant, its outcome)."""
    deadline = time.monotonic() + seconds
    tried = set()
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for variant in program_variants(program):
            if time.monotonic() >= deadline:
                break
            key = (variant.source, variant.arg_names, tree_vector(variant.args).tobytes())
            if key in tried:
                continue
            tried.add(key)
            if fails_the_same_way(variant, outcome, f"shrink{program.seed}"):
                program, improved = variant, True
                if log:
                    log(f"  shrunk to {len(program.source.splitlines())} lines")
                break
    case = Case(program, tag=f"shrunk{program.seed}")
    try:
        return program, run_check(case, outcome.check)
    finally:
        case.close()


def program_variants(program):
    """Simpler versions of `program`: an argument `f` no longer reads dropped, its inputs
    rounded to fewer digits (cheap, so first), then its source simplified."""
    tree = ast.parse(program.source)
    entry = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "f")
    read = {node.id for node in ast.walk(entry) if isinstance(node, ast.Name)}
    for i, name in enumerate(program.arg_names):
        if name not in read:
            shorter = copy.deepcopy(tree)
            f_def = next(n for n in shorter.body if isinstance(n, ast.FunctionDef) and n.name == "f")
            del f_def.args.args[i]
            keep = lambda values: tuple(v for j, v in enumerate(values) if j != i)
            yield dataclasses.replace(program, source=ast.unparse(shorter) + "\n",
                                      arg_names=keep(program.arg_names), args=keep(program.args),
                                      batch=keep(program.batch), in_axes=keep(program.in_axes))
    for digits in (1, 2):
        yield dataclasses.replace(program, args=rounded(program.args, digits),
                                  batch=rounded(program.batch, digits))
    for candidate in simplifications(tree):
        if candidate is None:
            continue
        try:
            source = ast.unparse(ast.fix_missing_locations(candidate)) + "\n"
        except Exception:
            continue
        yield dataclasses.replace(program, source=source)


def rounded(tree, digits):
    return tree_from_vector(tree, np.round(tree_vector(tree), digits))


def _statement_lists(tree):
    """(node index, field) of every statement list, in ast.walk order."""
    for index, node in enumerate(ast.walk(tree)):
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                yield index, field


def _edited(tree, index, edit):
    """A deep copy of `tree` with `edit(node)` applied to its `index`-th node (ast.walk
    order, which copies share); None when the edit does not apply."""
    copied = copy.deepcopy(tree)
    node = list(ast.walk(copied))[index]
    try:
        return copied if edit(node) is not False else None
    except (SyntaxError, IndexError, AttributeError):
        return None


def _first_iteration(loop):
    """`target = <first element>` for a for loop, so its body can stand alone."""
    def call_of(node, name):
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == name
    iterated = loop.iter
    backwards = call_of(iterated, "reversed")
    if backwards:
        iterated = iterated.args[0]
    parts = [ast.unparse(a) for a in getattr(iterated, "args", [])]
    if call_of(iterated, "range"):
        start, stop = ("0", parts[0]) if len(parts) == 1 else (parts[0], parts[1])
        first = f"{stop} - 1" if backwards else start
    elif call_of(iterated, "enumerate"):
        first = f"(0, {parts[0]}[0])"
    elif call_of(iterated, "zip"):
        first = "(" + ", ".join(f"{p}[0]" for p in parts) + ")"
    else:
        first = f"{ast.unparse(iterated)}[0]"
    return ast.parse(f"{ast.unparse(loop.target)} = {first}").body[0]


def simplifications(tree):
    """Candidate simplifications of `tree`, roughly biggest first: drop a statement;
    replace an if by one branch or a loop by one trip of its body; make an integer
    constant smaller; replace an expression by one of its operands."""
    lists = list(_statement_lists(tree))
    for index, field in lists:        # half of a long block at once
        length = len(getattr(list(ast.walk(tree))[index], field))
        if length >= 4:
            for lo, hi in ((0, length // 2), (length // 2, length - 1)):
                def drop_half(node, field=field, lo=lo, hi=hi):
                    del getattr(node, field)[lo:hi]
                yield _edited(tree, index, drop_half)
    for index, field in lists:
        length = len(getattr(list(ast.walk(tree))[index], field))
        for i in reversed(range(length)):
            def drop(node, field=field, i=i):
                stmts = getattr(node, field)
                del stmts[i]
                if not stmts and not (field == "orelse"):
                    stmts.append(ast.Pass())
            result = _edited(tree, index, drop)
            if result is not None:
                yield result
    for index, field in lists:
        length = len(getattr(list(ast.walk(tree))[index], field))
        for i in range(length):
            def unwrap(node, field=field, i=i, part="body"):
                stmts = getattr(node, field)
                stmt = stmts[i]
                if isinstance(stmt, ast.If):
                    replacement = getattr(stmt, part)
                elif isinstance(stmt, ast.For) and part == "body":
                    replacement = [_first_iteration(stmt)] + stmt.body
                elif isinstance(stmt, ast.While) and part == "body":
                    replacement = stmt.body
                else:
                    return False
                if not replacement:
                    return False
                stmts[i:i + 1] = replacement
            for part in ("body", "orelse"):
                result = _edited(tree, index, lambda n, u=unwrap, p=part: u(n, part=p))
                if result is not None:
                    yield result
    nodes = list(ast.walk(tree))
    for index, node in enumerate(nodes):
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 2:
            for smaller in sorted({1, node.value - 1}):
                def set_value(n, v=smaller):
                    n.value = v
                yield _edited(tree, index, set_value)
    for index, node in enumerate(nodes):
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for position, child in enumerate(children):
                if not isinstance(child, (ast.Call, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.BoolOp)):
                    continue
                for operand in range(len(_operands(child))):
                    def replace(n, field=field, position=position, operand=operand,
                                is_list=isinstance(value, list)):
                        target = getattr(n, field)
                        old = target[position] if is_list else target
                        new = _operands(old)[operand]
                        if is_list:
                            target[position] = new
                        else:
                            setattr(n, field, new)
                    yield _edited(tree, index, replace)


def _operands(node):
    """The sub-expressions an expression may be replaced by while shrinking. Not the
    argument of range/enumerate/zip/reversed, nor a list literal (`np.stack([a, b])` to
    `[a, b]`): the result may still run, but it reads like a different program."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in ("range", "enumerate", "zip", "reversed", "len"):
            return []
        return [a for a in node.args
                if not isinstance(a, (ast.Starred, ast.Lambda, ast.List, ast.Tuple))]
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    return []


def literal(value):
    """Python source that rebuilds `value` exactly (floats print round-trip)."""
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (int, np.integer)) or value is None:
        return repr(value if value is None else int(value))
    return f"np.array({np.asarray(value).tolist()!r})"


def repro_text(program, outcome):
    """A standalone program: imports, the functions, the inputs and the failing call, with
    what it should print (for WRONG) or what it raises (CRASH, REFUSED) in comments."""
    body = [line for line in program.source.splitlines()
            if line.strip() not in ("import numpy as np", "import transpile as tp")]
    while body and not body[0].strip():
        body.pop(0)
    lines = ["import numpy as np", "import transpile as tp", "", ""] + body + [""]
    names = list(program.arg_names)
    on_batch = "vmap" in outcome.check or "pmap" in outcome.check
    for name, value, axis in zip(names, program.args, program.in_axes):
        if not (on_batch and axis == 0):   # vmap and pmap read the batch
            lines.append(f"{name} = {literal(value)}")
    args = ", ".join(names)
    argnums = literal(tuple(range(len(names))))
    check = outcome.check
    if check in ("jvp", "jvp(grad)"):
        rng = np.random.default_rng([program.seed, 99])   # the directions Case draws
        tangents = tree_from_vector(program.args, rng.standard_normal(tree_vector(program.args).size))
        if check == "jvp(grad)":
            x = program.args[0]
            direction = float(rng.standard_normal()) if isinstance(x, float) else rng.standard_normal(np.shape(x))
            tangents = (direction,) + tuple(tree_zeros_like(a) for a in program.args[1:])
        lines.append(f"tangents = {literal(tuple(tangents))}")
    batch_args = per_example = ""
    if on_batch:
        batch_names = []
        for name, value, axis in zip(names, program.batch, program.in_axes):
            if axis == 0:
                lines.append(f"{name}_batch = {literal(value)}")
                batch_names.append(f"{name}_batch")
            else:
                batch_names.append(name)
        batch_args = ", ".join(batch_names)
        per_example = ", ".join(f"{n}[b]" if n.endswith("_batch") else n for n in batch_names)
    jit_setup = ["import transpile.specialize.module, runtime",
                 "transpile.specialize.module.CPU_MIN_ELEMENTS = 1",
                 "runtime.CpuKernel.calls_before_compile = tp.Jitted.calls_before_specializing = 0",
                 "runtime.ScalarLoop.calls_before_compile = 0", "runtime.CpuKernel.compile_after_s = 0.0"]
    vmapped = f"tp.vmap(f, in_axes={program.in_axes!r}, axis_name='i')"
    vmapped_grad = f"tp.vmap(tp.grad(f, argnums={argnums}), in_axes={program.in_axes!r}, " \
        "axis_name='i')"
    pmapped = f"tp.pmap(f, 'i', in_axes={program.in_axes!r})"
    pmapped_grad = f"tp.pmap(tp.grad(f, argnums={argnums}), 'i', in_axes={program.in_axes!r})"
    summed = {"vmap": f"lambda {args}: np.sum({vmapped}({args}))",
              "pmap": f"lambda {args}: np.sum({pmapped}({args}))"}
    # what the examples give run together, as pmap runs them (the reference of a program
    # with collectives), and the gradients of their sum
    together = (f"runtime.spmd.run(f, [({per_example},) for b in range({BATCH})], 'i', "
                f"tp.devices()[:{BATCH}])")
    expected_values = f"print({together})  # expected (import runtime.spmd)" \
        if program.collective else \
        f"print(np.array([f({per_example}) for b in range({BATCH})]))  # expected"
    expected_grads = "# expected: finite differences of the sum of the examples' values" \
        if program.collective else \
        f"print([tp.grad(f, argnums={argnums})({per_example}) for b in range({BATCH})])" \
        "  # expected, stacked"
    calls = {
        "transform": [f"print(tp.transform(f)({args}))", f"print(f({args}))  # expected"],
        "grad": [f"print(tp.grad(f, argnums={argnums})({args}))"],
        "value_and_grad": [f"print(tp.value_and_grad(f, argnums={argnums})({args}))"],
        "vjp": [f"out, vjp_fn = tp.vjp(f, {args})", "print(out, vjp_fn(1.0))"],
        "jvp": [f"print(tp.jvp(f, ({args},), tangents))"],
        "grad(grad)": [f"print(tp.grad(tp.grad(f))({args}))"],
        "hessian": [f"print(tp.hessian(f)({args}))"],
        "jvp(grad)": [f"print(tp.jvp(tp.grad(f), ({args},), tangents))"],
        "vmap": [f"print({vmapped}({batch_args}))", expected_values],
        "vmap(grad)": [f"print({vmapped_grad}({batch_args}))", expected_grads],
        **{name: [f"print(np.asarray(tp.{outer}({inner}, in_axes={program.in_axes!r})"
                      f"(*[np.stack([a, a[::-1]]) if axis == 0 else a for a, axis in "
                      f"zip(({batch_args},), {program.in_axes!r})])))",
                      "# expected: each batch's values (the second batch: the examples "
                      "in reverse order)"]
           for name, outer, inner in (("vmap(vmap)", "vmap", vmapped),
                                      ("pmap(vmap)", "pmap", vmapped),
                                      ("vmap(pmap)", "vmap", pmapped))},
        "pmap": [f"print(np.asarray({pmapped}({batch_args})))", expected_values],
        "pmap(grad)": [f"print({pmapped_grad}({batch_args}))", expected_grads],
        "grad(pmap)": [f"print(tp.grad({summed['pmap']}, argnums={argnums})({batch_args}))",
                       expected_grads],
        "grad(vmap)": [f"print(tp.grad({summed['vmap']}, argnums={argnums})({batch_args}))",
                       expected_grads],
        "jit": jit_setup + [f"print(tp.jit(f)({args}))", f"print(f({args}))  # expected"],
        "jit(grad)": jit_setup + [f"print(tp.jit(tp.grad(f, argnums={argnums}))({args}))",
                                  f"print(tp.grad(f, argnums={argnums})({args}))  # expected"],
        "jit(vmap)": jit_setup + [f"print(tp.jit({vmapped})({batch_args}))",
                                  f"print({vmapped}({batch_args}))  # expected"],
        "jit(vmap(grad))": jit_setup + [f"print(tp.jit({vmapped_grad})({batch_args}))",
                                        f"print({vmapped_grad}({batch_args}))  # expected"],
        "jit(hessian)": jit_setup + [f"print(tp.jit(tp.hessian(f))({args}))",
                                     f"print(tp.hessian(f)({args}))  # expected"],
    }
    lines += [""] + calls[check]
    if outcome.status == WRONG:
        lines.append(f"# {check}: WRONG: {outcome.detail}")
        if outcome.expected is not None and check not in ("transform", "vmap", "vmap(grad)") \
                and not check.startswith("jit") and not program.collective:
            expected, source = outcome.expected
            if isinstance(expected, np.floating):   # print 0.5, not np.float64(0.5)
                expected = float(expected)
            with np.printoptions(precision=8):
                text = re.sub(" +", " ", repr(expected).replace("\n", " "))
            lines.append(f"# expected ({source}): {text}")
    else:
        lines.append(f"# {check}: {outcome.status}: {outcome.pattern}")
    return "\n".join(lines) + "\n"


# =====================================================================================
# 6. The command line: many programs, a summary, one shrunk repro per failure class
# =====================================================================================

def _reports(first_seed, count, checks, jobs, step=1):
    """The report of each seed in order, checked in `jobs` worker processes."""
    seeds = range(first_seed, first_seed + count * step, step)
    if jobs <= 1:
        for seed in seeds:
            yield check_seed(seed, checks)
        return
    import functools
    import multiprocessing
    with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=200) as pool:
        yield from pool.imap(functools.partial(check_seed, checks=checks), seeds)


def run_many(first_seed, count, checks=None, shrink_seconds=60.0, show=False, log=print,
             jobs=1, step=1):
    totals = defaultdict(Counter)              # check -> status -> programs
    seconds = Counter()                        # check -> total time
    features = Counter()
    classes = {}                               # signature -> [count, report, outcome, seeds]
    refusals_after_grad = Counter()
    started = time.perf_counter()
    for done, report in enumerate(_reports(first_seed, count, checks, jobs, step), 1):
        seed = report.program.seed
        features.update(report.program.features)
        if show:
            log(f"---- seed {seed} ----\n{report.program.source}\n{report.table()}")
        grad_ok = report.outcomes.get("grad") is not None and report.outcomes["grad"].status == OK
        for outcome in report.outcomes.values():
            totals[outcome.check][outcome.status] += 1
            seconds[outcome.check] += outcome.seconds
            if outcome.status in (WRONG, CRASH, REFUSED):
                if outcome.signature not in classes:
                    print(f"seed {seed}: new class {' | '.join(outcome.signature)}",
                          file=sys.stderr, flush=True)
                entry = classes.setdefault(outcome.signature, [0, report, outcome, []])
                entry[0] += 1
                entry[3].append(seed)
                if outcome.status == REFUSED and grad_ok:
                    refusals_after_grad[outcome.signature] += 1
        if done % 25 == 0 or done == count:
            failing = sum(entry[0] for (_, status, _), entry in classes.items()
                          if status in (WRONG, CRASH))
            print(f"[{done}/{count}] {time.perf_counter() - started:.0f}s, "
                  f"{len(classes)} failure classes, {failing} failing checks", file=sys.stderr, flush=True)

    log(f"\n{count} programs (seeds {first_seed}..{first_seed + (count - 1) * step}), "
        f"{time.perf_counter() - started:.0f} s\n")
    log(summary_table(totals, seconds))
    log("\nconstructs (programs using each):")
    for name, n in sorted(features.items(), key=lambda kv: -kv[1]):
        log(f"  {name:32s} {n}")
    order = {WRONG: 0, CRASH: 1, REFUSED: 2}
    ranked = sorted(classes.items(), key=lambda kv: (order[kv[0][1]], -kv[1][0]))
    log(f"\n{len(ranked)} distinct failure classes\n")
    shown = {}          # (status, pattern) of a crash or refusal -> number of its class
    for number, (signature, (n, report, outcome, seeds)) in enumerate(ranked, 1):
        check, status, pattern = signature
        note = ""
        if status == REFUSED and refusals_after_grad[signature]:
            note = f" (plain grad accepted {refusals_after_grad[signature]} of these programs)"
        more = f", also {', '.join(map(str, seeds[1:6]))}" if len(seeds) > 1 else ""
        log(f"=== {number}. {check}: {status}: {pattern}  [{n} programs: seed "
            f"{report.program.seed}{more}]{note}")
        log(f"    {outcome.detail.splitlines()[-1] if outcome.detail else ''}"[:300])
        if status != WRONG and (status, pattern) in shown:
            # one message from several transformations: usually one cause, shrunk once
            log(f"    the same {status} as class {shown[status, pattern]}; not shrunk again\n")
            continue
        shown[status, pattern] = number
        program = report.program
        if shrink_seconds > 0:
            try:
                shrunk, final = shrink(program, outcome, shrink_seconds)
            except Exception:      # a bug of the shrinker must not lose the report
                log("    (shrinking failed:\n" + traceback.format_exc() + ")")
            else:
                if final.signature == outcome.signature:
                    program, outcome = shrunk, final
        log("```python\n" + repro_text(program, outcome) + "```\n")
    return totals, classes


def summary_table(totals, seconds):
    """Programs per transformation and outcome, and the time each transformation took."""
    header = f"{'transformation':16s}" + "".join(f"{s:>9s}" for s in STATUSES) + "   seconds"
    rows = [header, "-" * len(header)]
    for check in CHECKS:
        if check in totals:
            rows.append(f"{check:16s}" + "".join(f"{totals[check][s]:9d}" for s in STATUSES)
                        + f"{seconds[check]:10.0f}")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1, help="number of programs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first program")
    parser.add_argument("--checks", default=None,
                        help=f"comma-separated subset of: {', '.join(CHECKS)}")
    parser.add_argument("--shrink-seconds", type=float, default=60.0,
                        help="time to shrink each failure class (0: no shrinking)")
    parser.add_argument("--show", action="store_true", help="print every program and its outcomes")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes that check programs in parallel")
    parser.add_argument("--step", type=int, default=1,
                        help="seeds this far apart (5, from a seed that is 2 mod 5: only "
                             "programs with collectives)")
    options = parser.parse_args(argv)
    checks = options.checks.split(",") if options.checks else None
    for name in checks or ():
        if name not in CHECKS:
            parser.error(f"unknown check {name!r}")
    run_many(options.seed, options.count, checks, options.shrink_seconds, options.show,
             jobs=options.jobs, step=options.step)


if __name__ == "__main__":
    main()
