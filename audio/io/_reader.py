"""``StreamReader``: decode audio (and video) chunk by chunk, as torchaudio's.

    >>> from ember.audio.io import StreamReader
    >>> r = StreamReader("speech.mp3")
    >>> r.add_basic_audio_stream(frames_per_chunk=16000, sample_rate=16000, num_channels=1)
    >>> for (chunk,) in r.stream():     # chunk: (frames, channels) float32, chunk.pts seconds
    ...     ...

Packets are demuxed one at a time; each is decoded once per source stream and handed to every
output stream attached to that source. An output converts what it gets: resampling, channel
mixing and user filter chains run in an FFmpeg filter graph (``aresample``, ``aformat``, ...);
a change of sample type alone is done in numpy with FFmpeg's formulas (no graph). Each output
buffers its frames and gives them out ``frames_per_chunk`` at a time; at most
``buffer_chunk_size`` chunks are kept, older frames being dropped (with a warning) if the
caller does not pop them.
"""
from __future__ import annotations

import collections
import dataclasses
import time
import warnings

import av
import numpy as np

from ._decode import frame_channels
from ._errors import AudioError, ffmpeg_words
from ._filters import FilterChain
from ._formats import bits_of, convert, dtype_of, layout_name, packed, sample_format_of
from ._source import open_input

__all__ = ["StreamReader", "ChunkTensor", "SourceStream", "SourceAudioStream",
           "SourceVideoStream", "OutputStream", "OutputAudioStream", "OutputVideoStream"]


# --------------------------------------------------------------------------- stream infos

@dataclasses.dataclass
class SourceStream:
    """A stream of the source: ``media_type`` ("audio", "video", "subtitle", "data", ...),
    ``codec`` (FFmpeg's short name), ``codec_long_name``, ``format`` (sample or pixel format),
    ``bit_rate`` (0 if unknown), ``num_frames`` (0 if the container does not say),
    ``bits_per_sample`` (0 for lossy audio) and the stream's ``metadata``."""

    media_type: str
    codec: str
    codec_long_name: str
    format: str | None
    bit_rate: int
    num_frames: int
    bits_per_sample: int
    metadata: dict


@dataclasses.dataclass
class SourceAudioStream(SourceStream):
    sample_rate: float
    num_channels: int


@dataclasses.dataclass
class SourceVideoStream(SourceStream):
    width: int
    height: int
    frame_rate: float


@dataclasses.dataclass
class OutputStream:
    """An output stream: the ``source_index`` it reads, its ``filter_description`` (the
    conversion it applies, as an FFmpeg filter chain), ``media_type`` and ``format``."""

    source_index: int
    filter_description: str
    media_type: str
    format: str


@dataclasses.dataclass
class OutputAudioStream(OutputStream):
    sample_rate: float
    num_channels: int


@dataclasses.dataclass
class OutputVideoStream(OutputStream):
    width: int
    height: int
    frame_rate: float


def _chunk_class():
    from ember import Tensor

    class ChunkTensor(Tensor):
        """A decoded chunk: an ember Tensor with ``pts``, the time in seconds (from the
        start of its source stream) of its first frame."""

        __slots__ = ("pts",)

    return ChunkTensor


ChunkTensor = _chunk_class()


def _chunk(arr, pts):
    t = ChunkTensor._make_as(ChunkTensor, arr)
    t.pts = pts
    return t


# --------------------------------------------------------------------------- outputs

