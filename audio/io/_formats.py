"""Sample formats, encodings and the container/encoder choice of ``save``.

Sample-format conversions are done here in numpy with FFmpeg's (libswresample's) formulas,
so that a conversion that needs no resampling costs no filter graph and gives FFmpeg's bits:
integer -> float divides by 2^(bits-1) (unsigned 8-bit is offset by 128 first); float ->
integer multiplies by the same power of two, rounds half to even and saturates.
"""
from __future__ import annotations

import re

import av
import numpy as np

__all__ = ["SAMPLE_DTYPES", "dtype_of", "packed", "sample_format_of", "convert", "to_float32",
           "encoding_of", "bits_of", "SaveSpec", "resolve_save", "layout_name"]

SAMPLE_DTYPES = {"u8": np.uint8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
                 "flt": np.float32, "dbl": np.float64}
_FORMAT_OF = {np.dtype(v): k for k, v in SAMPLE_DTYPES.items()}


def packed(fmt):
    """The interleaved name of a sample format (``"fltp"`` -> ``"flt"``)."""
    return fmt[:-1] if fmt.endswith("p") else fmt


def dtype_of(fmt):
    """numpy dtype of an FFmpeg sample format name (planar or packed)."""
    try:
        return np.dtype(SAMPLE_DTYPES[packed(fmt)])
    except KeyError:
        raise ValueError(f"unsupported sample format {fmt!r}; expected one of "
                         f"{sorted(SAMPLE_DTYPES) + sorted(k + 'p' for k in SAMPLE_DTYPES)}"
                         ) from None


def sample_format_of(dtype):
    """FFmpeg's packed sample format for a numpy dtype (``float32`` -> ``"flt"``)."""
    try:
        return _FORMAT_OF[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"no audio sample format for dtype {np.dtype(dtype)}; use one of "
                         f"uint8, int16, int32, int64, float32, float64") from None


def layout_name(n):
    """FFmpeg's default channel layout for ``n`` channels."""
    return av.AudioLayout(f"{int(n)}c").name


_SHIFT = {np.dtype(np.uint8): 7, np.dtype(np.int16): 15, np.dtype(np.int32): 31,
          np.dtype(np.int64): 63}


def convert(arr, dtype):
    """``arr`` in sample dtype ``dtype`` with libswresample's conversion rules."""
    src, dst = arr.dtype, np.dtype(dtype)
    if src == dst:
        return arr
    if src.kind == "f" and dst.kind == "f":
        return arr.astype(dst)
    if src.kind in "iu" and dst.kind == "f":
        scale = dst.type(2.0 ** -_SHIFT[src])
        out = arr.astype(dst)
        if src == np.uint8:
            out -= dst.type(128)
        out *= scale
        return out
    if src.kind == "f" and dst.kind in "iu":
        # scaling by a power of two is exact in float64, so this rounds exactly as swr's
        # lrintf/llrint of the product in the source precision
        shift = _SHIFT[dst]
        x = np.rint(arr.astype(np.float64) * 2.0 ** shift)
        hi = float(2 ** shift - 1) if shift < 63 else np.nextafter(2.0 ** 63, 0.0)
        x = np.clip(x, -(2.0 ** shift), hi)
        if dst == np.uint8:
            return (x + 128).astype(np.uint8)
        return x.astype(dst)
    # integer -> integer: shift to the new width (swr keeps the top bits)
    sb, db = _SHIFT[src], _SHIFT[dst]
    wide = arr.astype(np.int64)
    if src == np.uint8:
        wide -= 128
    wide = wide << (db - sb) if db >= sb else wide >> (sb - db)
    if dst == np.uint8:
        wide += 128
    return wide.astype(dst)


def to_float32(arr):
    """``convert(arr, float32)``: integers scaled into [-1, 1)."""
    return convert(arr, np.float32)


# --------------------------------------------------------------------------- encodings

_NAMED = {"flac": "FLAC", "mp3": "MP3", "mp3float": "MP3", "vorbis": "VORBIS", "opus": "OPUS",
          "libopus": "OPUS", "aac": "AAC", "amrnb": "AMR_NB", "amr_nb": "AMR_NB",
          "amrwb": "AMR_WB", "amr_wb": "AMR_WB", "alac": "ALAC", "pcm_mulaw": "ULAW",
          "pcm_alaw": "ALAW", "gsm": "GSM", "wavpack": "WAVPACK"}


def encoding_of(codec_name):
    """The encoding name reported by ``info`` (torchaudio's vocabulary: ``PCM_S``, ``PCM_U``,
    ``PCM_F``, ``ULAW``, ``ALAW``, ``FLAC``, ``MP3``, ``VORBIS``, ``OPUS``, ``AAC``, ...); a
    codec outside it reports FFmpeg's codec name in upper case."""
    if codec_name in _NAMED:
        return _NAMED[codec_name]
    m = re.fullmatch(r"pcm_([suf])\d+(le|be)?(planar)?", codec_name)
    if m:
        return "PCM_" + m.group(1).upper()
    return codec_name.upper()


def bits_of(codec_name, extradata=None):
    """Bits per sample the file stores: from a PCM codec's name, from FLAC's STREAMINFO, 8
    for mu-law / A-law, 0 for lossy codecs or when unknown."""
    m = re.fullmatch(r"pcm_[suf](\d+)(le|be)?(planar)?", codec_name)
    if m:
        return int(m.group(1))
    if codec_name in ("pcm_mulaw", "pcm_alaw"):
        return 8
    if codec_name == "flac" and extradata is not None and len(extradata) >= 18:
        return (((extradata[12] & 1) << 4) | (extradata[13] >> 4)) + 1
    return 0


