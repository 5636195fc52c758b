"""``EmbeddingBagCollection`` and ``EmbeddingCollection``: many tables read from one KJT.

State-dict keys are torchrec's (``embedding_bags.<table>.weight``,
``embeddings.<table>.weight``), each table an ``ember.nn.EmbeddingBag`` / ``nn.Embedding``
with ``sparse=True``: the table's gradient is a coalesced ``RowSparseGrad`` (the distinct ids
of the batch, one row each), so ``optim.SparseAdam``, ``optim.Adagrad`` or ``optim.SGD`` step
only those rows, or ``fused_params`` updates them inside backward (see ``fused.py``).

A collection built on the meta device holds no memory (``device="meta"``): plan it, then
``to_empty(device="cpu")`` and ``reset_parameters()`` (or ``load_state_dict``).
"""
from __future__ import annotations

import copy
from collections import Counter

import numpy as np

import ember
from ember import _backend as B
from ember import nn
from ember.nn import functional as F

from ..sparse import JaggedTensor, KeyedJaggedTensor, KeyedTensor
from ..sparse._util import cumsum0, wrap
from . import fused as _fused
from ._lookup import pooled_lookup
from .embedding_configs import (EmbeddingBagConfig, EmbeddingConfig, PoolingType,
                                data_type_to_dtype)

_MODES = {PoolingType.SUM: "sum", PoolingType.MEAN: "mean", PoolingType.MAX: "max"}


def _check_tables(tables, cls, who):
    tables = list(tables)
    if not tables:
        raise ValueError(f"{who}: needs at least one table config")
    names = set()
    for t in tables:
        if not isinstance(t, cls):
            raise TypeError(f"{who}: expected {cls.__name__} entries, got {type(t).__name__}")
        if not t.name:
            raise ValueError(f"{who}: every table needs a name (state-dict keys use it)")
        if t.name in names:
            raise ValueError(f"{who}: duplicate table name {t.name!r}")
        names.add(t.name)
        if not t.feature_names:
            raise ValueError(f"{who}: table {t.name!r} has no feature_names")
        if len(set(t.feature_names)) != len(t.feature_names):
            raise ValueError(f"{who}: table {t.name!r} lists a feature twice: "
                             f"{t.feature_names}")
    return tables


def embedding_names_by_table(tables):
    """Output names per table: the feature names, or ``feature@table`` for a feature read
    by several tables (torchrec's convention)."""
    counts = Counter(f for t in tables for f in t.feature_names)
    return [[f if counts[f] == 1 else f"{f}@{t.name}" for f in t.feature_names]
            for t in tables]


def _device(device):
    return B.get_default_device() if device is None else ember.device(device)


def _new_weight(cfg, dev):
    dt = data_type_to_dtype(cfg.data_type)
    return nn.Parameter(ember.empty(cfg.num_embeddings, cfg.embedding_dim, dtype=dt,
                                    device=dev))


_INIT_BLOCK = 1 << 22  # elements drawn at a time: a big table's init needs no table-sized temps


