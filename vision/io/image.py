"""Image files through Pillow: read_file/write_file, decode_image/read_image (JPEG, PNG, WebP, GIF,
BMP; modes GRAY/GRAY_ALPHA/RGB/RGBA; EXIF orientation), encode/write JPEG and PNG.

Images are uint8 tensors (C, H, W); an animated GIF decodes to (N, C, H, W).

    >>> import ember, io
    >>> img = ember.zeros(3, 4, 5, dtype=ember.uint8)
    >>> decode_image(encode_png(img)).shape
    (3, 4, 5)
"""
from __future__ import annotations

import enum
import io
import os
import re

import numpy as np

from ember._tensor import Tensor

from PIL import Image, ImageOps, ImageSequence, UnidentifiedImageError


class ImageReadMode(enum.Enum):
    """Channel layout to decode to."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = 4


_PIL_MODE = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA", ImageReadMode.RGB: "RGB",
             ImageReadMode.RGB_ALPHA: "RGBA"}


def _mode(mode) -> ImageReadMode:
    if isinstance(mode, ImageReadMode):
        return mode
    if isinstance(mode, str):
        try:
            return ImageReadMode[mode.upper()]
        except KeyError:
            pass
    raise ValueError(f"mode must be an ImageReadMode or one of UNCHANGED, GRAY, GRAY_ALPHA, RGB, "
                     f"RGBA, got {mode!r}")


def read_file(path) -> Tensor:
    """The bytes of a file as a 1-D uint8 tensor."""
    with open(os.fspath(path), "rb") as f:
        data = f.read()
    return Tensor._make(np.frombuffer(data, dtype=np.uint8).copy())


def write_file(filename, data) -> None:
    """Write a 1-D uint8 tensor (or bytes) to ``filename``."""
    raw = _bytes(data, "data")
    with open(os.fspath(filename), "wb") as f:
        f.write(raw)


def _bytes(data, name) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, Tensor):
        a = np.asarray(data.array.get() if hasattr(data.array, "get") else data.array)
        if a.dtype != np.uint8 or a.ndim != 1:
            raise ValueError(f"{name} should be a 1-D uint8 tensor, got {a.dtype} with shape "
                             f"{a.shape}")
        return a.tobytes()
    raise TypeError(f"{name} should be a 1-D uint8 Tensor or bytes, got {type(data).__name__}")


def _convert(img, mode: ImageReadMode):
    if mode == ImageReadMode.UNCHANGED:
        if img.mode in ("L", "LA", "RGB", "RGBA"):
            return img
        if img.mode == "P":
            return img.convert("RGBA" if "transparency" in img.info else "RGB")
        if img.mode in ("1", "I;16", "I", "F"):
            return img.convert("L")
        if img.mode == "PA":
            return img.convert("RGBA")
        return img.convert("RGB")
    return img if img.mode == _PIL_MODE[mode] else img.convert(_PIL_MODE[mode])


def _to_chw(img) -> np.ndarray:
    a = np.asarray(img)
    if a.ndim == 2:
        a = a[:, :, None]
    return np.ascontiguousarray(a.transpose(2, 0, 1))


def _formats_tried() -> list:
    """The formats Pillow tries when it identifies an image (all it can read), sorted."""
    Image.init()
    return sorted(Image.OPEN)


def _decode_error(e, raw, name, img) -> RuntimeError:
    """A RuntimeError naming the source (``name``, or the byte count) instead of Pillow's
    ``<_io.BytesIO object at 0x...>``, and for unknown data the formats tried."""
    src = name if name is not None else f"bytes of length {len(raw)}"
    if isinstance(e, UnidentifiedImageError):
        fmts = _formats_tried()
        head = raw[:16]
        return RuntimeError(
            f"could not decode image {src}: not in any format Pillow reads (tried "
            f"{len(fmts)} formats: {', '.join(fmts)}); "
            + (f"the data starts with {head!r}" if head else "the data is empty"))
    detail = re.sub(r"<_io\.BytesIO object at 0x[0-9a-fA-F]+>", "the data", str(e)) \
        or type(e).__name__
    fmt = f" (a {img.format} file)" if img is not None and img.format else ""
    return RuntimeError(f"could not decode image {src}{fmt}: {detail}")


def decode_image(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False,
                 *, name: str | None = None) -> Tensor:
    """Decode JPEG/PNG/WebP/GIF/BMP bytes (a 1-D uint8 tensor, bytes, or a path) to uint8
    (C, H, W); animated GIFs give (N, C, H, W). Data that is no image, or a corrupt one,
    raises RuntimeError naming ``name`` (default: "bytes of length N") and, when the format is
    unknown, the formats tried.
    """
    if isinstance(input, (str, os.PathLike)):
        return read_image(input, mode, apply_exif_orientation)
    mode = _mode(mode)
    raw = _bytes(input, "input")
    img = None
    try:
        img = Image.open(io.BytesIO(raw))
        n = getattr(img, "n_frames", 1)
        if img.format == "GIF" and n > 1:
            frames = [_to_chw(_convert(f.convert("RGB") if mode == ImageReadMode.UNCHANGED
                                       else f.copy(), mode))
                      for f in ImageSequence.Iterator(img)]
            return Tensor._make(np.stack(frames))
        img.load()
        if apply_exif_orientation:
            img = ImageOps.exif_transpose(img)
        return Tensor._make(_to_chw(_convert(img, mode)))
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise _decode_error(e, raw, name, img) from e


def read_image(path, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False) -> Tensor:
    """Read an image file to a uint8 tensor (C, H, W); errors name the file.

    ``mode``: ImageReadMode (or "RGB", "GRAY", ...); ``apply_exif_orientation`` rotates/flips as
    the EXIF Orientation tag says.
    """
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise FileNotFoundError(f"image file not found: {p}")
    return decode_image(read_file(p), mode, apply_exif_orientation, name=p)


def decode_jpeg(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False) -> Tensor:
    return decode_image(input, mode, apply_exif_orientation)


def decode_png(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False) -> Tensor:
    return decode_image(input, mode, apply_exif_orientation)


def _to_pil(tensor, name="input"):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name} should be a Tensor, got {type(tensor).__name__}")
    a = np.asarray(tensor.array.get() if hasattr(tensor.array, "get") else tensor.array)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[0] not in (1, 2, 3, 4):
        raise ValueError(f"{name} should be a uint8 tensor (C, H, W) with C in 1..4, got "
                         f"{a.dtype} with shape {a.shape}")
    hwc = a.transpose(1, 2, 0)
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[a.shape[0]]
    return Image.fromarray(np.ascontiguousarray(hwc[:, :, 0] if mode == "L" else hwc), mode)


def encode_jpeg(input, quality: int = 75) -> Tensor:
    """Encode a uint8 (1 or 3, H, W) tensor to JPEG bytes (1-D uint8 tensor)."""
    if not 1 <= quality <= 100:
        raise ValueError(f"quality must be in [1, 100], got {quality}")
    img = _to_pil(input)
    if img.mode not in ("L", "RGB"):
        raise ValueError(f"JPEG needs 1 or 3 channels, got mode {img.mode}")
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=int(quality))
    return Tensor._make(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def encode_png(input, compression_level: int = 6) -> Tensor:
    """Encode a uint8 (C, H, W) tensor to PNG bytes (1-D uint8 tensor), lossless."""
    if not 0 <= compression_level <= 9:
        raise ValueError(f"compression_level must be in [0, 9], got {compression_level}")
    buf = io.BytesIO()
    _to_pil(input).save(buf, format="PNG", compress_level=int(compression_level))
    return Tensor._make(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def write_jpeg(input, filename, quality: int = 75) -> None:
    write_file(filename, encode_jpeg(input, quality))


def write_png(input, filename, compression_level: int = 6) -> None:
    write_file(filename, encode_png(input, compression_level))
