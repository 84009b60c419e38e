#!/usr/bin/env python
"""Benchmarks: tp.grad against hand-written NumPy backprop, autograd and jax.jit(jax.grad).

A script, not a test (pytest does not collect it: no test_ prefix, no test_ functions):

    python tests/benchmarks/bench.py            # full run, about 2-3 minutes
    python tests/benchmarks/bench.py --quick    # fewer repeats, about 20 seconds
    python tests/benchmarks/bench.py --threads 0   # leave BLAS/XLA thread defaults alone
    python tests/benchmarks/bench.py --clock cpu   # CPU time of this process, not wall time

What it measures (docs/benchmarks.md has the numbers and notes):

  1. MLP 784-512-512-10, tanh hidden layers, mean squared error, batch 128, float64 and
     float32: tp.grad(loss) vs a hand-written NumPy backprop of the same loss.
     Target: ratio <= 1.10. autograd.grad and jax.jit(jax.grad) are extra columns.
  2. Tiny MLP 10-32-32-1, batch 8: ratio to hand NumPy <= 1.5, and faster than autograd.
  3. First transformation of the MLP loss: a fresh function (new code object, transpile's
     cache cleared), from tp.grad(loss) to the first result, minus one steady-state call.
     Target: <= 50 ms. The jax column is jit's first call (trace + compile), same way.
  4. Per-call overhead of tp.grad(f) for f(x) = x * x on a Python float, in microseconds,
     against calling the generated entry function directly.
  5. Hessian of f(x) = sum(tanh(A @ x)), x of size 100 and 500 (A square, a constant of
     f): tp.hessian(f) vs the hand-derived A.T @ diag(-2 t (1 - t^2)) @ A, t = tanh(A x).
     Target: ratio <= 1.5. autograd.hessian and jax.jit(jax.jacfwd(jax.jacrev)) are extra
     columns.
  6. jvp of the MLP loss of 1. (784-512-512-10, batch 128, float64) along a random
     direction in parameter space: tp.jvp(loss, (params, x, y), (dparams, 0, 0)) vs a
     hand-written forward-mode pass. Target: ratio <= 1.2. autograd.make_jvp and
     jax.jit(jax.jvp) (same call, same zero tangents) are extra columns.

  7. vmap (issue 3): `tp.vmap(predict, in_axes=(None, 0))` of a per-example MLP
     784-512-512-10 (tanh) on a batch of 256 vs the hand-batched NumPy version
     (target <= 1.2); per-example gradients of the per-example MLP loss (784-512-512-10,
     batch 32) by `tp.vmap(tp.grad(loss), in_axes=(None, 0, 0))` vs a Python loop over
     `tp.grad(loss)` (target: >= 10x faster; the "hand numpy" column is that loop) and
     jax.jit(jax.vmap(jax.grad)); `tp.vmap(relu_or_square)` on 10^6 elements vs a
     hand-written np.where (target <= 1.5).
  8. tp.random: uniform and normal, 10^6 float64 draws, against numpy's Generator (another
     generator: what a numpy user pays today; target: at most 3x) and jax.random under jit
     (checked bit-identical first).
  9. Where cupy sees a GPU (--only gpu; docs/benchmarks.md#gpu-only-gpu): jit's fused
     kernels against the device copy floor, grad and jit(grad) of the MLP and of the sine
     loop against hand-written backprop on cupy arrays, vmap(grad), pmap's psum over NCCL;
     jax on the GPU as the extra column.

Method: every competitor is warmed up, then timed in interleaved rounds (the order rotates
each round); one sample is a loop of calls long enough to dwarf the timer, the garbage
collector is off while sampling (as timeit does). Times are medians over rounds; ratios are
medians of the per-round ratios (paired samples, robust to a noisy shared machine). Every
competitor runs with one BLAS/XLA thread by default (--threads N to change, --threads 0 to
leave the environment alone): on a small shared machine a multi-threaded OpenBLAS stalls
whenever a neighbour takes a core, which swamps the differences measured here. The header
prints the settings in force and the load average (other work on the machine). Gradients of
every competitor are checked against the hand-written ones before timing (Hessians and
jvps too); the script exits with status 1 if transpile's do not match.
"""
import argparse
import gc
import glob
import itertools
import linecache
import os
import platform
import statistics
import sys
import time


