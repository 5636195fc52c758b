"""Shared settings and helpers for the recipe tests."""
import os
import subprocess
import sys

# short settings for the classify recipe: a tiny CNN on a slice of the shipped digits
SHORT = ["quiet=true", "epochs=2", "batch_size=32", "train_data.limit=256", "test_data.limit=100",
         "model.width=4", "model.hidden=16"]


def ember_proc(args, cwd, **kw):
    """Start ``python -m ember.cli ARGS`` as a subprocess (Popen)."""
    env = dict(os.environ)
    env["EMBER_HOME"] = str(cwd / "ember_home")
    return subprocess.Popen([sys.executable, "-m", "ember.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


class StopAfter:
    """Stands in for the recipes' Ctrl-C handler: "pressed" once ``requested`` has been asked
    ``n`` times (the loops ask once per step or batch)."""

    def __init__(self, n):
        self.n, self.calls = n, 0

    def __call__(self):
        self.calls = 0
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @property
    def requested(self):
        self.calls += 1
        return self.calls > self.n
