"""The LSTM/GRU gate kernels against their numpy references, and nn.LSTM / nn.GRU with the
kernels against torch (outputs and every gradient)."""
import numpy as np
import pytest
import torch

import ember
from ember import kernels

from .test_kernels import DTYPES, close, compiled, needs_numba


def _block(rng, n, cols, dt, strided):
    """(n, cols) values; ``strided``: a column block of a wider array (unit-stride rows, not
    C-contiguous)."""
    a = rng.standard_normal((n, cols + 3)).astype(dt) * 3
    return a[:, 2:2 + cols] if strided else np.ascontiguousarray(a[:, :cols])


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n,H", [(1, 1), (3, 5), (7, 33)])
@pytest.mark.parametrize("strided", [False, True])
def test_lstm_cell_forward_backward(dt, n, H, strided):
    rng = np.random.default_rng(n * H)
    x, hp = _block(rng, n, 4 * H, dt, strided), _block(rng, n, 4 * H, dt, False)
    c0 = rng.standard_normal((n, H)).astype(dt)
    fwd, fref = compiled("lstm_cell")
    res = []
    for fn in (fwd, fref):
        c = c0.copy()
        bufs = [np.empty((n, 4 * H), dt)] + [np.empty((n, H), dt) for _ in range(3)]
        fn(x, hp, c, *bufs)
        res.append([c] + bufs)
    for a, b in zip(*res):
        close(a, b, dt, 10)
    act, cp, tc = res[1][1:4]
    d = _block(rng, n, H, dt, strided)
    dc0 = rng.standard_normal((n, H)).astype(dt)
    bwd, bref = compiled("lstm_cell_backward")
    out = []
    for fn in (bwd, bref):
        dc, da = dc0.copy(), np.empty((n, 4 * H), dt)
        fn(d, act, cp, tc, dc, da)
        out.append((dc, da))
    for a, b in zip(*out):
        close(a, b, dt)


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n,H", [(1, 1), (4, 7), (5, 40)])
def test_gru_cell_forward_backward(dt, n, H):
    rng = np.random.default_rng(n + H)
    x, hp = _block(rng, n, 3 * H, dt, True), _block(rng, n, 3 * H, dt, False)
    h0 = rng.standard_normal((n, H)).astype(dt)
    fwd, fref = compiled("gru_cell")
    res = []
    for fn in (fwd, fref):
        h, act = h0.copy(), np.empty((n, 4 * H), dt)
        fn(x, hp, h, act)
        res.append((h, act))
    for a, b in zip(*res):
        close(a, b, dt, 10)
    d = _block(rng, n, H, dt, True)
    bwd, bref = compiled("gru_cell_backward")
    out = []
    for fn in (bwd, bref):
        bufs = (np.empty((n, 3 * H), dt), np.empty((n, 3 * H), dt), np.empty((n, H), dt))
        fn(d, res[1][1], h0, *bufs)
        out.append(bufs)
    for a, b in zip(*out):
        close(a, b, dt)


def test_bad_shape_names_the_input():
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(ValueError, match="hp must have shape"):
        kernels.lookup("lstm_cell").cpu(x, x[:, :4], np.zeros((2, 2), np.float32), x, *(
            np.zeros((2, 2), np.float32) for _ in range(3)))


def test_saturated_gates_stay_finite():
    """Large pre-activations: sigmoid/tanh saturate to 0/1 and -1/1 without inf or NaN."""
    x = np.array([[200.0, -200.0, 200.0, -200.0]], np.float32)
    c = np.array([[1.0]], np.float32)
    bufs = [np.empty((1, 4), np.float32)] + [np.empty((1, 1), np.float32) for _ in range(3)]
    kernels.get("lstm_cell", x)(x, np.zeros_like(x), c, *bufs)
    np.testing.assert_allclose(bufs[0], [[1, 0, 1, 0]], atol=1e-6)
    assert np.isfinite(c).all() and np.isfinite(bufs[3]).all()


@needs_numba
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("packed", [False, True])
def test_rnn_layers_match_torch_with_kernels(cls, packed):
    rng = np.random.default_rng(0)
    kw = dict(num_layers=2, bidirectional=True)
    if cls == "LSTM":
        kw["proj_size"] = 0 if packed else 3
    em, tm = getattr(ember.nn, cls)(6, 5, **kw), getattr(torch.nn, cls)(6, 5, **kw)
    with torch.no_grad():
        for name, p in tm.named_parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = rng.standard_normal((7, 3, 6)).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    if packed:
        lens = [7, 5, 2]
        ein = ember.nn.utils.rnn.pack_padded_sequence(ex, lens)
        tin = torch.nn.utils.rnn.pack_padded_sequence(tx, lens)
        eo, to = em(ein)[0].data, tm(tin)[0].data
    else:
        eo, to = em(ex)[0], tm(tx)[0]
    w = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    (eo * ember.from_numpy(w)).sum().backward()
    (to * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    eg = dict(em.named_parameters())
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(eg[name].grad.numpy(), p.grad.numpy(), rtol=1e-4,
                                   atol=1e-4, err_msg=name)
