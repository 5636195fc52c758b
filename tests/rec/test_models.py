"""DLRM, DLRM_DCN, DLRMTrain, TwoTower (in-batch negatives), SimpleDeepFMNN and
MatrixFactorization against torch twins built here from torch.nn (same weights, same
state-dict keys), plus shapes and errors."""
import doctest
import importlib

import numpy as np
import pytest
import torch

import ember
from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
from ember.rec.datasets import Batch
from ember.rec.models import (DLRM, DLRM_DCN, DLRMTrain, MatrixFactorization,
                              SimpleDeepFMNN, TwoTower, TwoTowerTrainTask, choose)
from rec_helpers import random_features

KEYS = ["f1", "f2", "f3"]
ROWS = {"f1": 11, "f2": 7, "f3": 13}
D = 4


def _ebc(keys=KEYS, dim=D, shared=False):
    if shared:   # f1 and f2 share a table
        cfgs = [EmbeddingBagConfig(name="t12", num_embeddings=13, embedding_dim=dim,
                                   feature_names=["f1", "f2"]),
                EmbeddingBagConfig(name="t3", num_embeddings=13, embedding_dim=dim,
                                   feature_names=["f3"])]
    else:
        cfgs = [EmbeddingBagConfig(name=f"t_{k}", num_embeddings=ROWS[k], embedding_dim=dim,
                                   feature_names=[k]) for k in keys]
    return EmbeddingBagCollection(cfgs)


