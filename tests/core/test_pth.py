"""ember.load on PyTorch .pth files (zip and legacy formats), read without torch's help, and
the restricted unpickler's refusals."""
import builtins
import collections
import io
import os
import pickle
import struct
import sys
import tarfile
import zipfile

import numpy as np
import pytest

import ember
from ember import _pth

torch = pytest.importorskip("torch")

FORMATS = [pytest.param(False, id="zip"), pytest.param(True, id="legacy")]


def _save(obj, path, legacy):
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)


@pytest.fixture
def no_torch(monkeypatch):
    """Make any import of torch (and any use of an already imported torch module by name
    lookup) fail while ember.load runs."""
    real = builtins.__import__

    def guarded(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(f"ember.load must not import {name}")
        return real(name, *args, **kwargs)

    def load(*args, **kwargs):
        with monkeypatch.context() as m:
            m.setattr(builtins, "__import__", guarded)
            for mod in [k for k in sys.modules if k == "torch" or k.startswith("torch.")]:
                m.setitem(sys.modules, mod, None)
            return ember.load(*args, **kwargs)
    return load


def _state_dict():
    torch.manual_seed(0)
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(lin.parameters())
    lin(torch.ones(1, 3)).sum().backward()
    opt.step()
    sd = collections.OrderedDict()
    sd["z_first"] = torch.randn(2, 3, dtype=torch.float64)
    sd["base"] = base
    sd["transposed"] = base.t()                 # shares base's storage
    sd["strided"] = base[1:3, ::2]               # offset + strides into the same storage
    sd["row"] = base[3]                          # contiguous, but only part of the storage
    sd["i64"] = torch.arange(5)
    sd["mask"] = torch.tensor([True, False, True])
    sd["half"] = torch.randn(3).half()
    sd["bf16"] = torch.randn(3).bfloat16()
    sd["i8"] = torch.tensor([-3, 4], dtype=torch.int8)
    sd["u8"] = torch.tensor([250, 4], dtype=torch.uint8)
    sd["i32"] = torch.tensor([1, -2], dtype=torch.int32)
    sd["u16"] = torch.tensor([1, 65535], dtype=torch.uint16)
    sd["cplx"] = torch.tensor([1 + 2j, 3 - 1j])
    sd["conj"] = torch.tensor([1 + 2j, 3 - 1j]).conj()
    sd["param"] = torch.nn.Parameter(torch.randn(2))
    sd["frozen"] = torch.nn.Parameter(torch.randn(2), requires_grad=False)
    sd["leaf_rg"] = torch.ones(2, requires_grad=True)
    sd["linear"] = lin.state_dict()
    sd["optim"] = opt.state_dict()
    sd["nested"] = {1: [torch.tensor(3.5), (2, "x", None)], "empty": torch.zeros(0, 2),
                    "zero_d": torch.tensor(7), 2.5: {"deep": [torch.ones(1, 1, 2)]}}
    sd["meta"] = {"device": torch.device("cpu"), "dtype": torch.float16,
                  "size": torch.Size([2, 3]), "set": {1, 2}, "bytes": b"\x00\x01",
                  "complex": 1 - 1j, "inf": float("inf")}
    return sd


def _compare(a, b, where=()):
    if isinstance(b, torch.Tensor):
        assert isinstance(a, ember.Tensor), where
        ref = b.detach().resolve_conj()
        assert a.shape == tuple(ref.shape), where
        assert a.requires_grad == b.requires_grad, where
        if ref.dtype == torch.bfloat16:
            assert a.dtype is ember.bfloat16, where
            np.testing.assert_array_equal(a.array.view(np.uint16), ref.view(torch.int16).numpy()
                                          .view(np.uint16))
        else:
            expect = ref.numpy()
            assert a.dtype == expect.dtype, where
            np.testing.assert_array_equal(a.array, expect)
    elif isinstance(b, torch.Size):
        assert a == tuple(b) and type(a) is tuple
    elif isinstance(b, torch.dtype):
        assert a is getattr(ember, str(b).split(".")[1]), where
    elif isinstance(b, torch.device):
        assert a == ember.device(str(b))
    elif isinstance(b, dict):
        assert type(a) is type(b), where
        assert list(a) == list(b), where  # same keys, same order
        for k in b:
            _compare(a[k], b[k], where + (k,))
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _compare(x, y, where + (i,))
    else:
        assert type(a) is type(b) and a == b, where


@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
@pytest.mark.parametrize("legacy", FORMATS)
def test_torch_checkpoint_roundtrip(tmp_path, legacy, mmap, no_torch):
    sd = _state_dict()
    path = tmp_path / "ck.pth"
    _save(sd, path, legacy)
    out = no_torch(path, mmap=mmap)
    _compare(out, sd)
    assert out["base"].dtype is ember.float32 and out["bf16"].dtype is ember.bfloat16
    assert out["linear"]._metadata == sd["linear"]._metadata
    assert list(out["optim"]["state"]) == [0, 1]
    if mmap:  # tensors are views of one copy-on-write map of the file
        before = path.read_bytes()
        out["base"].array[:] = -1
        assert path.read_bytes() == before
    else:  # a partial view gets its own memory; whole-storage tensors need no copy
        assert not np.shares_memory(out["strided"].array, out["base"].array)
        assert not np.shares_memory(out["row"].array, out["base"].array)
        assert out["transposed"].is_contiguous()


@pytest.mark.parametrize("legacy", FORMATS)
def test_file_object_and_single_tensor(legacy):
    buf = io.BytesIO()
    torch.save(torch.arange(6).reshape(2, 3).t(), buf, _use_new_zipfile_serialization=not legacy)
    buf.seek(0)
    out = ember.load(buf)
    assert isinstance(out, ember.Tensor) and out.tolist() == [[0, 3], [1, 4], [2, 5]]


@pytest.mark.parametrize("legacy", FORMATS)
def test_module_state_dict_loads(tmp_path, legacy):
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                              torch.nn.Flatten(), torch.nn.Linear(4, 2))
    _save(net.state_dict(), tmp_path / "net.pth", legacy)
    out = ember.load(tmp_path / "net.pth")
    assert list(out) == list(net.state_dict())
    _compare(out, net.state_dict())


