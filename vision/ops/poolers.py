"""Multi-scale RoIAlign (Feature Pyramid Networks, Lin et al. 2017): each box is pooled from
the pyramid level that suits its size."""
from __future__ import annotations

import numpy as np

import ember
from ember import nn
from ember._tensor import Tensor

from ._utils import _const, _host, _pair, _xp
from .roi import _rois, roi_align

__all__ = ["MultiScaleRoIAlign", "LevelMapper"]


class LevelMapper:
    """Pyramid level of each box, eq. (1) of the FPN paper:
    ``floor(canonical_level + log2(sqrt(area) / canonical_scale) + eps)`` clamped to
    ``[k_min, k_max]``, returned as int64 offsets from ``k_min``."""

    def __init__(self, k_min: int, k_max: int, canonical_scale: int = 224,
                 canonical_level: int = 4, eps: float = 1e-6):
        self.k_min, self.k_max = k_min, k_max
        self.s0, self.lvl0, self.eps = canonical_scale, canonical_level, eps

    def __call__(self, boxlists) -> np.ndarray:
        b = np.concatenate([_host(x) for x in boxlists]) if boxlists else np.zeros((0, 4))
        dt = b.dtype if b.dtype in (np.float32, np.float64) else np.dtype(np.float32)
        b = b.astype(dt)
        s = np.sqrt((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]))
        with np.errstate(divide="ignore", invalid="ignore"):
            lvl = np.floor(self.lvl0 + np.log2(s / dt.type(self.s0)) + dt.type(self.eps))
        return np.clip(lvl, self.k_min, self.k_max).astype(np.int64) - self.k_min

    def __repr__(self):
        return (f"LevelMapper(k_min={self.k_min}, k_max={self.k_max}, canonical_scale="
                f"{self.s0}, canonical_level={self.lvl0}, eps={self.eps})")


def _infer_scale(feature, original_size):
    """The power of two closest to feature size / image size (from the height, as
    torchvision)."""
    approx = float(feature.shape[-2]) / float(original_size[0])
    return float(2 ** float(np.round(np.log2(np.float32(approx)))))


class MultiScaleRoIAlign(nn.Module):
    """RoIAlign over the feature maps named ``featmap_names`` of an FPN.

    ``forward(x, boxes, image_shapes)`` takes ``x`` a dict of (N, C, Hl, Wl) feature maps (the
    names not listed are ignored; the listed ones are taken in ``x``'s order, finest first),
    ``boxes`` a list of (Ki, 4) XYXY boxes per image in image coordinates, and
    ``image_shapes`` the (H, W) of each image, and returns (sum Ki, C, *output_size). The
    scale of each level is inferred from the feature and image sizes on the first call and
    kept; a box of side ``canonical_scale`` goes to level ``canonical_level``.

        >>> m = MultiScaleRoIAlign(["p2", "p3"], 2, 2)
        >>> x = {"p2": ember.rand(1, 4, 16, 16), "p3": ember.rand(1, 4, 8, 8)}
        >>> m(x, [ember.tensor([[0.0, 0.0, 20.0, 30.0]])], [(64, 64)]).shape
        (1, 4, 2, 2)
        >>> m
        MultiScaleRoIAlign(featmap_names=['p2', 'p3'], output_size=(2, 2), sampling_ratio=2)
    """

    def __init__(self, featmap_names, output_size, sampling_ratio: int, *,
                 canonical_scale: int = 224, canonical_level: int = 4):
        super().__init__()
        self.featmap_names = featmap_names
        self.sampling_ratio = sampling_ratio
        self.output_size = _pair(output_size)
        self.scales = None
        self.map_levels = None
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level

    def _setup_scales(self, features, image_shapes):
        if not image_shapes:
            raise ValueError("images list should not be empty")
        size = (max(s[0] for s in image_shapes), max(s[1] for s in image_shapes))
        scales = [_infer_scale(f, size) for f in features]
        lvl_min = -np.log2(np.float32(scales[0]))
        lvl_max = -np.log2(np.float32(scales[-1]))
        self.scales = scales
        self.map_levels = LevelMapper(int(lvl_min), int(lvl_max), self.canonical_scale,
                                      self.canonical_level)

    def forward(self, x, boxes, image_shapes) -> Tensor:
        feats = [v for k, v in x.items() if k in self.featmap_names]
        if not feats:
            raise ValueError(f"none of featmap_names {self.featmap_names} is among the "
                             f"features {list(x)}")
        if self.scales is None or self.map_levels is None:
            self._setup_scales(feats, image_shapes)
        if len(feats) == 1:
            return roi_align(feats[0], boxes, self.output_size, self.scales[0],
                             self.sampling_ratio)
        levels = self.map_levels(boxes)
        rois = _rois(boxes, np.float64)
        ref = feats[0]
        K, C = len(levels), ref.shape[1]
        parts, where = [], []
        for lvl, (f, scale) in enumerate(zip(feats, self.scales)):
            idx = np.nonzero(levels == lvl)[0]
            if not len(idx):
                continue
            parts.append(roi_align(f, _const(_xp(f), rois[idx]), self.output_size, scale,
                                   self.sampling_ratio))
            where.append(idx)
        # a box whose level has no feature map (levels skipped in featmap_names) stays 0
        missing = np.setdiff1d(np.arange(K), np.concatenate(where) if where else [])
        if len(missing):
            parts.append(ember.zeros((len(missing), C) + self.output_size, dtype=ref.dtype,
                                     device=ref.device))
            where.append(missing)
        if not parts:   # no boxes at all: an empty result that is still part of the graph
            return roi_align(ref, _const(_xp(ref), rois), self.output_size, self.scales[0],
                             self.sampling_ratio)
        order = np.argsort(np.concatenate(where), kind="stable")
        out = ember.cat(parts, 0) if len(parts) > 1 else parts[0]
        return out[_const(_xp(ref), order)]

    def __repr__(self):
        return (f"{type(self).__name__}(featmap_names={self.featmap_names}, "
                f"output_size={self.output_size}, sampling_ratio={self.sampling_ratio})")
