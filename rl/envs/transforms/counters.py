"""Per-episode running values: ``StepCounter`` (steps so far, truncation at ``max_steps``) and
``RewardSum`` (the episode's return so far).

Both keep their running value in the data: a step reads it from the root TensorDict and writes
the updated value under ``"next"``; a reset sets it to 0 where ``"_reset"`` is true and keeps the
input's value elsewhere. So partial resets of batched envs need no hidden state.
"""
from __future__ import annotations

import numpy as np

from ..specs import Bounded, Unbounded
from ._base import Transform, as_np, reset_mask, to_tensor

__all__ = ["StepCounter", "RewardSum"]


def _running(td, key, shape, dtype):
    if td is not None and key in td.keys(True, True):
        return np.asarray(as_np(td.get(key)), dtype).reshape(shape)
    return np.zeros(shape, dtype)


def _root_value(td, key, who):
    if key not in td.keys(True, True):
        raise KeyError(f"{who}: the root tensordict has no {key!r}; reset the env through the "
                       "TransformedEnv (its reset output carries the running value)")
    return as_np(td.get(key))


class StepCounter(Transform):
    """Counts the steps of each episode under ``step_count_key`` (int64, shape batch + (1,)).

    With ``max_steps``, a step whose count reaches ``max_steps`` sets ``truncated_key`` (and
    ``"done"`` when ``update_done``), so the episode is reset there.
    """

    def __init__(self, max_steps=None, truncated_key="truncated", step_count_key="step_count",
                 update_done=True):
        if max_steps is not None and int(max_steps) < 1:
            raise ValueError(f"StepCounter: max_steps must be >= 1, got {max_steps}")
        super().__init__()
        self.max_steps = None if max_steps is None else int(max_steps)
        self.truncated_key, self.step_count_key = truncated_key, step_count_key
        self.update_done = update_done

    def transform_observation_spec(self, observation_spec):
        shape = observation_spec.shape + (1,)
        if self.max_steps is None:
            spec = Unbounded(shape, np.int64, observation_spec.device)
        else:
            spec = Bounded(0, self.max_steps, shape, np.int64, observation_spec.device)
        observation_spec[self.step_count_key] = spec
        return observation_spec

    def _reset(self, tensordict, tensordict_reset):
        shape = tuple(tensordict_reset.batch_size) + (1,)
        prev = _running(tensordict, self.step_count_key, shape, np.int64)
        count = np.where(reset_mask(tensordict, tensordict_reset.batch_size), 0, prev)
        tensordict_reset.set(self.step_count_key, to_tensor(count.astype(np.int64)))
        return tensordict_reset

    def _step(self, tensordict, next_tensordict):
        count = _root_value(tensordict, self.step_count_key, "StepCounter") + 1
        next_tensordict.set(self.step_count_key, to_tensor(count))
        if self.max_steps is not None:
            hit = count >= self.max_steps
            trunc = np.asarray(as_np(next_tensordict.get(self.truncated_key)), np.bool_) | hit
            next_tensordict.set(self.truncated_key, to_tensor(trunc))
            if self.update_done:
                done = np.asarray(as_np(next_tensordict.get("done")), np.bool_) | hit
                next_tensordict.set("done", to_tensor(done))
        return next_tensordict

    def __repr__(self):
        return f"StepCounter(max_steps={self.max_steps}, step_count_key={self.step_count_key!r})"


class RewardSum(Transform):
    """The sum of the rewards since the episode began, under ``out_keys`` (default
    ``"episode_reward"``; one per reward key in ``in_keys``, default ``"reward"``). 0 after a
    reset."""

    def __init__(self, in_keys=None, out_keys=None):
        in_keys = ["reward"] if in_keys is None else in_keys
        if out_keys is None:
            out_keys = ["episode_reward"] if in_keys in (["reward"], "reward") else \
                [f"episode_{k}" if isinstance(k, str) else k[:-1] + (f"episode_{k[-1]}",)
                 for k in ([in_keys] if isinstance(in_keys, str) else in_keys)]
        super().__init__(in_keys, out_keys)

    def transform_observation_spec(self, observation_spec):
        for ko in self.out_keys:
            observation_spec[ko] = Unbounded(observation_spec.shape + (1,), np.float32,
                                             observation_spec.device)
        return observation_spec

    def _call(self, next_tensordict):
        return next_tensordict

    def _reset(self, tensordict, tensordict_reset):
        shape = tuple(tensordict_reset.batch_size) + (1,)
        mask = reset_mask(tensordict, tensordict_reset.batch_size)
        for ko in self.out_keys:
            prev = _running(tensordict, ko, shape, np.float32)
            tensordict_reset.set(ko, to_tensor(np.where(mask, np.float32(0), prev)))
        return tensordict_reset

    def _step(self, tensordict, next_tensordict):
        for ki, ko in zip(self.in_keys, self.out_keys):
            total = _root_value(tensordict, ko, "RewardSum") + as_np(next_tensordict.get(ki))
            next_tensordict.set(ko, to_tensor(np.asarray(total, np.float32)))
        return next_tensordict
