"""autograd's extension API (`autograd.extend`), so that code defining its own primitives for
autograd runs with its imports changed (`from transpile.extend import primitive, defvjp`):

    @primitive
    def logsumexp(x):                       # a black box: transformations never read it
        ...
    def logsumexp_vjp(ans, x):              # a vjp maker: (ans, *args) -> (g -> cotangent)
        x_shape = x.shape
        return lambda g: np.full(x_shape, g) * np.exp(x - np.full(x_shape, ans))
    defvjp(logsumexp, logsumexp_vjp)        # one maker per argument (None: not differentiable)
    defjvp(logsumexp, lambda g, ans, x: np.sum(g * np.exp(x - ans)))   # (g, ans, *args)

A primitive is a custom rule (transpile.custom) whose reverse and forward rules are built
from the makers. A vjp maker is read as source: its returned `lambda g: ...` (or `def
vjp(g): ...; return vjp`) becomes the end of one function of `(ans, *args, g)`, which
transformations can read like any code, so a primitive is differentiable to any order, as
in autograd, where the makers' code must itself be differentiable. A maker that cannot be
read that way (it returns a function it did not define) still gives first derivatives.

Vector spaces of your own types (autograd's rkhs example: functions as gradients):
`class FunVSpace(VSpace)` with `zeros()`, `_add`, `_scalar_mul`, `_inner_prod`, then
`FunVSpace.register(Fun)`; a value of that type may then be differentiated (`tp.grad(loss)(f,
...)`, its gradient a value of the same type), as long as what reads it is a primitive (its
`__call__` or a function taking it). `Box` exists for the same code to run: transpile has no
boxes (nothing is traced), so `Box.register` records nothing.
"""
import ast
import functools
import inspect
import itertools
import linecache
import types

import gast

import runtime as rt
from runtime.trees import VSPACES
from .custom import CustomRule, file_backed, identifier, positional_names
from .errors import TransformError
from .frontend import normalize_function
from .frontend.parse import parse_function
from .frontend.resolved import assigned_names
from .ir.program import Program

__all__ = ["primitive", "defvjp", "defjvp", "defvjp_argnum", "defjvp_argnum", "VSpace",
           "vspace", "Box", "func"]

_counter = itertools.count()


