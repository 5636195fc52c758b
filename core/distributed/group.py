"""Process groups: ``init_process_group``, rank queries, ``new_group``, and abort-on-error.

Ranks are discovered from the MPI launcher (``mpiexec -n N python train.py``): the world is
``MPI.COMM_WORLD`` (duplicated, so ember's traffic never mixes with the user's own MPI calls).
``init_process_group`` installs an excepthook: an uncaught exception on any rank prints that
rank's traceback and calls ``MPI_Abort``, which ends every rank of the job within seconds
instead of leaving the others waiting in a collective. ``sys.exit(code)`` with a non-zero code
aborts the job the same way (``sys.exit`` is wrapped to remember the code, and an exit
handler aborts instead of entering MPI's finalize, which would wait for the other ranks).
"""
from __future__ import annotations

import atexit
import os
import sys
import time
import traceback

from .mpi_backend import MPIBackend


class ProcessGroup:
    """A set of ranks with its communicator. ``ranks``: their global ranks, in group order;
    ``rank``: this process's rank in the group (-1 when it is not a member)."""

    def __init__(self, backend, impl, ranks, rank):
        self.backend = backend
        self.impl = impl
        self.ranks = list(ranks)
        self.rank = rank
        self.size = len(self.ranks)

    def is_member(self):
        return self.rank >= 0

    def group_rank(self, global_rank, what="rank"):
        try:
            return self.ranks.index(int(global_rank))
        except ValueError:
            raise ValueError(f"{what} {global_rank} is not in this process group "
                             f"(ranks {self.ranks})") from None

    def __repr__(self):
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks}, rank={self.rank})"


class _State:
    world = None
    local_rank = 0
    prev_hook = None
    prev_exit = None
    exit_code = 0
    timeout = None


STATE = _State()


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("ember.distributed needs mpi4py and an MPI: "
                           "pip install 'ember[distributed]'") from e
    return MPI


def _cuda_ok():
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def init_process_group(backend="auto", init_method=None, timeout=None, world_size=None,
                       rank=None, store=None, group_name="", pg_options=None, device_id=None):
    """Join the job's process group (call once per rank, before any collective).

    ``backend``: ``"mpi"`` (numpy tensors), ``"nccl"`` (cupy tensors), or ``"auto"`` (nccl when
    cupy sees a GPU, else mpi). ``world_size``/``rank`` are read from the MPI launcher; passing
    them checks they agree. ``timeout`` (seconds or a ``timedelta``): the longest a blocking
    collective waits before raising (which, through the excepthook, aborts the job); None
    waits forever. ``device_id``: the GPU for nccl (default: local rank modulo GPU count).
    torch's ``"gloo"`` (and None) run on MPI here, with a one-line notice; ``init_method``,
    ``store``, ``group_name`` and ``pg_options`` are accepted for torch code and unused (the
    MPI launcher wires the ranks); ``world_size=-1``/``rank=-1`` mean "from the launcher".

        # run with: mpiexec -n 2 python train.py
        import ember.distributed as dist
        dist.init_process_group("mpi")
        print(dist.get_rank(), dist.get_world_size())
    """
    if STATE.world is not None:
        raise RuntimeError("init_process_group was already called (destroy_process_group first)")
    if backend is None:
        backend = "auto"
    if isinstance(backend, str) and backend.lower() == "gloo":
        print("ember.distributed: backend 'gloo' runs on MPI (ember has no gloo); launch with "
              "mpiexec -n N or python -m ember.distributed --nproc N", file=sys.stderr)
        backend = "mpi"
    if backend not in ("auto", "mpi", "nccl"):
        raise ValueError(f"backend must be 'auto', 'mpi', 'nccl' or 'gloo', got {backend!r}")
    world_size = None if world_size in (None, -1) else world_size
    rank = None if rank in (None, -1) else rank
    MPI = _mpi()
    comm = MPI.COMM_WORLD.Dup()
    r, n = comm.Get_rank(), comm.Get_size()
    if world_size is not None and int(world_size) != n:
        raise ValueError(f"world_size={world_size} but the MPI launcher started {n} ranks")
    if rank is not None and int(rank) != r:
        raise ValueError(f"rank={rank} but the MPI launcher gave this process rank {r}")
    local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=r)
    STATE.local_rank = local.Get_rank()
    local.Free()
    if backend == "auto":
        backend = "nccl" if _cuda_ok() else "mpi"
    mpi = MPIBackend(comm)
    if backend == "nccl":
        import cupy

        ndev = cupy.cuda.runtime.getDeviceCount()
        cupy.cuda.Device(STATE.local_rank % ndev if device_id is None else int(device_id)).use()
        from .nccl_backend import NCCLBackend

        impl = NCCLBackend(r, n, mpi)
    else:
        impl = mpi
    if timeout is not None and hasattr(timeout, "total_seconds"):
        timeout = timeout.total_seconds()
    STATE.timeout = None if timeout is None else float(timeout)
    STATE.world = ProcessGroup(backend, impl, range(n), r)
    for k, v in (("RANK", r), ("WORLD_SIZE", n), ("LOCAL_RANK", STATE.local_rank)):
        os.environ.setdefault(k, str(v))
    STATE.prev_hook = sys.excepthook
    sys.excepthook = _abort_on_error
    STATE.prev_exit, STATE.exit_code = sys.exit, 0
    sys.exit = _exit
    atexit.register(_abort_on_failed_exit)
    return STATE.world


