"""Attention: ``scaled_dot_product_attention`` (one fused autograd node) and
``multi_head_attention_forward`` (PyTorch's (L, N, E) layout, unbatched inputs too).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> q, k, v = ember.randn(2, 4, 5, 8), ember.randn(2, 4, 7, 8), ember.randn(2, 4, 7, 6)
    >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).shape
    (2, 4, 5, 6)
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _backend as B
from ... import _blas
from ... import dtypes as D
from ..._parallel import parallel_for, split_threads
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, new_node, record
from ...ops._util import sum_to, wrap
from ...ops.linalg import baddbmm, bmm, matmul
from ...ops.reduce import softmax
from ...ops.shape import cat
from .linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


# ------------------------------------------------------------------------------ helpers

def _reduce_to(a, shape):
    """Sum the array ``a`` down to ``shape`` (the reverse of broadcasting)."""
    if a.shape == tuple(shape):
        return a
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and a.shape[i + lead] != 1)
    return a.sum(axis=axes, keepdims=True).reshape(shape)


def _softmax_rows(xp, s):
    """In place on ``s``: softmax over the last dim; rows that are entirely -inf give 0
    (PyTorch's "safe softmax" of attention)."""
    mx = s.max(-1, keepdims=True)
    dead = ~xp.isfinite(mx)
    if dead.any():
        mx[dead] = 0
    s -= mx
    xp.exp(s, out=s)
    den = s.sum(-1, keepdims=True)
    if dead.any():
        den[den == 0] = 1
    s /= den
    return s


def _keep_mask(xp, shape, p, dtype, device):
    """Dropout multipliers: 0 with probability ``p``, else 1 / (1 - p) (ember's RNG)."""
    from ...random import _gen

    u = _gen(None, device).random(shape, dtype=np.float64 if dtype == np.float64
                                  else np.float32)
    return ((u >= p) * (1.0 / (1.0 - p))).astype(dtype)


# ------------------------------------------------------------------------------ threaded

def _batch3(a, B_, shape2):
    return a.reshape((B_,) + shape2)


def _threads_for(xp, batch, others, work):
    """Threads for a split of the (batch, heads) matrices: numpy, the same batch dims on
    every operand (no broadcasting), at least two matrices and enough work; else 1."""
    if xp is not np or len(batch) == 0 or any(tuple(o.shape[:-2]) != batch for o in others):
        return 1
    nb = int(np.prod(batch))
    return min(nb, split_threads(work)) if nb > 1 else 1


def _softmax_kernel(a, name="softmax"):
    """The compiled row softmax (or its backward) when the kernels are on and ``a`` is a
    float32/float64 numpy array, else None (the ufunc code here runs)."""
    from ... import kernels

    if a.dtype not in (np.float32, np.float64) or not kernels.available():
        return None
    return kernels.lookup(name).cpu


def _sdpa_threaded(q, k, v, scale, add, keep):
    """Forward of the attention over (batch x heads) matrices split over ember's threads,
    each running single-threaded GEMMs and the softmax on its own matrices (numpy's batched
    matmul runs its matrices one after another on one core; OpenBLAS does not thread
    matrices this small). ``add``: an additive (L, S) mask or None. Returns ``(p, o)``."""
    batch, (L, E), (S, Ev) = q.shape[:-2], q.shape[-2:], v.shape[-2:]
    nb = int(np.prod(batch))
    q3, k3, v3 = _batch3(q, nb, (L, E)), _batch3(k, nb, (S, E)), _batch3(v, nb, (S, Ev))
    keep3 = None if keep is None else _batch3(keep, nb, (L, S))
    p = np.empty((nb, L, S), q.dtype)
    o = np.empty((nb, L, Ev), q.dtype)
    sc = q.dtype.type(scale)
    soft = _softmax_kernel(q) if add is None else None  # masks may leave all -inf rows

    def run(lo, hi):
        ps = p[lo:hi]
        np.matmul(q3[lo:hi], np.swapaxes(k3[lo:hi], -1, -2), out=ps)
        ps *= sc
        if add is not None:
            ps += add
        if soft is not None:
            ps[...] = soft(ps.reshape(-1, S)).reshape(ps.shape)
        else:
            _softmax_rows(np, ps)
        np.matmul(ps if keep3 is None else ps * keep3[lo:hi], v3[lo:hi], out=o[lo:hi])

    with _blas.single_threaded():
        parallel_for(run, nb, work=p.size * (E + Ev + 8))
    return p.reshape(batch + (L, S)), o.reshape(batch + (L, Ev))


def _sdpa_backward_threaded(node, gd, qd, kd, vd):
    """``SdpaBackward._raw`` for the threaded case (same batch dims everywhere, no mask
    gradient): the four GEMMs and the softmax backward per block of matrices."""
    nx, p, keep, scale = node.next, node.p, node.keep, node.scale
    batch, (L, E), (S, Ev) = qd.shape[:-2], qd.shape[-2:], vd.shape[-2:]
    nb = int(np.prod(batch))
    g3, p3 = _batch3(gd, nb, (L, Ev)), _batch3(p, nb, (L, S))
    q3, k3, v3 = _batch3(qd, nb, (L, E)), _batch3(kd, nb, (S, E)), _batch3(vd, nb, (S, Ev))
    keep3 = None if keep is None else _batch3(keep, nb, (L, S))
    dt = gd.dtype
    gq = np.empty((nb, L, E), dt) if nx[0] is not None else None
    gk = np.empty((nb, S, E), dt) if nx[1] is not None else None
    gv = np.empty((nb, S, Ev), dt) if nx[2] is not None else None
    sc = dt.type(scale)
    soft_bwd = _softmax_kernel(gd, "softmax_backward")

    def run(lo, hi):
        ps = p3[lo:hi]
        g = g3[lo:hi]
        if gv is not None:
            pd = ps if keep3 is None else ps * keep3[lo:hi]
            np.matmul(np.swapaxes(pd, -1, -2), g, out=gv[lo:hi])
        if gq is None and gk is None:
            return
        gp = np.matmul(g, np.swapaxes(v3[lo:hi], -1, -2))
        if keep3 is not None:
            gp *= keep3[lo:hi]
        if soft_bwd is not None:   # (gp - rowdot(gp, p)) * p in one pass
            gp = soft_bwd(gp.reshape(-1, S), ps.reshape(-1, S)).reshape(gp.shape)
        else:
            gp -= np.einsum("...i,...i->...", gp, ps)[..., None]
            gp *= ps
        gp *= sc
        if gq is not None:
            np.matmul(gp, k3[lo:hi], out=gq[lo:hi])
        if gk is not None:
            np.matmul(np.swapaxes(gp, -1, -2), q3[lo:hi], out=gk[lo:hi])

    with _blas.single_threaded():
        parallel_for(run, nb, work=p3.size * (2 * E + 2 * Ev + 8))
    return (None if gq is None else wrap(gq.reshape(qd.shape)),
            None if gk is None else wrap(gk.reshape(kd.shape)),
            None if gv is None else wrap(gv.reshape(vd.shape)), None)


# ------------------------------------------------------------------------------ sdpa node

class SdpaBackward(Node):
    """softmax(q k^T * scale + mask) @ v. Saved: q, k, v, the float mask (when it needs a
    gradient), the attention probabilities ``p`` and the dropout multipliers, as arrays.
    Without a graph to build, backward is four batched GEMMs and the softmax backward on
    the arrays; under create_graph the probabilities are recomputed with ember ops so that
    the gradients are differentiable again."""

    __slots__ = ("p", "keep", "allow", "scale", "shapes")

    def backward(self, g):
        q, k, v, mask = self.unpack()
        if not STATE.enabled:
            return self._raw(g.array, q.array, k.array, v.array)
        return self._graph(g, q, k, v, mask)

    def release(self):
        Node.release(self)
        self.p = self.keep = None

    def _raw(self, gd, qd, kd, vd):
        nx, xp = self.next, B.namespace(gd)
        if nx[3] is None and self.p.shape[:-2] == qd.shape[:-2] and _threads_for(
                xp, tuple(qd.shape[:-2]), (kd, vd, gd), self.p.size * 4 * qd.shape[-1]) > 1:
            return _sdpa_backward_threaded(self, gd, qd, kd, vd)
        p, keep, scale = self.p, self.keep, self.scale
        pd = p if keep is None else p * keep
        gq = gk = gv = gm = None
        if nx[2] is not None:
            gv = wrap(_reduce_to(xp.swapaxes(pd, -1, -2) @ gd, vd.shape))
        if nx[0] is not None or nx[1] is not None or nx[3] is not None:
            gp = gd @ xp.swapaxes(vd, -1, -2)
            if keep is not None:
                gp *= keep
            gs = gp - xp.einsum("...i,...i->...", gp, p)[..., None]   # row dot products
            gs *= p                                             # softmax backward
            if nx[3] is not None:
                gm = _reduce_to(gs, self.shapes[3])
                gm = wrap(gm.copy() if gm is gs else gm)    # gs is scaled in place next
            gs *= scale
            if nx[0] is not None:
                gq = wrap(_reduce_to(gs @ kd, qd.shape))
            if nx[1] is not None:
                gk = wrap(_reduce_to(xp.swapaxes(gs, -1, -2) @ qd, kd.shape))
        return gq, gk, gv, gm

    def _graph(self, g, q, k, v, mask):
        nx = self.next
        s = matmul(q, k.mT) * self.scale
        if mask is not None:
            s = s + mask
        p = _safe_softmax(s, self.allow)
        pd = p if self.keep is None else p * wrap(self.keep)
        gq = gk = gv = gm = None
        if nx[2] is not None:
            gv = sum_to(matmul(pd.mT, g), self.shapes[2])
        gp = matmul(g, v.mT)
        if self.keep is not None:
            gp = gp * wrap(self.keep)
        gs = p * (gp - (gp * p).sum(-1, keepdim=True))
        if nx[3] is not None:
            gm = sum_to(gs, self.shapes[3])
        gs = gs * self.scale
        if nx[0] is not None:
            gq = sum_to(matmul(gs, k), self.shapes[0])
        if nx[1] is not None:
            gk = sum_to(matmul(gs.mT, q), self.shapes[1])
        return gq, gk, gv, gm


def _safe_softmax(s, allow):
    """Differentiable softmax over the last dim with -inf outside ``allow`` (a bool array
    or None) and all -inf rows giving 0."""
    xp = B.namespace(s.array)
    if allow is not None:
        s = s.masked_fill(wrap(~allow), -math.inf)
    dead = ~xp.isfinite(s.array).any(-1, keepdims=True)
    if not dead.any():
        return softmax(s, -1)
    dead = wrap(xp.broadcast_to(dead, s.shape))
    return softmax(s.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, with dropout on the attention weights.

    Shapes: query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev); batch
    dims broadcast. ``attn_mask``: bool (True = takes part) or float (added), broadcastable
    to (..., L, S). ``is_causal``: the top-left aligned lower triangle (query i sees keys
    0..i). ``scale`` defaults to 1/sqrt(E). Rows where nothing takes part give zeros.
    ``enable_gqa``: key/value may have fewer heads (dim -3) than query, a divisor of them.
    """
    q, k, v = query.array, key.array, value.array
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {q.ndim} key.dim: {k.ndim} and value.dim: "
                           f"{v.ndim} instead.")
    if not (q.dtype == k.dtype == v.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {D.name(q.dtype)} key.dtype: {D.name(k.dtype)} and "
                           f"value.dtype: {D.name(v.dtype)} instead.")
    if not D.is_floating(q.dtype):
        raise RuntimeError(f"scaled_dot_product_attention: expected floating point inputs, "
                           f"got {D.name(q.dtype)}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    if attn_mask is not None and attn_mask.dtype != np.bool_ and attn_mask.dtype != q.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {D.name(attn_mask.dtype)} and  "
                           f"query.dtype: {D.name(q.dtype)} instead.")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa and q.ndim >= 3:
        hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in query")
        if hk != hq:
            key = key.repeat_interleave(hq // hk, dim=-3)
        if hv != hq:
            value = value.repeat_interleave(hq // hv, dim=-3)
        k, v = key.array, value.array
    E, L, S = q.shape[-1], q.shape[-2], k.shape[-2]
    if k.shape[-1] != E:
        raise RuntimeError(f"scaled_dot_product_attention: key's last dim {k.shape[-1]} must "
                           f"equal query's {E}")
    if v.shape[-2] != S:
        raise RuntimeError(f"scaled_dot_product_attention: value has {v.shape[-2]} positions "
                           f"(dim -2) but key has {S}")
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    xp = B.namespace(q)
    batch = tuple(q.shape[:-2])
    mask2d = attn_mask is None or attn_mask.array.ndim == 2
    if mask2d and _threads_for(xp, batch, (k, v), int(np.prod(batch or (1,))) * L * S * E) > 1:
        return _sdpa_split(query, key, value, q, k, v, attn_mask, dropout_p, is_causal, scale)
    try:
        s = q @ xp.swapaxes(k, -1, -2)
    except ValueError:
        raise RuntimeError(f"scaled_dot_product_attention: batch dims of query "
                           f"{list(q.shape[:-2])} and key {list(k.shape[:-2])} do not "
                           f"broadcast") from None
    s *= q.dtype.type(scale)
    allow = None
    fmask = None
    if is_causal:
        allow = xp.arange(S)[None, :] <= xp.arange(L)[:, None]
    elif attn_mask is not None:
        m = attn_mask.array
        if m.dtype == np.bool_:
            allow = m
        else:
            fmask = attn_mask
            s = s + m if s.shape != np.broadcast_shapes(s.shape, m.shape) else \
                xp.add(s, m, out=s)
    if allow is not None:
        madd = xp.zeros(allow.shape, s.dtype)      # -inf where masked, added: no masked select
        madd[~allow] = -xp.inf
        s = s + madd if s.shape != np.broadcast_shapes(s.shape, allow.shape) else \
            xp.add(s, madd, out=s)
    p = _softmax_rows(xp, s)
    keep = None
    if dropout_p > 0:
        keep = _keep_mask(xp, p.shape, dropout_p, p.dtype, query.device)
    try:
        o = (p if keep is None else p * keep) @ v
    except ValueError:
        raise RuntimeError(f"scaled_dot_product_attention: batch dims of the weights "
                           f"{list(p.shape[:-2])} and value {list(v.shape[:-2])} do not "
                           f"broadcast") from None
    out = wrap(o)
    mgrad = fmask is not None and fmask.requires_grad
    if STATE.enabled and (query.requires_grad or key.requires_grad or value.requires_grad or
                          mgrad):
        n = new_node(SdpaBackward)
        n.p, n.keep, n.allow, n.scale = p, keep, allow, scale
        n.shapes = (q.shape, k.shape, v.shape, None if fmask is None else fmask.array.shape)
        n.save(query, key, value, fmask)
        record(n, out, query, key, value, fmask)
    return out


def _sdpa_split(query, key, value, q, k, v, attn_mask, dropout_p, is_causal, scale):
    """``scaled_dot_product_attention`` with the (batch x heads) matrices split over ember's
    threads (numpy; same batch dims on q, k, v; no mask or an (L, S) one). The same math,
    node and saved state as the batched path."""
    L, S = q.shape[-2], k.shape[-2]
    allow = fmask = add = None
    if is_causal:
        allow = np.arange(S)[None, :] <= np.arange(L)[:, None]
    elif attn_mask is not None:
        m = attn_mask.array
        if m.dtype == np.bool_:
            allow = m
        else:
            fmask, add = attn_mask, m
    if allow is not None:
        add = np.zeros(allow.shape, q.dtype)
        add[~allow] = -np.inf
    keep = None
    if dropout_p > 0:
        keep = _keep_mask(np, q.shape[:-2] + (L, S), dropout_p, q.dtype, query.device)
    p, o = _sdpa_threaded(q, k, v, scale, add, keep)
    out = wrap(o)
    mgrad = fmask is not None and fmask.requires_grad
    if STATE.enabled and (query.requires_grad or key.requires_grad or value.requires_grad or
                          mgrad):
        n = new_node(SdpaBackward)
        n.p, n.keep, n.allow, n.scale = p, keep, allow, scale
        n.shapes = (q.shape, k.shape, v.shape, None if fmask is None else fmask.array.shape)
        n.save(query, key, value, fmask)
        record(n, out, query, key, value, fmask)
    return out


# ------------------------------------------------------------------------------ multi-head

def _canonical_mask(mask, name, other_type, other_name, target_type, check_other=True):
    """bool masks (True = masked out) become float masks with -inf; float masks pass."""
    if mask is None:
        return None
    dt = mask.dtype
    is_float = D.is_floating(dt)
    if dt != np.bool_ and not is_float:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if check_other and other_type is not None and dt != other_type:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      f"type for both instead.", stacklevel=3)
    if not is_float:
        xp = B.namespace(mask.array)
        mask = wrap(xp.where(mask.array, xp.asarray(-np.inf, dtype=target_type),
                             xp.asarray(0, dtype=target_type)))
    return mask


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    qd = query.dim()
    if qd == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if qd == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     f"instead")
            if attn_mask.dim() == 3:
                want = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != want:
                    raise AssertionError(f"Expected `attn_mask` shape to be {want} but got "
                                         f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {qd}-D "
                         f"query tensor")


def _in_projection_packed(q, k, v, w, b):
    E = q.shape[-1]
    if k is v:
        if q is k:  # self-attention: one GEMM for q, k and v
            proj = linear(q, w, b).unflatten(-1, (3, E))
            return proj.select(-2, 0), proj.select(-2, 1), proj.select(-2, 2)
        w_q, w_kv = w.split([E, 2 * E])
        b_q, b_kv = (None, None) if b is None else b.split([E, 2 * E])
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, E))
        return linear(q, w_q, b_q), kv.select(-2, 0), kv.select(-2, 1)
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None,) * 3 if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _pad_last(t):
    """Append one zero column along the last dim (a mask for an appended key)."""
    from ...factories import zeros

    return cat([t, zeros(tuple(t.shape[:-1]) + (1,), dtype=t.dtype, device=t.device)], -1)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention as ``torch.nn.functional.multi_head_attention_forward``.

    query (L, N, E) or (L, E); key, value (S, N, E) or (S, E); masks: ``key_padding_mask``
    (N, S) / (S,) and ``attn_mask`` (L, S) / (N * num_heads, L, S), bool (True = masked out)
    or float (added). Returns ``(attn_output (L, N, E), attn_weights)`` with the weights
    (N, L, S) averaged over heads, or (N, num_heads, L, S), or None if not
    ``need_weights``."""
    is_batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype,
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint alone: sdpa builds the causal mask
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                             f"{tuple(value.shape)}")

    # in-projection
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for name, w_ in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w_ is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     f"is None")
        b_q, b_k, b_v = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
        q = linear(query, q_proj_weight, b_q)
        k = linear(key, k_proj_weight, b_k)
        v = linear(value, v_proj_weight, b_v)

    # attention mask to 3-D
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, "
                                   f"but should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            want = (bsz * num_heads, tgt_len, src_len)
            if tuple(attn_mask.shape) != want:
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, "
                                   f"but should be {want}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    # learned bias key/value appended along the source dim
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.reshape(1, 1, -1).expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.reshape(1, 1, -1).expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # heads into the batch dim: (N * heads, len, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.shape[0] != bsz * num_heads:
            raise AssertionError(f"expecting static_k.size(0) of {bsz * num_heads}, but got "
                                 f"{static_k.shape[0]}")
        if static_k.shape[2] != head_dim:
            raise AssertionError(f"expecting static_k.size(2) of {head_dim}, but got "
                                 f"{static_k.shape[2]}")
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.shape[0] != bsz * num_heads:
            raise AssertionError(f"expecting static_v.size(0) of {bsz * num_heads}, but got "
                                 f"{static_v.shape[0]}")
        if static_v.shape[2] != head_dim:
            raise AssertionError(f"expecting static_v.size(2) of {head_dim}, but got "
                                 f"{static_v.shape[2]}")
        v = static_v

    if add_zero_attn:
        from ...factories import zeros

        z = zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = cat([k, z], 1), cat([v, z], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    if need_weights:
        E = q.shape[-1]
        q_scaled = q * math.sqrt(1.0 / float(E))
        if attn_mask is not None:
            w = baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            w = bmm(q_scaled, k.transpose(-2, -1))
        w = softmax(w, -1)
        if dropout_p > 0.0:
            xp = B.namespace(w.array)
            w = w * wrap(_keep_mask(xp, w.shape, dropout_p, w.dtype, w.device))
        out = bmm(w, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        w = w.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(1)
        if not is_batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None
