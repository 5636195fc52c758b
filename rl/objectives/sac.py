"""``SACLoss``: soft actor-critic (Haarnoja et al. 2018, the version without a state-value
network) with automatic entropy tuning, torchrl's arguments and outputs::

    a~, logp   = rsample from pi(.|s)
    loss_actor = mean(alpha * logp - min_i Q_i(s, a~))              (Q parameters frozen)
    a', logp'  = sample from pi(.|s')
    V(s')      = min_i Q_target_i(s', a') - alpha * logp'
    target     = r + gamma * (1 - terminated) * V(s')               (TD(0) by default)
    loss_qvalue = mean over the batch of sum_i distance(Q_i(s, a), target)
    loss_alpha = mean(-log_alpha * (logp + target_entropy))         (logp detached)

``alpha = exp(log_alpha)`` (clamped to ``[min_alpha, max_alpha]``) is a learnable parameter
unless ``fixed_alpha``; ``target_entropy="auto"`` is ``-prod(action shape)``. The
``num_qvalue_nets`` Q-networks are independent re-initialised copies of ``qvalue_network``
(``qvalue_networks``), their frozen copies ``target_qvalue_networks``.

    >>> import ember
    >>> from ember import nn
    >>> from ember.rl import TensorDict
    >>> from ember.rl.modules import (MLP, NormalParamExtractor, ProbabilisticActor, TanhNormal,
    ...                               TensorDictModule, ValueOperator)
    >>> from ember.rl.objectives import SACLoss
    >>> actor = ProbabilisticActor(TensorDictModule(nn.Sequential(nn.Linear(3, 2),
    ...     NormalParamExtractor()), ["observation"], ["loc", "scale"]), ["loc", "scale"],
    ...     distribution_class=TanhNormal)
    >>> qnet = ValueOperator(MLP(in_features=4, out_features=1, num_cells=[8]),
    ...                      in_keys=["observation", "action"])
    >>> loss = SACLoss(actor, qnet)
    >>> B = 4
    >>> td = TensorDict({"observation": ember.randn(B, 3), "action": ember.rand(B, 1) * 2 - 1,
    ...     "next": {"observation": ember.randn(B, 3), "reward": ember.ones(B, 1),
    ...              "done": ember.zeros(B, 1, dtype=ember.bool)}}, [B])
    >>> sorted(k for k in loss(td).keys() if k.startswith("loss_"))
    ['loss_actor', 'loss_alpha', 'loss_qvalue']
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

import ember
from ember import nn
from ember.nn.parameter import Parameter
from ember.rl.tensordict.nn import InteractionType, set_interaction_type

from .common import LossModule, frozen_params
from .utils import ValueEstimators, distance_loss

__all__ = ["SACLoss", "qvalue_ensemble"]


@dataclass(frozen=True)
class _AcceptedKeys:
    action: object = "action"
    value: object = "state_value"
    state_action_value: object = "state_action_value"
    log_prob: object = "action_log_prob"
    priority: object = "td_error"
    reward: object = "reward"
    done: object = "done"
    terminated: object = "terminated"


def _reset(module):
    """Re-initialise every layer of ``module`` that has ``reset_parameters``."""
    for m in module.modules():
        if hasattr(m, "reset_parameters") and m._parameters:
            m.reset_parameters()


def qvalue_ensemble(qvalue_network, n):
    """``n`` Q-networks: ``qvalue_network`` and ``n - 1`` re-initialised deep copies (an
    ``nn.ModuleList``)."""
    nets = [qvalue_network]
    for _ in range(n - 1):
        c = copy.deepcopy(qvalue_network)
        _reset(c)
        nets.append(c)
    return nn.ModuleList(nets)


def _q(nets, td, key):
    """[n_nets, *batch] state-action values of each network on ``td``."""
    keys = nets[0].in_keys
    return ember.stack([net(td.select(*keys, strict=False)).get(key).squeeze(-1)
                        for net in nets], 0)


class SACLoss(LossModule):
    """SAC (see the module doc).

    Args:
        actor_network: a ``ProbabilisticActor`` (usually ``TanhNormal``) writing ``action``.
        qvalue_network: a ``ValueOperator`` on (observation, action) writing
            ``state_action_value``.
        num_qvalue_nets: size of the Q ensemble (default 2, the min is taken).
        loss_function: distance of the Q loss (``"smooth_l1"`` default, ``"l2"``, ``"l1"``).
        alpha_init, min_alpha, max_alpha, fixed_alpha: the entropy temperature.
        action_spec: its shape gives ``target_entropy="auto"``; without it the first
            batch's action shape is used.
        target_entropy: a number or ``"auto"``.
        delay_qvalue: use target Q networks (default True).
        gamma: the discount of the default TD(0) estimator.
        priority_key: where the TD error is written (``"td_error"``).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
    """

    _AcceptedKeys = _AcceptedKeys
    default_value_estimator = ValueEstimators.TD0
    _supported_estimators = (ValueEstimators.TD0, ValueEstimators.TD1,
                             ValueEstimators.TDLambda)

    def __init__(self, actor_network, qvalue_network, value_network=None, *,
                 num_qvalue_nets=2, loss_function="smooth_l1", alpha_init=1.0, min_alpha=None,
                 max_alpha=None, action_spec=None, fixed_alpha=False, target_entropy="auto",
                 delay_actor=False, delay_qvalue=True, delay_value=True, gamma=None,
                 priority_key=None, separate_losses=False, reduction="mean"):
        super().__init__()
        if value_network is not None:
            raise ValueError("SACLoss: the state-value network variant (SAC v1) is not "
                             "supported; pass value_network=None")
        if delay_actor:
            raise ValueError("SACLoss: delay_actor=True is not supported (the actor has no "
                             "target copy in SAC v2)")
        self.actor_network = actor_network
        self.qvalue_networks = qvalue_ensemble(qvalue_network, int(num_qvalue_nets))
        self.num_qvalue_nets = int(num_qvalue_nets)
        self.loss_function, self.reduction, self.gamma = loss_function, reduction, gamma
        self.delay_qvalue = delay_qvalue
        self._make_target("qvalue_networks", delay_qvalue)
        self.min_log_alpha = -math.inf if min_alpha is None else math.log(min_alpha)
        self.max_log_alpha = math.inf if max_alpha is None else math.log(max_alpha)
        self.fixed_alpha = fixed_alpha
        log_alpha = ember.tensor(float(np.log(alpha_init)))
        if fixed_alpha:
            self.register_buffer("log_alpha", log_alpha)
        else:
            self.log_alpha = Parameter(log_alpha)
        self._target_entropy = target_entropy
        self.action_spec = action_spec
        if priority_key is not None:
            self.set_keys(priority=priority_key)

    def _estimator_keys(self):
        k = self.tensor_keys
        return {"value": k.value, "reward": k.reward, "done": k.done,
                "terminated": k.terminated}

    # ------------------------------------------------------------------ alpha
    @property
    def _alpha(self):
        with ember.no_grad():
            return self.log_alpha.clamp(self.min_log_alpha, self.max_log_alpha).exp()

    def target_entropy_for(self, action):
        """The target entropy (``"auto"``: minus the number of action dims)."""
        if self._target_entropy != "auto":
            return float(self._target_entropy)
        spec = self.action_spec if self.action_spec is not None else \
            getattr(self.actor_network, "spec", None)
        if spec is not None:
            shape = tuple(spec.shape)
            return -float(np.prod(shape[-1:] if shape else ()))
        return -float(action.shape[-1]) if action.ndim else -1.0

    # ------------------------------------------------------------------ terms
    def _sample(self, td):
        """(action, log_prob) drawn with the reparameterisation trick."""
        with set_interaction_type(InteractionType.RANDOM):
            dist = self.actor_network.get_dist(td.select(*self.actor_network.in_keys,
                                                         strict=False))
            a = dist.rsample()
        return a, dist.log_prob(a)

    def _actor_loss(self, td):
        a, log_prob = self._sample(td)
        tdq = td.select(*self.qvalue_networks[0].in_keys, strict=False)
        tdq.set(self.tensor_keys.action, a)
        with frozen_params(self.qvalue_networks):
            q = _q(self.qvalue_networks, tdq, self.tensor_keys.state_action_value)
        return self._alpha * log_prob - q.min(0)[0], log_prob

    def _qvalue_loss(self, td):
        k = self.tensor_keys
        with ember.no_grad():
            nxt = self._require(td, "next", "the next step").clone(False)
            a_next, logp_next = self._sample(nxt)
            nxt.set(k.action, a_next)
            q_next = _q(self._target("qvalue_networks"), nxt, k.state_action_value)
            next_value = (q_next.min(0)[0] - self._alpha * logp_next).unsqueeze(-1)
            target = self.value_estimator.value_estimate(td, next_value=next_value).squeeze(-1)
        q = _q(self.qvalue_networks, td, k.state_action_value)
        loss = distance_loss(q, target.expand(*q.shape), self.loss_function).sum(0)
        td_error = (q.detach() - target).abs().max(0)[0]
        return loss, td_error, target, q

    def forward(self, tensordict):
        self._require(tensordict, self.tensor_keys.action, "the action")
        loss_actor, log_prob = self._actor_loss(tensordict)
        loss_q, td_error, target, q = self._qvalue_loss(tensordict)
        tensordict.set(self.tensor_keys.priority, td_error)
        te = self.target_entropy_for(tensordict.get(self.tensor_keys.action))
        log_alpha = self.log_alpha.clamp(self.min_log_alpha, self.max_log_alpha)
        loss_alpha = -log_alpha * (log_prob.detach() + te)
        out = {"loss_actor": loss_actor, "loss_qvalue": loss_q, "loss_alpha": loss_alpha,
               "alpha": self._alpha, "entropy": -log_prob.detach().mean(),
               "target_value": target.mean(), "pred_value": q.detach().mean()}
        return self._reduce_out(out, self.reduction)
