"""ember.jagged.JaggedTensor: construction, validation, views, conversions, cached maps."""
import numpy as np
import pytest
import torch

import ember
from ember.jagged import JaggedTensor, as_jagged, jagged_to_padded, padded_to_jagged

LENGTHS = [3, 0, 1, 4, 0, 2]


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def _seqs(lengths, feat=(), dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n,) + feat).astype(dtype) for n in lengths]


def _jt(lengths=LENGTHS, feat=(), dtype=np.float32, device="cpu", grad=False):
    seqs = _seqs(lengths, feat, dtype)
    values = ember.tensor(np.concatenate(seqs), device=device, requires_grad=grad)
    return JaggedTensor(values, lengths=lengths), seqs


# ------------------------------------------------------------------------------ construction

def test_offsets_lengths_agree(device):
    v = ember.arange(10.0, device=device)
    a = JaggedTensor(v, offsets=[0, 3, 3, 4, 8, 8, 10])
    b = JaggedTensor(v, lengths=ember.tensor([3, 0, 1, 4, 0, 2]))
    c = JaggedTensor(v, offsets=np.array([0, 3, 3, 4, 8, 8, 10], np.int32), lengths=LENGTHS)
    for jt in (a, b, c):
        assert _np(jt.offsets()).tolist() == [0, 3, 3, 4, 8, 8, 10]
        assert _np(jt.lengths()).tolist() == LENGTHS
        assert jt.offsets().dtype == ember.int64 and jt.lengths().dtype == ember.int64
        assert jt.offsets().device == v.device
        assert jt.batch_size == len(jt) == 6
        assert jt.max_length == 4 and jt.numel() == 10
        assert jt.values() is v
        assert jt.dtype == ember.float32 and jt.device == v.device and jt.feature_shape == ()


def test_offsets_are_copied_on_construction():
    off = np.array([0, 2, 5])
    jt = JaggedTensor(ember.zeros(5), offsets=off)
    off[1] = 4
    assert _np(jt.offsets()).tolist() == [0, 2, 5]


@pytest.mark.parametrize("kw, msg", [
    (dict(offsets=[1, 3, 10]), "start at 0"),
    (dict(offsets=[0, 6, 4, 10]), r"non-decreasing, got offsets\[1\] = 6 > offsets\[2\] = 4"),
    (dict(offsets=[0, 3, 9]), r"offsets\[-1\] = 9 must equal the number of values \(10"),
    (dict(lengths=[3, 3, 3]), "lengths sum to 9 but there are 10 values"),
    (dict(lengths=[5, -1, 6]), r"lengths must be >= 0, got lengths\[1\] = -1"),
    (dict(offsets=[0, 4, 10], lengths=[5, 5]), "lengths and offsets disagree"),
    (dict(offsets=[[0, 10]]), "must be 1-D"),
    (dict(offsets=[]), "batch_size \\+ 1 >= 1"),
])
def test_validation_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        JaggedTensor(ember.zeros(10, 2), **kw)


def test_validation_type_errors():
    with pytest.raises(TypeError, match="give offsets or lengths"):
        JaggedTensor(ember.zeros(3))
    with pytest.raises(TypeError, match="must hold integers"):
        JaggedTensor(ember.zeros(3), offsets=[0.0, 3.0])
    with pytest.raises(ValueError, match="0-d"):
        JaggedTensor(ember.tensor(1.0), offsets=[0, 1])


def test_validate_false_skips_checks():
    jt = JaggedTensor(ember.zeros(4), offsets=[0, 1, 4], validate=False)
    assert _np(jt.lengths()).tolist() == [1, 3]


def test_empty_batch_and_all_empty():
    jt = JaggedTensor(ember.zeros(0, 3), offsets=[0])
    assert jt.batch_size == 0 and jt.max_length == 0 and jt.to_padded().shape == (0, 0, 3)
    assert jt.unbind() == () and jt.sum().shape == (0, 3)
    jt = JaggedTensor(ember.zeros(0, 3), lengths=[0, 0])
    assert jt.to_padded().shape == (2, 0, 3)
    assert _np(jt.sum()).tolist() == [[0.0] * 3] * 2


def test_from_tensors_and_as_jagged_gradients():
    seqs = _seqs([2, 0, 3], (4,))
    ts = [ember.tensor(s, requires_grad=True) for s in seqs]
    jt = JaggedTensor.from_tensors(ts)
    assert _np(jt.lengths()).tolist() == [2, 0, 3] and jt.feature_shape == (4,)
    np.testing.assert_array_equal(_np(jt.values()), np.concatenate(seqs))
    (jt.values() * ember.arange(5.0)[:, None]).sum().backward()
    np.testing.assert_array_equal(_np(ts[2].grad), np.broadcast_to([[2.0], [3.0], [4.0]], (3, 4)))
    assert ts[1].grad.shape == (0, 4)


