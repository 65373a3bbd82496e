"""loss.plateau and loss.flat_from_start over arrays say exactly what the row-at-a-time rules said.

The oracle is the old row implementation (tests/rules/rowref/plateau_rows.py), fed one record at a
time; the array rules are fed the same records whole and in random cuts. Generated runs mix flat
stretches, falls, rises, spikes, NaN stretches, restarts where the step goes back, new runs in the
same log, and LR warmups and anneals, and are long enough for the plateau's window to read the
bucketed history."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rowref.harness import decided
from rowref.plateau_rows import LossFlatFromStart as RowFlat
from rowref.plateau_rows import LossPlateau as RowPlateau

from tests.examples import examples
from trainwatch import config
from trainwatch.engine import Engine
from trainwatch.model import Event, EventKind, Record, Sample
from trainwatch.rules.plateau import LossFlatFromStart, LossPlateau
from trainwatch.session import LogClock

IDS = ("loss.plateau", "loss.flat_from_start")


def _config(**params: float) -> config.Config:
    cfg = config.load("sft")
    rules = {}
    for k, spec in cfg.rules.items():
        if k in IDS:
            rules[k] = dataclasses.replace(spec, params=dataclasses.replace(spec.params, **params.get(k, {})))  # type: ignore[arg-type]
        else:
            rules[k] = dataclasses.replace(spec, enabled=False)
    return dataclasses.replace(cfg, rules=rules)


def _engine(rows: bool, cfg: config.Config) -> Engine:
    eng = Engine(cfg, clock=LogClock(1_000_000.0))
    if rows:
        eng.rules = [RowPlateau(r.spec) if isinstance(r, LossPlateau) else
                     RowFlat(r.spec) if isinstance(r, LossFlatFromStart) else r for r in eng.rules]
    return eng


PIECES = ("flat", "fall", "rise", "nan", "restart", "spike", "new_run")


@st.composite
def runs(draw: st.DrawFn) -> list[Record]:
    """A loss curve (and sometimes an LR) made of drawn pieces, as records in log order."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    level = draw(st.sampled_from([0.5, 3.0, 5.5]))
    noise = draw(st.sampled_from([0.0, 0.002, 0.02, 0.1]))
    with_lr = draw(st.booleans())
    warmup = draw(st.sampled_from([0, 30, 150]))
    pieces = draw(st.lists(st.tuples(st.sampled_from(PIECES), st.integers(5, 700)), min_size=1, max_size=6))
    if draw(st.booleans()):  # a fall, then a long rest: what a plateau looks like
        pieces = [("fall", draw(st.integers(30, 250))), ("flat", draw(st.integers(200, 1500))), *pieces[:2]]
    rate = draw(st.sampled_from([0.99, 0.998, 0.9995]))
    total = sum(n for _, n in pieces)
    anneal_at = draw(st.sampled_from([None, 0.5, 0.8])) if with_lr else None
    out: list[Record] = []
    line = 0
    step = 1
    if draw(st.booleans()):
        line += 1
        out.append(Event(EventKind.INFO, source="run", line=line, time=float(line), fields={"total_steps": total * 2}))

    def emit(name: str, v: float, s: int) -> None:
        nonlocal line
        line += 1
        out.append(Sample(name, v, s, time=float(line), source="run", line=line))

    for kind, n in pieces:
        if kind == "restart":
            step = max(1, step - n)
            n = min(n, 40)
        elif kind == "new_run":  # another training in the same log: the store forgets the source's series
            line += 1
            out.append(Event(EventKind.INFO, source="run", line=line, time=float(line), fields={"new_run": True}))
            step = draw(st.sampled_from([1, step]))
        for _ in range(n):
            if kind == "fall":
                level *= rate
            elif kind == "rise":
                level *= 1.001
            v = level * (1 + noise * rng.standard_normal())
            if kind == "nan":
                v = math.nan if rng.random() < 0.8 else v
            elif kind == "spike" and rng.random() < 0.1:
                v = level * 5
            emit("loss", v, step)
            if with_lr and rng.random() < 0.7:
                peak = 1e-4
                lr = peak * min(1.0, (step + 1) / warmup) if warmup else peak
                if anneal_at is not None and step > anneal_at * total:
                    lr = peak * 0.1
                emit("lr", lr, step)
            step += 1
    return out


