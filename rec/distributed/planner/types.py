"""The planner's vocabulary: the data its stages pass and the abstract stages themselves.

A plan is made in five stages, each an abstract base here with its default in its own file:

    tables ──Enumerator──> options (table x sharding type, with shards) + rejections
           ──StorageEstimator──> shard.storage (bytes)
           ──PerfEstimator──> shard.perf (seconds per step)
           ──Proposer──> one option per table (cheapest first; the next on feedback)
           ──Partitioner──> a rank for every shard, under every rank's memory

``EmbeddingShardingPlanner`` takes any of them as arguments and uses the defaults for the
rest. Sizes are bytes, costs seconds, memory per rank is the HBM of a GPU rank or the DDR of
a CPU rank (``Topology.memory_per_rank``).
"""
from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple


class ShardingType(enum.Enum):
    """How one table is split over ranks.

    * ``DATA_PARALLEL``: a full copy on every rank; gradients all-reduced
    * ``TABLE_WISE``: the whole table on one rank
    * ``ROW_WISE``: rows split evenly over all ranks
    * ``COLUMN_WISE``: columns split into shards, each placed like a table
    * ``TABLE_ROW_WISE``: rows split over the ranks of one host
    """

    DATA_PARALLEL = "data_parallel"
    TABLE_WISE = "table_wise"
    ROW_WISE = "row_wise"
    COLUMN_WISE = "column_wise"
    TABLE_ROW_WISE = "table_row_wise"


class PlannerError(ValueError):
    """No plan fits: the message names the table, its size and the memory per rank."""


GB = 1e9


def fmt_bytes(n):
    """``3.2 GB``, ``512.0 MB``, ``12 B``: decimal units, as memory is sold."""
    n = float(n)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def fmt_seconds(s):
    return f"{s * 1e3:.3g} ms" if s >= 1e-4 else f"{s * 1e6:.3g} us"


@dataclass
class Topology:
    """The machines a plan is for.

    ``world_size`` ranks, ``local_world_size`` of them per host (default: all on one host).
    Each rank has ``hbm_cap`` bytes of accelerator memory and ``ddr_cap`` bytes of host
    memory; a ``compute_device="cuda"`` rank keeps its tables in HBM, a ``"cpu"`` rank in
    DDR. Bandwidths are bytes per second: ``intra_host_bw`` between ranks of one host,
    ``inter_host_bw`` between hosts, ``hbm_mem_bw``/``ddr_mem_bw`` of a rank's own memory.
    """

    world_size: int
    compute_device: str = "cuda"
    hbm_cap: float = 32 * GB
    ddr_cap: float = 128 * GB
    local_world_size: Optional[int] = None
    intra_host_bw: float = 300e9
    inter_host_bw: float = 25e9
    hbm_mem_bw: float = 900e9
    ddr_mem_bw: float = 50e9

    def __post_init__(self):
        self.world_size = int(self.world_size)
        if self.world_size < 1:
            raise ValueError(f"Topology: world_size must be >= 1, got {self.world_size}")
        if self.compute_device not in ("cuda", "cpu"):
            raise ValueError("Topology: compute_device must be 'cuda' or 'cpu', got "
                             f"{self.compute_device!r}")
        if self.local_world_size is None:
            self.local_world_size = self.world_size
        self.local_world_size = int(self.local_world_size)
        if self.local_world_size < 1 or self.world_size % self.local_world_size:
            raise ValueError(f"Topology: local_world_size {self.local_world_size} must "
                             f"divide world_size {self.world_size}")
        for name in ("hbm_cap", "ddr_cap", "intra_host_bw", "inter_host_bw", "hbm_mem_bw",
                     "ddr_mem_bw"):
            if float(getattr(self, name)) <= 0:
                raise ValueError(f"Topology: {name} must be positive")

    @property
    def num_hosts(self):
        return self.world_size // self.local_world_size

    @property
    def memory_per_rank(self):
        """Bytes a rank can hold tables in: HBM on a GPU rank, DDR on a CPU rank."""
        return float(self.hbm_cap if self.compute_device == "cuda" else self.ddr_cap)

    @property
    def mem_bw(self):
        return float(self.hbm_mem_bw if self.compute_device == "cuda" else self.ddr_mem_bw)

    @property
    def comm_bw(self):
        """The bandwidth of a collective over all ranks: inter-host once there are hosts."""
        return float(self.inter_host_bw if self.num_hosts > 1 else self.intra_host_bw)

    def host_of(self, rank):
        return rank // self.local_world_size

    def to_dict(self):
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class ParameterConstraints:
    """What the user knows about one table: the ``sharding_types`` allowed (default all),
    the mean ids per sample of each feature that reads it (``pooling_factors``, default 1.0
    each), how many times per sample each feature is pooled (``num_poolings``, default 1)
    and the per-rank ``batch_size`` (default: the planner's). The ids per sample the cost
    model uses are ``sum(pooling_factors) * num_poolings``."""

    sharding_types: Optional[Sequence] = None
    pooling_factors: Optional[Sequence[float]] = None
    num_poolings: Optional[int] = None
    batch_size: Optional[int] = None

    def __post_init__(self):
        if self.sharding_types is not None:
            self.sharding_types = [ShardingType(getattr(s, "value", s))
                                   for s in self.sharding_types]
        if self.pooling_factors is not None:
            self.pooling_factors = [float(p) for p in self.pooling_factors]
            if any(p < 0 for p in self.pooling_factors):
                raise ValueError("ParameterConstraints: pooling_factors must be >= 0, got "
                                 f"{self.pooling_factors}")
        for name in ("num_poolings", "batch_size"):
            v = getattr(self, name)
            if v is not None and int(v) < 1:
                raise ValueError(f"ParameterConstraints: {name} must be >= 1, got {v}")


