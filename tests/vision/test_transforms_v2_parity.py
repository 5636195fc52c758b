"""Transforms against torchvision 0.29.1's own outputs, recorded once by
``fixtures/make_transforms_v2.py`` into ``fixtures/transforms_v2.npz`` (torchvision is not needed
here). Inputs come from the archive too, so both sides see the same pixels and boxes."""
import os

import numpy as np
import pytest
from PIL import Image as PImage

import ember
from ember.vision import tv_tensors
from ember.vision.transforms import v2
from ember.vision.transforms.v2 import functional as F


def _load_cases():
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), "fixtures", "v2_cases.py")
    spec = importlib.util.spec_from_file_location("v2_cases", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_CASES = _load_cases()

FIX = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                           "transforms_v2.npz"))
H, W = 24, 32
IM = v2.InterpolationMode


def _want(key):
    assert key in FIX.files, f"{key} missing from the fixture archive"
    return FIX[key]


def _arr(x):
    if isinstance(x, PImage.Image):
        return np.asarray(x)
    return x.numpy()


def _check(key, got, atol=0.0):
    want, got = _want(key), _arr(got)
    assert got.shape == want.shape, (key, got.shape, want.shape)
    assert got.dtype == want.dtype, (key, got.dtype, want.dtype)
    if atol == 0:
        np.testing.assert_array_equal(got, want, err_msg=key)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0,
                                   atol=atol, err_msg=key)


def test_fixture_comes_from_torchvision_0_29():
    tv, _, pil = (str(v) for v in FIX["meta/versions"])
    assert tv.startswith("0.29.")
    # PIL-input cases compare with Pillow's own output: same major version as the writer's
    import PIL
    assert PIL.__version__.split(".")[0] == pil.split(".")[0]


@pytest.fixture(scope="module")
def inp():
    hwc = FIX["in/img"]
    t = ember.tensor(hwc.transpose(2, 0, 1).copy())
    return {"tensor": t, "float": t.float() / 255, "pil": PImage.fromarray(hwc),
            "boxes_f": tv_tensors.BoundingBoxes(FIX["in/boxes_f"], format="XYXY",
                                                canvas_size=(H, W)),
            "boxes_i": tv_tensors.BoundingBoxes(FIX["in/boxes_i"], format="XYXY",
                                                canvas_size=(H, W)),
            "points": tv_tensors.KeyPoints(FIX["in/points"], canvas_size=(H, W)),
            "mask": tv_tensors.Mask(FIX["in/mask"])}


GEO = _CASES.geometry_calls(F)  # name -> fn(x, **interpolation), as the generator calls
WARPS = _CASES.WARPS
IMAGE_CASES = [(n, i, kind) for n in GEO for i in ("nearest", "bilinear") for kind in
               ("tensor", "pil") if f"geo/{n}/{i}/{kind}" in FIX.files]


@pytest.mark.parametrize("name,interp,kind", IMAGE_CASES)
def test_geometry_images_match_torchvision(inp, name, interp, kind):
    k = {"interpolation": IM(interp)} if name.startswith(WARPS) else {}
    got = GEO[name](inp[kind], **k)
    if kind == "tensor" and name in ("resize", "resized_crop"):
        # torchvision's uint8 antialiased resize kernel and ember's (Pillow's) differ by one
        # level at some pixels
        _check(f"geo/{name}/{interp}/{kind}", got, atol=1)
    else:
        _check(f"geo/{name}/{interp}/{kind}", got)


@pytest.mark.parametrize("name", ["affine", "rotate_expand", "perspective"])
def test_geometry_float_images_match_torchvision(inp, name):
    k = {"interpolation": IM.BILINEAR} if name.startswith(WARPS) else {}
    out = GEO[name](inp["float"], **k)
    assert out.dtype == ember.float32
    _check(f"geo/{name}/float", out, atol=1e-5)


def _canvas(name, part):
    """The canvas ember gives boxes/keypoints: torchvision's, except after an expanding
    rotation, where torchvision sizes the parts' canvas about the pixel centre and can come out
    one row or column short of its own image; ember keeps the image's canvas."""
    theirs = tuple(int(v) for v in _want(f"geo/{name}/{part}_canvas"))
    if "expand" not in name:
        return theirs
    image = tuple(_want(f"geo/{name}/nearest/tensor").shape[-2:])
    assert all(0 <= a - b <= 1 for a, b in zip(image, theirs))
    return image


