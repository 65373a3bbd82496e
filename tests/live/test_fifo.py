"""A named pipe as a log (issue 27.5): read as a stream, detection over the lines it keeps, signals work.

A real writer process writes into a real FIFO; `trainwatch tail --headless` runs in a child process.
Opening a pipe for reading blocks until a writer comes, and a pipe cannot be sampled and read again,
so before the fix tail hung in open() (deaf to SIGTERM) and the lines detection read were lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from trainwatch.sources.fifo import FifoFollower

from .test_cli_tail import Tail

WRITER = r"""
import sys
f = open(sys.argv[1], "w")  # blocks until a reader has the pipe open
for command in sys.stdin:
    first, last, nan = (int(x) for x in command.split())
    for i in range(first, last + 1):
        loss = "nan" if i == nan else f"{2.5 - i * 0.001:.3f}"
        f.write(f"Step {i}: loss={loss}, lr=1e-4\n")
    f.flush()
    print("done", flush=True)
"""


class Writer:
    """A program writing its log into the pipe, on command: `write(first, last, nan_at)`."""

    def __init__(self, fifo: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WRITER, str(fifo)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def write(self, first: int, last: int, nan_at: int = 0) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{first} {last} {nan_at}\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline() == "done\n"

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


def _stops_promptly(t: Tail) -> int:
    start = time.monotonic()
    t.proc.send_signal(signal.SIGTERM)
    rc = t.finish(timeout=10)
    assert time.monotonic() - start < 5, "SIGTERM took too long"
    return rc


def test_sigterm_ends_tail_on_a_pipe_no_writer_ever_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    t = Tail(str(fifo), "--status-every", "0.2", cwd=tmp_path)
    try:
        t.wait_line("status")  # it runs (before the fix it hung in open() and printed nothing)
        assert _stops_promptly(t) == 3  # nothing read: no verdict
    finally:
        if t.proc.poll() is None:
            t.proc.kill()
    assert not any("Traceback" in e for e in t.err)


def test_pipe_lines_are_judged_including_those_detection_read_and_sigterm_while_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    t = Tail(str(fifo), "--json", "--status-every", "0.2", cwd=tmp_path)
    t.wait_line('"type": "status"')
    writer = Writer(fifo)
    try:
        writer.write(1, 300, nan_at=120)  # the NaN is among the lines detection looks at first
        alert = json.loads(t.wait_line("loss.nonfinite"))
        assert alert["severity"] == "critical" and alert["step"] == 120
        writer.write(301, 320)
        writer.close()  # its writer is gone; a new one carries on the same stream
        second = Writer(fifo)
        second.write(321, 340)
        deadline = time.monotonic() + 15
        while True:
            status = json.loads(t.wait_line('"type": "status"'))
            if status["sources"] and status["sources"][0]["step"] == 340:
                break
            assert time.monotonic() < deadline, status
        assert status["sources"][0]["lines"] == 340  # every line read once
        assert _stops_promptly(t) == 2  # while a writer holds the pipe open
        second.close()
    finally:
        for proc in (writer.proc, t.proc):
            if proc.poll() is None:
                proc.kill()
    fired = [a for a in map(json.loads, t.seen) if a.get("id") == "loss.nonfinite" and a.get("state") == "firing"]
    assert len(fired) == 1


def test_follower_reads_without_blocking_and_keeps_partial_lines(tmp_path: Path) -> None:
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    follower = FifoFollower(fifo)
    assert follower.poll().lines == []  # no writer: returns at once
    assert follower.is_open
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"a 1\nb 2\nhalf")
        assert follower.poll().lines == [(1, "a 1"), (2, "b 2")]
        os.write(fd, b" done\n")
        assert follower.poll().lines == [(3, "half done")]
        os.write(fd, b"tail")
    finally:
        os.close(fd)
    assert follower.poll().lines == []
    assert follower.flush_partial() == [(4, "tail")]
    follower.close()
    assert not follower.is_open
