"""torch semantics that existing training code relies on: ``.data``, legacy constructors."""
import numpy as np
import pytest
import torch

import ember
from ember import nn


def test_data_is_a_detached_tensor_sharing_storage():
    p = nn.Parameter(ember.ones(3))
    d = p.data
    assert isinstance(d, ember.Tensor) and not isinstance(d, nn.Parameter)
    assert not d.requires_grad and d.grad_fn is None
    d.add_(1.0)                                  # p.data.add_(...): SGD written by hand
    np.testing.assert_array_equal(p.detach().numpy(), [2, 2, 2])
    p.data.fill_(0.5)
    p.data.copy_(p.data * 4)
    np.testing.assert_array_equal(p.detach().numpy(), [2, 2, 2])
    assert p.requires_grad and p.is_leaf


def test_data_writes_are_invisible_to_autograd_as_in_torch():
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()
        y.data.mul_(2.0)                         # no version bump: backward still runs
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2 * np.e), rtol=1e-6)


def test_data_assignment_swaps_storage_and_shape():
    lin = nn.Linear(2, 3)
    lin.weight.data = ember.zeros(4, 2)
    assert lin.weight.shape == (4, 2) and isinstance(lin.weight, nn.Parameter)
    assert list(dict(lin.named_parameters())) == ["weight", "bias"]
    with pytest.raises(TypeError, match="Tensor.data must be set to a Tensor"):
        lin.weight.data = np.zeros((4, 2))


def test_array_is_the_backend_array():
    t = ember.arange(4)
    assert isinstance(t.array, np.ndarray) and t.array is t.numpy()


@pytest.mark.parametrize("args", [(5,), (2, 3), ([1, 2],), ([[1.5], [2]],), ((1, 2),), ()])
def test_legacy_constructor_matches_torch(args):
    e, t = ember.Tensor(*args), torch.Tensor(*args)
    assert e.shape == tuple(t.shape) and e.dtype == ember.float32
    if t.numel() and args and not isinstance(args[0], int):
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_legacy_constructor_of_arrays_and_errors():
    e = ember.Tensor(np.arange(3))
    assert e.dtype == ember.float32 and e.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="non-negative"):
        ember.Tensor(-1)
    with pytest.raises(TypeError, match="sizes as ints"):
        ember.Tensor([1], [2])


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor",
                                  "BoolTensor", "ByteTensor", "HalfTensor"])
def test_typed_constructors_match_torch(name):
    e, t = getattr(ember, name)([1, 0, 2]), getattr(torch, name)([1, 0, 2])
    assert str(e.dtype) == str(t.dtype).replace("torch.", "")
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert getattr(ember, name)(2, 3).shape == (2, 3)
    assert isinstance(e, getattr(ember, name)) and isinstance(e, ember.Tensor)
    assert not isinstance(e, ember.FloatTensor if name != "FloatTensor" else ember.LongTensor)


def test_new_factories_follow_the_source():
    x = ember.zeros(2, dtype=ember.float64)
    for lib_x in (x, torch.zeros(2, dtype=torch.float64)):
        assert str(lib_x.new_tensor([1, 2]).dtype).endswith("float64")
        assert tuple(lib_x.new_zeros(2, 3).shape) == (2, 3)
        assert tuple(lib_x.new_ones((4,)).shape) == (4,)
        assert tuple(lib_x.new_empty(1, 2).shape) == (1, 2)
        assert lib_x.new_full((2,), 7.0).tolist() == [7.0, 7.0]


def test_reassigning_a_child_or_parameter_keeps_its_place():
    for lib in (ember, torch):
        m = lib.nn.Module()
        m.a, m.b, m.c = lib.nn.Linear(2, 2), lib.nn.ReLU(), lib.nn.Linear(2, 2)
        m.a = lib.nn.Linear(2, 2)
        assert [n for n, _ in m.named_children()] == ["a", "b", "c"]
        lin = lib.nn.Linear(2, 3)
        lin.weight = lib.nn.Parameter(lib.zeros(3, 2))
        assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
        assert list(lin.state_dict()) == ["weight", "bias"]
        bn = lib.nn.BatchNorm1d(2)
        bn.running_mean = lib.zeros(2)
        assert list(bn.state_dict())[:3] == ["weight", "bias", "running_mean"]


