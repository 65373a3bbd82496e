"""ctrl+s: Textual's SVG screenshot in the current folder, never over an existing file, and it says where."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui import fixtures
from trainwatch.tui import screenshot
from trainwatch.tui.app import TrainwatchApp


async def test_ctrl_s_saves_svgs_in_the_current_folder_without_overwriting(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(screenshot.time, "strftime", lambda fmt: "20260101-120000")  # one second, three saves
    taken = tmp_path / "trainwatch-20260101-120000.svg"
    taken.write_text("someone else's file")
    app = TrainwatchApp(fixtures.critical(), clock=fixtures.clock)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
    assert taken.read_text() == "someone else's file"
    saved = [tmp_path / "trainwatch-20260101-120000-2.svg", tmp_path / "trainwatch-20260101-120000-3.svg"]
    assert sorted(tmp_path.iterdir()) == sorted([taken, *saved])
    for path in saved:
        svg = path.read_text()
        assert svg.startswith("<svg") and "exploded" in svg
        assert f"screenshot saved to {path}" in said


async def test_ctrl_s_where_it_cannot_write_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "gone"  # the folder it was started in was removed meanwhile
    monkeypatch.setattr(screenshot.Path, "cwd", classmethod(lambda cls: gone))
    app = TrainwatchApp(fixtures.healthy(), clock=fixtures.clock)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
    assert said == ["screenshot not saved: No such file or directory"]