def test_as_jagged_from_lists():
    jt = as_jagged([[1, 2, 3], [], [4]])
    assert jt.dtype == ember.int64 and _np(jt.values()).tolist() == [1, 2, 3, 4]
    assert _np(jt.lengths()).tolist() == [3, 0, 1]
    jt2 = as_jagged([[[1.0, 2.0]], [], [[3.0, 4.0], [5.0, 6.0]]])
    assert jt2.feature_shape == (2,) and jt2.dtype == ember.float32
    assert as_jagged(jt2) is jt2
    assert as_jagged(jt2, dtype=ember.float64).dtype == ember.float64
    assert as_jagged([np.ones(2)], dtype=ember.float32).dtype == ember.float32


def test_from_tensors_errors():
    with pytest.raises(ValueError, match="at least one"):
        JaggedTensor.from_tensors([])
    with pytest.raises(ValueError, match=r"tensor 1 has shape \(2, 3\)"):
        JaggedTensor.from_tensors([ember.zeros(2, 4), ember.zeros(2, 3)])
    with pytest.raises(ValueError, match="dtype"):
        JaggedTensor.from_tensors([ember.zeros(2), ember.zeros(2, dtype=ember.float64)])
    with pytest.raises(ValueError, match="0-d"):
        JaggedTensor.from_tensors([ember.zeros(2), ember.tensor(1.0)])


# ------------------------------------------------------------------------------ sequences

def test_getitem_unbind_are_views(device):
    jt, seqs = _jt(feat=(2,), device=device)
    for i, s in enumerate(seqs):
        np.testing.assert_array_equal(_np(jt[i]), s)
        np.testing.assert_array_equal(_np(jt[i - len(seqs)]), s)
    for a, s in zip(jt.unbind(), seqs):
        np.testing.assert_array_equal(_np(a), s)
    assert [tuple(t.shape) for t in jt] == [(n, 2) for n in LENGTHS]
    if device == "cpu":  # views share memory with the values
        assert np.shares_memory(jt[3].numpy(), jt.values().numpy())
    with pytest.raises(IndexError, match="out of range"):
        jt[6]
    with pytest.raises(TypeError, match="integers or slices"):
        jt[[0, 1]]


def test_slice():
    jt, seqs = _jt(feat=(2,))
    sub = jt[2:5]
    assert _np(sub.lengths()).tolist() == [1, 4, 0] and _np(sub.offsets()).tolist() == [0, 1, 5, 5]
    for a, s in zip(sub.unbind(), seqs[2:5]):
        np.testing.assert_array_equal(_np(a), s)
    assert jt[4:2].batch_size == 0
    with pytest.raises(IndexError, match="step 1"):
        jt[::2]


def test_getitem_gradient():
    jt, _ = _jt(feat=(3,), grad=True)
    (jt[3].sum() * 2 + jt[0].sum()).backward()
    g = _np(jt.values().grad)
    assert (g[:3] == 1).all() and (g[3] == 0).all() and (g[4:8] == 2).all() and (g[8:] == 0).all()


