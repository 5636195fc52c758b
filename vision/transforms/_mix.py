"""Batch mixing: MixUp and CutMix on (images (N, C, H, W), labels (N,)) -> (mixed images,
soft labels (N, num_classes)). Each image is mixed with its neighbour in the batch (a roll by one),
with ``lam ~ Beta(alpha, alpha)``.

    >>> import ember
    >>> imgs, labels = MixUp(num_classes=3)(ember.rand(4, 3, 8, 8), ember.tensor([0, 1, 2, 0]))
    >>> labels.shape
    (4, 3)
"""
from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor

from ._image import rng, wrap


class _BatchMix:
    generator = None

    def __init__(self, *, alpha=1.0, num_classes=None, labels_getter="default"):
        if alpha <= 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        if num_classes is None or num_classes < 1:
            raise ValueError(f"num_classes must be a positive int, got {num_classes}")
        self.alpha, self.num_classes = float(alpha), int(num_classes)

    def _check(self, images, labels):
        if not isinstance(images, Tensor) or images.ndim != 4:
            raise ValueError(f"images should be a Tensor (N, C, H, W), got "
                             f"{getattr(images, 'shape', type(images).__name__)}")
        if not isinstance(labels, Tensor) or labels.ndim != 1 or labels.shape[0] != images.shape[0]:
            raise ValueError(f"labels should be a Tensor (N,) matching the batch, got "
                             f"{getattr(labels, 'shape', type(labels).__name__)}")

    def _one_hot(self, labels, dtype):
        xp = np if isinstance(labels.array, np.ndarray) else __import__("cupy")
        eye = xp.eye(self.num_classes, dtype=dtype)
        lab = labels.array.astype(np.int64)
        if lab.min() < 0 or lab.max() >= self.num_classes:
            raise ValueError(f"labels must be in [0, {self.num_classes}), got "
                             f"[{int(lab.min())}, {int(lab.max())}]")
        return eye[lab]

    def __call__(self, *inputs):
        images, labels = inputs if len(inputs) == 2 else inputs[0]
        self._check(images, labels)
        dtype = images.array.dtype if images.array.dtype.kind == "f" else np.float32
        lam = float(rng(self.generator).beta(self.alpha, self.alpha))
        x = images.array
        rolled = x[np.r_[x.shape[0] - 1, 0:x.shape[0] - 1]] if x.shape[0] else x
        out, lam = self._mix(x, rolled, lam)
        oh = self._one_hot(labels, dtype)
        soft = oh * dtype.type(lam) + oh[np.r_[len(oh) - 1, 0:len(oh) - 1]] * dtype.type(1 - lam)
        return wrap(out), wrap(soft)


class MixUp(_BatchMix):
    """``lam * x + (1 - lam) * x_rolled`` and the same mix of one-hot labels."""

    def _mix(self, x, rolled, lam):
        if x.dtype.kind == "f":
            return (x * x.dtype.type(lam) + rolled * x.dtype.type(1 - lam)), lam
        out = np.round(x.astype(np.float32) * lam + rolled.astype(np.float32) * (1 - lam))
        return out.astype(x.dtype), lam


class CutMix(_BatchMix):
    """Paste a box of area ``1 - lam`` from the rolled batch; labels mixed by the exact area."""

    def _mix(self, x, rolled, lam):
        H, W = x.shape[-2:]
        g = rng(self.generator)
        cy, cx = int(g.integers(H)), int(g.integers(W))
        r = 0.5 * math.sqrt(1.0 - lam)
        rh, rw = int(r * H), int(r * W)
        y0, y1 = max(cy - rh, 0), min(cy + rh, H)
        x0, x1 = max(cx - rw, 0), min(cx + rw, W)
        out = x.copy()
        out[..., y0:y1, x0:x1] = rolled[..., y0:y1, x0:x1]
        lam = 1.0 - (y1 - y0) * (x1 - x0) / float(H * W)
        return out, lam
