"""Learned/random augmentation policies: AutoAugment (ImageNet), RandAugment, TrivialAugmentWide,
AugMix. Geometric ops move boxes, masks and keypoints with the image; colour ops touch images only.
"""
from __future__ import annotations

import math

import numpy as np

from . import functional as F
from ._base import Transform, first_image, is_image_like
from ._image import (InterpolationMode, array_to_pil, as_mode, is_pil, max_value, pil_to_array,
                     wrap, xp_of)

_GEOM = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"}


def apply_op(inpt, op, mag, interpolation, fill):
    """Apply one named augmentation with magnitude ``mag`` to one sample part."""
    if op in _GEOM:
        if op == "ShearX":
            # shear about the top-left corner, as the AutoAugment paper's PIL code does
            return F.affine(inpt, 0.0, [0, 0], 1.0, [math.degrees(math.atan(mag)), 0.0],
                            interpolation, fill, center=[0, 0])
        if op == "ShearY":
            return F.affine(inpt, 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(mag))],
                            interpolation, fill, center=[0, 0])
        if op == "TranslateX":
            return F.affine(inpt, 0.0, [int(mag), 0], 1.0, [0.0, 0.0], interpolation, fill)
        if op == "TranslateY":
            return F.affine(inpt, 0.0, [0, int(mag)], 1.0, [0.0, 0.0], interpolation, fill)
        return F.rotate(inpt, mag, interpolation, fill=fill)
    if not is_image_like(inpt):
        return inpt
    if op == "Identity":
        return inpt
    if op == "Brightness":
        return F.adjust_brightness(inpt, 1.0 + mag)
    if op == "Color":
        return F.adjust_saturation(inpt, 1.0 + mag)
    if op == "Contrast":
        return F.adjust_contrast(inpt, 1.0 + mag)
    if op == "Sharpness":
        return F.adjust_sharpness(inpt, 1.0 + mag)
    if op == "AutoContrast":
        return F.autocontrast(inpt)
    if op == "Invert":
        return F.invert(inpt)
    uint8 = is_pil(inpt) or inpt.array.dtype == np.uint8
    if op == "Solarize":
        scale = 1.0 if uint8 else max_value(inpt.array.dtype) / 255.0
        return F.solarize(inpt, mag * scale)
    # Posterize and Equalize need uint8: round-trip float tensors through uint8
    if uint8:
        return F.posterize(inpt, int(mag)) if op == "Posterize" else F.equalize(inpt)
    u8 = F.convert_image_dtype(inpt, np.uint8)
    out = F.posterize(u8, int(mag)) if op == "Posterize" else F.equalize(u8)
    return type(inpt)(F.convert_image_dtype(out, inpt.array.dtype)) \
        if type(inpt).__name__ in ("Image", "Video") else F.convert_image_dtype(out,
                                                                                 inpt.array.dtype)


_SIGNED = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color",
           "Contrast", "Sharpness"}


def _space(bins, h, w, kind):
    lin = np.linspace
    posterize_div = 6 if kind == "wide" else 4
    post = (8 - np.round(np.arange(bins) / ((bins - 1) / posterize_div))).astype(int)
    if kind == "wide":
        shear, trans, rot, enh = lin(0, 0.99, bins), (lin(0, 32.0, bins),) * 2, \
            lin(0, 135.0, bins), lin(0, 0.99, bins)
    else:
        shear, rot, enh = lin(0, 0.3, bins), lin(0, 30.0, bins), lin(0, 0.9, bins)
        trans = (lin(0, 150.0 / 331.0 * w, bins), lin(0, 150.0 / 331.0 * h, bins))
    return {"Identity": None, "ShearX": shear, "ShearY": shear, "TranslateX": trans[0],
            "TranslateY": trans[1], "Rotate": rot, "Brightness": enh, "Color": enh,
            "Contrast": enh, "Sharpness": enh, "Posterize": post,
            "Solarize": lin(255.0, 0.0, bins), "AutoContrast": None, "Equalize": None,
            "Invert": None}


class _AutoBase(Transform):
    def __init__(self, interpolation=InterpolationMode.NEAREST, fill=None):
        self.interpolation, self.fill = as_mode(interpolation), fill

    def transform(self, inpt, params):
        for op, mag in params["ops"]:
            inpt = apply_op(inpt, op, mag, self.interpolation, self.fill)
        return inpt

    def _mag(self, space, op, bin_, g):
        values = space[op]
        if values is None:
            return 0.0
        m = float(values[bin_])
        if op in _SIGNED and g.random() < 0.5:
            m = -m
        return m


