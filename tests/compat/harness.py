"""Runs a program from ``programs/`` as written (``import ember as torch``) or, for
comparison, with its import lines pointed at PyTorch: the two runs differ only there."""
from __future__ import annotations

import re
import types
from pathlib import Path

PROGRAMS = Path(__file__).parent / "programs"
_IMPORT = re.compile(r"^(\s*)(import|from)\s+ember\b(\.\w+)*")


def source(name, lib="ember"):
    text = (PROGRAMS / f"{name}.py").read_text()
    if lib == "ember":
        return text
    out = []
    for line in text.splitlines():
        m = _IMPORT.match(line)
        if m:
            line = line.replace("ember.vision", "torchvision").replace("ember.data",
                                                                        "torch.utils.data")
            line = re.sub(r"\bember\b", "torch", line)
        out.append(line)
    return "\n".join(out) + "\n"


def load(name, lib="ember"):
    """The program as a module (its ``main`` not yet run)."""
    mod = types.ModuleType(f"compat_{name}_{lib}")
    mod.__file__ = str(PROGRAMS / f"{name}.py")
    exec(compile(source(name, lib), mod.__file__, "exec"), mod.__dict__)
    return mod


def import_lines(name):
    return [ln for ln in (PROGRAMS / f"{name}.py").read_text().splitlines() if _IMPORT.match(ln)]


def write_mnist_idx(root, n_train=1200, n_test=500):
    """MNIST-format idx files (``root/MNIST/raw``) from the digits ember ships."""
    import gzip
    import os

    import numpy as np

    from ember.recipes._data import DATA_FILE

    a = np.loadtxt(DATA_FILE, delimiter=",", dtype=np.uint8)   # 784 pixels, then the label
    order = np.random.default_rng(0).permutation(len(a))     # the file is sorted by digit
    images, labels = a[order, :-1].reshape(-1, 28, 28), a[order, -1]
    raw = os.path.join(root, "MNIST", "raw")
    os.makedirs(raw, exist_ok=True)

    def idx(arr):
        return bytes([0, 0, 0x08, arr.ndim]) + b"".join(
            int(s).to_bytes(4, "big") for s in arr.shape) + arr.tobytes()

    parts = {"train": slice(0, n_train), "t10k": slice(n_train, n_train + n_test)}
    for prefix, sl in parts.items():
        for kind, arr in (("images-idx3", images[sl]), ("labels-idx1", labels[sl])):
            with gzip.open(os.path.join(raw, f"{prefix}-{kind}-ubyte.gz"), "wb") as f:
                f.write(idx(np.ascontiguousarray(arr)))
    return root
