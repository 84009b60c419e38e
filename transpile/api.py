"""The public API: `transform`, `grad`, `value_and_grad`, `vjp`.

Every transformation returns a `Transformed`: a callable with `.source` (the generated
module, exactly what runs) that any transformation accepts again. Code is generated on the
first call (or on `.source`), once per (function, transformation, options), and cached.
"""
import collections
import functools
import inspect
import threading

import numpy as np

from runtime.backend import cupy_module, device_arrays_possible
from runtime.kernels import device_put as rt_device_put
from runtime.trees import tangent_zeros, tree_leaves, tree_map
from . import specialize as jit_pass
from . import pipeline
from . import rules
from . import stand_ins
from .custom import (CustomRule, checkpoint, fixed_arity_wrapper, method_caller,
                     primitive_wrapper, vectorized_caller, wrapped_signature_caller,
                     summed_output, wrapper_for)
from .errors import ArgumentDependent, TransformError, error_at
from .frontend import closure_values, lifted_closure_names
from .frontend.callees import Callees, TransformedCall
from .frontend.layouts import argument_type
from .frontend.parse import parse_function, signature_of

_CACHE = {}
_IN_PROGRESS = set()
_GENERATING = threading.RLock()


class _Identity:
    """Hashes and compares by identity: code objects from identical text compare equal."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _Identity) and other.obj is self.obj


class Root:
    """What a transformation was applied to, reduced to a plain Python function."""

    def __init__(self, target):
        self.prefix = ()
        self.prefix_names = ()   # the parameters the prefix binds (a partial's, `self`)
        self.inner = None
        if isinstance(target, Jitted):        # transformations see through jit
            target = target.inner
        self.variadic = False
        if isinstance(target, Transformed):
            self.inner = target
            self.fn = None
            self.variadic = target.root.variadic
            self.prefix = target.root.prefix
            self.prefix_names = target.root.prefix_names
            self.signature = target.signature
            self.key = target.key
            return
        if isinstance(target, CustomRule):   # transform a call of it, so its rules apply
            target = wrapper_for(target)
        if isinstance(target, functools.partial):
            inner = Root(target.func)
            self.__dict__.update(inner.__dict__)
            self.prefix = tuple(target.args) + inner.prefix
            self.prefix_names = inner.prefix_names + tuple(
                list(self.signature.parameters)[:len(target.args)])
            params = list(self.signature.parameters.values())[len(target.args):]
            unknown = set(target.keywords) - {p.name for p in params}
            if unknown:
                raise TypeError(f"functools.partial binds {sorted(unknown)[0]!r}, which is not "
                                f"a parameter of {getattr(target.func, '__qualname__', '')}")
            # a keyword bound by the partial is that parameter's default, in its place (a
            # parameter after it may then have none: the signature is not validated)
            params = [p.replace(default=target.keywords[p.name]) if p.name in target.keywords
                      else p for p in params]
            self.signature = inspect.Signature(params, __validate_parameters__=False)
            self.key = ("partial", inner.key, len(target.args),
                        tuple((k, _Identity(v)) for k, v in sorted(target.keywords.items())))
            return
        if inspect.ismethod(target) and primitive_wrapper(target) is not None:
            target = primitive_wrapper(target)    # scipy.stats.norm.logpdf: a call of it
        if inspect.ismethod(target) and not isinstance(target.__self__, (tuple, type)) and \
                not stand_ins.is_registered(target.__self__) and \
                inspect.isfunction(target.__func__) and method_caller(target) is not None:
            target = method_caller(target)   # a model's method: its attributes read as it runs
        if inspect.ismethod(target):
            inner = Root(target.__func__)
            self.__dict__.update(inner.__dict__)
            self.prefix = (target.__self__,)
            self.prefix_names = tuple(list(self.signature.parameters)[:1])
            params = list(self.signature.parameters.values())[1:]
            self.signature = self.signature.replace(parameters=params)
            return
        if isinstance(target, np.vectorize):
            target = vectorized_caller(target)    # a call of it (a vmap, in transformed code)
        if primitive_wrapper(target) is not None:
            # np.sin, np.linalg.det, tp.random.normal, operator.mul: a call of it (a Python
            # function with a row in the table too: its code is the runtime's, not the user's)
            target = primitive_wrapper(target)
        if not inspect.isfunction(target):
            if callable(target) and hasattr(type(target), "__call__") and \
                    inspect.isfunction(getattr(type(target), "__call__", None)):
                inner = Root(target.__call__)
                self.__dict__.update(inner.__dict__)
                return
            raise TypeError(f"transpile transforms Python functions, got {target!r} of type "
                            f"{type(target).__name__}.")
        own = signature_of(target)
        if any(p.kind == p.VAR_KEYWORD for p in own.parameters.values()) and \
                hasattr(target, "__wrapped__"):
            # a decorator's wrapper(*args, **kwargs) made with functools.wraps: a function
            # of the wrapped one's parameters calling the wrapper
            target = wrapped_signature_caller(target)
            own = signature_of(target)
        self.fn = target
        self.signature = own
        kinds = [p.kind for p in self.signature.parameters.values()]
        # f(a, *args): made for each number of arguments a call gives (Transformed.at_arity)
        self.variadic = inspect.Parameter.VAR_POSITIONAL in kinds and not any(
            k in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.KEYWORD_ONLY) for k in kinds)
        for p in self.signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and not self.variadic:
                fdef, src = parse_function(target)
                node = fdef.args.vararg or fdef.args.kwarg or fdef
                raise error_at(node, src, f"{target.__qualname__}: **kwargs (and "
                               f"keyword-only parameters with *args) are not supported in the "
                               f"function a transformation is applied to (parameter "
                               f"'{p.name}'); the functions it calls may have them.",
                               "list the parameters explicitly, or pass a dict as one "
                               "parameter.")
        self.lifted = lifted_closure_names(target)
        closure = closure_values(target)
        # identities (holding references, so an id is never reused while the key lives)
        self.key = ("fn", _Identity(target.__code__),
                    tuple(_Identity(v) for k, v in closure.items() if k not in self.lifted))

    def has_extra(self):
        return bool(self.inner.root.has_extra() if self.inner is not None else self.lifted)

    def extra_values(self):
        """Values passed after the user's arguments: lifted closure variables."""
        if self.inner is not None:
            return self.inner.root.extra_values()
        if not self.lifted:
            return ()
        closure = closure_values(self.fn)
        return tuple(closure[n] for n in self.lifted)


