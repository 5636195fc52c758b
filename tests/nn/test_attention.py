"""scaled_dot_product_attention and multi_head_attention_forward against torch 2.13:
forward, grads of every input (and a float mask), double grads, masks, causal, GQA,
dropout statistics, MHA options (bias_k/v, add_zero_attn, masks, weights)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from torch.nn.attention import SDPBackend, sdpa_kernel
from optest import Const, check_op

import ember
import ember.nn.functional as F


def _sdpa(**kw):
    def tf(q, k, v, *m):
        # torch's math backend: its CPU flash kernel has no double backward
        with sdpa_kernel(SDPBackend.MATH):
            return TF.scaled_dot_product_attention(q, k, v, *m, **kw)
    return (lambda q, k, v, *m: F.scaled_dot_product_attention(q, k, v, *m, **kw)), tf


@pytest.mark.parametrize("shapes", [
    [(5, 4), (6, 4), (6, 3)],                      # unbatched
    [(2, 5, 4), (2, 6, 4), (2, 6, 3)],
    [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4)],
    [(2, 3, 5, 4), (1, 3, 6, 4), (3, 6, 2)],       # broadcast batch dims
])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_sdpa_matches_torch(shapes, scale, device):
    ef, tf = _sdpa(scale=scale)
    check_op(ef, tf, shapes, device=device)


@pytest.mark.parametrize("L,S", [(5, 5), (3, 6), (6, 3)])
def test_sdpa_causal(L, S):
    ef, tf = _sdpa(is_causal=True)
    check_op(ef, tf, [(2, L, 4), (2, S, 4), (2, S, 3)])


@pytest.mark.parametrize("mshape", [(5, 6), (2, 1, 5, 6), (1, 6)])
def test_sdpa_bool_mask(mshape):
    m = np.random.default_rng(1).random(mshape) > 0.3
    m[..., 0] = True
    ef, tf = _sdpa()
    check_op(ef, tf, [(2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3), Const(m)])


@pytest.mark.parametrize("mshape", [(5, 6), (2, 2, 5, 6), (1, 6)])
def test_sdpa_float_mask_with_gradient(mshape):
    ef, tf = _sdpa()
    check_op(ef, tf, [(2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3), mshape])


def test_sdpa_fully_masked_rows_give_zero():
    m = np.ones((5, 6), bool)
    m[2] = False
    ef, tf = _sdpa()
    check_op(ef, tf, [(2, 5, 4), (2, 6, 4), (2, 6, 3), Const(m)])
    fm = np.zeros((5, 6), np.float32)
    fm[1] = -np.inf
    check_op(ef, tf, [(2, 5, 4), (2, 6, 4), (2, 6, 3), Const(fm)], gradcheck=False)


def test_sdpa_gqa():
    ef, tf = _sdpa(enable_gqa=True)
    check_op(ef, tf, [(1, 4, 3, 8), (1, 2, 5, 8), (1, 1, 5, 6)])
    with pytest.raises(RuntimeError, match="must divide the number of heads in query"):
        F.scaled_dot_product_attention(ember.ones(1, 4, 3, 8), ember.ones(1, 3, 5, 8),
                                       ember.ones(1, 3, 5, 8), enable_gqa=True)


def test_sdpa_float64_double_backward():
    ef, tf = _sdpa(is_causal=True, scale=0.7)
    check_op(ef, tf, [(2, 4, 3), (2, 4, 3), (2, 4, 5)], dtype=np.float64, atol=1e-10, rtol=1e-8)


def test_sdpa_dropout():
    q, k, v = ember.randn(4, 8, 16), ember.randn(4, 8, 16), ember.randn(4, 8, 16)
    ember.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    ember.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    np.testing.assert_array_equal(a.numpy(), b.numpy())     # same seed, same dropout
    w = F.scaled_dot_product_attention(ember.zeros(1, 200, 4), ember.zeros(1, 400, 4),
                                       ember.eye(400).reshape(1, 400, 400), dropout_p=0.25)
    # uniform attention 1/400 per key; dropped ones are 0, kept ones scaled by 1/(1-p)
    vals = w.numpy().ravel() * 400
    kept = vals > 0
    assert abs(kept.mean() - 0.75) < 0.01
    np.testing.assert_allclose(vals[kept], 1 / 0.75, rtol=1e-5)
    # gradients use the same dropout mask as the forward
    qg = ember.randn(2, 3, 4, requires_grad=True)
    kg = ember.randn(2, 5, 4, requires_grad=True)
    vg = ember.randn(2, 5, 3, requires_grad=True)
    ember.manual_seed(7)
    F.scaled_dot_product_attention(qg, kg, vg, dropout_p=0.5).sum().backward()
    ember.manual_seed(7)
    keep = F.scaled_dot_product_attention(ember.zeros(2, 3, 4), ember.zeros(2, 5, 4),
                                          ember.eye(5).expand(2, 5, 5), dropout_p=0.5)
    mask = (keep.numpy() > 0) * 2.0
    s = qg.detach().numpy() @ kg.detach().numpy().transpose(0, 2, 1) / 2.0
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(vg.grad.numpy(), ((p * mask).transpose(0, 2, 1)).sum(-1,
                               keepdims=True).repeat(3, -1), rtol=1e-5)


def test_sdpa_errors():
    o = ember.ones
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal"):
        F.scaled_dot_product_attention(o(3, 4), o(3, 4), o(3, 4), o(3, 3), is_causal=True)
    with pytest.raises(RuntimeError, match="at least 2 dimensional"):
        F.scaled_dot_product_attention(o(4), o(3, 4), o(3, 4))
    with pytest.raises(RuntimeError, match="to have the same dtype"):
        F.scaled_dot_product_attention(o(3, 4), o(3, 4, dtype=ember.float64), o(3, 4))
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(o(3, 4), o(3, 4), o(3, 4),
                                       ember.ones(3, 3, dtype=ember.int64))


# ----------------------------------------------------------------------------- MHA

E, H = 8, 2


def _mha_params(rng, separate=False, bias=True, kv_bias=False):
    p = {"in_proj_weight": rng.standard_normal((3 * E, E)) * 0.4,
         "in_proj_bias": rng.standard_normal(3 * E) * 0.1 if bias else None,
         "out_proj_weight": rng.standard_normal((E, E)) * 0.4,
         "out_proj_bias": rng.standard_normal(E) * 0.1 if bias else None,
         "bias_k": rng.standard_normal((1, 1, E)) * 0.3 if kv_bias else None,
         "bias_v": rng.standard_normal((1, 1, E)) * 0.3 if kv_bias else None}
    if separate:
        for n in ("q", "k", "v"):
            p[f"{n}_proj_weight"] = rng.standard_normal((E, E)) * 0.4
        p["in_proj_weight"] = None
    return {k: (None if v is None else v.astype(np.float32)) for k, v in p.items()}


def _run_mha(lib, fmod, q, k, v, params, masks, need_weights, average, zero_attn, causal=False,
             self_attn=False):
    def t(a):
        return None if a is None else (lib.tensor(a, requires_grad=a.dtype.kind == "f")
                                       if isinstance(a, np.ndarray) else a)
    tq = t(q)
    tk, tv = (tq, tq) if self_attn else (t(k), t(v))
    tp = {n: t(a) for n, a in params.items()}
    kw = {n: tp[n] for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight") if n in tp}
    out, w = fmod.multi_head_attention_forward(
        tq, tk, tv, E, H, tp["in_proj_weight"], tp["in_proj_bias"], tp["bias_k"], tp["bias_v"],
        zero_attn, 0.0, tp["out_proj_weight"], tp["out_proj_bias"], training=True,
        key_padding_mask=None if masks[0] is None else lib.tensor(masks[0]),
        need_weights=need_weights, attn_mask=None if masks[1] is None else lib.tensor(masks[1]),
        use_separate_proj_weight=bool(kw), average_attn_weights=average, is_causal=causal,
        **kw)
    loss = (out * lib.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32)
                             .reshape(tuple(out.shape)))).sum()
    if w is not None:
        loss = loss + (w * lib.tensor(np.linspace(0, 1, w.numel(), dtype=np.float32)
                                      .reshape(tuple(w.shape)))).sum()
    loss.backward()
    grads = [a.grad for a in [tq, tk, tv, *tp.values()] if a is not None and a.requires_grad]
    return out, w, grads


def _np(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def _compare_mha(*args, **kw):
    eo, ew, eg = _run_mha(ember, F, *args, **kw)
    to, tw, tg = _run_mha(torch, TF, *args, **kw)
    np.testing.assert_allclose(_np(eo), _np(to), rtol=1e-4, atol=1e-5)
    assert (ew is None) == (tw is None)
    if tw is not None:
        np.testing.assert_allclose(_np(ew), _np(tw), rtol=1e-4, atol=1e-5)
    assert len(eg) == len(tg)
    for a, b in zip(eg, tg):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("masks", ["none", "bool", "float", "kpm", "both"])
@pytest.mark.parametrize("batched", [True, False])
def test_mha_matches_torch(need_weights, average, masks, batched):
    rng = np.random.default_rng(0)
    L, S, N = 4, 5, 3
    lead = (N,) if batched else ()
    q = rng.standard_normal((L,) + lead + (E,)).astype(np.float32)
    k = rng.standard_normal((S,) + lead + (E,)).astype(np.float32)
    v = rng.standard_normal((S,) + lead + (E,)).astype(np.float32)
    am = kpm = None
    if masks in ("bool", "both"):
        am = rng.random((L, S)) > 0.7
        am[:, 0] = False
    if masks == "float":
        am = (rng.standard_normal((N * H, L, S)) if batched else
              rng.standard_normal((H, L, S))).astype(np.float32)
    if masks in ("kpm", "both"):
        kpm = rng.random((N, S) if batched else (S,)) > 0.7
        kpm[..., 0] = False
    _compare_mha(q, k, v, _mha_params(rng), (kpm, am), need_weights, average, False)


@pytest.mark.parametrize("kv_bias,zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_bias_kv_and_zero_attn(kv_bias, zero_attn, need_weights):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((4, 2, E)).astype(np.float32)
    k = rng.standard_normal((5, 2, E)).astype(np.float32)
    kpm = np.zeros((2, 5), bool)
    kpm[1, 3:] = True
    am = rng.random((4, 5)) > 0.8
    am[:, 0] = False
    _compare_mha(q, k, k.copy(), _mha_params(rng, kv_bias=kv_bias), (kpm, am), need_weights,
                 True, zero_attn)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_self_attention_separate_weights_and_causal(need_weights):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 2, E)).astype(np.float32)
    causal = np.triu(np.ones((5, 5), bool), 1)
    _compare_mha(x, None, None, _mha_params(rng), (None, causal), need_weights, True, False,
                 causal=True, self_attn=True)
    _compare_mha(x, x.copy(), x.copy(), _mha_params(rng, separate=True, bias=False),
                 (None, None), need_weights, False, False)


def test_mha_errors():
    rng = np.random.default_rng(0)
    p = {k: (None if v is None else ember.tensor(v)) for k, v in _mha_params(rng).items()}
    x = ember.ones(4, 2, E)
    args = (p["in_proj_weight"], p["in_proj_bias"], None, None, False, 0.0,
            p["out_proj_weight"], p["out_proj_bias"])
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 6"):
        F.multi_head_attention_forward(x, x, x, 6, H, *args)
    with pytest.raises(AssertionError, match="not divisible by num_heads 3"):
        F.multi_head_attention_forward(x, x, x, E, 3, *args)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        F.multi_head_attention_forward(x, x, x, E, H, *args, attn_mask=ember.zeros(3, 4))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        F.multi_head_attention_forward(x, x, x, E, H, *args, is_causal=True)
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D"):
        F.multi_head_attention_forward(ember.ones(E), x, x, E, H, *args)
    with pytest.raises(AssertionError, match="only bool and floating types of key_padding_mask"):
        F.multi_head_attention_forward(x, x, x, E, H, *args,
                                       key_padding_mask=ember.zeros(2, 4, dtype=ember.int64))


def test_mha_dropout_only_in_training():
    rng = np.random.default_rng(0)
    p = {k: (None if v is None else ember.tensor(v)) for k, v in _mha_params(rng).items()}
    x = ember.tensor(rng.standard_normal((4, 2, E)).astype(np.float32))
    args = (p["in_proj_weight"], p["in_proj_bias"], None, None, False, 0.5,
            p["out_proj_weight"], p["out_proj_bias"])
    a, wa = F.multi_head_attention_forward(x, x, x, E, H, *args, training=False)
    b, wb = F.multi_head_attention_forward(x, x, x, E, H, *args[:5], 0.0, *args[6:])
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    c, wc = F.multi_head_attention_forward(x, x, x, E, H, *args, training=True)
    assert not np.allclose(c.numpy(), a.numpy())
    assert (wc.numpy() == 0).any() or not np.allclose(wc.numpy(), wa.numpy())


def test_mha_is_causal_needs_a_mask_and_honours_it_with_need_weights():
    """As in torch, is_causal is a hint about attn_mask: without a mask it is refused with a
    clear message; with one (and need_weights) the result equals torch's."""
    rng = np.random.default_rng(3)
    L, N, E, H = 4, 2, 8, 2
    x = rng.standard_normal((L, N, E)).astype(np.float32)
    w_in = rng.standard_normal((3 * E, E)).astype(np.float32) * 0.3
    w_out = rng.standard_normal((E, E)).astype(np.float32) * 0.3
    b_in, b_out = np.zeros(3 * E, np.float32), np.zeros(E, np.float32)
    mask = np.triu(np.full((L, L), -np.inf, np.float32), 1)

    def ember_mha(m):
        return F.multi_head_attention_forward(
            *(ember.tensor(x),) * 3, E, H, ember.tensor(w_in), ember.tensor(b_in), None, None,
            False, 0.0, ember.tensor(w_out), ember.tensor(b_out), training=False,
            need_weights=True, is_causal=True, attn_mask=m)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        ember_mha(None)
    eo, ew = ember_mha(ember.tensor(mask))
    to, tw = torch.nn.functional.multi_head_attention_forward(
        *(torch.tensor(x),) * 3, E, H, torch.tensor(w_in), torch.tensor(b_in), None, None,
        False, 0.0, torch.tensor(w_out), torch.tensor(b_out), training=False,
        need_weights=True, is_causal=True, attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(eo.numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ew.numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
