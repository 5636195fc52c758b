"""Model configurations, read from and written to Hugging Face ``config.json`` dicts.

Field names are the ones ``transformers`` writes, so a published ``config.json`` maps onto a
config as it is; fields a config does not use are ignored (kept in ``extra``).

    >>> cfg = EncoderConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
    ...                     intermediate_size=64, vocab_size=100)
    >>> cfg.head_dim, EncoderConfig.from_dict(cfg.to_dict()) == cfg
    (8, True)
"""
from __future__ import annotations

import dataclasses
import json
import os

import ember.nn.functional as F

__all__ = ["EncoderConfig", "GPT2Config", "activation", "ENCODER_TYPES", "DECODER_TYPES",
           "SUPPORTED_MODEL_TYPES", "config_from_dict", "read_config"]

ENCODER_TYPES = ("bert", "roberta", "xlm-roberta")   # one architecture; roberta's positions
DECODER_TYPES = ("gpt2",)
SUPPORTED_MODEL_TYPES = ENCODER_TYPES + DECODER_TYPES


def _quick_gelu(x):
    return x * F.sigmoid(x * 1.702)


_ACTIVATIONS = {
    "gelu": F.gelu,                                       # erf form (BERT, RoBERTa)
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),  # tanh form (GPT-2)
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_fast": lambda x: F.gelu(x, approximate="tanh"),
    "quick_gelu": _quick_gelu,
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": F.tanh,
}


def activation(name):
    """The activation function a config names (``hidden_act``/``activation_function``)."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unsupported activation {name!r}; supported: "
                         f"{', '.join(sorted(_ACTIVATIONS))}") from None


class _Config:
    """Shared: ``from_dict`` (unknown keys go to ``extra``), ``to_dict``, ``save``."""

    @classmethod
    def from_dict(cls, d):
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names}
        return cls(**known, extra=extra)

    def to_dict(self):
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        d.update(self.extra)
        return d

    def save(self, path):
        """Write ``config.json`` (a directory or a file path)."""
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)


@dataclasses.dataclass(eq=True)
class EncoderConfig(_Config):
    """A BERT-family encoder: BERT, RoBERTa, XLM-R, MiniLM (same blocks; ``model_type``
    "roberta"/"xlm-roberta" numbers positions from ``pad_token_id + 1`` and skips pads)."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    initializer_range: float = 0.02
    position_embedding_type: str = "absolute"
    model_type: str = "bert"
    classifier_dropout: float | None = None
    id2label: dict | None = None
    extra: dict = dataclasses.field(default_factory=dict, compare=False)

    def __post_init__(self):
        if self.model_type not in ENCODER_TYPES:
            raise ValueError(f"EncoderConfig: model_type {self.model_type!r} is not one of "
                             f"{ENCODER_TYPES}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not a multiple of "
                             f"num_attention_heads {self.num_attention_heads}")
        if self.position_embedding_type != "absolute":
            raise ValueError(f"position_embedding_type {self.position_embedding_type!r} is not "
                             "supported (only 'absolute')")
        activation(self.hidden_act)

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    @property
    def roberta_positions(self):
        """Positions count from ``pad_token_id + 1`` over non-pad tokens (RoBERTa, XLM-R)."""
        return self.model_type in ("roberta", "xlm-roberta")

    @property
    def num_labels(self):
        return None if self.id2label is None else len(self.id2label)


@dataclasses.dataclass(eq=True)
class GPT2Config(_Config):
    """GPT-2 (``transformers``' field names: ``n_embd``, ``n_layer``, ``n_head``, ...)."""

    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None
    activation_function: str = "gelu_new"
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    bos_token_id: int | None = 50256
    eos_token_id: int | None = 50256
    tie_word_embeddings: bool = True
    model_type: str = "gpt2"
    extra: dict = dataclasses.field(default_factory=dict, compare=False)

    def __post_init__(self):
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd {self.n_embd} is not a multiple of n_head {self.n_head}")
        if self.extra.get("add_cross_attention"):
            raise ValueError("GPT-2 with cross-attention (add_cross_attention) is not supported")
        activation(self.activation_function)

    @property
    def inner_dim(self):
        return self.n_inner if self.n_inner is not None else 4 * self.n_embd

    @property
    def head_dim(self):
        return self.n_embd // self.n_head


def config_from_dict(d, source="config"):
    """An :class:`EncoderConfig` or :class:`GPT2Config` from a ``config.json`` dict; an unknown
    ``model_type`` raises ``ValueError`` naming it and the supported ones."""
    mt = d.get("model_type")
    if mt in ENCODER_TYPES:
        return EncoderConfig.from_dict(d)
    if mt in DECODER_TYPES:
        return GPT2Config.from_dict(d)
    raise ValueError(f"{source}: model_type {mt!r} is not supported by ember.text.models; "
                     f"supported model types: {', '.join(SUPPORTED_MODEL_TYPES)}")


def read_config(path):
    """Read ``config.json`` (a file or the directory holding it)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    with open(path, encoding="utf-8") as f:
        return config_from_dict(json.load(f), source=path)