def _binding(value):
    """How generated code depends on an argument it calls (or calls a method of): a
    function by identity (its body is transformed where it is called), an object by its
    type (its class's methods and primitives), and by the classes of the objects it holds
    (a model's layers: layouts.argument_type)."""
    if inspect.isfunction(value) or inspect.isbuiltin(value) or inspect.ismethod(value) or \
            isinstance(value, (functools.partial, CustomRule, Transformed, Jitted, type)) or \
            type(value).__name__ == "ufunc" or rules.lookup_object(value) is not None:
        return ("function", value)       # (the last: np.max, a dispatcher object of numpy's)
    return ("type", argument_type(value))


def _bindings_key(bindings):
    return tuple(sorted((p, kind, _Identity(v)) for p, (kind, v) in bindings.items()))


class Transformed:
    """A transformed function: call it, read `.source`, or transform it again."""

    def __init__(self, target, kind, options=(), bindings=None):
        self.target = target
        self.kind = kind
        self.options = dict(options)
        self.root = Root(target)
        self.signature = self.root.signature
        # code made for what some arguments are: parameter -> ("function", value) or
        # ("type", class); see _call_for_arguments
        self.bindings = dict(bindings or {})
        self.key = (kind, tuple(sorted(self.options.items())), self.root.key,
                    _bindings_key(self.bindings))
        self._dependent = ()       # parameters whose arguments the code depends on
        self._for_arguments = {}   # bindings key -> Transformed made for them
        self._generated = None
        self._fast = None
        self._nparams = len(self.signature.parameters)
        self._keyword_only = any(p.kind == p.KEYWORD_ONLY
                                 for p in self.signature.parameters.values())
        # grad's negative argnums count from the last argument passed (_counted_from)
        self._counts_from_passed = kind == "grad" and any(
            a < 0 for a in self.options["argnums"]) and any(
            p.default is not p.empty for p in self.signature.parameters.values())

        self._partial_axes = None     # vmap with one int in_axes: defaults are not mapped
        functools.update_wrapper(self, target, updated=())
        if not hasattr(self, "__name__"):      # a functools.partial
            self.__name__ = getattr(getattr(target, "func", None), "__name__", "function")

    # ------------------------------------------------------------------ generation
    def generated(self):
        if self._generated is not None and self._generated.global_reads and \
                not self._generated.globals_unchanged():
            self._generated = self._fast = None     # made with a global rebound since
        if self._generated is None:
            with _GENERATING:      # pmap's device threads may ask for the same code at once
                self._generate()
        return self._generated

    def _generate(self):
        if self._generated is None:
            gen = _CACHE.get(self.key)
            if gen is not None and not gen.globals_unchanged():
                gen = None                 # made with globals that have been rebound since
            if gen is None:
                if self.key in _IN_PROGRESS:
                    raise TransformError(
                        f"{self!r} is needed to generate its own code (a transformation "
                        "that calls itself through a custom rule or a transformed "
                        "function).\n  hint: break the cycle, e.g. give the inner call "
                        "a custom_vjp, or call the untransformed function there.")
                _IN_PROGRESS.add(self.key)
                try:
                    gen = pipeline.generate(self, CALLEES)
                finally:
                    _IN_PROGRESS.discard(self.key)
                _CACHE[self.key] = gen
            self._generated = gen

    @property
    def source(self):
        """The generated module: exactly the code that runs when this is called (for a
        function that calls its arguments, the code made for the latest call's)."""
        if self.root.variadic:
            latest = self.__dict__.get("_latest_arity")
            if latest is None:
                raise TransformError(f"{self.__name__} takes *args: its code is made for each "
                                     "number of arguments; call it once before reading "
                                     ".source.")
            return latest.source
        if self._dependent and self._for_arguments:
            return self._latest.generated().text
        return self.generated().text

    def specialized(self, bindings):
        """This transformation generated for arguments `bindings` (see _binding)."""
        if not bindings:
            return self
        key = _bindings_key(bindings)
        made = self._for_arguments.get(key)
        if made is None:
            made = self._for_arguments[key] = Transformed(self.target, self.kind,
                                                          self.options, bindings)
            made._partial_axes = self._partial_axes
        return made

    def entry_function(self):
        return self.generated().entry

    def defaults(self):
        return {p.name: p.default for p in self.signature.parameters.values()
                if p.default is not inspect.Parameter.empty}

    # ------------------------------------------------------------------ calling
    def bind(self, args, kwargs):
        if not kwargs and len(args) == self._nparams and not self._keyword_only:
            return args
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {e}") from None
        bound.apply_defaults()
        if self._keyword_only:     # generated code takes them after the positional ones
            return tuple(bound.arguments.values())
        return bound.args

    def full_args(self, args, kwargs):
        return self.root.prefix + tuple(self.bind(args, kwargs)) + self.root.extra_values()

    def __call__(self, *args, **kwargs):
        if stand_ins.has_proxies():       # registered dataclasses: as namedtuples inside
            args, kwargs = stand_ins.to_transformable((args, kwargs))
            return stand_ins.from_transformable(self._call(*args, **kwargs))
        return self._call(*args, **kwargs)

    def at_arity(self, n):
        """This transformation of a function with *args, made for calls with `n` positional
        arguments: the same transformations of a wrapper with n parameters that calls it
        (JAX's `def f(*args)`; one per n, kept)."""
        made = self.__dict__.setdefault("_arity_variants", {})
        if n not in made:
            inner = self.root.inner
            target = inner.at_arity(n) if inner is not None else \
                fixed_arity_wrapper(self.root.fn, n)
            if self.kind == "vmap":
                opts = self.options
                made[n] = vmap(target, in_axes=self._raw_in_axes,
                               out_axes=opts["out_axes"].value,
                               axis_name=opts["axis_name"], axis_size=opts["axis_size"])
            else:
                made[n] = Transformed(target, self.kind, self.options, self.bindings)
        self._latest_arity = made[n]
        return made[n]

    def _call(self, *args, **kwargs):
        if self.root.variadic:
            if kwargs:
                raise TypeError(f"{self.__name__} takes *args: call it with positional "
                                "arguments only")
            return self.at_arity(len(args))._call(*args)
        if self._counts_from_passed:
            return self._counted_from(len(args))._call(*args, **kwargs)
        if self._partial_axes is not None and len(args) + len(kwargs) < self._nparams:
            return self._vmap_of_passed(args, kwargs)
        if self._dependent:
            return self._call_for_arguments(args, kwargs)
        gen = self._generated
        if gen is None or gen.global_reads and not gen.globals_unchanged():
            self._generated = self._fast = None     # new, or made with a rebound global
            try:
                gen = self.generated()
            except ArgumentDependent as e:
                if self.bindings:
                    raise        # the API layer of the original asks again (below)
                self._dependent = e.params
                return self._call_for_arguments(args, kwargs)
        if device_arrays_possible() and (gen.device_constants or _on_device(
                [*args, *kwargs.values(), *self.root.prefix, *self.root.extra_values()])):
            return gen.on_device(cupy_module()).call(self, self.full_args(args, kwargs))
        fast = self._fast
        if fast is not None and not kwargs and len(args) == self._nparams and \
                not self._keyword_only:
            return fast(*args)          # no defaults, prefix or closure values to add
        if self.kind != "vjp" and not self.root.prefix and not self.root.has_extra():
            self._fast = gen.entry
        return gen.call(self, self.full_args(args, kwargs))

    def _counted_from(self, n):
        """This gradient for calls with `n` positional arguments, its negative argnums
        counted from the last of them (JAX's reading; parameters left to their defaults
        are not counted)."""
        made = self.__dict__.setdefault("_counted", {})
        if n not in made:
            nums = self.options["argnums"]
            if any(a < -n for a in nums):
                raise TypeError(f"{self.__name__}: argnums={nums} is out of range for a call "
                                f"with {n} positional arguments")
            opts = dict(self.options, argnums=tuple(a % n for a in nums))
            made[n] = Transformed(self.target, self.kind, opts, self.bindings)
        return made[n]

    def _call_for_arguments(self, args, kwargs):
        """Call the code generated for what this call's arguments are, where the function
        calls some of its arguments or their methods (`act(x)`, `model.apply(p, x)`): one
        specialization per function passed (by identity) or per object type."""
        arguments = _bound_arguments(self.root, args, kwargs, self.__name__)

        def call(bindings):
            made = self._latest = self.specialized(bindings)
            return made._call(*args, **kwargs)
        result, self._dependent = _made_for_arguments(self._dependent, arguments, call)
        return result

    def _vmap_of_passed(self, args, kwargs, call=True):
        """JAX's reading of an int in_axes: it maps the arguments passed; parameters left
        to their defaults are the same for every example. (call=False: that vmap, uncalled.)"""
        passed = set(self.signature.bind(*args, **kwargs).arguments)
        axes = tuple(self._partial_axes if p in passed else None
                     for p in self.signature.parameters)
        variants = self.__dict__.setdefault("_variants", {})
        if axes not in variants:
            opts = dict(self.options)
            variants[axes] = vmap(self.target, in_axes=axes, out_axes=opts["out_axes"].value,
                                  axis_name=opts["axis_name"], axis_size=opts["axis_size"])
        return variants[axes](*args, **kwargs) if call else variants[axes]

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self):
        return f"<transpile.{self.kind} of {getattr(self.target, '__qualname__', self.target)}>"


