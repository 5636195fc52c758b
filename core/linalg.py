"""``ember.linalg``: norms, inverse, solve, determinants, decompositions (cholesky, qr, eigh, svd),
pinv, matrix_power, matrix_rank, lstsq, multi_dot.

Forwards call the backend's LAPACK (``numpy.linalg`` / ``cupy.linalg``) on the raw arrays, batched
over leading dims. Backwards are written with ember ops (matmul, solve, inv, einsum-style
products), so they differentiate again. Gradients of eigh/svd assume distinct eigen/singular
values, as PyTorch's do; cholesky and eigh read only the lower triangle, so their gradients are
meaningful for symmetric inputs.

    >>> A = ember.randn(3, 3) + 3 * ember.eye(3)
    >>> x = ember.linalg.solve(A, ember.ones(3))
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from . import _backend as _bk
from . import dtypes as D
from .autograd.grad_mode import STATE, no_grad
from .autograd.graph import Node, new_node, record, saved_output
from .ops._util import norm_dim, norm_dims, sum_to, wrap
from .ops.elementwise import maximum
from .ops.index import where
from .ops.linalg import _cross, _diag_embed, _diagonal, matmul

_INF = math.inf

slogdet_result = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
qr_result = namedtuple("linalg_qr", ["Q", "R"])
eigh_result = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
svd_result = namedtuple("linalg_svd", ["U", "S", "Vh"])
lstsq_result = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_svd_old = namedtuple("svd", ["U", "S", "V"])


# --------------------------------------------------------------------------- checks and helpers

def _check_float(op, A):
    dt = A.array.dtype
    if dt.kind not in "fc":
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as input. "
                           f"Got {D.name(dt)}")
    if dt.kind == "c":
        raise RuntimeError(f"linalg.{op}: ember.linalg works on real float32/float64 tensors; got "
                           f"{D.name(dt)} (split complex systems into real and imaginary parts)")
    if dt.itemsize < 4:
        raise RuntimeError(f"linalg.{op}: low precision dtype {D.name(dt)} is not supported; "
                           "use float32 or float64")


def _check_matrix(op, A, square=True):
    _check_float(op, A)
    s = A.array.shape
    if len(s) < 2:
        raise RuntimeError(f"linalg.{op}: The input tensor A must have at least 2 dimensions.")
    if square and s[-1] != s[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they are "
                           f"{s[-2]} by {s[-1]} matrices")


def _same(op, A, Bt):
    if type(A.array) is not type(Bt.array):
        from .ops._util import device_error

        raise device_error(f"linalg.{op}", A.array, Bt.array)
    if A.array.dtype != Bt.array.dtype:
        raise RuntimeError(f"linalg.{op}: Expected A and B to have the same dtype, but got "
                           f"{D.name(A.array.dtype)} and {D.name(Bt.array.dtype)}")


def _lapack(op, fn, *args, what="the input matrix is singular", **kw):
    """Run a backend LAPACK call; its failure becomes a RuntimeError naming the op."""
    try:
        return fn(*args, **kw)
    except np.linalg.LinAlgError as e:
        raise RuntimeError(f"linalg.{op}: {what} ({e})") from None


def _eye(n, like, m=None):
    xp = _bk.namespace(like.array)
    return wrap(xp.eye(n, n if m is None else m, dtype=like.array.dtype))


def _mat(v):
    """A batch of scalars (...,) -> (..., 1, 1), to scale a batch of matrices."""
    return v.reshape(v.array.shape + (1, 1))


def _record_multi(n, outs, *inputs):
    """Make ``n`` the grad_fn of every tensor in ``outs`` (output i has ``_out_nr`` i)."""
    record(n, outs[0], *inputs)
    for i, o in enumerate(outs[1:], 1):
        o.grad_fn = n
        o.requires_grad = True
        o._out_nr = i
    n.output_meta = tuple((o.array.shape, o.array.dtype, _bk.namespace(o.array)) for o in outs)


def _needs(*ts):
    return STATE.enabled and any(t.requires_grad for t in ts)


class _MultiNode(Node):
    """Base of multi-output nodes: outputs that got no gradient arrive as ``None``."""

    __slots__ = ("output_meta",)
    materialize_grads = False


# --------------------------------------------------------------------------- inv, solve

class InvBackward(Node):
    __slots__ = ()

    def backward(self, g):
        (ainv,) = self.unpack()
        t = ainv.mT
        return (-matmul(matmul(t, g), t),)


def inv(A):
    """Inverse of square matrices (batched)."""
    _check_matrix("inv", A)
    d = A.array
    xp = _bk.namespace(d)
    out = wrap(_lapack("inv", xp.linalg.inv, d,
                       what="the input matrix is singular, so it cannot be inverted"))
    if STATE.enabled and A.requires_grad:
        n = new_node(InvBackward)
        n.saved = (saved_output(out),)
        record(n, out, A)
    return out


class SolveBackward(Node):
    __slots__ = ("ashape", "bshape")

    def backward(self, g):
        A, X = self.unpack()
        gb = _solve(A.mT, g)
        ga = None
        if self.next[0] is not None:
            ga = sum_to(-matmul(gb, X.mT), self.ashape)
        return ga, (sum_to(gb, self.bshape) if self.next[1] is not None else None)


def _solve(A, Bm):
    """A X = B for A (*, n, n), B (*, n, k) with broadcast batch dims."""
    a, b = A.array, Bm.array
    xp = _bk.namespace(a)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    ab = a if a.shape[:-2] == batch else xp.broadcast_to(a, batch + a.shape[-2:])
    bb = b if b.shape[:-2] == batch else xp.broadcast_to(b, batch + b.shape[-2:])
    out = wrap(_lapack("solve", xp.linalg.solve, ab, bb,
                       what="The solver failed because the input matrix is singular."))
    if _needs(A, Bm):
        n = new_node(SolveBackward)
        n.ashape, n.bshape = a.shape, b.shape
        n.saved = (_saved(A), saved_output(out))
        record(n, out, A, Bm)
    return out


def _saved(t):
    return (t, 0 if t._version is None else t._version[0])


def solve(A, B, *, left=True):
    """Solve ``A X = B`` (``X A = B`` with ``left=False``). ``B`` is a batch of vectors when it
    is 1-D or has exactly A's batch shape plus one dim (``A.shape[:-1]``)."""
    _check_matrix("solve", A)
    _check_float("solve", B)
    _same("solve", A, B)
    if not left:
        return solve(A.mT, B.mT).mT
    a, b = A.array, B.array
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    n = a.shape[-1]
    if Bm.array.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({a.shape[-2]}x{n} and "
                           f"{Bm.array.shape[-2]}x{Bm.array.shape[-1]})")
    try:
        np.broadcast_shapes(a.shape[:-2], Bm.array.shape[:-2])
    except ValueError:
        raise RuntimeError(f"linalg.solve: the batch dimensions of A {list(a.shape)} and B "
                           f"{list(b.shape)} cannot be broadcast together") from None
    X = _solve(A, Bm)
    return X.reshape(X.array.shape[:-1]) if vector else X


