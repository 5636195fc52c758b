"""The base of ``ember.audio.pipelines``' bundles: where a bundle's checkpoint lives and how
it is fetched.

A bundle (torchaudio's pattern) is a small frozen record of one published checkpoint: the
file (``_path``: a name on torchaudio's model host, or a full URL), the configuration of the
model it fits, and whatever the model needs around it (sample rate, labels, transforms).
``get_model()`` builds the model and loads the checkpoint through ``ember.hub``: downloaded
once into ``$EMBER_HOME/hub/checkpoints`` (atomic rename, sha256 checked where the bundle
states one), offline with ``EMBER_OFFLINE=1`` once cached. Nothing is fetched at import.
"""
from __future__ import annotations

__all__ = ["Bundle", "BASE_URL"]

BASE_URL = "https://download.pytorch.org/torchaudio/models/"

# torchaudio publishes no digests for its model files: a new download is then trusted to the
# transport (https), as ``meta["_hash_note"]`` says
_NO_HASH = ("torchaudio publishes no sha256 for this file: a new download is not checked "
            "against a digest (https transport only)")


class Bundle:
    """Mixin of the bundle dataclasses: ``url``, ``sha256``, ``meta`` and the fetch.

    Subclasses are dataclasses with a ``_path`` field and may carry ``_sha256`` (the full hex
    digest of the file, or None where the publisher states none).
    """

    _path: str
    _sha256 = None

    @property
    def url(self) -> str:
        """The checkpoint's URL (``_path`` on torchaudio's host unless it is a URL itself)."""
        return self._path if "://" in self._path else BASE_URL + self._path

    @property
    def sha256(self):
        return self._sha256

    def _meta(self):
        return {"url": self.url, "sha256": self._sha256,
                **({} if self._sha256 else {"_hash_note": _NO_HASH})}

    def _fetch_state_dict(self, dl_kwargs=None, path=None):
        """The checkpoint's state dict through ``ember.hub.load_state_dict_from_url``.

        ``dl_kwargs`` go to it (``model_dir``, ``progress``, ``file_name``, ``map_location``),
        as torchaudio's go to ``torch.hub``; ``check_hash=False`` skips the sha256 check.
        ``path`` fetches another file of the bundle (e.g. a tokenizer) from the same host."""
        from ember import hub

        kwargs = dict(dl_kwargs or {})
        check = kwargs.pop("check_hash", True)   # the file names carry no hash prefix
        url = self.url if path is None else (path if "://" in path else BASE_URL + path)
        if path is None and self._sha256 is not None and check:
            kwargs.setdefault("sha256", self._sha256)
        return hub.load_state_dict_from_url(url, **kwargs)
