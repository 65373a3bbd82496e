"""Headless `tail` ends by itself when the run ended in a crash: a fatal error with no step after it,
and a file quiet since. Time is the watcher's injected clock; the CLI case uses a file written long ago."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from trainwatch.live.watcher import Watcher

from .conftest import FakeClock, append, wait_until

STEPS = "".join(f"{{'loss': {2.5 - s * 0.05:.2f}, 'grad_norm': 0.9, 'learning_rate': 5e-05, 'epoch': {s / 100}}}\n"
                for s in range(1, 6))
OOM = ("Traceback (most recent call last):\n"
       '  File "train.py", line 10, in <module>\n'
       "    trainer.train()\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.10 GiB of which 1.20 GiB is free.\n")


def _watch(path: Path, clock: FakeClock) -> Watcher:
    w = Watcher([str(path)], gpu=False, clock=clock)
    w.start()
    wait_until(lambda: bool(w.engine.book.firing()), what="the OOM alert")
    return w


def _finished_now(w: Watcher) -> bool:
    with w.lock:
        w._check_finished()
    return w.finished.is_set()


def test_a_crash_and_a_quiet_file_end_the_watch(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(STEPS + OOM)
    clock = FakeClock(time.time())  # the file was written a moment ago: not quiet yet
    said: list[str] = []
    w = Watcher([str(log)], gpu=False, clock=clock)
    w.add_info_listener(said.append)
    w.start()
    try:
        wait_until(lambda: bool(w.engine.book.firing()), what="the OOM alert")
        assert not _finished_now(w)
        clock.advance(30)
        assert not _finished_now(w)  # quiet, but not for long enough
        clock.advance(31)
        assert _finished_now(w)
        assert any("crashed" in s and "quiet" in s for s in said), said
    finally:
        w.stop()


def test_a_crash_whose_file_keeps_growing_has_not_ended(tmp_path: Path) -> None:
    """A supervisor restarting the job into the same file: the crash is not the end."""
    log = tmp_path / "train.log"
    log.write_text(STEPS + OOM)
    clock = FakeClock(time.time())
    w = _watch(log, clock)
    try:
        assert not _finished_now(w)
        clock.advance(45)
        append(log, "Restarting from the last checkpoint")
        assert not _finished_now(w)
        clock.advance(45)  # 90 s after the crash, but only 45 s since the file last grew
        assert not _finished_now(w)
    finally:
        w.stop()


def test_a_quiet_healthy_run_is_not_ended(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(STEPS)
    clock = FakeClock(time.time())
    w = Watcher([str(log)], gpu=False, clock=clock)
    w.start()
    try:
        wait_until(lambda: w.engine.sources.get(str(log)) is not None
                   and w.engine.sources[str(log)].step == 5, what="the backlog")
        clock.advance(3600)
        assert not _finished_now(w)  # a long silence without a crash is hang.stall's business
    finally:
        w.stop()


def test_steps_after_the_error_mean_it_was_not_fatal(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(STEPS + OOM + "{'loss': 2.1, 'grad_norm': 0.9, 'learning_rate': 5e-05, 'epoch': 0.06}\n")
    clock = FakeClock(time.time())
    w = _watch(log, clock)
    try:
        clock.advance(3600)
        assert not _finished_now(w)
    finally:
        w.stop()


def test_headless_tail_ends_on_an_old_crash_with_the_worst_severity(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(STEPS + OOM)
    old = time.time() - 3600
    os.utime(log, (old, old))
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "tail", str(log), "--headless", "--no-gpu"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "oom.cuda" in proc.stdout
    assert "the run crashed" in proc.stderr

