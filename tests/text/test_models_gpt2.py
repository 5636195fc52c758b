"""GPT-2 against Hugging Face transformers: logits from a ``save_pretrained`` checkpoint, left
padding, the KV cache (incremental logits equal full re-runs; cached greedy generation equals
uncached and transformers' greedy ``generate``), sampling controls and ``eos``."""
import numpy as np
import pytest

import ember
from ember.text import models as M

torch = pytest.importorskip("torch")
T = pytest.importorskip("transformers")

V = 61
EOS = 60


def rel(a, b, where=None):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if where is not None:
        a, b = a[where], b[where]
    return float(np.abs(a - b).max() / np.abs(b).max())


def hf_gpt2(seed=0, lm=True, **over):
    torch.manual_seed(seed)
    cfg = T.GPT2Config(**dict(dict(vocab_size=V, n_embd=32, n_layer=2, n_head=4,
                                   n_positions=48, bos_token_id=EOS, eos_token_id=EOS), **over))
    return (T.GPT2LMHeadModel(cfg) if lm else T.GPT2Model(cfg)).eval()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    hf = hf_gpt2()
    d = tmp_path_factory.mktemp("gpt2")
    hf.save_pretrained(d)
    model, _ = M.from_pretrained(d)
    return hf, model


def ids_of(seed, shape):
    return np.random.default_rng(seed).integers(0, V - 1, shape)


def test_logits_match_transformers(pair):
    hf, model = pair
    assert isinstance(model, M.GPT2LMHeadModel)
    assert model.lm_head.weight is model.transformer.wte.weight
    ids = ids_of(0, (3, 13))
    with torch.no_grad():
        r = hf(torch.tensor(ids)).logits.numpy()
    with ember.no_grad():
        lg = model(ember.tensor(ids)).numpy()
    assert lg.shape == (3, 13, V) and rel(lg, r) < 1e-4


def test_base_model_checkpoint_and_inverse_layer_scaling(tmp_path):
    """A ``GPT2Model`` checkpoint (keys without ``transformer.``, no ``lm_head``) loads into
    the LM model with the head tied; ``scale_attn_by_inverse_layer_idx`` is honoured."""
    hf = hf_gpt2(seed=3, lm=False, scale_attn_by_inverse_layer_idx=True)
    hf.save_pretrained(tmp_path)
    model, _ = M.from_pretrained(tmp_path)
    ids = ids_of(1, (2, 9))
    with torch.no_grad():
        h = hf(torch.tensor(ids)).last_hidden_state
        r = (h @ hf.wte.weight.T).numpy()
    with ember.no_grad():
        lg = model(ember.tensor(ids)).numpy()
    assert rel(lg, r) < 1e-4


def test_old_checkpoint_buffers_are_ignored(tmp_path):
    """OpenAI-converted checkpoints carry ``h.N.attn.bias``/``masked_bias`` buffers."""
    hf = hf_gpt2(seed=5, lm=False)
    sd = dict(hf.state_dict())
    for i in range(2):
        sd[f"h.{i}.attn.bias"] = torch.tril(torch.ones(48, 48))[None, None]
        sd[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    torch.save(sd, tmp_path / "pytorch_model.bin")
    (tmp_path / "config.json").write_text(hf.config.to_json_string())
    model, _ = M.from_pretrained(tmp_path)
    ids = ids_of(2, (1, 7))
    with torch.no_grad():
        r = hf(torch.tensor(ids)).last_hidden_state.numpy()
    with ember.no_grad():
        h = model.transformer(ember.tensor(ids)).numpy()
    assert rel(h, r) < 1e-4


def left_padded(seed=4):
    ids = ids_of(seed, (3, 10))
    lens = np.array([10, 6, 3])
    mask = (np.arange(10)[None] >= 10 - lens[:, None]).astype(np.int64)
    ids[mask == 0] = EOS
    pos = np.maximum(np.cumsum(mask, 1) - 1, 0)
    return ids, mask, pos


def test_left_padding_matches_transformers(pair):
    hf, model = pair
    ids, mask, pos = left_padded()
    with torch.no_grad():
        r = hf(torch.tensor(ids), attention_mask=torch.tensor(mask),
               position_ids=torch.tensor(pos)).logits.numpy()
    with ember.no_grad():
        lg = model(ember.tensor(ids), ember.tensor(mask), ember.tensor(pos)).numpy()
    assert rel(lg, r, mask.astype(bool)) < 1e-4


def test_kv_cache_step_logits_equal_full_forward(pair):
    _, model = pair
    ids = ids_of(6, (2, 12))
    with ember.no_grad():
        full = model(ember.tensor(ids)).numpy()
        cache = model.new_cache()
        parts = [model(ember.tensor(ids[:, :5]), cache=cache).numpy()]
        for t in range(5, 12):                       # one position per call
            parts.append(model(ember.tensor(ids[:, t:t + 1]), cache=cache).numpy())
    assert cache.length == 12
    assert rel(np.concatenate(parts, 1), full) < 1e-5


def test_kv_cache_grows_past_its_capacity(pair):
    _, model = pair
    ids = ids_of(7, (1, 20))
    with ember.no_grad():
        full = model(ember.tensor(ids)).numpy()
        cache = M.KVCache(2, capacity=3)
        steps = [model(ember.tensor(ids[:, t:t + 1]), cache=cache).numpy() for t in range(20)]
    assert rel(np.concatenate(steps, 1), full) < 1e-5


def test_greedy_generation_cache_equals_no_cache_equals_transformers(pair):
    hf, model = pair
    ids = ids_of(8, (2, 5))
    a = model.generate(ember.tensor(ids), max_new_tokens=15, temperature=0).numpy()
    b = model.generate(ember.tensor(ids), max_new_tokens=15, temperature=0,
                       use_cache=False).numpy()
    with torch.no_grad():
        r = hf.generate(torch.tensor(ids), attention_mask=torch.ones(2, 5, dtype=torch.long),
                        max_new_tokens=15, do_sample=False, pad_token_id=EOS,
                        eos_token_id=None).numpy()
    assert a.shape == (2, 20)
    assert np.array_equal(a, b) and np.array_equal(a, r)
    assert len(set(a[:, 5:].ravel().tolist())) > 1      # not a degenerate repetition


def test_greedy_generation_with_left_padding(pair):
    hf, model = pair
    ids, mask, _ = left_padded(seed=9)
    a = model.generate(ember.tensor(ids), max_new_tokens=8, temperature=0,
                       attention_mask=ember.tensor(mask)).numpy()
    b = model.generate(ember.tensor(ids), max_new_tokens=8, temperature=0,
                       attention_mask=ember.tensor(mask), use_cache=False).numpy()
    with torch.no_grad():
        r = hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=8,
                        do_sample=False, pad_token_id=EOS, eos_token_id=None).numpy()
    assert np.array_equal(a, b) and np.array_equal(a, r)


