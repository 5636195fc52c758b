"""Recipe ``keyword_spotting``: classify one-second spoken commands (Speech Commands layout)
with a small CNN over MFCC frames; reports accuracy on the corpus's testing list.

    ember run keyword_spotting data.root=DIR          # DIR/SpeechCommands/speech_commands_v0.02
    ember run keyword_spotting data.root=DIR data.download=true   # fetch v0.02 (2.3 GB) once
    ember run keyword_spotting data.root=DIR data.labels=null     # every word, not the ten

Splits are the corpus's own: ``validation_list.txt`` (evaluated after every epoch),
``testing_list.txt`` (evaluated at the end), the rest trains. ``data.labels`` keeps those
words (the ten commands by default); clips of other words are left out. Each clip is padded or
cut to one second, then turned into ``features.n_mfcc`` MFCCs per 10 ms.

Per epoch it logs ``epoch, step, lr, train_loss, train_acc, val_loss, val_acc`` to
``metrics.csv``; at the end it prints the test accuracy and saves ``model.safetensors`` +
``weights.json`` (labels and feature settings in its meta). Checkpoints, ``resume=true``,
Ctrl-C and ``overwrite=true`` work as in ``classify``.
"""
from __future__ import annotations

import os

import numpy as np

import ember
from ember import nn
from ember.data import DataLoader, Subset

from ember.recipes._config import ConfigError, instantiate
from ember.recipes._loop import EXIT_INTERRUPTED, TrainingRun, classifier_step, rate_postfix
from ember.recipes._registry import register_recipe
from ember.recipes._runtime import command_line
from ember.recipes._weights import save_weights
from ember.recipes.classify import _scheduler, evaluate_model

__all__ = ["KWSNet", "MFCCFeatures", "main"]

SAMPLE_RATE = 16000


class KWSNet(nn.Module):
    """A small CNN over an MFCC "image" (batch, 1, n_mfcc, frames): three conv-BN-ReLU
    blocks (two of them pooling 2x2), global average pooling, dropout, a linear head."""

    def __init__(self, num_classes, width=32, dropout=0.1):
        super().__init__()

        def block(cin, cout, pool):
            layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                      nn.ReLU(inplace=True)]
            return layers + ([nn.MaxPool2d(2)] if pool else [])

        self.features = nn.Sequential(*block(1, width, True), *block(width, 2 * width, True),
                                      *block(2 * width, 4 * width, False))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(4 * width, num_classes)

    def forward(self, x):
        if x.dim() != 4 or x.shape[1] != 1:
            raise ValueError(f"KWSNet expects MFCC features (batch, 1, n_mfcc, frames), got "
                             f"shape {tuple(x.shape)}")
        return self.classifier(self.dropout(self.pool(self.features(x)).flatten(1)))


class MFCCFeatures:
    """A waveform (channels, frames) -> float32 MFCCs (1, n_mfcc, frames/hop + 1) of its first
    channel padded with zeros or cut to ``seconds``. A plain object, so loader workers can
    take it."""

    def __init__(self, sample_rate=SAMPLE_RATE, seconds=1.0, n_mfcc=40, n_fft=480,
                 hop_length=160, n_mels=40):
        from ember.audio.transforms import MFCC

        self.length = int(round(sample_rate * seconds))
        self.settings = {"sample_rate": sample_rate, "seconds": seconds, "n_mfcc": n_mfcc,
                         "n_fft": n_fft, "hop_length": hop_length, "n_mels": n_mels}
        self.mfcc = MFCC(sample_rate=sample_rate, n_mfcc=n_mfcc,
                         melkwargs={"n_fft": n_fft, "hop_length": hop_length, "n_mels": n_mels})

    def __call__(self, waveform):
        x = waveform.numpy()[:1, :self.length] if hasattr(waveform, "numpy") else \
            np.asarray(waveform)[:1, :self.length]
        if x.shape[1] < self.length:
            x = np.pad(x, ((0, 0), (0, self.length - x.shape[1])))
        with ember.no_grad():
            return self.mfcc(ember.tensor(np.ascontiguousarray(x, np.float32))).numpy()


class _Item:
    """SPEECHCOMMANDS item -> (features, label index)."""

    def __init__(self, features, index):
        self.features, self.index = features, index

    def __call__(self, item):
        return self.features(item[0]), self.index[item[2]]


