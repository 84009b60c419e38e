"""Custom derivatives: `@tp.custom_vjp` with `.defvjp(fwd, bwd)` and `@tp.custom_jvp` with
`.defjvp(rule)`, following JAX's conventions.

    @tp.custom_vjp                          def f_fwd(x):           def f_bwd(saved, g):
    def f(x):                                   y = f(x)                y, = saved
        return entmax15_bisect(x)               return y, (y,)          return (jac_t(y, g),)
    f.defvjp(f_fwd, f_bwd)

Wherever a transformation meets a call of `f`, it uses the rules instead of `f`'s body:
reverse mode calls `f_fwd` in the forward pass and `f_bwd` in the backward pass (the pair
has exactly the calling convention of generated `g_fwd`/`g_bwd` pairs); forward mode calls
the jvp rule. A custom_jvp function is differentiated in reverse mode by transposing its
jvp rule: the rule is linear in the tangents, so the gradient of <u, jvp(x, t)> with respect
to t is the vector-Jacobian product. Outside transformations `f` runs its own body.
"""
import functools
import inspect
import itertools
import linecache

import numpy as np

import runtime as rt
from . import rules
from .errors import TransformError

_counter = itertools.count()


class CustomRule:
    """A function with derivative rules of its own (the base of custom_vjp, custom_jvp and
    pmap): `fwd`/`bwd` for reverse mode, `rule` for forward mode, where given; `fn` is
    what batching transforms, unless `batched` gives a function of its own."""
    fwd = bwd = rule = None
    nondiff_argnums = ()  # positions fixed while transforming (see bound)
    rules_version = 0     # counts new rules: code generated with older ones is made again

    def rules_changed(self):
        """New rules (defvjp or defjvp called again): forget what was built from the old
        ones; generated code records the version it was made with (frontend/calls.py), so
        code calling this is generated again, as after a global is rebound."""
        self.rules_version += 1
        self._pair = None
        self.__dict__.pop("_bound", None)
        self.__dict__.pop("_batched", None)
        jvps = self.__dict__.get("_jvps")
        if isinstance(jvps, dict):
            jvps.clear()

    def batched(self, specs, axis_name, vmap):
        """A Python function (batch_size, *args) -> result with the batch axis first, for
        arguments batched as `specs` say (`vmap`: tp.vmap, handed down by the API layer);
        None: batch `fn`'s body instead.

        The function calls a custom function of the same kind whose body and rules are
        the vmaps of this one's: a derivative pass that runs on vmap's code (grad of a
        vmap) then meets the rules, not the body. One per (specs, axis name), kept."""
        if not all(spec is True or spec is False for spec in specs):
            return None
        made = self.__dict__.setdefault("_batched", {})
        key = (specs, axis_name)
        if key not in made:
            made[key] = _batched_custom(self, specs, axis_name, vmap)
        return made[key]

    def __init__(self, fn, nondiff_argnums=()):
        if isinstance(fn, functools.partial):
            fn = _positional_partial(fn)
        self.fn = fn
        functools.update_wrapper(self, fn)
        self.signature = inspect.signature(fn)
        n = len(self.signature.parameters)
        argnums = (nondiff_argnums,) if isinstance(nondiff_argnums, int) else nondiff_argnums
        if any(not isinstance(i, int) or not -n <= i < n for i in argnums):
            raise TransformError(f"nondiff_argnums {nondiff_argnums!r} of {self.__name__}: "
                                 f"positions of its {n} parameters.")
        self.nondiff_argnums = tuple(sorted({i % n for i in argnums}))

    def bound(self, values):
        """This function with the arguments of nondiff_argnums fixed to `values` (position
        -> a function or constant, known while transforming): a CustomRule of the other
        arguments, whose rules give the fixed ones to the user's rules as JAX does (first,
        in order). One per set of values, kept with them."""
        made = self.__dict__.setdefault("_bound", {})
        key = tuple(sorted((i, id(v)) for i, v in values.items()))
        if key not in made:
            made[key] = (self._bind(values), values)
        return made[key][0]

    def _bind(self, values):
        names = positional_names(len(self.signature.parameters))
        fixed = {i: f"nondiff_{i}" for i in values}
        every = ", ".join(fixed.get(i, p) for i, p in enumerate(names))
        free = ", ".join(p for i, p in enumerate(names) if i not in fixed)
        ahead = "".join(f"{fixed[i]}, " for i in sorted(fixed))
        name = identifier(self.__name__)
        env = {"fn": self.fn, "fwd": self.fwd, "bwd": self.bwd, "rule": self.rule,
               **{fixed[i]: v for i, v in values.items()}}
        made = type(self)(file_backed(f"def {name}({free}):\n    return fn({every})\n", env,
                                      name))
        if self.fwd is not None:
            made.defvjp(file_backed(f"def {name}fwd({free}):\n    return fwd({every})\n", env,
                                    f"{name}fwd"),
                        file_backed(f"def {name}bwd(saved, g):\n"
                                    f"    return bwd({ahead}saved, g)\n", env, f"{name}bwd"))
        if self.rule is not None:
            made.defjvp(file_backed(f"def {name}jvp(primals, tangents):\n"
                                    f"    return rule({ahead}primals, tangents)\n", env,
                                    f"{name}jvp"))
        return made

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def reverse_rules(self, mask, grad):
        """(fwd, bwd) Python functions for reverse mode through calls whose arguments `mask`
        carry derivatives (custom_vjp's pair serves every mask); `grad` (tp.grad, handed
        down by the API layer) transposes a jvp rule."""
        return vjp_pair(self, grad)

    def forward_rule(self, mask):
        """A Python function (args..., tangents of masked args...) -> (out, out_tangent)."""
        return jvp_function(self, mask)


