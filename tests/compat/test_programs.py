"""PyTorch-style training programs run on ember with only their import lines naming ember.

Each program in ``programs/`` is written as ordinary torch code (``import ember as torch``).
The test runs it on ember and checks its loss falls; where PyTorch can run the same file (its
import lines pointed at torch, nothing else changed) it runs that too, so the program is known
to be plain torch code and not something shaped to ember.
"""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from . import harness

# name -> how much the loss must fall (last <= factor * first), and for the run on torch:
# True, "torchvision" (needs it installed) or a reason it is not run.
PROGRAMS = {
    "vae": (0.6, True),
    "dcgan": (0.95, True),
    "lstm_lm": (0.6, True),
    "gcn": (0.2, True),
    "lbfgs_fit": (0.2, True),
    "split_pipeline": (0.5, True),
    "mnist_cnn": (0.6, "torchvision"),
    "reinforce": (0.6, True),  # its "loss" is the mean episode length
    "hogwild": (0.8, "torch's OpenMP pool does not survive fork in a process that already "
                     "used it, and spawn needs the program importable as written for torch"),
}


def _args(name, tmp_path):
    return (harness.write_mnist_idx(str(tmp_path)),) if name == "mnist_cnn" else ()


def _run_in_subprocess(name):
    # Hogwild forks: run it in a fresh interpreter, away from the test process's threads
    code = (f"import json, sys; sys.path.insert(0, {str(harness.PROGRAMS)!r}); "
            f"import {name}; print(json.dumps({name}.main()))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _losses_fall(losses, factor):
    assert all(x == x for x in losses), losses  # no NaN
    assert losses[-1] <= factor * losses[0], losses


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_only_import_lines_name_ember(name):
    text = (harness.PROGRAMS / f"{name}.py").read_text()
    code = re.sub(r'^""".*?"""', "", text, count=1, flags=re.S)  # the module docstring
    named = [ln for ln in code.splitlines() if re.search(r"\bember\b", ln)]
    assert named and named == harness.import_lines(name)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_runs_on_ember_and_learns(name, tmp_path):
    factor, _ = PROGRAMS[name]
    if name == "hogwild":
        losses = _run_in_subprocess(name)
    else:
        losses = harness.load(name, "ember").main(*_args(name, tmp_path))
    _losses_fall(losses, factor)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_program_runs_on_torch(name, tmp_path):
    factor, twin = PROGRAMS[name]
    if twin is not True and twin != "torchvision":
        pytest.skip(twin)
    pytest.importorskip("torch")
    if twin == "torchvision" and importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed (the run on torch needs it)")
    _losses_fall(harness.load(name, "torch").main(*_args(name, tmp_path)), factor)
