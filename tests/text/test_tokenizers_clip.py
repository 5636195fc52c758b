"""CLIP BPE against a from-scratch reference of OpenAI's algorithm written here (a Python loop,
fine for a test), on a multilingual corpus, on generated text and on adversarial merge lists."""
import gzip
import html
import json
import pickle
import random
import re
import unicodedata
import warnings

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.text.tokenizers import CLIPTokenizer

PROPERTY = settings(derandomize=True, database=None, max_examples=300, deadline=None)
SOT, EOT = "<|startoftext|>", "<|endoftext|>"


# ----------------------------------------------------------------- the reference
def _byte_symbols():
    """byte -> character: printable Latin-1 bytes stand for themselves, the other 68 bytes
    take the code points from 256 upwards, in byte order."""
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    others = [b for b in range(256) if b not in printable]
    table = {b: chr(b) for b in printable}
    table.update({b: chr(256 + k) for k, b in enumerate(others)})
    return table, printable + others


class ReferenceCLIP:
    """OpenAI's CLIP tokenizer, step by step, in plain Python."""

    SPLIT = regex.compile(r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|"
                          r"[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+", regex.IGNORECASE)

    def __init__(self, merges_path, num_merges=48894):
        opener = gzip.open if str(merges_path).endswith(".gz") else open
        with opener(merges_path, "rt", encoding="utf-8") as f:
            lines = f.read().split("\n")
        self.merges = [tuple(line.split()) for line in lines[1:num_merges + 1] if line]
        self.byte_char, order = _byte_symbols()
        self.char_byte = {c: b for b, c in self.byte_char.items()}
        base = [self.byte_char[b] for b in order]
        tokens = base + [c + "</w>" for c in base] + ["".join(m) for m in self.merges]
        tokens += [SOT, EOT]
        self.encoder = {t: i for i, t in enumerate(tokens)}
        self.decoder = {i: t for t, i in self.encoder.items()}
        self.rank = {m: r for r, m in enumerate(self.merges)}

    @staticmethod
    def clean(text):
        try:
            import ftfy

            text = ftfy.fix_text(text)
        except ImportError:
            text = unicodedata.normalize("NFC", text)
        text = html.unescape(html.unescape(text)).strip()
        return re.sub(r"\s+", " ", text).strip().lower()

    def bpe(self, piece):
        if piece in (SOT, EOT):
            return [piece]
        word = list(piece[:-1]) + [piece[-1] + "</w>"]
        while len(word) > 1:
            ranked = [(self.rank[p], p) for p in zip(word, word[1:]) if p in self.rank]
            if not ranked:
                break
            best = min(ranked)[1]
            merged, i = [], 0
            while i < len(word):            # every occurrence, left to right
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        return word

    def encode(self, text):
        ids = []
        for piece in self.SPLIT.findall(self.clean(text)):
            if piece not in (SOT, EOT):
                piece = "".join(self.byte_char[b] for b in piece.encode("utf-8"))
            ids += [self.encoder[t] for t in self.bpe(piece)]
        return ids

    def decode(self, ids):
        chars = "".join(self.decoder[i] for i in ids)
        data = bytearray()
        for c in chars:
            data += bytes([self.char_byte[c]]) if c in self.char_byte else c.encode("utf-8")
        return data.decode("utf-8", errors="replace").replace("</w>", " ")

    def tokenize(self, texts, context_length=77, truncate=False):
        out = np.zeros((len(texts), context_length), np.int64)
        for i, t in enumerate(texts):
            ids = [self.encoder[SOT]] + self.encode(t) + [self.encoder[EOT]]
            if len(ids) > context_length:
                if not truncate:
                    raise RuntimeError(f"Input {t} is too long for context length "
                                       f"{context_length}")
                ids = ids[:context_length - 1] + [self.encoder[EOT]]
            out[i, :len(ids)] = ids
        return out


