"""Run under mpiexec: rank 1 fails in the middle of DDP training while rank 0 waits in a
collective (``FAULT=raise``: an exception; ``FAULT=exit``: ``sys.exit(3)``); the whole job must
abort (non-zero exit, rank 1's error shown) instead of hanging."""
import os
import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
R = dist.get_rank()
model = DDP(nn.Linear(8, 2))
opt = ember.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    if R == 1 and step == 3:
        if os.environ.get("FAULT") == "exit":
            sys.exit(3)
        raise ValueError("boom on rank 1 at step 3")
    model(ember.tensor(np.ones((4, 8), np.float32))).sum().backward()
    opt.step()
    opt.zero_grad()
print("unreachable: training finished", flush=True)
