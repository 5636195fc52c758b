"""Decoding one audio stream to arrays, with the bookkeeping ``load`` and ``info`` share:
where a frame sits in the stream (sample index from its timestamp), what the file declares
its length to be, and what was lost to truncation or corruption.

How much a file *declares* (to tell a truncated file from a short one):

- WAV: the data chunk's size over the block size, read from the RIFF header here (FFmpeg
  silently clamps it to the bytes present);
- FLAC: the total sample count of STREAMINFO;
- other containers: the stream's duration when the demuxer read it from a header (MP3's
  Xing/Info frame, MP4's sample tables), compared with a tolerance of two codec frames (a
  lossy codec's priming and padding move its decoded length by less than that).
"""
from __future__ import annotations

import struct
import warnings

import av
import numpy as np

from ._errors import AudioError, TruncatedAudioWarning, ffmpeg_words
from ._formats import flac_total_samples

__all__ = ["frame_array", "audio_stream", "declared_frames", "exact_seek", "decode_range"]

_EXACT_SEEK = ("flac", "alac", "wavpack", "tta")


def frame_array(frame):
    """The samples of an ``av.AudioFrame`` as a (frames, channels) array (a view where the
    frame is interleaved, a transposed view where it is planar)."""
    arr = frame.to_ndarray()
    if frame.format.is_planar:
        return arr.T
    return arr.reshape(frame.samples, -1)


def frame_channels(frame, dtype):
    """One 1-D array per channel, viewing ``frame``'s own buffers (no copy; the views keep
    the frame alive): a planar frame's planes, or strided views into an interleaved one.
    ``dtype``: the numpy type of the frame's sample format."""
    n = frame.samples
    planes = frame.planes
    if len(planes) > 1 or frame.format.is_planar:
        return [np.frombuffer(p, dtype, count=n) for p in planes]
    ch = frame.layout.nb_channels
    flat = np.frombuffer(planes[0], dtype, count=n * ch)
    return [flat[c::ch] for c in range(ch)] if ch > 1 else [flat]


def audio_stream(container, name, index=None):
    """The stream to decode: ``index`` or FFmpeg's best audio stream."""
    if index is not None:
        if not 0 <= index < len(container.streams):
            raise IndexError(f"{name} has {len(container.streams)} streams, no stream {index}")
        s = container.streams[index]
        if s.type != "audio":
            raise ValueError(f"stream {index} of {name} is {s.type}, not audio")
        return s
    s = container.streams.best("audio")
    if s is None:
        kinds = ", ".join(st.type for st in container.streams) or "none"
        raise AudioError(f"{name} has no audio stream (streams: {kinds})", name)
    return s


def _wav_declared(head):
    """Frames declared by a RIFF/RF64 WAV header in ``head`` bytes (None: unknown)."""
    if head is None or len(head) < 12 or head[8:12] != b"WAVE":
        return None
    riff = head[:4]
    if riff not in (b"RIFF", b"RF64"):
        return None
    pos, block, size, big = 12, None, None, None
    while pos + 8 <= len(head):
        cid, csize = head[pos:pos + 4], struct.unpack_from("<I", head, pos + 4)[0]
        body = pos + 8
        if cid == b"ds64" and body + 16 <= len(head):
            big = struct.unpack_from("<Q", head, body + 8)[0]
        elif cid == b"fmt " and body + 14 <= len(head):
            block = struct.unpack_from("<H", head, body + 12)[0]
        elif cid == b"data":
            size = big if (riff == b"RF64" and csize == 0xFFFFFFFF) else csize
            break
        pos = body + csize + (csize & 1)
    if not block or size is None or size in (0, 0xFFFFFFFF):
        return None
    return size // block


def declared_frames(inp, stream):
    """(frames the file says it holds, tolerance in frames) or (None, 0) when it says
    nothing reliable."""
    c = inp.container
    sr = stream.codec_context.sample_rate or 0
    fmt = c.format.name
    codec = stream.codec_context.name
    if "wav" in fmt.split(","):
        n = _wav_declared(inp.head)
        return (n, 0) if n is not None else (None, 0)
    if codec == "flac":
        n = flac_total_samples(stream.codec_context.extradata)
        return (n, 0) if n else (None, 0)
    if codec.startswith("pcm_"):
        return None, 0  # raw PCM in another container: its duration is the bytes present
    if stream.duration and stream.time_base and sr:
        n = int(round(float(stream.duration * stream.time_base) * sr))
        return n, 2 * (stream.codec_context.frame_size or 2048)
    return None, 0


def exact_seek(inp, stream):
    """Whether a seek lands on exact sample timestamps (PCM and lossless codecs with a sample
    time base): ``load`` seeks for ``frame_offset`` only then, and decodes from the start
    otherwise (lossy decoders need the preceding frames to give the same samples)."""
    codec = stream.codec_context.name
    if not (codec.startswith("pcm_") or codec in _EXACT_SEEK):
        return False
    return stream.time_base is not None and inp.container.format.name != "mp3"


class Lost:
    """What a decode skipped: packets that failed and FFmpeg's first complaint."""

    __slots__ = ("packets", "frames", "message")

    def __init__(self):
        self.packets, self.frames, self.message = 0, 0, None


def _packets(container, stream, name, on_error, lost):
    """Demuxed packets of ``stream``; a demuxer error ends the stream in skip mode."""
    it = container.demux(stream)
    while True:
        try:
            packet = next(it)
        except StopIteration:
            return
        except av.error.FFmpegError as e:
            if on_error == "raise":
                raise AudioError(f"cannot read {name}: FFmpeg reported: {ffmpeg_words(e)}",
                                 name, ffmpeg_words(e)) from None
            lost.packets += 1
            lost.message = lost.message or ffmpeg_words(e)
            return
        yield packet


