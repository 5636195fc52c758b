"""Data benchmarks: an image-classification input pipeline, and per-sample pipe overhead.

    env -u OPENBLAS_CORETYPE python bench/data.py --rounds 5

1. JPEG pipeline (issue "data", goal: ember >= 1.5x torch's images/s): 2,000 generated JPEGs of
   about 500x375, decode -> random resized crop 224 -> horizontal flip -> normalize -> batch 64,
   2 persistent worker processes on both sides, one full epoch per call.
   ember: FileLister -> shuffle -> sharding_filter -> map(decode_crop) in ember's DataLoader,
   whose collate_fn normalizes each sample straight into a shared-memory batch (no copy to the
   main process; buffers recycled). decode_crop asks Pillow's JPEG decoder to decode at reduced
   scale (DCT scaling, "draft") when the crop is at least twice the output size (rare at this
   image size) and resizes straight from the crop box (same pixels as crop-then-resize except
   the 2-pixel border, where the filter may read just outside the box).
   torch: a Dataset doing the same with PIL in a torch DataLoader (torchvision's
   RandomResizedCrop, RandomHorizontalFlip, ToTensor, Normalize, written out with torch ops
   since torchvision is not installed).
2. Overhead of an identity pipeline of 10 maps over 1M small samples vs a plain Python loop
   making the same 10 calls (goal: at most 1.5x the loop).

The images are generated once into $TMPDIR/ember-bench-jpegs-v1. Timings on a 2-core VM are
noisy (other processes, the VM's own speed drift): compare the two columns of one run only.
"""
from __future__ import annotations

import io
import math
import os
import random
import sys
import tempfile

from harness import Suite  # first: fixes the thread count before numpy is imported

suite = Suite("data")

N_IMAGES, BATCH, WORKERS, SIZE = 2000, 64, 2, 224
SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