def _check_argnums(argnums, f):
    if isinstance(argnums, int):
        return (argnums,), True
    if isinstance(argnums, (tuple, list)) and argnums and all(isinstance(a, int) for a in argnums):
        return tuple(argnums), False
    raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")


def transform(f=None, **options):
    """Parse `f` now (errors point at its source) and return it as a Transformed function.

    Usable bare (`@tp.transform`) or with options (`@tp.transform()`). Calling the result runs
    the normalized code; `.source` shows it; every transformation accepts it.
    """
    if f is None:
        return lambda g: transform(g, **options)
    t = Transformed(f, "transform", options)
    if t.root.fn is not None:
        parse_function(t.root.fn)
    return t


def argnums_or_argnum(argnums, argnum):
    """`argnums`, or autograd's spelling of it, `argnum=` (grad(f, argnum=1) runs as
    autograd's examples write it); giving both is an error."""
    if argnum is None:
        return argnums
    if argnums != 0:
        raise TypeError("give argnums= or autograd's argnum=, not both")
    return argnum


def _grad_options(argnums, has_aux, holomorphic, value):
    nums, single = _check_argnums(argnums, None)
    options = {"argnums": nums, "single": single, "has_aux": has_aux, "value": value}
    if holomorphic:
        options["holomorphic"] = True
    return options


