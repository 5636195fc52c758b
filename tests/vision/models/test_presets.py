"""The ImageClassification preset against Pillow / torch references."""
import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision.transforms._presets import ImageClassification

MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)


def _image(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


@pytest.mark.parametrize("interp,resample", [("bilinear", Image.BILINEAR),
                                             ("bicubic", Image.BICUBIC)])
@pytest.mark.parametrize("hw", [(40, 60), (61, 37)])
def test_pil_input_matches_pillow(interp, resample, hw):
    h, w = hw
    arr = _image(h, w)
    t = ImageClassification(crop_size=24, resize_size=32, interpolation=interp)
    out = t(Image.fromarray(arr))
    nh, nw = (32, int(32 * w / h)) if h <= w else (int(32 * h / w), 32)
    ref = np.asarray(Image.fromarray(arr).resize((nw, nh), resample)).transpose(2, 0, 1)
    top, left = int(round((nh - 24) / 2)), int(round((nw - 24) / 2))
    ref = ref[:, top:top + 24, left:left + 24].astype(np.float32) / 255
    ref = (ref - MEAN) / STD
    assert out.shape == (3, 24, 24) and out.dtype == ember.float32
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("interp", ["bilinear", "bicubic"])
def test_tensor_input_matches_torch(batched, interp):
    torch = pytest.importorskip("torch")
    arr = _image(50, 70).transpose(2, 0, 1).copy()
    x = np.stack([arr, arr[:, ::-1].copy()]) if batched else arr
    t = ImageClassification(crop_size=28, resize_size=36, interpolation=interp)
    out = t(ember.from_numpy(x)).numpy()
    tx = torch.from_numpy(x).float()
    tx = tx if batched else tx[None]
    r = torch.nn.functional.interpolate(tx, size=(36, 50), mode=interp, antialias=True,
                                        align_corners=False)
    r = r.round().clamp(0, 255)[..., 4:32, 11:39].numpy() / 255
    r = (r - MEAN) / STD
    r = r if batched else r[0]
    assert out.shape == r.shape
    diff = np.abs(out - r)      # a value right at .5 may round the other way: one level off
    assert diff.max() <= 1.001 / 255 / STD.min() and (diff > 1e-4).mean() < 0.01

    f = x.astype(np.float32) / 255   # float input: no rounding step
    out = t(ember.from_numpy(f)).numpy()
    tf = torch.from_numpy(f if batched else f[None])
    r = torch.nn.functional.interpolate(tf, size=(36, 50), mode=interp, antialias=True,
                                        align_corners=False)[..., 4:32, 11:39].numpy()
    r = (r - MEAN) / STD
    np.testing.assert_allclose(out, r if batched else r[0], atol=1e-4)


def test_small_image_is_zero_padded_and_custom_stats():
    x = np.full((1, 10, 10), 255, np.uint8)
    t = ImageClassification(crop_size=14, resize_size=10, mean=(0.5,), std=(0.5,))
    out = t(ember.from_numpy(x)).numpy()
    assert out.shape == (1, 14, 14)
    assert (out[0, 2:12, 2:12] == 1).all()
    assert (out[0, :2] == -1).all() and (out[0, 12:] == -1).all()


def test_errors_and_repr():
    t = ImageClassification(crop_size=224, resize_size=232)
    assert repr(t) == ("ImageClassification(\n    crop_size=[224]\n    resize_size=[232]\n"
                       "    mean=[0.485, 0.456, 0.406]\n    std=[0.229, 0.224, 0.225]\n"
                       "    interpolation=InterpolationMode.BILINEAR\n)")
    assert "resize_size=[232]" in t.describe()
    with pytest.raises(ValueError, match="interpolation"):
        ImageClassification(crop_size=2, interpolation="cubic-ish")
    with pytest.raises(TypeError, match="PIL image"):
        t(np.zeros((3, 4, 4)))
    with pytest.raises(ValueError, match="CHW"):
        t(ember.zeros(4, 4))
    with pytest.raises(ValueError, match="channels"):
        t(ember.zeros(4, 300, 300))
