"""``ember.audio.datasets``: speech corpora in their published layouts, as torchaudio names
and itemises them, each a ``MapDataPipe`` (index it, or chain ``.map``/``.shuffle``/...).

==================  ====================================================================
dataset             item
==================  ====================================================================
SPEECHCOMMANDS      (waveform, sample_rate, label, speaker_id, utterance_number)
LIBRISPEECH         (waveform, sample_rate, transcript, speaker_id, chapter_id, utterance_id)
YESNO               (waveform, sample_rate, labels)
LJSPEECH            (waveform, sample_rate, transcript, normalized_transcript)
VCTK_092            (waveform, sample_rate, transcript, speaker_id, utterance_id)
==================  ====================================================================

``download=True`` fetches the publisher's archive once into ``root`` (checked against its
published sha256) and unpacks it; a corpus already under ``root`` is used as it is. Nothing is
downloaded otherwise.
"""
from .librispeech import LIBRISPEECH
from .ljspeech import LJSPEECH
from .speechcommands import SPEECHCOMMANDS
from .vctk import VCTK_092
from .yesno import YESNO

__all__ = ["LIBRISPEECH", "LJSPEECH", "SPEECHCOMMANDS", "VCTK_092", "YESNO"]
