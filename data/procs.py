"""The worker processes of a DataLoader: start, message pipes, liveness, shutdown, and
re-raising a worker's exception in the main process.

Liveness needs no polling thread: the main process waits on the result pipes *and* on each
process's sentinel together (``multiprocessing.connection.wait``), so a worker killed by a
signal wakes it at once and becomes a clear error (with the signal's name), never a hang.
"""
from __future__ import annotations

import os
import signal
import tempfile
import time
import uuid
from multiprocessing.connection import wait as mp_wait

from . import shm
from .worker import worker_loop


from .errors import WorkerError, raise_worker_error  # noqa: E402,F401 (re-exported)


class Workers:
    """The worker processes of one loader (per iteration, or persistent)."""

    def __init__(self, loader):
        self.loader = loader
        self.prefix = f"ember-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        need = loader.expected_batch_bytes or (64 << 20)
        need *= loader.num_workers * loader.prefetch_factor + 2
        if loader.buffer_dir is not None:
            buffer_dir, fallback = loader.buffer_dir, None
        else:
            buffer_dir = shm.choose_dir(need)
            fallback = None if buffer_dir != shm.shm_dir() else tempfile.gettempdir()
        self.dirs = [buffer_dir, fallback]
        cfg = loader._config(self.prefix, buffer_dir, fallback)
        self.procs, self.req, self.res = [], [], []
        self.released = shm.new_release_queue()  # filled by finalizers of batch mappings
        ctx = loader.mp
        for wid in range(loader.num_workers):
            req_r, req_w = ctx.Pipe(duplex=False)
            res_r, res_w = ctx.Pipe(duplex=False)
            p = ctx.Process(target=worker_loop, name=f"ember-data-worker-{wid}",
                            args=(cfg, wid, req_r, res_w, os.getpid(), (req_w, res_r)),
                            daemon=True)
            p.start()
            req_r.close()
            res_w.close()
            self.procs.append(p)
            self.req.append(req_w)
            self.res.append(res_r)
        self.alive = True

    def flush_released(self):
        """Tell each worker which of its buffers the main process has let go of."""
        if not self.released:
            return
        per = {}
        while self.released:
            name = self.released.popleft()
            wid = int(name.rsplit("-", 2)[1][1:])  # names are <prefix>-w<wid>-<n>
            per.setdefault(wid, []).append(name)
        for wid, names in per.items():
            try:
                self.req[wid].send(("free", names))
            except (BrokenPipeError, OSError):
                pass

    def send(self, wid, msg):
        self.flush_released()
        try:
            self.req[wid].send(msg)
        except (BrokenPipeError, OSError):  # its read end closed: the worker is gone
            self.raise_dead(wid)

    def raise_dead(self, wid):
        p = self.procs[wid]
        info = None
        try:  # a worker that failed on start-up said why before exiting
            while info is None and self.res[wid].poll(0):
                m = self.res[wid].recv()
                if m[0] == "err":
                    info = m[3]
        except (EOFError, OSError):
            pass
        if info is not None:
            self.shutdown(grace=0.1)
            raise_worker_error(info)
        p.join(timeout=1.0)  # reap it, so that its exit code is known
        code = p.exitcode
        if code is not None and code < 0:
            try:
                how = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        self.shutdown(grace=0.1)
        hint = " (out of memory? the kernel's OOM killer sends SIGKILL)" if code == -9 else ""
        raise RuntimeError(f"DataLoader worker {wid} (pid {p.pid}) {how}{hint} before "
                           "delivering its batches")

    def recv(self, deadline):
        """The next message from any worker, as (wid, msg); raises if a worker died or the
        deadline passed."""
        conns = self.res
        sentinels = {p.sentinel: wid for wid, p in enumerate(self.procs)}
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError
            ready = mp_wait(conns + list(sentinels), timeout=left)
            for r in ready:  # data first: a worker may have sent, then exited
                if r in sentinels:
                    continue
                wid = conns.index(r)
                try:
                    return wid, r.recv()
                except (EOFError, OSError):
                    self.raise_dead(wid)
            for r in ready:
                if r in sentinels:
                    wid = sentinels[r]
                    if not conns[wid].poll(0):
                        self.raise_dead(wid)

    def shutdown(self, grace=2.0):
        """Ask the workers to stop; terminate (then kill) those still running after
        ``grace`` seconds; unlink every buffer they left behind."""
        if not self.alive:
            return
        self.alive = False
        for c in self.req:
            try:
                c.send(("stop",))
            except Exception:
                pass
        deadline = time.monotonic() + grace
        for p in self.procs:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in self.procs:
            if p.is_alive():
                p.terminate()
                p.join(timeout=1.0)
            if p.is_alive():
                p.kill()
                p.join(timeout=1.0)
        for c in self.res:
            c.close()
        for c in self.req:
            c.close()
        shm.cleanup(self.prefix, self.dirs)
