"""Text classification datasets as torchtext publishes them: AG_NEWS, YelpReviewPolarity,
IMDB, SST2 and CoLA, from the publishers' URLs with the hashes torchtext's source states.

Each builder is ``NAME(root=None, split=(...), *, download=True, on_error=None)``: files go
to ``root/NAME/`` (``root`` None: ``$EMBER_HOME/datasets``); ``split`` is one name (one
pipe) or a tuple of names (a tuple of pipes). A file already in ``root/NAME/`` under its
published name (or an archive member already extracted there) is used without a download.
Bad rows raise :class:`DatasetFormatError` naming the file and line; ``on_error="skip"``
leaves them out and logs them (``ember.data.drain_skips()``); a damaged archive is an error
naming the archive and member, or a logged skip of that split.

    >>> import os, tempfile
    >>> root = tempfile.mkdtemp(); os.makedirs(os.path.join(root, "AG_NEWS"))
    >>> _ = open(os.path.join(root, "AG_NEWS", "test.csv"), "w").write(
    ...     '"3","Wall St. Bears Claw Back","Short-sellers are seeing green again."\\n')
    >>> list(AG_NEWS(root, split="test"))
    [(3, 'Wall St. Bears Claw Back Short-sellers are seeing green again.')]
"""
from __future__ import annotations

import csv
import os

from ember.data import IterableWrapper

from ._api import by_split, dataset_folder, register_dataset
from ._download import Resource, fetch, read_member_text
from ._files import empty_pipe, member_file, published_file
from ._records import TextRecords
from .generic import TextFolder

__all__ = ["AG_NEWS", "YelpReviewPolarity", "IMDB", "SST2", "CoLA"]


class LabelThenText:
    """``(int label, text)`` from a row "label, text column, ...": the text columns are
    joined by a space (AG_NEWS, Yelp and the other char-CNN CSV sets)."""

    def __call__(self, row, where):
        if len(row) < 2:
            raise ValueError(f"expected a label and at least one text field, got {len(row)} "
                             f"field(s)")
        try:
            label = int(row[0])
        except ValueError:
            raise ValueError(f"the label {row[0]!r} is not an integer") from None
        return label, " ".join(row[1:])


# ----------------------------------------------------------------------------- AG_NEWS
_AG_NEWS = {
    "train": Resource("https://raw.githubusercontent.com/mhjabreel/CharCnn_Keras/master/data/"
                      "ag_news_csv/train.csv", "train.csv",
                      md5="b1a00f826fdfbd249f79597b59e1dc12"),
    "test": Resource("https://raw.githubusercontent.com/mhjabreel/CharCnn_Keras/master/data/"
                     "ag_news_csv/test.csv", "test.csv", md5="d52ea96a97a2d943681189a97654912d"),
}


