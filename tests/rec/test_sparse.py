"""JaggedTensor, KeyedJaggedTensor and KeyedTensor against hand-built expected values."""
import numpy as np
import pytest

import ember
from ember.rec import JaggedTensor, KeyedJaggedTensor, KeyedTensor


def _kjt(weighted=False):
    # f1: [[1, 2], [], [3]]   f2: [[4], [5], [6, 7, 8]]
    w = ember.tensor([.1, .2, .3, .4, .5, .6, .7, .8]) if weighted else None
    return KeyedJaggedTensor.from_lengths_sync(
        ["f1", "f2"], ember.tensor([1, 2, 3, 4, 5, 6, 7, 8]),
        ember.tensor([2, 0, 1, 1, 1, 3]), weights=w)


def _dense(jt):
    return [t.tolist() for t in jt.to_dense()]


# ------------------------------------------------------------------ JaggedTensor

def test_jagged_tensor_parts_and_weights():
    jt = JaggedTensor(ember.tensor([10, 11, 12]), weights=ember.tensor([.5, 1., 2.]),
                      lengths=[2, 0, 1])
    assert jt.offsets().tolist() == [0, 2, 2, 3]
    assert jt.lengths().tolist() == [2, 0, 1]
    assert _dense(jt) == [[10, 11], [], [12]]
    assert [t.tolist() for t in jt.to_dense_weights()] == [[.5, 1.], [], [2.]]
    assert jt.to_padded_dense(padding_value=-1).tolist() == [[10, 11], [-1, -1], [12, -1]]
    assert jt.to_padded_dense(desired_length=1).tolist() == [[10], [0], [12]]
    assert jt.to_padded_dense_weights(3).tolist() == [[.5, 1., 0.], [0., 0., 0.], [2., 0., 0.]]
    sub = jt[1:3]
    assert isinstance(sub, JaggedTensor) and _dense(sub) == [[], [12]]
    assert sub.weights().tolist() == [2.0]
    assert jt.detach().weights() is not None
    assert jt.to("cpu").weights().tolist() == [.5, 1., 2.]
    with pytest.raises(ValueError, match="no weights"):
        JaggedTensor(ember.tensor([1]), lengths=[1]).weights()
    with pytest.raises(ValueError, match="one weight per value"):
        JaggedTensor(ember.tensor([1, 2]), weights=ember.tensor([1.]), lengths=[2])


def test_jagged_tensor_constructors():
    jt = JaggedTensor.from_dense([ember.tensor([1, 2]), ember.tensor([3])],
                                 weights=[ember.tensor([.5, .5]), ember.tensor([1.])])
    assert _dense(jt) == [[1, 2], [3]] and jt.weights().tolist() == [.5, .5, 1.]
    jt = JaggedTensor.from_dense_lengths(ember.tensor([[1, 2, 0], [3, 0, 0]]), [2, 1])
    assert _dense(jt) == [[1, 2], [3]]
    e = JaggedTensor.empty(is_weighted=True)
    assert e.batch_size == 0 and e.weights().shape == (0,)
    # the segment ops of ember.jagged work on rec's view
    jt = JaggedTensor(ember.tensor([1., 2., 3.]), lengths=[2, 1])
    assert jt.sum().tolist() == [3., 3.]


# ------------------------------------------------------------------ KeyedJaggedTensor

def test_kjt_layout_queries():
    kjt = _kjt()
    assert kjt.keys() == ["f1", "f2"]
    assert kjt.stride() == 3 and kjt.stride_per_key() == [3, 3]
    assert kjt.lengths().tolist() == [2, 0, 1, 1, 1, 3]
    assert kjt.offsets().tolist() == [0, 2, 2, 3, 4, 5, 8]
    assert kjt.length_per_key() == [3, 5] and kjt.offset_per_key() == [0, 3, 8]
    assert kjt.lengths_offset_per_key() == [0, 3, 6]
    assert kjt.index_per_key() == {"f1": 0, "f2": 1}
    assert not kjt.variable_stride_per_key()
    assert kjt.weights_or_none() is None
    with pytest.raises(ValueError, match="no weights"):
        kjt.weights()


