"""``SyncDataCollector``: runs a policy in an environment and yields TensorDicts of
``frames_per_batch`` transitions, in this process (as torchrl's ``SyncDataCollector``).

Layout of a batch: an env with batch size ``()`` gives ``[T]``, a batched env (``SerialEnv``,
``ParallelEnv``) of ``[n]`` gives ``[n, T]`` with ``T = frames_per_batch // n``. Every step holds
the root entries (observations, done flags, ``"action"`` and whatever the policy wrote), the
``"next"`` entries the env wrote, and ``("collector", "traj_ids")``: the id of the trajectory the
step belongs to. Ids start at ``0 .. n-1`` and every new episode takes the next unused id, so ids
are unique across batches. The env state is carried from one batch to the next (an episode can
span batches, keeping its id) unless ``reset_at_each_iter``. Finished envs are reset right away,
so no transition mixes two episodes (``td["next", ...]`` is the terminal step; the reset
observation is the root of the following step).

The step path writes each step's leaves straight into preallocated numpy arrays of the batch
(one copy per key, no per-step TensorDict stacking). A plain single ``GymEnv`` goes further
(``_fast.py``): it is stepped at the numpy level and only the policy's input TensorDict is
built per step.

    >>> import ember
    >>> from ember.rl.envs import GymEnv
    >>> env = GymEnv("CartPole-v1"); _ = env.set_seed(0)
    >>> collector = SyncDataCollector(env, None, frames_per_batch=50, total_frames=100)
    >>> [b.batch_size for b in collector]
    [(50,), (50,)]
    >>> collector.shutdown()
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import ember
from ember import nn
from ember._tensor import Tensor
from ember.rl.tensordict import TensorDict
from ember.rl.tensordict.nn import (InteractionType, TensorDictModule, TensorDictModuleBase,
                                    set_interaction_type)

from . import _fast
from .utils import split_trajectories

__all__ = ["DataCollectorBase", "SyncDataCollector", "RandomPolicy", "DEFAULT_EXPLORATION_TYPE"]

DEFAULT_EXPLORATION_TYPE = InteractionType.RANDOM
TRAJ_KEY = ("collector", "traj_ids")


class RandomPolicy:
    """A policy that writes ``action_spec.rand()`` (drawn from ``generator`` or the env's seeded
    generator) into the TensorDict."""

    def __init__(self, action_spec, action_key="action", generator=None):
        self.action_spec = action_spec
        self.action_key = action_key
        self.generator = generator

    def __call__(self, td):
        td.set(self.action_key, self.action_spec.rand(generator=self.generator))
        return td


def _as_policy(policy, env):
    """A callable ``td -> td``: TensorDict modules as they are, a plain ``nn.Module`` wrapped to
    read the observation(s) and write ``"action"``, ``None`` -> random actions."""
    if policy is None:
        return None
    if isinstance(policy, TensorDictModuleBase):
        return policy
    if isinstance(policy, nn.Module):
        keys = list(env.observation_spec.keys(True, True))
        return TensorDictModule(policy, in_keys=keys, out_keys=["action"])
    if callable(policy):
        return policy
    raise TypeError(f"collector: policy must be a TensorDict module, an nn.Module, a callable or "
                    f"None, got {type(policy).__name__}")


def _make_env(create_env_fn, create_env_kwargs):
    from ember.rl.envs import EnvBase

    if isinstance(create_env_fn, EnvBase):
        if create_env_kwargs:
            raise ValueError("collector: create_env_kwargs is only used with an env factory, "
                             "not with an env instance")
        return create_env_fn
    if callable(create_env_fn):
        env = create_env_fn(**(create_env_kwargs or {}))
        if not isinstance(env, EnvBase):
            raise TypeError(f"collector: create_env_fn returned a {type(env).__name__}, not an "
                            "EnvBase")
        return env
    raise TypeError(f"collector: expected an env (EnvBase) or a function creating one, got "
                    f"{type(create_env_fn).__name__}")


class DataCollectorBase:
    """What every collector has: iteration, ``__len__`` (batches when ``total_frames > 0``)."""

    total_frames: int
    requested_frames_per_batch: int

    def __len__(self):
        if self.total_frames < 0:
            raise RuntimeError("collector: a collector with total_frames=-1 has no length")
        return math.ceil(self.total_frames / self.requested_frames_per_batch)

    def __iter__(self):
        return self.iterator()

    def next(self):
        """One batch (or ``None`` when ``total_frames`` are collected)."""
        if not hasattr(self, "_iter") or self._iter is None:
            self._iter = self.iterator()
        try:
            return next(self._iter)
        except StopIteration:
            self._iter = None
            return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()
        return False


class SyncDataCollector(DataCollectorBase):
    """Collect ``frames_per_batch`` transitions per iteration, ``total_frames`` in all.

    Args:
        create_env_fn: an ``EnvBase`` or a function returning one (``create_env_kwargs`` are
            passed to it).
        policy: a TensorDict module (reads the observation keys, writes ``"action"``), a plain
            ``nn.Module`` (called on the observation, its output becomes ``"action"``), any
            callable ``td -> td``, or ``None`` (random actions from the env's action spec).
        frames_per_batch: transitions per batch (rounded up to a multiple of the env's batch
            numel, with a warning).
        total_frames: transitions in all (``-1``: never stop); rounded up to a multiple of
            ``frames_per_batch``.
        max_frames_per_traj: truncate an episode after this many steps (``("next",
            "truncated")`` and ``("next", "done")`` set, then reset).
        init_random_frames: the batches started before this many frames were collected use
            random actions.
        reset_at_each_iter: reset every env at the start of each batch.
        postproc: a function applied to every batch.
        split_trajs: apply ``split_trajectories`` to every batch.
        exploration_type: the interaction type the policy runs under (default RANDOM).
        reset_when_done: reset finished envs (default True).
        replay_buffer: when given, every batch is ``extend``ed into it and the iterator yields
            ``None``.
        storing_device / device: where the yielded batches go (collection runs on the CPU,
            where the envs and the policy's numpy arrays are); ``return_same_td`` is accepted,
            every batch is a new TensorDict.
    """

    def __init__(self, create_env_fn=None, policy=None, frames_per_batch=None, total_frames=-1,
                 *, device=None, storing_device=None, policy_device=None, env_device=None,
                 create_env_kwargs=None, max_frames_per_traj=None, init_random_frames=None,
                 reset_at_each_iter=False, postproc=None, split_trajs=None,
                 exploration_type=DEFAULT_EXPLORATION_TYPE, return_same_td=False,
                 reset_when_done=True, interruptor=None, replay_buffer=None, **kwargs):
        for name in kwargs:
            if name not in ("set_truncated", "use_buffers", "trust_policy", "compile_policy",
                            "cudagraph_policy", "no_cuda_sync", "local_init_rb"):
                raise TypeError(f"SyncDataCollector: unexpected keyword argument {name!r}")
        if frames_per_batch is None:
            raise TypeError("SyncDataCollector: frames_per_batch is required")
        if interruptor is not None:
            raise ValueError("SyncDataCollector: interruptor is only for multiprocess async "
                             "collection, which ember does not have")
        self.env = _make_env(create_env_fn, create_env_kwargs)
        self._closed = False
        self.policy = policy
        self._policy = _as_policy(policy, self.env)
        frames_per_batch = int(frames_per_batch)
        if frames_per_batch <= 0:
            raise ValueError(f"SyncDataCollector: frames_per_batch must be > 0, got "
                             f"{frames_per_batch}")
        nenv = math.prod(self.env.batch_size)
        if frames_per_batch % nenv:
            new = -(-frames_per_batch // nenv) * nenv
            warnings.warn(f"SyncDataCollector: frames_per_batch={frames_per_batch} is not a "
                          f"multiple of the env's batch numel {nenv}; using {new}", stacklevel=2)
            frames_per_batch = new
        self.requested_frames_per_batch = self.frames_per_batch = frames_per_batch
        total_frames = int(total_frames) if total_frames is not None else -1
        if total_frames == 0 or total_frames < -1:
            raise ValueError(f"SyncDataCollector: total_frames must be > 0 or -1, got "
                             f"{total_frames}")
        if total_frames > 0 and total_frames % frames_per_batch:
            new = -(-total_frames // frames_per_batch) * frames_per_batch
            warnings.warn(f"SyncDataCollector: total_frames={total_frames} is not a multiple of "
                          f"frames_per_batch={frames_per_batch}; collecting {new}",
                          stacklevel=2)
            total_frames = new
        self.total_frames = total_frames
        self.max_frames_per_traj = int(max_frames_per_traj) if max_frames_per_traj else None
        self.init_random_frames = int(init_random_frames or 0)
        self.reset_at_each_iter = bool(reset_at_each_iter)
        self.postproc = postproc
        self.split_trajs = bool(split_trajs)
        self.exploration_type = (InteractionType(exploration_type)
                                 if exploration_type is not None else None)
        self.return_same_td = bool(return_same_td)
        self.reset_when_done = bool(reset_when_done)
        self.replay_buffer = replay_buffer
        dev = storing_device if storing_device is not None else device
        self.storing_device = None if dev is None else ember.device(dev)
        self._nenv = nenv
        self._T = frames_per_batch // nenv
        self._random = RandomPolicy(self.env.action_spec, generator=None)
        self._frames = 0
        self._iter_count = 0
        self._carrier = None
        self._next_traj = 0
        self._step_count = None
        self._iter = None
        self._fast = _fast.GymFastPath(self) if _fast.usable(self) else None

    # ------------------------------------------------------------------ env state
    def _traj_ids(self, n):
        """``n`` fresh trajectory ids."""
        ids = np.arange(self._next_traj, self._next_traj + n, dtype=np.int64)
        self._next_traj += n
        return ids

    def _reset_all(self):
        td = self.env.reset()
        bs = self.env.batch_size
        td.set(TRAJ_KEY, Tensor._make(self._traj_ids(self._nenv).reshape(bs)))
        self._step_count = np.zeros(bs, np.int64)
        return td

    def _truncate(self, td):
        """Mark the episodes that reached ``max_frames_per_traj`` as truncated (and done)."""
        bs = self.env.batch_size
        nxt = td._tensordict["next"]
        self._step_count += 1
        over = self._step_count >= self.max_frames_per_traj
        if over.any():
            ov = over.reshape(bs + (1,))
            for k in ("truncated", "done"):
                cur = nxt.get(k, None)
                base = np.zeros(bs + (1,), np.bool_) if cur is None else cur.numpy(force=True)
                nxt.set(k, Tensor._make(np.logical_or(base, ov)))

    def _after_step(self, td):
        """The root of the next step from a stepped ``td`` (finished envs reset, new traj ids)."""
        env = self.env
        bs = env.batch_size
        nxt = td._tensordict["next"]
        data = {k: v for k, v in nxt._tensordict.items() if k != "reward"}
        root = TensorDict._new(data, bs, nxt._device)
        traj = td.get(TRAJ_KEY)
        done_t = nxt._tensordict.get("done")
        done = None if done_t is None else done_t.array
        if done is not None and self.reset_when_done and done.any():
            mask = done.reshape(bs + (-1,)).any(-1) if bs else bool(done.any())
            fresh = env.reset(TensorDict({"_reset": done}, batch_size=bs) if bs else None)
            if bs:
                for k in fresh.keys(True, True):
                    new = fresh.get(k)
                    old = root.get(k, None)
                    if old is None:
                        root.set(k, new)
                        continue
                    a = old.numpy(force=True).copy()
                    a[mask] = new.numpy(force=True)[mask]
                    root.set(k, Tensor._make(a))
                ids = traj.array.copy()
                ids[mask] = self._traj_ids(int(mask.sum()))
                if self._step_count is not None:
                    self._step_count[mask] = 0
            else:
                for k in fresh.keys(True, True):
                    root.set(k, fresh.get(k))
                ids = self._traj_ids(1).reshape(())
                if self._step_count is not None:
                    self._step_count[...] = 0
            root._tensordict["collector"] = TensorDict._new({"traj_ids": Tensor._make(ids)}, bs,
                                                            None)
        else:
            root._tensordict["collector"] = td._tensordict["collector"]
        return root

    # ------------------------------------------------------------------ one batch
    def _build_layout(self, td):
        """``[(key path, feature shape, dtype)]`` of a step's leaves (None: a leaf that is not
        a CPU tensor, which sends the batch down the stacking path)."""
        nb = len(self.env.batch_size)
        keys = []
        for k, v in td.items(True, True):
            if not isinstance(v, Tensor):
                return None  # non-tensor data: the stacking path
            a = v.array
            if not isinstance(a, np.ndarray):
                return None
            keys.append((k if isinstance(k, tuple) else (k,), a.shape[nb:], a.dtype))
        return keys

    def rollout(self):
        """Collect one batch and return it."""
        env = self.env
        T = self._T
        random = self._frames < self.init_random_frames or self._policy is None
        policy = self._random if random else self._policy
        self._random.generator = env.rng
        if self._fast is not None:
            if self.reset_at_each_iter:
                self._fast.obs = None
            with ember.no_grad(), set_interaction_type(self.exploration_type):
                out = self._fast.rollout(policy, T)
            if out is not None:
                self._frames += T
                self._iter_count += 1
                return out
            # the policy writes nested or non-tensor data: continue on the generic path
            fast, self._fast = self._fast, None
            self._carrier = fast.carrier()
            if self._carrier is not None:
                self._step_count = np.asarray(fast.steps, np.int64).reshape(())
        if self._carrier is None or self.reset_at_each_iter:
            self._carrier = self._reset_all()
        bs = env.batch_size
        nb = len(bs)
        at = [(slice(None),) * nb + (t,) for t in range(T)]
        truncate = self.max_frames_per_traj is not None
        steps = None
        arrays = None
        with ember.no_grad(), set_interaction_type(self.exploration_type):
            td = self._carrier
            for t in range(T):
                td = policy(td)
                if td is None:
                    raise RuntimeError("collector: the policy returned None; it must return the "
                                       "TensorDict it was given (with the action written)")
                td = env.step(td)
                if truncate:
                    self._truncate(td)
                if t == 0:
                    layout = self._build_layout(td)
                    if layout is None:
                        steps = []
                    else:
                        arrays = [(path, np.empty(bs + (T,) + shape, dtype))
                                  for path, shape, dtype in layout]
                if steps is not None:
                    steps.append(td.clone())
                else:
                    idx = at[t]
                    for path, arr in arrays:
                        v = td
                        for k in path:
                            v = v._tensordict.get(k) if isinstance(v, TensorDict) else None
                        if v is None:
                            raise RuntimeError(f"collector: step {t} lacks the key {path!r} that "
                                               "the first step of the batch had")
                        arr[idx] = v.array
                td = self._after_step(td)
            self._carrier = td
        out_bs = bs + (T,)
        if steps is not None:
            from ember.rl.tensordict import stack
            out = stack(steps, nb)
        else:
            nested = {}
            for path, arr in arrays:
                d = nested
                for k in path[:-1]:
                    d = d.setdefault(k, {})
                d[path[-1]] = Tensor._make(arr)
            out = _nested_td(nested, out_bs)
        self._frames += T * self._nenv
        self._iter_count += 1
        return out

    def iterator(self):
        """Yield batches until ``total_frames`` are collected."""
        while self.total_frames < 0 or self._frames < self.total_frames:
            out = self.rollout()
            if self.storing_device is not None and self.storing_device.type != "cpu":
                out = out.to(self.storing_device)
            if self.split_trajs:
                out = split_trajectories(out)
            if self.postproc is not None:
                out = self.postproc(out)
            if self.replay_buffer is not None:
                self.replay_buffer.extend(out.reshape(-1) if out.batch_dims > 1 else out)
                yield None
            else:
                yield out

    # ------------------------------------------------------------------ control
    def update_policy_weights_(self, policy_weights=None):
        """Load ``policy_weights`` (a state dict) into the policy; without them there is
        nothing to do (this collector runs the caller's policy object itself)."""
        if policy_weights is not None:
            if not isinstance(self.policy, nn.Module):
                raise TypeError("update_policy_weights_: the policy is not an nn.Module")
            self.policy.load_state_dict(policy_weights)

    def set_seed(self, seed, static_seed=False):
        """Seed the env (its next reset, and the generator of random actions); returns the seed
        for the next collector (``seed + batch numel``, as the envs use ``seed .. seed+n-1``)."""
        self.env.set_seed(int(seed))
        self._carrier = None
        if self._fast is not None:
            self._fast.obs = None
        return int(seed) if static_seed else int(seed) + self._nenv

    def reset(self, index=None):
        """Reset the env(s); the next batch starts new trajectories."""
        if index is not None:
            raise ValueError("SyncDataCollector.reset: resetting a subset is not supported")
        self._carrier = None
        if self._fast is not None:
            self._fast.obs = None

    def shutdown(self):
        """Close the env."""
        if not self._closed:
            self._closed = True
            self.env.close()

    def state_dict(self):
        """``{"policy_state_dict", "frames", "iter", "next_traj_id"}`` (and ``"env_state_dict"``
        when the env has one)."""
        out = {"frames": self._frames, "iter": self._iter_count, "next_traj_id": self._next_traj}
        if isinstance(self.policy, nn.Module):
            out["policy_state_dict"] = self.policy.state_dict()
        if hasattr(self.env, "state_dict"):
            out["env_state_dict"] = self.env.state_dict()
        return out

    def load_state_dict(self, state_dict):
        self._frames = int(state_dict.get("frames", 0))
        self._iter_count = int(state_dict.get("iter", 0))
        self._next_traj = int(state_dict.get("next_traj_id", self._next_traj))
        if "policy_state_dict" in state_dict and isinstance(self.policy, nn.Module):
            self.policy.load_state_dict(state_dict["policy_state_dict"])
        if "env_state_dict" in state_dict and hasattr(self.env, "load_state_dict"):
            self.env.load_state_dict(state_dict["env_state_dict"])

    def __repr__(self):
        return (f"{type(self).__name__}(env={type(self.env).__name__}"
                f"{list(self.env.batch_size)}, frames_per_batch={self.frames_per_batch}, "
                f"total_frames={self.total_frames}, frames={self._frames})")


def _nested_td(nested, bs):
    return TensorDict._new({k: _nested_td(v, bs) if isinstance(v, dict) else v
                            for k, v in nested.items()}, bs, None)
