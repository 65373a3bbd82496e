"""Pilot tests: the dashboard feeds the same alert outlets as headless (`--alert-log`, `--on-alert`,
`--exit-on`) through trainwatch.sinks.fanout.Sinks, and acknowledging never reaches them."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.tui import fixtures
from trainwatch.model import Severity
from trainwatch.sinks.fanout import Sinks
from trainwatch.tui.app import TrainwatchApp
from trainwatch.tui.widgets.alerts import AlertList

HOOK = """
import os, sys
data = sys.stdin.read()
with open(sys.argv[1] + ".tmp", "w", encoding="utf-8") as f:
    f.write(data)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
"""


async def _poll(pilot, predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Lets the app run until predicate() holds (the hook runs on its own thread, in a child process)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def _records(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


async def test_alert_log_and_hook_get_alerts_with_the_dashboard_open(tmp_path: Path) -> None:
    model = fixtures.healthy(40)
    hook, got, log = tmp_path / "hook.py", tmp_path / "got.json", tmp_path / "alerts.jsonl"
    hook.write_text(HOOK, encoding="utf-8")
    sinks = Sinks(alert_log=str(log), on_alert=f"{sys.executable} {hook} {got}", on_alert_severity=Severity.CRITICAL)
    app = TrainwatchApp(model, clock=fixtures.clock, sinks=sinks)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            fixtures.feed_step(model, 41, grad=42.0)  # a warning: logged, below the hook's severity
            fixtures.feed_step(model, 42, loss=9.5)  # critical: logged and hooked
            await _poll(pilot, got.exists, 20, "the hook's file")
            assert json.loads(got.read_text(encoding="utf-8"))["id"] == "loss.too_high"
            fired = [r["id"] for r in _records(log) if r["state"] == "firing"]
            assert fired == ["grad.too_high", "loss.too_high"]
            assert app.return_code is None  # no --exit-on: the dashboard stays open
    finally:
        sinks.close()


async def test_exit_on_closes_the_dashboard_once_that_severe_an_alert_fires() -> None:
    model = fixtures.healthy(40)
    sinks = Sinks(exit_on=Severity.CRITICAL)
    app = TrainwatchApp(model, clock=fixtures.clock, sinks=sinks)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        fixtures.feed_step(model, 41, grad=42.0)  # a warning does not meet --exit-on critical
        await pilot.pause()
        assert app.return_code is None and sinks.tripped is None
        fixtures.feed_step(model, 42, loss=9.5)
        await _poll(pilot, lambda: app.return_code is not None, 10, "the app to exit")
    assert app.return_code == 0 and sinks.tripped is Severity.CRITICAL  # `tail` then exits 2, as headless


async def test_exit_on_trips_on_the_backlog_too() -> None:
    """Headless stops on an alert read from the backlog; so does the dashboard (the watcher starts after mount)."""

    class Late:
        """An EngineModel whose critical part is fed when the app starts the model, as a Watcher reads its backlog."""

        def __init__(self) -> None:
            self.m = fixtures.healthy(40)

        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(self.m, name)

        def start(self) -> None:
            fixtures.feed_step(self.m, 41, loss=9.5)

    app = TrainwatchApp(Late(), clock=fixtures.clock, sinks=Sinks(exit_on=Severity.WARNING))  # type: ignore[arg-type]
    async with app.run_test(size=(120, 40)) as pilot:
        await _poll(pilot, lambda: app.return_code is not None, 10, "the app to exit")


async def test_a_failing_hook_is_said_on_screen_not_on_stderr(tmp_path: Path) -> None:
    model = fixtures.healthy(40)
    sinks = Sinks(on_alert="no-such-command-trainwatch-xyz")
    app = TrainwatchApp(model, clock=fixtures.clock, sinks=sinks)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            fixtures.feed_step(model, 41, loss=9.5)
            await _poll(pilot, lambda: any("not found" in n.message for n in app._notifications), 10,
                        "the hook notice")
    finally:
        sinks.close()


async def test_acknowledging_reaches_no_sink(tmp_path: Path) -> None:
    model = fixtures.healthy(40)
    log = tmp_path / "alerts.jsonl"
    sinks = Sinks(alert_log=str(log), exit_on=Severity.CRITICAL)
    app = TrainwatchApp(model, clock=fixtures.clock, sinks=sinks)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            fixtures.feed_step(model, 41, grad=42.0)
            await pilot.pause()
            app.refresh_view(force=True)
            app.query_one(AlertList).focus()
            await pilot.press("a")
            await pilot.pause()
            assert app.snapshot is not None and app.snapshot.badge == "WARNING ACK"  # acknowledged, still standing
            assert len(_records(log)) == 1 and app.return_code is None
    finally:
        sinks.close()
