"""Linear algebra vs PyTorch: forward, backward, double backward and float64 gradcheck.

Each case is written once as ``fn(L, *inputs)`` where ``L`` is the library (``ember`` or
``torch``): the two share names and signatures, so one lambda serves both sides.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch

import ember
from optest import check_op


def _pair(fn):
    return functools.partial(fn, ember), functools.partial(fn, torch)


def _eye_like(L, a):
    return L.eye(a.shape[-1], dtype=a.dtype)


def _wc(L, a, k=3.0):
    """A well-conditioned matrix from a random one: a + k * I."""
    return a + k * _eye_like(L, a)


def _spd(L, a):
    """Symmetric positive definite from a random square matrix."""
    return a @ a.mT + 3.0 * _eye_like(L, a)


def _sym(L, a):
    return a + a.mT


def _case(name, fn, inputs, **kw):
    return pytest.param(fn, inputs, kw, id=name)


def _run(fn, inputs, kw, device):
    e, t = _pair(fn)
    check_op(e, t, inputs, device=device, **kw)


INT = np.arange(12, dtype=np.int64).reshape(3, 4) - 5
INT2 = np.arange(8, dtype=np.int64).reshape(4, 2) - 3
INT32 = np.arange(9, dtype=np.int32).reshape(3, 3)

# --------------------------------------------------------------------------- products

PRODUCTS = [
    _case("matmul-2d", lambda L, a, b: L.matmul(a, b), [(3, 4), (4, 5)]),
    _case("matmul-op", lambda L, a, b: a @ b, [(3, 4), (4, 2)]),
    _case("matmul-dot", lambda L, a, b: a @ b, [(4,), (4,)]),
    _case("matmul-vec-mat", lambda L, a, b: a @ b, [(4,), (4, 3)]),
    _case("matmul-mat-vec", lambda L, a, b: a @ b, [(3, 4), (4,)]),
    _case("matmul-vec-batch", lambda L, a, b: a @ b, [(4,), (2, 4, 3)]),
    _case("matmul-batch-vec", lambda L, a, b: a @ b, [(2, 3, 4), (4,)]),
    _case("matmul-batch-mat", lambda L, a, b: a @ b, [(2, 3, 4), (4, 5)]),
    _case("matmul-mat-batch", lambda L, a, b: a @ b, [(3, 4), (2, 4, 5)]),
    _case("matmul-broadcast", lambda L, a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)]),
    _case("matmul-batch-noncontig", lambda L, a, b: a @ b, [(2, 3, 4), (2, 4, 5)],
          noncontig=True),
    _case("matmul-batch-mat-noncontig", lambda L, a, b: a @ b, [(2, 3, 4), (4, 5)],
          noncontig=True),
    _case("matmul-empty-k", lambda L, a, b: a @ b, [(2, 0), (0, 3)]),
    _case("matmul-empty-m", lambda L, a, b: a @ b, [(0, 3), (3, 2)]),
    _case("matmul-empty-batch", lambda L, a, b: a @ b, [(0, 2, 3), (3, 2)]),
    _case("matmul-empty-batch-k", lambda L, a, b: a @ b, [(2, 3, 0), (0, 2)]),
    _case("matmul-int", lambda L, a, b: a @ b, [INT, INT2]),
    _case("matmul-float64", lambda L, a, b: a @ b, [(2, 3), (3, 2)], dtype=np.float64),
    _case("mm", lambda L, a, b: L.mm(a, b), [(3, 4), (4, 2)]),
    _case("mm-method-noncontig", lambda L, a, b: a.mm(b), [(3, 4), (4, 2)], noncontig=True),
    _case("bmm", lambda L, a, b: L.bmm(a, b), [(2, 3, 4), (2, 4, 2)]),
    _case("bmm-noncontig", lambda L, a, b: a.bmm(b), [(2, 3, 4), (2, 4, 2)], noncontig=True),
    _case("mv", lambda L, a, b: L.mv(a, b), [(3, 4), (4,)]),
    _case("dot", lambda L, a, b: L.dot(a, b), [(5,), (5,)]),
    _case("dot-int", lambda L, a, b: a.dot(b), [np.arange(4), np.arange(4) - 2]),
    _case("vdot", lambda L, a, b: L.vdot(a, b), [(5,), (5,)]),
    _case("inner", lambda L, a, b: L.inner(a, b), [(2, 3), (4, 3)]),
    _case("inner-vec", lambda L, a, b: a.inner(b), [(3,), (3,)]),
    _case("inner-scalar", lambda L, a, b: L.inner(a, b), [(), (2, 3)]),
    _case("outer", lambda L, a, b: L.outer(a, b), [(3,), (4,)]),
    _case("ger", lambda L, a, b: a.ger(b), [(2,), (3,)]),
    _case("addmm", lambda L, c, a, b: L.addmm(c, a, b), [(3, 2), (3, 4), (4, 2)]),
    _case("addmm-bias", lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2.0),
          [(2,), (3, 4), (4, 2)]),
    _case("addmm-method", lambda L, c, a, b: c.addmm(a, b, alpha=-1.0), [(1, 2), (3, 4), (4, 2)]),
    _case("addmv", lambda L, c, a, b: L.addmv(c, a, b, beta=2.0), [(3,), (3, 4), (4,)]),
    _case("addr", lambda L, c, a, b: L.addr(c, a, b, alpha=3.0), [(3, 2), (3,), (2,)]),
    _case("addbmm", lambda L, c, a, b: L.addbmm(c, a, b, beta=0.5),
          [(3, 2), (4, 3, 5), (4, 5, 2)]),
    _case("baddbmm", lambda L, c, a, b: L.baddbmm(c, a, b, alpha=0.5),
          [(1, 3, 2), (2, 3, 4), (2, 4, 2)]),
    _case("baddbmm-noncontig", lambda L, c, a, b: c.baddbmm(a, b),
          [(2, 3, 2), (2, 3, 4), (2, 4, 2)], noncontig=True),
    _case("tensordot-2", lambda L, a, b: L.tensordot(a, b), [(2, 3, 4), (3, 4, 2)]),
    _case("tensordot-1", lambda L, a, b: L.tensordot(a, b, 1), [(2, 3), (3, 4)]),
    _case("tensordot-0", lambda L, a, b: L.tensordot(a, b, dims=0), [(2,), (3,)]),
    _case("tensordot-lists", lambda L, a, b: L.tensordot(a, b, dims=([1, 0], [0, 1])),
          [(3, 4), (4, 3)]),
    _case("tensordot-negative", lambda L, a, b: L.tensordot(a, b, dims=([-1], [0])),
          [(2, 2, 3), (3, 2)], noncontig=True),
    _case("kron", lambda L, a, b: L.kron(a, b), [(2, 3), (2, 2)]),
    _case("kron-vec", lambda L, a, b: a.kron(b), [(2,), (3,)]),
    _case("kron-ranks", lambda L, a, b: L.kron(a, b), [(2, 2), (2, 1, 2)]),
    _case("trace", lambda L, a: L.trace(a), [(3, 3)]),
    _case("trace-rect", lambda L, a: a.trace(), [(2, 4)], noncontig=True),
    _case("trace-int", lambda L, a: L.trace(a), [INT32]),
    _case("cross-linalg", lambda L, a, b: L.linalg.cross(a, b), [(2, 3), (2, 3)]),
    _case("cross-broadcast", lambda L, a, b: L.linalg.cross(a, b), [(1, 3), (4, 3)]),
    _case("cross-dim", lambda L, a, b: L.linalg.cross(a, b, dim=-2), [(3, 2), (3, 2)],
          noncontig=True),
    _case("cross-torch-dim", lambda L, a, b: L.cross(a, b, dim=0), [(3, 4), (3, 4)]),
    _case("cross-method", lambda L, a, b: a.cross(b, dim=1), [(2, 3), (2, 3)]),
]


@pytest.mark.parametrize("fn,inputs,kw", PRODUCTS)
def test_products(fn, inputs, kw, device):
    _run(fn, inputs, kw, device)


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("bij,bjk->bik", [(1, 2, 3), (3, 3, 2)]),  # size-1 batch broadcasts
    ("ij,jk->ik", [(2, 1), (3, 4)]),  # size-1 contracted dim broadcasts
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("bii->bi", [(2, 3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ba,ab", [(2, 3), (3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("...ij,...jk->...ik", [(2, 3), (2, 3, 4)]),
    ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)]),
    ("i...->...", [(2, 3, 2)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("b i j , b j -> b i", [(2, 3, 4), (2, 4)]),
    ("ij,jk->ik", [(0, 3), (3, 2)]),
    ("ij,jk->ik", [(2, 0), (0, 2)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum(eq, shapes, device):
    _run(lambda L, *xs: L.einsum(eq, *xs), shapes, {"noncontig": True}, device)


def test_einsum_list_operands_and_big_path():
    a, b = ember.randn(40, 50), ember.randn(50, 60)
    ta, tb = torch.from_numpy(a.numpy()), torch.from_numpy(b.numpy())
    np.testing.assert_allclose(ember.einsum("ij,jk->ik", [a, b]).numpy(),
                               torch.einsum("ij,jk->ik", [ta, tb]).numpy(), rtol=1e-4,
                               atol=1e-4)


def test_einsum_int():
    a = np.arange(6).reshape(2, 3)
    r = ember.einsum("ij,kj->ik", ember.tensor(a), ember.tensor(a))
    assert r.dtype == ember.int64
    np.testing.assert_array_equal(r.numpy(), a @ a.T)


# --------------------------------------------------------------------------- ember.linalg

F64 = {"dtype": np.float64}


def _svd_fixed(L, a, full=False):
    """SVD with a fixed sign per singular pair (LAPACK builds may choose either)."""
    u, s, vh = L.linalg.svd(a, full_matrices=full)
    sg = u.sum(-2, keepdim=True).sign()
    return u * sg, s, vh * sg.mT


def _eigh_fixed(L, a, uplo="L"):
    w, v = L.linalg.eigh(_sym(L, a), UPLO=uplo)
    return w, v * v.sum(-2, keepdim=True).sign()


def _qr_fixed(L, a, mode="reduced"):
    q, r = L.linalg.qr(a, mode=mode)
    sg = q.sum(-2, keepdim=True).sign()
    return q * sg, r * sg.mT


LINALG = [
    _case("inv", lambda L, a: L.linalg.inv(_wc(L, a)), [(3, 3)]),
    _case("inv-batch-noncontig", lambda L, a: L.linalg.inv(_wc(L, a)), [(2, 3, 3)],
          noncontig=True, **F64),
    _case("inverse", lambda L, a: L.inverse(_wc(L, a)), [(2, 2)]),
    _case("inverse-method", lambda L, a: _wc(L, a).inverse(), [(3, 3)], **F64),
    _case("solve", lambda L, a, b: L.linalg.solve(_wc(L, a), b), [(3, 3), (3, 2)]),
    _case("solve-vec", lambda L, a, b: L.linalg.solve(_wc(L, a), b), [(3, 3), (3,)]),
    _case("solve-batch-vecs", lambda L, a, b: L.linalg.solve(_wc(L, a), b), [(2, 3, 3), (2, 3)],
          **F64),
    _case("solve-broadcast", lambda L, a, b: L.linalg.solve(_wc(L, a), b),
          [(2, 1, 3, 3), (3, 3, 2)], noncontig=True, **F64),
    _case("solve-right", lambda L, a, b: L.linalg.solve(_wc(L, a), b, left=False),
          [(3, 3), (2, 3)], **F64),
    _case("det", lambda L, a: L.linalg.det(a), [(3, 3)], **F64),
    _case("det-batch", lambda L, a: L.linalg.det(a), [(2, 3, 3)], noncontig=True, **F64),
    _case("det-1x1", lambda L, a: L.det(a), [(1, 1)]),
    _case("det-method", lambda L, a: a.det(), [(2, 2)]),
    _case("slogdet", lambda L, a: L.linalg.slogdet(a), [(2, 3, 3)], **F64),
    _case("slogdet-method", lambda L, a: a.slogdet(), [(3, 3)], **F64),
    _case("logdet", lambda L, a: L.logdet(_wc(L, a)), [(3, 3)], **F64),
    _case("cholesky", lambda L, a: L.linalg.cholesky(_spd(L, a)), [(3, 3)], **F64),
    _case("cholesky-upper-batch", lambda L, a: L.linalg.cholesky(_spd(L, a), upper=True),
          [(2, 3, 3)], **F64),
    _case("cholesky-float32", lambda L, a: L.linalg.cholesky(_spd(L, a)), [(3, 3)],
          atol=1e-4),
    _case("qr-tall", lambda L, a: _qr_fixed(L, a), [(4, 3)], **F64),
    _case("qr-square-batch", lambda L, a: _qr_fixed(L, a), [(2, 3, 3)], **F64),
    _case("qr-wide", lambda L, a: _qr_fixed(L, a), [(2, 4)], **F64),
    _case("qr-complete-square", lambda L, a: _qr_fixed(L, a, "complete"), [(3, 3)], **F64),
    _case("eigh", lambda L, a: _eigh_fixed(L, a), [(3, 3)], **F64),
    _case("eigh-batch-upper", lambda L, a: _eigh_fixed(L, a, "U"), [(2, 3, 3)], noncontig=True,
          **F64),
    _case("eigvalsh", lambda L, a: L.linalg.eigvalsh(_sym(L, a)), [(3, 3)], **F64),
    _case("svd-square", lambda L, a: _svd_fixed(L, a), [(3, 3)], **F64),
    _case("svd-tall", lambda L, a: _svd_fixed(L, a), [(4, 3)], **F64),
    _case("svd-wide-batch", lambda L, a: _svd_fixed(L, a), [(2, 2, 3)], **F64),
    _case("svd-full-square", lambda L, a: _svd_fixed(L, a, True), [(3, 3)], **F64),
    _case("svd-float32", lambda L, a: _svd_fixed(L, a), [(3, 2)], atol=1e-4),
    _case("svdvals", lambda L, a: L.linalg.svdvals(a), [(2, 4, 3)], **F64),
    _case("pinv-tall", lambda L, a: L.linalg.pinv(a), [(4, 3)], **F64),
    _case("pinv-wide-batch", lambda L, a: L.linalg.pinv(a), [(2, 2, 3)], **F64),
    _case("pinv-hermitian", lambda L, a: L.linalg.pinv(_spd(L, a), hermitian=True), [(3, 3)],
          **F64),
    _case("pinverse", lambda L, a: L.pinverse(a), [(3, 2)], **F64),
    _case("matrix_power-3", lambda L, a: L.linalg.matrix_power(a, 3), [(2, 3, 3)], **F64),
    _case("matrix_power-1", lambda L, a: L.linalg.matrix_power(a, 1), [(3, 3)]),
    _case("matrix_power-neg", lambda L, a: L.matrix_power(_wc(L, a), -2), [(3, 3)], **F64),
    _case("matrix_power-0", lambda L, a: L.linalg.matrix_power(a, 0), [(2, 3, 3)], grad=False),
    _case("lstsq", lambda L, a, b: L.linalg.lstsq(a, b).solution, [(5, 3), (5, 2)], **F64),
    _case("lstsq-batch-gelsd", lambda L, a, b: L.linalg.lstsq(a, b, driver="gelsd")[:2],
          [(2, 4, 3), (2, 4, 2)], **F64),
    _case("multi_dot", lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
          [(2, 3), (3, 4), (4, 2)]),
    _case("multi_dot-vecs", lambda L, a, b, c, d: L.linalg.multi_dot([a, b, c, d]),
          [(3,), (3, 4), (4, 2), (2,)]),
    _case("multi_dot-two", lambda L, a, b: L.linalg.multi_dot([a, b]), [(2,), (2, 3)]),
    _case("vecdot", lambda L, a, b: L.linalg.vecdot(a, b), [(2, 3), (3,)]),
    _case("vecdot-dim", lambda L, a, b: L.linalg.vecdot(a, b, dim=0), [(2, 3), (2, 1)]),
    _case("linalg-matmul", lambda L, a, b: L.linalg.matmul(a, b), [(2, 3), (3,)]),
]


@pytest.mark.parametrize("fn,inputs,kw", LINALG)
def test_linalg(fn, inputs, kw, device):
    _run(fn, inputs, kw, device)


# piecewise-linear norms are squared so that their second derivative is not identically zero
NORMS = [
    _case("vector_norm", lambda L, a: L.linalg.vector_norm(a), [(2, 3)]),
    _case("vector_norm-1", lambda L, a: L.linalg.vector_norm(a, 1, dim=-1) ** 2, [(2, 3)]),
    _case("vector_norm-inf", lambda L, a: L.linalg.vector_norm(a, math.inf, dim=(0, 2)) ** 2,
          [(2, 3, 2)]),
    _case("vector_norm-neginf", lambda L, a: L.linalg.vector_norm(a, -math.inf, dim=1,
                                                                  keepdim=True) ** 2, [(2, 3)]),
    _case("vector_norm-0", lambda L, a: L.linalg.vector_norm(a, 0, dim=0), [(2, 3)]),
    _case("vector_norm-3", lambda L, a: L.linalg.vector_norm(a, 3, dim=-2, keepdim=True),
          [(2, 3)], noncontig=True),
    _case("vector_norm-half", lambda L, a: L.linalg.vector_norm(a, 0.5), [(2, 2)], low=0.5),
    _case("vector_norm-dtype", lambda L, a: L.linalg.vector_norm(a, dtype=L.float64), [(3,)],
          check_dtype=True),
    _case("vector_norm-empty", lambda L, a: L.linalg.vector_norm(a, dim=1), [(2, 0)]),
    _case("matrix_norm-fro", lambda L, a: L.linalg.matrix_norm(a), [(2, 2, 3)]),
    _case("matrix_norm-nuc", lambda L, a: L.linalg.matrix_norm(a, "nuc"), [(2, 3)], **F64),
    _case("matrix_norm-2", lambda L, a: L.linalg.matrix_norm(a, 2, keepdim=True), [(2, 3, 2)],
          **F64),
    _case("matrix_norm--2", lambda L, a: L.linalg.matrix_norm(a, -2), [(3, 3)], **F64),
    _case("matrix_norm-1", lambda L, a: L.linalg.matrix_norm(a, 1) ** 2, [(3, 2)]),
    _case("matrix_norm--1", lambda L, a: L.linalg.matrix_norm(a, -1, dim=(0, 2)) ** 2, [(3, 2, 2)]),
    _case("matrix_norm-inf", lambda L, a: L.linalg.matrix_norm(a, math.inf, keepdim=True) ** 2,
          [(2, 3)], noncontig=True),
    _case("matrix_norm--inf", lambda L, a: L.linalg.matrix_norm(a, -math.inf, dim=(-1, 0)) ** 2,
          [(3, 2)]),
    _case("norm", lambda L, a: L.linalg.norm(a), [(2, 3, 2)]),
    _case("norm-ord-matrix", lambda L, a: L.linalg.norm(a, "fro"), [(2, 3)]),
    _case("norm-ord-vector", lambda L, a: L.linalg.norm(a, 1) ** 2, [(4,)]),
    _case("norm-dim", lambda L, a: L.linalg.norm(a, dim=-1, keepdim=True), [(2, 3)]),
    _case("norm-dims", lambda L, a: L.linalg.norm(a, math.inf, dim=(1, 0)) ** 2, [(2, 3)]),
]


@pytest.mark.parametrize("fn,inputs,kw", NORMS)
def test_norms(fn, inputs, kw, device):
    _run(fn, inputs, kw, device)


# --------------------------------------------------------------------------- forward-only checks

def _both(fn, *arrays):
    e = fn(ember, *[ember.tensor(a) for a in arrays])
    t = fn(torch, *[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays])
    return e, t


def test_lstsq_all_outputs():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
    for driver in (None, "gelsy", "gelsd", "gelss", "gels"):
        e, t = _both(lambda L, x, y: L.linalg.lstsq(x, y, driver=driver), a, b)
        for name, ev, tv in zip(("solution", "residuals", "rank", "singular_values"), e, t):
            assert ev.shape == tuple(tv.shape), (driver, name)
            assert ember.dtypes.name(ev.dtype) == str(tv.dtype).replace("torch.", "")
            np.testing.assert_allclose(ev.numpy(), tv.numpy(), atol=1e-8, err_msg=name)


def test_matrix_rank():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 2)) @ rng.standard_normal((3, 2, 5))  # rank 2
    for kw in ({}, {"atol": 1.0}, {"rtol": 0.5}, {"atol": 0.1, "rtol": 0.1}):
        e, t = _both(lambda L, x: L.linalg.matrix_rank(x, **kw), a)
        assert e.dtype == ember.int64
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    s = a[0] @ a[0].T
    e, t = _both(lambda L, x: L.linalg.matrix_rank(x, hermitian=True), s)
    assert int(e) == int(t) == 2


def test_det_singular_gradient():
    # d det(A)/dA is the cofactor matrix, also where A is singular. torch 2.13's answer here
    # depends on the CPU's LAPACK path (zeros on some machines), so compare with the cofactors.
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])  # rank 2
    ea = ember.tensor(a, requires_grad=True)
    ember.linalg.det(ea).backward()
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                     for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(ea.grad.numpy(), cof, atol=1e-10)


def test_svd_old_style():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 3))
    u, s, v = ember.svd(ember.tensor(a))
    assert v.shape == (3, 3) and u.shape == (4, 3)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, a, atol=1e-10)
    u, s, v = ember.svd(ember.tensor(a), some=False)
    assert u.shape == (4, 4)
    _, s2, _ = ember.svd(ember.tensor(a), compute_uv=False)
    np.testing.assert_allclose(s2.numpy(), np.linalg.svd(a, compute_uv=False))


@pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated")
def test_qr_mode_r_and_cholesky_method():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 3))
    q, r = ember.linalg.qr(ember.tensor(a), mode="r")
    assert q.numel() == 0 and r.shape == (3, 3)
    s = a.T @ a + np.eye(3)
    e, t = _both(lambda L, x: x.cholesky(), s)
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-10)


def test_matmul_float32_is_raw_blas():
    """The float32 path is numpy's own ``@``: bit-identical result, no graph without grad."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((32, 16)).astype(np.float32)
    r = ember.from_numpy(a) @ ember.from_numpy(b)
    assert r.grad_fn is None and r.dtype == ember.float32
    np.testing.assert_array_equal(r.numpy(), a @ b)
    a3 = rng.standard_normal((2, 64, 32)).astype(np.float32)
    np.testing.assert_allclose((ember.from_numpy(a3) @ ember.from_numpy(b)).numpy(), a3 @ b,
                               rtol=1e-6, atol=1e-5)


