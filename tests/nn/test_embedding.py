"""one_hot, embedding and embedding_bag against torch 2.13: forward, dense and row-sparse
table gradients, per-sample-weight gradients, double backward, in-place max_norm, errors."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from optest import Const, check_op

import ember
import ember.nn.functional as F

RNG = np.random.default_rng(0)
TABLE = RNG.standard_normal((12, 5)).astype(np.float32)


def _grad_np(t):
    g = t.grad
    if g is None:
        return None
    if g.is_sparse:
        g = g.to_dense()
    return g.numpy() if isinstance(g, ember.Tensor) else g.detach().numpy()


# ----------------------------------------------------------------------------- one_hot

def test_one_hot_matches_torch():
    x = np.array([[0, 3], [2, 1]])
    for nc in (-1, 4, 6):
        got = F.one_hot(ember.tensor(x), nc)
        want = TF.one_hot(torch.tensor(x), nc)
        assert got.dtype == ember.int64
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert F.one_hot(ember.tensor([], dtype=ember.int64), 4).shape == (0, 4)
    assert F.one_hot(ember.tensor(2), 3).tolist() == [0, 0, 1]


@pytest.mark.parametrize("args,msg", [
    (([1.0], -1), "only applicable to index tensor of type LongTensor"),
    (([-1], -1), "Class values must be non-negative"),
    (([3], 3), "Class values must be smaller than num_classes"),
    (([1], 0), "Class values must be smaller than num_classes"),
])
def test_one_hot_errors(args, msg):
    with pytest.raises(RuntimeError, match=msg):
        F.one_hot(ember.tensor(args[0]), args[1])
    with pytest.raises(RuntimeError, match="Can not infer total number of classes"):
        F.one_hot(ember.tensor([], dtype=ember.int64))


# ----------------------------------------------------------------------------- embedding

@pytest.mark.parametrize("ids", [[[1, 4, 4], [0, 11, 4]], [3], 7])
@pytest.mark.parametrize("padding_idx", [None, 4, -8])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("freq", [False, True])
def test_embedding_matches_torch(ids, padding_idx, sparse, freq):
    ew = ember.tensor(TABLE, requires_grad=True)
    tw = torch.tensor(TABLE, requires_grad=True)
    kw = dict(padding_idx=padding_idx, scale_grad_by_freq=freq)
    eo = F.embedding(ember.tensor(ids), ew, sparse=sparse, **kw)
    # torch refuses sparse + scale_grad_by_freq, and its sparse backward fails for 0-d ids:
    # its dense gradient is the reference there
    to = TF.embedding(torch.tensor(ids), tw, sparse=sparse and not freq and np.ndim(ids) > 0,
                      **kw)
    np.testing.assert_array_equal(eo.detach().numpy(), to.detach().numpy())
    g = RNG.standard_normal(to.shape).astype(np.float32)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    assert ew.grad.is_sparse == sparse
    np.testing.assert_allclose(_grad_np(ew), _grad_np(tw), rtol=1e-6, atol=1e-7)


def test_embedding_int32_ids_and_double_backward():
    ids = Const(np.array([[1, 1, 3], [5, 0, 1]], np.int32))
    check_op(lambda i, w: F.embedding(i, w, padding_idx=1, scale_grad_by_freq=True),
             lambda i, w: TF.embedding(i, w, padding_idx=1, scale_grad_by_freq=True),
             [ids, (6, 3)], gradcheck=False)  # padding/frequency: not the true gradient
    check_op(lambda i, w: F.embedding(i, w, sparse=True) * w.sum(),
             lambda i, w: TF.embedding(i, w) * w.sum(), [ids, (6, 3)])


def test_sparse_grads_accumulate_over_two_backwards():
    ew = ember.tensor(TABLE, requires_grad=True)
    tw = torch.tensor(TABLE, requires_grad=True)
    for ids in ([1, 2, 2], [[0, 2], [7, 7]]):
        F.embedding(ember.tensor(ids), ew, sparse=True).pow(2).sum().backward()
        TF.embedding(torch.tensor(ids), tw, sparse=True).pow(2).sum().backward()
    assert ew.grad.is_sparse and ew.grad.nnz() == 7
    np.testing.assert_allclose(_grad_np(ew), _grad_np(tw), rtol=1e-6)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
def test_embedding_max_norm_renormalises_weight_in_place(norm_type):
    w0 = TABLE * 3
    ew = ember.tensor(w0, requires_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    ids = [[0, 2, 2], [5, 0, 9]]
    v0 = ew._version_count
    eo = F.embedding(ember.tensor(ids), ew, max_norm=1.5, norm_type=norm_type)
    to = TF.embedding(torch.tensor(ids), tw, max_norm=1.5, norm_type=norm_type)
    assert ew._version_count > v0
    np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-6)
    untouched = [r for r in range(12) if r not in (0, 2, 5, 9)]
    np.testing.assert_array_equal(ew.detach().numpy()[untouched], w0[untouched])
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(_grad_np(ew), _grad_np(tw))


def test_embedding_errors():
    w = ember.ones(10, 3)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ember.tensor([10]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ember.tensor([-1]), w)
    with pytest.raises(RuntimeError, match="one of the following scalar types: Long, Int"):
        F.embedding(ember.tensor([1.0]), w)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(ember.tensor([1]), ember.ones(3))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(ember.tensor([1]), w, padding_idx=10)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(ember.tensor([1]), w, padding_idx=-11)


# ----------------------------------------------------------------------------- embedding_bag

LAYOUTS = {
    # name: (input, offsets, include_last_offset)
    "2d": ([[1, 4, 4], [0, 11, 4], [3, 3, 3], [4, 4, 4]], None, False),
    "offsets": ([1, 2, 4, 5, 4, 3, 2, 9, 4], [0, 2, 2, 5, 9], False),   # empty bags
    "last_offset": ([1, 2, 4, 5, 4, 3, 2, 9, 4], [0, 0, 3, 3, 6, 9], True),
    "one_bag": ([6, 4, 4, 10], [0], False),
}
CASES = [(lay, mode, psw, pad, sparse)
         for lay, mode, psw, pad, sparse in itertools.product(
             LAYOUTS, ("sum", "mean", "max"), (False, True), (None, 4), (False, True))
         if not (psw and mode != "sum") and not (sparse and mode == "max")]


@pytest.mark.parametrize("layout,mode,psw,pad,sparse", CASES)
def test_embedding_bag_matches_torch(layout, mode, psw, pad, sparse):
    ids, offs, ilo = LAYOUTS[layout]
    rng = np.random.default_rng(len(ids))
    ew = ember.tensor(TABLE, requires_grad=True)
    tw = torch.tensor(TABLE, requires_grad=True)
    kw = dict(mode=mode, sparse=sparse, include_last_offset=ilo, padding_idx=pad)
    eargs = [ember.tensor(ids), ew, None if offs is None else ember.tensor(offs)]
    targs = [torch.tensor(ids), tw, None if offs is None else torch.tensor(offs)]
    ep = tp = None
    if psw:
        p = rng.uniform(0.5, 2.0, np.shape(ids)).astype(np.float32)
        ep, tp = ember.tensor(p, requires_grad=True), torch.tensor(p, requires_grad=True)
    eo = F.embedding_bag(*eargs, per_sample_weights=ep, **kw)
    to = TF.embedding_bag(*targs, per_sample_weights=tp, **kw)
    assert eo.shape == tuple(to.shape) and eo.dtype == ember.float32
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(to.shape).astype(np.float32)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    assert ew.grad.is_sparse == sparse
    np.testing.assert_allclose(_grad_np(ew), _grad_np(tw), rtol=1e-5, atol=1e-6)
    if psw:
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6)


def _bag_reference(ids, offs, ilo, mode, pad, w, psw=None):
    """The documented semantics as a loop over the bags in torch ops (twice differentiable,
    which torch's own embedding_bag is not)."""
    ids, offs = [int(i) for i in ids], [int(o) for o in offs]
    ends = offs[1:] if ilo else offs[1:] + [len(ids)]
    out = []
    for a, b in zip(offs[:len(ends)], ends):
        sel = [k for k in range(a, b) if ids[k] != pad]
        rows = w[[ids[k] for k in sel]]
        if psw is not None:
            rows = rows * psw[sel].unsqueeze(-1)
        if not sel:
            out.append(w.sum(0) * 0)
        elif mode == "sum":
            out.append(rows.sum(0))
        elif mode == "mean":
            out.append(rows.mean(0))
        else:
            out.append(rows.max(0).values)
    return torch.stack(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_double_backward_and_gradcheck(mode):
    ids, offs = np.array([1, 4, 4, 0, 3, 3, 2]), np.array([0, 3, 3, 5])

    def ef(w):
        return F.embedding_bag(ember.tensor(ids), w, ember.tensor(offs), mode=mode,
                               padding_idx=3) * w.sum()

    def tf(w):
        return _bag_reference(ids, offs, False, mode, 3, w) * w.sum()
    check_op(ef, tf, [(6, 3)])


def test_embedding_bag_per_sample_weights_double_backward():
    ids = np.array([[1, 4, 4], [0, 5, 2]])
    check_op(lambda w, p: F.embedding_bag(ember.tensor(ids), w, mode="sum",
                                          per_sample_weights=p) ** 2,
             lambda w, p: _bag_reference(ids.ravel(), [0, 3], False, "sum", None, w,
                                         p.reshape(-1)) ** 2,
             [(6, 3), (2, 3)])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_trailing_ids_belong_to_no_bag(mode):
    # with include_last_offset and offsets[-1] < len(input) torch's CPU kernel reads ids
    # past the last bag in mean/max and its backward writes garbage; ember follows the
    # documented rule (the last offset closes the last bag)
    ids, offs = [1, 2, 4, 5, 4, 3, 2, 9], [0, 2, 2, 6]
    ew = ember.tensor(TABLE, requires_grad=True)
    tw = torch.tensor(TABLE, requires_grad=True)
    eo = F.embedding_bag(ember.tensor(ids), ew, ember.tensor(offs), mode=mode,
                         include_last_offset=True)
    to = _bag_reference(ids, offs, True, mode, None, tw)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-6)
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(_grad_np(ew), _grad_np(tw), rtol=1e-6)
    assert not _grad_np(ew)[9].any()


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("sparse", [False, True])
def test_embedding_bag_scale_grad_by_freq(mode, sparse):
    # torch 2.13's CPU embedding_bag divides by the wrong id's count (pytorch#190063), and
    # refuses sparse + scale_grad_by_freq; the reference is the documented rule: each id's
    # gradient divided by its count in the batch (as F.embedding does)
    ids, offs = [5, 5, 5, 5, 2, 7, 1, 1], [0, 3, 6]
    ew = ember.tensor(TABLE, requires_grad=True)
    eo = F.embedding_bag(ember.tensor(ids), ew, ember.tensor(offs), mode=mode,
                         scale_grad_by_freq=True, sparse=sparse)
    g = np.random.default_rng(1).standard_normal(eo.shape).astype(np.float32)
    eo.backward(ember.tensor(g))
    want = np.zeros_like(TABLE)
    counts = np.bincount(ids, minlength=12)
    for b, (a, e) in enumerate(zip(offs, offs[1:] + [len(ids)])):
        for i in ids[a:e]:
            want[i] += g[b] / (e - a if mode == "mean" else 1) / counts[i]
    np.testing.assert_allclose(_grad_np(ew), want, rtol=1e-5, atol=1e-7)
    # where all ids of the batch occur equally often, torch agrees
    tw = torch.tensor(TABLE, requires_grad=True)
    for w, lib, f in ((ew, ember, F), (tw, torch, TF)):
        w.grad = None
        f.embedding_bag(lib.tensor([3, 3, 6, 6]), w, lib.tensor([0, 1]), mode=mode,
                        scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(_grad_np(ew), _grad_np(tw), rtol=1e-6)


def test_embedding_bag_max_ties_go_to_the_first():
    w = np.array([[1.0, 5.0], [1.0, 2.0], [3.0, 5.0]], np.float32)
    ew, tw = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    F.embedding_bag(ember.tensor([0, 1, 2]), ew, ember.tensor([0]), mode="max").sum().backward()
    TF.embedding_bag(torch.tensor([0, 1, 2]), tw, torch.tensor([0]), mode="max").sum().backward()
    np.testing.assert_array_equal(ew.grad.numpy(), tw.grad.numpy())


def test_embedding_bag_max_norm_and_empty_input():
    w0 = TABLE * 3
    ew, tw = ember.tensor(w0), torch.tensor(w0)
    F.embedding_bag(ember.tensor([0, 0, 2, 3]), ew, ember.tensor([0, 2]), max_norm=1.0,
                    padding_idx=3)
    TF.embedding_bag(torch.tensor([0, 0, 2, 3]), tw, torch.tensor([0, 2]), max_norm=1.0,
                     padding_idx=3)
    np.testing.assert_allclose(ew.numpy(), tw.numpy(), rtol=1e-6)
    for mode in ("sum", "mean", "max"):
        out = F.embedding_bag(ember.tensor([], dtype=ember.int64), ember.tensor(TABLE),
                              ember.tensor([0, 0]), mode=mode)
        assert out.shape == (2, 5) and not out.numpy().any()
    assert F.embedding_bag(ember.tensor([1, 2]), ember.tensor(TABLE),
                           ember.tensor([], dtype=ember.int64)).shape == (0, 5)


def test_embedding_bag_errors():
    w = ember.ones(10, 3)
    i, o = ember.tensor([1, 2]), ember.tensor([0])
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(ember.tensor([[1, 2]]), w, o)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(i, w)
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor"):
        F.embedding_bag(ember.tensor([[[1]]]), w)
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(i, w, o, mode="min")
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        F.embedding_bag(i, w, o, mode="max", sparse=True)
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient"):
        F.embedding_bag(i, w, o, mode="max", scale_grad_by_freq=True)
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(i, w, o, mode="mean", per_sample_weights=ember.ones(2))
    with pytest.raises(ValueError, match="must have the same shape as the input"):
        F.embedding_bag(i, w, o, mode="sum", per_sample_weights=ember.ones(3))
    with pytest.raises(RuntimeError, match="does not equal float64"):
        F.embedding_bag(i, w, o, mode="sum", per_sample_weights=ember.ones(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"offsets\[0\] has to be 0"):
        F.embedding_bag(i, w, ember.tensor([1]))
    with pytest.raises(RuntimeError, match=r"offsets\[-1\] can not be greater than input's len"):
        F.embedding_bag(i, w, ember.tensor([0, 3]))
    with pytest.raises(RuntimeError, match="Index 1 of input takes value 10 which is not in"):
        F.embedding_bag(ember.tensor([1, 10]), w, o)
    with pytest.raises(RuntimeError, match="within the number of embeddings, -10 through 9"):
        F.embedding_bag(i, w, o, padding_idx=10)
    with pytest.raises(ValueError, match="weight has to be a 2D Tensor"):
        F.embedding_bag(i, ember.ones(3), o)
    with pytest.raises(RuntimeError, match="scalar types: Long, Int"):
        F.embedding_bag(ember.tensor([1.0]), w, o)


def test_embedding_bag_old_argument_order_warns():
    with pytest.warns(UserWarning, match="Argument order of nn.functional.embedding_bag"):
        out = F.embedding_bag(ember.tensor(TABLE), ember.tensor([1, 2]), ember.tensor([0]))
    np.testing.assert_allclose(out.numpy()[0], TABLE[[1, 2]].mean(0), rtol=1e-6)


def test_embedding_bag_sparse_grad_is_dense_for_non_leaf_table():
    w = ember.tensor(TABLE, requires_grad=True)
    h = w * 2
    F.embedding_bag(ember.tensor([1, 1, 3]), h, ember.tensor([0]), sparse=True).sum().backward()
    assert not w.grad.is_sparse
    want = np.zeros_like(TABLE)
    want[1] = 2 * 2 / 3
    want[3] = 2 / 3
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_many_distinct_bag_lengths(mode):
    # more than 16 distinct lengths: bags are bucketed (padded) by a sqrt(2) ladder
    rng = np.random.default_rng(5)
    lens = rng.permutation(np.arange(0, 41))
    ids = rng.integers(0, 12, int(lens.sum()))
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    psw = rng.uniform(0.5, 1.5, ids.shape).astype(np.float32) if mode == "sum" else None
    ew = ember.tensor(TABLE, requires_grad=True)
    tw = torch.tensor(TABLE, requires_grad=True)
    eo = F.embedding_bag(ember.tensor(ids), ew, ember.tensor(offs), mode=mode, padding_idx=2,
                         per_sample_weights=None if psw is None else ember.tensor(psw))
    to = TF.embedding_bag(torch.tensor(ids), tw, torch.tensor(offs), mode=mode, padding_idx=2,
                          per_sample_weights=None if psw is None else torch.tensor(psw))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(to.shape).astype(np.float32)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(_grad_np(ew), _grad_np(tw), rtol=1e-5, atol=1e-5)
