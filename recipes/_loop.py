"""The bookkeeping every training recipe does around its own loop, written once.

A recipe keeps its loop body (forward, loss, backward, step: the part that differs between
image classification, DLRM, PPO or ASR) and hands the rest to a :class:`TrainingRun`:

    run = TrainingRun(cfg, "classify")            # output folder, seeds, ranks, device
    run.track(model=model, optimizer=opt)         # what a checkpoint holds
    run.track(loader=loader, pickled=True)
    run.restore()                                 # resume=true: load the newest checkpoint
    with run:                                     # Ctrl-C: checkpoint, resume hint, exit 130
        for epoch in run.epochs(cfg["epochs"]):
            for batch in run.batches(loader, len(loader), postfix=lambda: {...}):
                ...                               # one step; counted after the body
            run.end_epoch({"train_loss": ..., "test_acc": ...})
    if run.interrupted:
        return EXIT_INTERRUPTED
    run.finish("test accuracy 98.1%", [("weights", path)])

What it owns: ``setup_run`` (refusing an earlier run's folder unless ``resume``/``overwrite``),
the :class:`~ember.recipes._checkpoint.Checkpointer` (every ``checkpoint.every_n_steps`` steps,
every ``checkpoint.every_n_epochs`` epochs, keeping ``checkpoint.keep_last``), the random
state, the step and epoch counters and the recipe's running sums (``run.counters``, so a run
resumed mid-epoch reports the same epoch averages), ``metrics.csv`` (continued on resume), the
progress bars and the closing lines. Ranks other than 0 neither write nor print.

A loop that is not made of epochs (an RL recipe iterating a collector) uses ``batches`` alone
with ``total`` set to its number of iterations and logs rows with :meth:`TrainingRun.log_row`.
"""
from __future__ import annotations

import os
import pickle
import time

import ember

from ember.recipes._checkpoint import Checkpointer, capture_rng, restore_rng
from ember.recipes._metrics import MetricLogger, plot_curves, read_csv
from ember.recipes._runtime import (EXIT_INTERRUPTED, TRAINING_OUTPUTS, Interrupt, command_line,
                                    dist_info, final_lines, progress, setup_run)

__all__ = ["TrainingRun", "EXIT_INTERRUPTED", "classifier_step", "rate_postfix"]


class _Stopped(Exception):
    """Raised inside the loop when Ctrl-C was pressed; ``TrainingRun.__exit__`` handles it."""


def format_row(row):
    """``k=v`` pairs of a metrics row, floats to 4 decimals (what quiet mode prints)."""
    return " ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in row.items())


