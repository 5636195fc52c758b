"""The runnable examples in ember.audio.functional's docstrings."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["spectral", "filterbanks", "resample", "effects"])
def test_docstring_examples(name):
    mod = importlib.import_module(f"ember.audio.functional.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
