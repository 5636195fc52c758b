"""make_grid/save_image against a numpy layout; draw_* against Pillow's ImageDraw and numpy."""
import os

import numpy as np
import pytest
from PIL import Image, ImageDraw

import ember
from ember.vision import utils


def test_make_grid_layout():
    x = np.random.default_rng(0).random((5, 3, 4, 6)).astype(np.float32)
    g = utils.make_grid(ember.tensor(x), nrow=3, padding=1, pad_value=0.5).numpy()
    assert g.shape == (3, 2 * 5 + 1, 3 * 7 + 1) and g.dtype == np.float32
    np.testing.assert_array_equal(g[:, 1:5, 1:7], x[0])
    np.testing.assert_array_equal(g[:, 6:10, 8:14], x[4])
    assert (g[:, 0] == 0.5).all() and (g[:, 6:10, 15:21] == 0.5).all()  # empty slot
    one = utils.make_grid(ember.tensor(x[:1]))
    np.testing.assert_array_equal(one.numpy(), x[0])
    gray = utils.make_grid([ember.tensor(x[0, :1]), ember.tensor(x[1, :1])], padding=0)
    assert gray.shape == (3, 4, 12)
    n = utils.make_grid(ember.tensor(x * 4 - 1), normalize=True, padding=0).numpy()
    assert n.min() == pytest.approx(0.0) and n.max() == pytest.approx(1.0)
    n2 = utils.make_grid(ember.tensor(x * 4 - 1), normalize=True, value_range=(0, 1),
                         padding=0).numpy()
    np.testing.assert_allclose(n2[:, :, :6], np.clip(x[0] * 4 - 1, 0, 1), rtol=1e-6)


def test_save_image(tmp_path):
    x = np.random.default_rng(1).random((2, 3, 4, 4)).astype(np.float32)
    p = tmp_path / "g.png"
    utils.save_image(ember.tensor(x), p, padding=0)
    back = np.asarray(Image.open(p))
    np.testing.assert_array_equal(back[:, :4], np.clip(x[0] * 255 + 0.5, 0, 255).astype(np.uint8)
                                  .transpose(1, 2, 0))


FIX = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                           "transforms_v2.npz"))


def _fix_img():
    return ember.tensor(FIX["in/img"].transpose(2, 0, 1).copy())


def test_draw_bounding_boxes_matches_imagedraw():
    img = np.zeros((3, 20, 30), np.uint8)
    boxes = [[2, 3, 10, 12], [15, 1, 28, 18]]
    out = utils.draw_bounding_boxes(ember.tensor(img), ember.tensor(boxes), colors=["red", "lime"],
                                    width=2)
    ref = Image.fromarray(img.transpose(1, 2, 0))
    d = ImageDraw.Draw(ref)
    d.rectangle(boxes[0], outline=(255, 0, 0), width=2)
    d.rectangle(boxes[1], outline=(0, 255, 0), width=2)
    np.testing.assert_array_equal(out.numpy().transpose(1, 2, 0), np.asarray(ref))
    lab = utils.draw_bounding_boxes(ember.tensor(img), ember.tensor(boxes), labels=["a", "b"],
                                    colors=["red", "lime"], fill=True, fill_labels=True)
    assert lab.shape == (3, 20, 30) and lab.dtype == ember.uint8 and lab.numpy()[:, 5, 5].any()
    # a grayscale image comes back as RGB, as torchvision's does
    g = utils.draw_bounding_boxes(ember.tensor(img[:1]), ember.tensor(boxes), colors="white")
    assert g.shape == (3, 20, 30) and (g.numpy()[:, 3, 2] == 255).all()
    with pytest.raises(ValueError, match="uint8 or float"):
        utils.draw_bounding_boxes(ember.zeros(3, 4, 4, dtype=ember.int32),
                                  ember.tensor([[0, 0, 1, 1]]))
    with pytest.raises(ValueError, match="x1 <= x2"):
        utils.draw_bounding_boxes(ember.tensor(img), ember.tensor([[5, 0, 1, 1]]))


