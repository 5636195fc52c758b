"""ember.rl.envs.transforms: each transform against hand-computed values (and torch for the image
ops), specs transformed with the data (check_env_specs on TransformedEnv), resets of stateful
transforms, and transforms over SerialEnv / ParallelEnv."""
import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces

import ember
from ember.rl import TensorDict
from ember.rl.envs import GymEnv, ParallelEnv, SerialEnv, check_env_specs, step_mdp
from ember.rl.envs.transforms import (CatFrames, Compose, DoubleToFloat, GrayScale,
                                      ObservationNorm, Resize, RewardScaling, RewardSum,
                                      StepCounter, ToTensorImage, Transform, TransformedEnv,
                                      VecNorm)
from ember.rl.envs.specs import Bounded, Unbounded


def a(t):
    return t.numpy(force=True)


class CountEnv(gymnasium.Env):
    """obs = [episode, t] (float64), float64 action in [-1, 1] echoed as the reward; episodes last
    3 + (episode % 3) steps. The action must arrive as float64."""
    observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float64)
    action_space = spaces.Box(-1.0, 1.0, (1,), np.float64)

    def __init__(self):
        self.episode = -1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        return np.array([self.episode, self.t], np.float64)

    def step(self, action):
        assert action.dtype == np.float64, action.dtype
        self.t += 1
        return self._obs(), float(action[0]), self.t >= 3 + self.episode % 3, False, {}


class PixelEnv(gymnasium.Env):
    """Dict observation: an RGB uint8 image (12 x 10) that depends on a random state."""
    observation_space = spaces.Dict({"pixels": spaces.Box(0, 255, (12, 10, 3), np.uint8)})
    action_space = spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        return {"pixels": self.np_random.integers(0, 256, (12, 10, 3), dtype=np.uint8)}

    def step(self, action):
        self.t += 1
        return self._obs(), 1.0, False, self.t >= 6, {}


# ----------------------------------------------------------------------------- normalisation
def test_observation_norm_values_and_spec():
    loc, scale = np.array([1.0, -2.0, 0.5], np.float32), np.array([2.0, 0.5, 4.0], np.float32)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    for std_normal, want in ((False, x * scale + loc), (True, (x - loc) / scale)):
        t = ObservationNorm(loc, scale, in_keys=["obs"], standard_normal=std_normal)
        td = t(TensorDict({"obs": x}, [5]))
        np.testing.assert_allclose(a(td["obs"]), want, rtol=1e-6)
        assert td["obs"].dtype == ember.float32
        back = t._inv_apply_transform(td["obs"])
        np.testing.assert_allclose(a(back), x, rtol=1e-5, atol=1e-6)
    t = ObservationNorm(loc, scale, in_keys=["observation"], out_keys=["obs_n"], standard_normal=True)
    env = TransformedEnv(GymEnv("Pendulum-v1"), t)
    spec = env.observation_spec["obs_n"]
    base = env.base_env.observation_spec["observation"]
    assert isinstance(spec, Bounded) and "observation" in env.observation_spec.keys()
    np.testing.assert_allclose(spec.low, (base.low - loc) / scale, rtol=1e-6)
    np.testing.assert_allclose(spec.high, (base.high - loc) / scale, rtol=1e-6)
    assert check_env_specs(env, seed=0)
    with pytest.raises(ValueError, match="in_keys"):
        ObservationNorm(loc, scale)
    with pytest.raises(RuntimeError, match="init_stats"):
        ObservationNorm(in_keys=["obs"])(TensorDict({"obs": x}, [5]))


