"""Map-style pipes against plain-Python expectations; their iterable views resume."""
import pytest
from pipecheck import check_resume

from ember.data import IterDataPipe, MapDataPipe, SequenceWrapper as S


def test_sequence_wrapper_map_batch():
    dp = S(range(7)).map(lambda x: x * x)
    assert isinstance(dp, MapDataPipe) and len(dp) == 7 and dp[3] == 9 and dp[-1] == 36
    b = S(range(7)).batch(3)
    assert [b[i] for i in range(len(b))] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(S(range(7)).batch(3, drop_last=True)) == 2
    with pytest.raises(IndexError):
        b[3]
    with pytest.raises(TypeError):
        S(5)


def test_concat_zip():
    c = S([1, 2]).concat(S([]), S([3, 4, 5]))
    assert len(c) == 5 and [c[i] for i in range(5)] == [1, 2, 3, 4, 5] and c[-1] == 5
    assert (S([1]) + S([2]))[1] == 2
    z = S(range(3)).zip(S("abcd"))
    assert len(z) == 3 and z[2] == (2, "c")
    with pytest.raises(IndexError):
        z[3]
    with pytest.raises(TypeError):
        S([1]).concat([2])


def test_to_iter_and_shuffle_resume():
    assert isinstance(S([1]).to_iter(), IterDataPipe)
    check_resume(lambda: S(range(9)).map(str).to_iter(), expected=[str(i) for i in range(9)])
    assert list(S([4, 5])) == [4, 5]
    full = check_resume(lambda: S(range(20)).shuffle(seed=5))
    assert sorted(full) == list(range(20)) and full != list(range(20))
    assert list(S(range(20)).shuffle(seed=5)) == full
    assert list(S(range(20)).shuffle(seed=6)) != full
    out = list(S(range(10)).shuffle(seed=1).batch(5))
    assert sorted(x for b in out for x in b) == list(range(10))
