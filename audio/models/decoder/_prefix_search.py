"""CTC prefix beam search with an optional lexicon trie and a language-model hook.

A hypothesis is keyed by (token prefix, trie node, words); its acoustic score is kept as
two parts, p_b (alignments ending in blank) and p_nb (ending in the prefix's last token),
so that repeated tokens collapse as CTC defines it. Per frame, for every hypothesis and
every candidate token c:

    c == blank          -> same key,        p_b  += (p_b + p_nb) * e[blank]
    c == last token     -> same key,        p_nb += p_nb * e[c]           (the repeat)
                           key + c,         p_nb += p_b * e[c]            (a new emission)
    otherwise           -> key + c,         p_nb += (p_b + p_nb) * e[c]

in log space, where "+=" is log-add (``log_add=True``, the prefix's total probability) or
max (``log_add=False``, its best alignment). A new emission moves in the lexicon trie; when
it completes a word, the word is appended and the LM scores it (``lm_weight * score +
word_score``); a proper prefix may end as the unknown word when ``unk_score > -inf``;
``sil_token`` at a word boundary adds ``sil_score``. Without a lexicon the LM scores every
emitted token. Each key's bonus (LM and insertion scores) follows from its words, so merging
identical keys is exact, and with a beam wide enough the search returns the same n-best
as enumerating every alignment (the tests do that). Frames are pruned to the
``beam_size_token`` best tokens; hypotheses to the ``beam_size`` best within
``beam_threshold`` of the best.
"""
from __future__ import annotations

import math

import numpy as np

_NEG_INF = -math.inf


class Trie:
    """Token-spelling trie of a lexicon: node 0 is the root; ``children[n]`` maps a token to
    a node and ``words[n]`` lists the word indices spelled by the path to ``n``."""

    def __init__(self):
        self.children = [{}]
        self.words = [[]]

    def insert(self, spelling, word):
        node = 0
        for tok in spelling:
            nxt = self.children[node].get(tok)
            if nxt is None:
                nxt = len(self.children)
                self.children[node][tok] = nxt
                self.children.append({})
                self.words.append([])
            node = nxt
        if word not in self.words[node]:
            self.words[node].append(word)


class _Hyp:
    __slots__ = ("tokens", "node", "words", "lm_state", "bonus", "p_b", "p_nb", "times",
                 "best")

    def __init__(self, tokens, node, words, lm_state, bonus, times):
        self.tokens, self.node, self.words = tokens, node, words
        self.lm_state, self.bonus, self.times = lm_state, bonus, times
        self.p_b = self.p_nb = _NEG_INF
        self.best = _NEG_INF          # best single contribution, to pick the timesteps

    def acoustic(self, log_add):
        return _add(self.p_b, self.p_nb, log_add)

    def score(self, log_add):
        return self.acoustic(log_add) + self.bonus


def _add(a, b, log_add):
    if not log_add:
        return a if a >= b else b
    if a == _NEG_INF:
        return b
    if b == _NEG_INF:
        return a
    m = a if a >= b else b
    return m + math.log1p(math.exp(-abs(a - b)))


