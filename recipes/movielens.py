"""Recipe ``movielens``: rating prediction and top-k recommendation on a MovieLens folder;
reports ``rmse`` and ``recall@10`` on the test split.

    ember run movielens data.root=DIR/ml-100k                # matrix factorisation
    ember run movielens --config movielens_two_tower data.root=DIR/ml-100k
    ember run movielens data.root=DIR/ml-100k data.download=true   # fetch it from GroupLens

``data.root`` holds one release in its published layout (``u.data``, ``ratings.dat`` or
``ratings.csv``; see ``ember.rec.datasets.movielens``). The split: the published
``u1.base``/``u1.test`` when both are there (100K), else a seeded ``1 - test_fraction`` /
``test_fraction`` split of all ratings.

``model.kind=mf`` (default): ``MatrixFactorization`` (user and item factors and biases plus a
global bias) trained on the squared error of the ratings. ``model.kind=two_tower``:
``TwoTower`` trained with in-batch negatives on the pairs rated at least
``data.relevance_threshold``; its ``rmse`` is that of a least-squares line from the tower
scores to the training ratings (the towers score, they do not predict ratings).

``recall@10``: for each test user with a test rating >= ``data.relevance_threshold``, the
share of those items among the user's 10 best-scored items it has not rated in training,
averaged over users. Per epoch ``epoch, step, lr, train_loss, rmse, recall@10`` go to
``metrics.csv``; at the end ``model.safetensors`` and ``ids.json`` (the raw user and item ids
of the rows of the tables). Checkpoints, ``resume=true``, Ctrl-C and ``overwrite=true`` work
as in ``classify``.
"""
from __future__ import annotations

import json
import os

import numpy as np

import ember

from ember.recipes._config import ConfigError, instantiate
from ember.recipes._loop import EXIT_INTERRUPTED, TrainingRun, rate_postfix
from ember.recipes._registry import register_recipe
from ember.recipes.dlrm import EpochStream

__all__ = ["load_split", "recall_at_k", "main"]

_RATINGS = (("u.data", "100k"), ("ratings.dat", "1m"), ("ratings.csv", "25m"))


def _variant(root, variant):
    if variant:
        return str(variant).lower().removeprefix("ml-")
    for name, v in _RATINGS:
        if os.path.isfile(os.path.join(root, name)):
            return v
    raise ConfigError(f"data.root={root} holds no MovieLens ratings file (u.data, ratings.dat "
                      f"or ratings.csv); set data.download=true with data.variant to fetch one")


def _arrays(pipe, chunk=1 << 20):
    """(n, 3) float64 (user, item, rating) of a ratings pipe, built a chunk at a time (a
    list of 25M Python tuples would take gigabytes)."""
    parts, rows = [], []
    for r in pipe:
        rows.append((r["userId"], r["movieId"], r["rating"]))
        if len(rows) == chunk:
            parts.append(np.array(rows, dtype=np.float64))
            rows = []
    if rows or not parts:
        parts.append(np.array(rows, dtype=np.float64).reshape(-1, 3))
    return np.concatenate(parts)


def load_split(root, variant=None, test_fraction=0.2, seed=0, download=False):
    """``(train, test, how)``: (n, 3) arrays of raw (user, item, rating) and a description of
    the split (the published u1.base/u1.test of 100K when present, else seeded)."""
    from ember.rec.datasets import movielens

    root = os.fspath(root)
    v = _variant(root, variant) if not download else (variant or "100k")
    base, test = os.path.join(root, "u1.base"), os.path.join(root, "u1.test")
    if v == "100k" and os.path.isfile(base) and os.path.isfile(test):
        return (_arrays(movielens("100k", root, split="u1.base")),
                _arrays(movielens("100k", root, split="u1.test")), "published u1.base/u1.test")
    if v in ("20m", "25m") and not download:
        v = "25m"    # same layout; the name only picks the download
    a = _arrays(movielens(v, root, download=download))
    if not 0 < test_fraction < 1:
        raise ConfigError(f"data.test_fraction must be in (0, 1), got {test_fraction}")
    perm = np.random.default_rng(seed).permutation(len(a))
    n_test = int(round(len(a) * test_fraction))
    return a[perm[n_test:]], a[perm[:n_test]], \
        f"seeded {1 - test_fraction:.0%}/{test_fraction:.0%} split of all ratings (seed {seed})"


