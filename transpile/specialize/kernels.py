"""Kernel text for a fused group (fusion.Kernel): a compiled loop for the CPU, readable CUDA C
for the GPU, and the numpy statements themselves as the fallback.

Every operation is computed in the dtype numpy gives its result, its operands converted to
that dtype first (`x * 2.0` on float32 is `x_ * np.float32(2.0)` in the loop, `x_ * 2.0f` in
CUDA): the kernel computes what numpy computes, operation by operation, differing at most
in the last bits of the transcendental functions (each library rounds exp, sin, ... its own
way). Shapes are known, so broadcasting becomes constant index arithmetic. `maximum` and
`minimum` propagate NaN, as numpy's do (C's fmax does not).
"""
import math

import numpy as np

from .fusion import Leaf, Op, source_text
from .shapes import elementwise

C_TYPES = {"float32": "float", "float64": "double", "bool": "bool"}

_UNARY_MATH = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sin": "sin",
               "cos": "cos", "tan": "tan", "tanh": "tanh", "sinh": "sinh", "cosh": "cosh",
               "arctan": "atan", "sqrt": "sqrt", "absolute": "fabs"}
_NUMPY_NAMES = {"atan": "arctan", "fabs": "abs"}
_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/",
          "greater": ">", "greater_equal": ">=", "less": "<", "less_equal": "<=",
          "equal": "==", "not_equal": "!="}


# reduced_trig's constants: 2/pi; pi/2 in three parts of 33 bits (fdlibm's pio2_1, pio2_2,
# pio2_3: n * part is exact for the n of |a| <= 1e6); fdlibm's __kernel_sin and
# __kernel_cos coefficients
_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2 = (1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21)
_SIN = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
        2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_COS = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
        -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)
RANGE_LIMIT = 1e6
# reduced_exp's constants: 1/ln 2; ln 2 in two parts (fdlibm's ln2HI, ln2LO: k * ln2HI is
# exact for |k| < 2^11); fdlibm's exp polynomial P1..P5 on [-ln2/2, ln2/2]
_INV_LN2 = 1.44269504088896338700e+00
_LN2 = (6.93147180369123816490e-01, 1.90821492927058770002e-10)
_EXP = (1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05,
        -1.65339022054652515390e-06, 4.13813679705723846039e-08)
# exp's arguments beyond this go to numpy (overflow, subnormal results, inf, NaN)
EXP_LIMIT = 708.0
# reduced_tanh's rational approximation on |x| < 0.625 (Cephes' tanh: x + x^3 P(x^2)/Q(x^2),
# Q monic)
_TANH_P = (-1.61468768441708447952e+03, -9.92877231001918586564e+01,
           -9.64399179425052238628e-01)
_TANH_Q = (4.84406305325125486048e+03, 2.23548839060100448583e+03,
           1.12811678491632931402e+02, 1.0)


