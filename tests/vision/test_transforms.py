"""Transforms against Pillow/numpy references, joint geometry on typed parts, seeded randomness."""
import numpy as np
import pytest
from PIL import Image as PImage

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as F
from ember.vision.transforms.parts import BoundingBoxes, Image, KeyPoints, Mask


def _rgb(h=24, w=32, seed=0):
    r = np.random.default_rng(seed)
    # smooth content so resampling differences stay small
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([127 + 100 * np.sin(xx / 3.0 + c) * np.cos(yy / 4.0) for c in range(3)], -1)
    return np.clip(base + r.normal(0, 5, base.shape), 0, 255).astype(np.uint8)


def _t(a):
    return ember.tensor(np.ascontiguousarray(a.transpose(2, 0, 1)))


@pytest.mark.parametrize("mode,tol", [("bilinear", 1), ("bicubic", 2), ("nearest-exact", 0)])
@pytest.mark.parametrize("size", [(12, 10), (40, 50), (7, 33)])
def test_resize_matches_pillow(mode, tol, size):
    a = _rgb()
    pil = PImage.fromarray(a)
    want = np.asarray(F.resize(pil, list(size), T.InterpolationMode(mode)))
    got = F.resize(_t(a), list(size), T.InterpolationMode(mode)).numpy().transpose(1, 2, 0)
    assert got.shape == want.shape and got.dtype == np.uint8
    diff = np.abs(got.astype(int) - want.astype(int))
    if mode == "nearest-exact":
        # Pillow accumulates the source coordinate in floating point: where a pixel centre
        # falls exactly on a source pixel border either neighbour is fair
        from fractions import Fraction
        h, w = a.shape[:2]
        ties_y = [Fraction((2 * i + 1) * h, 2 * size[0]).denominator == 1 for i in range(size[0])]
        ties_x = [Fraction((2 * j + 1) * w, 2 * size[1]).denominator == 1 for j in range(size[1])]
        bad = diff.max(-1) > 0
        bad[np.array(ties_y)] = False
        bad[:, np.array(ties_x)] = False
        assert not bad.any()
    else:
        assert diff.max() <= tol, diff.max()
    # float path agrees with the uint8 path and keeps float32
    f = F.resize(_t(a).float() / 255, list(size), T.InterpolationMode(mode))
    assert f.dtype == ember.float32
    assert np.abs(f.numpy().transpose(1, 2, 0) * 255 - got).max() <= 0.51


def test_resize_short_side_and_max_size():
    x = ember.zeros(2, 3, 20, 40)
    assert F.resize(x, 10).shape == (2, 3, 10, 20)
    assert F.resize(x, 10, max_size=15).shape == (2, 3, 7, 15)
    with pytest.raises(ValueError, match="max_size"):
        F.resize(x, [10, 10], max_size=15)


def test_crop_flip_pad_match_pillow_and_numpy():
    a = _rgb()
    pil, t = PImage.fromarray(a), _t(a)
    for args in [(2, 3, 10, 12), (-2, 25, 10, 12)]:
        np.testing.assert_array_equal(F.crop(t, *args).numpy().transpose(1, 2, 0),
                                      np.asarray(F.crop(pil, *args)))
    np.testing.assert_array_equal(F.hflip(t).numpy(), a.transpose(2, 0, 1)[:, :, ::-1])
    np.testing.assert_array_equal(F.vflip(t).numpy(), a.transpose(2, 0, 1)[:, ::-1])
    np.testing.assert_array_equal(F.center_crop(t, 10).numpy().transpose(1, 2, 0),
                                  np.asarray(F.center_crop(pil, 10)))
    for mode, npm in [("reflect", "reflect"), ("edge", "edge"), ("symmetric", "symmetric")]:
        got = F.pad(t, [1, 2, 3, 4], padding_mode=mode).numpy()
        want = np.pad(a.transpose(2, 0, 1), [(0, 0), (2, 4), (1, 3)], mode=npm)
        np.testing.assert_array_equal(got, want)
    got = F.pad(t, 2, fill=7).numpy()
    assert got.shape == (3, 28, 36) and (got[:, 0] == 7).all()
    np.testing.assert_array_equal(np.asarray(F.pad(pil, 2, fill=7)), got.transpose(1, 2, 0))
    assert F.pad(t, [-1, -2]).shape == (3, 20, 30)


