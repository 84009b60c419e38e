"""Normalizing calls: of primitives (spelled as the table spells them), of user functions
(normalized on first call, by name), of nested defs and lambdas (lifted to IR functions whose
free variables become parameters), of transformations applied while transforming
(`tp.grad(g)(x)`, `tp.jvp(f, ...)`), of functions already transformed and of custom-rule
functions, and array methods (`x.sum(0)`).

`CallNormalizer` is a part of `normalize.Normalizer`, kept here so that calls read on their
own; it uses the normalizer's `atom`, `expr`, `static`, `static_atom`, `error` and
`function_ir`. What the objects above the front end are (a transformation, a transformed
function) it asks `self.callees` (callees.py).
"""
import copy
import builtins
import functools
import inspect
import operator

import gast
import numpy as np

import runtime.trees
from .. import custom, rules
from ..errors import ArgumentDependent
from ..ir import anno
from ..ir.anno import Anno
from ..ir.nodes import assign as _assign, const as _const, name as _name, prim_call
from ..ir.program import Snapshot, is_literal
from ..ir.templates import binop_spelling, dotted, literal_index
from . import layouts
from .parse import parse_function, signature_of
from .resolved import (LocalDefault, LocalFunction, LocalPartial, LocalTemplate,
                       LocalTransformed, Static,
                       assigned_names, library_module, plain_object, third_party_function)
from .variadic import call_shape, has_variadic

ARRAY_METHODS = {
    "sum": "np.sum", "mean": "np.mean", "prod": "np.prod", "max": "np.max", "min": "np.min",
    "var": "np.var", "std": "np.std", "cumsum": "np.cumsum", "cumprod": "np.cumprod",
    "argmax": "np.argmax", "argmin": "np.argmin", "dot": "np.dot", "ravel": "np.ravel",
    "flatten": "np.ravel", "squeeze": "np.squeeze", "swapaxes": "np.swapaxes",
    "clip": "np.clip", "any": "np.any", "all": "np.all", "round": "np.round",
    "trace": "np.trace", "diagonal": "np.diagonal", "repeat": "np.repeat",
    "argsort": "np.argsort", "nonzero": "np.nonzero", "conj": "np.conj",
    "conjugate": "np.conj", "take": "np.take", "searchsorted": "np.searchsorted",
    "copy": "rt.copy", "astype": "rt.astype", "item": "float", "tolist": "rt.tolist",
}
VARARG_METHODS = {"reshape": "np.reshape", "transpose": "np.transpose"}

def _scipy_distribution(value):
    """A scipy.stats distribution object (norm, multivariate_normal, ...), whose call makes a
    frozen one."""
    module = type(value).__module__ or ""
    return module.startswith("scipy.stats") and hasattr(value, "logpdf") and \
        callable(value) and not inspect.ismethod(value)


def _canonical_distribution(dist):
    """scipy.stats' own instance of the distribution `dist` is one of (a frozen distribution
    holds a copy of it, which the table does not know), or None."""
    if not _scipy_distribution(dist):
        return None
    import scipy.stats
    name = getattr(dist, "name", None) or type(dist).__name__.removesuffix("_gen")
    canonical = getattr(scipy.stats, name, None)
    return canonical if type(canonical) is type(dist) else None


def _frozen_method(value):
    """A method of a frozen scipy.stats distribution (`norm(0.5, 2.0).logpdf`)."""
    frozen = getattr(value, "__self__", None)
    return inspect.ismethod(value) and frozen is not None and _scipy_distribution(
        getattr(frozen, "dist", None) or getattr(frozen, "_dist", None))


# builtins over functions, normalized as the loops they run (CallNormalizer.map_call, ...)
FUNCTIONAL = {id(builtins.map): "map_call", id(builtins.filter): "filter_call",
              id(functools.reduce): "reduce_call", id(builtins.sorted): "sorted_call",
              id(builtins.dict): "dict_call", id(builtins.zip): "zip_call",
              id(builtins.enumerate): "enumerate_call", id(builtins.reversed): "reversed_call"}


def _add_odeint(module_name):
    """scipy's odeint (and autograd's, the same interface) run LSODA in Fortran: transformed
    code calls transpile's solver instead (odeint_call)."""
    try:
        module = __import__(module_name, fromlist=["odeint"])
    except Exception:           # not installed
        return
    FUNCTIONAL[id(module.odeint)] = "odeint_call"


for _module_name in ("scipy.integrate", "autograd.scipy.integrate"):
    _add_odeint(_module_name)

# reductions whose `where=` (and `initial=`) transformed code writes with np.where
MASKED_REDUCTIONS = {"np.sum": "sum", "np.nansum": "sum", "np.prod": "prod",
                     "np.nanprod": "prod", "np.max": "max", "np.amax": "max", "np.min": "min",
                     "np.amin": "min", "np.mean": "mean", "np.any": "any", "np.all": "all"}


class VectorizeOptions(tuple):
    """np.vectorize(f, ...) made in transformed code: (otypes, excluded, signature); f is
    passed first where it is called (LocalPartial)."""


# Python functions that transformed code calls in place of a library's (LSODA's odeint):
# filled by the modules that define them (transpile/integrate.py), above this layer
REPLACEMENTS = {}

# id(a library function) -> (it, the Python function transformed code calls in its place,
# same signature): scipy.signal.convolve -> transpile/signal.py's, filled there
CALLED_INSTEAD = {}

# id(a numpy function writing into its first argument) -> (it, a Python function returning
# the array that write makes): np.fill_diagonal(a, v) becomes `a[...] = written(a, v)`,
# filled by transpile/numpy_written.py
WRITES_INTO_FIRST = {}

ODEINT_PARAMS = ("func", "y0", "t", "args", "Dfun", "col_deriv", "full_output", "ml", "mu",
                 "rtol", "atol", "tcrit", "h0", "hmax", "hmin", "ixpr", "mxstep", "mxhnil",
                 "mxordn", "mxords", "printmessg", "tfirst")

# ufunc methods that are numpy reductions with rules (np.add.reduce is np.sum along axis 0)
UFUNC_METHODS = {("add", "reduce"): "np.sum", ("multiply", "reduce"): "np.prod",
                 ("maximum", "reduce"): "np.max", ("minimum", "reduce"): "np.min",
                 ("add", "accumulate"): "np.cumsum", ("multiply", "accumulate"): "np.cumprod",
                 ("logaddexp", "reduce"): "rt.logsumexp", ("logical_and", "reduce"): "np.all",
                 ("logical_or", "reduce"): "np.any", ("fmax", "reduce"): "np.nanmax",
                 ("fmin", "reduce"): "np.nanmin"}

# operator.add & co., passed as functions (functools.reduce(operator.add, xs))
OPERATORS = {id(operator.add): "+", id(operator.sub): "-", id(operator.mul): "*",
             id(operator.truediv): "/", id(operator.pow): "**", id(operator.matmul): "@",
             id(operator.neg): "u-", id(operator.pos): "u+", id(operator.floordiv): "//",
             id(operator.mod): "%", id(operator.lt): "<", id(operator.le): "<=",
             id(operator.gt): ">", id(operator.ge): ">=", id(operator.eq): "==",
             id(operator.ne): "!=", id(operator.getitem): "[]"}

# Draws from a numpy Generator or RandomState (`rng.normal(size=3)`, `rs.randn(*shape)`):
# each is one standard draw, `rt.draw(rng, "standard_normal", size)`, transformed by the
# formula numpy itself applies to it (same numbers, same stream), so parameters computed
# by the function get the pathwise derivative, as np.random.normal's do.
# method -> (standard draw, parameters with defaults, formula of the draw `z`)
GENERATOR_DRAWS = {
    "standard_normal": ("standard_normal", (), "z"),
    "random": ("random", (), "z"),
    "random_sample": ("random", (), "z"),
    "standard_exponential": ("standard_exponential", (), "z"),
    "randn": ("standard_normal", None, "z"),      # None: dimensions as arguments
    "rand": ("random", None, "z"),
    "normal": ("standard_normal", (("loc", 0.0), ("scale", 1.0)), "loc + scale * z"),
    "uniform": ("random", (("low", 0.0), ("high", 1.0)), "low + (high - low) * z"),
    "exponential": ("standard_exponential", (("scale", 1.0),), "scale * z"),
}


