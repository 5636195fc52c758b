"""Collectors: frame counts, trajectory ids across resets and batches, agreement with plain
gymnasium stepping, determinism under seeds, split_trajectories, worker processes."""
import os

import gymnasium
import numpy as np
import pytest

import ember
from ember import nn
from ember.rl import TensorDict
from ember.rl.collectors import MultiSyncDataCollector, SyncDataCollector, split_trajectories
from ember.rl.data import LazyTensorStorage, TensorDictReplayBuffer
from ember.rl.envs import Categorical, Composite, EnvBase, GymEnv, SerialEnv, Unbounded
from ember.rl.tensordict.nn import TensorDictModule, TensorDictSequential


class CountingEnv(EnvBase):
    """Observation = steps taken in the episode; episodes end after ``length`` steps (episode
    ``k`` of the env lasts ``length + k % 2`` steps); reward = the action."""

    def __init__(self, length=4, fail_at=None, exit_at=None):
        super().__init__()
        self.length, self.fail_at, self.exit_at = length, fail_at, exit_at
        self.observation_spec = Composite({"observation": Unbounded((1,), np.float32)})
        self.action_spec = Categorical(3)
        self.count = self.episode = self.total = 0

    def _set_seed(self, seed):
        self.episode = 0

    def _obs(self):
        return TensorDict({"observation": ember.tensor([float(self.count)])}, [])

    def _reset(self, td=None):
        self.count = 0
        return self._obs()

    def _step(self, td):
        self.total += 1
        if self.fail_at is not None and self.total >= self.fail_at:
            raise ValueError("CountingEnv: planned failure")
        if self.exit_at is not None and self.total >= self.exit_at:
            os._exit(3)
        self.count += 1
        end = self.count >= self.length + self.episode % 2
        if end:
            self.episode += 1
        out = self._obs()
        out.set("reward", ember.tensor([float(td.get("action").item())]))
        out.set("done", ember.tensor([end]))
        out.set("terminated", ember.tensor([end]))
        out.set("truncated", ember.tensor([False]))
        return out


def test_frames_and_traj_ids_by_hand():
    c = SyncDataCollector(CountingEnv(4), None, frames_per_batch=7, total_frames=21)
    batches = list(c)
    assert len(batches) == 3 == len(c) and all(b.batch_size == (7,) for b in batches)
    obs = np.concatenate([b["observation"].numpy()[:, 0] for b in batches])
    nxt = np.concatenate([b["next", "observation"].numpy()[:, 0] for b in batches])
    ids = np.concatenate([b["collector", "traj_ids"].numpy() for b in batches])
    done = np.concatenate([b["next", "done"].numpy()[:, 0] for b in batches])
    # episodes of 4, 5, 4, 5, ... steps; an episode spans batches and keeps its id
    lengths = [4, 5, 4, 5, 3]
    assert obs.tolist() == [float(i) for n in lengths for i in range(n)]
    assert nxt.tolist() == [float(i + 1) for n in lengths for i in range(n)]
    assert ids.tolist() == [k for k, n in enumerate(lengths) for _ in range(n)]
    assert np.flatnonzero(done).tolist() == [3, 8, 12, 17]
    assert c.state_dict()["frames"] == 21
    # actions were sampled from the action spec
    acts = np.concatenate([b["action"].numpy() for b in batches])
    assert set(acts.tolist()) <= {0, 1, 2} and len(set(acts.tolist())) > 1
    c.shutdown()


def test_reset_at_each_iter_and_max_frames_per_traj():
    c = SyncDataCollector(CountingEnv(100), None, frames_per_batch=5, total_frames=15,
                          reset_at_each_iter=True)
    ids = [b["collector", "traj_ids"].tolist() for b in c]
    assert ids == [[0] * 5, [1] * 5, [2] * 5]
    c = SyncDataCollector(CountingEnv(100), None, frames_per_batch=8, total_frames=8,
                          max_frames_per_traj=3)
    b = next(iter(c))
    assert b["observation"][:, 0].tolist() == [0, 1, 2, 0, 1, 2, 0, 1]
    assert b["next", "truncated"][:, 0].tolist() == [False, False, True] * 2 + [False] * 2
    assert b["next", "done"][:, 0].tolist() == [False, False, True] * 2 + [False] * 2
    assert b["collector", "traj_ids"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2]


