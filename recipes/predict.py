"""Recipe ``predict``: an image file or a folder of images in, the top-5 categories out, using
the weights' own transforms and categories.

    ember run predict input=digit.png                   # weights of the last `ember run classify`
    ember run predict input=photos/ weights=ResNet18_Weights.DEFAULT

With ``input: null`` it writes a few digits of the shipped test split as PNGs into the output
folder and predicts those. Results are printed and written to ``predictions.csv``.
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