class TrainingRun:
    """One training run of ``recipe`` configured by ``cfg`` (see the module docstring).

    ``outputs``: the names an earlier run of this recipe leaves in its folder (refused unless
    ``resume=true`` or ``overwrite=true``). ``distributed=False`` ignores MPI launcher
    variables (a recipe that cannot shard). ``np_rng``: a numpy ``Generator`` the recipe
    draws from, saved and restored with the other random state."""

    def __init__(self, cfg, recipe, outputs=TRAINING_OUTPUTS, distributed=True, np_rng=None):
        self.t_start = time.perf_counter()
        self.cfg, self.recipe, self.np_rng = cfg, recipe, np_rng
        self.rank, self.world = dist_info() if distributed else (0, 1)
        self.out = setup_run(cfg, recipe, self.rank, outputs=outputs)
        self.device = ember.device(cfg.get("device") or "cpu")
        self.quiet = bool(cfg.get("quiet")) or self.rank != 0
        self.seed = int(cfg.get("seed", 0))
        ck = cfg.get("checkpoint") or {}
        self.ckpt = Checkpointer(os.path.join(self.out, "checkpoints"), ck.get("keep_last", 2))
        self.every_steps = int(ck.get("every_n_steps") or 0)
        self.every_epochs = int(ck.get("every_n_epochs") or 0)
        self.epoch = self.step = 0
        self.counters = {}      # the recipe's running sums; saved with every checkpoint
        self.extra = {}         # constant facts a checkpoint records (classes, data size, ...)
        self.interrupted = False
        self._tracked = {}      # name -> (object with state_dict/load_state_dict, pickled)
        self._state, self._loaded = None, False
        self._stop = None
        self.log = None

    # ----------------------------------------------------------------- checkpoint contents
    def track(self, pickled=False, **objects):
        """Save ``objects`` (each with ``state_dict``/``load_state_dict``; None is skipped) in
        every checkpoint under their keyword names. ``pickled=True`` stores their states as
        pickled bytes (data loader and sampler states hold numpy generator states)."""
        for name, obj in objects.items():
            if obj is not None:
                self._tracked[name] = (obj, bool(pickled))
        return self

    @property
    def resume_state(self):
        """The newest checkpoint's contents when ``resume=true`` (None when there is none);
        read once. Lets a recipe consult what it saved before building its objects."""
        if not self._loaded:
            self._loaded = True
            if self.cfg.get("resume"):
                self._state = self.ckpt.load_latest()
                if self._state is None and self.rank == 0:
                    print(f"resume=true but no checkpoint in {self.ckpt.directory}: "
                          f"starting from scratch")
        return self._state

    def restore(self):
        """Continue the newest checkpoint when ``resume=true``: the tracked objects, random
        state, counters and step/epoch. Opens ``metrics.csv`` (keeping the rows up to the
        resumed step). Returns the checkpoint's ``extra`` dict, or None on a fresh run."""
        state = self.resume_state
        if state is not None:
            objs = state["objects"]
            for name, (obj, pickled) in self._tracked.items():
                if name not in objs:
                    raise KeyError(f"checkpoint {self.ckpt.latest()} holds no {name!r} state "
                                   f"(it has: {', '.join(sorted(objs))})")
                obj.load_state_dict(pickle.loads(objs[name]) if pickled else objs[name])
            restore_rng(state["rng"], self.np_rng)
            self.epoch, self.step = int(state["epoch"]), int(state["step"])
            self.counters = dict(state["counters"])
            if self.rank == 0:
                print(f"resumed from {self.ckpt.latest()} (epoch {self.epoch + 1}, "
                      f"step {self.step})")
        if self.rank == 0:
            self.log = MetricLogger(os.path.join(self.out, "metrics.csv"),
                                    resume_step=self.step if state is not None else None,
                                    tensorboard_dir=os.path.join(self.out, "tb"))
        return None if state is None else dict(state.get("extra") or {})

    def save_checkpoint(self):
        """Write a checkpoint now. Every rank collects the tracked states (a sharded model's
        ``state_dict`` is a collective), rank 0 writes; returns the path (None elsewhere)."""
        objs = {}
        for name, (obj, pickled) in self._tracked.items():
            sd = obj.state_dict()
            objs[name] = pickle.dumps(sd) if pickled else sd
        if self.rank != 0:
            return None
        return self.ckpt.save({"objects": objs, "rng": capture_rng(self.np_rng),
                               "epoch": self.epoch, "step": self.step,
                               "counters": dict(self.counters), "extra": dict(self.extra)},
                              self.step)

    # ----------------------------------------------------------------- the loop
    def __enter__(self):
        self._stop = Interrupt().__enter__()
        return self

    def __exit__(self, etype, value, tb):
        self._stop.__exit__(etype, value, tb)
        if etype is not _Stopped:
            return False
        path = self.save_checkpoint()
        self.interrupted = True
        if self.rank == 0:
            self.log.close()
            print(f"\ninterrupted at step {self.step}: checkpoint saved to {path}\n"
                  f"continue with: {command_line()} resume=true", flush=True)
        return True

    def _check_stop(self):
        if self._stop is not None and self._stop.requested:
            raise _Stopped

    def epochs(self, total):
        """The epoch numbers still to run (from the resumed one to ``total - 1``)."""
        while self.epoch < int(total):
            yield self.epoch

    def batches(self, iterable, total, postfix=None, desc=None, unit="batch"):
        """Yield the items of ``iterable``; after the loop body for each one, count a step,
        update the progress bar (``postfix()`` returns its figures, read every few steps),
        checkpoint every ``every_n_steps`` and stop cleanly on Ctrl-C. ``total``: the steps
        of an epoch (or of the whole run when there are no epochs), for the bar."""
        total = int(total)
        if desc is None:
            epochs = self.cfg.get("epochs")
            desc = f"epoch {self.epoch + 1}/{epochs}" if epochs else self.recipe
        done = self.step - self.epoch * total
        bar = progress(total, desc, self.quiet, initial=max(done, 0))
        if bar is not None:
            bar.unit = unit
        try:
            for item in iterable:
                yield item
                self.step += 1
                if bar is not None:
                    bar.update(1)
                    if postfix is not None and (self.step % 5 == 0 or self.step % total == 0):
                        bar.set_postfix(**postfix())
                if self.every_steps and self.step % self.every_steps == 0:
                    self.save_checkpoint()
                self._check_stop()
        finally:
            if bar is not None:
                bar.close()

    def log_row(self, row):
        """Append ``row`` (``epoch`` and ``step`` are added) to metrics.csv; quiet mode prints
        it. Returns the row as logged."""
        row = {"epoch": self.epoch + 1, "step": self.step, **row}
        if self.rank == 0:
            self.log.log(row)
            if self.quiet:
                print(format_row(row), flush=True)
        return row

    def end_epoch(self, row):
        """Close an epoch: log ``row``, reset ``counters`` to zeros, checkpoint every
        ``every_n_epochs`` epochs; a Ctrl-C pressed during evaluation stops here."""
        row = self.log_row(row)
        self.epoch += 1
        self.counters = {k: type(v)() for k, v in self.counters.items()}
        if self.every_epochs and self.epoch % self.every_epochs == 0:
            self.save_checkpoint()
        self._check_stop()
        return row

    def last_logged(self, key, default=float("nan")):
        """``key`` of the last metrics row (a run resumed after its last epoch reports it)."""
        rows = read_csv(self.log.path) if self.log is not None else []
        return float(rows[-1][key]) if rows and rows[-1].get(key) not in (None, "") else default

    # ----------------------------------------------------------------- the end
    def finish(self, summary, items=()):
        """Close the metrics, plot them, print ``done in ... s: <summary>`` and the output
        paths: ``items`` ([(label, path)]) then metrics, plot, config and checkpoints."""
        if self.rank != 0:
            return
        self.log.close()
        plot = plot_curves(self.log.path, os.path.join(self.out, "metrics.png"))
        print(f"\ndone in {time.perf_counter() - self.t_start:.1f} s: {summary}")
        final_lines([*items, ("metrics", self.log.path), ("plot", plot),
                     ("config", os.path.join(self.out, "config.yaml")),
                     ("checkpoints", self.ckpt.directory)])


