"""Fused optimizers: the update inside backward equals the optimizer applied densely to the
touched rows, over several steps; the state is in the state dict and resumes exactly."""
import tracemalloc

import numpy as np
import pytest
import torch
from rec_helpers import random_features, torch_pooled

import ember
from ember.rec import (EmbeddingBagCollection, EmbeddingBagConfig, EmbeddingCollection,
                       EmbeddingConfig, FusedEmbeddingBagCollection, KeyedJaggedTensor)

B = 6
ROWS = {"f1": 30, "f2": 12, "f3": 30}


def _tables():
    return [EmbeddingBagConfig(name="t1", num_embeddings=30, embedding_dim=4,
                               feature_names=["f1", "f3"]),
            EmbeddingBagConfig(name="t2", num_embeddings=12, embedding_dim=3,
                               feature_names=["f2"], pooling="mean")]


def _batches(n, seed=0):
    rng = np.random.default_rng(seed)
    return [random_features(rng, ["f1", "f2", "f3"], B, ROWS, weighted=True) for _ in range(n)]


def _loss_ember(out, c):
    return (out * c).sum() + 0.5 * (out * out).sum()


def _reference_step(opt, hp, w, state, rows, g, t):
    """The optimizer's dense math applied to rows ``rows`` only (torch, float32)."""
    lr, eps, wd = hp["lr"], hp.get("eps", 1e-8), hp.get("weight_decay", 0.0)
    wr, gr = w[rows], g[rows]
    if opt != "adam" and wd:
        gr = gr + wd * wr
    if opt == "sgd":
        w[rows] = wr - lr * gr
    elif opt == "adagrad":
        state["m"][rows] += gr * gr
        w[rows] = wr - lr * gr / (state["m"][rows].sqrt() + eps)
    elif opt == "rowwise_adagrad":   # FBGEMM: one accumulator per row, the mean of g^2
        state["m"][rows] += (gr * gr).mean(1)
        w[rows] = wr - (lr / (state["m"][rows].sqrt() + eps))[:, None] * gr
    else:
        b1, b2 = hp.get("beta1", 0.9), hp.get("beta2", 0.999)
        state["m"][rows] = b1 * state["m"][rows] + (1 - b1) * gr
        state["v"][rows] = b2 * state["v"][rows] + (1 - b2) * gr * gr
        if wd:
            wr = wr * (1 - lr * wd)
        step = lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
        w[rows] = wr - step * state["m"][rows] / (state["v"][rows].sqrt() + eps)