class CallNormalizer:
    """How `Normalizer` normalizes calls and the definitions they call (see above)."""

    def stmt_FunctionDef(self, node):
        self.check_single_binding(node.name, node)
        decorators, node.decorator_list = node.decorator_list, []
        stmts = []
        fn = self.lift(node, node.name, stmts=stmts)
        for deco in reversed(decorators):     # @tp.vmap, @partial(tp.vmap, in_axes=...)
            fn = self.decorate(fn, deco)
        self.local_fns[node.name] = fn
        return stmts

    def decorate(self, fn, deco):
        """A nested function under a decorator: only transformations are known here."""
        transform, options = self.static(deco), {}
        if transform is None and isinstance(deco, gast.Call) and deco.args and \
                not any(isinstance(a, gast.Starred) for a in deco.args):
            head = self.static(deco.func)
            if isinstance(head, Static) and head.value is functools.partial:
                transform, rest = self.static(deco.args[0]), deco.args[1:]
            else:
                transform, rest = None, []
            if rest or any(not _is_literal(k.value) for k in deco.keywords):
                transform = None
            options = {k.arg: _literal(k.value) for k in deco.keywords}
        elif transform is None and isinstance(deco, gast.Call) and not deco.args:
            head = self.static(deco.func)          # @tp.vmap(in_axes=...) is not JAX's
            transform = None if head is None else head
        if isinstance(transform, Static) and \
                self.callees.transformation(transform.value) not in (None, "jvp", "vjp"):
            return self.apply_transformation(transform.value, fn, [], options, deco)
        raise self.error(deco, "this decorator cannot be applied to a nested function in "
                         "transformed code: only transpile's transformations can (tp.grad, "
                         "tp.vmap, ..., or functools.partial of one with literal options).",
                         "define the function outside the transformed one.")

    def expr_Lambda(self, node, stmts):
        fdef = gast.FunctionDef(name="lambda", args=node.args, body=[gast.Return(value=node.body)],
                                decorator_list=[], returns=None, type_comment=None,
                                type_params=[])
        gast.copy_location(fdef, node)
        return self.lift(fdef, "lambda", stmts=stmts)

    def expr_Call(self, node, stmts, hint=None):
        if self.is_generator_draw(node):
            return self.generator_draw(node, stmts)
        if isinstance(node.func, gast.Name) and node.func.id in getattr(self, "choices", {}):
            return self.chosen_call(node, stmts, hint)
        if self.code_lookup(node.func):
            return self.looked_up_call(node, stmts, hint)
        made = self.made_function(node)
        if made is not None:           # `make_activation("relu")`: the function it makes
            return made
        if isinstance(node.func, gast.Attribute) and node.func.attr == "keys" and \
                not node.args and not node.keywords and \
                isinstance(self.static(node.func.value), Static) and \
                self.maps_to_code(self.static(node.func.value).value):
            # the keys of a dict of functions known now (`reg_type in reg_types.keys()`)
            keys = tuple(self.static(node.func.value).value)
            return _const(keys) if is_literal(keys) else \
                _name(self.program.constant(keys, "keys"))
        if isinstance(node.func, gast.Attribute) and node.func.attr in VARARG_METHODS and \
                len(node.args) == 1 and isinstance(node.args[0], gast.Starred) and \
                not node.keywords and self.static(node.func.value) is None:
            # x.reshape(*shape) is x.reshape(shape), whatever the length of shape
            node = gast.copy_location(gast.Call(func=node.func, args=[node.args[0].value],
                                                keywords=[]), node)
        if not node.keywords and isinstance(self.static(node.func), Static) and \
                self.static(node.func).value in (np.random.rand, np.random.randn) and \
                (not any(isinstance(a, gast.Starred) for a in node.args) or
                 len(node.args) == 1):
            # np.random.rand(*x.shape) or rand(n, d) (cs231n's dropout mask) is uniform(0.0,
            # 1.0, shape), randn(...) normal(0.0, 1.0, shape): the same numbers from the
            # same stream, and draws with parameters batch under vmap (one per example)
            drawn = np.random.uniform if self.static(node.func).value is np.random.rand \
                else np.random.normal
            if len(node.args) == 1 and isinstance(node.args[0], gast.Starred):
                shape = [node.args[0].value]
            elif node.args:
                shape = [gast.copy_location(gast.Tuple(elts=list(node.args), ctx=gast.Load()),
                                            node)]
            else:
                shape = []               # rand(): one number
            node = gast.copy_location(gast.Call(
                func=node.func, args=[_const(0.0), _const(1.0)] + shape, keywords=[]), node)
            return self.call(Static(drawn), node, stmts)
        frozen = self.frozen_distribution_call(node)
        if frozen is not None:
            return self.expr_Call(frozen, stmts, hint)
        if any(isinstance(a, gast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            node = self.unpacked_call(node, stmts)
        func = node.func
        if isinstance(func, gast.Name) and func.id in self.pullbacks:
            return self.pullback_call(node, stmts)
        callee = self.static(func)
        if callee is None and isinstance(func, gast.Attribute) and func.attr == "type" and \
                isinstance(func.value, gast.Attribute) and func.value.attr == "dtype" and \
                len(node.args) == 1 and not node.keywords:
            # `x.dtype.type(0)` (JAX code's scalar of x's dtype): a cast to that dtype
            return prim_call("rt.scalar_of", [self.atom(node.args[0], stmts),
                                              self.atom(func.value, stmts)])
        if isinstance(func, gast.Attribute) and (callee is None or _method_of_array(callee)):
            return self.method_call(node, stmts)
        if callee is None and isinstance(func, gast.Lambda):      # `(lambda v: v * v)(x)`
            callee = self.expr_Lambda(func, stmts)
        if callee is None:
            if isinstance(func, gast.Call):
                callee = self.expr(func, stmts)
                if not isinstance(callee, (Static, LocalTransformed, LocalPartial)):
                    raise self.error(func, "this call does not produce a function known "
                                     "while transforming.")
            elif isinstance(self.typed_argument(func), layouts.FunctionItem):
                return self.call(Static(self.typed_argument(func).fn), node, stmts)
            elif self.typed_argument(func) is not None:
                return self.method_of_argument(func, "__call__", node, stmts)
            else:
                self.check_argument_dependent(func)
                if isinstance(func, gast.Name) and func.id not in self.locals:
                    self.expr_Name(func, [])     # a name nothing binds: its own error
                made = func.value if isinstance(func, gast.Subscript) else None
                maker = self.static(made.func) if isinstance(made, gast.Call) else None
                if isinstance(maker, Static) and \
                        self.callees.transformation(maker.value) == "vjp":
                    # tp.vjp(f, x)[1](g): the pullback, called where it is made
                    return self.vjp_called_where_made(made, node, stmts)
                if self.nested and isinstance(func, gast.Name) and func.id in self.params:
                    raise self.error(func, f"'{func.id}' is a parameter of a nested function "
                                     "whose call passes it no function known while "
                                     "transforming.",
                                     "pass a function defined in the code or at module level "
                                     "(a lambda, a def, np.tanh), not a value computed when "
                                     "the code runs.")
                if isinstance(func, gast.IfExp):
                    # `(f1 if c else f2)(x)`: `f1(x) if c else f2(x)` (only one runs)
                    chosen = gast.IfExp(
                        test=func.test,
                        body=gast.Call(func=func.body, args=_copy_node(node.args),
                                       keywords=_copy_node(node.keywords)),
                        orelse=gast.Call(func=func.orelse, args=_copy_node(node.args),
                                         keywords=_copy_node(node.keywords)))
                    for n in gast.walk(chosen):
                        gast.copy_location(n, node)
                    return self.expr(chosen, stmts)
                raise self.error(func, "calling a function held in a variable is not supported.",
                                 "call the function by its name.")
        return self.call(callee, node, stmts)

    # ------------------------------------------------------------------ argument objects
    # The entry function may call an argument (`act(x)`, a function passed in) or a method of
    # one (`model.apply(p, x)`, `f(x)` of an object whose __call__ is a primitive): what that
    # means depends on the argument, so the front end asks (ArgumentDependent) and the API
    # layer generates code per argument function (by identity) or per type of object.

    def typed_argument(self, node):
        """The type of the value `node` reads where code is made for it (None otherwise):
        an argument of the entry's (its class, or its layout: layouts.py), a field or an
        item of one (the layout's; without one, the class a field's annotation names, `layer:
        Layer` of a NamedTuple made in the code, which the code checks: checked_atom), a
        loop variable walking the items of one (stmt_For)."""
        if isinstance(node, gast.Name) and node.id in self.loop_variables:
            found = self.loop_variables[node.id]
            return None if isinstance(found, gast.AST) else found
        if isinstance(node, gast.Name) and node.id in self.argument_types and \
                self.assignments.get(node.id) == 1:
            return self.argument_types[node.id]
        if isinstance(node, gast.Attribute):
            owner = self.typed_argument(node.value)
            if isinstance(owner, layouts.ObjectLayout):
                return layouts.field_layout(owner, node.attr)
            return self._annotated_field(owner, node)
        if isinstance(node, gast.Subscript):
            index = literal_index(node.slice)
            seq = self.typed_argument(node.value)
            if index is not None:
                return layouts.item_layout(seq, index)
            if isinstance(seq, layouts.SequenceLayout) and layouts.one_object_type(seq.items):
                return seq.items[0]          # `self.layers[i]`, all of one class
        return None

    def _annotated_field(self, owner, node):
        """The class field `node.attr` of an `owner` known by its class only is annotated
        with (its stand-in for a registered dataclass), else None."""
        annotated = _annotated_class(owner, node.attr) if isinstance(owner, type) else None
        if annotated is not None:
            return self.callees.stand_in_class(annotated) or annotated
        return None

    def checked_atom(self, node, stmts):
        """The atom of `node`; where its type is an annotation's (typed_argument), the code
        first checks the value is one: a method of that class is what the code calls."""
        atom = self.atom(node, stmts)
        cls = self._annotated_field(self.typed_argument(node.value), node) \
            if isinstance(node, gast.Attribute) else None
        if cls is not None:
            where = f"{self.src.filename}:{self.src.line_of(node)} ({self.src.name})"
            check = prim_call("rt.check_instance", [
                atom, _name(self.program.constant(cls, cls.__name__)), _const(where)])
            stmts.append(gast.copy_location(gast.Expr(value=check), node))
        return atom

    def argument_types_of(self, fn, node):
        """Parameter of `fn` -> type, for the arguments of call `node` that are argument
        objects of known types: the callee is normalized for them (it may call their
        methods)."""
        if not self.argument_types or has_variadic(fn):
            return {}
        try:
            params = list(signature_of(fn).parameters)
        except (TypeError, ValueError):
            return {}
        found = {p: self.typed_argument(a) for p, a in zip(params, node.args)}
        found.update((k.arg, self.typed_argument(k.value)) for k in node.keywords
                     if k.arg in params)
        return {p: t for p, t in found.items() if t is not None}

    def check_argument_dependent(self, node):
        """Raise ArgumentDependent if `node` reads a parameter of the entry function that
        the body never rebinds (or a field, an item or a loop variable over the items of
        one): generated for what the argument is, the call can work."""
        param = self._entry_argument_behind(node)
        if param is not None:
            raise ArgumentDependent(str(self.error(
                node, f"calling '{param}' or a method of it: what that does depends on "
                "the argument passed, which is not known before the first call.",
                "call the transformed function once before reading .source; an argument "
                "that is a function is used by identity, an object by its type.")),
                [param])

    def _entry_argument_behind(self, node, depth=0):
        while isinstance(node, (gast.Attribute, gast.Subscript)):
            node = node.value
        if not (self.entry and isinstance(node, gast.Name)) or depth > 8:
            return None
        if isinstance(self.loop_variables.get(node.id), gast.AST):
            return self._entry_argument_behind(self.loop_variables[node.id], depth + 1)
        if node.id in self.params and self.assignments.get(node.id) == 1 and \
                node.id not in self.argument_types:
            return node.id
        return None

    def method_of_argument(self, obj_node, name, node, stmts):
        """`obj.name(...)` (or `obj(...)` for name "__call__") for an argument object of a
        known type: its class's primitive or method called with the object first."""
        layout = self.typed_argument(obj_node)
        cls = layouts.class_of(layout)
        if library_module(inspect.getmodule(cls), ("numpy", "builtins", "cupy")):
            raise self.unsupported_method(name, node)     # an array's, a list's, ...
        try:
            method = inspect.getattr_static(cls, name)
        except AttributeError:
            raise self.error(node, f"{cls.__name__} has no method '{name}'.") from None
        if isinstance(method, staticmethod):
            return self.call_static(method.__func__, [self.atom(a, stmts) for a in node.args],
                                    [(k.arg, self.atom(k.value, stmts)) for k in node.keywords],
                                    node, stmts)
        if self.callees.transformed_call(method) is not None:
            # a method transformed where the class is written (`@tp.jit def calc(self,
            # y)`): that transformed function, the object first
            return self.call_static(method, [self.checked_atom(obj_node, stmts)] +
                                    [self.checked_atom(a, stmts) for a in node.args],
                                    [(k.arg, self.checked_atom(k.value, stmts))
                                     for k in node.keywords], node, stmts)
        if not (isinstance(method, custom.CustomRule) or inspect.isfunction(method)):
            raise self.error(node, f"cannot call {cls.__name__}.{name} (a "
                             f"{type(method).__name__}) in transformed code.",
                             "make it a plain method, or a primitive with derivative rules.")
        args = [self.checked_atom(obj_node, stmts)] + \
            [self.checked_atom(a, stmts) for a in node.args]
        keywords = [(k.arg, self.checked_atom(k.value, stmts)) for k in node.keywords]
        if isinstance(method, custom.CustomRule) or has_variadic(method):
            return self.call_static(method, args, keywords, node, stmts)
        # the method's body, normalized knowing what `self` (and other objects) are
        params = list(signature_of(method).parameters)
        types = {params[0]: layout, **self.argument_types_of(
            method, gast.Call(func=node.func, args=[obj_node] + list(node.args),
                              keywords=node.keywords))}
        ir_name, names, defaults = self.function_ir(method, node, argument_types=types)
        return self.user_call(ir_name, names, defaults, args, keywords, node)

    def call(self, callee, node, stmts):
        if isinstance(callee, Static) and _is_add_at(callee.value):
            return self.add_at(node, stmts)
        if isinstance(callee, Static) and id(callee.value) in WRITES_INTO_FIRST:
            return self.write_into_first(callee.value, node, stmts)
        if isinstance(callee, Static) and callee.value is np.vectorize:
            return self.vectorize_made(node, stmts)
        if isinstance(callee, Static) and callee.value is np.piecewise:
            return self.piecewise_call(node, stmts)
        if isinstance(callee, Static) and callee.value is np.apply_along_axis:
            if len(node.args) < 3 or node.keywords or \
                    any(isinstance(a, gast.Starred) for a in node.args):
                raise self.error(node, "np.apply_along_axis is supported in transformed code "
                                 "with positional arguments (func1d, axis, arr, *args).")
            caller = REPLACEMENTS["apply_along_axis"](
                len(node.args) - 3, self.callees.transformation_named("vmap"))
            return self.call(Static(caller), node, stmts)
        if isinstance(callee, Static) and isinstance(callee.value, (np.vectorize,
                                                                    VectorizeOptions)):
            return self.vectorized_call(callee.value, node, stmts)
        if isinstance(callee, Static) and isinstance(callee.value, custom.CustomRule) and \
                callee.value.nondiff_argnums:
            return self.call_with_nondiff(callee.value, node, stmts)
        if isinstance(callee, Static) and _is_namedtuple_class(callee.value):
            return self.namedtuple_of(callee.value, node, stmts)
        stand_in = self.callees.stand_in_class(callee.value) \
            if isinstance(callee, Static) else None
        if stand_in is not None:
            # a registered dataclass: transformed code holds its namedtuple stand-in
            return self.namedtuple_of(callee.value, node, stmts, stand_in)
        if isinstance(callee, LocalPartial):
            # a call of its function with the bound arguments first (functions among them
            # too: a callee that calls them is normalized for them, as for f(g, x))
            given = {k.arg for k in node.keywords}     # the call's keywords win
            keywords = [gast.keyword(arg=k, value=v) for k, v in callee.keywords
                        if k not in given] + list(node.keywords)
            full = gast.copy_location(gast.Call(func=node.func, args=callee.args + node.args,
                                                keywords=keywords), node)
            return self.call(callee.target, full, stmts)
        if isinstance(callee, Static) and callee.value is builtins.next:
            return self._next_item(node, stmts)
        functional = FUNCTIONAL.get(id(callee.value)) if isinstance(callee, Static) else None
        if functional is not None:
            return getattr(self, functional)(node, stmts)
        kind = self.callees.transformation(callee.value) if isinstance(callee, Static) else None
        if kind == "jvp":
            return self.jvp_call(node, stmts)
        if kind == "vjp":
            raise self.error(node, *_VJP_IN_CODE)
        if kind is not None:
            return self.transformation(callee.value, node)
        if isinstance(callee, LocalTransformed):
            args = [self.atom(a, stmts) for a in node.args]
            keywords = [(k.arg, self.atom(k.value, stmts)) for k in node.keywords]
            if callee.params is not None:       # keywords and defaults bound here
                args = self._bound(callee.params, callee.defaults, args, keywords,
                                   getattr(callee.transformed, "__name__", "function"), node)
            elif keywords:
                raise self.error(node, "keyword arguments in a call of this transformed "
                                 "nested function are not supported.",
                                 "pass the arguments by position.")
            return self.call_static(callee.transformed, args +
                                    [_name(v) for v in callee.freevars], [], node, stmts)
        if isinstance(callee, Static) and callee.value is operator.itemgetter and \
                node.args and all(_is_literal(a) for a in node.args) and not node.keywords:
            # itemgetter(0) (a sort key): the function `lambda item: item[0]`
            item = self.namer.fresh("item")
            picks = [gast.Subscript(value=_name(item), slice=a, ctx=gast.Load())
                     for a in node.args]
            getter = gast.Lambda(
                args=gast.arguments(args=[_name(item, gast.Param())], posonlyargs=[],
                                    vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                    defaults=[]),
                body=picks[0] if len(picks) == 1 else gast.Tuple(elts=picks, ctx=gast.Load()))
            for n in gast.walk(getter):
                gast.copy_location(n, node)
            return self.expr_Lambda(getter, stmts)
        if isinstance(callee, Static) and callee.value is functools.partial:
            target = self.static(node.args[0]) if node.args else None
            if target is None:
                raise self.error(node, "functools.partial needs a function known while "
                                 "transforming.")
            if any(k.arg is None for k in node.keywords):
                raise self.error(node, "**kwargs in calls are not supported.",
                                 "pass the arguments one by one.")
            return LocalPartial(target, [self.bound_value(a, stmts) for a in node.args[1:]],
                                [(k.arg, self.bound_value(k.value, stmts))
                                 for k in node.keywords])
        if isinstance(callee, Static) and id(callee.value) in CALLED_INSTEAD:
            callee = Static(CALLED_INSTEAD[id(callee.value)][1])
        if isinstance(callee, Static) and callee.value is builtins.isinstance and \
                len(node.args) == 2 and any(
                    _names_user_class(self.static(c)) for c in (
                        node.args[1].elts if isinstance(node.args[1], gast.Tuple)
                        else [node.args[1]])):
            # code holds an object of a registered class as its stand-in
            callee = Static(runtime.trees.is_instance)
        if isinstance(callee, Static) and callee.value in (builtins.max, builtins.min) and \
                len(node.args) == 1 and not node.keywords and \
                not isinstance(node.args[0], gast.Starred):
            # max(xs) of one sequence (an array's items, a list of numbers): its largest
            # item, numpy's reduction over the first axis
            return prim_call(f"np.{callee.value.__name__}", [self.atom(node.args[0], stmts)],
                             [("axis", _const(0))])
        if isinstance(callee, Static) and callee.value is builtins.type and \
                len(node.args) == 1 and not node.keywords:
            callee = Static(runtime.trees.type_of)
        spread = getattr(callee.value, "__transpile_spread__", None) \
            if isinstance(callee, Static) else None
        if spread is not None:
            # a list of functions written in the call (lax.switch's branches) passed as
            # that many arguments, to a function made for their number
            position, make = spread
            listed = node.args[position] if len(node.args) > position else None
            known = self.static(listed) if listed is not None else None
            if isinstance(known, Static) and isinstance(known.value, (tuple, list)):
                # a list of functions known while transforming (a global's): each under a
                # name of its own that the front end knows
                names = []
                for item in known.value:
                    names.append(self.namer.fresh("branch"))
                    self.local_fns[names[-1]] = Static(item)
                listed = gast.Tuple(elts=[gast.copy_location(_name(n), listed) for n in names],
                                    ctx=gast.Load())
            if not isinstance(listed, (gast.List, gast.Tuple)) or node.keywords or \
                    any(isinstance(a, gast.Starred) for a in node.args):
                raise self.error(node, f"{callee.value.__name__} in transformed code needs "
                                 "its list of functions written in the call (or known while "
                                 "transforming), and its operands as positional arguments.",
                                 f"{callee.value.__name__}(i, [f, g], x)")
            args = node.args[:position] + listed.elts + node.args[position + 1:]
            node = gast.copy_location(gast.Call(func=node.func, args=args, keywords=[]), node)
            callee = Static(make(len(listed.elts), len(args) - position - len(listed.elts)))
        plain_only = getattr(callee.value, "__transpile_plain_only__", None) \
            if isinstance(callee, Static) else None
        if plain_only is not None:
            raise self.error(node, f"{callee.value.__module__}.{callee.value.__name__} runs "
                             "in plain code only, not in transformed code.", plain_only)
        variant = getattr(callee.value, "__transpile_variant__", None) \
            if isinstance(callee, Static) else None
        if variant is not None:
            # a function with *args (tp.lax.cond) names the fixed-arity function that
            # transformed code calls for this many arguments
            fixed = variant(len(node.args), [k.arg for k in node.keywords])
            if fixed is None:
                raise self.error(node, f"{callee.value.__name__} cannot be called with these "
                                 "arguments in transformed code.", fixed_hint(callee.value))
            callee = Static(fixed)
        if isinstance(callee, Static) and self.is_user_function(callee.value):
            bound = self.function_arguments(callee.value, node, stmts)
            if bound:
                return self.specialized_call(callee.value, bound, node, stmts)
            types = self.argument_types_of(callee.value, node)
            if types:             # objects passed on: a copy that knows their types
                ir_name, params, defaults = self.function_ir(callee.value, node,
                                                             argument_types=types)
                return self.user_call(ir_name, params, defaults,
                                      [self.checked_atom(a, stmts) for a in node.args],
                                      [(k.arg, self.checked_atom(k.value, stmts))
                                       for k in node.keywords], node)
        if isinstance(callee, Static) and third_party_function(callee.value) and \
                rules.lookup_object(callee.value) is None and \
                not _scipy_distribution(callee.value) and not _frozen_method(callee.value):
            raise self.error(node, *rules.core.missing_rule_message(
                callee.value, dotted(node.func)))
        value = callee.value if isinstance(callee, Static) else None
        if isinstance(value, functools.partial) and self.is_user_function(value.func) and \
                any(_is_function(v) or plain_object(v)
                    for v in (*value.args, *value.keywords.values())):
            # a function bound by the partial (`partial(rev_iter, f)`): the callee is
            # specialized to it, as to a function passed at the call
            held = []
            for v in (*value.args, *value.keywords.values()):
                held.append(self.namer.fresh("bound"))
                self.local_fns[held[-1]] = Static(v)
            spelled = [gast.copy_location(_name(h), node) for h in held]
            given = {k.arg for k in node.keywords}
            full = gast.Call(func=node.func, args=spelled[:len(value.args)] + list(node.args),
                             keywords=[gast.keyword(arg=k, value=h) for k, h in
                                       zip(value.keywords, spelled[len(value.args):])
                                       if k not in given] + list(node.keywords))
            return self.call(Static(value.func), gast.copy_location(full, node), stmts)
        if isinstance(callee, LocalTemplate):
            return self.template_call(callee, node, stmts)
        args = [self.atom(a, stmts) for a in node.args]
        keywords = [(k.arg, self.atom(k.value, stmts)) for k in node.keywords]
        if isinstance(callee, LocalFunction):
            return self.user_call(callee.ir_name, callee.params, callee.defaults, args, keywords,
                                  node, extra=[_name(v) for v in callee.freevars])
        value = callee.value
        if isinstance(value, functools.partial):
            pname = self.program.constant(value, getattr(node.func, "id", "partial"))
            pargs = []
            for i in range(len(value.args)):
                pargs.append(self.atom_of(prim_call("[]", [
                    self.atom_of(gast.Attribute(value=_name(pname), attr="args",
                                                ctx=gast.Load()), stmts, "partial_args"),
                    _const(i)]), stmts, "partial_arg"))
            given = {k for k, _ in keywords}
            bound = [k for k in value.keywords if k not in given]   # the call's keywords win
            if bound:
                kwargs = self.atom_of(gast.Attribute(value=_name(pname), attr="keywords",
                                                     ctx=gast.Load()), stmts, "partial_kwargs")
                keywords = [(k, self.atom_of(prim_call("[]", [kwargs, _const(k)]), stmts,
                                             k)) for k in bound] + list(keywords)
            return self.call_static(value.func, pargs + args, keywords, node, stmts)
        return self.call_static(value, args, keywords, node, stmts)

    # ------------------------------------------------------------------ function arguments
    # A user function called with functions among its arguments (`fori_loop(0, n, body,
    # x)`, `apply(np.tanh, x)`, a lambda) is normalized once per such call as a copy in
    # which those parameters name the functions passed: calls through them are then
    # resolved while transforming, like any call. The parameters themselves receive None.
    # A lambda's free variables become extra parameters of the copy, passed at the call.

    def is_user_function(self, value):
        return inspect.isfunction(value) and rules.lookup_object(value) is None and \
            not third_party_function(value) and \
            self.callees.transformed_call(value) is None and \
            self.callees.transformation(value) is None

    def namedtuple_of(self, cls, node, stmts, made=None):
        """Point(x, y=v), a namedtuple class called: its fields as a tuple, given the class
        by rt.to_like of an instance holding None (a constant of the generated module), so
        that derivatives and vmap see a tuple made into a Point. `made`: the namedtuple
        made instead (a registered dataclass's stand-in)."""
        made = made or cls
        if any(isinstance(a, gast.Starred) for a in node.args):
            raise self.error(node, f"{cls.__name__}(*items) is not supported in transformed "
                             "code.", f"write {cls.__name__}._make(items) outside, or pass "
                             "the fields one by one.")
        try:
            bound = signature_of(cls).bind(*node.args, **{k.arg: k.value
                                                               for k in node.keywords})
        except TypeError as e:
            raise self.error(node, f"{cls.__name__}(...): {e}.") from None
        params = signature_of(cls).parameters
        items = []
        for field in made._fields:
            if field in bound.arguments:
                items.append(self.atom(bound.arguments[field], stmts))
                continue
            default = params[field].default          # (a field left to its default)
            items.append(_const(default) if is_literal(default) else
                         _name(self.program.constant(default, field)))
        proto = self.program.constant(made(*[None] * len(made._fields)), cls.__name__)
        display = gast.Tuple(elts=items, ctx=gast.Load())
        anno.set(display, Anno.PRIM, (rules.lookup("tuple"), "tuple"))
        fields = self.atom_of(display, stmts, "fields")
        return prim_call("rt.to_like", [fields, _name(proto)])

    def add_at(self, node, stmts):
        """np.add.at(a, idx, v), numpy's unbuffered scatter-add (repeated indices add up;
        JAX's a.at[idx].add(v)), as a write into a:
            a[...] = rt.index_add(a, a, idx, np.broadcast_to(v, np.shape(a[idx])))
        whose rules are the adjoint of a gather's (v broadcast to what it adds to first, as
        numpy does, so that vmap lines each example's v up with its own elements)."""
        which = "subtract" if self.static(node.func).value.__self__ is np.subtract else "add"
        if len(node.args) != 3 or node.keywords or not isinstance(node.args[0], gast.Name):
            raise self.error(node, f"np.{which}.at is supported in transformed code as "
                             f"np.{which}.at(a, indices, values) with `a` a variable.")
        a, idx, v = node.args
        idx = self.atom(idx, stmts, hint="index")
        v = self.atom(v, stmts, hint="value")
        def named(hint, value):
            fresh = self.namer.fresh(hint)
            stmts.append(gast.copy_location(_assign(fresh, value, node), node))
            self.locals.add(fresh)
            return _name(fresh)
        if which == "subtract":
            v = named("negative", prim_call("u-", [v]))
        selected = named("selected", prim_call("[]", [_name(a.id), idx]))
        shape = named("shape", prim_call("np.shape", [selected]))
        added = named("added", prim_call("np.broadcast_to", [v, shape]))
        total = named("total", prim_call("rt.index_add", [_name(a.id), _name(a.id), idx,
                                                         added]))
        write = gast.Assign(targets=[gast.Subscript(
            value=_name(a.id, gast.Store()), slice=gast.Constant(value=Ellipsis, kind=None),
            ctx=gast.Store())], value=total, type_comment=None)
        for n in gast.walk(write):
            gast.copy_location(n, node)
        stmts.extend(self.stmt(write))
        return _const(None)

    def write_into_first(self, fn, node, stmts):
        """np.fill_diagonal(a, v), np.put, np.place, np.putmask, np.copyto: numpy writes
        into the array `a` names; here `a[...] = written(a, v)`, the written function
        making the new contents (numpy_written.py), so every pass sees a plain write into
        `a` (seen through its views, refused where a write would be)."""
        if not node.args or not isinstance(node.args[0], gast.Name) or \
                any(isinstance(a, gast.Starred) for a in node.args):
            raise self.error(node, f"np.{fn.__name__} is supported in transformed code with "
                             "the array it writes into named by a variable, passed first.")
        made = self.call(Static(WRITES_INTO_FIRST[id(fn)][1]), node, stmts)
        new = self._temp(node, stmts, "written", made)
        self.locals.add(new.id)
        write = gast.Assign(targets=[gast.Subscript(
            value=_name(node.args[0].id, gast.Store()),
            slice=gast.Constant(value=Ellipsis, kind=None), ctx=gast.Store())],
            value=new, type_comment=None)
        for n in gast.walk(write):
            gast.copy_location(n, node)
        stmts.extend(self.stmt(write))
        return _const(None)

    def bound_value(self, node, stmts):
        """An argument bound by functools.partial in transformed code: data as an atom (read
        when the partial is made), a function under a name that calls resolve."""
        value = self.function_value(node, stmts)
        if value is None:
            return self.atom(node, stmts)
        fresh = self.namer.fresh("fn")
        self.local_fns[fresh] = value
        return gast.copy_location(_name(fresh), node)

    def function_value(self, node, stmts):
        """The function `node` denotes (Static or LocalFunction), or a user object whose
        methods a callee may call (Static, bound by identity); None for data."""
        if isinstance(node, gast.Lambda):
            return self.expr_Lambda(node, stmts)
        if isinstance(node, gast.Call):
            # `tp.checkpoint(step)` passed on (a scan's body): the transformation applied now
            maker = self.static(node.func)
            if isinstance(maker, Static) and maker.value is functools.partial:
                made = self.expr(node, stmts)     # `partial(step, w)`: a lambda calling it
                return self._function_of_partial(made, node, stmts) \
                    if isinstance(made, LocalPartial) else None
            kind = self.callees.transformation(maker.value) if isinstance(maker, Static) \
                else None
            if kind is None or kind in ("jvp", "vjp"):
                return None
            return self._function_of(self.transformation(maker.value, node), node, stmts)
        if not isinstance(node, (gast.Name, gast.Attribute)):
            return None
        found = self.static(node)
        if isinstance(found, LocalTransformed):      # a nested def decorated with one
            return self._function_of(found, node, stmts)
        if isinstance(found, LocalFunction):
            return found
        if isinstance(found, Static) and (_is_function(found.value) or
                                          plain_object(found.value)):
            return found      # (an object whose methods the callee may call: by identity)
        if isinstance(found, Static) and isinstance(found.value, tuple) and found.value and \
                all(_is_function(v) for v in found.value):
            return found      # a tuple of functions (`fs = (np.sin, np.cos)`), by identity
        return None

    def _function_of_partial(self, made, node, stmts):
        """`functools.partial(step, w)` passed on as a function (a scan's body): `lambda c,
        x: step(w, c, x)`, the bound values its free variables (names in the code here)."""
        target = made.target
        if isinstance(target, Static) and isinstance(target.value, np.ufunc):
            names = [f"x{k}" for k in range(target.value.nin)]
        elif isinstance(target, Static):
            try:        # (the parameters a call must give: the lambda's)
                params = [p for p in signature_of(target.value).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                          and p.default is p.empty]
            except (TypeError, ValueError):
                return None
            names = [p.name for p in params]
        elif isinstance(target, LocalFunction):
            names = [p for p in target.params[:len(target.params) - len(target.freevars)]
                     if p not in target.defaults]
        else:
            return None
        given = {k for k, _ in made.keywords}
        rest = [p for p in names[len(made.args):] if p not in given]
        for v in list(made.args) + [v for _, v in made.keywords]:
            if isinstance(v, gast.Name) and v.id not in self.local_fns:
                self.locals.add(v.id)       # (the lambda reads the bound values by name)
        fn = self.namer.fresh("fn")
        self.local_fns[fn] = target
        params = [self.namer.fresh("arg") for _ in rest]
        lam = _lambda(params, gast.Call(
            func=_name(fn), args=list(made.args) + [_name(p) for p in params],
            keywords=[gast.keyword(arg=k, value=v) for k, v in made.keywords]))
        return self.expr_Lambda(self._located(_copy_node(lam), node), stmts)

    def _function_of(self, made, node, stmts):
        """A transformed function as a value passed on: as it is where it is known while
        transforming (Static); a nested one's (LocalTransformed), which takes its free
        variables last, as a lambda passing them, `lambda a, b: made(a, b, w)`, whose free
        variables the callee then receives as a lambda's."""
        if not isinstance(made, LocalTransformed):
            return made if isinstance(made, Static) else None
        if made.params is not None:
            n = len(made.params)
        else:
            n = len(signature_of(made.transformed).parameters) - len(made.freevars)
        raw = self.namer.fresh("fn")
        self.local_fns[raw] = Static(made.transformed)
        params = [self.namer.fresh("arg") for _ in range(n)]
        defaults = []             # the nested function's own, for its trailing parameters
        for p in (made.params or [])[::-1]:
            if p not in made.defaults:
                break
            d = made.defaults[p]
            defaults.insert(0, _const(d) if is_literal(d) else _name(d.name)
                            if isinstance(d, LocalDefault) else
                            _name(self.program.constant(d, p + "_default")))
        lam = _lambda(params, gast.Call(func=_name(raw), args=[_name(p) for p in params] +
                                        [_name(v) for v in made.freevars], keywords=[]),
                      defaults)
        return self.expr_Lambda(self._located(lam, node), stmts)

    def dict_view(self, d, view, node, stmts):
        """d.keys(), d.values(), d.items() of a dict: lists in the dict's order, made by a
        loop over `rt.dict_keys(d)` (so derivatives and vmap follow each d[key])."""
        keys = self.namer.fresh("keys")
        stmts.append(_assign(keys, prim_call("rt.dict_keys", [d]), node))
        self.locals.add(keys)
        if view == "keys":
            return _name(keys)
        key = self.namer.fresh("key")
        value = gast.Subscript(value=d, slice=_name(key), ctx=gast.Load())
        elt = value if view == "values" else gast.Tuple(elts=[_name(key), value],
                                                         ctx=gast.Load())
        listed = gast.ListComp(elt=elt, generators=[gast.comprehension(
            target=_name(key, gast.Store()), iter=_name(keys), ifs=[], is_async=0)])
        for n in gast.walk(listed):
            gast.copy_location(n, node)
        return self.expr(listed, stmts, view)

    def unpacked_call(self, node, stmts):
        """`f(*args, **kwargs)` with the arguments spelled out, where their number is known
        while transforming: the function's own *args and **kwargs (a copy for each call
        shape, see variadic.py), slices of its *args with constant bounds (`*args[1:]`),
        and tuples or lists written in the call (`*(a, b)`)."""
        args, keywords = [], []
        for a in node.args:
            if not isinstance(a, gast.Starred):
                args.append(a)
                continue
            items = self.unpacked_items(a.value)
            if items is None:
                raise self.error(a, "*args in a call is supported for the function's own "
                                 "*args (or a constant slice of it), a global tuple and a "
                                 "tuple written in the call: the number of "
                                 "arguments must be known while transforming.",
                                 "pass the arguments one by one.")
            args.extend(items)
        for k in node.keywords:
            if k.arg is not None:
                keywords.append(k)
                continue
            value = k.value
            if isinstance(value, gast.Dict) and all(
                    isinstance(key, gast.Constant) and isinstance(key.value, str)
                    for key in value.keys):          # f(**{"a": x})
                keywords.extend(gast.keyword(arg=key.value, value=v)
                                for key, v in zip(value.keys, value.values))
                continue
            found = self.static(value) if isinstance(value, gast.Name) and \
                value.id not in self.keyed else None
            if isinstance(found, Static) and type(found.value) is dict and \
                    all(isinstance(key, str) for key in found.value):
                keywords.extend(self.keywords_of_global(value, found.value))
                continue
            if isinstance(value, gast.Name) and value.id in self.dict_keys and \
                    value.id not in self.keyed:
                keywords.extend(self.keywords_of_local(value, stmts))
                continue
            if not (isinstance(value, gast.Name) and value.id in self.keyed):
                raise self.error(value, "**kwargs in a call is supported for the function's "
                                 "own **kwargs, a dict written in the code with its keys "
                                 "(`kw = {\"axis\": 0}`), a dict of the module (or a "
                                 "closure) and one written in the call.",
                                 "pass the keywords one by one.")
            keywords.extend(gast.keyword(arg=key, value=gast.copy_location(_name(copy), value))
                            for key, copy in self.keyed[value.id])
        call = gast.Call(func=node.func, args=args, keywords=keywords)
        return gast.copy_location(call, node)

    def keywords_of_local(self, node, stmts):
        """`f(**kw)` of a dict the code wrote as a display with string keys: those keys, read
        from it (`a=kw["a"]`), after a check that it still has just them."""
        keys = self.dict_keys[node.id]
        where = f"{self.src.filename}:{self.src.line_of(node)} ({self.src.name})"
        stmts.append(gast.copy_location(gast.Expr(value=prim_call("rt.check_keys", [
            _name(node.id), _const(keys), _const(where)])), node))
        return [gast.keyword(arg=key, value=gast.copy_location(gast.Subscript(
            value=_name(node.id), slice=_const(key), ctx=gast.Load()), node)) for key in keys]

    def keywords_of_global(self, node, options):
        """`f(x, **OPTIONS)` of a module's (or a closure's) dict: its items as keywords,
        literals spelled as such (an axis must be known while transforming). The code is
        made again when the dict changes (a key added, a value replaced)."""
        name_ = node.id
        if name_ in self.cells:
            cell = self.cells[name_]
            self.program.global_reads[(id(cell), "cell_contents")] = (
                cell, "cell_contents", Snapshot(options))
        else:
            self.program.global_reads[(id(self.globals), name_)] = (
                self.globals, name_, Snapshot(options))
        return [gast.keyword(arg=key, value=gast.copy_location(
            gast.Constant(value=v, kind=None) if is_literal(v) else gast.Subscript(
                value=_name(name_), slice=gast.Constant(value=key, kind=None),
                ctx=gast.Load()), node)) for key, v in options.items()]

    def unpacked_items(self, value):
        """The expressions `*value` stands for, or None where their number is unknown."""
        if isinstance(value, (gast.Tuple, gast.List)) and \
                not any(isinstance(e, gast.Starred) for e in value.elts):
            return list(value.elts)
        base, cut = value, slice(None)
        if isinstance(value, gast.Subscript) and isinstance(value.slice, gast.Slice):
            bounds = [_int_literal(b) for b in
                      (value.slice.lower, value.slice.upper, value.slice.step)]
            if any(b is _NOT_INT for b in bounds):
                return None
            base, cut = value.value, slice(*bounds)
        if isinstance(base, gast.Name) and base.id in self.packed:
            return [gast.copy_location(_name(n), value) for n in self.packed[base.id][cut]]
        found = self.static(base) if isinstance(base, (gast.Name, gast.Attribute)) else None
        if isinstance(found, Static) and type(found.value) is tuple:
            # a global tuple (`h(x, *PARAMS)`): its length is known and fixed (a
            # list could grow in place after the code is made; a rebound name makes new code)
            return [gast.copy_location(gast.Subscript(value=base, slice=gast.Constant(
                value=k, kind=None), ctx=gast.Load()), value)
                for k in range(len(found.value))[cut]]
        return None

    def function_arguments(self, fn, node, stmts):
        """parameter -> function value, for the parameters of `fn` that this call (or a
        default) gives a function."""
        try:
            signature = signature_of(fn)
        except (TypeError, ValueError):
            return {}
        params = list(signature.parameters.values())
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params):
            return {}
        bound = {}
        for p, a in zip(params, node.args):
            value = self.function_value(a, stmts)
            if value is not None:
                bound[p.name] = value
        given = {p.name for p in params[:len(node.args)]}
        for k in node.keywords:
            given.add(k.arg)
            value = self.function_value(k.value, stmts)
            if value is not None:
                bound[k.arg] = value
        for p in params:
            if p.name not in given and p.default is not inspect.Parameter.empty and \
                    _is_function(p.default):
                bound[p.name] = Static(p.default)
        return bound

    def template_call(self, template, node, stmts):
        """A call of a nested function that calls its parameters: lifted (once per set of
        functions passed) with those parameters naming the functions, as a module-level
        function is specialized (specialized_call)."""
        params = [a.id for a in template.fdef.args.args]
        if any(isinstance(a, gast.Starred) for a in node.args) or \
                any(k.arg not in params for k in node.keywords) or len(node.args) > len(params):
            raise self.error(node, "a nested function that calls its parameters is called "
                             "with its parameters by position or name.")
        given = dict(zip(params, node.args))
        given.update((k.arg, k.value) for k in node.keywords)
        bound = {}
        for p, arg in given.items():
            value = self.function_value(arg, stmts)
            if value is not None:
                bound[p] = value
        key = tuple(sorted((p, id(v.value) if isinstance(v, Static) else v.ir_name)
                           for p, v in bound.items()))
        if key not in template.made:
            saved, self.local_fns = self.local_fns, dict(template.local_fns)
            try:
                template.made[key] = self.lift(_copy_node(template.fdef), template.hint,
                                               bound=bound)
            finally:
                self.local_fns = saved
        lifted = template.made[key]
        args = [_const(None) if p in bound else self.atom(a, stmts)
                for p, a in zip(params, node.args)]
        keywords = [(k.arg, _const(None) if k.arg in bound else self.atom(k.value, stmts))
                    for k in node.keywords]
        return self.user_call(lifted.ir_name, lifted.params, lifted.defaults, args, keywords,
                              node, extra=[_name(v) for v in lifted.freevars])

    def specialized_call(self, fn, bound, node, stmts):
        fdef, _ = parse_function(fn)
        taken = {n.id for n in gast.walk(fdef) if isinstance(n, gast.Name)} | \
            {a.id for a in fdef.args.args}
        presets, extra_params, extra_args = {}, [], []
        for p, value in bound.items():
            if isinstance(value, LocalFunction) and value.freevars:
                renamed = []
                for v in value.freevars:
                    new = f"{p}_{v}"
                    while new in taken:
                        new += "_"
                    taken.add(new)
                    renamed.append(new)
                own = value.params[:len(value.params) - len(value.freevars)]
                value = LocalFunction(value.ir_name, own + renamed, renamed, value.defaults)
                extra_params += renamed
                extra_args += [_name(v) for v in bound[p].freevars]
            presets[p] = value
        ir_name, params, defaults = self.function_ir(fn, node, bound_functions=presets,
                                                     extra_params=extra_params)
        names = list(signature_of(fn).parameters)
        args = [_const(None) if i < len(names) and names[i] in bound else self.atom(a, stmts)
                for i, a in enumerate(node.args)]
        keywords = [(k.arg, _const(None) if k.arg in bound else self.atom(k.value, stmts))
                    for k in node.keywords]
        defaults = {k: (None if k in bound else v) for k, v in defaults.items()}
        return self.user_call(ir_name, params, defaults, args, keywords, node,
                              extra=extra_args)

    def atom_of(self, value, stmts, hint):
        """A fresh name assigned `value` (for reading a partial object's bound arguments)."""
        tmp = self.namer.fresh(hint)
        stmts.append(_assign(tmp, value))
        return _name(tmp)

    def call_with_nondiff(self, rule, node, stmts):
        """A custom_vjp/custom_jvp function with nondiff_argnums (JAX's `fixed_point(f, a,
        x)`): its rules specialized to those arguments, which must be known while
        transforming (a function, a constant), called with the others."""
        positions = rule.nondiff_argnums
        if node.keywords or any(isinstance(a, gast.Starred) for a in node.args) or \
                len(node.args) != len(rule.signature.parameters):
            raise self.error(node, f"{rule.__name__} has nondiff_argnums: transformed code "
                             "calls it with every argument by position.")
        values = {}
        for i in positions:
            arg = node.args[i]
            known, value = self.static_value(arg, stmts)
            if known:
                values[i] = value
            else:
                raise self.error(arg, f"argument {i} of {rule.__name__} is in its "
                                 "nondiff_argnums: transformed code needs it known while "
                                 "transforming (a function defined at module level, a "
                                 "constant).", "pass arrays as ordinary arguments, as JAX "
                                 "asks; define the function outside the transformed one.")
        self.program.global_reads[(id(rule), "rules_version")] = (
            rule, "rules_version", rule.rules_version)      # rules given again: new code
        rest = [a for i, a in enumerate(node.args) if i not in values]
        return self.call(Static(rule.bound(values)),
                         gast.copy_location(gast.Call(func=node.func, args=rest, keywords=[]),
                                            node), stmts)

    def static_value(self, node, stmts):
        """(True, the value) of an expression known while transforming: a global or bound
        function, a constant, a nested function or lambda without free variables
        (compiled), a functools.partial of such; else (False, None)."""
        found = self.function_value(node, stmts) if isinstance(node, gast.Lambda) else \
            self.static(node)
        if isinstance(found, Static):
            return True, found.value
        if isinstance(found, LocalFunction) and not found.freevars:
            return True, self.callees.compile(self.program, found.ir_name)
        if isinstance(node, gast.Constant):
            return True, node.value
        if isinstance(node, gast.Call) and not any(isinstance(a, gast.Starred)
                                                   for a in node.args):
            maker = self.static(node.func)
            if isinstance(maker, Static) and maker.value is functools.partial and node.args:
                parts = [self.static_value(a, stmts) for a in node.args]
                named = {k.arg: self.static_value(k.value, stmts) for k in node.keywords}
                if all(known for known, _ in parts) and all(k for k, _ in named.values()) \
                        and None not in named:
                    return True, _partial_of(parts[0][1], tuple(v for _, v in parts[1:]),
                                             tuple((k, v) for k, (_, v) in named.items()))
        return False, None

    def _temp(self, node, stmts, hint, value):
        """A fresh name bound to `value` by a statement added to `stmts`."""
        name_ = self.namer.fresh(hint)
        stmts.append(_assign(name_, value, node))
        return _name(name_)

    def spelled_out(self, spelling, args, keywords, node, stmts):
        """Arguments the rules take through other functions, or None: order="F" of
        np.ravel / np.reshape (transposes around the C-order one) and np.diff's
        prepend / append (joined to the array first)."""
        kw = dict(keywords)
        temp = functools.partial(self._temp, node, stmts)

        if spelling == "np.ravel" and (kw.get("order") or (args[1] if len(args) > 1
                                                           else None)) is not None:
            order = kw.pop("order", None) or args[1]
            if not (isinstance(order, gast.Constant) and order.value in ("C", "F")):
                return None              # (its rule says what it takes)
            if order.value == "C":
                return prim_call("np.ravel", [args[0]], list(kw.items()))
            return prim_call("np.ravel", [temp("transposed", prim_call("np.transpose",
                                                                       [args[0]]))])
        if spelling == "np.reshape" and isinstance(kw.get("order"), gast.Constant) and \
                kw["order"].value in ("C", "F") and len(args) == 2:
            order = kw.pop("order").value
            if order == "C":
                return prim_call("np.reshape", args, list(kw.items()))
            shape = args[1]
            if isinstance(shape, gast.Constant):
                backwards = shape if isinstance(shape.value, int) else \
                    _const(tuple(shape.value)[::-1])
            else:
                backwards = temp("shape", prim_call("[]", [shape, gast.Slice(
                    lower=None, upper=None, step=_const(-1))]))
            inner = temp("transposed", prim_call("np.transpose", [args[0]]))
            return prim_call("np.transpose", [temp("reshaped", prim_call(
                "np.reshape", [inner, backwards]))])
        if spelling == "rt.astype" and "copy" in kw and len(args) == 2 and \
                isinstance(kw["copy"], gast.Constant) and set(kw) == {"copy"}:
            # x.astype(dtype, copy=False): x itself where it has that dtype (rt.as_dtype)
            return prim_call("rt.astype" if kw["copy"].value else "rt.as_dtype", args)
        if spelling in ("np.asarray", "np.array") and isinstance(kw.get("copy"), gast.Constant) \
                and kw["copy"].value in (True, None):
            # copy=True: a copy, np.array's default (PINTS' np.array(x, copy=True,
            # dtype=float)); copy=None: only where needed, np.asarray's. (copy=False, an
            # error where numpy cannot avoid a copy and the array itself otherwise, is left
            # to the rules, which refuse it.)
            spelling = "np.array" if kw.pop("copy").value else "np.asarray"
            if not (len(args) == 2 or "dtype" in kw):
                return prim_call(spelling, args, list(kw.items()))
        if spelling in ("np.asarray", "np.array") and len(args) <= 2 and set(kw) <= {"dtype"} \
                and (len(args) == 2 or "dtype" in kw):
            # np.asarray(p, dtype=x.dtype), np.array([...], float): the array, then a cast
            # (asarray's may be the array itself, np.array's is a copy)
            dtype = kw["dtype"] if "dtype" in kw else args[1]
            if isinstance(dtype, gast.Constant) and dtype.value is None:
                return prim_call(spelling, args[:1])
            base = temp("array", prim_call(spelling, args[:1]))
            return prim_call("rt.as_dtype" if spelling == "np.asarray" else "rt.astype",
                             [base, dtype])
        if spelling == "np.diff" and ("prepend" in kw or "append" in kw):
            axis = kw.get("axis", args[2] if len(args) > 2 else _const(-1))
            n = kw.get("n", args[1] if len(args) > 1 else _const(1))
            parts = []
            for key in ("prepend", "append"):
                if key not in kw:
                    continue
                # a number (or an array of 1 along axis): broadcast to one slice of the axis
                shape = temp("shape", prim_call("rt.diff_piece_shape", [args[0], axis,
                                                                         kw[key]]))
                parts.append((key, temp(key, prim_call("np.broadcast_to", [
                    kw[key], shape]))))
            pieces = [v for k, v in parts if k == "prepend"] + [args[0]] + \
                [v for k, v in parts if k == "append"]
            listed = gast.List(elts=pieces, ctx=gast.Load())
            anno.set(listed, Anno.PRIM, (rules.lookup("list"), "list"))
            joined = temp("joined", prim_call("np.concatenate", [temp("pieces", listed)],
                                             [("axis", axis)]))
            return prim_call("np.diff", [joined, n, axis])
        return None

    def masked_reduction(self, spelling, args, keywords, node, stmts):
        """`np.sum(x, where=m)`, `np.max(x, initial=v)`: the reduction of x with the unselected
        elements made its identity (0 for sums and means, 1 for products, `initial` for
        max and min), then `initial` taken in (+, *, np.maximum, np.minimum); a mean divides
        by the number selected. Every rule is then the reduction's and np.where's."""
        kind = MASKED_REDUCTIONS[spelling]
        kw = dict(keywords)
        where, initial = kw.pop("where", None), kw.pop("initial", None)
        temp = functools.partial(self._temp, node, stmts)

        a, rest = args[0], list(args[1:])
        if where is not None:
            fill = {"sum": _const(0), "mean": _const(0), "prod": _const(1),
                    "any": _const(False), "all": _const(True)}.get(kind, initial)
            if fill is None:
                raise self.error(node, f"{spelling} with where= needs initial= (as numpy).")
            a = temp("selected", prim_call("np.where", [where, a, _copy_node(fill)]))
        out = temp("reduced", prim_call(spelling if kind != "mean" else "np.sum",
                                        [a] + rest, list(kw.items())))
        if kind == "mean" and where is not None:
            shape = temp("shape", prim_call("np.shape", [_copy_node(args[0])]))
            chosen = temp("chosen", prim_call("np.broadcast_to", [_copy_node(where), shape]))
            count = temp("count", prim_call("np.sum", [chosen] + [_copy_node(r) for r in rest],
                                            [(k, _copy_node(v)) for k, v in kw.items()
                                             if k in ("axis", "keepdims")]))
            out = temp("mean", prim_call("/", [out, count]))
        elif kind == "mean":
            out = temp("mean", prim_call("np.mean", [_copy_node(args[0])] + rest,
                                         list(kw.items())))
        if initial is None:
            return out
        combine = {"sum": "+", "prod": "*", "max": "np.maximum", "min": "np.minimum"}.get(kind)
        if combine is None:
            raise self.error(node, f"{spelling} takes no initial= in numpy.")
        return prim_call(combine, [out, _copy_node(initial)])

    def ufunc_outer(self, ufunc, args, keywords, node, stmts):
        """`np.multiply.outer(a, b)`: the ufunc of `a` with an axis of length 1 for each of
        b's, and `b` (then every derivative and batching rule is the ufunc's)."""
        if len(args) != 2 or keywords:
            raise self.error(node, f"np.{ufunc.__name__}.outer is supported in transformed "
                             "code with two arrays and no keywords.")
        a, b = args
        temp = functools.partial(self._temp, node, stmts)
        shape = temp("shape", prim_call("rt.outer_shape", [a, b]))
        shaped = temp("shaped", prim_call("np.reshape", [_copy_node(a), shape]))
        return prim_call(rules.lookup_object(ufunc)[1], [shaped, _copy_node(b)])

    def vectorize_made(self, node, stmts):
        """`np.vectorize(f, otypes=..., excluded=...)` in transformed code, f a function
        known while transforming: what calls of it become (vectorized_call)."""
        if len(node.args) != 1:
            raise self.error(node, "np.vectorize in transformed code takes the function as "
                             "its one positional argument.")
        options = {}
        for k in node.keywords:
            found = self.static(k.value) if not _is_literal(k.value) else \
                Static(_literal(k.value))
            if isinstance(k.value, (gast.List, gast.Tuple, gast.Set)):    # otypes=[float]
                items = [self.static(e) if not _is_literal(e) else Static(_literal(e))
                         for e in k.value.elts]
                found = Static([i.value for i in items]) \
                    if all(isinstance(i, Static) for i in items) else None
            if k.arg not in ("otypes", "excluded", "doc", "cache", "signature") or \
                    not isinstance(found, Static):
                raise self.error(k.value, f"np.vectorize's {k.arg} must be known while "
                                 "transforming.")
            options[k.arg] = found.value
        found = self.static(node.args[0])
        if isinstance(found, Static) and callable(found.value):
            return Static(np.vectorize(found.value, **options))
        fn = self.bound_value(node.args[0], stmts)
        if not (isinstance(fn, gast.Name) and fn.id in self.local_fns):
            raise self.error(node.args[0], "np.vectorize needs a function known while "
                             "transforming.")
        return LocalPartial(Static(VectorizeOptions((
            options.get("otypes"), frozenset(options.get("excluded") or ()),
            options.get("signature")))), [fn], [])

    def piecewise_call(self, node, stmts):
        """np.piecewise(x, [c0, c1], [f0, f1, v], *extra): a helper made for this number of
        conditions and kind of items (transpile/numpy_functions.py), given the conditions
        and items as arguments (functions among them: it is specialized to them)."""
        if len(node.args) < 3 or node.keywords or \
                any(isinstance(a, gast.Starred) for a in node.args):
            raise self.error(node, "np.piecewise is supported in transformed code with "
                             "positional arguments (x, condlist, funclist, *args).")
        x, condlist, funclist = node.args[:3]
        conds = self._listed(condlist)
        items = self._listed(funclist)
        if conds is None or items is None or not conds or \
                len(items) not in (len(conds), len(conds) + 1):
            raise self.error(node, "np.piecewise in transformed code needs its conditions and "
                             "its functions written as lists in the call (or a tuple of the "
                             "module), one function or value per condition and at most one "
                             "more for the rest.",
                             "np.piecewise(x, [x < 0, x > 1], [f, g, 0.0])")
        kinds = tuple(self.function_value(item, stmts) is not None for item in items)
        caller = REPLACEMENTS["piecewise"](len(conds), kinds, len(node.args) - 3)
        full = gast.copy_location(gast.Call(func=node.func, args=[x] + conds + items +
                                            list(node.args[3:]), keywords=[]), node)
        return self.call(Static(caller), full, stmts)

    def _listed(self, node):
        """The items of a list or tuple written in the code, or of one known while
        transforming (each under a name calls resolve); None otherwise."""
        if isinstance(node, (gast.List, gast.Tuple)) and \
                not any(isinstance(e, gast.Starred) for e in node.elts):
            return list(node.elts)
        found = self.static(node) if isinstance(node, (gast.Name, gast.Attribute)) else None
        if isinstance(found, Static) and isinstance(found.value, (tuple, list)):
            names = []
            for item in found.value:
                names.append(self.namer.fresh("item"))
                self.local_fns[names[-1]] = Static(item)
            return [gast.copy_location(_name(n), node) for n in names]
        return None

    def vectorized_call(self, vectorized, node, stmts):
        """`v(a, b)` of np.vectorize(pyfunc): pyfunc over the broadcast elements, through a
        helper made for this number of arguments (transpile/vectorize.py) and specialized
        to pyfunc. VectorizeOptions: a vectorize made in the code, pyfunc the first
        argument."""
        if isinstance(vectorized, VectorizeOptions):
            fn, args = node.args[0], list(node.args[1:])
            otypes, excluded, signature = vectorized
        else:
            fresh = self.namer.fresh("fn")
            self.local_fns[fresh] = Static(vectorized.pyfunc)
            fn = gast.copy_location(_name(fresh), node)
            args = list(node.args)
            otypes, excluded, signature = vectorized.otypes, vectorized.excluded, \
                vectorized.signature
        if signature is not None or node.keywords or any(isinstance(a, gast.Starred)
                                                         for a in args):
            raise self.error(node, "np.vectorize is supported in transformed code with "
                             "positional arguments and without a signature"
                             + (" (numpy excludes a name only where it is passed by "
                                "keyword)" if any(isinstance(e, str) for e in excluded)
                                else "") + ".",
                             "pass the arguments by position; exclude one by its position.")
        # (an excluded name applies to a keyword argument only, as in numpy: none here)
        excluded = {e for e in excluded if isinstance(e, int)}
        n = len(args)
        # None passes through as it is (numpy gives the function None for every element)
        excluded = frozenset({e % n for e in excluded if -n <= e < n} |
                             {k for k, a in enumerate(args)
                              if isinstance(a, gast.Constant) and a.value is None})
        if len(excluded) == n:
            raise self.error(node, "np.vectorize with every argument excluded has nothing to "
                             "map over.")
        otypes = tuple(np.dtype(t).str for t in otypes) if otypes else None
        caller = REPLACEMENTS["vectorize"](n, excluded, otypes,
                                           self.callees.transformation_named("vmap"))
        full = gast.copy_location(gast.Call(func=node.func, args=[fn] + args, keywords=[]),
                                  node)
        return self.call(Static(caller), full, stmts)

    def frozen_distribution_call(self, node):
        """`norm(loc, scale).logpdf(x)` as `norm.logpdf(x, loc, scale)`, or None: a method
        of a frozen scipy.stats distribution made in the call itself. (One made outside,
        a global or closure value, is found by call_static.)"""
        func = node.func
        if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Call)):
            return None
        maker = self.static(func.value.func)
        if not (isinstance(maker, Static) and _scipy_distribution(maker.value) and
                rules.lookup_object(getattr(maker.value, func.attr, None)) is not None):
            return None
        method = gast.Attribute(value=func.value.func, attr=func.attr, ctx=gast.Load())
        made = gast.Call(func=gast.copy_location(method, func),
                         args=list(node.args) + list(func.value.args),
                         keywords=list(node.keywords) + list(func.value.keywords))
        return gast.copy_location(made, node)

    def frozen_static_call(self, value, args, keywords, node):
        """A method of a frozen scipy.stats distribution known while transforming (a global
        `D = norm(0.5, 2.0)`): the distribution's method with D's parameters as constants,
        or None."""
        frozen = getattr(value, "__self__", None)
        dist = _canonical_distribution(getattr(frozen, "dist", None) or
                                       getattr(frozen, "_dist", None))
        if dist is None or not hasattr(dist, value.__name__):
            return None
        method = getattr(dist, value.__name__)
        if rules.lookup_object(method) is None:
            return None
        if hasattr(frozen, "args") and hasattr(frozen, "kwds"):       # rv_frozen
            params, named = list(frozen.args), dict(frozen.kwds)
        elif type(frozen).__name__ == "multivariate_normal_frozen":
            params, named = [frozen.mean, frozen.cov], {}
        else:
            return None
        return (method, list(args) + [self.static_atom(v, node) for v in params],
                list(keywords) + [(k, self.static_atom(v, node)) for k, v in named.items()])

    def call_static(self, value, args, keywords, node, stmts):
        if isinstance(value, custom.CustomRule):
            # Generated code calls the custom object itself, so code transformed again
            # still meets its rules.
            name = self.program.constant(value, value.__name__)
            self.program.custom[name] = value
            self.program.global_reads[(id(value), "rules_version")] = (
                value, "rules_version", value.rules_version)    # rules given again: new code
            params = list(value.signature.parameters)
            defaults = {p.name: p.default for p in value.signature.parameters.values()
                        if p.default is not inspect.Parameter.empty}
            return self.user_call(name, params, defaults, args, keywords, node)
        transformed = self.callees.transformed_call(value, len(args), [k for k, _ in keywords])
        if transformed is not None:
            ir_name, params, _ = self.function_ir(transformed.entry_function)
            prefix = [self.static_atom(v, node) for v in transformed.prefix]
            extra = [self.static_atom(v, node) for v in transformed.extra]
            return self.user_call(ir_name, params, transformed.defaults, prefix + args,
                                  keywords, node, extra=extra)
        if id(value) in OPERATORS and not keywords:     # operator.add as a value: `+`
            return prim_call(OPERATORS[id(value)], args)
        owner = getattr(value, "__self__", None)
        if isinstance(owner, np.ufunc) and \
                (owner.__name__, getattr(value, "__name__", "")) in UFUNC_METHODS:
            # np.add.reduce(x, axis): the reduction with its own rules (axis 0 by default)
            spelled = UFUNC_METHODS[(owner.__name__, value.__name__)]
            masked = ("where", "initial") if spelled in MASKED_REDUCTIONS and \
                value.__name__ == "reduce" else ()
            if len(args) > 2 or any(k not in ("axis", "keepdims", "dtype") + masked
                                    for k, _ in keywords):
                raise self.error(node, f"np.{owner.__name__}.{value.__name__} is supported "
                                 "in transformed code with (array, axis, keepdims=, dtype="
                                 f"{', where=, initial=' if masked else ''}).")
            if len(args) == 2:
                keywords = [("axis", args.pop())] + list(keywords)
            if not any(k == "axis" for k, _ in keywords):
                keywords = [("axis", _const(0))] + list(keywords)
            if any(k in masked for k, _ in keywords):
                return self.masked_reduction(spelled, args, keywords, node, stmts)
            return prim_call(spelled, args, keywords)
        if isinstance(owner, np.ufunc) and getattr(value, "__name__", "") == "outer" and \
                owner.nin == 2 and rules.lookup_object(owner) is not None:
            return self.ufunc_outer(owner, args, keywords, node, stmts)
        frozen = self.frozen_static_call(value, args, keywords, node) \
            if inspect.ismethod(value) else None
        if frozen is not None:
            return self.call_static(*frozen, node, stmts)
        if _scipy_distribution(value):
            raise self.error(node, "a frozen scipy.stats distribution made in transformed code "
                             "is supported only when its method is called on it at once.",
                             "write norm(loc, scale).logpdf(x), or norm.logpdf(x, loc, "
                             "scale); a frozen distribution made outside the function (a "
                             "global or closure value) can be used as it is.")
        found = rules.lookup_object(value)
        if found is not None and found[1] in MASKED_REDUCTIONS and \
                any(k in ("where", "initial") for k, _ in keywords):
            return self.masked_reduction(found[1], args, keywords, node, stmts)
        spelled = self.spelled_out(found[1], args, keywords, node, stmts) \
            if found is not None else None
        if spelled is not None:
            return spelled
        if found is not None:
            if _writes_into_out(value, args, keywords):
                raise self.error(node, "writing a result into an output array (numpy's out "
                                 "argument) is not supported in transformed code.",
                                 "use the returned array instead: y = np.sum(x, axis=0).")
            return prim_call(found[1], args, keywords)
        if value in (builtins.tuple, builtins.list) and len(args) == 1 and not keywords:
            return prim_call("rt.to_" + value.__name__, args)   # converting a container
        if third_party_function(value):
            written = dotted(node.func) if isinstance(node, gast.Call) else None
            raise self.error(node, *rules.core.missing_rule_message(value, written))
        if not inspect.isfunction(value) and not inspect.ismethod(value) and \
                inspect.isfunction(getattr(type(value), "__call__", None)) and \
                not third_party_function(type(value).__call__):
            value = value.__call__           # a callable object: `model(x)`
        if inspect.ismethod(value) and inspect.isfunction(value.__func__):
            return self.method_of_object(value, args, keywords, node)
        if inspect.isfunction(value) and has_variadic(value):
            shape = call_shape(value, len(args), [k for k, _ in keywords])
            ir_name, params, defaults = self.function_ir(value, node, shape=shape)
            keywords = shape.rename(keywords)
            return self.user_call(ir_name, params, defaults, args, keywords, node,
                                  positional=shape.positional)
        if inspect.isfunction(value) or inspect.ismethod(value):
            ir_name, params, defaults = self.program_function(value, node)
            return self.user_call(ir_name, params, defaults, args, keywords, node)
        written = dotted(node.func) if isinstance(node, gast.Call) else None
        if isinstance(getattr(value, "__self__", None), (list, dict, set)):
            # `global_list.append(x)`: a method of a list the code reads from outside
            raise self.error(node, f"{written or 'this call'} changes a list, dict or set "
                             "that the function reads from a global or a closure; "
                             "transformed code cannot change values outside it.",
                             "return the value instead, or collect it outside the "
                             "transformed function.")
        raise self.error(node, *rules.core.missing_rule_message(value, written))

    def method_of_object(self, method, args, keywords, node):
        """`obj.method(...)` for an object the function reads (a model, `self`): the
        method's function, normalized with `self` bound to that object (its attribute
        reads then happen when the code runs, see expr_Attribute)."""
        fn, owner = method.__func__, method.__self__
        params = list(signature_of(fn).parameters.values())
        if not params or params[0].kind not in (params[0].POSITIONAL_ONLY,
                                                params[0].POSITIONAL_OR_KEYWORD):
            raise self.error(node, f"cannot call {fn.__qualname__}: a method needs a first "
                             "parameter for the object.")
        bound = {params[0].name: Static(owner)}
        shape = None
        if has_variadic(fn):
            shape = call_shape(fn, len(args) + 1, [k for k, _ in keywords])
            keywords = shape.rename(keywords)
        ir_name, names, defaults = self.function_ir(fn, node, bound_functions=bound,
                                                    shape=shape)
        return self.user_call(ir_name, names, defaults, [_const(None)] + list(args), keywords,
                              node, positional=None if shape is None else shape.positional)

    def program_function(self, fn, node):
        return self.function_ir(fn, node)

    def user_call(self, ir_name, params, defaults, args, keywords, node, extra=(),
                  positional=None):
        """The call of IR function `ir_name` binding `args` and `keywords` to `params` (the
        first `positional` of them may be bound by position: the others are keyword-only)."""
        bound = self._bound(params[:len(params) - len(extra)], defaults, args, keywords,
                            ir_name, node, positional)
        if ir_name in self.locals or ir_name in self.params:
            # the caller binds that name itself (`def helper(step, x): return step(x)`
            # calling the function `step`): the function under another name
            ir_name = self.program.function_alias(ir_name, self.locals | self.params)
        call = gast.Call(func=_name(ir_name), args=bound + list(extra), keywords=[])
        anno.set(call, Anno.CALLEE, ir_name)
        return call

    def _bound(self, params, defaults, args, keywords, ir_name, node, positional=None):
        """The atoms for `params` in order: `args`, then `keywords` or the defaults."""
        bound = list(args)
        n_user = len(params)
        limit = n_user if positional is None else positional
        if len(bound) > limit:
            raise self.error(node, f"too many arguments: {ir_name} takes {limit} "
                             f"positional argument{'s' if limit != 1 else ''}.")
        kw = dict(keywords)
        for p in params[len(bound):n_user]:
            if p in kw:
                bound.append(kw.pop(p))
            elif p in defaults:
                d = defaults[p]
                if isinstance(d, LocalDefault) and d.name not in self.locals:
                    raise self.error(node, f"'{p}' is left to its default in a call of "
                                     f"{ir_name} outside the function that defines it; "
                                     "that default is not a constant.", f"pass {p} here.")
                bound.append(_const(d) if is_literal(d) else _name(d.name)
                             if isinstance(d, LocalDefault) else
                             _name(self.program.constant(d, p + "_default")))
            else:
                raise self.error(node, f"missing argument '{p}' in call to {ir_name}.")
        if kw:
            raise self.error(node, f"unexpected keyword argument '{next(iter(kw))}' in call "
                             f"to {ir_name}.")
        return bound

    def method_call(self, node, stmts):
        func = node.func
        if self.typed_argument(func.value) is not None:
            return self.method_of_argument(func.value, func.attr, node, stmts)
        obj = self.atom(func.value, stmts)
        name = func.attr
        args = [self.atom(a, stmts) for a in node.args]
        keywords = [(k.arg, self.atom(k.value, stmts)) for k in node.keywords]
        if name in VARARG_METHODS:
            if len(args) > 1:
                packed = gast.Tuple(elts=args, ctx=gast.Load())
                anno.set(packed, Anno.PRIM, (rules.lookup("tuple"), "tuple"))
                tmp = self.namer.fresh("shape" if name == "reshape" else "axes")
                stmts.append(_assign(tmp, packed, node))
                args = [_name(tmp)]
            spelled = self.spelled_out(VARARG_METHODS[name], [obj] + args, keywords, node,
                                       stmts)        # x.reshape(shape, order="F")
            if spelled is not None:
                return spelled
            return prim_call(VARARG_METHODS[name], [obj] + args, keywords)
        if name in ARRAY_METHODS:
            if ARRAY_METHODS[name] in MASKED_REDUCTIONS and \
                    any(k in ("where", "initial") for k, _ in keywords):
                return self.masked_reduction(ARRAY_METHODS[name], [obj] + args, keywords,
                                             node, stmts)
            spelled = self.spelled_out(ARRAY_METHODS[name], [obj] + args, keywords, node,
                                       stmts)
            if spelled is not None:
                return spelled
            return prim_call(ARRAY_METHODS[name], [obj] + args, keywords)
        if name == "is_integer" and not args and not keywords:    # of a float
            return prim_call("rt.is_integer", [obj])
        if name == "setflags" and not args and [k for k, _ in keywords] == ["write"] and \
                isinstance(keywords[0][1], gast.Constant) and keywords[0][1].value is False:
            # x.setflags(write=False) (PINTS' vectors): it only makes later writes raise,
            # and transformed code writes into no array the function does not own
            return _const(None)
        if name in _STR_METHODS:     # of a str (arrays have none of these): text, as it is
            return prim_call("rt.str_method", [obj, _const(name)] + args, keywords)
        if name in ("keys", "values", "items") and not args and not keywords:
            return self.dict_view(obj, name, node, stmts)
        if name == "get" and 1 <= len(args) <= 2 and not keywords:
            # d.get(k, default): `d[k] if k in d else default` (the default made first, as
            # Python does; the temporaries holding it and the key are read again as names)
            self.locals |= {a.id for a in [obj] + args if isinstance(a, gast.Name) and
                            self.static(a) is None}
            choice = gast.IfExp(
                test=gast.Compare(left=args[0], ops=[gast.In()], comparators=[obj]),
                body=gast.Subscript(value=obj, slice=args[0], ctx=gast.Load()),
                orelse=args[1] if len(args) > 1 else _const(None))
            for n in gast.walk(choice):
                gast.copy_location(n, node)
            return self.expr(choice, stmts)
        self.check_argument_dependent(func.value)
        raise self.unsupported_method(name, node)

    def unsupported_method(self, name, node):
        if name in _LIST_AND_DICT_METHODS:
            return self.error(node, f"method '.{name}()' of a list or dict is not supported in "
                              "transformed code.",
                              "lists support append and a read by index or slice "
                              "(`last = xs[-1]; xs = xs[:-1]` for pop); dicts keys(), "
                              "values(), items(), get() and writes `d[k] = v`.")
        return self.error(node, f"method '.{name}()' is not supported in transformed code.",
                          "call the numpy function instead (np.<name>(x, ...)); supported "
                          "methods: " + ", ".join(sorted(ARRAY_METHODS) +
                                                  sorted(VARARG_METHODS)) +
                          "; methods of your own classes' objects are called as functions")

    # ------------------------------------------------------------------ map, filter, ...
    # Python's functional builtins over user functions and lambdas, written as the loops
    # they run: the functions they call are then resolved while transforming like any call.
    # (map and filter are lazy in Python; their consumers in numeric code read every item,
    # which a list gives them in the same order.)

    def _fresh_local(self, hint):
        name_ = self.namer.fresh(hint)
        self.locals.add(name_)
        return name_

    def _plain_args(self, node, n_min, n_max, keywords=()):
        if any(isinstance(a, gast.Starred) for a in node.args) or \
                any(k.arg not in keywords for k in node.keywords) or \
                not n_min <= len(node.args) <= n_max:
            what = dotted(node.func) or "this function"
            raise self.error(node, f"{what}() is supported in transformed code with "
                             f"{n_min} to {n_max} positional arguments"
                             + (f" and the keywords {', '.join(keywords)}" if keywords else "")
                             + ".")
        return list(node.args), {k.arg: k.value for k in node.keywords}

    def _callable(self, f, stmts):
        """A name for the function `f` (a lambda, a function's name) that calls in the
        loops written below resolve while transforming."""
        value = self.function_value(f, stmts)
        if value is None and isinstance(f, gast.Call):      # functools.partial(g, w)
            made = self.expr(f, stmts)
            value = made if isinstance(made, (LocalPartial, LocalFunction, Static)) else None
        if value is None:
            raise self.error(f, "this function is known only when the code runs.",
                             "pass a function by its name, or a lambda.")
        fresh = self.namer.fresh("fn")
        self.local_fns[fresh] = value
        return _name(fresh)

    def _located(self, new, node):
        for n in gast.walk(new):
            if not hasattr(n, "lineno") or getattr(n, "lineno", None) is None:
                gast.copy_location(n, node)
        return new

    def odeint_call(self, node, stmts):
        """scipy.integrate.odeint(func, y0, t, args=(a, b), ...) -> transpile.integrate.odeint(
        lambda y, t: func(y, t, a, b), y0, t, ...): LSODA is Fortran, which no
        transformation can enter, so transformed code runs a Runge-Kutta solver written in
        Python (transpile/integrate.py) at the same tolerances. LSODA's tuning options
        (Dfun, ml, mu, h0, hmin, ...) do not apply to it and are left out."""
        what = dotted(node.func) or "odeint"
        if any(isinstance(a, gast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            raise self.error(node, f"{what}(*args) or (**kwargs) is not supported in "
                             "transformed code.", "pass the arguments one by one.")
        given = dict(zip(ODEINT_PARAMS, node.args))
        given.update((k.arg, k.value) for k in node.keywords)
        for needed in ("func", "y0", "t"):
            if needed not in given:
                raise self.error(node, f"{what}() needs func, y0 and t.")
        full_output = given.get("full_output")
        if full_output is not None and not (isinstance(full_output, gast.Constant) and
                                            not full_output.value):
            raise self.error(full_output, f"{what}(..., full_output=True) is not supported in "
                             "transformed code (LSODA's report does not exist there).",
                             "leave full_output out.")
        extra = given.get("args")
        if isinstance(extra, gast.Call) and len(extra.args) == 1 and not extra.keywords and \
                isinstance(extra.args[0], (gast.Tuple, gast.List)):
            made_by = self.static(extra.func)          # tuple((params,)), autograd's form
            if isinstance(made_by, Static) and isinstance(made_by.value, type) and \
                    issubclass(made_by.value, tuple):
                extra = extra.args[0]
        if extra is None:
            extra = []
        elif isinstance(extra, (gast.Tuple, gast.List)):
            extra = list(extra.elts)
        else:
            raise self.error(extra, f"{what}(..., args=...) takes a tuple written in the call "
                             "in transformed code.", "write args=(a, b), or close over the "
                             "values in a lambda.")
        tfirst = given.get("tfirst")
        if tfirst is not None and not isinstance(tfirst, gast.Constant):
            raise self.error(tfirst, "tfirst must be True or False, written in the call.")
        func = given["func"]
        if isinstance(func, gast.Lambda):          # named, so that the solver can call it
            named = self._fresh_local("dynamics")
            self._bind_local_function(named, func, stmts)
            func = _name(named)
        y, t = self._fresh_local("y"), self._fresh_local("t")
        order = [t, y] if tfirst is not None and tfirst.value else [y, t]
        body = gast.Call(func=func, args=[_name(v) for v in order] + extra, keywords=[])
        solver = gast.Lambda(
            args=gast.arguments(args=[_name(y, gast.Param()), _name(t, gast.Param())],
                                posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                kwarg=None, defaults=[]),
            body=body)
        keywords = [gast.keyword(arg=k, value=given[k])
                    for k in ("rtol", "atol", "mxstep", "hmax") if k in given]
        call = gast.Call(func=node.func, args=[solver, given["y0"], given["t"]],
                         keywords=keywords)
        return self.call(Static(REPLACEMENTS["odeint"]), self._located(call, node), stmts)

    def map_call(self, node, stmts):
        """map(f, xs[, ys]) -> [f(x) for x in xs] (or over zip(xs, ys))."""
        args, _ = self._plain_args(node, 2, 3)
        f, seqs = self._callable(args[0], stmts), args[1:]
        items = [self._fresh_local("item") for _ in seqs]
        target = _store(items[0]) if len(items) == 1 else gast.Tuple(
            elts=[_store(v) for v in items], ctx=gast.Store())
        it = seqs[0] if len(seqs) == 1 else gast.Call(func=_name("zip"), args=seqs,
                                                      keywords=[])
        comp = gast.ListComp(elt=gast.Call(func=f, args=[_name(v) for v in items],
                                           keywords=[]),
                             generators=[gast.comprehension(target=target, iter=it, ifs=[],
                                                            is_async=0)])
        return self._comprehension(self._located(comp, node), stmts, "mapped")

    def filter_call(self, node, stmts):
        """filter(f, xs) -> [x for x in xs if f(x)] (filter(None, xs): if x)."""
        args, _ = self._plain_args(node, 2, 2)
        item = self._fresh_local("item")
        test = _name(item) if isinstance(args[0], gast.Constant) and args[0].value is None \
            else gast.Call(func=self._callable(args[0], stmts), args=[_name(item)],
                           keywords=[])
        comp = gast.ListComp(elt=_name(item), generators=[gast.comprehension(
            target=_store(item), iter=args[1], ifs=[test], is_async=0)])
        return self._comprehension(self._located(comp, node), stmts, "kept")

    def reduce_call(self, node, stmts):
        """functools.reduce(f, xs[, initial]) -> the loop `acc = f(acc, x)`."""
        args, _ = self._plain_args(node, 2, 3)
        f, seq = self._callable(args[0], stmts), args[1]
        acc, item, seq_name = (self._fresh_local(h) for h in ("acc", "item", "seq"))
        body = [gast.Assign(targets=[_store(seq_name)], value=gast.Call(
            func=_name("list"), args=[seq], keywords=[]), type_comment=None)]
        if len(args) == 3:
            body.append(gast.Assign(targets=[_store(acc)], value=args[2], type_comment=None))
            rest = _name(seq_name)
        else:
            body.append(gast.Assign(targets=[_store(acc)], value=gast.Subscript(
                value=_name(seq_name), slice=gast.Constant(value=0, kind=None),
                ctx=gast.Load()), type_comment=None))
            rest = gast.Subscript(value=_name(seq_name), slice=gast.Slice(
                lower=gast.Constant(value=1, kind=None), upper=None, step=None),
                ctx=gast.Load())
        body.append(gast.For(target=_store(item), iter=rest, body=[gast.Assign(
            targets=[_store(acc)], value=gast.Call(func=f, args=[_name(acc), _name(item)],
                                                   keywords=[]), type_comment=None)],
            orelse=[], type_comment=None))
        stmts.extend(self.block([self._located(b, node) for b in body]))
        return _name(acc)

    def sorted_call(self, node, stmts):
        """sorted(xs, key=f, reverse=r) -> the items of xs in the order of their keys
        (`rt.sorted_order`, a stable sort as Python's): derivatives follow the items."""
        args, kw = self._plain_args(node, 1, 1, keywords=("key", "reverse"))
        seq = self._fresh_local("seq")
        item = self._fresh_local("item")
        body = [gast.Assign(targets=[_store(seq)], value=gast.Call(
            func=_name("list"), args=[args[0]], keywords=[]), type_comment=None)]
        stmts.extend(self.block([self._located(b, node) for b in body]))
        if "key" in kw and not (isinstance(kw["key"], gast.Constant) and
                                kw["key"].value is None):
            keys = self._comprehension(self._located(gast.ListComp(
                elt=gast.Call(func=self._callable(kw["key"], stmts), args=[_name(item)],
                              keywords=[]),
                generators=[gast.comprehension(target=_store(item), iter=_name(seq), ifs=[],
                                               is_async=0)]), node), stmts, "keys")
        else:
            keys = _name(seq)
        reverse = self.atom(kw["reverse"], stmts) if "reverse" in kw else _const(False)
        order = self._fresh_local("order")
        stmts.append(_assign(order, prim_call("rt.sorted_order", [keys, reverse]), node))
        order = _name(order)
        position = self._fresh_local("position")
        picked = gast.ListComp(elt=gast.Subscript(value=_name(seq), slice=_name(position),
                                                  ctx=gast.Load()),
                               generators=[gast.comprehension(target=_store(position),
                                                              iter=order, ifs=[],
                                                              is_async=0)])
        return self._comprehension(self._located(picked, node), stmts, "ordered")

    def dict_call(self, node, stmts):
        """dict(a=x, b=y) -> {'a': x, 'b': y}; dict(pairs) -> {k: v for k, v in pairs}."""
        if len(node.args) == 1 and not node.keywords and \
                not isinstance(node.args[0], gast.Starred):
            # dict(d) copies a dict, dict(pairs) reads pairs: which, the value tells when
            # the code runs (`rt.is_mapping`, the same for every example)
            given = self.atom(node.args[0], stmts, hint="items")
            key, value = self._fresh_local("key"), self._fresh_local("value")
            pairs = gast.DictComp(key=_name(key), value=_name(value), generators=[
                gast.comprehension(target=gast.Tuple(elts=[_store(key), _store(value)],
                                                     ctx=gast.Store()),
                                   iter=given, ifs=[], is_async=0)])
            if isinstance(given, gast.Name):
                self.locals.add(given.id)
            test, keys = self._fresh_local("mapping"), self._fresh_local("keys")
            stmts.append(_assign(test, prim_call("rt.is_mapping", [given]), node))
            stmts.append(_assign(keys, prim_call("rt.mapping_keys", [given]), node))
            copy_ = gast.DictComp(key=_name(key), value=gast.Subscript(
                value=given, slice=_name(key), ctx=gast.Load()), generators=[
                gast.comprehension(target=_store(key), iter=_name(keys), ifs=[],
                                   is_async=0)])
            chosen = gast.IfExp(test=_name(test), body=copy_, orelse=pairs)
            made = self.atom(self._located(chosen, node), stmts, hint="items")
            self.locals.add(made.id)      # (code made from it later reads it by name)
            return made
        if node.args or any(k.arg is None for k in node.keywords):
            raise self.error(node, "dict() is supported in transformed code with keyword "
                             "arguments or one iterable of pairs.",
                             "write the dict as {key: value, ...}.")
        display = gast.Dict(keys=[gast.Constant(value=k.arg, kind=None) for k in node.keywords],
                            values=[k.value for k in node.keywords])
        return self.expr(self._located(display, node), stmts)

    # zip, enumerate and reversed outside a for loop's header (where the loop walks their
    # sequences by index): the list of what they give, built by such a loop, so that
    # derivatives and batching follow the items (they were taken for index arithmetic)

    def zip_call(self, node, stmts):
        """zip(xs, ys) -> [(x, y) for x, y in zip(xs, ys)]."""
        args, _ = self._plain_args(node, 1, 8)
        items = [self._fresh_local("item") for _ in args]
        comp = gast.ListComp(
            elt=gast.Tuple(elts=[_name(v) for v in items], ctx=gast.Load()),
            generators=[gast.comprehension(
                target=gast.Tuple(elts=[_store(v) for v in items], ctx=gast.Store()),
                iter=gast.Call(func=node.func, args=args, keywords=[]), ifs=[], is_async=0)])
        return self._comprehension(self._located(comp, node), stmts, "pairs")

    def enumerate_call(self, node, stmts):
        """enumerate(xs, start) -> [(i + start, x) for i, x in enumerate(xs)]."""
        args, kw = self._plain_args(node, 1, 2, keywords=("start",))
        start = args[1] if len(args) == 2 else kw.get("start")
        index, item = self._fresh_local("i"), self._fresh_local("item")
        counted = _name(index) if start is None else \
            gast.BinOp(left=_name(index), op=gast.Add(), right=start)
        comp = gast.ListComp(
            elt=gast.Tuple(elts=[counted, _name(item)], ctx=gast.Load()),
            generators=[gast.comprehension(
                target=gast.Tuple(elts=[_store(index), _store(item)], ctx=gast.Store()),
                iter=gast.Call(func=node.func, args=args[:1], keywords=[]), ifs=[],
                is_async=0)])
        return self._comprehension(self._located(comp, node), stmts, "pairs")

    def reversed_call(self, node, stmts):
        """reversed(xs) -> [xs[i] for i in reversed(range(len(xs)))]."""
        args, _ = self._plain_args(node, 1, 1)
        seq, index = self._fresh_local("seq"), self._fresh_local("i")
        stmts.extend(self.block([self._located(gast.Assign(
            targets=[_store(seq)], value=args[0], type_comment=None), node)]))
        backwards = gast.Call(func=node.func, args=[gast.Call(
            func=_name("range"), args=[gast.Call(func=_name("len"), args=[_name(seq)],
                                                 keywords=[])], keywords=[])], keywords=[])
        comp = gast.ListComp(
            elt=gast.Subscript(value=_name(seq), slice=_name(index), ctx=gast.Load()),
            generators=[gast.comprehension(target=_store(index), iter=backwards, ifs=[],
                                           is_async=0)])
        return self._comprehension(self._located(comp, node), stmts, "items")

    def is_generator_draw(self, node):
        """Whether `node` calls a draw method of a numpy random generator: one the
        function can see (a global `rng`), or a method named like one on a value that
        arrives at run time (no array method has these names)."""
        func = node.func
        if not isinstance(func, gast.Attribute) or func.attr not in GENERATOR_DRAWS:
            return False
        callee = self.static(func)
        if callee is None:
            return True
        return isinstance(callee, Static) and rules.lookup_object(callee.value) is None and \
            isinstance(getattr(callee.value, "__self__", None),
                       (np.random.Generator, np.random.RandomState))

    def generator_draw(self, node, stmts):
        """`rng.normal(loc, scale, size)` -> `z = rt.draw(rng, 'standard_normal', size)`
        and `loc + scale * z` (see GENERATOR_DRAWS)."""
        func = node.func
        draw, params, formula = GENERATOR_DRAWS[func.attr]
        generator = self.atom(func.value, stmts)
        if params is None:                       # rs.randn(d0, d1), rs.randn(*shape)
            if node.keywords:
                raise self.error(node, f".{func.attr}() takes dimensions only.")
            if len(node.args) == 1 and isinstance(node.args[0], gast.Starred):
                size = self.atom(node.args[0].value, stmts)
            elif any(isinstance(a, gast.Starred) for a in node.args):
                raise self.error(node, f"*args in .{func.attr}() is supported only as its "
                                 "one argument.", f"write .{func.attr}(*shape).")
            else:
                size = self.atom(gast.Tuple(elts=list(node.args), ctx=gast.Load()), stmts)
            values = {}
        else:
            if any(isinstance(a, gast.Starred) for a in node.args) or \
                    any(k.arg is None for k in node.keywords):
                raise self.error(node, "*args and **kwargs in calls are not supported.",
                                 "pass the arguments one by one.")
            names = [p for p, _ in params] + ["size"]
            if len(node.args) > len(names):
                raise self.error(node, f".{func.attr}() takes at most {len(names)} "
                                 "positional arguments.")
            given = dict(zip(names, node.args))
            for k in node.keywords:
                if k.arg not in names or k.arg in given:
                    raise self.error(k.value, f"'{k.arg}' is not an argument of "
                                     f".{func.attr}() that transformed code supports.",
                                     "supported: " + ", ".join(names) + ".")
                given[k.arg] = k.value
            values = {p: self.atom(given[p], stmts) if p in given else _const(default)
                      for p, default in params}
            if "size" in given:
                size = self.atom(given["size"], stmts)
            elif all(isinstance(v, gast.Constant) for v in values.values()):
                size = _const(None)              # one number, as numpy draws it
            else:                                # the parameters' broadcast shape
                shapes = [self.atom_of(prim_call("np.shape", [v]), stmts, "shape")
                          for v in values.values()]
                size = self.atom_of(prim_call("np.broadcast_shapes", shapes), stmts, "size")
        z = self.namer.fresh(draw)
        stmts.append(_assign(z, prim_call("rt.draw", [generator, _const(draw), size]), node))
        return self.formula(gast.parse(formula).body[0].value, dict(values, z=_name(z)),
                            stmts)

    def formula(self, expr, values, stmts):
        """The arithmetic `expr` (names, + - *) over the atoms `values`, in A-normal form."""
        if isinstance(expr, gast.Name):
            return values[expr.id]
        operands = []
        for side in (expr.left, expr.right):
            value = self.formula(side, values, stmts)
            operands.append(value if isinstance(value, (gast.Name, gast.Constant)) else
                            self.atom_of(value, stmts, _temp_hint(side)))
        return prim_call(binop_spelling(expr.op), operands)

    def transformation(self, transform, node):
        """`tp.grad(g, ...)` inside transformed code: applied now, while transforming.

        A nested g is compiled from its lifted IR (free variables become trailing
        parameters, passed at each call), so an outer transformation sees how the inner
        result depends on them: no perturbation confusion."""
        if not node.args or any(not _is_literal(a) for a in node.args[1:]) or \
                any(not _is_literal(k.value) for k in node.keywords):
            raise self.error(node, f"{transform.__name__}() inside transformed code needs a "
                             "function and constant options.",
                             f"write {transform.__name__}(f, argnums=0) with literal options.")
        options = {k.arg: _literal(k.value) for k in node.keywords}
        extra = [_literal(a) for a in node.args[1:]]     # vmap(f, (None, 0)): in_axes
        fn = node.args[0]
        if isinstance(fn, gast.Lambda):          # tp.vmap(lambda r: ...)
            target = self.expr_Lambda(fn, [])
        else:
            target = self.static(fn)
            if target is None and isinstance(fn, gast.Call):   # tp.grad(tp.grad(f))
                target = self.expr(fn, [])
            if isinstance(target, Static) and rules.lookup_object(target.value) is not None:
                # tp.jit(np.sin): a function calling the primitive, as at the top level
                target = Static(custom.primitive_wrapper(target.value) or target.value)
            if target is None:
                target = self.argument_function(fn)      # `vmap(func)` of a function passed in
        return self.apply_transformation(transform, target, extra, options, fn)

    def _called_names(self, fdef):
        """Names `fdef` calls (`kernel(x, y)`) or hands to a transformation (`vmap(kernel)`)."""
        names = set()
        for n in gast.walk(fdef):
            if not isinstance(n, gast.Call):
                continue
            if isinstance(n.func, gast.Name):
                names.add(n.func.id)
            maker = self.static(n.func) if n.args else None
            if isinstance(maker, Static) and self.callees.transformation(maker.value) and \
                    isinstance(n.args[0], gast.Name):
                names.add(n.args[0].id)
        return names

    def argument_function(self, node):
        """Static(the function) where `node` reads an argument of the entry that is a
        function code is made for; None for other values; ArgumentDependent before that."""
        item = self.typed_argument(node)
        if isinstance(item, layouts.FunctionItem):
            return Static(item.fn)
        if item is None:
            self.check_argument_dependent(node)
        return None

    def apply_transformation(self, transform, target, extra, options, where):
        """`transform(target, *extra, **options)` for a function known while transforming."""
        freevars = getattr(target, "freevars", ())
        if self.callees.transformation(transform) in ("vmap", "pmap") and freevars:
            # a nested function's free variables are trailing parameters: the same for
            # every example
            options = dict(options)
            in_axes = extra[0] if extra else options.pop("in_axes", 0)
            extra = []
            nparams = len(target.params) - len(freevars) if isinstance(target, LocalFunction) \
                else len(target.transformed.signature.parameters) - len(freevars)
            if not isinstance(in_axes, (tuple, list)):
                in_axes = (in_axes,) * nparams
            options["in_axes"] = tuple(in_axes) + (None,) * len(freevars)
        if isinstance(target, LocalTransformed):
            return LocalTransformed(transform(target.transformed, *extra, **options),
                                    target.freevars, target.params, target.defaults)
        if isinstance(target, Static):
            return Static(transform(target.value, *extra, **options))
        if isinstance(target, LocalFunction):
            fn = self.callees.compile(self.program, target.ir_name)
            return LocalTransformed(transform(fn, *extra, **options), target.freevars,
                                    target.params[:len(target.params) - len(target.freevars)],
                                    target.defaults)
        if isinstance(target, LocalPartial) and isinstance(target.target, Static) and all(
                isinstance(v, gast.Constant) for v in
                [*target.args, *(v for _, v in target.keywords)]):
            # `tp.jit(partial(h, 2.0))`: a partial of constants, known while transforming
            bound = _partial_of(target.target.value, [v.value for v in target.args],
                                [(k, v.value) for k, v in target.keywords])
            return Static(transform(bound, *extra, **options))
        if isinstance(target, LocalPartial):
            # `vmap(partial(elbo, logprob))`: a lambda calling it, the bound values its free
            # variables (the same for every example)
            made = self._function_of_partial(target, where, [])
            if made is not None:
                return self.apply_transformation(transform, made, extra, options, where)
            raise self.error(where, f"{transform.__name__}() of a functools.partial made in "
                             "transformed code is not supported (its bound arguments are "
                             "values the code computes).",
                             f"apply {transform.__name__} to the function itself and pass "
                             "the bound arguments at the call, or make the partial outside.")
        raise self.error(where, f"{transform.__name__}() needs a function known while "
                         "transforming.")

    def _jvp_tuples_spelled(self, node, stmts):
        """tp.jvp(f, primals, tangents) with the tuple(s) not written out spelled as
        (t[0], ..., t[n-1]), n from the other one (a display, or a tuple known while
        transforming); a tuple only known when the code runs is checked to have n."""
        n = None
        for a in node.args[1:]:
            found = self.static(a) if not isinstance(a, (gast.Tuple, gast.List)) else None
            if isinstance(a, (gast.Tuple, gast.List)):
                n = len(a.elts)
            elif isinstance(found, Static) and isinstance(found.value, (tuple, list)):
                n = len(found.value)
            elif isinstance(a, gast.Name) and a.id in self.lifted and a.id in self.cells:
                # a closure's tuple passed as a parameter: its length now (the code made
                # for it checks the length when it runs, since it may be called again
                # with another tuple)
                value = self.cells[a.id].cell_contents
                if isinstance(value, (tuple, list)):
                    n = len(value)
        if n is None:
            return node
        args = list(node.args)
        for k in (1, 2):
            a = args[k]
            if isinstance(a, (gast.Tuple, gast.List)):
                continue
            if not isinstance(self.static(a), Static):
                seq = self.atom(a, stmts, hint="primals" if k == 1 else "tangents")
                line = self.src.line_of(node)
                stmts.append(gast.copy_location(gast.Expr(value=prim_call("rt.check_length", [
                    seq, _const(n), _const(f"{self.src.filename}:{line} ({self.src.name})"),
                    _const(False), _const("jvp")])), node))
                a = seq
            elts = [gast.copy_location(gast.Subscript(value=copy.deepcopy(a), slice=_const(i),
                                                      ctx=gast.Load()), node)
                    for i in range(n)]
            args[k] = gast.copy_location(gast.Tuple(elts=elts, ctx=gast.Load()), node)
        return gast.copy_location(gast.Call(func=node.func, args=args,
                                            keywords=node.keywords), node)

    # `out, pullback = tp.vjp(f, x, ...)` and later `pullback(ct)`: JAX's custom_vjp backward
    # rules (fixed_point's `vjp(lambda a: f(a, x_star), a)`) and Myia's J. The pullback, a
    # function value, is never held: the assignment computes `out = f(x, ...)` and records
    # f and the primals; each call is the gradient of `<f(x, ...), ct>` with respect to every
    # primal (tp.grad inside transformed code), which runs f's forward code again.

    def vjp_assignment(self, node, stmts):
        """Lower `out, pullback[, aux] = tp.vjp(f, *primals[, has_aux=...])`; False if
        `node` is not one."""
        value, targets = node.value, node.targets[0] if len(node.targets) == 1 else None
        if not (isinstance(value, gast.Call) and isinstance(targets, gast.Tuple) and
                all(isinstance(t, gast.Name) for t in targets.elts)):
            return False
        maker = self.static(value.func)
        if not (isinstance(maker, Static) and self.callees.transformation(maker.value) == "vjp"):
            return False
        options = {k.arg: k.value for k in value.keywords}
        has_aux = options.pop("has_aux", gast.Constant(value=False, kind=None))
        if options or not isinstance(has_aux, gast.Constant) or len(value.args) < 2 or \
                any(isinstance(a, gast.Starred) for a in value.args) or \
                len(targets.elts) != (3 if has_aux.value else 2):
            raise self.error(value, "tp.vjp inside transformed code takes a function and its "
                             "primals written out (and has_aux=True or False), and is "
                             "unpacked into (out, pullback) or (out, pullback, aux).",
                             "write `out, pullback = tp.vjp(f, x, y)`.")
        out, pullback = targets.elts[0].id, targets.elts[1].id
        if self.assignments.get(pullback, 0) != 1:
            raise self.error(value, f"the pullback '{pullback}' is assigned more than once; "
                             "transformed code calls a pullback known while transforming.",
                             "give each pullback its own name.")
        fn, primals = self._vjp_function_and_primals(value, pullback, stmts)
        call = gast.copy_location(gast.Call(func=copy.deepcopy(fn), args=[
            gast.copy_location(_name(p), node) for p in primals], keywords=[]), value)
        result = gast.Tuple(elts=[_name(out, gast.Store()), targets.elts[2]], ctx=gast.Store()) \
            if has_aux.value else _name(out, gast.Store())
        stmts.extend(self.stmt_Assign(gast.copy_location(
            gast.Assign(targets=[result], value=call, type_comment=None), node)))
        self.pullbacks[pullback] = (fn, primals, bool(has_aux.value))
        return True

    def pullback_call(self, node, stmts):
        """`pullback(ct)` of a tp.vjp lowered by vjp_assignment: a tuple with the cotangent
        of each primal."""
        fn, primals, has_aux = self.pullbacks[node.func.id]
        return self._pullback(fn, primals, has_aux, node, stmts)

    def vjp_called_where_made(self, made, node, stmts):
        """`tp.vjp(f, x, ...)[1](ct)`: the pullback called at once."""
        if made.keywords or len(made.args) < 2 or \
                any(isinstance(a, gast.Starred) for a in made.args) or \
                not (isinstance(node.func.slice, gast.Constant) and node.func.slice.value == 1):
            raise self.error(made, *_VJP_IN_CODE)
        fn, primals = self._vjp_function_and_primals(made, "vjp", stmts)
        return self._pullback(fn, primals, False, node, stmts)

    def _vjp_function_and_primals(self, made, hint, stmts):
        """(a node naming f, the names holding the primals) of `tp.vjp(f, x, ...)`: a
        lambda bound to a name, the primals held as they are now (a pullback called later
        differentiates at these values)."""
        fn = made.args[0]
        if isinstance(fn, gast.Lambda):
            named = self.namer.fresh(f"{hint}_function")
            self._bind_local_function(named, fn, stmts)
            fn = gast.copy_location(_name(named), fn)
        primals = []
        for a in made.args[1:]:
            held = self.namer.fresh(f"{hint}_primal")
            stmts.append(_assign(held, self.atom(a, stmts), a))
            self.locals.add(held)
            primals.append(held)
        return fn, primals

    def _pullback(self, fn, primals, has_aux, node, stmts):
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], gast.Starred):
            raise self.error(node, "a pullback takes one cotangent, shaped like the output.")
        grad = self.callees.transformation_named("grad")
        if grad is None:
            raise self.error(node, *_VJP_IN_CODE)
        cotangent = self.namer.fresh("cotangent")
        stmts.append(_assign(cotangent, self.atom(node.args[0], stmts), node))
        self.locals.add(cotangent)
        grad_name, vdot_name = self.namer.fresh("grad_of"), self.namer.fresh("inner_product")
        self.local_fns[grad_name] = Static(grad)
        self.local_fns[vdot_name] = Static(runtime.trees.tree_vdot)
        params = [self.namer.fresh("primal") for _ in primals]
        output = gast.Call(func=copy.deepcopy(fn), args=[_name(p) for p in params],
                           keywords=[])
        if has_aux:
            output = gast.Subscript(value=output, slice=_const(0), ctx=gast.Load())
        product = _lambda(params, gast.Call(func=_name(vdot_name),
                                            args=[output, _name(cotangent)], keywords=[]))
        argnums = gast.Tuple(elts=[_const(i) for i in range(len(primals))], ctx=gast.Load())
        gradient = gast.Call(func=gast.Call(
            func=_name(grad_name), args=[product],
            keywords=[gast.keyword(arg="argnums", value=argnums)]),
            args=[_name(p) for p in primals], keywords=[])
        for n in gast.walk(gradient):
            gast.copy_location(n, node)
        return self.expr(gradient, stmts)

    def jvp_call(self, node, stmts):
        """`tp.jvp(f, (x, y), (dx, dy))` inside transformed code: a call of f's jvp function.
        One of the two tuples may be a name (a parameter, a closure's tuple) where the
        other is written out or known while transforming: it is read item by item."""
        if len(node.args) == 3 and not all(isinstance(a, (gast.Tuple, gast.List))
                                           for a in node.args[1:]):
            node = self._jvp_tuples_spelled(node, stmts)
        if len(node.args) != 3 or not all(isinstance(a, (gast.Tuple, gast.List))
                                          for a in node.args[1:]) or \
                any(k.arg != "has_aux" for k in node.keywords):
            raise self.error(node, "tp.jvp inside transformed code needs tuples whose length "
                             "is known while transforming: tp.jvp(f, (x, ...), (dx, ...)), "
                             "or one of them a tuple known then (a closure's).",
                             "write the primals or the tangents as a tuple display.")
        options = {}
        for k in node.keywords:          # has_aux: written, or a constant known now
            known = self.static(k.value)
            if not isinstance(known, Static) or not isinstance(known.value, bool):
                raise self.error(k.value, "tp.jvp's has_aux inside transformed code must be "
                                 "True or False, known while transforming.")
            options[k.arg] = known.value
        target = self.static(node.args[0])
        if target is None and isinstance(node.args[0], gast.Call):   # tp.jvp(tp.grad(f), ...)
            target = self.expr(node.args[0], stmts)
        if isinstance(target, LocalTransformed):
            fn, extra = target.transformed, target.freevars
        elif isinstance(target, Static):
            fn, extra = target.value, []
        elif isinstance(target, LocalFunction):
            fn, extra = self.callees.compile(self.program, target.ir_name), target.freevars
        else:
            raise self.error(node.args[0], "tp.jvp needs a function known while transforming.")
        t = self.callees.transformed_call(self.callees.jvp_of(fn, options,
                                                              len(node.args[1].elts)))
        # the jvp function takes: bound prefix, arguments, closure values, lifted free
        # variables; then one tangent for each (zero for all but the arguments')
        before = [self.static_atom(v, node) for v in t.prefix]
        after = [self.static_atom(v, node) for v in t.extra] + \
            [_name(v) for v in extra]
        ir_name, params, _ = self.function_ir(t.entry_function)
        given = [self.atom(a, stmts) for a in node.args[1].elts]
        tangents = [self.atom(a, stmts) for a in node.args[2].elts]
        if len(tangents) != len(given):
            raise self.error(node, f"tp.jvp got {len(given)} primals and {len(tangents)} "
                             "tangents.", "give one tangent for each primal.")
        # parameters left at their defaults are constants of the jvp, as at the top level
        n_user = len(params) // 2 - len(before) - len(after)
        for p in params[len(before) + len(given):len(before) + n_user]:
            if p not in t.defaults:
                raise self.error(node, f"missing argument '{p}' in tp.jvp's primals.")
            d = t.defaults[p]
            given.append(_const(d) if is_literal(d) else
                         _name(self.program.constant(d, p + "_default")))
        primals = before + given + after
        zeros = []
        for v in before + given[len(tangents):] + after:   # values the caller does not perturb
            z = self.namer.fresh("zero_dot")
            stmts.append(_assign(z, prim_call("rt.tangent_zeros", [v])))
            zeros.append(_name(z))
        tangents = zeros[:len(before)] + tangents + zeros[len(before):]
        call = gast.Call(func=_name(ir_name), args=primals + tangents, keywords=[])
        anno.set(call, Anno.CALLEE, ir_name)
        return call

    def chosen_call(self, node, stmts, hint=None):
        """`pool(x)` where `pool` holds which of several functions (Normalizer's
        `choices`): the arguments once, then an `if` calling the one it holds."""
        name = node.func.id
        result, calling = self._arguments_once(node, stmts, hint)
        chain = []
        for k, (_, spelled) in reversed(list(enumerate(self.choices[name]))):
            branch = calling(spelled)
            if not chain:
                chain = branch          # the last: what the name holds when no other
                continue
            test = gast.Compare(left=_name(name), ops=[gast.Eq()], comparators=[_const(k)])
            chain = [gast.If(test=test, body=branch, orelse=chain)]
        for s in chain:
            for n in gast.walk(s):
                gast.copy_location(n, node)
        for s in chain:
            stmts.extend(self.stmt(s))
        return _name(result)

    def looked_up_call(self, node, stmts, hint=None):
        """`D[key](x)` for a dict of functions known now and a key known when the code
        runs (code_lookup): the arguments once, then an `if` over the keys calling the
        function the key maps to."""
        result, calling = self._arguments_once(node, stmts, hint)
        bodies = [calling(spelled) for _, _, spelled in self.code_lookup(node.func)]
        stmts.extend(self.code_lookup_chain(node, node.func, bodies))
        return _name(result)

    def _arguments_once(self, node, stmts, hint):
        """For a call of one of several functions: its arguments in temporaries, and
        (the result's name, function -> [`result = function(arguments)`])."""
        args = [self.atom(a, stmts) for a in node.args]
        keywords = [gast.keyword(arg=k.arg, value=self.atom(k.value, stmts))
                    for k in node.keywords]
        result = self.namer.fresh(hint or "out")
        # (the temporaries holding the arguments are read again as the branches' names)
        self.locals |= {a.id for a in args + [k.value for k in keywords]
                        if isinstance(a, gast.Name)} | {result}

        def calling(spelled):
            called = gast.Call(func=copy.deepcopy(spelled), args=copy.deepcopy(args),
                               keywords=copy.deepcopy(keywords))
            return [gast.Assign(targets=[_name(result, gast.Store())], value=called,
                                type_comment=None)]
        return result, calling

    def check_single_binding(self, name, node):
        """A local function is resolved while transforming: its name must be bound once
        (a def or lambda in each branch of an `if` would be one function for both paths)."""
        if self.assignments.get(name, 0) > 1:
            raise self.error(node, f"'{name}' is assigned more than once, and here a function "
                             "(or an object whose methods are called); transformed code "
                             "calls a function known while transforming.",
                             "give each function its own name.")

    def _bind_local_function(self, target, value, stmts):
        if isinstance(value, gast.Lambda):
            self.check_single_binding(target, value)
            fdef = gast.FunctionDef(name=target, args=value.args,
                                    body=[gast.Return(value=value.body)], decorator_list=[],
                                    returns=None, type_comment=None, type_params=[])
            gast.copy_location(fdef, value)
            self.local_fns[target] = self.lift(fdef, target, stmts=stmts)
            return True
        return False

    def lift(self, fdef, hint, bound=None, stmts=None):
        """Lift a nested def/lambda to an IR function; its free variables become parameters.
        One that calls itself by its name (a nested `fact`) calls its own IR function. One
        that calls a parameter is a LocalTemplate, lifted at each call for the functions
        passed (`bound`: parameter -> Static or LocalFunction; those parameters get None)."""
        params = [a.id for a in fdef.args.args]
        if bound is None and any(isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and
                                 n.func.id in params for n in gast.walk(fdef)):
            return LocalTemplate(fdef, hint, dict(self.local_fns))
        own = assigned_names(fdef.body) | {a.id for a in fdef.args.args}
        used = {n.id for n in gast.walk(fdef) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load)}
        recursive = fdef.name in used - own
        used.discard(fdef.name if recursive else None)
        # local functions it calls are resolved while transforming; what they read from
        # here is read by this one too
        # functions passed to the entry that the nested one calls (kernel in `lambda y:
        # kernel(x, y)`) are known as the entry knows them
        passed = {n: self.argument_function(_name(n)) for n in self._called_names(fdef) - own
                  if n not in self.local_fns and self._entry_argument_behind(_name(n))} \
            if self.entry else {}
        bound = dict({n: f for n, f in passed.items() if f is not None}, **(bound or {}))
        known = dict(self.local_fns, **bound)
        called = [known[n] for n in used - own if n in known] + \
            [f for f in (bound or {}).values()]
        used = (used - {n for n in used - own if n in known}) | \
            {v for f in called for v in getattr(f, "freevars", ())}
        free = sorted((used - own) & (self.locals | set(self.lifted)))
        name = self.program.namer.fresh(f"{self.ir_name}_{hint}")
        defaults = {}
        if fdef.args.defaults:
            names = [a.id for a in fdef.args.args][-len(fdef.args.defaults):]
            for n, d in zip(names, fdef.args.defaults):
                if isinstance(d, gast.Constant):
                    defaults[n] = d.value
                elif stmts is not None:
                    # evaluated where the def is, as Python does: a call leaving it out
                    # passes that value (read from a local name of the defining function)
                    held = self.namer.fresh(f"{hint}_{n}_default")
                    self.locals.add(held)
                    stmts.append(_assign(held, self.atom(d, stmts), d))
                    defaults[n] = LocalDefault(held)
                else:
                    raise self.error(d, "default values of nested functions must be constants.")
            fdef.args.defaults = []
        params = [a.id for a in fdef.args.args]
        lifted = LocalFunction(name, params + free, free, defaults)
        inner = type(self)(self.program, self.src, self.globals, self.closure, name,
                           lifted=free)
        inner.local_fns = dict(self.local_fns, **(bound or {}))
        inner.nested = True
        if recursive:
            inner.local_fns[fdef.name] = lifted
        self.program.functions[name] = None  # reserve (recursion)
        self.program.functions[name] = inner.normalize(fdef)
        return lifted


