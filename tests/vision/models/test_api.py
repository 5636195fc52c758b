"""The multi-weight API: registry, weights enums, legacy arguments, hub download."""
import copy
import hashlib
import pickle
import warnings

import pytest

import ember
from ember.vision import models
from ember.vision.models import _api
from ember.vision.models._meta import _IMAGENET_CATEGORIES
from ember.vision.transforms._presets import ImageClassification

META_KEYS = {"categories", "num_params", "min_size", "recipe", "_metrics", "_ops", "_file_size",
             "_docs"}


def test_imagenet_categories():
    assert len(_IMAGENET_CATEGORIES) == 1000 == len(set(_IMAGENET_CATEGORIES))
    assert _IMAGENET_CATEGORIES[0] == "tench" and _IMAGENET_CATEGORIES[281] == "tabby"
    assert _IMAGENET_CATEGORIES[999] == "toilet tissue"


TRAINED = models.list_models(module=models.digits)  # weights trained by ember itself
TORCHVISION = [n for n in models.list_models() if n not in TRAINED]


@pytest.mark.parametrize("name", TORCHVISION)
def test_registry_schema(name):
    enum_cls = models.get_model_weights(name)
    assert models.get_model_weights(models.get_model_builder(name)) is enum_cls
    assert "DEFAULT" in enum_cls.__members__
    assert enum_cls.DEFAULT in list(enum_cls)
    for w in enum_cls:
        assert META_KEYS <= set(w.meta), w
        assert w.meta["categories"] is None or len(w.meta["categories"]) == 1000
        metrics = w.meta["_metrics"]["ImageNet-1K"]
        assert set(metrics) == {"acc@1", "acc@5"}
        assert w.url.startswith("https://download.pytorch.org/models/") and w.url.endswith(".pth")
        assert _api._HASH_RE.search(w.url.rsplit("/", 1)[-1])
        assert len(w.meta["min_size"]) == 2 and w.meta["_ops"] > 0 and w.meta["_file_size"] > 0
        t = w.transforms()
        assert isinstance(t, ImageClassification) and t.crop_size[0] >= 224
        full = f"{enum_cls.__name__}.{w.name}"
        assert models.get_weight(full) == w
        assert copy.copy(w) == w and copy.deepcopy(w) == w
        assert pickle.loads(pickle.dumps(w)) == w
        assert hash(pickle.loads(pickle.dumps(w))) == hash(w)
        assert enum_cls.verify(w.name) is w and enum_cls.verify(full) is w
    assert models.get_weight(f"{enum_cls.__name__}.DEFAULT") == enum_cls.DEFAULT


def test_known_facts():
    w = models.get_weight("ResNet50_Weights.IMAGENET1K_V2")
    assert models.ResNet50_Weights.DEFAULT is w
    assert w.url == "https://download.pytorch.org/models/resnet50-11ad3fa6.pth"
    assert w.meta["_metrics"]["ImageNet-1K"] == {"acc@1": 80.858, "acc@5": 95.434}
    assert w.transforms().resize_size == [232]
    assert models.ResNet50_Weights.IMAGENET1K_V1.transforms().resize_size == [256]
    assert models.MobileNet_V3_Small_Weights.DEFAULT.meta["num_params"] == 2542856
    assert models.VGG16_Weights.IMAGENET1K_FEATURES.meta["categories"] is None


def test_list_models_filters():
    every = models.list_models()
    assert every == sorted(every) and "resnet18" in every and "vgg16_bn" in every
    assert models.list_models(module=models) == every
    assert models.list_models(module=models.resnet) == [n for n in every if "res" in n]
    assert models.list_models(include="resnet*") == ["resnet101", "resnet152", "resnet18",
                                                     "resnet34", "resnet50"]
    assert models.list_models(include=["vgg1?", "alex*"]) == ["alexnet", "vgg11", "vgg13",
                                                               "vgg16", "vgg19"]
    assert models.list_models(include="resnet*", exclude=["*50", "*101"]) == [
        "resnet152", "resnet18", "resnet34"]


def test_package_exports_every_builder_and_enum():
    for name in models.list_models():
        assert name in models.__all__ and getattr(models, name) is models.get_model_builder(name)
        assert models.get_model_weights(name).__name__ in models.__all__
    assert len(TORCHVISION) == 80   # every torchvision classification builder
    assert TRAINED == ["mnist_cnn"]


