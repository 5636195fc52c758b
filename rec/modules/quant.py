"""Quantized embedding tables for inference: ``quantize_embeddings(model)``.

INT8 tables are stored row-wise, FBGEMM's layout in spirit: each row ``x`` (D floats) keeps
D uint8 codes ``q`` plus its own float16 ``scale`` and ``bias`` (torchrec's split state-dict
form: ``embedding_bags.<table>.weight`` (N, D) uint8, ``weight_qscale`` and ``weight_qbias``
(N, 1) float16)::

    bias  = min(x)            (as float16, rounded down)
    scale = (max(x) - bias) / 255   (as float16, rounded up; 1 for a constant row)
    q     = round((x - bias) / scale)   in [0, 255]
    x    ~= q * scale + bias    (error at most scale / 2 per element)

Rounding the float16 bias down and the scale up (FBGEMM rounds to nearest and clamps) keeps
every code in range, so no element is clipped. A table takes ``D + 4`` bytes per row instead
of ``4 * D``. FP16 tables store float16 rows. Lookups dequantize the gathered rows only and
pool them in float32.

    >>> import ember
    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig
    >>> from ember.rec.modules.quant import quantize_embeddings
    >>> ebc = EmbeddingBagCollection([EmbeddingBagConfig(name="t", num_embeddings=100,
    ...                                                  embedding_dim=8, feature_names=["f"])])
    >>> q = quantize_embeddings(ebc)
    >>> sorted(q.state_dict())
    ['embedding_bags.t.weight', 'embedding_bags.t.weight_qbias', 'embedding_bags.t.weight_qscale']
    >>> q.embedding_bags["t"].weight.dtype
    dtype('uint8')
"""
from __future__ import annotations

import copy

import numpy as np

import ember
from ember import _backend as B
from ember import nn

from ..sparse import JaggedTensor, KeyedJaggedTensor, KeyedTensor
from ..sparse._util import cumsum0, wrap
from ._lookup import _layout_jt, pool_rows
from .embedding_configs import DataType
from .embedding_modules import (_MODES, EmbeddingBagCollection, EmbeddingCollection, _check_ids,
                                _feature_ids, _on, embedding_names_by_table)

_f16, _f32 = np.dtype(np.float16), np.dtype(np.float32)


def _f16_down(a):
    """float16 values <= ``a`` (float32), each the nearest such."""
    h = a.astype(_f16)
    over = h.astype(_f32) > a
    if over.any():
        h[over] = np.nextafter(h[over], np.float16(-np.inf))
    return h


def _f16_up(a):
    h = a.astype(_f16)
    under = h.astype(_f32) < a
    if under.any():
        h[under] = np.nextafter(h[under], np.float16(np.inf))
    return h


def quantize_rowwise(weight):
    """``(q, scale, bias)`` of a (N, D) float table: uint8 codes (N, D) and float16 (N, 1)
    per-row scale and bias (see the module docstring). Host numpy arrays."""
    w = np.asarray(weight, dtype=_f32)
    lo = w.min(axis=1, keepdims=True)
    hi = w.max(axis=1, keepdims=True)
    bias = _f16_down(lo)
    span = hi - bias.astype(_f32)
    scale = _f16_up(span / 255)
    scale[scale == 0] = 1
    s = scale.astype(_f32)
    q = np.rint((w - bias.astype(_f32)) / s)
    np.clip(q, 0, 255, out=q)
    return q.astype(np.uint8), scale, bias


def dequantize_rowwise(q, scale, bias):
    """float32 rows from codes and per-row scale/bias (any backend)."""
    out = q.astype(_f32)
    out *= scale.astype(_f32)
    out += bias.astype(_f32)
    return out


class QuantTable(nn.Module):
    """One table's storage: ``weight`` (uint8 codes, float16 or float32 rows) and, for
    INT8, ``weight_qscale`` / ``weight_qbias`` (N, 1) float16; buffers, not parameters."""

    def __init__(self, weight, data_type):
        super().__init__()
        self.data_type = DataType(data_type)
        a = weight.detach().array
        dev = weight.device
        if self.data_type is DataType.INT8:
            q, s, b = quantize_rowwise(B.to_device(a, B.device("cpu")))
            self.register_buffer("weight", ember.from_numpy(q).to(dev))
            self.register_buffer("weight_qscale", ember.from_numpy(s).to(dev))
            self.register_buffer("weight_qbias", ember.from_numpy(b).to(dev))
        else:
            dt = _f16 if self.data_type is DataType.FP16 else _f32
            self.register_buffer("weight", wrap(a.astype(dt)))
        self.num_embeddings, self.embedding_dim = a.shape

    def rows(self, ids):
        """float32 rows (len(ids), D) of the ids (raw array on the table's device)."""
        w = self.weight.array
        if self.data_type is DataType.INT8:
            return dequantize_rowwise(w.take(ids, axis=0),
                                      self.weight_qscale.array.take(ids, axis=0),
                                      self.weight_qbias.array.take(ids, axis=0))
        return w.take(ids, axis=0).astype(_f32, copy=False)

    def dequantize(self):
        """The whole table as float32 (N, D)."""
        return wrap(self.rows(B.namespace(self.weight.array).arange(self.num_embeddings)))

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}, {self.data_type.name}"