_VJP_IN_CODE = ("tp.vjp inside transformed code is supported in two forms only: its pullback "
                "is a function value, which transformed code cannot hold.",
                "write `out, pullback = tp.vjp(f, x, ...)` (or `out, pullback, aux = ...` with "
                "has_aux=True) and call `pullback(ct)` in the same function, or "
                "`tp.vjp(f, x, ...)[1](ct)`.")

# methods that only lists and dicts have (an array's are in ARRAY_METHODS)
_STR_METHODS = {"lower", "upper", "casefold", "capitalize", "title", "swapcase", "strip",
                "lstrip", "rstrip", "startswith", "endswith", "split", "rsplit", "replace",
                "format", "join", "find", "rfind", "isdigit", "isalpha", "isalnum",
                "isnumeric", "isspace", "islower", "isupper", "removeprefix",
                "removesuffix", "zfill", "center", "ljust", "rjust", "partition"}
_LIST_AND_DICT_METHODS = {"pop", "insert", "remove", "extend", "index", "count", "reverse",
                          "clear", "update", "setdefault", "popitem"}


def fixed_hint(fn):
    doc = (fn.__doc__ or "").strip().splitlines()
    return f"see {fn.__module__}.{fn.__name__}: {doc[0]}" if doc else None


def _lambda(params, body, defaults=()):
    """`lambda p0, p1, ...: body` (the last parameters with `defaults`)."""
    return gast.Lambda(args=gast.arguments(
        args=[_name(p, gast.Param()) for p in params], posonlyargs=[], vararg=None,
        kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=list(defaults)), body=body)


