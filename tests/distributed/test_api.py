"""In-process checks (no ranks started): the API without a process group, ReduceOp names,
the launcher's command line, and the reducer's graph walk and bucketing."""
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember import nn
from ember.distributed.launch import command, find_mpiexec
from ember.nn.parallel.reducer import count_grad_edges, output_tensors
from mpitools import HERE, needs_mpi


def test_not_initialized_errors_are_clear():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.get_rank()
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_reduce(ember.ones(2))
    with pytest.raises(ValueError, match="backend"):
        dist.init_process_group("tcp")


def test_reduce_op_names():
    assert dist.ReduceOp.SUM.name == "SUM"
    from ember.distributed.reduce_op import as_op

    assert as_op("avg") is dist.ReduceOp.AVG and as_op("prod") is dist.ReduceOp.PRODUCT
    with pytest.raises(ValueError, match="op must be"):
        as_op("median")


@needs_mpi
def test_launch_command_line():
    argv = command("train.py", 3, ["--lr", 0.1])
    assert argv[0] == find_mpiexec() and argv[1:3] == ["-n", "3"]
    assert argv[3:] == [sys.executable, "train.py", "--lr", "0.1"]
    with pytest.raises(ValueError, match="nproc"):
        command("train.py", 0)


@needs_mpi
@pytest.mark.multiprocess
def test_launch_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "ember.distributed", "--nproc", "2",
                        "--timeout", "60", f"{HERE}/worker_backend.py"],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr, r.stderr
    assert "rank 0: backend mpi" in r.stdout and "rank 1: backend mpi" in r.stdout


def test_graph_walk_counts_every_edge_into_a_parameter():
    lin = nn.Linear(3, 3)
    other = nn.Linear(3, 1)
    x = ember.ones(2, 3)
    out = lin(lin(x)) + lin.bias  # weight used twice, bias three times
    extra = other(x)
    ids = [id(lin.weight), id(lin.bias), id(other.weight)]
    c = count_grad_edges(output_tensors({"a": out, "b": [3, (out,)]}, []), ids)
    assert c[id(lin.weight)] == 2 and c[id(lin.bias)] == 3 and c[id(other.weight)] == 0
    # the engine sums a leaf's contributions, then calls its post-accumulate hook once: the
    # reducer relies on that (one "ready" per reached parameter per backward)
    hits = []
    lin.weight.register_post_accumulate_grad_hook(lambda p: hits.append(p.grad.array.copy()))
    (out.sum() + extra.sum()).backward()
    assert len(hits) == 1
    np.testing.assert_array_equal(hits[0], lin.weight.grad.array)
    assert np.isfinite(lin.weight.grad.array).all()


def test_buckets_reverse_order_one_dtype_each_first_small():
    from types import SimpleNamespace

    from ember.nn.parallel.reducer import FIRST_BUCKET_BYTES, Reducer

    group = SimpleNamespace(impl=SimpleNamespace(name="mpi"), size=2)
    shapes = [(300_000,), (10,), (300_000,), (300_000,), (5,)]
    ps = [nn.Parameter(ember.zeros(*s)) for s in shapes]
    ps[1] = nn.Parameter(ember.zeros(10, dtype=ember.float64))
    named = [(f"p{i}", p) for i, p in enumerate(ps)]
    r = Reducer(named, group, bucket_cap_mb=2.5, find_unused=False, as_view=False,
                static_graph=False)
    layout = [b.params for b in r.buckets]
    # reverse order; the float64 parameter splits the run; the first bucket stays <= 1 MB
    assert layout == [[4], [3, 2], [1], [0]], layout
    assert r.buckets[0].flat.nbytes <= FIRST_BUCKET_BYTES + 20
    assert r.buckets[2].flat.dtype == np.float64
    assert all(b.flat.dtype == np.float32 for i, b in enumerate(r.buckets) if i != 2)
    r.remove()


@needs_mpi
@pytest.mark.multiprocess
def test_launch_kills_a_hung_job_at_its_timeout(tmp_path):
    import time

    from ember.distributed import launch

    script = tmp_path / "hang.py"
    script.write_text("import time\ntime.sleep(60)\n")
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        launch(str(script), 2, timeout=1.5)
    assert time.monotonic() - t0 < 10


def test_gloo_runs_on_mpi_with_a_notice():
    import subprocess
    import sys

    code = ("import ember.distributed as dist\n"
            "dist.init_process_group('gloo', init_method='tcp://127.0.0.1:23456', rank=0, "
            "world_size=1)\n"
            "print(dist.get_backend(), dist.get_world_size())\n"
            "dist.destroy_process_group()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["mpi", "1"]
    assert "backend 'gloo' runs on MPI" in r.stderr
