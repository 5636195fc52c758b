"""Recipe ``asr``: speech recognition with CTC on a LibriSpeech-layout folder: log-mel
features, a small convolution + bidirectional GRU network emitting characters, greedy CTC
decoding; reports word and character error rates (WER/CER) on the test subset.

    ember run asr data.root=DIR                        # DIR/LibriSpeech/{train-clean-100,dev-clean}
    ember run asr data.root=DIR data.train=dev-clean data.test=test-clean
    ember run asr data.root=DIR init_weights=outputs/asr   # fine-tune an earlier run's model

Transcripts become characters (``'``, A-Z, ``|`` between words; index 0 is the CTC blank);
other characters are left out and counted. Utterances longer than ``data.max_seconds`` are
left out of training. Per epoch it logs ``epoch, step, lr, train_loss, test_loss, wer, cer`` to
``metrics.csv`` and prints a few decoded test utterances; at the end it saves
``model.safetensors`` + ``weights.json`` (labels and features in its meta). Checkpoints,
``resume=true``, Ctrl-C and ``overwrite=true`` work as in ``classify``.
"""
from __future__ import annotations

import os

import numpy as np

import ember
from ember import nn
from ember.data import DataLoader, Subset

from ember.recipes._config import ConfigError, instantiate
from ember.recipes._loop import EXIT_INTERRUPTED, TrainingRun, rate_postfix
from ember.recipes._registry import register_recipe
from ember.recipes._runtime import command_line
from ember.recipes._weights import save_weights
from ember.recipes.classify import _init_from, _scheduler

__all__ = ["LABELS", "CTCSpeechNet", "LogMelFeatures", "greedy_decode", "error_rates", "main"]

SAMPLE_RATE = 16000
LABELS = ("-", "|", "'") + tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")   # "-": the CTC blank


class CTCSpeechNet(nn.Module):
    """Log-mel frames (batch, time, n_mels) -> per-frame log-probabilities over the labels.
    Two 1-D convolutions (the first halves the frame rate), a bidirectional GRU over the
    valid frames of each utterance, a linear layer. ``forward(x, lengths)`` returns
    ``(log_probs (batch, time', num_labels), lengths')`` as torchaudio's models do."""

    def __init__(self, num_labels=len(LABELS), n_mels=80, channels=128, hidden=128,
                 num_layers=2, dropout=0.1):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(n_mels, channels, 5, stride=2, padding=2), nn.BatchNorm1d(channels),
            nn.GELU(), nn.Conv1d(channels, channels, 3, padding=1), nn.BatchNorm1d(channels),
            nn.GELU())
        self.rnn = nn.GRU(channels, hidden, num_layers=num_layers, batch_first=True,
                          bidirectional=True, dropout=dropout if num_layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(2 * hidden, num_labels)
        self.n_mels = n_mels

    def forward(self, x, lengths):
        if x.dim() != 3 or x.shape[2] != self.n_mels:
            raise ValueError(f"CTCSpeechNet expects features (batch, time, {self.n_mels}), got "
                             f"shape {tuple(x.shape)}")
        from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

        h = self.conv(x.transpose(1, 2)).transpose(1, 2)
        lengths = (lengths + 1) // 2                       # stride 2, padding 2, kernel 5
        packed = pack_padded_sequence(h, lengths.cpu(), batch_first=True, enforce_sorted=False)
        h, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True,
                                   total_length=int(h.shape[1]))
        return self.head(self.dropout(h)).log_softmax(-1), lengths


class LogMelFeatures:
    """A waveform (channels, frames) at 16 kHz -> float32 (frames/hop + 1, n_mels): log of the
    mel power spectrogram of the first channel, normalised to zero mean and unit variance
    per band over the utterance. A plain object, so loader workers can take it."""

    def __init__(self, n_mels=80, n_fft=400, hop_length=160):
        from ember.audio.transforms import MelSpectrogram

        self.settings = {"n_mels": n_mels, "n_fft": n_fft, "hop_length": hop_length}
        self.mel = MelSpectrogram(SAMPLE_RATE, n_fft=n_fft, hop_length=hop_length,
                                  n_mels=n_mels)

    def __call__(self, waveform):
        with ember.no_grad():
            m = self.mel(waveform[:1]).numpy()[0].T          # (frames, n_mels)
        m = np.log(m + 1e-6)
        m = (m - m.mean(0)) / (m.std(0) + 1e-5)
        return m.astype(np.float32)


