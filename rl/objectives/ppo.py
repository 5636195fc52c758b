"""PPO losses (Schulman et al. 2017) with torchrl's names, arguments and outputs:
``PPOLoss`` (the unclipped surrogate), ``ClipPPOLoss`` and ``KLPENPPOLoss``.

With ``w = exp(log pi(a|s) - log pi_old(a|s))`` (the old log-probability is the
``"action_log_prob"`` the collector stored) and advantages ``A`` (computed by ``GAE`` with
the critic when the TensorDict has none):

* ``PPOLoss``:       ``loss_objective = -mean(w * A)``
* ``ClipPPOLoss``:   ``loss_objective = -mean(min(w * A, clip(w, 1 - eps, 1 + eps) * A))``
* ``KLPENPPOLoss``:  ``loss_objective = -mean(w * A - beta * KL(pi_old || pi))``, ``beta``
  adapted after each call towards the target ``dtarg``.

Plus ``loss_entropy = -entropy_coef * mean(H(pi))`` and
``loss_critic = critic_coef * mean(distance(value_target, V(s)))``; diagnostics
``entropy``, ``kl_approx``, ``clip_fraction``, ``ESS`` (effective sample size / batch).

    >>> import ember
    >>> from ember import nn
    >>> from ember.distributions import Categorical
    >>> from ember.rl import TensorDict
    >>> from ember.rl.modules import ProbabilisticActor, TensorDictModule, ValueOperator
    >>> from ember.rl.objectives import ClipPPOLoss
    >>> actor = ProbabilisticActor(TensorDictModule(nn.Linear(4, 2), ["observation"],
    ...                            ["logits"]), ["logits"], distribution_class=Categorical,
    ...                            return_log_prob=True)
    >>> loss = ClipPPOLoss(actor, ValueOperator(nn.Linear(4, 1)))
    >>> T = 5
    >>> td = actor(TensorDict({"observation": ember.randn(T, 4), "next": {
    ...     "observation": ember.randn(T, 4), "reward": ember.ones(T, 1),
    ...     "done": ember.zeros(T, 1, dtype=ember.bool)}}, [T]))
    >>> out = loss(td)
    >>> sorted(k for k in out.keys() if k.startswith("loss_"))
    ['loss_critic', 'loss_entropy', 'loss_objective']
"""
from __future__ import annotations

import math

import ember
from ember.distributions import kl_divergence

from ._actor_critic import ActorCriticLoss

__all__ = ["PPOLoss", "ClipPPOLoss", "KLPENPPOLoss"]


class PPOLoss(ActorCriticLoss):
    """The unclipped PPO surrogate (see the module doc).

    Args:
        actor_network: a ``ProbabilisticActor``.
        critic_network: a ``ValueOperator`` (needed for the critic loss and for advantages
            not already in the TensorDict).
        entropy_bonus, samples_mc_entropy, entropy_coef: the entropy term (a Monte-Carlo
            estimate with ``samples_mc_entropy`` samples where there is no closed form).
        critic_coef, loss_critic_type (``"l1"``, ``"l2"``, ``"smooth_l1"``), clip_value: the
            critic term.
        normalize_advantage: standardise the advantages of the batch.
        gamma: the default estimator's discount (else ``make_value_estimator``).
        separate_losses: the critic term does not train parameters shared with the actor.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
    """

    def _log_weight(self, td):
        log_prob, dist = self._log_prob(td)
        prev = self._require(td, self.tensor_keys.sample_log_prob,
                             "the log-probability stored at collection").detach()
        if tuple(prev.shape) != tuple(log_prob.shape):
            raise RuntimeError(f"{type(self).__name__}: the stored log-probability has shape "
                               f"{list(prev.shape)} but the policy's has "
                               f"{list(log_prob.shape)}")
        log_weight = (log_prob - prev).unsqueeze(-1)
        kl_approx = (prev - log_prob).unsqueeze(-1)
        return log_weight, dist, kl_approx

    @staticmethod
    def _ess(log_weight):
        lw = log_weight.detach().reshape(-1)
        ess = (2 * lw.logsumexp(0) - (2 * lw).logsumexp(0)).exp()
        return ess / lw.shape[0]

    def _gain(self, log_weight, adv, out):
        return log_weight.exp() * adv

    def forward(self, tensordict):
        td = tensordict.clone(False)
        adv = self._advantage(td)
        log_weight, dist, kl_approx = self._log_weight(td)
        out = {}
        gain = self._gain(log_weight, adv, out)
        out["loss_objective"] = -gain
        out["kl_approx"] = kl_approx.mean()
        out["ESS"] = self._ess(log_weight)
        self._extra_terms(tensordict, td, dist, out)
        self._entropy_terms(dist, out)
        self._critic_terms(td, out)
        return self._reduce_out(out, self.reduction)

    def _extra_terms(self, original, td, dist, out):
        pass


