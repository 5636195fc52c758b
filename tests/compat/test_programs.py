"""PyTorch-style training programs run on ember with only their import lines naming ember.

Each program in ``programs/`` is written as ordinary torch code (``import ember as torch``).
The test runs it on ember and checks its loss falls; where PyTorch can run the same file (its
import lines pointed at torch, nothing else changed) it runs that too, so the program is known
to be plain torch code and not something shaped to ember.
"""
from __future__ import annotations

import importlib.util
import re

import pytest

from . import harness

# name -> (how much the loss must fall: last <= factor * first, needs torchvision for twin)
PROGRAMS = {
    "vae": (0.6, False),
    "dcgan": (0.95, False),
    "lstm_lm": (0.6, False),
}


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
def test_program_runs_on_ember_and_learns(name):
    factor, _ = PROGRAMS[name]
    _losses_fall(harness.load(name, "ember").main(), factor)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_program_runs_on_torch(name):
    factor, needs_tv = PROGRAMS[name]
    pytest.importorskip("torch")
    if needs_tv and importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed (the twin run needs it)")
    _losses_fall(harness.load(name, "torch").main(), factor)
