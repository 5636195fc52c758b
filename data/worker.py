"""DataLoader workers: what runs inside each worker process, and the batch production it
shares with the in-process (``num_workers=0``) path.

Protocol (one request pipe and one result pipe per worker; ``gen`` tags an iteration so
late answers to an abandoned one are recognised and dropped):

    main -> worker: ("epoch", gen, epoch, state, j0)  start an epoch (iterable: build the
                                                   pipe, restore ``state`` = after batch j0)
                    ("batch", gen, seq, indices)   map-style: load and collate these indices
                    ("next", gen, j, upto)         iterable: produce local batch j; batches
                                                   up to ``upto`` were delivered
                    ("state", gen, upto)           iterable: the pipe state after batch upto
                    ("free", names)                these buffers may be reused
                    ("stop",)
    worker -> main: ("ok", gen, key, packed_batch, skipped)   ("end", gen, j, skipped)
                    ("err", gen, key, info)                    ("state", gen, upto, state)

Before each batch the worker seeds ``random``, numpy and ember from (seed, epoch, rank, global
batch number), so random transforms repeat exactly, on resume too, whatever the number of
workers.
"""
from __future__ import annotations

import signal

import os
import pickle
import sys
import traceback
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from . import errors
from .collate import collate_arrays
from .seeding import derive_seed, seed_everything


@dataclass
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker (None in the main process)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rank: int = 0
    world_size: int = 1


_INFO: list = [None]
_ARENA: list = [None]


def get_worker_info():
    """The current worker's ``WorkerInfo``, or None outside DataLoader workers."""
    return _INFO[0]


def current_arena():
    """This worker's shared-memory arena (None outside DataLoader workers)."""
    return _ARENA[0]


@dataclass
class LoaderConfig:
    """Everything a worker needs (pickled once per worker with the spawn context)."""

    dataset: Any
    is_iter: bool
    batch_size: int | None
    drop_last: bool
    collate_fn: Callable | None
    num_workers: int
    rank: int
    world_size: int
    base_seed: int
    worker_init_fn: Callable | None
    on_error: str
    block: int
    shuffle: bool | None
    prefix: str
    buffer_dir: str | None
    fallback_dir: str | None


class Fetcher:
    """Produces collated batches for one worker (or the main process when in-process)."""

    def __init__(self, cfg: LoaderConfig, worker_id: int):
        self.cfg, self.wid = cfg, worker_id
        self.nw = max(cfg.num_workers, 1)
        self.epoch = 0
        self.it = None

    # ----------------------------------------------------------------- epoch setup
    def start_epoch(self, epoch, state=None):
        self.epoch = epoch
        cfg = self.cfg
        if not cfg.is_iter:
            return None
        from .batching import Batcher
        from .graph import prepare

        pipe = prepare(cfg.dataset, base_seed=cfg.base_seed, epoch=epoch, rank=cfg.rank,
                       world_size=cfg.world_size, worker_id=self.wid, num_workers=self.nw,
                       block=cfg.block, shuffle=cfg.shuffle)
        if cfg.batch_size is not None:
            pipe = Batcher(pipe, cfg.batch_size, cfg.drop_last)
        self.it = iter(pipe)
        if state is not None:
            self.it.load_state_dict(state)
        return self.it.state_dict()

    def _seed(self, g):
        seed_everything(derive_seed(self.cfg.base_seed, "batch", self.epoch, self.cfg.rank, g))

    def _collate(self, samples):
        cfg = self.cfg
        if cfg.batch_size is None:
            return samples if cfg.collate_fn is None else cfg.collate_fn(samples)
        if cfg.collate_fn is None:
            return collate_arrays(samples)  # stacks into shared memory in a worker
        return cfg.collate_fn(samples)

    # ----------------------------------------------------------------- batches
    def map_batch(self, seq, indices):
        """The collated batch for ``indices`` (a list, or one index without batching); None
        when every sample was skipped."""
        self._seed(seq)
        ds = self.cfg.dataset
        if self.cfg.batch_size is None:
            return self._collate(_get(ds, indices))
        samples = []
        skip = errors.get_default_policy() == "skip"
        for i in indices:
            try:
                samples.append(ds[i])
            except Exception as e:
                if not skip:
                    e.add_note(f"ember.data: dataset[{i!r}] failed")
                    raise
                errors.record_skip("dataset", i, i, e)
        if not samples:
            return None
        return self._collate(samples)

    def iter_batch(self, j):
        """Local batch ``j`` of this worker's pipe (raises StopIteration at the end)."""
        self._seed(j * self.nw + self.wid)
        return self._collate(next(self.it))


