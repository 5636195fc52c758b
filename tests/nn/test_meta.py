"""The meta device: modules built with shapes but no memory, materialized later."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

import ember
from ember import nn


def _big(lib):
    n = lib.nn
    return n.Sequential(n.Linear(8000, 8000), n.LayerNorm(8000), n.Embedding(50000, 256),
                        n.Conv2d(64, 128, 3), n.BatchNorm2d(128), n.LSTM(256, 256, 2))


def test_building_on_meta_allocates_nothing_and_matches_torch_meta():
    tracemalloc.start()
    try:
        with ember.device("meta"):
            m = _big(ember)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000  # the model holds ~80M float32 parameters (320 MB if real)
    with torch.device("meta"):
        t = _big(torch)
    assert sum(p.numel() for p in m.parameters()) == sum(p.numel() for p in t.parameters())
    assert [(k, tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in m.state_dict().items()] \
        == [(k, tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in t.state_dict().items()]
    assert all(p.is_meta and p.device == ember.device("meta") for p in m.parameters())
    assert repr(m[0].bias) == repr(t[0].bias).replace("torch", "ember")


def test_to_empty_then_reset_or_load():
    with ember.device("meta"):
        m = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    w = m[0].weight
    m.to_empty(device="cpu")
    assert m[0].weight is w and not w.is_meta and w.device == ember.device("cpu")
    m[0].reset_parameters()
    assert float(w.abs().max()) <= 0.5
    sd = {k: np.full(tuple(v.shape), 2, v.numpy().dtype) for k, v in m.state_dict().items()}
    m.load_state_dict(sd)
    assert float(m[1].running_var.numpy()[0]) == 2.0
    out = m(ember.ones(5, 4))
    assert out.shape == (5, 3) and not out.is_meta


def test_load_state_dict_assign_adopts_arrays_on_meta():
    with ember.device("meta"):
        m = nn.Linear(3, 2)
    sd = {"weight": np.arange(6, dtype=np.float32).reshape(2, 3), "bias": np.zeros(2, np.float32)}
    m.load_state_dict(sd)  # copying into meta is a no-op: still meta
    assert m.weight.is_meta
    m.load_state_dict(sd, assign=True)
    assert not m.weight.is_meta and isinstance(m.weight, nn.Parameter)
    np.testing.assert_array_equal(m.weight.detach().numpy(), sd["weight"])


def test_meta_tensors_and_the_default_device():
    assert ember.get_default_device() == ember.device("cpu")
    with ember.device("meta"):
        assert ember.get_default_device().type == "meta"
        z = ember.zeros(4, 5)
        r = ember.randn(3, generator=ember.Generator().manual_seed(0))
        i = ember.randint(0, 5, (2, 2))
        assert z.is_meta and r.is_meta and i.is_meta and i.dtype == ember.int64
        with ember.device("cpu"):
            assert not ember.ones(2).is_meta
    assert not ember.zeros(1).is_meta
    x = ember.randn(2, 3).to("meta")
    assert x.is_meta and x.shape == (2, 3)
    x.fill_(3.0).mul_(2)  # in-place ops on meta only check shapes
    assert x.is_meta
    with pytest.raises(RuntimeError, match="cannot copy a meta tensor.*to_empty"):
        x.to("cpu")
    assert ember.empty_like(x, device="cpu").shape == (2, 3)
    ember.set_default_device("meta")
    try:
        assert ember.empty(2).is_meta
    finally:
        ember.set_default_device(None)
    assert not ember.empty(2).is_meta
