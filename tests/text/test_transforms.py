"""ember.text.transforms: torchtext's transforms, as nn.Modules on samples and batches."""
import pickle

import numpy as np
import pytest

import ember
from ember import nn
from ember.text import transforms as T
from ember.text.tokenizers import BERTTokenizer, CLIPTokenizer, GPT2BPETokenizer
from ember.text.vocab import Vocab, build_vocab_from_iterator


def test_gpt2_transform(gpt2_files, corpus):
    tok = GPT2BPETokenizer.from_files(gpt2_files / "encoder.json", gpt2_files / "vocab.bpe")
    t = T.GPT2BPETokenizer(str(gpt2_files / "encoder.json"), str(gpt2_files / "vocab.bpe"))
    assert isinstance(t, nn.Module)
    text = corpus[0]
    assert t(text) == [str(i) for i in tok.encode(text)]             # ids as strings
    assert t(corpus[:30]) == [[str(i) for i in ids] for ids in tok.encode_batch(corpus[:30])]
    toks = T.GPT2BPETokenizer(str(gpt2_files / "encoder.json"), str(gpt2_files / "vocab.bpe"),
                              return_tokens=True)
    assert toks(text) == [tok.id_to_token(i) for i in tok.encode(text)]
    assert toks([text, "x"])[1] == [tok.id_to_token(i) for i in tok.encode("x")]
    ints = T.GPT2BPETokenizer(str(gpt2_files / "encoder.json"), str(gpt2_files / "vocab.bpe"),
                              as_ints=True)
    assert ints(corpus[:5]) == tok.encode_batch(corpus[:5])
    with pytest.raises(TypeError, match="str or a list"):
        t(3)
    with pytest.raises(ValueError):
        T.GPT2BPETokenizer(str(gpt2_files / "encoder.json"), str(gpt2_files / "vocab.bpe"),
                           return_tokens=True, as_ints=True)


def test_clip_transform(clip_file, corpus):
    tok = CLIPTokenizer.from_file(clip_file)
    t = T.CLIPTokenizer(str(clip_file))
    assert t(corpus[:20]) == [[str(i) for i in ids] for ids in tok.encode_batch(corpus[:20])]
    assert T.CLIPTokenizer(str(clip_file), num_merges=50, as_ints=True)(corpus[1]) == \
        CLIPTokenizer.from_file(clip_file, num_merges=50).encode(corpus[1])
    toks = T.CLIPTokenizer(str(clip_file), return_tokens=True)("Hello world")
    assert toks[-1].endswith("</w>")


def test_bert_transform_pipeline(bert_vocab, corpus):
    tok = BERTTokenizer.from_vocab(bert_vocab)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    pipe = T.Sequential(T.BERTTokenizer(str(bert_vocab), do_lower_case=True),
                        T.StrToIntTransform(), T.Truncate(14), T.AddToken(cls_id, begin=True),
                        T.AddToken(sep_id, begin=False), T.ToTensor(padding_value=0))
    batch = corpus[:16]
    out = pipe(batch)
    assert isinstance(out, ember.Tensor) and out.dtype == ember.int64
    expected = [[cls_id] + ids[:14] + [sep_id] for ids in
                tok.encode_batch(batch, add_special_tokens=False)]
    width = max(map(len, expected))
    assert out.shape == (16, width)
    for row, e in zip(out.numpy().tolist(), expected):
        assert row == e + [0] * (width - len(e))
    one = pipe(batch[0])
    assert one.numpy().tolist() == expected[0]
    cased = T.BERTTokenizer(str(bert_vocab), do_lower_case=False, return_tokens=True)
    assert cased("Hello") == BERTTokenizer.from_vocab(bert_vocab, lower_case=False) \
        .encode_plus("Hello", add_special_tokens=False).tokens


def test_vocab_transform_and_str_to_int():
    v = Vocab(["<unk>", "a", "b"], default_index=0)
    t = T.VocabTransform(v)
    assert t(["a", "b", "zz"]) == [1, 2, 0]
    assert t([["a"], ["b", "a"], []]) == [[1], [2, 1], []]
    assert t([]) == []
    with pytest.raises(TypeError, match="Vocab"):
        T.VocabTransform({"a": 1})
    assert T.StrToIntTransform()(["1", "22"]) == [1, 22]
    assert T.StrToIntTransform()([["1"], ["2", "3"]]) == [[1], [2, 3]]