@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_rotate_affine_perspective_match_pillow(interp):
    a = _rgb(20, 20)
    pil, t = PImage.fromarray(a), _t(a)
    mode = T.InterpolationMode(interp)
    cases = [lambda x: F.rotate(x, 90, mode), lambda x: F.rotate(x, 30, mode, expand=True),
             lambda x: F.affine(x, 10, [2, -1], 1.1, [5, 0], mode, fill=0),
             lambda x: F.perspective(x, [[0, 0], [19, 0], [19, 19], [0, 19]],
                                     [[2, 1], [17, 0], [19, 18], [1, 17]], mode)]
    white = PImage.fromarray(np.full((20, 20), 255, np.uint8))
    for fn in cases:
        want = np.asarray(fn(pil)).astype(int)
        got = fn(t).numpy().transpose(1, 2, 0).astype(int)
        assert got.shape == want.shape
        # compare away from the border of the warped image (Pillow's edge taps differ)
        inside = np.asarray(fn(white)) == 255
        pad = np.pad(inside, 2)
        core = inside.copy()
        for dy in range(-2, 3):
            for dx in range(-2, 3):
                core &= pad[2 + dy:2 + dy + inside.shape[0], 2 + dx:2 + dx + inside.shape[1]]
        assert core.mean() > 0.2
        d = np.abs(got - want).max(-1)[core]
        assert (d > (0 if interp == "nearest" else 2)).mean() < 0.02
    r90 = F.rotate(t, 90).numpy()
    np.testing.assert_array_equal(r90, np.rot90(a.transpose(2, 0, 1), 1, axes=(1, 2)))


def test_color_ops_reference():
    a = _rgb()
    t = _t(a)
    x = a.transpose(2, 0, 1).astype(np.float64)
    gray = 0.2989 * x[0] + 0.587 * x[1] + 0.114 * x[2]
    np.testing.assert_allclose(F.rgb_to_grayscale(t).numpy()[0], np.clip(np.round(gray), 0, 255),
                               atol=1)
    np.testing.assert_array_equal(np.asarray(F.rgb_to_grayscale(PImage.fromarray(a))).shape,
                                  (24, 32))
    np.testing.assert_allclose(F.adjust_brightness(t, 1.5).numpy(),
                               np.clip(np.round(x * 1.5), 0, 255), atol=1)
    np.testing.assert_allclose(F.adjust_saturation(t, 0.0).numpy(),
                               np.broadcast_to(np.floor(gray), x.shape), atol=1)
    m = np.floor(gray).mean()
    np.testing.assert_allclose(F.adjust_contrast(t, 0.5).numpy(),
                               np.clip(np.round(0.5 * x + 0.5 * m), 0, 255), atol=1)
    np.testing.assert_array_equal(F.invert(t).numpy(), 255 - a.transpose(2, 0, 1))
    np.testing.assert_array_equal(F.posterize(t, 3).numpy(), a.transpose(2, 0, 1) & 0xE0)
    np.testing.assert_array_equal(F.solarize(t, 128).numpy(),
                                  np.where(x >= 128, 255 - x, x).astype(np.uint8))
    # hue round trip: +0.5 twice is the identity (up to rounding)
    h = F.adjust_hue(F.adjust_hue(t, 0.5), 0.5).numpy().astype(int)
    assert np.abs(h - a.transpose(2, 0, 1)).max() <= 2
    # hue matches colorsys on a float image
    import colorsys
    f = (t.float() / 255)
    got = F.adjust_hue(f, 0.2).numpy()
    px = f.numpy()[:, 3, 5]
    hh, ss, vv = colorsys.rgb_to_hsv(*px)
    np.testing.assert_allclose(got[:, 3, 5], colorsys.hsv_to_rgb((hh + 0.2) % 1, ss, vv),
                               atol=1e-5)
    assert got.dtype == np.float32
    # equalize and autocontrast agree with Pillow's ImageOps
    from PIL import ImageOps
    np.testing.assert_array_equal(F.equalize(t).numpy().transpose(1, 2, 0),
                                  np.asarray(ImageOps.equalize(PImage.fromarray(a))))
    ac = F.autocontrast(t).numpy().transpose(1, 2, 0).astype(int)
    assert np.abs(ac - np.asarray(ImageOps.autocontrast(PImage.fromarray(a)))).max() <= 1


def test_gaussian_blur_reference():
    x = np.random.default_rng(0).random((1, 9, 11)).astype(np.float32)
    got = F.gaussian_blur(ember.tensor(x), [3, 5], [0.8, 1.3]).numpy()
    def k1(n, s):
        v = np.exp(-0.5 * (np.linspace(-(n - 1) / 2, (n - 1) / 2, n) / s) ** 2)
        return v / v.sum()
    kx, ky = k1(3, 0.8), k1(5, 1.3)
    p = np.pad(x[0].astype(np.float64), [(2, 2), (1, 1)], mode="reflect")
    want = np.zeros((9, 11))
    for i in range(5):
        for j in range(3):
            want += ky[i] * kx[j] * p[i:i + 9, j:j + 11]
    np.testing.assert_allclose(got[0], want, atol=1e-5)
    assert got.dtype == np.float32


