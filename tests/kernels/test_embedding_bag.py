"""The embedding-bag kernels (gather + segment reduce, row dot, fused sparse row updates)
against their numpy references and torch, and their wiring into F.embedding_bag and the
rec pooled lookup."""
import numpy as np
import pytest
import torch

import ember
from ember import kernels
from ember.kernels import embedding_bag as eb

from .test_kernels import DTYPES, close, compiled, needs_numba


def _bags(rng, S, n_max=7, empty=True):
    lens = rng.integers(0 if empty else 1, n_max, S)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return off


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("D", [1, 5, 64])
@pytest.mark.parametrize("scaled", [False, True])
def test_gather_segment_sum_matches_reference_and_torch(dt, D, scaled):
    rng = np.random.default_rng(D)
    W = rng.standard_normal((37, D)).astype(dt)
    off = _bags(rng, 23)
    ids = rng.integers(0, 37, int(off[-1]))
    sc = rng.standard_normal(ids.shape[0]).astype(dt) if scaled else None
    cpu, ref = compiled("gather_segment_sum")
    got, want = cpu(W, ids, off, sc), ref(W, ids, off, sc)
    close(got, want, dt)
    t = torch.nn.functional.embedding_bag(
        torch.from_numpy(ids), torch.from_numpy(W), torch.from_numpy(off[:-1]), mode="sum",
        per_sample_weights=None if sc is None else torch.from_numpy(sc))
    close(got, t.numpy(), dt)
    # int32 ids, a non-contiguous table, offsets not covering every index
    Wn = np.asfortranarray(W)
    close(cpu(Wn, ids.astype(np.int32), off[:-3], None if sc is None else sc),
          ref(W, ids, off[:-3], sc), dt)


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
def test_gather_segment_max_matches_reference_and_torch(dt):
    rng = np.random.default_rng(1)
    W = rng.standard_normal((41, 9)).astype(dt)
    off = _bags(rng, 30)
    ids = rng.integers(0, 41, int(off[-1]))
    sc = rng.uniform(0.5, 2, ids.shape[0]).astype(dt)
    cpu, ref = compiled("gather_segment_max")
    for s in (None, sc):
        (m1, a1), (m2, a2) = cpu(W, ids, off, s, -3.0), ref(W, ids, off, s, -3.0)
        close(m1, m2, dt)
        np.testing.assert_array_equal(a1, a2)
    m, a = cpu(W, ids, off)
    assert (m[np.diff(off) == 0] == 0).all() and (a[np.diff(off) == 0] == -1).all()
    t = torch.nn.functional.embedding_bag(torch.from_numpy(ids), torch.from_numpy(W),
                                          torch.from_numpy(off[:-1]), mode="max")
    close(m, t.numpy(), dt)
    Wnan = W.copy()
    Wnan[ids[off[2]], 3] = np.nan
    if off[3] > off[2]:
        assert np.isnan(cpu(Wnan, ids, off)[0][2, 3])


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
def test_gather_rowdot(dt):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((10, 7)).astype(dt), rng.standard_normal((6, 7)).astype(dt)
    ia, ib = rng.integers(0, 10, 50), rng.integers(0, 6, 50)
    cpu, ref = compiled("gather_rowdot")
    close(cpu(a, ia, b[:, :], ib), ref(a, ia, b, ib), dt)
    close(cpu(a[:, ::1], ia, np.asfortranarray(b), ib), (a[ia] * b[ib]).sum(1), dt)


def test_bad_index_raises_named_error():
    W = np.zeros((4, 2), np.float32)
    for k in ("gather_segment_sum", "gather_segment_max"):
        with pytest.raises(IndexError, match="index out of range"):
            kernels.get(k, W)(W, np.array([0, 4]), np.array([0, 2]))
        with pytest.raises(ValueError, match="offsets must be non-decreasing"):
            kernels.get(k, W)(W, np.array([0, 1]), np.array([0, 2, 1]))
    with pytest.raises(ValueError, match="unknown optimizer"):
        eb.sparse_row_update("lamb", W, {}, np.array([0]), np.zeros((1, 2), np.float32), {})


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("opt", ["sgd", "adagrad", "rowwise_adagrad", "adam"])
@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_sparse_row_update_matches_reference(dt, opt, wd):
    rng = np.random.default_rng(3)
    W = rng.standard_normal((50, 13)).astype(dt)
    shapes = {"adagrad": {"momentum1": (50, 13)}, "rowwise_adagrad": {"momentum1": (50,)},
              "adam": {"momentum1": (50, 13), "momentum2": (50, 13)}}.get(opt, {})
    st = {k: rng.uniform(0, 1, s).astype(dt) for k, s in shapes.items()}
    rows = rng.choice(50, 17, replace=False)
    G = rng.standard_normal((17, 13)).astype(dt)
    hp = dict(lr=0.05, eps=1e-8, weight_decay=wd, beta1=0.9, beta2=0.999, t=3)
    W2, st2 = W.copy(), {k: v.copy() for k, v in st.items()}
    cpu, ref = compiled("sparse_row_update")
    cpu(opt, W, st, rows, G, hp)
    ref(opt, W2, st2, rows, G, hp)
    close(W, W2, dt, 10)
    for k in st:
        close(st[k], st2[k], dt, 10)
    untouched = np.setdiff1d(np.arange(50), rows)
    assert np.array_equal(W[untouched], W2[untouched])