@pytest.mark.parametrize("standard_normal", [True, False])
def test_observation_norm_init_stats(standard_normal):
    env = TransformedEnv(GymEnv("Pendulum-v1"), Compose(
        RewardSum(), ObservationNorm(in_keys=["observation"], standard_normal=standard_normal)))
    env.set_seed(3)
    env.transform[1].init_stats(120)
    ref_env = GymEnv("Pendulum-v1")
    ref_env.set_seed(3)
    obs = a(ref_env.rollout(120)["observation"]).astype(np.float64)
    m, s = obs.mean(0), obs.std(0, ddof=1)
    t = env.transform[1]
    if standard_normal:
        np.testing.assert_allclose(a(t.loc), m, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a(t.scale), s, rtol=1e-5)
    else:
        np.testing.assert_allclose(a(t.scale), 1 / s, rtol=1e-5)
        np.testing.assert_allclose(a(t.loc), -m / s, rtol=1e-5, atol=1e-6)
    normed = a(t(TensorDict({"observation": obs.astype(np.float32)}, [120]))["observation"])
    np.testing.assert_allclose(normed.mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(normed.std(0, ddof=1), 1, rtol=1e-4)
    assert check_env_specs(env, seed=1)
    assert set(t.state_dict()) == {"loc", "scale"}
    with pytest.raises(RuntimeError, match="already"):
        t.init_stats(10)


def test_reward_scaling():
    env = TransformedEnv(GymEnv("CartPole-v1"), RewardScaling(loc=0.5, scale=3.0))
    env.set_seed(0)
    ro = env.rollout(10)
    np.testing.assert_allclose(a(ro["next", "reward"]), 3.5)             # 1 * 3 + 0.5
    t = RewardScaling(loc=1.0, scale=4.0, standard_normal=True)
    td = t(TensorDict({"reward": np.array([[5.0], [-3.0]], np.float32)}, [2]))
    np.testing.assert_allclose(a(td["reward"]), [[1.0], [-1.0]])
    assert isinstance(env.reward_spec, Unbounded) and check_env_specs(env, seed=0)


def _vecnorm_reference(xs, decay, eps):
    """Running decayed sums over a list of batches ([B, F]); stats updated before normalising."""
    s = q = c = 0.0
    out = []
    for x in xs:
        x = x.astype(np.float64)
        s = decay * s + x.sum(0)
        q = decay * q + (x ** 2).sum(0)
        c = decay * c + x.shape[0]
        mean = s / c
        std = np.maximum(np.sqrt(np.maximum(q / c - mean ** 2, eps)), eps)
        out.append((x - mean) / std)
    return out


def test_vecnorm_against_hand_computed_running_stats():
    rng = np.random.default_rng(1)
    xs = [rng.normal(3.0, 2.0, (4, 3)).astype(np.float32) for _ in range(6)]
    t = VecNorm(in_keys=["observation"], decay=0.9, eps=1e-4)
    got = [a(t(TensorDict({"observation": x}, [4]))["observation"]) for x in xs]
    for g, w in zip(got, _vecnorm_reference(xs, 0.9, 1e-4)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    frozen = t.to_observation_norm()
    t.freeze()
    x = rng.normal(size=(4, 3)).astype(np.float32)
    np.testing.assert_allclose(a(frozen(TensorDict({"observation": x}, [4]))["observation"]),
                               a(t(TensorDict({"observation": x}, [4]))["observation"]), rtol=1e-5,
                               atol=1e-6)


def test_vecnorm_in_env_counts_only_reset_rows():
    env = TransformedEnv(SerialEnv(2, lambda: GymEnv("Pendulum-v1")), VecNorm(decay=0.99))
    env.set_seed(0)
    td = env.reset()
    vn = env.transform
    assert float(a(vn._td["observation_count"])[0]) == 2                  # both rows at reset
    td = env.rand_action(td)
    td = step_mdp(env.step(td))
    assert np.isclose(a(vn._td["observation_count"])[0], 0.99 * 2 + 2)
    assert np.isclose(a(vn._td["reward_count"])[0], 2)                     # no reward at reset
    env.reset(TensorDict({"_reset": np.array([[True], [False]])}, [2]))
    assert np.isclose(a(vn._td["observation_count"])[0], 0.99 * (0.99 * 2 + 2) + 1)
    ro = env.rollout(600, break_when_any_done=False)
    obs = a(ro["next", "observation"])[:, 300:].reshape(-1, 3)
    assert (np.abs(obs.mean(0)) < 0.35).all() and (np.abs(obs.std(0) - 1) < 0.35).all()
    assert check_env_specs(env, seed=2)


# ----------------------------------------------------------------------------- counters
def test_step_counter_and_reward_sum_by_hand():
    env = TransformedEnv(GymEnv(CountEnv()), Compose(DoubleToFloat(), StepCounter(max_steps=4),
                                                     RewardSum()))
    env.set_seed(0)
    ro = env.rollout(30, break_when_any_done=False)
    t_env = a(ro["next", "observation"])[:, 1]
    steps = a(ro["next", "step_count"])[:, 0]
    root_steps = a(ro["step_count"])[:, 0]
    np.testing.assert_array_equal(steps, t_env)                            # counts the env's steps
    np.testing.assert_array_equal(root_steps, steps - 1)
    trunc, term = a(ro["next", "truncated"])[:, 0], a(ro["next", "terminated"])[:, 0]
    np.testing.assert_array_equal(trunc, steps == 4)       # as torchrl: also when it terminates
    assert ((steps == 4) & ~term).any()                    # episodes of 5 are cut at 4
    np.testing.assert_array_equal(a(ro["next", "done"])[:, 0], trunc | term)
    assert trunc.any() and term.any() and steps.max() == 4
    # RewardSum: running sum of the rewards since the episode began
    r = a(ro["next", "reward"])[:, 0]
    done = a(ro["next", "done"])[:, 0]
    want, acc = [], 0.0
    for i in range(len(r)):
        acc += r[i]
        want.append(acc)
        if done[i]:
            acc = 0.0
    np.testing.assert_allclose(a(ro["next", "episode_reward"])[:, 0], want, rtol=1e-5, atol=1e-6)
    root_er = a(ro["episode_reward"])[:, 0]
    assert (root_er[1:][done[:-1]] == 0).all()
    assert check_env_specs(env, steps=12, seed=0)
    assert env.observation_spec["step_count"].high.max() == 4


def test_counters_partial_reset_keep_the_other_rows():
    env = TransformedEnv(SerialEnv(2, lambda: GymEnv("CartPole-v1")), Compose(StepCounter(),
                                                                              RewardSum()))
    env.set_seed(0)
    td = env.reset()
    for _ in range(3):
        td = step_mdp(env.step(env.rand_action(td)))
    td.set("_reset", np.array([[False], [True]]))
    out = env.reset(td)
    assert a(out["step_count"])[:, 0].tolist() == [3, 0]
    assert a(out["episode_reward"])[:, 0].tolist() == [3.0, 0.0]


def test_step_counter_needs_the_root_value():
    env = TransformedEnv(GymEnv("CartPole-v1"), StepCounter())
    td = env.base_env.reset()                    # bypasses the transform: no step_count
    td.set("action", ember.tensor(np.int64(0)))
    with pytest.raises(KeyError, match="step_count"):
        env.step(td)


# ----------------------------------------------------------------------------- dtype
def test_double_to_float():
    base = GymEnv(CountEnv())
    assert base.observation_spec["observation"].dtype == np.float64
    env = TransformedEnv(base, DoubleToFloat())
    assert env.observation_spec["observation"].dtype == np.float32
    assert env.action_spec.dtype == np.float32 and base.action_spec.dtype == np.float64
    assert check_env_specs(env, seed=0)             # CountEnv asserts the action arrives as float64
    env.set_seed(0)
    ro = env.rollout(5)
    assert ro["observation"].dtype == ember.float32 and ro["next", "observation"].dtype == ember.float32
    assert ro["action"].dtype == ember.float32
    np.testing.assert_allclose(a(ro["next", "reward"])[:, 0], a(ro["action"])[:, 0], rtol=1e-6)
    only = DoubleToFloat(in_keys=["x"])
    td = only(TensorDict({"x": np.ones(2), "y": np.ones(2)}, [2]))
    assert td["x"].dtype == ember.float32 and td["y"].dtype == ember.float64


# ----------------------------------------------------------------------------- frames
def test_cat_frames_by_hand_and_across_resets():
    env = TransformedEnv(GymEnv(CountEnv()), Compose(DoubleToFloat(), CatFrames(3, dim=-1,
                                                     in_keys=["observation"])))
    assert env.observation_spec["observation"].shape == (6,)
    env.set_seed(0)
    ro = env.rollout(12, break_when_any_done=False)
    root, nxt = a(ro["observation"]), a(ro["next", "observation"])
    t_root = root[:, 1::2]                                   # the step index of each stacked frame
    assert t_root[0].tolist() == [0, 0, 0]                   # reset: the first frame repeated
    assert nxt[0, 1::2].tolist() == [0, 0, 1] and nxt[1, 1::2].tolist() == [0, 1, 2]
    assert nxt[2, 1::2].tolist() == [1, 2, 3]
    done = a(ro["next", "done"])[:, 0]
    for i in np.flatnonzero(done[:-1]):
        ep = root[i + 1, 0::2]
        assert (ep == ep[0]).all() and (root[i + 1, 1::2] == 0).all()   # fresh stack, new episode
    for i in range(12):                                      # never two episodes in one stack
        assert len(set(nxt[i, 0::2].tolist())) == 1
    # the same stacks computed on the stored trajectory of the untransformed env
    base = TransformedEnv(GymEnv(CountEnv()), DoubleToFloat())
    base.set_seed(0)
    raw = base.rollout(12, break_when_any_done=False)
    stacked = CatFrames(3, dim=-1, in_keys=["observation"])(raw.clone())
    np.testing.assert_array_equal(a(stacked["observation"]), root)
    assert check_env_specs(env, steps=8, seed=0)


def test_cat_frames_constant_padding_and_partial_reset():
    t = CatFrames(2, dim=-1, in_keys=["observation"], padding="constant", padding_value=-1)
    env = TransformedEnv(SerialEnv(2, lambda: GymEnv(CountEnv())), Compose(DoubleToFloat(), t))
    env.set_seed(0)
    td = env.reset()
    assert a(td["observation"])[0].tolist() == [-1, -1, 0, 0]
    td = step_mdp(env.step(env.rand_action(td)))
    assert a(td["observation"])[:, 3].tolist() == [1, 1]
    td.set("_reset", np.array([[True], [False]]))
    out = env.reset(td)
    assert a(out["observation"])[0].tolist() == [-1, -1, 1, 0]     # env 0: new episode 1
    np.testing.assert_array_equal(a(out["observation"])[1], a(td["observation"])[1])
    with pytest.raises(ValueError, match="negative"):
        CatFrames(2, dim=0)


# ----------------------------------------------------------------------------- images
def test_image_transforms_against_torch():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (2, 12, 10, 3), dtype=np.uint8)
    td = TensorDict({"pixels": img}, [2])
    td = ToTensorImage()(td)
    want = torch.from_numpy(img).permute(0, 3, 1, 2).float() / 255
    np.testing.assert_allclose(a(td["pixels"]), want.numpy(), rtol=1e-6)
    td = Resize(6, 5)(td)
    want_r = torch.nn.functional.interpolate(want, size=(6, 5), mode="bilinear", align_corners=False,
                                             antialias=True)
    np.testing.assert_allclose(a(td["pixels"]), want_r.numpy(), rtol=1e-4, atol=1e-5)
    up = Resize(20, 16)(TensorDict({"pixels": want.numpy()}, [2]))
    want_u = torch.nn.functional.interpolate(want, size=(20, 16), mode="bilinear", align_corners=False)
    np.testing.assert_allclose(a(up["pixels"]), want_u.numpy(), rtol=1e-4, atol=1e-5)
    td = GrayScale()(td)
    r, g, b = want_r[:, 0], want_r[:, 1], want_r[:, 2]
    gray = (0.2989 * r + 0.587 * g + 0.114 * b)[:, None]
    np.testing.assert_allclose(a(td["pixels"]), gray.numpy(), rtol=1e-5, atol=1e-6)
    g8 = GrayScale()(TensorDict({"pixels": np.moveaxis(img, -1, -3).copy()}, [2]))["pixels"]
    w = (0.2989 * img[..., 0].astype(np.float32) + 0.587 * img[..., 1] + 0.114 * img[..., 2])
    assert g8.dtype == ember.uint8
    np.testing.assert_array_equal(a(g8)[:, 0], w.astype(np.uint8))
    with pytest.raises(ValueError, match="3 channels"):
        GrayScale()(TensorDict({"pixels": np.zeros((2, 4, 5, 5), np.float32)}, [2]))
    one = ToTensorImage(unsqueeze=True)(TensorDict({"pixels": img[0]}, []))
    assert one["pixels"].shape == (1, 3, 12, 10)


def test_pixel_pipeline_specs():
    env = TransformedEnv(GymEnv(PixelEnv()), Compose(ToTensorImage(), Resize(8, 8), GrayScale(),
                                                     CatFrames(4, dim=-3)))
    spec = env.observation_spec["pixels"]
    assert isinstance(spec, Bounded) and spec.shape == (4, 8, 8) and spec.dtype == np.float32
    assert float(spec.low.min()) == 0 and float(spec.high.max()) == 1
    assert check_env_specs(env, steps=8, seed=0)
    env.set_seed(1)
    ro = env.rollout(8, break_when_any_done=False)
    assert ro["next", "pixels"].shape == (8, 4, 8, 8)
    px = a(ro["next", "pixels"])
    np.testing.assert_array_equal(px[1, :3], px[0, 1:])                  # frames shift by one


# ----------------------------------------------------------------------------- env plumbing
class _Tag(Transform):
    """Records the order transforms run in and adds 1 to the action on its way in."""
    log = []

    def __init__(self, name):
        super().__init__(in_keys_inv=["action"])
        self.name = name

    def _call(self, td):
        _Tag.log.append(self.name)
        return td

    def _inv_apply_transform(self, value):
        _Tag.log.append("inv" + self.name)
        return value


def test_transformed_env_api():
    env = TransformedEnv(GymEnv("CartPole-v1"), _Tag("a"))
    env.append_transform(_Tag("b"))
    env.insert_transform(0, _Tag("z"))
    assert isinstance(env.transform, Compose) and len(env.transform) == 3
    env.set_seed(0)
    _Tag.log.clear()
    env.rollout(1)
    assert _Tag.log == ["z", "a", "b", "invb", "inva", "invz", "z", "a", "b"]
    assert env.transform[2].parent.transform[1].name == "a"
    assert len(env.transform[0].parent.transform) == 0
    with pytest.raises(TypeError, match="EnvBase"):
        TransformedEnv(object(), StepCounter())
    ident = TransformedEnv(GymEnv("CartPole-v1"))
    plain = GymEnv("CartPole-v1")
    ident.set_seed(4)
    plain.set_seed(4)
    r1, r2 = ident.rollout(30, break_when_any_done=False), plain.rollout(30, break_when_any_done=False)
    for k in r2.keys(True, True):
        np.testing.assert_array_equal(a(r1[k]), a(r2[k]))
    assert "TransformedEnv" in repr(ident)


@pytest.mark.multiprocess
def test_transforms_with_parallel_env_equal_serial():
    def make():
        return TransformedEnv(GymEnv(CountEnv()), Compose(DoubleToFloat(), StepCounter(4),
                                                          RewardSum(), CatFrames(2, -1, ["observation"])))

    def outer():                 # over the batched env; StepCounter(3) ends episodes the env does not
        return Compose(StepCounter(3, step_count_key="outer_steps"), RewardScaling(0.0, 2.0),
                       RewardSum(out_keys=["scaled_return"]),
                       CatFrames(3, -1, ["observation"], ["obs_stack"]),
                       VecNorm(in_keys=["observation"], out_keys=["obs_norm"], decay=0.9))
    with ParallelEnv(2, make) as penv:                      # transforms inside the workers
        senv = SerialEnv(2, make)
        penv.set_seed(0)
        senv.set_seed(0)
        r1, r2 = penv.rollout(20, break_when_any_done=False), senv.rollout(20, break_when_any_done=False)
        for k in r2.keys(True, True):
            np.testing.assert_array_equal(a(r1[k]), a(r2[k]), err_msg=str(k))
        # transforms over the parallel env: TransformedEnv.step_and_maybe_reset makes one round
        # trip (plus a reset for what StepCounter(3) ends) and equals the generic path over Serial
        tp, ts = TransformedEnv(penv, outer()), TransformedEnv(senv, outer())
        tp.set_seed(1)
        ts.set_seed(1)
        r1, r2 = tp.rollout(25, break_when_any_done=False), ts.rollout(25, break_when_any_done=False)
        for k in r2.keys(True, True):
            np.testing.assert_allclose(a(r1[k]), a(r2[k]), rtol=1e-6, err_msg=str(k))
        assert a(r1["next", "outer_steps"]).max() == 3 and a(r1["next", "step_count"]).max() <= 3
        for k in ("observation_sum", "observation_ssq", "observation_count"):
            np.testing.assert_allclose(a(tp.transform[4]._td[k]), a(ts.transform[4]._td[k]), rtol=1e-9)
        assert check_env_specs(tp, steps=10, seed=0)
        np.testing.assert_allclose(a(r1["next", "scaled_return"]), 2 * a(r1["next", "episode_reward"]),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.multiprocess
def test_vecnorm_shared_td_across_worker_processes():
    from ember.multiprocessing import share_memory_
    shared = TensorDict({f"{k}{s}": share_memory_(ember.zeros(*shape, dtype=ember.float64))
                         for k, shape in (("observation", (3,)), ("reward", (1,)))
                         for s in ("_sum", "_ssq")}, [])
    for k in ("observation", "reward"):
        shared.set(f"{k}_count", share_memory_(ember.zeros(1, dtype=ember.float64)))
    vn = VecNorm(shared_td=shared, decay=1.0)            # the lock is made here, before the fork
    with ParallelEnv(2, lambda: TransformedEnv(GymEnv("Pendulum-v1"), vn)) as penv:
        penv.set_seed(0)
        penv.rollout(10, break_when_any_done=False)
    # both workers updated the same statistics: 2 resets + 2 x 10 steps of observations
    assert a(shared["observation_count"])[0] == 22 and a(shared["reward_count"])[0] == 20
    ref = SerialEnv(2, lambda: GymEnv("Pendulum-v1"))
    ref.set_seed(0)
    ro = ref.rollout(10, break_when_any_done=False)
    obs = np.concatenate([a(ro["observation"])[:, 0], a(ro["next", "observation"]).reshape(-1, 3)])
    np.testing.assert_allclose(a(shared["observation_sum"]), obs.astype(np.float64).sum(0), rtol=1e-5)
    with pytest.raises(KeyError, match="observation_ssq"):
        VecNorm(shared_td=TensorDict({"observation_sum": ember.zeros(3)}, []))
