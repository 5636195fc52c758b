"""``MultiSyncDataCollector``: one ``SyncDataCollector`` per worker process, each over its own
env, their batches joined into one per iteration (as torchrl's ``MultiSyncDataCollector``).

Worker ``i`` builds ``create_env_fn[i]()`` and collects ``frames_per_batch // num_workers``
frames per iteration; the main process asks every worker for a batch, waits for all, and
stacks them along a new first dim (``cat_results="stack"``, the default) or concatenates them
along dim ``cat_results``. Worker ``i`` of ``n`` numbers its k-th trajectory ``k * n + i``: ids
are unique across workers and batches and do not depend on the workers' timing.
``update_policy_weights_()`` sends the main policy's state dict to every worker.
``set_seed(s)`` seeds worker ``i`` (its env, and ember's generator in that process, which the
policy's sampling uses) with ``s + i * envs_per_worker``; until then each worker's generator
starts from a seed drawn from the main process's generator. The default start method is
"fork" on Linux (factories and policy need not pickle), else "spawn".

Failures: a worker that raises sends its traceback, re-raised here as a ``RuntimeError``; a
worker that dies (killed, ``os._exit``, segfault) is noticed within ``_POLL`` seconds and
reported with its exit code; the other workers are then shut down. A worker that hangs inside
its env (never returns from a step) is waited for: there is no step timeout.
"""
from __future__ import annotations

import math
import multiprocessing as mp
import sys
import traceback
import warnings

import numpy as np

from ember import nn
from ember.rl.tensordict import TensorDict, cat, stack

from .sync import DEFAULT_EXPLORATION_TYPE, DataCollectorBase, SyncDataCollector
from .utils import split_trajectories

__all__ = ["MultiSyncDataCollector"]

_POLL = 0.05


def _cpu():
    from ember import _backend as B

    return B.CPU


class _WorkerTrajIds:
    """Trajectory ids of worker ``rank`` of ``n``: its k-th trajectory gets ``k * n + rank``,
    unique across workers and independent of their timing (so seeded runs repeat exactly)."""

    def __init__(self, rank, n):
        self.rank, self.n, self.count = rank, n, 0

    def take(self, k):
        ids = (np.arange(self.count, self.count + k, dtype=np.int64) * self.n) + self.rank
        self.count += k
        return ids


def _worker_main(conn, create_env_fn, create_env_kwargs, policy, kwargs, rank, n, inherited,
                 rng_seed):
    for c in inherited:  # forked: the main process's pipe ends, so that its exit gives EOF here
        c.close()
    try:
        import ember
        ember.manual_seed(rng_seed)  # forked workers must not share one random stream
        collector = SyncDataCollector(create_env_fn, policy, create_env_kwargs=create_env_kwargs,
                                      **kwargs)
        collector._traj_ids = _WorkerTrajIds(rank, n).take
        conn.send(("ready", None))
        while True:
            cmd, arg = conn.recv()
            if cmd == "next":
                conn.send(("batch", collector.rollout()))
            elif cmd == "seed":
                ember.manual_seed(arg)  # the policy's own randomness, per worker
                conn.send(("ok", collector.set_seed(arg)))
            elif cmd == "weights":
                collector.update_policy_weights_(arg)
                conn.send(("ok", None))
            elif cmd == "reset":
                collector.reset()
                conn.send(("ok", None))
            elif cmd == "close":
                collector.shutdown()
                conn.send(("ok", None))
                return
            else:
                raise RuntimeError(f"unknown command {cmd!r}")
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        return
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        except Exception:
            pass