# ---------------------------------------------------------------- torch twins (torch.nn only)
class TPerceptron(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self._linear = torch.nn.Linear(i, o)

    def forward(self, x):
        return torch.relu(self._linear(x))


class TMLP(torch.nn.Module):
    def __init__(self, i, sizes):
        super().__init__()
        s = [i] + list(sizes)
        self._mlp = torch.nn.Sequential(*[TPerceptron(s[j], s[j + 1]) for j in range(len(sizes))])

    def forward(self, x):
        return self._mlp(x)


class TEBC(torch.nn.Module):
    """Tables in config order; pooled sums per feature, features in the collection's order."""

    def __init__(self, ebc):
        super().__init__()
        self.cfgs = ebc.embedding_bag_configs()
        self.embedding_bags = torch.nn.ModuleDict({
            c.name: torch.nn.EmbeddingBag(c.num_embeddings, c.embedding_dim, mode="sum")
            for c in self.cfgs})

    def forward(self, data):   # data[k] = (ids, lengths, weights) numpy
        outs = []
        for c in self.cfgs:
            for f in c.feature_names:
                ids, lens, _ = data[f]
                offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
                outs.append(self.embedding_bags[c.name](torch.from_numpy(ids),
                                                        torch.from_numpy(offs)))
        return outs


class TSparseArch(torch.nn.Module):
    def __init__(self, ebc):
        super().__init__()
        self.embedding_bag_collection = TEBC(ebc)

    def forward(self, data):
        return torch.stack(self.embedding_bag_collection(data), 1)   # (B, F, D)


class TDenseArch(torch.nn.Module):
    def __init__(self, i, sizes):
        super().__init__()
        self.model = TMLP(i, sizes)

    def forward(self, x):
        return self.model(x)


class TOverArch(torch.nn.Module):
    def __init__(self, i, sizes):
        super().__init__()
        self.model = torch.nn.Sequential(TMLP(i, sizes[:-1]),
                                         torch.nn.Linear(sizes[-2], sizes[-1]))

    def forward(self, x):
        return self.model(x)


class TCrossNet(torch.nn.Module):
    def __init__(self, n, layers, rank):
        super().__init__()
        self.W_kernels = torch.nn.ParameterList([torch.nn.Parameter(torch.empty(n, rank))
                                                 for _ in range(layers)])
        self.V_kernels = torch.nn.ParameterList([torch.nn.Parameter(torch.empty(rank, n))
                                                 for _ in range(layers)])
        self.bias = torch.nn.ParameterList([torch.nn.Parameter(torch.empty(n, 1))
                                            for _ in range(layers)])

    def forward(self, x):
        x0 = x.unsqueeze(2)
        xl = x0
        for w, v, b in zip(self.W_kernels, self.V_kernels, self.bias):
            xl = x0 * (w @ (v @ xl) + b) + xl
        return xl.squeeze(2)


class TDotInter(torch.nn.Module):
    def forward(self, dense, sparse):
        c = torch.cat([dense.unsqueeze(1), sparse], 1)
        z = torch.bmm(c, c.transpose(1, 2))
        r, k = torch.triu_indices(c.shape[1], c.shape[1], 1)
        return torch.cat([dense, z[:, r, k]], 1)


class TDCNInter(torch.nn.Module):
    def __init__(self, n, layers, rank):
        super().__init__()
        self.crossnet = TCrossNet(n, layers, rank)

    def forward(self, dense, sparse):
        return self.crossnet(torch.cat([dense.unsqueeze(1), sparse], 1).flatten(1))


class TDLRM(torch.nn.Module):
    def __init__(self, ebc, dense_in, dense_sizes, over_sizes, dcn=None):
        super().__init__()
        F = sum(len(c.feature_names) for c in ebc.embedding_bag_configs())
        self.sparse_arch = TSparseArch(ebc)
        self.dense_arch = TDenseArch(dense_in, dense_sizes)
        if dcn is None:
            self.inter_arch = TDotInter()
            over_in = D + choose(F + 1, 2)
        else:
            self.inter_arch = TDCNInter((F + 1) * D, *dcn)
            over_in = (F + 1) * D
        self.over_arch = TOverArch(over_in, over_sizes)

    def forward(self, dense, data):
        return self.over_arch(self.inter_arch(self.dense_arch(dense), self.sparse_arch(data)))


def _to_torch(module, twin):
    """Load ``module``'s state into ``twin`` (strict: the key names must agree)."""
    sd = {k: torch.from_numpy(v.numpy().copy()) for k, v in module.state_dict().items()}
    twin.load_state_dict(sd, strict=True)


def _np(t):
    return t.detach().numpy()


def _compare_grads(model, twin, rtol=1e-4, atol=1e-5):
    tp = dict(twin.named_parameters())
    names = [n for n, _ in model.named_parameters()]
    assert sorted(names) == sorted(tp)
    for n, p in model.named_parameters():
        g = p.grad
        g = g.to_dense() if g.is_sparse else g
        np.testing.assert_allclose(_np(g), tp[n].grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=n)


def _inputs(seed=0, B=6, keys=KEYS, rows=ROWS, dense_in=5):
    rng = np.random.default_rng(seed)
    kjt, data = random_features(rng, keys, B, rows)
    dense = rng.standard_normal((B, dense_in)).astype(np.float32)
    labels = rng.integers(0, 2, B)
    return kjt, data, dense, labels


# ------------------------------------------------------------------------------------ DLRM
def test_dlrm_state_dict_keys_are_torchrecs():
    m = DLRM(_ebc(), 5, [8, D], [6, 1])
    keys = set(m.state_dict())
    assert {"sparse_arch.embedding_bag_collection.embedding_bags.t_f1.weight",
            "dense_arch.model._mlp.0._linear.weight", "dense_arch.model._mlp.1._linear.bias",
            "over_arch.model.0._mlp.0._linear.weight", "over_arch.model.1.weight",
            "over_arch.model.1.bias"} <= keys
    assert m.over_arch.model[1].weight.shape == (1, 6)
    assert m.over_arch.model[0]._mlp[0]._linear.weight.shape == (6, D + choose(4, 2))
    t = DLRMTrain(m)
    assert "model.over_arch.model.1.weight" in t.state_dict()


@pytest.mark.parametrize("shared", [False, True])
def test_dlrm_forward_backward_vs_torch(shared):
    ebc = _ebc(shared=shared)
    m = DLRM(ebc, 5, [8, D], [6, 3, 1])
    twin = TDLRM(ebc, 5, [8, D], [6, 3, 1])
    _to_torch(m, twin)
    rows = {"f1": 13, "f2": 13, "f3": 13} if shared else ROWS
    kjt, data, dense, labels = _inputs(rows=rows)
    batch = Batch(ember.from_numpy(dense), kjt, ember.from_numpy(labels))
    loss, (l_det, logits, lab) = DLRMTrain(m)(batch)
    t_logits = twin(torch.from_numpy(dense), data).squeeze(-1)
    t_loss = torch.nn.functional.binary_cross_entropy_with_logits(
        t_logits, torch.from_numpy(labels).float())
    np.testing.assert_allclose(_np(logits), _np(t_logits), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(loss), t_loss.item(), rtol=1e-5)
    assert float(l_det) == float(loss) and not l_det.requires_grad
    assert lab.tolist() == labels.tolist() and logits.shape == (6,)
    loss.backward()
    t_loss.backward()
    _compare_grads(m, twin)


def test_dlrm_dcn_forward_backward_vs_torch():
    ebc = _ebc()
    m = DLRM_DCN(ebc, 5, [8, D], [6, 1], dcn_num_layers=2, dcn_low_rank_dim=3)
    with ember.no_grad():   # non-zero biases, so the test sees them used
        for b in m.inter_arch.crossnet.bias:
            b.array[:] = np.random.default_rng(1).standard_normal(b.shape).astype(np.float32)
    assert "inter_arch.crossnet.W_kernels.1" in m.state_dict()
    twin = TDLRM(ebc, 5, [8, D], [6, 1], dcn=(2, 3))
    _to_torch(m, twin)
    kjt, data, dense, _ = _inputs(seed=3)
    out = m(ember.from_numpy(dense), kjt)
    t_out = twin(torch.from_numpy(dense), data)
    np.testing.assert_allclose(_np(out), _np(t_out), rtol=1e-4, atol=1e-5)
    g = np.random.default_rng(2).standard_normal(out.shape).astype(np.float32)
    (out * ember.from_numpy(g)).sum().backward()
    (t_out * torch.from_numpy(g)).sum().backward()
    _compare_grads(m, twin)


def test_dlrm_trains_with_fused_tables():
    """A few steps of a fused-Adagrad DLRM lower the loss on a fixed batch."""
    ebc = EmbeddingBagCollection(
        [EmbeddingBagConfig(name=f"t_{k}", num_embeddings=ROWS[k], embedding_dim=D,
                            feature_names=[k]) for k in KEYS],
        fused_params={"optimizer": "rowwise_adagrad", "lr": 0.1})
    m = DLRMTrain(DLRM(ebc, 5, [8, D], [6, 1]))
    kjt, _, dense, labels = _inputs(seed=4, B=16)
    batch = Batch(ember.from_numpy(dense), kjt, ember.from_numpy(labels))
    opt = ember.optim.Adam([p for n, p in m.named_parameters() if "embedding_bags" not in n],
                           lr=0.02)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss, _ = m(batch)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]


