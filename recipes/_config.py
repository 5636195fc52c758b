"""Recipe configs: YAML files, dotted ``key=value`` overrides and ``_component_`` instantiation.

A config is a nested dict. A dict holding ``_component_: dotted.path.to.callable`` describes an
object: ``instantiate(node, **extra)`` imports the callable and calls it with the node's other
keys (instantiated recursively) plus ``extra``. Overrides are ``a.b.c=value`` with ``value``
parsed as YAML (``lr=1e-3`` is a float, ``resume=true`` a bool, ``size=[1,2]`` a list); a key
must already exist, or be a parameter of the component that holds it; ``+a.b=value`` adds a
new key. Unknown keys raise ``ConfigError`` suggesting the nearest key; ``validate`` against
the recipe's default config also checks each value's type against the default's (``epochs=abc``
fails before anything runs). A key's one-line help is the comment after it on its line in the
YAML file (``epochs: 15   # passes over the training set``), read by ``key_help``.

    >>> cfg = {"optimizer": {"_component_": "ember.optim.SGD", "lr": 0.1}, "epochs": 2}
    >>> cfg = apply_overrides(cfg, ["optimizer.lr=0.5", "epochs=3"])
    >>> cfg["optimizer"]["lr"], cfg["epochs"]
    (0.5, 3)
    >>> apply_overrides(cfg, ["optimizer.lrr=1"])  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    ember.recipes._config.ConfigError: unknown key 'optimizer.lrr'; did you mean 'optimizer.lr'?
"""
from __future__ import annotations

import copy
import difflib
import importlib
import inspect
import os
import re

import yaml

__all__ = ["ConfigError", "load_config", "apply_overrides", "instantiate", "resolve_component",
           "flatten", "validate", "dump", "key_help", "COMPONENT"]

COMPONENT = "_component_"
META_KEYS = ("recipe",)   # keys every config may carry


class _Loader(yaml.SafeLoader):
    """YAML as PyYAML reads it, except that ``1e-3`` is a float (YAML 1.2), not a string."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def _yaml_load(text_or_file):
    return yaml.load(text_or_file, Loader=_Loader)


class ConfigError(ValueError):
    """A config that cannot be used as given (unknown key, bad value, bad path)."""


def load_config(path):
    """Read a YAML config file into a dict (``ConfigError`` for a missing file or non-mapping)."""
    if not os.path.isfile(path):
        raise ConfigError(f"config file {path!r} does not exist")
    with open(path) as f:
        try:
            data = _yaml_load(f)
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {path!r} is not valid YAML: {e}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path!r} must hold a mapping at top level, got "
                          f"{type(data).__name__}")
    return data


def _split_comment(text):
    """``"value   # help"`` -> ``("value", "help")``; a ``#`` inside quotes is no comment."""
    quote = None
    for i, ch in enumerate(text):
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip(), text[i + 1:].strip()
    return text.rstrip(), ""


def key_help(path):
    """``{dotted key: help}`` from the comments that follow keys on their line in the YAML file
    at ``path`` (block mappings; list items and flow collections are values, not keys).

        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "c.yaml")
        >>> text = ["epochs: 3   # passes over the data", "opt:", "  lr: 0.1  # step"]
        >>> _ = open(p, "w").write("\\n".join(text))
        >>> key_help(p)
        {'epochs': 'passes over the data', 'opt.lr': 'step'}
    """
    line_re = re.compile(r"^( *)([A-Za-z_][\w.\-]*|'[^']*'|\"[^\"]*\") *:(?: +(.*)|$)")
    out, stack = {}, []   # stack: (indent, key) of the mappings that hold the current line
    with open(path) as f:
        for line in f:
            m = line_re.match(line.rstrip("\n"))
            if m is None:
                continue   # blank, a comment, a list item or a continuation
            indent, key = len(m.group(1)), m.group(2).strip("'\"")
            while stack and stack[-1][0] >= indent:
                stack.pop()
            value, comment = _split_comment(m.group(3) or "")
            dotted = ".".join([k for _, k in stack] + [key])
            if comment:
                out[dotted] = comment
            if not value:
                stack.append((indent, key))
    return out


def flatten(cfg, prefix=""):
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists are leaves)."""
    out = {}
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def resolve_component(path):
    """Import ``"pkg.mod.attr"`` (attributes may nest: ``"pkg.mod.Class.method"``)."""
    if not isinstance(path, str) or not path:
        raise ConfigError(f"{COMPONENT} must be a dotted path string, got {path!r}")
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except AttributeError:
            break
        return obj
    raise ConfigError(f"cannot import {COMPONENT} {path!r}")


def _params(fn):
    """(names of the keyword parameters of ``fn``, whether it takes ``**kwargs``)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return set(), True
    names, var = set(), False
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            var = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.add(p.name)
    return names, var


def _unknown(key, known):
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown key {key!r}{hint}")


def _known_keys(cfg):
    """Every dotted key of ``cfg`` plus the parameters of each component (for suggestions)."""
    keys = set(flatten(cfg))

    def walk(node, prefix):
        if isinstance(node, dict):
            if COMPONENT in node:
                try:
                    names, _ = _params(resolve_component(node[COMPONENT]))
                    keys.update(prefix + n for n in names)
                except ConfigError:
                    pass
            for k, v in node.items():
                keys.add(prefix + str(k))
                walk(v, f"{prefix}{k}.")
    walk(cfg, "")
    return keys


