"""Fixtures for the text tokenizer tests: a generated multilingual corpus and the published
file formats (GPT-2, CLIP, BERT) built from it at test time, with no network."""
import gzip
import json
import os
import random

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")        # transformers must not look online
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

WORDS = [
    # English, contractions, digits, punctuation
    "the", "The", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "tokenizer",
    "don't", "I'll", "we're", "they've", "it's", "she'd", "I'm", "DON'T", "O'Neil",
    "2024", "3.14159", "1,000,000", "42nd", "v2.0", "#hashtag", "@user", "e-mail",
    "hello,", "world!", "...", "?!", "(parens)", "[brackets]", "{braces}", "--", "—", "…",
    "http://example.com/a?b=c&d=e", "a_b_c", "snake_case", "CamelCase", "x=y+z;",
    # accents, composed and decomposed; German, French, Spanish, Vietnamese
    "café", "cafe\u0301", "naïve", "Über", "straße", "STRASSE", "Ångström", "résumé",
    "niño", "Tiếng", "Việt", "ﬁnance",
    # Greek (final sigma), Cyrillic, Arabic, Hebrew, Devanagari, Thai
    "ΟΔΥΣΣΕΥΣ", "Ελληνικά", "σοφός", "русский", "Привет", "مرحبا", "שלום", "नमस्ते",
    "हिन्दी", "ภาษาไทย",
    # CJK
    "日本語", "東京", "テスト", "ひらがな", "中文", "汉字测试", "한국어", "안녕하세요",
    # emoji: single, skin tone, ZWJ family, flag, keycap
    "😀", "🎉🎉", "👍🏽", "👩‍👩‍👧‍👦", "🇯🇵", "1️⃣", "❤️",
    # HTML entities (CLIP unescapes them), odd characters
    "&amp;", "&lt;b&gt;", "&amp;amp;", "\u200b", "\ufeff", "\x07", "ſ", "İstanbul", "K",
]
SPACES = [" ", " ", " ", " ", "  ", "   ", "\t", "\n", "\r\n", "\u00a0", "\u3000", " \t "]
SPECIAL_CASES = [
    "", " ", "   ", "\n\n", "\t \t",
    "a" * 1000, "long" + "x" * 400 + "word", "😀" * 60, "9" * 200, "日本" * 150,
    "Supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis",
    "  leading and trailing  ", "multiple     spaces\t\ttabs\n\nnewlines",
    "ends with space ", " starts with space",
]


def make_corpus(n=600, seed=0):
    """Deterministic multilingual lines plus the edge cases above."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        k = rng.randint(1, 14)
        parts = []
        for _ in range(k):
            parts.append(rng.choice(WORDS))
            parts.append(rng.choice(SPACES))
        if rng.random() < 0.3:
            parts.insert(0, rng.choice(SPACES))
        lines.append("".join(parts[:-1] if rng.random() < 0.7 else parts))
    return lines + SPECIAL_CASES


@pytest.fixture(scope="session")
def corpus():
    return make_corpus()


# ----------------------------------------------------------------- GPT-2 files
@pytest.fixture(scope="session")
def gpt2_files(tmp_path_factory, corpus):
    """OpenAI's ``encoder.json`` + ``vocab.bpe`` and HF's ``vocab.json`` + ``merges.txt`` of a
    byte-level BPE trained by the library on the corpus (``<|endoftext|>`` last, as GPT-2)."""
    from tokenizers.implementations import ByteLevelBPETokenizer

    d = tmp_path_factory.mktemp("gpt2")
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(corpus * 3, vocab_size=1200, min_frequency=2,
                                show_progress=False)
    trainer.save_model(str(d))
    vocab = json.loads((d / "vocab.json").read_text("utf-8"))
    vocab["<|endoftext|>"] = len(vocab)
    (d / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), "utf-8")
    (d / "encoder.json").write_text(json.dumps(vocab), "utf-8")      # OpenAI: ASCII-escaped
    merges = (d / "merges.txt").read_text("utf-8")
    assert merges.startswith("#version: 0.2\n")
    (d / "vocab.bpe").write_text(merges, "utf-8")
    return d


# ----------------------------------------------------------------- BERT vocab
@pytest.fixture(scope="session")
def bert_vocab(tmp_path_factory, corpus):
    """A WordPiece ``vocab.txt`` (specials first, as BERT's) trained on the corpus."""
    from tokenizers.implementations import BertWordPieceTokenizer

    d = tmp_path_factory.mktemp("bert")
    t = BertWordPieceTokenizer(lowercase=False)  # cased training keeps upper-case pieces too
    t.train_from_iterator(corpus * 3, vocab_size=1500, min_frequency=2, show_progress=False,
                          special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    t.save_model(str(d))
    return d / "vocab.txt"


# ----------------------------------------------------------------- CLIP merges
def clip_pre_tokenizer():
    """The library pieces that split and byte-map as OpenAI's CLIP does (for training only)."""
    from tokenizers import Regex, pre_tokenizers

    from ember.text.tokenizers.clip import PATTERN

    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PATTERN), behavior="removed", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


def write_clip_file(path, merges):
    """OpenAI's format: a quoted header line, then one merge per line (gzip for ``.gz``)."""
    text = '"bpe_simple_vocab_16e6.txt#version: 0.2\n' + "".join(f"{a} {b}\n"
                                                                 for a, b in merges)
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return path


@pytest.fixture(scope="session")
def write_clip():
    """``write_clip(path, merges)``: write a merges list in OpenAI's CLIP format."""
    return write_clip_file


@pytest.fixture(scope="session")
def clip_merges(corpus):
    """Merges (with ``</w>`` word ends) trained by the library on the cleaned corpus."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from ember.text.tokenizers import clip_clean

    t = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    t.pre_tokenizer = clip_pre_tokenizer()
    t.train_from_iterator([clip_clean(x) for x in corpus * 3], trainers.BpeTrainer(
        vocab_size=2000, min_frequency=2, end_of_word_suffix="</w>", show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
              for m in json.loads(t.to_str())["model"]["merges"]]
    assert len(merges) > 500
    return merges


@pytest.fixture(scope="session")
def clip_file(tmp_path_factory, clip_merges):
    return write_clip_file(tmp_path_factory.mktemp("clip") / "bpe_simple_vocab_16e6.txt.gz",
                           clip_merges)
