"""ember.multiprocessing: shared storage in place, tensors by handle across processes (fork and
spawn), Hogwild training, spawn's error reports, and no leaked segments."""
import copy
import doctest
import gc
import glob
import multiprocessing
import os
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember.multiprocessing import _sharing
import mp_workers as W  # tests/core is on sys.path (conftest), so spawn children import it too


def _roundtrip(t):
    return ForkingPickler.loads(ForkingPickler.dumps(t))


def test_share_memory_in_place_keeps_identity_and_layout():
    p = ember.nn.Parameter(ember.randn(4, 5))
    p.grad = ember.ones(4, 5)
    grad, before = p.grad, p.numpy(force=True).copy()
    assert not mp.is_shared(p)
    assert mp.share_memory_(p) is p
    assert type(p) is ember.nn.Parameter and p.requires_grad and p.grad is grad
    assert mp.is_shared(p) and not mp.is_shared(p.grad)
    np.testing.assert_array_equal(p.numpy(force=True), before)
    arr = p.array
    mp.share_memory_(p)  # already shared: nothing moves
    assert p.array is arr
    # strides survive: transposed, reversed, broadcast (stride 0) views
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    for view in (base.T, base[::-1, ::2], np.broadcast_to(base[0], (3, 6))):
        t = ember.Tensor._make(view)
        mp.share_memory_(t)
        assert t.array.strides == view.strides and t.dtype == ember.float64
        np.testing.assert_array_equal(t.array, view)
        assert t.array.flags.writeable == view.flags.writeable
    e = mp.share_memory_(ember.zeros(0, 3))
    assert mp.is_shared(e) and e.shape == (0, 3)
    with pytest.raises(TypeError, match="ember Tensor"):
        mp.share_memory_(np.zeros(3))
    # autograd still flows through the shared parameter
    (p * 2).sum().backward()
    assert p.grad is grad and float(grad.sum()) == 20 + 2 * 20


def test_share_memory_module_one_segment_keeps_aliasing():
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    m[0].weight.grad = ember.zeros(4, 3)
    m.register_buffer("row", ember.Tensor._make(m[0].weight.array[1]))  # a view of a param
    assert mp.share_memory(m) is m
    tensors = list(m.parameters()) + list(m.buffers()) + [m[0].weight.grad]
    assert all(mp.is_shared(t) for t in tensors)
    segs = {id(_sharing.segment_of(t.array)) for t in tensors}
    assert len(segs) == 1
    with ember.no_grad():
        m[0].weight[1, 2] = 42.0
    assert float(m.row[2]) == 42.0  # the buffer still views the weight


def test_plain_pickle_and_unshared_tensors_copy():
    s = mp.share_memory_(ember.zeros(3))
    c = pickle.loads(pickle.dumps(s))           # ember.save-like pickling: a copy
    d = copy.deepcopy(s)
    u = ember.zeros(3)
    r = _roundtrip(u)                             # not shared: copied by the forking pickler
    h = _roundtrip(s)                             # shared: same memory
    c.add_(1), d.add_(1), r.add_(1), h.add_(5)
    assert s.tolist() == [5.0] * 3 and u.tolist() == [0.0] * 3
    assert not mp.is_shared(c) and not mp.is_shared(d) and mp.is_shared(h)
    p = mp.share_memory_(ember.nn.Parameter(ember.ones(2)))
    q = _roundtrip(p)
    assert type(q) is ember.nn.Parameter and q.requires_grad and mp.is_shared(q)


@pytest.mark.parametrize("mod", [mp, _sharing])
def test_docstring_examples(mod):
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0


def test_surface_reexported():
    for name in ("Process", "Pool", "Queue", "SimpleQueue", "Manager", "Event", "Lock",
                 "Value", "Array", "Pipe", "get_context", "set_start_method",
                 "get_start_method", "cpu_count", "current_process"):
        assert getattr(mp, name) is getattr(multiprocessing, name), name
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="file_system"):
        mp.set_sharing_strategy("file_system")


@pytest.mark.multiprocess
@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_hogwild_children_train_shared_model(method):
    ember.manual_seed(0)
    model = ember.nn.Linear(8, 1)
    mp.share_memory(model)
    x, y = W.regression_data(0)
    w0, loss0 = model.weight.numpy(force=True).copy(), W.mse(model, x, y)
    ctx = mp.get_context(method)
    done = ctx.Queue()
    procs = [ctx.Process(target=W.hogwild_train, args=(r, model, 60, done)) for r in range(2)]
    for pr in procs:
        pr.start()
    results = sorted(done.get(timeout=60) for _ in procs)
    for pr in procs:
        pr.join(30)
        assert pr.exitcode == 0
    assert [r[:2] for r in results] == [(0, True), (1, True)]
    assert {r[2] for r in results} != {os.getpid()}
    assert not np.allclose(model.weight.numpy(force=True), w0)  # the parent sees the updates
    loss1 = W.mse(model, x, y)
    assert loss1 < 0.2 * loss0, (loss0, loss1)


