"""Readers and writers for the published tokenizer file formats.

* OpenAI GPT-2 ``encoder.json`` / Hugging Face ``vocab.json``: a JSON object token -> id.
* OpenAI GPT-2 ``vocab.bpe`` / Hugging Face ``merges.txt``: one merge ``left right`` per line,
  in priority order, after an optional ``#version: 0.2`` header line.
* OpenAI CLIP ``bpe_simple_vocab_16e6.txt[.gz]``: a header line, then merges as above.
* BERT ``vocab.txt``: one token per line; the line number (from 0) is the id.

Byte-level files spell every byte as one printable character (:func:`byte_to_unicode`), so no
token holds a space and a merge line always splits into exactly two parts.
"""
from __future__ import annotations

import gzip
import json
import os

__all__ = ["byte_to_unicode", "read_vocab_json", "read_merges", "read_wordpiece_vocab",
           "write_vocab_json", "write_merges", "first_out_of_order_merge"]


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's byte alphabet: byte value -> one printable character, in the order the files
    number them (the 188 bytes that print as themselves first, then the 68 control, space and
    blank bytes moved up to U+0100 onwards, so that no token contains whitespace).

        >>> m = byte_to_unicode()
        >>> m[ord("a")], m[ord(" ")], len(set(m.values()))
        ('a', 'Ġ', 256)
    """
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in keep}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


def _open_text(path):
    path = os.fspath(path)
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def read_vocab_json(path) -> dict[str, int]:
    """A ``token -> id`` JSON file (``encoder.json``, ``vocab.json``)."""
    with _open_text(path) as f:
        try:
            vocab = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{os.fspath(path)}: not a JSON vocabulary ({e})") from None
    if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
        raise ValueError(f"{os.fspath(path)}: expected a JSON object mapping tokens to "
                         "integer ids")
    return vocab


def read_merges(path, *, skip_first_line=None, limit=None) -> list[tuple[str, str]]:
    """Merges in priority order from a ``vocab.bpe``/``merges.txt``/CLIP file.

    ``skip_first_line``: ``None`` skips the first line when it is a ``#version`` header (the
    Hugging Face reader's rule); ``True`` always skips it (OpenAI's readers do, and CLIP's file
    starts with a quoted header). ``limit`` keeps the first ``limit`` merges. Blank lines are
    ignored; any other line that is not two space-separated parts is an error naming the file
    and line.
    """
    merges = []
    with _open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            if lineno == 1 and (skip_first_line or (skip_first_line is None
                                                    and line.startswith("#version"))):
                continue
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split(" ")
            if len(parts) != 2:
                raise ValueError(f"{os.fspath(path)}, line {lineno}: expected a merge "
                                 f"'left right', got {line!r}")
            merges.append((parts[0], parts[1]))
            if limit is not None and len(merges) >= limit:
                break
    return merges


def first_out_of_order_merge(merges, base_symbols):
    """Index of the first merge whose parts are not base symbols or results of earlier merges,
    or whose result an earlier merge already made; ``None`` for a list as a BPE trainer writes
    it. On such an ordered list, the Rust library's merge queue gives exactly the tokens of
    OpenAI's loop (which merges every occurrence of the best pair before looking again); on
    other lists the two may differ."""
    known = set(base_symbols)
    for i, (a, b) in enumerate(merges):
        ab = a + b
        if a not in known or b not in known or ab in known:
            return i
        known.add(ab)
    return None


def read_wordpiece_vocab(path) -> dict[str, int]:
    """A BERT ``vocab.txt``: token on line ``i`` (from 0) has id ``i``; trailing whitespace of a
    line is dropped. A token listed twice keeps its last line, as BERT's own reader does."""
    with _open_text(path) as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return {line.rstrip(): i for i, line in enumerate(lines)}


def _atomic_write(path, text):
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)


def write_vocab_json(path, vocab: dict[str, int]) -> None:
    """Write ``vocab`` (token -> id) as compact JSON sorted by id (atomic)."""
    ordered = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    _atomic_write(path, json.dumps(ordered, ensure_ascii=False))


def write_merges(path, merges) -> None:
    """Write merges with the ``#version: 0.2`` header both GPT-2 readers accept (atomic)."""
    _atomic_write(path, "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