def _get(ds, i):
    try:
        return ds[i]
    except Exception as e:
        if errors.get_default_policy() == "skip":
            errors.record_skip("dataset", i, i, e)
            return None
        e.add_note(f"ember.data: dataset[{i!r}] failed")
        raise


def exception_info(e, worker_id, where):
    """A picklable description of ``e`` for the main process."""
    try:
        etype = pickle.loads(pickle.dumps(type(e)))
    except Exception:
        etype = None
    return {"type": etype, "type_name": type(e).__name__, "msg": str(e),
            "tb": "".join(traceback.format_exception(e)), "worker": worker_id,
            "pid": os.getpid(), "where": where}


def _recv(conn, parent_pid):
    """Block for the next request; exit quietly if the main process is gone."""
    while not conn.poll(1.0):
        if os.getppid() != parent_pid:
            raise EOFError
    return conn.recv()


def worker_loop(cfg: LoaderConfig, wid: int, req, res, parent_pid: int, close=()):
    """The body of a worker process."""
    # Ctrl-C in a terminal reaches the whole process group: the main process decides what
    # happens (a recipe checkpoints and exits 130) and stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for c in close:  # ends of the pipes that belong to the main process (fork inherits them)
        try:
            c.close()
        except Exception:
            pass
    seed = derive_seed(cfg.base_seed, "worker", cfg.rank, wid)
    _INFO[0] = WorkerInfo(wid, cfg.num_workers, seed, cfg.dataset, cfg.rank, cfg.world_size)
    errors.set_default_policy(cfg.on_error)
    errors.drain_skips()
    seed_everything(seed)
    try:
        from .shm import Arena

        arena = _ARENA[0] = Arena(cfg.buffer_dir, f"{cfg.prefix}-w{wid}", cfg.fallback_dir)
        if cfg.worker_init_fn is not None:
            cfg.worker_init_fn(wid)
        fetcher = Fetcher(cfg, wid)
    except Exception as e:
        res.send(("err", None, None, exception_info(e, wid, "worker start-up")))
        return
    gen, snaps, todo = None, {}, deque()
    try:
        while True:
            msgs = [_recv(req, parent_pid)] if not todo else []
            while req.poll(0):
                msgs.append(req.recv())
            for m in msgs:
                kind = m[0]
                if kind == "stop":
                    return
                if kind == "free":
                    arena.release(m[1])
                elif kind == "state":
                    res.send(("state", m[1], m[2], snaps.get(m[2])))
                elif kind == "epoch":
                    gen, todo, snaps = m[1], deque(), {}
                    try:
                        first = fetcher.start_epoch(m[2], m[3])
                        if first is not None:
                            snaps[m[4]] = first
                    except Exception as e:
                        res.send(("err", gen, -1, exception_info(e, wid, "epoch start")))
                elif m[1] == gen:
                    if kind == "next":
                        upto = m[3]
                        for k in [k for k in snaps if k < upto]:
                            del snaps[k]
                    todo.append(m)
            if not todo:
                continue
            m = todo.popleft()
            key = m[2]
            try:
                if m[0] == "batch":
                    out = fetcher.map_batch(key, m[3])
                else:
                    try:
                        out = fetcher.iter_batch(key)
                    except StopIteration:
                        res.send(("end", gen, key, errors.drain_skips()))
                        todo = deque(t for t in todo if t[0] != "next")
                        continue
                    snaps[key] = fetcher.it.state_dict()
                res.send(("ok", gen, key, arena.pack(out), errors.drain_skips()))
            except Exception as e:
                where = (f"batch {key} (dataset indices {m[3]!r})" if m[0] == "batch"
                         else f"its local batch {key}")
                res.send(("err", gen, key, exception_info(e, wid, where)))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        return
    finally:
        arena.close()
        sys.stdout.flush()
