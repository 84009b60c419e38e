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
import atexit
import itertools
import os
import queue
import threading
import time
import zlib

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
# the MPI communicator once tp.distributed.initialize() ran; the one that carries the news
# of each process's end of a pmap call; why the processes' collectives no longer match
_PROCESSES = {"mpi": None, "endings": None, "broken": None}


def join_processes():
    """Make every pmap span the processes mpiexec started (collectives over MPI)."""
    if _PROCESSES["mpi"] is None:
        from mpi4py import MPI
        _PROCESSES["mpi"] = MPI.COMM_WORLD.Dup()
        _PROCESSES["endings"] = MPI.COMM_WORLD.Dup()   # see ProcessSpanningCommunicator.end
        atexit.register(_announce_exit)
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
        self._whats = [None] * size     # the collective each rank is in
        self._shared = None
        self._barrier = threading.Barrier(size)
        self._lock = threading.Lock()
        self._children = {}
        self._failure = None
        self._passes = {}       # barriers each rank's thread has entered
        self._ended = None      # (barriers passed, reason) of the first rank that returned

    # -- synchronization
    def _wait(self, rank, what):
        with self._lock:
            me = threading.get_ident()
            passes = self._passes[me] = self._passes.get(me, 0) + 1
            ended = self._ended if self._ended is not None and passes > self._ended[0] \
                else None
        if ended is not None:
            self.abort(ended[1])
            raise CollectiveError(f"{what} on rank {rank}: {ended[1]}")
        try:
            self._barrier.wait(collective_timeout())
        except threading.BrokenBarrierError:
            if self._failure is None:
                self._failure = (f"timed out after {collective_timeout():g} s waiting for "
                                 "the other ranks (TRANSPILE_COLLECTIVE_TIMEOUT sets it)")
            raise CollectiveError(f"{what} on rank {rank}: {self._failure}") from None

    def finished(self, rank, device):
        """Rank `rank` returned. A collective it did not call can never complete: the
        ranks waiting in one raise now, and so does any rank that calls one later,
        instead of waiting out the timeout."""
        with self._lock:
            me = threading.get_ident()
            passes = self._passes.get(me, 0)
            if self._ended is None or passes < self._ended[0]:
                self._ended = (passes, (
                    f"rank {rank} ({device}) returned without calling it; under pmap every "
                    "device calls the same collectives in the same order (one under a "
                    "branch or in a loop that the devices take differently cannot "
                    "complete)"))
            stuck = any(p > passes for t, p in self._passes.items() if t != me)
        if stuck:
            self.abort(self._ended[1])

    def abort(self, reason):
        """Make every rank waiting in (or later entering) a collective raise."""
        with self._lock:
            if self._failure is None:
                self._failure = reason
            children = list(self._children.values())
        self._barrier.abort()
        for child in children:
            child.abort(reason)

    def split(self, launch, position):
        """The communicator of this axis for the threads at `position` of nested pmap
        number `launch` (counted in each rank's thread): made by the first rank that asks,
        shared by every rank (the same size as this one)."""
        with self._lock:
            child = self._children.get((launch, position))
            if child is None:
                child = self._children[(launch, position)] = self._new_child(position)
                if self._failure is not None:
                    child._failure = self._failure
                    child._barrier.abort()
        return child

    def _new_child(self, position):
        return SharedMemoryCommunicator(self.size)

    def exchange(self, rank, value, what):
        """Every rank's value (a list indexed by rank), read-only. Every rank must be in
        the same collective (a device that took another branch may be in another one: its
        data would be taken for this one's)."""
        self._slots[rank] = value
        self._whats[rank] = what
        self._wait(rank, what)
        values, whats = list(self._slots), list(self._whats)
        for r, other in enumerate(whats):
            if other != what:
                raise CollectiveError(
                    f"{what} on rank {rank}: rank {r} called {other} at the same time; "
                    "under pmap every device calls the same collectives in the same order")
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
    number of threads (devices). What crosses between processes is what the collective
    needs there: psum adds each process's sum (Iallreduce), all_gather sends everything
    to everyone (Iallgather), psum_scatter adds each process's sum of the blocks another
    process keeps (Ireduce_scatter_block), all_to_all sends each process the blocks of its
    ranks (Ialltoallv), and ppermute sends one rank's array to the one rank that receives
    it (Isend and Irecv). A pair of ranks in one process meets through shared memory.

    A nested pmap's threads (split) see this axis through a communicator of the same kind
    whose MPI part is a duplicate of this one's, one per inner position, so that the inner
    positions' collectives run at once without mixing (MPI_THREAD_MULTIPLE).
    """

    def __init__(self, threads, mpi_comm, check_device_counts=True):
        super().__init__(threads)
        self.mpi = mpi_comm
        self.threads = threads
        self.process = mpi_comm.Get_rank()
        self.offset = self.process * threads
        self.size = threads * mpi_comm.Get_size()
        # a pmap call's own communicator (not a nested pmap's view of it) hears when
        # another process ends the call: its number among this process's calls, and the
        # collectives this process has started in it
        self.call = next(_CALLS) if check_device_counts else None
        self.started = 0
        if check_device_counts:
            self._agree(None, self.offset, "pmap across processes, at its start")

    def rank_of(self, thread):
        return self.offset + thread

    def _process_of(self, rank):
        return rank // self.threads

    def exchange(self, rank, value, what):
        """Every rank's value, in every process (all_gather: each process's stack of its
        threads' values goes to every other, Iallgather)."""
        thread = rank - self.offset
        here = SharedMemoryCommunicator.exchange(self, thread, np.asarray(value), what)
        if thread == 0:
            stacked = np.stack(here)
            self._agree(stacked, rank, what)
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
            self._agree(out, rank, what)
            if op != "sum" and out.dtype.kind == "c":
                # MPI has no order of complex numbers: every process's reduction comes
                # here, and numpy orders them as it does in one process
                everyone = np.empty((self.mpi.Get_size(),) + out.shape, out.dtype)
                self._mpi_wait(self.mpi.Iallgather(out, everyone), rank, what)
                REDUCERS[op].reduce(everyone, axis=0, out=out)
            else:
                # MPI's max and min take no booleans: their bytes (0 or 1) reduce alike
                data = out.view(np.uint8) if out.dtype == np.bool_ else out
                mpi_op = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
                self._mpi_wait(self.mpi.Iallreduce(MPI.IN_PLACE, data, op=mpi_op), rank,
                               what)
        self._wait(rank, what)
        return out.copy()

    def reduce_scatter(self, rank, x, axis, tiled, what):
        """This process's threads add their x (each a stretch); MPI adds the processes'
        sums of the blocks each process keeps, so a process receives its ranks' blocks."""
        from mpi4py import MPI
        thread = rank - self.offset
        x = np.asarray(x)
        axis = axis % max(x.ndim, 1)
        pieces = _pieces(x, self.size, axis, tiled, what)       # piece r: rank r's block
        here = self._reduce_here(thread, pieces, "sum", what)
        if thread == 0:
            self._agree(here, rank, what)
            kept = np.empty((self.threads,) + here.shape[1:], here.dtype)
            self._mpi_wait(self.mpi.Ireduce_scatter_block(here, kept, op=MPI.SUM), rank,
                           what)
            self._received = kept
        self._wait(rank, what)
        own = self._received[thread]
        return own[0].copy() if not tiled else np.moveaxis(own, 0, axis).copy()

    def alltoall(self, rank, x, split_axis, concat_axis, tiled, what):
        """Each rank's pieces (piece r for rank r) meet in shared memory; thread 0 sends
        every other process the pieces for its ranks, all in one Ialltoallv."""
        thread = rank - self.offset
        x = np.asarray(x)
        axis = split_axis % max(x.ndim, 1)
        values = SharedMemoryCommunicator.exchange(
            self, thread, _pieces(x, self.size, axis, tiled, what), what)
        _check_same(values, rank, what)
        if thread == 0:
            self._agree(values[0], rank, what)
            self._received = self._alltoall_between_processes(values, rank, what)
        self._wait(rank, what)
        blocks = []                        # what rank `source` sends this rank, by source
        for source in range(self.size):
            process, sender = divmod(source, self.threads)
            piece = values[sender][rank] if process == self.process else \
                self._received[process, thread, sender]
            blocks.append(piece[0] if not tiled else np.moveaxis(piece, 0, axis))
        out = np.concatenate(blocks, axis=concat_axis) if tiled else \
            np.stack(blocks, axis=concat_axis)
        self.done(rank, what)
        return out

    def _alltoall_between_processes(self, values, rank, what):
        """Thread 0: send each other process q, as one message, the pieces of this
        process's ranks for q's ranks, [receiving thread, sending thread, ...]; the same
        layout comes back from each, indexed [process, receiving thread, sending thread]."""
        from mpi4py import MPI
        processes, threads = self.mpi.Get_size(), self.threads
        piece = values[0][0]
        send = np.empty((processes, threads, threads) + piece.shape, piece.dtype)
        for q in range(processes):
            if q != self.process:
                for sender, pieces in enumerate(values):
                    send[q, :, sender] = pieces[q * threads:(q + 1) * threads]
        received = np.empty_like(send)
        each = send[0].nbytes
        counts = [0 if q == self.process else each for q in range(processes)]
        displacements = [q * each for q in range(processes)]
        self._mpi_wait(self.mpi.Ialltoallv([send, (counts, displacements), MPI.BYTE],
                                           [received, (counts, displacements), MPI.BYTE]),
                       rank, what)
        return received

    def permute(self, rank, x, perm, what):
        """ppermute: a pair within this process reads the source's array from shared
        memory; a pair across processes is one message (thread 0 sends and receives them
        all, tagged with the receiving rank)."""
        thread = rank - self.offset
        values = SharedMemoryCommunicator.exchange(self, thread, np.asarray(x, order="C"),
                                                   what)
        _check_same(values, rank, what)
        if thread == 0:
            self._agree(values[0], rank, what)
            self._received = self._permute_between_processes(values, perm, rank, what)
        self._wait(rank, what)
        sources = [s for s, d in perm if d == rank]
        if not sources:
            out = np.zeros_like(values[thread])
        elif self._process_of(sources[0]) == self.process:
            out = np.array(values[sources[0] - self.offset])
        else:
            out = self._received[rank]
        self.done(rank, what)
        return out

    def _permute_between_processes(self, values, perm, rank, what):
        """Thread 0: send each pair's array whose source is here and destination elsewhere;
        receive those whose destination is here and source elsewhere ({rank: array})."""
        from mpi4py import MPI
        requests, received = [], {}
        for source, destination in perm:
            sends = self._process_of(source) == self.process
            receives = self._process_of(destination) == self.process
            if sends and not receives:
                requests.append(self.mpi.Isend([values[source - self.offset], MPI.BYTE],
                                               self._process_of(destination), destination))
            elif receives and not sends:
                buffer = received[destination] = np.empty_like(values[0])
                requests.append(self.mpi.Irecv([buffer, MPI.BYTE], self._process_of(source),
                                               destination))
        self._mpi_wait(lambda: MPI.Request.Testall(requests), rank, what)
        return received

    def _agree(self, x, rank, what):
        """Thread 0, before a collective's data crosses (and at a pmap call's start, x
        None): every process is in the same pmap call, in the same collective, with a
        value of this process's shape and dtype (one small Iallgather of a record of
        the same size for all). MPI moves bytes and would take a mismatch for data
        (uninitialized values, a truncated message); a mismatch aborts the collective in
        every process instead, naming both kinds. So does a process in another
        collective (a branch the processes take differently) or already in the next
        pmap call (it returned from this one early)."""
        kind = np.zeros(2 + _MAX_RANK + 3, np.int64)  # ndim, dtype, shape, what, call, devices
        if x is not None:
            kind[0], kind[1] = x.ndim, x.dtype.num
            kind[2:2 + x.ndim] = x.shape
            self.started += 1
        kind[-3] = zlib.crc32(what.encode())
        kind[-2] = -1 if self.call is None else self.call
        kind[-1] = self.threads
        everyone = np.empty((self.mpi.Get_size(), kind.size), np.int64)
        self._mpi_wait(self.mpi.Iallgather(kind, everyone), rank, what)
        for q, other in enumerate(everyone):
            reason = None
            if other[-2] != kind[-2]:
                # the processes' pmap calls no longer pair up: no later one can either
                reason = (f"process {q} left this pmap call without calling {what} (it "
                          "returned, or raised; it is in a later one)"
                          if other[-2] > kind[-2] else
                          f"process {q} is still in an earlier pmap call (number "
                          f"{other[-2]}; this process is in number {kind[-2]}): this "
                          "process returned from that one without a collective it is in")
                reason += ("; every process calls the same collectives in the same order "
                           "(one under a branch or in a loop that the processes take "
                           "differently cannot complete)")
                _PROCESSES["broken"] = f"{what} on rank {rank}: {reason}"
            elif other[-1] != kind[-1]:
                reason = (f"the processes map axes of different sizes "
                          f"({everyone[:, -1].tolist()} devices); each must use as many "
                          "devices as the others")
            elif other[-3] != kind[-3]:
                reason = (f"process {q} is in another collective at the same time; every "
                          "process calls the same collectives in the same order")
            elif not np.array_equal(other, kind):
                shape = tuple(int(d) for d in other[2:2 + other[0]])
                dtype = next((t for t in np.sctypeDict.values()
                              if np.dtype(t).num == other[1]), other[1])
                reason = (f"process {q} passed an array of shape {shape} and dtype "
                          f"{np.dtype(dtype).name}, process {self.process} one of shape "
                          f"{x.shape} and dtype {x.dtype.name}; every process must pass "
                          "the same")
            if reason is not None:
                self.abort(reason)
                raise CollectiveError(f"{what} on rank {rank}: {reason}")

    def _mpi_wait(self, request, rank, what):
        """Wait for an MPI request (or, given a function, until it says done), at most
        TRANSPILE_COLLECTIVE_TIMEOUT seconds, and no longer once another process has
        said it failed in this pmap call (or exited) without starting this collective:
        then raise at once, naming it. An abandoned request leaves the
        processes' collectives unmatched for good: later pmaps raise (see `run`)."""
        is_done = request if callable(request) else request.Test
        if self.call is not None:
            polled = [0]

            def is_done(test=is_done):
                if test():
                    return True
                polled[0] += 1
                if polled[0] % 64 == 0:        # (about a millisecond apart)
                    reason = _ended_without(self.call, self.started, self.mpi.Get_size())
                    if reason is not None:
                        _PROCESSES["broken"] = f"{what} on rank {rank}: {reason}"
                        self.abort(reason)
                        raise CollectiveError(f"{what} on rank {rank}: {reason}")
                return False
        try:
            wait_or_abort(is_done, self, rank, what, "processes")
        except CollectiveError as e:
            _PROCESSES["broken"] = _PROCESSES["broken"] or str(e)
            # (the news of this call's end counts the collectives this process completed:
            # another one in this collective cannot finish it either)
            self.started -= 1
            raise

    def end(self, failed):
        """This process is done with this pmap call. If it failed, tell the others (one
        small message each, on a communicator of its own), so that one waiting in a
        collective this process never started raises at once instead of waiting out the
        timeout. (A call that ends well says nothing: every pmap call would pay for the
        message. A process that returned early meets the others' collective with its
        next pmap call, whose number differs (`_agree`), or exits, which it announces.)"""
        if self.call is not None and failed:
            _announce_end(self.call, self.started, failed)

    def split(self, launch, position):
        # the duplicate communicator exists before the child is made (outside self._lock:
        # making it waits for the other processes, and a timeout aborts this communicator)
        self._nested_mpi(position)
        return super().split(launch, position)

    def _new_child(self, position):
        return ProcessSpanningCommunicator(self.threads, self._nested_mpi(position),
                                           check_device_counts=False)

    def _nested_mpi(self, position):
        """The MPI communicator of inner position `position` under this one: a duplicate,
        made once. Duplicating is collective, so every process makes them in the same
        order (0, 1, ... whichever thread asks first) under one lock."""
        from mpi4py import MPI
        if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
            raise CollectiveError("a collective over an axis that spans processes, inside "
                                  "a nested pmap, needs MPI_THREAD_MULTIPLE (the inner "
                                  "devices call MPI at once); mpi4py asks for it unless "
                                  "mpi4py.rc.thread_level says otherwise")
        with _NESTED_LOCK:
            made = _NESTED_MPI.setdefault(self.mpi.py2f(), [])
            while len(made) <= position:
                duplicate, request = self.mpi.Idup()
                self._mpi_wait(request, self.offset, "a nested pmap's start (a communicator "
                               "for an axis that spans processes)")
                made.append(duplicate)
            return made[position]