class ClipPPOLoss(PPOLoss):
    """PPO with the clipped surrogate; ``clip_epsilon`` (default 0.2) bounds the ratio to
    ``[1 - eps, 1 + eps]``. Other arguments as ``PPOLoss``."""

    def __init__(self, actor_network, critic_network=None, *, clip_epsilon=0.2, **kwargs):
        super().__init__(actor_network, critic_network, **kwargs)
        if not 0.0 < clip_epsilon < 1.0:
            raise ValueError(f"ClipPPOLoss: clip_epsilon must be in (0, 1), got {clip_epsilon}")
        self.clip_epsilon = float(clip_epsilon)

    def _gain(self, log_weight, adv, out):
        lo, hi = math.log1p(-self.clip_epsilon), math.log1p(self.clip_epsilon)
        clipped = log_weight.clamp(lo, hi)
        out["clip_fraction"] = (clipped != log_weight).float().mean()
        gain1 = log_weight.exp() * adv
        gain2 = clipped.exp() * adv
        return ember.minimum(gain1, gain2)


class KLPENPPOLoss(PPOLoss):
    """PPO with a KL penalty: ``beta * KL(pi_old || pi)`` is subtracted from the surrogate;
    after each call ``beta`` is multiplied by ``increment`` when the mean KL exceeds
    ``1.5 * dtarg`` and by ``decrement`` when it is below ``dtarg / 1.5``. The old policy
    is rebuilt from the distribution parameters stored in the TensorDict (``loc``/``scale``,
    ``logits``, ...); pairs without a closed-form KL use ``samples_mc_kl`` samples."""

    def __init__(self, actor_network, critic_network=None, *, dtarg=0.01, beta=1.0,
                 increment=2.0, decrement=0.5, samples_mc_kl=1, **kwargs):
        super().__init__(actor_network, critic_network, **kwargs)
        self.dtarg, self.increment, self.decrement = float(dtarg), float(increment), \
            float(decrement)
        self.samples_mc_kl = int(samples_mc_kl)
        self.register_buffer("beta", ember.tensor(float(beta)))

    def _extra_terms(self, original, td, dist, out):
        prob_module = self.actor_network._steps()[-1]
        with ember.no_grad():
            previous = prob_module.get_dist(original)
        try:
            kl = kl_divergence(previous, dist)
        except NotImplementedError:
            x = previous.sample((self.samples_mc_kl,))
            kl = (previous.log_prob(x) - dist.log_prob(x)).mean(0)
        kl = kl.unsqueeze(-1)
        beta = float(self.beta.item())
        out["loss_objective"] = out["loss_objective"] + beta * kl
        mean_kl = float(kl.detach().mean().item())
        if mean_kl > self.dtarg * 1.5:
            self.beta.fill_(beta * self.increment)
        elif mean_kl < self.dtarg / 1.5:
            self.beta.fill_(beta * self.decrement)
        out["kl"] = kl.mean()
