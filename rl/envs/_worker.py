"""The loop a ``ParallelEnv`` worker process runs (see ``parallel.py`` for the protocol).

A worker builds its environment, reports the env's specs, receives the shared buffers, then
serves one-byte commands: it reads its action from the shared action buffer and writes its
results into its row of the shared result buffers, in place, and answers ``b"k"`` (or ``b"e"``
followed by the pickled error and traceback). A plain single ``GymEnv`` is stepped at the numpy
level (no TensorDict per step); any other ``EnvBase`` goes through its TensorDict API.
"""
from __future__ import annotations

import os
import pickle
import select
import struct
import traceback

import numpy as np

OK, ERR = b"k", b"e"
STEP, STEP_RESET, RESET, SEED, CLOSE = b"s", b"S", b"r", b"x", b"c"
DONE_KEYS = ("done", "terminated", "truncated")


def frame(msg):
    """``msg`` with multiprocessing's framing (4-byte big-endian length), for one ``os.write``."""
    return struct.pack("!i", len(msg)) + msg


def read_msg(fd):
    """One whole framed message from ``fd`` (raises EOFError when the other end is gone). Each
    side has at most one message outstanding, so a read never takes part of the next one."""
    data = os.read(fd, 65536)
    while 0 < len(data) < 4:
        data += os.read(fd, 65536)
    if not data:
        raise EOFError
    need = 4 + struct.unpack("!i", data[:4])[0]
    while len(data) < need:
        more = os.read(fd, need - len(data))
        if not more:
            raise EOFError
        data += more
    return data[4:need]


class CloudpickleWrapper:
    """Lets a lambda or closure ``create_env_fn`` cross a "spawn"/"forkserver" start."""

    def __init__(self, fn):
        self.fn = fn

    def __getstate__(self):
        import cloudpickle
        return cloudpickle.dumps(self.fn)

    def __setstate__(self, state):
        self.fn = pickle.loads(state)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def _error(exc):
    return ERR + pickle.dumps((f"{type(exc).__name__}: {exc}", traceback.format_exc()))


def _leaves(td, keys):
    return [(k, td.get(k).numpy(force=True)) for k in keys]


class _Worker:
    def __init__(self, idx, env, bufs):
        from .gym import GymEnv

        self.idx, self.env = idx, env
        row = {name: {k: t.numpy()[idx, ...] for k, t in group.items()}
               for name, group in bufs.items()}
        self.action = row["action"]["action"]
        self.reset_mask = row["reset"]["_reset"]
        self.nxt, self.root = row["next"], row["root"]
        self.obs_keys = [k for k in self.root if k not in DONE_KEYS]
        self.fast = type(env) is GymEnv and env.batch_size == ()
        self.td = None                          # the current root TensorDict (generic path)

    # ------------------------------------------------------------------ buffers
    def _write(self, dst, src):
        for k, v in src:
            dst[k][...] = v

    def _write_fast_next(self, obs, reward, term, trunc):
        nxt, root = self.nxt, self.root
        for k in self.obs_keys:
            nxt[k][...] = obs[k]
            root[k][...] = obs[k]
        nxt["reward"][...] = reward
        nxt["terminated"][...] = term
        nxt["truncated"][...] = trunc
        nxt["done"][...] = term or trunc
        for k in DONE_KEYS:
            root[k][...] = nxt[k]

    def _write_fast_reset(self):
        obs = self.env._reset_numpy()
        for k in self.obs_keys:
            self.root[k][...] = obs[k]
        for k in DONE_KEYS:
            self.root[k][...] = False

    # ------------------------------------------------------------------ commands
    def reset(self):
        if self.fast:
            self._write_fast_reset()
            return
        from ember.rl.tensordict import TensorDict
        arg = None
        if self.env.batch_size:
            arg = TensorDict({"_reset": self.reset_mask.copy()}, batch_size=self.env.batch_size)
        self.td = self.env.reset(arg)
        self._write(self.root, _leaves(self.td, self.root))

    def _with_action(self):
        import ember
        if self.td is None:
            raise RuntimeError("step before reset: call reset() first")
        self.td.set("action", ember.from_numpy(np.array(self.action)))
        return self.td

    def step(self):
        if self.fast:
            self._write_fast_next(*self.env._step_numpy(np.array(self.action)))
            return
        from .common import step_mdp
        td = self.env.step(self._with_action())
        self._write(self.nxt, _leaves(td.get("next"), self.nxt))
        self.td = step_mdp(td)
        self._write(self.root, _leaves(self.td, self.root))

    def step_and_reset(self):
        if self.fast:
            obs, reward, term, trunc = self.env._step_numpy(np.array(self.action))
            self._write_fast_next(obs, reward, term, trunc)
            if term or trunc:
                self._write_fast_reset()
            return
        td, self.td = self.env.step_and_maybe_reset(self._with_action())
        self._write(self.nxt, _leaves(td.get("next"), self.nxt))
        self._write(self.root, _leaves(self.td, self.root))


def worker_main(idx, create_env_fn, kwargs, conn, ppid):
    """Entry point of worker ``idx``. Exits on ``CLOSE``, on a closed pipe, or when the parent
    process is gone (checked every 2 s while idle)."""
    fd = conn.fileno()
    poller = select.poll()
    poller.register(fd, select.POLLIN)

    def wait_for_parent():
        while not poller.poll(2000):
            if os.getppid() != ppid:
                raise EOFError

    try:
        env = create_env_fn(**kwargs)
        specs = (env.batch_size, env.observation_spec, env.action_spec, env.reward_spec,
                 env.done_spec)
        os.write(fd, frame(OK + pickle.dumps(specs)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, then exit
        os.write(fd, frame(_error(exc)))
        return
    try:
        wait_for_parent()
        w = _Worker(idx, env, conn.recv())        # the shared buffers (pickled as handles)
        os.write(fd, frame(OK))
        table = {STEP: w.step, STEP_RESET: w.step_and_reset, RESET: w.reset}
        ok = frame(OK)
        while True:
            wait_for_parent()
            msg = read_msg(fd)
            cmd = msg[:1]
            if cmd == CLOSE:
                os.write(fd, ok)
                return
            try:
                if cmd == SEED:
                    env.set_seed(pickle.loads(msg[1:]))
                else:
                    table[cmd]()
                os.write(fd, ok)
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                os.write(fd, frame(_error(exc)))
    except (EOFError, OSError, KeyboardInterrupt):
        return
    finally:
        try:
            env.close()
        except Exception:  # noqa: BLE001 - closing on the way out
            pass
