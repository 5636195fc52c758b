"""``RNNTLoss``: ``ember.audio.functional.rnnt_loss`` as a module, as torchaudio's."""
from __future__ import annotations

from ember import nn

from ..functional._rnnt import rnnt_loss

__all__ = ["RNNTLoss"]


class RNNTLoss(nn.Module):
    """RNN Transducer loss; ``forward(logits, targets, logit_lengths, target_lengths)`` with
    logits (batch, max_T, max_U + 1, classes). See ``ember.audio.functional.rnnt_loss``.

        >>> import ember
        >>> logits = ember.randn(1, 5, 3, 4)           # (batch, T, U + 1, classes)
        >>> loss = RNNTLoss()(logits, ember.tensor([[1, 2]]), ember.tensor([5]), ember.tensor([2]))
        >>> bool(loss > 0)
        True
    """

    def __init__(self, blank: int = -1, clamp: float = -1.0, reduction: str = "mean",
                 fused_log_softmax: bool = True):
        super().__init__()
        if reduction not in ("none", "mean", "sum"):
            raise ValueError(f"RNNTLoss: reduction must be 'none', 'mean' or 'sum', got "
                             f"{reduction!r}")
        self.blank = blank
        self.clamp = clamp
        self.reduction = reduction
        self.fused_log_softmax = fused_log_softmax

    def forward(self, logits, targets, logit_lengths, target_lengths):
        return rnnt_loss(logits, targets, logit_lengths, target_lengths, self.blank,
                         self.clamp, self.reduction, self.fused_log_softmax)
