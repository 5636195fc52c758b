"""CTC decoders in the spirit of ``torchaudio.models.decoder``: ``ctc_decoder(...)`` builds a
``CTCDecoder`` (beam search, optional lexicon, optional language model through the
``CTCDecoderLM`` protocol or a plain callable; no n-gram library), ``ctc_greedy_decoder``
a ``CTCGreedyDecoder`` (best token per frame). Both return, per utterance, a list of
``CTCHypothesis(tokens, words, score, timesteps)``, best first.

    >>> import numpy as np
    >>> from ember.audio.models.decoder import ctc_decoder
    >>> frames = np.eye(4)[[2, 3, 1, 0]] * 0.96 + 0.01      # h, i, |, blank; (frames, tokens)
    >>> emissions = np.log(frames[None]).astype(np.float32)  # (batch, frames, tokens)
    >>> decoder = ctc_decoder(lexicon={"hi": "h i |"}, tokens=["-", "|", "h", "i"],
    ...                       lm=lambda context, word: -1.0, nbest=1)
    >>> hyp = decoder(emissions)[0][0]
    >>> hyp.words, hyp.tokens.tolist(), hyp.timesteps.tolist()
    (['hi'], [2, 3, 1], [0, 1, 2])

Differences from torchaudio (which wraps flashlight): the search is an exact CTC prefix beam
search (see ``_prefix_search``), the lexicon trie carries no LM look-ahead smearing, and
``lm`` may not be a KenLM file (pass a ``CTCDecoderLM`` or a callable instead).
"""
from __future__ import annotations

import itertools
import os
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

import ember

from ._prefix_search import PrefixBeamSearch, Trie

__all__ = ["CTCDecoder", "CTCDecoderLM", "CTCDecoderLMState", "CTCGreedyDecoder",
           "CTCHypothesis", "ctc_decoder", "ctc_greedy_decoder"]


class CTCHypothesis(NamedTuple):
    """One decoding: ``tokens`` (L,) int64 token ids (repeats collapsed, no blanks),
    ``words`` (with a lexicon; else empty), ``score`` and ``timesteps`` (L,) int32, the
    frame at which each token was emitted."""

    tokens: "ember.Tensor"
    words: List[str]
    score: float
    timesteps: "ember.Tensor"


class CTCDecoderLMState:
    """A language-model state: a node in a tree of contexts. ``child(i)`` returns (creating
    it on first use) the state after index ``i``; states are compared by identity, so a
    context must map to one state object (use ``child``)."""

    def __init__(self):
        self._children = {}

    @property
    def children(self) -> Dict[int, "CTCDecoderLMState"]:
        return self._children

    def child(self, usr_index: int) -> "CTCDecoderLMState":
        st = self._children.get(usr_index)
        if st is None:
            st = self._children[usr_index] = type(self)()
        return st

    def compare(self, state: "CTCDecoderLMState") -> int:
        return 0 if state is self else (-1 if id(self) < id(state) else 1)


class CTCDecoderLM:
    """Base class of language models for ``CTCDecoder``: subclasses implement

    - ``start(start_with_nothing) -> state``
    - ``score(state, usr_token_idx) -> (new state, score)``: the word index (with a
      lexicon: into the lexicon's words, or ``lm_dict``) or the token index (without one)
    - ``finish(state) -> (state, score)``: the end-of-sentence score.
    """

    def start(self, start_with_nothing: bool) -> CTCDecoderLMState:
        raise TypeError(f"{type(self).__name__} must implement start(start_with_nothing)")

    def score(self, state, usr_token_idx: int) -> Tuple[CTCDecoderLMState, float]:
        raise TypeError(f"{type(self).__name__} must implement score(state, usr_token_idx)")

    def finish(self, state) -> Tuple[CTCDecoderLMState, float]:
        raise TypeError(f"{type(self).__name__} must implement finish(state)")


