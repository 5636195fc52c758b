"""Video through PyAV (FFmpeg bundled): write_video, read_video, read_video_timestamps, VideoReader.

Video frames are uint8 (T, H, W, C) (``output_format="TCHW"`` for (T, C, H, W)); audio is float32
(channels, samples). ``pts_unit="sec"`` takes and gives seconds, ``"pts"`` the stream's time base.

    >>> import ember, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "v.mp4")
    >>> write_video(p, ember.zeros(4, 16, 16, 3, dtype=ember.uint8), fps=4)
    >>> read_video(p, pts_unit="sec")[0].shape
    (4, 16, 16, 3)
"""
from __future__ import annotations

import fractions
import math
import os

import numpy as np

from ember._tensor import Tensor

import av


def _np(x, name):
    if isinstance(x, Tensor):
        return np.asarray(x.array.get() if hasattr(x.array, "get") else x.array)
    if isinstance(x, np.ndarray):
        return x
    raise TypeError(f"{name} should be a Tensor or ndarray, got {type(x).__name__}")


def _open(src, name="src"):
    path = os.fspath(src) if isinstance(src, (str, os.PathLike)) else src
    if isinstance(path, str) and not os.path.isfile(path):
        raise FileNotFoundError(f"video file not found: {path}")
    try:
        return av.open(path)
    except av.error.FFmpegError as e:
        raise RuntimeError(f"could not open video {path}: {e}") from e


def write_video(filename, video_array, fps, video_codec="libx264", options=None,
                audio_array=None, audio_fps=None, audio_codec=None, audio_options=None):
    """Write uint8 frames (T, H, W, C=3) at ``fps``; optional audio (channels, samples) float at
    ``audio_fps`` Hz. ``options``: codec options, e.g. ``{"crf": "17"}``."""
    frames = _np(video_array, "video_array")
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"video_array should be uint8 (T, H, W, 3), got {frames.dtype} "
                         f"{frames.shape}")
    rate = fractions.Fraction(fps).limit_denominator(1000) if not isinstance(fps, int) else fps
    with av.open(os.fspath(filename), mode="w") as out:
        vs = out.add_stream(video_codec, rate=rate)
        vs.width, vs.height = int(frames.shape[2]), int(frames.shape[1])
        vs.pix_fmt = "yuv420p" if video_codec in ("libx264", "h264", "mpeg4") else "rgb24"
        vs.options = dict(options or {})
        astream = None
        if audio_array is not None:
            if audio_fps is None:
                raise ValueError("audio_fps is needed with audio_array")
            audio = _np(audio_array, "audio_array").astype(np.float32)
            if audio.ndim == 1:
                audio = audio[None]
            astream = out.add_stream(audio_codec or "aac", rate=int(audio_fps))
            astream.layout = "mono" if audio.shape[0] == 1 else "stereo"
            astream.options = dict(audio_options or {})
        for f in frames:
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")
            for packet in vs.encode(frame):
                out.mux(packet)
        for packet in vs.encode():
            out.mux(packet)
        if astream is not None:
            fmt = astream.codec_context.format.name
            n = astream.codec_context.frame_size or 1024
            for s in range(0, audio.shape[1], n):
                chunk = np.ascontiguousarray(audio[:, s:s + n])
                if fmt.endswith("p"):
                    af = av.AudioFrame.from_ndarray(chunk, format=fmt, layout=astream.layout)
                else:
                    af = av.AudioFrame.from_ndarray(chunk.T.reshape(1, -1).copy(), format=fmt,
                                                    layout=astream.layout)
                af.sample_rate = int(audio_fps)
                af.pts = s
                for packet in astream.encode(af):
                    out.mux(packet)
            for packet in astream.encode():
                out.mux(packet)


def _to_sec(v, stream, unit):
    if v is None:
        return None
    return float(v) if unit == "sec" else float(v * stream.time_base)


def _frame_sec(frame, stream):
    if frame.pts is None:
        return float(frame.time or 0.0)
    return float(frame.pts * stream.time_base)


def _audio_array(frame):
    a = frame.to_ndarray()
    if frame.format.is_planar:
        return a.astype(np.float32)
    return a.reshape(-1, len(frame.layout.channels)).T.astype(np.float32)


