"""DataLoader: batching, samplers, workers, sharding, determinism, resume, shared memory."""
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ember
from ember.data import (BatchSampler, DataLoader, IterableWrapper as W, SequenceWrapper,
                        SequentialSampler, get_worker_info)


def _vals(batches):
    return [b.numpy().tolist() if isinstance(b, ember.Tensor) else b for b in batches]


ARRAYS = [np.full(3, i, np.int64) for i in range(23)]


@pytest.mark.parametrize("nw", [0, 2])
def test_map_style_batches(nw):
    dl = DataLoader(ARRAYS, batch_size=5, num_workers=nw)
    out = list(dl)
    assert len(dl) == len(out) == 5
    assert all(isinstance(b, ember.Tensor) for b in out)
    assert out[0].shape == (5, 3) and out[-1].shape == (3, 3)
    assert np.concatenate([b.numpy()[:, 0] for b in out]).tolist() == list(range(23))
    assert len(DataLoader(ARRAYS, batch_size=5, drop_last=True, num_workers=nw)) == 4
    one = list(DataLoader(ARRAYS, batch_size=None, num_workers=nw))
    assert len(one) == 23 and one[4].tolist() == [4, 4, 4]
    custom = list(DataLoader(list(range(10)), batch_size=4, collate_fn=sum, num_workers=nw))
    assert custom == [6, 22, 17]
    bs = BatchSampler(SequentialSampler(range(6)), 4, False)
    assert [b.tolist() for b in DataLoader(list(range(6)), batch_sampler=bs, num_workers=nw)] == \
        [[0, 1, 2, 3], [4, 5]]

    class Pairs:  # any iterable of index lists works as a batch_sampler
        def __iter__(self):
            return iter([[5, 0], [3]])

        def __len__(self):
            return 2
    assert [b.tolist() for b in DataLoader(list(range(6)), batch_sampler=Pairs(), num_workers=nw)] \
        == [[5, 0], [3]]


def test_argument_checks():
    with pytest.raises(ValueError):
        DataLoader(ARRAYS, num_workers=-1)
    with pytest.raises(ValueError):
        DataLoader(ARRAYS, prefetch_factor=2)
    with pytest.raises(ValueError):
        DataLoader(ARRAYS, sampler=SequentialSampler(ARRAYS), shuffle=True)
    with pytest.raises(ValueError):
        DataLoader(ARRAYS, batch_sampler=BatchSampler(SequentialSampler(ARRAYS), 2), batch_size=3)
    with pytest.raises(ValueError):
        DataLoader(W(range(3)), sampler=SequentialSampler(range(3)))
    with pytest.raises(ValueError):
        DataLoader(ARRAYS, on_error="ignore")


@pytest.mark.parametrize("nw", [0, 2])
def test_iterable_pipe_batching_in_loader_and_in_pipe(nw):
    dp = W(range(23)).sharding_filter().map(lambda x: x * 2)
    dl = DataLoader(dp, batch_size=4, num_workers=nw)
    out = _vals(dl)
    assert len(dl) == len(out) == 6
    assert sum(out, []) == [2 * x for x in range(23)]  # in order, whatever nw
    dp2 = W(range(23)).sharding_filter().batch(4).collate()
    out2 = _vals(DataLoader(dp2, batch_size=None, num_workers=nw))
    assert out2 == [list(range(i, min(i + 4, 23))) for i in range(0, 23, 4)]
    assert len(DataLoader(dp2, batch_size=None, num_workers=nw)) == 6


@pytest.mark.multiprocess
@pytest.mark.parametrize("world", [1, 2])
@pytest.mark.parametrize("nw", [1, 2, 3, 4])
def test_sharding_union_is_dataset_and_disjoint(nw, world):
    n = 37
    for tail in ("plain", "filtered"):
        seen = []
        for rank in range(world):
            dp = W(range(n)).shuffle(buffer_size=8).sharding_filter()
            if tail == "filtered":  # a filter after sharding: blocks fall back to one sample
                dp = dp.filter(lambda x: True)
            dl = DataLoader(dp, batch_size=3, num_workers=nw, rank=rank, world_size=world,
                            shuffle=True, seed=7)
            batches = _vals(dl)
            if tail == "plain":
                assert len(dl) == len(batches)
            else:
                with pytest.raises(TypeError):
                    len(dl)
            got = sum(batches, [])
            assert len(got) == len(set(got))
            seen.append(set(got))
        assert set().union(*seen) == set(range(n))
        assert sum(len(s) for s in seen) == n


@pytest.mark.multiprocess
def test_distributed_map_style_with_distributed_sampler():
    from ember.data import DistributedSampler

    seen = []
    for rank in range(2):
        s = DistributedSampler(ARRAYS, num_replicas=2, rank=rank, seed=3)
        seen += np.concatenate(_vals(DataLoader(ARRAYS, batch_size=4, sampler=s, num_workers=2)))[:, 0].tolist()
    assert sorted(set(seen)) == list(range(23))


def _noisy(x):
    return (x, int(np.random.randint(1 << 30)), float(ember.rand(1).item()))