def test_lookup_errors():
    with pytest.raises(ValueError, match="unknown model"):
        models.get_model("resnet1000")
    with pytest.raises(ValueError, match="unknown weights enum"):
        models.get_weight("Nope_Weights.DEFAULT")
    with pytest.raises(ValueError, match="look like"):
        models.get_weight("ResNet50_Weights")
    with pytest.raises(ValueError, match="IMAGENET1K_V1"):
        models.ResNet18_Weights.verify("IMAGENET1K_V9")
    with pytest.raises(ValueError, match="do not belong"):
        models.ResNet18_Weights.verify("ResNet50_Weights.DEFAULT")
    with pytest.raises(TypeError, match="ResNet18_Weights"):
        models.resnet18(weights=models.ResNet50_Weights.DEFAULT)
    with pytest.raises(TypeError, match="keyword"):
        models.resnet18(None)


def test_register_refuses_duplicates():
    with pytest.raises(ValueError, match="already registered"):
        models.register_model(name="resnet18")(lambda **kw: None)


def test_weights_equality_by_name():
    a = models.ResNet18_Weights.IMAGENET1K_V1
    assert a == models.get_weight("ResNet18_Weights.DEFAULT")
    assert a != models.ResNet34_Weights.IMAGENET1K_V1
    assert a != "IMAGENET1K_V1"
    assert {a: 1}[pickle.loads(pickle.dumps(a))] == 1
    assert repr(a) == "ResNet18_Weights.IMAGENET1K_V1"


def _fake_hub(monkeypatch, tmp_path, weights_name):
    """Serve a real ember checkpoint of the right architecture under a file:// URL whose name
    holds its sha256 prefix, and point the weights entry at it."""
    w = models.get_weight(weights_name)
    model = models.get_model_builder(weights_name.split("_Weights")[0].lower())()
    src = tmp_path / "src.ember"
    ember.save(model.state_dict(), str(src))
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    served = tmp_path / f"model-{digest[:8]}.ember"
    src.rename(served)
    monkeypatch.setattr(w.value, "url", "file://" + str(served))
    ember.hub.set_dir(str(tmp_path / "hub"))
    return w, model


def test_get_state_dict_and_builder_loading(monkeypatch, tmp_path):
    try:
        w, ref = _fake_hub(monkeypatch, tmp_path, "SqueezeNet1_1_Weights.IMAGENET1K_V1")
        sd = w.get_state_dict(progress=False)
        assert set(sd) == set(ref.state_dict())
        m = models.squeezenet1_1(weights="IMAGENET1K_V1", progress=False)
        for k, v in ref.state_dict().items():
            assert (m.state_dict()[k].numpy() == v.numpy()).all()
        with pytest.raises(ValueError, match="num_classes.*1000.*10"):
            models.squeezenet1_1(weights=w, num_classes=10)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            m2 = models.get_model("squeezenet1_1", pretrained=True, progress=False)
        assert any("pretrained" in str(r.message) for r in rec)
        w2, w1 = m2.features[0].weight, ref.features[0].weight
        assert (w2.detach().numpy() == w1.detach().numpy()).all()
    finally:
        ember.hub.set_dir(None)


def test_get_state_dict_hash_mismatch(monkeypatch, tmp_path):
    try:
        w, _ = _fake_hub(monkeypatch, tmp_path, "SqueezeNet1_0_Weights.IMAGENET1K_V1")
        bad = tmp_path / "model-00000000.ember"
        (tmp_path / w.url.rsplit("/", 1)[-1]).rename(bad)
        monkeypatch.setattr(w.value, "url", "file://" + str(bad))
        with pytest.raises(ember.hub.HashMismatchError):
            w.get_state_dict(progress=False)
    finally:
        ember.hub.set_dir(None)


def test_pretrained_false_and_conflicts():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m = models.squeezenet1_1(pretrained=False, num_classes=3)
    assert rec and m.classifier[1].out_channels == 3
    with pytest.raises(ValueError, match="not both"):
        models.resnet18(pretrained=True, weights="DEFAULT")


def test_unpickle_in_fresh_process(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "w.pkl"
    path.write_bytes(pickle.dumps([models.ResNet50_Weights.DEFAULT,
                                   models.Swin_T_Weights.DEFAULT]))
    code = ("import pickle, sys; w = pickle.loads(open(sys.argv[1], 'rb').read()); "
            "print(repr(w[0]), repr(w[1]), w[0].meta['num_params'])")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["ResNet50_Weights.IMAGENET1K_V2", "Swin_T_Weights.IMAGENET1K_V1", "25557032"]
