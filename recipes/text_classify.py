"""Recipe ``text_classify``: train a text classifier, a small encoder from scratch (with a BPE
tokenizer trained on the training text) or a published encoder fine-tuned, and report its
accuracy on the test split with a confusion matrix.

    ember run text_classify data.root=DIR               # DIR/{train,test}/<class>/*.txt
    ember run text_classify data.train=a.csv data.test=b.csv   # label, then text columns
    ember run text_classify data.dataset=AG_NEWS        # a published dataset, downloaded once
    ember run text_classify_minilm data.root=DIR        # fine-tune all-MiniLM-L6-v2
    ember run text_classify data.root=DIR resume=true   # continue from the latest checkpoint

Data: ``data.root`` (a folder of text files per class, per split), or ``data.train`` and
``data.test`` (CSV/TSV files with the label first and the text in the other columns, or
JSON-lines files with ``text`` and ``label`` fields), or ``data.dataset`` (AG_NEWS, IMDB,
SST2, YelpReviewPolarity, CoLA; stored under ``data.cache``). Texts become token ids once;
training batches group texts of similar length (``ember.text.collate.bucket_batches``) into
a JaggedTensor of token ids, which the encoder runs padding-free where it takes JaggedTensor
input (``head.padding_free``), else padded to the batch's longest text with a mask.

Per epoch it logs ``epoch, step, lr, train_loss, train_acc, test_loss, accuracy`` to
``metrics.csv``; at the end it prints the test accuracy and the confusion matrix (also
written to ``confusion.csv``), and saves ``model.safetensors`` + ``weights.json`` and the
tokenizer (``tokenizer.json``). Checkpoints, ``resume=true``, Ctrl-C and ``overwrite=true``
work as in ``classify``.
"""
from __future__ import annotations

import csv
import inspect
import os

import numpy as np

import ember
from ember import nn
from ember.data import DataLoader, IterableWrapper, drain_skips

from ember.recipes._config import ConfigError, instantiate, resolve_component
from ember.recipes._loop import EXIT_INTERRUPTED, TrainingRun, classifier_step, rate_postfix
from ember.recipes._registry import register_recipe
from ember.recipes._runtime import TRAINING_OUTPUTS, command_line
from ember.recipes._weights import save_weights

__all__ = ["TextClassifier", "small_encoder", "pretrained_encoder", "build_classifier",
           "data_source", "load_text_data", "evaluate", "confusion_text", "main"]

OUTPUTS = TRAINING_OUTPUTS + ("tokenizer.json", "confusion.csv")
SPECIALS = ("<pad>", "<cls>")     # the from-scratch tokenizer's special tokens (ids 0, 1)
# published classification sets: (train split, test split, item -> (label, text))
_PUBLISHED = {
    "AG_NEWS": ("train", "test", lambda x: (x[0], x[1])),
    "YelpReviewPolarity": ("train", "test", lambda x: (x[0], x[1])),
    "IMDB": ("train", "test", lambda x: (x[0], x[1])),
    "SST2": ("train", "dev", lambda x: (x[1], x[0])),
    "CoLA": ("train", "dev", lambda x: (x[1], x[2])),
}


