"""The padding-free (jagged) encoder against the padded one: on the valid tokens, hidden
states, pooler outputs, head logits, sentence embeddings and the gradients of every parameter
agree (<= 1e-5 relative, float32), for every way the layout can group sequences (one call per
length, padded groups of similar lengths, one padded group, sequences reordered or not);
plus the grouping plan, the errors, and one direct check against transformers."""
import numpy as np
import pytest

import ember
from ember.jagged import JaggedTensor, as_jagged
from ember.text import models as M
from ember.text.models import _jagged as J

SMALL = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=48, max_position_embeddings=40)
LENGTHS = [5, 11, 3, 5, 1, 7, 3, 6, 2, 11]

# layout plans, forced through the cost model (each test checks the plan it got)
PLANS = {
    "default": None,
    "per_length": dict(call=0.0, padded=1e15),                  # one call per length
    "merged": dict(call=300.0, padded=0.0, pad_element=0.0, score=1.0),  # similar lengths
    "one_group": dict(call=1e15),                               # a single padded group
}


def rel(a, b, floor=1e-30):
    """max |a - b| relative to max |b| (or to ``floor`` when larger)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), floor))


def check_grads(model, ref):
    """Each parameter's gradient against ``ref`` (name -> array): <= 1e-5 relative. The
    key biases' gradients are 0 in exact arithmetic (softmax ignores a shift of all scores):
    their rounding noise is measured against a millionth of the largest gradient."""
    floor = 1e-6 * max(float(np.abs(r).max()) for r in ref.values())
    for k, p in model.named_parameters():
        assert p.grad is not None, k
        assert rel(p.grad.numpy(), ref[k], floor=floor) < 1e-5, k


def config(kind, **over):
    extra = {} if kind == "bert" else dict(model_type="roberta" if kind == "roberta" else
                                           "xlm-roberta", pad_token_id=1, type_vocab_size=1)
    return M.EncoderConfig(**dict(SMALL, **extra, **over))


def make_batch(pad, lengths=LENGTHS, seed=0, vocab=97):
    """Sequences of random ids (never ``pad``), their padded form and mask."""
    rng = np.random.default_rng(seed)
    seqs = [rng.integers(3, vocab, n) for n in lengths]
    for s in seqs:
        s[s == pad] = pad + 1
    width = max(lengths)
    ids = np.full((len(lengths), width), pad, np.int64)
    mask = np.zeros((len(lengths), width), np.int64)
    for i, s in enumerate(seqs):
        ids[i, :len(s)], mask[i, :len(s)] = s, 1
    return seqs, ids, mask


def jagged(seqs):
    return JaggedTensor(ember.tensor(np.concatenate(seqs)), lengths=[len(s) for s in seqs])


@pytest.fixture(params=list(PLANS))
def plan(request, monkeypatch):
    costs = PLANS[request.param]
    if costs is not None:
        for k, v in costs.items():
            monkeypatch.setitem(J.GROUP_COSTS, k, v)
    return request.param


def check_plan(name, lengths, heads=4, head_dim=8):
    """The layout the model builds for ``lengths`` is the kind the plan asks for."""
    lay = J.JaggedBatch(lengths, heads, head_dim)
    sizes = [(g.n, g.length, g.template is not None) for g in lay.groups]
    distinct = len(set(lengths))
    if name == "per_length":
        assert len(sizes) == distinct and not any(p for _, _, p in sizes)
        assert lay.perm is not None                     # equal lengths apart in the batch
    elif name == "merged":
        assert any(p for _, _, p in sizes) and 1 < len(sizes) < distinct
    elif name == "one_group":
        assert len(sizes) == 1 and sizes[0][2] and lay.perm is None
    return lay


@pytest.mark.parametrize("kind", ["bert", "roberta", "xlmr"])
def test_forward_equals_padded_on_valid_tokens(kind, plan):
    model = M.EncoderModel(config(kind)).eval()
    pad = model.config.pad_token_id
    seqs, ids, mask = make_batch(pad, seed=1)
    check_plan(plan, LENGTHS)
    types = None
    if kind == "bert":
        types = np.random.default_rng(2).integers(0, 2, ids.shape) * mask
    with ember.no_grad():
        ref = model(ember.tensor(ids), ember.tensor(mask),
                    None if types is None else ember.tensor(types))
        jt_types = None if types is None else as_jagged([t[:len(s)] for t, s in
                                                         zip(types, seqs)])
        out = model(jagged(seqs), token_type_ids=jt_types)
    h = out.last_hidden_state
    assert isinstance(h, JaggedTensor) and h.lengths().tolist() == LENGTHS
    assert h.feature_shape == (32,)
    assert rel(h.values().numpy(), ref.last_hidden_state.numpy()[mask.astype(bool)]) < 1e-5
    assert rel(out.pooler_output.numpy(), ref.pooler_output.numpy()) < 1e-5


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_parameter_gradients_equal_padded(kind, plan):
    """d(sum(w * h over the valid tokens))/d(every parameter), jagged vs padded, plus the
    pooler through a second term."""
    model = M.EncoderModel(config(kind)).eval()
    pad = model.config.pad_token_id
    seqs, ids, mask = make_batch(pad, seed=3)
    check_plan(plan, LENGTHS)
    rng = np.random.default_rng(4)
    w = rng.standard_normal((int(mask.sum()), 32)).astype(np.float32)
    wp = rng.standard_normal((len(LENGTHS), 32)).astype(np.float32)
    grid = np.zeros(ids.shape + (32,), np.float32)
    grid[mask.astype(bool)] = w

    out = model(ember.tensor(ids), ember.tensor(mask))
    ((out[0] * ember.tensor(grid)).sum() + (out[1] * ember.tensor(wp)).sum()).backward()
    ref = {k: p.grad.numpy().copy() for k, p in model.named_parameters()}
    model.zero_grad()
    out = model(jagged(seqs))
    ((out[0].values() * ember.tensor(w)).sum() + (out[1] * ember.tensor(wp)).sum()).backward()
    check_grads(model, ref)


def test_gradients_of_gradients_flow(monkeypatch):
    """The layout is built from differentiable ops: a gradient penalty (the gradient's
    squared norm w.r.t. the embeddings, differentiated again) equals the padded path's."""
    monkeypatch.setitem(J.GROUP_COSTS, "call", 50.0)     # a padded group, a plain one
    monkeypatch.setitem(J.GROUP_COSTS, "padded", 0.0)
    monkeypatch.setitem(J.GROUP_COSTS, "pad_element", 0.0)
    monkeypatch.setitem(J.GROUP_COSTS, "score", 1.0)
    cfg = config("bert", num_hidden_layers=1, hidden_act="tanh")
    lengths = [4, 2, 5, 3, 4]
    check_plan("merged", lengths)
    seqs, ids, mask = make_batch(0, lengths, seed=5)
    w = np.random.default_rng(6).standard_normal((int(mask.sum()), 32)).astype(np.float32)
    grid = np.zeros(ids.shape + (32,), np.float32)
    grid[mask.astype(bool)] = w
    model = M.EncoderModel(cfg, add_pooling_layer=False).eval()
    results = []
    for jag in (False, True):
        model.zero_grad()
        emb = model.embeddings.word_embeddings.weight
        q = model.encoder.layer[0].attention.self.query.weight
        out = model(jagged(seqs))[0].values() * ember.tensor(w) if jag else \
            model(ember.tensor(ids), ember.tensor(mask))[0] * ember.tensor(grid)
        (g,) = ember.autograd.grad(out.sum(), [q], create_graph=True)
        (g * g).sum().backward()
        results.append(emb.grad.numpy().copy())
    assert np.abs(results[0]).max() > 0
    assert rel(results[1], results[0]) < 1e-4