class custom_vjp(CustomRule):  # noqa: N801 - named as JAX names it
    """A function whose reverse-mode derivative is given by `defvjp(fwd, bwd)`.

    fwd(*args) -> (out, saved); bwd(saved, out_cotangent) -> tuple of one cotangent per
    argument. Forward mode (jvp) of such a function raises: define custom_jvp instead.
    """

    def __init__(self, fn, nondiff_argnums=()):
        super().__init__(fn, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd
        self.rules_changed()
        return self


class custom_jvp(CustomRule):  # noqa: N801
    """A function whose forward-mode derivative is given by `defjvp(rule)`.

    rule(primals, tangents) -> (out, out_tangent), primals and tangents being tuples.
    Usable as a decorator: `@f.defjvp`.
    """

    def __init__(self, fn, nondiff_argnums=()):
        super().__init__(fn, nondiff_argnums)
        self.rule = None

    def defjvp(self, rule):
        self.rule = rule
        self.rules_changed()
        return rule

    def defjvps(self, *jvps):
        """One rule per argument, as JAX's defjvps: `jvps[i](tangent_i, out, *primals)` is
        the output tangent's part from argument i (None: it has none); their sum is the
        jvp. Made into a defjvp rule that calls them by name."""
        names = positional_names(len(self.signature.parameters))
        if len(jvps) != len(names):
            raise TransformError(f"defjvps of {self.__name__}: {len(jvps)} rules for "
                                 f"{len(names)} arguments (give None for an argument "
                                 "without a derivative)")
        args = ", ".join(names)
        parts = [f"jvp_{i}(t_{i}, out, {args})" for i, j in enumerate(jvps) if j is not None]
        env = {"fn": self.fn, "np": np, **{f"jvp_{i}": j for i, j in enumerate(jvps)}}
        name = f"{identifier(self.__name__)}_jvps"
        text = (f"def {name}(primals, tangents):\n"
                f"    {args}, = primals\n"
                f"    {', '.join(f't_{i}' for i in range(len(names)))}, = tangents\n"
                f"    out = fn({args})\n"
                f"    return out, {' + '.join(parts) if parts else 'np.zeros_like(out)'}\n")
        return self.defjvp(file_backed(text, env, name))


class Checkpointed(CustomRule):
    """`tp.checkpoint(f)` (JAX's jax.checkpoint, jax.remat): the same values and derivatives
    as `f`, but reverse mode keeps only its arguments for the backward pass, not the
    values inside it; the backward pass runs `f`'s forward pass again from them. Memory for
    time, in a deep model or a long loop of calls. Forward mode and vmap see `f`'s body
    (vmap of a checkpointed function is checkpointed: vmap(f)'s body under reverse mode)."""

    recomputes = True     # its forward pass runs again: it must draw no random numbers

    def __init__(self, fn, static_argnums=()):
        if not inspect.isfunction(fn):        # tp.checkpoint(tp.grad(f)): a call of it
            fn = fixed_arity_wrapper(fn, len(inspect.signature(fn).parameters))
        super().__init__(fn, static_argnums)

    def reverse_rules(self, mask, grad):
        """fwd calls `f` and saves its arguments; bwd differentiates `f` at them: the
        gradient of <f(args), g> for the arguments `mask` marks (all, where None)."""
        pairs = self.__dict__.setdefault("_pairs", {})
        if mask not in pairs:
            pairs[mask] = self._pair(mask, grad)
        return pairs[mask]

    def forward_rule(self, mask):
        return None           # forward mode differentiates the body (pipeline.jvp_variant)

    def _pair(self, mask, grad):
        params = positional_names(len(self.signature.parameters))
        args = ", ".join(params)
        one = "," if len(params) == 1 else ""
        wrt = [k for k in range(len(params)) if mask is None or mask[k]]
        name = identifier(self.__name__)
        product = file_backed(f"def {name}product({args}, u):\n"
                              f"    return rt.tree_vdot(fn({args}), u)\n",
                              {"fn": self.fn, "rt": rt}, f"{name}product")
        env = {"fn": self.fn, "rt": rt,
               "pullback": grad(product, argnums=tuple(wrt)) if wrt else None}
        fwd = file_backed(f"def {name}checkpoint_fwd({args}):\n"
                          f"    return fn({args}), ({args}{one})\n", env,
                          f"{name}checkpoint_fwd")
        found = {k: f"found[{i}]" for i, k in enumerate(wrt)}
        cotangents = ", ".join(found.get(k, f"rt.tangent_zeros({p})")
                               for k, p in enumerate(params))
        recompute = f"    found = pullback({args}, g)\n" if wrt else ""
        bwd = file_backed(f"def {name}checkpoint_bwd(saved, g):\n"
                          f"    {args}{one} = saved\n"
                          f"{recompute}"
                          f"    return ({cotangents}{one})\n", env, f"{name}checkpoint_bwd")
        return fwd, bwd


def checkpoint(fun=None, *, prevent_cse=True, policy=None, static_argnums=(), concrete=False):
    """`f` whose reverse mode saves only its arguments and recomputes the rest in the
    backward pass (JAX's jax.checkpoint, also named remat); the values and derivatives are
    `f`'s. Usable as `tp.checkpoint(f)`, `@tp.checkpoint` or with `static_argnums` (fixed
    while transforming, as custom_vjp's nondiff_argnums). `prevent_cse` has nothing to
    prevent here; JAX's saving policies are refused (this saves the arguments only)."""
    if policy is not None:
        raise TransformError("tp.checkpoint with a policy: this checkpoint saves only the "
                             "function's arguments (JAX's default, "
                             "checkpoint_policies.nothing_saveable).\n  hint: leave policy "
                             "out; the values and derivatives are the same.")
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse,
                                 static_argnums=static_argnums)
    if rules.lookup_object(fun) is not None:        # tp.checkpoint(np.sin)
        fun = primitive_wrapper(fun) or fun
    return Checkpointed(fun, static_argnums)


