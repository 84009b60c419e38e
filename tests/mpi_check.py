"""Run under `mpiexec -n P` with TRANSPILE_CPU_DEVICES=T (tests/test_distributed.py runs
2 x 2 and 3 x 2): every collective, grad through pmap and a data-parallel training step
across P processes x T devices, each against the single-process vmap of the whole batch;
ppermute, all_to_all and psum_scatter in many shapes, dtypes and permutations, equal to
the single-process result bit for bit, and the MPI calls each makes (only what a process
needs crosses); collectives over an outer axis that spans processes inside a nested pmap.
Prints one line per check; exits non-zero on the first mismatch. With --early, --fails or
--timeout, only a psum that process 1 skips, fails before, or reaches too late; with
--exits, only a pmap that process 1 exits before; with
--serialized, only a nested pmap under
MPI_THREAD_SERIALIZED; with --mismatch, only collectives of arrays whose shapes or
dtypes differ between processes."""
import os
import sys
import time

import numpy as np

import transpile as tp
from runtime import spmd

if "--serialized" in sys.argv:         # MPI_THREAD_SERIALIZED: one thread in MPI at a time
    import mpi4py
    mpi4py.rc.thread_level = "serialized"
tp.distributed.initialize()
me, nproc = tp.process_index(), tp.process_count()
local = tp.local_device_count()
assert tp.device_count() == nproc * local, (tp.device_count(), nproc, local)
mine = slice(me * local, (me + 1) * local)
rng = np.random.default_rng(7)          # the same numbers in every process
n = nproc * local


def skipped_by_process_1(v):
    if tp.process_index() == 1:
        return v
    return tp.psum(v, "i")


def raises_on_process_1(v):
    if tp.process_index() == 1:
        raise ValueError("a device of process 1 fails")
    return tp.psum(v, "i")


def late_on_process_1(v):
    if tp.process_index() == 1:
        time.sleep(4)
    return tp.psum(v, "i")


ABANDONED = {
    # flag: (the function, the timeout, what process 0's error may say, process 1's);
    # process 1 told process 0 it ended the call, or process 0 found it in the next call
    "--early": (skipped_by_process_1, "60", ("process 1 returned from this pmap call after 0 "
                                             "collectives", "process 1 left this pmap call"),
                None),
    "--fails": (raises_on_process_1, "60", ("process 1 failed in this pmap call after 0 "
                                            "collectives", "process 1 left this pmap call"),
                ("a device of process 1 fails",)),
    "--timeout": (late_on_process_1, "2", ("timed out after 2 s",),
                  ("process 0 failed in this pmap call after 0 collectives",)),
}
if "--exits" in sys.argv:
    # A process that exits (here at once; an uncaught error alike) while the other
    # starts a pmap: the other raises at once, not after the timeout.
    os.environ["TRANSPILE_COLLECTIVE_TIMEOUT"] = "60"
    if me == 1:
        sys.exit(0)
    started = time.monotonic()
    try:
        tp.pmap(lambda v: tp.psum(v, "i"), "i")(np.ones((local, 3)))
    except spmd.CollectiveError as e:
        assert "process 1 exited" in str(e), e
        print(f"rank 0: exits raises ok ({time.monotonic() - started:.1f} s)", flush=True)
    os._exit(0)
flag = next((f for f in ABANDONED if f in sys.argv), None)
if flag is not None:
    # A collective some process never joins (it returned early, failed, or is late past
    # the timeout): the others raise, naming the collective, the rank and the process,
    # instead of hanging; they raise at once where that process told them it ended the
    # call. Each process's next pmap then raises too (the processes' collectives no
    # longer match). Process 0's abandoned MPI request keeps MPI_Finalize waiting, so
    # both leave with os._exit, and mpiexec may then report the other as killed;
    # test_distributed.py reads the messages, not the exit code.
    f, timeout, expected, on_1 = ABANDONED[flag]
    os.environ["TRANSPILE_COLLECTIVE_TIMEOUT"] = timeout
    started = time.monotonic()
    try:
        tp.pmap(f, "i")(np.ones((local, 3)))
    except (spmd.CollectiveError, ValueError) as e:
        took = time.monotonic() - started
        mine_expected = expected if me == 0 else on_1
        assert mine_expected is not None and any(m in str(e) for m in mine_expected), e
        if me == 0:
            assert "psum over axis 'i' on rank" in str(e), e
            assert took < 20, f"raised after {took:.1f} s"
        print(f"rank {me}: {flag[2:]} raises ok ({took:.1f} s)", flush=True)
    else:
        assert me == 1 and on_1 is None, "the psum that process 1 left returned on " \
            f"process {me}"
    try:
        tp.pmap(lambda v: tp.psum(v, "i"), "i")(np.ones((local, 3)))
    except spmd.CollectiveError as e:
        assert any(m in str(e) for m in ("restart the processes", "failed at the start",
                                         "is still in an earlier pmap call")), e
        print(f"rank {me}: the next pmap raises ok", flush=True)
    sys.stdout.flush()
    # alive while the other process still reaches its psum, and hears of this one's end
    time.sleep(5 if flag == "--timeout" else 1)
    os._exit(0)


