"""CTC decoders (ember.audio.models.decoder): greedy and beam search against emissions whose
best path is known, and against brute-force enumeration of every alignment on tiny cases
(with and without a lexicon, with a language model, log-add and max merging)."""
import itertools
import math

import numpy as np
import pytest

import ember
from ember.audio.models.decoder import (CTCDecoderLM, CTCDecoderLMState, ctc_decoder,
                                        ctc_greedy_decoder)

TOKENS = ["-", "|", "a", "b"]          # blank, silence, two letters


def log_softmax(x):
    return x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) - \
        x.max(-1, keepdims=True)


def random_emissions(seed, T, C=len(TOKENS)):
    return log_softmax(np.random.default_rng(seed).normal(size=(T, C)) * 1.5).astype(np.float32)


def collapse(path, blank=0):
    out = []
    prev = None
    for p in path:
        if p != prev and p != blank:
            out.append(p)
        prev = p
    return tuple(out)


def acoustic_scores(e, log_add):
    """label sequence -> log-add (or max) of its alignments' summed emissions."""
    T, C = e.shape
    res = {}
    for path in itertools.product(range(C), repeat=T):
        s = float(sum(np.float64(e[t, p]) for t, p in enumerate(path)))
        k = collapse(path)
        if k in res:
            res[k] = np.logaddexp(res[k], s) if log_add else max(res[k], s)
        else:
            res[k] = s
    return res


def parses(labels, spellings, sil, i=0):
    """Every segmentation of ``labels`` into lexicon words and silences at word boundaries:
    (words, number of silences)."""
    if i == len(labels):
        yield (), 0
        return
    if labels[i] == sil:
        for w, n in parses(labels, spellings, sil, i + 1):
            yield w, n + 1
    for word, sp in spellings:
        if tuple(labels[i:i + len(sp)]) == sp:
            for w, n in parses(labels, spellings, sil, i + len(sp)):
                yield (word,) + w, n


def bigram(context, item):
    """A toy LM: prefers 'ab' after 'ba', penalises repeats, likes ending after 'ab'."""
    prev = context[-1] if context else "<s>"
    if item is None:
        return -0.2 if prev == "ab" else -1.0
    return {("ba", "ab"): -0.1, ("<s>", "ba"): -0.3}.get((prev, item), -1.2 if prev == item
                                                         else -0.7)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("log_add", [True, False])
def test_lexicon_free_beam_search_equals_brute_force(seed, log_add):
    e = random_emissions(seed, 6)
    dec = ctc_decoder(None, TOKENS, nbest=5, beam_size=10_000, beam_threshold=1e9,
                      log_add=log_add)
    hyps = dec(e[None])[0]
    ref = sorted(acoustic_scores(e, log_add).items(), key=lambda kv: -kv[1])[:5]
    assert [tuple(h.tokens.tolist()) for h in hyps] == [k for k, _ in ref]
    np.testing.assert_allclose([h.score for h in hyps], [s for _, s in ref], rtol=1e-5)


@pytest.mark.parametrize("seed", [3, 4])
def test_token_lm_hook_equals_brute_force(seed):
    e = random_emissions(seed, 5)

    def lm(context, item):
        if item is None:
            return -0.5 * len(context)
        return -0.3 if (context and context[-1] != item) else -0.9

    dec = ctc_decoder(None, TOKENS, lm=lm, lm_weight=0.7, sil_score=-0.25, nbest=4,
                      beam_size=10_000, beam_threshold=1e9, log_add=True)
    hyps = dec(e[None])[0]
    scored = []
    for labels, a in acoustic_scores(e, True).items():
        ctx, bonus = (), 0.0
        for tok in labels:
            bonus += 0.7 * lm(ctx, TOKENS[tok]) + (-0.25 if tok == 1 else 0.0)
            ctx += (TOKENS[tok],)
        scored.append((a + bonus + 0.7 * lm(ctx, None), labels))
    scored.sort(key=lambda x: -x[0])
    assert [tuple(h.tokens.tolist()) for h in hyps] == [k for _, k in scored[:4]]
    np.testing.assert_allclose([h.score for h in hyps], [s for s, _ in scored[:4]], rtol=1e-5)


