"""Run under `mpiexec -n 2` with TRANSPILE_CPU_DEVICES=2 (tests/test_distributed.py does):
every collective, grad through pmap and a data-parallel training step across 2 processes
x 2 devices, each against the single-process vmap of the whole batch. Prints one line per
check; exits non-zero on the first mismatch. With --timeout, then a psum that process 1
skips."""
import os
import sys
import time

import numpy as np

import transpile as tp
from runtime import spmd

tp.distributed.initialize()
me, nproc = tp.process_index(), tp.process_count()
local = tp.local_device_count()
assert tp.device_count() == nproc * local, (tp.device_count(), nproc, local)
mine = slice(me * local, (me + 1) * local)
rng = np.random.default_rng(7)          # the same numbers in every process
n = nproc * local


def close(got, expected, what):
    got, expected = tp.tree_leaves(got), tp.tree_leaves(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12, atol=1e-12, err_msg=what)
    print(f"rank {me}: {what} ok", flush=True)


def collectives(x, w):
    a = tp.psum(x * w, "i") / tp.psum(1.0, "i")
    b = tp.pmean(np.sin(x), "i") + tp.pmax(x, "i") - tp.pmin(x, "i")
    c = np.sum(tp.all_gather(x, "i"), axis=0) + tp.all_gather(x, "i", axis=1)[:, 0]
    d = tp.axis_index("i") * x + tp.ppermute(x, "i", [(k, (k + 1) % n) for k in range(n)])
    m = np.outer(x[:n], x[:n])                         # (n, n)
    e = tp.psum_scatter(m, "i") + tp.all_to_all(m, "i", 0, 0)
    return a + b + c + d + np.sum(e)


x, w = rng.normal(size=(n, 6)), rng.normal(size=6)
whole = tp.vmap(collectives, in_axes=(0, None), axis_name="i")(x, w)
close(tp.pmap(collectives, "i", in_axes=(0, None))(x[mine], w), whole[mine], "collectives")


def model(v):
    return np.tanh(v) / tp.psum(np.sum(v ** 2), "i")


gw = tp.grad(lambda v: np.sum(np.sin(tp.vmap(model, axis_name="i")(v))))(x)
pm = tp.pmap(model, "i")
close(tp.grad(lambda v: np.sum(np.sin(pm(v))))(x[mine]), gw[mine], "grad through pmap")


def loss(w, x, y):
    return np.mean((np.tanh(x @ w) - y) ** 2)


def step(w, x, y):
    return w - 0.1 * tp.pmean(tp.grad(loss)(w, x, y), "batch")


w0 = rng.normal(size=(5, 3))
xs, ys = rng.normal(size=(n, 8, 5)), rng.normal(size=(n, 8, 3))
expected = w0 - 0.1 * tp.grad(loss)(w0, xs.reshape(n * 8, 5), ys.reshape(n * 8, 3))
train = tp.pmap(step, "batch", in_axes=(None, 0, 0), out_axes=None)
close(train(w0, xs[mine], ys[mine]), expected, "data-parallel step")

if "--timeout" not in sys.argv:
    sys.exit(0)

# A process whose devices never reach a collective: the other process raises, naming the
# collective and its rank, instead of hanging. (Run on its own: process 0's abandoned MPI
# request keeps MPI_Finalize waiting, so both leave with os._exit, and mpiexec may then
# report the other as killed; test_distributed.py reads the message, not the exit code.)


def skipped_by_process_1(v):
    if tp.process_index() == 1:
        return v
    return tp.psum(v, "i")


os.environ["TRANSPILE_COLLECTIVE_TIMEOUT"] = "2"
try:
    tp.pmap(skipped_by_process_1, "i")(x[mine])
except spmd.CollectiveError as e:
    assert me == 0 and "psum over axis 'i' on rank" in str(e) and "timed out" in str(e), e
    print(f"rank {me}: psum a process skips times out ok", flush=True)
else:
    assert me == 1, "the psum that process 1 skipped returned on process 0"
    time.sleep(4)        # alive while process 0 waits
sys.stdout.flush()
os._exit(0)
