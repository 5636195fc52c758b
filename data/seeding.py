"""Deterministic seeds: every seed the data stack uses is a pure function of a base seed and
named keys (epoch, rank, worker, batch, pipe position), so runs and resumes repeat exactly.

    >>> from ember.data.seeding import derive_seed
    >>> derive_seed(0, "epoch", 3) == derive_seed(0, "epoch", 3)
    True
"""
from __future__ import annotations

import hashlib
import random

import numpy as np


def derive_seed(base: int, *keys) -> int:
    """A 63-bit seed from ``base`` and ``keys`` (ints/strings), stable across processes."""
    h = hashlib.blake2b(repr((int(base),) + keys).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") >> 1


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy's global RNG and ember's default generator."""
    import ember

    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    ember.manual_seed(seed)


def global_rng_state():
    """The states of the RNGs ``seed_everything`` sets (to restore them afterwards)."""
    import ember

    return random.getstate(), np.random.get_state(), ember.get_rng_state()


def set_global_rng_state(state) -> None:
    import ember

    random.setstate(state[0])
    np.random.set_state(state[1])
    ember.set_rng_state(state[2])


def fresh_seed() -> int:
    """A seed drawn from ember's default generator (deterministic under ember.manual_seed)."""
    import ember

    return int(ember.default_generator.numpy_generator().integers(2 ** 63))
