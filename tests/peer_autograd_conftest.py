"""The conftest.py that tests/peer_autograd.py puts beside autograd's own tests: it makes
`autograd`, `autograd.numpy`, `autograd.scipy.*` and `autograd.test_util` names for numpy,
scipy and transpile before autograd's test modules import them, so that their functions
are transformed by transpile and their `check_grads` runs ours.

`check_grads(fun, argnum, modes, order)(*args, **kwargs)` checks `fun` of the arguments
`argnum` (the others and the keywords held fixed) in both modes to second order (order=1:
first) against finite differences with tests/test_rule_edges.py's checkers, and functions
of complex numbers, or with complex results, along the real and imaginary parts
(check_complex); autograd's `modes=["rev"]` is ignored: both modes are always checked.
Not a test module of this project (pytest does not collect it here): only the runner uses it.
"""
import itertools
import linecache
import os
import sys
import types

import numpy as np
import pytest
import scipy
import scipy.integrate
import scipy.linalg
import scipy.special
import scipy.stats

PROJECT = os.environ["TRANSPILE_PROJECT"]
sys.path[:0] = [os.path.join(PROJECT, "tests"), PROJECT]
import transpile as tp  # noqa: E402
import transpile.extend  # noqa: E402
import transpile.flatten_util  # noqa: E402
import transpile.misc.optimizers  # noqa: E402
import transpile.signal  # noqa: E402
from runtime.trees import tree_leaves  # noqa: E402
from test_rule_edges import check_complex, check_rules  # noqa: E402
from transpile.test_util import check_jvp, check_vjp  # noqa: E402

_count = itertools.count()


def _source_backed(text, env, name):
    filename = f"<peer-autograd-{next(_count)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), env)  # noqa: S102
    return env[name]


def _fixed(fun, args, argnums, kwargs):
    """`fun` as a function of the arguments `argnums` only, with source transpile reads."""
    env, call = {"fun": fun}, []
    for i, a in enumerate(args):
        if i in argnums:
            call.append(f"a{i}")
        else:
            env[f"c{i}"] = a
            call.append(f"c{i}")
    for k, v in kwargs.items():
        env[f"kw_{k}"] = v
        call.append(f"{k}=kw_{k}")
    params = ", ".join(f"a{i}" for i in argnums)
    return _source_backed(f"def checked({params}):\n    return fun({', '.join(call)})\n",
                          env, "checked")


def _realified(f, n):
    """(real, imag) of a complex result, so second orders can be checked in real numbers."""
    params = ", ".join(f"a{i}" for i in range(n))
    return _source_backed(f"import numpy as np\n\ndef realified({params}):\n"
                          f"    out = f({params})\n    return np.real(out), np.imag(out)\n",
                          {"f": f}, "realified")


def check_grads(fun, argnum=0, modes=None, order=2):
    def check(*args, **kwargs):
        argnums = (argnum,) if isinstance(argnum, int) else tuple(argnum)
        f = _fixed(fun, args, argnums, kwargs)
        chosen = [args[i] for i in argnums]
        rng = np.random.default_rng(next(_count))
        out = f(*chosen)
        complex_in = any(np.iscomplexobj(leaf) for leaf in tree_leaves(chosen))
        complex_out = any(np.iscomplexobj(leaf) for leaf in tree_leaves(out))
        if complex_in or complex_out:
            check_complex(f, chosen, rng)
        if not complex_in and complex_out and not isinstance(out, (tuple, list, dict)):
            check_rules(_realified(f, len(chosen)), chosen, rng)
        elif not complex_in and not complex_out and order == 1:
            check_jvp(f, chosen, rng)
            check_vjp(f, chosen, rng)
        elif not complex_in and not complex_out:
            check_rules(f, chosen, rng)
    return check


