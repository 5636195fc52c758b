"""make_grid/save_image against a numpy layout; draw_* against Pillow's ImageDraw and numpy."""
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
                                    fill=True)
    assert lab.shape == (3, 20, 30) and lab.dtype == ember.uint8 and lab.numpy()[:, 5, 5].any()
    g = utils.draw_bounding_boxes(ember.tensor(img[:1]), ember.tensor(boxes), colors="white")
    assert g.shape == (1, 20, 30) and g.numpy()[0, 3, 2] == 255
    with pytest.raises(ValueError, match="uint8"):
        utils.draw_bounding_boxes(ember.zeros(3, 4, 4), ember.tensor([[0, 0, 1, 1]]))
    with pytest.raises(ValueError, match="x1 <= x2"):
        utils.draw_bounding_boxes(ember.tensor(img), ember.tensor([[5, 0, 1, 1]]))


def test_draw_segmentation_masks_blend():
    img = np.full((3, 6, 7), 100, np.uint8)
    m = np.zeros((2, 6, 7), bool)
    m[0, :3] = True
    m[1, 2:5, 1:4] = True
    out = utils.draw_segmentation_masks(ember.tensor(img), ember.tensor(m), alpha=0.5,
                                        colors=[(255, 0, 0), (0, 0, 255)]).numpy().astype(float)
    want = img.astype(float).copy()
    for mask, col in zip(m, [(255, 0, 0), (0, 0, 255)]):
        want[:, mask] = want[:, mask] * 0.5 + np.array(col)[:, None] * 0.5
    np.testing.assert_array_equal(out, np.round(want))
    with pytest.raises(ValueError, match="bool"):
        utils.draw_segmentation_masks(ember.tensor(img), ember.tensor(m.astype(np.uint8)))


def test_draw_keypoints():
    img = np.zeros((3, 20, 20), np.uint8)
    kp = [[[5.0, 5.0], [15.0, 12.0]]]
    out = utils.draw_keypoints(ember.tensor(img), ember.tensor(kp), connectivity=[(0, 1)],
                               colors="blue", radius=1, width=1).numpy()
    ref = Image.fromarray(img.transpose(1, 2, 0))
    d = ImageDraw.Draw(ref)
    for x, y in kp[0]:
        d.ellipse([x - 1, y - 1, x + 1, y + 1], fill=(0, 0, 255), outline=(0, 0, 255))
    d.line([tuple(kp[0][0]), tuple(kp[0][1])], fill=(0, 0, 255), width=1)
    np.testing.assert_array_equal(out.transpose(1, 2, 0), np.asarray(ref))
    assert out[2, 5, 5] == 255
