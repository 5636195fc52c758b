"""Text tokenizer benchmarks: ``encode_batch`` of 10,000 lines against Python loops.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/text_tokenizers.py

Goal (issue "text", acceptance 5): ``encode_batch`` of 10k lines at least 5x faster than
encoding them in a Python loop. Figures (throughput ratio = loop time / encode_batch time):

1. GPT-2 byte-level BPE: ``encode_batch`` vs a Python loop calling ember's own ``encode`` per
   line. The per-line work is already in Rust either way: what ``encode_batch`` wins is the
   per-call overhead and the library's threads, so the ratio is bounded by the free cores
   (2 on the reference VM, shared with whatever else runs);
2. the same vs a loop calling transformers' GPT-2 tokenizer per line
   (``tok(text)["input_ids"]``), the loop users coming from Hugging Face write;
3. the same vs OpenAI's GPT-2 algorithm in plain Python (``encoder.py``: regex split, byte
   mapping, the merge loop, with its per-word cache), one pass over the data with both caches
   cleared first (tokenizing a data set once);
4. CLIP: ``encode_batch`` vs OpenAI's ``simple_tokenizer`` algorithm in plain Python (NFC,
   HTML unescape, whitespace, lower case, the case-insensitive regex, merges with ``</w>``),
   one pass, caches cleared;
5. BERT WordPiece: ``encode_batch`` vs a loop of ember's ``encode``.

The text is 10,000 lines of English prose and code (comments and docstrings of the Python
standard library, read from this interpreter's installation, so no download); the vocabularies
are trained on it by the library (8k tokens each). Each figure first checks that both sides
give identical ids.
"""
from __future__ import annotations

import glob
import html
import os
import re
import sysconfig
import unicodedata

from harness import Suite  # first: fixes the thread count before numpy is imported

suite = Suite("text_tokenizers")
N_LINES = 10_000
_cache = {}


def lines():
    """10,000 lines of text from the standard library's sources (deterministic)."""
    if "lines" in _cache:
        return _cache["lines"]
    out = []
    for path in sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip().lstrip("#").strip()
                if len(line) >= 30:
                    out.append(line)
        if len(out) >= N_LINES:
            break
    if len(out) < N_LINES:
        raise RuntimeError(f"only {len(out)} lines of text found in the standard library")
    _cache["lines"] = out[:N_LINES]
    return _cache["lines"]


# ----------------------------------------------------------------- pure-Python references
def _byte_chars():
    keep = [*range(33, 127), *range(161, 173), *range(174, 256)]
    rest = [b for b in range(256) if b not in keep]
    table = {b: chr(b) for b in keep}
    table.update({b: chr(256 + i) for i, b in enumerate(rest)})
    return table, keep + rest


class PyBPE:
    """OpenAI's BPE in plain Python (GPT-2's ``encoder.py`` or CLIP's ``simple_tokenizer``),
    with the per-word cache both of them keep."""

    def __init__(self, vocab, merges, pattern, suffix="", clean=None):
        import regex

        self.vocab, self.suffix, self.clean = vocab, suffix, clean
        self.rank = {tuple(m): r for r, m in enumerate(merges)}
        self.split = regex.compile(pattern)
        self.byte_char, _ = _byte_chars()
        self.cache = {}

    def bpe(self, piece):
        word = list(piece[:-1]) + [piece[-1] + self.suffix]
        while len(word) > 1:
            best = min(zip(word, word[1:]), key=lambda p: self.rank.get(p, 1 << 60))
            if best not in self.rank:
                break
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == best[0] and word[i + 1] == best[1]:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        return [self.vocab[t] for t in word]

    def encode(self, text):
        if self.clean is not None:
            text = self.clean(text)
        ids = []
        for piece in self.split.findall(text):
            got = self.cache.get(piece)
            if got is None:
                got = self.bpe("".join(self.byte_char[b] for b in piece.encode("utf-8")))
                self.cache[piece] = got
            ids += got
        return ids


GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
CLIP_PATTERN = (r"""(?i)<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|"""
                r"""[\p{N}]|[^\s\p{L}\p{N}]+""")   # OpenAI's, matched ignoring case


def _openai_clip_clean(text):
    text = html.unescape(html.unescape(unicodedata.normalize("NFC", text))).strip()
    return re.sub(r"\s+", " ", text).strip().lower()


def _merges_of(backend):
    import json

    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
            for m in json.loads(backend.to_str())["model"]["merges"]]


def _check(name, a, b):
    if a != b:
        bad = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        raise AssertionError(f"{name}: the two sides disagree first on line {bad}")


def _loop(encode, texts):
    return lambda: [encode(t) for t in texts]


