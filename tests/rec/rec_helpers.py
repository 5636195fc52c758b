"""Shared by the rec tests: random KeyedJaggedTensors and torch twins of the pooled lookups."""
from __future__ import annotations

import numpy as np

import ember
from ember.rec import KeyedJaggedTensor


def random_features(rng, keys, batch, num_rows, *, weighted=False, max_len=4):
    """``(kjt, data)``: a KJT over ``keys`` (ids of key k in [0, num_rows[k])) and
    ``data[k] = (ids, lengths, weights)`` as numpy arrays. Some bags are empty."""
    data, vals, lens, wts = {}, [], [], []
    for k in keys:
        ln = rng.integers(0, max_len + 1, batch)
        ids = rng.integers(0, num_rows[k], int(ln.sum()))
        w = rng.uniform(0.5, 1.5, ids.shape[0]).astype(np.float32)
        data[k] = (ids, ln, w)
        vals.append(ids)
        lens.append(ln)
        wts.append(w)
    kjt = KeyedJaggedTensor.from_lengths_sync(
        keys, ember.from_numpy(np.concatenate(vals).astype(np.int64)),
        ember.from_numpy(np.concatenate(lens).astype(np.int64)),
        weights=ember.from_numpy(np.concatenate(wts)) if weighted else None)
    return kjt, data


def torch_pooled(torch, weight, ids, lengths, weights, mode, manual=False):
    """(B, D) pooled rows in torch: ``F.embedding_bag`` where torch supports the case,
    plain per-bag math otherwise (weighted mean and max) or with ``manual`` (twice
    differentiable)."""
    tids = torch.from_numpy(ids.astype(np.int64))
    offs = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64))
    tw = None if weights is None else torch.from_numpy(weights)
    if not manual and (tw is None or mode == "sum"):
        return torch.nn.functional.embedding_bag(tids, weight, offs, mode=mode,
                                                 per_sample_weights=tw)
    rows = weight[tids] if tw is None else weight[tids] * tw[:, None]
    out, start = [], 0
    for n in lengths.tolist():
        r = rows[start:start + n]
        start += n
        if n == 0:
            out.append(torch.zeros(weight.shape[1], dtype=weight.dtype))
        elif mode == "sum":
            out.append(r.sum(0))
        elif mode == "mean":
            out.append(r.sum(0) / n)
        else:
            out.append(r.max(0).values)
    return torch.stack(out)
