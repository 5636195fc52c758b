"""``load``, ``save`` and ``info``: whole files in and out, through PyAV (FFmpeg bundled).

    >>> import ember, ember.audio as ea
    >>> wave = ember.sin(ember.arange(16000) * (2 * 3.14159 * 440 / 16000)).unsqueeze(0)
    >>> ea.save("tone.flac", wave, 16000)
    >>> m = ea.info("tone.flac")
    >>> m.sample_rate, m.num_frames, m.num_channels, m.bits_per_sample, m.encoding
    (16000, 16000, 1, 16, 'FLAC')
    >>> x, sr = ea.load("tone.flac", frame_offset=8000, num_frames=1600)
    >>> x.shape, sr
    ((1, 1600), 16000)
"""
from __future__ import annotations

import dataclasses
from fractions import Fraction

import av
import numpy as np

from ._decode import audio_stream, concat, decode_frames, decode_range, declared_frames, \
    report_loss, Lost
from ._errors import AudioError, ffmpeg_words
from ._formats import bits_of, encoding_of, layout_name, resolve_save, sample_format_of, \
    to_float32
from ._source import Output, describe, extension, open_input

__all__ = ["AudioMetaData", "CodecConfig", "load", "save", "info", "list_audio_backends"]

_CHUNK = 1 << 16  # frames per AudioFrame handed to an encoder


@dataclasses.dataclass
class AudioMetaData:
    """What ``info`` reports. ``encoding`` uses torchaudio's names (``PCM_S``, ``PCM_U``,
    ``PCM_F``, ``ULAW``, ``ALAW``, ``FLAC``, ``MP3``, ``VORBIS``, ``OPUS``, ``AAC``, else
    FFmpeg's codec name in upper case), so it can be passed back to ``save``;
    ``bits_per_sample`` is 0 for lossy codecs."""

    sample_rate: int
    num_frames: int
    num_channels: int
    bits_per_sample: int
    encoding: str


@dataclasses.dataclass
class CodecConfig:
    """Encoder settings for ``save(compression=...)`` and ``StreamWriter``: ``bit_rate``
    (bits/s), ``compression_level`` (FLAC 0-12, ...), ``qscale`` (variable-bit-rate quality,
    e.g. MP3 0 best - 9), ``gop_size`` and ``max_b_frames`` (video). -1 / None: the encoder's
    default."""

    bit_rate: int = -1
    compression_level: int = -1
    qscale: float | None = None
    gop_size: int = -1
    max_b_frames: int = -1


def list_audio_backends():
    """The I/O backends present: always ``["ffmpeg"]`` (PyAV bundles FFmpeg)."""
    return ["ffmpeg"]


def _check_backend(backend):
    if backend not in (None, "ffmpeg"):
        raise ValueError(f"backend {backend!r} is not available; ember.audio reads and writes "
                         f"through PyAV's bundled FFmpeg (backend='ffmpeg' or None)")


def info(uri, format=None, buffer_size=4096, backend=None):
    """Sample rate, length, channels, bits per sample and encoding of the default audio
    stream of ``uri`` (path, URL, bytes or file object).

    ``num_frames`` is exact: read from the header for PCM and FLAC, counted by decoding for
    other codecs (whose headers give at most an estimate)."""
    _check_backend(backend)
    with open_input(uri, format, None, buffer_size) as inp:
        stream = audio_stream(inp.container, inp.name)
        cc = stream.codec_context
        codec = cc.name
        n = None
        if codec.startswith("pcm_") or codec == "flac":
            n, _ = declared_frames(inp, stream)
            if n is None and codec.startswith("pcm_") and stream.duration and stream.time_base:
                n = int(round(float(stream.duration * stream.time_base) * cc.sample_rate))
        if n is None:
            n = sum(f.samples for f in decode_frames(inp, stream, "skip", Lost()))
        return AudioMetaData(int(cc.sample_rate), int(n), int(cc.channels),
                             bits_of(codec, cc.extradata), encoding_of(codec))