def decode_frames(inp, stream, on_error="raise", lost=None):
    """Decoded ``av.AudioFrame``s of ``stream``. A packet that fails to decode raises
    ``AudioError`` (naming the file, FFmpeg's words and the time it sits at), or with
    ``on_error="skip"`` is counted in ``lost`` and passed over."""
    lost = lost if lost is not None else Lost()
    sr = stream.codec_context.sample_rate
    for packet in _packets(inp.container, stream, inp.name, on_error, lost):
        try:
            frames = packet.decode()
        except av.error.FFmpegError as e:
            where = ""
            if packet.pts is not None and packet.time_base is not None:
                where = f" at {float(packet.pts * packet.time_base):.3f} s"
            if on_error == "raise":
                raise AudioError(
                    f"cannot decode {inp.name}{where}: FFmpeg reported: {ffmpeg_words(e)} "
                    f"(the file is corrupt or truncated; load(..., on_error='skip') returns "
                    f"what decodes)", inp.name, ffmpeg_words(e)) from None
            lost.packets += 1
            lost.message = lost.message or ffmpeg_words(e)
            if packet.duration and packet.time_base is not None and sr:
                lost.frames += int(round(float(packet.duration * packet.time_base) * sr))
            continue
        yield from frames


def decode_range(inp, stream, start=0, stop=None, on_error="raise"):
    """Samples [start, stop) of ``stream`` as a list of (frames, channels) arrays, the index
    reached, the ``Lost`` record, and whether the stream was read to its end."""
    sr = stream.codec_context.sample_rate
    t0 = stream.start_time or 0
    pos = 0
    if start > 0 and exact_seek(inp, stream):
        tb = stream.time_base
        target = t0 + int(start / sr / tb)  # floor: the frame holding `start` or earlier
        inp.container.seek(target, stream=stream, backward=True)
        pos = None
    lost = Lost()
    pieces = []
    shape = None
    finished = True
    for frame in decode_frames(inp, stream, on_error, lost):
        n = frame.samples
        if pos is None:
            if frame.pts is None:
                raise AudioError(f"{inp.name}: frames carry no timestamps after a seek",
                                 inp.name)
            pos = int(round(float((frame.pts - t0) * frame.time_base) * sr))
        key = (frame.sample_rate, frame.layout.nb_channels, frame.format.name)
        if shape is None:
            shape = key
        elif key[:2] != shape[:2]:
            raise AudioError(
                f"{inp.name} changes from {shape[0]} Hz / {shape[1]} channels to {key[0]} "
                f"Hz / {key[1]} channels at frame {pos}; read it with StreamReader."
                f"add_basic_audio_stream(sample_rate=..., num_channels=...), which converts",
                inp.name)
        lo = max(start - pos, 0)
        hi = n if stop is None else min(stop - pos, n)
        if hi > lo:
            arr = frame_array(frame)
            pieces.append(arr if (lo == 0 and hi == n) else arr[lo:hi])
        pos += n
        if stop is not None and pos >= stop:
            finished = False
            break
    return pieces, (pos or 0), lost, finished


def ogg_unfinished(inp):
    """True when an Ogg file's last page lacks the end-of-stream flag: the file was cut
    short (Ogg declares no length, so this is how a truncated one shows)."""
    if "ogg" not in inp.container.format.name.split(","):
        return False
    tail = inp.tail()
    if not tail:
        return False
    at = tail.rfind(b"OggS")
    if at < 0 or at + 6 > len(tail):
        return True
    if tail[at + 4] != 0:  # not a page header (stream structure version must be 0)
        return False
    complete = at + 27 <= len(tail) and at + 27 + tail[at + 26] <= len(tail) and (
        at + 27 + tail[at + 26] + sum(tail[at + 27:at + 27 + tail[at + 26]]) <= len(tail))
    return not complete or not (tail[at + 5] & 0x04)


def report_loss(inp, stream, reached, lost, on_error):
    """Raise (``on_error="raise"``) or warn (``"skip"``) when the decode came up short of
    what the file declares, or packets were skipped."""
    declared, tol = declared_frames(inp, stream)
    sr = stream.codec_context.sample_rate
    missing = declared - reached if declared is not None and reached < declared - tol else 0
    cut = not missing and ogg_unfinished(inp)
    if not missing and not lost.packets and not cut:
        return
    frames_lost = max(missing, lost.frames)
    parts = []
    if cut:
        parts.append(f"decoded {reached} frames, but the Ogg stream ends without its "
                     f"end-of-stream page (the file was cut short; Ogg declares no length, "
                     f"so how much is missing is unknown)")
    if missing:
        parts.append(f"decoded {reached} of the {declared} frames its header declares "
                     f"({missing} frames, {missing / sr:.3f} s missing)")
    if lost.packets:
        est = f", about {lost.frames} frames ({lost.frames / sr:.3f} s)" if lost.frames else ""
        parts.append(f"{lost.packets} packet(s) could not be read{est}")
    said = f"; FFmpeg reported: {lost.message}" if lost.message else ""
    msg = f"{inp.name} is truncated or corrupt: {'; '.join(parts)}{said}"
    if on_error == "raise":
        raise AudioError(msg + " (load(..., on_error='skip') returns what decodes)", inp.name,
                         lost.message)
    warnings.warn(TruncatedAudioWarning(msg + "; returning what decoded", frames_lost,
                                        lost.packets), stacklevel=3)


def concat(pieces, channels, dtype):
    """One (frames, channels) array from ``pieces`` (empty ones allowed)."""
    if not pieces:
        return np.zeros((0, channels), dtype)
    if len(pieces) == 1:
        return np.ascontiguousarray(pieces[0])
    return np.concatenate(pieces, axis=0)
