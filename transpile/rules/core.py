"""The primitive table: one `Primitive` per numpy function or operator, holding its rules.

A rule is written as real Python (a *template*), registered right under the primitive it
belongs to:

    @rev("np.tanh", "math.tanh")
    def tanh(dout, out, x):
        dx = dout * (1.0 - out * out)

The template's parameters are placeholders: `dout` is the adjoint of the output, `out` the
primal output, the rest are the primitive's own parameters, named and defaulted exactly as
the primitive takes them, so a call site binds to them like a call. The body assigns `d<p>`
for each parameter `p` it differentiates. The reverse pass copies the body, renames the
placeholders to the call site's variables and fresh names, and accumulates each `d<p>`
into the adjoint of the argument. Parameters with no `d<p>` get no gradient.

Spellings: "np.tanh" (how generated code calls it), or an operator symbol ("+", "u-",
"[]" for subscripts). Later transformations (jvp, vmap) add their own slots to `Primitive`.
"""
import inspect
import operator
import sys
import textwrap

import gast
import numpy as np

import runtime as rt
from ..ir import anno
from ..errors import TransformError

try:  # scipy is optional; its functions get rules only when it is installed
    import scipy.special as _scipy_special
except ImportError:  # pragma: no cover
    _scipy_special = None

# Operator spellings -> (gast node class, Python callable)
BINOPS = {
    "+": (gast.Add, operator.add), "-": (gast.Sub, operator.sub), "*": (gast.Mult, operator.mul),
    "/": (gast.Div, operator.truediv), "**": (gast.Pow, operator.pow),
    "@": (gast.MatMult, operator.matmul), "//": (gast.FloorDiv, operator.floordiv),
    "%": (gast.Mod, operator.mod), "&": (gast.BitAnd, operator.and_),
    "|": (gast.BitOr, operator.or_), "^": (gast.BitXor, operator.xor),
    "<<": (gast.LShift, operator.lshift), ">>": (gast.RShift, operator.rshift),
}
UNARYOPS = {"u-": (gast.USub, operator.neg), "u+": (gast.UAdd, operator.pos),
            "not": (gast.Not, operator.not_), "~": (gast.Invert, operator.invert)}
CMPOPS = {"<": gast.Lt, "<=": gast.LtE, ">": gast.Gt, ">=": gast.GtE, "==": gast.Eq,
          "!=": gast.NotEq, "is": gast.Is, "is not": gast.IsNot, "in": gast.In,
          "not in": gast.NotIn}
OPERATOR_SPELLINGS = set(BINOPS) | set(UNARYOPS) | set(CMPOPS) | {"[]", "tuple", "list", "dict"}

_NAMESPACE = {"np": np, "rt": rt, "math": __import__("math"), "builtins": __import__("builtins")}
if _scipy_special is not None:
    _NAMESPACE["scipy"] = __import__("scipy")


# Primitives returning a tuple or list of arrays (their adjoints are containers).
CONTAINER_OUTPUT = {"np.split", "np.array_split", "np.hsplit", "np.vsplit", "np.dsplit",
                    "np.linalg.slogdet", "np.linalg.eigh", "np.linalg.svd", "np.linalg.qr",
                    "np.meshgrid", "np.unstack", "rt.to_tuple", "rt.to_list",
                    "rt.concatenate_adj", "rt.stack_adj"}


class Template:
    """A rule written as Python: parameters are placeholders, the body is copied per use."""

    def __init__(self, fn, forward=False):
        src = textwrap.dedent(inspect.getsource(fn))
        node = gast.parse(src).body[0]
        self.name = fn.__name__
        self.node = node
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters)
        self.body = node.body
        if self.body and isinstance(self.body[0], gast.Expr) and isinstance(
                getattr(self.body[0], "value", None), gast.Constant):
            self.body = self.body[1:]  # docstring
        self.assigned = {t.id for s in gast.walk(node) if isinstance(s, gast.Assign)
                         for t in s.targets if isinstance(t, gast.Name)}
        self.differentiates = [p for p in self.params if "d" + p in self.assigned]
        if forward:   # which tangents each statement reads
            self.reads = [{n.id[1:] for n in gast.walk(st) if isinstance(n, gast.Name)
                           and n.id.startswith("d") and n.id[1:] in self.params
                           and not isinstance(n.ctx, gast.Store)} for st in self.body]