class primitive(CustomRule):  # noqa: N801 - autograd's name
    """A function that transformations do not read: its derivatives are the makers given to
    `defvjp` / `defjvp` (per argument). Used on a method too (`@primitive def __call__(self,
    x)`), where `self` is argument 0."""

    def __init__(self, fn):
        super().__init__(fn)
        self.vjp_makers = {}        # argument number -> maker(ans, *args)
        self.jvp_makers = {}        # argument number -> maker(g, ans, *args)
        self._applied = {}          # argument number -> function(ans, *args, g)
        self._pairs, self._jvps = {}, {}

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    # ------------------------------------------------------------------ reverse mode
    def reverse_rules(self, mask, grad):
        """(fwd, bwd) for calls whose arguments `mask` carry derivatives."""
        n = len(self.signature.parameters)
        mask = tuple(mask) if mask is not None else (True,) * n
        if mask not in self._pairs:
            if not self.vjp_makers and self.jvp_makers:
                self._pairs[mask] = super().reverse_rules(mask, grad)   # transpose the jvp
            else:
                self._pairs[mask] = self._vjp_pair(mask, n)
        return self._pairs[mask]

    def _vjp_pair(self, mask, n):
        params = positional_names(n)
        args = ", ".join(params)
        name = identifier(self.__name__)
        env = {"primitive_": self}
        cotangents = []
        for i, active in enumerate(mask):
            if not active:
                cotangents.append("None")
                continue
            env[f"vjp_{i}"] = self._applied_vjp(i)
            cotangents.append(f"vjp_{i}(ans, {args}, g)")
        one = "," if n == 1 else ""
        fwd = file_backed(f"def {name}fwd({args}):\n"
                          f"    ans = primitive_({args})\n"
                          f"    return ans, (ans, {args})\n", env, f"{name}fwd")
        bwd = file_backed(f"def {name}bwd(saved, g):\n"
                          f"    ans, {args}{one} = saved\n"
                          f"    return ({', '.join(cotangents)}{one})\n", env, f"{name}bwd")
        return fwd, bwd

    def _applied_vjp(self, i):
        """maker(ans, *args)(g) as one function of (ans, *args, g)."""
        if i not in self.vjp_makers or self.vjp_makers[i] is None:
            raise TransformError(
                f"{self.__qualname__} is differentiated with respect to its argument {i} "
                f"({list(self.signature.parameters)[i]!r}), for which defvjp gave no vjp.\n"
                f"  hint: give a maker for it in defvjp({self.__name__}, ...), or leave that "
                f"argument out of the derivative.")
        if i not in self._applied:
            maker = self.vjp_makers[i]
            applied = applied_maker(maker)
            if applied is not None and not _readable(applied):
                applied = None
            if applied is None:         # not readable: a black box itself, first order only
                applied = primitive(_call_made_function(
                    maker, len(self.signature.parameters)))
                applied.__qualname__ = f"the vjp of {self.__qualname__} (argument {i})"
            self._applied[i] = applied
        return self._applied[i]

    # ------------------------------------------------------------------ batching
    def batched(self, specs, axis_name, _vmap=None):
        """vmap of a primitive: a loop over the examples, calling it on each (its body is
        never read, so it may do anything), the results stacked. Each call keeps its
        rules, so vmapped code through a primitive is differentiable too."""
        if not all(spec is True or spec is False for spec in specs):
            return None          # containers batched in part: batch the body instead
        made = self.__dict__.setdefault("_batched", {})
        if specs not in made:
            params = positional_names(len(specs))
            example = ", ".join(f"{p}[i]" if batched else p for p, batched in zip(params, specs))
            name = identifier(self.__name__) + "batched"
            made[specs] = file_backed(
                f"def {name}(batch_size, {', '.join(params)}):\n"
                f"    outs = []\n"
                f"    for i in range(batch_size):\n"
                f"        outs.append(primitive_({example}))\n"
                f"    return rt.tree_stack(outs)\n", {"primitive_": self, "rt": rt}, name)
        return made[specs]

    # ------------------------------------------------------------------ forward mode
    def forward_rule(self, mask):
        n = len(self.signature.parameters)
        mask = tuple(mask)
        if mask not in self._jvps:
            if not self.jvp_makers:
                raise TransformError(
                    f"forward mode (jvp) meets the primitive {self.__qualname__}, which has "
                    f"only vjp makers.\n  hint: give it jvp makers with defjvp, or use "
                    f"reverse mode (grad, vjp, jacrev).")
            params = positional_names(n)
            args = ", ".join(params)
            env = {"primitive_": self}
            terms = []
            for i, active in enumerate(mask):
                if not active:
                    continue
                if self.jvp_makers.get(i) is None:
                    raise TransformError(
                        f"{self.__qualname__} is differentiated in forward mode with respect "
                        f"to its argument {i}, for which defjvp gave no jvp.\n  hint: give a "
                        f"maker for it in defjvp({self.__name__}, ...).")
                env[f"jvp_{i}"] = self.jvp_makers[i]
                terms.append(f"jvp_{i}(t_{params[i]}, ans, {args})")
            tangents = [f"t_{p}" for p, m in zip(params, mask) if m]
            name = identifier(self.__name__) + "jvp"
            text = (f"def {name}({', '.join(params + tangents)}):\n"
                    f"    ans = primitive_({args})\n"
                    f"    return ans, {' + '.join(terms)}\n")
            self._jvps[mask] = file_backed(text, env, name)
        return self._jvps[mask]

    @property
    def rule(self):
        """The jvp rule (primals, tangents) -> (out, out_tangent), for the transposition
        that gives reverse mode when only jvp makers exist."""
        if not self.jvp_makers:
            return None
        n = len(self.signature.parameters)
        names = positional_names(n)
        one = "," if n == 1 else ""
        return file_backed(f"def rule(primals, tangents):\n"
                           f"    {', '.join(names)}{one} = primals\n"
                           f"    {', '.join('t_' + p for p in names)}{one} = tangents\n"
                           f"    return jvp({', '.join(names + ['t_' + p for p in names])})\n",
                           {"jvp": self.forward_rule((True,) * n)}, "rule")

    @rule.setter
    def rule(self, value):     # CustomRule's default; a primitive's rule is its makers'
        pass


