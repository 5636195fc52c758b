"""Packaging: every package folder is mapped, and a built wheel holds only ``ember/``."""
from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python >= 3.11


def _config():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _package_folders():
    """``{import name: folder}`` for every folder under a mapped root holding __init__.py."""
    cfg = _config()["tool"]["setuptools"]
    roots = cfg["package-dir"]
    found = {}
    for name, folder in roots.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            # a folder mapped to a package of its own (data/ under ember) is not a subpackage
            if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            found[".".join((name, *rel.parts)) if rel.parts else name] = init.parent
    return found


def test_every_package_folder_is_listed():
    listed = set(_config()["tool"]["setuptools"]["packages"])
    folders = _package_folders()
    missing = sorted(set(folders) - listed)
    assert not missing, f"folders with __init__.py missing from pyproject packages: {missing}"
    stale = sorted(listed - set(folders))
    assert not stale, f"pyproject lists packages with no folder: {stale}"


def test_no_stray_init_outside_mapped_roots():
    roots = {(ROOT / f).resolve() for f in _config()["tool"]["setuptools"]["package-dir"].values()}
    for child in ROOT.iterdir():
        if child.is_dir() and (child / "__init__.py").exists():
            assert child.resolve() in roots, f"{child.name}/ has __init__.py but is not mapped"


def test_installed_packages_import_from_their_folders():
    for name, folder in _package_folders().items():
        mod = importlib.import_module(name)
        assert Path(mod.__file__).resolve().parent == folder.resolve(), name


def test_extras_and_python_floor():
    project = _config()["project"]
    assert project["requires-python"] == ">=3.10"
    assert {"test", "cuda12", "cuda13", "distributed"} <= set(project["optional-dependencies"])


def test_wheel_contains_only_ember(tmp_path):
    """Build the wheel for real and read its file list: no top-level core/, data/, ... ."""
    src = tmp_path / "src"  # a copy: an in-tree build/ could leak stale files into the wheel
    keep = set(_config()["tool"]["setuptools"]["package-dir"].values())
    shutil.copytree(ROOT, src, ignore=lambda d, names: [
        n for n in names if n in ("__pycache__", ".git", "build", "dist")
        or (Path(d) == ROOT and (ROOT / n).is_dir() and n not in keep)])
    env = dict(os.environ, PIP_NO_INDEX="1")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, env=env,
        timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("ember-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == {"ember"}, f"unexpected top-level entries: {sorted(tops)}"
    for pkg in _package_folders():
        path = pkg.replace(".", "/") + "/__init__.py"
        assert path in names, f"{path} missing from the wheel"
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)
    # the package data the main job and the shipped weights need
    for pattern in ("ember/recipes/configs/classify.yaml", "ember/recipes/data/mnist_5k.csv.gz",
                    "ember/vision/models/weights/mnist_cnn-"):
        assert any(n.startswith(pattern) for n in names), f"{pattern} missing from the wheel"