def encode_transcript(text):
    """Label ids of ``text`` (upper-cased; spaces become ``|``) and how many characters were
    left out as unknown."""
    index = {c: i for i, c in enumerate(LABELS)}
    ids, unknown = [], 0
    for c in " ".join(text.upper().split()).replace(" ", "|"):
        if c in index and c != LABELS[0]:
            ids.append(index[c])
        else:
            unknown += 1
    return np.array(ids, np.int64), unknown


def greedy_decode(log_probs, lengths):
    """Best-path CTC decoding (``ember.audio.models.decoder.ctc_greedy_decoder``): per
    utterance, the words of its valid frames' best labels, joined by spaces."""
    from ember.audio.models.decoder import ctc_greedy_decoder

    hyps = ctc_greedy_decoder(LABELS, blank=0, sil_token="|")(log_probs.detach(), lengths)
    return [" ".join(h[0].words) for h in hyps]


def error_rates(refs, hyps):
    """(WER, CER) of the hypotheses ``hyps`` against the references ``refs``: edit distance
    over words (characters) summed over utterances, divided by the reference length."""
    from ember.audio.functional import edit_distance

    words = sum(edit_distance(r.split(), h.split()) for r, h in zip(refs, hyps))
    chars = sum(edit_distance(r, h) for r, h in zip(refs, hyps))
    n_words = max(sum(len(r.split()) for r in refs), 1)
    n_chars = max(sum(len(r) for r in refs), 1)
    return words / n_words, chars / n_chars


class _Item:
    """LIBRISPEECH item -> (features, label ids, reference text)."""

    def __init__(self, features):
        self.features = features

    def __call__(self, item):
        ids, _ = encode_transcript(item[2])
        return self.features(item[0]), ids, " ".join(item[2].upper().split())


def _collate(items):
    """Pad features to the longest utterance; concatenate the targets (CTC's flat layout)."""
    feats, ids, texts = zip(*items)
    lengths = np.array([f.shape[0] for f in feats], np.int64)
    x = np.zeros((len(feats), int(lengths.max()), feats[0].shape[1]), np.float32)
    for i, f in enumerate(feats):
        x[i, :f.shape[0]] = f
    return (ember.tensor(x), ember.tensor(lengths), ember.tensor(np.concatenate(ids)),
            ember.tensor(np.array([len(t) for t in ids], np.int64)), list(texts))


def _subset(data, name, features, max_seconds=None, limit=None, download=False):
    from ember.audio import info
    from ember.audio.datasets import LIBRISPEECH

    ds = LIBRISPEECH(data["root"], url=name, download=download)
    keep = list(range(len(ds)))
    if max_seconds:
        base = os.path.join(os.fspath(data["root"]), "LibriSpeech")
        keep = [i for i in keep if info(os.path.join(base, ds.get_metadata(i)[0])).num_frames
                <= float(max_seconds) * SAMPLE_RATE]
    if limit:
        keep = keep[:int(limit)]
    if not keep:
        raise ConfigError(f"data.root={data['root']}: no utterance of {name} is left "
                          f"(max_seconds={max_seconds}, limit={limit})")
    unknown = sum(encode_transcript(ds.get_metadata(i)[2])[1] for i in keep)
    if unknown:
        print(f"{name}: {unknown} transcript characters outside {''.join(LABELS[1:])} are "
              f"left out", flush=True)
    return Subset(ds, keep).map(_Item(features))


def evaluate(model, loader, loss_fn, device, show=0):
    """(mean CTC loss, WER, CER, [(reference, hypothesis)] of the first ``show``)."""
    model.eval()
    refs, hyps, loss_sum, n = [], [], 0.0, 0
    with ember.no_grad():
        for x, lengths, targets, target_lengths, texts in loader:
            lp, out_len = model(x.to(device), lengths.to(device))
            loss = loss_fn(lp.transpose(0, 1), targets, out_len, target_lengths)
            loss_sum += float(loss.item()) * len(texts)
            n += len(texts)
            refs += texts
            hyps += greedy_decode(lp, out_len)
    model.train()
    wer, cer = error_rates(refs, hyps)
    return loss_sum / max(n, 1), wer, cer, list(zip(refs, hyps))[:show]