def _copy_node(node):
    return copy.deepcopy(node)


_PARTIALS = {}


def _partial_of(fn, args, keywords):
    """functools.partial(fn, *args, **keywords), the same object for the same parts (by
    identity): code specialized to it is found again."""
    key = (id(fn), tuple(map(id, args)), tuple((k, id(v)) for k, v in keywords))
    if key not in _PARTIALS:
        _PARTIALS[key] = functools.partial(fn, *args, **dict(keywords))
    return _PARTIALS[key]


def _names_user_class(found):
    """Whether `found` (a Static, or None) is a user's class or a tuple holding one."""
    value = found.value if isinstance(found, Static) else None
    classes = value if isinstance(value, tuple) else (value,)
    return any(isinstance(c, type) and not library_module(inspect.getmodule(c))
               for c in classes)


def _annotated_class(owner, field):
    """The user class that `owner`'s annotation of `field` names (`layer: Layer` in a
    NamedTuple or dataclass), else None (no annotation, a string one, numpy's, a generic)."""
    for cls in getattr(owner, "__mro__", ()):
        annotation = vars(cls).get("__annotations__", {}).get(field)
        if annotation is not None:
            if isinstance(annotation, type) and not library_module(
                    inspect.getmodule(annotation), ("numpy", "builtins", "cupy", "typing")):
                return annotation
            return None
    return None


