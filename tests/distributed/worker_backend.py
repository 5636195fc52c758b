"""Run under mpiexec: print the backend ``init_process_group("auto")`` picked."""
import ember.distributed as dist

dist.init_process_group("auto")
print(f"rank {dist.get_rank()}: backend {dist.get_backend()}", flush=True)
dist.destroy_process_group()