# ------------------------------------------------------------------------------- the model
class TextClassifier(nn.Module):
    """An encoder, pooling over the tokens (``"mean"`` over each text's tokens, or ``"cls"``:
    the first token), dropout and a linear layer: ``forward(ids) -> logits (B, num_classes)``
    where ``ids`` is a JaggedTensor of token ids (or a :class:`~ember.text.collate.TextBatch`).

    ``padding_free``: run the encoder on the packed tokens (the JaggedTensor itself: no work
    on padding), or on the batch padded with ``pad_id`` plus an attention mask; None picks
    padding-free when the encoder takes JaggedTensor input. Both give the same logits."""

    def __init__(self, encoder, num_classes, pooling="mean", dropout=0.1, pad_id=0,
                 padding_free=None):
        super().__init__()
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        jagged_ok = callable(getattr(encoder, "jagged_positions", None))
        if padding_free and not jagged_ok:
            raise ConfigError(f"padding_free=true, but {type(encoder).__name__} does not take "
                              f"JaggedTensor input")
        self.encoder = encoder
        self.pooling, self.pad_id = pooling, int(pad_id)
        self.padding_free = jagged_ok if padding_free is None else bool(padding_free)
        self.dropout = nn.Dropout(float(dropout))
        self.classifier = nn.Linear(encoder.config.hidden_size, int(num_classes))

    def features(self, ids):
        """The pooled text features (B, d) of a JaggedTensor of token ids."""
        from ember.text.collate import TextBatch, pad_batch
        from ember.text.models import pool

        if isinstance(ids, TextBatch):
            ids = ids.ids
        dev = self.classifier.weight.device
        if self.padding_free:
            h = self.encoder(ids.to(dev))[0]                  # JaggedTensor (T, d) packed
            if self.pooling == "mean":
                return h.mean()
            return h.values()[h.offsets()[:-1]]
        input_ids, mask = pad_batch(ids, self.pad_id)
        input_ids, mask = input_ids.to(dev), mask.to(dev)
        h = self.encoder(input_ids, attention_mask=mask)[0]   # (B, L, d)
        return pool(h, mask, self.pooling)

    def forward(self, ids):
        return self.classifier(self.dropout(self.features(ids)))

    @property
    def max_length(self):
        """The longest input the encoder's position embeddings allow."""
        cfg = self.encoder.config
        n = cfg.max_position_embeddings
        return n - (cfg.pad_token_id + 1) if cfg.roberta_positions else n


def small_encoder(vocab_size, hidden_size=64, num_layers=2, num_heads=4, intermediate_size=128,
                  max_positions=256, dropout=0.1, pad_id=0):
    """A small BERT-style encoder (``ember.text.models.EncoderModel``) for training from
    scratch: ``vocab_size`` comes from the tokenizer, the rest from the config."""
    from ember.text.models import EncoderConfig, EncoderModel

    cfg = EncoderConfig(vocab_size=int(vocab_size), hidden_size=hidden_size,
                        num_hidden_layers=num_layers, num_attention_heads=num_heads,
                        intermediate_size=intermediate_size,
                        max_position_embeddings=max_positions, type_vocab_size=1,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                        pad_token_id=pad_id)
    return EncoderModel(cfg, add_pooling_layer=False)


def _zoo_builder(weights):
    """(weights entry, the encoder builder registered with its enum)."""
    from ember.text import models as M

    w = M.get_weight(weights) if isinstance(weights, str) else weights
    for name in M.list_models():
        if name.endswith("_classifier") or M.get_model_weights(name) is not type(w):
            continue
        return w, M.get_model_builder(name)
    raise ConfigError(f"no encoder builder uses {w!r}")


def _encoder_of(model, what):
    from ember.text.models import EncoderModel

    if isinstance(model, EncoderModel):
        return model
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    if isinstance(base, EncoderModel):
        return base
    raise ConfigError(f"{what} is a {type(model).__name__}, not an encoder: text_classify "
                      f"fine-tunes BERT-family encoders (BERT, RoBERTa, XLM-R, MiniLM)")


def pretrained_encoder(spec, load=True):
    """``(encoder, tokenizer)`` of a published encoder: ``spec`` is a weights entry name
    (``"All_MiniLM_L6_V2_Weights.DEFAULT"``, fetched through ``ember.hub``) or a local
    Hugging Face model directory. ``load=False`` builds a zoo entry's architecture without
    its weights (a trained copy is loaded over it)."""
    from ember.text import models as M

    spec = str(spec)
    if os.path.isdir(os.path.expanduser(spec)):
        model, tok = M.from_pretrained(os.path.expanduser(spec), tokenizer=load)
        return _encoder_of(model, spec), tok
    try:
        w, builder = _zoo_builder(spec)
    except (KeyError, ValueError) as e:
        raise ConfigError(f"pretrained {spec!r} is neither a local directory nor a weights "
                          f"entry ({e})") from None
    model = builder(weights=w if load else None)
    return _encoder_of(model, spec), (w.transforms() if load else None)


