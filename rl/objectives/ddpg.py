"""``DDPGLoss``: deep deterministic policy gradient (Lillicrap et al. 2015), torchrl's
arguments and outputs::

    loss_actor = -mean(Q(s, mu(s)))                              (Q parameters frozen)
    target     = r + gamma * (1 - terminated) * Q_target(s', mu_target(s'))
    loss_value = mean(distance(Q(s, a), target))

``delay_value`` (default True) keeps ``target_value_network``; ``delay_actor`` (default
False) a ``target_actor_network``.
"""
from __future__ import annotations

from dataclasses import dataclass

import ember

from .common import LossModule, frozen_params
from .utils import ValueEstimators, distance_loss

__all__ = ["DDPGLoss"]


@dataclass(frozen=True)
class _AcceptedKeys:
    state_action_value: object = "state_action_value"
    priority: object = "td_error"
    reward: object = "reward"
    done: object = "done"
    terminated: object = "terminated"
    action: object = "action"


class DDPGLoss(LossModule):
    """DDPG (see the module doc).

    Args:
        actor_network: a deterministic ``Actor``.
        value_network: a ``ValueOperator`` on (observation, action).
        loss_function: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        delay_actor, delay_value: keep target copies.
        gamma, reduction: as the other losses.
    """

    _AcceptedKeys = _AcceptedKeys
    default_value_estimator = ValueEstimators.TD0
    _supported_estimators = (ValueEstimators.TD0, ValueEstimators.TD1,
                             ValueEstimators.TDLambda)

    def __init__(self, actor_network, value_network, *, loss_function="l2", delay_actor=False,
                 delay_value=True, gamma=None, separate_losses=False, reduction="mean"):
        super().__init__()
        self.actor_network, self.value_network = actor_network, value_network
        self._make_target("actor_network", delay_actor)
        self._make_target("value_network", delay_value)
        self.loss_function, self.reduction, self.gamma = loss_function, reduction, gamma

    def _estimator_keys(self):
        k = self.tensor_keys
        return {"value": k.state_action_value, "reward": k.reward, "done": k.done,
                "terminated": k.terminated}

    def _q(self, net, td, action):
        tdq = td.select(*self.value_network.in_keys, strict=False)
        tdq.set(self.tensor_keys.action, action)
        return net(tdq).get(self.tensor_keys.state_action_value)

    def _act(self, actor, td):
        return actor(td.select(*self.actor_network.in_keys, strict=False)).get(
            self.tensor_keys.action)

    def forward(self, tensordict):
        k = self.tensor_keys
        with frozen_params(self.value_network):
            q_actor = self._q(self.value_network, tensordict,
                              self._act(self.actor_network, tensordict))
        action = self._require(tensordict, k.action, "the action")
        pred = self._q(self.value_network, tensordict, action).squeeze(-1)
        with ember.no_grad():
            nxt = self._require(tensordict, "next", "the next step")
            a_next = self._act(self._target("actor_network"), nxt)
            next_value = self._q(self._target("value_network"), nxt, a_next)
            target = self.value_estimator.value_estimate(tensordict,
                                                         next_value=next_value).squeeze(-1)
        loss_value = distance_loss(pred, target, self.loss_function)
        tensordict.set(k.priority, (pred.detach() - target).abs())
        out = {"loss_actor": -q_actor.squeeze(-1), "loss_value": loss_value,
               "pred_value": pred.detach().mean(), "target_value": target.mean(),
               "pred_value_max": pred.detach().max(), "target_value_max": target.max()}
        return self._reduce_out(out, self.reduction)
