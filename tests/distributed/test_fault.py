"""One rank raising mid-training aborts the whole job quickly, showing that rank's error."""
import glob
import time

import pytest

from mpitools import needs_mpi, run_ranks

pytestmark = [pytest.mark.multiprocess, needs_mpi]


def test_one_rank_raising_aborts_the_job():
    before = set(glob.glob("/dev/shm/mpich_shm_*"))
    t0 = time.monotonic()
    res = run_ranks("worker_fault.py", 2, timeout=30, env={"FAULT": "raise"})
    took = time.monotonic() - t0
    # MPI_Abort never unlinks MPICH's shared-memory segments: launch() removes them
    assert not set(glob.glob("/dev/shm/mpich_shm_*")) - before
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "boom on rank 1 at step 3" in out, out
    assert "rank 1 failed" in out, out
    assert "unreachable" not in out
    assert took < 30


def test_a_rank_that_never_joins_times_out_and_aborts():
    t0 = time.monotonic()
    res = run_ranks("worker_timeout.py", 2, timeout=30)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "did not complete within 1.0 s" in out, out
    assert "unreachable" not in out
    assert time.monotonic() - t0 < 20


def test_sys_exit_with_an_error_code_aborts_the_job():
    res = run_ranks("worker_fault.py", 2, timeout=30, env={"FAULT": "exit"})
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "rank 1 exited with 3" in out, out
    assert "unreachable" not in out
