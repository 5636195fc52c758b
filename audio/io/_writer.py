"""``StreamWriter``: encode audio (and video) chunk by chunk, as torchaudio's.

    >>> from ember.audio.io import StreamWriter
    >>> w = StreamWriter("out.mp3")
    >>> w.add_audio_stream(sample_rate=16000, num_channels=1)
    >>> with w.open():
    ...     for chunk in chunks:                 # (frames, channels) float32
    ...         w.write_audio_chunk(0, chunk)

Streams are declared first and the container is created by ``open()``, as in torchaudio. A
chunk's sample type must match the stream's ``format``; PyAV converts it (libswresample) to
the encoder's sample format, rate and layout (``encoder_format``, ``encoder_sample_rate``,
``encoder_num_channels``), and ``filter_desc`` runs an FFmpeg filter chain on the frames
before encoding. A local path is written to a temporary file and renamed into place on
``close()``.
"""
from __future__ import annotations

from fractions import Fraction

import av
import numpy as np

from ._backend import add_audio_stream, apply_codec_config, audio_frame, encode, _as_array
from ._errors import AudioError, ffmpeg_words
from ._filters import FilterChain
from ._formats import dtype_of, packed
from ._source import Output, describe, extension

__all__ = ["StreamWriter"]

_MUXERS = {"m4a": "ipod", "ogg": "ogg", "oga": "ogg", "vorbis": "ogg", "aac": "adts",
           "mkv": "matroska", "mka": "matroska"}


class _Spec:
    __slots__ = ("kind", "args", "stream", "fmt", "rate", "chain", "pts", "channels", "size")


