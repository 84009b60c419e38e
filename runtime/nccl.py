"""pmap's communicator on CUDA GPUs: NCCL through cupy.cuda.nccl, one communicator per
device, created once for a set of devices (`NcclCommunicator.initAll`) and cached.

It has the interface of the shared-memory communicator (runtime/spmd.py), so the
collectives in runtime/collectives.py do not know which one they call: each device's
thread calls its own NCCL communicator on the current stream of its device. ppermute and
all_to_all are grouped sends and receives. A collective whose stream has not finished
after TRANSPILE_COLLECTIVE_TIMEOUT seconds aborts the communicators and raises.

`nccl` and `xp` are parameters (cupy.cuda.nccl and cupy by default) so that the
orchestration above NCCL (buffers, counts, data types, the grouped point-to-point calls)
is checked on the CPU with a stand-in (tests/test_pmap_nccl.py); NCCL itself runs only
where a GPU is.
"""
import numpy as np

from .spmd import CollectiveError, wait_or_abort

_COMMUNICATORS = {}


def communicator(device_ids, nccl=None, xp=None):
    """The NcclCommunicator of these devices, made on the first call."""
    key = tuple(device_ids)
    if key not in _COMMUNICATORS:
        _COMMUNICATORS[key] = NcclCommunicator(device_ids, nccl, xp)
    return _COMMUNICATORS[key]