def grad(f, argnums=0, has_aux=False, holomorphic=False, *, argnum=None):
    """The gradient of scalar-output `f` with respect to argument(s) `argnums`.

    Args:
      f: a Python function (or lambda, method, partial, Transformed function, or a NumPy
        function with rules such as np.sin).
      argnums: int or tuple of ints: which positional arguments to differentiate.
      has_aux: f returns (scalar, aux); the result then returns (gradient, aux).
      holomorphic: f is holomorphic in complex arguments and returns a complex scalar; the
        result is its complex derivative f'(z) (as JAX's). Without it, a complex output is
        an error and complex arguments get df/dx - i df/dy of a real output.
      argnum: autograd's name for argnums (either one).
    Returns:
      A Transformed function returning gradients shaped like the chosen arguments (pytrees
      keep their structure; float32 stays float32), a tuple of them for tuple argnums.
    Raises:
      TransformError: for code it cannot differentiate, naming the file and line.
    """
    return Transformed(f, "grad", _grad_options(argnums_or_argnum(argnums, argnum), has_aux,
                                                holomorphic, value=False))


def value_and_grad(f, argnums=0, has_aux=False, holomorphic=False, *, argnum=None):
    """Like `grad`, but the result returns (value, gradient) (or ((value, aux), gradient))."""
    return Transformed(f, "grad", _grad_options(argnums_or_argnum(argnums, argnum), has_aux,
                                                holomorphic, value=True))


def elementwise_grad(f, argnum=0):
    """autograd's `elementwise_grad`: the gradient of np.sum(f(...)), i.e. the vector-Jacobian
    product of f with a cotangent of ones; for an elementwise f, its derivative at each
    element. Transformable again (`elementwise_grad(elementwise_grad(np.tanh))`)."""
    return grad(summed_output(f), argnums=argnum)


def _on_device(values):
    """Whether `values` hold a cupy array: the call then runs the code with np bound to
    cupy (Generated.on_device). Without cupy imported, or without a GPU, nothing is
    searched."""
    return device_arrays_possible() and jit_pass.array_module_name(values) == "cupy"


def vjp(f, *primals, has_aux=False):
    """(f(*primals), vjp_fn): vjp_fn(cotangent) returns one cotangent per primal.

    With has_aux=True, f returns (out, aux) and vjp returns (out, vjp_fn, aux).
    """
    proxies = stand_ins.has_proxies()
    registered = proxies and stand_ins.holds_registered(primals)
    if proxies:                       # registered dataclasses: as namedtuples inside
        primals = stand_ins.to_transformable(primals)
    t = Transformed(f, "vjp", {"has_aux": has_aux})
    if t.root.variadic:
        t = t.at_arity(len(primals))
    try:
        gen = t.generated()
    except ArgumentDependent as e:     # f calls some of its arguments: code for them
        t, gen = _for_arguments(t, primals, e.params)
    if gen.device_constants or _on_device(primals):
        gen = gen.on_device(cupy_module())
    result = gen.call(t, t.full_args(primals, {}), nprimals=len(primals))
    if registered or proxies and stand_ins.holds_registered((result[0], *result[2:])):
        # (without a registered class's object in or out, the pullback is the plain one,
        # which transformations take again: tp.vmap(pullback) for a Jacobian)
        out, vjp_fn, *aux = result
        pullback = functools.wraps(vjp_fn)(lambda *cotangents: stand_ins.from_transformable(
            vjp_fn(*stand_ins.to_transformable(cotangents))))
        return stand_ins.from_transformable((out, pullback, *aux))
    return result


