"""Gradient checking against finite differences (float64, fresh random directions).

    check_grads(f, (x, W), order=2)

Reverse mode ("rev"): for a random cotangent u and direction v, the vector-Jacobian product
must satisfy <u, J v> == <vjp(u), v>, where J v comes from central finite differences.
Higher orders check the gradient of <f(x), u> the same way, so `order=2` differentiates
generated code again (grad of vjp of ...). Forward mode ("fwd") is checked the same way
once `tp.jvp` exists; asking for it before raises.
"""
import itertools
import linecache

import numpy as np

from runtime.trees import tree_leaves, tree_map

_counter = itertools.count()


def _random_like(x, rng):
    if isinstance(x, float):
        return float(rng.standard_normal())
    if isinstance(x, (tuple, list, dict)):
        return tree_map(lambda leaf: _random_like(leaf, rng), x)
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        return None
    return rng.standard_normal(x.shape).astype(x.dtype)


def _vdot(a, b):
    total = 0.0
    for x, y in zip(tree_leaves(a), tree_leaves(b)):
        if x is None or y is None:
            continue
        total += float(np.sum(np.asarray(x, dtype=np.float64) * np.asarray(y, dtype=np.float64)))
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
    return tree_map(lambda p, m: (np.asarray(p, np.float64) - np.asarray(m, np.float64)) /
                    (2 * eps), plus, minus)


def check_vjp(f, args, rng, atol=1e-6, rtol=1e-5, eps=1e-6):
    from . import api
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
    """A transformable inner product for the structure of `u` (array or tuple of arrays)."""
    if isinstance(u, (tuple, list)):
        n = len(u)
        body = " + ".join(f"np.sum(out[{i}] * u[{i}])" for i in range(n)) or "0.0"
    else:
        body = "np.sum(out * u)"
    text = f"import numpy as np\n\ndef vdot(out, u):\n    return {body}\n"
    filename = f"<transpile-check-grads-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    env = {}
    exec(compile(text, filename, "exec"), env)  # noqa: S102
    return env["vdot"]


def check_grads(f, args, order=2, modes=("rev",), seed=None, atol=1e-6, rtol=1e-5,
                eps=1e-6):
    """Check derivatives of `f` at `args` up to `order` against finite differences.

    Args:
      f: a function of positional array/pytree arguments (float64 recommended).
      args: tuple of arguments.
      order: highest derivative order to check (1, 2, 3, ...).
      modes: ("rev",) and/or ("fwd",).
      seed: seed for the random directions; a fresh one is drawn when None.
    Raises:
      AssertionError with the mismatching values when a check fails.
    """
    rng = np.random.default_rng(seed)
    args = tuple(args)
    for mode in modes:
        if mode != "rev":
            raise NotImplementedError(f"mode {mode!r} needs tp.jvp, which is not built yet")
    out, u = check_vjp(f, args, rng, atol, rtol, eps)
    if order > 1:
        from . import api
        floats = tuple(i for i, a in enumerate(args)
                       if all(_random_like(leaf, rng) is not None for leaf in tree_leaves(a)))
        g = api.grad(_scalarized(f, u, len(args)), argnums=floats)
        check_grads(g, args, order - 1, modes, seed=rng.integers(1 << 31), atol=atol * 10,
                    rtol=rtol * 10, eps=eps)
