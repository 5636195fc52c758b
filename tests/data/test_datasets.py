"""torch.utils.data's datasets and samplers in ember.data, checked against torch."""
import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
from ember.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                        IterableDataset, IterableWrapper, RandomSampler, SequenceWrapper,
                        SequentialSampler, StackDataset, Subset, SubsetRandomSampler,
                        TensorDataset, WeightedRandomSampler, random_split)


def _pair(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) * 7
    return (TensorDataset(ember.tensor(x), ember.tensor(y)),
            tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)))


def _same_sample(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(np.asarray(u.numpy()), v.numpy())


def test_tensor_dataset_indexing_matches_torch():
    ours, theirs = _pair()
    assert len(ours) == len(theirs) == 10
    for i in (0, 3, 9, -1, -10):
        _same_sample(ours[i], theirs[i])
    _same_sample(ours[2:5], theirs[2:5])
    _same_sample(ours[[1, 4, 4]], theirs[[1, 4, 4]])
    with pytest.raises(IndexError):
        ours[10]
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(ember.zeros(3), ember.zeros(4))


def test_subset_matches_torch():
    ours, theirs = _pair()
    idx = [7, 2, 2, 9]
    s, t = Subset(ours, idx), tud.Subset(theirs, idx)
    assert len(s) == len(t) == 4 and s.indices == idx and s.dataset is ours
    for i in range(4):
        _same_sample(s[i], t[i])
    _same_sample(s[[0, 3]], t[[0, 3]])
    got = s.__getitems__([1, 0])
    want = t.__getitems__([1, 0])
    for a, b in zip(got, want):
        _same_sample(a, b)


def test_concat_index_mapping_and_cumulative_sizes_match_torch():
    parts = [list(range(3)), list(range(100, 105)), [], list(range(200, 201))]
    ours = ConcatDataset([SequenceWrapper(p) for p in parts])
    theirs = tud.ConcatDataset(parts)
    assert ours.cumulative_sizes == theirs.cumulative_sizes == [3, 8, 8, 9]
    assert len(ours) == len(theirs) == 9
    assert [ours[i] for i in range(-9, 9)] == [theirs[i] for i in range(-9, 9)]
    with pytest.raises(ValueError, match="absolute value"):
        ours[-10]
    with pytest.raises(IndexError):
        ours[9]
    plain = ConcatDataset(parts)  # any sized, indexable dataset (as torch)
    assert [plain[i] for i in range(9)] == [theirs[i] for i in range(9)]
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([IterableWrapper(range(3))])


def test_dataset_add_is_concat_and_iterable_add_is_chain():
    class Squares(Dataset):
        def __init__(self, n):
            self.n = n

        def __getitem__(self, i):
            return i * i

        def __len__(self):
            return self.n

    both = Squares(3) + Squares(2)
    assert isinstance(both, ConcatDataset) and both.cumulative_sizes == [3, 5]
    assert [both[i] for i in range(5)] == [0, 1, 4, 0, 1]

    class Count(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    chain = Count(2) + Count(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2]
    assert list(ChainDataset([Count(1), IterableWrapper(["a", "b"])])) == [0, "a", "b"]
    assert len(ChainDataset([IterableWrapper(range(4)), IterableWrapper(range(2))])) == 6
    with pytest.raises(TypeError, match="IterableDataset"):
        ChainDataset([[1, 2]])


def test_stack_dataset_matches_torch():
    a, b = list(range(4)), list("wxyz")
    assert [StackDataset(a, b)[i] for i in range(4)] == [tud.StackDataset(a, b)[i]
                                                        for i in range(4)]
    assert StackDataset(n=a, s=b)[2] == tud.StackDataset(n=a, s=b)[2] == {"n": 2, "s": "y"}
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(a, b[:2])
    with pytest.raises(ValueError, match="not both"):
        StackDataset(a, s=b)


@pytest.mark.parametrize("n,lengths", [
    (10, [0.7, 0.3]), (11, [0.5, 0.5]), (7, [0.1, 0.2, 0.3, 0.4]), (3, [1 / 3] * 3),
    (5, [0.25, 0.25, 0.25, 0.25]), (100, [0.33, 0.33, 0.34]), (9, [4, 5]), (1, [1, 0])])
def test_random_split_lengths_match_torch(n, lengths):
    with pytest.warns(UserWarning) if n == 1 else _no_warning():
        ours = random_split(list(range(n)), lengths)
    with pytest.warns(UserWarning) if n == 1 else _no_warning():
        theirs = tud.random_split(list(range(n)), lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    flat = [i for s in ours for i in s.indices]
    assert sorted(flat) == list(range(n))  # a partition


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_random_split_deterministic_and_errors():
    data = list(range(50))
    ember.manual_seed(3)
    a = [s.indices for s in random_split(data, [0.6, 0.4])]
    ember.manual_seed(3)
    b = [s.indices for s in random_split(data, [0.6, 0.4])]
    c = [s.indices for s in random_split(data, [0.6, 0.4],
                                         generator=ember.Generator().manual_seed(3))]
    d = [s.indices for s in random_split(data, [0.6, 0.4],
                                         generator=ember.Generator().manual_seed(3))]
    assert a == b and c == d and a != [list(range(30)), list(range(30, 50))]
    with pytest.raises(ValueError, match="does not equal"):
        random_split(data, [10, 20])
    with pytest.raises(ValueError, match="index 0"):
        random_split(data, [1.5, -0.5])


def test_weighted_sampler_frequencies_match_weights_and_torch():
    w = [0.1, 0.0, 0.4, 0.2, 0.3]
    n = 40000
    ours = np.bincount(list(WeightedRandomSampler(
        w, n, generator=ember.Generator().manual_seed(0))), minlength=5) / n
    theirs = np.bincount(list(tud.WeightedRandomSampler(
        w, n, generator=torch.Generator().manual_seed(0))), minlength=5) / n
    np.testing.assert_allclose(ours, w, atol=0.01)
    np.testing.assert_allclose(ours, theirs, atol=0.015)
    assert ours[1] == 0
    nr = list(WeightedRandomSampler(w, 4, replacement=False))
    assert len(set(nr)) == 4 and 1 not in nr


def test_samplers_match_torch_on_what_is_not_random():
    data = list(range(7))
    assert list(SequentialSampler(data)) == list(tud.SequentialSampler(data))
    for drop in (False, True):
        ours = BatchSampler(SequentialSampler(data), 3, drop)
        theirs = tud.BatchSampler(tud.SequentialSampler(data), 3, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    assert sorted(RandomSampler(data)) == data and len(RandomSampler(data)) == 7
    r = list(RandomSampler(data, replacement=True, num_samples=20))
    assert len(r) == 20 and set(r) <= set(data)
    assert sorted(SubsetRandomSampler([5, 1, 3])) == [1, 3, 5]


@pytest.mark.multiprocess
@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_over_torch_style_datasets(num_workers):
    ds, _ = _pair(20)
    train, val = random_split(ds, [0.75, 0.25], generator=ember.Generator().manual_seed(0))
    both = train + val
    seen = []
    for x, y in DataLoader(both, batch_size=4, shuffle=True, num_workers=num_workers, seed=1):
        assert x.shape[1:] == (3,) and x.dtype == ember.float32 and y.dtype == ember.int64
        np.testing.assert_array_equal(x.numpy()[:, 0] / 3, y.numpy() / 7)
        seen += y.tolist()
    assert sorted(seen) == [7 * i for i in range(20)]
    sampler = WeightedRandomSampler([0.0] * 10 + [1.0] * 10, 12,
                                    generator=ember.Generator().manual_seed(0))
    ys = [y for _, y in DataLoader(ds, batch_size=5, sampler=sampler, num_workers=num_workers)]
    got = np.concatenate([y.numpy() for y in ys])
    assert len(got) == 12 and (got >= 70).all()
