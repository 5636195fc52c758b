"""Datasets on files the tests generate: folders, CIFAR pickles, MNIST idx(.gz), FakeData, and the
download/extract helpers (local URLs, md5/sha256)."""
import gzip
import hashlib
import io
import os
import pickle
import tarfile
import zipfile

import numpy as np
import pytest
from PIL import Image

import ember
from ember.data import MapDataPipe
from ember.vision import datasets as D
from ember.vision import transforms as T


def _write_folder(root):
    for ci, cls in enumerate(["cat", "dog"]):
        os.makedirs(root / cls / "sub", exist_ok=True)
        for i in range(3):
            Image.fromarray(np.full((5, 6, 3), ci * 100 + i, np.uint8)).save(root / cls / f"{i}.png")
        Image.fromarray(np.zeros((5, 6, 3), np.uint8)).save(root / cls / "sub" / "x.jpg")
        (root / cls / "notes.txt").write_text("skip me")


def test_image_folder(tmp_path):
    _write_folder(tmp_path)
    ds = D.ImageFolder(str(tmp_path), transform=T.PILToTensor())
    assert isinstance(ds, MapDataPipe)
    assert ds.classes == ["cat", "dog"] and len(ds) == 8
    img, label = ds[0]
    assert img.shape == (3, 5, 6) and label == 0
    assert [t for _, t in ds.samples] == [0] * 4 + [1] * 4
    assert int(ds[5][0].numpy()[0, 0, 0]) == 101
    # usable as a DataPipe
    labels = list(ds.map(lambda s: s[1]).to_iter())
    assert labels == ds.targets
    assert sorted(x[1] for x in ds.shuffle(seed=0)) == sorted(ds.targets)


def test_dataset_folder_options(tmp_path):
    _write_folder(tmp_path)
    os.makedirs(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="empty"):
        D.DatasetFolder(str(tmp_path), loader=open, extensions=(".txt",))
    ds = D.DatasetFolder(str(tmp_path), loader=lambda p: open(p).read(), extensions=(".txt",),
                         allow_empty=True)
    assert len(ds) == 2 and ds[1] == ("skip me", 1) and ds.classes == ["cat", "dog", "empty"]
    ds = D.DatasetFolder(str(tmp_path), loader=lambda p: p, allow_empty=True,
                         is_valid_file=lambda p: p.endswith(".jpg"))
    assert len(ds) == 2
    with pytest.raises(ValueError, match="extensions"):
        D.DatasetFolder(str(tmp_path), loader=open)


def test_image_folder_corrupt_file_names_it(tmp_path):
    os.makedirs(tmp_path / "a")
    (tmp_path / "a" / "bad.png").write_bytes(b"not a png")
    ds = D.ImageFolder(str(tmp_path))
    with pytest.raises(RuntimeError, match="bad.png"):
        ds[0]


def _cifar_tar(tmp_path, folder, train_names, test_names, meta_name, label_key, meta_key, n=4):
    d = tmp_path / "build" / folder
    os.makedirs(d)
    rng = np.random.default_rng(0)
    expect = {}
    for name in train_names + test_names:
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, n)]
        entry = {b"batch_label": b"x", b"data": data, label_key.encode(): labels,
                 b"filenames": [b"f%d.png" % i for i in range(n)]}
        with open(d / name, "wb") as f:
            pickle.dump(entry, f, protocol=2)
        expect[name] = (data, labels)
    with open(d / meta_name, "wb") as f:
        pickle.dump({meta_key.encode(): [b"c%d" % i for i in range(10)]}, f, protocol=2)
    tar = tmp_path / "src" / "archive.tar.gz"
    os.makedirs(tar.parent)
    with tarfile.open(tar, "w:gz") as t:
        t.add(d, arcname=folder)
    return str(tar), expect


