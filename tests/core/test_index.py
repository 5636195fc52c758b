"""Indexing ops against PyTorch: forward, backward, double backward and float64 gradcheck
(tests/core/optest.py), plus views, in-place semantics, version counters and errors."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import ember
from ember.ops import index as IX
from optest import Const, check_op

A = np.array


def I(*a, **k):  # an integer index array passed to both libraries as is
    return Const(np.array(*a, **k))


def _tk(key):
    """An index expression for torch: numpy arrays become tensors."""
    if isinstance(key, tuple):
        return tuple(_tk(k) for k in key)
    if isinstance(key, np.ndarray):
        return torch.from_numpy(key)
    return key


def _ek(key, device):
    """The same expression for ember, with arrays as ember tensors on ``device``."""
    if isinstance(key, tuple):
        return tuple(_ek(k, device) for k in key)
    if isinstance(key, np.ndarray):
        return ember.tensor(key, device=device)
    return key


rng = np.random.default_rng(1)
MASK34 = rng.random((3, 4)) > 0.5
MASK3 = A([True, False, True])

# ----------------------------------------------------------------------------- __getitem__

GETITEM = [
    ((5,), 2),
    ((5,), -1),
    ((5,), slice(1, 4)),
    ((5,), slice(None, None, 2)),
    ((5,), slice(-3, None)),
    ((5,), slice(7, 9)),                              # out of range slice: empty
    ((3, 4), (1, -2)),                                # 0-d view
    ((3, 4), (slice(None), 1)),
    ((3, 4), (None, 1, None)),
    ((2, 3, 4), (Ellipsis, 1)),
    ((2, 3, 4), (0, Ellipsis, slice(1, 3))),
    ((2, 3, 4), ()),
    ((2, 3, 4), Ellipsis),
    ((3, 4), A([0, 2, 0, 0])),                         # duplicates: gradients accumulate
    ((3, 4), A([-1, 0, -3])),                          # negative indices
    ((3, 4), A([[0, 1], [2, 2]])),                     # 2-d index
    ((3, 4), A([2, 0], dtype=np.int32)),
    ((3, 4), (slice(None), A([3, 3, -1]))),
    ((3, 4), (A([0, 2, 2]), A([1, 1, 3]))),            # pairs
    ((3, 4), (A([[0], [2]]), A([1, 3, 3]))),           # broadcast index tensors
    ((2, 3, 4), (A([0, 1, 1]), slice(None), A([3, 0, 0]))),  # separated: index dims first
    ((2, 3, 4), (slice(None), A([0, 2, 2]), A([3, 0, 3]))),  # adjacent: stay in place
    ((2, 3, 4), (0, slice(None), A([1, 1]))),          # PyTorch: ints are applied first
    ((2, 3, 4), (A([1, 0]), None, A([0, 2]))),
    ((2, 3, 4), (slice(None, None, 2), A([2, 0]))),
    ((2, 3, 4), (Ellipsis, A([0, -1, 0]))),
    ((3, 4), MASK34),                                  # full bool mask
    ((3, 4), MASK3),                                   # mask over the first dim
    ((2, 3, 4), (slice(None), MASK3)),                 # mask in the middle
    ((2, 3, 4), (slice(None), MASK3, A([0, 3]))),      # mask with an index tensor
    ((3, 4), A(1)),                                    # 0-d index tensor: like an int
    ((3, 4), (A(2), A([0, 1]))),
    ((3, 4), True),
    ((3, 4), False),
    ((3, 4), A([], dtype=np.int64)),                   # empty index
    ((0, 3), (slice(None), 1)),                        # empty tensor
    ((0, 3), A([], dtype=np.int64)),
    ((3, 0), (A([1, 1]),)),
]


@pytest.mark.parametrize("shape,key", GETITEM, ids=[str(i) for i in range(len(GETITEM))])
def test_getitem(shape, key, device):
    ek = _ek(key, device)
    check_op(lambda x: x[ek], lambda x: x[_tk(key)], [shape], device=device)


@pytest.mark.parametrize("key", [(slice(None), 1), (A([0, 2]), slice(1, None)),
                                 (slice(None), A([0, 0, 3])), MASK34])
def test_getitem_noncontiguous(key, device):
    ek = _ek(key, device)
    check_op(lambda x: x[ek], lambda x: x[_tk(key)], [(3, 4)], noncontig=True, device=device)


def test_getitem_list_index_and_python_bools():
    x = ember.arange(12.0).reshape(3, 4)
    t = torch.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(x[[2, 0]].numpy(), t[[2, 0]].numpy())
    np.testing.assert_array_equal(x[[True, False, True]].numpy(), t[[True, False, True]].numpy())
    np.testing.assert_array_equal(x[[]].numpy(), t[[]].numpy())
    np.testing.assert_array_equal(x[True, [0, 1]].numpy(), t[True, [0, 1]].numpy())
    np.testing.assert_array_equal(x[ember.tensor(True)].numpy(), t[torch.tensor(True)].numpy())
    # a 0-d integer tensor index is an int: the result is a view
    assert x[ember.tensor(1)]._base is x._base is not None


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
def test_getitem_int_and_bool_tensors(dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    x, t = ember.tensor(a), torch.from_numpy(a.copy())
    for key in [(1,), (slice(None), A([3, 0, 3])), (MASK34,), (A([0, 2]), A([1, 1]))]:
        e, r = x[_ek(key, "cpu")], t[_tk(key)]
        assert e.dtype == a.dtype and e.shape == tuple(r.shape)
        np.testing.assert_array_equal(e.numpy(), r.numpy())


def test_basic_index_is_a_view():
    x = ember.zeros(3, 4)
    v = x[1, 1:3]
    assert v._base is x and np.shares_memory(v.numpy(), x.numpy())
    v.fill_(5.0)
    assert x[1, 1].item() == 5.0 and x._version_count == v._version_count == 1
    s = x[2, 3]  # a 0-d view, not a copy
    s.add_(1.0)
    assert x[2, 3].item() == 1.0
    a = x[A([0, 1])]  # advanced: a copy
    assert a._base is None and not np.shares_memory(a.numpy(), x.numpy())


def test_index_double_backward_through_view_chain():
    check_op(lambda x: (x[1:, ::2][0] * x[A([0, 0])].sum(0)[::2]),
             lambda x: (x[1:, ::2][0] * x[torch.tensor([0, 0])].sum(0)[::2]), [(3, 4)])


def _err(fn, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fn()


def test_getitem_errors():
    x = ember.zeros(2, 3)
    _err(lambda: x[::-1], ValueError, "step must be greater than zero")
    _err(lambda: x[:, ::0], ValueError, "slice step cannot be zero")
    _err(lambda: x[5], IndexError, "index 5 is out of bounds for dimension 0 with size 2")
    _err(lambda: x[:, -4], IndexError, "index -4 is out of bounds for dimension 1 with size 3")
    _err(lambda: x[A([0, 2])], IndexError,
         "index 2 is out of bounds for dimension 0 with size 2")
    _err(lambda: x[:, ember.tensor([1, -4])], IndexError,
         "index -4 is out of bounds for dimension 1 with size 3")
    _err(lambda: x[0, 0, 0], IndexError, "too many indices for tensor of dimension 2")
    _err(lambda: ember.tensor(1.0)[0], IndexError, "invalid index of a 0-dim tensor")
    _err(lambda: x[ember.tensor([0.0])], IndexError, "must be long, int or bool tensors")
    _err(lambda: x[ember.tensor([0], dtype=ember.int16)], IndexError, "long, int or bool")
    _err(lambda: x[1.5], IndexError, "valid indices")
    _err(lambda: x[..., 0, ...], IndexError, "single ellipsis")
    _err(lambda: x[ember.ones(3, dtype=ember.bool)], IndexError,
         re.escape("The shape of the mask [3] at index 0 does not match the shape of the "
                   "indexed tensor [2, 3] at index 0"))
    _err(lambda: x[A([0, 1]), A([0, 1, 2])], IndexError,
         re.escape("shape mismatch: indexing tensors could not be broadcast together with "
                   "shapes [2], [3]"))


# ----------------------------------------------------------------------------- __setitem__

def _setter(key, device):
    ek, tk = _ek(key, device), _tk(key)

    def e(x, v):
        y = x * 1
        y[ek] = v
        return y

    def t(x, v):
        y = x.clone()
        y[tk] = v
        return y
    return e, t


SETITEM = [
    ((3, 4), 1, (4,)),
    ((3, 4), 1, (1, 4)),                        # extra leading 1 dims are dropped
    ((3, 4), (slice(None), 2), (3,)),
    ((3, 4), (slice(1, None), slice(None, None, 2)), (1, 2)),
    ((3, 4), (0, 0), ()),
    ((3, 4), A([2, 0]), (4,)),
    ((3, 4), A([-1, 1]), (2, 1)),
    ((3, 4), (A([0, 2]), A([3, 1])), ()),
    ((2, 3, 4), (A([0, 1]), slice(None), A([3, 1])), (3,)),   # separated index dims
    ((2, 3, 4), (0, slice(None), A([1, 2])), (3, 2)),         # PyTorch's int-first layout
    ((2, 3, 4), (slice(None), A([2, 0]), A([1, 3])), (2, 2)),
    ((3, 4), MASK34, (int(MASK34.sum()),)),
    ((3, 4), MASK34, ()),
    ((2, 3, 4), (slice(None), MASK3), (4,)),
    ((3, 4), (Ellipsis, None, 1), (3, 1)),
]


@pytest.mark.parametrize("shape,key,vshape", SETITEM, ids=[str(i) for i in range(len(SETITEM))])
def test_setitem_grad(shape, key, vshape, device):
    e, t = _setter(key, device)
    check_op(e, t, [shape, vshape], device=device)


@pytest.mark.parametrize("key", [1, (slice(None), A([0, 3])), MASK34, (A([1, 2]), A([0, 0]))])
def test_setitem_scalar_and_noncontig(key, device):
    ek, tk = _ek(key, device), _tk(key)

    def e(x):
        y = x * 2
        y[ek] = 0.5
        return y

    def t(x):
        y = x * 2
        y[tk] = 0.5
        return y
    check_op(e, t, [(3, 4)], noncontig=True, device=device)


def test_setitem_through_view_with_grad():
    def e(x, w):
        y = x * 1
        row = y[1]
        row[A([0, 2])] = w
        return y * y

    def t(x, w):
        y = x * 1
        row = y[1]
        row[torch.tensor([0, 2])] = w
        return y * y
    check_op(e, t, [(3, 4), (2,)])


def test_setitem_augmented_assignment():
    def e(x):
        y = x * 1
        y[A([0, 2])] += x[1]
        y[:, 1] *= 3.0
        return y

    def t(x):
        y = x * 1
        y[torch.tensor([0, 2])] += x[1]
        y[:, 1] *= 3.0
        return y
    check_op(e, t, [(3, 4)])


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32"])
def test_setitem_no_grad_writes_in_place(dtype):
    a = np.arange(12).reshape(3, 4).astype(dtype)
    x, t = ember.tensor(a), torch.from_numpy(a.copy())
    before = x._version_count
    for key, val in [((0, 1), 1), ((slice(None), A([3, 0])), 0), (MASK34, True),
                     ((A([1, 2]),), ember.tensor(np.ones(4, dtype))),
                     ((Ellipsis, 2), 2.7 if dtype != "bool" else False)]:
        x[_ek(key, "cpu")] = val
        t[_tk(key)] = torch.from_numpy(val.numpy()) if isinstance(val, ember.Tensor) else val
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    assert x._version_count == before + 5


def test_setitem_errors_and_versions():
    leaf = ember.ones(3, requires_grad=True)
    _err(lambda: leaf.__setitem__(0, 2.0), RuntimeError, "leaf tensor that requires grad")
    x = ember.zeros(3, 4)
    _err(lambda: x.__setitem__(A([0, 1]), ember.ones(3, 4)), RuntimeError,
         re.escape("shape mismatch: value tensor of shape [3, 4] cannot be broadcast to "
                   "indexing result of shape [2, 4]"))
    _err(lambda: x.__setitem__(slice(None, None, -1), 0.0), ValueError, "greater than zero")
    # a tensor saved for backward and then modified through setitem: a clear error
    a = ember.randn(3, requires_grad=True)
    b = a * 2
    c = b * b  # saves b
    b[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        c.sum().backward()
    # and through a view of it
    a = ember.randn(3, 4, requires_grad=True)
    b = a.exp()  # saves its output
    v = b[1]
    v[A([0])] = 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        b.sum().backward()


def test_setitem_value_requires_grad_into_plain_tensor():
    x = ember.zeros(3, 4)
    w = ember.ones(4, requires_grad=True)
    x[MASK3] = w * 2
    assert x.requires_grad and x.grad_fn is not None
    x.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(4, 2.0 * MASK3.sum()))


# ----------------------------------------------------------------------------- gather / scatter

IDX24 = A([[0, 1, 2, 0], [3, 3, 0, 1]])           # duplicates within rows
PERM24 = A([[0, 1, 2, 3], [3, 2, 1, 0]])          # no duplicates (scatter is deterministic)

GATHER = [
    ((2, 4), 1, IDX24),
    ((2, 4), -1, A([[3], [0]])),
    ((3, 4), 0, A([[0, 2, 2, 1], [1, 0, 0, 2]])),
    ((3, 4), 1, A([[0, 0], [1, 3]])),            # index smaller than input
    ((2, 3, 2), 1, A([[[2, 0], [0, 0]], [[1, 1], [2, 0]]])),
    ((2, 4), 1, np.zeros((2, 0), np.int64)),     # empty
    ((4,), 0, A([3, 3, 0], dtype=np.int32)),
]


@pytest.mark.parametrize("shape,dim,idx", GATHER, ids=[str(i) for i in range(len(GATHER))])
def test_gather(shape, dim, idx, device):
    check_op(lambda x, i: ember.gather(x, dim, i), lambda x, i: torch.gather(x, dim, i),
             [shape, Const(idx)], device=device)
    check_op(lambda x, i: x.gather(dim, i), lambda x, i: x.gather(dim, i.long()),
             [shape, Const(idx)], device=device, noncontig=True, gradcheck=False)


def test_gather_scatter_int_inputs():
    a = np.arange(8).reshape(2, 4)
    i = torch.from_numpy(IDX24)
    x, t = ember.tensor(a), torch.from_numpy(a)
    np.testing.assert_array_equal(x.gather(1, ember.tensor(IDX24)).numpy(), t.gather(1, i))
    np.testing.assert_array_equal(x.scatter_add(1, ember.tensor(IDX24), x).numpy(),
                                  t.scatter_add(1, i, t))
    np.testing.assert_array_equal(
        x.scatter_reduce(1, ember.tensor(IDX24), x, "mean").numpy(),
        t.scatter_reduce(1, i, t, "mean"))


@pytest.mark.parametrize("dim,idx,sshape", [(1, PERM24, (2, 4)), (0, A([[1, 0, 1, 0]]), (1, 4)),
                                            (-1, A([[2], [0]]), (2, 1)), (1, PERM24[:, :2], (2, 2))])
def test_scatter(dim, idx, sshape, device):
    check_op(lambda x, i, s: ember.scatter(x, dim, i, s), lambda x, i, s: torch.scatter(x, dim, i, s),
             [(2, 4), Const(idx), sshape], device=device)
    check_op(lambda x, i: x.scatter(dim, i, 0.5), lambda x, i: x.scatter(dim, i, 0.5),
             [(2, 4), Const(idx)], device=device, noncontig=True)


def test_scatter_src_larger_than_index():
    # torch's own backward rejects this case, so compare the forward and check the gradient
    # numerically
    check_op(lambda x, i, s: x.scatter(1, i, s), lambda x, i, s: x.scatter(1, i, s),
             [(2, 4), Const(PERM24[:, :2]), (3, 5)], grad=False)
    check_op(lambda x, i, s: x.scatter_add(1, i, s), lambda x, i, s: x.scatter_add(1, i, s),
             [(2, 4), Const(IDX24[:, :3]), (2, 5)], grad=False)
    for f in [lambda x, s: x.scatter(1, ember.tensor(PERM24[:, :2]), s),
              lambda x, s: x.scatter_add(1, ember.tensor(IDX24[:, :3]), s),
              lambda x, s: x.scatter_reduce(1, ember.tensor(IDX24[:, :3]), s, "prod"),
              lambda x, s: x.scatter_reduce(1, ember.tensor(IDX24[:, :3]), s, "mean",
                                            include_self=False)]:
        args = [ember.randn(2, 4, dtype=ember.float64, requires_grad=True),
                ember.randn(3, 5, dtype=ember.float64, requires_grad=True)]
        assert ember.autograd.gradcheck(f, args)
        assert ember.autograd.gradgradcheck(f, args)


@pytest.mark.filterwarnings("ignore:The reduce argument")
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_argument(reduce):
    # torch has no backward for scatter(reduce=...): forward against torch, grads numerically
    check_op(lambda x, i, s: x.scatter(1, i, s, reduce=reduce),
             lambda x, i, s: x.scatter(1, i, s, reduce=reduce), [(2, 4), I(IDX24), (2, 4)],
             grad=False)
    check_op(lambda x, i: x.scatter(1, i, 1.5, reduce=reduce),
             lambda x, i: x.scatter(1, i, 1.5, reduce=reduce), [(2, 4), I(IDX24)], grad=False)
    f = lambda x, s: x.scatter(1, ember.tensor(IDX24), s, reduce=reduce)  # noqa: E731
    args = [ember.randn(2, 4, dtype=ember.float64, requires_grad=True),
            ember.randn(2, 4, dtype=ember.float64, requires_grad=True)]
    assert ember.autograd.gradcheck(f, args)


@pytest.mark.parametrize("dim", [1, 0])
def test_scatter_add(dim, device):
    idx = IDX24 if dim == 1 else A([[0, 1, 1, 0], [0, 0, 1, 1]])
    check_op(lambda x, i, s: ember.scatter_add(x, dim, i, s),
             lambda x, i, s: torch.scatter_add(x, dim, i, s), [(2, 4), Const(idx), (2, 4)],
             device=device, noncontig=True)


REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self, device):
    check_op(lambda x, i, s: x.scatter_reduce(1, i, s, reduce, include_self=include_self),
             lambda x, i, s: x.scatter_reduce(1, i, s, reduce, include_self=include_self),
             [(2, 5), I(IDX24), (2, 4)], device=device)
    check_op(lambda x, i, s: ember.scatter_reduce(x, 0, i, s, reduce, include_self=include_self),
             lambda x, i, s: torch.scatter_reduce(x, 0, i, s, reduce, include_self=include_self),
             [(3, 2), I([[0, 2], [0, 0], [2, 0]]), (3, 2)], device=device, noncontig=True,
             gradcheck=False)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_with_zeros(include_self):
    x = A([[2.0, 0.0, 3.0, 1.5], [0.0, 1.0, -2.0, 4.0]], dtype=np.float32)
    s = A([[0.0, 2.0, 0.0, 0.5], [3.0, 0.0, 1.0, 0.0]], dtype=np.float32)
    check_op(lambda x, i, s: x.scatter_reduce(1, i, s, "prod", include_self=include_self),
             lambda x, i, s: x.scatter_reduce(1, i, s, "prod", include_self=include_self),
             [x, I(IDX24), s])


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_ties_share_the_gradient(reduce):
    x = A([[1.0, 5.0, 2.0, 2.0]], dtype=np.float32)
    s = A([[1.0, 5.0, 5.0, 1.0]], dtype=np.float32)
    check_op(lambda x, i, s: x.scatter_reduce(1, i, s, reduce),
             lambda x, i, s: x.scatter_reduce(1, i, s, reduce), [x, I([[0, 1, 1, 0]]), s],
             gradcheck=False)


# ----------------------------------------------------------------------------- index_* ops

@pytest.mark.parametrize("shape,dim,idx", [((3, 4), 0, A([2, 0, 2])), ((3, 4), -1, A([1, 1, 3])),
                                           ((2, 3, 2), 1, A([0], dtype=np.int32)),
                                           ((3, 4), 1, A([], dtype=np.int64)),
                                           ((3, 4), 0, A([1]))])
def test_index_select(shape, dim, idx, device):
    check_op(lambda x, i: ember.index_select(x, dim, i), lambda x, i: torch.index_select(x, dim, i),
             [shape, Const(idx)], device=device, noncontig=True)


@pytest.mark.parametrize("dim,idx,alpha", [(0, A([2, 0, 2, 2]), 1), (1, A([3, 3, 0, 1]), -0.5),
                                           (-1, A([1]), 2)])
def test_index_add(dim, idx, alpha, device):
    shape = (3, 4)
    sshape = tuple(len(idx) if i == dim % 2 else s for i, s in enumerate(shape))
    check_op(lambda x, i, s: ember.index_add(x, dim, i, s, alpha=alpha),
             lambda x, i, s: torch.index_add(x, dim, i, s, alpha=alpha),
             [shape, Const(idx), sshape], device=device, noncontig=True)

    def e(x, i, s):
        y = x * 1
        return y.index_add_(dim, i, s, alpha=alpha)

    def t(x, i, s):
        return x.clone().index_add_(dim, i, s, alpha=alpha)
    check_op(e, t, [shape, Const(idx), sshape], device=device, gradcheck=False)


@pytest.mark.parametrize("dim,idx", [(0, A([2, 0])), (1, A([3, 1, 0]))])
def test_index_copy(dim, idx, device):
    sshape = (len(idx), 4) if dim == 0 else (3, len(idx))
    check_op(lambda x, i, s: ember.index_copy(x, dim, i, s),
             lambda x, i, s: torch.index_copy(x, dim, i, s), [(3, 4), Const(idx), sshape],
             device=device)
    check_op(lambda x, i, s: (x * 1).index_copy_(dim, i, s),
             lambda x, i, s: x.clone().index_copy_(dim, i, s), [(3, 4), Const(idx), sshape],
             device=device, gradcheck=False)


@pytest.mark.parametrize("dim,idx", [(0, A([2, 0, 2])), (1, A([-1, 1]))])
def test_index_fill(dim, idx, device):
    check_op(lambda x, i: ember.index_fill(x, dim, i, -1.5),
             lambda x, i: torch.index_fill(x, dim, i, -1.5), [(3, 4), Const(idx)], device=device)
    idx = idx % (3, 4)[dim]  # torch's backward for a tensor value rejects negative indices
    check_op(lambda x, i, v: x.index_fill(dim, i, v), lambda x, i, v: x.index_fill(dim, i, v),
             [(3, 4), Const(idx), ()], device=device)
    check_op(lambda x, i, v: (x * 1).index_fill_(dim, i, v),
             lambda x, i, v: x.clone().index_fill_(dim, i, v), [(3, 4), Const(idx), ()],
             device=device, gradcheck=False)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("indices,vshape", [((A([0, 2]),), (2, 4)), ((A([0, 2]), A([3, 1])), ()),
                                            ((A([2, 2, 0]), A([1, 1, 1])), (3,)),
                                            ((MASK34,), (1,))])
def test_index_put(indices, vshape, accumulate, device):
    if not accumulate and indices[0].dtype.kind != "b" and len(indices[0]) == 3:
        # torch leaves the winner of repeated writes unspecified; ember's is numpy's (the last)
        a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
        v = np.arange(3, dtype=np.float32) + 10
        want = a.copy()
        want[indices] = v
        x = ember.tensor(a, device=device)
        x.index_put_(tuple(ember.tensor(i, device=device) for i in indices),
                     ember.tensor(v, device=device))
        np.testing.assert_array_equal(x.cpu().numpy(), want)
        return
    ei = tuple(ember.tensor(i, device=device) for i in indices)
    ti = tuple(torch.from_numpy(i) for i in indices)
    check_op(lambda x, v: ember.index_put(x, ei, v, accumulate=accumulate),
             lambda x, v: torch.index_put(x, ti, v, accumulate=accumulate), [(3, 4), vshape],
             device=device, noncontig=True)
    check_op(lambda x, v: (x * 1).index_put_(ei, v, accumulate),
             lambda x, v: x.clone().index_put_(ti, v, accumulate), [(3, 4), vshape],
             device=device, gradcheck=False)


def test_index_put_accumulate_no_grad_and_ints():
    for dt in ["float32", "int64"]:
        base = np.zeros((4, 3), dt)
        x, t = ember.tensor(base), torch.from_numpy(base.copy())
        idx = (A([3, 0, 3, 3]), A([1, 1, 1, 2]))
        vals = np.arange(4).astype(dt)
        x.index_put_(tuple(ember.tensor(i) for i in idx), ember.tensor(vals), accumulate=True)
        t.index_put_(tuple(torch.from_numpy(i) for i in idx), torch.from_numpy(vals),
                     accumulate=True)
        np.testing.assert_array_equal(x.numpy(), t.numpy())
    # a non-contiguous target whose rows can't be merged without a copy still gets the sums
    x = ember.zeros(3, 4).T
    t = torch.zeros(3, 4).T
    for y in (x, t):
        y.index_put_((A([0, 0, 3]) if y is x else torch.tensor([0, 0, 3]),),
                     (ember.ones(3) if y is x else torch.ones(3)), accumulate=True)
    np.testing.assert_array_equal(x.numpy(), t.numpy())


# ----------------------------------------------------------------------------- masked ops, where

@pytest.mark.parametrize("mshape", [(3, 4), (4,), (3, 1), (2, 3, 4)])
def test_masked_fill(mshape, device):
    m = rng.random(mshape) > 0.4
    check_op(lambda x, m: ember.masked_fill(x, m, 2.5), lambda x, m: torch.masked_fill(x, m, 2.5),
             [(3, 4), Const(m)], device=device, noncontig=True)
    check_op(lambda x, m, v: x.masked_fill(m, v), lambda x, m, v: x.masked_fill(m, v),
             [(3, 4), Const(m), ()], device=device)


def test_masked_fill_inplace_and_dtypes(device):
    m = rng.random((3, 4)) > 0.4
    check_op(lambda x, m, v: (x * 1).masked_fill_(m, v),
             lambda x, m, v: x.clone().masked_fill_(m, v), [(3, 4), Const(m), ()], device=device,
             gradcheck=False)
    a = np.arange(12).reshape(3, 4)
    for val in [7, 2.9, True]:
        e = ember.tensor(a, device=device).masked_fill(ember.tensor(m, device=device), val)
        t = torch.from_numpy(a).masked_fill(torch.from_numpy(m), val)
        assert e.dtype == ember.int64
        np.testing.assert_array_equal(e.cpu().numpy(), t.numpy())
    x = ember.tensor(a, device=device)
    x.masked_fill_(ember.tensor(m[0], device=device), -1)
    np.testing.assert_array_equal(x.cpu().numpy(), np.where(m[0], -1, a))


@pytest.mark.parametrize("xshape,mshape", [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (2, 4)),
                                           ((3, 4), ())])
def test_masked_select(xshape, mshape, device):
    m = rng.random(mshape) > 0.4
    check_op(lambda x, m: ember.masked_select(x, m), lambda x, m: torch.masked_select(x, m),
             [xshape, Const(np.asarray(m))], device=device, noncontig=True)


@pytest.mark.parametrize("mshape,sshape", [((3, 4), (12,)), ((4,), (3, 5)), ((3, 1), (14,))])
def test_masked_scatter(mshape, sshape, device):
    m = rng.random(mshape) > 0.4
    check_op(lambda x, m, s: ember.masked_scatter(x, m, s),
             lambda x, m, s: torch.masked_scatter(x, m, s), [(3, 4), Const(m), sshape],
             device=device, noncontig=True)
    check_op(lambda x, m, s: (x * 1).masked_scatter_(m, s),
             lambda x, m, s: x.clone().masked_scatter_(m, s), [(3, 4), Const(m), sshape],
             device=device, gradcheck=False)


@pytest.mark.parametrize("cshape,xshape,yshape", [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), (3, 4)),
                                                  ((4,), (3, 4), ()), ((0, 4), (4,), (1, 4))])
def test_where(cshape, xshape, yshape, device):
    c = rng.random(cshape) > 0.5
    check_op(lambda c, x, y: ember.where(c, x, y), lambda c, x, y: torch.where(c, x, y),
             [Const(c), xshape, yshape], device=device, noncontig=True)
    check_op(lambda c, x, y: x.where(c, y), lambda c, x, y: x.where(c, y),
             [Const(c), xshape, yshape], device=device, gradcheck=False)


def test_where_scalars_and_dtypes(device):
    c = rng.random((2, 3)) > 0.5
    ec, tc = ember.tensor(c, device=device), torch.from_numpy(c)
    for a, b in [(1.0, 0), (1, 0), (2, 0.5), (True, False)]:
        e, t = ember.where(ec, a, b), torch.where(tc, a, b)
        assert ember.dtypes.name(e.dtype) == str(t.dtype).replace("torch.", "")
        np.testing.assert_array_equal(e.cpu().numpy(), t.numpy())
    check_op(lambda c, x: ember.where(c, x, 0.0), lambda c, x: torch.where(c, x, 0.0),
             [Const(c), (2, 3)], device=device)
    check_op(lambda c, y: ember.where(c, 2, y), lambda c, y: torch.where(c, 2, y),
             [Const(c), (3,)], device=device)
    xi = np.arange(6).reshape(2, 3)
    e = ember.where(ec, ember.tensor(xi, device=device), 0.5)
    assert e.dtype == ember.float32
    np.testing.assert_array_equal(e.cpu().numpy(), torch.where(tc, torch.from_numpy(xi), 0.5))
    _err(lambda: ember.where(ember.ones(2), 1.0, 0.0), RuntimeError,
         "where expected condition to be a boolean tensor")


@pytest.mark.parametrize("a", [A([[1, 0, 2], [0, 0, 3]]), A([0.0, 1.5, 0.0, -1.0]), A(5), A(0),
                               np.zeros((2, 0)), A([[True, False]]), rng.random((2, 2, 3)) > 0.5])
def test_nonzero_argwhere(a, device):
    x, t = ember.tensor(a, device=device), torch.from_numpy(a)
    for e, r in [(ember.nonzero(x), torch.nonzero(t)), (x.argwhere(), torch.argwhere(t))]:
        assert e.dtype == ember.int64 and e.shape == tuple(r.shape)
        np.testing.assert_array_equal(e.cpu().numpy(), r.numpy())
    et, rt = x.nonzero(as_tuple=True), torch.nonzero(t, as_tuple=True)
    assert len(et) == len(rt)
    for e, r in zip(et, rt):
        np.testing.assert_array_equal(e.cpu().numpy(), r.numpy())
    if a.ndim and a.dtype == bool:
        for e, r in zip(ember.where(x), torch.where(t)):
            np.testing.assert_array_equal(e.cpu().numpy(), r.numpy())


# ----------------------------------------------------------------------------- take / put

@pytest.mark.parametrize("idx", [A([0, 11, -1, 11]), A([[3, -12], [5, 5]]), A([[4]]),
                                 A([], dtype=np.int64)])
def test_take(idx, device):
    check_op(lambda x, i: ember.take(x, i), lambda x, i: torch.take(x, i), [(3, 4), Const(idx)],
             device=device, noncontig=True)


@pytest.mark.parametrize("idx,dim", [(A([[0], [3], [1]]), 1), (A([[2, 0, 0, 1]]), 0),
                                     (A([[0, -1], [1, 1], [3, 3]]), -1), (A([[0, 5], [11, 2]]), None),
                                     (A([[1, 0]]), 1)])
def test_take_along_dim(idx, dim, device):
    check_op(lambda x, i: ember.take_along_dim(x, i, dim),
             lambda x, i: torch.take_along_dim(x, i, dim), [(3, 4), Const(idx)], device=device,
             noncontig=dim is not None)  # torch's dim=None path fails on non-contiguous input
    if dim is not None:
        check_op(lambda x, i: x.take_along_dim(i, dim=dim),
                 lambda x, i: x.take_along_dim(i, dim=dim), [(3, 4), Const(idx)], device=device,
                 gradcheck=False)


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate, device):
    idx = A([[0, -1], [5, 7]]) if not accumulate else A([[0, -1], [5, 0]])
    check_op(lambda x, i, s: ember.put(x, i, s, accumulate),
             lambda x, i, s: torch.put(x, i, s, accumulate), [(3, 4), Const(idx), (2, 2)],
             device=device, noncontig=True)
    check_op(lambda x, i, s: (x * 1).put_(i, s, accumulate),
             lambda x, i, s: x.clone().put_(i, s, accumulate), [(3, 4), Const(idx), (4,)],
             device=device, gradcheck=False)


# ----------------------------------------------------------------------------- in-place scatter

@pytest.mark.parametrize("op", ["scatter_", "scatter_add_", "scatter_reduce_"])
def test_inplace_scatters(op, device):
    idx = PERM24 if op == "scatter_" else IDX24
    extra = ("amax",) if op == "scatter_reduce_" else ()
    check_op(lambda x, i, s: getattr(x * 1, op)(1, i, s, *extra),
             lambda x, i, s: getattr(x.clone(), op)(1, i, s, *extra), [(2, 4), Const(idx), (2, 4)],
             device=device, gradcheck=False)
    base = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    x, t = ember.tensor(base, device=device), torch.from_numpy(base.copy())
    getattr(x, op)(1, ember.tensor(idx, device=device), x * 2, *extra)
    getattr(t, op)(1, torch.from_numpy(idx), t * 2, *extra)
    np.testing.assert_array_equal(x.cpu().numpy(), t.numpy())
    assert x._version_count == 1


def test_inplace_index_ops_no_grad_fast_path():
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x, t = ember.tensor(a), torch.from_numpy(a.copy())
    i, ti = ember.tensor([2, 0, 2]), torch.tensor([2, 0, 2])
    x.index_add_(0, i, ember.ones(3, 4), alpha=2)
    t.index_add_(0, ti, torch.ones(3, 4), alpha=2)
    x.index_fill_(1, ember.tensor([-1]), 7.0)
    t.index_fill_(1, torch.tensor([-1]), 7.0)
    x.index_copy_(1, ember.tensor([0]), ember.zeros(3, 1))
    t.index_copy_(1, torch.tensor([0]), torch.zeros(3, 1))
    x.masked_fill_(ember.tensor(MASK34), ember.tensor(-2.0))
    t.masked_fill_(torch.from_numpy(MASK34), torch.tensor(-2.0))
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    assert x._version_count == 4
    # writing through a view updates the base
    y = ember.zeros(3, 4)
    y[1].index_add_(0, ember.tensor([0, 0]), ember.ones(2))
    assert y[1, 0].item() == 2.0


# ----------------------------------------------------------------------------- errors

def test_op_errors():
    x = ember.zeros(2, 3)
    i = ember.tensor([[0, 1, 2], [2, 1, 3]])
    _err(lambda: x.gather(1, i), IndexError,
         "index 3 is out of bounds for dimension 1 with size 3")
    _err(lambda: x.gather(1, ember.tensor([[-1]])), IndexError,
         "index -1 is out of bounds for dimension 1 with size 3")
    _err(lambda: x.gather(2, ember.tensor([[0]])), IndexError, r"range of \[-2, 1\]")
    _err(lambda: x.gather(1, ember.tensor([0])), RuntimeError, "same number of dimensions")
    _err(lambda: x.gather(1, ember.tensor([[0.0]])), RuntimeError, "int64 or int32")
    _err(lambda: x.gather(1, ember.zeros(3, 3, dtype=ember.int64)), RuntimeError,
         "no larger than self")
    _err(lambda: x.scatter(1, ember.tensor([[0]]), ember.ones(1, 1, dtype=ember.float64)),
         RuntimeError, "self.dtype to be equal to src.dtype")
    _err(lambda: x.scatter(1, ember.tensor([[0]]), 1.0, reduce="max"), RuntimeError,
         "either add or multiply")
    _err(lambda: x.scatter_reduce(1, ember.tensor([[0]]), x, "median"), RuntimeError,
         "sum, prod, mean, amax or amin")
    _err(lambda: x.index_select(0, ember.tensor([2])), IndexError,
         "index 2 is out of bounds for dimension 0 with size 2")
    _err(lambda: x.index_select(0, ember.tensor([[0]])), IndexError, "vector")
    _err(lambda: x.index_add(1, ember.tensor([0]), ember.ones(2, 2)), RuntimeError,
         "expected source of shape")
    _err(lambda: x.index_add(1, ember.tensor([0]), ember.ones(2, 1, dtype=ember.float64)),
         RuntimeError, "same scalar type")
    _err(lambda: x.index_fill(1, ember.tensor([0]), ember.ones(1)), RuntimeError,
         "0-dimensional value tensor")
    _err(lambda: x.masked_fill(ember.ones(2, 3), 0.0), RuntimeError, "boolean masks")
    _err(lambda: x.masked_fill(ember.ones(3, dtype=ember.bool), ember.ones(2)), RuntimeError,
         "0-dimensional value tensor")
    _err(lambda: x.masked_fill(ember.ones(4, dtype=ember.bool), 0.0), RuntimeError,
         r"size of tensor a \(3\) must match the size of tensor b \(4\)")
    _err(lambda: ember.ones(3).masked_scatter(ember.ones(3, dtype=ember.bool), ember.ones(2)),
         RuntimeError, "at least as many")
    _err(lambda: x.take(ember.tensor([6])), IndexError,
         "index 6 is out of bounds for dimension 0 with size 6")
    _err(lambda: x.put(ember.tensor([0, 1]), ember.ones(3)), IndexError,
         "same number of elements")
    _err(lambda: ember.take_along_dim(x, ember.tensor([0]), 1), RuntimeError,
         "same number of dimensions")


# ----------------------------------------------------------------------------- the add-at primitive

def _ref_add_at(out, axis, idx, vals):
    out = out.copy()
    np.add.at(out, (slice(None),) * axis + (idx,), vals)  # reference only, in tests
    return out


@pytest.mark.parametrize("n,m,axis,shape_rest,dtype", [
    (10, 40, 0, (), np.float32),     # dense: bincount
    (1000, 7, 0, (), np.float32),    # sparse: sort + reduceat
    (6, 20, 0, (3,), np.float32),    # rows
    (5, 9, 1, (2,), np.float64),     # along a later axis
    (8, 30, 0, (), np.int64),        # integers stay exact
    (50, 2000, 0, (3,), np.float32),  # sorted passes, then few long runs of repeats
    (700, 14000, 0, (2,), np.float64),  # sorted passes, then many short runs (reduceat)
    (4, 0, 0, (2,), np.float32),     # no indices
])
def test_add_at_matches_reference(n, m, axis, shape_rest, dtype):
    r = np.random.default_rng(n + m)
    idx = r.integers(0, n, m)
    oshape = shape_rest[:axis] + (n,) + shape_rest[axis:]
    vshape = shape_rest[:axis] + (m,) + shape_rest[axis:]
    out = (r.standard_normal(oshape) * 10).astype(dtype)
    vals = (r.standard_normal(vshape) * 10).astype(dtype)
    want = _ref_add_at(out, axis, idx, vals)
    got = out.copy()
    IX._add_at(got, axis, idx, vals)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    # also into a non-contiguous view
    big = np.zeros(oshape[:-1] + (2 * oshape[-1],), dtype)
    view = big[..., ::2]
    view[...] = out
    IX._add_at(view, axis, idx, vals)
    np.testing.assert_allclose(view, want, rtol=1e-5, atol=1e-4)


def test_add_at_keeps_inf_and_nan_local():
    for n, m in [(4, 3), (3000, 5), (8, 200)]:  # one-hot, sorted and dense paths
        idx = np.arange(m) % n
        vals = np.ones((m, 2), np.float32) if n != 8 else np.ones(m, np.float32)
        vals[0] = np.inf
        out = np.zeros((n, 2) if n != 8 else n, np.float32)
        IX._add_at(out, 0, idx, vals)
        assert np.isinf(out[0]).all() and np.isfinite(out[1:]).all()


def test_ops_on_0d_tensors():
    x, t = ember.tensor(5.0), torch.tensor(5.0)
    i0, ti0 = ember.tensor(0), torch.tensor(0)
    pairs = [(x.gather(0, i0), t.gather(0, ti0)),
             (x.index_select(0, ember.tensor([0])), t.index_select(0, torch.tensor([0]))),
             (x.scatter(0, i0, ember.tensor(2.0)), t.scatter(0, ti0, torch.tensor(2.0))),
             (x.scatter_add(0, i0, ember.tensor(2.0)), t.scatter_add(0, ti0, torch.tensor(2.0))),
             (x.index_fill(0, ember.tensor([0]), 1.0), t.index_fill(0, torch.tensor([0]), 1.0)),
             (x.index_add(0, ember.tensor([0]), ember.tensor(2.0)),
              t.index_add(0, torch.tensor([0]), torch.tensor(2.0))),
             (x.take(ember.tensor([0, 0])), t.take(torch.tensor([0, 0]))),
             (x.masked_fill(ember.tensor(True), 1.0), t.masked_fill(torch.tensor(True), 1.0)),
             (x.masked_select(ember.tensor(True)), t.masked_select(torch.tensor(True))),
             (x[None], t[None]), (x[...], t[...]), (x[()], t[()])]
    for e, r in pairs:
        assert e.shape == tuple(r.shape)
        np.testing.assert_array_equal(e.numpy(), r.numpy())


def test_setitem_value_kinds():
    x, t = ember.zeros(3, 4), torch.zeros(3, 4)
    for key, val in [(0, [1.0, 2.0, 3.0, 4.0]), ((slice(None), 1), np.arange(3.0)),
                     ((1, 1), ember.tensor(9.0, dtype=ember.float64)), (2, np.float32(7.0))]:
        x[key] = val
        t[key] = torch.as_tensor(np.asarray(val.numpy() if isinstance(val, ember.Tensor)
                                            else val))
    np.testing.assert_array_equal(x.numpy(), t.numpy())


@pytest.mark.cuda
def test_add_at_and_reduce_at_cupy():
    import cupy

    r = np.random.default_rng(0)
    for dtype in [np.float32, np.float16, np.int64, np.int8, np.bool_]:
        idx = r.integers(0, 6, 30)
        out = np.zeros((6, 2), dtype)
        vals = (r.integers(0, 3, (30, 2))).astype(dtype)
        want = _ref_add_at(out, 0, idx, vals) if dtype != np.bool_ else \
            _ref_add_at(out.astype(np.int64), 0, idx, vals.astype(np.int64)) > 0
        got = cupy.asarray(out)
        IX._add_at(got, 0, cupy.asarray(idx), cupy.asarray(vals))
        np.testing.assert_allclose(got.get().astype(np.float64), want.astype(np.float64))
    for red, uf in [("prod", np.multiply), ("amax", np.maximum), ("amin", np.minimum)]:
        for dtype in [np.float32, np.float16, np.int32]:
            flat = r.integers(1, 4, 8).astype(dtype)
            lin = r.integers(0, 8, 20)
            vals = r.integers(1, 4, 20).astype(dtype)
            want = flat.copy()
            uf.at(want, lin, vals)  # reference only, in tests
            got = cupy.asarray(flat)
            IX._reduce_at(got, cupy.asarray(lin), cupy.asarray(vals), red)
            np.testing.assert_allclose(got.get().astype(np.float64), want.astype(np.float64))


def test_no_add_at_in_library():
    import inspect

    src = inspect.getsource(IX)
    assert "add.at(" not in src and ".at(" not in src
