"""``GymEnv``: a gymnasium environment (single or vector) behind the ``EnvBase`` API, with
gymnasium spaces mapped to specs (Box -> Bounded/Unbounded, Discrete -> Categorical, MultiDiscrete
-> MultiCategorical, MultiBinary -> Binary, Dict -> Composite).

Autoreset (gymnasium 1.x). ``EnvBase`` never resets inside ``step``: ``td["next"]`` always holds
the observation that ended the episode and the reset observation only appears at the root of the
following step. Gymnasium's own autoresetting pieces are brought under that rule:

* a single env wrapped in ``gymnasium.wrappers.Autoreset`` is only ever reset through ``reset``
  (stepping a finished env raises), so the wrapper's "reset on the next step" never fires;
* a vector env (``gymnasium.vector.SyncVectorEnv``/``AsyncVectorEnv``, or
  ``GymEnv(name, num_envs=n)``) in ``NextStep`` or ``Disabled`` mode: done sub-envs are reset
  with ``reset(options={"reset_mask": ...})`` before they are stepped again, so the vector env
  never performs its silent reset step (whose transition would cross the episode boundary);
* in ``SameStep`` mode the vector env returns the reset observation from ``step``: ``GymEnv``
  puts ``info["final_obs"]`` under ``"next"`` and hands the reset observation out at ``reset``.
"""
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


def _autoreset_mode(env):
    mode = env.metadata.get("autoreset_mode", "NextStep")
    return getattr(mode, "value", mode)


