"""A finding that later data disproves is withdrawn: the alert resolves, and the run's report leaves it
out and says why, so a finished healthy run is not reported as overfit or flat after the fact."""

from __future__ import annotations

import math
import random

from trainwatch.sinks import report

from rulekit import Run


def _bump_then_new_low(r: Run) -> None:
    """Train loss falls throughout; eval loss falls, bumps up for a stretch, then goes below its old low."""
    rnd = random.Random(3)
    evals = [3.0 - 0.05 * i for i in range(10)] + [2.7, 2.72, 2.74, 2.73, 2.75, 2.74] + [2.5, 2.45, 2.4]
    step = 0
    for e in evals:
        for _ in range(10):
            step += 1
            r.step(step, loss=3.2 * math.exp(-step / 150) + 0.5 + rnd.uniform(-0.01, 0.01))
        r.sample("eval_loss", e, step)


def test_an_overfit_disproved_by_a_new_eval_minimum_is_withdrawn() -> None:
    r = Run()
    _bump_then_new_low(r)
    a = r.alert("loss.overfit")
    assert a.retracted.startswith("eval_loss fell to 2.5")
    r.finish()
    doc = report.document(r.engine, [], "sft", preset_auto=False)
    assert doc["exit_code"] == 0 and not [f for f in doc["findings"] if f["id"] == "loss.overfit"]
    assert [w["id"] for w in doc["withdrawn"]] == ["loss.overfit"]


def test_an_overfit_that_stands_is_kept() -> None:
    r = Run()
    rnd = random.Random(3)
    step = 0
    for e in [3.0 - 0.05 * i for i in range(10)] + [2.7 + 0.03 * i for i in range(1, 9)]:
        for _ in range(10):
            step += 1
            r.step(step, loss=3.2 * math.exp(-step / 150) + 0.5 + rnd.uniform(-0.01, 0.01))
        r.sample("eval_loss", e, step)
    r.finish()
    a = r.alert("loss.overfit")
    assert a.retracted == "" and r.engine.worst() is not None


def test_a_loss_called_flat_that_falls_later_is_withdrawn() -> None:
    """A slow start (flat for a few hundred steps, within the noise) and then a clear fall."""
    r = Run()
    rnd = random.Random(1)
    for s in range(1, 1601):
        level = 2.0 if s < 500 else 2.0 - 0.5 * (s - 500) / 1100
        r.step(s, loss=level * (1 + rnd.gauss(0, 0.002)))
    r.finish()
    flat = [a for a in r.engine.alerts() if a.rule == "loss.flat_from_start"]
    assert flat and flat[0].retracted.startswith("the loss fell after all")
    assert r.engine.worst() is None


def test_an_error_before_any_training_step_is_a_warning_once_a_later_launch_trains() -> None:
    """A launch rejected at once (argparse), then launched again and trained: the rejection is history."""
    from trainwatch.model import EventKind, Severity
    from rulekit import Run

    rejected = "train.py: error: argument --name: expected one argument"
    r = Run()
    r.event(EventKind.ERROR, signature="run.bad_args", text=rejected)
    for s in range(1, 30):
        r.step(s, loss=2.0 - s / 30)
    r.finish()
    a = r.alert("run.bad_args")
    assert a.severity is Severity.WARNING and "training then ran, to step 29" in a.finding.message
    alone = Run()  # the same error with no training after it: the run never started, still critical
    alone.event(EventKind.ERROR, signature="run.bad_args", text=rejected)
    alone.finish()
    assert alone.alert("run.bad_args").severity is Severity.CRITICAL