class Primitive:
    """One function of the array world and everything the transformations know about it."""

    def __init__(self, name):
        self.name = name            # readable name, used for temporaries (`tanh`, `add`)
        self.spellings = []         # how generated code calls it: "np.tanh", "+", ...
        self.rev = None             # Template of the reverse rule, or None
        self.fwd = None             # Template of the forward (tangent) rule, or None
        self.nondiff = False        # outputs carry no derivative (argmax, comparisons, ...)
        self.view = ()              # positions of arguments the result may be or share
                                    # memory with (a view, the argument passed through)
        self.side_effect = False    # must not be removed even if its result is unused
        self.container = False      # tuple/list/dict literal: structural rule
        self.stateful = False       # mutates its first argument (a stack pop)
        self.container_out = False  # returns a tuple/list (np.split, slogdet, ...)
        self.batch = None           # BatchRule: how vmap pushes a batch axis through it
        self.batch_for = {}         # spelling -> BatchRule, where spellings differ (float)
        self.fold = None            # args (AST) -> simpler AST or None, for literal arguments
        self.when_differentiated = None   # the spelling differentiated code calls instead
        self.zero_flow = None       # how zeros of an adjoint pass through it (zero_flow below)
        self.unpicked = {}          # parameter -> expression: where the output did not take it

    def __deepcopy__(self, memo):
        return self  # the table is shared: copying an annotated AST must not copy rules

    def __repr__(self):
        return f"<primitive {self.name}: {', '.join(self.spellings)}>"


_BY_SPELLING = {}   # "np.tanh" -> Primitive
_BY_OBJECT = {}     # id(np.tanh) -> (Primitive, "np.tanh")
_OBJECTS = []       # keep objects alive so ids stay unique


def _object_of(spelling):
    if spelling in OPERATOR_SPELLINGS:
        return None
    try:
        return eval(spelling, dict(_NAMESPACE))  # noqa: S307 - our own table's spellings
    except (AttributeError, NameError):
        return None


def _register(spellings, name):
    prim = None
    for s in spellings:
        if s in _BY_SPELLING:
            prim = _BY_SPELLING[s]
    if prim is None:
        prim = Primitive(name)
    for s in spellings:
        obj = _object_of(s)
        if obj is None and s not in OPERATOR_SPELLINGS:
            continue  # e.g. scipy not installed, or a numpy function this version lacks
        if s not in prim.spellings:
            prim.spellings.append(s)
        _BY_SPELLING[s] = prim
        if obj is not None and id(obj) not in _BY_OBJECT:
            # generated code imports numpy and runtime only: scipy's function is called
            # through its re-export (rt.logsumexp, which sends cupy arrays to cupyx)
            emitted = s if not s.startswith("scipy.") else next(
                (t for t in spellings if t.startswith("rt.")), s)
            _BY_OBJECT[id(obj)] = (prim, emitted)
            _OBJECTS.append(obj)
        if inspect.ismethod(obj):   # each `scipy.stats.norm.logpdf` is a new bound method;
            # generated code calls it by the row's first spelling (its runtime re-export)
            _BY_OBJECT.setdefault(_method_key(obj), (prim, prim.spellings[0]))
    return prim


def _method_key(method):
    """The key of a bound method in _BY_OBJECT: its object and function (kept alive by
    _OBJECTS, which holds a method bound to them)."""
    return ("method", id(method.__self__), id(method.__func__))


def rev(*spellings, view=False, container_out=False, side_effect=False):
    """Register the reverse-mode template below it for the primitive(s) spelled so.

    view: the result may be its first argument or share its memory (True), or one of the
    arguments at these positions (a tuple): the aliasing pass then knows that an in-place
    write into the argument reaches it.
    container_out: the primitive returns a tuple or list; the template then receives an
    adjoint whose unset slots are zeros (`rt.filled`). side_effect: as for `nondiff`."""
    def decorate(fn):
        prim = _register(spellings, fn.__name__)
        prim.rev = Template(fn)
        prim.view = _positions(prim.view, view)
        prim.side_effect = prim.side_effect or side_effect
        prim.container_out = prim.container_out or container_out or \
            any(s in CONTAINER_OUTPUT for s in spellings)
        return fn
    return decorate


def _positions(had, view):
    """The argument positions a result may share memory with: `had`, and `view` (True: the
    first argument)."""
    more = (0,) if view is True else tuple(view or ())
    return tuple(sorted(set(had) | set(more)))


