"""ember.rl.envs.ParallelEnv: equal to SerialEnv for the same seeds (plain GymEnv workers, generic
EnvBase workers, batched sub-envs, partial resets), errors from workers, a killed or hung worker is
an error within seconds (never a hang), clean shutdown with no process left behind."""
import multiprocessing
import os
import signal
import time

import numpy as np
import pytest

import ember
from ember.rl import TensorDict
from ember.rl.envs import GymEnv, ParallelEnv, SerialEnv, check_env_specs, step_mdp

pytestmark = pytest.mark.multiprocess


def a(t):
    return t.numpy(force=True)


def cartpole():
    return GymEnv("CartPole-v1")


def assert_same(r1, r2):
    assert r1.batch_size == r2.batch_size
    assert set(r1.keys(True, True)) == set(r2.keys(True, True))
    for k in r2.keys(True, True):
        np.testing.assert_array_equal(a(r1[k]), a(r2[k]), err_msg=str(k))


def no_children_left(timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not multiprocessing.active_children():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("make", [cartpole, lambda: GymEnv("Pendulum-v1")])
def test_parallel_equals_serial(make):
    with ParallelEnv(3, make) as penv:
        senv = SerialEnv(3, make)
        assert penv.batch_size == senv.batch_size == (3,)
        assert penv.observation_spec == senv.observation_spec
        assert penv.action_spec == senv.action_spec and penv.done_spec == senv.done_spec
        for seed in (0, 7):
            penv.set_seed(seed)
            senv.set_seed(seed)
            r1 = penv.rollout(80, break_when_any_done=False)
            r2 = senv.rollout(80, break_when_any_done=False)
            assert_same(r1, r2)
        if make is cartpole:
            assert a(r1["next", "done"]).sum() >= 2            # episodes ended and were reset
        penv.set_seed(3)
        senv.set_seed(3)
        assert_same(penv.rollout(300), senv.rollout(300))       # break_when_any_done
        assert check_env_specs(penv, steps=20, seed=1)
    assert penv.is_closed and no_children_left()


def test_parallel_step_and_partial_reset_match_serial():
    penv, senv = ParallelEnv(2, cartpole), SerialEnv(2, cartpole)
    try:
        for env in (penv, senv):
            env.set_seed(4)
        tds = [env.reset() for env in (penv, senv)]
        assert_same(*tds)
        for _ in range(5):
            for i, env in enumerate((penv, senv)):
                tds[i].set("action", ember.tensor(np.array([1, 0])))
                tds[i] = step_mdp(env.step(tds[i]))
            assert_same(*tds)
        mask = TensorDict({"_reset": np.array([[False], [True]])}, batch_size=[2])
        r = [env.reset(mask.clone()) for env in (penv, senv)]
        assert_same(*r)
        np.testing.assert_array_equal(a(r[0]["observation"])[0], a(tds[0]["observation"])[0])
        # stepping a finished, not reset sub-env raises the worker's error, naming the worker
        td = r[0]
        for _ in range(300):
            td.set("action", ember.tensor(np.array([0, 0])))
            td = penv.step(td)
            if a(td["next", "done"]).any():
                break
            td = step_mdp(td)
        td = step_mdp(td)
        td.set("action", ember.tensor(np.array([0, 0])))
        with pytest.raises(RuntimeError, match=r"worker \d raised RuntimeError.*reset"):
            penv.step(td)
        assert not penv.is_closed                                # a raised error keeps the env usable
        penv.reset()
    finally:
        penv.close()


class _Counter(ember.rl.envs.EnvBase):
    """A non-gym EnvBase with a batch of 2 and a float64 vector observation (generic worker path)."""

    def __init__(self, length=3):
        from ember.rl.envs import Categorical, Composite, Unbounded
        super().__init__((2,))
        self.length = length
        self.observation_spec = Composite({"observation": Unbounded((2, 2), np.float64)}, shape=(2,))
        self.action_spec = Categorical(3, (2,))
        self.c = np.zeros(2)

    def _set_seed(self, seed):
        self.base = float(seed)

    def _reset(self, td=None):
        mask = np.ones(2, bool) if td is None else a(td["_reset"]).reshape(2)
        self.c[mask] = 0
        return TensorDict({"observation": np.stack([self.c, self.c + self.base], -1)}, [2])

    def _step(self, td):
        self.c += a(td["action"]) + 1
        d = (self.c >= self.length)[:, None]
        return TensorDict({"observation": np.stack([self.c, self.c + self.base], -1),
                           "reward": np.ones((2, 1), np.float32), "done": d, "terminated": d,
                           "truncated": np.zeros((2, 1), bool)}, [2])


def test_parallel_generic_envbase_with_batched_sub_envs():
    with ParallelEnv(2, _Counter, create_env_kwargs=[{"length": 3}, {"length": 5}]) as penv:
        senv = SerialEnv(2, [_Counter, _Counter], create_env_kwargs=[{"length": 3}, {"length": 5}])
        assert penv.batch_size == (2, 2) and penv.observation_spec["observation"].shape == (2, 2, 2)
        penv.set_seed(10)
        senv.set_seed(10)
        r1, r2 = penv.rollout(12, break_when_any_done=False), senv.rollout(12, break_when_any_done=False)
        assert_same(r1, r2)
        # sub-envs finish at different times: the per-entry reset mask reached the sub-envs
        c = a(r1["next", "observation"])[..., 0]
        assert c.max() <= 6 and (a(r1["observation"])[..., 0] == 0).sum() > 4
        assert check_env_specs(penv, steps=6)


def _boom():
    raise ValueError("cannot build this env")


def test_worker_errors_at_start_are_reported():
    with pytest.raises(RuntimeError, match=r"worker 0 raised ValueError: cannot build this env"):
        ParallelEnv(2, _boom)
    assert no_children_left()


def test_killed_worker_is_an_error_not_a_hang():
    penv = ParallelEnv(3, cartpole, timeout=30)
    penv.set_seed(0)
    td = penv.rollout(5, break_when_any_done=False)
    victim = penv._procs[1]
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(5)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker 1 \(pid \d+\) was killed by signal -9 \(SIGKILL\)"):
        penv.rollout(50, break_when_any_done=False)
    assert time.monotonic() - t0 < 10.0          # seconds, not the 30 s timeout
    assert penv.is_closed and no_children_left()
    with pytest.raises(RuntimeError, match="closed"):
        penv.rand_step(td[:, 0])


def test_worker_killed_while_stepping():
    class Slow(GymEnv):
        def _step_numpy(self, action):
            time.sleep(0.3)
            return super()._step_numpy(action)

    penv = ParallelEnv(2, lambda: Slow("CartPole-v1"), timeout=30)
    penv.reset()
    pid = penv._procs[0].pid
    killer = multiprocessing.get_context("fork").Process(
        target=lambda: (time.sleep(0.1), os.kill(pid, signal.SIGKILL)))
    killer.start()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker 0 .*SIGKILL"):
        for _ in range(10):
            penv.rand_step()
            penv.reset()
    killer.join()
    assert time.monotonic() - t0 < 10.0 and no_children_left()


class _Hang(GymEnv):
    def _step_numpy(self, action):
        time.sleep(60)


def test_hung_worker_times_out():
    penv = ParallelEnv(2, [cartpole, lambda: _Hang("CartPole-v1")], timeout=3.0)
    penv.reset()
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=r"workers \[1\] did not answer within 3.0 s"):
        penv.rand_step()
    assert time.monotonic() - t0 < 10.0
    assert penv.is_closed and no_children_left()