@pytest.mark.parametrize("cell", ["LSTMCell", "GRUCell", "RNNCell"])
def test_accumulated_grads_are_contiguous(cell):
    c = getattr(nn, cell)(3, 4)
    x = ember.randn(2, 3)
    out = c(x)
    (sum(o.sum() for o in out) if isinstance(out, tuple) else out.sum()).backward()
    for name, p in c.named_parameters():
        assert p.grad.is_contiguous(), name
        assert p.grad.view(-1).shape == (p.numel(),)
    w = ember.randn(3, 4, requires_grad=True)
    (ember.randn(5, 3).T @ ember.randn(5, 4) * w).sum().backward()
    lin = nn.Linear(4, 2)
    lin(ember.randn(6, 4)).sum().backward()
    assert lin.weight.grad.is_contiguous() and w.grad.is_contiguous()


def test_range_indexing_matches_torch():
    e, t = ember.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4)
    for key in (range(2), (range(1, 3), range(2)), (slice(None), range(0, 4, 2)), range(0)):
        np.testing.assert_array_equal(e[key].numpy(), t[key].numpy())
    e[range(2)] = 0.0
    t[range(2)] = 0.0
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_factory_keyword_forms():
    assert ember.empty(size=(2, 3)).shape == tuple(torch.empty(size=(2, 3)).shape)
    for f in ("zeros", "ones", "rand", "randn"):
        assert getattr(ember, f)(size=[4, 1]).shape == (4, 1)
    r = ember.randint(5, size=(200,))
    assert r.shape == (200,) and r.dtype == ember.int64 and 0 <= r.min() and r.max() < 5
    assert ember.randint(3, 5, (2,)).shape == (2,)


def test_memory_formats_as_strides_like_torch():
    e = ember.randn(2, 3, 4, 5)
    t = torch.from_numpy(e.numpy().copy())
    for fmt in ("channels_last", "contiguous_format", "preserve_format"):
        ef, tf = getattr(ember, fmt), getattr(torch, fmt)
        a, b = e.contiguous(memory_format=ef) if fmt != "preserve_format" else e, \
            t.contiguous(memory_format=tf) if fmt != "preserve_format" else t
        assert a.stride() == b.stride()
        assert a.to(memory_format=ef).stride() == b.to(memory_format=tf).stride()
        assert a.clone(memory_format=ef).stride() == b.clone(memory_format=tf).stride()
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    cl = e.contiguous(memory_format=ember.channels_last)
    assert cl.is_contiguous(memory_format=ember.channels_last) and not cl.is_contiguous()
    v = ember.randn(1, 2, 3, 4, 5).contiguous(memory_format=ember.channels_last_3d)
    assert v.stride() == torch.randn(1, 2, 3, 4, 5).contiguous(
        memory_format=torch.channels_last_3d).stride()
    with pytest.raises(RuntimeError, match="rank 4"):
        ember.randn(2, 3).contiguous(memory_format=ember.channels_last)
    conv = nn.Conv2d(3, 4, 3).to(memory_format=ember.channels_last)
    assert conv.weight.is_contiguous(memory_format=ember.channels_last)
    y = conv(cl)
    y.sum().backward()
    assert y.shape == (2, 4, 2, 3) and conv.weight.grad.shape == (4, 3, 3, 3)


def test_backend_flags_and_accelerator_api():
    import ember.backends.cudnn as cudnn

    cudnn.benchmark = True
    ember.backends.cudnn.deterministic = True
    ember.backends.cuda.matmul.allow_tf32 = True
    assert not ember.backends.cudnn.is_available()
    assert not ember.backends.mps.is_available() and not ember.backends.mkldnn.is_available()
    assert ember.accelerator.is_available() == ember.cuda.is_available()
    dev = ember.accelerator.current_accelerator() if ember.accelerator.is_available() \
        else ember.device("cpu")
    assert ember.zeros(2, device=dev).device == dev
    assert ember.accelerator.device_count() == ember.cuda.device_count()
    x = ember.zeros(2)
    assert (x.is_xpu, x.is_mps, x.is_complex()) == (False, False, False)
    assert ember.zeros(2, dtype=ember.complex64).is_complex()
    ember.use_deterministic_algorithms(True)
    assert ember.are_deterministic_algorithms_enabled()
    ember.use_deterministic_algorithms(False)
    ember.set_float32_matmul_precision("high")
    assert ember.get_float32_matmul_precision() == "high"
    ember.set_float32_matmul_precision("highest")


