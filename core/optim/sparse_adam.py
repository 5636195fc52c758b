"""``SparseAdam``: Adam for row-sparse gradients (embedding tables), "lazy" Adam.

Only the rows present in the gradient change, in ``exp_avg``, ``exp_avg_sq`` and the parameter
(PyTorch's masked algorithm, per coalesced gradient row ``g`` at step ``t``)::

    g = -g if maximize
    m[rows] += (1 - beta1) * (g - m[rows]);  v[rows] += (1 - beta2) * (g * g - v[rows])
    p[rows] -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m[rows] / (sqrt(v[rows]) + eps)

Dense gradients are refused (use Adam). ``state["step"]`` is an int, as in PyTorch.

    >>> import ember, numpy as np
    >>> from ember.sparse import RowSparseGrad
    >>> w = ember.zeros(4, 2, requires_grad=True)
    >>> opt = ember.optim.SparseAdam([w], lr=0.1)
    >>> w.grad = RowSparseGrad(np.array([1]), np.ones((1, 2), np.float32), (4, 2))
    >>> opt.step(); [round(x, 4) for x in w[:, 0].tolist()]
    [0.0, -0.1, 0.0, 0.0]
"""
from __future__ import annotations

from .. import _backend as B
from ._util import check_betas, scalar, zeros_like
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """SparseAdam. ``lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False``. State per
    parameter: ``step`` (int), ``exp_avg``, ``exp_avg_sq``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        lr_v = scalar(lr)
        if not 0.0 < lr_v:
            raise ValueError(f"Invalid learning rate: {lr_v}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        betas = check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        cplx = [[i, j] for i, g in enumerate(self.param_groups)
                for j, p in enumerate(g["params"]) if p.is_complex()]
        if cplx:
            raise ValueError(f"Complex params at indices {cplx}: SparseAdam does not support "
                             "complex parameters")

    def _fix_loaded_state(self):
        for group in self.param_groups:
            for k, v in self.defaults.items():
                group.setdefault(k, v)
            for p in group["params"]:
                st = self.state.get(p)
                if st and "step" in st and not isinstance(st["step"], int):
                    st["step"] = int(float(st["step"]))

    def step(self, closure=None):
        """One SparseAdam update of every parameter with a gradient; returns the loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (scalar(b) for b in group["betas"])
            lr = scalar(group["lr"])
            eps = group["eps"]
            for p, g in self._params_with_grad(group):
                if not g.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = zeros_like(p)
                    st["exp_avg_sq"] = zeros_like(p)
                st["step"] += 1
                c = g.coalesce()
                if c.indices.shape[0] == 0:
                    continue
                idx, vals = c.indices, c.values
                if group["maximize"]:
                    vals = -vals
                m, v = st["exp_avg"].array, st["exp_avg_sq"].array
                xp = B.namespace(vals)
                old_m = m[idx]
                dm = vals - old_m
                dm *= 1.0 - beta1
                m[idx] += dm
                old_v = v[idx]
                dv = vals * vals
                dv -= old_v
                dv *= 1.0 - beta2
                v[idx] += dv
                numer = dm + old_m
                dv += old_v
                denom = xp.sqrt(dv)
                denom += eps
                t = st["step"]
                step_size = lr * (1.0 - beta2 ** t) ** 0.5 / (1.0 - beta1 ** t)
                numer /= denom
                numer *= -step_size
                p.array[idx] += numer
                p._bump()
        return loss