SPECIAL_TEXTS = [SOT, EOT, f"{SOT}hello{EOT}", f"a {EOT} b", "!<|endoftext|>", "<|EndOfText|>",
                 f"{EOT}{EOT}", f"x{SOT}", f"'s{EOT}", f"{EOT}!", "<|endoftext", "|>",
                 "&lt;|endoftext|&gt;", f" \t{SOT}  ", f"12{EOT}34", f"é{SOT}😀", "it'ſ", "'ſ'ſ"]


@pytest.fixture(scope="module")
def ref(clip_file):
    return ReferenceCLIP(clip_file)


@pytest.fixture(scope="module")
def clip(clip_file):
    return CLIPTokenizer.from_file(clip_file)


# ----------------------------------------------------------------- parity
def test_reference_sanity(ref):
    assert ref.encode("") == [] and ref.encode("   ") == []
    assert len(ref.encoder) == 512 + len(ref.merges) + 2
    assert ref.decode(ref.encode("Hello   World")) == "hello world "


def test_ids_equal_reference_on_corpus(clip, ref, corpus):
    for text in corpus + SPECIAL_TEXTS:
        assert clip.encode(text) == ref.encode(text), text


def test_batch_equals_reference(clip, ref, corpus):
    texts = corpus + SPECIAL_TEXTS + corpus[:20]        # special texts mixed into the batch
    assert clip.encode_batch(texts) == [ref.encode(t) for t in texts]
    with_offsets = clip.encode_batch(texts, return_offsets=True)
    assert [ids for ids, _ in with_offsets] == [ref.encode(t) for t in texts]


def test_vocab_numbered_as_openai(clip, ref):
    assert clip.get_vocab() == ref.encoder
    assert clip.vocab_size == len(ref.encoder)
    assert clip.special_tokens == {SOT: len(ref.encoder) - 2, EOT: len(ref.encoder) - 1}


SCRIPTS = st.sampled_from([
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),         # ASCII
    st.characters(min_codepoint=0xA0, max_codepoint=0x24F),        # Latin-1, Latin Extended
    st.characters(min_codepoint=0x370, max_codepoint=0x4FF),       # Greek, Cyrillic
    st.characters(min_codepoint=0x300, max_codepoint=0x36F),       # combining marks
    st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),     # kana
    st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF),     # CJK ideographs
    st.characters(min_codepoint=0x1F300, max_codepoint=0x1F64F),   # emoji
    st.sampled_from(list(" \t\n\u00a0\u3000'&;<|>!?.,0123456789")),
])


@PROPERTY
@given(st.lists(SCRIPTS.flatmap(lambda s: st.text(s, max_size=8)), max_size=8).map("".join))
def test_ids_equal_reference_generated(clip, ref, text):
    assert clip.encode(text) == ref.encode(text)


@PROPERTY
@given(st.text(alphabet=st.characters(exclude_categories=["Cs", "Cn", "Co"]), max_size=40))
def test_ids_equal_reference_any_assigned_character(clip, ref, text):
    assert clip.encode(text) == ref.encode(text)


def test_split_equals_openai_regex_on_every_character(clip):
    """The library's split (no case-insensitive mode) against OpenAI's case-insensitive regex,
    for every code point assigned in this Python's Unicode, in the positions that matter."""
    chars = [chr(c) for c in range(0x110000)
             if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) not in ("Cn", "Cs")]
    for k in range(0, len(chars), 4000):
        probe = " ".join(f"x{c}x 1{c}1 !{c}! '{c} <|{c}tartoftext|>" for c in
                         chars[k:k + 4000]).lower()
        got = [p for p, _ in clip._pieces(probe)]
        assert got == ReferenceCLIP.SPLIT.findall(probe), f"characters {k} to {k + 4000}"


