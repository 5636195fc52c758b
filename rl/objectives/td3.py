"""``TD3Loss``: twin delayed DDPG (Fujimoto et al. 2018), torchrl's arguments and outputs::

    loss_actor  = -mean(Q_0(s, mu(s)))                                (Q parameters frozen)
    a'          = clamp(mu_target(s') + clamp(policy_noise * N(0,1), -noise_clip, noise_clip),
                        low, high)
    target      = r + gamma * (1 - terminated) * min_i Q_target_i(s', a')
    loss_qvalue = sum_i mean(distance(Q_i(s, a), target))

The Q ensemble is ``qvalue_networks`` (``num_qvalue_nets`` re-initialised copies), the
targets ``target_actor_network`` and ``target_qvalue_networks``. Delaying the actor update
(every other step in the paper) is the training loop's choice.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ember

from .common import LossModule, frozen_params
from .sac import _q, qvalue_ensemble
from .utils import ValueEstimators, distance_loss

__all__ = ["TD3Loss"]


@dataclass(frozen=True)
class _AcceptedKeys:
    action: object = "action"
    state_action_value: object = "state_action_value"
    priority: object = "td_error"
    reward: object = "reward"
    done: object = "done"
    terminated: object = "terminated"


def _bounds(action_spec, bounds, who):
    if bounds is not None:
        low, high = bounds
    elif action_spec is not None and hasattr(action_spec, "low"):
        low, high = action_spec.low, action_spec.high
    else:
        raise ValueError(f"{who}: pass action_spec (a Bounded spec) or bounds=(low, high)")
    return (ember.tensor(np.asarray(low, np.float32)), ember.tensor(np.asarray(high, np.float32)))


class TD3Loss(LossModule):
    """TD3 (see the module doc).

    Args:
        actor_network: a deterministic ``Actor`` writing ``action``.
        qvalue_network: a ``ValueOperator`` on (observation, action).
        action_spec / bounds: the action bounds for the target policy smoothing.
        num_qvalue_nets: Q ensemble size (2).
        policy_noise, noise_clip: the target policy smoothing noise.
        loss_function: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        delay_actor, delay_qvalue: keep target copies (default True).
        gamma, priority_key, reduction: as the other losses.
    """

    _AcceptedKeys = _AcceptedKeys
    default_value_estimator = ValueEstimators.TD0
    _supported_estimators = (ValueEstimators.TD0, ValueEstimators.TD1,
                             ValueEstimators.TDLambda)

    def __init__(self, actor_network, qvalue_network, *, action_spec=None, bounds=None,
                 num_qvalue_nets=2, policy_noise=0.2, noise_clip=0.5, loss_function="smooth_l1",
                 delay_actor=True, delay_qvalue=True, gamma=None, priority_key=None,
                 separate_losses=False, reduction="mean"):
        super().__init__()
        self.actor_network = actor_network
        self.qvalue_networks = qvalue_ensemble(qvalue_network, int(num_qvalue_nets))
        self.num_qvalue_nets = int(num_qvalue_nets)
        self._make_target("actor_network", delay_actor)
        self._make_target("qvalue_networks", delay_qvalue)
        low, high = _bounds(action_spec if action_spec is not None else
                            getattr(actor_network, "spec", None), bounds, "TD3Loss")
        self.register_buffer("min_action", low)
        self.register_buffer("max_action", high)
        self.policy_noise, self.noise_clip = float(policy_noise), float(noise_clip)
        self.loss_function, self.reduction, self.gamma = loss_function, reduction, gamma
        if priority_key is not None:
            self.set_keys(priority=priority_key)

    def _estimator_keys(self):
        k = self.tensor_keys
        return {"value": k.state_action_value, "reward": k.reward, "done": k.done,
                "terminated": k.terminated}

    def _actor_loss(self, td):
        k = self.tensor_keys
        tda = self.actor_network(td.select(*self.actor_network.in_keys, strict=False))
        tdq = td.select(*self.qvalue_networks[0].in_keys, strict=False)
        tdq.set(k.action, tda.get(k.action))
        with frozen_params(self.qvalue_networks):
            q = _q(self.qvalue_networks, tdq, k.state_action_value)
        return -q[0], q.detach().mean()

    def _qvalue_loss(self, td):
        k = self.tensor_keys
        action = self._require(td, k.action, "the action")
        noise = (ember.randn(*action.shape, dtype=action.dtype) * self.policy_noise).clamp(
            -self.noise_clip, self.noise_clip)
        with ember.no_grad():
            nxt = self._require(td, "next", "the next step")
            actor = self._target("actor_network")
            nxt_a = actor(nxt.select(*self.actor_network.in_keys, strict=False))
            a_next = ember.minimum(ember.maximum(nxt_a.get(k.action) + noise, self.min_action),
                                   self.max_action)
            tdq = nxt.select(*self.qvalue_networks[0].in_keys, strict=False)
            tdq.set(k.action, a_next)
            q_next = _q(self._target("qvalue_networks"), tdq, k.state_action_value)
            next_value = q_next.min(0)[0].unsqueeze(-1)
            target = self.value_estimator.value_estimate(td, next_value=next_value).squeeze(-1)
        q = _q(self.qvalue_networks, td, k.state_action_value)
        per_net = distance_loss(q, target.expand(*q.shape), self.loss_function)
        td_error = (q.detach() - target).abs().max(0)[0]
        return per_net.mean(-1).sum(0) if self.reduction == "mean" else per_net.sum(0), \
            td_error, target, q, next_value

    def forward(self, tensordict):
        loss_actor, q_actor = self._actor_loss(tensordict)
        loss_q, td_error, target, q, next_value = self._qvalue_loss(tensordict)
        tensordict.set(self.tensor_keys.priority, td_error)
        out = {"loss_actor": loss_actor, "loss_qvalue": loss_q,
               "state_action_value_actor": q_actor, "pred_value": q.detach().mean(),
               "target_value": target.mean(), "next_state_value": next_value.mean()}
        return self._reduce_out(out, self.reduction)
