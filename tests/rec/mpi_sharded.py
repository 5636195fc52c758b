"""Helpers for the sharded-module tests: launching a worker of tests/rec under mpiexec, and
what the workers share (the global batch, each rank's slice of it)."""
import os
import subprocess

import numpy as np
import pytest

from ember.distributed.launch import can_launch

import ember
from ember.rec import KeyedJaggedTensor

HERE = os.path.dirname(os.path.abspath(__file__))

needs_mpi = pytest.mark.skipif(not can_launch(), reason="mpi4py / mpiexec not installed")


def run_worker(script, n, args=(), timeout=120):
    """Run tests/rec/<script> on ``n`` ranks; fail (never hang) past ``timeout`` s."""
    from ember.distributed import launch

    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "EMBER_NUM_THREADS": "1"}
    try:
        res = launch(os.path.join(HERE, script), n, args=args, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{script} on {n} ranks hung past {timeout} s:\n{e.stdout}\n{e.stderr}")
    return res


def assert_ranks_ok(res, n, word):
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    for r in range(n):
        assert f"rank {r}: {word} ok" in out, out


def init_mpi():
    """Join the MPI job once (a worker module may be imported by another worker)."""
    import ember.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("mpi", timeout=60)


def global_batch(rng, keys, per_rank, world, num_rows, weighted=False, max_len=4):
    """``{key: (ids, lengths, weights)}`` of a batch of ``per_rank * world`` samples."""
    data = {}
    for k in keys:
        ln = rng.integers(0, max_len + 1, per_rank * world)
        ids = rng.integers(0, num_rows[k], int(ln.sum()))
        w = rng.uniform(0.5, 1.5, ids.shape[0]).astype(np.float32)
        data[k] = (ids, ln, w)
    return data


def kjt_of(data, keys, lo, hi, weighted=False):
    """The KJT of samples ``[lo, hi)`` of ``data``."""
    vals, lens, wts = [], [], []
    for k in keys:
        ids, ln, w = data[k]
        off = np.concatenate([[0], np.cumsum(ln)])
        vals.append(ids[off[lo]:off[hi]])
        wts.append(w[off[lo]:off[hi]])
        lens.append(ln[lo:hi])
    return KeyedJaggedTensor.from_lengths_sync(
        keys, ember.from_numpy(np.concatenate(vals).astype(np.int64)),
        ember.from_numpy(np.concatenate(lens).astype(np.int64)),
        weights=ember.from_numpy(np.concatenate(wts)) if weighted else None)
