"""Row-sparse gradients (ember.sparse.RowSparseGrad) against torch's sparse embedding grads."""
import numpy as np
import pytest
import torch

import ember
import ember.optim
from ember.sparse import RowSparseGrad

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")

ROWS, DIM = 10, 3


def _run(name, kw, steps=20, dense_too=False):
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    we = ember.tensor(w0.copy(), requires_grad=True)
    wt = torch.nn.Parameter(torch.tensor(w0.copy()))
    oe = getattr(ember.optim, name)([we], **kw)
    ot = getattr(torch.optim, name)([wt], **kw)
    for _ in range(steps):
        ids = rng.integers(0, ROWS, size=7)  # repeats included: coalescing matters
        up = rng.standard_normal((7, DIM)).astype(np.float32)
        ot.zero_grad()
        (torch.nn.functional.embedding(torch.tensor(ids), wt, sparse=True)
         * torch.tensor(up)).sum().backward()
        assert wt.grad.is_sparse
        we.grad = RowSparseGrad(ids.copy(), up.copy(), (ROWS, DIM))
        untouched = np.setdiff1d(np.arange(ROWS), ids)
        before = we.detach().numpy()[untouched].copy()
        oe.step()
        ot.step()
        if not (name == "SGD" and kw.get("momentum")):
            # the sparse rule: rows outside the gradient stay as they were
            np.testing.assert_array_equal(we.detach().numpy()[untouched], before)
    np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), atol=1e-5)
    return oe, ot


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, maximize=True)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.3)),
    ("Adagrad", dict(lr=0.1, maximize=True, eps=1e-4)),
    ("SparseAdam", dict(lr=0.01)),
    ("SparseAdam", dict(lr=0.01, betas=(0.5, 0.9), maximize=True)),
    ("SparseAdam", dict(lr=0.01, eps=1e-4)),
])
def test_sparse_matches_torch(name, kw):
    oe, ot = _run(name, kw)
    se, st = oe.state_dict(), ot.state_dict()
    assert se["param_groups"] == st["param_groups"]
    for key, vt in st["state"].get(0, {}).items():
        ve = se["state"][0][key]
        if isinstance(vt, torch.Tensor):
            np.testing.assert_allclose(ve.numpy(), vt.to_dense().numpy(), atol=1e-5)
        else:
            assert ve == vt


def test_sparse_errors():
    w = ember.zeros(4, 2, requires_grad=True)
    g = RowSparseGrad(np.array([1]), np.ones((1, 2), np.float32), (4, 2))
    for opt, msg in [(ember.optim.Adam([w]), "Adam does not support sparse gradients"),
                     (ember.optim.RMSprop([w]), "RMSprop does not support sparse"),
                     (ember.optim.SGD([w], weight_decay=0.1), "weight_decay"),
                     (ember.optim.Adagrad([w], weight_decay=0.1), "weight_decay")]:
        w.grad = g
        with pytest.raises(RuntimeError, match=msg):
            opt.step()
    w.grad = ember.ones(4, 2)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        ember.optim.SparseAdam([w]).step()


def test_sparse_zero_grad_and_empty_grad():
    w = ember.ones(4, 2, requires_grad=True)
    opt = ember.optim.SparseAdam([w], lr=0.1)
    w.grad = RowSparseGrad(np.array([2]), np.ones((1, 2), np.float32), (4, 2))
    opt.zero_grad(set_to_none=False)
    assert w.grad.is_sparse and w.grad.nnz() == 0
    opt.step()  # an empty sparse gradient changes nothing (the step still counts, as in torch)
    assert w.tolist() == [[1.0, 1.0]] * 4 and opt.state[w]["step"] == 1
