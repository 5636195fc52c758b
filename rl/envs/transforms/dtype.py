"""``DoubleToFloat``: float64 entries become float32 on the way out (observations, reward) and
the float32 action becomes float64 on the way in, specs included."""
from __future__ import annotations

import numpy as np

from ..specs import Bounded, Unbounded
from ._base import Transform, as_np, to_tensor

__all__ = ["DoubleToFloat"]


def _retyped(spec, dtype):
    if isinstance(spec, Bounded):
        return Bounded(spec.low, spec.high, spec.shape, dtype, spec.device)
    if isinstance(spec, Unbounded):
        return Unbounded(spec.shape, dtype, spec.device)
    raise TypeError(f"DoubleToFloat: cannot change the dtype of {spec!r}")


class DoubleToFloat(Transform):
    """Without ``in_keys``, every float64 entry of the observation spec and the reward (if
    float64) is converted; without ``in_keys_inv``, the action is, if the env takes float64."""

    def __init__(self, in_keys=None, out_keys=None, in_keys_inv=None, out_keys_inv=None):
        self._auto = in_keys is None
        self._auto_inv = in_keys_inv is None
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)

    def _call(self, next_tensordict):
        if not self._auto:
            keys = next_tensordict.keys(True, True)
            for ki, ko in zip(self.in_keys, self.out_keys):
                if ki in keys:
                    next_tensordict.set(ko, self._apply_transform(next_tensordict.get(ki)))
            return next_tensordict
        for k in list(next_tensordict.keys(True, True)):
            v = next_tensordict.get(k)
            if getattr(v, "dtype", None) == np.float64:
                next_tensordict.set(k, self._apply_transform(v))
        return next_tensordict

    def _apply_transform(self, value):
        return to_tensor(as_np(value).astype(np.float32))

    def _inv_apply_transform(self, value):
        return to_tensor(as_np(value).astype(np.float64))

    def transform_observation_spec(self, observation_spec):
        if not self._auto:
            return self._map_spec(observation_spec, lambda s: _retyped(s, np.float32))
        for k, spec in observation_spec.items(True, True):
            if spec.dtype == np.float64:
                observation_spec[k] = _retyped(spec, np.float32)
        return observation_spec

    def transform_reward_spec(self, reward_spec):
        if reward_spec.dtype == np.float64 and (self._auto or "reward" in self.in_keys):
            return _retyped(reward_spec, np.float32)
        return reward_spec

    def transform_action_spec(self, action_spec):
        if self._auto_inv:
            if action_spec.dtype == np.float64:
                self.in_keys_inv, self.out_keys_inv = ["action"], ["action"]
                return _retyped(action_spec, np.float32)
            self.in_keys_inv, self.out_keys_inv = [], []
            return action_spec
        if "action" in self.out_keys_inv and action_spec.dtype == np.float64:
            return _retyped(action_spec, np.float32)
        return action_spec