def test_kjt_from_offsets_matches_from_lengths():
    a = KeyedJaggedTensor.from_offsets_sync(["f1", "f2"], ember.tensor([1, 2, 3, 4, 5, 6, 7, 8]),
                                            ember.tensor([0, 2, 2, 3, 4, 5, 8]))
    assert a.lengths().tolist() == [2, 0, 1, 1, 1, 3]
    assert a.length_per_key() == [3, 5] and a.stride() == 3
    assert str(a) == str(_kjt())


def test_kjt_getitem_and_to_dict():
    kjt = _kjt(weighted=True)
    f2 = kjt["f2"]
    assert _dense(f2) == [[4], [5], [6, 7, 8]]
    np.testing.assert_allclose(f2.weights().numpy(), [.4, .5, .6, .7, .8], rtol=1e-6)
    d = kjt.to_dict()
    assert list(d) == ["f1", "f2"] and _dense(d["f1"]) == [[1, 2], [], [3]]
    with pytest.raises(KeyError, match="no key 'f9'"):
        kjt["f9"]


def test_kjt_split_and_permute():
    kjt = _kjt(weighted=True)
    a, b = kjt.split([1, 1])
    assert a.keys() == ["f1"] and _dense(a["f1"]) == [[1, 2], [], [3]]
    assert b.keys() == ["f2"] and b.values().tolist() == [4, 5, 6, 7, 8]
    np.testing.assert_allclose(b.weights().numpy(), [.4, .5, .6, .7, .8], rtol=1e-6)
    empty, whole = kjt.split([0, 2])
    assert empty.keys() == [] and empty.values().shape == (0,)
    assert whole.keys() == ["f1", "f2"]
    with pytest.raises(ValueError, match="sum to the number of keys"):
        kjt.split([1])
    p = kjt.permute([1, 0])
    assert p.keys() == ["f2", "f1"]
    assert p.values().tolist() == [4, 5, 6, 7, 8, 1, 2, 3]
    assert p.lengths().tolist() == [1, 1, 3, 2, 0, 1]
    np.testing.assert_allclose(p.weights().numpy(), [.4, .5, .6, .7, .8, .1, .2, .3],
                               rtol=1e-6)
    assert p.length_per_key() == [5, 3]
    dup = kjt.permute([1, 1])
    assert dup.keys() == ["f2", "f2"] and dup.values().tolist() == [4, 5, 6, 7, 8] * 2
    assert kjt.permute([0, 1]) is kjt
    with pytest.raises(IndexError):
        kjt.permute([2])


def test_kjt_concat_and_from_jt_dict():
    kjt = _kjt()
    a, b = kjt.split([1, 1])
    c = KeyedJaggedTensor.concat([b, a])
    assert c.keys() == ["f2", "f1"]
    assert c.values().tolist() == [4, 5, 6, 7, 8, 1, 2, 3]
    assert c.lengths().tolist() == [1, 1, 3, 2, 0, 1] and c.stride() == 3
    r = KeyedJaggedTensor.from_jt_dict(kjt.to_dict())
    assert str(r) == str(kjt) and r.length_per_key() == [3, 5]
    with pytest.raises(ValueError, match="weighted and unweighted"):
        KeyedJaggedTensor.concat([a, _kjt(weighted=True).split([1, 1])[1]])


def test_kjt_variable_batch_per_key():
    # f1 over 3 entries, f2 over 2
    kjt = KeyedJaggedTensor(["f1", "f2"], ember.tensor([1, 2, 3, 4, 5]),
                            lengths=ember.tensor([1, 0, 2, 1, 1]),
                            stride_per_key_per_rank=[[3], [2]])
    assert kjt.variable_stride_per_key() and kjt.stride_per_key() == [3, 2]
    assert kjt.stride() == 3
    assert kjt.length_per_key() == [3, 2] and kjt.lengths_offset_per_key() == [0, 3, 5]
    assert _dense(kjt["f1"]) == [[1], [], [2, 3]] and _dense(kjt["f2"]) == [[4], [5]]
    p = kjt.permute([1, 0])
    assert p.stride_per_key() == [2, 3] and _dense(p["f2"]) == [[4], [5]]
    c = KeyedJaggedTensor.from_jt_dict({"a": kjt["f1"], "b": kjt["f2"]})
    assert c.stride_per_key() == [3, 2]
    both = KeyedJaggedTensor.concat([kjt, _kjt()])
    assert both.stride_per_key() == [3, 2, 3, 3] and both.keys() == ["f1", "f2", "f1", "f2"]
    with pytest.raises(ValueError, match="cannot be split evenly"):
        KeyedJaggedTensor(["f1", "f2"], ember.tensor([1, 2, 3]), lengths=ember.tensor([1, 1, 1]))


