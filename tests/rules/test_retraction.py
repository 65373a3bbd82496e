"""A finding that later data disproves is withdrawn: the alert resolves, and the run's report leaves it
out and says why, so a finished healthy run is not reported as overfit or flat after the fact."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from statistics import median

from rulekit import Run

from trainwatch.rules.stats import fmt
from trainwatch.sinks import report


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


WITHDRAWN_FLAT = re.compile(r"the loss fell after all: by step (\d+) the median of its last (\d+) points was (\S+), "
                            r"more than \d+% below the median of its first (\d+) points \((\S+)\)$")


def _flat_withdrawn_then_read_back(curve: Callable[[int], float], steps: int, noise: float) -> tuple[str, int]:
    """A loss called flat and later withdrawn; the withdrawal's medians recomputed from the logged values
    at the step it names, by the counts it names. Returns the text and that step."""
    r = Run()
    rnd = random.Random(1)
    logged: list[float] = []
    for s in range(1, steps + 1):
        logged.append(curve(s) * (1 + rnd.gauss(0, noise)))
        r.step(s, loss=logged[-1])
    r.finish()
    flat = [a for a in r.engine.alerts() if a.rule == "loss.flat_from_start"]
    assert flat and flat[0].retracted
    m = WITHDRAWN_FLAT.match(flat[0].retracted)
    assert m, flat[0].retracted
    step, last_n, last, first_n, first = int(m[1]), int(m[2]), m[3], int(m[4]), m[5]
    upto = logged[:step]
    assert fmt(median(upto[-last_n:])) == last and fmt(median(upto[:first_n])) == first
    assert median(upto[-last_n:]) < 0.97 * median(upto[:first_n])
    return flat[0].retracted, step


def test_a_withdrawn_flat_start_names_the_counts_of_its_medians_read_at_its_step() -> None:
    """A slow fall: the full judgement withdraws it; both medians are the log's, with their counts."""
    text, _ = _flat_withdrawn_then_read_back(lambda s: 2.0 if s < 500 else 2.0 - 0.5 * (s - 500) / 1100, 1600, 0.002)
    assert "last 9 points" not in text  # the full judgement: a quarter on each side


def test_a_flat_start_withdrawn_by_a_sudden_drop_quotes_that_drop_not_an_earlier_level() -> None:
    """A noisy flat curve that drops by half: a judgement inside the drop cannot tell (the episode ends),
    the next one's cheap look at the last nine points withdraws it. That look reads no quarter's level:
    the withdrawal quotes those nine at its step, not the level the judgement before read."""
    text, step = _flat_withdrawn_then_read_back(lambda s: 2.0 if s <= 700 else 1.0, 900, 0.05)
    assert 700 < step < 800 and "last 9 points" in text


def test_an_error_before_any_training_step_is_a_warning_once_a_later_launch_trains() -> None:
    """A launch rejected at once (argparse), then launched again and trained: the rejection is history."""
    from rulekit import Run

    from trainwatch.model import EventKind, Severity

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
