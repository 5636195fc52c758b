"""Datasets for the recipes: the MNIST subset shipped in the package, and a preset transform
for digit images.

``ShippedMNIST`` reads ``data/mnist_5k.csv.gz`` (5,000 MNIST digits, 500 per class; see
``data/LICENSE-mnist_5k.txt``) and splits it deterministically into 4,000 train / 1,000 test
images, stratified (400/100 per class). Samples are ``(image, label)``: by default ``image`` is
a normalized float32 array of shape (1, 28, 28); with ``transform`` it is a PIL image passed
through it.

    >>> ds = ShippedMNIST(train=False)
    >>> len(ds), ds[0][0].shape, ds[0][0].dtype, ds.classes[:3]
    (1000, (1, 28, 28), dtype('float32'), ['0', '1', '2'])
"""
from __future__ import annotations

import functools
import os

import numpy as np

from ember.vision.transforms._presets import MNIST_MEAN, MNIST_STD, DigitClassification

__all__ = ["ShippedMNIST", "DigitPreset", "MNIST_MEAN", "MNIST_STD", "DATA_FILE"]

DATA_FILE = os.path.join(os.path.dirname(__file__), "data", "mnist_5k.csv.gz")
_TEST_PER_CLASS = 100
_SPLIT_SEED = 20240607


@functools.lru_cache(maxsize=1)
def _load_all():
    a = np.loadtxt(DATA_FILE, delimiter=",", dtype=np.uint8)   # 784 pixels, then the label
    images = np.ascontiguousarray(a[:, :-1].reshape(-1, 28, 28))
    labels = a[:, -1].astype(np.int64)
    rng = np.random.default_rng(_SPLIT_SEED)
    test = np.sort(np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:_TEST_PER_CLASS]
                                   for c in range(10)]))
    is_train = np.ones(len(labels), bool)
    is_train[test] = False
    # a fixed shuffle of each split, so that a ``limit`` keeps a mix of all classes
    train = np.flatnonzero(is_train)
    return images, labels, train[rng.permutation(len(train))], test[rng.permutation(len(test))]


class ShippedMNIST:
    """The shipped MNIST subset (map-style). ``train``: the 4,000-image split, else the 1,000
    test images. ``transform``: applied to a PIL ``L`` image (default: scale to [0, 1] and
    normalize with the MNIST mean/std, as a (1, 28, 28) float32 array). ``limit``: keep only
    the first ``limit`` samples (short test runs). ``shift``: random translation by up to that
    many pixels per axis (augmentation, drawn from ember's default generator so that seeds and
    checkpoints cover it; default transform only)."""

    classes = [str(i) for i in range(10)]

    def __init__(self, train=True, transform=None, target_transform=None, limit=None, shift=0):
        images, labels, tr, te = _load_all()
        idx = tr if train else te
        if limit is not None:
            if int(limit) < 1:
                raise ValueError(f"limit must be >= 1, got {limit}")
            idx = idx[:int(limit)]
        self.images, self.targets = images[idx], labels[idx]
        norm = ((images[idx].astype(np.float32) * np.float32(1 / 255) - np.float32(MNIST_MEAN))
                / np.float32(MNIST_STD))
        self.shift = int(shift)
        if self.shift < 0:
            raise ValueError(f"shift must be >= 0, got {shift}")
        s = self.shift
        self._norm = norm[:, None]
        self._padded = None if s == 0 else np.pad(
            norm, ((0, 0), (s, s), (s, s)), constant_values=np.float32(-MNIST_MEAN / MNIST_STD))
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        if self.transform is None and self.shift:
            import ember

            s = self.shift
            dy, dx = ember.default_generator.numpy_generator().integers(0, 2 * s + 1, size=2)
            img = self._padded[i, dy:dy + 28, dx:dx + 28][None].copy()
        elif self.transform is None:
            img = self._norm[i]
        else:
            from PIL import Image

            img = self.transform(Image.fromarray(self.images[i], mode="L"))
        y = int(self.targets[i])
        if self.target_transform is not None:
            y = self.target_transform(y)
        return img, y


# the digit models' inference transform lives in ember.vision (so that the shipped weights can
# name it); this alias keeps configs and weights manifests written with the old path working
DigitPreset = DigitClassification
