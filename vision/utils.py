"""Image utilities: make_grid, save_image, draw_bounding_boxes, draw_segmentation_masks,
draw_keypoints. Images are tensors (C, H, W) (uint8 for the draw functions), batches (B, C, H, W).

    >>> import ember
    >>> make_grid(ember.zeros(5, 3, 4, 4), nrow=3, padding=1).shape
    (3, 11, 16)
"""
from __future__ import annotations

import math
import os
import warnings

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


def _check_image(image, name="image", channels=(1, 3)):
    """A uint8 or float (C, H, W) tensor -> host array."""
    if not isinstance(image, Tensor):
        raise TypeError(f"{name} should be a Tensor, got {type(image).__name__}")
    if not (image.dtype == ember.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.ndim != 3:
        raise ValueError("Pass individual images, not batches")
    if image.shape[0] not in channels:
        raise ValueError(f"{name} should be (C, H, W) with C in {channels}, got "
                         f"{tuple(image.shape)}")
    return _host(image, name)


def _to_uint8(a):
    """A float image in [0, 1] -> uint8 (x (255 + 1 - 1e-3), truncated), as ``to_dtype``."""
    if a.dtype == np.uint8:
        return a
    return (a * a.dtype.type(255 + 1.0 - 1e-3)).astype(np.uint8)


def _from_uint8(a, dtype):
    if np.dtype(dtype) == np.uint8:
        return a
    return a.astype(dtype) * np.dtype(dtype).type(1.0 / 255)


def _palette(n):
    """The default colours: (i * (2^25 - 1, 2^15 - 1, 2^21 - 1)) mod 255 for object i."""
    p = np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1], dtype=np.int64)
    return [tuple(int(v) for v in (i * p) % 255) for i in range(n)]


def _rgb(color, n):
    from PIL import ImageColor
    if color is None:
        return _palette(n)
    if isinstance(color, list):
        if len(color) < n:
            raise ValueError(f"Number of colors must be equal or larger than the number of "
                             f"objects, but got {len(color)} < {n}.")
        return [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in color[:n]]
    if isinstance(color, tuple) and len(color) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {color}.")
    if not isinstance(color, (tuple, str)):
        raise ValueError(f"colors must be a tuple or a string, or a list thereof, but got "
                         f"{color}.")
    c = ImageColor.getrgb(color) if isinstance(color, str) else tuple(color)
    return [c] * n


def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1,
                        font=None, font_size=None, label_colors=None,
                        label_background_colors=None, fill_labels=False) -> Tensor:
    """Draw XYXY ``boxes`` (N, 4) (coordinates truncated to int) on an image (C, H, W) of uint8
    or float in [0, 1] (C 1 or 3; the result has 3 channels and the input's dtype). Optional
    ``labels`` (N strings) drawn in ``label_colors`` (default: the box colours, black with
    ``fill_labels``) on ``label_background_colors`` boxes when ``fill_labels``; ``colors`` one,
    or one per box (names, hex or RGB tuples; default a fixed palette); translucent ``fill``.

        >>> img = draw_bounding_boxes(ember.zeros(3, 8, 8), ember.tensor([[1, 1, 5, 5]]))
        >>> img.shape, img.dtype == ember.float32
        ((3, 8, 8), True)
    """
    from PIL import Image, ImageDraw, ImageFont
    a = _check_image(image)
    b = _host(boxes, "boxes")
    if b.ndim != 2 or b.shape[-1] != 4:
        raise ValueError(f"boxes should be (N, 4), got shape {b.shape}")
    if (b[:, 0] > b[:, 2]).any() or (b[:, 1] > b[:, 3]).any():
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format: x1 <= x2 and "
                         "y1 <= y2 (XYXY format)")
    n = len(b)
    if n == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn")
        return image
    if labels is not None and len(labels) != n:
        raise ValueError(f"Number of boxes ({n}) and labels ({len(labels)}) mismatch. Please "
                         "specify labels for each box.")
    cols = _rgb(colors, n)
    lcols = _rgb(label_colors or "black", n) if (label_colors or fill_labels) else list(cols)
    bgcols = _rgb(label_background_colors, n) if (fill_labels and label_background_colors) \
        else list(cols)
    if font is None:
        if font_size is not None:
            warnings.warn("Argument 'font_size' will be ignored since 'font' is not set.")
        fnt = ImageFont.load_default()
    else:
        fnt = ImageFont.truetype(font=font, size=font_size or 10)
    if a.shape[0] == 1:
        a = np.repeat(a, 3, 0)
    dtype = a.dtype
    img = Image.fromarray(np.ascontiguousarray(_to_uint8(a).transpose(1, 2, 0)))
    draw = ImageDraw.Draw(img, "RGBA" if fill else None)
    for k, box in enumerate(b.astype(np.int64).tolist()):
        col = cols[k]
        draw.rectangle(box, width=width, outline=col, fill=col + (100,) if fill else None)
        if labels is not None and labels[k] is not None:
            margin = width + 1
            xy = (box[0] + margin, box[1] + margin)
            if fill_labels:
                l, t, r, bt = draw.textbbox(xy, str(labels[k]), font=fnt)
                draw.rectangle((l - 1, t - 1, r + 1, bt + 1), fill=bgcols[k])
            draw.text(xy, str(labels[k]), fill=lcols[k], font=fnt)
    out = np.ascontiguousarray(np.asarray(img).transpose(2, 0, 1))
    return Tensor._make(_from_uint8(out, dtype))


