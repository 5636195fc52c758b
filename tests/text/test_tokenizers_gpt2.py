"""GPT-2 byte-level BPE: ids equal to the tokenizers library's reference tokenizer and to
transformers' GPT-2 tokenizer on the same files; exact round trip of any text; train_bpe."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.text.tokenizers import GPT2BPETokenizer, Tokenizer, byte_to_unicode, train_bpe

PROPERTY = settings(derandomize=True, database=None, max_examples=300, deadline=None)


@pytest.fixture(scope="module")
def gpt2(gpt2_files):
    return GPT2BPETokenizer.from_vocab_merges(gpt2_files / "vocab.json",
                                              gpt2_files / "merges.txt")


@pytest.fixture(scope="module")
def ref_bytelevel(gpt2_files):
    from tokenizers.implementations import ByteLevelBPETokenizer

    return ByteLevelBPETokenizer(str(gpt2_files / "vocab.json"), str(gpt2_files / "merges.txt"))


@pytest.fixture(scope="module")
def ref_hf(gpt2_files):
    from transformers import GPT2Tokenizer

    return GPT2Tokenizer.from_pretrained(str(gpt2_files))


def test_byte_alphabet_is_gpt2s():
    m = byte_to_unicode()
    assert sorted(m) == list(range(256)) and len(set(m.values())) == 256
    assert all(c.isprintable() and not c.isspace() for c in m.values())
    assert m[ord("!")] == "!" and m[ord(" ")] == "\u0120" and m[0] == "\u0100"
    assert m[0xAD] == "\u0143" and m[0xA1] == "\xa1"    # soft hyphen moved, inverted ! kept


def test_ids_equal_library_reference(gpt2, ref_bytelevel, corpus):
    assert len(corpus) > 600
    for text in corpus:
        ref = ref_bytelevel.encode(text)
        assert gpt2.encode(text) == ref.ids, text
        assert gpt2.encode(text, return_offsets=True) == (ref.ids, ref.offsets), text


def test_ids_equal_transformers(gpt2, ref_hf, corpus):
    texts = corpus + ["<|endoftext|>", "a<|endoftext|>b", "x <|endoftext|>\n<|endoftext|>y"]
    for text in texts:
        assert gpt2.encode(text) == ref_hf(text)["input_ids"], text
    assert gpt2.vocab_size == len(ref_hf)
    assert gpt2.special_tokens == {"<|endoftext|>": gpt2.vocab_size - 1}
    assert gpt2.encode("<|endoftext|>") == [gpt2.token_to_id("<|endoftext|>")]


def test_openai_pair_equals_vocab_merges_pair(gpt2, gpt2_files, corpus):
    openai = GPT2BPETokenizer.from_files(gpt2_files / "encoder.json", gpt2_files / "vocab.bpe")
    assert openai.get_vocab() == gpt2.get_vocab()
    assert openai.encode_batch(corpus) == gpt2.encode_batch(corpus)


def test_batch_equals_loop(gpt2, corpus):
    assert gpt2.encode_batch(corpus) == [gpt2.encode(t) for t in corpus]
    got = gpt2.encode_batch(corpus[:50], return_offsets=True)
    assert got == [gpt2.encode(t, return_offsets=True) for t in corpus[:50]]
    plus = gpt2.encode_batch_plus(corpus[:20])
    assert [p.ids for p in plus] == gpt2.encode_batch(corpus[:20])
    assert all(p.tokens == [gpt2.id_to_token(i) for i in p.ids] for p in plus)
    assert gpt2.encode_batch([]) == []


def test_offsets_cover_the_text(gpt2, corpus):
    for text in corpus[:100]:
        ids, offsets = gpt2.encode(text, return_offsets=True)
        # byte-level tokens may split a character: their spans then repeat it; the union of
        # the distinct spans, in order, is exactly the text
        spans = sorted(set(offsets))
        assert "".join(text[s:e] for s, e in spans) == text


def test_decode_round_trip_corpus(gpt2, corpus):
    for text in corpus:
        assert gpt2.decode(gpt2.encode(text)) == text
    rows = gpt2.encode_batch(corpus[:10])
    assert gpt2.decode_batch(rows) == corpus[:10]


@PROPERTY
@given(st.text())
def test_decode_encode_round_trip_any_text(gpt2, text):
    assert gpt2.decode(gpt2.encode(text)) == text


@PROPERTY
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_ids_equal_reference_any_text(gpt2, ref_bytelevel, text):
    assert gpt2.encode(text) == ref_bytelevel.encode(text).ids


def test_decode_accepts_arrays_and_tensors(gpt2):
    ids = gpt2.encode("héllo wörld 😀")
    assert gpt2.decode(np.asarray(ids)) == "héllo wörld 😀"
    assert gpt2.decode(ember.tensor(ids)) == "héllo wörld 😀"
    eot = gpt2.token_to_id("<|endoftext|>")
    assert gpt2.decode(ids + [eot]) == "héllo wörld 😀<|endoftext|>"
    assert gpt2.decode(ids + [eot], skip_special_tokens=True) == "héllo wörld 😀"


def test_vocab_protocol(gpt2, gpt2_files):
    import json

    vocab = json.loads((gpt2_files / "vocab.json").read_text("utf-8"))
    assert gpt2.get_vocab() == vocab and len(gpt2) == len(vocab)
    for tok, i in list(vocab.items())[::97]:
        assert gpt2.token_to_id(tok) == i and gpt2.id_to_token(i) == tok
    assert gpt2.token_to_id("not-a-token-at-all") is None
    assert gpt2.id_to_token(10 ** 6) is None
    assert "GPT2BPETokenizer(vocab_size=" in repr(gpt2)


def test_add_prefix_space(gpt2_files):
    tok = GPT2BPETokenizer.from_vocab_merges(gpt2_files / "vocab.json",
                                             gpt2_files / "merges.txt", add_prefix_space=True)
    plain = GPT2BPETokenizer.from_vocab_merges(gpt2_files / "vocab.json",
                                               gpt2_files / "merges.txt")
    assert tok.encode("the dog") == plain.encode(" the dog")
    assert tok.encode("the dog") != plain.encode("the dog")


def test_pickle(gpt2, corpus):
    again = pickle.loads(pickle.dumps(gpt2))
    assert type(again) is GPT2BPETokenizer
    assert again.encode_batch(corpus) == gpt2.encode_batch(corpus)


def test_bad_files_are_named(tmp_path, gpt2_files):
    bad = tmp_path / "merges.txt"
    bad.write_text("#version: 0.2\nĠ t\nthree parts here\n", "utf-8")
    with pytest.raises(ValueError, match=r"merges.txt, line 3"):
        GPT2BPETokenizer.from_vocab_merges(gpt2_files / "vocab.json", bad)
    unknown = tmp_path / "unknown.txt"
    unknown.write_text("#version: 0.2\nqqqq zzzz\n", "utf-8")
    with pytest.raises(ValueError, match="cannot build a BPE"):
        GPT2BPETokenizer.from_vocab_merges(gpt2_files / "vocab.json", unknown)
    notjson = tmp_path / "vocab.json"
    notjson.write_text("[1, 2]", "utf-8")
    with pytest.raises(ValueError, match="vocab.json"):
        GPT2BPETokenizer.from_vocab_merges(notjson, gpt2_files / "merges.txt")
    with pytest.raises(TypeError, match="must be a str"):
        GPT2BPETokenizer.from_vocab_merges(gpt2_files / "vocab.json",
                                           gpt2_files / "merges.txt").encode(b"bytes")


def test_files_from_url_through_hub(gpt2, gpt2_files, tmp_path, monkeypatch, corpus):
    import fsspec

    ember.hub.set_dir(str(tmp_path / "hub"))
    try:
        fs = fsspec.filesystem("memory")
        for name in ("encoder.json", "vocab.bpe"):
            fs.pipe(f"/gpt2test/{name}", (gpt2_files / name).read_bytes())
        tok = GPT2BPETokenizer.from_files("memory://gpt2test/encoder.json",
                                          "memory://gpt2test/vocab.bpe")
        assert tok.encode_batch(corpus[:40]) == gpt2.encode_batch(corpus[:40])
        cached = list((tmp_path / "hub" / "text").rglob("vocab.bpe"))
        assert len(cached) == 1
        fs.rm("/gpt2test", recursive=True)        # now served from the cache
        again = GPT2BPETokenizer.from_files("memory://gpt2test/encoder.json",
                                            "memory://gpt2test/vocab.bpe")
        assert again.get_vocab() == gpt2.get_vocab()
    finally:
        ember.hub.set_dir(None)


# ----------------------------------------------------------------- train_bpe
def test_train_bpe_round_trip(tmp_path, corpus):
    tok = train_bpe(corpus * 2, vocab_size=900, special_tokens=["<|endoftext|>", "<pad>"])
    assert isinstance(tok, GPT2BPETokenizer)
    assert 600 < tok.vocab_size <= 900   # the corpus runs out of pairs seen twice
    assert tok.special_tokens == {"<|endoftext|>": 0, "<pad>": 1}
    texts = corpus + ["x<pad>y<|endoftext|>"]
    ids = tok.encode_batch(texts)
    assert all(tok.decode(i) == t for i, t in zip(ids, texts))
    written = tok.save(tmp_path / "tok")
    assert sorted(p.rsplit("/", 1)[1] for p in written) == ["merges.txt", "tokenizer.json",
                                                            "vocab.json"]
    assert GPT2BPETokenizer.load(tmp_path / "tok").encode_batch(texts) == ids
    # the portable pair alone (no tokenizer.json) gives the same ids
    (tmp_path / "tok" / "tokenizer.json").unlink()
    pair = GPT2BPETokenizer.load(tmp_path / "tok")
    plain = [t for t in texts if "<pad>" not in t]
    assert pair.encode_batch(plain) == tok.encode_batch(plain)
    with_specials = GPT2BPETokenizer.from_vocab_merges(
        tmp_path / "tok" / "vocab.json", tmp_path / "tok" / "merges.txt",
        special_tokens=["<|endoftext|>", "<pad>"])
    assert with_specials.encode_batch(texts) == ids
    # and transformers reads the saved files to the same ids
    from transformers import GPT2Tokenizer

    hf = GPT2Tokenizer.from_pretrained(str(tmp_path / "tok"))
    assert [hf(t)["input_ids"] for t in plain] == tok.encode_batch(plain)


def test_train_bpe_from_files(tmp_path, corpus):
    paths = []
    for i in range(2):
        p = tmp_path / f"part{i}.txt"
        p.write_text("\n".join(corpus[i::2]), "utf-8")
        paths.append(str(p))
    a = train_bpe(paths, vocab_size=700)
    b = train_bpe(paths[0], vocab_size=700)
    assert 400 < a.vocab_size <= 700 and b.vocab_size <= 700
    for t in corpus[:50]:
        assert a.decode(a.encode(t)) == t
    with pytest.raises(FileNotFoundError):
        train_bpe(str(tmp_path / "missing.txt"), vocab_size=300)


def test_train_bpe_is_deterministic(corpus):
    a = train_bpe(corpus, vocab_size=600)
    b = train_bpe(iter(corpus), vocab_size=600)
    assert a.get_vocab() == b.get_vocab()


def test_generic_tokenizer_json(gpt2, tmp_path, corpus):
    path = gpt2.save(tmp_path / "g")[-1]
    generic = Tokenizer.from_file(path)
    assert type(generic) is Tokenizer
    assert generic.encode_batch(corpus) == gpt2.encode_batch(corpus)