def _dtype_for(cfg, dtype, per_table):
    if per_table and cfg.name in per_table:
        return DataType(per_table[cfg.name])
    return DataType(dtype) if dtype is not None else cfg.data_type


class QuantEmbeddingBagCollection(nn.Module):
    """Inference twin of ``EmbeddingBagCollection`` on quantized tables (no gradients):
    same inputs, same ``KeyedTensor`` output (float32), state-dict keys
    ``embedding_bags.<table>.weight`` (+ ``weight_qscale``/``weight_qbias`` for INT8)."""

    def __init__(self, ebc, dtype=DataType.INT8, per_table_dtype=None):
        super().__init__()
        self._configs = ebc.embedding_bag_configs()
        self._is_weighted = ebc.is_weighted()
        self._embedding_names = list(ebc._embedding_names)
        self._lengths_per_embedding = list(ebc._lengths_per_embedding)
        self.embedding_bags = nn.ModuleDict()
        for cfg in self._configs:
            self.embedding_bags[cfg.name] = QuantTable(ebc.embedding_bags[cfg.name].weight,
                                                       _dtype_for(cfg, dtype, per_table_dtype))

    def embedding_bag_configs(self):
        return self._configs

    def is_weighted(self):
        return self._is_weighted

    def forward(self, features):
        if not isinstance(features, KeyedJaggedTensor):
            raise TypeError(f"{type(self).__name__}: expected a KeyedJaggedTensor")
        if features.variable_stride_per_key():
            raise ValueError(f"{type(self).__name__}: pooled outputs need one batch size for "
                             f"every feature, got {features.stride_per_key()}")
        if self._is_weighted and features.weights_or_none() is None:
            raise ValueError(f"{type(self).__name__}(is_weighted=True): the "
                             "KeyedJaggedTensor has no weights")
        who = type(self).__name__
        Bn = features.stride()
        outs = []
        for cfg in self._configs:
            table = self.embedding_bags[cfg.name]
            ids, lens, psw = _feature_ids(features, cfg.feature_names, who)
            _check_ids(ids, cfg, who)
            w = table.weight.array
            ids, lens = _on(ids, w), _on(lens, w)
            rows = table.rows(ids)
            if self._is_weighted:
                rows *= _on(psw.detach().array, w).astype(_f32, copy=False)[:, None]
            out, _, _ = pool_rows(rows, _layout_jt(ids, cumsum0(lens)), cfg.num_features(),
                                  Bn, _MODES[cfg.pooling])
            outs.append(wrap(out))
        values = outs[0] if len(outs) == 1 else ember.cat(outs, 1)
        return KeyedTensor(self._embedding_names, self._lengths_per_embedding, values)


class QuantEmbeddingCollection(nn.Module):
    """Inference twin of ``EmbeddingCollection`` on quantized tables: ``{feature:
    JaggedTensor}`` of float32 rows."""

    def __init__(self, ec, dtype=DataType.INT8, per_table_dtype=None):
        super().__init__()
        self._configs = ec.embedding_configs()
        self._need_indices = ec.need_indices()
        self._names = embedding_names_by_table(self._configs)
        self.embeddings = nn.ModuleDict()
        for cfg in self._configs:
            self.embeddings[cfg.name] = QuantTable(ec.embeddings[cfg.name].weight,
                                                   _dtype_for(cfg, dtype, per_table_dtype))

    def embedding_configs(self):
        return self._configs

    def forward(self, features):
        idx = features.index_per_key()
        lop, opk = features.lengths_offset_per_key(), features.offset_per_key()
        lens_all = features.lengths()
        out = {}
        for cfg, names in zip(self._configs, self._names):
            table = self.embeddings[cfg.name]
            for f, name in zip(cfg.feature_names, names):
                k = idx.get(f)
                if k is None:
                    raise KeyError(f"{type(self).__name__}: feature {f!r} is not in the "
                                   f"KeyedJaggedTensor (keys: {features.keys()})")
                ids = features.values().array[opk[k]:opk[k + 1]]
                _check_ids(ids, cfg, type(self).__name__)
                ids = _on(ids, table.weight.array)
                out[name] = JaggedTensor(wrap(table.rows(ids)),
                                         wrap(ids) if self._need_indices else None,
                                         lengths=lens_all[lop[k]:lop[k + 1]], validate=False)
        return out


def quantize_embeddings(module, dtype=DataType.INT8, inplace=False, per_table_dtype=None):
    """``module`` with every ``EmbeddingBagCollection`` / ``EmbeddingCollection`` in it
    (itself included) replaced by its quantized inference twin. ``dtype``: a ``DataType``
    (INT8, FP16 or FP32) for every table, or None to use each table config's
    ``data_type``; ``per_table_dtype``: ``{table name: DataType}`` overrides. The original
    is left as it is unless ``inplace``."""
    def convert(m):
        if isinstance(m, EmbeddingBagCollection):
            return QuantEmbeddingBagCollection(m, dtype, per_table_dtype)
        if isinstance(m, EmbeddingCollection):
            return QuantEmbeddingCollection(m, dtype, per_table_dtype)
        return None

    top = convert(module)
    if top is not None:
        return top
    if not inplace:
        module = copy.deepcopy(module)
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            q = convert(child)
            if q is not None:
                setattr(parent, name, q)
    return module
