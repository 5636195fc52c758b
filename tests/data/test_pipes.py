"""Every iterable pipe against plain-Python expectations, and its state round trip mid-iteration."""
import random

import pytest
from pipecheck import check_resume, take

from ember.data import IterableWrapper as W
from ember.data import drain_skips


def test_iterable_wrapper_sequence_and_generator():
    check_resume(lambda: W(range(7)), expected=list(range(7)))
    check_resume(lambda: W(["a", "b", "c"]), expected=["a", "b", "c"])

    class Gen:  # a re-iterable non-sequence
        def __iter__(self):
            return iter(x * x for x in range(6))
    check_resume(lambda: W(Gen()), expected=[x * x for x in range(6)])
    with pytest.raises(TypeError):
        W("abc")


def test_map_plain_and_columns():
    check_resume(lambda: W(range(6)).map(lambda x: x + 1), expected=list(range(1, 7)))
    tup = [(i, str(i)) for i in range(4)]
    assert list(W(tup).map(lambda v: v * 10, input_col=0)) == [(i * 10, str(i)) for i in range(4)]
    assert list(W(tup).map(lambda v: v * 2, input_col=1, output_col=-1)) == \
        [(i, str(i), str(i) * 2) for i in range(4)]
    lst = [[i, i + 1, i + 2] for i in range(3)]
    assert list(W(lst).map(lambda a, b: a + b, input_col=[0, 2])) == \
        [[2 * i + 2, i + 1] for i in range(3)]
    dicts = [{"a": i, "b": 2 * i} for i in range(3)]
    assert list(W(dicts).map(lambda a, b: a * b, input_col=["a", "b"], output_col="c")) == \
        [{"a": i, "b": 2 * i, "c": 2 * i * i} for i in range(3)]
    assert list(W(dicts).map(str, input_col="a")) == [{"a": str(i), "b": 2 * i} for i in range(3)]
    assert dicts[0] == {"a": 0, "b": 0}  # the input sample is not modified
    with pytest.raises(ValueError):
        W(dicts).map(str, output_col="x")
    with pytest.raises(TypeError):
        W(dicts).map(3)


def test_map_chain_is_fused_and_resumable():
    fns = [lambda x, k=k: x * 2 + k for k in range(10)]
    dp = W(range(20))
    for f in fns:
        dp = dp.map(f)

    def ref(x):
        for f in fns:
            x = f(x)
        return x
    check_resume(lambda: dp, expected=[ref(x) for x in range(20)])
    assert len(dp) == 20


