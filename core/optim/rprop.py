"""``Rprop``: resilient backpropagation (Riedmiller & Braun, 1993), a per-element step size
driven by the sign of the gradient only.

PyTorch's algorithm, per parameter ``p`` with gradient ``g``::

    g = -g if maximize
    where g * prev > 0:  step_size *= etaplus
    where g * prev < 0:  step_size *= etaminus;  g = 0     # a sign change: skip this element
    step_size = clamp(step_size, step_size_min, step_size_max)
    p -= sign(g) * step_size
    prev = g

``step_size`` starts filled with ``lr``, ``prev`` with zeros. The masks live in a scratch
buffer reinterpreted as booleans, so a steady-state step allocates nothing.

    >>> import ember
    >>> w = ember.tensor([1.0, 1.0], requires_grad=True)
    >>> opt = ember.optim.Rprop([w], lr=0.1)
    >>> w.grad = ember.tensor([2.0, -3.0]); opt.step(); opt.step()
    >>> [round(x, 4) for x in w.tolist()]
    [0.78, 1.22]
"""
from __future__ import annotations

from .. import _backend as B
from .._tensor import Tensor
from .._fused import run
from ._util import check_flags, check_lr, dense_only, scalar
from .optimizer import Optimizer, advance_state

__all__ = ["Rprop"]


def _rprop_kernel(xp, a, s, h):
    maximize, etaminus, etaplus, smin, smax = h
    p, g, prev, size = a
    t, u, m = s
    if maximize:
        xp.negative(g, out=t)
        g = t
    xp.multiply(g, prev, out=u)
    # two boolean masks carved out of the third scratch buffer (itemsize >= 2 bytes)
    n = u.size
    flat = m.reshape(-1).view(xp.bool_)
    pos = flat[:n].reshape(u.shape)
    neg = flat[n:2 * n].reshape(u.shape)
    xp.greater(u, 0, out=pos)
    xp.less(u, 0, out=neg)
    xp.multiply(size, etaplus, out=u)
    xp.copyto(size, u, where=pos)
    xp.multiply(size, etaminus, out=u)
    xp.copyto(size, u, where=neg)
    xp.clip(size, smin, smax, out=size)
    xp.copyto(prev, g)
    xp.copyto(prev, 0, where=neg)
    xp.sign(prev, out=u)
    u *= size
    p -= u


def _check_pair(value, what):
    try:
        a, b = value
    except (TypeError, ValueError):
        raise ValueError(f"Rprop: {what} must be a pair of numbers, got {value!r}") from None
    return a, b


class Rprop(Optimizer):
    """Rprop. ``lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50)``. State per parameter:
    ``step``, ``prev``, ``step_size``, each buffer shaped like the parameter."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        eta_minus, eta_plus = _check_pair(etas, "etas")
        _check_pair(step_sizes, "step_sizes")
        if not 0.0 < eta_minus < 1.0 < eta_plus:
            raise ValueError(f"Invalid eta values: {eta_minus}, {eta_plus}")
        check_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One Rprop update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            smin, smax = group["step_sizes"]
            jobs = []
            for p, g in self._params_with_grad(group):
                dense_only("Rprop", g)
                fresh = not self.state[p]
                st, _ = advance_state(self.state, p, ("prev",))
                if fresh:
                    d = p.array
                    lr = scalar(group["lr"])
                    fill = complex(lr, lr) if d.dtype.kind == "c" else lr
                    st["step_size"] = Tensor._make(B.namespace(d).full(d.shape, fill, d.dtype))
                jobs.append(((p.array, g.array, st["prev"].array, st["step_size"].array),
                             (group["maximize"], etaminus, etaplus, smin, smax)))
                p._bump()
            run(_rprop_kernel, 3, jobs)
        return loss
