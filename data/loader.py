"""``DataLoader``: batches from a map-style dataset (with a sampler) or an iterable pipe, in
the main process or in worker processes, in order, resumable mid-epoch.

    >>> import numpy as np
    >>> from ember.data import DataLoader, IterableWrapper
    >>> data = [np.full(2, i, np.float32) for i in range(10)]
    >>> [b.shape for b in DataLoader(data, batch_size=4)]
    [(4, 2), (4, 2), (2, 2)]
    >>> dl = DataLoader(IterableWrapper(range(10)).shuffle().sharding_filter(), batch_size=4,
    ...                 shuffle=True, seed=0)
    >>> it = iter(dl); first = next(it); state = dl.state_dict()
    >>> rest = [b.tolist() for b in it]
    >>> dl2 = DataLoader(IterableWrapper(range(10)).shuffle().sharding_filter(), batch_size=4,
    ...                  shuffle=True, seed=0)
    >>> dl2.load_state_dict(state)
    >>> [b.tolist() for b in dl2] == rest
    True

Determinism: with a ``seed``, the order of batches and the random numbers seen by each batch
(``random``, numpy, ember are seeded per batch) are a function of (seed, epoch) only. For a
map-style dataset this holds for any ``num_workers``; for an iterable pipe too when sharding
keeps whole batches together (one ``sharding_filter`` followed only by maps and one batch;
``pipe.explain()`` says so).
"""
from __future__ import annotations

import atexit
import multiprocessing as mp
import sys
import warnings

from . import errors
from .graph import choose_block, has_shuffle, sharding_filters
from .loader_iter import LIVE, LoaderIter
from .pipe import IterDataPipe
from .samplers import BatchSampler, RandomSampler, SequentialSampler, _dist_default
from .seeding import fresh_seed
from .worker import LoaderConfig


@atexit.register
def _shutdown_all():
    for it in list(LIVE):
        it._shutdown()


def _is_iter(ds):
    return isinstance(ds, IterDataPipe) or (
        not hasattr(ds, "__getitem__") and hasattr(ds, "__iter__"))


