"""The shared protocol: any Hugging Face tokenizer.json through ``Tokenizer.from_file``, asset
paths and URLs, and the docstring examples of the tokenizer modules."""
import doctest
import importlib

import pytest

import ember
from ember.text._download import asset_path
from ember.text.tokenizers import Encoding, Tokenizer

DOC_MODULES = ["ember.text.tokenizers", "ember.text.tokenizers._base",
               "ember.text.tokenizers._files", "ember.text.tokenizers.gpt2",
               "ember.text.tokenizers.bert", "ember.text.tokenizers.clip",
               "ember.text.transforms", "ember.text.vocab", "ember.text._download"]


@pytest.mark.parametrize("name", DOC_MODULES)
def test_docstring_examples(name):
    res = doctest.testmod(importlib.import_module(name),
                          optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory, gpt2_files, bert_vocab):
    """tokenizer.json files as transformers writes them for GPT-2 and BERT."""
    from transformers import BertTokenizer, GPT2Tokenizer

    out = {}
    for name, cls, src in (("gpt2", GPT2Tokenizer, gpt2_files),
                           ("bert", BertTokenizer, bert_vocab.parent)):
        hf = cls.from_pretrained(str(src))
        d = tmp_path_factory.mktemp(f"hf-{name}")
        hf.save_pretrained(str(d))
        assert (d / "tokenizer.json").is_file()
        out[name] = (hf, d)
    return out


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_from_file_equals_transformers(hf_dirs, name, corpus):
    hf, d = hf_dirs[name]
    tok = Tokenizer.from_file(d / "tokenizer.json")
    assert Tokenizer.from_file(d).get_vocab() == tok.get_vocab()      # a directory works too
    assert tok.encode_batch(corpus) == [hf(t)["input_ids"] for t in corpus]
    assert [tok.encode(t) for t in corpus[:50]] == tok.encode_batch(corpus[:50])
    assert tok.vocab_size == len(hf)
    assert Tokenizer.from_str(tok.to_str()).encode_batch(corpus[:40]) == \
        tok.encode_batch(corpus[:40])
    assert set(tok.special_tokens) == set(hf.all_special_tokens)
    enc = tok.encode_plus(corpus[3])
    assert isinstance(enc, Encoding) and len(enc.ids) == len(enc.tokens) == len(enc.offsets)
    pairs = tok.encode_batch(corpus[:30], corpus[30:60])
    assert pairs == [hf(a, b)["input_ids"] for a, b in zip(corpus[:30], corpus[30:60])]
    ids = tok.encode(corpus[5])
    assert tok.decode(ids) == hf.decode(ids)


def test_protocol_errors(hf_dirs, tmp_path):
    tok = Tokenizer.from_file(hf_dirs["gpt2"][1])
    with pytest.raises(TypeError, match="list of texts"):
        tok.encode_batch("one text")
    with pytest.raises(TypeError, match="every text must be a str"):
        tok.encode_batch(["ok", None])
    with pytest.raises(ValueError, match="2 texts but 1 pairs"):
        tok.encode_batch(["a", "b"], ["c"])
    with pytest.raises(FileNotFoundError, match="no tokenizer file"):
        Tokenizer.from_file(tmp_path / "nothing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{}", "utf-8")
    with pytest.raises(ValueError, match="not a valid tokenizer.json"):
        Tokenizer.from_file(bad)
    with pytest.raises(TypeError, match="tokenizers.Tokenizer"):
        Tokenizer("not a backend")


def test_asset_paths(tmp_path, monkeypatch):
    p = tmp_path / "vocab.txt"
    p.write_text("[PAD]\n", "utf-8")
    assert asset_path(p) == str(p)
    assert asset_path(f"file://{p}") == str(p)
    monkeypatch.setenv("EMBER_OFFLINE", "1")
    with pytest.raises(ember.hub.OfflineError, match="vocab.txt"):
        asset_path("https://example.invalid/models/vocab.txt", cache_dir=tmp_path / "c")


def test_asset_url_cached_with_hash(tmp_path):
    import hashlib

    import fsspec

    fs = fsspec.filesystem("memory")
    data = b"[PAD]\n[UNK]\n"
    fs.pipe("/assets-test/a/vocab.txt", data)
    fs.pipe("/assets-test/b/vocab.txt", b"other\n")
    digest = hashlib.sha256(data).hexdigest()
    try:
        a = asset_path("memory://assets-test/a/vocab.txt", cache_dir=tmp_path, sha256=digest)
        b = asset_path("memory://assets-test/b/vocab.txt", cache_dir=tmp_path)
        assert a != b and open(a, "rb").read() == data and open(b, "rb").read() == b"other\n"
        with pytest.raises(ember.hub.HashMismatchError):
            asset_path("memory://assets-test/b/vocab.txt", cache_dir=tmp_path / "x",
                       sha256="0" * 64)
    finally:
        fs.rm("/assets-test", recursive=True)