def test_dlrm_errors():
    with pytest.raises(ValueError, match="same embedding_dim"):
        DLRM(EmbeddingBagCollection([
            EmbeddingBagConfig(name="a", num_embeddings=3, embedding_dim=4, feature_names=["a"]),
            EmbeddingBagConfig(name="b", num_embeddings=3, embedding_dim=2, feature_names=["b"])]),
            5, [4], [3, 1])
    with pytest.raises(ValueError, match=r"last dense_arch layer size \(8\).*embedding_dim \(4\)"):
        DLRM(_ebc(), 5, [8], [3, 1])
    with pytest.raises(ValueError, match="at least two sizes"):
        DLRM(_ebc(), 5, [D], [1])
    with pytest.raises(TypeError, match="EmbeddingBagCollection"):
        DLRM(ember.nn.Linear(2, 2), 5, [D], [3, 1])
    m = DLRM(_ebc(), 5, [D], [3, 1])
    kjt, _, dense, labels = _inputs(B=6)
    with pytest.raises(ValueError, match=r"dense_features must be a \(B, 5\)"):
        m(ember.zeros(6, 4), kjt)
    with pytest.raises(ValueError, match="5 rows but the KeyedJaggedTensor's batch size"):
        m(ember.zeros(5, 5), kjt)
    with pytest.raises(TypeError, match="KeyedJaggedTensor"):
        m(ember.zeros(6, 5), {"f1": 1})
    with pytest.raises(ValueError, match=r"labels must have shape \(6,\)"):
        DLRMTrain(m)(Batch(ember.from_numpy(dense), kjt, ember.zeros(6, 1)))


