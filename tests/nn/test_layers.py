"""Every nn layer against its torch twin: same repr, same state-dict keys and shapes; with
torch's weights loaded, the same output and the same gradients for input and parameters."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember import nn

F32 = np.float32


def _x(*shape, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(F32)
    return np.abs(a) + 0.1 if positive else a


def _ids(*shape, high=10, seed=0):
    return np.random.default_rng(seed).integers(0, high, shape)


# (name, args, kwargs, inputs); inputs: float arrays (differentiated) or int arrays (ids)
LAYERS = [
    ("Linear", (5, 3), {}, [_x(2, 4, 5)]),
    ("Bilinear", (3, 4, 2), {}, [_x(5, 3), _x(5, 4, seed=1)]),
    ("Conv1d", (3, 4, 3), {"stride": 2, "padding": 1}, [_x(2, 3, 9)]),
    ("Conv2d", (3, 6, 3), {"padding": "same", "padding_mode": "reflect", "groups": 3},
     [_x(2, 3, 8, 8)]),
    ("Conv2d", (4, 4, (3, 1)), {"dilation": 2, "bias": False, "padding": 1,
                                "padding_mode": "circular"}, [_x(1, 4, 7, 6)]),
    ("Conv2d", (2, 4, 3), {"padding": 1, "padding_mode": "replicate", "stride": 2},
     [_x(2, 2, 7, 7)]),
    ("ConvTranspose2d", (4, 2, 3), {"stride": 2, "output_padding": 1, "groups": 2},
     [_x(2, 4, 5, 5)]),
    ("ConvTranspose1d", (3, 2, 4), {"stride": 3, "padding": 1}, [_x(2, 3, 6)]),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, [_x(2, 3, 8, 7)]),
    ("MaxPool1d", (2,), {}, [_x(2, 3, 9)]),
    ("AvgPool2d", (3,), {"stride": 2, "count_include_pad": False, "padding": 1},
     [_x(2, 3, 8, 8)]),
    ("AvgPool1d", (3,), {"stride": 1}, [_x(2, 2, 7)]),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, [_x(2, 3, 7, 8)]),
    ("AdaptiveAvgPool1d", (4,), {}, [_x(2, 3, 9)]),
    ("AdaptiveMaxPool2d", (3,), {}, [_x(2, 3, 7, 8)]),
    ("BatchNorm1d", (5,), {}, [_x(6, 5)]),
    ("BatchNorm2d", (3,), {"momentum": None}, [_x(4, 3, 5, 5)]),
    ("BatchNorm2d", (3,), {"affine": False, "track_running_stats": False}, [_x(4, 3, 5, 5)]),
    ("LayerNorm", ((4,),), {}, [_x(3, 5, 4)]),
    ("LayerNorm", ((5, 4),), {"bias": False}, [_x(3, 5, 4)]),
    ("GroupNorm", (2, 4), {}, [_x(3, 4, 5)]),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True}, [_x(2, 3, 5, 5)]),
    ("RMSNorm", (4,), {}, [_x(3, 4)]),
    ("LocalResponseNorm", (2,), {}, [_x(2, 5, 4, 4)]),
    ("ReLU", (), {}, [_x(3, 4)]), ("ReLU6", (), {}, [_x(3, 4) * 4]),
    ("LeakyReLU", (0.2,), {}, [_x(3, 4)]), ("ELU", (0.5,), {}, [_x(3, 4)]),
    ("SELU", (), {}, [_x(3, 4)]), ("CELU", (1.5,), {}, [_x(3, 4)]),
    ("GELU", (), {"approximate": "tanh"}, [_x(3, 4)]), ("GELU", (), {}, [_x(3, 4)]),
    ("SiLU", (), {}, [_x(3, 4)]), ("Mish", (), {}, [_x(3, 4)]),
    ("Hardswish", (), {}, [_x(3, 4) * 4]), ("Hardsigmoid", (), {}, [_x(3, 4) * 4]),
    ("Hardtanh", (-0.5, 0.5), {}, [_x(3, 4)]), ("Sigmoid", (), {}, [_x(3, 4)]),
    ("Tanh", (), {}, [_x(3, 4)]), ("Softplus", (2.0, 10.0), {}, [_x(3, 4)]),
    ("Softsign", (), {}, [_x(3, 4)]), ("LogSigmoid", (), {}, [_x(3, 4)]),
    ("GLU", (), {}, [_x(3, 4)]), ("Softmax", (1,), {}, [_x(3, 4)]),
    ("LogSoftmax", (1,), {}, [_x(3, 4)]), ("Softmin", (0,), {}, [_x(3, 4)]),
    ("Softmax2d", (), {}, [_x(2, 3, 2, 2)]), ("PReLU", (3,), {}, [_x(2, 3, 4)]),
    ("Threshold", (0.1, 2.0), {}, [_x(3, 4)]), ("Tanhshrink", (), {}, [_x(3, 4)]),
    ("Softshrink", (0.3,), {}, [_x(3, 4)]), ("Hardshrink", (0.3,), {}, [_x(3, 4)]),
    ("Embedding", (10, 4), {"padding_idx": 0}, [_ids(3, 5)]),
    ("EmbeddingBag", (10, 4), {"mode": "sum"}, [_ids(3, 5)]),
    ("ZeroPad2d", (1,), {}, [_x(2, 3, 4, 4)]),
    ("ConstantPad1d", ((1, 2), 3.5), {}, [_x(2, 3, 4)]),
    ("ReflectionPad2d", (2,), {}, [_x(2, 3, 4, 4)]),
    ("ReplicationPad1d", ((1, 0),), {}, [_x(2, 3, 4)]),
    ("CircularPad2d", (1,), {}, [_x(2, 3, 4, 4)]),
    ("PixelShuffle", (2,), {}, [_x(1, 8, 3, 3)]), ("PixelUnshuffle", (2,), {}, [_x(1, 2, 4, 6)]),
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}, [_x(1, 2, 3, 3)]),
    ("Upsample", (), {"size": (5, 7), "mode": "nearest"}, [_x(1, 2, 3, 3)]),
    ("Unfold", (2,), {"stride": 1}, [_x(1, 2, 4, 4)]),
    ("Fold", ((4, 4), 2), {}, [_x(1, 8, 9)]),
    ("ChannelShuffle", (2,), {}, [_x(1, 4, 2, 2)]),
    ("Flatten", (), {}, [_x(2, 3, 4)]), ("Unflatten", (1, (2, 3)), {}, [_x(2, 6)]),
    ("PairwiseDistance", (), {}, [_x(3, 4), _x(3, 4, seed=1)]),
    ("CosineSimilarity", (), {}, [_x(3, 4), _x(3, 4, seed=1)]),
    ("MultiheadAttention", (8, 2), {"batch_first": True},
     [_x(2, 3, 8), _x(2, 5, 8, seed=1), _x(2, 5, 8, seed=2)]),
    ("MultiheadAttention", (8, 2), {"kdim": 6, "vdim": 4, "add_bias_kv": True},
     [_x(3, 2, 8), _x(5, 2, 6, seed=1), _x(5, 2, 4, seed=2)]),
    ("TransformerDecoderLayer", (8, 2), {"dim_feedforward": 16, "dropout": 0.0,
                                         "norm_first": True, "activation": "gelu"},
     [_x(4, 2, 8), _x(5, 2, 8, seed=1)]),
    ("Transformer", (), {"d_model": 8, "nhead": 2, "num_encoder_layers": 1,
                         "num_decoder_layers": 1, "dim_feedforward": 16, "dropout": 0.0},
     [_x(5, 2, 8), _x(4, 2, 8, seed=1)]),
]

LOSSES = [
    ("L1Loss", {}, [_x(3, 4), _x(3, 4, seed=1)]), ("MSELoss", {"reduction": "sum"},
                                                    [_x(3, 4), _x(3, 4, seed=1)]),
    ("CrossEntropyLoss", {"label_smoothing": 0.1}, [_x(4, 5), _ids(4, high=5)]),
    ("NLLLoss", {"ignore_index": 1}, [_x(4, 5), _ids(4, high=5)]),
    ("BCELoss", {}, [1 / (1 + np.exp(-_x(3, 4))), (_x(3, 4, seed=1) > 0).astype(F32)]),
    ("BCEWithLogitsLoss", {}, [_x(3, 4), (_x(3, 4, seed=1) > 0).astype(F32)]),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, [_x(3, 4), _x(3, 4, seed=1)]),
    ("SmoothL1Loss", {"beta": 0.5}, [_x(3, 4), _x(3, 4, seed=1)]),
    ("HuberLoss", {"delta": 0.5}, [_x(3, 4), _x(3, 4, seed=1)]),
    ("SoftMarginLoss", {}, [_x(3, 4), np.sign(_x(3, 4, seed=1))]),
    ("PoissonNLLLoss", {}, [_x(3, 4), _x(3, 4, seed=1, positive=True)]),
    ("HingeEmbeddingLoss", {}, [_x(3, 4), np.sign(_x(3, 4, seed=1))]),
    ("MultiMarginLoss", {}, [_x(4, 5), _ids(4, high=5)]),
    ("MultiLabelSoftMarginLoss", {}, [_x(3, 4), (_x(3, 4, seed=1) > 0).astype(F32)]),
]


def _twins(name, args, kw):
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(*args, **kw)
    e = getattr(nn, name)(*args, **kw)
    return e, t


def _inputs(arrs, n_diff=None):
    """Tensors for both libraries; float arrays require grad (only the first ``n_diff``)."""
    e, t = [], []
    for i, a in enumerate(arrs):
        if a.dtype.kind == "f" and (n_diff is None or i < n_diff):
            e.append(ember.tensor(a, requires_grad=True))
            t.append(torch.tensor(a, requires_grad=True))
        else:
            e.append(ember.tensor(a))
            t.append(torch.tensor(a))
    return e, t


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _compare(e, t, ein, tin, tol=1e-4):
    eo, to = _first(e(*ein)), _first(t(*tin))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=tol, atol=1e-5)
    w = np.random.default_rng(9).standard_normal(tuple(to.shape)).astype(F32)
    (to * torch.from_numpy(w)).sum().backward()
    (eo * ember.from_numpy(w)).sum().backward()
    for a, b in zip(ein, tin):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=1e-5)
    for (k, p), (_, q) in zip(e.named_parameters(), t.named_parameters()):
        assert (p.grad is None) == (q.grad is None), k
        if q.grad is not None:
            g = p.grad.to_dense() if p.grad.is_sparse else p.grad
            np.testing.assert_allclose(g.numpy(), q.grad.to_dense().numpy(), rtol=tol,
                                       atol=1e-5, err_msg=k)


@pytest.mark.parametrize("name,args,kw,arrs", LAYERS,
                         ids=[f"{n}-{i}" for i, (n, *_) in enumerate(LAYERS)])
def test_layer_twin(name, args, kw, arrs):
    e, t = _twins(name, args, kw)
    assert repr(e) == repr(t)
    esd, tsd = e.state_dict(), t.state_dict()
    assert list(esd) == list(tsd)
    assert [tuple(v.shape) for v in esd.values()] == [tuple(v.shape) for v in tsd.values()]
    e.load_state_dict({k: v.detach().numpy() for k, v in tsd.items()})
    ein, tin = _inputs(arrs)
    _compare(e, t, ein, tin)


@pytest.mark.parametrize("name,kw,arrs", LOSSES, ids=[n for n, *_ in LOSSES])
def test_loss_twin(name, kw, arrs):
    e, t = _twins(name, (), kw)
    assert repr(e) == repr(t)
    ein, tin = _inputs(arrs, n_diff=1)
    _compare(e, t, ein, tin)


def test_weighted_losses_keep_weight_buffers():
    w = np.array([1.0, 2.0, 0.5], F32)
    e = nn.CrossEntropyLoss(weight=ember.tensor(w))
    t = torch.nn.CrossEntropyLoss(weight=torch.tensor(w))
    assert list(e.state_dict()) == list(t.state_dict()) == ["weight"]
    e2 = nn.BCEWithLogitsLoss(pos_weight=ember.tensor(w))
    t2 = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(w))
    assert list(e2.state_dict()) == list(t2.state_dict())


def test_batchnorm_running_stats_follow_torch_over_steps():
    e, t = _twins("BatchNorm2d", (3,), {"momentum": 0.3})
    for s in range(3):
        x = _x(4, 3, 2, 2, seed=s)
        e(ember.tensor(x))
        t(torch.tensor(x))
    for (k, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, err_msg=k)
    e.eval()
    t.eval()
    x = _x(2, 3, 2, 2, seed=7)
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_batchnorm_loads_checkpoint_without_counter():
    e = nn.BatchNorm1d(2)
    sd = {k: v for k, v in e.state_dict().items() if k != "num_batches_tracked"}
    e.load_state_dict(sd)  # an old checkpoint (no version metadata): counter filled with 0
    assert int(e.num_batches_tracked.item()) == 0


def test_conv_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")


def test_conv_transpose_output_size():
    e, t = _twins("ConvTranspose2d", (2, 3, 3), {"stride": 2})
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = _x(1, 2, 4, 4)
    eo = e(ember.tensor(x), output_size=(10, 10))
    to = t(torch.tensor(x), output_size=(10, 10))
    assert eo.shape == tuple(to.shape) == (1, 3, 10, 10)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
