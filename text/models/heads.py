"""Task heads on the encoder, with Hugging Face's module names (``bert.*`` + ``classifier``,
``roberta.*`` + ``classifier.{dense,out_proj}``), so fine-tuned checkpoints load as they are.

    >>> import ember
    >>> from ember.text.models import EncoderConfig
    >>> cfg = EncoderConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1,
    ...                     num_attention_heads=4, intermediate_size=64, model_type="roberta",
    ...                     pad_token_id=1, max_position_embeddings=40, type_vocab_size=1)
    >>> RobertaForSequenceClassification(cfg, num_classes=3).eval()(
    ...     ember.tensor([[0, 5, 6, 2]])).shape
    (1, 3)

Each takes a ``JaggedTensor`` of ids in place of padded ids and a mask (padding-free, see
``EncoderModel``): ``model(ember.jagged.as_jagged([[0, 5, 6, 2], [0, 7, 2]]))`` -> (2, 3).
"""
from __future__ import annotations

import ember
from ember import nn

from ._config import EncoderConfig
from ember.jagged import JaggedTensor

from .encoder import EncoderModel, first_tokens, init_encoder_weights

__all__ = ["RobertaClassificationHead", "RobertaForSequenceClassification",
           "BertForSequenceClassification", "XLMRobertaForSequenceClassification"]


def _num_classes(cfg, num_classes):
    if num_classes is None:
        num_classes = cfg.num_labels if cfg.num_labels is not None else 2
    return int(num_classes)


class RobertaClassificationHead(nn.Module):
    """The first token's features -> dropout -> dense -> tanh -> dropout -> out_proj.
    ``forward`` takes (B, L, d) hidden states, a ``JaggedTensor`` of B sequences of (length,
    d) states, or (B, d) first-token features."""

    def __init__(self, num_classes, input_dim, inner_dim=None, dropout=0.1):
        super().__init__()
        inner_dim = input_dim if inner_dim is None else inner_dim
        self.dense = nn.Linear(input_dim, inner_dim)
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(inner_dim, num_classes)

    def forward(self, features):
        if isinstance(features, JaggedTensor):
            x = first_tokens(features)
        else:
            x = features[:, 0] if features.dim() == 3 else features
        x = ember.tanh(self.dense(self.dropout(x)))
        return self.out_proj(self.dropout(x))


class RobertaForSequenceClassification(nn.Module):
    """``roberta`` (no pooler) + :class:`RobertaClassificationHead` ``classifier``:
    ``forward(input_ids, attention_mask=None, ...) -> logits (B, num_classes)``; ``input_ids``
    padded (B, L) or a JaggedTensor of B sequences. Also XLM-R's layout
    (``XLMRobertaForSequenceClassification`` is this class)."""

    base_model_prefix = "roberta"

    def __init__(self, config: EncoderConfig, num_classes=None):
        super().__init__()
        self.config = config
        self.num_classes = _num_classes(config, num_classes)
        self.roberta = EncoderModel(config, add_pooling_layer=False)
        p = config.classifier_dropout
        self.classifier = RobertaClassificationHead(
            self.num_classes, config.hidden_size,
            dropout=config.hidden_dropout_prob if p is None else p)
        init_encoder_weights(self.classifier, config.initializer_range)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None):
        h = self.roberta(input_ids, attention_mask, token_type_ids, position_ids)[0]
        return self.classifier(h)


XLMRobertaForSequenceClassification = RobertaForSequenceClassification


class BertForSequenceClassification(nn.Module):
    """``bert`` (with pooler) -> dropout -> ``classifier`` (Linear):
    ``forward(input_ids, attention_mask=None, ...) -> logits (B, num_classes)``; ``input_ids``
    padded (B, L) or a JaggedTensor of B sequences."""

    base_model_prefix = "bert"

    def __init__(self, config: EncoderConfig, num_classes=None):
        super().__init__()
        self.config = config
        self.num_classes = _num_classes(config, num_classes)
        self.bert = EncoderModel(config, add_pooling_layer=True)
        p = config.classifier_dropout
        self.dropout = nn.Dropout(config.hidden_dropout_prob if p is None else p)
        self.classifier = nn.Linear(config.hidden_size, self.num_classes)
        init_encoder_weights(self.classifier, config.initializer_range)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None):
        pooled = self.bert(input_ids, attention_mask, token_type_ids, position_ids)[1]
        return self.classifier(self.dropout(pooled))
