"""``ParallelEnv(num_workers, create_env_fn)``: one environment per worker process, exposed with
batch size ``(num_workers,) + env.batch_size``; the same API, seeding and results as ``SerialEnv``.

Data path: the action, the ``"next"`` outcome (observations, reward, done flags) and the current
root (observations and done flags after a step or reset) live in shared-memory buffers
(``ember.multiprocessing.share_memory_``), one row per worker. A step writes the actions into
the action buffer, sends each worker a one-byte command over its pipe and waits for the one-byte
answers; workers write their results in place, so nothing is pickled per step. The parent then
copies the rows out into fresh tensors (a later step overwrites the buffers). Only the action
travels to a worker: each keeps the root data of its own env (what a worker-side transform such
as ``StepCounter`` reads), where ``SerialEnv`` hands its sub-envs the caller's root.

``step_and_maybe_reset`` (used by ``rollout(break_when_any_done=False)`` and collectors) is one
round trip: a worker whose env finished resets it right away and writes the reset observation
into the root buffer, while ``"next"`` keeps the terminal observation (no transition crosses an
episode boundary).

Failures: every wait has a timeout (``timeout`` seconds, ``TimeoutError`` naming the workers
that did not answer); a worker that raises sends its traceback (``RuntimeError`` naming the
worker); a worker that dies (crash, ``SIGKILL``) is seen at once through its closed pipe and
reported with its exit code. After a dead or hung worker the env is closed (no process is left
behind). ``close()`` or ``with ParallelEnv(...) as env:`` stops the workers.

    >>> from ember.rl.envs import GymEnv, ParallelEnv
    >>> with ParallelEnv(2, lambda: GymEnv("CartPole-v1")) as env:
    ...     env.rollout(5, break_when_any_done=False)["next", "observation"].shape
    (2, 5, 4)
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
import weakref

import numpy as np

import ember
from ember.rl.tensordict import TensorDict

from ._worker import (CLOSE, ERR, RESET, SEED, STEP, STEP_RESET, CloudpickleWrapper, frame,
                      read_msg, worker_main)
from .common import DONE_KEYS, EnvBase

__all__ = ["ParallelEnv"]


def _nest(flat):
    """{key or tuple key: value} -> nested dict for TensorDict."""
    out = {}
    for k, v in flat.items():
        if isinstance(k, tuple):
            d = out
            for p in k[:-1]:
                d = d.setdefault(p, {})
            d[k[-1]] = v
        else:
            out[k] = v
    return out


def _exit_text(code):
    if code is None:
        return "is still running"
    if code < 0:
        try:
            return f"was killed by signal {code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"was killed by signal {code}"
    return f"exited with code {code}"


class ParallelEnv(EnvBase):
    """Args:
        num_workers: number of worker processes (one env each).
        create_env_fn: a callable returning an ``EnvBase`` (e.g. ``lambda: GymEnv("CartPole-v1")``),
            or a list of ``num_workers`` callables.
        create_env_kwargs: kwargs for ``create_env_fn`` (a dict, or a list of dicts).
        mp_start_method: "fork" (default on Linux), "spawn" or "forkserver"; lambdas are sent with
            cloudpickle for the latter two.
        timeout: seconds any wait on a worker may take before ``TimeoutError``.
    """

    def __init__(self, num_workers, create_env_fn, create_env_kwargs=None, device=None,
                 mp_start_method=None, timeout=60.0):
        import ember.multiprocessing as emp

        n = int(num_workers)
        if n < 1:
            raise ValueError(f"ParallelEnv: num_workers must be >= 1, got {num_workers}")
        fns = list(create_env_fn) if isinstance(create_env_fn, (list, tuple)) else [create_env_fn] * n
        kws = list(create_env_kwargs) if isinstance(create_env_kwargs, (list, tuple)) else \
            [create_env_kwargs or {}] * n
        if len(fns) != n or len(kws) != n:
            raise ValueError(f"ParallelEnv: got {len(fns)} create_env_fn and {len(kws)} "
                             f"create_env_kwargs for num_workers={n}")
        self.timeout = float(timeout)
        self._closed = True
        self._procs, self._conns = [], []
        method = mp_start_method or ("fork" if sys.platform.startswith("linux") else "spawn")
        ctx = emp.get_context(method)
        wrap = (lambda f: f) if method == "fork" else CloudpickleWrapper
        ppid = os.getpid()
        try:
            for i in range(n):
                parent, child = ctx.Pipe()
                p = ctx.Process(target=worker_main, args=(i, wrap(fns[i]), kws[i], child, ppid),
                                name=f"ParallelEnv-worker-{i}", daemon=True)
                p.start()
                child.close()
                self._procs.append(p)
                self._conns.append(parent)
            self._closed = False
            self._finalizer = weakref.finalize(self, _shutdown, self._procs, self._conns)
            self._poller = select.poll()
            self._fd_idx, self._gone = {}, set()
            for i, c in enumerate(self._conns):
                self._poller.register(c.fileno(), select.POLLIN)
                self._fd_idx[c.fileno()] = i
            specs = [pickle.loads(m) for m in self._wait(range(n), "starting")]
        except BaseException:
            _shutdown(self._procs, self._conns)
            self._closed = True
            raise
        batch, obs, act, rew, done = specs[0]
        super().__init__((n,) + tuple(batch), device)
        self.observation_spec = obs.expand((n,))
        self.action_spec = act.expand((n,))
        self.reward_spec = rew.expand((n,))
        self.done_spec = done.expand((n,))
        self._alloc_buffers()
        for c in self._conns:
            c.send(self._bufs)
        self._wait(range(n), "receiving its buffers")
        self._started = np.zeros(n, np.bool_)

    # ---------------------------------------------------------------- buffers
    def _alloc_buffers(self):
        from ember.multiprocessing import share_memory_

        def alloc(spec):
            return share_memory_(ember.tensor(spec.zero().numpy(force=True)))

        obs = {k: alloc(self.observation_spec[k]) for k in self.observation_spec.keys(True, True)}
        flags = {k: alloc(self.done_spec[k]) for k in DONE_KEYS}
        self._bufs = {
            "action": {"action": alloc(self.action_spec)},
            "reset": {"_reset": share_memory_(ember.zeros(*self.batch_size, 1, dtype=ember.bool))},
            "next": {**obs, "reward": alloc(self.reward_spec), **flags},
            "root": {**{k: alloc(self.observation_spec[k]) for k in obs},
                     **{k: alloc(self.done_spec[k]) for k in DONE_KEYS}},
        }
        self._np = {g: [(k, t.numpy()) for k, t in d.items()] for g, d in self._bufs.items()}
        self._action_np = self._bufs["action"]["action"].numpy()
        self._reset_np = self._bufs["reset"]["_reset"].numpy()

    def _snapshot(self, group):
        data = {k: ember.from_numpy(a.copy()) for k, a in self._np[group]}
        return TensorDict(_nest(data), batch_size=self.batch_size)

    # ---------------------------------------------------------------- protocol
    @property
    def num_workers(self):
        return len(self._procs)

    @property
    def is_closed(self):
        return self._closed

    def _fail(self, msg, exc_type=RuntimeError):
        if not self._closed:                   # a dead or hung worker: stop the rest quickly
            self._closed = True
            self._finalizer.detach()
            _shutdown(self._procs, self._conns, grace=0.5)
        raise exc_type(msg)

    def _send(self, idx, msg):
        if self._closed:
            raise RuntimeError("ParallelEnv is closed")
        framed = frame(msg)
        for i in idx:
            if i in self._gone:
                self._dead(i)
            try:
                os.write(self._conns[i].fileno(), framed)
            except OSError:
                self._dead(i)

    def _dead(self, i):
        p = self._procs[i]
        p.join(2.0)
        self._fail(f"ParallelEnv: worker {i} (pid {p.pid}) {_exit_text(p.exitcode)}; the "
                   "environment is closed")

    def _read(self, i):
        return read_msg(self._conns[i].fileno())

    def _wait(self, idx, what):
        """Wait for one answer from each worker in ``idx``; returns their payloads in order. An
        interrupt (Ctrl-C) while waiting closes the env: answers still on their way would
        otherwise be taken for the answers to later commands."""
        try:
            return self._collect(list(idx), what)
        except KeyboardInterrupt:
            if not self._closed:
                self._closed = True
                self._finalizer.detach()
                _shutdown(self._procs, self._conns, grace=0.5)
            raise

    def _collect(self, idx, what):
        out, errors = {}, []
        pending = set(idx)
        deadline = time.monotonic() + self.timeout
        while pending:
            left = deadline - time.monotonic()
            events = self._poller.poll(left * 1000.0) if left > 0 else []
            if not events:
                late = sorted(pending)
                for i in late:
                    if not self._procs[i].is_alive():
                        self._dead(i)
                self._fail(f"ParallelEnv: workers {late} did not answer within {self.timeout} s "
                           f"while {what}; the environment is closed", TimeoutError)
            for fd, ev in events:
                i = self._fd_idx[fd]
                try:
                    if i not in pending:            # not asked: it can only have gone away
                        if ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                            self._poller.unregister(fd)  # reported when it is next asked
                            self._gone.add(i)
                        else:
                            self._read(i)
                        continue
                    msg = self._read(i)
                except (EOFError, OSError):
                    self._dead(i)
                pending.discard(i)
                if msg[:1] == ERR:
                    text, tb = pickle.loads(msg[1:])
                    errors.append(f"ParallelEnv: worker {i} raised {text} while {what}\n"
                                  f"worker {i} traceback:\n{tb}")
                out[i] = msg[1:]
        if errors:
            if what == "starting":
                self.close()
            raise RuntimeError("\n".join(errors))
        return [out[i] for i in idx]

    def _all(self, cmd, what):
        idx = range(self.num_workers)
        self._send(idx, cmd)
        self._wait(idx, what)

    # ---------------------------------------------------------------- EnvBase
    def _set_seed(self, seed):
        for i in range(self.num_workers):
            self._send([i], SEED + pickle.dumps(int(seed) + i))
        self._wait(range(self.num_workers), "seeding")

    def _reset(self, tensordict=None):
        n = self.num_workers
        if tensordict is not None and "_reset" in tensordict.keys():
            mask = np.asarray(tensordict.get("_reset").numpy(force=True), np.bool_)
            self._reset_np[...] = mask.reshape(self._reset_np.shape)
            self._reset_np[~self._started] = True             # never reset yet: all of it
            which = mask.reshape(n, -1).any(-1) | ~self._started
        else:
            self._reset_np[...] = True
            which = np.ones(n, np.bool_)
        idx = np.flatnonzero(which).tolist()
        self._send(idx, RESET)
        self._wait(idx, "resetting")
        self._started[idx] = True
        return self._snapshot("root")

    def _write_action(self, tensordict):
        if "action" not in tensordict.keys():
            raise KeyError("ParallelEnv.step: the tensordict has no 'action'")
        a = tensordict.get("action").numpy(force=True)
        if a.shape != self._action_np.shape:
            raise ValueError(f"ParallelEnv.step: action of shape {a.shape}, expected "
                             f"{self._action_np.shape} (action_spec {self.action_spec!r})")
        self._action_np[...] = a

    def _step(self, tensordict):
        self._write_action(tensordict)
        self._all(STEP, "stepping")
        return self._snapshot("next")

    def step_and_maybe_reset(self, tensordict):
        """One round trip: step every worker; a worker whose env is done resets it at once.
        Returns ``(td, next_root)`` as ``EnvBase.step_and_maybe_reset``."""
        self._write_action(tensordict)
        self._all(STEP_RESET, "stepping")
        tensordict.set("next", self._snapshot("next"))
        return tensordict, self._snapshot("root")

    def close(self):
        if not self._closed:
            self._closed = True
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"ParallelEnv(num_workers={self.num_workers}, closed={self._closed},\n" + \
            super().__repr__()


def _shutdown(procs, conns, grace=3.0):
    """Ask every worker to stop, then terminate (and kill) the ones still running."""
    for c in conns:
        try:
            c.send_bytes(CLOSE)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join(1.0)
    for c in conns:
        c.close()
