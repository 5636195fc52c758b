"""ember.text.models: BERT-family encoders (BERT, RoBERTa, XLM-R, MiniLM) and GPT-2 with
Hugging Face ``transformers``' state-dict keys, weights enums, task heads, sentence embeddings
and generation with a KV cache.

    >>> from ember.text import models
    >>> models.list_models(include="gpt2*")
    ['gpt2', 'gpt2_medium']
    >>> models.get_model_weights("bert_base_uncased").DEFAULT
    BERT_Base_Uncased_Weights.HF_GOOGLE

A local directory in the Hugging Face layout loads with no network:
``model, tokenizer = models.from_pretrained("path/to/dir")``. Encoders, their heads and
``SentenceEmbedder`` also run padding-free on a ``JaggedTensor`` of token ids.
"""
from ._api import (Weights, WeightsEnum, get_model, get_model_builder,  # noqa: F401
                   get_model_weights, get_weight, list_models, register_model)
from ._attention import PaddedBatch, causal_attention  # noqa: F401
from ._config import (DECODER_TYPES, ENCODER_TYPES, SUPPORTED_MODEL_TYPES,  # noqa: F401
                      EncoderConfig, GPT2Config, config_from_dict, read_config)
from ._jagged import JaggedBatch  # noqa: F401
from .encoder import (BertModel, EncoderModel, EncoderOutput, RobertaModel,  # noqa: F401
                      XLMRobertaModel, first_tokens, roberta_jagged_position_ids,
                      roberta_position_ids)
from .gpt2 import Conv1D, GPT2LMHeadModel, GPT2Model, KVCache, sample_next  # noqa: F401
from .heads import (BertForSequenceClassification, RobertaClassificationHead,  # noqa: F401
                    RobertaForSequenceClassification, XLMRobertaForSequenceClassification)
from .pretrained import (LoadResult, build_model, from_pretrained,  # noqa: F401
                         load_hf_state_dict, load_tokenizer, read_state_dict)
from .sentence import SentenceEmbedder, pool  # noqa: F401
from .zoo import *  # noqa: F401,F403
from .zoo import __all__ as _zoo_all

__all__ = [
    "Weights", "WeightsEnum", "register_model", "list_models", "get_model_builder", "get_model",
    "get_model_weights", "get_weight", "PaddedBatch", "JaggedBatch", "causal_attention",
    "EncoderConfig",
    "GPT2Config", "config_from_dict", "read_config", "SUPPORTED_MODEL_TYPES", "ENCODER_TYPES",
    "DECODER_TYPES", "EncoderModel", "BertModel", "RobertaModel", "XLMRobertaModel",
    "EncoderOutput", "roberta_position_ids", "roberta_jagged_position_ids", "first_tokens",
    "Conv1D", "GPT2Model", "GPT2LMHeadModel",
    "KVCache", "sample_next", "RobertaClassificationHead", "RobertaForSequenceClassification",
    "XLMRobertaForSequenceClassification", "BertForSequenceClassification", "from_pretrained",
    "load_hf_state_dict", "read_state_dict", "load_tokenizer", "build_model", "LoadResult",
    "SentenceEmbedder", "pool",
] + list(_zoo_all)