def test_matmul_saved_tensor_modified_in_place():
    a = ember.randn(2, 3, requires_grad=True)
    b = ember.randn(3, 2)
    y = a @ b
    b.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_rmatmul_with_array():
    b = ember.randn(3, 2)
    a = np.ones((2, 3), np.float32)
    np.testing.assert_allclose((a @ b).numpy(), a @ b.numpy(), rtol=1e-6)


def test_svd_full_matrices_gradient_error():
    a = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    u, s, vh = ember.linalg.svd(a, full_matrices=True)
    with pytest.raises(RuntimeError, match="full_matrices=False"):
        u.sum().backward()
    a.grad = None
    _, s, _ = ember.linalg.svd(a, full_matrices=True)
    s.sum().backward()  # S alone is fine
    ta = torch.from_numpy(a.detach().numpy()).requires_grad_()
    torch.linalg.svd(ta, full_matrices=True)[1].sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), atol=1e-10)


# --------------------------------------------------------------------------- error messages

def _t(*shape, dtype=None):
    return ember.zeros(*shape, dtype=dtype)


ERRORS = [
    ("mm-shapes", lambda: ember.mm(_t(3, 4), _t(5, 6)),
     r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x6\)"),
    ("matmul-2d-shapes", lambda: _t(3, 4) @ _t(5, 6),
     r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x6\)"),
    ("matmul-vec-shapes", lambda: _t(4) @ _t(5, 6),
     r"mat1 and mat2 shapes cannot be multiplied \(1x4 and 5x6\)"),
    ("matmul-batch-shapes", lambda: _t(2, 3, 4) @ _t(2, 5, 6),
     r"shapes \[2, 3, 4\] and \[2, 5, 6\] cannot be multiplied"),
    ("matmul-batch-broadcast", lambda: _t(2, 3, 4) @ _t(3, 4, 5),
     r"batch dimensions of shapes \[2, 3, 4\] and \[3, 4, 5\] cannot be broadcast"),
    ("matmul-dtype", lambda: _t(2, 2) @ _t(2, 2, dtype=ember.float64),
     "same dtype, but got: float32 != float64"),
    ("matmul-0d", lambda: ember.matmul(_t(), _t(2)), "at least 1D, but they are 0D and 1D"),
    ("matmul-bool", lambda: ember.matmul(_t(2, 2, dtype=ember.bool), _t(2, 2, dtype=ember.bool)),
     "bool"),
    ("matmul-dot-size", lambda: _t(3) @ _t(4), r"expected tensor \[3\] and src \[4\]"),
    ("mm-rank", lambda: ember.mm(_t(3), _t(3, 3)), r"mm: expected mat1 \(self\) to be a 2-D"),
    ("mm-rank2", lambda: ember.mm(_t(3, 3), _t(2, 3, 3)), "mat2 to be a 2-D tensor, but got a 3-D"),
    ("bmm-rank", lambda: ember.bmm(_t(3, 4), _t(3, 4, 5)), "batch1 to be a 3-D tensor"),
    ("bmm-batch", lambda: ember.bmm(_t(2, 3, 4), _t(3, 4, 5)),
     r"batch1 of shape \[2, 3, 4\] and batch2 of shape \[3, 4, 5\]"),
    ("mv", lambda: ember.mv(_t(3, 4), _t(5)), r"size mismatch, got input \(3\), mat \(3x4\)"),
    ("dot-rank", lambda: ember.dot(_t(3, 1), _t(3)), "1D tensors expected, but got 2D and 1D"),
    ("dot-dtype", lambda: ember.dot(_t(3), _t(3, dtype=ember.float64)), "float32 and float64"),
    ("outer", lambda: ember.outer(_t(3, 1), _t(3)), "Expected 1-D argument self, but got 2-D"),
    ("inner", lambda: ember.inner(_t(3, 2), _t(4)), r"got shapes \[3, 2\] and \[4\]"),
    ("addmm-input", lambda: ember.addmm(_t(2, 3, 4), _t(3, 2), _t(2, 4)), "cannot be broadcast"),
    ("einsum-operands", lambda: ember.einsum("ij,jk", _t(2, 2)), "fewer operands"),
    ("einsum-ndim", lambda: ember.einsum("ij->i", _t(2, 2, 2)),
     r"number of subscripts in the equation \(2\) does not match the number of dimensions "
     r"\(3\) for operand 0"),
    ("einsum-size", lambda: ember.einsum("ij,jk", _t(2, 3), _t(4, 2)),
     "subscript j has size 4 for operand 1"),
    ("einsum-output", lambda: ember.einsum("ij->k", _t(2, 3)), "output subscript k"),
    ("einsum-char", lambda: ember.einsum("i1->i", _t(2, 3)), "invalid subscript '1'"),
    ("einsum-diag-size", lambda: ember.einsum("ii->i", _t(2, 3)), "2 != 3"),
    ("einsum-dtype", lambda: ember.einsum("i,i", _t(2), _t(2, dtype=ember.float64)),
     "operand 0 is float32 and operand 1 is float64"),
    ("tensordot", lambda: ember.tensordot(_t(2, 3), _t(4, 2), 1),
     "first has size 3 in dim 1 and second has size 4 in dim 0"),
    ("trace", lambda: ember.trace(_t(3)), "expected a matrix, but got tensor with dim 1"),
    ("cross", lambda: ember.linalg.cross(_t(2), _t(2)),
     "dimension 0 must have length 3. Got 2 and 2"),
    ("cross-dim", lambda: ember.linalg.cross(_t(2, 3), _t(2, 3), dim=2),
     r"expected to be in range of \[-2, 1\], but got 2"),
    ("inv-square", lambda: ember.linalg.inv(_t(3, 4)),
     "A must be batches of square matrices, but they are 3 by 4 matrices"),
    ("inv-int", lambda: ember.linalg.inv(_t(3, 3, dtype=ember.int64)),
     "Expected a floating point or complex tensor as input. Got int64"),
    ("inv-half", lambda: ember.linalg.inv(_t(3, 3, dtype=ember.float16)), "float16"),
    ("inv-singular", lambda: ember.linalg.inv(_t(3, 3)), "singular"),
    ("det-rank", lambda: ember.linalg.det(_t(3)), "must have at least 2 dimensions"),
    ("solve-shapes", lambda: ember.linalg.solve(ember.eye(3), _t(4)),
     r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x1\)"),
    ("solve-dtype", lambda: ember.linalg.solve(ember.eye(3), _t(3, dtype=ember.float64)),
     "float32 and float64"),
    ("solve-singular", lambda: ember.linalg.solve(_t(3, 3), _t(3)), "singular"),
    ("cholesky", lambda: ember.linalg.cholesky(-ember.eye(3)), "not positive-definite"),
    ("qr-mode", lambda: ember.linalg.qr(ember.eye(3), mode="x"), "unrecognized mode 'x'"),
    ("eigh-square", lambda: ember.linalg.eigh(_t(2, 3)), "2 by 3 matrices"),
    ("matrix_power", lambda: ember.linalg.matrix_power(_t(2, 3), 2), "2 by 3 matrices"),
    ("vector_norm-int", lambda: ember.linalg.vector_norm(_t(3, dtype=ember.int64)), "Got int64"),
    ("vector_norm-empty-inf", lambda: ember.linalg.vector_norm(_t(0), math.inf),
     "cannot compute the inf norm on an empty tensor"),
    ("matrix_norm-ord", lambda: ember.linalg.matrix_norm(_t(3, 3), 3), "Order 3 not supported"),
    ("matrix_norm-rank", lambda: ember.linalg.matrix_norm(_t(3)), "at least 2 dimensions"),
    ("norm-3d", lambda: ember.linalg.norm(_t(2, 2, 2), 2), "must be 1D or 2D. Got 3D"),
    ("multi_dot-one", lambda: ember.linalg.multi_dot([_t(2)]), "at least 2 tensors but got 1"),
    ("multi_dot-mid", lambda: ember.linalg.multi_dot([_t(2), _t(2), _t(2)]),
     "tensor 1 must be 2D but got 1D"),
    ("multi_dot-shapes", lambda: ember.linalg.multi_dot([_t(2, 3), _t(2, 3)]),
     r"shapes \[2, 3\] and \[2, 3\] cannot be multiplied"),
    ("lstsq-driver", lambda: ember.linalg.lstsq(_t(3, 2), _t(3, 1), driver="x"), "driver"),
]


