"""``spawn``/``start_processes``: run ``fn(rank, *args)`` in ``nprocs`` processes and report the
first failure with the rank and the child's traceback.

Each child gets the write end of a pipe of its own; when ``fn`` raises, the child sends its
formatted traceback down the pipe and exits with code 1. ``ProcessContext.join`` waits on the
children's sentinels and pipes together (so a long traceback cannot block a child), and at the
first child that ends badly it stops the others (SIGTERM, then SIGKILL after a grace period)
and raises ``ProcessRaisedException`` (the child raised) or ``ProcessExitedException`` (the
child exited with a non-zero code or was killed by a signal).
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import time
import traceback


class ProcessException(Exception):
    """A child started by ``spawn`` failed. ``error_index``: its rank; ``pid``: its pid."""

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """The child's function raised; the message carries the child's traceback."""


class ProcessExitedException(ProcessException):
    """The child exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _wrap(fn, rank, args, conn):
    try:
        fn(rank, *args)
    except KeyboardInterrupt:
        pass  # the parent is stopping us
    except Exception:
        try:
            conn.send(traceback.format_exc())
        finally:
            conn.close()
        sys.exit(1)
    conn.close()


class ProcessContext:
    """The processes started by ``start_processes(..., join=False)``; ``join`` them."""

    def __init__(self, processes, readers):
        self.processes = processes
        self._readers = dict(enumerate(readers))       # rank -> read end of its error pipe
        self._errors = {}                                # rank -> traceback text received
        self._running = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def _read(self, rank):
        r = self._readers.get(rank)
        try:
            while r is not None and r.poll():
                self._errors[rank] = r.recv()
        except (EOFError, OSError):  # the child closed its end: nothing more will come
            del self._readers[rank]
            r.close()

    def join(self, timeout=None, grace_period=5.0):
        """Wait for the processes. True when all have exited cleanly, False when ``timeout``
        (seconds) passed first; raises ``ProcessRaisedException``/``ProcessExitedException``
        for the first one that failed, after stopping the rest."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._running:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            waitables = list(self._running) + [r for i, r in self._readers.items()
                                               if self.processes[i].sentinel in self._running]
            ready = multiprocessing.connection.wait(waitables, left)
            for obj in ready:
                if obj in self._running:
                    continue
                for i, r in list(self._readers.items()):
                    if r is obj:
                        self._read(i)
            for obj in ready:
                i = self._running.pop(obj, None)
                if i is None:
                    continue
                p = self.processes[i]
                p.join()
                if p.exitcode != 0:
                    self._fail(i, grace_period)
            if not ready and deadline is not None and time.monotonic() >= deadline:
                return False
        self._close()
        return True

    def _close(self):
        for r in self._readers.values():
            r.close()
        self._readers = {}

    def _fail(self, rank, grace_period):
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        end = time.monotonic() + grace_period
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))
        for p in self.processes:
            if p.is_alive():
                p.kill()
                p.join()
        self._running.clear()
        self._read(rank)
        self._close()
        p = self.processes[rank]
        if rank in self._errors:
            raise ProcessRaisedException(
                f"\n\n-- process {rank} (pid {p.pid}) terminated with the following error:\n"
                f"{self._errors[rank]}", rank, p.pid)
        code = p.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            raise ProcessExitedException(f"process {rank} (pid {p.pid}) terminated with "
                                         f"{name}", rank, p.pid, code, name)
        raise ProcessExitedException(f"process {rank} (pid {p.pid}) terminated with exit code "
                                     f"{code}", rank, p.pid, code)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(rank, *args)`` for rank 0..nprocs-1, each in its own process started with
    ``start_method`` ("spawn", "fork" or "forkserver"). ``join=True`` waits and raises on the
    first failure (see ``ProcessContext.join``); ``join=False`` returns the ``ProcessContext``.
    With "spawn", ``fn`` and ``args`` are pickled: ``fn`` must be importable (module level)."""
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise ValueError(f"nprocs must be a positive int, got {nprocs!r}")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple, got {type(args).__name__}")
    ctx = multiprocessing.get_context(start_method)
    processes, readers = [], []
    try:
        for rank in range(nprocs):
            r, w = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_wrap, args=(fn, rank, args, w), daemon=daemon)
            p.start()
            w.close()
            processes.append(p)
            readers.append(r)
    except BaseException:
        for p in processes:
            p.terminate()
            p.join()
        raise
    context = ProcessContext(processes, readers)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``start_processes`` with the "spawn" start method by default (as torch's)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
