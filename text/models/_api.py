"""The weights API of ``ember.text.models``: ``Weights``, ``WeightsEnum`` and the registry.

The core's pattern (``ember._weights``, which vision uses too), with a registry of its own.
Text checkpoints are published on the Hugging Face hub as ``model.safetensors`` files, so:

* the file name carries no hash prefix, so a weights entry states its sha256 in
  ``meta["sha256"]`` where it is known (else ``None``: the download is then trusted to the
  hub's transport, as ``meta["_hash_note"]`` says);
* every entry is cached under its own name (``meta["file_name"]``), since every repository's
  file is called ``model.safetensors``.

    >>> from ember.text.models import get_weight, list_models
    >>> "roberta_base" in list_models()
    True
    >>> w = get_weight("RoBERTa_Base_Weights.DEFAULT")
    >>> w, w.url.split("/")[3:5]
    (RoBERTa_Base_Weights.HF_FAIRSEQ, ['FacebookAI', 'roberta-base'])
"""
from __future__ import annotations

from ember._weights import ModelRegistry, Weights, WeightsEnum

__all__ = ["Weights", "WeightsEnum", "register_model", "list_models", "get_model_builder",
           "get_model", "get_model_weights", "get_weight"]

_REGISTRY = ModelRegistry("ember.text.models")
register_model = _REGISTRY.register_model
list_models = _REGISTRY.list_models
get_model_builder = _REGISTRY.get_model_builder
get_model = _REGISTRY.get_model
get_model_weights = _REGISTRY.get_model_weights
get_weight = _REGISTRY.get_weight