class MultiSyncDataCollector(DataCollectorBase):
    """``MultiSyncDataCollector(create_env_fn: list, policy=None, *, frames_per_batch,
    total_frames=-1, ..., cat_results="stack", mp_start_method=None)``; the other keyword
    arguments are those of ``SyncDataCollector`` and go to every worker."""

    def __init__(self, create_env_fn, policy=None, frames_per_batch=None, total_frames=-1, *,
                 create_env_kwargs=None, max_frames_per_traj=None, init_random_frames=None,
                 reset_at_each_iter=False, postproc=None, split_trajs=None,
                 exploration_type=DEFAULT_EXPLORATION_TYPE, reset_when_done=True,
                 cat_results=None, replay_buffer=None, mp_start_method=None, device=None,
                 storing_device=None, policy_device=None, env_device=None, **kwargs):
        from ember.rl.envs import EnvBase

        if not isinstance(create_env_fn, (list, tuple)) or not create_env_fn:
            raise TypeError("MultiSyncDataCollector: create_env_fn must be a non-empty list of "
                            "env factories (one per worker)")
        for i, fn in enumerate(create_env_fn):
            if isinstance(fn, EnvBase) or not callable(fn):
                raise TypeError(f"MultiSyncDataCollector: create_env_fn[{i}] must be a function "
                                f"that builds an env in the worker, got {type(fn).__name__}")
        if frames_per_batch is None:
            raise TypeError("MultiSyncDataCollector: frames_per_batch is required")
        n = len(create_env_fn)
        self.num_workers = n
        fpb = int(frames_per_batch)
        if fpb % n:
            new = -(-fpb // n) * n
            warnings.warn(f"MultiSyncDataCollector: frames_per_batch={fpb} is not a multiple "
                          f"of the {n} workers; using {new}", stacklevel=2)
            fpb = new
        self.requested_frames_per_batch = self.frames_per_batch = fpb
        total_frames = -1 if total_frames is None else int(total_frames)
        if total_frames > 0 and total_frames % fpb:
            total_frames = -(-total_frames // fpb) * fpb
        self.total_frames = total_frames
        self.cat_results = "stack" if cat_results is None else cat_results
        if self.cat_results != "stack" and not isinstance(self.cat_results, int):
            raise ValueError(f"MultiSyncDataCollector: cat_results must be 'stack' or a dim, got "
                             f"{cat_results!r}")
        self.policy = policy
        self.postproc = postproc
        self.split_trajs = bool(split_trajs)
        self.replay_buffer = replay_buffer
        self._frames = 0
        self._iter = None
        self._closed = False
        worker_kwargs = dict(frames_per_batch=fpb // n, total_frames=-1,
                             max_frames_per_traj=max_frames_per_traj,
                             init_random_frames=math.ceil((init_random_frames or 0) / n),
                             reset_at_each_iter=reset_at_each_iter,
                             exploration_type=exploration_type, reset_when_done=reset_when_done,
                             **kwargs)
        if mp_start_method is None:
            mp_start_method = "fork" if sys.platform.startswith("linux") else "spawn"
        ctx = mp.get_context(mp_start_method)
        # the workers' random streams: drawn from ember's generator (ember.manual_seed here
        # makes them repeat), distinct per worker
        from ember.random import default_generator
        seeds = [int(s) for s in default_generator.array_generator(_cpu()).integers(
            0, 2 ** 62, n)]
        self._procs, self._conns = [], []
        try:
            for rank, fn in enumerate(create_env_fn):
                parent, child = ctx.Pipe()
                inherited = self._conns + [parent] if mp_start_method == "fork" else []
                p = ctx.Process(target=_worker_main, args=(child, fn, create_env_kwargs, policy,
                                                           worker_kwargs, rank, n, inherited,
                                                           seeds[rank]), daemon=True)
                p.start()
                child.close()
                self._procs.append(p)
                self._conns.append(parent)
            self._gather("ready")
        except BaseException:
            self._kill()
            raise
        self._envs_per_worker = None

    # ------------------------------------------------------------------ messaging
    def _recv(self, i):
        """The next message of worker ``i``; raises if it died or reported an error."""
        conn, proc = self._conns[i], self._procs[i]
        while not conn.poll(_POLL):
            if not proc.is_alive():
                if conn.poll(0):
                    break
                code = proc.exitcode
                self._kill()
                raise RuntimeError(f"MultiSyncDataCollector: worker {i} died (exit code "
                                   f"{code}) without sending its result")
        try:
            kind, payload = conn.recv()
        except (EOFError, ConnectionError) as e:
            proc.join(timeout=2.0)  # the pipe closes just before the process is reaped
            code = proc.exitcode
            self._kill()
            raise RuntimeError(f"MultiSyncDataCollector: worker {i} died (exit code {code}) "
                               "without sending its result") from e
        if kind == "error":
            self._kill()
            raise RuntimeError(f"MultiSyncDataCollector: worker {i} failed:\n{payload}")
        return kind, payload

    def _send_all(self, cmd, args=None):
        for i, conn in enumerate(self._conns):
            try:
                conn.send((cmd, None if args is None else args[i]))
            except (BrokenPipeError, ConnectionError, EOFError):
                self._recv(i)  # raises with the worker's error or exit code
                raise

    def _gather(self, expect):
        out = []
        for i in range(self.num_workers):
            kind, payload = self._recv(i)
            if kind != expect and not (expect == "ok" and kind == "ok"):
                raise RuntimeError(f"MultiSyncDataCollector: worker {i} answered {kind!r}, "
                                   f"expected {expect!r}")
            out.append(payload)
        return out

    def _check_open(self):
        if self._closed:
            raise RuntimeError("MultiSyncDataCollector: the collector was shut down")

    # ------------------------------------------------------------------ collection
    def rollout(self):
        """One batch: every worker's batch, stacked (or concatenated)."""
        self._check_open()
        self._send_all("next")
        parts = self._gather("batch")
        out = stack(parts, 0) if self.cat_results == "stack" else cat(parts, self.cat_results)
        self._frames += sum(math.prod(p.batch_size) for p in parts)
        return out

    def iterator(self):
        while self.total_frames < 0 or self._frames < self.total_frames:
            out = self.rollout()
            if self.split_trajs:
                out = split_trajectories(out)
            if self.postproc is not None:
                out = self.postproc(out)
            if self.replay_buffer is not None:
                self.replay_buffer.extend(out.reshape(-1))
                yield None
            else:
                yield out

    def update_policy_weights_(self, policy_weights=None):
        """Send ``policy_weights`` (default: the main policy's state dict) to every worker."""
        self._check_open()
        if policy_weights is None:
            if not isinstance(self.policy, nn.Module):
                raise TypeError("update_policy_weights_: the policy is not an nn.Module; pass "
                                "policy_weights explicitly")
            policy_weights = self.policy.state_dict()
        if isinstance(policy_weights, TensorDict):
            policy_weights = {".".join(k) if isinstance(k, tuple) else k: v
                              for k, v in policy_weights.items(True, True)}
        self._send_all("weights", [policy_weights] * self.num_workers)
        self._gather("ok")

    def set_seed(self, seed, static_seed=False):
        """Seed the workers (worker ``i`` gets the seed returned by worker ``i - 1``); returns
        the seed after the last worker's."""
        self._check_open()
        seeds = []
        s = int(seed)
        for i, conn in enumerate(self._conns):
            conn.send(("seed", s))
            seeds.append(s)
            _, nxt = self._recv(i)
            s = nxt if not static_seed else s
        return s

    def reset(self, reset_idx=None):
        self._check_open()
        self._send_all("reset")
        self._gather("ok")

    def state_dict(self):
        out = {"frames": self._frames}
        if isinstance(self.policy, nn.Module):
            out["policy_state_dict"] = self.policy.state_dict()
        return out

    def load_state_dict(self, state_dict):
        self._frames = int(state_dict.get("frames", 0))
        if "policy_state_dict" in state_dict and isinstance(self.policy, nn.Module):
            self.policy.load_state_dict(state_dict["policy_state_dict"])
            self.update_policy_weights_()

    def shutdown(self):
        """Close the workers' envs and stop the workers (killing any that do not stop)."""
        if self._closed:
            return
        self._closed = True
        for conn, proc in zip(self._conns, self._procs):
            if proc.is_alive():
                try:
                    conn.send(("close", None))
                    if conn.poll(5.0):
                        conn.recv()
                except (BrokenPipeError, ConnectionError, EOFError):
                    pass
        self._kill()

    def _kill(self):
        self._closed = True
        for conn in self._conns:  # a worker waiting for a command sees EOF and returns
            conn.close()
        for proc in self._procs:
            proc.join(timeout=1.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=1.0)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=1.0)

    def __del__(self):
        try:
            if not self._closed:
                self._kill()
        except Exception:
            pass

    def __repr__(self):
        return (f"MultiSyncDataCollector(num_workers={self.num_workers}, frames_per_batch="
                f"{self.frames_per_batch}, total_frames={self.total_frames}, frames="
                f"{self._frames})")
