"""Image and video I/O: round trips through Pillow/PyAV, modes, EXIF orientation, seek, errors."""
import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import io as vio
from ember.vision.io import ImageReadMode


def _img(h=12, w=16, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


@pytest.mark.parametrize("fmt,ext", [("PNG", "png"), ("BMP", "bmp"), ("WEBP", "webp"),
                                     ("GIF", "gif"), ("JPEG", "jpg")])
def test_read_image_formats_match_pillow(tmp_path, fmt, ext):
    a = _img()
    p = str(tmp_path / f"x.{ext}")
    kw = {"lossless": True} if fmt == "WEBP" else {}
    Image.fromarray(a).save(p, format=fmt, **kw)
    want = np.asarray(Image.open(p).convert("RGB"))
    got = vio.read_image(p, ImageReadMode.RGB)
    assert got.dtype == ember.uint8 and got.shape == (3, 12, 16)
    np.testing.assert_array_equal(got.numpy().transpose(1, 2, 0), want)
    if fmt in ("PNG", "BMP", "WEBP"):
        np.testing.assert_array_equal(want, a)    # lossless formats round trip exactly
    gray = vio.read_image(p, "GRAY")
    np.testing.assert_array_equal(gray.numpy()[0], np.asarray(Image.open(p).convert("L")))
    rgba = vio.read_image(p, ImageReadMode.RGBA)
    assert rgba.shape == (4, 12, 16)


def test_png_roundtrip_and_modes(tmp_path):
    for c in (1, 2, 3, 4):
        a = _img(c=c).transpose(2, 0, 1).copy()
        data = vio.encode_png(ember.tensor(a))
        assert data.dtype == ember.uint8 and data.ndim == 1
        np.testing.assert_array_equal(vio.decode_image(data).numpy(), a)
        p = tmp_path / f"c{c}.png"
        vio.write_png(ember.tensor(a), p)
        np.testing.assert_array_equal(vio.read_image(p).numpy(), a)
    np.testing.assert_array_equal(vio.read_file(p).numpy(), np.frombuffer(p.read_bytes(), np.uint8))


def test_jpeg_encode_quality(tmp_path):
    a = np.tile(np.linspace(0, 255, 32, dtype=np.uint8), (24, 1))[None].repeat(3, 0)
    p = tmp_path / "q.jpg"
    vio.write_jpeg(ember.tensor(a.copy()), p, quality=95)
    back = vio.read_image(p).numpy().astype(int)
    assert np.abs(back - a).mean() < 3
    small = vio.encode_jpeg(ember.tensor(a.copy()), quality=10)
    assert small.shape[0] < vio.encode_jpeg(ember.tensor(a.copy()), quality=95).shape[0]
    with pytest.raises(ValueError, match="quality"):
        vio.encode_jpeg(ember.tensor(a.copy()), quality=0)
    with pytest.raises(ValueError, match="uint8"):
        vio.encode_png(ember.zeros(3, 4, 4))


def test_exif_orientation(tmp_path):
    a = _img(6, 10)
    img = Image.fromarray(a)
    exif = img.getexif()
    exif[0x0112] = 6          # rotate 90 CW to display
    p = tmp_path / "o.jpg"
    img.save(p, exif=exif.tobytes(), quality=100)
    raw = vio.read_image(p)
    fixed = vio.read_image(p, apply_exif_orientation=True)
    assert raw.shape == (3, 6, 10) and fixed.shape == (3, 10, 6)
    from PIL import ImageOps
    want = np.asarray(ImageOps.exif_transpose(Image.open(p)))
    np.testing.assert_array_equal(fixed.numpy().transpose(1, 2, 0), want)


def test_animated_gif(tmp_path):
    frames = [Image.fromarray(np.full((8, 8, 3), v, np.uint8)) for v in (0, 128, 255)]
    p = tmp_path / "a.gif"
    frames[0].save(p, save_all=True, append_images=frames[1:], duration=50)
    out = vio.read_image(p)
    assert out.shape == (3, 3, 8, 8)
    np.testing.assert_array_equal(out.numpy()[:, 0, 0, 0], [0, 128, 255])


def test_corrupt_and_missing_files_name_the_file(tmp_path):
    p = tmp_path / "broken.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    with pytest.raises(RuntimeError, match="broken.png"):
        vio.read_image(p)
    with pytest.raises(FileNotFoundError, match="nope.jpg"):
        vio.read_image(tmp_path / "nope.jpg")
    with pytest.raises(RuntimeError, match="could not decode"):
        vio.decode_image(b"not an image")


def test_non_image_names_its_source_and_the_formats_tried(tmp_path):
    """A text file or garbage bytes: the file (or the byte count) and the formats tried, never
    Pillow's ``<_io.BytesIO object at 0x...>``."""
    txt = tmp_path / "notes.txt"
    txt.write_text("hello, not an image\n")
    with pytest.raises(RuntimeError) as ei:
        vio.read_image(txt)
    msg = str(ei.value)
    assert msg.startswith(f"could not decode image {txt}: ") and "BytesIO" not in msg
    assert all(f in msg for f in ("JPEG", "PNG", "WEBP", "GIF", "BMP"))
    assert "b'hello, not an im'" in msg   # the first bytes: text, an HTML page, ...
    with pytest.raises(RuntimeError) as ei:
        vio.decode_image(ember.tensor(list(b"garbage bytes"), dtype=ember.uint8))
    msg = str(ei.value)
    assert msg.startswith("could not decode image bytes of length 13: ") and "BytesIO" not in msg
    assert "tried" in msg and "JPEG" in msg
    with pytest.raises(RuntimeError, match="bytes of length 0: .*the data is empty"):
        vio.decode_image(b"")
    # a known format that is corrupt: its name, no BytesIO either
    with pytest.raises(RuntimeError, match="bytes of length 78") as ei:
        vio.decode_image(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    assert "BytesIO" not in str(ei.value)


@pytest.fixture(scope="module")
def mp4(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("vid") / "v.mp4")
    frames = np.zeros((10, 32, 48, 3), np.uint8)
    for i in range(10):
        frames[i, :, :, 0] = 20 * i + 10
    sr = 8000
    audio = np.sin(np.arange(sr) * 2 * np.pi * 440 / sr).astype(np.float32)[None]
    vio.write_video(p, ember.tensor(frames), fps=10, options={"crf": "0"},
                    audio_array=ember.tensor(audio), audio_fps=sr, audio_codec="aac")
    return p, frames


def test_read_video_roundtrip(mp4):
    p, frames = mp4
    v, a, info = vio.read_video(p, pts_unit="sec")
    assert v.shape == frames.shape and v.dtype == ember.uint8
    assert np.abs(v.numpy().astype(int)[:, 5, 5, 0] - frames[:, 5, 5, 0]).max() <= 3
    assert info["video_fps"] == 10.0 and info["audio_fps"] == 8000
    assert a.dtype == ember.float32 and a.shape[0] == 1 and a.shape[1] >= 8000
    v2, _, _ = vio.read_video(p, 0.3, 0.6, pts_unit="sec", output_format="TCHW")
    assert v2.shape == (4, 3, 32, 48)
    assert np.abs(v2.numpy().astype(int)[:, 0, 5, 5] - frames[3:7, 5, 5, 0]).max() <= 3
    pts, fps = vio.read_video_timestamps(p, pts_unit="sec")
    np.testing.assert_allclose(pts, np.arange(10) / 10, atol=1e-6)
    ipts, _ = vio.read_video_timestamps(p)
    v3, _, _ = vio.read_video(p, ipts[2], ipts[4])
    assert v3.shape[0] == 3


def test_video_reader_seek_and_audio(mp4):
    p, frames = mp4
    r = vio.VideoReader(p)
    first = next(r)
    assert first["data"].shape == (3, 32, 48) and first["pts"] == 0.0
    got = [(f["pts"], int(f["data"].numpy()[0, 5, 5])) for f in r.seek(0.45)]
    np.testing.assert_allclose([g[0] for g in got], [0.5, 0.6, 0.7, 0.8, 0.9], atol=1e-6)
    assert all(abs(v - int(frames[int(round(t * 10)), 5, 5, 0])) <= 3 for t, v in got)
    back = next(r.seek(0.2))
    assert abs(back["pts"] - 0.2) < 1e-6
    meta = r.get_metadata()
    assert meta["video"]["fps"] == [10.0] and abs(meta["audio"]["duration"][0] - 1.0) < 0.2
    r.set_current_stream("audio")
    fr = list(r.seek(0.5))
    assert fr and fr[0]["data"].shape[0] == 1 and fr[0]["pts"] <= 0.5 + 1e-6
    assert fr[0]["pts"] + fr[0]["data"].shape[1] / 8000 >= 0.5
    with pytest.raises(ValueError, match="stream"):
        r.set_current_stream("subtitle")
    r.close()


def test_video_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.mp4"):
        vio.read_video(str(tmp_path / "missing.mp4"))
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00" * 100)
    with pytest.raises(RuntimeError, match="bad.mp4"):
        vio.read_video(str(bad))
    with pytest.raises(ValueError, match="video_array"):
        vio.write_video(str(tmp_path / "x.mp4"), ember.zeros(2, 4, 4), fps=1)
