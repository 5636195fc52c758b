"""The v2 surface (``ember.vision.transforms.v2``, ``ember.vision.tv_tensors``): import paths and
names, typed parts, the new transform classes by their properties (shapes, boxes inside the
canvas, seeded repeats), and ``get_params`` of the v1 classes. Parity with torchvision's numbers
is in test_transforms_v2_parity.py."""
import numpy as np
import pytest
from PIL import Image as PImage
from PIL import ImageEnhance

import ember
from ember.vision import transforms as T
from ember.vision import tv_tensors
from ember.vision.transforms import v2
from ember.vision.transforms.v2 import functional as F


def _img(h=24, w=32, seed=0):
    r = np.random.default_rng(seed)
    return ember.tensor(r.integers(0, 256, (3, h, w), dtype=np.uint8))


def _sample(h=24, w=32, seed=0):
    r = np.random.default_rng(seed)
    x0 = r.uniform(0, w - 8, 6)
    y0 = r.uniform(0, h - 8, 6)
    boxes = np.stack([x0, y0, x0 + r.uniform(3, 8, 6), y0 + r.uniform(3, 8, 6)], 1)
    mask = np.zeros((h, w), np.uint8)
    mask[2:10, 3:12] = 1
    return {"image": tv_tensors.Image(_img(h, w, seed)),
            "boxes": tv_tensors.BoundingBoxes(boxes.astype(np.float32), format="XYXY",
                                              canvas_size=(h, w)),
            "mask": tv_tensors.Mask(ember.tensor(mask)),
            "points": tv_tensors.KeyPoints(r.uniform(0, w - 1, (5, 2)).astype(np.float32),
                                           canvas_size=(h, w)),
            "labels": ember.arange(6)}


def _inside(boxes):
    h, w = boxes.canvas_size
    b = F.convert_bounding_box_format(boxes, new_format="XYXY").numpy()
    return (b[:, 0::2] >= 0).all() and (b[:, 0::2] <= w).all() and \
        (b[:, 1::2] >= 0).all() and (b[:, 1::2] <= h).all()


# ------------------------------------------------------------------------- import surface

V2_NAMES = ["ToImage", "ToDtype", "ToPureTensor", "SanitizeBoundingBoxes", "RandomApply",
            "RandomChoice", "RandomOrder", "FiveCrop", "TenCrop", "RandomPhotometricDistort",
            "RandomIoUCrop", "RandomZoomOut", "ScaleJitter", "RandomShortestSize",
            "ClampBoundingBoxes", "ConvertBoundingBoxFormat", "JPEG", "ElasticTransform",
            "RandomChannelPermutation", "Compose", "Resize", "RandomResizedCrop", "RandomCrop",
            "CenterCrop", "Pad", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomAffine",
            "RandomRotation", "RandomPerspective", "ColorJitter", "Grayscale",
            "RandomGrayscale", "GaussianBlur", "Normalize", "RandomErasing", "Lambda",
            "ToPILImage", "PILToTensor", "ToTensor", "ConvertImageDtype", "AutoAugment",
            "RandAugment", "TrivialAugmentWide", "AugMix", "MixUp", "CutMix", "Transform",
            "InterpolationMode", "RandomInvert", "RandomPosterize", "RandomSolarize",
            "RandomAdjustSharpness", "RandomAutocontrast", "RandomEqualize", "RandomResize",
            "GaussianNoise", "Identity", "RGB", "LinearTransformation",
            "UniformTemporalSubsample"]


def test_v2_and_tv_tensors_import_paths():
    for name in V2_NAMES:
        assert hasattr(v2, name), name
    assert v2.functional is T.functional
    import importlib
    assert importlib.import_module("ember.vision.transforms.v2.functional") is F
    assert ember.vision.tv_tensors is tv_tensors and ember.vision.transforms.v2 is v2
    for name in ["Image", "Video", "BoundingBoxes", "BoundingBoxFormat", "Mask", "KeyPoints",
                 "TVTensor", "wrap"]:
        assert hasattr(tv_tensors, name), name
    for fn in ["to_image", "to_dtype", "five_crop", "ten_crop", "elastic", "jpeg",
               "permute_channels", "clamp_bounding_boxes", "convert_bounding_box_format",
               "sanitize_bounding_boxes", "horizontal_flip", "vertical_flip", "resized_crop",
               "grayscale_to_rgb", "gaussian_noise", "get_size", "get_dimensions"]:
        assert callable(getattr(F, fn)), fn


