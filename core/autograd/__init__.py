"""Reverse-mode automatic differentiation: ``backward``, ``grad``, custom ``Function``s,
grad-mode switches, anomaly detection and numerical gradient checks."""
from __future__ import annotations

from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (detect_anomaly, enable_grad, inference_mode, is_anomaly_enabled,
                        is_grad_enabled, no_grad, set_detect_anomaly, set_grad_enabled)
from . import graph
from .graph import B, Node, run_backward
from .gradcheck import gradcheck, gradgradcheck


def _as_list(x):
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _make_grads(outputs, grads):
    Tensor = graph.Tensor
    out = []
    for i, t in enumerate(outputs):
        g = grads[i] if grads is not None and i < len(grads) else None
        if g is None:
            if t.array.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs, but output {i} has "
                    f"shape {list(t.shape)}: pass a gradient of that shape")
            g = Tensor._make(B.namespace(t.array).ones(t.array.shape, t.array.dtype))
        elif not isinstance(g, Tensor):
            g = Tensor._make(xp_asarray_like(g, t))
        if g.array.shape != t.array.shape:
            raise RuntimeError(
                f"mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and "
                f"output[{i}] has a shape of {list(t.shape)}")
        out.append(g)
    return out


def xp_asarray_like(value, like):
    from .. import _backend as B

    return B.namespace(like.array).asarray(value, dtype=like.array.dtype)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on."""
    tensors = [tensors] if isinstance(tensors, graph.Tensor) else _as_list(tensors)
    for i, t in enumerate(tensors):
        if not t.requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn")
    grads = _make_grads(tensors, None if grad_tensors is None else (
        [grad_tensors] if isinstance(grad_tensors, graph.Tensor) else _as_list(grad_tensors)))
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_list(inputs)
        res = run_backward(tensors, grads, retain_graph, create_graph, inputs, allow_unused=True)
        from .graph import _accumulate_leaf

        for t, g in zip(inputs, res):
            if g is not None:
                _accumulate_leaf(t, g, set(), create_graph)
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned (not accumulated into ``.grad``)."""
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    for i, t in enumerate(outputs):
        if not t.requires_grad:
            raise RuntimeError(
                f"element {i} of outputs does not require grad and does not have a grad_fn")
    grads = _make_grads(outputs, _as_list(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    res = run_backward(outputs, grads, retain_graph, create_graph, inputs, allow_unused)
    if materialize_grads:
        from .._tensor import Tensor
        from .. import _backend as B

        res = tuple(g if g is not None else Tensor._make(B.namespace(t.array).zeros_like(t.array))
                    for g, t in zip(res, inputs))
    return res


__all__ = [
    "Function", "FunctionCtx", "once_differentiable", "backward", "grad", "no_grad",
    "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled", "detect_anomaly",
    "set_detect_anomaly", "is_anomaly_enabled", "gradcheck", "gradgradcheck", "Node",
]
