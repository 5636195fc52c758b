"""``Adadelta`` (Zeiler, 2012): step sizes from running averages of squared gradients and
squared updates.

PyTorch's algorithm, per parameter ``p`` with gradient ``g``::

    g = -g if maximize;  g += wd * p
    s = rho * s + (1 - rho) * g * g                      # square_avg
    delta = sqrt(a + eps) / sqrt(s + eps) * g
    a = rho * a + (1 - rho) * delta * delta              # acc_delta
    p -= lr * delta

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.Adadelta([w], lr=1.0, rho=0.0, eps=1e-4)
    >>> w.grad = ember.tensor([3.0]); opt.step(); [round(x, 4) for x in w.tolist()]
    [0.99]
"""
from __future__ import annotations

from .._fused import effective_grad, run
from ._util import check_flags, check_lr, check_nonneg, dense_only, scalar
from .optimizer import Optimizer, advance_state

__all__ = ["Adadelta"]


def _adadelta_kernel(xp, a, s, h):
    wd, maximize, rho, c, eps, neg_lr = h
    p, g, sq, acc = a
    t, u, v = s
    g = effective_grad(xp, p, g, wd, maximize, t)
    xp.multiply(sq, rho, out=sq)
    xp.multiply(g, c, out=u)
    u *= g
    sq += u
    xp.add(acc, eps, out=u)
    xp.sqrt(u, out=u)
    xp.add(sq, eps, out=v)
    xp.sqrt(v, out=v)
    xp.divide(u, v, out=u)
    u *= g                                   # u = delta
    xp.multiply(acc, rho, out=acc)
    xp.multiply(u, c, out=v)
    v *= u
    acc += v
    xp.multiply(u, neg_lr, out=u)
    p += u


class Adadelta(Optimizer):
    """Adadelta. ``lr=1.0, rho=0.9, eps=1e-6, weight_decay=0``. State per parameter:
    ``step``, ``square_avg``, ``acc_delta``, each buffer shaped like the parameter."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonneg(eps, "epsilon value")
        check_nonneg(weight_decay, "weight_decay value")
        check_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One Adadelta update of every parameter with a gradient; returns ``closure()``'s
        loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            rho = group["rho"]
            jobs = []
            for p, g in self._params_with_grad(group):
                dense_only("Adadelta", g)
                st, _ = advance_state(self.state, p, ("square_avg", "acc_delta"))
                jobs.append(((p.array, g.array, st["square_avg"].array, st["acc_delta"].array),
                             (group["weight_decay"], group["maximize"], rho, 1.0 - rho,
                              group["eps"], -scalar(group["lr"]))))
                p._bump()
            run(_adadelta_kernel, 3, jobs)
        return loss