@pytest.mark.parametrize("cls", ["RandomCrop", "RandomResizedCrop", "ColorJitter",
                                 "RandomAffine", "RandomRotation", "RandomPerspective",
                                 "RandomErasing", "GaussianBlur", "ElasticTransform"])
def test_v1_classes_have_static_get_params(cls):
    assert isinstance(getattr(T, cls).__dict__["get_params"], staticmethod)
    assert getattr(v2, cls).get_params is getattr(T, cls).get_params


def test_get_params_values_and_seeding():
    img = _img()
    ember.manual_seed(3)
    a = T.RandomCrop.get_params(img, (10, 12))
    ember.manual_seed(3)
    assert T.RandomCrop.get_params(img, (10, 12)) == a
    i, j, h, w = a
    assert (h, w) == (10, 12) and 0 <= i <= 14 and 0 <= j <= 20
    assert T.RandomCrop.get_params(img, (24, 32)) == (0, 0, 24, 32)
    with pytest.raises(ValueError, match="larger than input"):
        T.RandomCrop.get_params(img, (30, 12))
    for _ in range(20):
        i, j, h, w = T.RandomResizedCrop.get_params(PImage.new("RGB", (32, 24)), [0.2, 0.9],
                                                   [0.75, 1.33])
        assert 0 < h <= 24 and 0 < w <= 32 and i + h <= 24 and j + w <= 32
    order, b, c, s, hue = T.ColorJitter.get_params([0.5, 1.5], None, [1.0, 1.0], [-0.1, 0.1])
    assert sorted(order.tolist()) == [0, 1, 2, 3] and c is None and s == 1.0
    assert 0.5 <= b <= 1.5 and -0.1 <= hue <= 0.1
    assert -5 <= T.RandomRotation.get_params([-5, 5]) <= 5
    angle, (tx, ty), scale, (sx, sy) = T.RandomAffine.get_params([-10, 10], [0.1, 0.2],
                                                                [0.9, 1.1], [-3, 3, 1, 2],
                                                                [32, 24])
    assert -10 <= angle <= 10 and abs(tx) <= 3.2 and abs(ty) <= 4.8 and 0.9 <= scale <= 1.1
    assert -3 <= sx <= 3 and 1 <= sy <= 2
    start, end = T.RandomPerspective.get_params(32, 24, 0.5)
    assert start == [[0, 0], [31, 0], [31, 23], [0, 23]]
    assert all(0 <= x < 32 and 0 <= y < 24 for x, y in end)
    assert end[0][0] <= 8 and end[1][0] >= 31 - 8      # at most distortion * half the size
    i, j, h, w, v = T.RandomErasing.get_params(img.float(), (0.1, 0.2), (0.5, 2.0), value=None)
    assert tuple(v.shape) == (3, h, w) and i + h <= 24 and j + w <= 32
    i, j, h, w, v = T.RandomErasing.get_params(img.float(), (0.1, 0.2), (0.5, 2.0), value=[0])
    assert v.tolist() == [[[0.0]]]
    assert 0.1 <= T.GaussianBlur.get_params(0.1, 2.0) <= 2.0
    d = T.ElasticTransform.get_params([50.0, 50.0], [5.0, 5.0], [24, 32])
    assert tuple(d.shape) == (1, 24, 32, 2) and d.dtype == ember.float32


# --------------------------------------------------------------------------------- parts