class NcclCommunicator:
    """Collectives among GPUs driven by the threads of one process, one thread a device."""

    def __init__(self, device_ids, nccl=None, xp=None):
        if nccl is None:
            from cupy.cuda import nccl
        if xp is None:
            import cupy as xp
        self.nccl, self.xp = nccl, xp
        self.size = len(device_ids)
        self.comms = nccl.NcclCommunicator.initAll(list(device_ids))
        self._types = {np.dtype(np.float64): nccl.NCCL_FLOAT64,
                       np.dtype(np.float32): nccl.NCCL_FLOAT32,
                       np.dtype(np.float16): nccl.NCCL_FLOAT16,
                       np.dtype(np.int64): nccl.NCCL_INT64,
                       np.dtype(np.int32): nccl.NCCL_INT32,
                       np.dtype(np.uint32): nccl.NCCL_UINT32,
                       np.dtype(np.uint64): nccl.NCCL_UINT64,
                       np.dtype(np.int8): nccl.NCCL_INT8,
                       np.dtype(np.uint8): nccl.NCCL_UINT8}
        self._ops = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN}

    def rank_of(self, thread):
        return thread

    def split(self, launch, position):
        return _NotOnGpus()

    def finished(self, rank, device):
        """(A device that returns while others wait in a collective: NCCL cannot tell;
        their wait times out.)"""

    def abort(self, reason):
        for comm in self.comms:
            comm.abort()

    # -- buffers
    def _prepare(self, x, what):
        x = self.xp.ascontiguousarray(self.xp.asarray(x))
        if x.dtype.kind == "c":      # NCCL has no complex type: the real and imaginary parts
            return x.view(x.real.dtype), x.dtype
        if x.dtype == np.bool_:
            return x.astype(np.uint8), x.dtype
        if np.dtype(x.dtype) not in self._types:
            raise CollectiveError(f"{what}: NCCL cannot send {x.dtype} arrays")
        return x, x.dtype

    def _type(self, x):
        return self._types[np.dtype(x.dtype)]

    def _stream(self):
        stream = getattr(getattr(self.xp, "cuda", None), "get_current_stream", None)
        return stream() if stream is not None else None

    def _finish(self, rank, what):
        """Wait for this device's stream, at most the collective timeout."""
        stream = self._stream()
        if stream is None:
            return
        wait_or_abort(lambda: stream.done, self, rank, what, "devices")
        self.comms[rank].check_async_error()

    def _ptr(self, a):
        data = a.data
        return data.ptr if hasattr(data, "ptr") else a.ctypes.data

    def _stream_ptr(self):
        stream = self._stream()
        return 0 if stream is None else stream.ptr

    # -- collectives
    def allreduce(self, rank, x, op, what):
        send, dtype = self._prepare(x, what)
        if np.dtype(dtype).kind == "c" and op != "sum":
            # NCCL has no order of complex numbers: every device's value comes here, and
            # the array module orders them as numpy does on CPU devices and under vmap
            everyone = self.allgather(rank, x, 0, False, what)
            reduce = self.xp.maximum if op == "max" else self.xp.minimum
            return reduce.reduce(everyone, axis=0)
        out = self.xp.empty_like(send)
        self.comms[rank].allReduce(self._ptr(send), self._ptr(out), send.size,
                                   self._type(send), self._ops[op], self._stream_ptr())
        self._finish(rank, what)
        return _restore(out, dtype)

    def allgather(self, rank, x, axis, tiled, what):
        send, dtype = self._prepare(x, what)
        out = self.xp.empty((self.size,) + send.shape, dtype=send.dtype)
        self.comms[rank].allGather(self._ptr(send), self._ptr(out), send.size,
                                   self._type(send), self._stream_ptr())
        self._finish(rank, what)
        out = _restore(out, dtype)
        if tiled:
            return self.xp.concatenate([out[k] for k in range(self.size)], axis=axis)
        return self.xp.moveaxis(out, 0, axis)

    def reduce_scatter(self, rank, x, axis, tiled, what):
        x = self.xp.asarray(x)
        axis = axis % max(x.ndim, 1)
        if x.shape[axis] % self.size or (not tiled and x.shape[axis] != self.size):
            raise CollectiveError(f"{what}: axis {axis} has {x.shape[axis]} entries for "
                                  f"{self.size} ranks")
        blocks = self.xp.moveaxis(x, axis, 0)            # block k: rows of rank k
        send, dtype = self._prepare(blocks, what)
        count = send.size // self.size
        out = self.xp.empty((send.shape[0] // self.size,) + send.shape[1:], send.dtype)
        self.comms[rank].reduceScatter(self._ptr(send), self._ptr(out), count,
                                       self._type(send), self._ops["sum"],
                                       self._stream_ptr())
        self._finish(rank, what)
        out = _restore(out, dtype)
        if not tiled:
            return out[0]
        return self.xp.moveaxis(out, 0, axis)

    def permute(self, rank, x, perm, what):
        send, dtype = self._prepare(x, what)
        out = self.xp.zeros_like(send)
        nccl, comm, stream = self.nccl, self.comms[rank], self._stream_ptr()
        nccl.groupStart()
        for source, destination in perm:
            if source == rank:
                comm.send(self._ptr(send), send.size, self._type(send), destination, stream)
            if destination == rank:
                comm.recv(self._ptr(out), out.size, self._type(out), source, stream)
        nccl.groupEnd()
        self._finish(rank, what)
        return _restore(out, dtype)

    def alltoall(self, rank, x, split_axis, concat_axis, tiled, what):
        x = self.xp.asarray(x)
        axis = split_axis % max(x.ndim, 1)
        if x.shape[axis] % self.size or (not tiled and x.shape[axis] != self.size):
            raise CollectiveError(f"{what}: axis {axis} has {x.shape[axis]} entries for "
                                  f"{self.size} ranks")
        send, dtype = self._prepare(self.xp.moveaxis(x, axis, 0), what)
        pieces = send.reshape((self.size, -1) + send.shape[1:])   # piece k goes to rank k
        got = self.xp.empty_like(pieces)
        nccl, comm, stream = self.nccl, self.comms[rank], self._stream_ptr()
        nccl.groupStart()
        for peer in range(self.size):
            part, into = pieces[peer], got[peer]
            comm.send(self._ptr(part), part.size, self._type(part), peer, stream)
            comm.recv(self._ptr(into), into.size, self._type(into), peer, stream)
        nccl.groupEnd()
        self._finish(rank, what)
        got = _restore(got, dtype)                        # [source, block rows, ...]
        blocks = [self.xp.moveaxis(got[s], 0, axis) for s in range(self.size)]
        if not tiled:
            blocks = [b.take(0, axis=axis) for b in blocks]
            return self.xp.stack(blocks, axis=concat_axis)
        return self.xp.concatenate(blocks, axis=concat_axis)


def _restore(a, dtype):
    if a.dtype == dtype:
        return a
    if np.dtype(dtype).kind == "c":
        return a.view(dtype)
    return a.astype(dtype)


class _NotOnGpus:
    def __getattr__(self, name):
        raise CollectiveError("a collective over an outer pmap's axis inside a nested pmap "
                              "is not supported on GPUs")
