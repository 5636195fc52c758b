"""Products: matmul/@, mm, bmm, mv, dot, vdot, inner, outer, the add* family, einsum, tensordot,
kron, trace, cross. Decompositions and norms live in ``ember.linalg`` (core/linalg.py); the
top-level aliases of those (``ember.det``, ``ember.inverse``, ...) are thin wrappers here.

Backward formulas are written with ember ops, so every product here differentiates twice.
"""
from __future__ import annotations

import string

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from ._util import device_error, expand_to, norm_dim, sum_to, to_tensor, wrap


def _shape_str(s):
    return "x".join(str(i) for i in s)


def _dim_error(op, name, want, t):
    return RuntimeError(f"{op}: expected {name} to be a {want}-D tensor, but got a "
                        f"{t.array.ndim}-D tensor of shape {list(t.array.shape)}")


def _same_dtype(op, a, b):
    if a.array.dtype is not b.array.dtype and a.array.dtype != b.array.dtype:
        raise RuntimeError(f"{op}: expected both inputs to have the same dtype, but got "
                           f"{D.name(a.array.dtype)} and {D.name(b.array.dtype)}")


# --------------------------------------------------------------------------- matmul

class MatmulBackward(Node):
    __slots__ = ("ashape", "bshape")

    def backward(self, g):
        a, b = self.unpack()
        nx = self.next
        an, bn = len(self.ashape), len(self.bshape)
        if an == 1 and bn == 1:  # dot
            return (g * b if nx[0] else None, g * a if nx[1] else None)
        ga = gb = None
        if bn == 2 and an >= 2 and not STATE.enabled:
            # no graph is being built (no create_graph): plain GEMMs on the arrays
            gd, ad, bd = g.array, a.array, b.array
            if nx[0] is not None:
                ga = wrap(gd @ bd.T)
            if nx[1] is not None:
                if an > 2:
                    m = _prod(self.ashape[:-1])
                    ad, gd = ad.reshape(m, self.bshape[0]), gd.reshape(m, self.bshape[1])
                gb = wrap(ad.T @ gd)
            return ga, gb
        if bn == 2 and an > 2:
            # the common (..., m, k) @ (k, n): one GEMM per gradient, no batch reduction
            k, n = self.bshape
            m = _prod(self.ashape[:-1])
            if nx[0] is not None:
                ga = matmul(g, b.mT)
            if nx[1] is not None:
                gb = matmul(a.reshape(m, k).mT, g.reshape(m, n))
            return ga, gb
        # promote vectors to matrices, then reduce broadcast batch dims
        a2 = a.reshape(1, -1) if an == 1 else a
        b2 = b.reshape(-1, 1) if bn == 1 else b
        g2 = g
        if an == 1:
            g2 = g2.unsqueeze(-2)
        if bn == 1:
            g2 = g2.unsqueeze(-1)
        if nx[0] is not None:
            ga = sum_to(matmul(g2, b2.mT), a2.shape)
            if an == 1:
                ga = ga.reshape(self.ashape)
        if nx[1] is not None:
            gb = sum_to(matmul(a2.mT, g2), b2.shape)
            if bn == 1:
                gb = gb.reshape(self.bshape)
        return ga, gb


def _matmul_error(a, b, failed=True):
    """The error for ``a @ b`` (None when nothing is wrong and ``failed`` is False)."""
    if a.ndim == 0 or b.ndim == 0:
        return RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and "
            f"{b.ndim}D")
    if type(a) is not type(b):
        return device_error("matmul", a, b)
    if a.dtype != b.dtype:
        return RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {D.name(a.dtype)} != "
            f"{D.name(b.dtype)}")
    if a.dtype.kind == "b":
        return RuntimeError("matmul: bool tensors are not supported; convert them to an "
                            "integer or floating dtype first")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        if a.ndim == 1 and b.ndim == 1:
            return RuntimeError(
                f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the "
                f"same number of elements, but got {ka} and {kb} elements respectively")
        sa = a.shape if a.ndim > 1 else (1,) + a.shape
        sb = b.shape if b.ndim > 1 else b.shape + (1,)
        if a.ndim <= 2 and b.ndim <= 2:
            return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                                f"({_shape_str(sa)} and {_shape_str(sb)})")
        return RuntimeError(f"matmul: shapes {list(a.shape)} and {list(b.shape)} cannot be "
                            f"multiplied (inner dimensions {ka} and {kb} differ)")
    if not failed:
        return None
    return RuntimeError(f"matmul: the batch dimensions of shapes {list(a.shape)} and "
                        f"{list(b.shape)} cannot be broadcast together")


