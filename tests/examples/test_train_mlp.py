"""The README's main job: the MLP example trains, its loss falls and it fits the spirals."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_mlp.py"


def _load():
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_mlp", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_loss_falls_and_model_fits():
    losses, acc = _load().main(steps=300, quiet=True)
    assert np.mean(losses[:10]) > 0.9  # starts near log(3)
    assert np.mean(losses[-25:]) < 0.1 * np.mean(losses[:10])
    assert acc > 0.95


def test_same_seed_same_losses():
    m = _load()
    a, _ = m.main(steps=20, seed=3, quiet=True)
    b, _ = m.main(steps=20, seed=3, quiet=True)
    assert a == b


def test_script_prints_falling_loss():
    r = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "60"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("step")]
    first, last = float(lines[0].split()[-1]), float(lines[-1].split()[-1])
    assert last < first
    assert "train accuracy" in r.stdout
