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

import enum
import fnmatch
import functools
import importlib
import re
import warnings

__all__ = ["Weights", "WeightsEnum", "register_model", "list_models", "get_model_builder",
           "get_model", "get_model_weights", "get_weight"]


class Weights:
    """One published checkpoint: its ``url``, a ``transforms`` factory (called with no argument
    it builds the preset the checkpoint was evaluated with) and ``meta`` (categories, num_params,
    _metrics, recipe, min_size, _ops, _file_size, _docs, ...)."""

    __slots__ = ("url", "transforms", "meta")

    def __init__(self, url, transforms, meta):
        self.url = url
        self.transforms = transforms
        self.meta = meta

    def __repr__(self):
        return f"Weights(url={self.url!r}, transforms={self.transforms!r}, meta={{...}})"


class WeightsEnum(enum.Enum):
    """Base of the per-builder weights enums; each member's value is a :class:`Weights`.

    Members compare (and hash) by enum class name and member name, so a member stays equal to
    itself after ``copy``, ``deepcopy`` and pickling, and to the same member of a re-imported
    enum. ``DEFAULT`` is an alias of the recommended entry.
    """

    @classmethod
    def verify(cls, obj):
        """``None``, a member of ``cls``, or a member's name (``"IMAGENET1K_V1"``, or
        ``"ResNet50_Weights.IMAGENET1K_V1"``) -> the member (or ``None``)."""
        if obj is None:
            return None
        if isinstance(obj, str):
            name = obj
            if "." in name:
                owner, _, name = name.partition(".")
                if owner != cls.__name__:
                    raise ValueError(f"weights {obj!r} do not belong to {cls.__name__}")
            try:
                return cls[name]
            except KeyError:
                raise ValueError(f"unknown weights {obj!r} for {cls.__name__}: expected one of "
                                 f"{', '.join(cls.__members__)}") from None
        if isinstance(obj, WeightsEnum) and type(obj).__name__ == cls.__name__:
            return cls[obj.name]
        raise TypeError(f"weights must be None, a {cls.__name__} member or its name, got "
                        f"{obj!r} ({type(obj).__name__})")

    @property
    def url(self):
        return self.value.url

    @property
    def meta(self):
        return self.value.meta

    @property
    def transforms(self):
        """The transforms factory: ``weights.transforms()`` builds the inference preset."""
        return self.value.transforms

    def get_state_dict(self, progress=True, check_hash=True, **kwargs):
        """Download (once, into the ``ember.hub`` cache) and load the checkpoint.

        With ``check_hash`` the sha256 of a new download must start with the hex prefix in the
        file name (``resnet50-11ad3fa6.pth`` -> ``11ad3fa6``). ``kwargs`` go to
        ``ember.hub.load_state_dict_from_url`` (``model_dir``, ``map_location``, ``file_name``).
        """
        from ember import hub

        return hub.load_state_dict_from_url(self.url, progress=progress, check_hash=check_hash,
                                            **kwargs)

    def __eq__(self, other):
        return (isinstance(other, WeightsEnum) and type(other).__name__ == type(self).__name__
                and other.name == self.name)

    def __hash__(self):
        return hash((type(self).__name__, self.name))

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"

    def __reduce_ex__(self, proto):
        return get_weight, (f"{type(self).__name__}.{self.name}",)


# ------------------------------------------------------------------------------ registry
_HASH_RE = re.compile(r"-([a-f0-9]{6,})\.")  # the sha256 prefix in a file name
_MODELS = {}    # name -> builder
_ENUMS = {}     # enum class name -> enum


def register_model(name=None, weights=None):
    """Decorator: register ``fn`` under ``name`` (default its ``__name__``) with its weights enum.

    The registered builder is wrapped so that ``weights`` may be given as a name, legacy
    ``pretrained=`` maps to ``DEFAULT`` (with a ``UserWarning``), and arguments are keyword-only.
    Registering a name twice raises ``ValueError``.
    """
    def deco(fn):
        key = name or fn.__name__
        if key in _MODELS:
            raise ValueError(f"a model named {key!r} is already registered")
        wrapped = _legacy_wrapper(fn, weights)
        wrapped._weights_enum = weights
        _MODELS[key] = wrapped
        if weights is not None:
            _ENUMS[weights.__name__] = weights
        return wrapped
    return deco


