"""Run under mpiexec (2 or 4 ranks): every sharded-module check in one launch (each launch
costs seconds): ``worker_sharded_ebc`` (each sharding type vs the unsharded collection),
``worker_sharded_ec`` (the same for sequence collections), then ``worker_sharded_dmp``
(DistributedModelParallel, TrainPipelineSparseDist, state-dict round trips)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import worker_sharded_dmp  # noqa: E402
import worker_sharded_ebc  # noqa: E402
import worker_sharded_ec  # noqa: E402

worker_sharded_ebc.main()
worker_sharded_ec.main()
worker_sharded_dmp.main()
