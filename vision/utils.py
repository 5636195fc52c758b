"""Image utilities: make_grid, save_image, draw_bounding_boxes, draw_segmentation_masks,
draw_keypoints. Images are tensors (C, H, W) (uint8 for the draw functions), batches (B, C, H, W).

    >>> import ember
    >>> make_grid(ember.zeros(5, 3, 4, 4), nrow=3, padding=1).shape
    (3, 11, 16)
"""
from __future__ import annotations

import math
import os

import numpy as np

import ember
from ember._tensor import Tensor

__all__ = ["make_grid", "save_image", "draw_bounding_boxes", "draw_segmentation_masks",
           "draw_keypoints"]


def _host(t, name):
    if isinstance(t, Tensor):
        a = t.detach().array
        return np.asarray(a.get() if hasattr(a, "get") else a)
    if isinstance(t, (list, tuple)) and t and isinstance(t[0], Tensor):
        return np.stack([_host(x, name) for x in t])
    if isinstance(t, np.ndarray):
        return t
    raise TypeError(f"{name} should be a Tensor or a list of Tensors, got {type(t).__name__}")


def make_grid(tensor, nrow: int = 8, padding: int = 2, normalize: bool = False,
              value_range=None, scale_each: bool = False, pad_value: float = 0.0) -> Tensor:
    """Tile a batch (B, C, H, W) (or a list of (C, H, W)) into one (C, H', W') image, ``nrow``
    images per row, ``padding`` pixels of ``pad_value`` between them. ``normalize`` rescales to
    [0, 1] by ``value_range`` (default min/max, per image with ``scale_each``)."""
    a = _host(tensor, "tensor")
    if a.ndim == 2:
        a = a[None]
    if a.ndim == 3:
        a = a[None] if a.shape[0] in (1, 3) else a[:, None]
    if a.ndim != 4:
        raise ValueError(f"tensor should be (B, C, H, W), got shape {a.shape}")
    if a.shape[1] == 1:
        a = np.repeat(a, 3, axis=1)
    if normalize:
        a = a.astype(np.float32 if a.dtype.kind != "f" else a.dtype)

        def norm(x):
            lo, hi = value_range if value_range is not None else (x.min(), x.max())
            return np.clip(x, lo, hi).__sub__(lo) / max(float(hi - lo), 1e-5)
        a = np.stack([norm(x) for x in a]) if scale_each else norm(a)
        a = a.astype(np.float32 if np.dtype(a.dtype) != np.float64 else np.float64)
    b, c, h, w = a.shape
    if b == 1:
        return Tensor._make(a[0].copy())
    ncol = min(nrow, b)
    nrows = int(math.ceil(b / ncol))
    H, W = h + padding, w + padding
    grid = np.full((c, nrows * H + padding, ncol * W + padding), pad_value, dtype=a.dtype)
    for k in range(b):
        r, q = divmod(k, ncol)
        grid[:, r * H + padding:r * H + padding + h, q * W + padding:q * W + padding + w] = a[k]
    return Tensor._make(grid)


def save_image(tensor, fp, format=None, **kwargs) -> None:
    """``make_grid`` then save as an image file (float values in [0, 1] -> uint8)."""
    from PIL import Image
    grid = _host(make_grid(tensor, **kwargs), "tensor")
    if grid.dtype.kind == "f":
        grid = np.clip(grid * 255 + 0.5, 0, 255).astype(np.uint8)
    hwc = grid.transpose(1, 2, 0).astype(np.uint8)
    Image.fromarray(hwc).save(os.fspath(fp) if isinstance(fp, (str, os.PathLike)) else fp,
                              format=format)


def _check_uint8_image(image, name="image"):
    if not isinstance(image, Tensor):
        raise TypeError(f"{name} should be a Tensor, got {type(image).__name__}")
    if image.dtype != ember.uint8:
        raise ValueError(f"{name} should be uint8, got {image.dtype}")
    if image.ndim != 3 or image.shape[0] not in (1, 3):
        raise ValueError(f"{name} should be (C, H, W) with C 1 or 3, got {tuple(image.shape)}")
    return _host(image, name)