@pytest.mark.parametrize("fn,match", [pytest.param(f, m, id=i) for i, f, m in ERRORS])
def test_errors(fn, match):
    with pytest.raises((RuntimeError, ValueError, IndexError, NotImplementedError),
                       match=match):
        fn()


def test_qr_complete_tall_gradient_error():
    a = ember.randn(4, 2, dtype=ember.float64, requires_grad=True)
    q, r = ember.linalg.qr(a, mode="complete")
    with pytest.raises(RuntimeError, match="mode='complete'"):
        (q.sum() + r.sum()).backward()


# --------------------------------------------------------------------------- cupy branches

@pytest.mark.cuda
def test_solve_and_einsum_on_cuda():
    a = ember.randn(2, 3, 3, device="cuda") + 3 * ember.eye(3, device="cuda")
    b = ember.randn(3, 2, device="cuda")
    x = ember.linalg.solve(a, b)
    np.testing.assert_allclose((a @ x).cpu().numpy(),
                               np.broadcast_to(b.cpu().numpy(), (2, 3, 2)), atol=1e-4)
    y = ember.einsum("bij,jk->bik", a, b)
    np.testing.assert_allclose(y.cpu().numpy(), (a @ b).cpu().numpy(), atol=1e-5)


# --------------------------------------------------------------------------- more autograd checks