@pytest.mark.parametrize("name", list(GEO))
def test_geometry_boxes_points_masks_match_torchvision(inp, name):
    fn = GEO[name]
    b = fn(inp["boxes_f"])
    assert isinstance(b, tv_tensors.BoundingBoxes)
    _check(f"geo/{name}/boxes_f", b, atol=2e-5)
    assert b.canvas_size == _canvas(name, "boxes_f")
    _check(f"geo/{name}/boxes_i", fn(inp["boxes_i"]))       # integer boxes: exact truncation
    p = fn(inp["points"])
    assert isinstance(p, tv_tensors.KeyPoints)
    _check(f"geo/{name}/points", p, atol=2e-5)
    assert p.canvas_size == _canvas(name, "points")
    if f"geo/{name}/mask" in FIX.files:
        m = fn(inp["mask"])
        assert isinstance(m, tv_tensors.Mask)
        _check(f"geo/{name}/mask", m)


def test_affine_positive_angle_turns_clockwise(inp):
    """The sign convention on its own: a point right of the centre moves down under
    ``affine(+90)`` and up under ``rotate(+90)`` (screen coordinates, y down)."""
    pt = tv_tensors.KeyPoints([[26.0, 12.0]], canvas_size=(H, W))     # 10 px right of centre
    np.testing.assert_allclose(F.affine(pt, 90.0, [0, 0], 1.0, [0, 0]).numpy(), [[16, 22]],
                               atol=1e-4)
    np.testing.assert_allclose(F.rotate(pt, 90.0).numpy(), [[16, 2]], atol=1e-4)
    # RandomAffine inherits it: a pinned angle equals the functional with that angle
    out = v2.RandomAffine(degrees=(15, 15))(inp["tensor"])
    np.testing.assert_array_equal(out.numpy(), F.affine(inp["tensor"], 15.0, [0, 0], 1.0,
                                                        [0, 0], fill=0).numpy())


def test_box_formats_through_warps(inp):
    for fmt in ("XYWH", "CXCYWH"):
        b = F.convert_bounding_box_format(inp["boxes_f"], new_format=fmt)
        r = F.rotate(b, 30.0, expand=True)
        assert r.format == fmt
        _check(f"geo/rotate_expand/boxes_{fmt}", r, atol=2e-5)
        _check(f"geo/affine/boxes_{fmt}",
               F.affine(b, angle=15.0, translate=[2, -1], scale=1.1, shear=[5.0, 3.0]),
               atol=2e-5)


def test_rotate_expand_canvas_follows_pillow():
    big = ember.zeros(3, 128, 160, dtype=ember.uint8)
    assert tuple(F.rotate(big, 30.0, expand=True).shape) == \
        tuple(_want("geo/rotate_expand_160x128/tensor_shape")) == (3, 192, 204)
    pil = PImage.new("RGB", (160, 128))
    assert F.rotate(pil, 30.0, expand=True).size == \
        tuple(_want("geo/rotate_expand_160x128/pil_size")) == pil.rotate(30.0, expand=True).size
    boxes = tv_tensors.BoundingBoxes([[0, 0, 160, 128]], format="XYXY", canvas_size=(128, 160))
    assert F.rotate(boxes, 30.0, expand=True).canvas_size == (192, 204)


@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_elastic_matches_torchvision(inp, interp):
    disp = ember.tensor(FIX["in/displacement"])
    _check(f"geo/elastic/{interp}/tensor", F.elastic(inp["tensor"], disp, interpolation=interp))
    _check(f"geo/elastic/{interp}/pil", F.elastic(inp["pil"], disp, interpolation=interp))
    if interp == "bilinear":
        _check("geo/elastic/float", F.elastic(inp["float"], disp), atol=1e-5)
        _check("geo/elastic/boxes_f", F.elastic(inp["boxes_f"], disp), atol=2e-5)
        _check("geo/elastic/points", F.elastic(inp["points"], disp), atol=2e-5)
        _check("geo/elastic/mask", F.elastic(inp["mask"], disp))


