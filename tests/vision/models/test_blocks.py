"""Shared blocks and train-mode behaviour (stochastic depth, aux heads, legacy keys)."""
import numpy as np
import pytest

import ember
from ember.vision import models
from ember.vision.models._blocks import MLP, Conv2dNormActivation, SqueezeExcitation, \
    StochasticDepth, make_divisible
from ember.vision.models.densenet import _remap_old_keys


def test_stochastic_depth_row_and_batch():
    x = ember.ones(4000, 3)
    sd = StochasticDepth(0.25, "row")
    y = sd(x).numpy()
    kept = (y[:, 0] != 0).mean()
    assert abs(kept - 0.75) < 0.05
    assert np.allclose(y[y[:, 0] != 0], 1 / 0.75) and (y == y[:, :1]).all()
    assert y.dtype == np.float32
    b = StochasticDepth(0.5, "batch")(ember.ones(5, 2)).numpy()
    assert len(np.unique(b)) == 1
    sd.eval()
    assert sd(x) is x
    with pytest.raises(ValueError, match="mode"):
        StochasticDepth(0.1, "col")
    with pytest.raises(ValueError, match="between 0 and 1"):
        StochasticDepth(1.5, "row")


def test_blocks_shapes_and_keys():
    c = Conv2dNormActivation(4, 8, 3, stride=2, activation_layer=None)
    assert list(c.state_dict())[:2] == ["0.weight", "1.weight"] and len(c) == 2
    assert c(ember.randn(1, 4, 9, 9)).shape == (1, 8, 5, 5)
    assert Conv2dNormActivation(4, 8, norm_layer=None)[0].bias is not None
    se = SqueezeExcitation(8, 2)
    assert set(se.state_dict()) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert se(ember.randn(2, 8, 3, 3)).shape == (2, 8, 3, 3)
    mlp = MLP(6, [12, 4], dropout=0.1)
    assert list(mlp.state_dict()) == ["0.weight", "0.bias", "3.weight", "3.bias"]
    assert mlp(ember.randn(5, 6)).shape == (5, 4)
    assert [make_divisible(v, 8) for v in (18, 32, 33.6, 4)] == [24, 32, 32, 8]


def test_efficientnet_train_step_with_stochastic_depth():
    m = models.efficientnet_b0(num_classes=3, stochastic_depth_prob=0.5).train()
    out = m(ember.randn(2, 3, 32, 32))
    out.sum().backward()
    assert out.shape == (2, 3) and m.features[0][0].weight.grad is not None


@pytest.mark.parametrize("name,fields", [("googlenet", ("logits", "aux_logits2", "aux_logits1")),
                                         ("inception_v3", ("logits", "aux_logits"))])
def test_aux_outputs_in_training(name, fields):
    size = 96 if name == "googlenet" else 299   # the aux head needs 17x17 at Mixed_6e
    m = models.get_model(name, num_classes=4, init_weights=False).train()
    out = m(ember.randn(2, 3, size, size))
    assert out._fields == fields and all(o.shape == (2, 4) for o in out)
    assert m.eval()(ember.randn(1, 3, size, size)).shape == (1, 4)


def test_densenet_legacy_keys_are_remapped():
    sd = {"features.denseblock1.denselayer1.norm.1.weight": 1,
          "features.denseblock1.denselayer1.conv.2.weight": 2, "classifier.bias": 3}
    assert list(_remap_old_keys(sd)) == ["features.denseblock1.denselayer1.norm1.weight",
                                         "features.denseblock1.denselayer1.conv2.weight",
                                         "classifier.bias"]


def test_vit_rejects_wrong_image_size():
    m = models.VisionTransformer(image_size=32, patch_size=16, num_layers=1, num_heads=2,
                                 hidden_dim=8, mlp_dim=16)
    with pytest.raises(ValueError, match="32x32"):
        m(ember.randn(1, 3, 48, 48))
