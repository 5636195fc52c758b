"""Weights trained by ember itself and shipped in the package: mnist_cnn, from the main job."""
import copy
import hashlib
import pickle

import numpy as np
from PIL import Image

import ember
from ember.vision import models
from ember.vision.transforms._presets import DigitClassification


def test_schema_and_file_facts():
    w = models.MNIST_CNN_Weights.DEFAULT
    assert models.get_model_weights("mnist_cnn") is models.MNIST_CNN_Weights
    assert w is models.MNIST_CNN_Weights.EMBER_MNIST5K_V1
    assert {"categories", "num_params", "min_size", "recipe", "_metrics", "_ops", "_file_size",
            "_docs"} <= set(w.meta)
    assert w.meta["categories"] == [str(d) for d in range(10)]
    assert w.meta["recipe"] == "ember run classify"
    path = models.digits.WEIGHTS_DIR / models.digits._MNIST_CNN_FILE
    data = path.read_bytes()
    assert w.url == path.as_uri()
    prefix = models._api._HASH_RE.search(path.name).group(1)
    assert hashlib.sha256(data).hexdigest().startswith(prefix)  # the hub checks it too
    assert abs(w.meta["_file_size"] - len(data) / 2**20) < 1e-3
    with ember.device("meta"):
        m = models.mnist_cnn()
    assert sum(p.numel() for p in m.parameters()) == w.meta["num_params"]
    assert isinstance(w.transforms(), DigitClassification)
    assert copy.deepcopy(w) == w and pickle.loads(pickle.dumps(w)) == w
    assert models.get_weight("MNIST_CNN_Weights.DEFAULT") is w


def test_shipped_weights_load_offline_and_reach_the_measured_accuracy(tmp_path, monkeypatch):
    from ember.recipes._data import ShippedMNIST

    monkeypatch.setenv("EMBER_HOME", str(tmp_path))
    monkeypatch.setenv("EMBER_OFFLINE", "1")  # the file ships with ember: no network needed
    w = models.MNIST_CNN_Weights.DEFAULT
    model = models.mnist_cnn(weights="DEFAULT").eval()
    test = ShippedMNIST(train=False)
    x = ember.tensor(np.stack([np.asarray(test[i][0]) for i in range(len(test))]))
    y = np.array([int(test[i][1]) for i in range(len(test))])
    with ember.no_grad():
        acc = float((model(x).argmax(1).numpy() == y).mean())
    assert round(100 * acc, 1) == w.meta["_metrics"]["MNIST-5k"]["acc@1"]
    # the weights' own transforms take a PIL image to what the model expects
    digit = Image.fromarray(test.images[0], mode="L")
    with ember.no_grad():
        pred = int(model(w.transforms()(digit)[None]).argmax(1).item())
    assert w.meta["categories"][pred] == str(test.targets[0])
