"""Detection ops and shared model blocks.

Boxes are (N, 4) tensors in XYXY unless said otherwise. Box arithmetic, ``roi_align``,
``roi_pool`` and ``sigmoid_focal_loss`` are built from ember ops, so they are differentiable;
``nms``/``batched_nms`` return int64 indices.

    >>> import ember
    >>> box_iou(ember.tensor([[0., 0., 2., 2.]]), ember.tensor([[1., 1., 3., 3.]])).tolist()
    [[0.1428571492433548]]
"""
from __future__ import annotations



import numpy as np

import ember
from ember import nn
from ember._tensor import Tensor
from ember.nn import functional as F

__all__ = ["box_convert", "box_area", "box_iou", "generalized_box_iou", "nms", "batched_nms",
           "clip_boxes_to_image", "remove_small_boxes", "roi_align", "roi_pool",
           "sigmoid_focal_loss", "StochasticDepth", "stochastic_depth", "Conv2dNormActivation",
           "SqueezeExcitation", "MLP", "RoIAlign", "RoIPool"]


def _boxes(b, name="boxes"):
    if not isinstance(b, Tensor):
        raise TypeError(f"{name} should be a Tensor (N, 4), got {type(b).__name__}")
    if b.ndim != 2 or b.shape[-1] != 4:
        raise ValueError(f"{name} should have shape (N, 4), got {tuple(b.shape)}")
    return b


def _host(t):
    a = t.detach().array
    return np.asarray(a.get() if hasattr(a, "get") else a)


# --------------------------------------------------------------------------- box arithmetic

def box_convert(boxes, in_fmt: str, out_fmt: str) -> Tensor:
    """Convert (N, 4) boxes between "xyxy", "xywh" and "cxcywh"."""
    fmts = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in fmts or out_fmt not in fmts:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt!r} and "
                         f"out_fmt {out_fmt!r}; formats are {fmts}")
    _boxes(boxes)
    if in_fmt == out_fmt:
        return boxes.clone()
    a, b, c, d = boxes.unbind(-1)
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    if out_fmt == "xywh":
        a, b, c, d = a, b, c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return ember.stack([a, b, c, d], dim=-1)