@pytest.mark.parametrize("opt,hp", [
    ("sgd", {"lr": 0.1}),
    ("sgd", {"lr": 0.1, "weight_decay": 0.01}),
    ("adagrad", {"lr": 0.1, "eps": 1e-8}),
    ("rowwise_adagrad", {"lr": 0.1, "eps": 1e-8}),
    ("rowwise_adagrad", {"lr": 0.1, "eps": 1e-6, "weight_decay": 0.05}),
    ("adam", {"lr": 0.05, "eps": 1e-8}),
    ("adam", {"lr": 0.05, "eps": 1e-6, "weight_decay": 0.1, "beta1": 0.8, "beta2": 0.99}),
])
def test_fused_equals_dense_update_on_touched_rows(opt, hp):
    ebc = FusedEmbeddingBagCollection(_tables(), dict(optimizer=opt, **hp), is_weighted=True)
    tw = {n: torch.from_numpy(m.weight.detach().numpy().copy())
          for n, m in ebc.embedding_bags.items()}
    st = {n: {"m": torch.zeros(tw[n].shape[0]) if opt == "rowwise_adagrad" else
              torch.zeros_like(tw[n]), "v": torch.zeros_like(tw[n])} for n in tw}
    c = np.random.default_rng(9).standard_normal((B, 11)).astype(np.float32)
    for t, (kjt, data) in enumerate(_batches(4), start=1):
        _loss_ember(ebc(kjt).values(), ember.from_numpy(c)).backward()
        assert all(m.weight.grad is None for m in ebc.embedding_bags.values())
        leaves = {n: w.clone().requires_grad_() for n, w in tw.items()}
        outs = []
        for cfg in ebc.embedding_bag_configs():
            for f in cfg.feature_names:
                ids, ln, w = data[f]
                outs.append(torch_pooled(torch, leaves[cfg.name], ids, ln, w,
                                         cfg.pooling.value.lower()))
        out = torch.cat(outs, 1)
        ((out * torch.from_numpy(c)).sum() + 0.5 * (out * out).sum()).backward()
        for cfg in ebc.embedding_bag_configs():
            rows = torch.from_numpy(np.unique(np.concatenate(
                [data[f][0] for f in cfg.feature_names])))
            _reference_step(opt, hp, tw[cfg.name], st[cfg.name], rows,
                            leaves[cfg.name].grad, t)
        for n, m in ebc.embedding_bags.items():
            np.testing.assert_allclose(m.weight.detach().numpy(), tw[n].numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=f"{opt} table {n} step {t}")
    for n, m in ebc.embedding_bags.items():
        assert int(m.step.item()) == 4
        if opt in ("adagrad", "rowwise_adagrad", "adam"):
            np.testing.assert_allclose(m.momentum1.numpy(), st[n]["m"].numpy(), rtol=1e-5,
                                       atol=1e-7)
        if opt == "adam":
            np.testing.assert_allclose(m.momentum2.numpy(), st[n]["v"].numpy(), rtol=1e-5,
                                       atol=1e-9)


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("opt", ["adam", "adagrad"])
def test_fused_matches_torch_sparse_optimizers(opt):
    """Fused "adam" is torch's SparseAdam, fused "adagrad" torch's Adagrad, on the sparse
    gradients of nn.EmbeddingBag(sparse=True)."""
    cfg = EmbeddingBagConfig(name="t", num_embeddings=40, embedding_dim=5, feature_names=["f"])
    ebc = EmbeddingBagCollection([cfg], fused_params={"optimizer": opt, "lr": 0.05,
                                                      "eps": 1e-8})
    tbag = torch.nn.EmbeddingBag(40, 5, mode="sum", sparse=True)
    with torch.no_grad():
        tbag.weight.copy_(torch.from_numpy(ebc.embedding_bags["t"].weight.detach().numpy()))
    topt = torch.optim.SparseAdam(tbag.parameters(), lr=0.05, eps=1e-8) if opt == "adam" else \
        torch.optim.Adagrad(tbag.parameters(), lr=0.05, eps=1e-8)
    rng = np.random.default_rng(4)
    for _ in range(5):
        kjt, data = random_features(rng, ["f"], B, {"f": 40}, max_len=6)
        ids, ln, _ = data["f"]
        c = rng.standard_normal((B, 5)).astype(np.float32)
        (ebc(kjt).values() * ember.from_numpy(c)).pow(2).sum().backward()
        topt.zero_grad()
        offs = torch.from_numpy(np.concatenate([[0], np.cumsum(ln)[:-1]]))
        (tbag(torch.from_numpy(ids), offs) * torch.from_numpy(c)).pow(2).sum().backward()
        topt.step()
    np.testing.assert_allclose(ebc.embedding_bags["t"].weight.detach().numpy(),
                               tbag.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt", ["rowwise_adagrad", "adam"])
def test_state_dict_round_trip_resumes_identically(opt, tmp_path):
    fp = {"optimizer": opt, "lr": 0.05}
    a = FusedEmbeddingBagCollection(_tables(), fp, is_weighted=True)
    keys = set(a.state_dict())
    assert "embedding_bags.t1.weight" in keys and "embedding_bags.t1.momentum1" in keys
    assert "embedding_bags.t1.step" in keys
    assert ("embedding_bags.t1.momentum2" in keys) == (opt == "adam")
    c = ember.from_numpy(np.random.default_rng(5).standard_normal((B, 11)).astype(np.float32))
    batches = _batches(6, seed=1)
    for kjt, _ in batches[:3]:
        _loss_ember(a(kjt).values(), c).backward()
    ember.save(a.state_dict(), tmp_path / "ebc.safetensors")
    b = FusedEmbeddingBagCollection(_tables(), fp, is_weighted=True)   # fresh init
    b.load_state_dict(ember.load(tmp_path / "ebc.safetensors"))
    for kjt, _ in batches[3:]:
        _loss_ember(a(kjt).values(), c).backward()
        _loss_ember(b(kjt).values(), c).backward()
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        np.testing.assert_array_equal(sa[k].numpy(), sb[k].numpy(), err_msg=k)
    assert int(sa["embedding_bags.t1.step"].item()) == 6


def test_shared_table_gets_one_update_per_backward():
    """Two features and two calls on one table: the gradients are summed first, then one
    update (one step of the counter), as for a dense optimizer step."""
    tables = _tables()
    fused = FusedEmbeddingBagCollection(tables, {"optimizer": "adagrad", "lr": 0.1},
                                        is_weighted=True)
    plain = EmbeddingBagCollection(tables, is_weighted=True)
    plain.load_state_dict({k: v for k, v in fused.state_dict().items() if k.endswith("weight")})
    opt = ember.optim.Adagrad(plain.parameters(), lr=0.1, eps=1e-8)
    (kjt1, _), (kjt2, _) = _batches(2, seed=3)
    c = ember.from_numpy(np.random.default_rng(6).standard_normal((B, 11)).astype(np.float32))
    (_loss_ember(fused(kjt1).values(), c) + _loss_ember(fused(kjt2).values(), c)).backward()
    (_loss_ember(plain(kjt1).values(), c) + _loss_ember(plain(kjt2).values(), c)).backward()
    opt.step()
    assert int(fused.embedding_bags["t1"].step.item()) == 1
    for n in ("t1", "t2"):
        np.testing.assert_allclose(fused.embedding_bags[n].weight.detach().numpy(),
                                   plain.embedding_bags[n].weight.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_fused_embedding_collection_and_lr_schedule():
    ec = EmbeddingCollection([EmbeddingConfig(name="t", num_embeddings=10, embedding_dim=2,
                                              feature_names=["f"])],
                             fused_params={"optimizer": "sgd", "lr": 0.5})
    fo = ec.fused_optimizer
    sched = ember.optim.lr_scheduler.StepLR(fo, step_size=1, gamma=0.1)
    w0 = ec.embeddings["t"].weight.detach().numpy().copy()
    kjt = KeyedJaggedTensor.from_lengths_sync(["f"], ember.tensor([3, 3, 5]), ember.tensor([2, 1]))
    ec(kjt)["f"].values().sum().backward()
    fo.step()
    sched.step()
    assert fo.param_groups[0]["lr"] == pytest.approx(0.05)
    ec(kjt)["f"].values().sum().backward()
    w = ec.embeddings["t"].weight.detach().numpy()
    expected = w0.copy()
    expected[3] -= 2 * (0.5 + 0.05)
    expected[5] -= 1 * (0.5 + 0.05)
    np.testing.assert_allclose(w, expected, rtol=1e-6)
    np.testing.assert_array_equal(np.delete(w, [3, 5], 0), np.delete(w0, [3, 5], 0))


def test_fused_params_errors():
    with pytest.raises(ValueError, match="unknown optimizer 'lamb'"):
        EmbeddingBagCollection(_tables(), fused_params={"optimizer": "lamb"})
    with pytest.raises(ValueError, match=r"unknown keys \['momentum'\]"):
        EmbeddingBagCollection(_tables(), fused_params={"optimizer": "sgd", "momentum": 0.9})
    with pytest.raises(ValueError, match="'optimizer' is required"):
        EmbeddingBagCollection(_tables(), fused_params={"lr": 0.1})


def test_meta_build_with_fused_state():
    ebc = FusedEmbeddingBagCollection(_tables(), {"optimizer": "rowwise_adagrad", "lr": 0.1,
                                                  "initial_accumulator_value": 0.5},
                                      device="meta")
    assert ebc.embedding_bags["t1"].momentum1.is_meta
    ebc.to_empty(device="cpu").reset_parameters()
    np.testing.assert_array_equal(ebc.embedding_bags["t1"].momentum1.numpy(), 0.5)
    assert int(ebc.embedding_bags["t1"].step.item()) == 0
    kjt, _ = _batches(1)[0]
    ebc(KeyedJaggedTensor(kjt.keys(), kjt.values(), None, lengths=kjt.lengths())).values() \
        .sum().backward()
    assert int(ebc.embedding_bags["t1"].step.item()) == 1


def test_training_costs_the_touched_rows_only():
    """A 1M x 16 table (64 MB): a fused training step allocates a tiny fraction of it."""
    cfg = EmbeddingBagConfig(name="big", num_embeddings=1_000_000, embedding_dim=16,
                             feature_names=["f"])
    ebc = EmbeddingBagCollection([cfg], fused_params={"optimizer": "rowwise_adagrad",
                                                      "lr": 0.1})
    table_bytes = 1_000_000 * 16 * 4
    rng = np.random.default_rng(0)
    kjt = KeyedJaggedTensor.from_lengths_sync(
        ["f"], ember.from_numpy(rng.integers(0, 1_000_000, 2560)),
        ember.from_numpy(np.full(256, 10)))
    w0 = ebc.embedding_bags["big"].weight.detach().numpy().copy()
    tracemalloc.start()
    try:
        ebc(kjt).values().sum().backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.02 * table_bytes, f"peak {peak} bytes for a {table_bytes}-byte table"
    changed = np.flatnonzero((ebc.embedding_bags["big"].weight.detach().numpy() != w0).any(1))
    np.testing.assert_array_equal(changed, np.unique(kjt.values().numpy()))


def test_deepcopy_trains_the_copy_not_the_original():
    import copy

    a = FusedEmbeddingBagCollection(_tables(), {"optimizer": "adagrad", "lr": 0.1},
                                    is_weighted=True)
    a.fused_optimizer.param_groups[0]["lr"] = 0.2          # e.g. set by a scheduler
    b = copy.deepcopy(a)
    assert b.fused_optimizer is not a.fused_optimizer
    assert b.fused_optimizer.param_groups[0]["lr"] == 0.2
    before = {k: v.numpy().copy() for k, v in a.state_dict().items()}
    kjt, _ = _batches(1)[0]
    b(kjt).values().sum().backward()
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)  # original untouched
    assert int(b.embedding_bags["t1"].step.item()) == 1
    assert b.embedding_bags["t1"].weight.grad is None
    a(kjt).values().sum().backward()
    np.testing.assert_array_equal(a.embedding_bags["t2"].weight.detach().numpy(),
                                  b.embedding_bags["t2"].weight.detach().numpy())
    # a pickled copy (e.g. sent to a worker) keeps training with its own state too
    import pickle

    c = pickle.loads(pickle.dumps(a))
    c(kjt).values().sum().backward()
    assert int(c.embedding_bags["t1"].step.item()) == 2
    assert int(a.embedding_bags["t1"].step.item()) == 1
    assert c.embedding_bags["t1"].weight.grad is None


def test_empty_batch_and_empty_bags():
    ebc = FusedEmbeddingBagCollection(_tables(), {"optimizer": "adam", "lr": 0.1})
    w0 = ebc.embedding_bags["t1"].weight.detach().numpy().copy()
    kjt = KeyedJaggedTensor.from_lengths_sync(["f1", "f2", "f3"],
                                              ember.zeros(0, dtype=ember.int64),
                                              ember.zeros(6, dtype=ember.int64))
    out = ebc(kjt).values()
    assert out.shape == (2, 11) and float(out.abs().sum().item()) == 0
    out.sum().backward()
    np.testing.assert_array_equal(ebc.embedding_bags["t1"].weight.detach().numpy(), w0)
    empty = ember.zeros(0, dtype=ember.int64)
    none = KeyedJaggedTensor.from_lengths_sync(["f1", "f2", "f3"], empty, empty, stride=0)
    assert ebc(none).values().shape == (0, 11)
    assert ebc.device == ember.device("cpu")
