"""RNN-T beam search (Graves 2012, the "A"/"B" hypothesis sets), as torchaudio's
``RNNTBeamSearch``, whole utterance (``forward``) or streaming (``infer``).

At every encoder frame t the hypotheses of the previous frame form set A. Repeatedly: the
joiner scores every A hypothesis against frame t; ending the frame with blank moves it to
set B (hypotheses with the same tokens merge, their probabilities added); extending it by
a non-blank token keeps it in A for another emission at the same frame, but only the
``beam_width`` best extensions that beat the ``beam_width``-th best of B survive. When A
is empty (or ``step_max_tokens`` were emitted at frame t), B's ``beam_width`` best by
``hypo_sort_key`` (default: score / (tokens + 1)) start the next frame.

A ``Hypothesis`` is the tuple (tokens, predictor output, predictor state, score); tokens
start with the blank id. Scores are accumulated in float32, as torchaudio does.

Streaming: ``infer`` takes one segment of features (segment_length + right_context_length
frames), runs the transcriber with its carried ``state`` and continues the search from the
previous call's hypotheses, so the last call's hypotheses equal those of ``forward`` on the
whole utterance.

Example (``model`` an ``RNNT``, ``features`` (T + right context, D), ``segments`` the
same frames cut into (segment_length + right_context_length, D) pieces)::

    decoder = RNNTBeamSearch(model, blank=4096)
    hyps = decoder(features, ember.tensor(T), beam_width=10)     # best first
    best_tokens = hyps[0][0]
    state, hyps = None, None                                      # streaming
    for seg in segments:
        hyps, state = decoder.infer(seg, ember.tensor(seg.shape[0]), 10, state, hyps)
"""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

from .rnnt import RNNT

__all__ = ["Hypothesis", "RNNTBeamSearch"]

Hypothesis = Tuple[List[int], "ember.Tensor", List[List["ember.Tensor"]], float]
"""Hypothesis of the RNN-T beam search: (tokens, prediction network output, prediction
network state, score)."""

_f32 = np.float32


def _tokens(h):
    return h[0]


def _score(h):
    return h[3]


def _key(h):
    return tuple(h[0])


def _default_hypo_sort_key(hypo):
    return _score(hypo) / (len(_tokens(hypo)) + 1)


def _batch_state(hypos):
    """Per-hypothesis predictor states [[h, c], ...] -> one batched state."""
    first = hypos[0][2]
    return [[ember.cat([h[2][i][j] for h in hypos]) for j in range(len(first[i]))]
            for i in range(len(first))]


def _slice_state(states, i):
    return [[s[i:i + 1] for s in layer] for layer in states]


def _logaddexp32(a, b):
    return float(np.logaddexp(_f32(a), _f32(b)))


