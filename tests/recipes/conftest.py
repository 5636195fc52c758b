import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))   # recipe_helpers


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """Run in a fresh folder with EMBER_HOME inside it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "ember_home"))
    return tmp_path


@pytest.fixture
def cli(capsys):
    """Call the ``ember`` CLI in-process: returns (exit code, stdout, stderr)."""
    from ember.cli import main

    def run(*argv):
        rc = main(list(argv))
        out = capsys.readouterr()
        return rc, out.out, out.err
    return run
