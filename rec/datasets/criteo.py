"""Criteo click logs as DataPipes: the Kaggle Display Advertising Challenge set (``train.txt``,
``test.txt``) and the Criteo 1TB Click Logs (``day_0`` ... ``day_23``, plain or gzipped).

Each line is tab-separated: the label (0/1; absent in Kaggle's ``test.txt``), 13 integer
features and 26 categorical features (32-bit hex strings); any field may be empty (missing)::

    1 \\t 5 \\t 110 \\t \\t 16 \\t ... (13 ints) \\t 75ac2fe6 \\t 1cfdf714 \\t \\t ... (26 hex)

``criteo_kaggle(path)`` / ``criteo_terabyte(paths)`` yield one ``row_mapper(fields)`` per
line (default: torchrec's dict ``{"label": int, "int_0": int, ..., "cat_0": str, ...}``,
missing values 0 and ""). ``criteo_batches`` gives training ``Batch``es: missing values 0,
each categorical id hashed to its table (``int(hex, 16) % num_embeddings``), the dense
values ``log(max(x + dense_log_offset, 1))`` (torchrec's ``log(x + 3)``; the DLRM
reference's ``log(1 + x)`` with negatives clipped is ``dense_log_offset=1``).

A line with the wrong number of fields or a field that is not a number raises
``DatasetFormatError`` naming the file, the line and the field. Iteration state is explicit
(file, byte offset, line), so a restored iterator reopens the file at its offset.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "day_0")
    >>> line = "\\t".join(["1"] + ["3"] * 13 + ["a"] * 26)
    >>> _ = open(p, "w").write(line + "\\n")
    >>> row = next(iter(criteo_terabyte([p])))
    >>> row["label"], row["int_0"], row["cat_25"]
    (1, 3, 'a')
    >>> b = next(iter(criteo_batches([p], batch_size=4, num_embeddings_per_feature=[7] * 26)))
    >>> kjt = b.sparse_features
    >>> b.dense_features.shape, kjt.keys()[:2], kjt.values()[:2].tolist()
    ((1, 13), ['cat_0', 'cat_1'], [3, 3])
"""
from __future__ import annotations

import os
import shutil

import numpy as np

from .utils import Batch, FieldError, LineRecords, Resource, dataset_dir, fetch, unpack

__all__ = ["INT_FEATURE_COUNT", "CAT_FEATURE_COUNT", "DAYS", "DEFAULT_LABEL_NAME",
           "DEFAULT_INT_NAMES", "DEFAULT_CAT_NAMES", "DEFAULT_COLUMN_NAMES",
           "CRITEO_KAGGLE", "criteo_terabyte_url", "download_criteo_kaggle",
           "CriteoIterDataPipe", "criteo_kaggle",
           "criteo_terabyte", "parse_row", "CriteoCollate", "criteo_batches"]

INT_FEATURE_COUNT = 13
CAT_FEATURE_COUNT = 26
DAYS = 24
DEFAULT_LABEL_NAME = "label"
DEFAULT_INT_NAMES = [f"int_{i}" for i in range(INT_FEATURE_COUNT)]
DEFAULT_CAT_NAMES = [f"cat_{i}" for i in range(CAT_FEATURE_COUNT)]
DEFAULT_COLUMN_NAMES = [DEFAULT_LABEL_NAME, *DEFAULT_INT_NAMES, *DEFAULT_CAT_NAMES]
_N = len(DEFAULT_COLUMN_NAMES)

# Criteo publishes no hash for either set. The Kaggle archive holds train.txt and test.txt.
CRITEO_KAGGLE = Resource(
    "https://go.criteo.net/criteo-research-kaggle-display-advertising-challenge-dataset.tar.gz",
    "criteo-research-kaggle-display-advertising-challenge-dataset.tar.gz")


def criteo_terabyte_url(day):
    """Where Criteo publishes day ``day`` (0-23) of the 1TB click logs (gzipped TSV)."""
    if not 0 <= int(day) < DAYS:
        raise ValueError(f"criteo_terabyte_url: day must be in [0, {DAYS}), got {day}")
    return f"https://huggingface.co/datasets/criteo/CriteoClickLogs/resolve/main/day_{int(day)}.gz"


def download_criteo_kaggle(root=None, progress=True):
    """The folder holding the Kaggle set's ``train.txt`` and ``test.txt``: ``root``
    (default: the cache folder ``criteo_kaggle``) as it is when they are there, else filled
    from ``CRITEO_KAGGLE``'s archive (4.3 GB; Criteo publishes no hash for it)."""
    root = os.fspath(root) if root is not None else dataset_dir("criteo_kaggle")
    if all(os.path.isfile(os.path.join(root, f)) for f in ("train.txt", "test.txt")):
        return root
    parent = os.path.dirname(os.path.abspath(root))
    unpacked = unpack(fetch(CRITEO_KAGGLE, parent, progress=progress),
                      os.path.join(parent, ".criteo_kaggle.unpacked"))
    os.makedirs(root, exist_ok=True)
    for dirpath, _, files in os.walk(unpacked):
        for f in files:
            os.replace(os.path.join(dirpath, f), os.path.join(root, f))
    shutil.rmtree(unpacked, ignore_errors=True)
    for f in ("train.txt", "test.txt"):
        if not os.path.isfile(os.path.join(root, f)):
            raise FileNotFoundError(f"download_criteo_kaggle: the archive {CRITEO_KAGGLE.url} "
                                    f"held no {f}")
    return root


def _columns(fields):
    """Column names for a row of ``len(fields)`` (39: no label)."""
    if len(fields) == _N:
        return DEFAULT_COLUMN_NAMES
    if len(fields) == _N - 1:
        return DEFAULT_COLUMN_NAMES[1:]
    raise FieldError(None, f"expected {_N} tab-separated fields (label, "
                            f"{INT_FEATURE_COUNT} integer, {CAT_FEATURE_COUNT} categorical; "
                            f"{_N - 1} without the label), got {len(fields)}")