def combo_check(fun, *args, **kwargs):
    def _combo_check(*arg_lists, **kwarg_lists):
        kwarg_key_vals = [[(k, x) for x in xs] for k, xs in kwarg_lists.items()]
        for _args in itertools.product(*arg_lists):
            for _kwargs in itertools.product(*kwarg_key_vals):
                check_grads(fun, *args, **kwargs)(*_args, **dict(_kwargs))
    return _combo_check


def _unsupported(name):
    def refuse(*a, **k):
        pytest.skip(f"autograd API with no transpile equivalent: {name}")
    return refuse


def _make_vjp(f, x=None):
    out, vjp_fn = tp.vjp(f, x)
    return (lambda g: vjp_fn(g)[0]), out


autograd = types.ModuleType("autograd")
autograd.grad, autograd.value_and_grad = tp.grad, tp.value_and_grad
autograd.elementwise_grad, autograd.deriv = tp.elementwise_grad, tp.elementwise_grad
autograd.jacobian, autograd.hessian = tp.jacrev, tp.hessian
autograd.holomorphic_grad = lambda f, argnum=0: tp.grad(f, argnums=argnum, holomorphic=True)
autograd.make_vjp = _make_vjp
autograd.make_jvp = lambda f: lambda x: lambda v: tp.jvp(f, (x,), (v,))
autograd.hessian_vector_product = tp.hessian_vector_product
for _name in ("checkpoint", "grad_and_aux", "grad_named", "hessian_tensor_product",
              "make_ggnvp", "make_hvp", "multigrad_dict",
              "tensor_jacobian_product", "vector_jacobian_product"):
    setattr(autograd, _name, _unsupported(_name))
autograd.dict, autograd.list, autograd.tuple, autograd.isinstance, autograd.type = \
    dict, list, tuple, isinstance, type

test_util = types.ModuleType("autograd.test_util")
test_util.check_grads, test_util.combo_check = check_grads, combo_check
test_util.scalar_close = lambda a, b: abs(a - b) < 1e-6 or abs(a - b) / abs(a + b) < 1e-6
test_util.check_equivalent = lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-6,
                                                                      atol=1e-6)
autograd.test_util = test_util
builtins_module = types.ModuleType("autograd.builtins")
builtins_module.dict, builtins_module.list, builtins_module.tuple = dict, list, tuple
builtins_module.isinstance, builtins_module.type = isinstance, type
misc = types.ModuleType("autograd.misc")
misc.flatten = transpile.misc.flatten
misc.const_graph = _unsupported("const_graph")
autograd.primitive = transpile.extend.primitive
ag_scipy = types.ModuleType("autograd.scipy")
ag_scipy.special, ag_scipy.stats, ag_scipy.linalg = scipy.special, scipy.stats, scipy.linalg
ag_scipy.integrate, ag_scipy.signal = scipy.integrate, transpile.signal
autograd.scipy, autograd.numpy, autograd.misc = ag_scipy, np, misc

sys.modules.update({
    "autograd": autograd, "autograd.numpy": np, "autograd.numpy.random": np.random,
    "autograd.numpy.linalg": np.linalg, "autograd.numpy.fft": np.fft,
    "autograd.scipy": ag_scipy, "autograd.scipy.special": scipy.special,
    "autograd.scipy.stats": scipy.stats, "autograd.scipy.linalg": scipy.linalg,
    "autograd.scipy.integrate": scipy.integrate, "autograd.scipy.signal": transpile.signal,
    "autograd.scipy.stats.multivariate_normal": scipy.stats.multivariate_normal,
    "autograd.scipy.stats.norm": scipy.stats.norm, "autograd.misc": misc,
    "autograd.test_util": test_util, "autograd.builtins": builtins_module,
    "autograd.extend": transpile.extend, "autograd.misc.optimizers": transpile.misc.optimizers,
    "autograd.misc.flatten": sys.modules["transpile.misc.flatten"],
})


@pytest.fixture(autouse=True)
def random_seed():
    np.random.seed(42)
