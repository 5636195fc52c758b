"""BERT-family encoders against Hugging Face transformers: seeded random weights saved with
``save_pretrained`` load unchanged through ``from_pretrained`` and give the same hidden states,
pooler outputs, logits and gradients, with attention masks and padding."""
import json

import numpy as np
import pytest

import ember
from ember.text import models as M

torch = pytest.importorskip("torch")
T = pytest.importorskip("transformers")

SMALL = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=48, max_position_embeddings=40)


def rel(a, b, where=None):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if where is not None:
        a, b = a[where], b[where]
    return float(np.abs(a - b).max() / np.abs(b).max())


def hf_model(kind, seed=0, head=False, **over):
    torch.manual_seed(seed)
    kw = dict(SMALL, **over)
    if kind == "bert":
        cfg = T.BertConfig(**kw)
        cls = T.BertForSequenceClassification if head else T.BertModel
    elif kind == "roberta":
        cfg = T.RobertaConfig(**dict(dict(pad_token_id=1, type_vocab_size=1), **kw))
        cls = T.RobertaForSequenceClassification if head else T.RobertaModel
    else:
        cfg = T.XLMRobertaConfig(**dict(dict(pad_token_id=1, type_vocab_size=1), **kw))
        cls = T.XLMRobertaForSequenceClassification if head else T.XLMRobertaModel
    if head:
        cfg.num_labels = 3
    return cls(cfg).eval()


