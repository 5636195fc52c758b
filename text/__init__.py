"""ember.text: tokenizers on the Rust ``tokenizers`` library, vocab and transforms,
BERT-family encoders and GPT-2 with weights enums, datasets.

Submodules load on first use (``ember.text.tokenizers``, ``ember.text.transforms``,
``ember.text.vocab``, ``ember.text.models``), so ``import ember.text`` stays cheap.
"""
from __future__ import annotations

import importlib as _importlib

_SUBMODULES = ("tokenizers", "transforms", "vocab", "models", "datasets", "collate")


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