def test_tv_tensors_behave_like_torchvisions():
    b = tv_tensors.BoundingBoxes([[1, 2, 5, 6]], format=tv_tensors.BoundingBoxFormat.XYWH,
                                 canvas_size=[8, 9])
    assert b.format is tv_tensors.BoundingBoxFormat.XYWH and b.format == "XYWH"
    assert b.canvas_size == (8, 9) and b.clamping_mode == "soft"
    assert "format=BoundingBoxFormat.XYWH" in repr(b) and "canvas_size=(8, 9)" in repr(b)
    assert type(b + 1) is ember.Tensor                       # arithmetic: a plain tensor
    c = b.clone()
    assert isinstance(c, tv_tensors.BoundingBoxes) and c.format == "XYWH" and c is not b
    assert isinstance(b.to(ember.float32), tv_tensors.BoundingBoxes)
    w = tv_tensors.wrap(b + 1, like=b, canvas_size=(4, 4))
    assert isinstance(w, tv_tensors.BoundingBoxes) and w.canvas_size == (4, 4)
    assert w.tolist() == [[2, 3, 6, 7]]
    assert type(b.as_subclass(ember.Tensor)) is ember.Tensor
    with pytest.raises(ValueError, match="clamping_mode"):
        tv_tensors.BoundingBoxes([[0, 0, 1, 1]], format="XYXY", canvas_size=(2, 2),
                                 clamping_mode="loose")
    with pytest.raises(ValueError, match="rotated"):
        tv_tensors.BoundingBoxes([[0, 0, 1, 1, 0]], format="XYWHR", canvas_size=(2, 2))
    assert tv_tensors.BoundingBoxes([0, 0, 1, 1], format="xyxy", canvas_size=(2, 2)).shape == \
        (1, 4)
    assert tv_tensors.KeyPoints([3.0, 4.0], canvas_size=(5, 5)).shape == (1, 2)
    pil = PImage.new("RGB", (5, 4), (1, 2, 3))
    assert tuple(tv_tensors.Image(pil).shape) == (3, 4, 5)
    assert tuple(tv_tensors.Mask(PImage.new("L", (5, 4))).shape) == (1, 4, 5)
    assert tuple(tv_tensors.Image(ember.zeros(4, 5)).shape) == (1, 4, 5)
    with pytest.raises(ValueError, match="Video"):
        tv_tensors.Video(ember.zeros(3, 4, 5))
    x = ember.rand(3, 4, 4, requires_grad=True)
    assert tv_tensors.Image(x).requires_grad


# ------------------------------------------------------------------------------ conversion

def test_to_image_to_dtype_to_pure_tensor():
    a = np.random.default_rng(0).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    img = v2.ToImage()(a)
    assert isinstance(img, tv_tensors.Image) and img.shape == (3, 4, 5)
    np.testing.assert_array_equal(img.numpy(), a.transpose(2, 0, 1))
    pil_img, label = v2.ToImage()(PImage.fromarray(a), 3)
    assert isinstance(pil_img, tv_tensors.Image) and label == 3
    s = _sample()
    out = v2.ToDtype(ember.float32, scale=True)(s)
    assert out["image"].dtype == ember.float32 and float(out["image"].max()) <= 1.0
    assert out["mask"].dtype == ember.uint8 and out["boxes"] is s["boxes"]   # others untouched
    out = v2.ToDtype({tv_tensors.Image: ember.float32, tv_tensors.Mask: ember.int64,
                      "others": None})(s)
    assert out["image"].dtype == ember.float32 and float(out["image"].max()) > 1.0   # no scale
    assert out["mask"].dtype == ember.int64 and isinstance(out["mask"], tv_tensors.Mask)
    with pytest.raises(ValueError, match="No dtype was specified"):
        v2.ToDtype({tv_tensors.Image: ember.float32})(s)
    pure = v2.ToPureTensor()(s)
    assert all(type(pure[k]) is ember.Tensor for k in ("image", "boxes", "mask", "points"))


# ------------------------------------------------------------------------------ containers

def test_random_apply_choice_order():
    x = ember.arange(12).reshape(1, 3, 4)
    flips = [v2.RandomHorizontalFlip(1.0), v2.RandomVerticalFlip(1.0)]
    both = F.vflip(F.hflip(x)).numpy()
    assert np.array_equal(v2.RandomApply(flips, p=1.0)(x).numpy(), both)
    assert np.array_equal(v2.RandomApply(flips, p=0.0)(x).numpy(), x.numpy())
    assert np.array_equal(v2.RandomChoice(flips, p=[0, 1])(x).numpy(), F.vflip(x).numpy())
    seen = {tuple(v2.RandomChoice(flips)(x).numpy().ravel()) for _ in range(30)}
    assert len(seen) == 2
    assert np.array_equal(v2.RandomOrder(flips)(x).numpy(), both)    # flips commute
    img, lab = v2.RandomApply([v2.RandomHorizontalFlip(1.0)], p=1.0)(x, 7)
    assert lab == 7 and np.array_equal(img.numpy(), F.hflip(x).numpy())
    with pytest.raises(ValueError, match="at least one"):
        v2.RandomOrder([])
    with pytest.raises(ValueError, match="Length of p"):
        v2.RandomChoice(flips, p=[1.0])
    t = v2.RandomChoice([v2.RandomRotation(90), v2.RandomAffine(30)])
    ember.manual_seed(5)
    a = t(x.float())
    ember.manual_seed(5)
    np.testing.assert_array_equal(t(x.float()).numpy(), a.numpy())


