"""ember.save / ember.load on safetensors: round trips, mmap, atomic writes, map_location,
interop with the safetensors library."""
import collections
import io
import json
import math
import os
import struct

import numpy as np
import pytest

import ember
from ember import serialization as S


def _all_dtypes():
    return [d for d in ember.dtypes.ALL]


def _rand(shape, dt, rng):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0, 100, shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(np.float32).astype(dt)


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, ember.Tensor):
        assert a.dtype is b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(np.asarray(a.array), np.asarray(b.array))
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        assert [type(k) for k in a] == [type(k) for k in b]
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b


def _checkpoint():
    rng = np.random.default_rng(0)
    base = ember.arange(24.0).reshape(4, 6)
    model = collections.OrderedDict(
        [("fc.weight", ember.randn(3, 4)), ("fc.bias", ember.zeros(3)),
         ("bn.num", ember.tensor(5))])
    model._metadata = {"": {"version": 1}, "fc": {"version": 2}}
    return {
        "model": model,
        "optimizer": {"state": {0: {"step": ember.tensor(3.0), "exp_avg": ember.ones(3, 4)},
                                1: {"step": ember.tensor(3.0), "exp_avg": ember.ones(3)}},
                      "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1],
                                        "fused": None, "amsgrad": False}]},
        "dtypes": {ember.dtypes.name(d): ember.Tensor._make(_rand((2, 3), d, rng))
                   for d in _all_dtypes()},
        "empty": ember.zeros(0, 3), "scalar0d": ember.tensor(2.5), "int0d": ember.tensor(7),
        "transposed": base.T, "strided": base[::2, 1::3], "grad": ember.ones(2, requires_grad=True),
        "numpy": np.arange(6, dtype=np.int16).reshape(2, 3), "npscalar": np.float32(1.5),
        "npf64": np.float64(0.25), "epoch": 12, "big": 2 ** 70, "loss": 0.125,
        "specials": [float("inf"), -float("inf"), float("nan"), -0.0, 1 + 2j],
        "name": "run-1", "none": None, "flag": True, "blob": b"\x00\xffbytes",
        "tags": {"a", 3}, "frozen": frozenset({(1, 2)}), (1, "k"): "tuple key", 3.5: "float key",
        False: "bool key", None: "none key", "dtype": ember.bfloat16, "device": ember.device("cpu"),
        "nested": [({"deep": [ember.arange(3)]},)],
        "unicode": {"clé": "välue ✓"},
    }


@pytest.mark.parametrize("mmap", [False, True])
def test_roundtrip_nested_checkpoint(tmp_path, mmap):
    ck = _checkpoint()
    path = tmp_path / "ck.ember"
    ember.save(ck, path)
    out = ember.load(path, mmap=mmap)
    _same(out, ck)
    assert out["model"]._metadata == ck["model"]._metadata
    assert isinstance(out["optimizer"]["state"], dict) and list(out["optimizer"]["state"]) == [0, 1]
    assert type(out["model"]) is collections.OrderedDict
    for d in _all_dtypes():  # the exact ember dtype objects come back
        assert out["dtypes"][ember.dtypes.name(d)].dtype is d
    assert out["transposed"].is_contiguous()  # saved as its own contiguous data


def test_bfloat16_values_and_empty_0d(tmp_path):
    x = ember.tensor([1.5, -2.25, 3e38, 1e-30]).to("bfloat16")
    ember.save({"x": x, "e": x[:0], "s": x[0]}, tmp_path / "b.ember")
    out = ember.load(tmp_path / "b.ember")
    assert out["x"].dtype is ember.bfloat16
    np.testing.assert_array_equal(out["x"].array.view(np.uint16), x.array.view(np.uint16))
    assert out["e"].shape == (0,) and out["s"].shape == () and out["s"].dtype is ember.bfloat16


def test_single_tensor_and_file_objects(tmp_path):
    buf = io.BytesIO()
    ember.save(ember.arange(4), buf)
    buf.seek(0)
    out = ember.load(buf)
    assert isinstance(out, ember.Tensor) and out.tolist() == [0, 1, 2, 3]

    class Stream:  # not seekable: read into memory
        def __init__(self, data):
            self.b = io.BytesIO(data)

        def read(self, n=-1):
            return self.b.read(n)

        def seekable(self):
            return False

    assert ember.load(Stream(buf.getvalue())).tolist() == [0, 1, 2, 3]
    with open(tmp_path / "f.ember", "wb") as fh:
        ember.save({"a": ember.ones(2)}, fh)
    with open(tmp_path / "f.ember", "rb") as fh:
        assert ember.load(fh, mmap=True)["a"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="mmap=True needs a file path"):
        ember.load(io.BytesIO(buf.getvalue()), mmap=True)


