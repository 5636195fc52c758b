"""Recipe ``predict``: an image file or a folder of images in, the top-5 categories out, using
the weights' own transforms and categories.

    ember run predict input=digit.png                   # weights of the last `ember run classify`
    ember run predict input=photos/ weights=ResNet18_Weights.DEFAULT

With ``input: null`` it writes a few digits of the shipped test split as PNGs into the output
folder and predicts those. Results are printed and written to ``predictions.csv``.

Inputs far from what the weights were trained on get a warning, once for the whole run: a
colour image into weights that take one channel, or an image whose size differs by more than
2x from the training images' (``meta["input_size"]``, which ``classify`` records) or lies below
``meta["min_size"]``. Such inputs still get predictions, but confident-looking ones mean
nothing.
"""
from __future__ import annotations

import csv
import os

import numpy as np

import ember

from ember.recipes._registry import register_recipe
from ember.recipes._runtime import final_lines
from ember.recipes._weights import load_for_inference

__all__ = ["main", "list_images"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm")


def list_images(path):
    """The image files at ``path`` (a file, or a folder searched recursively), sorted."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise FileNotFoundError(f"input {path!r} is neither an image file nor a folder")
    found = []
    for root, _, files in os.walk(path):
        found += [os.path.join(root, f) for f in files if f.lower().endswith(IMAGE_SUFFIXES)]
    if not found:
        raise FileNotFoundError(f"no images ({', '.join(IMAGE_SUFFIXES)}) under {path!r}")
    return sorted(found)


def _samples(out, n):
    """Write ``n`` digits of the shipped test split as PNGs; returns their folder."""
    from PIL import Image

    from ._data import ShippedMNIST

    ds = ShippedMNIST(train=False)
    folder = os.path.join(out, "samples")
    os.makedirs(folder, exist_ok=True)
    for i in range(0, len(ds), max(len(ds) // n, 1))[:n]:
        Image.fromarray(ds.images[i], mode="L").save(
            os.path.join(folder, f"test{i:04d}_label{ds.targets[i]}.png"))
    return folder


def expected_input(weights, transform):
    """What the weights were trained on: ``(channels, (h, w) or None, min (h, w) or None)``.
    ``channels`` is ``meta["input_channels"]``, else what ``transform`` makes of a colour image
    (1 for a grayscale preset); the size is ``meta["input_size"]``."""
    from PIL import Image

    meta = weights.meta
    channels = meta.get("input_channels")
    if channels is None:
        try:
            probe = transform(Image.new("RGB", (64, 64), (200, 40, 40)))
            channels = int(probe.shape[0]) if len(probe.shape) == 3 else None
        except Exception:   # noqa: BLE001 (a preset that cannot take a probe: no check)
            channels = None
    size = meta.get("input_size")
    min_size = meta.get("min_size")
    return (channels, tuple(int(v) for v in size) if size else None,
            tuple(int(v) for v in min_size) if min_size else None)


def _is_colour(img):
    """Whether a PIL image holds colour (channels that differ), not gray stored as RGB."""
    if img.mode in ("1", "L", "LA", "I", "I;16", "F"):
        return False
    small = img.convert("RGB")
    small.thumbnail((128, 128))
    a = np.asarray(small, dtype=np.int16)
    return bool(np.abs(a - a[..., :1]).max() > 16)


def mismatch(img, expected):
    """What makes ``img`` (PIL) far from the ``expected_input`` (its size and kind, as text),
    or None when it is like the training images."""
    channels, size, min_size = expected
    w, h = img.size
    colour = _is_colour(img)
    far = channels == 1 and colour
    if size is not None:
        far |= not (size[0] / 2 <= h <= 2 * size[0] and size[1] / 2 <= w <= 2 * size[1])
    if min_size is not None:
        far |= h < min_size[0] or w < min_size[1]
    return f"{w}x{h} {'colour' if colour else 'grayscale'}" if far else None


def _mismatch_file(path, expected):
    from PIL import Image

    with Image.open(path) as img:
        return mismatch(img, expected)


def _describe_training(expected):
    channels, size, min_size = expected
    kind = {1: "grayscale", 3: "colour"}.get(channels, f"{channels}-channel" if channels else "")
    what = f"{size[1]}x{size[0]} " if size else ""
    text = f"{what}{kind} images".strip() if (what or kind) else "their training images"
    if min_size is not None and size is None:
        text += f" of at least {min_size[1]}x{min_size[0]}"
    return text


@register_recipe("predict")
def main(cfg):
    """Predict per ``cfg`` (see ``configs/predict.yaml``); returns the exit code."""
    out, device, weights, model = load_for_inference(cfg, "predict")
    transform = weights.transforms()
    categories = weights.meta.get("categories")
    source = cfg.get("input")
    if source is None:
        source = _samples(out, int(cfg.get("num_samples", 8)))
        print(f"no input given: predicting {source} (digits from the shipped test split)")
    files = list_images(str(source))
    k = int(cfg.get("topk", 5))
    expected = expected_input(weights, transform)
    far = [(p, why) for p in files if (why := _mismatch_file(p, expected))]
    if far:
        many = len(far) > 1
        listed = ", ".join(f"{os.path.basename(p)} ({why})" for p, why in far[:3])
        print(f"warning: {len(far)} of {len(files)} input{'s' if len(files) > 1 else ''} "
              f"{'are' if many else 'is'} far from what these weights were trained on "
              f"({_describe_training(expected)}): {listed}{', ...' if len(far) > 3 else ''}; "
              f"{'their' if many else 'its'} predictions mean little, however confident they "
              f"look", flush=True)
    rows = []
    with ember.no_grad():
        for path in files:
            x = transform(_open(path))
            logits = model(x.unsqueeze(0).to(device)).cpu().numpy()[0].astype(np.float64)
            p = np.exp(logits - logits.max())
            p /= p.sum()
            top = np.argsort(-p, kind="stable")[:min(k, len(p))]
            names = [categories[i] if categories else str(i) for i in top]
            rows.append([path] + [f"{n}:{p[i]:.4f}" for n, i in zip(names, top)])
            print(f"{os.path.basename(path)}: " + ", ".join(
                f"{n} ({100 * p[i]:.1f}%)" for n, i in zip(names, top)))
    csv_path = os.path.join(out, "predictions.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["path"] + [f"top{i + 1}" for i in range(len(rows[0]) - 1)])
        w.writerows(rows)
    final_lines([("predictions", csv_path), ("config", os.path.join(out, "config.yaml"))])
    return 0


def _open(path):
    from PIL import Image

    return Image.open(path).convert("RGB")
