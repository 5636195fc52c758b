"""``KeyedJaggedTensor.validate``: every check that needs the data, each error naming its key.

Kept out of construction and of the modules' forward: it reads all lengths and ids on the
host. The input pipeline calls it (``pipe.map(lambda kjt: kjt.validate(tables))``).
"""
from __future__ import annotations

import numpy as np

from ._util import host


def _fail(msg):
    raise ValueError("KeyedJaggedTensor.validate: " + msg)


def table_ranges(tables):
    """``{feature: [(table name, num_embeddings), ...]}`` from embedding configs, a
    ``{feature: num_embeddings}`` mapping, or a module with ``embedding_bag_configs()`` /
    ``embedding_configs()``."""
    if hasattr(tables, "embedding_bag_configs"):
        tables = tables.embedding_bag_configs()
    elif hasattr(tables, "embedding_configs"):
        tables = tables.embedding_configs()
    out = {}
    if isinstance(tables, dict):
        for f, n in tables.items():
            out.setdefault(f, []).append((None, int(n)))
        return out
    for t in tables:
        for f in t.feature_names:
            out.setdefault(f, []).append((t.name, int(t.num_embeddings)))
    return out


def _where(kjt, pos_in_lengths):
    """``(key, batch position)`` of entry ``pos_in_lengths`` of the lengths."""
    lop = kjt.lengths_offset_per_key()
    i = int(np.searchsorted(lop, pos_in_lengths, side="right")) - 1
    return kjt.keys()[i], pos_in_lengths - lop[i]


def validate(kjt, tables, allow_extra_keys):
    keys = kjt.keys()
    seen = set()
    for k in keys:
        if k in seen:
            _fail(f"key {k!r} appears more than once in keys {keys}")
        seen.add(k)
    v = kjt.values()
    if v.dtype.kind not in "iu":
        _fail(f"values must be integer ids, got dtype {v.dtype}")
    n = v.shape[0]
    w = kjt.weights_or_none()
    if w is not None and (w.ndim != 1 or w.shape[0] != n):
        _fail(f"weights has shape {tuple(w.shape)} but there are {n} values (one weight per "
              f"value)")
    expected = sum(kjt.stride_per_key())
    lens_t, offs_t = kjt.lengths_or_none(), kjt.offsets_or_none()
    if lens_t is not None:
        lens = host(lens_t).astype(np.int64)
        if lens.shape[0] != expected:
            _fail(f"lengths has {lens.shape[0]} entries; keys x stride gives {expected}")
        if lens.size and lens.min() < 0:
            p = int(np.argmax(lens < 0))
            k, b = _where(kjt, p)
            _fail(f"negative length {int(lens[p])} for key {k!r} at batch position {b} "
                  f"(lengths[{p}])")
    if offs_t is not None:
        offs = host(offs_t).astype(np.int64)
        if offs.shape[0] != expected + 1:
            _fail(f"offsets has {offs.shape[0]} entries; keys x stride + 1 gives "
                  f"{expected + 1}")
        if offs.shape[0] and offs[0] != 0:
            _fail(f"offsets must start at 0, got offsets[0] = {int(offs[0])}")
        d = np.diff(offs)
        if d.size and d.min() < 0:
            p = int(np.argmax(d < 0))
            k, b = _where(kjt, p)
            _fail(f"offsets decrease for key {k!r} at batch position {b} (offsets[{p}] = "
                  f"{int(offs[p])} > offsets[{p + 1}] = {int(offs[p + 1])}): a negative "
                  "length")
        if lens_t is not None and not np.array_equal(d, lens):
            p = int(np.argmax(d != lens))
            k, b = _where(kjt, p)
            _fail(f"lengths and offsets disagree for key {k!r} at batch position {b}")
        ends = offs
    else:
        ends = np.concatenate([[0], np.cumsum(lens)])
    total = int(ends[-1])
    if total != n:
        lop = kjt.lengths_offset_per_key()
        per_key = {k: int(ends[lop[i + 1]] - ends[lop[i]]) for i, k in enumerate(keys)}
        over = next((k for i, k in enumerate(keys) if ends[lop[i + 1]] > n), None)
        where = f"; key {over!r} runs past the end of values" if over is not None else ""
        _fail(f"lengths sum to {total} but values holds {n} ids (ids per key: {per_key})"
              f"{where}")
    if tables is None:
        return
    ranges = table_ranges(tables)
    for k in keys:
        if k not in ranges and not allow_extra_keys:
            _fail(f"key {k!r} is not a feature of any table (features: {sorted(ranges)}); "
                  "pass allow_extra_keys=True to ignore it")
    for f, owners in ranges.items():
        if f not in seen:
            t = owners[0][0]
            of = f" of table {t!r}" if t is not None else ""
            _fail(f"feature {f!r}{of} is missing from the KeyedJaggedTensor (keys: {keys})")
    ids = host(v)
    opk = kjt.offset_per_key()
    lop = kjt.lengths_offset_per_key()
    for i, k in enumerate(keys):
        if k not in ranges:
            continue
        seg = ids[opk[i]:opk[i + 1]]
        if not seg.size:
            continue
        for table, num in ranges[k]:
            bad = (seg < 0) | (seg >= num)
            if bad.any():
                p = int(np.argmax(bad))
                b = int(np.searchsorted(ends[lop[i]:lop[i + 1] + 1] - opk[i], p,
                                        side="right")) - 1
                of = f"table {table!r} " if table is not None else ""
                _fail(f"key {k!r}: id {int(seg[p])} at batch position {b} (values[{opk[i] + p}])"
                      f" is outside {of}[0, {num}) (num_embeddings={num})")