if "--serialized" in sys.argv:
    # A nested pmap's inner positions call MPI at once over an outer axis that spans the
    # processes: without MPI_THREAD_MULTIPLE that is a clear error, not a crash or a hang.
    try:
        tp.pmap(lambda x: tp.pmap(lambda z: tp.psum(z, "o"), "i")(x), "o")(
            np.ones((local, local, 3)))
    except spmd.CollectiveError as e:
        assert "needs MPI_THREAD_MULTIPLE" in str(e), e
        print(f"rank {me}: nested pmap without MPI_THREAD_MULTIPLE raises ok", flush=True)
    sys.exit(0)


if "--mismatch" in sys.argv:
    # Processes passing arrays of different shapes (or dtypes) to one collective: MPI
    # would take the bytes for data (uninitialized values, a truncated message); every
    # process raises instead, naming both kinds. One pmap call per process and
    # collective, each with its own shapes.
    for name, collective in (("psum", lambda v: tp.psum(v, "i")),
                             ("all_gather", lambda v: tp.all_gather(v, "i")),
                             ("ppermute", lambda v: tp.ppermute(v, "i", [(0, n - 1)])),
                             ("psum_scatter", lambda v: tp.psum_scatter(v, "i", tiled=True)),
                             ("all_to_all", lambda v: tp.all_to_all(v, "i", 0, 0, tiled=True))):
        for extra, dtype in ((me, np.float64), (0, np.float64 if me == 0 else np.float32)):
            x = np.ones((local, n * (2 + extra), 3), dtype)     # a shape, then a dtype
            try:
                tp.pmap(collective, "i")(x)
            except spmd.CollectiveError as e:
                assert "every process must pass the same" in str(e), e
            else:
                raise AssertionError(f"{name}: arrays of different kinds went through")
        print(f"rank {me}: {name} of mismatched arrays raises ok", flush=True)
    # processes in different collectives (psum in one, pmax in the other) at once
    try:
        tp.pmap(lambda v: tp.psum(v, "i") if me == 0 else tp.pmax(v, "i"), "i")(
            np.ones((local, 3)))
    except spmd.CollectiveError as e:
        assert "is in another collective at the same time" in str(e), e
    else:
        raise AssertionError("processes in different collectives combined their data")
    print(f"rank {me}: different collectives raise ok", flush=True)
    sys.exit(0)


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

# ---------------------------------------------------------------- ppermute, all_to_all and
# psum_scatter move only what a process needs: each case against the single-process vmap,
# bit for bit (psum_scatter of integer-valued numbers, whose sums are exact in any order).


def same(got, expected, what):
    got, expected = tp.tree_leaves(got), tp.tree_leaves(expected)
    assert len(got) == len(expected), what
    for g, e in zip(got, expected):
        g = np.asarray(g)
        assert g.dtype == e.dtype and g.shape == e.shape, (what, g.dtype, g.shape, e.shape)
        assert np.array_equal(g, e), f"{what}: differs from the single-process result"


def pmap_equals_vmap(f, args, what):
    expected = [e[mine] for e in tp.tree_leaves(tp.vmap(f, axis_name="i")(*args))]
    same(tp.pmap(f, "i")(*(a[mine] for a in args)), expected, what)


def per_device(shape, dtype=np.float64):
    """One array of `shape` a device (all n devices' at once), of the given dtype."""
    if np.dtype(dtype).kind == "c":
        return rng.normal(size=(n,) + shape) + 1j * rng.normal(size=(n,) + shape)
    if np.dtype(dtype).kind == "b":
        return rng.normal(size=(n,) + shape) > 0
    return rng.normal(size=(n,) + shape).astype(dtype) if np.dtype(dtype).kind == "f" \
        else rng.integers(-1000, 1000, size=(n,) + shape).astype(dtype)


