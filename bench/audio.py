"""audio benchmarks: ember.audio's DSP and streaming decode against their anchors.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/audio.py --threads 2

Goals (issue "audio"): MelSpectrogram of 60 s at 16 kHz (torchaudio's defaults: n_fft 400,
hop 200, 128 mels) against torch.stft + power + matmul with the same filterbank, <= 1.0;
StreamReader decode of a 10-minute mp3 (44.1 kHz stereo, generated once and cached under
$EMBER_HOME/bench) against PyAV used directly (decode every frame to an array), <= 1.1.
Each figure checks once that both sides give the same numbers.

Without a gradient to track, ember's power spectrogram frames, windows and transforms in
numpy with the FFTs spread over ember's threads (numpy's FFT releases the GIL); torch.stft
threads its FFTs too. Both figures move a lot with other load on the machine: torch's more
(its two OpenMP threads), so the Mel ratio is best read on an idle machine.
"""
from __future__ import annotations

import os

from harness import Suite  # first: fixes the thread count

suite = Suite("audio")

SR = 16000


def _signal(seconds, sr=SR, channels=1, seed=0):
    import numpy as np

    n = int(seconds * sr)
    t = np.arange(n) / sr
    rng = np.random.default_rng(seed)
    x = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.1 * np.sin(2 * np.pi * 1234.5 * t)
    x = x + 0.05 * rng.standard_normal(n)
    return np.stack([x] * channels).astype(np.float32)


@suite.figure("MelSpectrogram 60 s @ 16 kHz (n_fft 400, 128 mels)", unit="ms", goal=1.0)
def melspectrogram():
    import numpy as np
    import torch

    import ember
    from ember.audio import transforms as T

    x = _signal(60)
    mel = T.MelSpectrogram(SR)
    ex, tx = ember.from_numpy(x), torch.from_numpy(x)
    tw = torch.hann_window(400)
    tfb = torch.from_numpy(mel.mel_scale.fb.numpy())

    def run_e():
        return mel(ex)

    def run_t():
        spec = torch.stft(tx, 400, 200, 400, tw, center=True, pad_mode="reflect",
                          return_complex=True).abs().pow(2.0)
        return torch.matmul(spec.transpose(-1, -2), tfb).transpose(-1, -2)

    a, b = run_e().numpy(), run_t().numpy()
    err = float(np.abs(a - b).max() / np.abs(b).max())
    if err > 1e-5:
        raise AssertionError(f"MelSpectrogram differs from the torch anchor: {err:.2e}")
    return run_e, run_t


def _ten_minute_mp3():
    """A 10-minute 44.1 kHz stereo mp3, encoded once (about 20 s) and cached."""
    home = os.environ.get("EMBER_HOME", os.path.join(os.path.expanduser("~"), ".cache",
                                                     "ember"))
    path = os.path.join(home, "bench", "audio", "tone_600s_44100_stereo.mp3")
    if not os.path.exists(path):
        import ember.audio as ea

        os.makedirs(os.path.dirname(path), exist_ok=True)
        ea.save(path, _signal(600, 44100, 2), 44100)
    return path


@suite.figure("StreamReader decode, 10 min mp3 44.1k stereo", unit="ms", goal=1.1,
              anchor="av")
def stream_decode():
    import av
    import numpy as np

    from ember.audio import StreamReader

    path = _ten_minute_mp3()

    def run_e():
        with StreamReader(path) as r:
            r.add_basic_audio_stream(44100)
            return [c for (c,) in r.stream()]

    def run_av():
        with av.open(path) as c:
            return [f.to_ndarray() for f in c.decode(audio=0)]

    a = np.concatenate([c.numpy() for c in run_e()])
    b = np.concatenate(run_av(), axis=1).T
    if a.shape != b.shape or not np.array_equal(a, b):
        raise AssertionError("StreamReader and PyAV decoded different samples")
    return run_e, run_av


if __name__ == "__main__":
    suite.main()
