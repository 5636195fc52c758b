"""``RAdam``: Adam with a rectified adaptive learning rate (Liu et al.).

PyTorch's algorithm, per parameter ``p`` with gradient ``g`` at step ``t``::

    g = -g if maximize;  g += wd * p (L2)   or   p *= 1 - lr * wd (decoupled: RAdamW)
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
    if rho_t > 5:
        r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        p -= lr * m / (1 - beta1**t) * r * sqrt(1 - beta2**t) / (sqrt(v) + eps)
    else:
        p -= lr * m / (1 - beta1**t)

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.RAdam([w], lr=0.1)
    >>> w.grad = ember.tensor([2.0]); opt.step(); [round(x, 4) for x in w.tolist()]
    [0.8]
"""
from __future__ import annotations

from .._fused import effective_grad, lerp_, run
from ._util import check_betas, check_flags, check_lr, check_nonneg, dense_only, scalar
from .optimizer import Optimizer, advance_state

__all__ = ["RAdam"]


def _radam_kernel(xp, a, s, h):
    decay, wd, maximize, w1, beta2, c2, rect, eps, k = h
    p, g, m, v = a
    t, u = s
    if decay != 1.0:
        xp.multiply(p, decay, out=p)
    g = effective_grad(xp, p, g, wd, maximize, t)
    lerp_(xp, m, g, w1, u)
    xp.multiply(g, c2, out=u)
    u *= g
    xp.multiply(v, beta2, out=v)
    v += u
    if rect:
        xp.sqrt(v, out=u)
        xp.add(u, eps, out=u)
        xp.divide(m, u, out=u)
        xp.multiply(u, k, out=u)
    else:
        xp.multiply(m, k, out=u)
    p += u


class RAdam(Optimizer):
    """RAdam. ``lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    decoupled_weight_decay=False``. State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        betas = check_betas(betas)
        check_nonneg(weight_decay, "weight_decay value")
        check_flags(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One RAdam update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (scalar(b) for b in group["betas"])
            lr = scalar(group["lr"])
            wd = group["weight_decay"]
            decoupled = group["decoupled_weight_decay"]
            decay = 1.0 - lr * wd if (decoupled and wd) else 1.0
            l2 = 0 if decoupled else wd
            rho_inf = 2.0 / (1.0 - beta2) - 1.0
            jobs = []
            for p, g in self._params_with_grad(group):
                dense_only("RAdam", g)
                st, t = advance_state(self.state, p, ("exp_avg", "exp_avg_sq"))
                bc1 = 1.0 - beta1 ** t
                bc2 = 1.0 - beta2 ** t
                rho_t = rho_inf - 2.0 * t * beta2 ** t / bc2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    k = -lr / bc1 * bc2 ** 0.5 * rect
                else:
                    rect = 0.0
                    k = -lr / bc1
                jobs.append(((p.array, g.array, st["exp_avg"].array, st["exp_avg_sq"].array),
                             (decay, l2, group["maximize"], 1.0 - beta1, beta2, 1.0 - beta2,
                              rect, group["eps"], k)))
                p._bump()
            run(_radam_kernel, 2, jobs)
        return loss