@pytest.mark.parametrize("seed", [5, 6, 7])
@pytest.mark.parametrize("log_add", [True, False])
def test_lexicon_and_word_lm_equal_brute_force(seed, log_add):
    e = random_emissions(seed, 6)
    lexicon = {"ab": ["a b"], "ba": ["b a"], "a": ["a"], "bb": ["b b"]}
    kw = dict(lm=bigram, lm_weight=0.8, word_score=-0.4, sil_score=-0.3, log_add=log_add)
    dec = ctc_decoder(lexicon, TOKENS, nbest=6, beam_size=10_000, beam_threshold=1e9, **kw)
    hyps = dec(e[None])[0]
    tok = {t: i for i, t in enumerate(TOKENS)}
    spellings = [(w, tuple(tok[c] for c in sp.split())) for w, sps in lexicon.items()
                 for sp in sps]
    scored = []
    for labels, a in acoustic_scores(e, log_add).items():
        for words, n_sil in parses(labels, spellings, tok["|"]):
            ctx, bonus = (), 0.0
            for w in words:
                bonus += 0.8 * bigram(ctx, w) - 0.4
                ctx += (w,)
            scored.append((a + bonus - 0.3 * n_sil + 0.8 * bigram(ctx, None), labels, words))
    scored.sort(key=lambda x: -x[0])
    got = [(tuple(h.tokens.tolist()), tuple(h.words)) for h in hyps]
    assert got == [(lab, w) for _, lab, w in scored[:6]]
    np.testing.assert_allclose([h.score for h in hyps], [s for s, _, _ in scored[:6]],
                               rtol=1e-5)


def spell(path_tokens, frames_per_token=2, T_extra=0, strength=6.0):
    """Emissions (T, C) whose best path emits ``path_tokens`` (names, '-' for blank),
    each for ``frames_per_token`` frames."""
    ids = [TOKENS.index(t) for t in path_tokens for _ in range(frames_per_token)]
    x = np.random.default_rng(0).normal(size=(len(ids) + T_extra, len(TOKENS)))
    for t, i in enumerate(ids):
        x[t, i] += strength
    return log_softmax(x).astype(np.float32)


def test_known_best_path_greedy_and_beam():
    path = ["a", "-", "a", "b", "|", "b", "a", "-"]
    e = spell(path)
    g = ctc_greedy_decoder(TOKENS, blank=0)(e[None])[0][0]
    assert g.tokens.tolist() == [2, 2, 3, 1, 3, 2]
    assert g.words == ["aab", "ba"]
    assert g.timesteps.tolist() == [0, 4, 6, 8, 10, 12]
    np.testing.assert_allclose(g.score, e.max(1).sum(), rtol=1e-6)
    beam = ctc_decoder({"aab": ["a a b |"], "ba": ["b a |"], "ab": ["a b |"]}, TOKENS,
                       lm_weight=0.0)(ember.tensor(e[None]))[0][0]
    assert beam.words == ["aab", "ba"]
    # the spelling of "ba" ends in "|": the lexicon makes the trailing blank frames emit it
    assert beam.tokens.tolist() == [2, 2, 3, 1, 3, 2, 1]
    assert beam.timesteps.tolist()[:6] == [0, 4, 6, 8, 10, 12]


def test_lexicon_constrains_the_output():
    e = spell(["a", "b", "a"])                 # acoustically "aba", not a lexicon sequence
    dec = ctc_decoder({"ab": ["a b"], "ba": ["b a"]}, TOKENS, lm_weight=0.0, nbest=3)
    for hyp in dec(e[None])[0]:
        assert hyp.words and set(hyp.words) <= {"ab", "ba"}
        assert "".join(hyp.words) == "".join(dec.idxs_to_tokens(hyp.tokens)).replace("|", "")
    free = ctc_decoder(None, TOKENS)(e[None])[0][0]
    assert free.tokens.tolist() == [2, 3, 2]