class RNNTBeamSearch(nn.Module):
    """Beam search decoder for an ``RNNT`` model.

    Args:
        model: the RNN-T model.
        blank: index of the blank token.
        temperature: the joiner output is divided by it before the log-softmax.
        hypo_sort_key: ranks hypotheses (default: score normalised by token count + 1).
        step_max_tokens: most tokens emitted at one encoder frame.
    """

    def __init__(self, model: RNNT, blank: int, temperature: float = 1.0,
                 hypo_sort_key: Optional[Callable[[Hypothesis], float]] = None,
                 step_max_tokens: int = 100):
        super().__init__()
        self.model = model
        self.blank = blank
        self.temperature = temperature
        self.hypo_sort_key = _default_hypo_sort_key if hypo_sort_key is None else hypo_sort_key
        self.step_max_tokens = step_max_tokens

    # -- the pieces of one frame ---------------------------------------------------------
    def _predict(self, tokens, states):
        n = len(tokens)
        out, _, st = self.model.predict(ember.tensor([[t] for t in tokens]),
                                        ember.tensor([1] * n), states)
        return out, st

    def _init_b_hypos(self):
        out, st = self._predict([self.blank], None)
        return [([self.blank], out[0].detach(), st, 0.0)]

    def _next_token_probs(self, enc_t, hypos):
        """(len(hypos), num_symbols) float32 log-probabilities of the next symbol."""
        pred = ember.stack([h[1] for h in hypos], 0)                      # (N, 1, D)
        joined, _, _ = self.model.join(enc_t, ember.tensor([1]), pred,
                                       ember.tensor([1] * len(hypos)))   # (N, 1, 1, C)
        lp = F.log_softmax(joined / self.temperature, dim=3)
        return np.asarray(lp.detach().numpy()[:, 0, 0], dtype=_f32)

    def _gen_b_hypos(self, b_hypos, a_hypos, probs, key_to_b):
        for i, h_a in enumerate(a_hypos):
            blank_score = _f32(_score(h_a)) + probs[i, self.blank]
            k = _key(h_a)
            if k in key_to_b:
                old = key_to_b[k]
                for j, h in enumerate(b_hypos):
                    if _key(h) == k:
                        del b_hypos[j]
                        break
                score = _logaddexp32(_score(old), blank_score)
            else:
                score = float(blank_score)
            h_b = (h_a[0], h_a[1], h_a[2], score)
            b_hypos.append(h_b)
            key_to_b[k] = h_b
        order = np.argsort(np.array([_score(h) for h in b_hypos], dtype=_f32), kind="stable")
        return [b_hypos[i] for i in order]

    def _gen_a_hypos(self, a_hypos, b_hypos, probs, beam_width):
        C = probs.shape[1]
        nonblank = np.array([c for c in range(C) if c != self.blank], np.int64)
        scores = (np.array([_score(h) for h in a_hypos], dtype=_f32)[:, None]
                  + probs[:, nonblank]).reshape(-1)
        k = min(beam_width, scores.size)
        best = np.argsort(-scores, kind="stable")[:k]
        floor = -np.inf if len(b_hypos) < beam_width else _score(b_hypos[-beam_width])
        base, tokens, new_scores = [], [], []
        for idx in best:
            s = float(scores[idx])
            if s > floor:
                base.append(a_hypos[idx // len(nonblank)])
                tokens.append(int(nonblank[idx % len(nonblank)]))
                new_scores.append(s)
        if not base:
            return []
        out, st = self._predict(tokens, _batch_state(base))
        return [(_tokens(h) + [tokens[i]], out[i].detach(), _slice_state(st, i), new_scores[i])
                for i, h in enumerate(base)]

    def _search(self, enc_out, hypos, beam_width):
        if beam_width < 1:
            raise ValueError(f"beam_width must be at least 1, got {beam_width}")
        b_hypos = self._init_b_hypos() if hypos is None else list(hypos)
        for t in range(enc_out.shape[1]):
            a_hypos, b_hypos, key_to_b = b_hypos, [], {}
            emitted = 0
            enc_t = enc_out[:, t:t + 1]
            while a_hypos:
                probs = self._next_token_probs(enc_t, a_hypos)
                b_hypos = self._gen_b_hypos(b_hypos, a_hypos, probs, key_to_b)
                if emitted == self.step_max_tokens:
                    break
                a_hypos = self._gen_a_hypos(a_hypos, b_hypos, probs, beam_width)
                if a_hypos:
                    emitted += 1
            keys = np.array([self.hypo_sort_key(h) for h in b_hypos], dtype=np.float64)
            order = np.argsort(-keys, kind="stable")[:beam_width]
            b_hypos = [b_hypos[i] for i in order]
        return b_hypos

    # -- public ----------------------------------------------------------------------------
    @staticmethod
    def _check(input, length):
        if input.ndim != 2 and not (input.ndim == 3 and input.shape[0] == 1):
            raise ValueError(f"input must be of shape (T, D) or (1, T, D), got "
                             f"{tuple(input.shape)}")
        if input.ndim == 2:
            input = input.unsqueeze(0)
        length = length if isinstance(length, ember.Tensor) else ember.tensor(length)
        if tuple(length.shape) not in ((), (1,)):
            raise ValueError(f"length must be of shape () or (1,), got {tuple(length.shape)}")
        return input, length.reshape(1)

    def forward(self, input, length, beam_width: int) -> List[Hypothesis]:
        """Beam search over a whole utterance: input (T, D) or (1, T, D) features
        right-padded with the right context, length () or (1,) -> the ``beam_width`` best
        hypotheses, best first."""
        input, length = self._check(input, length)
        with ember.no_grad():
            enc_out, _ = self.model.transcribe(input, length)
            return self._search(enc_out, None, beam_width)

    def infer(self, input, length, beam_width: int, state=None, hypothesis=None
              ) -> Tuple[List[Hypothesis], List[List["ember.Tensor"]]]:
        """One streaming step: input (segment_length + right_context_length, D) features,
        the transcriber ``state`` and the ``hypothesis`` list of the previous call (None at
        the start) -> (hypotheses, new state)."""
        input, length = self._check(input, length)
        if hypothesis is not None and isinstance(hypothesis, tuple):
            hypothesis = [hypothesis]          # a single hypothesis, as older torchaudio took
        with ember.no_grad():
            enc_out, _, state = self.model.transcribe_streaming(input, length, state)
            return self._search(enc_out, hypothesis, beam_width), state
