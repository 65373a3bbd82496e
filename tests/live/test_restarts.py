"""A restarted `tail --alert-log A --on-alert CMD` delivers every alert once (issue 27.3).

Real processes throughout: the log grows between and during the watcher's lives, the watcher is killed
(SIGTERM and SIGKILL in turn) and started again, and its hook appends each alert it is handed to a file.
Each NaN burst of the log must reach the alert log once as firing and once as resolved (the hook once, as
firing),
whichever life of the watcher saw it, and nothing may reach them twice.
Synchronisation is on the watcher's own status lines (`--status-every`), which say how many lines of
the log it has read.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

TIMEOUT = 60
HOOK = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(sys.stdin.read().replace('\\n', ' ') + '\\n')\n"


def chunk(c: int, size: int = 40) -> str:
    """Steps of a run; chunks 1, 3, ... hold a NaN that fires loss.nonfinite, which later resolves."""
    lines = []
    for i in range(c * size + 1, (c + 1) * size + 1):
        nan = c % 2 == 1 and i == c * size + 5
        lines.append(f"Step {i}: loss={'nan' if nan else f'{2.5 - i * 1e-3:.4f}'}, lr=1e-4\n")
    return "".join(lines)


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def start(tmp: Path, log: Path, alerts: Path, hooked: Path) -> subprocess.Popen[str]:
    hook = tmp / "hook.py"
    hook.write_text(HOOK)
    return subprocess.Popen([sys.executable, "-m", "trainwatch", "tail", "--headless", "--json", "--no-gpu",
                             "--status-every", "0.1", "--alert-log", str(alerts),
                             "--on-alert", f"{sys.executable} {hook} {hooked}", str(log)],
                            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            stdin=subprocess.DEVNULL)


def read_up_to(proc: subprocess.Popen[str], want: int) -> None:
    """Until a status line says the watcher has read `want` lines of the log (hooks then had their turn)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + TIMEOUT
    for line in proc.stdout:
        assert time.monotonic() < deadline, "the watcher never caught up"
        if line.startswith("{"):
            doc = json.loads(line)
            if doc.get("type") == "status" and doc["sources"] and doc["sources"][0]["lines"] >= want:
                return
    raise AssertionError("the watcher exited before reading the log")


def changes(path: Path) -> list[tuple[str, str, int]]:
    """(rule, state, step the episode began) of every record an outlet got. A record is about its alert's
    own episode (`step`); `episodes` lists the fingerprint's, up to when the record was written."""
    if not path.exists():
        return []
    return sorted((r["id"], r["state"], r["step"]) for r in map(json.loads, path.read_text().splitlines()))


def stop(proc: subprocess.Popen[str], sig: int) -> None:
    proc.send_signal(sig)
    proc.communicate(timeout=TIMEOUT)


def run_cycles(tmp: Path, cycles: int, *, restart: bool) -> tuple[list, list]:  # type: ignore[type-arg]
    tmp.mkdir()
    log, alerts, hooked = tmp / "train.log", tmp / "alerts.jsonl", tmp / "hooked.jsonl"
    log.touch()
    proc = None if restart else start(tmp, log, alerts, hooked)
    for c in range(cycles):
        text = chunk(c)
        half = len(text) // 2
        half = text.rfind("\n", 0, half) + 1
        with open(log, "a") as f:
            f.write(text[:half])  # written while no watcher runs (when restarting)
        if restart:
            proc = start(tmp, log, alerts, hooked)
        with open(log, "a") as f:
            f.write(text[half:])  # written while it runs
        assert proc is not None
        read_up_to(proc, lines_in(log))
        if restart:
            stop(proc, signal.SIGKILL if c % 2 else signal.SIGTERM)
    if not restart:
        assert proc is not None
        stop(proc, signal.SIGTERM)
    return changes(alerts), changes(hooked)


def test_kill_and_restart_cycles_deliver_every_alert_once(tmp_path: Path) -> None:
    cycles = int(os.environ.get("TRAINWATCH_RESTART_CYCLES", "6"))
    got_log, got_hook = run_cycles(tmp_path / "restarted", cycles, restart=True)
    bursts = [c * 40 + 5 for c in range(1, cycles, 2)]
    for outlet, states in ((got_log, ("firing", "resolved")), (got_hook, ("firing",))):  # hooks: firing only
        assert len(set(outlet)) == len(outlet), f"delivered twice: {outlet}"
        for state in states:  # each NaN burst fired (and recovered), told once each
            assert sorted(s for rule, st, s in outlet if rule == "loss.nonfinite" and st == state) == bursts