PERMUTATIONS = {
    "shift by one": [(k, (k + 1) % n) for k in range(n)],
    "reversal": [(k, n - 1 - k) for k in range(n)],
    "even ranks to the next process, the others get zeros":
        [(k, (k + local) % n) for k in range(0, n, 2)],
    "nobody sends": [],
}
if n > 2:
    PERMUTATIONS["0 to 1 and 1 to the last, the others get zeros"] = [(0, 1), (1, n - 1)]
leaves = [per_device((3, 2)), per_device((4,), np.complex128), per_device((2, 3), np.int32),
          per_device((5,), np.bool_), per_device((), np.float32)]
for name, perm in PERMUTATIONS.items():
    def permuted(a, b, c, d, e, perm=perm):
        return [tp.ppermute(v, "i", perm) for v in (a, b, c, d, e)]
    pmap_equals_vmap(permuted, leaves, f"ppermute, {name}")
print(f"rank {me}: ppermute ok", flush=True)

ALL_TO_ALL = [          # (split_axis, concat_axis, tiled, one device's shape)
    (0, 0, False, (n, 3)), (0, 1, False, (n, 3)), (1, 0, False, (3, n, 2)),
    (-1, 0, False, (2, n)), (1, 2, False, (2, n, 3)), (1, 0, True, (2, 2 * n)),
    (0, 0, True, (3 * n, 2)), (0, 1, True, (2 * n, 3)), (2, 1, True, (2, 3, n))]
for split, concat, tiled, shape in ALL_TO_ALL:
    for dtype in (np.float64, np.complex128, np.int64):
        def exchanged(v, split=split, concat=concat, tiled=tiled):
            return tp.all_to_all(v, "i", split, concat, tiled=tiled)
        pmap_equals_vmap(exchanged, [per_device(shape, dtype)],
                         f"all_to_all split {split} concat {concat} tiled {tiled} {shape} "
                         f"{np.dtype(dtype)}")
print(f"rank {me}: all_to_all ok", flush=True)

PSUM_SCATTER = [         # (scatter_dimension, tiled, one device's shape)
    (0, False, (n, 3)), (1, False, (3, n)), (-1, False, (2, 2, n)), (0, True, (2 * n, 3)),
    (1, True, (3, 3 * n)), (0, True, (n,))]
for dimension, tiled, shape in PSUM_SCATTER:
    def scattered(v, dimension=dimension, tiled=tiled):
        return tp.psum_scatter(v, "i", scatter_dimension=dimension, tiled=tiled)
    what = f"psum_scatter dimension {dimension} tiled {tiled} {shape}"
    exact = rng.integers(-1000, 1000, size=(n,) + shape) / 8.0     # sums exact in any order
    pmap_equals_vmap(scattered, [exact], what + " (integer-valued float64)")
    pmap_equals_vmap(scattered, [per_device(shape, np.int64)], what + " int64")
    floats = per_device(shape)
    np.testing.assert_allclose(np.asarray(tp.pmap(scattered, "i")(floats[mine])),
                               tp.vmap(scattered, axis_name="i")(floats)[mine], rtol=1e-12,
                               atol=1e-12, err_msg=what + " float64, to rounding")
print(f"rank {me}: psum_scatter ok", flush=True)

# psum, pmean, pmax, pmin and psum_scatter of booleans, narrow integers and complex numbers:
# np.sum's and np.mean's dtypes (a count, no wrapping), MPI's max and min of booleans and
# of complex numbers (which MPI cannot order), against vmap in one process.
for dtype in (np.bool_, np.int8, np.uint8, np.int32, np.float32, np.complex128):
    def reduced(v):
        return [tp.psum(v, "i"), tp.pmax(v, "i"), tp.pmin(v, "i"),
                tp.psum_scatter(v, "i", tiled=True)]
    values = per_device((n, 3), dtype)
    if values.dtype.kind in "fc":
        values = (np.round(values * 8) / 8).astype(dtype)        # sums exact in any order
    pmap_equals_vmap(reduced, [values], f"reductions of {np.dtype(dtype)}")
    if np.dtype(dtype).kind in "biu":
        pmap_equals_vmap(lambda v: tp.pmean(v, "i"), [per_device((4,), dtype)],
                         f"pmean of {np.dtype(dtype)}")