def test_torch_module_paths_and_noops():
    from ember.nn.modules.activation import MultiheadAttention, ReLU  # noqa: F401
    from ember.nn.modules.batchnorm import BatchNorm2d  # noqa: F401
    from ember.nn.modules.linear import Identity, Linear  # noqa: F401
    from ember.nn.modules.padding import ReflectionPad2d  # noqa: F401
    from ember.nn.modules.upsampling import Upsample  # noqa: F401
    from ember.utils.data import DataLoader, Dataset  # noqa: F401

    assert MultiheadAttention is nn.MultiheadAttention and Identity is nn.Identity
    assert ember.utils.data.DataLoader is ember.data.DataLoader
    lstm = nn.LSTM(2, 3)
    assert lstm.flatten_parameters() is None


def test_meshgrid_matches_torch():
    for indexing in ("ij", "xy"):
        a = ember.arange(3.0, requires_grad=True)
        ta = torch.arange(3.0, requires_grad=True)
        e = ember.meshgrid(a, ember.arange(4.0), ember.arange(2.0), indexing=indexing)
        t = torch.meshgrid(ta, torch.arange(4.0), torch.arange(2.0), indexing=indexing)
        for x, y in zip(e, t):
            np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
        (e[0] * e[1]).sum().backward()
        (t[0] * t[1]).sum().backward()
        np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())


def test_xlogy_and_logaddexp_gradients_match_torch():
    for lib in (ember, torch):
        x = lib.tensor([0.0, 0.0, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([2.0, 0.0, 0.5, 3.0], dtype=lib.float64, requires_grad=True)
        lib.xlogy(x, y).sum().backward()
        a = lib.tensor([0.0, 1.0, -3.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([-30.0, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        r = lib.logaddexp(a, b)
        r.sum().backward()
        if lib is ember:
            ex, er, ea = x.grad.numpy(), r.detach().numpy(), a.grad.numpy()
        else:
            np.testing.assert_allclose(ex, x.grad.numpy(), rtol=1e-12)
            np.testing.assert_allclose(er, r.detach().numpy(), rtol=1e-12)
            np.testing.assert_allclose(ea, a.grad.numpy(), rtol=1e-12)


def test_load_state_dict_leaves_the_callers_dict_alone():
    m = nn.Linear(2, 2)
    sd = m.state_dict()
    keys = list(sd)

    class Renaming(nn.Linear):
        def _load_from_state_dict(self, state_dict, prefix, *args):
            state_dict[prefix + "weight"] = state_dict.pop(prefix + "weight")
            state_dict["junk"] = 1
            super()._load_from_state_dict(state_dict, prefix, *args)

    Renaming(2, 2).load_state_dict(sd, strict=False)
    assert list(sd) == keys


def test_module_list_repr_folds_repeats_like_torch():
    for lib in (ember, torch):
        m = lib.nn.ModuleList([lib.nn.Linear(2, 2) for _ in range(3)] + [lib.nn.ReLU()])
        if lib is ember:
            er = repr(m)
        else:
            assert er == repr(m)


def test_embedding_with_padding_idx_builds_on_meta():
    with ember.device("meta"):
        e = nn.Embedding(10, 4, padding_idx=1)
        bag = nn.EmbeddingBag(10, 4, padding_idx=1)
    assert e.weight.is_meta and bag.weight.is_meta
    e.to_empty(device="cpu")
    e.reset_parameters()
    assert e.weight[1].abs().sum().item() == 0


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_random_draws_fill_both_parts_like_torch(dtype):
    ember.manual_seed(0)
    r = ember.rand(20000, dtype=getattr(ember, dtype))
    n = ember.randn(20000, dtype=getattr(ember, dtype))
    assert r.dtype == getattr(ember, dtype) and r.shape == (20000,)
    for part in (r.real, r.imag):
        assert 0 <= float(part.min()) and float(part.max()) < 1
        assert abs(float(part.mean()) - 0.5) < 0.02
    assert abs(float((n.abs() ** 2).mean()) - 1.0) < 0.05     # torch: E|z|^2 = 1
    assert abs(float(n.real.var()) - float(n.imag.var())) < 0.05
