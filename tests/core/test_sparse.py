"""Row-sparse gradients (core/sparse.py) and their accumulation by the autograd engine."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.autograd.grad_mode import STATE
from ember.autograd.graph import Node, leaf_edge, new_node, record
from ember.ops._util import wrap
from ember.sparse import RowSparseGrad


class _LookupBackward(Node):
    __slots__ = ("idx", "shape")

    def backward(self, g):
        if leaf_edge(self.next[0]) and not STATE.enabled:
            return (RowSparseGrad(self.idx, g.array, self.shape),)
        z = ember.zeros(self.shape, dtype=g.dtype)
        return (z.index_add(0, ember.from_numpy(self.idx), g),)


def lookup(table, idx):
    """``table[idx]`` whose gradient reaches a leaf table as a RowSparseGrad."""
    out = wrap(table.array[idx])
    if STATE.enabled and table.requires_grad:
        n = new_node(_LookupBackward)
        n.idx, n.shape = idx, table.array.shape
        record(n, out, table)
    return out


def _tables(rows=6, dim=3, seed=0):
    w = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)


def test_sparse_grad_matches_torch_sparse_embedding():
    ids = [np.array([4, 1, 4, 0]), np.array([1, 1, 5])]
    ew, tw = _tables()
    for i in ids:  # two backward passes: sparse grads accumulate
        g = np.random.default_rng(len(i)).standard_normal((len(i), 3)).astype(np.float32)
        (lookup(ew, i) * ember.from_numpy(g)).sum().backward()
        e = torch.nn.functional.embedding(torch.from_numpy(i), tw, sparse=True)
        (e * torch.from_numpy(g)).sum().backward()
    assert ew.grad.is_sparse and tw.grad.is_sparse
    assert ew.grad.nnz() == 7  # concatenated, not yet coalesced
    np.testing.assert_allclose(ew.grad.to_dense().numpy(), tw.grad.to_dense().numpy(), rtol=1e-6)
    c, tc = ew.grad.coalesce(), tw.grad.coalesce()
    np.testing.assert_array_equal(c._indices().numpy(), tc.indices().numpy())
    np.testing.assert_allclose(c._values().numpy(), tc.values().numpy(), rtol=1e-6)
    assert c.is_coalesced() and c.coalesce() is c


def test_dense_then_sparse_and_sparse_then_dense_give_dense():
    for first_dense in (True, False):
        ew, tw = _tables()
        steps = [lambda: (ew * 2).sum(), lambda: lookup(ew, np.array([2, 2])).sum()]
        tsteps = [lambda: (tw * 2).sum(), lambda: tw[[2, 2]].sum()]
        order = (0, 1) if first_dense else (1, 0)
        for k in order:
            steps[k]().backward()
            tsteps[k]().backward()
        assert not ew.grad.is_sparse
        np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy())


def test_autograd_grad_returns_and_sums_sparse():
    ew, _ = _tables()
    y = lookup(ew, np.array([0, 3])).sum() + lookup(ew, np.array([3])).sum()
    (g,) = ember.autograd.grad(y, ew)
    assert g.is_sparse
    want = np.zeros((6, 3), np.float32)
    want[0] = 1
    want[3] = 2
    np.testing.assert_array_equal(g.to_dense().numpy(), want)


def test_create_graph_gets_a_dense_differentiable_grad():
    ew, _ = _tables()
    (g,) = ember.autograd.grad(lookup(ew, np.array([1, 1])).pow(2).sum(), ew, create_graph=True)
    assert not g.is_sparse and g.requires_grad


def test_coalesce_add_to_and_scaling():
    idx = np.array([3, 0, 3, 3])
    vals = np.arange(8, dtype=np.float32).reshape(4, 2)
    g = RowSparseGrad(idx, vals, (5, 2))
    c = g.coalesce()
    assert c.indices.tolist() == [0, 3]
    assert c.values.tolist() == [[2.0, 3.0], [0 + 4 + 6, 1 + 5 + 7]]
    dense = np.ones((5, 2), np.float32)
    g.add_to_(dense, alpha=0.5)
    assert dense[3].tolist() == [6.0, 7.5] and dense[1].tolist() == [1.0, 1.0]
    h = (g * 2.0)
    assert h.dtype == np.float32
    np.testing.assert_array_equal(h.to_dense().numpy(), 2 * g.to_dense().numpy())
    np.testing.assert_array_equal((-g).to_dense().numpy(), -g.to_dense().numpy())


def test_bad_shapes_are_named():
    with pytest.raises(ValueError, match=r"values must have shape \(2, 3\)"):
        RowSparseGrad(np.array([0, 1]), np.zeros((2, 4), np.float32), (5, 3))
    with pytest.raises(ValueError, match="indices must be 1-D"):
        RowSparseGrad(np.zeros((1, 2), np.int64), np.zeros((2, 3), np.float32), (5, 3))
    g = RowSparseGrad(np.array([0]), np.zeros((1, 3), np.float32), (5, 3))
    with pytest.raises(ValueError, match="shapes"):
        g + RowSparseGrad(np.array([0]), np.zeros((1, 3), np.float32), (4, 3))
