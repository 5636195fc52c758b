"""``Parameter`` (a tensor a Module learns) and ``Buffer`` (state a Module keeps, e.g. BatchNorm's
running mean)."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that a ``Module`` registers as learnable when assigned as an attribute.

    Shares memory with ``data`` (no copy); ``requires_grad`` defaults to True. Ops on a
    Parameter return plain Tensors.

        >>> import ember
        >>> p = ember.nn.Parameter(ember.zeros(2, 3))
        >>> p.requires_grad, p.shape
        (True, (2, 3))
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = Tensor._make(np.empty(0, np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be a Tensor, got {type(data).__name__}")
        if data.grad_fn is not None:
            data = data.detach()
        _adopt(self, data)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        d = self.detach().cpu().array
        return (_rebuild_parameter, (d, str(self.device), self.requires_grad))

    def __deepcopy__(self, memo):
        p = Parameter(Tensor._make(self.array.copy()), self.requires_grad)
        if self.grad is not None:
            p.grad = Tensor._make(self.grad.array.copy())
        memo[id(self)] = p
        return p


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute
    (``persistent=False`` keeps it out of the state dict)."""

    __slots__ = ("persistent",)

    def __init__(self, data, *, persistent=True):
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: data must be a Tensor, got {type(data).__name__}")
        _adopt(self, data.detach())
        self.persistent = persistent


def _adopt(self, src):
    """Make ``self`` a fresh leaf over ``src``'s array (no copy), sharing its version counter."""
    self.array = src.array
    self.requires_grad = False
    self.grad = None
    self.grad_fn = None
    self._out_nr = 0
    self._version = src._vc()
    self._base = None
    self._hooks = None


def _rebuild_parameter(arr, dev, requires_grad):
    t = Tensor._make(arr)
    if dev != "cpu":
        t = t.to(dev)
    return Parameter(t, requires_grad)
