"""Folder datasets: ``root/<class>/<file>`` -> (sample, class index).

    >>> ds = ImageFolder("path/to/train")            # doctest: +SKIP
    >>> img, label = ds[0]; ds.classes[label]        # doctest: +SKIP
"""
from __future__ import annotations

import os

from .vision import VisionDataset

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp",
                  ".gif")


def has_file_allowed_extension(filename: str, extensions) -> bool:
    ext = (extensions,) if isinstance(extensions, str) else tuple(extensions)
    return filename.lower().endswith(tuple(e.lower() for e in ext))


def find_classes(directory):
    """Sorted class folder names and their indices."""
    classes = sorted(e.name for e in os.scandir(directory) if e.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {c: i for i, c in enumerate(classes)}


def make_dataset(directory, class_to_idx=None, extensions=None, is_valid_file=None,
                 allow_empty=False):
    """-> [(path, class index)] in sorted order, following symlinked folders."""
    directory = os.path.expanduser(os.fspath(directory))
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the "
                         "same time")
    if extensions is not None:
        def is_valid_file(p):
            return has_file_allowed_extension(p, extensions)
    items, found = [], set()
    for cls in sorted(class_to_idx):
        d = os.path.join(directory, cls)
        if not os.path.isdir(d):
            continue
        for dirpath, _, files in sorted(os.walk(d, followlinks=True)):
            for name in sorted(files):
                p = os.path.join(dirpath, name)
                if is_valid_file(p):
                    items.append((p, class_to_idx[cls]))
                    found.add(cls)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            ext = extensions if isinstance(extensions, str) else ", ".join(extensions)
            msg += f"Supported extensions are: {ext}"
        raise FileNotFoundError(msg)
    return items


def pil_loader(path):
    """Open an image file as an RGB PIL image; errors name the file."""
    from PIL import Image, UnidentifiedImageError
    try:
        with open(path, "rb") as f:
            img = Image.open(f)
            return img.convert("RGB")
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise RuntimeError(f"could not decode image {path}: {e}") from e


def default_loader(path):
    return pil_loader(path)


class DatasetFolder(VisionDataset):
    """Generic ``root/<class>/**/<file>`` dataset; ``loader(path)`` reads a sample. Give
    ``extensions`` or ``is_valid_file``; ``allow_empty`` accepts class folders with no file."""

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None,
                 is_valid_file=None, allow_empty=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"dataset folder not found: {self.root}")
        self.classes, self.class_to_idx = self.find_classes(self.root)
        self.samples = make_dataset(self.root, self.class_to_idx, extensions, is_valid_file,
                                    allow_empty)
        self.loader, self.extensions = loader, extensions
        self.targets = [s[1] for s in self.samples]
        self.imgs = self.samples

    @staticmethod
    def find_classes(directory):
        return find_classes(directory)

    def __getitem__(self, index):
        path, target = self.samples[index]
        return self._apply(self.loader(path), target)

    def __len__(self):
        return len(self.samples)


class ImageFolder(DatasetFolder):
    """Images in ``root/<class>/`` loaded as RGB PIL images (``loader`` to change that)."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader,
                 is_valid_file=None, allow_empty=False):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None,
                         transform, target_transform, is_valid_file, allow_empty)