def defvjp(fun, *makers, argnums=None):
    """Give `fun` (a primitive) one vjp maker per argument, in order, or for `argnums`:
    `maker(ans, *args, **kwargs)` returns `g -> the cotangent of that argument`."""
    _give_makers(fun, "vjp_makers", zip(range(len(makers)) if argnums is None else argnums,
                                        makers))


def defjvp(fun, *makers, argnums=None):
    """Give `fun` (a primitive) one jvp maker per argument: `maker(g, ans, *args)` returns
    the output's tangent for tangent `g` of that argument (the contributions add up)."""
    _give_makers(fun, "jvp_makers", zip(range(len(makers)) if argnums is None else argnums,
                                        makers))


def defvjp_argnum(fun, maker):
    """One maker for every argument: `maker(argnum, ans, args, kwargs)` returns g -> ..."""
    n = len(_primitive_of(fun).signature.parameters)
    _give_makers(fun, "vjp_makers", ((i, functools.partial(_argnum_vjp, maker, i))
                                     for i in range(n)))


def defjvp_argnum(fun, maker):
    """One maker for every argument: `maker(argnum, g, ans, args, kwargs)`."""
    n = len(_primitive_of(fun).signature.parameters)
    _give_makers(fun, "jvp_makers", ((i, functools.partial(_argnum_jvp, maker, i))
                                     for i in range(n)))


def _give_makers(fun, table, makers):
    prim = _primitive_of(fun)
    getattr(prim, table).update(makers)
    prim._applied.clear()         # rules built from the old makers
    prim._pairs.clear()
    prim.rules_changed()


def _argnum_vjp(maker, i, ans, *args):
    return maker(i, ans, args, {})


def _argnum_jvp(maker, i, g, ans, *args):
    return maker(i, g, ans, args, {})


def _primitive_of(fun):
    if isinstance(fun, types.MethodType) and isinstance(fun.__func__, primitive):
        fun = fun.__func__
    if not isinstance(fun, primitive):
        raise TypeError(f"defvjp and defjvp take a function decorated with @primitive, got "
                        f"{fun!r}")
    return fun


def func(f):
    """autograd.util.func: the function itself (autograd's spelling of a method's function)."""
    return f


# ---------------------------------------------------------------- makers read as source

def applied_maker(maker):
    """`maker(ans, *args)(g)` as one plain function of `(ans, *args, g)`, written from the
    maker's source: its `return lambda g: E` becomes `return E`, and a `def vjp(g): ...`
    followed by `return vjp` becomes vjp's body. None when the maker is not of that form
    (a partial, a builtin, a maker returning a function from elsewhere)."""
    if not inspect.isfunction(maker):
        return None
    try:
        parsed, _ = parse_function(maker)
    except (TransformError, OSError, SyntaxError, TypeError):
        return None
    own = {a.id for a in parsed.args.args} | assigned_names(parsed.body)
    fdef = gast.gast_to_ast(parsed)
    if fdef.args.vararg or fdef.args.kwarg or fdef.args.kwonlyargs:
        return None
    found = _inline_returned_function(fdef.body, own)
    if found is None:
        return None
    body, g_name = found
    fdef.body = body
    fdef.args.args.append(ast.arg(arg=g_name))
    fdef.args.defaults = []
    fdef.name = identifier(getattr(maker, "__name__", "vjp")) + "applied"
    fdef.decorator_list = []
    return _compile_like(fdef, maker)


