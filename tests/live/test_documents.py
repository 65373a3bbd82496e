"""A whole-file document followed live (trainer_state.json): the log pane shows its lines."""

from __future__ import annotations

import time
from pathlib import Path

from trainwatch.live.watcher import Watcher

from .conftest import FakeClock, wait_until


def test_a_trainer_state_source_shows_its_log_history_rows(tmp_path: Path) -> None:
    """Not an empty "no lines yet" pane: the document's own lines, numbered as in the file."""
    import shutil

    state = tmp_path / "trainer_state.json"
    shutil.copy(Path(__file__).resolve().parents[2] / "examples" / "runs" / "hf_healthy" / "trainer_state.json", state)
    w = Watcher([str(state)], gpu=False, clock=FakeClock(time.time()))
    w.start()
    try:
        wait_until(lambda: bool(w.recent_lines(str(state), 5)), what="the document's lines")
        lines = w.recent_lines(str(state), 10_000)
        text = state.read_text().splitlines()
        assert lines[-1] == (len(text), text[-1])
        assert any('"loss"' in t for _, t in lines)
    finally:
        w.stop()
