"""speed.drop is dated where the slowdown began, not where the median of the recent points crossed.

The recent median turns slow only once most of the recent points are slow, a few points after the first
one; the alert's step is that first slow point, and the value beside it is the one logged there."""

from __future__ import annotations

import json
from pathlib import Path

from tests.rules.rowref.compare import alerts, random_cuts, samples
from tests.rules.rulekit import run_log

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "logs"


def _speed(metric: str, rows: list[tuple[int, float]], cuts: list[int] | None) -> dict:
    found = json.loads(alerts("speed.drop", None, samples(metric, rows), cuts))
    assert len(found) == 1, found
    return found[0]


def test_throughput_that_falls_at_step_61_is_dated_61() -> None:
    rows = [(s, 1000.0 + (s % 3)) for s in range(1, 61)] + [(s, 300.0 + (s % 2)) for s in range(61, 81)]
    for cuts in (None, [], random_cuts(len(rows), 3)):
        a = _speed("tokens_per_sec", rows, cuts)
        assert a["step"] == 61 and a["found_step"] == 63  # the median of the last 5 is slow from 63 on
        ev = a["evidence"]
        assert (ev["began_step"], ev["began_value"]) == (61, dict(rows)[61])
        assert a["message"].startswith("tokens_per_sec fell to 301 at step 61; ")
        assert a["episodes"][0]["start"] == 61


def test_a_step_time_that_rises_is_dated_at_its_first_slow_point() -> None:
    """Higher is slower: a point a little slower (under the threshold) before the jump is not the start."""
    rows = [(s, 300.0) for s in range(1, 51)] + [(51, 500.0), (52, 900.0), (53, 1200.0), (54, 1300.0),
                                                 (55, 1250.0), (56, 1300.0)]
    a = _speed("step_time_ms", rows, None)
    assert a["step"] == 52 and a["evidence"]["began_value"] == 900.0  # 500 is not twice the level


def test_the_example_slowdown_is_dated_where_it_begins() -> None:
    """examples/logs/torch_healthy.jsonl: tokens_per_sec falls from ~2e4 to 2781 at step 185; the
    median of the last five is slow only at 195."""
    eng = run_log(EXAMPLES / "torch_healthy.jsonl")
    a = next(a for a in eng.alerts() if a.rule == "speed.drop")
    assert (a.first_step, a.found_step) == (185, 195)
    assert a.finding.evidence["began_value"] == 2780.8


def test_a_step_time_is_told_as_a_multiple_of_its_level_and_the_throughput_as_a_share() -> None:
    """A step time of 1250 ms against a level of 300 is 4.17x it, a throughput at 24% of the run's: the
    message must not call 1250 '24% of' 300."""
    rows = [(s, 300.0) for s in range(1, 51)] + [(s, 1250.0) for s in range(51, 57)]
    a = _speed("step_time_ms", rows, None)
    assert "1250, is 4.17x the run's own level, the median of the points before: 300 (a throughput at 24% of it)" \
        in a["message"]