# ----------------------------------------------------------------------------- images
def image_dir():
    """2,000 random smooth RGB JPEGs around 500x375 (generated once, then reused)."""
    import numpy as np
    from PIL import Image

    d = os.path.join(tempfile.gettempdir(), "ember-bench-jpegs-v1")
    if os.path.isdir(d) and len([f for f in os.listdir(d) if f.endswith(".jpg")]) == N_IMAGES:
        return d
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(N_IMAGES):
        w, h = int(rng.integers(450, 551)), int(rng.integers(330, 421))
        coarse = rng.random((h // 24 + 2, w // 24 + 2, 3)) * 255  # smooth colour field
        img = np.asarray(Image.fromarray(coarse.astype(np.uint8)).resize((w, h), Image.BICUBIC),
                         np.float32)
        img += rng.normal(0, 6, (h, w, 1)).astype(np.float32)  # some texture, like a photo
        tmp = os.path.join(d, f".{i:05d}.tmp")
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(tmp, "JPEG", quality=90)
        os.replace(tmp, os.path.join(d, f"{i:05d}.jpg"))
    return d


def crop_box(width, height, rand, uniform):
    """torchvision's RandomResizedCrop.get_params: (left, top, w, h) of a random crop with
    area in SCALE of the image and aspect ratio in RATIO (log-uniform); the centre crop after
    10 failed tries. ``rand()`` in [0, 1), ``uniform(a, b)``."""
    area = width * height
    log_r = (math.log(RATIO[0]), math.log(RATIO[1]))
    for _ in range(10):
        target = area * uniform(*SCALE)
        ar = math.exp(uniform(*log_r))
        w = int(round(math.sqrt(target * ar)))
        h = int(round(math.sqrt(target / ar)))
        if 0 < w <= width and 0 < h <= height:
            top = int(rand() * (height - h + 1))
            left = int(rand() * (width - w + 1))
            return left, top, w, h
    in_ratio = width / height
    if in_ratio < RATIO[0]:
        w, h = width, int(round(width / RATIO[0]))
    elif in_ratio > RATIO[1]:
        h, w = height, int(round(height * RATIO[1]))
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


# ----------------------------------------------------------------------------- ember side
def ember_decode_crop(path):
    """JPEG file -> random resized crop 224 -> random horizontal flip, as uint8 HWC."""
    import numpy as np
    from PIL import Image

    with open(path, "rb") as f:
        im = Image.open(io.BytesIO(f.read()))
    width, height = im.size
    left, top, w, h = crop_box(width, height, random.random, random.uniform)
    reduce = 1
    while reduce < 8 and min(w, h) >= 2 * reduce * SIZE:  # the crop allows a smaller decode
        reduce *= 2
    if reduce > 1:
        im.draft("RGB", (-(-width // reduce), -(-height // reduce)))
    fx, fy = im.size[0] / width, im.size[1] / height
    box = (left * fx, top * fy, (left + w) * fx, (top + h) * fy)
    if im.mode != "RGB":
        im = im.convert("RGB")
    out = np.asarray(im.resize((SIZE, SIZE), Image.BILINEAR, box=box))
    if random.random() < 0.5:
        out = out[:, ::-1]  # the flip as a view: normalization reads it mirrored, no copy
    return out


class NormalizeBatch:
    """The collate_fn: uint8 HWC samples -> one float32 NCHW batch, ``(x / 255 - mean) / std``,
    each sample normalized straight into its slot of a shared-memory batch (``shared_empty``):
    normalize and batch in one pass, and no copy on the way to the main process."""

    def __init__(self):
        import numpy as np

        self.scale = [np.float32(1 / (255 * s)) for s in STD]
        self.shift = [np.float32(-m / s) for m, s in zip(MEAN, STD)]

    def __call__(self, samples):
        import numpy as np

        import ember
        from ember.data import shared_empty

        out = shared_empty((len(samples), 3, SIZE, SIZE), np.float32)
        for i, hwc in enumerate(samples):
            for c in range(3):
                np.multiply(hwc[:, :, c], self.scale[c], out=out[i, c], dtype=np.float32)
                out[i, c] += self.shift[c]
        return ember.from_numpy(out)


def ember_loader(folder, seed):
    from ember.data import DataLoader, FileLister

    dp = FileLister(folder, "*.jpg").shuffle().sharding_filter().map(ember_decode_crop)
    return DataLoader(dp, batch_size=BATCH, num_workers=WORKERS, shuffle=True, seed=seed,
                      collate_fn=NormalizeBatch(), persistent_workers=True)


# ----------------------------------------------------------------------------- torch side
class TorchJpegs:
    """The torchvision-style Dataset: PIL decode, RandomResizedCrop(224), RandomHorizontalFlip,
    ToTensor, Normalize (torchvision's code paths, written with torch ops)."""

    def __init__(self, folder):
        self.paths = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                            if f.endswith(".jpg"))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        import numpy as np
        import torch
        from PIL import Image

        with open(self.paths[i], "rb") as f:
            img = Image.open(f).convert("RGB")
        width, height = img.size
        left, top, w, h = crop_box(
            width, height, lambda: torch.rand(1).item(),
            lambda a, b: torch.empty(1).uniform_(a, b).item())
        img = img.crop((left, top, left + w, top + h)).resize((SIZE, SIZE), Image.BILINEAR)
        if torch.rand(1) < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        t = torch.from_numpy(np.array(img, np.uint8, copy=True))
        t = t.view(img.size[1], img.size[0], 3).permute((2, 0, 1)).contiguous()
        t = t.to(dtype=torch.float32).div(255)
        mean = torch.as_tensor(MEAN, dtype=t.dtype).view(-1, 1, 1)
        std = torch.as_tensor(STD, dtype=t.dtype).view(-1, 1, 1)
        return t.sub_(mean).div_(std)


def torch_loader(folder, seed):
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.utils.data.DataLoader(TorchJpegs(folder), batch_size=BATCH, shuffle=True,
                                       num_workers=WORKERS, generator=g, persistent_workers=True)


def _epoch(loader):
    n = 0
    for batch in loader:
        assert tuple(batch.shape[1:]) == (3, SIZE, SIZE)
        n += batch.shape[0]
    assert n == N_IMAGES, n


@suite.figure(f"JPEG decode+crop+flip+norm, {N_IMAGES} imgs, b{BATCH}, {WORKERS} workers",
              unit="s", goal=1.5, higher_is_better=True, number=1)
def jpeg_pipeline():
    folder = image_dir()
    seeds = iter(range(10 ** 6))
    e_loader, t_loader = ember_loader(folder, 0), torch_loader(folder, 0)

    def run_ember():
        e_loader.set_epoch(next(seeds))
        _epoch(e_loader)

    def run_torch():
        _epoch(t_loader)
    return run_ember, run_torch


# ----------------------------------------------------------------------------- overhead
N_SMALL, N_MAPS = 1_000_000, 10


def _identity(x):
    return x


@suite.figure(f"identity pipe: {N_MAPS} maps x {N_SMALL // 10**6}M samples", unit="s",
              goal=1.5, anchor="python loop", number=1)
def map_overhead():
    from ember.data import IterableWrapper

    dp = IterableWrapper(range(N_SMALL))
    for _ in range(N_MAPS):
        dp = dp.map(_identity)
    fns = [_identity] * N_MAPS

    def run_ember():
        for _ in dp:
            pass

    def run_loop():
        for x in range(N_SMALL):
            for f in fns:
                x = f(x)
    return run_ember, run_loop


def main(argv=None):
    result = suite.main(argv)
    for row in result["rows"]:
        if row["figure"].startswith("JPEG"):
            e, t = N_IMAGES / row["ember"], N_IMAGES / row["anchor"]
            print(f"  JPEG pipeline: ember {e:.0f} images/s, torch {t:.0f} images/s "
                  f"({e / t:.2f}x)")
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