# --------------------------------------------------------------------------- det, slogdet

def _cofactor(A):
    """Cofactor matrix (``det(A) * inv(A).mT``, also for singular A) from an SVD."""
    u, s, vh = svd(A, full_matrices=False)
    xp = _bk.namespace(A.array)
    sign = wrap(xp.linalg.det(u.array) * xp.linalg.det(vh.array))
    k = s.array.shape[-1]
    eye = _eye(k, s)
    others = (s.unsqueeze(-2) * (1 - eye) + eye).prod(-1)  # prod_{j != i} s_j
    return _mat(sign) * matmul(u * others.unsqueeze(-2), vh)


class DetBackward(Node):
    __slots__ = ()

    def backward(self, g):
        A, det_ = self.unpack()
        if bool((det_.array == 0).any()):
            return (_mat(g) * _cofactor(A),)
        return (_mat(g * det_) * inv(A).mT,)


def det(A):
    """Determinant of square matrices (batched)."""
    _check_matrix("det", A)
    d = A.array
    xp = _bk.namespace(d)
    out = wrap(xp.asarray(xp.linalg.det(d)))
    if STATE.enabled and A.requires_grad:
        n = new_node(DetBackward)
        n.saved = (_saved(A), saved_output(out))
        record(n, out, A)
    return out


