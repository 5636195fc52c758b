"""``ember.audio.models.decoder``: CTC decoders in the spirit of torchaudio's: greedy
(``ctc_greedy_decoder``) and beam search (``ctc_decoder``) with an optional lexicon and a
language-model hook (``CTCDecoderLM`` or a plain callable); results are lists of
``CTCHypothesis(tokens, words, score, timesteps)``. The RNN-T beam search is
``ember.audio.models.RNNTBeamSearch``.
"""
from ._ctc_decoder import (CTCDecoder, CTCDecoderLM, CTCDecoderLMState, CTCGreedyDecoder,
                           CTCHypothesis, ctc_decoder, ctc_greedy_decoder)

__all__ = ["CTCDecoder", "CTCDecoderLM", "CTCDecoderLMState", "CTCGreedyDecoder",
           "CTCHypothesis", "ctc_decoder", "ctc_greedy_decoder"]
