"""fsspec sources and readers: listing, opening, lines/CSV/JSON, tar/zip/webdataset, saving,
HTTP; each reader resumes mid-file and mid-archive."""
import io
import json
import tarfile
import zipfile

import pytest
from pipecheck import check_resume

from ember.data import FileLister, FileOpener, IterableWrapper, drain_skips


def _tree(fs):
    fs.pipe({"/d/a.txt": b"a1\na2\n", "/d/b.txt": b"b1\r\nb2", "/d/c.csv": b"x,y\n1,2\n",
             "/d/sub/e.txt": b"e1\n"})


def test_file_lister_memory_and_local(memfs, tmp_path):
    _tree(memfs)
    assert list(FileLister("memory:///d", "*.txt")) == ["memory:///d/a.txt", "memory:///d/b.txt"]
    assert list(FileLister("memory:///d", ["*.txt", "*.csv"], recursive=True)) == \
        ["memory:///d/a.txt", "memory:///d/b.txt", "memory:///d/c.csv", "memory:///d/sub/e.txt"]
    assert list(FileLister("memory:///d/**/*.txt")) == \
        ["memory:///d/a.txt", "memory:///d/b.txt", "memory:///d/sub/e.txt"]
    assert list(FileLister("memory:///d/a.txt")) == ["memory:///d/a.txt"]
    check_resume(lambda: FileLister(["memory:///d", "memory:///d/sub"]),
                 expected=["memory:///d/a.txt", "memory:///d/b.txt", "memory:///d/c.csv",
                           "memory:///d/sub/e.txt"])
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "1.bin").write_bytes(b"1")
    (tmp_path / "x" / "2.bin").write_bytes(b"2")
    assert list(FileLister(str(tmp_path / "x"))) == [str(tmp_path / "x" / "1.bin"),
                                                     str(tmp_path / "x" / "2.bin")]
    assert list(IterableWrapper([str(tmp_path)]).list_files("*.bin", recursive=True)) == \
        [str(tmp_path / "x" / "1.bin"), str(tmp_path / "x" / "2.bin")]
    with pytest.raises(FileNotFoundError):
        list(FileLister("memory:///nope"))


def test_file_opener_modes(memfs):
    _tree(memfs)
    [(url, s)] = list(FileOpener(["memory:///d/a.txt"], mode="r"))
    assert url == "memory:///d/a.txt" and s.read() == "a1\na2\n"
    [(_, s)] = list(FileOpener(["memory:///d/a.txt"], mode="b"))
    assert s.read() == b"a1\na2\n"
    with s.reopen(3) as s2:
        assert s2.read() == b"a2\n"
    with pytest.raises(ValueError):
        FileOpener(["x"], mode="w")


def test_readlines_resume_mid_file(memfs):
    _tree(memfs)
    mk = lambda: FileLister("memory:///d", "*.txt", recursive=True).open_files().readlines()  # noqa: E731
    check_resume(mk, expected=[("memory:///d/a.txt", "a1"), ("memory:///d/a.txt", "a2"),
                               ("memory:///d/b.txt", "b1"), ("memory:///d/b.txt", "b2"),
                               ("memory:///d/sub/e.txt", "e1")])
    raw = list(FileLister("memory:///d/b.txt").open_files().readlines(strip_newline=False, return_path=False))
    assert raw == ["b1\r\n", "b2"]


def test_csv_tsv_json(memfs):
    memfs.pipe({"/t/a.csv": b'h1,h2\n1,"multi\nline"\n3,4\n', "/t/b.tsv": b"p\tq\n5\t6\n",
                "/t/c.jsonl": b'{"a": 1}\n\n{"a": [2, 3]}\n'})
    mk = lambda: IterableWrapper(["memory:///t/a.csv"]).open_files().parse_csv(skip_lines=1)  # noqa: E731
    check_resume(mk, expected=[["1", "multi\nline"], ["3", "4"]])
    two = ["memory:///t/a.csv", "memory:///t/a.csv"]
    mk = lambda: IterableWrapper(two).open_files().parse_csv(as_dict=True)  # noqa: E731
    full = check_resume(mk)
    assert full[0] == {"h1": "1", "h2": "multi\nline"} and len(full) == 4
    tsv = list(IterableWrapper(["memory:///t/b.tsv"]).open_files().parse_csv(delimiter="\t", return_path=True))
    assert tsv == [("memory:///t/b.tsv", ["p", "q"]), ("memory:///t/b.tsv", ["5", "6"])]
    mk = lambda: IterableWrapper(["memory:///t/c.jsonl"]).open_files().parse_jsonlines()  # noqa: E731
    check_resume(mk, expected=[("memory:///t/c.jsonl", {"a": 1}), ("memory:///t/c.jsonl", {"a": [2, 3]})])


def test_bad_json_line_is_skipped_and_counted(memfs):
    memfs.pipe("/j.jsonl", b'{"a": 1}\n{oops\n{"a": 2}\n')
    dp = IterableWrapper(["memory:///j.jsonl"]).open_files().parse_jsonlines(return_path=False)
    with pytest.raises(json.JSONDecodeError) as ei:
        list(dp)
    assert "memory:///j.jsonl" in "\n".join(ei.value.__notes__)
    drain_skips()
    dp.on_error = "skip"
    assert list(dp) == [{"a": 1}, {"a": 2}]
    assert len(drain_skips()) == 1