def register_container(kind):
    """Container literals: their rule is structural and lives in the reverse pass."""
    prim = _register([kind], kind)
    prim.container = True
    return prim


def stateful(spelling, name):
    """Calls that change a variable in place (rt.pop_adjoint pops its first argument); their
    rule is the pop rule in reverse/adjoints.py."""
    prim = _register([spelling], name)
    prim.stateful = True
    return prim


def fwd(*spellings):
    """Register the forward-mode (tangent) template below it for the primitive(s) spelled so.

    Parameters: `out`, then the primitive's own parameters; the body reads the tangents
    `d<param>` and assigns `dout`. Several `dout = ...` statements that each read one
    tangent are summed, and those whose tangent is zero are dropped (so `x * y` with a
    constant `y` costs one multiplication)."""
    def decorate(fn):
        prim = _register(spellings, fn.__name__)
        prim.fwd = Template(fn, forward=True)
        return fn
    return decorate


def nondiff(*spellings, view=False, side_effect=False, name=None):
    """Mark primitives whose outputs carry no derivative (integer or boolean results)."""
    for s in spellings:
        prim = _register([s], name or s.rsplit(".", 1)[-1].replace("[]", "getitem"))
        prim.nondiff = True
        prim.view = _positions(prim.view, view)
        prim.side_effect = prim.side_effect or side_effect


def differentiated_calls(spelling, instead):
    """Code that forward or reverse mode makes calls `instead` where the code it is made
    from calls `spelling` (same arguments, same value where it matters): rt.lane_guard is
    free in vmapped code, rt.lane_borrow keeps the values and partials of differentiated
    code finite."""
    _register([spelling], spelling.rsplit(".", 1)[-1]).when_differentiated = instead


def fold(spelling):
    """Register the function below it as the constant folding of calls to `spelling` in
    generated code (optimize.simplify): it takes the call's arguments (AST) and returns a
    simpler expression, or None to keep the call. For helpers whose general form guards an
    edge case that a literal argument rules out."""
    def decorate(fn):
        _register([spelling], fn.__name__).fold = fn
        return fn
    return decorate


