"""Loading Hugging Face checkpoints: ``from_pretrained(directory) -> (model, tokenizer)`` and
``load_hf_state_dict(model, state_dict)``, no network and no torch.

A directory in the Hugging Face layout holds ``config.json``, the weights
(``model.safetensors``, a sharded ``model.safetensors.index.json``, or ``pytorch_model.bin``
read by ``ember.load``'s restricted ``.pth`` reader) and the tokenizer files
(``tokenizer.json``, or ``vocab.txt``, or ``vocab.json`` + ``merges.txt``).

Checkpoint keys are mapped the way ``transformers`` does: the task prefix (``bert.``,
``roberta.``, ``transformer.``) is stripped for a base model or added for a task model, the
old LayerNorm names ``gamma``/``beta`` become ``weight``/``bias``, position-id and causal-mask
buffers are dropped, a tied ``lm_head.weight`` may be absent, and the weights of heads the
model does not have (``cls.*``, ``lm_head.*``) are left unused.
"""
from __future__ import annotations

import json
import os
import warnings
from typing import NamedTuple

import ember

from ._config import GPT2Config, read_config
from .encoder import EncoderModel
from .gpt2 import GPT2LMHeadModel
from .heads import BertForSequenceClassification, RobertaForSequenceClassification

__all__ = ["from_pretrained", "load_hf_state_dict", "read_state_dict", "load_tokenizer",
           "build_model", "LoadResult"]

_DROP_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids", ".attn.bias",
                  ".attn.masked_bias")


class LoadResult(NamedTuple):
    """Keys the model wanted but the checkpoint lacked (``missing``), and checkpoint keys no
    parameter took (``unused``: e.g. a pre-training head)."""

    missing: list
    unused: list


def _rename(key):
    if key.endswith(".gamma"):
        return key[:-6] + ".weight"
    if key.endswith(".beta"):
        return key[:-5] + ".bias"
    return key


def _base_prefixes(model):
    """(own prefix or "", prefixes a checkpoint's base keys may carry)."""
    own = getattr(model, "base_model_prefix", "")
    base = getattr(model, own) if own else model
    return own, tuple(getattr(base, "base_model_prefixes", ()))


def load_hf_state_dict(model, state_dict, strict=True, drop_missing_pooler=True):
    """Load a ``transformers`` state dict into ``model`` (an encoder, GPT-2 or one of their
    task models), mapping keys as the module docstring says. ``strict``: a parameter the
    checkpoint lacks is an error (except a tied ``lm_head.weight``). With
    ``drop_missing_pooler``, the pooler of a bare encoder whose checkpoint has none is
    removed from the model with a warning (``pooler_output`` is then None). Returns a
    :class:`LoadResult`."""
    own, prefixes = _base_prefixes(model)
    wanted = model.state_dict()
    mapped, unused = {}, []
    for key, value in state_dict.items():
        k = _rename(key)
        if k.endswith(_DROP_SUFFIXES):
            continue
        head, _, rest = k.partition(".")
        if own and k not in wanted and f"{own}.{k}" in wanted:
            k = f"{own}.{k}"                      # task model, checkpoint of the base model
        elif not own and head in prefixes and rest:
            k = rest                              # base model, checkpoint of a task model
        if k in wanted:
            mapped[k] = value
        else:
            unused.append(key)
    missing = [k for k in wanted if k not in mapped]
    if getattr(getattr(model, "config", None), "tie_word_embeddings", False) and \
            "lm_head.weight" in missing:
        missing.remove("lm_head.weight")          # the same parameter as wte's
    pooler = [k for k in wanted if "pooler" in k.split(".")]
    if drop_missing_pooler and not own and pooler and all(k in missing for k in pooler):
        warnings.warn("the checkpoint has no pooler weights: the model's pooler was removed "
                      "(pooler_output is None)", stacklevel=2)
        model.pooler = None
        missing = [k for k in missing if k not in pooler]
    if strict and missing:
        raise RuntimeError(f"Error(s) in loading the checkpoint into "
                           f"{type(model).__name__}: missing key(s): "
                           + ", ".join(missing))
    model.load_state_dict(mapped, strict=False)
    return LoadResult(missing, unused)