class SlogdetBackward(_MultiNode):
    __slots__ = ()
    n_outputs = 2

    def backward(self, grads):
        _, g = grads
        if g is None:
            return (None,)
        (A,) = self.unpack()
        return (_mat(g) * inv(A).mT,)


def slogdet(A):
    """``(sign, log|det A|)``, stable where det over/underflows."""
    _check_matrix("slogdet", A)
    d = A.array
    xp = _bk.namespace(d)
    s, l_ = xp.linalg.slogdet(d)
    outs = (wrap(xp.asarray(s, dtype=d.dtype)), wrap(xp.asarray(l_, dtype=d.dtype)))
    if STATE.enabled and A.requires_grad:
        n = new_node(SlogdetBackward)
        n.save(A)
        _record_multi(n, outs, A)
    return slogdet_result(*outs)


# --------------------------------------------------------------------------- cholesky

class CholeskyBackward(Node):
    __slots__ = ()

    def backward(self, g):
        (L,) = self.unpack()
        k = L.array.shape[-1]
        xp = _bk.namespace(L.array)
        phi = wrap(xp.tril(xp.ones((k, k), L.array.dtype)) - 0.5 * xp.eye(k, dtype=L.array.dtype))
        linv = inv(L)
        s = matmul(matmul(linv.mT, matmul(L.mT, g) * phi), linv)
        return ((s + s.mT) * 0.5,)


def cholesky(A, *, upper=False):
    """Cholesky factor of symmetric positive-definite matrices: ``A = L L^T`` (lower
    triangle of A read), or ``A = U^T U`` with ``upper=True``."""
    _check_matrix("cholesky", A)
    d = A.array
    xp = _bk.namespace(d)
    out = wrap(_lapack("cholesky", xp.linalg.cholesky, d,
                       what="The factorization could not be completed because the input is "
                            "not positive-definite."))
    if STATE.enabled and A.requires_grad:
        n = new_node(CholeskyBackward)
        n.saved = (saved_output(out),)
        record(n, out, A)
    return out.mT if upper else out


# --------------------------------------------------------------------------- qr

def _copyltu(M):
    """Symmetric matrix built from M's lower triangle."""
    k = M.array.shape[-1]
    xp = _bk.namespace(M.array)
    low = wrap(xp.tril(xp.ones((k, k), M.array.dtype), -1))
    lo = M * low
    return lo + lo.mT + _diag_embed(_diagonal(M))


def _qr_square_backward(Q, R, gQ, gR):
    """A = Q R with A (m, n), m >= n, Q (m, n), R (n, n)."""
    M = None
    if gR is not None:
        M = matmul(R, gR.mT)
    if gQ is not None:
        t = matmul(gQ.mT, Q)
        M = -t if M is None else M - t
    b = matmul(Q, _copyltu(M))
    if gQ is not None:
        b = b + gQ
    return solve(R, b.mT).mT  # b R^{-T}


class QrBackward(_MultiNode):
    __slots__ = ("mode",)
    n_outputs = 2

    def backward(self, grads):
        gQ, gR = grads
        Q, R = self.unpack()
        m, n = Q.array.shape[-2], R.array.shape[-1]
        if self.mode == "complete" and m > n:
            raise RuntimeError("linalg.qr: the derivative is not defined for mode='complete' "
                               "when A has more rows than columns; use mode='reduced'")
        if m >= n:
            return (_qr_square_backward(Q, R, gQ, gR),)
        # wide A = [X | Y]: X = Q U is square, V = Q^T Y
        e1 = _eye(n, R, m)
        e2 = wrap(_bk.namespace(R.array).eye(n, dtype=R.array.dtype)[:, m:])
        U = matmul(R, e1)
        gU = matmul(gR, e1) if gR is not None else None
        gY = None
        if gR is not None:
            gV = matmul(gR, e2)
            Y = matmul(matmul(Q, R), e2)
            yv = matmul(Y, gV.mT)
            gQ = yv if gQ is None else gQ + yv
            gY = matmul(Q, gV)
        gX = _qr_square_backward(Q, U, gQ, gU)
        ga = matmul(gX, e1.mT)
        return (ga + matmul(gY, e2.mT) if gY is not None else ga,)


