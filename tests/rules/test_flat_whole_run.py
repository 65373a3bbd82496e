"""loss.flat_from_start over a whole run: a log whose first point is its first logging interval (step 500
of a loss logged every 500 steps) starts with the run, though its first fall may come before that point (a
warning)."""

from __future__ import annotations

import random

from rulekit import Run

from trainwatch.model import Severity


def run(values: list[float], every: int, **beside: float) -> Run:
    r = Run()
    for i, v in enumerate(values, start=1):
        r.step(i * every, loss=v, **beside)
    r.finish()
    return r


def test_a_flat_loss_first_logged_at_its_logging_interval_is_judged_from_the_start() -> None:
    rng = random.Random(1)
    r = run([1.39 + rng.gauss(0, 0.01) for _ in range(120)], every=500)
    a = r.alert("loss.flat_from_start")
    # judged, though the fall may have come before the first point: a warning that says so
    assert a.severity is Severity.WARNING and a.first_step == 500 and "may have come before it" in a.finding.message


def test_a_log_that_begins_late_is_still_a_resume() -> None:
    rng = random.Random(1)
    r = Run()
    for i in range(120):
        r.step(30000 + 500 * i, loss=1.39 + rng.gauss(0, 0.01))
    r.finish()
    assert "loss.flat_from_start" not in r.fired()
