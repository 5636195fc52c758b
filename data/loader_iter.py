"""One pass of a DataLoader over its dataset: dispatch, in-order delivery, state.

Map-style: the batch sampler's index lists go round-robin to the workers (batch ``i`` to
worker ``i % n``), at most ``prefetch_factor`` in flight per worker, and come back in order.
Iterable: each worker runs its own copy of the pipe (sharded), producing local batches
0, 1, 2, ...; delivery takes one batch from each worker in turn, skipping finished workers.
The state of a pass is (epoch, seed, batches delivered) plus, for iterable pipes, each
worker's pipe state after its last delivered batch and the round-robin position.
"""
from __future__ import annotations

import itertools
import time
import warnings
import weakref

from . import errors, shm
from .collate import default_convert, to_tensors
from .procs import Workers, raise_worker_error
from .seeding import derive_seed, global_rng_state, set_global_rng_state
from .worker import Fetcher

LIVE: "weakref.WeakSet" = weakref.WeakSet()  # passes with workers, shut down at exit
_GEN = itertools.count()
_END = object()


class LoaderIter:
    """One pass over the loader (an epoch, or the rest of one when resuming)."""

    def __init__(self, loader, epoch, state):
        self.loader, self.epoch = loader, epoch
        self.finished = False
        self.delivered = 0
        self.gen = next(_GEN)
        lo = loader
        self.skips_before = len(lo.skipped)
        self.nw = lo.num_workers
        if not lo.is_iter:
            self._init_map(state)
        if self.nw == 0:
            self._init_inprocess(state)
        else:
            if lo._workers is None or not lo._workers.alive:
                lo._workers = Workers(lo)
            self.w = lo._workers
            LIVE.add(self)
            if lo.is_iter:
                self._init_iter_workers(state)
            else:
                self._init_map_workers()

    # ------------------------------------------------------------ map-style
    def _init_map(self, state):
        lo = self.loader
        bs = lo.batch_sampler
        order = bs if bs is not None else lo.sampler
        if lo._own_sampler:
            lo.sampler.set_seed(derive_seed(lo.seed, "sampler", self.epoch))
        if state is not None and hasattr(order, "load_state_dict") and state.get("sampler"):
            order.load_state_dict(state["sampler"])
        self.indices = iter(order)
        self.sampler_state = order.state_dict() if hasattr(order, "state_dict") else {}
        # a random sampler draws its seed when iterated: take the state after the first draw
        self._first = next(self.indices, _END)
        self.sampler_state = order.state_dict() if hasattr(order, "state_dict") else {}
        skip = state["delivered"] if state is not None else 0
        self.seq = 0
        for _ in range(skip):
            self._next_indices()
        self.delivered = skip

    def _next_indices(self):
        if self._first is not _END:
            x, self._first = self._first, _END
            self.seq += 1
            return x
        x = next(self.indices, _END)
        if x is not _END:
            self.seq += 1
        return x

    # ------------------------------------------------------------ in-process
    def _init_inprocess(self, state):
        lo = self.loader
        cfg = lo._config(None, None, None)
        self.fetcher = Fetcher(cfg, 0)
        if lo.is_iter:
            self.fetcher.start_epoch(self.epoch, state["workers"][0] if state else None)
            self.delivered = state["delivered"] if state else 0

    def _next_inprocess(self):
        lo = self.loader
        saved = global_rng_state()
        policy = errors.get_default_policy()
        errors.set_default_policy(lo.on_error)
        try:
            while True:
                if lo.is_iter:
                    out = self.fetcher.iter_batch(self.delivered)
                else:
                    idx = self._next_indices()
                    if idx is _END:
                        raise StopIteration
                    out = self.fetcher.map_batch(self.seq - 1, idx)
                    if out is None:
                        self.delivered += 1
                        continue
                break
        finally:
            set_global_rng_state(saved)
            errors.set_default_policy(policy)
            lo.skipped.extend(errors.drain_skips())
        self.delivered += 1
        return self._finalize(out)

    def _finalize(self, out):
        lo = self.loader
        out = to_tensors(out) if lo.collate_fn is None else out
        if lo.collate_fn is None and lo.batch_size is None:
            out = default_convert(out)
        if lo.pin_memory:
            from .pin import pin

            out = pin(out)
        return out

    # ------------------------------------------------------------ workers, map-style
    def _init_map_workers(self):
        self.results = {}
        self.sent = self.seq
        self.next_deliver = self.delivered
        self.exhausted = False
        for wid in range(self.nw):
            self.w.send(wid, ("epoch", self.gen, self.epoch, None, -1))
        for _ in range(self.nw * self.loader.prefetch_factor):
            if not self._dispatch():
                break

    def _dispatch(self):
        idx = self._next_indices()
        if idx is _END:
            self.exhausted = True
            return False
        seq = self.seq - 1
        self.w.send(seq % self.nw, ("batch", self.gen, seq, idx))
        self.sent = self.seq
        return True

    def _next_map_workers(self):
        while True:
            if self.next_deliver >= self.sent and self.exhausted:
                raise StopIteration
            want = self.next_deliver
            msg = self.results.pop(want, None) if self.loader.in_order else (
                self.results.pop(next(iter(self.results))) if self.results else None)
            if msg is None:
                self._pump()
                continue
            self.next_deliver += 1
            self.delivered += 1
            self._dispatch()
            out = self._payload(msg)
            if out is None:  # every sample of this batch was skipped
                continue
            return self._finalize(out)

    # ------------------------------------------------------------ workers, iterable
    def _init_iter_workers(self, state):
        nw = self.nw
        lo = self.loader
        self.results = [dict() for _ in range(nw)]
        if state is not None:
            self.k = state["rr"]
            self.done = list(state["done"])
            self.local = list(state["local"])  # last delivered local batch per worker
            self.delivered = state["delivered"]
            starts = state["workers"]
        else:
            self.k, self.done, self.local = 0, [False] * nw, [-1] * nw
            starts = [None] * nw
        self.req_next = [j + 1 for j in self.local]
        for wid in range(nw):
            if not self.done[wid]:
                self.w.send(wid, ("epoch", self.gen, self.epoch, starts[wid], self.local[wid]))
        for wid in range(nw):
            for _ in range(lo.prefetch_factor):
                self._request(wid)

    def _request(self, wid):
        if self.done[wid]:
            return
        self.w.send(wid, ("next", self.gen, self.req_next[wid], self.local[wid]))
        self.req_next[wid] += 1

    def _next_iter_workers(self):
        nw = self.nw
        while True:
            if all(self.done):
                raise StopIteration
            k = self.k
            if self.done[k]:
                self.k = (k + 1) % nw
                continue
            want = self.local[k] + 1
            msg = self.results[k].pop(want, None)
            if msg is None:
                self._pump()
                continue
            if msg[0] == "end":
                self.done[k] = True
                self.k = (k + 1) % nw
                continue
            self.local[k] = want
            self.k = (k + 1) % nw
            self.delivered += 1
            self._request(k)
            return self._finalize(self._payload(msg))

    # ------------------------------------------------------------ message pump
    def _pump(self):
        lo = self.loader
        deadline = time.monotonic() + lo.timeout if lo.timeout else None
        try:
            wid, msg = self.w.recv(deadline)
        except TimeoutError:
            self._shutdown(grace=0.1)
            raise RuntimeError(f"DataLoader timed out after {lo.timeout} s waiting for a batch "
                               f"from its {self.nw} worker(s)") from None
        except RuntimeError:
            self._shutdown()
            raise
        kind = msg[0]
        if kind == "err" and msg[1] is None:  # start-up failure
            self._shutdown()
            self._raise(msg[3])
        if msg[1] != self.gen:  # an answer to an abandoned iteration: recycle its buffers
            if kind == "ok":
                self.w.released.extend(shm.segment_names(msg[3]))
            return
        if kind == "state":
            self.states[wid] = msg
            return
        if kind == "err" and msg[2] == -1:
            self._shutdown()
            self._raise(msg[3])
        if lo.is_iter:
            self.results[wid][msg[2]] = msg
        else:
            self.results[msg[2]] = msg

    def _payload(self, msg):
        if msg[0] == "err":
            self._finish()
            self._raise(msg[3])
        self.loader.skipped.extend(msg[4])
        return shm.unpack(msg[3], self.w.released)

    def _raise(self, info):
        self.finished = True
        raise_worker_error(info)

    # ------------------------------------------------------------ iterator protocol
    def __iter__(self):
        return self

    def __next__(self):
        if self.finished:
            raise StopIteration
        try:
            if self.nw == 0:
                return self._next_inprocess()
            if self.loader.is_iter:
                return self._next_iter_workers()
            return self._next_map_workers()
        except StopIteration:
            self._finish()
            self._report_skips()
            raise

    def _report_skips(self):
        lo = self.loader
        new = lo.skipped[self.skips_before:]
        if new:
            first = new[0]
            warnings.warn(
                f"DataLoader skipped {len(new)} bad sample(s) in epoch {self.epoch} "
                f"(on_error='skip'), e.g. {first.pipe} on {first.key or first.index!r}: "
                f"{first.error}; loader.skipped lists them all", RuntimeWarning, stacklevel=3)

    def __len__(self):
        return len(self.loader)

    def state_dict(self):
        lo = self.loader
        base = {"epoch": self.epoch, "seed": lo.seed, "delivered": self.delivered,
                "kind": "iter" if lo.is_iter else "map"}
        if not lo.is_iter:
            if not lo.in_order and self.nw:
                raise RuntimeError("state_dict() needs in_order=True")
            base["sampler"] = self.sampler_state
            return base
        base["num_workers"] = max(self.nw, 1)
        if self.nw == 0:
            base.update(rr=0, done=[False], local=[self.delivered - 1],
                        workers=[self.fetcher.it.state_dict()])
            return base
        self.states = {}
        for wid in range(self.nw):
            if not self.done[wid]:
                self.w.send(wid, ("state", self.gen, self.local[wid]))
        while len(self.states) < self.nw - sum(self.done):
            self._pump()
        workers = [None if self.done[w] else self.states[w][3] for w in range(self.nw)]
        base.update(rr=self.k, done=list(self.done), local=list(self.local), workers=workers)
        return base

    def _finish(self):
        """End this pass: workers stop unless they are persistent."""
        if self.finished:
            return
        self.finished = True
        if self.nw and not self.loader.persistent_workers:
            self._shutdown()

    def _shutdown(self, grace=2.0):
        """Stop this pass's workers now (also persistent ones: after a fault)."""
        self.finished = True
        lo = self.loader
        w = getattr(self, "w", None)
        if w is not None and w.alive:
            w.shutdown(grace)
        if w is not None and lo._workers is w:
            lo._workers = None

    def __del__(self):
        try:
            self._finish()
        except Exception:
            pass
