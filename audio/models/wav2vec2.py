"""``Wav2Vec2Model`` (wav2vec 2.0, HuBERT, XLS-R, WavLM) and its builders, as torchaudio's.

``wav2vec2_model(...)`` takes torchaudio's full configuration; the named builders
(``wav2vec2_base``, ``hubert_large``, ``wav2vec2_xlsr_1b``, ...) fix the architecture and take
the dropouts and the optional CTC head size (``aux_num_out``). State-dict keys and parameter
counts equal torchaudio's, so its published checkpoints load unchanged.

    >>> import ember
    >>> from ember.audio.models import wav2vec2_model
    >>> m = wav2vec2_model("group_norm", [(8, 10, 5), (8, 3, 2)], False, 16, 0.0, 8, 4, 2, 2,
    ...                    0.0, 32, 0.0, 0.0, False, 0.0, aux_num_out=5).eval()
    >>> emissions, lengths = m(ember.randn(2, 400), ember.tensor([400, 300]))
    >>> tuple(emissions.shape), lengths.tolist()
    ((2, 39, 5), [39, 29])
"""
from __future__ import annotations

from ember import nn

from . import _wav2vec2_blocks as blocks
from ._wavlm_attention import WavLMSelfAttention

__all__ = ["Wav2Vec2Model", "wav2vec2_model", "wav2vec2_base", "wav2vec2_large",
           "wav2vec2_large_lv60k", "wav2vec2_xlsr_300m", "wav2vec2_xlsr_1b", "wav2vec2_xlsr_2b",
           "hubert_base", "hubert_large", "hubert_xlarge", "wavlm_model", "wavlm_base",
           "wavlm_large"]