@pytest.mark.multiprocess
def test_determinism_whatever_num_workers():
    def run(nw, seed=11, iterable=True):
        if iterable:
            dp = W(range(40)).shuffle(buffer_size=16).sharding_filter().map(_noisy)
            dl = DataLoader(dp, batch_size=4, num_workers=nw, shuffle=True, seed=seed)
        else:
            ds = SequenceWrapper(range(40)).map(_noisy)
            dl = DataLoader(ds, batch_size=4, num_workers=nw, shuffle=True, seed=seed)
        return [[t.tolist() for t in b] for b in dl]
    for iterable in (True, False):
        ref = run(0, iterable=iterable)
        assert sorted(x for b in ref for x in b[0]) == list(range(40))
        for nw in (1, 2, 3):
            assert run(nw, iterable=iterable) == ref, (iterable, nw)
        assert run(0, seed=12, iterable=iterable) != ref


def test_epochs_differ_and_set_epoch_repeats():
    dl = DataLoader(list(range(20)), batch_size=20, shuffle=True, seed=1)
    e0, e1 = _vals(dl), _vals(dl)
    assert e0 != e1 and sorted(e0[0]) == list(range(20))
    dl.set_epoch(0)
    assert _vals(dl) == e0
    pipe = DataLoader(W(range(20)).shuffle().sharding_filter(), batch_size=20, shuffle=True, seed=1)
    p0, p1 = _vals(pipe), _vals(pipe)
    assert p0 != p1
    unshuffled = DataLoader(W(range(20)).shuffle().sharding_filter(), batch_size=20, shuffle=False)
    assert _vals(unshuffled) == [list(range(20))]


def _make_resume_loader(iterable, nw=2, seed=5):
    if iterable:
        dp = W(range(61)).shuffle(buffer_size=10).sharding_filter().map(_noisy)
        return DataLoader(dp, batch_size=4, num_workers=nw, shuffle=True, seed=seed)
    ds = SequenceWrapper(range(61)).map(_noisy)
    return DataLoader(ds, batch_size=4, num_workers=nw, shuffle=True, seed=seed)


def _flat(batches):
    return [[t.tolist() for t in b] for b in batches]


@pytest.mark.multiprocess
@pytest.mark.parametrize("iterable", [True, False])
def test_resume_two_workers_at_random_points(iterable):
    full = _flat(_make_resume_loader(iterable))
    rng = np.random.default_rng(0)
    n = len(full)  # the last cuts come after one worker has run out of samples
    for cut in [0, n - 2, n - 1, n] + rng.integers(1, n, 2).tolist():
        dl = _make_resume_loader(iterable)
        it = iter(dl)
        head = _flat(next(it) for _ in range(cut))
        state = pickle.loads(pickle.dumps(dl.state_dict()))
        dl.close()
        dl2 = _make_resume_loader(iterable)
        dl2.load_state_dict(state)
        rest = _flat(dl2)
        assert head + rest == full, (iterable, cut)
        assert _flat(dl2) != full  # and the next epoch goes on as usual
    st = DataLoader(ARRAYS).state_dict()
    assert st["delivered"] == 0


