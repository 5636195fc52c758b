"""``DeepSpeech``: the recurrent recogniser of Hannun et al. (2014), as torchaudio's (same
constructor, keys ``fc1.fc.*`` ... ``bi_rnn.*``, ``out.*``, and forward contract).

    >>> import ember
    >>> from ember.audio.models import DeepSpeech
    >>> m = DeepSpeech(n_feature=40, n_hidden=64, n_class=29)
    >>> tuple(m(ember.randn(2, 1, 50, 40)).shape)   # (batch, time, class) log-probabilities
    (2, 50, 29)
"""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F

__all__ = ["DeepSpeech"]


class FullyConnected(nn.Module):
    """Linear -> ReLU clipped at ``relu_max_clip`` -> dropout."""

    def __init__(self, n_feature, n_hidden, dropout, relu_max_clip=20):
        super().__init__()
        self.fc = nn.Linear(n_feature, n_hidden, bias=True)
        self.relu_max_clip = relu_max_clip
        self.dropout = dropout

    def forward(self, x):
        x = F.hardtanh(self.fc(x), 0.0, float(self.relu_max_clip))
        if self.dropout:
            x = F.dropout(x, self.dropout, self.training)
        return x


class DeepSpeech(nn.Module):
    """``DeepSpeech(n_feature, n_hidden=2048, n_class=40, dropout=0.0)``.

    ``forward(x)``: x (batch, channel=1, time, n_feature) -> log-probabilities
    (batch, time, n_class). Three clipped-ReLU layers, a bidirectional ReLU RNN whose two
    directions are summed, a fourth clipped-ReLU layer and the output layer.
    """

    def __init__(self, n_feature, n_hidden=2048, n_class=40, dropout=0.0):
        super().__init__()
        self.n_hidden = n_hidden
        self.fc1 = FullyConnected(n_feature, n_hidden, dropout)
        self.fc2 = FullyConnected(n_hidden, n_hidden, dropout)
        self.fc3 = FullyConnected(n_hidden, n_hidden, dropout)
        self.bi_rnn = nn.RNN(n_hidden, n_hidden, num_layers=1, nonlinearity="relu",
                             bidirectional=True)
        self.fc4 = FullyConnected(n_hidden, n_hidden, dropout)
        self.out = nn.Linear(n_hidden, n_class)

    def forward(self, x):
        if x.ndim != 4 or x.shape[1] != 1:
            raise ValueError(f"DeepSpeech expects x of shape (batch, 1, time, n_feature), got "
                             f"{list(x.shape)}")
        x = self.fc3(self.fc2(self.fc1(x))).squeeze(1).transpose(0, 1)   # (time, batch, hidden)
        x, _ = self.bi_rnn(x)
        x = x[:, :, :self.n_hidden] + x[:, :, self.n_hidden:]
        x = self.out(self.fc4(x)).permute(1, 0, 2)
        return F.log_softmax(x, dim=2)
