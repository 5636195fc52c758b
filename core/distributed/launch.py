"""Start N local ranks of a script through ``mpiexec`` (for tests and scripts).

    from ember.distributed.launch import launch
    r = launch("train.py", nproc=2, args=["--epochs", "1"], timeout=120)
    r.returncode, r.stdout

or from a shell: ``python -m ember.distributed --nproc 2 train.py --epochs 1``.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys


def find_mpiexec():
    """The ``mpiexec`` next to this Python (the mpich wheel's), else the first on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("mpiexec not found: pip install 'ember[distributed]' (mpi4py + mpich)")
    return found


def command(script, nproc, args=()):
    """The argv that runs ``python script *args`` on ``nproc`` local ranks."""
    if int(nproc) < 1:
        raise ValueError(f"nproc must be >= 1, got {nproc}")
    return [find_mpiexec(), "-n", str(int(nproc)), sys.executable, str(script), *map(str, args)]


def launch(script, nproc=2, args=(), timeout=None, env=None, capture=True):
    """Run ``script`` on ``nproc`` ranks and wait; returns a ``subprocess.CompletedProcess``
    (``stdout``/``stderr`` as text when ``capture``). On ``timeout`` (seconds) the whole job
    is killed and ``subprocess.TimeoutExpired`` raised, so a hang never outlives it.
    ``env``: extra environment variables."""
    full = dict(os.environ)
    full.update({k: str(v) for k, v in (env or {}).items()})
    pipe = subprocess.PIPE if capture else None
    p = subprocess.Popen(command(script, nproc, args), stdout=pipe, stderr=pipe, text=True,
                         env=full, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise subprocess.TimeoutExpired(p.args, timeout, out, err) from None
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)
