"""The ``Transform`` base: flatten a sample (tuples, lists, dicts), find its typed parts, draw the
random parameters once from the reference image, apply them to every part, rebuild the sample."""
from __future__ import annotations

from ember._tensor import Tensor

from ._image import is_pil, rng
from .parts import BoundingBoxes, Image, KeyPoints, Mask, TVTensor, Video


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


def is_pure_tensor(x) -> bool:
    """A plain tensor (not one of the typed parts)."""
    return isinstance(x, Tensor) and not isinstance(x, TVTensor)


def kinds(leaves, accepts=None):
    """Mark which leaves a transform touches: the ones ``accepts`` (default: PIL images and
    tensors), except that of the plain tensors only the first counts, and only when no image or
    video is marked (so ``t(img_tensor)`` and ``t(img, label)`` work)."""
    accepts = accepts or (lambda x: is_pil(x) or isinstance(x, Tensor))
    taken = any(is_pil(x) or isinstance(x, (Image, Video)) for x in leaves)
    out = []
    for x in leaves:
        ok = bool(accepts(x))
        if ok and is_pure_tensor(x):
            ok, taken = not taken, True
        out.append(ok)
    return out


def is_image_like(x):
    return is_pil(x) or (isinstance(x, Tensor) and not isinstance(
        x, (Mask, BoundingBoxes, KeyPoints)))


class Transform:
    """Base class (torchvision's ``v2.Transform``). Subclasses set ``make_params(parts) -> dict``
    and ``transform(part, params)``; which leaves count as parts is ``accepts(leaf)`` (or a
    ``_transformed_types`` tuple of types / predicates, as in torchvision).

    Call with one sample (an image, or a tuple/dict of typed parts) or several positional parts.
    Randomness comes from ``self.generator`` (an ``ember.Generator``) or ember's default one.
    """

    generator = None
    _transformed_types = None

    def _rng(self):
        return rng(self.generator)

    def accepts(self, inpt) -> bool:
        """Whether this transform handles a leaf of this kind (PIL images and tensors)."""
        if self._transformed_types is not None:
            return check_type(inpt, self._transformed_types)
        return is_pil(inpt) or isinstance(inpt, Tensor)

    def check_inputs(self, flat_inputs) -> None:
        """Raise if the sample's leaves cannot go through this transform."""

    def make_params(self, parts) -> dict:
        return {}

    def transform(self, inpt, params):
        return inpt

    def _call_kernel(self, functional, inpt, *args, **kwargs):
        return functional(inpt, *args, **kwargs)

    def __call__(self, *inputs):
        return self.forward(*inputs)

    def forward(self, *inputs):
        """Flatten the sample, draw ``make_params`` once from the parts this transform
        ``accepts``, ``transform`` each of them, rebuild the sample (subclasses may override
        this, as in torchvision, or ``make_params``/``transform``)."""
        sample = inputs if len(inputs) > 1 else inputs[0]
        leaves, rebuild = flatten(sample)
        self.check_inputs(leaves)
        mask = kinds(leaves, self.accepts)
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


def query_size(flat_inputs):
    """(H, W) shared by the images, videos, masks, boxes and keypoints of a sample."""
    from .functional import canvas_size
    sizes = {tuple(canvas_size(x)) for x in flat_inputs
             if is_pil(x) or isinstance(x, _TYPED) or is_pure_tensor(x)}
    if not sizes:
        raise TypeError("No image, video, mask, bounding box or keypoints was found in the sample")
    if len(sizes) > 1:
        raise ValueError(f"Found multiple HxW dimensions in the sample: {sorted(sizes)}")
    return sizes.pop()


def query_chw(flat_inputs):
    """(C, H, W) shared by the images and videos of a sample."""
    from ._image import get_dimensions
    dims = {tuple(get_dimensions(x)) for x in flat_inputs
            if is_pil(x) or isinstance(x, (Image, Video)) or is_pure_tensor(x)}
    if not dims:
        raise TypeError("No image or video was found in the sample")
    if len(dims) > 1:
        raise ValueError(f"Found multiple CxHxW dimensions in the sample: {sorted(dims)}")
    return dims.pop()


def check_type(obj, types) -> bool:
    return any(isinstance(obj, t) if isinstance(t, type) else t(obj) for t in types)


def has_any(flat_inputs, *types) -> bool:
    return any(check_type(x, types) for x in flat_inputs)


def has_all(flat_inputs, *types) -> bool:
    return all(any(check_type(x, (t,)) for x in flat_inputs) for t in types)


def get_bounding_boxes(flat_inputs):
    for x in flat_inputs:
        if isinstance(x, BoundingBoxes):
            return x
    raise ValueError("No bounding boxes were found in the sample")


def get_keypoints(flat_inputs):
    for x in flat_inputs:
        if isinstance(x, KeyPoints):
            return x
    raise ValueError("No keypoints were found in the sample")


def fill_for(fill, inpt):
    """The fill value for one leaf: ``fill`` itself, or from a dict keyed by part type (or
    "others")."""
    if not isinstance(fill, dict):
        return fill
    for key, value in fill.items():
        if isinstance(key, type) and type(inpt) is key:
            return value
    if is_pil(inpt) or is_pure_tensor(inpt):
        for key, value in fill.items():
            if isinstance(key, type) and isinstance(inpt, key):
                return value
    return fill.get("others", None)
