"""``KeyedJaggedTensor``: several sparse features of one batch, packed key by key."""
from __future__ import annotations

import numpy as np

import ember
from ember._tensor import Tensor

from . import _validate
from ._util import as_tensor, cumsum0, host, wrap, xp_of
from .jagged_tensor import JaggedTensor

_int64 = np.dtype(np.int64)


class KeyedJaggedTensor:
    """Sparse features ``keys`` over one batch: for each key and each batch entry a list of
    ids (and optionally one weight per id), stored as one flat ``values`` tensor grouped key
    by key, cut by ``lengths`` (or ``offsets``) laid out key-major.

    Two features over a batch of 3 (``stride`` 3)::

                      batch entry:   0         1       2
            "f1"                   [a0 a1]    []      [a2]
            "f2"                   [b0]       [b1]    [b2 b3 b4]

            keys      ["f1", "f2"]
            lengths   [ 2, 0, 1,   1, 1, 3 ]          (K * stride,): f1's entries, then f2's
            offsets   [0, 2, 2, 3, 4, 5, 8]           (K * stride + 1,), offsets[-1] = len(values)
            values    [a0 a1 a2 | b0 b1 b2 b3 b4]     (8,) ids, key by key
            weights   [w0 w1 w2 | w3 w4 w5 w6 w7]     optional, one per value
                       `-- f1 --'`----- f2 -----'
            length_per_key  [3, 5]      offset_per_key  [0, 3, 8]

    With a batch size per key (variable batch, ``stride_per_key_per_rank=[[3], [2]]``) key
    ``i`` owns ``stride_per_key()[i]`` consecutive lengths; ``stride()`` is then the largest.

    Construction only checks shapes; ``validate()`` (meant for the input pipeline, off the
    training step) checks everything else and names what is wrong. ``length_per_key`` and
    ``offset_per_key`` read the lengths on the host once and are cached (``sync()``
    computes them up front, as ``from_lengths_sync``/``from_offsets_sync`` do).

    >>> import ember
    >>> from ember.rec import KeyedJaggedTensor
    >>> kjt = KeyedJaggedTensor.from_lengths_sync(
    ...     keys=["f1", "f2"], values=ember.tensor([1, 2, 3, 4, 5, 6, 7, 8]),
    ...     lengths=ember.tensor([2, 0, 1, 1, 1, 3]))
    >>> kjt.stride(), kjt.length_per_key(), kjt.offset_per_key()
    (3, [3, 5], [0, 3, 8])
    >>> kjt["f2"].to_dense()[2].tolist()
    [6, 7, 8]
    >>> kjt.permute([1, 0]).keys()
    ['f2', 'f1']
    """

    __slots__ = ("_keys", "_values", "_weights", "_lengths", "_offsets", "_stride",
                 "_stride_per_key_per_rank", "_length_per_key", "_offset_per_key",
                 "_index_per_key", "_jt_dict", "__weakref__")

    def __init__(self, keys, values, weights=None, lengths=None, offsets=None, stride=None,
                 stride_per_key_per_rank=None, length_per_key=None, offset_per_key=None,
                 index_per_key=None, jt_dict=None, *, stride_per_key=None):
        self._keys = list(keys)
        for k in self._keys:
            if not isinstance(k, str):
                raise TypeError(f"KeyedJaggedTensor: keys must be strings, got {k!r}")
        self._values = as_tensor(values, "KeyedJaggedTensor: values")
        if self._values.ndim != 1:
            raise ValueError(f"KeyedJaggedTensor: values must be 1-D (the ids of every key, "
                             f"packed), got shape {tuple(self._values.shape)}")
        self._weights = as_tensor(weights, "KeyedJaggedTensor: weights", like=self._values)
        if self._weights is not None and tuple(self._weights.shape) != tuple(self._values.shape):
            raise ValueError(f"KeyedJaggedTensor: weights must have one weight per value, got "
                             f"shape {tuple(self._weights.shape)} for values of shape "
                             f"{tuple(self._values.shape)}")
        if lengths is None and offsets is None:
            raise TypeError("KeyedJaggedTensor: give lengths or offsets")
        self._lengths = as_tensor(lengths, "KeyedJaggedTensor: lengths", integer=True,
                                  like=self._values)
        self._offsets = as_tensor(offsets, "KeyedJaggedTensor: offsets", integer=True,
                                  like=self._values)
        for name, t in (("lengths", self._lengths), ("offsets", self._offsets)):
            if t is not None and t.ndim != 1:
                raise ValueError(f"KeyedJaggedTensor: {name} must be 1-D, got shape "
                                 f"{tuple(t.shape)}")
        n_len = self._lengths.shape[0] if self._lengths is not None else \
            self._offsets.shape[0] - 1
        if self._lengths is not None and self._offsets is not None and \
                self._offsets.shape[0] != n_len + 1:
            raise ValueError(f"KeyedJaggedTensor: offsets must have len(lengths) + 1 = "
                             f"{n_len + 1} entries, got {self._offsets.shape[0]}")
        K = len(self._keys)
        if stride_per_key is not None:
            if stride_per_key_per_rank is not None:
                raise TypeError("KeyedJaggedTensor: give stride_per_key or "
                                "stride_per_key_per_rank, not both")
            stride_per_key_per_rank = [[int(s)] for s in stride_per_key]
        if stride_per_key_per_rank is not None:
            sppr = [[int(s) for s in r] for r in stride_per_key_per_rank]
            if len(sppr) != K:
                raise ValueError(f"KeyedJaggedTensor: stride_per_key_per_rank has {len(sppr)} "
                                 f"entries for {K} keys")
            spk = [sum(r) for r in sppr]
            if sum(spk) != n_len:
                raise ValueError(f"KeyedJaggedTensor: the strides per key sum to {sum(spk)} "
                                 f"but there are {n_len} lengths")
            self._stride_per_key_per_rank = sppr
            self._stride = max(spk) if spk else (int(stride) if stride is not None else 0)
        else:
            self._stride_per_key_per_rank = None
            if stride is None:
                if K == 0:
                    stride = 0
                elif n_len % K:
                    raise ValueError(f"KeyedJaggedTensor: {n_len} lengths cannot be split "
                                     f"evenly over {K} keys; pass stride_per_key_per_rank for "
                                     f"a batch size per key")
                else:
                    stride = n_len // K
            self._stride = int(stride)
            if K and K * self._stride != n_len:
                raise ValueError(f"KeyedJaggedTensor: {K} keys x stride {self._stride} = "
                                 f"{K * self._stride} lengths expected, got {n_len}")
        self._length_per_key = None if length_per_key is None else [int(x) for x in
                                                                     length_per_key]
        self._offset_per_key = None if offset_per_key is None else [int(x) for x in
                                                                     offset_per_key]
        self._index_per_key = None if index_per_key is None else dict(index_per_key)
        self._jt_dict = jt_dict

    # ------------------------------------------------------------------ construction
    @staticmethod
    def from_offsets_sync(keys, values, offsets, weights=None, stride=None,
                          stride_per_key_per_rank=None):
        """From key-major ``offsets`` (K * stride + 1); per-key sizes computed now."""
        return KeyedJaggedTensor(keys, values, weights, offsets=offsets, stride=stride,
                                 stride_per_key_per_rank=stride_per_key_per_rank).sync()

    @staticmethod
    def from_lengths_sync(keys, values, lengths, weights=None, stride=None,
                          stride_per_key_per_rank=None):
        """From key-major ``lengths`` (K * stride); per-key sizes computed now."""
        return KeyedJaggedTensor(keys, values, weights, lengths=lengths, stride=stride,
                                 stride_per_key_per_rank=stride_per_key_per_rank).sync()

    @staticmethod
    def from_jt_dict(jt_dict):
        """From ``{key: JaggedTensor}`` (keys in the dict's order). The JaggedTensors must
        all have weights or all have none; differing batch sizes give a variable batch."""
        keys = list(jt_dict)
        if not keys:
            return KeyedJaggedTensor.empty()
        jts = [jt_dict[k] for k in keys]
        ws = [jt.weights_or_none() if isinstance(jt, JaggedTensor) else None for jt in jts]
        if any(w is None for w in ws) and not all(w is None for w in ws):
            missing = [k for k, w in zip(keys, ws) if w is None]
            raise ValueError(f"KeyedJaggedTensor.from_jt_dict: some JaggedTensors have weights "
                             f"and some do not (no weights: {missing})")
        values = _cat([jt.values() for jt in jts])
        weights = None if ws[0] is None else _cat(ws)
        lengths = _cat([jt.lengths() for jt in jts])
        strides = [jt.batch_size for jt in jts]
        if len(set(strides)) == 1:
            return KeyedJaggedTensor(keys, values, weights, lengths=lengths, stride=strides[0],
                                     jt_dict=dict(jt_dict))
        return KeyedJaggedTensor(keys, values, weights, lengths=lengths,
                                 stride_per_key_per_rank=[[s] for s in strides],
                                 jt_dict=dict(jt_dict))

    @staticmethod
    def empty(is_weighted=False, device=None, values_dtype=None, weights_dtype=None,
              lengths_dtype=None):
        """No keys, no values."""
        v = ember.empty(0, dtype=values_dtype or ember.int64, device=device)
        w = ember.empty(0, dtype=weights_dtype or ember.float32, device=device) \
            if is_weighted else None
        return KeyedJaggedTensor([], v, w, lengths=ember.empty(
            0, dtype=lengths_dtype or ember.int64, device=device), stride=0)

    @staticmethod
    def empty_like(kjt):
        """An empty KeyedJaggedTensor with ``kjt``'s stride, device and dtypes."""
        v = kjt.values()
        w = kjt.weights_or_none()
        return KeyedJaggedTensor([], ember.empty(0, dtype=v.dtype, device=v.device),
                                 None if w is None else ember.empty(0, dtype=w.dtype,
                                                                    device=w.device),
                                 lengths=ember.empty(0, dtype=ember.int64, device=v.device),
                                 stride=kjt.stride())

    @staticmethod
    def concat(kjt_list):
        """The keys of every KeyedJaggedTensor in ``kjt_list``, one after the other (all
        weighted or none; same batch size, or a variable batch is kept per key)."""
        kjts = list(kjt_list)
        if not kjts:
            raise ValueError("KeyedJaggedTensor.concat: needs at least one KeyedJaggedTensor")
        if len(kjts) == 1:
            return kjts[0]
        weighted = [k.weights_or_none() is not None for k in kjts]
        if any(weighted) and not all(weighted):
            raise ValueError(f"KeyedJaggedTensor.concat: weighted and unweighted inputs mixed "
                             f"(weighted: {weighted})")
        keys = [key for k in kjts for key in k.keys()]
        values = _cat([k.values() for k in kjts])
        weights = _cat([k.weights() for k in kjts]) if weighted[0] else None
        lens = [k.lengths() for k in kjts]
        if len({t.dtype for t in lens}) > 1:
            lens = [t.to(ember.int64) for t in lens]
        lengths = _cat(lens)
        variable = any(k.variable_stride_per_key() for k in kjts) or \
            len({k.stride() for k in kjts if k.keys()}) > 1
        lpk = None
        if all(k._length_per_key is not None for k in kjts):
            lpk = [x for k in kjts for x in k._length_per_key]
        if variable:
            sppr = [r for k in kjts for r in k.stride_per_key_per_rank()]
            return KeyedJaggedTensor(keys, values, weights, lengths=lengths,
                                     stride_per_key_per_rank=sppr, length_per_key=lpk)
        stride = next((k.stride() for k in kjts if k.keys()), kjts[0].stride())
        return KeyedJaggedTensor(keys, values, weights, lengths=lengths, stride=stride,
                                 length_per_key=lpk)

    # ------------------------------------------------------------------ the parts
    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def weights(self):
        if self._weights is None:
            raise ValueError("KeyedJaggedTensor: no weights (use weights_or_none())")
        return self._weights

    def weights_or_none(self):
        return self._weights

    def lengths(self):
        """Key-major lengths (K * stride,), computed from the offsets when not given."""
        if self._lengths is None:
            o = self._offsets.array
            self._lengths = wrap(o[1:] - o[:-1])
        return self._lengths

    def lengths_or_none(self):
        return self._lengths

    def offsets(self):
        """Key-major offsets (K * stride + 1,), computed from the lengths when not given."""
        if self._offsets is None:
            self._offsets = wrap(cumsum0(self._lengths.array))
        return self._offsets

    def offsets_or_none(self):
        return self._offsets

    def stride(self):
        """The batch size (the largest batch size over keys for a variable batch)."""
        return self._stride

    def stride_per_key(self):
        if self._stride_per_key_per_rank is None:
            return [self._stride] * len(self._keys)
        return [sum(r) for r in self._stride_per_key_per_rank]

    def stride_per_key_per_rank(self):
        if self._stride_per_key_per_rank is None:
            return [[self._stride] for _ in self._keys]
        return self._stride_per_key_per_rank

    def variable_stride_per_key(self):
        return self._stride_per_key_per_rank is not None

    def lengths_offset_per_key(self):
        """Where each key's lengths start in ``lengths()``, then their total: (K + 1) ints."""
        return np.concatenate([[0], np.cumsum(self.stride_per_key(), dtype=np.int64)]) \
            .tolist()

    def index_per_key(self):
        """``{key: position}`` (built once)."""
        if self._index_per_key is None:
            self._index_per_key = {k: i for i, k in enumerate(self._keys)}
        return self._index_per_key

    def length_per_key(self):
        """The number of values of each key (host ints; computed once)."""
        if self._length_per_key is None:
            opk = self.offset_per_key()
            self._length_per_key = [b - a for a, b in zip(opk[:-1], opk[1:])]
        return self._length_per_key

    def length_per_key_or_none(self):
        return self._length_per_key

    def offset_per_key(self):
        """Where each key's values start in ``values()``, then their total: (K + 1) ints."""
        if self._offset_per_key is None:
            if self._length_per_key is not None:
                self._offset_per_key = np.concatenate(
                    [[0], np.cumsum(self._length_per_key, dtype=np.int64)]).tolist()
            else:
                off = host(self.offsets())
                self._offset_per_key = off[self.lengths_offset_per_key()].tolist()
        return self._offset_per_key

    def offset_per_key_or_none(self):
        return self._offset_per_key

    def device(self):
        return self._values.device

    def sync(self):
        """Compute ``length_per_key`` and ``offset_per_key`` now; returns self."""
        self.length_per_key()
        self.offset_per_key()
        return self

    def unsync(self):
        """Forget the per-key sizes (recomputed on next use); returns self."""
        self._length_per_key = self._offset_per_key = None
        return self

    # ------------------------------------------------------------------ per key
    def _ranges(self, i):
        """(value start, value end, lengths start, lengths end) of key ``i``."""
        opk, lop = self.offset_per_key(), self.lengths_offset_per_key()
        return opk[i], opk[i + 1], lop[i], lop[i + 1]

    def __getitem__(self, key):
        """The JaggedTensor of one key (values, weights and lengths are views)."""
        if self._jt_dict is not None and key in self._jt_dict:
            return self._jt_dict[key]
        i = self.index_per_key().get(key)
        if i is None:
            raise KeyError(f"KeyedJaggedTensor has no key {key!r}; keys: {self._keys}")
        v0, v1, l0, l1 = self._ranges(i)
        w = None if self._weights is None else self._weights[v0:v1]
        return JaggedTensor(self._values[v0:v1], w, lengths=self.lengths()[l0:l1],
                            validate=False)

    def to_dict(self):
        """``{key: JaggedTensor}`` in key order (cached)."""
        if self._jt_dict is None or list(self._jt_dict) != self._keys:
            self._jt_dict = None
            self._jt_dict = {k: self[k] for k in self._keys}
        return self._jt_dict

    def split(self, segments):
        """Consecutive groups of keys: ``segments`` gives the number of keys in each group
        (summing to the number of keys); each group is a KeyedJaggedTensor of views."""
        segments = [int(s) for s in segments]
        if sum(segments) != len(self._keys) or any(s < 0 for s in segments):
            raise ValueError(f"KeyedJaggedTensor.split: segments {segments} must be >= 0 and "
                             f"sum to the number of keys ({len(self._keys)})")
        opk, lop = self.offset_per_key(), self.lengths_offset_per_key()
        sppr = self._stride_per_key_per_rank
        out, k = [], 0
        for s in segments:
            keys = self._keys[k:k + s]
            v0, v1, l0, l1 = opk[k], opk[k + s], lop[k], lop[k + s]
            w = None if self._weights is None else self._weights[v0:v1]
            lpk = [opk[j + 1] - opk[j] for j in range(k, k + s)]
            if sppr is None:
                out.append(KeyedJaggedTensor(keys, self._values[v0:v1], w,
                                             lengths=self.lengths()[l0:l1],
                                             stride=self._stride, length_per_key=lpk))
            else:
                out.append(KeyedJaggedTensor(keys, self._values[v0:v1], w,
                                             lengths=self.lengths()[l0:l1],
                                             stride_per_key_per_rank=sppr[k:k + s],
                                             stride=self._stride, length_per_key=lpk))
            k += s
        return out

    def permute(self, indices, indices_tensor=None):
        """A KeyedJaggedTensor of the keys ``[keys[i] for i in indices]`` (a key may repeat
        or be left out); values, weights and lengths are gathered in that order."""
        indices = [int(i) for i in (indices if indices_tensor is None
                                    else host(indices_tensor).tolist())]
        K = len(self._keys)
        for i in indices:
            if not 0 <= i < K:
                raise IndexError(f"KeyedJaggedTensor.permute: index {i} out of range for "
                                 f"{K} keys")
        if indices == list(range(K)):
            return self
        opk, lop = self.offset_per_key(), self.lengths_offset_per_key()
        vidx = _ranges_index([(opk[i], opk[i + 1]) for i in indices])
        lidx = _ranges_index([(lop[i], lop[i + 1]) for i in indices])
        values = _take(self._values, vidx)
        weights = None if self._weights is None else _take(self._weights, vidx)
        lengths = _take(self.lengths(), lidx)
        keys = [self._keys[i] for i in indices]
        lpk = [opk[i + 1] - opk[i] for i in indices]
        if self._stride_per_key_per_rank is None:
            return KeyedJaggedTensor(keys, values, weights, lengths=lengths,
                                     stride=self._stride, length_per_key=lpk)
        return KeyedJaggedTensor(keys, values, weights, lengths=lengths,
                                 stride_per_key_per_rank=[self._stride_per_key_per_rank[i]
                                                          for i in indices],
                                 length_per_key=lpk)

    # ------------------------------------------------------------------ device
    def to(self, device=None, non_blocking=False, dtype=None):
        """Values, weights, lengths and offsets on ``device``; ``dtype`` casts the weights
        (the ids keep theirs)."""
        def mv(t):
            return None if t is None else (t if device is None else t.to(device))
        w = mv(self._weights)
        if dtype is not None and w is not None:
            w = w.to(dtype)
        out = KeyedJaggedTensor(self._keys, mv(self._values), w, lengths=mv(self._lengths),
                                offsets=mv(self._offsets), stride=self._stride,
                                stride_per_key_per_rank=self._stride_per_key_per_rank,
                                length_per_key=self._length_per_key,
                                offset_per_key=self._offset_per_key,
                                index_per_key=self._index_per_key)
        return out

    def pin_memory(self):
        """Host memory is what numpy gives; returns self (for torchrec-style pipelines)."""
        return self

    # ------------------------------------------------------------------ checks
    def validate(self, tables=None, *, allow_extra_keys=False):
        """Check the layout (and, given ``tables``, the ids) and raise a ValueError that
        names the first problem: lengths that do not add up to the number of values,
        negative lengths, decreasing offsets, weights of the wrong size, repeated keys,
        and with ``tables`` (embedding configs, a ``{feature: num_embeddings}`` mapping or an
        embedding module): a key no table reads (unless ``allow_extra_keys``), a table's
        feature missing from the keys, and ids outside ``[0, num_embeddings)``. It reads
        every length and id once on the host: call it in the input pipeline, not in the
        training step. Returns self."""
        _validate.validate(self, tables, allow_extra_keys)
        return self

    # ------------------------------------------------------------------ printing
    def __repr__(self):
        w = ", weighted=True" if self._weights is not None else ""
        if self._stride_per_key_per_rank is not None:
            st = f"stride_per_key={self.stride_per_key()}"
        else:
            st = f"stride={self._stride}"
        return (f"KeyedJaggedTensor(keys={self._keys}, {st}, values={self._values.shape[0]}"
                f"{w}, device={self.device()})")

    def __str__(self):
        if not self._keys:
            return "KeyedJaggedTensor()"
        lines = []
        for k in self._keys:
            jt = self[k]
            vals = [host(t).tolist() for t in jt.to_dense()]
            if self._weights is not None:
                ws = [np.round(host(t), 4).tolist() for t in jt.to_dense_weights()]
                lines.append(f'    "{k}": {{"values": {vals}, "weights": {ws}}}')
            else:
                lines.append(f'    "{k}": {vals}')
        return "KeyedJaggedTensor({\n" + ",\n".join(lines) + "\n})"


def _cat(tensors):
    return tensors[0] if len(tensors) == 1 else ember.cat(tensors, 0)


def _ranges_index(ranges):
    """int64 positions covering each half-open range in turn."""
    parts = [np.arange(a, b, dtype=_int64) for a, b in ranges]
    return np.concatenate(parts) if parts else np.zeros(0, _int64)


def _take(t, idx):
    """``t[idx]`` along the first axis (differentiable when ``t`` requires grad)."""
    xp = xp_of(t)
    i = idx if xp is np else xp.asarray(idx)
    if isinstance(t, Tensor) and t.requires_grad:
        return t.index_select(0, wrap(i))
    return wrap(t.array.take(i, axis=0))
