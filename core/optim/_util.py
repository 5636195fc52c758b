"""Small helpers shared by the optimizers: argument checks, scalars, state allocation."""
from __future__ import annotations

from .._tensor import Tensor


def scalar(x):
    """A Python float of a hyper-parameter given as a number or a 1-element Tensor."""
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        return float(x.item())
    return x


def check_lr(lr):
    lr_v = scalar(lr)
    if not 0.0 <= lr_v:
        raise ValueError(f"Invalid learning rate: {lr_v}")


def check_nonneg(value, what):
    """``what`` names the value in the message, e.g. "epsilon value", "weight_decay value"."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def check_betas(betas):
    betas = tuple(scalar(b) for b in betas)
    if len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas}")
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    return tuple(float(b) for b in betas)


def check_flags(differentiable=False, fused=None, foreach=None):
    """``foreach``/``fused``/``capturable`` are accepted for PyTorch compatibility: ember always
    runs its one fused in-place update. Differentiating through a step is not offered."""
    if differentiable:
        raise ValueError("differentiable=True is not supported by ember optimizers: steps run in "
                         "place on the raw arrays, outside autograd")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def dense_only(opt, grad, hint=""):
    if grad.is_sparse:
        raise RuntimeError(f"{opt} does not support sparse gradients{hint}")


def zeros_like(p):
    d = p.array
    from .. import _backend as B

    return Tensor._make(B.namespace(d).zeros(d.shape, d.dtype))