class StreamWriter:
    """Encode and write media chunk by chunk (torchaudio's ``StreamWriter``).

    ``dst``: a path, an fsspec URL, or a writable binary file object; ``format``: the muxer
    (needed for file objects; from the extension otherwise)."""

    def __init__(self, dst, format=None, buffer_size=4096):
        self.dst = dst
        self.name = describe(dst)
        fmt = format or extension(dst)
        if fmt is None:
            raise ValueError(f"StreamWriter({self.name}): give format= (e.g. 'wav', 'mp3', "
                             f"'mp4'), the destination has no extension to tell it")
        self.format = _MUXERS.get(fmt, fmt)
        self.buffer_size = buffer_size
        self._specs = []
        self._out = None
        self._container = None
        self._metadata = {}

    # ------------------------------------------------------------------ declaring streams
    def add_audio_stream(self, sample_rate, num_channels, format="flt", *, encoder=None,
                         encoder_option=None, encoder_format=None, encoder_sample_rate=None,
                         encoder_num_channels=None, codec_config=None, filter_desc=None):
        """Declare an audio stream fed (frames, channels) chunks of sample type ``format``
        (``"u8"``, ``"s16"``, ``"s32"``, ``"s64"``, ``"flt"`` (default), ``"dbl"``)."""
        self._before_open("add_audio_stream")
        s = _Spec()
        s.kind = "audio"
        s.fmt = packed(format)
        dtype_of(s.fmt)
        s.rate, s.channels = int(sample_rate), int(num_channels)
        if s.rate <= 0 or s.channels <= 0:
            raise ValueError("sample_rate and num_channels must be positive")
        s.args = dict(encoder=encoder, encoder_option=encoder_option,
                      encoder_format=encoder_format, encoder_sample_rate=encoder_sample_rate,
                      encoder_num_channels=encoder_num_channels, codec_config=codec_config)
        s.chain = FilterChain(filter_desc, "audio") if filter_desc else None
        s.pts, s.stream, s.size = 0, None, None
        self._specs.append(s)

    def add_video_stream(self, frame_rate, width, height, format="rgb24", *, encoder=None,
                         encoder_option=None, encoder_format=None, encoder_frame_rate=None,
                         encoder_width=None, encoder_height=None, hw_accel=None,
                         codec_config=None, filter_desc=None):
        """Declare a video stream fed (frames, channels, height, width) uint8 chunks in pixel
        ``format`` (``"rgb24"``, ``"bgr24"``, ``"gray"``...)."""
        self._before_open("add_video_stream")
        if hw_accel is not None:
            raise ValueError("hw_accel is not supported: PyAV encodes video on the CPU")
        s = _Spec()
        s.kind = "video"
        s.fmt = format
        s.rate = Fraction(frame_rate).limit_denominator(1 << 16)
        s.size = (int(width), int(height))
        s.args = dict(encoder=encoder, encoder_option=encoder_option,
                      encoder_format=encoder_format, encoder_frame_rate=encoder_frame_rate,
                      encoder_width=encoder_width, encoder_height=encoder_height,
                      codec_config=codec_config)
        s.chain = FilterChain(filter_desc, "video") if filter_desc else None
        s.pts, s.stream, s.channels = 0, None, None
        self._specs.append(s)

    def set_metadata(self, metadata):
        """Container tags (``{"title": ..., "artist": ...}``) written on ``open()``."""
        self._metadata = {str(k): str(v) for k, v in dict(metadata).items()}

    def _before_open(self, what):
        if self._container is not None:
            raise RuntimeError(f"{what} must be called before open()")

    # ------------------------------------------------------------------ lifetime
    def open(self, option=None):
        """Create the container and the encoders. Returns ``self``, a context manager that
        closes it: ``with writer.open(): ...``."""
        if self._container is not None:
            return self
        if not self._specs:
            raise RuntimeError("add an output stream (add_audio_stream / add_video_stream) "
                               "before open()")
        self._out = Output(self.dst)
        target = self._out.__enter__()
        try:
            self._container = av.open(target, "w", format=self.format,
                                      options=dict(option or {}))
        except (av.error.FFmpegError, ValueError) as e:
            self._out.__exit__(type(e), e, None)
            self._out = None
            raise AudioError(f"cannot create {self.name} as {self.format}: FFmpeg reported: "
                             f"{ffmpeg_words(e)}", self.name, ffmpeg_words(e)) from None
        try:
            for k, v in self._metadata.items():
                self._container.metadata[k] = v
            for s in self._specs:
                s.stream = (self._open_audio(s) if s.kind == "audio" else self._open_video(s))
        except BaseException as e:
            self._abort(e)
            raise
        return self

    def _open_audio(self, s):
        a = s.args
        return add_audio_stream(self._container, self.name, a["encoder"], s.rate, s.channels,
                                a["encoder_format"], a["encoder_sample_rate"],
                                a["encoder_num_channels"], a["encoder_option"],
                                a["codec_config"])

    def _open_video(self, s):
        a = s.args
        codec = a["encoder"] or self._container.default_video_codec
        rate = Fraction(a["encoder_frame_rate"] or s.rate).limit_denominator(1 << 16)
        try:
            st = self._container.add_stream(codec, rate=rate)
        except (av.error.FFmpegError, ValueError) as e:
            raise RuntimeError(f"cannot write {self.name}: no video encoder {codec!r} in the "
                               f"FFmpeg bundled with PyAV ({e})") from None
        st.width = int(a["encoder_width"] or s.size[0])
        st.height = int(a["encoder_height"] or s.size[1])
        fmts = st.codec_context.codec.video_formats or []
        want = a["encoder_format"] or ("yuv420p" if any(f.name == "yuv420p" for f in fmts)
                                       else (fmts[0].name if fmts else "yuv420p"))
        st.pix_fmt = want
        st.codec_context.time_base = 1 / rate
        opts = dict(a["encoder_option"] or {})
        apply_codec_config(st.codec_context, a["codec_config"], opts)
        if opts:
            st.codec_context.options = opts
        return st

    def close(self):
        """Flush the encoders, finish the container and move the file into place."""
        if self._container is None:
            return
        try:
            for s in self._specs:
                self._flush_spec(s)
            self._container.close()
        except BaseException as e:
            self._abort(e)
            raise
        self._container = None
        out, self._out = self._out, None
        out.__exit__(None, None, None)

    def _abort(self, exc):
        try:
            if self._container is not None:
                self._container.close()
        except Exception:
            pass
        self._container = None
        if self._out is not None:
            self._out.__exit__(type(exc), exc, None)
            self._out = None

    def __enter__(self):
        return self.open()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self._abort(exc)
        else:
            self.close()

    # ------------------------------------------------------------------ writing
    def _spec(self, i, kind):
        if self._container is None:
            raise RuntimeError("call open() before writing")
        if not 0 <= i < len(self._specs):
            raise IndexError(f"no output stream {i} ({len(self._specs)} declared)")
        s = self._specs[i]
        if s.kind != kind:
            raise ValueError(f"output stream {i} is {s.kind}, not {kind}")
        return s

    def _send(self, s, frame):
        frames = [frame] if s.chain is None else s.chain.push(frame)
        for f in frames:
            encode(self._container, s.stream, f, self.name)

    def write_audio_chunk(self, i, chunk, pts=None):
        """Encode a (frames, channels) chunk on audio stream ``i``. ``pts`` (seconds) places
        it; by default it follows the previous chunk."""
        s = self._spec(i, "audio")
        arr = _as_array(chunk)
        if arr.ndim != 2 or arr.shape[1] != s.channels:
            raise ValueError(f"audio chunk must be (frames, {s.channels}), got "
                             f"{tuple(arr.shape)}")
        want = dtype_of(s.fmt)
        if arr.dtype != want:
            raise ValueError(f"audio chunk dtype {arr.dtype} does not match the stream "
                             f"format {s.fmt!r} ({want})")
        if not len(arr):
            return
        if pts is not None:
            start = int(round(float(pts) * s.rate))
            if start < s.pts:
                raise ValueError(f"pts {pts} s goes back before the end of the previous chunk "
                                 f"({s.pts / s.rate} s)")
            if start > s.pts:  # a gap: silence, so the stream stays continuous
                self._send(s, audio_frame(np.zeros((start - s.pts, s.channels), want), s.fmt,
                                          s.rate, s.pts))
                s.pts = start
        self._send(s, audio_frame(arr, s.fmt, s.rate, s.pts))
        s.pts += len(arr)

    def write_video_chunk(self, i, chunk, pts=None):
        """Encode a (frames, channels, height, width) uint8 chunk on video stream ``i``."""
        s = self._spec(i, "video")
        arr = _as_array(chunk)
        w, h = s.size
        if arr.ndim != 4 or arr.shape[2:] != (h, w):
            raise ValueError(f"video chunk must be (frames, channels, {h}, {w}), got "
                             f"{tuple(arr.shape)}")
        if arr.dtype != np.uint8:
            raise ValueError(f"video chunk must be uint8, got {arr.dtype}")
        if pts is not None:
            s.pts = max(s.pts, int(round(float(pts) * s.rate)))
        for img in arr:
            hwc = img[0] if img.shape[0] == 1 else np.ascontiguousarray(img.transpose(1, 2, 0))
            frame = av.VideoFrame.from_ndarray(hwc, format=s.fmt)
            frame.pts = s.pts
            frame.time_base = 1 / s.rate
            self._send(s, frame)
            s.pts += 1

    def _flush_spec(self, s):
        if s.chain is not None:
            for f in s.chain.flush():
                encode(self._container, s.stream, f, self.name)
        encode(self._container, s.stream, None, self.name)
