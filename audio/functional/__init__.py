"""ember.audio.functional: differentiable DSP on ember tensors, with torchaudio's names,
arguments and numerics.

- spectra: ``spectrogram``, ``inverse_spectrogram``, ``griffinlim``, ``phase_vocoder``,
  ``amplitude_to_DB``, ``DB_to_amplitude``, ``compute_deltas``, ``mask_along_axis``,
  ``mask_along_axis_iid``
- matrices: ``melscale_fbanks``, ``linear_fbanks``, ``create_dct``
- resampling: ``resample``
- filters: ``lfilter``, ``filtfilt``, ``biquad``, ``lowpass_biquad``, ``highpass_biquad``,
  ``bandpass_biquad``, ``bandreject_biquad``, ``allpass_biquad``, ``equalizer_biquad``,
  ``preemphasis``, ``deemphasis``, ``convolve``, ``fftconvolve``
- effects: ``gain``, ``mu_law_encoding``, ``mu_law_decoding``, ``pitch_shift``, ``vad``
- sequences: ``edit_distance`` (for word and character error rates)
"""
from .effects import gain, mu_law_decoding, mu_law_encoding, pitch_shift, vad
from .filterbanks import create_dct, linear_fbanks, melscale_fbanks
from .filtering import (allpass_biquad, bandpass_biquad, bandreject_biquad, biquad, convolve,
                        deemphasis, equalizer_biquad, fftconvolve, filtfilt, highpass_biquad,
                        lfilter, lowpass_biquad, preemphasis)
from ._rnnt import rnnt_loss
from .metrics import edit_distance
from .resample import resample
from .spectral import (DB_to_amplitude, amplitude_to_DB, compute_deltas, griffinlim,
                       inverse_spectrogram, mask_along_axis, mask_along_axis_iid,
                       phase_vocoder, spectrogram)

__all__ = ["DB_to_amplitude", "allpass_biquad", "amplitude_to_DB", "bandpass_biquad",
           "bandreject_biquad", "biquad", "compute_deltas", "convolve", "create_dct",
           "deemphasis", "edit_distance", "equalizer_biquad", "fftconvolve", "filtfilt", "gain",
           "griffinlim", "highpass_biquad", "inverse_spectrogram", "lfilter", "linear_fbanks",
           "lowpass_biquad", "mask_along_axis", "mask_along_axis_iid", "melscale_fbanks",
           "mu_law_decoding", "mu_law_encoding", "phase_vocoder", "pitch_shift",
           "preemphasis", "resample", "rnnt_loss", "spectrogram", "vad"]