def test_lm_changes_the_choice():
    x = np.zeros((2, 4))
    x[0, 2], x[0, 3], x[1, 2], x[1, 3] = 2.0, 2.1, 2.1, 2.0   # "b a" beats "a b" slightly
    e = log_softmax(x).astype(np.float32)
    lex = {"ab": ["a b"], "ba": ["b a"]}
    plain = ctc_decoder(lex, TOKENS, lm_weight=0.0)(e[None])[0][0]
    lm = ctc_decoder(lex, TOKENS, lm=lambda ctx, w: -5.0 if w == "ba" else 0.0,
                     lm_weight=1.0)(e[None])[0][0]
    assert plain.words == ["ba"] and lm.words == ["ab"]
    np.testing.assert_allclose(lm.score, e[0, 2] + e[1, 3], rtol=1e-6)


class CountingLM(CTCDecoderLM):
    """A CTCDecoderLM subclass with tree states (torchaudio's custom-LM protocol)."""

    def __init__(self):
        self.root = CTCDecoderLMState()
        self.calls = 0

    def start(self, start_with_nothing):
        return self.root

    def score(self, state, usr_token_idx):
        self.calls += 1
        return state.child(usr_token_idx), -0.5

    def finish(self, state):
        return state, 0.0


def test_custom_lm_class_and_online_decoding_in_chunks():
    e = random_emissions(11, 12)
    lm = CountingLM()
    lex = {"ab": ["a b"], "ba": ["b a"], "a": ["a"]}
    dec = ctc_decoder(lex, TOKENS, lm=lm, nbest=3, beam_size=8)
    whole = dec(e[None])[0]
    assert lm.calls > 0
    dec.decode_begin()
    for k in range(0, 12, 5):
        dec.decode_step(ember.tensor(e[k:k + 5]))
    dec.decode_end()
    online = dec.get_final_hypothesis()
    assert [h.words for h in online] == [h.words for h in whole]
    np.testing.assert_allclose([h.score for h in online], [h.score for h in whole])
    assert dec.idxs_to_tokens(whole[0].tokens) == [TOKENS[i] for i in whole[0].tokens.tolist()]


def test_batch_lengths_and_pruning():
    e = np.stack([random_emissions(20, 8), random_emissions(21, 8)])
    dec = ctc_decoder(None, TOKENS, nbest=2, beam_size=4, beam_size_token=3)
    out = dec(e, ember.tensor([8, 5]))
    short = dec(e[1:, :5])[0]
    assert [h.tokens.tolist() for h in out[1]] == [h.tokens.tolist() for h in short]
    assert len(out) == 2 and all(len(h) == 2 for h in out)
    assert all(int(t) < 8 for h in out[0] for t in h.timesteps.tolist())


def test_files_and_errors(tmp_path):
    (tmp_path / "tokens.txt").write_text("-\n|\na\nb\n")
    (tmp_path / "lexicon.txt").write_text("ab a b |\nba b a |\n")
    dec = ctc_decoder(str(tmp_path / "lexicon.txt"), str(tmp_path / "tokens.txt"))
    hyp = dec(spell(["a", "b", "|"])[None])[0][0]
    assert hyp.words == ["ab"]
    with pytest.raises(ValueError, match="blank_token"):
        ctc_decoder(None, ["a", "b"])
    with pytest.raises(ValueError, match="KenLM"):
        ctc_decoder(None, TOKENS, lm="model.bin")
    with pytest.raises(ValueError, match="unknown tokens"):
        ctc_decoder({"ac": ["a c"]}, TOKENS)
    with pytest.raises(FileNotFoundError, match="lexicon"):
        ctc_decoder(str(tmp_path / "missing.txt"), TOKENS)
    with pytest.raises(ValueError, match="3-D"):
        dec(np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError, match="classes"):
        dec(np.zeros((1, 4, 5), np.float32))
    with pytest.raises(ValueError, match="lengths"):
        dec(np.zeros((1, 4, 4), np.float32), [9])
    assert math.isfinite(dec(spell(["a", "b"])[None])[0][0].score)
