"""``parameters_to_vector`` / ``vector_to_parameters``: all parameters as one flat vector and
back (PyTorch's semantics).

    >>> import ember
    >>> a, b = ember.ones(2, 2), ember.zeros(3)
    >>> v = parameters_to_vector([a, b]); v.shape
    (7,)
    >>> vector_to_parameters(ember.arange(7.0), [a, b]); b.tolist()
    [4.0, 5.0, 6.0]
"""
from __future__ import annotations

from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(param, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return param.device


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter flattened, in order (differentiable: its
    gradient flows back to the parameters)."""
    from ...ops.shape import cat

    device = None
    flat = []
    for p in parameters:
        device = _check_device(p, device)
        flat.append(p.reshape(-1))
    return cat(flat)


def vector_to_parameters(vec, parameters):
    """Make each parameter's data a view of its slice of ``vec`` (shared memory, as in
    PyTorch's ``param.array = ...``); ``vec`` must be a 1-D Tensor of the total size."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected ember.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise ValueError(f"vector_to_parameters: vec must be 1-D with {total} elements (the "
                         f"parameters' total), got shape {tuple(vec.shape)}")
    device = None
    src = vec.array
    at = 0
    for p in params:
        device = _check_device(p, device)
        n = p.numel()
        d = src[at:at + n].reshape(p.array.shape)
        p.array = d if d.dtype == p.array.dtype else d.astype(p.array.dtype)
        p._bump()
        at += n
