"""Replay buffers: storages, writers, uniform samplers, TensorDict buffers, errors."""
import numpy as np
import pytest
from scipy import stats

import ember
from ember.rl import TensorDict
from ember.rl.data import (LazyMemmapStorage, LazyTensorStorage, ListStorage, RandomSampler,
                           ReplayBuffer, RoundRobinWriter, SamplerWithoutReplacement,
                           TensorDictReplayBuffer, TensorDictRoundRobinWriter)


def _td(n, start=0):
    ids = np.arange(start, start + n)
    return TensorDict({"obs": ember.tensor(np.stack([ids, -ids], 1).astype(np.float32)),
                       "next": {"reward": ember.tensor(ids.astype(np.float32)[:, None])},
                       "id": ember.tensor(ids)}, [n])


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage])
def test_round_robin_overwrites_oldest(storage_cls, tmp_path):
    kw = {"scratch_dir": tmp_path / "mm"} if storage_cls is LazyMemmapStorage else {}
    rb = TensorDictReplayBuffer(storage=storage_cls(10, **kw), batch_size=5)
    idx = rb.extend(_td(7))
    assert idx.tolist() == list(range(7)) and len(rb) == 7
    idx = rb.extend(_td(6, start=7))
    assert idx.tolist() == [7, 8, 9, 0, 1, 2] and len(rb) == 10
    assert rb.writer._cursor == 3 and rb.write_count == 13
    ids = rb[:]["id"].tolist()
    assert ids == [10, 11, 12, 3, 4, 5, 6, 7, 8, 9]
    assert rb[:]["next", "reward"][:, 0].tolist() == [float(i) for i in ids]
    # the stored rows carry their own storage index
    assert rb[:]["index"].tolist() == list(range(10))
    if storage_cls is LazyMemmapStorage:
        # the rows live in the files under scratch_dir: a fresh map of them sees the writes
        back = TensorDict.load_memmap(tmp_path / "mm")
        assert back["id"].tolist() == ids and back["index"].tolist() == list(range(10))


def test_extend_larger_than_capacity_keeps_last_items():
    rb = ReplayBuffer(storage=LazyTensorStorage(4))
    rb.extend(ember.arange(10.))
    assert sorted(rb[:].tolist()) == [6.0, 7.0, 8.0, 9.0]
    assert rb.writer._cursor == 2


def test_extend_sets_index_in_input_and_sample_carries_it():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(20), batch_size=6)
    data = _td(8)
    rb.extend(data)
    assert data["index"].tolist() == list(range(8))
    _ = ember.manual_seed(0)
    s = rb.sample()
    assert s.batch_size == (6,)
    # every sampled row is the row its index points to
    assert s["id"].tolist() == s["index"].tolist()
    assert np.array_equal(s["obs"].numpy()[:, 0], s["id"].numpy().astype(np.float32))


def test_add_single_items_list_storage():
    rb = ReplayBuffer(storage=ListStorage(3), batch_size=4)
    for i in range(5):
        rb.add(ember.tensor([float(i), 2.0 * i]))
    assert len(rb) == 3
    _ = ember.manual_seed(1)
    s = rb.sample()
    assert s.shape == (4, 2)
    assert set(s[:, 0].tolist()) <= {2.0, 3.0, 4.0}
    rb2 = ReplayBuffer(storage=ListStorage(10))
    for obj in ({"a": 1}, "text", [1, 2]):
        rb2.add(obj)
    assert rb2.sample(5) and all(x in ({"a": 1}, "text", [1, 2]) for x in rb2.sample(5))


def test_random_sampler_is_uniform_and_seeded():
    rb = ReplayBuffer(storage=LazyTensorStorage(16), sampler=RandomSampler())
    rb.extend(ember.arange(16))
    ember.manual_seed(123)
    a = rb.sample(40000).numpy()
    ember.manual_seed(123)
    b = rb.sample(40000).numpy()
    assert np.array_equal(a, b)
    counts = np.bincount(a, minlength=16)
    assert stats.chisquare(counts).pvalue > 1e-3
    # a generator of its own
    g = ember.Generator().manual_seed(5)
    rb.set_rng(g)
    c = rb.sample(10).numpy()
    g.manual_seed(5)
    assert np.array_equal(rb.sample(10).numpy(), c)


