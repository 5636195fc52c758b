"""``ASGD``: averaged stochastic gradient descent (Polyak & Juditsky, 1992).

PyTorch's algorithm, per parameter ``p`` with gradient ``g`` at step ``t`` (``eta`` and ``mu``
are per-parameter 0-d float32 tensors, starting at ``lr`` and 1)::

    g = -g if maximize;  g += wd * p
    p *= 1 - lambd * eta
    p -= eta * g
    ax = p if mu == 1 else ax + mu * (p - ax)                 # the running average
    eta = lr / (1 + lambd * lr * t) ** alpha
    mu = 1 / max(1, t - t0)

Averaging starts after ``t0`` steps; ``state["ax"]`` then holds the averaged parameters.

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.ASGD([w], lr=0.1, lambd=0.0)
    >>> w.grad = ember.tensor([2.0]); opt.step(); [round(x, 4) for x in w.tolist()]
    [0.8]
"""
from __future__ import annotations

from .._fused import effective_grad, run
from ._util import check_flags, check_lr, check_nonneg, dense_only, scalar
from .optimizer import Optimizer, advance_state

__all__ = ["ASGD"]


def _asgd_kernel(xp, a, s, h):
    wd, maximize, decay, neg_eta, mu = h
    p, g, ax = a
    t, u = s
    g = effective_grad(xp, p, g, wd, maximize, t)
    xp.multiply(p, decay, out=p)
    xp.multiply(g, neg_eta, out=u)
    p += u
    if mu != 1.0:
        xp.subtract(p, ax, out=u)
        xp.multiply(u, mu, out=u)
        ax += u
    else:
        xp.copyto(ax, p)


class ASGD(Optimizer):
    """ASGD. ``lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0``. State per
    parameter: ``step``, ``eta``, ``mu`` (0-d float32) and ``ax`` (shaped like the
    parameter)."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_nonneg(weight_decay, "weight_decay value")
        check_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One ASGD update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            jobs = []
            for p, g in self._params_with_grad(group):
                dense_only("ASGD", g)
                st, t = advance_state(self.state, p, ("ax",), (("eta", lr), ("mu", 1.0)))
                eta_arr, mu_arr = st["eta"].array, st["mu"].array
                eta, mu = float(eta_arr), float(mu_arr)
                jobs.append(((p.array, g.array, st["ax"].array),
                             (group["weight_decay"], group["maximize"], 1.0 - lambd * eta,
                              -eta, mu)))
                # the next step's rates, rounded to float32 as torch stores them
                eta_arr[...] = lr / ((1.0 + lambd * lr * t) ** alpha)
                mu_arr[...] = 1.0 / max(1.0, t - t0)
                p._bump()
            run(_asgd_kernel, 2, jobs)
        return loss
