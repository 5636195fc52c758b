"""Keyed value estimators: modules that read a trajectory TensorDict, compute values with a
value network (or read them), and write ``"advantage"`` and ``"value_target"`` using the
functions of ``functional``. Names, arguments and keys as torchrl's: ``TD0Estimator``,
``TD1Estimator``, ``TDLambdaEstimator``, ``GAE``; keys are changed with ``set_keys``.

Layout: the TensorDict's last batch dim is time (``[T]`` or ``[*B, T]``); ``reward``,
``done`` and ``terminated`` are read under ``"next"`` with a trailing dim of 1, values at
``value`` (root: the state's, ``("next", value)``: the next state's).

ember passes networks, not parameter TensorDicts: ``params=`` / ``target_params=`` are
modules with the value network's interface (the loss's target copy, say) used instead of
``value_network`` for the current / next values.

    >>> import ember
    >>> from ember import nn
    >>> from ember.rl import TensorDict
    >>> from ember.rl.modules import ValueOperator
    >>> from ember.rl.objectives.value import GAE
    >>> critic = ValueOperator(nn.Linear(3, 1))
    >>> T = 6
    >>> td = TensorDict({"observation": ember.randn(T, 3),
    ...                  "next": {"observation": ember.randn(T, 3), "reward": ember.ones(T, 1),
    ...                           "done": ember.zeros(T, 1, dtype=ember.bool),
    ...                           "terminated": ember.zeros(T, 1, dtype=ember.bool)}}, [T])
    >>> td = GAE(gamma=0.99, lmbda=0.95, value_network=critic)(td)
    >>> td["advantage"].shape, td["value_target"].shape
    ((6, 1), (6, 1))
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

import ember
from ember import nn
from ember.rl.tensordict.nn.common import norm_key

from . import functional as Fv

__all__ = ["ValueEstimatorBase", "TD0Estimator", "TD1Estimator", "TDLambdaEstimator", "GAE"]


@dataclass(frozen=True)
class _AcceptedKeys:
    """The keys an estimator reads and writes (change them with ``set_keys``)."""

    advantage: object = "advantage"
    value_target: object = "value_target"
    value: object = "state_value"
    reward: object = "reward"
    done: object = "done"
    terminated: object = "terminated"
    steps_to_next_obs: object = "steps_to_next_obs"
    sample_log_prob: object = "action_log_prob"


class ValueEstimatorBase(nn.Module):
    """Shared machinery: keys, computing current and next values, ``no_grad`` unless
    ``differentiable``, ``skip_existing`` (keep values already in the TensorDict).

    Args:
        value_network: a TensorDict module writing ``value``; ``None`` reads the values
            from the TensorDict (a loss that computed them itself).
        differentiable: let gradients flow into the value network (default False: targets).
        skip_existing: do not recompute values already present.
        advantage_key, value_target_key, value_key: shortcuts for ``set_keys``.
    """

    def __init__(self, *, value_network=None, differentiable=False, skip_existing=None,
                 shifted=False, advantage_key=None, value_target_key=None, value_key=None,
                 device=None):
        super().__init__()
        self.value_network = value_network
        self.differentiable = differentiable
        self.skip_existing = bool(skip_existing)
        self.shifted = shifted
        self._tensor_keys = _AcceptedKeys()
        keys = {k: v for k, v in (("advantage", advantage_key),
                                  ("value_target", value_target_key),
                                  ("value", value_key)) if v is not None}
        if keys:
            self.set_keys(**keys)

    # ------------------------------------------------------------------ keys
    @property
    def tensor_keys(self):
        return self._tensor_keys

    def set_keys(self, **kwargs):
        """Change the keys read/written, e.g. ``set_keys(value="state_action_value")``."""
        valid = {f.name for f in fields(_AcceptedKeys)}
        for k, v in kwargs.items():
            if k not in valid:
                raise KeyError(f"{type(self).__name__}.set_keys: {k!r} is not a key of this "
                               f"estimator; expected one of {sorted(valid)}")
            if v is None:
                raise ValueError(f"{type(self).__name__}.set_keys: {k} cannot be None")
        self._tensor_keys = replace(self._tensor_keys,
                                    **{k: norm_key(v) for k, v in kwargs.items()})
        return self

    @property
    def advantage_key(self):
        return self._tensor_keys.advantage

    @property
    def value_target_key(self):
        return self._tensor_keys.value_target

    @property
    def value_key(self):
        return self._tensor_keys.value

    @property
    def in_keys(self):
        k = self._tensor_keys
        nxt = [("next", k.reward), ("next", k.done), ("next", k.terminated)]
        if self.value_network is None:
            return nxt + [k.value, ("next", k.value)]
        net = list(self.value_network.in_keys)
        return nxt + net + [("next",) + (x if isinstance(x, tuple) else (x,)) for x in net]

    @property
    def out_keys(self):
        return [self._tensor_keys.advantage, self._tensor_keys.value_target]

    # ------------------------------------------------------------------ inputs
    def _get(self, td, key, what):
        v = td.get(key, None)
        if v is None:
            raise KeyError(f"{type(self).__name__}: {what} {key!r} is missing from the "
                           f"TensorDict (its keys: {list(td.keys(True))})")
        return v

    def _time_dim(self, td):
        if td.batch_dims < 1:
            raise RuntimeError(f"{type(self).__name__}: the TensorDict needs a time dim (its "
                               f"last batch dim); got batch_size {list(td.batch_size)}")
        return td.batch_dims - 1

    def _reward_done(self, td):
        k = self._tensor_keys
        reward = self._get(td, ("next", k.reward), "the reward")
        done = self._get(td, ("next", k.done), "the done flag")
        terminated = td.get(("next", k.terminated), None)
        return reward, done, done if terminated is None else terminated

    def _run(self, net, td, who):
        out = net(td)
        v = (out if out is not None else td).get(self._tensor_keys.value, None)
        if v is None:
            raise KeyError(f"{type(self).__name__}: the {who} network did not write the value "
                           f"key {self._tensor_keys.value!r}")
        return v

    def _value(self, td, params=None):
        key = self._tensor_keys.value
        if self.value_network is None or (self.skip_existing and key in td.keys(True)):
            return self._get(td, key, "the value")
        return self._run(params if params is not None else self.value_network, td, "value")

    def _next_value(self, td, target_params=None):
        key = ("next",) + (self._tensor_keys.value if isinstance(self._tensor_keys.value, tuple)
                           else (self._tensor_keys.value,))
        if self.value_network is None or (self.skip_existing and key in td.keys(True)):
            return self._get(td, key, "the next value")
        nxt = self._get(td, "next", "the next step")
        net = target_params if target_params is not None else self.value_network
        return self._run(net, nxt, "value")

    def _grad_ctx(self):
        return ember.enable_grad() if self.differentiable else ember.no_grad()

    # ------------------------------------------------------------------ api
    def forward(self, tensordict, *, params=None, target_params=None):
        """Write the advantage and the value target into ``tensordict`` (returned)."""
        time_dim = self._time_dim(tensordict)
        with self._grad_ctx():
            value = self._value(tensordict, params)
            next_value = self._next_value(tensordict, target_params)
            reward, done, terminated = self._reward_done(tensordict)
            adv, target = self._estimate(value, next_value, reward, done, terminated, time_dim)
        tensordict.set(self._tensor_keys.advantage, adv)
        tensordict.set(self._tensor_keys.value_target, target)
        return tensordict

    def value_estimate(self, tensordict, target_params=None, next_value=None, **kwargs):
        """The value target alone (no state value needed). ``next_value`` overrides the next
        state's value (double DQN picks it with another network)."""
        time_dim = self._time_dim(tensordict)
        with self._grad_ctx():
            if next_value is None:
                next_value = self._next_value(tensordict, target_params)
            reward, done, terminated = self._reward_done(tensordict)
            return self._target(next_value, reward, done, terminated, time_dim)

    def _estimate(self, value, next_value, reward, done, terminated, time_dim):
        target = self._target(next_value, reward, done, terminated, time_dim)
        return target - value, target

    def _target(self, next_value, reward, done, terminated, time_dim):
        raise NotImplementedError(f"{type(self).__name__} must define _target(...)")