_NESTED_MPI = {}       # MPI communicator handle -> its duplicates, by nested position
_NESTED_LOCK = threading.Lock()
_CALLS = itertools.count()    # pmap calls spanning processes, numbered alike in each
_SENT = []                    # (buffer, request) of news of ends still being sent
_ENDED = {}                   # (call, process) -> (collectives it started, failed)


def _announce_end(call, started, failed):
    """Tell every other process that this one ended pmap call number `call` after
    starting `started` collectives in it (or failed)."""
    from mpi4py import MPI
    endings = _PROCESSES["endings"]
    news = np.array([call, started, int(failed)], np.int64)
    _SENT[:] = [(b, r) for b, r in _SENT if not r.Test()]
    for q in range(endings.Get_size()):
        if q != endings.Get_rank():
            _SENT.append((news, endings.Isend([news, MPI.INT64_T], q)))


def _announce_exit():
    """At exit (an uncaught error included): the other processes waiting for this one in
    a collective raise at once."""
    from mpi4py import MPI
    if MPI.Is_finalized():
        return
    _announce_end(EXITED, -1, failed=True)
    deadline = time.monotonic() + 1.0
    while _SENT and time.monotonic() < deadline:
        _SENT[:] = [(b, r) for b, r in _SENT if not r.Test()]