def matmul(input, other):
    """Matrix product with PyTorch's rank rules: 1-D x 1-D is a dot product, a 1-D operand is
    promoted to a matrix and the added dim removed, leading (batch) dims broadcast."""
    if input.is_sparse or other.is_sparse:
        from ..sparse import mm as _sparse_mm

        return _sparse_mm(input, other)
    a, b = input.array, other.array
    # float/int fast path: go straight to the BLAS-backed ``@``; checks only on failure
    if a.dtype is not b.dtype or a.ndim == 0 or b.ndim == 0 or a.dtype.kind == "b" or \
            type(a) is not type(b):
        err = _matmul_error(a, b, False)
        if err is not None:
            raise err
    try:
        if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous:
            r = (a.reshape(_prod(a.shape[:-1]), a.shape[-1]) @ b).reshape(
                a.shape[:-1] + b.shape[-1:])
        else:
            r = a @ b
    except ValueError:
        raise _matmul_error(a, b) from None
    out = wrap(r)
    if STATE.enabled and (input.requires_grad or other.requires_grad):
        n = new_node(MatmulBackward)
        n.ashape, n.bshape = a.shape, b.shape
        n.save(input, other)
        record(n, out, input, other)
    return out


def mm(input, mat2):
    if input.is_sparse or mat2.is_sparse:
        from ..sparse import mm as _sparse_mm

        return _sparse_mm(input, mat2)
    if input.array.ndim != 2:
        raise _dim_error("mm", "mat1 (self)", 2, input)
    if mat2.array.ndim != 2:
        raise _dim_error("mm", "mat2", 2, mat2)
    return matmul(input, mat2)


def _check_bmm(op, b1, b2):
    a, b = b1.array, b2.array
    if a.ndim != 3:
        raise _dim_error(op, "batch1", 3, b1)
    if b.ndim != 3:
        raise _dim_error(op, "batch2", 3, b2)
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"{op}: batch1 of shape {list(a.shape)} and batch2 of shape {list(b.shape)} cannot "
            f"be multiplied: expected batch2 to have shape [{a.shape[0]}, {a.shape[2]}, *]")


def bmm(input, mat2):
    """Batched matrix product of (b, n, m) and (b, m, p) tensors (no broadcasting)."""
    _check_bmm("bmm", input, mat2)
    return matmul(input, mat2)


def mv(input, vec):
    if input.array.ndim != 2:
        raise _dim_error("mv", "mat (self)", 2, input)
    if vec.array.ndim != 1:
        raise _dim_error("mv", "vec", 1, vec)
    if input.array.shape[1] != vec.array.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.array.shape[0]}), mat "
                           f"({_shape_str(input.array.shape)}), vec ({vec.array.shape[0]})")
    return matmul(input, vec)


def dot(input, other):
    a, b = input.array, other.array
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype != b.dtype:
        raise RuntimeError(f"dot: expected both vectors to have same dtype, but found "
                           f"{D.name(a.dtype)} and {D.name(b.dtype)}")
    return matmul(input, other)


def vdot(input, other):
    """``sum(conj(input) * other)`` over two 1-D tensors (``dot`` for real ones)."""
    if input.array.dtype.kind == "c":
        dot(input, other)  # the same argument checks
        return (input.conj() * other).sum()
    return dot(input, other)


