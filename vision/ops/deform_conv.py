"""Deformable convolution (Dai et al. 2017) and its modulated form (DCNv2, Zhu et al. 2019).

Each kernel tap of each output position reads the input at its regular grid position plus a
learned (dy, dx) offset, by bilinear interpolation (pixels outside the image read 0), and,
with a ``mask``, scaled by a learned modulation. The sampled columns then meet the weights in
one grouped matrix product. Everything is built from ember ops (a gather, elementwise
arithmetic, a matmul), vectorised over batch, taps and positions, so gradients flow to the
input, offsets, mask, weight and bias alike, to any order, on numpy and cupy.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember import nn
from ember._tensor import Tensor
from ember.nn import init

from ._utils import _const, _pair, _xp

__all__ = ["deform_conv2d", "DeformConv2d"]


def _check(input, offset, weight, mask, bias, stride, padding, dilation):
    for name, t in (("input", input), ("offset", offset), ("weight", weight)):
        if not isinstance(t, Tensor) or t.ndim != 4:
            raise ValueError(f"{name} should be a 4-d Tensor, got "
                             f"{getattr(t, 'shape', type(t).__name__)}")
    B, C, H, W = input.shape
    O, Cg, kh, kw = weight.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    if sh <= 0 or sw <= 0 or dh <= 0 or dw <= 0 or ph < 0 or pw < 0:
        raise ValueError(f"stride and dilation must be positive and padding non-negative, got "
                         f"stride={stride}, padding={padding}, dilation={dilation}")
    if Cg == 0 or C % Cg:
        raise ValueError(f"input channels ({C}) must be a multiple of weight.shape[1] ({Cg})")
    groups = C // Cg
    if O % groups:
        raise ValueError(f"out channels ({O}) must be a multiple of the groups ({groups})")
    taps = kh * kw
    og = offset.shape[1] // (2 * taps)
    if og == 0 or offset.shape[1] != og * 2 * taps:
        raise ValueError(f"offset.shape[1] ({offset.shape[1]}) should be a positive multiple of "
                         f"2 * kernel_h * kernel_w = {2 * taps}")
    if C % og:
        raise ValueError(f"input channels ({C}) must be a multiple of the offset groups ({og})")
    oh = (H + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (W + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ValueError(f"output size too small: ({oh}, {ow})")
    if offset.shape[0] != B or tuple(offset.shape[2:]) != (oh, ow):
        raise ValueError(f"offset should have shape ({B}, {offset.shape[1]}, {oh}, {ow}), got "
                         f"{tuple(offset.shape)}")
    if mask is not None and tuple(mask.shape) != (B, og * taps, oh, ow):
        raise ValueError(f"mask should have shape ({B}, {og * taps}, {oh}, {ow}), got "
                         f"{tuple(mask.shape)}")
    if bias is not None and tuple(bias.shape) != (O,):
        raise ValueError(f"bias should have shape ({O},), got {tuple(bias.shape)}")
    return groups, og, oh, ow


def deform_conv2d(input, offset, weight, bias=None, stride=(1, 1), padding=(0, 0),
                  dilation=(1, 1), mask=None) -> Tensor:
    """Deformable 2-d convolution -> (B, O, oh, ow).

    Shapes: ``input`` (B, C, H, W); ``weight`` (O, C / groups, kh, kw) (groups follow from
    it); ``offset`` (B, 2 * G * kh * kw, oh, ow) with G offset groups, each group's channels
    ordered ``(tap, [dy, dx])`` with taps row-major, channel c using group
    ``c // (C / G)``; ``mask`` (B, G * kh * kw, oh, ow) or None (plain DCNv1); ``bias`` (O,).

        >>> x = ember.arange(9.0).reshape(1, 1, 3, 3)
        >>> w = ember.ones(1, 1, 1, 1)
        >>> off = ember.zeros(1, 2, 3, 3)
        >>> off[:, 1] = 0.5                     # every tap reads half a pixel to the right
        >>> deform_conv2d(x, off, w)[0, 0].tolist()
        [[0.5, 1.5, 1.0], [3.5, 4.5, 2.5], [6.5, 7.5, 4.0]]
    """
    stride, padding, dilation = _pair(stride), _pair(padding), _pair(dilation)
    groups, og, oh, ow = _check(input, offset, weight, mask, bias, stride, padding, dilation)
    B, C, H, W = input.shape
    O, _, kh, kw = weight.shape
    K, L, cg = kh * kw, oh * ow, C // og
    xp = _xp(input)
    dt = input.array.dtype
    if B == 0:
        return ember.zeros((0, O, oh, ow), dtype=input.dtype, device=input.device)

    # regular grid position of every tap at every output position: (K, L)
    gy = (np.arange(oh) * stride[0] - padding[0])[None, :, None] + \
        (np.arange(kh) * dilation[0])[:, None, None]                # (kh, oh, 1)
    gx = (np.arange(ow) * stride[1] - padding[1])[None, None, :] + \
        (np.arange(kw) * dilation[1])[:, None, None]                # (kw, 1, ow)
    gy = np.broadcast_to(gy[:, None], (kh, kw, oh, ow)).reshape(K, L)
    gx = np.broadcast_to(gx[None], (kh, kw, oh, ow)).reshape(K, L)
    off = offset.reshape(B, og, K, 2, L)
    py = off[:, :, :, 0] + _const(xp, gy.astype(dt))                # (B, og, K, L)
    px = off[:, :, :, 1] + _const(xp, gx.astype(dt))

    # bilinear taps with zero padding: corners outside the image weigh 0
    y0 = xp.floor(py.detach().array)
    x0 = xp.floor(px.detach().array)
    ly, lx = py - _const(xp, y0), px - _const(xp, x0)                # fractions, with grad
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    idx, wts = [], []
    for yy, wy in ((y0, 1 - ly), (y0 + 1, ly)):
        for xx, wx in ((x0, 1 - lx), (x0 + 1, lx)):
            inside = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
            idx.append(xp.where(inside, yy * W + xx, 0))
            wts.append(wy * wx * _const(xp, inside.astype(dt)))
    # rows of the channels-last input per (image, offset group): (B * og * H * W, cg)
    rows = input.reshape(B, og, cg, H * W).permute(0, 1, 3, 2).reshape(B * og * H * W, cg)
    base = (xp.arange(B * og).reshape(B, og, 1, 1, 1) * (H * W))
    lin = base + xp.stack(idx, 2)                                    # (B, og, 4, K, L)
    vals = rows[_const(xp, lin.reshape(-1))].reshape(B, og, 4, K, L, cg)
    w4 = ember.stack(wts, 2)                                         # (B, og, 4, K, L)
    if mask is not None:
        w4 = w4 * mask.reshape(B, og, 1, K, L)
    cols = (vals * w4.unsqueeze(-1)).sum(2)                          # (B, og, K, L, cg)
    # -> (B, groups, C / groups * K, L), channel-major like the weight's (c, kh, kw)
    cols = cols.permute(0, 1, 4, 2, 3).reshape(B, groups, (C // groups) * K, L)
    wmat = weight.reshape(groups, O // groups, (C // groups) * K)
    out = (wmat.unsqueeze(0) @ cols).reshape(B, O, oh, ow)
    if bias is not None:
        out = out + bias.reshape(1, O, 1, 1)
    return out


class DeformConv2d(nn.Module):
    """Module form of :func:`deform_conv2d`: holds ``weight`` (out, in / groups, kh, kw) and
    ``bias``; ``forward(input, offset, mask=None)``. Initialised as ``nn.Conv2d``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True):
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride, self.padding = _pair(stride), _pair(padding)
        self.dilation, self.groups = _pair(dilation), groups
        self.weight = nn.Parameter(ember.empty(out_channels, in_channels // groups,
                                               *self.kernel_size))
        if bias:
            self.bias = nn.Parameter(ember.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * self.kernel_size[0] * self.kernel_size[1]
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input, offset, mask=None):
        return deform_conv2d(input, offset, self.weight, self.bias, stride=self.stride,
                             padding=self.padding, dilation=self.dilation, mask=mask)

    def __repr__(self):
        s = (f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
             f"kernel_size={self.kernel_size}, stride={self.stride}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s + ")"