def recall_at_k(scores_fn, n_users, train_ui, test_ui, relevant, k=10, chunk=1024):
    """Mean over users with relevant test items of |top-k ∩ relevant| / |relevant|, the
    top k taken among the items the user did not rate in training. ``scores_fn(user_ids)``
    -> (n, n_items) scores; ``train_ui``/``test_ui``: (n, 2) int (user, item) rows;
    ``relevant``: a bool mask over ``test_ui``."""
    rel = test_ui[relevant]
    users = np.unique(rel[:, 0])
    if users.size == 0:
        return float("nan")
    order = np.argsort(train_ui[:, 0], kind="stable")
    tr = train_ui[order]
    t_starts = np.searchsorted(tr[:, 0], users)
    t_ends = np.searchsorted(tr[:, 0], users, side="right")
    rel = rel[np.argsort(rel[:, 0], kind="stable")]
    r_starts = np.searchsorted(rel[:, 0], users)
    r_ends = np.searchsorted(rel[:, 0], users, side="right")
    total = 0.0
    for c0 in range(0, users.size, chunk):
        us = users[c0:c0 + chunk]
        s = np.array(scores_fn(us), dtype=np.float32, copy=True)
        for j in range(us.size):
            s[j, tr[t_starts[c0 + j]:t_ends[c0 + j], 1]] = -np.inf   # seen in training
        kk = min(k, s.shape[1])
        top = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
        for j in range(us.size):
            want = rel[r_starts[c0 + j]:r_ends[c0 + j], 1]
            total += np.isin(want, top[j]).sum() / want.size
    return float(total / users.size)


def _kjt(u, i):
    from ember.rec import KeyedJaggedTensor

    n = u.shape[0]
    return KeyedJaggedTensor.from_lengths_sync(
        ["user_id", "item_id"], ember.from_numpy(np.concatenate([u, i]).astype(np.int64)),
        ember.from_numpy(np.ones(2 * n, np.int64)))


class _Batches:
    """Batch ``b`` of an epoch: the KJT and the ratings of rows ``perm[b*B:(b+1)*B]``."""

    def __init__(self, u, i, r, perm, batch_size):
        self.u, self.i, self.r, self.perm, self.B = u, i, r, perm, batch_size

    def __call__(self, b):
        from ember.rec.datasets import Batch

        idx = self.perm[b * self.B:(b + 1) * self.B]
        return Batch(ember.zeros(idx.size, 1), _kjt(self.u[idx], self.i[idx]),
                     ember.from_numpy(self.r[idx].astype(np.float32)))


def _build(cfg, n_users, n_items, mean_rating, fused):
    from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig
    from ember.rec.models import MatrixFactorization, TwoTower

    m = dict(cfg.get("model") or {})
    kind, dim = m.get("kind", "mf"), int(m.get("embedding_dim", 32))
    if kind == "mf":
        return MatrixFactorization(n_users, n_items, dim, init_std=float(m.get("init_std", 0.1)),
                                   global_bias=mean_rating, fused_params=fused)
    if kind == "two_tower":
        ebc = EmbeddingBagCollection([
            EmbeddingBagConfig(name="t_user", num_embeddings=n_users, embedding_dim=dim,
                               feature_names=["user_id"]),
            EmbeddingBagConfig(name="t_item", num_embeddings=n_items, embedding_dim=dim,
                               feature_names=["item_id"])], fused_params=fused)
        return TwoTower(ebc, list(m.get("layer_sizes") or [64, 32]),
                        activation=m.get("activation", "relu"))
    raise ConfigError(f"model.kind must be 'mf' or 'two_tower', got {kind!r}")


def _tower_embeddings(model, n_users, n_items):
    """(n_users, E) query and (n_items, E) candidate embeddings of every id."""
    n = max(n_users, n_items)
    u = np.minimum(np.arange(n), n_users - 1)
    i = np.minimum(np.arange(n), n_items - 1)
    with ember.no_grad():
        q, c = model(_kjt(u, i))
    return q.numpy()[:n_users], c.numpy()[:n_items]


def _evaluate(model, kind, train, test, n_users, n_items, threshold, k):
    """``(rmse, recall@k)`` on the test split."""
    was = model.training
    model.eval()
    tu, ti, tr = (train[:, j] for j in range(3))
    eu, ei, er = (test[:, j] for j in range(3))
    tu, ti, eu, ei = (a.astype(np.int64) for a in (tu, ti, eu, ei))
    if kind == "mf":
        with ember.no_grad():
            pred = np.concatenate([model(_kjt(eu[c:c + 8192], ei[c:c + 8192])).numpy()
                                   for c in range(0, eu.size, 8192)]) if eu.size else eu
        scores_fn = lambda us: model.score_all(ember.from_numpy(us)).numpy()   # noqa: E731
    else:
        q, c = _tower_embeddings(model, n_users, n_items)
        s_train = (q[tu] * c[ti]).sum(1)
        a, b = np.polyfit(s_train, tr, 1) if s_train.std() > 0 else (0.0, float(tr.mean()))
        pred = a * (q[eu] * c[ei]).sum(1) + b
        scores_fn = lambda us: q[us] @ c.T   # noqa: E731
    model.train(was)
    rmse = float(np.sqrt(np.mean((pred - er) ** 2))) if er.size else float("nan")
    rec = recall_at_k(scores_fn, n_users, np.stack([tu, ti], 1), np.stack([eu, ei], 1),
                      er >= threshold, k)
    return rmse, rec


