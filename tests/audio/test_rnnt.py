"""Emformer RNN-T: torchaudio's state-dict keys and parameter count for emformer_rnnt_base,
seeded-weight outputs and beam-search hypotheses equal to torchaudio's (fixtures from
tests/audio/fixtures/make_rnnt.py), streaming decoding from a StreamReader equal to the
whole-utterance run, and a training step through rnnt_loss."""
import gzip
import json
import os

import numpy as np
import pytest

import ember
from ember.audio.functional import rnnt_loss
from ember.audio.models import RNNTBeamSearch, emformer_rnnt_base, emformer_rnnt_model

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
FIXTURE = os.path.join(HERE, "rnnt_ref.npz")


@pytest.fixture(scope="module")
def ref():
    return np.load(FIXTURE)


def seeded_model(ref):
    cfg = json.loads(str(ref["rnnt/config"]))
    m = emformer_rnnt_model(**cfg).eval()
    sd = {k[len("rnnt/sd/"):]: ember.tensor(ref[k]) for k in ref.files
          if k.startswith("rnnt/sd/")}
    m.load_state_dict(sd)
    return m, cfg


def test_emformer_rnnt_base_keys_shapes_and_count_equal_torchaudio():
    with gzip.open(os.path.join(HERE, "rnnt_manifest.json.gz"), "rt") as fh:
        manifest = json.load(fh)
    m = emformer_rnnt_base(num_symbols=4097)
    sd = m.state_dict()
    assert list(sd) == list(manifest["state_dict"])
    for k, shape in manifest["state_dict"].items():
        assert list(sd[k].shape) == shape, k
    assert sum(p.numel() for p in m.parameters()) == manifest["num_params"] == 76738049


