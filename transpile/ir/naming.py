"""Deterministic names for generated code: derived from user names plus a counter.

One `Namer` per generated function. The same input always gives the same names, so generated
text is stable across runs (cache keys and exact-text tests rely on it).
"""
import builtins
import keyword
import re

_BUILTINS = {n for n in dir(builtins) if not n.startswith("_")}

ADJOINT_PREFIX = "d"          # adjoint of `x` is `dx`
STACK_SUFFIX = "_stack"       # values of `x` saved for the backward pass: `x_stack`
TEMP_FOR_OP = {               # temporaries are named after what computed them
    "Add": "add", "Sub": "sub", "Mult": "mul", "Div": "div", "Pow": "pow",
    "MatMult": "matmul", "FloorDiv": "floordiv", "Mod": "mod", "USub": "neg",
    "UAdd": "pos", "Not": "not_", "Invert": "invert", "BitAnd": "both", "BitOr": "either",
    "BitXor": "xor",
}


class Namer:
    """Hands out fresh names that do not collide with any name already in use."""

    def __init__(self, taken=()):
        self.taken = set(taken)
        self.generated = set()      # the names fresh() handed out


    def reserve(self, name):
        self.taken.add(name)

    def fresh(self, base):
        base = re.sub(r"\W", "_", base) or "t"
        if base[0].isdigit():
            base = "_" + base
        if keyword.iskeyword(base) or base in ("np", "rt", "math") or base in _BUILTINS:
            base += "_"     # never shadow a builtin (`sum`, `max`) in generated code
        if base not in self.taken:
            self.taken.add(base)
            self.generated.add(base)
            return base
        stem = re.sub(r"_\d+$", "", base)
        k = 1
        while f"{stem}_{k}" in self.taken:
            k += 1
        name = f"{stem}_{k}"
        self.taken.add(name)
        self.generated.add(name)
        return name

    def adjoint(self, name):
        return self.fresh(ADJOINT_PREFIX + name)

    def stack(self, name):
        return self.fresh(name + STACK_SUFFIX)