def test_cifar10_download_and_read(tmp_path, monkeypatch):
    names = [f"data_batch_{i}" for i in range(1, 6)]
    tar, expect = _cifar_tar(tmp_path, "cifar-10-batches-py", names, ["test_batch"],
                             "batches.meta", "labels", "label_names")
    md5 = hashlib.md5(open(tar, "rb").read()).hexdigest()
    monkeypatch.setattr(D.CIFAR10, "url", tar)
    monkeypatch.setattr(D.CIFAR10, "tgz_md5", md5)
    root = tmp_path / "root"
    ds = D.CIFAR10(str(root), train=True, download=True)
    assert len(ds) == 20 and ds.classes[3] == "c3"
    img, label = ds[5]
    want = expect["data_batch_2"][0][1].reshape(3, 32, 32).transpose(1, 2, 0)
    np.testing.assert_array_equal(np.asarray(img), want)
    assert label == expect["data_batch_2"][1][1]
    # torchvision's layout: data a numpy uint8 array (N, 32, 32, 3) HWC, targets a list of ints
    assert isinstance(ds.data, np.ndarray) and ds.data.dtype == np.uint8
    assert ds.data.shape == (20, 32, 32, 3)
    assert isinstance(ds.targets, list) and all(type(t) is int for t in ds.targets)
    assert ds.targets[:4] == expect["data_batch_1"][1]
    test = D.CIFAR10(str(root), train=False, transform=T.ToTensor())
    x, y = test[0]
    assert x.shape == (3, 32, 32) and x.dtype == ember.float32 and len(test) == 4
    assert repr(test).splitlines()[:4] == ["Dataset CIFAR10", "    Number of datapoints: 4",
                                           f"    Root location: {root}", "    Split: Test"]


def test_cifar100(tmp_path, monkeypatch):
    tar, expect = _cifar_tar(tmp_path, "cifar-100-python", ["train"], ["test"], "meta",
                             "fine_labels", "fine_label_names")
    monkeypatch.setattr(D.CIFAR100, "url", tar)
    monkeypatch.setattr(D.CIFAR100, "tgz_md5", hashlib.md5(open(tar, "rb").read()).hexdigest())
    ds = D.CIFAR100(str(tmp_path / "r"), train=False, download=True)
    assert len(ds) == 4 and ds.targets == expect["test"][1]