def _early_threads(argv):
    """--threads N (default 1; 0 leaves the environment alone) must take effect before numpy
    (OpenBLAS) and jax (XLA) are imported, so it is read here, not by argparse."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


if __name__ == "__main__" and _early_threads(sys.argv[1:]) not in ("0", ""):
    _n = _early_threads(sys.argv[1:])
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n
    if _n == "1":
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false"
                                   " intra_op_parallelism_threads=1").strip()

import numpy as np  # noqa: E402

import runtime.kernels as rt_kernels  # noqa: E402
import transpile as tp  # noqa: E402
import transpile.api  # noqa: E402

try:
    import autograd
    import autograd.numpy as anp
except Exception:  # pragma: no cover - optional competitor
    autograd = anp = None

try:
    import jax
    jax.config.update("jax_enable_x64", True)  # float64 must stay float64 in jax too
    import jax.numpy as jnp
except Exception:  # pragma: no cover - optional competitor
    jax = jnp = None


# The loss, written the way a user writes it. The same text is compiled against numpy (for
# transpile), autograd.numpy and jax.numpy, so every competitor runs exactly this math.
LOSS_SRC = '''\
def loss(params, x, y):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    pred = x @ W + b
    return np.mean((pred - y) ** 2)
'''

SQUARE_SRC = '''\
def square(x):
    return x * x
'''

HESSIAN_SRC = '''\
def tanh_sum(x):
    return np.sum(np.tanh(A @ x))
'''

PREDICT_SRC = '''\
def predict(params, input_vec):
    for W, b in params:
        input_vec = np.tanh(np.dot(W, input_vec) + b)
    return input_vec
'''

EXAMPLE_LOSS_SRC = '''\
def example_loss(params, x, y):
    for W, b in params[:-1]:
        x = np.tanh(np.dot(W, x) + b)
    W, b = params[-1]
    pred = np.dot(W, x) + b
    return np.mean((pred - y) ** 2)
'''

RELU_SRC = '''\
def relu_or_square(x):
    if x > 0:
        return x * x
    return 0.1 * x
'''

_counter = itertools.count()


def compile_fn(src, name, np_module, env=None):
    """A fresh function object (new code object, new file name) compiled from `src`.

    The text is registered in linecache, so inspect.getsource (and transpile) can read it.
    `env` adds globals (constants of the function, such as a matrix).
    """
    filename = f"<bench-{name}-{next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"np": np_module, "__name__": "bench_generated", **(env or {})}
    exec(compile(src, filename, "exec"), ns)  # noqa: S102
    return ns[name]


# ---------------------------------------------------------------------------- hand-written
def hand_grad(params, x, y):
    """d loss / d params by hand: the backprop a careful engineer writes for LOSS_SRC."""
    hs = [x]                          # inputs of each layer
    h = x
    for W, b in params[:-1]:
        z = h @ W
        z += b
        h = np.tanh(z, out=z)
        hs.append(h)
    W, b = params[-1]
    d = h @ W                         # d becomes dL/dpred = 2 (pred - y) / size
    d += b
    d -= y
    d *= 2.0 / d.size
    grads = [None] * len(params)
    for layer in range(len(params) - 1, -1, -1):
        h = hs[layer]
        grads[layer] = (h.T @ d, d.sum(axis=0))
        if layer == 0:
            break                     # no gradient for the input batch
        dh = d @ params[layer][0].T
        t = h * h                     # tanh' = 1 - h^2, h = output of the layer below
        np.subtract(1.0, t, out=t)
        dh *= t
        d = dh
    return grads


def hand_square_grad(x):
    return 2.0 * x


def hand_hessian(A, x):
    """Hessian of sum(tanh(A x)) by hand: A.T @ diag(-2 t (1 - t^2)) @ A, t = tanh(A x)."""
    t = np.tanh(A @ x)
    d = t * t
    np.subtract(1.0, d, out=d)
    d *= t
    d *= -2.0
    return A.T @ (d[:, None] * A)


def hand_jvp(params, x, y, dparams):
    """(loss, d loss) along dparams, by hand: forward mode for LOSS_SRC with x, y fixed."""
    h, dh = x, None
    for (W, b), (dW, db) in zip(params[:-1], dparams[:-1]):
        z = h @ W
        z += b
        dz = h @ dW                   # the input batch has no tangent: no dh @ W on layer 0
        if dh is not None:
            dz += dh @ W
        dz += db
        h = np.tanh(z, out=z)
        t = h * h                     # tanh' = 1 - h^2
        np.subtract(1.0, t, out=t)
        dz *= t
        dh = dz
    W, b = params[-1]
    dW, db = dparams[-1]
    r = h @ W                         # r becomes pred - y
    r += b
    r -= y
    dr = h @ dW
    dr += dh @ W
    dr += db
    size = r.size
    r = r.reshape(-1)
    return float(r @ r) / size, 2.0 * float(r @ dr.reshape(-1)) / size


# ---------------------------------------------------------------------------- data
def make_problem(sizes, batch, dtype, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        W = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype)
        b = (0.1 * rng.standard_normal(n_out)).astype(dtype)
        params.append((W, b))
    x = rng.standard_normal((batch, sizes[0])).astype(dtype)
    y = rng.standard_normal((batch, sizes[-1])).astype(dtype)
    return params, x, y


def to_jax(params, x, y):
    return ([(jnp.asarray(W), jnp.asarray(b)) for W, b in params], jnp.asarray(x),
            jnp.asarray(y))


def leaves(tree):
    if isinstance(tree, (list, tuple)):
        return [leaf for t in tree for leaf in leaves(t)]
    return [tree]


def grads_match(got, want, dtype):
    """Same structure, shapes and dtype, and allclose leaf by leaf."""
    g, w = leaves(got), leaves(want)
    if len(g) != len(w):
        return False, f"{len(g)} leaves, expected {len(w)}"
    rtol = 1e-9 if dtype == np.float64 else 2e-4
    for i, (a, b) in enumerate(zip(g, w)):
        a = np.asarray(a)
        if a.shape != b.shape:
            return False, f"leaf {i}: shape {a.shape}, expected {b.shape}"
        if a.dtype != b.dtype:
            return False, f"leaf {i}: dtype {a.dtype}, expected {b.dtype}"
        atol = rtol * float(np.max(np.abs(b)))
        if not np.allclose(a, b, rtol=rtol, atol=atol):
            err = float(np.max(np.abs(a.astype(np.float64) - b)))
            return False, f"leaf {i}: max abs error {err:.3g}"
    return True, "ok"


# ---------------------------------------------------------------------------- timing
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = time.perf_counter


def clock():
    """The clock every measurement reads: wall time by default, or with --clock cpu this
    process's CPU time (all threads, user + system), which other processes cannot inflate
    by taking the CPU away; use it with --threads 1 (idle BLAS threads spin)."""
    return _clock()

def _calibrate(fn, target_s):
    """Calls per sample so that one sample lasts about target_s."""
    n = 1
    while True:
        t0 = clock()
        for _ in range(n):
            fn()
        dt = clock() - t0
        if dt >= target_s / 4 or n >= 1 << 20:
            return max(1, int(round(n * target_s / max(dt, 1e-9))))
        n *= 4


def measure(fns, rounds, target_s):
    """{name: per-call times, one per round}, competitors interleaved round by round."""
    names = list(fns)
    for name in names:                   # warm up: caches, BLAS buffers, jit compilation
        for _ in range(3):
            fns[name]()
    loops = {name: _calibrate(fns[name], target_s) for name in names}
    samples = {name: [] for name in names}
    gc_was_enabled = gc.isenabled()
    try:
        for r in range(rounds):
            k = r % len(names)
            for name in names[k:] + names[:k]:   # rotate who goes first
                fn, n = fns[name], loops[name]
                gc.disable()
                t0 = clock()
                for _ in range(n):
                    fn()
                dt = clock() - t0
                if gc_was_enabled:
                    gc.enable()
                samples[name].append(dt / n)
    finally:
        if gc_was_enabled:
            gc.enable()
    return samples


def med(xs):
    return statistics.median(xs)


def paired_ratio(a, b):
    return med([x / y for x, y in zip(a, b)])


# ---------------------------------------------------------------------------- benchmarks
class Row:
    def __init__(self, bench, dtype, tp_ms=None, hand_ms=None, ratio=None, ag_ms=None,
                 jax_ms=None, target="", met=None):
        self.cells = [bench, dtype, tp_ms, hand_ms, ratio, ag_ms, jax_ms, target,
                      "" if met is None else ("yes" if met else "NO")]


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def competitors(sizes, batch, dtype, check=True):
    """Zero-argument callables for each competitor, after checking their gradients."""
    params, x, y = make_problem(sizes, batch, dtype)
    loss = compile_fn(LOSS_SRC, "loss", np)
    g = tp.grad(loss)
    want = hand_grad(params, x, y)
    got = g(params, x, y)
    name = f"MLP {'-'.join(map(str, sizes))} batch {batch} {np.dtype(dtype).name}"
    ok, why = grads_match(got, want, dtype)
    if not ok:
        fail(f"{name}: tp.grad does not match the hand-written gradient ({why})")
    print(f"check {name}: tp.grad matches hand-written numpy backprop (np.allclose, "
          f"{len(leaves(want))} arrays)", flush=True)
    fns = {"tp": lambda: g(params, x, y), "hand": lambda: hand_grad(params, x, y)}
    if autograd is not None:
        ag = autograd.grad(compile_fn(LOSS_SRC, "loss", anp))
        ok, why = grads_match(ag(params, x, y), want, dtype)
        print(f"check {name}: autograd {'matches' if ok else 'DOES NOT MATCH: ' + why}")
        fns["autograd"] = lambda: ag(params, x, y)
    if jax is not None:
        jg = jax.jit(jax.grad(compile_fn(LOSS_SRC, "loss", jnp)))
        jp, jx, jy = to_jax(params, x, y)
        jgot = jax.tree_util.tree_map(np.asarray, jg(jp, jx, jy))
        ok, why = grads_match([tuple(t) for t in jgot], want, dtype)
        print(f"check {name}: jax.jit(jax.grad) "
              f"{'matches' if ok else 'DOES NOT MATCH: ' + why}")
        fns["jax"] = lambda: jax.block_until_ready(jg(jp, jx, jy))
    return fns


def bench_mlp(label, sizes, batch, dtype, rounds, target_s, target_ratio, vs_autograd):
    fns = competitors(sizes, batch, dtype)
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    met = ratio <= target_ratio
    target = f"ratio <= {target_ratio:g}"
    if vs_autograd and "autograd" in s:
        met = met and ms["tp"] < ms["autograd"]
        target += ", < autograd"
    return Row(label, np.dtype(dtype).name, ms["tp"], ms["hand"], ratio, ms.get("autograd"),
               ms.get("jax"), target, met)


def _first_result_ms(make, call):
    """ms from make() to the first result of call(made), minus one steady call.

    The steady call is the median of five calls right after, so both sides of the
    subtraction see the same machine load.
    """
    gc.collect()
    t0 = clock()
    made = make()
    call(made)
    first = clock() - t0
    steady = []
    for _ in range(5):
        t0 = clock()
        call(made)
        steady.append(clock() - t0)
    return 1e3 * (first - med(steady))


def _jax_first_ms(params, x, y, reps):
    """First-result times of jax.jit(jax.grad(loss)) on fresh functions ([] without jax)."""
    if jax is None:
        return []
    jp, jx, jy = to_jax(params, x, y)
    return [_first_result_ms(lambda: jax.jit(jax.grad(compile_fn(LOSS_SRC, "loss", jnp))),
                             lambda g: jax.block_until_ready(g(jp, jx, jy)))
            for _ in range(max(3, reps // 2))]


def bench_first_transform(sizes, batch, reps):
    """Median of `reps` times: fresh function, cleared cache, tp.grad(f)(...) first result."""
    params, x, y = make_problem(sizes, batch, np.float64)

    def make_tp():
        loss = compile_fn(LOSS_SRC, "loss", np)      # new code object: a new cache key
        transpile.api._CACHE.clear()
        return tp.grad(loss)

    times = [_first_result_ms(make_tp, lambda g: g(params, x, y)) for _ in range(reps + 1)]
    cold, times = times[0], times[1:]                 # the first one pays for imports
    jax_times = _jax_first_ms(params, x, y, reps)
    gen_ms = []                                       # the code generation alone
    for _ in range(reps):
        g = make_tp()
        t0 = clock()
        g.generated()
        gen_ms.append(1e3 * (clock() - t0))
    tp_ms = med(times)
    return Row(f"first transform MLP {'-'.join(map(str, sizes))}", "float64", tp_ms,
               jax_ms=med(jax_times) if jax_times else None, target="<= 50 ms",
               met=tp_ms <= 50.0), times, cold, med(gen_ms)


def bench_overhead(rounds, target_s):
    square = compile_fn(SQUARE_SRC, "square", np)
    g = tp.grad(square)
    entry = g.generated().entry
    if g(3.0) != 6.0 or entry(3.0) != 6.0:
        fail(f"tp.grad(x * x)(3.0) = {g(3.0)!r}, expected 6.0")
    fns = {"tp": lambda: g(3.0), "entry": lambda: entry(3.0),
           "plain": lambda: hand_square_grad(3.0)}
    if autograd is not None:
        ag = autograd.grad(compile_fn(SQUARE_SRC, "square", anp))
        fns["autograd"] = lambda: ag(3.0)
    if jax is not None:
        jg = jax.jit(jax.grad(compile_fn(SQUARE_SRC, "square", jnp)))
        fns["jax"] = lambda: jg(3.0).block_until_ready()
    s = measure(fns, rounds, target_s)
    us = {k: 1e6 * med(v) for k, v in s.items()}
    row = Row("call overhead x*x [us]: tp.grad vs entry", "float", us["tp"], us["entry"],
              paired_ratio(s["tp"], s["entry"]), us.get("autograd"), us.get("jax"),
              "report", None)
    return row, us


def bench_hessian(n, rounds, target_s, target_ratio=1.5):
    """tp.hessian of sum(tanh(A x)) against the hand-derived Hessian, x of size n."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)
    name = f"Hessian sum(tanh(A x)), n={n}"
    want = hand_hessian(A, x)
    h = tp.hessian(compile_fn(HESSIAN_SRC, "tanh_sum", np, {"A": A}))
    got = h(x)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-10,
                                                  atol=1e-12 * np.max(np.abs(want))):
        fail(f"{name}: tp.hessian does not match the hand-derived Hessian")
    print(f"check {name}: tp.hessian matches the hand-derived Hessian (np.allclose, shape "
          f"{want.shape})", flush=True)
    fns = {"tp": lambda: h(x), "hand": lambda: hand_hessian(A, x)}
    if autograd is not None:
        ah = autograd.hessian(compile_fn(HESSIAN_SRC, "tanh_sum", anp, {"A": A}))
        ok = np.allclose(ah(x), want, rtol=1e-10, atol=1e-12 * np.max(np.abs(want)))
        print(f"check {name}: autograd.hessian {'matches' if ok else 'DOES NOT MATCH'}")
        fns["autograd"] = lambda: ah(x)
    if jax is not None:
        jf = compile_fn(HESSIAN_SRC, "tanh_sum", jnp, {"A": jnp.asarray(A)})
        jh = jax.jit(jax.jacfwd(jax.jacrev(jf)))
        jx = jnp.asarray(x)
        ok = np.allclose(np.asarray(jh(jx)), want, rtol=1e-10,
                         atol=1e-12 * np.max(np.abs(want)))
        print(f"check {name}: jax.jit(jax.jacfwd(jax.jacrev)) "
              f"{'matches' if ok else 'DOES NOT MATCH'}")
        fns["jax"] = lambda: jax.block_until_ready(jh(jx))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(name, "float64", ms["tp"], ms["hand"], ratio, ms.get("autograd"),
               ms.get("jax"), f"ratio <= {target_ratio:g}", ratio <= target_ratio)


