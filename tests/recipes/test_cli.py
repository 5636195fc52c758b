"""The ``ember`` CLI end to end, in a temporary folder, with short configs."""
import os

import pytest
import yaml

from recipe_helpers import SHORT

from ember.recipes import _registry


def test_ls_lists_registered_recipes_and_configs(workdir, cli):
    rc, out, _ = cli("ls")
    assert rc == 0
    lines = {ln.split()[0]: ln for ln in out.splitlines()[1:]}
    assert set(_registry.list_recipes()) >= {"classify", "evaluate", "predict"}
    for name in _registry.list_recipes():
        assert name in lines
    assert "classify_resnet18_imagefolder" in lines["classify"]
    assert "classify_mobilenet_v3_cifar10" in lines["classify"]


@pytest.mark.parametrize("name", sorted(_registry.list_configs()))
def test_validate_bundled_configs(workdir, cli, name):
    rc, out, err = cli("validate", name)
    assert rc == 0, err
    assert "config OK" in out


def test_validate_catches_bad_component_key(workdir, cli):
    cfg = yaml.safe_load(open(_registry.get_config_path("classify")))
    cfg["optimizer"]["betass"] = [0.9, 0.99]
    (workdir / "bad.yaml").write_text(yaml.safe_dump(cfg))
    rc, _, err = cli("validate", "bad.yaml")
    assert rc == 2
    assert "unknown key 'optimizer.betass'; did you mean 'optimizer.betas'?" in err


def test_validate_catches_unknown_top_level_key(workdir, cli):
    cfg = yaml.safe_load(open(_registry.get_config_path("classify")))
    cfg["epoch"] = 3
    (workdir / "bad.yaml").write_text(yaml.safe_dump(cfg))
    rc, _, err = cli("validate", "bad.yaml")
    assert rc == 2
    assert "unknown key 'epoch'; did you mean 'epochs'?" in err


def test_unknown_override_suggests_nearest_key(workdir, cli):
    rc, _, err = cli("run", "classify", "optimizer.lrr=0.1")
    assert rc == 2
    assert "unknown key 'optimizer.lrr'; did you mean 'optimizer.lr'?" in err
    rc, _, err = cli("run", "classify", "checkpoint.keep_lats=3")
    assert "did you mean 'checkpoint.keep_last'?" in err
    assert not os.path.exists("outputs")   # nothing ran


def test_bad_config_path_and_names(workdir, cli):
    rc, _, err = cli("run", "classify", "--config", "missing/cfg.yaml")
    assert rc == 2 and "config file 'missing/cfg.yaml' does not exist" in err
    rc, _, err = cli("run", "clasify")
    assert rc == 2 and "did you mean 'classify'?" in err
    rc, _, err = cli("run", "classify", "--config", "clasify")
    assert rc == 2 and "unknown config 'clasify'" in err
    (workdir / "broken.yaml").write_text("a: [1, 2\n")
    rc, _, err = cli("validate", "broken.yaml")
    assert rc == 2 and "not valid YAML" in err
    rc, _, err = cli("run", "evaluate", "--config", "classify")
    assert rc == 2 and "is for recipe 'classify'" in err


def test_run_with_overrides_then_predict_and_evaluate(workdir, cli):
    rc, out, err = cli("run", "classify", *SHORT, "optimizer.lr=0.01", "seed=3")
    assert rc == 0, err
    run = workdir / "outputs" / "classify"
    # the resolved config is printed and saved with the overrides applied (typed values)
    assert "resolved config" in out
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["optimizer"]["lr"] == 0.01 and saved["seed"] == 3 and saved["epochs"] == 2
    assert saved["quiet"] is True
    rows = (run / "metrics.csv").read_text().splitlines()
    assert rows[0] == "epoch,step,lr,train_loss,train_acc,test_loss,test_acc"
    assert [r.split(",")[:2] for r in rows[1:]] == [["1", "8"], ["2", "16"]]
    # the last lines say where the outputs are
    tail = out.strip().splitlines()[-6:]
    for label, path in [("weights:", run / "model.safetensors"), ("metrics:", run / "metrics.csv"),
                        ("config:", run / "config.yaml"), ("manifest:", run / "weights.json")]:
        assert any(ln.startswith(label) and ln.endswith(str(path)) for ln in tail), tail
        assert path.exists()
    assert "matplotlib" in out or (run / "metrics.png").exists()
    # the trained weights load through the zoo's API
    from ember.recipes._weights import build_model, load_weights

    w = load_weights(str(run))
    assert w.meta["categories"] == [str(i) for i in range(10)]
    assert "acc@1" in w.meta["_metrics"]["ShippedMNIST"]
    assert "ember" in w.meta["command"] and "optimizer.lr=0.01" in w.meta["command"]
    model = build_model(w)
    assert sum(p.numel() for p in model.parameters()) == w.meta["num_params"]
    assert w.transforms()(_digit()).shape == \
        (1, 28, 28)
    rc, out, err = cli("run", "predict", "num_samples=3")
    assert rc == 0, err
    preds = (workdir / "outputs" / "predict" / "predictions.csv").read_text().splitlines()
    assert len(preds) == 4 and preds[0].startswith("path,top1,top2,top3,top4,top5")
    rc, out, err = cli("run", "evaluate", "data.limit=100")
    assert rc == 0, err
    ev = workdir / "outputs" / "evaluate"
    assert "acc@1=" in out and "acc@5=" in out
    conf = (ev / "confusion.csv").read_text().splitlines()
    assert len(conf) == 11 and sum(int(v) for r in conf[1:] for v in r.split(",")[1:]) == 100