class _Output:
    """Frames buffered for one output stream, popped as chunks. A piece of the buffer is
    ``[data, frames, time]``: ``data`` is what the subclass stores for a decoded frame,
    ``time`` the seconds of its first frame (None: right after the previous piece)."""

    media_type = "audio"

    def __init__(self, src, frames_per_chunk, buffer_chunk_size, chain, dtype, desc):
        if frames_per_chunk == 0 or frames_per_chunk < -1:
            raise ValueError(f"frames_per_chunk must be positive or -1 (everything), got "
                             f"{frames_per_chunk}")
        if buffer_chunk_size == 0 or buffer_chunk_size < -1:
            raise ValueError(f"buffer_chunk_size must be positive or -1 (no limit), got "
                             f"{buffer_chunk_size}")
        self.src = src
        self.fpc = int(frames_per_chunk)
        self.cap = int(buffer_chunk_size)
        self.chain = chain
        self.dtype = dtype
        self.desc = desc
        self.pieces = collections.deque()
        self.count = 0
        self.eof = False
        self.warned = False
        self.rate = 1.0       # frames per second of what is buffered (audio: sample rate)
        self.t0 = 0           # the source stream's start time, in its time base
        self.tb = None        # the source stream's time base (float)
        self.next_time = 0.0  # time of the frame after the last one buffered

    # -- input
    def push(self, frame, skip=0):
        if self.chain is None:
            self._take(frame, skip, self.tb)
            return
        if skip:
            frame = _cut(frame, skip)
        for f in self.chain.push(frame):
            self._take(f, 0, None)

    def finish(self):
        if self.chain is not None:
            for f in self.chain.flush():
                self._take(f, 0, None)
        self.eof = True

    def reset(self):
        if self.chain is not None:
            self.chain.reset()
        self.pieces, self.count, self.eof = collections.deque(), 0, False

    def _when(self, frame, tb, t0):
        pts = frame.pts
        if pts is None:
            return self.next_time
        if tb is None:
            return float((pts - t0) * frame.time_base)
        return (pts - t0) * tb

    def _append(self, data, n, when):
        if not n:
            return
        self.pieces.append([data, n, when])
        self.count += n
        self.next_time = when + n / self.rate
        if self.cap > 0 and self.fpc > 0 and self.count > self.cap * self.fpc:
            self._drop(self.count - self.cap * self.fpc)

    def _drop(self, n):
        if not self.warned:
            warnings.warn(f"StreamReader output stream (source {self.src}): more than "
                          f"buffer_chunk_size={self.cap} chunks were buffered, the oldest "
                          f"frames are dropped; pop chunks more often or raise "
                          f"buffer_chunk_size", RuntimeWarning, stacklevel=5)
            self.warned = True
        self._take_head(n)

    def _take_head(self, n):
        """Remove the first ``n`` frames: ([(data, lo, hi), ...], time of the first)."""
        out = []
        when = self.pieces[0][2] if self.pieces else 0.0
        self.count -= n
        while n > 0:
            piece = self.pieces[0]
            data, k, t = piece[0], piece[1], piece[2]
            lo = piece[3] if len(piece) > 3 else 0
            if k <= n:
                out.append((data, lo, lo + k))
                n -= k
                self.pieces.popleft()
            else:
                out.append((data, lo, lo + n))
                self.pieces[0] = [data, k - n, t + n / self.rate, lo + n]
                n = 0
        return out, when

    # -- output
    def ready(self):
        if self.fpc == -1:
            return self.count > 0
        return self.count >= self.fpc

    def pop(self):
        if not self.count:
            return None
        n = self.count if self.fpc == -1 else min(self.fpc, self.count)
        parts, when = self._take_head(n)
        return _chunk(self._assemble(parts, n), when)


class _AudioOutput(_Output):
    """Audio pieces are lists of per-channel 1-D arrays (views of the decoded frames, or
    converted copies); a chunk is assembled (frames, channels) in one pass per channel."""

    def __init__(self, *args):
        super().__init__(*args)
        self.channels = None
        self.out_dtype = None
        self._fmt = None

    def _take(self, frame, skip, tb):
        name = frame.format.name
        if name != self._fmt:
            self._fmt = name
            self._src_dtype = dtype_of(name)
            self.out_dtype = self.dtype if self.dtype is not None else self._src_dtype
        chans = frame_channels(frame, self._src_dtype)
        n = frame.samples
        self.rate = frame.sample_rate
        self.channels = len(chans)
        when = self._when(frame, tb, self.t0)
        if skip:
            chans = [c[skip:] for c in chans]
            n -= skip
            when += skip / self.rate
        if self.out_dtype != self._src_dtype:
            chans = [convert(c, self.out_dtype) for c in chans]
        self._append(chans, n, when)

    def _assemble(self, parts, n):
        ch = len(parts[0][0])
        out = np.empty((n, ch), self.out_dtype)
        pos = 0
        for chans, lo, hi in parts:
            k = hi - lo
            for c in range(ch):
                out[pos:pos + k, c] = chans[c][lo:hi]
            pos += k
        return out

    def info(self, fmt, sample_rate, channels):
        return OutputAudioStream(self.src, self.desc or "anull", "audio", fmt, sample_rate,
                                 channels)


