"""Every transformation on device arrays: the same program on cupy and on numpy agrees.

Each test runs twice (the last one only on the stand-in): on the strict stand-in for cupy (tests/strict_cupy.py: numpy underneath,
cupy's refusals on top: a numpy array mixed into a device operation, a list as an operand,
np.asarray of a device array; jit's CUDA kernels compiled by the host C++ compiler), here
and in CI; and on real cupy arrays, marked `gpu`, where a CUDA GPU is visible (the `device`
tool lends one now and then: `python -m pytest -m gpu` there). The reference is the same
transformation on numpy arrays, which the rest of the suite checks against finite
differences and loops, so what is checked here is the array-module side: generated code and
runtime helpers must call cupy for cupy arrays, keep results on the device, and never
convert a device array through numpy. Three sources of programs:

1. every line of the rule sweep (tests/test_rule_edges.py): the plain call, jit, the
   gradient of <f, u>, and the jvp;
2. random programs (tests/program_generator.py; TP_GPU_PROGRAMS sets how many): grad, jvp,
   jvp(grad), jit, jit(grad), vmap and vmap(grad);
3. the user programs of tests/programs: the gradient of the objective.

A sweep line or program whose *plain* call fails on device arrays (scipy.special takes no
cupy array, say) is skipped with the error named: there is nothing for a transformation to
match.
"""
import copy
import os
import sys

import numpy as np
import pytest

import runtime.backend
import transpile as tp
from runtime import nccl as rt_nccl
from runtime.trees import tree_leaves, tree_map
from tests import program_generator as gen
from tests import test_rule_edges as edges
from tests.strict_cupy import strict_cupy, strict_cupyx, with_gpus
from tests.test_pmap_nccl import FakeNccl
from tests.test_user_programs import load

try:
    import cupy as real_cupy
    HAVE_GPU = real_cupy.cuda.runtime.getDeviceCount() > 0
except Exception:
    real_cupy, HAVE_GPU = None, False

RTOL, ATOL = 1e-7, 1e-9       # the same computation; GPU math functions and sums round apart
PROGRAM_COUNT = int(os.environ.get("TP_GPU_PROGRAMS", "80"))