def load(uri, frame_offset=0, num_frames=-1, normalize=True, channels_first=True, format=None,
         buffer_size=4096, backend=None, *, on_error="raise"):
    """Decode the default audio stream of ``uri`` -> ``(waveform, sample_rate)``.

    ``waveform`` is (channels, frames) (``channels_first=False``: (frames, channels)), float32
    in [-1, 1] when ``normalize`` (integer PCM divided by 2^(bits-1)); with
    ``normalize=False`` it keeps the decoder's sample type (int16 for 16-bit PCM/FLAC, int32
    for 24- and 32-bit, uint8, float32 for lossy codecs). ``frame_offset``/``num_frames``
    select frames [offset, offset + num_frames) (``-1``: to the end); PCM and FLAC seek there,
    other codecs decode from the start and drop what comes before.

    Truncated or corrupt files raise ``AudioError`` naming the file and what FFmpeg reported;
    ``on_error="skip"`` returns what decoded and warns (``TruncatedAudioWarning``) how much
    was lost."""
    _check_backend(backend)
    frame_offset, num_frames = int(frame_offset), int(num_frames)
    if frame_offset < 0:
        raise ValueError(f"frame_offset must be non-negative, got {frame_offset}")
    if num_frames == 0 or num_frames < -1:
        raise ValueError(f"num_frames must be -1 (to the end) or positive, got {num_frames}")
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    from ember import from_numpy

    with open_input(uri, format, None, buffer_size) as inp:
        stream = audio_stream(inp.container, inp.name)
        cc = stream.codec_context
        stop = frame_offset + num_frames if num_frames > 0 else None
        pieces, reached, lost, finished = decode_range(inp, stream, frame_offset, stop,
                                                       on_error)
        if finished:
            report_loss(inp, stream, reached, lost, on_error)
        dtype = pieces[0].dtype if pieces else np.dtype(np.float32)
        out = concat(pieces, cc.channels, dtype)
        sr = int(cc.sample_rate)
    if normalize:
        out = to_float32(out)
    out = np.ascontiguousarray(out.T) if channels_first else out
    return from_numpy(out), sr


# --------------------------------------------------------------------------- encoding


def _as_array(x):
    """numpy array of an ember tensor (any device), numpy array or array-like."""
    arr = getattr(x, "array", None)
    if arr is None:
        if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor
            arr = x.detach().cpu().numpy()
        else:
            arr = np.asarray(x)
    if not isinstance(arr, np.ndarray):
        arr = arr.get()  # cupy
    return arr


def _pick_rate(codec, rate):
    """``rate`` if the encoder takes it, else its nearest rate at or above (else highest)."""
    rates = codec.audio_rates
    if not rates or rate in rates:
        return rate
    above = sorted(r for r in rates if r >= rate)
    return above[0] if above else max(rates)


def apply_codec_config(cc, config, options):
    if config is None:
        return
    if not isinstance(config, CodecConfig):
        raise TypeError(f"compression must be a CodecConfig, got {type(config).__name__}")
    if config.bit_rate > 0:
        cc.bit_rate = int(config.bit_rate)
    if config.compression_level >= 0:
        options["compression_level"] = str(int(config.compression_level))
    if config.qscale is not None:
        cc.qscale = int(config.qscale)
    if config.gop_size > 0:
        cc.gop_size = int(config.gop_size)
    if config.max_b_frames >= 0:
        cc.max_b_frames = int(config.max_b_frames)


def add_audio_stream(container, name, encoder, sample_rate, num_channels, encoder_format=None,
                     encoder_sample_rate=None, encoder_num_channels=None, options=None,
                     codec_config=None):
    """An opened-for-encoding audio stream of ``container``; PyAV converts frames given in
    another format, rate or layout to the encoder's (libswresample)."""
    encoder = encoder or container.default_audio_codec
    try:
        codec = av.codec.Codec(encoder, "w")
    except (av.error.FFmpegError, ValueError):
        raise RuntimeError(f"cannot write {name}: the FFmpeg bundled with PyAV "
                           f"{av.__version__} has no {encoder!r} encoder") from None
    rate = _pick_rate(codec, int(encoder_sample_rate or sample_rate))
    stream = container.add_stream(codec.name, rate=rate)
    channels = int(encoder_num_channels or num_channels)
    if codec.name == "vorbis" and channels != 2:
        raise RuntimeError(
            f"cannot write {name} as Vorbis with {channels} channel(s): this FFmpeg has no "
            f"libvorbis, and its built-in Vorbis encoder writes stereo only; use opus or "
            f"flac, or pass a (2, frames) waveform")
    stream.layout = layout_name(channels)
    if encoder_format:
        stream.format = encoder_format
    opts = dict(options or {})
    if codec.experimental:
        opts.setdefault("strict", "experimental")
    apply_codec_config(stream.codec_context, codec_config, opts)
    if opts:
        stream.codec_context.options = opts
    return stream


