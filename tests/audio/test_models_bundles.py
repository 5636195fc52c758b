"""ember.audio.pipelines' wav2vec2/HuBERT bundles: records equal torchaudio's (manifest),
get_model() through ember.hub on checkpoints the test writes (a torch .pth in torchaudio's
published layout: legacy weight-norm keys, fairseq's extra CTC rows), hashing, offline mode,
and the runnable docstring examples of ember.audio.models and pipelines."""
import doctest
import importlib
import os
import sys

import numpy as np
import pytest

import ember
from ember import hub
from ember.audio import pipelines
from ember.audio.pipelines import Wav2Vec2ASRBundle, Wav2Vec2Bundle

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
from audio_models_util import (MANIFEST, REF, TINY, seeded_inputs, shapes,  # noqa: E402
                               tiny_model)

# torchaudio bundles not provided: MMS_FA (forced alignment: tokenizer and aligner)
NOT_PROVIDED = {"MMS_FA"}
TINY_PARAMS = TINY["w2v_post"][1]


@pytest.mark.parametrize("name", sorted(MANIFEST["bundles"]))
def test_bundle_records_equal_torchaudio(name):
    expected = MANIFEST["bundles"][name]
    if name in NOT_PROVIDED:
        assert not hasattr(pipelines, name)
        return
    b = getattr(pipelines, name)
    assert type(b).__name__ == expected["class"]
    params = dict(b._params, extractor_conv_layer_config=[
        list(t) for t in b._params["extractor_conv_layer_config"]])
    assert params == expected["params"] and list(params) == list(expected["params"])
    assert b.url == "https://download.pytorch.org/torchaudio/models/" + expected["path"]
    assert (b.sample_rate, b._normalize_waveform, b._model_type) == (
        expected["sample_rate"], expected["normalize_waveform"], expected["model_type"])
    if "labels" in expected:
        assert list(b.get_labels()) == expected["labels"]
        assert list(b._remove_aux_axis) == expected["remove_aux_axis"]


def test_meta_counts_parameters_without_allocating():
    full = MANIFEST["full"]
    assert pipelines.WAV2VEC2_BASE.meta["num_params"] == full["wav2vec2_base"]["num_params"]
    assert pipelines.WAV2VEC2_ASR_BASE_960H.meta["num_params"] == \
        full["wav2vec2_base_aux"]["num_params"]
    assert pipelines.WAVLM_BASE.meta["num_params"] == full["wavlm_base"]["num_params"]
    meta = pipelines.HUBERT_ASR_LARGE.meta
    assert meta["sha256"] is None and "no sha256" in meta["_hash_note"]
    assert pipelines.HUBERT_ASR_LARGE.get_labels(blank="<b>")[:2] == ("<b>", "|")


def _published_layout(torch):
    """The tiny model's seeded weights as torchaudio's files hold them: positional conv as
    weight_g/weight_v, 3 extra CTC rows (fairseq's <s>, <pad>, </s>) at 1..3."""
    state = {k: v.numpy().copy() for k, v in tiny_model("w2v_post").state_dict().items()}
    prefix = "encoder.transformer.pos_conv_embed.conv."
    state[prefix + "weight_g"] = state.pop(prefix + "parametrizations.weight.original0")
    state[prefix + "weight_v"] = state.pop(prefix + "parametrizations.weight.original1")
    for key in ("aux.weight", "aux.bias"):
        junk = np.full((3,) + state[key].shape[1:], 7.0, np.float32)
        state[key] = np.concatenate([state[key][:1], junk, state[key][1:]])
    return {k: torch.from_numpy(v) for k, v in state.items()}


def _tiny_bundle(path, normalize, sha256=None):
    return Wav2Vec2ASRBundle(path, dict(TINY_PARAMS), 16000, normalize, "Wav2Vec2",
                             _labels=tuple("|abc"), _sha256=sha256)