def _is_function(value):
    """A function passed as a value (not a class, module or array)."""
    return callable(value) and not isinstance(value, type) and not inspect.ismodule(value) \
        and not hasattr(value, "dtype") and not hasattr(value, "__array__")


_NOT_INT = object()


def _int_literal(node):
    """The int a slice bound is written as (`1`, `-1`), None for none, else _NOT_INT."""
    if node is None:
        return None
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _int_literal(node.operand)
        return -inner if type(inner) is int else _NOT_INT
    return node.value if isinstance(node, gast.Constant) and type(node.value) is int \
        else _NOT_INT


def _is_literal(node):
    """A constant, or a tuple of literals (in_axes such as (None, 0))."""
    if isinstance(node, gast.Tuple):
        return all(_is_literal(e) for e in node.elts)
    return isinstance(node, gast.Constant)


def _literal(node):
    if isinstance(node, gast.Tuple):
        return tuple(_literal(e) for e in node.elts)
    if isinstance(node, gast.Constant):
        return node.value
    raise ValueError(node)


def _method_of_array(found):
    """A method of an array known before the call (`y.sum` for a closure's y): spelled as
    a method call on that array, like a method of a local array."""
    owner = getattr(found.value, "__self__", None) if isinstance(found, Static) else None
    return isinstance(owner, (np.ndarray, np.generic))



