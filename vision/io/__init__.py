"""ember.vision.io: image (Pillow) and video (PyAV) reading and writing."""
from .image import (ImageReadMode, decode_image, decode_jpeg, decode_png, encode_jpeg,  # noqa: F401
                    encode_png, read_file, read_image, write_file, write_jpeg, write_png)
from .video import VideoReader, read_video, read_video_timestamps, write_video  # noqa: F401

__all__ = ['ImageReadMode', 'VideoReader', 'decode_image', 'decode_jpeg', 'decode_png',
           'encode_jpeg', 'encode_png', 'read_file', 'read_image', 'read_video',
           'read_video_timestamps', 'write_file', 'write_jpeg', 'write_png', 'write_video']
