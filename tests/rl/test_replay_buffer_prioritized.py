"""Prioritized replay: the vectorised sum/min trees against a loop reference, sampling
frequencies and importance weights against a naive computation, priority updates, errors."""
import numpy as np
import pytest
from scipy import stats

import ember
from ember.rl import TensorDict
from ember.rl.data import (LazyTensorStorage, ListStorage, MinSegmentTree, PrioritizedReplayBuffer,
                           PrioritizedSampler, SumSegmentTree, TensorDictPrioritizedReplayBuffer,
                           TensorDictReplayBuffer)


class LoopTree:
    """A textbook segment tree, one node at a time (the reference)."""

    def __init__(self, capacity, op, identity):
        self.size = 1
        while self.size < capacity:
            self.size *= 2
        self.op, self.identity = op, identity
        self.t = [identity] * (2 * self.size)

    def set(self, i, v):
        i += self.size
        self.t[i] = v
        i //= 2
        while i >= 1:
            self.t[i] = self.op(self.t[2 * i], self.t[2 * i + 1])
            i //= 2

    def query(self, lo, hi):
        res = self.identity
        for j in range(lo, hi):
            res = self.op(res, self.t[self.size + j])
        return res

    def find(self, v):
        i = 1
        while i < self.size:
            if v < self.t[2 * i]:
                i = 2 * i
            else:
                v -= self.t[2 * i]
                i = 2 * i + 1
        return i - self.size


@pytest.mark.parametrize("capacity", [1, 5, 64, 1000])
def test_trees_match_loop_reference(capacity):
    rng = np.random.default_rng(capacity)
    st, mt = SumSegmentTree(capacity), MinSegmentTree(capacity)
    ref_s = LoopTree(capacity, lambda a, b: a + b, 0.0)
    ref_m = LoopTree(capacity, min, np.inf)
    for rnd in range(12):
        k = int(rng.integers(1, 2 * capacity + 2))  # small updates and full rebuilds
        idx = rng.integers(0, capacity, k)
        val = rng.random(k) * 10
        st.update(idx, val)
        mt.update(idx, val)
        for i, v in zip(idx.tolist(), val.tolist()):  # repeated indices: the last one wins
            ref_s.set(i, v)
            ref_m.set(i, v)
        assert np.allclose(st._tree[1:], ref_s.t[1:], rtol=1e-12, atol=1e-9)
        assert np.array_equal(mt._tree[1:], np.array(ref_m.t[1:]))
        lo = int(rng.integers(0, capacity))
        hi = int(rng.integers(lo, capacity + 1))
        assert st.query(lo, hi) == pytest.approx(ref_s.query(lo, hi), rel=1e-12, abs=1e-9)
        assert mt.query(lo, hi) == ref_m.query(lo, hi)
        total = st.query(0, capacity)
        qs = rng.random(50) * total
        got = st.scan_lower_bound(qs)
        want = [min(ref_s.find(q), capacity - 1) for q in qs.tolist()]
        assert got.tolist() == want
        # every query lands on a leaf whose prefix sums bracket it
        cs = np.cumsum(st.leaves())
        ok = (qs < cs[got] + 1e-9) & (qs >= np.concatenate([[0], cs])[got] - 1e-9)
        assert ok.all()


def test_tree_errors():
    t = SumSegmentTree(4)
    with pytest.raises(IndexError, match="out of range"):
        t[np.array([4])] = 1.0
    with pytest.raises(TypeError, match="integers"):
        t.update(np.array([0.5]), 1.0)
    with pytest.raises(ValueError, match="capacity must be > 0"):
        SumSegmentTree(0)


def _naive(priorities, alpha, beta, eps):
    p = (np.asarray(priorities, np.float64) + eps) ** alpha
    prob = p / p.sum()
    w = (len(p) * prob) ** -beta
    return prob, w / w.max()


def test_sampling_frequencies_and_weights_match_naive_reference():
    n, alpha, beta, eps = 12, 0.6, 0.4, 1e-6
    rb = PrioritizedReplayBuffer(alpha=alpha, beta=beta, eps=eps, storage=LazyTensorStorage(16))
    rb.extend(ember.arange(n))
    pr = np.linspace(0.1, 3.0, n)
    rb.update_priority(ember.arange(n), ember.tensor(pr))
    prob, weight = _naive(pr, alpha, beta, eps)
    ember.manual_seed(0)
    data, info = rb.sample(60000, return_info=True)
    idx = info["index"].numpy()
    assert np.array_equal(data.numpy(), idx)  # the data of a tensor storage is the row
    counts = np.bincount(idx, minlength=n)
    assert stats.chisquare(counts, prob * idx.size).pvalue > 1e-3
    assert info["_weight"].dtype == ember.float32
    assert np.allclose(info["_weight"].numpy(), weight[idx], rtol=1e-5)


