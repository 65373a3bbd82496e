"""A condition that keeps coming back after its alert resolved is not told as recovered.

A range rule with `for` fires on a sustained excursion and resolves when one row is back in range; the
rows that leave the range again afterwards, in runs too short to fire, still count. "last seen" is the
last step the condition held, and the alert is `stopped` (not recovered), with how often it held again.
"""

from __future__ import annotations

import io
from pathlib import Path

from rulekit import Run

from trainwatch.model import AlertState
from trainwatch.sinks import report

RANGE = ("rules:\n  foo.high: {metric: foo, above: 5, for: 4, severity: warning, family: loss,"
         " title: Foo too high}\n")


def _run(tmp_path: Path, values: list[float]) -> Run:
    cfg = tmp_path / "tw.yaml"
    cfg.write_text(RANGE)
    r = Run(user_files=[cfg])
    for s, v in enumerate(values, start=1):
        r.step(s, foo=v)
    r.finish()
    return r


def _record(r: Run):
    return next(a for a in r.engine.alerts() if a.rule == "foo.high")


def _text(r: Run) -> str:
    doc = report.document(r.engine, [report.SourceInfo("run.log", "test")], "sft", preset_auto=False)
    out = io.StringIO()
    report.write_text(doc, out)
    return out.getvalue()


# steps 1-6 above (fires at 4), then bursts of 2 above / 2 below; the last burst is steps 25-26
BURSTS = [9.0] * 6 + [1.0, 1.0, 7.0, 8.0] * 5 + [2.0, 2.0]


def test_bursts_after_it_resolved_move_last_seen_and_say_not_recovered(tmp_path: Path) -> None:
    r = _run(tmp_path, BURSTS)
    a = _record(r)
    above = [s for s, v in enumerate(BURSTS, start=1) if v > 5]
    assert a.state is AlertState.RESOLVED
    assert [(e.start_step, e.end_step) for e in a.episodes] == [(1, 6)]  # the one sustained episode
    assert (a.last_step, a.last_value) == (above[-1], BURSTS[above[-1] - 1]) == (26, 8.0)
    assert a.count == len(above) and a.held_again == len(above) - 6
    d = a.to_dict()
    assert d["state"] == "stopped" and d["held_again"] == 10
    assert d["stopped"] == "held again on 10 later steps, in runs shorter than 4 steps"
    assert "last seen at step 26, value 8 (16 times; held again on 10 later steps" in _text(r)


def test_a_burst_still_open_when_the_data_ends_counts_too(tmp_path: Path) -> None:
    values = [9.0] * 6 + [1.0] * 10 + [7.0, 7.5]  # the run ends two rows into a new excursion
    a = _record(_run(tmp_path, values))
    assert (a.last_step, a.last_value, a.held_again) == (18, 7.5, 2)
    assert a.to_dict()["state"] == "stopped"


def test_an_alert_that_recovered_for_good_is_still_resolved(tmp_path: Path) -> None:
    r = _run(tmp_path, [9.0] * 6 + [1.0] * 20)
    a = _record(r)
    assert a.to_dict()["state"] == "resolved" and a.held_again == 0
    assert (a.last_step, a.count) == (6, 6)
    assert "last seen at step 6, value 9 (6 times)" in _text(r)


def test_the_same_on_grad_range_of_a_preset() -> None:
    """sft's grad.range (above 10 for 20 steps): a long excursion at the start, then grad-norms that
    leave the range in bursts of a few steps to the end of the run, as a noisy full fine-tune does."""
    r = Run()
    grads = [30.0] * 40 + [6.0, 6.0, 12.0, 15.0, 6.0, 6.0, 6.0, 6.0] * 20 + [8.0]
    for s, g in enumerate(grads, start=1):
        r.step(s, loss=2.0 - s * 0.001, grad_norm=g)
    r.finish()
    a = next(a for a in r.engine.alerts() if a.rule == "grad.range")
    last_above = max(s for s, g in enumerate(grads, start=1) if g > 10)
    assert (a.last_step, a.last_value) == (last_above, 15.0)
    assert a.to_dict()["state"] == "stopped" and a.held_again == 40
