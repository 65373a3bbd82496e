"""Rotation where the program writes on into the renamed file before it reopens (issue 27.1).

A real process holds the log open and writes to it on command; the test rotates the file the way
logrotate does (`create`: rename, then a new empty file; and plain rename with the file created on the
program's reopen), tells the program to write more lines into the file it still holds, then to reopen.
Every line must come out of the follower exactly once, each file's lines in order. The wait for a
quiet rotated file runs on an injected clock.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainwatch.sources import tail
from trainwatch.sources.tail import FileFollower

WRITER = r"""
import sys
path = sys.argv[1]
f = open(path, "a")
n = 0
for command in sys.stdin:
    word, _, count = command.strip().partition(" ")
    if word == "write":
        for _ in range(int(count)):
            n += 1
            f.write(f"step {n} loss={2.0 - n * 1e-4:.4f}\n")
        f.flush()
    elif word == "reopen":
        f.close()
        f = open(path, "a")
    print("done", flush=True)
"""


class Writer:
    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def do(self, command: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline() == "done\n"  # it has written (and flushed) before we read

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _steps(lines: list[tuple[int, str]]) -> list[int]:
    return [int(text.split()[1]) for _, text in lines]


@pytest.mark.parametrize("create", [True, False], ids=["create", "rename-only"])
def test_lines_written_to_the_renamed_file_before_the_reopen_are_read_once(tmp_path: Path, create: bool) -> None:
    now = [0.0]
    log = tmp_path / "train.log"
    log.touch()
    writer = Writer(log)
    follower = FileFollower(log, clock=lambda: now[0])
    got: list[int] = []
    try:
        writer.do("write 100")
        got += _steps(follower.poll().lines)
        log.rename(tmp_path / "train.log.1")
        if create:
            log.touch()
        got += _steps(follower.poll().lines)
        writer.do("write 50")  # still into the renamed file: the program has not reopened yet
        now[0] += 1.0
        got += _steps(follower.poll().lines)
        writer.do("reopen")
        writer.do("write 50")
        now[0] += 1.0
        got += _steps(follower.poll().lines)
        now[0] += tail.ROTATE_WAIT_S  # the renamed file stays quiet: it is let go of
        got += _steps(follower.poll().lines)
        assert follower._rotated is None
        writer.do("write 10")
        got += _steps(follower.poll().lines)
    finally:
        writer.close()
        follower.close()
    assert got == list(range(1, 211))


def _copytruncate(log: Path, copy: Path) -> None:
    """What logrotate's `copytruncate` does: copy the file's bytes, then truncate it in place."""
    copy.write_bytes(log.read_bytes())
    with open(log, "r+b") as f:
        f.truncate(0)


@pytest.mark.parametrize("copy_name", ["train.log.1", "train.log-20261128"])
def test_lines_written_after_the_last_read_and_before_a_copytruncate_come_from_the_copy(
        tmp_path: Path, copy_name: str) -> None:
    log = tmp_path / "train.log"
    log.touch()
    (tmp_path / "train.log.2.gz").write_bytes(b"\x1f\x8b not a copy")  # an older, compressed rotation
    (tmp_path / "train.log.old").write_text("step 999 loss=1.0\n" * 500)  # same name, another stream
    writer = Writer(log)
    follower = FileFollower(log)
    got: list[int] = []
    chunk = None
    try:
        writer.do("write 100")
        got += _steps(follower.poll().lines)
        writer.do("write 40")  # written, not yet read, when the rotation copies and truncates
        _copytruncate(log, tmp_path / copy_name)
        writer.do("write 5")  # the writer appends (O_APPEND) into the emptied file
        chunk = follower.poll()
        got += _steps(chunk.lines)
    finally:
        writer.close()
        follower.close()
    assert got == list(range(1, 146))
    assert chunk is not None and chunk.restarted and any("truncated" in n for n in chunk.notices)
    assert [n for n, _ in chunk.lines][:2] == [101, 102]  # the copy's lines keep the old file's numbers
    assert [n for n, _ in chunk.lines][-5:] == [1, 2, 3, 4, 5]


def test_a_copytruncate_without_a_matching_copy_reads_the_new_start_as_before(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.touch()
    writer = Writer(log)
    follower = FileFollower(log)
    try:
        writer.do("write 100")
        assert _steps(follower.poll().lines) == list(range(1, 101))
        writer.do("write 40")
        _copytruncate(log, tmp_path / "elsewhere.log")  # `olddir` or a name we do not know: not found
        writer.do("write 5")
        assert _steps(follower.poll().lines) == list(range(141, 146))
    finally:
        writer.close()
        follower.close()
