"""The recipe registry: recipes register themselves by decorator; configs are the YAML files in
``configs/`` (each names its recipe in a top-level ``recipe:`` key). Nothing is listed by hand.

    >>> from ember.recipes import _registry as R
    >>> "classify" in R.list_recipes()
    True
    >>> R.get_config_path("classify").endswith("classify.yaml")
    True
"""
from __future__ import annotations

import difflib
import importlib
import importlib.util
import os
import pkgutil
import sys

import yaml

__all__ = ["register_recipe", "list_recipes", "get_recipe", "list_configs", "get_config_path",
           "load_recipe_file", "CONFIG_DIR"]

CONFIG_DIR = os.path.join(os.path.dirname(__file__), "configs")
_RECIPES: dict = {}   # name -> module-level main(cfg)
_SCANNED = False


def register_recipe(name=None):
    """Decorator for a recipe's ``main(cfg)``: registers it under ``name`` (default: the module's
    last name part). A second recipe with the same name raises ``ValueError``."""
    def deco(fn):
        key = name or fn.__module__.rsplit(".", 1)[-1]
        old = _RECIPES.get(key)
        same = old is not None and (old.__code__.co_filename, old.__qualname__) == (
            fn.__code__.co_filename, fn.__qualname__)   # the same file imported again
        if old is not None and not same:
            raise ValueError(f"a recipe named {key!r} is already registered "
                             f"({old.__module__}.{old.__qualname__})")
        _RECIPES[key] = fn
        fn.recipe_name = key
        return fn
    return deco


def _scan():
    """Import every public module of ``ember.recipes`` once (their decorators fill the registry)."""
    global _SCANNED
    if _SCANNED:
        return
    pkg = importlib.import_module("ember.recipes")
    for info in pkgutil.iter_modules(pkg.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"ember.recipes.{info.name}")
    _SCANNED = True


def list_recipes():
    """Sorted names of the registered recipes."""
    _scan()
    return sorted(_RECIPES)


def _suggest(name, choices):
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def get_recipe(name):
    """The ``main(cfg)`` of the recipe ``name``; ``ValueError`` naming the nearest one if unknown."""
    _scan()
    try:
        return _RECIPES[name]
    except KeyError:
        raise ValueError(f"unknown recipe {name!r}{_suggest(name, _RECIPES)} "
                         f"(see `ember ls`)") from None


def list_configs():
    """``{config name: recipe name}`` for every bundled config (sorted by name)."""
    out = {}
    for fn in sorted(os.listdir(CONFIG_DIR)):
        if fn.endswith(".yaml"):
            with open(os.path.join(CONFIG_DIR, fn)) as f:
                data = yaml.safe_load(f) or {}
            out[fn[:-5]] = data.get("recipe")
    return out


def get_config_path(name):
    """Path of the bundled config ``name``; ``ValueError`` naming the nearest one if unknown."""
    path = os.path.join(CONFIG_DIR, f"{name}.yaml")
    if not os.path.isfile(path):
        raise ValueError(f"unknown config {name!r}{_suggest(name, list_configs())} "
                         f"(see `ember ls`, or give a path to a .yaml file)")
    return path


def load_recipe_file(path):
    """Import a recipe module from a file (e.g. one copied out by ``ember cp``) and return its
    ``main``. The module's own ``@register_recipe`` may replace a bundled recipe of that name."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"recipe file {path!r} does not exist")
    modname = "ember_user_recipe_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    saved = dict(_RECIPES)
    _RECIPES.clear()
    try:
        spec.loader.exec_module(mod)
    finally:
        _RECIPES.clear()
        _RECIPES.update(saved)   # a user file never changes the registry for others
    fn = getattr(mod, "main", None)
    if not callable(fn):
        raise ValueError(f"recipe file {path!r} defines no main(cfg)")
    return fn