_VIDEO_CHANNELS = {"rgb24": 3, "bgr24": 3, "gray": 1, "gray8": 1, "yuv444p": 3, "yuv420p": 3,
                   "rgba": 4, "bgra": 4, "argb": 4, "abgr": 4}


class _VideoOutput(_Output):
    media_type = "video"

    def __init__(self, src, frames_per_chunk, buffer_chunk_size, chain, fmt, size, desc):
        super().__init__(src, frames_per_chunk, buffer_chunk_size, chain, None, desc)
        self.fmt, self.size = fmt, size

    def _take(self, frame, skip, tb):
        if skip:
            return
        w, h = self.size if self.size else (frame.width, frame.height)
        fmt = self.fmt or frame.format.name
        if fmt not in _VIDEO_CHANNELS:
            raise ValueError(f"video output format {fmt!r} is not supported; use one of "
                             f"{sorted(_VIDEO_CHANNELS)}")
        if (w, h) != (frame.width, frame.height) or fmt != frame.format.name:
            frame = frame.reformat(width=w, height=h, format=fmt)
        when = self._when(frame, tb, self.t0)
        if frame.duration and frame.time_base is not None:
            self.rate = 1 / float(frame.duration * frame.time_base)
        if fmt == "yuv420p":
            planes = frame.to_ndarray()  # (h * 3 / 2, w): Y then U then V, chroma halved
            y = planes[:h]
            uv = planes[h:].reshape(2, h // 2, w // 2)
            uv = uv.repeat(2, axis=1).repeat(2, axis=2)
            img = np.concatenate([y[None], uv[:, :h, :w]], axis=0)
        elif fmt == "yuv444p":
            img = frame.to_ndarray()
        else:
            img = frame.to_ndarray()
            img = img[None] if img.ndim == 2 else img.transpose(2, 0, 1)
        self._append(img, 1, when)

    def _assemble(self, parts, n):
        return np.stack([img for img, lo, hi in parts])

    def info(self, fmt, w, h, rate):
        return OutputVideoStream(self.src, self.desc or "null", "video", fmt, w, h, rate)


def _cut(frame, skip):
    """``frame`` without its first ``skip`` samples (a new frame)."""
    arr = frame.to_ndarray()
    ch = frame.layout.nb_channels
    arr = arr[:, skip:] if frame.format.is_planar else arr[:, skip * ch:]
    out = av.AudioFrame.from_ndarray(np.ascontiguousarray(arr), format=frame.format.name,
                                     layout=frame.layout.name)
    out.sample_rate = frame.sample_rate
    if frame.pts is not None and frame.time_base is not None:
        out.time_base = frame.time_base
        out.pts = frame.pts + int(round(skip / frame.sample_rate / frame.time_base))
    return out


def _audio_desc(sample_rate, fmt, num_channels):
    parts = []
    if sample_rate is not None:
        parts.append(f"aresample={int(sample_rate)}")
    fmts = []
    if fmt is not None:
        fmts.append(f"sample_fmts={fmt}")
    if num_channels is not None:
        fmts.append(f"channel_layouts={layout_name(num_channels)}")
    if fmts:
        parts.append("aformat=" + ":".join(fmts))
    return ",".join(parts) or None


# --------------------------------------------------------------------------- the reader

class StreamReader:
    """Read and decode a media source chunk by chunk (torchaudio's ``StreamReader``).

    ``src``: a path, an fsspec URL (``memory://``, ``s3://``, ``https://``, ...), ``bytes``
    or a binary file object. ``format`` overrides the demuxer (e.g. ``"s16le"`` for raw PCM,
    with ``option={"sample_rate": "16000", "ch_layout": "mono"}``); ``option`` is passed to
    the demuxer; ``buffer_size`` is the I/O buffer for file objects.

    Add output streams with ``add_basic_audio_stream`` / ``add_audio_stream`` /
    ``add_basic_video_stream`` / ``add_video_stream``, then iterate ``stream()`` (or call
    ``fill_buffer`` and ``pop_chunks``). Each chunk is an ember tensor: audio
    (frames, channels), video (frames, channels, height, width) uint8, with ``.pts`` seconds.
    """

    def __init__(self, src, format=None, option=None, buffer_size=4096):
        self._args = (src, format, option, buffer_size)
        self._src_pos = None
        if hasattr(src, "read") and hasattr(src, "tell"):
            try:
                self._src_pos = src.tell()
            except (OSError, ValueError):
                pass
        self._in = open_input(src, format, option, buffer_size)
        self._c = self._in.container
        self._decoders = {}     # source index -> (decoder name, decoder options) asked for
        self.name = self._in.name
        self._outputs = []
        self._ctx = {}          # source index -> codec context used to decode it
        self._demux = None
        self._routes = None
        self._eof = False
        self._trim = {}         # source index -> seconds before which frames are dropped
        best = self._c.streams.best("audio")
        self._default_audio = None if best is None else best.index
        best = self._c.streams.best("video")
        self._default_video = None if best is None else best.index

    # ------------------------------------------------------------------ properties
    @property
    def num_src_streams(self):
        """Number of streams in the source."""
        return len(self._c.streams)

    @property
    def num_out_streams(self):
        """Number of output streams configured."""
        return len(self._outputs)

    @property
    def default_audio_stream(self):
        """Index of FFmpeg's best audio stream (None without audio)."""
        return self._default_audio

    @property
    def default_video_stream(self):
        """Index of FFmpeg's best video stream (None without video)."""
        return self._default_video

    def get_metadata(self):
        """The container's metadata (tags) as a dict."""
        return dict(self._c.metadata)

    def get_src_stream_info(self, i):
        """``SourceAudioStream`` / ``SourceVideoStream`` / ``SourceStream`` of stream ``i``."""
        s = self._stream(i)
        cc = s.codec_context
        codec = cc.name if cc is not None else ""
        long = cc.codec.long_name if cc is not None else ""
        common = dict(media_type=s.type, codec=codec, codec_long_name=long,
                      bit_rate=int(cc.bit_rate or 0) if cc is not None else 0,
                      num_frames=int(s.frames or 0), metadata=dict(s.metadata))
        if s.type == "audio":
            return SourceAudioStream(format=cc.format.name if cc.format else None,
                                     bits_per_sample=bits_of(codec, cc.extradata),
                                     sample_rate=float(cc.sample_rate),
                                     num_channels=int(cc.channels), **common)
        if s.type == "video":
            rate = s.average_rate or s.guessed_rate or 0
            return SourceVideoStream(format=cc.format.name if cc.format else None,
                                     bits_per_sample=0, width=int(cc.width),
                                     height=int(cc.height), frame_rate=float(rate), **common)
        return SourceStream(format=None, bits_per_sample=0, **common)

    def get_out_stream_info(self, i):
        """``OutputAudioStream`` / ``OutputVideoStream`` of output stream ``i``."""
        o = self._outputs[i]
        src = self._stream(o.src).codec_context
        if o.media_type == "audio":
            # what the output gave out so far, else what it was asked for, else the source's
            if o.out_dtype is not None:
                fmt = sample_format_of(o.out_dtype)
            elif o.fmt_name:
                fmt = packed(o.fmt_name)
            else:
                fmt = packed(src.format.name) if src.format else ""
            rate = o.rate if o.channels is not None else (o.out_rate or src.sample_rate)
            channels = o.channels if o.channels is not None else (o.out_channels or
                                                                   src.channels)
            return o.info(fmt, float(rate), int(channels))
        w, h = o.size if o.size else (src.width, src.height)
        return o.info(o.fmt or (src.format.name if src.format else ""), w, h,
                      float(o.out_rate or self._stream(o.src).average_rate or 0))

    def _stream(self, i):
        if not 0 <= int(i) < len(self._c.streams):
            raise IndexError(f"{self.name} has {len(self._c.streams)} streams, no stream {i}")
        return self._c.streams[int(i)]

    # ------------------------------------------------------------------ adding outputs
    def _context(self, index, decoder, decoder_option):
        s = self._stream(index)
        ctx = self._ctx.get(index)
        if ctx is None:
            self._decoders[index] = (decoder, decoder_option)
            ctx = s.codec_context
            if decoder is not None and decoder != ctx.name:
                try:
                    ctx = av.CodecContext.create(decoder, "r")
                except (av.error.FFmpegError, ValueError):
                    raise ValueError(f"FFmpeg has no decoder {decoder!r}") from None
                src = s.codec_context
                if src.extradata:
                    ctx.extradata = src.extradata
                if s.type == "audio":
                    ctx.sample_rate = src.sample_rate
                    ctx.layout = src.layout
                    if src.format is not None:
                        ctx.format = src.format
            if decoder_option:
                ctx.options = dict(decoder_option)
            self._ctx[index] = ctx
        elif decoder is not None and decoder != ctx.name:
            raise ValueError(f"stream {index} is already decoded with {ctx.name}; one decoder "
                             f"per source stream")
        return ctx

    def _add(self, out):
        st = self._stream(out.src)
        out.t0 = st.start_time or 0
        out.tb = float(st.time_base) if st.time_base is not None else None
        self._outputs.append(out)
        self._demux = None

    def add_basic_audio_stream(self, frames_per_chunk, buffer_chunk_size=3, *,
                               stream_index=None, decoder=None, decoder_option=None,
                               format="fltp", sample_rate=None, num_channels=None):
        """Add an audio output giving (frames, channels) chunks of ``frames_per_chunk`` frames
        (-1: everything buffered), resampled to ``sample_rate`` and mixed to
        ``num_channels`` when given (FFmpeg's ``aresample``/``aformat``). ``format``: the
        sample type: ``"u8p"`` uint8, ``"s16p"`` int16, ``"s32p"`` int32, ``"s64p"`` int64,
        ``"fltp"`` float32 (default), ``"dblp"`` float64, or None to keep the source's."""
        i = self._audio_index(stream_index)
        dtype = dtype_of(format) if format is not None else None
        self._context(i, decoder, decoder_option)
        chain = None
        if sample_rate is not None or num_channels is not None:
            # the graph converts to the target type as it resamples (no precision lost)
            gfmt = packed(format) if format is not None else None
            chain = FilterChain(_audio_desc(sample_rate, gfmt, num_channels), "audio")
        out = _AudioOutput(i, frames_per_chunk, buffer_chunk_size, chain, dtype,
                           _audio_desc(sample_rate, format, num_channels))
        out.fmt_name, out.out_rate, out.out_channels = format, sample_rate, num_channels
        self._add(out)

    def add_audio_stream(self, frames_per_chunk, buffer_chunk_size=3, *, stream_index=None,
                         decoder=None, decoder_option=None, filter_desc=None):
        """Add an audio output through the FFmpeg filter chain ``filter_desc`` (e.g.
        ``"aresample=8000,aformat=sample_fmts=s16:channel_layouts=mono"``); chunks keep the
        sample type the chain gives out."""
        i = self._audio_index(stream_index)
        self._context(i, decoder, decoder_option)
        chain = FilterChain(filter_desc, "audio") if filter_desc else None
        out = _AudioOutput(i, frames_per_chunk, buffer_chunk_size, chain, None, filter_desc)
        out.fmt_name, out.out_rate, out.out_channels = None, None, None
        self._add(out)

    def add_basic_video_stream(self, frames_per_chunk, buffer_chunk_size=3, *,
                               stream_index=None, decoder=None, decoder_option=None,
                               format="rgb24", frame_rate=None, width=None, height=None,
                               hw_accel=None):
        """Add a video output giving (frames, channels, height, width) uint8 chunks in pixel
        ``format`` (``"rgb24"``, ``"bgr24"``, ``"yuv420p"`` (chroma repeated to full size),
        ``"yuv444p"``, ``"gray"``), optionally at ``frame_rate`` and scaled to ``width`` x
        ``height``."""
        if hw_accel is not None:
            raise ValueError("hw_accel is not supported: PyAV decodes video on the CPU")
        i = self._video_index(stream_index)
        self._context(i, decoder, decoder_option)
        src = self._stream(i).codec_context
        chain = FilterChain(f"fps={frame_rate}", "video") if frame_rate is not None else None
        size = None
        if width is not None or height is not None:
            size = (int(width or src.width), int(height or src.height))
        parts = [f"fps={frame_rate}"] if frame_rate is not None else []
        if size:
            parts.append(f"scale=width={size[0]}:height={size[1]}")
        if format:
            parts.append(f"format=pix_fmts={format}")
        out = _VideoOutput(i, frames_per_chunk, buffer_chunk_size, chain, format, size,
                           ",".join(parts) or None)
        out.out_rate = frame_rate
        self._add(out)

    def add_video_stream(self, frames_per_chunk, buffer_chunk_size=3, *, stream_index=None,
                         decoder=None, decoder_option=None, hw_accel=None, filter_desc=None):
        """Add a video output through the FFmpeg filter chain ``filter_desc``."""
        if hw_accel is not None:
            raise ValueError("hw_accel is not supported: PyAV decodes video on the CPU")
        i = self._video_index(stream_index)
        self._context(i, decoder, decoder_option)
        chain = FilterChain(filter_desc, "video") if filter_desc else None
        out = _VideoOutput(i, frames_per_chunk, buffer_chunk_size, chain, None, None,
                           filter_desc)
        out.out_rate = None
        self._add(out)

    def remove_stream(self, i):
        """Remove output stream ``i``."""
        del self._outputs[i]
        self._demux = None

    def _audio_index(self, i):
        i = self._default_audio if i is None else int(i)
        if i is None:
            raise RuntimeError(f"{self.name} has no audio stream")
        if self._stream(i).type != "audio":
            raise ValueError(f"stream {i} of {self.name} is {self._stream(i).type}, not audio")
        return i

    def _video_index(self, i):
        i = self._default_video if i is None else int(i)
        if i is None:
            raise RuntimeError(f"{self.name} has no video stream")
        if self._stream(i).type != "video":
            raise ValueError(f"stream {i} of {self.name} is {self._stream(i).type}, not video")
        return i

    # ------------------------------------------------------------------ seeking
    def _reopen(self):
        """Open the source afresh (decoders too): the exact state of the start of the file,
        which some demuxers cannot seek back to (an AAC stream's priming packet, which
        precedes timestamp 0, is only read from the start)."""
        src, fmt, option, buffer_size = self._args
        if hasattr(src, "read"):
            if self._src_pos is None or not getattr(src, "seekable", lambda: False)():
                return False
            src.seek(self._src_pos)
        self._c.close()
        self._in = open_input(src, fmt, option, buffer_size)
        self._c = self._in.container
        self._ctx = {}
        for index, (decoder, decoder_option) in list(self._decoders.items()):
            self._context(index, decoder, decoder_option)
        return True

    def seek(self, timestamp, mode="precise"):
        """Move to ``timestamp`` seconds (from the start of the streams). ``mode``:
        ``"precise"`` (default: the next chunks start exactly there; frames before it are
        decoded and dropped), ``"key"`` (the key frame at or before it) or ``"any"`` (the
        nearest frame, which may decode with artifacts). Buffered chunks are discarded."""
        if mode not in ("precise", "key", "any"):
            raise ValueError(f"seek mode must be 'precise', 'key' or 'any', got {mode!r}")
        t = float(timestamp)
        if t < 0:
            raise ValueError(f"timestamp must be non-negative, got {timestamp}")
        srcs = sorted({o.src for o in self._outputs})
        anchor = self._stream(srcs[0]) if srcs else (
            self._stream(self._default_audio if self._default_audio is not None
                         else self._default_video or 0))
        pre = 0.0
        if mode == "precise":
            cname = anchor.codec_context.name if anchor.codec_context else ""
            exact = cname.startswith("pcm_") or cname in ("flac", "alac", "wavpack")
            pre = 0.0 if exact else 0.2
        tb = anchor.time_base
        start = anchor.start_time or 0
        # near the start, lossy decoders need the file's first packets (and the encoder
        # delay the demuxer skips there): start again rather than seek
        if t - pre <= 0 and pre and self._reopen():
            pass
        else:
            target = min(start, 0) if t - pre <= 0 else start + int((t - pre) / tb)
            try:
                self._c.seek(target, stream=anchor, backward=True, any_frame=(mode == "any"))
            except av.error.FFmpegError as e:
                raise AudioError(f"cannot seek {self.name} to {t} s: FFmpeg reported: "
                                 f"{ffmpeg_words(e)}", self.name, ffmpeg_words(e)) from None
            for ctx in self._ctx.values():
                ctx.flush_buffers()
        for o in self._outputs:
            o.reset()
        self._trim = {s: t for s in srcs} if mode == "precise" else {}
        self._demux = None
        self._eof = False

    # ------------------------------------------------------------------ decoding
    def _route(self):
        """Open the demuxer on the sources in use and map each to (decoder, outputs)."""
        if not self._outputs:
            raise RuntimeError("no output stream is configured: call add_basic_audio_stream "
                               "or another add_*_stream first")
        srcs = sorted({o.src for o in self._outputs})
        self._routes = {i: (self._ctx[i], [o for o in self._outputs if o.src == i])
                        for i in srcs}
        self._demux = self._c.demux(*[self._c.streams[i] for i in srcs])

    def _deliver_trimmed(self, index, frames, outs):
        """Deliver ``frames`` after a precise seek: drop those that end before the target,
        cut the one that straddles it."""
        trim = self._trim[index]
        s = self._c.streams[index]
        t0 = s.start_time or 0
        for frame in frames:
            skip = 0
            if index in self._trim:
                if frame.pts is not None:
                    start = float((frame.pts - t0) * frame.time_base)
                    if s.type == "audio":
                        end = start + frame.samples / frame.sample_rate
                        if end <= trim + 1e-9:
                            continue
                        skip = max(0, int(round((trim - start) * frame.sample_rate)))
                    elif start + 1e-9 < trim:
                        continue
                del self._trim[index]
            for o in outs:
                o.push(frame, skip)

    def _next_packet(self, timeout, backoff):
        began = time.monotonic()
        while True:
            try:
                return next(self._demux)
            except StopIteration:
                return None
            except av.error.BlockingIOError:
                if timeout is None or (timeout >= 0 and
                                       (time.monotonic() - began) * 1000 > timeout):
                    raise
                time.sleep(backoff / 1000)
            except av.error.FFmpegError as e:
                raise AudioError(f"cannot read {self.name}: FFmpeg reported: "
                                 f"{ffmpeg_words(e)}", self.name, ffmpeg_words(e)) from None

    def process_packet(self, timeout=None, backoff=10.0):
        """Demux and decode one packet into the output buffers. Returns 0, or 1 once the
        source is exhausted (the outputs then hold everything, filters drained).
        ``timeout`` (ms): how long to retry a source that is temporarily not ready (a
        device); None: raise at once; negative: retry forever. ``backoff``: ms between
        tries."""
        if self._demux is None:
            self._route()
        if self._eof:
            return 1
        packet = self._next_packet(timeout, backoff)
        if packet is None:
            for o in self._outputs:
                o.finish()
            self._eof = True
            return 1
        index = packet.stream.index  # (PyAV leaves stream_index 0 on flush packets)
        ctx, outs = self._routes[index]
        try:
            frames = ctx.decode(packet)
        except av.error.FFmpegError as e:
            where = ""
            if packet.pts is not None and packet.time_base is not None:
                where = f" at {float(packet.pts * packet.time_base):.3f} s"
            raise AudioError(f"cannot decode {self.name}{where}: FFmpeg reported: "
                             f"{ffmpeg_words(e)}", self.name, ffmpeg_words(e)) from None
        if self._trim:
            self._deliver_trimmed(index, frames, outs)
        else:
            for frame in frames:
                for o in outs:
                    o.push(frame, 0)
        return 0

    def process_all_packets(self):
        """Process packets to the end of the source."""
        while not self.process_packet():
            pass

    def is_buffer_ready(self):
        """True when every output stream holds at least one full chunk."""
        return all(o.ready() for o in self._outputs)

    def pop_chunks(self):
        """One chunk from each output stream (None for an output with nothing buffered)."""
        return tuple(o.pop() for o in self._outputs)

    def fill_buffer(self, timeout=None, backoff=10.0):
        """Process packets until every output holds a chunk: 0, or 1 at the end of the
        source."""
        if len(self._outputs) == 1:
            out = self._outputs[0]
            while not out.ready():
                if self.process_packet(timeout, backoff):
                    return 1
            return 0
        while not self.is_buffer_ready():
            if self.process_packet(timeout, backoff):
                return 1
        return 0

    _fill_buffer = fill_buffer

    def stream(self, timeout=None, backoff=10.0):
        """Iterate tuples of chunks (one per output stream; None for an output already
        exhausted) to the end of the source."""
        if not self._outputs:
            raise RuntimeError("no output stream is configured: call add_basic_audio_stream "
                               "or another add_*_stream first")
        while not self.fill_buffer(timeout, backoff):
            yield self.pop_chunks()
        while True:
            chunks = self.pop_chunks()
            if all(c is None for c in chunks):
                return
            yield chunks

    # ------------------------------------------------------------------ lifetime
    def close(self):
        """Close the source."""
        self._in.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"StreamReader({self.name}, {self.num_src_streams} source stream(s), "
                f"{self.num_out_streams} output stream(s))")
