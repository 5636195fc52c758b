"""The audio recipes end to end on tiny corpora written here in the published layouts:
``keyword_spotting`` on a Speech Commands folder of three "words" (tones of three pitches)."""
import csv
import os

import numpy as np
import pytest
from recipe_helpers import StopAfter

import ember
import ember.audio as ea

WORDS = {"yes": 400.0, "no": 1200.0, "up": 3000.0}


def _write(path, x, sr=16000):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ea.save(str(path), ember.tensor(x[None].astype(np.float32)), sr, bits_per_sample=16)


def make_speechcommands(root, per_word=(10, 3, 3), seed=0):
    """A Speech Commands v0.02 folder: per word, train/validation/test clips of a tone at the
    word's pitch with random phase, length and noise."""
    rng = np.random.default_rng(seed)
    base = root / "SpeechCommands" / "speech_commands_v0.02"
    lists = {"validation": [], "testing": []}
    for word, f0 in WORDS.items():
        k = 0
        for split, n in zip(("training", "validation", "testing"), per_word):
            for _ in range(n):
                m = int(rng.integers(9000, 16000))
                t = np.arange(m) / 16000
                x = 0.4 * np.sin(2 * np.pi * f0 * t + rng.uniform(0, 6.3)) \
                    + 0.05 * rng.standard_normal(m)
                name = f"{word}/s{k:02d}_nohash_0.wav"
                _write(base / name, x)
                if split in lists:
                    lists[split].append(name)
                k += 1
    (base / "validation_list.txt").write_text("\n".join(lists["validation"]) + "\n")
    (base / "testing_list.txt").write_text("\n".join(lists["testing"]) + "\n")
    return root


KWS = ["quiet=true", "epochs=3", "batch_size=8", "model.width=8", "data.labels=null",
       "optimizer.lr=0.01", "lr_scheduler.max_lr=0.01"]


def _rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_keyword_spotting_learns_and_resumes(workdir, cli, monkeypatch):
    from ember.recipes import _loop as L

    root = make_speechcommands(workdir / "sc")
    args = [*KWS, f"data.root={root}", "checkpoint.every_n_steps=2"]
    rc, out, err = cli("run", "keyword_spotting", *args, "output_dir=ref")
    assert rc == 0, err
    assert "data: 30 training, 9 validation and 9 test clips of 3 words" in out
    acc = float(out.split("test accuracy ")[1].split("%")[0])
    assert acc >= 66.0, out                   # three pitches: well above chance (33%)
    ref = _rows(workdir / "ref" / "metrics.csv")
    assert [r["epoch"] for r in ref] == ["1", "2", "3"]
    assert set(ref[0]) >= {"train_loss", "train_acc", "val_loss", "val_acc", "lr"}
    with monkeypatch.context() as m:
        m.setattr(L, "Interrupt", StopAfter(5))
        rc, out, _ = cli("run", "keyword_spotting", *args, "output_dir=run")
    assert rc == 130 and "interrupted at step 5" in out   # mid epoch 2
    rc, out, err = cli("run", "keyword_spotting", *args, "output_dir=run", "resume=true")
    assert rc == 0, err
    assert "resumed from" in out
    assert _rows(workdir / "run" / "metrics.csv") == ref


def test_keyword_spotting_errors_name_the_data(workdir, cli):
    rc, _, err = cli("run", "keyword_spotting", "quiet=true")
    assert rc == 2 and "keyword_spotting needs data.root" in err
    root = make_speechcommands(workdir / "sc", per_word=(2, 1, 1))
    rc, _, err = cli("run", "keyword_spotting", "quiet=true", f"data.root={root}",
                     "data.labels=[left]")
    assert rc == 2 and "holds no clip of ['left']" in err
