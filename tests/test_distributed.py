"""pmap across processes: tests/mpi_check.py under `mpiexec`, 2 processes of 2 virtual
devices (as CI runs) and 3 of 2, against the single-process result (every collective, the
point-to-point and block collectives bit for bit with the MPI calls they make, grad through
pmap, a data-parallel training step, collectives over the outer axis of a nested pmap, and
a collective one process skips timing out instead of hanging)."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import transpile as tp

HERE = pathlib.Path(__file__).parent
CHECKS = ("collectives", "grad through pmap", "data-parallel step", "ppermute", "all_to_all",
          "psum_scatter", "reductions of every dtype", "MPI calls of each collective",
          "nested pmap over an axis that spans processes")


@pytest.fixture
def mpiexec():
    """The mpiexec to start processes with (the mpich wheel's, beside a venv's python, or
    one on PATH); the test is skipped without it or mpi4py."""
    pytest.importorskip("mpi4py")
    beside = pathlib.Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec (pip install mpich)")
    return found


@pytest.mark.parametrize("processes", [2, 3])
def test_processes_of_two_devices_agree_with_one_process(processes, mpiexec):
    out = _run(mpiexec, processes)
    for rank in range(processes):
        for what in CHECKS:
            assert f"rank {rank}: {what} ok" in out, out


@pytest.mark.parametrize("how", ["early", "fails", "timeout"])
def test_a_process_that_leaves_a_collective_makes_the_other_raise_not_hang(mpiexec, how):
    """Process 1 returns without the psum, fails before it, or reaches it after the
    timeout: process 0 raises (at once where process 1 said it ended the call), and
    each process's next pmap raises too."""
    out = _run(mpiexec, 2, f"--{how}", check=False)
    ranks = (0, 1) if how != "early" else (0,)
    for rank in ranks:
        assert f"rank {rank}: {how} raises ok" in out, out
    for rank in (0, 1):
        assert f"rank {rank}: the next pmap raises ok" in out, out


def test_a_process_that_exits_makes_the_other_raise_at_once(mpiexec):
    out = _run(mpiexec, 2, "--exits", check=False)
    assert "rank 0: exits raises ok" in out, out


def test_nested_pmap_over_processes_without_thread_multiple_is_a_clear_error(mpiexec):
    out = _run(mpiexec, 2, "--serialized")
    for rank in (0, 1):
        assert f"rank {rank}: nested pmap without MPI_THREAD_MULTIPLE raises ok" in out, out


def test_processes_passing_arrays_of_different_kinds_raise(mpiexec):
    out = _run(mpiexec, 2, "--mismatch")
    for rank in (0, 1):
        for name in ("psum", "all_gather", "ppermute", "psum_scatter", "all_to_all"):
            assert f"rank {rank}: {name} of mismatched arrays raises ok" in out, out
        assert f"rank {rank}: different collectives raise ok" in out, out


def _run(mpiexec, processes, *flags, check=True):
    # PYTHONPATH: the transpile beside these tests, also where another checkout is installed
    env = dict(os.environ, TRANSPILE_CPU_DEVICES="2", PYTHONPATH=os.pathsep.join(
        [str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([mpiexec, "-n", str(processes), sys.executable,
                           str(HERE / "mpi_check.py"), *flags], capture_output=True,
                          text=True, timeout=300, env=env)
    out = done.stdout + done.stderr
    if check:
        assert done.returncode == 0, out
    return out


def test_one_process_without_initialize():
    assert tp.process_count() == 1 and tp.process_index() == 0
    assert tp.local_devices() == tp.devices()
    assert [d.process_index for d in tp.devices()] == [0] * tp.device_count()
