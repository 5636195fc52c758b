"""ember.audio load / save / info: round trips for every format and bit depth on generated
tones (PCM bit-exact), sources (paths, bytes, file objects, memory:// URLs), atomic writes,
and the errors for corrupt, truncated and unsupported files."""
import io
import os
import pathlib
import warnings

import numpy as np
import pytest

import ember
import ember.audio as ea
from ember.audio import AudioError, TruncatedAudioWarning

SR = 16000


def _tone(helpers, seconds=0.5, channels=2, sr=SR):
    return helpers.make_tone(seconds, sr, channels)


# --------------------------------------------------------------------------- PCM, bit-exact

@pytest.mark.parametrize("encoding,bits,dtype,shift", [
    ("PCM_S", 16, np.int16, 0),
    ("PCM_S", 24, np.int32, 8),     # 24-bit: the top three bytes of an int32
    ("PCM_S", 32, np.int32, 0),
    ("PCM_U", 8, np.uint8, 0),
    ("PCM_F", 32, np.float32, 0),
    ("PCM_F", 64, np.float64, 0),
])
def test_wav_round_trip_is_bit_exact(tmp_path, helpers, encoding, bits, dtype, shift):
    x = _tone(helpers)
    if np.dtype(dtype).kind == "f":
        data = x.astype(dtype)
    else:
        data = helpers.quantize(x, dtype)
        if shift:
            data = (data >> shift) << shift
    path = tmp_path / f"t_{bits}.wav"
    ea.save(path, data, SR, encoding=encoding, bits_per_sample=bits)
    meta = ea.info(path)
    assert (meta.sample_rate, meta.num_frames, meta.num_channels) == (SR, data.shape[1], 2)
    assert (meta.bits_per_sample, meta.encoding) == (bits, encoding)
    raw, sr = ea.load(path, normalize=False)
    assert sr == SR and raw.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(raw.numpy(), data)
    wave, _ = ea.load(path)
    assert wave.dtype == np.float32 and wave.shape == data.shape
    if np.dtype(dtype).kind in "iu":
        scale = 128.0 if dtype == np.uint8 else 2.0 ** (8 * np.dtype(dtype).itemsize - 1)
        ref = (data.astype(np.float64) - (128 if dtype == np.uint8 else 0)) / scale
        np.testing.assert_array_equal(wave.numpy(), ref.astype(np.float32))


def test_float_waveform_saved_as_16_bit_by_default(tmp_path, helpers):
    # a float waveform on the 16-bit grid survives the default (16-bit PCM) wav exactly
    q = helpers.quantize(_tone(helpers), np.int16)
    x = (q / 32768.0).astype(np.float32)
    ea.save(tmp_path / "f.wav", ember.from_numpy(x), SR)
    assert ea.info(tmp_path / "f.wav").bits_per_sample == 16
    y, _ = ea.load(tmp_path / "f.wav")
    np.testing.assert_array_equal(y.numpy(), x)
    # out-of-range floats are clipped, as FFmpeg does
    ea.save(tmp_path / "c.wav", np.array([[1.5, -2.0, 0.25]], np.float32), SR)
    raw, _ = ea.load(tmp_path / "c.wav", normalize=False)
    np.testing.assert_array_equal(raw.numpy(), [[32767, -32768, 8192]])


@pytest.mark.parametrize("bits,dtype,shift", [(16, np.int16, 0), (24, np.int32, 8)])
def test_flac_round_trip_is_bit_exact(tmp_path, helpers, bits, dtype, shift):
    data = helpers.quantize(_tone(helpers, channels=3), dtype)
    data = (data >> shift) << shift
    ea.save(tmp_path / "t.flac", data, SR, bits_per_sample=bits)
    meta = ea.info(tmp_path / "t.flac")
    assert (meta.encoding, meta.bits_per_sample, meta.num_frames, meta.num_channels) == \
        ("FLAC", bits, data.shape[1], 3)
    raw, _ = ea.load(tmp_path / "t.flac", normalize=False)
    np.testing.assert_array_equal(raw.numpy(), data)


