"""SQuAD 1.1 and 2.0 (Rajpurkar et al., 2016, 2018): the published JSON files, md5-checked
with the hashes torchtext's source states.

Items: ``(context, question, answers, answer_starts)`` for every question, in file order;
``answers`` lists the answer texts and ``answer_starts`` their character offsets in the
context. A SQuAD 2.0 question without an answer gives ``([""], [-1])``, as torchtext does.

    >>> import json, os, tempfile
    >>> root = tempfile.mkdtemp(); os.makedirs(os.path.join(root, "SQuAD1"))
    >>> doc = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "Ember burns.",
    ...        "qas": [{"id": "1", "question": "What burns?",
    ...                 "answers": [{"text": "Ember", "answer_start": 0}]}]}]}]}
    >>> _ = open(os.path.join(root, "SQuAD1", "dev-v1.1.json"), "w").write(json.dumps(doc))
    >>> list(SQuAD1(root, split="dev"))
    [('Ember burns.', 'What burns?', ['Ember'], [0])]
"""
from __future__ import annotations

from ._api import by_split, dataset_folder, register_dataset
from ._download import DatasetFormatError, Resource
from ._files import published_file
from ._records import JsonEntries

__all__ = ["SQuAD1", "SQuAD2", "squad_entries"]

_BASE = "https://rajpurkar.github.io/SQuAD-explorer/dataset/"
_SQUAD1 = {"train": Resource(_BASE + "train-v1.1.json", "train-v1.1.json",
                             md5="981b29407e0affa3b1b156f72073b945"),
           "dev": Resource(_BASE + "dev-v1.1.json", "dev-v1.1.json",
                           md5="3e85deb501d4e538b6bc56f786231552")}
_SQUAD2 = {"train": Resource(_BASE + "train-v2.0.json", "train-v2.0.json",
                             md5="62108c273c268d70893182d5cf8df740"),
           "dev": Resource(_BASE + "dev-v2.0.json", "dev-v2.0.json",
                           md5="246adae8b7002f8679c027697b0b7cf8")}


def squad_entries(doc, path):
    """The items of a SQuAD document (see the module doc); an entry that lacks a field
    yields a :class:`DatasetFormatError` naming the file and the entry's place in it."""
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        yield DatasetFormatError(f"{path}: expected an object with a 'data' list (SQuAD's "
                                 f"layout)", path)
        return
    for a, article in enumerate(data):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            yield DatasetFormatError(f"{path}: data[{a}] has no 'paragraphs' list", path)
            continue
        for p, para in enumerate(paragraphs):
            where = f"data[{a}].paragraphs[{p}]"
            try:
                context, qas = para["context"], para["qas"]
            except (KeyError, TypeError) as e:
                yield DatasetFormatError(f"{path}: {where}: missing {e}", path)
                continue
            for q, qa in enumerate(qas):
                try:
                    question = qa["question"]
                    answers = [x["text"] for x in qa["answers"]]
                    starts = [int(x["answer_start"]) for x in qa["answers"]]
                except (KeyError, TypeError, ValueError) as e:
                    yield DatasetFormatError(f"{path}: {where}.qas[{q}]: missing or bad field "
                                             f"{e}", path)
                    continue
                if not answers:
                    answers, starts = [""], [-1]
                yield context, question, answers, starts


def _squad(name, resources, root, split, download, on_error):
    folder = dataset_folder(root, name)

    def build(s):
        path = published_file(folder, resources[s], download=download)
        return JsonEntries([path], squad_entries, on_error=on_error, name=name)
    return by_split(name, split, build)


@register_dataset(splits=("train", "dev"), task="question_answering",
                  item="(context, question, answers, answer_starts)")
def SQuAD1(root=None, split=("train", "dev"), *, download=True, on_error=None):
    """SQuAD 1.1 (87,599 train / 10,570 dev questions): ``{train,dev}-v1.1.json``."""
    return _squad("SQuAD1", _SQUAD1, root, split, download, on_error)


@register_dataset(splits=("train", "dev"), task="question_answering",
                  item="(context, question, answers, answer_starts)")
def SQuAD2(root=None, split=("train", "dev"), *, download=True, on_error=None):
    """SQuAD 2.0 (130,319 train / 11,873 dev questions, some unanswerable):
    ``{train,dev}-v2.0.json``."""
    return _squad("SQuAD2", _SQUAD2, root, split, download, on_error)