def jvp(f, primals, tangents, has_aux=False):
    """Forward mode: (f(*primals), J(primals) @ tangents), by source transformation.

    Args:
      f: a Python function (or any transformed function).
      primals: tuple of arguments; tangents: tuple of the same structure (one per primal,
        each shaped like its primal).
      has_aux: f returns (out, aux); the result is then (out, tangent_out, aux).
    Returns:
      (out, tangent_out) with tangent_out shaped like out.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp(f, primals, tangents): primals and tangents must be tuples, got "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise TypeError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    if stand_ins.has_proxies():       # registered dataclasses: as namedtuples inside
        primals, tangents = stand_ins.to_transformable((tuple(primals), tuple(tangents)))
        return stand_ins.from_transformable(_jvp(f, primals, tangents, has_aux))
    return _jvp(f, primals, tangents, has_aux)


def _numpy_scalar(value):
    """A Python float or complex as numpy's scalar: the derivative code divides by it, and
    at a singular point (np.log at 0.) numpy's inf is the answer, Python's / raises."""
    if type(value) is float:
        return np.float64(value)
    return np.complex128(value) if type(value) is complex else value


def _jvp(f, primals, tangents, has_aux):
    primals, tangents = tree_map(_numpy_scalar, (tuple(primals), tuple(tangents)))
    if Root(f).variadic:
        f = Transformed(f, "transform").at_arity(len(primals))
    signature = Root(f).signature
    if len(primals) < len(signature.parameters):   # parameters left at their defaults (JAX's
        bound = signature.bind(*primals)           # jvp calls f(*primals)) are constants
        bound.apply_defaults()
        defaults = tuple(bound.args[len(primals):])
        primals, tangents = tuple(primals) + defaults, tuple(tangents) + (None,) * len(defaults)
    # an argument whose tangent is zero is a constant of this jvp: the code generated for
    # it skips every product with that tangent (e.g. the data batch of a loss)
    active = tuple(not _is_zero(t) for t in tangents)
    options = {"has_aux": has_aux}
    if not all(active) and any(active):
        options["active"] = active
    t = Transformed(f, "jvp", options)
    if t.root.prefix and "active" not in options and any(active):
        # what a partial or a bound method binds (an object whose attributes the code
        # reads, `self`) is a constant of the jvp, not a value with a zero tangent
        options["active"] = active
        t = Transformed(f, "jvp", options)
    try:
        gen = t.generated()
    except ArgumentDependent as e:     # f calls some of its arguments: code for them
        t, gen = _for_arguments(t, primals, e.params)
    if gen.device_constants or _on_device(primals) or _on_device(tangents):
        gen = gen.on_device(cupy_module())
    root = t.root
    extra = root.extra_values()
    args = root.prefix + tuple(primals) + extra
    if "active" in options:
        return gen.entry(*args, *(d for d, a in zip(tangents, active) if a))
    # tangents of the prefix (bound partial args / self) and of closure values are zero
    zeros_before = tuple(tangent_zeros(v) for v in root.prefix)
    zeros_after = tuple(tangent_zeros(v) for v in extra)
    return gen.entry(*args, *zeros_before, *tangents, *zeros_after)


def linearize(f, *primals, has_aux=False):
    """(f(*primals), f_jvp), as JAX's jax.linearize: f_jvp(*tangents) is the jvp of f at
    `primals` (tangents shaped like them). f_jvp runs f's forward-mode code again on each
    call, the primal part included (JAX keeps only the linear part); the numbers are the
    same. With has_aux=True, f returns (out, aux) and linearize returns (out, f_jvp, aux).
    """
    primals = tuple(primals)
    result = f(*primals)
    out, aux = result if has_aux else (result, None)

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise TypeError(f"linearize: f_jvp takes {len(primals)} tangents (one per "
                            f"primal), got {len(tangents)}")
        return jvp(f, primals, tangents, has_aux=has_aux)[1]

    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def linear_transpose(f, *primals):
    """The transpose of a linear function f, as JAX's jax.linear_transpose: f_transpose(
    cotangent) returns a tuple of one cotangent per argument. `primals` give the arguments'
    shapes and dtypes (arrays, or objects with .shape and .dtype); f is read at zeros of
    them. f must be linear: transpile does not check it (for an affine f the result is the
    transpose of its linear part; where f is not linear it is the vjp at zero)."""
    zeros = tree_map(lambda p: np.zeros(np.shape(p), p.dtype if hasattr(p, "dtype") else
                                        np.result_type(p, 0.0)), primals)   # 1j: complex

    def f_transpose(cotangent):
        return vjp(f, *zeros)[1](cotangent)

    return f_transpose


def _for_arguments(t, primals, params):
    """(Transformed, Generated) of `t` made for the functions or types of the arguments in
    `primals` that its code calls (jvp's arguments are positional)."""
    def generated(bindings):
        made = t.specialized(bindings)
        return made, made.generated()
    return _made_for_arguments(params, _bound_arguments(t.root, primals, {}, t.__name__),
                               generated)[0]


def _bound_arguments(root, args, kwargs, name):
    """Parameter -> argument of a call, defaults included, and the parameters that a
    partial or a bound method binds (`partial(f, act)`: the code calls `act` too)."""
    try:
        bound = root.signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None
    bound.apply_defaults()
    return {**dict(zip(root.prefix_names, root.prefix)), **bound.arguments}


def _made_for_arguments(params, arguments, make):
    """(make(bindings of the arguments of `params`), the parameters used): where the code
    made asks about more of its arguments (it calls them too), again with those."""
    params = tuple(params)
    unknown = [p for p in params if p not in arguments]
    if unknown:       # asked by a transformation applied inside the code (tp.jvp(loss, ...))
        raise TransformError(
            f"a transformation inside transformed code is applied to a function that calls "
            f"{' and '.join(map(repr, unknown))} or a method of it: what that does depends on "
            "the argument, which is not known while the code around it is transformed.\n"
            "  hint: apply that transformation outside, or call the function or method by its "
            "name (`Box.grown(b, 0.3)` for `b.grown(0.3)`).")
    while True:
        try:
            return make({p: _binding(arguments[p]) for p in params}), params
        except ArgumentDependent as e:
            more = tuple(p for p in e.params if p not in params)
            if not more or any(p not in arguments for p in more):
                raise
            params += more


def _is_zero(tangent):
    """A tangent that is zero everywhere (numbers and float arrays; containers leaf by leaf;
    None and integer leaves carry no tangent)."""
    for leaf in tree_leaves(tangent):
        if leaf is None or isinstance(leaf, (str, bool)):
            continue
        kind = getattr(getattr(leaf, "dtype", None), "kind", "f")
        if kind not in "fc" and not isinstance(leaf, float):
            continue
        if getattr(leaf, "dtype", None) is not None and type(leaf).__module__ != "numpy":
            return False           # an array of another library (cupy): do not sync on it
        if isinstance(leaf, (float, complex, int)):
            if leaf != 0:
                return False
        elif leaf.any():
            return False
    return True


class _Axes:
    """An in_axes/out_axes value, hashable (for the cache key) even when it holds dicts."""
    __slots__ = ("value", "_key")

    def __init__(self, value):
        self.value = value
        self._key = repr(value)

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, _Axes) and other._key == self._key

    def __lt__(self, other):
        return self._key < other._key

    def __repr__(self):
        return self._key


def _check_axes(axes, what, allow_none=True):
    if axes is None and allow_none:
        return
    if isinstance(axes, bool) or not isinstance(axes, (int, tuple, list, dict)) and \
            axes is not None:
        raise TypeError(f"vmap: {what} must be an int, None, or a tuple/list/dict of them, "
                        f"got {axes!r}")
    if isinstance(axes, (tuple, list)):
        for a in axes:
            _check_axes(a, what)
    elif isinstance(axes, dict):
        for a in axes.values():
            _check_axes(a, what)