def test_eos_finishes_sequences(pair):
    _, model = pair
    ids = ids_of(10, (2, 4))
    greedy = model.generate(ember.tensor(ids), max_new_tokens=12, temperature=0).numpy()
    stop = int(greedy[0, 6])                            # the 3rd token row 0 generates
    out = model.generate(ember.tensor(ids), max_new_tokens=12, temperature=0,
                         eos=stop).numpy()
    row0 = out[0, 4:].tolist()
    first = row0.index(stop)
    assert first <= 2 and all(t == stop for t in row0[first:])
    hit = [r[4:].tolist() for r in out]
    if all(stop in r for r in hit):                     # both finished: stopped early
        assert out.shape[1] < 16
    else:
        assert out.shape[1] == 16


def test_sampling_is_seeded_and_bounded(pair):
    _, model = pair
    ids = ember.tensor(ids_of(11, (2, 4)))
    a = model.generate(ids, max_new_tokens=10, temperature=1.0, seed=123).numpy()
    b = model.generate(ids, max_new_tokens=10, temperature=1.0, seed=123).numpy()
    c = model.generate(ids, max_new_tokens=10, temperature=1.0, seed=124).numpy()
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    greedy = model.generate(ids, max_new_tokens=10, temperature=0).numpy()
    assert np.array_equal(model.generate(ids, max_new_tokens=10, top_k=1, seed=5).numpy(),
                          greedy)
    assert np.array_equal(model.generate(ids, max_new_tokens=10, top_p=1e-6,
                                         seed=5).numpy(), greedy)
    one = model.generate(ember.tensor(ids_of(11, (4,))), max_new_tokens=3, temperature=0)
    assert one.shape == (7,)


def test_sample_next_respects_top_k_and_top_p():
    rng = np.random.default_rng(0)
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]] * 4000, dtype=np.float32))
    k2 = M.sample_next(logits, 1.0, top_k=2, rng=rng)
    assert set(k2.tolist()) == {0, 1}
    assert abs((k2 == 0).mean() - 0.5 / 0.8) < 0.03
    p = M.sample_next(logits, 1.0, top_p=0.7, rng=rng)     # 0.5 + 0.3 reach 0.7
    assert set(p.tolist()) == {0, 1}
    allp = M.sample_next(logits, 1.0, rng=rng)
    freq = np.bincount(allp, minlength=4) / len(allp)
    assert np.abs(freq - [0.5, 0.3, 0.15, 0.05]).max() < 0.03
    cold = M.sample_next(logits, 0.05, rng=rng)              # low temperature: near argmax
    assert (cold == 0).mean() > 0.99


def test_positions_limit():
    model = M.GPT2LMHeadModel(M.GPT2Config(vocab_size=V, n_embd=16, n_layer=1, n_head=2,
                                           n_positions=8))
    with pytest.raises(ValueError, match="n_positions"):
        model.generate(ember.tensor([[1, 2, 3]]), max_new_tokens=6)


def test_generation_step_costs_one_position(pair, monkeypatch):
    """With the cache, each step after the prompt feeds exactly one position per sequence."""
    _, model = pair
    seen = []
    orig = M.GPT2Model.forward

    def spy(self, input_ids, *a, **k):
        seen.append(tuple(input_ids.shape))
        return orig(self, input_ids, *a, **k)

    monkeypatch.setattr(M.GPT2Model, "forward", spy)
    model.generate(ember.tensor(ids_of(12, (2, 6))), max_new_tokens=5, temperature=0)
    assert seen == [(2, 6)] + [(2, 1)] * 4


@pytest.mark.cuda
def test_generation_on_cuda_matches_cpu(pair):
    _, model = pair
    ids = ids_of(13, (2, 5))
    cpu = model.generate(ember.tensor(ids), max_new_tokens=6, temperature=0).numpy()
    gpu = model.to("cuda").generate(ember.tensor(ids, device="cuda"), max_new_tokens=6,
                                    temperature=0)
    model.to("cpu")
    assert np.array_equal(gpu.cpu().numpy(), cpu)