def qr(A, mode="reduced"):
    """``A = Q R``, Q with orthonormal columns, R upper triangular. ``mode``: 'reduced'
    (Q (m, k), R (k, n), k = min(m, n)), 'complete' (Q (m, m)), or 'r' (R only; Q empty)."""
    _check_matrix("qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    d = A.array
    xp = _bk.namespace(d)
    if mode == "r":
        r = xp.linalg.qr(d, mode="r")
        return qr_result(wrap(xp.empty((0,), d.dtype)), wrap(xp.ascontiguousarray(r)))
    q, r = xp.linalg.qr(d, mode=mode)
    outs = (wrap(xp.ascontiguousarray(q)), wrap(xp.ascontiguousarray(r)))
    if STATE.enabled and A.requires_grad:
        n = new_node(QrBackward)
        n.mode = mode
        _record_multi(n, outs, A)
        n.saved = (saved_output(outs[0]), saved_output(outs[1]))
    return qr_result(*outs)


# --------------------------------------------------------------------------- eigh

def _offdiag_inv(E):
    """1/E off the diagonal, 0 on it (E's diagonal is ignored)."""
    k = E.array.shape[-1]
    eye = _eye(k, E)
    return (1 - eye) / (E + eye)


class EighBackward(_MultiNode):
    __slots__ = ()
    n_outputs = 2

    def backward(self, grads):
        gL, gV = grads
        L, V = self.unpack()
        inner = None
        if gV is not None:
            E = L.unsqueeze(-2) - L.unsqueeze(-1)  # E[i, j] = L[j] - L[i]
            inner = matmul(V.mT, gV) * _offdiag_inv(E)
        if gL is not None:
            dl = _diag_embed(gL)
            inner = dl if inner is None else inner + dl
        return (matmul(matmul(V, inner), V.mT),)


def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric matrices; only the
    ``UPLO`` triangle of A is read."""
    _check_matrix("eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    d = A.array
    xp = _bk.namespace(d)
    w, v = _lapack("eigh", xp.linalg.eigh, d, UPLO, what="the algorithm failed to converge")
    outs = (wrap(w), wrap(xp.ascontiguousarray(v)))
    if STATE.enabled and A.requires_grad:
        n = new_node(EighBackward)
        _record_multi(n, outs, A)
        n.saved = (saved_output(outs[0]), saved_output(outs[1]))
    return eigh_result(*outs)


def eigvalsh(A, UPLO="L"):
    if _needs(A):
        return eigh(A, UPLO).eigenvalues
    _check_matrix("eigvalsh", A)
    return wrap(_bk.namespace(A.array).linalg.eigvalsh(A.array, UPLO))


# --------------------------------------------------------------------------- svd

class SvdBackward(_MultiNode):
    __slots__ = ("full",)
    n_outputs = 3

    def backward(self, grads):
        gU, gS, gVh = grads
        U, S, Vh = self.unpack()
        m, n = U.array.shape[-2], Vh.array.shape[-1]
        k = S.array.shape[-1]
        if self.full and m != n and (gU is not None or gVh is not None):
            raise RuntimeError(
                "linalg.svd: the gradient through U or Vh is not defined with "
                "full_matrices=True for non-square inputs (the extra columns are arbitrary); "
                "use full_matrices=False")
        if self.full and m != n:
            U, Vh = matmul(U, _eye(m, U, k)), matmul(_eye(k, Vh, n), Vh)
        inner = _diag_embed(gS) if gS is not None else None
        if gU is not None or gVh is not None:
            s2 = S * S
            F = _offdiag_inv(s2.unsqueeze(-2) - s2.unsqueeze(-1))  # 1/(s_j^2 - s_i^2)
            if gU is not None:
                utg = matmul(U.mT, gU)
                j = (F * (utg - utg.mT)) * S.unsqueeze(-2)
                inner = j if inner is None else inner + j
            if gVh is not None:
                vtg = matmul(Vh, gVh.mT)
                kk = S.unsqueeze(-1) * (F * (vtg - vtg.mT))
                inner = kk if inner is None else inner + kk
        ga = matmul(matmul(U, inner), Vh) if inner is not None else None
        sinv = None
        if gU is not None and m > k:
            sinv = 1 / S
            t = matmul((gU - matmul(U, matmul(U.mT, gU))) * sinv.unsqueeze(-2), Vh)
            ga = t if ga is None else ga + t
        if gVh is not None and n > k:
            sinv = 1 / S if sinv is None else sinv
            t = matmul(U * sinv.unsqueeze(-2), gVh - matmul(matmul(gVh, Vh.mT), Vh))
            ga = t if ga is None else ga + t
        return (ga,)


def svd(A, full_matrices=True):
    """``A = U diag(S) Vh``, S descending. Gradients need distinct singular values (and,
    through U or Vh, non-zero ones when A is not square)."""
    _check_matrix("svd", A, square=False)
    d = A.array
    xp = _bk.namespace(d)
    u, s, vh = _lapack("svd", xp.linalg.svd, d, full_matrices=full_matrices,
                       what="the algorithm failed to converge")
    outs = (wrap(xp.ascontiguousarray(u)), wrap(s), wrap(xp.ascontiguousarray(vh)))
    if STATE.enabled and A.requires_grad:
        n = new_node(SvdBackward)
        n.full = bool(full_matrices)
        _record_multi(n, outs, A)
        n.saved = tuple(saved_output(o) for o in outs)
    return svd_result(*outs)


def svdvals(A):
    """Singular values, descending."""
    if _needs(A):
        return svd(A, full_matrices=False).S
    _check_matrix("svdvals", A, square=False)
    d = A.array
    return wrap(_lapack("svdvals", _bk.namespace(d).linalg.svd, d, compute_uv=False,
                        what="the algorithm failed to converge"))


# --------------------------------------------------------------------------- pinv, rank, lstsq

def _tols(A, atol, rtol, smax):
    """Cutoff ``max(atol, rtol * smax)`` with PyTorch's defaults (rtol = eps * max(m, n)
    unless a non-zero atol is given), as a (...,) tensor."""
    m, n = A.array.shape[-2:]
    if rtol is None:
        zero_atol = atol is None or (not hasattr(atol, "array") and atol == 0)
        rtol = float(np.finfo(A.array.dtype).eps) * max(m, n) if zero_atol else 0.0
    rt = smax * rtol
    if atol is None:
        return rt
    if hasattr(atol, "array"):
        return maximum(rt, atol.detach())
    return rt.clamp_min(float(atol))


def pinv(A, rcond=None, *, atol=None, rtol=None, hermitian=False):
    """Moore-Penrose pseudo-inverse; singular values <= max(atol, rtol * s_max) count as 0."""
    _check_matrix("pinv", A, square=hermitian)
    if rcond is not None:
        rtol = rcond
    if hermitian:
        L, V = eigh(A)
        mag = L.abs()
        cut = _tols(A, atol, rtol, mag.amax(-1).detach()).unsqueeze(-1)
        keep = mag > cut
        linv = keep.to(L.dtype) / where(keep, L, 1.0)
        return matmul(V * linv.unsqueeze(-2), V.mT)
    U, S, Vh = svd(A, full_matrices=False)
    k = S.array.shape[-1]
    if k == 0:
        xp = _bk.namespace(A.array)
        return wrap(xp.zeros(A.array.shape[:-2] + A.array.shape[-1:] + A.array.shape[-2:-1],
                             A.array.dtype))
    cut = _tols(A, atol, rtol, S.detach().amax(-1)).unsqueeze(-1)
    keep = S > cut
    sinv = keep.to(S.dtype) / where(keep, S, 1.0)
    return matmul(Vh.mT * sinv.unsqueeze(-2), U.mT)


def matrix_rank(A, tol=None, *, atol=None, rtol=None, hermitian=False):
    """Number of singular values above ``max(atol, rtol * s_max)`` (int64, no gradient)."""
    _check_matrix("matrix_rank", A, square=hermitian)
    if tol is not None:
        atol = tol
    with no_grad():
        A = A.detach()
        s = eigvalsh(A).abs() if hermitian else svdvals(A)
        if s.array.shape[-1] == 0:
            return wrap(_bk.namespace(A.array).zeros(A.array.shape[:-2], np.int64))
        cut = _tols(A, atol, rtol, s.amax(-1)).unsqueeze(-1)
        return (s > cut).sum(-1)


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B`` for A (*, m, n), B (*, m, k), through the
    pseudo-inverse. Like PyTorch's CPU drivers: 'gelsy' (default) also returns the rank;
    'gelsd'/'gelss' also the singular values; residuals (squared, per column) come when m > n,
    A has full rank and the driver is not 'gelsy'."""
    _check_matrix("lstsq", A, square=False)
    _check_float("lstsq", B)
    _same("lstsq", A, B)
    if driver is None:
        driver = "gelsy"
    if driver not in ("gelsy", "gelsd", "gelss", "gels"):
        raise RuntimeError(f"linalg.lstsq: parameter `driver` should be one of "
                           f"(gels, gelsy, gelsd, gelss), got {driver!r}")
    m, n = A.array.shape[-2:]
    vector = B.array.ndim == A.array.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.array.ndim < 2 or Bm.array.shape[-2] != m:
        raise RuntimeError(f"linalg.lstsq: input.size(-2) should match other.size(-2), "
                           f"got A of shape {list(A.array.shape)} and B of shape "
                           f"{list(B.array.shape)}")
    eps = float(np.finfo(A.array.dtype).eps)
    rtol = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    X = matmul(pinv(A, rtol=rtol), Bm)
    xp = _bk.namespace(A.array)
    empty = wrap(xp.empty((0,), A.array.dtype))
    rank = wrap(xp.empty((0,), np.int64))
    sv = empty
    if driver != "gels":
        rank = matrix_rank(A, rtol=rtol)
    if driver in ("gelsd", "gelss"):
        with no_grad():
            sv = svdvals(A.detach())
    res = empty
    if driver != "gelsy" and m > n:
        r_ = rank if driver != "gels" else matrix_rank(A, rtol=rtol)
        if bool((r_.array == n).all()):
            r = matmul(A, X) - Bm
            res = (r * r).sum(-2)
    if vector:
        X = X.reshape(X.array.shape[:-1])
    return lstsq_result(X, res, rank, sv)


