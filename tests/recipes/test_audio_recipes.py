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


PITCH = {"A": 500.0, "B": 1100.0, "C": 2300.0}


def make_librispeech(root, subset, n, seed):
    """A LibriSpeech subset of ``n`` utterances whose "speech" spells the transcript: each
    letter a 70 ms tone at its own pitch, each space 60 ms of quiet."""
    rng = np.random.default_rng(seed)
    base = root / "LibriSpeech" / subset / "7" / "11"
    lines = []
    for k in range(n):
        words = ["".join(rng.choice(list(PITCH), size=int(rng.integers(1, 3))))
                 for _ in range(int(rng.integers(1, 3)))]
        parts = []
        for w in words:
            for c in w:
                t = np.arange(1120) / 16000
                parts.append(0.4 * np.sin(2 * np.pi * PITCH[c] * t) * np.hanning(1120))
            parts.append(np.zeros(960))
        x = np.concatenate([np.zeros(800), *parts]) + 0.01 * rng.standard_normal(1)
        uid = f"7-11-{k:04d}"
        os.makedirs(base, exist_ok=True)
        ea.save(str(base / f"{uid}.flac"), ember.tensor(x[None].astype(np.float32)), 16000,
                bits_per_sample=16)
        lines.append(f"{uid} {' '.join(words)}")
    (base / "7-11.trans.txt").write_text("\n".join(lines) + "\n")
    return root


ASR = ["quiet=true", "epochs=3", "batch_size=4", "model.channels=16", "model.hidden=16",
       "model.num_layers=1", "features.n_mels=20", "model.n_mels=20", "optimizer.lr=0.01",
       "lr_scheduler.max_lr=0.01", "data.train=dev-clean", "data.test=test-clean"]


def test_asr_trains_scores_and_resumes(workdir, cli, monkeypatch):
    from ember.recipes import _loop as L

    root = workdir / "ls"
    make_librispeech(root, "dev-clean", 12, seed=0)
    make_librispeech(root, "test-clean", 4, seed=1)
    args = [*ASR, f"data.root={root}", "checkpoint.every_n_steps=2"]
    rc, out, err = cli("run", "asr", *args, "output_dir=ref")
    assert rc == 0, err
    assert "data: 12 training and 4 test utterances" in out and "WER " in out
    ref = _rows(workdir / "ref" / "metrics.csv")
    assert [r["epoch"] for r in ref] == ["1", "2", "3"]
    assert float(ref[-1]["train_loss"]) < float(ref[0]["train_loss"])
    assert all(0 <= float(r["cer"]) and 0 <= float(r["wer"]) for r in ref)
    with monkeypatch.context() as m:
        m.setattr(L, "Interrupt", StopAfter(4))
        rc, out, _ = cli("run", "asr", *args, "output_dir=run")
    assert rc == 130 and "interrupted at step 4" in out      # start of epoch 2
    rc, out, err = cli("run", "asr", *args, "output_dir=run", "resume=true")
    assert rc == 0, err
    assert _rows(workdir / "run" / "metrics.csv") == ref


def test_asr_decoding_and_error_rates():
    from ember.recipes.asr import LABELS, encode_transcript, error_rates, greedy_decode

    ids, unknown = encode_transcript("it's  a cat!")
    assert "".join(LABELS[i] for i in ids) == "IT'S|A|CAT" and unknown == 1
    # frames: blank, I, I, T, blank, T, |, A  -> "ITT A"
    seq = [0, LABELS.index("I"), LABELS.index("I"), LABELS.index("T"), 0, LABELS.index("T"),
           LABELS.index("|"), LABELS.index("A"), LABELS.index("A")]
    lp = np.full((1, len(seq), len(LABELS)), -10.0, np.float32)
    lp[0, np.arange(len(seq)), seq] = 0.0
    assert greedy_decode(ember.tensor(lp), [len(seq)]) == ["ITT A"]
    assert greedy_decode(ember.tensor(lp), [3]) == ["I"]
    wer, cer = error_rates(["THE CAT", "A DOG"], ["THE CAT", "A DOGS"])
    assert wer == 0.25 and cer == 1 / 12