def inner(input, other):
    a, b = input.array, other.array
    if a.ndim == 0 or b.ndim == 0:
        return input * other
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(a.shape)} and {list(b.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def outer(input, vec2):
    for name, t in (("self", input), ("vec2", vec2)):
        if t.array.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got "
                               f"{t.array.ndim}-D")
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


ger = outer


# --------------------------------------------------------------------------- add* family

def _scaled_add(op, input, prod, beta, alpha):
    """``beta * input + alpha * prod``; with ``beta == 0`` the input is ignored (its NaNs
    too). ``input`` must broadcast to ``prod``'s shape."""
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    input = to_tensor(input, prod, name="input")
    out = prod + (input if beta == 1 else input * beta)
    if out.array.shape != prod.array.shape:
        raise RuntimeError(f"{op}: input of shape {list(input.array.shape)} cannot be broadcast "
                           f"to the product's shape {list(prod.array.shape)}")
    return out


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` for 2-D ``mat1``, ``mat2``."""
    return _scaled_add("addmm", input, mm(mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    return _scaled_add("addmv", input, mv(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    return _scaled_add("addr", input, outer(vec1, vec2), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _scaled_add("baddbmm", input, bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``, as one GEMM."""
    _check_bmm("addbmm", batch1, batch2)
    nb, n, m = batch1.array.shape
    p = batch2.array.shape[2]
    prod = matmul(batch1.permute(1, 0, 2).reshape(n, nb * m), batch2.reshape(nb * m, p))
    return _scaled_add("addbmm", input, prod, beta, alpha)


# --------------------------------------------------------------------------- einsum

class EinsumBackward(Node):
    """Each operand's gradient is itself an einsum of the output grad and the other operands.
    A letter repeated in an operand (a diagonal) is restored with an identity operand; a letter
    found only in that operand (summed away) is broadcast back with a ones operand."""

    __slots__ = ("subs", "out", "sizes")

    def backward(self, g):
        ts = self.unpack()
        xp = B.namespace(g.array)
        dt = g.array.dtype
        used = set("".join(self.subs) + self.out)
        fresh = [c for c in string.ascii_letters if c not in used]
        grads = []
        for i, e in enumerate(self.next):
            if e is None:
                grads.append(None)
                continue
            srcs = [g] + [t for j, t in enumerate(ts) if j != i]
            ssubs = [self.out] + [s for j, s in enumerate(self.subs) if j != i]
            avail = set("".join(ssubs))
            seen = set()
            target = []
            for c in self.subs[i]:
                n = self.sizes[c]
                if c in seen:
                    f = fresh.pop()
                    srcs.append(wrap(xp.eye(n, dtype=dt)))
                    ssubs.append(c + f)
                    target.append(f)
                    continue
                seen.add(c)
                target.append(c)
                if c not in avail:
                    srcs.append(wrap(xp.ones(n, dtype=dt)))
                    ssubs.append(c)
                    avail.add(c)
            grads.append(_einsum(ssubs, "".join(target), srcs))
        return tuple(grads)


def _einsum(subs, out_subs, tensors):
    """einsum over explicit, consistent letters (no '...', no broadcasting)."""
    arrays = [t.array for t in tensors]
    xp = B.namespace(arrays[0])
    eq = ",".join(subs) + "->" + out_subs
    big = len(arrays) > 1 and sum(a.size for a in arrays) > 4096
    r = xp.einsum(eq, *arrays, optimize=True) if big else xp.einsum(eq, *arrays)
    if len(arrays) == 1 and xp.may_share_memory(r, arrays[0]):
        r = r.copy()  # one-operand einsum may return a view (transpose, diagonal)
    out = wrap(r)
    if STATE.enabled and any(t.requires_grad for t in tensors):
        n = new_node(EinsumBackward)
        n.subs, n.out = tuple(subs), out_subs
        sizes = {}
        for s, a in zip(subs, arrays):
            for c, k in zip(s, a.shape):
                sizes[c] = k
        n.sizes = sizes
        n.save(*tensors)
        record(n, out, *tensors)
    return out


def _parse_einsum(equation, shapes):
    """Rewrite ``equation`` with explicit letters: returns (per-operand letters, output
    letters). '...' becomes letters unused in the equation, right-aligned per operand."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        more = "more" if len(shapes) > len(terms) else "fewer"
        raise ValueError(f"einsum(): {more} operands were provided than specified in the "
                         f"equation '{equation}' ({len(shapes)} operands, {len(terms)} terms)")
    for c in eq:
        if not (c.isalpha() and c.isascii()) and c not in ".,->":
            raise ValueError(f"einsum(): invalid subscript '{c}' in equation '{equation}': "
                             "subscripts must be letters in [a-zA-Z]")
    parts = []
    n_ell = 0
    for i, (t, s) in enumerate(zip(terms, shapes)):
        if "." in t.replace("...", "") or t.count("...") > 1:
            raise ValueError(f"einsum(): invalid ellipsis in term '{t}' of '{equation}': "
                             "expected at most one '...'")
        pre, ell, post = t.partition("...")
        k = len(pre) + len(post)
        if (ell and k > len(s)) or (not ell and k != len(s)):
            raise ValueError(
                f"einsum(): the number of subscripts in the equation ({k}) does not match the "
                f"number of dimensions ({len(s)}) for operand {i}"
                + ("" if ell else " and no ellipsis was given"))
        e = len(s) - k if ell else 0
        n_ell = max(n_ell, e)
        parts.append((pre, e, post))
    letters = set(c for c in eq if c.isalpha())
    free = [c for c in string.ascii_letters if c not in letters]
    if n_ell > len(free):
        raise ValueError("einsum(): too many dimensions for the letters left for '...'")
    ell_letters = "".join(free[:n_ell])
    subs = [pre + ell_letters[n_ell - e:] + post for pre, e, post in parts]
    has_ell = any("..." in t for t in terms)
    if not arrow:
        counts = {}
        for t in terms:
            for c in t.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = (ell_letters if has_ell else "") + "".join(
            sorted(c for c, k in counts.items() if k == 1))
    else:
        if rhs.count("...") > 1 or "." in rhs.replace("...", ""):
            raise ValueError(f"einsum(): invalid ellipsis in the output of '{equation}'")
        out = rhs.replace("...", ell_letters)
        for c in rhs.replace("...", ""):
            if c not in letters or c not in lhs:
                raise ValueError(f"einsum(): output subscript {c} does not appear in the "
                                 f"equation for any input operand")
            if rhs.count(c) > 1:
                raise ValueError(f"einsum(): output subscript {c} appears more than once in "
                                 f"the output")
    return subs, out


def einsum(equation, *operands):
    """Einstein summation, e.g. ``einsum('bij,bjk->bik', a, b)``; '...' broadcasts leading
    dims; without '->' the output holds the letters seen once, in alphabetical order. Size-1
    dims broadcast against the same letter in another operand."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    subs, out = _parse_einsum(equation, [t.array.shape for t in operands])
    first = operands[0].array
    sizes = {}
    for i, (s, t) in enumerate(zip(subs, operands)):
        d = t.array
        if type(d) is not type(first):
            raise device_error("einsum", first, d)
        if d.dtype != first.dtype:
            raise RuntimeError(f"einsum(): expected all operands to have the same dtype, but "
                               f"operand 0 is {D.name(first.dtype)} and operand {i} is "
                               f"{D.name(d.dtype)}")
        own = {}
        for c, k in zip(s, d.shape):
            if own.setdefault(c, k) != k:
                raise ValueError(f"einsum(): subscript {c} is repeated for operand {i} but the "
                                 f"sizes don't match, {own[c]} != {k}")
            cur = sizes.get(c)
            if cur is None or cur == 1:
                sizes[c] = k
            elif k != 1 and k != cur:
                raise ValueError(f"einsum(): subscript {c} has size {k} for operand {i} which "
                                 f"does not broadcast with previously seen size {cur}")
    ts = []
    for s, t in zip(subs, operands):
        target = tuple(sizes[c] for c in s)
        ts.append(t if target == t.array.shape else expand_to(t, target))
    return _einsum(subs, out, ts)


# --------------------------------------------------------------------------- tensordot, kron

def tensordot(a, b, dims=2):
    """Contract ``dims`` (an int: a's last and b's first dims; or two lists of dims) as one
    matrix product."""
    na, nb = a.array.ndim, b.array.ndim
    if hasattr(dims, "array") and hasattr(dims, "grad_fn"):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(na, nb):
            raise RuntimeError(f"tensordot expects dims <= {min(na, nb)} for tensors of "
                               f"{na} and {nb} dims, but got dims={dims}")
        da, db = list(range(na - dims, na)), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError(f"both dimension lists should have the same length, got "
                               f"{len(da)} and {len(db)}")
        da = [norm_dim(d, na) for d in da]
        db = [norm_dim(d, nb) for d in db]
    sa, sb = a.array.shape, b.array.shape
    for x, y in zip(da, db):
        if sa[x] != sb[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{sa[x]} in dim {x} and second has size {sb[y]} in dim {y}")
    _same_dtype("tensordot", a, b)
    fa = [d for d in range(na) if d not in da]
    fb = [d for d in range(nb) if d not in db]
    k = 1
    for d in da:
        k *= sa[d]
    pa = a if fa + da == list(range(na)) else a.permute(fa + da)
    pb = b if db + fb == list(range(nb)) else b.permute(db + fb)
    oa, ob = tuple(sa[d] for d in fa), tuple(sb[d] for d in fb)
    out = matmul(pa.reshape(_prod(oa), k), pb.reshape(k, _prod(ob)))
    return out.reshape(oa + ob)


def _prod(shape):
    r = 1
    for s in shape:
        r *= s
    return r


def kron(input, other):
    """Kronecker product: block (i, j, ...) of the result is ``input[i, j, ...] * other``."""
    sa, sb = input.array.shape, other.array.shape
    nd = max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + sa
    sb = (1,) * (nd - len(sb)) + sb
    ia, ib = [], []
    for x, y in zip(sa, sb):
        ia += [x, 1]
        ib += [1, y]
    prod = input.reshape(ia) * other.reshape(ib)
    return prod.reshape(tuple(x * y for x, y in zip(sa, sb)))


# --------------------------------------------------------------------------- diagonals, trace

class DiagonalBackward(Node):
    __slots__ = ("m", "n")

    def backward(self, g):
        return (_diag_embed(g, self.m, self.n),)


class DiagEmbedBackward(Node):
    __slots__ = ()

    def backward(self, g):
        return (_diagonal(g),)


def _diagonal(x):
    """Main diagonal of the last two dims (a copy), differentiable."""
    d = x.array
    xp = B.namespace(d)
    out = wrap(xp.ascontiguousarray(xp.diagonal(d, axis1=-2, axis2=-1)))
    if STATE.enabled and x.requires_grad:
        n = new_node(DiagonalBackward)
        n.m, n.n = d.shape[-2:]
        record(n, out, x)
    return out


def _diag_embed(v, m=None, n=None):
    """(..., k) -> (..., m, n) zeros with ``v`` on the main diagonal, differentiable."""
    d = v.array
    k = d.shape[-1]
    m = k if m is None else m
    n = k if n is None else n
    xp = B.namespace(d)
    r = xp.zeros(d.shape[:-1] + (m, n), d.dtype)
    i = xp.arange(min(k, m, n))
    r[..., i, i] = d[..., :len(i)]
    out = wrap(r)
    if STATE.enabled and v.requires_grad:
        record(new_node(DiagEmbedBackward), out, v)
    return out


def trace(input):
    if input.array.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim "
                           f"{input.array.ndim}")
    return _diagonal(input).sum()


# --------------------------------------------------------------------------- cross

class CrossBackward(Node):
    __slots__ = ("dim", "ashape", "bshape")

    def backward(self, g):
        a, b = self.unpack()
        nx = self.next
        ga = sum_to(_cross(b, g, self.dim), self.ashape) if nx[0] is not None else None
        gb = sum_to(_cross(g, a, self.dim), self.bshape) if nx[1] is not None else None
        return ga, gb


def _cross(input, other, dim, op="linalg.cross"):
    a, b = input.array, other.array
    if type(a) is not type(b):
        raise device_error(op, a, b)
    _same_dtype(op, input, other)
    if a.ndim != b.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions, got "
                           f"shapes {list(a.shape)} and {list(b.shape)}")
    xp = B.namespace(a)
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise RuntimeError(f"{op}: shapes {list(a.shape)} and {list(b.shape)} cannot be "
                           "broadcast together") from None
    if dim is None:  # torch.cross's legacy default: the first dim of size 3
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"{op}: no dimension of size 3 in input of shape {list(shape)}")
    dim = norm_dim(dim, len(shape))
    if a.shape[dim] != 3 or b.shape[dim] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[dim]} and {b.shape[dim]}")
    out = wrap(xp.cross(a, b, axis=dim))
    if STATE.enabled and (input.requires_grad or other.requires_grad):
        n = new_node(CrossBackward)
        n.dim, n.ashape, n.bshape = dim, a.shape, b.shape
        n.save(input, other)
        record(n, out, input, other)
    return out


def cross(input, other, dim=None):
    """Cross product along ``dim`` (default: the first dim of size 3; prefer
    ``ember.linalg.cross``, whose default is the last dim)."""
    return _cross(input, other, dim, "cross")


# --------------------------------------------------------------------------- ember.linalg aliases

def _la():
    from .. import linalg

    return linalg


def det(input):
    return _la().det(input)


def logdet(input):
    sign, logabs = _la().slogdet(input)
    return logabs + sign.log()  # log(-1) = nan, log(0) = -inf, as PyTorch returns


def slogdet(input):
    return _la().slogdet(input)


def inverse(input):
    return _la().inv(input)


def pinverse(input, rcond=1e-15):
    return _la().pinv(input, rtol=rcond)


def matrix_power(input, n):
    return _la().matrix_power(input, n)


def cholesky(input, upper=False):
    return _la().cholesky(input, upper=upper)


def qr(input, some=True):
    return _la().qr(input, "reduced" if some else "complete")


def svd(input, some=True, compute_uv=True):
    """Old-style SVD: returns ``(U, S, V)`` (V, not Vh). ``compute_uv=False`` gives zero U, V."""
    la = _la()
    if not compute_uv:
        s = la.svdvals(input)
        xp = B.namespace(input.array)
        m, n = input.array.shape[-2:]
        k = min(m, n)
        bs = input.array.shape[:-2]
        z = input.array.dtype
        return la._svd_old(wrap(xp.zeros(bs + (m, k if some else m), z)), s,
                           wrap(xp.zeros(bs + (n, k if some else n), z)))
    u, s, vh = la.svd(input, full_matrices=not some)
    return la._svd_old(u, s, vh.mT)


# --------------------------------------------------------------------------- Tensor methods

class LinalgOps:
    __slots__ = ()
    matmul = matmul
    mm = mm
    bmm = bmm
    mv = mv
    dot = dot
    vdot = vdot
    inner = inner
    outer = outer
    ger = ger
    kron = kron
    trace = trace
    cross = cross
    det = det
    logdet = logdet
    slogdet = slogdet
    inverse = inverse
    pinverse = pinverse
    matrix_power = matrix_power
    cholesky = cholesky
    qr = qr
    svd = svd

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        return addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def addmv(self, mat, vec, *, beta=1, alpha=1):
        return addmv(self, mat, vec, beta=beta, alpha=alpha)

    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        return addr(self, vec1, vec2, beta=beta, alpha=alpha)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return addbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def __matmul__(self, other):
        if getattr(other, "is_sparse", False):
            return NotImplemented  # dense @ sparse: the sparse operand's __rmatmul__
        if not hasattr(other, "grad_fn"):
            other = to_tensor(other, self)
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(to_tensor(other, self), self)

    @property
    def mT(self):
        return self.transpose(-2, -1)

    @property
    def T(self):
        nd = self.array.ndim
        return self.permute(tuple(range(nd - 1, -1, -1))) if nd > 1 else self


__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
           "addmv", "addr", "addbmm", "baddbmm", "einsum", "tensordot", "kron", "trace", "cross",
           "det", "logdet", "slogdet", "inverse", "pinverse", "matrix_power", "cholesky", "qr",
           "svd"]
