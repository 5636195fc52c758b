"""scaled_dot_product_attention with its (batch x heads) matrices split over ember's threads:
the same outputs and gradients as the batched path and as torch (masks, causal, dropout)."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember._parallel import split_threads
from ember.nn.functional import attention as A


def _run(q, k, v, grads=True, **kw):
    tq, tk, tv = (ember.tensor(a, requires_grad=True) for a in (q, k, v))
    ember.manual_seed(0)
    o = F.scaled_dot_product_attention(tq, tk, tv, **kw)
    w = np.random.default_rng(1).standard_normal(tuple(o.shape)).astype(q.dtype)
    (o * ember.from_numpy(w)).sum().backward()
    return [o.detach().numpy()] + [t.grad.numpy() for t in (tq, tk, tv)]


@pytest.mark.parametrize("kind", ["none", "causal", "bool", "float", "dropout"])
def test_split_path_matches_batched_path_and_torch(kind, monkeypatch):
    if split_threads(1 << 24) < 2:
        pytest.skip("one thread: nothing is split")
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 4, 64, 32))
    k = rng.standard_normal((2, 4, 48, 32))
    v = rng.standard_normal((2, 4, 48, 16))
    kw = {}
    if kind == "causal":
        kw["is_causal"] = True
    elif kind == "bool":
        kw["attn_mask"] = ember.from_numpy(rng.random((64, 48)) > 0.3)
    elif kind == "float":
        kw["attn_mask"] = ember.from_numpy(rng.standard_normal((64, 48)))
    elif kind == "dropout":
        kw["dropout_p"] = 0.2
    calls = []
    real = A._sdpa_threaded
    monkeypatch.setattr(A, "_sdpa_threaded", lambda *a: calls.append(1) or real(*a))
    split = _run(q, k, v, **kw)
    assert calls, "the split path did not run"
    monkeypatch.setattr(A, "_threads_for", lambda *a: 1)
    batched = _run(q, k, v, **kw)
    for a, b in zip(split, batched):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    if kind == "dropout":
        return
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tkw = dict(kw)
    if "attn_mask" in tkw:
        tkw["attn_mask"] = torch.from_numpy(tkw["attn_mask"].numpy())
    o = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **tkw)
    w = np.random.default_rng(1).standard_normal(tuple(o.shape))
    (o * torch.from_numpy(w)).sum().backward()
    for a, b in zip(split, [o.detach().numpy(), tq.grad.numpy(), tk.grad.numpy(),
                            tv.grad.numpy()]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
