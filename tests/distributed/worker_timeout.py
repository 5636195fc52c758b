"""Run under mpiexec: rank 1 never joins the all_reduce; with ``timeout=1`` rank 0's wait
raises, and the excepthook aborts the job (rank 1 included) instead of hanging."""
import time

import ember
import ember.distributed as dist

dist.init_process_group("mpi", timeout=1.0)
if dist.get_rank() == 1:
    time.sleep(60)
else:
    dist.all_reduce(ember.ones(3))
print("unreachable", flush=True)
