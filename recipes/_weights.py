"""Trained weights with a weights-entry manifest, loadable like the zoo's weights.

A run saves ``model.safetensors`` (the state dict) and ``weights.json`` beside it::

    {"name": ..., "model": <_component_ config of the model>, "file": "model.safetensors",
     "transforms": <_component_ config of the inference preset>,
     "meta": {"categories": [...], "num_params": ..., "_metrics": {...}, "recipe": ...,
              "command": ...}}

``load_weights(path)`` (the run folder or its ``weights.json``) returns a ``WeightsEnum`` member,
so ``w.meta``, ``w.transforms()`` and ``w.get_state_dict()`` work as for
``ResNet50_Weights.DEFAULT``; ``build_model(w)`` builds the model with the weights loaded.
``resolve_weights`` also accepts a zoo name such as ``"ResNet18_Weights.DEFAULT"``.
"""
from __future__ import annotations

import functools
import json
import os

import ember
from ember.vision.models._api import Weights, WeightsEnum, get_weight

from ember.recipes._config import instantiate

__all__ = ["save_weights", "load_weights", "build_model", "resolve_weights", "LocalWeights"]

MANIFEST = "weights.json"


class LocalWeights(WeightsEnum):
    """Weights enums made from a local manifest: ``url`` is the file's path."""

    def get_state_dict(self, progress=True, check_hash=True, **kwargs):
        return ember.load(self.url, map_location=kwargs.get("map_location"))


def save_weights(directory, model, model_cfg, transforms_cfg, meta, name="TRAINED"):
    """Write ``model.safetensors`` and ``weights.json`` into ``directory``; returns the
    manifest path."""
    os.makedirs(directory, exist_ok=True)
    file = "model.safetensors"
    ember.save(model.state_dict(), os.path.join(directory, file))
    meta = dict(meta)
    meta.setdefault("num_params", int(sum(p.numel() for p in model.parameters())))
    manifest = {"name": name, "model": model_cfg, "file": file, "transforms": transforms_cfg,
                "meta": meta}
    path = os.path.join(directory, MANIFEST)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
    os.replace(tmp, path)
    return path


def load_weights(path):
    """A ``LocalWeights`` member from a run folder or its ``weights.json``; its ``.model``
    attribute holds the model's ``_component_`` config."""
    manifest = os.path.join(path, MANIFEST) if os.path.isdir(path) else path
    if not os.path.isfile(manifest):
        raise FileNotFoundError(f"no weights manifest at {manifest!r} (train first, e.g. "
                                f"`ember run classify`, or give a zoo name like "
                                f"'ResNet18_Weights.DEFAULT')")
    with open(manifest) as f:
        m = json.load(f)
    file = os.path.join(os.path.dirname(os.path.abspath(manifest)), m["file"])
    transforms = functools.partial(instantiate, m["transforms"])
    enum_cls = LocalWeights(f"{m['name'].title()}_Weights",
                            {m["name"]: Weights(file, transforms, m["meta"])})
    w = enum_cls[m["name"]]
    enum_cls.model_config = m["model"]
    return w


def resolve_weights(spec):
    """A zoo name (``"ResNet18_Weights.DEFAULT"``), a weights member, or a local path -> member."""
    if isinstance(spec, WeightsEnum):
        return spec
    if isinstance(spec, str) and not os.path.exists(spec) and "/" not in spec \
            and spec.count(".") == 1 and "_Weights" in spec:
        return get_weight(spec)
    return load_weights(spec)


def build_model(weights, model_cfg=None):
    """The model for ``weights`` with its state dict loaded (local: from the manifest's model
    config; zoo: ``model_cfg`` or the builder registered with the weights' enum)."""
    if isinstance(weights, LocalWeights):
        model = instantiate(model_cfg or type(weights).model_config)
        model.load_state_dict(weights.get_state_dict())
        return model
    if model_cfg is not None:
        return instantiate(model_cfg, weights=weights)
    from ember.vision.models import _api

    for fn in _api._REGISTRY.models.values():
        enum_cls = getattr(fn, "_weights_enum", None)
        if enum_cls is not None and enum_cls.__name__ == type(weights).__name__:
            return fn(weights=weights)
    raise ValueError(f"no registered model builder uses {weights!r}")


def load_for_inference(cfg, recipe):
    """What evaluate and predict start with: ``(output dir, device, weights, model in eval
    mode on that device)`` from ``cfg["weights"]`` / ``cfg["model"]`` / ``cfg["device"]``."""
    import ember

    from ._runtime import setup_run

    out = setup_run(cfg, recipe)
    device = ember.device(cfg.get("device") or "cpu")
    weights = resolve_weights(cfg["weights"])
    return out, device, weights, build_model(weights, cfg.get("model")).to(device).eval()