# ----------------------------------------------------------------- figures
def gpt2():
    if "gpt2" not in _cache:
        from ember.text.tokenizers import train_bpe

        _cache["gpt2"] = train_bpe(lines(), vocab_size=8000)
    return _cache["gpt2"]


def _one_pass(tok, ref, texts):
    """Both sides tokenizing the data once from cold caches (the library keeps a word cache
    in its BPE model, OpenAI's code a dict)."""
    def run_e():
        tok.backend.model._clear_cache()
        return tok.encode_batch(texts)

    def run_py():
        ref.cache = {}
        return [ref.encode(t) for t in texts]
    return run_e, run_py


@suite.figure("GPT-2 encode_batch 10k vs loop of encode", unit="ms", goal=5.0,
              anchor="loop", number=1, higher_is_better=True)
def gpt2_vs_loop():
    tok, texts = gpt2(), lines()
    _check("GPT-2", tok.encode_batch(texts), [tok.encode(t) for t in texts])
    return (lambda: tok.encode_batch(texts)), _loop(tok.encode, texts)


@suite.figure("GPT-2 encode_batch 10k vs transformers loop", unit="ms", goal=5.0,
              anchor="hf", number=1, higher_is_better=True)
def gpt2_vs_transformers():
    import tempfile

    from transformers import GPT2Tokenizer

    tok, texts = gpt2(), lines()
    d = tempfile.mkdtemp()
    tok.save(d)
    hf = GPT2Tokenizer.from_pretrained(d)
    _check("GPT-2", tok.encode_batch(texts), [hf(t)["input_ids"] for t in texts])
    return (lambda: tok.encode_batch(texts)), _loop(lambda t: hf(t)["input_ids"], texts)


@suite.figure("GPT-2 encode_batch 10k vs Python BPE, 1 pass", unit="ms", goal=5.0,
              anchor="py", number=1, higher_is_better=True)
def gpt2_vs_python():
    tok, texts = gpt2(), lines()
    ref = PyBPE(tok.get_vocab(), _merges_of(tok.backend), GPT2_PATTERN)
    _check("GPT-2", tok.encode_batch(texts), [ref.encode(t) for t in texts])
    return _one_pass(tok, ref, texts)


@suite.figure("CLIP encode_batch 10k vs Python BPE, 1 pass", unit="ms", goal=5.0,
              anchor="py", number=1, higher_is_better=True)
def clip_vs_python():
    import tempfile

    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    from ember.text.tokenizers import CLIPTokenizer, clip_clean
    from ember.text.tokenizers.clip import PATTERN

    texts = lines()
    t = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PATTERN), behavior="removed", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.train_from_iterator([clip_clean(x) for x in texts], trainers.BpeTrainer(
        vocab_size=8000, end_of_word_suffix="</w>", show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    merges = _merges_of(t)
    path = os.path.join(tempfile.mkdtemp(), "bpe_simple_vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write('"header\n' + "".join(f"{a} {b}\n" for a, b in merges))
    tok = CLIPTokenizer.from_file(path)
    ref = PyBPE(tok.get_vocab(), merges, CLIP_PATTERN, "</w>", _openai_clip_clean)
    _check("CLIP", tok.encode_batch(texts), [ref.encode(x) for x in texts])
    return _one_pass(tok, ref, texts)


@suite.figure("BERT encode_batch 10k vs loop of encode", unit="ms", goal=5.0,
              anchor="loop", number=1, higher_is_better=True)
def bert_vs_loop():
    import tempfile

    from tokenizers.implementations import BertWordPieceTokenizer

    from ember.text.tokenizers import BERTTokenizer

    texts = lines()
    trainer = BertWordPieceTokenizer()
    trainer.train_from_iterator(texts, vocab_size=8000, show_progress=False)
    d = tempfile.mkdtemp()
    trainer.save_model(d)
    tok = BERTTokenizer.from_vocab(os.path.join(d, "vocab.txt"))
    _check("BERT", tok.encode_batch(texts), [tok.encode(t) for t in texts])
    return (lambda: tok.encode_batch(texts)), _loop(tok.encode, texts)


if __name__ == "__main__":
    import sys

    result = suite.main()
    print("# loop time / encode_batch time: " + "; ".join(
        f"{r['figure'].replace(' encode_batch 10k', '')}: {r['throughput_ratio']:.2f}x"
        for r in result["rows"]))
    try:
        load = os.getloadavg()[0]
        print(f"# {os.cpu_count()} cores; load average {load:.2f} when done (the library's "
              "threads need free cores)", file=sys.stdout)
    except OSError:
        pass