def _average(x):
    """``x`` standardised (mean 0, std 1; the std floored at 1e-4)."""
    return (x - x.mean()) / x.std().clamp(min=1e-4)


class TD0Estimator(ValueEstimatorBase):
    """One-step TD: ``target = r + gamma * (1 - terminated) * V(s')``,
    ``advantage = target - V(s)``."""

    def __init__(self, *, gamma, value_network=None, average_rewards=False, **kwargs):
        super().__init__(value_network=value_network, **kwargs)
        self.gamma, self.average_rewards = gamma, average_rewards

    def _target(self, next_value, reward, done, terminated, time_dim):
        if self.average_rewards:
            reward = _average(reward)
        return Fv.td0_return_estimate(self.gamma, next_value, reward, terminated)


class TD1Estimator(ValueEstimatorBase):
    """Monte-Carlo returns bootstrapped at truncations and at the end of the batch
    (``vec_td1_return_estimate``)."""

    def __init__(self, *, gamma, value_network=None, average_rewards=False, vectorized=True,
                 **kwargs):
        super().__init__(value_network=value_network, **kwargs)
        self.gamma, self.average_rewards, self.vectorized = gamma, average_rewards, vectorized

    def _target(self, next_value, reward, done, terminated, time_dim):
        if self.average_rewards:
            reward = _average(reward)
        fn = Fv.vec_td1_return_estimate if self.vectorized else Fv.td1_return_estimate
        return fn(self.gamma, next_value, reward, done, terminated, time_dim=time_dim)


