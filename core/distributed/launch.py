"""Start N local ranks of a script through ``mpiexec`` (for tests and scripts).

    from ember.distributed.launch import launch
    r = launch("train.py", nproc=2, args=["--epochs", "1"], timeout=120)
    r.returncode, r.stdout

or from a shell: ``python -m ember.distributed --nproc 2 train.py --epochs 1``.
"""
from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys

_SHM = "/dev/shm/mpich_shm_*"  # MPICH's shared-memory segments (left behind by MPI_Abort)


def find_mpiexec():
    """The ``mpiexec`` next to this Python (the mpich wheel's), else the first on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("mpiexec not found: pip install 'ember[distributed]' (mpi4py + mpich)")
    return found


def can_launch():
    """True when ranks can be started here: mpi4py imports and an ``mpiexec`` is found
    (what multi-rank tests check before they run)."""
    try:
        from . import is_available

        if not is_available():
            return False
        find_mpiexec()
        return True
    except Exception:
        return False


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
    before = set(glob.glob(_SHM))
    p = subprocess.Popen(command(script, nproc, args), stdout=pipe, stderr=pipe, text=True,
                         env=full, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise subprocess.TimeoutExpired(p.args, timeout, out, err) from None
    finally:
        _remove_orphaned_segments(before)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _mapped_shm():
    """Paths under /dev/shm that some live process has mapped."""
    mapped = set()
    for maps in glob.glob("/proc/[0-9]*/maps"):
        try:
            with open(maps) as f:
                for line in f:
                    i = line.find("/dev/shm/")
                    if i >= 0:
                        mapped.add(line[i:].rstrip("\n").removesuffix(" (deleted)"))
        except OSError:  # the process ended meanwhile, or is not ours to read
            continue
    return mapped


def _remove_orphaned_segments(before):
    """Remove MPICH segments created since ``before`` that no process maps any more: a job
    ended by MPI_Abort (a failing rank) never unlinks its own."""
    import time

    new = set(glob.glob(_SHM)) - before
    for _ in range(20):  # ranks killed by the abort may take a moment to unmap
        if not new:
            return
        for path in new - _mapped_shm():
            try:
                os.unlink(path)
            except OSError:
                pass
        new = {p for p in new if os.path.exists(p)}
        if new:
            time.sleep(0.1)
