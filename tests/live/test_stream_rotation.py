"""`trainwatch stream` (the far end of `tail user@host:PATH`) follows rotation as the local follower does
(issue 27.2): a program writes on into the renamed file before it reopens, and every line arrives once.

Before, the stream jumped to the new file's start and the lines written late into the renamed file were
lost. A real writer process holds the log open; `trainwatch stream` runs as a child process.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .test_rotation_late_reopen import Writer


class Stream:
    """`trainwatch stream FILE` in a child process, its JSON lines read on a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "trainwatch", "stream", "--no-gpu", "--interval", "0.05",
                                      *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.messages.put(json.loads(line))

    def lines_until(self, step: int, into: list[dict[str, Any]], timeout: float = 20.0) -> None:
        """Messages up to the line of `step` (every message kept in `into`)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line of step {step}: {into[-5:]}")
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            into.append(msg)
            if "line" in msg and msg["line"].split()[1] == str(step):
                return

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.mark.parametrize("create", [True, False], ids=["create", "rename-only"])
def test_lines_written_late_into_the_renamed_file_arrive_once(tmp_path: Path, create: bool) -> None:
    log = tmp_path / "train.log"
    log.touch()
    writer = Writer(log)
    stream = Stream(str(log))
    got: list[dict[str, Any]] = []
    try:
        writer.do("write 100")
        stream.lines_until(100, got)
        log.rename(tmp_path / "train.log.1")
        if create:
            log.touch()
        writer.do("write 50")  # still into the renamed file: the program has not reopened yet
        stream.lines_until(150, got)
        writer.do("reopen")
        writer.do("write 50")
        stream.lines_until(200, got)
    finally:
        writer.close()
        stream.close()
    lines = [m for m in got if "line" in m]
    assert [int(m["line"].split()[1]) for m in lines] == list(range(1, 201))  # each once, in order
    restart = next(i for i, m in enumerate(got) if m.get("restart"))
    new = [m for m in got[restart:] if "line" in m and int(m["line"].split()[1]) > 150]
    assert [m["lineno"] for m in new] == list(range(1, 51))  # the new file's own numbering
    assert new[-1]["offset"] == log.stat().st_size  # a client resumes in the new file
    late = [m for m in lines if 100 < int(m["line"].split()[1]) <= 150]
    assert [m["lineno"] for m in late] == list(range(101, 151))
    assert all("offset" not in m for m in late if got.index(m) > restart)  # no place in the new file


def test_resume_offset_past_the_end_of_a_new_file_starts_it_again(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1 a\nstep 2 b\n")
    stream = Stream("--resume", json.dumps({str(log): [500, 40]}), str(log))
    got: list[dict[str, Any]] = []
    try:
        stream.lines_until(2, got)
    finally:
        stream.close()
    assert any(m.get("restart") for m in got)
    assert [(m["lineno"], m["offset"]) for m in got if "line" in m] == [(1, 9), (2, 18)]
