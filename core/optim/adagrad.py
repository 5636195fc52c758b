"""``Adagrad`` (Duchi et al.), for dense and row-sparse gradients.

PyTorch's algorithm, per parameter ``p`` with gradient ``g`` at step ``t``::

    g = -g if maximize;  g += wd * p
    clr = lr / (1 + (t - 1) * lr_decay)
    s += g * g                                       # sum
    p -= clr * g / (sqrt(s) + eps)

A row-sparse gradient (``ember.sparse.RowSparseGrad``) is coalesced (repeated rows summed) and
only its rows of ``sum`` and ``p`` change, PyTorch's sparse rule; weight decay is refused with
sparse gradients, as in PyTorch. The state exists from construction (``step`` 0, ``sum`` filled
with ``initial_accumulator_value``), as in PyTorch.

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.Adagrad([w], lr=0.1)
    >>> w.grad = ember.tensor([2.0]); opt.step(); [round(x, 4) for x in w.tolist()]
    [0.9]
"""
from __future__ import annotations

from .. import _backend as B
from .._tensor import Tensor
from .._fused import effective_grad, run
from ._util import check_flags, check_lr, check_nonneg, scalar
from .optimizer import Optimizer, _step_tensor

__all__ = ["Adagrad"]


def _adagrad_kernel(xp, a, s, h):
    wd, maximize, eps, k = h
    p, g, acc = a
    t, u = s
    g = effective_grad(xp, p, g, wd, maximize, t)
    xp.multiply(g, g, out=u)
    acc += u
    xp.sqrt(acc, out=u)
    xp.add(u, eps, out=u)
    xp.divide(g, u, out=u)
    xp.multiply(u, k, out=u)
    p += u


def _sparse_update(p, acc, g, maximize, eps, clr):
    """Adagrad on the rows of a row-sparse gradient only."""
    c = g.coalesce()
    idx, vals = c.indices, c.values
    if maximize:
        vals = -vals
    xp = B.namespace(vals)
    rows = acc[idx]
    rows += vals * vals
    acc[idx] = rows
    std = xp.sqrt(rows)
    std += eps
    upd = vals / std
    upd *= -clr
    p[idx] += upd


class Adagrad(Optimizer):
    """Adagrad. ``lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
    eps=1e-10``. State per parameter: ``step``, ``sum``."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_lr(lr)
        check_nonneg(lr_decay, "lr_decay value")
        check_nonneg(weight_decay, "weight_decay value")
        check_nonneg(initial_accumulator_value, "initial_accumulator_value value")
        check_nonneg(eps, "epsilon value")
        check_flags(differentiable, fused, foreach)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        st = self.state[p]
        st["step"] = _step_tensor()
        d = p.array
        v = group["initial_accumulator_value"]
        st["sum"] = Tensor._make(B.namespace(d).full(d.shape, complex(v, v) if d.dtype.kind == "c"
                                                     else v, d.dtype))
        return st

    def step(self, closure=None):
        """One Adagrad update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            wd = group["weight_decay"]
            maximize = group["maximize"]
            jobs = []
            for p, g in self._params_with_grad(group):
                st = self.state.get(p) or self._init_state(p, group)
                step_t = st["step"].array
                step_t += 1
                clr = lr / (1.0 + (float(step_t) - 1.0) * group["lr_decay"])
                if g.is_sparse:
                    if wd != 0:
                        raise RuntimeError("weight_decay option is not compatible with sparse "
                                           "gradients")
                    _sparse_update(p.array, st["sum"].array, g, maximize, group["eps"], clr)
                else:
                    jobs.append(((p.array, g.array, st["sum"].array),
                                 (wd, maximize, group["eps"], -clr)))
                p._bump()
            run(_adagrad_kernel, 2, jobs)
        return loss
