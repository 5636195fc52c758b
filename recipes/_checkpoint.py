"""Training checkpoints: atomic ``ember.save`` files in one folder, keeping the last K.

    >>> import ember, tempfile
    >>> ck = Checkpointer(tempfile.mkdtemp(), keep_last=2)
    >>> for step in (1, 2, 3):
    ...     _ = ck.save({"step": step, "w": ember.ones(2)}, step)
    >>> [s for s, _ in ck.list()], ck.load_latest()["step"]
    ([2, 3], 3)
"""
from __future__ import annotations

import os
import pickle
import re

import ember

__all__ = ["Checkpointer", "capture_rng", "restore_rng"]

_NAME = re.compile(r"^step-(\d+)\.ember$")


class Checkpointer:
    """Checkpoints ``step-XXXXXXXX.ember`` in ``directory``; ``keep_last`` (>= 1) newest kept."""

    def __init__(self, directory, keep_last=2):
        if int(keep_last) < 1:
            raise ValueError(f"checkpoint.keep_last must be >= 1, got {keep_last}")
        self.directory, self.keep_last = directory, int(keep_last)

    def list(self):
        """[(step, path)] of the checkpoints present, oldest first."""
        if not os.path.isdir(self.directory):
            return []
        found = []
        for fn in os.listdir(self.directory):
            m = _NAME.match(fn)
            if m:
                found.append((int(m.group(1)), os.path.join(self.directory, fn)))
        return sorted(found)

    def latest(self):
        """Path of the newest checkpoint, or None."""
        found = self.list()
        return found[-1][1] if found else None

    def save(self, state, step):
        """Write ``state`` atomically (``ember.save``) and drop all but the newest ``keep_last``."""
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"step-{int(step):08d}.ember")
        ember.save(state, path)
        for _, old in self.list()[:-self.keep_last]:
            os.remove(old)
        return path

    def load_latest(self):
        """The newest checkpoint's contents, or None when there is none."""
        path = self.latest()
        return None if path is None else ember.load(path)

    def clear(self):
        for _, path in self.list():
            os.remove(path)


def capture_rng(np_rng=None):
    """The random state a run depends on: ember's default generator and Python's ``random``
    (and ``np_rng``, a numpy Generator, if given), as checkpoint-safe values."""
    import random

    st = {"ember": ember.get_rng_state(), "python": pickle.dumps(random.getstate())}
    if np_rng is not None:
        st["numpy"] = pickle.dumps(np_rng.bit_generator.state)
    return st


def restore_rng(state, np_rng=None):
    """Undo :func:`capture_rng`."""
    import random

    ember.set_rng_state(state["ember"])
    random.setstate(pickle.loads(state["python"]))
    if np_rng is not None and "numpy" in state:
        np_rng.bit_generator.state = pickle.loads(state["numpy"])