def test_cifar_unpickler_refuses_other_globals(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    p = tmp_path / "evil"
    with open(p, "wb") as f:
        pickle.dump({"data": Evil()}, f, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="refused global"):
        D.cifar.load_batch(p)
    with open(p, "wb") as f:
        pickle.dump({"data": np.array([object()], dtype=object)}, f, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        D.cifar.load_batch(p)


def _idx(arr, code):
    hdr = bytes([0, 0, code, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    return hdr + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


@pytest.mark.parametrize("cls", [D.MNIST, D.FashionMNIST, D.KMNIST])
@pytest.mark.parametrize("gz", [False, True])
def test_mnist_family_idx(tmp_path, cls, gz):
    raw = tmp_path / cls.__name__ / "raw"
    os.makedirs(raw)
    rng = np.random.default_rng(1)
    imgs = rng.integers(0, 256, (7, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 7).astype(np.uint8)
    for stem, arr in [("t10k-images-idx3-ubyte", imgs), ("t10k-labels-idx1-ubyte", labels)]:
        data = _idx(arr, 0x08)
        if gz:
            with gzip.open(raw / (stem + ".gz"), "wb") as f:
                f.write(data)
        else:
            (raw / stem).write_bytes(data)
    ds = cls(str(tmp_path), train=False)
    assert len(ds) == 7 and isinstance(ds, MapDataPipe)
    img, y = ds[3]
    np.testing.assert_array_equal(np.asarray(img), imgs[3])
    assert y == labels[3] and type(y) is int and img.mode == "L"
    # torchvision's layout: data a uint8 tensor (N, 28, 28), targets an int64 tensor (N,)
    assert isinstance(ds.data, ember.Tensor) and ds.data.dtype == ember.uint8
    assert tuple(ds.data.shape) == (7, 28, 28)
    np.testing.assert_array_equal(ds.data.numpy(), imgs)
    assert isinstance(ds.targets, ember.Tensor) and ds.targets.dtype == ember.int64
    assert ds.targets.tolist() == labels.tolist()
    assert repr(ds) == (f"Dataset {cls.__name__}\n    Number of datapoints: 7\n"
                        f"    Root location: {tmp_path}\n    Split: Test")
    with pytest.raises(RuntimeError, match="download=True"):
        cls(str(tmp_path), train=True)


def test_read_idx_types_and_errors(tmp_path):
    a = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    (tmp_path / "a").write_bytes(_idx(a, 0x0C))
    np.testing.assert_array_equal(D.read_idx(tmp_path / "a"), a)
    (tmp_path / "b").write_bytes(_idx(a, 0x0C)[:-3])
    with pytest.raises(RuntimeError, match="bytes"):
        D.read_idx(tmp_path / "b")
    (tmp_path / "c").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(RuntimeError, match="magic"):
        D.read_idx(tmp_path / "c")


def test_fakedata_reproducible():
    ds = D.FakeData(size=5, image_size=(3, 6, 7), num_classes=4, transform=T.PILToTensor())
    a, la = ds[2]
    b, lb = ds[2]
    assert a.shape == (3, 6, 7) and la == lb and 0 <= la < 4
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert len(list(ds.to_iter())) == 5
    with pytest.raises(IndexError):
        ds[5]


def test_download_helpers(tmp_path):
    src = tmp_path / "payload.bin"
    src.write_bytes(b"hello world")
    md5 = hashlib.md5(b"hello world").hexdigest()
    sha = hashlib.sha256(b"hello world").hexdigest()
    D.download_url(str(src), str(tmp_path / "dl"), md5=md5, sha256=sha[:16])
    assert (tmp_path / "dl" / "payload.bin").read_bytes() == b"hello world"
    assert D.check_integrity(str(tmp_path / "dl" / "payload.bin"), md5, sha)
    with pytest.raises(RuntimeError, match="md5"):
        D.download_url(str(src), str(tmp_path / "dl2"), md5="0" * 32)
    assert not (tmp_path / "dl2" / "payload.bin").exists()
    with pytest.raises(Exception, match="hash"):
        D.download_url(str(src), str(tmp_path / "dl3"), sha256="00")
    # zip and gz extraction, and a tar that tries to escape
    z = tmp_path / "a.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("in/x.txt", "zipped")
    D.download_and_extract_archive(str(z), str(tmp_path / "dz"), md5=hashlib.md5(
        z.read_bytes()).hexdigest())
    assert (tmp_path / "dz" / "in" / "x.txt").read_text() == "zipped"
    g = tmp_path / "f.txt.gz"
    with gzip.open(g, "wb") as f:
        f.write(b"gz!")
    D.extract_archive(str(g), str(tmp_path / "dg"))
    assert (tmp_path / "dg" / "f.txt").read_bytes() == b"gz!"
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as t:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 3
        t.addfile(info, io.BytesIO(b"bad"))
    with pytest.raises(RuntimeError, match="outside"):
        D.extract_archive(str(evil), str(tmp_path / "de"))
    assert not (tmp_path / "escape.txt").exists()


def test_mnist_download_from_mirror(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    os.makedirs(mirror)
    rng = np.random.default_rng(2)
    arrays = {"images": rng.integers(0, 256, (3, 28, 28), dtype=np.uint8),
              "labels": rng.integers(0, 10, 3).astype(np.uint8)}
    resources = []
    for split in ("train", "t10k"):
        for kind, ndim in (("images", 3), ("labels", 1)):
            name = f"{split}-{kind}-idx{ndim}-ubyte.gz"
            with gzip.open(mirror / name, "wb") as f:
                f.write(_idx(arrays[kind], 0x08))
            resources.append((name, hashlib.md5((mirror / name).read_bytes()).hexdigest()))
    monkeypatch.setattr(D.MNIST, "mirrors", [str(tmp_path / "dead") + "/", str(mirror) + "/"])
    monkeypatch.setattr(D.MNIST, "resources", resources)
    ds = D.MNIST(str(tmp_path / "root"), train=True, download=True)
    assert len(ds) == 3 and ds[2][1] == arrays["labels"][2]
    np.testing.assert_array_equal(np.asarray(ds[0][0]), arrays["images"][0])
    monkeypatch.setattr(D.MNIST, "resources", [(n, "0" * 32) for n, _ in resources])
    with pytest.raises(RuntimeError, match="md5"):
        D.MNIST(str(tmp_path / "root2"), train=True, download=True)


class _Named:
    def __init__(self, text):
        self.text = text

    def __call__(self, x):
        return x

    def __repr__(self):
        return self.text


def test_repr_like_torchvision(tmp_path):
    _write_folder(tmp_path)
    ds = D.ImageFolder(str(tmp_path))
    assert repr(ds) == ("Dataset ImageFolder\n    Number of datapoints: 8\n"
                        f"    Root location: {tmp_path}")
    ds = D.ImageFolder(str(tmp_path), transform=_Named("Compose(\n    A()\n    B()\n)"),
                       target_transform=_Named("Lambda()"))
    assert repr(ds).splitlines() == [
        "Dataset ImageFolder", "    Number of datapoints: 8", f"    Root location: {tmp_path}",
        "    StandardTransform", "    Transform: Compose(", "                   A()",
        "                   B()", "               )", "    Target transform: Lambda()"]
    joint = D.DatasetFolder(str(tmp_path), loader=lambda p: p, extensions=(".png",),
                            transform=None)
    joint.transforms = _Named("Joint()")
    assert repr(joint).splitlines()[-1] == "    Joint()"
    assert repr(D.FakeData(size=3)) == "Dataset FakeData\n    Number of datapoints: 3"