class DataLoader:
    """Batches of ``dataset``.

    ``dataset``: a map-style dataset (``__getitem__`` + ``__len__``: a list, a MapDataPipe,
    any Dataset) or an ``IterDataPipe``. ``batch_size`` None yields samples one at a time.
    ``shuffle``: map-style, a RandomSampler; iterable, turns the pipe's shuffle steps on/off.
    ``sampler``/``batch_sampler``: custom orders (map-style). ``collate_fn``: default
    ``default_collate`` (arrays -> Tensors). ``num_workers``: 0 runs in-process; ``N`` uses N
    worker processes (``multiprocessing_context``: "fork" (default on Linux) or "spawn").
    ``prefetch_factor``: batches in flight per worker (2). ``persistent_workers``: keep
    workers between epochs. ``timeout``: seconds to wait for a batch (0: forever; a dead
    worker is always reported at once). ``pin_memory``: batches in page-locked host memory
    when a CUDA GPU is present. ``seed``: base of every seed (drawn from ember's default
    generator if None, or from ``generator``). ``on_error``: "raise" or "skip" (bad samples
    are skipped and counted in ``skipped``). ``rank``/``world_size``: distributed sharding
    (default: ember.distributed, or the RANK/WORLD_SIZE variables). ``buffer_dir``: where
    worker batch buffers live (default /dev/shm, or the temp folder when it is too small).
    ``expected_batch_bytes``: a size hint for that check.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, seed=None, on_error="raise",
                 rank=None, world_size=None, in_order=True, buffer_dir=None,
                 expected_batch_bytes=None):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"num_workers must be an int >= 0, got {num_workers!r}")
        if timeout < 0:
            raise ValueError(f"timeout must be >= 0, got {timeout}")
        if prefetch_factor is not None and num_workers == 0:
            raise ValueError("prefetch_factor is only used with num_workers > 0")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers needs num_workers > 0")
        errors.check_policy(on_error)
        self.dataset = dataset
        self.is_iter = _is_iter(dataset)
        self.num_workers, self.timeout = num_workers, timeout
        self.prefetch_factor = 2 if prefetch_factor is None else int(prefetch_factor)
        if self.prefetch_factor < 1:
            raise ValueError("prefetch_factor must be >= 1")
        self.persistent_workers = persistent_workers
        self.worker_init_fn, self.pin_memory = worker_init_fn, pin_memory
        self.on_error = on_error or "raise"
        self.in_order = in_order
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.buffer_dir, self.expected_batch_bytes = buffer_dir, expected_batch_bytes
        self.rank = _dist_default("rank", "RANK") if rank is None else rank
        self.world_size = _dist_default("world", "WORLD_SIZE") if world_size is None else world_size
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank {self.rank} out of range for world_size {self.world_size}")
        if seed is None:
            seed = (int(generator.numpy_generator().integers(2 ** 63)) if generator is not None
                    else fresh_seed())
        self.seed = int(seed)
        ctx = multiprocessing_context
        if ctx is None:
            ctx = "fork" if sys.platform.startswith("linux") else "spawn"
        self.mp = mp.get_context(ctx) if isinstance(ctx, str) else ctx
        self.skipped: list = []
        self.epoch = -1
        self._pending_state = None
        self._iter = None
        self._workers = None
        self._own_sampler = False

        if self.is_iter:
            if sampler is not None or batch_sampler is not None:
                raise ValueError("sampler/batch_sampler apply to map-style datasets, not to an "
                                 "iterable pipe (shuffle inside the pipe instead)")
            self.shuffle = shuffle
            if shuffle and isinstance(dataset, IterDataPipe) and not has_shuffle(dataset):
                warnings.warn("DataLoader(shuffle=True) with a pipe that has no shuffle step: "
                              "the order is not shuffled; add .shuffle() to the pipe",
                              stacklevel=2)
            if isinstance(dataset, IterDataPipe) and not sharding_filters(dataset) and \
                    (num_workers > 1 or self.world_size > 1):
                warnings.warn("the pipe has no sharding_filter: one is added at its end so that "
                              "each sample is seen once; put .sharding_filter() early (after "
                              "shuffle, before decoding) so workers do not all do every "
                              "sample's work", stacklevel=2)
                self.dataset = dataset = dataset.sharding_filter()
            self.batch_size = batch_size
            self.sampler = self.batch_sampler = None
            self.block = choose_block(dataset, batch_size) if isinstance(dataset, IterDataPipe) \
                else 1
            if not isinstance(dataset, IterDataPipe):
                from .sources import IterableWrapper

                self.dataset = IterableWrapper(dataset)
        else:
            if batch_sampler is not None:
                if batch_size != 1 or shuffle or sampler is not None or drop_last:
                    raise ValueError("batch_sampler is mutually exclusive with batch_size, "
                                     "shuffle, sampler and drop_last")
                batch_size, drop_last = None, False
            elif sampler is not None and shuffle:
                raise ValueError("sampler is mutually exclusive with shuffle")
            if sampler is None:
                if shuffle:
                    sampler, self._own_sampler = RandomSampler(dataset, generator=generator), True
                else:
                    sampler = SequentialSampler(dataset)
            if batch_size is not None and batch_sampler is None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
            self.batch_size, self.sampler, self.batch_sampler = batch_size, sampler, batch_sampler
            if batch_sampler is not None:
                self.batch_size = getattr(batch_sampler, "batch_size", batch_size)
            self.shuffle = bool(shuffle)
            self.block = 1

    # ----------------------------------------------------------------- public surface
    def __len__(self):
        if not self.is_iter:
            return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)
        return self._iter_len()

    def _iter_len(self):
        """Batches per epoch: each worker's share of the pipe (its sharding filters set as in
        that worker, then restored), batched; TypeError where a length is unknown."""
        ds = self.dataset
        nw = max(self.num_workers, 1)
        filters = sharding_filters(ds)
        saved = [f.levels for f in filters]
        total = 0
        try:
            for wid in range(nw):
                for f in filters:
                    b = self.block if f.block is None else f.block
                    f.set_sharding([(self.world_size, self.rank, b), (nw, wid, b)])
                n = len(ds)
                if self.batch_size is None:
                    total += n
                else:
                    total += n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        finally:
            for f, lv in zip(filters, saved):
                f.levels = lv
        return total

    def __iter__(self):
        if self._iter is not None:
            self._iter._finish()
        state, self._pending_state = self._pending_state, None
        if state is not None:
            self.epoch = state["epoch"]
        else:
            self.epoch += 1
        self._iter = LoaderIter(self, self.epoch, state)
        return self._iter

    def set_epoch(self, epoch):
        """Make the next ``iter()`` run epoch ``epoch`` (seeds and order depend on it)."""
        self.epoch = int(epoch) - 1

    def state_dict(self):
        """Where the loader stands: the current epoch and the batches delivered so far (with
        the states of the workers' pipes for iterable pipes); restore with
        ``load_state_dict`` (in a new process too) to get exactly the remaining batches."""
        if self._pending_state is not None:
            return dict(self._pending_state)
        if self._iter is None or self._iter.finished:
            return {"epoch": self.epoch + 1, "seed": self.seed, "delivered": 0,
                    "kind": "iter" if self.is_iter else "map", "fresh": True}
        return self._iter.state_dict()

    def load_state_dict(self, state):
        """Resume from ``state`` at the next ``iter()``."""
        kind = "iter" if self.is_iter else "map"
        if state.get("kind") != kind:
            raise ValueError(f"state is from a {state.get('kind')} loader, this one is {kind}")
        if not state.get("fresh") and self.is_iter and \
                state.get("num_workers") != max(self.num_workers, 1):
            raise ValueError(f"state was saved with num_workers={state.get('num_workers')}; "
                             f"resume an iterable pipe with the same num_workers "
                             f"(this loader has {self.num_workers})")
        if self._iter is not None:
            self._iter._finish()
            self._iter = None
        self.seed = state["seed"]
        if state.get("fresh"):
            self.epoch = state["epoch"] - 1
            return
        self._pending_state = dict(state)

    @property
    def num_skipped(self):
        return len(self.skipped)

    def close(self):
        """Stop the workers (also done when the loader is garbage-collected or at exit)."""
        if self._iter is not None:
            self._iter._finish()
        if self._workers is not None:
            self._workers.shutdown()
            self._workers = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def explain(self, file=None):
        """``dataset.explain()`` for pipes, plus what this loader adds (batching, workers)."""
        from .explain import explain_loader

        return explain_loader(self, file=file)

    # ----------------------------------------------------------------- internals
    def _config(self, prefix, buffer_dir, fallback):
        return LoaderConfig(
            dataset=self.dataset, is_iter=self.is_iter,
            # map-style: only whether batches are index lists matters to the workers
            batch_size=self.batch_size if self.is_iter else (
                (self.batch_size or 1) if self.batch_sampler is not None else None),
            drop_last=self.drop_last, collate_fn=self.collate_fn,
            num_workers=self.num_workers, rank=self.rank, world_size=self.world_size,
            base_seed=self.seed, worker_init_fn=self.worker_init_fn, on_error=self.on_error,
            block=self.block, shuffle=self.shuffle if self.is_iter else None,
            prefix=prefix, buffer_dir=buffer_dir, fallback_dir=fallback)