EXITED = -1          # the call number of the news that a process exited


def _read_endings(call):
    """Take in the news that arrived (what is older than call number `call` is moot)."""
    from mpi4py import MPI
    endings, status = _PROCESSES["endings"], MPI.Status()
    while endings.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG, status):
        news = np.empty(3, np.int64)
        endings.Recv([news, MPI.INT64_T], status.Get_source(), status.Get_tag())
        _ENDED[(int(news[0]), status.Get_source())] = (int(news[1]), bool(news[2]))
    for key in [k for k in _ENDED if EXITED < k[0] < call]:
        del _ENDED[key]


def _ended_without(call, started, processes):
    """Why a collective this process started (its `started`-th in pmap call number `call`)
    cannot complete, if another process has ended that call without starting it (or
    failed): the reason; else None."""
    _read_endings(call)
    for q in range(processes):
        if (EXITED, q) in _ENDED:
            return f"process {q} exited"
        ended = _ENDED.get((call, q))
        if ended is None or ended[0] >= started:
            continue      # (it started this collective: the request completes)
        if ended[0] < 0:
            return (f"process {q} failed at the start of this pmap call (its own error is "
                    "raised there)")
        if ended[1]:
            return (f"process {q} failed in this pmap call after {ended[0]} collectives "
                    "(its own error is raised there) and will not join this one")
        return (f"process {q} returned from this pmap call after {ended[0]} collectives "
                    "without calling this one; every process calls the same collectives "
                    "in the same order (one under a branch or in a loop that the "
                    "processes take differently cannot complete)")
    return None