def test_truncate_addtoken():
    assert T.Truncate(2)([1, 2, 3]) == [1, 2]
    assert T.Truncate(2)([[1, 2, 3], [4]]) == [[1, 2], [4]]
    assert T.Truncate(2)(["a", "b", "c"]) == ["a", "b"]
    assert T.AddToken(0)([5, 6]) == [0, 5, 6]
    assert T.AddToken(9, begin=False)([[5], [6, 7]]) == [[5, 9], [6, 7, 9]]
    assert T.AddToken("<bos>")(["x"]) == ["<bos>", "x"]
    assert T.AddToken("<eos>", begin=False)([["x"], []]) == [["x", "<eos>"], ["<eos>"]]
    assert T.AddToken(0)([]) == [0]                        # an empty list is one sequence
    assert "begin=False" in repr(T.AddToken(1, begin=False))


def test_pad_transform():
    pad = T.PadTransform(max_length=5, pad_value=-1)
    x = ember.tensor([[1, 2, 3], [4, 5, 6]])
    y = pad(x)
    assert y.shape == (2, 5) and y.numpy().tolist() == [[1, 2, 3, -1, -1], [4, 5, 6, -1, -1]]
    assert pad(ember.tensor([1, 2])).numpy().tolist() == [1, 2, -1, -1, -1]
    long = ember.tensor([1, 2, 3, 4, 5, 6])
    assert pad(long) is long                               # longer input unchanged
    assert pad([1, 2]) == [1, 2, -1, -1, -1]
    assert pad([[1], [1, 2, 3, 4, 5, 6]]) == [[1, -1, -1, -1, -1], [1, 2, 3, 4, 5, 6]]


def test_to_tensor():
    t = T.ToTensor()
    x = t([1, 2, 3])
    assert x.dtype == ember.int64 and x.numpy().tolist() == [1, 2, 3]
    assert t([[1, 2], [3, 4]]).shape == (2, 2)
    with pytest.raises(ValueError, match="padding_value"):
        t([[1, 2], [3]])
    p = T.ToTensor(padding_value=7, dtype=ember.int32)
    y = p([[1, 2, 3], [4], []])
    assert y.dtype == ember.int32
    np.testing.assert_array_equal(y.numpy(), [[1, 2, 3], [4, 7, 7], [7, 7, 7]])
    assert T.ToTensor()([]).shape == (0,)


def test_label_to_index(tmp_path):
    t = T.LabelToIndex(["neg", "pos", "neutral"])
    assert t("pos") == 1 and t(["neutral", "neg"]) == [2, 0]
    with pytest.raises(KeyError, match="'happy'"):
        t("happy")
    s = T.LabelToIndex(["neg", "pos", "neutral"], sort_names=True)
    assert s.label_names == ["neg", "neutral", "pos"] and s("pos") == 2
    f = tmp_path / "labels.txt"
    f.write_text("World\nSports \nBusiness\n\n", "utf-8")
    assert T.LabelToIndex(label_path=f)(["Sports", "Business"]) == [1, 2]
    with pytest.raises(ValueError, match="exactly one"):
        T.LabelToIndex()
    with pytest.raises(ValueError, match="exactly one"):
        T.LabelToIndex(["a"], label_path=f)


def test_sequential_is_module_and_pickles(bert_vocab, corpus):
    v = build_vocab_from_iterator([["x", "y"]], specials=["<unk>"])
    v.set_default_index(0)
    pipe = T.Sequential(T.BERTTokenizer(str(bert_vocab), return_tokens=True),
                        T.VocabTransform(v), T.ToTensor(padding_value=0))
    assert isinstance(pipe, nn.Sequential) and len(pipe) == 3
    out = pipe(corpus[:4])
    again = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(again(corpus[:4]).numpy(), out.numpy())
    assert "BERTTokenizer" in repr(pipe)
