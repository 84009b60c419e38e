"""pmap's collectives between processes: the time of a pmap whose only work is one
collective, for each collective and size, with every process's devices mapped.

    TRANSPILE_CPU_DEVICES=2 mpiexec -n 2 python tests/benchmarks/mpi_collectives.py

Each device holds an (n, k) float64 array of the given size, n the number of devices in all
(so psum_scatter and all_to_all split axis 0 one entry a device), already on the devices (a
previous pmap's result). Process 0 prints one line per case: the median over the repeats,
each repeat started together (an MPI barrier before it).
"""
import argparse
import statistics
import time

import numpy as np

import transpile as tp

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--sizes", default="1024,1048576,16777216",
                    help="bytes per device, comma-separated")
parser.add_argument("--quick", action="store_true", help="fewer repeats")
args = parser.parse_args()

tp.distributed.initialize()
from runtime import spmd  # noqa: E402  (after initialize: the communicator it made)

mpi = spmd.join_processes()
n, local = tp.device_count(), tp.local_device_count()
shift = [(k, (k + 1) % n) for k in range(n)]
COLLECTIVES = {
    "psum": lambda v: tp.psum(v, "i"),
    "all_gather": lambda v: tp.all_gather(v, "i"),
    "ppermute (shift by 1)": lambda v: tp.ppermute(v, "i", shift),
    "all_to_all": lambda v: tp.all_to_all(v, "i", 0, 0),
    "psum_scatter": lambda v: tp.psum_scatter(v, "i"),
}


def median_time(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        mpi.Barrier()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


if mpi.Get_rank() == 0:
    print(f"{tp.process_count()} processes x {local} devices, numpy {np.__version__}")
for nbytes in [int(s) for s in args.sizes.split(",")]:
    reps = 200 if nbytes <= 1 << 12 else 30 if nbytes <= 1 << 21 else 5
    reps = max(3, reps // 4) if args.quick else reps
    k = max(1, nbytes // 8 // n)
    host = np.random.default_rng(tp.process_index()).standard_normal((local, n, k))
    x = tp.pmap(lambda v: v)(host)
    for name, body in COLLECTIVES.items():
        f = tp.pmap(body, "i")
        seconds = median_time(lambda: f(x), reps)
        if mpi.Get_rank() == 0:
            print(f"{name:24s} {nbytes:>9d} B/device  {1e3 * seconds:9.3f} ms", flush=True)
