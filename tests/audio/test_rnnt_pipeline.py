"""EMFORMER_RNNT_BASE_LIBRISPEECH's pieces, run offline on files the test writes: feature
extractors equal to torchaudio's (fixture from tests/audio/fixtures/make_rnnt.py), the
SentencePiece token processor, and the decoder built from a checkpoint through ember.hub."""
import dataclasses
import json
import os
import struct

import numpy as np
import pytest

import ember
from ember.audio.models import RNNTBeamSearch, emformer_rnnt_model
from ember.audio.pipelines._rnnt import EMFORMER_RNNT_BASE_LIBRISPEECH as BUNDLE

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "rnnt_ref.npz")


@pytest.fixture(scope="module")
def ref():
    return np.load(FIXTURE)


@pytest.fixture
def bundle(tmp_path, ref):
    path = tmp_path / "global_stats.json"
    path.write_text(json.dumps({"mean": ref["features/mean"].tolist(),
                                "invstddev": ref["features/invstddev"].tolist()}))
    return dataclasses.replace(BUNDLE, _global_stats_path=str(path))


def test_properties():
    assert (BUNDLE.sample_rate, BUNDLE.n_fft, BUNDLE.n_mels, BUNDLE.hop_length,
            BUNDLE.segment_length, BUNDLE.right_context_length) == (16000, 400, 80, 160, 16, 4)
    assert BUNDLE.url.endswith("/torchaudio/models/emformer_rnnt_base_librispeech.pt")


def test_feature_extractors_match_torchaudio(bundle, ref):
    wave = ember.tensor(ref["features/waveform"])
    with ember.no_grad():
        whole, length = bundle.get_feature_extractor()(wave)
        stream, slen = bundle.get_streaming_feature_extractor()(wave)
    np.testing.assert_allclose(whole.numpy(), ref["features/whole"], rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(stream.numpy(), ref["features/streaming"], rtol=1e-4, atol=2e-4)
    assert length.tolist() == ref["features/length"].tolist()
    assert whole.shape[0] == stream.shape[0] + 4 == slen.item() + 4


def _proto_piece(piece, typ):
    def field(num, wire, payload):
        return bytes([num << 3 | wire]) + payload

    body = field(1, 2, bytes([len(piece.encode())]) + piece.encode())
    body += field(2, 5, struct.pack("<f", 0.0)) + field(3, 0, bytes([typ]))
    return field(1, 2, bytes([len(body)]) + body)


def test_token_processor_reads_a_sentencepiece_model(tmp_path):
    pieces = [("<unk>", 2), ("<s>", 3), ("</s>", 3), ("\u2581he", 1), ("llo", 1),
              ("\u2581world", 1)]
    model = b"".join(_proto_piece(p, t) for p, t in pieces)
    path = tmp_path / "spm.model"
    path.write_bytes(model)
    proc = dataclasses.replace(BUNDLE, _sp_model_path=str(path)).get_token_processor()
    assert proc([4096, 3, 4, 0, 5, 2]) == "hello world"
    assert proc([4096, 3, 4, 5], lstrip=False) == " hello world"
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"\xff\xff\xff")
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        dataclasses.replace(BUNDLE, _sp_model_path=str(bad)).get_token_processor()


def _tiny():
    return emformer_rnnt_model(
        input_dim=80, encoding_dim=16, num_symbols=6, segment_length=16,
        right_context_length=4, time_reduction_input_dim=8, time_reduction_stride=4,
        transformer_num_heads=2, transformer_ffn_dim=16, transformer_num_layers=1,
        transformer_dropout=0.0, transformer_activation="gelu",
        transformer_left_context_length=3, transformer_max_memory_size=0,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True,
        symbol_embedding_dim=8, num_lstm_layers=1, lstm_layer_norm=True,
        lstm_layer_norm_epsilon=1e-3, lstm_dropout=0.0)


def test_decoder_from_a_checkpoint_and_end_to_end(tmp_path, bundle, ref):
    ember.manual_seed(0)
    src = _tiny()
    ckpt = tmp_path / "tiny_rnnt.pt"
    ember.save(src.state_dict(), str(ckpt))
    b = dataclasses.replace(bundle, _path="file://" + str(ckpt), _rnnt_factory_func=_tiny,
                            _blank=5)
    decoder = b.get_decoder(dl_kwargs={"model_dir": str(tmp_path / "hub"), "progress": False})
    assert isinstance(decoder, RNNTBeamSearch) and not decoder.model.training
    for k, v in src.state_dict().items():
        np.testing.assert_array_equal(decoder.model.state_dict()[k].numpy(), v.numpy())
    with ember.no_grad():
        features, length = b.get_feature_extractor()(ember.tensor(ref["features/waveform"]))
    hyps = decoder(features, length, 2)
    assert len(hyps) == 2 and hyps[0][0][0] == 5 and all(0 <= t < 6 for t in hyps[0][0])
