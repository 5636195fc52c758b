"""Variable-length sequences for recurrent layers: ``PackedSequence`` and the pack/pad helpers.

A packed batch stores the steps of B sequences sorted by decreasing length, time-major::

    lengths 3, 2, 1  ->  data rows: a0 b0 c0 | a1 b1 | a2      batch_sizes = [3, 2, 1]

so step ``t`` holds the first ``batch_sizes[t]`` sequences. ``sorted_indices`` maps sorted
position -> original batch index (None when the input was already sorted).

    >>> import ember
    >>> from ember.nn.utils.rnn import pad_sequence, pack_padded_sequence
    >>> x = pad_sequence([ember.ones(3, 2), ember.ones(1, 2)])     # (3, 2, 2)
    >>> pack_padded_sequence(x, [3, 1]).batch_sizes.tolist()
    [2, 1, 1]
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

import ember

from ..._tensor import Tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpack_sequence", "unpad_sequence", "invert_permutation"]


class PackedSequence(NamedTuple):
    data: Tensor                 # (sum(lengths), *)
    batch_sizes: Tensor          # (max_len,) int64, on the CPU
    sorted_indices: Optional[Tensor] = None
    unsorted_indices: Optional[Tensor] = None

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        mv = (lambda t: None if t is None else t.to(dev))
        return PackedSequence(data, self.batch_sizes, mv(self.sorted_indices),
                              mv(self.unsorted_indices))

    def cpu(self):
        return self.to("cpu")

    @property
    def is_cuda(self):
        return self.data.is_cuda


def invert_permutation(perm):
    if perm is None:
        return None
    inv = np.empty_like(perm.numpy())
    inv[perm.numpy()] = np.arange(len(inv))
    return ember.from_numpy(inv)


def _lengths(lengths):
    if isinstance(lengths, Tensor):
        lengths = lengths.detach().cpu().numpy()
    arr = np.asarray(lengths, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError(f"lengths must be a 1-D sequence of ints, got shape {arr.shape}")
    return arr


def _step_mask(batch_sizes, n):
    """(L, n) bool: True where row j is active at step t (j < batch_sizes[t])."""
    return np.arange(n)[None, :] < np.asarray(batch_sizes)[:, None]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (L, B, *) (or (B, L, *) with ``batch_first``) of sequences of the
    given lengths. With ``enforce_sorted=False`` the batch is sorted here and the permutation
    kept in the result."""
    lens = _lengths(lengths)
    if batch_first:
        input = input.transpose(0, 1)
    L, nb = input.shape[0], input.shape[1]
    if len(lens) != nb:
        raise ValueError(f"pack_padded_sequence: expected {nb} lengths (the batch size), got "
                         f"{len(lens)}")
    if (lens <= 0).any():
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if lens.max() > L:
        raise RuntimeError(f"pack_padded_sequence: a length of {lens.max()} exceeds the "
                           f"padded sequence length {L}")
    sorted_idx = None
    if enforce_sorted:
        if (np.diff(lens) > 0).any():
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_idx = ember.from_numpy(order.astype(np.int64))
        input = input.index_select(1, sorted_idx.to(input.device))
    batch_sizes = (np.arange(lens[0])[:, None] < lens[None, :]).sum(1).astype(np.int64)
    mask = _step_mask(batch_sizes, nb)
    flat_idx = np.flatnonzero(mask.reshape(-1))
    data = input[: len(batch_sizes)].reshape(len(batch_sizes) * nb, *input.shape[2:])
    data = data.index_select(0, ember.from_numpy(flat_idx).to(input.device))
    return PackedSequence(data, ember.from_numpy(batch_sizes), sorted_idx,
                          invert_permutation(sorted_idx))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of ``pack_padded_sequence``: ``(padded, lengths)`` in the original batch
    order, padded to ``total_length`` if given."""
    data, bs = sequence.data, sequence.batch_sizes.numpy()
    L, nb = len(bs), int(bs[0])
    if total_length is not None:
        if total_length < L:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {L}")
        L_out = total_length
    else:
        L_out = L
    mask = _step_mask(bs, nb)
    flat = np.flatnonzero(mask.reshape(-1))
    rest = tuple(data.shape[1:])
    zeros = ember.zeros((L_out * nb,) + rest, dtype=data.dtype, device=data.device)
    padded = zeros.index_add(0, ember.from_numpy(flat).to(data.device), data)
    if padding_value != 0:
        fill = np.full(L_out * nb, padding_value, dtype=data.dtype)
        fill[flat] = 0
        padded = padded + ember.tensor(fill, device=data.device).reshape(
            (L_out * nb,) + (1,) * len(rest))
    padded = padded.reshape((L_out, nb) + rest)
    lengths = mask.sum(0).astype(np.int64)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        padded = padded.index_select(1, unsorted.to(data.device))
        lengths = lengths[unsorted.numpy()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, ember.from_numpy(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padding with
    ``padding_value`` on the right (or left)."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    if not sequences:
        raise ValueError("pad_sequence: received an empty list of sequences")
    L = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        pad = L - s.shape[0]
        if pad:
            filler = ember.full((pad,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                                device=s.device)
            s = ember.cat([s, filler] if padding_side == "right" else [filler, s])
        rows.append(s)
    return ember.stack(rows, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :int(n)] for i, n in enumerate(_lengths(lengths))]


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
