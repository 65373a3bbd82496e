"""Many files' new rows are judged together on the watcher's timer, not once per file per write (issue
27.8): an array rule's round costs about the same for one row as for many, so a round per write made
200 files at 10 lines/s cost most of a core. A non-finite value is still judged at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainwatch.engine import Engine
from trainwatch.live.source import LiveSource
from trainwatch.live.watcher import Watcher

from .conftest import append, wait_until

APPEND_ALL = ("import sys\nfor p in sys.argv[2:]:\n    with open(p, 'a') as f:\n        f.write(sys.argv[1])\n")


def steps(first: int, last: int) -> str:
    return "".join(f"Step {s}: loss={2.5 - s * 1e-3:.4f}, lr=1e-4\n" for s in range(first, last + 1))


def test_the_rows_of_many_files_are_judged_in_shared_rounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [tmp_path / f"rank{i:02d}.log" for i in range(16)]
    for f in files:
        f.write_text(steps(1, 60))
    rounds: list[set[str]] = []
    judge = Engine._judge_held

    def counted(self: Engine) -> list:  # type: ignore[type-arg]
        if self.holding:
            rounds.append({src for src, _ in self._held})
        return judge(self)

    monkeypatch.setattr(Engine, "_judge_held", counted)
    w = Watcher([str(tmp_path / "*.log")], gpu=False, tick_interval=0.3)
    w.start()
    try:
        with w.lock:
            rounds.clear()  # the backlog's
        subprocess.run([sys.executable, "-c", APPEND_ALL, steps(61, 80), *map(str, files)], check=True)

        def all_judged() -> bool:
            with w.lock:
                return all(w.engine.sources[s.name].lines >= 80 for s in w.sources()) and not w.engine.holding

        wait_until(all_judged, what="every file's new rows read and judged")
        with w.lock:
            judged = list(rounds)
    finally:
        w.stop()
    assert set().union(*judged) == {s.name for s in w.sources()}
    assert len(judged) <= len(files) // 2, f"{len(judged)} rounds for {len(files)} files"


def test_rows_wait_for_the_round_but_a_nan_is_judged_at_once(tmp_path: Path, engine: Engine) -> None:
    log = tmp_path / "train.log"
    log.write_text(steps(1, 60))
    src = LiveSource(log, fmt=None, from_end=False, ring=50, notice=lambda _n: None)
    src.hold = True
    src.poll(engine)
    append(log, steps(61, 62).rstrip("\n"))
    src.poll(engine)
    assert engine.holding, "the new rows wait for the watcher's round"
    append(log, "Step 63: loss=nan, lr=1e-4")
    src.poll(engine)
    assert not engine.holding
    assert [a.first_step for a in engine.alerts() if a.rule == "loss.nonfinite"] == [63]
