"""CIFAR-10 / CIFAR-100 from the python-pickle batches, read by a restricted unpickler that admits
exactly what those files hold: dicts, lists, str/bytes, numbers and plain numeric numpy arrays.

    >>> ds = CIFAR10("data", train=True, download=True)     # doctest: +SKIP
    >>> img, label = ds[0]                                  # PIL image 32x32, int
"""
from __future__ import annotations

import os
import pickle

import numpy as np

from .utils import check_integrity, download_and_extract_archive
from .vision import VisionDataset


def _reconstruct(cls, shape, dtype):
    if cls is not np.ndarray:
        raise pickle.UnpicklingError(f"refused to build {cls!r}: only numpy.ndarray is allowed")
    return np.ndarray.__new__(np.ndarray, shape, _dtype(dtype))


def _dtype(code, align=False, copy=False):
    dt = np.dtype(code)
    if dt.hasobject or dt.kind not in "biuf":
        raise pickle.UnpicklingError(f"refused numpy dtype {dt}: only numeric arrays are allowed")
    return dt


def _latin1_bytes(text, encoding="latin1"):
    """How protocol-2 pickles written by Python 3 spell bytes."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise pickle.UnpicklingError(f"refused _codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


_ALLOWED = {("_codecs", "encode"): _latin1_bytes,
            ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
            ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
            ("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): _dtype}


class _BatchUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        hit = _ALLOWED.get((module, name))
        if hit is None:
            raise pickle.UnpicklingError(f"refused global {module}.{name}: a CIFAR batch holds "
                                         "only dicts, lists, strings and numpy arrays")
        return hit


def load_batch(path) -> dict:
    """Load one CIFAR pickle batch safely; keys are decoded to str."""
    with open(path, "rb") as f:
        try:
            obj = _BatchUnpickler(f, encoding="latin1").load()
        except pickle.UnpicklingError as e:
            raise pickle.UnpicklingError(f"{path}: {e}") from None
        except (EOFError, ValueError, TypeError, IndexError, KeyError) as e:
            raise pickle.UnpicklingError(f"{path}: corrupt CIFAR batch ({e})") from None
    if not isinstance(obj, dict):
        raise pickle.UnpicklingError(f"{path}: expected a dict, got {type(obj).__name__}")
    return {(k.decode("latin1") if isinstance(k, bytes) else k): v for k, v in obj.items()}


class CIFAR10(VisionDataset):
    """CIFAR-10: 50,000 train / 10,000 test 32x32 RGB images in 10 classes; items are
    (PIL image, int). ``download`` fetches and checks the archive (md5) into ``root``."""

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [[f"data_batch_{i}", None] for i in range(1, 6)]
    test_list = [["test_batch", None]]
    meta = {"filename": "batches.meta", "key": "label_names"}
    label_key = "labels"

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        folder = os.path.join(self.root, self.base_folder)
        if not os.path.isdir(folder):
            raise RuntimeError(f"Dataset not found at {folder}. You can use download=True to "
                               "download it")
        data, targets = [], []
        for name, md5 in (self.train_list if train else self.test_list):
            path = os.path.join(folder, name)
            if md5 is not None and not check_integrity(path, md5):
                raise RuntimeError(f"{path} is corrupt (md5 mismatch); download it again")
            entry = load_batch(path)
            data.append(np.asarray(entry["data"], dtype=np.uint8))
            targets.extend(int(t) for t in entry[self.label_key])
        self.data = np.ascontiguousarray(np.concatenate(data).reshape(-1, 3, 32, 32)
                                         .transpose(0, 2, 3, 1))   # (N, 32, 32, 3)
        self.targets = targets
        if len(self.targets) != len(self.data):
            raise RuntimeError(f"{folder}: {len(self.data)} images but {len(self.targets)} labels")
        meta = load_batch(os.path.join(folder, self.meta["filename"]))
        self.classes = [c.decode() if isinstance(c, bytes) else c for c in meta[self.meta["key"]]]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def download(self):
        if os.path.isdir(os.path.join(self.root, self.base_folder)):
            return
        download_and_extract_archive(self.url, self.root, filename=self.filename,
                                     md5=self.tgz_md5)

    def __getitem__(self, index):
        from PIL import Image
        return self._apply(Image.fromarray(self.data[index]), self.targets[index])

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        return f"Split: {'Train' if self.train is True else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100: 100 fine classes (``targets``); the 20 coarse labels are in ``coarse_targets``
    when the batches carry them."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", None]]
    test_list = [["test", None]]
    meta = {"filename": "meta", "key": "fine_label_names"}
    label_key = "fine_labels"
