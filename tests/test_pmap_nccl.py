"""pmap's NCCL communicator (runtime/nccl.py) with NCCL replaced by a stand-in on the CPU.

Without a GPU, NCCL cannot run here; what can be checked is everything above it: the
buffers, element counts and data types each collective hands NCCL, the blocks of
reduce-scatter, and the grouped sends and receives of ppermute and all_to_all. The
stand-in implements the calls cupy.cuda.nccl makes (allReduce, allGather, reduceScatter,
send/recv between groupStart/groupEnd) on host memory, reading and writing through the
pointers it is given, and every collective must give what the shared-memory communicator
gives. On a GPU, test_pmap_gpu_equals_cpu runs the real thing.
"""
import ctypes
import threading

import numpy as np
import pytest

import transpile as tp
from runtime import nccl, spmd

RNG = np.random.default_rng()
TYPES = {1: np.float64, 2: np.float32, 3: np.int64, 4: np.int32, 5: np.uint8,
         6: np.float16, 7: np.int8, 8: np.uint32, 9: np.uint64}


def _array(ptr, count, datatype):
    dtype = np.dtype(TYPES[datatype])
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=dtype, count=count)


class FakeNccl:
    """The part of cupy.cuda.nccl pmap uses, on host memory (pointers from numpy)."""
    NCCL_FLOAT64, NCCL_FLOAT32, NCCL_INT64, NCCL_INT32, NCCL_UINT8 = 1, 2, 3, 4, 5
    NCCL_FLOAT16, NCCL_INT8, NCCL_UINT32, NCCL_UINT64 = 6, 7, 8, 9
    NCCL_SUM, NCCL_MAX, NCCL_MIN = 0, 1, 2

    def __init__(self):
        self.local = threading.local()
        fake = self

        class NcclCommunicator:
            @staticmethod
            def initAll(device_ids):          # noqa: N802 - cupy's name
                shared = spmd.SharedMemoryCommunicator(len(device_ids))
                return [FakeComm(fake, shared, r) for r in range(len(device_ids))]
        self.NcclCommunicator = NcclCommunicator

    def groupStart(self):                     # noqa: N802
        self.local.group = []

    def groupEnd(self):                       # noqa: N802
        group, self.local.group = self.local.group, None
        comm = group[0][1] if group else None
        if comm is None:
            return
        sends = [(peer, _array(ptr, count, dt).copy())
                 for kind, _, ptr, count, dt, peer in group if kind == "send"]
        everyone = comm.shared.exchange(comm.rank, sends, "group")
        for kind, _, ptr, count, dt, peer in group:
            if kind == "recv":
                mine = [data for to, data in everyone[peer] if to == comm.rank]
                _array(ptr, count, dt)[:] = mine.pop(0)
                everyone[peer] = [(to, d) for to, d in everyone[peer]
                                  if not (to == comm.rank and d is mine)]
        comm.shared.done(comm.rank, "group")


class FakeComm:
    def __init__(self, fake, shared, rank):
        self.fake, self.shared, self.rank = fake, shared, rank

    def _all(self, ptr, count, datatype):
        values = self.shared.exchange(self.rank, _array(ptr, count, datatype).copy(), "fake")
        return values

    def allReduce(self, send, recv, count, datatype, op, stream):     # noqa: N802
        values = self._all(send, count, datatype)
        reduce = {0: np.add, 1: np.maximum, 2: np.minimum}[op].reduce
        _array(recv, count, datatype)[:] = reduce(np.stack(values), axis=0)
        self.shared.done(self.rank, "fake")

    def allGather(self, send, recv, count, datatype, stream):         # noqa: N802
        values = self._all(send, count, datatype)
        _array(recv, count * self.shared.size, datatype)[:] = np.concatenate(values)
        self.shared.done(self.rank, "fake")

    def reduceScatter(self, send, recv, recvcount, datatype, op, stream):   # noqa: N802
        values = self._all(send, recvcount * self.shared.size, datatype)
        total = np.add.reduce(np.stack(values), axis=0)
        _array(recv, recvcount, datatype)[:] = \
            total[self.rank * recvcount:(self.rank + 1) * recvcount]
        self.shared.done(self.rank, "fake")

    def send(self, ptr, count, datatype, peer, stream):
        self.fake.local.group.append(("send", self, ptr, count, datatype, peer))

    def recv(self, ptr, count, datatype, peer, stream):
        self.fake.local.group.append(("recv", self, ptr, count, datatype, peer))

    def abort(self):
        self.shared.abort("aborted")

    def check_async_error(self):
        pass


