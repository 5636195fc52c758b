"""Every collective against a numpy reference on real ranks (float32/float64/int64, odd sizes,
uneven all_to_all_single, async ops, point-to-point, objects, sub-groups, samplers)."""
import pytest

from mpitools import assert_ok, needs_mpi, run_ranks

pytestmark = [pytest.mark.multiprocess, needs_mpi]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_collectives_match_numpy(n):
    assert_ok(run_ranks("worker_collectives.py", n), n, "collectives")
