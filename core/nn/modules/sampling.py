"""Shape and resampling modules: padding layers, PixelShuffle/Unshuffle, Upsample, Fold/Unfold,
ChannelShuffle, and the distance modules."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d", "PixelShuffle", "PixelUnshuffle", "Upsample",
           "UpsamplingNearest2d", "UpsamplingBilinear2d", "Fold", "Unfold", "ChannelShuffle",
           "PairwiseDistance", "CosineSimilarity"]


def _pad_tuple(padding, n):
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n:
        raise ValueError(f"padding must be an int or a tuple of {2 * n} ints, got {padding}")
    return padding


class _PadNd(Module):
    _n, _mode = 1, "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding, self.value = _pad_tuple(padding, self._n), value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant" and not isinstance(self, _ZeroPad):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


class _ZeroPad(_PadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad1d(_ZeroPad):
    _n = 1


class ZeroPad2d(_ZeroPad):
    _n = 2


class ZeroPad3d(_ZeroPad):
    _n = 3


class ConstantPad1d(_PadNd):
    _n = 1


class ConstantPad2d(_PadNd):
    _n = 2


class ConstantPad3d(_PadNd):
    _n = 3


class _NoValuePad(_PadNd):
    def __init__(self, padding):
        super().__init__(padding)


class ReflectionPad1d(_NoValuePad):
    _n, _mode = 1, "reflect"


class ReflectionPad2d(_NoValuePad):
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_NoValuePad):
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_NoValuePad):
    _n, _mode = 1, "replicate"


class ReplicationPad2d(_NoValuePad):
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_NoValuePad):
    _n, _mode = 3, "replicate"


class CircularPad1d(_NoValuePad):
    _n, _mode = 1, "circular"


class CircularPad2d(_NoValuePad):
    _n, _mode = 2, "circular"


class CircularPad3d(_NoValuePad):
    _n, _mode = 3, "circular"


class PixelShuffle(Module):
    """(N, C * r^2, H, W) -> (N, C, H * r, W * r)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(N, C, H * r, W * r) -> (N, C * r^2, H, W)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) \
            else (tuple(float(f) for f in scale_factor) if scale_factor else None)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class Fold(Module):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class ChannelShuffle(Module):
    """Interleaves ``groups`` channel groups: (N, g * k, *) -> channels reordered k-major
    (ShuffleNet)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        n, c = input.shape[0], input.shape[1]
        if c % self.groups:
            raise ValueError(f"Number of channels ({c}) must be divisible by groups "
                             f"({self.groups})")
        rest = tuple(input.shape[2:])
        x = input.reshape((n, self.groups, c // self.groups) + rest)
        return x.transpose(1, 2).reshape((n, c) + rest)

    def extra_repr(self):
        return f"groups={self.groups}"


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
