"""The ``dlrm`` and ``movielens`` recipes end to end on data generated here: metrics logged,
weights saved, Ctrl-C then resume equal to an uninterrupted run, the Criteo-file path learning
a planted signal, the published 100K split, data-parallel ``--nproc 2``, and config errors."""
import csv
import os

import numpy as np
import pytest
from recipe_helpers import StopAfter, ember_proc

DLRM_SHORT = ["quiet=true", "epochs=2", "batch_size=32", "data.num_sparse=4", "data.num_dense=3",
              "data.num_embeddings=40", "data.num_batches=6", "data.num_test_batches=2",
              "eval_batch_size=64", "model.embedding_dim=4", "model.dense_arch_layer_sizes=[8,4]",
              "model.over_arch_layer_sizes=[8,1]"]
ML_SHORT = ["quiet=true", "epochs=3", "batch_size=64", "model.embedding_dim=8"]


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _movielens(root, n_users=60, n_items=50, per_user=20, seed=0, split=False):
    """u.data in the 100K layout from a planted low-rank model (+ u1.base/u1.test)."""
    rng = np.random.default_rng(seed)
    P, Q = rng.standard_normal((n_users, 2)), rng.standard_normal((n_items, 2))
    os.makedirs(root, exist_ok=True)
    rows = []
    for u in range(n_users):
        for i in rng.choice(n_items, per_user, replace=False):
            r = int(np.clip(np.rint(3.5 + P[u] @ Q[i]), 1, 5))
            rows.append((u + 1, int(i) + 1, r, 880000000 + len(rows)))
    with open(os.path.join(root, "u.data"), "w") as f:
        f.writelines("%d\t%d\t%d\t%d\n" % r for r in rows)
    if split:
        perm = rng.permutation(len(rows))
        n = len(rows) // 5
        for name, idx in (("u1.test", perm[:n]), ("u1.base", perm[n:])):
            with open(os.path.join(root, name), "w") as f:
                f.writelines("%d\t%d\t%d\t%d\n" % rows[j] for j in sorted(idx))
    return rows