print(f"rank {me}: reductions of every dtype ok", flush=True)


class CountingMPI:
    """The processes' MPI communicator, recording the name of each nonblocking call."""

    def __init__(self, comm):
        self.comm, self.calls = comm, []

    def __getattr__(self, name):
        found = getattr(self.comm, name)
        if not name.startswith("I") or not callable(found):
            return found

        def call(*args, **kwargs):
            self.calls.append(name)
            return found(*args, **kwargs)
        return call


def mpi_calls(f, *args):
    """The MPI calls this process makes in a pmap of f with one collective, after the two
    Iallgathers every such pmap makes first (the processes map as many devices; their
    arrays are of one shape and dtype)."""
    counting = spmd._PROCESSES["mpi"] = CountingMPI(spmd._PROCESSES["mpi"])
    try:
        tp.pmap(f, "i")(*args)
    finally:
        spmd._PROCESSES["mpi"] = counting.comm
    assert counting.calls[:2] == ["Iallgather", "Iallgather"], counting.calls
    return counting.calls[2:]


def crossing(perm, role):
    """How many pairs of perm leave this process (role 0) or arrive from another (1)."""
    here = range(me * local, (me + 1) * local)
    return sum((pair[role] in here) and (pair[1 - role] not in here) for pair in perm)


v = per_device((n, 4))[mine]
for name, perm in PERMUTATIONS.items():
    calls = mpi_calls(lambda v, perm=perm: tp.ppermute(v, "i", perm), v)
    assert sorted(calls) == sorted(["Isend"] * crossing(perm, 0) +
                                   ["Irecv"] * crossing(perm, 1)), (name, calls)
assert mpi_calls(lambda v: tp.all_to_all(v, "i", 0, 1), v) == ["Ialltoallv"]
assert mpi_calls(lambda v: tp.psum_scatter(v, "i"), v) == ["Ireduce_scatter_block"]
assert mpi_calls(lambda v: tp.psum(v, "i"), v) == ["Iallreduce"]
assert mpi_calls(lambda v: tp.all_gather(v, "i"), v) == ["Iallgather"]
print(f"rank {me}: MPI calls of each collective ok", flush=True)


# ---------------------------------------------------------------- nested pmap
# The outer axis "o" spans the processes; inside each outer device an inner pmap over this
# process's devices. A collective over "o" in an inner device meets the inner devices at
# the same position in every outer device, in every process. Integer-valued data: exact.

def inner(z):                                       # z: (n, 3)
    a = tp.psum(z, "o") + tp.pmax(z, "o") * tp.axis_index("o") + tp.pmean(z, "i")
    b = tp.ppermute(z, "o", PERMUTATIONS["shift by one"]) + \
        tp.ppermute(z, "o", PERMUTATIONS["even ranks to the next process, the others get "
                                         "zeros"])
    return a + b + tp.all_to_all(z, "o", 0, 1).T + tp.pmin(z, "o")


def nested(f):
    return tp.pmap(lambda x: tp.pmap(f, "i")(x), "o")


xs = rng.integers(-1000, 1000, size=(n, local, n, 3)) / 8.0
expected = tp.vmap(lambda x: tp.vmap(inner, axis_name="i")(x), axis_name="o")(xs)
same(nested(inner)(xs[mine]), expected[mine], "nested pmap, collectives over the outer axis")
twice = tp.pmap(lambda x: tp.pmap(inner, "i")(x) - 2 * tp.pmap(inner, "i")(x), "o")
same(twice(xs[mine]), -expected[mine], "nested pmap launched twice in each outer device")
# psum_scatter and all_gather over the outer axis, by hand (vmap of vmap gives them the
# wrong shapes): at outer rank o and inner position j, the sum of every outer rank's row o
# at j, and every outer rank's z at j
same(nested(lambda z: tp.psum_scatter(z, "o"))(xs[mine]),
     xs.sum(axis=0).transpose(1, 0, 2)[mine], "nested pmap, psum_scatter over the outer axis")
same(nested(lambda z: tp.all_gather(z, "o"))(xs[mine]),
     np.broadcast_to(xs.transpose(1, 0, 2, 3), (n,) + xs.transpose(1, 0, 2, 3).shape)[mine],
     "nested pmap, all_gather over the outer axis")
print(f"rank {me}: nested pmap over an axis that spans processes ok", flush=True)
