"""The published text datasets on files written here in each published format (nothing is
downloaded: downloads go through file:// URLs), their hash checks, and their errors on bad
rows and damaged archives."""
import doctest
import hashlib
import importlib
import io
import json
import os
import tarfile
import zipfile

import pytest

from ember import hub
from ember.data import drain_skips
from ember.text import datasets as D
from ember.text.datasets import DatasetFormatError, Resource
from ember.text.datasets import classification as C
from ember.text.datasets import language_modeling as LM
from ember.text.datasets import question_answering as QA
from ember.text.datasets import translation as TR

ALL = ["AG_NEWS", "CoLA", "IMDB", "Multi30k", "SQuAD1", "SQuAD2", "SST2", "WikiText103",
       "WikiText2", "YelpReviewPolarity"]


@pytest.fixture(autouse=True)
def _clean_skip_log(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "ember_home"))
    drain_skips()
    yield
    drain_skips()


def _md5(data):
    return hashlib.md5(data).hexdigest()


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _zip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _targz(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _serve(tmp_path, name, data):
    """A file:// URL holding ``data`` (a stand-in for the publisher's server)."""
    src = tmp_path / "server" / name
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(data)
    return "file://" + str(src)


# ------------------------------------------------------------------------------ registry
def test_registry_lists_every_dataset_with_splits_and_items():
    assert D.list_datasets() == ALL
    assert D.list_datasets("classification") == ["AG_NEWS", "CoLA", "IMDB", "SST2",
                                                  "YelpReviewPolarity"]
    info = D.get_dataset_info("SST2")
    assert info.splits == ("train", "dev", "test") and info.builder is D.SST2
    assert D.get_dataset_info("AG_NEWS").labels[4] == "Sci/Tech"
    with pytest.raises(KeyError, match="did you mean 'AG_NEWS'"):
        D.get_dataset_info("AG_NEW")
    with pytest.raises(ValueError, match="already registered"):
        D.register_dataset("AG_NEWS", splits=("train",), task="classification",
                           item="x")(lambda root=None: None)


def test_split_argument_as_torchtext(tmp_path):
    d = tmp_path / "AG_NEWS"
    d.mkdir()
    (d / "train.csv").write_text('"1","a","b"\n')
    (d / "test.csv").write_text('"2","c","d"\n')
    train, test = D.AG_NEWS(tmp_path)                 # default: both splits, in order
    assert list(train) == [(1, "a b")] and list(test) == [(2, "c d")]
    (only,) = D.AG_NEWS(tmp_path, split=("test",))
    assert list(only) == [(2, "c d")]
    assert list(D.get_dataset("AG_NEWS", root=tmp_path, split="train")) == [(1, "a b")]
    with pytest.raises(ValueError, match=r"AG_NEWS has no split 'dev'; its splits are "
                                         r"\('train', 'test'\)"):
        D.AG_NEWS(tmp_path, split="dev")


# ------------------------------------------------------------------------------ AG_NEWS
AG_TEST = (b'"3","Wall St. Bears Claw Back","Reuters - Short-sellers, Wall Street\'s ..."\n'
           b'"4","Quoted ""title""","first line\nsecond line"\n'
           b'"x","bad label","text"\n'
           b'"1","only label and title"\n'
           b'"2"\n')


def test_ag_news_rows_and_bad_rows_name_file_and_line(tmp_path):
    d = tmp_path / "AG_NEWS"
    d.mkdir()
    (d / "test.csv").write_bytes(AG_TEST)
    pipe = D.AG_NEWS(tmp_path, split="test")
    it = iter(pipe)
    assert next(it) == (3, "Wall St. Bears Claw Back Reuters - Short-sellers, Wall Street's ...")
    assert next(it) == (4, 'Quoted "title" first line\nsecond line')
    with pytest.raises(DatasetFormatError) as e:
        next(it)
    # the multi-line record took lines 2-3, so the bad label is on line 4
    assert str(e.value).startswith(f"{d / 'test.csv'}, line 4: the label 'x' is not an integer")
    assert e.value.line == 4 and e.value.path == str(d / "test.csv")
    skipping = list(D.AG_NEWS(tmp_path, split="test", on_error="skip"))
    assert skipping == [(3, "Wall St. Bears Claw Back Reuters - Short-sellers, Wall Street's ..."),
                        (4, 'Quoted "title" first line\nsecond line'),
                        (1, "only label and title")]
    skipped = drain_skips()
    assert [s.key for s in skipped] == [f"{d / 'test.csv'}:4", f"{d / 'test.csv'}:6"]
    assert "expected a label and at least one text field" in skipped[1].error


def test_ag_news_download_checks_md5_offline_and_download_false(tmp_path, monkeypatch):
    good = b'"2","Sport","Cup final"\n'
    url = _serve(tmp_path, "test.csv", good)
    monkeypatch.setitem(C._AG_NEWS, "test", Resource(url, "test.csv", md5=_md5(good)))
    root = tmp_path / "root"
    with pytest.raises(FileNotFoundError, match="download=False"):
        D.AG_NEWS(root, split="test", download=False)
    assert list(D.AG_NEWS(root, split="test")) == [(2, "Sport Cup final")]
    assert (root / "AG_NEWS" / "test.csv").read_bytes() == good
    # a file whose md5 is not the published one is removed, and the error names both
    monkeypatch.setitem(C._AG_NEWS, "train", Resource(url, "train.csv", md5="0" * 32))
    with pytest.raises(hub.HashMismatchError, match=f"expected {'0' * 32}, got {_md5(good)}"):
        D.AG_NEWS(root, split="train")
    assert not (root / "AG_NEWS" / "train.csv").exists()
    # offline: no network attempt, the error says where the file belongs
    monkeypatch.setenv("EMBER_OFFLINE", "1")
    monkeypatch.setitem(C._AG_NEWS, "train", Resource("https://example.invalid/train.csv",
                                                      "train.csv", md5="0" * 32))
    with pytest.raises(hub.OfflineError, match="train.csv"):
        D.AG_NEWS(root, split="train")


def test_mirrors_are_tried_in_order_and_the_hash_decides(tmp_path, monkeypatch):
    good = _targz({"train.de": b"Hallo\n", "train.en": b"Hello\n"})
    bad = _targz({"train.de": b"X\n", "train.en": b"Y\n"})
    wrong, right = _serve(tmp_path, "wrong.tar.gz", bad), _serve(tmp_path, "right.tar.gz", good)
    res = Resource("file:///nonexistent/training.tar.gz", "training.tar.gz",
                   sha256=_sha256(good), mirrors=(wrong, right))
    monkeypatch.setitem(TR._RES, "train", res)
    assert list(D.Multi30k(tmp_path / "r", split="train")) == [("Hallo", "Hello")]
    res = Resource("file:///nonexistent/training.tar.gz", "training.tar.gz",
                   sha256=_sha256(good), mirrors=(wrong,))
    monkeypatch.setitem(TR._RES, "train", res)
    with pytest.raises(RuntimeError, match="could not download training.tar.gz") as e:
        D.Multi30k(tmp_path / "r2", split="train")
    assert "nonexistent" in str(e.value) and "wrong.tar.gz" in str(e.value)


# ------------------------------------------------------------------------------ archives
SST2_ZIP = {"SST-2/train.tsv": b"sentence\tlabel\nit 's a charming journey \t1\n"
                               b"\"the worst\" film\t0\n",
            "SST-2/dev.tsv": b"sentence\tlabel\ngood\t1\nbad\tzero\nfine\t1\textra\n",
            "SST-2/test.tsv": b"index\tsentence\n0\tuncertain , at best \n"}


def test_sst2_from_the_published_zip(tmp_path, monkeypatch):
    data = _zip(SST2_ZIP)
    monkeypatch.setattr(C, "_SST2", Resource(_serve(tmp_path, "SST-2.zip", data), "SST-2.zip",
                                             md5=_md5(data)))
    train, test = D.SST2(tmp_path, split=("train", "test"))
    assert list(train) == [("it 's a charming journey", 1), ('"the worst" film', 0)]
    assert list(test) == [("uncertain , at best",)]
    assert (tmp_path / "SST2" / "SST-2" / "train.tsv").is_file()   # extracted once
    dev = tmp_path / "SST2" / "SST-2" / "dev.tsv"
    assert list(D.SST2(tmp_path, split="dev", on_error="skip")) == [("good", 1)]
    assert [s.key for s in drain_skips()] == [f"{dev}:3", f"{dev}:4"]
    with pytest.raises(DatasetFormatError, match=r"dev.tsv, line 3: the label 'zero' is not "
                                                 r"an integer"):
        list(D.SST2(tmp_path, split="dev"))
    drain_skips()
    it = iter(D.SST2(tmp_path, split="dev", on_error="skip"))
    assert list(it) == [("good", 1)]
    assert "expected 2 tab-separated fields, got 3" in drain_skips()[1].error


def test_truncated_zip_is_an_error_naming_archive_and_member_or_a_logged_skip(tmp_path):
    d = tmp_path / "CoLA"
    d.mkdir()
    data = _zip({"cola_public/raw/in_domain_train.tsv": b"gj04\t1\t\tOur friends won't buy.\n"})
    (d / "cola_public_1.1.zip").write_bytes(data[:len(data) // 2])
    archive = d / "cola_public_1.1.zip"
    with pytest.raises(DatasetFormatError) as e:
        D.CoLA(tmp_path, split="train")
    msg = str(e.value)
    assert msg.startswith(f"{archive}: cannot extract cola_public/raw/in_domain_train.tsv")
    assert "damaged or truncated" in msg and e.value.member.endswith("in_domain_train.tsv")
    assert list(D.CoLA(tmp_path, split="train", on_error="skip")) == []
    (skip,) = drain_skips()
    assert skip.key == f"{archive}/cola_public/raw/in_domain_train.tsv"
    assert not (d / "cola_public" / "raw" / "in_domain_train.tsv").exists()
    # a sound archive extracts, and its rows read
    archive.write_bytes(data)
    assert list(D.CoLA(tmp_path, split="train")) == [("gj04", 1, "Our friends won't buy.")]


def test_cola_rows(tmp_path):
    d = tmp_path / "CoLA" / "cola_public" / "raw"
    d.mkdir(parents=True)
    (d / "in_domain_dev.tsv").write_text('gj04\t1\t\tThe "sailors" rode.\n'
                                         'gj04\t0\t*\tThe more we study.\n'
                                         'gj04\t1\tshort row\n')
    pipe = D.CoLA(tmp_path, split="dev", on_error="skip")
    assert list(pipe) == [("gj04", 1, 'The "sailors" rode.'), ("gj04", 0, "The more we study.")]
    (skip,) = drain_skips()
    assert skip.key.endswith("in_domain_dev.tsv:3") and "expected 4" in skip.error


def _imdb_members():
    return {"aclImdb/README": b"readme",
            "aclImdb/train/pos/0_9.txt": b"Great film.",
            "aclImdb/train/neg/1_2.txt": b"Awful <br />film.",
            "aclImdb/train/unsup/2_0.txt": b"unlabelled",
            "aclImdb/test/pos/3_8.txt": b"Loved it.",
            "aclImdb/test/neg/4_1.txt": b"Hated it."}


def test_imdb_streams_the_published_tar(tmp_path, monkeypatch):
    data = _targz(_imdb_members())
    monkeypatch.setattr(C, "_IMDB", Resource(_serve(tmp_path, "aclImdb_v1.tar.gz", data),
                                             "aclImdb_v1.tar.gz", md5=_md5(data)))
    train, test = D.IMDB(tmp_path)
    assert list(train) == [(2, "Great film."), (1, "Awful <br />film.")]
    assert list(test) == [(2, "Loved it."), (1, "Hated it.")]
    # an extracted copy (aclImdb/<split>/{neg,pos}) is read instead of the archive
    for split in ("train",):
        for lab, text in (("neg", "bad\n"), ("pos", "good\n")):
            p = tmp_path / "IMDB" / "aclImdb" / split / lab
            p.mkdir(parents=True)
            (p / "0_1.txt").write_text(text)
    assert list(D.IMDB(tmp_path, split="train")) == [(1, "bad"), (2, "good")]


def test_imdb_truncated_tar_raises_naming_it_or_keeps_what_was_read(tmp_path):
    d = tmp_path / "IMDB"
    d.mkdir()
    members = {f"aclImdb/test/pos/{i}_9.txt": os.urandom(3000).hex().encode() for i in range(8)}
    data = _targz(members)
    (d / "aclImdb_v1.tar.gz").write_bytes(data[:len(data) * 2 // 3])
    with pytest.raises(Exception) as e:
        list(D.IMDB(tmp_path, split="test"))
    text = str(e.value) + "".join(getattr(e.value, "__notes__", ()))
    assert str(d / "aclImdb_v1.tar.gz") in text
    got = list(D.IMDB(tmp_path, split="test", on_error="skip"))
    assert 0 < len(got) < 8 and all(lab == 2 for lab, _ in got)
    (skip,) = drain_skips()
    assert skip.key == str(d / "aclImdb_v1.tar.gz")


def test_imdb_review_that_is_not_utf8_names_member_and_line(tmp_path):
    d = tmp_path / "IMDB"
    d.mkdir()
    (d / "aclImdb_v1.tar.gz").write_bytes(_targz({
        "aclImdb/train/neg/0_1.txt": b"line one\nline \xff two",
        "aclImdb/train/pos/1_9.txt": b"fine"}))
    with pytest.raises(DatasetFormatError, match=r"aclImdb/train/neg/0_1.txt, line 2: not "
                                                 r"valid utf-8"):
        list(D.IMDB(tmp_path, split="train"))
    assert list(D.IMDB(tmp_path, split="train", on_error="skip")) == [(2, "fine")]
    assert len(drain_skips()) == 1


def test_yelp_member_extraction_and_truncated_archive(tmp_path, monkeypatch):
    rows = b'"1","Slow service, cold food."\n"2","Best tacos in town!\\nWill return."\n'
    data = _targz({"yelp_review_polarity_csv/readme.txt": b"x",
                   "yelp_review_polarity_csv/train.csv": rows,
                   "yelp_review_polarity_csv/test.csv": b'"2","ok"\n'})
    url = _serve(tmp_path, "yelp.tar.gz", data)
    monkeypatch.setattr(C, "_YELP", Resource(url, "yelp_review_polarity_csv.tar.gz",
                                             md5=_md5(data)))
    train = D.YelpReviewPolarity(tmp_path, split="train")
    assert list(train) == [(1, "Slow service, cold food."),
                           (2, "Best tacos in town!\\nWill return.")]
    # a cut-off archive: the member that is not complete is named
    big = _targz({"yelp_review_polarity_csv/train.csv": b'"1","x"\n' * 50000})
    root2 = tmp_path / "r2" / "YelpReviewPolarity"
    root2.mkdir(parents=True)
    (root2 / "yelp_review_polarity_csv.tar.gz").write_bytes(big[:len(big) // 2])
    with pytest.raises(DatasetFormatError, match="cannot extract yelp_review_polarity_csv/"
                                                 "train.csv"):
        D.YelpReviewPolarity(tmp_path / "r2", split="train")
    assert not (root2 / "yelp_review_polarity_csv" / "train.csv").exists()   # nothing partial


# ------------------------------------------------------------------------------ WikiText
def test_wikitext_lines_keep_their_line_breaks(tmp_path, monkeypatch):
    text = b" \n = Valkyria Chronicles III = \n \n Senj\xc5\x8d no Valkyria 3 : <unk> \n"
    data = _zip({"wikitext-2/wiki.test.tokens": text, "wikitext-2/wiki.train.tokens": b"a\n",
                 "wikitext-2/wiki.valid.tokens": b"b\n"})
    monkeypatch.setattr(LM, "_WT2", Resource(_serve(tmp_path, "wikitext-2-v1.zip", data),
                                             "wikitext-2-v1.zip", md5=_md5(data)))
    assert list(D.WikiText2(tmp_path, split="test")) == [
        " \n", " = Valkyria Chronicles III = \n", " \n", " Senjō no Valkyria 3 : <unk> \n"]
    d = tmp_path / "WikiText103" / "wikitext-103"
    d.mkdir(parents=True)
    (d / "wiki.valid.tokens").write_bytes(b"ok\nbad \xc3\x28 byte\nend")
    with pytest.raises(DatasetFormatError, match=r"wiki.valid.tokens, line 2: not valid utf-8"):
        list(D.WikiText103(tmp_path, split="valid"))
    assert list(D.WikiText103(tmp_path, split="valid", on_error="skip")) == ["ok\n", "end"]


# ------------------------------------------------------------------------------ Multi30k
def test_multi30k_pairs_language_pair_and_misaligned_files(tmp_path, monkeypatch):
    data = _targz({"val.de": b"Zwei Hunde.\nEin Mann.\n", "val.en": b"Two dogs.\nA man.\n"})
    monkeypatch.setitem(TR._RES, "valid", Resource(_serve(tmp_path, "validation.tar.gz", data),
                                                   "validation.tar.gz", sha256=_sha256(data)))
    assert list(D.Multi30k(tmp_path, split="valid")) == [("Zwei Hunde.", "Two dogs."),
                                                         ("Ein Mann.", "A man.")]
    assert list(D.Multi30k(tmp_path, split="valid", language_pair=("en", "de")))[0] == \
        ("Two dogs.", "Zwei Hunde.")
    with pytest.raises(ValueError, match="language_pair"):
        D.Multi30k(tmp_path, language_pair=("de", "fr"))
    d = tmp_path / "Multi30k"
    (d / "test.de").write_text("a\nb\nc\n")
    (d / "test.en").write_text("A\nB\n")
    with pytest.raises(DatasetFormatError, match=r"test.en, line 3: the file ends here but "):
        list(D.Multi30k(tmp_path, split="test"))
    assert list(D.Multi30k(tmp_path, split="test", on_error="skip")) == [("a", "A"), ("b", "B")]
    assert len(drain_skips()) == 1


# ------------------------------------------------------------------------------ SQuAD
SQUAD2 = {"version": "v2.0", "data": [{"title": "Normans", "paragraphs": [
    {"context": "The Normans were in Normandy.",
     "qas": [{"id": "a", "question": "Where were the Normans?",
              "answers": [{"text": "Normandy", "answer_start": 20},
                          {"text": "in Normandy", "answer_start": 17}], "is_impossible": False},
             {"id": "b", "question": "When did Rollo die?", "answers": [],
              "is_impossible": True},
             {"id": "c", "answers": []}]}]}]}


def test_squad_items_unanswerable_and_bad_entries(tmp_path, monkeypatch):
    data = json.dumps(SQUAD2).encode()
    monkeypatch.setitem(QA._SQUAD2, "dev", Resource(_serve(tmp_path, "dev-v2.0.json", data),
                                                    "dev-v2.0.json", md5=_md5(data)))
    with pytest.raises(DatasetFormatError, match=r"dev-v2.0.json: data\[0\].paragraphs\[0\]"
                                                 r".qas\[2\]: missing or bad field 'question'"):
        list(D.SQuAD2(tmp_path, split="dev"))
    assert list(D.SQuAD2(tmp_path, split="dev", on_error="skip")) == [
        ("The Normans were in Normandy.", "Where were the Normans?",
         ["Normandy", "in Normandy"], [20, 17]),
        ("The Normans were in Normandy.", "When did Rollo die?", [""], [-1])]
    assert len(drain_skips()) == 1
    d = tmp_path / "SQuAD1"
    d.mkdir()
    (d / "train-v1.1.json").write_text('{"data": [\n  {"title": "x",\n  "paragraphs": ]}\n')
    with pytest.raises(DatasetFormatError, match=r"train-v1.1.json, line 3: invalid JSON"):
        list(D.SQuAD1(tmp_path, split="train"))


# ------------------------------------------------------------------------------ state
def test_iteration_state_restores_mid_file(tmp_path):
    d = tmp_path / "AG_NEWS"
    d.mkdir()
    rows = "".join(f'"{1 + i % 4}","title {i}","multi\nline {i}"\n' for i in range(20))
    (d / "train.csv").write_text(rows)
    pipe = D.AG_NEWS(tmp_path, split="train")
    it = iter(pipe)
    head = [next(it) for _ in range(7)]
    state = it.state_dict()
    rest = list(it)
    it2 = iter(D.AG_NEWS(tmp_path, split="train"))
    it2.load_state_dict(state)
    assert list(it2) == rest and len(head) + len(rest) == 20
    assert rest[0] == (4, "title 7 multi\nline 7")


def test_dataloader_skip_policy_reaches_dataset_rows(tmp_path):
    from ember.data import DataLoader

    d = tmp_path / "AG_NEWS"
    d.mkdir()
    (d / "test.csv").write_bytes(AG_TEST)
    loader = DataLoader(D.AG_NEWS(tmp_path, split="test"), batch_size=None, on_error="skip",
                        collate_fn=lambda x: x)
    with pytest.warns(RuntimeWarning, match="skipped 2 bad sample"):
        assert [lab for lab, _ in loader] == [3, 4, 1]
    assert [s.key.rsplit(":", 1)[1] for s in loader.skipped] == ["4", "6"]


@pytest.mark.parametrize("name", ["_api", "_records", "generic", "classification",
                                  "language_modeling", "translation", "question_answering",
                                  "__init__"])
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mod = importlib.import_module("ember.text.datasets" + ("" if name == "__init__"
                                                           else "." + name))
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0


def test_a_member_missing_from_a_sound_archive_is_named(tmp_path):
    d = tmp_path / "SST2"
    d.mkdir()
    (d / "SST-2.zip").write_bytes(_zip({"SST-2/train.tsv": b"sentence\tlabel\n"}))
    with pytest.raises(DatasetFormatError, match="no member 'SST-2/dev.tsv'"):
        D.SST2(tmp_path, split="dev")
