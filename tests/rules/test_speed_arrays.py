"""speed.drop over arrays reports what the row-at-a-time rule reported, however the rows are cut.

The oracle is the rule as it was (tests/rules/rowref/speed_row.py). Generated throughput mixes steady
stretches, slow-downs, recoveries, zeros, NaN stretches and restarts, for a metric where higher is
faster and one where higher is slower."""

from __future__ import annotations

import json
import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.rules.rowref.compare import alerts, random_cuts, samples
from tests.rules.rowref.speed_row import SpeedDrop as RowSpeedDrop
from trainwatch.rules.stats import fmt

KINDS = ("steady", "slow", "fast", "zero", "nan", "restart", "jitter")

segment = st.tuples(st.sampled_from(KINDS), st.integers(1, 250), st.floats(0.05, 0.9), st.floats(0.0, 0.3))


def make_speed(segments: list[tuple[str, int, float, float]], seed: int) -> list[tuple[int, float]]:
    rng = random.Random(seed)
    rows: list[tuple[int, float]] = []
    step, level = 0, 1000.0
    for kind, n, scale, noise in segments:
        if kind == "restart":
            step = max(0, step - rng.randrange(1, max(2, step + 1)))
        elif kind == "slow":
            level *= scale
        elif kind == "fast":
            level /= scale
        for _ in range(n):
            step += 1
            v = 0.0 if kind == "zero" else level * (1.0 + rng.gauss(0.0, noise))
            if kind == "jitter" and rng.random() < 0.2:
                v *= rng.choice((0.1, 10.0))
            if kind == "nan" and rng.random() < 0.9:
                v = math.nan
            rows.append((step, v))
    return rows


@settings(max_examples=examples(50), deadline=None)
@given(segments=st.lists(segment, min_size=1, max_size=8), seed=st.integers(0, 2**16),
       metric=st.sampled_from(("tokens_per_sec", "step_time_ms")))
def test_array_rule_finds_what_the_row_rule_found(segments: list[tuple[str, int, float, float]], seed: int,
                                                  metric: str) -> None:
    records = samples(metric, make_speed(segments, seed))
    want = alerts("speed.drop", RowSpeedDrop, records, None)
    assert alerts("speed.drop", None, records, []) == want
    assert alerts("speed.drop", None, records, None) == want
    assert alerts("speed.drop", None, records, random_cuts(len(records), seed)) == want


def test_a_slow_down_is_found() -> None:
    records = samples("tokens_per_sec", make_speed([("steady", 100, 0.5, 0.02), ("slow", 30, 0.3, 0.02)], 1))
    got = alerts("speed.drop", None, records, [])
    assert '"id": "speed.drop"' in got
    assert got == alerts("speed.drop", RowSpeedDrop, records, None)


def test_a_long_nan_stretch_shortens_the_window_as_the_row_rule_did() -> None:
    """Step time (higher is slower) tripling after a NaN stretch longer than the rows tail() scans."""
    rows = make_speed([("steady", 2500, 0.5, 0.05), ("nan", 1800, 0.5, 0.0), ("fast", 300, 0.3, 0.05)], 5)
    want = alerts("speed.drop", RowSpeedDrop, samples("step_time_ms", rows), None)
    assert '"id": "speed.drop"' in want
    assert alerts("speed.drop", None, samples("step_time_ms", rows), random_cuts(len(rows), 9)) == want


def test_a_throughput_that_stays_slow_stopped_the_same_in_both_forms() -> None:
    """tokens/s 1000 -> 300 and stays: the run's level (a moving median) moves to 300 and the drop stops
    holding without the speed coming back. The row oracle and the array rule both tell it as stopped,
    with the same reason naming the value logged at the row it ended on."""
    rows = [(i + 1, 1000.0 + (i % 3)) for i in range(60)] + [(61 + i, 300.0 + (i % 3)) for i in range(200)]
    records = samples("tokens_per_sec", rows)
    want = alerts("speed.drop", RowSpeedDrop, records, None)
    for cuts in ([], None, random_cuts(len(records), 4)):
        assert alerts("speed.drop", None, records, cuts) == want
    (alert,) = json.loads(want)
    assert alert["state"] == "stopped"
    why = alert["stopped"]
    step = int(why.split(" at step ")[1].split()[0])
    assert why.startswith(f"tokens_per_sec did not come back: {fmt(rows[step - 1][1])} at step {step} against")
    assert alert["episodes"][-1]["stopped"] == why


def test_each_attempt_is_judged_on_its_own_in_both_forms() -> None:
    """The step goes back (a relaunch from step 200): its slow first points (warm-up) are no drop, and a
    drop later in that attempt is found against the attempt's own level, by both forms, however cut."""
    rows = [(i, 4096.0 + (i % 7)) for i in range(1, 301)]
    rows += [(200 + k, (150.0, 900.0, 1500.0)[k - 1] if k <= 3 else 4096.0 + (k % 5)) for k in range(1, 120)]
    rows += [(320 + k, 1300.0 + (k % 5)) for k in range(1, 30)]
    records = samples("tokens_per_sec", rows)
    want = alerts("speed.drop", RowSpeedDrop, records, None)
    for cuts in ([], None, [300, 302], random_cuts(len(records), 6)):
        assert alerts("speed.drop", None, records, cuts) == want
    (alert,) = json.loads(want)
    assert alert["step"] == alert["evidence"]["began_step"] == 321 and alert["evidence"]["began_value"] == 1301.0


def test_a_drop_that_held_until_its_attempt_ended_is_not_measured_by_the_relaunch() -> None:
    """Slow until the attempt ended, then a relaunch from step 200 whose first point (150 tokens/s) is its
    warm-up: the alert is stopped, said as the attempt's end, not as 'did not come back: 150' against
    the level before the drop; the same in both forms, however cut."""
    rows = [(i, 4096.0 + (i % 7) if i <= 290 else 1300.0 + (i % 5)) for i in range(1, 301)]
    rows += [(200 + k, (150.0, 900.0, 1500.0)[k - 1] if k <= 3 else 4096.0 + (k % 5)) for k in range(1, 100)]
    records = samples("tokens_per_sec", rows)
    want = alerts("speed.drop", RowSpeedDrop, records, None)
    for cuts in ([], None, [300, 301], random_cuts(len(records), 8)):
        assert alerts("speed.drop", None, records, cuts) == want
    (alert,) = json.loads(want)
    assert alert["state"] == "stopped" and alert["episodes"][-1]["end"] == 300
    assert alert["stopped"].startswith("tokens_per_sec was still slow when its attempt ended (the run was started "
                                       "again at step 201")