def test_forward_matches_torchaudio(ref):
    m, _ = seeded_model(ref)
    with ember.no_grad():
        logits, sl, tl, pstate = m(ember.tensor(ref["rnnt/sources"]),
                                   ember.tensor(ref["rnnt/source_lengths"]),
                                   ember.tensor(ref["rnnt/targets"]),
                                   ember.tensor(ref["rnnt/target_lengths"]))
        enc, _ = m.transcribe(ember.tensor(ref["rnnt/sources"][:1]),
                              ember.tensor(ref["rnnt/source_lengths"][:1]))
    np.testing.assert_allclose(logits.numpy(), ref["rnnt/logits"], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(sl.numpy(), ref["rnnt/logit_lengths"])
    np.testing.assert_allclose(np.stack([s[0].numpy() for s in pstate]), ref["rnnt/predictor_h"],
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.stack([s[1].numpy() for s in pstate]), ref["rnnt/predictor_c"],
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(enc.numpy(), ref["rnnt/encodings"], rtol=1e-4, atol=1e-4)


def _segments(x, L, R):
    return [x[k * L:k * L + L + R] for k in range((x.shape[0] - R) // L)]


@pytest.mark.parametrize("beam", [1, 3])
def test_beam_search_matches_torchaudio_whole_and_streaming(ref, beam):
    m, cfg = seeded_model(ref)
    L, R = cfg["segment_length"], cfg["right_context_length"]
    x = ref["rnnt/sources"][0]
    T = x.shape[0] - R
    decoder = RNNTBeamSearch(m, blank=cfg["num_symbols"] - 1)
    hyps = decoder(ember.tensor(x), ember.tensor(T), beam)
    assert [h[0] for h in hyps] == json.loads(str(ref[f"beam{beam}/tokens"]))
    np.testing.assert_allclose([h[3] for h in hyps], ref[f"beam{beam}/scores"], rtol=1e-4,
                               atol=1e-4)
    state, hypothesis = None, None
    for seg in _segments(x, L, R):
        hypothesis, state = decoder.infer(ember.tensor(seg), ember.tensor(L + R), beam,
                                          state=state, hypothesis=hypothesis)
    assert [h[0] for h in hypothesis] == json.loads(str(ref[f"beam{beam}/stream_tokens"]))
    assert [h[0] for h in hypothesis] == [h[0] for h in hyps]
    np.testing.assert_allclose([h[3] for h in hypothesis], [h[3] for h in hyps], rtol=1e-5,
                               atol=1e-5)


def _tiny_model(seed=0, num_symbols=9):
    ember.manual_seed(seed)
    return emformer_rnnt_model(
        input_dim=10, encoding_dim=16, num_symbols=num_symbols, segment_length=4,
        right_context_length=2, time_reduction_input_dim=8, time_reduction_stride=2,
        transformer_num_heads=2, transformer_ffn_dim=16, transformer_num_layers=2,
        transformer_dropout=0.0, transformer_activation="gelu",
        transformer_left_context_length=3, transformer_max_memory_size=2,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True,
        symbol_embedding_dim=12, num_lstm_layers=2, lstm_layer_norm=True,
        lstm_layer_norm_epsilon=1e-3, lstm_dropout=0.0).eval()


def _features(samples, dim=10):
    """Stateless per-frame features: each frame is ``dim`` consecutive samples, companded,
    so chunked and whole-file extraction agree exactly."""
    frames = samples[: len(samples) // dim * dim].reshape(-1, dim)
    return (np.sign(frames) * np.log1p(20 * np.abs(frames))).astype(np.float32)


def test_streaming_from_stream_reader_equals_whole_utterance(tmp_path):
    from ember.audio import StreamReader, save

    dim, L, R, n_seg = 10, 4, 2, 7
    n = (n_seg * L + R) * dim
    t = np.arange(n) / 8000
    rng = np.random.default_rng(0)
    wav = (0.5 * np.sin(2 * np.pi * 300 * t * (1 + t)) + 0.05 * rng.normal(size=n))
    path = str(tmp_path / "speech.wav")
    save(path, wav[None].astype(np.float32), 8000, encoding="PCM_F", bits_per_sample=32)

    model = _tiny_model()
    decoder = RNNTBeamSearch(model, blank=8)
    reader = StreamReader(path)
    reader.add_basic_audio_stream(frames_per_chunk=L * dim, buffer_chunk_size=-1)  # a segment
    buf = np.zeros((0, dim), np.float32)
    state, hyps, emitted, consumed = None, None, [], []
    for (chunk,) in reader.stream():
        a = np.asarray(chunk)[:, 0]
        consumed.append(a)
        buf = np.concatenate([buf, _features(a, dim)])
        while buf.shape[0] >= L + R:                      # a segment and its look-ahead
            hyps, state = decoder.infer(ember.tensor(buf[:L + R]), ember.tensor(L + R), 3,
                                        state=state, hypothesis=hyps)
            emitted.append(list(hyps[0][0]))
            buf = buf[L:]
    assert len(emitted) == n_seg
    audio = np.concatenate(consumed)
    assert audio.shape[0] == n
    whole = decoder(ember.tensor(_features(audio, dim)), ember.tensor(n_seg * L), 3)
    assert [h[0] for h in hyps] == [h[0] for h in whole]
    np.testing.assert_allclose([h[3] for h in hyps], [h[3] for h in whole], rtol=1e-5,
                               atol=1e-5)
    assert emitted[-1] == whole[0][0]


def test_training_step_through_rnnt_loss_lowers_it():
    model = _tiny_model(1, num_symbols=6).train()
    x = ember.randn(2, 18, 10)
    src_len = ember.tensor([16, 12])
    targets = ember.tensor([[1, 2, 3], [4, 1, 0]])
    tgt_len = ember.tensor([3, 2])
    padded = ember.cat([ember.zeros(2, 1, dtype=targets.dtype) + 5, targets], 1)  # blank first
    opt = ember.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(4):
        logits, sl, _, _ = model(x, src_len, padded, tgt_len + 1)
        loss = rnnt_loss(logits, targets, sl, tgt_len, blank=5)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_bad_decoder_input():
    decoder = RNNTBeamSearch(_tiny_model(), blank=8)
    with pytest.raises(ValueError, match=r"input must be of shape \(T, D\)"):
        decoder(ember.randn(2, 10, 10), ember.tensor(8), 2)
    with pytest.raises(ValueError, match="length must be of shape"):
        decoder(ember.randn(10, 10), ember.tensor([8, 8]), 2)


@pytest.mark.parametrize("name", ["functional._rnnt", "transforms._rnnt", "models.emformer",
                                  "models.rnnt", "models.decoder._ctc_decoder",
                                  "pipelines._rnnt"])
def test_docstring_examples(name):
    import doctest
    import importlib

    mod = importlib.import_module(f"ember.audio.{name}")
    res = doctest.testmod(mod, extraglobs={"ember": ember},
                          optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
