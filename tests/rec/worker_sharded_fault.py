"""Run under mpiexec (2 ranks): ranks that feed different batch sizes to a sharded
collection both stop with an error naming the sizes (the job aborts; nothing hangs)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember.distributed as dist  # noqa: E402
from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig  # noqa: E402
from ember.rec.distributed import DistributedModelParallel  # noqa: E402
from mpi_sharded import global_batch, init_mpi, kjt_of  # noqa: E402

init_mpi()
R = dist.get_rank()
ebc = EmbeddingBagCollection([EmbeddingBagConfig(name="t", num_embeddings=10, embedding_dim=4,
                                                 feature_names=["f"])],
                             fused_params={"optimizer": "sgd"})
model = DistributedModelParallel(ebc)
data = global_batch(np.random.default_rng(0), ["f"], 4, 2, {"f": 10})
model(kjt_of(data, ["f"], 0, 3 + R)).values().sum().backward()  # rank 0: 3, rank 1: 4
print(f"rank {R}: no error", flush=True)