def _int(v, name, base=10):
    if not v:
        return 0
    try:
        return int(v, base)
    except ValueError:
        kind = "a hex id" if base == 16 else "an integer"
        raise FieldError(name, f"field {name}: {v[:40]!r} is not {kind}") from None


def _default_row_mapper(fields):
    """torchrec's row dict: label and ints as int (missing: 0), categoricals as str."""
    names = _columns(fields)
    out = {}
    for name, v in zip(names, fields):
        out[name] = v if name[0] == "c" else _int(v, name)
    return out


def parse_row(fields):
    """``(label, dense [13 ints], sparse [26 ints])`` of one split line: missing values 0,
    categoricals read as hex (label 0 for a row without one)."""
    names = _columns(fields)
    off = len(fields) - INT_FEATURE_COUNT - CAT_FEATURE_COUNT
    label = _int(fields[0], DEFAULT_LABEL_NAME) if off else 0
    dense = [_int(fields[off + i], names[off + i]) for i in range(INT_FEATURE_COUNT)]
    c0 = off + INT_FEATURE_COUNT
    sparse = [_int(fields[c0 + i], names[c0 + i], 16) for i in range(CAT_FEATURE_COUNT)]
    return label, dense, sparse


class CriteoIterDataPipe(LineRecords):
    """The lines of the Criteo TSV files ``paths`` (local paths or fsspec URLs; ``.gz`` and
    other compressions by suffix), each split on tabs and passed to ``row_mapper`` (None:
    the list of field strings). Errors name the file, the line and the field."""

    def __init__(self, paths, row_mapper=_default_row_mapper):
        self.row_mapper = row_mapper
        split = _Split(row_mapper)
        super().__init__(paths, split, name="CriteoIterDataPipe")


class _Split:
    """``row_mapper(line.split("\\t"))`` (a class, so that the pipe pickles)."""

    def __init__(self, row_mapper):
        self.row_mapper = row_mapper

    def __call__(self, line):
        fields = line.split("\t")
        return fields if self.row_mapper is None else self.row_mapper(fields)


def criteo_kaggle(path, *, row_mapper=_default_row_mapper):
    """Kaggle Display Advertising Challenge: ``train.txt`` (45,840,617 labelled rows) or
    ``test.txt`` (no label) from ``CRITEO_KAGGLE``'s archive."""
    return CriteoIterDataPipe([path], row_mapper=row_mapper)


def criteo_terabyte(paths, *, row_mapper=_default_row_mapper):
    """Criteo 1TB Click Logs: the day files ``paths`` in order (``criteo_terabyte_url``)."""
    return CriteoIterDataPipe(paths, row_mapper=row_mapper)


class CriteoCollate:
    """``parse_row`` results -> ``Batch``: dense (B, 13) float32 ``log(max(x + offset, 1))``,
    a KJT of the 26 ``cat_*`` features with one id each (``id % num_embeddings_per_feature``),
    labels (B,) int64. Picklable (runs in DataLoader workers)."""

    def __init__(self, num_embeddings_per_feature, dense_log_offset=3.0):
        hs = np.asarray(num_embeddings_per_feature, dtype=np.int64).reshape(-1)
        if hs.shape[0] != CAT_FEATURE_COUNT or (hs <= 0).any():
            raise ValueError(f"CriteoCollate: num_embeddings_per_feature must be "
                             f"{CAT_FEATURE_COUNT} positive sizes, got "
                             f"{list(num_embeddings_per_feature)}")
        self.hash_sizes = hs
        self.dense_log_offset = float(dense_log_offset)

    def __call__(self, rows):
        import ember
        from ..sparse import KeyedJaggedTensor

        n = len(rows)
        labels = np.fromiter((r[0] for r in rows), np.int64, n)
        dense = np.array([r[1] for r in rows], dtype=np.float64).reshape(n, INT_FEATURE_COUNT)
        sparse = np.array([r[2] for r in rows], dtype=np.int64).reshape(n, CAT_FEATURE_COUNT)
        dense = np.log(np.maximum(dense + self.dense_log_offset, 1.0)).astype(np.float32)
        ids = (sparse % self.hash_sizes).T.reshape(-1)          # key by key, as a KJT lays out
        kjt = KeyedJaggedTensor.from_lengths_sync(
            list(DEFAULT_CAT_NAMES), ember.from_numpy(np.ascontiguousarray(ids)),
            ember.from_numpy(np.ones(n * CAT_FEATURE_COUNT, np.int64)))
        return Batch(ember.from_numpy(dense), kjt, ember.from_numpy(labels))


def criteo_batches(paths, batch_size, num_embeddings_per_feature, *, dense_log_offset=3.0,
                   drop_last=False, shuffle_buffer=0, seed=None):
    """A pipe of training ``Batch``es from the Criteo TSV files ``paths``: lines parsed
    (``parse_row``), optionally shuffled through a buffer of ``shuffle_buffer`` rows, split
    across DataLoader workers/ranks (``sharding_filter``), batched and collated
    (``CriteoCollate``)."""
    if int(batch_size) < 1:
        raise ValueError(f"criteo_batches: batch_size must be >= 1, got {batch_size}")
    pipe = CriteoIterDataPipe(paths, row_mapper=parse_row)
    if shuffle_buffer:
        pipe = pipe.shuffle(buffer_size=int(shuffle_buffer), seed=seed)
    collate = CriteoCollate(num_embeddings_per_feature, dense_log_offset)
    return pipe.sharding_filter().batch(int(batch_size), drop_last).map(collate)
