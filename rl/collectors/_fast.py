"""The collector's fast path for a single ``GymEnv``: the env is stepped at the numpy level
(``GymEnv._reset_numpy`` / ``_step_numpy``, the calls ``ParallelEnv``'s workers use) and every
value goes straight into the batch's arrays. Per step the only TensorDict built is the
policy's input (the observation and the root done flags, through ``TensorDict._new``: no
checks), instead of the env's output TensorDict, the ``"next"`` sub-TensorDict and the root of
the following step. The batch it returns is identical to the generic path's (a test holds
them equal).
"""
from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.rl.tensordict import TensorDict

DONE_KEYS = ("done", "terminated", "truncated")


def usable(collector):
    """True when ``collector`` can take the fast path: a plain single GymEnv (not a subclass,
    not vectorised, not wrapped in transforms), finished episodes reset."""
    from ember.rl.envs.gym import GymEnv

    env = collector.env
    return (type(env) is GymEnv and not getattr(env, "_vector", True)
            and env.batch_size == () and collector.reset_when_done
            and hasattr(env, "_step_numpy") and hasattr(env, "_reset_numpy"))


def _false():
    a = np.zeros((1,), np.bool_)
    a.flags.writeable = False
    return Tensor._make(a)


class GymFastPath:
    """Holds the env's current observation and trajectory id between batches."""

    def __init__(self, collector):
        self.c = collector
        self.env = collector.env
        self.obs = None  # {key: array} of the current step's root, None: reset first
        self.traj = 0
        self.steps = 0
        self.flags = {k: _false() for k in DONE_KEYS}

    def carrier(self):
        """The current state as the generic path's root TensorDict (None: reset first)."""
        if self.obs is None:
            return None
        data = {k: Tensor._make(np.array(a)) for k, a in self.obs.items()}
        data.update({k: Tensor._make(np.zeros((1,), np.bool_)) for k in DONE_KEYS})
        data["collector"] = TensorDict._new({"traj_ids": Tensor._make(np.array(self.traj))}, (),
                                            None)
        return TensorDict._new(data, (), None)

    def reset(self):
        self.obs = self.env._reset_numpy()
        self.traj = int(self.c._traj_ids(1)[0])
        self.steps = 0

    def rollout(self, policy, T):
        if self.obs is None:
            self.reset()
        env = self.env
        flags = self.flags
        max_steps = self.c.max_frames_per_traj
        obs_keys = list(self.obs)
        cols = None  # the policy's outputs: [(key, array)]
        root = {k: np.empty((T,) + a.shape, a.dtype) for k, a in self.obs.items()}
        nxt = {k: np.empty((T,) + a.shape, a.dtype) for k, a in self.obs.items()}
        reward = np.empty((T, 1), np.float32)
        term = np.empty((T, 1), np.bool_)
        trunc = np.empty((T, 1), np.bool_)
        traj = np.empty((T,), np.int64)
        obs = self.obs
        for t in range(T):
            data = {k: Tensor._make(obs[k]) for k in obs_keys}
            data.update(flags)
            td = policy(TensorDict._new(data, (), None))
            if td is None:
                raise RuntimeError("collector: the policy returned None; it must return the "
                                   "TensorDict it was given (with the action written)")
            if cols is None:
                cols = []
                for k, v in td._tensordict.items():
                    if k in obs_keys or k in flags:
                        continue
                    if not isinstance(v, Tensor) or not isinstance(v.array, np.ndarray):
                        return None  # nested or non-tensor policy outputs: the generic path
                    cols.append((k, np.empty((T,) + v.array.shape, v.array.dtype)))
            out = td._tensordict
            for k, arr in cols:
                v = out.get(k)
                if v is None:
                    raise RuntimeError(f"collector: step {t} lacks the key {k!r} that the first "
                                       "step of the batch had")
                arr[t] = v.array
            act = out.get("action")
            if act is None:
                raise RuntimeError("collector: the policy did not write an 'action' entry")
            new, r, te, tr = env._step_numpy(act.array)
            self.steps += 1
            if max_steps is not None and self.steps >= max_steps:
                tr = True
            for k in obs_keys:
                root[k][t] = obs[k]
                nxt[k][t] = new[k]
            reward[t, 0] = r
            term[t, 0] = te
            trunc[t, 0] = tr
            traj[t] = self.traj
            if te or tr:
                self.reset()
                obs = self.obs
            else:
                obs = new
        self.obs = obs
        bs = (T,)
        done = term | trunc
        zeros = np.zeros((T, 1), np.bool_)
        top = {k: Tensor._make(a) for k, a in root.items()}
        for k in DONE_KEYS:
            top[k] = Tensor._make(zeros if k == "done" else zeros.copy())
        top["collector"] = TensorDict._new({"traj_ids": Tensor._make(traj)}, bs, None)
        for k, arr in cols:
            top[k] = Tensor._make(arr)
        n = {k: Tensor._make(a) for k, a in nxt.items()}
        n.update(reward=Tensor._make(reward), done=Tensor._make(done),
                 terminated=Tensor._make(term), truncated=Tensor._make(trunc))
        top["next"] = TensorDict._new(n, bs, None)
        return TensorDict._new(top, bs, None)