class _CallableLM(CTCDecoderLM):
    """Wraps ``fn(context, item) -> float`` (context: the tuple of earlier words or tokens,
    as strings; ``item``: the next one, or ``None`` for the end of the sentence)."""

    def __init__(self, fn, vocab):
        self.fn, self.vocab = fn, vocab

    def start(self, start_with_nothing):
        return ()

    def score(self, state, usr_token_idx):
        item = self.vocab[usr_token_idx]
        return state + (item,), float(self.fn(state, item))

    def finish(self, state):
        return state, float(self.fn(state, None))


def _read_lines(path):
    with open(path, encoding="utf-8") as fh:
        return [ln.rstrip("\n") for ln in fh if ln.strip()]


def _load_tokens(tokens):
    if isinstance(tokens, (str, os.PathLike)):
        if not os.path.isfile(tokens):
            raise FileNotFoundError(f"ctc_decoder: tokens file {tokens!r} does not exist")
        tokens = [ln.split()[0] for ln in _read_lines(tokens)]
    tokens = list(tokens)
    if len(set(tokens)) != len(tokens):
        raise ValueError("ctc_decoder: tokens must be unique")
    return tokens


def _load_lexicon(lexicon):
    """Lexicon file ("word t o k e n s" per line), dict word -> spelling(s), or (word,
    spelling(s)) pairs -> ordered dict word -> list of spellings. Spellings: a string of
    space-separated tokens, or a list of such strings / of token lists."""
    out: Dict[str, List[List[str]]] = {}
    if isinstance(lexicon, (str, os.PathLike)):
        if not os.path.isfile(lexicon):
            raise FileNotFoundError(f"ctc_decoder: lexicon file {lexicon!r} does not exist")
        for i, ln in enumerate(_read_lines(lexicon)):
            parts = ln.split()
            if len(parts) < 2:
                raise ValueError(f"ctc_decoder: lexicon {lexicon!r} line {i + 1}: expected "
                                 f"'word token token ...', got {ln!r}")
            out.setdefault(parts[0], []).append(parts[1:])
        return out
    items = lexicon.items() if isinstance(lexicon, dict) else lexicon
    for word, spellings in items:
        if isinstance(spellings, str):
            spellings = [spellings]
        for sp in spellings:
            out.setdefault(word, []).append(sp.split() if isinstance(sp, str) else list(sp))
    return out


def _emissions(emissions, lengths):
    e = emissions.detach().numpy() if isinstance(emissions, ember.Tensor) else \
        np.asarray(emissions)
    if e.ndim != 3:
        raise ValueError(f"emissions must be 3-D (batch, frames, tokens), got shape "
                         f"{tuple(e.shape)}")
    if e.dtype.kind != "f":
        raise TypeError(f"emissions must be floating point, got {e.dtype}")
    B, T, _ = e.shape
    if lengths is None:
        ln = np.full(B, T, np.int64)
    else:
        ln = (lengths.numpy() if isinstance(lengths, ember.Tensor)
              else np.asarray(lengths)).reshape(-1).astype(np.int64)
        if ln.shape[0] != B or (ln < 0).any() or (ln > T).any():
            raise ValueError(f"lengths must hold {B} values in [0, {T}], got {ln.tolist()}")
    return e, ln


def _hypothesis(tokens, words, score, times):
    return CTCHypothesis(ember.tensor(np.asarray(tokens, np.int64)), list(words), float(score),
                         ember.tensor(np.asarray(times, np.int32)))