@register_recipe("movielens")
def main(cfg):
    """Train per ``cfg`` (see ``configs/movielens.yaml``); returns the exit code."""
    data = cfg.get("data") or {}
    if not data.get("root"):
        raise ConfigError("movielens needs data.root: a MovieLens folder (u.data, ratings.dat "
                          "or ratings.csv; data.download=true fetches data.variant)")
    run = TrainingRun(cfg, "movielens", distributed=False)
    seed = run.seed
    train, test, how = load_split(data["root"], data.get("variant"),
                                  float(data.get("test_fraction", 0.2)), seed,
                                  bool(data.get("download")))
    if len(train) == 0 or len(test) == 0:
        raise ConfigError(f"data.root={data['root']}: the split left {len(train)} training and "
                          f"{len(test)} test ratings")
    users = np.unique(np.concatenate([train[:, 0], test[:, 0]])).astype(np.int64)
    items = np.unique(np.concatenate([train[:, 1], test[:, 1]])).astype(np.int64)
    for a in (train, test):   # raw ids -> table rows
        a[:, 0] = np.searchsorted(users, a[:, 0].astype(np.int64))
        a[:, 1] = np.searchsorted(items, a[:, 1].astype(np.int64))
    kind = (cfg.get("model") or {}).get("kind", "mf")
    threshold = float(data.get("relevance_threshold", 4.0))
    k = int(cfg.get("recall_k", 10))
    fit = train if kind == "mf" else train[train[:, 2] >= threshold]
    print(f"data: {len(train)} training and {len(test)} test ratings ({how}), {users.size} "
          f"users, {items.size} items; model: {kind}", flush=True)

    fused = dict(cfg.get("embedding_optimizer") or {"optimizer": "adam", "lr": 0.01})
    model = _build(cfg, users.size, items.size, float(train[:, 2].mean()), fused)
    dense = [p for n, p in model.named_parameters() if "embedding_bags" not in n]
    opt = instantiate(cfg["optimizer"], dense)
    B = int(cfg["batch_size"])
    drop = kind == "two_tower"      # in-batch negatives want full batches
    steps = len(fit) // B if drop else -(-len(fit) // B)
    if steps < 1:
        raise ConfigError(f"{len(fit)} training pairs give no batch of {B}")
    fu, fi, fr = fit[:, 0].astype(np.int64), fit[:, 1].astype(np.int64), fit[:, 2]

    def make(epoch):
        from ember.data import IterableWrapper

        perm = np.random.default_rng([seed, epoch]).permutation(len(fit))
        return IterableWrapper(range(steps)).map(_Batches(fu, fi, fr, perm, B))

    stream = EpochStream(make, steps)
    task = None
    if kind == "two_tower":
        from ember.rec.models import TwoTowerTrainTask

        task = TwoTowerTrainTask(model, temperature=float(cfg["model"].get("temperature", 0.1)))
    run.counters = {"loss": 0.0, "seen": 0}
    run.track(model=model, optimizer=opt)
    run.track(data=stream, pickled=True)
    run.restore()
    sums = run.counters
    model.train()
    with run:
        for epoch in run.epochs(int(cfg["epochs"])):
            for batch in run.batches(stream.start(epoch), steps, rate_postfix(sums, "pairs_s")):
                opt.zero_grad()
                if task is None:
                    err = model(batch.sparse_features) - batch.labels
                    loss = (err * err).mean()
                else:
                    loss, _ = task(batch)
                loss.backward()
                opt.step()
                n = batch.batch_size
                sums["loss"] += float(loss.item()) * n
                sums["seen"] += n
            rmse, rec = _evaluate(model, kind, train, test, users.size, items.size, threshold,
                                  k)
            run.end_epoch({"lr": float(opt.param_groups[0]["lr"]),
                           "train_loss": sums["loss"] / max(sums["seen"], 1),
                           "rmse": rmse, f"recall@{k}": rec})
            sums = run.counters
    if run.interrupted:
        return EXIT_INTERRUPTED
    path = os.path.join(run.out, "model.safetensors")
    ember.save(model.state_dict(), path)
    ids = os.path.join(run.out, "ids.json")
    with open(ids + ".tmp", "w") as f:
        json.dump({"users": users.tolist(), "items": items.tolist()}, f)
    os.replace(ids + ".tmp", ids)
    rmse, rec = run.last_logged("rmse"), run.last_logged(f"recall@{k}")
    print(f"test rmse {rmse:.4f}, recall@{k} {rec:.4f}")
    run.finish(f"rmse {rmse:.4f}, recall@{k} {rec:.4f}", [("weights", path), ("ids", ids)])
    return 0

