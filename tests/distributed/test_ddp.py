"""DistributedDataParallel equals single-process training on the concatenated batch (10 SGD
steps of a small CNN, batch 16 per rank), with small buckets, no_sync accumulation, bucket
views, unused parameters, BatchNorm buffers, sparse embeddings and mismatch errors."""
import pytest

from mpitools import assert_ok, needs_mpi, run_ranks

pytestmark = [pytest.mark.multiprocess, needs_mpi]


@pytest.mark.parametrize("n", [1, 2, 4])
def test_ddp_equals_single_process(n):
    assert_ok(run_ranks("worker_ddp.py", n), n, "ddp")
