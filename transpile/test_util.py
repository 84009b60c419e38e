"""Gradient checking against finite differences (float64, fresh random directions).

    check_grads(f, (x, W), order=2)

Reverse mode ("rev"): for a random cotangent u and direction v, the vector-Jacobian product
must satisfy <u, J v> == <vjp(u), v>, where J v comes from central finite differences.
Higher orders check the gradient of <f(x), u> the same way, so `order=2` differentiates
generated code again (grad of vjp of ...). Forward mode ("fwd") checks <u, jvp(v)> against
the same finite differences, and its higher orders transform <jvp(f)(x, v), u> again, in
every requested mode (jvp of jvp, grad of jvp, ...).
"""
import itertools
import linecache

import numpy as np

import runtime as rt
from runtime.trees import tangent_zeros, tree_leaves, tree_map
from . import api

_counter = itertools.count()


def _random_like(x, rng):
    if isinstance(x, float):
        return float(rng.standard_normal())
    if isinstance(x, (tuple, list, dict)):
        return tree_map(lambda leaf: _random_like(leaf, rng), x)
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        return None
    if x.dtype.kind == "c":     # a direction with real and imaginary parts
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return rng.standard_normal(x.shape).astype(x.dtype)


def _wide(x):
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _vdot(a, b):
    """Re sum(a * b), without conjugation: the pairing under which vjp is the transpose of
    jvp for the gradient convention df/dx - i df/dy (JAX's)."""
    total = 0.0
    for x, y in zip(tree_leaves(a), tree_leaves(b)):
        if x is None or y is None:
            continue
        total += float(np.real(np.sum(_wide(x) * _wide(y))))
    return total


def _axpy(alpha, v, x):
    def leaf(xi, vi):
        if vi is None:
            return xi
        return xi + alpha * vi if not isinstance(xi, float) else float(xi + alpha * vi)
    return tree_map(leaf, x, v)


def numerical_jvp(f, args, tangents, eps=1e-6):
    """(f(args + eps t) - f(args - eps t)) / 2 eps, leaf by leaf."""
    plus = f(*[_axpy(eps, t, a) for a, t in zip(args, tangents)])
    minus = f(*[_axpy(-eps, t, a) for a, t in zip(args, tangents)])
    return tree_map(lambda p, m: (_wide(p) - _wide(m)) / (2 * eps), plus, minus)


def check_vjp(f, args, rng, atol=1e-6, rtol=1e-5, eps=1e-6):
    out, vjp_fn = api.vjp(f, *args)
    u = _random_like(out, rng)
    v = [_random_like(a, rng) for a in args]
    cotangents = vjp_fn(u)
    _check_structure(cotangents, args)
    analytic = _vdot(cotangents, v)
    numeric = _vdot(u, numerical_jvp(f, args, v, eps))
    if not np.isclose(analytic, numeric, atol=atol, rtol=rtol):
        raise AssertionError(f"reverse-mode check failed for {getattr(f, '__name__', f)}: "
                             f"<vjp(u), v> = {analytic!r} but finite differences give "
                             f"{numeric!r}")
    return out, u


def _check_structure(cotangents, args):
    assert len(cotangents) == len(args), "one cotangent per argument"
    for c, a in zip(cotangents, args):
        for cl, al in zip(tree_leaves(c), tree_leaves(a)):
            if hasattr(al, "shape") and getattr(al, "dtype", None) is not None and \
                    al.dtype.kind in "fc":
                assert np.shape(cl) == np.shape(al), f"cotangent shape {np.shape(cl)} != " \
                    f"primal shape {np.shape(al)}"
                assert cl.dtype == al.dtype, f"cotangent dtype {cl.dtype} != {al.dtype}"


def check_jvp(f, args, rng, atol=1e-6, rtol=1e-5, eps=1e-6):
    v = tuple(_random_like(a, rng) for a in args)
    tangents = tuple(t if t is not None else _zero_tangent(a) for t, a in zip(v, args))
    out, out_dot = api.jvp(f, args, tangents)
    u = _random_like(out, rng)
    analytic = _vdot(u, out_dot)
    numeric = _vdot(u, numerical_jvp(f, args, v, eps))
    if not np.isclose(analytic, numeric, atol=atol, rtol=rtol):
        raise AssertionError(f"forward-mode check failed for {getattr(f, '__name__', f)}: "
                             f"<u, jvp(v)> = {analytic!r} but finite differences give "
                             f"{numeric!r}")
    return tangents, u


