"""More than one process: `tp.distributed.initialize()` under mpiexec.

    mpiexec -n 2 python train.py        # each process: TRANSPILE_CPU_DEVICES devices

After `initialize()`, every pmap that no other pmap encloses spans all processes: each
process passes its own slice (as many entries as it maps devices, the same in every
process), `tp.axis_index` counts devices across processes (process 0's first), and the
collectives reduce over all of them: within a process through shared memory, between
processes through MPI (mpi4py; `pip install mpi4py mpich` gives both it and `mpiexec`).
Results stay local: each process gets its own devices' outputs. `tp.device_count()` is
global, `tp.local_device_count()` this process's.
"""
from runtime import spmd
from .errors import TransformError


def initialize(coordinator_address=None, num_processes=None, process_id=None):
    """Join the processes `mpiexec` started. The arguments are JAX's; under MPI the launcher
    already says them, so any given must agree with it."""
    try:
        mpi = spmd.join_processes()
    except ImportError:
        raise TransformError("tp.distributed.initialize needs mpi4py.\n  hint: pip install "
                             "mpi4py mpich, then start the processes with mpiexec -n N.")
    if num_processes is not None and num_processes != mpi.Get_size():
        raise ValueError(f"initialize: num_processes={num_processes}, but mpiexec started "
                         f"{mpi.Get_size()}")
    if process_id is not None and process_id != mpi.Get_rank():
        raise ValueError(f"initialize: process_id={process_id}, but this is MPI rank "
                         f"{mpi.Get_rank()}")
