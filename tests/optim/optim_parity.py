"""Helpers for the optimizer tests: one small MLP trained by an ember optimizer and by its
torch twin from the same numbers, step by step (each side computes its own gradients)."""
from __future__ import annotations

import numpy as np
import torch

import ember
import ember.optim

SHAPES = [(8, 4), (8,), (3, 8), (3,)]  # a 4-8-3 MLP: W1, b1, W2, b2


def init_arrays(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 0.5).astype(np.float32) for s in SHAPES]


def batch(step):
    rng = np.random.default_rng(1000 + step)
    return (rng.standard_normal((6, 4)).astype(np.float32),
            rng.standard_normal((6, 3)).astype(np.float32))


def ember_loss(params, step):
    w1, b1, w2, b2 = params
    x, y = (ember.tensor(a) for a in batch(step))
    out = ember.tanh(x @ w1.T + b1) @ w2.T + b2
    return ((out - y) ** 2).mean()


def torch_loss(params, step):
    w1, b1, w2, b2 = params
    x, y = (torch.tensor(a) for a in batch(step))
    out = torch.tanh(x @ w1.T + b1) @ w2.T + b2
    return ((out - y) ** 2).mean()


def groups(params, spec):
    """``spec``: None (one group) or a list of (indices, extra options) per group."""
    if spec is None:
        return params
    return [dict(params=[params[i] for i in idx], **opts) for idx, opts in spec]


class Pair:
    """An ember optimizer and the torch one with the same name and options."""

    def __init__(self, name, kwargs, spec=None, arrays=None):
        arrays = init_arrays() if arrays is None else arrays
        self.name, self.kwargs, self.spec = name, kwargs, spec
        self.pe = [ember.tensor(a.copy(), requires_grad=True) for a in arrays]
        self.pt = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
        self.oe = getattr(ember.optim, name)(groups(self.pe, spec), **kwargs)
        self.ot = getattr(torch.optim, name)(groups(self.pt, spec), **kwargs)
        self.t = 0

    def step(self, n=1):
        for _ in range(n):
            self.oe.zero_grad()
            self.ot.zero_grad()
            ember_loss(self.pe, self.t).backward()
            torch_loss(self.pt, self.t).backward()
            self.oe.step()
            self.ot.step()
            self.t += 1

    def max_diff(self):
        return max(float(np.abs(e.detach().numpy() - t.detach().numpy()).max())
                   for e, t in zip(self.pe, self.pt))


def to_numpy(v):
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    if isinstance(v, ember.Tensor):
        return v.detach().numpy()
    return v


def assert_same_state_dict(sd_e, sd_t, atol=1e-5):
    """Same layout (keys, shapes, dtypes, group options) and close values."""
    assert sd_e["param_groups"] == sd_t["param_groups"]
    assert sorted(sd_e["state"]) == sorted(sd_t["state"])
    for k, st_t in sd_t["state"].items():
        st_e = sd_e["state"][k]
        assert list(st_e) == list(st_t), (k, list(st_e), list(st_t))
        for key, vt in st_t.items():
            ve = st_e[key]
            assert isinstance(ve, ember.Tensor) == isinstance(vt, torch.Tensor), key
            a, b = to_numpy(ve), to_numpy(vt)
            if isinstance(b, np.ndarray):
                assert a.shape == b.shape and a.dtype == b.dtype, (key, a.shape, b.shape)
                np.testing.assert_allclose(a, b, atol=atol, rtol=1e-4, err_msg=key)
            else:
                assert a == b, key
