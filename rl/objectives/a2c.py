"""``A2CLoss``: advantage actor-critic (Mnih et al. 2016), torchrl's arguments and outputs::

    loss_objective = -mean(log pi(a|s) * A)
    loss_entropy   = -entropy_coef * mean(H(pi(.|s)))
    loss_critic    = critic_coef * mean(distance(value_target, V(s)))

Advantages come from the TensorDict, else from the value estimator (``GAE`` by default)
run with the critic.
"""
from __future__ import annotations

from ._actor_critic import ActorCriticLoss

__all__ = ["A2CLoss"]


class A2CLoss(ActorCriticLoss):
    """Arguments as ``PPOLoss`` (``actor_network``, ``critic_network``, ``entropy_bonus``,
    ``samples_mc_entropy``, ``entropy_coef``, ``critic_coef``, ``loss_critic_type``,
    ``gamma``, ``separate_losses``, ``reduction``, ``clip_value``)."""

    def forward(self, tensordict):
        td = tensordict.clone(False)
        adv = self._advantage(td)
        log_prob, dist = self._log_prob(td)
        if log_prob.ndim == adv.ndim - 1:
            log_prob = log_prob.unsqueeze(-1)
        out = {"loss_objective": -(log_prob * adv)}
        self._entropy_terms(dist, out)
        self._critic_terms(td, out)
        return self._reduce_out(out, self.reduction)