def test_mulaw_and_alaw_wav(tmp_path, helpers):
    x = _tone(helpers).astype(np.float32)
    for enc in ("ULAW", "ALAW"):
        ea.save(tmp_path / f"{enc}.wav", x, SR, encoding=enc)
        meta = ea.info(tmp_path / f"{enc}.wav")
        assert (meta.encoding, meta.bits_per_sample) == (enc, 8)
        y, _ = ea.load(tmp_path / f"{enc}.wav")
        assert helpers.snr_db(x, y.numpy()) > 30


# --------------------------------------------------------------------------- lossy formats

@pytest.mark.parametrize("ext,encoding,rate,min_snr", [
    ("mp3", "MP3", 16000, 20),
    ("ogg", "VORBIS", 16000, 10),      # FFmpeg's own (experimental) Vorbis encoder
    ("opus", "OPUS", 48000, 15),
    ("m4a", "AAC", 16000, 15),
])
def test_lossy_round_trip(tmp_path, helpers, ext, encoding, rate, min_snr):
    x = helpers.make_tone(1.0, rate, 2).astype(np.float32)
    path = tmp_path / f"t.{ext}"
    ea.save(path, x, rate)
    meta = ea.info(path)
    assert (meta.encoding, meta.sample_rate, meta.num_channels, meta.bits_per_sample) == \
        (encoding, rate, 2, 0)
    y, sr = ea.load(path)
    assert sr == rate and y.dtype == np.float32 and y.shape[0] == 2
    assert meta.num_frames == y.shape[1]                 # info counts exactly
    assert abs(y.shape[1] - x.shape[1]) <= 2048          # codec frame padding at most
    y = y.numpy()
    lag = helpers.best_lag(x[0], y[0])
    assert abs(lag) < 100                                 # priming removed by FFmpeg
    n = min(x.shape[1], y.shape[1] - max(lag, 0)) - 2048
    a = x[:, 1024:n]
    b = y[:, 1024 + lag:n + lag]
    assert helpers.snr_db(a, b) > min_snr
    raw, _ = ea.load(path, normalize=False)
    assert raw.dtype == np.float32                        # lossy decoders give floats


def test_encoder_rate_picked_when_unsupported(tmp_path, helpers):
    # libopus takes 8/12/16/24/48 kHz: 44.1 kHz input is encoded at 48 kHz
    x = helpers.make_tone(0.3, 44100, 2).astype(np.float32)
    ea.save(tmp_path / "t.opus", x, 44100)
    assert ea.info(tmp_path / "t.opus").sample_rate == 48000


def test_vorbis_mono_says_why_it_cannot(tmp_path, helpers):
    x = _tone(helpers, channels=1).astype(np.float32)
    with pytest.raises(RuntimeError, match="stereo only"):
        ea.save(tmp_path / "mono.ogg", x, SR)
    assert os.listdir(tmp_path) == []  # nothing left behind, not even the temporary file


# --------------------------------------------------------------------------- load options

@pytest.mark.parametrize("ext", ["wav", "flac", "mp3", "ogg"])
def test_frame_offset_and_num_frames(tmp_path, helpers, ext):
    x = helpers.make_tone(1.0, SR, 2).astype(np.float32)
    path = tmp_path / f"t.{ext}"
    ea.save(path, x, SR)
    full, _ = ea.load(path)
    part, _ = ea.load(path, frame_offset=5003, num_frames=4000)
    np.testing.assert_array_equal(part.numpy(), full.numpy()[:, 5003:9003])
    tail, _ = ea.load(path, frame_offset=12345)
    np.testing.assert_array_equal(tail.numpy(), full.numpy()[:, 12345:])
    last, _ = ea.load(path, frame_offset=full.shape[1] - 10, num_frames=100)
    assert last.shape == (2, 10)


def test_channels_last_and_argument_checks(tmp_path, helpers):
    x = helpers.quantize(_tone(helpers), np.int16)
    ea.save(tmp_path / "t.wav", x, SR)
    y, _ = ea.load(tmp_path / "t.wav", channels_first=False, normalize=False)
    np.testing.assert_array_equal(y.numpy(), x.T)
    with pytest.raises(ValueError, match="frame_offset"):
        ea.load(tmp_path / "t.wav", frame_offset=-1)
    with pytest.raises(ValueError, match="num_frames"):
        ea.load(tmp_path / "t.wav", num_frames=0)
    with pytest.raises(ValueError, match="backend"):
        ea.load(tmp_path / "t.wav", backend="sox")
    assert ea.list_audio_backends() == ["ffmpeg"]


