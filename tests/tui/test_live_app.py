"""Pilot tests over a real Watcher following real files: what the dashboard shows for the paths users type.

The fixtures in test_app.py feed an engine by hand; these go through the live watcher, so they catch
a source known under one name to the engine and another to the watcher (a relative path), and a
path that is followed not at all (missing, binary).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.live.conftest import append
from tests.tui.conftest import screen_text
from trainwatch.live.watcher import Watcher
from trainwatch.tui.app import TrainwatchApp

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "logs" / "hf_high_lr.log"
HEALTHY = ROOT / "examples" / "logs" / "hf_healthy.log"
pytestmark = pytest.mark.skipif(not LOG.is_file() or not HEALTHY.is_file(), reason="needs examples/logs")


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


@pytest.mark.parametrize("what", ["missing", "binary"])
async def test_nothing_followed_is_unknown_and_says_why(tmp_path: Path, what: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    if what == "binary":
        Path("run.log").write_bytes(bytes(range(256)) * 64)
    app = _app(["run.log"])
    notice = "run.log: does not exist yet" if what == "missing" else "run.log: binary data, not a text log"
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: notice in screen_text(app), f"the notice {notice!r} on screen")
        text = screen_text(app)
        assert app.snapshot is not None and app.snapshot.badge == "UNKNOWN"
        assert "UNKNOWN" in text and "no log followed yet" in text and "no verdict: nothing read yet" in text
        assert "Nothing understood yet: no verdict" in text
        assert "OK" not in app.query_one("#badge").render().plain  # type: ignore[attr-defined]
        assert "healthy" not in text


async def test_a_file_that_appears_turns_unknown_into_ok(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    lines = HEALTHY.read_text(encoding="utf-8").splitlines(keepends=True)
    app = _app(["run.log"])
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: "run.log: does not exist yet" in screen_text(app), "the missing notice")
        append(Path("run.log"), "".join(lines[:3]), newline=False)  # too little to recognise
        await _until(pilot, lambda: "run.log: format not recognised yet" in screen_text(app),
                     "the newer reason, not 'does not exist' as the last word")
        assert app.snapshot is not None and app.snapshot.badge == "UNKNOWN"
        append(Path("run.log"), "".join(lines[3:30]), newline=False)
        await _until(pilot, lambda: app.snapshot is not None and app.snapshot.badge == "OK", "OK once it is read")
        await pilot.pause()
        assert "Nothing understood yet: no verdict" not in screen_text(app)


def test_missing_file_80x24_snapshot(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The screen a typo gives: UNKNOWN, no "healthy", and the reason in the evidence pane."""
    from trainwatch import config
    from trainwatch.engine import Engine
    from trainwatch.view.model import EngineModel

    model = EngineModel(Engine(config.load("sft"), clock=lambda: 1000.0))
    model.info_lines += ["run.log: does not exist yet; waiting for it", "no GPU telemetry: NVML not found"]
    assert snap_compare(TrainwatchApp(model, clock=lambda: 1000.0), terminal_size=(80, 24))


async def test_until_done_closes_the_dashboard_when_every_run_has_ended(tmp_path: Path) -> None:
    lines = HEALTHY.read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "run.log").write_text("".join(lines[:30]), encoding="utf-8")
    watcher = Watcher([str(tmp_path / "run.log")], gpu=False, poll=True, poll_interval=0.1)
    app = TrainwatchApp(watcher, refresh_s=0.05, until_done=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: app.snapshot is not None and app.snapshot.step is not None, "a step")
        assert app.is_running  # the run has not ended: it stays open
        append(tmp_path / "run.log", "".join(lines[30:]), newline=False)  # to the end-of-training summary
        await _until(pilot, lambda: not app.is_running, "the dashboard to close by itself", timeout=20)
    assert watcher.finished.is_set()


async def test_a_log_named_but_not_recognised_yet_is_unknown_until_read(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its engine source exists from the start (for the task guess), yet nothing of it is read."""
    monkeypatch.chdir(tmp_path)  # a short path: the notice fits on one line of the pane, however deep tmp is
    lines = HEALTHY.read_text(encoding="utf-8").splitlines(keepends=True)
    path = Path("run.log")
    path.write_text("".join(lines[:3]), encoding="utf-8")
    app = _app([str(path)])
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: "format not recognised yet" in screen_text(app), "the notice")
        text = screen_text(app)
        assert app.snapshot is not None and app.snapshot.badge == "UNKNOWN"
        assert "run.log (not read yet)" in text and "healthy" not in text
        append(path, "".join(lines[3:30]), newline=False)
        await _until(pilot, lambda: app.snapshot is not None and app.snapshot.badge == "OK", "OK once it is read")


async def test_a_forced_format_that_understands_nothing_is_unknown(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a short path, as above
    path = Path("run.log")
    path.write_text(HEALTHY.read_text(encoding="utf-8"), encoding="utf-8")
    watcher = Watcher([str(path)], fmt="jsonl", gpu=False, poll=True, poll_interval=0.1)
    app = TrainwatchApp(watcher, refresh_s=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: "is --format jsonl right?" in screen_text(app).replace("\n", ""),
                     "the wrong-format notice")
        assert app.snapshot is not None and app.snapshot.badge == "UNKNOWN"
        assert "healthy" not in screen_text(app)