def audio_frame(chunk, fmt, sample_rate, pts):
    """An ``av.AudioFrame`` of a (frames, channels) array in packed format ``fmt``."""
    n, ch = chunk.shape
    frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(chunk).reshape(1, n * ch),
                                       format=fmt, layout=layout_name(ch))
    frame.sample_rate = int(sample_rate)
    frame.time_base = Fraction(1, int(sample_rate))
    frame.pts = int(pts)
    return frame


def encode(container, stream, frame, name):
    try:
        for packet in stream.encode(frame):
            container.mux(packet)
    except av.error.FFmpegError as e:
        raise AudioError(f"cannot encode {name} with {stream.codec_context.name}: FFmpeg "
                         f"reported: {ffmpeg_words(e)}", name, ffmpeg_words(e)) from None


def save(uri, src, sample_rate, channels_first=True, format=None, encoding=None,
         bits_per_sample=None, buffer_size=4096, backend=None, compression=None):
    """Write ``src`` ((channels, frames), or (frames, channels) with ``channels_first=False``;
    a 1-D array is mono) to ``uri`` (path, URL or writable binary file object).

    The format comes from ``format`` or the extension: ``wav`` (``encoding`` ``PCM_S`` (16-bit
    default), ``PCM_U`` (8), ``PCM_F`` (32/64), ``ULAW``, ``ALAW``; ``bits_per_sample`` 8, 16,
    24, 32, 64), ``flac`` (16 or 24 bits), ``mp3``, ``ogg``/``vorbis``, ``opus``, ``m4a``/
    ``aac``, or any other FFmpeg muxer with its default codec. Integer input is written as its
    bits; float input is scaled by 2^(bits-1), rounded and clipped (FFmpeg's conversion).
    A sample rate the encoder cannot take (e.g. 44.1 kHz for Opus) is resampled to the next
    one it can (Opus: 48 kHz). Paths are written atomically (temporary file, then rename)."""
    _check_backend(backend)
    arr = _as_array(src)
    if arr.ndim == 1:
        arr = arr[None] if channels_first else arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"save expects a 2-D waveform (channels, frames), got shape "
                         f"{tuple(arr.shape)}")
    frames = arr.T if channels_first else arr
    if frames.dtype.kind == "b" or frames.dtype.kind == "c":
        raise ValueError(f"cannot save a {frames.dtype} waveform")
    if frames.dtype == np.float16:
        frames = frames.astype(np.float32)
    fmt = sample_format_of(frames.dtype)
    ext = extension(uri)
    if format is None and ext is None:
        raise ValueError(f"save to {describe(uri)}: give format= (e.g. 'wav'), the "
                         f"destination has no extension to tell it")
    spec = resolve_save(format, ext, encoding, bits_per_sample)
    n, ch = frames.shape
    if ch == 0:
        raise ValueError("save: the waveform has no channels")
    with Output(uri) as target:
        try:
            container = av.open(target, "w", format=spec.muxer)
        except av.error.FFmpegError as e:
            raise AudioError(f"cannot create {describe(uri)}: FFmpeg reported: "
                             f"{ffmpeg_words(e)}", describe(uri), ffmpeg_words(e)) from None
        with container:
            name = describe(uri)
            stream = add_audio_stream(container, name, spec.encoder, sample_rate, ch,
                                      spec.encoder_format, options=spec.options,
                                      codec_config=compression)
            for i in range(0, max(n, 1), _CHUNK):
                if n:
                    encode(container, stream, audio_frame(frames[i:i + _CHUNK], fmt,
                                                          sample_rate, i), name)
            encode(container, stream, None, name)
