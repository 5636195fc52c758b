"""Criteo and MovieLens readers on files written here in the published layouts, the Criteo
batches (hashing, log transform, KJT layout), RandomRecDataset, resumable iteration, the
archive download path (a local archive stands in for GroupLens) and the bad-file errors."""
import doctest
import gzip
import hashlib
import importlib
import os
import zipfile

import numpy as np
import pytest

from ember.rec.datasets import (CAT_FEATURE_COUNT, DatasetFormatError, RandomRecDataset,
                                criteo_batches, criteo_kaggle, criteo_terabyte, movielens_1m,
                                movielens_20m, movielens_25m, movielens_100k)
from ember.rec.datasets.criteo import parse_row

ML = importlib.import_module("ember.rec.datasets.movielens")


def _criteo_rows(n, rng, label=True):
    rows = []
    for r in range(n):
        ints = [str(int(x)) for x in rng.integers(-3, 500, 13)]
        cats = [f"{int(x):08x}" for x in rng.integers(0, 2**32, 26)]
        ints[r % 13] = ""            # a missing integer
        cats[(3 * r) % 26] = ""      # a missing category
        rows.append(([str(r % 2)] if label else []) + ints + cats)
    return rows


def _write(path, rows, opener=open):
    with opener(path, "wt") as f:
        for r in rows:
            f.write("\t".join(r) + "\n")
    return str(path)


# ------------------------------------------------------------------------------- Criteo
def test_criteo_rows_torchrec_dicts(tmp_path):
    rng = np.random.default_rng(0)
    rows = _criteo_rows(5, rng)
    got = list(criteo_kaggle(_write(tmp_path / "train.txt", rows)))
    assert len(got) == 5
    r0 = got[0]
    assert list(r0)[:2] == ["label", "int_0"] and len(r0) == 40
    assert r0["label"] == 0 and r0["int_0"] == 0            # int_0 missing in row 0 -> 0
    assert r0["int_1"] == int(rows[0][2]) and r0["cat_0"] == ""   # cat_0 missing -> ""
    assert r0["cat_1"] == rows[0][15]
    # Kaggle's test.txt: no label column
    test = list(criteo_kaggle(_write(tmp_path / "test.txt", _criteo_rows(2, rng, False))))
    assert "label" not in test[0] and len(test[0]) == 39


def test_criteo_batches_hash_and_log(tmp_path):
    rng = np.random.default_rng(1)
    rows = _criteo_rows(7, rng)
    p1 = _write(tmp_path / "day_0", rows[:4])
    p2 = _write(tmp_path / "day_1.gz", rows[4:], opener=gzip.open)   # gzipped day file
    sizes = [int(x) for x in rng.integers(3, 1000, CAT_FEATURE_COUNT)]
    batches = list(criteo_batches([p1, p2], batch_size=3, num_embeddings_per_feature=sizes))
    assert [b.batch_size for b in batches] == [3, 3, 1]
    dense = np.concatenate([b.dense_features.numpy() for b in batches])
    raw = np.array([[int(v or 0) for v in r[1:14]] for r in rows], np.float64)
    np.testing.assert_allclose(dense, np.log(np.maximum(raw + 3, 1)), rtol=1e-6)
    b = batches[0]
    kjt = b.sparse_features
    assert kjt.keys() == [f"cat_{i}" for i in range(26)] and kjt.stride() == 3
    assert kjt.lengths().tolist() == [1] * 78
    ids = kjt.values().numpy().reshape(26, 3)               # key by key, then batch entry
    want = np.array([[int(r[14 + k] or "0", 16) % sizes[k] for r in rows[:3]]
                     for k in range(26)])
    np.testing.assert_array_equal(ids, want)
    assert b.labels.tolist() == [0, 1, 0]
    # the DLRM reference transform: log(1 + x) with negatives clipped
    b1 = next(iter(criteo_batches([p1], 4, sizes, dense_log_offset=1)))
    np.testing.assert_allclose(b1.dense_features.numpy(),
                               np.log1p(np.maximum(raw[:4], 0)), rtol=1e-6)


