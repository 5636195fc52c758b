"""ember.distributed: process groups, collectives and launching over MPI (mpi4py) and NCCL (cupy).

    # mpiexec -n 2 python train.py
    import ember.distributed as dist
    dist.init_process_group("mpi")          # or "nccl" / "auto"
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
"""
from .collectives import (Work, all_gather, all_gather_into_tensor, all_gather_object,
                          all_reduce, all_to_all, all_to_all_single, barrier, broadcast,
                          broadcast_object_list, gather, irecv, isend, recv, reduce,
                          reduce_scatter, reduce_scatter_tensor, scatter, send)
from .group import (ProcessGroup, destroy_process_group, get_backend, get_global_rank,
                    get_group_rank, get_local_rank, get_rank, get_world_size,
                    init_process_group, is_available, is_initialized, new_group)
from .launch import launch
from .reduce_op import ReduceOp

__all__ = [
    "ReduceOp", "ProcessGroup", "Work", "init_process_group", "destroy_process_group",
    "is_available", "is_initialized", "get_rank", "get_world_size", "get_local_rank",
    "get_backend", "get_global_rank", "get_group_rank", "new_group", "launch",
    "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "gather",
    "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all_single", "all_to_all",
    "send", "recv", "isend", "irecv", "barrier", "broadcast_object_list", "all_gather_object",
]