@pytest.fixture(params=["strict", pytest.param("cupy", marks=[
    pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU")])])
def cupy(request, monkeypatch):
    """The array module under test, installed as `cupy` for runtime and jit to find."""
    module = strict_cupy() if request.param == "strict" else real_cupy
    monkeypatch.setitem(sys.modules, "cupy", module)
    if request.param == "strict":
        for name, namespace in strict_cupyx().items():
            monkeypatch.setitem(sys.modules, name, namespace)
    monkeypatch.setattr(runtime.backend, "_cupy", module)
    monkeypatch.setattr(runtime.backend, "_cupy_checked", True)
    monkeypatch.setattr(runtime.backend, "_gpus", 1)    # the stand-in's arrays exist too
    return module


def to_gpu(tree, cupy):
    return tree_map(lambda leaf: cupy.asarray(leaf) if isinstance(leaf, np.ndarray) else leaf,
                    tree)


def to_host(tree, cupy):
    return tree_map(lambda leaf: cupy.asnumpy(leaf) if isinstance(leaf, cupy.ndarray) else leaf,
                    tree)


def _host_arrays(tree):
    return [leaf for leaf in tree_leaves(tree) if isinstance(leaf, np.ndarray) and leaf.ndim]


def assert_same(got, expected, what, cupy):
    """`got` (from device inputs) has `expected`'s structure and numbers, and no array of it
    came back to the host."""
    host = _host_arrays(got)
    assert not host, f"{what}: {len(host)} result array(s) came back as numpy arrays"
    got_leaves, expected_leaves = tree_leaves(to_host(got, cupy)), tree_leaves(expected)
    assert len(got_leaves) == len(expected_leaves), f"{what}: structure differs"
    for g, e in zip(got_leaves, expected_leaves):
        assert np.shape(g) == np.shape(e), f"{what}: shape {np.shape(g)}, expected {np.shape(e)}"
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=RTOL, atol=ATOL,
                                   err_msg=what)


class Device:
    """One program's calls on device arrays. The plain call runs the user's code as written:
    where it fails (np.linspace makes a numpy array that a cupy one cannot meet; scipy takes
    no cupy array), transformations, whose code binds np to cupy, may still run, and a
    transformation that fails then is skipped with the plain call's error named."""

    def __init__(self, cupy, f, args):
        self.cupy = cupy
        try:
            self.plain, self.plain_error = f(*to_gpu(copy.deepcopy(args), cupy)), None
        except tp.TransformError:
            raise
        except Exception as exc:
            self.plain, self.plain_error = None, f"{type(exc).__name__}: " \
                f"{str(exc).splitlines()[0][:160]}"
        if self.plain_error is None and _host_arrays(self.plain):
            self.plain_error = "its results are numpy arrays"

    def check_plain(self, expected):
        if self.plain_error is None:
            got_leaves, expected_leaves = tree_leaves(to_host(self.plain, self.cupy)), \
                tree_leaves(expected)
            for g, e in zip(got_leaves, expected_leaves):
                np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=RTOL, atol=ATOL)

    def run(self, fn, *args):
        try:
            return fn(*args)
        except tp.TransformError:
            raise
        except Exception:
            if self.plain_error is None:
                raise
            pytest.skip(f"the plain call fails on device arrays too: {self.plain_error}")

    def same(self, transformed, args, what):
        """transformed(*args) on numpy and on the device; nothing to compare where numpy's
        is refused."""
        try:
            expected = transformed(*copy.deepcopy(args))
        except tp.TransformError:
            return
        self.check(self.run(transformed, *to_gpu(copy.deepcopy(args), self.cupy)), expected,
                   what)

    def check(self, got, expected, what):
        if self.plain_error is not None and _host_arrays(got):
            pytest.skip(f"the plain call fails on device arrays too: {self.plain_error}")
        assert_same(got, expected, what, self.cupy)


# ---------------------------------------------------------------- 1. the rule sweep

SWEEP_LINES = [pytest.param(expr, domain, id=spelling)
               for spelling, expr, domain in edges.SWEEP]


@pytest.mark.parametrize("expr, domain", SWEEP_LINES)
def test_rule_on_device(expr, domain, cupy):
    if "np.random" in expr and cupy is real_cupy:
        pytest.skip("np.random on cupy arrays draws from cupy's generator: other numbers")
    params, make = edges.DOMAINS[domain]
    rng = np.random.default_rng(sum(map(ord, expr)))
    f = edges.define(params, f"({expr},)")
    args = make(rng)
    expected = f(*copy.deepcopy(args))
    device = Device(cupy, f, args)
    device.check_plain(expected)
    n = len(args)
    u = tree_map(lambda o: rng.standard_normal(np.shape(o)), expected)
    v = tuple(rng.standard_normal(np.shape(a)) if np.ndim(a) else 1.0 for a in args)
    device.same(tp.jit(f), args, "jit")
    if not any(isinstance(a, np.ndarray) for a in args):
        return                  # Python numbers in, nothing on the device to follow
    try:
        expected_grad = tp.grad(edges._scalarized(f, u, n), argnums=tuple(range(n)))(
            *copy.deepcopy(args))
        expected_jvp = tp.jvp(f, copy.deepcopy(args), v)
    except tp.TransformError:
        return
    grad = tp.grad(edges._scalarized(f, to_gpu(u, cupy), n), argnums=tuple(range(n)))
    device.check(device.run(grad, *to_gpu(args, cupy)), expected_grad, "gradient")
    device.check(device.run(tp.jvp, f, to_gpu(args, cupy), to_gpu(v, cupy)), expected_jvp,
                 "jvp")


# ---------------------------------------------------------------- 2. random programs

def _program_checks(case):
    """(name, check(args, move), which arguments): `move` puts the tangents where the
    arguments are."""
    f, program = case.f, case.program
    grad_f = tp.grad(f, argnums=tuple(range(len(program.args))))
    grad_x = tp.grad(f)
    x_only = (case.x_direction,) + tuple(tree_map(lambda leaf: 0.0 * leaf, a)
                                         for a in program.args[1:])
    jitted, jitted_grad = tp.jit(f), tp.jit(grad_f)
    batched = tp.vmap(f, in_axes=program.in_axes)
    batched_grad = tp.vmap(grad_f, in_axes=program.in_axes)
    return [
        ("grad", lambda a, move: grad_f(*a), program.args),
        ("jvp", lambda a, move: tp.jvp(f, a, move(case.tangents)), program.args),
        ("jvp(grad)", lambda a, move: tp.jvp(grad_x, a, move(x_only)), program.args),
        ("jit", lambda a, move: jitted(*a), program.args),
        ("jit(grad)", lambda a, move: jitted_grad(*a), program.args),
        ("vmap", lambda a, move: batched(*a), program.batch),
        ("vmap(grad)", lambda a, move: batched_grad(*a), program.batch),
    ]


# the generator's programs that run outside any mapping (its collective programs have
# values only under vmap or pmap, which the checks below run on plain f)
ORDINARY_SEEDS = [s for s in range(2 * PROGRAM_COUNT) if not gen.writes_collectives(s)]


@pytest.mark.parametrize("seed", ORDINARY_SEEDS[:PROGRAM_COUNT])
def test_random_program_on_device(seed, cupy):
    program = gen.generate_program(seed)
    case = gen.Case(program, tag=f"device{seed}")
    try:
        device = Device(cupy, case.f, program.args)
        device.check_plain(case.f(*copy.deepcopy(program.args)))
        for name, check, args in _program_checks(case):
            try:
                expected = check(copy.deepcopy(args), lambda t: t)
            except tp.TransformError:
                continue
            got = device.run(check, to_gpu(copy.deepcopy(args), cupy), lambda t: to_gpu(t, cupy))
            device.check(got, expected, f"seed {seed}: {name}")
    finally:
        case.close()


# ---------------------------------------------------------------- 3. user programs

USER_PROGRAMS = ["gaussian_process", "rnn", "lstm", "hmm_em", "fluidsim", "ode_net", "convnet",
                 "negative_binomial", "logistic_regression", "model_object_methods", "gmm",
                 "ode_net_scipy"]


@pytest.mark.parametrize("name", USER_PROGRAMS)
def test_user_program_on_device(name, cupy):
    mod = load(name)
    args = mod.make_args(np.random.default_rng(5))
    device = Device(cupy, mod.objective, args)
    device.check_plain(mod.objective(*copy.deepcopy(args)))
    device.same(tp.grad(mod.objective, argnums=0), args, f"{name}: gradient")


# ---------------------------------------------------------------- 4. the API's entry points

DATA = np.random.default_rng(11).standard_normal((5, 3))


def _mlp_like(x):
    h = np.tanh(x @ np.ones((3, 2)) + np.linspace(0.0, 1.0, 2))   # arrays made from nothing
    return np.sum(h ** 2)


def _columns(x):
    return np.sin(x) * np.linspace(1.0, 2.0, 3)


def _entry_points(cupy, on):
    """(name, call) for each way in: on=False gives the numpy reference."""
    move = (lambda t: to_gpu(t, cupy)) if on else (lambda t: t)
    x, rows = move(DATA), move(np.random.default_rng(12).standard_normal((4, 5, 3)))
    data = move(DATA[:, 0])

    def scaled(scale):                     # a closed-over array: on the device, or not
        return np.sum(np.sin(scale * data))
    return [
        ("grad", lambda: tp.grad(_mlp_like)(x)),
        ("value_and_grad", lambda: tp.value_and_grad(_mlp_like)(x)),
        ("grad of a float, device array closed over", lambda: tp.grad(scaled)(0.7)),
        ("vjp", lambda: tp.vjp(_columns, x[0])[1](x[1])),
        ("jvp", lambda: tp.jvp(_columns, (x[0],), (x[1],))),
        ("jacrev", lambda: tp.jacrev(_columns)(x[0])),
        ("jacfwd", lambda: tp.jacfwd(_columns)(x[0])),
        ("hessian", lambda: tp.hessian(_mlp_like)(x)),
        ("vmap(grad)", lambda: tp.vmap(tp.grad(_mlp_like))(rows)),
        ("jit(grad)", lambda: tp.jit(tp.grad(_mlp_like))(x)),
        ("grad(jit)", lambda: tp.grad(tp.jit(_mlp_like))(x)),
    ]


def test_every_entry_point_on_device(cupy):
    """User code that makes arrays from nothing (np.ones, np.linspace) runs on the device
    under every transformation: the code transformed for device arguments, or for a device
    array it closes over, binds np to cupy."""
    for (name, on_host), (_, on_device) in zip(_entry_points(cupy, False),
                                              _entry_points(cupy, True)):
        expected, got = on_host(), on_device()
        if name.startswith("grad of a float"):
            np.testing.assert_allclose(got, expected, rtol=RTOL)
            continue
        assert_same(got, expected, name, cupy)


def test_numpy_arguments_still_run_on_numpy(cupy):
    """With cupy imported, numpy arguments keep numpy code: same results, numpy arrays."""
    got = tp.grad(_mlp_like)(DATA)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, tp.grad(_mlp_like)(DATA.copy()), rtol=0)


# ---------------------------------------------------------------- 5. pmap over GPUs

def test_pmap_over_gpus_on_the_stand_in(monkeypatch):
    """pmap(backend="gpu") end to end on two stand-in GPUs, NCCL replaced by the host-memory
    stand-in of tests/test_pmap_nccl.py: shards stay device arrays, gathering them and the
    gradient through the devices equal the virtual CPU devices' (on an H100 this path
    gathered its result through np.asarray, which cupy refuses)."""
    module = with_gpus(strict_cupy(), 2, FakeNccl())
    monkeypatch.setitem(sys.modules, "cupy", module)
    monkeypatch.setitem(sys.modules, "cupy.cuda", module.cuda)
    monkeypatch.setattr(runtime.backend, "_cupy", module)
    monkeypatch.setattr(runtime.backend, "_cupy_checked", True)
    monkeypatch.setattr(runtime.backend, "_gpus", 2)
    monkeypatch.setattr(rt_nccl, "_COMMUNICATORS", {})
    x = np.random.default_rng(13).standard_normal((2, 6))

    def f(v):
        return np.sin(v) / tp.psum(np.sum(v ** 2), "i") + tp.all_gather(v, "i")[0]
    got = tp.pmap(f, "i", backend="gpu")(x)
    assert all(type(s) is module.ndarray for s in got.shards)
    np.testing.assert_allclose(np.asarray(got), np.asarray(tp.pmap(f, "i")(x)), rtol=1e-12)
    grad_gpu = tp.grad(lambda v: np.sum(tp.pmap(f, "i", backend="gpu")(v)))(x)
    grad_cpu = tp.grad(lambda v: np.sum(tp.pmap(f, "i")(v)))(x)
    np.testing.assert_allclose(to_host(grad_gpu, module), grad_cpu, rtol=1e-10)