def bench_jvp(sizes, batch, rounds, target_s, target_ratio=1.2):
    """tp.jvp of the MLP loss along a parameter direction against hand forward mode."""
    dtype = np.float64
    params, x, y = make_problem(sizes, batch, dtype)
    rng = np.random.default_rng(1)
    dparams = [(rng.standard_normal(W.shape).astype(dtype),
                rng.standard_normal(b.shape).astype(dtype)) for W, b in params]
    zx, zy = np.zeros_like(x), np.zeros_like(y)
    loss = compile_fn(LOSS_SRC, "loss", np)
    name = f"jvp MLP {'-'.join(map(str, sizes))}, batch {batch}"
    want = hand_jvp(params, x, y, dparams)
    got = tp.jvp(loss, (params, x, y), (dparams, zx, zy))
    if not np.allclose(got, want, rtol=1e-9, atol=0):
        fail(f"{name}: tp.jvp gives {got}, the hand-written forward mode {want}")
    print(f"check {name}: tp.jvp matches hand-written forward mode (value and tangent, "
          f"np.allclose)", flush=True)
    fns = {"tp": lambda: tp.jvp(loss, (params, x, y), (dparams, zx, zy)),
           "hand": lambda: hand_jvp(params, x, y, dparams)}
    if autograd is not None:
        ag = autograd.make_jvp(compile_fn(LOSS_SRC, "loss", anp), 0)
        ok = np.allclose(ag(params, x, y)(dparams), want, rtol=1e-9, atol=0)
        print(f"check {name}: autograd.make_jvp {'matches' if ok else 'DOES NOT MATCH'}")
        fns["autograd"] = lambda: ag(params, x, y)(dparams)
    if jax is not None:
        jloss = compile_fn(LOSS_SRC, "loss", jnp)
        jj = jax.jit(lambda p, x, y, dp, dx, dy: jax.jvp(jloss, (p, x, y), (dp, dx, dy)))
        jp, jx, jy = to_jax(params, x, y)
        jdp = [(jnp.asarray(W), jnp.asarray(b)) for W, b in dparams]
        jzx, jzy = jnp.zeros_like(jx), jnp.zeros_like(jy)
        ok = np.allclose([float(v) for v in jj(jp, jx, jy, jdp, jzx, jzy)], want, rtol=1e-9,
                         atol=0)
        print(f"check {name}: jax.jit(jax.jvp) {'matches' if ok else 'DOES NOT MATCH'}")
        fns["jax"] = lambda: jax.block_until_ready(jj(jp, jx, jy, jdp, jzx, jzy))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(name, "float64", ms["tp"], ms["hand"], ratio, ms.get("autograd"),
               ms.get("jax"), f"ratio <= {target_ratio:g}", ratio <= target_ratio)


# ---------------------------------------------------------------------------- report
def _per_example_problem(sizes, batch, seed=0):
    rng = np.random.default_rng(seed)
    params = [(rng.standard_normal((m, n)) / np.sqrt(n), 0.1 * rng.standard_normal(m))
              for n, m in zip(sizes[:-1], sizes[1:])]
    return params, rng.standard_normal((batch, sizes[0])), rng.standard_normal((batch, sizes[-1]))


def hand_predict_batched(params, xs):
    for W, b in params:
        xs = np.tanh(xs @ W.T + b)
    return xs


def bench_vmap_predict(sizes, batch, rounds, target_s, target_ratio=1.2):
    params, xs, _ = _per_example_problem(sizes, batch)
    f = tp.vmap(compile_fn(PREDICT_SRC, "predict", np), in_axes=(None, 0))
    want = hand_predict_batched(params, xs)
    if not np.allclose(f(params, xs), want, rtol=1e-12, atol=1e-12):
        fail("vmap(predict) does not match the hand-batched version")
    name = f"vmap(predict) {'-'.join(map(str, sizes))}, batch {batch}"
    print(f"check {name}: matches the hand-batched numpy version", flush=True)
    fns = {"tp": lambda: f(params, xs), "hand": lambda: hand_predict_batched(params, xs)}
    if jax is not None:
        jf = jax.jit(jax.vmap(compile_fn(PREDICT_SRC, "predict", jnp), in_axes=(None, 0)))
        jp = [(jnp.asarray(W), jnp.asarray(b)) for W, b in params]
        jx = jnp.asarray(xs)
        fns["jax"] = lambda: jax.block_until_ready(jf(jp, jx))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(name, "float64", ms["tp"], ms["hand"], ratio, None, ms.get("jax"),
               f"ratio <= {target_ratio:g}", ratio <= target_ratio)