def _report(eng: Engine) -> str:
    judged = [decided(a.to_dict()) for a in eng.alerts() if a.rule in IDS]
    return json.dumps(judged, indent=1, sort_keys=True, default=str)


def _fresh(records: list[Record]) -> list[Record]:
    """Copies: the engine settles steps and names on the records it is given."""
    return [dataclasses.replace(r) for r in records]


def _judge(records: list[Record], cfg: config.Config, cuts: list[int] | None) -> str:
    eng = _engine(cuts is None, cfg)
    recs = _fresh(records)
    if cuts is None:
        for r in recs:
            eng.feed(r)
    else:
        bounds = [0, *sorted(set(cuts)), len(recs)]
        for lo, hi in zip(bounds, bounds[1:]):
            eng.feed_all(recs[lo:hi])
    eng.finish("run")
    return _report(eng)


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(records=runs(), cut_seed=st.integers(0, 10**6), small=st.booleans())
def test_array_plateau_rules_equal_the_row_rules(records: list[Record], cut_seed: int, small: bool) -> None:
    # small windows make the plateau read the bucketed history early and often
    cfg = _config(**({"loss.plateau": {"window_max": 20, "expected_max": 0.2}} if small else {}))
    want = _judge(records, cfg, None)
    assert _judge(records, cfg, []) == want
    rng = np.random.default_rng(cut_seed)
    cuts = rng.integers(0, len(records) + 1, size=rng.integers(1, 30)).tolist()
    assert _judge(records, cfg, cuts) == want


def test_a_plateau_reading_the_bucketed_history_is_found_as_before() -> None:
    """A long fall then a long flat stretch: the window outgrows window_max and the store's buckets
    halve (over 1024 points), and the finding is the row rule's, to the last digit."""
    rng = np.random.default_rng(7)
    recs: list[Record] = []
    level = 6.0
    for s in range(1, 3001):
        level = level * 0.999 if s < 500 else level
        recs.append(Sample("loss", level * (1 + 0.01 * rng.standard_normal()), s, time=float(s), source="run", line=s))
    cfg = _config()
    want = _judge(recs, cfg, None)
    assert "loss.plateau" in want
    assert _judge(recs, cfg, []) == want
    assert _judge(recs, cfg, list(range(0, 3000, 777))) == want


def test_the_level_shown_reads_past_the_carry_of_a_small_window() -> None:
    """With a small window_max the plateau's window reads bucket means, and its level is the median of
    half a window of logged points: hundreds, more than a small window's own look-back. A last batch of
    one row (a live line) must read those points from before the cut, as one whole batch reads them."""
    rng = np.random.default_rng(3)
    recs: list[Record] = []
    level = 3.0
    for s in range(1, 1101):
        level = level * 0.997 if s < 150 else level
        recs.append(Sample("loss", level * (1 + 0.02 * rng.standard_normal()), s, time=float(s), source="run",
                           line=s))
    cfg = _config(**{"loss.plateau": {"window_max": 20, "expected_max": 0.2}})
    want = _judge(recs, cfg, None)
    assert "loss.plateau" in want
    assert _judge(recs, cfg, [1099]) == want
    assert _judge(recs, cfg, [500, 1099]) == want