def _random_ordered_merges(words, n, seed):
    """A merge list in a random order that is still a valid training order (each merge joins
    two tokens that exist already and makes a new one), so the ranks disagree with frequency."""
    rng = random.Random(seed)
    ref_tok = ReferenceCLIP.__new__(ReferenceCLIP)
    ref_tok.byte_char, _ = _byte_symbols()
    merges, made, ref_tok.rank = [], set(), {}
    tries = 0
    while len(merges) < n and tries < 50 * n:
        tries += 1
        w = rng.choice(words)
        piece = "".join(ref_tok.byte_char[b] for b in w.encode("utf-8"))
        parts = ref_tok.bpe(piece)
        if len(parts) < 2:
            continue
        i = rng.randrange(len(parts) - 1)
        pair = (parts[i], parts[i + 1])
        if "".join(pair) in made or any(len(p) == 1 and ord(p) > 0xFFFF for p in pair):
            continue
        made.add("".join(pair))
        ref_tok.rank[pair] = len(merges)
        merges.append(pair)
    return merges


def test_ids_equal_reference_random_merge_order(tmp_path, corpus, write_clip):
    words = [p for t in corpus for p in ReferenceCLIP.SPLIT.findall(ReferenceCLIP.clean(t))
             if p not in (SOT, EOT)]
    for seed in range(3):
        merges = _random_ordered_merges(words, 600, seed)
        path = write_clip(tmp_path / f"random{seed}.txt", merges)
        ref, clip = ReferenceCLIP(path), CLIPTokenizer.from_file(path)
        texts = corpus + [" ".join(random.Random(seed).sample(words, 30)) for _ in range(50)]
        assert clip.encode_batch(texts) == [ref.encode(t) for t in texts]


def test_out_of_order_merge_list_warns(tmp_path, clip_merges, write_clip):
    shuffled = list(clip_merges)
    random.Random(0).shuffle(shuffled)
    path = write_clip(tmp_path / "shuffled.txt", shuffled)
    with pytest.warns(UserWarning, match="ids may differ from OpenAI"):
        CLIPTokenizer.from_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CLIPTokenizer.from_file(write_clip(tmp_path / "ordered.txt", clip_merges))


# ----------------------------------------------------------------- decode, tokenize
def test_decode_equals_reference(clip, ref, corpus):
    for text in corpus[:200] + SPECIAL_TEXTS:
        ids = clip.encode(text)
        assert clip.decode(ids) == ref.decode(ids)
    # ids that cut a character's bytes decode with replacement characters, as OpenAI's
    ids = clip.encode("日本語 😀 é")
    byte_ids = [clip.token_to_id(c) for c in ref.byte_char.values()][:300:7]
    for cut in (ids[:1], ids[1:], byte_ids, list(reversed(byte_ids))):
        assert clip.decode(cut) == ref.decode(cut)


def test_tokenize_equals_reference(clip, ref, corpus):
    texts = [t for t in corpus if len(ref.encode(t)) <= 75][:64]
    got = clip.tokenize(texts)
    assert isinstance(got, ember.Tensor) and got.dtype == ember.int64
    assert got.shape == (len(texts), 77)
    np.testing.assert_array_equal(got.numpy(), ref.tokenize(texts))
    np.testing.assert_array_equal(clip.tokenize("a photo of a dog").numpy(),
                                  ref.tokenize(["a photo of a dog"]))
    np.testing.assert_array_equal(clip.tokenize(texts[:3], context_length=20,
                                                truncate=True).numpy(),
                                  ref.tokenize(texts[:3], 20, truncate=True))


def test_tokenize_too_long(clip, ref):
    long = "word " * 100
    with pytest.raises(RuntimeError, match="too long for context length 77"):
        clip.tokenize(["short", long])
    row = clip.tokenize([long], truncate=True).numpy()[0]
    np.testing.assert_array_equal(row, ref.tokenize([long], truncate=True)[0])
    assert row[0] == clip.token_to_id(SOT) and row[-1] == clip.token_to_id(EOT)