class CTCDecoder:
    """CTC beam search decoder; build it with ``ctc_decoder``. ``decoder(emissions,
    lengths=None)`` decodes a batch; ``decode_begin``/``decode_step``/``decode_end``/
    ``get_final_hypothesis`` decode one utterance online, chunk by chunk."""

    def __init__(self, nbest, tokens, words, trie, lm, blank, sil, unk, options):
        self.nbest = nbest
        self.tokens = tokens
        self.word_list = words
        self.blank, self.sil = blank, sil
        self.lm = lm
        self._opts = dict(blank=blank, sil=sil, trie=trie, lm=lm, unk_word=unk, **options)
        self._online = None

    def _search(self):
        return PrefixBeamSearch(**self._opts)

    def _to_hypos(self, search):
        out = []
        for score, toks, words, times in search.results()[:self.nbest]:
            out.append(_hypothesis(toks, [self.word_list[w] for w in words], score, times))
        return out

    def __call__(self, emissions, lengths=None) -> List[List[CTCHypothesis]]:
        e, ln = _emissions(emissions, lengths)
        if e.shape[2] != len(self.tokens):
            raise ValueError(f"emissions have {e.shape[2]} classes, the decoder "
                             f"{len(self.tokens)} tokens")
        result = []
        for b in range(e.shape[0]):
            s = self._search()
            s.begin()
            s.step(e[b, :ln[b]])
            s.end()
            result.append(self._to_hypos(s))
        return result

    def decode_begin(self):
        self._online = self._search()
        self._online.begin()

    def decode_step(self, emissions):
        """Consume (frames, tokens) emissions of the utterance being decoded online."""
        if self._online is None:
            raise RuntimeError("decode_step called before decode_begin")
        e = emissions.detach().numpy() if isinstance(emissions, ember.Tensor) else \
            np.asarray(emissions)
        if e.ndim != 2 or e.shape[1] != len(self.tokens):
            raise ValueError(f"emissions must be 2-D (frames, {len(self.tokens)}), got shape "
                             f"{tuple(e.shape)}")
        self._online.step(e)

    def decode_end(self):
        if self._online is None:
            raise RuntimeError("decode_end called before decode_begin")
        self._online.end()

    def get_final_hypothesis(self) -> List[CTCHypothesis]:
        if self._online is None:
            raise RuntimeError("get_final_hypothesis called before decode_begin")
        return self._to_hypos(self._online)

    def idxs_to_tokens(self, idxs) -> List[str]:
        ids = idxs.tolist() if hasattr(idxs, "tolist") else list(idxs)
        return [self.tokens[int(i)] for i in ids]


def ctc_decoder(lexicon, tokens, lm=None, lm_dict=None, nbest: int = 1, beam_size: int = 50,
                beam_size_token: Optional[int] = None, beam_threshold: float = 50,
                lm_weight: float = 2, word_score: float = 0, unk_score: float = float("-inf"),
                sil_score: float = 0, log_add: bool = False, blank_token: str = "-",
                sil_token: str = "|", unk_word: str = "<unk>") -> CTCDecoder:
    """Build a CTC beam search decoder, with torchaudio's arguments.

    Args:
        lexicon: None (lexicon-free), a lexicon file ("word t o k e n s" per line), a dict
            word -> spelling(s) or (word, spelling) pairs.
        tokens: the token list (index order) or a file with one token per line.
        lm: None, a ``CTCDecoderLM``, or a callable ``lm(context, item) -> float`` scoring
            ``item`` (a word with a lexicon, else a token; ``None`` at the end) after the tuple
            ``context`` of earlier ones.
        lm_dict: file or list of the LM's words (index order); default: the lexicon's words.
        nbest, beam_size, beam_size_token, beam_threshold, lm_weight, word_score, unk_score,
        sil_score, log_add, blank_token, sil_token, unk_word: as torchaudio's.
    """
    toks = _load_tokens(tokens)
    if blank_token not in toks:
        raise ValueError(f"ctc_decoder: blank_token {blank_token!r} is not among the tokens")
    blank = toks.index(blank_token)
    sil = toks.index(sil_token) if sil_token in toks else -1
    if isinstance(lm, (str, os.PathLike)):
        raise ValueError("ctc_decoder: lm given as a file path (a KenLM model) needs an n-gram "
                         "library, which ember does not use; pass a CTCDecoderLM or a callable "
                         "lm(context, item) -> float")
    if beam_size < 1:
        raise ValueError(f"ctc_decoder: beam_size must be at least 1, got {beam_size}")
    trie, words, unk = None, [], None
    if lexicon:
        lex = _load_lexicon(lexicon)
        if lm_dict is not None:
            words = _read_lines(lm_dict) if isinstance(lm_dict, (str, os.PathLike)) else \
                list(lm_dict)
            words = [w.split()[0] for w in words]
        else:
            words = list(lex)
        if unk_word not in words:
            words.append(unk_word)
        index = {w: i for i, w in enumerate(words)}
        tok_index = {t: i for i, t in enumerate(toks)}
        trie = Trie()
        for word, spellings in lex.items():
            if word not in index:
                raise ValueError(f"ctc_decoder: lexicon word {word!r} is not in lm_dict")
            for sp in spellings:
                bad = [t for t in sp if t not in tok_index]
                if bad:
                    raise ValueError(f"ctc_decoder: spelling of {word!r} uses unknown tokens "
                                     f"{bad}")
                trie.insert([tok_index[t] for t in sp], index[word])
        unk = index[unk_word]
    vocab = words if lexicon else toks
    if lm is not None and not isinstance(lm, CTCDecoderLM):
        if not callable(lm):
            raise TypeError(f"ctc_decoder: lm must be a CTCDecoderLM, a callable or None, got "
                            f"{type(lm).__name__}")
        lm = _CallableLM(lm, vocab)
    options = dict(lm_weight=float(lm_weight), word_score=float(word_score),
                   unk_score=float(unk_score), sil_score=float(sil_score),
                   beam_size=int(beam_size),
                   beam_size_token=int(beam_size_token or len(toks)),
                   beam_threshold=float(beam_threshold), log_add=bool(log_add))
    return CTCDecoder(nbest, toks, words, trie, lm, blank, sil, unk, options)


