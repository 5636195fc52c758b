"""FFmpeg filter chains on PyAV: parse ``"aresample=8000,volume=0.5"`` and run it.

PyAV builds a filter graph node by node (it has no parser for FFmpeg's textual graphs), so
``parse_chain`` splits a description the way FFmpeg's ``avfilter_graph_parse`` tokenises a
single chain: filters are separated by commas; within a filter's arguments a backslash
escapes the next character and single quotes protect a span. A graph with several chains
(``;``) or link labels (``[in]``) is refused with a ``ValueError``: a StreamReader output is
one stream in and one stream out.

``FilterChain`` wraps one chain for audio or video frames. Its source node is configured from
the first frame pushed (sample rate, format, layout / size, pixel format), and it is rebuilt
(after draining) if a later frame changes those.
"""
from __future__ import annotations

import av
import av.filter

__all__ = ["parse_chain", "FilterChain"]


def _split(desc):
    """Top-level comma-separated pieces of ``desc`` (escapes and quotes kept)."""
    parts, cur, quoted, i = [], [], False, 0
    while i < len(desc):
        ch = desc[i]
        if ch == "\\" and i + 1 < len(desc):
            cur.append(desc[i:i + 2])
            i += 2
            continue
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch in ";[]":
            raise ValueError(
                f"filter description {desc!r}: only a single filter chain is supported "
                f"(no ';' between chains and no [link] labels); write it as "
                f"'filter1=args,filter2=args'")
        elif not quoted and ch == ",":
            parts.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    if quoted:
        raise ValueError(f"filter description {desc!r}: unterminated quote")
    parts.append("".join(cur))
    return parts


def _unescape(token):
    """One level of FFmpeg's token unescaping (``av_get_token``): quotes removed, backslash
    escapes resolved, unquoted surrounding whitespace dropped."""
    out, quoted, i, keep = [], False, 0, 0
    token = token.lstrip()
    while i < len(token):
        ch = token[i]
        if ch == "\\" and i + 1 < len(token):
            out.append(token[i + 1])
            i += 2
            keep = len(out)
            continue
        if ch == "'":
            quoted = not quoted
            i += 1
            keep = len(out)
            continue
        out.append(ch)
        i += 1
        if quoted or not ch.isspace():
            keep = len(out)
    return "".join(out[:keep])


def parse_chain(desc):
    """``[(filter_name, args or None), ...]`` of a single-chain description."""
    if desc is None:
        return []
    chain = []
    for piece in _split(desc):
        piece = piece.strip()
        if not piece:
            raise ValueError(f"filter description {desc!r}: empty filter")
        name, _, args = piece.partition("=")
        name = name.strip().split("@", 1)[0]
        if not name:
            raise ValueError(f"filter description {desc!r}: missing filter name in {piece!r}")
        if name not in av.filter.filters_available:
            raise ValueError(f"filter description {desc!r}: FFmpeg has no filter {name!r}")
        chain.append((name, _unescape(args) if _ else None))
    return chain


class FilterChain:
    """One parsed chain, run on audio (``kind="audio"``) or video frames."""

    def __init__(self, desc, kind="audio"):
        self.desc = desc
        self.kind = kind
        self.chain = parse_chain(desc)
        self._graph = None
        self._key = None

    def _props(self, frame):
        if self.kind == "audio":
            return (frame.sample_rate, frame.format.name, frame.layout.name, frame.time_base)
        return (frame.width, frame.height, frame.format.name, frame.time_base)

    def _build(self, frame):
        g = av.filter.Graph()
        if self.kind == "audio":
            src = g.add_abuffer(sample_rate=frame.sample_rate, format=frame.format.name,
                                layout=frame.layout.name, time_base=frame.time_base)
            sink_name = "abuffersink"
        else:
            src = g.add_buffer(width=frame.width, height=frame.height, format=frame.format,
                               time_base=frame.time_base)
            sink_name = "buffersink"
        nodes = [src]
        for name, args in self.chain:
            try:
                nodes.append(g.add(name, args))
            except (av.error.FFmpegError, ValueError) as e:
                raise ValueError(f"filter {name}={args!r} of {self.desc!r}: FFmpeg reported: "
                                 f"{getattr(e, 'strerror', None) or e}") from None
        nodes.append(g.add(sink_name))
        g.link_nodes(*nodes)
        try:
            g.configure()
        except av.error.FFmpegError as e:
            raise ValueError(f"filter chain {self.desc!r} could not be configured for "
                             f"this stream: FFmpeg reported: {e.strerror}") from None
        self._graph = g

    def _drain(self, out):
        g = self._graph
        while True:
            try:
                out.append(g.pull())
            except (av.error.BlockingIOError, av.error.EOFError):
                return out

    def push(self, frame):
        """Frames the chain gives out after taking ``frame``."""
        out = []
        key = self._props(frame)
        if self._graph is not None and key != self._key:
            out = self.flush()
        if self._graph is None:
            self._build(frame)
            self._key = key
        self._graph.push(frame)
        return self._drain(out)

    def flush(self):
        """Drain the chain at the end of the stream (or before a rebuild)."""
        if self._graph is None:
            return []
        self._graph.push(None)
        out = self._drain([])
        self._graph = None
        self._key = None
        return out

    def reset(self):
        """Forget buffered state (after a seek)."""
        self._graph = None
        self._key = None