@dataclass
class TableSpec:
    """One table as the planner sees it (read from an embedding collection's configs)."""

    module_path: str
    name: str
    num_embeddings: int
    embedding_dim: int
    itemsize: int                 # bytes per weight element
    optimizer: Optional[str]      # the fused optimizer's kind (``EmbOptimType`` value)
    pooling_factor: float         # mean ids per sample, summed over the features read
    batch_size: int               # per rank
    pooling: str = "SUM"          # the table's PoolingType name (MAX cannot be split by rows)

    @property
    def key(self):
        return (self.module_path, self.name)


@dataclass
class Shard:
    """A block of a table: rows ``[row_offset, row_offset + rows)``, columns likewise.
    ``rank`` is set by the partitioner; ``storage`` (bytes) and ``perf`` (seconds) by the
    estimators."""

    row_offset: int
    col_offset: int
    rows: int
    cols: int
    rank: Optional[int] = None
    storage: float = 0.0
    perf: float = 0.0


@dataclass
class ShardingOption:
    """One way to shard one table: its type and its shards. ``fixed_ranks`` lists the ranks
    the shards must go on in order (data_parallel, row_wise) or is None (placed freely)."""

    table: TableSpec
    sharding_type: ShardingType
    shards: List[Shard]
    fixed_ranks: Optional[List[int]] = None

    @property
    def storage(self):
        return sum(s.storage for s in self.shards)

    @property
    def max_shard_storage(self):
        return max(s.storage for s in self.shards)

    @property
    def cost(self):
        """Seconds this option adds to the ranks' work per step: the sum over its shards
        (so splitting a table is not free: a row-wise table costs every rank its
        reduce-scatter)."""
        return sum(s.perf for s in self.shards)


@dataclass
class Rejection:
    """An option not in the plan, and why."""

    module_path: str
    table: str
    sharding_type: ShardingType
    reason: str

    def __str__(self):
        return f"{self.sharding_type.value}: {self.reason}"


class Enumerator(abc.ABC):
    """Lists the options of every table."""

    @abc.abstractmethod
    def enumerate(self, tables: List[TableSpec], topology: Topology,
                  constraints: Dict[str, ParameterConstraints]
                  ) -> Tuple[List[ShardingOption], List[Rejection]]:
        raise NotImplementedError("an Enumerator subclass must define enumerate(tables, "
                                  "topology, constraints) -> (options, rejections)")


class StorageEstimator(abc.ABC):
    """Sets ``shard.storage`` (bytes) on every shard of every option."""

    @abc.abstractmethod
    def estimate(self, options: List[ShardingOption], topology: Topology) -> None:
        raise NotImplementedError("a StorageEstimator subclass must define "
                                  "estimate(options, topology), setting shard.storage")


class PerfEstimator(abc.ABC):
    """Sets ``shard.perf`` (seconds per training step) on every shard of every option."""

    @abc.abstractmethod
    def estimate(self, options: List[ShardingOption], topology: Topology) -> None:
        raise NotImplementedError("a PerfEstimator subclass must define "
                                  "estimate(options, topology), setting shard.perf")


class Proposer(abc.ABC):
    """Chooses one option per table; told which table did not fit, proposes again."""

    @abc.abstractmethod
    def load(self, options: List[ShardingOption]) -> None:
        raise NotImplementedError("a Proposer subclass must define load(options)")

    @abc.abstractmethod
    def propose(self) -> Optional[List[ShardingOption]]:
        raise NotImplementedError("a Proposer subclass must define propose() -> one option "
                                  "per table, or None when it has nothing left")

    @abc.abstractmethod
    def feedback(self, failed: ShardingOption) -> None:
        raise NotImplementedError("a Proposer subclass must define feedback(failed option)")


class Partitioner(abc.ABC):
    """Gives every shard of a proposal a rank, keeping each rank under its memory."""

    @abc.abstractmethod
    def partition(self, proposal: List[ShardingOption], topology: Topology) -> None:
        raise NotImplementedError("a Partitioner subclass must define partition(proposal, "
                                  "topology), setting shard.rank or raising PartitionError")


class PartitionError(PlannerError):
    """A proposal's option that no rank had room for (``option``), and the message why."""

    def __init__(self, message, option):
        super().__init__(message)
        self.option = option
