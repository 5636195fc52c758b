"""Recipe ``classify``: train an image classifier (any ``ember.vision`` model, or the small CNN
below) on the MNIST subset shipped in the package, or on ImageFolder/CIFAR/MNIST data by config.

    ember run classify                                  # the main job: SmallCNN on the shipped digits
    ember run classify epochs=3 optimizer.lr=1e-3       # overrides
    ember run classify resume=true                      # continue from the latest checkpoint
    ember run classify overwrite=true                   # discard the earlier run in output_dir

A fresh run refuses an ``output_dir`` that holds an earlier run (checkpoints, weights or
metrics) unless ``resume=true`` or ``overwrite=true`` says what to do with it.

Per epoch it logs ``epoch, step, lr, train_loss, train_acc, test_loss, test_acc`` to
``metrics.csv``; checkpoints go to ``checkpoints/`` (every ``checkpoint.every_n_steps`` steps
and every ``checkpoint.every_n_epochs`` epochs, keeping ``checkpoint.keep_last``); Ctrl-C saves
one and exits 130. The trained weights are saved with a manifest (see ``_weights``).
"""
from __future__ import annotations

import inspect
import os
import pickle
import time

import ember
from ember.data import DataLoader

from ember.recipes._checkpoint import Checkpointer, capture_rng, restore_rng
from ember.recipes._config import ConfigError, instantiate, resolve_component
from ember.recipes._metrics import MetricLogger, plot_curves
from ember.recipes._registry import register_recipe
from ember.recipes._runtime import (EXIT_INTERRUPTED, TRAINING_OUTPUTS, Interrupt, command_line,
                                    dist_info, final_lines, progress, setup_run)
from ember.recipes._weights import save_weights
from ember.vision.models.digits import SmallCNN as _SmallCNN

__all__ = ["SmallCNN", "main", "evaluate_model"]


# the main job's network lives in ember.vision.models (its trained weights ship there); the alias
# keeps configs and weights manifests written with the old path working
SmallCNN = _SmallCNN


def _to(batch, device):
    x, y = batch
    return x.to(device), y.to(device)


def evaluate_model(model, loader, loss_fn, device, topk=(1,), num_classes=None):
    """(mean loss, {k: top-k accuracy}, confusion matrix or None) of ``model`` over ``loader``."""
    import numpy as np

    model.eval()
    total, loss_sum = 0, 0.0
    hits = {k: 0 for k in topk}
    conf = None if num_classes is None else np.zeros((num_classes, num_classes), np.int64)
    with ember.no_grad():
        for batch in loader:
            x, y = _to(batch, device)
            out = model(x)
            n = int(y.shape[0])
            loss_sum += float(loss_fn(out, y).item()) * n
            logits, labels = out.detach().cpu().numpy(), y.cpu().numpy()
            order = np.argsort(-logits, axis=1, kind="stable")
            for k in topk:
                hits[k] += int((order[:, :k] == labels[:, None]).any(axis=1).sum())
            if conf is not None:
                conf += np.bincount(labels * num_classes + order[:, 0],
                                    minlength=num_classes ** 2).reshape(conf.shape)
            total += n
    model.train()
    total = max(total, 1)
    return loss_sum / total, {k: hits[k] / total for k in topk}, conf


def _input_meta(ds):
    """``{"input_size": [h, w], "input_channels": c}`` of a dataset that holds its images as
    one uint8 array or tensor (``.images`` or ``.data``: (N, H, W) or (N, H, W, C), as the
    MNIST and CIFAR formats do), else ``{}``: what ``predict`` compares its inputs with."""
    for attr in ("images", "data"):
        a = getattr(ds, attr, None)
        shape = tuple(getattr(a, "shape", ()))
        if str(getattr(a, "dtype", "")) != "uint8":
            continue
        if len(shape) == 3:
            return {"input_size": [int(shape[1]), int(shape[2])], "input_channels": 1}
        if len(shape) == 4 and shape[-1] in (1, 3, 4):
            return {"input_size": [int(shape[1]), int(shape[2])],
                    "input_channels": min(int(shape[-1]), 3)}
    return {}