remat = checkpoint


def _positional_partial(bound):
    """A function of the positional parameters a functools.partial leaves (`partial(fun,
    a=0.1)`: of fun's others, as JAX's custom_jvp of it takes them), calling it."""
    params = [p for p in inspect.signature(bound).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    name = identifier(getattr(bound.func, "__name__", "partial")).rstrip("_") or "partial"
    return _forwarding(bound, params, name)


def _batched_custom(custom, specs, axis_name, vmap):
    """(batch_size, *args) -> custom(*args) for each example, through a custom function
    whose body and rules are vmapped (see CustomRule.batched). A bwd rule's cotangents
    for an argument no example differs in are summed over the examples."""
    names = positional_names(len(specs))
    args = ", ".join(names)
    one = "," if len(specs) == 1 else ""
    axes = tuple(0 if batched else None for batched in specs)
    label = identifier(custom.__name__)
    env = {"body": vmap(custom.fn, axes, 0, axis_name), "rt": rt}
    made = type(custom)(file_backed(f"def {label}vmap({args}):\n    return body({args})\n",
                                    env, f"{label}vmap"))
    if custom.rule is not None:
        env["rule"] = vmap(custom.rule, (axes, axes), 0, axis_name)
        made.defjvp(file_backed(f"def {label}vmap_jvp(primals, tangents):\n"
                                f"    return rule(primals, tangents)\n", env,
                                f"{label}vmap_jvp"))
    if custom.fwd is not None:
        env["fwd"] = vmap(custom.fwd, axes, 0, axis_name)
        env["bwd"] = vmap(custom.bwd, (0, 0), 0, axis_name)
        summed = [f"cotangents[{k}]" if batched else f"rt.sum_batch(cotangents[{k}])"
                  for k, batched in enumerate(specs)]
        made.defvjp(
            file_backed(f"def {label}vmap_fwd({args}):\n    return fwd({args})\n", env,
                        f"{label}vmap_fwd"),
            file_backed(f"def {label}vmap_bwd(saved, g):\n"
                        f"    cotangents = bwd(saved, g)\n"
                        f"    return ({', '.join(summed)}{one})\n", env, f"{label}vmap_bwd"))
    return file_backed(f"def {label}batched(batch_size, {args}):\n"
                       f"    return custom({args})\n", {"custom": made}, f"{label}batched")


def file_backed(text, env, name):
    """Compile generated helper source so that inspect (and so transpile) can read it."""
    filename = f"<transpile-custom-{name}-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), env)  # noqa: S102
    return env[name]


def wrapper_for(custom):
    """A plain function calling `custom`, so a transformation applied to it directly still
    sees a call of the custom function (and uses its rules)."""
    if getattr(custom, "_wrapper", None) is not None:
        return custom._wrapper
    params = list(custom.signature.parameters)
    args = ", ".join(params)
    name = identifier(custom.__name__) + "_call"
    if "custom" in params:
        raise TransformError(f"{custom.__name__}: a parameter named 'custom' cannot be "
                             "transformed directly.\n  hint: rename it, or call the "
                             "function from another one.")
    text = f"def {name}({args}):\n    return custom({args})\n"
    wrapper = file_backed(text, {"custom": custom}, name)
    # its parameters' defaults are the custom function's (a call may leave them out)
    defaults = tuple(p.default for p in custom.signature.parameters.values()
                     if p.default is not p.empty)
    wrapper.__defaults__ = defaults or None
    custom._wrapper = wrapper
    return wrapper


def primitive_wrapper(obj):
    """A plain function calling the NumPy (or SciPy) function `obj`, which has rules in the
    primitive table, so that `tp.grad(np.sin)` or `tp.vmap(np.linalg.det)` transform a call
    of it. Its parameters are those of the rule templates (NumPy's names and defaults); a
    parameter the templates rename (`out_`) is left out. None if `obj` has no row."""
    # (a bound method, `scipy.stats.norm.logpdf`, is a new object on every access: keyed
    # by its object and function, which the table keeps alive)
    key = (id(obj.__self__), id(obj.__func__)) if inspect.ismethod(obj) else id(obj)
    if key in _PRIMITIVE_WRAPPERS:
        return _PRIMITIVE_WRAPPERS[key]
    written = _operator_written(obj)
    if written is not None:          # operator.mul: `arg0 * arg1`, the table's row for `*`
        _PRIMITIVE_WRAPPERS[key] = file_backed(
            f"def {obj.__name__}_({written[0]}):\n    return {written[1]}\n", {},
            obj.__name__ + "_")
        return _PRIMITIVE_WRAPPERS[key]
    found = rules.lookup_object(obj)
    if found is None:
        return None
    primitive = found[0]
    template = primitive.rev or primitive.fwd
    if template is not None:
        params = list(template.signature.parameters.values())[2 if primitive.rev else 1:]
    else:
        try:
            params = list(inspect.signature(obj).parameters.values())
        except (TypeError, ValueError):
            return None
    # (numpy's `out=` and arguments whose default is its "not given" marker are left out:
    # numpy's own default applies)
    params = [p for p in params if not p.name.endswith("_") and p.name != "out" and
              p.default is not getattr(np, "_NoValue", object()) and
              p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    required = [p.name for p in params if p.default is p.empty]
    optional = [p for p in params if p.default is not p.empty]
    name = primitive.name if primitive.name.isidentifier() else identifier(primitive.name)
    signature = ", ".join(required + [p.name + "=" + p.name + "_default" for p in optional])
    call = ", ".join(required + [f"{p.name}={p.name}" for p in optional])
    text = f"def {name}({signature}):\n    return primitive({call})\n"
    env = {"primitive": obj}
    env.update((p.name + "_default", p.default) for p in optional)
    # one per function (functions in the table live as long as their modules), so that
    # generated code is cached across tp.grad(np.sin) calls
    _PRIMITIVE_WRAPPERS[key] = file_backed(text, env, name)
    return _PRIMITIVE_WRAPPERS[key]


_PRIMITIVE_WRAPPERS = {}


def _operator_written(obj):
    """(parameters, expression) of Python's operator function `obj` written as the operator
    (operator.mul: "arg0, arg1", "arg0 * arg1"), from the table's operator rows; else None."""
    if not callable(obj) or getattr(obj, "__module__", None) not in ("operator", "_operator"):
        return None
    a, b = positional_names(2)
    for spelling, (_, fn) in rules.core.BINOPS.items():
        if fn is obj:
            return f"{a}, {b}", f"{a} {spelling} {b}"
    for spelling, (_, fn) in rules.core.UNARYOPS.items():
        if fn is obj:
            return a, f"{spelling[1:] if spelling.startswith('u') else spelling + ' '}{a}"
    return None


def method_caller(method):
    """A plain function calling the bound method `method` of a plain object (a model), so
    that `tp.grad(model.loss)` reads the object's attributes as the method runs. One per
    method (holding its object, so its identity keys cached code safely)."""
    key = (id(method.__self__), id(method.__func__))
    if key not in _METHOD_CALLERS:
        made = _forwarding(method, list(inspect.signature(method).parameters.values()),
                           identifier(method.__func__.__name__).rstrip("_") or "method")
        if made is None:
            return None
        _METHOD_CALLERS[key] = (method, made)
    return _METHOD_CALLERS[key][1]


def _forwarding(target, params, name):
    """`def name(<params>): return target(<params>)`, the parameters' defaults and keyword-
    only ones kept; None where they include *args or **kwargs."""
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
           for p in params):
        return None
    def written(p):
        return p.name if p.default is p.empty else f"{p.name}={p.name}_default"
    signature = ", ".join(written(p) for p in params if p.kind != p.KEYWORD_ONLY)
    kwonly = [written(p) for p in params if p.kind == p.KEYWORD_ONLY]
    if kwonly:
        signature += (", " if signature else "") + "*, " + ", ".join(kwonly)
    call = [p.name if p.kind != p.KEYWORD_ONLY else f"{p.name}={p.name}" for p in params]
    env = {"target_": target}
    env.update((p.name + "_default", p.default) for p in params if p.default is not p.empty)
    return file_backed(f"def {name}({signature}):\n    return target_({', '.join(call)})\n",
                       env, name)


_METHOD_CALLERS = {}


def fixed_arity_wrapper(fn, n):
    """A plain function of n positional parameters calling `fn` (which takes *args) with
    them: what a transformation of fn is made from for calls with n arguments. One per
    (fn, n), so generated code is found again."""
    key = (id(fn), n)
    if key not in _FIXED_ARITY:
        names = positional_names(n)
        name = identifier(getattr(fn, "__name__", "f"))
        text = f"def {name}({', '.join(names)}):\n    return fn({', '.join(names)})\n"
        _FIXED_ARITY[key] = (fn, file_backed(text, {"fn": fn}, name))
    return _FIXED_ARITY[key][1]


_FIXED_ARITY = {}


def vectorized_caller(vectorized):
    """A plain function of np.vectorize(pyfunc)'s parameters (pyfunc's positional ones, a
    ufunc's inputs) calling it: what a transformation applied to the vectorized function
    is made from."""
    pyfunc = vectorized.pyfunc
    if isinstance(pyfunc, np.ufunc):
        n = pyfunc.nin
    else:
        n = len([p for p in inspect.signature(pyfunc).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    return fixed_arity_wrapper(vectorized, n)


def wrapped_signature_caller(wrapper):
    """A plain function with the parameters of the function `wrapper` wraps (functools.wraps
    sets `__wrapped__`), calling `wrapper` with them: a decorator's `wrapper(*args,
    **kwargs)` transformed as a function of those. One per wrapper."""
    if id(wrapper) not in _WRAPPED_CALLERS:
        params = list(inspect.signature(wrapper).parameters.values())   # the wrapped one's
        name = identifier(getattr(wrapper, "__name__", "wrapped")).rstrip("_") or "wrapped"
        _WRAPPED_CALLERS[id(wrapper)] = (wrapper, _forwarding(wrapper, params, name) or wrapper)
    return _WRAPPED_CALLERS[id(wrapper)][1]


_WRAPPED_CALLERS = {}


def summed_output(f):
    """A plain function returning np.sum(f(...)), with f's parameters (autograd's
    elementwise_grad is the gradient of it)."""
    f = primitive_wrapper(f) or f
    try:
        signature = inspect.signature(f)
    except (TypeError, ValueError):
        raise TypeError(f"elementwise_grad needs a function with a signature, got {f!r}") \
            from None
    params = list(signature.parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise TypeError("elementwise_grad needs a function with positional parameters only")
    names = positional_names(len(params))
    name = identifier(getattr(f, "__name__", "f")) + "_summed"
    text = f"def {name}({', '.join(names)}):\n    return np.sum(f({', '.join(names)}))\n"
    wrapper = file_backed(text, {"f": f, "np": np}, name)
    defaults = tuple(p.default for p in params if p.default is not p.empty)
    wrapper.__defaults__ = defaults or None
    return wrapper


def identifier(text):
    """`text` made a Python identifier ("<lambda>" -> "lambda_"), for generated names."""
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in text).strip("_")
    return cleaned + "_" if cleaned and not cleaned[0].isdigit() else "f_" + cleaned


def positional_names(n):
    """Parameter names for generated wrappers, which no user parameter can shadow (a
    user's `g` or `rt` would otherwise hide the wrapper's own)."""
    return [f"arg{i}" for i in range(n)]


def vjp_pair(custom, grad):
    """(fwd, bwd) Python functions implementing reverse mode for a custom function; `grad`
    (tp.grad, handed down by the API layer) transposes a custom_jvp rule."""
    if getattr(custom, "_pair", None) is None:
        custom._pair = _make_vjp_pair(custom, grad)
    return custom._pair


def _make_vjp_pair(custom, grad):
    if isinstance(custom, custom_vjp):
        if custom.fwd is None:
            raise TransformError(f"custom_vjp function {custom.__name__} is "
                                 "differentiated but has no rules.\n  hint: call "
                                 f"{custom.__name__}.defvjp(fwd, bwd) after defining it.")
        return _user_vjp_pair(custom)
    if custom.fwd is not None:        # rules of its own (pmap), made by transpile
        return custom.fwd, custom.bwd
    if custom.rule is None:
        raise TransformError(f"custom_jvp function {custom.__name__} is differentiated but "
                             f"has no rule.\n  hint: decorate the rule with "
                             f"@{custom.__name__}.defjvp.")
    n = len(custom.signature.parameters)
    params = positional_names(n)
    args = ", ".join(params)
    tans = ", ".join(f"t_{p}" for p in params)
    one = "," if n == 1 else ""
    name = identifier(custom.__name__)
    text = (f"def tangent_product({args}, {tans}, u):\n"
            f"    out, out_dot = rule(({args}{one}), ({tans}{one}))\n"
            f"    return rt.tree_vdot(out_dot, u)\n")
    product = file_backed(text, {"rule": custom.rule, "rt": rt}, "tangent_product")
    # the rule may apply the function to the tangents (`return f(x), f(t)`): a linear
    # function there, differentiated through its body (pipeline.Build.bodies_of)
    product.__transpile_bodies_of__ = (custom,)
    transpose = grad(product, argnums=tuple(range(n, 2 * n)))
    env = {"custom": custom, "transpose": transpose, "rt": rt}
    fwd = file_backed(f"def {name}fwd({args}):\n"
                      f"    return custom({args}), ({args}{one})\n", env, f"{name}fwd")
    zeros = ", ".join(f"rt.tangent_zeros({p})" for p in params)
    bwd = file_backed(f"def {name}bwd(saved, g):\n"
                      f"    {args}{one} = saved\n"
                      f"    return transpose({args}, {zeros}, g)\n", env, f"{name}bwd")
    return fwd, bwd


def _user_vjp_pair(custom):
    """The user's fwd and bwd, called by a pair of generated functions that give them what
    JAX does and check what they return. Adjoints in generated code leave None for
    outputs never read (`out = f(x); return out[0]`), which bwd would compute with: it
    receives zeros shaped like those outputs instead (`rt.add` reads None as zero), so
    fwd's wrapper saves the output (a reference). What a rule returns is checked before it
    is unpacked (a bwd returning `g` for `(g,)`), so a mistake is an error naming the rule,
    not one from inside generated code."""
    n = len(custom.signature.parameters)
    args = ", ".join(positional_names(n))
    name = identifier(custom.__name__)
    label = repr(custom.__name__)
    env = {"fwd": custom.fwd, "bwd": custom.bwd, "rt": rt}
    fwd = file_backed(f"def {name}vjp_fwd({args}):\n"
                      f"    result = fwd({args})\n"
                      f"    rt.check_vjp_rule_result(result, 2, {label}, 'fwd', "
                      f"{_where(custom.fwd)!r})\n"
                      f"    out, saved = result\n"
                      f"    return out, (out, saved)\n", env, f"{name}vjp_fwd")
    bwd = file_backed(f"def {name}vjp_bwd(saved, g):\n"
                      f"    out, user_saved = saved\n"
                      f"    g = rt.add(rt.tangent_zeros(out), g)\n"
                      f"    cotangents = bwd(user_saved, g)\n"
                      f"    rt.check_vjp_rule_result(cotangents, {n}, {label}, 'bwd', "
                      f"{_where(custom.bwd)!r})\n"
                      f"    return cotangents\n", env, f"{name}vjp_bwd")
    return fwd, bwd


def _where(fn):
    """'file:line (name)' of a rule's definition, as errors raised by generated code take
    it (runtime.errors.located); a partial's is its function's."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    code = getattr(fn, "__code__", None)
    label = getattr(fn, "__name__", type(fn).__name__)
    return f"{code.co_filename}:{code.co_firstlineno} ({label})" if code is not None else \
        f"{label}:0 ({label})"


def jvp_function(custom, mask):
    """A Python function (args..., tangents of masked args...) -> (out, out_tangent)."""
    made = custom.__dict__.setdefault("_jvps", {})
    if mask not in made:
        made[mask] = _make_jvp_function(custom, mask)
    return made[mask]


def _make_jvp_function(custom, mask):
    if isinstance(custom, custom_vjp):
        raise TransformError(f"forward mode (jvp) meets custom_vjp function "
                             f"{custom.__name__}, whose derivative is given only in reverse "
                             f"mode.\n  hint: use reverse mode (grad, vjp, jacrev), or make it "
                             f"a custom_jvp.")
    if custom.rule is None:
        raise TransformError(f"custom_jvp function {custom.__name__} has no rule.\n  hint: "
                             f"decorate the rule with @{custom.__name__}.defjvp.")
    params = positional_names(len(custom.signature.parameters))
    one = "," if len(params) == 1 else ""
    tan_params = [f"t_{p}" for p, m in zip(params, mask) if m]
    tangents = [f"t_{p}" if m else f"rt.tangent_zeros({p})" for p, m in zip(params, mask)]
    name = identifier(custom.__name__) + "jvp"
    text = (f"def {name}({', '.join(params + tan_params)}):\n"
            f"    result = rule(({', '.join(params)}{one}), ({', '.join(tangents)}{one}))\n"
            f"    rt.check_vjp_rule_result(result, 2, {custom.__name__!r}, 'jvp', "
            f"{_where(custom.rule)!r})\n"
            f"    return result\n")
    return file_backed(text, {"rule": custom.rule, "rt": rt}, name)