class GymEnv(EnvBase):
    """``GymEnv("CartPole-v1")``, ``GymEnv(gymnasium_env)``, ``GymEnv(vector_env)`` or
    ``GymEnv("CartPole-v1", num_envs=4)`` (a ``SyncVectorEnv``; batch size ``(4,)``); other kwargs
    go to ``gymnasium.make``.

    The observation is stored under ``"observation"`` (Dict spaces: under their own keys). Discrete
    spaces with ``start != 0`` are exposed as 0-based indices and shifted back on ``step``.
    ``set_seed(s)`` seeds the next reset (sub-env ``i`` of a vector env gets ``s + i``).
    """

    def __init__(self, env, device=None, num_envs=None, **make_kwargs):
        import gymnasium
        if isinstance(env, str):
            if num_envs is not None:
                env = gymnasium.make_vec(env, num_envs=int(num_envs), vectorization_mode="sync",
                                         **make_kwargs)
            else:
                env = gymnasium.make(env, **make_kwargs)
        elif num_envs is not None:
            raise ValueError("GymEnv: num_envs is only accepted with an environment name")
        self.env = env
        self._vector = isinstance(env, gymnasium.vector.VectorEnv)
        if self._vector:
            n = int(env.num_envs)
            super().__init__((n,), device)
            osp, asp = env.single_observation_space, env.single_action_space
            self._mode = _autoreset_mode(env)
            self._done = np.zeros(n, np.bool_)          # finished, not yet reset through reset()
            self._pending = None                         # SameStep: reset obs returned by step
        else:
            super().__init__((), device)
            osp, asp = env.observation_space, env.action_space
        obs = space_to_spec(osp, self.device)
        self._dict_obs = isinstance(obs, Composite)
        if not self._dict_obs:
            obs = Composite({"observation": obs}, device=self.device)
        act = space_to_spec(asp, self.device)
        if isinstance(act, Composite):
            raise TypeError("GymEnv: Dict action spaces are not supported")
        self.observation_spec = obs.expand(self.batch_size)
        self.action_spec = act.expand(self.batch_size)
        self._obs_keys = list(obs.keys())
        self._obs_dtypes = {k: obs[k].dtype for k in self._obs_keys}
        self._obs_shapes = {k: obs[k].shape for k in self._obs_keys}
        self._discrete = isinstance(act, Categorical)
        self._action_dtype = act.dtype
        self._action_start = int(getattr(asp, "start", 0)) if isinstance(
            asp, gymnasium.spaces.Discrete) else 0
        self._seed = None
        self._needs_reset = True

    # ---------------------------------------------------------------- numpy level
    def _obs_arrays(self, obs):
        """Observation(s) from gymnasium -> {key: array of the spec's dtype and shape}."""
        lead = self.batch_size
        if not self._dict_obs:
            obs = {"observation": obs}
        out = {}
        for k in self._obs_keys:
            arr = np.asarray(obs[k]).astype(self._obs_dtypes[k], copy=False)
            want = lead + self._obs_shapes[k]
            if arr.shape != want:
                if arr.size != int(np.prod(want)):
                    raise ValueError(f"GymEnv: observation {k!r} of shape {arr.shape} does not fit "
                                     f"the space's shape {want}")
                arr = arr.reshape(want)
            out[k] = arr
        return out

    def _gym_action(self, a):
        if self._discrete:
            return int(a) + self._action_start if not self._vector else \
                a.astype(np.int64) + self._action_start
        return a.astype(self._action_dtype, copy=False)

    def _reset_numpy(self):
        """Reset a single env; returns the observation arrays (no TensorDict)."""
        seed, self._seed = self._seed, None
        obs, _info = self.env.reset(seed=seed)
        self._needs_reset = False
        return self._obs_arrays(obs)

    def _step_numpy(self, action):
        """Step a single env with a numpy action; returns (obs arrays, reward, terminated,
        truncated) as python/numpy values."""
        if self._needs_reset:
            raise RuntimeError("GymEnv.step: the episode is over (or never started); call reset() first")
        obs, reward, terminated, truncated, _info = self.env.step(self._gym_action(action))
        terminated, truncated = bool(terminated), bool(truncated)
        self._needs_reset = terminated or truncated
        return self._obs_arrays(obs), float(reward), terminated, truncated

    def _td(self, arrays):
        return TensorDict({k: ember.tensor(v, device=self.device) for k, v in arrays.items()},
                          batch_size=self.batch_size)

    # ---------------------------------------------------------------- EnvBase
    def _set_seed(self, seed):
        self._seed = seed
        self.env.action_space.seed(seed)

    def _reset(self, tensordict=None):
        if self._vector:
            return self._td(self._vector_reset(tensordict))
        return self._td(self._reset_numpy())

    def _step(self, tensordict):
        a = tensordict.get("action").numpy(force=True)
        if self._vector:
            obs, reward, terminated, truncated = self._vector_step(a)
        else:
            obs, reward, terminated, truncated = self._step_numpy(a)
        out = self._td(obs)
        lead = self.batch_size + (1,)
        out.set("reward", ember.tensor(np.asarray(reward, np.float32).reshape(lead), device=self.device))
        term = np.asarray(terminated, np.bool_).reshape(lead)
        trunc = np.asarray(truncated, np.bool_).reshape(lead)
        for k, v in (("done", term | trunc), ("terminated", term), ("truncated", trunc)):
            out.set(k, ember.tensor(v, device=self.device))
        return out

    # ---------------------------------------------------------------- vector envs
    def _vector_reset(self, tensordict):
        n = self.batch_size[0]
        mask = None
        if tensordict is not None and "_reset" in tensordict.keys():
            mask = np.asarray(tensordict.get("_reset").numpy(force=True), np.bool_).reshape(n, -1).any(-1)
        if mask is None or self._needs_reset:
            seed, self._seed = self._seed, None
            obs, _info = self.env.reset(seed=seed)
            self._needs_reset = False
            self._done[:] = False
            self._pending = None
            self._last = self._obs_arrays(obs)
            return {k: v.copy() for k, v in self._last.items()}
        out = {k: v.copy() for k, v in self._last.items()}
        todo = mask.copy()
        if self._pending is not None:                   # SameStep: already reset inside step
            got = mask & self._pending_mask
            for k, v in self._pending.items():
                out[k][got] = v[got]
            self._pending_mask &= ~got
            todo &= ~got
        if todo.any():
            obs, _info = self.env.reset(options={"reset_mask": todo})
            fresh = self._obs_arrays(obs)
            for k in out:
                out[k][todo] = fresh[k][todo]
        self._done[mask] = False
        self._last = {k: v.copy() for k, v in out.items()}
        return out

    def _vector_step(self, action):
        if self._needs_reset or self._done.any():
            idx = np.flatnonzero(self._done).tolist()
            raise RuntimeError(f"GymEnv.step: sub-envs {idx} finished and were not reset; call "
                               "reset() (with a '_reset' mask) first" if idx else
                               "GymEnv.step: call reset() first")
        obs, reward, terminated, truncated, info = self.env.step(self._gym_action(action))
        terminated = np.asarray(terminated, np.bool_)
        truncated = np.asarray(truncated, np.bool_)
        done = terminated | truncated
        arrays = self._obs_arrays(obs)
        if self._mode == "SameStep" and done.any():
            self._pending = {k: v.copy() for k, v in arrays.items()}
            self._pending_mask = done.copy()
            final = info["final_obs"]
            for i in np.flatnonzero(done):
                one = final[i] if self._dict_obs else {"observation": final[i]}
                for k in self._obs_keys:
                    arrays[k][i] = np.asarray(one[k]).astype(self._obs_dtypes[k]).reshape(
                        self._obs_shapes[k])
        self._done = done
        self._last = {k: v.copy() for k, v in arrays.items()}
        return arrays, np.asarray(reward), terminated, truncated

    def close(self):
        self.env.close()
