"""The multi-weight API every domain shares: ``Weights``, ``WeightsEnum`` and a model
registry per domain (``ember.vision.models``, ``ember.text.models``, ...).

A builder is registered with ``@registry.register_model(weights=SomeEnum)`` and takes its
arguments keyword-only: ``builder(*, weights=None, progress=True, **kwargs)``. ``weights`` is a
member of the builder's enum, its name (``"IMAGENET1K_V2"``, ``"DEFAULT"`` or
``"ResNet50_Weights.DEFAULT"``) or ``None``. The legacy ``pretrained=True`` maps to ``DEFAULT``
with a deprecation warning.

A checkpoint's integrity: ``meta["sha256"]`` (the full digest) when the entry states one,
else the hex prefix in the file name (``resnet50-11ad3fa6.pth``), as torchvision's files carry.
"""
from __future__ import annotations

import enum
import fnmatch
import functools
import importlib
import re
import warnings

__all__ = ["Weights", "WeightsEnum", "ModelRegistry"]

HASH_IN_NAME = re.compile(r"-([a-f0-9]{6,})\.")  # the sha256 prefix in a file name


class Weights:
    """One published checkpoint: its ``url``, a ``transforms`` factory (called with no
    argument it builds what the checkpoint expects: an image preset, a tokenizer, ...) and
    ``meta`` (num_params, metrics, recipe, _docs, ...)."""

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
        """The transforms factory: ``weights.transforms()`` builds what the model expects."""
        return self.value.transforms

    def get_state_dict(self, progress=True, check_hash=True, **kwargs):
        """Download (once, into the ``ember.hub`` cache) and load the checkpoint.

        With ``check_hash`` a new download must match ``meta["sha256"]`` where the entry states
        it, else the hex prefix in the file name. ``meta["file_name"]`` names the cached file
        where URLs share a name (every Hugging Face checkpoint is ``model.safetensors``).
        ``kwargs`` go to ``ember.hub.load_state_dict_from_url`` (``model_dir``,
        ``map_location``, ``file_name``)."""
        from ember import hub

        meta = self.meta
        if meta.get("file_name"):
            kwargs.setdefault("file_name", meta["file_name"])
        if "sha256" in meta:
            kwargs.setdefault("sha256", meta["sha256"] if check_hash else None)
            check_hash = False
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
        return _rebuild_weights, (type(self).__module__, type(self).__qualname__, self.name)


def _rebuild_weights(module, qualname, name):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj.verify(name)


def _patterns(p):
    return [p] if isinstance(p, str) else list(p)


class ModelRegistry:
    """The builders of one domain package (``package``, e.g. ``"ember.vision.models"``), with
    torchvision's ``register_model``/``list_models``/``get_model``/``get_model_weights``/
    ``get_weight``. Names are unique within a registry."""

    def __init__(self, package):
        self.package = package
        self.models = {}   # name -> builder
        self.enums = {}    # enum class name -> enum

    def register_model(self, name=None, weights=None):
        """Decorator: register ``fn`` under ``name`` (default its ``__name__``) with its
        weights enum. The registered builder takes keyword arguments only, accepts ``weights``
        by name, and maps legacy ``pretrained=`` to ``DEFAULT`` with a ``UserWarning``.
        Registering a name twice raises ``ValueError``."""
        def deco(fn):
            key = name or fn.__name__
            if key in self.models:
                raise ValueError(f"a model named {key!r} is already registered")
            wrapped = _keyword_builder(fn, weights)
            wrapped._weights_enum = weights
            self.models[key] = wrapped
            if weights is not None:
                self.enums[weights.__name__] = weights
            return wrapped
        return deco

    def list_models(self, module=None, include=None, exclude=None):
        """Sorted names of the registered builders. ``module`` keeps those defined directly in
        that package or module; ``include``/``exclude`` are fnmatch patterns (a string or a
        list)."""
        names = []
        for key, fn in self.models.items():
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

    def get_model_builder(self, name):
        """The registered builder called ``name`` (case-insensitive)."""
        try:
            return self.models[name.lower()]
        except KeyError:
            raise ValueError(f"unknown model {name!r}: see {self.package}.list_models()") \
                from None

    def get_model(self, name, **config):
        """Build the registered model ``name`` with ``config`` (``weights=``, ...)."""
        return self.get_model_builder(name)(**config)

    def get_model_weights(self, name):
        """The weights enum of a builder, given by name or as the builder itself."""
        fn = self.get_model_builder(name) if isinstance(name, str) else name
        enum_cls = getattr(fn, "_weights_enum", None)
        if enum_cls is None:
            raise ValueError(f"{getattr(fn, '__name__', fn)!r} is not a registered builder "
                             "with weights")
        return enum_cls

    def get_weight(self, name):
        """``"ResNet50_Weights.IMAGENET1K_V2"`` (or ``".DEFAULT"``) -> the enum member."""
        m = re.fullmatch(r"([A-Za-z_]\w*)\.([A-Za-z_]\w*)", name or "")
        if m is None:
            raise ValueError(f"weights name must look like 'ResNet50_Weights.IMAGENET1K_V1', "
                             f"got {name!r}")
        if not self.enums:   # e.g. a fresh process: register the package's builders first
            importlib.import_module(self.package)
        enum_cls = self.enums.get(m.group(1))
        if enum_cls is None:
            raise ValueError(f"unknown weights enum {m.group(1)!r} in {self.package}")
        return enum_cls.verify(m.group(2))


def _keyword_builder(fn, weights_enum):
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
