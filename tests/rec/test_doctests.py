"""The examples in ember.rec's docstrings run and give what they show."""
import doctest
import importlib
import pkgutil

import pytest


def _modules():
    out = ["ember.rec"]
    for pkg in ("sparse", "modules", "models", "datasets", "distributed"):
        mod = importlib.import_module(f"ember.rec.{pkg}")
        out.append(mod.__name__)
        out += sorted(f"{mod.__name__}.{m.name}" for m in pkgutil.iter_modules(mod.__path__))
    return out


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0


def test_every_public_module_has_examples():
    """Each layout class shows itself in a runnable example."""
    for name in ("ember.rec.sparse.jagged_tensor", "ember.rec.sparse.keyed_jagged_tensor",
                 "ember.rec.sparse.keyed_tensor", "ember.rec.modules.embedding_modules",
                 "ember.rec.modules.quant"):
        tests = doctest.DocTestFinder().find(importlib.import_module(name))
        assert sum(len(t.examples) for t in tests) >= 3, name