def every_collective(x, m, k):
    n = 4
    return {
        "psum": tp.psum(x, "i"), "pmean": tp.pmean(x, "i"), "pmax": tp.pmax(x, "i"),
        "pmin": tp.pmin(x, "i"), "psum_int": tp.psum(k, "i"),
        "psum_complex": tp.psum(x * (1 + 2j), "i"),
        "pmax_complex": tp.pmax(x + 1j * x[::-1], "i"),
        "pmin_complex": tp.pmin(x + 1j * x[::-1], "i"),
        "psum_bool": tp.psum(x > 0, "i"), "pmean_bool": tp.pmean(x > 0, "i"),
        "pmax_bool": tp.pmax(x > 0, "i"),
        "gather": tp.all_gather(x, "i"), "gather_axis1": tp.all_gather(m, "i", axis=1),
        "gather_tiled": tp.all_gather(m, "i", axis=1, tiled=True),
        "scatter": tp.psum_scatter(m, "i"),
        "scatter_tiled": tp.psum_scatter(m, "i", scatter_dimension=1, tiled=True),
        "permute": tp.ppermute(x, "i", [(0, 2), (2, 1), (1, 3)]),       # rank 0 gets none
        "all_to_all": tp.all_to_all(m, "i", 0, 1),
        "all_to_all_tiled": tp.all_to_all(m, "i", 1, 0, tiled=True),
        "index": tp.axis_index("i"),
    }


def test_every_collective_through_the_nccl_communicator_equals_shared_memory():
    n = 4
    args = [(RNG.normal(size=5), RNG.normal(size=(n, 8)), RNG.integers(-9, 9, size=3))
            for _ in range(n)]
    devices = tp.devices()[:n]
    expected = spmd.run(every_collective, args, "i", devices)
    comm = nccl.NcclCommunicator(range(n), nccl=FakeNccl(), xp=np)
    got = spmd.run(every_collective, args, "i", devices, comm)
    for rank in range(n):
        for name, value in expected[rank].items():
            g = got[rank][name]
            assert np.asarray(g).dtype == np.asarray(value).dtype, name
            np.testing.assert_allclose(g, value, rtol=1e-12, atol=1e-12, err_msg=name)


def test_nccl_refuses_what_it_cannot_send():
    comm = nccl.NcclCommunicator(range(2), nccl=FakeNccl(), xp=np)
    with pytest.raises(spmd.CollectiveError, match="NCCL cannot send"):
        spmd.run(lambda x: tp.psum(x, "i"), [(np.array(["a"]),)] * 2, "i",
                 tp.devices()[:2], comm)


@pytest.mark.gpu
def test_pmap_gpu_equals_cpu():
    gpus = tp.devices("gpu")
    if not gpus:
        pytest.skip("no CUDA GPU")
    n = len(gpus)
    x = RNG.normal(size=(n, 6))

    def f(v):
        return np.sin(v) / tp.psum(np.sum(v ** 2), "i") + tp.all_gather(v, "i")[0]
    got = tp.pmap(f, "i", backend="gpu")(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(tp.pmap(f, "i")(x)), rtol=1e-12)
    grad_gpu = tp.grad(lambda v: np.sum(tp.pmap(f, "i", backend="gpu")(v)))(x)
    grad_cpu = tp.grad(lambda v: np.sum(tp.pmap(f, "i")(v)))(x)
    np.testing.assert_allclose(np.asarray(grad_gpu), grad_cpu, rtol=1e-10)