def test_to_tensor_pil_roundtrip_and_dtype():
    a = _rgb()
    pil = PImage.fromarray(a)
    t = F.to_tensor(pil)
    assert t.dtype == ember.float32 and t.shape == (3, 24, 32)
    np.testing.assert_allclose(t.numpy(), a.transpose(2, 0, 1) / 255.0, atol=1e-6)
    u = F.pil_to_tensor(pil)
    assert u.dtype == ember.uint8
    np.testing.assert_array_equal(np.asarray(F.to_pil_image(u)), a)
    np.testing.assert_array_equal(np.asarray(F.to_pil_image(t)), a)
    assert F.to_pil_image(u[:1]).mode == "L"
    f = F.convert_image_dtype(u, ember.float32)
    np.testing.assert_allclose(f.numpy(), a.transpose(2, 0, 1) / 255.0, atol=1e-6)
    np.testing.assert_array_equal(F.convert_image_dtype(f, ember.uint8).numpy(), u.numpy())
    n = F.normalize(f, [0.5, 0.4, 0.3], [0.2, 0.3, 0.4])
    np.testing.assert_allclose(n.numpy(), (f.numpy() - np.array([.5, .4, .3])[:, None, None])
                               / np.array([.2, .3, .4])[:, None, None], rtol=1e-5, atol=1e-6)
    assert n.dtype == ember.float32
    with pytest.raises(TypeError, match="float"):
        F.normalize(u, [0.5], [0.5])


def test_normalize_is_differentiable():
    x = ember.rand(2, 3, 4, 4, requires_grad=True)
    F.normalize(x, [0.1, 0.2, 0.3], [2.0, 4.0, 8.0]).sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[0, :, 0, 0], [0.5, 0.25, 0.125])


def test_batched_tensors():
    x = ember.tensor(np.random.default_rng(1).integers(0, 255, (2, 3, 16, 16), dtype=np.uint8))
    out = T.Compose([T.Resize(8), T.ColorJitter(0.3, 0.3, 0.3, 0.1), T.ConvertImageDtype(),
                     T.Normalize([0.5] * 3, [0.5] * 3)])(x)
    assert out.shape == (2, 3, 8, 8) and out.dtype == ember.float32


def test_joint_geometry_moves_boxes_masks_keypoints():
    h, w = 20, 30
    img = np.zeros((1, h, w), np.uint8)
    img[0, 4:10, 6:16] = 255
    mask = np.zeros((h, w), np.uint8)
    mask[4:10, 6:16] = 1
    sample = {"image": Image(ember.tensor(img)),
              "boxes": BoundingBoxes([[6, 4, 16, 10]], format="XYXY", canvas_size=(h, w)),
              "mask": Mask(ember.tensor(mask)),
              "points": KeyPoints([[6.0, 4.0]], canvas_size=(h, w)), "label": 3}

    def check(s):
        im = s["image"].numpy()[0] > 127
        ys, xs = np.nonzero(im)
        x0, y0, x1, y1 = s["boxes"].numpy()[0]
        assert isinstance(s["boxes"], BoundingBoxes) and isinstance(s["mask"], Mask)
        assert s["boxes"].canvas_size == tuple(s["image"].shape[-2:])
        assert abs(xs.min() - x0) <= 1 and abs(xs.max() + 1 - x1) <= 1
        assert abs(ys.min() - y0) <= 1 and abs(ys.max() + 1 - y1) <= 1
        np.testing.assert_array_equal(s["mask"].numpy().astype(bool), im)
        assert s["label"] == 3
    for t in [T.RandomHorizontalFlip(1.0), T.RandomVerticalFlip(1.0), T.Pad([3, 1, 2, 5]),
              T.RandomCrop(16), T.Resize([40, 60], interpolation="nearest"),
              T.RandomResizedCrop(24, scale=(0.6, 1.0), interpolation="nearest"),
              T.RandomRotation([90, 90]), T.CenterCrop(18)]:
        for _ in range(3):
            check(t(sample))
    flipped = T.RandomHorizontalFlip(1.0)(sample)
    # keypoints mirror about the last pixel centre (torchvision 0.29): x -> W - 1 - x
    np.testing.assert_allclose(flipped["points"].numpy(), [[23.0, 4.0]])
    # a crop that cuts the box clips it to the new canvas
    out = F.crop(sample["boxes"], 6, 8, 10, 5)
    np.testing.assert_array_equal(out.numpy(), [[0, 0, 5, 4]])
    assert out.canvas_size == (10, 5)


def test_box_formats_roundtrip():
    b = BoundingBoxes([[1.0, 2.0, 5.0, 8.0]], format="XYXY", canvas_size=(10, 10))
    c = F.convert_bounding_box_format(b, "CXCYWH")
    np.testing.assert_allclose(c.numpy(), [[3, 5, 4, 6]])
    np.testing.assert_allclose(F.hflip(c).numpy(), [[7, 5, 4, 6]])
    np.testing.assert_allclose(F.convert_bounding_box_format(c, "XYWH").numpy(), [[1, 2, 4, 6]])


