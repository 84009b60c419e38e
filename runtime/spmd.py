"""SPMD execution for pmap: every device runs the same code on its own slice, in its own
thread, and the collectives (psum, all_gather, ppermute, ...) meet through a communicator.

On the CPU a device is virtual: a worker thread (numpy releases the GIL in large
operations, so devices compute in parallel), and the communicator exchanges arrays through
shared memory. `TRANSPILE_CPU_DEVICES` sets how many (default 8).

Which axes are bound, and to which communicator and rank, is thread-local state: the
collectives in runtime/collectives.py look it up. A pmap inside a device's code (nested
pmap) starts its own threads; in them the outer axis is bound to a sub-communicator of the
outer one, made once per (inner launch, inner rank), so a psum over the outer axis sums the
devices that share the inner position, as JAX defines it.
"""
import os
import queue
import threading
import time

import numpy as np

from .backend import array_module
from .trees import rebuild_like


def collective_timeout():
    """Seconds a collective waits for the other ranks before it raises (not hangs)."""
    return float(os.environ.get("TRANSPILE_COLLECTIVE_TIMEOUT", "300"))


class CollectiveError(RuntimeError):
    """A collective that cannot complete: another rank failed, or it timed out."""


# ---------------------------------------------------------------------------- devices
class Device:
    """A device pmap runs one share of the work on, in a thread of its own."""
    platform = None

    def __init__(self, id, process_index=0):
        self.id = id
        self.process_index = process_index

    @property
    def device_kind(self):
        return self.platform

    def __repr__(self):
        return f"{type(self).__name__}(id={self.id})"


class CpuDevice(Device):
    """A virtual CPU device."""
    platform = "cpu"


class GpuDevice(Device):
    """A CUDA GPU (backend="gpu")."""
    platform = "gpu"


def wait_or_abort(is_done, comm, rank, what, waiting_for):
    """Poll `is_done()` until it is true, at most TRANSPILE_COLLECTIVE_TIMEOUT seconds;
    then abort `comm` (its other ranks raise too) and raise, naming the collective."""
    deadline = time.monotonic() + collective_timeout()
    while not is_done():
        if time.monotonic() > deadline:
            reason = (f"timed out after {collective_timeout():g} s waiting for the other "
                      f"{waiting_for} (TRANSPILE_COLLECTIVE_TIMEOUT sets it)")
            comm.abort(reason)
            raise CollectiveError(f"{what} on rank {rank}: {reason}")
        time.sleep(1e-5)


_CPU_DEVICES = {}
_PROCESSES = {"mpi": None}     # the MPI communicator once tp.distributed.initialize() ran


def join_processes():
    """Make every pmap span the processes mpiexec started (collectives over MPI)."""
    if _PROCESSES["mpi"] is None:
        from mpi4py import MPI
        _PROCESSES["mpi"] = MPI.COMM_WORLD.Dup()
    return _PROCESSES["mpi"]


def process_index():
    mpi = _PROCESSES["mpi"]
    return 0 if mpi is None else mpi.Get_rank()


def process_count():
    mpi = _PROCESSES["mpi"]
    return 1 if mpi is None else mpi.Get_size()


def cpu_devices():
    """Every process's virtual CPU devices: TRANSPILE_CPU_DEVICES each (default 8),
    numbered process by process."""
    text = os.environ.get("TRANSPILE_CPU_DEVICES", "8")
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"TRANSPILE_CPU_DEVICES={text!r}: it must be a positive integer")
    key = (count, process_count())
    if key not in _CPU_DEVICES:
        _CPU_DEVICES[key] = [CpuDevice(p * count + i, p) for p in range(key[1])
                             for i in range(count)]
    return _CPU_DEVICES[key]


def local_cpu_devices():
    """This process's virtual CPU devices."""
    here = process_index()
    return [d for d in cpu_devices() if d.process_index == here]


