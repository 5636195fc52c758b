"""Shared pieces of the distribution tests: ember <-> torch conversion and comparison."""
import numpy as np
import torch

import ember

TOL = {np.float64: dict(rtol=1e-9, atol=1e-11), np.float32: dict(rtol=2e-5, atol=2e-6)}


def to_torch(x, requires_grad=False):
    """An ember tensor (or a number) as a torch tensor with the same values."""
    if isinstance(x, ember.Tensor):
        t = torch.from_numpy(np.array(x.detach().numpy()))
    else:
        t = torch.tensor(x)
    return t.requires_grad_(requires_grad) if requires_grad else t


def leaf(arr, dtype=np.float64):
    """The same values as an ember leaf and a torch leaf, both requiring grad."""
    arr = np.asarray(arr, dtype=dtype)
    return ember.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)


def close(e, t, dtype=np.float64, **kw):
    """Assert an ember value equals a torch value (shape, NaN and inf positions included)."""
    tol = dict(TOL[np.dtype(dtype).type])
    tol.update(kw)
    ea = e.detach().numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    ta = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    assert ea.shape == ta.shape, (ea.shape, ta.shape)
    np.testing.assert_allclose(ea, ta, equal_nan=True, **tol)
