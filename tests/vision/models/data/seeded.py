"""Deterministic, well-scaled weights for parity tests (numpy only, shared by the tests and by
make_fixtures.py, which runs once under torchvision to record the expected logits)."""
import math

import numpy as np


# buffers computed from the architecture (index tables): left as the model builds them
CONSTANT_BUFFERS = ("relative_position_index", "relative_coords_table")


def seeded_state(manifest_entry, seed=0):
    """``{key: float32 array}`` for a ``{key: shape}`` manifest (num_batches_tracked: int64 0;
    CONSTANT_BUFFERS are left out).

    Conv/linear weights ~ N(0, 2 / fan_in); norm weights and running_var ~ U(0.5, 1.5);
    biases and running_mean ~ N(0, 0.1).
    """
    rng = np.random.default_rng(seed)
    out = {}
    for key, shape in manifest_entry.items():
        shape = tuple(shape)
        if key.endswith(CONSTANT_BUFFERS):
            continue
        if key.endswith("num_batches_tracked"):
            out[key] = np.zeros(shape, np.int64)
        elif key.endswith("running_var") or (key.endswith("weight") and len(shape) == 1):
            out[key] = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        elif key.endswith(("bias", "running_mean")):
            out[key] = rng.normal(0.0, 0.1, shape).astype(np.float32)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            out[key] = (rng.standard_normal(shape, dtype=np.float32)
                        * np.float32(math.sqrt(2.0 / fan_in)))
    return out


def seeded_input(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