def test_map_location_of_cuda_checkpoint(tmp_path, monkeypatch):
    # torch here has no GPU: pretend the storages were saved on cuda:0
    monkeypatch.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
    for legacy in (False, True):
        path = tmp_path / f"gpu{legacy}.pth"
        _save({"w": torch.ones(2)}, path, legacy)
        if not ember.cuda.is_available():
            with pytest.raises(RuntimeError, match=r"saved on 'cuda:0'.*map_location='cpu'"):
                ember.load(path)
        assert ember.load(path, map_location="cpu")["w"].is_cpu
        assert ember.load(path, map_location={"cuda:0": "cpu"})["w"].is_cpu
        seen = []
        out = ember.load(path, map_location=lambda storage, loc: seen.append(loc) or storage)
        assert seen == ["cuda:0"] and out["w"].tolist() == [1.0, 1.0]


def test_big_endian_zip(tmp_path):
    sd = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "i": torch.arange(3)}
    _save(sd, tmp_path / "le.pth", False)
    itemsize = {"0": 4, "1": 8}
    with zipfile.ZipFile(tmp_path / "le.pth") as src, \
            zipfile.ZipFile(tmp_path / "be.pth", "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            name = info.filename.split("/", 1)[1]
            if name == "byteorder":
                data = b"big"
            elif name.startswith("data/"):
                dt = np.dtype(f"<{'f' if itemsize[name[5:]] == 4 else 'i'}{itemsize[name[5:]]}")
                data = np.frombuffer(data, dt).astype(dt.newbyteorder(">")).tobytes()
            dst.writestr(info.filename, data)
    for mm in (False, True):
        out = ember.load(tmp_path / "be.pth", mmap=mm)
        _compare(out, sd)
        assert out["w"].dtype is ember.float32


# ---------------------------------------------------------------------------- security
def _zip_with_pickle(path, payload):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/byteorder", b"little")
        z.writestr("archive/version", b"3\n")


def _legacy_with_pickle(path, payload):
    with open(path, "wb") as f:
        for head in (_pth._MAGIC, _pth._PROTOCOL, {"little_endian": True}):
            pickle.dump(head, f, protocol=2)
        f.write(payload)
        pickle.dump([], f, protocol=2)


class _Evil:
    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


def _payloads(marker):
    cmd = f"touch {marker}"
    return {
        "os.system": (f"cos\nsystem\n(V{cmd}\ntR.".encode(), "os.system"),
        "builtins.eval": (f"cbuiltins\neval\n(V__import__('os').system('{cmd}')\ntR.".encode(),
                          "builtins.eval"),
        "subprocess.Popen": (b"\x80\x02csubprocess\nPopen\n]q\x00(Vtouch\nV" + str(marker).encode()
                             + b"\ne\x85R.", "subprocess.Popen"),
        "reduce-proto2": (pickle.dumps({"w": _Evil(cmd)}, protocol=2), os.system.__module__),
        "reduce-proto4": (pickle.dumps([_Evil(cmd)], protocol=4), ".system"),
    }


@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_refuses_code_execution(tmp_path, container):
    marker = tmp_path / "pwned"
    for label, (payload, named) in _payloads(marker).items():
        path = tmp_path / f"{label}.pth"
        (_zip_with_pickle if container == "zip" else _legacy_with_pickle)(path, payload)
        with pytest.raises(pickle.UnpicklingError) as ei:
            ember.load(path)
        assert isinstance(ei.value, ember.serialization.ForbiddenGlobalError), label
        assert named in str(ei.value), (label, str(ei.value))
        assert ei.value.module and ei.value.name
        assert not marker.exists(), f"{label} ran code"


def test_refuses_payload_as_first_legacy_pickle(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "first.pth"
    path.write_bytes(pickle.dumps(_Evil(f"touch {marker}"), protocol=2))
    with pytest.raises(ember.serialization.ForbiddenGlobalError, match="system"):
        ember.load(path)
    assert not marker.exists()


def test_refuses_arbitrary_classes_in_real_checkpoints(tmp_path):
    import argparse

    torch.save({"args": argparse.Namespace(lr=0.1), "w": torch.ones(1)}, tmp_path / "a.pth")
    with pytest.raises(ember.serialization.ForbiddenGlobalError, match=r"'argparse\.Namespace'"):
        ember.load(tmp_path / "a.pth")
    torch.save({"s": torch.eye(2).to_sparse()}, tmp_path / "s.pth")
    with pytest.raises(ember.serialization.ForbiddenGlobalError, match="sparse"):
        ember.load(tmp_path / "s.pth")


def _tensor_pickle(size, stride, offset=0, numel=4):
    class Store:
        pass

    store = Store()

    class P(pickle.Pickler):
        def persistent_id(self, obj):
            if obj is store:
                return ("storage", torch.FloatStorage, "0", "cpu", numel)
            return None

    class T:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2,
                    (store, offset, size, stride, False, collections.OrderedDict()))

    buf = io.BytesIO()
    P(buf, protocol=2).dump({"t": T()})
    return buf.getvalue()


def test_rejects_out_of_bounds_tensor_geometry(tmp_path):
    path = tmp_path / "oob.pth"
    for size, stride, offset in [((10,), (1,), 0), ((2,), (1000,), 0), ((1,), (1,), 4),
                                 ((2,), (-1,), 1)]:
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", _tensor_pickle(size, stride, offset))
            z.writestr("archive/data/0", np.arange(4, dtype=np.float32).tobytes())
        with pytest.raises(pickle.UnpicklingError, match="corrupt checkpoint"):
            ember.load(path)
    with zipfile.ZipFile(path, "w") as z:  # the same pickle with sane geometry loads
        z.writestr("archive/data.pkl", _tensor_pickle((2,), (2,), 1))
        z.writestr("archive/data/0", np.arange(4, dtype=np.float32).tobytes())
    assert ember.load(path)["t"].tolist() == [1.0, 3.0]
    with zipfile.ZipFile(path, "w") as z:  # record shorter than the declared storage
        z.writestr("archive/data.pkl", _tensor_pickle((2,), (1,)))
        z.writestr("archive/data/0", np.arange(2, dtype=np.float32).tobytes())
    with pytest.raises(pickle.UnpicklingError, match="holds 8 bytes, expected 16"):
        ember.load(path)


def test_refuses_state_changes_on_shared_objects(tmp_path):
    # BUILD on the float32 dtype stand-in, SETITEM on a non-dict: both would alter objects that
    # outlive the load
    build = b"\x80\x02ctorch\nfloat32\n}X\x01\x00\x00\x00aK\x01sb."
    setitem = b"\x80\x02ctorch\nSize\nX\x01\x00\x00\x00aK\x01s."
    for payload in (build, setitem):
        _zip_with_pickle(tmp_path / "m.pth", payload)
        with pytest.raises(pickle.UnpicklingError, match="refusing pickle opcode"):
            ember.load(tmp_path / "m.pth")
    assert np.dtype(np.float32).itemsize == 4


def test_not_torch_checkpoints(tmp_path):
    with zipfile.ZipFile(tmp_path / "ts.pt", "w") as z:
        z.writestr("model/constants.pkl", b"")
        z.writestr("model/code/__torch__.py", b"")
    with pytest.raises(ValueError, match="TorchScript"):
        ember.load(tmp_path / "ts.pt")
    with tarfile.open(tmp_path / "old.pth", "w") as t:
        info = tarfile.TarInfo("sys_info")
        info.size = 0
        t.addfile(info, io.BytesIO())
    (tmp_path / "old.pth").write_bytes(b"\x80" + (tmp_path / "old.pth").read_bytes()[1:])
    with pytest.raises(ValueError, match="tar checkpoint|bad magic"):
        ember.load(tmp_path / "old.pth")
    (tmp_path / "p.pkl").write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(ValueError, match="bad magic number"):
        ember.load(tmp_path / "p.pkl")
    legacy = io.BytesIO()
    torch.save({"w": torch.ones(8)}, legacy, _use_new_zipfile_serialization=False)
    (tmp_path / "trunc.pth").write_bytes(legacy.getvalue()[:-4])
    with pytest.raises(pickle.UnpicklingError, match="truncated"):
        ember.load(tmp_path / "trunc.pth")
    assert struct.unpack("<q", legacy.getvalue()[-40:-32])[0] == 8  # element count header