def read_video(filename, start_pts=0, end_pts=None, pts_unit="pts", output_format="THWC"):
    """Decode the frames with ``start_pts <= pts <= end_pts`` -> (video uint8 (T, H, W, C) or
    (T, C, H, W), audio float32 (channels, samples), info {"video_fps", "audio_fps"})."""
    if pts_unit not in ("pts", "sec"):
        raise ValueError(f"pts_unit must be 'pts' or 'sec', got {pts_unit!r}")
    if output_format not in ("THWC", "TCHW"):
        raise ValueError(f"output_format must be THWC or TCHW, got {output_format!r}")
    info, frames, audio = {}, [], []
    with _open(filename, "filename") as c:
        if c.streams.video:
            vs = c.streams.video[0]
            info["video_fps"] = float(vs.average_rate) if vs.average_rate else None
            lo, hi = _to_sec(start_pts, vs, pts_unit), _to_sec(end_pts, vs, pts_unit)
            if lo:
                c.seek(int(lo / vs.time_base), stream=vs, backward=True)
            eps = 1e-6
            for f in c.decode(video=0):
                t = _frame_sec(f, vs)
                if t < lo - eps:
                    continue
                if hi is not None and t > hi + eps:
                    break
                frames.append(f.to_ndarray(format="rgb24"))
        if c.streams.audio:
            c.seek(0)
            as_ = c.streams.audio[0]
            info["audio_fps"] = as_.rate
            lo = _to_sec(start_pts, c.streams.video[0] if c.streams.video else as_, pts_unit) or 0
            hi = _to_sec(end_pts, c.streams.video[0] if c.streams.video else as_, pts_unit)
            for f in c.decode(audio=0):
                t = _frame_sec(f, as_)
                if hi is not None and t > hi:
                    break
                if t + f.samples / f.sample_rate < lo:
                    continue
                audio.append(_audio_array(f))
    v = np.stack(frames) if frames else np.zeros((0, 1, 1, 3), np.uint8)
    if output_format == "TCHW":
        v = np.ascontiguousarray(v.transpose(0, 3, 1, 2))
    a = np.concatenate(audio, axis=1) if audio else np.zeros((1, 0), np.float32)
    return Tensor._make(v), Tensor._make(a), info


def read_video_timestamps(filename, pts_unit="pts"):
    """-> (list of frame pts (ints, or seconds with ``pts_unit="sec"``), video fps)."""
    with _open(filename, "filename") as c:
        vs = c.streams.video[0]
        pts = sorted(p.pts for p in c.demux(vs) if p.pts is not None)
        fps = float(vs.average_rate) if vs.average_rate else None
        if pts_unit == "sec":
            pts = [float(p * vs.time_base) for p in pts]
        return pts, fps


class VideoReader:
    """Frame-by-frame reader of one stream: ``next(reader)`` -> ``{"data": Tensor, "pts": sec}``
    (video: uint8 (C, H, W); audio: float32 (channels, samples)); ``seek(seconds)`` jumps to the
    first frame at or after that time (or the preceding keyframe with ``keyframes_only``).

        >>> reader = VideoReader(p)                                 # doctest: +SKIP
        >>> [f["pts"] for f in reader.seek(0.5)][:1]                # doctest: +SKIP
    """

    def __init__(self, src, stream="video"):
        self.src = src
        self.container = _open(src)
        self._iter = None
        self._min_t = None
        self.set_current_stream(stream)

    def set_current_stream(self, stream: str) -> bool:
        kind, _, idx = stream.partition(":")
        if kind not in ("video", "audio"):
            raise ValueError(f"stream must be 'video[:i]' or 'audio[:i]', got {stream!r}")
        streams = getattr(self.container.streams, kind)
        i = int(idx or 0)
        if i >= len(streams):
            raise ValueError(f"the file has no {kind} stream {i} ({len(streams)} found)")
        self.kind, self.index, self.stream = kind, i, streams[i]
        self.container.seek(0)
        self._iter, self._min_t = None, None
        return True

    def get_metadata(self) -> dict:
        meta = {}
        for s in self.container.streams.video:
            meta.setdefault("video", {"duration": [], "fps": []})
            d = s.duration * s.time_base if s.duration else self.container.duration / 1e6
            meta["video"]["duration"].append(float(d))
            meta["video"]["fps"].append(float(s.average_rate) if s.average_rate else None)
        for s in self.container.streams.audio:
            meta.setdefault("audio", {"duration": [], "framerate": []})
            d = s.duration * s.time_base if s.duration else self.container.duration / 1e6
            meta["audio"]["duration"].append(float(d))
            meta["audio"]["framerate"].append(float(s.rate))
        return meta

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        if self._iter is None:
            self._iter = self.container.decode(**{self.kind: self.index})
        for f in self._iter:
            t = _frame_sec(f, self.stream)
            if self._min_t is not None:
                end = t + (f.samples / f.sample_rate if self.kind == "audio" else 0.0)
                if end < self._min_t - 1e-6 or (self.kind == "video" and t < self._min_t - 1e-6):
                    continue
                self._min_t = None
            if self.kind == "video":
                data = np.ascontiguousarray(f.to_ndarray(format="rgb24").transpose(2, 0, 1))
            else:
                data = _audio_array(f)
            return {"data": Tensor._make(data), "pts": t}
        raise StopIteration

    def seek(self, time_s: float, keyframes_only: bool = False):
        """Position the reader at ``time_s`` seconds; returns self for chaining."""
        if time_s < 0 or not math.isfinite(time_s):
            raise ValueError(f"time_s must be a non-negative number, got {time_s}")
        self.container.seek(int(time_s / self.stream.time_base), stream=self.stream,
                            backward=True, any_frame=False)
        self._iter = None
        self._min_t = None if keyframes_only else float(time_s)
        return self

    def close(self):
        self.container.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.container.close()
        except Exception:
            pass
