"""Twin models (acceptance of the nn issue): each architecture is built from ember.nn and from
torch.nn; the torch state dict saved with ``torch.save`` loads into ember through the torch-free
``.pth`` reader unchanged, and outputs and all parameter gradients match."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember import nn


def _lenet(lib):
    n = lib.nn
    return n.Sequential(n.Conv2d(1, 6, 5), n.ReLU(), n.MaxPool2d(2), n.Conv2d(6, 16, 5),
                        n.ReLU(), n.MaxPool2d(2), n.Flatten(), n.Linear(256, 120), n.ReLU(),
                        n.Linear(120, 84), n.ReLU(), n.Linear(84, 10))


def _mobilenet_block(lib):
    n = lib.nn

    class InvertedResidual(n.Module):
        def __init__(self, c=16, expand=6):
            super().__init__()
            h = c * expand
            self.conv = n.Sequential(
                n.Conv2d(c, h, 1, bias=False), n.BatchNorm2d(h), n.ReLU6(inplace=True),
                n.Conv2d(h, h, 3, padding=1, groups=h, bias=False), n.BatchNorm2d(h),
                n.ReLU6(inplace=True), n.Conv2d(h, c, 1, bias=False), n.BatchNorm2d(c))

        def forward(self, x):
            return x + self.conv(x)
    return InvertedResidual()


def _encoder(lib):
    n = lib.nn
    layer = n.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
    return n.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _lstm(lib):
    return lib.nn.LSTM(12, 16, num_layers=2, bidirectional=True, batch_first=True)


CASES = {
    "lenet": (_lenet, (4, 1, 28, 28)),
    "mobilenet_v2_block": (_mobilenet_block, (2, 16, 10, 10)),
    "transformer_encoder": (_encoder, (3, 7, 32)),
    "bilstm": (_lstm, (3, 9, 12)),
}


def _run(model, x, lib, kwargs):
    out = model(x, **kwargs)
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("train", [True, False])
def test_twin(name, train, tmp_path):
    build, shape = CASES[name]
    torch.manual_seed(0)
    tm = build(torch)
    em = build(ember)
    path = tmp_path / f"{name}.pth"
    torch.save(tm.state_dict(), path)
    sd = ember.load(str(path))
    assert list(sd) == list(tm.state_dict()) == list(em.state_dict())
    em.load_state_dict(sd)
    tm.train(train)
    em.train(train)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    kw_t, kw_e = {}, {}
    if name == "transformer_encoder":
        mask = np.zeros(shape[:2], bool)
        mask[1, -2:] = True  # padding at the end of sequence 1
        kw_t = {"src_key_padding_mask": torch.from_numpy(mask)}
        kw_e = {"src_key_padding_mask": ember.from_numpy(mask)}
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    to, eo = _run(tm, tx, torch, kw_t), _run(em, ex, ember, kw_e)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    w = np.random.default_rng(2).standard_normal(tuple(to.shape)).astype(np.float32)
    (to * torch.from_numpy(w)).sum().backward()
    (eo * ember.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (k, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=k)
    for (k, b), (_, c) in zip(em.named_buffers(), tm.named_buffers()):  # BN running stats
        np.testing.assert_allclose(b.numpy(), c.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