def _inline_returned_function(body, own):
    """(new body, g's name), the returned function's body spliced where it is returned;
    None if some return gives anything else."""
    defs = {s.name: s for s in body if isinstance(s, ast.FunctionDef)}
    g_names = set()
    ok = True

    def rewrite(stmts):
        nonlocal ok
        out = []
        for s in stmts:
            if isinstance(s, ast.Return):
                value = s.value
                if isinstance(value, ast.Lambda) and _one_param(value.args):
                    g_names.add(value.args.args[0].arg)
                    out.append(ast.copy_location(ast.Return(value=value.body), s))
                elif isinstance(value, ast.Name) and value.id in defs and \
                        _one_param(defs[value.id].args):
                    inner = defs[value.id]
                    g_names.add(inner.args.args[0].arg)
                    out.extend(inner.body)
                else:
                    ok = False
                    out.append(s)
            elif isinstance(s, ast.FunctionDef) and s.name in defs:
                continue                      # spliced where it is returned
            elif isinstance(s, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                for field in ("body", "orelse", "finalbody"):
                    if hasattr(s, field):
                        setattr(s, field, rewrite(getattr(s, field)))
                out.append(s)
            else:
                out.append(s)
        return out

    new_body = rewrite(body)
    if not ok or len(g_names) != 1:
        return None
    g_name = g_names.pop()
    if g_name in own:
        return None                            # the name means something else already
    return new_body, g_name


def _one_param(args):
    return len(args.args) == 1 and not (args.vararg or args.kwarg or args.kwonlyargs or
                                        args.defaults or args.posonlyargs)


def _compile_like(fdef, like):
    """Compile `fdef` as a function with the globals and closure cells of `like` (so it
    reads the same module names and closed-over values), with source that inspect reads."""
    freevars = like.__code__.co_freevars
    outer = ast.FunctionDef(name="_outer", args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=v) for v in freevars], vararg=None, kwonlyargs=[],
        kw_defaults=[], kwarg=None, defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_params=[])
    module = ast.fix_missing_locations(ast.Module(body=[outer], type_ignores=[]))
    text = (f"# {fdef.name}: the vjp maker {like.__qualname__} "
            f"({like.__code__.co_filename}:{like.__code__.co_firstlineno}) applied to g\n"
            + ast.unparse(module) + "\n")
    filename = f"<transpile-extend-{fdef.name}-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    code = compile(text, filename, "exec")
    outer_code = next(c for c in code.co_consts if inspect.iscode(c))
    inner_code = next(c for c in outer_code.co_consts if inspect.iscode(c))
    cells = dict(zip(freevars, like.__closure__ or ()))
    closure = tuple(cells[v] for v in inner_code.co_freevars)
    return types.FunctionType(inner_code, like.__globals__, fdef.name, None, closure or None)


def _readable(fn):
    """Whether the front end takes `fn` (a backward function is read even for first
    derivatives; one that makes objects of the user's classes is not readable)."""
    try:
        normalize_function(fn, Program(None))
    except TransformError:
        return False
    return True


def _call_made_function(maker, n):
    """maker(ans, *args)(g) as a function of n + 2 parameters, for a maker that cannot be
    read as source (the primal of a primitive of its own, never read either)."""
    args = ", ".join(["ans"] + positional_names(n))
    return file_backed(f"def vjp_of_made_function({args}, g):\n"
                       f"    return maker({args})(g)\n", {"maker": maker},
                       "vjp_of_made_function")


# ---------------------------------------------------------------- vector spaces

class VSpace:
    """The vector space of values of a type of your own (autograd's VSpace): subclass it
    with `zeros()`, `_add(x, y)`, `_scalar_mul(x, a)` and `_inner_prod(x, y)`, and
    `register` the value type. Gradients with respect to such values are values of it."""

    def __init__(self, value):
        self.value = value

    def zeros(self):
        raise NotImplementedError

    def add(self, x, y):
        return self._add(x, y)

    def scalar_mul(self, x, a):
        return self._scalar_mul(x, a)

    def inner_prod(self, x, y):
        return self._inner_prod(x, y)

    def covector(self, x):
        return self._covector(x)

    def _covector(self, x):
        return x

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash(type(self))

    @classmethod
    def register(cls, value_type, vspace_maker=None):
        """Values of `value_type` have this vector space (`vspace_maker(value)` if given)."""
        VSPACES[value_type] = vspace_maker or cls


def vspace(value):
    """The vector space of `value`, for a type registered with VSpace.register."""
    maker = VSPACES.get(type(value))
    if maker is None:
        raise TypeError(f"no vector space is registered for {type(value).__name__} "
                        f"(transpile.extend.VSpace.register)")
    return maker(value)


class Box:
    """autograd's Box, for code that subclasses it: transpile traces nothing, so no value is
    ever boxed, and `register` records nothing."""

    @classmethod
    def register(cls, value_type):
        return None

