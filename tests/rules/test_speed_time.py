"""A bare `time` is judged as the seconds per iteration (mmengine, detectron2) once it has gone down at
least once; a `time` that only ever grows is the run's elapsed clock, and no slowdown."""

from __future__ import annotations

import random

from rulekit import Run


def test_a_per_iteration_time_six_times_longer_is_a_slowdown() -> None:
    rng = random.Random(5)
    r = Run()
    for i in range(1, 81):
        r.step(i * 50, loss=0.4, time=0.78 + rng.uniform(-0.01, 0.01))
    for i in range(81, 101):
        r.step(i * 50, loss=0.4, time=4.8 + rng.uniform(-0.05, 0.05))
    a = r.alert("speed.drop")
    assert a.finding.evidence["metric"] == "time" and 81 * 50 <= a.first_step <= 84 * 50


def test_an_elapsed_clock_named_time_is_no_slowdown() -> None:
    r = Run()
    clock = 0.0
    for i in range(1, 101):
        clock += 0.78 if i <= 80 else 4.8  # the clock runs faster when the steps get slower, yet only grows
        r.step(i * 50, loss=0.4, time=clock)
    assert "speed.drop" not in r.fired()


def test_an_elapsed_clock_set_back_by_resumes_and_switched_to_unix_time_is_no_slowdown() -> None:
    """A `time` column that is the run's elapsed clock, started again by each resume and after the last
    one written as Unix time (1.7e9): a handful of falls in hundreds of moves is a clock, not durations."""
    r = Run()
    clock, step = 0.0, 0
    for _ in range(3):
        clock = 0.0
        for _ in range(150):
            step += 100
            clock += 11.5
            r.step(step, loss=0.4, time=clock)
    clock = 1_706_114_812.0
    for _ in range(150):
        step += 100
        clock += 11.5
        r.step(step, loss=0.4, time=clock)
    assert "speed.drop" not in r.fired()