# -------------------------------------------------------------------------------- cropping

def test_five_ten_crop_refuse_boxes_and_masks():
    s = _sample()
    with pytest.raises(TypeError, match="not supported"):
        v2.FiveCrop(8)(s)
    crops = v2.FiveCrop(8)(s["image"])
    assert len(crops) == 5 and all(isinstance(c, tv_tensors.Image) and c.shape == (3, 8, 8)
                                   for c in crops)
    with pytest.raises(ValueError, match="bigger than input"):
        F.five_crop(s["image"], 30)


def test_random_iou_crop_properties():
    s = _sample(40, 48)
    t = v2.Compose([v2.RandomIoUCrop(), v2.SanitizeBoundingBoxes()])
    cropped = 0
    for seed in range(25):
        ember.manual_seed(seed)
        out = t(s)
        h, w = out["image"].shape[-2:]
        assert out["boxes"].canvas_size == (h, w) == tuple(out["mask"].shape[-2:])
        assert len(out["labels"]) == len(out["boxes"]) <= 6
        assert _inside(out["boxes"])
        cropped += (h, w) != (40, 48)
    assert cropped > 5
    ember.manual_seed(11)
    a = t(s)
    ember.manual_seed(11)
    b = t(s)
    np.testing.assert_array_equal(a["boxes"].numpy(), b["boxes"].numpy())
    with pytest.raises(TypeError, match="bounding boxes"):
        v2.RandomIoUCrop()(s["image"])
    # a crop that leaves a box's centre outside zeroes that box (SanitizeBoundingBoxes drops it)
    crop = v2.RandomIoUCrop()
    out = crop.transform(s["boxes"], {"top": 0, "left": 0, "height": 20, "width": 20,
                                      "inside": np.array([True, False] * 3)})
    assert (out.numpy()[1::2] == 0).all()


def test_zoom_out_places_the_image_on_a_filled_canvas():
    s = _sample()
    for seed in range(10):
        ember.manual_seed(seed)
        out = v2.RandomZoomOut(fill={tv_tensors.Image: 200, "others": 0}, side_range=(1.0, 2.0),
                               p=1.0)(s)
        img = out["image"].numpy()
        h, w = img.shape[-2:]
        assert 24 <= h <= 48 and 32 <= w <= 64 and out["boxes"].canvas_size == (h, w)
        ys, xs = np.nonzero(out["mask"].numpy())
        top, left = ys.min() - 2, xs.min() - 3          # where the original landed
        np.testing.assert_array_equal(img[:, top:top + 24, left:left + 32], s["image"].numpy())
        np.testing.assert_allclose(out["boxes"].numpy(),
                                   s["boxes"].numpy() + [left, top, left, top], atol=1e-5)
        assert (img == 200).sum() >= 3 * (h * w - 24 * 32)
    assert v2.RandomZoomOut(p=0.0)(s)["image"] is s["image"]


@pytest.mark.parametrize("t,check", [
    (lambda: v2.ScaleJitter((20, 30), scale_range=(0.5, 1.5)),
     lambda h, w: 7 <= h <= 24 and 10 <= w <= 32),
    (lambda: v2.RandomShortestSize([10, 16, 20], max_size=30),
     lambda h, w: min(h, w) in (10, 16, 20) or max(h, w) == 30),
    (lambda: v2.RandomResize(12, 20), lambda h, w: 12 <= min(h, w) < 20),
])
def test_size_jitters(t, check):
    s = _sample()
    for seed in range(8):
        ember.manual_seed(seed)
        out = t()(s)
        h, w = out["image"].shape[-2:]
        assert check(h, w), (h, w)
        assert out["boxes"].canvas_size == (h, w) == tuple(out["mask"].shape[-2:])
        assert abs(w / h - 32 / 24) < 0.15
        np.testing.assert_allclose(out["boxes"].numpy(),
                                   s["boxes"].numpy() * np.float32([w / 32, h / 24] * 2),
                                   rtol=1e-5)