@needs_numba
def test_sparse_adam_rows_match_torch_sparse_adam():
    rng = np.random.default_rng(4)
    w0 = rng.standard_normal((30, 8)).astype(np.float32)
    W = w0.copy()
    st = {"momentum1": np.zeros_like(W), "momentum2": np.zeros_like(W)}
    tw = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = torch.optim.SparseAdam([tw], lr=0.01, eps=1e-8)
    for t in range(1, 4):
        rows = np.sort(rng.choice(30, 11, replace=False))
        G = rng.standard_normal((11, 8)).astype(np.float32)
        eb.sparse_row_update("adam", W, st, rows, G, dict(lr=0.01, eps=1e-8, weight_decay=0.0,
                                                          beta1=0.9, beta2=0.999, t=t))
        tw.grad = torch.sparse_coo_tensor(torch.from_numpy(rows)[None], torch.from_numpy(G),
                                          (30, 8))
        opt.step()
    np.testing.assert_allclose(W, tw.detach().numpy(), rtol=1e-5, atol=1e-6)


@needs_numba
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("psw", [False, True])
def test_functional_embedding_bag_same_in_both_modes_and_torch(mode, psw):
    if psw and mode != "sum":
        pytest.skip("per_sample_weights: mode 'sum' only")
    rng = np.random.default_rng(5)
    W = rng.standard_normal((40, 6)).astype(np.float32)
    off = _bags(rng, 12)
    ids = rng.integers(0, 40, int(off[-1]))
    pw = rng.uniform(0.5, 2, ids.shape[0]).astype(np.float32) if psw else None
    outs = []
    for m in ("auto", "numpy"):
        old = kernels.set_mode(m)
        try:
            w = ember.tensor(W, requires_grad=True)
            p = ember.tensor(pw, requires_grad=True) if psw else None
            y = ember.nn.functional.embedding_bag(ember.from_numpy(ids), w,
                                                  ember.from_numpy(off[:-1]), mode=mode,
                                                  per_sample_weights=p)
            (y * ember.from_numpy(np.arange(y.numel(), dtype=np.float32).reshape(y.shape))
             ).sum().backward()
            outs.append((y.detach().numpy(), w.grad.numpy(), None if p is None else p.grad.numpy()))
        finally:
            kernels.set_mode(old)
    tw = torch.from_numpy(W).requires_grad_()
    tp = torch.from_numpy(pw).requires_grad_() if psw else None
    ty = torch.nn.functional.embedding_bag(torch.from_numpy(ids), tw,
                                           torch.from_numpy(off[:-1]), mode=mode,
                                           per_sample_weights=tp)
    (ty * torch.arange(ty.numel(), dtype=torch.float32).reshape(ty.shape)).sum().backward()
    for a, b in zip(outs[0], outs[1]):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[0][0], ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[0][1], tw.grad.numpy(), rtol=1e-5, atol=1e-4)
    if psw:
        np.testing.assert_allclose(outs[0][2], tp.grad.numpy(), rtol=1e-5, atol=1e-4)


@needs_numba
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("fused", [None, "adam", "rowwise_adagrad", "adagrad", "sgd"])
def test_rec_lookup_same_in_both_modes(mode, fused):
    from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor

    if fused is not None and mode == "max":
        pytest.skip("one pooling is enough for the fused optimizers")
    rng = np.random.default_rng(6)
    lengths = rng.integers(0, 5, (2, 9))
    ids = rng.integers(0, 25, int(lengths.sum()))
    psw = rng.uniform(0.5, 2, ids.shape[0]).astype(np.float32)
    w0 = rng.standard_normal((25, 4)).astype(np.float32)
    results = []
    for m in ("auto", "numpy"):
        old = kernels.set_mode(m)
        try:
            cfg = [EmbeddingBagConfig(name="t", num_embeddings=25, embedding_dim=4,
                                      feature_names=["a", "b"], pooling=mode)]
            kw = {} if fused is None else {"fused_params": {"optimizer": fused, "lr": 0.1,
                                                           "weight_decay": 0.01}}
            ebc = EmbeddingBagCollection(cfg, is_weighted=True, **kw)
            ebc.embedding_bags["t"].weight.array[...] = w0
            kjt = KeyedJaggedTensor.from_lengths_sync(
                ["a", "b"], ember.from_numpy(ids), ember.from_numpy(lengths.reshape(-1)),
                weights=ember.tensor(psw, requires_grad=True))
            for _ in range(2):
                out = ebc(kjt).values()
                (out * ember.from_numpy(np.arange(out.numel(), dtype=np.float32).reshape(
                    out.shape))).sum().backward()
            w = ebc.embedding_bags["t"].weight
            g = None if w.grad is None else w.grad.to_dense().numpy()
            results.append((out.detach().numpy(), g, w.detach().numpy().copy(),
                            kjt.weights().grad.numpy()))
        finally:
            kernels.set_mode(old)
    for a, b in zip(*results):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
