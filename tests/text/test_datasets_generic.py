"""The generic text readers: TextFolder, TextCSV (CSV and TSV) and TextJsonLines, on files
written here; bad rows name their file and line, or are skipped and counted."""
import csv

import pytest

from ember.data import DataLoader, drain_skips
from ember.text.datasets import DatasetFormatError, TextCSV, TextFolder, TextJsonLines


@pytest.fixture(autouse=True)
def _clean_skip_log():
    drain_skips()
    yield
    drain_skips()


def _folder(root, files):
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return root


def test_text_folder_classes_order_files_and_text(tmp_path):
    root = _folder(tmp_path / "train", {
        "weather/b.txt": "Rain tomorrow.\n", "weather/a.txt": "Sunny\r\n",
        "sport/2.txt": "Goal!\n\n", "sport/sub/1.txt": "Nested file",
        "sport/.hidden.txt": "no", "sport/notes.md": "not text", ".git/x.txt": "no",
        "sport/.cache/x.txt": "no"})
    ds = TextFolder(root)
    assert ds.classes == ["sport", "weather"] and ds.class_to_idx == {"sport": 0, "weather": 1}
    assert len(ds) == 4
    assert list(ds) == [(0, "Goal!\n"), (0, "Nested file"), (1, "Sunny"), (1, "Rain tomorrow.")]
    assert [p.rsplit("/", 1)[1] for p, _ in ds.samples] == ["2.txt", "1.txt", "a.txt", "b.txt"]
    md = TextFolder(root, extensions=(".md",))
    assert list(md) == [(0, "not text")]
    ordered = TextFolder(root, classes=["weather", "sport"])
    assert [y for y, _ in ordered] == [0, 0, 1, 1]
    with pytest.raises(FileNotFoundError, match=r"no folder for class\(es\) \['cinema'\]"):
        TextFolder(root, classes=["cinema"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no class folders"):
        TextFolder(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        TextFolder(tmp_path / "missing")


def test_text_folder_invalid_utf8_names_file_and_line(tmp_path):
    root = _folder(tmp_path, {"a/1.txt": "ok", "a/2.txt": b"line 1\nline 2\nbad \xe9 byte\n",
                              "b/1.txt": "fine"})
    with pytest.raises(DatasetFormatError) as e:
        list(TextFolder(root))
    assert str(e.value).startswith(f"{root / 'a' / '2.txt'}, line 3: not valid utf-8")
    assert list(TextFolder(root, on_error="skip")) == [(0, "ok"), (1, "fine")]
    (skip,) = drain_skips()
    assert skip.key == str(root / "a" / "2.txt")
    assert list(TextFolder(root, encoding="latin-1"))[1] == (0, "line 1\nline 2\nbad é byte")


def test_text_folder_resumes_and_has_a_length_for_the_loader(tmp_path):
    root = _folder(tmp_path, {f"c{i % 3}/{i:02d}.txt": f"text {i}" for i in range(12)})
    ds = TextFolder(root)
    it = iter(ds)
    first = [next(it) for _ in range(5)]
    state = it.state_dict()
    it2 = iter(TextFolder(root))
    it2.load_state_dict(state)
    assert first + list(it2) == list(ds)
    loader = DataLoader(ds.shuffle(seed=0).sharding_filter(), batch_size=4, num_workers=0,
                        collate_fn=lambda b: b, seed=0)
    assert sorted(t for b in loader for _, t in b) == sorted(t for _, t in ds)


def test_csv_by_header_names_indices_and_several_text_columns(tmp_path):
    p = tmp_path / "news.csv"
    p.write_text('id,label,title,text\n7,sport,"Cup, final","Two\nlines"\n8,tech,AI,chip\n')
    assert list(TextCSV(p, text_column=["title", "text"])) == [
        ("sport", "Cup, final Two\nlines"), ("tech", "AI chip")]
    assert list(TextCSV(p, header=True, label_column=1, text_column=3)) == [
        ("sport", "Two\nlines"), ("tech", "chip")]
    assert list(TextCSV(p, header=True, label_column="id", text_column=None,
                        label_transform=int)) == [
        (7, "sport Cup, final Two\nlines"), (8, "tech AI chip")]
    assert list(TextCSV(p, label_column=None, text_column="title")) == ["Cup, final", "AI"]
    # AG_NEWS's layout: no header, label first, then the text columns
    q = tmp_path / "ag.csv"
    q.write_text('"3","Wall St.","Bears claw back"\n"1","Title","Body"\n')
    assert list(TextCSV(q, label_column=0, text_column=None)) == [
        ("3", "Wall St. Bears claw back"), ("1", "Title Body")]


def test_tsv_delimiter_from_the_extension_and_quote_none(tmp_path):
    p = tmp_path / "train.tsv"
    p.write_text('sentence\tlabel\nsays "hi, there\t1\nno\t0\n')
    assert list(TextCSV(p, text_column="sentence", quoting=csv.QUOTE_NONE)) == [
        ("1", 'says "hi, there'), ("0", "no")]


def test_csv_bad_rows_name_file_and_line_or_are_skipped(tmp_path):
    p = tmp_path / "data.csv"
    p.write_bytes(b'label,text\n'
                  b'1,"spans\ntwo lines"\n'      # lines 2-3
                  b'2\n'                          # line 4: too few fields
                  b'x,bad label\n'                # line 5
                  b'\n'                           # line 6: blank, ignored
                  b'3,caf\xe9\n'                  # line 7: not utf-8
                  b'4,ok\n'                       # line 8
                  b'5,"never closed\n')           # line 9: open quote to the end
    pipe = TextCSV(p, label_transform=int)
    it = iter(pipe)
    assert next(it) == (1, "spans\ntwo lines")
    with pytest.raises(DatasetFormatError, match=rf"^{p}, line 4: expected at least 2 fields, "
                                                 r"got 1"):
        next(it)
    assert list(TextCSV(p, label_transform=int, on_error="skip")) == [
        (1, "spans\ntwo lines"), (4, "ok")]
    skipped = drain_skips()
    assert [s.key.rsplit(":", 1)[1] for s in skipped] == ["4", "5", "7", "9"]
    assert "bad label 'x'" in skipped[1].error
    assert "not valid utf-8" in skipped[2].error
    assert "malformed CSV" in skipped[3].error
    q = tmp_path / "h.csv"
    q.write_text("label,body\n1,x\n")
    with pytest.raises(DatasetFormatError, match=r"line 2: no column 'text' in the header "
                                                 r"\['label', 'body'\]"):
        list(TextCSV(q))


def test_csv_state_restores_after_multiline_records(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("label,text\n" + "".join(f'{i},"a\nb {i}"\n' for i in range(10)))
    q = tmp_path / "n.csv"
    q.write_text("label,text\n" + "".join(f"{i},c {i}\n" for i in range(10, 14)))
    pipe = TextCSV([p, q])
    full = list(pipe)
    assert len(full) == 14
    for k in (0, 3, 10, 12, 14):
        it = iter(pipe)
        head = [next(it) for _ in range(k)]
        state = it.state_dict()
        it2 = iter(TextCSV([p, q]))
        it2.load_state_dict(state)
        assert head + list(it2) == full, k


def test_json_lines_fields_and_errors(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"text": "good", "label": 1}\n'
                 '\n'
                 '{"text": "bad", "label": 0, "extra": true}\n'
                 '{"text": "no label"}\n'
                 '[1, 2]\n'
                 '{"text": 5, "label": 1}\n'
                 '{"text": "cut", "lab\n'
                 '{"text": "last", "label": "2"}\n')
    with pytest.raises(DatasetFormatError, match=r"r.jsonl, line 4: no 'label' field"):
        list(TextJsonLines(p))
    got = list(TextJsonLines(p, on_error="skip"))
    assert got == [(1, "good"), (0, "bad"), ("2", "last")]
    skipped = drain_skips()
    assert [s.key.rsplit(":", 1)[1] for s in skipped] == ["4", "5", "6", "7"]
    assert "expected a JSON object" in skipped[1].error
    assert "must be a string" in skipped[2].error and "invalid JSON" in skipped[3].error
    assert list(TextJsonLines(p, label_key=None, on_error="skip"))[:2] == ["good", "bad"]
    drain_skips()
    p.write_text(p.read_text() + '{"text": "t", "label": "x"}\n')
    assert list(TextJsonLines(p, label_transform=int, on_error="skip")) == [
        (1, "good"), (0, "bad"), (2, "last")]
    skipped = drain_skips()
    assert skipped[-1].key.endswith(":9") and "bad label 'x'" in skipped[-1].error


def test_loader_policy_applies_when_the_reader_has_none(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("label,text\n1,a\nx\n2,b\n")
    loader = DataLoader(TextCSV(p), batch_size=2, collate_fn=lambda b: b, on_error="skip")
    with pytest.warns(RuntimeWarning, match="skipped 1 bad sample"):
        assert [b for b in loader] == [[("1", "a"), ("2", "b")]]
    assert len(loader.skipped) == 1 and loader.skipped[0].key.endswith("d.csv:3")
    with pytest.raises(DatasetFormatError, match="d.csv, line 3"):
        list(DataLoader(TextCSV(p), batch_size=2, collate_fn=lambda b: b))
