"""pmap across processes: tests/mpi_check.py under `mpiexec -n 2`, 2 virtual devices each,
against the single-process result (every collective, grad through pmap, a data-parallel
training step, and a collective one process skips timing out instead of hanging)."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import transpile as tp

HERE = pathlib.Path(__file__).parent


def _mpiexec():
    beside = pathlib.Path(sys.executable).parent / "mpiexec"   # the mpich wheel's, in a venv
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def test_two_processes_of_two_devices_agree_with_one_process():
    pytest.importorskip("mpi4py")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec (pip install mpich)")
    out = _run(mpiexec)
    for rank in (0, 1):
        for what in ("collectives", "grad through pmap", "data-parallel step"):
            assert f"rank {rank}: {what} ok" in out, out


def test_a_process_that_skips_a_collective_makes_the_other_raise_not_hang():
    pytest.importorskip("mpi4py")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec (pip install mpich)")
    out = _run(mpiexec, "--timeout", check=False)
    assert "rank 0: psum a process skips times out ok" in out, out


def _run(mpiexec, *flags, check=True):
    env = dict(os.environ, TRANSPILE_CPU_DEVICES="2")
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, str(HERE / "mpi_check.py"),
                           *flags], capture_output=True, text=True, timeout=300, env=env)
    out = done.stdout + done.stderr
    if check:
        assert done.returncode == 0, out
    return out


def test_one_process_without_initialize():
    assert tp.process_count() == 1 and tp.process_index() == 0
    assert tp.local_devices() == tp.devices()
    assert [d.process_index for d in tp.devices()] == [0] * tp.device_count()
