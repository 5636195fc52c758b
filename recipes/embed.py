"""Recipe ``embed``: sentence embeddings of every line of a text file, saved as ``.safetensors``
or ``.npy``, with the cosine nearest neighbours of the first lines printed.

    ember run embed input=sentences.txt                          # all-MiniLM-L6-v2 (fetched once)
    ember run embed input=sentences.txt model.dir=path/to/model  # a local HF/ST directory
    ember run embed input=big.txt output=emb.npy resume=true     # continue an interrupted run

Each non-blank line is one text. Texts are embedded longest first in batches of similar
length (``SentenceEmbedder.encode``); pooling, normalisation and the maximum length are
the model's published ones unless ``model.pooling``/``normalize``/``max_length`` say
otherwise. The output holds one row per text in file order: ``.safetensors`` with the
tensors ``embeddings`` (n, d) float32 and ``line_numbers`` (n,) int64 (1-based lines of the
input) plus the model and settings in its metadata; ``.npy`` the embeddings alone.

A checkpoint every ``checkpoint.every_n_batches`` batches holds the rows done so far;
``resume=true`` continues from it (the input and model must be the ones it was made with),
Ctrl-C saves one and exits 130, and ``overwrite=true`` discards an earlier output.
"""
from __future__ import annotations

import hashlib
import os
import time

import numpy as np

import ember

from ember.recipes._checkpoint import Checkpointer
from ember.recipes._config import ConfigError
from ember.recipes._registry import register_recipe
from ember.recipes._runtime import (EXIT_INTERRUPTED, Interrupt, command_line, final_lines,
                                    progress, setup_run)

__all__ = ["main", "read_lines", "build_embedder", "nearest_neighbours", "save_embeddings"]

FORMATS = (".safetensors", ".npy")


def read_lines(path, on_error="raise"):
    """``(texts, line numbers)``: the non-blank lines of ``path`` (line breaks dropped),
    with their 1-based line numbers; invalid UTF-8 raises ``DatasetFormatError`` naming the
    file and line (``on_error="skip"`` leaves such lines out)."""
    from ember.text.datasets import TextRecords

    pairs = list(TextRecords([path], _numbered, fmt="lines", skip_blank=True,
                             on_error=on_error, name="embed input"))
    return [t for _, t in pairs], [n for n, _ in pairs]


def _numbered(text, where):
    return where.line, text


def _file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build_embedder(model_cfg, device):
    """``(SentenceEmbedder, description)`` from ``model.dir`` (a local Hugging Face or
    sentence-transformers directory) or ``model.weights`` (a weights entry)."""
    from ember.text.models import SentenceEmbedder

    over = {k: model_cfg.get(k) for k in ("pooling", "normalize", "max_length")}
    if model_cfg.get("dir"):
        d = os.path.expanduser(str(model_cfg["dir"]))
        if not os.path.isdir(d):
            raise ConfigError(f"model.dir={d!r} is not a directory")
        emb = SentenceEmbedder.from_pretrained(d, device=device, **over)
        return emb.eval(), os.path.abspath(d)
    if not model_cfg.get("weights"):
        raise ConfigError("embed needs a model: model.dir=DIR (a local Hugging Face or "
                          "sentence-transformers directory) or model.weights=NAME (e.g. "
                          "All_MiniLM_L6_V2_Weights.DEFAULT)")
    from ember.recipes.text_classify import _encoder_of, _zoo_builder

    w, builder = _zoo_builder(str(model_cfg["weights"]))
    model = _encoder_of(builder(weights=w), str(model_cfg["weights"])).to(device).eval()
    published = dict(w.meta.get("sentence_embedding") or {})
    published.update({k: v for k, v in over.items() if v is not None})
    emb = SentenceEmbedder(model, w.transforms(), **published)
    return emb.eval(), str(model_cfg["weights"])


def nearest_neighbours(emb, queries, k):
    """``[(query, [(row, cosine), ...])]``: for each query row of ``emb`` (n, d), the ``k``
    other rows most similar by cosine, best first."""
    e = np.asarray(emb, np.float32)
    e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    out = []
    for q in queries:
        sims = e @ e[q]
        sims[q] = -np.inf
        k_ = min(k, len(e) - 1)
        top = np.argpartition(-sims, k_ - 1)[:k_] if k_ > 0 else np.zeros(0, np.int64)
        top = top[np.argsort(-sims[top], kind="stable")]
        out.append((q, [(int(i), float(sims[i])) for i in top]))
    return out