@pytest.mark.parametrize("normalize", [False, True])
def test_get_model_from_the_cache(tmp_path, monkeypatch, normalize):
    torch = pytest.importorskip("torch")
    cache = tmp_path / "hub"
    (cache / "checkpoints").mkdir(parents=True)
    torch.save(_published_layout(torch), cache / "checkpoints" / "tiny_asr.pth")
    monkeypatch.setenv("EMBER_OFFLINE", "1")   # served from the cache, never the network
    monkeypatch.setattr(hub, "_state", {"dir": str(cache)})
    bundle = _tiny_bundle("tiny_asr.pth", normalize)
    model = bundle.get_model()
    assert not model.training and len(bundle.get_labels()) == TINY_PARAMS["aux_num_out"]
    inputs = seeded_inputs(TINY["w2v_post"][2])
    wave, lengths = ember.tensor(inputs["waveforms"]), ember.tensor(inputs["lengths"])
    with ember.no_grad():
        out, out_lengths = model(wave, lengths)
        feats, _ = model.extract_features(wave, lengths)
    if not normalize:
        np.testing.assert_allclose(out.numpy(), REF["w2v_post/out0"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(feats[-1].numpy(), REF["w2v_post/feat1"], rtol=1e-4,
                                   atol=1e-5)
    else:   # the whole input standardised first, as torchaudio's bundles do
        x = inputs["waveforms"].astype(np.float64)
        norm = ((x - x.mean()) / np.sqrt(x.var() + 1e-5)).astype(np.float32)
        with ember.no_grad():
            want, _ = tiny_model("w2v_post")(ember.tensor(norm), lengths)
        np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
        assert list(model.state_dict())[0].startswith("model.")
    assert out_lengths.tolist() == REF["w2v_post/out1"].tolist()


def test_download_checks_the_sha256(tmp_path):
    torch = pytest.importorskip("torch")
    import hashlib

    src = tmp_path / "src" / "tiny_asr.pth"
    src.parent.mkdir()
    torch.save(_published_layout(torch), src)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    bad = _tiny_bundle("file://" + str(src), False, sha256="0" * 64)
    with pytest.raises(hub.HashMismatchError):
        bad.get_model(dl_kwargs={"model_dir": str(tmp_path / "a"), "progress": False})
    assert not (tmp_path / "a" / "tiny_asr.pth").exists()
    good = _tiny_bundle("file://" + str(src), False, sha256=digest)
    model = good.get_model(dl_kwargs={"model_dir": str(tmp_path / "b"), "progress": False})
    assert shapes(model)["aux.weight"] == [TINY_PARAMS["aux_num_out"], 16]


def test_offline_and_uncached_fails_fast_naming_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_OFFLINE", "1")
    monkeypatch.setattr(hub, "_state", {"dir": str(tmp_path)})
    with pytest.raises(hub.OfflineError, match="wav2vec2_fairseq_base_ls960_asr_ls960.pth"):
        pipelines.WAV2VEC2_ASR_BASE_960H.get_model()


def test_checkpoint_without_ctc_head_is_named(tmp_path):
    torch = pytest.importorskip("torch")
    state = _published_layout(torch)
    del state["aux.weight"], state["aux.bias"]
    torch.save(state, tmp_path / "headless.pth")
    bundle = _tiny_bundle("headless.pth", False)
    with pytest.raises(KeyError, match="aux.weight"):
        bundle.get_model(dl_kwargs={"model_dir": str(tmp_path)})


def test_base_bundle_has_no_labels_and_rejects_other_model_types():
    assert isinstance(pipelines.HUBERT_BASE, Wav2Vec2Bundle)
    assert not hasattr(pipelines.HUBERT_BASE, "get_labels")
    other = Wav2Vec2Bundle("x.pth", dict(TINY_PARAMS), 16000, False, "Whisper")
    with pytest.raises(ValueError, match="Whisper"):
        other.get_model()


@pytest.mark.parametrize("name", ["ember.audio.models.wav2vec2", "ember.audio.models.conformer",
                                  "ember.audio.models.deepspeech",
                                  "ember.audio.models.wav2letter", "ember.audio.pipelines",
                                  "ember.audio.pipelines._wav2vec2"])
def test_docstring_examples(name):
    res = doctest.testmod(importlib.import_module(name),
                          optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