def _stretch(n, parts, k):
    base, extra = divmod(n, parts)
    lo = k * base + min(k, extra)
    return lo, lo + base + (1 if k < extra else 0)


def _block_length(v, parts, axis, tiled, what):
    """How many entries of v along `axis` each of `parts` ranks gets (1 and the axis
    dropped when not tiled): the axis must have one entry a rank, or (tiled) a multiple."""
    if not tiled:
        if v.shape[axis] != parts:
            raise CollectiveError(f"{what}: axis {axis} has {v.shape[axis]} entries, but "
                                  f"the mapped axis has {parts} (pass tiled=True to split "
                                  "it into blocks)")
        return 1
    if v.shape[axis] % parts:
        raise CollectiveError(f"{what}: axis {axis} has {v.shape[axis]} entries, not a "
                              f"multiple of the {parts} ranks")
    return v.shape[axis] // parts


def _block(v, k, parts, axis, tiled, what):
    """Rank k's block of v along `axis` (not tiled: entry k, the axis dropped)."""
    axis = axis % max(v.ndim, 1)
    size = _block_length(v, parts, axis, tiled, what)
    if not tiled:
        return v.take(k, axis=axis)
    return v.take(range(k * size, (k + 1) * size), axis=axis)


def _pieces(v, parts, axis, tiled, what):
    """Every rank's block of v at once, contiguous: piece k (shape (length,) + the other
    axes) is rank k's block with `axis` moved to the front."""
    size = _block_length(v, parts, axis, tiled, what)
    moved = np.moveaxis(v, axis, 0)
    return np.ascontiguousarray(moved).reshape((parts, size) + moved.shape[1:])


