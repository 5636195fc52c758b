"""MovieLens ratings (GroupLens) as DataPipes, in each release's published layout:

    ml-100k   u.data       user \\t item \\t rating \\t timestamp      (+ u1.base/u1.test ... u5,
              u.user       user|age|gender|occupation|zip              ua, ub: the same layout)
              u.item       item|title|release date|video date|url|19 genre flags (latin-1)
    ml-1m     ratings.dat  user::item::rating::timestamp
              users.dat    user::gender::age::occupation::zip
              movies.dat   item::title::genres (latin-1)
    ml-20m,   ratings.csv  userId,movieId,rating,timestamp (header line)
    ml-25m    movies.csv   movieId,title,genres (header; quoted titles)

Every reader yields torchrec's row dict ``{"userId": int, "movieId": int, "rating": float,
"timestamp": int}``; ``include_movies_data=True`` adds ``title`` and ``genres`` (``"A|B"``),
``include_users_data=True`` (100K, 1M) adds ``gender``, ``age``, ``occupation``, ``zip``.
``root`` is the folder holding the files (e.g. ``.../ml-100k``); with ``download=True`` a
missing folder is filled from GroupLens's archive, checked against its published md5. A
line that does not parse raises ``DatasetFormatError`` naming the file, line and field.

    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> _ = open(os.path.join(root, "u.data"), "w").write("196\\t242\\t3\\t881250949\\n")
    >>> next(iter(movielens_100k(root)))
    {'userId': 196, 'movieId': 242, 'rating': 3.0, 'timestamp': 881250949}
"""
from __future__ import annotations

import csv
import os
import shutil

from .utils import DatasetFormatError, FieldError, LineRecords, Resource, dataset_dir, \
    fetch, unpack

__all__ = ["MOVIELENS", "DEFAULT_RATINGS_COLUMN_NAMES", "GENRES_100K", "movielens_100k",
           "movielens_1m", "movielens_20m", "movielens_25m", "movielens", "ratings_files"]

DEFAULT_RATINGS_COLUMN_NAMES = ["userId", "movieId", "rating", "timestamp"]

# GroupLens publishes an md5 beside each archive (``<archive>.md5``); no sha256.
_BASE = "https://files.grouplens.org/datasets/movielens/"
MOVIELENS = {
    "100k": Resource(_BASE + "ml-100k.zip", "ml-100k.zip", md5="0e33842e24a9c977be4e0107933c0723"),
    "1m": Resource(_BASE + "ml-1m.zip", "ml-1m.zip", md5="c4d9eecfca2ab87c1945afe126590906"),
    "20m": Resource(_BASE + "ml-20m.zip", "ml-20m.zip", md5="cd245b17a1ae2cc31bb14903e1204af3"),
    "25m": Resource(_BASE + "ml-25m.zip", "ml-25m.zip", md5="6b51fb2759a8657d3bfcbfc42b592ada"),
}

GENRES_100K = ["unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
               "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery",
               "Romance", "Sci-Fi", "Thriller", "War", "Western"]

# (ratings file, separator, header lines, users file, movies file, encoding of the side files)
_LAYOUT = {
    "100k": ("u.data", "\t", 0, "u.user", "u.item", "latin-1"),
    "1m": ("ratings.dat", "::", 0, "users.dat", "movies.dat", "latin-1"),
    "20m": ("ratings.csv", ",", 1, None, "movies.csv", "utf-8"),
    "25m": ("ratings.csv", ",", 1, None, "movies.csv", "utf-8"),
}


def _int(v, field):
    try:
        return int(v)
    except ValueError:
        raise FieldError(field, f"field {field}: {v[:40]!r} is not an integer") from None


def _float(v, field):
    try:
        return float(v)
    except ValueError:
        raise FieldError(field, f"field {field}: {v[:40]!r} is not a number") from None


def _split(line, sep, n, what):
    parts = line.split(sep)
    if len(parts) != n:
        raise FieldError(None, f"expected {n} {sep!r}-separated fields ({what}), got "
                               f"{len(parts)}")
    return parts


class _RatingParser:
    """One ratings line -> the row dict, joined with the side tables when given."""

    def __init__(self, sep, movies=None, users=None):
        self.sep, self.movies, self.users = sep, movies, users

    def __call__(self, line):
        u, m, r, t = _split(line, self.sep, 4, "userId, movieId, rating, timestamp")
        row = {"userId": _int(u, "userId"), "movieId": _int(m, "movieId"),
               "rating": _float(r, "rating"), "timestamp": _int(t, "timestamp")}
        if self.movies is not None:
            row.update(self.movies.get(row["movieId"], {"title": "", "genres": ""}))
        if self.users is not None:
            row.update(self.users.get(row["userId"], {"gender": "", "age": 0,
                                                      "occupation": "", "zip": ""}))
        return row


def _side_lines(path, encoding, header=0):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"MovieLens side file {path} not found")
    with open(path, encoding=encoding, newline="") as f:
        for i, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if i > header and line:
                yield i, line


def _side_error(path, line, e):
    return DatasetFormatError(f"{path}, line {line}: {e}", path=path, line=line,
                              field=getattr(e, "field", None))