def _rgb(color, n):
    from PIL import ImageColor
    if color is None:
        rng = np.random.default_rng(0)
        return [tuple(int(v) for v in rng.integers(0, 256, 3)) for _ in range(n)]
    if isinstance(color, list):
        if len(color) < n:
            raise ValueError(f"colors has {len(color)} entries, fewer than the {n} items")
        return [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in color[:n]]
    c = ImageColor.getrgb(color) if isinstance(color, str) else tuple(color)
    return [c] * n


def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1,
                        font=None, font_size=None) -> Tensor:
    """Draw XYXY ``boxes`` (N, 4) on a uint8 image (C, H, W); optional ``labels`` (N strings),
    ``colors`` (one, or one per box: names, hex or RGB tuples), translucent ``fill``."""
    from PIL import Image, ImageDraw, ImageFont
    a = _check_uint8_image(image)
    b = _host(boxes, "boxes")
    if b.ndim != 2 or b.shape[-1] != 4:
        raise ValueError(f"boxes should be (N, 4), got shape {b.shape}")
    if (b[:, 0] > b[:, 2]).any() or (b[:, 1] > b[:, 3]).any():
        raise ValueError("boxes need x1 <= x2 and y1 <= y2 (XYXY format)")
    if labels is not None and len(labels) != len(b):
        raise ValueError(f"labels has {len(labels)} entries for {len(b)} boxes")
    gray = a.shape[0] == 1
    img = Image.fromarray(np.ascontiguousarray(np.repeat(a, 3, 0) if gray else a)
                          .transpose(1, 2, 0))
    draw = ImageDraw.Draw(img, "RGBA" if fill else None)
    fnt = ImageFont.load_default() if font is None else ImageFont.truetype(font, font_size or 10)
    for k, (box, col) in enumerate(zip(b.tolist(), _rgb(colors, len(b)))):
        if fill:
            draw.rectangle(box, width=width, outline=col, fill=col + (100,))
        else:
            draw.rectangle(box, width=width, outline=col)
        if labels is not None:
            draw.text((box[0] + width, box[1] + width), str(labels[k]), fill=col, font=fnt)
    out = np.asarray(img).transpose(2, 0, 1)
    return Tensor._make(np.ascontiguousarray(out[:1] if gray else out))


def draw_segmentation_masks(image, masks, alpha: float = 0.8, colors=None) -> Tensor:
    """Overlay boolean ``masks`` (N, H, W) or (H, W): ``out = image * (1 - alpha) + color *
    alpha`` inside each mask, applied in order."""
    a = _check_uint8_image(image)
    m = _host(masks, "masks")
    if m.ndim == 2:
        m = m[None]
    if m.dtype != np.bool_:
        raise ValueError(f"masks should be bool, got {m.dtype}")
    if m.shape[-2:] != a.shape[-2:]:
        raise ValueError(f"masks {m.shape[-2:]} and image {a.shape[-2:]} need the same size")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha should be in [0, 1], got {alpha}")
    out = (np.repeat(a, 3, 0) if a.shape[0] == 1 else a).astype(np.float32)
    for mask, col in zip(m, _rgb(colors, len(m))):
        c = np.asarray(col[:3], np.float32)[:, None]
        out[:, mask] = out[:, mask] * (1 - alpha) + c * alpha
    return Tensor._make(np.round(out).clip(0, 255).astype(np.uint8))


def draw_keypoints(image, keypoints, connectivity=None, colors=None, radius=2,
                   width=3) -> Tensor:
    """Draw ``keypoints`` (K, P, 2) [x, y] as filled circles, joined by ``connectivity`` pairs."""
    from PIL import Image, ImageDraw
    a = _check_uint8_image(image)
    kp = _host(keypoints, "keypoints")
    if kp.ndim != 3 or kp.shape[-1] != 2:
        raise ValueError(f"keypoints should be (K, P, 2), got shape {kp.shape}")
    gray = a.shape[0] == 1
    img = Image.fromarray(np.ascontiguousarray(np.repeat(a, 3, 0) if gray else a)
                          .transpose(1, 2, 0))
    draw = ImageDraw.Draw(img)
    col = _rgb(colors if colors is not None else "red", 1)[0]
    for inst in kp.tolist():
        for x, y in inst:
            draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=col, outline=col)
        for i, j in connectivity or []:
            draw.line([tuple(inst[i]), tuple(inst[j])], fill=col, width=width)
    out = np.asarray(img).transpose(2, 0, 1)
    return Tensor._make(np.ascontiguousarray(out[:1] if gray else out))