def build_classifier(num_classes, encoder=None, pretrained=None, pooling="mean", dropout=0.1,
                     pad_id=0, padding_free=None):
    """The classifier a run trained, rebuilt from its ``weights.json`` (the encoder's
    ``_component_`` config, or the ``pretrained`` entry/directory, built without download);
    load ``model.safetensors`` into it."""
    if (encoder is None) == (pretrained is None):
        raise ConfigError("build_classifier needs exactly one of encoder= and pretrained=")
    enc = instantiate(encoder) if encoder is not None else \
        pretrained_encoder(pretrained, load=False)[0]
    return TextClassifier(enc, num_classes, pooling, dropout, pad_id, padding_free)


# ------------------------------------------------------------------------------- the data
def _label_order(labels):
    """Class names in order: numerically when every label is an integer, else sorted."""
    uniq = sorted(set(labels), key=str)
    try:
        return sorted(uniq, key=lambda s: int(s))
    except (TypeError, ValueError):
        return uniq


def _file_reader(path, header, on_error):
    from ember.text.datasets import TextCSV, TextJsonLines

    path = os.path.expanduser(str(path))
    if not os.path.isfile(path):
        raise ConfigError(f"data file {path!r} does not exist")
    if path.lower().endswith((".jsonl", ".json", ".ndjson")):
        return TextJsonLines(path, label_transform=str, on_error=on_error)
    return TextCSV(path, label_column=0, text_column=None, header=bool(header),
                   on_error=on_error)


def data_source(data):
    """Which of ``root``, ``files`` (``train`` + ``test``) or ``dataset`` the ``data`` config
    node gives; ``ConfigError`` unless it gives exactly one."""
    given = [k for k in ("root", "dataset") if data.get(k)]
    if data.get("train") or data.get("test"):
        given.append("files")
    if len(given) != 1 or ("files" in given and not (data.get("train") and data.get("test"))):
        raise ConfigError("text_classify needs its data as one of: data.root=DIR (DIR/train/"
                          "<class>/*.txt and DIR/test/<class>/*.txt), data.train=FILE "
                          "data.test=FILE (CSV/TSV: label, then text columns; or JSON lines "
                          "with text and label), or data.dataset=NAME (" +
                          ", ".join(_PUBLISHED) + ")")
    return given[0]


def load_text_data(data):
    """``(train, test, classes)``: ``train``/``test`` lists of ``(class index, text)`` read
    per the ``data`` config node (``root``, ``train``/``test`` or ``dataset``)."""
    from ember.text import datasets as D

    on_error = data.get("on_error") or "raise"
    data_source(data)
    if data.get("root"):
        root = os.path.expanduser(str(data["root"]))
        splits = [os.path.join(root, s) for s in ("train", "test")]
        for s in splits:
            if not os.path.isdir(s):
                raise ConfigError(f"data.root: {s} is not a directory (expected "
                                  f"{root}/train/<class>/*.txt and {root}/test/<class>/*.txt)")
        train_ds = D.TextFolder(splits[0], on_error=on_error)
        test_ds = D.TextFolder(splits[1], on_error=on_error)
        classes = train_ds.classes
        train = list(train_ds)
        unknown = sorted(set(test_ds.classes) - set(classes))
        if unknown:
            raise ConfigError(f"data.root: test classes {unknown} have no training folder")
        test = [(train_ds.class_to_idx[test_ds.classes[i]], t) for i, t in test_ds]
    else:
        if data.get("dataset"):
            name = str(data["dataset"])
            if name not in _PUBLISHED:
                raise ConfigError(f"data.dataset={name!r}: text_classify reads "
                                  f"{', '.join(_PUBLISHED)}")
            tr_split, te_split, pair = _PUBLISHED[name]
            tr, te = D.get_dataset(name, root=data.get("cache"), split=(tr_split, te_split),
                                   on_error=on_error)
            raw_train, raw_test = [pair(x) for x in tr], [pair(x) for x in te]
            names = D.get_dataset_info(name).labels or {}
        else:
            raw_train = list(_file_reader(data["train"], data.get("header"), on_error))
            raw_test = list(_file_reader(data["test"], data.get("header"), on_error))
            names = {}
        order = _label_order([lab for lab, _ in raw_train])
        index = {lab: i for i, lab in enumerate(order)}
        unknown = sorted({str(lab) for lab, _ in raw_test if lab not in index})
        if unknown:
            raise ConfigError(f"test labels {unknown[:10]} never occur in the training data")
        classes = [str(names.get(lab, lab)) for lab in order]
        train = [(index[lab], t) for lab, t in raw_train]
        test = [(index[lab], t) for lab, t in raw_test]
    skipped = drain_skips()
    if skipped:
        print(f"data.on_error=skip: left out {len(skipped)} bad record(s), e.g. "
              f"{skipped[0].error}")
    if not train or not test:
        raise ConfigError(f"text_classify: the training data holds {len(train)} texts and the "
                          f"test data {len(test)}; both need some")
    if len(classes) < 2:
        raise ConfigError(f"text_classify needs at least 2 classes, found {classes}")
    return train, test, classes


