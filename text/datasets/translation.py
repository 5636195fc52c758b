"""Multi30k (Elliott et al., 2016): English-German image-description pairs, WMT16's
multimodal task 1, from the archives torchtext names, sha256-checked with the hashes its
source states.

The published server (``www.quest.dcs.shef.ac.uk``) is often unreachable; torchtext's
users moved to a copy on GitHub (``neychev/small_DL_repo``), tried here second. A copy is
accepted only when its sha256 is the published one, so a copy that differs fails with an
error naming both hashes rather than being used.

    >>> import os, tempfile
    >>> root = tempfile.mkdtemp(); d = os.path.join(root, "Multi30k"); os.makedirs(d)
    >>> _ = open(os.path.join(d, "val.de"), "w").write("Ein Hund.\\nZwei Katzen.\\n")
    >>> _ = open(os.path.join(d, "val.en"), "w").write("A dog.\\nTwo cats.\\n")
    >>> list(Multi30k(root, split="valid"))
    [('Ein Hund.', 'A dog.'), ('Zwei Katzen.', 'Two cats.')]
"""
from __future__ import annotations

from ._api import by_split, dataset_folder, register_dataset
from ._download import Resource
from ._files import empty_pipe, member_file
from ._records import ParallelLines

__all__ = ["Multi30k"]

_SHEF = "http://www.quest.dcs.shef.ac.uk/wmt16_files_mmt/"
_COPY = "https://raw.githubusercontent.com/neychev/small_DL_repo/master/datasets/Multi30k/"
_RES = {
    "train": Resource(_SHEF + "training.tar.gz", "training.tar.gz",
                      sha256="20140d013d05dd9a72dfde46478663ba05737ce983f478f960c1123c6671be5e",
                      mirrors=(_COPY + "training.tar.gz",)),
    "valid": Resource(_SHEF + "validation.tar.gz", "validation.tar.gz",
                      sha256="a7aa20e9ebd5ba5adce7909498b94410996040857154dab029851af3a866da8c",
                      mirrors=(_COPY + "validation.tar.gz",)),
    "test": Resource(_SHEF + "mmt16_task1_test.tar.gz", "mmt16_task1_test.tar.gz",
                     sha256="0681be16a532912288a91ddd573594fbdd57c0fbb81486eff7c55247e35326c2",
                     mirrors=(_COPY + "mmt16_task1_test.tar.gz",)),
}
_PREFIX = {"train": "train", "valid": "val", "test": "test"}


@register_dataset(splits=("train", "valid", "test"), task="translation",
                  item="(source sentence, target sentence)")
def Multi30k(root=None, split=("train", "valid", "test"), language_pair=("de", "en"), *,
             download=True, on_error=None):
    """Multi30k (29,000 / 1,014 / 1,000 pairs). Each split's archive holds
    ``{train,val,test}.{de,en}``, one sentence per line, line-aligned; the two files of a
    split are extracted once into ``root/Multi30k/``. ``language_pair``: ("de", "en") or
    ("en", "de"). Items: ``(source, target)`` without line breaks; files of different
    lengths are a format error naming the shorter file and line."""
    pair = tuple(language_pair)
    if len(pair) != 2 or tuple(sorted(pair)) != ("de", "en"):
        raise ValueError(f"language_pair must be ('de', 'en') or ('en', 'de'), got {pair}")
    folder = dataset_folder(root, "Multi30k")

    def build(s):
        paths = [member_file(folder, _RES[s], f"{_PREFIX[s]}.{lang}", download=download,
                             on_error=on_error, dataset="Multi30k") for lang in pair]
        if None in paths:
            return empty_pipe()
        return ParallelLines(*paths, on_error=on_error, name="Multi30k")
    return by_split("Multi30k", split, build)
