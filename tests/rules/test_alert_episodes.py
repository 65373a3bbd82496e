"""An alert that flaps is one finding with its episodes; its evidence stays that of its start."""

from __future__ import annotations

import io
from pathlib import Path

from rulekit import Run

from trainwatch.model import AlertState
from trainwatch.sinks import report

RANGE = "rules:\n  foo.high: {metric: foo, above: 5, severity: warning, family: loss, title: Foo too high}\n"


def flapping(tmp_path: Path) -> Run:
    cfg = tmp_path / "tw.yaml"
    cfg.write_text(RANGE)
    r = Run(user_files=[cfg])
    for s, v in enumerate([1, 1, 6, 7, 1, 1, 8, 9, 1, 1], start=1):
        r.step(s, foo=float(v))
    return r


def test_live_path_sees_every_transition(tmp_path: Path) -> None:
    r = flapping(tmp_path)
    states = [(c.state, c.alert.first_step) for c in r.changes if c.alert.rule == "foo.high"]
    assert states == [(AlertState.FIRING, 3), (AlertState.RESOLVED, 3), (AlertState.FIRING, 7),
                      (AlertState.RESOLVED, 7)]


def test_each_live_change_says_which_episode_it_is(tmp_path: Path) -> None:
    cfg = tmp_path / "tw.yaml"
    cfg.write_text(RANGE)
    r = Run(user_files=[cfg])
    told = []  # serialised as a sink does, when the change is told
    for s, v in enumerate([1, 1, 6, 7, 1, 1, 8, 9, 1, 1], start=1):
        told += [c.alert.to_dict() for c in r.step(s, foo=float(v)) if c.alert.rule == "foo.high"]
    assert [(d["state"], d["episode_count"], d["episodes"]) for d in told] == [
        ("firing", 1, [{"start": 3, "end": 3, "resolved": False}]),
        ("resolved", 1, [{"start": 3, "end": 4, "resolved": True}]),
        ("firing", 2, [{"start": 7, "end": 7, "resolved": False}]),
        ("resolved", 2, [{"start": 7, "end": 8, "resolved": True}]),
    ]


def test_report_keeps_one_record_dated_at_the_first_episode(tmp_path: Path) -> None:
    r = flapping(tmp_path)
    records = [a for a in r.engine.alerts() if a.rule == "foo.high"]
    assert len(records) == 1
    a = records[0]
    assert a.first_step == 3 and a.finding.step == 3
    assert a.finding.evidence["value"] == 6.0  # the start's value, not mixed with later ones
    assert (a.last_step, a.last_value) == (8, 9.0)
    assert [(e.start_step, e.end_step) for e in a.episodes] == [(3, 4), (7, 8)]
    assert a.count == 4 and a.state is AlertState.RESOLVED


def test_report_text_lists_episodes_and_the_latest_apart(tmp_path: Path) -> None:
    r = flapping(tmp_path)
    doc = report.document(r.engine, [report.SourceInfo("run.log", "test")], "sft", preset_auto=False)
    f = next(f for f in doc["findings"] if f["id"] == "foo.high")
    assert f["step"] == 3 and f["last_step"] == 8 and f["last_value"] == 9.0
    assert f["episodes"] == [{"start": 3, "end": 4, "resolved": True}, {"start": 7, "end": 8, "resolved": True}]
    out = io.StringIO()
    report.write_text(doc, out)
    text = out.getvalue()
    assert "fired 2 times: steps 3-4, 7-8" in text
    assert "last seen at step 8, value 9" in text
    assert "value=6" in text and "value=9" not in text


def test_a_finding_dated_before_its_evidence_says_both_steps() -> None:
    r = Run()
    for s in range(1, 20):
        r.step(s, lr=3e-4 * (1 - s / 100), epoch=s / 100)
    doc = report.document(r.engine, [report.SourceInfo("run.log", "test")], "sft", preset_auto=False)
    f = next(f for f in doc["findings"] if f["id"] == "lr.no_warmup")
    assert (f["step"], f["found_step"]) == (1, 5)
    out = io.StringIO()
    report.write_text(doc, out)
    assert "step 1 (evidence enough at 5, line " in out.getvalue()  # the line holds step 5, not 1


def test_episodes_stay_bounded_on_a_long_flapping_run(tmp_path: Path) -> None:
    from trainwatch.model import MAX_EPISODES

    cfg = tmp_path / "tw.yaml"
    cfg.write_text(RANGE)
    r = Run(user_files=[cfg])
    for s in range(1, 301):
        r.step(s, foo=9.0 if s % 2 else 1.0)  # fires on odd steps, resolves on even ones
    a = next(a for a in r.engine.alerts() if a.rule == "foo.high")
    assert a.episode_count == 150 and len(a.episodes) == MAX_EPISODES
    assert a.episodes[0].start_step == 1 and a.episodes[-1].start_step == 299
    doc = report.document(r.engine, [report.SourceInfo("run.log", "test")], "sft", preset_auto=False)
    out = io.StringIO()
    report.write_text(doc, out)
    assert "fired 150 times: steps 1, 3, 5, 7, 9, 11, 13, 15, ... (141 more), 299" in out.getvalue()


def test_the_line_a_report_names_holds_the_step_beside_it(tmp_path: Path) -> None:
    """A divergence dated at its start and found later was made at the later row: its line is printed
    with the step it holds ('evidence enough at 27, line 27'), not beside the start, so a reader who opens
    that line finds the step written next to it."""
    import re

    from rulekit import run_log

    from tests.fixtures import blowup_repro

    log = tmp_path / "blowup.log"
    log.write_text("\n".join(blowup_repro.lines()) + "\n")
    lines = log.read_text().splitlines()
    doc = report.document(run_log(log), [report.SourceInfo(str(log), "keyvalue")], "sft", preset_auto=False)
    out = io.StringIO()
    report.write_text(doc, out)
    heads = [h for h in out.getvalue().splitlines() if re.match(r"(CRITICAL|WARNING|INFO) ", h)]
    assert any("step 25 (evidence enough at 27, line 27)" in h for h in heads), heads
    for h in heads:
        for m in re.finditer(r"(?:step|at) (\d+)(?:\)|\s\([^)]*\))?, line (\d+)", h):
            assert lines[int(m.group(2)) - 1].startswith(f"Step {m.group(1)}:"), h