def test_save_channels_last_and_1d(tmp_path, helpers):
    x = helpers.quantize(_tone(helpers), np.int16)
    ea.save(tmp_path / "a.wav", x.T, SR, channels_first=False)
    ea.save(tmp_path / "b.wav", x[0], SR)
    a, _ = ea.load(tmp_path / "a.wav", normalize=False)
    b, _ = ea.load(tmp_path / "b.wav", normalize=False)
    np.testing.assert_array_equal(a.numpy(), x)
    np.testing.assert_array_equal(b.numpy(), x[:1])


# --------------------------------------------------------------------------- sources

def test_sources_bytes_fileobj_pathlib_and_memory_url(tmp_path, helpers):
    import fsspec

    x = helpers.quantize(_tone(helpers), np.int16)
    buf = io.BytesIO()
    ea.save(buf, x, SR, format="flac")
    data = buf.getvalue()
    for src in (data, bytearray(data), io.BytesIO(data)):
        y, sr = ea.load(src, normalize=False)
        np.testing.assert_array_equal(y.numpy(), x)
    assert ea.info(io.BytesIO(data)).encoding == "FLAC"
    path = pathlib.Path(tmp_path) / "p.flac"
    path.write_bytes(data)
    np.testing.assert_array_equal(ea.load(path, normalize=False)[0].numpy(), x)
    # fsspec: write and read back through memory://
    url = "memory://ember-audio-test/dir/t.wav"
    try:
        ea.save(url, x, SR)
        assert fsspec.filesystem("memory").exists("/ember-audio-test/dir/t.wav")
        y, _ = ea.load(url, normalize=False)
        np.testing.assert_array_equal(y.numpy(), x)
        assert ea.info(url).num_frames == x.shape[1]
        with fsspec.open(url, "rb") as f:      # an fsspec file object as the source
            np.testing.assert_array_equal(ea.load(f, normalize=False)[0].numpy(), x)
    finally:
        fsspec.filesystem("memory").rm("/ember-audio-test", recursive=True)


def test_file_object_needs_a_format(helpers):
    x = _tone(helpers).astype(np.float32)
    with pytest.raises(ValueError, match="format="):
        ea.save(io.BytesIO(), x, SR)
    named = io.BytesIO()
    named.name = "clip.wav"                   # a named file object tells it by its extension
    ea.save(named, x, SR)
    assert named.getvalue()[:4] == b"RIFF"


def test_format_override_reads_headerless_pcm(helpers):
    x = helpers.quantize(_tone(helpers, channels=1), np.int16)
    raw = x.tobytes()
    y, sr = ea.load(raw, format="s16le", normalize=False)
    assert sr == 44100                         # FFmpeg's default for raw PCM
    np.testing.assert_array_equal(y.numpy(), x)


# --------------------------------------------------------------------------- atomic writes

def test_save_is_atomic(tmp_path, helpers):
    x = helpers.quantize(_tone(helpers), np.int16)
    path = tmp_path / "keep.ogg"
    ea.save(path, x, SR)                       # stereo: works
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        ea.save(path, x[:1], SR)               # mono vorbis fails while encoding
    assert path.read_bytes() == before         # the old file is intact
    assert sorted(os.listdir(tmp_path)) == ["keep.ogg"]   # no temporary left
    with pytest.raises(FileNotFoundError):
        ea.save(tmp_path / "no" / "such" / "dir.wav", x, SR)


