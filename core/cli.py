"""The ``ember`` command line: run, list, copy and check recipes; environment and weights.

    ember ls                                     recipes and their bundled configs
    ember run classify [--config NAME|PATH] [key=value ...]
    ember run classify --help                    the recipe's config keys, defaults and help
    ember run ./my_recipe.py --config classify   a recipe copied out with `ember cp`
    ember run --nproc 2 classify                 data-parallel on 2 local ranks (mpiexec)
    ember cp classify ./my_recipe.py             copy a recipe (.py) or config (.yaml) out
    ember validate classify                      check a config without running it
    ember env                                    versions, backend, devices, BLAS, threads
    ember download ResNet18_Weights.DEFAULT      fetch weights into the hub cache
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys

__all__ = ["main"]


class _UsageError(Exception):
    pass


def _recipes():
    from ember.recipes import _registry

    return _registry


def _cmd_ls(args):
    R = _recipes()
    configs = R.list_configs()
    rows = []
    for name in R.list_recipes():
        mine = [c for c, r in configs.items() if r == name]
        rows.append((name, mine))
    print(f"{'RECIPE':<14} CONFIGS")
    for name, mine in rows:
        print(f"{name:<14} {', '.join(mine) if mine else '-'}")
    orphans = [c for c, r in configs.items() if r not in dict(rows)]
    if orphans:
        print(f"(configs naming no known recipe: {', '.join(orphans)})")
    return 0


def _config_path(spec):
    """A bundled config name or a path to a YAML file -> path."""
    R = _recipes()
    if spec.endswith((".yaml", ".yml")) or os.sep in spec or os.path.isfile(spec):
        if not os.path.isfile(spec):
            raise _UsageError(f"config file {spec!r} does not exist")
        return spec
    return R.get_config_path(spec)


def _reference(recipe_name):
    """The default config of a recipe (the schema user configs are checked against), or None."""
    from ember.recipes._config import load_config

    R = _recipes()
    if recipe_name in R.list_configs():
        return load_config(R.get_config_path(recipe_name))
    return None


def _resolve(recipe_arg, config_arg, overrides):
    """(recipe main, recipe name, final config) for ``ember run``/``validate``."""
    from ember.recipes._config import apply_overrides, load_config, validate

    R = _recipes()
    if recipe_arg is not None and recipe_arg.endswith(".py"):
        fn = R.load_recipe_file(recipe_arg)
        name = getattr(fn, "recipe_name", None)
        if name is not None and name.startswith("ember_user_recipe_"):
            name = None
    elif recipe_arg is not None and recipe_arg not in R.list_recipes() and \
            recipe_arg in R.list_configs() and config_arg is None:
        config_arg, fn, name = recipe_arg, None, None   # `ember run CONFIG`
    else:
        fn = R.get_recipe(recipe_arg) if recipe_arg is not None else None
        name = recipe_arg
    if config_arg is None:
        if name is None or name not in R.list_configs():
            raise _UsageError(f"no default config for recipe {recipe_arg!r}: pass --config "
                              f"NAME|PATH")
        config_arg = name
    cfg = load_config(_config_path(config_arg))
    cfg_recipe = cfg.get("recipe")
    if fn is None:
        if cfg_recipe is None:
            raise _UsageError(f"config {config_arg!r} names no recipe (add `recipe: NAME`)")
        fn, name = R.get_recipe(cfg_recipe), cfg_recipe
    elif name is not None and cfg_recipe is not None and cfg_recipe != name:
        raise _UsageError(f"config {config_arg!r} is for recipe {cfg_recipe!r}, not {name!r}")
    cfg = apply_overrides(cfg, overrides)
    validate(cfg, _reference(name or cfg_recipe))
    return fn, name or cfg_recipe, cfg


def _short(value, width=40):
    from ember.recipes._config import dump

    text = "null" if value is None else dump(value).strip().removesuffix("...").strip()
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _recipe_help(args):
    """``ember run RECIPE --help``: the recipe's summary and its config's keys, defaults and
    help lines (the comment after each key in the YAML file; the recipe's default config
    supplies those a user config lacks)."""
    import inspect

    from ember.recipes._config import COMPONENT, flatten, key_help, load_config

    R = _recipes()
    name, config = args.recipe, args.config
    if name.endswith(".py"):
        fn = R.load_recipe_file(name)
    elif name not in R.list_recipes() and name in R.list_configs() and config is None:
        config, fn = name, None
    else:
        fn = R.get_recipe(name)
    path = _config_path(config or name)
    cfg = load_config(path)
    recipe = getattr(fn, "recipe_name", None) or cfg.get("recipe") or name
    if fn is None:
        fn = R.get_recipe(recipe)
    helps = {}
    if recipe in R.list_configs():
        helps.update(key_help(R.get_config_path(recipe)))
    helps.update(key_help(path))
    doc = inspect.getdoc(inspect.getmodule(fn)) or ""
    summary = " ".join(doc.split("\n\n", 1)[0].split())
    print(f"usage: ember run {args.recipe} [--config NAME|PATH] [key=value ...]\n")
    if summary:
        print(summary + "\n")
    print(f"config: {path}\noverride any key with key=value (dotted for nested keys, values "
          f"in YAML: epochs=3 optimizer.lr=1e-3 resume=true);\n+key=value adds a key a "
          f"component accepts\n")
    rows = []
    for key, value in flatten(cfg).items():
        if key in ("recipe",):
            continue
        if key.endswith("." + COMPONENT):   # the component's line: the node's key and help
            key = key[:-len(COMPONENT) - 1]
        rows.append((key, _short(value), helps.get(key, "")))
    kw = max(len(r[0]) for r in rows)
    vw = max(len(r[1]) for r in rows)
    print(f"  {'KEY':<{kw}}  {'DEFAULT':<{vw}}  HELP")
    for key, value, text in rows:
        print(f"  {key:<{kw}}  {value:<{vw}}  {text}".rstrip())
    return 0


def _cmd_run(args):
    if args.help:
        if args.recipe is None:
            args.run_parser.print_help()
            return 0
        return _recipe_help(args)
    if args.recipe is None:
        args.run_parser.error("the following arguments are required: recipe")
    if args.nproc is not None and args.nproc > 1:
        from ember.distributed.launch import command

        rest = ["run", args.recipe, *(["--config", args.config] if args.config else []),
                *args.overrides]
        cmd = command("-m", args.nproc, ["ember.cli", *rest])
        print("launching: " + " ".join(cmd), flush=True)
        return subprocess.call(cmd)
    fn, _, cfg = _resolve(args.recipe, args.config, args.overrides)
    import ember

    threads = ember.get_num_threads()
    try:
        rc = fn(cfg)
    finally:   # a recipe may set its own thread count; a caller in-process keeps its own
        ember.set_num_threads(threads)
    return int(rc or 0)


def _cmd_validate(args):
    from ember.recipes._config import validate

    _, name, cfg = _resolve(None, args.config, args.overrides)
    n = validate(cfg)
    print(f"config OK: recipe {name!r}, {n} components import and accept their keys")
    return 0


def _cmd_cp(args):
    import importlib

    R = _recipes()
    name, dest = args.name, args.dest
    is_recipe = name in R.list_recipes()
    is_config = name.removesuffix(".yaml") in R.list_configs()
    if is_recipe and is_config:   # same name for both: the destination's suffix decides
        want_config = name.endswith(".yaml") or dest.endswith((".yaml", ".yml"))
        is_recipe, is_config = not want_config, want_config
    if is_recipe:
        src = importlib.import_module(R.get_recipe(name).__module__).__file__
    elif is_config:
        src = R.get_config_path(name.removesuffix(".yaml"))
    else:
        raise _UsageError(f"{name!r} is neither a recipe nor a config (see `ember ls`)")
    if os.path.isdir(dest) or dest.endswith(("/", os.sep)):
        dest = os.path.join(dest, os.path.basename(src))
    if os.path.exists(dest) and not args.force:
        raise _UsageError(f"{dest!r} exists (use --force to overwrite)")
    parent = os.path.dirname(os.path.abspath(dest))
    os.makedirs(parent, exist_ok=True)
    shutil.copyfile(src, dest)
    print(f"copied {src} -> {dest}")
    return 0


def _cmd_env(args):
    import numpy as np

    import ember

    print(f"ember      {getattr(ember, '__version__', '?')} ({os.path.dirname(ember.__file__)})")
    print(f"python     {platform.python_version()} ({sys.executable})")
    print(f"platform   {platform.platform()}")
    print(f"numpy      {np.__version__}")
    try:
        import cupy

        print(f"cupy       {cupy.__version__}")
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:   # noqa: BLE001 (a driver problem is reported, not raised)
            n, err = 0, e
            print(f"cuda       unavailable ({err})")
        for i in range(n):
            props = cupy.cuda.runtime.getDeviceProperties(i)
            name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
            print(f"cuda:{i}     {name}, {props['totalGlobalMem'] / 2 ** 30:.1f} GiB")
    except ImportError:
        print("cupy       not installed (CPU only: pip install 'ember[cuda12]')")
    print("devices    cpu" + ("".join(f", cuda:{i}" for i in range(_cuda_count()))))
    blas = _blas_info(np)
    print(f"blas       {blas}")
    print(f"cpus       {os.cpu_count()} (affinity: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'})")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "OPENBLAS_CORETYPE", "EMBER_HOME", "EMBER_OFFLINE"):
        if var in os.environ:
            print(f"{var:<10} {os.environ[var]}")
    try:
        from threadpoolctl import threadpool_info

        for p in threadpool_info():
            print(f"threads    {p.get('internal_api')}: {p.get('num_threads')}")
    except ImportError:
        pass
    from ember import hub

    print(f"hub        {hub.get_dir()}")
    return 0


def _cuda_count():
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:   # noqa: BLE001 (no cupy or no driver: no CUDA devices)
        return 0


def _blas_info(np):
    try:
        cfg = np.show_config(mode="dicts")
        b = cfg["Build Dependencies"]["blas"]
        return f"{b.get('name')} {b.get('version', '')}".strip()
    except Exception:   # noqa: BLE001 (older numpy without mode="dicts")
        return "unknown"


def _cmd_download(args):
    from ember import hub
    from ember.vision.models import get_weight

    w = get_weight(args.name)
    w.get_state_dict(progress=not args.quiet, check_hash=True)
    path = os.path.join(hub.get_dir(), "checkpoints", w.url.rsplit("/", 1)[-1])
    print(f"{w!r}: {path}")
    return 0


def _parser():
    p = argparse.ArgumentParser(prog="ember", description="ember recipes and tools",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("ls", help="list recipes and their configs").set_defaults(fn=_cmd_ls)
    r = sub.add_parser("run", help="run a recipe", add_help=False)
    r.add_argument("recipe", nargs="?", help="recipe name, config name, or path/to/recipe.py")
    r.add_argument("overrides", nargs="*", help="key=value overrides (dotted keys)")
    r.add_argument("--config", "-c", help="bundled config name or path to a .yaml file")
    r.add_argument("--nproc", type=int, help="run on N local ranks through mpiexec")
    r.add_argument("--help", "-h", action="store_true",
                   help="with a recipe: its config keys, their defaults and help; else this")
    r.set_defaults(fn=_cmd_run, run_parser=r)
    c = sub.add_parser("cp", help="copy a recipe (.py) or config (.yaml) out for editing")
    c.add_argument("name")
    c.add_argument("dest")
    c.add_argument("--force", action="store_true", help="overwrite an existing file")
    c.set_defaults(fn=_cmd_cp)
    v = sub.add_parser("validate", help="check a config without running it")
    v.add_argument("config", help="bundled config name or path to a .yaml file")
    v.add_argument("overrides", nargs="*", help="key=value overrides to check too")
    v.set_defaults(fn=_cmd_validate)
    sub.add_parser("env", help="versions, backend, devices, BLAS, threads").set_defaults(
        fn=_cmd_env)
    d = sub.add_parser("download", help="fetch weights into the hub cache")
    d.add_argument("name", help="e.g. ResNet18_Weights.DEFAULT")
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(fn=_cmd_download)
    return p


def main(argv=None):
    """Entry point of the ``ember`` console script; returns the exit code."""
    from ember.recipes._config import ConfigError

    from ember.recipes._runtime import set_command

    argv = sys.argv[1:] if argv is None else list(argv)
    set_command(argv)
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra:   # overrides given after an option (`run classify --config x a=1 b=2`)
        bad = [e for e in extra if e.startswith("-") or "=" not in e
               or not hasattr(args, "overrides")]
        if bad:
            parser.error(f"unrecognized arguments: {' '.join(bad)}")
        args.overrides = [*args.overrides, *extra]
    try:
        return args.fn(args)
    except (_UsageError, ConfigError, ValueError, FileNotFoundError) as e:
        print(f"ember {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
