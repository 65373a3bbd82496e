"""What the plateau rules ask of the LR, over a batch at once: the same answers as reading the LR points
one at a time, however the points arrive."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.rules.base import RuleContext
from trainwatch.rules.plateau_feed import LrView
from trainwatch.store import MetricStore

SRC = "run"
LRS = st.one_of(st.sampled_from([1e-4, 5e-5, 1e-5, 3e-4, 0.0, math.nan, math.inf]), st.floats(1e-6, 1e-3))


def _one_at_a_time(values: list[float], below: float) -> list[bool]:
    """Per LR point: finite and under `below` times the peak of the finite points so far."""
    peak, out = -math.inf, []
    for v in values:
        if math.isfinite(v):
            peak = max(peak, v)
        out.append(math.isfinite(v) and peak > 0 and v < below * peak)
    return out


@settings(max_examples=examples(200), deadline=None)
@given(values=st.lists(LRS, min_size=1, max_size=60), cuts=st.lists(st.integers(0, 60), max_size=5),
       below=st.sampled_from([0.3, 0.5, 1.0]))
def test_annealing_is_the_lr_read_point_by_point(values: list[float], cuts: list[int], below: float) -> None:
    """Each loss row, logged on the line after an LR point, gets that point's answer."""
    store = MetricStore()
    ctx = RuleContext(store, {}, 0.0)
    view = LrView()
    want = _one_at_a_time(values, below)
    got: list[bool] = []
    bounds = [0, *sorted(c for c in cuts if c <= len(values)), len(values)]
    for a, b in zip(bounds, bounds[1:]):
        if a == b:
            continue
        lines = np.arange(2 * a + 1, 2 * b + 1, 2, dtype=np.int64)  # LR points on odd lines
        store.series(SRC, "lr").extend(np.arange(a, b, dtype=np.int64), np.array(values[a:b]), lines,
                                        np.full(b - a, np.nan), np.zeros(b - a, dtype=bool))
        got.extend(view.annealing(ctx, SRC, lines + 1, below).tolist())  # a loss row after each
    assert got == want