class _Lengths:
    """Sort key of the bucketing: the token count of sample ``i`` (picklable)."""

    def __init__(self, lengths):
        self.lengths = lengths

    def __call__(self, i):
        return self.lengths[i]


class _Gather:
    """DataLoader ``collate_fn``: a bucket of sample indices -> a ``TextBatch``."""

    def __init__(self, seqs, labels, max_length):
        self.seqs, self.labels, self.max_length = seqs, labels, max_length

    def __call__(self, idx):
        from ember.text.collate import collate

        return collate([(self.seqs[i], self.labels[i]) for i in idx],
                       max_length=self.max_length)


def _encode(tok, texts, prefix, max_length):
    """Token ids of every text (one parallel ``encode_batch``), ``prefix`` ids first, cut to
    ``max_length``; an empty result becomes one ``prefix`` (or pad) token."""
    ids = tok.encode_batch(list(texts))
    out = []
    for s in ids:
        s = (list(prefix) + list(s))[:max_length]
        out.append(np.asarray(s or [0], np.int64))
    return out


# ------------------------------------------------------------------------------- the loop
def _scheduler(cfg, opt, total_steps):
    node = cfg.get("lr_scheduler")
    if not node:
        return None
    fn = resolve_component(node["_component_"])
    extra = {}
    if "total_steps" in inspect.signature(fn).parameters and "total_steps" not in node \
            and "epochs" not in node:
        extra["total_steps"] = total_steps
    return instantiate(node, opt, **extra)


def evaluate(model, seqs, labels, batch_size, loss_fn, num_classes, device):
    """(mean loss, accuracy, confusion matrix (true, predicted)) over the test texts, in
    batches of similar length."""
    from ember.text.collate import collate

    model.eval()
    order = np.argsort([len(s) for s in seqs], kind="stable")
    conf = np.zeros((num_classes, num_classes), np.int64)
    loss_sum = 0.0
    with ember.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            batch = collate([(seqs[i], labels[i]) for i in idx])
            y = batch.labels.to(device)
            logits = model(batch.ids)
            loss_sum += float(loss_fn(logits, y).item()) * len(idx)
            pred = logits.detach().cpu().numpy().argmax(1)
            conf += np.bincount(batch.labels.numpy() * num_classes + pred,
                                minlength=num_classes ** 2).reshape(conf.shape)
    model.train()
    n = max(int(conf.sum()), 1)
    return loss_sum / n, float(np.trace(conf)) / n, conf


