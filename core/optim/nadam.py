"""``NAdam``: Adam with Nesterov momentum (Dozat), with PyTorch's momentum-decay schedule.

PyTorch's algorithm, per parameter ``p`` with gradient ``g`` at step ``t`` (``psi`` =
momentum_decay)::

    g = -g if maximize;  g += wd * p (L2)   or   p *= 1 - lr * wd (decoupled: NAdamW)
    mu_t = beta1 * (1 - 0.5 * 0.96**(t * psi));   mu_{t+1} likewise
    mu_product *= mu_t                               # float32 state, as in PyTorch
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    denom = sqrt(v / (1 - beta2**t)) + eps
    p -= lr * (1 - mu_t) / (1 - mu_product) * g / denom
    p -= lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.NAdam([w], lr=0.1)
    >>> w.grad = ember.tensor([1.0]); opt.step(); [round(x, 3) for x in w.tolist()]
    [0.894]
"""
from __future__ import annotations

from .._fused import effective_grad, lerp_, run
from ._util import check_betas, check_flags, check_lr, check_nonneg, dense_only, scalar
from .optimizer import Optimizer, _step_tensor, advance_state

__all__ = ["NAdam"]


def _nadam_kernel(xp, a, s, h):
    decay, wd, maximize, w1, beta2, c2, bc2, eps, kg, km = h
    p, g, m, v = a
    t, u, r = s
    if decay != 1.0:
        xp.multiply(p, decay, out=p)
    g = effective_grad(xp, p, g, wd, maximize, t)
    lerp_(xp, m, g, w1, u)
    xp.multiply(g, c2, out=u)
    u *= g
    xp.multiply(v, beta2, out=v)
    v += u
    xp.divide(v, bc2, out=u)
    xp.sqrt(u, out=u)
    xp.add(u, eps, out=u)
    xp.multiply(g, kg, out=r)
    r /= u
    p += r
    xp.multiply(m, km, out=r)
    r /= u
    p += r


class NAdam(Optimizer):
    """NAdam. ``lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False``. State per parameter: ``step``, ``mu_product`` (0-d float32),
    ``exp_avg``, ``exp_avg_sq``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        betas = check_betas(betas)
        check_nonneg(weight_decay, "weight_decay value")
        check_nonneg(momentum_decay, "momentum_decay value")
        check_flags(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _fix_loaded_state(self):
        super()._fix_loaded_state()
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p)
                if st and "mu_product" in st and not hasattr(st["mu_product"], "array"):
                    st["mu_product"] = _step_tensor(float(st["mu_product"]))

    def step(self, closure=None):
        """One NAdam update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (scalar(b) for b in group["betas"])
            lr = scalar(group["lr"])
            wd = group["weight_decay"]
            psi = group["momentum_decay"]
            decoupled = group["decoupled_weight_decay"]
            decay = 1.0 - lr * wd if (decoupled and wd) else 1.0
            l2 = 0 if decoupled else wd
            jobs = []
            for p, g in self._params_with_grad(group):
                dense_only("NAdam", g)
                st, t = advance_state(self.state, p, ("exp_avg", "exp_avg_sq"),
                                      (("mu_product", 1.0),))
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
                mu_prod = st["mu_product"].array
                mu_prod *= mu
                mp = float(mu_prod)
                kg = -lr * (1.0 - mu) / (1.0 - mp)
                km = -lr * mu_next / (1.0 - mp * mu_next)
                jobs.append(((p.array, g.array, st["exp_avg"].array, st["exp_avg_sq"].array),
                             (decay, l2, group["maximize"], 1.0 - beta1, beta2, 1.0 - beta2,
                              1.0 - beta2 ** t, group["eps"], kg, km)))
                p._bump()
            run(_nadam_kernel, 3, jobs)
        return loss