def batch(pad, seed=0, n=4, length=11):
    """Random ids with right padding of three different lengths (one row unpadded)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, SMALL["vocab_size"], (n, length))
    lens = [length, 7, 3, 9][:n]
    mask = (np.arange(length)[None] < np.array(lens)[:, None]).astype(np.int64)
    ids[mask == 0] = pad
    return ids, mask


def saved(tmp_path, hf):
    hf.save_pretrained(tmp_path)
    return tmp_path


@pytest.mark.parametrize("kind", ["bert", "roberta", "xlmr"])
def test_hidden_states_match_transformers(tmp_path, kind):
    hf = hf_model(kind)
    model, tok = M.from_pretrained(saved(tmp_path, hf))
    assert tok is None and not model.training
    ids, mask = batch(hf.config.pad_token_id)
    types = np.random.default_rng(1).integers(0, 2, ids.shape) if kind == "bert" else None
    with torch.no_grad():
        ref = hf(torch.tensor(ids), attention_mask=torch.tensor(mask),
                 token_type_ids=None if types is None else torch.tensor(types))
    with ember.no_grad():
        out = model(ember.tensor(ids), attention_mask=ember.tensor(mask),
                    token_type_ids=None if types is None else ember.tensor(types))
    h, r = out.last_hidden_state.numpy(), ref.last_hidden_state.numpy()
    assert h.shape == r.shape
    assert rel(h, r, mask.astype(bool)) < 1e-4       # the tokens
    assert rel(h, r) < 1e-4                           # padding positions are defined as HF's
    assert rel(out.pooler_output.numpy(), ref.pooler_output.numpy()) < 1e-4


def test_roberta_positions_skip_padding():
    ids = ember.tensor([[0, 5, 6, 2, 1, 1], [0, 7, 2, 1, 1, 1]])
    assert M.roberta_position_ids(ids, 1).tolist() == [[2, 3, 4, 5, 1, 1], [2, 3, 4, 1, 1, 1]]


def test_gelu_new_activation_and_eps(tmp_path):
    hf = hf_model("bert", hidden_act="gelu_new", layer_norm_eps=1e-5)
    model, _ = M.from_pretrained(saved(tmp_path, hf))
    ids, mask = batch(0, seed=3)
    with torch.no_grad():
        r = hf(torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state.numpy()
    with ember.no_grad():
        h = model(ember.tensor(ids), ember.tensor(mask))[0].numpy()
    assert rel(h, r, mask.astype(bool)) < 1e-4


def test_gelu_variants_differ():
    """The erf and tanh forms are different functions: a config that names the wrong one
    would not pass the parity tests above."""
    x = ember.linspace(-4, 4, 101)
    a = M._config.activation("gelu")(x).numpy()
    b = M._config.activation("gelu_new")(x).numpy()
    assert np.abs(a - b).max() > 1e-4


@pytest.mark.parametrize("kind", ["bert", "roberta", "xlmr"])
def test_sequence_classification_logits(tmp_path, kind):
    hf = hf_model(kind, head=True)
    model, _ = M.from_pretrained(saved(tmp_path, hf))
    expect = M.BertForSequenceClassification if kind == "bert" else \
        M.RobertaForSequenceClassification
    assert type(model) is expect and model.num_classes == 3
    ids, mask = batch(hf.config.pad_token_id, seed=5)
    with torch.no_grad():
        r = hf(torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    with ember.no_grad():
        lg = model(ember.tensor(ids), ember.tensor(mask)).numpy()
    assert lg.shape == (4, 3) and rel(lg, r) < 1e-4


def test_task_checkpoint_into_base_model_and_back(tmp_path):
    """A classifier's ``bert.``-prefixed checkpoint loads into the bare encoder (the head's
    keys are left unused), and a bare checkpoint into the classifier's encoder."""
    hf = hf_model("bert", head=True)
    sd = {k: v.numpy() for k, v in hf.state_dict().items()}
    cfg = M.EncoderConfig.from_dict(hf.config.to_dict())
    base = M.EncoderModel(cfg).eval()
    res = M.load_hf_state_dict(base, sd)
    assert sorted(res.unused) == ["classifier.bias", "classifier.weight"]
    ids, mask = batch(0)
    with torch.no_grad():
        r = hf.bert(torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state
    with ember.no_grad():
        h = base(ember.tensor(ids), ember.tensor(mask))[0]
    assert rel(h.numpy(), r.numpy()) < 1e-4
    clf = M.BertForSequenceClassification(cfg, num_classes=3)
    with pytest.raises(RuntimeError, match="classifier.weight"):
        M.load_hf_state_dict(clf, {k[5:]: v for k, v in sd.items() if k.startswith("bert.")})
    M.load_hf_state_dict(clf.bert, base.state_dict())
    assert np.array_equal(clf.bert.pooler.dense.weight.detach().numpy(),
                          sd["bert.pooler.dense.weight"])


def test_pytorch_model_bin_with_old_layer_norm_names(tmp_path):
    """``pytorch_model.bin`` (read without torch) with the LayerNorm ``gamma``/``beta`` names
    and the ``position_ids`` buffer of older checkpoints."""
    hf = hf_model("bert")
    sd = {}
    for k, v in hf.state_dict().items():
        k = "bert." + k
        if "LayerNorm" in k:
            k = k.replace(".weight", ".gamma").replace(".bias", ".beta")
        sd[k] = v
    sd["bert.embeddings.position_ids"] = torch.arange(40)[None]
    torch.save(sd, tmp_path / "pytorch_model.bin")
    (tmp_path / "config.json").write_text(hf.config.to_json_string())
    model, _ = M.from_pretrained(tmp_path)
    ids, mask = batch(0)
    with torch.no_grad():
        r = hf(torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state
    with ember.no_grad():
        h = model(ember.tensor(ids), ember.tensor(mask))[0]
    assert rel(h.numpy(), r.numpy()) < 1e-4


def test_sharded_safetensors(tmp_path):
    hf = hf_model("roberta")
    hf.save_pretrained(tmp_path, max_shard_size="20KB")
    assert (tmp_path / "model.safetensors.index.json").exists()
    model, _ = M.from_pretrained(tmp_path)
    ids, mask = batch(1)
    with torch.no_grad():
        r = hf(torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state
    with ember.no_grad():
        h = model(ember.tensor(ids), ember.tensor(mask))[0]
    assert rel(h.numpy(), r.numpy(), mask.astype(bool)) < 1e-4


def test_checkpoint_without_pooler_drops_it(tmp_path):
    hf = hf_model("roberta")
    sd = {k: v.numpy() for k, v in hf.state_dict().items() if not k.startswith("pooler.")}
    model = M.EncoderModel(M.EncoderConfig.from_dict(hf.config.to_dict()))
    with pytest.warns(UserWarning, match="no pooler"):
        M.load_hf_state_dict(model, sd)
    assert model.pooler is None
    with ember.no_grad():
        assert model(ember.tensor([[0, 5, 2]])).pooler_output is None


def test_missing_weights_are_an_error():
    hf = hf_model("bert")
    sd = {k: v.numpy() for k, v in hf.state_dict().items() if "layer.1.output.dense" not in k}
    model = M.EncoderModel(M.EncoderConfig.from_dict(hf.config.to_dict()))
    with pytest.raises(RuntimeError, match=r"encoder\.layer\.1\.output\.dense\.weight"):
        M.load_hf_state_dict(model, sd)


def test_unknown_model_type_is_named(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama",
                                                      "hidden_size": 8}))
    with pytest.raises(ValueError, match=r"'llama'.*bert, roberta, xlm-roberta, gpt2"):
        M.from_pretrained(tmp_path)


def test_gradients_match_transformers(tmp_path):
    """Autograd through embeddings, masked attention, GELU and LayerNorm: the gradients of
    a weighted sum of the hidden states equal torch's (eval mode: no dropout)."""
    hf = hf_model("roberta", seed=4)
    model, _ = M.from_pretrained(saved(tmp_path, hf))
    ids, mask = batch(1, seed=2)
    w = np.random.default_rng(7).standard_normal((4, 11, 32)).astype(np.float32)
    (hf(torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state *
     torch.tensor(w)).sum().backward()
    (model(ember.tensor(ids), ember.tensor(mask))[0] * ember.tensor(w)).sum().backward()
    named = dict(model.named_parameters())
    for k, p in hf.named_parameters():
        if p.grad is None or k.startswith("pooler."):
            continue
        g = named[k].grad
        assert g is not None, k
        scale = max(float(p.grad.abs().max()), 1e-4)   # key biases: gradient 0
        assert float(np.abs(g.numpy() - p.grad.numpy()).max()) / scale < 1e-4, k


def test_train_mode_dropout_changes_outputs():
    cfg = M.EncoderConfig(**SMALL)
    model = M.EncoderModel(cfg)
    ids = ember.tensor(batch(0)[0])
    with ember.no_grad():
        a, b = model(ids)[0].numpy(), model(ids)[0].numpy()
        model.eval()
        c, d = model(ids)[0].numpy(), model(ids)[0].numpy()
    assert not np.allclose(a, b) and np.array_equal(c, d)


class LoopLayout:
    """A padding-free layout written for this test: sequences packed back to back, attention
    run per sequence. The encoder's ``forward_tokens`` takes it unchanged."""

    def __init__(self, lengths):
        self.offsets = np.concatenate([[0], np.cumsum(lengths)])

    def attend(self, q, k, v, num_heads, dropout_p=0.0):
        spans = [(int(lo), int(hi)) for lo, hi in zip(self.offsets[:-1], self.offsets[1:])]
        return ember.cat([M.PaddedBatch(1, hi - lo).attend(q[lo:hi], k[lo:hi], v[lo:hi],
                                                           num_heads)
                          for lo, hi in spans], 0)


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_packed_tokens_through_a_custom_layout(kind):
    """Per-token work on a (tokens, d) view with attention behind a layout: packed sequences
    give the padded path's states on the valid tokens (the slot for a jagged path)."""
    over = {} if kind == "bert" else dict(model_type="roberta", pad_token_id=1,
                                          type_vocab_size=1)
    model = M.EncoderModel(M.EncoderConfig(**dict(SMALL, **over))).eval()
    pad = model.config.pad_token_id
    ids, mask = batch(pad, seed=9)
    with ember.no_grad():
        padded = model(ember.tensor(ids), ember.tensor(mask))[0].numpy()
        lengths = mask.sum(1)
        flat = ember.tensor(ids[mask.astype(bool)])
        pos = model.positions(ember.tensor(ids)).numpy()[mask.astype(bool)]
        packed = model.forward_tokens(flat, ember.tensor(pos), ember.zeros_like(flat),
                                      LoopLayout(lengths)).numpy()
    assert rel(packed, padded[mask.astype(bool)]) < 1e-5


def test_too_long_input_is_an_error():
    model = M.EncoderModel(M.EncoderConfig(**dict(SMALL, model_type="roberta",
                                                  pad_token_id=1))).eval()
    with pytest.raises(ValueError, match="position embeddings"):
        model(ember.zeros((1, 39), dtype=ember.int64))


def test_config_round_trip_and_errors():
    cfg = M.EncoderConfig(**SMALL)
    assert M.EncoderConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="multiple of num_attention_heads"):
        M.EncoderConfig(hidden_size=30, num_attention_heads=4)
    with pytest.raises(ValueError, match="unsupported activation 'mish'"):
        M.EncoderConfig(hidden_act="mish")
    with pytest.raises(ValueError, match="relative_key"):
        M.EncoderConfig(position_embedding_type="relative_key")


@pytest.mark.cuda
def test_encoder_on_cuda_matches_cpu(tmp_path):
    hf = hf_model("roberta")
    model, _ = M.from_pretrained(saved(tmp_path, hf))
    ids, mask = batch(1)
    with ember.no_grad():
        cpu = model(ember.tensor(ids), ember.tensor(mask))[0].numpy()
        model.to("cuda")
        gpu = model(ember.tensor(ids, device="cuda"), ember.tensor(mask, device="cuda"))[0]
    assert rel(gpu.cpu().numpy(), cpu) < 1e-4