def _init_from(model, spec, rank=0):
    """Fine-tuning: load every tensor of the weights ``spec`` (a zoo name such as
    ``ResNet18_Weights.DEFAULT`` or a classify run folder) whose name and shape match the model;
    the rest (e.g. a classifier head sized for other classes) keeps its fresh initialization."""
    from ember.recipes._weights import resolve_weights

    sd = resolve_weights(spec).get_state_dict()
    own = model.state_dict()
    keep = {k: v for k, v in sd.items() if k in own and tuple(v.shape) == tuple(own[k].shape)}
    skipped = sorted(set(own) - set(keep))
    model.load_state_dict(keep, strict=False)
    if rank == 0:
        print(f"init_weights: loaded {len(keep)}/{len(own)} tensors from {spec}"
              + (f"; newly initialized: {', '.join(skipped)}" if skipped else ""))


def _scheduler(cfg, opt, total_steps):
    node = cfg.get("lr_scheduler")
    if not node:
        return None
    extra = {}
    fn = resolve_component(node["_component_"])
    params = inspect.signature(fn).parameters
    if "total_steps" in params and "total_steps" not in node and "epochs" not in node:
        extra["total_steps"] = total_steps
    return instantiate(node, opt, **extra)


@register_recipe("classify")
def main(cfg):
    """Train per ``cfg`` (see ``configs/classify.yaml``); returns the exit code."""
    t_start = time.perf_counter()
    rank, world = dist_info()
    out = setup_run(cfg, "classify", rank, outputs=TRAINING_OUTPUTS)
    device = ember.device(cfg.get("device") or "cpu")
    quiet = bool(cfg.get("quiet")) or rank != 0
    seed = int(cfg.get("seed", 0))

    train_ds = instantiate(cfg["train_data"])
    test_ds = instantiate(cfg["test_data"])
    model = instantiate(cfg["model"]).to(device)
    if cfg.get("init_weights"):
        _init_from(model, cfg["init_weights"], rank)
    categories = [str(c) for c in getattr(train_ds, "classes", [])]
    net = model
    if world > 1:
        from ember.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model)
    workers = int(cfg.get("num_workers", 0))
    sampler = None
    if world > 1:   # each rank trains on its own share of every epoch
        from ember.data import DistributedSampler

        sampler = DistributedSampler(train_ds, num_replicas=world, rank=rank, shuffle=True,
                                     seed=seed)
    loader = DataLoader(train_ds, batch_size=int(cfg["batch_size"]), shuffle=sampler is None,
                        sampler=sampler, seed=seed, num_workers=workers,
                        drop_last=bool(cfg.get("drop_last", False)))
    test_loader = DataLoader(test_ds, batch_size=int(cfg.get("eval_batch_size", 500)),
                             shuffle=False, num_workers=workers, rank=0, world_size=1)
    epochs = int(cfg["epochs"])
    steps_per_epoch = len(loader)
    opt = instantiate(cfg["optimizer"], model.parameters())
    sched = _scheduler(cfg, opt, epochs * steps_per_epoch)
    interval = cfg.get("scheduler_interval", "step")
    if interval not in ("step", "epoch"):
        raise ConfigError(f"scheduler_interval must be 'step' or 'epoch', got {interval!r}")
    per_step = interval == "step"
    loss_fn = instantiate(cfg["loss"])

    ck_cfg = cfg.get("checkpoint") or {}
    ckpt = Checkpointer(os.path.join(out, "checkpoints"), ck_cfg.get("keep_last", 2))
    every_steps = ck_cfg.get("every_n_steps")
    every_epochs = ck_cfg.get("every_n_epochs")
    epoch, step, sums, state = 0, 0, [0.0, 0, 0], None
    if cfg.get("resume"):
        state = ckpt.load_latest()
        if state is None:
            print(f"resume=true but no checkpoint in {ckpt.directory}: starting from scratch")
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        if sched is not None:
            sched.load_state_dict(state["scheduler"])
        loader.load_state_dict(pickle.loads(state["loader"]))
        restore_rng(state["rng"])
        epoch, step, sums = int(state["epoch"]), int(state["step"]), list(state["sums"])
        print(f"resumed from {ckpt.latest()} (epoch {epoch + 1}, step {step})")
    log = MetricLogger(os.path.join(out, "metrics.csv"),
                       resume_step=step if state is not None else None,
                       tensorboard_dir=os.path.join(out, "tb")) if rank == 0 else None

    def checkpoint():
        if rank != 0:
            return None
        return ckpt.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                          "scheduler": sched.state_dict() if sched is not None else None,
                          "loader": pickle.dumps(loader.state_dict()), "rng": capture_rng(),
                          "epoch": epoch, "step": step, "sums": list(sums)}, step)

    def interrupted():
        """Ctrl-C was pressed: save where we are, say how to continue, exit code 130."""
        path = checkpoint()
        if rank == 0:
            log.close()
            print(f"\ninterrupted at step {step}: checkpoint saved to {path}\n"
                  f"continue with: {command_line()} resume=true", flush=True)
        return EXIT_INTERRUPTED

    test_acc = None
    net.train()
    with Interrupt() as stop:
        while epoch < epochs:
            done_in_epoch = step - epoch * steps_per_epoch
            bar = progress(steps_per_epoch, f"epoch {epoch + 1}/{epochs}", quiet,
                           initial=done_in_epoch)
            t0, seen0 = time.perf_counter(), sums[2]
            if sampler is not None:
                sampler.set_epoch(epoch)
            for batch in loader:
                x, y = _to(batch, device)
                logits = net(x)
                loss = loss_fn(logits, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if sched is not None and per_step:
                    sched.step()
                step += 1
                n = int(y.shape[0])
                sums[0] += float(loss.item()) * n
                sums[1] += int((logits.detach().argmax(1) == y).sum().item())
                sums[2] += n
                if bar is not None:
                    bar.update(1)
                    if step % 5 == 0 or step % steps_per_epoch == 0:
                        rate = (sums[2] - seen0) / max(time.perf_counter() - t0, 1e-9)
                        bar.set_postfix(loss=f"{sums[0] / sums[2]:.4f}",
                                        acc=f"{sums[1] / sums[2]:.3f}", img_s=f"{rate:.0f}")
                if every_steps and step % int(every_steps) == 0:
                    checkpoint()
                if stop.requested:
                    if bar is not None:
                        bar.close()
                    return interrupted()
            if bar is not None:
                bar.close()
            if sched is not None and not per_step:
                sched.step()
            test_loss, acc, _ = evaluate_model(model, test_loader, loss_fn, device)
            test_acc = acc[1]
            row = {"epoch": epoch + 1, "step": step, "lr": float(opt.param_groups[0]["lr"]),
                   "train_loss": sums[0] / max(sums[2], 1), "train_acc": sums[1] / max(sums[2], 1),
                   "test_loss": test_loss, "test_acc": test_acc}
            if rank == 0:
                log.log(row)
                if quiet:
                    print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in row.items()), flush=True)
            epoch += 1
            sums = [0.0, 0, 0]
            if every_epochs and epoch % int(every_epochs) == 0:
                checkpoint()
            if stop.requested:  # pressed during the evaluation: stop at the epoch boundary
                return interrupted()
    if rank != 0:
        return 0
    log.close()
    if test_acc is None:   # resumed after the last epoch: report the logged figure
        from ._metrics import read_csv

        rows = read_csv(log.path)
        test_acc = float(rows[-1]["test_acc"]) if rows else float("nan")
    meta = {"categories": categories or None, "recipe": "ember run classify",
            "command": command_line(), "dataset": type(test_ds).__name__,
            "_metrics": {type(test_ds).__name__: {"acc@1": round(100 * test_acc, 3)}},
            "epochs": epochs, "seed": seed, "transforms": cfg.get("transforms"),
            **_input_meta(train_ds)}
    manifest = save_weights(out, model, cfg["model"], cfg.get("transforms"), meta)
    plot = plot_curves(log.path, os.path.join(out, "metrics.png"))
    elapsed = time.perf_counter() - t_start
    print(f"\ndone in {elapsed:.1f} s: test accuracy {100 * test_acc:.2f}%")
    final_lines([("weights", os.path.join(out, "model.safetensors")),
                 ("manifest", manifest), ("metrics", log.path), ("plot", plot),
                 ("config", os.path.join(out, "config.yaml")),
                 ("checkpoints", ckpt.directory)])
    return 0