# ------------------------------------------------------------------------------- TwoTower
def _tt():
    ebc = EmbeddingBagCollection([
        EmbeddingBagConfig(name="t_user", num_embeddings=9, embedding_dim=D,
                           feature_names=["user_id"]),
        EmbeddingBagConfig(name="t_item", num_embeddings=15, embedding_dim=D,
                           feature_names=["item_id", "item_cat"])])
    return TwoTower(ebc, [6, 5])


class TTwoTower(torch.nn.Module):
    def __init__(self, tt):
        super().__init__()
        self.ebc = TEBC(tt.ebc)
        self.query_proj = TMLP(D, [6, 5])
        self.candidate_proj = TMLP(2 * D, [6, 5])

    def forward(self, data):
        u, i, c = self.ebc(data)
        return self.query_proj(u), self.candidate_proj(torch.cat([i, c], 1))


@pytest.mark.parametrize("in_batch", [True, False])
def test_two_tower_vs_torch(in_batch):
    tt = _tt()
    twin = TTwoTower(tt)
    _to_torch(tt, twin)
    rng = np.random.default_rng(5)
    kjt, data = random_features(rng, ["user_id", "item_id", "item_cat"], 8,
                                {"user_id": 9, "item_id": 15, "item_cat": 15})
    labels = rng.integers(0, 2, 8)
    task = TwoTowerTrainTask(tt, in_batch_negatives=in_batch, temperature=0.5)
    loss, (_, logits, lab) = task(Batch(ember.zeros(8, 1), kjt, ember.from_numpy(labels)))
    q, c = twin(data)
    if in_batch:
        t_logits = q @ c.T / 0.5
        t_loss = torch.nn.functional.cross_entropy(t_logits, torch.arange(8))
        assert logits.shape == (8, 8) and lab.tolist() == list(range(8))
    else:
        t_logits = (q * c).sum(1)
        t_loss = torch.nn.functional.binary_cross_entropy_with_logits(
            t_logits, torch.from_numpy(labels).float())
    np.testing.assert_allclose(_np(logits), _np(t_logits), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(loss), t_loss.item(), rtol=1e-5)
    loss.backward()
    t_loss.backward()
    _compare_grads(tt, twin)


def test_two_tower_in_batch_training_ranks_own_candidate_first():
    """Trained on pairs user u <-> item u, every user's best-scoring item is its own."""
    ebc = EmbeddingBagCollection([
        EmbeddingBagConfig(name="t_user", num_embeddings=8, embedding_dim=16,
                           feature_names=["user_id"]),
        EmbeddingBagConfig(name="t_item", num_embeddings=8, embedding_dim=16,
                           feature_names=["item_id"])],
        fused_params={"optimizer": "adam", "lr": 0.02})
    tt = TwoTower(ebc, [32, 32])
    task = TwoTowerTrainTask(tt)
    ids = np.arange(8)
    kjt = KeyedJaggedTensor.from_lengths_sync(["user_id", "item_id"],
                                              ember.from_numpy(np.concatenate([ids, ids])),
                                              ember.from_numpy(np.ones(16, np.int64)))
    batch = Batch(ember.zeros(8, 1), kjt, ember.zeros(8))
    opt = ember.optim.Adam([p for n, p in tt.named_parameters() if not n.startswith("ebc.")],
                           lr=0.02)
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss, _ = task(batch)
        first = float(loss) if first is None else first
        loss.backward()
        opt.step()
    assert float(loss) < 0.05 * first
    q, c = tt(kjt)
    assert TwoTower.score(q, c).argmax(1).tolist() == ids.tolist()


def test_two_tower_errors():
    with pytest.raises(ValueError, match="two table configs"):
        TwoTower(_ebc(keys=["f1"]), [4])
    with pytest.raises(ValueError, match="temperature"):
        TwoTowerTrainTask(_tt(), temperature=0)