# ---------------------------------------------------------------------------- communicator
class SharedMemoryCommunicator:
    """Collectives among the threads of one process, one thread a rank.

    Each collective deposits every rank's value in a slot, waits at a barrier, and reads
    what it needs of the others' values; a second barrier keeps a fast rank from
    overwriting its slot before the slow ones have read. A rank that fails aborts the
    barrier, so the others raise instead of waiting forever.
    """

    def __init__(self, size):
        self.size = size
        self._slots = [None] * size
        self._shared = None
        self._barrier = threading.Barrier(size)
        self._lock = threading.Lock()
        self._children = {}
        self._failure = None

    # -- synchronization
    def _wait(self, rank, what):
        try:
            self._barrier.wait(collective_timeout())
        except threading.BrokenBarrierError:
            if self._failure is None:
                self._failure = (f"timed out after {collective_timeout():g} s waiting for "
                                 "the other ranks (TRANSPILE_COLLECTIVE_TIMEOUT sets it)")
            raise CollectiveError(f"{what} on rank {rank}: {self._failure}") from None

    def abort(self, reason):
        """Make every rank waiting in (or later entering) a collective raise."""
        with self._lock:
            if self._failure is None:
                self._failure = reason
            children = list(self._children.values())
        self._barrier.abort()
        for child in children:
            child.abort(reason)

    def split(self, key):
        """The communicator shared by every rank that asks with this key (same size)."""
        with self._lock:
            child = self._children.get(key)
            if child is None:
                child = self._children[key] = SharedMemoryCommunicator(self.size)
                if self._failure is not None:
                    child._failure = self._failure
                    child._barrier.abort()
        return child

    def exchange(self, rank, value, what):
        """Every rank's value (a list indexed by rank), read-only."""
        self._slots[rank] = value
        self._wait(rank, what)
        values = list(self._slots)
        return values

    def done(self, rank, what):
        """The end of a collective: the slots may be written again."""
        self._wait(rank, what)

    # -- collectives
    def rank_of(self, thread):
        """The rank (axis_index) of this process's thread number `thread`."""
        return thread

    def allreduce(self, rank, x, op, what):
        """op in "sum", "max", "min": every rank gets the reduction of all ranks' x."""
        return self._reduce_here(rank, x, op, what).copy()

    def _reduce_here(self, thread, x, op, what):
        """The reduction over this process's threads, in one buffer they share: thread t
        reduces the t-th stretch of the flattened arrays (the work is split, not
        repeated)."""
        x = np.asarray(x)
        if thread == 0:
            self._shared = np.empty(x.shape, dtype=x.dtype)
        values = SharedMemoryCommunicator.exchange(self, thread, x, what)
        _check_same(values, thread, what)
        out = self._shared
        flat = out.reshape(-1)
        lo, hi = _stretch(flat.size, len(values), thread)
        if hi > lo:
            ufunc = REDUCERS[op]
            parts = [v.reshape(-1)[lo:hi] for v in values]
            np.copyto(flat[lo:hi], parts[0])
            for part in parts[1:]:
                ufunc(flat[lo:hi], part, out=flat[lo:hi])
        self.done(thread, what)
        return out

    def _combine(self, rank, x, what, combine):
        """combine(every rank's x) on this rank, before the slots may be written again."""
        values = self.exchange(rank, np.asarray(x), what)
        _check_same(values, rank, what)
        out = combine(values)
        self.done(rank, what)
        return out

    def reduce_scatter(self, rank, x, axis, tiled, what):
        """psum_scatter: rank r gets the sum over ranks of x's r-th block along `axis`."""
        def own_block_summed(values):
            blocks = [_block(v, rank, self.size, axis, tiled, what) for v in values]
            out = np.array(blocks[0])
            for b in blocks[1:]:
                out += b
            return out
        return self._combine(rank, x, what, own_block_summed)

    def allgather(self, rank, x, axis, tiled, what):
        return self._combine(rank, x, what, lambda values: np.concatenate(values, axis=axis)
                             if tiled else np.stack(values, axis=axis))

    def permute(self, rank, x, perm, what):
        """ppermute: (source, destination) pairs; a rank no pair sends to gets zeros."""
        sources = [s for s, d in perm if d == rank]
        return self._combine(rank, x, what, lambda values: np.array(values[sources[0]])
                             if sources else np.zeros_like(values[rank]))

    def alltoall(self, rank, x, split_axis, concat_axis, tiled, what):
        """all_to_all: block s of x along split_axis goes to rank s; the blocks a rank
        receives are stacked (or, tiled, concatenated) along concat_axis by source rank."""
        def own_blocks(values):
            blocks = [_block(v, rank, self.size, split_axis, tiled, what) for v in values]
            return np.concatenate(blocks, axis=concat_axis) if tiled else \
                np.stack(blocks, axis=concat_axis)
        return self._combine(rank, x, what, own_blocks)


REDUCERS = {"sum": np.add, "max": np.maximum, "min": np.minimum}


