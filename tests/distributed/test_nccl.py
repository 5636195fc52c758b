"""The NCCL path (cupy tensors) on the GPU machine: one GPU means world size 1, so these test
the code path (every collective and DDP through NCCL), not scaling."""
import pytest

from mpitools import assert_ok, needs_mpi, run_ranks

pytestmark = [pytest.mark.cuda, pytest.mark.multiprocess, needs_mpi]

NCCL = {"EMBER_TEST_BACKEND": "nccl"}


def test_nccl_collectives_match_numpy():
    assert_ok(run_ranks("worker_collectives.py", 1, timeout=120, env=NCCL), 1, "collectives")


def test_nccl_ddp_equals_single_process():
    assert_ok(run_ranks("worker_ddp.py", 1, timeout=120, env=NCCL), 1, "ddp")


def test_auto_backend_picks_nccl_with_a_gpu():
    res = run_ranks("worker_backend.py", 1, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "backend nccl" in res.stdout
