"""``KeyedTensor``: dense per-key blocks (pooled embeddings) side by side in one tensor."""
from __future__ import annotations

import numpy as np

import ember


class KeyedTensor:
    """One dense tensor holding a block per key along ``key_dim``: what an
    ``EmbeddingBagCollection`` returns (one pooled embedding per feature and batch entry).

    Three keys with dims 2, 3 and 1 over a batch of 2 (``key_dim=1``)::

                       "f1"     "f2"      "f3"
            values   | a a  |  b b b  |  c |     batch entry 0
                     | a a  |  b b b  |  c |     batch entry 1
                     0      2         5    6
            keys            ["f1", "f2", "f3"]
            length_per_key  [2, 3, 1]
            offset_per_key  [0, 2, 5, 6]

    ``kt["f2"]`` is a view of its block; ``regroup`` gathers keys from several
    KeyedTensors into new groups (each group one tensor). Everything is differentiable.

    >>> import ember
    >>> from ember.rec import KeyedTensor
    >>> kt = KeyedTensor.from_tensor_list(["a", "b"], [ember.ones(2, 2), ember.zeros(2, 1)])
    >>> kt.values().shape, kt.offset_per_key(), kt["b"].shape
    ((2, 3), [0, 2, 3], (2, 1))
    >>> [t.shape for t in KeyedTensor.regroup([kt], [["b", "a"], ["a"]])]
    [(2, 3), (2, 2)]
    """

    __slots__ = ("_keys", "_length_per_key", "_values", "_key_dim", "_offset_per_key",
                 "_index_per_key")

    def __init__(self, keys, length_per_key, values, key_dim=1, offset_per_key=None,
                 index_per_key=None):
        self._keys = list(keys)
        self._length_per_key = [int(x) for x in length_per_key]
        if len(self._length_per_key) != len(self._keys):
            raise ValueError(f"KeyedTensor: {len(self._keys)} keys but "
                             f"{len(self._length_per_key)} lengths")
        self._values = values
        self._key_dim = int(key_dim) % max(values.ndim, 1)
        total = sum(self._length_per_key)
        if values.shape[self._key_dim] != total:
            raise ValueError(f"KeyedTensor: the key lengths sum to {total} but values has "
                             f"{values.shape[self._key_dim]} along key_dim {self._key_dim} "
                             f"(shape {tuple(values.shape)})")
        self._offset_per_key = None if offset_per_key is None else list(offset_per_key)
        self._index_per_key = None if index_per_key is None else dict(index_per_key)

    @staticmethod
    def from_tensor_list(keys, tensors, key_dim=1, cat_dim=1):
        """One key per tensor; the tensors are concatenated along ``cat_dim`` and each key's
        length is its tensor's size along ``key_dim``."""
        tensors = list(tensors)
        if len(tensors) != len(list(keys)):
            raise ValueError(f"KeyedTensor.from_tensor_list: {len(list(keys))} keys for "
                             f"{len(tensors)} tensors")
        lengths = [t.shape[key_dim] for t in tensors]
        values = tensors[0] if len(tensors) == 1 else ember.cat(tensors, cat_dim)
        return KeyedTensor(keys, lengths, values, key_dim)

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def key_dim(self):
        return self._key_dim

    def device(self):
        return self._values.device

    def length_per_key(self):
        return self._length_per_key

    def offset_per_key(self):
        if self._offset_per_key is None:
            self._offset_per_key = np.concatenate(
                [[0], np.cumsum(self._length_per_key, dtype=np.int64)]).tolist()
        return self._offset_per_key

    def index_per_key(self):
        if self._index_per_key is None:
            self._index_per_key = {k: i for i, k in enumerate(self._keys)}
        return self._index_per_key

    def __getitem__(self, key):
        """Key ``key``'s block: a view of the values."""
        i = self.index_per_key().get(key)
        if i is None:
            raise KeyError(f"KeyedTensor has no key {key!r}; keys: {self._keys}")
        opk = self.offset_per_key()
        return self._values.narrow(self._key_dim, opk[i], opk[i + 1] - opk[i])

    def to_dict(self):
        """``{key: block}`` (views), in key order."""
        return {k: self[k] for k in self._keys}

    def to(self, device, non_blocking=False):
        return KeyedTensor(self._keys, self._length_per_key, self._values.to(device),
                           self._key_dim, self._offset_per_key, self._index_per_key)

    @staticmethod
    def regroup(keyed_tensors, groups):
        """For each group (a list of keys found across ``keyed_tensors``), the blocks of
        those keys concatenated along the key dim, as one tensor per group. A key held by
        more than one KeyedTensor is ambiguous and refused."""
        kts = list(keyed_tensors)
        if not kts:
            raise ValueError("KeyedTensor.regroup: needs at least one KeyedTensor")
        where = {}
        for j, kt in enumerate(kts):
            for k in kt.keys():
                if k in where:
                    raise ValueError(f"KeyedTensor.regroup: key {k!r} is in KeyedTensor "
                                     f"{where[k]} and {j}")
                where[k] = j
        key_dim = kts[0].key_dim()
        out = []
        for g in groups:
            if not g:
                raise ValueError("KeyedTensor.regroup: a group has no keys")
            blocks = []
            for k in g:
                if k not in where:
                    raise KeyError(f"KeyedTensor.regroup: no KeyedTensor has key {k!r}")
                blocks.append(kts[where[k]][k])
            out.append(blocks[0] if len(blocks) == 1 else ember.cat(blocks, key_dim))
        return out

    @staticmethod
    def regroup_as_dict(keyed_tensors, groups, keys):
        """``regroup`` with each group's tensor under the matching name in ``keys``."""
        keys = list(keys)
        if len(keys) != len(groups):
            raise ValueError(f"KeyedTensor.regroup_as_dict: {len(groups)} groups but "
                             f"{len(keys)} names")
        return dict(zip(keys, KeyedTensor.regroup(keyed_tensors, groups)))

    def __repr__(self):
        return (f"KeyedTensor(keys={self._keys}, length_per_key={self._length_per_key}, "
                f"values shape={tuple(self._values.shape)}, key_dim={self._key_dim})")