@pytest.mark.parametrize("t", [lambda: v2.RandomAffine(25, (0.1, 0.1), (0.8, 1.2), 10),
                               lambda: v2.RandomRotation(45, expand=True),
                               lambda: v2.RandomPerspective(0.6, p=1.0),
                               lambda: v2.ElasticTransform(alpha=30.0, sigma=3.0),
                               lambda: v2.RandomResizedCrop(20),
                               lambda: v2.RandomCrop(30, pad_if_needed=True)])
def test_random_geometry_keeps_parts_on_one_canvas(t):
    s = _sample()
    for seed in range(5):
        ember.manual_seed(seed)
        out = t()(s)
        size = tuple(out["image"].shape[-2:])
        assert out["boxes"].canvas_size == size == tuple(out["mask"].shape[-2:])
        assert out["points"].canvas_size == size
        assert _inside(out["boxes"])
        assert isinstance(out["image"], tv_tensors.Image) and out["image"].dtype == ember.uint8


def test_elastic_zero_field_is_identity_and_fill():
    x = _img()
    same = v2.ElasticTransform(alpha=0.0, sigma=5.0)(x)
    np.testing.assert_array_equal(same.numpy(), x.numpy())
    d = np.zeros((1, 24, 32, 2), np.float32)
    d[..., 0] = 4.0                                      # sample far outside: all fill
    out = F.elastic(x, d, fill=[1, 2, 3])
    assert (out.numpy()[:, :, :] == np.array([1, 2, 3])[:, None, None]).all()
    with pytest.raises(ValueError, match="displacement shape"):
        F.elastic(x, np.zeros((1, 4, 4, 2), np.float32))


# --------------------------------------------------------------------------------- colour

def test_jpeg_and_channel_shuffles():
    x = _img()
    out = v2.JPEG((20, 90))(x)
    assert out.shape == x.shape and out.dtype == ember.uint8
    assert 0 < np.abs(out.numpy().astype(int) - x.numpy()).mean() < 80
    assert isinstance(v2.JPEG(75)(PImage.fromarray(x.numpy().transpose(1, 2, 0))), PImage.Image)
    with pytest.raises(ValueError, match="quality"):
        v2.JPEG(0)
    with pytest.raises(TypeError, match="bool"):
        v2.JPEG(True)
    p = v2.RandomChannelPermutation()(x).numpy()
    assert sorted(map(bytes, p)) == sorted(map(bytes, x.numpy()))
    assert np.array_equal(v2.RandomPhotometricDistort(p=0.0)(x).numpy(), x.numpy())
    for seed in range(5):
        ember.manual_seed(seed)
        d = v2.RandomPhotometricDistort(p=1.0)(_sample())
        assert d["image"].shape == (3, 24, 32) and isinstance(d["image"], tv_tensors.Image)


def test_random_color_ops_apply_with_probability():
    x = _img()
    assert np.array_equal(v2.RandomInvert(1.0)(x).numpy(), 255 - x.numpy())
    assert np.array_equal(v2.RandomInvert(0.0)(x).numpy(), x.numpy())
    assert np.array_equal(v2.RandomPosterize(2, 1.0)(x).numpy(), x.numpy() & 0xC0)
    assert np.array_equal(v2.RandomSolarize(128, 1.0)(x).numpy(), F.solarize(x, 128).numpy())
    assert np.array_equal(v2.RandomEqualize(1.0)(x).numpy(), F.equalize(x).numpy())
    assert np.array_equal(v2.RandomAutocontrast(1.0)(x).numpy(), F.autocontrast(x).numpy())
    assert np.array_equal(v2.RandomAdjustSharpness(2, 1.0)(x).numpy(),
                          F.adjust_sharpness(x, 2).numpy())
    f = x.float() / 255
    n = v2.GaussianNoise(sigma=0.05)(f)
    assert 0.02 < float((n - f).std()) < 0.08 and float(n.min()) >= 0 and float(n.max()) <= 1
    assert v2.RGB()(x[:1]).shape == (3, 24, 32)
    eq = F.equalize(f)
    np.testing.assert_allclose(eq.numpy(), F.equalize(x).numpy() / 255, atol=1e-6)


