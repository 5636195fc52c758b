"""``edit_distance`` against the textbook dynamic programme."""
import random

from ember.audio.functional import edit_distance


def _table(a, b):
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return d[-1][-1]


def test_edit_distance_matches_the_table_on_random_sequences():
    r = random.Random(0)
    for _ in range(500):
        a = [r.choice("abc") for _ in range(r.randint(0, 9))]
        b = [r.choice("abcd") for _ in range(r.randint(0, 9))]
        assert edit_distance(a, b) == _table(a, b) == edit_distance(b, a)


def test_edit_distance_on_words_and_strings():
    assert edit_distance("THE CAT SAT".split(), "THE CAT".split()) == 1
    assert edit_distance("", "abc") == 3 and edit_distance("same", "same") == 0
    assert edit_distance([1, 2, 3], (1, 3)) == 1