def _mlp_policy(seed=0):
    ember.manual_seed(seed)
    net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    mod = TensorDictModule(net, in_keys=["observation"], out_keys=["logits"])

    def policy(td):
        td = mod(td)
        td.set("action", td.get("logits").argmax(-1))
        return td
    return net, policy


def test_matches_plain_gymnasium_loop():
    net, policy = _mlp_policy()
    env = GymEnv("CartPole-v1")
    env.set_seed(3)
    c = SyncDataCollector(env, policy, frames_per_batch=150, total_frames=300)
    data = ember.rl.cat(list(c), 0)
    genv = gymnasium.make("CartPole-v1")
    obs, _ = genv.reset(seed=3)
    rows = []
    with ember.no_grad():
        for _ in range(300):
            a = int(net(ember.from_numpy(obs)).argmax(-1).item())
            nobs, r, term, trunc, _ = genv.step(a)
            rows.append((obs, a, nobs, r, term, trunc))
            obs = nobs
            if term or trunc:
                obs, _ = genv.reset()
    assert np.allclose(data["observation"].numpy(), np.stack([r[0] for r in rows]))
    assert data["action"].tolist() == [r[1] for r in rows]
    assert np.allclose(data["next", "observation"].numpy(), np.stack([r[2] for r in rows]))
    assert data["next", "terminated"][:, 0].tolist() == [bool(r[4]) for r in rows]
    ends = [i for i, r in enumerate(rows) if r[4] or r[5]]
    assert len(ends) >= 3
    ids = data["collector", "traj_ids"].numpy()
    assert (np.diff(ids) == np.isin(np.arange(299), ends)).all()


def _assert_same(a, b):
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for k in a.keys(True, True):
        x, y = a.get(k), b.get(k)
        assert x.dtype == y.dtype and x.shape == y.shape, k
        assert np.array_equal(x.numpy(), y.numpy()), k


@pytest.mark.parametrize("nested", [False, True])
def test_gym_fast_path_equals_generic_path(nested):
    net, policy = _mlp_policy(1)

    def nested_policy(td):  # nested output: the fast path hands over to the generic one
        td = policy(td)
        td.set(("extra", "logits"), td.get("logits"))
        return td

    def run(fast):
        env = GymEnv("CartPole-v1")
        c = SyncDataCollector(env, nested_policy if nested else policy, frames_per_batch=60,
                              total_frames=240, max_frames_per_traj=25)
        assert c._fast is not None  # a plain GymEnv takes the fast path
        if not fast:
            c._fast = None
        c.set_seed(4)
        return list(c)

    for a, b in zip(run(True), run(False)):
        _assert_same(a, b)
    random_fast = SyncDataCollector(GymEnv("CartPole-v1"), None, frames_per_batch=30)
    random_gen = SyncDataCollector(GymEnv("CartPole-v1"), None, frames_per_batch=30)
    random_gen._fast = None
    for c in (random_fast, random_gen):
        c.set_seed(9)
    _assert_same(random_fast.rollout(), random_gen.rollout())


def test_seeded_runs_repeat_and_batched_env_layout():
    def run(seed):
        env = SerialEnv(3, lambda: GymEnv("CartPole-v1"))
        c = SyncDataCollector(env, None, frames_per_batch=60, total_frames=120)
        c.set_seed(seed)
        out = [b for b in c]
        c.shutdown()
        return out

    a, b, other = run(5), run(5), run(6)
    assert a[0].batch_size == (3, 20)
    for x, y in zip(a, b):
        assert np.array_equal(x["observation"].numpy(), y["observation"].numpy())
        assert np.array_equal(x["action"].numpy(), y["action"].numpy())
    assert not np.array_equal(a[0]["observation"].numpy(), other[0]["observation"].numpy())
    ids = np.concatenate([x["collector", "traj_ids"].numpy() for x in a], 1)
    done = np.concatenate([x["next", "done"].numpy()[..., 0] for x in a], 1)
    assert ids[:, 0].tolist() == [0, 1, 2]
    for env_ids, env_done in zip(ids, done):  # a new id right after each end, never reused
        change = np.flatnonzero(np.diff(env_ids))
        assert change.tolist() == np.flatnonzero(env_done[:-1]).tolist()
    assert len(np.unique(ids)) == 3 + done[:, :-1].sum()