def confusion_text(conf, classes):
    """The confusion matrix as aligned text (rows: true class, columns: predicted)."""
    names = [c if len(c) <= 12 else c[:11] + "~" for c in classes]
    w = max(max(len(n) for n in names), len(str(int(conf.max(initial=0)))), 4)
    head = " " * (w + 2) + " ".join(f"{n:>{w}}" for n in names)
    rows = [f"  {n:<{w}}" + " ".join(f"{int(v):>{w}}" for v in row)
            for n, row in zip(names, conf.tolist())]
    return "\n".join(["confusion matrix (rows: true class, columns: predicted)", head, *rows])


def _write_confusion(path, conf, classes):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["true\\predicted", *classes])
        for c, row in zip(classes, conf.tolist()):
            w.writerow([c, *row])


def _tokenizer(cfg, out, train_texts, resume_state):
    """The from-scratch tokenizer: the run's own ``tokenizer.json`` when resuming, else a
    byte-level BPE trained on the training texts (saved at once, so a resume reuses it)."""
    from ember.text.tokenizers import GPT2BPETokenizer, Tokenizer, train_bpe

    path = os.path.join(out, "tokenizer.json")
    if resume_state is not None and os.path.isfile(path):
        return GPT2BPETokenizer.load(out)
    tcfg = cfg.get("tokenizer") or {}
    tok = train_bpe(train_texts, int(tcfg.get("vocab_size", 2000)), special_tokens=SPECIALS,
                    min_frequency=int(tcfg.get("min_frequency", 2)))
    Tokenizer.save(tok, path)   # tokenizer.json only (GPT2BPETokenizer.save writes a folder)
    return tok


