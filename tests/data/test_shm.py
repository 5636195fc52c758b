"""Shared-memory batch transport: packing, mapping, recycling, fallback to files."""
import collections
import gc
import os

import numpy as np
import pytest

import ember
from ember.data import shm


def test_pack_unpack_roundtrip_and_inline_small_arrays(tmp_path):
    arena = shm.Arena(str(tmp_path), "t-w0")
    big = arena.alloc((64, 100), np.float32)
    big[:] = np.arange(100, dtype=np.float32)
    small = np.arange(3)
    tensor = ember.from_numpy(np.ones((64, 64), np.float32))  # copied into a segment
    meta = arena.pack({"big": big, "small": small, "t": tensor, "s": "x", "tup": (big, 1)})
    assert sorted(os.listdir(tmp_path)) == ["t-w0-1", "t-w0-2"]
    out = shm.unpack(meta)
    assert out["big"].shape == (64, 100) and out["big"][5, 7] == 7
    assert out["small"].tolist() == [0, 1, 2] and out["s"] == "x"
    assert isinstance(out["t"], ember.Tensor) and float(out["t"].sum()) == 64 * 64
    assert out["tup"][0][0, 99] == 99 and out["tup"][1] == 1
    assert os.listdir(tmp_path) == []  # unpacked without recycling: names unlinked at once
    out["big"][:] = 0  # the mapping outlives its name, and is writable


def test_released_segments_are_reused(tmp_path):
    arena = shm.Arena(str(tmp_path), "t-w0")
    released = collections.deque()
    a = arena.alloc((256, 256), np.float32)
    meta = arena.pack(a)
    del a
    view = shm.unpack(meta, released)[10:20]  # a view keeps the mapping alive
    gc.collect()
    assert not released
    del view
    gc.collect()
    assert list(released) == ["t-w0-1"]
    arena.release(released)
    b = arena.alloc((200, 256), np.float32)  # fits in the released segment
    assert arena.pack(b).name == "t-w0-1"
    c = arena.alloc((256, 256), np.float32)  # the only free one is taken: a new segment
    assert arena.pack(c).name == "t-w0-2"
    arena.close()
    assert os.listdir(tmp_path) == []


def test_full_directory_falls_back_with_a_warning(tmp_path, monkeypatch):
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    fast.mkdir()
    slow.mkdir()
    monkeypatch.setattr(shm, "free_bytes", lambda d: 0 if d == str(fast) else 1 << 40)
    arena = shm.Arena(str(fast), "t-w0", fallback=str(slow))
    with pytest.warns(RuntimeWarning, match="full"):
        a = arena.alloc((128, 128), np.float32)
    meta = arena.pack(a)
    assert meta.dir == str(slow) and os.listdir(fast) == []
    assert shm.unpack(meta).shape == (128, 128)
    monkeypatch.setattr(shm, "free_bytes", lambda d: 0)
    with pytest.warns(RuntimeWarning, match="file-backed"):
        assert shm.choose_dir(1 << 20) == __import__("tempfile").gettempdir()


def test_cleanup_by_prefix(tmp_path):
    for name in ("ember-1-a-w0-1", "ember-1-a-w1-3", "ember-1-b-w0-1"):
        (tmp_path / name).write_bytes(b"x")
    shm.cleanup("ember-1-a", [str(tmp_path), None])
    assert os.listdir(tmp_path) == ["ember-1-b-w0-1"]


def test_unsent_buffer_goes_back_to_the_pool(tmp_path):
    arena = shm.Arena(str(tmp_path), "t-w0")
    buf = arena.alloc((100, 100), np.float32)
    meta = arena.pack(buf[:50])  # a slice: copied into a segment of its own
    assert meta.name == "t-w0-2" and [f[1] for f in arena.free] == ["t-w0-1"]
    assert shm.unpack(meta).shape == (50, 100)
