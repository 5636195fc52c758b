"""``EmbeddingStorageEstimator``: the bytes each shard holds on its rank.

A shard of ``r x c`` holds its weights, ``r * c * itemsize`` (4 for fp32 and for int8 tables,
which train in fp32 until quantized; 2 for fp16), plus the state of the collection's fused
optimizer for those rows, in fp32, as ``ember.rec.modules.fused`` keeps it:

    sgd              nothing
    rowwise_adagrad  r * 4            (one accumulator per row)
    adagrad          r * c * 4
    adam             2 * r * c * 4    (two moments)

plus 8 bytes for the ``step`` counter when there is a fused optimizer. A collection without
fused optimizer is counted as weights only (its optimizer's state is not the planner's).
"""
from __future__ import annotations

from .types import StorageEstimator

_F32 = 4


def optimizer_state_bytes(optimizer, rows, cols):
    """Bytes of the fused optimizer's state for ``rows x cols`` of a table."""
    if optimizer is None:
        return 0
    per = {"sgd": 0, "rowwise_adagrad": rows * _F32, "adagrad": rows * cols * _F32,
           "adam": 2 * rows * cols * _F32}
    if optimizer not in per:
        raise ValueError(f"storage estimator: unknown fused optimizer {optimizer!r}; "
                         f"known: {sorted(per)}")
    return per[optimizer] + 8


def shard_bytes(table, rows, cols):
    return rows * cols * table.itemsize + optimizer_state_bytes(table.optimizer, rows, cols)


class EmbeddingStorageEstimator(StorageEstimator):
    """The default storage estimator (see the module docstring)."""

    def estimate(self, options, topology):
        for opt in options:
            for s in opt.shards:
                s.storage = float(shard_bytes(opt.table, s.rows, s.cols))
