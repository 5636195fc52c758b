"""KeyedJaggedTensor.validate: each problem raises a ValueError that names it."""
import pytest

import ember
from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor

TABLES = [EmbeddingBagConfig(name="t1", num_embeddings=10, embedding_dim=2,
                             feature_names=["f1"]),
          EmbeddingBagConfig(name="t2", num_embeddings=6, embedding_dim=2,
                             feature_names=["f2"])]


def _kjt(values, lengths=None, offsets=None, keys=("f1", "f2"), **kw):
    return KeyedJaggedTensor(list(keys), ember.tensor(values),
                             lengths=None if lengths is None else ember.tensor(lengths),
                             offsets=None if offsets is None else ember.tensor(offsets), **kw)


def test_valid_input_passes_and_returns_self():
    kjt = _kjt([1, 2, 3, 4, 5], [2, 0, 1, 2])
    assert kjt.validate(TABLES) is kjt
    assert kjt.validate({"f1": 10, "f2": 6}) is kjt
    assert kjt.validate(EmbeddingBagCollection(TABLES)) is kjt


def test_lengths_not_summing_to_values():
    with pytest.raises(ValueError, match=r"lengths sum to 6 but values holds 5 ids.*'f2': 4"
                                         r".*key 'f2' runs past"):
        _kjt([1, 2, 3, 4, 5], [2, 0, 1, 3]).validate()
    with pytest.raises(ValueError, match="lengths sum to 4 but values holds 5"):
        _kjt([1, 2, 3, 4, 5], [2, 0, 1, 1]).validate()


def test_negative_length_names_key_and_position():
    with pytest.raises(ValueError, match=r"negative length -1 for key 'f2' at batch position 1"):
        _kjt([1, 2, 3], [2, 0, 2, -1]).validate()


def test_decreasing_offsets():
    with pytest.raises(ValueError, match=r"offsets decrease for key 'f1' at batch position 1"):
        _kjt([1, 2, 3], offsets=[0, 2, 1, 2, 3]).validate()
    with pytest.raises(ValueError, match="offsets must start at 0"):
        _kjt([1, 2, 3], offsets=[1, 2, 2, 3, 3]).validate()


def test_ids_out_of_table_range():
    with pytest.raises(ValueError, match=r"key 'f2': id 6 at batch position 1 \(values\[3\]\) "
                                         r"is outside table 't2' \[0, 6\)"):
        _kjt([1, 2, 3, 6], [2, 0, 1, 1]).validate(TABLES)
    with pytest.raises(ValueError, match=r"key 'f1': id -1 at batch position 0"):
        _kjt([-1, 2, 3, 4], [2, 0, 1, 1]).validate(TABLES)


def test_key_missing_from_config_and_feature_missing_from_keys():
    kjt = _kjt([1, 2, 3, 4, 5], [1, 1, 1, 1, 1, 0], keys=("f1", "f2", "f3"))
    with pytest.raises(ValueError, match=r"key 'f3' is not a feature of any table"):
        kjt.validate(TABLES)
    assert kjt.validate(TABLES, allow_extra_keys=True) is kjt
    with pytest.raises(ValueError, match=r"feature 'f2' of table 't2' is missing"):
        _kjt([1, 2], [1, 1], keys=("f1",)).validate(TABLES)


def test_weights_and_duplicate_keys():
    kjt = KeyedJaggedTensor(["f1", "f1"], ember.tensor([1, 2]), lengths=ember.tensor([1, 1]))
    with pytest.raises(ValueError, match="key 'f1' appears more than once"):
        kjt.validate()
    with pytest.raises(ValueError, match="one weight per value"):
        KeyedJaggedTensor(["f1"], ember.tensor([1, 2]), weights=ember.tensor([1.0]),
                          lengths=ember.tensor([2]))


def test_shape_errors_at_construction():
    with pytest.raises(ValueError, match=r"2 keys x stride 2 = 4 lengths expected, got 3"):
        _kjt([1, 2], [1, 1, 0], stride=2)
    with pytest.raises(ValueError, match="strides per key sum to 4 but there are 3 lengths"):
        _kjt([1, 2], [1, 1, 0], stride_per_key_per_rank=[[2], [2]])