def box_area(boxes) -> Tensor:
    """Areas (N,) of XYXY boxes."""
    _boxes(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _inter_union(b1, b2):
    a1, a2 = box_area(b1), box_area(b2)
    lt = ember.maximum(b1[:, None, :2], b2[None, :, :2])
    rb = ember.minimum(b1[:, None, 2:], b2[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter, a1[:, None] + a2[None, :] - inter


def box_iou(boxes1, boxes2) -> Tensor:
    """Pairwise IoU (N, M) of XYXY boxes."""
    inter, union = _inter_union(_boxes(boxes1, "boxes1"), _boxes(boxes2, "boxes2"))
    return inter / union


def generalized_box_iou(boxes1, boxes2) -> Tensor:
    """Pairwise generalized IoU (N, M): IoU minus the empty share of the enclosing box."""
    inter, union = _inter_union(_boxes(boxes1, "boxes1"), _boxes(boxes2, "boxes2"))
    iou = inter / union
    lt = ember.minimum(boxes1[:, None, :2], boxes2[None, :, :2])
    rb = ember.maximum(boxes1[:, None, 2:], boxes2[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    area = wh[..., 0] * wh[..., 1]
    return iou - (area - union) / area


def clip_boxes_to_image(boxes, size) -> Tensor:
    """Clip XYXY boxes (..., 4) to an image of ``size`` (H, W)."""
    h, w = size
    x = boxes[..., 0::2].clamp(min=0, max=w)
    y = boxes[..., 1::2].clamp(min=0, max=h)
    return ember.stack([x[..., 0], y[..., 0], x[..., 1], y[..., 1]], dim=-1)


def remove_small_boxes(boxes, min_size: float) -> Tensor:
    """Indices (int64) of the boxes whose sides are both >= ``min_size``."""
    b = _host(_boxes(boxes))
    keep = np.nonzero(((b[:, 2] - b[:, 0]) >= min_size) & ((b[:, 3] - b[:, 1]) >= min_size))[0]
    return ember.tensor(keep.astype(np.int64), device=boxes.device)


def nms(boxes, scores, iou_threshold: float) -> Tensor:
    """Greedy non-maximum suppression: keep the best-scoring box, drop those overlapping it by
    IoU > ``iou_threshold``, repeat. Returns int64 indices sorted by decreasing score."""
    b = _host(_boxes(boxes)).astype(np.float64)
    s = _host(scores)
    if s.ndim != 1 or len(s) != len(b):
        raise ValueError(f"scores should have shape ({len(b)},), got {s.shape}")
    order = np.argsort(-s, kind="stable")
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    keep = []
    alive = np.ones(len(b), dtype=bool)
    for pos, i in enumerate(order):
        if not alive[i]:
            continue
        keep.append(i)
        rest = order[pos + 1:]
        rest = rest[alive[rest]]
        if not len(rest):
            continue
        lt = np.maximum(b[i, :2], b[rest, :2])
        rb = np.minimum(b[i, 2:], b[rest, 2:])
        wh = np.clip(rb - lt, 0, None)
        inter = wh[:, 0] * wh[:, 1]
        iou = inter / (area[i] + area[rest] - inter)
        alive[rest[iou > iou_threshold]] = False
    return ember.tensor(np.asarray(keep, dtype=np.int64), device=boxes.device)


def batched_nms(boxes, scores, idxs, iou_threshold: float) -> Tensor:
    """NMS within each category ``idxs`` (N,) independently (boxes of different categories never
    suppress each other). Returns int64 indices sorted by decreasing score."""
    b = _host(_boxes(boxes)).astype(np.float64)
    if b.size == 0:
        return ember.tensor(np.zeros(0, np.int64), device=boxes.device)
    cats = _host(idxs).astype(np.float64)
    offset = cats[:, None] * (b.max() - b.min() + 1)
    shifted = ember.tensor(b - b.min() + offset)
    return nms(shifted, scores, iou_threshold).to(boxes.device)


# ---------------------------------------------------------------------------- RoI pooling

def _rois(boxes, name="boxes"):
    """(K, 5) [batch, x1, y1, x2, y2] from a (K, 5) tensor or a list of (Ki, 4) tensors."""
    if isinstance(boxes, (list, tuple)):
        parts = [np.concatenate([np.full((len(_host(b)), 1), i, np.float64),
                                 _host(b).astype(np.float64)], axis=1)
                 for i, b in enumerate(boxes)]
        return np.concatenate(parts) if parts else np.zeros((0, 5))
    r = _host(boxes).astype(np.float64)
    if r.ndim != 2 or r.shape[1] != 5:
        raise ValueError(f"{name} should be (K, 5) [batch_index, x1, y1, x2, y2] or a list of "
                         f"(Ki, 4) tensors, got shape {r.shape}")
    return r


def _pair(v):
    return (int(v), int(v)) if isinstance(v, (int, np.integer)) else (int(v[0]), int(v[1]))


def roi_align(input, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Tensor:
    """RoIAlign (Mask R-CNN): average of bilinear samples on a regular grid in each of the
    ``output_size`` bins of each box -> (K, C, ph, pw). ``sampling_ratio`` samples per bin side
    (-1: ``ceil(box side / bins)``); ``aligned`` shifts boxes by -0.5 pixel. Differentiable in
    ``input``."""
    if input.ndim != 4:
        raise ValueError(f"input should be (N, C, H, W), got {tuple(input.shape)}")
    ph, pw = _pair(output_size)
    N, C, H, W = input.shape
    r = _rois(boxes)
    K = len(r)
    off = 0.5 if aligned else 0.0
    x1, y1 = r[:, 1] * spatial_scale - off, r[:, 2] * spatial_scale - off
    rw, rh = r[:, 3] * spatial_scale - off - x1, r[:, 4] * spatial_scale - off - y1
    if not aligned:
        rw, rh = np.maximum(rw, 1.0), np.maximum(rh, 1.0)
    bh, bw = rh / ph, rw / pw
    gh = np.full(K, sampling_ratio) if sampling_ratio > 0 else np.ceil(rh / ph).astype(int)
    gw = np.full(K, sampling_ratio) if sampling_ratio > 0 else np.ceil(rw / pw).astype(int)
    gh, gw = np.maximum(gh, 0).astype(int), np.maximum(gw, 0).astype(int)
    Gh, Gw = max(int(gh.max()) if K else 1, 1), max(int(gw.max()) if K else 1, 1)
    # sample coordinates (K, ph, Gh) and (K, pw, Gw); samples beyond a box's grid get weight 0
    iy, ix = np.arange(Gh), np.arange(Gw)
    ys = y1[:, None, None] + np.arange(ph)[None, :, None] * bh[:, None, None] + \
        (iy[None, None, :] + 0.5) * (bh / np.maximum(gh, 1))[:, None, None]
    xs = x1[:, None, None] + np.arange(pw)[None, :, None] * bw[:, None, None] + \
        (ix[None, None, :] + 0.5) * (bw / np.maximum(gw, 1))[:, None, None]
    vy = iy[None, None, :] < gh[:, None, None]
    vx = ix[None, None, :] < gw[:, None, None]

    def taps(v, size, valid):
        out_of = (v < -1.0) | (v > size) | ~valid
        v = np.maximum(v, 0.0)
        lo = np.floor(v).astype(np.int64)
        top = lo >= size - 1
        lo = np.where(top, size - 1, lo)
        hi = np.where(top, size - 1, lo + 1)
        v = np.where(top, lo.astype(np.float64), v)
        frac = v - lo
        return lo, hi, 1.0 - frac, frac, out_of

    yl, yh, wyl, wyh, oy = taps(ys, H, vy)
    xl, xh, wxl, wxh, ox = taps(xs, W, vx)
    count = np.maximum(gh * gw, 1).astype(np.float64)
    b = r[:, 0].astype(np.int64)
    # (K, ph, Gh, pw, Gw) per tap
    idx, wts = [], []
    for yy, wy in ((yl, wyl), (yh, wyh)):
        for xx, wx in ((xl, wxl), (xh, wxh)):
            lin = (b[:, None, None, None, None] * H + yy[:, :, :, None, None]) * W + \
                xx[:, None, None, :, :]
            wgt = wy[:, :, :, None, None] * wx[:, None, None, :, :]
            dead = oy[:, :, :, None, None] | ox[:, None, None, :, :]
            wgt = np.where(dead, 0.0, wgt) / count[:, None, None, None, None]
            idx.append(lin)
            wts.append(wgt)
    idx = np.stack(idx, -1).transpose(0, 1, 3, 2, 4, 5).reshape(K * ph * pw, -1)
    wts = np.stack(wts, -1).transpose(0, 1, 3, 2, 4, 5).reshape(K * ph * pw, -1)
    flat = input.permute(0, 2, 3, 1).reshape(N * H * W, C)
    xp = ember._backend.namespace(input.array)
    gathered = flat[Tensor._make(xp.asarray(idx.reshape(-1)))].reshape(K * ph * pw, -1, C)
    wt = Tensor._make(xp.asarray(wts.astype(input.array.dtype)))
    out = (gathered * wt.unsqueeze(-1)).sum(dim=1)          # (K*ph*pw, C)
    return out.reshape(K, ph, pw, C).permute(0, 3, 1, 2)


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def roi_pool(input, boxes, output_size, spatial_scale: float = 1.0) -> Tensor:
    """RoIPool (Fast R-CNN): max over each of the ``output_size`` bins of each box (rounded to
    pixels) -> (K, C, ph, pw); empty bins give 0. Differentiable in ``input``."""
    if input.ndim != 4:
        raise ValueError(f"input should be (N, C, H, W), got {tuple(input.shape)}")
    ph, pw = _pair(output_size)
    N, C, H, W = input.shape
    r = _rois(boxes)
    K = len(r)
    x = _host(input)
    xs, ys = _round_half_away(r[:, 1] * spatial_scale), _round_half_away(r[:, 2] * spatial_scale)
    xe, ye = _round_half_away(r[:, 3] * spatial_scale), _round_half_away(r[:, 4] * spatial_scale)
    rw, rh = np.maximum(xe - xs + 1, 1), np.maximum(ye - ys + 1, 1)
    bh, bw = rh / ph, rw / pw
    lin = np.zeros((K, C, ph, pw), np.int64)
    valid = np.zeros((K, 1, ph, pw), bool)
    for k in range(K):
        n = int(r[k, 0])
        for i in range(ph):
            h0 = int(min(max(np.floor(i * bh[k]) + ys[k], 0), H))
            h1 = int(min(max(np.ceil((i + 1) * bh[k]) + ys[k], 0), H))
            for j in range(pw):
                w0 = int(min(max(np.floor(j * bw[k]) + xs[k], 0), W))
                w1 = int(min(max(np.ceil((j + 1) * bw[k]) + xs[k], 0), W))
                if h1 <= h0 or w1 <= w0:
                    continue
                win = x[n, :, h0:h1, w0:w1].reshape(C, -1)
                a = win.argmax(1)
                hh, ww = h0 + a // (w1 - w0), w0 + a % (w1 - w0)
                lin[k, :, i, j] = ((n * C + np.arange(C)) * H + hh) * W + ww
                valid[k, 0, i, j] = True
    xp = ember._backend.namespace(input.array)
    out = input.reshape(-1)[Tensor._make(xp.asarray(lin.reshape(-1)))].reshape(K, C, ph, pw)
    return out * Tensor._make(xp.asarray(valid.astype(input.array.dtype)))


class RoIAlign(nn.Module):
    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False):
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale
        self.sampling_ratio, self.aligned = sampling_ratio, aligned

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale,
                         self.sampling_ratio, self.aligned)


class RoIPool(nn.Module):
    def __init__(self, output_size, spatial_scale):
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale

    def forward(self, input, rois):
        return roi_pool(input, rois, self.output_size, self.spatial_scale)


# ---------------------------------------------------------------------------------- losses

def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2.0,
                       reduction: str = "none") -> Tensor:
    """Focal loss (RetinaNet) on logits: ``BCE * (1 - p_t) ** gamma``, weighted by ``alpha`` for
    positives and ``1 - alpha`` for negatives (``alpha < 0`` disables it)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid Value for arg 'reduction': '{reduction}'; supported "
                         "reduction modes: 'none', 'mean', 'sum'")
    p = ember.sigmoid(inputs)
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# -------------------------------------------------------------------------- model blocks

def stochastic_depth(input, p: float, mode: str, training: bool = True) -> Tensor:
    """Drop whole residual branches: per sample (``mode="row"``) or for the batch ("batch"),
    with probability ``p``, scaling survivors by ``1 / (1 - p)``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival = 1.0 - p
    shape = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = ember.empty(shape, dtype=input.dtype, device=input.device).bernoulli_(survival)
    if survival > 0.0:
        noise = noise / survival
    return input * noise


class StochasticDepth(nn.Module):
    """Module form of ``stochastic_depth`` (arguments checked at construction)."""

    def __init__(self, p: float, mode: str):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
        if mode not in ("batch", "row"):
            raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
        self.p, self.mode = p, mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def extra_repr(self):
        return f"p={self.p}, mode={self.mode}"


class Conv2dNormActivation(nn.Sequential):
    """Conv2d -> norm (BatchNorm2d) -> activation (ReLU); children "0", "1", "2" as torchvision,
    so state-dict keys match. ``padding`` defaults to "same" for odd kernels."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None,
                 groups=1, norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1,
                 inplace=True, bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation if isinstance(kernel_size, int) else \
                tuple((k - 1) // 2 * dilation for k in kernel_size)
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding,
                            dilation=dilation, groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer() if inplace is None else
                          _act(activation_layer, inplace))
        super().__init__(*layers)
        self.out_channels = out_channels


def _dropout(p, inplace):
    """torchvision's MLP hands ``inplace`` to its Dropout layers too (it shows in the repr)."""
    return nn.Dropout(p) if inplace is None else nn.Dropout(p, inplace=inplace)


def _act(layer, inplace):
    try:
        return layer(inplace=inplace)
    except TypeError:
        return layer()


class SqueezeExcitation(nn.Module):
    """``x * scale_activation(fc2(activation(fc1(avgpool(x)))))`` with 1x1 convs fc1/fc2."""

    def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU,
                 scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, input):
        s = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))
        return input * s


class MLP(nn.Sequential):
    """Linear -> [norm] -> activation -> dropout per hidden size; the last layer is Linear ->
    dropout (indices as torchvision's, so state-dict keys match)."""

    def __init__(self, in_channels, hidden_channels, norm_layer=None, activation_layer=nn.ReLU,
                 inplace=None, bias=True, dropout=0.0):
        layers, d = [], in_channels
        for h in hidden_channels[:-1]:
            layers.append(nn.Linear(d, h, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(h))
            layers.append(activation_layer() if inplace is None else
                          _act(activation_layer, inplace))
            layers.append(_dropout(dropout, inplace))
            d = h
        layers.append(nn.Linear(d, hidden_channels[-1], bias=bias))
        layers.append(_dropout(dropout, inplace))
        super().__init__(*layers)