DEFAULT_CONV_LAYERS = [(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2


class Wav2Vec2Model(nn.Module):
    """Feature extractor -> transformer encoder -> optional linear head (``aux``).

    ``forward(waveforms, lengths=None)``: waveforms (batch, time) float, lengths (batch,) the
    valid samples of each row -> (emissions (batch, frame, aux_num_out or embed_dim),
    frame lengths or None).
    """

    def __init__(self, feature_extractor, encoder, aux=None):
        super().__init__()
        self.feature_extractor = feature_extractor
        self.encoder = encoder
        self.aux = aux

    def extract_features(self, waveforms, lengths=None, num_layers=None):
        """The output of each transformer layer (the first ``num_layers``): a list of
        (batch, frame, embed_dim) tensors, and the frame lengths (or None)."""
        x, lengths = self.feature_extractor(waveforms, lengths)
        return self.encoder.extract_features(x, lengths, num_layers), lengths

    def forward(self, waveforms, lengths=None):
        x, lengths = self.feature_extractor(waveforms, lengths)
        x = self.encoder(x, lengths)
        if self.aux is not None:
            x = self.aux(x)
        return x, lengths


def wav2vec2_model(extractor_mode, extractor_conv_layer_config, extractor_conv_bias,
                   encoder_embed_dim, encoder_projection_dropout, encoder_pos_conv_kernel,
                   encoder_pos_conv_groups, encoder_num_layers, encoder_num_heads,
                   encoder_attention_dropout, encoder_ff_interm_features,
                   encoder_ff_interm_dropout, encoder_dropout, encoder_layer_norm_first,
                   encoder_layer_drop, aux_num_out):
    """A :class:`Wav2Vec2Model` from torchaudio's configuration.

    ``extractor_mode``: ``"group_norm"`` or ``"layer_norm"``; ``extractor_conv_layer_config``:
    [(out_channels, kernel, stride), ...] or None (the 7-layer default, 320x downsampling);
    ``encoder_layer_norm_first``: pre-norm layers (large LV-60k, HuBERT large, XLS-R);
    ``aux_num_out``: size of the linear CTC head, None for none.
    """
    shapes = DEFAULT_CONV_LAYERS if extractor_conv_layer_config is None else \
        [tuple(s) for s in extractor_conv_layer_config]
    if not shapes:
        raise ValueError("extractor_conv_layer_config must hold at least one layer")
    extractor = blocks.feature_extractor(extractor_mode, shapes, extractor_conv_bias)
    enc = blocks.encoder(
        in_features=shapes[-1][0], embed_dim=encoder_embed_dim,
        dropout_input=encoder_projection_dropout, pos_conv_kernel=encoder_pos_conv_kernel,
        pos_conv_groups=encoder_pos_conv_groups, num_layers=encoder_num_layers,
        num_heads=encoder_num_heads, attention_dropout=encoder_attention_dropout,
        ff_interm_features=encoder_ff_interm_features,
        ff_interm_dropout=encoder_ff_interm_dropout, dropout=encoder_dropout,
        layer_norm_first=encoder_layer_norm_first, layer_drop=encoder_layer_drop)
    aux = None if aux_num_out is None else nn.Linear(encoder_embed_dim, aux_num_out)
    return Wav2Vec2Model(extractor, enc, aux)


# architecture per family: (extractor_mode, conv bias, embed_dim, layers, heads, ffn, pre-norm)
_ARCH = {
    "base": ("group_norm", False, 768, 12, 12, 3072, False),
    "large": ("group_norm", False, 1024, 24, 16, 4096, False),
    "large_lv60k": ("layer_norm", True, 1024, 24, 16, 4096, True),
    "hubert_large": ("layer_norm", False, 1024, 24, 16, 4096, True),
    "hubert_xlarge": ("layer_norm", False, 1280, 48, 16, 5120, True),
    "xlsr_1b": ("layer_norm", True, 1280, 48, 16, 5120, True),
    "xlsr_2b": ("layer_norm", True, 1920, 48, 16, 7680, True),
}


def _build(arch, encoder_projection_dropout, encoder_attention_dropout,
           encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out):
    mode, bias, dim, layers, heads, ffn, first = _ARCH[arch]
    return wav2vec2_model(mode, None, bias, dim, encoder_projection_dropout, 128, 16, layers,
                          heads, encoder_attention_dropout, ffn, encoder_ff_interm_dropout,
                          encoder_dropout, first, encoder_layer_drop, aux_num_out)


def wav2vec2_base(encoder_projection_dropout=0.1, encoder_attention_dropout=0.1,
                  encoder_ff_interm_dropout=0.1, encoder_dropout=0.1, encoder_layer_drop=0.1,
                  aux_num_out=None):
    """wav2vec 2.0 base: 12 post-norm layers of width 768 (94.4 M parameters)."""
    return _build("base", encoder_projection_dropout, encoder_attention_dropout,
                  encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out)


def wav2vec2_large(encoder_projection_dropout=0.1, encoder_attention_dropout=0.1,
                   encoder_ff_interm_dropout=0.1, encoder_dropout=0.1, encoder_layer_drop=0.1,
                   aux_num_out=None):
    """wav2vec 2.0 large: 24 post-norm layers of width 1024."""
    return _build("large", encoder_projection_dropout, encoder_attention_dropout,
                  encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out)


def wav2vec2_large_lv60k(encoder_projection_dropout=0.1, encoder_attention_dropout=0.0,
                         encoder_ff_interm_dropout=0.1, encoder_dropout=0.0,
                         encoder_layer_drop=0.1, aux_num_out=None):
    """wav2vec 2.0 large (LV-60k): layer-norm extractor with conv bias, pre-norm layers."""
    return _build("large_lv60k", encoder_projection_dropout, encoder_attention_dropout,
                  encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out)


def wav2vec2_xlsr_300m(encoder_projection_dropout=0.0, encoder_attention_dropout=0.0,
                       encoder_ff_interm_dropout=0.0, encoder_dropout=0.0,
                       encoder_layer_drop=0.0, aux_num_out=None):
    """XLS-R 300M (the large LV-60k architecture)."""
    return _build("large_lv60k", encoder_projection_dropout, encoder_attention_dropout,
                  encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out)


def wav2vec2_xlsr_1b(encoder_projection_dropout=0.1, encoder_attention_dropout=0.0,
                     encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, encoder_layer_drop=0.0,
                     aux_num_out=None):
    """XLS-R 1B: 48 pre-norm layers of width 1280."""
    return _build("xlsr_1b", encoder_projection_dropout, encoder_attention_dropout,
                  encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out)


def wav2vec2_xlsr_2b(encoder_projection_dropout=0.1, encoder_attention_dropout=0.0,
                     encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, encoder_layer_drop=0.0,
                     aux_num_out=None):
    """XLS-R 2B: 48 pre-norm layers of width 1920."""
    return _build("xlsr_2b", encoder_projection_dropout, encoder_attention_dropout,
                  encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out)


def hubert_base(encoder_projection_dropout=0.1, encoder_attention_dropout=0.1,
                encoder_ff_interm_dropout=0.0, encoder_dropout=0.1, encoder_layer_drop=0.05,
                aux_num_out=None):
    """HuBERT base (the wav2vec 2.0 base architecture)."""
    return _build("base", encoder_projection_dropout, encoder_attention_dropout,
                  encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out)


def hubert_large(encoder_projection_dropout=0.0, encoder_attention_dropout=0.0,
                 encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, encoder_layer_drop=0.0,
                 aux_num_out=None):
    """HuBERT large: layer-norm extractor without conv bias, 24 pre-norm layers."""
    return _build("hubert_large", encoder_projection_dropout, encoder_attention_dropout,
                  encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out)


def hubert_xlarge(encoder_projection_dropout=0.0, encoder_attention_dropout=0.0,
                  encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, encoder_layer_drop=0.0,
                  aux_num_out=None):
    """HuBERT X-large: 48 pre-norm layers of width 1280."""
    return _build("hubert_xlarge", encoder_projection_dropout, encoder_attention_dropout,
                  encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop, aux_num_out)


def wavlm_model(extractor_mode, extractor_conv_layer_config, extractor_conv_bias,
                encoder_embed_dim, encoder_projection_dropout, encoder_pos_conv_kernel,
                encoder_pos_conv_groups, encoder_num_layers, encoder_num_heads,
                encoder_num_buckets, encoder_max_distance, encoder_attention_dropout,
                encoder_ff_interm_features, encoder_ff_interm_dropout, encoder_dropout,
                encoder_layer_norm_first, encoder_layer_drop, aux_num_out):
    """A WavLM :class:`Wav2Vec2Model`: wav2vec2's layout with gated relative position bias
    attention (``encoder_num_buckets`` buckets up to ``encoder_max_distance`` frames; the
    bucket embedding lives in the first layer). Unlike torchaudio's, it accepts ``lengths``
    (padded frames are masked out of attention)."""
    shapes = DEFAULT_CONV_LAYERS if extractor_conv_layer_config is None else \
        [tuple(s) for s in extractor_conv_layer_config]
    extractor = blocks.feature_extractor(extractor_mode, shapes, extractor_conv_bias)

    def attention(i):
        return WavLMSelfAttention(encoder_embed_dim, encoder_num_heads,
                                  dropout=encoder_attention_dropout,
                                  has_relative_attention_bias=(i == 0),
                                  num_buckets=encoder_num_buckets,
                                  max_distance=encoder_max_distance)

    enc = blocks.encoder(
        in_features=shapes[-1][0], embed_dim=encoder_embed_dim,
        dropout_input=encoder_projection_dropout, pos_conv_kernel=encoder_pos_conv_kernel,
        pos_conv_groups=encoder_pos_conv_groups, num_layers=encoder_num_layers,
        num_heads=encoder_num_heads, attention_dropout=encoder_attention_dropout,
        ff_interm_features=encoder_ff_interm_features,
        ff_interm_dropout=encoder_ff_interm_dropout, dropout=encoder_dropout,
        layer_norm_first=encoder_layer_norm_first, layer_drop=encoder_layer_drop,
        attention=attention)
    aux = None if aux_num_out is None else nn.Linear(encoder_embed_dim, aux_num_out)
    return Wav2Vec2Model(extractor, enc, aux)


def wavlm_base(encoder_projection_dropout=0.1, encoder_attention_dropout=0.1,
               encoder_ff_interm_dropout=0.1, encoder_dropout=0.1, encoder_layer_drop=0.1,
               aux_num_out=None):
    """WavLM base: the wav2vec 2.0 base layout, 320 buckets up to 800 frames."""
    return wavlm_model("group_norm", None, False, 768, encoder_projection_dropout, 128, 16, 12,
                       12, 320, 800, encoder_attention_dropout, 3072, encoder_ff_interm_dropout,
                       encoder_dropout, False, encoder_layer_drop, aux_num_out)


def wavlm_large(encoder_projection_dropout=0.1, encoder_attention_dropout=0.1,
                encoder_ff_interm_dropout=0.0, encoder_dropout=0.1, encoder_layer_drop=0.1,
                aux_num_out=None):
    """WavLM large: layer-norm extractor without conv bias, 24 pre-norm layers of 1024."""
    return wavlm_model("layer_norm", None, False, 1024, encoder_projection_dropout, 128, 16, 24,
                       16, 320, 800, encoder_attention_dropout, 4096, encoder_ff_interm_dropout,
                       encoder_dropout, True, encoder_layer_drop, aux_num_out)