def test_new_items_get_max_priority():
    s = PrioritizedSampler(8, alpha=0.5, beta=1.0, eps=0.0)
    st = LazyTensorStorage(8)
    rb = PrioritizedReplayBuffer(alpha=0.5, beta=1.0, eps=0.0, storage=st)
    rb._sampler = s
    rb.extend(ember.zeros(3))
    assert np.allclose(s._sum_tree.leaves()[:3], 1.0)  # max_priority starts at 1
    rb.update_priority(ember.tensor([0, 1]), ember.tensor([4.0, 0.25]))
    assert s._max_priority == 4.0
    rb.extend(ember.zeros(2))
    assert np.allclose(s._sum_tree.leaves()[:5], [2.0, 0.5, 1.0, 2.0, 2.0])
    assert s._min_tree.query(0, 5) == 0.5
    rb.update_priority(2, 9.0)  # a single index and number
    assert s._sum_tree[2] == pytest.approx(3.0)


def test_update_priority_shape_errors():
    rb = PrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=LazyTensorStorage(8))
    rb.extend(ember.zeros(4))
    with pytest.raises(RuntimeError, match=r"priority of shape \[3\] for index of shape \[2\]"):
        rb.update_priority(ember.tensor([0, 1]), ember.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        rb.update_priority(ember.tensor([0, 1]), ember.tensor([1.0, -2.0]))
    with pytest.raises(IndexError, match="out of range"):
        rb.update_priority(ember.tensor([9]), ember.tensor([1.0]))
    # (n, 1) priorities for n indices are reshaped, as torchrl does
    rb.update_priority(ember.tensor([0, 1]), ember.tensor([[2.0], [3.0]]))
    assert rb.sampler._sum_tree[1] == pytest.approx(3.0)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        PrioritizedSampler(4, alpha=-1, beta=0.5)
    with pytest.raises(RuntimeError, match="empty storage"):
        PrioritizedReplayBuffer(alpha=1.0, beta=1.0).sample(3)


def test_zero_priority_is_never_sampled_and_eps_keeps_it_positive():
    rb = PrioritizedReplayBuffer(alpha=1.0, beta=0.5, eps=0.0, storage=ListStorage(4))
    for i in range(4):
        rb.add(ember.tensor(float(i)))
    rb.update_priority(ember.arange(4), ember.tensor([0.0, 1.0, 1.0, 1.0]))
    with pytest.raises(RuntimeError, match="smallest priority is 0.0"):
        rb.sample(10)
    rb2 = PrioritizedReplayBuffer(alpha=1.0, beta=0.5, eps=1e-12, storage=LazyTensorStorage(4))
    rb2.extend(ember.arange(4.))
    rb2.update_priority(ember.arange(4), ember.tensor([0.0, 1.0, 1.0, 1.0]))
    ember.manual_seed(0)
    assert 0 not in rb2.sample(5000, return_info=True)[1]["index"].tolist()


def test_tensordict_prioritized_buffer_priority_key_and_reduction():
    rb = TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, eps=0.0, priority_key="td_error",
                                           storage=LazyTensorStorage(10), batch_size=4,
                                           reduction="mean")
    data = TensorDict({"obs": ember.arange(6.)}, [6])
    rb.extend(data)
    assert data["index"].tolist() == list(range(6))
    ember.manual_seed(1)
    batch = rb.sample()
    assert set(batch.keys()) == {"obs", "index", "_weight"}
    assert np.array_equal(batch["obs"].numpy(), batch["index"].numpy().astype(np.float32))
    batch.set("td_error", ember.tensor(np.full((4, 3), [1.0, 2.0, 6.0], np.float32)))
    rb.update_tensordict_priority(batch)  # mean over the trailing dim: 3.0
    leaves = rb.sampler._sum_tree.leaves()
    for i in batch["index"].tolist():
        assert leaves[i] == pytest.approx(3.0)
    # priorities written with the data
    more = TensorDict({"obs": ember.zeros(2), "td_error": ember.tensor([5.0, 7.0])}, [2])
    rb2 = TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, eps=0.0,
                                            storage=LazyTensorStorage(4))
    rb2.extend(more)
    assert rb2.sampler._sum_tree.leaves()[:2].tolist() == [5.0, 7.0]
    with pytest.raises(KeyError, match="no 'index' entry"):
        rb2.update_tensordict_priority(TensorDict({"td_error": ember.ones(2)}, [2]))


def test_plain_tensordict_buffer_ignores_priorities():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(4), batch_size=2)
    rb.extend(TensorDict({"x": ember.zeros(3), "td_error": ember.ones(3)}, [3]))
    rb.update_tensordict_priority(rb.sample())  # no prioritized sampler: nothing to do
