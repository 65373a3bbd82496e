"""The array helpers the column readers share, against plain loops."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.adapters.spans import ranges, repeated_keys

DICTS = st.lists(st.lists(st.integers(0, 6), max_size=6), max_size=12)


@settings(max_examples=examples(300), deadline=None)
@given(DICTS)
def test_repeated_keys_finds_the_owners_holding_a_key_twice(dicts: list[list[int]]) -> None:
    owner = np.array([d for d, keys in enumerate(dicts) for _ in keys], dtype=np.int64)
    key = np.array([k for keys in dicts for k in keys], dtype=np.int32)
    got = repeated_keys(owner, key, len(dicts)).tolist()
    assert got == [len(set(keys)) < len(keys) for keys in dicts]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5)), max_size=10))
def test_ranges_lays_the_spans_end_to_end(spans: list[tuple[int, int]]) -> None:
    lo = np.array([a for a, _ in spans], dtype=np.int64)
    count = np.array([c for _, c in spans], dtype=np.int64)
    index, owner, place = ranges(lo, count)
    want = [(a + j, i, j) for i, (a, c) in enumerate(spans) for j in range(c)]
    assert list(zip(index.tolist(), owner.tolist(), place.tolist())) == want