def vmap(f, in_axes=0, out_axes=0, axis_name=None, axis_size=None):
    """Map `f` over an axis of its arguments, by rewriting it to work on whole batches.

    Args:
      f: a Python function written for one example (or any transformed function).
      in_axes: int, None, or a tuple with one entry per argument; each entry an int (the
        mapped axis of that argument, negative counts from the end), None (not mapped: the
        same for every example) or a pytree of those matching the argument. A tuple may
        stop before parameters that have defaults: they are not mapped.
      out_axes: where the batch axis goes in the output(s), likewise.
      axis_name: a name for the mapped axis, for tp.psum/pmean/pmax/pmin/all_gather/
        axis_index inside f.
      axis_size: the batch size, needed only when no argument is mapped.
    Returns:
      A Transformed function; `.source` shows the batched code. Conditions that differ
      between examples run both branches and select per example; loops run until every
      example is done.
    """
    _check_axes(in_axes, "in_axes")
    _check_axes(out_axes, "out_axes")
    t = Transformed(f, "vmap", {"in_axes": _Axes(in_axes), "out_axes": _Axes(out_axes),
                                "axis_name": axis_name, "axis_size": axis_size})
    nuser = t._nparams
    t._raw_in_axes = in_axes
    if t.root.variadic:
        return t                      # in_axes are read for each number of arguments
    if isinstance(in_axes, (tuple, list)):
        defaulted = list(t.signature.parameters.values())[len(in_axes):]
        if len(in_axes) > nuser or not all(p.default is not p.empty for p in defaulted):
            raise ValueError(f"vmap: in_axes has {len(in_axes)} entries but "
                             f"{t.__name__} takes {nuser} arguments")
        # (one entry per argument passed, as JAX reads it: parameters after them keep
        # their defaults, the same for every example)
        axes = tuple(in_axes) + (None,) * (nuser - len(in_axes))
    elif isinstance(in_axes, dict):
        raise TypeError("vmap: in_axes must be a tuple with one entry per argument to map "
                        "a dict argument, e.g. in_axes=({'w': None, 'x': 0},)")
    else:
        axes = (in_axes,) * nuser
    t.options["in_axes"] = _Axes(axes)
    t.key = (t.kind, tuple(sorted(t.options.items(), key=repr)), t.root.key)
    if not isinstance(in_axes, (tuple, list)) and t.defaults():
        t._partial_axes = in_axes
    return t


class _ApiCallees(Callees):
    """The API layer's answers to the front end (see frontend/callees.py)."""

    def transformation(self, value):
        for name, fn in _TRANSFORMATIONS.items():
            if value is fn:
                return name
        return None

    def stand_in_class(self, value):
        return stand_ins.stand_in_class(value)

    def transformation_named(self, name):
        return _TRANSFORMATIONS.get(name)

    def transformed_call(self, value, nargs=None, keywords=()):
        if isinstance(value, Jitted):
            value = value.inner
        if not isinstance(value, Transformed):
            return None
        if value._partial_axes is not None and nargs is not None and \
                nargs + len(keywords) < value._nparams:
            # `vf(x)` of vf = vmap(f) with f(x, p=0.5): p keeps its default, the same for
            # every example (JAX's reading of an int in_axes, as a direct call has it)
            value = value._vmap_of_passed([None] * nargs, dict.fromkeys(keywords),
                                          call=False)
        if value.root.variadic and nargs is not None:
            value = value.at_arity(nargs)
        return TransformedCall(value.entry_function(), value.root.prefix,
                               value.root.extra_values(), value.defaults())

    def jvp_of(self, fn, options, nargs=None):
        t = Transformed(fn, "jvp", options)
        return t.at_arity(nargs) if t.root.variadic and nargs is not None else t

    def compile(self, program, ir_name):
        return pipeline.compile_ir_function(program, ir_name)

    def grad(self, fn, argnums):
        return grad(fn, argnums=argnums)

    def vmap(self, fn, in_axes, out_axes, axis_name):
        return vmap(fn, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)


