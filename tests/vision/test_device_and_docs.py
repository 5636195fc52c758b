"""Docstring examples of the vision modules run as doctests; tensor transforms and ops on every
backend (the CUDA leg runs under -m cuda)."""
import doctest
import importlib

import numpy as np
import pytest

import ember
from ember.vision import ops
from ember.vision import transforms as T
from ember.vision.transforms import functional as F
from ember.vision.transforms.parts import BoundingBoxes, Video

MODULES = ["ember.vision.transforms", "ember.vision.transforms.functional",
           "ember.vision.transforms.transforms", "ember.vision.transforms.parts",
           "ember.vision.transforms._geometry", "ember.vision.transforms._color",
           "ember.vision.transforms._mix", "ember.vision.io.image", "ember.vision.io.video",
           "ember.vision.datasets.utils", "ember.vision.datasets.fakedata", "ember.vision.utils",
           "ember.vision.ops"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, extraglobs={"ember": ember}, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0


def test_transforms_and_ops_on_device(device):
    x = ember.tensor(np.random.default_rng(0).integers(0, 255, (2, 3, 12, 16), dtype=np.uint8),
                     device=device)
    cpu = x.cpu() if hasattr(x, "cpu") else x
    for fn in [lambda t: F.resize(t, [6, 8]), F.hflip, lambda t: F.crop(t, 1, 2, 5, 7),
               lambda t: F.pad(t, [1, 2], padding_mode="reflect"),
               lambda t: F.rotate(t, 30, T.InterpolationMode.BILINEAR),
               lambda t: F.adjust_hue(t, 0.2), lambda t: F.gaussian_blur(t, 3, 1.0),
               lambda t: F.adjust_contrast(t, 0.6)]:
        got = fn(x)
        assert got.device == x.device
        np.testing.assert_array_equal(got.cpu().numpy(), fn(cpu).numpy())
    f = F.normalize(F.convert_image_dtype(x), [0.5] * 3, [0.25] * 3)
    assert f.dtype == ember.float32 and f.device == x.device
    b = ember.tensor([[0.0, 0.0, 4.0, 4.0], [1.0, 1.0, 5.0, 5.0]], device=device)
    np.testing.assert_allclose(ops.box_iou(b, b).cpu().numpy(), [[1, 9 / 23], [9 / 23, 1]],
                               rtol=1e-6)
    assert ops.nms(b, ember.tensor([0.9, 0.8], device=device), 0.3).tolist() == [0]
    r = ops.roi_align(f, ember.tensor([[1, 0.0, 0.0, 8.0, 6.0]], device=device), 2)
    assert r.shape == (1, 3, 2, 2) and r.device == x.device


def test_video_part_moves_with_boxes():
    v = Video(ember.zeros(4, 3, 10, 20, dtype=ember.uint8))
    boxes = BoundingBoxes([[0, 0, 10, 5]], format="XYXY", canvas_size=(10, 20))
    v2, b2 = T.Compose([T.Resize([20, 40]), T.RandomHorizontalFlip(1.0)])(v, boxes)
    assert isinstance(v2, Video) and v2.shape == (4, 3, 20, 40)
    assert b2.tolist() == [[20, 0, 40, 10]] and b2.canvas_size == (20, 40)
