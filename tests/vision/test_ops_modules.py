"""MultiScaleRoIAlign, FeaturePyramidNetwork and FrozenBatchNorm2d against torchvision 0.29
(fixtures/ops_ref.npz, written by fixtures/make_ops.py): outputs, input gradients, inferred
scales, state-dict keys and reprs; the level mapping and the frozen norm also against the
same formulas written with torch ops; the ops package's names and doctests."""
import doctest
import importlib
import inspect
import os

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.vision import ops

REF = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ops_ref.npz"))
FEATS = ["feat1", "feat2", "pool", "feat3"]
# (featmap_names, output_size, sampling_ratio, kwargs, image_shapes) as make_ops.py recorded
MSROI_CASES = [(["feat3", "feat1", "feat2"], 3, 2, dict(canonical_scale=32, canonical_level=4),
                [(64, 64), (60, 50)]),
               (["feat1", "feat3"], (2, 3), -1, {}, [(64, 64), (64, 64)]),
               (["feat2"], (2, 2), 2, {}, [(64, 64), (60, 50)])]


@pytest.mark.parametrize("case", range(len(MSROI_CASES)))
def test_multiscale_roi_align_vs_torchvision(case):
    names, osz, sr, kw, shapes = MSROI_CASES[case]
    x = {k: ember.tensor(REF[f"msroi/x_{k}"], requires_grad=True) for k in FEATS}
    boxes = [ember.tensor(REF[f"msroi/boxes_{j}"]) for j in range(2)]
    m = ops.MultiScaleRoIAlign(names, osz, sr, **kw)
    out = m(x, boxes, shapes)
    assert m.scales == REF[f"msroi/{case}/scales"].tolist()
    assert repr(m) == str(REF[f"msroi/{case}/repr"])
    (out * ember.tensor(REF[f"msroi/{case}/up"])).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), REF[f"msroi/{case}/out"], rtol=1e-5,
                               atol=1e-6)
    for k in FEATS:
        g = x[k].grad.numpy() if x[k].grad is not None else np.zeros(x[k].shape, np.float32)
        np.testing.assert_allclose(g, REF[f"msroi/{case}/g_{k}"], rtol=1e-5, atol=1e-6,
                                   err_msg=k)
    # the scales are kept: a second call with other image shapes maps the same way
    again = m(x, boxes, [(10, 10)])
    np.testing.assert_array_equal(again.detach().numpy(), out.detach().numpy())


def test_multiscale_roi_align_no_boxes_and_errors():
    x = {k: ember.tensor(REF[f"msroi/x_{k}"], requires_grad=True) for k in FEATS}
    m = ops.MultiScaleRoIAlign(["feat1", "feat2"], 2, 2)
    out = m(x, [ember.zeros(0, 4), ember.zeros(0, 4)], [(64, 64)])
    assert out.shape == REF["msroi/empty/out"].shape == (0, 3, 2, 2)
    out.sum().backward()                     # empty, but part of the graph
    assert float(x["feat1"].grad.abs().sum()) == 0.0
    with pytest.raises(ValueError, match="images list"):
        ops.MultiScaleRoIAlign(["feat1"], 2, 2)(x, [ember.zeros(0, 4)], [])
    with pytest.raises(ValueError, match="featmap_names"):
        ops.MultiScaleRoIAlign(["c5"], 2, 2)(x, [ember.zeros(0, 4)], [(64, 64)])
    assert repr(ops.MultiScaleRoIAlign(["0", "1"], 7, 2)) == str(REF["repr/MultiScaleRoIAlign"])


def test_level_mapper_vs_torch_formula():
    r = np.random.default_rng(3)
    xy = r.uniform(0, 500, (200, 2))
    b = np.concatenate([xy, xy + r.uniform(1, 600, (200, 2))], 1).astype(np.float32)
    b[:3] = [[0, 0, 224, 224], [0, 0, 112, 112], [0, 0, 447.9, 448]]     # on the boundaries
    mapper = ops.poolers.LevelMapper(2, 5, canonical_scale=224, canonical_level=4)
    got = mapper([ember.tensor(b[:120]), ember.tensor(b[120:])])
    tb = torch.tensor(b)
    s = torch.sqrt((tb[:, 2] - tb[:, 0]) * (tb[:, 3] - tb[:, 1]))
    lv = torch.floor(4 + torch.log2(s / 224) + torch.tensor(1e-6, dtype=s.dtype))
    want = torch.clamp(lv, min=2, max=5).to(torch.int64) - 2
    np.testing.assert_array_equal(got, want.numpy())
    assert got[:3].tolist() == [2, 1, 2] and got.dtype == np.int64


EXTRAS = [lambda: ops.LastLevelMaxPool(), lambda: ops.LastLevelP6P7(4, 5),
          lambda: ops.LastLevelP6P7(5, 5), lambda: None]


@pytest.mark.parametrize("case", range(len(EXTRAS)))
def test_fpn_vs_torchvision(case):
    norm = nn.BatchNorm2d if case == 3 else None
    m = ops.FeaturePyramidNetwork([2, 3, 4], 5, extra_blocks=EXTRAS[case](), norm_layer=norm)
    keys = list(m.state_dict())
    assert keys == REF[f"fpn/{case}/keys"].tolist()
    m.load_state_dict({k: REF[f"fpn/{case}/sd_{k}"] for k in keys})
    m.eval()
    x = {k: ember.tensor(REF[f"fpn/x_{k}"], requires_grad=True) for k in ("c2", "c3", "c4")}
    out = m(x)
    assert list(out) == REF[f"fpn/{case}/names"].tolist()
    flat = ember.cat([o.flatten() for o in out.values()])
    (flat * ember.tensor(REF[f"fpn/{case}/up"])).sum().backward()
    for k, v in out.items():
        np.testing.assert_allclose(v.detach().numpy(), REF[f"fpn/{case}/out_{k}"], rtol=1e-5,
                                   atol=1e-5, err_msg=k)
    for k, v in x.items():
        np.testing.assert_allclose(v.grad.numpy(), REF[f"fpn/{case}/g_{k}"], rtol=1e-5,
                                   atol=1e-5, err_msg=k)


