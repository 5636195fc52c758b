"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

PyTorch's algorithm, per parameter ``p`` with gradient ``g``::

    g = -g if maximize;  g += wd * p
    b = g (first step)   or   b = momentum * b + (1 - dampening) * g     # momentum_buffer
    g = g + momentum * b if nesterov else b
    p -= lr * g

Row-sparse gradients (``ember.sparse.RowSparseGrad``): without momentum only the gradient's rows
are touched; with momentum the gradient is densified into a dense ``momentum_buffer`` (PyTorch
keeps a sparse buffer whose rows only ever grow: the values are the same). Weight decay is
refused with sparse gradients, as in PyTorch.

    >>> import ember
    >>> w = ember.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = ember.optim.SGD([w], lr=0.5, momentum=0.9)
    >>> w.grad = ember.ones(2); opt.step(); opt.step()
    >>> [round(x, 4) for x in w.tolist()]
    [-0.45, 0.55]
"""
from __future__ import annotations

import numpy as np

from .. import kernels as _kernels
from .._fused import effective_grad, run
from ._util import check_flags, check_lr, check_nonneg, scalar, zeros_like
from .optimizer import Optimizer

__all__ = ["SGD"]


def _sgd_kernel(xp, a, s, h):
    wd, maximize, lr, momentum, damp, nesterov, first = h
    p, g = a[0], a[1]
    t, u = s
    g = effective_grad(xp, p, g, wd, maximize, t)
    if len(a) == 3:
        b = a[2]
        if first:
            xp.copyto(b, g)
        else:
            xp.multiply(b, momentum, out=b)
            if damp != 1.0:
                xp.multiply(g, damp, out=u)
                b += u
            else:
                b += g
        if nesterov:
            xp.multiply(b, momentum, out=u)
            u += g
            g = u
        else:
            g = b
    xp.multiply(g, -lr, out=u)
    p += u


_SGD = _kernels.lookup("sgd_step")


class SGD(Optimizer):
    """SGD. ``lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False``. State per
    parameter (only with momentum): ``momentum_buffer``, shaped like the parameter."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        check_lr(lr)
        check_nonneg(momentum, "momentum value")
        check_nonneg(weight_decay, "weight_decay value")
        check_flags(differentiable, fused, foreach)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One SGD update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            wd = group["weight_decay"]
            momentum = group["momentum"]
            maximize = group["maximize"]
            nesterov = group["nesterov"]
            damp = 1.0 - group["dampening"]
            jobs = []
            for p, g in self._params_with_grad(group):
                if g.is_sparse:
                    if wd != 0:
                        raise RuntimeError("SGD: weight_decay is not supported with sparse "
                                           "gradients (as in PyTorch)")
                    if momentum == 0:
                        g.add_to_(p.array, alpha=lr if maximize else -lr)
                        p._bump()
                        continue
                    g = g.to_dense()
                arrays = (p.array, g.array)
                first = False
                if momentum != 0:
                    st = self.state[p]
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = st["momentum_buffer"] = zeros_like(p)
                        first = True
                    arrays += (buf.array,)
                jobs.append((arrays, (wd, maximize, lr, momentum, damp, nesterov, first)))
                p._bump()
            if jobs and type(jobs[0][0][0]) is np.ndarray and _kernels.available():
                _SGD.cpu(jobs)   # one compiled pass per parameter (ember.kernels)
            else:
                run(_sgd_kernel, 2, jobs)
        return loss