def test_draw_bounding_boxes_matches_torchvision():
    """Fixtures from torchvision 0.29.1: float images (drawn through uint8 and back),
    fractional boxes (truncated), the default palette, grayscale input, translucent fill."""
    t = _fix_img()
    bxs = ember.tensor([[2.7, 3.2, 12.9, 14.5], [10, 1, 30, 20]])
    f = utils.draw_bounding_boxes(t.float() / 255, bxs, colors=["red", "blue"], width=2)
    assert f.dtype == ember.float32
    np.testing.assert_array_equal(f.numpy(), FIX["utils/boxes_float"])
    np.testing.assert_array_equal(utils.draw_bounding_boxes(t, bxs).numpy(),
                                  FIX["utils/boxes_uint8_default"])
    np.testing.assert_array_equal(utils.draw_bounding_boxes(t[:1], bxs, colors="yellow").numpy(),
                                  FIX["utils/boxes_gray"])
    np.testing.assert_array_equal(
        utils.draw_bounding_boxes(t, bxs, colors=["red", "lime"], fill=True).numpy(),
        FIX["utils/boxes_fill"])


def test_draw_segmentation_masks_blend():
    img = np.full((3, 6, 7), 100, np.uint8)
    m = np.zeros((2, 6, 7), bool)
    m[0, :3] = True
    m[1, 2:5, 1:4] = True
    out = utils.draw_segmentation_masks(ember.tensor(img), ember.tensor(m), alpha=0.5,
                                        colors=[(255, 0, 0), (0, 0, 255)]).numpy()
    want = img.astype(np.float32).copy()
    paint = want.copy()
    for mask, col in zip(m, [(255, 0, 0), (0, 0, 255)]):
        paint[:, mask] = np.array(col, np.float32)[:, None]
    paint[:, m.sum(0) > 1] = 0          # overlaps are painted black (torchvision's rule)
    want = (want * np.float32(0.5) + paint * np.float32(0.5)).astype(np.uint8)
    np.testing.assert_array_equal(out, want)
    assert (out[:, 2, 1] == 50).all()                          # an overlapping pixel
    with pytest.raises(ValueError, match="bool"):
        utils.draw_segmentation_masks(ember.tensor(img), ember.tensor(m.astype(np.uint8)))


def test_draw_segmentation_masks_matches_torchvision():
    t = _fix_img()
    bm = ember.tensor(FIX["in/seg_masks"])
    cols = ["red", (0, 128, 255), "#10f0a0"]
    np.testing.assert_array_equal(
        utils.draw_segmentation_masks(t, bm, alpha=0.6, colors=cols).numpy(),
        FIX["utils/seg_uint8"])
    f = utils.draw_segmentation_masks(t.float() / 255, bm, alpha=0.6, colors=cols)
    assert f.dtype == ember.float32
    np.testing.assert_allclose(f.numpy(), FIX["utils/seg_float"], atol=1e-7)
    np.testing.assert_array_equal(utils.draw_segmentation_masks(t, bm).numpy(),
                                  FIX["utils/seg_default"])


def test_draw_keypoints():
    img = np.zeros((3, 20, 20), np.uint8)
    kp = [[[5.0, 5.0], [15.0, 12.0], [2.0, 17.0]]]
    out = utils.draw_keypoints(ember.tensor(img), ember.tensor(kp), connectivity=[(0, 1), (1, 2)],
                               colors="blue", radius=1, width=1,
                               visibility=ember.tensor([[True, True, False]])).numpy()
    ref = Image.fromarray(img.transpose(1, 2, 0))
    d = ImageDraw.Draw(ref)
    for x, y in kp[0][:2]:
        d.ellipse([x - 1, y - 1, x + 1, y + 1], fill=(0, 0, 255), outline=None, width=0)
    d.line([(5, 5), (15, 12)], width=1)          # lines in Pillow's default ink, as torchvision
    np.testing.assert_array_equal(out.transpose(1, 2, 0), np.asarray(ref))
    assert out[2, 5, 5] == 255 and out[:, 17, 2].sum() == 0     # the hidden point is not drawn
    f = utils.draw_keypoints(ember.zeros(3, 20, 20), ember.tensor(kp), colors="red", radius=1)
    assert f.dtype == ember.float32 and f.numpy()[0, 5, 5] == 1.0
