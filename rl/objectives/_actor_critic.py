"""What the on-policy losses (PPO, A2C) share: the advantage (computed by the value
estimator when absent), the policy's log-probabilities, the entropy bonus and the critic
loss (optionally value-clipped)."""
from __future__ import annotations

from dataclasses import dataclass

import ember

from .common import LossModule, frozen_params
from .utils import ValueEstimators, distance_loss

__all__ = ["ActorCriticLoss"]


@dataclass(frozen=True)
class _AcceptedKeys:
    advantage: object = "advantage"
    value_target: object = "value_target"
    value: object = "state_value"
    sample_log_prob: object = "action_log_prob"
    action: object = "action"
    reward: object = "reward"
    done: object = "done"
    terminated: object = "terminated"


class ActorCriticLoss(LossModule):
    """Base of ``PPOLoss`` and ``A2CLoss``: holds ``actor_network`` (a probabilistic actor
    with ``get_dist``) and ``critic_network`` (a value operator), and the shared terms."""

    _AcceptedKeys = _AcceptedKeys
    default_value_estimator = ValueEstimators.GAE

    def __init__(self, actor_network, critic_network=None, *, entropy_bonus=True,
                 samples_mc_entropy=1, entropy_coef=0.01, critic_coef=1.0,
                 loss_critic_type="smooth_l1", gamma=None, separate_losses=False,
                 reduction="mean", clip_value=None, normalize_advantage=False):
        super().__init__()
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(f"{type(self).__name__}: actor_network must be a probabilistic "
                            f"actor (with get_dist), got {type(actor_network).__name__}")
        self.actor_network = actor_network
        self.critic_network = critic_network
        self.entropy_bonus, self.samples_mc_entropy = entropy_bonus, int(samples_mc_entropy)
        self.entropy_coef, self.critic_coef = float(entropy_coef), critic_coef
        if loss_critic_type not in ("l1", "l2", "smooth_l1"):
            raise ValueError(f"{type(self).__name__}: loss_critic_type must be 'l1', 'l2' or "
                             f"'smooth_l1', got {loss_critic_type!r}")
        self.loss_critic_type = loss_critic_type
        self.separate_losses, self.reduction = separate_losses, reduction
        self.clip_value = None if clip_value is None else float(clip_value)
        self.normalize_advantage = normalize_advantage
        self.gamma = gamma

    def _value_network_for_estimator(self):
        return self.critic_network

    # ------------------------------------------------------------------ terms
    def _advantage(self, td):
        adv = td.get(self.tensor_keys.advantage, None)
        if adv is None:
            if self.critic_network is None:
                raise KeyError(f"{type(self).__name__}: no {self.tensor_keys.advantage!r} in "
                               "the TensorDict and no critic to compute it")
            self.value_estimator(td)
            adv = td.get(self.tensor_keys.advantage)
        adv = adv.detach()
        if self.normalize_advantage and adv.numel() > 1:
            adv = (adv - adv.mean()) / adv.std().clamp(min=1e-6)
        return adv

    def _log_prob(self, td):
        """(log_prob of the stored action under the current policy [*batch], dist)."""
        action = self._require(td, self.tensor_keys.action, "the action")
        dist = self.actor_network.get_dist(td)
        return dist.log_prob(action), dist

    def _entropy(self, dist):
        try:
            return dist.entropy()
        except NotImplementedError:  # no closed form (TanhNormal): a Monte-Carlo estimate
            x = dist.rsample((self.samples_mc_entropy,))
            return -dist.log_prob(x).mean(0)

    def _entropy_terms(self, dist, out):
        if self.entropy_bonus:
            entropy = self._entropy(dist)
            out["entropy"] = entropy.mean()
            out["loss_entropy"] = -self.entropy_coef * entropy

    def _critic_terms(self, td, out):
        """``loss_critic = critic_coef * distance(value_target, V(s))``; with ``clip_value``
        the larger of the plain and the clipped (around the stored value) distances."""
        if self.critic_network is None or self.critic_coef is None:
            return
        target = self._require(td, self.tensor_keys.value_target, "the value target")
        old = td.get(self.tensor_keys.value, None)
        inp = td.select(*self.critic_network.in_keys, strict=False)
        if self.separate_losses:
            with frozen_params(self.actor_network):
                value = self.critic_network(inp).get(self.tensor_keys.value)
        else:
            value = self.critic_network(inp).get(self.tensor_keys.value)
        loss = distance_loss(target, value, self.loss_critic_type)
        if self.clip_value is not None:
            if old is None:
                raise KeyError(f"{type(self).__name__}: clip_value needs the stored value "
                               f"{self.tensor_keys.value!r} in the TensorDict")
            old = old.detach()
            clipped = old + (value - old).clamp(-self.clip_value, self.clip_value)
            loss_clipped = distance_loss(target, clipped, self.loss_critic_type)
            out["value_clip_fraction"] = (loss_clipped > loss).float().mean()
            loss = ember.maximum(loss, loss_clipped)
        out["loss_critic"] = self.critic_coef * loss
