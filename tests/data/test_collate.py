"""default_collate against torch.utils.data.default_collate on nested structures."""
from collections import namedtuple

import numpy as np
import pytest
import torch
from torch.utils.data import default_collate as torch_collate

import ember
from ember.data import Ragged, default_collate, default_convert

Point = namedtuple("Point", "x y")


def _same(ours, theirs):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, ember.Tensor)
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        return
    if isinstance(theirs, dict):
        assert set(ours) == set(theirs)
        for k in theirs:
            _same(ours[k], theirs[k])
        return
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
        return
    assert ours == theirs


def _samples(rng, n=3):
    return [{"img": rng.standard_normal((2, 3)).astype(np.float32),
             "label": int(rng.integers(10)),
             "name": f"s{i}",
             "pair": (rng.integers(0, 5, 4).astype(np.int64), np.float32(i)),
             "pt": Point(np.arange(2, dtype=np.int32) + i, True),
             "nested": {"t": ember.tensor([float(i), 1.0])}}
            for i in range(n)]


def test_matches_torch_on_nested_samples():
    rng = np.random.default_rng(0)
    batch = _samples(rng)
    ours = default_collate(batch)

    def to_torch(x):
        if isinstance(x, ember.Tensor):
            return torch.from_numpy(x.numpy())
        if isinstance(x, dict):
            return {k: to_torch(v) for k, v in x.items()}
        if isinstance(x, Point):
            return Point(*(to_torch(v) for v in x))
        if isinstance(x, tuple):
            return tuple(to_torch(v) for v in x)
        return x
    theirs = torch_collate([to_torch(s) for s in batch])
    _same(ours, theirs)
    assert isinstance(ours["pt"], Point) and isinstance(ours["pair"], tuple)
    assert ours["img"].dtype == ember.float32 and ours["label"].dtype == ember.int64
    assert ours["pt"].y.dtype == ember.bool


@pytest.mark.parametrize("batch", [[1.5, 2.0], [1, 2], [True, False],
                                   [np.float16(1), np.float16(2)], [np.int32(1), np.int32(2)],
                                   [np.float64(0.5), np.float64(1)], [np.bool_(True)]])
def test_number_dtypes_match_torch(batch):
    ours, theirs = default_collate(batch), torch_collate(batch)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_number_dtypes_other_leaves():
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_lists_of_equal_length_and_errors():
    out = default_collate([[1, 2], [3, 4]])
    assert isinstance(out, list) and out[0].tolist() == [1, 3]
    with pytest.raises(RuntimeError, match="same length"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="different shapes"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(TypeError, match="cannot collate"):
        default_collate([object(), object()])


def test_ragged_values_offsets():
    r = default_collate([np.arange(3), np.arange(1), np.zeros(0, np.int64)], ragged=True)
    assert isinstance(r, Ragged)
    assert r.values.tolist() == [0, 1, 2, 0] and r.offsets.tolist() == [0, 3, 4, 4]
    seqs = [np.ones((2, 4), np.float32), np.ones((5, 4), np.float32)]
    r = default_collate([{"tok": s} for s in seqs], ragged=True)["tok"]
    assert r.values.shape == (7, 4) and r.offsets.tolist() == [0, 2, 7]
    r = default_collate([[1, 2, 3], [4]], ragged=True)
    assert r.values.tolist() == [1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="first dimension"):
        default_collate([np.ones((2, 3)), np.ones((2, 4))], ragged=True)


def test_default_convert_and_no_copy_of_tensors():
    s = {"a": np.arange(3), "b": "x"}
    out = default_convert(s)
    assert isinstance(out["a"], ember.Tensor) and out["b"] == "x"
    assert np.shares_memory(out["a"].numpy(), s["a"])