NOGRAPH = [((3, 4), (4, 2)), ((2, 3, 4), (4, 2)), ((3, 4), (2, 4, 2)), ((4,), (4, 2)),
           ((0, 3), (3, 2))]


@pytest.mark.parametrize("sa,sb", NOGRAPH, ids=[f"{a}@{b}" for a, b in NOGRAPH])
def test_matmul_backward_without_create_graph(sa, sb, device):
    """The plain-array backward (used when no graph is built) against torch."""
    check_op(lambda a, b: a @ b, lambda a, b: a @ b, [sa, sb], gradgrad=False, device=device)


SECOND = [
    ("inv", lambda a: ember.linalg.inv(_wc(ember, a))),
    ("det", lambda a: ember.linalg.det(a)),
    ("cholesky", lambda a: ember.linalg.cholesky(_spd(ember, a))),
    ("eigh", lambda a: _eigh_fixed(ember, a)),
    ("svd", lambda a: _svd_fixed(ember, a)),
    ("qr", lambda a: _qr_fixed(ember, a)),
    ("einsum", lambda a: ember.einsum("ij,jk,ki->i", a, a, a)),
]


def _vjp(fn, x0, vs):
    """Gradient of <fn(x), v> at x0 (float64), with its graph kept for a second backward."""
    x = ember.tensor(x0, requires_grad=True)
    outs = fn(x)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    s = sum(((o * ember.tensor(v)).sum() for o, v in zip(outs, vs)), ember.tensor(0.0,
                                                                         dtype=ember.float64))
    (g,) = ember.autograd.grad([s], [x], create_graph=True)
    return x, g