def test_close_and_bad_arguments():
    penv = ParallelEnv(2, cartpole)
    procs = list(penv._procs)
    penv.close()
    penv.close()                                                # idempotent
    assert all(not p.is_alive() for p in procs) and all(p.exitcode == 0 for p in procs)
    with pytest.raises(ValueError, match="num_workers"):
        ParallelEnv(0, cartpole)
    with ParallelEnv(2, cartpole) as penv:
        td = penv.reset()
        td.set("action", ember.tensor(np.array([[0], [1]])))
        with pytest.raises(ValueError, match=r"action of shape \(2, 1\), expected \(2,\)"):
            penv.step(td)
        assert a(penv.rand_step()["next", "observation"]).shape == (2, 4)   # still usable
    with pytest.raises(ValueError, match="create_env_fn"):
        ParallelEnv(2, [cartpole])


def test_garbage_collected_env_stops_its_workers():
    penv = ParallelEnv(2, cartpole)
    procs = list(penv._procs)
    del penv
    import gc
    gc.collect()
    for p in procs:
        p.join(5)
    assert all(not p.is_alive() for p in procs)


def test_spawn_start_method_with_a_lambda():
    with ParallelEnv(1, lambda: GymEnv("CartPole-v1"), mp_start_method="spawn", timeout=120) as penv:
        penv.set_seed(2)
        senv = SerialEnv(1, cartpole)
        senv.set_seed(2)
        assert_same(penv.rollout(20, break_when_any_done=False),
                    senv.rollout(20, break_when_any_done=False))


class _DictObsEnv:
    """A gymnasium env with a Dict observation (float vector + uint8 image) and a Box action."""

    def __new__(cls):
        import gymnasium
        from gymnasium import spaces

        class Env(gymnasium.Env):
            observation_space = spaces.Dict({"pos": spaces.Box(-5, 5, (2,), np.float32),
                                             "img": spaces.Box(0, 255, (3, 4, 4), np.uint8)})
            action_space = spaces.Box(-1, 1, (2,), np.float32)

            def reset(self, seed=None, options=None):
                super().reset(seed=seed)
                self.pos, self.t = self.np_random.uniform(-1, 1, 2).astype(np.float32), 0
                return self._obs(), {}

            def _obs(self):
                return {"pos": self.pos.copy(),
                        "img": self.np_random.integers(0, 256, (3, 4, 4), dtype=np.uint8)}

            def step(self, action):
                self.t += 1
                self.pos = np.clip(self.pos + action, -5, 5).astype(np.float32)
                return self._obs(), float(-np.abs(self.pos).sum()), False, self.t >= 7, {}
        return GymEnv(Env())


def test_parallel_dict_observations_and_box_actions():
    with ParallelEnv(2, _DictObsEnv) as penv:
        senv = SerialEnv(2, _DictObsEnv)
        assert penv.observation_spec["img"].shape == (2, 3, 4, 4)
        penv.set_seed(9)
        senv.set_seed(9)
        r1, r2 = penv.rollout(20, break_when_any_done=False), senv.rollout(20, break_when_any_done=False)
        assert_same(r1, r2)
        assert r1["next", "img"].dtype == ember.uint8 and a(r1["next", "truncated"]).sum() == 4
        assert check_env_specs(penv, steps=9)


def test_interrupt_while_waiting_closes_the_env():
    penv = ParallelEnv(2, cartpole)
    penv.reset()

    class Interrupting:
        def poll(self, timeout):
            raise KeyboardInterrupt

    penv._poller = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        penv.rand_step()
    assert penv.is_closed and no_children_left()
    with pytest.raises(RuntimeError, match="closed"):
        penv.reset()