def flac_total_samples(extradata):
    """Total samples per channel declared in FLAC's STREAMINFO (0: unknown)."""
    if extradata is None or len(extradata) < 18:
        return 0
    return ((extradata[13] & 0x0F) << 32) | int.from_bytes(extradata[14:18], "big")


# --------------------------------------------------------------------------- save choices

class SaveSpec:
    """What ``save`` writes: ``muxer`` (container), ``encoder``, ``encoder_format`` (sample
    format the encoder takes, None for its default) and ``options`` for the encoder."""

    __slots__ = ("muxer", "encoder", "encoder_format", "options", "label")

    def __init__(self, muxer, encoder, encoder_format=None, options=None, label=None):
        self.muxer, self.encoder, self.encoder_format = muxer, encoder, encoder_format
        self.options = options or {}
        self.label = label or muxer


def _wav_encoder(encoding, bits):
    if bits not in (None, 8, 16, 24, 32, 64):
        raise ValueError(f"invalid bits_per_sample {bits} for WAV (expected 8, 16, 24, 32 or 64)")
    if encoding is None:
        if bits is None:
            return "pcm_s16le"  # as torchaudio's FFmpeg backend: 16-bit signed by default
        return "pcm_u8" if bits == 8 else f"pcm_s{bits}le"
    if encoding == "PCM_S":
        bits = bits or 16
        if bits == 8:
            raise ValueError("WAV signed PCM has no 8-bit form (use encoding='PCM_U')")
        return f"pcm_s{bits}le"
    if encoding == "PCM_U":
        if bits in (None, 8):
            return "pcm_u8"
        raise ValueError("WAV unsigned PCM is 8-bit only")
    if encoding == "PCM_F":
        bits = bits or 32
        if bits in (32, 64):
            return f"pcm_f{bits}le"
        raise ValueError("WAV float PCM is 32- or 64-bit only")
    if encoding in ("ULAW", "ALAW"):
        if bits in (None, 8):
            return "pcm_mulaw" if encoding == "ULAW" else "pcm_alaw"
        raise ValueError(f"WAV {encoding} is 8-bit only")
    raise ValueError(f"WAV encoding {encoding!r} is not supported; expected PCM_S, PCM_U, "
                     f"PCM_F, ULAW or ALAW")


# format name or extension -> (muxer, encoder candidates, encoding names that fit)
_FORMATS = {
    "flac": ("flac", ("flac",), ("FLAC",)),
    "mp3": ("mp3", ("libmp3lame", "mp3"), ("MP3",)),
    "ogg": ("ogg", ("libvorbis", "vorbis"), ("VORBIS",)),
    "oga": ("ogg", ("libvorbis", "vorbis"), ("VORBIS",)),
    "vorbis": ("ogg", ("libvorbis", "vorbis"), ("VORBIS",)),
    "opus": ("opus", ("libopus", "opus"), ("OPUS",)),
    "m4a": ("ipod", ("aac", "libfdk_aac"), ("AAC",)),
    "mp4": ("mp4", ("aac", "libfdk_aac"), ("AAC",)),
    "aac": ("adts", ("aac", "libfdk_aac"), ("AAC",)),
}


def _find_encoder(candidates):
    for name in candidates:
        try:
            return av.codec.Codec(name, "w")
        except (av.error.FFmpegError, ValueError):
            continue
    return None


def resolve_save(fmt, ext, encoding, bits):
    """The ``SaveSpec`` for ``save``'s ``format`` (or the destination's extension ``ext``),
    ``encoding`` and ``bits_per_sample``. Raises ``ValueError`` for combinations that do not
    exist and ``RuntimeError`` naming the encoder when this FFmpeg build lacks it."""
    kind = (fmt or ext or "").lower()
    if not kind:
        raise ValueError("cannot tell the audio format: give format= (e.g. 'wav', 'flac', "
                         "'mp3', 'ogg', 'opus', 'm4a') or a file name with an extension")
    if encoding is not None:
        encoding = str(encoding).upper()
    if kind in ("wav", "amb", "wave"):
        return SaveSpec("wav", _wav_encoder(encoding, bits), label="wav")
    if kind in _FORMATS:
        muxer, candidates, fits = _FORMATS[kind]
        if encoding is not None and encoding not in fits:
            raise ValueError(f"encoding {encoding!r} does not apply to {kind} (it is "
                             f"{' or '.join(fits)}); use format='wav' for PCM encodings")
        enc_fmt = None
        if kind == "flac":
            if bits in (None, 16):
                enc_fmt = "s16"
            elif bits == 24:
                enc_fmt = "s32"
            else:
                raise ValueError(f"FLAC stores 16 or 24 bits per sample, got {bits}")
        elif bits is not None:
            raise ValueError(f"bits_per_sample does not apply to the lossy format {kind}")
        codec = _find_encoder(candidates)
        if codec is None:
            raise RuntimeError(
                f"cannot write {kind}: the FFmpeg bundled with PyAV {av.__version__} has no "
                f"{' or '.join(candidates)} encoder")
        options = {"strict": "experimental"} if codec.experimental else {}
        return SaveSpec(muxer, codec.name, enc_fmt, options, label=kind)
    # any other container FFmpeg can write, with its default audio codec
    try:
        of = av.format.ContainerFormat(kind, "w")
    except (av.error.FFmpegError, ValueError):
        raise ValueError(f"unknown audio format {kind!r}: FFmpeg has no muxer by that name")
    return SaveSpec(of.name, None, label=kind)