def test_mmap_is_copy_on_write(tmp_path):
    path = tmp_path / "m.ember"
    ember.save({"w": ember.arange(1000.0), "b": ember.ones(3)}, path)
    before = path.read_bytes()
    out = ember.load(path, mmap=True)
    w = out["w"]
    assert isinstance(w.array, np.ndarray) and not isinstance(w.array, np.memmap)
    base = w.array
    while base.base is not None and not isinstance(base, np.memmap):
        base = base.base
    assert isinstance(base, np.memmap) and base.mode == "c"
    w.array[:] = -1  # private to this process
    assert path.read_bytes() == before
    ember.save({"w": ember.zeros(2)}, path)  # replacing a mapped file is safe
    assert w.array[0] == -1 and ember.load(path)["w"].tolist() == [0.0, 0.0]


def test_file_is_plain_safetensors(tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    import torch

    sd = collections.OrderedDict(
        [("a.weight", ember.randn(2, 3)), ("a.bias", ember.ones(2).to("bfloat16")),
         ("steps", ember.arange(3))])
    path = tmp_path / "plain.safetensors"
    ember.save(sd, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert n % 8 == 0 and header["__metadata__"]["format"] == "ember"
    for name, info in header.items():  # every tensor starts aligned to its itemsize
        if name != "__metadata__":
            isz = {"F32": 4, "BF16": 2, "I64": 8}[info["dtype"]]
            assert (8 + n + info["data_offsets"][0]) % isz == 0
    loaded = st_torch.load_file(str(path))
    assert set(loaded) == set(sd)
    for k, v in sd.items():
        ref = torch.from_numpy(v.array.astype(np.float32)) if v.dtype is ember.bfloat16 \
            else torch.from_numpy(v.array)
        assert torch.equal(loaded[k].to(ref.dtype), ref)


def test_loads_foreign_safetensors(tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    import torch

    ref = {"w": torch.randn(3, 2), "h": torch.randn(4).bfloat16(), "i": torch.arange(5),
           "z": torch.zeros(0)}
    st_torch.save_file(ref, str(tmp_path / "t.safetensors"), metadata={"format": "pt"})
    for mm in (False, True):
        out = ember.load(tmp_path / "t.safetensors", mmap=mm)
        assert isinstance(out, collections.OrderedDict) and set(out) == set(ref)
        for k, v in ref.items():
            np.testing.assert_array_equal(out[k].array.astype(np.float32),
                                          v.float().numpy())
        assert out["h"].dtype is ember.bfloat16 and out["i"].dtype is ember.int64


class _Boom(RuntimeError):
    pass


def test_atomic_save_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.ember"
    ember.save({"v": ember.ones(3), "step": 1}, path)
    old = path.read_bytes()
    calls = []
    real = S._write_array

    def flaky(fh, arr):
        calls.append(1)
        if len(calls) == 2:
            raise _Boom("disk full")
        real(fh, arr)

    monkeypatch.setattr(S, "_write_array", flaky)
    with pytest.raises(_Boom):
        ember.save({"a": ember.zeros(1000), "b": ember.zeros(1000), "step": 2}, path)
    assert len(calls) == 2  # the failure happened mid-write
    assert path.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["ck.ember"]
    assert ember.load(path)["step"] == 1


def test_atomic_save_keyboard_interrupt_and_new_file(tmp_path, monkeypatch):
    def interrupt(fh, arr):
        raise KeyboardInterrupt

    monkeypatch.setattr(S, "_write_array", interrupt)
    with pytest.raises(KeyboardInterrupt):
        ember.save({"a": ember.zeros(3)}, tmp_path / "new.ember")
    assert os.listdir(tmp_path) == []


def test_unsaveable_objects(tmp_path):
    path = tmp_path / "x.ember"
    ember.save({"ok": 1}, path)
    with pytest.raises(TypeError, match=r"obj\['cfg'\]\['fn'\].*function"):
        ember.save({"cfg": {"fn": lambda: 0}}, path)
    with pytest.raises(TypeError, match="dict keys"):
        ember.save({ember.ones(1): 1}, path)
    with pytest.raises(TypeError, match=r"dtype <U1"):
        ember.save({"a": np.array(["x"])}, path)
    with pytest.raises(TypeError, match="path or a binary file object"):
        ember.save({}, 3)
    loop = {"a": []}
    loop["a"].append(loop)
    with pytest.raises(ValueError, match=r"obj\['a'\]\[0\] contains itself"):
        ember.save(loop, path)
    shared = [1]
    assert (ember.save({"x": shared, "y": (shared, shared)}, io.BytesIO()) is None)
    assert ember.load(path) == {"ok": 1} and os.listdir(tmp_path) == ["x.ember"]


def test_name_collisions(tmp_path):
    obj = {"a.b": ember.ones(1), "a": {"b": ember.zeros(1)}, "__metadata__": ember.ones(2)}
    ember.save(obj, tmp_path / "c.ember")
    _same(ember.load(tmp_path / "c.ember"), obj)


def test_map_location(tmp_path):
    path = tmp_path / "d.ember"
    ember.save({"w": ember.ones(2)}, path)
    assert ember.load(path, map_location="cpu")["w"].device == ember.device("cpu")
    assert ember.load(path, map_location=ember.device("cpu"))["w"].is_cpu
    seen = []
    out = ember.load(path, map_location=lambda t, loc: seen.append(loc) or t * 2)
    assert seen == ["cpu"] and out["w"].tolist() == [2.0, 2.0]
    assert ember.load(path, map_location=lambda s, loc: None)["w"].tolist() == [1.0, 1.0]
    assert ember.load(path, map_location={"cuda:0": "cpu"})["w"].is_cpu
    with pytest.raises(TypeError, match="map_location"):
        ember.load(path, map_location=3)
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            ember.load(path, map_location={"cpu": "cuda:0"})


@pytest.mark.cuda
def test_cuda_roundtrip(tmp_path):
    x = ember.randn(3, 4, device="cuda")
    ember.save({"x": x, "c": x.cpu()}, tmp_path / "g.ember")
    out = ember.load(tmp_path / "g.ember")
    assert out["x"].is_cuda and out["c"].is_cpu
    np.testing.assert_array_equal(out["x"].cpu().numpy(), x.cpu().numpy())
    assert ember.load(tmp_path / "g.ember", map_location="cpu")["x"].is_cpu
    assert ember.load(tmp_path / "g.ember", map_location="cuda")["c"].is_cuda


def test_bad_files(tmp_path):
    p = tmp_path / "bad"
    p.write_bytes(b"hello world, not a checkpoint")
    with pytest.raises(ValueError, match="neither an ember/safetensors checkpoint"):
        ember.load(p)
    p.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        ember.load(p)
    good = tmp_path / "g.ember"
    ember.save({"w": ember.ones(100)}, good)
    raw = good.read_bytes()
    p.write_bytes(raw[:-10])  # truncated data
    with pytest.raises(ValueError, match="data_offsets"):
        ember.load(p)
    header = raw[8:8 + struct.unpack("<Q", raw[:8])[0]]
    bad = header.replace(b'"shape":[100]', b'"shape":[999]')
    p.write_bytes(raw[:8] + bad + raw[8 + len(header):])
    with pytest.raises(ValueError, match="data_offsets"):
        ember.load(p)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ember.load(good, pickle_module=None)
    assert ember.load(good, weights_only=True)["w"].shape == (100,)


class _Net(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 2)
        self.bn = ember.nn.BatchNorm1d(2)
        self.head = self.fc.weight  # a tied parameter stays tied

    def forward(self, x):
        return self.bn(self.fc(x))


def test_whole_model_checkpoint_needs_an_explicit_yes(tmp_path):
    import warnings

    m = _Net()
    m.bn.running_mean.fill_(0.25)
    path = tmp_path / "model.pt"
    ember.save(m, path)
    with pytest.raises(ember.serialization.ForbiddenGlobalError) as ei:
        ember.load(path)
    msg = str(ei.value)
    assert "_Net" in msg and "add_safe_globals" in msg and "safe_globals" in msg \
        and "weights_only=False" in msg
    x = ember.randn(4, 3)
    m.eval()
    with ember.serialization.safe_globals([_Net]):
        m2 = ember.load(path)
    with pytest.raises(ember.serialization.ForbiddenGlobalError):  # the block has ended
        ember.load(path)
    m2.eval()
    assert type(m2) is _Net and m2.head is m2.fc.weight
    assert isinstance(m2.fc.weight, ember.nn.Parameter) and m2.fc.weight.requires_grad
    np.testing.assert_array_equal(m2(x).detach().numpy(), m(x).detach().numpy())
    ember.serialization.add_safe_globals([_Net])
    try:
        assert _Net in ember.serialization.get_safe_globals()
        assert type(ember.load(path)) is _Net
    finally:
        ember.serialization.clear_safe_globals()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert type(ember.load(path, weights_only=False)) is _Net


def test_ember_modules_load_without_asking(tmp_path):
    m = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.ReLU())
    ember.save({"model": m, "epoch": 3}, tmp_path / "ck")
    ck = ember.load(tmp_path / "ck")
    assert ck["epoch"] == 3 and isinstance(ck["model"][0], ember.nn.Linear)
    np.testing.assert_array_equal(ck["model"][0].weight.detach().numpy(),
                                  m[0].weight.detach().numpy())


def test_pth_pickles_of_user_classes_obey_the_same_hatches(tmp_path):
    import argparse

    torch = pytest.importorskip("torch")

    path = tmp_path / "args.pth"
    torch.save({"args": argparse.Namespace(lr=0.1), "w": torch.ones(2)}, path)
    with pytest.raises(ember.serialization.ForbiddenGlobalError, match="add_safe_globals"):
        ember.load(path)
    with ember.serialization.safe_globals([argparse.Namespace]):
        ck = ember.load(path)
    assert ck["args"].lr == 0.1 and ck["w"].tolist() == [1.0, 1.0]
