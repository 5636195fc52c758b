"""EmbeddingBagCollection / EmbeddingCollection against torch twins with the same weights."""
import numpy as np
import pytest
import torch
from rec_helpers import random_features, torch_pooled

import ember
from ember.rec import (EmbeddingBagCollection, EmbeddingBagConfig, EmbeddingCollection,
                       EmbeddingConfig, KeyedJaggedTensor, PoolingType)
from ember.sparse import RowSparseGrad

B = 5


def _np(t):
    return t.detach().numpy()


def _tables(pooling):
    # t1 is shared by two features; t2 has a different dim
    return [EmbeddingBagConfig(name="t1", num_embeddings=20, embedding_dim=4,
                               feature_names=["f1", "f3"], pooling=pooling),
            EmbeddingBagConfig(name="t2", num_embeddings=7, embedding_dim=3,
                               feature_names=["f2"], pooling=pooling)]


def _twin(ebc, data, weighted, mode):
    """torch (B, total) output and the torch weights (leaves) per table."""
    tw = {n: torch.from_numpy(m.weight.detach().numpy().copy()).requires_grad_()
          for n, m in ebc.embedding_bags.items()}
    outs = []
    for cfg in ebc.embedding_bag_configs():
        for f in cfg.feature_names:
            ids, ln, w = data[f]
            outs.append(torch_pooled(torch, tw[cfg.name], ids, ln, w if weighted else None, mode))
    return torch.cat(outs, 1), tw


