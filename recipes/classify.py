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

import ember
from ember.data import DataLoader

from ember.recipes._config import ConfigError, instantiate, resolve_component
from ember.recipes._loop import EXIT_INTERRUPTED, TrainingRun, classifier_step, rate_postfix
from ember.recipes._registry import register_recipe
from ember.recipes._runtime import command_line
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
    run = TrainingRun(cfg, "classify")
    rank, world, device, seed = run.rank, run.world, run.device, run.seed

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

    run.counters = {"loss": 0.0, "correct": 0, "seen": 0}
    run.track(model=model, optimizer=opt, scheduler=sched)
    run.track(loader=loader, pickled=True)
    run.restore()
    sums = run.counters

    test_acc = None
    net.train()
    with run:
        for epoch in run.epochs(epochs):
            if sampler is not None:
                sampler.set_epoch(epoch)
            for batch in run.batches(loader, steps_per_epoch, rate_postfix(sums, "img_s")):
                x, y = _to(batch, device)
                classifier_step(net, loss_fn, opt, x, y, sums, sched if per_step else None)
            if sched is not None and not per_step:
                sched.step()
            test_loss, acc, _ = evaluate_model(model, test_loader, loss_fn, device)
            test_acc = acc[1]
            seen = max(sums["seen"], 1)
            run.end_epoch({"lr": float(opt.param_groups[0]["lr"]),
                           "train_loss": sums["loss"] / seen, "train_acc": sums["correct"] / seen,
                           "test_loss": test_loss, "test_acc": test_acc})
            sums = run.counters
    if run.interrupted:
        return EXIT_INTERRUPTED
    if rank != 0:
        return 0
    if test_acc is None:   # resumed after the last epoch: report the logged figure
        test_acc = run.last_logged("test_acc")
    meta = {"categories": categories or None, "recipe": "ember run classify",
            "command": command_line(), "dataset": type(test_ds).__name__,
            "_metrics": {type(test_ds).__name__: {"acc@1": round(100 * test_acc, 3)}},
            "epochs": epochs, "seed": seed, "transforms": cfg.get("transforms"),
            **_input_meta(train_ds)}
    manifest = save_weights(run.out, model, cfg["model"], cfg.get("transforms"), meta)
    run.finish(f"test accuracy {100 * test_acc:.2f}%",
               [("weights", os.path.join(run.out, "model.safetensors")), ("manifest", manifest)])
    return 0