def _exit(code=None):
    STATE.exit_code = code
    STATE.prev_exit(code)


def _abort_on_failed_exit():
    code = STATE.exit_code
    if STATE.world is None or code in (None, 0):
        return
    r = STATE.world.ranks[STATE.world.rank]
    sys.stdout.flush()
    sys.stderr.write(f"[ember.distributed] rank {r} exited with {code!r}; aborting the job\n")
    sys.stderr.flush()
    if hasattr(STATE.world.impl, "abort"):
        STATE.world.impl.abort()
    _mpi().COMM_WORLD.Abort(code if isinstance(code, int) else 1)


def _abort_on_error(etype, value, tb):
    """Print this rank's error and abort the whole job (every rank exits, none hangs)."""
    world = STATE.world
    r = world.ranks[world.rank] if world is not None else "?"
    try:
        sys.stderr.write(f"[ember.distributed] rank {r} failed; aborting the job:\n")
        traceback.print_exception(etype, value, tb, file=sys.stderr)
        sys.stderr.flush()
        sys.stdout.flush()
        # the launcher forwards our output through a pipe; an abort right away can tear the
        # job down before it has passed the message on (seen under load: an empty log)
        time.sleep(0.2)
    finally:
        if world is not None and hasattr(world.impl, "abort"):
            world.impl.abort()
        _mpi().COMM_WORLD.Abort(1)


def is_available():
    """True when mpi4py (and so an MPI) can be imported."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_initialized():
    return STATE.world is not None


def _world():
    if STATE.world is None:
        raise RuntimeError("the default process group is not initialized: "
                           "call ember.distributed.init_process_group() first")
    return STATE.world


def group_or_world(group):
    g = _world() if group is None else group
    if not g.is_member():
        raise RuntimeError(f"this rank is not a member of {g}")
    return g


def get_rank(group=None):
    """This process's rank in ``group`` (default: the world); -1 if not a member."""
    return (_world() if group is None else group).rank


def get_world_size(group=None):
    return (_world() if group is None else group).size


def get_local_rank():
    """Rank among the processes on this machine (selects the GPU)."""
    _world()
    return STATE.local_rank


def get_backend(group=None):
    return (_world() if group is None else group).backend


def get_global_rank(group, group_rank):
    return group.ranks[group_rank]


def get_group_rank(group, global_rank):
    return group.group_rank(global_rank)


def new_group(ranks=None, backend=None):
    """A group over ``ranks`` (global ranks; default all). Every rank of the world must call
    it, members or not; non-members get a group whose ``rank`` is -1."""
    world = _world()
    MPI = _mpi()
    ranks = list(range(world.size)) if ranks is None else sorted(int(x) for x in ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= x < world.size for x in ranks):
        raise ValueError(f"new_group: ranks must be distinct ranks in [0, {world.size}), "
                         f"got {ranks}")
    backend = backend or world.backend
    wcomm = world.impl.comm if world.backend == "mpi" else world.impl.mpi.comm
    grp = wcomm.Get_group().Incl(ranks)
    comm = wcomm.Create(grp)
    grp.Free()
    if comm == MPI.COMM_NULL:
        return ProcessGroup(backend, None, ranks, -1)
    mpi = MPIBackend(comm)
    if backend == "nccl":
        from .nccl_backend import NCCLBackend

        impl = NCCLBackend(mpi.rank, mpi.size, mpi)
    else:
        impl = mpi
    return ProcessGroup(backend, impl, ranks, mpi.rank)


def destroy_process_group(group=None):
    """Release ``group``'s communicator; with no argument, leave the default group (the
    excepthook is removed; ``init_process_group`` may be called again)."""
    if group is not None and group is not STATE.world:
        if group.impl is not None:
            group.impl.free()
            group.impl = None
        group.rank = -1
        return
    world = _world()
    world.impl.free()
    STATE.world = None
    if sys.excepthook is _abort_on_error:
        sys.excepthook = STATE.prev_hook or sys.__excepthook__
    if sys.exit is _exit:
        sys.exit = STATE.prev_exit
    atexit.unregister(_abort_on_failed_exit)
