"""SliceSampler: slices stay inside one trajectory, found by traj ids or end flags."""
import numpy as np
import pytest
from scipy import stats

import ember
from ember.rl import TensorDict
from ember.rl.data import LazyTensorStorage, SliceSampler, TensorDictReplayBuffer
from ember.rl.data.replay_buffers.slice import start_stop_length


def _episodes(lengths):
    ep = np.concatenate([np.full(n, i) for i, n in enumerate(lengths)])
    step = np.concatenate([np.arange(n) for n in lengths])
    done = np.concatenate([np.arange(n) == n - 1 for n in lengths])
    return TensorDict({"episode": ember.tensor(ep), "step": ember.tensor(step),
                       "next": {"done": ember.tensor(done[:, None])}}, [len(ep)])


@pytest.mark.parametrize("by", ["traj_key", "end_key"])
def test_slices_are_contiguous_within_one_episode(by):
    lengths = [30, 7, 50, 13]
    data = _episodes(lengths)
    if by == "end_key":
        data = data.exclude("episode")
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(200),
                                sampler=SliceSampler(num_slices=8), batch_size=80)
    rb.extend(data)
    ember.manual_seed(0)
    for _ in range(20):
        s = rb.sample().reshape(8, 10)
        idx = s["index"].numpy()
        assert (np.diff(idx, axis=1) == 1).all()  # contiguous rows
        assert (np.diff(s["step"].numpy(), axis=1) == 1).all()  # one episode each
        # episode 1 (7 steps) is too short for slices of 10
        if by == "traj_key":
            assert 1 not in s["episode"].numpy()
        # last row of each slice is marked truncated; done where an episode really ends
        tr = s["next", "truncated"].numpy()[..., 0]
        assert tr[:, -1].all() and not tr[:, :-1].any()
        ends = s["step"].numpy() == np.array(lengths)[_ep_of(idx, lengths)] - 1
        assert np.array_equal(s["next", "terminated"].numpy()[..., 0], ends)
        assert np.array_equal(s["next", "done"].numpy()[..., 0], ends | tr)


def _ep_of(idx, lengths):
    return np.searchsorted(np.cumsum(lengths), idx, side="right")


def test_episode_choice_is_uniform_and_starts_uniform():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100),
                                sampler=SliceSampler(slice_len=5), batch_size=5 * 4000)
    rb.extend(_episodes([10, 40, 20]))
    ember.manual_seed(2)
    s = rb.sample().reshape(-1, 5)
    ep = s["episode"].numpy()[:, 0]
    assert stats.chisquare(np.bincount(ep, minlength=3)).pvalue > 1e-3
    first = s["step"].numpy()[ep == 1, 0]  # starts 0..35 in a 40-step episode
    assert first.min() == 0 and first.max() == 35
    assert stats.chisquare(np.bincount(first, minlength=36)).pvalue > 1e-3


def test_not_strict_length_gives_short_slices():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(50),
                                sampler=SliceSampler(num_slices=50, strict_length=False),
                                batch_size=50 * 6)
    rb.extend(_episodes([3, 20]))
    ember.manual_seed(0)
    s = rb.sample()
    ep = s["episode"].numpy()
    n_short = (ep == 0).sum()
    assert n_short % 3 == 0 and n_short > 0 and s.batch_size[0] == n_short + 6 * (
        50 - n_short // 3)


def test_wraparound_trajectory_when_full():
    # a full storage whose last episode continues at row 0 (written over the oldest rows)
    end = np.zeros(10, bool)
    end[[2, 6]] = True
    start, stop, length = start_stop_length(end, at_capacity=True)
    assert start.tolist() == [7, 3] and stop.tolist() == [2, 6] and length.tolist() == [6, 4]
    start, stop, length = start_stop_length(end, at_capacity=False)
    assert start.tolist() == [0, 3, 7] and length.tolist() == [3, 4, 3]


def test_slice_sampler_errors():
    with pytest.raises(TypeError, match="exactly one of num_slices and slice_len"):
        SliceSampler(num_slices=2, slice_len=3)
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(20),
                                sampler=SliceSampler(num_slices=3), batch_size=10)
    rb.extend(_episodes([5, 5]))
    with pytest.raises(RuntimeError, match="not divisible by num_slices=3"):
        rb.sample()
    with pytest.raises(RuntimeError, match="no trajectory is long enough"):
        rb.sample(30)
    rb2 = TensorDictReplayBuffer(storage=LazyTensorStorage(20),
                                 sampler=SliceSampler(num_slices=2), batch_size=4)
    rb2.extend(TensorDict({"x": ember.zeros(6)}, [6]))
    with pytest.raises(KeyError, match="neither the trajectory key"):
        rb2.sample()