def _parse_value(text):
    try:
        return _yaml_load(text) if text != "" else ""
    except yaml.YAMLError:
        return text


def apply_overrides(cfg, overrides):
    """A copy of ``cfg`` with ``key=value`` overrides applied (see the module docstring)."""
    cfg = copy.deepcopy(cfg)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key=value (e.g. epochs=3)")
        key, _, text = item.partition("=")
        key = key.strip()
        add = key.startswith("+")
        key = key.lstrip("+")
        if not key or any(not p for p in key.split(".")):
            raise ConfigError(f"override {item!r} has an empty key part")
        parts = key.split(".")
        node = cfg
        for i, p in enumerate(parts[:-1]):
            if not isinstance(node, dict) or (p not in node and not add):
                raise _unknown(key, _known_keys(cfg))
            node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"cannot set {key!r}: {'.'.join(parts[:-1])!r} is not a mapping")
        last = parts[-1]
        if last not in node and not add:
            ok = False
            if COMPONENT in node:
                names, var = _params(resolve_component(node[COMPONENT]))
                ok = last in names
            if not ok:
                raise _unknown(key, _known_keys(cfg))
        node[last] = _parse_value(text)
    return cfg


_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number",
               str: "a string", list: "a list", dict: "a mapping"}


def _expected(default):
    """The type a value must have where the default config holds ``default`` (None: any)."""
    if default is None:
        return None
    if isinstance(default, dict):
        return "component" if COMPONENT in default else dict
    for t in (bool, int, float, str, list):
        if isinstance(default, t):
            return t
    return None


def _type_ok(value, want):
    if want is None:
        return True
    if want == "component":   # another component, or null to leave it out
        return value is None or isinstance(value, dict)
    if want is bool:
        return isinstance(value, bool)
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if want is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if want is str:   # a path or name YAML read as a number (output_dir=2024) is fine too
        return value is None or (isinstance(value, (str, int, float))
                                 and not isinstance(value, bool))
    if want is list:   # null: the recipe's "none given" (e.g. every label, not a chosen few)
        return value is None or isinstance(value, (list, tuple))
    return isinstance(value, want)


def _check_type(key, value, default):
    want = _expected(default)
    if _type_ok(value, want):
        return
    what = "a component (a mapping with _component_) or null" if want == "component" \
        else _TYPE_NAMES[want]
    shown = dump(default).strip() if isinstance(default, (dict, list)) else \
        yaml.safe_dump(default, default_flow_style=True).strip().removesuffix("...").strip()
    raise ConfigError(f"invalid value for {key!r}: expected {what} (the default is {shown}), "
                      f"got {value!r} ({type(value).__name__})")


def validate(cfg, reference=None):
    """Check ``cfg`` without running it: every ``_component_`` imports and accepts its keys,
    and (with ``reference``, the recipe's default config) every plain key is known there and
    every value has the type of the reference's value (an int for ``epochs: 15``, a number for
    ``lr: 0.003``; a null default admits anything). Raises ``ConfigError`` on the first
    problem; returns the number of components checked."""
    count = 0

    def walk(node, ref, prefix):
        nonlocal count
        if isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, None, f"{prefix}{i}.")
            return
        if not isinstance(node, dict):
            return
        if COMPONENT in node:
            fn = resolve_component(node[COMPONENT])
            count += 1
            names, var = _params(fn)
            same = isinstance(ref, dict) and ref.get(COMPONENT) == node[COMPONENT]
            for k, v in node.items():
                if k == COMPONENT:
                    continue
                if not var and k not in names:
                    raise _unknown(prefix + k, {prefix + n for n in names})
                sub = ref.get(k) if same else None   # the same component: same arg types
                if sub is not None:
                    _check_type(prefix + k, v, sub)
                walk(v, sub if isinstance(sub, dict) else None, f"{prefix}{k}.")
            return
        for k, v in node.items():
            if ref is not None and k not in ref and not (prefix == "" and k in META_KEYS):
                raise _unknown(prefix + str(k), {prefix + str(r) for r in ref})
            sub = ref.get(k) if isinstance(ref, dict) else None
            if ref is not None:
                _check_type(prefix + str(k), v, sub)
            walk(v, sub if isinstance(sub, dict) else None, f"{prefix}{k}.")
    walk(cfg, reference, "")
    return count


def instantiate(node, *args, **extra):
    """Build the object a ``_component_`` node describes; plain dicts and lists are walked and
    their components built; other values are returned as they are.

        >>> instantiate({"_component_": "ember.nn.Linear", "in_features": 2, "out_features": 3})
        Linear(in_features=2, out_features=3, bias=True)
    """
    if isinstance(node, list):
        return [instantiate(v) for v in node]
    if not isinstance(node, dict):
        return node
    if COMPONENT not in node:
        return {k: instantiate(v) for k, v in node.items()}
    fn = resolve_component(node[COMPONENT])
    kwargs = {k: instantiate(v) for k, v in node.items() if k != COMPONENT}
    kwargs.update(extra)
    try:
        return fn(*args, **kwargs)
    except TypeError as e:
        raise ConfigError(f"cannot build {node[COMPONENT]} with {sorted(kwargs)}: {e}") from e


def dump(cfg):
    """The config as YAML text (key order kept)."""
    return yaml.safe_dump(cfg, sort_keys=False, default_flow_style=None)