def test_encode_with_special_tokens_and_pairs(clip, ref):
    sot, eot = clip.token_to_id(SOT), clip.token_to_id(EOT)
    assert clip.encode("a dog") == ref.encode("a dog")            # default: no special tokens
    assert clip.encode("a dog", add_special_tokens=True) == [sot] + ref.encode("a dog") + [eot]
    enc = clip.encode_plus("a dog", "a cat", add_special_tokens=True)
    assert enc.ids == [sot] + ref.encode("a dog") + [eot] + ref.encode("a cat") + [eot]
    assert enc.special_tokens_mask[0] == 1 and enc.special_tokens_mask[1] == 0
    enc = clip.encode_plus(f"a {EOT} dog", f"!{EOT}", add_special_tokens=True)
    assert enc.ids == [sot] + ref.encode(f"a {EOT} dog") + [eot] + ref.encode(f"!{EOT}") + [eot]


def test_offsets_index_the_cleaned_text(clip, corpus):
    for text in corpus[:150] + SPECIAL_TEXTS:
        clean = clip.clean(text)
        ids, offsets = clip.encode(text, return_offsets=True)
        assert len(offsets) == len(ids)
        for i, (s, e) in zip(ids, offsets):
            tok = clip.id_to_token(i)
            if tok in (SOT, EOT):
                assert clean[s:e] == tok
            else:
                assert 0 <= s < e <= len(clean) and not clean[s:e].isspace()
        spans = sorted(set(offsets))
        assert "".join(clean[s:e] for s, e in spans) == clean.replace(" ", "")
    ids, offsets = clip.encode(f"ab {EOT} cd", return_offsets=True)
    assert offsets[ids.index(clip.token_to_id(EOT))] == (3, 16)
    assert all(e <= 2 or s >= 17 for s, e in offsets if (s, e) != (3, 16))


# ----------------------------------------------------------------- files
def test_file_variants(clip, clip_file, clip_merges, tmp_path, corpus, write_clip):
    plain = write_clip(tmp_path / "bpe.txt", clip_merges)
    assert CLIPTokenizer.from_file(plain).encode_batch(corpus) == clip.encode_batch(corpus)
    # OpenAI's file has more merges than CLIP uses: only the first num_merges count
    short = CLIPTokenizer.from_file(clip_file, num_merges=100)
    ref100 = ReferenceCLIP(clip_file, num_merges=100)
    assert short.vocab_size == 512 + 100 + 2
    assert short.encode_batch(corpus) == [ref100.encode(t) for t in corpus]
    # Hugging Face's layout of the same tokenizer: vocab.json + merges.txt
    (tmp_path / "vocab.json").write_text(json.dumps(clip.get_vocab()), "utf-8")
    (tmp_path / "merges.txt").write_text(
        "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in clip_merges), "utf-8")
    hf = CLIPTokenizer.from_vocab_merges(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert hf.encode_batch(corpus) == clip.encode_batch(corpus)
    with_json = CLIPTokenizer.from_file(clip_file, encoder_json=tmp_path / "vocab.json")
    assert with_json.encode_batch(corpus) == clip.encode_batch(corpus)


def test_save_load_pickle(clip, tmp_path, corpus):
    clip.save(tmp_path / "c")
    loaded = CLIPTokenizer.load(tmp_path / "c")
    assert loaded.encode_batch(corpus + SPECIAL_TEXTS) == clip.encode_batch(
        corpus + SPECIAL_TEXTS)
    again = pickle.loads(pickle.dumps(clip))
    assert again.encode_batch(SPECIAL_TEXTS) == clip.encode_batch(SPECIAL_TEXTS)


def test_missing_specials_rejected(tmp_path, clip_merges, write_clip):
    vocab = {t: i for t, i in ReferenceCLIP(write_clip(
        tmp_path / "m.txt", clip_merges)).encoder.items() if t != EOT}
    (tmp_path / "v.json").write_text(json.dumps(vocab), "utf-8")
    with pytest.raises(ValueError, match="endoftext"):
        CLIPTokenizer.from_file(tmp_path / "m.txt", encoder_json=tmp_path / "v.json")