@pytest.mark.parametrize("fn", [f for _, f in SECOND], ids=[n for n, _ in SECOND])
def test_second_derivative_numerically(fn):
    """Double backward against central differences of the first derivative (torch-free)."""
    rng = np.random.default_rng(6)
    x0 = rng.uniform(-1, 1, (2, 2))
    outs = fn(ember.tensor(x0))
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    vs = [rng.standard_normal(o.shape) for o in outs]
    w = rng.standard_normal(x0.shape)
    x, g = _vjp(fn, x0, vs)
    (hess_w,) = ember.autograd.grad([(g * ember.tensor(w)).sum()], [x])
    eps = 1e-6
    num = np.zeros_like(x0)
    for idx in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[idx] = eps
        gp = _vjp(fn, x0 + d, vs)[1].detach().numpy()
        gm = _vjp(fn, x0 - d, vs)[1].detach().numpy()
        num[idx] = ((gp - gm) * w).sum() / (2 * eps)
    np.testing.assert_allclose(hess_w.numpy(), num, atol=1e-5, rtol=1e-4)


def test_einsum_result_does_not_alias_input():
    a = ember.randn(2, 3)
    before = a.numpy().copy()
    for eq in ("ij->ij", "ij->ji", "ij"):
        ember.einsum(eq, a).mul_(0)
    np.testing.assert_array_equal(a.numpy(), before)


def test_vdot_and_conj_on_complex_match_torch():
    a = np.array([1 + 2j, 3 - 1j, -0.5j], np.complex64)
    b = np.array([2 - 1j, 0.5 + 1j, 4], np.complex64)
    got = ember.vdot(ember.tensor(a), ember.tensor(b))
    np.testing.assert_allclose(got.numpy(), torch.vdot(torch.tensor(a), torch.tensor(b)).numpy(),
                               rtol=1e-6)
    np.testing.assert_array_equal(ember.tensor(a).conj().numpy(), np.conj(a))
    x = ember.tensor([1.0, 2.0])
    assert x.conj() is x  # real: no copy, as torch
    with pytest.raises(RuntimeError, match="dot: expected both vectors to have same dtype"):
        ember.vdot(ember.tensor(a), ember.tensor([1.0, 2.0, 3.0]))


def test_linalg_names_the_supported_dtypes_for_complex_input():
    with pytest.raises(RuntimeError, match=r"linalg.inv: .* real float32/float64 .* complex64"):
        ember.linalg.inv(ember.tensor(np.eye(2, dtype=np.complex64)))
