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

    def extra_repr(self) -> str:
        """Dataset-specific lines for ``repr`` (e.g. "Split: Train")."""
        return ""

    def _transforms_lines(self):
        if self.transforms is not None:
            return repr(self.transforms).splitlines()
        if self.transform is None and self.target_transform is None:
            return []
        lines = ["StandardTransform"]  # torchvision's name for the transform pair
        for head, t in (("Transform: ", self.transform),
                        ("Target transform: ", self.target_transform)):
            if t is not None:
                body = repr(t).splitlines() or [""]
                lines.append(head + body[0])
                lines += [" " * len(head) + line for line in body[1:]]
        return lines

    def __repr__(self):
        body = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        body += self._transforms_lines()
        return "\n".join([f"Dataset {type(self).__name__}"] + ["    " + line for line in body])