def test_roberta_positions_per_sequence():
    """Positions count per sequence from pad + 1, skipping pad ids inside a sequence exactly
    as the padded rule does."""
    seqs = [np.array([0, 5, 1, 6, 2]), np.array([0, 7]), np.array([0, 1, 1, 8, 9, 2])]
    jt = jagged(seqs)
    got = M.roberta_jagged_position_ids(jt, 1).tolist()
    ids = np.ones((3, 6), np.int64)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s
    want = M.roberta_position_ids(ember.tensor(ids), 1).numpy()
    assert got == [int(want[i, t]) for i, s in enumerate(seqs) for t in range(len(s))]
    assert got[:7] == [2, 3, 1, 4, 5, 2, 3]


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_classification_heads(kind, plan):
    cls = M.BertForSequenceClassification if kind == "bert" else \
        M.RobertaForSequenceClassification
    model = cls(config(kind), num_classes=3).eval()
    seqs, ids, mask = make_batch(model.config.pad_token_id, seed=7)
    check_plan(plan, LENGTHS)
    w = ember.tensor(np.random.default_rng(8).standard_normal((len(LENGTHS), 3))
                     .astype(np.float32))
    (model(ember.tensor(ids), ember.tensor(mask)) * w).sum().backward()
    ref_logits = model(ember.tensor(ids), ember.tensor(mask)).detach().numpy()
    ref = {k: p.grad.numpy().copy() for k, p in model.named_parameters()}
    model.zero_grad()
    logits = model(jagged(seqs))
    assert logits.shape == (len(LENGTHS), 3)
    assert rel(logits.detach().numpy(), ref_logits) < 1e-5
    (logits * w).sum().backward()
    check_grads(model, ref)


