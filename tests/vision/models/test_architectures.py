"""Every builder matches torchvision: key set, order and shapes, num_params, and (for a few)
logits on seeded weights loaded from a .pth written by torch."""
import os

import numpy as np
import pytest

import ember
from ember.vision import models

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
from seeded import seeded_input, seeded_state

ALL = [n for n in models.list_models() if n not in models.list_models(module=models.digits)]


@pytest.mark.parametrize("name", ALL)
def test_state_dict_and_num_params_match_torchvision(name, manifest):
    assert name in manifest, f"{name} has no torchvision manifest entry"
    with ember.device("meta"):
        m = models.get_model(name)
    sd = m.state_dict()
    want = manifest[name]["state_dict"]
    assert list(sd) == list(want)
    assert {k: list(v.shape) for k, v in sd.items()} == want
    n = sum(p.numel() for p in m.parameters())
    assert n == manifest[name]["num_params"]
    for w in models.get_model_weights(name):
        want_n = n
        if w.meta["num_params"] != n:
            if name == "googlenet":   # published without the aux heads it trains with
                kwargs = {"aux_logits": False}
            else:                     # ViT entries trained at another resolution
                assert name.startswith("vit_") and w.meta["min_size"][0] != 224
                kwargs = {"image_size": w.meta["min_size"][0]}
            with ember.device("meta"):
                m2 = models.get_model(name, weights=None, **kwargs)
            want_n = sum(p.numel() for p in m2.parameters())
        assert w.meta["num_params"] == want_n, w


# name -> (input shape, builder kwargs): the same table as data/make_fixtures.py
PARITY = {"resnet18": ((2, 3, 64, 64), {}), "mobilenet_v3_small": ((2, 3, 64, 64), {}),
          "mobilenet_v2": ((2, 3, 64, 64), {}), "squeezenet1_1": ((2, 3, 64, 64), {}),
          "resnext50_32x4d": ((1, 3, 64, 64), {}), "efficientnet_b0": ((2, 3, 64, 64), {}),
          "regnet_y_400mf": ((2, 3, 64, 64), {}), "convnext_tiny": ((1, 3, 64, 64), {}),
          "vit_b_16": ((1, 3, 32, 32), {"image_size": 32}),
          "densenet121": ((1, 3, 64, 64), {}), "shufflenet_v2_x1_0": ((2, 3, 64, 64), {}),
          "mnasnet0_5": ((2, 3, 64, 64), {}), "googlenet": ((1, 3, 64, 64), {}),
          "inception_v3": ((1, 3, 80, 80), {}), "swin_t": ((1, 3, 64, 64), {}),
          "swin_v2_t": ((1, 3, 64, 64), {}), "maxvit_t": ((1, 3, 224, 224), {})}
VIA_PTH = {"resnet18", "mobilenet_v3_small", "mobilenet_v2", "squeezenet1_1", "efficientnet_b0",
           "regnet_y_400mf"}   # the big ones skip the .pth round trip to keep the suite fast


@pytest.mark.parametrize("name", sorted(PARITY))
def test_logits_match_torchvision(name, tmp_path):
    """Seeded weights (written to a .pth by torch, read back by ember.load) give torchvision's
    eval-mode logits (recorded once by data/make_fixtures.py) within 1e-4 relative."""
    shape, kwargs = PARITY[name]
    expected = np.load(os.path.join(DATA, "parity.npz"))[name]
    m = models.get_model(name, **kwargs).eval()
    state = seeded_state({k: v.shape for k, v in m.state_dict().items()})
    if name in VIA_PTH:
        torch = pytest.importorskip("torch")
        path = str(tmp_path / f"{name}.pth")
        torch.save({k: torch.from_numpy(v) for k, v in state.items()}, path)
        loaded = ember.load(path)
    else:
        loaded = {k: ember.from_numpy(v) for k, v in state.items()}
    m.load_state_dict({**m.state_dict(), **loaded})   # constant index buffers stay as built
    with ember.no_grad():
        out = m(ember.from_numpy(seeded_input(shape))).numpy()
    assert out.dtype == np.float32
    scale = np.abs(expected).max()
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4 * scale)


def test_train_mode_forward_backward_small():
    m = models.resnet18(num_classes=5)
    x = ember.randn(2, 3, 32, 32)
    loss = m(x).sum()
    loss.backward()
    assert m.conv1.weight.grad is not None and m.conv1.weight.grad.shape == (64, 3, 7, 7)


@pytest.mark.parametrize("name,kwargs", [("mobilenet_v2", {"width_mult": 0.5}),
                                         ("mobilenet_v3_large", {"reduced_tail": True}),
                                         ("resnet50", {"replace_stride_with_dilation":
                                                       [False, True, True]})])
def test_builder_options(name, kwargs):
    with ember.device("meta"):
        m = models.get_model(name, num_classes=7, **kwargs)
    assert list(m.state_dict().values())[-1].shape == (7,)


def test_squeezenet_bad_version():
    with pytest.raises(ValueError, match="version"):
        models.SqueezeNet("2_0")