def draw_segmentation_masks(image, masks, alpha: float = 0.8, colors=None) -> Tensor:
    """Overlay boolean ``masks`` (N, H, W) or (H, W) on an image (C, H, W) of uint8 or float
    in [0, 1]: ``out = image * (1 - alpha) + paint * alpha``, where ``paint`` is each mask's
    colour inside it, black where two or more masks overlap, and the image elsewhere (uint8
    results truncated).

        >>> m = ember.tensor([[True, False], [False, False]])
        >>> draw_segmentation_masks(ember.zeros(3, 2, 2), m, alpha=0.5, colors="white")[:, 0, 0]
        tensor([0.5000, 0.5000, 0.5000])
    """
    a = _check_image(image)
    m = _host(masks, "masks")
    if m.ndim == 2:
        m = m[None]
    if m.ndim != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if m.dtype != np.bool_:
        raise ValueError(f"The masks must be of dtype bool. Got {m.dtype}")
    if m.shape[-2:] != a.shape[-2:]:
        raise ValueError("The image and the masks must have the same height and width")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha should be in [0, 1], got {alpha}")
    if len(m) == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn")
        return image
    if a.shape[0] == 1:
        a = np.repeat(a, 3, 0)
    dtype = a.dtype
    paint = a.copy()
    for mask, col in zip(m, _rgb(colors, len(m))):
        c = np.asarray(col[:3], np.float64)
        if dtype.kind == "f":
            c = c / 255
        paint[:, mask] = c.astype(dtype)[:, None]
    paint[:, m.sum(0) > 1] = 0
    ft = dtype if dtype.kind == "f" else np.dtype(np.float32)
    out = a.astype(ft) * ft.type(1 - alpha) + paint.astype(ft) * ft.type(alpha)
    return Tensor._make(out.astype(dtype))


def draw_keypoints(image, keypoints, connectivity=None, colors=None, radius=2, width=3,
                   visibility=None) -> Tensor:
    """Draw ``keypoints`` (K, P, 2) [x, y] (truncated to int) as filled circles of ``colors``,
    the pairs in ``connectivity`` joined by lines; ``visibility`` (K, P) bool hides points (and
    their lines). Image (C, H, W) uint8 or float in [0, 1]."""
    from PIL import Image, ImageDraw
    a = _check_image(image)
    kp = _host(keypoints, "keypoints")
    if kp.ndim != 3 or kp.shape[-1] != 2:
        raise ValueError(f"keypoints must be of shape (num_instances, K, 2), got {kp.shape}")
    vis = np.ones(kp.shape[:-1], bool) if visibility is None else _host(visibility, "visibility")
    if vis.ndim == 3:
        vis = vis[..., 0]
    if vis.shape != kp.shape[:-1]:
        raise ValueError(f"keypoints and visibility must have the same dimensionality for "
                         f"num_instances and K. Got visibility.shape={vis.shape} and "
                         f"keypoints.shape={kp.shape}")
    gray = a.shape[0] == 1
    dtype = a.dtype
    rgb = np.repeat(a, 3, 0) if gray else a
    img = Image.fromarray(np.ascontiguousarray(_to_uint8(rgb).transpose(1, 2, 0)))
    draw = ImageDraw.Draw(img)
    col = _rgb(colors, 1)[0] if colors is not None else None
    for inst, vi in zip(kp.astype(np.int64).tolist(), vis.astype(bool).tolist()):
        for (x, y), v in zip(inst, vi):
            if v:
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=col,
                             outline=None, width=0)
        for i, j in connectivity or []:
            if vi[i] and vi[j]:
                draw.line([tuple(inst[i]), tuple(inst[j])], width=width)
    out = np.asarray(img).transpose(2, 0, 1)
    out = np.ascontiguousarray(out[:1] if gray else out)
    return Tensor._make(_from_uint8(out, dtype))
