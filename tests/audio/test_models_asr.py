"""Wav2Letter, DeepSpeech and Conformer against torchaudio: keys, shapes and parameter counts
(manifest), seeded tiny-config outputs and input gradients (fixtures/make_models.py)."""
import os
import sys

import numpy as np
import pytest

import ember
from ember.audio.models import Conformer, DeepSpeech, Wav2Letter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
from audio_models_util import (FULL, TINY, assert_matches, check_full, run_tiny,  # noqa: E402
                               seeded_state, shapes, tiny_model)

FULL_NAMES = [n for n in FULL if n.startswith(("wav2letter", "deepspeech", "conformer"))]
TINY_NAMES = [n for n in TINY if n.startswith(("wav2letter", "deepspeech", "conformer"))]


@pytest.mark.parametrize("name", FULL_NAMES)
def test_full_size_models_match_torchaudio(name):
    check_full(name)


@pytest.mark.parametrize("name", TINY_NAMES)
def test_tiny_outputs_and_gradients_match_torchaudio(name):
    outs, grad = run_tiny(name)
    assert_matches(name, outs, grad)


def test_conformer_padding_does_not_leak_into_valid_frames():
    """Padded frames are masked out of attention: with a pointwise depthwise conv (kernel 1,
    no window reaching across frames) the valid frames do not depend on the padding."""
    model = Conformer(8, 2, 16, 2, 1).eval()
    state = seeded_state(shapes(model))
    model.load_state_dict({k: ember.from_numpy(v) for k, v in state.items()})
    x = np.random.default_rng(0).standard_normal((2, 6, 8)).astype(np.float32)
    y = x.copy()
    y[1, 4:] = 100.0   # row 1 has 4 valid frames
    with ember.no_grad():
        a, _ = model(ember.tensor(x), ember.tensor([6, 4]))
        b, _ = model(ember.tensor(y), ember.tensor([6, 4]))
        c, _ = model(ember.tensor(y), ember.tensor([6, 6]))
    np.testing.assert_allclose(a.numpy()[1, :4], b.numpy()[1, :4], rtol=1e-5, atol=1e-6)
    assert np.abs(c.numpy()[1, :4] - a.numpy()[1, :4]).max() > 1e-3   # unmasked: it leaks


def test_training_gradients_reach_every_parameter():
    ember.manual_seed(0)
    for model, args in (
            (Conformer(8, 2, 16, 2, 3, dropout=0.1), (ember.randn(2, 5, 8), ember.tensor([5, 3]))),
            (DeepSpeech(6, 8, 5, dropout=0.1), (ember.randn(2, 1, 7, 6),)),
            (Wav2Letter(5, "mfcc", 4), (ember.randn(1, 4, 24),))):
        model.train()
        out = model(*args)
        out = out[0] if isinstance(out, tuple) else out
        out.square().mean().backward()
        for name, p in model.named_parameters():
            assert p.grad is not None and np.isfinite(p.grad.numpy()).all(), name


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="input_type"):
        Wav2Letter(input_type="spectrogram")
    with pytest.raises(ValueError, match="depthwise_kernel_size must be odd"):
        Conformer(8, 2, 16, 1, 4)
    with pytest.raises(ValueError, match=r"\(batch, 1, time, n_feature\)"):
        DeepSpeech(6, 8, 5)(ember.zeros(2, 7, 6))
    with pytest.raises(ValueError, match=r"\(batch, time, input_dim\)"):
        tiny_model("conformer")(ember.zeros(6, 8), ember.tensor([6]))
    with pytest.raises(ValueError, match="lengths must be 1-D"):
        tiny_model("conformer")(ember.zeros(2, 6, 8), ember.tensor([6]))
    with pytest.raises(ValueError, match=r"\(batch, num_features, time\)"):
        Wav2Letter(5, "mfcc", 4)(ember.zeros(4, 24))
