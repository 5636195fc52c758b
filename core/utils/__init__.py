"""``ember.utils``: where torch code reaches for ``torch.utils.*``.

``ember.utils.data`` is ``ember.data`` (datasets, samplers, ``DataLoader``) under the path
torch programs use, so ``torch.utils.data.DataLoader`` runs after ``import ember as torch``.
"""
from __future__ import annotations

import importlib as _importlib


def __getattr__(name):
    if name == "data":
        return _importlib.import_module("ember.utils.data")
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