def test_sampler_without_replacement_covers_everything_once():
    rb = ReplayBuffer(storage=LazyTensorStorage(10), sampler=SamplerWithoutReplacement(),
                      batch_size=3)
    rb.extend(ember.arange(10))
    ember.manual_seed(0)
    batches = list(rb)  # stops when the sampler runs out
    assert [len(b) for b in batches] == [3, 3, 3, 1]
    flat = np.concatenate([b.numpy() for b in batches])
    assert sorted(flat.tolist()) == list(range(10))
    assert flat.tolist() != list(range(10))  # shuffled


def test_sampler_without_replacement_drop_last_and_order():
    s = SamplerWithoutReplacement(drop_last=True, shuffle=False)
    rb = ReplayBuffer(storage=LazyTensorStorage(10), sampler=s, batch_size=4)
    rb.extend(ember.arange(10))
    assert [b.tolist() for b in rb] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(ValueError, match="batch_size 11 is larger"):
        rb.sample(11)


def test_storage_get_with_tensor_and_list_indices():
    st = LazyTensorStorage(5)
    st.set(ember.arange(5), _td(5))
    assert st.get(ember.tensor([4, 0]))["id"].tolist() == [4, 0]
    assert st.get([1, 1])["id"].tolist() == [1, 1]
    assert st[2]["id"].item() == 2


def test_errors():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(5), batch_size=2)
    with pytest.raises(RuntimeError, match="empty storage"):
        rb.sample()
    with pytest.raises(RuntimeError, match="empty storage"):
        ReplayBuffer(sampler=SamplerWithoutReplacement()).sample(2)
    rb.extend(_td(3))
    with pytest.raises(KeyError, match=r"lacks the stored keys \['obs'\]"):
        rb.extend(_td(2).exclude("obs"))
    extra = _td(2)
    extra["other"] = ember.zeros(2)
    with pytest.raises(KeyError, match=r"keys \[.other.\] are not in the storage"):
        rb.extend(extra)
    bad = _td(2)
    bad["obs"] = ember.zeros(2, 5)
    with pytest.raises(ValueError, match="item shape"):
        rb.extend(bad)
    with pytest.raises(TypeError, match="expected a TensorDict"):
        rb.extend(ember.zeros(3))
    with pytest.raises(RuntimeError, match="no batch_size"):
        ReplayBuffer(storage=LazyTensorStorage(3)).sample()
    with pytest.raises(TypeError, match="sampler must be a Sampler"):
        ReplayBuffer(sampler=object())
    with pytest.raises(ValueError, match="max_size must be > 0"):
        LazyTensorStorage(0)


def test_transform_and_empty():
    rb = ReplayBuffer(storage=LazyTensorStorage(8), batch_size=4,
                      transform=lambda x: x * 2)
    rb.extend(ember.ones(8))
    assert rb.sample().tolist() == [2.0] * 4
    rb.append_transform(lambda x: x + 1)
    assert rb.sample().tolist() == [3.0] * 4
    rb.empty()
    assert len(rb) == 0 and rb.writer._cursor == 0
    with pytest.raises(RuntimeError, match="empty storage"):
        rb.sample()


def test_state_dict_round_trip():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10),
                                sampler=SamplerWithoutReplacement(), batch_size=4)
    rb.extend(_td(9))
    ember.manual_seed(3)
    rb.sample()
    sd = rb.state_dict()
    rb2 = TensorDictReplayBuffer(storage=LazyTensorStorage(10),
                                 sampler=SamplerWithoutReplacement(), batch_size=4)
    rb2.load_state_dict(sd)
    assert len(rb2) == 9 and rb2.writer._cursor == 9
    assert rb2.sample()["id"].tolist() == rb.sample()["id"].tolist()


def test_writer_cursor_wraps():
    w = TensorDictRoundRobinWriter()
    st = LazyTensorStorage(4)
    w.register_storage(st)
    assert w.add(_td(1)[0]) == 0
    assert w.extend(_td(4)).tolist() == [1, 2, 3, 0]
    assert st.get(ember.arange(4))["index"].tolist() == [0, 1, 2, 3]
    w2 = RoundRobinWriter()
    with pytest.raises(RuntimeError, match="no storage"):
        w2.add(ember.zeros(1))
