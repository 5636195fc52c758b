"""``ember.multiprocessing``: Python's ``multiprocessing`` with tensors that share memory.

Everything in ``multiprocessing`` is here (``Process``, ``Pool``, ``Queue``, ``SimpleQueue``,
``Pipe``, ``Manager``, ``Event``, ``Lock``, ``Value``, ``Array``, ``get_context``,
``set_start_method``, ``cpu_count``, ...), plus:

- ``share_memory_(tensor)`` / ``is_shared(tensor)`` / ``share_memory(module)``: move CPU
  storage into shared memory, in place (see ``_sharing``);
- a shared tensor sent through any of the above (queue item, pipe message, pool task or
  result, process argument; "fork", "spawn" or "forkserver") travels as a handle to its
  memory, so an in-place change in one process is seen by every other (Hogwild training);
  other tensors are copied, as plain pickling does;
- ``spawn(fn, args, nprocs)``: ``fn(rank, *args)`` in ``nprocs`` processes, the first failure
  re-raised with its rank and traceback.

Lifetime: segments are anonymous memory files that never get a name in ``/dev/shm``; the
kernel frees one when no process holds its descriptor or a mapping of it any more (also after
crashes). Descriptors stay open only while some tensor over the segment is alive, one per
segment per process (``share_memory(module)`` uses one segment for the whole module). Like
torch's file-descriptor strategy, a sender must be alive while a receiver unpickles.

Differences from ``torch.multiprocessing``: a tensor that is not shared is copied when sent
(torch moves it into shared memory first, in the sender); CUDA tensors cannot be shared
(``share_memory_`` says so, torch uses CUDA IPC); the only sharing strategy is
"file_descriptor".

    >>> import ember
    >>> import ember.multiprocessing as mp
    >>> model = ember.nn.Linear(4, 2)
    >>> mp.share_memory(model) is model, mp.is_shared(model.weight)
    (True, True)
"""
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403  (the standard surface, re-exported)

from ._reductions import register_defaults as _register_defaults
from ._sharing import is_shared, share_memory, share_memory_
from ._spawn import (ProcessContext, ProcessException, ProcessExitedException,
                     ProcessRaisedException, spawn, start_processes)

_register_defaults()

_STRATEGIES = frozenset({"file_descriptor"})


def get_all_sharing_strategies():
    """The ways tensors can be shared: {"file_descriptor"}."""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """The current sharing strategy (always "file_descriptor")."""
    return "file_descriptor"


def set_sharing_strategy(new_strategy):
    """Choose how tensors are shared; ember has one strategy, "file_descriptor" (segments
    without a file name, passed as descriptors), so any other name is an error."""
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"sharing strategy {new_strategy!r} is not available; ember shares "
                         "tensors only through file descriptors ('file_descriptor'), which "
                         "cannot leak /dev/shm files. If you hit the open-file limit, raise it "
                         "(ulimit -n) or share a module's tensors in one segment with "
                         "share_memory(module)")


__all__ = list(_mp.__all__) + [
    "get_all_sharing_strategies", "get_sharing_strategy", "is_shared", "ProcessContext",
    "ProcessException", "ProcessExitedException", "ProcessRaisedException",
    "set_sharing_strategy", "share_memory", "share_memory_", "spawn", "start_processes",
]