def test_criteo_resume_mid_file(tmp_path):
    rows = _criteo_rows(9, np.random.default_rng(2))
    paths = [_write(tmp_path / "a", rows[:5]), _write(tmp_path / "b", rows[5:])]
    it = iter(criteo_terabyte(paths))
    for _ in range(6):
        next(it)
    state = it.state_dict()
    rest = list(it)
    it2 = iter(criteo_terabyte(paths))
    it2.load_state_dict(state)
    assert list(it2) == rest and len(rest) == 3


def test_criteo_bad_rows_name_file_line_field(tmp_path):
    rows = _criteo_rows(3, np.random.default_rng(3))
    bad = [list(r) for r in rows]
    bad[1] = bad[1][:30]                       # too few fields on line 2
    p = _write(tmp_path / "short.tsv", bad)
    with pytest.raises(DatasetFormatError, match=r"short\.tsv, line 2: expected 40 tab-separated"):
        list(criteo_terabyte([p]))
    bad = [list(r) for r in rows]
    bad[2][4] = "12x"                          # int_3 of line 3
    p = _write(tmp_path / "int.tsv", bad)
    with pytest.raises(DatasetFormatError, match=r"int\.tsv, line 3: field int_3: '12x' is not an "
                                                 r"integer") as e:
        list(criteo_terabyte([p], row_mapper=parse_row))
    assert (e.value.line, e.value.field) == (3, "int_3")
    bad = [list(r) for r in rows]
    bad[0][14 + 5] = "zz!"                     # cat_5 of line 1
    p = _write(tmp_path / "hex.tsv", bad)
    with pytest.raises(DatasetFormatError, match=r"line 1: field cat_5: 'zz!' is not a hex id"):
        list(criteo_batches([p], 2, [10] * 26))
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        list(criteo_terabyte([str(tmp_path / "nope.tsv")]))
    with pytest.raises(ValueError, match="26 positive sizes"):
        criteo_batches([p], 2, [10] * 25)


def test_download_criteo_kaggle_unpacks_the_archive(tmp_path, monkeypatch):
    """A local tar.gz in the published layout stands in for Criteo's URL."""
    import tarfile
    C = importlib.import_module("ember.rec.datasets.criteo")
    src = tmp_path / "src"
    src.mkdir()
    rows = _criteo_rows(3, np.random.default_rng(4))
    _write(src / "train.txt", rows)
    _write(src / "test.txt", [r[1:] for r in rows])
    (src / "readme.txt").write_text("x")
    archive = tmp_path / "mirror" / "dac.tar.gz"
    archive.parent.mkdir()
    with tarfile.open(archive, "w:gz") as t:
        for f in ("train.txt", "test.txt", "readme.txt"):
            t.add(src / f, f)
    monkeypatch.setattr(C, "CRITEO_KAGGLE", C.Resource(archive.as_uri(), "dac.tar.gz"))
    root = C.download_criteo_kaggle(str(tmp_path / "data" / "criteo_kaggle"), progress=False)
    assert len(list(criteo_kaggle(os.path.join(root, "train.txt")))) == 3
    assert C.download_criteo_kaggle(root) == root          # present: nothing fetched again


# ---------------------------------------------------------------------------- MovieLens
def _ml100k(root):
    os.makedirs(root, exist_ok=True)
    data = [(1, 10, 5, 881250949), (2, 10, 3, 881250950), (1, 20, 4, 881250951),
            (3, 30, 1, 881250952)]
    with open(os.path.join(root, "u.data"), "w") as f:
        f.writelines(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in data)
    with open(os.path.join(root, "u1.base"), "w") as f:
        f.writelines(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in data[:3])
    with open(os.path.join(root, "u.user"), "w") as f:
        f.write("1|24|M|technician|85711\n2|53|F|other|94043\n3|23|M|writer|32067\n")
    flags = ["0"] * 19
    f10, f20 = list(flags), list(flags)
    f10[1] = f10[5] = "1"
    f20[8] = "1"
    with open(os.path.join(root, "u.item"), "wb") as f:
        f.write(("10|Caf\xe9 (1995)|01-Jan-1995||http://x|" + "|".join(f10) + "\n")
                .encode("latin-1"))
        f.write(("20|B (1996)|01-Jan-1996||http://y|" + "|".join(f20) + "\n").encode("latin-1"))
    return data