def bench_per_example_grads(sizes, batch, rounds, target_s, target_speedup=10.0):
    """vmap(grad(loss)) against a Python loop of grad(loss) (the 'hand' column)."""
    params, xs, ys = _per_example_problem(sizes, batch, seed=1)
    loss = compile_fn(EXAMPLE_LOSS_SRC, "example_loss", np)
    g = tp.grad(loss)
    vg = tp.vmap(g, in_axes=(None, 0, 0))

    def looped():
        return [g(params, xs[i], ys[i]) for i in range(batch)]
    got, want = vg(params, xs, ys), looped()
    for k in range(batch):
        for (dW, db), (wW, wb) in zip([(W[k], b[k]) for W, b in got], want[k]):
            if not (np.allclose(dW, wW, rtol=1e-10, atol=1e-12) and
                    np.allclose(db, wb, rtol=1e-10, atol=1e-12)):
                fail("vmap(grad(loss)) does not match a loop over grad(loss)")
    name = f"per-example grads {'-'.join(map(str, sizes))}, batch {batch}"
    print(f"check {name}: vmap(grad) matches a loop over grad", flush=True)
    fns = {"tp": lambda: vg(params, xs, ys), "hand": looped}
    if jax is not None:
        jl = compile_fn(EXAMPLE_LOSS_SRC, "example_loss", jnp)
        jg = jax.jit(jax.vmap(jax.grad(jl), in_axes=(None, 0, 0)))
        jp = [(jnp.asarray(W), jnp.asarray(b)) for W, b in params]
        jx, jy = jnp.asarray(xs), jnp.asarray(ys)
        fns["jax"] = lambda: jax.block_until_ready(jg(jp, jx, jy))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(name + " (hand = loop of tp.grad)", "float64", ms["tp"], ms["hand"], ratio,
               None, ms.get("jax"), f"ratio <= {1 / target_speedup:g}",
               ratio <= 1 / target_speedup)


def bench_vmap_branch(size, rounds, target_s, target_ratio=1.5):
    x = np.random.default_rng(2).standard_normal(size)
    f = tp.vmap(compile_fn(RELU_SRC, "relu_or_square", np))

    def hand():
        return np.where(x > 0, x * x, 0.1 * x)
    if not np.array_equal(f(x), hand()):
        fail("vmap(relu_or_square) does not match np.where")
    name = f"vmap(relu_or_square), {size:.0e} elements"
    print(f"check {name}: matches np.where", flush=True)
    fns = {"tp": lambda: f(x), "hand": hand}
    if jax is not None:
        jx = jnp.asarray(x)
        jf = jax.jit(lambda v: jnp.where(v > 0, v * v, 0.1 * v))
        fns["jax"] = lambda: jax.block_until_ready(jf(jx))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(name + " (jax: jnp.where)", "float64", ms["tp"], ms["hand"], ratio, None,
               ms.get("jax"), f"ratio <= {target_ratio:g}", ratio <= target_ratio)


CHECKPOINT_SRC = """
def layer(w, x):
    return np.tanh(x @ w) + 0.1 * np.sin(x)

def net(ws, x, checkpointed):
    for w in ws:
        x = tp.checkpoint(layer)(w, x) if checkpointed else layer(w, x)
    return np.sum(x ** 2)

def net_checkpointed(ws, x):
    return net(ws, x, True)

def net_plain(ws, x):
    return net(ws, x, False)
"""


def bench_checkpoint(rounds, target_s, depth=20, width=256, target_ratio=1.8):
    """tp.checkpoint: reverse mode through 20 layers that keep only each layer's input and
    run its forward pass again in the backward pass, against the same gradient keeping
    every intermediate (the "hand" column); the peak memory of one call of each, traced."""
    import tracemalloc
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal((width, width)) / np.sqrt(width) for _ in range(depth)]
    x = rng.standard_normal((width, width))
    env = {"np": np, "tp": tp}
    checkpointed = tp.grad(compile_fn(CHECKPOINT_SRC, "net_checkpointed", np, env), argnums=1)
    plain = tp.grad(compile_fn(CHECKPOINT_SRC, "net_plain", np, env), argnums=1)
    if not np.allclose(checkpointed(ws, x), plain(ws, x), rtol=1e-12):
        fail("grad of the checkpointed net differs from the plain one")
    peaks = []
    for g in (checkpointed, plain):
        tracemalloc.start()
        g(ws, x)
        peaks.append(tracemalloc.get_traced_memory()[1] / 2 ** 20)
        tracemalloc.stop()
    name = (f"grad, {depth} checkpointed layers {width}x{width} (hand: not checkpointed; "
            f"peak {peaks[0]:.0f} vs {peaks[1]:.0f} MiB)")
    print(f"check {name}: matches the plain gradient", flush=True)
    fns = {"tp": lambda: checkpointed(ws, x), "hand": lambda: plain(ws, x)}
    if jax is not None:
        jws, jx = [jnp.asarray(w) for w in ws], jnp.asarray(x)

        def jnet(ws, x):
            for w in ws:
                x = jax.checkpoint(lambda w, x: jnp.tanh(x @ w) + 0.1 * jnp.sin(x))(w, x)
            return jnp.sum(x ** 2)
        jg = jax.jit(jax.grad(jnet, argnums=1))
        fns["jax"] = lambda: jax.block_until_ready(jg(jws, jx))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(name + " (jax: jax.checkpoint, jitted)", "float64", ms["tp"], ms["hand"], ratio,
               None, ms.get("jax"), f"ratio <= {target_ratio:g}", ratio <= target_ratio)


def bench_random(size, rounds, target_s, target_ratio=3.0):
    """tp.random draws against numpy's Generator (the hand column: a different generator,
    the cost a numpy user pays today) and jax.random under jit, same key, float64."""
    from transpile import random as tr
    key = tr.PRNGKey(0)
    rng = np.random.default_rng(0)
    rows = []
    for what, ours, hand, theirs in [
            ("uniform", lambda: tr.uniform(key, (size,)), lambda: rng.random(size),
             "uniform"),
            ("normal", lambda: tr.normal(key, (size,)), lambda: rng.standard_normal(size),
             "normal")]:
        fns = {"tp": ours, "hand": hand}
        if jax is not None:
            jkey = jax.random.PRNGKey(0)
            jf = jax.jit(lambda k, f=getattr(jax.random, theirs): f(k, (size,), jnp.float64))
            if not np.array_equal(np.asarray(jf(jkey)), ours()):
                fail(f"tp.random.{what} differs from jax.random.{theirs}")
            fns["jax"] = lambda jf=jf, jkey=jkey: jax.block_until_ready(jf(jkey))
        print(f"check tp.random.{what}: " + ("bit-identical to jax.random" if jax is not None
                                             else "jax not installed"), flush=True)
        s = measure(fns, rounds, target_s)
        ms = {k: 1e3 * med(v) for k, v in s.items()}
        ratio = paired_ratio(s["tp"], s["hand"])
        rows.append(Row(f"tp.random.{what}, {size:.0e} draws (hand: numpy Generator)",
                        "float64", ms["tp"], ms["hand"], ratio, None, ms.get("jax"),
                        f"ratio <= {target_ratio:g}", ratio <= target_ratio))
    return rows


def _conv_loss(w, x):
    return np.sum(tp.nn.conv(x, w, None, "SAME") ** 2)


def _hand_conv_grad(w, x):
    """The other way to write a convolution: one matrix product per window offset on
    shifted views (no im2col copy), forward and backward, written out."""
    kh, kw, _, _ = w.shape
    n, h, wd, _ = x.shape
    ph, pw = (kh - 1) // 2, (kw - 1) // 2
    xp = np.pad(x, ((0, 0), (ph, kh - 1 - ph), (pw, kw - 1 - pw), (0, 0)))
    out = sum(xp[:, i:i + h, j:j + wd] @ w[i, j] for i in range(kh) for j in range(kw))
    g = 2.0 * out
    dw = np.empty_like(w)
    flat_g = g.reshape(-1, g.shape[-1])
    for i in range(kh):
        for j in range(kw):
            dw[i, j] = xp[:, i:i + h, j:j + wd].reshape(-1, x.shape[-1]).T @ flat_g
    return dw