def test_fpn_repr_initialisation_and_old_checkpoints():
    m = ops.FeaturePyramidNetwork([8], 4, extra_blocks=ops.LastLevelP6P7(8, 4))
    assert repr(m) == str(REF["repr/FeaturePyramidNetwork"])
    assert repr(ops.LastLevelMaxPool()) == str(REF["repr/LastLevelMaxPool"])
    assert repr(ops.LastLevelP6P7(256, 256)) == str(REF["repr/LastLevelP6P7"])
    assert all(float(v.abs().sum()) == 0 for k, v in m.state_dict().items() if
               k.endswith("bias"))
    with pytest.raises(ValueError, match="in_channels=0"):
        ops.FeaturePyramidNetwork([0, 4], 4)
    with pytest.raises(TypeError, match="ExtraFPNBlock"):
        ops.FeaturePyramidNetwork([4], 4, extra_blocks=nn.ReLU())
    # a version-1 checkpoint kept the convs directly in the lists: renamed on load
    a = ops.FeaturePyramidNetwork([3, 6], 4)
    old = {k.replace(".0.weight", ".weight").replace(".0.bias", ".bias"): v
           for k, v in a.state_dict().items()}
    assert "inner_blocks.1.weight" in old
    b = ops.FeaturePyramidNetwork([3, 6], 4)
    b.load_state_dict(old)
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(b.state_dict()[k].numpy(), v.numpy())
    # a current state dict (which records version 2) loads as it is
    b.load_state_dict(a.state_dict())
    # the base extra block adds nothing
    base = ops.ExtraFPNBlock()
    assert base([1], [2], ["a"]) == ([1], ["a"])


def test_frozen_batch_norm_vs_torchvision():
    f = ops.FrozenBatchNorm2d(5, eps=1e-3)
    assert list(f.state_dict()) == REF["frozen_bn/keys"].tolist()
    assert repr(f) == str(REF["frozen_bn/repr"])
    assert repr(ops.FrozenBatchNorm2d(64)) == str(REF["repr/FrozenBatchNorm2d"])
    sd = {k: REF[f"frozen_bn/sd_{k}"] for k in ("weight", "bias", "running_mean",
                                                 "running_var", "num_batches_tracked")}
    f.load_state_dict(sd)                    # a BatchNorm2d state dict, num_batches_tracked too
    assert "num_batches_tracked" in sd       # the caller's dict is left as it was
    assert not any(p.requires_grad for p in f.buffers()) and not list(f.parameters())
    x = ember.tensor(REF["frozen_bn/x"], requires_grad=True)
    out = f(x)
    (out * ember.tensor(REF["frozen_bn/up"])).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), REF["frozen_bn/out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), REF["frozen_bn/g"], rtol=1e-5, atol=1e-6)


def test_frozen_batch_norm_is_eval_batch_norm():
    bn = nn.BatchNorm2d(4)
    r = np.random.default_rng(4)
    for name in ("weight", "bias", "running_mean"):
        getattr(bn, name).data.copy_(ember.tensor(r.normal(size=4).astype(np.float32)))
    bn.running_var.data.copy_(ember.tensor(r.uniform(0.2, 2, 4).astype(np.float32)))
    f = ops.FrozenBatchNorm2d(4)
    f.load_state_dict(bn.state_dict())
    x = r.normal(size=(3, 4, 5, 2)).astype(np.float32)
    bn.eval()
    f.train()                                # frozen in train mode too
    np.testing.assert_allclose(f(ember.tensor(x)).numpy(), bn(ember.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    t = {k: torch.tensor(v.numpy()) for k, v in f.state_dict().items()}
    scale = t["weight"].reshape(1, -1, 1, 1) * (t["running_var"].reshape(1, -1, 1, 1) +
                                                1e-5).rsqrt()
    want = torch.tensor(x) * scale + (t["bias"].reshape(1, -1, 1, 1) -
                                      t["running_mean"].reshape(1, -1, 1, 1) * scale)
    np.testing.assert_allclose(f(ember.tensor(x)).numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


OLD_NAMES = ["box_convert", "box_area", "box_iou", "generalized_box_iou", "nms", "batched_nms",
             "clip_boxes_to_image", "remove_small_boxes", "roi_align", "roi_pool",
             "sigmoid_focal_loss", "StochasticDepth", "stochastic_depth", "Conv2dNormActivation",
             "SqueezeExcitation", "MLP", "RoIAlign", "RoIPool"]


def test_package_names():
    for name in OLD_NAMES + ops.__all__:
        assert hasattr(ops, name), name
    assert len(set(ops.__all__)) == len(ops.__all__)
    public = {n for n in dir(ops) if not n.startswith("_") and
              not inspect.ismodule(getattr(ops, n))} - {"annotations"}
    assert public == set(ops.__all__)


@pytest.mark.parametrize("name", ["boxes", "losses", "roi", "poolers", "deform_conv",
                                  "feature_pyramid_network", "misc"])
def test_submodule_docstring_examples(name):
    mod = importlib.import_module(f"ember.vision.ops.{name}")
    res = doctest.testmod(mod, extraglobs={"ember": ember}, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0