@register_recipe("asr")
def main(cfg):
    """Train per ``cfg`` (see ``configs/asr.yaml``); returns the exit code."""
    data = cfg.get("data") or {}
    if not data.get("root"):
        raise ConfigError("asr needs data.root: the folder holding LibriSpeech/<subset> "
                          "(or data.download=true)")
    run = TrainingRun(cfg, "asr", distributed=False)
    device, seed = run.device, run.seed
    features = LogMelFeatures(**(cfg.get("features") or {}))
    train_ds = _subset(data, data.get("train", "train-clean-100"), features,
                       data.get("max_seconds"), data.get("limit"), bool(data.get("download")))
    test_ds = _subset(data, data.get("test", "dev-clean"), features, None,
                      data.get("test_limit"), bool(data.get("download")))
    print(f"data: {len(train_ds)} training and {len(test_ds)} test utterances", flush=True)

    model = instantiate(cfg["model"]).to(device)
    if cfg.get("init_weights"):
        _init_from(model, cfg["init_weights"])
    workers = int(cfg.get("num_workers", 0))
    loader = DataLoader(train_ds, batch_size=int(cfg["batch_size"]), shuffle=True, seed=seed,
                        collate_fn=_collate, num_workers=workers, rank=0, world_size=1)
    test_loader = DataLoader(test_ds, batch_size=int(cfg.get("eval_batch_size", 16)),
                             shuffle=False, collate_fn=_collate, num_workers=workers, rank=0,
                             world_size=1)
    epochs = int(cfg["epochs"])
    opt = instantiate(cfg["optimizer"], model.parameters())
    sched = _scheduler(cfg, opt, epochs * len(loader))
    loss_fn = nn.CTCLoss(blank=0, zero_infinity=True)
    clip = cfg.get("grad_clip")

    run.counters = {"loss": 0.0, "seen": 0}
    run.track(model=model, optimizer=opt, scheduler=sched)
    run.track(loader=loader, pickled=True)
    run.restore()
    sums = run.counters

    wer = cer = None
    model.train()
    with run:
        for _ in run.epochs(epochs):
            for x, lengths, targets, target_lengths, texts in run.batches(
                    loader, len(loader), rate_postfix(sums, "utt_s")):
                lp, out_len = model(x.to(device), lengths.to(device))
                loss = loss_fn(lp.transpose(0, 1), targets, out_len, target_lengths)
                opt.zero_grad()
                loss.backward()
                if clip:
                    nn.utils.clip_grad_norm_(model.parameters(), float(clip))
                opt.step()
                if sched is not None:
                    sched.step()
                sums["loss"] += float(loss.item()) * len(texts)
                sums["seen"] += len(texts)
            test_loss, wer, cer, shown = evaluate(model, test_loader, loss_fn, device,
                                                  show=0 if run.quiet else 2)
            for ref, hyp in shown:
                print(f"  ref: {ref}\n  hyp: {hyp}")
            run.end_epoch({"lr": float(opt.param_groups[0]["lr"]),
                           "train_loss": sums["loss"] / max(sums["seen"], 1),
                           "test_loss": test_loss, "wer": wer, "cer": cer})
            sums = run.counters
    if run.interrupted:
        return EXIT_INTERRUPTED
    if wer is None:   # resumed after the last epoch: report the logged figures
        wer, cer = run.last_logged("wer"), run.last_logged("cer")
    meta = {"labels": list(LABELS), "blank": 0, "recipe": "ember run asr",
            "command": command_line(), "features": features.settings,
            "_metrics": {data.get("test", "dev-clean"): {"wer": round(100 * wer, 3),
                                                         "cer": round(100 * cer, 3)}},
            "epochs": epochs, "seed": seed}
    manifest = save_weights(run.out, model, cfg["model"],
                            {"_component_": "ember.recipes.asr.LogMelFeatures",
                             **features.settings}, meta)
    run.finish(f"WER {100 * wer:.2f}%, CER {100 * cer:.2f}% on {data.get('test', 'dev-clean')}",
               [("weights", os.path.join(run.out, "model.safetensors")),
                ("manifest", manifest)])
    return 0