def test_movielens_100k_layout_and_side_files(tmp_path):
    root = str(tmp_path / "ml-100k")
    data = _ml100k(root)
    rows = list(movielens_100k(root))
    assert [(r["userId"], r["movieId"], r["rating"], r["timestamp"]) for r in rows] == \
        [(u, i, float(r), t) for u, i, r, t in data]
    assert len(list(movielens_100k(root, split="u1.base"))) == 3
    full = list(movielens_100k(root, include_movies_data=True, include_users_data=True))
    assert full[0]["title"] == "Caf\xe9 (1995)" and full[0]["genres"] == "Action|Comedy"
    assert full[2]["genres"] == "Drama"
    assert full[0]["gender"] == "M" and full[1]["age"] == 53 and full[1]["zip"] == "94043"
    assert full[3]["title"] == ""      # a movie missing from u.item


def test_movielens_1m_and_csv_layouts(tmp_path):
    r1 = tmp_path / "ml-1m"
    r1.mkdir()
    (r1 / "ratings.dat").write_text("1::1193::5::978300760\n1::661::3::978302109\n")
    (r1 / "users.dat").write_text("1::F::1::10::48067\n")
    (r1 / "movies.dat").write_bytes("1193::One Flew (1975)::Drama\n661::J\xe4ger::Animation|"
                                    "Children's\n".encode("latin-1"))
    rows = list(movielens_1m(str(r1), include_movies_data=True, include_users_data=True))
    assert rows[0] == {"userId": 1, "movieId": 1193, "rating": 5.0, "timestamp": 978300760,
                       "title": "One Flew (1975)", "genres": "Drama", "gender": "F",
                       "age": 1, "occupation": "10", "zip": "48067"}
    assert rows[1]["title"] == "J\xe4ger"
    for fn in (movielens_20m, movielens_25m):
        r = tmp_path / fn.__name__
        r.mkdir()
        (r / "ratings.csv").write_text("userId,movieId,rating,timestamp\n1,2,3.5,1112486027\n"
                                       "1,29,3.5,1112484676\n")
        (r / "movies.csv").write_text('movieId,title,genres\n2,"Jumanji, The (1995)",'
                                      "Adventure|Children\n")
        rows = list(fn(str(r), include_movies_data=True))
        assert rows[0]["rating"] == 3.5 and rows[0]["title"] == "Jumanji, The (1995)"
        assert rows[1]["movieId"] == 29 and rows[1]["genres"] == ""
        with pytest.raises(ValueError, match="no user file"):
            ML.movielens(fn.__name__[-3:], str(r), include_users_data=True)


def test_movielens_bad_files(tmp_path):
    root = str(tmp_path / "ml-100k")
    _ml100k(root)
    with open(os.path.join(root, "u.data"), "a") as f:
        f.write("4\t40\tfive\t881250953\n")
    with pytest.raises(DatasetFormatError, match=r"u\.data, line 5: field rating: 'five' is not "
                                                 r"a number"):
        list(movielens_100k(root))
    with open(os.path.join(root, "u.data"), "w") as f:
        f.write("1\t2\t3\n")
    with pytest.raises(DatasetFormatError, match=r"line 1: expected 4 '\\t'-separated fields"):
        list(movielens_100k(root))
    with open(os.path.join(root, "u.user"), "a") as f:
        f.write("x|1|M|a|1\n")
    with pytest.raises(DatasetFormatError, match=r"u\.user, line 4: field userId: 'x'"):
        movielens_100k(root, include_users_data=True)
    with pytest.raises(FileNotFoundError, match="ratings.dat not found"):
        movielens_1m(str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="only for 100k"):
        ML.movielens("1m", root, split="u1.base")