def _zero_tangent(a):
    return tangent_zeros(a)


def _jvp_scalarized(f, v, u, nargs):
    """(a0, ...) -> <jvp(f, (a0, ...), v)[1], u>, file-backed so it can be transformed."""
    params = ", ".join(f"a{i}" for i in range(nargs))
    tans = ", ".join(f"v[{i}]" for i in range(nargs)) + ("," if nargs == 1 else "")
    text = (f"import numpy as np\nimport transpile as tp\n\n"
            f"def jvp_scalarized({params}):\n"
            f"    out, out_dot = tp.jvp(f, ({params}{',' if nargs == 1 else ''}), ({tans}))\n"
            f"    return vdot(out_dot, u)\n")
    filename = f"<transpile-check-grads-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    env = {"f": f, "u": u, "v": v, "vdot": _tree_vdot_fn(u)}
    exec(compile(text, filename, "exec"), env)  # noqa: S102
    return env["jvp_scalarized"]


def _scalarized(f, u, nargs):
    """A file-backed function (a0, ...) -> <f(a0, ...), u>, which transformations can parse."""
    params = ", ".join(f"a{i}" for i in range(nargs))
    text = (f"import numpy as np\n\n"
            f"def scalarized({params}):\n"
            f"    out = f({params})\n"
            f"    return vdot(out, u)\n")
    filename = f"<transpile-check-grads-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    env = {"f": f, "u": u, "vdot": _tree_vdot_fn(u)}
    exec(compile(text, filename, "exec"), env)  # noqa: S102
    return env["scalarized"]


def _tree_vdot_fn(u):
    """A transformable inner product <out, u> for outputs of any pytree structure (its real
    part, as _vdot, where u is complex)."""
    pairing = "np.real(rt.tree_vdot(out, u))" if any(
        np.iscomplexobj(leaf) for leaf in tree_leaves(u)) else "rt.tree_vdot(out, u)"
    text = f"import numpy as np\nimport runtime as rt\n\ndef vdot(out, u):\n    return {pairing}\n"
    filename = f"<transpile-check-grads-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    env = {"rt": rt, "np": np}
    exec(compile(text, filename, "exec"), env)  # noqa: S102
    return env["vdot"]


def check_grads(f, args=None, order=2, modes=None, seed=None, atol=1e-6, rtol=1e-5,
                eps=1e-6):
    """Check derivatives of `f` at `args` up to `order` against finite differences.

    Args:
      f: a function of positional array/pytree arguments (float64 recommended).
      args: tuple of arguments. Without it, as autograd's `check_grads(f, modes=["rev"])(x)`:
        a function that checks `f` at the arguments it is called with (modes default to
        autograd's, both).
      order: highest derivative order to check (1, 2, 3, ...).
      modes: ("rev",) (the default) and/or ("fwd",).
      seed: seed for the random directions; a fresh one is drawn when None.
    Raises:
      AssertionError with the mismatching values when a check fails.
    """
    if args is None:
        options = dict(order=order, modes=("fwd", "rev") if modes is None else modes,
                       seed=seed, atol=atol, rtol=rtol, eps=eps)
        return lambda *call_args: check_grads(f, call_args, **options)
    if modes is None:
        modes = ("rev",)
    rng = np.random.default_rng(seed)
    args = tuple(args)
    for mode in modes:
        if mode not in ("rev", "fwd"):
            raise ValueError(f"unknown mode {mode!r}: use 'rev' and/or 'fwd'")
    if "fwd" in modes:
        v, u_fwd = check_jvp(f, args, rng, atol, rtol, eps)
        if order > 1:
            h = _jvp_scalarized(f, v, u_fwd, len(args))
            check_grads(h, args, order - 1, modes, seed=rng.integers(1 << 31),
                        atol=atol * 10, rtol=rtol * 10, eps=eps)
    if "rev" not in modes:
        return
    out, u = check_vjp(f, args, rng, atol, rtol, eps)
    if order > 1:
        floats = tuple(i for i, a in enumerate(args)
                       if all(_random_like(leaf, rng) is not None for leaf in tree_leaves(a)))
        g = api.grad(_scalarized(f, u, len(args)), argnums=floats)
        check_grads(g, args, order - 1, modes, seed=rng.integers(1 << 31), atol=atol * 10,
                    rtol=rtol * 10, eps=eps)