@register_recipe("text_classify")
def main(cfg):
    """Train per ``cfg`` (see ``configs/text_classify.yaml``); returns the exit code."""
    data_source(cfg.get("data") or {})   # a config without data fails before anything is written
    run = TrainingRun(cfg, "text_classify", outputs=OUTPUTS, distributed=False)
    out, device, seed = run.out, run.device, run.seed
    state = run.resume_state

    train, test, classes = load_text_data(cfg.get("data") or {})
    head = cfg.get("head") or {}
    pretrained = cfg.get("pretrained")
    if pretrained:
        from ember.text.tokenizers import Tokenizer

        encoder, tok = pretrained_encoder(pretrained)
        if tok is None:
            raise ConfigError(f"pretrained={pretrained!r} comes without a tokenizer")
        Tokenizer.save(tok, os.path.join(out, "tokenizer.json"))
        prefix, pad_id = [], int(encoder.config.pad_token_id)
        enc_cfg = None
    else:
        tok = _tokenizer(cfg, out, [t for _, t in train], state)
        enc_cfg = dict(cfg["model"])
        params = inspect.signature(resolve_component(enc_cfg["_component_"])).parameters
        enc_cfg["vocab_size"] = tok.vocab_size
        if "pad_id" in params:
            enc_cfg["pad_id"] = 0
        encoder = instantiate(enc_cfg)
        prefix, pad_id = [tok.token_to_id("<cls>")], 0
    model = TextClassifier(encoder, len(classes), head.get("pooling", "mean"),
                           head.get("dropout", 0.1), pad_id,
                           head.get("padding_free")).to(device)
    max_length = min(int(cfg.get("max_length") or model.max_length), model.max_length)
    seqs = _encode(tok, [t for _, t in train], prefix, max_length)
    test_seqs = _encode(tok, [t for _, t in test], prefix, max_length)
    labels = [y for y, _ in train]
    test_labels = [y for y, _ in test]
    print(f"data: {len(train)} training and {len(test)} test texts, {len(classes)} classes; "
          f"tokenizer: {tok.vocab_size} tokens; {sum(len(s) for s in seqs) / len(seqs):.1f} "
          f"tokens per training text (at most {max_length})", flush=True)

    bs = int(cfg["batch_size"])
    pipe = IterableWrapper(range(len(seqs))).shuffle(buffer_size=len(seqs)).bucketbatch(
        bs, batch_num=int((cfg.get("data") or {}).get("bucket_batches") or 100),
        sort_key=_Lengths([len(s) for s in seqs]))
    loader = DataLoader(pipe, batch_size=None, collate_fn=_Gather(seqs, labels, max_length),
                        seed=seed, num_workers=0, rank=0, world_size=1)
    epochs = int(cfg["epochs"])
    steps_per_epoch = -(-len(seqs) // bs)
    opt = instantiate(cfg["optimizer"], model.parameters())
    sched = _scheduler(cfg, opt, epochs * steps_per_epoch)
    loss_fn = instantiate(cfg.get("loss") or {"_component_": "ember.nn.CrossEntropyLoss"})

    if state is not None:
        extra = state.get("extra") or {}
        if list(extra.get("classes", ())) != list(classes) or \
                int(extra.get("num_train", -1)) != len(seqs):
            raise ConfigError(f"resume=true: the data differs from the checkpoint's "
                              f"({extra.get('num_train')} texts, classes "
                              f"{list(extra.get('classes', ()))})")
    run.extra = {"classes": list(classes), "num_train": len(seqs)}
    run.counters = {"loss": 0.0, "correct": 0, "seen": 0}
    run.track(model=model, optimizer=opt, scheduler=sched)
    run.track(loader=loader, pickled=True)
    run.restore()
    sums = run.counters

    accuracy, conf = None, None
    model.train()
    with run:
        for _ in run.epochs(epochs):
            for batch in run.batches(loader, steps_per_epoch, rate_postfix(sums, "texts_s")):
                classifier_step(model, loss_fn, opt, batch.ids, batch.labels.to(device), sums,
                                sched)
            test_loss, accuracy, conf = evaluate(model, test_seqs, test_labels,
                                                 int(cfg.get("eval_batch_size", 128)), loss_fn,
                                                 len(classes), device)
            seen = max(sums["seen"], 1)
            run.end_epoch({"lr": float(opt.param_groups[0]["lr"]),
                           "train_loss": sums["loss"] / seen, "train_acc": sums["correct"] / seen,
                           "test_loss": test_loss, "accuracy": accuracy})
            sums = run.counters
    if run.interrupted:
        return EXIT_INTERRUPTED
    if conf is None:   # resumed after the last epoch: evaluate the trained model once more
        _, accuracy, conf = evaluate(model, test_seqs, test_labels,
                                     int(cfg.get("eval_batch_size", 128)), loss_fn,
                                     len(classes), device)
        accuracy = run.last_logged("accuracy", accuracy)
    conf_path = os.path.join(out, "confusion.csv")
    _write_confusion(conf_path, conf, classes)
    tok_path = os.path.join(out, "tokenizer.json")
    model_cfg = {"_component_": "ember.recipes.text_classify.build_classifier",
                 "num_classes": len(classes), "pooling": model.pooling,
                 "dropout": float(head.get("dropout", 0.1)), "pad_id": pad_id,
                 "padding_free": model.padding_free}
    if pretrained:
        local = os.path.expanduser(str(pretrained))
        model_cfg["pretrained"] = os.path.abspath(local) if os.path.isdir(local) else \
            str(pretrained)
    else:
        model_cfg["encoder"] = enc_cfg
    meta = {"categories": list(classes), "recipe": "ember run text_classify",
            "command": command_line(), "max_length": max_length, "prefix_ids": prefix,
            "_metrics": {"test": {"accuracy": round(100 * accuracy, 3)}}, "epochs": epochs,
            "seed": seed}
    manifest = save_weights(out, model, model_cfg,
                            {"_component_": "ember.text.tokenizers.Tokenizer.from_file",
                             "path": tok_path}, meta)
    run.finish(f"test accuracy {100 * accuracy:.2f}% ({int(np.trace(conf))}/{int(conf.sum())})\n"
               + confusion_text(conf, classes),
               [("weights", os.path.join(out, "model.safetensors")), ("manifest", manifest),
                ("tokenizer", tok_path), ("confusion", conf_path)])
    return 0
