"""Samplers: orders, seeding, and the distributed split."""
import numpy as np
import pytest

import ember
from ember.data import (BatchSampler, DistributedSampler, RandomSampler, SequentialSampler,
                        SubsetRandomSampler, WeightedRandomSampler)


def test_sequential_and_batch():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    bs = BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    assert len(BatchSampler(SequentialSampler(range(7)), 3, drop_last=True)) == 2
    with pytest.raises(ValueError):
        BatchSampler(SequentialSampler(range(3)), 0)


def test_random_sampler_generator_and_state():
    g = ember.Generator().manual_seed(3)
    a = list(RandomSampler(range(20), generator=g))
    g = ember.Generator().manual_seed(3)
    s = RandomSampler(range(20), generator=g)
    assert list(s) == a and sorted(a) == list(range(20))
    b = list(s)  # the generator moved on: another permutation
    assert b != a
    st = s.state_dict()
    s.load_state_dict(st)
    assert list(s) == b  # a loaded state repeats that pass
    r = RandomSampler(range(5), replacement=True, num_samples=50, generator=g)
    out = list(r)
    assert len(out) == 50 and set(out) <= set(range(5))
    assert len(RandomSampler(range(5), num_samples=12)) == 12
    assert sorted(RandomSampler(range(5), num_samples=10))[:2] == [0, 0]
    with pytest.raises(ValueError):
        RandomSampler(range(5), num_samples=0)


def test_subset_and_weighted():
    s = list(SubsetRandomSampler([10, 20, 30], generator=ember.Generator().manual_seed(0)))
    assert sorted(s) == [10, 20, 30]
    w = WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=ember.Generator().manual_seed(0))
    counts = np.bincount(list(w), minlength=3)
    assert counts[0] == 0 and 2.6 < counts[2] / counts[1] < 3.4
    no_rep = list(WeightedRandomSampler([1, 1, 1, 0], 3, replacement=False))
    assert sorted(no_rep) == [0, 1, 2]
    with pytest.raises(ValueError):
        WeightedRandomSampler([1, 0], 2, replacement=False)
    with pytest.raises(ValueError):
        WeightedRandomSampler([-1, 2], 2)


@pytest.mark.parametrize("n,world,drop_last", [(10, 3, False), (10, 3, True), (8, 2, False), (5, 4, False)])
def test_distributed_sampler_partitions(n, world, drop_last):
    shards = [list(DistributedSampler(range(n), world, r, shuffle=True, seed=1,
                                      drop_last=drop_last)) for r in range(world)]
    assert len({len(s) for s in shards}) == 1
    assert len(shards[0]) == len(DistributedSampler(range(n), world, 0, drop_last=drop_last))
    flat = [i for s in shards for i in s]
    if drop_last:
        assert len(set(flat)) == len(flat) == (n // world) * world
    else:
        assert set(flat) == set(range(n))
        assert len(flat) == -(-n // world) * world
    s = DistributedSampler(range(n), world, 0, seed=1)
    e0 = list(s)
    s.set_epoch(1)
    assert list(s) != e0 or n < 3
    assert list(DistributedSampler(range(n), world, 0, shuffle=False))[:2] == [0, world][:len(e0[:2])]
    with pytest.raises(ValueError):
        DistributedSampler(range(n), world, world)
