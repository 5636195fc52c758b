"""``GymEnv``: a single gymnasium environment behind the ``EnvBase`` API, with gymnasium spaces
mapped to specs (Box -> Bounded/Unbounded, Discrete -> Categorical, MultiDiscrete ->
MultiCategorical, MultiBinary -> Binary, Dict -> Composite)."""
from __future__ import annotations

import numpy as np

import ember
from ember.rl.tensordict import TensorDict

from .common import EnvBase
from .specs import Binary, Bounded, Categorical, Composite, MultiCategorical, Unbounded

__all__ = ["GymEnv", "space_to_spec"]


def space_to_spec(space, device=None):
    """The spec of a gymnasium space (Dict spaces give a Composite)."""
    from gymnasium import spaces
    if isinstance(space, spaces.Box):
        low, high = np.asarray(space.low), np.asarray(space.high)
        if space.dtype.kind == "f" and not np.isfinite(low).any() and not np.isfinite(high).any():
            return Unbounded(space.shape, space.dtype, device)
        return Bounded(low, high, space.shape, space.dtype, device)
    if isinstance(space, spaces.Discrete):
        return Categorical(int(space.n), (), np.int64, device)
    if isinstance(space, spaces.MultiDiscrete):
        return MultiCategorical(np.asarray(space.nvec), space.shape, np.int64, device)
    if isinstance(space, spaces.MultiBinary):
        return Binary(shape=space.shape, dtype=np.int8, device=device)
    if isinstance(space, spaces.Dict):
        return Composite({k: space_to_spec(v, device) for k, v in space.spaces.items()}, device=device)
    raise TypeError(f"GymEnv: unsupported gymnasium space {space!r}")


class GymEnv(EnvBase):
    """``GymEnv("CartPole-v1")`` or ``GymEnv(gymnasium_env)``; extra kwargs go to ``gymnasium.make``.

    The observation is stored under ``"observation"`` (Dict spaces: under their own keys). Discrete
    spaces with ``start != 0`` are exposed as 0-based indices and shifted back on ``step``.
    """

    def __init__(self, env, device=None, **make_kwargs):
        import gymnasium
        super().__init__((), device)
        self.env = gymnasium.make(env, **make_kwargs) if isinstance(env, str) else env
        osp, asp = self.env.observation_space, self.env.action_space
        obs = space_to_spec(osp, self.device)
        self._dict_obs = isinstance(obs, Composite)
        self.observation_spec = obs if self._dict_obs else Composite({"observation": obs},
                                                                     device=self.device)
        self.action_spec = space_to_spec(asp, self.device)
        if isinstance(self.action_spec, Composite):
            raise TypeError("GymEnv: Dict action spaces are not supported")
        self._action_start = int(getattr(asp, "start", 0)) if isinstance(
            asp, gymnasium.spaces.Discrete) else 0
        self._obs_start = {}
        self._seed = None
        self._needs_reset = True

    def _set_seed(self, seed):
        self._seed = seed
        self.env.action_space.seed(seed)

    def _obs_td(self, obs):
        if self._dict_obs:
            return TensorDict({k: self.observation_spec[k].encode(v) for k, v in obs.items()},
                              batch_size=())
        return TensorDict({"observation": self.observation_spec["observation"].encode(obs)},
                          batch_size=())

    def _reset(self, tensordict=None):
        seed, self._seed = self._seed, None
        obs, _info = self.env.reset(seed=seed)
        self._needs_reset = False
        return self._obs_td(obs)

    def _step(self, tensordict):
        if self._needs_reset:
            raise RuntimeError("GymEnv.step: the episode is over (or never started); call reset() first")
        a = tensordict.get("action").numpy(force=True)
        if isinstance(self.action_spec, Categorical):
            a = int(a) + self._action_start
        else:
            a = a.astype(self.action_spec.dtype, copy=False)
        obs, reward, terminated, truncated, _info = self.env.step(a)
        terminated, truncated = bool(terminated), bool(truncated)
        done = terminated or truncated
        self._needs_reset = done
        out = self._obs_td(obs)
        out.set("reward", ember.tensor(np.asarray([reward], np.float32), device=self.device))
        for k, v in (("done", done), ("terminated", terminated), ("truncated", truncated)):
            out.set(k, ember.tensor(np.asarray([v], np.bool_), device=self.device))
        return out

    def close(self):
        self.env.close()
