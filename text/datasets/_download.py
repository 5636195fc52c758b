"""The text datasets' download helpers: they live in :mod:`ember.data.download` (every domain
uses them); the names stay importable from here."""
from ember.data.download import (ARCHIVE_ERRORS, DatasetFormatError, Resource,  # noqa: F401
                                 extract_member, fetch, file_hash, read_member_text)

__all__ = ["Resource", "fetch", "file_hash", "extract_member", "read_member_text",
           "DatasetFormatError", "ARCHIVE_ERRORS"]
