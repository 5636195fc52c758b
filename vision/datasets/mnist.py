"""MNIST, FashionMNIST and KMNIST from the idx files (plain or ``.gz``) in ``root/<Name>/raw``.

Items are (PIL image "L" 28x28, int). As in torchvision, ``data`` is a uint8 Tensor (N, 28, 28)
and ``targets`` an int64 Tensor (N,). ``read_idx(path)`` reads any idx file to a numpy array.
"""
from __future__ import annotations

import gzip
import os

import numpy as np

from .utils import download_and_extract_archive
from .vision import VisionDataset

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path) -> np.ndarray:
    """Read an idx file (magic 0x0000TTNN: type TT, NN dims, big-endian sizes), gz or not."""
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise RuntimeError(f"{path}: not an idx file (bad magic number)")
    dt, nd = np.dtype(_IDX_TYPES[raw[2]]), raw[3]
    shape = tuple(int(v) for v in np.frombuffer(raw, ">u4", nd, 4))
    need = int(np.prod(shape)) * dt.itemsize
    body = raw[4 + 4 * nd:]
    if len(body) != need:
        raise RuntimeError(f"{path}: idx header says {shape} of {dt} ({need} bytes) but the file "
                           f"holds {len(body)}")
    return np.frombuffer(body, dt).reshape(shape).astype(dt.newbyteorder("="))


class MNIST(VisionDataset):
    """The MNIST digits; ``download`` fetches the four .gz files from ``mirrors`` (md5-checked)."""

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/"]
    resources = [("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
                 ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
                 ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
                 ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c")]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        prefix = "train" if train else "t10k"
        from ember import Tensor

        self.data = Tensor._make(read_idx(self._find(f"{prefix}-images-idx3-ubyte")))
        self.targets = Tensor._make(
            read_idx(self._find(f"{prefix}-labels-idx1-ubyte")).astype(np.int64))
        if self.data.dtype != np.uint8 or self.data.ndim != 3:
            raise RuntimeError(f"{self.raw_folder}: expected uint8 images (N, H, W), got "
                               f"{self.data.dtype} {tuple(self.data.shape)}")
        if len(self.data) != len(self.targets):
            raise RuntimeError(f"{self.raw_folder}: {len(self.data)} images but "
                               f"{len(self.targets)} labels")
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    def _find(self, stem):
        for name in (stem, stem + ".gz"):
            p = os.path.join(self.raw_folder, name)
            if os.path.isfile(p):
                return p
        raise RuntimeError(f"Dataset not found: {os.path.join(self.raw_folder, stem)}[.gz]. "
                           "You can use download=True to download it")

    def download(self):
        os.makedirs(self.raw_folder, exist_ok=True)
        for name, md5 in self.resources:
            if os.path.isfile(os.path.join(self.raw_folder, name[:-3])):
                continue
            errors = []
            for mirror in self.mirrors:
                try:
                    download_and_extract_archive(mirror + name, self.raw_folder, filename=name,
                                                 md5=md5)
                    break
                except (OSError, RuntimeError) as e:
                    errors.append(f"{mirror}{name}: {e}")
            else:
                raise RuntimeError("could not download " + name + ":\n" + "\n".join(errors))

    def __getitem__(self, index):
        from PIL import Image
        return self._apply(Image.fromarray(self.data.array[index]),
                           int(self.targets.array[index]))

    def extra_repr(self):
        return f"Split: {'Train' if self.train is True else 'Test'}"

    def __len__(self):
        return len(self.data)


class FashionMNIST(MNIST):
    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
                 ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
                 ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
                 ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310")]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]


class KMNIST(MNIST):
    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
                 ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
                 ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
                 ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134")]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