_IMAGENET_POLICY = [
    (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
    (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
    (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
    (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
    (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
    (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
    (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
    (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
    (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
    (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
    (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
    (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
    (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
]


class AutoAugmentPolicy:
    IMAGENET = "imagenet"


class AutoAugment(_AutoBase):
    """AutoAugment with the ImageNet policy: one of 25 learned sub-policies of two ops each."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__(interpolation, fill)
        policy = getattr(policy, "value", policy)
        if str(policy).lower() != "imagenet":
            raise ValueError(f"policy {policy!r} is not supported (only 'imagenet')")
        self.policy = _IMAGENET_POLICY

    def make_params(self, parts):
        h, w = F.canvas_size(first_image(parts))
        g = self._rng()
        space = _space(10, h, w, "auto")
        sub = self.policy[int(g.integers(len(self.policy)))]
        ops = []
        for op, p, bin_ in sub:
            if g.random() <= p:
                ops.append((op, self._mag(space, op, bin_ or 0, g)))
        return {"ops": ops}


class RandAugment(_AutoBase):
    """``num_ops`` uniformly chosen ops at a fixed ``magnitude`` (of ``num_magnitude_bins``)."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__(interpolation, fill)
        if not 0 <= magnitude < num_magnitude_bins:
            raise ValueError(f"magnitude must be in [0, {num_magnitude_bins}), got {magnitude}")
        self.num_ops, self.magnitude, self.bins = num_ops, magnitude, num_magnitude_bins

    def make_params(self, parts):
        h, w = F.canvas_size(first_image(parts))
        g = self._rng()
        space = _space(self.bins, h, w, "rand")
        names = [k for k in space if k != "Invert"]
        ops = []
        for _ in range(self.num_ops):
            op = names[int(g.integers(len(names)))]
            ops.append((op, self._mag(space, op, self.magnitude, g)))
        return {"ops": ops}


class TrivialAugmentWide(_AutoBase):
    """One uniformly chosen op at a uniformly chosen magnitude (wide ranges)."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__(interpolation, fill)
        self.bins = num_magnitude_bins

    def make_params(self, parts):
        h, w = F.canvas_size(first_image(parts))
        g = self._rng()
        space = _space(self.bins, h, w, "wide")
        names = [k for k in space if k != "Invert"]
        op = names[int(g.integers(len(names)))]
        return {"ops": [(op, self._mag(space, op, int(g.integers(self.bins)), g))]}


class AugMix(_AutoBase):
    """AugMix: ``mixture_width`` chains of 1-3 (or ``chain_depth``) ops at ``severity``, mixed
    with Dirichlet weights and blended with the original by a Beta(alpha, alpha) draw.
    Images only (boxes/masks pass through: the mixture has no single geometry)."""

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__(interpolation, fill)
        if not 1 <= severity <= 10:
            raise ValueError(f"severity must be in [1, 10], got {severity}")
        self.severity, self.width, self.depth = severity, mixture_width, chain_depth
        self.alpha, self.all_ops = alpha, all_ops

    def make_params(self, parts):
        h, w = F.canvas_size(first_image(parts))
        g = self._rng()
        space = _space(10, h, w, "rand")
        names = ["AutoContrast", "Equalize", "Posterize", "Rotate", "Solarize", "ShearX",
                 "ShearY", "TranslateX", "TranslateY"]
        if self.all_ops:
            names += ["Brightness", "Color", "Contrast", "Sharpness"]
        chains = []
        for _ in range(self.width):
            depth = self.depth if self.depth > 0 else int(g.integers(1, 4))
            chain = []
            for _ in range(depth):
                op = names[int(g.integers(len(names)))]
                chain.append((op, self._mag(space, op, int(g.integers(self.severity)), g)))
            chains.append(chain)
        ws = g.dirichlet([self.alpha] * self.width)
        m = float(g.beta(self.alpha, self.alpha))
        return {"chains": chains, "ws": ws, "m": m}

    def transform(self, inpt, params):
        if not is_image_like(inpt):
            return inpt
        pil = is_pil(inpt)
        x = wrap(pil_to_array(inpt)) if pil else inpt
        xp = xp_of(x.array)
        orig = x.array.astype(np.float32)
        mix = xp.zeros_like(orig)
        for chain, wgt in zip(params["chains"], params["ws"]):
            y = x
            for op, mag in chain:
                y = apply_op(y, op, mag, self.interpolation, self.fill)
            mix = mix + np.float32(wgt) * y.array.astype(np.float32)
        out = np.float32(params["m"]) * orig + np.float32(1 - params["m"]) * mix
        if x.array.dtype.kind != "f":
            out = xp.clip(xp.round(out), 0, max_value(x.array.dtype))
        out = out.astype(x.array.dtype)
        if pil:
            out = np.asarray(out)
        if pil:
            return array_to_pil(out, inpt.mode if inpt.mode in ("L", "RGB", "RGBA") else None)
        return type(inpt)(wrap(out)) if type(inpt).__name__ in ("Image", "Video") else wrap(out)
