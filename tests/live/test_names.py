"""A source has one name: the path as typed. The engine, recent_lines (the TUI's log pane) and status
lines all use it, while file events, which name absolute paths, still reach the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainwatch.live.watcher import Watcher

from .conftest import append, wait_until


@pytest.mark.parametrize("mode", ["inotify", "poll"])
def test_relative_path_is_one_name_for_engine_lines_and_events(tmp_path: Path, mode: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("run.log").write_text("Step 1: loss=2.45, lr=1e-4\n")
    w = Watcher(["run.log"], fmt="keyvalue", gpu=False, poll=mode == "poll",
                poll_interval=0.1 if mode == "poll" else None)
    w.start()
    try:
        assert [s.name for s in w.sources()] == ["run.log"]
        assert list(w.engine.sources) == ["run.log"]
        assert w.recent_lines("run.log", 5) == [(1, "Step 1: loss=2.45, lr=1e-4")]
        append(tmp_path / "run.log", "Step 2: loss=2.40, lr=1e-4")
        wait_until(lambda: len(w.recent_lines("run.log", 5)) == 2, what="the appended line under the typed name")
    finally:
        w.stop()


def test_one_file_named_twice_is_followed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("run.log").write_text("Step 1: loss=2.45, lr=1e-4\n")
    w = Watcher(["run.log", str(tmp_path / "run.log")], fmt="keyvalue", gpu=False, poll=True)
    w.start()
    try:
        assert [s.name for s in w.sources()] == ["run.log"]
    finally:
        w.stop()
