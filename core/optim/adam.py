"""``Adam`` (Kingma & Ba), with L2 or decoupled (AdamW) weight decay and AMSGrad.

PyTorch's algorithm, per parameter ``p`` with gradient ``g`` at step ``t``::

    g = -g if maximize;  g += wd * p (L2)   or   p *= 1 - lr * wd (decoupled)
    m = lerp(m, g, 1 - beta1)                       # exp_avg
    v = beta2 * v + (1 - beta2) * g * g             # exp_avg_sq
    v_hat = max(v_hat, v) if amsgrad                # max_exp_avg_sq
    p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

The last line runs as ``p += k * m / (sqrt(v) + eps')`` with ``eps' = eps * sqrt(1-beta2**t)``
and ``k = -lr * sqrt(1-beta2**t) / (1-beta1**t)``: the same value, two fewer passes.

    >>> import ember
    >>> w = ember.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = ember.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> [round(x, 4) for x in w.tolist()]
    [0.9, -0.9]
"""
from __future__ import annotations

import numpy as np

from .. import kernels as _kernels
from .._fused import effective_grad, lerp_, run
from ._util import check_betas, check_flags, check_lr, check_nonneg, dense_only, scalar
from .optimizer import Optimizer, advance_state

__all__ = ["Adam"]


def _adam_kernel(xp, a, s, h):
    decay, wd, maximize, w1, b2, c2, eps_s, k = h
    p, g, m, v = a[0], a[1], a[2], a[3]
    t, u = s
    if decay != 1.0:
        xp.multiply(p, decay, out=p)
    g = effective_grad(xp, p, g, wd, maximize, t)
    lerp_(xp, m, g, w1, u)
    xp.multiply(g, c2, out=u)
    u *= g
    xp.multiply(v, b2, out=v)
    v += u
    if len(a) == 5:
        xp.maximum(a[4], v, out=a[4])
        v = a[4]
    xp.sqrt(v, out=u)
    xp.add(u, eps_s, out=u)
    xp.divide(m, u, out=u)
    xp.multiply(u, k, out=u)
    p += u


_ADAM = _kernels.lookup("adam_step")


class Adam(Optimizer):
    """Adam. ``lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False``;
    ``decoupled_weight_decay=True`` gives AdamW. State per parameter: ``step``, ``exp_avg``,
    ``exp_avg_sq`` (and ``max_exp_avg_sq`` with amsgrad), each shaped like the parameter."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        betas = check_betas(betas)
        check_nonneg(weight_decay, "weight_decay value")
        check_flags(differentiable, fused, foreach)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    _name = "Adam"

    def step(self, closure=None):
        """One Adam update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (scalar(b) for b in group["betas"])
            lr = scalar(group["lr"])
            wd = group["weight_decay"]
            eps = group["eps"]
            amsgrad = group["amsgrad"]
            decoupled = group["decoupled_weight_decay"]
            decay = 1.0 - lr * wd if (decoupled and wd) else 1.0
            l2 = 0 if decoupled else wd
            jobs = []
            for p, g in self._params_with_grad(group):
                dense_only(self._name, g, ", please consider SparseAdam instead")
                st, t = advance_state(self.state, p, ("exp_avg", "exp_avg_sq") + (
                    ("max_exp_avg_sq",) if amsgrad else ()))
                bc1 = 1.0 - beta1 ** t
                bc2_sqrt = (1.0 - beta2 ** t) ** 0.5
                arrays = (p.array, g.array, st["exp_avg"].array, st["exp_avg_sq"].array)
                if amsgrad:
                    arrays += (st["max_exp_avg_sq"].array,)
                jobs.append((arrays, (decay, l2, group["maximize"], 1.0 - beta1, beta2,
                                      1.0 - beta2, eps * bc2_sqrt, -lr / bc1 * bc2_sqrt)))
                p._bump()
            fused = _ADAM.cpu if jobs and type(jobs[0][0][0]) is np.ndarray and \
                _kernels.available() else None
            if fused is not None:   # one compiled pass per parameter (ember.kernels)
                fused(jobs)
            else:
                run(_adam_kernel, 2, jobs)
        return loss
