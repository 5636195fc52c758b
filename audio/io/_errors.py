"""The errors and warnings of ``ember.audio.io``."""
from __future__ import annotations

__all__ = ["AudioError", "TruncatedAudioWarning"]


class AudioError(RuntimeError):
    """A file or stream that FFmpeg could not open, decode or encode.

    ``source`` names the file (a path, URL, or a description of bytes / a file object) and
    ``ffmpeg_message`` holds FFmpeg's own words where it gave any (else ``None``)."""

    def __init__(self, message, source=None, ffmpeg_message=None):
        super().__init__(message)
        self.source = source
        self.ffmpeg_message = ffmpeg_message


class TruncatedAudioWarning(UserWarning):
    """Issued by ``load(..., on_error="skip")`` when part of a file could not be decoded; the
    message says how many frames (and seconds) were lost. ``frames_lost`` and
    ``packets_skipped`` carry the same numbers."""

    def __init__(self, message, frames_lost=0, packets_skipped=0):
        super().__init__(message)
        self.frames_lost = frames_lost
        self.packets_skipped = packets_skipped


def ffmpeg_words(exc):
    """FFmpeg's description of an error raised by PyAV (its strerror, plus the log line
    PyAV attached when it has one), without the errno and the call name."""
    words = getattr(exc, "strerror", None) or str(exc)
    log = getattr(exc, "log", None)
    if log and isinstance(log, tuple) and len(log) >= 3 and log[2]:
        words = f"{words} ([{log[1]}] {str(log[2]).strip()})"
    return words
