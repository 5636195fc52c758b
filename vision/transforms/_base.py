"""The ``Transform`` base: flatten a sample (tuples, lists, dicts), find its typed parts, draw the
random parameters once from the reference image, apply them to every part, rebuild the sample."""
from __future__ import annotations

from ember._tensor import Tensor

from ._image import is_pil, rng
from .parts import BoundingBoxes, Image, KeyPoints, Mask, Video


def flatten(sample):
    """-> (leaves, rebuild) where ``rebuild(new_leaves)`` restores the nesting."""
    if isinstance(sample, (tuple, list)):
        parts = [flatten(s) for s in sample]
        sizes = [len(p[0]) for p in parts]
        leaves = [x for p in parts for x in p[0]]

        def rebuild(new):
            out, i = [], 0
            for (_, rb), n in zip(parts, sizes):
                out.append(rb(new[i:i + n]))
                i += n
            return type(sample)(out)
        return leaves, rebuild
    if isinstance(sample, dict):
        keys = list(sample)
        parts = [flatten(sample[k]) for k in keys]
        sizes = [len(p[0]) for p in parts]
        leaves = [x for p in parts for x in p[0]]

        def rebuild(new):
            out, i = {}, 0
            for k, (_, rb), n in zip(keys, parts, sizes):
                out[k] = rb(new[i:i + n])
                i += n
            return type(sample)(out) if type(sample) is not dict else out
        return leaves, rebuild
    return [sample], (lambda new: new[0])


_TYPED = (Image, Video, Mask, BoundingBoxes, KeyPoints)


def kinds(leaves):
    """Mark which leaves a transform touches: typed parts and PIL images always; the first plain
    tensor too when no image is marked (so ``t(img_tensor)`` and ``t(img, label)`` work)."""
    explicit = any(is_pil(x) or isinstance(x, (Image, Video)) for x in leaves)
    out, taken = [], explicit
    for x in leaves:
        if is_pil(x) or isinstance(x, _TYPED):
            out.append(True)
        elif isinstance(x, Tensor) and not taken:
            out.append(True)
            taken = True
        else:
            out.append(False)
    return out


def is_image_like(x):
    return is_pil(x) or (isinstance(x, Tensor) and not isinstance(
        x, (Mask, BoundingBoxes, KeyPoints)))


class Transform:
    """Base class. Subclasses set ``make_params(parts) -> dict`` and ``transform(part, params)``.

    Call with one sample (an image, or a tuple/dict of typed parts) or several positional parts.
    Randomness comes from ``self.generator`` (an ``ember.Generator``) or ember's default one.
    """

    generator = None

    def _rng(self):
        return rng(self.generator)

    def make_params(self, parts) -> dict:
        return {}

    def transform(self, inpt, params):
        return inpt

    def __call__(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        leaves, rebuild = flatten(sample)
        mask = kinds(leaves)
        parts = [x for x, m in zip(leaves, mask) if m]
        if not parts:
            return sample
        params = self.make_params(parts)
        if params is None:      # skipped (e.g. a random flip that did not fire)
            return sample
        out = [self.transform(x, params) if m else x for x, m in zip(leaves, mask)]
        return rebuild(out)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        return f"{type(self).__name__}({self.extra_repr()})"


def first_image(parts):
    for p in parts:
        if is_image_like(p):
            return p
    for p in parts:
        if isinstance(p, (Mask, BoundingBoxes, KeyPoints)):
            return p
    raise TypeError("no image found in the sample")
