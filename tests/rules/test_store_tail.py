"""Series accessors the rules use per sample: the same answer as a full scan, at a bounded cost."""

from __future__ import annotations

import math
import random

import pytest

from trainwatch import store
from trainwatch.store import MetricStore, Point, Series


def _series(values: list[float]) -> Series:
    s = Series("loss", "run.log")
    for i, v in enumerate(values):
        s.add(Point(i, v, None, i))
    return s


def _brute(s: Series, n: int, skip_newest: bool = False) -> list[Point]:
    pts = list(s.recent)[:-1] if skip_newest else list(s.recent)
    return [p for p in pts if math.isfinite(p.value)][-n:]


@pytest.mark.parametrize("seed", range(30))
def test_tail_matches_a_full_scan_with_nan_and_inf_anywhere(seed):
    rnd = random.Random(seed)
    vals = [rnd.choice([math.nan, math.inf, -math.inf]) if rnd.random() < 0.15 else rnd.random()
            for _ in range(rnd.randint(0, 120))]
    s = _series(vals)
    for n in (1, 3, 10, 50, 200):
        for skip in (False, True):
            want = _brute(s, n, skip)
            newest = s.recent[-1] if skip and s.recent else None
            assert s.tail(n, skip=newest) == want
            assert s.tail_values(n, skip_newest=skip) == [p.value for p in want]
    assert s.last_points(7) == list(s.recent)[-7:]
    assert [repr(v) for v in s.values(5)] == [repr(p.value) for p in list(s.recent)[-5:]]  # nan == nan


def test_head_keeps_the_first_finite_points_after_recent_rolls_over():
    vals = [math.nan, 9.0, 8.0] + [1.0] * (store.RECENT_POINTS + 10)
    s = _series(vals)
    assert [p.value for p in s.head[:3]] == [9.0, 8.0, 1.0]
    assert len(s.head) == store.HEAD_POINTS
    assert s.recent[0].value == 1.0  # the start itself left the recent window
    assert s.finite_count == len(vals) - 1


def test_a_long_nan_stretch_only_shortens_the_tail():
    s = _series([1.0] * 5 + [math.nan] * 1000 + [2.0])
    assert [p.value for p in s.tail(3)] == [2.0]  # the finite points before the stretch are too far back


class _CountingDeque(store.deque):  # type: ignore[misc]
    """A deque that counts the points handed out, so a test can bound the work per sample."""

    handed = 0

    def __iter__(self):
        for p in super().__iter__():
            _CountingDeque.handed += 1
            yield p

    def __reversed__(self):
        for p in super().__reversed__():
            _CountingDeque.handed += 1
            yield p


def test_rule_work_per_sample_does_not_grow_with_the_run(monkeypatch):
    """A long healthy run: the points the rules read per sample stay bounded by their windows."""
    from rulekit import Run, healthy_loss, warmup_decay_lr

    monkeypatch.setattr(store, "deque", _CountingDeque)
    r = Run("sft")
    n = 2 * store.RECENT_POINTS + 500
    rnd = random.Random(5)
    per_sample = []
    for i, v in enumerate(healthy_loss(n, 5)):
        before = _CountingDeque.handed
        r.step(i + 1, loss=v, grad_norm=1.0 + rnd.gauss(0, 0.2), lr=warmup_decay_lr(i, n),
               tokens_per_sec=1000 + rnd.gauss(0, 20))
        per_sample.append(_CountingDeque.handed - before)
    assert isinstance(r.engine.store.get("loss", "run.log").recent, _CountingDeque)
    late = per_sample[-500:]
    assert max(late) < 400, max(late)  # windows of tens of points, never the 2048 recent ones
    assert sum(late) / len(late) <= sum(per_sample[100:600]) / 500 * 1.2


def test_store_add_feeds_head_and_counts():
    m = MetricStore()
    for i, v in enumerate([math.inf, 3.0, math.nan, 2.0]):
        m.series("a", "loss").add(Point(i, v, None, i))
    s = m.get("loss", "a")
    assert [p.value for p in s.head] == [3.0, 2.0] and s.finite_count == 2
    assert s.tail_values(5) == [3.0, 2.0]
