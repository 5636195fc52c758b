"""gymnasium 1.x autoreset: no transition crosses an episode boundary, whatever gymnasium piece
autoresets (Autoreset wrapper, vector envs in NextStep / SameStep / Disabled mode, Sync and Async)
and whichever batched env runs it (GymEnv, SerialEnv, ParallelEnv).

The test env's observation is ``[episode uid, step in episode]``: a transition is correct when
its ``"next"`` observation has the uid of its root observation and the step count one higher;
episodes last 1-5 steps (random, seeded) and end by termination or truncation."""
import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

import ember
from ember.rl.envs import GymEnv, ParallelEnv, SerialEnv, step_mdp

T = 60


def a(t):
    return t.numpy(force=True)


class EpisodeIdEnv(gymnasium.Env):
    observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = spaces.Discrete(2)
    _instances = 0

    def __init__(self):
        EpisodeIdEnv._instances += 1
        self.uid = EpisodeIdEnv._instances * 1000
        self.episode = -1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.episode += 1
        self.t, self.length = 0, int(self.np_random.integers(1, 6))
        return self._obs(), {}

    def _obs(self):
        return np.array([self.uid + self.episode, self.t], np.float32)

    def step(self, action):
        self.t += 1
        end = self.t >= self.length
        trunc = end and self.length % 2 == 0          # even lengths truncate, odd ones terminate
        return self._obs(), float(action), end and not trunc, trunc, {}


def check_no_crossing(root, nxt, done, terminated=None, truncated=None):
    """root, nxt: [..., T, 2] observations; done: [..., T]."""
    root, nxt = root.reshape(-1, root.shape[-2], 2), nxt.reshape(-1, nxt.shape[-2], 2)
    done = done.reshape(-1, done.shape[-1])
    for b in range(root.shape[0]):
        for t in range(root.shape[1]):
            assert nxt[b, t, 0] == root[b, t, 0], f"transition [{b}, {t}] crosses episodes"
            assert nxt[b, t, 1] == root[b, t, 1] + 1, f"transition [{b}, {t}] skips a step"
            if t + 1 < root.shape[1]:
                if done[b, t]:
                    assert root[b, t + 1, 1] == 0 and root[b, t + 1, 0] != root[b, t, 0], \
                        f"step [{b}, {t + 1}] does not start a new episode after a done"
                else:
                    np.testing.assert_array_equal(root[b, t + 1], nxt[b, t])
    assert done.sum() >= 5                      # the rollout did go through many episode ends


def check_rollout(ro):
    check_no_crossing(a(ro["observation"]), a(ro["next", "observation"]), a(ro["next", "done"])[..., 0])
    d, te, tr = (a(ro["next", k])[..., 0] for k in ("done", "terminated", "truncated"))
    np.testing.assert_array_equal(d, te | tr)
    assert te.any() and tr.any()
    # the flags agree with the env's rule: even episode lengths truncate, odd ones terminate
    steps = a(ro["next", "observation"])[..., 1]
    np.testing.assert_array_equal(tr, d & (steps % 2 == 0))


def test_the_check_catches_a_naive_vector_loop():
    """Treating gymnasium's NextStep output naively as (obs, next_obs) pairs crosses episodes."""
    venv = gymnasium.vector.SyncVectorEnv([EpisodeIdEnv for _ in range(2)])
    obs, _ = venv.reset(seed=0)
    roots, nexts, dones = [], [], []
    for _ in range(T):
        nobs, _, term, trunc, _ = venv.step(np.zeros(2, np.int64))
        roots.append(obs)
        nexts.append(nobs)
        dones.append(term | trunc)
        obs = nobs
    with pytest.raises(AssertionError, match="crosses episodes|skips|new episode"):
        check_no_crossing(np.stack(roots, 1), np.stack(nexts, 1), np.stack(dones, 1))