class PrefixBeamSearch:
    """The search state of one utterance: ``begin()``, ``step(emissions)`` any number of
    times (frames may arrive in chunks), ``end()``, then ``results()``."""

    def __init__(self, *, blank, sil, trie, lm, lm_weight, word_score, unk_word, unk_score,
                 sil_score, beam_size, beam_size_token, beam_threshold, log_add):
        self.blank, self.sil, self.trie, self.lm = blank, sil, trie, lm
        self.lm_weight, self.word_score = lm_weight, word_score
        self.unk_word, self.unk_score, self.sil_score = unk_word, unk_score, sil_score
        self.beam_size, self.beam_size_token = beam_size, beam_size_token
        self.beam_threshold, self.log_add = beam_threshold, log_add
        self.hyps = []
        self.t = 0
        self.finished = None

    def begin(self):
        start = self.lm.start(False) if self.lm is not None else None
        h = _Hyp((), 0, (), start, 0.0, ())
        h.p_b = 0.0
        self.hyps, self.t, self.finished = [h], 0, None

    # -- one frame -------------------------------------------------------------------------
    def _lm(self, state, index):
        if self.lm is None:
            return state, 0.0
        return self.lm.score(state, index)

    def _emit(self, h, c, t):
        """The keys (tokens, node, words, lm_state, bonus) reached by emitting token c."""
        tokens = h.tokens + (c,)
        if self.trie is None:                        # lexicon-free: a token-level LM
            st, s = self._lm(h.lm_state, c)
            bonus = h.bonus + self.lm_weight * s + (self.sil_score if c == self.sil else 0.0)
            return [(tokens, 0, h.words, st, bonus)]
        if c == self.sil and h.node == 0:            # silence between words
            return [(tokens, 0, h.words, h.lm_state, h.bonus + self.sil_score)]
        child = self.trie.children[h.node].get(c)
        if child is None:
            return []
        out = []
        if self.trie.children[child]:                # the word may go on
            out.append((tokens, child, h.words, h.lm_state, h.bonus))
        ends = self.trie.words[child]
        for w in ends:
            st, s = self._lm(h.lm_state, w)
            out.append((tokens, 0, h.words + (w,), st,
                        h.bonus + self.lm_weight * s + self.word_score))
        if not ends and self.unk_score > _NEG_INF and self.unk_word is not None:
            st, s = self._lm(h.lm_state, self.unk_word)
            out.append((tokens, 0, h.words + (self.unk_word,), st,
                        h.bonus + self.lm_weight * s + self.unk_score))
        return out

    def _extension_mask(self, e, cand):
        """(H, K) bool: which (hypothesis, candidate token) emissions can still reach the
        final beam, from bounds computed for all of them at once. A key's score is at most
        its best contribution + log(3) (at most three paths merge into a prefix per frame;
        the bonus of an emission grows by at most ``max(0, word/sil/unk score)``, the LM
        scores being log-probabilities), and at least the contribution of any one path. The
        ``beam_size``-th best of a set of distinct keys' lower bounds (the hypotheses staying
        put; all emissions too when their bonus is known exactly, i.e. no lexicon and no LM)
        and the best lower bound minus ``beam_threshold`` bound what survives pruning."""
        hyps, blank = self.hyps, self.blank
        H = len(hyps)
        pb = np.array([h.p_b for h in hyps])
        pnb = np.array([h.p_nb for h in hyps])
        tot = np.logaddexp(pb, pnb) if self.log_add else np.maximum(pb, pnb)
        bonus = np.array([h.bonus for h in hyps])
        last = np.array([h.tokens[-1] if h.tokens else -1 for h in hyps])
        E = e[cand].astype(np.float64)
        cand_arr = np.asarray(cand)
        is_last = cand_arr[None, :] == last[:, None]
        with np.errstate(invalid="ignore"):
            src = np.where(is_last, pb[:, None], tot[:, None]) + E[None, :]
            stay = np.full(H, -np.inf)
            if blank in cand:
                stay = tot + e[blank]
            rep = np.where(is_last, pnb[:, None] + E[None, :], -np.inf).max(axis=1)
            stay = np.maximum(stay, rep) + bonus
        ext = src + bonus[:, None]
        ext[:, cand_arr == blank] = -np.inf
        lower = [stay]
        gains = [0.0, self.sil_score]
        if self.trie is not None:
            gains += [self.word_score] + ([self.unk_score] if self.unk_score > _NEG_INF else [])
        if self.trie is None and self.lm is None:
            exact = ext + np.where(cand_arr == self.sil, self.sil_score, 0.0)[None, :]
            lower.append(exact.ravel())
        k = self.beam_size
        tau = -np.inf
        best = -np.inf
        for lb in lower:
            lb = lb[np.isfinite(lb)]
            if lb.size:
                best = max(best, float(lb.max()))
            if lb.size >= k:
                tau = max(tau, float(np.partition(lb, lb.size - k)[lb.size - k]))
        cut = max(tau, best - self.beam_threshold)
        upper = ext + max(gains) + math.log(3.0)
        return upper >= cut

    def _frame(self, e, t):
        log_add = self.log_add
        nxt = {}

        def slot(tokens, node, words, st, bonus, times):
            key = (tokens, node, words)
            h = nxt.get(key)
            if h is None:
                h = nxt[key] = _Hyp(tokens, node, words, st, bonus, times)
            return h

        C = e.shape[0]
        if self.beam_size_token < C:
            cand = np.argpartition(-e, self.beam_size_token - 1)[:self.beam_size_token]
        else:
            cand = np.arange(C)
        cand = [int(c) for c in cand if e[c] > _NEG_INF]
        keep = self._extension_mask(e, cand) if cand else None
        has_blank = self.blank in cand
        lp_blank = float(e[self.blank])
        for i, h in enumerate(self.hyps):
            total = h.acoustic(log_add)
            last = h.tokens[-1] if h.tokens else None
            if has_blank:
                g = slot(h.tokens, h.node, h.words, h.lm_state, h.bonus, h.times)
                g.p_b = _add(g.p_b, total + lp_blank, log_add)
                self._keep_times(g, total + lp_blank, h.times)
            if last is not None and last in cand:
                lp = float(e[last])
                g = slot(h.tokens, h.node, h.words, h.lm_state, h.bonus, h.times)
                g.p_nb = _add(g.p_nb, h.p_nb + lp, log_add)
                self._keep_times(g, h.p_nb + lp, h.times)
            for j in np.flatnonzero(keep[i]):
                c = cand[j]
                lp = float(e[c])
                src = h.p_b if c == last else total
                if src == _NEG_INF:
                    continue
                for tokens, node, words, st, bonus in self._emit(h, c, t):
                    g = slot(tokens, node, words, st, bonus, h.times + (t,))
                    g.p_nb = _add(g.p_nb, src + lp, log_add)
                    self._keep_times(g, src + lp, h.times + (t,))
        hyps = sorted(nxt.values(), key=lambda g: -g.score(log_add))
        if hyps:
            best = hyps[0].score(log_add)
            hyps = [g for g in hyps[:self.beam_size]
                    if g.score(log_add) >= best - self.beam_threshold]
        self.hyps = hyps

    @staticmethod
    def _keep_times(g, contribution, times):
        if contribution > g.best:
            g.best, g.times = contribution, times

    def step(self, emissions):
        """Consume (frames, num_tokens) float emissions (log-probabilities)."""
        for row in emissions:
            self._frame(row, self.t)
            self.t += 1

    def end(self):
        """Add the LM's end-of-sentence score; with a lexicon, keep hypotheses that end on a
        word boundary (if any do)."""
        out = []
        for h in self.hyps:
            s = h.score(self.log_add)
            if self.lm is not None:
                _, f = self.lm.finish(h.lm_state)
                s += self.lm_weight * f
            out.append((s, h))
        if self.trie is not None and any(h.node == 0 for _, h in out):
            out = [(s, h) for s, h in out if h.node == 0]
        out.sort(key=lambda x: -x[0])
        self.finished = out

    def results(self):
        """[(score, tokens, words, timesteps)], best first."""
        if self.finished is None:
            self.end()
        return [(s, h.tokens, h.words, h.times) for s, h in self.finished]
