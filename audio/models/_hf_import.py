"""``import_huggingface_model``: a Hugging Face ``transformers`` wav2vec2 / HuBERT / WavLM model
as an ember :class:`Wav2Vec2Model` (torchaudio's ``models.wav2vec2.utils`` function).

It takes the ``transformers`` module itself (``Wav2Vec2Model``, ``Wav2Vec2ForCTC``,
``HubertModel``, ``HubertForCTC``, ``WavLMModel``, ``WavLMForCTC``), or, without torch, the
model's ``config.json`` as a dict plus its state dict (e.g. read with ``safetensors.numpy``).
The configuration maps onto ``wav2vec2_model``/``wavlm_model``; weights are renamed into
torchaudio's layout (``wav2vec2.feature_projection`` -> ``encoder.feature_projection``,
``encoder.layers`` -> ``encoder.transformer.layers``, ``lm_head`` -> ``aux``; WavLM's separate
q/k/v projections are packed into ``in_proj_weight``).
"""
from __future__ import annotations

import numpy as np

import ember

from .wav2vec2 import wav2vec2_model, wavlm_model

__all__ = ["import_huggingface_model"]

_TYPES = ("wav2vec2", "hubert", "wavlm")


def _array(v):
    if hasattr(v, "detach"):   # a torch tensor
        v = v.detach().cpu().numpy()
    elif isinstance(v, ember.Tensor):
        v = v.numpy()
    return np.asarray(v)


def _config(cfg, model_type, aux_num_out):
    if cfg.get("feat_extract_norm") not in ("group", "layer"):
        raise ValueError(f"config feat_extract_norm must be 'group' or 'layer', got "
                         f"{cfg.get('feat_extract_norm')!r}")
    for key in ("feat_extract_activation", "hidden_act"):
        if cfg.get(key, "gelu") != "gelu":
            raise ValueError(f"config {key}={cfg[key]!r} is not supported (expected 'gelu')")
    if abs(float(cfg.get("layer_norm_eps", 1e-5)) - 1e-5) > 1e-12:
        raise ValueError(f"config layer_norm_eps={cfg['layer_norm_eps']} is not supported "
                         "(the model's layer norms use 1e-5)")
    if model_type == "hubert" and not cfg.get("feat_proj_layer_norm", True):
        raise ValueError("HuBERT configs without feat_proj_layer_norm are not supported")
    conv = list(zip(cfg["conv_dim"], cfg["conv_kernel"], cfg["conv_stride"]))
    out = dict(
        extractor_mode=f"{cfg['feat_extract_norm']}_norm", extractor_conv_layer_config=conv,
        extractor_conv_bias=bool(cfg.get("conv_bias", False)),
        encoder_embed_dim=cfg["hidden_size"],
        encoder_projection_dropout=cfg.get("feat_proj_dropout", 0.0),
        encoder_pos_conv_kernel=cfg["num_conv_pos_embeddings"],
        encoder_pos_conv_groups=cfg["num_conv_pos_embedding_groups"],
        encoder_num_layers=cfg["num_hidden_layers"],
        encoder_num_heads=cfg["num_attention_heads"],
        encoder_attention_dropout=cfg.get("attention_dropout", 0.0),
        encoder_ff_interm_features=cfg["intermediate_size"],
        encoder_ff_interm_dropout=cfg.get("activation_dropout", 0.0),
        encoder_dropout=cfg.get("hidden_dropout", 0.0),
        encoder_layer_norm_first=bool(cfg.get("do_stable_layer_norm", False)),
        encoder_layer_drop=cfg.get("layerdrop", 0.0), aux_num_out=aux_num_out)
    if model_type == "wavlm":
        out.update(encoder_num_buckets=cfg["num_buckets"],
                   encoder_max_distance=cfg["max_bucket_distance"])
    return out


def _rename(state, model_type):
    """HF keys -> torchaudio keys (arrays)."""
    out, prefix = {}, model_type + "."   # the ...ForCTC models nest the encoder
    for key, value in state.items():
        if key.startswith(prefix):
            key = key[len(prefix):]
        if key == "masked_spec_embed":
            continue
        if key.startswith("lm_head."):
            key = "aux." + key[len("lm_head."):]
        elif key.startswith("feature_projection."):
            key = "encoder." + key
        elif key.startswith("encoder."):
            key = "encoder.transformer." + key[len("encoder."):]
        out[key] = _array(value)
    if model_type == "wavlm":   # q/k/v -> the packed in_proj of nn.MultiheadAttention
        layers = {k.split(".attention.")[0] for k in out if ".attention.q_proj." in k}
        for layer in layers:
            att = layer + ".attention."
            for kind in ("weight", "bias"):
                parts = [out.pop(f"{att}{p}_proj.{kind}") for p in "qkv"]
                out[f"{att}attention.in_proj_{kind}"] = np.concatenate(parts)
                out[f"{att}attention.out_proj.{kind}"] = out.pop(f"{att}out_proj.{kind}")
    return out


def import_huggingface_model(original, state_dict=None):
    """A :class:`Wav2Vec2Model` equal to a ``transformers`` wav2vec2/HuBERT/WavLM model.

    ``original``: the ``transformers`` model (its ``config`` and ``state_dict()`` are read),
    or its configuration as a dict (``config.json``) with ``state_dict`` (name -> array or
    tensor). ``...ForCTC`` models keep their ``lm_head`` as the ``aux`` head. Returns the
    model in training mode, as built (call ``.eval()`` for inference).

        >>> # from transformers import Wav2Vec2ForCTC
        >>> # model = import_huggingface_model(
        >>> #     Wav2Vec2ForCTC.from_pretrained("facebook/wav2vec2-base-960h")).eval()
    """
    if isinstance(original, dict):
        if state_dict is None:
            raise ValueError("given a config dict, pass the model's state_dict too")
        cfg, state = original, state_dict
    else:
        if state_dict is not None:
            raise ValueError("state_dict is only taken with a config dict")
        cfg, state = original.config.to_dict(), original.state_dict()
    model_type = cfg.get("model_type")
    if model_type not in _TYPES:
        raise ValueError(f"unsupported model_type {model_type!r}: expected one of {_TYPES}")
    renamed = _rename(state, model_type)
    aux = renamed["aux.weight"].shape[0] if "aux.weight" in renamed else None
    kwargs = _config(cfg, model_type, aux)
    model = (wavlm_model if model_type == "wavlm" else wav2vec2_model)(**kwargs)
    model.load_state_dict({k: ember.from_numpy(np.ascontiguousarray(v))
                           for k, v in renamed.items()})
    return model
