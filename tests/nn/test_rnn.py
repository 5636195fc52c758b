"""RNN / LSTM / GRU, their cells and nn.utils.rnn against torch twins with the same weights."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.nn import _recurrence as R
from ember.nn.utils import rnn as U

pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections")


def _twins(mode, *args, **kw):
    e = getattr(nn, mode)(*args, **kw)
    t = getattr(torch.nn, mode)(*args, **kw)
    assert list(e.state_dict()) == list(t.state_dict())
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return e, t


def _close(a, b, tol=2e-5, what=""):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else a
    b = b.detach().numpy()
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=what)


def _flat(out, mode):
    o, h = out
    return [o] + (list(h) if mode == "LSTM" else [h])


def _loss_and_compare(e, t, eouts, touts, ex, tx):
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal(tuple(o.shape)).astype(np.float32) for o in touts]
    for i, (a, b) in enumerate(zip(eouts, touts)):
        _close(a, b, what=f"output {i}")
    sum((a * ember.from_numpy(w)).sum() for a, w in zip(eouts, ws)).backward()
    sum((b * torch.from_numpy(w)).sum() for b, w in zip(touts, ws)).backward()
    for x, y in zip(ex, tx):
        _close(x.grad, y.grad, 1e-4, "input grad")
    for (n, p), (_, q) in zip(e.named_parameters(), t.named_parameters()):
        _close(p.grad, q.grad, 1e-4, f"grad of {n}")


CONFIGS = [
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(batch_first=True, proj_size=3)),
    ("LSTM", dict(num_layers=2, bias=False, bidirectional=True, proj_size=2)),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("GRU", dict(bias=False)),
    ("RNN", dict(num_layers=2, nonlinearity="relu", bidirectional=True)),
    ("RNN", dict()),
]


@pytest.mark.parametrize("mode,kw", CONFIGS, ids=[f"{m}-{i}" for i, (m, _) in enumerate(CONFIGS)])
@pytest.mark.parametrize("with_hx", [False, True])
def test_matches_torch(mode, kw, with_hx):
    e, t = _twins(mode, 4, 6, **kw)
    rng = np.random.default_rng(0)
    L, N = 5, 3
    x = rng.standard_normal((N, L, 4) if kw.get("batch_first") else (L, N, 4)).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eargs, targs, ein, tin = [ex], [tx], [ex], [tx]
    if with_hx:
        dirs = 2 if kw.get("bidirectional") else 1
        hsize = kw.get("proj_size") or 6
        h = rng.standard_normal((kw.get("num_layers", 1) * dirs, N, hsize)).astype(np.float32)
        eh, th = ember.tensor(h, requires_grad=True), torch.tensor(h, requires_grad=True)
        ein.append(eh)
        tin.append(th)
        if mode == "LSTM":
            c = rng.standard_normal((h.shape[0], N, 6)).astype(np.float32)
            ec, tc = ember.tensor(c, requires_grad=True), torch.tensor(c, requires_grad=True)
            ein.append(ec)
            tin.append(tc)
            eargs.append((eh, ec))
            targs.append((th, tc))
        else:
            eargs.append(eh)
            targs.append(th)
    _loss_and_compare(e, t, _flat(e(*eargs), mode), _flat(t(*targs), mode), ein, tin)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequences_match_torch(mode, enforce_sorted):
    e, t = _twins(mode, 3, 5, num_layers=2, bidirectional=True)
    lengths = [4, 3, 1] if enforce_sorted else [2, 4, 1, 3]
    rng = np.random.default_rng(2)
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in lengths]
    es = [ember.tensor(s, requires_grad=True) for s in seqs]
    ts = [torch.tensor(s, requires_grad=True) for s in seqs]
    ep = U.pack_sequence(es, enforce_sorted=enforce_sorted)
    tp = torch.nn.utils.rnn.pack_sequence(ts, enforce_sorted=enforce_sorted)
    _close(ep.data, tp.data)
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist()
    eo, eh = e(ep)
    to, th = t(tp)
    _close(eo.data, to.data, what="packed output")
    epad, elen = U.pad_packed_sequence(eo, batch_first=True, padding_value=-1.0)
    tpad, tlen = torch.nn.utils.rnn.pad_packed_sequence(to, batch_first=True, padding_value=-1.0)
    assert elen.tolist() == tlen.tolist()
    _loss_and_compare(e, t, [epad] + (list(eh) if mode == "LSTM" else [eh]),
                      [tpad] + (list(th) if mode == "LSTM" else [th]), es, ts)


def test_unbatched_input_and_state():
    e, t = _twins("GRU", 3, 4, num_layers=2)
    x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    h = np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32)
    eo, eh = e(ember.tensor(x), ember.tensor(h))
    to, th = t(torch.tensor(x), torch.tensor(h))
    assert eo.shape == tuple(to.shape) == (5, 4) and eh.shape == (2, 4)
    _close(eo, to)
    _close(eh, th)


@pytest.mark.parametrize("cell,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                     ("LSTMCell", {}), ("GRUCell", {"bias": False})])
def test_cells_match_torch(cell, kw):
    e = getattr(nn, cell)(3, 4, **kw)
    t = getattr(torch.nn, cell)(3, 4, **kw)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((2, 3)).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eo, to = e(ex), t(tx)
    eo = eo if isinstance(eo, tuple) else (eo,)
    to = to if isinstance(to, tuple) else (to,)
    _loss_and_compare(e, t, list(eo), list(to), [ex], [tx])
    one = e(ember.tensor(x[0]))  # unbatched
    assert (one[0] if isinstance(one, tuple) else one).shape == (4,)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
@pytest.mark.parametrize("packed", [False, True])
def test_fused_equals_unrolled_and_double_backward(mode, packed):
    rng = np.random.default_rng(6)
    L, N, H = 4, 3, 2
    G = R.GATES[mode]
    f64 = lambda *s: ember.tensor(rng.standard_normal(s), dtype=ember.float64,  # noqa: E731
                                  requires_grad=True)
    xp, h0, w_hh, b_hh = f64(L, N, G * H), f64(N, H), f64(G * H, H), f64(G * H)
    c0 = f64(N, H) if mode == "LSTM" else None
    bs = np.array([3, 2, 2, 1]) if packed else None
    for reverse in (False, True):
        args = (mode, xp, h0, c0, w_hh, b_hh, None, bs, reverse)
        fo, uo = R.run(*args), R.unrolled(*args)
        for a, b in zip(fo, uo):
            if a is not None:
                np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
        ins = [t for t in (xp, h0, c0, w_hh, b_hh) if t is not None]

        def f(*ts, _rev=reverse):
            xs = dict(zip(["xp", "h0", "c0", "w", "b"] if mode == "LSTM" else
                          ["xp", "h0", "w", "b"], ts))
            out, h, c = R.run(mode, xs["xp"], xs["h0"], xs.get("c0"), xs["w"], xs["b"], None,
                              bs, _rev)
            return out.sum() + (h * h).sum() + (0 if c is None else c.sum())
        assert ember.autograd.gradcheck(f, ins, eps=1e-6, atol=1e-6)
        assert ember.autograd.gradgradcheck(f, ins, eps=1e-6, atol=1e-5)


def test_pad_and_pack_utilities_match_torch():
    seqs = [np.arange(n * 2, dtype=np.float32).reshape(n, 2) for n in (2, 5, 3)]
    for bf in (False, True):
        for side in ("right", "left"):
            a = U.pad_sequence([ember.tensor(s) for s in seqs], batch_first=bf, padding_value=9,
                               padding_side=side)
            b = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first=bf,
                                                padding_value=9, padding_side=side)
            _close(a, b)
    padded = U.pad_sequence([ember.tensor(s) for s in seqs])
    p = U.pack_padded_sequence(padded, [2, 5, 3], enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_padded_sequence(
        torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs]), [2, 5, 3],
        enforce_sorted=False)
    _close(p.data, tp.data)
    assert p.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert p.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    back, lens = U.pad_packed_sequence(p, total_length=7)
    tback, tlens = torch.nn.utils.rnn.pad_packed_sequence(tp, total_length=7)
    _close(back, tback)
    assert lens.tolist() == tlens.tolist() == [2, 5, 3]
    for a, s in zip(U.unpack_sequence(p), seqs):
        np.testing.assert_array_equal(a.numpy(), s)


def test_errors_name_the_problem():
    lstm = nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 3, got 5"):
        lstm(ember.zeros(2, 1, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"):
        lstm(ember.zeros(2, 2, 3), (ember.zeros(1, 3, 4), ember.zeros(1, 3, 4)))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        U.pack_padded_sequence(ember.zeros(3, 2, 1), [1, 3])
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(2, 3, nonlinearity="gelu")


def test_dropout_between_layers_only_in_training():
    m = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = ember.randn(5, 2, 3)
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy()) if not a.requires_grad else None
    m.train()
    c, _ = m(x)
    assert not np.allclose(c.detach().numpy(), a.detach().numpy())
    assert repr(m) == "LSTM(3, 4, num_layers=2, dropout=0.5)"