def number(node):
    """The value of a literal int/float argument (`2`, `-0.5`), else None."""
    if isinstance(node, gast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = number(node.operand)
        return -inner if inner is not None else None
    return None


def power_node(base, exponent):
    """The expression `base ** exponent` (a literal exponent), annotated as a primitive."""
    node = gast.BinOp(left=base, op=gast.Pow(), right=gast.Constant(value=exponent, kind=None))
    anno.set(node, anno.Anno.PRIM, (_BY_SPELLING["**"], "**"))
    return node


class BatchRule:
    """How vmap handles a primitive whose arguments carry a batch axis (always axis 0).

    kind "elementwise": numpy broadcasting does it; batched operands are aligned with the
        others (`rt.align`) and the call is spelled `vectorized` (math.exp -> np.exp).
    kind "same": calling the primitive on the batched arguments is already right
        (np.copy, np.zeros_like: they treat every axis alike).
    kind "template": a template (parameters as the primitive's) assigning `out`; it may read
        `<param>_batched` (True/False at the call site), `<param>_spec` and `batch_size`.
    kind "lanes": a runtime helper taking `outer` (see batch_lanes).
    kinds "collective", "axis_size", "unsupported": handled by the vmap pass itself.
    out_batched: False for rules whose result is the same for every example (len, shape).
    """

    def __init__(self, kind, template=None, vectorized=None, out_batched=True, arrays=(),
                 each=False, param="outer"):
        self.kind, self.template, self.vectorized = kind, template, vectorized
        self.out_batched = out_batched
        self.arrays, self.each, self.param = tuple(arrays), each, param   # kind "lanes"


def batch(*spellings, out_batched=True):
    """Register the batching template below it (see BatchRule) for the primitive(s)."""
    def decorate(fn):
        rule = BatchRule("template", Template(fn), out_batched=out_batched)
        for s in spellings:
            _set_batch(_register([s], fn.__name__), s, rule)
        return fn
    return decorate


# How the zeros of an adjoint (or tangent) pass through a primitive's rule. A zero is
# *structural* where the function's output does not depend on that entry at all (np.where
# did not pick it, a write overwrote it, indexing did not read it): the derivative through
# that entry is then 0 even where a partial derivative further on is infinite, where
# 0 * inf would give nan (`np.where(x > 0, np.sqrt(x), 0.0)` at x = 0). The reverse pass
# tracks which adjoints hold only structural zeros (reverse/structural_zeros.py).
ZERO_FLOWS = {
    # the adjoint of each argument is the output's adjoint moved, copied, summed or scaled by
    # constants: its zeros are structural if the output adjoint's are
    "linear",
    # linear, and entries the output did not take get 0 (np.where, max, indexing): those 0s
    # are structural
    "select",
    # nonlinear and elementwise, with a partial derivative that is never 0 at a finite
    # argument (log, sqrt): no new zeros
    "nonvanishing",
    # `*` and `/`: linear in one argument while the other is a constant
    "scale",
    # linear, and its rule only moves entries (np.reshape, np.transpose, vmap's rt.align):
    # applied to a mask of structural zeros, the rule moves the mask along
    "rearrange",
}


def zero_flow(kind, *spellings, unpicked=None):
    """Say how zeros pass through the primitives spelled so (one of ZERO_FLOWS).
    `unpicked` (for "select"): {parameter: a Python expression in the primitive's
    parameters}, true where the output did not take that argument's entry (an argument's
    adjoint is then a structural 0 there, whatever the output's adjoint holds)."""
    assert kind in ZERO_FLOWS, kind
    masks = {p: gast.parse(text, mode="eval").body for p, text in (unpicked or {}).items()}
    for s in spellings:
        prim = _register([s], s.rsplit(".", 1)[-1])
        prim.zero_flow = kind
        prim.unpicked = masks


def batch_elementwise(*spellings, vectorized=None):
    """Elementwise primitives (broadcasting, one result per element): numpy broadcasting
    batches them once per-example ranks are aligned. `vectorized`: the spelling that works
    on arrays, for math.* and builtins."""
    for s in spellings:
        _set_batch(_register([s], s.rsplit(".", 1)[-1]), s,
                   BatchRule("elementwise", vectorized=vectorized or s))


def batch_same(*spellings, out_batched=True):
    """Primitives that already treat a leading batch axis like any other axis (or, with
    out_batched=False, whose result is the same for every example)."""
    for s in spellings:
        _set_batch(_register([s], s.rsplit(".", 1)[-1]), s,
                   BatchRule("same", out_batched=out_batched))


def batch_lanes(spelling, arrays, out_batched=True, each=False, param="outer"):
    """The batching rule of a runtime helper taking `outer` (runtime/batching.py): its
    unbatched `arrays` arguments are viewed along the batch and `outer` goes up by one.

    each=True: the helper takes `outer` per argument (`frames`): no argument is viewed,
    each is told whether it carries this vmap's axis. `param`: the name of that argument."""
    set_batch_rule(spelling, BatchRule("lanes", out_batched=out_batched, arrays=arrays,
                                       each=each, param=param))


def set_batch_rule(spelling, rule):
    """Give the primitive spelled so the batching rule `rule` (a BatchRule)."""
    _set_batch(lookup(spelling), spelling, rule)


def _set_batch(prim, spelling, rule):
    prim.batch_for[spelling] = rule
    if prim.batch is None or spelling == prim.spellings[0]:
        prim.batch = rule


# Spellings that generated code uses for speed but that mean another primitive: code
# transformed again is written with the plain one (an in-place add would change values the
# outer transformation saved).
CANONICAL = {"rt.index_add_into": "rt.index_add"}


def lookup_object(obj):
    """(Primitive, spelling) for a Python callable, or None if it is not in the table."""
    found = _BY_OBJECT.get(id(obj))
    if found is None and inspect.ismethod(obj):
        found = _BY_OBJECT.get(_method_key(obj))
    if found is not None and found[1] in CANONICAL:
        return _BY_SPELLING[CANONICAL[found[1]]], CANONICAL[found[1]]
    return found


def lookup(spelling):
    return _BY_SPELLING.get(spelling)


_SUBSCRIPT = {}     # id(np.r_) -> "rt.r_"


def subscript_primitive(obj_spelling, spelling):
    """`obj[...]` for the object spelled `obj_spelling` (np.r_, np.c_) is a call of the
    primitive `spelling` with the index's items as one tuple (slices as slice objects): the
    front end rewrites it so, and the primitive's rules differentiate it like a call."""
    obj = _object_of(obj_spelling)
    if obj is not None:
        _SUBSCRIPT[id(obj)] = spelling
        _OBJECTS.append(obj)


def lookup_subscript(obj):
    """The primitive spelling that `obj[...]` is rewritten to, or None."""
    return _SUBSCRIPT.get(id(obj))


def all_primitives():
    seen = []
    for p in _BY_SPELLING.values():
        if p not in seen:
            seen.append(p)
    return seen


# Modules whose functions the table spells with a prefix (most specific first), and the rules
# file their rows belong in.
_MODULES = [("numpy.linalg", "np.linalg", "linalg.py"), ("numpy.fft", "np.fft", "fft.py"),
            ("numpy.random", "np.random", "elementwise.py"), ("numpy", "np", None),
            ("scipy.special", "scipy.special", "special.py"), ("math", "math", "elementwise.py")]


def table_spelling(value):
    """How a row for the callable `value` would be spelled ('np.linalg.eigvals',
    'scipy.special.gammaln', 'math.erf'), found by looking the object up in the modules the
    table knows; None if it is in none of them."""
    import sys
    name = getattr(value, "__name__", None)
    if not isinstance(name, str):
        return None
    for module, prefix, _ in _MODULES:
        mod = sys.modules.get(module)
        if mod is not None and getattr(mod, name, None) is value:
            return f"{prefix}.{name}"
    return None


def missing_rule_message(value, written=None):
    """(message, hint) for a call of `value`, a callable with no row in the table. `written`
    is the call's function as the user spelled it (`np.linalg.eigh`, `la.eigh`), if dotted."""
    owner = getattr(value, "__self__", None)
    if isinstance(owner, np.ndarray) and hasattr(np, getattr(value, "__name__", "")):
        # `W.ravel()` on an array the function did not make (a global): the method is a
        # value known while transforming, not a call the front end rewrites to np.ravel(W)
        name = value.__name__
        return (f"{written or name} (the method ndarray.{name} of an array known before the "
                f"call) has no rule in transpile's primitive table.",
                f"write np.{name}(...) with the array as its first argument instead.")
    module = getattr(value, "__module__", None) or ""
    if isinstance(value, type) and module.split(".")[0] not in ("numpy", "scipy", "builtins",
                                                                "cupy", "runtime"):
        # a user's class, called to make an object in transformed code
        return (f"making an object of class {value.__qualname__} in transformed code is "
                "not supported: the transformations follow values, not objects with "
                "attributes set in __init__.",
                "make it outside the transformed function and pass it in, or read it from "
                "a global or closure (its methods are transformed with it); or make the "
                "class a dataclass registered with tp.tree_util.register_dataclass (or a "
                "NamedTuple), which transformed code may build.")
    spelling = table_spelling(value)
    if spelling is None:
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", repr(value))
        module = getattr(value, "__module__", None) or ""
        parts = module.split(".")
        for i in range(1, len(parts)):     # the public module that exports it, not a private
            public = sys.modules.get(".".join(parts[:i]))   # one (scipy.integrate.odeint)
            if public is not None and getattr(public, name, None) is value:
                module = ".".join(parts[:i])
                break
        spelling = name if module in ("", "builtins") else f"{module}.{name}"
    shown = spelling if written in (None, spelling) else f"{written} ({spelling})"
    where = next((f for m, p, f in _MODULES if f and spelling.startswith(p + ".")),
                 "elementwise.py" if isinstance(value, np.ufunc) else None)
    place = f"transpile/rules/{where}" if where else \
        "the file of transpile/rules/ holding the functions it resembles"
    spellings = f'"{spelling}"'
    if spelling.startswith("scipy."):   # generated code reaches scipy through a runtime re-export
        spellings = f'"rt.{spelling.rsplit(".", 1)[1]}", {spellings}'
        place += " (and re-export it in runtime, as rt.logsumexp is)"
    hint = (f"add it to {place}: a template under @rev({spellings}), then @fwd and a batching "
            f"rule (docs/adding_a_primitive.md), or call it outside the transformed function.")
    return f"{shown} has no rule in transpile's primitive table.", hint


def no_rule_error(fn_name):
    return TransformError(
        f"{fn_name} has no derivative rule.\n  hint: add one in transpile/rules/ (one "
        f"template under @rev(\"{fn_name}\"), see docs/adding_a_primitive.md), or mark it "
        f"nondiff if it has no derivative.")