@pytest.mark.parametrize(("drop_at", "steps", "noise", "read"), [
    (500, 1600, 0.002, "points was"),  # a slow fall: the full judgement withdraws it
    (700, 900, 0.05, "last 9 points was"),  # a noisy curve halved at once: the cheap look does
])
def test_a_flat_start_that_falls_later_is_withdrawn_in_any_batching(drop_at: int, steps: int, noise: float,
                                                                   read: str) -> None:
    rng = np.random.default_rng(1)
    recs: list[Record] = []
    for s in range(1, steps + 1):
        if noise < 0.01:
            level = 2.0 if s < drop_at else 2.0 - 0.5 * (s - drop_at) / 1100
        else:
            level = 2.0 if s <= drop_at else 1.0
        recs.append(Sample("loss", level * (1 + noise * rng.standard_normal()), s, time=float(s), source="run",
                           line=s))
    cfg = _config()
    want = _judge(recs, cfg, None)
    assert '"retracted": "the loss fell after all' in want and read in want
    assert _judge(recs, cfg, []) == want
    assert _judge(recs, cfg, [3, 400, 401, 999]) == want


def _flat_state(eng: Engine) -> list[tuple]:
    rule = next(r for r in eng.rules if isinstance(r, LossFlatFromStart))
    return [(src, st.opened is not None, None if st.next is None else st.next[1], st.flat_since is None, st.level,
             st.told is None) for src, st in sorted(rule._states.items())]


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(records=runs(), cut_seed=st.integers(0, 10**6), quarter=st.sampled_from([8, 16, 200]))
def test_flat_start_batches_settled_over_arrays_leave_the_state_of_the_row_loop(
        records: list[Record], cut_seed: int, quarter: int) -> None:
    """`LossFlatFromStart._quiet` settles a batch without its row loop only when the loop would end in the
    same state: after every batch the judgement cadence, the flat mark and the level are the loop's."""
    cfg = _config(**{"loss.flat_from_start": {"quarter_max": quarter, "min_history": 10}})
    rng = np.random.default_rng(cut_seed)
    cuts = sorted(set(rng.integers(0, len(records) + 1, size=rng.integers(1, 30)).tolist()))
    bounds = [0, *cuts, len(records)]
    quick, slow = _engine(False, cfg), _engine(False, cfg)
    for r in slow.rules:
        if isinstance(r, LossFlatFromStart):
            r._quiet = lambda *args: False  # type: ignore[method-assign]
    a, b = _fresh(records), _fresh(records)
    for lo, hi in zip(bounds, bounds[1:]):
        quick.feed_all(a[lo:hi])
        slow.feed_all(b[lo:hi])
        assert _flat_state(quick) == _flat_state(slow)
    quick.finish("run")
    slow.finish("run")
    assert _report(quick) == _report(slow)


@settings(max_examples=examples(300), deadline=None)
@given(v=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=9, max_size=60), data=st.data())
def test_the_medians_of_nine_at_some_rows_are_the_rolling_ones(v: list[float], data: st.DataObject) -> None:
    """flat_from_start's cheap look takes the median of the last nine only at the rows it judges: the
    same numbers a rolling median gives there."""
    import bottleneck as bn

    from trainwatch.rules.plateau import _medians_of_nine

    x = np.array(v)
    rows = np.array(data.draw(st.lists(st.integers(8, len(v) - 1), min_size=1, max_size=10)))
    nines = _medians_of_nine(x)
    assert nines is not None
    want = bn.move_median(x, 9)[rows]
    assert nines.at(rows).tolist() == want.tolist()
    assert nines[int(rows[0])] == want[0]
    assert _medians_of_nine(np.append(x, np.nan)) is None


def test_bucket_sums_past_the_largest_float_say_nothing() -> None:
    """Buckets whose sums pass the largest float hold inf, as the store's do, without numpy's overflow
    warning on the terminal (`tail` printed it among its alerts)."""
    import warnings

    import numpy as np

    from trainwatch.rules.plateau_feed import HISTORY_BUCKETS, Buckets

    b = Buckets()
    n = 2 * HISTORY_BUCKETS  # halved on the way: buckets of several rows from here on
    b.add(np.arange(n), np.ones(n))
    size = b.size
    assert size > 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b.add(np.arange(n, n + size), np.full(size, 1e308))  # a whole bucket
        b.add(np.arange(n + size, n + size + 2), np.full(2, 1e308))  # a bucket begun, then added to
    assert b.total[-1] == float("inf")
