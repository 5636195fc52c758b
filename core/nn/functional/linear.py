"""``linear`` (one GEMM, one autograd node) and ``bilinear`` (an einsum).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> x, w, b = ember.randn(8, 3, 5), ember.randn(4, 5), ember.randn(4)
    >>> F.linear(x, w, b).shape
    (8, 3, 4)
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as D
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, new_node, record
from ...ops import _util as _U
from ...ops._util import sum_to, wrap
from ...ops.linalg import einsum, matmul

__all__ = ["linear", "bilinear"]

_add_reduce = np.add.reduce  # ``a.sum(0)`` without the method's Python-level dispatch


class LinearBackward(Node):
    """y = x W^T + b over flattened leading dims: dx = g W, dW = g^T x, db = sum(g).
    Plain GEMMs on the arrays when no graph is built; ember ops under create_graph."""

    __slots__ = ("bshape",)

    def backward(self, g):
        x, w = self.unpack()
        nx = self.next
        out_f, in_f = w.array.shape
        gx = gw = gb = None
        if not STATE.enabled:
            gd, xd = g.array, x.array
            flat = gd.ndim == 2
            g2 = gd if flat else gd.reshape(-1, out_f)
            if nx[0] is not None:
                gx = g2 @ w.array
                gx = _U._make(gx if flat else gx.reshape(xd.shape))
            if nx[1] is not None:
                gw = _U._make(g2.T @ (xd if xd.ndim == 2 else xd.reshape(-1, in_f)))
            if nx[2] is not None:
                gb = _U._make(_add_reduce(g2, 0)) if self.bshape == (out_f,) else \
                    sum_to(wrap(gd), self.bshape)
            return gx, gw, gb
        g2 = g.reshape(-1, out_f)
        if nx[0] is not None:
            gx = matmul(g2, w).reshape(x.array.shape)
        if nx[1] is not None:
            gw = matmul(g2.mT, x.reshape(-1, in_f))
        if nx[2] is not None:
            gb = g2.sum(0) if self.bshape == (out_f,) else sum_to(g, self.bshape)
        return gx, gw, gb


def _shape_error(x, w):
    m = x.shape[-1] if x.ndim else 1
    rows = x.size // m if m else 0
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{m} and "
                        f"{w.shape[1]}x{w.shape[0]})")


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` for ``input`` (..., in_features), ``weight``
    (out_features, in_features), ``bias`` (out_features,) or None: (..., out_features).

    One GEMM with the bias added in place into its output; backward is one GEMM per
    gradient (leading dims flattened)."""
    x, w = input.array, weight.array
    if x.ndim == 0 or w.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{x.ndim}D and {w.ndim}D")
    if w.ndim != 2:  # a 1-D weight: a dot product over the last dim (PyTorch allows it)
        out = matmul(input, weight.mT if w.ndim > 1 else weight)
        return out if bias is None else out + bias
    if x.dtype != w.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{D.name(x.dtype)} != {D.name(w.dtype)}")
    out_f, in_f = w.shape
    if x.shape[-1] != in_f:
        raise _shape_error(x, w)
    lead = x.shape[:-1]
    x2 = x if x.ndim == 2 else x.reshape(-1, in_f)
    bshape = None
    if _transposed_gemm_wins(x2, w, bias):
        # (W x^T)^T: the same product through OpenBLAS's other kernel, written back (with
        # the bias) in one pass into a C-ordered output
        yt = (w @ x2.T).T
        y = np.empty(yt.shape, yt.dtype)
        if bias is None:
            np.copyto(y, yt)
        else:
            bshape = bias.array.shape
            np.add(yt, bias.array, out=y)
        out = _U._make(y if x.ndim == 2 else y.reshape(lead + (out_f,)))
        return _record(out, input, weight, bias, bshape)
    try:
        y = x2 @ w.T
    except ValueError:
        raise _shape_error(x, w) from None
    if bias is not None:
        b = bias.array
        bshape = b.shape
        if b.dtype != y.dtype:
            raise RuntimeError(f"linear: bias has dtype {D.name(b.dtype)}, expected "
                               f"{D.name(y.dtype)} like input and weight")
        if type(b) is not type(y):
            raise RuntimeError("linear: expected all tensors to be on the same device, but "
                               "bias is on another device than input and weight")
        if bshape == (out_f,) or bshape == ():
            y += b
        else:
            full = lead + (out_f,)
            try:
                ok = np.broadcast_shapes(full, bshape) == full
            except ValueError:
                ok = False
            if not ok:
                raise RuntimeError(f"linear: bias of shape {list(bshape)} can't be added to "
                                   f"an output of shape {list(full)}")
            y = (y.reshape(full) + b).reshape(-1, out_f)
    out = _U._make(y if x.ndim == 2 else y.reshape(lead + (out_f,)))
    return _record(out, input, weight, bias, bshape)


def _record(out, input, weight, bias, bshape):
    if STATE.enabled and (input.requires_grad or weight.requires_grad or
                          (bias is not None and bias.requires_grad)):
        n = new_node(LinearBackward)
        n.bshape = bshape
        vi, vw = input._version, weight._version
        n.saved = ((input, 0 if vi is None else vi[0]), (weight, 0 if vw is None else vw[0]))
        record(n, out, input, weight, bias)
    return out


def _transposed_gemm_wins(x2, w, bias):
    """True where ``(W @ x^T)^T`` beats ``x @ W^T`` in numpy's OpenBLAS: 8-32 rows against
    a weight of at least 256 x 256 (small-batch inference, RL policies). Measured on the 2-core
    AVX-512 machine, 1 and 2 threads, F.linear with bias: 0.45-0.65x the time with OpenBLAS's
    own kernel choice (16 x 512 -> 512: 60 vs 134 us; 8 x 3072 -> 768: 0.57 vs 1.20 ms),
    0.83-0.93x with OPENBLAS_CORETYPE=Haswell. From 64 rows on the plain product is as fast or
    faster (batch 128 at 512 wide: 1.0-1.2x for the other order), so larger GEMMs keep it."""
    rows = x2.shape[0]
    if not 8 <= rows <= 32:
        return False
    out_f, in_f = w.shape
    if out_f < 256 or in_f < 256 or type(x2) is not np.ndarray or type(w) is not np.ndarray \
            or x2.dtype.kind != "f":
        return False
    if bias is None:
        return True
    b = bias.array
    return type(b) is np.ndarray and b.dtype == x2.dtype and b.shape == (out_f,)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``.
    ``input1`` (..., in1), ``input2`` (..., in2) with the same leading dims, ``weight``
    (out, in1, in2), ``bias`` (out,) or None."""
    a, b, w = input1.array, input2.array, weight.array
    if a.ndim != b.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {a.ndim} and "
                           f"{b.ndim}")
    if a.shape[:-1] != b.shape[:-1]:
        for i, (p, q) in enumerate(zip(a.shape[:-1], b.shape[:-1])):
            if p != q:
                raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {p} "
                                   f"and {q}")
    if w.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got {w.ndim}-D")
    if a.shape[-1] != w.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{a.shape[-1]} but expected {w.shape[1]}")
    if b.shape[-1] != w.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{b.shape[-1]} but expected {w.shape[2]}")
    if bias is not None and (bias.array.ndim == 0 or bias.array.shape[-1] != w.shape[0]):
        got = bias.array.shape[-1] if bias.array.ndim else 0
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {got} but "
                           f"expected {w.shape[0]}")
    y = einsum("...i,oij,...j->...o", input1, weight, input2)
    return y if bias is None else y + bias
