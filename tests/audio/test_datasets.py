"""The speech corpora read from their published layouts (written here with generated tones),
their items, splits and errors, and ``download=True`` from an archive this test builds."""
import hashlib
import os
import tarfile

import numpy as np
import pytest

import ember
import ember.audio as ea
from ember.audio import datasets as D
from ember.data.download import DatasetFormatError


def make_tone(seconds, sr, channels=1, seed=0):
    """(channels, frames) float64: a 440 Hz sine plus a little seeded noise."""
    t = np.arange(int(round(seconds * sr))) / sr
    rng = np.random.default_rng(seed)
    return np.stack([0.45 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.uniform(-1, 1, t.size)
                     for _ in range(channels)])


def _clip(path, sr=16000, seconds=0.05, seed=0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    x = make_tone(seconds, sr, channels=1, seed=seed).astype(np.float32)
    ea.save(str(path), ember.tensor(x), sr, bits_per_sample=16)
    return x


def _speechcommands(root):
    base = root / "SpeechCommands" / "speech_commands_v0.02"
    files = ["yes/a1_nohash_0.wav", "yes/b2_nohash_1.wav", "no/a1_nohash_0.wav",
             "no/c3_nohash_2.wav", "up/d4_nohash_0.wav"]
    for i, f in enumerate(files):
        _clip(base / f, seed=i)
    _clip(base / "_background_noise_" / "white_noise.wav")
    (base / "validation_list.txt").write_text("no/c3_nohash_2.wav\n")
    (base / "testing_list.txt").write_text("up/d4_nohash_0.wav\nyes/b2_nohash_1.wav\n")
    return base


def test_speechcommands_items_and_splits(tmp_path):
    _speechcommands(tmp_path)
    ds = D.SPEECHCOMMANDS(tmp_path)
    assert len(ds) == 5                    # the background noise is never an item
    w, sr, label, speaker, n = ds[0]       # sorted by path: no/a1 first
    assert (sr, label, speaker, n) == (16000, "no", "a1", 0)
    assert tuple(w.shape) == (1, 800) and w.dtype == ember.float32
    assert ds.get_metadata(1)[0] == os.path.join("no", "c3_nohash_2.wav")
    train = D.SPEECHCOMMANDS(tmp_path, subset="training")
    assert sorted(train.get_metadata(i)[2:4] for i in range(len(train))) == [
        ("no", "a1"), ("yes", "a1")]
    assert [D.SPEECHCOMMANDS(tmp_path, subset="validation")[0][2]] == ["no"]
    test = D.SPEECHCOMMANDS(tmp_path, subset="testing")
    assert [test[i][2] for i in range(len(test))] == ["up", "yes"]
    # a MapDataPipe: chainable
    assert list(test.map(lambda item: item[3])) == ["d4", "b2"]
    with pytest.raises(ValueError, match="subset must be one of"):
        D.SPEECHCOMMANDS(tmp_path, subset="train")


def test_speechcommands_checks_sample_rate_and_lists(tmp_path):
    base = _speechcommands(tmp_path)
    _clip(base / "go" / "e5_nohash_0.wav", sr=8000)
    ds = D.SPEECHCOMMANDS(tmp_path)
    i = [ds.get_metadata(k)[2] for k in range(len(ds))].index("go")
    with pytest.raises(ValueError, match=r"e5_nohash_0.wav: sample rate should be 16000 Hz, "
                                         r"but the file has 8000 Hz"):
        ds[i]
    os.remove(base / "testing_list.txt")
    with pytest.raises(FileNotFoundError, match="testing_list.txt is missing"):
        D.SPEECHCOMMANDS(tmp_path, subset="training")


def _librispeech(root, subset="dev-clean"):
    base = root / "LibriSpeech" / subset
    lines = {("19", "198"): ["19-198-0000 HELLO WORLD", "19-198-0001 A SECOND ONE"],
             ("26", "495"): ["26-495-0003 THIRD"]}
    for (spk, chap), rows in lines.items():
        for k, row in enumerate(rows):
            _clip(base / spk / chap / (row.split()[0] + ".flac"), seed=k)
        (base / spk / chap / f"{spk}-{chap}.trans.txt").write_text("\n".join(rows) + "\n")
    return base


def test_librispeech_items(tmp_path):
    _librispeech(tmp_path)
    ds = D.LIBRISPEECH(tmp_path, url="dev-clean")
    assert len(ds) == 3
    w, sr, text, spk, chap, utt = ds[1]
    assert (sr, text, spk, chap, utt) == (16000, "A SECOND ONE", 19, 198, 1)
    ref = make_tone(0.05, 16000, channels=1, seed=1)
    np.testing.assert_allclose(w.numpy(), ref, atol=1 / 2 ** 15)   # 16-bit FLAC
    assert ds.get_metadata(2)[0] == os.path.join("dev-clean", "26", "495", "26-495-0003.flac")
    with pytest.raises(ValueError, match="unknown subset 'dev_clean'"):
        D.LIBRISPEECH(tmp_path, url="dev_clean")
    with pytest.raises(RuntimeError, match=r"LIBRISPEECH: dataset not found at .*test-clean; "
                                           r"pass download=True"):
        D.LIBRISPEECH(tmp_path, url="test-clean")


def test_librispeech_bad_transcripts_name_file_and_line(tmp_path):
    base = _librispeech(tmp_path)
    (base / "26" / "495" / "26-495.trans.txt").write_text("26-495-0003\n")
    ds = D.LIBRISPEECH(tmp_path, url="dev-clean")
    with pytest.raises(DatasetFormatError, match=r"26-495.trans.txt, line 1: expected"):
        ds[2]
    (base / "26" / "495" / "26-495.trans.txt").write_text("26-495-0009 OTHER\n")
    with pytest.raises(DatasetFormatError, match="no transcript for 26-495-0003"):
        D.LIBRISPEECH(tmp_path, url="dev-clean")[2]


def test_librispeech_downloads_and_checks_the_hash(tmp_path, monkeypatch):
    from ember.audio.datasets import librispeech as L
    from ember.hub import HashMismatchError

    src = tmp_path / "src"
    _librispeech(src)
    archive = tmp_path / "dev-clean.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / "LibriSpeech", arcname="LibriSpeech")
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    monkeypatch.setattr(L, "_BASE_URL", "file://" + str(tmp_path) + "/")
    monkeypatch.setitem(L._SHA256, "dev-clean", "0" * 64)
    with pytest.raises(HashMismatchError):
        D.LIBRISPEECH(tmp_path / "bad", url="dev-clean", download=True)
    assert not os.path.exists(tmp_path / "bad" / "dev-clean.tar.gz")
    monkeypatch.setitem(L._SHA256, "dev-clean", sha)
    ds = D.LIBRISPEECH(tmp_path / "root", url="dev-clean", download=True)
    assert len(ds) == 3 and ds[0][2] == "HELLO WORLD"
    assert D.LIBRISPEECH(tmp_path / "root", url="dev-clean")[2][2] == "THIRD"   # offline now


def test_yesno_from_a_downloaded_archive(tmp_path):
    src = tmp_path / "src" / "waves_yesno"
    _clip(src / "0_1_1_0_0_0_1_1.wav", sr=8000)
    _clip(src / "0_0_0_0_1_1_1_1.wav", sr=8000, seed=1)
    archive = tmp_path / "waves_yesno.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="waves_yesno")
    ds = D.YESNO(tmp_path / "root", url="file://" + str(archive), download=True)
    assert len(ds) == 2
    w, sr, labels = ds[0]
    assert sr == 8000 and labels == [0, 0, 0, 0, 1, 1, 1, 1] and w.shape[0] == 1
    assert ds[1][2] == [0, 1, 1, 0, 0, 0, 1, 1]
    _clip(tmp_path / "root" / "waves_yesno" / "noise.wav", sr=8000)
    with pytest.raises(ValueError, match="noise.wav: a YESNO file name is its labels"):
        D.YESNO(tmp_path / "root")


def test_ljspeech_items_and_bad_metadata(tmp_path):
    base = tmp_path / "LJSpeech-1.1"
    _clip(base / "wavs" / "LJ001-0001.wav", sr=22050)
    _clip(base / "wavs" / "LJ001-0002.wav", sr=22050, seed=1)
    (base / "metadata.csv").write_text(
        'LJ001-0001|Printing, in 1 sense|Printing, in one sense\n'
        'LJ001-0002|"quoted" text|"quoted" text\n')
    ds = D.LJSPEECH(tmp_path)
    assert len(ds) == 2
    w, sr, text, norm = ds[0]
    assert sr == 22050 and text == "Printing, in 1 sense" and norm == "Printing, in one sense"
    assert ds[1][2] == '"quoted" text'          # no CSV quoting in this corpus
    (base / "metadata.csv").write_text("LJ001-0001|only two\n")
    with pytest.raises(DatasetFormatError, match=r"metadata.csv, line 1: expected 3"):
        D.LJSPEECH(tmp_path)


def test_vctk_skips_as_published(tmp_path):
    base = tmp_path / "VCTK-Corpus-0.92"
    texts = {"p225": ["001", "002"], "p280": ["001"], "p362": ["001", "002"]}
    for spk, utts in texts.items():
        for u in utts:
            (base / "txt" / spk).mkdir(parents=True, exist_ok=True)
            (base / "txt" / spk / f"{spk}_{u}.txt").write_text(f"Sentence {spk} {u}.\n")
            for mic in ("mic1", "mic2"):
                if (spk, mic) == ("p280", "mic2") or (spk, u) == ("p362", "002"):
                    continue
                _clip(base / "wav48_silence_trimmed" / spk / f"{spk}_{u}_{mic}.flac", sr=48000)
    ds = D.VCTK_092(tmp_path)
    assert [(ds[i][3], ds[i][4]) for i in range(len(ds))] == [
        ("p225", "001"), ("p225", "002"), ("p362", "001")]
    w, sr, text, spk, utt = ds[0]
    assert sr == 48000 and text == "Sentence p225 001.\n" and w.shape[0] == 1
    assert len(D.VCTK_092(tmp_path, mic_id="mic1")) == 4
    with pytest.raises(ValueError, match="mic_id must be 'mic1' or 'mic2'"):
        D.VCTK_092(tmp_path, mic_id="mic3")
