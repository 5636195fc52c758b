"""import_huggingface_model against transformers' own forward: tiny random wav2vec2 (both
layouts, with and without the CTC head), HuBERT and WavLM models built in the test, converted
from the module and from (config dict, state dict), outputs compared in eval mode."""
import numpy as np
import pytest

import ember
from ember.audio.models import Wav2Vec2Model, import_huggingface_model

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

_SMALL = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
              conv_dim=(8, 8, 8), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 2),
              num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=4)

CASES = {
    "wav2vec2_ctc": ("Wav2Vec2Config", "Wav2Vec2ForCTC", dict(vocab_size=7)),
    "wav2vec2_stable": ("Wav2Vec2Config", "Wav2Vec2Model",
                        dict(feat_extract_norm="layer", do_stable_layer_norm=True,
                             conv_bias=True, num_conv_pos_embeddings=7)),
    "hubert_ctc": ("HubertConfig", "HubertForCTC", dict(vocab_size=9)),
    "wavlm": ("WavLMConfig", "WavLMModel", dict(num_buckets=8, max_bucket_distance=12)),
    "wavlm_stable_ctc": ("WavLMConfig", "WavLMForCTC",
                         dict(feat_extract_norm="layer", do_stable_layer_norm=True,
                              num_buckets=16, max_bucket_distance=30, vocab_size=5)),
}


def _hf(name):
    cfg_cls, model_cls, extra = CASES[name]
    torch.manual_seed(0)
    cfg = getattr(transformers, cfg_cls)(**{**_SMALL, **extra})
    model = getattr(transformers, model_cls)(cfg).eval()
    with torch.no_grad():   # non-trivial norms and biases
        for p in model.parameters():
            if p.ndim == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model


def _hf_out(model, wave):
    with torch.no_grad():
        out = model(torch.from_numpy(wave))
    return (out.logits if hasattr(out, "logits") else out.last_hidden_state).numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_transformers(name):
    hf = _hf(name)
    wave = (0.3 * np.random.default_rng(0).standard_normal((2, 800))).astype(np.float32)
    want = _hf_out(hf, wave)
    model = import_huggingface_model(hf).eval()
    assert isinstance(model, Wav2Vec2Model)
    assert (model.aux is not None) == name.endswith("ctc")
    with ember.no_grad():
        got, lengths = model(ember.tensor(wave))
    assert lengths is None
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    # the same from config.json contents + a plain numpy state dict (no torch needed)
    state = {k: v.numpy() for k, v in hf.state_dict().items()}
    again = import_huggingface_model(hf.config.to_dict(), state).eval()
    with ember.no_grad():
        np.testing.assert_array_equal(again(ember.tensor(wave))[0].numpy(), got.numpy())


def test_bad_configs_are_named():
    hf = _hf("wav2vec2_ctc")
    cfg = hf.config.to_dict()
    state = {k: v.numpy() for k, v in hf.state_dict().items()}
    with pytest.raises(ValueError, match="model_type"):
        import_huggingface_model(dict(cfg, model_type="whisper"), state)
    with pytest.raises(ValueError, match="hidden_act"):
        import_huggingface_model(dict(cfg, hidden_act="relu"), state)
    with pytest.raises(ValueError, match="state_dict too"):
        import_huggingface_model(cfg)
