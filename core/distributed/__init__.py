"""ember.distributed: process groups, collectives and launching over MPI (mpi4py) and NCCL (cupy)."""