def _is_namedtuple_class(value):
    return isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")


def _is_add_at(value):
    """np.add.at, or np.subtract.at (an add of the negated values)."""
    return getattr(value, "__self__", None) in (np.add, np.subtract) and \
        getattr(value, "__name__", None) == "at"


def _numpy_attr(attr):
    return gast.Attribute(value=gast.Name(id="np", ctx=gast.Load(), annotation=None,
                                          type_comment=None), attr=attr, ctx=gast.Load())


def _temp_hint(node):
    return {gast.Add: "add", gast.Sub: "subtract", gast.Mult: "multiply"}.get(
        type(getattr(node, "op", None)), "value")


def _store(id_):
    return _name(id_, True)


def _writes_into_out(fn, args, keywords):
    """Whether a call of numpy function `fn` passes an output array (`out=buf`, or by
    position: np.exp(x, buf), np.sum(a, 0, None, buf)): numpy writes into it, which the
    transformations would not follow (the call's result may even look unused)."""
    def given(node):
        return not (isinstance(node, gast.Constant) and node.value is None)
    if any(k == "out" and given(v) for k, v in keywords):
        return True
    if isinstance(fn, np.ufunc):
        return len(args) > fn.nin and any(given(a) for a in args[fn.nin:])
    if not third_party_function(fn):
        return False            # runtime's helpers name a parameter `out` (the result)
    try:
        params = list(signature_of(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = []
    for p in params:             # those a positional argument can fill, in order
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break                # (np.einsum's out follows *operands: keyword-only)
        positional.append(p.name)
    return "out" in positional and len(args) > positional.index("out") and \
        given(args[positional.index("out")])
