"""``EmbeddingPerfEstimator``: the seconds each shard costs per training step.

A simple, documented cost model (not a measurement). For a table of ``N x D`` with ``P`` ids
per sample (pooling factor summed over its features), ``B`` samples per rank, ``W`` ranks,
``L`` per host, element size ``e``, ids of 8 bytes and fp32 outputs, one shard of ``c``
columns costs

    lookup   = ids_looked_up * c * e / mem_bw          (forward gather)
    backward = 2 * lookup                              (gradient scatter + optimizer update)
    comm     = 2 * (ids_bytes + out_bytes) / bw        (forward and backward, same volume)

with, per sharding type:

    type            ids_looked_up   ids_bytes (input a2a)   out_bytes            bw
    data_parallel   B * P           0                       0                    -
                    + gradient all-reduce: 2 * (W-1)/W * N * D * 4 bytes over comm_bw
    table_wise      W * B * P       W * B * P * 8           W * B * c * 4 (a2a)  comm_bw
    column_wise     W * B * P       W * B * P * 8           W * B * c * 4 (a2a)  comm_bw
    row_wise        B * P           B * P * 8               W * B * D * 4 (reduce-scatter) comm_bw
    table_row_wise  W * B * P / L   W * B * P * 8 / L       W * B * D * 4 / L intra_host_bw
                                                            + B * D * 4 over inter_host_bw

``mem_bw`` is the rank's memory bandwidth (HBM or DDR), ``comm_bw`` the inter-host bandwidth
once there is more than one host, else the intra-host one (``Topology.comm_bw``).
"""
from __future__ import annotations

from .types import PerfEstimator, ShardingType

_ID, _OUT = 8, 4


class EmbeddingPerfEstimator(PerfEstimator):
    """The default perf estimator (see the module docstring)."""

    def estimate(self, options, topology):
        W, L = topology.world_size, topology.local_world_size
        mem_bw, bw = topology.mem_bw, topology.comm_bw
        for opt in options:
            t, st = opt.table, opt.sharding_type
            B, P, D = t.batch_size, t.pooling_factor, t.embedding_dim
            for s in opt.shards:
                c = s.cols
                if st is ShardingType.DATA_PARALLEL:
                    looked, comm = B * P, 2 * (W - 1) / W * t.num_embeddings * D * _OUT / bw
                elif st in (ShardingType.TABLE_WISE, ShardingType.COLUMN_WISE):
                    looked = W * B * P
                    comm = 2 * (W * B * P * _ID + W * B * c * _OUT) / bw
                elif st is ShardingType.ROW_WISE:
                    looked = B * P
                    comm = 2 * (B * P * _ID + W * B * D * _OUT) / bw
                else:  # TABLE_ROW_WISE
                    looked = W * B * P / L
                    comm = 2 * ((W * B * P * _ID + W * B * D * _OUT) / L
                                / topology.intra_host_bw
                                + B * D * _OUT / topology.inter_host_bw)
                lookup = looked * c * t.itemsize / mem_bw
                s.perf = float(3 * lookup + comm)
