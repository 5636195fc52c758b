"""``DQNLoss`` (Mnih et al. 2015), with double DQN (van Hasselt et al. 2016); dueling
networks are a ``value_network`` choice (``DuelingMlpDQNet``). torchrl's arguments::

    Q(s, a)   from value_network (a QValueActor) at the stored action
    target    = r + gamma * (1 - terminated) * Q_target(s', a')      (TD(0) by default)
    a'        = argmax_a Q_target(s', a)       (double_dqn: argmax_a Q(s', a))
    loss      = mean(distance(Q(s, a), target))     -> "loss"

``|Q(s, a) - target|`` is written into the input TensorDict at ``priority`` (``"td_error"``)
for a prioritized replay buffer.

    >>> import ember
    >>> from ember import nn
    >>> from ember.rl import TensorDict
    >>> from ember.rl.modules import QValueActor
    >>> from ember.rl.objectives import DQNLoss
    >>> loss = DQNLoss(QValueActor(nn.Linear(4, 2), action_space="categorical"),
    ...                double_dqn=True)
    >>> loss.make_value_estimator(gamma=0.9)     # doctest: +ELLIPSIS
    DQNLoss(...)
    >>> B = 8
    >>> td = TensorDict({"observation": ember.randn(B, 4),
    ...     "action": ember.zeros(B, dtype=ember.int64), "next": {"observation": ember.randn(B, 4), "reward": ember.ones(B, 1),
    ...              "done": ember.zeros(B, 1, dtype=ember.bool),
    ...              "terminated": ember.zeros(B, 1, dtype=ember.bool)}}, [B])
    >>> loss(td)["loss"].shape, td["td_error"].shape
    ((), (8,))
"""
from __future__ import annotations

from dataclasses import dataclass

import ember
from ember.rl.tensordict import TensorDict

from .common import LossModule
from .utils import ValueEstimators, distance_loss, reduce

__all__ = ["DQNLoss"]


@dataclass(frozen=True)
class _AcceptedKeys:
    advantage: object = "advantage"
    value_target: object = "value_target"
    value: object = "chosen_action_value"
    action_value: object = "action_value"
    action: object = "action"
    priority: object = "td_error"
    reward: object = "reward"
    done: object = "done"
    terminated: object = "terminated"


class DQNLoss(LossModule):
    """The DQN loss.

    Args:
        value_network: a ``QValueActor`` (writes ``action_value``, ``action`` and
            ``chosen_action_value``).
        loss_function: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        delay_value: keep a target copy of the network (``target_value_network``, moved by
            ``SoftUpdate``/``HardUpdate``); False bootstraps from the network itself.
        double_dqn: pick the next action with the online network, value it with the target.
        gamma: the discount of the default TD(0) estimator.
        action_space: ``"categorical"`` (action indices) or ``"one_hot"``; default: the
            value network's.
        priority_key: where to write the TD error (default ``"td_error"``).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
    """

    _AcceptedKeys = _AcceptedKeys
    default_value_estimator = ValueEstimators.TD0
    _supported_estimators = (ValueEstimators.TD0, ValueEstimators.TD1,
                             ValueEstimators.TDLambda)

    def __init__(self, value_network, *, loss_function="l2", delay_value=True,
                 double_dqn=False, gamma=None, action_space=None, priority_key=None,
                 reduction="mean"):
        super().__init__()
        if double_dqn and not delay_value:
            raise ValueError("DQNLoss: double_dqn needs delay_value=True (a target network)")
        self.value_network = value_network
        self.loss_function, self.double_dqn = loss_function, double_dqn
        self.delay_value, self.reduction, self.gamma = delay_value, reduction, gamma
        space = action_space or getattr(value_network, "action_space", None) or "one_hot"
        if space not in ("categorical", "one_hot"):
            raise ValueError(f"DQNLoss: action_space must be 'categorical' or 'one_hot', got "
                             f"{space!r}")
        self.action_space = space
        self._make_target("value_network", delay_value)
        if priority_key is not None:
            self.set_keys(priority=priority_key)

    def _estimator_keys(self):
        k = self.tensor_keys
        return {"advantage": k.advantage, "value_target": k.value_target, "value": k.value,
                "reward": k.reward, "done": k.done, "terminated": k.terminated}

    def _select(self, values, action):
        """The value of ``action`` (indices or one-hot) among ``values`` [*, n]."""
        if self.action_space == "categorical":
            idx = action if action.ndim == values.ndim else action.unsqueeze(-1)
            return values.gather(-1, idx.long())
        return (values * action.to(values.dtype)).sum(-1, keepdim=True)

    def _next_value(self, td):
        """[*batch, 1] value of the next state under the target network."""
        with ember.no_grad():
            nxt = self._require(td, "next", "the next step")
            keys = self.value_network.in_keys
            q_next = self._target("value_network")(nxt.select(*keys, strict=False))
            values = q_next.get(self.tensor_keys.action_value)
            if not self.double_dqn:
                return values.max(-1, keepdim=True)[0]
            online = self.value_network(nxt.select(*keys, strict=False))
            return self._select(values, online.get(self.tensor_keys.action))

    def forward(self, tensordict):
        k = self.tensor_keys
        inp = tensordict.select(*self.value_network.in_keys, strict=False)
        values = self.value_network(inp).get(k.action_value)
        action = self._require(tensordict, k.action, "the action")
        pred = self._select(values, action).squeeze(-1)
        target = self.value_estimator.value_estimate(
            tensordict, next_value=self._next_value(tensordict)).squeeze(-1).detach()
        with ember.no_grad():
            tensordict.set(k.priority, (pred - target).abs().detach())
        loss = reduce(distance_loss(pred, target, self.loss_function), self.reduction)
        return TensorDict({"loss": loss}, batch_size=[])
