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
    assert w.meta["input_size"] == [28, 28] and w.meta["input_channels"] == 1
    rc, out, err = cli("run", "predict", "num_samples=3")
    assert rc == 0, err
    assert "warning" not in out   # digits like the training ones: nothing to say
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


def test_download_failure_names_reason_url_and_cache_path(workdir, cli, monkeypatch):
    from ember.vision.models import ResNet18_Weights

    url = "http://127.0.0.1:9/models/resnet18-f37072fd.pth"   # unreachable: no network
    monkeypatch.setattr(ResNet18_Weights.IMAGENET1K_V1.value, "url", url)
    rc, _, err = cli("download", "ResNet18_Weights.DEFAULT", "--quiet")
    assert rc == 2
    cache = workdir / "ember_home" / "hub" / "checkpoints" / "resnet18-f37072fd.pth"
    assert f"ember download: error: download failed: {url} could not be fetched (" in err
    assert "127.0.0.1:9" in err.split("fetched (", 1)[1] and str(cache) in err
    # the same through a recipe that loads zoo weights
    rc, _, err = cli("run", "predict", "weights=ResNet18_Weights.DEFAULT", "num_samples=1")
    assert rc == 2 and "download failed" in err and str(cache) in err


def test_wrong_value_type_names_key_value_and_type_before_running(workdir, cli):
    rc, out, err = cli("run", "classify", "epochs=abc")
    assert rc == 2 and out == ""   # nothing printed, nothing ran
    assert "invalid value for 'epochs': expected an integer (the default is 15), got 'abc'" in err
    assert not os.path.exists("outputs")
    rc, _, err = cli("run", "classify", "optimizer.lr=fast")
    assert rc == 2 and "'optimizer.lr': expected a number (the default is 0.003), got 'fast'" in err
    rc, _, err = cli("validate", "classify", "quiet=maybe", "epochs=3")
    assert rc == 2 and "'quiet': expected true or false" in err
    rc, _, err = cli("validate", "classify", "checkpoint=5")
    assert rc == 2 and "'checkpoint': expected a mapping" in err
    # numbers in any YAML spelling, null for an optional component, a number as a path
    rc, out, err = cli("validate", "classify", "optimizer.lr=1e-3", "optimizer.weight_decay=0",
                       "lr_scheduler=null", "output_dir=2024", "checkpoint.every_n_steps=10")
    assert rc == 0, err


def test_run_help_lists_keys_defaults_and_help(workdir, cli):
    from ember.recipes._config import COMPONENT, flatten, key_help, load_config

    rc, out, err = cli("run", "classify", "--help")
    assert rc == 0, err
    assert out.startswith("usage: ember run classify [--config NAME|PATH] [key=value ...]")
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ")}
    assert rows["epochs"].split()[1] == "15" and "passes over the training set" in rows["epochs"]
    assert "ember.optim.Adam" in rows["optimizer"] and "learning rate" in rows["optimizer.lr"]
    assert "resume=true" not in rows["overwrite"] and "earlier run" in rows["overwrite"]
    cfg = flatten(load_config(_registry.get_config_path("classify")))
    for key in cfg:
        if key != "recipe":
            assert key.removesuffix("." + COMPONENT) in rows, key
    assert not os.path.exists("outputs")   # nothing ran
    # every recipe's default config documents every top-level key
    for name in _registry.list_recipes():
        path = _registry.get_config_path(name)
        helps = key_help(path)
        for key in load_config(path):
            assert key == "recipe" or helps.get(key), f"{name}.yaml: no help for {key!r}"
    rc, out, _ = cli("run", "predict", "-h")
    assert rc == 0 and "topk" in out and "categories listed per image" in out
    # another config of the recipe: its values, help from the recipe's default config
    rc, out, _ = cli("run", "classify", "--config", "classify_resnet18_finetune", "--help")
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ")}
    assert "ResNet18_Weights.IMAGENET1K_V1" in rows["init_weights"]
    assert "passes over the training set" in rows["epochs"]
    rc, out, _ = cli("run", "--help")
    assert rc == 0 and "recipe" in out and "--config" in out


def test_key_help_reads_inline_comments(tmp_path):
    from ember.recipes._config import key_help

    p = tmp_path / "c.yaml"
    p.write_text("# header\na: 1   # one\nb:    # a node\n  c: 'x # y'  # see\n  d: [1, 2]\n"
                 "e:\n  - {f: 1}   # item\ng: \"#\"\n")
    assert key_help(p) == {"a": "one", "b": "a node", "b.c": "see"}


def test_rerun_into_an_earlier_run_needs_resume_or_overwrite(workdir, cli):
    rc, _, err = cli("run", "classify", *SHORT, "epochs=1", "output_dir=a")
    assert rc == 0, err
    run = workdir / "a"
    before = {p.name: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()}
    assert any(n.startswith("step-") for n in before)
    rc, out, err = cli("run", "classify", *SHORT, "epochs=1", "output_dir=a", "seed=1")
    assert rc == 2 and out == ""
    assert f"output_dir {run} holds an earlier run" in err
    assert "resume=true" in err and "overwrite=true" in err
    after = {p.name: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()}
    assert after == before   # nothing touched, config.yaml included
    rc, _, err = cli("run", "classify", *SHORT, "output_dir=a", "resume=true", "overwrite=true")
    assert rc == 2 and "contradict" in err
    rc, out, err = cli("run", "classify", *SHORT, "epochs=1", "output_dir=a", "seed=1",
                       "overwrite=true")
    assert rc == 0, err
    assert "overwrite=true: removed the earlier run's checkpoints" in out
    import yaml
    assert yaml.safe_load((run / "config.yaml").read_text())["seed"] == 1
    # a folder with unrelated files only is no earlier run
    (workdir / "b").mkdir()
    (workdir / "b" / "notes.txt").write_text("mine")
    rc, _, err = cli("run", "classify", *SHORT, "epochs=1", "output_dir=b")
    assert rc == 0, err


def _photo(path, size=(640, 480)):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path)


def test_predict_warns_once_about_inputs_far_from_the_training_data(workdir, cli):
    rc, _, err = cli("run", "classify", *SHORT, "epochs=1")
    assert rc == 0, err
    photos = workdir / "photos"
    photos.mkdir()
    _photo(photos / "cat.jpg")
    _photo(photos / "dog.png", (300, 200))
    _digit().save(photos / "seven.png")
    rc, out, err = cli("run", "predict", f"input={photos}")
    assert rc == 0, err
    warnings = [ln for ln in out.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1, out
    assert warnings[0].startswith("warning: 2 of 3 inputs are far from what these weights were "
                                  "trained on (28x28 grayscale images): cat.jpg (640x480 colour), "
                                  "dog.png (300x200 colour)")
    assert len((workdir / "outputs" / "predict" / "predictions.csv").read_text().splitlines()) == 4
    # zoo weights (the shipped digit model, offline): the channel count comes from the
    # weights' transforms
    rc, out, err = cli("run", "predict", "weights=MNIST_CNN_Weights.DEFAULT",
                       f"input={photos / 'cat.jpg'}")
    assert rc == 0, err
    assert out.count("warning:") == 1 and "cat.jpg (640x480 colour)" in out
    rc, out, err = cli("run", "predict", "weights=MNIST_CNN_Weights.DEFAULT",
                       f"input={photos / 'seven.png'}")
    assert rc == 0 and "warning" not in out