def test_pil_colour_ops_are_pillows_own():
    """PIL inputs go to Pillow: ImageEnhance for brightness/contrast/saturation/sharpness, also
    for modes the tensor path would not take (LA, RGBA)."""
    r = np.random.default_rng(1)
    for mode, shape in (("RGBA", (10, 12, 4)), ("L", (10, 12))):
        pil = PImage.fromarray(r.integers(0, 256, shape, dtype=np.uint8), mode)
        for fn, kind, f in ((F.adjust_brightness, "Brightness", 1.4),
                            (F.adjust_contrast, "Contrast", 0.7),
                            (F.adjust_saturation, "Color", 1.6),
                            (F.adjust_sharpness, "Sharpness", 2.5)):
            got = fn(pil, f)
            want = getattr(ImageEnhance, kind)(pil).enhance(f)
            assert got.mode == mode
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# ------------------------------------------------------------------------------ box classes

def test_sanitize_labels_getters_and_masks():
    boxes = tv_tensors.BoundingBoxes([[0, 0, 4, 4], [1, 1, 1.5, 9], [2, 2, 9, 9]],
                                     format="XYXY", canvas_size=(8, 8))
    masks = tv_tensors.Mask(ember.zeros(3, 8, 8, dtype=ember.uint8))
    img = tv_tensors.Image(ember.zeros(3, 8, 8, dtype=ember.uint8))
    out_img, target = v2.SanitizeBoundingBoxes()(img, {"boxes": boxes, "masks": masks,
                                                       "class_labels": ember.tensor([5, 6, 7])})
    assert target["class_labels"].tolist() == [5] and target["masks"].shape == (1, 8, 8)
    assert isinstance(target["masks"], tv_tensors.Mask) and out_img is img
    out = v2.SanitizeBoundingBoxes(labels_getter=lambda s: s["y"])(
        {"boxes": boxes, "y": ember.tensor([1, 2, 3])})
    assert out["y"].tolist() == [1]
    out = v2.SanitizeBoundingBoxes(labels_getter=None)({"boxes": boxes})
    assert out["boxes"].tolist() == [[0, 0, 4, 4]]
    with pytest.raises(ValueError, match="labels"):
        v2.SanitizeBoundingBoxes()({"boxes": boxes})
    with pytest.raises(ValueError, match="must match"):
        v2.SanitizeBoundingBoxes()({"boxes": boxes, "labels": ember.tensor([1])})
    with pytest.raises(ValueError, match="min_size"):
        v2.SanitizeBoundingBoxes(min_size=0.5)


def test_box_format_conversion_and_clamp_functionals():
    b = tv_tensors.BoundingBoxes([[1.0, 2.0, 5.0, 8.0]], format="XYXY", canvas_size=(10, 10))
    c = F.convert_bounding_box_format(b, new_format="CXCYWH")
    np.testing.assert_allclose(c.numpy(), [[3, 5, 4, 6]])
    np.testing.assert_allclose(F.convert_bounding_box_format(c, "XYWH").numpy(), [[1, 2, 4, 6]])
    plain = F.convert_bounding_box_format(ember.tensor([[1.0, 2.0, 4.0, 6.0]]),
                                          old_format="XYWH", new_format="XYXY")
    assert type(plain) is ember.Tensor and plain.tolist() == [[1, 2, 5, 8]]
    with pytest.raises(ValueError, match="old_format"):
        F.convert_bounding_box_format(ember.tensor([[1.0, 2, 3, 4]]), new_format="XYXY")
    raw = F.clamp_bounding_boxes(ember.tensor([[-1.0, 2, 12, 4]]), format="XYXY",
                                 canvas_size=(10, 10), clamping_mode="soft")
    assert raw.tolist() == [[0, 2, 10, 4]]
    unclamped = tv_tensors.BoundingBoxes([[-1.0, 2, 12, 4]], format="XYXY", canvas_size=(10, 10),
                                         clamping_mode=None)
    assert F.clamp_bounding_boxes(unclamped).tolist() == [[-1, 2, 12, 4]]
    assert F.crop(unclamped, 0, 0, 5, 5).tolist() == [[-1, 2, 12, 4]]   # no clamping at all