@register_dataset(splits=("train", "test"), task="classification",
                  item="(label, text): label 1-4",
                  labels={1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tech"})
def AG_NEWS(root=None, split=("train", "test"), *, download=True, on_error=None):
    """AG's news topic classification (Zhang et al., 2015): 120,000 train / 7,600 test
    articles in 4 classes. ``root/AG_NEWS/{train,test}.csv``: quoted CSV rows
    ``"label","title","description"``. Items: ``(label 1-4, "title description")``."""
    folder = dataset_folder(root, "AG_NEWS")

    def build(s):
        path = published_file(folder, _AG_NEWS[s], download=download)
        return TextRecords([path], LabelThenText(), fmt="csv", on_error=on_error,
                           name="AG_NEWS")
    return by_split("AG_NEWS", split, build)


# ----------------------------------------------------------------- YelpReviewPolarity
_YELP = Resource("https://drive.google.com/uc?export=download&id=0Bz8a_Dbh9QhbNUpYQ2N3SGlFaDg",
                 "yelp_review_polarity_csv.tar.gz", md5="620c8ae4bd5a150b730f1ba9a7c6a4d3",
                 mirrors=("https://drive.usercontent.google.com/download?"
                          "id=0Bz8a_Dbh9QhbNUpYQ2N3SGlFaDg&export=download&confirm=t",))


@register_dataset(splits=("train", "test"), task="classification",
                  item="(label, text): label 1 (negative) or 2 (positive)",
                  labels={1: "negative", 2: "positive"})
def YelpReviewPolarity(root=None, split=("train", "test"), *, download=True, on_error=None):
    """Yelp review polarity (Zhang et al., 2015): 560,000 train / 38,000 test reviews.
    The archive ``yelp_review_polarity_csv.tar.gz`` (on Google Drive, md5-checked) holds
    ``yelp_review_polarity_csv/{train,test}.csv`` (``"label","review"``); the member of a
    split is extracted once. If Google Drive answers with its download-warning page instead
    of the file, the md5 check fails: download the archive in a browser and place it in
    ``root/YelpReviewPolarity/``. Items: ``(label 1 or 2, review)``."""
    folder = dataset_folder(root, "YelpReviewPolarity")

    def build(s):
        path = member_file(folder, _YELP, f"yelp_review_polarity_csv/{s}.csv",
                           download=download, on_error=on_error, dataset="YelpReviewPolarity")
        if path is None:
            return empty_pipe()
        return TextRecords([path], LabelThenText(), fmt="csv", on_error=on_error,
                           name="YelpReviewPolarity")
    return by_split("YelpReviewPolarity", split, build)


# ----------------------------------------------------------------------------- IMDB
_IMDB = Resource("http://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz",
                 "aclImdb_v1.tar.gz", md5="7c2ac02c03563afcf9b574c7e56c153a")
IMDB_LABELS = {"neg": 1, "pos": 2}


class ImdbMember:
    """Keep the reviews of one split: ``.../aclImdb/<split>/{neg,pos}/<id>.txt``."""

    def __init__(self, split):
        self.split = split

    def __call__(self, sample):
        parts = sample[0].replace("\\", "/").split("/")
        return len(parts) >= 4 and parts[-4] == "aclImdb" and parts[-3] == self.split and \
            parts[-2] in IMDB_LABELS and parts[-1].endswith(".txt")


class ImdbReview:
    """``(label, review)`` of an archive member ``(path, stream)``."""

    def __call__(self, sample):
        path, stream = sample
        text = read_member_text(stream.read(), path)
        return IMDB_LABELS[path.replace("\\", "/").split("/")[-2]], text


class ShiftLabel:
    """``(label + offset, text)``: TextFolder's class index to a published label."""

    def __init__(self, offset):
        self.offset = offset

    def __call__(self, item):
        return item[0] + self.offset, item[1]


@register_dataset(splits=("train", "test"), task="classification",
                  item="(label, text): label 1 (neg) or 2 (pos)",
                  labels={1: "neg", 2: "pos"})
def IMDB(root=None, split=("train", "test"), *, download=True, on_error=None):
    """Large Movie Review Dataset (Maas et al., 2011): 25,000 train / 25,000 test reviews.
    Read from an extracted ``root/IMDB/aclImdb/<split>/{neg,pos}/`` when present, else
    streamed from ``root/IMDB/aclImdb_v1.tar.gz`` (downloaded if missing, md5-checked); a
    tar that breaks off raises an error naming it (or, skipping, ends the split there).
    Items: ``(label, review)``, label 1 for neg and 2 for pos, neg reviews first when
    read from folders, in archive order when streamed."""
    folder = dataset_folder(root, "IMDB")

    def build(s):
        extracted = os.path.join(folder, "aclImdb", s)
        if all(os.path.isdir(os.path.join(extracted, c)) for c in IMDB_LABELS):
            return TextFolder(extracted, classes=list(IMDB_LABELS),
                              on_error=on_error).map(ShiftLabel(1))
        archive = fetch(_IMDB, folder, download=download)
        return (IterableWrapper([archive]).open_files("b").load_from_tar(on_error=on_error)
                .filter(ImdbMember(s)).map(ImdbReview(), on_error=on_error))
    return by_split("IMDB", split, build)


# ----------------------------------------------------------------------------- SST2
_SST2 = Resource("https://dl.fbaipublicfiles.com/glue/data/SST-2.zip", "SST-2.zip",
                 md5="9f81648d4199384278b86e315dac217c")


class SST2Row:
    """GLUE's SST-2 TSV rows: ``sentence<TAB>label`` (train, dev) or
    ``index<TAB>sentence`` (test, no labels)."""

    def __init__(self, test):
        self.test = test

    def __call__(self, row, where):
        if len(row) != 2:
            raise ValueError(f"expected 2 tab-separated fields, got {len(row)}")
        if self.test:
            return (row[1].strip(),)
        try:
            label = int(row[1])
        except ValueError:
            raise ValueError(f"the label {row[1]!r} is not an integer") from None
        return row[0].strip(), label


@register_dataset(splits=("train", "dev", "test"), task="classification",
                  item="(text, label): label 0 (negative) or 1 (positive); test: (text,)",
                  labels={0: "negative", 1: "positive"})
def SST2(root=None, split=("train", "dev", "test"), *, download=True, on_error=None):
    """Stanford Sentiment Treebank, binary, as GLUE distributes it: ``SST-2.zip`` holding
    ``SST-2/{train,dev,test}.tsv`` (a header row, then unquoted tab-separated fields).
    Items: ``(sentence, label)`` for train and dev, ``(sentence,)`` for test (its labels
    are not published)."""
    folder = dataset_folder(root, "SST2")

    def build(s):
        path = member_file(folder, _SST2, f"SST-2/{s}.tsv", download=download,
                           on_error=on_error, dataset="SST2")
        if path is None:
            return empty_pipe()
        return TextRecords([path], SST2Row(s == "test"), fmt="csv", delimiter="\t",
                           quoting=csv.QUOTE_NONE, skip_lines=1, on_error=on_error,
                           name="SST2")
    return by_split("SST2", split, build)


# ----------------------------------------------------------------------------- CoLA
_COLA = Resource("https://nyu-mll.github.io/CoLA/cola_public_1.1.zip", "cola_public_1.1.zip",
                 md5="9f6d88c3558ec424cd9d66ea03589aba")
_COLA_FILES = {"train": "in_domain_train.tsv", "dev": "in_domain_dev.tsv",
               "test": "out_of_domain_dev.tsv"}


class ColaRow:
    """CoLA's raw TSV rows: ``source<TAB>label<TAB>original mark<TAB>sentence``."""

    def __call__(self, row, where):
        if len(row) != 4:
            raise ValueError(f"expected 4 tab-separated fields, got {len(row)}")
        try:
            label = int(row[1])
        except ValueError:
            raise ValueError(f"the label {row[1]!r} is not an integer") from None
        return row[0], label, row[3]


@register_dataset(splits=("train", "dev", "test"), task="classification",
                  item="(source, label, sentence): label 0 (unacceptable) or 1 (acceptable)",
                  labels={0: "unacceptable", 1: "acceptable"})
def CoLA(root=None, split=("train", "dev", "test"), *, download=True, on_error=None):
    """Corpus of Linguistic Acceptability (Warstadt et al., 2019), ``cola_public_1.1.zip``:
    train ``cola_public/raw/in_domain_train.tsv``, dev ``in_domain_dev.tsv``, test
    ``out_of_domain_dev.tsv`` (as torchtext maps them). Every row of the raw TSV is read
    (the raw files have no header row). Items: ``(source, label, sentence)``."""
    folder = dataset_folder(root, "CoLA")

    def build(s):
        path = member_file(folder, _COLA, f"cola_public/raw/{_COLA_FILES[s]}",
                           download=download, on_error=on_error, dataset="CoLA")
        if path is None:
            return empty_pipe()
        return TextRecords([path], ColaRow(), fmt="csv", delimiter="\t",
                           quoting=csv.QUOTE_NONE, on_error=on_error, name="CoLA")
    return by_split("CoLA", split, build)
