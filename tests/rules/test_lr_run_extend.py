"""resume.sched_reset's LR run takes a gated-out stretch at once: the same state as one value at a time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.rules.resume import _LrRun


def _state(run: _LrRun) -> tuple:
    return run.n, run.peak, list(run.pre), list(run.post), run.low, run.last


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.floats(0, 10, allow_nan=False), max_size=80), st.lists(st.integers(0, 80), max_size=6),
       st.integers(1, 40))
def test_extend_equals_add_one_at_a_time(values, cuts, keep):
    one, many = _LrRun(), _LrRun()
    one.pre = one.pre.__class__(maxlen=keep)  # a small bound, so dropping the oldest is exercised
    many.pre = many.pre.__class__(maxlen=keep)
    one.post = one.post.__class__(maxlen=keep)
    many.post = many.post.__class__(maxlen=keep)
    for v in values:
        one.add(v)
    bounds = [0, *sorted(c for c in cuts if c <= len(values)), len(values)]
    for a, b in zip(bounds, bounds[1:]):
        many.extend(np.array(values[a:b], dtype=np.float64))
    assert _state(many) == _state(one)
