"""The examples in the docstrings of ember.rl run as written."""
import doctest
import importlib
import pkgutil

import pytest

import ember.rl

MODULES = sorted(m.name for m in pkgutil.walk_packages(ember.rl.__path__, "ember.rl."))


def test_every_module_is_listed():
    assert "ember.rl.tensordict._base" in MODULES
    assert "ember.rl.objectives.value.functional" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0
