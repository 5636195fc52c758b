"""``FakeData``: random images and labels, reproducible per index (seeded by ``random_offset``)."""
from __future__ import annotations

import numpy as np

from .vision import VisionDataset


class FakeData(VisionDataset):
    """``size`` random PIL images of ``image_size`` (C, H, W) with labels in [0, num_classes).

        >>> img, label = FakeData(size=2, image_size=(3, 8, 8))[1]
        >>> img.size, 0 <= label < 10
        ((8, 8), True)
    """

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        if len(image_size) != 3 or image_size[0] not in (1, 3):
            raise ValueError(f"image_size should be (C, H, W) with C 1 or 3, got {image_size}")
        self.size, self.image_size = int(size), tuple(image_size)
        self.num_classes, self.random_offset = int(num_classes), int(random_offset)

    def __getitem__(self, index):
        from PIL import Image
        if not -self.size <= index < self.size:
            raise IndexError(f"{type(self).__name__} index {index} out of range for "
                             f"{self.size} items")
        index %= self.size
        g = np.random.default_rng(index + self.random_offset)
        img = (g.random(self.image_size) * 255).astype(np.uint8)
        target = int(g.integers(0, self.num_classes))
        hwc = img.transpose(1, 2, 0)
        pil = Image.fromarray(hwc[:, :, 0] if self.image_size[0] == 1 else hwc)
        return self._apply(pil, target)

    def __len__(self):
        return self.size