def _criteo(path, n, seed):
    """Criteo-layout TSV whose label is planted in cat_0 (ids below 2**31 click)."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for _ in range(n):
            c0 = int(rng.integers(0, 2**32))
            label = int(c0 % 20 < 10)
            ints = [str(int(x)) if x >= 0 else "" for x in rng.integers(-1, 100, 13)]
            cats = [f"{c0:08x}"] + [f"{int(x):08x}" for x in rng.integers(0, 2**32, 25)]
            f.write("\t".join([str(label), *ints, *cats]) + "\n")
    return str(path)


# ------------------------------------------------------------------------------------ dlrm
def test_roc_auc_and_log_loss():
    from ember.recipes.dlrm import log_loss_from_logits, roc_auc

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    s = np.round(rng.standard_normal(200) + y, 1)          # ties included
    pos, neg = s[y == 1], s[y == 0]
    pairs = (pos[:, None] > neg[None]).mean() + 0.5 * (pos[:, None] == neg[None]).mean()
    assert abs(roc_auc(y, s) - pairs) < 1e-12
    assert np.isnan(roc_auc(np.ones(3), [1, 2, 3]))
    p = 1 / (1 + np.exp(-s))
    want = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert abs(log_loss_from_logits(y, s) - want) < 1e-9


def test_dlrm_random_end_to_end(workdir, cli):
    rc, out, err = cli("run", "dlrm", *DLRM_SHORT, "output_dir=a")
    assert rc == 0, err
    rows = _rows(workdir / "a" / "metrics.csv")
    assert [r["step"] for r in rows] == ["6", "12"]
    for r in rows:
        assert 0 <= float(r["test_auc"]) <= 1 and float(r["test_logloss"]) > 0
    assert "test AUC" in out and (workdir / "a" / "model.safetensors").is_file()
    import ember
    sd = ember.load(str(workdir / "a" / "model.safetensors"))
    assert "model.sparse_arch.embedding_bag_collection.embedding_bags.t_cat_0.weight" in sd
    assert "model.sparse_arch.embedding_bag_collection.embedding_bags.t_cat_0.momentum1" in sd
    rc, out, err = cli("run", "dlrm", "--config", "dlrm_dcn", *DLRM_SHORT,
                       "model.dcn_num_layers=2", "model.dcn_low_rank_dim=3", "output_dir=b")
    assert rc == 0, err
    assert len(_rows(workdir / "b" / "metrics.csv")) == 2


def test_dlrm_interrupt_then_resume_equals_uninterrupted(workdir, cli, monkeypatch):
    from ember.recipes import _loop as L

    args = [*DLRM_SHORT, "checkpoint.every_n_steps=2"]
    rc, _, err = cli("run", "dlrm", *args, "output_dir=ref")
    assert rc == 0, err
    ref = _rows(workdir / "ref" / "metrics.csv")
    with monkeypatch.context() as m:
        m.setattr(L, "Interrupt", StopAfter(8))
        rc, out, _ = cli("run", "dlrm", *args, "output_dir=run")
    assert rc == 130 and "interrupted at step 8" in out     # mid epoch 2
    rc, out, err = cli("run", "dlrm", *args, "output_dir=run", "resume=true")
    assert rc == 0, err
    assert "(epoch 2, step 8)" in out
    assert _rows(workdir / "run" / "metrics.csv") == ref


def test_dlrm_criteo_files_learn_the_planted_signal(workdir, cli):
    tr, te = _criteo(workdir / "train.tsv", 1536, 1), _criteo(workdir / "test.tsv", 512, 2)
    rc, out, err = cli("run", "dlrm", "--config", "dlrm_criteo", "quiet=true", "epochs=3",
                       "batch_size=64", f"data.train_files=[{tr}]", f"data.test_files=[{te}]",
                       "data.num_embeddings=20", "data.shuffle_buffer=256",
                       "model.embedding_dim=8", "model.dense_arch_layer_sizes=[16,8]",
                       "model.over_arch_layer_sizes=[16,1]", "checkpoint.every_n_steps=null",
                       "embedding_optimizer.lr=0.1", "optimizer.lr=0.01", "output_dir=c")
    assert rc == 0, err
    rows = _rows(workdir / "c" / "metrics.csv")
    assert [r["step"] for r in rows] == ["24", "48", "72"]      # 1536 rows / 64
    assert float(rows[-1]["test_auc"]) > 0.9 and float(rows[-1]["test_accuracy"]) > 0.8


def test_dlrm_criteo_interrupt_resume_keeps_the_shuffle(workdir, cli, monkeypatch):
    """Mid-epoch resume on Criteo files restores the file offsets and the shuffle buffer."""
    from ember.recipes import _loop as L

    tr, te = _criteo(workdir / "train.tsv", 640, 3), _criteo(workdir / "test.tsv", 128, 4)
    args = ["--config", "dlrm_criteo", "quiet=true", "epochs=2", "batch_size=64",
            f"data.train_files=[{tr}]", f"data.test_files=[{te}]", "data.num_embeddings=20",
            "data.shuffle_buffer=100", "model.embedding_dim=4",
            "model.dense_arch_layer_sizes=[8,4]", "model.over_arch_layer_sizes=[8,1]",
            "checkpoint.every_n_steps=3"]
    rc, _, err = cli("run", "dlrm", *args, "output_dir=ref")
    assert rc == 0, err
    ref = _rows(workdir / "ref" / "metrics.csv")
    with monkeypatch.context() as m:
        m.setattr(L, "Interrupt", StopAfter(13))
        rc, out, _ = cli("run", "dlrm", *args, "output_dir=run")
    assert rc == 130 and "interrupted at step 13" in out
    rc, out, err = cli("run", "dlrm", *args, "output_dir=run", "resume=true")
    assert rc == 0, err
    assert "(epoch 2, step 13)" in out
    assert _rows(workdir / "run" / "metrics.csv") == ref


def test_dlrm_config_errors(workdir, cli):
    rc, _, err = cli("run", "dlrm", "--config", "dlrm_criteo", "quiet=true", "output_dir=e1")
    assert rc == 2 and "needs data.train_files and data.test_files" in err
    rc, _, err = cli("run", "dlrm", *DLRM_SHORT, "model.kind=wide", "output_dir=e2")
    assert rc == 2 and "model.kind must be" in err
    rc, _, err = cli("run", "dlrm", *DLRM_SHORT, "data.num_embeddings_per_feature=[5,5,5]",
                     "output_dir=e3")
    assert rc == 2 and "3 sizes for 4 sparse features" in err


def _have_mpi():
    try:
        import mpi4py  # noqa: F401

        from ember.distributed.launch import find_mpiexec
        find_mpiexec()
        return True
    except (ImportError, RuntimeError):
        return False


@pytest.mark.multiprocess
@pytest.mark.skipif(not _have_mpi(), reason="needs mpi4py and mpiexec")
@pytest.mark.parametrize("sharding", ["model_parallel", "data_parallel"])
def test_dlrm_nproc_2(workdir, sharding):
    """Two ranks: tables sharded by DistributedModelParallel (or replicated with DDP); the
    checkpoint holds the unsharded model, so it loads into one process."""
    args = [*DLRM_SHORT, f"sharding={sharding}", "output_dir=dp"]
    p = ember_proc(["run", "--nproc", "2", "dlrm", *args], workdir)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, (out, err)
    rows = _rows(workdir / "dp" / "metrics.csv")
    assert [r["step"] for r in rows] == ["3", "6"]        # 6 batches over 2 ranks
    assert out.count("test AUC") == 1                      # only rank 0 reports
    assert ("tables sharded" if sharding == "model_parallel" else "data-parallel") in out
    import ember
    from ember.recipes.dlrm import build_model
    sd = ember.load(str(workdir / "dp" / "model.safetensors"))
    one = build_model({"embedding_dim": 4, "dense_arch_layer_sizes": [8, 4],
                       "over_arch_layer_sizes": [8, 1]}, [f"cat_{i}" for i in range(4)],
                      [40] * 4, 3, {"optimizer": "rowwise_adagrad", "lr": 0.05})
    one.load_state_dict(sd, strict=sharding == "model_parallel")
    if sharding == "data_parallel":
        return
    # the finished run resumed on two ranks trains nothing more and reports the same
    p = ember_proc(["run", "--nproc", "2", "dlrm", *args, "resume=true"], workdir)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, (out, err)
    assert "resumed from" in out and _rows(workdir / "dp" / "metrics.csv") == rows


# ------------------------------------------------------------------------------- movielens
def test_movielens_mf_published_split(workdir, cli):
    root = workdir / "ml-100k"
    _movielens(str(root), split=True)
    rc, out, err = cli("run", "movielens", *ML_SHORT, "epochs=8", f"data.root={root}",
                       "output_dir=mf")
    assert rc == 0, err
    assert "published u1.base/u1.test" in out and "test rmse" in out
    rows = _rows(workdir / "mf" / "metrics.csv")
    assert len(rows) == 8 and "recall@10" in rows[0]
    test = np.loadtxt(root / "u1.test", dtype=np.int64)
    base = np.loadtxt(root / "u1.base", dtype=np.int64)
    mean_rmse = float(np.sqrt(np.mean((test[:, 2] - base[:, 2].mean()) ** 2)))
    assert float(rows[-1]["rmse"]) < 0.9 * mean_rmse           # beats the global mean
    assert 0 <= float(rows[-1]["recall@10"]) <= 1
    for f in ("model.safetensors", "ids.json"):
        assert (workdir / "mf" / f).is_file()


def test_movielens_seeded_split_interrupt_resume(workdir, cli, monkeypatch):
    from ember.recipes import _loop as L

    root = workdir / "ml"
    _movielens(str(root))
    args = [*ML_SHORT, f"data.root={root}", "checkpoint.every_n_steps=3"]
    rc, out, err = cli("run", "movielens", *args, "output_dir=ref")
    assert rc == 0, err
    assert "seeded 80%/20% split" in out
    ref = _rows(workdir / "ref" / "metrics.csv")
    steps = int(ref[0]["step"])                       # 960 ratings / 64 = 15 per epoch
    assert steps == 15
    with monkeypatch.context() as m:
        m.setattr(L, "Interrupt", StopAfter(21))
        rc, out, _ = cli("run", "movielens", *args, "output_dir=run")
    assert rc == 130 and "interrupted at step 21" in out
    rc, out, err = cli("run", "movielens", *args, "output_dir=run", "resume=true")
    assert rc == 0, err
    assert _rows(workdir / "run" / "metrics.csv") == ref


def test_movielens_two_tower(workdir, cli):
    root = workdir / "ml"
    _movielens(str(root))
    rc, out, err = cli("run", "movielens", "--config", "movielens_two_tower", *ML_SHORT,
                       "batch_size=32", "model.layer_sizes=[16,8]", f"data.root={root}",
                       "output_dir=tt")
    assert rc == 0, err
    rows = _rows(workdir / "tt" / "metrics.csv")
    assert len(rows) == 3
    assert float(rows[-1]["train_loss"]) < float(rows[0]["train_loss"])
    assert np.isfinite(float(rows[-1]["rmse"])) and 0 <= float(rows[-1]["recall@10"]) <= 1


def test_movielens_errors(workdir, cli):
    rc, _, err = cli("run", "movielens", "quiet=true")
    assert rc == 2 and "needs data.root" in err
    (workdir / "empty").mkdir()
    rc, _, err = cli("run", "movielens", "quiet=true", f"data.root={workdir / 'empty'}",
                     "output_dir=e")
    assert rc == 2 and "holds no MovieLens ratings file" in err
    bad = workdir / "bad"
    _movielens(str(bad))
    with open(bad / "u.data", "a") as f:
        f.write("7\t8\tx\t9\n")
    rc, _, err = cli("run", "movielens", "quiet=true", f"data.root={bad}", "output_dir=e2")
    assert rc != 0 and "u.data, line 1201: field rating: 'x' is not a number" in err
