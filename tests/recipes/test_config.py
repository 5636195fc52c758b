"""Config pieces: overrides, component instantiation, validation, registry, docstring examples."""
import doctest
import importlib
import pkgutil

import pytest

import ember
import ember.recipes
from ember.recipes import _config as C
from ember.recipes import _registry as R

MODULES = sorted(m.name for m in pkgutil.iter_modules(ember.recipes.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mod = importlib.import_module(f"ember.recipes.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0


def test_overrides_are_typed_and_dotted():
    cfg = {"a": {"b": 1, "c": "x"}, "flag": False, "opt": {"_component_": "ember.optim.SGD",
                                                           "lr": 0.1}}
    out = C.apply_overrides(cfg, ["a.b=2.5", "a.c=[1, 2]", "flag=true", "opt.momentum=0.9",
                                  "+a.new=null", "a.c=hello world"])
    assert out["a"] == {"b": 2.5, "c": "hello world", "new": None}
    assert out["flag"] is True and out["opt"]["momentum"] == 0.9
    assert cfg["a"]["b"] == 1   # the input is not modified
    with pytest.raises(C.ConfigError, match="unknown key 'a.d'"):
        C.apply_overrides(cfg, ["a.d=1"])
    with pytest.raises(C.ConfigError, match="must look like key=value"):
        C.apply_overrides(cfg, ["epochs"])
    with pytest.raises(C.ConfigError, match="did you mean 'opt.lr'"):
        C.apply_overrides(cfg, ["opt.lrr=1"])
    with pytest.raises(C.ConfigError, match="not a mapping"):
        C.apply_overrides(cfg, ["flag.x=1"])


def test_instantiate_nested_components_and_extra_args():
    node = {"_component_": "ember.nn.Sequential"}
    seq = C.instantiate({"_component_": "ember.vision.transforms.Compose", "transforms": [
        {"_component_": "ember.vision.transforms.Normalize", "mean": [0.5], "std": [0.5]}]})
    assert type(seq).__name__ == "Compose"
    lin = C.instantiate({"_component_": "ember.nn.Linear", "in_features": 3, "out_features": 2})
    opt = C.instantiate({"_component_": "ember.optim.SGD", "lr": 0.5}, lin.parameters())
    assert opt.param_groups[0]["lr"] == 0.5
    assert isinstance(C.instantiate(node), ember.nn.Sequential)
    with pytest.raises(C.ConfigError, match="cannot import _component_ 'ember.nn.Nope'"):
        C.instantiate({"_component_": "ember.nn.Nope"})
    with pytest.raises(C.ConfigError, match="cannot build ember.nn.Linear"):
        C.instantiate({"_component_": "ember.nn.Linear", "in_features": 3})


def test_validate_walks_lists_and_reference():
    cfg = {"t": {"_component_": "ember.vision.transforms.Compose", "transforms": [
        {"_component_": "ember.vision.transforms.Normalize", "mean": [0.5], "stdd": [0.5]}]}}
    with pytest.raises(C.ConfigError, match=r"unknown key 't.transforms.0.stdd'; did you mean "
                                            r"'t.transforms.0.std'"):
        C.validate(cfg)
    assert C.validate({"x": {"y": 1}}, {"x": {"y": 0, "z": 0}}) == 0
    with pytest.raises(C.ConfigError, match="unknown key 'x.w'"):
        C.validate({"x": {"w": 1}}, {"x": {"y": 0}})


def test_registry_refuses_a_second_recipe_with_the_same_name():
    assert R.list_recipes() == sorted(R.list_recipes())
    with pytest.raises(ValueError, match="already registered"):
        @R.register_recipe("classify")
        def main(cfg):
            return 0
    assert R.get_recipe("classify").__module__ == "ember.recipes.classify"
    with pytest.raises(ValueError, match="unknown config"):
        R.get_config_path("nope")


def test_validate_checks_value_types_against_the_reference():
    ref = {"epochs": 2, "lr": 0.1, "flag": False, "name": "x", "opt": None,
           "sched": {"_component_": "ember.optim.SGD", "lr": 0.1}}
    assert C.apply_overrides(ref, ["lr=1e-3"])["lr"] == 0.001   # a float, as YAML 1.2 reads it
    assert C.validate(C.apply_overrides(ref, ["lr=1", "opt=[1]", "sched=null"]), ref) == 0
    with pytest.raises(C.ConfigError, match=r"invalid value for 'epochs': expected an integer "
                                            r"\(the default is 2\), got 'two' \(str\)"):
        C.validate(C.apply_overrides(ref, ["epochs=two"]), ref)
    with pytest.raises(C.ConfigError, match="'sched.lr': expected a number"):
        C.validate(C.apply_overrides(ref, ["sched.lr=high"]), ref)
    # another component: its arguments are not compared with the reference's
    other = C.apply_overrides(ref, ["sched={_component_: ember.optim.Adam, lr: '1'}"])
    assert C.validate(other, ref) == 1