def _tar_bytes(members, mode="w"):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zip_bytes(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members:
            zf.writestr(name, data)
    return buf.getvalue()


MEMBERS = [(f"s{i:02d}.{ext}", f"{i}-{ext}".encode()) for i in range(5) for ext in ("txt", "cls")]


@pytest.mark.parametrize("mode,suffix", [("w", ".tar"), ("w:gz", ".tar.gz"), ("w:bz2", ".tar.bz2")])
def test_tar_reader_streams_and_resumes(memfs, mode, suffix):
    memfs.pipe({f"/a/one{suffix}": _tar_bytes(MEMBERS[:6], mode),
                f"/a/two{suffix}": _tar_bytes(MEMBERS[6:], mode)})

    def mk():
        return FileLister("memory:///a").open_files("b").load_from_tar().map(
            lambda t: (t[0].rsplit("/", 1)[-1], t[1].read()))
    check_resume(mk, expected=MEMBERS, cuts=[0, 1, 5, 6, 7, 9, 10])


def test_zip_reader_and_webdataset(memfs):
    memfs.pipe({"/z/one.zip": _zip_bytes(MEMBERS[:4]), "/z/two.zip": _zip_bytes(MEMBERS[4:])})
    mk = lambda: FileLister("memory:///z").open_files("b").load_from_zip().map(  # noqa: E731
        lambda t: (t[0].rsplit("/", 1)[-1], t[1].read()))
    check_resume(mk, expected=MEMBERS)

    def wds():
        return FileLister("memory:///z").open_files("b").load_from_zip().webdataset().map(
            lambda s: (s["__key__"].rsplit("/", 1)[-1], s[".txt"], s[".cls"]))
    # a sample split across two archives is two samples (keys include the archive path)
    check_resume(wds, expected=[(f"s{i:02d}", f"{i}-txt".encode(), f"{i}-cls".encode()) for i in range(5)])


def test_webdataset_from_tar_with_multi_dot_extensions(memfs):
    members = [("d/k1.seg.png", b"1"), ("d/k1.json", b"{}"), ("d/k2.seg.png", b"2")]
    memfs.pipe("/w.tar", _tar_bytes(members))
    out = list(IterableWrapper(["memory:///w.tar"]).open_files("b").load_from_tar().webdataset())
    assert [sorted(s) for s in out] == [[".json", ".seg.png", "__key__"], [".seg.png", "__key__"]]
    assert out[0]["__key__"] == "memory:///w.tar/d/k1" and out[1][".seg.png"] == b"2"


def test_corrupt_archives_skip_and_count(memfs):
    good = _zip_bytes([("a.txt", b"A" * 100), ("b.txt", b"B" * 100), ("c.txt", b"C" * 100)])
    bad = bytearray(good)
    i = bad.index(b"B" * 100)
    bad[i:i + 5] = b"XXXXX"  # b.txt's data no longer matches its CRC
    tgz = _tar_bytes(MEMBERS, "w:gz")
    memfs.pipe({"/c/1.zip": bytes(bad), "/c/2.tar.gz": tgz[:len(tgz) // 2], "/c/3.zip": good})
    mk = lambda **kw: FileLister("memory:///c").open_files("b").load_from_tar(**kw)  # noqa: E731
    drain_skips()
    zips = FileLister("memory:///c", "*.zip").open_files("b").load_from_zip(on_error="skip")
    names = [p.rsplit("/", 2)[-2:] for p, _ in zips]
    assert names == [["1.zip", "a.txt"], ["1.zip", "c.txt"],
                     ["3.zip", "a.txt"], ["3.zip", "b.txt"], ["3.zip", "c.txt"]]
    skipped = drain_skips()
    assert len(skipped) == 1 and skipped[0].key.endswith("1.zip/b.txt") and "CRC" in skipped[0].error
    with pytest.raises(zipfile.BadZipFile):
        list(FileLister("memory:///c", "*.zip").open_files("b").load_from_zip())
    tars = FileLister("memory:///c", "*.tar.gz").open_files("b").load_from_tar(on_error="skip")
    got = list(tars)
    assert 0 < len(got) < len(MEMBERS)  # the members before the break, then the rest is lost
    assert len(drain_skips()) == 1
    with pytest.raises((EOFError, tarfile.TarError, OSError)):
        list(mk())


def test_saver_atomic(memfs, tmp_path):
    src = [("memory:///out/a.txt", b"hello"), ("memory:///out/b/c.txt", "text")]
    assert list(IterableWrapper(src).save_to_disk()) == ["memory:///out/a.txt", "memory:///out/b/c.txt"]
    assert memfs.cat("/out/a.txt") == b"hello" and memfs.cat("/out/b/c.txt") == b"text"
    target = tmp_path / "x" / "f.bin"
    out = list(IterableWrapper([("f.bin", b"123")]).save_to_disk(filepath_fn=lambda u: str(target)))
    assert out == [str(target)] and target.read_bytes() == b"123"
    assert [p.name for p in target.parent.iterdir()] == ["f.bin"]  # no temporary left behind

    class Broken:
        def read(self):
            raise OSError("disk on fire")
    with pytest.raises(OSError):
        list(IterableWrapper([(str(target), Broken())]).save_to_disk())
    assert target.read_bytes() == b"123"  # the old file is intact


def test_http_reader_loopback(http_root):
    root, base = http_root
    (root / "a.txt").write_bytes(b"l1\nl2\n")
    (root / "b.txt").write_bytes(b"l3\n")
    urls = [f"{base}/a.txt", f"{base}/b.txt"]
    mk = lambda: IterableWrapper(urls).read_from_http(timeout=10).readlines(return_path=False)  # noqa: E731
    check_resume(mk, expected=["l1", "l2", "l3"])
    assert list(FileLister(f"{base}/a.txt").open_files("b").map(lambda t: t[1].read())) == [b"l1\nl2\n"]
    with pytest.raises(ValueError):
        list(IterableWrapper(["ftp://x"]).read_from_http())
    with pytest.raises(FileNotFoundError):
        list(IterableWrapper([f"{base}/missing"]).read_from_http().readlines())
