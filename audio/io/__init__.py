"""ember.audio.io: audio files and streams through PyAV (which bundles FFmpeg).

Whole files: ``load``, ``save``, ``info`` (also exported as ``ember.audio.load`` ...).
Streams: ``StreamReader`` (chunked decode, resampling and filters) and ``StreamWriter``
(chunked encode). Sources and destinations: local paths, fsspec URLs (``memory://``,
``s3://``, ``https://``, ...), ``bytes`` and binary file objects.

Formats written: wav (PCM 8/16/24/32-bit integer, 32/64-bit float, mu-law, A-law), flac
(16/24-bit), mp3 (LAME), ogg/vorbis (FFmpeg's built-in encoder: stereo only; PyAV's FFmpeg has
no libvorbis), opus, m4a/aac, and any other FFmpeg muxer with its default codec. Anything
FFmpeg decodes can be read.
"""
from ._backend import AudioMetaData, CodecConfig, info, list_audio_backends, load, save
from ._errors import AudioError, TruncatedAudioWarning
from ._reader import (ChunkTensor, OutputAudioStream, OutputStream, OutputVideoStream,
                      SourceAudioStream, SourceStream, SourceVideoStream, StreamReader)
from ._writer import StreamWriter

__all__ = ["AudioError", "AudioMetaData", "ChunkTensor", "CodecConfig", "OutputAudioStream",
           "OutputStream", "OutputVideoStream", "SourceAudioStream", "SourceStream",
           "SourceVideoStream", "StreamReader", "StreamWriter", "TruncatedAudioWarning", "info",
           "list_audio_backends", "load", "save"]