def test_user_defined_v2_transform():
    class AddOne(v2.Transform):
        def accepts(self, inpt):
            return isinstance(inpt, tv_tensors.Image)

        def make_params(self, flat_inputs):
            return {"k": len(flat_inputs)}

        def transform(self, inpt, params):
            return tv_tensors.wrap(inpt + params["k"], like=inpt)

    s = _sample()
    out = AddOne()(s)
    assert isinstance(out["image"], tv_tensors.Image)
    np.testing.assert_array_equal(out["image"].numpy(), s["image"].numpy() + 1)
    assert out["boxes"] is s["boxes"]


def test_v2_detection_pipeline_is_seeded():
    t = v2.Compose([v2.ToImage(), v2.RandomPhotometricDistort(p=1.0),
                    v2.RandomZoomOut(fill={tv_tensors.Image: 123, "others": 0}, p=1.0),
                    v2.RandomIoUCrop(), v2.RandomHorizontalFlip(),
                    v2.ToDtype(ember.float32, scale=True), v2.SanitizeBoundingBoxes()])
    s = _sample()
    ember.manual_seed(21)
    a = t(s)
    ember.manual_seed(21)
    b = t(s)
    np.testing.assert_array_equal(a["image"].numpy(), b["image"].numpy())
    np.testing.assert_array_equal(a["boxes"].numpy(), b["boxes"].numpy())
    assert a["image"].dtype == ember.float32 and _inside(a["boxes"])


def test_v2_kernels_on_device(device):
    """Tensor kernels keep the input's device and give the CPU's numbers (the CUDA leg runs
    under -m cuda)."""
    s = _sample()
    x = s["image"].to(device)
    disp = np.zeros((1, 24, 32, 2), np.float32)
    disp[..., 0] = 0.05
    fns = [lambda t: F.affine(t, 20.0, [2, 1], 1.1, [4.0, -3.0], v2.InterpolationMode.BILINEAR),
           lambda t: F.rotate(t, 33.0, expand=True, fill=[9, 9, 9]),
           lambda t: F.rotate(t, 90.0, expand=True),
           lambda t: F.perspective(t, [[0, 0], [31, 0], [31, 23], [0, 23]],
                                   [[2, 1], [29, 3], [30, 22], [1, 20]]),
           lambda t: F.elastic(t, disp), lambda t: F.adjust_hue(t, 0.3),
           lambda t: F.adjust_saturation(t, 1.7), lambda t: F.rgb_to_grayscale(t),
           lambda t: F.adjust_gamma(t, 0.6), lambda t: F.autocontrast(t),
           lambda t: F.equalize(t), lambda t: F.adjust_sharpness(t, 1.8),
           lambda t: F.permute_channels(t, [1, 2, 0]), lambda t: F.jpeg(t, 60),
           lambda t: F.to_dtype(t, ember.float32, scale=True)]
    for fn in fns:
        got = fn(x)
        assert got.device == x.device and isinstance(got, tv_tensors.Image)
        np.testing.assert_array_equal(got.cpu().numpy(), fn(s["image"]).numpy())
    b = s["boxes"].to(device)
    out = F.rotate(b, 30.0, expand=True)
    assert out.device == b.device and isinstance(out, tv_tensors.BoundingBoxes)
    np.testing.assert_array_equal(out.cpu().numpy(), F.rotate(s["boxes"], 30.0,
                                                              expand=True).numpy())


def test_subclass_with_forward_or_transformed_types():
    class Halve(v2.Transform):
        _transformed_types = (tv_tensors.BoundingBoxes,)

        def transform(self, inpt, params):
            return tv_tensors.wrap(inpt * 0.5, like=inpt)

    class Swap(v2.Transform):
        def forward(self, a, b):
            return b, a

    s = _sample()
    out = Halve()(s)
    np.testing.assert_allclose(out["boxes"].numpy(), s["boxes"].numpy() * 0.5)
    assert out["image"] is s["image"] and out["mask"] is s["mask"]
    assert Swap()(1, 2) == (2, 1)