def test_five_and_ten_crop_match_torchvision(inp):
    t = inp["tensor"]
    _check("geo/five_crop", ember.stack(list(F.five_crop(t, [10, 14]))))
    _check("geo/ten_crop", ember.stack(list(F.ten_crop(t, [10, 14]))))
    _check("geo/ten_crop_v", ember.stack(list(F.ten_crop(t, [10, 14], vertical_flip=True))))
    crops = v2.TenCrop([10, 14])(inp["pil"])
    assert len(crops) == 10 and all(c.size == (14, 10) for c in crops)
    np.testing.assert_array_equal(np.asarray(crops[4]), _want("geo/ten_crop")[4].transpose(1, 2, 0))


COLOR = _CASES.color_calls(F)
COLOR_CASES = [(n, kind) for n in COLOR for kind in ("tensor", "pil", "float")
               if f"color/{n}/{kind}" in FIX.files]


@pytest.mark.parametrize("name,kind", COLOR_CASES)
def test_color_matches_torchvision(inp, name, kind):
    """uint8 tensors: torchvision's integer arithmetic (truncating casts) exactly; PIL images:
    Pillow's own ImageEnhance/ImageOps/convert("L"), exactly; float tensors to rounding."""
    out = COLOR[name](inp[kind])
    if kind == "pil":
        assert isinstance(out, PImage.Image)
    _check(f"color/{name}/{kind}", out, atol=2e-6 if kind == "float" else 0)


def test_color_low_contrast_and_grayscale_classes(inp):
    low = ember.tensor(FIX["in/low"])
    _check("color/autocontrast/low_tensor", F.autocontrast(low))
    _check("color/autocontrast/low_pil", F.autocontrast(F.to_pil_image(low)))
    _check("color/gray1/low_float", F.rgb_to_grayscale(low.float() / 255), atol=2e-6)
    g = v2.Grayscale(1)(inp["pil"])
    assert g.mode == "L"
    np.testing.assert_array_equal(np.asarray(g), np.asarray(inp["pil"].convert("L")))
    np.testing.assert_array_equal(v2.Grayscale(3)(inp["tensor"]).numpy(),
                                  _want("color/gray3/tensor"))


def test_to_dtype_matches_torchvision(inp):
    t, tf = inp["tensor"], inp["float"]
    _check("dtype/float_to_uint8", F.to_dtype(tf * 0.999 + 0.0004, ember.uint8, scale=True))
    _check("dtype/uint8_to_float", F.to_dtype(t, ember.float32, scale=True))
    _check("dtype/uint8_to_int16", F.to_dtype(t, ember.int16, scale=True))
    _check("dtype/uint8_to_float_noscale", F.to_dtype(t, ember.float32))
    _check("dtype/uint8_to_float", F.convert_image_dtype(t))


def test_box_conversion_clamp_sanitize_match_torchvision(inp):
    bi, bf = inp["boxes_i"], inp["boxes_f"]
    cx = F.convert_bounding_box_format(bi, new_format="CXCYWH")
    _check("boxes/convert_i_cxcywh", cx)
    _check("boxes/convert_i_cxcywh_back", F.convert_bounding_box_format(cx, new_format="XYXY"))
    _check("boxes/convert_i_xywh", F.convert_bounding_box_format(bi, new_format="XYWH"))
    _check("boxes/convert_f_cxcywh", F.convert_bounding_box_format(bf, new_format="CXCYWH"),
           atol=1e-6)
    wild = tv_tensors.BoundingBoxes(FIX["in/boxes_wild"], format="XYXY", canvas_size=(H, W))
    _check("boxes/clamp", F.clamp_bounding_boxes(wild), atol=1e-6)
    _check("boxes/sanitize_valid", F.sanitize_bounding_boxes(wild)[1])
    _check("boxes/sanitize_valid_min4", F.sanitize_bounding_boxes(wild, min_size=4)[1])
    _check("cls/clamp/boxes", v2.ClampBoundingBoxes()(wild), atol=1e-6)
    _check("cls/convert/boxes", v2.ConvertBoundingBoxFormat("CXCYWH")(bf), atol=1e-6)
    san = v2.SanitizeBoundingBoxes()({"image": tv_tensors.Image(inp["tensor"]), "boxes": wild,
                                      "labels": ember.arange(4)})
    _check("cls/sanitize/boxes", san["boxes"], atol=1e-6)
    _check("cls/sanitize/labels", san["labels"])