# ------------------------------------------------------------------------------ files
def read_state_dict(directory):
    """The state dict of a Hugging Face model directory: ``model.safetensors``, the shards
    of ``model.safetensors.index.json``, or ``pytorch_model.bin`` (and its index)."""
    d = os.fspath(directory)
    for index, single in (("model.safetensors.index.json", "model.safetensors"),
                          ("pytorch_model.bin.index.json", "pytorch_model.bin")):
        path = os.path.join(d, single)
        if os.path.exists(path):
            return dict(ember.load(path, map_location="cpu"))
        ipath = os.path.join(d, index)
        if os.path.exists(ipath):
            with open(ipath, encoding="utf-8") as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
            sd = {}
            for s in shards:
                sd.update(ember.load(os.path.join(d, s), map_location="cpu"))
            return sd
    raise FileNotFoundError(f"{d}: no model.safetensors or pytorch_model.bin (or their "
                            f"sharded indexes) found")


def load_tokenizer(directory):
    """The tokenizer of a Hugging Face directory, through ``ember.text.tokenizers``:
    ``tokenizer.json``, else ``vocab.txt`` (WordPiece; lower-casing from
    ``tokenizer_config.json``, default on), else ``vocab.json`` + ``merges.txt`` (byte-level
    BPE). ``None`` when the directory holds none of them."""
    d = os.fspath(directory)
    has = {n: os.path.exists(os.path.join(d, n))
           for n in ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt")}
    if not (has["tokenizer.json"] or has["vocab.txt"] or
            (has["vocab.json"] and has["merges.txt"])):
        return None
    from ember.text import tokenizers as T   # lazy: the models do not need it otherwise

    if has["tokenizer.json"]:
        return T.Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    if has["vocab.txt"]:
        lower = True
        cfg_path = os.path.join(d, "tokenizer_config.json")
        if os.path.exists(cfg_path):
            with open(cfg_path, encoding="utf-8") as f:
                lower = bool(json.load(f).get("do_lower_case", True))
        return T.BERTTokenizer.from_vocab(os.path.join(d, "vocab.txt"), lower_case=lower)
    return T.GPT2BPETokenizer.from_vocab_merges(os.path.join(d, "vocab.json"),
                                                os.path.join(d, "merges.txt"))


def build_model(config, architectures=(), state_dict=None):
    """The ember model for a config and its ``architectures`` list: sequence classification
    when an architecture ends in ``ForSequenceClassification``, GPT-2 with its LM head for
    ``gpt2``, the bare encoder otherwise (with a pooler when the checkpoint has one)."""
    arch = " ".join(architectures or ())
    if isinstance(config, GPT2Config):
        return GPT2LMHeadModel(config)
    if "ForSequenceClassification" in arch:
        if config.roberta_positions:
            return RobertaForSequenceClassification(config)
        return BertForSequenceClassification(config)
    pool = True if state_dict is None else any("pooler." in k for k in state_dict)
    return EncoderModel(config, add_pooling_layer=pool)


def from_pretrained(directory, *, tokenizer=True, device=None, dtype=None, strict=True):
    """Load a local Hugging Face model directory: ``(model, tokenizer)``, the model in eval
    mode.

    ``config.json``'s ``model_type`` picks the architecture ("bert", "roberta",
    "xlm-roberta", "gpt2"; any other is a ``ValueError`` naming it and the supported ones).
    ``tokenizer=False`` skips the tokenizer (then ``None``); so does a directory without
    tokenizer files. ``device``/``dtype``: where the model goes."""
    d = os.fspath(directory)
    if not os.path.isdir(d):
        raise FileNotFoundError(f"{d} is not a directory")
    config = read_config(d)
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        architectures = json.load(f).get("architectures") or ()
    sd = read_state_dict(d)
    model = build_model(config, architectures, sd)
    load_hf_state_dict(model, sd, strict=strict)
    if dtype is not None or device is not None:
        model.to(device=device, dtype=dtype)
    model.eval()
    tok = load_tokenizer(d) if tokenizer else None
    return model, tok