class CTCGreedyDecoder:
    """Best token per frame, repeats collapsed, blanks removed. ``decoder(emissions,
    lengths=None)`` -> one ``[CTCHypothesis]`` per utterance; ``words`` split at
    ``sil_token`` when ``tokens`` are given; ``score`` is the best path's summed emission."""

    def __init__(self, tokens: Optional[Sequence[str]] = None, blank: int = 0,
                 sil_token: str = "|"):
        self.tokens = None if tokens is None else _load_tokens(tokens)
        self.blank = blank
        self.sil_token = sil_token

    def __call__(self, emissions, lengths=None) -> List[List[CTCHypothesis]]:
        e, ln = _emissions(emissions, lengths)
        if not 0 <= self.blank < e.shape[2]:
            raise ValueError(f"blank {self.blank} out of range for {e.shape[2]} classes")
        best = e.argmax(axis=2)
        out = []
        for b in range(e.shape[0]):
            path = best[b, :ln[b]]
            score = float(e[b, np.arange(ln[b]), path].sum())
            new = np.ones(len(path), bool)
            new[1:] = path[1:] != path[:-1]
            keep = new & (path != self.blank)
            toks = path[keep]
            words = []
            if self.tokens is not None:
                text = [self.tokens[i] for i in toks]
                words = ["".join(g) for k, g in itertools.groupby(
                    text, lambda s: s == self.sil_token) if not k]
            out.append([_hypothesis(toks, words, score, np.nonzero(keep)[0])])
        return out

    def idxs_to_tokens(self, idxs) -> List[str]:
        if self.tokens is None:
            raise ValueError("idxs_to_tokens needs the decoder built with tokens")
        ids = idxs.tolist() if hasattr(idxs, "tolist") else list(idxs)
        return [self.tokens[int(i)] for i in ids]


def ctc_greedy_decoder(tokens: Optional[Sequence[str]] = None, blank: int = 0,
                       sil_token: str = "|") -> CTCGreedyDecoder:
    """Build a greedy (best path) CTC decoder."""
    return CTCGreedyDecoder(tokens, blank, sil_token)
