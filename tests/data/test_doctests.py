"""The examples in ember.data's docstrings run and give what they show."""
import doctest
import importlib
import pkgutil

import pytest

import ember.data

MODULES = [""] + sorted("." + m.name for m in pkgutil.iter_modules(ember.data.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, memfs):
    mod = importlib.import_module(f"ember.data{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0