class ProcessSpanningCommunicator(SharedMemoryCommunicator):
    """Collectives among the threads of several processes (`tp.distributed.initialize()`):
    shared memory among a process's threads, then MPI between processes, one call per
    process (its thread 0), which waits at most TRANSPILE_COLLECTIVE_TIMEOUT seconds.

    Rank = process index * threads per process + thread. Every process must run the same
    number of threads (devices)."""

    def __init__(self, threads, mpi_comm):
        super().__init__(threads)
        self.mpi = mpi_comm
        self.threads = threads
        self.offset = mpi_comm.Get_rank() * threads
        self.size = threads * mpi_comm.Get_size()
        counts = np.empty(mpi_comm.Get_size(), dtype=np.int64)
        self._mpi_wait(mpi_comm.Iallgather(np.array([threads], dtype=np.int64), counts),
                       self.offset, "pmap's start (the processes' device counts)")
        counts = counts.tolist()
        if len(set(counts)) > 1:
            raise CollectiveError(f"pmap across processes: the processes map axes of "
                                  f"different sizes ({counts}); each must use as many "
                                  "devices as the others")

    def rank_of(self, thread):
        return self.offset + thread

    def exchange(self, rank, value, what):
        thread = rank - self.offset
        here = SharedMemoryCommunicator.exchange(self, thread, np.asarray(value), what)
        if thread == 0:
            stacked = np.stack(here)
            everyone = np.empty((self.mpi.Get_size(),) + stacked.shape, stacked.dtype)
            self._mpi_wait(self.mpi.Iallgather(stacked, everyone), rank, what)
            self._shared = list(everyone.reshape((self.size,) + stacked.shape[1:]))
        self._wait(rank, what)
        return self._shared

    def allreduce(self, rank, x, op, what):
        thread = rank - self.offset
        out = self._reduce_here(thread, x, op, what)
        if thread == 0:
            from mpi4py import MPI
            mpi_op = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
            self._mpi_wait(self.mpi.Iallreduce(MPI.IN_PLACE, out, op=mpi_op), rank, what)
        self._wait(rank, what)
        return out.copy()

    def _mpi_wait(self, request, rank, what):
        wait_or_abort(request.Test, self, rank, what, "processes")

    def split(self, key):
        return _NoNestedSpan()


class _NoNestedSpan:
    """What a nested pmap's threads see for an axis that spans processes."""

    def __getattr__(self, name):
        raise CollectiveError("a collective over an axis that spans processes, called "
                              "inside a nested pmap, is not supported")


def _stretch(n, parts, k):
    base, extra = divmod(n, parts)
    lo = k * base + min(k, extra)
    return lo, lo + base + (1 if k < extra else 0)


def _block(v, k, parts, axis, tiled, what):
    axis = axis % max(v.ndim, 1)
    if not tiled:
        if v.shape[axis] != parts:
            raise CollectiveError(f"{what}: axis {axis} has {v.shape[axis]} entries, but "
                                  f"the mapped axis has {parts} (pass tiled=True to split "
                                  "it into blocks)")
        return v.take(k, axis=axis)
    if v.shape[axis] % parts:
        raise CollectiveError(f"{what}: axis {axis} has {v.shape[axis]} entries, not a "
                              f"multiple of the {parts} ranks")
    size = v.shape[axis] // parts
    return v.take(range(k * size, (k + 1) * size), axis=axis)


def _check_same(values, rank, what):
    first = values[0]
    for r, v in enumerate(values):
        if v.shape != first.shape:
            raise CollectiveError(f"{what}: rank {r} passed shape {v.shape}, rank 0 "
                                  f"{first.shape}; every rank must pass the same shape")


# ---------------------------------------------------------------------------- threads
_local = threading.local()


def bound_axis(axis_name):
    """(communicator, rank) for a pmap axis bound in this thread, else None."""
    axes = getattr(_local, "axes", None)
    return None if axes is None else axes.get(axis_name)


def current_device():
    return getattr(_local, "device", None)


class _Worker:
    def __init__(self):
        self.tasks = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, daemon=True,
                                       name="transpile-device")
        self.thread.start()

    def _loop(self):
        while True:
            task = self.tasks.get()
            task()


_IDLE = []
_IDLE_LOCK = threading.Lock()


def _take_workers(n):
    with _IDLE_LOCK:
        taken = [_IDLE.pop() for _ in range(min(n, len(_IDLE)))]
    return taken + [_Worker() for _ in range(n - len(taken))]


def _give_back(workers):
    with _IDLE_LOCK:
        _IDLE.extend(workers)


