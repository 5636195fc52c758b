"""The docstring examples of ember.text.models run as doctests."""
import doctest
import importlib

import pytest

import ember

MODULES = ["ember.text.models", "ember.text.models._api", "ember.text.models._attention",
           "ember.text.models._config", "ember.text.models.encoder", "ember.text.models.heads",
           "ember.text.models.gpt2", "ember.text.models.pretrained",
           "ember.text.models.sentence", "ember.text.models.zoo"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, extraglobs={"ember": ember}, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0, f"{res.failed} doctest(s) failed in {name}"