def test_apply_keeps_layout_and_grad():
    jt, _ = _jt(feat=(4,), grad=True)
    out = jt.apply(ember.nn.functional.gelu)
    assert out._layout is jt._layout and isinstance(out, JaggedTensor)
    tv = torch.tensor(_np(jt.values()), requires_grad=True)
    np.testing.assert_allclose(_np(out.values()), torch.nn.functional.gelu(tv).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    out.values().sum().backward()
    torch.nn.functional.gelu(tv).sum().backward()
    np.testing.assert_allclose(_np(jt.values().grad), tv.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="10 rows"):
        jt.apply(lambda v: v.sum(0))


def test_to_dtype_and_device_and_detach():
    jt, _ = _jt(feat=(2,), grad=True)
    d = jt.to(ember.float64)
    assert d.dtype == ember.float64 and d._layout is jt._layout
    assert jt.to("cpu") is jt
    det = jt.detach()
    assert not det.requires_grad and det._layout is jt._layout and jt.requires_grad


@pytest.mark.cuda
def test_to_cuda_and_back():
    jt, seqs = _jt(feat=(2,))
    g = jt.to("cuda")
    assert g.device.type == "cuda" and g.offsets().device.type == "cuda"
    np.testing.assert_array_equal(_np(g.to_padded()), _np(jt.to_padded()))
    back = g.to("cpu")
    np.testing.assert_array_equal(_np(back.values()), np.concatenate(seqs))


def test_repr():
    jt, _ = _jt(feat=(2,), grad=True)
    assert repr(jt) == ("JaggedTensor(batch_size=6, lengths=[3, 0, 1, 4, 0, 2], "
                        "feature_shape=(2,), dtype=float32, device=cpu, requires_grad=True)")
    long = JaggedTensor(ember.zeros(20), lengths=[2] * 10)
    assert "lengths=[2, 2, 2, 2, ..., 2, 2]" in repr(long)


def test_layout_arrays_are_read_only():
    jt, _ = _jt()
    with pytest.raises(ValueError):
        jt.offsets().numpy()[0] = 5


def test_segment_ids_positions():
    jt, _ = _jt()
    assert _np(jt.segment_ids()).tolist() == [0, 0, 0, 2, 3, 3, 3, 3, 5, 5]
    assert _np(jt.positions()).tolist() == [0, 1, 2, 0, 0, 1, 2, 3, 0, 1]


# ------------------------------------------------------------------------------ padding

def _torch_padded(seqs, value=0.0, L=None):
    """torch's padded form: torch.nested for arrays, pad_sequence (differentiable) for
    tensors that require grad."""
    if isinstance(seqs[0], np.ndarray):
        nt = torch.nested.nested_tensor([torch.from_numpy(s) for s in seqs], layout=torch.jagged)
        p = nt.to_padded_tensor(value)
    else:
        p = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=value)
    if L is not None:  # torch pads to the longest: cut or widen to L
        if p.shape[1] >= L:
            p = p[:, :L]
        else:
            pad = torch.full((p.shape[0], L - p.shape[1]) + p.shape[2:], value, dtype=p.dtype)
            p = torch.cat([p, pad], 1)
    return p