@pytest.mark.multiprocess
def test_tensor_through_queue_is_shared_both_ways():
    ctx = mp.get_context("spawn")
    t = mp.share_memory_(ember.zeros(2, 3))
    q, answer, release = ctx.Queue(), ctx.Queue(), ctx.Event()
    child = ctx.Process(target=W.add_from_queue, args=(q, answer, release))
    child.start()
    q.put(t)
    was_shared, theirs = answer.get(timeout=60)
    assert was_shared and t.tolist() == [[1.0] * 3] * 2      # the child's add_ is seen here
    assert mp.is_shared(theirs) and theirs.tolist() == [7.0] * 3
    theirs.mul_(2)                                            # and ours is seen there
    release.set()
    assert answer.get(timeout=60) == 42.0
    child.join(30)
    assert child.exitcode == 0


@pytest.mark.multiprocess
def test_pool_tasks_carry_shared_tensors():
    t = mp.share_memory_(ember.zeros(4))
    with mp.get_context("fork").Pool(2) as pool:
        flags = pool.map(W.fill_row, [(t, i) for i in range(4)])
    assert flags == [True] * 4 and t.tolist() == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.multiprocess
def test_spawn_args_shared_and_join_false():
    t = mp.share_memory_(ember.zeros(2))
    ctx = mp.spawn(W.write_rank, args=(t,), nprocs=2, join=False)
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 2
    while not ctx.join(timeout=30):
        pass
    assert t.tolist() == [10.0, 11.0]
    assert mp.spawn(W.write_rank, args=(t,), nprocs=1, start_method="fork") is None


@pytest.mark.multiprocess
def test_spawn_reports_failed_rank_with_traceback():
    with pytest.raises(mp.ProcessRaisedException, match="process 1") as ei:
        mp.spawn(W.rank_fails, args=(1, "raise"), nprocs=2)
    assert ei.value.error_index == 1
    assert "ValueError: boom on rank 1" in str(ei.value)
    assert "rank_fails" in str(ei.value)                      # the child's traceback
    with pytest.raises(mp.ProcessExitedException, match="process 0 .*exit code 3") as ei:
        mp.spawn(W.rank_fails, args=(0, "exit"), nprocs=2, start_method="fork")
    assert ei.value.exit_code == 3
    with pytest.raises(mp.ProcessExitedException, match="SIGKILL") as ei:
        mp.spawn(W.rank_fails, args=(1, "kill"), nprocs=2, start_method="fork")
    assert ei.value.error_index == 1 and ei.value.signal_name == "SIGKILL"
    with pytest.raises(ValueError, match="nprocs"):
        mp.spawn(W.write_rank, nprocs=0)


@pytest.mark.multiprocess
def test_no_segment_outlives_its_users(monkeypatch):
    """Segments have no /dev/shm name, and the memory goes when the last user lets go."""
    gc.collect()
    maps0, fds0 = W.memfd_maps()
    shm0 = set(glob.glob("/dev/shm/ember-mp-*"))
    t = mp.share_memory_(ember.zeros(1000))
    m = mp.share_memory(ember.nn.Linear(50, 50))
    maps, fds = W.memfd_maps()
    assert maps == maps0 + 2 and fds >= fds0 + 2
    mp.spawn(W.write_rank, args=(t,), nprocs=2)
    assert t[:2].tolist() == [10.0, 11.0]
    del t, m
    gc.collect()
    assert W.memfd_maps() == (maps0, fds0)
    # without memfd_create: a file that is unlinked as soon as it exists
    monkeypatch.setattr(_sharing, "USE_MEMFD", False)
    u = mp.share_memory_(ember.arange(5.0))
    v = _roundtrip(u)
    v.add_(1)
    assert u.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert set(glob.glob("/dev/shm/ember-mp-*")) == shm0


@pytest.mark.cuda
def test_cuda_tensor_cannot_be_shared():
    t = ember.zeros(3, device="cuda")
    with pytest.raises(RuntimeError, match="only CPU tensors"):
        mp.share_memory_(t)
    assert not mp.is_shared(t)
