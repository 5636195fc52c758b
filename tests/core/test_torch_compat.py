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