def test_single_env_and_autoreset_wrapper():
    for env in (GymEnv(EpisodeIdEnv()), GymEnv(gymnasium.wrappers.Autoreset(EpisodeIdEnv()))):
        env.set_seed(0)
        check_rollout(env.rollout(T, break_when_any_done=False)[None])


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_sync_vector_env_modes_equal_serial(mode):
    venv = gymnasium.vector.SyncVectorEnv([EpisodeIdEnv for _ in range(3)],
                                          autoreset_mode=gymnasium.vector.AutoresetMode(mode))
    env = GymEnv(venv)
    assert env.batch_size == (3,) and env.observation_spec["observation"].shape == (3, 2)
    env.set_seed(1)
    ro = env.rollout(T, break_when_any_done=False)
    check_rollout(ro)
    # the same seeds through a SerialEnv of single envs give the same transitions
    ser = SerialEnv(3, lambda: GymEnv(EpisodeIdEnv()))
    ser.set_seed(1)
    ref = ser.rollout(T, break_when_any_done=False)
    for k in [("observation",), ("action",), ("next", "observation"), ("next", "reward"),
              ("next", "terminated"), ("next", "truncated")]:
        got, want = a(ro[k]), a(ref[k])
        if k[-1] == "observation":                       # uids differ by instance; compare steps
            got, want = got[..., 1], want[..., 1]
        np.testing.assert_array_equal(got, want, err_msg=str(k))


def test_vector_env_guards_and_partial_reset():
    env = GymEnv(gymnasium.vector.SyncVectorEnv([EpisodeIdEnv for _ in range(2)]))
    env.set_seed(0)
    td = env.reset()
    for _ in range(10):                                    # run until a sub-env finishes
        td.set("action", ember.tensor(np.zeros(2, np.int64)))
        td = env.step(td)
        if a(td["next", "done"]).any():
            break
        td = step_mdp(td)
    done = a(td["next", "done"])[:, 0]
    nxt = a(td["next", "observation"])
    td = step_mdp(td)
    td.set("action", ember.tensor(np.zeros(2, np.int64)))
    with pytest.raises(RuntimeError, match=r"sub-envs \[\d.*reset"):
        env.step(td)
    from ember.rl import TensorDict
    fresh = a(env.reset(TensorDict({"_reset": done[:, None]}, batch_size=[2]))["observation"])
    assert (fresh[done, 1] == 0).all() and (fresh[done, 0] != nxt[done, 0]).all()
    np.testing.assert_array_equal(fresh[~done], nxt[~done])   # running sub-envs untouched


def test_gym_env_num_envs():
    env = GymEnv("CartPole-v1", num_envs=3)
    assert env.batch_size == (3,)
    env.set_seed(0)
    ro = env.rollout(40, break_when_any_done=False)
    assert ro.batch_size == (3, 40) and a(ro["next", "done"]).any()
    with pytest.raises(ValueError, match="num_envs"):
        GymEnv(gymnasium.make("CartPole-v1"), num_envs=2)


@pytest.mark.multiprocess
@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_async_vector_env(mode):
    venv = gymnasium.vector.AsyncVectorEnv([EpisodeIdEnv for _ in range(2)],
                                           autoreset_mode=gymnasium.vector.AutoresetMode(mode))
    env = GymEnv(venv)
    try:
        env.set_seed(3)
        check_rollout(env.rollout(T, break_when_any_done=False))
    finally:
        env.close()


def test_serial_env():
    env = SerialEnv(3, lambda: GymEnv(EpisodeIdEnv()))
    env.set_seed(5)
    check_rollout(env.rollout(T, break_when_any_done=False))


@pytest.mark.multiprocess
def test_parallel_env_single_and_vector_workers():
    with ParallelEnv(3, lambda: GymEnv(EpisodeIdEnv())) as env:
        env.set_seed(5)
        check_rollout(env.rollout(T, break_when_any_done=False))
    make = lambda: GymEnv(gymnasium.vector.SyncVectorEnv([EpisodeIdEnv, EpisodeIdEnv]))  # noqa: E731
    with ParallelEnv(2, make) as env:
        assert env.batch_size == (2, 2)
        env.set_seed(6)
        check_rollout(env.rollout(T, break_when_any_done=False))