def test_map_error_notes_and_skip():
    dp = W([("a.txt", 1), ("b.txt", 0), ("c.txt", 2)]).map(lambda s: (s[0], 1 // s[1]))
    with pytest.raises(ZeroDivisionError) as ei:
        list(dp)
    note = "\n".join(ei.value.__notes__)
    assert "sample #1" in note and "'b.txt'" in note
    drain_skips()
    dp = W([1, 0, 2, 0]).map(lambda x: 1 // x, on_error="skip")
    assert list(dp) == [1, 0]
    skipped = drain_skips()
    assert [s.index for s in skipped] == [1, 3]
    assert "ZeroDivisionError" in skipped[0].error
    # in a fused chain, the failing stage is named
    dp = W([1, 2]).map(lambda x: x).map(lambda x: 1 // (x - 2), on_error="skip").map(str)
    assert list(dp) == ["-1"]
    assert len(drain_skips()) == 1
    with pytest.raises(ValueError):
        W([1]).map(str, on_error="ignore")


def test_filter_and_flatmap():
    check_resume(lambda: W(range(20)).filter(lambda x: x % 3 == 0), expected=[0, 3, 6, 9, 12, 15, 18])
    assert list(W([(1, "a"), (2, "b")]).filter(lambda v: v > 1, input_col=0)) == [(2, "b")]
    check_resume(lambda: W(range(5)).flatmap(lambda x: [x] * x),
                 expected=[y for x in range(5) for y in [x] * x])
    assert list(W([[1, 2], [], [3]]).flatmap()) == [1, 2, 3]
    # a resume point inside one sample's items
    check_resume(lambda: W([[1, 2, 3], [4, 5]]).flatmap(), cuts=[1, 2, 4])


def test_batch_unbatch():
    check_resume(lambda: W(range(10)).batch(3), expected=[[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]])
    assert list(W(range(10)).batch(3, drop_last=True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(W(range(10)).batch(3)) == 4 and len(W(range(10)).batch(3, drop_last=True)) == 3
    assert list(W(range(4)).batch(2, wrapper=tuple)) == [(0, 1), (2, 3)]
    check_resume(lambda: W(range(10)).batch(3).unbatch(), expected=list(range(10)), cuts=[1, 4, 5])
    nested = [[[0, 1], [2]], [[3]]]
    assert list(W(nested).unbatch(2)) == [0, 1, 2, 3]
    assert list(W(nested).unbatch(-1)) == [0, 1, 2, 3]
    with pytest.raises(IndexError):
        list(W([[1, 2]]).unbatch(3))
    with pytest.raises(ValueError):
        W([1]).batch(0)


def test_shuffle_buffer_seeded_and_resumable():
    full = check_resume(lambda: W(range(50)).shuffle(buffer_size=8, seed=3))
    assert sorted(full) == list(range(50)) and full != list(range(50))
    assert list(W(range(50)).shuffle(buffer_size=8, seed=3)) == full
    assert list(W(range(50)).shuffle(buffer_size=8, seed=4)) != full
    # a buffer of one keeps the order; a buffer larger than the data is a full shuffle
    assert list(W(range(10)).shuffle(buffer_size=1, seed=0)) == list(range(10))
    big = list(W(range(10)).shuffle(buffer_size=100, seed=0))
    assert sorted(big) == list(range(10))
    # unseeded: follows ember's default generator
    import ember

    ember.manual_seed(1)
    a = list(W(range(30)).shuffle())
    ember.manual_seed(1)
    assert list(W(range(30)).shuffle()) == a
    assert list(W(range(5)).shuffle(enabled=False)) == list(range(5))
    assert len(W(range(5)).shuffle()) == 5


def test_shuffle_buffer_semantics():
    """The first output comes from the first buffer_size samples (a windowed shuffle)."""
    for seed in range(20):
        out = list(W(range(100)).shuffle(buffer_size=5, seed=seed))
        assert out[0] < 6
        assert all(out[i] <= i + 5 for i in range(100))


def test_sharding_filter_levels_and_block():
    dp = W(range(10)).sharding_filter()
    assert list(dp) == list(range(10))
    dp.set_sharding([(3, 1, 1)])
    assert list(dp) == [1, 4, 7] and len(dp) == 3
    dp.set_sharding([(2, 0, 3)])
    assert list(dp) == [0, 1, 2, 6, 7, 8] and len(dp) == 6
    dp.set_sharding([(2, 1, 2), (2, 0, 1)])  # rank 1 of 2 (blocks of 2), then worker 0 of 2
    assert list(dp) == [2, 6] and len(dp) == 2
    check_resume(lambda: W(range(30)).sharding_filter().set_sharding([(3, 2, 2)]),
                 expected=[x for x in range(30) if (x // 2) % 3 == 2])
    with pytest.raises(ValueError):
        dp.set_sharding([(2, 2, 1)])


@pytest.mark.parametrize("n", [0, 1, 7, 23])
def test_shard_counts_match(n):
    from ember.data.shuffle import shard_count

    for num in (1, 2, 3, 4):
        for block in (1, 2, 5):
            got = [shard_count(n, num, s, block) for s in range(num)]
            want = [sum(1 for i in range(n) if (i // block) % num == s) for s in range(num)]
            assert got == want


def test_collate_pipe():
    import numpy as np

    out = list(W([np.ones(2, np.float32) * i for i in range(4)]).batch(2).collate())
    assert [b.shape for b in out] == [(2, 2), (2, 2)]
    assert out[1].numpy()[:, 0].tolist() == [2.0, 3.0]
    assert list(W(range(4)).batch(2).collate(sum)) == [1, 5]


def test_zip_concat_mux():
    check_resume(lambda: W(range(5)).zip(W(list("abcd"))), expected=list(zip(range(5), "abcd")))
    check_resume(lambda: W(range(3)).concat(W(range(10, 12)), W([])),
                 expected=[0, 1, 2, 10, 11])
    assert list(W([1]) + W([2])) == [1, 2]
    assert len(W(range(3)).concat(W(range(2)))) == 5
    mux = lambda: W(range(3)).mux(W(range(10, 15)), W(range(20, 25)))  # noqa: E731
    check_resume(mux, expected=[0, 10, 20, 1, 11, 21, 2, 12, 22], cuts=[0, 1, 4, 8])
    # an incomplete round is dropped
    assert list(W(range(3)).mux(W(range(10, 12)))) == [0, 10, 1, 11]
    longest = lambda: W(range(5)).mux_longest(W(range(10, 12)), W(range(20, 23)))  # noqa: E731
    check_resume(longest, expected=[0, 10, 20, 1, 11, 21, 2, 22, 3, 4])
    with pytest.raises(TypeError):
        W([1]).zip([2])


def test_fork_and_demux():
    def forked():
        a, b, c = W(range(6)).fork(3)
        return a.zip(b.map(lambda x: -x), c)
    check_resume(forked, expected=[(i, -i, i) for i in range(6)])
    a, b = W(range(4)).fork(2)
    assert list(a) == [0, 1, 2, 3] and list(b) == [0, 1, 2, 3]  # one after the other, buffered
    a, b = W(range(10)).fork(2, buffer_size=3)
    with pytest.raises(BufferError):
        list(a)

    def demuxed():
        e, o = W(range(11)).demux(2, lambda x: x % 2)
        return e.zip(o)
    check_resume(demuxed, expected=[(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)])
    e, o, t = W(range(10)).demux(3, lambda x: x % 3)
    assert (list(e), list(o), list(t)) == ([0, 3, 6, 9], [1, 4, 7], [2, 5, 8])
    e, = W(range(6)).demux(1, lambda x: 0 if x % 2 == 0 else None, drop_none=True)
    assert list(e) == [0, 2, 4]
    e, = W(range(3)).demux(1, lambda x: 5)
    with pytest.raises(ValueError):
        list(e)


def test_fork_new_epoch():
    a, b = W(range(3)).fork(2)
    z = a.zip(b)
    assert list(z) == list(z) == [(0, 0), (1, 1), (2, 2)]


def test_cycle_header_enumerate():
    check_resume(lambda: W([1, 2, 3]).cycle(3), expected=[1, 2, 3] * 3)
    assert take(iter(W([1, 2]).cycle()), 5) == [1, 2, 1, 2, 1]
    assert list(W([]).cycle()) == []
    assert len(W([1, 2]).cycle(4)) == 8
    check_resume(lambda: W(range(100)).header(5), expected=list(range(5)))
    assert len(W(range(3)).header(5)) == 3
    check_resume(lambda: W(list("abc")).enumerate(10), expected=[(10, "a"), (11, "b"), (12, "c")])


def test_in_memory_cache():
    calls = []

    def f(x):
        calls.append(x)
        return x * 2
    dp = W(range(5)).map(f).in_memory_cache()
    assert list(dp) == [0, 2, 4, 6, 8] and list(dp) == [0, 2, 4, 6, 8]
    assert calls == list(range(5))  # the second pass came from memory
    check_resume(lambda: dp)  # replay states
    check_resume(lambda: W(range(6)).in_memory_cache())  # first-pass states
    small = W(range(5)).in_memory_cache(size=2)
    assert list(small) == list(range(5)) and small.cache is None


def test_prefetch():
    check_resume(lambda: W(range(40)).map(lambda x: x * 3).prefetch(4), expected=[x * 3 for x in range(40)])

    def boom(x):
        if x == 3:
            raise KeyError("three")
        return x
    it = iter(W(range(10)).map(boom).prefetch(2))
    assert take(it, 3) == [0, 1, 2]
    with pytest.raises(KeyError):
        next(it)


def test_bucketbatch():
    rng = random.Random(0)
    words = ["x" * rng.randint(1, 30) for _ in range(100)]
    mk = lambda: W(words).bucketbatch(4, batch_num=5, sort_key=len, seed=1)  # noqa: E731
    full = check_resume(mk, cuts=[0, 3, 7, 20, 25])
    assert sorted(w for b in full for w in b) == sorted(words)
    assert all(len(b) == 4 for b in full)
    pools = [words[i:i + 20] for i in range(0, 100, 20)]
    # each batch comes from one pool, sorted by length within it
    for b in full:
        assert [len(w) for w in b] == sorted(len(w) for w in b)
        assert any(all(w in p for w in b) for p in pools)
    spreads = [len(b[-1]) - len(b[0]) for b in full]
    assert sum(spreads) / len(spreads) < 8  # far more homogeneous than random batches
    unshuffled = list(W([3, 1, 2, 5, 4]).bucketbatch(2, batch_num=3, sort_key=lambda x: x, shuffle=False))
    assert unshuffled == [[1, 2], [3, 4], [5]]
    assert list(W(range(5)).bucketbatch(2, drop_last=True, batch_num=10, shuffle=False)) == [[0, 1], [2, 3]]


def test_groupby():
    data = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("a", 5), ("b", 6), ("c", 7)]
    mk = lambda: W(data).groupby(lambda x: x[0], group_size=2)  # noqa: E731
    full = check_resume(mk)
    assert full == [[("a", 1), ("a", 3)], [("b", 2), ("b", 6)], [("c", 4), ("c", 7)], [("a", 5)]]
    assert list(W(data).groupby(lambda x: x[0], group_size=2, drop_remaining=True)) == full[:3]
    # a full buffer releases its largest group
    out = list(W(data).groupby(lambda x: x[0], buffer_size=3))
    assert out[0] == [("a", 1), ("a", 3)]
    assert sorted(x for g in out for x in g) == sorted(data)
    out = list(W(data).groupby(lambda x: x[0], buffer_size=3, guaranteed_group_size=2, group_size=3))
    assert all(len(g) >= 2 for g in out)


def test_rows2columnar():
    rows = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    assert list(W([rows]).rows2columnar()) == [{"a": [1, 2], "b": ["x", "y"]}]
    assert list(W([[(1, 2), (3, 4)]]).rows2columnar(["p", "q"])) == [{"p": [1, 3], "q": [2, 4]}]


def test_a_long_pipeline_resumes_as_one():
    def mk():
        a, b = W(range(60)).shuffle(buffer_size=7, seed=2).fork(2)
        left = a.map(lambda x: x * 2).filter(lambda x: x % 3)
        right = b.enumerate().flatmap(lambda t: [t[1]] * (t[0] % 2))
        return left.mux_longest(right).batch(4).shuffle(buffer_size=3, seed=9).unbatch().header(70)
    check_resume(mk, cuts=[0, 1, 13, 31, 50, 69])


def _double(x):
    return 2 * x


def _fail_on_3(x):
    if x == 6:
        raise ValueError("six")
    return x


def test_fused_chain_names_the_failing_map():
    dp = W(range(5)).map(_double).map(_fail_on_3).map(str)
    with pytest.raises(ValueError) as ei:
        list(dp)
    note = "\n".join(ei.value.__notes__)
    assert "Mapper(fn=_fail_on_3)" in note and "sample #3" in note
    dp = W(range(5)).map(lambda x: x).map(lambda x: 1 // (x - 1)).map(lambda x: x)
    with pytest.raises(ZeroDivisionError) as ei:
        list(dp)
    assert "<lambda>" in "\n".join(ei.value.__notes__)


def test_generator_based_subclass_gets_explicit_state():
    from ember.data import IterDataPipe, PipeIter

    class Squares(IterDataPipe):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            for i in range(self.n):
                yield i * i

    assert isinstance(iter(Squares(3)), PipeIter)
    check_resume(lambda: Squares(8).map(lambda v: v + 1).batch(3),
                 expected=[[1, 2, 5], [10, 17, 26], [37, 50]])


def test_builtin_sequence_sources_resume_at_every_point():
    for seq in ([5, 6, 7], (5, 6, 7), range(5, 8)):
        check_resume(lambda: W(seq).map(lambda v: v * 2), cuts=[0, 1, 2, 3])
    import numpy as np

    check_resume(lambda: W(np.arange(4)).map(int), expected=[0, 1, 2, 3])
