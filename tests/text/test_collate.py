"""ember.text.collate: length-bucketed batches packed into a JaggedTensor of token ids."""
import doctest
import pickle
import random

import numpy as np
import pytest

import ember
from ember.data import DataLoader, IterableWrapper
from ember.jagged import JaggedTensor
from ember.text import collate as C


def _samples(n=50, seed=0):
    rng = random.Random(seed)
    return [(list(range(100 + i, 100 + i + rng.randint(0, 30))), i % 3) for i in range(n)]


def test_collate_packs_ids_offsets_and_labels():
    b = C.collate([([5, 6, 7], 2), (np.array([8], np.int32), 0),
                   (ember.tensor([], dtype=ember.int64), 1), (ember.tensor([3, 4]), 1)])
    assert isinstance(b.ids, JaggedTensor)
    assert b.ids.values().dtype == ember.int64
    assert b.ids.values().tolist() == [5, 6, 7, 8, 3, 4]
    assert b.ids.offsets().tolist() == [0, 3, 4, 4, 6]
    assert b.labels.tolist() == [2, 0, 1, 1] and b.labels.dtype == ember.int64
    assert len(b) == 4 and b.num_tokens() == 6
    ids, labels = b
    assert ids is b.ids and labels is b.labels
    padded, mask = b.padded(pad_id=-1)
    assert padded.tolist() == [[5, 6, 7], [8, -1, -1], [-1, -1, -1], [3, 4, -1]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0], [0, 0, 0], [1, 1, 0]]
    assert b.padded(0, max_length=5)[0].shape == (4, 5)
    with pytest.raises(ValueError, match="does not fit max_length=2"):
        b.padded(0, max_length=2)
    # padded equals the JaggedTensor's own padding
    assert padded.tolist() == b.ids.to_padded(-1).tolist()


def test_collate_bare_ids_max_length_and_errors():
    b = C.collate([[1, 2, 3, 4], [5]], max_length=2)
    assert b.labels is None and b.ids.values().tolist() == [1, 2, 5]
    with pytest.raises(TypeError, match="sample 1 is not an \\(ids, label\\) pair"):
        C.collate([([1], 0), [2]])
    with pytest.raises(ValueError, match="has 3 fields"):
        C.collate([([1], 0, "x")])
    with pytest.raises(TypeError, match="must be integers"):
        C.collate([([1.5], 0)])
    with pytest.raises(ValueError, match="1-D"):
        C.collate([(np.zeros((2, 2), np.int64), 0)])
    with pytest.raises(ValueError, match="no samples"):
        C.collate([])


def test_bucket_batches_group_similar_lengths_and_keep_every_sample():
    samples = _samples(200)
    batches = list(C.bucket_batches(IterableWrapper(samples), 8, batch_num=5, seed=0))
    assert sum(len(b) for b in batches) == 200
    got = sorted(v for b in batches for v in b.ids.values().tolist())
    assert got == sorted(v for ids, _ in samples for v in ids)
    # inside a pool of 40 samples sorted by length, a batch of 8 spans a narrow range
    spread = np.mean([int(b.ids.lengths().numpy().max() - b.ids.lengths().numpy().min())
                      for b in batches])
    plain = [C.collate(samples[i:i + 8]) for i in range(0, 200, 8)]
    plain_spread = np.mean([int(b.ids.lengths().numpy().max() - b.ids.lengths().numpy().min())
                            for b in plain])
    assert spread < plain_spread / 3
    # padding wasted: far less than with batches in arrival order
    waste = sum(b.padded()[1].numel() - b.num_tokens() for b in batches)
    plain_waste = sum(b.padded()[1].numel() - b.num_tokens() for b in plain)
    assert waste < plain_waste / 3
    # labels travel with their ids
    for b in batches:
        for seq, y in zip(b.ids.unbind(), b.labels.tolist()):
            i = int(seq[0].item()) - 100 if len(seq) else None
            if i is not None:
                assert y == i % 3


def test_bucket_batches_shuffle_is_seeded_and_resumable():
    samples = _samples(120)

    def run(seed):
        return [b.ids.values().tolist() for b in
                C.bucket_batches(IterableWrapper(samples), 10, batch_num=4, seed=seed)]
    assert run(1) == run(1) and run(1) != run(2)
    it = iter(C.bucket_batches(IterableWrapper(samples), 10, batch_num=4, seed=3))
    first = [next(it) for _ in range(5)]
    state = it.state_dict()
    rest = [b.ids.values().tolist() for b in it]
    it2 = iter(C.bucket_batches(IterableWrapper(samples), 10, batch_num=4, seed=3))
    it2.load_state_dict(state)
    assert [b.ids.values().tolist() for b in it2] == rest and len(first) == 5


def test_text_batch_pickles_and_crosses_dataloader_workers():
    b = C.collate([([1, 2], 1), ([3], 0)])
    b2 = pickle.loads(pickle.dumps(b))
    assert b2.ids.values().tolist() == [1, 2, 3] and b2.ids.offsets().tolist() == [0, 2, 3]
    assert b2.labels.tolist() == [1, 0]
    samples = _samples(60)
    pipe = IterableWrapper(samples).sharding_filter()
    loader = DataLoader(pipe, batch_size=6, num_workers=2, collate_fn=C.collate, seed=0)
    batches = list(loader)
    assert all(isinstance(x, C.TextBatch) for x in batches)
    assert sorted(v for x in batches for v in x.ids.values().tolist()) == \
        sorted(v for ids, _ in samples for v in ids)


def test_sequence_length_is_the_sort_key():
    assert C.sequence_length(([1, 2, 3], 0)) == 3 and C.sequence_length([1]) == 1


def test_docstring_examples():
    res = doctest.testmod(C, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0
