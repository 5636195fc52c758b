"""``ember.text.datasets``: text datasets as DataPipes.

Published sets, as torchtext offers them (same split names, same items, the publishers'
URLs and the hashes torchtext's source states), downloaded once through ``ember.hub`` into
``root/NAME/`` (``root`` None: ``$EMBER_HOME/datasets``):

==================  ======================  ==================================================
dataset             splits                  items
==================  ======================  ==================================================
AG_NEWS             train, test             (label 1-4, text)
YelpReviewPolarity  train, test             (label 1-2, text)
IMDB                train, test             (label 1 neg / 2 pos, text)
SST2                train, dev, test        (text, label 0-1); test: (text,)
CoLA                train, dev, test        (source, label 0-1, sentence)
WikiText2/103       train, valid, test      line (line break kept)
Multi30k            train, valid, test      (source, target), ``language_pair=("de", "en")``
SQuAD1, SQuAD2      train, dev              (context, question, answers, answer_starts)
==================  ======================  ==================================================

Generic readers for your own data: :class:`TextFolder` (``root/<class>/*.txt``),
:class:`TextCSV` (CSV/TSV with label and text columns) and :class:`TextJsonLines`.

A bad record (invalid UTF-8, a broken CSV row, JSON that does not parse, a missing field)
raises :class:`DatasetFormatError` naming the file and line; a damaged archive names the
archive and member. ``on_error="skip"`` (on the dataset, or the DataLoader's policy) leaves
such records out and logs each one: ``ember.data.drain_skips()`` (or ``loader.skipped``)
returns them.

    >>> from ember.text import datasets
    >>> datasets.list_datasets("translation")
    ['Multi30k']
"""
from ._api import (DatasetInfo, by_split, dataset_folder, default_root,  # noqa: F401
                   get_dataset, get_dataset_info, list_datasets, register_dataset)
from ._download import DatasetFormatError, Resource, extract_member, fetch  # noqa: F401
from ._records import JsonEntries, ParallelLines, TextRecords, Where  # noqa: F401
from .classification import AG_NEWS, CoLA, IMDB, SST2, YelpReviewPolarity  # noqa: F401
from .generic import TextCSV, TextFolder, TextJsonLines, read_text_file  # noqa: F401
from .language_modeling import WikiText2, WikiText103  # noqa: F401
from .question_answering import SQuAD1, SQuAD2  # noqa: F401
from .translation import Multi30k  # noqa: F401

__all__ = [
    "AG_NEWS", "YelpReviewPolarity", "IMDB", "SST2", "CoLA", "WikiText2", "WikiText103",
    "Multi30k", "SQuAD1", "SQuAD2",
    "TextFolder", "TextCSV", "TextJsonLines", "TextRecords", "ParallelLines", "JsonEntries",
    "Where", "read_text_file",
    "DatasetFormatError", "DatasetInfo", "Resource", "fetch", "extract_member",
    "register_dataset", "list_datasets", "get_dataset", "get_dataset_info", "default_root",
    "dataset_folder", "by_split",
]