class Jitted:
    """A function specialized to each kind of arguments it is called with (see `jit`).

    The first call with a new kind of arguments runs the general code the inner
    transformation generated (as fast to get as `tp.grad`'s first call); the next one with
    that kind specializes (`calls_before_specializing`), so a function called once never
    pays for specialization. `.lower(*args)` and `.source` specialize at once.
    """

    calls_before_specializing = 1

    def __init__(self, target, static_argnums=(), static_argnames=(), donate_argnums=(),
                 backend=None, cache_size=64):
        if isinstance(target, Jitted):
            target = target.inner
        self.inner = target if isinstance(target, Transformed) else \
            Transformed(target, "transform")
        if self.inner.kind == "vjp":
            raise TypeError("tp.jit: jit the function, then take its vjp")
        self._options = (static_argnums, static_argnames, donate_argnums, backend, cache_size)
        self.signature = self.inner.signature
        if self.inner.root.variadic:            # made for each number of arguments
            self._arity_variants = {}
            self._latest_arity = self._fast = None
            self._name = getattr(self.inner.target, "__qualname__", "function")
            functools.update_wrapper(self, self.inner, updated=())
            return
        target = self.inner.target
        self._name = getattr(target, "__qualname__", None) or \
            getattr(getattr(target, "func", None), "__qualname__", None) or \
            type(target).__name__
        names = list(self.signature.parameters)
        n = len(names)
        argnums = (static_argnums,) if isinstance(static_argnums, int) else \
            tuple(static_argnums)
        argnames = (static_argnames,) if isinstance(static_argnames, str) else \
            tuple(static_argnames)
        static = set()
        for a in argnums:
            if not isinstance(a, int) or not -n <= a < n:
                raise TypeError(f"tp.jit: static_argnums entry {a!r} is not the position of "
                                f"a parameter of {self._name} ({n} parameters)")
            static.add(a % n)
        for a in argnames:
            if a not in names:
                raise TypeError(f"tp.jit: static_argnames entry {a!r} is not a parameter of "
                                f"{self._name} (parameters: {', '.join(names)})")
            static.add(names.index(a))
        self.static = tuple(sorted(static))
        donate = (donate_argnums,) if isinstance(donate_argnums, int) else \
            tuple(donate_argnums)
        for a in donate:
            if not isinstance(a, int) or not -n <= a < n:
                raise TypeError(f"tp.jit: donate_argnums entry {a!r} is not the position of "
                                f"a parameter of {self._name} ({n} parameters)")
        self.donate = tuple(sorted({a % n for a in donate} - static))
        if backend not in (None, "cpu", "numpy", "cuda", "gpu", "cupy"):
            raise ValueError(f"tp.jit: backend must be None, 'cpu' or 'cuda', got {backend!r}")
        self.backend = {None: None, "cpu": "numpy", "numpy": "numpy"}.get(backend, "cupy")
        self.cache_size = cache_size
        self._cache = collections.OrderedDict()
        self._last = None
        # (guard, entry, number of arguments, the generated code it was made from) of the
        # specialization called last, when a guard can tell its arguments (see __call__)
        self._fast = None
        self._calls = {}          # key -> calls that ran the general code
        self._pending = None      # (stand-in arguments, backend) of such a call
        self._nparams = n
        self._dependent = ()       # parameters whose arguments the code calls
        self._for_arguments = {}   # their bindings -> a Jitted of the code made for them
        functools.update_wrapper(self, self.inner, updated=())

    def _key(self, full):
        if not self.static:
            return tuple([jit_pass.argument_key(v) for v in full])
        nprefix = len(self.inner.root.prefix)
        static = {nprefix + i for i in self.static}
        key = []
        for i, v in enumerate(full):
            if i in static:
                try:
                    hash(v)
                except TypeError:
                    name = list(self.signature.parameters)[i - nprefix]
                    raise TypeError(
                        f"tp.jit: static argument {name!r} of {self._name} must be "
                        f"hashable (its value is part of the cache key), got "
                        f"{type(v).__name__} {v!r}; pass a tuple instead of a list, or make "
                        f"it a regular argument") from None
                key.append(("static", type(v), v))
            else:
                key.append(jit_pass.argument_key(v))
        return tuple(key)

    def _cached(self, key):
        """The specialization made for `key`, unless a global array it was made for has
        changed shape or dtype in place since (then it is dropped)."""
        spec = self._cache.get(key)
        if spec is not None and spec.global_arrays and not spec.globals_fit():
            self._cache.pop(key, None)
            self._last = self._fast = None
            return None
        return spec

    def _specialization(self, full):
        key = self._key(full)
        spec = self._cached(key)
        if spec is None:
            with _GENERATING:     # once, when pmap's device threads ask together
                spec = self._cache.get(key)
                if spec is None:
                    spec = self._specialize(full)
                    self._cache[key] = spec
                    if len(self._cache) > self.cache_size:
                        self._cache.popitem(last=False)
        else:
            self._recently_used(key)
        self._last = spec
        return spec

    def _specialize(self, full, backend=None):
        nprefix = len(self.inner.root.prefix)
        backend = backend or self.backend or jit_pass.array_module_name(full)
        label = self._name
        return jit_pass.specialize(self.inner.generated(), full,
                                   {nprefix + i: full[nprefix + i] for i in self.static},
                                   backend, label,
                                   donated={nprefix + i for i in self.donate})

    def __call__(self, *args, **kwargs):
        fast = self._fast
        if fast is not None and not kwargs and len(args) == fast[2] and fast[0](*args) and \
                (not fast[3].global_reads or fast[3].globals_unchanged()):
            # arguments of the kind the last call had: its code again, without building
            # the cache key (a few microseconds: a tenth of a small MLP's gradient). The
            # guard passes only tuples, lists, arrays, numbers and None: no dataclass to
            # hand in as its stand-in, but a result may hold one to hand back
            out = fast[1](*args)
            return stand_ins.from_transformable(out) if stand_ins.has_proxies() else out
        if stand_ins.has_proxies():       # registered dataclasses: as namedtuples inside
            args, kwargs = stand_ins.to_transformable((args, kwargs))
            return stand_ins.from_transformable(self._call(*args, **kwargs))
        return self._call(*args, **kwargs)

    def at_arity(self, n):
        """The Jitted of this function's code for calls with n arguments (it takes *args)."""
        if n not in self._arity_variants:
            self._arity_variants[n] = Jitted(self.inner.at_arity(n), *self._options)
        self._latest_arity = self._arity_variants[n]
        return self._latest_arity

    def _call(self, *args, **kwargs):
        if self.inner.root.variadic:
            return self.at_arity(len(args))._call(*args, **kwargs)
        if self.inner._partial_axes is not None and \
                len(args) + len(kwargs) < self.inner._nparams:
            return self._jitted_of_passed(args, kwargs)._call(*args, **kwargs)
        if self._dependent:
            return self._jitted_for(args, kwargs)._call(*args, **kwargs)
        try:
            return self._call_general(args, kwargs)
        except ArgumentDependent as e:
            if self.inner.bindings:
                raise        # the Jitted this one was made for asks again
            self._dependent = e.params
            return self._jitted_for(args, kwargs)._call(*args, **kwargs)

    def _jitted_of_passed(self, args, kwargs):
        """jit of a vmap with one int in_axes, called with parameters left to their
        defaults: the Jitted of the vmap of the arguments passed (Transformed._vmap_of_passed),
        not one of every parameter (whose defaults it would map)."""
        variant = self.inner._vmap_of_passed(args, kwargs, call=False)
        made = self.__dict__.setdefault("_of_passed", {}).get(id(variant))
        if made is None:
            made = Jitted(variant, (), (), self.donate, self.backend, self.cache_size)
            made.static = self.static
            self._of_passed[id(variant)] = made
        return made

    def _jitted_for(self, args, kwargs):
        """The Jitted of the code made for the functions or types of the arguments the
        function calls (see Transformed._call_for_arguments), made on first use."""
        arguments = _bound_arguments(self.inner.root, args, kwargs, self._name)

        def jitted(bindings):
            key = _bindings_key(bindings)
            made = self._for_arguments.get(key)
            if made is None:
                made = Jitted(self.inner.specialized(bindings), (), (), self.donate,
                              self.backend, self.cache_size)
                made.backend, made.static = self.backend, self.static
                self._for_arguments[key] = made
            made.inner.generated()       # (asks about more arguments if it calls them)
            return made
        self._latest, self._dependent = _made_for_arguments(self._dependent, arguments,
                                                            jitted)
        return self._latest

    def _call_general(self, args, kwargs):
        made_from = self.inner._generated
        if made_from is not None and made_from.global_reads and \
                not made_from.globals_unchanged():
            # a global the code was made with is rebound: specialize the new code again
            self._cache.clear()
            self._calls.clear()
            self._last = self._fast = None
            self.inner.generated()
        full = self.inner.full_args(args, kwargs)
        if self.backend == "cupy":
            full = tuple(rt_device_put(v) for v in full)
        key = self._key(full)
        spec = self._cached(key)
        if spec is None:
            calls = self._calls.get(key, 0)
            backend = self.backend or jit_pass.array_module_name(full)
            if calls < self.calls_before_specializing and backend == "numpy":
                # run the general code this time; specialize if this kind comes again
                # (cupy arrays need the module that binds np to cupy: specialized now)
                if len(self._calls) > 4 * self.cache_size:
                    self._calls.clear()
                self._calls[key] = calls + 1
                self._pending = (jit_pass.stand_in(full), backend)
                self._last = None
                gen = self.inner.generated()
                return gen.call(self.inner, full)
            spec = self._specialization(full)
        elif spec is not self._last:       # (the last one used is the newest already)
            self._recently_used(key)
            self._last = spec
        if self._fast is None or self._fast[1] is not spec.entry:
            self._fast = self._fast_path(spec, key, len(args), full)
        return spec.entry(*full)

    def _fast_path(self, spec, key, nargs, full):
        """What __call__ needs to run `spec` again without building the key: only for
        calls that pass the user's arguments as they are (no keywords, closure values or
        prefix arguments), on numpy arrays."""
        if nargs != len(full) or spec.backend != "numpy" or self.backend not in (None, "numpy"):
            return None
        if spec.guard is False:
            spec.guard = jit_pass.argument_guard(key)
            if spec.guard is not None and spec.global_arrays:
                arguments_fit = spec.guard
                spec.guard = lambda *a: arguments_fit(*a) and spec.globals_fit()
        made_from = self.inner._generated
        if spec.guard is None or made_from is None:
            return None
        return spec.guard, spec.entry, nargs, made_from

    def _recently_used(self, key):
        try:
            self._cache.move_to_end(key)
        except KeyError:       # dropped by another thread meanwhile
            pass

    def lower(self, *args, **kwargs):
        """The specialization for these arguments, without running it: `.source` is its
        code (kernels included), `.kernels` its fused groups, `.entry` the function."""
        if self.inner.root.variadic:
            return self.at_arity(len(args)).lower(*args, **kwargs)
        if not self._dependent:
            try:
                self.inner.generated()
            except ArgumentDependent as e:
                self._dependent = e.params
        if self._dependent:
            return self._jitted_for(args, kwargs).lower(*args, **kwargs)
        return self._specialization(self.inner.full_args(args, kwargs))

    @property
    def source(self):
        """The code of the specialization the last call ran (or use
        `f.lower(*args).source` for given arguments)."""
        if self.inner.root.variadic:
            if self._latest_arity is None:
                raise TransformError(f"{self._name} takes *args: call it once before reading "
                                     ".source.")
            return self._latest_arity.source
        if self._dependent and self._for_arguments:
            return self._latest.source
        if self._last is None and self._pending is not None:
            stand_in, backend = self._pending       # the kind of the last call's arguments
            self._last = self._specialize(stand_in, backend)
        if self._last is None:
            raise ValueError(f"tp.jit({self._name}) has no code yet: jit specializes "
                             "to the arguments' shapes and dtypes.\n  hint: call it once, or "
                             "use .lower(*args).source to see the code for given arguments.")
        return self._last.text

    def with_backend(self, backend):
        """The same jit (static arguments, cache size) for another backend."""
        new = Jitted(self.inner, (), (), self.donate, backend, self.cache_size)
        new.static = self.static
        return new

    def cache_info(self):
        """How many specializations are cached, and the limit."""
        return {"size": len(self._cache), "limit": self.cache_size}

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self):
        return f"<transpile.jit of {self._name}>"


