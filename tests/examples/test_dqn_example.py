"""examples/dqn.py, the ~30-line DQN on the layered API, runs with a tiny frame budget: it
collects, fills the buffer, takes gradient steps once 1000 frames are stored and reports the
returns of the training episodes."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dqn.py"


def _load():
    spec = importlib.util.spec_from_file_location("dqn_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dqn_example_trains_a_little(monkeypatch):
    mod = _load()
    steps = []
    real = mod.DQNLoss.forward
    monkeypatch.setattr(mod.DQNLoss, "forward",
                        lambda self, td: steps.append(1) or real(self, td))
    returns = mod.main(frames=1280, seed=0, updates_per_batch=8, quiet=True)
    assert len(steps) == 2 * 8                    # batches at 1024 and 1280 frames train
    assert len(returns) > 10 and all(8 <= r <= 500 for r in returns)


def test_dqn_example_same_seed_same_returns():
    mod = _load()
    assert mod.main(frames=512, seed=1, quiet=True) == mod.main(frames=512, seed=1, quiet=True)


def test_dqn_example_command_line():
    env = dict(os.environ)
    out = subprocess.run([sys.executable, str(EXAMPLE), "--frames", "512"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 and lines[-1].startswith("frames    512  mean return")