def _sample(inp):
    return {"image": tv_tensors.Image(inp["tensor"]), "boxes": inp["boxes_f"],
            "points": inp["points"], "mask": inp["mask"], "labels": ember.arange(4)}


# transform classes whose random ranges are pinned to one value: the same calls as the generator
CLASSES = {
    "hflip": lambda: v2.RandomHorizontalFlip(p=1.0),
    "vflip": lambda: v2.RandomVerticalFlip(p=1.0),
    "affine": lambda: v2.RandomAffine(degrees=(20, 20), scale=(1.2, 1.2), shear=(4, 4, -6, -6)),
    "rotation": lambda: v2.RandomRotation(degrees=(30, 30), expand=True),
    "resize": lambda: v2.Resize([20, 25]),
    "center_crop": lambda: v2.CenterCrop(18),
    "pad": lambda: v2.Pad([2, 3], fill={tv_tensors.Image: 9, "others": 0}),
    "gray": lambda: v2.Grayscale(3),
    "to_dtype": lambda: v2.ToDtype({tv_tensors.Image: ember.float32, tv_tensors.Mask: ember.int64,
                                    "others": None}, scale=True),
    "saturation": lambda: v2.ColorJitter(saturation=(1.3, 1.3)),
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_pinned_transform_classes_match_torchvision(inp, name):
    out = CLASSES[name]()(_sample(inp))
    assert isinstance(out["image"], tv_tensors.Image)
    assert isinstance(out["boxes"], tv_tensors.BoundingBoxes)
    # one canvas for all parts: the image's (see _canvas for torchvision's expand case)
    assert out["boxes"].canvas_size == tuple(_want(f"cls/{name}/image").shape[-2:])
    if name != "rotation":
        assert out["boxes"].canvas_size == tuple(_want(f"cls/{name}/canvas"))
    for key in ("image", "boxes", "points", "mask"):
        exact = out[key].dtype.kind in "iub" and not (name == "resize" and key == "image")
        _check(f"cls/{name}/{key}", out[key], atol=0 if exact else (1 if key == "image" else 2e-5))
    np.testing.assert_array_equal(out["labels"].numpy(), np.arange(4))


def test_color_jitter_in_torchvision_order(inp):
    """ColorJitter's adjustments in the order torchvision drew (recorded), factors as float32
    draws give them, reproduce its output exactly."""
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    fns = [lambda x: F.adjust_brightness(x, f32(1.2)), lambda x: F.adjust_contrast(x, f32(0.8)),
           lambda x: F.adjust_saturation(x, f32(1.3)), lambda x: F.adjust_hue(x, f32(0.1))]
    x = inp["tensor"]
    for i in _want("cls/jitter/order"):
        x = fns[int(i)](x)
    _check("cls/jitter/image", x)


def test_zoom_out_to_image_normalize_match_torchvision(inp):
    out = v2.RandomZoomOut(fill=7, side_range=(1.5, 1.5), p=1.0)(_sample(inp))
    assert tuple(out["image"].shape) == tuple(_want("cls/zoom_out/image").shape)
    assert out["boxes"].canvas_size == tuple(_want("cls/zoom_out/canvas"))
    img = out["image"].numpy()
    assert (img == 7).sum() == (_want("cls/zoom_out/image") == 7).sum()
    ti = v2.ToImage()(inp["pil"])
    assert isinstance(ti, tv_tensors.Image)
    _check("cls/to_image", ti)
    _check("cls/normalize", v2.Normalize([0.4, 0.5, 0.6], [0.2, 0.25, 0.3])(inp["float"]),
           atol=1e-6)


def test_jpeg_matches_torchvision(inp):
    _check("jpeg/pil_q50", F.jpeg(inp["pil"], 50))
    # ember encodes tensors with Pillow's libjpeg; torchvision with its own build of libjpeg
    _check("jpeg/tensor_q50", F.jpeg(inp["tensor"], 50), atol=2)
    out = v2.JPEG((50, 50))(inp["tensor"])
    np.testing.assert_array_equal(out.numpy(), F.jpeg(inp["tensor"], 50).numpy())
