"""``Adamax``: Adam with the infinity norm (Kingma & Ba, section 7).

PyTorch's algorithm, per parameter ``p`` with gradient ``g`` at step ``t``::

    g = -g if maximize;  g += wd * p
    m = lerp(m, g, 1 - beta1)                       # exp_avg
    u = max(beta2 * u, |g| + eps)                   # exp_inf
    p -= lr / (1 - beta1**t) * m / u

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.Adamax([w], lr=0.1)
    >>> w.grad = ember.tensor([3.0]); opt.step(); [round(x, 4) for x in w.tolist()]
    [0.9]
"""
from __future__ import annotations

from .._fused import effective_grad, lerp_, run
from ._util import check_betas, check_flags, check_lr, check_nonneg, dense_only, scalar
from .optimizer import Optimizer, advance_state

__all__ = ["Adamax"]


def _adamax_kernel(xp, a, s, h):
    wd, maximize, w1, beta2, eps, k = h
    p, g, m, e = a
    t, u = s
    g = effective_grad(xp, p, g, wd, maximize, t)
    lerp_(xp, m, g, w1, u)
    xp.multiply(e, beta2, out=e)
    xp.abs(g, out=u)
    xp.add(u, eps, out=u)
    xp.maximum(e, u, out=e)
    xp.divide(m, e, out=u)
    xp.multiply(u, k, out=u)
    p += u


class Adamax(Optimizer):
    """Adamax. ``lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0``. State per parameter:
    ``step``, ``exp_avg``, ``exp_inf``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        betas = check_betas(betas)
        check_nonneg(weight_decay, "weight_decay value")
        check_flags(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One Adamax update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (scalar(b) for b in group["betas"])
            lr = scalar(group["lr"])
            jobs = []
            for p, g in self._params_with_grad(group):
                dense_only("Adamax", g)
                st, t = advance_state(self.state, p, ("exp_avg", "exp_inf"))
                clr = lr / (1.0 - beta1 ** t)
                jobs.append(((p.array, g.array, st["exp_avg"].array, st["exp_inf"].array),
                             (group["weight_decay"], group["maximize"], 1.0 - beta1, beta2,
                              group["eps"], -clr)))
                p._bump()
            run(_adamax_kernel, 2, jobs)
        return loss