def _digit():
    from PIL import Image

    from ember.recipes._data import ShippedMNIST

    return Image.fromarray(ShippedMNIST(train=False, limit=1).images[0], mode="L")


def test_cp_recipe_and_config_then_run_copies(workdir, cli):
    rc, out, _ = cli("cp", "classify", "my_classify.py")
    assert rc == 0 and (workdir / "my_classify.py").exists()
    rc, out, _ = cli("cp", "classify", "my.yaml")
    assert rc == 0 and yaml.safe_load((workdir / "my.yaml").read_text())["recipe"] == "classify"
    rc, _, err = cli("cp", "classify", "my.yaml")
    assert rc == 2 and "--force" in err
    rc, _, err = cli("cp", "nothing", "x.py")
    assert rc == 2 and "neither a recipe nor a config" in err
    # edit the copies: the copied recipe prints a marker, the copied config trains 1 epoch
    src = (workdir / "my_classify.py").read_text()
    src = src.replace('"""Train per ``cfg``', 'print("MY COPY RUNS")\n    """Train per ``cfg``')
    (workdir / "my_classify.py").write_text(src)
    cfg = yaml.safe_load((workdir / "my.yaml").read_text())
    cfg["epochs"] = 1
    cfg["output_dir"] = "outputs/mine"
    (workdir / "my.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    rc, out, err = cli("run", "my_classify.py", "--config", "my.yaml", *SHORT[:1], *SHORT[2:])
    assert rc == 0, err
    assert "MY COPY RUNS" in out
    assert len((workdir / "outputs" / "mine" / "metrics.csv").read_text().splitlines()) == 2
    # the registry still holds the bundled recipe
    assert _registry.get_recipe("classify").__module__ == "ember.recipes.classify"


def test_env_and_download(workdir, cli, monkeypatch):
    rc, out, _ = cli("env")
    assert rc == 0 and "numpy" in out and "blas" in out and "devices    cpu" in out
    monkeypatch.setenv("EMBER_OFFLINE", "1")
    rc, _, err = cli("download", "ResNet18_Weights.DEFAULT")
    assert rc == 2 and "resnet18-f37072fd.pth" in err
    rc, _, err = cli("download", "ResNet18_Weights.NOPE")
    assert rc == 2 and "unknown weights" in err
    # a file already in the hub cache is used as it is
    import ember

    cache = workdir / "ember_home" / "hub" / "checkpoints"
    cache.mkdir(parents=True)
    ember.save({"fc.bias": ember.zeros(3)}, str(cache / "resnet18-f37072fd.pth"))
    rc, out, err = cli("download", "ResNet18_Weights.DEFAULT", "--quiet")
    assert rc == 0, err
    assert str(cache / "resnet18-f37072fd.pth") in out


def test_init_weights_loads_matching_tensors(workdir, cli):
    rc, _, err = cli("run", "classify", *SHORT, "epochs=1", "output_dir=base")
    assert rc == 0, err
    # a wider hidden layer: conv/BN tensors and the last bias load; the resized Linear
    # tensors are new
    rc, out, err = cli("run", "classify", *SHORT, "epochs=1", "output_dir=ft",
                       "init_weights=base", "model.hidden=24")
    assert rc == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("init_weights:"))
    assert line.endswith("loaded 15/18 tensors from base; newly initialized: "
                         "classifier.1.bias, classifier.1.weight, classifier.4.weight")