def save_embeddings(path, emb, line_numbers, metadata):
    """Write ``emb`` (n, d) to ``path`` atomically: ``.safetensors`` (with ``line_numbers``
    and ``metadata``, str -> str) or ``.npy``."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        if path.endswith(".npy"):
            with open(tmp, "wb") as f:
                np.save(f, np.ascontiguousarray(emb, np.float32))
        else:
            from safetensors.numpy import save_file

            save_file({"embeddings": np.ascontiguousarray(emb, np.float32),
                       "line_numbers": np.asarray(line_numbers, np.int64)}, tmp,
                      metadata={k: str(v) for k, v in metadata.items()})
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _short(text, width=72):
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


@register_recipe("embed")
def main(cfg):
    """Embed per ``cfg`` (see ``configs/embed.yaml``); returns the exit code."""
    t_start = time.perf_counter()
    name = os.path.basename(str(cfg.get("output") or "embeddings.safetensors"))
    if not name.endswith(FORMATS):
        raise ConfigError(f"output={name!r}: the file must end in .safetensors or .npy")
    if not cfg.get("input"):
        raise ConfigError("embed needs input=FILE: a text file, one text per line")
    src = os.path.abspath(os.path.expanduser(str(cfg["input"])))
    if not os.path.isfile(src):
        raise ConfigError(f"input={src!r} does not exist")
    out = setup_run(cfg, "embed", outputs=("checkpoints", name))
    device = ember.device(cfg.get("device") or "cpu")
    quiet = bool(cfg.get("quiet"))
    ck_cfg = cfg.get("checkpoint") or {}
    ckpt = Checkpointer(os.path.join(out, "checkpoints"), ck_cfg.get("keep_last", 1))
    every = ck_cfg.get("every_n_batches")

    texts, lines = read_lines(src, cfg.get("on_error") or "raise")
    if not texts:
        raise ConfigError(f"input={src!r} holds no text (every line is blank)")
    embedder, model_id = build_embedder(cfg.get("model") or {}, device)
    settings = {"model": model_id, "pooling": embedder.pooling,
                "normalize": embedder.normalize, "max_length": embedder.max_length}
    input_sha = _file_sha256(src)
    bs = int(cfg.get("batch_size", 32))
    lengths = np.array([len(s) for s in embedder.tokenize(texts)])
    order = np.argsort(-lengths, kind="stable")
    batches = [order[i:i + bs] for i in range(0, len(order), bs)]
    print(f"embedding {len(texts)} texts from {src} with {model_id} (pooling "
          f"{embedder.pooling}, normalize {embedder.normalize}, at most {embedder.max_length} "
          f"tokens): {len(batches)} batches of up to {bs}", flush=True)

    done, rows = 0, []
    state = ckpt.load_latest() if cfg.get("resume") else None
    if cfg.get("resume") and state is None:
        print(f"resume=true but no checkpoint in {ckpt.directory}: starting from scratch")
    if state is not None:
        same = state["input_sha256"] == input_sha and state["settings"] == \
            {k: str(v) for k, v in settings.items()} and int(state["batch_size"]) == bs
        if not same:
            raise ConfigError(f"resume=true: the checkpoint {ckpt.latest()} was made from "
                              f"another input, model or batch_size; pass overwrite=true to "
                              f"start afresh")
        done = int(state["done"])
        rows = [state["rows"].numpy()] if done else []
        print(f"resumed from {ckpt.latest()} ({done}/{len(batches)} batches done)")

    def checkpoint():
        got = np.concatenate(rows) if rows else np.zeros((0, 0), np.float32)
        return ckpt.save({"rows": ember.tensor(got), "done": done, "input_sha256": input_sha,
                          "settings": {k: str(v) for k, v in settings.items()},
                          "batch_size": bs}, done)

    t0 = time.perf_counter()
    with Interrupt() as stop:
        bar = progress(len(batches), "embed", quiet, initial=done)
        while done < len(batches):
            idx = batches[done]
            e = embedder.encode([texts[i] for i in idx], batch_size=len(idx))
            rows.append(e.detach().cpu().numpy().astype(np.float32, copy=False))
            done += 1
            if bar is not None:
                bar.update(1)
            if every and done % int(every) == 0 and done < len(batches):
                checkpoint()
            if stop.requested and done < len(batches):
                if bar is not None:
                    bar.close()
                path = checkpoint()
                print(f"\ninterrupted after {done}/{len(batches)} batches: checkpoint saved to "
                      f"{path}\ncontinue with: {command_line()} resume=true", flush=True)
                return EXIT_INTERRUPTED
        if bar is not None:
            bar.close()
    got = np.concatenate(rows)
    emb = np.empty_like(got)
    emb[order] = got
    dest = save_embeddings(os.path.join(out, name), emb, lines,
                           {**settings, "input": src, "input_sha256": input_sha,
                            "command": command_line()})
    rate = len(texts) / max(time.perf_counter() - t0, 1e-9)
    print(f"\ndone in {time.perf_counter() - t_start:.1f} s: {emb.shape[0]} embeddings of "
          f"dimension {emb.shape[1]} ({rate:.0f} texts/s)")
    nb = cfg.get("neighbours") or {}
    queries = range(min(int(nb.get("queries", 5)), len(texts)))
    k = int(nb.get("k", 3))
    if len(queries) and k > 0 and len(texts) > 1:
        print("nearest neighbours (cosine similarity):")
        for q, hits in nearest_neighbours(emb, queries, k):
            print(f"  line {lines[q]}: {_short(texts[q])}")
            for i, s in hits:
                print(f"      {s:.4f}  line {lines[i]}: {_short(texts[i], 64)}")
    final_lines([("embeddings", dest), ("config", os.path.join(out, "config.yaml")),
                 ("checkpoints", ckpt.directory if os.path.isdir(ckpt.directory) else None)])
    return 0
