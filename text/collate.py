"""Batching token ids without padding: length bucketing, then one packed batch.

``collate(samples)`` turns a list of ``(token ids, label)`` samples (or bare id sequences)
into a :class:`TextBatch`: ``ids``, an ``ember.jagged.JaggedTensor`` of int64 token ids
(no padding stored), and ``labels``, an int64 Tensor (None without labels).
``bucket_batches(pipe, batch_size)`` first groups samples of similar length
(``bucketbatch``: sort pools of ``batch_size * batch_num`` samples by length, cut them into
batches, shuffle the batches), so that a padded view of a batch wastes little::

    samples  (len 7) (len 2) (len 6) (len 3)        bucketed, batch_size 2
    batch 0: | 2 tokens | 3 tokens |                 values (5,)   offsets [0, 2, 5]
    batch 1: | 6 tokens | 7 tokens |                 values (13,)  offsets [0, 6, 13]

Models that take padded input get ``batch.padded(pad_id)``: ``(input_ids (B, L),
attention_mask (B, L))`` with L the longest sequence of the batch.

    >>> from ember.data import IterableWrapper
    >>> samples = [([5, 6, 7], 1), ([8], 0), ([9, 9, 9, 9], 1), ([3, 4], 0)]
    >>> batches = list(bucket_batches(IterableWrapper(samples), 2, shuffle=False))
    >>> [b.ids.lengths().tolist() for b in batches]
    [[1, 2], [3, 4]]
    >>> ids, labels = batches[0]
    >>> ids.values().tolist(), ids.offsets().tolist(), labels.tolist()
    ([8, 3, 4], [0, 1, 3], [0, 0])
    >>> input_ids, mask = batches[0].padded(pad_id=0)
    >>> input_ids.tolist(), mask.tolist()
    ([[8, 0], [3, 4]], [[1, 0], [1, 1]])

A ``TextBatch`` pickles (as its arrays), so ``collate`` can run in DataLoader workers.
"""
from __future__ import annotations

import functools

import numpy as np

import ember
from ember.jagged import JaggedTensor

__all__ = ["TextBatch", "collate", "bucket_batches", "sequence_length", "pad_batch"]


def _ids_array(ids):
    if isinstance(ids, ember.Tensor):
        ids = ids.cpu().numpy()
    a = np.asarray(ids)
    if a.ndim != 1:
        raise ValueError(f"token ids must be a 1-D sequence, got shape {a.shape}")
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"token ids must be integers, got dtype {a.dtype}")
    return a.astype(np.int64, copy=False)


def sequence_length(sample) -> int:
    """The number of token ids of a sample ``(ids, label)`` or of a bare ``ids``: the sort
    key of :func:`bucket_batches` (a module-level function, so it pickles)."""
    ids = sample[0] if isinstance(sample, tuple) else sample
    return len(ids)


class TextBatch:
    """A batch of token sequences: ``ids`` (JaggedTensor, int64 values (total_tokens,),
    offsets (batch + 1,)) and ``labels`` (int64 (batch,), or None). Unpacks as
    ``ids, labels = batch``."""

    __slots__ = ("ids", "labels")

    def __init__(self, ids: JaggedTensor, labels=None):
        self.ids, self.labels = ids, labels

    def __iter__(self):
        return iter((self.ids, self.labels))

    def __len__(self):
        return self.ids.batch_size

    def to(self, device):
        """The batch on ``device``."""
        labels = None if self.labels is None else self.labels.to(device)
        return TextBatch(self.ids.to(device), labels)

    def padded(self, pad_id=0, max_length=None):
        """``(input_ids (B, L), attention_mask (B, L))``, int64, L = the longest sequence
        (or ``max_length``): the layout of models that take padded batches."""
        return pad_batch(self.ids, pad_id, max_length)

    def num_tokens(self) -> int:
        return int(self.ids.values().shape[0])

    def __reduce__(self):
        offsets = self.ids.offsets().cpu().numpy()
        values = self.ids.values().cpu().numpy()
        labels = None if self.labels is None else self.labels.cpu().numpy()
        return _rebuild, (values, offsets, labels)

    def __repr__(self):
        return (f"TextBatch(batch_size={len(self)}, tokens={self.num_tokens()}, "
                f"labels={'yes' if self.labels is not None else 'no'})")


def _rebuild(values, offsets, labels):
    ids = JaggedTensor(ember.tensor(values), offsets=ember.tensor(offsets), validate=False)
    return TextBatch(ids, None if labels is None else ember.tensor(labels))


def pad_batch(ids: JaggedTensor, pad_id=0, max_length=None):
    """``(input_ids, attention_mask)`` of a JaggedTensor of token ids: (B, L) int64 each,
    ids padded with ``pad_id``, mask 1 on tokens and 0 on padding."""
    lengths = ids.lengths().cpu().numpy()
    width = int(lengths.max(initial=0)) if max_length is None else int(max_length)
    if lengths.size and int(lengths.max()) > width:
        raise ValueError(f"a sequence of {int(lengths.max())} tokens does not fit "
                         f"max_length={width}")
    b = len(lengths)
    values = ids.values().cpu().numpy()
    out = np.full((b, width), pad_id, np.int64)
    mask = np.arange(width)[None, :] < lengths[:, None]
    out[mask] = values
    dev = ids.device
    return (ember.tensor(out, device=dev), ember.tensor(mask.astype(np.int64), device=dev))


def collate(samples, *, max_length=None) -> TextBatch:
    """One :class:`TextBatch` from ``samples``: each ``(ids, label)`` (ids a list, array or
    1-D Tensor of ints; label an int) or a bare ``ids``. ``max_length`` keeps the first
    ``max_length`` ids of longer sequences."""
    samples = list(samples)
    if not samples:
        raise ValueError("collate: no samples")
    labelled = isinstance(samples[0], tuple)
    seqs, labels = [], []
    for i, s in enumerate(samples):
        if isinstance(s, tuple) != labelled:
            raise TypeError(f"collate: sample {i} is {'not ' if labelled else ''}an (ids, "
                            f"label) pair like sample 0")
        if labelled:
            if len(s) != 2:
                raise ValueError(f"collate: sample {i} has {len(s)} fields; expected (ids, "
                                 f"label)")
            ids, label = s
            labels.append(int(label))
        else:
            ids = s
        a = _ids_array(ids)
        seqs.append(a if max_length is None else a[:int(max_length)])
    lengths = np.fromiter((len(a) for a in seqs), np.int64, len(seqs))
    values = np.concatenate(seqs) if seqs else np.zeros(0, np.int64)
    offsets = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = JaggedTensor(ember.tensor(values), offsets=ember.tensor(offsets), validate=False)
    return TextBatch(ids, ember.tensor(np.asarray(labels, np.int64)) if labelled else None)


def bucket_batches(pipe, batch_size, *, batch_num=100, shuffle=True, seed=None,
                   drop_last=False, max_length=None, sort_key=sequence_length):
    """``pipe`` of ``(ids, label)`` samples (or bare ids) -> pipe of :class:`TextBatch`,
    each holding samples of similar length (``pipe.bucketbatch`` with ``sort_key``, then
    :func:`collate`). ``batch_num``: batches per sorting pool; ``shuffle``: the order of
    the batches (seeded by ``seed``, or per epoch by the DataLoader)."""
    return pipe.bucketbatch(batch_size, drop_last=drop_last, batch_num=batch_num,
                            sort_key=sort_key, shuffle=shuffle, seed=seed) \
        .map(functools.partial(collate, max_length=max_length))
