"""StreamReader / StreamWriter: chunks equal the whole-file decode, seeking, resampling and
filter chains, buffers, sources, and encoding chunk by chunk (audio and video)."""
import io

import numpy as np
import pytest

import ember
import ember.audio as ea
from ember.audio import AudioError, StreamReader, StreamWriter
from ember.audio.io import ChunkTensor
from ember.audio.io._filters import parse_chain

SR = 16000


@pytest.fixture
def encoded(tmp_path, helpers):
    def make(ext, seconds=2.0, channels=2, rate=SR):
        x = helpers.make_tone(seconds, rate, channels).astype(np.float32)
        path = tmp_path / f"s.{ext}"
        ea.save(path, x, rate)
        return path, x
    return make


@pytest.mark.parametrize("ext", ["wav", "flac", "mp3", "ogg", "opus", "m4a"])
@pytest.mark.parametrize("fpc", [1000, 4096])
def test_chunks_concatenate_to_the_whole_file(encoded, ext, fpc):
    path, _ = encoded(ext)
    full, sr = ea.load(path)
    r = StreamReader(path)
    r.add_basic_audio_stream(fpc)
    chunks = [c for (c,) in r.stream()]
    assert all(isinstance(c, ChunkTensor) and isinstance(c, ember.Tensor) for c in chunks)
    assert all(c.shape == (fpc, 2) for c in chunks[:-1]) and 0 < chunks[-1].shape[0] <= fpc
    cat = np.concatenate([c.numpy() for c in chunks])
    np.testing.assert_array_equal(cat.T, full.numpy())
    # pts: seconds of each chunk's first frame
    pts = [c.pts for c in chunks]
    np.testing.assert_allclose(pts, np.arange(len(chunks)) * fpc / sr, atol=1e-6)
    r.close()


@pytest.mark.parametrize("ext", ["wav", "flac", "mp3", "ogg", "m4a"])
def test_precise_seek_equals_the_slice(encoded, ext):
    path, _ = encoded(ext)
    full = ea.load(path)[0].numpy()
    with StreamReader(path) as r:
        r.add_basic_audio_stream(3000)
        for t in (1.25, 0.5, 0.0):          # backwards too
            r.seek(t)
            (c,) = next(iter(r.stream()))
            k = int(round(t * SR))
            assert c.pts == pytest.approx(t)
            np.testing.assert_allclose(c.numpy().T, full[:, k:k + 3000], atol=1e-6)


def test_seek_modes_and_errors(encoded):
    path, _ = encoded("flac")
    with StreamReader(path) as r:
        r.add_basic_audio_stream(1000)
        for mode in ("key", "any"):
            r.seek(1.0, mode)
            (c,) = next(iter(r.stream()))
            assert c.shape == (1000, 2) and 0.5 < c.pts <= 1.0 + 1e-9
        with pytest.raises(ValueError, match="mode"):
            r.seek(1.0, "fast")
        with pytest.raises(ValueError, match="non-negative"):
            r.seek(-1.0)


