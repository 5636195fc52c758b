"""Language-modelling corpora: WikiText-2 and WikiText-103 (Merity et al., 2016), from the
archives torchtext downloads, md5-checked.

Items are the lines of ``wiki.{train,valid,test}.tokens`` as they are in the file, line
break included (torchtext's behaviour: blank lines and `` = Heading = `` lines are kept, so
articles and paragraphs stay recognisable).

    >>> import os, tempfile
    >>> root = tempfile.mkdtemp(); d = os.path.join(root, "WikiText2", "wikitext-2")
    >>> os.makedirs(d)
    >>> _ = open(os.path.join(d, "wiki.valid.tokens"), "w").write(" \\n = Homarus = \\n")
    >>> list(WikiText2(root, split="valid"))
    [' \\n', ' = Homarus = \\n']
"""
from __future__ import annotations

from ._api import by_split, dataset_folder, register_dataset
from ._download import Resource
from ._files import empty_pipe, member_file
from ._records import TextRecords

__all__ = ["WikiText2", "WikiText103"]

_WT2 = Resource("https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip",
                "wikitext-2-v1.zip", md5="542ccefacc6c27f945fb54453812b3cd")
_WT103 = Resource("https://s3.amazonaws.com/research.metamind.io/wikitext/"
                  "wikitext-103-v1.zip", "wikitext-103-v1.zip",
                  md5="9ddaacaf6af0710eda8c456decff7832")


def _wikitext(name, res, folder_in_zip, root, split, download, on_error):
    folder = dataset_folder(root, name)

    def build(s):
        path = member_file(folder, res, f"{folder_in_zip}/wiki.{s}.tokens", download=download,
                           on_error=on_error, dataset=name)
        if path is None:
            return empty_pipe()
        return TextRecords([path], fmt="lines", strip_newline=False, on_error=on_error,
                           name=name)
    return by_split(name, split, build)


@register_dataset(splits=("train", "valid", "test"), task="language_modeling",
                  item="line (str, line break kept)")
def WikiText2(root=None, split=("train", "valid", "test"), *, download=True, on_error=None):
    """WikiText-2 (36,718 / 3,760 / 4,358 lines): ``wikitext-2-v1.zip`` holding
    ``wikitext-2/wiki.{train,valid,test}.tokens``. Items: the lines, as in the file."""
    return _wikitext("WikiText2", _WT2, "wikitext-2", root, split, download, on_error)


@register_dataset(splits=("train", "valid", "test"), task="language_modeling",
                  item="line (str, line break kept)")
def WikiText103(root=None, split=("train", "valid", "test"), *, download=True, on_error=None):
    """WikiText-103 (1,801,350 / 3,760 / 4,358 lines): ``wikitext-103-v1.zip`` holding
    ``wikitext-103/wiki.{train,valid,test}.tokens``. Items: the lines, as in the file."""
    return _wikitext("WikiText103", _WT103, "wikitext-103", root, split, download, on_error)