_MAX_RANK = 64          # numpy's most dimensions (NPY_MAXDIMS)


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
    if comm is None and mpi is not None and not parent and _PROCESSES["broken"]:
        # (the others wait for this call: -1, it did not even start it)
        _announce_end(next(_CALLS), -1, failed=True)
        raise CollectiveError(
            f"pmap across processes: a collective between them failed earlier "
            f"({_PROCESSES['broken'].splitlines()[0]}); MPI matches the processes' "
            "collectives in order, and the abandoned one can never be matched, so no "
            "later one can either: restart the processes")
    if comm is None:
        comm = ProcessSpanningCommunicator(n, mpi) if mpi is not None and not parent else \
            SharedMemoryCommunicator(n)
    launch = getattr(_local, "launches", 0)
    _local.launches = launch + 1
    results, errors = [None] * n, [None] * n
    finished = threading.Semaphore(0)

    def task_for(rank):
        def task():
            try:        # split too: across processes it can raise (a timeout, say)
                axes = {name: (c.split(launch, rank), k)
                        for name, (c, k) in parent.items()}
                axes[axis_name] = (comm, comm.rank_of(rank))
                _local.axes, _local.launches, _local.device = axes, 0, devices[rank]
                results[rank] = fn(*per_rank_args[rank])
                for c, own_rank in axes.values():
                    c.finished(own_rank, devices[rank])
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
    if isinstance(comm, ProcessSpanningCommunicator):
        comm.end(failed=bool(raised))
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
