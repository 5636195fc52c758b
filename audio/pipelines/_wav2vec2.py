"""Pretrained wav2vec 2.0 / HuBERT / XLS-R / WavLM bundles, as torchaudio's ``pipelines``.

Each bundle names one published torchaudio checkpoint and the exact model configuration it
fits (``_params``, torchaudio's). ``get_model()`` fetches the file through ``ember.hub`` and
returns the model in eval mode; models trained on normalised audio (large LV-60k, HuBERT
large, XLS-R) come wrapped so the waveform is normalised first, as they expect. ASR bundles
add ``get_labels()``: the CTC output classes, blank first.

    >>> from ember.audio.pipelines import WAV2VEC2_ASR_BASE_960H as bundle
    >>> bundle.sample_rate, bundle.get_labels()[:5], bundle.url.rsplit("/", 1)[-1]
    (16000, ('-', '|', 'E', 'T', 'A'), 'wav2vec2_fairseq_base_ls960_asr_ls960.pth')
    >>> # model = bundle.get_model()        # downloads once into ember.hub's cache
    >>> # emissions, _ = model(waveform)    # (batch, frame, 29) CTC scores
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

from ..models.wav2vec2 import _ARCH, DEFAULT_CONV_LAYERS, wav2vec2_model, wavlm_model
from ._bundle import Bundle

__all__ = ["Wav2Vec2Bundle", "Wav2Vec2ASRBundle"]


_FACTORIES = {"Wav2Vec2": wav2vec2_model, "WavLM": wavlm_model}


class _Wav2Vec2Model(nn.Module):
    """A :class:`Wav2Vec2Model` behind the input transform its checkpoint expects:
    ``normalize_waveform`` standardises the whole input tensor (zero mean, unit variance over
    all of its elements, as torchaudio's bundles do). Keys: ``model.*``."""

    def __init__(self, model, normalize_waveform):
        super().__init__()
        self.model = model
        self.normalize_waveform = normalize_waveform

    def _prepare(self, waveforms):
        if self.normalize_waveform:
            waveforms = F.layer_norm(waveforms, tuple(waveforms.shape))
        return waveforms

    def forward(self, waveforms, lengths=None):
        return self.model(self._prepare(waveforms), lengths)

    def extract_features(self, waveforms, lengths=None, num_layers=None):
        return self.model.extract_features(self._prepare(waveforms), lengths, num_layers)


@dataclass
class Wav2Vec2Bundle(Bundle):
    """A pretrained :class:`~ember.audio.models.Wav2Vec2Model` (no CTC head): use
    ``get_model().extract_features(waveforms)`` for representations. Input: mono float
    waveforms at ``sample_rate`` (resample with ``ember.audio.functional.resample``)."""

    _path: str
    _params: Dict[str, Any]
    _sample_rate: float
    _normalize_waveform: bool
    _model_type: str
    _sha256: Optional[str] = field(default=None, kw_only=True)

    @property
    def sample_rate(self) -> float:
        """The sample rate (Hz) the model was trained on."""
        return self._sample_rate

    @property
    def meta(self):
        """url, sha256 (or a note why none), sample_rate and num_params (counted on the meta
        device: nothing allocated)."""
        with ember.device("meta"):
            n = sum(p.numel() for p in self._build().parameters())
        return {**self._meta(), "sample_rate": self._sample_rate, "num_params": n}

    def _check_type(self):
        if self._model_type not in _FACTORIES:
            raise ValueError(f"unsupported model type {self._model_type!r} (expected one of "
                             f"{', '.join(map(repr, _FACTORIES))})")

    def _build(self):
        self._check_type()
        return _FACTORIES[self._model_type](**self._params)

    def _get_state_dict(self, dl_kwargs):
        return self._fetch_state_dict(dl_kwargs)

    def get_model(self, *, dl_kwargs=None):
        """The model with the checkpoint loaded, in eval mode (wrapped with waveform
        normalisation where the checkpoint expects it). ``dl_kwargs`` go to
        ``ember.hub.load_state_dict_from_url``."""
        self._check_type()
        state = self._get_state_dict(dl_kwargs)   # first: offline or a bad file fails fast
        model = self._build()
        model.load_state_dict(state)
        if self._normalize_waveform:
            model = _Wav2Vec2Model(model, normalize_waveform=True)
        return model.eval()


@dataclass
class Wav2Vec2ASRBundle(Wav2Vec2Bundle):
    """A :class:`Wav2Vec2Bundle` fine-tuned for CTC speech recognition: the model's
    emissions (batch, frame, len(get_labels())) score ``get_labels()`` (blank first)."""

    _labels: Tuple[str, ...] = ()
    _remove_aux_axis: Tuple[int, ...] = (1, 2, 3)

    def get_labels(self, *, blank="-"):
        """The output classes: ``blank`` then the characters (``"|"`` is the word break)."""
        return (blank, *self._labels)

    def _get_state_dict(self, dl_kwargs):
        state = self._fetch_state_dict(dl_kwargs)
        return _remove_aux_axes(state, self._remove_aux_axis)


def _remove_aux_axes(state, axes):
    """Drop the CTC head's rows ``axes`` (fairseq's <s>, <pad>, </s>, ... which torchaudio's
    labels leave out) from ``aux.weight`` and ``aux.bias``."""
    state = dict(state)
    for key in ("aux.weight", "aux.bias"):
        if key not in state:
            raise KeyError(f"the checkpoint has no {key!r}: not a CTC fine-tuned model")
        arr = state[key].numpy() if isinstance(state[key], ember.Tensor) else \
            np.asarray(state[key])
        keep = [i for i in range(arr.shape[0]) if i not in set(axes)]
        state[key] = ember.from_numpy(np.ascontiguousarray(arr[keep]))
    return state


def _params(arch, dropouts, aux_num_out=None, wavlm=False):
    """torchaudio's ``_params`` for an architecture of ``models.wav2vec2._ARCH`` and the
    (projection, attention, ff-intermediate, encoder, layer-drop) dropouts; ``wavlm`` adds
    WavLM's relative position buckets (320 up to 800 frames)."""
    mode, bias, dim, layers, heads, ffn, first = _ARCH[arch]
    buckets = {"encoder_max_distance": 800, "encoder_num_buckets": 320} if wavlm else {}
    return {"extractor_mode": mode, "extractor_conv_layer_config": list(DEFAULT_CONV_LAYERS),
            "extractor_conv_bias": bias, "encoder_embed_dim": dim,
            "encoder_projection_dropout": dropouts[0], "encoder_pos_conv_kernel": 128,
            "encoder_pos_conv_groups": 16, "encoder_num_layers": layers,
            "encoder_num_heads": heads, **buckets, "encoder_attention_dropout": dropouts[1],
            "encoder_ff_interm_features": ffn, "encoder_ff_interm_dropout": dropouts[2],
            "encoder_dropout": dropouts[3], "encoder_layer_norm_first": first,
            "encoder_layer_drop": dropouts[4], "aux_num_out": aux_num_out}


# dropouts (projection, attention, ff-intermediate, encoder, layer drop) of the fine-tuning
# recipes, as the bundles record them
_BASE = (0.1, 0.1, 0.0, 0.1, 0.05)
_LARGE = (0.1, 0.1, 0.0, 0.0, 0.2)
_LV60K = (0.1, 0.1, 0.0, 0.0, 0.0)
_NONE = (0.0, 0.0, 0.0, 0.0, 0.0)
_XLSR = (0.1, 0.0, 0.0, 0.0, 0.0)
_FINETUNE = (0.0, 0.0, 0.1, 0.0, 0.1)

# output characters of the CTC heads (blank excluded; "|" is the word break)
_EN = tuple("|ETAONIHSRDLUMWCFGYPBVK'XJQZ")
_VOXPOPULI = {
    "de": (tuple("|enirstadhulgcmobwfkzpvüäöjßyxq"), (1, 2, 3, 35)),
    "en": (tuple("|etoiansrhldcumpfgwybvkxjqz"), (1, 2, 3, 31)),
    "es": (tuple("|eaosnrildctupmbqygvhófíájzñéxúkwü"), (1, 2, 3, 35)),
    "fr": (tuple("|esnitraouldcpmévqfgbhxàjèyêzôkçœûùîâwïëüæ"), (1, 2, 3)),
    "it": (tuple("|eiaontrlscdupmgvhzfbqàèùéòìkyxwjóíï"), (1, 2, 3)),
}


def _bundle(path, arch, dropouts, normalize):
    return Wav2Vec2Bundle(path, _params(arch, dropouts), 16000, normalize, "Wav2Vec2")


def _asr(path, arch, dropouts, normalize, labels=_EN, remove=(1, 2, 3)):
    return Wav2Vec2ASRBundle(path, _params(arch, dropouts, len(labels) + 1), 16000, normalize,
                             "Wav2Vec2", _labels=labels, _remove_aux_axis=remove)


WAV2VEC2_BASE = _bundle("wav2vec2_fairseq_base_ls960.pth", "base", _BASE, False)
WAV2VEC2_ASR_BASE_10M = _asr("wav2vec2_fairseq_base_ls960_asr_ll10m.pth", "base", _BASE, False)
WAV2VEC2_ASR_BASE_100H = _asr("wav2vec2_fairseq_base_ls960_asr_ls100.pth", "base", _BASE,
                              False)
WAV2VEC2_ASR_BASE_960H = _asr("wav2vec2_fairseq_base_ls960_asr_ls960.pth", "base", _BASE,
                              False)
WAV2VEC2_LARGE = _bundle("wav2vec2_fairseq_large_ls960.pth", "large", _LARGE, False)
WAV2VEC2_ASR_LARGE_10M = _asr("wav2vec2_fairseq_large_ls960_asr_ll10m.pth", "large", _LARGE,
                              False)
WAV2VEC2_ASR_LARGE_100H = _asr("wav2vec2_fairseq_large_ls960_asr_ls100.pth", "large", _LARGE,
                               False)
WAV2VEC2_ASR_LARGE_960H = _asr("wav2vec2_fairseq_large_ls960_asr_ls960.pth", "large", _LARGE,
                               False)
WAV2VEC2_LARGE_LV60K = _bundle("wav2vec2_fairseq_large_lv60k.pth", "large_lv60k", _LV60K, True)
WAV2VEC2_ASR_LARGE_LV60K_10M = _asr("wav2vec2_fairseq_large_lv60k_asr_ll10m.pth",
                                    "large_lv60k", _LV60K, True)
WAV2VEC2_ASR_LARGE_LV60K_100H = _asr("wav2vec2_fairseq_large_lv60k_asr_ls100.pth",
                                     "large_lv60k", _LV60K, True)
WAV2VEC2_ASR_LARGE_LV60K_960H = _asr("wav2vec2_fairseq_large_lv60k_asr_ls960.pth",
                                     "large_lv60k", _LV60K, True)
WAV2VEC2_XLSR53 = _bundle("wav2vec2_fairseq_large_xlsr53.pth", "large_lv60k", _NONE, True)
WAV2VEC2_XLSR_300M = _bundle("wav2vec2_xlsr_300m.pth", "large_lv60k", _NONE, True)
WAV2VEC2_XLSR_1B = _bundle("wav2vec2_xlsr_1b.pth", "xlsr_1b", _XLSR, True)
WAV2VEC2_XLSR_2B = _bundle("wav2vec2_xlsr_2b.pth", "xlsr_2b", _XLSR, True)
WAVLM_BASE = Wav2Vec2Bundle("wavlm_base.pth", _params("base", _BASE, wavlm=True), 16000, False,
                            "WavLM")
WAVLM_BASE_PLUS = Wav2Vec2Bundle("wavlm_base_plus.pth", _params("base", _BASE, wavlm=True),
                                 16000, False, "WavLM")
WAVLM_LARGE = Wav2Vec2Bundle("wavlm_large.pth", _params("hubert_large", _BASE, wavlm=True),
                             16000, True, "WavLM")
HUBERT_BASE = _bundle("hubert_fairseq_base_ls960.pth", "base", _BASE, False)
HUBERT_LARGE = _bundle("hubert_fairseq_large_ll60k.pth", "hubert_large", _NONE, True)
HUBERT_XLARGE = _bundle("hubert_fairseq_xlarge_ll60k.pth", "hubert_xlarge", _NONE, True)
HUBERT_ASR_LARGE = _asr("hubert_fairseq_large_ll60k_asr_ls960.pth", "hubert_large", _FINETUNE,
                        True)
HUBERT_ASR_XLARGE = _asr("hubert_fairseq_xlarge_ll60k_asr_ls960.pth", "hubert_xlarge",
                         _FINETUNE, True)
VOXPOPULI_ASR_BASE_10K_DE, VOXPOPULI_ASR_BASE_10K_EN, VOXPOPULI_ASR_BASE_10K_ES, \
    VOXPOPULI_ASR_BASE_10K_FR, VOXPOPULI_ASR_BASE_10K_IT = (
        _asr(f"wav2vec2_voxpopuli_base_10k_asr_{lang}.pt", "base", _FINETUNE, False, labels,
             remove) for lang, (labels, remove) in _VOXPOPULI.items())

BUNDLES = ("WAV2VEC2_BASE", "WAV2VEC2_ASR_BASE_10M", "WAV2VEC2_ASR_BASE_100H",
           "WAV2VEC2_ASR_BASE_960H", "WAV2VEC2_LARGE", "WAV2VEC2_ASR_LARGE_10M",
           "WAV2VEC2_ASR_LARGE_100H", "WAV2VEC2_ASR_LARGE_960H", "WAV2VEC2_LARGE_LV60K",
           "WAV2VEC2_ASR_LARGE_LV60K_10M", "WAV2VEC2_ASR_LARGE_LV60K_100H",
           "WAV2VEC2_ASR_LARGE_LV60K_960H", "WAV2VEC2_XLSR53", "WAV2VEC2_XLSR_300M",
           "WAV2VEC2_XLSR_1B", "WAV2VEC2_XLSR_2B", "HUBERT_BASE", "HUBERT_LARGE",
           "HUBERT_XLARGE", "HUBERT_ASR_LARGE", "HUBERT_ASR_XLARGE", "VOXPOPULI_ASR_BASE_10K_DE",
           "VOXPOPULI_ASR_BASE_10K_EN", "VOXPOPULI_ASR_BASE_10K_ES", "VOXPOPULI_ASR_BASE_10K_FR",
           "VOXPOPULI_ASR_BASE_10K_IT", "WAVLM_BASE", "WAVLM_BASE_PLUS", "WAVLM_LARGE")
__all__ += list(BUNDLES)