@pytest.mark.multiprocess
def test_resume_in_a_new_process(tmp_path):
    dl = _make_resume_loader(True)
    full = _flat(dl)
    dl = _make_resume_loader(True)
    it = iter(dl)
    head = _flat(next(it) for _ in range(5))
    (tmp_path / "state.pkl").write_bytes(pickle.dumps(dl.state_dict()))
    dl.close()
    script = textwrap.dedent(f"""
        import pickle, sys
        import numpy as np
        import ember
        from ember.data import DataLoader, IterableWrapper as W
        def _noisy(x):
            return (x, int(np.random.randint(1 << 30)), float(ember.rand(1).item()))
        dp = W(range(61)).shuffle(buffer_size=10).sharding_filter().map(_noisy)
        dl = DataLoader(dp, batch_size=4, num_workers=2, shuffle=True, seed=5)
        dl.load_state_dict(pickle.loads(open({str(tmp_path / 'state.pkl')!r}, 'rb').read()))
        out = [[t.tolist() for t in b] for b in dl]
        open({str(tmp_path / 'rest.pkl')!r}, 'wb').write(pickle.dumps(out))
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    rest = pickle.loads((tmp_path / "rest.pkl").read_bytes())
    assert head + rest == full


def test_resume_in_process_and_mismatch():
    mk = lambda: _make_resume_loader(True, nw=0)  # noqa: E731
    full = _flat(mk())
    dl = mk()
    it = iter(dl)
    head = _flat(next(it) for _ in range(7))
    st = dl.state_dict()
    dl2 = mk()
    dl2.load_state_dict(st)
    assert head + _flat(dl2) == full
    with pytest.raises(ValueError, match="num_workers"):
        _make_resume_loader(True, nw=2).load_state_dict(st)
    with pytest.raises(ValueError):
        DataLoader(ARRAYS).load_state_dict(st)


class _WorkerSeen:
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return np.array([i, -1 if info is None else info.id, int(os.environ.get("EMBER_T_INIT", -1))])


def _init(wid):
    os.environ["EMBER_T_INIT"] = str(100 + wid)


@pytest.mark.multiprocess
def test_worker_info_init_fn_and_persistent_workers():
    assert get_worker_info() is None
    dl = DataLoader(_WorkerSeen(), batch_size=2, num_workers=2, worker_init_fn=_init,
                    persistent_workers=True)
    out = np.concatenate(_vals(dl))
    assert out[:, 0].tolist() == list(range(8))
    assert out[:, 1].tolist() == [0, 0, 1, 1, 0, 0, 1, 1]  # batch i from worker i % 2
    assert set(out[:, 2].tolist()) == {100, 101}
    pids = [p.pid for p in dl._workers.procs]
    it = iter(dl)
    next(it)  # abandon this pass halfway: its late answers must not leak into the next
    assert np.concatenate(_vals(dl))[:, 0].tolist() == list(range(8))
    assert [p.pid for p in dl._workers.procs] == pids
    dl.close()


@pytest.mark.multiprocess
def test_spawn_context():
    ds = SequenceWrapper([np.arange(4) * i for i in range(6)])
    out = _vals(DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="spawn"))
    assert np.concatenate(out).tolist() == [(np.arange(4) * i).tolist() for i in range(6)]


def _base_is_mmap(t):
    import mmap

    a = t.numpy()
    while a is not None and not isinstance(a, mmap.mmap):
        a = a.obj if isinstance(a, memoryview) else a.base
    return a is not None


@pytest.mark.multiprocess
def test_batches_travel_through_shared_memory_and_are_cleaned_up():
    big = SequenceWrapper([np.full((64, 64), i, np.float32) for i in range(8)])
    dl = DataLoader(big, batch_size=4, num_workers=2)
    batches = list(dl)
    assert all(_base_is_mmap(b) for b in batches)
    assert batches[1].numpy()[:, 0, 0].tolist() == [4, 5, 6, 7]
    batches[0].numpy()[:] = 0  # writable
    leftovers = [f for f in os.listdir("/dev/shm") if f.startswith(f"ember-{os.getpid()}-")]
    assert leftovers == []


@pytest.mark.multiprocess
def test_small_shared_memory_falls_back_to_files(tmp_path):
    big = SequenceWrapper([np.full((64, 64), i, np.float32) for i in range(8)])
    with pytest.warns(RuntimeWarning, match="shared memory"):
        dl = DataLoader(big, batch_size=4, num_workers=2, expected_batch_bytes=1 << 50)
        out = list(dl)
    assert np.stack([b.numpy() for b in out]).shape == (2, 4, 64, 64)
    dl = DataLoader(big, batch_size=4, num_workers=1, buffer_dir=str(tmp_path))
    assert len(list(dl)) == 2 and list(tmp_path.iterdir()) == []


def test_pin_memory_without_gpu_warns():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.warns(RuntimeWarning, match="pin_memory"):
        out = list(DataLoader(ARRAYS, batch_size=8, pin_memory=True))
    assert len(out) == 3


@pytest.mark.cuda
def test_pin_memory_gives_pinned_buffers():
    import cupy

    out = list(DataLoader(ARRAYS, batch_size=8, pin_memory=True, num_workers=1))
    a = out[0].numpy()
    assert isinstance(a.base, cupy.cuda.PinnedMemoryPointer)  # cupyx.empty_pinned's buffer
    assert a[:, 0].tolist() == list(range(8))


@pytest.mark.multiprocess
def test_in_order_false_delivers_everything():
    out = _vals(DataLoader(list(range(30)), batch_size=3, num_workers=2, in_order=False))
    assert sorted(sum(out, [])) == list(range(30))


def test_pipe_without_sharding_filter_gets_one():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dl = DataLoader(W(range(10)).map(lambda x: x), batch_size=2, num_workers=2)
    assert any("sharding_filter" in str(x.message) for x in w)
    assert sorted(sum(_vals(dl), [])) == list(range(10))


def test_loader_explain():
    dl = DataLoader(W(range(10)).shuffle().sharding_filter().map(str), batch_size=4)
    text = " ".join(dl.explain(file=False).split())
    assert "sharding block: 4" in text and "exactly once" in text
    assert "sampler" in DataLoader(ARRAYS).explain(file=False)


@pytest.mark.multiprocess
def test_ragged_batches_through_workers():
    import functools

    from ember.data import Ragged, default_collate

    seqs = [np.arange(i % 5 + 1, dtype=np.int64) for i in range(10)]
    dl = DataLoader(seqs, batch_size=4, num_workers=2,
                    collate_fn=functools.partial(default_collate, ragged=True))
    out = list(dl)
    assert all(isinstance(b, Ragged) and isinstance(b.values, ember.Tensor) for b in out)
    assert out[0].offsets.tolist() == [0, 1, 3, 6, 10]
    flat = np.concatenate([b.values.numpy() for b in out])
    assert flat.tolist() == np.concatenate(seqs).tolist()
