"""Random number generation: ``Generator``, ``manual_seed``, and the global default generator.

A ``Generator`` wraps a numpy ``PCG64`` bit generator (and, lazily, a cupy generator for CUDA
tensors seeded from it), so a seed gives the same CPU stream on every machine.
"""
from __future__ import annotations

import numpy as np

from . import _backend as B


class Generator:
    """A seeded source of random numbers; pass as ``generator=`` to the random factories."""

    def __init__(self, device="cpu"):
        self.device = B.device(device)
        self._seed = int(np.random.SeedSequence().entropy % (2 ** 63))
        self._np = np.random.Generator(np.random.PCG64(self._seed))
        self._cp = None

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:
            seed += 2 ** 64
        self._seed = seed
        self._np = np.random.Generator(np.random.PCG64(seed))
        self._cp = None
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from .factories import tensor

        st = self._np.bit_generator.state
        vals = [st["state"]["state"], st["state"]["inc"], st["has_uint32"], st["uinteger"]]
        words = []
        for v in vals:
            v = int(v)
            words.extend([(v >> (32 * k)) & 0xFFFFFFFF for k in range(4)])
        words.append(self._seed & 0xFFFFFFFF)
        words.append(self._seed >> 32)
        return tensor(np.array(words, dtype=np.uint32).view(np.uint8))

    def set_state(self, state):
        arr = np.asarray(state.array if hasattr(state, "array") else state, dtype=np.uint8)
        words = arr.view(np.uint32).astype(object)

        def join(i):
            return sum(int(words[i * 4 + k]) << (32 * k) for k in range(4))
        st = {"bit_generator": "PCG64",
              "state": {"state": join(0), "inc": join(1)},
              "has_uint32": join(2), "uinteger": join(3)}
        self._np.bit_generator.state = st
        self._seed = int(words[-2]) | (int(words[-1]) << 32)
        self._cp = None
        return self

    def numpy_generator(self):
        return self._np

    def array_generator(self, device):
        """The generator to draw from for arrays on ``device``."""
        if device.type == "cpu":
            return self._np
        if self._cp is None:
            cp = B.cupy()
            self._cp = cp.random.Generator(cp.random.XORWOW(int(self._np.integers(2 ** 63))))
        return self._cp


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (CPU and CUDA streams)."""
    default_generator.manual_seed(seed)
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def _gen(generator, device):
    g = default_generator if generator is None else generator
    return g.array_generator(device)