@pytest.mark.parametrize("pooling", [PoolingType.SUM, PoolingType.MEAN, PoolingType.MAX])
@pytest.mark.parametrize("weighted", [False, True])
def test_ebc_forward_backward_match_torch(pooling, weighted):
    rng = np.random.default_rng(0)
    ebc = EmbeddingBagCollection(_tables(pooling), is_weighted=weighted)
    # KJT key order differs from the table order: f2, f3, f1 (t1's features not adjacent)
    kjt, data = random_features(rng, ["f2", "f3", "f1"], B, {"f1": 20, "f2": 7, "f3": 20},
                                weighted=weighted)
    kt = ebc(kjt)
    assert kt.keys() == ["f1", "f3", "f2"] and kt.length_per_key() == [4, 4, 3]
    mode = pooling.value.lower()
    ref, tw = _twin(ebc, data, weighted, mode)
    np.testing.assert_allclose(_np(kt.values()), _np(ref), rtol=1e-5, atol=1e-6)
    gout = rng.standard_normal(ref.shape).astype(np.float32)
    (kt.values() * ember.from_numpy(gout)).sum().backward()
    (ref * torch.from_numpy(gout)).sum().backward()
    for name, m in ebc.embedding_bags.items():
        g = m.weight.grad
        assert isinstance(g, RowSparseGrad) and g.is_coalesced()
        assert np.all(np.diff(g.indices) > 0)        # sorted unique rows: one per touched id
        np.testing.assert_allclose(_np(g.to_dense()), _np(tw[name].grad), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_per_sample_weight_gradient(mode):
    rng = np.random.default_rng(1)
    ebc = EmbeddingBagCollection(_tables(PoolingType(mode.upper())), is_weighted=True)
    kjt, data = random_features(rng, ["f1", "f2", "f3"], B, {"f1": 20, "f2": 7, "f3": 20},
                                weighted=True)
    w = ember.from_numpy(kjt.weights().detach().numpy().copy()).requires_grad_()
    kjt = KeyedJaggedTensor(kjt.keys(), kjt.values(), w, lengths=kjt.lengths())
    gout = rng.standard_normal((B, 11)).astype(np.float32)
    (ebc(kjt).values() * ember.from_numpy(gout)).sum().backward()
    tws = torch.from_numpy(w.detach().numpy().copy()).requires_grad_()
    tw = {n: torch.from_numpy(_np(m.weight).copy()) for n, m in ebc.embedding_bags.items()}
    outs, start = [], 0
    spans = {}
    for f in ["f1", "f2", "f3"]:
        n = data[f][0].shape[0]
        spans[f] = (start, start + n)
        start += n
    for cfg in ebc.embedding_bag_configs():
        for f in cfg.feature_names:
            ids, ln, _ = data[f]
            a, b = spans[f]
            rows = tw[cfg.name][torch.from_numpy(ids)] * tws[a:b, None]
            bags, s = [], 0
            for k in ln.tolist():
                r = rows[s:s + k]
                s += k
                z = torch.zeros(cfg.embedding_dim)
                bags.append(z if k == 0 else r.sum(0) if mode == "sum" else
                            r.sum(0) / k if mode == "mean" else r.max(0).values)
            outs.append(torch.stack(bags))
    (torch.cat(outs, 1) * torch.from_numpy(gout)).sum().backward()
    np.testing.assert_allclose(_np(w.grad), _np(tws.grad), rtol=1e-5, atol=1e-6)


def test_ebc_state_dict_keys_and_init_range():
    ebc = EmbeddingBagCollection([
        EmbeddingBagConfig(name="a", num_embeddings=100, embedding_dim=8, feature_names=["x"]),
        EmbeddingBagConfig(name="b", num_embeddings=50, embedding_dim=4, feature_names=["y"],
                           weight_init_min=0.5, weight_init_max=0.6)])
    assert list(ebc.state_dict()) == ["embedding_bags.a.weight", "embedding_bags.b.weight"]
    a = ebc.embedding_bags["a"].weight.detach().numpy()
    assert np.abs(a).max() <= 0.1 and np.abs(a).max() > 0.05   # +-sqrt(1/100)
    b = ebc.embedding_bags["b"].weight.detach().numpy()
    assert b.min() >= 0.5 and b.max() <= 0.6
    torch_ebc_keys = {"embedding_bags.a.weight": (100, 8), "embedding_bags.b.weight": (50, 4)}
    assert {k: tuple(v.shape) for k, v in ebc.state_dict().items()} == torch_ebc_keys


def test_shared_feature_names_get_table_suffix():
    ebc = EmbeddingBagCollection([
        EmbeddingBagConfig(name="a", num_embeddings=5, embedding_dim=2, feature_names=["x"]),
        EmbeddingBagConfig(name="b", num_embeddings=5, embedding_dim=3, feature_names=["x"])])
    kjt = KeyedJaggedTensor.from_lengths_sync(["x"], ember.tensor([1, 2]), ember.tensor([1, 1]))
    kt = ebc(kjt)
    assert kt.keys() == ["x@a", "x@b"] and kt.values().shape == (2, 5)
    np.testing.assert_allclose(kt["x@b"].detach().numpy(),
                               ebc.embedding_bags["b"].weight.detach().numpy()[[1, 2]], rtol=1e-6)


def test_ebc_errors_name_the_problem():
    ebc = EmbeddingBagCollection(_tables(PoolingType.SUM), is_weighted=True)
    kjt = KeyedJaggedTensor.from_lengths_sync(["f1", "f2"], ember.tensor([1, 2]),
                                              ember.tensor([1, 1]))
    with pytest.raises(ValueError, match="has no weights"):
        ebc(kjt)
    with pytest.raises(KeyError, match="feature 'f3' is not in the KeyedJaggedTensor"):
        EmbeddingBagCollection(_tables(PoolingType.SUM))(kjt)
    bad = KeyedJaggedTensor.from_lengths_sync(["f1", "f2", "f3"], ember.tensor([1, -1, 2]),
                                              ember.tensor([1, 1, 1]))
    with pytest.raises(IndexError, match=r"id -1 is outside table 't2' \(num_embeddings=7"):
        EmbeddingBagCollection(_tables(PoolingType.SUM))(bad)
    with pytest.raises(ValueError, match="duplicate table name"):
        EmbeddingBagCollection(_tables(PoolingType.SUM) * 2)


def test_fp16_table():
    cfg = EmbeddingBagConfig(name="h", num_embeddings=10, embedding_dim=4, feature_names=["f"],
                             data_type="fp16")
    ebc = EmbeddingBagCollection([cfg])
    w = ebc.embedding_bags["h"].weight
    assert w.dtype == np.float16
    kjt = KeyedJaggedTensor.from_lengths_sync(["f"], ember.tensor([1, 2, 3]), ember.tensor([2, 1]))
    out = ebc(kjt).values()
    ref = w.detach().numpy().astype(np.float32)
    np.testing.assert_allclose(out.detach().numpy().astype(np.float32),
                               [ref[1] + ref[2], ref[3]], rtol=2e-3, atol=1e-3)


def test_meta_build_then_to_empty_and_reset():
    tables = _tables(PoolingType.SUM)
    ebc = EmbeddingBagCollection(tables, device="meta")
    w = ebc.embedding_bags["t1"].weight
    assert w.is_meta and w.shape == (20, 4)
    ebc.to_empty(device="cpu")
    ebc.reset_parameters()
    a = ebc.embedding_bags["t1"].weight.detach().numpy()
    assert not ebc.embedding_bags["t1"].weight.is_meta
    assert np.abs(a).max() <= (1 / 20) ** 0.5 and np.unique(a).size > 50
    kjt, _ = random_features(np.random.default_rng(0), ["f1", "f2", "f3"], 3,
                             {"f1": 20, "f2": 7, "f3": 20})
    assert ebc(kjt).values().shape == (3, 11)
    # a meta-built module also loads a real state dict
    other = EmbeddingBagCollection(tables, device="meta").to_empty(device="cpu")
    other.load_state_dict(ebc.state_dict())
    np.testing.assert_array_equal(_np(other(kjt).values()), _np(ebc(kjt).values()))


def test_double_backward_through_the_lookup():
    ebc = EmbeddingBagCollection(_tables(PoolingType.SUM))
    kjt, _ = random_features(np.random.default_rng(2), ["f1", "f2", "f3"], 3,
                             {"f1": 20, "f2": 7, "f3": 20})
    w = ebc.embedding_bags["t1"].weight
    out = ebc(kjt).values()
    (g,) = ember.autograd.grad(out.pow(2).sum(), [w], create_graph=True)
    g.pow(2).sum().backward()
    tw = torch.from_numpy(w.detach().numpy().copy()).requires_grad_()
    d = kjt.to_dict()
    cols = []
    for f in ["f1", "f3"]:
        ids = d[f].values().detach().numpy()
        ln = d[f].lengths().detach().numpy()
        cols.append(torch_pooled(torch, tw, ids, ln, None, "sum", manual=True))
    t_out = torch.cat(cols, 1)
    (tg,) = torch.autograd.grad(t_out.pow(2).sum(), [tw], create_graph=True)
    tg.pow(2).sum().backward()
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.to_dense().detach().numpy() if w.grad.is_sparse else
                               _np(w.grad), _np(tw.grad), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------ EmbeddingCollection

def test_ec_matches_torch_embedding():
    rng = np.random.default_rng(3)
    ec = EmbeddingCollection([
        EmbeddingConfig(name="t1", num_embeddings=20, embedding_dim=4,
                        feature_names=["f1", "f3"]),
        EmbeddingConfig(name="t2", num_embeddings=7, embedding_dim=4, feature_names=["f2"])],
        need_indices=True)
    assert list(ec.state_dict()) == ["embeddings.t1.weight", "embeddings.t2.weight"]
    kjt, data = random_features(rng, ["f3", "f2", "f1"], B, {"f1": 20, "f2": 7, "f3": 20})
    out = ec(kjt)
    assert set(out) == {"f1", "f2", "f3"} and ec.embedding_dim() == 4
    tw = {n: torch.from_numpy(m.weight.detach().numpy().copy()).requires_grad_()
          for n, m in ec.embeddings.items()}
    loss_e, loss_t = 0, 0
    for f, t in [("f1", "t1"), ("f3", "t1"), ("f2", "t2")]:
        ids, ln, _ = data[f]
        ref = torch.nn.functional.embedding(torch.from_numpy(ids), tw[t])
        np.testing.assert_allclose(_np(out[f].values()), _np(ref), rtol=1e-6)
        assert out[f].lengths().tolist() == ln.tolist()
        assert out[f].weights().tolist() == ids.tolist()          # need_indices
        gw = rng.standard_normal(ref.shape).astype(np.float32)
        loss_e = loss_e + (out[f].values() * ember.from_numpy(gw)).sum()
        loss_t = loss_t + (ref * torch.from_numpy(gw)).sum()
    loss_e.backward()
    loss_t.backward()
    for n, m in ec.embeddings.items():
        assert m.weight.grad.is_sparse
        np.testing.assert_allclose(_np(m.weight.grad.to_dense()), _np(tw[n].grad),
                                   rtol=1e-5, atol=1e-6)


def test_ec_keeps_a_batch_size_per_key():
    ec = EmbeddingCollection([EmbeddingConfig(name="t", num_embeddings=9, embedding_dim=2,
                                              feature_names=["a", "b"])])
    kjt = KeyedJaggedTensor(["a", "b"], ember.tensor([1, 2, 3, 4, 5]),
                            lengths=ember.tensor([1, 0, 2, 1, 1]),
                            stride_per_key_per_rank=[[3], [2]])
    out = ec(kjt)
    assert out["a"].lengths().tolist() == [1, 0, 2] and out["b"].lengths().tolist() == [1, 1]
    w = ec.embeddings["t"].weight.detach().numpy()
    np.testing.assert_array_equal(out["b"].values().detach().numpy(), w[[4, 5]])


def test_big_tables_initialise_in_blocks(monkeypatch):
    import ember.rec.modules.embedding_modules as em

    monkeypatch.setattr(em, "_INIT_BLOCK", 64)        # 8 rows of 8 per block
    ebc = EmbeddingBagCollection([EmbeddingBagConfig(name="t", num_embeddings=100,
                                                     embedding_dim=8, feature_names=["f"],
                                                     weight_init_min=1.0, weight_init_max=2.0)])
    w = ebc.embedding_bags["t"].weight.detach().numpy()
    assert w.min() >= 1.0 and w.max() <= 2.0 and np.unique(w).size == w.size
