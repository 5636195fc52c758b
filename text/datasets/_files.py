"""Where a published dataset's files come from: a file in the dataset folder, else a member
of the published archive extracted next to it, else the archive downloaded first."""
from __future__ import annotations

import os

from ember.data import IterableWrapper

from ._download import Resource, extract_member, fetch

__all__ = ["published_file", "member_file", "empty_pipe"]


def published_file(folder, res: Resource, *, download=True) -> str:
    """The published (not archived) file ``res`` in ``folder``, downloaded if missing."""
    return fetch(res, folder, download=download)


def member_file(folder, res: Resource, member, *, download=True, on_error=None,
                dataset=""):
    """The member ``member`` of the archive ``res`` as a file at ``folder/member``: used as
    it is when present (extracted before, or placed by hand), else extracted from the
    archive (downloaded first if missing). None when the archive is damaged and the policy
    skips (the skip is logged)."""
    dst = os.path.join(folder, *member.split("/"))
    if os.path.isfile(dst):
        return dst
    archive = fetch(res, folder, download=download)
    return extract_member(archive, member, dst, on_error=on_error, dataset=dataset)


def empty_pipe():
    """The pipe of a split whose file could not be read (skipped): no items."""
    return IterableWrapper([])
