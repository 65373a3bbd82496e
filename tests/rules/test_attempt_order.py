"""A log of several attempts (the step counter going back to 0): time in it is (attempt, step). A new
attempt's first points are not judged against the attempt before, and findings of an earlier attempt
are listed before those of a later one whatever their steps."""

from __future__ import annotations

import random

from rulekit import Run

from trainwatch import incident
from trainwatch.model import Severity


def attempt(r: Run, steps: range, seed: int, grad: float = 0.2, spikes: dict[int, dict[str, float]] | None = None
            ) -> None:
    rnd = random.Random(seed)
    for s in steps:
        metrics = {"loss": 1.0 * (1 + rnd.gauss(0, 0.02)), "grad_norm": grad * (1 + rnd.gauss(0, 0.05))}
        metrics.update((spikes or {}).get(s, {}))
        r.step(s, **metrics)


def test_a_new_attempts_first_grad_norm_is_not_a_spike_over_the_last_attempt() -> None:
    r = Run()
    attempt(r, range(1, 201), seed=1)
    r.step(0, loss=2.4, grad_norm=3.4)  # a fresh start: its first gradients are large, as at any start
    attempt(r, range(1, 40), seed=2)
    r.finish()
    assert "grad.spike" not in r.fired()
    assert r.engine.sources[r.source].restarts  # the step going back was noted as a new attempt

    same = Run()  # the same jump inside one attempt is a spike
    attempt(same, range(1, 201), seed=1)
    same.step(201, loss=1.0, grad_norm=3.4)
    attempt(same, range(202, 240), seed=2)
    same.finish()
    assert "grad.spike" in same.fired()


def test_findings_of_an_earlier_attempt_come_before_a_later_ones_lower_steps() -> None:
    r = Run()
    attempt(r, range(1, 201), seed=1, spikes={150: {"loss": 4.0}})
    attempt(r, range(0, 120), seed=2, spikes={80: {"grad_norm": 6.0}})
    r.finish()
    warned = [a for a in r.engine.alerts() if a.severity is Severity.WARNING and a.rule.endswith(".spike")]
    assert [(a.rule, a.first_step) for a in warned] == [("loss.spike", 150), ("grad.spike", 80)]
    # by step alone the later attempt's step 80 would come first
    assert [a.rule for a in incident.ordered(warned)] == ["grad.spike", "loss.spike"]