def jit(f=None, static_argnums=(), static_argnames=(), donate_argnums=(), backend=None,
        cache_size=64):
    """Specialize `f` to the kinds of arguments it is called with, and fuse its elementwise
    chains into kernels.

    Args:
      f: a Python function or any transformed function (jit(grad(f)), jit(vmap(...))).
      static_argnums, static_argnames: arguments whose values (hashable) are constants of
        the code: `if`s on them are decided when it is generated.
      donate_argnums: arguments the caller gives up: a fused kernel may write its result
        into one (the result is then that array), where no other name can see it.
      backend: None (numpy or cupy, from the arguments), "cpu" or "cuda".
      cache_size: how many specializations are kept (least recently used dropped first).
    Returns:
      A callable; `.source` shows the code of the last specialization, `.lower(*args)` the
      one for given arguments. Python control flow stays Python: `if` and `while` on array
      values work, with the trip count decided by the data.
    """
    if f is None:
        return lambda g: jit(g, static_argnums, static_argnames, donate_argnums, backend,
                             cache_size)
    return Jitted(f, static_argnums, static_argnames, donate_argnums, backend, cache_size)


_TRANSFORMATIONS = {"grad": grad, "value_and_grad": value_and_grad, "transform": transform,
                    "jvp": jvp, "vjp": vjp, "vmap": vmap, "jit": jit, "checkpoint": checkpoint}
CALLEES = _ApiCallees()


def add_transformation(name, fn):
    """Make `fn` (a transformation defined above this layer: pmap) one that transformed
    code may apply to its nested functions."""
    _TRANSFORMATIONS[name] = fn
