"""End to end in a real terminal: tmux runs `python -m trainwatch tail FILE` while a child process
appends a real HF Trainer log (the high-LR example) to FILE. We poll capture-pane (with timeouts,
never fixed sleeps) for the log pane, the new step, then the alert and its first fix; `q` must exit
with the worst severity seen (2: critical, as headless) and leave the alternate screen. FILE is typed
as a relative path once (the README's own example) and as an absolute one once. A missing file must
show UNKNOWN and why, never OK, and `q` then exits 3.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.tui.terminal import TMUX, WRITER, Tmux

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "logs" / "hf_high_lr.log"
pytestmark = pytest.mark.skipif(TMUX is None or not LOG.is_file(), reason="needs tmux and examples/logs")


def _expected_alert() -> tuple[str, str]:
    """The most severe alert the engine raises on this log, and its first fix (from the same code)."""
    from trainwatch.runner import make_engine, open_source

    src = open_source(LOG)
    eng = make_engine([src], None, None, clock=lambda: 0.0)
    for n, line in enumerate(LOG.read_text(encoding="utf-8").splitlines(), 1):
        for rec in src.parser.feed(line, n):
            eng.feed(rec)
    from trainwatch.model import AlertState, Severity

    live = [a for a in eng.alerts() if a.severity is Severity.CRITICAL and a.state is AlertState.FIRING]
    top = max(live, key=lambda a: (a.first_step or 0, a.first_line))  # the panel's order: newest critical first
    return top.title, top.fixes[0]


def _start(tm: Tmux, tmp_path: Path, term: str, path: str, size: tuple[int, int]) -> Path:
    """Runs tail in a tmux session from tmp_path; returns the file its exit status will be written to."""
    # -u: pytest's process has COLUMNS=80 LINES=24 set, and Textual would take them over the pane's size
    env = f"-u COLUMNS -u LINES TERM={term} PYTHONPATH={ROOT}"
    status = tmp_path / "status"
    # the shell records the exit status, then keeps the pane open so its screen can still be read
    cmd = (f"cd {tmp_path} && env {env} {sys.executable} -m trainwatch tail --no-gpu {path}; "
           f"echo $? > {status}.tmp && mv {status}.tmp {status}; sleep 120")
    tm("new-session", "-d", "-s", "tw", "-x", str(size[0]), "-y", str(size[1]), "sh", "-c", cmd)
    return status


@pytest.mark.parametrize(("term", "typed"), [("xterm-256color", "relative"), ("screen", "absolute")])
def test_tail_in_tmux_shows_step_then_alert_and_quits_cleanly(tmp_path: Path, term: str, typed: str) -> None:
    title, fix = _expected_alert()
    log = tmp_path / "train.log"
    log.write_text("".join(LOG.read_text(encoding="utf-8").splitlines(keepends=True)[:4]), encoding="utf-8")
    tm = Tmux(term, tmp_path / "tmux.conf")
    status = _start(tm, tmp_path, term, "train.log" if typed == "relative" else str(log), (200, 50))
    try:
        tm.wait_for(lambda t: "trainwatch" in t and "quit" in t, 30, "the TUI to start")
        # four lines of banner and progress bars: named, not recognised yet, so no verdict yet
        tm.wait_for(lambda t: "UNKNOWN" in t and "(not read yet)" in t, 20, "UNKNOWN before the log is read")
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(LOG), str(log), "4", "0.15"])
        try:
            tm.wait_for(lambda t: "/60 " in t, 40, "a step from the appended lines")
            screen = tm.wait_for(lambda t: "CRITICAL" in t and title in t, 40, f"the alert {title!r}")
            tm.wait_for(lambda t: "what to try" in t and fix[:14] in t, 20,
                        f"its first fix {fix[:14]!r}")
            assert "\x1b" not in screen
            title_of_pane = "log · train.log" if typed == "relative" else f"log · {log}"
            tm.wait_for(lambda t: title_of_pane in t and "{'loss'" in t and "no lines yet" not in t, 20,
                        f"the log pane titled {title_of_pane!r} with the lines")
        finally:
            writer.wait(timeout=60)
        tm("send-keys", "-t", "tw", "q")
        tm.wait_for(lambda t: status.exists(), 20, "the process to exit")
        assert status.read_text().strip() == "2"  # the worst severity seen, as headless
        assert tm("display-message", "-p", "-t", "tw", "#{alternate_on}").strip() == "0"
        assert "CRITICAL" not in tm.capture()  # the TUI's screen is gone with the alternate screen
    finally:
        tm("kill-server")


def test_missing_file_in_tmux_is_unknown_and_says_why(tmp_path: Path) -> None:
    tm = Tmux("xterm-256color", tmp_path / "tmux.conf")
    status = _start(tm, tmp_path, "xterm-256color", "missing.log", (80, 24))
    try:
        screen = tm.wait_for(lambda t: "UNKNOWN" in t and "missing.log: does not" in t, 30,
                             "UNKNOWN and the missing-file notice")
        assert "no log followed yet" in screen and "Nothing understood" in screen
        assert "healthy" not in screen and " OK " not in screen
        tm("send-keys", "-t", "tw", "q")
        tm.wait_for(lambda t: status.exists(), 20, "the process to exit")
        assert status.read_text().strip() == "3"  # nothing read: no verdict
    finally:
        tm("kill-server")