def test_kjt_sync_to_empty():
    kjt = KeyedJaggedTensor(["f1", "f2"], ember.tensor([1, 2, 3, 4, 5, 6, 7, 8]),
                            lengths=ember.tensor([2, 0, 1, 1, 1, 3]))
    assert kjt.length_per_key_or_none() is None
    assert kjt.sync().length_per_key_or_none() == [3, 5]
    assert kjt.unsync().offset_per_key_or_none() is None
    moved = kjt.to("cpu")
    assert moved.device() == ember.device("cpu") and str(moved) == str(kjt)
    e = KeyedJaggedTensor.empty(is_weighted=True)
    assert e.keys() == [] and e.weights().shape == (0,)
    assert KeyedJaggedTensor.empty_like(kjt).stride() == 3


def test_kjt_weights_keep_their_gradient():
    w = ember.tensor([.1, .2, .3, .4, .5, .6, .7, .8], requires_grad=True)
    kjt = KeyedJaggedTensor.from_lengths_sync(["f1", "f2"], ember.tensor([1, 2, 3, 4, 5, 6, 7, 8]),
                                              ember.tensor([2, 0, 1, 1, 1, 3]), weights=w)
    p = kjt.permute([1, 0])
    (p.weights() * ember.arange(8.0)).sum().backward()
    # position j of the permuted weights is original index [3..7, 0..2][j]
    assert w.grad.tolist() == [5., 6., 7., 0., 1., 2., 3., 4.]


# ------------------------------------------------------------------ KeyedTensor

def test_keyed_tensor():
    a = ember.arange(4.).reshape(2, 2)
    b = ember.arange(6.).reshape(2, 3) + 10
    kt = KeyedTensor.from_tensor_list(["a", "b"], [a, b])
    assert kt.keys() == ["a", "b"] and kt.length_per_key() == [2, 3]
    assert kt.offset_per_key() == [0, 2, 5] and kt.key_dim() == 1
    assert kt.values().tolist() == [[0, 1, 10, 11, 12], [2, 3, 13, 14, 15]]
    assert kt["b"].tolist() == b.tolist()
    d = kt.to_dict()
    assert list(d) == ["a", "b"] and d["a"].tolist() == a.tolist()
    c = KeyedTensor(["c"], [1], ember.ones(2, 1))
    g1, g2 = KeyedTensor.regroup([kt, c], [["c", "a"], ["b"]])
    assert g1.tolist() == [[1, 0, 1], [1, 2, 3]] and g2.tolist() == b.tolist()
    d = KeyedTensor.regroup_as_dict([kt, c], [["b", "c"]], ["x"])
    assert d["x"].shape == (2, 4)
    with pytest.raises(ValueError, match="in KeyedTensor 0 and 1"):
        KeyedTensor.regroup([kt, kt], [["a"]])
    with pytest.raises(ValueError, match="sum to 5"):
        KeyedTensor(["a", "b"], [2, 3], ember.ones(2, 4))


def test_keyed_tensor_regroup_is_differentiable():
    v = ember.ones(2, 5, requires_grad=True)
    kt = KeyedTensor(["a", "b"], [2, 3], v)
    (g,) = KeyedTensor.regroup([kt], [["b", "a"]])
    (g * ember.arange(5.)).sum().backward()
    # column j of g is b's column j (j < 3) and a's column j - 3
    assert v.grad[0].tolist() == [3., 4., 0., 1., 2.]
