"""unfold/fold (im2col/col2im) as recorded ops; re-exported by core/nn/functional/conv.py."""
from __future__ import annotations

import numpy as np

from ... import _backend as B
from ...autograd.graph import Node, new_node, record
from ...autograd.grad_mode import STATE
from ...ops._util import wrap
from ._conv_util import _col2im_add, _crop, _extent, _out_size, _pad_to, _prod, _windows

__all__ = ["unfold", "fold"]

# =========================================================================== unfold / fold

def _unfold_arr(x, k, geo, O):
    xp = B.namespace(x)
    plo, s, d, _ = geo
    win = _windows(_pad_to(x, plo, _extent(O, k, s, d)), k, s, d, O)
    N, C = x.shape[:2]
    out = xp.empty((N, C) + tuple(k) + tuple(O), x.dtype)
    xp.copyto(out, win)
    return out.reshape(N, C * _prod(k), _prod(O))


def _fold_arr(cols, S, k, geo, O):
    xp = B.namespace(cols)
    plo, s, d, _ = geo
    N = cols.shape[0]
    C = cols.shape[1] // _prod(k)
    E = _extent(O, k, s, d)
    Eb = tuple(max(e, a + n) for e, a, n in zip(E, plo, S))
    buf = xp.zeros((N, C) + Eb, cols.dtype)
    _col2im_add(buf, cols.reshape((N, C) + tuple(k) + tuple(O)), k, s, d, O)
    return _crop(buf, plo, S)


class Im2ColBackward(Node):
    __slots__ = ("S", "k", "geo", "O")

    def backward(self, g):
        return (_fold(g, self.S, self.k, self.geo, self.O),)


class Col2ImBackward(Node):
    __slots__ = ("S", "k", "geo", "O")

    def backward(self, g):
        return (_unfold(g, self.k, self.geo, self.O),)


def _linear_record(cls, out, x, S, k, geo, O):
    if STATE.enabled and x.requires_grad:
        n = new_node(cls)
        n.S, n.k, n.geo, n.O = S, k, geo, O
        record(n, out, x)
    return out


def _unfold(x, k, geo, O):
    return _linear_record(Im2ColBackward, wrap(_unfold_arr(x.array, k, geo, O)), x,
                          tuple(x.array.shape[2:]), k, geo, O)


def _fold(cols, S, k, geo, O):
    return _linear_record(Col2ImBackward, wrap(_fold_arr(cols.array, S, k, geo, O)), cols,
                          S, k, geo, O)


def _fold_args(op, kernel_size, dilation, padding, stride):
    k = _ntuple_exact(kernel_size, "kernel_size")
    d = _ntuple_exact(dilation, "dilation")
    p = _ntuple_exact(padding, "padding")
    s = _ntuple_exact(stride, "stride")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{k[0]} kernel_width: {k[1]}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {s[0]} "
                           f"stride_width: {s[1]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: "
                           f"{d[0]} dilation_width: {d[1]}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} "
                           f"pad_width: {p[1]}")
    return k, d, p, s


def _ntuple_exact(v, what):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),) * 2
    if isinstance(v, (tuple, list)) and len(v) == 2:
        return tuple(int(e) for e in v)
    n = len(v) if isinstance(v, (tuple, list)) else v
    raise RuntimeError(f"It is expected {what} equals to 2, but got size {n}")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks (im2col): (N, C, H, W) -> (N, C*kH*kW, L), where ``L`` is
    the number of block positions; an unbatched (C, H, W) input gives (C*kH*kW, L). Each
    column holds one block, channel-major then kernel row, kernel column.

    >>> unfold(ember.randn(1, 2, 4, 4), kernel_size=2).shape
    (1, 8, 9)
    """
    k, d, p, s = _fold_args("unfold", kernel_size, dilation, padding, stride)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.dim()}D)")
    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    S = tuple(x.shape[2:])
    O = _out_size(S, p, p, k, s, d)
    if any(o < 1 for o in O):
        raise RuntimeError(
            f"Given input with spatial size {tuple(S)}, kernel_size={k}, dilation={d}, "
            f"padding={p}, calculated shape of the array of sliding blocks as {tuple(O)}, but "
            "its components must be at least one.")
    out = _unfold(x, k, (p, s, d, 1), O)
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding local blocks into a tensor (col2im, summing overlaps): the adjoint of
    ``unfold``. (N, C*kH*kW, L) or (C*kH*kW, L) -> (N, C, *output_size).

    >>> x = ember.ones(1, 1, 3, 3)
    >>> fold(unfold(x, 2), (3, 3), 2)[0, 0, 1, 1].item()  # the centre is in 4 blocks
    4.0
    """
    S = _ntuple_exact(output_size, "output_size")
    k, d, p, s = _fold_args("fold", kernel_size, dilation, padding, stride)
    if input.dim() not in (2, 3) or any(n == 0 for n in input.shape[1:]):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}")
    unbatched = input.dim() == 2
    x = input.unsqueeze(0) if unbatched else input
    Kk = _prod(k)
    if x.shape[1] % Kk:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={k}.")
    O = _out_size(S, p, p, k, s, d)
    if any(o < 1 for o in O):
        raise RuntimeError(
            f"Given output_size={S}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
            f"calculated shape of the array of sliding blocks as {O}, but its components must "
            "be at least one.")
    if x.shape[2] != _prod(O):
        raise RuntimeError(
            f"Given output_size={S}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
            f"expected size of input's dimension 2 to match the calculated number of sliding "
            f"blocks {O[0]} * {O[1]} = {_prod(O)}, but got input.size(2)={x.shape[2]}.")
    out = _fold(x, S, k, (p, s, d, 1), O)
    return out.squeeze(0) if unbatched else out