@pytest.mark.parametrize("feat", [(), (3,), (2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_to_padded_matches_torch_nested(feat, dtype, device):
    jt, seqs = _jt(feat=feat, dtype=dtype, device=device)
    for value in (0.0, -7.5):
        p = jt.to_padded(padding_value=value)
        assert p.dtype == jt.dtype
        np.testing.assert_array_equal(_np(p), _torch_padded(seqs, value).numpy())
    for L in (0, 2, 4, 6):
        np.testing.assert_array_equal(_np(jt.to_padded(max_length=L, padding_value=1.5)),
                                      _torch_padded(seqs, 1.5, L).numpy())


def test_to_padded_gradient_and_truncation_gradient():
    jt, seqs = _jt(feat=(3,), dtype=np.float64, grad=True)
    rng = np.random.default_rng(1)
    for L in (None, 2):
        tv = torch.tensor(np.concatenate(seqs), requires_grad=True)
        tp = _torch_padded(list(torch.split(tv, LENGTHS)), 0.0, L)
        p = jt.to_padded(max_length=L)
        g = rng.standard_normal(tuple(p.shape))
        (ge,) = ember.autograd.grad(p, jt.values(), ember.tensor(g))
        (gt,) = torch.autograd.grad(tp, tv, torch.from_numpy(g))
        np.testing.assert_array_equal(_np(ge), gt.numpy())


def test_from_padded_roundtrip_and_gradient():
    rng = np.random.default_rng(2)
    padded = rng.standard_normal((6, 5, 2))
    ep = ember.tensor(padded, requires_grad=True)
    jt = JaggedTensor.from_padded(ep, LENGTHS)
    tp = torch.tensor(padded, requires_grad=True)
    mask = torch.arange(5)[None, :] < torch.tensor(LENGTHS)[:, None]
    ref = tp[mask]  # row-major over (batch, length): the packed order
    np.testing.assert_array_equal(_np(jt.values()), ref.detach().numpy())
    g = rng.standard_normal(tuple(ref.shape))
    (ge,) = ember.autograd.grad(jt.values(), ep, ember.tensor(g))
    (gt,) = torch.autograd.grad(ref, tp, torch.from_numpy(g))
    np.testing.assert_array_equal(_np(ge), gt.numpy())
    # back to padded at the same length: the padding is zeros, the values are the same
    back = jt.to_padded(max_length=5)
    np.testing.assert_array_equal(_np(back), padded * mask.numpy()[..., None])


def test_padding_double_backward():
    jt, _ = _jt(feat=(2,), dtype=np.float64, grad=True)

    def f(v):
        p = JaggedTensor(v, lengths=LENGTHS).to_padded(padding_value=3.0, max_length=3)
        return (p * p).sum(1)

    assert ember.autograd.gradcheck(f, [jt.values()])
    assert ember.autograd.gradgradcheck(f, [jt.values()])

    def g(p):
        return padded_to_jagged(p * p, lengths=LENGTHS)

    p = ember.tensor(np.random.default_rng(3).standard_normal((6, 4, 2)), requires_grad=True)
    assert ember.autograd.gradcheck(g, [p])
    assert ember.autograd.gradgradcheck(g, [p])


def test_functional_conversions_and_errors():
    v = ember.arange(10.0)
    p = jagged_to_padded(v, lengths=LENGTHS, padding_value=-1.0)
    assert p.shape == (6, 4)
    np.testing.assert_array_equal(_np(padded_to_jagged(p, offsets=[0, 3, 3, 4, 8, 8, 10])),
                                  np.arange(10.0))
    with pytest.raises(ValueError, match="does not fit the padded length 3"):
        padded_to_jagged(p[:, :3], lengths=LENGTHS)
    with pytest.raises(ValueError, match="batch 6 but there are 2 lengths"):
        padded_to_jagged(p, lengths=[1, 2])
    with pytest.raises(ValueError, match="max_length must be >= 0"):
        jagged_to_padded(v, lengths=LENGTHS, max_length=-1)


def test_mask():
    jt, _ = _jt()
    m = _np(jt.mask())
    assert m.dtype == np.bool_ and m.shape == (6, 4)
    assert m.sum(1).tolist() == LENGTHS and m[3].all() and not m[1].any()
    assert jt.mask(2).shape == (6, 2)


# ------------------------------------------------------------------------------ cached maps

def test_index_maps_are_cached_and_shared():
    jt, _ = _jt(feat=(2,))
    a = jt.jagged_to_padded_index()
    assert jt.jagged_to_padded_index().array is a.array
    assert jt.padded_to_jagged_index().array is jt.padded_to_jagged_index().array
    pm = jt._layout.pad_map()
    jt.to_padded()
    jt.to_padded(padding_value=1.0)
    assert jt._layout.pad_map() is pm and jt._layout.pad_map(4) is pm
    # JaggedTensors derived from this one share the maps
    other = jt.apply(lambda v: v * 2)
    assert other.jagged_to_padded_index().array is a.array
    assert jt.detach()._layout.pad_map() is pm
    assert jt.to(ember.float64)._layout.pad_map() is pm
    assert jt.segment_ids().array is other.segment_ids().array
    assert jt.mask().array is other.mask().array
    # from_padded builds the map for the padded length; to_padded back reuses it
    jp = JaggedTensor.from_padded(ember.zeros(6, 7, 2), LENGTHS)
    pm7 = jp._layout.pad_map(7)
    jp.to_padded(max_length=7)
    assert jp._layout.pad_map(7) is pm7


def test_index_maps_values():
    jt, _ = _jt()
    L = 4
    j2p = _np(jt.jagged_to_padded_index())
    p2j = _np(jt.padded_to_jagged_index())
    seg, pos = _np(jt.segment_ids()), _np(jt.positions())
    np.testing.assert_array_equal(j2p, seg * L + pos)
    assert p2j.shape == (6 * L,)
    np.testing.assert_array_equal(p2j[j2p], np.arange(10))
    assert (p2j >= 0).sum() == 10
    cut = _np(jt.jagged_to_padded_index(2))  # rows past position 2 are cut: -1
    np.testing.assert_array_equal(cut, np.where(pos < 2, seg * 2 + pos, -1))
    p2j2 = _np(jt.padded_to_jagged_index(2))
    np.testing.assert_array_equal(p2j2[cut[cut >= 0]], np.flatnonzero(cut >= 0))


def test_jagged_tensors_pickle_for_worker_processes():
    import pickle

    from ember.rec.sparse import JaggedTensor as WeightedJagged

    jt = JaggedTensor.from_tensors([ember.ones(2, 3), ember.arange(3.0).reshape(1, 3)])
    back = pickle.loads(pickle.dumps(jt))
    assert back.offsets().tolist() == [0, 2, 3]
    np.testing.assert_array_equal(back.values().numpy(), jt.values().numpy())
    w = WeightedJagged(ember.tensor([1, 2, 3]), weights=ember.tensor([0.5, 0.5, 1.0]),
                       lengths=ember.tensor([2, 1]))
    w2 = pickle.loads(pickle.dumps(w))
    assert type(w2) is WeightedJagged and w2.weights().tolist() == [0.5, 0.5, 1.0]
    assert w2.lengths().tolist() == [2, 1]