def test_classification_head_takes_jagged_features():
    head = M.RobertaClassificationHead(2, 8).eval()
    x = [ember.randn(3, 8), ember.randn(1, 8), ember.randn(4, 8)]
    with ember.no_grad():
        a = head(as_jagged(x)).numpy()
        b = head(ember.stack([t[0] for t in x])).numpy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mode", ["mean", "cls", "max", "mean_sqrt_len"])
def test_sentence_pooling_jagged_equals_padded(mode):
    model = M.EncoderModel(config("bert")).eval()
    seqs, ids, mask = make_batch(0, seed=9)
    emb = M.SentenceEmbedder(model, None, pooling=mode)
    with ember.no_grad():
        a = emb(jagged(seqs)).numpy()
        b = emb(ember.tensor(ids), ember.tensor(mask)).numpy()
    assert rel(a, b) < 1e-5
    with pytest.raises(ValueError, match="attention_mask"):
        emb(jagged(seqs), ember.tensor(mask))


class IdTokenizer:
    """Texts of space-separated integers -> those ids (no special tokens)."""

    def encode_batch(self, texts):
        return [[int(t) for t in s.split()] for s in texts]


def test_encode_runs_padding_free_and_equals_padded(monkeypatch):
    model = M.EncoderModel(config("roberta")).eval()
    seqs, ids, mask = make_batch(1, seed=10)
    texts = [" ".join(map(str, s)) for s in seqs]
    emb = M.SentenceEmbedder(model, IdTokenizer())
    seen = []
    real = M.EncoderModel.forward

    def spy(self, input_ids, *a, **k):
        seen.append(type(input_ids).__name__)
        return real(self, input_ids, *a, **k)

    monkeypatch.setattr(M.EncoderModel, "forward", spy)
    got = emb.encode(texts, batch_size=4).numpy()
    assert seen and set(seen) == {"JaggedTensor"}
    with ember.no_grad():
        want = emb(ember.tensor(ids), ember.tensor(mask)).numpy()
    assert rel(got, want) < 1e-5
    with pytest.raises(ValueError, match="text 1 gives no tokens"):
        emb.encode(["3 4", ""])


def brute_force_cost(lengths, heads, head_dim):
    """The least total group cost over every cut of the sorted runs (2^(runs-1) cuts)."""
    runs = sorted(set(int(x) for x in lengths if x > 0), reverse=True)
    count = {r: sum(1 for x in lengths if x == r) for r in runs}
    best = np.inf
    for mask in range(1 << max(len(runs) - 1, 0)):
        total, group = 0.0, [runs[0]]
        for u in range(1, len(runs) + 1):
            if u == len(runs) or mask >> (u - 1) & 1:
                n = sum(count[r] for r in group)
                total += float(J.group_cost(n, group[0], len(group) > 1, heads, head_dim))
                group = []
            if u < len(runs):
                group.append(runs[u])
        best = min(best, total)
    return best


def plan_cost(lengths, groups, heads, head_dim):
    lengths = np.asarray(lengths)
    return sum(float(J.group_cost(len(g), lengths[g].max(), len(set(lengths[g])) > 1, heads,
                                  head_dim)) for g in groups)


@pytest.mark.parametrize("seed", range(6))
def test_plan_groups_is_the_cheapest_cut(seed):
    rng = np.random.default_rng(seed)
    short = seed % 2 == 0
    lengths = rng.integers(0, 12 if short else 300, rng.integers(3, 40))
    if len(set(lengths[lengths > 0])) > 11:         # keep the brute force small
        lengths = np.minimum(lengths, np.sort(np.unique(lengths))[10])
    groups = J.plan_groups(lengths, num_heads=12, head_dim=32)
    members = sorted(int(i) for g in groups for i in g)
    assert members == sorted(np.flatnonzero(lengths > 0).tolist())    # each sequence once
    spans = sorted((lengths[g].min(), lengths[g].max()) for g in groups)
    assert all(hi < lo2 for (_, hi), (lo2, _) in zip(spans, spans[1:]))  # sorted runs
    assert plan_cost(lengths, groups, 12, 32) == pytest.approx(
        brute_force_cost(lengths, 12, 32), rel=1e-9)


