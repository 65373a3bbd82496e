"""Pilot tests over a real Watcher following real files: what the dashboard shows for the paths users type.

The fixtures in test_app.py feed an engine by hand; these go through the live watcher, so they catch
a source known under one name to the engine and another to the watcher (a relative path), and a
path that is followed not at all (missing, binary).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.tui.conftest import screen_text
from trainwatch.live.watcher import Watcher
from trainwatch.tui.app import TrainwatchApp
from trainwatch.tui.widgets.header import HeaderBar

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "logs" / "hf_high_lr.log"
pytestmark = pytest.mark.skipif(not LOG.is_file(), reason="needs examples/logs")


async def _until(pilot, predicate, what: str, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Polls the app (not a fixed sleep) until predicate() holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; screen was:\n{screen_text(pilot.app)}")
        await pilot.pause(0.05)


def _app(paths: list[str]) -> TrainwatchApp:
    watcher = Watcher(paths, gpu=False, poll=True, poll_interval=0.1)
    return TrainwatchApp(watcher, refresh_s=0.05)


async def test_relative_path_fills_the_log_pane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = LOG.read_text(encoding="utf-8").splitlines(keepends=True)[:6]
    (tmp_path / "run.log").write_text("".join(lines), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    app = _app(["run.log"])
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.snapshot is not None and len(app.snapshot.log_lines) == 6,
                     "the six lines in the log pane")
        assert app.snapshot.log_source == "run.log"  # type: ignore[union-attr]
        await pilot.pause()
        text = screen_text(app)
        assert "log · run.log" in text and "torch 2.13.0+cpu" in text and "no lines yet" not in text