def test_split_trajectories_pads_with_mask():
    c = SyncDataCollector(CountingEnv(2), None, frames_per_batch=8, total_frames=8)
    b = next(iter(c))
    s = split_trajectories(b)
    # episodes of 2, 3, 2 steps and one cut off after 1
    assert s.batch_size == (4, 3)
    assert s["collector", "mask"].tolist() == [[1, 1, 0], [1, 1, 1], [1, 1, 0], [1, 0, 0]]
    assert s["observation"][..., 0].tolist() == [[0, 1, 0], [0, 1, 2], [0, 1, 0], [0, 0, 0]]
    assert s["collector", "traj_ids"].tolist() == [[0, 0, 0], [1, 1, 1], [2, 2, 0], [3, 0, 0]]
    c2 = SyncDataCollector(SerialEnv(2, lambda: CountingEnv(3)), None, frames_per_batch=8,
                           total_frames=8, split_trajs=True)
    s2 = next(iter(c2))
    assert s2.batch_size == (4, 3)
    assert s2["collector", "mask"].sum().item() == 8
    # without traj ids: split on done
    s3 = split_trajectories(b.exclude("collector"))
    assert s3["observation"][..., 0].tolist() == s["observation"][..., 0].tolist()


def test_init_random_frames_and_nn_module_policy():
    calls = []

    def policy(td):
        calls.append(1)
        td.set("action", ember.tensor(2))
        return td

    c = SyncDataCollector(CountingEnv(50), policy, frames_per_batch=5, total_frames=15,
                          init_random_frames=6)
    acts = [b["action"].tolist() for b in c]
    assert len(calls) == 5 and acts[2] == [2] * 5  # batches 0 and 1 started below 6 frames
    assert acts[0] != [2] * 5 or acts[1] != [2] * 5
    env = GymEnv("Pendulum-v1")
    lin = nn.Linear(3, 1)
    c = SyncDataCollector(env, lin, frames_per_batch=10, total_frames=10)
    b = next(iter(c))
    assert np.allclose(b["action"].numpy(), lin(b["observation"]).detach().numpy(), atol=1e-6)


def test_replay_buffer_argument_and_errors():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100))
    c = SyncDataCollector(SerialEnv(2, lambda: CountingEnv(3)), None, frames_per_batch=10,
                          total_frames=30, replay_buffer=rb)
    assert [x for x in c] == [None] * 3 and len(rb) == 30
    with pytest.warns(UserWarning, match="not a multiple"):
        c = SyncDataCollector(SerialEnv(3, lambda: CountingEnv(3)), None, frames_per_batch=10)
    assert c.frames_per_batch == 12
    with pytest.raises(TypeError, match="frames_per_batch is required"):
        SyncDataCollector(CountingEnv(), None)
    with pytest.raises(TypeError, match="not an EnvBase"):
        SyncDataCollector(lambda: object(), None, frames_per_batch=2)
    c = SyncDataCollector(CountingEnv(), lambda td: None, frames_per_batch=2)
    with pytest.raises(RuntimeError, match="returned None"):
        c.rollout()


