"""``RMSprop`` (Hinton), optionally centered and with momentum.

PyTorch's algorithm, per parameter ``p`` with gradient ``g``::

    g = -g if maximize;  g += wd * p
    s = alpha * s + (1 - alpha) * g * g                  # square_avg
    if centered: a = lerp(a, g, 1 - alpha); d = sqrt(s - a * a) + eps    # grad_avg
    else:        d = sqrt(s) + eps
    if momentum > 0: b = momentum * b + g / d; p -= lr * b               # momentum_buffer
    else:            p -= lr * g / d

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.RMSprop([w], lr=0.01, alpha=0.75)
    >>> w.grad = ember.tensor([2.0]); opt.step(); [round(x, 4) for x in w.tolist()]
    [0.98]
"""
from __future__ import annotations

from .._fused import effective_grad, lerp_, run
from ._util import check_flags, check_lr, check_nonneg, dense_only, scalar
from .optimizer import Optimizer, advance_state

__all__ = ["RMSprop"]


def _rmsprop_kernel(xp, a, s, h):
    wd, maximize, alpha, c, eps, momentum, centered, lr = h
    p, g, sq = a[0], a[1], a[2]
    t, u = s
    g = effective_grad(xp, p, g, wd, maximize, t)
    xp.multiply(sq, alpha, out=sq)
    xp.multiply(g, c, out=u)
    u *= g
    sq += u
    i = 3
    if momentum > 0:
        buf = a[i]
        i += 1
    if centered:
        ga = a[i]
        lerp_(xp, ga, g, c, u)
        xp.multiply(ga, ga, out=u)
        xp.subtract(sq, u, out=u)
        xp.sqrt(u, out=u)
    else:
        xp.sqrt(sq, out=u)
    xp.add(u, eps, out=u)
    if momentum > 0:
        xp.multiply(buf, momentum, out=buf)
        xp.divide(g, u, out=u)
        buf += u
        xp.multiply(buf, -lr, out=u)
    else:
        xp.divide(g, u, out=u)
        xp.multiply(u, -lr, out=u)
    p += u


class RMSprop(Optimizer):
    """RMSprop. ``lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False``.
    State per parameter: ``step``, ``square_avg`` (+ ``momentum_buffer``, ``grad_avg``)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        check_nonneg(momentum, "momentum value")
        check_nonneg(weight_decay, "weight_decay value")
        check_nonneg(alpha, "alpha value")
        check_flags(differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One RMSprop update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            momentum = group["momentum"]
            centered = group["centered"]
            alpha = group["alpha"]
            jobs = []
            for p, g in self._params_with_grad(group):
                dense_only("RMSprop", g)
                st, _ = advance_state(self.state, p, ("square_avg",) + (
                    ("momentum_buffer",) if momentum > 0 else ()) + (
                    ("grad_avg",) if centered else ()))
                arrays = (p.array, g.array, st["square_avg"].array)
                if momentum > 0:
                    arrays += (st["momentum_buffer"].array,)
                if centered:
                    arrays += (st["grad_avg"].array,)
                jobs.append((arrays, (group["weight_decay"], group["maximize"], alpha,
                                      1.0 - alpha, group["eps"], momentum, centered,
                                      scalar(group["lr"]))))
                p._bump()
            run(_rmsprop_kernel, 2, jobs)
        return loss
