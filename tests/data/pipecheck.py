"""Helpers for the data tests: the mid-iteration state round trip every stateful pipe must pass."""
import pickle


def take(it, n):
    out = []
    for _ in range(n):
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out


def check_resume(make, cuts=None, expected=None):
    """For each cut: iterate ``make()`` ``cut`` samples, save the state (through pickle), restore
    it into a fresh iterator of a fresh ``make()``, and check that the rest equals the rest of
    an uninterrupted pass. Also checks the full pass against ``expected`` if given."""
    full = list(iter(make()))
    if expected is not None:
        assert full == expected
    if cuts is None:
        cuts = sorted({0, 1, len(full) // 3, len(full) // 2, max(len(full) - 1, 0), len(full)})
    for cut in cuts:
        it = iter(make())
        head = take(it, cut)
        state = it.state_dict()
        # the state must not alias the live iterator: advancing it must not change the state
        take(it, 2)
        state = pickle.loads(pickle.dumps(state))
        it2 = iter(make())
        it2.load_state_dict(state)
        rest = list(it2)
        assert head + rest == full, f"resume after {cut} samples: {head + rest} != {full}"
    return full