# -------------------------------------------------------------------------------- DeepFM
class TDeepFM(torch.nn.Module):
    def __init__(self, ebc, n_dense, hidden, deep_dim):
        super().__init__()
        F = sum(len(c.feature_names) for c in ebc.embedding_bag_configs())
        self.sparse_arch = torch.nn.Module()
        self.sparse_arch.embedding_bag_collection = TEBC(ebc)
        self.dense_arch = torch.nn.Module()
        self.dense_arch.model = torch.nn.Sequential(
            torch.nn.Linear(n_dense, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, D),
            torch.nn.ReLU())
        self.inter_arch = torch.nn.Module()
        self.inter_arch.deep_fm = torch.nn.Module()
        self.inter_arch.deep_fm.dense_module = torch.nn.Sequential(
            torch.nn.Linear((F + 1) * D, deep_dim), torch.nn.ReLU())
        self.over_arch = torch.nn.Module()
        self.over_arch.model = torch.nn.Sequential(torch.nn.Linear(D + deep_dim + 1, 1),
                                                   torch.nn.Sigmoid())

    def forward(self, dense, data):
        d = self.dense_arch.model(dense)
        v = torch.cat([d] + self.sparse_arch.embedding_bag_collection(data), 1)
        fm = 0.5 * (v.sum(1, keepdim=True) ** 2 - (v * v).sum(1, keepdim=True))
        deep = self.inter_arch.deep_fm.dense_module(v)
        return self.over_arch.model(torch.cat([d, deep, fm], 1))


def test_deepfm_vs_torch():
    ebc = _ebc()
    m = SimpleDeepFMNN(5, ebc, hidden_layer_size=8, deep_fm_dimension=6)
    twin = TDeepFM(ebc, 5, 8, 6)
    _to_torch(m, twin)
    assert "inter_arch.deep_fm.dense_module.0.weight" in m.state_dict()
    kjt, data, dense, _ = _inputs(seed=6)
    out = m(ember.from_numpy(dense), kjt)
    t_out = twin(torch.from_numpy(dense), data)
    assert out.shape == (6, 1)
    np.testing.assert_allclose(_np(out), _np(t_out), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    t_out.sum().backward()
    _compare_grads(m, twin)
    with pytest.raises(ValueError, match=r"dense_features must be \(B, 5\)"):
        m(ember.zeros(6, 3), kjt)


# ---------------------------------------------------------------------- MatrixFactorization
def test_matrix_factorization_vs_numpy_and_score_all():
    mf = MatrixFactorization(num_users=6, num_items=9, embedding_dim=3, global_bias=3.5)
    rng = np.random.default_rng(7)
    with ember.no_grad():
        for t in ("t_user_bias", "t_item_bias"):
            w = mf.ebc.embedding_bags[t].weight
            w.array[:] = rng.standard_normal(w.shape).astype(np.float32)
    u, i = rng.integers(0, 6, 10), rng.integers(0, 9, 10)
    kjt = KeyedJaggedTensor.from_lengths_sync(["user_id", "item_id"],
                                              ember.from_numpy(np.concatenate([u, i])),
                                              ember.from_numpy(np.ones(20, np.int64)))
    W = {k: v.numpy() for k, v in mf.state_dict().items()}
    P, Q = W["ebc.embedding_bags.t_user.weight"], W["ebc.embedding_bags.t_item.weight"]
    bu, bi = W["ebc.embedding_bags.t_user_bias.weight"], W["ebc.embedding_bags.t_item_bias.weight"]
    want = (P[u] * Q[i]).sum(1) + bu[u, 0] + bi[i, 0] + 3.5
    np.testing.assert_allclose(_np(mf(kjt)), want, rtol=1e-5, atol=1e-6)
    full = P[[0, 2]] @ Q.T + bi[:, 0][None] + bu[[0, 2]] + 3.5
    np.testing.assert_allclose(_np(mf.score_all(ember.tensor([0, 2]))), full, rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("name", ["dlrm", "two_tower", "deepfm", "mf"])
def test_docstring_examples(name):
    mod = importlib.import_module(f"ember.rec.models.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0 and res.attempted > 0