def test_resample_mix_and_sample_format(encoded, helpers):
    path, x = encoded("wav", channels=2)
    with StreamReader(path) as r:
        r.add_basic_audio_stream(-1, sample_rate=8000, num_channels=1)
        r.add_basic_audio_stream(-1, format="s16p")
        r.add_basic_audio_stream(-1, format=None)
        r.process_all_packets()
        mono, ints, native = r.pop_chunks()
        info = r.get_out_stream_info(0)
    assert mono.shape == (x.shape[1] // 2, 1) and mono.dtype == np.float32
    assert (info.sample_rate, info.num_channels, info.format) == (8000, 1, "flt")
    assert ints.dtype == np.int16 and native.dtype == np.int16  # the file is 16-bit PCM
    # FFmpeg's down-mix of a stereo pair: (L + R) / sqrt(2); compare after resampling both
    ref = ea.functional.resample(ember.from_numpy(
        ((x[0] + x[1]) * np.sqrt(0.5)).astype(np.float32)), SR, 8000).numpy()
    mid = slice(500, len(ref) - 500)
    assert helpers.snr_db(ref[mid], mono.numpy()[mid, 0]) > 30


def test_filter_chain_output(encoded):
    path, x = encoded("flac")
    desc = "aresample=8000,volume=0.5,aformat=sample_fmts=s16:channel_layouts=mono"
    with StreamReader(path) as r:
        r.add_audio_stream(2000, filter_desc=desc)
        chunks = [c for (c,) in r.stream()]
        info = r.get_out_stream_info(0)
    assert chunks[0].dtype == np.int16 and chunks[0].shape == (2000, 1)
    assert sum(c.shape[0] for c in chunks) == x.shape[1] // 2
    assert (info.filter_description, info.sample_rate, info.num_channels) == (desc, 8000, 1)
    with StreamReader(path) as r:
        with pytest.raises(ValueError, match="no filter 'nosuchfilter'"):
            r.add_audio_stream(100, filter_desc="nosuchfilter=3")


def test_parse_chain():
    assert parse_chain("aresample=8000,volume=0.5") == [("aresample", "8000"),
                                                        ("volume", "0.5")]
    assert parse_chain("anull") == [("anull", None)]
    assert parse_chain(r"volume@v1='0.5' , atrim=start=1\,5") == [("volume", "0.5"),
                                                                  ("atrim", "start=1,5")]
    assert parse_chain("aformat=sample_fmts='s16,flt'") == [("aformat", "sample_fmts=s16,flt")]
    for bad in ("[in]anull[out]", "anull;anull", "volume='0.5", ",anull"):
        with pytest.raises(ValueError):
            parse_chain(bad)


def test_fill_buffer_pop_chunks_and_two_outputs(encoded):
    path, x = encoded("flac")
    with StreamReader(path) as r:
        assert (r.num_src_streams, r.default_audio_stream, r.default_video_stream) == \
            (1, 0, None)
        with pytest.raises(RuntimeError, match="no output stream"):
            r.process_packet()
        r.add_basic_audio_stream(4000)
        r.add_basic_audio_stream(2000, sample_rate=8000)   # the same time span per chunk
        assert r.num_out_streams == 2 and not r.is_buffer_ready()
        assert r.fill_buffer() == 0 and r.is_buffer_ready()
        a, b = r.pop_chunks()
        assert a.shape == (4000, 2) and b.shape == (2000, 2)
        total = [a.shape[0], b.shape[0]]
        for a, b in r.stream():
            total[0] += 0 if a is None else a.shape[0]
            total[1] += 0 if b is None else b.shape[0]
        assert total == [x.shape[1], x.shape[1] // 2]
        assert r.process_packet() == 1 and r.pop_chunks() == (None, None)
        r.remove_stream(1)
        assert r.num_out_streams == 1


def test_buffer_overflow_drops_oldest_with_a_warning(encoded):
    path, x = encoded("wav")
    full = ea.load(path)[0].numpy()
    with StreamReader(path) as r:
        r.add_basic_audio_stream(1000, buffer_chunk_size=2)
        with pytest.warns(RuntimeWarning, match="buffer_chunk_size=2"):
            r.process_all_packets()
        (a,) = r.pop_chunks()
        (b,) = r.pop_chunks()
        assert r.pop_chunks() == (None,)
    np.testing.assert_array_equal(np.concatenate([a.numpy(), b.numpy()]).T, full[:, -2000:])


def test_source_info_and_metadata(tmp_path, helpers):
    x = helpers.make_tone(0.5, SR, 1).astype(np.float32)
    w = StreamWriter(tmp_path / "tagged.flac")
    w.set_metadata({"title": "tone", "artist": "ember"})
    w.add_audio_stream(SR, 1)
    with w.open():
        w.write_audio_chunk(0, x.T)
    with StreamReader(tmp_path / "tagged.flac") as r:
        si = r.get_src_stream_info(0)
        meta = r.get_metadata()
    assert (si.media_type, si.codec, si.sample_rate, si.num_channels, si.bits_per_sample) == \
        ("audio", "flac", SR, 1, 16)
    assert "FLAC" in si.codec_long_name and si.format == "s16"
    assert {k.lower(): v for k, v in meta.items()}.get("title") == "tone"


def test_sources_bytes_fileobj_memory_url(encoded):
    import fsspec

    path, _ = encoded("mp3", seconds=1.0)
    data = path.read_bytes()
    full = ea.load(path)[0].numpy()
    url = "memory://ember-stream-test/t.mp3"
    with fsspec.open(url, "wb") as f:
        f.write(data)
    try:
        for src in (data, io.BytesIO(data), url):
            with StreamReader(src) as r:
                r.add_basic_audio_stream(5000)
                got = np.concatenate([c.numpy() for (c,) in r.stream()])
            np.testing.assert_array_equal(got.T, full)
    finally:
        fsspec.filesystem("memory").rm("/ember-stream-test", recursive=True)


def test_corrupt_source_names_the_file(tmp_path):
    bad = tmp_path / "junk.mp3"
    bad.write_bytes(b"\x00" * 5000)
    with pytest.raises(AudioError, match=r"junk\.mp3.*FFmpeg reported"):
        StreamReader(bad)


# --------------------------------------------------------------------------- writer

def test_writer_chunks_bit_exact_and_pts_gap(tmp_path, helpers):
    q = helpers.quantize(helpers.make_tone(1.0, SR, 2), np.int16).T.copy()  # (frames, ch)
    path = tmp_path / "w.wav"
    w = StreamWriter(path)
    w.add_audio_stream(SR, 2, format="s16")
    with pytest.raises(RuntimeError, match="open"):
        w.write_audio_chunk(0, q[:10])
    with w.open():
        for i in range(0, 8000, 3000):
            w.write_audio_chunk(0, ember.from_numpy(q[i:min(i + 3000, 8000)]))
        w.write_audio_chunk(0, q[8000:], pts=0.75)          # a 0.25 s gap: silence
        with pytest.raises(ValueError, match="dtype"):
            w.write_audio_chunk(0, q[:10].astype(np.float32))
        with pytest.raises(ValueError, match="frames, 2"):
            w.write_audio_chunk(0, q[:10, :1])
    y, _ = ea.load(path, normalize=False)
    y = y.numpy().T
    assert y.shape == (12000 + 8000, 2)
    np.testing.assert_array_equal(y[:8000], q[:8000])
    np.testing.assert_array_equal(y[8000:12000], 0)
    np.testing.assert_array_equal(y[12000:], q[8000:])


def test_writer_encoder_conversions(tmp_path, helpers):
    x = helpers.make_tone(1.0, 44100, 2).astype(np.float32).T.copy()
    w = StreamWriter(tmp_path / "c.mp3")
    w.add_audio_stream(44100, 2, encoder_sample_rate=16000, encoder_num_channels=1)
    with w.open():
        w.write_audio_chunk(0, x)
    meta = ea.info(tmp_path / "c.mp3")
    assert (meta.sample_rate, meta.num_channels, meta.encoding) == (16000, 1, "MP3")
    assert abs(meta.num_frames - 16000) < 1200


def test_writer_names_a_missing_encoder(tmp_path):
    import av

    try:
        av.codec.Codec("libvorbis", "w")
        pytest.skip("this PyAV build has libvorbis")
    except (av.error.FFmpegError, ValueError):
        pass
    w = StreamWriter(tmp_path / "x.ogg")
    w.add_audio_stream(SR, 2, encoder="libvorbis")     # not in PyAV's bundled FFmpeg
    with pytest.raises(RuntimeError, match="no 'libvorbis' encoder"):
        w.open()
    assert list(tmp_path.iterdir()) == []


def test_writer_failure_leaves_nothing(tmp_path, helpers):
    x = helpers.make_tone(0.2, SR, 2).astype(np.float32).T.copy()
    w = StreamWriter(tmp_path / "x.flac")
    w.add_audio_stream(SR, 2)
    with pytest.raises(KeyError):
        with w.open():
            w.write_audio_chunk(0, x)
            raise KeyError("boom")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="format="):
        StreamWriter(io.BytesIO())


def test_video_round_trip(tmp_path):
    path = tmp_path / "v.mp4"
    n, h, wd = 12, 48, 64
    frames = np.zeros((n, 3, h, wd), np.uint8)
    for i in range(n):
        frames[i, 0] = 20 * i          # red ramps over time
        frames[i, 1, :, : wd // 2] = 200
    tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(SR) / SR)).astype(np.float32)[:, None]
    w = StreamWriter(path)
    w.add_audio_stream(SR, 1)
    w.add_video_stream(12, wd, h)
    with w.open():
        w.write_audio_chunk(0, tone)
        w.write_video_chunk(1, ember.from_numpy(frames))
    with StreamReader(path) as r:
        vi = r.get_src_stream_info(r.default_video_stream)
        assert (vi.media_type, vi.width, vi.height, vi.frame_rate) == ("video", wd, h, 12.0)
        r.add_basic_video_stream(4)
        r.add_basic_video_stream(4, width=32, height=24, format="gray")
        r.add_basic_audio_stream(4000)
        got, small, audio = [], [], 0
        for v, g, a in r.stream():
            if v is not None:
                got.append(v.numpy())
                small.append(g.numpy())
            audio += 0 if a is None else a.shape[0]
    video = np.concatenate(got)
    assert video.shape == (n, 3, h, wd) and video.dtype == np.uint8
    assert np.abs(video.astype(int) - frames).mean() < 8          # lossy h264, small error
    assert np.concatenate(small).shape == (n, 1, 24, 32)
    assert audio >= SR
