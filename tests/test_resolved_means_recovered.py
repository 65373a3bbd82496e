"""`resolved` means recovered: an alert that stops because its metric went NaN, or because the run ended,
is told as `stopped`, with why, by the engine and every outlet (the headless line, JSON, the report)."""

from __future__ import annotations

import io
import json

from trainwatch import config
from trainwatch.alerts import AlertChange
from trainwatch.engine import Engine
from trainwatch.model import Event, EventKind, Sample
from trainwatch.sinks.printer import Printer

LOG = "run.log"


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        return self.t


def _engine() -> tuple[Engine, list[AlertChange], Clock]:
    clock = Clock()
    eng = Engine(config.load("sft"), clock=clock)
    told: list[AlertChange] = []
    eng.listeners.append(told.append)
    return eng, told, clock


def _ends(told: list[AlertChange], rule: str) -> list[AlertChange]:
    return [c for c in told if c.alert.rule == rule and c.state.value == "resolved"]


def _steps(eng: Engine, clock: Clock, grad: dict[int, float], last: int, loss: float = 2.0) -> None:
    for s in range(1, last + 1):
        clock.t += 10
        eng.feed_all([Sample("loss", loss - s * 0.001, step=s, source=LOG, line=s),
                      Sample("grad_norm", grad.get(s, 1.0 + 0.01 * (s % 3)), step=s, source=LOG, line=s)])


def test_a_spike_that_passes_is_resolved() -> None:
    eng, told, clock = _engine()
    _steps(eng, clock, {30: 60.0}, 45)
    ends = _ends(told, "grad.spike")
    assert ends and all(c.told_state == "resolved" and not c.alert.stopped for c in ends)


def test_an_alert_that_stops_because_its_metric_went_nan_is_stopped_not_resolved() -> None:
    eng, told, clock = _engine()
    _steps(eng, clock, {30: 60.0, 31: float("nan"), 32: float("nan")}, 32)
    ends = _ends(told, "grad.spike")
    assert ends, [(c.alert.rule, c.state) for c in told]
    change = ends[-1]
    assert change.told_state == "stopped"
    assert change.alert.stopped == "grad_norm went NaN"
    out = io.StringIO()
    Printer(out).alert(change)
    assert " stopped grad.spike run.log step 30: Gradient norm spike (not recovered: grad_norm went NaN)" \
        in out.getvalue()
    assert "resolved" not in out.getvalue()
    out = io.StringIO()
    Printer(out, as_json=True).alert(change)
    doc = json.loads(out.getvalue())
    assert doc["state"] == "stopped" and doc["stopped"] == "grad_norm went NaN"
    record = next(a for a in eng.alerts() if a.rule == "grad.spike")
    assert record.to_dict()["state"] == "stopped"  # the report says the same


def test_a_stall_that_stops_because_the_run_ended_is_stopped_not_resolved() -> None:
    eng, told, clock = _engine()
    _steps(eng, clock, {}, 50)
    for _ in range(200):  # 1000 s of silence: past the stall limits
        clock.t += 5
        eng.tick()
    assert any(c.alert.rule == "hang.stall" and c.state.value == "firing" for c in told)
    eng.feed(Event(EventKind.TRAIN_END, source=LOG, line=99, text="train_runtime 500"))
    clock.t += 5
    eng.tick()
    ends = _ends(told, "hang.stall")
    assert ends and all(c.told_state == "stopped" and c.alert.stopped == "the run ended" for c in ends)


def _said(change: AlertChange) -> tuple[str, dict]:
    text, doc = io.StringIO(), io.StringIO()
    Printer(text).alert(change)
    Printer(doc, as_json=True).alert(change)
    return text.getvalue(), json.loads(doc.getvalue())


def test_a_one_time_judgement_ends_it_never_resolves() -> None:
    """lr.no_warmup judges the run's start once: when its row passes nothing recovered. Its end is told
    as `ended` (JSON, the report) and the headless line says nothing."""
    eng, told, clock = _engine()
    for s in range(1, 30):
        clock.t += 10
        eng.feed_all([Sample("loss", 2.0 - s * 0.01, step=s, source=LOG, line=s),
                      Sample("lr", 3e-4, step=s, source=LOG, line=s)])
    ends = _ends(told, "lr.no_warmup")
    assert ends, [(c.alert.rule, c.state) for c in told]
    text, doc = _said(ends[-1])
    assert text == "" and doc["state"] == "ended"
    assert all(c.told_state != "resolved" for c in told if c.alert.rule == "lr.no_warmup")
    record = next(a for a in eng.alerts() if a.rule == "lr.no_warmup")
    assert record.to_dict()["state"] == "ended"


def test_every_one_time_rule_is_told_alike() -> None:
    """What a resume did (the loss jumped, the schedule restarted its warmup) is judged once on the points
    after it: those alerts end as lr.no_warmup does, by the same flag (Rule.once), while a condition such
    as a spike still resolves."""
    eng, told, clock = _engine()
    rows = [(s, 2.0 - s * 0.01, 3e-4 * min(1, s / 10) * (1 - s / 200)) for s in range(1, 61)]
    rows += [(s, 3.5 - (s - 31) * 0.01 if s < 40 else 1.6 - (s - 40) * 0.005, 3e-4 * min(1, (s - 30) / 10))
             for s in range(31, 91)]  # resumed at step 31: the loss back up, the LR warming up again
    for i, (s, loss, lr) in enumerate(rows, start=1):
        clock.t += 10
        eng.feed_all([Sample("loss", loss, step=s, source=LOG, line=i), Sample("lr", lr, step=s, source=LOG, line=i)])
    for rule in ("resume.loss_jump", "resume.sched_reset"):
        ends = [c for c in told if c.alert.rule == rule and c.state.value == "resolved"]
        assert ends and all(c.told_state == "ended" for c in ends), [(c.alert.rule, c.told_state) for c in told]
        assert _said(ends[-1])[0] == ""
    once = {r.spec.id for r in eng.rules if r.once}
    assert {"lr.no_warmup", "resume.detected", "run.restarted", "resume.sched_reset", "resume.loss_jump"} <= once
    assert not once & {"grad.spike", "loss.spike", "loss.diverging", "hang.stall"}
