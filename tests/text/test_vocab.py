"""ember.text.vocab behaves as torchtext's Vocab and factories are documented to."""
import pickle
from collections import Counter, OrderedDict

import pytest

from ember import nn
from ember.text.vocab import (DuplicateTokenError, Vocab, VocabIndexError, VocabLookupError,
                              build_vocab_from_iterator, vocab)


def test_lookups_and_default_index():
    v = Vocab(["<unk>", "a", "b"])
    assert isinstance(v, nn.Module)
    assert len(v) == 3 and "a" in v and "z" not in v
    assert v["b"] == 2 and v(["a", "b"]) == [1, 2] and v.lookup_indices(["b"]) == [2]
    assert v.get_default_index() is None
    with pytest.raises(RuntimeError, match="Token 'z' not found and default index is not set"):
        v["z"]
    with pytest.raises(KeyError, match="'zz'"):          # also a KeyError, naming the token
        v.lookup_indices(["a", "zz"])
    v.set_default_index(0)
    assert v.get_default_index() == 0
    assert v["z"] == 0 and v(["z", "a", "q"]) == [0, 1, 0]
    v.set_default_index(None)
    with pytest.raises(VocabLookupError):
        v(["q"])


def test_reverse_lookups():
    v = Vocab(["x", "y", "z"])
    assert v.lookup_token(1) == "y" and v.lookup_tokens([2, 0]) == ["z", "x"]
    with pytest.raises(VocabIndexError, match="index 3 is out of bounds for vocab of size 3"):
        v.lookup_token(3)
    with pytest.raises(RuntimeError):
        v.lookup_tokens([0, -1])
    stoi, itos = v.get_stoi(), v.get_itos()
    assert stoi == {"x": 0, "y": 1, "z": 2} and itos == ["x", "y", "z"]
    stoi["w"] = 3
    itos.append("w")
    assert len(v) == 3                                    # copies, not views


def test_insert_and_append():
    v = Vocab(["a", "b", "c"], default_index=1)
    v.insert_token("new", 1)
    assert v.get_itos() == ["a", "new", "b", "c"]
    assert v.get_stoi() == {"a": 0, "new": 1, "b": 2, "c": 3}
    assert v.get_default_index() == 1                     # an index, not a token: unchanged
    v.insert_token("first", 0)
    v.insert_token("last", len(v))
    assert v.get_itos() == ["first", "a", "new", "b", "c", "last"]
    v.append_token("end")
    assert v["end"] == 6
    with pytest.raises(DuplicateTokenError, match="'b' already exists in the Vocab with index: 3"):
        v.insert_token("b", 0)
    with pytest.raises(RuntimeError, match="already exists"):
        v.append_token("a")
    with pytest.raises(ValueError):
        v.append_token("end")
    with pytest.raises(VocabIndexError):
        v.insert_token("x", 8)
    with pytest.raises(IndexError):
        v.insert_token("x", -1)
    assert [v[t] for t in v.get_itos()] == list(range(len(v)))


def test_construction_errors_and_pickle():
    with pytest.raises(DuplicateTokenError, match="Duplicate token found in tokens list: 'a'"):
        Vocab(["a", "b", "a"])
    with pytest.raises(TypeError, match="tokens must be str"):
        Vocab(["a", 3])
    v = Vocab(["a", "b"], default_index=0)
    w = pickle.loads(pickle.dumps(v))
    assert w.get_itos() == ["a", "b"] and w["zz"] == 0
    assert "size=2" in repr(v)


def test_vocab_factory():
    od = OrderedDict([("c", 1), ("a", 5), ("b", 3), ("<pad>", 9)])
    before = dict(od)
    assert vocab(od).get_itos() == ["c", "a", "b", "<pad>"]            # the dict's order
    assert vocab(od, min_freq=3).get_itos() == ["a", "b", "<pad>"]
    v = vocab(od, min_freq=2, specials=["<unk>", "<pad>"])
    assert v.get_itos() == ["<unk>", "<pad>", "a", "b"]                 # specials, any freq
    v = vocab(od, specials=["<unk>", "<pad>"], special_first=False)
    assert v.get_itos() == ["c", "a", "b", "<unk>", "<pad>"]
    assert dict(od) == before
    assert len(vocab({})) == 0


def test_build_vocab_from_iterator():
    data = [["b", "a", "c", "a"], ["c", "a", "d"], ["e"]]
    v = build_vocab_from_iterator(data)
    # by frequency, ties broken lexicographically
    assert v.get_itos() == ["a", "c", "b", "d", "e"]
    assert build_vocab_from_iterator(iter(data), min_freq=2).get_itos() == ["a", "c"]
    v = build_vocab_from_iterator(data, specials=["<unk>", "c"])
    assert v.get_itos() == ["<unk>", "c", "a", "b", "d", "e"]
    v = build_vocab_from_iterator(data, specials=["<unk>"], special_first=False)
    assert v.get_itos() == ["a", "c", "b", "d", "e", "<unk>"]
    # max_tokens counts the specials; the cut happens before specials leave the list
    assert build_vocab_from_iterator(data, specials=["<unk>"], max_tokens=3).get_itos() == \
        ["<unk>", "a", "c"]
    assert build_vocab_from_iterator(data, specials=["<unk>", "a"], max_tokens=4).get_itos() \
        == ["<unk>", "a", "c"]
    with pytest.raises(ValueError, match="max_tokens"):
        build_vocab_from_iterator(data, specials=["x", "y"], max_tokens=2)
    # the counts match collections.Counter over a larger stream
    words = [f"w{i % 17}" for i in range(1000)] + [f"w{i % 5}" for i in range(100)]
    v = build_vocab_from_iterator([words[i:i + 10] for i in range(0, len(words), 10)])
    expected = [w for w, _ in sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))]
    assert v.get_itos() == expected
