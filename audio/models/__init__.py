"""``ember.audio.models``: speech models with torchaudio's constructors, forward contracts and
state-dict keys (so torchaudio's published checkpoints load as they are).

- :class:`Wav2Vec2Model` and its builders (``wav2vec2_model``, ``wav2vec2_base``,
  ``wav2vec2_large``, ``wav2vec2_large_lv60k``, ``wav2vec2_xlsr_300m/1b/2b``,
  ``hubert_base/large/xlarge``, ``wavlm_model``, ``wavlm_base/large``), and
  ``import_huggingface_model`` for ``transformers``' wav2vec2/HuBERT/WavLM models;
- :class:`Wav2Letter`, :class:`DeepSpeech`, :class:`Conformer`;
- :class:`Emformer`, :class:`RNNT` (``emformer_rnnt_model``, ``emformer_rnnt_base``) with
  :class:`RNNTBeamSearch`; CTC decoders in ``ember.audio.models.decoder``.

Pretrained bundles live in ``ember.audio.pipelines``.
"""
from .conformer import Conformer
from .deepspeech import DeepSpeech
from ._hf_import import import_huggingface_model
from .emformer import Emformer
from .rnnt import RNNT, emformer_rnnt_base, emformer_rnnt_model
from .rnnt_decoder import Hypothesis, RNNTBeamSearch
from .wav2letter import Wav2Letter
from .wav2vec2 import (Wav2Vec2Model, hubert_base, hubert_large, hubert_xlarge, wav2vec2_base,
                       wav2vec2_large, wav2vec2_large_lv60k, wav2vec2_model, wav2vec2_xlsr_1b,
                       wav2vec2_xlsr_2b, wav2vec2_xlsr_300m, wavlm_base, wavlm_large,
                       wavlm_model)

__all__ = ["Conformer", "DeepSpeech", "Emformer", "Hypothesis", "RNNT", "RNNTBeamSearch",
           "Wav2Letter", "Wav2Vec2Model", "emformer_rnnt_base", "emformer_rnnt_model",
           "hubert_base", "hubert_large", "hubert_xlarge", "wav2vec2_base", "wav2vec2_large",
           "wav2vec2_large_lv60k", "wav2vec2_model", "wav2vec2_xlsr_1b", "wav2vec2_xlsr_2b",
           "wav2vec2_xlsr_300m", "wavlm_base", "wavlm_large", "wavlm_model",
           "import_huggingface_model"]