def _horner(z, coefficients):
    """c0 + z * (c1 + z * (...)), written out."""
    text = repr(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        text = f"{c!r} + {z} * ({text})"
    return f"({text})"


def _compute_dtype(op):
    """The dtype an operation works in: its result's, except comparisons, which compare in
    the operands' common dtype."""
    if op.op in ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal"):
        common = elementwise(np.add, [o.abstract for o in op.operands])
        return common.dtype if common is not None else np.dtype(np.float64)
    return op.abstract.dtype


class _Writer:
    """Writes one kernel's element computation as a list of single assignments."""

    def __init__(self, kernel, lang):
        self.kernel, self.lang = kernel, lang
        self.lines = []
        self.range_checks = []    # (argument, limit) of the reduced sin/cos/exp (see
        #                           reduced_trig): beyond it, numpy computes the result
        self.count = 0
        self.local = {}
        taken = {leaf.name for leaf in kernel.inputs}
        for leaf in kernel.inputs:
            base = leaf.name + "_"
            while base in taken:
                base += "_"
            taken.add(base)
            self.local[leaf.name] = base

    # -- spelling of values in each language
    def literal(self, value, dtype):
        kind = np.dtype(dtype).kind
        if kind == "b":
            v = bool(value)
            return ("true" if v else "false") if self.lang == "c" else repr(v)
        v = float(value)
        if self.lang == "c":
            # no math.h in NVRTC: infinities and NaN as constant divisions
            text = "(1.0 / 0.0)" if v == math.inf else "(-1.0 / 0.0)" if v == -math.inf else \
                "(0.0 / 0.0)" if v != v else repr(v)
            if dtype == np.float32:
                return f"(float){text}" if not math.isfinite(v) else text + "f"
            return text
        text = "np.inf" if v == math.inf else "(-np.inf)" if v == -math.inf else \
            "np.nan" if v != v else repr(v)
        return f"np.float32({text})" if dtype == np.float32 else text

    def cast(self, text, have, want):
        if np.dtype(have) == np.dtype(want):
            return text
        if self.lang == "c":
            return f"({C_TYPES[np.dtype(want).name]})({text})"
        return f"np.{np.dtype(want).name}({text})"

    def call(self, fn, args, dtype):
        if self.lang == "c":
            name = fn + ("f" if dtype == np.float32 else "")
            return f"{name}({', '.join(args)})"
        return f"np.{_NUMPY_NAMES.get(fn, fn)}({', '.join(args)})"

    # -- the tree
    def operand(self, node, want):
        if isinstance(node, Op):
            return self.cast(self.op(node), node.abstract.dtype, want)
        if node.name is None:                       # a literal number
            return self.literal(node.value, want)
        text = self.local[node.name]
        have = node.abstract.dtype if not node.abstract.weak else \
            (np.dtype(np.float64) if self.lang == "c" else node.abstract.dtype)
        return self.cast(text, have, want)

    def op(self, op):
        dtype = op.abstract.dtype
        work = _compute_dtype(op)
        name = op.op
        if name == "where":
            cond = self.operand(op.operands[0], np.dtype(np.bool_))
            a, b = (self.operand(o, dtype) for o in op.operands[1:])
            expr = f"{cond} ? {a} : {b}" if self.lang == "c" else f"{a} if {cond} else {b}"
            return self.emit(expr, dtype)
        if name == "power" and isinstance(op.operands[1], Leaf) and \
                op.operands[1].name is None and op.operands[1].value in (2, 0.5, -1, 1):
            a = self.operand(op.operands[0], work)
            e = op.operands[1].value
            expr = {2: f"{a} * {a}", 0.5: self.call("sqrt", [a], work),
                    -1: f"{self.literal(1.0, work)} / {a}", 1: a}[e]
            return self.emit(expr, dtype)
        args = [self.operand(o, work) for o in op.operands]
        if name in _INFIX:
            expr = f"{args[0]} {_INFIX[name]} {args[1]}"
        elif name == "negative":
            expr = f"-{args[0]}"
        elif name == "square":
            expr = f"{args[0]} * {args[0]}"
        elif name == "reciprocal":
            expr = f"{self.literal(1.0, work)} / {args[0]}"
        elif name == "power":
            expr = self.call("pow", args, work) if self.lang == "c" else \
                f"{args[0]} ** {args[1]}"
        elif name in ("maximum", "minimum"):
            a, b = args
            cmp = ">" if name == "maximum" else "<"
            test = f"{a} != {a} || {a} {cmp} {b}" if self.lang == "c" else \
                f"{a} != {a} or {a} {cmp} {b}"
            expr = f"({test}) ? {a} : {b}" if self.lang == "c" else f"{a} if {test} else {b}"
        elif name in ("sin", "cos") and self.lang == "py" and work == np.float64:
            return self.reduced_trig(name, args[0])
        elif name == "exp" and self.lang == "py" and work == np.float64:
            return self.reduced_exp(args[0])
        elif name == "tanh" and self.lang == "py" and work == np.float64:
            return self.reduced_tanh(args[0])
        else:
            expr = self.call(_UNARY_MATH[name], args, work)
        return self.emit(expr, dtype)

    def reduced_trig(self, name, a):
        """float64 sin or cos of `a` in arithmetic the compiler vectorizes (libm's sin is
        one call per element, about 8x slower here): `a` reduced by pi/2 in three parts
        (exact for |a| <= 1e6), fdlibm's polynomials on [-pi/4, pi/4], the quadrant chosen
        by selects. Within 2 ulp of libm's. An argument beyond 1e6, infinite or NaN is
        counted (`range_checks`): the kernel then runs numpy's statements instead."""
        f64 = np.dtype(np.float64)
        e = self.emit
        n = e(f"np.floor({a} * {_TWO_OVER_PI!r} + 0.5)", f64)
        r = e(f"(({a} - {n} * {_PIO2[0]!r}) - {n} * {_PIO2[1]!r}) - {n} * {_PIO2[2]!r}", f64)
        z = e(f"{r} * {r}", f64)
        s = e(f"{r} if {r} == 0.0 else {r} + {r} * {z} * {_horner(z, _SIN)}", f64)  # -0.0
        hz = e(f"0.5 * {z}", f64)
        w = e(f"1.0 - {hz}", f64)
        c = e(f"{w} + (((1.0 - {w}) - {hz}) + {z} * {z} * {_horner(z, _COS)})", f64)
        m = e(f"{n} - 4.0 * np.floor({n} * 0.25)", f64)         # the quadrant, 0 to 3
        odd = f"{m} == 1.0 or {m} == 3.0"
        if name == "sin":        # s, c, -s, -c
            v = e(f"{c} if ({odd}) else {s}", f64)
            negative = f"{m} >= 2.0"
        else:                    # c, -s, -c, s
            v = e(f"{s} if ({odd}) else {c}", f64)
            negative = f"{m} == 1.0 or {m} == 2.0"
        self.range_checks.append((a, RANGE_LIMIT))
        return e(f"-{v} if ({negative}) else {v}", f64)

    def power_of_two(self, k, bits):
        """2**k, exactly, for a whole float 0 <= k < 2**bits, by selects (a table lookup or
        ldexp would keep the loop from vectorizing)."""
        f64 = np.dtype(np.float64)
        p, m = None, k
        for b in reversed(range(bits)):
            step = float(2 ** b)
            factor = repr(2.0 ** (2 ** b))
            if p is None:
                p = self.emit(f"{factor} if {m} >= {step!r} else 1.0", f64)
            else:
                p = self.emit(f"{p} * {factor} if {m} >= {step!r} else {p}", f64)
            if b:
                m = self.emit(f"{m} - {step!r} if {m} >= {step!r} else {m}", f64)
        return p

    def exp_parts(self, y):
        """(k, e) with exp(y) = 2**k * e, e in [0.7, 1.42] within an ulp (fdlibm's exp:
        y reduced by ln 2 in two parts, its polynomial and correction)."""
        f64 = np.dtype(np.float64)
        e = self.emit
        k = e(f"np.floor({y} * {_INV_LN2!r} + 0.5)", f64)
        hi = e(f"{y} - {k} * {_LN2[0]!r}", f64)
        lo = e(f"{k} * {_LN2[1]!r}", f64)
        r = e(f"{hi} - {lo}", f64)
        t = e(f"{r} * {r}", f64)
        c = e(f"{r} - {t} * {_horner(t, _EXP)}", f64)
        return k, e(f"1.0 - (({lo} - ({r} * {c}) / (2.0 - {c})) - {hi})", f64)

    def reduced_exp(self, a):
        """float64 exp of `a` in arithmetic the compiler vectorizes, within an ulp of libm's
        for |a| <= 708 (normal results); other arguments (overflow, subnormal results, inf,
        NaN) are counted (`range_checks`) and numpy's statements compute the result."""
        f64 = np.dtype(np.float64)
        e = self.emit
        # clamped so that the power of two stays finite whatever the argument
        y = e(f"{a} if abs({a}) <= {EXP_LIMIT!r} else 0.0", f64)
        k, m = self.exp_parts(y)
        size = e(f"-{k} if {k} < 0.0 else {k}", f64)
        p = self.power_of_two(size, 10)
        self.range_checks.append((a, EXP_LIMIT))
        return e(f"{m} / {p} if {k} < 0.0 else {m} * {p}", f64)

    def reduced_tanh(self, a):
        """float64 tanh of `a` in arithmetic the compiler vectorizes (about 3x numpy's):
        Cephes' rational function below 0.625, 1 - 2 / (exp(2|a|) + 1) above (|a| clamped
        to 20, where tanh is 1 to the last bit). Within 2 ulp of libm's, signed zeros,
        infinities and NaN kept: no range to check."""
        f64 = np.dtype(np.float64)
        e = self.emit
        z = e(f"-{a} if {a} < 0.0 else {a}", f64)
        z = e(f"20.0 if {z} > 20.0 else {z}", f64)      # (NaN stays NaN)
        s = e(f"{a} * {a}", f64)
        small = e(f"{a} + {a} * {s} * ({_horner(s, _TANH_P)} / {_horner(s, _TANH_Q)})", f64)
        k, m = self.exp_parts(e(f"2.0 * {z}", f64))
        big = e(f"1.0 - 2.0 / ({m} * {self.power_of_two(k, 6)} + 1.0)", f64)
        big = e(f"-{big} if {a} < 0.0 else {big}", f64)
        v = e(f"{small} if {z} < 0.625 else {big}", f64)
        return e(f"{a} if {a} == 0.0 else {v}", f64)          # -0.0

    def emit(self, expr, dtype):
        name = f"t{self.count}"
        self.count += 1
        if self.lang == "c":
            self.lines.append(f"const {C_TYPES[np.dtype(dtype).name]} {name} = {expr};")
        else:
            self.lines.append(f"{name} = {expr}")
        return name


def _index(shape, out_shape, names):
    """The index of an input of `shape` broadcast against `out_shape`, per output axis."""
    lead = len(out_shape) - len(shape)
    return [names[lead + k] if d != 1 else "0" for k, d in enumerate(shape)]


def _free_name(base, kernel, *more_taken):
    """`base`, or `base_` ... if an input of the kernel (or one of `more_taken`) has that
    name: the output buffer and loop indices are parameters and locals beside them."""
    taken = {leaf.name for leaf in kernel.inputs} | set(more_taken)
    while base in taken:
        base += "_"
    return base


def cpu_loop(kernel):
    """A Python loop over the output's elements (numba compiles it; see runtime/kernels.py),
    and whether it checks ranges (it then returns how many arguments were out of range)."""
    w = _Writer(kernel, "py")
    out_shape = kernel.out.shape
    out = _free_name("out", kernel, *w.local.values())
    axes = [_free_name(f"i{k}", kernel, *w.local.values()) for k in range(len(out_shape))]
    loads, scalars = [], []
    for leaf in kernel.inputs:
        a = leaf.abstract
        if a.weak:
            scalars.append(f"{w.local[leaf.name]} = {leaf.name}")
        elif not a.shape:            # passed as a one-element array (runtime.CpuKernel)
            loads.append(f"{w.local[leaf.name]} = {leaf.name}[0]")
        else:
            loads.append(f"{w.local[leaf.name]} = {leaf.name}[{', '.join(_index(a.shape, out_shape, axes))}]")
    result = w.op(kernel.tree)
    params = ", ".join([leaf.name for leaf in kernel.inputs] + [out])
    lines = [f"def {kernel.name}_loop({params}):"]
    indent = "    "
    lines += [indent + text for text in scalars]
    far = _free_name("far", kernel, *w.local.values(), *axes, out)
    if w.range_checks:
        # how many arguments of the reduced sin/cos/exp were out of range: the caller
        # (runtime.CpuKernel) then runs numpy's statements instead
        lines.append(f"{indent}{far} = 0")
    for k, n in enumerate(out_shape):
        lines.append(f"{indent}for {axes[k]} in range({n}):")
        indent += "    "
    checks = [f"{far} += 0 if abs({a}) <= {limit!r} else 1" for a, limit in w.range_checks]
    for text in loads + w.lines + checks + [f"{out}[{', '.join(axes)}] = {result}"]:
        lines.append(indent + text)
    if w.range_checks:
        lines.append(f"    return {far}")
    return "\n".join(lines) + "\n", bool(w.range_checks)


def numpy_fallback(kernel):
    """The fused statements as numpy runs them, the last one writing into `out`."""
    *body, last = kernel.statements
    out = _free_name("out", kernel, *(t.id for s in body for t in s.targets
                                       if hasattr(t, "id")))
    params = ", ".join([leaf.name for leaf in kernel.inputs] + [out])
    lines = [f"def {kernel.name}_numpy({params}):"]
    for s in body:
        lines.append("    " + source_text(s))
    lines.append(f"    {out}[...] = " + source_text(last.value))
    return "\n".join(lines) + "\n"


def cuda_source(kernel):
    """One CUDA C kernel: a grid-stride loop over the output's elements."""
    w = _Writer(kernel, "c")
    out_shape = kernel.out.shape
    out = _free_name("out", kernel, *w.local.values())
    index = _free_name("i", kernel, *w.local.values())
    n = int(np.prod(out_shape, dtype=np.int64))
    strides = [int(np.prod(out_shape[k + 1:], dtype=np.int64)) for k in range(len(out_shape))]
    coords = [f"({index} / {strides[k]}LL) % {d}LL" if k else f"{index} / {strides[k]}LL"
              for k, d in enumerate(out_shape)]
    params, loads = [], []
    for leaf in kernel.inputs:
        a = leaf.abstract
        local = w.local[leaf.name]
        if a.weak:
            params.append(f"const double {leaf.name}")
            loads.append(f"const double {local} = {leaf.name};")
            continue
        ctype = C_TYPES[a.dtype.name]
        params.append(f"const {ctype}* __restrict__ {leaf.name}")
        if a.shape == out_shape:
            at = index
        elif not a.shape or all(d == 1 for d in a.shape):
            at = "0"
        else:
            lead = len(out_shape) - len(a.shape)
            in_strides = [int(np.prod(a.shape[k + 1:], dtype=np.int64))
                          for k in range(len(a.shape))]
            terms = [f"({coords[lead + k]}) * {in_strides[k]}LL"
                     for k, d in enumerate(a.shape) if d != 1]
            at = " + ".join(terms)
        loads.append(f"const {ctype} {local} = {leaf.name}[{at}];")
    result = w.op(kernel.tree)
    out_type = C_TYPES[kernel.out.dtype.name]
    params.append(f"{out_type}* __restrict__ {out}")
    body = loads + w.lines + [f"{out}[{index}] = {result};"]
    text = [f'extern "C" __global__ void {kernel.name}({", ".join(params)}) {{',
            f"    // {kernel.describe()}",
            f"    // out: {kernel.out.dtype.name}{list(out_shape)}",
            f"    for (long long {index} = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
            f"{index} < {n}LL;",
            f"         {index} += (long long)blockDim.x * gridDim.x) {{"]
    text += ["        " + line for line in body]
    text += ["    }", "}"]
    return "\n".join(text) + "\n"


def input_kinds(kernel):
    """For each input, how the launcher passes it: "array", "scalar" (a Python number) or
    "0-d" (a numpy scalar or 0-d array; the CPU loop reads it from a one-element array)."""
    return tuple("scalar" if leaf.abstract.weak else "0-d" if not leaf.abstract.shape
                 else "array" for leaf in kernel.inputs)


__all__ = ["cpu_loop", "numpy_fallback", "cuda_source", "input_kinds"]