class TDLambdaEstimator(ValueEstimatorBase):
    """TD(lambda) returns (``vec_td_lambda_return_estimate``)."""

    def __init__(self, *, gamma, lmbda, value_network=None, average_rewards=False,
                 vectorized=True, **kwargs):
        super().__init__(value_network=value_network, **kwargs)
        self.gamma, self.lmbda = gamma, lmbda
        self.average_rewards, self.vectorized = average_rewards, vectorized

    def _target(self, next_value, reward, done, terminated, time_dim):
        if self.average_rewards:
            reward = _average(reward)
        fn = Fv.vec_td_lambda_return_estimate if self.vectorized else \
            Fv.td_lambda_return_estimate
        return fn(self.gamma, self.lmbda, next_value, reward, done, terminated,
                  time_dim=time_dim)


class GAE(ValueEstimatorBase):
    """Generalized advantage estimation: ``advantage`` by GAE(gamma, lambda) and
    ``value_target = advantage + V(s)``. ``average_gae`` standardises the advantage."""

    def __init__(self, *, gamma, lmbda, value_network=None, average_gae=False,
                 vectorized=True, **kwargs):
        super().__init__(value_network=value_network, **kwargs)
        self.gamma, self.lmbda = gamma, lmbda
        self.average_gae, self.vectorized = average_gae, vectorized

    def _estimate(self, value, next_value, reward, done, terminated, time_dim):
        fn = Fv.vec_generalized_advantage_estimate if self.vectorized else \
            Fv.generalized_advantage_estimate
        adv, target = fn(self.gamma, self.lmbda, value, next_value, reward, done, terminated,
                         time_dim=time_dim)
        if self.average_gae:
            adv = _average(adv)
        return adv, target

    def value_estimate(self, tensordict, target_params=None, next_value=None, **kwargs):
        """GAE's value target needs the state values too: runs ``forward`` on a shallow
        copy and returns its value target."""
        td = tensordict.clone(False)
        return self.forward(td, target_params=target_params).get(self._tensor_keys.value_target)
