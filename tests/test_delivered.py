"""The delivery state (sinks/delivered.py): tied to each log's file, written whole."""

from __future__ import annotations

import json
from pathlib import Path

from trainwatch.alerts import AlertChange
from trainwatch.model import Alert, AlertState, Finding, Severity
from trainwatch.sinks.delivered import Delivered, default_path


def change(source: str, step: int, state: AlertState = AlertState.FIRING) -> AlertChange:
    alert = Alert(rule="loss.nonfinite", severity=Severity.CRITICAL, family="loss", title="t",
                  finding=Finding(message="m", source=source), fixes=(), fingerprint=f"fp-{source}",
                  first_step=step)
    return AlertChange(alert, state)


def test_a_restart_remembers_what_was_delivered_for_the_same_file(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("x\n")
    state = tmp_path / "alerts.jsonl.state"
    d = Delivered(state)
    d.register(str(log))
    d.add(change(str(log), 45))
    again = Delivered(state)
    assert again.seen(change(str(log), 45))
    assert not again.seen(change(str(log), 45, AlertState.RESOLVED))
    assert not again.seen(change(str(log), 125))
    assert not list(tmp_path.glob("*.tmp")), "the temporary file is renamed into place"
    assert json.loads(state.read_text())["version"] == 1


def test_a_new_file_at_the_same_path_starts_with_nothing_delivered(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("old run\n")
    state = tmp_path / "s.json"
    d = Delivered(state)
    d.register(str(log))
    d.add(change(str(log), 45))
    log.unlink()
    (tmp_path / "keep").write_text("so the inode is not reused at once\n")
    log.write_text("new run\n")
    assert not Delivered(state).seen(change(str(log), 45))


def test_alert_log_records_count_for_a_registered_file(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("x\n")
    d = Delivered(tmp_path / "s.json")
    d.register(str(log))
    d.absorb([{"source": str(log), "fingerprint": f"fp-{log}", "state": "firing", "step": 45, "episodes": []},
              {"source": "elsewhere.log", "fingerprint": "fp-elsewhere.log", "state": "firing", "step": 1}])
    assert d.seen(change(str(log), 45))
    assert not d.seen(change("elsewhere.log", 1))


def test_unreadable_state_is_said_and_ignored(tmp_path: Path) -> None:
    state = tmp_path / "s.json"
    state.write_text("{not json")
    d = Delivered(state)
    assert len(d.notes) == 1 and "unreadable" in d.notes[0]


def test_where_the_state_lives(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert default_path("a/alerts.jsonl", None, ["x.log"]) == Path("a/alerts.jsonl.state")
    assert default_path(None, None, ["x.log"]) is None
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    p = default_path(None, "notify-send", ["x.log"])
    assert p is not None and p.parent == tmp_path / "trainwatch"
    assert p == default_path(None, "notify-send", ["x.log"]) != default_path(None, "notify-send", ["y.log"])


def test_episodes_of_one_alert_judged_in_one_round_are_delivered_apart(tmp_path: Path) -> None:
    """A backlog (or a live round of many rows) with two NaN episodes: each change is keyed by its own
    episode, so neither is taken for the other, also when read back from the alert log's records."""
    from trainwatch import config
    from trainwatch.engine import Engine
    from trainwatch.model import Sample

    log = tmp_path / "train.log"
    log.write_text("x\n")
    told: list[AlertChange] = []
    eng = Engine(config.load("sft"), clock=lambda: 1_700_000_000.0)
    eng.listeners.append(told.append)
    eng.feed_all([Sample("loss", float("nan") if s in (30, 60) else 2.0 - s * 1e-3, step=s, source=str(log), line=s)
                  for s in range(1, 91)])
    nan = [c for c in told if c.alert.rule == "loss.nonfinite"]
    firing = [c for c in nan if c.state is AlertState.FIRING]
    assert len(firing) == 2
    assert sorted(Delivered.key(c) for c in firing) == [f"{firing[0].alert.fingerprint}:firing:{s}" for s in (30, 60)]
    d = Delivered(tmp_path / "s.json")
    d.register(str(log))
    d.add(firing[0])
    assert not d.seen(firing[1])
    records = Delivered(tmp_path / "s2.json")
    records.register(str(log))
    records.absorb([{**c.alert.to_dict(), "state": c.told_state} for c in nan])
    assert all(records.seen(c) for c in nan)
