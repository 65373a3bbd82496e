"""`trainwatch run` leaves no process behind (issue 27.7): real process trees, real signals.

The child starts two grandchildren that a process-group signal misses or survives: one that ignores
SIGTERM and one in a session of its own. Then the child is killed from outside, or trainwatch itself
is stopped; either way both grandchildren must be gone when trainwatch exits, and the exit code is the
child's. Synchronisation is on a FIFO the child writes once its grandchildren run, and on exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from trainwatch import proctree

TIMEOUT = 60

CHILD = r'''
import signal, subprocess, sys
stubborn = subprocess.Popen([sys.executable, "-c",
                             "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.pause()"])
detached = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"], start_new_session=True)
print("Step 1: loss=2.0", flush=True)
with open(sys.argv[1], "w") as ready:
    ready.write(f"{stubborn.pid} {detached.pid} \n")
signal.pause()
'''


def _alive(pid: int) -> bool:
    """Running, or stopped; a zombie has ended."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] != b"Z"


def _start(tmp_path: Path) -> tuple[subprocess.Popen[str], int, list[int]]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "trainwatch", "run", "--headless", "--no-gpu", "--grace", "1",
                             "--log", str(tmp_path / "out.log"), "--", sys.executable, str(script), str(fifo)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    with open(fifo) as ready:
        grandchildren = [int(p) for p in ready.readline().split()]
    child = int(next(line.split("pid ")[1].split(",")[0] for line in _stderr_lines(proc) if "running" in line))
    return proc, child, grandchildren


def _stderr_lines(proc: subprocess.Popen[str]):  # type: ignore[no-untyped-def]
    assert proc.stderr is not None
    for line in proc.stderr:
        yield line
        if "running" in line:
            return


def _finish(proc: subprocess.Popen[str], grandchildren: list[int]) -> tuple[int, list[int]]:
    """trainwatch's exit code, and the grandchildren still alive once it exited (killed then, so that none
    is left to the next test whatever happened)."""
    try:
        proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = [pid for pid in grandchildren if _alive(pid)]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    return proc.returncode, left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the subreaper is Linux's")
def test_a_child_killed_from_outside_leaves_no_grandchild(tmp_path: Path) -> None:
    proc, child, grandchildren = _start(tmp_path)
    os.kill(child, signal.SIGKILL)
    assert _finish(proc, grandchildren) == (128 + signal.SIGKILL, [])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the subreaper is Linux's")
def test_trainwatch_stopped_stops_the_whole_tree_within_the_grace(tmp_path: Path) -> None:
    proc, _, grandchildren = _start(tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert _finish(proc, grandchildren) == (128 + signal.SIGTERM, [])  # the child's code: SIGTERM killed it


def test_the_tree_walk_finds_a_session_leaver_and_skips_our_own_processes() -> None:
    me = os.getpid()
    procs = {me: (1, me, "S"), 10: (me, 10, "S"), 11: (10, 10, "S"), 12: (11, 12, "S"), 13: (me, 13, "S"),
             14: (13, 13, "S"), 15: (1, 10, "S"), 16: (1, 16, "S")}
    tree = proctree.Tree(10)
    proctree.spawned(13)  # a hook of ours, and what it started
    try:
        assert tree.members(procs) == {10, 11, 12, 15}
        del procs[10], procs[11]  # the child and its son died: the session leaver 12 was seen below them
        procs[12] = (me, 12, "S")  # and handed to us
        assert tree.members(procs) == {12, 15}
    finally:
        proctree.finished(13)