def classifier_step(net, loss_fn, opt, x, y, sums, sched=None):
    """One supervised classification step (forward, loss, backward, ``opt.step()``, then
    ``sched.step()`` if given), adding the summed loss, the correct argmax predictions and
    the batch size to ``sums["loss"]``, ``sums["correct"]`` and ``sums["seen"]``."""
    logits = net(x)
    loss = loss_fn(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if sched is not None:
        sched.step()
    n = int(y.shape[0])
    sums["loss"] += float(loss.item()) * n
    sums["correct"] += int((logits.detach().argmax(1) == y).sum().item())
    sums["seen"] += n
    return loss


def rate_postfix(sums, unit):
    """A ``postfix`` for :meth:`TrainingRun.batches`: the running loss (and accuracy when
    ``sums`` counts ``correct``) and the items per second since this call, ``sums`` being
    the counters a loop step updates (``loss``, ``seen``, optionally ``correct``)."""
    t0, seen0 = time.perf_counter(), sums["seen"]

    def postfix():
        seen = max(sums["seen"], 1)
        out = {"loss": f"{sums['loss'] / seen:.4f}"}
        if "correct" in sums:
            out["acc"] = f"{sums['correct'] / seen:.3f}"
        out[unit] = f"{(sums['seen'] - seen0) / max(time.perf_counter() - t0, 1e-9):.0f}"
        return out
    return postfix