def _init_table(cfg, weight):
    """``cfg.init_fn(weight)``, or uniform in the config's range, drawn in blocks of rows
    so that a 10M-row table is initialized without table-sized temporaries."""
    if weight.is_meta:
        return
    with ember.no_grad():
        if cfg.init_fn is not None:
            cfg.init_fn(weight)
            return
        lo, hi = cfg.get_weight_init_min(), cfg.get_weight_init_max()
        step = max(1, _INIT_BLOCK // weight.shape[1])
        if weight.shape[0] <= step:
            nn.init.uniform_(weight, lo, hi)
            return
        for r0 in range(0, weight.shape[0], step):
            nn.init.uniform_(weight[r0:r0 + step], lo, hi)
        weight._bump()


def _feature_ids(features, names, who):
    """``(ids array, lengths array, weights Tensor or None, per-feature lengths slices)`` of
    the features ``names`` of ``features``, feature after feature (a view when they are
    consecutive keys in order)."""
    idx = features.index_per_key()
    ks = []
    for f in names:
        k = idx.get(f)
        if k is None:
            raise KeyError(f"{who}: feature {f!r} is not in the KeyedJaggedTensor (keys: "
                           f"{features.keys()})")
        ks.append(k)
    opk, lop = features.offset_per_key(), features.lengths_offset_per_key()
    vals, lens = features.values(), features.lengths()
    w = features.weights_or_none()
    if ks == list(range(ks[0], ks[0] + len(ks))):
        a, b = opk[ks[0]], opk[ks[-1] + 1]
        la, lb = lop[ks[0]], lop[ks[-1] + 1]
        return (vals.array[a:b], lens.array[la:lb], None if w is None else w[a:b])
    xp = B.namespace(vals.array)
    ids = xp.concatenate([vals.array[opk[k]:opk[k + 1]] for k in ks])
    ls = xp.concatenate([lens.array[lop[k]:lop[k + 1]] for k in ks])
    ws = None
    if w is not None:
        parts = [w[opk[k]:opk[k + 1]] for k in ks]
        ws = parts[0] if len(parts) == 1 else ember.cat(parts, 0)
    return ids, ls, ws


def _check_ids(ids, cfg, who):
    """Ids outside the table raise here, naming the table (numpy would wrap a negative id
    around silently). Two reductions over the ids; ``KeyedJaggedTensor.validate`` names
    the feature and position."""
    if ids.shape[0]:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= cfg.num_embeddings:
            bad = lo if lo < 0 else hi
            raise IndexError(f"{who}: id {bad} is outside table {cfg.name!r} (num_embeddings="
                             f"{cfg.num_embeddings}, features {cfg.feature_names}); "
                             "KeyedJaggedTensor.validate(tables) names the feature and "
                             "position")


def _on(a, like):
    """Array ``a`` on the device of array ``like``."""
    if type(a) is type(like):
        return a
    return B.to_device(a, B.device_of(like))


class _Collection(nn.Module):
    """What both collections share: the table dict, init, fused optimizers."""

    _tables_attr = ""

    def _setup_fused(self, fused_params):
        self._fused_optimizer = None
        if fused_params:
            self._fused_optimizer = _fused.attach(self._named_tables(), fused_params)

    def _named_tables(self):
        return list(getattr(self, self._tables_attr).items())

    @property
    def fused_optimizer(self):
        """The ``FusedOptimizer`` (learning rates per table) when built with
        ``fused_params``, else None."""
        return self._fused_optimizer

    @property
    def device(self):
        """The device of the tables."""
        return self._named_tables()[0][1].weight.device

    def __deepcopy__(self, memo):
        """A deep copy whose fused optimizer (if any) updates the copy's tables: the weight
        hooks are bound again, to the copied state."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            if k != "_fused_optimizer":
                new.__dict__[k] = copy.deepcopy(v, memo)
        fo = self.__dict__.get("_fused_optimizer")
        new.__dict__["_fused_optimizer"] = None if fo is None else \
            _fused.rebind(fo, new._named_tables())
        return new

    def __setstate__(self, state):
        """Unpickling: bind the fused optimizer's hooks to the restored tables."""
        super().__setstate__(state)
        fo = self.__dict__.get("_fused_optimizer")
        if fo is not None:
            self.__dict__["_fused_optimizer"] = _fused.rebind(fo, self._named_tables())

    def reset_parameters(self):
        """Re-initialize every table from its config (uniform in [weight_init_min,
        weight_init_max] or ``init_fn``) and zero the fused optimizer state. The step after
        ``to_empty`` for a collection built on the meta device."""
        for cfg, (name, m) in zip(self._configs, self._named_tables()):
            _init_table(cfg, m.weight)
        if self._fused_optimizer is not None:
            _fused.reset(self._fused_optimizer, self._named_tables())
        return self



class EmbeddingBagCollection(_Collection):
    """Pooled embeddings of the features of a ``KeyedJaggedTensor``: one table per
    ``EmbeddingBagConfig``, each feature of a table pooled per batch entry (SUM, MEAN or
    MAX; with ``is_weighted=True`` each id's row is scaled by the KJT's weight first).
    Returns a ``KeyedTensor`` of (B, sum of dims): the features in table order, then in
    each table's ``feature_names`` order. Features that share a table are looked up
    together (one gather and one reduction per table).

    ``fused_params`` (e.g. ``{"optimizer": "rowwise_adagrad", "lr": 0.05}``): the tables are
    updated inside backward and their optimizer state joins the state dict (``fused.py``).

    >>> import ember
    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
    >>> ebc = EmbeddingBagCollection([
    ...     EmbeddingBagConfig(name="t1", num_embeddings=10, embedding_dim=4,
    ...                        feature_names=["f1", "f2"]),
    ...     EmbeddingBagConfig(name="t2", num_embeddings=5, embedding_dim=3,
    ...                        feature_names=["f3"], pooling="mean")])
    >>> kjt = KeyedJaggedTensor.from_lengths_sync(["f1", "f2", "f3"],
    ...     ember.tensor([1, 2, 3, 4, 0, 4]), ember.tensor([2, 0, 1, 1, 1, 1]))
    >>> kt = ebc(kjt)
    >>> kt.keys(), kt.values().shape, list(ebc.state_dict())
    (['f1', 'f2', 'f3'], (2, 11), ['embedding_bags.t1.weight', 'embedding_bags.t2.weight'])
    """

    _tables_attr = "embedding_bags"

    def __init__(self, tables, is_weighted=False, device=None, fused_params=None):
        super().__init__()
        who = type(self).__name__
        self._configs = _check_tables(tables, EmbeddingBagConfig, who)
        self._is_weighted = bool(is_weighted)
        dev = _device(device)
        self.embedding_bags = nn.ModuleDict()
        for cfg in self._configs:
            mode = _MODES[cfg.pooling]
            self.embedding_bags[cfg.name] = nn.EmbeddingBag(
                cfg.num_embeddings, cfg.embedding_dim, mode=mode, sparse=mode != "max",
                _weight=_new_weight(cfg, dev))
        names = embedding_names_by_table(self._configs)
        self._embedding_names = [n for ns in names for n in ns]
        self._lengths_per_embedding = [cfg.embedding_dim for cfg in self._configs
                                       for _ in cfg.feature_names]
        for cfg in self._configs:
            _init_table(cfg, self.embedding_bags[cfg.name].weight)
        self._setup_fused(fused_params)

    def embedding_bag_configs(self):
        return self._configs

    def is_weighted(self):
        return self._is_weighted

    def forward(self, features):
        """``features``: a KeyedJaggedTensor holding every feature of every table (extra
        keys are ignored), one batch size for all. Returns a KeyedTensor."""
        if not isinstance(features, KeyedJaggedTensor):
            raise TypeError(f"{type(self).__name__}: expected a KeyedJaggedTensor, got "
                            f"{type(features).__name__}")
        if features.variable_stride_per_key():
            raise ValueError(f"{type(self).__name__}: pooled outputs need one batch size for "
                             f"every feature, got stride_per_key {features.stride_per_key()}")
        psw_all = features.weights_or_none()
        if self._is_weighted and psw_all is None:
            raise ValueError(f"{type(self).__name__}(is_weighted=True): the "
                             "KeyedJaggedTensor has no weights")
        Bn = features.stride()
        who = type(self).__name__
        outs = []
        for cfg in self._configs:
            w = self.embedding_bags[cfg.name].weight
            ids, lens, psw = _feature_ids(features, cfg.feature_names, who)
            _check_ids(ids, cfg, who)
            ids, lens = _on(ids, w.array), _on(lens, w.array)
            if not self._is_weighted:
                psw = None
            elif psw.device != w.device:
                psw = psw.to(w.device)
            outs.append(pooled_lookup(w, ids, cumsum0(lens), cfg.num_features(), Bn,
                                      _MODES[cfg.pooling], psw))
        values = outs[0] if len(outs) == 1 else ember.cat(outs, 1)
        return KeyedTensor(self._embedding_names, self._lengths_per_embedding, values)

    def extra_repr(self):
        return f"is_weighted={self._is_weighted}" + (
            f", fused={self._fused_optimizer.optimizer_type.value}"
            if self._fused_optimizer is not None else "")


class FusedEmbeddingBagCollection(EmbeddingBagCollection):
    """An ``EmbeddingBagCollection`` whose tables train with a fused optimizer:
    ``FusedEmbeddingBagCollection(tables, {"optimizer": "adam", "lr": 1e-3})``."""

    def __init__(self, tables, fused_params, is_weighted=False, device=None):
        if not fused_params:
            raise ValueError("FusedEmbeddingBagCollection: fused_params is required (e.g. "
                             "{'optimizer': 'rowwise_adagrad', 'lr': 0.01})")
        super().__init__(tables, is_weighted=is_weighted, device=device,
                         fused_params=fused_params)


class EmbeddingCollection(_Collection):
    """Per-id embeddings of the features of a ``KeyedJaggedTensor`` (sequence features): one
    table per ``EmbeddingConfig``; returns ``{feature: JaggedTensor}`` whose values are the
    rows of the feature's ids (n_ids, dim) and whose lengths are the feature's (a batch size
    per key is kept). ``need_indices=True`` puts the ids in each JaggedTensor's weights.
    Features that share a table are looked up together. ``fused_params`` as for
    ``EmbeddingBagCollection``.

    >>> import ember
    >>> from ember.rec import EmbeddingCollection, EmbeddingConfig, KeyedJaggedTensor
    >>> ec = EmbeddingCollection([EmbeddingConfig(name="t", num_embeddings=10,
    ...                                           embedding_dim=4, feature_names=["f"])])
    >>> out = ec(KeyedJaggedTensor.from_lengths_sync(["f"], ember.tensor([1, 2, 3]),
    ...                                             ember.tensor([2, 1])))
    >>> out["f"].values().shape, out["f"].lengths().tolist()
    ((3, 4), [2, 1])
    """

    _tables_attr = "embeddings"

    def __init__(self, tables, device=None, need_indices=False, fused_params=None):
        super().__init__()
        who = type(self).__name__
        self._configs = _check_tables(tables, EmbeddingConfig, who)
        self._need_indices = bool(need_indices)
        dev = _device(device)
        self.embeddings = nn.ModuleDict()
        for cfg in self._configs:
            self.embeddings[cfg.name] = nn.Embedding(cfg.num_embeddings, cfg.embedding_dim,
                                                     sparse=True, _weight=_new_weight(cfg, dev))
        self._embedding_names_by_table = embedding_names_by_table(self._configs)
        for cfg in self._configs:
            _init_table(cfg, self.embeddings[cfg.name].weight)
        self._setup_fused(fused_params)

    def embedding_configs(self):
        return self._configs

    def need_indices(self):
        return self._need_indices

    def embedding_names_by_table(self):
        return self._embedding_names_by_table

    def embedding_dim(self):
        """The tables' common embedding dim (a ValueError if they differ)."""
        dims = {cfg.embedding_dim for cfg in self._configs}
        if len(dims) != 1:
            raise ValueError(f"EmbeddingCollection: the tables have different dims {dims}")
        return dims.pop()

    def forward(self, features):
        """``{embedding name: JaggedTensor}`` for every feature of every table."""
        if not isinstance(features, KeyedJaggedTensor):
            raise TypeError(f"{type(self).__name__}: expected a KeyedJaggedTensor, got "
                            f"{type(features).__name__}")
        who = type(self).__name__
        idx = features.index_per_key()
        lop = features.lengths_offset_per_key()
        lens_all = features.lengths()
        opk = features.offset_per_key()
        out = {}
        for cfg, names in zip(self._configs, self._embedding_names_by_table):
            w = self.embeddings[cfg.name].weight
            ids, _, _ = _feature_ids(features, cfg.feature_names, who)
            _check_ids(ids, cfg, who)
            ids_dev = _on(ids, w.array)
            rows = F.embedding(wrap(ids_dev), w, sparse=True)
            counts = [opk[idx[f] + 1] - opk[idx[f]] for f in cfg.feature_names]
            starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
            parts = [rows] if len(counts) == 1 else ember.split(rows, counts, 0)
            for j, (f, name, part) in enumerate(zip(cfg.feature_names, names, parts)):
                k = idx[f]
                lens = lens_all[lop[k]:lop[k + 1]]
                if lens.device != w.device:
                    lens = lens.to(w.device)
                wts = wrap(ids_dev[starts[j]:starts[j + 1]]) if self._need_indices else None
                out[name] = JaggedTensor(part, wts, lengths=lens, validate=False)
        return out

    def extra_repr(self):
        return f"need_indices={self._need_indices}" + (
            f", fused={self._fused_optimizer.optimizer_type.value}"
            if self._fused_optimizer is not None else "")


class FusedEmbeddingCollection(EmbeddingCollection):
    """An ``EmbeddingCollection`` whose tables train with a fused optimizer."""

    def __init__(self, tables, fused_params, device=None, need_indices=False):
        if not fused_params:
            raise ValueError("FusedEmbeddingCollection: fused_params is required")
        super().__init__(tables, device=device, need_indices=need_indices,
                         fused_params=fused_params)
