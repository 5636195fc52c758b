"""The multi-weight API: ``Weights``, ``WeightsEnum`` and the model registry.

Every builder is registered by ``@register_model(weights=SomeEnum)`` and takes its arguments
keyword-only: ``builder(*, weights=None, progress=True, **kwargs)``. ``weights`` is a member of the
builder's enum, its name (``"IMAGENET1K_V2"``, ``"DEFAULT"`` or ``"ResNet50_Weights.DEFAULT"``) or
``None``; ``num_classes`` then comes from the weights' categories. The legacy ``pretrained=True``
maps to ``DEFAULT`` with a deprecation warning.

    >>> from ember.vision.models import get_model, get_weight, list_models
    >>> "resnet50" in list_models()
    True
    >>> w = get_weight("ResNet50_Weights.DEFAULT")
    >>> w, w.meta["num_params"], w.url.rsplit("/", 1)[-1]
    (ResNet50_Weights.IMAGENET1K_V2, 25557032, 'resnet50-11ad3fa6.pth')
    >>> m = get_model("resnet18", num_classes=10)
"""
from __future__ import annotations

import functools

from ember._weights import HASH_IN_NAME as _HASH_RE, ModelRegistry, Weights, WeightsEnum  # noqa: F401

__all__ = ["Weights", "WeightsEnum", "register_model", "list_models", "get_model_builder",
           "get_model", "get_model_weights", "get_weight"]

_REGISTRY = ModelRegistry("ember.vision.models")
register_model = _REGISTRY.register_model
list_models = _REGISTRY.list_models
get_model_builder = _REGISTRY.get_model_builder
get_model = _REGISTRY.get_model
get_model_weights = _REGISTRY.get_model_weights
get_weight = _REGISTRY.get_weight


def _set_param(kwargs, param, value):
    """Set ``kwargs[param] = value`` unless the caller gave a different value (then raise)."""
    if param in kwargs and kwargs[param] != value:
        raise ValueError(f"the parameter {param!r} expected value {value} (from the weights) "
                         f"but got {kwargs[param]} instead")
    kwargs[param] = value


def _weights_kwargs(weights, kwargs):
    """num_classes from the weights' categories (a conflicting num_classes is an error)."""
    if weights is not None and weights.meta.get("categories") is not None:
        _set_param(kwargs, "num_classes", len(weights.meta["categories"]))


def _load(model, weights, progress):
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


def _preset_factory(**kwargs):
    """A picklable transforms factory: ``_preset_factory(crop_size=224)()`` builds the preset."""
    from ember.vision.transforms._presets import ImageClassification

    return functools.partial(ImageClassification, **kwargs)