def test_save_argument_errors(tmp_path, helpers):
    x = _tone(helpers).astype(np.float32)
    with pytest.raises(ValueError, match="unknown audio format"):
        ea.save(tmp_path / "t.notaformat", x, SR)
    with pytest.raises(ValueError, match="does not apply"):
        ea.save(tmp_path / "t.mp3", x, SR, encoding="PCM_S")
    with pytest.raises(ValueError, match="bits_per_sample"):
        ea.save(tmp_path / "t.mp3", x, SR, bits_per_sample=16)
    with pytest.raises(ValueError, match="16 or 24"):
        ea.save(tmp_path / "t.flac", x, SR, bits_per_sample=32)
    with pytest.raises(ValueError, match="8-bit"):
        ea.save(tmp_path / "t.wav", x, SR, encoding="PCM_S", bits_per_sample=8)
    with pytest.raises(ValueError, match="2-D"):
        ea.save(tmp_path / "t.wav", x[None], SR)
    with pytest.raises(ValueError, match="dtype"):
        ea.save(tmp_path / "t.wav", x.astype(np.int8), SR)
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- errors

def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.wav"):
        ea.load(tmp_path / "nope.wav")
    bad = tmp_path / "bad.wav"
    bad.write_bytes(os.urandom(4000))
    with pytest.raises(AudioError, match=r"bad\.wav.*FFmpeg reported: Invalid data") as e:
        ea.load(bad)
    assert e.value.source.endswith("bad.wav'") and e.value.ffmpeg_message
    with pytest.raises(AudioError, match="bytes>.*FFmpeg reported"):
        ea.info(b"definitely not audio" * 50)
    with pytest.raises(TypeError, match="path, URL, bytes"):
        ea.load(12345)


def _truncated(helpers, ext, frac=0.5):
    x = helpers.make_tone(3.0, SR, 2).astype(np.float32)
    buf = io.BytesIO()
    ea.save(buf, x, SR, format=ext)
    data = buf.getvalue()
    return data[:int(len(data) * frac)], x.shape[1]


@pytest.mark.parametrize("ext,how", [
    ("wav", "header declares"),           # RIFF data size beyond the end
    ("flac", "Invalid data"),             # a frame cut in half: FFmpeg's decode error
    ("mp3", "header declares"),           # the Xing/Info frame count
    ("ogg", "end-of-stream page"),        # Ogg declares no length: its last page is missing
    ("opus", "end-of-stream page"),
])
def test_truncated_file_raises_and_skip_returns_what_decoded(tmp_path, helpers, ext, how):
    data, total = _truncated(helpers, ext)
    path = tmp_path / f"cut.{ext}"
    path.write_bytes(data)
    with pytest.raises(AudioError, match=how) as e:
        ea.load(path)
    assert "cut." + ext in str(e.value)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        y, sr = ea.load(path, on_error="skip")
    got = [w for w in rec if issubclass(w.category, TruncatedAudioWarning)]
    assert len(got) == 1 and "cut." + ext in str(got[0].message)
    assert 0 < y.shape[1] < total * (48000 // SR if ext == "opus" else 1)
    if ext in ("wav", "flac", "mp3"):          # these say how much was lost
        lost = got[0].message.frames_lost
        assert lost > 0 and "missing" in str(got[0].message)
        assert abs(y.shape[1] + lost - total) <= 2304
    full = ea.load(path, num_frames=100)[0]    # what is there still reads without error
    assert full.shape == (2, 100)


def test_truncated_mp4_cannot_be_opened(helpers):
    data, _ = _truncated(helpers, "m4a")
    with pytest.raises(AudioError, match="cannot open.*FFmpeg reported"):
        ea.load(data)


def test_corrupt_packet_in_the_middle(tmp_path, helpers):
    x = helpers.make_tone(2.0, SR, 2).astype(np.float32)
    buf = io.BytesIO()
    ea.save(buf, x, SR, format="flac")
    data = bytearray(buf.getvalue())
    mid = len(data) // 2
    data[mid:mid + 300] = bytes(300)           # zero a stretch inside a frame
    path = tmp_path / "hole.flac"
    path.write_bytes(bytes(data))
    with pytest.raises(AudioError, match=r"hole\.flac.*corrupt"):
        ea.load(path)
    with pytest.warns(TruncatedAudioWarning, match="truncated or corrupt") as rec:
        y, _ = ea.load(path, on_error="skip")
    # FFmpeg's FLAC parser drops the damaged frame (its CRC fails): one frame is lost
    assert 0 < y.shape[1] < x.shape[1]
    assert rec[0].message.frames_lost == x.shape[1] - y.shape[1]