def test_plan_groups_merges_short_and_keeps_long_apart():
    rng = np.random.default_rng(0)
    lengths = np.r_[rng.integers(1, 24, 200), [256, 250, 240, 240]]
    groups = J.plan_groups(lengths, num_heads=12, head_dim=32)
    long = [sorted(lengths[g].tolist()) for g in groups if lengths[g].max() >= 240]
    assert long == [[256], [250], [240, 240]]               # long ones: a call per length
    short = [g for g in groups if lengths[g].max() < 24]
    assert len(short) < len(set(lengths[lengths < 24]))     # short ones share padded calls
    assert J.plan_groups([0, 0], 2) == [] and J.plan_groups([], 2) == []


def test_layout_keeps_batch_order_when_it_can():
    lay = J.JaggedBatch([5, 5, 3, 3, 1], 2)
    assert lay.perm is None
    lay = J.JaggedBatch([5, 3, 5], 2, costs=dict(padded=1e15))
    assert lay.perm is not None and [g.n for g in lay.groups] == [2, 1]
    x = ember.arange(13.0).reshape(13, 1)
    assert lay.pack(x).reshape(-1).tolist() == [0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 5, 6, 7]
    assert lay.unpack(lay.pack(x)).reshape(-1).tolist() == list(range(13))
    assert lay.first_tokens(lay.pack(x)).reshape(-1).tolist() == [0, 5, 8]


def test_errors():
    model = M.EncoderModel(config("roberta")).eval()
    seqs, ids, mask = make_batch(1, seed=11)
    jt = jagged(seqs)
    with pytest.raises(ValueError, match="attention_mask"):
        model(jt, ember.tensor(mask))
    with pytest.raises(ValueError, match="sequence 1 of the jagged batch is empty"):
        model(as_jagged([[0, 5], [], [0, 6]], dtype=ember.int64))
    with pytest.raises(ValueError, match="position embeddings"):
        model(as_jagged([[5] * 39], dtype=ember.int64))
    with pytest.raises(ValueError, match="integer ids"):
        model(as_jagged([[0.5, 1.0]]))
    with pytest.raises(ValueError, match="lengths differ"):
        model(jt, token_type_ids=as_jagged([np.zeros(len(s) + 1, np.int64) for s in seqs]))
    with pytest.raises(ValueError, match="packed ids of shape"):
        model(jt, token_type_ids=ember.zeros(3, dtype=ember.int64))
    with pytest.raises(ValueError, match="no first token"):
        M.first_tokens(as_jagged([ember.ones(2, 4), ember.ones(0, 4)]))
    # int32 ids and packed token types are accepted
    with ember.no_grad():
        a = model(JaggedTensor(ember.tensor(np.concatenate(seqs).astype(np.int32)),
                               lengths=LENGTHS),
                  token_type_ids=ember.zeros(sum(LENGTHS), dtype=ember.int64))[0].values()
        b = model(jt)[0].values()
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_train_mode_jagged_has_dropout():
    model = M.EncoderModel(config("bert"))
    seqs, _, _ = make_batch(0)
    with ember.no_grad():
        a, b = (model(jagged(seqs))[0].values().numpy() for _ in range(2))
    assert not np.allclose(a, b)


def test_jagged_matches_transformers():
    """One direct check against transformers (the padded parity tests carry the rest)."""
    torch = pytest.importorskip("torch")
    T = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf = T.RobertaModel(T.RobertaConfig(**dict(SMALL, pad_token_id=1,
                                               type_vocab_size=1))).eval()
    model = M.EncoderModel(M.EncoderConfig.from_dict(hf.config.to_dict())).eval()
    M.load_hf_state_dict(model, {k: v.numpy() for k, v in hf.state_dict().items()})
    seqs, ids, mask = make_batch(1, seed=12)
    with torch.no_grad():
        r = hf(torch.tensor(ids), attention_mask=torch.tensor(mask))
    with ember.no_grad():
        out = model(jagged(seqs))
    assert rel(out[0].values().numpy(), r.last_hidden_state.numpy()[mask.astype(bool)]) < 1e-4
    assert rel(out[1].numpy(), r.pooler_output.numpy()) < 1e-4


@pytest.mark.cuda
def test_jagged_on_cuda_matches_cpu():
    model = M.EncoderModel(config("roberta")).eval()
    seqs, _, _ = make_batch(1, seed=13)
    with ember.no_grad():
        cpu = model(jagged(seqs))
        model.to("cuda")
        gpu = model(jagged(seqs).to("cuda"))
    assert rel(gpu[0].values().cpu().numpy(), cpu[0].values().numpy()) < 1e-4
    assert rel(gpu[1].cpu().numpy(), cpu[1].numpy()) < 1e-4