def _legacy_wrapper(fn, weights_enum):
    @functools.wraps(fn)
    def builder(*args, **kwargs):
        if args:
            raise TypeError(f"{fn.__name__}() takes keyword arguments only (weights=, progress=, "
                            f"...), got {len(args)} positional")
        if "pretrained" in kwargs:
            pretrained = kwargs.pop("pretrained")
            if kwargs.get("weights") is not None:
                raise ValueError("give either weights= or the deprecated pretrained=, not both")
            default = None
            if pretrained:
                if weights_enum is None:
                    raise ValueError(f"{fn.__name__} has no pretrained weights")
                default = weights_enum.DEFAULT
            warnings.warn(f"the parameter 'pretrained' is deprecated; use "
                          f"'weights={default!r}' instead", UserWarning, stacklevel=2)
            kwargs["weights"] = default
        if weights_enum is not None:
            kwargs["weights"] = weights_enum.verify(kwargs.get("weights"))
        return fn(**kwargs)
    return builder


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


def _patterns(p):
    return [p] if isinstance(p, str) else list(p)


def list_models(module=None, include=None, exclude=None):
    """Sorted names of the registered builders.

    ``module`` keeps the builders defined directly in that package (``ember.vision.models``
    lists the classification zoo, not sub-packages such as a future ``.detection``) or in that
    module (``ember.vision.models.resnet``); ``include``/``exclude`` are fnmatch patterns (a
    string or a list).
    """
    names = []
    for key, fn in _MODELS.items():
        if module is not None:
            mod = module if isinstance(module, str) else module.__name__
            if mod not in (fn.__module__, fn.__module__.rsplit(".", 1)[0]):
                continue
        names.append(key)
    if include is not None:
        pats = _patterns(include)
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in pats)]
    if exclude is not None:
        pats = _patterns(exclude)
        names = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in pats)]
    return sorted(names)


def get_model_builder(name):
    """The registered builder called ``name`` (case-insensitive)."""
    try:
        return _MODELS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown model {name!r}: see ember.vision.models.list_models()") \
            from None


def get_model(name, **config):
    """Build the registered model ``name`` with ``config`` (``weights=``, ``num_classes=``,
    ...)."""
    return get_model_builder(name)(**config)


def get_model_weights(name):
    """The weights enum of a builder, given by name or as the builder itself."""
    fn = get_model_builder(name) if isinstance(name, str) else name
    enum_cls = getattr(fn, "_weights_enum", None)
    if enum_cls is None:
        raise ValueError(f"{getattr(fn, '__name__', fn)!r} is not a registered builder with "
                         "weights")
    return enum_cls


def get_weight(name):
    """``"ResNet50_Weights.IMAGENET1K_V2"`` (or ``".DEFAULT"``) -> the enum member."""
    m = re.fullmatch(r"([A-Za-z_][\w]*)\.([A-Za-z_][\w]*)", name or "")
    if m is None:
        raise ValueError(f"weights name must look like 'ResNet50_Weights.IMAGENET1K_V1', got "
                         f"{name!r}")
    if not _ENUMS:   # e.g. unpickling in a fresh process: register the zoo first
        importlib.import_module("ember.vision.models")
    enum_cls = _ENUMS.get(m.group(1))
    if enum_cls is None:
        raise ValueError(f"unknown weights enum {m.group(1)!r}")
    return enum_cls.verify(m.group(2))


def _preset_factory(**kwargs):
    """A picklable transforms factory: ``_preset_factory(crop_size=224)()`` builds the preset."""
    from ember.vision.transforms._presets import ImageClassification

    return functools.partial(ImageClassification, **kwargs)