# --------------------------------------------------------------------------- powers, products

def matrix_power(A, n):
    """``A @ A @ ... @ A`` (n times); n = 0 gives the identity, n < 0 powers of ``inv(A)``."""
    s = A.array.shape
    if len(s) < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if s[-1] != s[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {s[-2]} by {s[-1]} matrices")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    n = int(n)
    if n == 0:
        xp = _bk.namespace(A.array)
        return wrap(xp.ascontiguousarray(xp.broadcast_to(xp.eye(s[-1], dtype=A.array.dtype), s)))
    if n < 0:
        A = inv(A)
        n = -n
    result = None
    base = A
    while True:  # square-and-multiply
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            break
        base = matmul(base, base)
    return result * 1 if result is A else result


def multi_dot(tensors):
    """Product of a chain of matrices in the cheapest order; the first and last may be 1-D."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        nd = t.array.ndim
        ok = nd == 2 or (nd == 1 and i in (0, len(ts) - 1))
        if not ok:
            where_ = "the first and last tensors must be 1D or 2D" if i in (0, len(ts) - 1) \
                else f"tensor {i} must be 2D"
            raise RuntimeError(f"multi_dot(): {where_} but got {nd}D")
        if t.array.dtype != ts[0].array.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have the same dtype, got "
                               f"{D.name(ts[0].array.dtype)} and {D.name(t.array.dtype)}")
    first_vec, last_vec = ts[0].array.ndim == 1, ts[-1].array.ndim == 1
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(len(ts) - 1):
        if ts[i].array.shape[1] != ts[i + 1].array.shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes "
                f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} cannot be "
                "multiplied")
    out = _chain(ts)
    shape = out.array.shape
    shape = (() if first_vec else shape[:1]) + (() if last_vec else shape[1:])
    return out.reshape(shape) if shape != out.array.shape else out


def _chain(ts):
    """Matrix-chain product, parenthesized by the classic O(n^3) dynamic programme."""
    k = len(ts)
    if k <= 2:
        return matmul(ts[0], ts[1]) if k == 2 else ts[0]
    dims = [t.array.shape[0] for t in ts] + [ts[-1].array.shape[1]]
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def build(i, j):
        if i == j:
            return ts[i]
        s = split[i][j]
        return matmul(build(i, s), build(s + 1, j))
    return build(0, k - 1)


def vecdot(x, y, *, dim=-1):
    """Dot product of vectors along ``dim`` (broadcasting)."""
    return (x * y).sum(dim)


def cross(input, other, *, dim=-1):
    """Cross product of 3-vectors along ``dim`` (broadcasting)."""
    return _cross(input, other, dim)


# --------------------------------------------------------------------------- norms

class VectorNormBackward(Node):
    __slots__ = ("ord", "dims", "keepdim")

    def backward(self, g):
        x, nrm = self.unpack()
        shape = x.array.shape
        if not self.keepdim:
            ks = tuple(1 if i in self.dims else s for i, s in enumerate(shape))
            g, nrm = g.reshape(ks), nrm.reshape(ks)
        p = self.ord
        if p == 0:
            return (wrap(_bk.namespace(x.array).zeros(shape, x.array.dtype)),)
        if p == 1:
            return (x.sign() * g,)
        if p == 2:
            return (x * (g / where(nrm == 0, 1.0, nrm)),)
        if p in (_INF, -_INF):
            mask = (x.abs() == nrm).to(x.dtype)
            return (x.sign() * mask * (g / mask.sum(self.dims, keepdim=True)),)
        safe = where(nrm == 0, 1.0, nrm)
        return (x.sign() * x.abs().pow(p - 1) * (g / safe.pow(p - 1)),)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all dims by default); ord may be inf, -inf, 0."""
    dt = x.array.dtype
    if dt.kind not in "fc":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {D.name(dt)}")
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    p = float(ord)
    d = x.array
    xp = _bk.namespace(d)
    dims = norm_dims(dim, d.ndim) if not (isinstance(dim, (tuple, list)) and not dim) else \
        tuple(range(d.ndim))
    count = 1
    for i in dims:
        count *= d.shape[i]
    if count == 0 and p < 0 or (count == 0 and p == _INF and d.size == 0):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty "
                           "tensor because the operation does not have an identity")
    a = xp.abs(d)
    if p == 2:
        r = xp.sqrt((d * d).sum(axis=dims, keepdims=keepdim))
    elif p == 1:
        r = a.sum(axis=dims, keepdims=keepdim)
    elif p == _INF:
        r = a.max(axis=dims, keepdims=keepdim)
    elif p == -_INF:
        r = a.min(axis=dims, keepdims=keepdim)
    elif p == 0:
        r = (d != 0).sum(axis=dims, keepdims=keepdim, dtype=d.dtype)
    else:
        r = (a ** p).sum(axis=dims, keepdims=keepdim) ** (1.0 / p)
    out = wrap(xp.asarray(r, dtype=d.dtype))
    if STATE.enabled and x.requires_grad:
        n = new_node(VectorNormBackward)
        n.ord, n.dims, n.keepdim = p, dims, keepdim
        n.saved = (_saved(x), saved_output(out))
        record(n, out, x)
    return out


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """Matrix norms over the two dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2."""
    if A.array.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    _check_float("matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    nd = A.array.ndim
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {tuple(dim)}")
    d0, d1 = norm_dim(dim[0], nd), norm_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    shape = A.array.shape
    kept = tuple(1 if i in (d0, d1) else s for i, s in enumerate(shape))
    final = kept if keepdim else tuple(s for i, s in enumerate(shape) if i not in (d0, d1))
    if ord in (1, _INF, 2) and (shape[d0] == 0 or shape[d1] == 0):
        return wrap(_bk.namespace(A.array).zeros(final, A.array.dtype))  # a max over nothing: 0
    if ord in ("nuc", 2, -2):
        rest = [i for i in range(nd) if i not in (d0, d1)]
        s = svdvals(A.permute(rest + [d0, d1]))
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
    elif ord in (1, -1, _INF, -_INF):
        inner, outer_ = (d0, d1) if ord in (1, -1) else (d1, d0)
        col = A.abs().sum(inner, keepdim=True)
        r = col.amax(outer_, keepdim=True) if ord > 0 else col.amin(outer_, keepdim=True)
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return r.reshape(final)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """Vector norm when ``dim`` is an int (or ``dim`` and ``ord`` are None: the flattened
    2-norm), matrix norm when ``dim`` is a 2-tuple or ``ord`` is given for a 2-D input."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                           f"Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    nd = A.array.ndim
    if nd == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if nd == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D "
                       f"or 2D. Got {nd}D.")


__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "solve", "det", "slogdet", "cholesky",
           "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "matrix_power", "matrix_rank",
           "lstsq", "multi_dot", "vecdot", "cross", "matmul"]
