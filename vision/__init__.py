"""ember.vision: models with the multi-weight API, transforms, image/video I/O, datasets, ops and
utils. Submodules load on first use (``ember.vision.transforms``, ``.tv_tensors``, ``.io``,
``.datasets``, ``.models``, ``.ops``, ``.utils``)."""
import importlib

_SUBMODULES = ("datasets", "io", "models", "ops", "transforms", "tv_tensors", "utils")


def __getattr__(name):
    if name in _SUBMODULES:
        mod = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = mod
        return mod
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
