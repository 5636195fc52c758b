"""audio benchmarks: ember.audio's DSP and streaming decode against their anchors.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/audio.py --threads 2

Goals (issue "audio"): MelSpectrogram of 60 s at 16 kHz (torchaudio's defaults: n_fft 400,
hop 200, 128 mels) against torch.stft + power + matmul with the same filterbank, <= 1.0;
StreamReader decode of a 10-minute mp3 (44.1 kHz stereo, generated once and cached under
$EMBER_HOME/bench) against PyAV used directly (decode every frame to an array), <= 1.1;
Wav2Vec2 base inference on 10 s of 16 kHz audio against a torch twin built from
``torch.nn`` with the same weights, <= 1.3. Each figure checks once that both sides give the
same numbers.

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


def _torch_wav2vec2_base():
    """wav2vec 2.0 base (group-norm extractor, post-norm layers, CTC head of 29) from torch.nn
    alone, its modules named as torchaudio's so it loads ember's state dict unchanged."""
    import torch
    from torch import nn
    from torch.nn import functional as TF

    class Block(nn.Module):
        def __init__(self, cin, k, s, norm):
            super().__init__()
            self.conv = nn.Conv1d(cin, 512, k, stride=s, bias=False)
            self.layer_norm = nn.GroupNorm(512, 512) if norm else None

        def forward(self, x):
            x = self.conv(x)
            return TF.gelu(self.layer_norm(x) if self.layer_norm is not None else x)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.k_proj, self.v_proj, self.q_proj, self.out_proj = (
                nn.Linear(768, 768) for _ in range(4))

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = (p(x).view(b, n, 12, 64).transpose(1, 2)
                       for p in (self.q_proj, self.k_proj, self.v_proj))
            o = TF.scaled_dot_product_attention(q, k, v)
            return self.out_proj(o.transpose(1, 2).reshape(b, n, 768))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()
            self.layer_norm, self.final_layer_norm = nn.LayerNorm(768), nn.LayerNorm(768)
            self.feed_forward = nn.Module()
            self.feed_forward.intermediate_dense = nn.Linear(768, 3072)
            self.feed_forward.output_dense = nn.Linear(3072, 768)

        def forward(self, x):
            x = self.layer_norm(x + self.attention(x))
            ff = self.feed_forward
            return self.final_layer_norm(
                x + ff.output_dense(TF.gelu(ff.intermediate_dense(x))))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            shapes = [(10, 5)] + [(3, 2)] * 4 + [(2, 2)] * 2
            self.feature_extractor = nn.Module()
            self.feature_extractor.conv_layers = nn.ModuleList(
                Block(1 if i == 0 else 512, k, s, i == 0) for i, (k, s) in enumerate(shapes))
            self.encoder = enc = nn.Module()
            enc.feature_projection = nn.Module()
            enc.feature_projection.layer_norm = nn.LayerNorm(512)
            enc.feature_projection.projection = nn.Linear(512, 768)
            enc.transformer = tr = nn.Module()
            tr.pos_conv_embed = nn.Module()
            tr.pos_conv_embed.conv = nn.utils.parametrizations.weight_norm(
                nn.Conv1d(768, 768, 128, padding=64, groups=16), name="weight", dim=2)
            tr.layer_norm = nn.LayerNorm(768)
            tr.layers = nn.ModuleList(Layer() for _ in range(12))
            self.aux = nn.Linear(768, 29)

        def forward(self, waveforms):
            x = waveforms.unsqueeze(1)
            for block in self.feature_extractor.conv_layers:
                x = block(x)
            fp, tr = self.encoder.feature_projection, self.encoder.transformer
            x = fp.projection(fp.layer_norm(x.transpose(1, 2)))
            pos = tr.pos_conv_embed.conv(x.transpose(1, 2))[..., :-1]
            x = tr.layer_norm(x + TF.gelu(pos).transpose(1, 2))
            for layer in tr.layers:
                x = layer(x)
            return self.aux(x)

    return Model().eval(), torch


@suite.figure("Wav2Vec2 base (CTC head) inference, 10 s @ 16 kHz", unit="ms", goal=1.3)
def wav2vec2_base_10s():
    import numpy as np

    import ember
    from ember.audio.models import wav2vec2_base

    model = wav2vec2_base(aux_num_out=29).eval()
    twin, torch = _torch_wav2vec2_base()
    twin.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in
                          model.state_dict().items()})   # strict: the keys are the same
    x = (0.1 * _signal(10)).astype(np.float32)
    ex, tx = ember.from_numpy(x), torch.from_numpy(x)

    def run_e():
        with ember.no_grad():
            return model(ex)[0]

    def run_t():
        with torch.no_grad():
            return twin(tx)

    a, b = run_e().numpy(), run_t().numpy()
    err = float(np.abs(a - b).max() / np.abs(b).max())
    if err > 1e-4:
        raise AssertionError(f"Wav2Vec2 emissions differ from the torch twin: {err:.2e}")
    return run_e, run_t


if __name__ == "__main__":
    suite.main()
