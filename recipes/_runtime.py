"""What every recipe does around its loop: output folder and resolved config, seeds, devices,
ranks, Ctrl-C handling, progress bars and the closing lines."""
from __future__ import annotations

import os
import random
import shlex
import signal
import sys

import numpy as np

import ember

from ember.recipes._config import ConfigError, dump

__all__ = ["setup_run", "set_command", "Interrupt", "progress", "final_lines", "command_line", "dist_info",
           "check_output_dir", "TRAINING_OUTPUTS", "EXIT_INTERRUPTED"]

# what a training run leaves in its output folder; any of them marks an earlier run there
TRAINING_OUTPUTS = ("checkpoints", "weights.json", "model.safetensors", "metrics.csv",
                    "metrics.png")

EXIT_INTERRUPTED = 130


_COMMAND = {"argv": None}   # set by the CLI: the arguments `ember` was called with


def set_command(argv):
    """Record the ``ember`` arguments of this run (for manifests and resume hints)."""
    _COMMAND["argv"] = ["ember", *argv]


def command_line():
    """The command that started this run, as a shell string."""
    argv = list(_COMMAND["argv"] or sys.argv)
    if argv and os.path.basename(argv[0]) in ("cli.py", "__main__.py", "ember"):
        argv[0] = "ember"
    return " ".join(shlex.quote(a) for a in argv)


def dist_info():
    """(rank, world_size): from an initialized ``ember.distributed`` group, else from the MPI
    launcher's variables (then the group is initialized here), else (0, 1)."""
    from ember import distributed as dist

    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"):
        if int(os.environ.get(var, "1")) > 1:
            dist.init_process_group(backend="mpi")
            return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _earlier_run(out, outputs):
    """The names in ``outputs`` that ``out`` holds (a folder counts when it is not empty)."""
    found = []
    for name in outputs:
        path = os.path.join(out, name)
        if os.path.isfile(path) or (os.path.isdir(path) and os.listdir(path)):
            found.append(name)
    return found


def check_output_dir(out, cfg, outputs=TRAINING_OUTPUTS, rank=0):
    """Refuse to start a fresh run in ``out`` when it holds an earlier one (any of
    ``outputs``), unless ``resume=true`` (continue it) or ``overwrite=true`` (rank 0 then
    deletes the earlier outputs, so nothing of that run is mistaken for this one's)."""
    resume, overwrite = bool(cfg.get("resume")), bool(cfg.get("overwrite"))
    if resume and overwrite:
        raise ConfigError("resume=true and overwrite=true contradict each other: resume=true "
                          "continues the run in output_dir, overwrite=true discards it")
    found = [] if resume else _earlier_run(out, outputs)
    if not found:
        return
    if not overwrite:
        raise ConfigError(f"output_dir {out} holds an earlier run ({', '.join(found)}); pass "
                          f"resume=true to continue it, overwrite=true to discard it and start "
                          f"afresh, or another output_dir=")
    if rank == 0:
        import shutil

        for name in found:
            path = os.path.join(out, name)
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
        print(f"overwrite=true: removed the earlier run's {', '.join(found)} from {out}")


def setup_run(cfg, recipe, rank=0, outputs=None):
    """Seed everything, create ``cfg['output_dir']``, print the resolved config and save it as
    ``config.yaml`` there (rank 0 only). Returns the output folder. With ``outputs`` (the
    names a run of this recipe writes, e.g. ``TRAINING_OUTPUTS``), first refuse a folder that
    holds an earlier run unless ``resume``/``overwrite`` say what to do (``check_output_dir``)."""
    out = os.path.abspath(os.path.expanduser(str(cfg.get("output_dir") or f"outputs/{recipe}")))
    if outputs:
        check_output_dir(out, cfg, outputs, rank)
    seed = int(cfg.get("seed", 0))
    ember.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2 ** 32)
    if rank == 0:
        os.makedirs(out, exist_ok=True)
        text = dump(cfg)
        print(f"ember run {recipe}: resolved config\n" + "".join(f"  {ln}\n" for ln in
                                                                 text.splitlines()), flush=True)
        with open(os.path.join(out, "config.yaml"), "w") as f:
            f.write(text)
    return out


class Interrupt:
    """Context manager turning the first Ctrl-C (SIGINT) into a flag (``requested``) that the
    loop checks between steps; a second Ctrl-C interrupts at once."""

    def __init__(self):
        self.requested = False
        self._old = None

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self):
        try:
            self._old = signal.signal(signal.SIGINT, self._handler)
        except ValueError:   # not the main thread: leave Ctrl-C alone
            self._old = None
        return self

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


def progress(total, desc, quiet, initial=0):
    """A tqdm bar (None in quiet mode, or on ranks other than 0)."""
    if quiet:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, initial=initial, unit="batch", dynamic_ncols=True,
                leave=True, file=sys.stderr)


def final_lines(items):
    """Print the closing 'where are the outputs' lines: ``items`` is [(label, path or None)]."""
    width = max(len(k) for k, _ in items)
    for k, v in items:
        if v is not None:
            print(f"{k + ':':<{width + 1}} {v}")
    sys.stdout.flush()