def _load_movies(variant, path, encoding):
    out = {}
    if variant == "100k":
        for i, line in _side_lines(path, encoding):
            try:
                p = _split(line, "|", 5 + len(GENRES_100K), "movie id, title, release date, "
                           "video release date, IMDb URL, 19 genre flags")
                flags = p[5:]
                if any(f not in ("0", "1") for f in flags):
                    raise FieldError("genres", f"field genres: flags must be 0 or 1, got "
                                               f"{'|'.join(flags)}")
                out[_int(p[0], "movieId")] = {"title": p[1], "genres": "|".join(
                    g for g, f in zip(GENRES_100K, flags) if f == "1")}
            except FieldError as e:
                raise _side_error(path, i, e) from None
    elif variant == "1m":
        for i, line in _side_lines(path, encoding):
            try:
                p = _split(line, "::", 3, "movieId, title, genres")
                out[_int(p[0], "movieId")] = {"title": p[1], "genres": p[2]}
            except FieldError as e:
                raise _side_error(path, i, e) from None
    else:
        with open(path, encoding=encoding, newline="") as f:
            for i, p in enumerate(csv.reader(f), 1):
                if i == 1 or not p:
                    continue
                try:
                    if len(p) != 3:
                        raise FieldError(None, f"expected 3 fields (movieId, title, genres), "
                                               f"got {len(p)}")
                    out[_int(p[0], "movieId")] = {"title": p[1], "genres": p[2]}
                except FieldError as e:
                    raise _side_error(path, i, e) from None
    return out


def _load_users(variant, path, encoding):
    out = {}
    for i, line in _side_lines(path, encoding):
        try:
            if variant == "100k":
                uid, age, gender, occ, z = _split(line, "|", 5,
                                                  "user id, age, gender, occupation, zip")
            else:
                uid, gender, age, occ, z = _split(line, "::", 5,
                                                  "userId, gender, age, occupation, zip")
            out[_int(uid, "userId")] = {"gender": gender, "age": _int(age, "age"),
                                        "occupation": occ, "zip": z}
        except FieldError as e:
            raise _side_error(path, i, e) from None
    return out


def _folder(variant, root, download):
    """``root`` (default: the cache folder ``ml-<variant>``), filled from the published
    archive when its ratings file is missing and ``download`` is set."""
    if root is None:
        root = dataset_dir(f"ml-{variant}")
    root = os.fspath(root)
    if os.path.isfile(os.path.join(root, _LAYOUT[variant][0])) or not download:
        return root
    res = MOVIELENS[variant]
    parent = os.path.dirname(os.path.abspath(root))
    unpacked = unpack(fetch(res, parent), os.path.join(parent, f".{res.filename}.unpacked"))
    inner = os.path.join(unpacked, f"ml-{variant}")
    src = inner if os.path.isdir(inner) else unpacked
    os.makedirs(root, exist_ok=True)
    for name in os.listdir(src):
        os.replace(os.path.join(src, name), os.path.join(root, name))
    shutil.rmtree(unpacked, ignore_errors=True)
    return root


def ratings_files(variant, root, split=None):
    """The ratings file paths of ``variant`` in ``root`` (100K: ``split`` may name a
    published split file, e.g. "u1.base", "u1.test", "ua.base")."""
    name = _LAYOUT[variant][0] if split is None else split
    if split is not None and variant != "100k":
        raise ValueError(f"movielens_{variant}: published splits exist only for 100k, got "
                         f"split={split!r}")
    return [os.path.join(os.fspath(root), name)]


def movielens(variant, root=None, *, split=None, include_movies_data=False,
              include_users_data=False, download=False):
    """The ratings of MovieLens ``variant`` ("100k", "1m", "20m", "25m") as a pipe of row
    dicts (see the module docstring)."""
    if variant not in _LAYOUT:
        raise ValueError(f"movielens: variant must be one of {sorted(_LAYOUT)}, got "
                         f"{variant!r}")
    fname, sep, header, users_f, movies_f, enc = _LAYOUT[variant]
    root = _folder(variant, root, download)
    paths = ratings_files(variant, root, split)
    for p in paths:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"movielens_{variant}: {p} not found (the folder must hold "
                                    f"the published files; download=True fetches "
                                    f"{MOVIELENS[variant].url})")
    movies = _load_movies(variant, os.path.join(root, movies_f), enc) \
        if include_movies_data else None
    users = None
    if include_users_data:
        if users_f is None:
            raise ValueError(f"movielens_{variant}: this release has no user file; "
                             "include_users_data applies to 100k and 1m")
        users = _load_users(variant, os.path.join(root, users_f), enc)
    return LineRecords(paths, _RatingParser(sep, movies, users), header=header,
                       name=f"movielens_{variant}")


def movielens_100k(root=None, *, split=None, include_movies_data=False,
                   include_users_data=False, download=False):
    """MovieLens 100K (100,000 ratings, 943 users, 1,682 movies): ``u.data`` or the split
    file ``split`` ("u1.base" ... "u5.test", "ua.base", ...)."""
    return movielens("100k", root, split=split, include_movies_data=include_movies_data,
                     include_users_data=include_users_data, download=download)


def movielens_1m(root=None, *, include_movies_data=False, include_users_data=False,
                 download=False):
    """MovieLens 1M (1,000,209 ratings, 6,040 users, 3,706 movies): ``ratings.dat``."""
    return movielens("1m", root, include_movies_data=include_movies_data,
                     include_users_data=include_users_data, download=download)


def movielens_20m(root=None, *, include_movies_data=False, download=False):
    """MovieLens 20M (20,000,263 ratings): ``ratings.csv``."""
    return movielens("20m", root, include_movies_data=include_movies_data, download=download)


def movielens_25m(root=None, *, include_movies_data=False, download=False):
    """MovieLens 25M (25,000,095 ratings): ``ratings.csv``."""
    return movielens("25m", root, include_movies_data=include_movies_data, download=download)
