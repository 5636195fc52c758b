"""``VisionDataset``: the base of the datasets; a ``MapDataPipe`` (``ds[i]``, ``len(ds)``, and the
pipe methods ``map``, ``shuffle``, ``batch``, ``to_iter``), with ``transform`` (image),
``target_transform`` and joint ``transforms(image, target)``."""
from __future__ import annotations

import os

from ember.data import MapDataPipe


class VisionDataset(MapDataPipe):
    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        self.root = os.path.expanduser(os.fspath(root)) if root is not None else None
        if transforms is not None and (transform is not None or target_transform is not None):
            raise ValueError("Only transforms or transform/target_transform can be passed as "
                             "argument")
        self.transform, self.target_transform = transform, target_transform
        self.transforms = transforms

    def _apply(self, img, target):
        if self.transforms is not None:
            return self.transforms(img, target)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def describe(self):
        return f"{type(self).__name__}(root={self.root!r}, len={len(self)})"

    def __repr__(self):
        return f"Dataset {type(self).__name__}\n    Number of datapoints: {len(self)}\n" \
               f"    Root location: {self.root}"
