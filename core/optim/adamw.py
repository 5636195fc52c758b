"""``AdamW``: Adam with decoupled weight decay (Loshchilov & Hutter), ``p *= 1 - lr * wd`` before
the Adam update instead of adding ``wd * p`` to the gradient. Default ``weight_decay=1e-2``.

    >>> import ember
    >>> w = ember.ones(2, requires_grad=True)
    >>> opt = ember.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.grad = ember.zeros(2); opt.step()
    >>> [round(x, 4) for x in w.tolist()]
    [0.95, 0.95]
"""
from __future__ import annotations

from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """AdamW: see :class:`Adam` (``decoupled_weight_decay`` is always True here)."""

    _name = "AdamW"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)

    def _fix_loaded_state(self):
        super()._fix_loaded_state()
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