def _split(root, url, subset, labels, features, download):
    from ember.audio.datasets import SPEECHCOMMANDS

    ds = SPEECHCOMMANDS(root, url=url, subset=subset, download=download)
    words = [ds.get_metadata(i)[2] for i in range(len(ds))]
    if labels is None:
        labels = sorted(set(words))
    index = {w: i for i, w in enumerate(labels)}
    keep = [i for i, w in enumerate(words) if w in index]
    if not keep:
        raise ConfigError(f"data.root={root}: the {subset} split holds no clip of "
                          f"{list(labels)} (it has: {sorted(set(words)) or 'no clips'})")
    return Subset(ds, keep).map(_Item(features, index)), labels


@register_recipe("keyword_spotting")
def main(cfg):
    """Train per ``cfg`` (see ``configs/keyword_spotting.yaml``); returns the exit code."""
    data = cfg.get("data") or {}
    if not data.get("root"):
        raise ConfigError("keyword_spotting needs data.root: the folder holding "
                          "SpeechCommands/speech_commands_v0.02 (or data.download=true)")
    run = TrainingRun(cfg, "keyword_spotting", distributed=False)
    device, seed = run.device, run.seed
    features = MFCCFeatures(**(cfg.get("features") or {}))
    root, url = data["root"], data.get("url", "speech_commands_v0.02")
    labels = list(data["labels"]) if data.get("labels") else None
    train_ds, labels = _split(root, url, "training", labels, features,
                              bool(data.get("download")))
    val_ds, _ = _split(root, url, "validation", labels, features, False)
    test_ds, _ = _split(root, url, "testing", labels, features, False)
    print(f"data: {len(train_ds)} training, {len(val_ds)} validation and {len(test_ds)} test "
          f"clips of {len(labels)} words", flush=True)

    model = instantiate(cfg["model"], len(labels)).to(device)
    workers = int(cfg.get("num_workers", 0))
    loader = DataLoader(train_ds, batch_size=int(cfg["batch_size"]), shuffle=True, seed=seed,
                        num_workers=workers, rank=0, world_size=1)
    eval_bs = int(cfg.get("eval_batch_size", 256))
    val_loader, test_loader = (DataLoader(d, batch_size=eval_bs, shuffle=False,
                                          num_workers=workers, rank=0, world_size=1)
                               for d in (val_ds, test_ds))
    epochs = int(cfg["epochs"])
    opt = instantiate(cfg["optimizer"], model.parameters())
    sched = _scheduler(cfg, opt, epochs * len(loader))
    loss_fn = instantiate(cfg.get("loss") or {"_component_": "ember.nn.CrossEntropyLoss"})

    state = run.resume_state
    if state is not None and list((state.get("extra") or {}).get("labels", ())) != labels:
        raise ConfigError(f"resume=true: the labels differ from the checkpoint's "
                          f"({state['extra'].get('labels')} vs {labels})")
    run.extra = {"labels": labels}
    run.counters = {"loss": 0.0, "correct": 0, "seen": 0}
    run.track(model=model, optimizer=opt, scheduler=sched)
    run.track(loader=loader, pickled=True)
    run.restore()
    sums = run.counters

    model.train()
    with run:
        for _ in run.epochs(epochs):
            for x, y in run.batches(loader, len(loader), rate_postfix(sums, "clips_s")):
                classifier_step(model, loss_fn, opt, x.to(device), y.to(device), sums, sched)
            val_loss, acc, _ = evaluate_model(model, val_loader, loss_fn, device)
            seen = max(sums["seen"], 1)
            run.end_epoch({"lr": float(opt.param_groups[0]["lr"]),
                           "train_loss": sums["loss"] / seen, "train_acc": sums["correct"] / seen,
                           "val_loss": val_loss, "val_acc": acc[1]})
            sums = run.counters
    if run.interrupted:
        return EXIT_INTERRUPTED
    _, acc, conf = evaluate_model(model, test_loader, loss_fn, device, num_classes=len(labels))
    test_acc = acc[1]
    meta = {"categories": labels, "recipe": "ember run keyword_spotting",
            "command": command_line(), "features": features.settings,
            "_metrics": {"SPEECHCOMMANDS": {"acc@1": round(100 * test_acc, 3)}},
            "epochs": epochs, "seed": seed}
    manifest = save_weights(run.out, model, {**cfg["model"], "num_classes": len(labels)},
                            {"_component_": "ember.recipes.keyword_spotting.MFCCFeatures",
                             **features.settings}, meta)
    run.finish(f"test accuracy {100 * test_acc:.2f}% ({int(np.trace(conf))}/{int(conf.sum())})",
               [("weights", os.path.join(run.out, "model.safetensors")),
                ("manifest", manifest)])
    return 0