def test_seeded_randomness_repeats():
    x = ember.rand(3, 32, 32)
    t = T.Compose([T.RandomResizedCrop(16), T.RandomHorizontalFlip(), T.ColorJitter(.4, .4, .4, .1),
                   T.RandomRotation(20), T.RandomErasing(p=1.0)])
    ember.manual_seed(7)
    a = t(x)
    ember.manual_seed(7)
    b = t(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    g = ember.Generator().manual_seed(3)
    crop = T.RandomCrop(8)
    crop.generator = g
    c1 = crop(x)
    g.manual_seed(3)
    np.testing.assert_array_equal(crop(x).numpy(), c1.numpy())


def test_pil_pipeline_and_classes_run():
    pil = PImage.fromarray(_rgb(40, 40))
    ts = [T.Resize(32), T.CenterCrop(28), T.RandomCrop(24, padding=2, pad_if_needed=True),
          T.RandomResizedCrop(20), T.RandomHorizontalFlip(), T.RandomVerticalFlip(),
          T.Pad(2), T.ColorJitter(0.2, 0.2, 0.2, 0.05), T.Grayscale(3), T.RandomGrayscale(0.5),
          T.RandomRotation(15), T.RandomAffine(10, (0.1, 0.1), (0.9, 1.1), 5),
          T.RandomPerspective(p=1.0), T.GaussianBlur(3), T.AutoAugment(), T.RandAugment(),
          T.TrivialAugmentWide(), T.AugMix(), T.Lambda(lambda im: im)]
    out = T.Compose(ts)(pil)
    assert isinstance(out, PImage.Image) and out.size == (24, 24) and out.mode == "RGB"
    t = T.Compose([T.PILToTensor(), T.ConvertImageDtype(), T.RandomErasing(1.0, value="random"),
                   T.ToPILImage(), T.ToTensor()])(pil)
    assert t.shape == (3, 40, 40) and t.dtype == ember.float32


@pytest.mark.parametrize("cls", [T.AutoAugment, T.RandAugment, T.TrivialAugmentWide, T.AugMix])
def test_augment_policies_on_tensors(cls):
    u = ember.tensor(np.random.default_rng(0).integers(0, 255, (3, 16, 16), dtype=np.uint8))
    for _ in range(8):
        o = cls()(u)
        assert o.shape == (3, 16, 16) and o.dtype == ember.uint8
        f = cls()(u.float() / 255)
        assert f.dtype == ember.float32 and float(f.min()) >= 0 and float(f.max()) <= 1


def test_mixup_cutmix():
    x = ember.rand(4, 3, 8, 8)
    y = ember.tensor([0, 1, 2, 1])
    for m in (T.MixUp(num_classes=3, alpha=0.5), T.CutMix(num_classes=3)):
        xi, yi = m(x, y)
        assert xi.shape == x.shape and yi.shape == (4, 3)
        np.testing.assert_allclose(yi.numpy().sum(1), 1.0, rtol=1e-6)
    ember.manual_seed(0)
    xi, yi = T.MixUp(num_classes=3)(x, y)
    lam = yi.numpy()[0, 0] if yi.numpy()[0, 0] > 0 else None
    rolled = x.numpy()[[3, 0, 1, 2]]
    lam = float(np.random.Generator(np.random.PCG64(0)).beta(1.0, 1.0))
    np.testing.assert_allclose(xi.numpy(), lam * x.numpy() + (1 - lam) * rolled, rtol=1e-5)
    with pytest.raises(ValueError, match="labels"):
        T.MixUp(num_classes=3)(x, ember.tensor([0, 5, 1, 1]))


def test_errors_name_arguments():
    with pytest.raises(ValueError, match="kernel_size"):
        F.gaussian_blur(ember.zeros(1, 4, 4), 2)
    with pytest.raises(ValueError, match="hue_factor"):
        F.adjust_hue(ember.zeros(3, 4, 4), 0.7)
    with pytest.raises(TypeError, match="PIL Image or a Tensor"):
        F.hflip([1, 2])
    with pytest.raises(ValueError, match="format"):
        BoundingBoxes([[0, 0, 1, 1]], format="XYZ", canvas_size=(2, 2))


def test_resize_keeps_graph_for_float_tensors_needing_grad():
    x = ember.rand(1, 3, 8, 10, dtype=ember.float64, requires_grad=True)
    y = F.resize(x, [5, 4])
    assert y.shape == (1, 3, 5, 4) and y.requires_grad
    np.testing.assert_allclose(y.detach().numpy(), F.resize(x.detach(), [5, 4]).numpy(),
                               rtol=1e-10)
    ember.autograd.gradcheck(lambda t: F.resize(t, [5, 4]), (x,))
