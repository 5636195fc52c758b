"""``ember.audio.pipelines``: pretrained bundles, as torchaudio's.

A bundle names one published checkpoint, the model configuration it fits and what the model
needs around it: ``sample_rate``, ``get_labels()`` (ASR), ``get_model()`` (fetched once
through ``ember.hub``, eval mode, input normalisation included where the checkpoint expects
it). wav2vec 2.0: ``WAV2VEC2_BASE``, ``WAV2VEC2_ASR_BASE_960H``, ... (large, LV-60k, XLS-R);
HuBERT: ``HUBERT_BASE``, ``HUBERT_LARGE``, ``HUBERT_ASR_LARGE``, ...; WavLM: ``WAVLM_BASE``,
``WAVLM_BASE_PLUS``, ``WAVLM_LARGE``; VoxPopuli ASR.

    >>> from ember.audio.pipelines import HUBERT_ASR_LARGE
    >>> HUBERT_ASR_LARGE.sample_rate, len(HUBERT_ASR_LARGE.get_labels())
    (16000, 29)
"""
from ._bundle import Bundle
from ._rnnt import EMFORMER_RNNT_BASE_LIBRISPEECH, RNNTBundle
from ._wav2vec2 import *  # noqa: F401,F403
from ._wav2vec2 import BUNDLES as _W2V_BUNDLES, Wav2Vec2ASRBundle, Wav2Vec2Bundle

__all__ = ["Bundle", "Wav2Vec2Bundle", "Wav2Vec2ASRBundle", *_W2V_BUNDLES,
           "RNNTBundle", "EMFORMER_RNNT_BASE_LIBRISPEECH"]
