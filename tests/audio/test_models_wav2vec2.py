"""Wav2Vec2Model / HuBERT / XLS-R against torchaudio: keys, shapes and parameter counts of the
full-size builders (manifest recorded under torchaudio), seeded tiny-config outputs, layer
features and input gradients (recorded once by fixtures/make_models.py)."""
import os
import sys

import numpy as np
import pytest

import ember
from ember.audio.models import Wav2Vec2Model, wav2vec2_base, wav2vec2_model

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
from audio_models_util import (FULL, REF, TINY, assert_matches, check_full,  # noqa: E402
                               run_tiny, seeded_inputs, tiny_model)

W2V_FULL = [n for n in FULL if n.startswith(("wav2vec2", "hubert", "wavlm"))]
W2V_TINY = [n for n in TINY if n.startswith(("w2v", "wavlm"))]


@pytest.mark.parametrize("name", W2V_FULL)
def test_full_size_builders_match_torchaudio(name):
    check_full(name)


@pytest.mark.parametrize("name", W2V_TINY)
def test_tiny_outputs_and_gradients_match_torchaudio(name):
    outs, grad = run_tiny(name)
    assert (outs[1] is None) == ("lengths" not in TINY[name][2])
    assert_matches(name, outs, grad)


@pytest.mark.parametrize("name", W2V_TINY)
def test_extract_features_match_torchaudio(name):
    model = tiny_model(name)
    inputs = seeded_inputs(TINY[name][2])
    wave = ember.tensor(inputs["waveforms"])
    lengths = ember.tensor(inputs["lengths"]) if "lengths" in inputs else None
    with ember.no_grad():
        feats, out_lengths = model.extract_features(wave, lengths)
        first, _ = model.extract_features(wave, lengths, num_layers=1)
    assert len(feats) == 2 and len(first) == 1
    for i, f in enumerate(feats):
        np.testing.assert_allclose(f.numpy(), REF[f"{name}/feat{i}"], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(first[0].numpy(), feats[0].numpy())
    if lengths is not None:
        np.testing.assert_array_equal(out_lengths.numpy(), REF[f"{name}/out1"])
    with pytest.raises(ValueError, match="num_layers"):
        model.extract_features(wave, lengths, num_layers=3)


def test_legacy_weight_norm_keys_load():
    """torchaudio's published checkpoints store the positional conv as weight_g/weight_v."""
    model = tiny_model("w2v_post")
    state = dict(model.state_dict())
    prefix = "encoder.transformer.pos_conv_embed.conv."
    state[prefix + "weight_g"] = state.pop(prefix + "parametrizations.weight.original0")
    state[prefix + "weight_v"] = state.pop(prefix + "parametrizations.weight.original1")
    fresh = wav2vec2_model(**TINY["w2v_post"][1]).eval()
    fresh.load_state_dict(state)
    outs, grad = run_tiny("w2v_post", fresh)
    assert_matches("w2v_post", outs, grad)


def test_without_lengths_and_zero_length_rows():
    model = tiny_model("w2v_post")
    x = ember.tensor(seeded_inputs(TINY["w2v_post"][2])["waveforms"])
    with ember.no_grad():
        full, none = model(x)
        _, lengths = model(x, ember.tensor([400, 5]))
    assert none is None and tuple(full.shape) == (2, 19, 5)
    assert lengths.tolist() == [19, 0]   # shorter than the receptive field: clamped at 0


def test_training_mode_gradients_reach_every_parameter():
    ember.manual_seed(0)
    kwargs = dict(TINY["w2v_post"][1], encoder_dropout=0.1, encoder_attention_dropout=0.1)
    model = wav2vec2_model(**kwargs).train()
    x = ember.tensor(seeded_inputs(TINY["w2v_post"][2])["waveforms"])
    out, _ = model(x, ember.tensor([400, 300]))
    out.square().mean().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and np.isfinite(p.grad.numpy()).all(), name
        assert np.abs(p.grad.numpy()).max() > 0, name


def test_bad_inputs_are_named():
    model = tiny_model("w2v_post")
    with pytest.raises(ValueError, match=r"waveforms must be 2-D \(batch, time\)"):
        model(ember.zeros(1, 1, 400))
    with pytest.raises(ValueError, match="extractor_mode"):
        wav2vec2_model(**dict(TINY["w2v_post"][1], extractor_mode="batch_norm"))
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        wav2vec2_model(**dict(TINY["w2v_post"][1], encoder_num_heads=3))


def test_builder_defaults_and_head():
    with ember.device("meta"):
        m = wav2vec2_base(aux_num_out=32)
    assert isinstance(m, Wav2Vec2Model) and tuple(m.aux.weight.shape) == (32, 768)
    assert m.encoder.transformer.layer_drop == 0.1
    assert m.encoder.transformer.layer_norm_first   # post-norm layers: norm before them


def test_wavlm_buckets_and_lengths():
    """Relative position buckets: exact below a quarter of the buckets, log-spaced beyond,
    sign in the upper half, clamped; and WavLM takes lengths (torchaudio's cannot), masking
    padded frames out of attention."""
    from ember.audio.models._wavlm_attention import relative_position_buckets

    b = relative_position_buckets(1, 40, 8, 12)[0]   # offsets 0..39 from query 0
    assert b[:2].tolist() == [0, 5] and b[2:4].tolist() == [6, 6] and b[-1] == 7
    assert (np.diff(b[1:]) >= 0).all()
    back = relative_position_buckets(40, 1, 8, 12)[:, 0]   # offsets 0..-39
    assert back[:3].tolist() == [0, 1, 2] and back.max() == 3
    model = tiny_model("wavlm_post")
    x = ember.tensor(seeded_inputs(TINY["wavlm_post"][2])["waveforms"])
    with ember.no_grad():
        full, _ = model(x)
        masked, lengths = model(x, ember.tensor([800, 500]))
    assert lengths.tolist() == [39, 24]
    np.testing.assert_allclose(masked.numpy()[0], full.numpy()[0], rtol=1e-5, atol=1e-6)
    assert np.abs(masked.numpy()[1, :24] - full.numpy()[1, :24]).max() > 1e-4