def run(fn, per_rank_args, axis_name, devices, comm=None):
    """fn(*per_rank_args[r]) on every rank r at once, each in a thread bound to
    `devices[r]` and to rank r of `axis_name`; the list of results. If a rank raises, the
    others' collectives raise too, and the first rank's own error is raised here.
    `comm`: the communicator (GPUs: NCCL's); by default shared memory, or, for a pmap no
    other encloses once the processes are joined, one spanning them."""
    n = len(per_rank_args)
    parent = getattr(_local, "axes", None) or {}
    mpi = _PROCESSES["mpi"]
    if comm is None:
        comm = ProcessSpanningCommunicator(n, mpi) if mpi is not None and not parent else \
            SharedMemoryCommunicator(n)
    launch = getattr(_local, "launches", 0)
    _local.launches = launch + 1
    results, errors = [None] * n, [None] * n
    finished = threading.Semaphore(0)

    def task_for(rank):
        def task():
            axes = {name: (c.split(("nested", launch, rank)), k)
                    for name, (c, k) in parent.items()}
            axes[axis_name] = (comm, comm.rank_of(rank))
            _local.axes, _local.launches, _local.device = axes, 0, devices[rank]
            try:
                results[rank] = fn(*per_rank_args[rank])
            except BaseException as e:      # noqa: B902 - passed to the caller's thread
                errors[rank] = e
                comm.abort(f"rank {rank} ({devices[rank]}) raised "
                           f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            finally:
                _local.axes = _local.device = None
                finished.release()
        return task

    workers = _take_workers(n)
    for rank, worker in enumerate(workers):
        worker.tasks.put(task_for(rank))
    for _ in range(n):
        finished.acquire()
    _give_back(workers)
    raised = [e for e in errors if e is not None]
    if raised:
        own = [e for e in raised if not isinstance(e, CollectiveError)]
        raise (own or raised)[0]
    return results


# ---------------------------------------------------------------------------- sharded arrays
class ShardedArray(np.lib.mixins.NDArrayOperatorsMixin):
    """A pmap result: one buffer per device, stacked along `axis` only when asked.

    `np.asarray(r)` gathers; `r[i]` along the device axis is device i's buffer, with no
    copy; passed to another pmap mapped along the same axis, each device takes its own
    buffer directly. Anything else (arithmetic, numpy functions, methods) works on the
    gathered array.
    """
    __array_priority__ = 20

    def __init__(self, shards, axis, devices):
        self.shards = list(shards)
        self.axis = axis
        self.devices = list(devices)
        first = self.shards[0]
        self.dtype = np.result_type(first)
        shape = list(np.shape(first))
        shape.insert(axis, len(self.shards))
        self.shape = tuple(shape)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        return self.shape[0]

    def gather(self):
        # not cached: r[i] hands out a device's own buffer, which its holder may write to
        return np.stack([s.get() if _on_gpu(s) else np.asarray(s) for s in self.shards],
                        axis=self.axis)

    def __array__(self, dtype=None, copy=None):
        out = self.gather()
        return out if dtype is None else out.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [x.gather() if isinstance(x, ShardedArray) else x for x in inputs]
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_gathered(args), **_gathered(kwargs))

    def __getitem__(self, index):
        if self.axis == 0 and isinstance(index, (int, np.integer)):
            return self.shards[index]
        return self.gather()[index]

    def __iter__(self):
        if self.axis == 0:
            return iter(self.shards)
        return iter(self.gather())

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.gather(), name)

    def __repr__(self):
        return f"ShardedArray({self.gather()!r}, axis={self.axis}, " \
               f"devices={len(self.devices)})"


def _gathered(x):
    if isinstance(x, ShardedArray):
        return x.gather()
    if isinstance(x, (tuple, list)):
        return rebuild_like(x, [_gathered(v) for v in x])
    if isinstance(x, dict):
        return {k: _gathered(v) for k, v in x.items()}
    return x


def shard_of(x, axis, rank):
    """Device `rank`'s slice of x along `axis`: a sharded array's own buffer when it was
    sharded along that axis, else a copy of the slice."""
    if isinstance(x, ShardedArray) and x.axis == axis:
        return x.shards[rank]
    if isinstance(x, ShardedArray):
        x = x.gather()
    return array_module(x).take(x, rank, axis=axis)


def _on_gpu(a):
    return type(a).__module__.startswith("cupy")


def gpu_devices():
    """The CUDA GPUs cupy sees ([] without cupy or a GPU)."""
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:          # no cupy, no driver, no device: no GPUs
        return []
    return [GpuDevice(i) for i in range(count)]


__all__ = ["Device", "CpuDevice", "GpuDevice", "cpu_devices", "local_cpu_devices",
           "gpu_devices", "join_processes", "process_index", "process_count",
           "SharedMemoryCommunicator", "ProcessSpanningCommunicator", "CollectiveError",
           "wait_or_abort", "bound_axis", "current_device", "run", "ShardedArray",
           "shard_of"]