@pytest.mark.multiprocess
def test_multi_sync_matches_sync_and_updates_weights():
    net = nn.Linear(4, 1)
    policy = TensorDictSequential(
        TensorDictModule(net, in_keys=["observation"], out_keys=["value"]),
        TensorDictModule(lambda v: (v[..., 0] > 0).long(), in_keys=["value"],
                         out_keys=["action"]))
    fns = [lambda: GymEnv("CartPole-v1")] * 2
    mc = MultiSyncDataCollector(fns, policy, frames_per_batch=40, total_frames=80)
    mc.set_seed(11)
    first = next(iter(mc))
    assert first.batch_size == (2, 20)
    for w, seed in enumerate((11, 12)):  # worker w == a SyncDataCollector seeded 11 + w
        env = GymEnv("CartPole-v1")
        env.set_seed(seed)
        ref = SyncDataCollector(env, policy, frames_per_batch=20, total_frames=20).rollout()
        assert np.allclose(first[w]["observation"].numpy(), ref["observation"].numpy())
        assert np.array_equal(first[w]["action"].numpy(), ref["action"].numpy())
    ids = first["collector", "traj_ids"].numpy()
    assert (ids % 2 == np.array([[0], [1]])).all()  # worker w's ids are w mod 2
    # new weights reach the workers
    with ember.no_grad():
        net.weight.copy_(ember.zeros(1, 4))
        net.bias.copy_(ember.full((1,), 0.5))
    mc.update_policy_weights_()
    second = next(iter(mc))
    assert np.allclose(second["value"].numpy(), 0.5)
    mc.shutdown()


@pytest.mark.multiprocess
@pytest.mark.parametrize("how", ["raise", "exit"])
def test_multi_sync_failing_worker_is_an_error(how):
    kw = {"fail_at": 5} if how == "raise" else {"exit_at": 5}
    fns = [lambda: CountingEnv(10), lambda: CountingEnv(10, **kw)]
    mc = MultiSyncDataCollector(fns, None, frames_per_batch=20, total_frames=100)
    match = "planned failure" if how == "raise" else r"worker 1 died \(exit code 3\)"
    with pytest.raises(RuntimeError, match=match):
        for _ in mc:
            pass
    assert all(not p.is_alive() for p in mc._procs)
    with pytest.raises(RuntimeError, match="shut down"):
        mc.rollout()


def test_exploration_type_postproc_and_state_dict():
    from ember.rl.tensordict.nn import InteractionType, interaction_type

    seen = []

    def policy(td):
        seen.append(interaction_type())
        td.set("action", ember.tensor(0))
        return td

    c = SyncDataCollector(CountingEnv(3), policy, frames_per_batch=4, total_frames=8,
                          exploration_type="mode", postproc=lambda td: td.exclude("next"))
    batches = list(c)
    assert set(seen) == {InteractionType.MODE}
    assert "next" not in batches[0].keys()
    sd = c.state_dict()
    assert sd["frames"] == 8 and sd["iter"] == 2 and sd["next_traj_id"] == 3
    c2 = SyncDataCollector(CountingEnv(3), policy, frames_per_batch=4, total_frames=8)
    c2.load_state_dict(sd)
    assert list(c2) == []  # its 8 frames are already collected
    net = nn.Linear(1, 3)
    c3 = SyncDataCollector(CountingEnv(3), net, frames_per_batch=4)
    other = nn.Linear(1, 3)
    c3.update_policy_weights_(other.state_dict())
    assert np.array_equal(net.weight.detach().numpy(), other.weight.detach().numpy())
    assert "policy_state_dict" in c3.state_dict()


@pytest.mark.multiprocess
def test_multi_sync_workers_draw_distinct_repeatable_random_streams():
    # a policy sampling with ember's generator: forked workers must not share one stream
    policy = TensorDictModule(lambda obs: (ember.rand(obs.shape[:-1]) < 0.5).long(),
                              in_keys=["observation"], out_keys=["action"])

    def run(seed):
        mc = MultiSyncDataCollector([lambda: CountingEnv(1000)] * 2, policy,
                                    frames_per_batch=64, total_frames=64)
        mc.set_seed(seed)
        out = next(iter(mc))["action"].numpy()
        mc.shutdown()
        return out

    a, b = run(0), run(0)
    assert np.array_equal(a, b)
    assert not np.array_equal(a[0], a[1])
    assert not np.array_equal(run(1), a)