def bench_conv(rounds, target_s, batch=64, size=28, cin=8, cout=16, target_ratio=1.5):
    """grad of sum(conv(x, W) ** 2) with respect to W: tp.nn.conv (im2col, one GEMM each
    way) against the shift-and-matmul form written by hand and jax.lax.conv under jit."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3, cin, cout))
    x = rng.standard_normal((batch, size, size, cin))
    g = tp.grad(_conv_loss)
    if not np.allclose(g(w, x), _hand_conv_grad(w, x), rtol=1e-9):
        fail("tp.grad of tp.nn.conv differs from the hand-written convolution gradient")
    fns = {"tp": lambda: g(w, x), "hand": lambda: _hand_conv_grad(w, x)}
    if jax is not None:
        def jloss(w, x):
            y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                             dimension_numbers=("NHWC", "HWIO", "NHWC"))
            return jnp.sum(y ** 2)
        jg = jax.jit(jax.grad(jloss))
        if not np.allclose(np.asarray(jg(w, x)), g(w, x), rtol=1e-9):
            fail("tp.grad of tp.nn.conv differs from jax.grad of lax.conv")
        fns["jax"] = lambda: jax.block_until_ready(jg(w, x))
    print("check conv gradient: equal to the hand-written one" +
          (" and to JAX's" if jax is not None else ""), flush=True)
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(f"grad of conv 3x3 SAME, {batch}x{size}x{size}x{cin} -> {cout} "
               "(hand: shift-and-matmul)", "float64", ms["tp"], ms["hand"], ratio, None,
               ms.get("jax"), f"ratio <= {target_ratio:g}", ratio <= target_ratio)


# ---------------------------------------------------------------------------- pmap rows
JAX_PMAP_SRC = """
import json, os, statistics, sys, time
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
out = {}
def timed(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)
for n, nbytes, reps in json.loads(sys.argv[1]):
    x = jax.pmap(lambda v: v)(np.random.default_rng(0).standard_normal((n, nbytes // 8)))
    f = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")
    out[f"{n},{nbytes}"] = timed(lambda: jax.block_until_ready(f(x)), reps)
tiny = jax.pmap(lambda v: v + 1.0)
v = np.arange(4.0)
out["tiny"] = timed(lambda: jax.block_until_ready(tiny(v)), 200)
print(json.dumps(out))
"""


MPI_ALLREDUCE_SRC = """
import json, statistics, sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
out = {}
for nbytes, reps in json.loads(sys.argv[1]):
    x = np.random.default_rng(comm.Get_rank()).standard_normal(nbytes // 8)
    y = np.empty_like(x)
    comm.Allreduce(x, y)
    ts = []
    for _ in range(reps):
        comm.Barrier()
        t = time.perf_counter(); comm.Allreduce(x, y); ts.append(time.perf_counter() - t)
    out[str(nbytes)] = statistics.median(ts)
if comm.Get_rank() == 0:
    print(json.dumps(out))
"""


def _mpi_allreduce_times(ranks, sizes):
    """MPI Allreduce medians (s) with `ranks` processes under mpiexec; {} without mpi4py."""
    import json
    import shutil
    import subprocess
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    mpiexec = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if mpiexec is None:
        return {}
    try:
        done = subprocess.run([mpiexec, "-n", str(ranks), sys.executable, "-c",
                               MPI_ALLREDUCE_SRC, json.dumps(sizes)], capture_output=True,
                              text=True, timeout=900, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return {}


def _jax_pmap_times(cases):
    """jax.pmap times in a fresh process with 8 host devices (the XLA flag must come before
    jax starts); {} without jax."""
    import json
    import subprocess
    try:
        done = subprocess.run([sys.executable, "-c", JAX_PMAP_SRC, json.dumps(cases)],
                              capture_output=True, text=True, timeout=900, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return {}


def _median_time(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t = clock()
        fn()
        times.append(clock() - t)
    return statistics.median(times)


def _mlp_loss(params, x, y):
    for w, b in params[:-1]:
        x = np.maximum(x @ w + b, 0.0)
    w, b = params[-1]
    logits = x @ w + b
    logits = logits - np.max(logits, axis=1, keepdims=True)
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -np.mean(np.sum(logp * y, axis=1))


def _mlp_step(params, x, y):
    grads = tp.grad(_mlp_loss)(params, x, y)
    grads = tp.pmean(grads, "batch")
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]


def bench_pmap(quick):
    """psum latency and bandwidth over virtual CPU devices (hand: np.sum over the device
    axis of the gathered array; jax: jax.pmap psum on 8 host devices, another process;
    MPI Allreduce with as many mpiexec processes, in the target column),
    a data-parallel MLP step on 1, 2, 4 devices, and the dispatch cost of a tiny pmap."""
    rows, notes = [], []
    sizes = [(1 << 10, 200), (1 << 20, 30), (64 << 20, 3 if quick else 5)]
    cases = [(n, nbytes, reps) for n in (2, 4, 8) for nbytes, reps in sizes]
    jax_times = _jax_pmap_times(cases) if jax is not None else {}
    mpi_times = {n: _mpi_allreduce_times(n, [(b, r) for b, r in sizes]) for n in (2, 4, 8)}
    psum = tp.pmap(lambda v: tp.psum(v, "i"), axis_name="i")
    for n, nbytes, reps in cases:
        host = np.random.default_rng(0).standard_normal((n, nbytes // 8))
        x = tp.pmap(lambda v: v)(host)          # on the devices already, as JAX's is
        if not np.allclose(np.asarray(psum(x))[0], host.sum(0)):
            fail("pmap psum differs from numpy's sum")
        tp_s = _median_time(lambda: psum(x), reps)
        hand_s = _median_time(lambda: np.sum(host, axis=0), reps)
        jax_s = jax_times.get(f"{n},{nbytes}")
        mpi_s = mpi_times[n].get(str(nbytes))
        label = f"pmap psum, {n} devices x {_bytes(nbytes)}"
        rows.append(Row(label, "float64", 1e3 * tp_s, 1e3 * hand_s, tp_s / hand_s, None,
                        None if jax_s is None else 1e3 * jax_s,
                        f"{nbytes / tp_s / 1e9:.2f} GB/s per device"
                        + ("" if jax_s is None else f"; tp/jax {tp_s / jax_s:.2f}")
                        + ("" if mpi_s is None else f"; MPI Allreduce {1e3 * mpi_s:.3g} ms")))
    # data parallel training step, 784-512-512-10, batch 1024
    rng = np.random.default_rng(0)
    sizes_mlp = (784, 512, 512, 10)
    params = [(rng.standard_normal((m, k)) / np.sqrt(m), np.zeros(k))
              for m, k in zip(sizes_mlp[:-1], sizes_mlp[1:])]
    x = rng.standard_normal((1024, 784))
    y = np.eye(10)[rng.integers(0, 10, 1024)]
    step = tp.pmap(_mlp_step, "batch", in_axes=(None, 0, 0), out_axes=None)
    times = {}
    for n in (1, 2, 4):
        xs, ys = x.reshape(n, 1024 // n, 784), y.reshape(n, 1024 // n, 10)
        times[n] = _median_time(lambda: step(params, xs, ys), 3 if quick else 7)
    reference = tp.grad(_mlp_loss)(params, x, y)
    got = step(params, x.reshape(2, 512, 784), y.reshape(2, 512, 10))
    if not np.allclose(got[0][0], params[0][0] - 0.01 * reference[0][0], atol=1e-12):
        fail("data-parallel step differs from the whole-batch step")
    speed2 = times[1] / times[2]
    rows.append(Row("data-parallel MLP step 784-512-512-10, batch 1024: 1 / 2 / 4 devices "
                    "(ms)", "float64", 1e3 * times[2], 1e3 * times[1], times[2] / times[1],
                    None, None, f"2 devices {speed2:.2f}x, 4 devices "
                    f"{times[1] / times[4]:.2f}x (>= 1.6x on 2)", speed2 >= 1.6))
    notes.append("data-parallel step ms: " + ", ".join(f"{n} devices {1e3 * t:.1f}"
                                                        for n, t in times.items()))
    tiny = tp.pmap(lambda v: v + 1.0)
    v = np.arange(4.0)
    tiny_s = _median_time(lambda: tiny(v), 200)
    jax_tiny = jax_times.get("tiny")
    rows.append(Row("pmap dispatch, x + 1 on (4,), 4 devices", "float64", 1e3 * tiny_s,
                    None, None, None, None if jax_tiny is None else 1e3 * jax_tiny,
                    "" if jax_tiny is None else f"tp/jax {tiny_s / jax_tiny:.2f}"))
    return rows, notes


def _bytes(n):
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"


# ---------------------------------------------------------------------------- jit rows
SINE_SRC = '''\
def sine_loop(x):
    for _ in range(10):
        x = 0.5 * x + 0.1 * np.sin(x)
    return np.sum(x)
'''

WHILE_SRC = '''\
def decay(x, n):
    i = 0
    while i < n:
        x = 0.999 * x + 0.001 * np.sin(x)
        i = i + 1
    return x * x
'''

FUSED_SRC = '''\
def slow_f(x):
    return x * x + x * 2.0
'''


def hand_sine_grad(x):
    xs = []
    for _ in range(10):
        xs.append(x)
        x = 0.5 * x + 0.1 * np.sin(x)
    g = np.ones_like(x)
    for x in reversed(xs):
        g *= 0.5 + 0.1 * np.cos(x)
    return g


def _peak_mib(fn):
    """Peak traced allocation of one call, MiB (numpy reports its buffers to tracemalloc)."""
    import tracemalloc
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2 ** 20


def bench_jit_fused(rounds, target_s, n=5000, target_ratio=1.3):
    """jit(x * x + x * 2.0), float32 n x n, against the copy floor (np.copyto of the same
    size), plain numpy, hand-written in-place numpy, and the kernel without its pool."""
    x = np.random.default_rng(3).random((n, n), dtype=np.float32)
    f = compile_fn(FUSED_SRC, "slow_f", np)
    jf = tp.jit(f)
    jf_nopool = tp.jit(compile_fn(FUSED_SRC, "slow_f", np))
    if not np.allclose(jf(x), f(x), rtol=1e-6):
        fail("jit(x * x + x * 2.0) does not match numpy")
    jf_nopool(x)
    for k in jf_nopool.lower(x).kernels:
        jf_nopool.lower(x).env[k.name].pool.keep = 0       # a fresh buffer every call
    out, tmp = np.empty_like(x), np.empty_like(x)

    def inplace():
        np.multiply(x, x, out=out)
        np.multiply(x, 2.0, out=tmp)
        np.add(out, tmp, out=out)
    fns = {"tp": lambda: jf(x), "copy": lambda: np.copyto(out, x), "plain": lambda: f(x),
           "inplace": inplace, "nopool": lambda: jf_nopool(x)}
    if jax is not None:
        jx = jnp.asarray(x)
        jjf = jax.jit(compile_fn(FUSED_SRC, "slow_f", jnp))
        fns["jax"] = lambda: jax.block_until_ready(jjf(jx))
    name = f"jit x*x + x*2.0, {n}x{n} (hand = np.copyto floor)"
    print(f"check {name}: matches numpy; kernel: "
          f"{'numba loop' if rt_kernels.have_compiled_loops() else 'numpy fallback'}",
          flush=True)
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["copy"])
    extra = {k: paired_ratio(s[k], s["plain"]) for k in ("tp", "inplace", "nopool", "copy")}
    if "jax" in s:
        extra["jax"] = paired_ratio(s["jax"], s["plain"])
    return Row(name, "float32", ms["tp"], ms["copy"], ratio, None, ms.get("jax"),
               f"ratio <= {target_ratio:g}", ratio <= target_ratio), extra, ms


def bench_jit_mlp(label, sizes, batch, rounds, target_s, target_ratio):
    """jit(grad(loss)) of the MLP against hand-written backprop (and jax.jit(grad))."""
    fns = competitors(sizes, batch, np.float64)
    params, x, y = make_problem(sizes, batch, np.float64)
    jg = tp.jit(tp.grad(compile_fn(LOSS_SRC, "loss", np)))
    ok, why = grads_match(jg(params, x, y), hand_grad(params, x, y), np.float64)
    if not ok:
        fail(f"{label}: tp.jit(tp.grad) does not match the hand-written gradient ({why})")
    fns = {"tp": lambda: jg(params, x, y), "hand": fns["hand"],
           **({"jax": fns["jax"]} if "jax" in fns else {})}
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(label + " jit(grad)", "float64", ms["tp"], ms["hand"], ratio, None,
               ms.get("jax"), f"ratio <= {target_ratio:g}", ratio <= target_ratio)


def bench_jit_hessian(n, rounds, target_s, target_ratio=1.5):
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)
    want = hand_hessian(A, x)
    h = tp.jit(tp.hessian(compile_fn(HESSIAN_SRC, "tanh_sum", np, {"A": A})))
    if not np.allclose(h(x), want, rtol=1e-10, atol=1e-12 * np.max(np.abs(want))):
        fail(f"jit(hessian) n={n} does not match the hand-derived Hessian")
    fns = {"tp": lambda: h(x), "hand": lambda: hand_hessian(A, x)}
    if jax is not None:
        jf = compile_fn(HESSIAN_SRC, "tanh_sum", jnp, {"A": jnp.asarray(A)})
        jh = jax.jit(jax.jacfwd(jax.jacrev(jf)))
        jx = jnp.asarray(x)
        fns["jax"] = lambda: jax.block_until_ready(jh(jx))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(f"jit(hessian) sum(tanh(A x)), n={n}", "float64", ms["tp"], ms["hand"], ratio,
               None, ms.get("jax"), f"ratio <= {target_ratio:g}", ratio <= target_ratio)


def bench_jit_sine(rounds, target_s, n=1000):
    """grad of the 10-step sine loop, n x n: time and peak memory of hand-written backprop,
    tp.grad and tp.jit(tp.grad)."""
    x = np.random.default_rng(4).standard_normal((n, n))
    f = compile_fn(SINE_SRC, "sine_loop", np)
    g, jg = tp.grad(f), tp.jit(tp.grad(f))
    want = hand_sine_grad(x)
    for name, fn in (("tp.grad", g), ("tp.jit(tp.grad)", jg)):
        if not np.allclose(fn(x), want, rtol=1e-12):
            fail(f"{name} of the sine loop does not match the hand-written gradient")
    fns = {"tp": lambda: jg(x), "hand": lambda: hand_sine_grad(x), "grad": lambda: g(x)}
    if jax is not None:
        jjg = jax.jit(jax.grad(compile_fn(SINE_SRC, "sine_loop", jnp)))
        jx = jnp.asarray(x)
        fns["jax"] = lambda: jax.block_until_ready(jjg(jx))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    mem = {k: _peak_mib(fns[k]) for k in ("tp", "hand", "grad")}
    ratio = paired_ratio(s["tp"], s["hand"])
    target = ms.get("jax", ms["hand"])
    row = Row(f"jit(grad) of 10 sine steps, {n}x{n}", "float64", ms["tp"], ms["hand"], ratio,
              None, ms.get("jax"), "<= jax.jit time, <= hand memory",
              ms["tp"] <= target and mem["tp"] <= mem["hand"] * 1.05)
    return row, ms, mem


def bench_jit_while(rounds, target_s, trips=1000):
    """A scalar while loop under jit(grad): per-trip cost."""
    f = compile_fn(WHILE_SRC, "decay", np)
    jg = tp.jit(tp.grad(f), static_argnums=(1,))
    x = 0.7
    eps = 1e-6
    fd = (f(x + eps, trips) - f(x - eps, trips)) / (2 * eps)
    if not np.isclose(jg(x, trips), fd, rtol=1e-6):
        fail("jit(grad) of the while loop does not match finite differences")
    fns = {"tp": lambda: jg(x, trips), "hand": lambda: f(x, trips)}
    if jax is not None:
        def jax_decay(v):
            def body(i, v):
                return 0.999 * v + 0.001 * jnp.sin(v)
            v = jax.lax.fori_loop(0, trips, body, v)
            return v * v
        jjg = jax.jit(jax.grad(jax_decay))
        fns["jax"] = lambda: jax.block_until_ready(jjg(x))
    s = measure(fns, rounds, target_s)
    us = {k: 1e6 * med(v) / trips for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    return Row(f"jit(grad) scalar while loop, per trip [us] (hand = the loop itself)",
               "float", us["tp"], us["hand"], ratio, None, us.get("jax"),
               "<= 2x jax fori_loop" if "jax" in us else "report",
               us["tp"] <= 2 * us["jax"] if "jax" in us else None)


def bench_jit_first(sizes, batch, reps):
    """First call of tp.jit(tp.grad(loss)) (fresh function, caches cleared; it runs the
    general code), and the second (it specializes), each minus one steady call."""
    params, x, y = make_problem(sizes, batch, np.float64)
    first, second = [], []
    for _ in range(reps + 1):
        gc.collect()
        transpile.api._CACHE.clear()
        t0 = clock()
        g = tp.jit(tp.grad(compile_fn(LOSS_SRC, "loss", np)))
        g(params, x, y)
        t1 = clock()
        g(params, x, y)
        t2 = clock()
        steady = []
        for _ in range(5):
            t = clock()
            g(params, x, y)
            steady.append(clock() - t)
        first.append(1e3 * (t1 - t0 - med(steady)))
        second.append(1e3 * (t2 - t1 - med(steady)))
    first, second = first[1:], second[1:]          # the first pays for imports
    jax_times = _jax_first_ms(params, x, y, reps)
    ms = med(first)
    return Row(f"first call jit(grad) MLP {'-'.join(map(str, sizes))}", "float64", ms,
               jax_ms=med(jax_times) if jax_times else None, target="<= 50 ms",
               met=ms <= 50.0), med(second)


# ---------------------------------------------------------------------------- GPU rows
SELU_SRC = """\
def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)
"""


def bench_gpu(rounds, target_s):
    """The same programs on cupy arrays (one CUDA GPU): jit's fused kernels against the
    device copy floor and plain cupy, grad and jit(grad) of the MLP and of the sine loop
    against hand-written backprop on cupy, per-example gradients, and pmap's psum over NCCL.
    Every call is followed by a device synchronize (jax: block_until_ready), so a time is
    launch plus compute plus the wait."""
    import cupy
    sync = cupy.cuda.Device().synchronize
    gpu_jax = jax is not None and jax.default_backend() == "gpu"

    def timed(fn):
        def call():
            fn()
            sync()
        return call

    def jax_timed(fn):
        return lambda: jax.block_until_ready(fn())
    rows, notes = [], []
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    notes.append(f"GPU: {name}, cupy {cupy.__version__}, CUDA runtime "
                 f"{cupy.cuda.runtime.runtimeGetVersion()}; jax on "
                 f"{jax.default_backend() if jax else 'none'}")

    # 1. elementwise chains, fused into one kernel, float32 5000x5000
    x_host = np.random.default_rng(3).random((5000, 5000), dtype=np.float32) - 0.5
    x = cupy.asarray(x_host)
    for src, fname, label in ((FUSED_SRC, "slow_f", "x*x + x*2.0"),
                              (SELU_SRC, "selu", "selu")):
        f = compile_fn(src, fname, np)
        jf = tp.jit(f)
        got = cupy.asnumpy(jf(x))
        if not np.allclose(got, f(x_host), rtol=1e-5, atol=1e-6):
            fail(f"GPU jit({label}) does not match numpy")
        out = cupy.empty_like(x)
        fns = {"tp": timed(lambda: jf(x)), "copy": timed(lambda: cupy.copyto(out, x)),
               "plain": timed(lambda: f(x))}
        if gpu_jax:
            jx = jnp.asarray(x_host)
            jjf = jax.jit(compile_fn(src, fname, jnp))
            fns["jax"] = jax_timed(lambda: jjf(jx))
        s = measure(fns, rounds, target_s)
        ms = {k: 1e3 * med(v) for k, v in s.items()}
        ratio = paired_ratio(s["tp"], s["copy"])
        rows.append(Row(f"GPU jit {label}, 5000x5000 (hand = cupy.copyto floor)", "float32",
                        ms["tp"], ms["copy"], ratio, None, ms.get("jax"), "ratio <= 1.3",
                        ratio <= 1.3))
        notes.append(f"GPU {label}: plain cupy {ms['plain']:.3f} ms, tp.jit / plain cupy "
                     f"{paired_ratio(s['tp'], s['plain']):.2f}"
                     + (f", jax.jit / plain cupy {paired_ratio(s['jax'], s['plain']):.2f}"
                        if "jax" in s else ""))

    # 2. the MLP loss: grad and jit(grad) against hand-written backprop, all on cupy
    big = (784, 512, 512, 10)
    for dtype in (np.float32, np.float64):
        params_h, xb_h, yb_h = make_problem(big, 128, dtype)
        params = [(cupy.asarray(W), cupy.asarray(b)) for W, b in params_h]
        xb, yb = cupy.asarray(xb_h), cupy.asarray(yb_h)
        loss = compile_fn(LOSS_SRC, "loss", np)
        g, jg = tp.grad(loss), tp.jit(tp.grad(loss))
        want = hand_grad(params_h, xb_h, yb_h)
        for label, fn in (("grad", g), ("jit(grad)", jg)):
            got = [(cupy.asnumpy(a), cupy.asnumpy(b)) for a, b in fn(params, xb, yb)]
            ok, why = grads_match(got, want, dtype)
            if not ok:
                fail(f"GPU {label} of the MLP does not match hand backprop ({why})")
        fns = {"tp": timed(lambda: jg(params, xb, yb)),
               "hand": timed(lambda: hand_grad(params, xb, yb)),
               "grad": timed(lambda: g(params, xb, yb))}
        if gpu_jax:
            jp, jxb, jyb = to_jax(params_h, xb_h, yb_h)
            jjg = jax.jit(jax.grad(compile_fn(LOSS_SRC, "loss", jnp)))
            fns["jax"] = jax_timed(lambda: jjg(jp, jxb, jyb))
        s = measure(fns, rounds, target_s)
        ms = {k: 1e3 * med(v) for k, v in s.items()}
        ratio = paired_ratio(s["tp"], s["hand"])
        rows.append(Row("GPU MLP 784-512-512-10, batch 128 jit(grad)", np.dtype(dtype).name,
                        ms["tp"], ms["hand"], ratio, None, ms.get("jax"), "ratio <= 1.0",
                        ratio <= 1.0))
        notes.append(f"GPU MLP {np.dtype(dtype).name}: tp.grad without jit {ms['grad']:.3f} ms"
                     f" ({paired_ratio(s['grad'], s['hand']):.2f}x hand)")

    # 3. the 10-step sine loop, 1000x1000 float64
    xs_h = np.random.default_rng(4).standard_normal((1000, 1000))
    xs = cupy.asarray(xs_h)
    f = compile_fn(SINE_SRC, "sine_loop", np)
    g, jg = tp.grad(f), tp.jit(tp.grad(f))
    want = hand_sine_grad(xs_h)
    for label, fn in (("grad", g), ("jit(grad)", jg)):
        if not np.allclose(cupy.asnumpy(fn(xs)), want, rtol=1e-10):
            fail(f"GPU {label} of the sine loop does not match the hand-written gradient")
    fns = {"tp": timed(lambda: jg(xs)), "hand": timed(lambda: hand_sine_grad(xs)),
           "grad": timed(lambda: g(xs))}
    if gpu_jax:
        jjg = jax.jit(jax.grad(compile_fn(SINE_SRC, "sine_loop", jnp)))
        jxs = jnp.asarray(xs_h)
        fns["jax"] = jax_timed(lambda: jjg(jxs))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    rows.append(Row("GPU jit(grad) of 10 sine steps, 1000x1000", "float64", ms["tp"],
                    ms["hand"], ratio, None, ms.get("jax"), "report"))
    notes.append(f"GPU sine loop: tp.grad without jit {ms['grad']:.3f} ms")

    # 4. per-example gradients, 784-512-512-10, batch 32
    params_h, xe_h, ye_h = _per_example_problem(big, 32)
    params = [(cupy.asarray(W), cupy.asarray(b)) for W, b in params_h]
    xe, ye = cupy.asarray(xe_h), cupy.asarray(ye_h)
    example_loss = compile_fn(EXAMPLE_LOSS_SRC, "example_loss", np)
    per_example = tp.vmap(tp.grad(example_loss), in_axes=(None, 0, 0))
    one = tp.grad(example_loss)
    got = per_example(params, xe, ye)
    want = one(params_h, xe_h[3], ye_h[3])
    if not np.allclose(cupy.asnumpy(got[0][0][3]), want[0][0], rtol=1e-10):
        fail("GPU vmap(grad) differs from grad of one example")
    fns = {"tp": timed(lambda: per_example(params, xe, ye)),
           "hand": timed(lambda: [one(params, xe[i], ye[i]) for i in range(32)])}
    if gpu_jax:
        jl = compile_fn(EXAMPLE_LOSS_SRC, "example_loss", jnp)
        jjg = jax.jit(jax.vmap(jax.grad(jl), in_axes=(None, 0, 0)))
        jp = [(jnp.asarray(W), jnp.asarray(b)) for W, b in params_h]
        jxe, jye = jnp.asarray(xe_h), jnp.asarray(ye_h)
        fns["jax"] = jax_timed(lambda: jjg(jp, jxe, jye))
    s = measure(fns, rounds, target_s)
    ms = {k: 1e3 * med(v) for k, v in s.items()}
    ratio = paired_ratio(s["tp"], s["hand"])
    rows.append(Row("GPU vmap(grad) per-example MLP, batch 32 (hand = loop of tp.grad)",
                    "float64", ms["tp"], ms["hand"], ratio, None, ms.get("jax"), "report"))

    # 5. pmap's psum over NCCL, every GPU
    n = len(tp.devices("gpu"))
    psum = tp.pmap(lambda v: tp.psum(v, "i"), axis_name="i", backend="gpu")
    for nbytes in (1 << 10, 1 << 20, 64 << 20):
        host = np.random.default_rng(0).standard_normal((n, nbytes // 8))
        xp = tp.pmap(lambda v: v, backend="gpu")(host)
        if not np.allclose(np.asarray(psum(xp))[0], host.sum(0)):
            fail("GPU pmap psum differs from numpy's sum")
        fns = {"tp": timed(lambda: psum(xp))}
        if gpu_jax:
            jpsum = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")
            jxp = jax.pmap(lambda v: v)(host)
            fns["jax"] = jax_timed(lambda: jpsum(jxp))
        s = measure(fns, max(5, rounds // 3), target_s)
        ms = {k: 1e3 * med(v) for k, v in s.items()}
        rows.append(Row(f"GPU pmap psum over NCCL, {n} GPU x {_bytes(nbytes)}", "float64",
                        ms["tp"], None, None, None, ms.get("jax"),
                        "" if "jax" not in ms else f"tp/jax {ms['tp'] / ms['jax']:.2f}"))
    return rows, notes


def machine_info():
    lines = []
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    lines.append(f"CPU: {model}, {os.cpu_count()} logical cores; {platform.platform()}")
    lines.append(f"Python {platform.python_version()}, numpy {np.__version__}"
                 + (f", autograd {_version('autograd')}" if autograd else
                    ", autograd not installed")
                 + (f", jax {jax.__version__} ({jax.default_backend()})" if jax else
                    ", jax not installed"))
    try:
        cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        lines.append(f"BLAS: {cfg.get('name')} {cfg.get('version')}" + _openblas_runtime())
    except Exception:
        pass
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS",
             "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
    env = {k: os.environ[k] for k in names if k in os.environ}
    lines.append("environment: " + (", ".join(f"{k}={v}" for k, v in env.items()) if env
                                    else "defaults (no thread or malloc variables set)"))
    lines.append(_load())
    lines.append(f"transpile: {_commit()}")
    return lines


def _commit():
    """The commit of the checkout being measured (read-only git queries), best effort."""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(tp.__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                              capture_output=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, text=True, capture_output=True,
                               timeout=10).stdout.strip()
    except Exception:
        return "unknown commit"
    return (head or "unknown commit") + (" + uncommitted changes" if dirty else "")


def _load():
    try:
        return "load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "load average: unknown"


def _version(dist):
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return "?"


def _openblas_runtime():
    """Best effort: the core type and thread count OpenBLAS actually uses (numpy wheels)."""
    try:
        import ctypes
        libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs",
                                      "libscipy_openblas*"))
        lib = ctypes.CDLL(libs[0])
        lib.scipy_openblas_get_config64_.restype = ctypes.c_char_p
        cfg = lib.scipy_openblas_get_config64_().decode().split()
        return (f" (runtime: {' '.join(cfg[-2:])}, "
                f"{lib.scipy_openblas_get_num_threads64_()} threads)")
    except Exception:
        return ""


def fmt(v, width):
    if v is None:
        s = "-"
    elif isinstance(v, float):
        s = f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    else:
        s = str(v)
    return s.ljust(width)


def print_table(rows):
    header = ["benchmark", "dtype", "transpile (ms)", "hand numpy (ms)", "ratio",
              "autograd (ms)", "jax.jit (ms)", "target", "met?"]
    cells = [[fmt(c, 0).strip() for c in r.cells] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (about 20 s)")
    ap.add_argument("--only", default="", help="comma-separated: mlp, tiny, first, "
                    "overhead, hessian, jvp, vmap, random, conv, checkpoint, pmap, jit, gpu "
                    "(default: all; gpu where a CUDA GPU is)")
    ap.add_argument("--threads", type=int, default=1,
                    help="OMP/OPENBLAS/MKL_NUM_THREADS (and, for 1, XLA's intra-op threads) "
                         "for every competitor; default 1; 0 leaves the environment as is "
                         "(OpenBLAS and XLA then use every core)")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="wall: time.perf_counter (default); cpu: time.process_time, this "
                         "process's CPU time, robust to other load on a shared machine")
    args = ap.parse_args(argv)
    global _clock
    _clock = CLOCKS[args.clock]
    if args.quick:
        rounds_big, rounds_small, target_s, reps_first, rounds_hess = 15, 21, 0.02, 7, 7
    else:
        rounds_big, rounds_small, target_s, reps_first, rounds_hess = 81, 81, 0.05, 15, 21

    t_start = time.perf_counter()
    for line in machine_info():
        print(line)
    print(f"clock: {args.clock}; mode: {'quick' if args.quick else 'full'}; {rounds_big} rounds "
          f"(big MLP, jvp), {rounds_small} rounds (tiny MLP, overhead), {rounds_hess} rounds "
          f"(Hessians), ~{target_s * 1e3:.0f} ms per sample", flush=True)

    rows = []
    big = (784, 512, 512, 10)
    only = set(filter(None, args.only.split(",")))

    def want(name):
        return not only or name in only
    if want("mlp"):
        for dtype in (np.float64, np.float32):
            rows.append(bench_mlp("MLP 784-512-512-10, batch 128", big, 128, dtype,
                                  rounds_big, target_s, 1.10, vs_autograd=False))
    if want("tiny"):
        rows.append(bench_mlp("tiny MLP 10-32-32-1, batch 8", (10, 32, 32, 1), 8, np.float64,
                              rounds_small, target_s, 1.5, vs_autograd=True))
    first_times = us = None
    if want("first"):
        first_row, first_times, cold, gen_ms = bench_first_transform(big, 128, reps_first)
        rows.append(first_row)
    if want("overhead"):
        over_row, us = bench_overhead(rounds_small, target_s)
        rows.append(over_row)
    if want("hessian"):
        for n in (100, 500):
            rows.append(bench_hessian(n, rounds_hess, target_s))
    if want("jvp"):
        rows.append(bench_jvp(big, 128, rounds_big, target_s))
    if want("vmap"):
        rows.append(bench_vmap_predict(big, 256, rounds_big, target_s))
        rows.append(bench_per_example_grads(big, 32, rounds_hess, target_s))
        rows.append(bench_vmap_branch(10 ** 6, rounds_hess, target_s))

    if want("random"):
        rows.extend(bench_random(10 ** 6, rounds_hess, target_s))
    if want("conv"):
        rows.append(bench_conv(rounds_hess, target_s))
    if want("checkpoint"):
        rows.append(bench_checkpoint(rounds_hess, target_s))
    pmap_notes = []
    if want("pmap"):
        pmap_rows, pmap_notes = bench_pmap(args.quick)
        rows.extend(pmap_rows)

    gpu_notes = []
    if want("gpu") and tp.devices("gpu"):
        gpu_rows, gpu_notes = bench_gpu(rounds_hess, target_s)
        rows.extend(gpu_rows)

    jit_notes = []
    if want("jit"):
        row, extra, fused_ms = bench_jit_fused(rounds_hess, target_s)
        rows.append(row)
        jit_notes.append("x*x + x*2.0, 5000x5000 float32, time / plain numpy: " + ", ".join(
            f"{k} {v:.2f}" for k, v in extra.items()) + " (nopool: the same kernel writing "
            f"a fresh array every call; plain numpy {fused_ms['plain']:.1f} ms)")
        rows.append(bench_jit_mlp("tiny MLP 10-32-32-1, batch 8", (10, 32, 32, 1), 8,
                                  rounds_small, target_s, 1.2))
        for n in (100, 500):
            rows.append(bench_jit_hessian(n, rounds_hess, target_s))
        row, ms, mem = bench_jit_sine(rounds_hess, target_s)
        rows.append(row)
        jit_notes.append("10 sine steps 1000x1000: tp.grad " f"{ms['grad']:.1f} ms, "
                         "peak memory (tracemalloc) " + ", ".join(
                             f"{k} {v:.0f} MiB" for k, v in mem.items()))
        rows.append(bench_jit_while(rounds_hess, target_s))
        rows.append(bench_jit_mlp("MLP 784-512-512-10, batch 128", big, 128, rounds_big,
                                  target_s, 1.0))
        row, second_ms = bench_jit_first(big, 128, reps_first)
        rows.append(row)
        jit_notes.append(f"jit(grad) MLP 784-512-512-10: the second call, which specializes, "
                         f"costs {second_ms:.1f} ms more than a steady call")

    print()
    print_table(rows)
    print()
    for line in jit_notes + pmap_notes + gpu_notes:
        print(line)
    if first_times is not None:
        print("first transform (ms, each minus one steady call): "
              + ", ".join(f"{t:.1f}" for t in first_times)
              + f"; the first in this process (not counted): {cold:.1f}; code generation "
              f"alone (g.generated()), median: {gen_ms:.1f}")
    if us is not None:
        print(f"call overhead of tp.grad(f)(3.0): {us['tp']:.2f} us total, {us['entry']:.2f} "
              f"us in the generated function, {us['tp'] - us['entry']:.2f} us in the "
              f"Transformed wrapper; a plain Python `2.0 * x`: {us['plain']:.3f} us")
    print(f"total wall time: {time.perf_counter() - t_start:.0f} s; at the end, {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