def test_movielens_download_checks_md5(tmp_path, monkeypatch):
    """``download=True`` fetches the archive (a local zip in GroupLens's layout stands in
    for the URL), checks its md5 and unpacks it into ``root``; a wrong md5 refuses it."""
    src = tmp_path / "src"
    _ml100k(str(src / "ml-100k"))
    archive = tmp_path / "mirror" / "ml-100k.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as z:
        for name in os.listdir(src / "ml-100k"):
            z.write(src / "ml-100k" / name, f"ml-100k/{name}")
    md5 = hashlib.md5(archive.read_bytes()).hexdigest()
    monkeypatch.setitem(ML.MOVIELENS, "100k", ML.Resource(archive.as_uri(), "ml-100k.zip",
                                                          md5=md5))
    root = tmp_path / "data" / "ml-100k"
    assert len(list(movielens_100k(str(root), download=True))) == 4
    assert (root / "u.item").is_file()
    monkeypatch.setitem(ML.MOVIELENS, "100k", ML.Resource(archive.as_uri(), "ml-100k.zip",
                                                          md5="0" * 32))
    from ember.hub import HashMismatchError
    with pytest.raises(HashMismatchError, match="invalid md5"):
        movielens_100k(str(tmp_path / "other" / "ml-100k"), download=True)
    assert not (tmp_path / "other" / "ml-100k.zip").exists()


# ------------------------------------------------------------------------ RandomRecDataset
def test_random_rec_dataset_pooling_and_seeds():
    ds = RandomRecDataset(["a", "b"], batch_size=32, hash_sizes=[5, 1000],
                          ids_per_features=[3, 20], min_ids_per_features=[3, 10], num_dense=4,
                          manual_seed=7, num_batches=4, num_generated_batches=2)
    bs = list(ds)
    assert len(bs) == 4 and bs[2] is bs[0] and bs[1] is not bs[0]   # 2 distinct, cycled
    kjt = bs[1].sparse_features
    la, lb = kjt["a"].lengths().numpy(), kjt["b"].lengths().numpy()
    assert (la == 3).all() and 10 <= lb.min() and lb.max() <= 20 and lb.min() < lb.max()
    assert kjt["a"].values().numpy().max() < 5 and kjt["b"].values().numpy().max() < 1000
    assert bs[0].dense_features.shape == (32, 4) and set(bs[0].labels.tolist()) <= {0, 1}
    again = list(RandomRecDataset(["a", "b"], 32, hash_sizes=[5, 1000], ids_per_features=[3, 20],
                                  min_ids_per_features=[3, 10], num_dense=4, manual_seed=7,
                                  num_batches=4, num_generated_batches=2))
    assert np.array_equal(again[1].sparse_features.values().numpy(), kjt.values().numpy())
    with pytest.raises(ValueError, match="2 entries for 3 keys"):
        RandomRecDataset(["a", "b", "c"], 4, hash_sizes=[1, 2])
    with pytest.raises(ValueError, match="min_ids"):
        RandomRecDataset(["a"], 4, ids_per_features=[2], min_ids_per_features=[3])


def test_random_rec_dataset_on_the_fly_resumes():
    def make():
        return RandomRecDataset(["a"], 8, hash_size=50, ids_per_feature=4, num_dense=2,
                                manual_seed=3, num_batches=5, num_generated_batches=-1)
    it = iter(make())
    next(it), next(it)
    state = it.state_dict()
    rest = [b.sparse_features.values().tolist() for b in it]
    it2 = iter(make())
    it2.load_state_dict(state)
    assert [b.sparse_features.values().tolist() for b in it2] == rest and len(rest) == 3


@pytest.mark.parametrize("name", ["utils", "criteo", "movielens", "random"])
def test_docstring_examples(name):
    mod = importlib.import_module(f"ember.rec.datasets.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0 and res.attempted > 0
