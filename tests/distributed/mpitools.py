"""Helpers for the distributed tests (on sys.path through conftest.py)."""
import os
import subprocess

import pytest

from ember.distributed.launch import can_launch

HERE = os.path.dirname(os.path.abspath(__file__))

needs_mpi = pytest.mark.skipif(not can_launch(), reason="mpi4py / mpiexec not installed")


def run_ranks(script, n, timeout=60, env=None):
    """Run tests/distributed/<script> on n ranks through ember.distributed.launch; returns the
    CompletedProcess (never hangs: the whole job is killed at ``timeout``)."""
    from ember.distributed import launch

    env = dict(env or {})
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        return launch(os.path.join(HERE, script), n, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{script} on {n} ranks hung past {timeout} s:\n{e.stdout}\n{e.stderr}")


def assert_ok(res, n, word):
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    for r in range(n):
        assert f"rank {r}: {word} ok" in out, out
