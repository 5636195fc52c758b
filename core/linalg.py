"""``ember.linalg``: norms, inverse, solve, determinant (see ops/linalg.py)."""
from __future__ import annotations

from .ops.linalg import *  # noqa: F401,F403
